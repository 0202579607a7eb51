"""``sdc evaluate`` reproduces the reports frozen before the speed-up of the risk measures.

The inputs (ties, duplicate rows, a constant column, strata-like blocks, additive
noise; CSV and Parquet) are written by ``tests/reference_evaluate_cases.py``; the
reports were written by the code before the change. Counts must agree exactly, real
figures to 1e-9 relative, PLD (and what depends on it: DR, score, the EM parameters)
to 1e-6 relative, as the EM's summation order changed.
"""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from microagg_cli.cli import cli
from reference_evaluate_cases import FROZEN, cases, frozen_part, write_case

CASES = cases()

_PLD_KEYS = ("pld", "pld_em", "dr", "score")
#: fields added since the reports were frozen (evaluate schema 1.2): the PLD method and
#: the sampled estimator's bound
ADDED = {"pld_bound", "pld_method", "pld_exact_max", "pld_sample", "pld_seed", "pld_confidence",
         "dld_bound", "dld_method", "dld_exact_max", "dld_sample", "dld_seed", "dld_confidence"}
#: fields added in evaluate schema 1.3 (regression, propensity-score and group utility):
#: not frozen, checked by tests/metrics/test_analysis.py
ADDED_13 = {"ci_overlap", "ci_overlap_min", "pmse", "pmse_ratio", "group_mean_change", "groups"}
ADDED_13 |= {"linkage", "rmd", "worst_linkage", "linkage_method", "linkage_scenarios", "linkage_exact_max",
             "rmdid1", "rmdid1w", "rmdid2"}
#: the all-column SDID beside the scenario mean, and how many scenarios the linkage covers
ADDED_13 |= {"sdid_all", "linkage_scenarios"}
ADDED |= ADDED_13


def assert_close(got, want, path="", *, loose=False):
    loose = loose or any(part in _PLD_KEYS for part in path.split("/"))
    if isinstance(want, dict):
        got = {key: v for key, v in got.items() if key not in ADDED_13 or key in want}
        assert isinstance(got, dict) and set(got) - ADDED == set(want), f"{path}: keys {sorted(got)} != {sorted(want)}"
        for key in set(got) & ADDED:
            assert got[key] is None or key in ("pld_method", "pld_exact_max", "dld_method", "dld_exact_max") or \
                key in ADDED_13, f"{path}/{key}: {got[key]!r}"
        for key in want:
            assert_close(got[key], want[key], f"{path}/{key}", loose=loose)
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{path}: lengths differ"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_close(g, w, f"{path}/{i}", loose=loose)
    elif isinstance(want, float) and not isinstance(want, bool):
        assert isinstance(got, (int, float)), f"{path}: {got!r} != {want!r}"
        rel = 1e-6 if loose else 1e-9
        assert math.isclose(got, want, rel_tol=rel, abs_tol=rel * 1e-3), f"{path}: {got!r} != {want!r}"
    elif path.endswith("pld_em/iterations"):
        assert abs(got - want) <= 1, f"{path}: {got!r} != {want!r}"
    else:
        assert got == want, f"{path}: {got!r} != {want!r}"


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("jobs", [1, 2])
def test_frozen_report_reproduced(name, jobs, tmp_path):
    case = CASES[name]
    o, p = write_case(case, tmp_path, name)
    res = CliRunner().invoke(cli, ["evaluate", str(o), str(p), "--format", "json", "-q",
                                   *(["--jobs", str(jobs)] if jobs else []), *case["args"]])
    assert res.exit_code == 0, res.output
    got = frozen_part(json.loads(res.stdout))
    want = json.loads((FROZEN / f"{name}.json").read_text())
    assert_close(got, want)


def test_jobs_give_the_same_report_apart_from_timings_and_argv(tmp_path):
    case = CASES["window_csv"]
    o, p = write_case(case, tmp_path, "w")
    reports = []
    for jobs in (1, 2):
        res = CliRunner().invoke(cli, ["evaluate", str(o), str(p), "--format", "json", "-q", "--jobs", str(jobs)])
        assert res.exit_code == 0, res.output
        rep = json.loads(res.stdout)
        for key in ("timing", "audit"):
            rep.pop(key, None)
        reports.append(rep)
    assert reports[0] == reports[1]


def test_heartbeat_names_the_phases(caplog):
    import logging

    import numpy as np

    from microagg_cli import progress
    from microagg_cli.metrics import evaluate_arrays

    rng = np.random.default_rng(3)
    X = np.round(rng.normal(size=(1500, 6)), 2)
    Xp = X + np.round(rng.normal(scale=0.2, size=X.shape), 2)
    with caplog.at_level(logging.INFO, logger="microagg_cli"):
        with progress.tracking(progress.Tracker("heartbeat", interval=0.01, tick=0.005)):
            evaluate_arrays(X, Xp, k=3, jobs=2)
    text = caplog.text
    assert "intruder scenarios:" in text and "/ 63 scenarios" in text
