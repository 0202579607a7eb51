"""Locality-preserving partitions of a block, for the partitioned mode.

A block too large for one run of a method is cut into parts of at most ``max_size``
records; the method runs on each part, and the groups of all parts together make the
block's partition. Parts are cut so that records close to each other stay together
(recursive median splits along the first principal axis, k-d style), which keeps the
information loss close to that of one run on the whole block -- unlike hash or random
splits, which scatter neighbours across parts. See :func:`split_indices`.

numpy only; deterministic: no randomness, no dependence on thread count (the
covariance and the projections avoid BLAS, whose summation order may depend on it).
"""

from __future__ import annotations

import numpy as np

from .errors import InvalidParameterError, check_k_value

__all__ = ["split_indices", "principal_axis"]


def principal_axis(Z: np.ndarray) -> np.ndarray:
    """Unit vector along the first principal axis of the rows of ``Z``.

    The covariance is summed with ``einsum`` (never BLAS), so the result does not
    depend on the number of threads. Sign: the largest-magnitude component is
    positive (the first such component on ties). A block with no spread gets the
    first coordinate axis.
    """
    Z = np.asarray(Z, dtype=np.float64)
    p = Z.shape[1]
    Zc = Z - Z.mean(axis=0)
    C = np.einsum("ij,ik->jk", Zc, Zc)
    if not np.any(C):
        v = np.zeros(p)
        v[0] = 1.0
        return v
    w, V = np.linalg.eigh(C)
    v = V[:, int(np.argmax(w))]
    j = int(np.argmax(np.abs(v)))
    return v if v[j] > 0 else -v


def split_indices(Z: np.ndarray, max_size: int, k: int) -> list[np.ndarray]:
    """Cut the records of ``Z`` into parts of k..max_size records that keep neighbours together.

    A part with more than ``max_size`` records is split in two at the median of the
    records' projections on its own first principal axis (:func:`principal_axis`):
    the first floor(m/2) records in (projection, input index) order go to the first
    half, the rest to the second; each half is split again while it is too large.
    This is the k-d tree construction with principal axes instead of coordinate axes.

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
    Deterministic. Cost O(n p^2 log(n / max_size)); parts have between
    max_size/2 and max_size records when n > max_size.

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
    if isinstance(max_size, bool) or int(max_size) != max_size or max_size < 2 * k - 1:
        raise InvalidParameterError(
            f"the partition size must be an integer >= 2k - 1 = {2 * k - 1}, got {max_size!r}"
        )
    parts: list[np.ndarray] = []
    stack = [np.arange(Z.shape[0], dtype=np.int64)]
    while stack:
        idx = stack.pop()
        if idx.size <= max_size:
            parts.append(idx)
            continue
        Zi = Z[idx]
        v = principal_axis(Zi)
        proj = ((Zi - Zi.mean(axis=0)) * v).sum(axis=1)
        order = np.argsort(proj, kind="stable")  # idx is increasing: ties by input order
        half = idx.size // 2
        # push the second half first so that the first half is cut (and listed) first
        stack.append(np.sort(idx[order[half:]]))
        stack.append(np.sort(idx[order[:half]]))
    return parts
