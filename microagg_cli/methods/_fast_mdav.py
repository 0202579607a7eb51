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
holds). Removed records are only marked; the bounds of their cells are refitted at
once, and both structures below are rebuilt from the remaining records when these
fall below ``REBUILD_FRACTION`` of those they were built on.

Queries:

* farthest from the centroid ``c``: records are kept sorted by their distance to a
  reference point ``c0``; ``|x - c| <= |x - c0| + |c - c0|`` stops the scan after a
  few records while the centroid stays near ``c0``. As it drifts the scans lengthen;
  once they have cost about one pass over the remaining records since the last
  re-centring, ``c0`` becomes the current centroid and the list is re-sorted;
* farthest from ``r``: the cone index of :mod:`._cones` (buckets of records with
  similar directions and norms around ``c0``, bounded by the cone bound of
  maximum-inner-product search, searched by decreasing bound);
* nearest to a record: depth-first search of a k-d tree (median splits on the
  widest coordinate, leaves of ``LEAF_SIZE`` records), nearest box first.

Measured (benchmarks/mdav.py, k = 3, 10 columns, one core): the farthest-from-``r``
query was the bottleneck of the earlier tree-only search -- in 10 dimensions a tree
cell is nearly as wide as the slack between the farthest record and the many almost
as far, so it computed the distances of a few to 40 % of the records. The cone bound
follows the geometry of that query and cuts this several-fold; what remains is close
to quadratic on unstructured data (a 10-dimensional Gaussian mixture) and far below
it on structured microdata.

Compile time: numba compiles these kernels on their first use after installation
(then caches them, see :mod:`microagg_cli._jit`). They are written as scalar loops,
without numpy's generic routines (``argsort``, ``full``, fancy or slice assignment,
``@``): each of those compiles a generic implementation that costs more than the loop
it replaces, at no gain at run time. Arguments are never literal constants (a literal
``0`` compiles a callee a second time).
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from ..errors import InvalidParameterError
from ..progress import counter as progress_counter
from ..partition import canonical_labels
from . import _cones
from ._common import check_k

__all__ = ["mdav_fast"]

#: Records per tree leaf (at most).
LEAF_SIZE = 64
#: The tree and the cone index are rebuilt when the remaining records fall below this
#: share of the records they were built on.
REBUILD_FRACTION = 0.6
#: Capacity of an exact-sum expansion: non-overlapping doubles occupy disjoint bit
#: ranges of the 2098 bit positions a double can reach.
_EXPANSION_CAPACITY = 2112
#: Depth-first stacks; the tree is balanced (median splits), so its depth is
#: about log2(n / LEAF_SIZE) and each level adds at most two entries.
_STACK = 512
#: Integer node fields (columns of ``nodes``).
_START, _END, _LEFT, _RIGHT, _PARENT, _MINIDX, _COUNT = 0, 1, 2, 3, 4, 5, 6


# --------------------------------------------------------------------------- exact sums
@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
def _centroid(parts, npart, m, c):
    for j in range(c.shape[0]):
        c[j] = _fsum_round(parts, npart, j) / m


# --------------------------------------------------------------------------- distances
@njit(cache=True, nogil=True)
def _dist(A, a, q):
    """Squared distance of row ``a`` of ``A`` to ``q``, left to right."""
    s = 0.0
    for j in range(q.shape[0]):
        t = A[a, j] - q[j]
        s += t * t
    return s


@njit(cache=True, nogil=True)
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
#   nodes (nn, 7) integer fields;  nf (nn, 2p) the box of the remaining records
#   c0 (p,)     the centroid when the tree was built
#   head (1,)   first entry of pi[2] that may still be remaining


@njit(cache=True, nogil=True)
def _fit_leaf(nd, Xt, alive, nodes, nf):
    """Box of the remaining records of a leaf."""
    p = Xt.shape[1]
    first = True
    for t in range(nodes[nd, _START], nodes[nd, _END]):
        if alive[t]:
            for j in range(p):
                v = Xt[t, j]
                if first or v < nf[nd, j]:
                    nf[nd, j] = v
                if first or v > nf[nd, p + j]:
                    nf[nd, p + j] = v
            first = False


@njit(cache=True, nogil=True)
def _fit_inner(nd, nodes, nf, p):
    """Box of an inner node: the union of its children's that still hold records."""
    first = True
    for side in range(2):
        c = nodes[nd, _LEFT + side]
        if nodes[c, _COUNT] == 0:
            continue
        for j in range(p):
            if first or nf[c, j] < nf[nd, j]:
                nf[nd, j] = nf[c, j]
            if first or nf[c, p + j] > nf[nd, p + j]:
                nf[nd, p + j] = nf[c, p + j]
        first = False


@njit(cache=True, nogil=True)
def _build(X, idx, c0, leaf_size):
    """Tree over the records ``idx`` (sorted input indices), reference point ``c0``.

    Each node splits its records at the median of its widest coordinate; leaves hold
    at most ``leaf_size`` records.
    """
    m = idx.size
    p = X.shape[1]
    cap = 2 * (m // max(1, (leaf_size + 1) // 2)) + 3
    nodes = np.empty((cap, 7), np.int64)
    for nd in range(cap):
        for f in range(7):
            nodes[nd, f] = -1
    perm = np.empty(m, np.int64)
    for t in range(m):
        perm[t] = idx[t]
    key = np.empty(m)
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
        low = perm[s]
        for t in range(s + 1, e):
            low = min(low, perm[t])
        nodes[nd, _MINIDX] = low
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
        for t in range(s, e):
            key[t] = X[perm[t], dim]
        _cones._select(key, perm, s, e, mid)
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
    full = nodes
    nodes = np.empty((nn, 7), np.int64)
    for nd in range(nn):
        for f in range(7):
            nodes[nd, f] = full[nd, f]
    Xt = np.empty((m, p))
    XtT = np.empty((p, m))
    pi = np.empty((3, m), np.int64)
    pf = np.empty((2, m))
    alive = np.empty(m, np.bool_)
    for t in range(m):
        for j in range(p):
            Xt[t, j] = X[perm[t], j]
            XtT[j, t] = Xt[t, j]
        pi[0, t] = perm[t]
        alive[t] = True
        d2 = _dist(Xt, t, c0)
        pf[0, t] = d2
        pf[1, t] = np.sqrt(d2)
    _order_desc(pf, pi)
    nf = np.empty((nn, 2 * p))
    # children have larger ids than their parents: fit bottom-up
    for nd in range(nn - 1, -1, -1):
        if nodes[nd, _LEFT] < 0:
            for t in range(nodes[nd, _START], nodes[nd, _END]):
                pi[1, t] = nd
            _fit_leaf(nd, Xt, alive, nodes, nf)
        else:
            _fit_inner(nd, nodes, nf, p)
    head = np.zeros(1, np.int64)
    c0c = np.empty(p)
    for j in range(p):
        c0c[j] = c0[j]
    return Xt, XtT, pi, alive, pf, nodes, nf, c0c, head


@njit(cache=True, nogil=True)
def _order_desc(pf, pi):
    """``pi[2]`` = the tree positions by decreasing ``pf[0]``: quicksort made of the
    tree's own median selection. The order among equal keys is irrelevant (the scan
    of :func:`_farthest_from_centroid` stops on a key bound); written out rather than
    ``np.argsort``, whose generic implementation costs more to compile than all of
    this module."""
    m = pf.shape[1]
    key = np.empty(m)
    for t in range(m):
        pi[2, t] = t
        key[t] = -pf[0, t]
    order = pi[2]
    stack = np.empty((_STACK, 2), np.int64)
    stack[0, 0] = 0
    stack[0, 1] = m
    top = 1
    while top > 0:
        top -= 1
        s = stack[top, 0]
        e = stack[top, 1]
        if e - s <= 1:
            continue
        mid = s + (e - s) // 2
        _cones._select(key, order, s, e, mid)
        stack[top, 0] = s
        stack[top, 1] = mid
        stack[top + 1, 0] = mid + 1
        stack[top + 1, 1] = e
        top += 2


# --------------------------------------------------------------------------- bounds
@njit(cache=True, nogil=True)
def _box_lower(nf, nd, p, q):
    """Lower bound from the box; exact in floating point (rounding is monotone)."""
    s = 0.0
    for j in range(p):
        g = max(max(nf[nd, j] - q[j], q[j] - nf[nd, p + j]), 0.0)
        s += g * g
    return s


# --------------------------------------------------------------------------- queries
@njit(cache=True, nogil=True)
def _recentre(tree, c):
    """Make ``c`` the reference point of the farthest-from-centroid scan: distances of
    the remaining records to ``c``, and their order (removed records last)."""
    Xt, XtT, pi, alive, pf, nodes, nf, c0, head = tree
    m = Xt.shape[0]
    for t in range(m):
        if alive[t]:
            d = _dist(Xt, t, c)
            pf[0, t] = d
            pf[1, t] = np.sqrt(d)
        else:
            pf[0, t] = -1.0
            pf[1, t] = 0.0
    _order_desc(pf, pi)
    for j in range(c.shape[0]):
        c0[j] = c[j]
    head[0] = 0


@njit(cache=True, nogil=True)
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
    best_i = 9223372036854775807  # int64 max
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


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
def _remove(tree, i, pos_of):
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
        _fit_leaf(leaf, Xt, alive, nodes, nf)
    nd = nodes[leaf, _PARENT]
    while nd >= 0:
        if nodes[nd, _COUNT] > 0:
            _fit_inner(nd, nodes, nf, Xt.shape[1])
        nd = nodes[nd, _PARENT]


@njit(cache=True, nogil=True)
def _mdav_core(X, k, leaf_size, rebuild_fraction, rel, done):
    n, p = X.shape
    stats = np.zeros(8, np.int64)
    cstats = np.zeros(2, np.int64)
    labels = np.empty(n, np.int64)
    remaining = np.empty(n, np.bool_)
    idx = np.empty(n, np.int64)
    pos_of = np.empty(n, np.int64)
    for i in range(n):
        labels[i] = -1
        remaining[i] = True
        idx[i] = i
        pos_of[i] = -1
    parts = np.zeros((p, _EXPANSION_CAPACITY))
    npart = np.zeros(p, np.int64)
    for i in range(n):
        for j in range(p):
            _fsum_add(parts, npart, j, X[i, j])
    nrem = n
    st_node = np.empty(_STACK, np.int64)
    st_val = np.empty(_STACK)
    buf = np.empty(leaf_size)
    kd = np.empty(k)
    ki = np.empty(k, np.int64)
    c = np.empty(p)
    _centroid(parts, npart, nrem, c)
    tree = _build(X, idx, c, leaf_size)
    cones = _cones.build(X, idx, c, rel)
    gub = np.empty(cones[4].shape[0])
    heap = np.empty(cones[4].shape[0], np.int64)
    ub = np.empty(_cones.GROUP)
    cbuf = np.empty(_cones.BUCKET)
    for t in range(n):
        pos_of[tree[2][0, t]] = t
    built = n
    stats[5] += 1
    fc_work = 0
    g = 0
    while nrem >= 2 * k:
        _centroid(parts, npart, nrem, c)
        scanned = stats[0]
        r = _farthest_from_centroid(tree, c, rel, stats)
        # the scan lengthens as the centroid drifts from the tree's reference point:
        # re-centre once the scans since the last re-centring cost about as much as it
        fc_work += stats[0] - scanned
        if fc_work > nrem:
            _recentre(tree, c)
            fc_work = 0
            stats[6] += 1
        three = nrem >= 3 * k
        s = -1
        if three:
            s = _cones.farthest(cones, X[r], rel, gub, heap, ub, cbuf, cstats)
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
                _remove(tree, i, pos_of)
                _cones.remove(cones, i, rel)
            nrem -= got + 1
            g += 1
            done[0] += got + 1  # records grouped so far: read by the progress display
        if not three:
            break
        if nrem < rebuild_fraction * built and nrem >= 2 * k:
            _centroid(parts, npart, nrem, c)
            idx = np.empty(nrem, np.int64)
            t = 0
            for i in range(n):
                if remaining[i]:
                    idx[t] = i
                    t += 1
            tree = _build(X, idx, c, leaf_size)
            cones = _cones.build(X, idx, c, rel)
            for t in range(nrem):
                pos_of[tree[2][0, t]] = t
            built = nrem
            stats[5] += 1
            fc_work = 0
    for i in range(n):
        if remaining[i]:
            labels[i] = g
    done[0] += nrem
    stats[1] += cstats[0]
    stats[2] += cstats[1]
    return labels, stats


def _run(X: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Raw labels and diagnostics: records scanned by the farthest-from-centroid
    query; super-buckets and buckets searched by the farthest-from-r queries; leaves
    and inner nodes visited by the nearest-neighbour queries; builds; re-centrings."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    check_k(X, k)
    rel = 1e-9 + 8.0 * (X.shape[1] + 8) * np.finfo(np.float64).eps
    # the kernel adds the records it groups to the progress counter (no GIL needed)
    return _mdav_core(X, int(k), LEAF_SIZE, REBUILD_FRACTION, rel, progress_counter())


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
    overflow) are refused (:func:`in_range`); :func:`microagg_cli.methods.fixed_size.mdav`
    hands those to the reference implementation.
    """
    X = np.asarray(X, dtype=np.float64)
    check_k(X, k)
    if not in_range(X):
        raise InvalidParameterError("fast MDAV takes values of magnitude below 2**1000; use mdav_reference")
    return canonical_labels(_run(X, k)[0])


def in_range(X: np.ndarray) -> bool:
    """Whether the exact running sums of :func:`mdav_fast` cannot overflow on ``X``."""
    return not X.size or bool(np.abs(X).max() < 2.0**1000)
