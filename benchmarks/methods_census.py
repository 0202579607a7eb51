"""Information loss and run time of every registered method on the Census file.

Runs each method of ``microagg_cli.methods.METHODS`` with its default parameters on
``sample_data/census.csv`` (1080 x 13, all attributes, one block), z-scored with
population sds, for k = 3, 5 and 10, and prints a Markdown table of IL = 100 * SSE /
SST and seconds per run. Methods whose output is not one partition of the block
(``MethodSpec.output != "labels"``) or that limit the block width (``max_columns``)
are listed as n/a. A method that mutates its input or returns a group smaller than
k stops the script (its figures would be meaningless). The last row is the lower bound LB_NN: no k-partition can do
better. Random methods get ``np.random.default_rng(0)``.

The README's table is generated from :func:`census_table`.

Usage: ``python benchmarks/methods_census.py [--methods mdav,md] [--k 3,5,10]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from microagg_cli.methods import METHODS  # noqa: E402
from microagg_cli.metrics.utility import lb_nn  # noqa: E402
from microagg_cli.partition import information_loss, zscore  # noqa: E402

CENSUS = ROOT / "sample_data" / "census.csv"
KS = (3, 5, 10)


def load_census() -> tuple[np.ndarray, np.ndarray]:
    """(X, Z): the Census matrix and its z-scored version."""
    X = np.loadtxt(CENSUS, delimiter=",", skiprows=1)
    return X, zscore(X)[0]


def run_method(name: str, X: np.ndarray, Z: np.ndarray, k: int) -> tuple[float, float] | None:
    """(IL, seconds) of method ``name`` at ``k``; None when it is not applicable.

    Methods that do not return one partition (per-column partitions, or protected
    values) are run through ``api.protect_array`` and scored with IL_SSE of the
    protected values (the metrics spec's definition, equal to SSE/SST for partitions).
    """
    spec = METHODS[name]
    if spec.max_columns is not None:
        return None
    if spec.output != "labels":
        from microagg_cli.api import protect_array

        start = time.perf_counter()
        res = protect_array(X, k, method=name, seed=0)
        return res.stats["il_sse"], time.perf_counter() - start
    params = spec.validate_params(None)
    data = (Z if spec.standardize else X).copy()  # a method must not mutate it; check
    before = data.copy()
    start = time.perf_counter()
    labels = spec.func(data, k, rng=np.random.default_rng(0), **params)
    seconds = time.perf_counter() - start
    if not np.array_equal(data, before):
        raise RuntimeError(f"method {name!r} mutated its input")
    sizes = np.bincount(np.unique(labels, return_inverse=True)[1])
    if sizes.min() < k:
        raise RuntimeError(f"method {name!r}: a group of {sizes.min()} < k={k} records")
    return information_loss(Z, labels), seconds


def census_table(methods: list[str] | None = None, ks: tuple[int, ...] = KS) -> str:
    """The Markdown table: one row per method, IL and seconds for each k."""
    X, Z = load_census()
    names = list(METHODS) if methods is None else methods
    head = ["Method"] + [f"IL k={k}" for k in ks] + [f"s k={k}" for k in ks]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (2 * len(ks))) + "|"]
    for name in names:
        results = [run_method(name, X, Z, k) for k in ks]
        if any(r is None for r in results):
            cells = ["n/a"] * (2 * len(ks))
        else:
            cells = [f"{r[0]:.4f}" for r in results] + [f"{r[1]:.2f}" for r in results]
        note = " (k = values)" if METHODS[name].output == "values" else ""
        lines.append(f"| `{name}`{note} | " + " | ".join(cells) + " |")
    bound = [f"{lb_nn(Z, k):.4f}" for k in ks]
    lines.append("| LB_NN (lower bound) | " + " | ".join(bound + [""] * len(ks)) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", help="comma-separated method names (default: all)")
    parser.add_argument("--k", default=",".join(map(str, KS)), help="comma-separated k values")
    parser.add_argument("--readme", help="also rewrite the census-table section of this README")
    args = parser.parse_args()
    methods = args.methods.split(",") if args.methods else None
    unknown = [m for m in methods or [] if m not in METHODS]
    if unknown:
        parser.error(f"unknown method(s): {', '.join(unknown)}")
    table = census_table(methods, tuple(int(k) for k in args.k.split(",")))
    print(table)
    if args.readme:
        import re

        path = Path(args.readme)
        text = path.read_text(encoding="utf-8")
        new = re.sub(r"(<!-- census-table:start -->)\n.*?(<!-- census-table:end -->)",
                     lambda m: m.group(1) + "\n" + table + "\n" + m.group(2), text, flags=re.S)
        path.write_text(new, encoding="utf-8")


if __name__ == "__main__":
    main()
