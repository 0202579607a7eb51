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
from ..progress import advance, phase
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


#: From this many records on, the nearest records are found with a k-d tree
#: (:func:`_nearest_other`) instead of a scan of every pair (:func:`_nearest`).
_TREE_ROWS = 1000
#: A record with more candidates than this within its bound (many records at the same
#: distance: duplicates) is scanned against every record instead.
_BALL_CAP = 2048


def _nearest_other(X: np.ndarray, tree, rows: np.ndarray, comp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_nearest` of ``rows`` among the records of the other components
    (``comp``: a component label per record; ``np.arange(n)``: every record but
    itself), from the k-d tree ``tree`` of ``X``: the first record of another
    component among a row's s + 1 nearest by the tree (s: its component's size) bounds
    the nearest one's exact distance; every record within that bound (widened by a
    relative 1e-7, far above the tree's rounding) is a candidate, its squared distance
    computed as :func:`._common.sq_dist_rows` computes it, and the nearest wins, ties
    to the record first in the input. So the result is :func:`_nearest`'s."""
    from .. import threads

    n, p = X.shape
    size = np.bincount(comp)
    arg = np.zeros(rows.size, dtype=np.int64)
    best = np.full(rows.size, np.inf)
    step = 4096
    for s in range(0, rows.size, step):
        r = rows[s: s + step]
        kq = int(min(n, size[comp[r]].max() + 1))
        dd, ii = tree.query(X[r], k=kq, workers=threads.limit())
        dd, ii = dd.reshape(r.size, kq), ii.reshape(r.size, kq)
        other = comp[ii] != comp[r][:, None]
        first = np.argmax(other, axis=1)  # the nearest of another component, by the tree
        radius = dd[np.arange(r.size), first] * (1.0 + 1e-7) + 1e-300
        counts = tree.query_ball_point(X[r], radius, return_length=True, workers=threads.limit())
        heavy = counts > _BALL_CAP  # many records at one distance (duplicates): scanned instead
        for h in np.flatnonzero(heavy):
            d = np.zeros(n)
            for j in range(p):
                t = X[r[h], j] - X[:, j]
                d += t * t
            d[comp == comp[r[h]]] = np.inf
            arg[s + h] = int(np.argmin(d))
            best[s + h] = d[arg[s + h]]
        light = np.flatnonzero(~heavy)
        if not light.size:
            continue
        r, radius = r[light], radius[light]
        balls = tree.query_ball_point(X[r], radius, workers=threads.limit())
        counts = np.fromiter((len(b) for b in balls), dtype=np.int64, count=r.size)
        cand = np.fromiter((j for b in balls for j in b), dtype=np.int64, count=int(counts.sum()))
        row = np.repeat(r, counts)
        pos = np.repeat(np.arange(r.size), counts)
        keep = comp[cand] != comp[row]
        cand, row, pos = cand[keep], row[keep], pos[keep]
        d2 = np.zeros(cand.size)
        for j in range(p):  # as sq_dist_rows: the row minus the candidate, column by column
            t = X[row, j] - X[cand, j]
            d2 += t * t
        order = np.lexsort((cand, d2, pos))  # by row, then distance, then input position
        pos, cand, d2 = pos[order], cand[order], d2[order]
        head = np.flatnonzero(np.r_[True, pos[1:] != pos[:-1]])
        arg[s + light[pos[head]]] = cand[head]
        best[s + light[pos[head]]] = d2[head]
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
    tree = None
    if n >= _TREE_ROWS:
        from scipy.spatial import cKDTree  # 0.2 s to import: only when used

        tree = cKDTree(X)
        nn, dist = _nearest_other(X, tree, everyone, everyone)
    else:
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
        if tree is not None:  # every small tree's members at once, each in input order
            members_all = np.flatnonzero(np.isin(comp, small))
            members_all = members_all[np.argsort(comp[members_all], kind="stable")]
            arg_all, best_all = _nearest_other(X, tree, members_all, comp)
            bounds = np.searchsorted(comp[members_all], small)
            ends = np.r_[bounds[1:], members_all.size]
        for t, c in enumerate(small):
            if tree is not None:
                members = members_all[bounds[t]: ends[t]]
                arg, best = arg_all[bounds[t]: ends[t]], best_all[bounds[t]: ends[t]]
            else:
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
    with phase("mu-approx: nearest-neighbour forest", total=None):
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
    MethodSpec(name="mu-approx", cost=CostModel(0.3, 1.4), func=mu_approx, summary="mu-Approx: nearest-neighbour forest cut into trees of k..max(2k-1, 3k-5), large trees split",
               reference="Domingo-Ferrer, Sebe & Solanas (2008), A polynomial-time approximation to optimal multivariate microaggregation, Computers & Mathematics with Applications 55(4)"),
)
