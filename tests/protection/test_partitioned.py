"""Partitioned mode (--partition-size): groups >= k, determinism, report, locality."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from click.testing import CliRunner

from microagg_cli.protection import protect_table
from microagg_cli.blocking import BlockPlan
from microagg_cli.cli import cli
from microagg_cli.io import Table
from microagg_cli.partition import group_sizes
from microagg_cli.request import RunOptions


def _table(n=600, p=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * [1, 10, 100]
    return Table(pd.DataFrame(X, columns=[f"c{j}" for j in range(p)]), "parquet", None), X


def test_partitioned_groups_and_parts():
    table, X = _table()
    res = protect_table(table, BlockPlan.single(["c0", "c1", "c2"], k=3), RunOptions(partition_size=100))
    block = res.blocks[0]
    assert group_sizes(block.labels).min() >= 3
    parts = block.stats["partitions"]
    assert parts["count"] >= 6 and parts["largest"] <= 100 and parts["smallest"] >= 3
    check = block.stats["partition_check"]
    assert check["sample_rows"] <= 200 and check["il_sse_partitioned"] >= check["il_sse_exact"] * 0.9
    # partitioning costs information but stays close to the exact run
    exact = protect_table(table, BlockPlan.single(["c0", "c1", "c2"], k=3)).blocks[0]
    assert exact.stats["il_sse"] <= block.stats["il_sse"] <= exact.stats["il_sse"] * 1.25


def test_partition_size_larger_than_block_is_exact():
    table, _ = _table(n=90)
    a = protect_table(table, BlockPlan.single(["c0", "c1", "c2"], k=3), RunOptions(partition_size=1000)).blocks[0]
    b = protect_table(table, BlockPlan.single(["c0", "c1", "c2"], k=3)).blocks[0]
    assert np.array_equal(a.values, b.values)
    assert "partitions" not in a.stats


def test_partitioned_cli_deterministic_and_reported(tmp_path):
    table, X = _table(n=500)
    src = tmp_path / "in.parquet"
    table.frame.to_parquet(src)
    outs = []
    for name in ("a", "b"):
        out = tmp_path / f"{name}.csv"
        rep = tmp_path / f"{name}.json"
        res = CliRunner().invoke(cli, ["protect", str(src), "-o", str(out), "-k", "4", "--partition-size", "80",
                                       "-r", str(rep), "-q", "-m", "vmdav"])
        assert res.exit_code == 0, res.output
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    r = json.loads((tmp_path / "a.json").read_text())
    assert r["parameters"]["partition_size"] == 80
    assert r["blocks"][0]["partitions"]["count"] >= 7
    out = pd.read_csv(tmp_path / "a.csv")
    assert out.value_counts().min() >= 4


def test_partition_size_too_small_is_an_error(tmp_path):
    table, _ = _table(n=50)
    src = tmp_path / "in.parquet"
    table.frame.to_parquet(src)
    res = CliRunner().invoke(cli, ["protect", str(src), "-o", str(tmp_path / "o.csv"), "-k", "5",
                                   "--partition-size", "6"])
    assert res.exit_code == 2
    assert "2k - 1" in res.stderr
