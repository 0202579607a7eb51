"""Robust methods: MDAV-type grouping seeded by robust Mahalanobis distances.

The robust centre and scatter come from a deterministic MCD estimator
(:func:`microagg_cli.mcd.det_mcd`, re-exported here) so that results never depend on
a random seed, the platform's BLAS or thread count.
"""

from __future__ import annotations

import numpy as np

from ..mcd import det_mcd, robust_mahalanobis
from ..partition import canonical_labels
from ._common import farthest, smallest_m, sq_dist_to
from ..progress import advance
from ._spec import CostModel, MethodSpec, method_contract

__all__ = ["rmd", "det_mcd", "robust_mahalanobis", "SPECS"]

# ---------------------------------------------------------------------------
# RMD
# ---------------------------------------------------------------------------


@method_contract
def rmd(X: np.ndarray, k: int, *, rng: np.random.Generator | None = None) -> np.ndarray:
    """RMD: MDAV-type grouping seeded by robust Mahalanobis distance (sdcMicro's "rmd").

    Robust squared Mahalanobis distances of all records are computed once, from a
    deterministic reweighted MCD estimate of centre and scatter (:func:`det_mcd`).
    While at least 2k records remain: r = the remaining record with the largest robust
    distance; r and its k-1 nearest remaining records (Euclidean, z-scored space) form
    a group. The k..2k-1 records left form the last group.

    {method contract}
    rng : unused (deterministic method); accepted for the common contract.

    Returns
    -------
    labels : (n,) int64, canonical; groups of k, the last one k..2k-1.

    Notes
    -----
    O(n p^2) for the estimator plus O(n^2 p / k) for the grouping. Ties (equal robust
    distances, equal Euclidean distances) go to the record that comes first in the
    input; r always belongs to its own group (sdcMicro takes the k records of smallest
    distance to r, which on exact duplicates of r may leave r out). sdcMicro uses
    robustbase's random-start FAST-MCD; this estimator is deterministic (DetMCD
    starts), so on data with a poorly determined MCD the seeding order can differ from
    sdcMicro's.

    References
    ----------
    Templ, M., Kowarik, A. & Meindl, B. (2015). Statistical disclosure control for
    micro-data using the R package sdcMicro. Journal of Statistical Software 67(4).
    Templ, M. & Meindl, B. (2008). Robust statistics meets SDC: new disclosure risk
    measures for continuous microdata masking. Privacy in Statistical Databases,
    LNCS 5262, 177-189.

    Examples
    --------
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0], [4.0], [5.0], [40.0]])
    >>> rmd(X, 3).tolist()
    [0, 0, 0, 0, 1, 1, 1]
    """
    rem = np.arange(X.shape[0])
    labels = np.full(rem.size, -1, dtype=np.int64)
    g = 0
    if rem.size >= 2 * k:
        d2 = robust_mahalanobis(X)
        while rem.size >= 2 * k:
            r = farthest(d2[rem])
            d = sq_dist_to(X[rem], X[rem[r]])
            d[r] = -1.0  # the seed always belongs to its group
            grp = smallest_m(d, k)
            labels[rem[grp]] = g
            g += 1
            rem = np.delete(rem, grp)
            advance(k)  # records grouped (the progress display)
    labels[rem] = g
    return canonical_labels(labels)


SPECS: tuple[MethodSpec, ...] = (
    MethodSpec(name="rmd", cost=CostModel(1.8, 1.6), func=rmd, summary="Groups of k around the records of largest robust (MCD) Mahalanobis distance",
               reference="Templ, Kowarik & Meindl (2015), Statistical disclosure control for micro-data using the R package sdcMicro, Journal of Statistical Software 67(4)"),
)
