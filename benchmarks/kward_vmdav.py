"""Timing and information loss of ``kward``, ``kward-1d`` and ``vmdav``.

Cases:

- Census (sample_data/census.csv, 1080 x 13, z-scored), k = 3, 5, 10;
- a synthetic EIA-sized block, 4,000 x 11 (lognormal mixed by a random matrix, seed 0,
  z-scored), k = 3, 5, 10.

Numba's compiled code is loaded from its cache (or compiled) by a warm-up call on a
tiny input before the clock starts. ``--baseline`` also times the same lazy
best-partner Ward engine written with numpy (vectorised per merge, a Python loop over
merges), the "before numba" figure, and checks it gives the same merges.

Usage: ``python benchmarks/kward_vmdav.py [--baseline] [--repeat 1]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from unittest import mock

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from microagg_cli.methods import hierarchical  # noqa: E402
from microagg_cli.methods.hierarchical import kward, kward_1d  # noqa: E402
from microagg_cli.methods.variable_size import vmdav  # noqa: E402
from microagg_cli.partition import information_loss, zscore  # noqa: E402


def _numpy_engine(sums: np.ndarray, sizes: np.ndarray, k: int):
    """The engine of hierarchical._ward_engine in numpy (the pre-numba version):
    the same forward best-partner scheme, vectorised per scan, a Python loop over
    merges."""
    m0, p = sums.shape
    M = 2 * m0
    S = np.zeros((M, p))
    S[:m0] = sums
    cnt = np.zeros(M)
    cnt[:m0] = sizes
    C = np.zeros((M, p))
    C[:m0] = sums / sizes[:, None]
    active = np.zeros(M, dtype=bool)
    active[:m0] = True
    best_c = np.full(M, np.inf)
    best_t = np.full(M, -1)

    def forward(x, upto):
        ys = np.arange(x + 1, upto)
        ok = active[x + 1: upto] & ((cnt[x] < k) | (cnt[x + 1: upto] < k))
        ys = ys[ok]
        if ys.size == 0:
            best_c[x], best_t[x] = np.inf, -1
            return
        d = C[ys] - C[x]
        c = cnt[x] * cnt[ys] / (cnt[x] + cnt[ys]) * np.einsum("ij,ij->i", d, d)
        i = int(np.argmin(c))
        best_c[x], best_t[x] = c[i], ys[i]

    nslots = m0
    n_small = int((cnt[:m0] < k).sum())
    for x in range(m0):
        forward(x, nslots)
    merges, costs = [], []
    while n_small > 0:
        a = int(np.argmin(np.where(active[:nslots], best_c[:nslots], np.inf)))
        b, cost = int(best_t[a]), float(best_c[a])
        new = nslots
        nslots += 1
        cnt[new] = cnt[a] + cnt[b]
        S[new] = S[a] + S[b]
        C[new] = S[new] / cnt[new]
        active[[a, b]] = False
        active[new] = True
        n_small += int(cnt[new] < k) - int(cnt[a] < k) - int(cnt[b] < k)
        merges.append((a, b))
        costs.append(cost)
        xs = np.flatnonzero(active[:new])
        stale = (best_t[xs] == a) | (best_t[xs] == b)
        for x in xs[stale]:
            forward(x, nslots)
        rest = xs[~stale]
        rest = rest[(cnt[rest] < k) | (cnt[new] < k)]
        d = C[rest] - C[new]
        c = cnt[rest] * cnt[new] / (cnt[rest] + cnt[new]) * np.einsum("ij,ij->i", d, d)
        better = c < best_c[rest]
        best_c[rest[better]] = c[better]
        best_t[rest[better]] = new
    return np.array(merges, dtype=np.int64).reshape(-1, 2), np.array(costs)


def _timed(func, *args, repeat=1, **kw):
    best, out = np.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = func(*args, **kw)
        best = min(best, time.perf_counter() - t)
    return out, best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", action="store_true")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()

    census = zscore(np.loadtxt(ROOT / "sample_data" / "census.csv", delimiter=",", skiprows=1))[0]
    rng = np.random.default_rng(0)
    synth = zscore(rng.lognormal(size=(4000, 11)) @ rng.normal(size=(11, 11)))[0]
    t = time.perf_counter()
    kward(census[:30], 3)
    kward_1d(census[:30], 3)
    print(f"warm-up (numba cache load or compile): {time.perf_counter() - t:.2f} s")

    cases = [
        ("vmdav", vmdav, {}),
        ("kward order=md", kward, {"order": "md"}),
        ("kward order=fpc", kward, {"order": "fpc"}),
        ("kward-1d order=fpc", kward_1d, {"order": "fpc"}),
    ]
    for data_name, Z in (("census 1080x13", census), ("synthetic 4000x11", synth)):
        for name, func, params in cases:
            for k in (3, 5, 10):
                labels, sec = _timed(func, Z, k, repeat=args.repeat, **params)
                print(f"{data_name:18s} {name:20s} k={k:<3d} IL={information_loss(Z, labels):8.4f}"
                      f"  {sec:7.3f} s")
            if args.baseline and func is kward:
                with mock.patch.object(hierarchical, "_ward_engine", _numpy_engine):
                    for k in (3, 5, 10):
                        labels_np, sec = _timed(func, Z, k, repeat=args.repeat, **params)
                        same = labels_np.tolist() == func(Z, k, **params).tolist()
                        print(f"{data_name:18s} {name + ' (numpy)':20s} k={k:<3d}"
                              f" same={same}  {sec:7.3f} s")


if __name__ == "__main__":
    main()
