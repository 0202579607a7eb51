"""Strata, small-strata policies, sampling weights, statistics, missing values, hygiene."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from conftest import SAMPLE
from microagg_cli.protection import protect_table
from microagg_cli.blocking import BlockPlan
from microagg_cli.cli import cli
from microagg_cli.errors import InfeasibleError
from microagg_cli.io import read_table
from microagg_cli.methods.fixed_size import mdav
from microagg_cli.partition import group_sizes, zscore
from microagg_cli.survey import mdav_available, resolve_small_strata, stratify
from microagg_cli.request import RunOptions


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_household_strata_and_weights(tmp_path):
    table = read_table(SAMPLE / "household.csv")
    plan = BlockPlan.single(["income", "expend", "savings"], k=3)
    res = protect_table(table, plan, RunOptions(strata=["urbrur"], weights="sampling_weight"))
    block = res.blocks[0]
    strata = table.frame["urbrur"].to_numpy()
    for g in np.unique(block.labels):
        assert np.unique(strata[block.labels == g]).size == 1, "a group spans two strata"
    assert group_sizes(block.labels).min() >= 3
    w = table.frame["sampling_weight"].astype(float).to_numpy()
    for j, col in enumerate(["income", "expend", "savings"]):
        before = np.sum(w * table.frame[col].astype(float).to_numpy())
        after = np.sum(w * block.values[:, j])
        assert after == pytest.approx(before, rel=1e-9)
        tot = block.stats["weighted_totals"][col]
        assert abs(tot["relative_difference"]) < 1e-9
    per = block.stats["strata"]["per_stratum"]
    assert sorted(p["stratum"]["urbrur"] for p in per) == ["1", "2"]
    assert sum(p["rows"] for p in per) == 4580


def test_household_cli_report_shows_strata(tmp_path):
    rep = tmp_path / "r.json"
    res = run("protect", SAMPLE / "household.csv", "-o", tmp_path / "o.csv", "-k", 3,
              "--columns", "income,expend,savings", "--strata", "urbrur", "--weights", "sampling_weight",
              "-r", rep, "-q",  # the id dropped, the other codes released unchanged on purpose (named)
              "--drop", "ori_hid", "--passthrough", "roof,walls,water,electcon,relat,sex,hhcivil")
    assert res.exit_code == 0, res.output
    r = json.loads(rep.read_text())
    assert r["parameters"]["weights"] == "sampling_weight" and r["parameters"]["strata"] == ["urbrur"]
    assert len(r["blocks"][0]["strata"]["per_stratum"]) == 2


def _strata_file(tmp_path: Path) -> Path:
    # stratum A: 5 records near 0; B: 5 near 10; C: 2 records near 9 (k = 3 -> C is small)
    rows = [("A", v) for v in (0, 1, 2, 3, 4)] + [("B", v) for v in (10, 11, 12, 13, 14)] + [("C", 9), ("C", 8)]
    p = tmp_path / "s.csv"
    p.write_text("st,x\n" + "\n".join(f"{s},{v}" for s, v in rows) + "\n")
    return p


def test_small_strata_error_lists_strata(tmp_path):
    res = run("protect", _strata_file(tmp_path), "-o", tmp_path / "o.csv", "-k", 3, "--columns", "x",
              "--strata", "st")
    assert res.exit_code == 4
    assert "C (2)" in res.stderr and "--small-strata" in res.stderr
    assert not (tmp_path / "o.csv").exists()


def test_small_strata_merge_into_nearest_centroid(tmp_path):
    rep = tmp_path / "r.json"
    res = run("protect", _strata_file(tmp_path), "-o", tmp_path / "o.csv", "-k", 3, "--columns", "x",
              "--strata", "st", "--small-strata", "merge", "-r", rep, "-q")
    assert res.exit_code == 0, res.output
    r = json.loads(rep.read_text())
    assert r["blocks"][0]["strata"]["merged"] == [{"stratum": {"st": "C"}, "into": {"st": "B"}}]
    out = pd.read_csv(tmp_path / "o.csv")
    # B+C = 7 records {8..14}: mdav k=3 -> groups; no group mixes A with B/C
    a = out[out.st == "A"].x
    assert set(a).isdisjoint(set(out[out.st != "A"].x))
    assert out.x.value_counts().min() >= 3


def test_small_strata_suppress_blanks(tmp_path):
    rep = tmp_path / "r.json"
    res = run("protect", _strata_file(tmp_path), "-o", tmp_path / "o.csv", "-k", 3, "--columns", "x",
              "--strata", "st", "--small-strata", "suppress", "-r", rep, "-q")
    assert res.exit_code == 0, res.output
    out = pd.read_csv(tmp_path / "o.csv")
    assert out[out.st == "C"].x.isna().all()
    assert out[out.st != "C"].x.notna().all()
    r = json.loads(rep.read_text())
    assert r["blocks"][0]["strata"]["suppressed"] == [{"stratum": {"st": "C"}, "rows": 2}]
    # the block's bound covers the records it grouped; the pooled IL is on another scale
    assert r["blocks"][0]["lb_nn"] is not None and "lb_nn" not in r["overall"]


def test_merge_rule_recomputes_and_fails_when_all_too_small():
    strata = stratify([np.array(["a", "b"])], 2)
    with pytest.raises(InfeasibleError, match="all strata together"):
        resolve_small_strata(strata, np.array([[0.0], [1.0]]), 3, "merge")


def test_minus_999_is_data_not_missing(tmp_path):
    p = tmp_path / "m.csv"
    p.write_text("x,y\n-999,1\n1,2\n2,3\n3,4\n-999,5\n4,6\n")
    res = run("protect", p, "-o", tmp_path / "o.csv", "-k", 2, "-q")
    assert res.exit_code == 0, res.output
    out = pd.read_csv(tmp_path / "o.csv")
    assert out.notna().all().all()
    assert out.x.min() < -300  # the -999 records are grouped together as data


NAN_CSV = "x,y,z\n1,10,a\n,11,b\n3,12,c\n4,,d\n5,14,e\n6,15,f\n7,16,g\n,,h\n9,18,i\n"


def test_missing_error(tmp_path):
    p = tmp_path / "n.csv"
    p.write_text(NAN_CSV)
    res = run("protect", p, "-o", tmp_path / "o.csv", "-k", 2, "--columns", "x,y")
    assert res.exit_code == 3 and "missing" in res.stderr


def test_missing_complete(tmp_path):
    p = tmp_path / "n.csv"
    p.write_text(NAN_CSV)
    rep = tmp_path / "r.json"
    res = run("protect", p, "-o", tmp_path / "o.csv", "-k", 2, "--columns", "x,y", "--missing", "complete",
              "-r", rep, "-q")
    assert res.exit_code == 0, res.output
    out = pd.read_csv(tmp_path / "o.csv")
    incomplete = [1, 3, 7]
    assert out.loc[incomplete, ["x", "y"]].isna().all().all()
    grouped = out.drop(index=incomplete)
    assert grouped[["x", "y"]].notna().all().all()
    assert grouped.groupby(["x", "y"]).size().min() >= 2
    r = json.loads(rep.read_text())
    assert r["blocks"][0]["missing"]["records_not_grouped"] == 3
    assert r["blocks"][0]["missing"]["missing_cells"] == 4


def test_missing_available(tmp_path):
    p = tmp_path / "n.csv"
    p.write_text(NAN_CSV)
    rep = tmp_path / "r.json"
    res = run("protect", p, "-o", tmp_path / "o.csv", "-k", 2, "--columns", "x,y", "--missing", "available",
              "-r", rep, "-q")
    assert res.exit_code == 0, res.output
    out = pd.read_csv(tmp_path / "o.csv")
    src = pd.read_csv(p)
    src_na, out_na = src[["x", "y"]].isna(), out[["x", "y"]].isna()
    # missing cells stay missing
    assert not (src_na & ~out_na).any().any()
    # row 7 has nothing to group on: it is passed through blank, everyone else grouped
    assert out.loc[7, ["x", "y"]].isna().all()
    # a cell missing in any record of a group is blanked in the whole group: each group releases
    # one identical row, so k holds on the released rows, missing cells included
    grouped = out.drop(index=[7])[["x", "y"]].astype(str)
    assert grouped.value_counts().min() >= 2
    blanked = (out_na & ~src_na).sum()
    assert blanked.sum() > 0  # rows 1 and 3 miss a cell their group partners observed
    r = json.loads(rep.read_text())
    assert r["blocks"][0]["missing"]["cells_blanked"] == {c: int(n) for c, n in blanked.items() if n}
    assert r["privacy_check"]["passed"]


def test_mdav_available_groups_and_equals_mdav_on_complete(rng):
    X = rng.normal(size=(40, 3))
    assert (mdav_available(X, 3) == mdav(X, 3)).all()
    X[[1, 5, 9], [0, 1, 2]] = np.nan
    Z = zscore(np.nan_to_num(X))[0]
    Z[np.isnan(X)] = np.nan
    labels = mdav_available(Z, 3)
    assert group_sizes(labels).min() >= 3


def test_available_refuses_other_methods(tmp_path):
    p = tmp_path / "n.csv"
    p.write_text(NAN_CSV)
    res = run("protect", p, "-o", tmp_path / "o.csv", "-k", 2, "--columns", "x,y", "--missing", "available",
              "-m", "cbfs")
    assert res.exit_code == 2 and "mdav only" in res.stderr


@pytest.mark.parametrize("bad", ["0", "-1", "nan", ""])
def test_bad_weights(tmp_path, bad):
    p = tmp_path / "w.csv"
    p.write_text(f"x,w\n1,1\n2,{bad}\n3,1\n4,1\n")
    res = run("protect", p, "-o", tmp_path / "o.csv", "-k", 2, "--columns", "x", "--weights", "w")
    assert res.exit_code == 3, res.output
    assert "weight" in res.stderr or "missing" in res.stderr


def test_weights_with_median_refused(tmp_path):
    p = tmp_path / "w.csv"
    p.write_text("x,w\n1,1\n2,1\n3,1\n4,1\n")
    res = run("protect", p, "-o", tmp_path / "o.csv", "-k", 2, "--columns", "x", "--weights", "w", "--stat", "median")
    assert res.exit_code == 2


def test_median_statistic_used_and_reported(tmp_path):
    p = tmp_path / "m.csv"
    p.write_text("x\n1\n2\n9\n20\n21\n40\n")
    rep = tmp_path / "r.json"
    assert run("protect", p, "-o", tmp_path / "o.csv", "-k", 3, "--stat", "median", "-r", rep, "-q").exit_code == 0
    assert pd.read_csv(tmp_path / "o.csv").x.tolist() == [2.0, 2.0, 2.0, 21.0, 21.0, 21.0]
    assert json.loads(rep.read_text())["parameters"]["stat"] == "median"


def test_shuffle_rows_and_regenerate_ids(tmp_path):
    p = tmp_path / "i.csv"
    p.write_text("id,x\n" + "\n".join(f"{i:03d},{i * 3 % 17}" for i in range(1, 21)) + "\n")
    outs = []
    for name in ("a", "b"):
        o = tmp_path / f"{name}.csv"
        res = run("protect", p, "-o", o, "-k", 4, "--columns", "x", "--shuffle-rows", "--id-column", "id",
                  "--regenerate-ids", "--seed", 5, "-q")
        assert res.exit_code == 0, res.output
        outs.append(o.read_bytes())
    assert outs[0] == outs[1]
    out = pd.read_csv(tmp_path / "a.csv")
    assert sorted(out.id) == list(range(1, 21))
    plain = tmp_path / "plain.csv"
    res = run("protect", p, "-o", plain, "-k", 4, "--columns", "x", "--drop", "id", "-q")
    assert res.exit_code == 0, res.output
    plain_x = pd.read_csv(plain).x
    assert sorted(out.x) == sorted(plain_x) and out.x.tolist() != plain_x.tolist()


def test_regenerate_ids_needs_id_column(tmp_path):
    p = tmp_path / "i.csv"
    p.write_text("id,x\n1,1\n2,2\n3,3\n4,4\n")
    res = run("protect", p, "-o", tmp_path / "o.csv", "-k", 2, "--columns", "x", "--regenerate-ids")
    assert res.exit_code == 2


def test_european_csv_round_trip(tmp_path):
    p = tmp_path / "eu.csv"
    p.write_text("name;x;y\na;1,5;10\nb;2,5;11\nc;10,5;30\nd;11,5;31\n")
    res = run("protect", p, "-o", tmp_path / "o.csv", "-k", 2, "--columns", "x,y", "--decimal", ",", "-q")
    assert res.exit_code == 0, res.output
    lines = (tmp_path / "o.csv").read_text().splitlines()
    assert lines[0] == "name;x;y"
    assert lines[1] == "a;2,0;10,5"
