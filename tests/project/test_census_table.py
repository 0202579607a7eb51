"""The Census figures printed in README.md and in the method docstrings.

Every one of them comes from ``benchmarks/methods_census.py`` (written to
``benchmarks/results/methods_census.md`` by ``--write``; the README's census-table
section is a copy of that file). These tests check that the README copy is current,
that the quoted figures equal the results file, and recompute the fast rows so that a
change of output fails here instead of leaving a stale figure. The slow rows
(``genetic``, ``ils``) are checked against the results file only; rerun the benchmark
after changing them.
"""

from __future__ import annotations

import importlib.util
import re

import numpy as np
import pytest

from conftest import ROOT
from microagg_cli import manpages
from microagg_cli.methods import METHODS
from microagg_cli.metrics.utility import lb_nn
from microagg_cli.partition import information_loss

RESULTS = ROOT / "benchmarks" / "results" / "methods_census.md"
METHODS_DIR = "microagg_cli/methods/"

#: Rows recomputed by every run (labels of the results file; each takes well under a
#: second per k). The others are recomputed with ``-m slow`` (except ``ils``: 40,000
#: iterations per search by default and 1,000,000 in a variant, up to minutes per k;
#: rerun the benchmark after changing it).
FAST_ROWS = (
    "mdav", "mdav-classic", "cbfs", "tfrp", "multidsort", "rmd", "mcdpca", "pppca",
    "clustpca", "clustpppca", "influence", "vmdav", "kward", "kward-1d",
    "individual-ranking", "ufs", "simple", "pcp", "zscores", "sugeno", "mhm", "mdav-ls",
    "mdav refine=true", "mhm order=cbfs", "mic1d", "optimal-1d", "LB_NN",
)

#: Figures quoted in prose: (file, text). ``{ROW@K}`` is the IL of that row of the
#: results file at k; whitespace is compared collapsed (docstrings wrap lines).
QUOTED = (
    # README.md
    ("README.md", "reports IL_SSE {mdav@3}, LB_NN {LB_NN@3} and k'"),
    ("README.md", "MDAV k=3 has IL_SSE {mdav@3}."),
    ("README.md", "match the published {mdav@3} / {mdav@4} / {mdav@5} at k = 3 / 4 / 5."),
    ("README.md", "reproduces the published IL = {mdav@3} / {mdav@4} / {mdav@5} / {mdav@10} at k = 3 / 4 / 5 / 10"),
    ("README.md", 'print(report["overall"]["il_sse"]) # {mdav@3}...'),
    ("README.md", "| 3 | {LB_NN@3} | 4.6460 |"),
    ("README.md", "| 4 | {LB_NN@4} | 6.0020 |"),
    ("README.md", "| 5 | {LB_NN@5} | 7.2095 |"),
    ("README.md", "| 10 | {LB_NN@10} | 10.9245 | time_limit |"),
    ("README.md", "| `mdav` | {mdav@3} | {mdav@5} | {mdav@10} |"),
    ("README.md", "(the former default, seed 0) | {genetic iterations=10000@3} | {genetic iterations=10000@5} "
                  "| {genetic iterations=10000@10} |"),
    ("README.md", "| `mdav-ls` (< 1 s) | {mdav-ls@3} | {mdav-ls@5} | {mdav-ls@10} |"),
    ("README.md", "(the former default) | {ils iterations=1000000@3} | {ils iterations=1000000@5} "
                  "| {ils iterations=1000000@10} |"),
    ("README.md", "`iterations=200000` | {ils iterations=200000@3} | {ils iterations=200000@5} "
                  "| {ils iterations=200000@10} |"),
    ("README.md", "| LB_NN (no k-partition can go lower) | {LB_NN@3} | {LB_NN@5} | {LB_NN@10} |"),
    # method docstrings
    (METHODS_DIR + "approx.py", "(the rule here) {mu-approx@3} / {mu-approx@4} / {mu-approx@5} / {mu-approx@10};"),
    (METHODS_DIR + "density.py", "exactly: Census IL {dba@3} / {dba@4} / {dba@5} / {dba@10} at k = 3 / 4 / 5 / 10."),
    (METHODS_DIR + "density.py", "DBA-2 then gives {dba refine=true@3} / {dba refine=true@4} / "
                                 "{dba refine=true@5} / {dba refine=true@10} (published"),
    (METHODS_DIR + "fixed_size.py", "Measured Census IL of MDAV-2: {mdav refine=true@3} / {mdav refine=true@4} / "
                                    "{mdav refine=true@5} / {mdav refine=true@10} at k"),
    (METHODS_DIR + "fixed_size.py", '``grow="group"``: {md grow=group@3} / {md grow=group@4} / '
                                    "{md grow=group@5} / {md grow=group@10} at k"),
    (METHODS_DIR + "fixed_size.py", "(seed: {md@3} / {md@4} / {md@5} / {md@10});"),
    (METHODS_DIR + "fixed_size.py", "it is below LB_NN = {LB_NN@3},"),
    (METHODS_DIR + "fixed_size.py", "IL = {multidsort@3} at k=3 (k=5: {multidsort@5}, k=10: {multidsort@10})."),
    (METHODS_DIR + "fuzzy.py", "defaults: IL {fcm@3} / {fcm@5} / {fcm@10} in"),
    (METHODS_DIR + "genetic.py", "below MDAV's {mdav@3} --"),
    (METHODS_DIR + "genetic.py", "(IL {genetic macro_k=12@3} / {genetic macro_k=18@3} / {genetic macro_k=27@3},"),
    (METHODS_DIR + "genetic.py", "(IL {genetic macro_k=12 rounds=1@3} / {genetic macro_k=18 rounds=1@3} / "
                                 "{genetic macro_k=27 rounds=1@3},"),
    (METHODS_DIR + "genetic.py", "defaults (K = 7k = 21 at k = 3) IL {genetic iterations=10000@3} / "
                                 "{genetic iterations=10000@4} / {genetic iterations=10000@5} / "
                                 "{genetic iterations=10000@10} at k"),
    (METHODS_DIR + "mhm.py", "first record of the farthest pair {mhm order=npn@3} / {mhm order=npn@5} / "
                             "{mhm order=npn@10}, so"),
    (METHODS_DIR + "mhm.py", "mdav {mhm@3} / {mhm@5} / {mhm@10} (published"),
    (METHODS_DIR + "mhm.py", "md {mhm order=md@3} / {mhm order=md@5} / {mhm order=md@10} (5.6972"),
    (METHODS_DIR + "mhm.py", "cbfs {mhm order=cbfs@3} / {mhm order=cbfs@5} / {mhm order=cbfs@10} (5.6734"),
    (METHODS_DIR + "mhm.py", "npn {mhm order=npn@3} / {mhm order=npn@5} / {mhm order=npn@10} (6.3498"),
    (METHODS_DIR + "mhm.py", "(14.2239) is above MDAV ({mdav@10})"),
    (METHODS_DIR + "mst.py", "Census IL {mst@3} / {mst@4} / {mst@5} / {mst@10} at k = 3 / 4 / 5 / 10"),
    (METHODS_DIR + "refine.py", "IL = {mdav-ls@3} (k=3), {mdav-ls@5} (k=5), {mdav-ls@10} (k=10) from MDAV's "
                                "{mdav@3}, {mdav@5}, {mdav@10},"),
    (METHODS_DIR + "refine.py", "(reproducible) IL = {ils iterations=200000@3} (k=3,"),
    (METHODS_DIR + "refine.py", "{ils iterations=200000@5} (k=5,"),
    (METHODS_DIR + "refine.py", "{ils iterations=200000@10} (k=10,"),
    (METHODS_DIR + "refine.py", "IL = {ils iterations=1000000@3} / {ils iterations=1000000@4} / "
                                "{ils iterations=1000000@5} / {ils iterations=1000000@10} at k = 3 / 4 / 5 / 10"),
    (METHODS_DIR + "refine.py", "IL {ils iterations=1000000@3})."),
    (METHODS_DIR + "refine.py", "The lower bound LB_NN is {LB_NN@3}, {LB_NN@5}, {LB_NN@10};"),
)


def _benchmark():
    spec = importlib.util.spec_from_file_location("methods_census", ROOT / "benchmarks" / "methods_census.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BENCH = _benchmark()
TEXT = RESULTS.read_text(encoding="utf-8")
ROWS = BENCH.parse_tables(TEXT)  # raises on a row met twice


@pytest.fixture(scope="module")
def census():
    return BENCH.load_census()


def _section(readme: str) -> str:
    return readme.split("<!-- census-table:start -->\n", 1)[1].split("<!-- census-table:end -->", 1)[0]


def test_readme_section_is_the_results_file():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert _section(readme).strip("\n") == TEXT.strip("\n"), "run: python -m microagg_cli.manpages man README.md"


def test_refresh_readme_copies_the_results_file(tmp_path, monkeypatch):
    readme = tmp_path / "README.md"
    readme.write_text("a\n<!-- census-table:start -->\nold\n<!-- census-table:end -->\nb\n", encoding="utf-8")
    monkeypatch.setattr(manpages, "CENSUS_RESULTS", tmp_path / "absent.md")  # installed package: no benchmarks/
    assert manpages.census_table() is None
    assert not manpages.refresh_readme(readme)
    monkeypatch.setattr(manpages, "CENSUS_RESULTS", RESULTS)
    assert manpages.refresh_readme(readme)
    assert _section(readme.read_text(encoding="utf-8")) == TEXT.strip("\n") + "\n"


def test_results_file_covers_every_method_k_and_variant():
    assert TEXT.startswith("Measured ") and "by `python benchmarks/methods_census.py --write`" in TEXT.splitlines()[0]
    variants = [BENCH.row_label(BENCH._label(name, params)) for name, params, _ in BENCH.VARIANTS]
    assert list(ROWS) == list(METHODS) + ["LB_NN"] + variants
    for name in METHODS:
        assert list(ROWS[name]) == list(BENCH.KS)
        expect_na = METHODS[name].max_columns is not None
        assert all((v == "n/a") == expect_na for v in ROWS[name].values()), name
    for (name, params, ks), label in zip(BENCH.VARIANTS, variants):
        assert list(ROWS[label]) == list(ks)


def test_published_table_is_current_and_explains_every_row_over_1_percent():
    # the third table of the results file: regenerated from the first two
    assert BENCH.published_table(ROWS) in TEXT
    for label, _, _, figures in BENCH.PUBLISHED:
        for k, pub in figures.items():
            diff = abs(float(ROWS[label][k]) - pub) / pub
            assert (diff > 0.01) == ((label, k) in BENCH.WHY), (label, k, diff)


def test_published_table_refuses_an_unexplained_row():
    rows = {label: dict(v) for label, v in ROWS.items()}
    rows["mdav"][3] = "5.8000"  # 1.9 % from the reference figure, no reason given
    with pytest.raises(RuntimeError, match="add a reason"):
        BENCH.published_table(rows)


def test_published_table_difference_column():
    line = next(row for row in BENCH.published_table(ROWS).splitlines() if "| MDAV-MHM" in row and "| 3 |" in row)
    ours = float(ROWS["mhm"][3])
    assert f"| 5.6523 | {ours:.4f} | {100 * (ours - 5.6523) / 5.6523:+.2f} % |" in line


def _recompute(label: str, census, k: int) -> str:
    X, Z = census
    if label == "LB_NN":
        return f"{lb_nn(Z, k):.4f}"
    name, *settings = label.split(" ")
    params = dict(s.split("=", 1) for s in settings) or None
    il, _ = BENCH.run_method(name, X, Z, k, params)
    return f"{il:.4f}"


def _check_row(label: str, census) -> None:
    printed = ROWS[label]
    if set(printed.values()) == {"n/a"}:
        assert BENCH.run_method(label, *census, 3) is None
        return
    measured = {k: _recompute(label, census, k) for k in printed}
    assert measured == printed, f"{label}: rerun python benchmarks/methods_census.py --write"


@pytest.mark.parametrize("label", FAST_ROWS)
def test_fast_rows_recomputed(label, census):
    # FAST_ROWS holds the methods that run in well under a second on Census (see
    # benchmarks/results/methods_census.md); no timing is asserted here (a first run
    # compiles the kernels, and the machine may be busy)
    _check_row(label, census)


@pytest.mark.slow
@pytest.mark.parametrize("label", [r for r in ROWS if r not in FAST_ROWS and r not in ("ils", "ils iterations=1000000")])
def test_slow_rows_recomputed(label, census):
    _check_row(label, census)


def _fill(template: str) -> str:
    def value(match: re.Match) -> str:
        label, k = match.group(1), int(match.group(2))
        assert label in ROWS and k in ROWS[label], f"no figure for {label} at k={k} in {RESULTS.name}"
        return ROWS[label][k]
    return re.sub(r"\{([^{}@]+)@(\d+)\}", value, template)


def _squash(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("path,template", QUOTED, ids=[f"{p}:{t[:40]}" for p, t in QUOTED])
def test_quoted_figures_match_results(path, template):
    expected = _squash(_fill(template))
    assert expected in _squash((ROOT / path).read_text(encoding="utf-8")), (
        f"{path} should say: {expected!r} (figures from {RESULTS.relative_to(ROOT)})"
    )


def test_multidsort_raw_unit_figures(census):
    """Multi-DSort's docstring on raw units (the paper's 2.0954 at k = 3)."""
    X, Z = census
    multidsort = METHODS["multidsort"].func
    raw = multidsort(X.copy(), 3, rng=np.random.default_rng(0))
    default = multidsort(Z.copy(), 3, rng=np.random.default_rng(0))
    doc = _squash((ROOT / METHODS_DIR / "fixed_size.py").read_text(encoding="utf-8"))
    assert (f"multidsort gives IL = {information_loss(X, raw):.4f} at k=3 (z-scored IL of that partition: "
            f"{information_loss(Z, raw):.4f})") in doc
    assert f"The default z-scored run measured on raw units gives {information_loss(X, default):.4f}." in doc
