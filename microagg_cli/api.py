"""Library API: protect microdata files and in-memory tables. No printing here.

Examples
--------
>>> import microagg_cli as sdc                                    # doctest: +SKIP
>>> report = sdc.protect("census.csv", "protected.csv", k=3)      # doctest: +SKIP
>>> report["blocks"][0]["il_sse"]                                 # doctest: +SKIP
5.6922...
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from . import __version__
from .blocking import Block, BlockPlan
from .errors import InfeasibleError, InvalidParameterError, PrivacyCheckError
from .io import (
    Table,
    check_output_path,
    detect_format,
    file_fingerprint,
    numeric_matrix,
    read_table,
    resolve_columns,
    write_json,
    write_table,
)
from .methods import MethodSpec, get_method
from .methods._common import check_k
from .metrics import il_sse
from .partition import (
    aggregate,
    canonical_labels,
    check_min_group_size,
    size_histogram,
    sse,
    sst,
    zscore,
)

__all__ = ["BlockResult", "ProtectResult", "protect_table", "protect", "protect_array", "REPORT_SCHEMA_VERSION"]

log = logging.getLogger("microagg_cli")

#: Version of the JSON report layout; bumped on any incompatible change.
REPORT_SCHEMA_VERSION = "1.0"

_STATS = ("mean", "median")


@dataclass
class BlockResult:
    """What protecting one block produced (protected values in original units)."""

    block: Block
    values: np.ndarray
    labels: np.ndarray | None
    stats: dict[str, Any] = field(default_factory=dict)


@dataclass
class ProtectResult:
    """Protected table plus the report (a JSON-ready dict)."""

    frame: pd.DataFrame
    blocks: list[BlockResult]
    report: dict[str, Any]


def check_stat(stat: str) -> str:
    """Validate an aggregation statistic: ``mean``, ``median`` or ``trimmed:P``."""
    if stat in _STATS:
        return stat
    if stat.startswith("trimmed:"):
        try:
            prop = float(stat.split(":", 1)[1])
        except ValueError:
            prop = -1.0
        if 0 <= prop < 0.5:
            return stat
    raise InvalidParameterError(f"unknown statistic {stat!r} (use mean, median or trimmed:P with 0 <= P < 0.5)")


def _resolve_params(spec: MethodSpec, params: Mapping[str, Any], columns: tuple[str, ...]) -> dict[str, Any]:
    """Validate parameters; turn ``pv:COLUMN_NAME`` into ``pv:POSITION`` in the block."""
    values = spec.validate_params(dict(params))
    for p in spec.params:
        v = values.get(p.name)
        if p.choices and "pv:" in p.choices and isinstance(v, str) and v.startswith("pv:"):
            ref = v[3:]
            if ref in columns:
                values[p.name] = f"pv:{columns.index(ref)}"
            elif ref.isdigit() and int(ref) < len(columns):
                values[p.name] = f"pv:{int(ref)}"
            else:
                raise InvalidParameterError(
                    f"{spec.name}: parameter {p.name!r}: {ref!r} is not a column of the block "
                    f"({', '.join(columns)})"
                )
    return values


def _row_class_sizes(values: np.ndarray) -> np.ndarray:
    """Size of the class of identical rows each record belongs to."""
    _, inverse, counts = np.unique(values, axis=0, return_inverse=True, return_counts=True)
    return counts[inverse.reshape(-1)]


def protect_array(
    X: np.ndarray,
    k: int,
    *,
    method: str = "mdav",
    params: Mapping[str, Any] | None = None,
    columns: tuple[str, ...] | None = None,
    seed: int | np.random.SeedSequence = 0,
    stat: str = "mean",
    name: str = "block1",
) -> BlockResult:
    """Protect one block given as an (n, p) float matrix in original units.

    Runs the method (on z-scored data when the method asks for it), replaces records
    by their group statistic and verifies the privacy invariant on the values that
    would be written: every class of identical protected rows has >= k records
    (per column for per-column methods). Methods whose k counts values (``mic1d``)
    are not k-anonymous by construction: their achieved k' is reported instead.
    """
    spec = get_method(method)
    stat = check_stat(stat)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] == 0:
        raise InvalidParameterError("a block needs at least one column")
    if not np.isfinite(X).all():
        raise InvalidParameterError("the block holds NaN or infinite values")
    columns = tuple(columns) if columns is not None else tuple(f"x{j}" for j in range(X.shape[1]))
    n, p = X.shape
    if spec.max_columns is not None and p > spec.max_columns:
        raise InvalidParameterError(
            f"block {name!r}: method {spec.name!r} takes at most {spec.max_columns} column(s), got {p}"
        )
    values_k = spec.output == "values"
    if values_k:
        if isinstance(k, bool) or int(k) != k or k < 2:
            raise InvalidParameterError(f"k must be an integer >= 2, got {k!r}")
        if k > n * p:
            raise InfeasibleError(f"block {name!r}: k={k} values exceeds the {n * p} values of the block")
    else:
        check_k(X, k)
    resolved = _resolve_params(spec, params or {}, columns)
    Z, mean, scale, constant = zscore(X)
    const_cols = [columns[j] for j in np.flatnonzero(constant)]
    for c in const_cols:
        log.warning("block %s: column %r is constant; it gets z-scale 1", name, c)
    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(int(seed))
    rng = np.random.default_rng(ss)
    data = Z if spec.standardize else X
    t0 = time.perf_counter()
    result = spec.func(data, k, rng=rng, **resolved)
    seconds = time.perf_counter() - t0
    labels: np.ndarray | None = None
    stats: dict[str, Any] = {}
    if spec.output == "labels":
        labels = canonical_labels(np.asarray(result))
        if labels.shape != (n,):
            raise PrivacyCheckError(f"block {name!r}: method returned labels of shape {labels.shape}")
        check_min_group_size(labels, k, where=f"block {name!r}")
        Xp = aggregate(X, labels, stat=stat)
        stats.update(
            n_groups=int(labels.max()) + 1,
            group_size_histogram={str(s): c for s, c in size_histogram(labels).items()},
            sse=sse(Z, labels),
            sst=sst(Z),
        )
    elif spec.output == "column_labels":
        L = np.asarray(result)
        if L.shape != (n, p):
            raise PrivacyCheckError(f"block {name!r}: method returned labels of shape {L.shape}")
        Xp = np.empty_like(X)
        groups = []
        for j in range(p):
            lj = canonical_labels(L[:, j])
            check_min_group_size(lj, k, where=f"block {name!r}, column {columns[j]!r}")
            Xp[:, j] = aggregate(X[:, [j]], lj, stat=stat)[:, 0]
            groups.append(int(lj.max()) + 1)
        stats.update(n_groups_per_column=dict(zip(columns, groups)))
    else:
        Xp = np.asarray(result, dtype=np.float64)
        if spec.standardize:
            Xp = Xp * scale + mean
        if Xp.shape != (n, p) or not np.isfinite(Xp).all():
            raise PrivacyCheckError(f"block {name!r}: method returned invalid values")
    # The privacy invariant, on what will be written.
    if spec.output == "labels":
        sizes = _row_class_sizes(Xp)
        if sizes.min() < k:
            raise PrivacyCheckError(
                f"block {name!r}: {int((sizes < k).sum())} protected rows fall in classes "
                f"smaller than k={k}; nothing was written"
            )
    elif spec.output == "column_labels":
        for j in range(p):
            sizes = _row_class_sizes(Xp[:, [j]])
            if sizes.min() < k:
                raise PrivacyCheckError(
                    f"block {name!r}, column {columns[j]!r}: values in classes smaller than k={k}"
                )
    row_sizes = _row_class_sizes(Xp)
    n_classes = int(np.unique(Xp, axis=0).shape[0])
    stats.update(
        il_sse=il_sse(X, Xp),
        k_prime=n / n_classes,
        k_min=int(row_sizes.min()),
        share_below_k=float((row_sizes < (k if not values_k else 2)).mean()),
        k_anonymous=bool(row_sizes.min() >= k) if not values_k else bool(row_sizes.min() >= 2),
        constant_columns=const_cols,
        seconds=seconds,
    )
    if values_k:
        stats["k_counts"] = "values"
        log.warning(
            "block %s: %s is not k-anonymous by construction (k counts values); achieved k' = %.3f, k_min = %d",
            name, spec.name, stats["k_prime"], stats["k_min"],
        )
    block = Block(name, columns, spec.name, int(k), resolved)
    return BlockResult(block, Xp, labels, stats)


def _block_seed(seed: int, index: int) -> np.random.SeedSequence:
    """Independent, order-free stream for block ``index`` of a run seeded ``seed``."""
    return np.random.SeedSequence(int(seed), spawn_key=(index,))


def protect_table(
    table: Table,
    plan: BlockPlan,
    *,
    seed: int = 0,
    stat: str = "mean",
) -> ProtectResult:
    """Protect every block of ``plan`` in ``table``; return the output frame and report."""
    plan.check(table.columns)
    results = []
    for i, block in enumerate(plan.blocks):
        X = numeric_matrix(table, list(block.columns))
        log.info("block %s: %s, k=%d, %d x %d", block.name, block.method, block.k, *X.shape)
        results.append(
            protect_array(
                X, block.k, method=block.method, params=block.params, columns=block.columns,
                seed=_block_seed(seed, i), stat=stat, name=block.name,
            )
        )
    out = table.frame.drop(columns=list(plan.drop)).copy()
    for res in results:
        for j, col in enumerate(res.block.columns):
            out[col] = res.values[:, j]
    return ProtectResult(out, results, {})


def _method_entry(name: str) -> dict[str, str]:
    spec = get_method(name)
    return {"name": spec.name, "summary": spec.summary, "reference": spec.reference}


def build_report(
    table: Table,
    plan: BlockPlan,
    result: ProtectResult,
    *,
    seed: int,
    stat: str,
    output: str | None,
    seconds: float,
) -> dict[str, Any]:
    """The JSON report of a protect run (schema ``REPORT_SCHEMA_VERSION``).

    Contains no original value of a protected attribute: only sizes, losses and
    counts.
    """
    protected = plan.columns
    passthrough = [c for c in table.columns if c not in protected and c not in plan.drop]
    total_sse = sum(r.stats.get("sse", 0.0) for r in result.blocks)
    total_sst = sum(r.stats.get("sst", 0.0) for r in result.blocks)
    blocks = []
    for r in result.blocks:
        entry = {
            "name": r.block.name,
            "columns": list(r.block.columns),
            "method": _method_entry(r.block.method),
            "k": r.block.k,
            "params": dict(r.block.params),
        }
        entry.update(r.stats)
        blocks.append(entry)
    fp = file_fingerprint(table.path)
    return {
        "schema_version": REPORT_SCHEMA_VERSION,
        "tool": {"name": "sdc", "distribution": "microagg-cli", "version": __version__},
        "command": "protect",
        "input": {**fp, "format": table.fmt, "rows": int(table.frame.shape[0]),
                  "columns": int(table.frame.shape[1])},
        "output": {"name": output, "rows": int(result.frame.shape[0]),
                   "columns": int(result.frame.shape[1])},
        "columns": {"protected": protected, "dropped": list(plan.drop), "passthrough": passthrough},
        "parameters": {"seed": seed, "stat": stat, "distance": "euclidean on z-scored attributes (population sd)"},
        "privacy_check": {
            "passed": True,
            "rule": "every class of identical protected rows in each block has at least k records",
        },
        "blocks": blocks,
        "overall": {
            "il_sse": 100.0 * total_sse / total_sst if total_sst > 0 else None,
            "sse": total_sse,
            "sst": total_sst,
        },
        "timing": {"seconds": seconds},
    }


def protect(
    input: str | Path,
    output: str | Path,
    *,
    k: int | None = None,
    method: str = "mdav",
    params: Mapping[str, Any] | None = None,
    columns: list[str] | None = None,
    drop: list[str] | None = None,
    plan: BlockPlan | None = None,
    report: str | Path | None = None,
    seed: int = 0,
    stat: str = "mean",
    force: bool = False,
    input_format: str | None = None,
    output_format: str | None = None,
    delimiter: str | None = None,
) -> dict[str, Any]:
    """Protect a file: read, microaggregate each block, check, write atomically.

    Parameters
    ----------
    input, output : paths (CSV or Parquet by extension; ``output="-"`` = CSV on stdout).
    k : minimum group size (required unless ``plan`` gives it per block).
    method, params : method name and its parameters (see ``sdc protect --list-methods``).
    columns : protected columns (one block); default every numeric column not dropped.
    drop : identifier columns removed from the output.
    plan : a :class:`BlockPlan` instead of ``columns``/``method``/``k``.
    report : path of the JSON report (``"-"`` = stdout), or None.
    seed : run seed; each block gets its own stream keyed by its position.
    force : replace existing output/report files.

    Returns
    -------
    The report (dict), also written to ``report`` when given.
    """
    t0 = time.perf_counter()
    in_fmt = detect_format(input, input_format)
    out_fmt = detect_format(output, output_format)
    stat = check_stat(stat)
    src = None if str(input) == "-" else Path(input)
    out_path = check_output_path(output, force=force, inputs=(src,))
    rep_path = None
    if report is not None:
        rep_path = check_output_path(report, force=force, inputs=(src,), what="report")
        if out_path is not None and rep_path is not None and rep_path.resolve() == out_path.resolve():
            raise InvalidParameterError("the report and the output are the same file")
        if out_path is None and rep_path is None:
            raise InvalidParameterError("the output and the report cannot both go to stdout")
    table = read_table(input, fmt=in_fmt, delimiter=delimiter)
    if plan is None:
        get_method(method)
        if k is None:
            raise InvalidParameterError("k is required (-k K)")
        protected, dropped = resolve_columns(table, columns, drop)
        plan = BlockPlan.single(protected, method=method, k=k, params=params or {}, drop=tuple(dropped))
    result = protect_table(table, plan, seed=seed, stat=stat)
    rep = build_report(
        table, plan, result, seed=seed, stat=stat,
        output=None if out_path is None else out_path.name,
        seconds=time.perf_counter() - t0,
    )
    write_table(
        result.frame, out_path, fmt=out_fmt, force=force,
        delimiter=table.delimiter if out_fmt == "csv" and table.fmt == "csv" else ",",
    )
    if report is not None:
        rep["timing"]["seconds"] = time.perf_counter() - t0
        write_json(rep, rep_path, force=force)
    result.report = rep
    return rep
