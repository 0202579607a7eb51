"""Splitting a block into parts for the partitioned mode (``--partition-size``).

A block too large for one run of a method is cut into parts of at most ``max_size``
records; the method runs on each part (:mod:`microagg_cli.protection.partitioned`), and
the groups of all parts together make the block's partition (labels and their
k-check: :mod:`microagg_cli.partition`). Parts are cut so that records close to each
other stay together (recursive median splits along the first principal axis, k-d
style), which keeps the information loss close to that of one run on the whole block
-- unlike hash or random splits, which scatter neighbours across parts. See
:func:`split_indices`.

numpy only; deterministic: no randomness, no dependence on thread count (the
covariance and the projections avoid BLAS, whose summation order may depend on it).

The chunk rule
--------------
Every sum the cuts and the block's z-scaling need (means, variances, covariances) is
taken over chunks of :data:`CHUNK_ROWS` consecutive records of the block (the rows of
a node that fall in one chunk, in input order), and the chunks' partial sums are added
exactly (``math.fsum``, correctly rounded), so the total does not depend on the order
in which the chunks are added. A Dask worker holding some chunks computes their
partial sums with the very functions used here (:func:`moment_partial`,
:func:`spread_partial`, :func:`cross_partial`), and the client adds them: the cuts made
from workers' statistics are exactly those made here, bit for bit. Projections are
summed column by column (:func:`projections`), a per-record operation; the median is
the record of rank floor(m/2) in (projection, input index) order, which a distributed
selection finds exactly on the keys of :func:`sort_keys`.
"""

from __future__ import annotations

import math

import numpy as np

from .errors import InvalidParameterError, check_k_value

__all__ = [
    "split_indices", "principal_axis", "CHUNK_ROWS", "block_scaling", "moment_partial", "spread_partial",
    "cross_partial", "exact_sum", "axis_of", "projections", "sort_keys", "check_partition_size",
]

#: Records per chunk of the chunk rule (module docstring): partial sums are taken per chunk.
CHUNK_ROWS = 65_536


def moment_partial(A: np.ndarray) -> np.ndarray:
    """Column sums of ``A`` (m, p), missing (NaN) cells skipped: one chunk's partial sums."""
    At = np.ascontiguousarray(np.asarray(A, dtype=np.float64).T)
    out = np.empty(At.shape[0])
    for j in range(At.shape[0]):
        r = At[j]
        ok = ~np.isnan(r)
        out[j] = (r if ok.all() else r[ok]).sum()
    return out


def spread_partial(A: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Column sums of ``(A - mean)**2`` over observed cells: one chunk's partial sums."""
    At = np.ascontiguousarray(np.asarray(A, dtype=np.float64).T)
    out = np.empty(At.shape[0])
    for j in range(At.shape[0]):
        r = At[j]
        ok = ~np.isnan(r)
        d = (r if ok.all() else r[ok]) - mean[j]
        out[j] = (d * d).sum()
    return out


def cross_partial(A: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """``sum_i (a_i - mean)(a_i - mean)^T`` over the rows of ``A`` (finite): one chunk's
    partial cross-products, (p, p), summed product by product without BLAS."""
    Dt = np.ascontiguousarray((np.asarray(A, dtype=np.float64) - mean).T)
    p = Dt.shape[0]
    out = np.empty((p, p))
    for j in range(p):
        for m in range(j, p):
            out[j, m] = out[m, j] = (Dt[j] * Dt[m]).sum()
    return out


def exact_sum(partials: list[np.ndarray]) -> np.ndarray:
    """Element-wise correctly rounded sum (``math.fsum``) of equally shaped partial sums:
    the same whatever their order."""
    stack = np.asarray(partials, dtype=np.float64)
    flat = stack.reshape(stack.shape[0], -1)
    out = np.array([math.fsum(flat[:, i].tolist()) for i in range(flat.shape[1])])
    return out.reshape(stack.shape[1:])


def _chunk_starts(n: int) -> range:
    return range(0, n, CHUNK_ROWS)


def block_scaling(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, scale) of the columns of a block by the chunk rule: NaN cells skipped,
    population sd, scale 1 for a constant or empty column (as
    :func:`microagg_cli.survey.nan_zscore`). The partitioned mode z-scores with these."""
    X = np.asarray(X, dtype=np.float64)
    n, p = X.shape
    cnt = (~np.isnan(X)).sum(axis=0)
    starts = _chunk_starts(n)
    if n == 0:
        return np.zeros(p), np.ones(p)
    sums = exact_sum([moment_partial(X[a:a + CHUNK_ROWS]) for a in starts])
    return finish_scaling(cnt, sums, lambda mean: exact_sum([spread_partial(X[a:a + CHUNK_ROWS], mean)
                                                              for a in starts]))


def finish_scaling(cnt: np.ndarray, sums: np.ndarray, spread) -> tuple[np.ndarray, np.ndarray]:
    """(mean, scale) from the observed counts, the exact sums, and ``spread(mean)``, the
    exact sums of squared deviations (a callable: the second pass over the chunks)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(cnt > 0, sums / np.maximum(cnt, 1), 0.0)
    sq = spread(mean)
    var = np.where(cnt > 0, sq / np.maximum(cnt, 1), 0.0)
    sd = np.sqrt(var)
    return mean, np.where(sd > 0, sd, 1.0)


def axis_of(C: np.ndarray) -> np.ndarray:
    """Unit eigenvector of the largest eigenvalue of the (p, p) cross-product matrix ``C``.

    Sign: the largest-magnitude component is positive (the first such component on
    ties). No spread (``C`` all zero): the first coordinate axis.
    """
    C = np.asarray(C, dtype=np.float64)
    p = C.shape[0]
    if not np.any(C):
        v = np.zeros(p)
        v[0] = 1.0
        return v
    w, V = np.linalg.eigh(C)
    v = V[:, int(np.argmax(w))]
    j = int(np.argmax(np.abs(v)))
    return v if v[j] > 0 else -v


def projections(A: np.ndarray, mean: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``(a_i - mean) . v`` for every row, summed column by column (a per-record value,
    the same whichever rows are computed together); -0.0 is returned as 0.0."""
    A = np.asarray(A, dtype=np.float64)
    proj = (A[:, 0] - mean[0]) * v[0]
    for j in range(1, A.shape[1]):
        proj = proj + (A[:, j] - mean[j]) * v[j]
    return proj + 0.0


def sort_keys(proj: np.ndarray) -> np.ndarray:
    """uint64 keys whose unsigned order is the numeric order of the (finite) projections."""
    bits = np.ascontiguousarray(proj, dtype=np.float64).view(np.uint64)
    top = np.uint64(1) << np.uint64(63)
    return np.where(bits & top, ~bits, bits | top)


def _node_stats(Z: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, first principal axis) of the rows ``idx`` (increasing) of ``Z`` by the chunk rule."""
    cuts = np.searchsorted(idx, np.arange(CHUNK_ROWS, int(idx[-1]) + 1, CHUNK_ROWS))
    segs = [s for s in np.split(idx, cuts) if s.size]
    mean = exact_sum([moment_partial(Z[s]) for s in segs]) / idx.size
    C = exact_sum([cross_partial(Z[s], mean) for s in segs])
    return mean, axis_of(C)


def principal_axis(Z: np.ndarray) -> np.ndarray:
    """Unit vector along the first principal axis of the rows of ``Z`` (chunk rule).

    Sign: the largest-magnitude component is positive (the first such component on
    ties). A block with no spread gets the first coordinate axis.
    """
    Z = np.asarray(Z, dtype=np.float64)
    return _node_stats(Z, np.arange(Z.shape[0], dtype=np.int64))[1]


def check_partition_size(max_size: object, k: int) -> int:
    """A partition size is an integer >= 2k - 1 (so that a part too large to keep always
    halves into parts of at least k records)."""
    if isinstance(max_size, bool) or int(max_size) != max_size or max_size < 2 * k - 1:  # type: ignore[call-overload, operator]
        raise InvalidParameterError(
            f"the partition size must be an integer >= 2k - 1 = {2 * k - 1}, got {max_size!r}"
        )
    return int(max_size)  # type: ignore[call-overload]


def split_indices(Z: np.ndarray, max_size: int, k: int) -> list[np.ndarray]:
    """Cut the records of ``Z`` into parts of k..max_size records that keep neighbours together.

    A part with more than ``max_size`` records is split in two at the median of the
    records' projections on its own first principal axis (mean and axis by the chunk
    rule of the module docstring, projections by :func:`projections`): the first
    floor(m/2) records in (projection, input index) order go to the first half, the
    rest to the second; each half is split again while it is too large. This is the
    k-d tree construction with principal axes instead of coordinate axes.

    Parameters
    ----------
    Z : (n, p) float array, z-scored (distances are meant to be Euclidean on it).
    max_size : largest part, an integer >= 2k - 1 (so that a part too large to keep
        always halves into parts of at least k records).
    k : minimum group size of the method that will run on the parts.

    Returns
    -------
    parts : list of int64 arrays of row positions, each sorted increasingly; disjoint,
        covering ``range(n)``, ordered as the leaves of the splitting tree (first half
        before second). Every part has at most ``max_size`` and -- when n >= k -- at
        least k records; a block of at most ``max_size`` records is one part.

    Raises
    ------
    InvalidParameterError
        If ``k < 2`` or ``max_size < 2k - 1``.

    Notes
    -----
    Ties in projected values go to the record that comes first in the input.
    Deterministic, and equal to the cuts the Dask engine makes from its workers'
    statistics (:mod:`microagg_cli.engines_dask`). Cost O(n p^2 log(n / max_size));
    parts have between max_size/2 and max_size records when n > max_size.

    Examples
    --------
    >>> Z = np.array([[0.0], [5.0], [1.0], [6.0], [2.0], [7.0]])
    >>> [part.tolist() for part in split_indices(Z, 3, 2)]
    [[0, 2, 4], [1, 3, 5]]
    """
    Z = np.asarray(Z, dtype=np.float64)
    if Z.ndim != 2:
        raise InvalidParameterError("the data matrix must be two-dimensional")
    k = check_k_value(k)
    max_size = check_partition_size(max_size, k)
    parts: list[np.ndarray] = []
    stack = [np.arange(Z.shape[0], dtype=np.int64)]
    while stack:
        idx = stack.pop()
        if idx.size <= max_size:
            parts.append(idx)
            continue
        mean, v = _node_stats(Z, idx)
        proj = projections(Z[idx], mean, v)
        order = np.argsort(proj, kind="stable")  # idx is increasing: ties by input order
        half = idx.size // 2
        # push the second half first so that the first half is cut (and listed) first
        stack.append(np.sort(idx[order[half:]]))
        stack.append(np.sort(idx[order[:half]]))
    return parts
