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

``--certify`` checks each result for improving changes the searches do not try
directly, by exhaustive enumeration over all records: the best single move, swap,
cyclic exchange of three records (x -> group of y -> group of z -> group of x),
move-swap chain (x leaves a group with a spare record, replaces y, y joins a third
group with room), and exact reassignment of all records to the fixed centroids with
every group >= k (a transportation problem, ``linear_sum_assignment`` on k copies of
each centroid plus one column per spare record), and the optimal re-split of each group
with each of its 5 nearest groups (every split enumerated, pairs of up to 24 records).
Each is printed as the IL change it would bring; 0 means none improves. (For ``ils``
on Census every one is 0.)

Usage: ``python benchmarks/refine.py [--budget 120] [--iterations N] [--ks 3,5,10]
[--methods mdav,genetic,mdav-ls,ils] [--seed 0] [--data other.csv] [--numpy-ga]
[--certify]``
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
from numba import njit

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


def run_case(method: str, k: int, data: str, seed: int, budget: float, iterations: int,
             check: bool = False) -> dict:
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
    rss_growth = _maxrss_mb() - rss0  # before the check, which holds an n x n matrix
    extra = {"certify": certify(Z, labels, k)} if check else {}
    return extra | {
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
        "maxrss_growth_mb": rss_growth,
    }


@njit(cache=True)
def _replacement_costs(Z, labels, cents, sizes):
    """c[y, x]: SSE change of y's group when x takes y's place in it."""
    n, p = Z.shape
    c = np.empty((n, n))
    for y in range(n):
        g = labels[y]
        dy = 0.0
        for j in range(p):
            d = Z[y, j] - cents[g, j]
            dy += d * d
        for x in range(n):
            dx = 0.0
            dxy = 0.0
            for j in range(p):
                d = Z[x, j] - cents[g, j]
                dx += d * d
                e = Z[x, j] - Z[y, j]
                dxy += e * e
            c[y, x] = dx - dy - dxy / sizes[g]
    return c


@njit(cache=True)
def _best_exchanges(Z, labels, cents, sizes, c, k):
    """Best move, swap, 3-cycle and move-swap chain (negative = improving)."""
    n, p = Z.shape
    G = cents.shape[0]
    cap = 2 * k - 1
    out_gain = np.full(n, np.inf)  # removing x from a group with a spare record
    for x in range(n):
        g = labels[x]
        if sizes[g] > k:
            d = 0.0
            for j in range(p):
                e = Z[x, j] - cents[g, j]
                d += e * e
            out_gain[x] = -sizes[g] / (sizes[g] - 1.0) * d
    ins = np.full((n, G), np.inf)  # adding x to a group with room
    for x in range(n):
        for g in range(G):
            if g != labels[x] and sizes[g] < cap:
                d = 0.0
                for j in range(p):
                    e = Z[x, j] - cents[g, j]
                    d += e * e
                ins[x, g] = sizes[g] / (sizes[g] + 1.0) * d
    move = 0.0
    swap = 0.0
    cyc3 = 0.0
    chain = 0.0
    for x in range(n):
        for g in range(G):
            move = min(move, out_gain[x] + ins[x, g])
        for y in range(n):
            if labels[y] == labels[x]:
                continue
            first = c[y, x]  # x takes y's place
            swap = min(swap, first + c[x, y])
            if out_gain[x] < np.inf:
                for g in range(G):
                    if g != labels[x] and g != labels[y]:
                        chain = min(chain, out_gain[x] + first + ins[y, g])
            if first >= 0.0:  # a negative cycle has a negative arc: start there
                continue
            for z in range(n):
                if labels[z] != labels[x] and labels[z] != labels[y]:
                    cyc3 = min(cyc3, first + c[z, y] + c[x, z])
    return move, swap, cyc3, chain


@njit(cache=True)
def _max_subset_norm(Y, a):
    """max ||sum of a rows of Y||^2 over all a-subsets (lexicographic enumeration)."""
    m, p = Y.shape
    idx = np.arange(a)
    s = np.empty(p)
    best = -1.0
    while True:
        s[:] = 0.0
        for t in range(a):
            for j in range(p):
                s[j] += Y[idx[t], j]
        v = 0.0
        for j in range(p):
            v += s[j] * s[j]
        best = max(best, v)
        t = a - 1
        while t >= 0 and idx[t] == m - a + t:
            t -= 1
        if t < 0:
            return best
        idx[t] += 1
        for u in range(t + 1, a):
            idx[u] = idx[u - 1] + 1


def _best_pair_split(Z, labels, cents, k, neighbours=5, max_records=24):
    """Best SSE change of re-splitting two neighbouring groups optimally (negative = improving).

    Each group with each of its ``neighbours`` nearest groups (by centroid), when the
    two hold at most ``max_records`` records: every split of their records into sizes
    a and m - a (both in k..2k-1) is enumerated. With the records centred on their
    mean, SSE = sum ||y||^2 - ||sum_A y||^2 (1/a + 1/(m-a)), so the best split of each
    size maximises the norm of a subset sum.
    """
    cap = 2 * k - 1
    G = cents.shape[0]
    best = 0.0
    seen = set()
    for g in range(G):
        d = ((cents - cents[g]) ** 2).sum(1)
        for h in np.argsort(d, kind="stable")[1:neighbours + 1]:
            pair = (min(g, int(h)), max(g, int(h)))
            idx = np.flatnonzero((labels == g) | (labels == h))
            m = idx.size
            if pair in seen or m > max_records:
                continue
            seen.add(pair)
            Y = Z[idx] - Z[idx].mean(0)
            tot = float((Y * Y).sum())
            now = sum(float(((Z[labels == q] - cents[q]) ** 2).sum()) for q in pair)
            for a in range(max(k, m - cap), min(cap, m - k) + 1):
                if 2 * a > m:
                    break  # sizes (a, m - a) and (m - a, a) are the same splits
                opt = tot - _max_subset_norm(Y, a) * (1.0 / a + 1.0 / (m - a))
                if opt - now < -1e-9 * now:  # beyond rounding
                    best = min(best, opt - now)
    return best


def certify(Z: np.ndarray, labels: np.ndarray, k: int) -> dict:
    """IL change of the best improving move, swap, 3-cycle, chain, pair re-split, reassignment."""
    from scipy.optimize import linear_sum_assignment
    from scipy.spatial.distance import cdist

    from microagg_cli.partition import canonical_labels, sse, sst

    labels = canonical_labels(labels)
    sizes = np.bincount(labels).astype(np.float64)
    cents = np.zeros((sizes.size, Z.shape[1]))
    np.add.at(cents, labels, Z)
    cents /= sizes[:, None]
    c = _replacement_costs(Z, labels, cents, sizes)
    move, swap, cyc3, chain = _best_exchanges(Z, labels, cents, sizes, c, k)
    D = cdist(Z, cents, "sqeuclidean")
    spare = Z.shape[0] - sizes.size * k
    cols = np.hstack([np.repeat(D, k, axis=1), np.repeat(D.min(1)[:, None], spare, axis=1)])
    rows, picked = linear_sum_assignment(cols)
    new = np.empty_like(labels)
    core = picked < sizes.size * k
    new[rows[core]] = picked[core] // k
    new[rows[~core]] = D[rows[~core]].argmin(1)
    scale = 100.0 / sst(Z)
    return {"move": move * scale, "swap": swap * scale, "cycle3": cyc3 * scale,
            "chain": chain * scale, "pair": _best_pair_split(Z, labels, cents, k) * scale,
            "reassign": min(0.0, (sse(Z, new) - sse(Z, labels)) * scale)}


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
    ap.add_argument("--certify", action="store_true",
                    help="check each result for improving moves, swaps, 3-cycles, chains and "
                         "reassignment")
    ap.add_argument("--case", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.case:
        method, k = args.case.split(":")
        print(json.dumps(run_case(method, int(k), args.data, args.seed, args.budget,
                                  args.iterations, args.certify)))
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
                 "--iterations", str(args.iterations)] + (["--certify"] if args.certify else []),
                check=True, capture_output=True, text=True,
            ).stdout
            r = json.loads(out.strip().splitlines()[-1])
            print(f"{r['method']:<8} {r['k']:>3} {r['il']:>8.4f} {r['lb_nn']:>7.4f} "
                  f"{r['seconds']:>8.2f} {r['first_call_s']:>9.2f} {r['groups']:>6} "
                  f"{r['min_size']:>3}-{r['max_size']:<3} {r['tracemalloc_peak_mb']:>14.1f} "
                  f"{r['maxrss_growth_mb']:>13.1f}", flush=True)
            if "certify" in r:
                found = ", ".join(f"{name} {v:.4f}" for name, v in r["certify"].items())
                print(f"    best improving change, IL points (0 = none): {found}", flush=True)
    if args.numpy_ga:
        ms = numpy_ga_generation_ms()
        print(f"numpy-vectorised GA, Census k=3: {ms:.2f} ms per generation "
              f"-> {ms * 10:.1f} s for 10,000 generations (evaluation + selection + crossover only)")


if __name__ == "__main__":
    main()
