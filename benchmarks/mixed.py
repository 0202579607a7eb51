"""Mixed MDAV against numeric MDAV at the same size: time and peak memory.

Data (seeded): n records in 20 clusters; 5 continuous keys (cluster centre plus
Gaussian noise) and 5 categorical keys of 100, 50, 20, 10 and 5 categories that follow
the clusters with noise. Timed, on one core, after a warm-up that compiles the kernels:

* numeric MDAV (``sdc``'s exact fast MDAV) on the 10 columns, z-scored;
* heterogeneous MDAV (:func:`microagg_cli.methods.mixed.mixed_mdav`) on the 5
  continuous + 5 categorical keys, k = 3 (the grouping ``sdc protect --categorical``
  runs without its local search, which follows it in a protect run).

Both run single-threaded. Wall-clock and CPU seconds are printed (on a shared machine
the CPU seconds are the steadier measure), with the Python heap's peak (tracemalloc)
during the call. ``--search`` also times what a protect run does after the grouping:
the local search of ``mdav`` and the kicks of ``ils`` (its default iterations) on the
mixed partition, with the mixed objective after each.

Usage: ``python benchmarks/mixed.py [--n 100000,500000,1000000] [--k 3] [--search]``
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from microagg_cli.methods import get_method  # noqa: E402
from microagg_cli.methods.mixed import mixed_mdav, mixed_objective  # noqa: E402
from microagg_cli.methods.mixed_refine import mixed_ils, mixed_local_search  # noqa: E402
from microagg_cli.partition import zscore  # noqa: E402


def data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    cluster = rng.integers(0, 20, n)
    centres = rng.normal(0, 3, (20, 5))
    X = centres[cluster] + rng.normal(0, 1, (n, 5))
    cats = np.stack([(cluster * (j + 3) + rng.integers(0, 5, n)) % L
                     for j, L in enumerate([100, 50, 20, 10, 5])], axis=1)
    return X, cats


def timed(func, *args, **kwargs) -> tuple[float, float, float, np.ndarray]:
    tracemalloc.start()
    t0, c0 = time.perf_counter(), time.process_time()
    result = func(*args, **kwargs)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return seconds, cpu, peak / 2**20, result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="100000", help="record counts, comma-separated")
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--search", action="store_true", help="also time the local search and ils's kicks")
    args = ap.parse_args()
    mdav = get_method("mdav").func
    X, cats = data(3000)
    mdav(zscore(np.hstack([X, cats.astype(float)]))[0], args.k, rng=np.random.default_rng(0))  # compile
    mixed_mdav(zscore(X)[0][:300], args.k, nominal=cats[:300])
    for n in (int(v) for v in args.n.split(",")):
        X, cats = data(n)
        Z10 = zscore(np.hstack([X, cats.astype(float)]))[0]
        Z5 = zscore(X)[0]
        t_num, c_num, m_num, _ = timed(mdav, Z10, args.k, rng=np.random.default_rng(0))
        t_mix, c_mix, m_mix, start = timed(mixed_mdav, Z5, args.k, nominal=cats)
        print(f"n = {n}, k = {args.k}, one thread")
        print(f"numeric MDAV, 10 columns:                 {t_num:8.2f} s wall {c_num:8.2f} s CPU  peak {m_num:7.1f} MiB")
        print(f"mixed MDAV, 5 continuous + 5 categorical: {t_mix:8.2f} s wall {c_mix:8.2f} s CPU  peak {m_mix:7.1f} MiB")
        print(f"ratio mixed / numeric: {t_mix / t_num:.2f} wall, {c_mix / c_num:.2f} CPU, "
              f"{m_mix / m_num:.2f} peak (targets <= 3, <= 2)")
        if args.search:
            f0 = mixed_objective(Z5, start, nominal=cats)
            t0 = time.perf_counter()
            ls = mixed_local_search(Z5, start, args.k, nominal=cats)
            t1 = time.perf_counter()
            il = mixed_ils(Z5, start, args.k, nominal=cats, rng=np.random.default_rng(0))
            t2 = time.perf_counter()
            print(f"mixed objective: MDAV {f0:.6g}; local search {mixed_objective(Z5, ls, nominal=cats):.6g} "
                  f"({t1 - t0:.2f} s); ils {mixed_objective(Z5, il, nominal=cats):.6g} ({t2 - t1:.2f} s, "
                  f"{(t2 - t1) / t_mix:.1f}x mixed MDAV)")


if __name__ == "__main__":
    main()
