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

from typing import Iterable, NamedTuple, Sequence

import numpy as np

from ...errors import InvalidParameterError
from ...memo import LastResults, array_key
from ..utility import as_pair as _utility_pair

__all__ = ["OriginalRanks", "checked_pair", "attribute_subset", "original_ranks", "protected_ranks", "ranks"]


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
#: :data:`_KEPT_RANKS_CELLS` values (96 MB kept).
_ORIGINAL_RANKS = LastResults(1, name="risk_ranks")
_KEPT_RANKS_CELLS = 1 << 22


class OriginalRanks(NamedTuple):
    """What the rank-based measures need of the original alone (read-only arrays):
    ``ranks`` (n, p) ``R(x)`` of every original value, ``sorted_cols`` each column
    sorted, ``orders`` each column's stable argsort (the records in rank order, ties
    by row: the stable argsort of its ranks too)."""

    ranks: np.ndarray
    sorted_cols: tuple[np.ndarray, ...]
    orders: tuple[np.ndarray, ...]


def original_ranks(X: np.ndarray) -> OriginalRanks:
    """:class:`OriginalRanks` of ``X``: kept for the last original (by a digest of its
    bytes) up to :data:`_KEPT_RANKS_CELLS` values."""
    X = np.ascontiguousarray(X, dtype=np.float64)

    def compute() -> OriginalRanks:
        n, p = X.shape
        Ro = np.empty((n, p), dtype=np.int64)
        sorted_cols, orders = [], []
        for v in range(p):
            order = np.argsort(X[:, v], kind="stable")
            s = X[order, v]
            Ro[order, v] = np.searchsorted(s, s, side="left")  # searched in order: fast
            for a in (order, s):
                a.flags.writeable = False
            orders.append(order)
            sorted_cols.append(s)
        Ro.flags.writeable = False
        return OriginalRanks(Ro, tuple(sorted_cols), tuple(orders))

    if X.size > _KEPT_RANKS_CELLS:
        return compute()
    return _ORIGINAL_RANKS.get(array_key(X), compute)


def protected_ranks(sorted_cols: Sequence[np.ndarray], Xp: np.ndarray) -> np.ndarray:
    """(n, p) ranks ``R(y)`` of the protected values in the sorted original columns."""
    n, p = Xp.shape
    Rp = np.empty((n, p), dtype=np.int64)
    for v in range(p):
        # the values searched in increasing order: the same positions, 2 x faster
        # (the binary searches walk the sorted column in order)
        col = Xp[:, v]
        order = np.argsort(col)
        Rp[order, v] = np.searchsorted(sorted_cols[v], col[order], side="left")
    return Rp


def ranks(X: np.ndarray, Xp: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Ranks of the original and protected values in the sorted original columns:
    ``(Ro, Rp, sorted_cols)``, ``R(y) = #{original values < y}`` per column; ``Ro`` and
    ``sorted_cols`` are read-only (:func:`original_ranks`).

    >>> Ro, Rp, _ = ranks(np.array([[1.0], [3.0], [3.0]]), np.array([[2.0], [3.0], [0.0]]))
    >>> Ro.ravel().tolist(), Rp.ravel().tolist()
    ([0, 1, 1], [1, 1, 0])
    """
    orig = original_ranks(X)
    return orig.ranks, protected_ranks(orig.sorted_cols, Xp), list(orig.sorted_cols)
