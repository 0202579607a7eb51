"""The disclosure risk of categorical keys (``sdc risk``) at scale, and beside sdcMicro.

Data (seeded): n records (default 1,000,000) in households of 1-6 members, 8 keys of
realistic, skewed margins (region 20, sex 2, age 95, marital status 5, occupation 40,
education 8, household size 6, citizenship 3; 1 % of occupation and 0.5 % of education
missing, so the wildcard rule of f_k runs on 4 patterns), a household-level sampling
weight and a sensitive variable of 12 categories. Timed, after a warm-up that compiles
the kernel:

* every measure but SUDA2: f_k / F_k, violations, individual risk (approx), global and
  household risk, l-diversity of the sensitive variable, the combinations of up to 3
  keys (:func:`microagg_cli.metrics.keyrisk.key_risk` with ``suda=False``);
* the exact individual risk on the same f_k, F_k;
* SUDA2 with MSUs up to 3 keys.

Goals (issue "Measures III"): every measure but SUDA2 <= 10 s, SUDA2 (3) <= 60 s, peak
memory <= 2 GB. Printed: wall-clock and CPU seconds, the Python heap's peak (tracemalloc,
numpy's arrays included) and the process's maximum resident set.

sdcMicro: R and sdcMicro are run through ``Rscript`` when it is on PATH and sdcMicro
loads (never a dependency of sdc): the same file through ``measure_risk`` (with
``hid``), ``kAnon_violations``-style counts, ``ldiversity`` and ``suda2`` (DisFraction
0.01), timed beside ours, and on ``sample_data/household.csv`` (keys urbrur, water, sex,
age; weight sampling_weight; household ori_hid) the figures compared at 1e-6 relative.
Without Rscript the comparison prints why it was skipped.

Usage: ``python benchmarks/risk_categorical.py [--n 1000000] [--skip-suda] [--keep DIR]``
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from microagg_cli.metrics.keyrisk import (  # noqa: E402
    KeyRiskOptions,
    individual_risk,
    key_risk,
    sample_frequencies,
    suda2,
)

KEYS = ("region", "sex", "age", "marital", "occupation", "education", "hhsize", "citizen")
HOUSEHOLD_KEYS = ("urbrur", "water", "sex", "age")


def data(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    size = rng.choice(np.arange(1, 7), p=[0.25, 0.3, 0.2, 0.15, 0.07, 0.03], size=n // 2 + 1)
    hh = np.repeat(np.arange(size.size), size)[:n]
    hh_size = np.repeat(size, size)[:n] - 1
    region = rng.choice(20, p=np.arange(20, 0, -1) / 210, size=size.size)[hh]
    weight = rng.uniform(50, 500, size.size)[hh]
    age = np.minimum(rng.gamma(4.0, 10.0, n).astype(np.int64), 94)
    codes = np.stack([
        region, rng.integers(0, 2, n), age, np.minimum(age // 20, 4),
        rng.zipf(1.6, n) % 40, rng.integers(0, 8, n), hh_size, rng.choice(3, p=[0.9, 0.08, 0.02], size=n),
    ], axis=1).astype(np.int64)
    codes[rng.random(n) < 0.01, 4] = -1
    codes[rng.random(n) < 0.005, 5] = -1
    sensitive = (codes[:, 2] // 8 + rng.integers(0, 3, n)) % 12
    return {"codes": codes, "weight": weight, "household": hh, "sensitive": sensitive}


def timed(func, *args, **kwargs):
    tracemalloc.start()
    t0, c0 = time.perf_counter(), time.process_time()
    out = func(*args, **kwargs)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return out, seconds, cpu, peak / 2**20


def max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


R_SCRIPT = r"""
suppressMessages(library(sdcMicro))
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(args[1])
keys <- strsplit(args[2], ",")[[1]]
out <- list()
t0 <- proc.time()[["elapsed"]]
r <- measure_risk(d, keyVars = keys, w = args[3], hid = args[4])
out$measure_risk_seconds <- proc.time()[["elapsed"]] - t0
out$global_risk_ER <- r$global_risk_ER
out$hier_risk_ER <- r$hier_risk_ER
out$violations <- sapply(c(2, 3, 5), function(k) sum(r$Res[, "fk"] < k))
out$risk <- r$Res[, "risk"]
out$fk <- r$Res[, "fk"]
out$Fk <- r$Res[, "Fk"]
if (args[5] != "") {
  t0 <- proc.time()[["elapsed"]]
  l <- ldiversity(d, keyVars = keys, ldiv_index = args[5])
  out$ldiversity_seconds <- proc.time()[["elapsed"]] - t0
  out$distinct_l <- as.numeric(l[, 1])
}
if (args[6] == "1") {
  t0 <- proc.time()[["elapsed"]]
  s <- suda2(d, variables = keys, DisFraction = 0.01)
  out$suda2_seconds <- proc.time()[["elapsed"]] - t0
  out$suda_score <- s$score
  out$dis_score <- s$disScore
}
cat(jsonlite::toJSON(out, digits = NA, auto_unbox = TRUE))
"""


def run_sdcmicro(csv: Path, keys, weight: str, hid: str, sensitive: str, suda: bool):
    """sdcMicro's figures for ``csv`` (dict), or (None, why it was skipped)."""
    rscript = shutil.which("Rscript")
    if rscript is None:
        return None, "Rscript is not on PATH (R and sdcMicro are not installed on this machine)"
    check = subprocess.run([rscript, "-e", "suppressMessages(library(sdcMicro)); library(jsonlite)"],
                           capture_output=True, text=True)
    if check.returncode != 0:
        return None, "R is installed but sdcMicro or jsonlite does not load: " + check.stderr.strip()[-200:]
    with tempfile.NamedTemporaryFile("w", suffix=".R", delete=False) as fh:
        fh.write(R_SCRIPT)
    t0 = time.perf_counter()
    res = subprocess.run([rscript, fh.name, str(csv), ",".join(keys), weight, hid, sensitive, "1" if suda else "0"],
                         capture_output=True, text=True)
    if res.returncode != 0:
        return None, "Rscript failed: " + res.stderr.strip()[-300:]
    out = json.loads(res.stdout)
    out["total_seconds"] = time.perf_counter() - t0
    return out, None


def rel_diff(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300))) if a.size else 0.0


def household_agreement() -> None:
    import pandas as pd

    path = ROOT / "sample_data" / "household.csv"
    d = pd.read_csv(path)
    codes = np.stack([np.unique(d[c].to_numpy(), return_inverse=True)[1] for c in HOUSEHOLD_KEYS], axis=1)
    ours = key_risk(codes, list(HOUSEHOLD_KEYS), weights=d["sampling_weight"].to_numpy(),
                    household=d["ori_hid"].to_numpy(), sensitive={"income": d["income"].rank(method="dense")
                                                                  .astype(int).to_numpy()})
    rec = ours["records"]
    print(f"\nhousehold.csv (keys {', '.join(HOUSEHOLD_KEYS)}; weight sampling_weight; household ori_hid):")
    print(f"  sdc: violations 2/3/5 = {[v['records'] for v in ours['violations'][:3]]}, "
          f"ER = {ours['global']['expected_reidentifications']:.6f} ({ours['global']['percent']:.4f} %), "
          f"household ER = {ours['household']['expected_reidentifications']:.6f}, "
          f"SUDA2 records with an MSU = {ours['suda2']['records_with_msu']}")
    sdcm, why = run_sdcmicro(path, HOUSEHOLD_KEYS, "sampling_weight", "ori_hid", "income", True)
    if sdcm is None:
        print(f"  sdcMicro: skipped: {why}")
        return
    print(f"  sdcMicro: violations {sdcm['violations']}, ER = {sdcm['global_risk_ER']:.6f}, "
          f"household ER = {sdcm['hier_risk_ER']:.6f}")
    for name, a, b in (("fk", rec["fk"], sdcm["fk"]), ("Fk", rec["Fk"], sdcm["Fk"]),
                       ("risk", rec["risk"], sdcm["risk"]),
                       ("ER", ours["global"]["expected_reidentifications"], sdcm["global_risk_ER"]),
                       ("household ER", ours["household"]["expected_reidentifications"], sdcm["hier_risk_ER"]),
                       ("SUDA score", rec["suda_score"], sdcm["suda_score"]),
                       ("DIS-SUDA", rec["dis_score"], sdcm["dis_score"])):
        diff = rel_diff(a, b)
        print(f"  {name:13s} max relative difference {diff:.3g} {'ok' if diff <= 1e-6 else 'DIFFERS'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--skip-suda", action="store_true")
    ap.add_argument("--keep", type=Path, default=None, help="write the generated file here (for sdcMicro)")
    args = ap.parse_args()

    d = data(args.n)
    codes = d["codes"]
    # warm-up: compile (or load) the exact-risk kernel
    individual_risk([5], [50.0], method="exact")
    print(f"{args.n:,} records x {codes.shape[1]} keys; {int((codes < 0).any(axis=1).sum()):,} records with a "
          f"missing key; {np.unique(d['household']).size:,} households")

    out, s, cpu, peak = timed(key_risk, codes, list(KEYS), weights=d["weight"], household=d["household"],
                              sensitive={"income_band": d["sensitive"]},
                              options=KeyRiskOptions(k=3, suda=False, max_combination_size=3))
    print(f"every measure but SUDA2: {s:.2f} s wall, {cpu:.2f} s CPU, peak {peak:.0f} MiB "
          f"(goal <= 10 s, <= 2048 MiB)")
    print(f"  ER = {out['global']['expected_reidentifications']:.2f} ({out['global']['percent']:.3f} %), "
          f"household ER = {out['household']['expected_reidentifications']:.2f}, violations 2/3/5 = "
          f"{[v['records'] for v in out['violations'][:3]]}, combinations {out['combinations']['count']}")
    (fk, Fk), s1, _c, _p = timed(sample_frequencies, codes, d["weight"])
    print(f"  of which f_k / F_k (wildcard rule, 4 patterns): {s1:.2f} s")
    _r, s2, cpu2, _p = timed(individual_risk, fk, Fk, method="exact")
    print(f"exact individual risk: {s2:.2f} s wall, {cpu2:.2f} s CPU")
    if not args.skip_suda:
        sres, s3, cpu3, peak3 = timed(suda2, codes, max_size=3, names=list(KEYS))
        print(f"SUDA2 (MSUs up to 3 keys): {s3:.2f} s wall, {cpu3:.2f} s CPU, peak {peak3:.0f} MiB "
              f"(goal <= 60 s); {sres['records_with_msu']:,} records with an MSU, MSUs by size "
              f"{sres['msus_by_size']}")
    print(f"process maximum resident set: {max_rss_mib():.0f} MiB")

    if args.keep is not None or shutil.which("Rscript"):
        import pandas as pd

        target = args.keep or Path(tempfile.mkdtemp()) / "keys.csv"
        frame = pd.DataFrame(np.where(codes < 0, np.nan, codes), columns=list(KEYS))
        frame["weight"], frame["hid"], frame["income_band"] = d["weight"], d["household"], d["sensitive"]
        frame.to_csv(target, index=False)
        sdcm, why = run_sdcmicro(target, KEYS, "weight", "hid", "income_band", not args.skip_suda)
        if sdcm is None:
            print(f"sdcMicro on the same file: skipped: {why}")
        else:
            print(f"sdcMicro on the same file: measure_risk {sdcm['measure_risk_seconds']:.1f} s, ldiversity "
                  f"{sdcm.get('ldiversity_seconds', float('nan')):.1f} s, suda2 "
                  f"{sdcm.get('suda2_seconds', float('nan')):.1f} s (all keys; ours: up to 3)")
    else:
        print("sdcMicro on the same file: skipped: Rscript is not on PATH (R and sdcMicro are not installed "
              "on this machine)")
    household_agreement()


if __name__ == "__main__":
    main()
