"""Mixed microaggregation in the block loop: categorical and ordinal keys with the rest.

Categorical and ordinal keys are grouped with the continuous columns of one block, and
released as each group's mode / median.

The keys are read once (:func:`read_keys`: integer codes, the first record holding each
category), join exactly one block of the plan (:func:`split_plan`), are grouped with
that block's continuous columns in every stratum (:func:`protect_mixed_rows`, running
:func:`microagg_cli.methods.mixed.mixed_mdav` then the local search of
:mod:`microagg_cli.methods.mixed_refine`; ``ils`` adds its seeded kicks), and are released by taking, for every
record, the cell of the first record in the input holding its group's mode or median
category (:func:`released_columns`): the released cell is a cell of the input, byte
for byte -- CSV text as written, SPSS/Stata codes with their value labels.

The k-check of the block loop (:func:`microagg_cli.protection.table.released_check`)
then counts classes of identical released rows over the strata, ``--keys``, these keys
and the continuous values together.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..blocking import Block, BlockPlan
from ..errors import DataError, InvalidParameterError, PrivacyCheckError
from ..methods import get_method
from ..methods.mixed import MIXED_METHODS, REFERENCE, check_weights, mixed_mdav, mixed_objective
from ..methods.mixed_refine import KICKS_PER_GROUP, mixed_ils, mixed_local_search
from ..partition import aggregate, aggregate_codes, canonical_labels, check_min_group_size, size_histogram, sse, sst
from ..partition import zscore
from ..progress import advance as progress_advance
from ..progress import phase as progress_phase
from ..request import RunOptions
from ..splitting import block_scaling, split_indices
from .block import BlockResult, check_named_once, il_sse_observed, row_classes

__all__ = ["MixedKeys", "read_keys", "split_plan", "check_options", "protect_mixed_rows", "released_columns",
           "TIE_RULE", "MEDIAN_RULE", "mixed_stats", "check_ils_params", "check_method",
           "protect_mixed_parts", "released_cells", "mixed_part_task"]

#: How a mode tie is broken (the report and the docs quote it).
TIE_RULE = "mode; ties: the category met first in the input"
#: Which median an ordinal key gets.
MEDIAN_RULE = "lower median category (the ceil(m/2)-th smallest of a group of m)"


@dataclass
class MixedKeys:
    """The categorical then ordinal keys of a run, coded.

    Attributes
    ----------
    names : key columns, the categorical ones first.
    ordered : per key, True for an ordinal key.
    codes : (n, q) int64; nominal codes by first appearance, ordinal codes in the
        categories' order; -1 = missing cell.
    levels : categories per key.
    first_row : per key, the input row of the first record holding each code.
    weights : the role weights (:func:`microagg_cli.methods.mixed.check_weights`).
    """

    names: list[str]
    ordered: list[bool]
    codes: np.ndarray
    levels: list[int]
    first_row: list[np.ndarray]
    weights: dict[str, float]

    @property
    def nominal(self) -> list[int]:
        return [j for j, o in enumerate(self.ordered) if not o]

    @property
    def ordinal(self) -> list[int]:
        return [j for j, o in enumerate(self.ordered) if o]


def _code(values: np.ndarray, missing: np.ndarray, name: str, ordered: bool) -> tuple[np.ndarray, int]:
    import pandas as pd

    n = len(values)
    codes = np.full(n, -1, dtype=np.int64)
    ok = ~np.asarray(missing, dtype=bool)
    if not ok.any():
        raise DataError(f"{'--ordinal' if ordered else '--categorical'}: column {name!r} holds no value")
    present = values[ok]
    if not ordered:
        text = np.asarray([v if isinstance(v, str) else repr(v) if isinstance(v, float) else str(v)
                           for v in present], dtype=object)
        codes[ok], uniques = pd.factorize(text, sort=False)
        return codes, len(uniques)
    cat = getattr(values, "dtype", None)
    if isinstance(cat, pd.CategoricalDtype) and cat.ordered:  # pragma: no cover - Arrow reads give objects
        codes[ok] = pd.Categorical(present, dtype=cat).codes
        return codes, len(cat.categories)
    nums = pd.to_numeric(pd.Series(present, dtype=object), errors="coerce").to_numpy(dtype=np.float64)
    if np.isnan(nums).any():
        i = int(np.flatnonzero(ok)[np.flatnonzero(np.isnan(nums))[0]])
        raise DataError(
            f"--ordinal: column {name!r} holds a value that is not a number (row {i + 1}), so the order of its "
            "categories is unknown; code the categories as numbers in their order, or declare it --categorical")
    uniq, inv = np.unique(nums, return_inverse=True)
    codes[ok] = inv.reshape(-1)
    return codes, int(uniq.size)


def read_keys(source: Any, options: RunOptions) -> MixedKeys | None:
    """The run's ``categorical`` and ``ordinal`` keys read from ``source`` (a
    :class:`~microagg_cli.protection.table.ColumnSource`), or None without any."""
    cats, ords = list(options.categorical or []), list(options.ordinal or [])
    if not cats and not ords:
        return None
    names = cats + ords
    n = source.n_rows
    codes = np.empty((n, len(names)), dtype=np.int64)
    levels, first = [], []
    for j, name in enumerate(names):
        values, missing = source.keys(name)
        codes[:, j], lv = _code(np.asarray(values, dtype=object), missing, name, j >= len(cats))
        fr = np.full(lv, -1, dtype=np.int64)
        ok = np.flatnonzero(codes[:, j] >= 0)
        col = codes[ok, j]
        fr[col[::-1]] = ok[::-1]  # the last write wins: the first row of every code
        levels.append(lv)
        first.append(fr)
    return MixedKeys(names, [j >= len(cats) for j in range(len(names))], codes, levels, first,
                     check_weights(options.mixed_weights))


def check_options(columns: list[str], plan: BlockPlan, options: RunOptions, mixed_at: int | None = None) -> None:
    """The key columns exist, are named once, have no other role; the options fit; the
    block the keys join (``mixed_at``, :func:`split_plan`) runs a method that groups them
    with parameters it honours (before any block runs)."""
    cats, ords = list(options.categorical or []), list(options.ordinal or [])
    if not cats and not ords:
        if options.mixed_weights:
            raise InvalidParameterError("--mixed-weights needs --categorical or --ordinal keys")
        return
    seen: set[str] = set()
    others = {"strata": options.strata or [], "keys": options.keys or [],
              "weights": [options.weights] if options.weights else []}
    for opt, cols in (("--categorical", cats), ("--ordinal", ords)):
        for c in cols:
            check_named_once(opt, c, columns, seen, "is named twice (or as both categorical and ordinal)")
            if c in plan.columns:
                raise InvalidParameterError(f"{opt[2:]} key {c!r} cannot also be protected as a continuous column")
            if c in plan.drop or c in plan.passthrough:
                raise InvalidParameterError(f"{opt[2:]} key {c!r} cannot also be dropped or passed through")
            for role, names in others.items():
                if c in names:
                    raise InvalidParameterError(f"{opt[2:]} key {c!r} cannot also be one of the {role}")
    check_weights(options.mixed_weights)
    if options.missing == "available":
        raise InvalidParameterError(
            "--missing available groups on observed values, which mixed keys do not support; use --missing "
            "complete (records with a missing key or value are left out and blanked) or error")
    if mixed_at is not None:
        check_method(plan.blocks[mixed_at])


def check_method(block: Block) -> str:
    """The method of the block the keys join, if it groups keys (``mdav``, ``ils``) with
    parameters it honours; otherwise :class:`InvalidParameterError` (exit code 2), so
    that no report names a method that did not run."""
    spec = get_method(block.method)
    if spec.name not in MIXED_METHODS:
        raise InvalidParameterError(
            f"method {spec.name!r} does not group categorical/ordinal keys; use {' or '.join(MIXED_METHODS)}")
    params = dict(block.params)
    if spec.name == "ils":
        check_ils_params(params)
    elif params:
        raise InvalidParameterError(
            f"mdav with categorical/ordinal keys runs heterogeneous MDAV and a local search on the mixed "
            f"objective, and takes no parameters (got {', '.join(sorted(params))})")
    return spec.name


def split_plan(plan: BlockPlan, options: RunOptions) -> tuple[BlockPlan, int | None]:
    """The plan without the key columns, and the index of the block the keys join.

    A plan block may name the keys among its columns (all of them in one block); they
    are taken out of its continuous columns and join its grouping. Otherwise a plan of
    one block takes them. Keys split over blocks, or several blocks none of which names
    them, are refused (exit code 2): the keys must be grouped in one block, or k would
    not hold on the released rows."""
    keys = list(options.categorical or []) + list(options.ordinal or [])
    if not keys:
        return plan, None
    holders = [i for i, b in enumerate(plan.blocks) if any(c in keys for c in b.columns)]
    if len(holders) > 1:
        raise InvalidParameterError(
            "the categorical/ordinal keys are split over blocks "
            f"{', '.join(repr(plan.blocks[i].name) for i in holders)}: all of them must be grouped in one block")
    if holders:
        i = holders[0]
        b = plan.blocks[i]
        missing = [c for c in keys if c not in b.columns]
        if missing:
            raise InvalidParameterError(
                f"block {b.name!r} names some categorical/ordinal keys but not {', '.join(missing)}: "
                "all of them must be grouped in one block")
        rest = tuple(c for c in b.columns if c not in keys)
        if not rest:
            raise InvalidParameterError(f"block {b.name!r} holds no continuous column besides the keys")
        blocks = list(plan.blocks)
        blocks[i] = Block(b.name, rest, b.method, b.k, b.params)
        return dataclasses.replace(plan, blocks=tuple(blocks) if isinstance(plan.blocks, tuple) else blocks), i
    if len(plan.blocks) != 1:
        raise InvalidParameterError(
            "with several blocks, name the categorical/ordinal keys among the columns of the one block "
            "they are grouped with")
    return plan, 0


def protect_mixed_rows(X: np.ndarray, codes: np.ndarray, keys: MixedKeys, block: Block, *, seed: Any,
                       stat: str, weights: np.ndarray | None, name: str) -> BlockResult:
    """Group one stratum's records on continuous values and keys together; release
    means (``stat``, ``weights``) and modes / median categories.

    Returns a :class:`BlockResult` whose ``keys`` holds the released codes (n, q); the
    privacy invariant is verified on the whole released row (values and keys)."""
    spec = get_method(check_method(block))
    k = int(block.k)
    n = X.shape[0]
    if n < k:
        from ..errors import InfeasibleError

        raise InfeasibleError(f"block {name!r}: {n} record(s) to group, fewer than k={k}")
    Z, _mean, _scale, constant = zscore(X)
    nominal = codes[:, keys.nominal]
    ordinal = codes[:, keys.ordinal]
    levels_o = [keys.levels[j] for j in keys.ordinal]
    t0 = time.perf_counter()
    params = dict(block.params)
    ils_args = check_ils_params(params) if spec.name == "ils" else None
    kw = dict(nominal=nominal, ordinal=ordinal, ordinal_levels=levels_o, weights=keys.weights)
    # an MDAV step scans the records left: the time left is estimated on quadratic work
    with progress_phase(f"{name}: heterogeneous MDAV", total=n, work="quadratic"):
        labels = mixed_mdav(Z, k, **kw)
    progress_advance(n)  # the block's phase shows them grouped (the caller then commits the same count)
    objective = {"mdav": mixed_objective(Z, labels, **kw)}
    info: dict[str, Any] = {}
    with progress_phase(f"{name}: local search on the mixed objective", total=None, unit="records visited"):
        if ils_args is None:
            labels = mixed_local_search(Z, labels, k, params=params, info=info, **kw)
        else:
            labels = mixed_ils(Z, labels, k, rng=np.random.default_rng(seed), info=info, **ils_args, **kw)
    objective["final"] = mixed_objective(Z, labels, **kw)
    seconds = time.perf_counter() - t0
    labels = canonical_labels(labels)
    check_min_group_size(labels, k, where=f"block {name!r}")
    Xp = aggregate(X, labels, stat=stat, weights=weights)
    released = np.column_stack([aggregate_codes(codes[:, j], labels, ordered=keys.ordered[j])
                                for j in range(codes.shape[1])])
    sizes, n_classes = row_classes(np.hstack([Xp, released.astype(np.float64)]))
    if sizes.min() < k:
        raise PrivacyCheckError(f"block {name!r}: {int((sizes < k).sum())} released rows fall in classes "
                                f"smaller than k={k}; nothing was written")
    stats = {
        "n_groups": int(labels.max()) + 1,
        "group_size_histogram": {str(s): c for s, c in size_histogram(labels).items()},
        "sse": sse(Z, labels), "sst": sst(Z),
        "il_sse": il_sse_observed(X, Xp), "k_prime": n / n_classes, "k_min": int(sizes.min()),
        "share_below_k": float((sizes < k).mean()), "k_anonymous": bool(sizes.min() >= k),
        "constant_columns": [block.columns[j] for j in np.flatnonzero(constant)], "seconds": seconds,
        "mixed_search": {"objective_mdav": objective["mdav"], "objective": objective["final"], **info},
    }
    out = BlockResult(Block(name, tuple(block.columns), spec.name, k, params), Xp, labels, stats)
    out.keys = released
    return out


def protect_mixed_parts(X: np.ndarray, codes: np.ndarray, keys: MixedKeys, block: Block, *,
                        seed: np.random.SeedSequence, stat: str, weights: np.ndarray | None, name: str,
                        partition_size: int | None, progress: Any = None, runner: Any = None) -> BlockResult:
    """:func:`protect_mixed_rows` on one stratum, in parts of at most ``partition_size``
    records when it holds more (``--partition-size``).

    The parts are cut as the partitioned mode cuts numeric blocks
    (:func:`microagg_cli.splitting.split_indices` on the records' continuous values
    z-scored over the stratum: neighbours along principal axes stay together; key
    classes are not kept whole); part j is grouped on its own with the seed
    ``SeedSequence(entropy, spawn_key + (j,))``, so the result depends on the part, never
    on the order. Every group of every part holds k..2k-1 records and is released as one
    row, so every class of identical released rows -- over the whole file -- holds at
    least k records (the block loop's k-check counts them again). ``progress`` is told
    the records of every finished part; ``runner`` runs the parts (:func:`mixed_part_task`;
    :class:`microagg_cli.protection.partitioned.LocalRunner` by default, or the Dask
    engine's, which may finish them in any order: the result does not depend on it)."""
    n = X.shape[0]
    if not partition_size or n <= partition_size:
        res = protect_mixed_rows(X, codes, keys, block, seed=seed, stat=stat, weights=weights, name=name)
        if progress is not None:
            progress(n)
        return res
    mean, scale = block_scaling(X)
    parts = split_indices(np.nan_to_num((X - mean) / scale), int(partition_size), int(block.k))
    values = np.empty_like(X)
    released = np.empty(codes.shape, dtype=np.int64)
    labels = np.full(n, -1, dtype=np.int64)
    spawn = tuple(seed.spawn_key)
    slim = dataclasses.replace(keys, codes=np.zeros((0, codes.shape[1]), dtype=np.int64), first_row=[])
    results: list[Any] = [None] * len(parts)

    def on_result(j: int, res: BlockResult) -> None:
        results[j] = res
        if progress is not None:
            progress(int(parts[j].size))

    from .partitioned import LocalRunner

    (runner or LocalRunner()).run(
        ((mixed_part_task, (X[rows], codes[rows], slim, block, seed.entropy, spawn + (j,), stat,
                            None if weights is None else weights[rows], f"{name}#part{j + 1}"))
         for j, rows in enumerate(parts)), on_result)
    offset = 0
    for rows, res in zip(parts, results):
        values[rows] = res.values
        released[rows] = res.keys
        labels[rows] = res.labels + offset
        offset += int(res.labels.max()) + 1
    k = int(block.k)
    sizes, n_classes = row_classes(np.hstack([values, released.astype(np.float64)]))
    search = _combine([r.stats["mixed_search"] for r in results])
    Z = zscore(X)[0]
    stats = dict(results[0].stats)
    stats.update(
        n_groups=offset, group_size_histogram={str(s): c for s, c in size_histogram(labels).items()},
        sse=sse(Z, labels), sst=sst(Z), il_sse=il_sse_observed(X, values), k_prime=n / n_classes,
        k_min=int(sizes.min()), share_below_k=float((sizes < k).mean()), k_anonymous=bool(sizes.min() >= k),
        constant_columns=sorted({c for r in results for c in r.stats["constant_columns"]}),
        seconds=sum(r.stats["seconds"] for r in results), mixed_search=search,
        partitions={"size": int(partition_size), "count": len(parts), "smallest": int(min(p.size for p in parts)),
                    "largest": int(max(p.size for p in parts))},
    )
    out = BlockResult(results[0].block, values, labels, stats)
    out.keys = released
    return out


def mixed_part_task(X: np.ndarray, codes: np.ndarray, keys: MixedKeys, block: Block, entropy: Any,
                    spawn_key: tuple[int, ...], stat: str, weights: np.ndarray | None, name: str) -> BlockResult:
    """Group one part of a stratum (a task: runs in this process or on a Dask worker);
    ``keys`` needs its roles, levels and weights only."""
    seed = np.random.SeedSequence(entropy, spawn_key=tuple(spawn_key))
    return protect_mixed_rows(X, codes, keys, block, seed=seed, stat=stat, weights=weights, name=name)


def check_ils_params(params: dict[str, Any]) -> dict[str, Any]:
    """``ils``'s parameters that apply to the mixed search (``iterations``: kicks,
    ``time_budget``), as :func:`microagg_cli.methods.mixed_refine.mixed_ils` keywords;
    the others are refused (exit code 2): ``start`` other than mdav (the mixed search
    starts from heterogeneous MDAV) and ``threads`` (it runs in one thread)."""
    out: dict[str, Any] = {}
    for name, value in params.items():
        if name == "start" and value == "mdav":
            continue
        if name == "iterations":
            out["iterations"] = int(value)
        elif name == "time_budget":
            out["time_budget"] = float(value)
        else:
            raise InvalidParameterError(
                f"ils with categorical/ordinal keys: parameter {name}={value} does not apply (the mixed search "
                "starts from heterogeneous MDAV and runs in one thread; it takes iterations and time_budget)")
    return out


def mixed_stats(keys: MixedKeys, released: np.ndarray, grouped: np.ndarray, method: str = "mdav",
                searches: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The block report's ``mixed`` entry: roles, weights, rules, the search run (per
    stratum: ``searches``, the ``mixed_search`` stats of :func:`protect_mixed_rows`) and,
    per key, the share of grouped records whose released category differs from their
    own (no values)."""
    grouping = ("heterogeneous MDAV, then a local search on the mixed objective (moves and swaps between "
                "neighbouring groups until none helps; never worse than the MDAV start)")
    if method == "ils":
        grouping += (f", then iterated local search: seeded kicks (default {KICKS_PER_GROUP} per group), each "
                     "kept only if the mixed objective drops")
    rows = np.flatnonzero(grouped)
    changed = {}
    for j, name in enumerate(keys.names):
        changed[name] = float((released[rows, j] != keys.codes[rows, j]).mean()) if rows.size else None
    return {
        "categorical": [n for n, o in zip(keys.names, keys.ordered) if not o],
        "ordinal": [n for n, o in zip(keys.names, keys.ordered) if o],
        "weights": dict(keys.weights),
        "distance": ("w_continuous * squared z-score differences + w_ordinal * squared differences of the "
                     "z-scored mid-ranks + w_categorical * mismatches (0/1)"),
        "release": {"categorical": TIE_RULE, "ordinal": MEDIAN_RULE},
        "grouping": grouping,
        "reference": REFERENCE,
        "changed_share": changed,
        "mean_changed_share": float(np.mean([v for v in changed.values() if v is not None])) if rows.size else None,
        **({"search": _search_summary(searches)} if searches else {}),
    }


def _combine(searches: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``mixed_search`` stats of several strata or parts as one: the objectives
    summed (each in its own z-scale), the most passes, the kicks summed, and
    ``stopped`` ``"time_budget"`` when a budget stopped any."""
    out: dict[str, Any] = {
        "objective_mdav": float(sum(s["objective_mdav"] for s in searches)),
        "objective": float(sum(s["objective"] for s in searches)),
        "passes": max(int(s.get("passes", 0)) for s in searches),
    }
    if any("kicks" in s for s in searches):
        out["kicks"] = int(sum(s.get("kicks", 0) for s in searches))
        out["kept"] = int(sum(s.get("kept", 0) for s in searches))
        out["stopped"] = "time_budget" if any(s.get("stopped") == "time_budget" for s in searches) else "iterations"
    return out


def _search_summary(searches: list[dict[str, Any]]) -> dict[str, Any]:
    """The report's ``search``: the mixed objective before (MDAV) and after the search,
    summed over strata and parts, and the work done (passes, kicks, and whether a time
    budget stopped the kicks)."""
    out = _combine(searches)
    if "kicks" in out:
        out["kicks_kept"] = out.pop("kept")
        out["stopped_by_time_budget"] = out.pop("stopped") == "time_budget"
    return out


def released_columns(table: Any, keys: MixedKeys, released: np.ndarray) -> dict[str, Any]:
    """The key columns as released: every record gets the input cell of the first record
    holding its released code (null where the code is -1: not grouped or suppressed)."""
    return {name: released_cells(table.data.column(name), keys.first_row[j], released[:, j])
            for j, name in enumerate(keys.names)}


def released_cells(column: Any, first_row: np.ndarray, code: np.ndarray) -> Any:
    """One key column as released: the Arrow ``column``'s cell of the first record
    holding each record's released ``code`` (``first_row``: per code, that record), null
    where the code is -1. The streaming engines call it with the column they read."""
    import pyarrow as pa

    rows = np.where(code >= 0, first_row[np.maximum(code, 0)], 0)
    return column.take(pa.array(rows, mask=code < 0, type=pa.int64()))
