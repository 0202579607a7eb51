"""The protect report's lower bound LB_NN and optimality gap (metrics spec, issue #8)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from conftest import CENSUS_LB_NN, CENSUS_MDAV_IL, SAMPLE, run_cli
from microagg_cli import api, protection
import microagg_cli.protection.table  # noqa: F401  (LB_MAX_ROWS)
from microagg_cli.blocking import Block, BlockPlan
from microagg_cli.io import numeric_matrix, read_table
from microagg_cli.metrics import lb_nn


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
    res = protection.protect_table(read_table(path), BlockPlan((Block("x", ("a", "b", "c"), "mdav", 3, {}),)),
                            missing="complete")
    assert "lb_nn" not in res.blocks[0].stats


def test_bound_skipped_beyond_the_row_limit(census_table, monkeypatch):
    monkeypatch.setattr(protection.table, "LB_MAX_ROWS", 1000)
    cols = tuple(census_table.frame.columns)
    res = protection.protect_table(census_table, BlockPlan((Block("all", cols, "mdav", 3, {}),)))
    st = res.blocks[0].stats
    assert st["lb_nn"] is None and st["optimality_gap"] is None
    assert st["lb_nn_skipped"] == "more than 1,000 records; sdc evaluate computes it"
    assert "lb_nn" not in res.overall


def test_cli_report_and_summary_show_the_bound(tmp_path):
    out, rep = tmp_path / "o.csv", tmp_path / "r.json"
    result = run_cli("protect", str(SAMPLE / "census.csv"), "-o", str(out), "-k", "5",
                     "--report", str(rep))
    assert result.exit_code == 0, result.output
    doc = json.loads(rep.read_text())
    assert round(doc["blocks"][0]["lb_nn"], 4) == CENSUS_LB_NN[5]
    assert round(doc["overall"]["optimality_gap"], 4) == round(CENSUS_MDAV_IL[5] - CENSUS_LB_NN[5], 4)
    assert "LB_NN" in result.stderr and f"{CENSUS_LB_NN[5]:.4f}" in result.stderr
