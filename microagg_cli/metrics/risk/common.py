"""What every risk measure shares: checked matrices, attribute subsets, ranks.

The checked pair of matrices, a scenario's sorted attribute subset and the ranks of
values in the sorted original columns.

A *rank* of a value y in column v is its insertion position into the sorted original
column, ``R(y) = #{original values < y}`` (numpy ``searchsorted(..., side="left")``):
tied original values share the smallest rank, a protected value equal to an original
value gets that value's rank. Ranks define the agreement of Fellegi-Sunter linkage
(Fellegi & Sunter 1969; Jaro 1989) and the windows of interval disclosure (Mateo-Sanz,
Sebe & Domingo-Ferrer 2004).
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from ...errors import InvalidParameterError
from ...memo import LastResults, array_key
from ..utility import as_pair as _utility_pair

__all__ = ["checked_pair", "attribute_subset", "original_ranks", "ranks"]


def checked_pair(X: np.ndarray, Xp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`.utility.as_pair`, and at least one record."""
    X, Xp = _utility_pair(X, Xp)
    if X.shape[0] == 0:
        raise InvalidParameterError("risk measures need at least one record")
    return X, Xp


def attribute_subset(attributes: Iterable[int] | None, p: int) -> tuple[int, ...]:
    """The sorted scenario of ``attributes`` (column positions; None: every column).

    >>> attribute_subset([2, 0], 3), attribute_subset(None, 2)
    ((0, 2), (0, 1))
    """
    if attributes is None:
        return tuple(range(p))
    sc = tuple(sorted(int(v) for v in attributes))
    if not sc or len(set(sc)) != len(sc) or sc[0] < 0 or sc[-1] >= p:
        raise InvalidParameterError(f"invalid attribute subset {list(attributes)} for {p} columns")
    return sc


#: The original's sorted columns and ranks of the last original (``sdc compare``
#: evaluates every cell against the same original), when it has at most
#: :data:`_KEPT_RANKS_CELLS` values (64 MB kept).
_ORIGINAL_RANKS = LastResults(1, name="risk_ranks")
_KEPT_RANKS_CELLS = 1 << 22


def original_ranks(X: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """``(Ro, sorted_cols)`` of :func:`ranks`, which depend on the original alone: kept
    for the last original (by a digest of its bytes) up to :data:`_KEPT_RANKS_CELLS`
    values, read-only."""
    X = np.ascontiguousarray(X, dtype=np.float64)

    def compute() -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        n, p = X.shape
        Ro = np.empty((n, p), dtype=np.int64)
        sorted_cols = []
        for v in range(p):
            s = np.sort(X[:, v])
            s.flags.writeable = False
            sorted_cols.append(s)
            Ro[:, v] = np.searchsorted(s, X[:, v], side="left")
        Ro.flags.writeable = False
        return Ro, tuple(sorted_cols)

    if X.size > _KEPT_RANKS_CELLS:
        return compute()
    return _ORIGINAL_RANKS.get(array_key(X), compute)


def ranks(X: np.ndarray, Xp: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Ranks of the original and protected values in the sorted original columns:
    ``(Ro, Rp, sorted_cols)``, ``R(y) = #{original values < y}`` per column; ``Ro`` and
    ``sorted_cols`` are read-only (:func:`original_ranks`).

    >>> Ro, Rp, _ = ranks(np.array([[1.0], [3.0], [3.0]]), np.array([[2.0], [3.0], [0.0]]))
    >>> Ro.ravel().tolist(), Rp.ravel().tolist()
    ([0, 1, 1], [1, 1, 0])
    """
    n, p = X.shape
    Ro, sorted_cols = original_ranks(X)
    Rp = np.empty((n, p), dtype=np.int64)
    for v in range(p):
        # the values searched in increasing order: the same positions, 2 x faster
        # (the binary searches walk the sorted column in order)
        col = Xp[:, v]
        order = np.argsort(col)
        Rp[order, v] = np.searchsorted(sorted_cols[v], col[order], side="left")
    return Ro, Rp, list(sorted_cols)
