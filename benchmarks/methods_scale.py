"""Every registered method at 10,000 / 50,000 / 100,000 records: time, peak memory, exponent.

Each (method, n) runs in a fresh subprocess (so peak RSS is per case) on seeded
synthetic data of 10 columns (the Gaussian mixture of ``benchmarks/end_to_end.py``),
z-scored, k = 3, default parameters, the method function called directly (no file
reading or writing). The time printed is the method's own (wall, measured in the
child around the call; numba's cache warmed by a first small call), beside the peak
RSS of the child and the cost model's estimate (``MethodSpec.cost``) for comparison.

A cap keeps the run bounded: a case is killed after ``--cap`` seconds (default 120)
and the larger sizes of that method are then skipped (shown as ``> cap`` and
``skipped``, each with the cost model's estimate: what ``sdc protect`` announces
before such a run, or refuses above ``--time-limit``). The exponent is the slope of
log(time) against log(n) between the two largest sizes measured.

Usage: ``python benchmarks/methods_scale.py [--sizes 10000,50000,100000] [--cap 120]
[--methods mdav,md,...] [--p 10]``
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

K = 3
SIZES = (10_000, 50_000, 100_000)

CHILD = r"""
import json, sys, time
import numpy as np
sys.path.insert(0, {bench!r})
from end_to_end import synthetic
from microagg_cli.methods import get_method
spec = get_method({name!r})
def run(n):
    X = synthetic(n, {p})
    if spec.standardize:
        X = (X - X.mean(axis=0)) / X.std(axis=0)
    if spec.max_columns:
        X = X[:, :spec.max_columns]
    params = spec.validate_params(None)
    t0 = time.perf_counter()
    spec.func(X, {k}, rng=np.random.default_rng(0), **params)
    return time.perf_counter() - t0, X.shape[1]
run(min({n}, 3000))  # numba's cache loaded (or compiled) for the kernels of this size, untimed
seconds, p = run({n})
import resource
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
print(json.dumps({{"seconds": seconds, "rss_mb": rss, "estimate": spec.estimate_seconds({n}, p, {k})}}))
"""


def case(name: str, n: int, p: int, cap: float) -> dict:
    code = CHILD.format(bench=str(ROOT / "benchmarks"), name=name, p=p, k=K, n=n)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=str(ROOT))
    try:
        out, err = proc.communicate(timeout=cap)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return {"capped": True}
    if proc.returncode != 0:
        return {"error": err.decode(errors="replace").strip().splitlines()[-1][:80]}
    doc = json.loads(out.decode().strip().splitlines()[-1])
    return doc


def main(argv: list[str] | None = None) -> None:
    from microagg_cli.methods import METHODS

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--cap", type=float, default=120.0, help="seconds per case before it is killed")
    ap.add_argument("--methods", default="", help="comma-separated names (default: every method)")
    ap.add_argument("--p", type=int, default=10, help="columns (default 10)")
    args = ap.parse_args(argv)
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s]
    names = [m for m in args.methods.split(",") if m] or list(METHODS)
    print(f"# every method: k = {K}, {args.p} columns, default parameters, cap {args.cap:.0f} s per case")
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs\n")
    head = " | ".join(f"{n:,} s (est.) | MB" for n in sizes)
    print(f"| method | {head} | exponent |")
    print("|---|" + "---:|---:|" * len(sizes) + "---:|")
    for name in names:
        cells, measured, capped = [], [], False
        for n in sizes:
            est = METHODS[name].estimate_seconds(n, args.p, K)
            if capped:
                cells.append(f"skipped (est. {est:.0f}) | ")
                continue
            r = case(name, n, args.p, args.cap)
            if r.get("capped"):
                capped = True
                cells.append(f"> {args.cap:.0f} (est. {est:.0f}) | ")
            elif "error" in r:
                capped = True
                cells.append(f"error: {r['error']} | ")
            else:
                measured.append((n, r["seconds"]))
                cells.append(f"{r['seconds']:.2f} ({r['estimate']:.1f}) | {r['rss_mb']:.0f}")
        expo = ""
        if len(measured) >= 2 and measured[-1][1] > 0 and measured[-2][1] > 0:
            (n1, t1), (n2, t2) = measured[-2], measured[-1]
            expo = f"{math.log(t2 / t1) / math.log(n2 / n1):.2f}"
        print(f"| {name} | " + " | ".join(cells) + f" | {expo} |", flush=True)
    print("\nMB: the child's peak RSS (its own ru_maxrss, data included); est.: the MethodSpec cost model.")


if __name__ == "__main__":
    main()
