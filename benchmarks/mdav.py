"""Timing and peak memory of ``mdav`` (the exact fast MDAV) on seeded synthetic data.

Cases (each in a fresh subprocess, so that peak RSS is per case): 10,000 x 10 and
50,000 x 10, k = 3, plus every ``--n`` given (e.g. ``--n 1000000``). Data
(``--data``), z-scored like every distance-based method's input:

- ``mixture`` (default): a Gaussian mixture of 8 components in 10 dimensions, means
  drawn from N(0, 3^2), each component with its own correlated covariance A A^T
  (A with N(0, 1/p) entries), equal weights;
- ``gauss``: one isotropic standard normal cloud -- the hardest case for the tree
  (no structure at all in 10 dimensions);
- ``census``: structured microdata -- rows of the CASC Census sample (its first 10
  numeric columns, z-scored) drawn with replacement, plus N(0, 0.05^2) noise so that
  no two records coincide;
- ``all``: the three.

Numba's compiled code is loaded (or compiled) by a warm-up call on a tiny input
before the clock starts; its cost is printed separately, with the number of the
package's kernels numba compiled for it (0 when all came from the cache). ``--cold``
gives every case an empty numba cache of its own (``NUMBA_CACHE_DIR`` = a fresh
folder, removed afterwards), as on the first run after installation: the warm-up
column is then the compile time. Times: wall clock and the
process's CPU time (the machine may be shared: the CPU time is the steadier figure;
the load average is printed first). Peak memory: ``tracemalloc`` peak (numpy
allocations made from Python) and the process's peak RSS (``resource.getrusage``,
includes the data, numba's own allocations and the interpreter).

Options: ``--reference`` also times the straightforward ``mdav_reference`` (the
"before" figure; sizes up to 50,000 only, it is O(n^2)); ``--partition`` measures the
information loss of the partitioned mode (``split_indices`` with parts of at most
20,000, ``mdav`` on each part) against exact ``mdav`` on 200,000 x 10 mixture data.

Usage: ``python benchmarks/mdav.py [--n 1000000] [--data all] [--reference]
[--partition] [--repeat 1] [--cold]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

P = 10
K = 3
SIZES = (10_000, 50_000)
SEED = 20240611


def synthetic(n: int, kind: str = "mixture", p: int = P, seed: int = SEED) -> np.ndarray:
    """Seeded synthetic data, z-scored (population sd)."""
    from microagg_cli.partition import zscore

    rng = np.random.default_rng(seed)
    if kind == "gauss":
        return zscore(rng.standard_normal((n, p)))[0]
    if kind == "census":
        import pandas as pd

        path = Path(__file__).resolve().parent.parent / "sample_data" / "census.csv"
        base = zscore(pd.read_csv(path).select_dtypes("number").to_numpy(float)[:, :p])[0]
        return zscore(base[rng.integers(0, base.shape[0], n)] + rng.normal(0.0, 0.05, (n, p)))[0]
    components = 8
    means = rng.normal(0.0, 3.0, (components, p))
    loadings = rng.normal(0.0, 1.0 / np.sqrt(p), (components, p, p))
    which = rng.integers(0, components, n)
    X = means[which] + np.einsum("ni,nij->nj", rng.standard_normal((n, p)), loadings[which])
    return zscore(X)[0]


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def run_case(n: int, kind: str, which: str, repeat: int) -> dict:
    from microagg_cli.methods.fixed_size import mdav, mdav_reference

    fn = mdav if which == "mdav" else mdav_reference
    X = synthetic(n, kind)
    t0 = time.perf_counter()
    from microagg_cli.methods._fast_mdav import mdav_fast

    mdav_fast(X[:50], K)  # loads (or compiles) the numba kernels
    warm = time.perf_counter() - t0
    from microagg_cli import _jit

    compiled = _jit.compilations() if hasattr(_jit, "compilations") else -1
    walls, cpus = [], []
    tracemalloc.start()
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        labels = fn(X, K)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "method": which, "data": kind, "n": n, "groups": int(labels.max()) + 1,
        "wall_s": min(walls), "cpu_s": min(cpus), "warmup_s": warm, "compiled": compiled,
        "tracemalloc_peak_mb": peak / 2**20, "maxrss_mb": _maxrss_mb(),
    }


def run_partition() -> dict:
    from microagg_cli.methods.fixed_size import mdav
    from microagg_cli.partition import canonical_labels, information_loss
    from microagg_cli.splitting import split_indices

    n, size = 200_000, 20_000
    X = synthetic(n, "mixture")
    t0 = time.perf_counter()
    exact = mdav(X, K)
    t_exact = time.perf_counter() - t0
    t0 = time.perf_counter()
    parts = split_indices(X, size, K)
    labels = np.empty(n, np.int64)
    offset = 0
    for part in parts:
        sub = mdav(X[part], K)
        labels[part] = sub + offset
        offset += int(sub.max()) + 1
    labels = canonical_labels(labels)
    t_parts = time.perf_counter() - t0
    il_exact = information_loss(X, exact)
    il_parts = information_loss(X, labels)
    return {
        "n": n, "partition_size": size, "parts": len(parts),
        "part_sizes": sorted({int(p.size) for p in parts}),
        "il_exact": il_exact, "il_partitioned": il_parts,
        "relative_increase": il_parts / il_exact - 1.0,
        "exact_s": t_exact, "partitioned_s": t_parts,
    }


def _sub(*args: str, cold: bool = False) -> dict:
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="numba-cold-") as cache:
        if cold:
            env["NUMBA_CACHE_DIR"] = cache
        out = subprocess.run([sys.executable, __file__, *args], check=True, capture_output=True,
                             text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, action="append", default=[], help="add a size")
    ap.add_argument("--data", choices=("mixture", "gauss", "census", "all"), default="mixture")
    ap.add_argument("--reference", action="store_true", help="also time mdav_reference")
    ap.add_argument("--partition", action="store_true", help="partitioned-mode IL check")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--cold", action="store_true", help="every case starts with an empty numba cache")
    ap.add_argument("--case", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.case:
        if args.case == "partition":
            print(json.dumps(run_partition()))
        else:
            which, kind, n = args.case.split(":")
            print(json.dumps(run_case(int(n), kind, which, args.repeat)))
        return
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; k = {K}, p = {P}")
    kinds = ("mixture", "gauss", "census") if args.data == "all" else (args.data,)
    cases = [("mdav", kind, n) for kind in kinds for n in (*SIZES, *args.n)]
    if args.reference:
        cases += [("mdav_reference", kind, n) for kind in kinds for n in SIZES]
    print(f"{'method':<15} {'data':<8} {'n':>10} {'wall s':>8} {'CPU s':>8} {'warm-up s':>9} "
          f"{'compiled':>8} {'tracemalloc MB':>14} {'peak RSS MB':>11}")
    for which, kind, n in cases:
        r = _sub("--case", f"{which}:{kind}:{n}", "--repeat", str(args.repeat), cold=args.cold)
        print(f"{r['method']:<15} {r['data']:<8} {r['n']:>10,} {r['wall_s']:>8.2f} "
              f"{r['cpu_s']:>8.2f} {r['warmup_s']:>9.2f} {r['compiled']:>8} {r['tracemalloc_peak_mb']:>14.1f} "
              f"{r['maxrss_mb']:>11.0f}", flush=True)
    if args.partition:
        r = _sub("--case", "partition")
        print(f"\npartitioned mode, {r['n']:,} x {P} mixture, parts <= {r['partition_size']:,} "
              f"({r['parts']} parts of {r['part_sizes']} records):")
        print(f"  IL exact mdav {r['il_exact']:.4f} ({r['exact_s']:.1f} s), partitioned "
              f"{r['il_partitioned']:.4f} ({r['partitioned_s']:.1f} s): "
              f"{100 * r['relative_increase']:+.2f} % relative")


if __name__ == "__main__":
    main()
