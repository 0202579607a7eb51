"""Partitions: canonical labels, group sizes, the k-check, centroids and SSE.

Everything here works on numpy arrays only. A *partition* is an integer label array of
shape (n,); canonical labels number groups 0, 1, 2, ... in order of first appearance.
:func:`check_min_group_size` is the k-check of every partition a method makes.
Cutting a large block into parts (the partitioned mode) is elsewhere:
:mod:`microagg_cli.splitting` and :mod:`microagg_cli.protection.partitioned`.
"""

from __future__ import annotations

import numpy as np

from .errors import PrivacyCheckError

__all__ = [
    "canonical_labels",
    "group_sizes",
    "size_histogram",
    "check_min_group_size",
    "zscore",
    "aggregate",
    "onestep",
    "ONESTEP_C",
    "group_centroids",
    "sse",
    "sst",
    "information_loss",
]


def canonical_labels(labels: np.ndarray) -> np.ndarray:
    """Renumber groups 0, 1, 2, ... in order of first appearance.

    Examples
    --------
    >>> canonical_labels(np.array([7, 7, 2, 9, 2, 9])).tolist()
    [0, 0, 1, 2, 1, 2]
    """
    labels = np.asarray(labels)
    if labels.size == 0:
        return labels.astype(np.int64)
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[inverse].astype(np.int64).reshape(labels.shape)


def group_sizes(labels: np.ndarray) -> np.ndarray:
    """Sizes of the groups of a canonical partition, indexed by label."""
    return np.bincount(np.asarray(labels, dtype=np.int64))


def size_histogram(labels: np.ndarray) -> dict[int, int]:
    """``{group size: number of groups}``, sorted by size."""
    sizes, counts = np.unique(group_sizes(canonical_labels(labels)), return_counts=True)
    return {int(s): int(c) for s, c in zip(sizes, counts) if s > 0}


def check_min_group_size(labels: np.ndarray, k: int, *, where: str = "block") -> None:
    """Raise :class:`PrivacyCheckError` unless every group has at least ``k`` records.

    This is the privacy invariant checked before anything is written.
    """
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise PrivacyCheckError(f"{where}: partition labels must be one-dimensional")
    sizes = group_sizes(canonical_labels(labels))
    sizes = sizes[sizes > 0]
    if sizes.size and sizes.min() < k:
        bad = int((sizes < k).sum())
        raise PrivacyCheckError(
            f"{where}: {bad} group(s) have fewer than k={k} records "
            f"(smallest {int(sizes.min())}); nothing was written"
        )


def zscore(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Z-score columns with population standard deviations.

    Returns ``(Z, mean, scale, constant)``; a constant column gets scale 1 and is
    flagged in the boolean array ``constant`` (the caller warns).
    """
    X = np.asarray(X, dtype=np.float64)
    mean = X.mean(axis=0)
    sd = X.std(axis=0)
    constant = (np.ptp(X, axis=0) == 0) if X.shape[0] else np.ones(X.shape[1], dtype=bool)
    scale = np.where(constant | ~(sd > 0), 1.0, sd)
    Z = (X - mean) / scale
    tiny = ~constant & ~(sd > 0)  # values so small (subnormal) that their squares vanish: not constant
    if tiny.any():  # z-scored through their largest magnitude, where the arithmetic is exact enough
        top = np.abs(X[:, tiny]).max(axis=0)
        U = X[:, tiny] / top
        mu, su = U.mean(axis=0), U.std(axis=0)
        Z[:, tiny] = (U - mu) / su
        mean[tiny], scale[tiny] = top * mu, np.maximum(top * su, np.finfo(np.float64).smallest_subnormal)
    return Z, mean, scale, constant


def group_centroids(X: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Arithmetic means of each group, shape (n_groups, p), for canonical labels."""
    X = np.asarray(X, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    counts = np.bincount(labels).astype(np.float64)
    sums = np.zeros((counts.size, X.shape[1]))
    np.add.at(sums, labels, X)
    return sums / counts[:, None]


def _trimmed_mean(values: np.ndarray, proportion: float) -> float:
    v = np.sort(values)
    cut = int(np.floor(proportion * v.size))
    return float(v[cut: v.size - cut].mean()) if v.size - 2 * cut > 0 else float(np.median(v))


#: Huber's tuning constant of :func:`onestep` (sdcMicro's ``3 / 1.486``).
ONESTEP_C = 3.0 / 1.486


def onestep(values: np.ndarray) -> float:
    """One-step Huber M-estimate of location, as sdcMicro's ``measure="onestep"``.

    T = m + s * mean(psi_c((x - m) / s)) with m the median, s = 1.4826 * MAD (R's
    ``mad``), Huber's psi_c(r) = max(-c, min(c, r)) and c = 3 / 1.486 (about 2.02):
    one step from the median with the scale held fixed, i.e. the mean of the values
    winsorized to [m - c s, m + c s]. When s = 0 every value is pulled to m and T is
    the median.

    Examples
    --------
    >>> onestep(np.array([1.0, 2.0, 3.0]))
    2.0
    >>> round(onestep(np.array([1.0, 2.0, 3.0, 4.0, 100.0])), 4)  # 100 -> 3 + 2.019 * 1.4826
    3.1986
    >>> onestep(np.array([5.0, 5.0, 5.0, 9.0]))
    5.0
    """
    v = np.asarray(values, dtype=np.float64)
    m = float(np.median(v))
    s = 1.4826 * float(np.median(np.abs(v - m)))
    return float(np.clip(v, m - ONESTEP_C * s, m + ONESTEP_C * s).mean())


def aggregate(
    X: np.ndarray,
    labels: np.ndarray,
    *,
    stat: str = "mean",
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """Replace every record by its group's statistic (shared by every method).

    Parameters
    ----------
    X : (n, p) float array, original units; NaN marks a missing cell, which stays
        missing (the statistic of a group uses its non-missing values of each column).
    labels : (n,) partition.
    stat : ``"mean"`` (weighted when ``weights`` is given), ``"median"``,
        ``"trimmed:P"`` (trimmed mean cutting a share P from each end) or
        ``"onestep"`` (one-step Huber M-estimate, see :func:`onestep`).
    weights : optional (n,) positive sampling weights (mean only). Weighted means
        preserve the weighted total of every column exactly (up to rounding).

    Returns
    -------
    (n, p) float array: row i holds the statistic of the group of record i.
    """
    X = np.asarray(X, dtype=np.float64)
    labels = canonical_labels(np.asarray(labels))
    missing = np.isnan(X)
    if stat == "mean":
        w = np.ones(X.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
        if weights is None and not missing.any():
            return group_centroids(X, labels)[labels]
        n_groups = int(labels.max()) + 1 if labels.size else 0
        W = np.where(missing, 0.0, w[:, None])
        wsum = np.zeros((n_groups, X.shape[1]))
        sums = np.zeros((n_groups, X.shape[1]))
        np.add.at(wsum, labels, W)
        np.add.at(sums, labels, np.where(missing, 0.0, X) * W)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = (sums / wsum)[labels]
        out[missing] = np.nan
        return out
    if weights is not None:
        raise ValueError("sampling weights apply to the mean only")
    out = np.empty_like(X)
    order = np.argsort(labels, kind="stable")
    bounds = np.flatnonzero(np.diff(labels[order])) + 1
    for members in np.split(order, bounds):
        block = X[members]
        for j in range(X.shape[1]):
            col = block[:, j]
            col = col[~np.isnan(col)]
            if col.size == 0:
                value = np.nan
            elif stat == "median":
                value = float(np.median(col))
            elif stat == "onestep":
                value = onestep(col)
            elif stat.startswith("trimmed:"):
                value = _trimmed_mean(col, float(stat.split(":", 1)[1]))
            else:  # validated by the caller; guard for library users
                raise ValueError(f"unknown aggregation statistic {stat!r}")
            out[members, j] = value
    out[missing] = np.nan
    return out


def sse(Z: np.ndarray, labels: np.ndarray) -> float:
    """Within-group sum of squared Euclidean distances to group centroids."""
    Z = np.asarray(Z, dtype=np.float64)
    labels = canonical_labels(np.asarray(labels))
    return float(((Z - group_centroids(Z, labels)[labels]) ** 2).sum())


def sst(Z: np.ndarray) -> float:
    """Total sum of squared distances to the global centroid."""
    Z = np.asarray(Z, dtype=np.float64)
    return float(((Z - Z.mean(axis=0)) ** 2).sum())


def information_loss(Z: np.ndarray, labels: np.ndarray) -> float:
    """IL = 100 * SSE / SST of a partition of the (z-scored) matrix ``Z``."""
    total = sst(Z)
    return 100.0 * sse(Z, labels) / total if total > 0 else 0.0


def aggregate_codes(codes: np.ndarray, labels: np.ndarray, *, ordered: bool) -> np.ndarray:
    """Replace every record's category code by its group's mode or median category.

    The aggregation of the key roles next to :func:`aggregate` (continuous columns):
    nominal keys are released as their group's mode, ordinal keys as its median
    category, so every released row stays constant within its group.

    Parameters
    ----------
    codes : (n,) non-negative integer category codes. Nominal codes are numbered in
        order of first appearance in the input; ordinal codes follow the categories'
        order.
    labels : (n,) partition.
    ordered : False = mode (ties: the smallest code, i.e. the category met first in the
        input); True = lower median (the ceil(m/2)-th smallest code of a group of m).

    Returns
    -------
    (n,) int64: row i holds its group's released code.

    Examples
    --------
    >>> aggregate_codes(np.array([2, 1, 1, 0, 2, 0]), np.array([0, 0, 0, 1, 1, 1]), ordered=False).tolist()
    [1, 1, 1, 0, 0, 0]
    >>> aggregate_codes(np.array([3, 0, 1, 2]), np.array([0, 0, 0, 0]), ordered=True).tolist()
    [1, 1, 1, 1]
    """
    codes = np.asarray(codes, dtype=np.int64)
    labels = canonical_labels(np.asarray(labels))
    if codes.size == 0:
        return codes.copy()
    n_groups = int(labels.max()) + 1
    if ordered:
        order = np.lexsort((codes, labels))
        sizes = np.bincount(labels, minlength=n_groups)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        released = codes[order][starts + (sizes - 1) // 2]
        return released[labels]
    pairs, counts = np.unique(labels * (int(codes.max()) + 1) + codes, return_counts=True)
    group, code = np.divmod(pairs, int(codes.max()) + 1)
    best = np.lexsort((code, -counts, group))  # per group: most frequent, then smallest code
    first = np.flatnonzero(np.r_[True, np.diff(group[best]) != 0])
    released = np.empty(n_groups, dtype=np.int64)
    released[group[best][first]] = code[best][first]
    return released[labels]
