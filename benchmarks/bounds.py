"""How far from optimal is ``ils`` on Census? LB_NN against the column-generation bound.

For each k: the ``ils`` partition (time budget ``--budget`` s, default 120, seed 0, or
labels saved by an earlier run with ``--labels-dir``), LB_NN, and the certified
column-generation bound lb_cg of :func:`microagg_cli.metrics.cg_bound.cg_lower_bound`
started from that partition (time limit ``--time-limit`` s per k, default 1800), with
the set-partitioning MIP over the generated columns (``--mip`` s, default 120) as a
primal side, optionally polished by ``ils`` started from the MIP solution (``--polish`` s:
the decomposition heuristic CG columns -> MIP -> local search). Printed per k: LB_NN,
lb_cg, whether the LP was solved ("optimal") or stopped at the limit, the bound's
seconds (without the MIP and polishing), the ils IL, the IL of CG -> MIP (-> ils), the
best IL, and the certified gaps (IL - bound) / IL. The JSON adds the LP value of the
last restricted master (not a bound) and the history of the bounds.

All IL figures are 100 * SSE / SST on the z-scored file (one block), as in the spec.

Usage: ``nice python benchmarks/bounds.py [--ks 3,4,5,10] [--budget 120]
[--time-limit 1800] [--mip 120] [--polish 0] [--labels-dir DIR] [--json out.json] [--data file.csv]
[--verbose]``
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CENSUS = ROOT / "sample_data" / "census.csv"


def _load(path: str) -> np.ndarray:
    from microagg_cli.partition import zscore

    X = np.genfromtxt(path, delimiter=",", skip_header=1)
    X = X[:, ~np.isnan(X).all(axis=0)]
    X = X[~np.isnan(X).any(axis=1)]
    return zscore(X)[0]


def run(k: int, Z: np.ndarray, *, budget: float, time_limit: float, mip: float,
        labels_dir: str | None, polish: float = 0.0, verbose: bool = False) -> dict:
    from microagg_cli.methods.refine import ils
    from microagg_cli.metrics.cg_bound import cg_lower_bound
    from microagg_cli.partition import information_loss, sst

    labels = None
    saved = Path(labels_dir) / f"ils_k{k}.npy" if labels_dir else None
    ils_seconds = None
    if saved is not None and saved.exists():
        labels = np.load(saved)
    else:
        t0 = time.perf_counter()
        labels = ils(Z, k, rng=np.random.default_rng(0), time_budget=budget)
        ils_seconds = time.perf_counter() - t0
        if saved is not None:
            saved.parent.mkdir(parents=True, exist_ok=True)
            np.save(saved, labels)
    il = information_loss(Z, labels)
    d2 = np.sort(((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1), axis=1)[:, 1:k]
    lbnn = 100.0 * d2.sum() / (2 * k) / sst(Z)
    res = cg_lower_bound(Z, k, time_limit=time_limit, start_labels=labels, mip_seconds=mip, verbose=verbose)
    if polish > 0 and res.labels is not None and Z.shape[0] >= 2 * k:
        # the decomposition heuristic's last step (Castro et al. 2022): local search from
        # the MIP's partition; the bound module measures, this script runs the method
        from microagg_cli.partition import canonical_labels, sse

        lab = ils(Z, k, rng=np.random.default_rng(0), time_budget=float(polish), threads=1,
                  start_labels=res.labels)
        val = sse(Z, lab)
        if res.upper is None or val < res.upper:
            res.upper, res.labels = val, canonical_labels(lab)
    best = min(il, res.ub_il) if res.ub_il is not None else il
    return {
        "k": k,
        "lb_nn": lbnn,
        "lb_cg": res.lb_il,
        "cg_status": res.status,
        "cg_seconds": res.bound_seconds,  # the bound alone
        "total_seconds": res.seconds,  # with the MIP and the polishing
        "lp_value": 100.0 * res.lp_value / res.sst,
        "columns": res.columns,
        "iterations": res.iterations,
        "ils_il": il,
        "ils_seconds": ils_seconds,
        "mip_il": res.ub_il,  # the best of start, MIP and (with --polish) ils from the MIP
        "best_il": best,
        "gap_nn": (best - lbnn) / best,
        "cg_gap": (best - res.lb_il) / best,
        "history": res.history,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ks", default="3,4,5,10")
    ap.add_argument("--budget", type=float, default=120.0)
    ap.add_argument("--time-limit", type=float, default=1800.0)
    ap.add_argument("--mip", type=float, default=120.0)
    ap.add_argument("--polish", type=float, default=0.0,
                    help="seconds of ils (one thread) from the MIP solution: CG -> MIP -> local search")
    ap.add_argument("--labels-dir", default=None)
    ap.add_argument("--verbose", action="store_true", help="print the column generation's progress")
    ap.add_argument("--data", default=str(CENSUS))
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    Z = _load(a.data)
    print(f"{a.data}: n={Z.shape[0]}, p={Z.shape[1]}; IL in %, gaps relative to the best IL")
    print(f"{'k':>3} {'LB_NN':>7} {'lb_cg':>7} {'status':>10} {'cg s':>7} {'ils IL':>7} "
          f"{'CG IL':>7} {'best':>7} {'gap NN':>7} {'gap cg':>7}", flush=True)
    rows = []
    for k in (int(x) for x in a.ks.split(",")):
        r = run(k, Z, budget=a.budget, time_limit=a.time_limit, mip=a.mip, labels_dir=a.labels_dir,
                polish=a.polish, verbose=a.verbose)
        rows.append(r)
        mip = f"{r['mip_il']:7.4f}" if r["mip_il"] is not None else "      -"
        print(f"{k:>3} {r['lb_nn']:7.4f} {r['lb_cg']:7.4f} {r['cg_status']:>10} {r['cg_seconds']:7.0f} "
              f"{r['ils_il']:7.4f} {mip} {r['best_il']:7.4f} {100 * r['gap_nn']:6.2f}% "
              f"{100 * r['cg_gap']:6.2f}%", flush=True)
        if a.json:
            Path(a.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
