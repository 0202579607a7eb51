"""Mixed data side by side: sdc's heterogeneous MDAV, a one-hot baseline and sdcMicro.

On ``sample_data/household.csv`` with the same roles for every method -- categorical
keys urbrur, roof, walls, water, electcon, relat, sex, hhcivil; continuous age, expend,
income, savings; weight sampling_weight; k = 3 -- prints per method:

* records in released classes below k (classes of identical rows over all twelve keys);
* the mean share of changed categories (over the eight keys, the share of records whose
  released category differs from their own);
* numeric IL (IL_SSE: 100 * SSE / SST on z-scores of the four continuous keys).

Methods:

* ``sdc mixed``: ``sdc protect --categorical ... --columns ... --weights ...`` (the library
  call ``microagg_cli.protect``): heterogeneous MDAV and its local search, modes released;
* ``one-hot z-scored baseline``: MDAV on z-scores of the continuous keys and of the one-hot
  indicators of the categorical keys (every column z-scored, as a numeric tool treats
  dummy columns), the groups' weighted means and modes released;
* ``one-hot 0/1``: the same with the indicators left 0/1 (the literal reading of "MDAV on
  z-scores plus one-hot keys": a mismatch then weighs 2, as much as one typical
  difference of a z-scored column, i.e. the mixed distance with a categorical weight
  equal to each key's Gini-Simpson index, 0.24 to 0.72 here; it keeps the numeric loss
  low and changes almost three times as many categories);
* ``sdcMicro microaggrGower``: run through ``Rscript`` when an R with sdcMicro is installed
  (never a dependency of sdc); otherwise the line says it was skipped and why.

``--sweep 0.25,0.5,1,2,4`` adds sdc mixed at each categorical weight
(``--mixed-weights categorical=w``): the trade-off between the two losses, each point
marked with the baselines it beats on both. On this file no single weight beats both
baselines: weights 0.3 to 0.5 beat the 0/1 baseline (0.5: 2.51 % changed, IL 9.27
against 3.53 %, 9.38), weights from 2 the z-scored one (2, the default: 1.17 %, 14.16
against 1.34 %, 17.56).

``--generated`` runs the same on a generated file instead (3,000 records in 20
clusters, seed 7: the 5 continuous and 5 categorical keys of ``benchmarks/mixed.py``, a
weight column), so that a weight is not judged on one file alone.

``--method ils`` runs the sweep with ``-m ils`` (the kicks on the mixed objective).

Usage: ``python benchmarks/mixed_vs_gower.py [--k 3] [--sweep W,W,...] [--generated] [--method ils]``
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from microagg_cli import protect  # noqa: E402
from microagg_cli.methods import get_method  # noqa: E402
from microagg_cli.partition import aggregate, aggregate_codes, zscore  # noqa: E402
from microagg_cli.protection.block import row_classes  # noqa: E402

DATA = ROOT / "sample_data" / "household.csv"
CATEGORICAL = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "hhcivil"]
CONTINUOUS = ["age", "expend", "income", "savings"]
WEIGHT = "sampling_weight"


def measures(orig: pd.DataFrame, released: pd.DataFrame, k: int) -> dict[str, float]:
    """Records in classes < k over all keys, mean share of changed categories, IL_SSE."""
    X = orig[CONTINUOUS].to_numpy(dtype=float)
    Xp = released[CONTINUOUS].to_numpy(dtype=float)
    Z, mean, scale, _ = zscore(X)
    Zp = (Xp - mean) / scale
    il = 100.0 * float(((Z - Zp) ** 2).sum()) / float((Z ** 2).sum())
    cats = np.column_stack([pd.factorize(pd.concat([orig[c], released[c]]).astype(str))[0][len(orig):]
                            for c in CATEGORICAL])
    sizes, _ = row_classes(np.hstack([cats.astype(float), Xp]))
    changed = np.mean([(orig[c].astype(str).to_numpy() != released[c].astype(str).to_numpy()).mean()
                       for c in CATEGORICAL])
    return {"below_k": int((sizes < k).sum()), "changed": float(changed), "il": il}


def run_sdc(k: int, method: str, categorical_weight: float | None = None) -> pd.DataFrame:
    mixed = None if categorical_weight is None else {"categorical": categorical_weight}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.csv"
        protect(DATA, out, k=k, method=method, columns=CONTINUOUS, categorical=CATEGORICAL, weights=WEIGHT,
                mixed_weights=mixed)
        return pd.read_csv(out, dtype=str)


def run_onehot(orig: pd.DataFrame, k: int, *, scaled: bool = True) -> pd.DataFrame:
    X = orig[CONTINUOUS].to_numpy(dtype=float)
    dummies = pd.get_dummies(orig[CATEGORICAL].astype(str)).to_numpy(dtype=float)
    Z = zscore(np.hstack([X, dummies]))[0] if scaled else np.hstack([zscore(X)[0], dummies])
    labels = get_method("mdav").func(Z, k, rng=np.random.default_rng(0))
    out = orig.copy()
    w = orig[WEIGHT].to_numpy(dtype=float)
    out[CONTINUOUS] = aggregate(X, labels, weights=w)
    for c in CATEGORICAL:
        codes, uniques = pd.factorize(orig[c].astype(str))
        out[c] = np.asarray(uniques, dtype=object)[aggregate_codes(codes, labels, ordered=False)]
    return out


GOWER_R = r"""
suppressMessages(library(sdcMicro))
d <- read.csv("{data}")
cats <- c({cats})
for (v in cats) d[[v]] <- as.factor(d[[v]])
r <- microaggrGower(d, variables = c({cont}, cats), aggr = {k}, dist_var = c({cont}, cats),
                    by = NULL, weights = NULL)
write.csv(r, "{out}", row.names = FALSE)
"""


def run_gower(k: int) -> tuple[pd.DataFrame | None, str]:
    rscript = shutil.which("Rscript")
    if rscript is None:
        return None, "no Rscript on PATH (R is not a dependency of sdc)"
    probe = subprocess.run([rscript, "-e", "quit(status = !requireNamespace('sdcMicro', quietly = TRUE))"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return None, ("R is installed but the R package sdcMicro is not (it is not packaged for this system's "
                      "apt and CRAN is not reachable from here)")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "gower.csv"
        q = lambda names: ", ".join(f'"{n}"' for n in names)  # noqa: E731
        script = GOWER_R.format(data=DATA, cats=q(CATEGORICAL), cont=q(CONTINUOUS), k=k, out=out)
        res = subprocess.run([rscript, "-e", script], capture_output=True, text=True)
        if res.returncode != 0:
            return None, f"microaggrGower failed: {res.stderr.strip().splitlines()[-1:]}"
        return pd.read_csv(out, dtype=str), ""


def generated(folder: Path) -> Path:
    """The generated file of ``--generated`` (see the module doc), written to ``folder``."""
    from mixed import data  # benchmarks/mixed.py

    X, cats = data(3000, seed=7)
    frame = pd.DataFrame(np.round(X * 10 + 50, 1), columns=[f"x{j}" for j in range(X.shape[1])])
    for j in range(cats.shape[1]):
        frame[f"c{j}"] = cats[:, j]
    frame["w"] = np.round(np.random.default_rng(7).uniform(1, 3, len(frame)), 2)
    path = folder / "generated.csv"
    frame.to_csv(path, index=False)
    return path


def main() -> None:
    global DATA, CATEGORICAL, CONTINUOUS, WEIGHT
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--sweep", default="", help="categorical weights to add, e.g. 0.25,0.5,1,2,4")
    ap.add_argument("--generated", action="store_true", help="a generated clustered file instead of household.csv")
    ap.add_argument("--method", default="mdav", choices=["mdav", "ils"],
                    help="sdc's method for the sweep (ils: its kicks on the mixed objective, seed 0)")
    args = ap.parse_args()
    if args.generated:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        DATA = generated(Path(tempfile.mkdtemp()))
        CATEGORICAL, CONTINUOUS, WEIGHT = [f"c{j}" for j in range(5)], [f"x{j}" for j in range(5)], "w"
    orig = pd.read_csv(DATA, dtype=str)
    rows = []
    t0 = time.perf_counter()
    rows.append(("sdc mixed (mdav)", measures(orig, run_sdc(args.k, "mdav"), args.k), time.perf_counter() - t0))
    t0 = time.perf_counter()
    rows.append(("one-hot z-scored baseline", measures(orig, run_onehot(orig, args.k), args.k),
                 time.perf_counter() - t0))
    t0 = time.perf_counter()
    rows.append(("one-hot 0/1 baseline", measures(orig, run_onehot(orig, args.k, scaled=False), args.k),
                 time.perf_counter() - t0))
    t0 = time.perf_counter()
    gower, why = run_gower(args.k)
    print(f"{DATA.name}, {len(orig)} records, k = {args.k}: {len(CATEGORICAL)} categorical + "
          f"{len(CONTINUOUS)} continuous keys, weight {WEIGHT}")
    print(f"{'method':<26}{'records in classes < k':>24}{'mean changed share':>20}{'numeric IL_SSE':>16}{'seconds':>9}")
    for name, m, sec in rows:
        print(f"{name:<26}{m['below_k']:>24d}{m['changed']:>20.4f}{m['il']:>16.3f}{sec:>9.2f}")
    if gower is None:
        print(f"{'sdcMicro microaggrGower':<26} skipped: {why}")
    else:
        m = measures(orig, gower, args.k)
        print(f"{'sdcMicro microaggrGower':<26}{m['below_k']:>24d}{m['changed']:>20.4f}{m['il']:>16.3f}"
              f"{time.perf_counter() - t0:>9.2f}")

    def beats(m: dict[str, float], base: dict[str, float]) -> bool:
        return m["il"] < base["il"] and m["changed"] < base["changed"]

    mixed, zbase, base01 = rows[0][1], rows[1][1], rows[2][1]
    print(f"sdc mixed beats the z-scored one-hot baseline on both losses: {'yes' if beats(mixed, zbase) else 'NO'}")
    print(f"sdc mixed beats the 0/1 one-hot baseline on both losses: {'yes' if beats(mixed, base01) else 'NO'}")
    for w in [float(x) for x in args.sweep.split(",") if x.strip()]:
        m = measures(orig, run_sdc(args.k, args.method, w), args.k)
        which = [name for name, base in (("z-scored", zbase), ("0/1", base01)) if beats(m, base)]
        print(f"{f'sdc {args.method}, categorical=' + format(w, 'g'):<26}{m['below_k']:>24d}{m['changed']:>20.4f}"
              f"{m['il']:>16.3f}   beats: {', '.join(which) or 'neither'}")


if __name__ == "__main__":
    main()
