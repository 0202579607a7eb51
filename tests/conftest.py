"""Shared fixtures: random generators, small matrices, sample files.

The tests live in folders by package area (``tests/methods/``, ``tests/metrics/``...); the
shared helpers (this module, ``method_checks``, ``fuzz_cases``, ``reference_*``) stay here at
the top of ``tests/``, which is put on ``sys.path`` so that every test imports them by name.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data"

if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))


_WARM_UP: list = []  # the background warm-up of a cold kernel cache, if started

#: What the warm-up runs, roughly in the order the tests first need it: the fast MDAV and
#: mixed checks of ``sdc self-test``, an evaluation with the column-generation bound (its kernels
#: are not in the self-test), then the other checks of ``sdc self-test --all``.
_WARM_UP_CODE = """
import numpy as np, pandas as pd
from microagg_cli import frames
from microagg_cli.selftest import ALL_CHECKS, run_self_test
run_self_test(["mdav", "mixed"])
df = pd.DataFrame(np.random.default_rng(0).normal(size=(60, 3)), columns=list("abc"))
protected, _ = frames.protect_frame(df, 3)
frames.evaluate_frame(df, protected, k=3, bound="cg", max_scenarios=1)
run_self_test([name for name in ALL_CHECKS if name not in ("mdav", "mixed")])
"""


def _kernel_cache_is_cold() -> bool:
    """No compiled fast-MDAV kernel where numba would look for it (the package's
    ``__pycache__`` folders, ``NUMBA_CACHE_DIR``, the user cache of a read-only install)."""
    from microagg_cli._jit import user_cache_dir

    places = [ROOT / "microagg_cli" / "methods" / "__pycache__", user_cache_dir()]
    if os.environ.get("NUMBA_CACHE_DIR"):
        places.append(Path(os.environ["NUMBA_CACHE_DIR"]))
    return not any(any(p.rglob("*_fast_mdav*.nbi")) for p in places if p.is_dir())


def pytest_configure(config):
    """Two things a fresh clone would otherwise pay test by test.

    * Byte-compile the package once per session (``compileall`` rewrites only what
      changed): about 60 tests start ``sdc`` or worker processes, and with
      ``PYTHONDONTWRITEBYTECODE`` set (or a fresh clone) each of them would compile the
      package's sources again, a quarter of a second of CPU apiece.
    * A cold numba cache: the checks of ``sdc self-test --all`` (what the README tells an
      installation to run once) and a ``--bound cg`` evaluation compile the kernels in a
      background process, on another core, while the first tests run; a test that needs
      a kernel before it is cached compiles it itself, as it would anyway. Nothing is
      compiled differently and no result depends on it; a warm cache starts nothing.
    """
    import compileall
    import subprocess

    try:
        compileall.compile_dir(str(ROOT / "microagg_cli"), quiet=2)
    except OSError:  # a read-only checkout: the processes compile in memory, as before
        pass
    if _kernel_cache_is_cold() and not hasattr(config, "workerinput"):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        _WARM_UP.append(subprocess.Popen([sys.executable, "-c", _WARM_UP_CODE],
                                         cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, start_new_session=True))


def pytest_sessionfinish(session, exitstatus):
    """Stop a warm-up still running when the tests are done (a run of a few files): the
    kernels it finished stay cached (numba writes each cache file whole), the rest compile
    on their first use, as without it."""
    for proc in _WARM_UP:
        if proc.poll() is None:
            proc.terminate()
        try:
            proc.wait(timeout=30)
        except Exception:  # noqa: BLE001 -- never fail a test run over the warm-up
            proc.kill()


#: Published MDAV reference figures on Census (13 attributes, one block).
CENSUS_MDAV_IL = {3: 5.6922, 4: 7.4947, 5: 9.0884, 10: 14.1559}
#: The valid lower bound LB_NN on Census.
CENSUS_LB_NN = {3: 3.4438, 4: 4.3231, 5: 5.0168, 10: 7.3363}


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


@pytest.fixture(scope="session")
def census_path() -> Path:
    return SAMPLE / "census.csv"


@pytest.fixture(scope="session")
def census_matrix() -> np.ndarray:
    return np.loadtxt(SAMPLE / "census.csv", delimiter=",", skiprows=1)


@pytest.fixture(scope="session")
def census_z(census_matrix) -> np.ndarray:
    from microagg_cli.partition import zscore

    return zscore(census_matrix)[0]


def run_cli(*args, input=None):
    """Run ``sdc ARGS...`` in-process (CliRunner); arguments may be paths or numbers.

    A report printed on stdout is validated against its published schema."""
    from click.testing import CliRunner

    from microagg_cli.cli import cli

    result = CliRunner().invoke(cli, [str(a) for a in args], input=input)
    validate_report_text(result.stdout)
    return result


# ------------------------------------------------------- every report matches its schema
def validate_report_text(text: str, where: str = "stdout") -> bool:
    """Validate ``text`` against its schema when it is a report (JSON with schema_version
    and a known command); True when it was one."""
    import json

    from microagg_cli import schemas

    stripped = text.lstrip()
    if not stripped.startswith("{"):
        return False
    try:
        doc = json.loads(text)
    except ValueError:
        return False
    if not isinstance(doc, dict) or "schema_version" not in doc or doc.get("command") not in schemas.KINDS:
        return False
    try:
        schemas.validate(doc)
    except Exception as exc:  # jsonschema.ValidationError: say which file
        raise AssertionError(f"{where} does not match the {doc.get('command')} schema: {exc}") from None
    return True


@pytest.fixture(autouse=True)
def _reports_match_their_schemas(request):
    """After each test that used ``tmp_path``, every report JSON it left there must
    validate against the published schema of its kind (``microagg_cli/schemas``)."""
    yield
    root = getattr(request.node, "funcargs", {}).get("tmp_path")
    if root is None or not root.is_dir():
        return
    for path in sorted(root.rglob("*.json")):
        if path.is_file() and path.stat().st_size < 50_000_000:
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            validate_report_text(text, str(path.relative_to(root)))


def only_error_line(result) -> str:
    """The single ``Error: ...`` line on stderr (asserts there is exactly one, no traceback)."""
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: ")
    assert "Traceback" not in result.output
    return lines[0]


def assert_refused(res, name: str, code: int, word: str) -> None:
    """A catalogue case ended as it must: its exit code, exactly one ``Error:`` line
    holding ``word``, no traceback and no internal error."""
    assert res.exit_code == code, (name, res.exit_code, res.stderr)
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("Error:")]
    assert len(lines) == 1, (name, res.stderr)
    assert word.lower() in lines[0].lower(), (name, lines[0])
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr


def tree(path: Path) -> dict[str, str]:
    """Every file below ``path`` with its SHA-256 (hidden files too)."""
    import hashlib

    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file()}


def refusal_catalogue_tests(catalogue, size: int, minimum: int, run, also=None):
    """The two tests of a catalogue of refused runs: ``catalogue(tmp_path)`` lists
    ``size`` (>= ``minimum``) cases ``(name, args, exit code, word)``; each, run by
    ``run(*args)``, ends as :func:`assert_refused` says and leaves the folder as it was
    (nothing written, left behind, changed or deleted, hidden temporary files included);
    ``also(name, result)``, when given, checks each case further.

    Use: ``test_catalogue_size, test_catalogue = refusal_catalogue_tests(...)`` at the top
    level of a test module (the size is needed before the case files exist)."""
    def test_size(tmp_path):
        assert len(catalogue(tmp_path)) == size >= minimum

    @pytest.mark.parametrize("index", range(size))
    def test_case(tmp_path, index):
        name, args, code, word = catalogue(tmp_path)[index]
        before = tree(tmp_path)
        res = run(*args)
        assert_refused(res, name, code, word)
        after = tree(tmp_path)
        assert after == before, (name, set(after) ^ set(before))
        if also is not None:
            also(name, res)

    return test_size, test_case


def write_parquet(df, path: Path, *, files: int = 1, row_group_size: int = 250) -> None:
    """A Parquet file, or a dataset directory of ``files`` files (the streaming tests' input)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(df, preserve_index=False)
    if files == 1:
        pq.write_table(table, path, row_group_size=row_group_size)
        return
    path.mkdir()
    bounds = np.linspace(0, len(df), files + 1).astype(int)
    for f in range(files):
        pq.write_table(table.slice(bounds[f], bounds[f + 1] - bounds[f]), path / f"part-{f:03d}.parquet",
                       row_group_size=row_group_size)


def csv_fixture(text: str, name: str = "small.csv"):
    """A fixture giving the path of a CSV file ``name`` holding ``text``, written to the
    test's ``tmp_path`` (a test module's small input: ``small_csv = csv_fixture("a,b\\n1,2\\n")``)."""
    @pytest.fixture
    def written(tmp_path: Path) -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return written
