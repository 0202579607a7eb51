"""Information loss, time and peak memory of the refinement methods on Census.

Methods: ``mdav`` (the reference), ``genetic`` (defaults: 10,000 generations, 10
chromosomes, macrogroups of 7k), ``mdav-ls`` and ``ils`` (time budget ``--budget``
seconds, default 120, or ``--iterations`` for a reproducible run) on the Census file
(1080 x 13, z-scored, one block) for k = 3, 5, 10. Each case runs in a fresh
subprocess so that peak memory is per case; numba kernels are loaded (or compiled)
by a warm-up call on a tiny input before the clock starts.

Columns: IL = 100 SSE/SST; LB_NN, the lower bound of the metrics spec (no
k-partition can do better); seconds; tracemalloc peak (numpy allocations made in
Python) and the growth of the process's maximum RSS (includes numba's own
allocations).

``--numpy-ga`` also times one generation of a numpy-vectorised genetic algorithm
(all macrogroups and chromosomes at once) to show why the compiled kernel is used.

Usage: ``python benchmarks/refine.py [--budget 120] [--iterations N] [--ks 3,5,10]
[--methods mdav,genetic,mdav-ls,ils] [--seed 0] [--data other.csv] [--numpy-ga]``
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CENSUS = ROOT / "sample_data" / "census.csv"


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def _load(path: str) -> np.ndarray:
    from microagg_cli.partition import zscore

    X = np.genfromtxt(path, delimiter=",", skip_header=1)
    X = X[:, ~np.isnan(X).all(axis=0)]  # non-numeric columns
    X = X[~np.isnan(X).any(axis=1)]  # complete rows only
    return zscore(X)[0]


def _lb_nn(Z: np.ndarray, k: int) -> float:
    from scipy.spatial import cKDTree

    from microagg_cli.partition import sst

    d, _ = cKDTree(Z).query(Z, k)
    return 100.0 * (d[:, 1:] ** 2).sum() / (2 * k) / sst(Z)


def run_case(method: str, k: int, data: str, seed: int, budget: float, iterations: int) -> dict:
    from microagg_cli.methods import METHODS
    from microagg_cli.partition import information_loss

    Z = _load(data)
    spec = METHODS[method]
    params: dict = {}
    if method == "ils":
        params = {"time_budget": budget, "iterations": iterations}
    t0 = time.perf_counter()
    warm = dict(params, iterations=5) if method == "ils" else dict(params)
    if method == "genetic":
        warm["iterations"] = 5
    spec.func(Z[: 4 * k], k, rng=np.random.default_rng(0), **warm)
    first_call = time.perf_counter() - t0
    rss0 = _maxrss_mb()
    tracemalloc.start()
    t0 = time.perf_counter()
    labels = spec.func(Z, k, rng=np.random.default_rng(seed), **params)
    seconds = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    sizes = np.bincount(labels)
    return {
        "method": method,
        "k": k,
        "il": information_loss(Z, labels),
        "lb_nn": _lb_nn(Z, k),
        "seconds": seconds,
        "first_call_s": first_call,
        "groups": int(sizes.size),
        "min_size": int(sizes.min()),
        "max_size": int(sizes.max()),
        "tracemalloc_peak_mb": peak / 2**20,
        "maxrss_growth_mb": _maxrss_mb() - rss0,
    }


def numpy_ga_generation_ms(k: int = 3, chromosomes: int = 10, repeat: int = 200) -> float:
    """Milliseconds per generation of a numpy-vectorised GA on Census (all macrogroups).

    Evaluation (argsort of random keys, gather, group sums), roulette selection and
    one-point crossover as (macrogroups, chromosomes, K) arrays; equal-size
    macrogroups of 7k records (the padding a real version needs is left out, so this
    is a lower bound on its cost).
    """
    Z = _load(str(CENSUS))
    K = 7 * k
    M = Z.shape[0] // K
    Zm = Z[: M * K].reshape(M, K, -1)
    r = np.random.default_rng(0)
    keys = r.random((M, chromosomes, K))
    t0 = time.perf_counter()
    for _ in range(repeat):
        order = np.argsort(keys, axis=2, kind="stable")
        P = np.take_along_axis(Zm[:, None, :, :], order[..., None], axis=2)
        S = P.reshape(M, chromosomes, K // k, k, -1).sum(3)
        sse = (P**2).sum((2, 3)) - (S**2).sum(3).sum(2) / k
        f = 1 / (sse + 1)
        cum = f.cumsum(1)
        u = r.random((M, chromosomes)) * cum[:, -1:]
        parents = (cum[:, None, :] <= u[:, :, None]).sum(2)
        keys = np.take_along_axis(keys, parents[..., None], axis=1)
        cut = r.integers(1, K, (M, chromosomes // 2))
        mask = np.arange(K)[None, None, :] >= cut[..., None]
        a, b = keys[:, 0::2].copy(), keys[:, 1::2].copy()
        keys[:, 0::2] = np.where(mask, b, a)
        keys[:, 1::2] = np.where(mask, a, b)
    return (time.perf_counter() - t0) / repeat * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=120.0, help="ils time budget (s)")
    ap.add_argument("--iterations", type=int, default=0,
                    help="ils iterations (> 0: reproducible, overrides --budget)")
    ap.add_argument("--ks", default="3,5,10")
    ap.add_argument("--methods", default="mdav,genetic,mdav-ls,ils")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", default=str(CENSUS), help="CSV file (numeric columns, complete rows)")
    ap.add_argument("--numpy-ga", action="store_true", help="also time a numpy-vectorised GA")
    ap.add_argument("--case", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.case:
        method, k = args.case.split(":")
        print(json.dumps(run_case(method, int(k), args.data, args.seed, args.budget,
                                  args.iterations)))
        return
    print(f"data: {args.data}; ils: "
          + (f"{args.iterations} iterations" if args.iterations else f"{args.budget:g} s budget"))
    print(f"{'method':<8} {'k':>3} {'IL':>8} {'LB_NN':>7} {'seconds':>8} {'warm-up s':>9} "
          f"{'groups':>6} {'sizes':>7} {'tracemalloc MB':>14} {'RSS growth MB':>13}")
    for k in [int(v) for v in args.ks.split(",")]:
        for method in args.methods.split(","):
            out = subprocess.run(
                [sys.executable, __file__, "--case", f"{method}:{k}", "--data", args.data,
                 "--seed", str(args.seed), "--budget", str(args.budget),
                 "--iterations", str(args.iterations)],
                check=True, capture_output=True, text=True,
            ).stdout
            r = json.loads(out.strip().splitlines()[-1])
            print(f"{r['method']:<8} {r['k']:>3} {r['il']:>8.4f} {r['lb_nn']:>7.4f} "
                  f"{r['seconds']:>8.2f} {r['first_call_s']:>9.2f} {r['groups']:>6} "
                  f"{r['min_size']:>3}-{r['max_size']:<3} {r['tracemalloc_peak_mb']:>14.1f} "
                  f"{r['maxrss_growth_mb']:>13.1f}", flush=True)
    if args.numpy_ga:
        ms = numpy_ga_generation_ms()
        print(f"numpy-vectorised GA, Census k=3: {ms:.2f} ms per generation "
              f"-> {ms * 10:.1f} s for 10,000 generations (evaluation + selection + crossover only)")


if __name__ == "__main__":
    main()
