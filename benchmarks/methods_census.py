"""Information loss and run time of every registered method on the Census file.

Runs each method of ``microagg_cli.methods.METHODS`` with its default parameters on
``sample_data/census.csv`` (1080 x 13, all attributes, one block), z-scored with
population sds, for k = 3, 4, 5 and 10, and prints a Markdown table of IL = 100 * SSE /
SST and seconds per run. Methods whose output is not one partition of the block
(``MethodSpec.output != "labels"``) are run through ``api.protect_array`` and scored
with IL_SSE of the protected values; methods that limit the block width
(``max_columns``) are listed as n/a. A method that mutates its input or returns a
group smaller than k stops the script (its figures would be meaningless). The last
row is the lower bound LB_NN: no k-partition can do better. Random methods get
``np.random.default_rng(0)``. Seconds exclude numba compilation: each method first
runs once on the first 60 records (with at most 1,000 iterations).

A second table, :data:`VARIANTS`, gives the non-default parameter settings whose Census
figures the method docstrings quote, so that every printed figure comes from here.

``--write`` writes both tables, with a provenance line (date, machine, sdc version,
command), to ``benchmarks/results/methods_census.md``; the README's census-table
section is that file, copied in by ``python -m microagg_cli.manpages man README.md``.
``tests/test_census_table.py`` recomputes the fast rows and fails when a printed
figure drifts. A full run takes 10-20 minutes (``ils`` runs 1,000,000 iterations per
search by default, about a minute per k).

Usage: ``python benchmarks/methods_census.py [--methods mdav,md] [--k 3,5,10] [--no-variants]``
or ``python benchmarks/methods_census.py --write`` (all methods and k, both tables).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from microagg_cli._version import __version__  # noqa: E402
from microagg_cli.methods import METHODS  # noqa: E402
from microagg_cli.metrics.utility import lb_nn  # noqa: E402
from microagg_cli.partition import information_loss, zscore  # noqa: E402

CENSUS = ROOT / "sample_data" / "census.csv"
RESULTS = ROOT / "benchmarks" / "results" / "methods_census.md"
KS = (3, 4, 5, 10)
#: Non-default settings quoted in the method docstrings: (method, params, ks).
VARIANTS: tuple[tuple[str, dict[str, Any], tuple[int, ...]], ...] = (
    ("mdav", {"refine": True}, KS),
    ("md", {"grow": "group"}, KS),
    ("dba", {"refine": True}, KS),
    ("mhm", {"order": "md"}, KS),
    ("mhm", {"order": "cbfs"}, KS),
    ("mhm", {"order": "npn"}, KS),
    ("genetic", {"macro_k": 12}, (3,)),
    ("genetic", {"macro_k": 18}, (3,)),
    ("genetic", {"macro_k": 27}, (3,)),
    ("genetic", {"macro_k": 12, "rounds": 1}, (3,)),
    ("genetic", {"macro_k": 18, "rounds": 1}, (3,)),
    ("genetic", {"macro_k": 27, "rounds": 1}, (3,)),
    ("ils", {"iterations": 200_000}, KS),
)


def load_census() -> tuple[np.ndarray, np.ndarray]:
    """(X, Z): the Census matrix and its z-scored version."""
    X = np.loadtxt(CENSUS, delimiter=",", skiprows=1)
    return X, zscore(X)[0]


def _warm_up(name: str, Z: np.ndarray, params: dict[str, Any]) -> None:
    """Compile (or load) a method's numba kernels outside the timed run."""
    spec = METHODS[name]
    small = dict(params)
    if "iterations" in small:
        small["iterations"] = min(int(small["iterations"]), 1000)
    if "time_budget" in small:
        small["time_budget"] = 0.0
    spec.func(Z[:60].copy(), 3, rng=np.random.default_rng(0), **small)


def run_method(name: str, X: np.ndarray, Z: np.ndarray, k: int,
               params: dict[str, Any] | None = None, *, warm: bool = False) -> tuple[float, float] | None:
    """(IL, seconds) of method ``name`` at ``k``; None when it is not applicable.

    Methods that do not return one partition (per-column partitions, or protected
    values) are run through ``api.protect_array`` and scored with IL_SSE of the
    protected values (the metrics spec's definition, equal to SSE/SST for partitions).
    ``warm`` runs the method once on 60 records first (numba compilation untimed).
    """
    spec = METHODS[name]
    if spec.max_columns is not None:
        return None
    if spec.output != "labels":
        from microagg_cli.protection import protect_array

        if warm:
            protect_array(X[:60], 3, method=name, params=params, seed=0)
        start = time.perf_counter()
        res = protect_array(X, k, method=name, params=params, seed=0)
        return res.stats["il_sse"], time.perf_counter() - start
    full = spec.validate_params(params)
    data = (Z if spec.standardize else X).copy()  # a method must not mutate it; check
    if warm:
        _warm_up(name, data, full)
    before = data.copy()
    start = time.perf_counter()
    labels = spec.func(data, k, rng=np.random.default_rng(0), **full)
    seconds = time.perf_counter() - start
    if not np.array_equal(data, before):
        raise RuntimeError(f"method {name!r} mutated its input")
    sizes = np.bincount(np.unique(labels, return_inverse=True)[1])
    if sizes.min() < k:
        raise RuntimeError(f"method {name!r}: a group of {sizes.min()} < k={k} records")
    return information_loss(Z, labels), seconds


def _cells(results: list[tuple[float, float] | None]) -> list[str]:
    if any(r is None for r in results):
        return ["n/a"] * (2 * len(results))
    return [f"{r[0]:.4f}" for r in results] + [f"{r[1]:.2f}" for r in results]


def _label(name: str, params: dict[str, Any]) -> str:
    def show(v: Any) -> str:
        return str(v).lower() if isinstance(v, bool) else str(v)
    return f"`{name}`" + "".join(f" `{p}={show(v)}`" for p, v in params.items())


def census_table(methods: list[str] | None = None, ks: tuple[int, ...] = KS, *,
                 log: bool = False) -> str:
    """The Markdown table: one row per method, IL and seconds for each k."""
    X, Z = load_census()
    names = list(METHODS) if methods is None else methods
    head = ["Method"] + [f"IL k={k}" for k in ks] + [f"s k={k}" for k in ks]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (2 * len(ks))) + "|"]
    for name in names:
        results = [run_method(name, X, Z, k, warm=i == 0) for i, k in enumerate(ks)]
        note = " (k = values)" if METHODS[name].output == "values" else ""
        lines.append(f"| `{name}`{note} | " + " | ".join(_cells(results)) + " |")
        if log:
            print(lines[-1], file=sys.stderr, flush=True)
    bound = [f"{lb_nn(Z, k):.4f}" for k in ks]
    lines.append("| LB_NN (lower bound) | " + " | ".join(bound + [""] * len(ks)) + " |")
    return "\n".join(lines)


def variants_table(ks: tuple[int, ...] = KS, *, log: bool = False) -> str:
    """The Markdown table of :data:`VARIANTS` (blank cells: k not run)."""
    X, Z = load_census()
    head = ["Method, parameters"] + [f"IL k={k}" for k in ks] + [f"s k={k}" for k in ks]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (2 * len(ks))) + "|"]
    for name, params, run_ks in VARIANTS:
        il, sec = [], []
        for i, k in enumerate(ks):
            if k not in run_ks:
                il.append("")
                sec.append("")
                continue
            value, seconds = run_method(name, X, Z, k, params, warm=i == 0)
            il.append(f"{value:.4f}")
            sec.append(f"{seconds:.2f}")
        lines.append(f"| {_label(name, params)} | " + " | ".join(il + sec) + " |")
        if log:
            print(lines[-1], file=sys.stderr, flush=True)
    return "\n".join(lines)


def provenance(command: str, load: tuple[float, float]) -> str:
    """One line: when, where and how the figures were measured (load: at start and end)."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (f"Measured {now} with sdc {__version__} (Python {platform.python_version()}, "
            f"{platform.platform()}, {os.cpu_count()} CPUs, load average {load[0]:.1f} at the "
            f"start and {load[1]:.1f} at the end) by `{command}`.")


def results_document(main_table: str, variants: str, command: str, load: tuple[float, float]) -> str:
    """The text of ``benchmarks/results/methods_census.md`` (and the README section)."""
    return "\n".join([
        provenance(command, load),
        "",
        main_table,
        "",
        "Other parameter settings quoted in the method docstrings (same data, seed and measure):",
        "",
        variants,
        "",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", help="comma-separated method names (default: all)")
    parser.add_argument("--k", default=",".join(map(str, KS)), help="comma-separated k values")
    parser.add_argument("--no-variants", action="store_true", help="skip the table of non-default settings")
    parser.add_argument("--write", action="store_true",
                        help=f"write both tables to {RESULTS.relative_to(ROOT)} (all methods and k only)")
    args = parser.parse_args()
    methods = args.methods.split(",") if args.methods else None
    unknown = [m for m in methods or [] if m not in METHODS]
    if unknown:
        parser.error(f"unknown method(s): {', '.join(unknown)}")
    ks = tuple(int(k) for k in args.k.split(","))
    if args.write and (methods or ks != KS or args.no_variants):
        parser.error("--write runs every method at every k with the variants; drop the other options")
    load = os.getloadavg()[0]
    table = census_table(methods, ks, log=True)
    print(table, flush=True)
    variants = ""
    if not args.no_variants:
        variants = variants_table(ks, log=True)
        print("\n" + variants, flush=True)
    if args.write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        load = (load, os.getloadavg()[0])
        text = results_document(table, variants, "python benchmarks/methods_census.py --write", load)
        RESULTS.write_text(text, encoding="utf-8")
        print(f"wrote {RESULTS.relative_to(ROOT)}; now run: python -m microagg_cli.manpages man README.md",
              file=sys.stderr)


if __name__ == "__main__":
    main()
