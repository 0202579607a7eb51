"""Streaming Parquet engine and Dask engine: same output as the in-memory partitioned mode.

The Dask tests share one ``distributed.LocalCluster`` of 2 workers in threads
(``processes=False``, tcp on the loopback so that ``--scheduler`` can reach it); one
test starts the default cluster (2 worker processes) through ``--engine dask``.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from conftest import write_parquet
from microagg_cli import engines
from microagg_cli.protection import partitioned
from microagg_cli.protection import protect_table
from microagg_cli.blocking import Block, BlockPlan
from microagg_cli.cli import cli
from microagg_cli.engines import open_parquet, protect_stream
from microagg_cli.errors import DataError, InfeasibleError, InvalidParameterError, OutputExistsError
from microagg_cli.io import Table
from microagg_cli.request import ProtectRequest, RunOptions


def _frame(n: int, seed: int = 0, *, missing: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) * [1.0, 10.0, 100.0]
    X[: n // 3, 0] += 8.0  # two clusters: parts have to follow them
    df = pd.DataFrame({"hh_id": np.arange(n) + 1000, "a": X[:, 0], "b": X[:, 1],
                       "code": [f"c{i % 13:03d}" for i in range(n)], "c": rng.integers(0, 50, n),
                       "w": rng.uniform(0.5, 3.0, n)})
    if missing:
        df.loc[rng.choice(n, n // 20, replace=False), "b"] = np.nan
    return df


def _write(df: pd.DataFrame, path, *, files: int = 1, row_group_size: int = 250) -> None:
    """A Parquet file, or a dataset directory of ``files`` files."""
    write_parquet(df, path, files=files, row_group_size=row_group_size)


def _in_memory(df: pd.DataFrame, plan: BlockPlan, **kwargs):
    """The in-memory path on the same data as read from Parquet."""
    table = Table(pa.Table.from_pandas(df, preserve_index=False).to_pandas(), "parquet", None)
    res = protect_table(table, plan, RunOptions(**kwargs))
    return res, pa.Table.from_pandas(res.frame, preserve_index=False)


def _read(path) -> pa.Table:
    if path.is_dir():
        return pa.concat_tables(pq.read_table(f) for f in sorted(path.glob("*.parquet")))
    return pq.read_table(path)


def _same_stats(rep_block: dict, stats: dict) -> None:
    got = {key: v for key, v in rep_block.items() if key not in ("name", "columns", "method", "k", "params",
                                                                    "reproducibility")}
    assert set(got) == set(stats)
    for key in stats:
        if key not in ("seconds", "lb_nn_policy"):  # timings
            assert got[key] == stats[key], key


def _same_figures(a, b, timed=("seconds", "lb_nn_policy")) -> None:
    """Report entries of the local and the thin Dask engine: integers, texts and the
    partition check exactly; sums (IL_SSE, SSE, SST) up to rounding -- the Dask client
    adds the parts' sums, the local engine sums over the block."""
    assert set(a) == set(b)
    for key in a:
        if key in timed:
            continue
        if isinstance(a[key], float) and isinstance(b[key], float):
            assert a[key] == pytest.approx(b[key], rel=1e-9, abs=1e-12), key
        elif isinstance(a[key], dict) and key != "partition_check":
            _same_figures(a[key], b[key], timed=())
        else:
            assert a[key] == b[key], key


PLAN = BlockPlan.single(["a", "b", "c"], k=3, drop=("hh_id",))
#: The text codes of _frame, released unchanged on purpose (named: the role check refuses codes in clear).
CODE = ["--passthrough", "code"]


# ------------------------------------------------------------------ local streaming


def test_streaming_file_equals_in_memory_partitioned(tmp_path):
    df = _frame(1200)
    src, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    _write(df, src)
    rep = protect_stream(src, out, PLAN, ProtectRequest.build(partition_size=200, seed=7))
    res, expected = _in_memory(df, PLAN, partition_size=200, seed=7)
    got = pq.read_table(out)
    assert got.column_names == ["a", "b", "code", "c", "w"]  # id dropped, order kept
    assert got.to_pydict() == expected.to_pydict()  # every value, exactly
    assert got.schema.field("c").type == pa.float64() and got.schema.field("code").type == pa.large_string()
    _same_stats(rep["blocks"][0], res.blocks[0].stats)
    # LB_NN is computed or skipped by a timing rule (its cost against the method's): compare the rest
    timed = ("lb_nn", "lb_nn_skipped", "optimality_gap")
    assert {k: v for k, v in rep["overall"].items() if k not in timed} == \
        {k: v for k, v in res.overall.items() if k not in timed}
    parts = rep["blocks"][0]["partitions"]
    assert parts["count"] >= 6 and parts["largest"] <= 200
    assert rep["input"]["rows"] == 1200 and rep["output"]["columns"] == 5
    assert rep["engine"]["name"] == "local" and rep["parameters"]["engine"] == "local"
    # the protected rows form groups of >= 3 identical rows
    assert got.select(["a", "b", "c"]).to_pandas().value_counts().min() >= 3


def test_streaming_reads_only_key_columns_in_pass_one_and_batches_pass_two(tmp_path, monkeypatch):
    df = _frame(700)
    src, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    _write(df, src)
    read = []
    original = engines.ParquetSource.read_column

    def spy(self, name):
        read.append(name)
        return original(self, name)

    monkeypatch.setattr(engines.ParquetSource, "read_column", spy)
    monkeypatch.setattr(engines, "BATCH_ROWS", 64)
    monkeypatch.setattr(engines, "PARQUET_ROW_GROUP_ROWS", 64)
    protect_stream(src, out, PLAN, ProtectRequest.build(partition_size=150, weights="w"))
    assert sorted(read) == ["a", "b", "c", "w"]  # never the id or text columns
    meta = pq.read_metadata(out)
    assert meta.num_rows == 700 and meta.num_row_groups == 11  # row groups of 64 rows, written as read
    _, expected = _in_memory(df, PLAN, partition_size=150, weights="w")
    assert pq.read_table(out).to_pydict() == expected.to_pydict()


def test_streaming_missing_weights_stat_and_two_blocks_match_in_memory(tmp_path):
    df = _frame(900, seed=3, missing=True)
    src = tmp_path / "in.parquet"
    _write(df, src)
    plan = BlockPlan((Block("money", ("a", "b"), "mdav", 3, {}), Block("count", ("c",), "mdav", 4, {})),
                     drop=("hh_id",))
    for kwargs in ({"missing": "complete", "weights": "w"}, {"missing": "available", "stat": "median"}):
        out = tmp_path / f"out-{kwargs['missing']}.parquet"
        # bound "on": the default policy ("auto") decides by the measured time, which a loaded machine changes
        rep = protect_stream(src, out, plan, ProtectRequest.build(partition_size=160, seed=11, bound="on", **kwargs))
        res, expected = _in_memory(df, plan, partition_size=160, seed=11, bound="on", **kwargs)
        assert pq.read_table(out).to_pydict() == expected.to_pydict()
        for rb, block in zip(rep["blocks"], res.blocks):
            _same_stats(rb, block.stats)
    # records left out of the grouping keep their protected values blank
    blank = pq.read_table(tmp_path / "out-complete.parquet").column("a").null_count
    assert blank == int(df["b"].isna().sum())


def test_dataset_directory_in_and_out(tmp_path):
    df = _frame(1000, seed=5)
    src, out = tmp_path / "ds", tmp_path / "protected"
    _write(df, src, files=4)
    (src / "_SUCCESS").write_text("")  # marker files are skipped
    rep = protect_stream(src, out, PLAN, ProtectRequest.build(partition_size=180, seed=2))
    assert sorted(p.name for p in out.iterdir()) == [".sdc-output.json"] + [f"part-{f:03d}.parquet" for f in range(4)]
    for f in range(4):
        assert pq.read_metadata(out / f"part-{f:03d}.parquet").num_rows == pq.read_metadata(
            src / f"part-{f:03d}.parquet").num_rows
    _, expected = _in_memory(df, PLAN, partition_size=180, seed=2)
    assert _read(out).to_pydict() == expected.to_pydict()
    assert rep["input"]["files"] == 4 and rep["output"]["files"] == 4 and len(rep["input"]["sha256"]) == 64
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary folder left


def test_regenerated_ids_match_in_memory(tmp_path):
    df = _frame(400, seed=8)
    src, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    _write(df, src)
    res = CliRunner().invoke(cli, ["protect", str(src), "-o", str(out), "-k", "3", "-c", "a,b", "-q",
                                   "--engine", "local", "--partition-size", "90", "--id-column", "hh_id",
                                   "--regenerate-ids", "-s", "4", *CODE])
    assert res.exit_code == 0, res.output
    mem = tmp_path / "mem.parquet"
    res = CliRunner().invoke(cli, ["protect", str(src), "-o", str(mem), "-k", "3", "-c", "a,b", "-q",
                                   "--partition-size", "90", "--id-column", "hh_id", "--regenerate-ids", "-s", "4",
                                   *CODE])
    assert res.exit_code == 0, res.output
    got, want = pq.read_table(out), pq.read_table(mem)
    assert got.to_pydict() == want.to_pydict()
    assert sorted(got.column("hh_id").to_pylist()) == list(range(1, 401))
    assert got.column("hh_id").to_pylist() != df["hh_id"].tolist()


def test_errors_and_atomic_replacement(tmp_path, monkeypatch):
    df = _frame(300)
    src = tmp_path / "ds"
    _write(df, src, files=2)
    out = tmp_path / "out"
    out.mkdir()
    (out / "part-000.parquet").write_bytes(b"old")  # a name this run writes: --force may replace it
    with pytest.raises(OutputExistsError):
        protect_stream(src, out, PLAN, ProtectRequest.build(partition_size=100))
    # a failure while writing leaves the old output and no temporary folder
    def boom(*args, **kwargs):
        raise OSError("disk full")
        yield  # pragma: no cover

    monkeypatch.setattr(engines, "_batches", boom)
    with pytest.raises(DataError, match="cannot write output .*disk full; nothing was written"):
        protect_stream(src, out, PLAN, ProtectRequest.build(partition_size=100, force=True))
    assert [p.name for p in out.iterdir()] == ["part-000.parquet"]
    assert (out / "part-000.parquet").read_bytes() == b"old"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    monkeypatch.undo()
    protect_stream(src, out, PLAN, ProtectRequest.build(partition_size=100, force=True))
    assert sorted(p.name for p in out.iterdir()) == [".sdc-output.json", "part-000.parquet", "part-001.parquet"]
    # files with different schemas make no dataset
    bad = tmp_path / "bad"
    bad.mkdir()
    pq.write_table(pa.table({"a": [1.0, 2.0]}), bad / "1.parquet")
    pq.write_table(pa.table({"a": [1, 2]}), bad / "2.parquet")
    with pytest.raises(DataError, match="same schema"):
        open_parquet(bad)
    with pytest.raises(InvalidParameterError, match="--scheduler needs --engine dask"):
        protect_stream(src, tmp_path / "x.parquet", PLAN, ProtectRequest.build(scheduler="tcp://127.0.0.1:1"))
    with pytest.raises(DataError, match="the input is never modified"):
        protect_stream(src, src, PLAN, ProtectRequest.build(force=True))


def test_streaming_strata_equal_the_in_memory_path(tmp_path):
    """One block loop: strata (and their report section) are the same streamed or in memory."""
    df = _frame(200)
    src = tmp_path / "ds"
    _write(df, src, files=2)
    plan = BlockPlan.single(["a", "b"], k=3)
    rep = protect_stream(src, tmp_path / "o", plan, ProtectRequest.build(strata=["code"], small_strata="merge", seed=2))
    res, expected = _in_memory(df, plan, strata=["code"], small_strata="merge", seed=2)
    assert _read(tmp_path / "o").to_pydict() == expected.to_pydict()
    assert rep["blocks"][0]["strata"] == res.blocks[0].stats["strata"]
    _same_stats(rep["blocks"][0], res.blocks[0].stats)


def test_cli_streaming_refuses_what_it_cannot_stream(tmp_path):
    df = _frame(200)
    src = tmp_path / "ds"
    _write(df, src, files=2)
    runner = CliRunner()
    cases = [
        (["--shuffle-rows"], "--shuffle-rows is not supported"),
        (["--scheduler", "tcp://127.0.0.1:1"], "--scheduler needs --engine dask"),
    ]
    for extra, message in cases:
        res = runner.invoke(cli, ["protect", str(src), "-o", str(tmp_path / "o"), "-k", "3", "-c", "a,b", "-d", "hh_id",
                                  *CODE, *extra])
        assert res.exit_code == 2, res.output
        assert message in res.stderr and res.stderr.count("\n") == 1
    res = runner.invoke(cli, ["protect", str(src), "-o", str(tmp_path / "o.csv"), "-k", "3", "-c", "a,b", "-d", "hh_id",
                              *CODE])
    assert res.exit_code == 2 and "a dataset directory is streamed to Parquet only" in res.stderr
    # default columns of a dataset: the numeric Parquet columns not dropped
    res = runner.invoke(cli, ["protect", str(src), "-o", str(tmp_path / "o"), "-k", "3", "-d", "hh_id", "-q",
                              "-r", str(tmp_path / "r.json"), *CODE])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "r.json").read_text())["columns"]["protected"] == ["a", "b", "c", "w"]


def test_dask_missing_is_a_one_line_parameter_error(tmp_path, monkeypatch):
    df = _frame(100)
    src = tmp_path / "in.parquet"
    _write(df, src)
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    with pytest.raises(InvalidParameterError, match=r"pip install 'microagg-cli\[dask\]'"):
        protect_stream(src, tmp_path / "o.parquet", PLAN, ProtectRequest.build(engine="dask"))
    res = CliRunner().invoke(cli, ["protect", str(src), "-o", str(tmp_path / "o.parquet"), "-k", "3",
                                   "--engine", "dask"])
    assert res.exit_code == 2
    assert res.stderr == ("Error: --engine dask needs Dask, which is not installed: "
                          "pip install 'microagg-cli[dask]'\n")


def test_protect_without_engine_dask_never_imports_dask(tmp_path):
    """Dask is installed here, but a plain ``sdc protect`` and ``--engine local`` (whose
    module imports the ``engines_dask`` package) must not load it."""
    import subprocess

    df = _frame(200)
    df.to_csv(tmp_path / "in.csv", index=False)
    _write(df, tmp_path / "in.parquet")
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from microagg_cli.cli import cli\n"
        "for extra in ([], ['--engine', 'local', '--partition-size', '50']):\n"
        "    res = CliRunner().invoke(cli, ['protect', sys.argv[1], '-o', sys.argv[2] + str(len(extra)) + '.parquet',\n"
        "                                   '-k', '3', '-d', 'hh_id', '--passthrough', 'code', '-q'] + extra)\n"
        "    assert res.exit_code == 0, res.output\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))\n"
    )
    for src in ("in.csv", "in.parquet"):
        out = subprocess.run([sys.executable, "-c", code, str(tmp_path / src), str(tmp_path / f"o-{src}")],
                             capture_output=True, text=True, check=True)
        assert out.stdout == "[]\n", out.stderr
    # the check can fail: --engine dask does load it
    probe = "import sys\nfrom microagg_cli.engines_dask import import_distributed\nimport_distributed()\n" \
            "print('distributed' in sys.modules)\n"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True).stdout == "True\n"


# ---------------------------------------------------------------------------- dask


@pytest.fixture(scope="module")
def dask_cluster():
    import distributed

    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp://",
                                       host="127.0.0.1", dashboard_address=None, memory_limit="2GB",
                                       scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
    client = distributed.Client(cluster, set_as_default=False)
    yield client
    client.close()
    cluster.close()


def test_dask_engine_writes_the_bytes_of_the_local_engine(tmp_path, dask_cluster):
    df = _frame(1500, seed=9)
    src = tmp_path / "ds"
    _write(df, src, files=3)
    plan = BlockPlan((Block("money", ("a", "b"), "mdav", 3, {}), Block("count", ("c",), "vmdav", 4, {})),
                     drop=("hh_id",))
    # --bound on: the default policy weighs LB_NN's estimated time against the
    # method's, so on a loaded machine one engine could skip it and the other not
    local = protect_stream(src, tmp_path / "local", plan, ProtectRequest.build(partition_size=200, seed=5, bound="on"))
    dask = protect_stream(src, tmp_path / "dask", plan, ProtectRequest.build(partition_size=200, seed=5, bound="on",
                                                                              engine="dask", scheduler=dask_cluster))
    for f in range(3):
        name = f"part-{f:03d}.parquet"
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "dask" / name).read_bytes()
    for a, b in zip(local["blocks"], dask["blocks"]):
        _same_figures(a, b)
    _same_figures(local["overall"], dask["overall"])
    assert dask["engine"]["name"] == "dask" and len(dask["engine"]["workers"]) == 2
    assert dask["engine"]["mode"] == "workers read their rows and write the output"
    # and both equal the in-memory partitioned mode
    _, expected = _in_memory(df, plan, partition_size=200, seed=5)
    assert _read(tmp_path / "dask").to_pydict() == expected.to_pydict()
    assert expected.select(["a", "b"]).to_pandas().value_counts().min() >= 3


_PART_TASK = partitioned.part_task


def _failing_part(X, k, entropy, spawn_key, *args):
    if spawn_key[-1] == 2:
        raise InfeasibleError("part 3 failed on a worker")
    return _PART_TASK(X, k, entropy, spawn_key, *args)


def test_cli_dask_scheduler_address_single_file(tmp_path, dask_cluster, monkeypatch):
    df = _frame(800, seed=4)
    src = tmp_path / "in.parquet"
    _write(df, src)
    address = dask_cluster.scheduler.address
    assert address.startswith("tcp://127.0.0.1:")
    runner = CliRunner()
    args = ["protect", str(src), "-k", "3", "-c", "a,b,c", "--partition-size", "150", "-q", "--passthrough", "hh_id,code"]
    res = runner.invoke(cli, [*args, "-o", str(tmp_path / "l.parquet"), "--engine", "local"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(cli, [*args, "-o", str(tmp_path / "d.parquet"), "--engine", "dask", "--scheduler", address,
                              "-r", str(tmp_path / "d.json")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "l.parquet").read_bytes() == (tmp_path / "d.parquet").read_bytes()
    rep = json.loads((tmp_path / "d.json").read_text())
    assert rep["engine"]["scheduler"] == address and rep["blocks"][0]["partitions"]["count"] >= 6
    # a task failing on a worker fails the run with its error; nothing is written
    monkeypatch.setattr(partitioned, "part_task", _failing_part)
    res = runner.invoke(cli, [*args, "-o", str(tmp_path / "e.parquet"), "--engine", "dask", "--scheduler", address])
    assert res.exit_code == 4 and "part 3 failed on a worker" in res.stderr
    assert not (tmp_path / "e.parquet").exists()
    res = runner.invoke(cli, [*args, "-o", str(tmp_path / "x.parquet"), "--engine", "dask", "--scheduler", "nohost"])
    assert res.exit_code == 2 and "tcp://HOST:PORT" in res.stderr


def test_cli_dask_default_local_cluster_of_processes(tmp_path):
    df = _frame(600, seed=6)
    src = tmp_path / "ds"
    _write(df, src, files=2)
    runner = CliRunner()
    args = ["protect", str(src), "-k", "3", "-c", "a,b", "--partition-size", "120", "-q", "-s", "3",
            "--passthrough", "hh_id,code"]
    res = runner.invoke(cli, [*args, "-o", str(tmp_path / "local")])
    assert res.exit_code == 0, res.output
    res = runner.invoke(cli, [*args, "-o", str(tmp_path / "dask"), "--engine", "dask", "-r", str(tmp_path / "r.json")])
    assert res.exit_code == 0, res.output
    for f in range(2):
        name = f"part-{f:03d}.parquet"
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "dask" / name).read_bytes()
    eng = json.loads((tmp_path / "r.json").read_text())["engine"]
    assert eng["scheduler"] == "local cluster" and eng["processes"] is True and eng["n_workers"] == 2
    assert all(w["address"].startswith("tcp://127.0.0.1:") for w in eng["workers"])


def test_mixed_keys_through_both_engines_give_the_in_memory_bytes(tmp_path, dask_cluster):
    """Categorical and ordinal keys with strata, weights and --partition-size: the local
    and Dask engines write the bytes of the in-memory run (the keys are grouped on the
    client, each key cell taken from the input), and k holds over the whole released
    file (strata, keys and values)."""
    from microagg_cli import api

    from pathlib import Path

    df = pd.read_csv(Path(__file__).resolve().parents[2] / "sample_data" / "household.csv")
    src = tmp_path / "hh.parquet"
    df.to_parquet(src)
    opts = dict(k=3, columns=["age", "expend", "income", "savings"], categorical=["roof", "walls", "water", "sex"],
                ordinal=["hhcivil"], strata=["urbrur"], weights="sampling_weight", partition_size=700, seed=4,
                drop=["ori_hid"], passthrough=["electcon", "relat", "household_weights"])
    api.protect(src, tmp_path / "memory.parquet", **opts)
    api.protect(src, tmp_path / "local.parquet", engine="local", **opts)
    rep = api.protect(src, tmp_path / "dask.parquet", engine="dask", scheduler=dask_cluster,
                      report=tmp_path / "r.json", **opts)
    data = (tmp_path / "memory.parquet").read_bytes()
    assert (tmp_path / "local.parquet").read_bytes() == data == (tmp_path / "dask.parquet").read_bytes()
    assert rep["engine"]["mode"] == "client reads the rows and ships them to the workers"
    out = pd.read_parquet(tmp_path / "dask.parquet")
    cols = ["urbrur", "roof", "walls", "water", "sex", "hhcivil", "age", "expend", "income", "savings"]
    assert out.groupby(cols, dropna=False).size().min() >= 3
    assert rep["blocks"][0]["k_released"]["k_min"] >= 3
    assert out["roof"].dtype == df["roof"].dtype and set(out["roof"]) <= set(df["roof"])
    # without strata and weights, the keys are why the client groups
    rep = api.protect(src, tmp_path / "d2.parquet", engine="dask", scheduler=dask_cluster, k=3,
                      columns=["age", "expend"], categorical=["roof", "sex"], partition_size=700, drop=["ori_hid"],
                      passthrough=["urbrur", "walls", "water", "electcon", "relat", "hhcivil", "income", "savings",
                                   "sampling_weight", "household_weights"])
    assert "categorical/ordinal keys" in rep["engine"]["mode_reason"]
