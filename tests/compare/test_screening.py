"""``sdc compare`` screens each cell (comparison.cells.SCREENING): exact DLD and PLD up to
COMPARE_EXACT_MAX records, sampled above; linkage of the largest scenario; no robeigen."""

from __future__ import annotations

import numpy as np

from microagg_cli import api
from microagg_cli.comparison import cells
from microagg_cli.evaluation import measure
from microagg_cli.methods import get_method
from microagg_cli.partition import aggregate, zscore
from microagg_cli.request import (COMPARE_EXACT_MAX, COMPARE_LINKAGE_SCENARIOS, COMPARE_LINKAGE_WINDOWS,
                                  COMPARE_RISK_SAMPLE)


def _pair(n: int = 240, p: int = 4, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) @ rng.normal(size=(p, p))
    labels = get_method("mdav").func(zscore(X)[0], 3, rng=np.random.default_rng(0))
    return X, aggregate(X, labels)


def _measure(X, Xp, **more):
    return measure(X, Xp, [list(range(X.shape[1]))], k=3, max_scenarios=64, seed=0, per_scenario=True, **more)


def test_screening_settings_are_the_documented_ones():
    assert cells.SCREENING == {
        "robeigen": False, "linkage_scenarios": COMPARE_LINKAGE_SCENARIOS, "linkage_windows": COMPARE_LINKAGE_WINDOWS,
        "dld_exact_max": COMPARE_EXACT_MAX, "dld_sample": COMPARE_RISK_SAMPLE,
        "pld_exact_max": COMPARE_EXACT_MAX, "pld_sample": COMPARE_RISK_SAMPLE,
    }
    assert COMPARE_RISK_SAMPLE < COMPARE_EXACT_MAX
    assert 1 <= COMPARE_LINKAGE_WINDOWS < 4


def test_below_the_exact_size_a_screened_cell_has_the_exact_risk_figures():
    X, Xp = _pair()
    full = _measure(X, Xp)
    screen = _measure(X, Xp, **cells.SCREENING)
    for key in ("dld", "pld", "id", "k_prime"):
        assert screen["risk"]["mean"][key] == full["risk"]["mean"][key]
    assert screen["risk"]["parameters"]["dld_method"] == "exact"
    assert screen["utility"]["robeigen"] is None and full["utility"]["robeigen"]["value"] is not None
    # linkage: the largest scenario only, with the figure evaluate gives it
    largest = max(full["risk"]["per_scenario"], key=lambda r: len(r["attributes"]))
    linked = [r for r in screen["risk"]["per_scenario"] if r["linkage"] is not None]
    assert [r["attributes"] for r in linked] == [largest["attributes"]]
    assert linked[0]["linkage"] == largest["linkage"]
    assert len([r for r in full["risk"]["per_scenario"] if r["linkage"] is not None]) > 1


def test_above_the_exact_size_dld_and_pld_are_estimated_with_a_bound():
    X, Xp = _pair(n=300)
    exact = _measure(X, Xp)
    est = _measure(X, Xp, dld_exact_max=100, dld_sample=60, pld_exact_max=100, pld_sample=60)
    par = est["risk"]["parameters"]
    assert (par["dld_method"], par["pld_method"], par["dld_sample"]) == ("sampled", "sampled", 60)
    assert est["risk"]["dld_bound"]["mean"] > 0
    assert est["risk"]["mean"]["dld"] != exact["risk"]["mean"]["dld"]
    assert abs(est["risk"]["mean"]["dld"] - exact["risk"]["mean"]["dld"]) <= est["risk"]["dld_bound"]["max"]


def test_compare_states_its_screening(tmp_path):
    X, _ = _pair()
    path = tmp_path / "x.csv"
    np.savetxt(path, X, delimiter=",", header="a,b,c,d", comments="", fmt="%.6f")
    doc = api.compare(path, methods=["mdav"], k=[3], max_scenarios=8)
    s = doc["parameters"]["screening"]
    assert (s["dld_pld_exact_max"], s["dld_pld_sample"], s["linkage_scenarios"], s["linkage_windows"]) == (
        COMPARE_EXACT_MAX, COMPARE_RISK_SAMPLE, COMPARE_LINKAGE_SCENARIOS, COMPARE_LINKAGE_WINDOWS)
    assert doc["rows"][0]["linkage"] is not None


def test_the_exact_size_is_inclusive():
    from microagg_cli.metrics.risk import RiskEvaluator

    X = np.random.default_rng(0).normal(size=(COMPARE_EXACT_MAX, 2))
    ev = RiskEvaluator(X, X + 0.1, pld=False, dld_exact_max=COMPARE_EXACT_MAX, dld_sample=COMPARE_RISK_SAMPLE)
    assert ev.dld_method == "exact"


def test_above_the_linkage_exact_size_a_screened_cell_uses_fewer_windows():
    X, Xp = _pair()
    small = {"linkage_exact_max": 100, "linkage_window": 60}
    screen = _measure(X, Xp, **{**cells.SCREENING, **small})["risk"]["linkage"]
    full = _measure(X, Xp, **small)["risk"]["linkage"]
    assert (screen["method"], screen["windows"], screen["scenarios"]) == ("windows", COMPARE_LINKAGE_WINDOWS, 1)
    assert full["windows"] == 4 and full["scenarios"] > 1
