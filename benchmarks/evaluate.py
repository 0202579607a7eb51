"""Benchmark of ``metrics.evaluate_arrays`` at scale (not a test).

Evaluates an n x p file (default 50,000 x 10) protected by a cheap k-grouping (records
sorted on the first principal component of the z-scored data, consecutive groups of k,
the last group absorbing the remainder; or any registered method with ``--method``)
with the default intruder scenarios (all 1023 subsets for p = 10), and prints the time
of each stage and the peak memory (max RSS).

Usage::

    python benchmarks/evaluate.py [--n 50000] [--p 10] [--k 3] [--method pc-sort]
                                  [--scenarios N] [--end-to-end]

``--scenarios N`` evaluates only the first N default scenarios (by size, then
lexicographic) -- handy for a quick estimate; ``--end-to-end`` also times one call of
``evaluate_arrays`` (the stage timings come from the same building blocks).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from microagg_cli.metrics import evaluate_arrays  # noqa: E402
from microagg_cli.metrics import risk, utility  # noqa: E402
from microagg_cli.metrics.scenarios import default_scenarios  # noqa: E402
from microagg_cli.partition import aggregate, zscore  # noqa: E402


def make_data(n: int, p: int, seed: int = 0) -> np.ndarray:
    """Census-like data: correlated, skewed, integer-rounded (so with ties)."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(p, p)) / np.sqrt(p)
    A[0, :] += 1.0  # a common factor: the first PC explains ~57% (Census: 59%)
    L = 0.5 * rng.normal(size=(n, p)) @ A
    return np.round(np.exp(8.0 + L), 0)


def pc_sort_labels(Z: np.ndarray, k: int) -> np.ndarray:
    """Groups of k consecutive records along the first principal component."""
    n = Z.shape[0]
    _, vecs = np.linalg.eigh(np.cov(Z, rowvar=False))
    order = np.argsort(Z @ vecs[:, -1], kind="stable")
    labels = np.empty(n, dtype=np.int64)
    g = np.arange(n) // k
    g[g >= n // k] = n // k - 1  # remainder joins the last group
    labels[order] = g
    return labels


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--p", type=int, default=10)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--method", default="pc-sort")
    ap.add_argument("--scenarios", type=int, default=None)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--end-to-end", action="store_true")
    args = ap.parse_args()

    X = make_data(args.n, args.p)
    Z = zscore(X)[0]
    t = time.perf_counter()
    if args.method == "pc-sort":
        labels = pc_sort_labels(Z, args.k)
    else:
        from microagg_cli.methods import get_method

        labels = get_method(args.method).func(Z, args.k, rng=np.random.default_rng(0))
    Xp = aggregate(X, labels)
    print(f"data {args.n} x {args.p}, method {args.method}, k={args.k}: "
          f"protected in {time.perf_counter() - t:.1f} s")
    print(f"start: peak RSS {peak_mb():.0f} MB")

    stage: dict[str, float] = {}

    def timed(name, f, *a, **kw):
        t0 = time.perf_counter()
        out = f(*a, **kw)
        stage[name] = stage.get(name, 0.0) + time.perf_counter() - t0
        return out

    timed("il_sse/il_score/il1s/data_quality", lambda: (
        utility.il_sse_blocks(X, Xp), utility.il_score(X, Xp), utility.il1s(X, Xp),
        utility.data_quality(X, Xp)))
    opt = timed("lb_nn + gap", utility.optimality_gap, X, Xp, args.k)
    print(f"IL_SSE {opt['il_sse']['overall']:.4f}  LB_NN {opt['lb_nn']['overall']:.4f}")
    ev = timed("risk setup (ranks, ID, PLD table)", risk.RiskEvaluator, X, Xp, k=args.k,
               workers=args.workers)
    table = ev.pld_table
    print(f"PLD table: window {ev.pld_window}, {table.entries:,} entries "
          f"({table.entries / args.n:.1f} per record), {table.gpat.size} distinct patterns; "
          f"peak RSS {peak_mb():.0f} MB")
    subsets, mode = default_scenarios(args.p, rng=np.random.default_rng(0))
    if args.scenarios:
        subsets = subsets[: args.scenarios]
    dl, pl = [], []
    for sc in sorted(subsets):
        timed("anonymity", ev.anonymity, sc)
        dl.append(timed("dld", ev.dld, sc))
        pl.append(timed("pld", ev.pld, sc)["value"])
        timed("id + sdid", lambda: (ev.interval_disclosure(sc), ev.sdid(sc)))
    print(f"{len(subsets)} scenarios ({mode}): mean DLD {np.mean(dl):.3f}  mean PLD {np.mean(pl):.3f}")
    for name, sec in stage.items():
        per = f" ({1000 * sec / len(subsets):.1f} ms/scenario)" if name in (
            "anonymity", "dld", "pld", "id + sdid") else ""
        print(f"  {name:38s} {sec:8.1f} s{per}")
    print(f"  {'total':38s} {sum(stage.values()):8.1f} s")
    print(f"peak RSS {peak_mb():.0f} MB")
    if args.end_to_end:
        t = time.perf_counter()
        rep = evaluate_arrays(X, Xp, k=args.k, workers=args.workers,
                              scenarios=subsets if args.scenarios else None)
        print(f"evaluate_arrays end to end: {time.perf_counter() - t:.1f} s, "
              f"score {rep['score']['value']:.3f}; peak RSS {peak_mb():.0f} MB")


if __name__ == "__main__":
    main()
