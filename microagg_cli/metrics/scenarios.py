"""Intruder scenarios: which sets of attributes the intruder is assumed to know.

A scenario is a tuple of column positions in increasing order. By default every
non-empty subset of the p protected attributes is a scenario when p <= 10 (2^p - 1 of
them); for larger p a seeded random sample of 512 subsets stratified by size. With a
blocking plan each scenario is labelled by the number of blocks it touches ("1G",
"2G", ...), and risk measures are summarised per label (mean over its scenarios) and
by their worst scenario.
"""

from __future__ import annotations

from itertools import combinations
from math import comb
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..errors import InvalidParameterError

__all__ = [
    "Scenario",
    "all_subsets",
    "sample_subsets",
    "default_scenarios",
    "validate_subsets",
    "validate_blocks",
    "blocks_touched",
    "scenario_label",
    "summarize",
    "WORST_DIRECTION",
]

Scenario = tuple[int, ...]

#: For each summarised measure: is the worst scenario the one with the largest
#: ("max") or the smallest ("min") value?
WORST_DIRECTION: dict[str, str] = {
    "dld": "max",
    "pld": "max",
    "id": "max",
    "sdid": "max",
    "k_prime": "min",
    "k_min": "min",
    "share_below_k": "max",
}


def all_subsets(p: int) -> list[Scenario]:
    """Every non-empty subset of ``range(p)``, by size then lexicographically.

    Examples
    --------
    >>> all_subsets(3)
    [(0,), (1,), (2,), (0, 1), (0, 2), (1, 2), (0, 1, 2)]
    """
    return [c for size in range(1, p + 1) for c in combinations(range(p), size)]


def _quotas(p: int, count: int) -> list[int]:
    """Scenarios per size 1..p: as equal as possible, capped at C(p, size).

    Water-filling: every size gets the same share of what is left; a size that cannot
    take its share (fewer subsets exist) takes all its subsets and the rest is shared
    again; a final remainder goes one each to the open sizes with the most subsets
    (smaller size first on ties).
    """
    cap = [comb(p, s) for s in range(1, p + 1)]
    quota = [0] * p
    left = min(count, sum(cap))
    while left > 0:
        open_ = [i for i in range(p) if quota[i] < cap[i]]
        share = left // len(open_)
        if share == 0:
            for i in sorted(open_, key=lambda i: (-cap[i], i))[:left]:
                quota[i] += 1
            break
        for i in open_:
            take = min(share, cap[i] - quota[i])
            quota[i] += take
            left -= take
    return quota


def sample_subsets(p: int, count: int, rng: np.random.Generator) -> list[Scenario]:
    """A random sample of ``count`` distinct non-empty subsets, stratified by size.

    Sizes get equal quotas (capped at the number of subsets of that size, see
    :func:`_quotas`); within a size the subsets are drawn uniformly without
    replacement. Deterministic for a given generator state. Returned by size then
    lexicographically.
    """
    out: list[Scenario] = []
    for size, q in zip(range(1, p + 1), _quotas(p, count)):
        if q == 0:
            continue
        total = comb(p, size)
        if total <= 4 * q or total <= 4096:
            every = list(combinations(range(p), size))
            pick = rng.choice(len(every), size=q, replace=False)
            chosen = {every[i] for i in pick}
        else:  # rejection sampling; acceptance >= 3/4 because q < total / 4
            chosen = set()
            while len(chosen) < q:
                chosen.add(tuple(sorted(int(v) for v in rng.choice(p, size=size, replace=False))))
        out.extend(sorted(chosen))
    return out


def default_scenarios(
    p: int,
    *,
    rng: np.random.Generator | None = None,
    max_all: int = 10,
    sample_size: int = 512,
) -> tuple[list[Scenario], str]:
    """The default scenarios and their mode: ``("all", ...)`` or ``("sample", ...)``.

    Every non-empty subset when ``p <= max_all``, else :func:`sample_subsets` of
    ``sample_size`` with ``rng`` (``default_rng(0)`` when None).
    """
    if p <= max_all:
        return all_subsets(p), "all"
    gen = rng if rng is not None else np.random.default_rng(0)
    return sample_subsets(p, sample_size, gen), "sample"


def validate_subsets(subsets: Iterable[Iterable[int]], p: int) -> list[Scenario]:
    """Check explicit scenarios (``--known``) and return them as sorted tuples.

    Raises :class:`InvalidParameterError` for an empty subset, a position outside
    0..p-1, an attribute named twice in one subset, or the same subset twice.
    """
    out: list[Scenario] = []
    seen: set[Scenario] = set()
    for raw in subsets:
        items = [int(v) for v in raw]
        if not items:
            raise InvalidParameterError("an intruder scenario must name at least one attribute")
        if any(v < 0 or v >= p for v in items):
            raise InvalidParameterError(
                f"intruder scenario {items} names a column outside 0..{p - 1}"
            )
        sc = tuple(sorted(items))
        if len(set(sc)) != len(sc):
            raise InvalidParameterError(f"intruder scenario {items} names an attribute twice")
        if sc in seen:
            raise InvalidParameterError(f"intruder scenario {list(sc)} is given twice")
        seen.add(sc)
        out.append(sc)
    if not out:
        raise InvalidParameterError("no intruder scenario given")
    return out


def validate_blocks(blocks: Sequence[Sequence[int]] | None, p: int) -> list[list[int]]:
    """Blocks as lists of column positions; they must partition ``range(p)``.

    ``None`` means one block of all columns.
    """
    if blocks is None:
        return [list(range(p))]
    out = [[int(v) for v in b] for b in blocks]
    flat = [v for b in out for v in b]
    if any(not b for b in out):
        raise InvalidParameterError("a block must contain at least one column")
    if sorted(flat) != list(range(p)):
        raise InvalidParameterError(
            f"blocks must partition the {p} protected columns (each column in exactly one block)"
        )
    return out


def blocks_touched(subset: Sequence[int], blocks: Sequence[Sequence[int]] | None) -> int:
    """How many blocks contain at least one attribute of ``subset``.

    Examples
    --------
    >>> blocks_touched((0, 2, 3), [[0, 1], [2], [3, 4]])
    3
    >>> blocks_touched((0, 1), [[0, 1], [2]])
    1
    """
    if blocks is None:
        return 1 if subset else 0
    s = set(subset)
    return sum(1 for b in blocks if s.intersection(b))


def scenario_label(subset: Sequence[int], blocks: Sequence[Sequence[int]] | None) -> str:
    """``"<m>G"``, m the number of blocks the scenario touches (``"1G"`` without a plan)."""
    return f"{blocks_touched(subset, blocks)}G"


def _mean(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return float(np.mean(vals)) if vals else None


def _worst(
    values: list[float | None], subsets: Sequence[Scenario], labels: Sequence[str], direction: str
) -> dict[str, Any] | None:
    best_i = None
    for i, v in enumerate(values):
        if v is None:
            continue
        if best_i is None or (v > values[best_i] if direction == "max" else v < values[best_i]):
            best_i = i
    if best_i is None:
        return None
    return {"value": values[best_i], "attributes": list(subsets[best_i]), "label": labels[best_i]}


def summarize(
    measures: Mapping[str, Sequence[float | None]],
    subsets: Sequence[Scenario],
    labels: Sequence[str],
) -> dict[str, Any]:
    """Means and worst scenarios, overall and per label.

    Parameters
    ----------
    measures : measure name -> one value per scenario (None = not computed; left out
        of means). Directions come from :data:`WORST_DIRECTION` (default "max").
    subsets, labels : the scenarios and their labels, same order.

    Returns
    -------
    ``{"mean": {measure: float|None}, "worst": {measure: {"value", "attributes",
    "label"}|None}, "by_label": {label: {"scenarios": int, "mean": {...},
    "worst": {...}}}}``; labels sorted by number of blocks. Ties for the worst go to
    the earlier scenario.
    """
    out: dict[str, Any] = {"mean": {}, "worst": {}, "by_label": {}}
    measures = {name: list(vals) for name, vals in measures.items()}
    for name, vals in measures.items():
        out["mean"][name] = _mean(vals)
        out["worst"][name] = _worst(vals, subsets, labels, WORST_DIRECTION.get(name, "max"))
    for lab in sorted(set(labels), key=lambda s: (int(s[:-1]) if s[:-1].isdigit() else 0, s)):
        idx = [i for i, x in enumerate(labels) if x == lab]
        sub = [subsets[i] for i in idx]
        labs = [labels[i] for i in idx]
        entry: dict[str, Any] = {"scenarios": len(idx), "mean": {}, "worst": {}}
        for name, vals in measures.items():
            v = [vals[i] for i in idx]
            entry["mean"][name] = _mean(v)
            entry["worst"][name] = _worst(v, sub, labs, WORST_DIRECTION.get(name, "max"))
        out["by_label"][lab] = entry
    return out
