"""Benchmark of ``sdc evaluate`` at scale (not a test): seconds per measure and size,
before and after the speed-up of issue #27, and peak memory.

For each size (default 10,000, 50,000, 200,000 and 1,000,000 records x 10 columns, a
Gaussian mixture protected by ``mdav`` with k = 3, default options: all 1,023 intruder
scenarios):

- **per measure** (a child process per size and code version, one thread): the
  seconds of the shared set-up (ranks, interval hits, PLD pair table, DLD tree and
  candidates), of k', DLD, PLD, ID + SDID over the scenarios, of the IL family, of
  LB_NN and of the analysis-utility measures (CI overlap of the default regressions,
  pMSE with its seeded sample above 100,000 records, the group table with 50 groups); ``after`` is today's code, ``before`` the implementation frozen in
  ``tests/reference_risk.py`` (only up to ``--before-max`` records: it is quadratic);
  with ``--measure-scenarios M`` only M scenarios (evenly spread) are timed and the
  per-scenario figures are scaled to all of them (marked ``~``; DLD's layered pass
  then loses the subsets it builds on, so its figure is pessimistic); without it,
  today's code runs every scenario and the old one 64 of them above 200,000 records;
- **end to end** (``--cli``): ``sdc protect`` and ``sdc evaluate --jobs J`` on the same
  Parquet file as child processes: wall seconds, ratio evaluate / protect, peak RSS.

Usage::

    python benchmarks/evaluate.py [--sizes 10000,50000] [--before-max 50000] [--cli]
                                  [--jobs 2] [--measure-scenarios M] [--json out.json]

``uptime`` is printed first: the machine is shared, note its load with the figures.
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
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

P = 10
K = 3
STAGES = ("setup", "k_prime", "dld", "pld", "id_sdid", "il_family", "lb_nn", "ci_overlap", "pmse", "groups")


def peak_mb(who: int = resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024.0


def data(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The mixture of benchmarks/end_to_end.py and its exact MDAV protection (k = 3)."""
    from end_to_end import synthetic
    from microagg_cli.methods import get_method
    from microagg_cli.partition import aggregate, zscore

    X = synthetic(n)
    labels = get_method("mdav").func(zscore(X)[0], K, rng=np.random.default_rng(0))
    return X, aggregate(X, labels)


def one(n: int, version: str, measure: int | None) -> dict:
    """Per-measure seconds of one size with one code version (run in a child)."""
    from microagg_cli.metrics import utility
    from microagg_cli.metrics.scenarios import all_subsets

    if version == "before":
        sys.path.insert(0, str(ROOT / "tests"))
        import reference_risk as risk
    else:
        from microagg_cli.metrics import risk
    X, Xp = data(n)
    rss0 = peak_mb()
    subsets = all_subsets(P)
    timed = subsets if not measure or measure >= len(subsets) else [
        subsets[i] for i in np.linspace(0, len(subsets) - 1, measure).round().astype(int)]
    scale = len(subsets) / len(timed)
    sec = dict.fromkeys(STAGES, 0.0)
    t = time.perf_counter()
    utility.il_sse_blocks(X, Xp), utility.il_score(X, Xp), utility.il1s(X, Xp), utility.data_quality(X, Xp)
    sec["il_family"] = time.perf_counter() - t
    t = time.perf_counter()
    utility.optimality_gap(X, Xp, K)
    sec["lb_nn"] = time.perf_counter() - t
    if version == "after":  # the analysis-utility measures (not in the old code)
        from microagg_cli.metrics import groups, pmse, regression

        names = [f"c{j}" for j in range(P)]
        t = time.perf_counter()
        regression.default_ci_overlap(X, Xp, names)
        sec["ci_overlap"] = time.perf_counter() - t
        t = time.perf_counter()
        pmse.pmse(X, Xp, rng=np.random.default_rng(0))
        sec["pmse"] = time.perf_counter() - t
        t = time.perf_counter()  # --by with 50 groups
        codes = np.arange(n) % 50
        groups.group_table(X, Xp, codes, [(g,) for g in range(50)], names=names, by=["g"], k=K)
        sec["groups"] = time.perf_counter() - t
    t = time.perf_counter()
    ev = risk.RiskEvaluator(X, Xp, k=K, workers=1)
    if version == "after":  # what every scenario's DLD shares (rows, order, candidates)
        ev._dld_shared()
    else:
        ev._candidates()
    sec["setup"] = time.perf_counter() - t
    if version == "after":  # PLD of every scenario in one pass, DLD by layers of scenarios
        t = time.perf_counter()
        ev.pld_many(timed, jobs=1)
        sec["pld"] = time.perf_counter() - t
        t = time.perf_counter()
        ev.dld_many(timed, jobs=1)
        sec["dld"] = (time.perf_counter() - t) / scale
    for sc in sorted(timed):
        t = time.perf_counter()
        ev.anonymity(sc)
        t1 = time.perf_counter()
        if version == "before":
            ev.dld(sc)
        t2 = time.perf_counter()
        if version == "before":
            ev.pld(sc)
        t3 = time.perf_counter()
        ev.interval_disclosure(sc), ev.sdid(sc)
        t4 = time.perf_counter()
        sec["k_prime"] += t1 - t
        sec["dld"] += t2 - t1
        sec["pld"] += t3 - t2
        sec["id_sdid"] += t4 - t3
    for key in ("k_prime", "dld", "pld", "id_sdid"):
        sec[key] *= scale
    return {"n": n, "version": version, "seconds": sec, "scaled": scale > 1, "peak_mb": peak_mb(),
            "data_mb": rss0, "pld_method": getattr(ev, "pld_method", "exact")}


def child(n: int, version: str, measure: int | None) -> dict:
    out = subprocess.run([sys.executable, __file__, "--one", str(n), "--version", version,
                          "--measure-scenarios", str(measure or 0)], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_child(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS MB) of one child command (its own rusage)."""
    with tempfile.TemporaryFile() as err:
        t = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise RuntimeError(err.read().decode()[-2000:])
    return wall, usage.ru_maxrss / 1024.0


def cli(n: int, jobs: int, folder: Path) -> dict:
    """sdc protect and sdc evaluate on the same file, as child processes."""
    from end_to_end import sdc_command, write_data

    src = write_data(folder, n, ["parquet"])["parquet"]
    prot = folder / f"prot_{n}.parquet"
    out = {}
    for name, argv in (
        ("protect", [*sdc_command(), "protect", str(src), "-o", str(prot), "-k", str(K), "-f", "-q"]),
        ("evaluate", [*sdc_command(), "evaluate", str(src), str(prot), "-q", "--jobs", str(jobs),
                      "--report", str(folder / f"eval_{n}.json"), "-f"]),
    ):
        wall, rss = run_child(argv)
        out[name] = {"seconds": wall, "peak_mb": rss}
    rep = json.loads((folder / f"eval_{n}.json").read_text())
    out["pld_method"] = rep["summary"].get("pld_method")
    out["pld_bound"] = rep["summary"].get("pld_bound")
    out["ratio"] = out["evaluate"]["seconds"] / out["protect"]["seconds"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,50000,200000,1000000")
    ap.add_argument("--before-max", type=int, default=50_000)
    ap.add_argument("--measure-scenarios", type=int, default=0)
    ap.add_argument("--cli", action="store_true")
    ap.add_argument("--jobs", type=int, default=0)
    ap.add_argument("--json", default=None)
    ap.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--version", default="after", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.version, args.measure_scenarios or None)))
        return
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    sizes = [int(s) for s in args.sizes.split(",")]
    results = []
    for n in sizes:
        row: dict = {"n": n}
        # today's code runs every scenario (DLD's layers need them all); the old code,
        # at large sizes, a spread sample of them, scaled
        measure = args.measure_scenarios or (64 if n > 200_000 else 0)
        row["after"] = child(n, "after", args.measure_scenarios or None)
        if n <= args.before_max:
            row["before"] = child(n, "before", measure or (128 if n > 20_000 else 0))
        if args.cli:
            with tempfile.TemporaryDirectory() as tmp:
                row["cli"] = cli(n, args.jobs, Path(tmp))
        results.append(row)
        head = f"\n{n:,} x {P}, mdav k = {K}, 1,023 scenarios"
        print(head + (f" (PLD {row['after']['pld_method']})"))
        print(f"  {'measure (one thread)':22s} {'before s':>10s} {'after s':>10s} {'speed-up':>9s}")
        for key in STAGES:
            a = row["after"]["seconds"][key]
            b = row.get("before", {}).get("seconds", {}).get(key)
            mark = "~" if row["after"]["scaled"] and key in ("k_prime", "dld", "id_sdid") else " "
            bs = f"{b:10.2f}" if b is not None else f"{'-':>10s}"
            sp = f"{b / a:8.1f}x" if b is not None and a > 0 else f"{'':>9s}"
            print(f"  {key:22s} {bs} {a:9.2f}{mark} {sp}")
        tb = sum(row.get("before", {}).get("seconds", {}).values()) if "before" in row else None
        ta = sum(row["after"]["seconds"].values())
        print(f"  {'total':22s} {tb if tb is not None else float('nan'):10.2f} {ta:10.2f}")
        print(f"  peak RSS (child): after {row['after']['peak_mb']:.0f} MB"
              + (f", before {row['before']['peak_mb']:.0f} MB" if "before" in row else ""))
        if "cli" in row:
            c = row["cli"]
            print(f"  sdc protect {c['protect']['seconds']:.1f} s ({c['protect']['peak_mb']:.0f} MB), "
                  f"sdc evaluate --jobs {args.jobs} {c['evaluate']['seconds']:.1f} s "
                  f"({c['evaluate']['peak_mb']:.0f} MB): {c['ratio']:.1f}x protect; PLD {c['pld_method']}"
                  + (f", bound {c['pld_bound']:.3f} points" if c["pld_bound"] is not None else ""))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
