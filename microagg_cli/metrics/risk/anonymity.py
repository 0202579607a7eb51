"""Real anonymity k' of a protected file over an attribute set.

k' is the number of records per class of identical protected rows; with it come the
smallest class and the share of records in classes
smaller than k, with the exact row classes (:class:`RowClasses`) that the DLD search
also uses to merge identical rows (Domingo-Ferrer, J. & Torra, V. (2005), Ordinal,
continuous and heterogeneous k-anonymity through microaggregation, Data Mining and
Knowledge Discovery 11(2)). Rows are compared by exact equality of the values.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

from .._risk_kernels import refine_classes
from .common import attribute_subset

__all__ = ["RowClasses", "class_summary", "real_anonymity"]


class RowClasses:
    """Classes of protected rows that are exactly equal on an attribute subset.

    Each column is factorised once, and so are the distinct rows of the file (equal on
    every column; a microaggregated file has about n / k of them). The classes of a
    subset are built over the distinct rows, column by column (key = previous class *
    cardinality + column code, refactorised), then read per record through its
    distinct row; the classes of every prefix are kept on a stack, so scenarios
    visited in lexicographic order cost about one factorisation of the distinct rows
    each. Classes are numbered by first appearance over the records: the distinct
    rows are in the order of their first records, so numbering them by first
    appearance gives the same numbers.
    """

    def __init__(self, Xp: np.ndarray) -> None:
        self.n = Xp.shape[0]
        codes: list[np.ndarray] = []
        self.card: list[int] = []
        zero = np.zeros(self.n, dtype=np.int64)
        table = np.empty(self._table_size(self.n), dtype=np.int64)
        for v in range(Xp.shape[1]):
            uniq, inv = np.unique(Xp[:, v], return_inverse=True)
            # renumbered by first appearance, as every refinement is (see first_rows)
            c = np.empty(self.n, dtype=np.int64)
            refine_classes(zero, inv.astype(np.int64).ravel(), np.int64(uniq.size), table, c)
            codes.append(c)
            self.card.append(int(uniq.size))
        # the distinct rows (classes on every column), each record's distinct row
        of_row = codes[0] if codes else zero
        for v in range(1, len(codes)):
            out = np.empty(self.n, dtype=np.int64)
            refine_classes(of_row, codes[v], np.int64(self.card[v]), table, out)
            of_row = out
        first = self.first_rows(of_row) if codes else np.zeros(min(self.n, 1), dtype=np.int64)
        #: per record, its distinct row; per column, the code of each distinct row
        self.of_row = of_row
        self.n_distinct = int(first.size)
        self.codes = [c[first] for c in codes]
        self._stack: list[tuple[int, np.ndarray, int]] = []

    @staticmethod
    def _table_size(n: int) -> int:
        """The hash table of :func:`.._risk_kernels.refine_classes` for ``n`` keys."""
        return 1 << max(4, int(2 * n - 1).bit_length())

    def classes(self, subset: Sequence[int]) -> tuple[np.ndarray, int]:
        """(class code of each record in 0..m-1, m) for the sorted ``subset``."""
        common = 0
        while (
            common < len(self._stack)
            and common < len(subset)
            and self._stack[common][0] == subset[common]
        ):
            common += 1
        del self._stack[common:]
        for v in subset[common:]:
            if self._stack:
                _, prev, _m = self._stack[-1]
                # classes of (previous class, code) over the distinct rows: hashed once
                out = np.empty(self.n_distinct, dtype=np.int64)
                m = int(refine_classes(prev, self.codes[v], np.int64(self.card[v]),
                                       np.empty(self._table_size(self.n_distinct), dtype=np.int64), out))
                self._stack.append((v, out, m))
            else:
                self._stack.append((v, self.codes[v], self.card[v]))
        _, codes, m = self._stack[-1]
        return codes[self.of_row], m

    @staticmethod
    def first_rows(codes: np.ndarray) -> np.ndarray:
        """The first record of each class (classes are numbered by first appearance)."""
        return np.flatnonzero(np.diff(np.maximum.accumulate(codes), prepend=-1) > 0)

    def fresh(self) -> "RowClasses":
        """A copy sharing the column codes, with its own (empty) prefix stack."""
        other = object.__new__(RowClasses)
        other.n, other.codes, other.card = self.n, self.codes, self.card
        other.of_row, other.n_distinct = self.of_row, self.n_distinct
        other._stack = []
        return other


def class_summary(codes: np.ndarray, m: int, k: int | None) -> dict[str, Any]:
    """k', k_min, classes and share below ``k`` of the classes ``codes`` (0..m-1)."""
    n = codes.size
    counts = np.bincount(codes, minlength=m)
    out: dict[str, Any] = {
        "k_prime": n / m,
        "k_min": int(counts.min()),
        "classes": int(m),
        "share_below_k": None,
    }
    if k is not None:
        out["share_below_k"] = float(counts[counts < k].sum()) / n
    return out


def real_anonymity(
    Xp: np.ndarray, attributes: Iterable[int] | None = None, *, k: int | None = None
) -> dict[str, Any]:
    """Real anonymity of the protected file over an attribute set.

    k' = n / (number of distinct protected rows restricted to S); k_min = smallest
    class size; share_below_k = share of records in classes smaller than ``k``. Rows
    are compared by exact equality of the values.

    Returns
    -------
    ``{"k_prime": float, "k_min": int, "classes": int, "share_below_k": float|None}``

    Examples
    --------
    >>> Xp = np.array([[1.0, 5.0], [1.0, 5.0], [1.0, 6.0], [2.0, 6.0]])
    >>> real_anonymity(Xp, k=2)
    {'k_prime': 1.3333333333333333, 'k_min': 1, 'classes': 3, 'share_below_k': 0.5}
    >>> real_anonymity(Xp, [0])["k_prime"]
    2.0
    """
    Xp = np.asarray(Xp, dtype=np.float64)
    sc = attribute_subset(attributes, Xp.shape[1])
    codes, m = RowClasses(Xp).classes(sc)
    return class_summary(codes, m, k)
