"""Geometry helpers shared by the distance-based methods (numpy only).

All helpers break ties by position, so that callers that keep records in input order
get the rule of every method (sdc-methods(7)): "the record that comes first in the input wins",
so that a run is reproducible from the input alone.
"""

from __future__ import annotations

import numpy as np

__all__ = ["sq_dist_to", "sq_dist_rows", "smallest_m", "farthest", "nearest_centroid_join", "check_k"]


def sq_dist_to(X: np.ndarray, point: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances of the rows of ``X`` to ``point``.

    One fixed formula (sum of squared differences over columns, left to right), so
    every implementation comparing distances sees bit-identical values.
    """
    diff = X - point
    return np.einsum("ij,ij->i", diff, diff)


def sq_dist_rows(X: np.ndarray, rows: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances of the records ``X[rows]`` to the rows of ``Y``,
    shape (len(rows), len(Y)); summed column by column, left to right, with
    element-wise operations only (no BLAS: the result does not depend on the
    library or the thread count). Callers keep ``len(rows) * len(Y)`` bounded."""
    d = np.zeros((rows.size, Y.shape[0]))
    for c in range(X.shape[1]):
        t = X[rows, c, None] - Y[None, :, c]
        d += t * t
    return d


def smallest_m(d: np.ndarray, m: int) -> np.ndarray:
    """Positions of the ``m`` smallest values of ``d``, ties broken by position.

    Returned in increasing position order among equal values; O(n).
    """
    n = d.shape[0]
    if m >= n:
        return np.arange(n)
    if m <= 0:
        return np.empty(0, dtype=np.int64)
    part = np.argpartition(d, m - 1)[:m]
    thr = d[part].max()
    less = np.flatnonzero(d < thr)
    eq = np.flatnonzero(d == thr)[: m - less.size]
    return np.concatenate([less, eq])


def farthest(d: np.ndarray) -> int:
    """Position of the largest value of ``d`` (first one on ties)."""
    return int(np.argmax(d))


def nearest_centroid_join(
    X: np.ndarray, labels: np.ndarray, leftovers: np.ndarray, n_groups: int
) -> np.ndarray:
    """Assign each leftover record to the group whose centroid is nearest.

    Centroids are those of the groups formed so far (labels >= 0), computed once,
    before any leftover joins; ties go to the lower group label. Returns ``labels``
    updated in place.
    """
    if leftovers.size == 0:
        return labels
    assigned = labels >= 0
    counts = np.bincount(labels[assigned], minlength=n_groups).astype(np.float64)
    sums = np.zeros((n_groups, X.shape[1]))
    np.add.at(sums, labels[assigned], X[assigned])
    cents = sums / counts[:, None]
    for i in leftovers:
        labels[i] = farthest(-sq_dist_to(cents, X[i]))
    return labels


def check_k(X: np.ndarray, k: int) -> int:
    """Validate ``X`` (2-D, finite) and ``k`` (2 <= k <= n); return n.

    Raises :class:`InvalidParameterError` for k < 2 and :class:`InfeasibleError`
    when the block has fewer than k records.
    """
    from ..errors import InfeasibleError, InvalidParameterError

    if X.ndim != 2:
        raise InvalidParameterError("the data matrix must be two-dimensional")
    if isinstance(k, bool) or int(k) != k or k < 2:
        raise InvalidParameterError(f"k must be an integer >= 2 (k = 1 is no protection), got {k!r}")
    n = X.shape[0]
    if n < k:
        raise InfeasibleError(f"the block has {n} records, fewer than k={k}")
    return n
