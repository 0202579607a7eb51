"""Sample and population frequencies of key combinations, and k-anonymity violations.

Keys arrive as an (n, q) integer matrix of category codes, ``-1`` for a missing value
(:data:`MISSING`). Two grouping rules are used in this package:

- **exact classes** (:func:`group_codes`): records are in one class when their codes are
  equal on every key, a missing value being one more category. Used by l-diversity.
- **wildcard frequencies** (:func:`sample_frequencies`): the rule of sdcMicro's
  ``freqCalc`` (alpha = 1) and mu-ARGUS: a missing value stands for any category.
  Record j counts towards record i's f_k when, on every key where *both* are present,
  their categories are equal. The relation is symmetric but not transitive, so f_k is
  a per-record count rather than a class size: a record missing every key matches all
  n records. Without missing values it is the ordinary class size.

F_k is the sum of the sampling weights of the same records (the Horvitz-Thompson
estimate of the population frequency); without weights F_k = f_k.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

__all__ = ["MISSING", "as_codes", "group_codes", "cell_codes", "subset_classes", "sample_frequencies",
           "violations", "DEFAULT_VIOLATION_K"]

#: The code of a missing key value.
MISSING = -1

#: The k values of the violation counts (sdcMicro prints 2- and 3-anonymity; 5 is the
#: usual agency threshold).
DEFAULT_VIOLATION_K = (2, 3, 5)

_RADIX_LIMIT = 1 << 62


def as_codes(codes: Any) -> np.ndarray:
    """``codes`` as a C-contiguous (n, q) int64 matrix (a vector is one key); values
    below -1 are refused (codes are >= 0, -1 is missing)."""
    a = np.asarray(codes)
    if a.ndim == 1:
        a = a.reshape(-1, 1)
    if a.ndim != 2:
        raise ValueError(f"key codes must be an (n, q) matrix, got shape {a.shape}")
    a = np.ascontiguousarray(a, dtype=np.int64)
    if a.size and a.min() < MISSING:
        raise ValueError("key codes must be >= 0, with -1 for a missing value")
    return a


def _radix(c: np.ndarray, cols: Sequence[int]) -> tuple[np.ndarray, int, bool]:
    """The mixed-radix key of ``cols`` (code + 1, so a missing value is 0), its size and
    whether it was re-numbered on the way (then it is dense but not a plain radix)."""
    n = c.shape[0]
    key = np.zeros(n, dtype=np.int64)
    size = 1
    renumbered = False
    for j in cols:
        col = c[:, j] + 1
        card = int(col.max()) + 1 if n else 1
        if size * card >= _RADIX_LIMIT:
            _, key = np.unique(key, return_inverse=True)
            key = key.reshape(-1).astype(np.int64)
            size = int(key.max()) + 1 if n else 1
            renumbered = True
        key = key * card + col
        size *= card
    return key, size, renumbered


def group_codes(codes: np.ndarray, columns: Sequence[int] | None = None) -> tuple[np.ndarray, int]:
    """Exact classes of the rows of ``codes`` over ``columns`` (default all), a missing
    value being its own category: (class id per record in 0..m-1, m), every id used.
    Class ids follow the sorted order of the combined codes (deterministic).

    The columns are combined in mixed radix (code + 1 < cardinality + 1), re-numbered
    by ``np.unique`` whenever the product would pass 2**62: O(n log n).
    """
    c = as_codes(codes)
    n = c.shape[0]
    cols = range(c.shape[1]) if columns is None else columns
    if n == 0:
        return np.zeros(0, dtype=np.int64), 0
    key, _size, _ = _radix(c, cols)
    _, inv = np.unique(key, return_inverse=True)
    inv = inv.reshape(-1).astype(np.int64)
    return inv, int(inv.max()) + 1


def cell_codes(codes: np.ndarray, columns: Sequence[int]) -> tuple[np.ndarray, int]:
    """Like :func:`group_codes` but the ids may leave gaps: (cell id per record, number of
    ids). When the cross of the columns' categories has at most max(2n, 2**20) cells the
    mixed-radix key is the id (no sort: O(n)); otherwise the dense classes."""
    c = as_codes(codes)
    n = c.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64), 0
    key, size, renumbered = _radix(c, columns)
    if not renumbered and size <= max(2 * n, 1 << 20):
        return key, int(size)
    _, inv = np.unique(key, return_inverse=True)
    inv = inv.reshape(-1).astype(np.int64)
    return inv, int(inv.max()) + 1


def subset_classes(codes: np.ndarray, columns: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Cell of each record over ``columns`` and the cell sizes (cells may be empty: size
    0), with records missing any of those columns in no cell (id -1). Used by SUDA2 and
    the combinations."""
    c = as_codes(codes)
    cls, m = cell_codes(c, columns)
    present = np.all(c[:, list(columns)] >= 0, axis=1) if len(columns) else np.ones(c.shape[0], bool)
    sizes = np.bincount(cls[present], minlength=m)
    cls = np.where(present, cls, -1)
    return cls, sizes


def sample_frequencies(codes: Any, weights: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """f_k (int64) and F_k (float64) of every record under the wildcard rule (module doc).

    Parameters
    ----------
    codes : (n, q) int array, -1 = missing.
    weights : (n,) positive sampling weights, or None (F_k = f_k).

    Notes
    -----
    Records are split by their pattern of present keys. For two patterns P and Q the
    records of Q that match a record of P are those equal on the keys present in both,
    S = P & Q. Each such S is grouped once, over every record present on S; then for
    each pattern P and each S, one count over the records of the patterns Q with
    P & Q = S. Cost: one grouping per distinct S (one sort of the file when nothing is
    missing) plus O(n) per pair (P, S).

    Examples
    --------
    >>> fk, Fk = sample_frequencies([[0, 0], [0, 0], [1, -1], [1, 1]], [10, 20, 5, 1])
    >>> fk.tolist(), Fk.tolist()
    ([2, 2, 2, 2], [30.0, 30.0, 6.0, 6.0])
    """
    c = as_codes(codes)
    n, q = c.shape
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64).reshape(-1)
    if w.shape[0] != n:
        raise ValueError("weights must have one value per record")
    present = c >= 0
    if present.all():
        cls, m = cell_codes(c, range(q))
        cnt = np.bincount(cls, minlength=m)
        tot = np.bincount(cls, weights=w, minlength=m)
        return cnt[cls].astype(np.int64), tot[cls].astype(np.float64)
    bits = (present.astype(np.int64) << np.arange(q, dtype=np.int64)).sum(axis=1) if q else np.zeros(n, np.int64)
    patterns, pat_of = np.unique(bits, return_inverse=True)
    pat_of = pat_of.reshape(-1)
    pats = patterns.tolist()
    fk = np.zeros(n, dtype=np.int64)
    Fk = np.zeros(n, dtype=np.float64)
    for S in sorted({P & Q for P in pats for Q in pats}):
        # every record present on S, grouped once over S
        covers = np.array([(P & S) == S for P in pats])
        rows = np.flatnonzero(covers[pat_of])
        cols = [v for v in range(q) if S >> v & 1]
        if cols:
            cls, m = cell_codes(c[rows], cols)
        else:
            cls, m = np.zeros(rows.size, dtype=np.int64), 1
        pat_rows = pat_of[rows]
        for i, P in enumerate(pats):
            if (P & S) != S:
                continue
            partners = np.array([(P & Q) == S for Q in pats])
            take = partners[pat_rows]
            cnt = np.bincount(cls[take], minlength=m)
            tot = np.bincount(cls[take], weights=w[rows[take]], minlength=m)
            mine = pat_rows == i
            fk[rows[mine]] += cnt[cls[mine]]
            Fk[rows[mine]] += tot[cls[mine]]
    return fk, Fk


def violations(fk: np.ndarray, ks: Sequence[int] = DEFAULT_VIOLATION_K,
               weights: np.ndarray | None = None) -> list[dict[str, Any]]:
    """Records violating k-anonymity (f_k < k) for each k: count, share of the records
    and, with weights, their weighted count (sdcMicro ``kAnon_violations``)."""
    fk = np.asarray(fk)
    n = fk.shape[0]
    out = []
    for k in ks:
        bad = fk < k
        row: dict[str, Any] = {"k": int(k), "records": int(bad.sum()),
                               "share": float(bad.mean()) if n else 0.0}
        if weights is not None:
            row["weighted"] = float(np.asarray(weights, dtype=np.float64)[bad].sum())
        out.append(row)
    return out
