"""Exact fast MDAV-generic: branch-and-bound queries in a tree, compiled with numba.

:func:`mdav_fast` returns exactly the partition of the straightforward
:func:`microagg_cli.methods.fixed_size.mdav_reference` -- same groups, same order, same
tie decisions -- but answers the queries of each iteration (the record farthest from
the centroid, the record farthest from ``r``, the k-1 nearest neighbours of ``r`` and
of ``s``) without scanning every remaining record.

Exactness rests on two rules shared with the reference, bit for bit:

* the centroid of the remaining records is ``fsum(column) / m`` per column, where
  ``fsum`` is the correctly rounded exact sum (:func:`math.fsum` in the reference; here
  an exact running sum, kept as a non-overlapping expansion of doubles -- Shewchuk's
  algorithm, as in CPython's fsum -- from which leaving records are subtracted);
* a squared distance is ``sum_j (x_j - q_j) * (x_j - q_j)`` accumulated left to right,
  one IEEE operation at a time (no fused multiply-add, no reordering).

Everything else only prunes, with bounds valid for the *rounded* distances: box bounds
are exact in floating point because rounding is monotone (a coordinate inside
``[lo, hi]`` gives a rounded term between those of the box faces); the other bounds
carry a relative margin ``rel`` (about 1e-9) far above any rounding error. A node or
record is skipped only if it cannot be strictly better than the best so far, nor
equally good and earlier in the input (each node knows the smallest input index it
holds). Removed records are only marked; the bounds of their leaf and its ancestors
are refitted at once, and the tree is rebuilt from the remaining records when they
fall below ``REBUILD_FRACTION`` of those it was built on.

Queries:

* farthest from the centroid ``c``: records are kept sorted by their distance to
  ``c0``, the centroid when the tree was built; ``|x - c| <= |x - c0| + |c - c0|``
  stops the scan after a few records, the centroid moving slowly;
* farthest from ``r`` and nearest to a record: depth-first search of the tree (median
  splits on the widest coordinate, leaves of ``LEAF_SIZE`` records kept in decreasing
  distance to ``c0``), the most promising child first.

In 10 dimensions the tree cells are nearly as wide as the data cloud, and once MDAV
has peeled the data the remaining records are at similar distances from any record
on their surface: a farthest-from-``r`` query still computes the distances of a
sizeable share of the records (a few to 40 % on Gaussian and Gaussian-mixture data),
so the cost stays close to quadratic at large n -- about 30 times less than the
straightforward loop at 50,000 records (benchmarks/mdav.py).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..partition import canonical_labels
from ._common import check_k

__all__ = ["mdav_fast"]

#: Records per tree leaf (at most).
LEAF_SIZE = 128
#: The tree is rebuilt when the remaining records fall below this share of the
#: records it was built on (which also re-centres the centroid's sorted list).
REBUILD_FRACTION = 0.8
#: Capacity of an exact-sum expansion: non-overlapping doubles occupy disjoint bit
#: ranges of the 2098 bit positions a double can reach.
_EXPANSION_CAPACITY = 2112
#: Depth-first stacks; the tree is balanced (median splits), so its depth is
#: about log2(n / LEAF_SIZE) and each level adds at most two entries.
_STACK = 512
#: Integer node fields (columns of ``nodes``).
_START, _END, _LEFT, _RIGHT, _PARENT, _MINIDX, _COUNT = 0, 1, 2, 3, 4, 5, 6
#: Scalar node fields, after the 4p columns lo | hi | cen | cen - c0 of ``nf``.
_NCEN2, _RAD, _RAD0, _MAXD2 = 0, 1, 2, 3


# --------------------------------------------------------------------------- exact sums
@njit(cache=True)
def _fsum_add(parts, npart, j, x):
    """Add ``x`` exactly to expansion ``j`` (the partials loop of CPython's fsum)."""
    i = 0
    for t in range(npart[j]):
        y = parts[j, t]
        if abs(x) < abs(y):
            x, y = y, x
        hi = x + y
        yr = hi - x
        lo = y - yr
        if lo != 0.0:
            parts[j, i] = lo
            i += 1
        x = hi
    if x != 0.0:
        parts[j, i] = x
        i += 1
    npart[j] = i


@njit(cache=True)
def _fsum_round(parts, npart, j):
    """The correctly rounded value of expansion ``j`` (CPython fsum's final step)."""
    n = npart[j]
    hi = 0.0
    lo = 0.0
    if n > 0:
        n -= 1
        hi = parts[j, n]
        while n > 0:
            x = hi
            n -= 1
            y = parts[j, n]
            hi = x + y
            yr = hi - x
            lo = y - yr
            if lo != 0.0:
                break
        # half-even rounding across partials (sum([1e-16, 1, 1e16]) rounds up)
        if n > 0 and ((lo < 0.0 and parts[j, n - 1] < 0.0) or (lo > 0.0 and parts[j, n - 1] > 0.0)):
            y = lo * 2.0
            x = hi + y
            yr = x - hi
            if y == yr:
                hi = x
    return hi


@njit(cache=True)
def _centroid(parts, npart, m, c):
    for j in range(c.shape[0]):
        c[j] = _fsum_round(parts, npart, j) / m


# --------------------------------------------------------------------------- distances
@njit(cache=True)
def _dist(A, a, q):
    """Squared distance of row ``a`` of ``A`` to ``q``, left to right."""
    s = 0.0
    for j in range(q.shape[0]):
        t = A[a, j] - q[j]
        s += t * t
    return s


@njit(cache=True)
def _leaf_dists(XtT, s, e, q, buf):
    """Distances of tree positions s..e-1 to ``q`` into ``buf``: the same left-to-right
    sum per record as :func:`_dist`, vectorised across the records."""
    n = e - s
    for t in range(n):
        buf[t] = 0.0
    for j in range(q.shape[0]):
        qj = q[j]
        row = XtT[j, s:e]
        for t in range(n):
            u = row[t] - qj
            buf[t] += u * u


# --------------------------------------------------------------------------- the tree
# A tree is a tuple of arrays (passed by reference):
#   Xt (m, p), XtT (p, m)  the records in tree order, row- and column-major
#   pi (3, m)   input index, leaf and (row 2) tree positions by decreasing d2t
#   alive (m,)  still remaining?
#   pf (2, m)   squared distance d2t of each record to c0, and its root
#   nodes (nn, 7) integer fields;  nf (nn, 4p + 4) box, ball and maxd2 (largest d2t)
#   c0 (p,)     the centroid when the tree was built
#   head (1,)   first entry of pi[2] that may still be remaining


@njit(cache=True)
def _fit_leaf(nd, Xt, alive, pf, nodes, nf, c0, rel):
    """Box, ball and largest d2t of the remaining records of a leaf."""
    p = Xt.shape[1]
    first = True
    md = 0.0
    for j in range(p):
        nf[nd, 2 * p + j] = 0.0
    for t in range(nodes[nd, _START], nodes[nd, _END]):
        if alive[t]:
            for j in range(p):
                v = Xt[t, j]
                if first or v < nf[nd, j]:
                    nf[nd, j] = v
                if first or v > nf[nd, p + j]:
                    nf[nd, p + j] = v
                nf[nd, 2 * p + j] += v
            md = max(md, pf[0, t])
            first = False
    cnt = nodes[nd, _COUNT]
    ncen2 = 0.0
    for j in range(p):
        nf[nd, 2 * p + j] /= cnt
        u = nf[nd, 2 * p + j] - c0[j]
        nf[nd, 3 * p + j] = u
        ncen2 += u * u
    r2 = 0.0
    cen = nf[nd, 2 * p:3 * p]
    for t in range(nodes[nd, _START], nodes[nd, _END]):
        if alive[t]:
            r2 = max(r2, _dist(Xt, t, cen))
    nf[nd, 4 * p + _NCEN2] = ncen2
    nf[nd, 4 * p + _RAD] = np.sqrt(r2) * (1.0 + rel) + (1e-300 if r2 > 0.0 else 0.0)
    nf[nd, 4 * p + _MAXD2] = md


@njit(cache=True)
def _fit_inner(nd, nodes, nf, p, rel):
    """Bounds of an inner node from those of its children that still hold records.

    The ball keeps the centre it got when the tree was built; its radius is the
    smaller of the radius then and one that covers the children's balls.
    """
    rr = 0.0
    md = 0.0
    first = True
    cen = nf[nd, 2 * p:3 * p]
    for side in range(2):
        c = nodes[nd, _LEFT + side]
        if nodes[c, _COUNT] == 0:
            continue
        for j in range(2 * p):
            if first or (j < p and nf[c, j] < nf[nd, j]) or (j >= p and nf[c, j] > nf[nd, j]):
                nf[nd, j] = nf[c, j]
        first = False
        r = np.sqrt(_dist(nf[:, 2 * p:3 * p], c, cen)) * (1.0 + rel) + nf[c, 4 * p + _RAD]
        rr = max(rr, r)
        md = max(md, nf[c, 4 * p + _MAXD2])
    nf[nd, 4 * p + _RAD] = min(rr * (1.0 + rel), nf[nd, 4 * p + _RAD0])
    nf[nd, 4 * p + _MAXD2] = md


@njit(cache=True)
def _select(X, perm, dim, s, e, kth):
    """Reorder ``perm[s:e]`` so that position ``kth`` holds the median of coordinate
    ``dim``, no larger values before it and no smaller after (quickselect,
    median-of-three pivots; deterministic)."""
    lo = s
    hi = e - 1
    while hi > lo:
        a = X[perm[lo], dim]
        b = X[perm[(lo + hi) // 2], dim]
        c = X[perm[hi], dim]
        pv = max(min(a, b), min(max(a, b), c))
        i = lo
        j = hi
        while i <= j:
            while X[perm[i], dim] < pv:
                i += 1
            while X[perm[j], dim] > pv:
                j -= 1
            if i <= j:
                t = perm[i]
                perm[i] = perm[j]
                perm[j] = t
                i += 1
                j -= 1
        if kth <= j:
            hi = j
        elif kth >= i:
            lo = i
        else:
            return


@njit(cache=True)
def _order_desc(key):
    """Positions of ``key`` by decreasing value (heapsort; ties in any fixed order)."""
    n = key.shape[0]
    idx = np.arange(n)
    for start in range(n // 2 - 1, -1, -1):
        _sift(key, idx, start, n)
    for end in range(n - 1, 0, -1):
        t = idx[0]
        idx[0] = idx[end]
        idx[end] = t
        _sift(key, idx, 0, end)
    return idx


@njit(cache=True)
def _sift(key, idx, root, n):
    # min-heap on key, so that the heapsort leaves the largest keys first
    while True:
        child = 2 * root + 1
        if child >= n:
            return
        if child + 1 < n and key[idx[child + 1]] < key[idx[child]]:
            child += 1
        if key[idx[child]] < key[idx[root]]:
            t = idx[root]
            idx[root] = idx[child]
            idx[child] = t
            root = child
        else:
            return


@njit(cache=True)
def _build(X, idx, c0, leaf_size, rel):
    """Tree over the records ``idx`` (sorted input indices), reference point ``c0``.

    Each node splits its records at the median of its widest coordinate; leaves hold
    at most ``leaf_size`` records.
    """
    m = idx.size
    p = X.shape[1]
    cap = 2 * (m // max(1, (leaf_size + 1) // 2)) + 3
    nodes = np.full((cap, 7), -1, np.int64)
    perm = idx.copy()
    stack = np.empty(_STACK, np.int64)
    stack[0] = 0
    top = 1
    nodes[0, _START] = 0
    nodes[0, _END] = m
    nn = 1
    while top > 0:
        top -= 1
        nd = stack[top]
        s = nodes[nd, _START]
        e = nodes[nd, _END]
        nodes[nd, _COUNT] = e - s
        nodes[nd, _MINIDX] = perm[s:e].min()
        if e - s <= leaf_size:
            continue
        dim = 0
        widest = -1.0
        for j in range(p):
            a = X[perm[s], j]
            b = a
            for t in range(s + 1, e):
                v = X[perm[t], j]
                a = min(a, v)
                b = max(b, v)
            if b - a > widest:
                widest = b - a
                dim = j
        mid = s + (e - s) // 2
        _select(X, perm, dim, s, e, mid)
        for side in range(2):
            ch = nn + side
            nodes[ch, _START] = s if side == 0 else mid
            nodes[ch, _END] = mid if side == 0 else e
            nodes[ch, _PARENT] = nd
            nodes[nd, _LEFT + side] = ch
        nn += 2
        stack[top] = nn - 1
        stack[top + 1] = nn - 2
        top += 2
    nodes = nodes[:nn].copy()
    # within each leaf, records by decreasing distance to c0: a farthest-record scan of
    # the leaf can stop at the first record too close to c0 to beat the best so far
    d2 = np.empty(m)
    for t in range(m):
        d2[t] = _dist(X, perm[t], c0)
    for nd in range(nn):
        if nodes[nd, _LEFT] < 0:
            s = nodes[nd, _START]
            e = nodes[nd, _END]
            o = _order_desc(d2[s:e])
            perm[s:e] = perm[s:e][o]
            d2[s:e] = d2[s:e][o]
    Xt = np.empty((m, p))
    pi = np.empty((3, m), np.int64)
    pf = np.empty((2, m))
    alive = np.ones(m, np.bool_)
    for t in range(m):
        for j in range(p):
            Xt[t, j] = X[perm[t], j]
        pi[0, t] = perm[t]
        pf[0, t] = d2[t]
        pf[1, t] = np.sqrt(d2[t])
    pi[2] = _order_desc(pf[0])
    nf = np.empty((nn, 4 * p + 4))
    # children have larger ids than their parents: fit bottom-up
    for nd in range(nn - 1, -1, -1):
        s = nodes[nd, _START]
        e = nodes[nd, _END]
        if nodes[nd, _LEFT] < 0:
            pi[1, s:e] = nd
            _fit_leaf(nd, Xt, alive, pf, nodes, nf, c0, rel)
            nf[nd, 4 * p + _RAD0] = nf[nd, 4 * p + _RAD]
            continue
        # inner ball: the mean of the node's records and the exact radius around it
        cen = nf[nd, 2 * p:3 * p]
        cen[:] = 0.0
        for t in range(s, e):
            for j in range(p):
                cen[j] += Xt[t, j]
        ncen2 = 0.0
        for j in range(p):
            cen[j] /= e - s
            u = cen[j] - c0[j]
            nf[nd, 3 * p + j] = u
            ncen2 += u * u
        nf[nd, 4 * p + _NCEN2] = ncen2
        r2 = 0.0
        for t in range(s, e):
            r2 = max(r2, _dist(Xt, t, cen))
        nf[nd, 4 * p + _RAD0] = np.sqrt(r2) * (1.0 + rel) + (1e-300 if r2 > 0.0 else 0.0)
        _fit_inner(nd, nodes, nf, p, rel)
    head = np.zeros(1, np.int64)
    return Xt, np.ascontiguousarray(Xt.T), pi, alive, pf, nodes, nf, c0.copy(), head


# --------------------------------------------------------------------------- bounds
@njit(cache=True)
def _upper(nf, nd, p, c0, shift, sn2, sn, rel):
    """Upper bound on the rounded squared distance from ``q = c0 + shift`` to node ``nd``.

    The smallest of the ball bound ``(|q - cen| + rad)^2`` and of
    ``maxd2 + |shift|^2 - 2 min <x - c0, shift>`` (x in the node) with the minimum
    taken over the ball or over the box -- all from one pass over the coordinates.
    Margins ``rel`` cover every rounding error, cancellation included.
    """
    dot = 0.0
    lin = 0.0
    alin = 0.0
    for j in range(p):
        sj = shift[j]
        dot += sj * nf[nd, 3 * p + j]
        u = sj * (nf[nd, j] - c0[j])
        w = sj * (nf[nd, p + j] - c0[j])
        lin += min(u, w)
        alin += abs(u) + abs(w)
    rad = nf[nd, 4 * p + _RAD]
    md = nf[nd, 4 * p + _MAXD2]
    a = sn2 + nf[nd, 4 * p + _NCEN2]
    dc = a - 2.0 * dot + rel * (a + 2.0 * abs(dot))
    sd = np.sqrt(max(dc, 0.0)) + rel * np.sqrt(a)
    ub = (sd + rad) ** 2
    base = md + 2.0 * rad * sn + sn2
    ub = min(ub, base - 2.0 * dot + rel * (base + 2.0 * abs(dot) + a))
    ub = min(ub, md + sn2 - 2.0 * lin + rel * (md + sn2 + 2.0 * alin))
    return ub * (1.0 + rel) + 1e-300


@njit(cache=True)
def _box_upper(nf, nd, p, q):
    """Upper bound from the box; exact in floating point (rounding is monotone)."""
    s = 0.0
    for j in range(p):
        m = max(q[j] - nf[nd, j], nf[nd, p + j] - q[j])
        s += m * m
    return s


@njit(cache=True)
def _box_lower(nf, nd, p, q):
    """Lower bound from the box; exact in floating point (rounding is monotone)."""
    s = 0.0
    for j in range(p):
        g = max(max(nf[nd, j] - q[j], q[j] - nf[nd, p + j]), 0.0)
        s += g * g
    return s


# --------------------------------------------------------------------------- queries
@njit(cache=True)
def _farthest_from_centroid(tree, c, rel, stats):
    """Input index of the remaining record farthest from ``c`` (first on ties).

    Scans the records by decreasing distance to ``c0``; none after the first with
    ``(|x - c0| + |c - c0|)^2`` below the best distance found can be farther.
    """
    Xt, XtT, pi, alive, pf, nodes, nf, c0, head = tree
    sn2 = 0.0
    for j in range(c.shape[0]):
        u = c[j] - c0[j]
        sn2 += u * u
    sn = np.sqrt(sn2) * (1.0 + rel)
    order = pi[2]
    m = order.shape[0]
    h = head[0]
    while h < m and not alive[order[h]]:
        h += 1
    head[0] = h
    best_d = -1.0
    best_i = np.iinfo(np.int64).max
    for o in range(h, m):
        t = order[o]
        e = pf[1, t] * (1.0 + rel) + sn
        if e * e * (1.0 + rel) + 1e-300 < best_d:
            break
        if alive[t]:
            stats[0] += 1
            d = _dist(Xt, t, c)
            i = pi[0, t]
            if d > best_d or (d == best_d and i < best_i):
                best_d = d
                best_i = i
    return best_i


@njit(cache=True)
def _farthest(tree, q, rel, st_node, st_val, buf, stats):
    """Input index of the remaining record farthest from ``q`` (first on ties)."""
    Xt, XtT, pi, alive, pf, nodes, nf, c0, head = tree
    p = q.shape[0]
    shift = q - c0
    sn2 = 0.0
    for j in range(p):
        sn2 += shift[j] * shift[j]
    sn = np.sqrt(sn2) * (1.0 + rel)
    best_d = -1.0
    best_i = np.iinfo(np.int64).max
    st_node[0] = 0
    st_val[0] = np.inf
    top = 1
    while top > 0:
        top -= 1
        nd = st_node[top]
        ub = st_val[top]
        if nodes[nd, _COUNT] == 0 or ub < best_d:
            continue
        if ub <= best_d * (1.0 + 1e3 * rel) + 1e-290:
            # a near tie: the exact box bound may settle it (duplicated records)
            ub = min(ub, _box_upper(nf, nd, p, q))
            if ub < best_d or (ub <= best_d and nodes[nd, _MINIDX] > best_i):
                continue
        if nodes[nd, _LEFT] < 0:
            stats[1] += 1
            s0 = nodes[nd, _START]
            e0 = nodes[nd, _END]
            # |x - q| <= |x - c0| + |q - c0|, and the leaf is sorted by |x - c0|
            while e0 > s0:
                f = pf[1, e0 - 1] * (1.0 + rel) + sn
                if f * f * (1.0 + rel) + 1e-300 >= best_d:
                    break
                e0 -= 1
            _leaf_dists(XtT, s0, e0, q, buf)
            for t in range(s0, e0):
                if alive[t]:
                    d = buf[t - s0]
                    i = pi[0, t]
                    if d > best_d or (d == best_d and i < best_i):
                        best_d = d
                        best_i = i
            continue
        stats[2] += 1
        a = nodes[nd, _LEFT]
        b = nodes[nd, _RIGHT]
        ua = _upper(nf, a, p, c0, shift, sn2, sn, rel) if nodes[a, _COUNT] > 0 else -1.0
        ubb = _upper(nf, b, p, c0, shift, sn2, sn, rel) if nodes[b, _COUNT] > 0 else -1.0
        # the more promising child goes on top of the stack, to be explored first
        if ua < ubb:
            a, b = b, a
            ua, ubb = ubb, ua
        st_node[top] = b
        st_val[top] = ubb
        st_node[top + 1] = a
        st_val[top + 1] = ua
        top += 2
    return best_i


@njit(cache=True)
def _nearest(tree, q, qi, m, st_node, st_val, buf, kd, ki, stats):
    """The ``m`` remaining records nearest to ``q``, record ``qi`` excepted.

    Written to ``kd[:m]`` (distances) and ``ki[:m]`` (input indices) in increasing
    (distance, input index) order; returns how many were found.
    """
    Xt, XtT, pi, alive, pf, nodes, nf, c0, head = tree
    p = q.shape[0]
    filled = 0
    st_node[0] = 0
    st_val[0] = 0.0
    top = 1
    while top > 0:
        top -= 1
        nd = st_node[top]
        lb = st_val[top]
        if nodes[nd, _COUNT] == 0:
            continue
        if filled == m and (lb > kd[m - 1] or (lb >= kd[m - 1] and nodes[nd, _MINIDX] > ki[m - 1])):
            continue
        if nodes[nd, _LEFT] < 0:
            stats[3] += 1
            s0 = nodes[nd, _START]
            e0 = nodes[nd, _END]
            _leaf_dists(XtT, s0, e0, q, buf)
            for t in range(s0, e0):
                if not alive[t]:
                    continue
                i = pi[0, t]
                if i == qi:
                    continue
                d = buf[t - s0]
                if filled < m:
                    pos = filled
                    filled += 1
                elif d < kd[m - 1] or (d == kd[m - 1] and i < ki[m - 1]):
                    pos = m - 1
                else:
                    continue
                while pos > 0 and (kd[pos - 1] > d or (kd[pos - 1] == d and ki[pos - 1] > i)):
                    kd[pos] = kd[pos - 1]
                    ki[pos] = ki[pos - 1]
                    pos -= 1
                kd[pos] = d
                ki[pos] = i
            continue
        stats[4] += 1
        a = nodes[nd, _LEFT]
        b = nodes[nd, _RIGHT]
        la = _box_lower(nf, a, p, q) if nodes[a, _COUNT] > 0 else np.inf
        lbb = _box_lower(nf, b, p, q) if nodes[b, _COUNT] > 0 else np.inf
        if la > lbb:
            a, b = b, a
            la, lbb = lbb, la
        st_node[top] = b
        st_val[top] = lbb
        st_node[top + 1] = a
        st_val[top + 1] = la
        top += 2
    return filled


@njit(cache=True)
def _remove(tree, i, pos_of, rel):
    """Take record ``i`` out of the tree; refit its leaf and the leaf's ancestors."""
    Xt, XtT, pi, alive, pf, nodes, nf, c0, head = tree
    t = pos_of[i]
    alive[t] = False
    leaf = pi[1, t]
    nd = leaf
    while nd >= 0:
        nodes[nd, _COUNT] -= 1
        nd = nodes[nd, _PARENT]
    if nodes[leaf, _COUNT] > 0:
        _fit_leaf(leaf, Xt, alive, pf, nodes, nf, c0, rel)
    nd = nodes[leaf, _PARENT]
    while nd >= 0:
        if nodes[nd, _COUNT] > 0:
            _fit_inner(nd, nodes, nf, Xt.shape[1], rel)
        nd = nodes[nd, _PARENT]


@njit(cache=True)
def _mdav_core(X, k, leaf_size, rebuild_fraction, rel):
    n, p = X.shape
    stats = np.zeros(8, np.int64)
    labels = np.full(n, -1, np.int64)
    remaining = np.ones(n, np.bool_)
    parts = np.zeros((p, _EXPANSION_CAPACITY))
    npart = np.zeros(p, np.int64)
    for i in range(n):
        for j in range(p):
            _fsum_add(parts, npart, j, X[i, j])
    nrem = n
    pos_of = np.full(n, -1, np.int64)
    st_node = np.empty(_STACK, np.int64)
    st_val = np.empty(_STACK)
    buf = np.empty(leaf_size)
    kd = np.empty(k)
    ki = np.empty(k, np.int64)
    c = np.empty(p)
    _centroid(parts, npart, nrem, c)
    tree = _build(X, np.arange(n), c, leaf_size, rel)
    pos_of[tree[2][0]] = np.arange(n)
    built = n
    stats[5] += 1
    g = 0
    while nrem >= 2 * k:
        _centroid(parts, npart, nrem, c)
        r = _farthest_from_centroid(tree, c, rel, stats)
        three = nrem >= 3 * k
        s = -1
        if three:
            s = _farthest(tree, X[r], rel, st_node, st_val, buf, stats)
        for rep in range(2 if three else 1):
            centre = r
            if rep == 1:
                # s joined r's group only if every remaining record is as far from r as
                # s: the reference then takes the next remaining record in input order
                centre = s
                while not remaining[centre]:
                    centre += 1
            got = _nearest(tree, X[centre], centre, k - 1, st_node, st_val, buf, kd, ki, stats)
            ki[got] = centre
            for t in range(got + 1):
                i = ki[t]
                labels[i] = g
                remaining[i] = False
                for j in range(p):
                    _fsum_add(parts, npart, j, -X[i, j])
                _remove(tree, i, pos_of, rel)
            nrem -= got + 1
            g += 1
        if not three:
            break
        if nrem < rebuild_fraction * built and nrem >= 2 * k:
            _centroid(parts, npart, nrem, c)
            idx = np.flatnonzero(remaining)
            tree = _build(X, idx, c, leaf_size, rel)
            pos_of[tree[2][0]] = np.arange(idx.size)
            built = nrem
            stats[5] += 1
    for i in range(n):
        if remaining[i]:
            labels[i] = g
    return labels, stats


def _run(X: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Raw labels and diagnostics: records scanned by the farthest-from-centroid
    query; leaves and inner nodes visited by the farthest-from-r queries and by the
    nearest-neighbour queries; tree builds."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    check_k(X, k)
    rel = 1e-9 + 8.0 * (X.shape[1] + 8) * np.finfo(np.float64).eps
    return _mdav_core(X, int(k), LEAF_SIZE, REBUILD_FRACTION, rel)


def mdav_fast(X: np.ndarray, k: int, *, rng: np.random.Generator | None = None) -> np.ndarray:
    """MDAV-generic, exact and fast: the partition of ``mdav_reference``.

    Same steps as :func:`microagg_cli.methods.fixed_size.mdav_reference`; the queries
    of each iteration are answered from a tree over the remaining records (see the
    module docstring).

    Parameters
    ----------
    X : (n, p) float array, z-scored; not mutated.
    k : minimum group size, 2 <= k <= n.
    rng : unused (deterministic method); accepted for the common contract.

    Returns
    -------
    labels : (n,) int64, canonical; identical to ``mdav_reference(X, k)``.

    Notes
    -----
    Ties go to the record that comes first in the input, exactly as in the reference:
    the centroid is the correctly rounded column sum over the count (an exact running
    sum), distances are summed left to right, and every bound used to skip records
    holds for the rounded distances. Memory O(n p). Building the tree costs
    O(n p log n); a query visits the nodes its bounds cannot exclude, which in 10
    dimensions is still a sizeable share of the tree (see benchmarks/mdav.py), and
    in the worst case all of it. Single-threaded: the result never depends on the
    thread count. Values of magnitude 2**1000 or more (where an exact sum could
    overflow) are handed to the reference implementation.
    """
    X = np.asarray(X, dtype=np.float64)
    check_k(X, k)
    if X.size and not np.abs(X).max() < 2.0**1000:
        from .fixed_size import mdav_reference

        return mdav_reference(X, k)
    return canonical_labels(_run(X, k)[0])
