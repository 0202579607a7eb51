"""What ``pip install .`` puts where: man pages in <prefix>/share/man/man1 (so ``man sdc``
finds them in an activated virtual environment) and the report schemas in the package."""

from __future__ import annotations

from importlib import metadata

import pytest

from conftest import ROOT
from microagg_cli import schemas


def _installed() -> metadata.Distribution:
    """The installed distribution (a dist-info with a RECORD: not the egg-info a build
    leaves in the source tree, which ``python -m pytest`` puts first on sys.path)."""
    for dist in metadata.distributions(name="microagg-cli"):
        record = dist.read_text("RECORD")
        if record is None:
            continue
        if "__editable__" in record:
            pytest.skip("editable install: the installed files are checked on a regular install (CI)")
        return dist
    pytest.skip("microagg-cli is not installed from a wheel here")


def _installed_files() -> list[str]:
    return [str(f).replace("\\", "/") for f in _installed().files or ()]


def test_man_pages_are_installed_in_share_man_man1():
    files = _installed_files()
    pages = sorted(p.name for p in (ROOT / "man").glob("sdc*.1"))
    assert "sdc.1" in pages and "sdc-protect.1" in pages
    for page in pages:
        hits = [f for f in files if f.endswith(f"share/man/man1/{page}")]
        assert hits, f"{page} is not installed under share/man/man1"
        located = _installed().locate_file(hits[0])
        assert located.read_text(encoding="utf-8") == (ROOT / "man" / page).read_text(encoding="utf-8")


def test_schemas_are_installed_in_the_package():
    files = _installed_files()
    for kind in schemas.KINDS:
        assert f"microagg_cli/schemas/{kind}.json" in files
