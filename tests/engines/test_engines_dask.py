"""The thin Dask client: workers read their rows, the cuts come from their
statistics, parts and files are written on the workers; same bytes as ``--engine local``.

Small data with small chunks and units (monkeypatched) so that the chunk rule, the
radix selection (several rounds, ties broken by input index) and the writers' row
ranges across files and row groups are all exercised in a few seconds.
"""

from __future__ import annotations

import os
import signal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from conftest import write_parquet
from microagg_cli import engines, splitting
from microagg_cli.engines_dask import thin
from microagg_cli.blocking import Block, BlockPlan
from microagg_cli.cli import cli
from microagg_cli.engines import protect_stream
from microagg_cli.errors import InfeasibleError
from microagg_cli.io import Table
from microagg_cli.protection import partitioned, protect_table
from microagg_cli.request import ProtectRequest, RunOptions

THIN = "workers read their rows and write the output"


def _frame(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2)) * [1.0, 10.0]
    X[: n // 3, 0] += 8.0
    return pd.DataFrame({"hh_id": np.arange(n) + 1000, "a": X[:, 0], "b": X[:, 1],
                         "code": [f"c{i % 13:03d}" for i in range(n)],
                         "c": rng.integers(0, 4, n),  # heavy ties: medians found by input index
                         "d": rng.integers(0, 50, n).astype(np.float64), "w": rng.uniform(0.5, 3.0, n)})


def _write(df: pd.DataFrame, path, *, files: int, row_group_size: int = 70) -> None:
    """A Parquet file, or a dataset directory of ``files`` files."""
    write_parquet(df, path, files=files, row_group_size=row_group_size)


def _bytes(path) -> dict[str, bytes]:
    if path.is_dir():
        return {p.name: p.read_bytes() for p in sorted(path.iterdir())}
    return {path.name: path.read_bytes()}


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of 64 records, units of 3 chunks, a median ranked once <= 8 candidates remain."""
    monkeypatch.setattr(splitting, "CHUNK_ROWS", 64)
    monkeypatch.setattr(thin, "UNIT_CHUNKS", 3)
    monkeypatch.setattr(thin, "CANDIDATES", 8)
    monkeypatch.setattr(thin, "N_BUCKETS", 3)


@pytest.fixture(scope="module")
def threads_cluster():
    import distributed

    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
                                       memory_limit="2GB", scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
    client = distributed.Client(cluster, set_as_default=False)
    yield client
    client.close()
    cluster.close()


PLAN = BlockPlan((Block("money", ("a", "b"), "mdav", 3, {}), Block("count", ("c", "d"), "vmdav", 4, {})),
                 drop=("hh_id",))


def test_thin_client_equals_local_across_chunks_units_files_and_ties(tmp_path, small_chunks, threads_cluster,
                                                                      monkeypatch):
    df = _frame(1200, seed=3)
    src = tmp_path / "ds"
    _write(df, src, files=3)
    kw = dict(partition_size=90, seed=5, id_column="hh_id", regenerate_ids=True)
    plan = BlockPlan(PLAN.blocks)  # keep the id column: it is regenerated
    local = protect_stream(src, tmp_path / "local", plan, ProtectRequest.build(**kw))

    # the client never reads a record in the thin mode
    def no_rows(*args, **kwargs):
        raise AssertionError("the client read a column")

    monkeypatch.setattr(engines.ParquetSource, "read_column", no_rows)
    dask = protect_stream(src, tmp_path / "dask", plan, ProtectRequest.build(engine="dask", scheduler=threads_cluster, **kw))
    assert dask["engine"]["mode"] == THIN
    assert _bytes(tmp_path / "local") == _bytes(tmp_path / "dask")
    assert dask["blocks"][0]["partitions"] == local["blocks"][0]["partitions"]
    assert dask["blocks"][0]["partitions"]["count"] >= 16
    for a, b in zip(local["blocks"], dask["blocks"]):
        assert {key: a[key] for key in ("k_min", "k_prime", "share_below_k", "n_groups", "group_size_histogram",
                                        "partition_check")} == {
            key: b[key] for key in ("k_min", "k_prime", "share_below_k", "n_groups", "group_size_histogram",
                                    "partition_check")}
        assert a["il_sse"] == pytest.approx(b["il_sse"], rel=1e-9)
    assert dask["engine"]["thin"]["rounds"] > 20  # several radix rounds per level
    # one output file from a dataset (one writer for every input file)
    monkeypatch.undo()
    small = dict(CHUNK_ROWS=64)
    for name, value in small.items():
        monkeypatch.setattr(splitting, name, value)
    plan = BlockPlan(PLAN.blocks[:1])
    protect_stream(src, tmp_path / "one.parquet", plan, ProtectRequest.build(engine="dask", scheduler=threads_cluster, **kw))
    protect_stream(src, tmp_path / "one-local.parquet", plan, ProtectRequest.build(**kw))
    assert (tmp_path / "one.parquet").read_bytes() == (tmp_path / "one-local.parquet").read_bytes()
    # and the in-memory partitioned mode cuts the same way
    table = Table(pa.Table.from_pandas(df, preserve_index=False).to_pandas(), "parquet", None)
    res = protect_table(table, plan, RunOptions(partition_size=90, seed=5))
    got = pq.read_table(tmp_path / "one.parquet")
    assert got.column("a").to_pylist() == res.data.column("a").to_pylist()


def test_thin_split_matches_split_indices(small_chunks, threads_cluster):
    """The cut from workers' statistics equals split_indices on the same z-scaled matrix."""
    rng = np.random.default_rng(7)
    Z = np.vstack([rng.normal(size=(500, 3)), np.zeros((300, 3)), rng.integers(0, 3, (400, 3)).astype(float)])
    want = splitting.split_indices(Z, 70, 3)
    client = threads_cluster
    step = thin.UNIT_CHUNKS * splitting.CHUNK_ROWS
    starts = list(range(0, Z.shape[0], step))
    Z_u = [client.scatter(Z[a:a + step]) for a in starts]
    run = thin.ThinRun(client, thin.ReadSpec(("x",), (Z.shape[0],)), BlockPlan(PLAN.blocks[:1]),
                               RunOptions(seed=0, stat="mean", partition_size=70, bound="off"))
    lab_u, leaves, sizes = run._cut(Z_u, starts, 70)
    labels = np.concatenate(client.gather(lab_u))
    got = [np.flatnonzero(labels == leaf) for leaf in leaves]
    assert [g.tolist() for g in got] == [w.tolist() for w in want]
    assert sizes == [w.size for w in want]


def _failing_part(X, k, entropy, spawn_key, *args):
    if spawn_key[-1] == 4:
        raise InfeasibleError("part 5 failed its k-check on a worker")
    return _PART_TASK(X, k, entropy, spawn_key, *args)


_PART_TASK = partitioned.part_task


def test_a_failing_part_fails_the_run_and_writes_nothing(tmp_path, threads_cluster, monkeypatch):
    df = _frame(900, seed=1)
    src = tmp_path / "ds"
    _write(df, src, files=2)
    out = tmp_path / "out"
    monkeypatch.setattr(partitioned, "part_task", _failing_part)
    res = CliRunner().invoke(cli, ["protect", str(src), "-o", str(out), "-k", "3", "-c", "a,b", "-q",
                                   "--passthrough", "hh_id,code,c,d,w",
                                   "--partition-size", "60", "--engine", "dask", "--scheduler",
                                   threads_cluster.scheduler.address])
    assert res.exit_code == 4 and "part 5 failed its k-check" in res.stderr
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]  # no temporary folder either


def test_inputs_only_the_client_reads_keep_the_shipping_mode(tmp_path, threads_cluster, monkeypatch):
    df = _frame(600, seed=2)
    csv = tmp_path / "in.csv"
    df.to_csv(csv, index=False)
    rep = protect_stream(csv, tmp_path / "o.parquet", BlockPlan.single(["a", "b"], k=3), ProtectRequest.build(partition_size=100, engine="dask", scheduler=threads_cluster))
    assert rep["engine"]["mode"] == "client reads the rows and ships them to the workers"
    assert "not Parquet" in rep["engine"]["mode_reason"]
    src = tmp_path / "in.parquet"
    _write(df, src, files=1)
    rep = protect_stream(src, tmp_path / "w.parquet", BlockPlan.single(["a", "b"], k=3), ProtectRequest.build(partition_size=100, weights="w", engine="dask", scheduler=threads_cluster))
    assert rep["engine"]["mode_reason"] == "--weights"
    # workers that cannot open the files get the rows from the client
    monkeypatch.setattr(thin, "can_open", lambda files: False)
    rep = protect_stream(src, tmp_path / "s.parquet", BlockPlan.single(["a", "b"], k=3), ProtectRequest.build(partition_size=100, engine="dask", scheduler=threads_cluster))
    assert rep["engine"]["mode_reason"] == "the workers cannot open the input files (no shared file system)"


def test_a_worker_killed_mid_run_gives_the_same_bytes(tmp_path):
    """Kill one worker process after the first part: Dask recomputes what it held."""
    import distributed

    df = _frame(1500, seed=4)
    src = tmp_path / "ds"
    _write(df, src, files=3, row_group_size=250)
    plan = BlockPlan.single(["a", "b", "d"], k=3, drop=("hh_id",))
    protect_stream(src, tmp_path / "local", plan, ProtectRequest.build(partition_size=80, seed=9))
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address=None, memory_limit="1GB",
                                       scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
    client = distributed.Client(cluster, set_as_default=False)
    try:
        pids = client.run(os.getpid)
        killed = []

        def progress(done, total):
            if not killed:
                victim = sorted(pids.values())[0]
                os.kill(victim, signal.SIGKILL)
                killed.append(victim)

        rep = protect_stream(src, tmp_path / "dask", plan, ProtectRequest.build(partition_size=80, seed=9, engine="dask", scheduler=client), progress=progress)
        assert killed and rep["engine"]["mode"] == THIN
        assert set(client.run(os.getpid).values()) != set(pids.values())  # the nanny started a new worker
    finally:
        client.close()
        cluster.close()
    assert _bytes(tmp_path / "local") == _bytes(tmp_path / "dask")
