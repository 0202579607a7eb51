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
from typing import Any, Callable, Iterable, Iterator, Mapping

import numpy as np
import pandas as pd

from . import audit
from ._version import __version__
from .blocking import Block, BlockPlan
from .errors import DataError, InfeasibleError, InvalidParameterError, PrivacyCheckError
from .io import (
    Table,
    OutputSet,
    check_output_path,
    detect_format,
    file_fingerprint,
    missing_mask,
    numeric_matrix,
    read_table,
    resolve_columns,
    write_json,
    write_table,
)
from .methods import MethodSpec, get_method
from .methods._common import check_k
from .metrics import il_sse, lb_nn
from .partitioning import split_indices
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
REPORT_SCHEMA_VERSION = "1.1"

_STATS = ("mean", "median", "onestep")


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
    """Validate an aggregation statistic: ``mean``, ``median``, ``onestep`` or ``trimmed:P``."""
    if stat in _STATS:
        return stat
    if stat.startswith("trimmed:"):
        try:
            prop = float(stat.split(":", 1)[1])
        except ValueError:
            prop = -1.0
        if 0 <= prop < 0.5:
            return stat
    raise InvalidParameterError(
        f"unknown statistic {stat!r} (use mean, median, onestep or trimmed:P with 0 <= P < 0.5)")


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


def _row_classes(values: np.ndarray) -> tuple[np.ndarray, int]:
    """(size of the class of identical rows of each record, number of classes).

    NaN equals NaN here (a missing cell is a value the intruder sees).
    """
    values = np.asarray(values, dtype=np.float64)
    nan = np.isnan(values)
    key = np.hstack([np.where(nan, 0.0, values), nan.astype(np.float64)]) if nan.any() else values
    _, inverse, counts = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    return counts[inverse.reshape(-1)], int(counts.size)


def _row_class_sizes(values: np.ndarray) -> np.ndarray:
    """Size of the class of identical rows each record belongs to (NaN equals NaN)."""
    return _row_classes(values)[0]


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
    scaling: tuple[np.ndarray, np.ndarray] | None = None,
) -> BlockResult:
    """Protect one block given as an (n, p) float matrix in original units.

    ``scaling=(mean, scale)`` z-scores with given figures instead of the block's own
    (the partitioned mode hands every part the scaling of its whole block, so that
    distances mean the same in every part); constant-column warnings are then the
    caller's.

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
    if scaling is not None:
        mean, scale = (np.asarray(a, dtype=np.float64) for a in scaling)
        Z = (X - mean) / scale
        constant = np.zeros(p, dtype=bool)
    elif has_missing:
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
    row_sizes, n_classes = _row_classes(Xp)
    stats.update(
        il_sse=_il_sse_observed(X, Xp),
        k_prime=n / n_classes,
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
    partition_size: int | None = None,
    strata_missing: str = "error",
) -> ProtectResult:
    """Protect every block of ``plan`` in ``table``; return the output frame and stats.

    Parameters
    ----------
    strata : columns whose value combinations are strata: groups never mix strata.
    strata_missing : an empty or NA stratum value: ``error`` (default, exit code 3,
        counts per column) or ``own`` (the missing value forms a stratum on purpose).
    small_strata : policy for strata smaller than k: ``error`` (default), ``merge``
        (join the stratum nearest in centroid), ``suppress`` (blank its protected values).
    weights : column of positive sampling weights: group values are weighted means
        (distances and grouping are unchanged); weighted totals are preserved.
    missing : ``error`` (default), ``complete`` (records with a missing protected value
        are left out of the grouping and get all protected values of the block blanked),
        ``available`` (group on observed values; missing cells stay missing; mdav only).
    partition_size : partitioned mode for files beyond exact reach: a block (stratum)
        with more records is cut into locality-preserving parts of at most this many
        records (:func:`microagg_cli.partitioning.split_indices`), each protected on its
        own with the block's z-scaling and its own seed; the extra information loss
        against one exact run is estimated on two neighbouring parts and reported.
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
    if strata_missing not in ("error", "own"):
        raise InvalidParameterError(f"unknown --strata-missing policy {strata_missing!r} (use error or own)")
    strata_missing_counts = {c: int(missing_mask(table, c).sum()) for c in (strata or [])}
    if strata_missing == "error" and any(strata_missing_counts.values()):
        counts = ", ".join(f"{c}: {m}" for c, m in strata_missing_counts.items() if m)
        raise DataError(f"--strata: missing stratum values ({counts}); fix them, or give --strata-missing own "
                        "to make the missing value a stratum of its own")
    results = []
    il_parts = []
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
            res = _protect_rows(
                X[rows], block, seed=_block_seed(seed, i, all_strata.keys.index(key) if strata else None),
                stat=stat, weights=None if w is None else w[rows], name=sname, partition_size=partition_size,
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
                "missing_policy": strata_missing,
                "missing_values": strata_missing_counts,
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
        il_parts.append(_il_parts(X, Xp))
    out = table.frame.drop(columns=list(plan.drop)).copy()
    for res in results:
        for j, col in enumerate(res.block.columns):
            out[col] = res.values[:, j]
    overall = _overall(results, il_parts)
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


def _part_task(X: np.ndarray, k: int, entropy: Any, spawn_key: tuple[int, ...], weights: np.ndarray | None,
               name: str, scaling: tuple[np.ndarray, np.ndarray] | None, kwargs: dict[str, Any]) -> BlockResult:
    """Protect one part (a task: runs in this process or on a Dask worker)."""
    seed = np.random.SeedSequence(entropy, spawn_key=tuple(spawn_key))
    return protect_array(X, k, seed=seed, weights=weights, name=name, scaling=scaling, **kwargs)


def _check_task(X: np.ndarray, block: Block, parts: list[np.ndarray], entropy: Any, spawn_key: tuple[int, ...],
                stat: str, partition_size: int) -> dict[str, Any]:
    """The partitioned mode's extra-IL check on the union of two parts (a task)."""
    seed = np.random.SeedSequence(entropy, spawn_key=tuple(spawn_key))
    return _partition_check(X, block, parts, seed=seed, stat=stat, partition_size=partition_size)


_Call = tuple[Callable[..., Any], tuple[Any, ...]]


class LocalRunner:
    """Runs calls one after the other in this process (the default runner; the Dask
    engine's runner in :mod:`microagg_cli.engines` has the same two methods)."""

    name = "local"

    def run(self, calls: Iterable[_Call], on_result: Callable[[int, Any], None]) -> None:
        for j, (func, args) in enumerate(calls):
            on_result(j, func(*args))

    def describe(self) -> dict[str, Any]:
        return {"name": "local"}


def _protect_rows(
    X: np.ndarray,
    block: Block,
    *,
    seed: np.random.SeedSequence,
    stat: str,
    weights: np.ndarray | None,
    name: str,
    partition_size: int | None,
    check: bool = True,
    runner: Any = None,
    progress: Callable[[int], None] | None = None,
) -> BlockResult:
    """Protect the rows of one block (one stratum), in parts when they are too many.

    Part j is seeded by ``SeedSequence(entropy, spawn_key + (j,))``: its stream depends
    on the part id only, never on the processing order. The parts (and the extra-IL
    check, first: it is the longest task) are run by ``runner`` (:class:`LocalRunner`
    by default, or the Dask engine's), which may finish them in any order; the result
    does not depend on it. ``progress`` is told the rows of every finished part.
    """
    runner = runner or LocalRunner()
    kwargs = dict(method=block.method, params=block.params, columns=block.columns, stat=stat)
    n = X.shape[0]
    spawn = tuple(seed.spawn_key)
    if not partition_size or n <= partition_size:
        box: list[BlockResult] = []
        runner.run([(_part_task, (X, block.k, seed.entropy, spawn, weights, name, None, kwargs))],
                   lambda j, r: box.append(r))
        if progress:
            progress(n)
        return box[0]
    spec = get_method(block.method)
    k_rows = 2 if spec.output == "values" else block.k
    Z, mean, scale = nan_zscore(X)
    parts = split_indices(np.nan_to_num(Z, copy=False), partition_size, k_rows)
    del Z
    values = np.empty_like(X)
    labels = np.full(n, -1, dtype=np.int64) if spec.output == "labels" else None
    results: list[Any] = [None] * len(parts)
    checked: dict[str, Any] = {}
    sample = np.sort(np.concatenate(parts[:2]))
    sample_parts = [np.searchsorted(sample, p) for p in parts[:2]]

    def calls() -> Iterator[_Call]:
        if check:
            yield _check_task, (X[sample], block, sample_parts, seed.entropy, spawn, stat, int(partition_size))
        for j, rows in enumerate(parts):
            yield _part_task, (X[rows], block.k, seed.entropy, spawn + (j,),
                               None if weights is None else weights[rows], f"{name}#part{j + 1}",
                               (mean, scale), kwargs)

    def on_result(i: int, res: Any) -> None:
        if check and i == 0:
            checked.update(res)
            return
        j = i - 1 if check else i
        values[parts[j]] = res.values
        res.values = None  # the values live in ``values`` now
        results[j] = res
        if progress:
            progress(int(parts[j].size))

    runner.run(calls(), on_result)
    offset = 0
    if labels is not None:
        for rows, res in zip(parts, results):
            labels[rows] = res.labels + offset
            offset += int(res.labels.max()) + 1
    stats = dict(results[0].stats)
    if labels is not None:
        stats["n_groups"] = offset
    stats["seconds"] = sum(r.stats["seconds"] for r in results)
    stats["il_sse"] = _il_sse_observed(X, values)
    stats["partitions"] = {"size": int(partition_size), "count": len(parts),
                           "smallest": int(min(p.size for p in parts)), "largest": int(max(p.size for p in parts))}
    if check:
        stats["partition_check"] = checked
    return BlockResult(results[0].block, values, labels, stats)


def _partition_check(
    X: np.ndarray, block: Block, parts: list[np.ndarray], *, seed: np.random.SeedSequence, stat: str,
    partition_size: int,
) -> dict[str, Any]:
    """Extra IL of the partitioned mode against one exact run, on a local sample.

    The sample is the union of the first two parts (neighbours in the splitting tree,
    at most 2 x ``partition_size`` records, the density of the real run): it is
    protected once exactly and once cut by the same rule, and the relative difference
    of IL_SSE estimates what partitioning costs (the loss is made at part borders).
    """
    rows = np.sort(np.concatenate(parts[:2]))
    Xs = X[rows]
    exact = protect_array(Xs, block.k, method=block.method, params=block.params, columns=block.columns,
                          seed=seed, stat=stat, name="partition-check")
    parted = _protect_rows(Xs, block, seed=seed, stat=stat, weights=None, name="partition-check",
                           partition_size=partition_size, check=False)
    il_exact = exact.stats["il_sse"]
    il_part = parted.stats["il_sse"]
    return {
        "sample": "union of the first two parts (one part border: a lower-side estimate)",
        "sample_rows": int(rows.size),
        "sample_parts": int(parted.stats.get("partitions", {}).get("count", 1)),
        "il_sse_exact": il_exact,
        "il_sse_partitioned": il_part,
        "relative_extra_il": (il_part - il_exact) / il_exact if il_exact else None,
    }


#: Largest block (records) whose lower bound LB_NN a protect report computes: the exact
#: nearest-neighbour query grows faster than MDAV on spread-out data (10 Gaussian
#: columns, k=3: 6 s at 100,000 records against 3 s for MDAV; over 10 minutes at
#: 1,000,000). ``sdc evaluate`` computes it for any size.
LB_MAX_ROWS = 200_000


def _optimality(X: np.ndarray, k: int, il: float | None) -> dict[str, Any]:
    """LB_NN of a block's records (metrics spec) and the gap IL_SSE - LB_NN.

    LB_NN bounds the IL_SSE of *every* k-partition of the block's records (strata only
    make the best achievable IL larger), so the gap is how far the method can at most
    be from the optimum.
    """
    if X.shape[0] > LB_MAX_ROWS:
        return {"lb_nn": None, "optimality_gap": None,
                "lb_nn_skipped": f"more than {LB_MAX_ROWS:,} records; sdc evaluate computes it"}
    lb = lb_nn(X, k)
    return {"lb_nn": lb, "optimality_gap": None if lb is None or il is None else il - lb}


def _overall(results: list[BlockResult], parts: list[tuple[float, float]]) -> dict[str, Any]:
    """The file's IL_SSE over all blocks, with LB_NN and the gap when every block has one.

    The pooled IL z-scores each block over all its records, a block's LB_NN over the
    records it grouped: the two scales agree (and the pooled bound is valid) only when
    no stratum was suppressed, so otherwise there is no overall bound.
    """
    num = sum(bn for bn, _ in parts)
    den = sum(bd for _, bd in parts)
    out: dict[str, Any] = {"il_sse": 100.0 * num / den if den > 0 else None, "sse": num, "sst": den}
    lbs = [r.stats.get("lb_nn") for r in results]
    whole = all(r.stats.get("missing", {}).get("records_suppressed", 0) == 0 for r in results)
    if den > 0 and lbs and whole and all(lb is not None for lb in lbs):
        out["lb_nn"] = sum(lb * bd for lb, (_, bd) in zip(lbs, parts)) / den
        out["optimality_gap"] = out["il_sse"] - out["lb_nn"]
    return out


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
    for key in ("partitions", "partition_check"):
        if key in first:
            stats[key] = first[key] if len(parts) == 1 else [p.stats.get(key) for p in parts]
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
    Xp_rows = Xp if rows.size == Xp.shape[0] else Xp[rows]  # no copy when every row is in
    sizes, n_classes = _row_classes(Xp_rows) if rows.size else (np.array([0]), 0)
    values_k = "k_counts" in first
    stats.update(
        il_sse=(_il_sse_observed(X if rows.size == X.shape[0] else X[rows], Xp_rows) if rows.size else None),
        k_prime=(rows.size / n_classes) if n_classes else None,
        k_min=int(sizes.min()),
        share_below_k=None if values_k else float((sizes < block.k).mean()),
        k_anonymous=False if values_k else bool(sizes.min() >= block.k),
        constant_columns=sorted({c for p in parts for c in p.stats["constant_columns"]}),
        seconds=sum(p.stats["seconds"] for p in parts),
    )
    if values_k:
        stats["k_counts"] = "values"
    if stats.get("sse") is not None:
        stats.update(_optimality(X if rows.size == X.shape[0] else X[rows], block.k, stats["il_sse"]))
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
            "reproducibility": (audit.NOT_REPRODUCIBLE + " (time_budget)" if audit.time_bounded(r.block.params)
                                else "same data, parameters and seed: same output"),
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
    passthrough: list[str] | None = None,
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
    strata_missing: str = "error",
    weights: str | None = None,
    missing: str = "error",
    shuffle_rows: bool = False,
    id_column: str | None = None,
    regenerate_ids: bool = False,
    evaluate_risk: bool = False,
    partition_size: int | None = None,
    engine: str | None = None,
    scheduler: Any = None,
) -> dict[str, Any]:
    """Protect a file: read, microaggregate each block, check, write atomically.

    Parameters
    ----------
    input, output : paths (CSV or Parquet by extension; ``output="-"`` = CSV on stdout).
    k : minimum group size (required unless ``plan`` gives it per block).
    method, params : method name and its parameters (see ``sdc protect --list-methods``).
    columns : protected columns (one block); default every numeric column not dropped.
    drop : identifier columns removed from the output.
    passthrough : columns released unchanged on purpose. With the default selection a
        column that is mostly but not entirely numeric is an error (a typo must not
        release a numeric attribute in clear) unless it is dropped or passed through.
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
    partition_size : partitioned mode (see :func:`protect_table`).
    engine, scheduler : ``"local"`` or ``"dask"``: stream Parquet in two passes
        (:mod:`microagg_cli.engines`), the parts run here or as Dask tasks on the
        cluster at ``scheduler`` (default: a local cluster). A Parquet dataset
        directory as ``input`` is always streamed (locally unless ``engine="dask"``).
    evaluate_risk : add the full risk and utility section of ``sdc evaluate`` (intruder
        scenarios over the blocks, DLD/PLD/ID, k', DR, score) as ``report["evaluation"]``.

    Returns
    -------
    The report (dict), also written to ``report`` when given.
    """
    if plan is not None and passthrough:
        plan = plan.with_passthrough(passthrough)
    if engine is not None or scheduler is not None or (str(input) != "-" and Path(input).is_dir()):
        from .engines import protect_streaming

        return protect_streaming(
            input, output, k=k, method=method, params=params, columns=columns, drop=drop, plan=plan,
            passthrough=passthrough,
            report=report, seed=seed, stat=stat, force=force, input_format=input_format,
            output_format=output_format, strata=strata, small_strata=small_strata, weights=weights,
            missing=missing, shuffle_rows=shuffle_rows, id_column=id_column, regenerate_ids=regenerate_ids,
            evaluate_risk=evaluate_risk, partition_size=partition_size, engine=engine or "local",
            scheduler=scheduler,
        )
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
        roles = list(strata or []) + [c for c in (weights, id_column) if c]
        protected, dropped = resolve_columns(table, columns, drop, passthrough, roles=roles)
        plan = BlockPlan.single(protected, method=method, k=k, params=params or {}, drop=tuple(dropped),
                                passthrough=tuple(passthrough or ()))
    if id_column is not None:
        if id_column not in table.columns:
            raise DataError(f"--id-column: no column {id_column!r} in the input")
        if id_column in plan.columns or id_column in plan.drop:
            raise InvalidParameterError(f"--id-column {id_column!r} cannot be protected or dropped")
    result = protect_table(table, plan, seed=seed, stat=stat, strata=strata, small_strata=small_strata,
                           weights=weights, missing=missing, partition_size=partition_size,
                           strata_missing=strata_missing)
    evaluation = evaluate_protected(table, plan, result, seed=seed) if evaluate_risk else None
    hygiene = _output_hygiene(result, seed=seed, shuffle_rows=shuffle_rows,
                              id_column=id_column if regenerate_ids else None)
    rep = build_report(
        table, plan, result, seed=seed, stat=stat,
        output=None if out_path is None else out_path.name,
        seconds=time.perf_counter() - t0,
    )
    rep["parameters"].update(partition_size=partition_size, plan=plan.source.name if getattr(plan, "source", None) else None,
                             strata=list(strata or []), small_strata=small_strata,
                             strata_missing=strata_missing, weights=weights,
                             missing=missing, decimal=decimal)
    rep["output_hygiene"] = hygiene
    if evaluation is not None:
        rep["evaluation"] = evaluation
    # one transaction: the output and the report appear together or not at all
    with OutputSet(force=force) as files:
        write_table(
            result.frame, out_path, fmt=out_fmt, force=force,
            delimiter=table.delimiter if out_fmt == "csv" and table.fmt == "csv" else ",",
            decimal=decimal, into=files,
        )
        rep["audit"] = audit.trail(t0, files=[audit.file_entry(None if out_path is None else output, "output", since=t0)],
                                   reproduce=audit.reproduce_entry(seed, [b.params for b in plan.blocks]))
        if report is not None:
            rep["timing"]["seconds"] = time.perf_counter() - t0
            write_json(rep, rep_path, force=force, into=files)
        files.commit()
    result.report = rep
    return rep


# =================================================================================
# sdc evaluate: risk and utility of a protected file against its original.
# (Section owned by the evaluate command; helpers are prefixed ``_ev_``.)

from .errors import ThresholdExceeded  # noqa: E402
from .io import column_values, numeric_columns  # noqa: E402

#: Version of the ``sdc evaluate`` JSON layout; bumped on any incompatible change.
EVALUATION_SCHEMA_VERSION = "1.1"


@dataclass(frozen=True)
class Gate:
    """A release gate of ``sdc evaluate``: a threshold on one headline figure.

    ``stat`` is ``"scenarios"`` for figures computed per intruder scenario (the gate
    checks the worst scenario or the mean, see ``gate_on``) and ``"overall"`` for
    figures that have one value.
    """

    key: str
    option: str
    measure: str
    direction: str  # "max": value must be <= threshold; "min": value must be >= threshold
    stat: str
    field: str  # key in the risk summaries (scenario figures) or in "summary"


#: The gates, keyed like :func:`evaluate`'s ``gates`` argument.
GATES: dict[str, Gate] = {
    g.key: g
    for g in (
        Gate("max_dld", "--max-dld", "DLD", "max", "scenarios", "dld"),
        Gate("max_id", "--max-id", "ID", "max", "scenarios", "id"),
        Gate("max_score", "--max-score", "score", "max", "overall", "score"),
        Gate("min_kprime", "--min-kprime", "k'", "min", "scenarios", "k_prime"),
        Gate("max_il", "--max-il", "IL_SSE", "max", "overall", "il_sse"),
    )
}

_EV_FORMULAS = {
    "il_sse": "IL_SSE = 100 * ||Z - Z'||^2 / ||Z - mean(Z)||^2 (Z, Z' z-scored with the original's "
              "means and population sds; per block and overall = sums over blocks)",
    "lb_nn": "LB_NN = 100 * (1/(2k)) * sum_i sum_{l=1..k-1} d^2(z_i, l-th nearest neighbour) / SST "
             "(a lower bound on IL_SSE of any k-partition); gap = IL_SSE - LB_NN",
    "il1s": "IL1s = mean over cells of |x - x'| / (sqrt(2) * s_j), s_j the sample sd of original column j",
    "dld": "DLD = 100 * (links to the true record by nearest z-scored distance, ties 1/t) / n",
    "pld": "PLD = 100 * (links to the true record by highest Fellegi-Sunter weight, EM-fitted, ties 1/t) / n",
    "id": "ID = mean over p = 1..10 % of 100 * (original values inside the rank interval of width "
          "p % around the protected value) / (n * |S|)",
    "sdid": "SDID = share of records whose every protected value lies within 0.05 * sd(x'_j) of its original",
    "k_prime": "k' = n / (number of distinct protected rows over the known attributes); k_min = smallest "
                "class; share_below_k = share of records in classes smaller than k",
}


def _ev_key_strings(table: Table, key: str, numeric: bool) -> np.ndarray:
    """The key column as comparable strings (numbers normalised when both sides are numeric)."""
    if numeric:
        values, _ = column_values(table, key)
        return np.array([format(v, ".17g") for v in values], dtype=object)
    col = table.frame[key]
    return np.array([("" if v is None else str(v)).strip() for v in col.tolist()], dtype=object)


def _ev_all_numeric(table: Table, key: str) -> bool:
    values, bad = column_values(table, key)
    return not bad.any() and not np.isnan(values).any()


def _ev_match_rows(orig: Table, prot: Table, key: str | None) -> tuple[np.ndarray | None, dict[str, Any]]:
    """Positions of the protected rows matching the original's rows (None = same order)."""
    n_o, n_p = orig.frame.shape[0], prot.frame.shape[0]
    if key is None:
        if n_o != n_p:
            raise DataError(
                f"the original has {n_o} rows and the protected file {n_p}; rows are matched by "
                "order, so the counts must agree (or match them by an identifier with --key COL)"
            )
        return None, {"by": "order"}
    for table, what in ((orig, "original"), (prot, "protected")):
        if key not in table.columns:
            raise DataError(f"--key: no column {key!r} in the {what} file")
    numeric = _ev_all_numeric(orig, key) and _ev_all_numeric(prot, key)
    keys_o = _ev_key_strings(orig, key, numeric)
    keys_p = _ev_key_strings(prot, key, numeric)
    for keys, what in ((keys_o, "original"), (keys_p, "protected")):
        empty = np.flatnonzero(keys == "")
        if empty.size:
            raise DataError(f"--key {key!r}: row {int(empty[0]) + 1} of the {what} file has no key")
        index = pd.Index(keys)
        if not index.is_unique:
            dup = index[index.duplicated()][0]
            count = int((keys == dup).sum())
            raise DataError(
                f"--key {key!r}: key {dup!r} occurs {count} times in the {what} file; keys must be unique"
            )
    pos = pd.Index(keys_p).get_indexer(keys_o)
    missing = np.flatnonzero(pos < 0)
    if missing.size:
        raise DataError(
            f"--key {key!r}: {missing.size} record(s) of the original have no match in the protected "
            f"file (first: key {keys_o[missing[0]]!r})"
        )
    if n_p > n_o:
        extra = np.setdiff1d(np.arange(n_p), pos)
        raise DataError(
            f"--key {key!r}: {extra.size} record(s) of the protected file have no match in the original "
            f"(first: key {keys_p[extra[0]]!r})"
        )
    return pos.astype(np.int64), {"by": "key", "key": key}


def _ev_check_names(names: list[str], orig: Table, prot: Table, key: str | None, option: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InvalidParameterError(f"{option}: column {name!r} is named twice")
        seen.add(name)
        if key is not None and name == key:
            raise InvalidParameterError(f"{option}: the --key column {name!r} cannot be evaluated")
        for table, what in ((orig, "original"), (prot, "protected")):
            if name not in table.columns:
                shown = ", ".join(table.columns[:20]) + (", ..." if len(table.columns) > 20 else "")
                raise DataError(f"{option}: no column {name!r} in the {what} file (columns: {shown})")


def _ev_columns(
    orig: Table,
    prot: Table,
    order: np.ndarray | None,
    *,
    columns: list[str] | None,
    key: str | None,
    blocks: list[list[str]] | None,
    plan: BlockPlan | None,
) -> tuple[list[str], list[tuple[str, list[str], int | None]], dict[str, Any]]:
    """Evaluated columns, blocks ``(name, columns, k)`` and a description of the choice."""
    info: dict[str, Any] = {}
    if plan is not None:
        if columns is not None or blocks is not None:
            raise InvalidParameterError("--plan names the columns and blocks; drop --columns/--blocks")
        names = list(plan.columns)
        _ev_check_names(names, orig, prot, key, "--plan")
        info["selection"] = "plan"
        return names, [(b.name, list(b.columns), b.k) for b in plan.blocks], info
    if blocks is not None:
        names = [c for b in blocks for c in b]
        _ev_check_names(names, orig, prot, key, "--blocks")
        if columns is not None and sorted(columns) != sorted(names):
            raise InvalidParameterError("--columns and --blocks name different columns; give one of them")
        info["selection"] = "blocks"
        return names, [(f"block{i + 1}", list(b), None) for i, b in enumerate(blocks)], info
    if columns is not None:
        _ev_check_names(list(columns), orig, prot, key, "--columns")
        if not columns:
            raise InvalidParameterError("--columns: no column given")
        info["selection"] = "given"
        return list(columns), [("block1", list(columns), None)], info
    # default: numeric columns of both files whose values differ between them
    prot_numeric = set(numeric_columns(prot))
    names, unchanged, skipped = [], [], []
    for name in numeric_columns(orig):
        if name == key:
            continue
        if name not in prot_numeric:
            skipped.append(name)
            continue
        a, _ = column_values(orig, name)
        b, _ = column_values(prot, name)
        if order is not None:
            b = b[order]
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        (unchanged if same.all() else names).append(name)
    if not names:
        raise DataError(
            "no numeric column differs between the original and the protected file; "
            "name the protected columns with --columns"
        )
    info.update(selection="numeric columns whose values differ", unchanged=unchanged,
                not_numeric_in_protected=skipped)
    return names, [("block1", names, None)], info


def _ev_partition_based(Xp: np.ndarray, block_pos: list[list[int]], k: int) -> bool:
    """True when, in every block, each class of identical protected rows holds >= k (and >= 2)
    records: the protected file is a k-partition, so LB_NN bounds its IL_SSE."""
    need = max(int(k), 2)
    for cols in block_pos:
        _, counts = np.unique(Xp[:, cols], axis=0, return_counts=True)
        if counts.min() < need:
            return False
    return True


def _ev_get(d: Any, *path: Any) -> Any:
    for step in path:
        if d is None:
            return None
        d = d[step] if isinstance(d, list) else d.get(step)
    return d


def _ev_summary(measures: dict[str, Any]) -> dict[str, Any]:
    """The headline figures, flat (``jq .summary.dr``)."""
    g = lambda *p: _ev_get(measures, *p)  # noqa: E731
    return {
        "il_sse": g("utility", "il_sse", "overall"),
        "il_score": g("utility", "il_score", "value"),
        "il1s": g("utility", "il1s", "value"),
        "il_sse_raw": g("utility", "il_sse_raw", "overall"),
        "eigen": g("utility", "eigen", "value"),
        "robeigen": g("utility", "robeigen", "value"),
        "lb_nn": g("utility", "optimality", "lb_nn", "overall"),
        "optimality_gap": g("utility", "optimality", "gap", "overall"),
        "dld": g("risk", "mean", "dld"),
        "pld": g("risk", "mean", "pld"),
        "id": g("risk", "mean", "id"),
        "sdid": g("risk", "mean", "sdid"),
        "dr": g("risk", "dr", "value"),
        "score": g("score", "value"),
        "k_prime": g("risk", "anonymity", "k_prime"),
        "k_min": g("risk", "anonymity", "k_min"),
        "share_below_k": g("risk", "anonymity", "share_below_k"),
        "worst_dld": g("risk", "worst", "dld", "value"),
        "worst_id": g("risk", "worst", "id", "value"),
        "worst_k_prime": g("risk", "worst", "k_prime", "value"),
    }


def evaluate_matrices(
    X: np.ndarray,
    Xp: np.ndarray,
    names: list[str],
    blocks: list[tuple[str, list[str], int | None]],
    *,
    k: int | None = None,
    known: list[list[str]] | None = None,
    max_scenarios: int | None = None,
    seed: int = 0,
    dr_weights: Mapping[str, float] | None = None,
    score_weights: Mapping[str, float] | None = None,
    progress: Any = None,
    scale: str = "z",
    bound: str = "nn",
    time_limit: float | None = 600.0,
) -> dict[str, Any]:
    """The measurement part shared by ``sdc evaluate`` and ``sdc protect --evaluate``.

    Parameters
    ----------
    X, Xp : (n, p) original and protected values of the columns ``names`` (same rows in
        the same order, finite).
    blocks : ``(name, columns, k)`` per block; the blocks partition ``names``.
    k : k for the share below k and LB_NN (default: the smallest block k, else 3).
    known : intruder scenarios as lists of column names (default: every subset, or a
        seeded sample).
    max_scenarios : evaluate every subset when there are at most this many, else a
        seeded stratified sample of this size; 0 = every subset, whatever the number
        of columns (default: every subset up to 10 columns, else 512).
    scale : ``"z"`` (default) or ``"raw"``: the headline IL is z-scored; with
        ``"raw"`` the summary also shows IL_SSE on the unstandardised values
        (``measures.utility.il_sse_raw`` is always in the report).
    bound : ``"nn"`` (default: LB_NN only) or ``"cg"``: also the certified
        column-generation bound lb_cg (``measures.utility.cg_bound``, see
        :func:`microagg_cli.metrics.cg_bound.cg_report`), at most ``time_limit`` s.

    Returns
    -------
    ``{"blocks", "parameters", "formulas", "summary", "measures"}`` (JSON-ready);
    ``measures`` is :func:`microagg_cli.metrics.evaluate_arrays`'s dict.
    """
    from .metrics import evaluate_arrays

    p = len(names)
    pos = {c: j for j, c in enumerate(names)}
    block_pos = [[pos[c] for c in cols] for _n, cols, _k in blocks]
    k_source = "option"
    if k is None:
        ks = [bk for _n, _c, bk in blocks if bk is not None]
        k, k_source = (min(ks), "plan") if ks else (3, "default")
    if isinstance(k, bool) or int(k) != k or k < 2:
        raise InvalidParameterError(f"k must be an integer >= 2, got {k!r}")
    k = int(k)
    scenarios = None
    if known is not None:
        scenarios = []
        for subset in known:
            for c in subset:
                if c not in pos:
                    raise InvalidParameterError(
                        f"--known: {c!r} is not an evaluated column ({', '.join(names)})"
                    )
            if len(set(subset)) != len(subset):
                raise InvalidParameterError(f"--known {','.join(subset)}: a column is named twice")
            scenarios.append([pos[c] for c in subset])
    if scale not in ("z", "raw"):
        raise InvalidParameterError(f"--scale must be z or raw, got {scale!r}")
    max_all, sample = 10, 512
    if max_scenarios is not None:
        if isinstance(max_scenarios, bool) or int(max_scenarios) < 0:
            raise InvalidParameterError(f"--max-scenarios must be >= 0 (0 = all), got {max_scenarios!r}")
        sample = max(1, int(max_scenarios))
        max_all = p if (int(max_scenarios) == 0 or 2**p - 1 <= sample) else 0
    if bound not in ("nn", "cg"):
        raise InvalidParameterError(f"--bound must be nn or cg, got {bound!r}")
    if time_limit is not None and not time_limit >= 0:
        raise InvalidParameterError(f"--time-limit must be >= 0 seconds, got {time_limit!r}")
    partition = _ev_partition_based(Xp, block_pos, k)
    measures = evaluate_arrays(
        X, Xp, blocks=block_pos, k=k, scenarios=scenarios, dr_weights=dr_weights,
        score_weights=score_weights, rng=np.random.default_rng(np.random.SeedSequence(int(seed))),
        max_all_subsets=max_all, sample_size=sample, partition_based=partition, progress=progress,
    )
    cg_summary: dict[str, Any] = {}
    if bound == "cg":
        from .metrics.cg_bound import cg_report

        cg = cg_report(X, Xp, k, block_pos, il_sse=measures["utility"]["il_sse"],
                       partition_based=partition, time_limit=time_limit)
        measures["utility"]["cg_bound"] = cg
        cg_summary = {key: cg[key]["overall"] for key in ("lb_cg", "cg_gap", "cg_status", "cg_seconds")}
    formulas = dict(_EV_FORMULAS)
    formulas["il_score"] = "IL_score = " + str(_ev_get(measures, "utility", "il_score", "formula"))
    formulas["dr"] = measures["risk"]["dr"]["formula"]
    formulas["score"] = measures["score"]["formula"]
    return {
        "blocks": [{"name": bn, "columns": list(cols), "k": bk} for bn, cols, bk in blocks],
        "parameters": {
            "k": k,
            "k_source": k_source,
            "seed": int(seed),
            "known": [list(s) for s in known] if known is not None else None,
            "max_scenarios": max_scenarios,
            "scale": scale,
            "scenario_mode": measures["risk"]["scenarios"]["mode"],
            "scenario_count": measures["risk"]["scenarios"]["count"],
            "dr_weights": measures["risk"]["dr"]["weights"],
            "score_weights": measures["score"]["weights"],
            "pld_window_share": measures["risk"]["parameters"]["pld_window_share"],
            "id_percents": measures["risk"]["parameters"]["id_percents"],
            "sdid_factor": measures["risk"]["parameters"]["sdid_factor"],
            "partition_based": partition,
            "partition_rule": "LB_NN and the optimality gap are reported when every class of identical "
                              "protected rows in every block holds at least k records",
        },
        "formulas": formulas,
        "summary": {**_ev_summary(measures),
                    **({} if scale == "raw" else {"il_sse_raw": None}), **cg_summary},
        "measures": measures,
    }


def _ev_complete_rows(X: np.ndarray, Xp: np.ndarray, names: list[str], missing: str) -> np.ndarray:
    """Rows complete in both matrices (all rows when nothing is missing)."""
    bad = np.isnan(X) | np.isnan(Xp)
    if not bad.any():
        return np.arange(X.shape[0])
    if missing == "error":
        j = int(np.flatnonzero(bad.any(axis=0))[0])
        i = int(np.flatnonzero(bad[:, j])[0])
        which = "original" if np.isnan(X[i, j]) else "protected"
        raise DataError(
            f"column {names[j]!r} has {int(bad[:, j].sum())} missing value(s) (first in row {i + 1} of "
            f"the {which} file); use --missing complete to evaluate the complete records only"
        )
    rows = np.flatnonzero(~bad.any(axis=1))
    if rows.size < 2:
        raise DataError(f"only {rows.size} record(s) are complete in both files; nothing to evaluate")
    return rows


def _ev_column_stats(values: np.ndarray) -> dict[str, Any]:
    return {"mean": float(values.mean()), "sd": float(values.std(ddof=1)) if values.size > 1 else None,
            "min": float(values.min()), "max": float(values.max())}


def _ev_gates(rep: dict[str, Any], gates: Mapping[str, float], gate_on: str) -> dict[str, Any]:
    names = rep["columns"]["evaluated"]
    measures = rep["measures"]
    checks = []
    for key, threshold in gates.items():
        gate = GATES[key]
        scenario = None
        if gate.stat == "overall":
            value, stat = rep["summary"][gate.field], "overall"
        elif gate_on == "mean":
            value, stat = _ev_get(measures, "risk", "mean", gate.field), "mean over scenarios"
        else:
            worst = _ev_get(measures, "risk", "worst", gate.field)
            value, stat = (worst or {}).get("value"), "worst scenario"
            if worst:
                scenario = [names[j] for j in worst["attributes"]]
        passed = value is not None and (value <= threshold if gate.direction == "max" else value >= threshold)
        checks.append({
            "option": gate.option, "measure": gate.measure, "statistic": stat,
            "threshold": float(threshold), "value": value, "scenario": scenario, "passed": bool(passed),
        })
    return {"on": gate_on, "passed": all(c["passed"] for c in checks), "checks": checks}


def _ev_gate_message(gates: dict[str, Any], evaluated: list[str]) -> str:
    from .report import scenario_text

    parts = []
    for c in gates["checks"]:
        if c["passed"]:
            continue
        if c["value"] is None:
            parts.append(f"{c['option']} {c['threshold']:g}: {c['measure']} was not computed")
            continue
        op = ">" if c["option"].startswith("--max") else "<"
        where = f": {scenario_text(c['scenario'], evaluated)}" if c["scenario"] else ""
        parts.append(f"{c['option']} {c['threshold']:g}: {c['measure']} = {c['value']:.4g} "
                     f"({c['statistic']}{where}) {op} {c['threshold']:g}")
    return "gate failed: " + "; ".join(parts)


def evaluate(
    original: str | Path,
    protected: str | Path,
    *,
    columns: list[str] | None = None,
    key: str | None = None,
    blocks: list[list[str]] | None = None,
    plan: BlockPlan | None = None,
    k: int | None = None,
    known: list[list[str]] | None = None,
    max_scenarios: int | None = None,
    seed: int = 0,
    dr_weights: Mapping[str, float] | None = None,
    score_weights: Mapping[str, float] | None = None,
    gates: Mapping[str, float] | None = None,
    gate_on: str = "worst",
    missing: str = "error",
    report: str | Path | None = None,
    html: str | Path | None = None,
    internal: bool = False,
    force: bool = False,
    input_format: str | None = None,
    delimiter: str | None = None,
    decimal: str = ".",
    progress: Any = None,
    scale: str = "z",
    bound: str = "nn",
    time_limit: float | None = 600.0,
) -> dict[str, Any]:
    """Risk and utility of a protected file against its original (``sdc evaluate``).

    Reads both files, matches their rows (by order, or by the identifier column
    ``key``), computes every measure of the metrics spec over the evaluated columns
    (:func:`microagg_cli.metrics.evaluate_arrays`), writes the JSON ``report`` and the
    self-contained ``html`` report (atomically), then checks the ``gates``.

    Parameters
    ----------
    original, protected : CSV or Parquet files (by extension or ``input_format``).
    columns : evaluated columns (one block). Default: the numeric columns of both
        files whose values differ between them.
    key : identifier column present in both files; rows are matched by it. Duplicate,
        empty or unmatched keys are a :class:`DataError`.
    blocks : attribute blocks as lists of column names (they are the evaluated
        columns); scenarios are labelled 1G, 2G... by the blocks they touch.
    plan : a :class:`BlockPlan` (its blocks and k) instead of ``columns``/``blocks``.
    k : for the share of records in classes smaller than k and LB_NN (default: the
        plan's smallest k, else 3).
    known, max_scenarios, seed : intruder scenarios (see :func:`evaluate_matrices`).
    scale : ``"raw"`` adds IL_SSE on unstandardised values to the summary (see
        :func:`evaluate_matrices`).
    dr_weights, score_weights : weights of DR (``dld``, ``pld``, ``id``) and of the
        score (``il``, ``dr``).
    gates : ``{"max_dld": 5.0, "min_kprime": 3, ...}`` (keys of :data:`GATES`).
    gate_on : ``"worst"`` (default) or ``"mean"``: which figure over the intruder
        scenarios the DLD, ID and k' gates check.
    missing : ``"error"`` (default) or ``"complete"`` (evaluate only records complete in
        both files; the count left out is reported).
    report : JSON report path (``"-"`` = stdout) or None.
    html : HTML report path or None.
    internal : include original values (per-column statistics) in the reports; for
        internal use only, never for release.
    progress : ``progress(done, total)`` called after each scenario.
    bound, time_limit : ``"cg"`` adds the certified column-generation bound lb_cg
        (at most ``time_limit`` seconds; see :func:`evaluate_matrices`).

    Returns
    -------
    The report (dict, schema :data:`EVALUATION_SCHEMA_VERSION`).

    Raises
    ------
    ThresholdExceeded : a gate failed (after the reports were written); the report is
        in the exception's ``report`` attribute.
    """
    from . import report as _report

    t0 = time.perf_counter()
    gates = dict(gates or {})
    for name in gates:
        if name not in GATES:
            raise InvalidParameterError(f"unknown gate {name!r} (known: {', '.join(GATES)})")
    if gate_on not in ("worst", "mean"):
        raise InvalidParameterError(f"gate_on must be 'worst' or 'mean', got {gate_on!r}")
    if missing not in ("error", "complete"):
        raise InvalidParameterError(f"unknown missing-value policy {missing!r} (use error or complete)")
    if decimal not in (".", ","):
        raise InvalidParameterError(f"decimal mark must be '.' or ',', got {decimal!r}")
    fmt_o = detect_format(original, input_format)
    fmt_p = detect_format(protected, input_format)
    if str(original) == "-" and str(protected) == "-":
        raise InvalidParameterError("the original and the protected file cannot both come from stdin")
    srcs = tuple(None if str(s) == "-" else Path(s) for s in (original, protected))
    rep_path = html_path = None
    if report is not None:
        rep_path = check_output_path(report, force=force, inputs=srcs, what="report")
    if html is not None:
        if str(html) == "-":
            raise InvalidParameterError("--html needs a file name (the HTML report is not written to stdout)")
        html_path = check_output_path(html, force=force, inputs=srcs, what="HTML report")
        if rep_path is not None and rep_path.resolve() == html_path.resolve():
            raise InvalidParameterError("the JSON and the HTML report are the same file")
    orig = read_table(original, fmt=fmt_o, delimiter=delimiter, decimal=decimal)
    prot = read_table(protected, fmt=fmt_p, delimiter=delimiter, decimal=decimal)
    order, matching = _ev_match_rows(orig, prot, key)
    names, blist, selection = _ev_columns(orig, prot, order, columns=columns, key=key, blocks=blocks, plan=plan)
    X = numeric_matrix(orig, names, allow_missing=True)
    Xp = numeric_matrix(prot, names, allow_missing=True)
    if order is not None:
        Xp = Xp[order]
    rows = _ev_complete_rows(X, Xp, names, missing)
    X, Xp = X[rows], Xp[rows]
    section = evaluate_matrices(
        X, Xp, names, blist, k=k, known=known, max_scenarios=max_scenarios, seed=seed,
        dr_weights=dr_weights, score_weights=score_weights, progress=progress, scale=scale,
        bound=bound, time_limit=time_limit,
    )

    def file_entry(table: Table) -> dict[str, Any]:
        return {**file_fingerprint(table.path), "format": table.fmt, "rows": int(table.frame.shape[0]),
                "columns": int(table.frame.shape[1])}

    rep: dict[str, Any] = {
        "schema_version": EVALUATION_SCHEMA_VERSION,
        "tool": {"name": "sdc", "distribution": "microagg-cli", "version": __version__},
        "command": "evaluate",
        "internal": bool(internal),
        "original": file_entry(orig),
        "protected": file_entry(prot),
        "matching": matching,
        "records": {"evaluated": int(rows.size), "left_out_incomplete": int(orig.frame.shape[0] - rows.size)},
        "columns": {"evaluated": names, **selection},
        "blocks": section["blocks"],
        "parameters": {
            **section["parameters"],
            "gate_on": gate_on,
            "missing": missing,
            "decimal": decimal,
            "columns_given": list(columns) if columns is not None else None,
            "blocks_given": [list(b) for b in blocks] if blocks is not None else None,
            "plan": plan.source.name if plan is not None and plan.source is not None else None,
            "key": key,
        },
        "formulas": section["formulas"],
        "summary": section["summary"],
        "measures": section["measures"],
        "gates": None,
    }
    if internal:
        rep["internal_details"] = {
            "warning": "contains original values of protected attributes: for internal use only",
            "columns": [
                {"name": c, "original": _ev_column_stats(X[:, j]), "protected": _ev_column_stats(Xp[:, j])}
                for j, c in enumerate(names)
            ],
        }
    rep["gates"] = _ev_gates(rep, gates, gate_on)
    rep["timing"] = {"seconds": time.perf_counter() - t0}
    rep["audit"] = audit.trail(t0, files=[audit.read_entry(protected, "protected (read)", rep["protected"])])
    # one transaction; a report holding original values (--internal) is private (0600)
    with OutputSet(force=force) as files:
        if report is not None:
            write_json(rep, rep_path, force=force, into=files, private=bool(internal))
        if html_path is not None:
            data = _report.render_html(rep).encode("utf-8")
            files.add_file(html_path, lambda fh: fh.write(data), what="HTML report", private=bool(internal))
        files.commit()
    if not rep["gates"]["passed"]:
        exc = ThresholdExceeded(_ev_gate_message(rep["gates"], names))
        exc.report = rep  # type: ignore[attr-defined]
        raise exc
    return rep


def evaluate_protected(table: Table, plan: BlockPlan, result: ProtectResult, *, seed: int = 0) -> dict[str, Any]:
    """The risk section of ``sdc protect --evaluate``: :func:`evaluate_matrices` on the
    protected blocks of ``result`` (rows in input order; records with a missing or
    suppressed protected value are left out and counted)."""
    names = list(plan.columns)
    X = numeric_matrix(table, names, allow_missing=True)
    Xp = np.column_stack([r.values[:, j] for r in result.blocks for j in range(len(r.block.columns))])
    bad = np.isnan(X) | np.isnan(Xp)
    rows = np.flatnonzero(~bad.any(axis=1))
    if rows.size < 2:
        raise DataError(f"only {rows.size} record(s) have every protected value; nothing to evaluate")
    blist = [(r.block.name, list(r.block.columns), r.block.k) for r in result.blocks]
    section = evaluate_matrices(X[rows], Xp[rows], names, blist, seed=seed)
    section["records"] = {"evaluated": int(rows.size), "left_out_incomplete": int(X.shape[0] - rows.size)}
    section["columns"] = names
    return section


# =================================================================================
# sdc compare: method x k x plan grids. (Section owned by the compare command; the
# work is done in :mod:`microagg_cli.grid`.)


def compare(
    input: str | Path,
    *,
    methods: list[str] | None = None,
    k: list[int] | None = None,
    mic1d_k: list[int] | None = None,
    plans: list[str | Path | BlockPlan] | None = None,
    strategies: list[str] | None = None,
    block_size: int | None = None,
    columns: list[str] | None = None,
    preset: str | None = None,
    known: list[list[str]] | None = None,
    max_scenarios: int | None = 64,
    seed: int = 0,
    dr_weights: Mapping[str, float] | None = None,
    score_weights: Mapping[str, float] | None = None,
    output: str | Path | None = None,
    fmt: str | None = None,
    html: str | Path | None = None,
    save_protected: str | Path | None = None,
    jobs: int = 1,
    force: bool = False,
    input_format: str | None = None,
    delimiter: str | None = None,
    decimal: str = ".",
    progress: Any = None,
) -> dict[str, Any]:
    """Protect ``input`` with every method x k x plan combination and evaluate each one.

    Each cell is protected in memory (:func:`protect_table`, seeded with ``seed``) and
    measured with :func:`microagg_cli.metrics.evaluate_arrays` (IL_SSE, IL_score, DLD,
    PLD, ID, DR, score, k', and k', DLD, PLD, ID, DR per intruder-knowledge label).

    Parameters
    ----------
    input : CSV or Parquet file (``"-"`` = stdin).
    methods : method names, each optionally with parameters ``"NAME:PARAM=VALUE..."``
        (default ``["mdav"]``, or the preset's).
    k : minimum group sizes (default 3, 5, 10, or the preset's).
    mic1d_k : k values (values per partition) of methods whose k counts values
        (``mic1d``); default: ``k``.
    plans : plan files (or :class:`BlockPlan` objects); their method and k are replaced
        by each cell's. Exclusive with ``strategies`` and ``columns``.
    strategies, block_size : plans proposed from the data (``correlated``, ``cross``,
        ``individual``, ``single``, ``random``; see :func:`microagg_cli.blocking.make_plan`).
    columns : protected columns (one block) when no plan is given; default every
        numeric column.
    preset : a literature experiment (:data:`microagg_cli.grid.PRESETS`); the other
        arguments, when given, replace its parts.
    known, max_scenarios : intruder scenarios: explicit column sets, or a cap (every
        subset when there are at most ``max_scenarios``, else a seeded sample of that
        size; None = every subset up to 10 columns, else 512).
    dr_weights, score_weights : weights of DR and of the score.
    output, fmt : file for the result (``fmt`` ``"table"``, ``"csv"`` or ``"json"``;
        default from the extension). Rewritten atomically after every finished cell.
    html : self-contained HTML page (tables and risk-utility maps).
    save_protected : folder receiving every cell's protected CSV file.
    jobs : worker processes (0 = one per CPU); the result does not depend on it.
    progress : ``progress(done, total)`` called as cells finish.

    Returns
    -------
    The result (dict, schema :data:`microagg_cli.grid.COMPARE_SCHEMA_VERSION`): one
    row per cell in ``rows``, ordered by plan, method, k.

    Raises
    ------
    microagg_cli.grid.GridInterrupted : Ctrl-C; the finished rows were written to
        ``output`` and ``html`` (its ``written`` and ``document`` say what).
    """
    from . import grid

    return grid.compare_file(
        input, methods=methods, k=k, mic1d_k=mic1d_k, plans=plans, strategies=strategies,
        block_size=block_size, columns=columns, preset=preset, known=known, max_scenarios=max_scenarios,
        seed=seed, dr_weights=dr_weights, score_weights=score_weights, output=output, fmt=fmt, html=html,
        save_protected=save_protected, jobs=jobs, force=force, input_format=input_format,
        delimiter=delimiter, decimal=decimal, progress=progress,
    )
