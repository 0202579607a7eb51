"""The protect report's lower bound LB_NN and optimality gap (sdc-metrics(7))."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from conftest import CENSUS_LB_NN, CENSUS_MDAV_IL, SAMPLE, run_cli
from microagg_cli import protection
import microagg_cli.protection.table  # noqa: F401  (the bound policy)
from microagg_cli.blocking import Block, BlockPlan
from microagg_cli.io import numeric_matrix, read_table
from microagg_cli.metrics import lb_nn
from microagg_cli.request import RunOptions


@pytest.fixture(scope="module")
def census_table():
    return read_table(SAMPLE / "census.csv")


@pytest.mark.parametrize("k", [3, 10])
def test_census_block_reports_the_published_bound_and_the_gap(census_table, k):
    cols = tuple(census_table.frame.columns)
    res = protection.protect_table(census_table, BlockPlan((Block("all", cols, "mdav", k, {}),)))
    st = res.blocks[0].stats
    assert round(st["il_sse"], 4) == CENSUS_MDAV_IL[k]
    assert round(st["lb_nn"], 4) == CENSUS_LB_NN[k]
    assert st["optimality_gap"] == pytest.approx(st["il_sse"] - st["lb_nn"])
    assert res.overall["lb_nn"] == pytest.approx(st["lb_nn"])
    assert res.overall["optimality_gap"] == pytest.approx(res.overall["il_sse"] - st["lb_nn"])


def test_overall_bound_pools_the_blocks_by_their_sst(census_table):
    a = Block("a", ("AGI", "FICA", "INTVAL"), "mdav", 3, {})
    b = Block("b", ("EMCONTRB", "TAXINC"), "mdav-ls", 5, {})
    res = protection.protect_table(census_table, BlockPlan((a, b)))
    lbs = []
    for blk, r in zip((a, b), res.blocks):
        X = numeric_matrix(census_table, list(blk.columns))
        lbs.append(lb_nn(X, blk.k))
        assert r.stats["lb_nn"] == pytest.approx(lbs[-1])
        assert r.stats["lb_nn"] < r.stats["il_sse"]
    # z-scored columns: each block's SST is n times its number of columns
    assert res.overall["lb_nn"] == pytest.approx((3 * lbs[0] + 2 * lbs[1]) / 5)


def test_no_bound_for_methods_that_do_not_partition_records(census_table):
    plan = BlockPlan((Block("r", ("AGI", "FICA"), "individual-ranking", 3, {}),
                      Block("m", ("EMCONTRB", "TAXINC"), "mdav", 3, {})))
    res = protection.protect_table(census_table, plan)
    assert "lb_nn" not in res.blocks[0].stats
    assert res.blocks[1].stats["lb_nn"] is not None
    assert "lb_nn" not in res.overall  # a bound for part of the file is not one for all of it


def test_no_bound_with_missing_values(tmp_path):
    rng = np.random.default_rng(3)
    df = pd.DataFrame(rng.normal(size=(60, 3)), columns=["a", "b", "c"])
    df.loc[[4, 17], "b"] = np.nan
    path = tmp_path / "m.csv"
    df.to_csv(path, index=False)
    res = protection.protect_table(read_table(path), BlockPlan((Block("x", ("a", "b", "c"), "mdav", 3, {}),)), RunOptions(missing="complete"))
    assert "lb_nn" not in res.blocks[0].stats


def test_bound_skipped_when_it_would_cost_more_than_a_quarter_of_the_method(census_table, monkeypatch):
    """The default policy: LB_NN when cheap, else a note (the estimate is faked expensive here)."""
    monkeypatch.setattr(protection.table, "lb_nn_seconds", lambda n, p, k: 7.5)
    cols = tuple(census_table.frame.columns)
    plan = BlockPlan((Block("all", cols, "mdav", 3, {}),))
    res = protection.protect_table(census_table, plan)
    st = res.blocks[0].stats
    assert st["lb_nn"] is None and st["optimality_gap"] is None
    assert st["lb_nn_skipped"].startswith("would take about 7.5 s, more than 25% of the method's estimated")
    assert "sdc evaluate ORIGINAL PROTECTED" in st["lb_nn_skipped"] and "--bound" in st["lb_nn_skipped"]
    assert st["lb_nn_policy"]["mode"] == "auto" and st["lb_nn_policy"]["estimated_seconds"] == 7.5
    assert "lb_nn" not in res.overall
    forced = protection.protect_table(census_table, plan, RunOptions(bound="on")).blocks[0].stats
    assert round(forced["lb_nn"], 4) == CENSUS_LB_NN[3] and forced["lb_nn_policy"] == {
        "mode": "on", "seconds": forced["lb_nn_policy"]["seconds"]}
    off = protection.protect_table(census_table, plan, RunOptions(bound="off")).blocks[0].stats
    assert off["lb_nn"] is None and off["lb_nn_skipped"].startswith("--no-bound")


def test_cheap_bound_is_computed_by_default(census_table):
    cols = tuple(census_table.frame.columns)
    st = protection.protect_table(census_table, BlockPlan((Block("all", cols, "mdav", 3, {}),))).blocks[0].stats
    assert round(st["lb_nn"], 4) == CENSUS_LB_NN[3] and st["lb_nn_policy"]["estimated_seconds"] < 0.1


def test_lb_nn_cost_estimate_is_a_model_of_n_p_and_k(monkeypatch):
    """No timing probe: the estimate is arithmetic on n, p and k (a k-d tree's n log n,
    1.28x a column, capped by the brute-force scan), so a loaded machine cannot change
    the report's choice."""
    import time

    from microagg_cli.metrics import utility
    from microagg_cli.metrics.utility import lb_nn_seconds

    monkeypatch.setattr(time, "perf_counter", lambda: pytest.fail("timed"))
    est = lb_nn_seconds(4_000, 3, 3)
    assert est == pytest.approx(utility.LB_KD_NS * 1e-9 * 4_000 * np.log2(4_000) * 1.28 ** 3)
    assert lb_nn_seconds(4_000, 3, 12) == pytest.approx(2 * est)  # sqrt(k / 3)
    assert lb_nn_seconds(4_000, 4, 3) == pytest.approx(1.28 * est)
    # many columns: the brute-force scan's n^2 p is the cap
    assert lb_nn_seconds(10_000, 60, 3) == pytest.approx(utility.LB_BRUTE_NS * 1e-9 * 10_000 ** 2 * 60)
    assert lb_nn_seconds(1, 3, 3) == 0.0 and lb_nn_seconds(100, 3, 1) == 0.0


@pytest.mark.slow  # wall-clock: the estimate against a real run; a loaded machine skews either
def test_lb_nn_cost_estimate_is_of_the_right_size():
    import time

    from microagg_cli.metrics.utility import lb_nn, lb_nn_seconds

    X = np.random.default_rng(0).normal(size=(40_000, 6))
    t0 = time.perf_counter()
    lb_nn(X, 3)
    real = time.perf_counter() - t0
    est = lb_nn_seconds(*X.shape, 3)
    assert real / 5 < est < real * 5


def test_cli_no_bound_and_bound_flags(tmp_path):
    for flag, present in (("--no-bound", False), ("--bound", True)):
        rep = tmp_path / f"r{flag}.json"
        result = run_cli("protect", str(SAMPLE / "census.csv"), "-o", str(tmp_path / f"o{flag}.csv"), "-k", "3",
                         flag, "--report", str(rep), "-q")
        assert result.exit_code == 0, result.output
        doc = json.loads(rep.read_text())
        assert (doc["blocks"][0]["lb_nn"] is not None) is present
        assert doc["parameters"]["bound"] == ("on" if present else "off")


def test_cli_report_and_summary_show_the_bound(tmp_path):
    out, rep = tmp_path / "o.csv", tmp_path / "r.json"
    result = run_cli("protect", str(SAMPLE / "census.csv"), "-o", str(out), "-k", "5",
                     "--report", str(rep))
    assert result.exit_code == 0, result.output
    doc = json.loads(rep.read_text())
    assert round(doc["blocks"][0]["lb_nn"], 4) == CENSUS_LB_NN[5]
    assert round(doc["overall"]["optimality_gap"], 4) == round(CENSUS_MDAV_IL[5] - CENSUS_LB_NN[5], 4)
    assert "LB_NN" in result.stderr and f"{CENSUS_LB_NN[5]:.4f}" in result.stderr


def test_bound_charged_for_loading_the_tree_code_above_small_blocks(monkeypatch):
    """Above LB_SMALL_ROWS records the estimate includes loading scipy.spatial (about
    0.15 s), whether or not this process has loaded it: the choice is the same in every
    process; the budget is a share of the method's estimate."""
    from microagg_cli.metrics import utility

    X = np.random.default_rng(0).normal(size=(protection.table.LB_SMALL_ROWS + 1, 3))
    monkeypatch.setattr(protection.table, "lb_nn_seconds", lambda n, p, k: 0.05)
    out = protection.table.optimality(X, 3, 1.0, method_seconds=0.2)
    assert out["lb_nn"] is None and out["lb_nn_skipped"].startswith("would take about 0.20 s, more than 25% of")
    assert out["lb_nn_policy"]["estimated_seconds"] == pytest.approx(0.05 + utility.SCIPY_SPATIAL_IMPORT_SECONDS)
    # a method estimated longer affords it
    out = protection.table.optimality(X, 3, 1.0, method_seconds=2.0)
    assert out["lb_nn"] is not None and out["lb_nn_policy"]["estimated_seconds"] == pytest.approx(0.2)
    # small blocks are not charged for the loading
    out = protection.table.optimality(X[:100], 3, 1.0, method_seconds=0.01)
    assert out["lb_nn"] is not None and out["lb_nn_policy"]["estimated_seconds"] == 0.05


def test_bound_policy_uses_the_method_estimate_not_its_time(census_table):
    """The report's choice is made from the method's cost model, so it is the same on a
    loaded machine: method_seconds in the policy is the MethodSpec estimate."""
    from microagg_cli.methods import get_method

    cols = tuple(census_table.frame.columns)
    st = protection.protect_table(census_table, BlockPlan((Block("all", cols, "md", 3, {}),))).blocks[0].stats
    n, p = census_table.frame.shape[0], len(cols)
    assert st["lb_nn_policy"]["method_seconds"] == get_method("md").estimate_seconds(n, p, 3)
