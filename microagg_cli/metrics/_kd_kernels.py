"""Compiled construction of DLD's k-d trees (the trees of ``risk.distance_linkage.BoxTree``).

A k-d tree (Bentley, J. L. (1975), Multidimensional binary search trees used for
associative searching, Communications of the ACM 18(9), 509-517) split, as Friedman,
Bentley & Finkel (1977, An algorithm for finding best matches in logarithmic expected
time, ACM Transactions on Mathematical Software 3(3), 209-226) advise, at the median of
the coordinate of widest spread, with the tight bounding box of every node's points.

The build works on columns: the s coordinates are gathered once as rows of a scratch
(s, m) array in row order, and only the tree order ``perm`` moves. A node's split
coordinate is the widest side of its box (already known: no scan). Its median is
found by a histogram of the node's values between the box's corners (taken while the
values are gathered), then again within the median's bucket while it is large, and a
selection among the few values left (Hoare's FIND, :mod:`microagg_cli._select`). The
node's rows are then split by a stable partition of its stretch of ``perm`` (one pass,
no branch on the values), and the tight boxes of both children are read through
``perm`` one coordinate at a time, four values at a time. The columns in tree order
(``PT``, the layout the search reads) are gathered once at the end. The quickselect of
every node's (key, row) pairs that this replaces mispredicted a branch on every other
comparison, and its boxes were scanned row by row through the permutation.

Every kernel is compiled with ``nogil=True`` (the scenarios of ``--jobs N`` build their
trees in N threads) and nothing here allocates: the caller passes every buffer,
scratch included.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from .._select import select

__all__ = ["kd_build_columns", "work_sizes"]

# buckets of the median's histogram (at most; a node of n points uses n / 2)
_BUCKETS = 256
# at most this many values: the median by a plain selection, without a histogram
_SMALL = 16


@njit(cache=True, nogil=True)
def _span_at(row, idx, a, b):  # pragma: no cover - compiled
    """Low and high of ``row[idx[a:b]]`` (b > a), four independent accumulators (the
    loop runs several comparisons at once)."""
    l0 = row[idx[a]]
    l1 = l0
    l2 = l0
    l3 = l0
    h0 = l0
    h1 = l0
    h2 = l0
    h3 = l0
    i = a
    while i + 4 <= b:
        x = row[idx[i]]
        y = row[idx[i + 1]]
        z = row[idx[i + 2]]
        w = row[idx[i + 3]]
        l0 = x if x < l0 else l0
        l1 = y if y < l1 else l1
        l2 = z if z < l2 else l2
        l3 = w if w < l3 else l3
        h0 = x if x > h0 else h0
        h1 = y if y > h1 else h1
        h2 = z if z > h2 else h2
        h3 = w if w > h3 else h3
        i += 4
    while i < b:
        x = row[idx[i]]
        l0 = x if x < l0 else l0
        h0 = x if x > h0 else h0
        i += 1
    l0 = l1 if l1 < l0 else l0
    l2 = l3 if l3 < l2 else l2
    l0 = l2 if l2 < l0 else l0
    h0 = h1 if h1 > h0 else h0
    h2 = h3 if h3 > h2 else h2
    h0 = h2 if h2 > h0 else h0
    return l0, h0


@njit(cache=True, nogil=True)
def _child_spans(P0, perm, s0, mid, s1, skip, lo, hi, a, b):  # pragma: no cover - compiled
    """The boxes of nodes ``a`` (rows ``perm[s0:mid]``) and ``b`` (``perm[mid:s1]``) on
    every coordinate but ``skip`` (one call per node: small nodes are many)."""
    s = P0.shape[0]
    for j in range(s):
        if j == skip:
            continue
        row = P0[j]
        for side in range(2):
            p = s0 if side == 0 else mid
            q = mid if side == 0 else s1
            low, high = _span_at(row, perm, p, q)
            node = a if side == 0 else b
            lo[node, j] = low
            hi[node, j] = high


@njit(cache=True, nogil=True)
def _kth(row, idx, k, low, high, keys, buf, ibuf, hist):  # pragma: no cover - compiled
    """The ``k``-th smallest (from 0) of the n = ``idx.size`` values ``row[idx]``, which
    lie in [low, high]; also copies them to ``keys[:n]`` (``buf``, ``ibuf`` (n,) and
    ``hist`` (2, buckets) scratch).

    The values are counted into buckets of equal width between ``low`` and ``high``
    (the bucket of a value, ``int((x - low) * scale)`` capped at the last, is monotone in
    the value as rounding is, so the k-th smallest lies in the bucket where the running
    count passes k; it is written out in every loop: as a call, it was not inlined and
    took three times as long); the values of that bucket are kept and
    the step repeated on them while they are many and not all equal, then the k-th
    is selected among them (Hoare's selection). Returns the k-th smallest ``v``, how
    many values are below ``v`` and how many equal to it (all of them share the bucket
    of ``v`` at every step)."""
    n = idx.size
    below = 0
    first = True
    src = keys
    in_keys = True
    while True:
        if low == high:
            if first:
                for t in range(n):
                    keys[t] = row[idx[t]]
            return low, below, n
        nb = n >> 1
        if nb > _BUCKETS:
            nb = _BUCKETS
        scale = nb / (high - low)
        if n <= _SMALL or not (0.0 < scale < np.inf):  # few, or a spread no width holds
            break
        top = nb - 1
        for t in range(nb):
            hist[0, t] = 0
            hist[1, t] = 0
        # two counters, even and odd values: consecutive values often share a bucket
        if first:
            i = 0
            while i + 2 <= n:
                x = row[idx[i]]
                y = row[idx[i + 1]]
                keys[i] = x
                keys[i + 1] = y
                f = (x - low) * scale
                g = (y - low) * scale
                hist[0, int(f) if f < top else top] += 1
                hist[1, int(g) if g < top else top] += 1
                i += 2
            if i < n:
                x = row[idx[i]]
                keys[i] = x
                f = (x - low) * scale
                hist[0, int(f) if f < top else top] += 1
            first = False
        else:
            i = 0
            while i + 2 <= n:
                f = (src[i] - low) * scale
                g = (src[i + 1] - low) * scale
                hist[0, int(f) if f < top else top] += 1
                hist[1, int(g) if g < top else top] += 1
                i += 2
            if i < n:
                f = (src[i] - low) * scale
                hist[0, int(f) if f < top else top] += 1
        c = 0
        bk = 0
        while c + hist[0, bk] + hist[1, bk] <= k:
            c += hist[0, bk] + hist[1, bk]
            bk += 1
        k -= c
        below += c
        # the bucket's values to the front of ``buf`` (writes never pass reads)
        w = 0
        for i in range(n):
            x = src[i]
            buf[w] = x
            f = (x - low) * scale
            w += (int(f) if f < top else top) == bk
        src = buf
        in_keys = False
        if w == n:  # no value left out (cannot happen: the lowest and the highest
            break   # fall in different buckets), kept against a loop without end
        n = w
        for i in range(n):  # the values left, in place: read through an identity order
            ibuf[i] = i
        low, high = _span_at(buf, ibuf, 0, n)
    if first:
        for t in range(n):
            keys[t] = row[idx[t]]
    if in_keys:
        for i in range(n):
            buf[i] = keys[i]
    select(buf, ibuf, 0, n, k)
    v = buf[k]
    equal = 0
    for i in range(n):
        below += buf[i] < v
        equal += buf[i] == v
    return v, below, equal


def work_sizes(m: int, s: int) -> tuple[int, int]:
    """Sizes of the float64 and int64 scratch of :func:`kd_build_columns` for ``m``
    points of ``s`` coordinates."""
    return (s + 2) * m, m + 2 + 2 * _BUCKETS


# numba kernel: arrays passed one by one (no structs of arrays in nopython mode)
@njit(cache=True, nogil=True)
def kd_build_columns(U, cols, mult, leaf, perm, PT, mult_t, lo, hi, left, right, start, end, fwork, iwork):  # pragma: no cover - compiled
    """A k-d tree of the rows of ``U[:, cols]`` (``U`` (m, p), ``cols`` (s,)): median splits
    on the widest coordinate, leaves of at most ``leaf`` rows, nodes numbered breadth
    first (children after their parent, root 0).

    Fills ``perm`` (m,) (tree order -> row: node ``i`` holds rows
    ``perm[start[i]:end[i]]``), ``PT`` (s, m) the points in tree order as columns,
    ``mult_t`` (m,) ``mult`` in tree order, the tight boxes ``lo``/``hi`` (nodes, s) and
    the children ``left``/``right`` (-1 at a leaf). Returns the number of nodes.
    ``fwork`` (at least :func:`work_sizes`' first, float64) and ``iwork`` (its second,
    int64) are scratch, reused from tree to tree by the caller (fresh memory would be
    paged in at every tree).

    Notes
    -----
    A node of n points on coordinate ``d`` keeps in its left child the n // 2 smallest
    by (value on ``d``, row), in its right child the others; each child lists its rows
    in increasing order (the partitions are stable), so a leaf's rows are sorted. The
    widest coordinate is the first of largest ``hi - lo``. Each level costs O(m s); a
    tree O(m s log(m / leaf)).
    """
    m = U.shape[0]
    s = cols.shape[0]
    P0 = fwork[:s * m].reshape((s, m))  # the columns, rows in their own order
    keys = fwork[s * m:(s + 1) * m]
    buf = fwork[(s + 1) * m:(s + 2) * m]
    ibuf = iwork[:m + 2]
    hist = iwork[m + 2:m + 2 + 2 * _BUCKETS].reshape((2, _BUCKETS))
    for i in range(m):
        perm[i] = i
        for j in range(s):
            P0[j, i] = U[i, cols[j]]
    for j in range(s):
        if m > 0:
            lo[0, j], hi[0, j] = _span_at(P0[j], perm, 0, m)  # perm: still the row order
        else:
            lo[0, j] = np.inf
            hi[0, j] = -np.inf
    start[0] = 0
    end[0] = m
    left[0] = -1
    right[0] = -1
    nn = 1
    node = 0
    while node < nn:
        s0 = start[node]
        s1 = end[node]
        n = s1 - s0
        if n > leaf:
            dim = 0
            wide = -1.0
            for j in range(s):
                if hi[node, j] - lo[node, j] > wide:
                    wide = hi[node, j] - lo[node, j]
                    dim = j
            half = n // 2
            row = P0[dim]
            v, below, equal = _kth(row, perm[s0:s1], half, lo[node, dim], hi[node, dim], keys, buf, ibuf, hist)
            # the stable partition of the node's rows: the values equal to v that go
            # left are the first ones (in row order). The left side is written in
            # place (never ahead of the reading), the right one aside; each row is
            # written to both, the side it does not belong to being overwritten by the
            # next row that does (or landing on a slot past the side's end)
            eq_left = half - below
            nl = 0
            if eq_left == 0:
                for t in range(n):
                    r = perm[s0 + t]
                    perm[s0 + nl] = r
                    ibuf[t - nl] = r
                    nl += keys[t] < v
            elif eq_left == equal:
                for t in range(n):
                    r = perm[s0 + t]
                    perm[s0 + nl] = r
                    ibuf[t - nl] = r
                    nl += keys[t] <= v
            else:
                eqs = 0
                for t in range(n):
                    x = keys[t]
                    eq = x == v
                    r = perm[s0 + t]
                    perm[s0 + nl] = r
                    ibuf[t - nl] = r
                    nl += (x < v) | (eq & (eqs < eq_left))
                    eqs += eq
            for t in range(n - half):
                perm[s0 + half + t] = ibuf[t]
            a = nn
            b = nn + 1
            _child_spans(P0, perm, s0, s0 + half, s1, dim, lo, hi, a, b)
            # on the split coordinate the left child holds the node's lowest value, the
            # right one its highest and v (the smallest on the right); the left child's
            # highest is v when values equal to v went left, else it is looked up
            lo[a, dim] = lo[node, dim]
            hi[b, dim] = hi[node, dim]
            lo[b, dim] = v
            if eq_left > 0:
                hi[a, dim] = v
            else:
                hi[a, dim] = _span_at(row, perm, s0, s0 + half)[1]
            left[node] = a
            right[node] = b
            start[a] = s0
            end[a] = s0 + half
            start[b] = s0 + half
            end[b] = s1
            left[a] = -1
            right[a] = -1
            left[b] = -1
            right[b] = -1
            nn += 2
        node += 1
    for j in range(s):
        row = P0[j]
        out = PT[j]
        for i in range(m):
            out[i] = row[perm[i]]
    for i in range(m):
        mult_t[i] = mult[perm[i]]
    return nn
