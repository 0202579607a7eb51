"""Variable group size heuristics: V-MDAV.

Every function takes a validated (n, p) float matrix -- z-scored by the caller -- and
the minimum group size ``k`` and returns canonical labels (groups numbered in order of
first appearance). Ties between equal distances go to the record that comes first in
the input.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidParameterError
from ..partition import canonical_labels
from ._common import farthest, nearest_centroid_join, smallest_m, sq_dist_to
from ..progress import Shrinking
from ._spec import CostModel, MethodSpec, ParamSpec, method_contract

__all__ = ["vmdav", "SPECS"]


@method_contract
def vmdav(X: np.ndarray, k: int, *, rng: np.random.Generator | None = None, gamma: float = 0.2) -> np.ndarray:
    """V-MDAV: MDAV with groups extended up to 2k-1 records.

    R is the set of unassigned records (initially all). While R has at least k
    records:

    1. c = centroid of R; e = the record of R farthest from c.
    2. G = e plus the k-1 records of R nearest to e; remove G from R.
    3. Extension, while G has fewer than 2k-1 records and R is not empty:
       for every u in R let d_in(u) = min over g in G of ||u - g|| (Euclidean distance
       to the nearest member of G, members added in this step included); u* = the
       record of R with the smallest d_in; d_out = min over v in R, v != u*, of
       ||u* - v|| (Euclidean distance from u* to the nearest other unassigned record;
       +inf when u* is the only unassigned record). If d_in(u*) < gamma * d_out,
       move u* from R to G and repeat; otherwise stop extending G.

    Finally each of the < k records left in R joins the group whose centroid is
    nearest (centroids of the groups formed, computed before any leftover joins).

    {method contract}
    rng : unused (deterministic method); accepted for the common contract.
    gamma : extension gain, >= 0 (default 0.2). ``gamma = 0`` never extends: every
        group has k records except those joined by the < k leftovers. Larger values
        extend more often; with d_out = +inf the last unassigned record is added to
        the current group whenever gamma > 0 and the group has room.

    Returns
    -------
    labels : (n,) int64, canonical; groups of k..2k-1 records, plus at most k-1
        leftovers spread over their nearest groups.

    Notes
    -----
    Ties go to the record that comes first in the input: for e, for the k-1 nearest,
    for u*; leftovers join the lowest-numbered of equally near groups. The comparison
    d_in < gamma * d_out is strict and made on Euclidean (not squared) distances.
    Complexity O(n^2 p): each group costs O(|R| p) for the centroid and O(|G| |R| p)
    for the nearest-member distances, which are updated incrementally as G grows.

    The centroid is recomputed on the unassigned records at every step (as in MDAV);
    one group is formed per step, around the farthest record only.

    References
    ----------
    Solanas, A. & Martinez-Balleste, A. (2006). V-MDAV: a multivariate
    microaggregation with variable group size. Proceedings of COMPSTAT 2006,
    17th Conference on Computational Statistics, Rome. Physica-Verlag.

    Examples
    --------
    >>> X = np.array([[0.0], [0.5], [1.0], [10.0], [11.0], [30.0]])
    >>> vmdav(X, 2).tolist()
    [0, 0, 0, 1, 1, 1]
    >>> vmdav(X, 2, gamma=0.0).tolist()
    [0, 0, 1, 1, 2, 2]
    """
    gamma = float(gamma)
    if not (gamma >= 0 and np.isfinite(gamma)):
        raise InvalidParameterError(f"gamma must be a finite number >= 0, got {gamma!r}")
    n = X.shape[0]
    labels = np.full(n, -1, dtype=np.int64)
    free = np.ones(n, dtype=bool)
    g = 0
    left = Shrinking(n)
    while int(free.sum()) >= k:
        left.now(int(free.sum()))  # records grouped so far (the progress display)
        rem = np.flatnonzero(free)  # input order, so position ties = input-order ties
        Xr = X[rem]
        e = farthest(sq_dist_to(Xr, Xr.mean(axis=0)))
        d = sq_dist_to(Xr, Xr[e])
        d[e] = -1.0  # e itself always belongs to its group
        members = rem[smallest_m(d, k)]
        labels[members] = g
        free[members] = False
        size = k
        if gamma > 0 and size < 2 * k - 1 and free.any():
            rem = np.flatnonzero(free)
            Xr = X[rem]
            # squared distance of every unassigned record to its nearest group member
            near = sq_dist_to(Xr, X[members[0]])
            for m in members[1:]:
                np.minimum(near, sq_dist_to(Xr, X[m]), out=near)
            while size < 2 * k - 1 and rem.size:
                j = farthest(-near)  # u*: smallest d_in, first on ties
                u = rem[j]
                if rem.size > 1:
                    du = sq_dist_to(Xr, Xr[j])
                    du[j] = np.inf
                    d_out = float(np.sqrt(du.min()))
                else:
                    du = None
                    d_out = np.inf
                if not np.sqrt(near[j]) < gamma * d_out:
                    break
                labels[u] = g
                free[u] = False
                size += 1
                keep = np.arange(rem.size) != j
                rem, Xr = rem[keep], Xr[keep]
                near = near[keep]
                if du is not None:
                    np.minimum(near, du[keep], out=near)
        g += 1
    leftovers = np.flatnonzero(free)
    nearest_centroid_join(X, labels, leftovers, g)
    return canonical_labels(labels)


SPECS: tuple[MethodSpec, ...] = (
    MethodSpec(name="vmdav", cost=CostModel(3.7, 1.8), func=vmdav, summary="V-MDAV: MDAV groups of k extended up to 2k-1 records while a record is much nearer to the group than to the other unassigned records",
               reference="Solanas & Martinez-Balleste (2006), V-MDAV: a multivariate microaggregation with variable group size, COMPSTAT 2006",
               params=(ParamSpec("gamma", "float", 0.2, "extension gain: add the nearest unassigned record while its distance to the group < gamma * its distance to the other unassigned records", min=0.0),)),
)
