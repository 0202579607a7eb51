"""README, man pages and CI stay in step with the code."""

from __future__ import annotations

import re

from conftest import ROOT
from microagg_cli import manpages
from microagg_cli.cli import cli
from microagg_cli.methods import METHODS

README = (ROOT / "README.md").read_text()


def test_man_pages_up_to_date():
    pages = manpages.render_pages()
    on_disk = {p.name: p.read_text() for p in (ROOT / "man").glob("sdc*.1")}
    assert set(on_disk) == set(pages), "run: python -m microagg_cli.manpages man README.md"
    for name, text in pages.items():
        assert on_disk[name] == text, f"man/{name} is stale; run: python -m microagg_cli.manpages man README.md"


def test_readme_generated_sections_up_to_date():
    assert manpages.exit_code_table() in README
    assert manpages.method_table() in README


def test_readme_and_man_list_every_command_and_method():
    man = (ROOT / "man" / "sdc.1").read_text()
    for name in cli.list_commands(None):
        assert f"sdc {name}" in README
        assert f"sdc\\-{name}" in man or f"sdc {name}" in man
    protect_man = (ROOT / "man" / "sdc-protect.1").read_text()
    for name in METHODS:
        assert f"`{name}`" in README
        assert name.replace("-", "\\-") in protect_man


def test_readme_shows_exactly_two_setup_commands_and_ci_runs_the_test_one():
    setup = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)\n```", setup, flags=re.S)
    assert len(blocks) == 2
    install_run, install_test = blocks
    assert "sdc protect sample_data/" in install_run and "--report" in install_run
    assert "pytest" in install_test
    ci = (ROOT / ".ci" / "run").read_text()
    assert install_test in ci
