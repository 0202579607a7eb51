"""Input pairs of the frozen ``sdc evaluate`` reports (before the speed-up of the risk measures).

The reports in ``tests/data/evaluate_frozen/`` were written by ``sdc evaluate`` BEFORE
the speed-up of the risk measures (commit 2832553), from the files this module writes;
``tests/evaluation/test_evaluate_frozen.py`` checks that today's code reproduces them. The data
and its protection are made here with numpy alone (no method of the package), so that
changes to the methods cannot move the reference.

Regenerate (only when a measure's definition changes on purpose)::

    python tests/reference_evaluate_cases.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

FROZEN = Path(__file__).resolve().parent / "data" / "evaluate_frozen"


def groups_mean(X: np.ndarray, order: np.ndarray, k: int) -> np.ndarray:
    """Consecutive groups of k records along ``order`` (remainder joins the last group)."""
    n = X.shape[0]
    g = np.arange(n) // k
    g[g >= n // k] = n // k - 1
    labels = np.empty(n, dtype=np.int64)
    labels[order] = g
    sums = np.zeros((labels.max() + 1, X.shape[1]))
    np.add.at(sums, labels, X)
    return (sums / np.bincount(labels)[:, None])[labels]


def _frame(X: np.ndarray, names: list[str]) -> pd.DataFrame:
    return pd.DataFrame({c: X[:, j] for j, c in enumerate(names)})


def cases() -> dict[str, dict]:
    """name -> {"orig": DataFrame, "prot": DataFrame, "fmt": "csv"|"parquet", "args": [...]}."""
    out: dict[str, dict] = {}
    rng = np.random.default_rng(27)

    # 1. integer values with many ties, MDAV-like groups of 3 along the first PC; CSV
    n, names = 300, ["a", "b", "c", "d"]
    L = rng.normal(size=(n, 4)) @ rng.normal(size=(4, 4))
    X = np.round(3 * L)
    Z = (X - X.mean(0)) / X.std(0)
    pc = np.linalg.eigh(np.cov(Z, rowvar=False))[1][:, -1]
    Xp = groups_mean(X, np.argsort(Z @ pc, kind="stable"), 3)
    out["ties_csv"] = {"orig": _frame(X, names), "prot": _frame(Xp, names), "fmt": "csv", "args": []}

    # 2. duplicate rows and a constant column, groups of 4 along column a; Parquet
    n = 240
    base = np.round(rng.gamma(2.0, 10.0, size=(n // 2, 3)), 1)
    X = np.vstack([base, base[rng.integers(0, n // 2, size=n // 2)]])
    X = np.column_stack([X, np.full(n, 7.0)])
    X = X[rng.permutation(n)]
    Xp = groups_mean(X, np.lexsort((X[:, 1], X[:, 0])), 4)
    Xp[:, 3] = X[:, 3]
    Xp[:5, 3] += 1.0  # the constant column differs in a few records (so it is evaluated)
    # (column d is perturbed, not aggregated: the pairing cannot be proven, hence --no-pairing-check)
    out["dups_const_parquet"] = {"orig": _frame(X, names), "prot": _frame(Xp, names), "fmt": "parquet",
                                 "args": ["-k", "4", "--no-pairing-check"]}

    # 3. strata-like blocks protected separately: --blocks a,b;c,d; CSV
    n = 360
    stratum = np.repeat(np.arange(6), n // 6)
    X = np.round(rng.normal(size=(n, 4)) + 5.0 * stratum[:, None], 2)
    Xp = X.copy()
    for cols, key in (([0, 1], 0), ([2, 3], 2)):
        Xp[:, cols] = groups_mean(X[:, cols], np.lexsort((X[:, key + 1], X[:, key])), 3)
    out["blocks_csv"] = {"orig": _frame(X, names), "prot": _frame(Xp, names), "fmt": "csv",
                         "args": ["--blocks", "a,b;c,d"]}

    # 4. additive noise (not a partition), rounded; explicit scenarios; Parquet
    n, names5 = 500, ["a", "b", "c", "d", "e"]
    X = np.round(rng.lognormal(3.0, 0.6, size=(n, 5)))
    Xp = np.round(X + rng.normal(scale=0.3 * X.std(0), size=X.shape))
    out["noise_parquet"] = {"orig": _frame(X, names5), "prot": _frame(Xp, names5), "fmt": "parquet",
                            "args": ["--known", "a,b,c,d,e", "--known", "a", "--known", "b,d", "--known", "c,e",
                                     "--no-pairing-check"]}  # noise: not group statistics

    # 5. 1,500 records (PLD window 15), 5 columns, groups of 5 in a random order
    #    interleaved with sorted runs; CSV, all 31 scenarios
    n = 1500
    X = np.round(rng.normal(size=(n, 5)) @ rng.normal(size=(5, 5)), 1)
    order = np.argsort(X[:, 0] + 0.5 * rng.normal(size=n), kind="stable")
    Xp = groups_mean(X, order, 5)
    out["window_csv"] = {"orig": _frame(X, names5), "prot": _frame(Xp, names5), "fmt": "csv", "args": ["-k", "5"]}
    return out


def write_case(case: dict, folder: Path, name: str) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for side in ("orig", "prot"):
        path = folder / f"{name}_{side}.{case['fmt']}"
        if case["fmt"] == "csv":
            case[side].to_csv(path, index=False)
        else:
            case[side].to_parquet(path, index=False)
        paths.append(path)
    return paths[0], paths[1]


#: The parts of the report frozen (the rest names files, versions and options).
FROZEN_KEYS = ("summary", "measures", "blocks", "formulas")


def frozen_part(rep: dict) -> dict:
    return {key: rep[key] for key in FROZEN_KEYS}


def main() -> None:  # pragma: no cover - regenerates the reference
    from click.testing import CliRunner

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from microagg_cli.cli import cli

    import tempfile

    FROZEN.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, case in cases().items():
            o, p = write_case(case, Path(tmp), name)
            res = CliRunner().invoke(cli, ["evaluate", str(o), str(p), "--format", "json", "-q", *case["args"]])
            assert res.exit_code == 0, res.output
            rep = json.loads(res.stdout)
            (FROZEN / f"{name}.json").write_text(json.dumps(frozen_part(rep), indent=1, sort_keys=True) + "\n")
            print(name, rep["summary"]["dld"], rep["summary"]["pld"])


if __name__ == "__main__":
    main()
