"""A table and a plan in, a protected table and per-block results out.

:func:`protect_blocks` is the one block loop of ``sdc``: strata, sampling weights,
missing-value policies, small strata, the partitioned mode and the per-block
statistics. The in-memory path (:func:`protect_table`), the streaming engines
(:mod:`microagg_cli.engines`, local or Dask) and the comparison grid all call it, so
they cannot drift apart. It reads the protected columns through a
:class:`ColumnSource` (an in-memory :class:`microagg_cli.io.Table`, or a Parquet
file read one column at a time) and never sees the pass-through columns.

Examples
--------
>>> import pandas as pd
>>> from microagg_cli.blocking import BlockPlan
>>> from microagg_cli.io import Table
>>> frame = pd.DataFrame({"id": ["a", "b", "c", "d"], "x": ["1", "2", "10", "11"]})
>>> res = protect_table(Table(frame, "csv", None), BlockPlan.single(["x"], k=2))
>>> res.data.column("x").to_pylist(), res.data.column("id").to_pylist()
([1.5, 1.5, 10.5, 10.5], ['a', 'b', 'c', 'd'])
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol

import numpy as np

from ..blocking import Block, BlockPlan
from ..errors import DataError, InfeasibleError, InvalidParameterError, PrivacyCheckError, check_k_value
from ..readings import name_list, option_list
from ..io import (
    Table,
    assemble_output,
    missing_mask,
    numeric_matrix,
    resolve_columns,
    with_column,
)
from ..methods import get_method
from ..metrics import lb_nn
from ..metrics.utility import SCIPY_SPATIAL_IMPORT_SECONDS, lb_nn_seconds
from ..progress import phase as progress_phase
from ..progress import set_done
from ..partition import canonical_labels, size_histogram, sse, sst, zscore
from ..survey import nan_zscore, resolve_small_strata, stratify
from .block import BlockResult, block_seed, check_named_once, check_weights, il_sse_observed, resolve_params, row_classes
from .mixed import check_options as check_mixed_options
from .mixed import mixed_stats, protect_mixed_parts, read_keys, released_columns, split_plan
from .partitioned import protect_rows
from ..request import BOUND_MODES, MISSING_POLICIES, SMALL_STRATA_POLICIES, ProtectRequest, RunOptions, default

__all__ = [
    "ProtectResult", "ColumnSource", "TableSource", "MISSING_POLICIES", "SMALL_STRATA_POLICIES",
    "check_run", "check_options", "protect_blocks", "protect_table", "il_parts", "LB_SHARE", "BOUND_MODES", "optimality",
    "overall_stats", "block_stats", "single_plan", "check_id_column", "check_keys", "released_check",
    "merged_labels", "check_magnitude", "MAX_MAGNITUDE",
]

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

log = logging.getLogger("microagg_cli")


class ColumnSource(Protocol):
    """What the block loop reads: the column names, the row count, and columns on demand."""

    @property
    def columns(self) -> list[str]: ...

    @property
    def n_rows(self) -> int: ...

    def numeric(self, names: list[str], *, allow_missing: bool = False) -> np.ndarray:
        """The columns as an (n, p) float matrix, checked like :func:`microagg_cli.io.numeric_matrix`."""

    def keys(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(values as an object array, missing mask) of a stratum column."""


class TableSource:
    """A :class:`ColumnSource` over an in-memory :class:`microagg_cli.io.Table`."""

    def __init__(self, table: Table):
        self.table = table

    @property
    def columns(self) -> list[str]:
        return self.table.columns

    @property
    def n_rows(self) -> int:
        return int(self.table.n_rows)

    def numeric(self, names: list[str], *, allow_missing: bool = False) -> np.ndarray:
        return numeric_matrix(self.table, names, allow_missing=allow_missing)

    def keys(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(values, missing mask); an ordered Arrow dictionary (an ordered pandas Categorical)
        gives each value's rank in the file's own category order, so that an ordinal key
        keeps that order."""
        import pyarrow as pa

        table = self.table
        if table.arrow_backed and table.fmt != "csv":
            col = table.data.column(name)
            if pa.types.is_dictionary(col.type) and col.type.ordered:
                col = col.unify_dictionaries()
                ranks = pa.chunked_array([c.indices.cast(pa.int64()) for c in col.chunks], type=pa.int64())
                values = np.asarray(ranks.to_numpy(zero_copy_only=False), dtype=object)
                return values, missing_mask(table, name)
        return table.pandas_column(name).to_numpy(), missing_mask(table, name)


@dataclass
class ProtectResult:
    """The protected table and what protecting it produced.

    Attributes
    ----------
    data : the output as a ``pyarrow.Table`` (:func:`microagg_cli.io.assemble_output`):
        the input's columns minus the dropped ones, protected columns as float64, every
        other column the very same Arrow array as read.
    blocks : per-block results (values in input row order).
    report : the JSON report (filled by :func:`microagg_cli.protection.run.protect_run`).
    overall : the file's IL_SSE (and LB_NN) over all blocks.
    original_rows : with ``--shuffle-rows``, the input row (0-based) of each output row
        (the private pairing; never written into the output), else None.
    """

    data: Any
    blocks: list[BlockResult]
    report: dict[str, Any]
    overall: dict[str, Any] = field(default_factory=dict)
    original_rows: Any = None

    @property
    def frame(self) -> pd.DataFrame:
        """The output as a pandas DataFrame (CSV text columns as ``object`` strings)."""
        return self.data.to_pandas()


def check_run(columns: list[str], plan: BlockPlan, options: RunOptions) -> str:
    """Check a run's options against the input's columns before any work; return the statistic.

    The same checks, in the same order, for every path (in memory, streaming, Dask):
    the plan's columns exist, the strata, weights and keys columns exist and are
    neither protected nor dropped, every block's parameters are valid (the policies
    were checked when ``options`` was built).
    """
    stat, strata, weights, keys = options.stat, options.strata, options.weights, options.keys
    plan.check(columns)  # the statistic, and weights with the mean only, checked by the options
    protected = set(plan.columns)
    for role, cols in (("strata", strata or []), ("weights", [weights] if weights else []), ("keys", keys or [])):
        for c in cols:
            if c not in columns:
                raise DataError(f"{role}: no column {c!r} in the input")
            if c in protected:
                raise InvalidParameterError(f"{role} column {c!r} cannot also be protected")
            if c in plan.drop:
                raise InvalidParameterError(f"{role} column {c!r} cannot also be dropped")
    for block in plan.blocks:  # fail here, not on a worker after minutes
        resolve_params(get_method(block.method), block.params, block.columns)
    return stat


def check_options(columns: list[str], plan: BlockPlan, options: RunOptions) -> None:
    """Every option check of :func:`protect_blocks` that needs no data (the plan and its
    parameters, strata, weights, keys, the mixed keys' options): run before the role
    check, so that a bad option is a usage error (exit code 2) whatever the columns hold."""
    for block in plan.blocks:
        if block.k is not None:  # a block without k: the plan's own check says which
            check_k_value(block.k)
    plan = split_plan(plan, options)[0]
    check_run(columns, plan, options)
    check_mixed_options(columns, plan, options)


def protect_blocks(
    source: ColumnSource,
    plan: BlockPlan,
    options: RunOptions | None = None,
    *,
    runner: Any = None,
    progress: Callable[[int], None] | None = None,
    recode_merged: bool = False,
) -> tuple[list[BlockResult], list[tuple[float, float]]]:
    """The block loop: protect every block of ``plan`` read from ``source``.

    After every block, the privacy check is repeated on what is released
    (:func:`released_check`): every class of identical (stratum, ``keys``, protected
    values) rows must hold at least k records. ``recode_merged``: the caller writes the
    merged strata under one label (:func:`merged_labels`), so the check uses those
    labels; otherwise a merge that leaves a released stratum value below k is refused.

    Returns the per-block results (values in input row order, NaN where a record was
    not grouped or was suppressed) and each block's IL_SSE parts (numerator,
    denominator; see :func:`il_parts`). ``runner`` runs the parts of the partitioned
    mode (:class:`microagg_cli.protection.partitioned.LocalRunner` by default);
    ``progress(records)`` is told the records of every finished part; ``bound`` is the
    report's LB_NN policy (:func:`optimality`). ``options``: the run's options
    (:class:`microagg_cli.request.RunOptions`, default: its defaults).
    """
    options = RunOptions() if options is None else options
    plan, mixed_at = split_plan(plan, options)
    seed, strata, small_strata, strata_missing = options.seed, options.strata, options.small_strata, \
        options.strata_missing
    weights, missing, partition_size, bound, keys = options.weights, options.missing, options.partition_size, \
        options.bound, options.keys
    stat = check_run(source.columns, plan, options)
    check_mixed_options(source.columns, plan, options, mixed_at)
    declared_keys = list(keys or [])
    n = source.n_rows
    w = check_weights(source.numeric([weights])[:, 0], n) if weights else None
    keys = [source.keys(c) for c in (strata or [])]
    key_cols = [values for values, _ in keys]
    strata_missing_counts = {c: int(mask.sum()) for c, (_, mask) in zip(strata or [], keys)}
    if strata_missing == "error" and any(strata_missing_counts.values()):
        counts = ", ".join(f"{c}: {m}" for c, m in strata_missing_counts.items() if m)
        raise DataError(f"--strata: missing stratum values ({counts}); fix them, or give --strata-missing own "
                        "to make the missing value a stratum of its own")
    mixed = read_keys(source, options) if mixed_at is not None else None
    results: list[BlockResult] = []
    parts: list[tuple[float, float]] = []
    for i, block in enumerate(plan.blocks):
        X = source.numeric(list(block.columns), allow_missing=missing != "error")
        check_magnitude(X, block.columns)
        nan = np.isnan(X)
        grouped = ~nan.any(axis=1) if missing == "complete" else ~nan.all(axis=1)
        key_codes = None
        if i == mixed_at:
            key_codes = mixed.codes
            absent = key_codes < 0
            if absent.any() and missing == "error":
                counts = ", ".join(f"{c}: {int(m)}" for c, m in zip(mixed.names, absent.sum(axis=0)) if m)
                raise DataError(f"missing categorical/ordinal key values ({counts}); fix them, or give --missing "
                                "complete to leave such records out (their keys and values are blanked)")
            grouped &= ~absent.any(axis=1)
            released_keys = np.full(key_codes.shape, -1, dtype=np.int64)
        missing_cells = int(nan.sum())
        del nan
        rows_grouped = np.flatnonzero(grouped)
        whole = rows_grouped.size == n
        all_strata = stratify([c[rows_grouped] for c in key_cols] if key_cols else None, rows_grouped.size)
        spec = get_method(block.method)
        k_rows = 1 if spec.output == "values" else block.k
        # the small-strata policy needs the strata's centroids only when there are several
        Zb = (nan_zscore(X if whole else X[rows_grouped])[0] if len(all_strata.keys) > 1
              else np.zeros((rows_grouped.size, 0)))
        resolved = resolve_small_strata(all_strata, np.nan_to_num(Zb), k_rows, small_strata)
        del Zb
        if not resolved.members:
            raise InfeasibleError(f"block {block.name!r}: {rows_grouped.size} record(s) to group, fewer than k={k_rows}")
        log.info("block %s: %s, k=%d, %d x %d, %d stratum/strata", block.name, block.method, block.k,
                 X.shape[0], X.shape[1], len(resolved.keys))
        Xp: np.ndarray | None = None
        labels_all = np.full(n, -1, dtype=np.int64)
        per_stratum = []
        offset = 0
        stratum_results = []
        if key_codes is None:
            check_estimate(spec, block, [int(m.size) for m in resolved.members], options.time_limit,
                           partition_size)
        with progress_phase(f"{block.name}: {block.method}, k={block.k}", total=int(rows_grouped.size)):
            done = [0]

            def part_done(records: int, _done: list[int] = done) -> None:
                _done[0] += records
                set_done(_done[0])  # the committed count (a kernel may have counted part of it)
                if progress is not None:
                    progress(records)

            for key, members in zip(resolved.keys, resolved.members):
                rows = rows_grouped[members]
                every = rows.size == n  # one stratum holding every record: no copies
                sname = block.name if not strata else f"{block.name}[{'/'.join(key)}]"
                if key_codes is not None:
                    res = protect_mixed_parts(
                        X if every else X[rows], key_codes[rows], mixed, block,
                        seed=block_seed(seed, i, all_strata.keys.index(key) if strata else None),
                        stat=stat, weights=None if w is None else (w if every else w[rows]), name=sname,
                        partition_size=partition_size, progress=part_done, runner=runner)
                    released_keys[rows] = res.keys
                else:
                    res = protect_rows(
                        X if every else X[rows], block,
                        seed=block_seed(seed, i, all_strata.keys.index(key) if strata else None),
                        stat=stat, weights=None if w is None else (w if every else w[rows]), name=sname,
                        partition_size=partition_size, runner=runner, progress=part_done,
                    )
                if every:
                    Xp = res.values
                else:
                    if Xp is None:
                        Xp = np.full_like(X, np.nan)
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
        assert Xp is not None
        first = stratum_results[0]
        resolved_block = Block(block.name, block.columns, first.block.method, first.block.k, first.block.params)
        stats = block_stats(X, Xp, labels_all, grouped, stratum_results, resolved_block, w, bound=bound)
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
            "missing_cells": missing_cells,
            "records_not_grouped": int((~grouped).sum()),
            # --missing available: cells blanked so that each group releases one row (per column)
            "cells_blanked": {c: sum(r.stats.get("missing_blanked", {}).get(c, 0) for r in stratum_results)
                              for c in block.columns
                              if any(r.stats.get("missing_blanked", {}).get(c) for r in stratum_results)},
            "records_suppressed": int(sum(all_strata.members[all_strata.keys.index(key)].size
                                          for key in resolved.suppressed)),
        }
        out = BlockResult(resolved_block, Xp, labels_all if offset else None, stats)
        if key_codes is not None:
            out.keys, out.mixed = released_keys, mixed
            stats["mixed"] = mixed_stats(mixed, released_keys, released_keys[:, 0] >= 0, resolved_block.method,
                                         [r.stats["mixed_search"] for r in stratum_results])
        results.append(out)
        parts.append(il_parts(X, Xp))
        del X
    released_check(results, key_cols, list(strata or []),
                   [source.keys(c)[0] for c in declared_keys], declared_keys, recode_merged=recode_merged)
    return results, parts


#: Largest magnitude a protected value may have: squares of larger differences overflow
#: double precision (about 1.8e308), and so would the z-scaling's variance and every
#: squared distance of the methods.
MAX_MAGNITUDE = 1e150


def check_magnitude(X: np.ndarray, columns: tuple[str, ...] | list[str]) -> None:
    """Refuse a block whose values are so large that squared distances overflow.

    A :class:`DataError` (exit code 3) names the column and the first row beyond
    :data:`MAX_MAGNITUDE` (never the value): rescale the column (larger units) first.
    Checked once per block, before any method runs, so every method is covered."""
    with np.errstate(invalid="ignore"):
        big = np.abs(X) > MAX_MAGNITUDE
    if big.any():
        j = int(np.flatnonzero(big.any(axis=0))[0])
        i = int(np.flatnonzero(big[:, j])[0])
        raise DataError(
            f"column {columns[j]!r} holds values beyond {MAX_MAGNITUDE:.0e} in absolute value (first in row {i + 1}): "
            "squared distances would overflow double precision; rescale the column (express it in larger units) "
            "before protecting it")


def _row_keys(key_cols: list[np.ndarray]) -> tuple[list[tuple[str, ...]], np.ndarray]:
    """(distinct key tuples as text, in order of first appearance; each row's index into them)."""
    n = len(key_cols[0])
    codes = np.empty((n, len(key_cols)), dtype=np.int64)
    uniques = []
    for j, col in enumerate(key_cols):
        text = np.asarray(col).astype(str)
        u, inv = np.unique(text, return_inverse=True)
        codes[:, j] = inv.reshape(-1)
        uniques.append(u)
    rows, first, inv = np.unique(codes, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    keys = [tuple(str(uniques[j][rows[i, j]]) for j in range(len(key_cols))) for i in order]
    return keys, rank[inv.reshape(-1)]


def merged_labels(results: list[BlockResult], strata: list[str]) -> dict[tuple[str, ...], tuple[str, ...]]:
    """The released label of every merged stratum: ``{stratum key: label}``.

    Strata merged in any block (``--small-strata merge``) form one set (merges of every
    block are joined, so the labels are the same in every block); each column of the
    set's label is its members' distinct values, sorted as text and joined by ``+``
    (strata ``1`` and ``3`` merged: both released as ``1+3``). Strata not merged are
    not in the map."""
    parent: dict[tuple[str, ...], tuple[str, ...]] = {}

    def find(a: tuple[str, ...]) -> tuple[str, ...]:
        while parent.get(a, a) != a:
            a = parent[a]
        return a

    for r in results:
        info = r.stats.get("strata") or {}
        for m in info.get("merged", []):
            a = tuple(str(m["stratum"][c]) for c in strata)
            b = tuple(str(m["into"][c]) for c in strata)
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
            parent.setdefault(a, a)
            parent.setdefault(b, b)
    sets: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
    for key in parent:
        sets.setdefault(find(key), []).append(key)
    out: dict[tuple[str, ...], tuple[str, ...]] = {}
    for members in sets.values():
        label = tuple("+".join(sorted({m[j] for m in members})) for j in range(len(strata)))
        for m in members:
            out[m] = label
    return out


def released_check(results: list[BlockResult], strata_cols: list[np.ndarray], strata: list[str],
                   key_cols: list[np.ndarray], keys: list[str], *, recode_merged: bool) -> None:
    """The k-check on what is released: (stratum, keys, protected values) classes >= k.

    The stratum columns and the declared ``keys`` pass through and identify records
    together with the protected values, so every class of identical released
    (stratum label, keys, protected values) rows of a block's grouped records must hold
    at least k records (blocks of methods whose k counts values are exempt, as in the
    per-block check). Adds ``stats["k_released"]`` to each block; raises
    :class:`PrivacyCheckError` (exit code 4) otherwise, naming the columns."""
    if not strata_cols and not key_cols and all(r.keys is None for r in results):
        return
    n = len(strata_cols[0]) if strata_cols else len(key_cols[0]) if key_cols else results[0].values.shape[0]
    extra = np.zeros((n, 0), dtype=np.float64)
    if strata_cols:
        skeys, srow = _row_keys(strata_cols)
        if recode_merged:
            labels = merged_labels(results, strata)
            label_of = [labels.get(k, k) for k in skeys]
            distinct = {lab: i for i, lab in enumerate(dict.fromkeys(label_of))}
            srow = np.asarray([distinct[lab] for lab in label_of], dtype=np.int64)[srow]
        extra = np.hstack([extra, srow[:, None].astype(np.float64)])
    if key_cols:
        _kkeys, krow = _row_keys(key_cols)
        extra = np.hstack([extra, krow[:, None].astype(np.float64)])
    names = list(strata) + list(keys)
    for r in results:
        if get_method(r.block.method).output != "labels":
            continue
        rows = np.flatnonzero(~np.isnan(r.values).all(axis=1))
        if not rows.size:
            continue
        mixed_keys = [] if r.keys is None else list(r.mixed.names)
        released = extra[rows] if r.keys is None else np.hstack([extra[rows], r.keys[rows].astype(np.float64)])
        sizes, n_classes = row_classes(np.hstack([released, r.values[rows]]))
        k_min = int(sizes.min())
        r.stats["k_released"] = {"columns": names + mixed_keys + list(r.block.columns), "k_min": k_min,
                                 "k_prime": rows.size / n_classes, "k_anonymous": k_min >= r.block.k}
        if k_min < r.block.k:
            small = int((sizes < r.block.k).sum())
            how = (" (the merged strata keep their own values in this output: use the in-memory engine, "
                   "which releases them under one merged label, or --small-strata suppress)"
                   if strata and not recode_merged and any((r.stats.get("strata") or {}).get("merged") or []
                                                           for r in results) else
                   (f" (microaggregate within the keys: --strata {option_list(keys)})" if keys else ""))
            raise PrivacyCheckError(
                f"block {r.block.name!r}: {small} released rows fall in classes of identical "
                f"({name_list(names + mixed_keys, limit=len(names + mixed_keys))}, protected values) smaller than k={r.block.k} (smallest {k_min}); "
                f"nothing was written{how}")


def protect_table(
    table: Table,
    plan: BlockPlan,
    options: RunOptions | None = None,
    *,
    runner: Any = None,
    progress: Callable[[int], None] | None = None,
) -> ProtectResult:
    """Protect every block of ``plan`` in ``table``; return the output table and stats.

    Parameters
    ----------
    options : the run's options (:class:`microagg_cli.request.RunOptions`; default: its
        defaults), of which:
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
        records (:func:`microagg_cli.splitting.split_indices`), each protected on its
        own with the block's z-scaling and its own seed; the extra information loss
        against one exact run is estimated on two neighbouring parts and reported.
    keys : released columns that identify records together with the protected ones
        (a region code): every class of identical (strata, keys, protected values)
        rows must hold at least k records, or nothing is written.
    runner, progress, bound : see :func:`protect_blocks`.

    Merged strata (``small_strata="merge"``) are released under one label per merged
    set (:func:`merged_labels`), so that k holds on the released stratum too.
    """
    options = RunOptions() if options is None else options
    strata = options.strata
    results, parts = protect_blocks(TableSource(table), plan, options, runner=runner, progress=progress,
                                    recode_merged=True)
    values = {col: res.values[:, j] for res in results for j, col in enumerate(res.block.columns)}
    out = assemble_output(table, values, plan.drop)
    for res in results:
        if res.keys is not None:
            for name, column in released_columns(table, res.mixed, res.keys).items():
                out = with_column(out, name, column)
    recoded = _recode_merged(table, results, list(strata or []))
    for name, column in recoded.items():
        out = with_column(out, name, column)
    result = ProtectResult(out, results, {}, overall_stats(results, parts))
    result.overall.pop("strata_recoded", None)
    if recoded:
        result.overall["strata_recoded"] = {
            "rule": "merged strata are released under one label: their values joined by '+'",
            "labels": [{"stratum": dict(zip(strata or [], k)), "released_as": dict(zip(strata or [], v))}
                       for k, v in merged_labels(results, list(strata or [])).items()],
        }
    return result


def _recode_merged(table: Table, results: list[BlockResult], strata: list[str]) -> dict[str, Any]:
    """The stratum columns with every merged stratum's value replaced by its label (text)."""
    import pyarrow as pa

    labels = merged_labels(results, strata)
    if not labels:
        return {}
    source = TableSource(table)
    skeys, srow = _row_keys([source.keys(c)[0] for c in strata])
    out = {}
    for j, name in enumerate(strata):
        new = [labels[k][j] if k in labels else None for k in skeys]
        if all(v is None or v == k[j] for v, k in zip(new, skeys)):
            continue
        col = table.column(name)
        text = col.cast(pa.string()) if not pa.types.is_string(col.type) else col
        values = np.asarray(text.to_pylist(), dtype=object)
        change = np.asarray([v is not None for v in new])[srow]
        values[change] = np.asarray([v for v in new], dtype=object)[srow][change]
        out[name] = pa.array(values.tolist(), type=pa.string())
    return out


def il_parts(X: np.ndarray, Xp: np.ndarray) -> tuple[float, float]:
    """Numerator ||Z - Z'||^2 and denominator SST of IL_SSE over cells observed in both.

    Records left out of the grouping (suppressed or not grouped) are not counted.
    """
    Z, mean, scale = nan_zscore(X)
    Zp = (Xp - mean) / scale
    both = ~np.isnan(Z) & ~np.isnan(Zp)
    dev = np.where(~np.isnan(Z), Z - np.nanmean(Z, axis=0) if (~np.isnan(Z)).any() else 0.0, 0.0)
    return float(((Z - Zp)[both] ** 2).sum()), float((dev[both] ** 2).sum())


#: The report's lower bound LB_NN is computed when its estimated cost is at most this
#: share of the method's estimated time (or less than :data:`LB_FREE_SECONDS`);
#: ``--bound`` / ``--no-bound`` force it either way. Both are estimates from the block's
#: n, p and k (:func:`~microagg_cli.metrics.utility.lb_nn_seconds` and the method's
#: :class:`~microagg_cli.methods.MethodSpec` cost model), never timings: the report of
#: the same input is the same whatever the machine's load. Its k-d tree query grows
#: faster than MDAV on spread-out data.
LB_SHARE = 0.25
LB_FREE_SECONDS = 0.1
#: Above this many records LB_NN's price includes loading scipy's k-d tree code
#: (:data:`~microagg_cli.metrics.utility.SCIPY_SPATIAL_IMPORT_SECONDS`).
LB_SMALL_ROWS = 5000


#: An estimated method time above this many seconds is announced before the method starts.
ANNOUNCE_SECONDS = 30.0


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def estimate_block(spec: Any, block: Block, sizes: list[int], partition_size: int | None = None) -> float:
    """The method's estimated seconds over the block's strata of ``sizes`` records
    (:meth:`microagg_cli.methods.MethodSpec.estimate_seconds`; parts of at most
    ``partition_size`` records each when the block is partitioned)."""
    p, k, params = len(block.columns), int(block.k), dict(block.params)
    total = 0.0
    for n in sizes:
        if partition_size and n > partition_size:
            parts = -(-n // partition_size)
            total += parts * spec.estimate_seconds(-(-n // parts), p, k, params)
        else:
            total += spec.estimate_seconds(n, p, k, params)
    return total


def check_estimate(spec: Any, block: Block, sizes: list[int], time_limit: float,
                   partition_size: int | None = None) -> float:
    """Before a block's method starts: its estimated seconds (:func:`estimate_block`,
    from n, p, k and the method's cost model; no timing probe), announced on stderr
    (a warning) when over :data:`ANNOUNCE_SECONDS`; :class:`InvalidParameterError`
    (exit 2) when over ``time_limit`` seconds (0: no limit)."""
    estimate = estimate_block(spec, block, sizes, partition_size)
    if not np.isfinite(estimate):
        return estimate
    n = sum(sizes)
    what = f"block {block.name}: {spec.name} on {n:,} x {len(block.columns)} records, k={block.k}"
    if time_limit and estimate > time_limit:
        raise InvalidParameterError(
            f"{what} is estimated to take about {_duration(estimate)}, over --time-limit {time_limit:g} s; "
            "raise --time-limit (0 = no limit), or use --partition-size or a faster method (mdav)")
    if estimate > ANNOUNCE_SECONDS:
        log.warning("%s: estimated to take about %s", what, _duration(estimate))
    return estimate


def _seconds(x: float) -> str:
    return f"{x:.2f}" if x < 1 else f"{x:.1f}"


def optimality(X: np.ndarray, k: int, il: float | None, *, method_seconds: float = 0.0,
               bound: str = default(RunOptions, "bound")) -> dict[str, Any]:
    """LB_NN of a block's records (sdc-metrics(7)) and the gap IL_SSE - LB_NN.

    LB_NN bounds the IL_SSE of *every* k-partition of the block's records (strata only
    make the best achievable IL larger), so the gap is how far the method can at most
    be from the optimum. ``bound``: ``"auto"`` computes it when its estimated cost
    (:func:`microagg_cli.metrics.utility.lb_nn_seconds`, plus loading scipy's k-d tree
    above :data:`LB_SMALL_ROWS` records) is at most :data:`LB_SHARE` of
    ``method_seconds`` -- the method's *estimated* seconds on this block
    (:meth:`microagg_cli.methods.MethodSpec.estimate_seconds`) -- or under
    :data:`LB_FREE_SECONDS`, else skips it with a note; ``"on"`` always, ``"off"``
    never. The choice depends on n, p, k and the method only (deterministic) and is
    recorded in ``lb_nn_policy``.
    """
    policy: dict[str, Any] = {"mode": bound}
    hint = "sdc evaluate ORIGINAL PROTECTED computes it (--bound cg for a certified, tighter one)"
    if bound == "off":
        return {"lb_nn": None, "optimality_gap": None, "lb_nn_skipped": f"--no-bound; {hint}",
                "lb_nn_policy": policy}
    if bound == "auto":
        budget = max(LB_SHARE * method_seconds, LB_FREE_SECONDS)
        n, p = X.shape
        estimate = lb_nn_seconds(n, p, k) + (SCIPY_SPATIAL_IMPORT_SECONDS if n > LB_SMALL_ROWS else 0.0)
        policy.update(estimated_seconds=estimate, method_seconds=method_seconds, share=LB_SHARE)
        if estimate > budget:
            return {"lb_nn": None, "optimality_gap": None,
                    "lb_nn_skipped": (f"would take about {_seconds(estimate)} s, more than {LB_SHARE:.0%} of "
                                      f"the method's estimated {_seconds(method_seconds)} s; {hint}, or protect "
                                      "with --bound"),
                    "lb_nn_policy": policy}
    t0 = time.perf_counter()
    with progress_phase("lower bound LB_NN", total=None):
        lb = lb_nn(X, k)
    policy["seconds"] = time.perf_counter() - t0
    return {"lb_nn": lb, "optimality_gap": None if lb is None or il is None else il - lb, "lb_nn_policy": policy}


def overall_stats(results: list[BlockResult], parts: list[tuple[float, float]]) -> dict[str, Any]:
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


def block_stats(
    X: np.ndarray,
    Xp: np.ndarray,
    labels: np.ndarray,
    grouped: np.ndarray,
    parts: list[BlockResult],
    block: Block,
    w: np.ndarray | None,
    bound: str = default(RunOptions, "bound"),
) -> dict[str, Any]:
    """Block statistics over all strata, in the block's own z-scale (``bound``: see :func:`optimality`)."""
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
    sizes, n_classes = row_classes(Xp_rows) if rows.size else (np.array([0]), 0)
    values_k = "k_counts" in first
    stats.update(
        il_sse=(il_sse_observed(X if rows.size == X.shape[0] else X[rows], Xp_rows) if rows.size else None),
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
        estimate = get_method(block.method).estimate_seconds(int(rows.size), X.shape[1], int(block.k), dict(block.params))
        stats.update(optimality(X if rows.size == X.shape[0] else X[rows], block.k, stats["il_sse"],
                                method_seconds=estimate, bound=bound))
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


def single_plan(
    table: Table,
    *,
    k: int | None,
    method: str = default(ProtectRequest, "method"),
    params: Mapping[str, Any] | None = None,
    columns: list[str] | None = None,
    drop: list[str] | None = None,
    passthrough: list[str] | None = None,
    roles: list[str] | None = None,
) -> BlockPlan:
    """The one-block plan of ``sdc protect`` without ``--plan``: the given columns, or by
    default every numeric column that is not dropped, passed through or in a ``role``
    (strata, weights, identifier); see :func:`microagg_cli.io.resolve_columns`."""
    get_method(method)
    if k is None:
        raise InvalidParameterError("k is required (-k K)")
    protected, dropped = resolve_columns(table, columns, drop, passthrough, roles=roles)
    return BlockPlan.single(protected, method=method, k=k, params=params or {}, drop=tuple(dropped),
                            passthrough=tuple(passthrough or ()))


def check_keys(columns: list[str], plan: BlockPlan, keys: list[str] | None, strata: list[str] | None) -> None:
    """Declared key columns exist, are named once and are neither protected, dropped nor strata."""
    seen: set[str] = set()
    for c in keys or []:
        check_named_once("--keys", c, columns, seen)
        if c in plan.columns:
            raise InvalidParameterError(f"key column {c!r} cannot also be protected")
        if c in plan.drop:
            raise InvalidParameterError(f"key column {c!r} cannot also be dropped")
        if c in (strata or []):
            raise InvalidParameterError(f"column {c!r} is both a key and a stratum (strata are checked as keys)")


def check_id_column(columns: list[str], plan: BlockPlan, id_column: str | None) -> None:
    """An identifier column to regenerate exists and is neither protected nor dropped."""
    if id_column is None:
        return
    if id_column not in columns:
        raise DataError(f"--id-column: no column {id_column!r} in the input")
    if id_column in plan.columns or id_column in plan.drop:
        raise InvalidParameterError(f"--id-column {id_column!r} cannot be protected or dropped")
