"""One-dimension microaggregation ``mic1d`` (Pont-Tuset, Nin et al. 2008).

All values of a block are microaggregated together as one bag of numbers, whatever
attribute or record they come from. The method returns the protected matrix itself
(``MethodSpec.output == "values"``), in the units it received; its ``k`` counts
*values* per partition, not records, so record k-anonymity is not guaranteed and the
report states the real anonymity k' instead.
"""

from __future__ import annotations

import numpy as np

from ..errors import InfeasibleError, InvalidParameterError
from ..progress import advance
from ._spec import CostModel, MethodSpec, ParamSpec

__all__ = ["mic1d", "SPECS"]


def _partition_bounds(w: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-value (min, max) of its partition, for sorted ``w`` cut into runs of k.

    Runs of k consecutive values, the last run taking the remainder (possibly
    shorter than k). ``w`` is sorted, so a run's min is its first value, its max its
    last.
    """
    n = w.size
    starts = np.arange(0, n, k)
    ends = np.minimum(starts + k, n) - 1
    run = np.arange(n) // k
    return w[starts][run], w[ends][run]


def _normalize(w: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """(w - lo) / (hi - lo), 0.5 where lo == hi. In [0, 1] exactly (rounding is monotone)."""
    width = hi - lo
    flat = ~(width > 0)
    return np.where(flat, 0.5, (w - lo) / np.where(flat, 1.0, width))


def _denormalize(u: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Inverse of :func:`_normalize`, clipped to [lo, hi] (a flat run maps to lo == hi).

    Mathematically lo + u (hi - lo) lies in [lo, hi] for u in [0, 1]; the clip only
    removes excursions of one rounding unit so that the range guarantee is exact.
    """
    return np.clip(lo + u * (hi - lo), lo, hi)


def _check_k_values(X: np.ndarray, k: int) -> None:
    """``_common.check_k`` for a k that counts values: 2 <= k <= n*p."""
    if X.ndim != 2:
        raise InvalidParameterError("the data matrix must be two-dimensional")
    if isinstance(k, bool) or int(k) != k or k < 2:
        raise InvalidParameterError(
            f"k must be an integer >= 2 (k = 1 is no protection), got {k!r}"
        )
    if X.size < k:
        raise InfeasibleError(
            f"mic1d: the block has {X.size} values ({X.shape[0]} records x "
            f"{X.shape[1]} attributes), fewer than k={k} values per partition"
        )


def mic1d(X: np.ndarray, k: int, *, rng: np.random.Generator | None = None, scale: str = "minmax") -> np.ndarray:
    """One-dimension microaggregation: all values of the block as one sorted vector.

    0. (``scale="minmax"``, the default) rescale every column to [0, 1] by its own
       min and max (a constant column becomes 0.5); ``scale="none"`` skips this and
       works on the values exactly as received.
    1. Vectorize: the n*p values into one vector V, record by record (row-major), so
       that on ties the value of the earlier record (then earlier column) comes first.
    2. Sort V (stable) and cut it into consecutive partitions of k values; the last
       partition takes the remainder, which may be smaller than k.
    3. Normalize each partition to [0, 1] by its own min and max (0.5 when min == max).
    4. Re-sort the normalized vector (stable) and cut and normalize it the same way;
       this mixes values of different attributes and different regions of V.
    5. Replace each value by the mean of its step-4 partition.
    6. Undo the step-4 normalization and sort, then the step-3 normalization and the
       step-2 sort, (and step 0), and put every value back in its cell.

    Parameters
    ----------
    X : (n, p) float array in original units (``MethodSpec.standardize=False``); not
        mutated.
    k : number of values per partition, an integer >= 2 (not a number of records);
        the block must hold at least k values (n*p >= k), so fewer than k records
        are accepted when p > 1.
    rng : unused (deterministic method).
    scale : ``"minmax"`` (default) or ``"none"`` (the literal procedure on raw values).

    Returns
    -------
    (n, p) float array, the protected values in the units of ``X``.

    Notes
    -----
    O(N log N) with N = n*p, numpy only. The partitions are fixed runs of
    ``k_values`` sorted values, not an optimal partition, so the univariate solvers
    of ``optimal-1d`` have no part here (the two sorts dominate the time).

    Why the default rescales each column to [0, 1] first: the paper vectorizes the
    original values, and step 6 can only promise that a value ends up inside the
    range [min, max] of its step-2 partition (the k consecutive sorted values around
    it). With raw values that partition may straddle two attributes -- the largest
    ages next to the smallest incomes -- and an age can come back as an income-sized
    number; z-scores do not help either (the columns' z-ranges differ). With every
    column on [0, 1], each value's step-2 partition lies within [0, 1], so the
    protected value lies in [0, 1] and, back-transformed, **within its column's
    original range** -- guaranteed by construction (the inverse transforms are
    clipped against rounding). Min-max scaling also makes the attributes
    commensurable, so step 4 really mixes them. Constant columns come back unchanged.

    What holds with ``scale="none"``: each protected value lies within the range of
    its step-2 partition, hence within the block's overall [min, max], but not
    necessarily within its own column's range.

    Values in a partition whose min == max are returned unchanged, and so is a
    single-value remainder partition (its min == max): when N mod k == 1 the largest
    value of V is left as it is (a weakness of the procedure as specified).

    References
    ----------
    Pont-Tuset, J., Nin, J., Medrano-Gracia, P., Larriba-Pey, J. Ll. &
    Muntes-Mulero, V. (2008). Improving microaggregation for complex record
    anonymization. Modeling Decisions for Artificial Intelligence (MDAI 2008),
    LNCS 5285, 215-226.

    Examples
    --------
    >>> X = np.array([[0.0, 10.0], [1.0, 30.0], [3.0, 20.0]])
    >>> mic1d(X, 3, scale="none").round(4).tolist()
    [[0.3333, 12.2222], [0.3333, 26.6667], [2.5, 26.6667]]
    """
    X = np.asarray(X, dtype=np.float64)
    _check_k_values(X, k)
    if scale not in ("minmax", "none"):
        raise InvalidParameterError(f"mic1d: scale must be minmax or none, got {scale!r}")
    n, p = X.shape

    # Step 0: per-column min-max rescaling (see Notes).
    if scale == "minmax":
        col_lo = X.min(axis=0)
        col_hi = X.max(axis=0)
        Y = _normalize(X, col_lo, col_hi)
    else:
        Y = X

    # Step 1: vectorize record by record.
    V = Y.reshape(-1)
    # Step 2: sort, cut into partitions of k values.
    o1 = np.argsort(V, kind="stable")
    w1 = V[o1]
    lo1, hi1 = _partition_bounds(w1, k)
    advance(n // 2)  # the first of the two sorts and cuts done (the progress display)
    # Step 3: normalize each partition.
    u1 = _normalize(w1, lo1, hi1)
    # Step 4: re-sort, cut and normalize again.
    o2 = np.argsort(u1, kind="stable")
    w2 = u1[o2]
    lo2, hi2 = _partition_bounds(w2, k)
    u2 = _normalize(w2, lo2, hi2)
    # Step 5: each value becomes the mean of its step-4 partition.
    runs = np.arange(w2.size) // k
    means = np.bincount(runs, weights=u2) / np.bincount(runs)
    m2 = means[runs]
    # Step 6: undo step 4 (normalization, then sort) ...
    back2 = np.empty_like(w2)
    back2[o2] = _denormalize(m2, lo2, hi2)
    # ... then step 3 (normalization) and step 2 (sort), back into the cells.
    back1 = np.empty_like(w1)
    back1[o1] = _denormalize(back2, lo1, hi1)
    out = back1.reshape(n, p)
    if scale == "minmax":
        out = _denormalize(out, col_lo, col_hi)
    advance(n - n // 2)
    return out


SPECS: tuple[MethodSpec, ...] = (
    MethodSpec(name="mic1d", cost=CostModel(0.04, 1.1), func=mic1d, summary="one-dimension microaggregation: all values of the block sorted together, k = values per partition (record k-anonymity not guaranteed)",
               reference="Pont-Tuset, Nin, Medrano-Gracia, Larriba-Pey & Muntes-Mulero (2008), Improving microaggregation for complex record anonymization, MDAI 2008, LNCS 5285", output="values", standardize=False,
               params=(ParamSpec("scale", "str", "minmax", "rescale each column to [0,1] first (minmax, keeps every value within its column's range) or use the raw values (none)", choices=("minmax", "none")),)),
)
