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
from .errors import DataError, InfeasibleError, InvalidParameterError, PrivacyCheckError
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
from .survey import mdav_available, nan_zscore, resolve_small_strata, stratify
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
    overall: dict[str, Any] = field(default_factory=dict)


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
    """Size of the class of identical rows each record belongs to (NaN equals NaN)."""
    values = np.asarray(values, dtype=np.float64)
    nan = np.isnan(values)
    key = np.hstack([np.where(nan, 0.0, values), nan.astype(np.float64)]) if nan.any() else values
    _, inverse, counts = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    return counts[inverse.reshape(-1)]


def _check_weights(weights: np.ndarray | None, n: int) -> np.ndarray | None:
    if weights is None:
        return None
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (n,):
        raise InvalidParameterError(f"weights must have one value per record ({n}), got shape {w.shape}")
    if not np.isfinite(w).all() or (w <= 0).any():
        i = int(np.flatnonzero(~(np.isfinite(w) & (w > 0)))[0])
        raise DataError(f"sampling weights must be positive and finite: row {i + 1} holds {w[i]!r}")
    return w


def protect_array(
    X: np.ndarray,
    k: int,
    *,
    method: str = "mdav",
    params: Mapping[str, Any] | None = None,
    columns: tuple[str, ...] | None = None,
    seed: int | np.random.SeedSequence = 0,
    stat: str = "mean",
    weights: np.ndarray | None = None,
    name: str = "block1",
) -> BlockResult:
    """Protect one block given as an (n, p) float matrix in original units.

    Runs the method (on z-scored data when the method asks for it), replaces records
    by their group statistic (weighted mean with ``weights``) and verifies the
    privacy invariant on the values that would be written: every class of identical
    protected rows has >= k records (per column for per-column methods). Methods
    whose k counts values (``mic1d``) are not k-anonymous by construction: their
    achieved k' is reported instead.

    NaN cells are accepted only for ``mdav`` (available-case distances, see
    :func:`microagg_cli.survey.mdav_available`); they stay missing in the output.
    """
    spec = get_method(method)
    stat = check_stat(stat)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] == 0:
        raise InvalidParameterError("a block needs at least one column")
    if np.isinf(X).any():
        raise DataError(f"block {name!r} holds infinite values")
    has_missing = bool(np.isnan(X).any())
    if has_missing and spec.name != "mdav":
        raise InvalidParameterError(
            f"block {name!r}: grouping on available values (--missing available) supports "
            f"method mdav only, not {spec.name!r}; use --missing complete"
        )
    if has_missing and np.isnan(X).all(axis=1).any():
        raise DataError(f"block {name!r}: a record has no observed value to group on")
    columns = tuple(columns) if columns is not None else tuple(f"x{j}" for j in range(X.shape[1]))
    n, p = X.shape
    w = _check_weights(weights, n)
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
        if stat != "mean" or w is not None:
            raise InvalidParameterError(
                f"block {name!r}: {spec.name} replaces values by partition means of values; "
                "--stat and --weights do not apply to it"
            )
    else:
        check_k(X, k)
    resolved = _resolve_params(spec, params or {}, columns)
    if has_missing:
        Z, mean, scale = nan_zscore(X)
        constant = ~(np.nanstd(X, axis=0) > 0)
    else:
        Z, mean, scale, constant = zscore(X)
    const_cols = [columns[j] for j in np.flatnonzero(constant)]
    for c in const_cols:
        log.warning("block %s: column %r is constant; it gets z-scale 1", name, c)
    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(int(seed))
    rng = np.random.default_rng(ss)
    t0 = time.perf_counter()
    if has_missing:
        result = mdav_available(Z, k)
    else:
        result = spec.func(Z if spec.standardize else X, k, rng=rng, **resolved)
    seconds = time.perf_counter() - t0
    labels: np.ndarray | None = None
    stats: dict[str, Any] = {}
    if spec.output == "labels":
        labels = canonical_labels(np.asarray(result))
        if labels.shape != (n,):
            raise PrivacyCheckError(f"block {name!r}: method returned labels of shape {labels.shape}")
        check_min_group_size(labels, k, where=f"block {name!r}")
        Xp = aggregate(X, labels, stat=stat, weights=w)
        stats.update(
            n_groups=int(labels.max()) + 1,
            group_size_histogram={str(s): c for s, c in size_histogram(labels).items()},
            sse=None if has_missing else sse(Z, labels),
            sst=None if has_missing else sst(Z),
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
            Xp[:, j] = aggregate(X[:, [j]], lj, stat=stat, weights=w)[:, 0]
            groups.append(int(lj.max()) + 1)
        stats.update(n_groups_per_column=dict(zip(columns, groups)))
    else:
        Xp = np.asarray(result, dtype=np.float64)
        if spec.standardize:
            Xp = Xp * scale + mean
        if Xp.shape != (n, p) or not np.isfinite(Xp).all():
            raise PrivacyCheckError(f"block {name!r}: method returned invalid values")
    # The privacy invariant, on what will be written.
    if spec.output == "labels" and has_missing:
        # Missing cells stay missing; every observed value of a group must be its
        # group's single value, so records are indistinguishable on shared attributes.
        for j in range(p):
            col = Xp[:, j]
            ok = ~np.isnan(col)
            lo = np.full(int(labels.max()) + 1, np.inf)
            hi = np.full(int(labels.max()) + 1, -np.inf)
            np.minimum.at(lo, labels[ok], col[ok])
            np.maximum.at(hi, labels[ok], col[ok])
            if (lo[np.isfinite(lo)] != hi[np.isfinite(hi)]).any():
                raise PrivacyCheckError(f"block {name!r}: group values differ in column {columns[j]!r}")
    elif spec.output == "labels":
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
    stats.update(
        il_sse=_il_sse_observed(X, Xp),
        k_prime=n / int(np.unique(np.hstack([np.nan_to_num(Xp), np.isnan(Xp)]), axis=0).shape[0]),
        k_min=int(row_sizes.min()),
        share_below_k=float((row_sizes < k).mean()) if not values_k else None,
        k_anonymous=bool(row_sizes.min() >= k) if not values_k else False,
        constant_columns=const_cols,
        seconds=seconds,
    )
    if has_missing:
        stats["missing_cells"] = int(np.isnan(X).sum())
    if values_k:
        stats["k_counts"] = "values"
        log.warning(
            "block %s: %s is not k-anonymous by construction (k counts values); achieved k' = %.3f, k_min = %d",
            name, spec.name, stats["k_prime"], stats["k_min"],
        )
    block = Block(name, columns, spec.name, int(k), resolved)
    return BlockResult(block, Xp, labels, stats)


def _il_sse_observed(X: np.ndarray, Xp: np.ndarray) -> float | None:
    """IL_SSE over the cells observed in both (the metrics spec's IL_SSE when complete)."""
    if not np.isnan(X).any() and not np.isnan(Xp).any():
        return il_sse(X, Xp)
    Z, mean, scale = nan_zscore(X)
    Zp = (Xp - mean) / scale
    both = ~np.isnan(Z) & ~np.isnan(Zp)
    if not both.any():
        return None
    total = float(np.nansum(np.where(~np.isnan(Z), (Z - np.nanmean(Z, axis=0)) ** 2, 0.0)[both]))
    return 100.0 * float(((Z - Zp)[both] ** 2).sum()) / total if total > 0 else 0.0


def _block_seed(seed: int, index: int, stratum: int | None = None) -> np.random.SeedSequence:
    """Independent, order-free stream for block ``index`` (and stratum) of a run."""
    key = (index,) if stratum is None else (index, stratum)
    return np.random.SeedSequence(int(seed), spawn_key=key)


_MISSING_POLICIES = ("error", "complete", "available")
_SMALL_STRATA_POLICIES = ("error", "merge", "suppress")


def protect_table(
    table: Table,
    plan: BlockPlan,
    *,
    seed: int = 0,
    stat: str = "mean",
    strata: list[str] | None = None,
    small_strata: str = "error",
    weights: str | None = None,
    missing: str = "error",
) -> ProtectResult:
    """Protect every block of ``plan`` in ``table``; return the output frame and stats.

    Parameters
    ----------
    strata : columns whose value combinations are strata: groups never mix strata.
    small_strata : policy for strata smaller than k: ``error`` (default), ``merge``
        (join the stratum nearest in centroid), ``suppress`` (blank its protected values).
    weights : column of positive sampling weights: group values are weighted means
        (distances and grouping are unchanged); weighted totals are preserved.
    missing : ``error`` (default), ``complete`` (records with a missing protected value
        are left out of the grouping and get all protected values of the block blanked),
        ``available`` (group on observed values; missing cells stay missing; mdav only).
    """
    plan.check(table.columns)
    if missing not in _MISSING_POLICIES:
        raise InvalidParameterError(f"unknown missing-value policy {missing!r} (use {', '.join(_MISSING_POLICIES)})")
    if small_strata not in _SMALL_STRATA_POLICIES:
        raise InvalidParameterError(
            f"unknown small-strata policy {small_strata!r} (use {', '.join(_SMALL_STRATA_POLICIES)})")
    protected = set(plan.columns)
    for role, cols in (("strata", strata or []), ("weights", [weights] if weights else [])):
        for c in cols:
            if c not in table.columns:
                raise DataError(f"{role}: no column {c!r} in the input")
            if c in protected:
                raise InvalidParameterError(f"{role} column {c!r} cannot also be protected")
            if c in plan.drop:
                raise InvalidParameterError(f"{role} column {c!r} cannot also be dropped")
    n = table.frame.shape[0]
    w = None
    if weights and check_stat(stat) != "mean":
        raise InvalidParameterError(f"--weights applies to the mean; it cannot be combined with --stat {stat}")
    if weights:
        w = numeric_matrix(table, [weights])[:, 0]
        w = _check_weights(w, n)
    key_cols = [table.frame[c].to_numpy() for c in (strata or [])]
    results = []
    num = den = 0.0
    for i, block in enumerate(plan.blocks):
        X = numeric_matrix(table, list(block.columns), allow_missing=missing != "error")
        nan = np.isnan(X)
        if missing == "complete":
            grouped = ~nan.any(axis=1)
        else:
            grouped = ~nan.all(axis=1)
        rows_grouped = np.flatnonzero(grouped)
        all_strata = stratify([c[rows_grouped] for c in key_cols] if key_cols else None, rows_grouped.size)
        Zb = nan_zscore(X[rows_grouped])[0]
        kb = block.k
        spec = get_method(block.method)
        k_rows = 1 if spec.output == "values" else kb
        resolved = resolve_small_strata(all_strata, np.nan_to_num(Zb), k_rows, small_strata)
        log.info("block %s: %s, k=%d, %d x %d, %d stratum/strata", block.name, block.method, kb,
                 X.shape[0], X.shape[1], len(resolved.keys))
        Xp = np.full_like(X, np.nan)
        labels_all = np.full(n, -1, dtype=np.int64)
        per_stratum = []
        offset = 0
        stratum_results = []
        for s_idx, (key, members) in enumerate(zip(resolved.keys, resolved.members)):
            rows = rows_grouped[members]
            sname = block.name if not strata else f"{block.name}[{'/'.join(key)}]"
            res = protect_array(
                X[rows], kb, method=block.method, params=block.params, columns=block.columns,
                seed=_block_seed(seed, i, all_strata.keys.index(key) if strata else None), stat=stat,
                weights=None if w is None else w[rows], name=sname,
            )
            Xp[rows] = res.values
            if res.labels is not None:
                labels_all[rows] = res.labels + offset
                offset += int(res.labels.max()) + 1
            stratum_results.append(res)
            if strata:
                per_stratum.append({
                    "stratum": dict(zip(strata, key)), "rows": int(rows.size),
                    "groups": res.stats.get("n_groups"), "il_sse": res.stats["il_sse"],
                    "k_prime": res.stats["k_prime"],
                })
        first = stratum_results[0]
        resolved_block = Block(block.name, block.columns, first.block.method, first.block.k, first.block.params)
        stats = _block_stats(X, Xp, labels_all, grouped, stratum_results, resolved_block, w)
        if strata:
            stats["strata"] = {
                "columns": list(strata),
                "count": len(all_strata.keys),
                "policy": small_strata,
                "merged": [{"stratum": dict(zip(strata, a)), "into": dict(zip(strata, b))}
                           for a, b in resolved.merged.items()],
                "suppressed": [{"stratum": dict(zip(strata, key)),
                                "rows": int(all_strata.members[all_strata.keys.index(key)].size)}
                               for key in resolved.suppressed],
                "per_stratum": per_stratum,
            }
        stats["missing"] = {
            "policy": missing,
            "missing_cells": int(nan.sum()),
            "records_not_grouped": int((~grouped).sum()),
            "records_suppressed": int(sum(all_strata.members[all_strata.keys.index(key)].size
                                          for key in resolved.suppressed)),
        }
        results.append(BlockResult(resolved_block, Xp, labels_all if offset else None, stats))
        bn, bd = _il_parts(X, Xp)
        num += bn
        den += bd
    out = table.frame.drop(columns=list(plan.drop)).copy()
    for res in results:
        for j, col in enumerate(res.block.columns):
            out[col] = res.values[:, j]
    overall = {"il_sse": 100.0 * num / den if den > 0 else None, "sse": num, "sst": den}
    return ProtectResult(out, results, {}, overall)


def _il_parts(X: np.ndarray, Xp: np.ndarray) -> tuple[float, float]:
    """Numerator ||Z - Z'||^2 and denominator SST of IL_SSE over cells observed in both.

    Records left out of the grouping (suppressed or not grouped) are not counted.
    """
    Z, mean, scale = nan_zscore(X)
    Zp = (Xp - mean) / scale
    both = ~np.isnan(Z) & ~np.isnan(Zp)
    dev = np.where(~np.isnan(Z), Z - np.nanmean(Z, axis=0) if (~np.isnan(Z)).any() else 0.0, 0.0)
    return float(((Z - Zp)[both] ** 2).sum()), float((dev[both] ** 2).sum())


def _block_stats(
    X: np.ndarray,
    Xp: np.ndarray,
    labels: np.ndarray,
    grouped: np.ndarray,
    parts: list[BlockResult],
    block: Block,
    w: np.ndarray | None,
) -> dict[str, Any]:
    """Block statistics over all strata, in the block's own z-scale."""
    first = parts[0].stats
    stats: dict[str, Any] = {}
    rows = np.flatnonzero(grouped & ~np.isnan(Xp).all(axis=1))
    if "n_groups" in first:
        lab = canonical_labels(labels[rows]) if rows.size else labels[rows]
        stats["n_groups"] = sum(p.stats["n_groups"] for p in parts)
        stats["group_size_histogram"] = {str(s): c for s, c in size_histogram(lab).items()} if rows.size else {}
        if not np.isnan(X).any() and rows.size:
            Z = zscore(X)[0]
            stats["sse"] = sse(Z[rows], lab)
            stats["sst"] = sst(Z)
        else:
            stats["sse"] = stats["sst"] = None
    elif "n_groups_per_column" in first:
        stats["n_groups_per_column"] = {c: sum(p.stats["n_groups_per_column"][c] for p in parts)
                                        for c in block.columns}
    sizes = _row_class_sizes(Xp[rows]) if rows.size else np.array([0])
    n_classes = int(np.unique(np.hstack([np.nan_to_num(Xp[rows]), np.isnan(Xp[rows])]), axis=0).shape[0]) if rows.size else 0
    values_k = "k_counts" in first
    stats.update(
        il_sse=_il_sse_observed(X[rows], Xp[rows]) if rows.size else None,
        k_prime=(rows.size / n_classes) if n_classes else None,
        k_min=int(sizes.min()),
        share_below_k=None if values_k else float((sizes < block.k).mean()),
        k_anonymous=False if values_k else bool(sizes.min() >= block.k),
        constant_columns=sorted({c for p in parts for c in p.stats["constant_columns"]}),
        seconds=sum(p.stats["seconds"] for p in parts),
    )
    if values_k:
        stats["k_counts"] = "values"
    if w is not None:
        totals = {}
        for j, col in enumerate(block.columns):
            ok = ~np.isnan(X[:, j])
            before = float(np.sum(w[ok] * X[ok, j]))
            okp = ~np.isnan(Xp[:, j])
            after = float(np.sum(w[okp] * Xp[okp, j]))
            totals[col] = {"before": before, "after": after,
                           "relative_difference": (after - before) / abs(before) if before else None}
        stats["weighted_totals"] = totals
    return stats


#: spawn key of the output-hygiene stream (block streams use (index,) keys < 2**20).
_HYGIENE_KEY = (2**31 - 1,)


def _output_hygiene(result: ProtectResult, *, seed: int, shuffle_rows: bool, id_column: str | None) -> dict[str, Any]:
    """Shuffle rows and/or regenerate ids in ``result.frame`` (seeded); describe it."""
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=_HYGIENE_KEY))
    frame = result.frame
    n = frame.shape[0]
    if shuffle_rows:
        frame = frame.iloc[rng.permutation(n)].reset_index(drop=True)
    if id_column is not None:
        ids = rng.permutation(n) + 1
        frame[id_column] = ids.astype(str) if frame[id_column].dtype == object else ids
    result.frame = frame
    return {"rows_shuffled": bool(shuffle_rows), "ids_regenerated": id_column}


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
        "overall": dict(result.overall),
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
    decimal: str = ".",
    strata: list[str] | None = None,
    small_strata: str = "error",
    weights: str | None = None,
    missing: str = "error",
    shuffle_rows: bool = False,
    id_column: str | None = None,
    regenerate_ids: bool = False,
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
    decimal : decimal mark of CSV input and output (``","`` for European CSV).
    strata, small_strata, weights, missing : see :func:`protect_table`.
    shuffle_rows : write the rows in a seeded random order, so that the output order
        does not reveal the groups.
    id_column, regenerate_ids : replace the identifier column with fresh random ids
        (a seeded permutation of 1..n), breaking the link to the original ids.

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
    if decimal not in (".", ","):
        raise InvalidParameterError(f"decimal mark must be '.' or ',', got {decimal!r}")
    if regenerate_ids and not id_column:
        raise InvalidParameterError("--regenerate-ids needs --id-column COL")
    table = read_table(input, fmt=in_fmt, delimiter=delimiter, decimal=decimal)
    if decimal == "," and table.delimiter == ",":
        raise InvalidParameterError("with --decimal , the CSV delimiter cannot be ','; use ';'")
    if plan is None:
        get_method(method)
        if k is None:
            raise InvalidParameterError("k is required (-k K)")
        protected, dropped = resolve_columns(table, columns, drop)
        plan = BlockPlan.single(protected, method=method, k=k, params=params or {}, drop=tuple(dropped))
    if id_column is not None:
        if id_column not in table.columns:
            raise DataError(f"--id-column: no column {id_column!r} in the input")
        if id_column in plan.columns or id_column in plan.drop:
            raise InvalidParameterError(f"--id-column {id_column!r} cannot be protected or dropped")
    result = protect_table(table, plan, seed=seed, stat=stat, strata=strata, small_strata=small_strata,
                           weights=weights, missing=missing)
    hygiene = _output_hygiene(result, seed=seed, shuffle_rows=shuffle_rows,
                              id_column=id_column if regenerate_ids else None)
    rep = build_report(
        table, plan, result, seed=seed, stat=stat,
        output=None if out_path is None else out_path.name,
        seconds=time.perf_counter() - t0,
    )
    rep["parameters"].update(strata=list(strata or []), small_strata=small_strata, weights=weights,
                             missing=missing, decimal=decimal)
    rep["output_hygiene"] = hygiene
    write_table(
        result.frame, out_path, fmt=out_fmt, force=force,
        delimiter=table.delimiter if out_fmt == "csv" and table.fmt == "csv" else ",",
        decimal=decimal,
    )
    if report is not None:
        rep["timing"]["seconds"] = time.perf_counter() - t0
        write_json(rep, rep_path, force=force)
    result.report = rep
    return rep
