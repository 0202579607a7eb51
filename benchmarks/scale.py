"""Scale benchmarks: exact MDAV at 1,000,000 records, the partitioned mode's extra
information loss, and the streaming engines (local and Dask) up to 10,000,000 records.

One command, each case in a fresh subprocess (so that peak memory is per case):

(a) ``exact``: ``mdav`` (the exact fast MDAV) on n x 10 z-scored data, k = 3, for
    n = 10,000, 50,000, 100,000 and 1,000,000 (``--exact-n`` to choose): wall time,
    CPU time and peak RSS of the process.
(b) ``partitioned``: 200,000 x 10 through ``protect_table`` -- one exact run against
    the partitioned mode with parts of at most 10,000 / 25,000 / 50,000 / 100,000
    records: IL_SSE of each and the relative difference (target: within 3 %).
(c) ``stream``: a Parquet dataset directory of n x 10 (plus an id and a text column)
    through ``sdc protect --partition-size`` with ``--engine local`` and
    ``--engine dask`` (a LocalCluster of 2 worker processes, 4 GB each): wall time,
    peak RSS of the client process and of each Dask worker (separately), the Dask
    engine's mode (the thin client, where workers read their rows, for a Parquet
    input), and a byte comparison of the two outputs. n = 1,000,000 by default;
    ``--huge`` adds 2,000,000 and 10,000,000 through the Dask engine (``--huge-n`` to
    choose, ``--huge-local`` to run the local engine too and compare bytes,
    ``--kill-worker SHARE`` to run again with one worker SIGKILLed mid-run; targets:
    client <= 0.5 GB, <= 4 GB per worker; the data, ~1 GB of Parquet at 10M, is
    generated in /tmp in chunks of 500,000 rows, never whole in memory).

Data: a seeded Gaussian mixture (8 components in 10 dimensions, means from
N(0, 3^2), each component with its own correlated covariance), in original units
(the engines z-score); the same model as ``benchmarks/mdav.py``.

Usage: ``python benchmarks/scale.py [--only exact,partitioned,stream] [--exact-n N ...]
[--stream-n N] [--partition-size 50000] [--huge] [--json FILE]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

P = 10
K = 3
SEED = 20240611
CHUNK = 500_000
COLUMNS = [f"x{j}" for j in range(P)]


def _model(p: int = P, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    components = 8
    return rng.normal(0.0, 3.0, (components, p)), rng.normal(0.0, 1.0 / np.sqrt(p), (components, p, p))


def mixture(n: int, chunk_id: int = 0, seed: int = SEED) -> np.ndarray:
    """n records of the mixture; chunk ``chunk_id`` has its own seeded stream."""
    means, loadings = _model(seed=seed)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(chunk_id,)))
    which = rng.integers(0, means.shape[0], n)
    return means[which] + np.einsum("ni,nij->nj", rng.standard_normal((n, P)), loadings[which])


def write_dataset(path: Path, n: int) -> Path:
    """A Parquet dataset directory of n rows, written CHUNK rows at a time."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    stamp = path / ".complete"
    if stamp.exists() and stamp.read_text() == str(n):
        return path
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    for c, start in enumerate(range(0, n, CHUNK)):
        m = min(CHUNK, n - start)
        X = mixture(m, c)
        cols = {"id": pa.array(np.arange(start, start + m, dtype=np.int64))}
        cols.update({name: pa.array(X[:, j]) for j, name in enumerate(COLUMNS)})
        cols["region"] = pa.array([f"R{(start + i) % 97:02d}" for i in range(m)])
        pq.write_table(pa.table(cols), path / f"part-{c:05d}.parquet", row_group_size=100_000)
    stamp.write_text(str(n))
    return path


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def _children_maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0


# -------------------------------------------------------------------------- cases


def case_exact(n: int) -> dict:
    from microagg_cli.methods._fast_mdav import mdav_fast
    from microagg_cli.methods.fixed_size import mdav
    from microagg_cli.partition import zscore

    X = zscore(mixture(n))[0]
    mdav_fast(X[:50], K)  # loads (or compiles) the numba kernels before the clock starts
    t0, c0 = time.perf_counter(), time.process_time()
    labels = mdav(X, K, rng=np.random.default_rng(0))
    return {"n": n, "groups": int(labels.max()) + 1, "wall_s": time.perf_counter() - t0,
            "cpu_s": time.process_time() - c0, "maxrss_mb": _maxrss_mb()}


def case_partitioned(n: int, sizes: list[int]) -> dict:
    import pandas as pd

    from microagg_cli.protection import protect_table
    from microagg_cli.request import RunOptions
    from microagg_cli.blocking import BlockPlan
    from microagg_cli.io import Table

    table = Table(pd.DataFrame(mixture(n), columns=COLUMNS), "parquet", None)
    plan = BlockPlan.single(COLUMNS, k=K)
    t0 = time.perf_counter()
    exact = protect_table(table, plan).blocks[0].stats["il_sse"]
    out = {"n": n, "il_exact": exact, "exact_s": time.perf_counter() - t0, "runs": []}
    for size in sizes:
        t0 = time.perf_counter()
        stats = protect_table(table, plan, RunOptions(partition_size=size)).blocks[0].stats
        il = stats["il_sse"]
        out["runs"].append({"partition_size": size, "parts": stats["partitions"]["count"], "il": il,
                            "relative": il / exact - 1.0, "seconds": time.perf_counter() - t0,
                            "check_estimate": stats["partition_check"]["relative_extra_il"]})
    return out


def _kill_one_worker(after: float):
    """A progress callback that SIGKILLs one Dask worker process (a child of this
    process: the local cluster's nannies spawn them) once ``after`` of the records are done."""
    import signal

    import psutil

    killed: list[int] = []

    def progress(done: int, total: int) -> None:
        if killed or done < after * total:
            return
        children = [c for c in psutil.Process().children() if "resource_tracker" not in " ".join(c.cmdline())]
        victim = max(children, key=lambda c: c.memory_info().rss)
        os.kill(victim.pid, signal.SIGKILL)
        killed.append(victim.pid)
        print(f"killed worker process {victim.pid} at {done:,} of {total:,} records", file=sys.stderr, flush=True)

    return progress, killed


def case_stream(n: int, engine: str, partition_size: int, workdir: Path, kill_after: float | None = None) -> dict:
    from microagg_cli.api import protect

    src = workdir / f"data-{n}"  # written by case "data" in its own process: not counted here
    out = workdir / (f"out-{n}-{engine}" + ("-killed" if kill_after is not None else ""))
    progress, killed = _kill_one_worker(kill_after) if kill_after is not None else (None, [])
    t0 = time.perf_counter()
    if progress is None:
        rep = protect(src, out, k=K, columns=COLUMNS, partition_size=partition_size, engine=engine, force=True,
                      seed=1)
    else:  # the engines' entry point (the one api.protect calls), which takes a progress callback
        from microagg_cli.engines import protect_streaming

        from microagg_cli.request import ProtectRequest

        request = ProtectRequest.build(k=K, columns=COLUMNS, partition_size=partition_size, engine=engine,
                                       force=True, seed=1)
        rep = protect_streaming(src, out, request, progress=progress)
    wall = time.perf_counter() - t0
    block = rep["blocks"][0]
    eng = rep["engine"]
    return {
        "n": n, "engine": engine, "partition_size": partition_size, "wall_s": wall,
        "pass1_s": eng["pass1_seconds"], "pass2_s": eng["pass2_seconds"],
        "parts": block["partitions"]["count"], "il_sse": block["il_sse"],
        "check_extra_il": block["partition_check"]["relative_extra_il"],
        "client_peak_mb": eng["client_peak_rss_bytes"] / 2**20,
        "worker_peak_mb": [w["peak_rss_bytes"] / 2**20 for w in eng.get("workers", [])],
        "mode": eng.get("mode", "local"), "thin": eng.get("thin"), "killed_worker": bool(killed),
        "output": str(out),
    }


# ---------------------------------------------------------------------------- main


def _sub(*args: str) -> dict:
    res = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    if res.returncode:
        sys.stderr.write(res.stderr)
        raise SystemExit(f"case {args} failed")
    return json.loads(res.stdout.strip().splitlines()[-1])


def _same_output(a: str, b: str) -> bool:
    pa_, pb = Path(a), Path(b)
    fa, fb = sorted(pa_.rglob("*.parquet")), sorted(pb.rglob("*.parquet"))
    return [f.relative_to(pa_) for f in fa] == [f.relative_to(pb) for f in fb] and all(
        x.read_bytes() == y.read_bytes() for x, y in zip(fa, fb))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="exact,partitioned,stream", help="cases to run (comma-separated)")
    ap.add_argument("--exact-n", type=int, action="append", default=None, help="sizes of (a)")
    ap.add_argument("--stream-n", type=int, default=1_000_000, help="size of (c) for both engines")
    ap.add_argument("--partition-size", type=int, default=50_000, help="parts of (c)")
    ap.add_argument("--huge", action="store_true",
                    help="add 2,000,000 and 10,000,000 x 10 through the Dask engine (client and worker peak RSS)")
    ap.add_argument("--huge-n", type=int, action="append", default=None, help="sizes of --huge (default 2M, 10M)")
    ap.add_argument("--kill-worker", type=float, default=None, metavar="SHARE",
                    help="with --huge: run each Dask case again, SIGKILLing one worker once SHARE of the records "
                         "are protected, and compare the bytes with the undisturbed run")
    ap.add_argument("--huge-local", action="store_true",
                    help="with --huge: also run --engine local at those sizes and compare the bytes")
    ap.add_argument("--workdir", default="/tmp/sdc-scale", help="where the Parquet data sets go")
    ap.add_argument("--json", default=None, help="also write every result here")
    ap.add_argument("--case", help=argparse.SUPPRESS)
    args = ap.parse_args()
    workdir = Path(args.workdir)
    if args.case:
        kind, *rest = args.case.split(":")
        if kind == "exact":
            r = case_exact(int(rest[0]))
        elif kind == "data":
            workdir.mkdir(parents=True, exist_ok=True)
            write_dataset(workdir / f"data-{rest[0]}", int(rest[0]))
            r = {"n": int(rest[0])}
        elif kind == "partitioned":
            r = case_partitioned(int(rest[0]), [int(s) for s in rest[1].split(",")])
        else:
            workdir.mkdir(parents=True, exist_ok=True)
            r = case_stream(int(rest[0]), rest[1], int(rest[2]), workdir,
                            float(rest[3]) if len(rest) > 3 else None)
        print(json.dumps(r))
        return
    only = set(args.only.split(","))
    results: dict = {"load_average": os.getloadavg()[0], "cpus": os.cpu_count()}
    print(f"load average {results['load_average']:.2f} on {results['cpus']} CPUs; k = {K}, p = {P}", flush=True)
    if "exact" in only:
        print("\n(a) exact mdav (fast), z-scored mixture data")
        print(f"{'n':>10} {'wall s':>8} {'CPU s':>8} {'peak RSS MB':>12}")
        results["exact"] = []
        for n in args.exact_n or [10_000, 50_000, 100_000, 1_000_000]:
            r = _sub("--case", f"exact:{n}")
            results["exact"].append(r)
            print(f"{n:>10,} {r['wall_s']:>8.2f} {r['cpu_s']:>8.2f} {r['maxrss_mb']:>12.0f}", flush=True)
    if "partitioned" in only:
        r = _sub("--case", "partitioned:200000:10000,25000,50000,100000")
        results["partitioned"] = r
        print(f"\n(b) partitioned vs exact, {r['n']:,} x {P}: IL_SSE exact {r['il_exact']:.4f} "
              f"({r['exact_s']:.1f} s)")
        print(f"{'parts <=':>9} {'parts':>6} {'IL_SSE':>8} {'relative':>9} {'check est.':>10} {'seconds':>8}")
        for run in r["runs"]:
            print(f"{run['partition_size']:>9,} {run['parts']:>6} {run['il']:>8.4f} "
                  f"{100 * run['relative']:>+8.2f}% {100 * run['check_estimate']:>+9.2f}% {run['seconds']:>8.1f}",
                  flush=True)
    if "stream" in only:
        cases = [(args.stream_n, "local"), (args.stream_n, "dask")] if args.stream_n else []
        if args.huge:
            for n in args.huge_n or [2_000_000, 10_000_000]:
                cases.append((n, "dask"))
                if args.kill_worker is not None:
                    cases.append((n, "dask-killed"))
                if args.huge_local:
                    cases.append((n, "local"))
        print(f"\n(c) streaming engines, Parquet dataset in {workdir}, parts <= {args.partition_size:,}")
        print(f"{'n':>11} {'engine':>7} {'wall s':>8} {'pass 1':>7} {'pass 2':>7} {'parts':>6} {'IL_SSE':>8} "
              f"{'client MB':>9}  worker peak MB")
        results["stream"] = []
        for n, engine in cases:
            _sub("--case", f"data:{n}", "--workdir", str(workdir))
            if engine == "dask-killed":
                r = _sub("--case", f"stream:{n}:dask:{args.partition_size}:{args.kill_worker}", "--workdir",
                         str(workdir))
                r["engine"] = engine
            else:
                r = _sub("--case", f"stream:{n}:{engine}:{args.partition_size}", "--workdir", str(workdir))
            results["stream"].append(r)
            workers = ", ".join(f"{m:.0f}" for m in r["worker_peak_mb"]) or "-"
            print(f"{n:>11,} {engine:>7} {r['wall_s']:>8.1f} {r['pass1_s']:>7.1f} {r['pass2_s']:>7.1f} "
                  f"{r['parts']:>6} {r['il_sse']:>8.4f} {r['client_peak_mb']:>9.0f}  {workers}  [{r['mode']}]"
                  f"{' (one worker SIGKILLed mid-run)' if r.get('killed_worker') else ''}",
                  flush=True)
        same = {}
        for n in {n for n, _ in cases}:
            outs = {r["engine"]: r["output"] for r in results["stream"] if r["n"] == n}
            if "local" in outs and "dask" in outs:
                same[n] = _same_output(outs["local"], outs["dask"])
                print(f"{n:,}: dask output equals local output byte for byte: {same[n]}")
            if "dask-killed" in outs and "dask" in outs:
                same[f"{n}-killed"] = _same_output(outs["dask"], outs["dask-killed"])
                print(f"{n:,}: dask output with a worker killed mid-run equals the undisturbed one byte for byte: "
                      f"{same[f'{n}-killed']}")
        results["same_bytes"] = {str(k): v for k, v in same.items()}
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
