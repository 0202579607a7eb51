"""Timing and peak memory of the univariate and projected optimal methods.

Cases (each in a fresh subprocess, so peak RSS is per case):

- ``dp``: the optimal-1d dynamic programme alone on 1,000,000 sorted values, k = 5
  (target: no slower than 0.23 s, microagg1d's numba implementation);
- ``optimal-1d``: the whole method on the same values (sort + DP + labels);
- ``pcp``, ``zscores``, ``sugeno``: 100,000 x 10 z-scored records, k = 5 (target < 10 s);
- ``baseline`` (only with ``--baseline``): the same DP as a plain Python loop over
  numpy-vectorised edge costs (prefix sums), the "before" figure.

Numba's compiled code is loaded from its cache (or compiled) by a warm-up call on
a tiny input before the clock starts; the first-call cost is printed separately.
Peak memory: ``tracemalloc`` peak (numpy allocations made in Python) and the growth
of the process's maximum RSS during the call (``resource.getrusage``; includes
numba's own allocations).

``--vs microagg1d``: the table of optimal-1d against microagg1d (Stamm & Schaub
2024, the O(n) SMAWK / Wilber solver for every k) on 1,000,000 z-scored lognormal values,
k = 3, 10, 100, 1000, 10000: seconds for the whole call *including the sort* (best of
``--repeat``) and the SSE of each partition, both SSEs evaluated the same way here
(two-pass: group means first, then squared deviations), never by either tool's
internal cost sums. microagg1d is a peer, not a dependency: run this with an
interpreter that has it, e.g. ``python3 -m venv /tmp/bench && /tmp/bench/bin/pip
install microagg1d -e .`` then ``/tmp/bench/bin/python benchmarks/univariate.py --vs
microagg1d``. ``--write`` stores the table in ``benchmarks/results/univariate_vs_microagg1d.md``.

Usage: ``python benchmarks/univariate.py [--baseline] [--repeat 3]`` or
``python benchmarks/univariate.py --vs microagg1d [--write]``
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

N_1D = 1_000_000
N_PROJ, P_PROJ = 100_000, 10
K = 5


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def _baseline_dp(v: np.ndarray, k: int) -> np.ndarray:
    """Plain Python DP over prefix-sum edge costs (the pre-numba version)."""
    n = v.size
    s1 = np.concatenate(([0.0], np.cumsum(v)))
    s2 = np.concatenate(([0.0], np.cumsum(v * v)))
    cost = np.full(n + 1, np.inf)
    cost[0] = 0.0
    back = np.zeros(n + 1, dtype=np.int64)
    for j in range(k, n + 1):
        m = np.arange(k, min(2 * k - 1, j) + 1)
        i = j - m
        e = (s2[j] - s2[i]) - (s1[j] - s1[i]) ** 2 / m
        c = cost[i] + e
        b = int(np.argmin(c))
        cost[j] = c[b]
        back[j] = m[b]
    sizes = []
    j = n
    while j > 0:
        sizes.append(int(back[j]))
        j -= back[j]
    return np.array(sizes[::-1])


VS_KS = (3, 10, 100, 1000, 10000)
VS_RESULTS = Path(__file__).resolve().parent / "results" / "univariate_vs_microagg1d.md"


def partition_sse(x: np.ndarray, labels: np.ndarray) -> float:
    """SSE of a partition of the values ``x``, two-pass (means, then deviations)."""
    labels = np.unique(labels, return_inverse=True)[1].ravel()
    means = np.bincount(labels, weights=x) / np.bincount(labels)
    return float(np.sum((x - means[labels]) ** 2))


def vs_microagg1d(repeat: int) -> str:
    """The Markdown table of optimal-1d against microagg1d (see the module doc)."""
    try:
        from microagg1d import univariate_microaggregation
    except ImportError:
        sys.exit("--vs microagg1d needs microagg1d importable (a benchmark venv, never a "
                 "project dependency): python3 -m venv /tmp/bench && /tmp/bench/bin/pip install "
                 "microagg1d -e . && /tmp/bench/bin/python benchmarks/univariate.py --vs microagg1d")
    import microagg1d

    from microagg_cli.methods.univariate import MONGE_MIN_K, SMAWK_MIN_K, optimal_1d

    x = np.random.default_rng(20240601).lognormal(size=N_1D)
    x = (x - x.mean()) / x.std()  # z-scored, as the CLI hands it over (SST = n)
    X = x[:, None]
    small = x[:100]
    for k in (3, 30):  # load / compile both tools' kernels before the clock starts
        optimal_1d(small[:, None], k)
        univariate_microaggregation(small, k)
    lines = [
        f"optimal-1d vs microagg1d {getattr(microagg1d, '__version__', '')}".rstrip()
        + f" on {N_1D:,} z-scored lognormal values (seed 20240601), seconds including the sort "
        f"(best of {repeat}); SSE evaluated two-pass for both.",
        "",
        "| k | sdc solver | sdc s | microagg1d s | sdc SSE | microagg1d SSE | SSE microagg1d - sdc |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for k in VS_KS:
        t_sdc, t_m = [], []
        for _ in range(repeat):
            t0 = time.perf_counter()
            lab_sdc = optimal_1d(X, k)
            t_sdc.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            lab_m = univariate_microaggregation(x, k)
            t_m.append(time.perf_counter() - t0)
        e_sdc, e_m = partition_sse(x, lab_sdc), partition_sse(x, lab_m)
        solver = ("Monge, SMAWK" if k >= SMAWK_MIN_K else "Monge, divide and conquer"
                  if k >= MONGE_MIN_K else "shortest path O(n k)")
        lines.append(f"| {k} | {solver} | {min(t_sdc):.3f} | {min(t_m):.3f} | {e_sdc:.4f} | "
                     f"{e_m:.4f} | {e_m - e_sdc:.2e} |")
        print(lines[-1], file=sys.stderr, flush=True)
    return "\n".join(lines)


def run_case(case: str, repeat: int) -> dict:
    from microagg_cli.methods import projection, univariate
    from microagg_cli.partition import zscore

    rng = np.random.default_rng(20240601)
    if case in ("dp", "optimal-1d", "baseline"):
        x = rng.lognormal(size=N_1D)
        data = (np.sort(x) if case in ("dp", "baseline") else x[:, None])
        tiny = np.sort(rng.normal(size=50)) if case != "optimal-1d" else rng.normal(size=(50, 1))
        fn = {
            "dp": lambda d: univariate.optimal_contiguous_sizes(d, K),
            "optimal-1d": lambda d: univariate.optimal_1d(d, K),
            "baseline": lambda d: _baseline_dp(d, K),
        }[case]
        shape = f"{N_1D:,} values"
    else:
        X = zscore(rng.normal(size=(N_PROJ, P_PROJ)) @ rng.normal(size=(P_PROJ, P_PROJ)))[0]
        data = X
        tiny = X[:50]
        f = {"pcp": projection.pcp, "zscores": projection.zscores, "sugeno": projection.sugeno}[case]
        fn = lambda d: f(d, K)  # noqa: E731
        shape = f"{N_PROJ:,} x {P_PROJ}"
    t0 = time.perf_counter()
    fn(tiny)  # loads (or compiles) the numba kernels
    first_call = time.perf_counter() - t0
    times = []
    rss0 = _maxrss_mb()
    tracemalloc.start()
    for _ in range(repeat if case != "baseline" else 1):
        t0 = time.perf_counter()
        fn(data)
        times.append(time.perf_counter() - t0)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "case": case,
        "shape": shape,
        "k": K,
        "best_s": min(times),
        "first_call_s": first_call,
        "tracemalloc_peak_mb": peak / 2**20,
        "maxrss_growth_mb": _maxrss_mb() - rss0,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", action="store_true", help="also time the plain Python DP")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--case", help=argparse.SUPPRESS)
    ap.add_argument("--vs", choices=("microagg1d",), help="compare optimal-1d with a peer")
    ap.add_argument("--write", action="store_true", help="with --vs: write the table to benchmarks/results/")
    args = ap.parse_args()
    if args.vs:
        table = vs_microagg1d(args.repeat)
        print(table)
        if args.write:
            import datetime
            import os
            import platform

            now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
            VS_RESULTS.write_text(
                f"Measured {now} (Python {platform.python_version()}, {platform.platform()}, "
                f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}) by "
                "`python benchmarks/univariate.py --vs microagg1d --write`.\n\n" + table + "\n",
                encoding="utf-8")
        return
    if args.case:
        print(json.dumps(run_case(args.case, args.repeat)))
        return
    cases = ["dp", "optimal-1d", "pcp", "zscores", "sugeno"] + (["baseline"] if args.baseline else [])
    print(f"{'case':<11} {'input':<16} {'k':>2} {'best s':>8} {'warm-up s':>9} "
          f"{'tracemalloc MB':>14} {'RSS growth MB':>13}")
    for case in cases:
        out = subprocess.run(
            [sys.executable, __file__, "--case", case, "--repeat", str(args.repeat)],
            check=True, capture_output=True, text=True,
        ).stdout
        r = json.loads(out.strip().splitlines()[-1])
        print(f"{r['case']:<11} {r['shape']:<16} {r['k']:>2} {r['best_s']:>8.3f} "
              f"{r['first_call_s']:>9.3f} {r['tracemalloc_peak_mb']:>14.1f} "
              f"{r['maxrss_growth_mb']:>13.1f}")


if __name__ == "__main__":
    main()
