"""mu-Approx: the polynomial-time approximation of Domingo-Ferrer, Sebe & Solanas (2008).

A forest in which every tree has at least k records is built from the nearest-
neighbour graph, cut into trees of k..max(2k-1, 3k-5) records, and the trees that
are still larger than 2k-1 records are split around their record farthest from the
centroid. The forest cut is the one of :mod:`.mst`.
"""

from __future__ import annotations

import numpy as np

from ..partition import canonical_labels
from ._common import farthest, smallest_m, sq_dist_rows, sq_dist_to
from ..progress import advance
from ._spec import CostModel, MethodSpec, method_contract
from .mst import cut_forest, forest_components

__all__ = ["mu_approx", "nearest_neighbour_forest", "SPECS"]

#: Distances computed per block (nearest-neighbour search).
_BLOCK = 1 << 21


def _nearest(X: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each record of ``rows``, its nearest record of ``cols`` (not itself) and the
    squared distance; ties go to the record first in the input."""
    best = np.full(rows.size, np.inf)
    arg = np.zeros(rows.size, dtype=np.int64)
    step = max(1, _BLOCK // max(cols.size, 1))
    Xc = X[cols]
    for s in range(0, rows.size, step):
        r = rows[s : s + step]
        d = sq_dist_rows(X, r, Xc)
        d[r[:, None] == cols[None, :]] = np.inf
        a = np.argmin(d, axis=1)
        best[s : s + step] = d[np.arange(r.size), a]
        arg[s : s + step] = cols[a]
    return arg, best


def nearest_neighbour_forest(X: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Step 1 of mu-Approx: a forest whose trees all have at least k records.

    Every record is linked to its nearest record (duplicate links counted once; the
    nearest-neighbour graph is a forest when ties go to input order, up to 2-cycles).
    Then, round after round, every tree with fewer than k records adds its shortest
    edge to another tree (all small trees of a round at once, as in Boruvka's
    algorithm; an edge is added only if it still joins two different trees).

    Parameters
    ----------
    X : (n, p) float array, z-scored (n >= k >= 2).
    k : minimum tree size.

    Returns
    -------
    (u, v, w): the forest's edges and their squared lengths.

    Examples
    --------
    >>> u, v, w = nearest_neighbour_forest(np.array([[0.0], [1.0], [5.0], [7.0]]), 2)
    >>> sorted(zip(u.tolist(), v.tolist()))
    [(0, 1), (2, 3)]
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    everyone = np.arange(n)
    nn, dist = _nearest(X, everyone, everyone)
    pairs = {}
    for i in range(n):
        a, b = (i, int(nn[i])) if i < nn[i] else (int(nn[i]), i)
        pairs[(a, b)] = float(dist[i])
    u = np.array([p[0] for p in pairs], dtype=np.int64)
    v = np.array([p[1] for p in pairs], dtype=np.int64)
    w = np.array(list(pairs.values()))
    while True:
        comp = forest_components(n, u, v)
        size = np.bincount(comp)
        small = np.flatnonzero(size < k)
        if small.size == 0:
            return u, v, w
        add_u, add_v, add_w = [], [], []
        for c in small:
            members = np.flatnonzero(comp == c)
            outside = np.flatnonzero(comp != c)
            arg, best = _nearest(X, members, outside)
            j = int(np.argmin(best))  # the first member on ties
            add_u.append(int(members[j]))
            add_v.append(int(arg[j]))
            add_w.append(float(best[j]))
        # Keep only the edges that still join different trees (two small trees may
        # pick the same edge, or edges closing a cycle between three of them).
        parent = {int(c): int(c) for c in np.unique(comp)}

        def find(a: int) -> int:
            while parent[a] != a:  # noqa: B023 - called within this iteration only
                a = parent[a]  # noqa: B023
            return a

        keep = []
        for t in range(len(add_u)):
            ra, rb = find(int(comp[add_u[t]])), find(int(comp[add_v[t]]))
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
                keep.append(t)
        u = np.concatenate((u, np.array(add_u, dtype=np.int64)[keep]))
        v = np.concatenate((v, np.array(add_v, dtype=np.int64)[keep]))
        w = np.concatenate((w, np.array(add_w)[keep]))


@method_contract
def mu_approx(X: np.ndarray, k: int, *, rng: np.random.Generator | None = None) -> np.ndarray:
    """mu-Approx: nearest-neighbour forest, tree decomposition, split of large trees.

    1. Build a forest in which every tree has at least k records
       (:func:`nearest_neighbour_forest`: every record linked to its nearest record;
       trees with fewer than k records joined to the nearest other tree by their
       shortest edge, round after round).
    2. Decompose the trees so that every tree has k..max(2k-1, 3k-5) records: edges
       visited from the longest down are cut when the tree is larger than that and
       both parts keep at least k records (:func:`.mst.cut_forest`).
    3. A tree with more than 2k-1 records: its record farthest from the tree's
       centroid and that record's k-1 nearest records of the tree form one group, the
       rest of the tree another (repeated while the rest is larger than 2k-1, which
       can happen only for trees step 2 could not cut, e.g. stars).

    {method contract}
    rng : unused (deterministic method); accepted for the common contract.

    Returns
    -------
    labels : (n,) int64, canonical; groups of k..2k-1.

    Notes
    -----
    **Choices.** The paper does not say which edge to cut in step 2 nor in which
    order small trees join in step 1. Tried on Census (k = 3 / 4 / 5 / 10, published
    6.25 / 8.47 / 10.78 / 17.01): longest edge first with Boruvka rounds (the rule
    here) 6.2200 / 8.5510 / 10.3684 / 17.4337; joining one small tree at a time
    6.2200 / 8.6733 / 10.4563 / 17.3683; the most balanced cut 6.6278 / 8.9233 /
    10.6456 / 16.8715; cutting down to 2k-1 instead of max(2k-1, 3k-5) 6.2200 /
    8.5510 / 10.3760 / 17.3303; the decomposition of Aggarwal et al. (PODS 2006:
    cut above the deepest vertex whose subtree has >= k records, or gather its
    child subtrees into clusters of >= k) rooted at each tree's first record 6.2665
    / 8.5965 / 10.4642 / 17.3661, at the record nearest its centroid 6.2951 /
    8.6937 / 10.5617 / 16.7694. None is within 2 % at every k (the rule here misses
    k = 5 by 3.8 % and k = 10 by 2.5 %); keeping groups of up to max(2k-1, 3k-5)
    instead of splitting them in step 3 gives 10.8444 at k = 5 but 19.3598 at
    k = 10. The default stays the reading closest to the description (methods
    spec, section 3b): step 2 visits edges from the longest down, the rule of MST
    partitioning (``mst``), and step 1 joins every small tree by its shortest edge
    in each round; the readings that come closer at k = 10 (most balanced cut,
    Aggarwal et al. at the centroid) add rules the description does not have and
    move away at k = 3 / 4 (6.63 / 8.92 and 6.30 / 8.69 against the published
    6.25 / 8.47). The remaining
    difference, -3.8 % at k = 5 and +2.5 % at k = 10 (-0.5 % and +1.0 % at
    k = 3 / 4), is in the published-figure table of the README.

    **Ties.** Nearest records and equally short join edges go to the record first in
    the input; equally long edges are visited in the order they were added.

    **Complexity.** O(n^2 p) for the nearest-neighbour forest and the joins, O(n^2)
    worst case for the cuts. Census (1080 x 13): about 0.1 s.

    References
    ----------
    Domingo-Ferrer, J., Sebe, F. & Solanas, A. (2008). A polynomial-time approximation
    to optimal multivariate microaggregation. Computers & Mathematics with
    Applications 55(4), 714-732.

    Examples
    --------
    >>> X = np.array([[0.0], [0.5], [1.0], [9.0], [9.5], [10.0], [10.2]])
    >>> mu_approx(X, 3).tolist()
    [0, 0, 0, 1, 1, 1, 1]
    """
    u, v, w = nearest_neighbour_forest(X, k)
    n = X.shape[0]
    comp = cut_forest(n, u, v, w, k, cap=max(2 * k - 1, 3 * k - 5))
    labels = np.empty(n, dtype=np.int64)
    g = 0
    for c in range(int(comp.max()) + 1):
        part = np.flatnonzero(comp == c)
        while part.size > 2 * k - 1:
            Xp = X[part]
            f = farthest(sq_dist_to(Xp, Xp.mean(axis=0)))
            d = sq_dist_to(Xp, Xp[f])
            d[f] = -1.0  # the farthest record belongs to its own group
            sel = smallest_m(d, k)
            labels[part[sel]] = g
            g += 1
            part = np.delete(part, sel)
            advance(k)  # records grouped (the progress display)
        labels[part] = g
        g += 1
        advance(part.size)
    return canonical_labels(labels)


SPECS: tuple[MethodSpec, ...] = (
    MethodSpec(name="mu-approx", cost=CostModel(3.6, 1.9), func=mu_approx, summary="mu-Approx: nearest-neighbour forest cut into trees of k..max(2k-1, 3k-5), large trees split",
               reference="Domingo-Ferrer, Sebe & Solanas (2008), A polynomial-time approximation to optimal multivariate microaggregation, Computers & Mathematics with Applications 55(4)"),
)
