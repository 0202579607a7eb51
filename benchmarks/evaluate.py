"""Benchmark of ``sdc evaluate`` at scale (not a test): seconds per measure and size,
before and after the layered DLD search and the PLD pair table, and peak memory.

For each size (default 10,000, 50,000, 200,000 and 1,000,000 records x 10 columns, a
Gaussian mixture protected by ``mdav`` with k = 3, default options: all 1,023 intruder
scenarios):

- **per measure** (a child process per size and code version, one thread): the
  seconds of the shared set-up (ranks, interval hits, PLD pair table, DLD tree and
  candidates), of k', DLD, PLD, ID + SDID over the scenarios, of the IL family, of
  LB_NN and of the analysis-utility measures (CI overlap of the default regressions,
  pMSE with its seeded sample above 100,000 records, the group table with 50 groups); ``after`` is today's code, ``before`` the implementation before it, read from
  the git history (``tests/reference_risk.py`` at ``BEFORE_COMMIT``; only up to
  ``--before-max`` records: it is quadratic);
  with ``--measure-scenarios M`` only M scenarios (evenly spread) are timed and the
  per-scenario figures are scaled to all of them (marked ``~``; DLD's layered pass
  then loses the subsets it builds on, so its figure is pessimistic); without it,
  today's code runs every scenario and the old one 64 of them above 200,000 records;
- **one-to-one linkage and RMD** (today's code only): the seconds of the linkage of
  the 4 largest scenarios (exact up to 2,000 records, local windows above) and of
  RMDID1/RMDID1w/RMDID2 (``rmd``: the robust distances and the k-d tree; ``rmd_mcd``:
  the MCD it needs, shared with robeigen inside ``sdc evaluate``, so not added time
  there); ``--new-only`` times only these (and needs no MDAV: ``--fast-data`` protects
  with groups of 3 consecutive records along the first column instead);
- **end to end** (``--cli``): ``sdc protect`` and ``sdc evaluate --jobs J`` on the same
  Parquet file as child processes: wall seconds, ratio evaluate / protect, peak RSS.

Usage::

    python benchmarks/evaluate.py [--sizes 10000,50000] [--before-max 50000] [--cli]
                                  [--jobs 2] [--measure-scenarios M] [--json out.json]
                                  [--new-only] [--fast-data]

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

#: The commit holding the frozen copy of the risk code before the speed-up (the tests now
#: keep only its figures, in ``tests/data/reference_risk.json.gz``).
BEFORE_COMMIT = "1f26495c92d7b983e627f779e2a676f0bd7b654a"


def before_risk():
    """The risk module before the speed-up, written from the git history to a temporary folder."""
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{BEFORE_COMMIT}:tests/reference_risk.py"],
                         capture_output=True, text=True, check=True).stdout
    folder = Path(tempfile.mkdtemp(prefix="sdc-before-"))
    (folder / "reference_risk.py").write_text(src, encoding="utf-8")
    sys.path.insert(0, str(folder))
    import reference_risk

    return reference_risk

P = 10
K = 3
STAGES = ("setup", "k_prime", "dld", "pld", "id_sdid", "il_family", "lb_nn", "ci_overlap", "pmse", "groups")
#: the newer measures (linkage, RMD and its MCD; today's code only)
NEW_STAGES = ("linkage", "rmd", "rmd_mcd")


def peak_mb(who: int = resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024.0


def data(n: int, fast: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The mixture of benchmarks/end_to_end.py and its exact MDAV protection (k = 3);
    ``fast``: groups of 3 consecutive records in the order of the first column."""
    from end_to_end import synthetic
    from microagg_cli.methods import get_method
    from microagg_cli.partition import aggregate, zscore

    X = synthetic(n)
    if fast:
        labels = np.empty(n, dtype=np.int64)
        labels[np.argsort(X[:, 0], kind="stable")] = np.minimum(np.arange(n) // K, n // K - 1)
        return X, aggregate(X, labels)
    labels = get_method("mdav").func(zscore(X)[0], K, rng=np.random.default_rng(0))
    return X, aggregate(X, labels)


def new_measures(X: np.ndarray, Xp: np.ndarray) -> dict:
    """Seconds of the one-to-one linkage (its default scenarios) and of the RMD figures."""
    from microagg_cli.mcd import det_mcd_kept
    from microagg_cli.metrics.linkage import LINKAGE_SCENARIOS, LinkageEvaluator, linkage_scenarios
    from microagg_cli.metrics.rmd import rmd_risk
    from microagg_cli.metrics.utility import standardized_columns
    from microagg_cli.metrics.scenarios import all_subsets

    sec = {}
    subsets = all_subsets(P)
    t = time.perf_counter()
    ev = LinkageEvaluator(X, Xp)
    values = [ev.scenario(subsets[i])["value"] for i in linkage_scenarios(subsets, LINKAGE_SCENARIOS)]
    sec["linkage"] = time.perf_counter() - t
    t = time.perf_counter()
    det_mcd_kept(standardized_columns(X, np.arange(X.shape[1])))  # robeigen's MCD: cached for rmd_risk
    sec["rmd_mcd"] = time.perf_counter() - t
    t = time.perf_counter()
    r = rmd_risk(X, Xp)
    sec["rmd"] = time.perf_counter() - t
    return {"seconds": sec, "linkage_method": ev.method, "linkage": values, "rmdid1": r["rmdid1"]}


def one(n: int, version: str, measure: int | None, new_only: bool = False, fast: bool = False) -> dict:
    """Per-measure seconds of one size with one code version (run in a child)."""
    from microagg_cli.metrics import utility
    from microagg_cli.metrics.scenarios import all_subsets

    if version == "before":
        risk = before_risk()
    else:
        from microagg_cli.metrics import risk
    X, Xp = data(n, fast)
    rss0 = peak_mb()
    if new_only:
        out = new_measures(X, Xp)
        return {"n": n, "version": version, "seconds": out["seconds"], "scaled": False, "peak_mb": peak_mb(),
                "data_mb": rss0, "pld_method": None, "linkage_method": out["linkage_method"]}
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
    extra = {}
    if version == "after":
        new = new_measures(X, Xp)
        sec.update(new["seconds"])
        extra["linkage_method"] = new["linkage_method"]
    return {"n": n, "version": version, "seconds": sec, "scaled": scale > 1, "peak_mb": peak_mb(),
            "data_mb": rss0, "pld_method": getattr(ev, "pld_method", "exact"), **extra}


def child(n: int, version: str, measure: int | None, new_only: bool = False, fast: bool = False) -> dict:
    out = subprocess.run([sys.executable, __file__, "--one", str(n), "--version", version,
                          "--measure-scenarios", str(measure or 0), *(["--new-only"] if new_only else []),
                          *(["--fast-data"] if fast else [])], capture_output=True, text=True)
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
    out["linkage_method"] = rep["summary"].get("linkage_method")
    out["timing"] = rep.get("timing")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,50000,200000,1000000")
    ap.add_argument("--before-max", type=int, default=50_000)
    ap.add_argument("--measure-scenarios", type=int, default=0)
    ap.add_argument("--cli", action="store_true")
    ap.add_argument("--jobs", type=int, default=0)
    ap.add_argument("--json", default=None)
    ap.add_argument("--new-only", action="store_true", help="time only the linkage and RMD measures")
    ap.add_argument("--fast-data", action="store_true", help="protect by groups of 3 along column 1, not MDAV")
    ap.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--version", default="after", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.version, args.measure_scenarios or None, args.new_only,
                             args.fast_data)))
        return
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    sizes = [int(s) for s in args.sizes.split(",")]
    results = []
    for n in sizes:
        row: dict = {"n": n}
        # today's code runs every scenario (DLD's layers need them all); the old code,
        # at large sizes, a spread sample of them, scaled
        measure = args.measure_scenarios or (64 if n > 200_000 else 0)
        row["after"] = child(n, "after", args.measure_scenarios or None, args.new_only, args.fast_data)
        if args.new_only:
            sec = row["after"]["seconds"]
            print(f"\n{n:,} x {P}, {'groups of 3' if args.fast_data else 'mdav k = 3'}: linkage "
                  f"({row['after']['linkage_method']}, 4 scenarios) {sec['linkage']:.2f} s, rmd {sec['rmd']:.2f} s "
                  f"(+ its MCD {sec['rmd_mcd']:.2f} s, shared with robeigen); peak RSS "
                  f"{row['after']['peak_mb']:.0f} MB")
            results.append(row)
            continue
        if n <= args.before_max:
            row["before"] = child(n, "before", measure or (128 if n > 20_000 else 0))
        if args.cli:
            with tempfile.TemporaryDirectory() as tmp:
                row["cli"] = cli(n, args.jobs, Path(tmp))
        results.append(row)
        head = f"\n{n:,} x {P}, mdav k = {K}, 1,023 scenarios"
        print(head + (f" (PLD {row['after']['pld_method']})"))
        print(f"  {'measure (one thread)':22s} {'before s':>10s} {'after s':>10s} {'speed-up':>9s}")
        for key in STAGES + NEW_STAGES:
            a = row["after"]["seconds"][key]
            b = row.get("before", {}).get("seconds", {}).get(key)
            mark = "~" if row["after"]["scaled"] and key in ("k_prime", "dld", "id_sdid") else " "
            bs = f"{b:10.2f}" if b is not None else f"{'-':>10s}"
            sp = f"{b / a:8.1f}x" if b is not None and a > 0 else f"{'':>9s}"
            print(f"  {key:22s} {bs} {a:9.2f}{mark} {sp}")
        tb = sum(row.get("before", {}).get("seconds", {}).values()) if "before" in row else None
        ta = sum(v for key, v in row["after"]["seconds"].items() if key != "rmd_mcd")
        print(f"  {'total':22s} {tb if tb is not None else float('nan'):10.2f} {ta:10.2f}")
        print(f"  peak RSS (child): after {row['after']['peak_mb']:.0f} MB"
              + (f", before {row['before']['peak_mb']:.0f} MB" if "before" in row else ""))
        if "cli" in row:
            c = row["cli"]
            print(f"  sdc protect {c['protect']['seconds']:.1f} s ({c['protect']['peak_mb']:.0f} MB), "
                  f"sdc evaluate --jobs {args.jobs} {c['evaluate']['seconds']:.1f} s "
                  f"({c['evaluate']['peak_mb']:.0f} MB): {c['ratio']:.1f}x protect; PLD {c['pld_method']}"
                  + (f", bound {c['pld_bound']:.3f} points" if c["pld_bound"] is not None else "")
                  + f"; linkage {c['linkage_method']}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
