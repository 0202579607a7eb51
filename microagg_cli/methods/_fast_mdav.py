"""Exact fast MDAV-generic: branch-and-bound queries in a tree and a cone index.

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
``[lo, hi]`` gives a rounded term between those of the box faces); the cone bounds
carry a relative margin ``rel`` (about 1e-9) far above any rounding error. A node or
record is skipped only if it cannot be strictly better than the best so far, nor
equally good and earlier in the input (each node knows the smallest input index it
holds). Removed records are only marked; the bounds of their cells are refitted at
once, and both structures below are rebuilt from the remaining records when these
fall below ``REBUILD_FRACTION`` of those they were built on.

Queries:

* farthest from the centroid ``c``: the remaining records are kept sorted by their
  distance to a reference point ``c0``; ``|x - c| <= |x - c0| + |c - c0|`` stops the
  scan after a few records while the centroid stays near ``c0``. As it drifts the
  scans lengthen; once they have cost about one pass over the remaining records since
  the last re-centring, ``c0`` becomes the current centroid and the records are
  re-sorted (in numpy, between kernel calls: it is rare, and these distances only
  bound, so their summation order does not matter);
* farthest from ``r``: the cone index of :mod:`._cones` (buckets of records with
  similar directions and norms around the centroid at the last build, bounded by the
  cone bound of maximum-inner-product search, searched by decreasing bound);
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
(then caches them, see :mod:`microagg_cli._jit`). Its cost is per compiled function
(each is optimised and turned into machine code on its own, then again inside every
caller it is linked into), per line, and per array argument of a kernel called from
Python (its unboxing code). So there are three kernels -- :func:`_build_tree`,
:func:`._cones.build`'s and :func:`_mdav_core`, which answers the queries itself --
and seven small helpers without a Python entry point, ten functions in all (there
were 56, numba's own routines included: the cold compile took about 20 s, now about
8 s on the 2-core test machine). Nothing is allocated inside them (each ``np.empty``
or ``np.zeros`` of a new shape or dtype is a routine numba compiles), so they need no
reference counting (``_nrt=False``); numpy's generic routines (``argsort``, ``@``,
fancy indexing) and ``min`` / ``max`` (a routine per type signature) are written out;
no call between kernels passes a literal constant (a literal compiles the callee once
more). The rebuilds and re-centrings run between calls of :func:`_mdav_core`, which
returns to Python for them.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from ..errors import InvalidParameterError
from ..progress import counter as progress_counter
from ..partition import canonical_labels
from . import _cones
from ._cones import select
from ._common import check_k
from ._spec import method_contract

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
#: The arrays of a tree, in order: the records in tree order, row- and column-major
#: ((m, p) and (p, m)); per tree position its input index, its leaf, and whether it
#: remains; the nodes' integer fields (nodes, 7) and the box of their remaining
#: records (nodes, 2p).
TREE_FIELDS = ("Xt", "XtT", "tin", "tleaf", "talive", "nodes", "nf")
#: The state :func:`_mdav_core` keeps between calls: groups made, records remaining,
#: records the structures were built on, whether the exact sums are set up, records
#: scanned by the farthest-from-centroid scan since its last re-centring, first entry
#: of its order that may still remain.
_G, _NREM, _BUILT, _INIT, _FC, _HEAD = 0, 1, 2, 3, 4, 5
_NSTATE = 6
#: What :func:`_mdav_core` returns: finished, or needs a rebuild or a re-centring first.
_DONE, _REBUILD, _RECENTRE = 0, 1, 2



@njit(cache=True, nogil=True, _nrt=False, no_cpython_wrapper=True)
def _bucket_distances(buf, A, b, q, p, bucket):
    """buf[t] = squared distance of bucket ``b``'s record t (``A[b, :, t]``) to ``q``,
    summed left to right over the p coordinates in ``buf``'s precision (float64: the
    reference's sum; float32: the screen), vectorised across the bucket's records."""
    for t in range(bucket):
        buf[t] = 0.0
    for j in range(p):
        qj = q[j]
        for t in range(bucket):
            u = A[b, j, t] - qj
            buf[t] += u * u


# --------------------------------------------------------------------------- exact sums
@njit(cache=True, nogil=True, _nrt=False, no_cpython_wrapper=True)
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


@njit(cache=True, nogil=True, _nrt=False, no_cpython_wrapper=True)
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


# --------------------------------------------------------------------------- the tree
@njit(cache=True, nogil=True, _nrt=False, no_cpython_wrapper=True)
def _fit_node(nd, Xt, alive, nodes, nf):
    """Box of the remaining records of node ``nd``: of a leaf, from its records; of an
    inner node, the union of its children's boxes that still hold records."""
    p = Xt.shape[1]
    first = True
    if nodes[nd, _LEFT] < 0:
        for t in range(nodes[nd, _START], nodes[nd, _END]):
            if alive[t]:
                for j in range(p):
                    v = Xt[t, j]
                    if first or v < nf[nd, j]:
                        nf[nd, j] = v
                    if first or v > nf[nd, p + j]:
                        nf[nd, p + j] = v
                first = False
        return
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


# numba kernel: arrays passed one by one (no structs of arrays in nopython mode,
# and a jitclass would defeat cache=True)
@njit(cache=True, nogil=True, _nrt=False)
def _build_tree(X, idx, leaf_size, perm, key, stack, Xt, XtT, tin, tleaf, talive, nodes, nf):
    """Tree over the records ``idx`` (sorted input indices): fills the arrays of
    :data:`TREE_FIELDS` and returns the number of nodes. ``perm``, ``key``, ``stack``
    are scratch.

    Each node splits its records at the median of its widest coordinate; leaves hold
    at most ``leaf_size`` records.
    """
    m = idx.shape[0]
    p = X.shape[1]
    for nd in range(nodes.shape[0]):
        for f in range(7):
            nodes[nd, f] = -1
    for t in range(m):
        perm[t] = idx[t]
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
            low = perm[t] if perm[t] < low else low
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
                a = v if v < a else a
                b = v if v > b else b
            if b - a > widest:
                widest = b - a
                dim = j
        mid = s + (e - s) // 2
        for t in range(s, e):
            key[t] = X[perm[t], dim]
        select(key, perm, s, e, mid)
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
    for t in range(m):
        for j in range(p):
            Xt[t, j] = X[perm[t], j]
            XtT[j, t] = Xt[t, j]
        tin[t] = perm[t]
        talive[t] = True
    # children have larger ids than their parents: fit bottom-up
    for nd in range(nn - 1, -1, -1):
        if nodes[nd, _LEFT] < 0:
            for t in range(nodes[nd, _START], nodes[nd, _END]):
                tleaf[t] = nd
        _fit_node(nd, Xt, talive, nodes, nf)
    return nn


def _new_tree(X: np.ndarray, idx: np.ndarray, leaf_size: int = LEAF_SIZE) -> tuple[np.ndarray, ...]:
    """The arrays of :data:`TREE_FIELDS` for the records ``idx`` (sorted input indices)
    of ``X``."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    idx = np.ascontiguousarray(idx, dtype=np.int64)
    m = idx.size
    p = X.shape[1]
    cap = 2 * (m // max(1, (leaf_size + 1) // 2)) + 3
    tree = (np.empty((m, p)), np.empty((p, m)), np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.bool_),
            np.empty((cap, 7), np.int64), np.empty((cap, 2 * p)))
    nn = _build_tree(X, idx, int(leaf_size), np.empty(m, np.int64), np.empty(m), np.empty(_STACK, np.int64), *tree)
    return (*tree[:5], tree[5][:nn], tree[6][:nn])


# --------------------------------------------------------------------------- MDAV
# numba kernel: arrays passed one by one (no structs of arrays in nopython mode,
# and a jitclass would defeat cache=True)
@njit(cache=True, nogil=True, _nrt=False)
def _mdav_core(X, k, rel, rebuild_fraction, st, stats, done, parts, npart, labels, c, order, orho, oc0, pos_of,
               Xt, XtT, tin, tleaf, talive, nodes, nf,
               ang, rho, alive, inp, pos, Xb, Yb, ba, bf, bcnt, ga, gf, gcnt, bang, c0, geo, sigma,
               st_node, st_val, buf, kd, ki, gub, heap, ub, w, w32, buf32):
    """MDAV's iterations from the state ``st`` on, until the partition is complete
    (returns ``_DONE``) or the tree and the cone index need rebuilding (``_REBUILD``:
    the caller rebuilds them and calls again). Labels are -1 for remaining records.

    The queries are written out here rather than as functions of their own (each
    function costs numba compile time, see the module docstring): the record farthest
    from a point (the centroid, then ``r``) from the cone index, and the k-1 nearest
    neighbours of a record by a depth-first search of the tree.
    """
    n, p = X.shape
    if st[_INIT] == 0:
        for i in range(n):
            for j in range(p):
                _fsum_add(parts, npart, j, X[i, j])
        st[_INIT] = 1
    g = st[_G]
    nrem = st[_NREM]
    bucket = geo[0]
    group = geo[1]
    ng = ga.shape[0]
    nb = ba.shape[0]
    mc = alive.shape[0]
    m = k - 1
    while nrem >= 2 * k:
        for j in range(p):
            c[j] = _fsum_round(parts, npart, j) / nrem
        three = nrem >= 3 * k
        # r: the remaining record farthest from the centroid (first on ties). ``order``
        # holds the records by decreasing distance ``orho`` to a point ``oc0``; none
        # after the first with (|x - oc0| + |c - oc0|)^2 below the best distance found
        # can be farther
        sn2 = 0.0
        for j in range(p):
            u = c[j] - oc0[j]
            sn2 += u * u
        sn = np.sqrt(sn2) * (1.0 + rel)
        h = st[_HEAD]
        while h < order.shape[0] and labels[order[h]] >= 0:
            h += 1
        st[_HEAD] = h
        best = -1.0
        r = n
        for o in range(h, order.shape[0]):
            e = orho[o] * (1.0 + rel) + sn
            if e * e * (1.0 + rel) + 1e-300 < best:
                break
            i = order[o]
            if labels[i] < 0:
                st[_FC] += 1
                d = 0.0
                for j in range(p):
                    u = X[i, j] - c[j]
                    d += u * u
                if d > best or (d == best and i < r):
                    best = d
                    r = i
        # the scan lengthens as the centroid drifts from oc0: re-centre once the scans
        # since the last re-centring cost about one pass over the remaining records
        recentre = st[_FC] > nrem
        s = -1
        if three:
            # s: the record farthest from r (first on ties), from the cone index.
            # w = r - c0; float32 screening: the scaled query, 1/sigma^2 and the error
            # margin (scaled units):
            # |screened - exact| <= (p + 6) u sum_j (|y_j| + |w_j|)^2
            #                    <= 2 (p + 6) u (|y|^2 + |w|^2)
            # with u = 2^-24 and |y| <= sigma; doubled for safety, plus an absolute floor
            q = X[r]
            wn2 = 0.0
            for j in range(p):
                w[j] = q[j] - c0[j]
                wn2 += w[j] * w[j]
            wn = np.sqrt(wn2)
            screened = sigma[0] > 0.0 and wn < 1e6 * sigma[0]
            inv2 = 0.0
            margin = 0.0
            if screened:
                inv = 1.0 / sigma[0]
                for j in range(p):
                    w32[j] = np.float32(w[j] * inv)
                inv2 = inv * inv
                margin = 4.0 * (p + 6) * 2.0 ** -24 * (1.0 + wn2 * inv2) * (1.0 + rel) + 1e-30
            _cones.bounds(ga, gf, gcnt, 0 * ng, ng, w, wn, wn2, rel, gub)
            # super-buckets by decreasing bound (a binary max-heap of their ids), searched
            # until the best bound left cannot reach the best distance found; one
            # sift-down per pass: first from every inner node, last first (heapify),
            # then after popping the best super-bucket gq, which is then searched
            for gq in range(ng):
                heap[gq] = gq
            size = ng
            start = ng // 2 - 1
            gq = -1
            best = -1.0
            far = -1
            while True:
                if start >= 0:
                    root = start
                    start -= 1
                else:
                    if size == 0:
                        break
                    gq = heap[0]
                    if gub[gq] < best or gub[gq] < 0.0:
                        break
                    size -= 1
                    heap[0] = heap[size]
                    root = 0
                while True:
                    child = 2 * root + 1
                    if child >= size:
                        break
                    if child + 1 < size and gub[heap[child + 1]] > gub[heap[child]]:
                        child += 1
                    if gub[heap[child]] > gub[heap[root]]:
                        heap[root], heap[child] = heap[child], heap[root]
                        root = child
                    else:
                        break
                if gq < 0:
                    continue
                stats[0] += 1
                # its buckets by decreasing bound, each only if its bound reaches best
                b0 = gq * group
                b1 = b0 + group if b0 + group < nb else nb
                _cones.bounds(ba, bf, bcnt, b0, b1, w, wn, wn2, rel, ub)
                for _ in range(b1 - b0):
                    at = 0
                    for t in range(1, b1 - b0):
                        if ub[t] > ub[at]:
                            at = t
                    if ub[at] < best:
                        break
                    ub[at] = -1.0
                    b = b0 + at
                    stats[1] += 1
                    bs = b * bucket
                    be = mc - bs if mc - bs < bucket else bucket
                    if screened:
                        # screen in float32 (half the memory traffic): a record can beat
                        # the best only if its screened distance plus the margin reaches it
                        _bucket_distances(buf32, Yb, b, w32, p, bucket)
                        thr = best * inv2 - margin
                        for t in range(be):
                            if alive[bs + t] and buf32[t] >= thr:
                                # the exact distance, left to right as the reference
                                d = 0.0
                                for j in range(p):
                                    u = Xb[b, j, t] - q[j]
                                    d += u * u
                                i = inp[bs + t]
                                if d > best or (d == best and i < far):
                                    best = d
                                    far = i
                        continue
                    # the bucket's distances, each summed left to right over the
                    # coordinates as the reference does, vectorised across the records
                    _bucket_distances(buf, Xb, b, q, p, bucket)
                    for t in range(be):
                        if alive[bs + t]:
                            d = buf[t]
                            i = inp[bs + t]
                            if d > best or (d == best and i < far):
                                best = d
                                far = i
            s = far
        for rep in range(2 if three else 1):
            centre = r
            if rep == 1:
                # s joined r's group only if every remaining record is as far from r as
                # s: the reference then takes the next remaining record in input order
                centre = s
                while labels[centre] >= 0:
                    centre += 1
            # the m = k - 1 remaining records nearest to the centre, into kd (distances)
            # and ki (input indices) in increasing (distance, input index) order:
            # depth-first search of the tree, nearer box first
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
                    stats[2] += 1
                    s0 = nodes[nd, _START]
                    e0 = nodes[nd, _END]
                    # the leaf's distances, each summed left to right over the
                    # coordinates as the reference does, vectorised across the records
                    for t in range(e0 - s0):
                        buf[t] = 0.0
                    for j in range(p):
                        qj = X[centre, j]
                        for t in range(e0 - s0):
                            u = XtT[j, s0 + t] - qj
                            buf[t] += u * u
                    for t in range(s0, e0):
                        if not talive[t]:
                            continue
                        i = tin[t]
                        if i == centre:
                            continue
                        d = buf[t - s0]
                        if filled < m:
                            at = filled
                            filled += 1
                        elif d < kd[m - 1] or (d == kd[m - 1] and i < ki[m - 1]):
                            at = m - 1
                        else:
                            continue
                        while at > 0 and (kd[at - 1] > d or (kd[at - 1] == d and ki[at - 1] > i)):
                            kd[at] = kd[at - 1]
                            ki[at] = ki[at - 1]
                            at -= 1
                        kd[at] = d
                        ki[at] = i
                    continue
                stats[3] += 1
                # the children's lower bounds from their boxes: exact in floating point
                # (rounding is monotone: a coordinate inside a box gives a term no
                # smaller than the face's)
                a = nodes[nd, _LEFT]
                b = nodes[nd, _RIGHT]
                la = np.inf
                lbb = np.inf
                for side in range(2):
                    ch = a if side == 0 else b
                    if nodes[ch, _COUNT] == 0:
                        continue
                    d = 0.0
                    for j in range(p):
                        gl = nf[ch, j] - X[centre, j]
                        gh = X[centre, j] - nf[ch, p + j]
                        gv = gl if gl >= gh else gh
                        gv = gv if gv >= 0.0 else 0.0
                        d += gv * gv
                    if side == 0:
                        la = d
                    else:
                        lbb = d
                if la > lbb:
                    a, b = b, a
                    la, lbb = lbb, la
                st_node[top] = b
                st_val[top] = lbb
                st_node[top + 1] = a
                st_val[top + 1] = la
                top += 2
            ki[filled] = centre
            for t in range(filled + 1):
                i = ki[t]
                labels[i] = g
                for j in range(p):
                    _fsum_add(parts, npart, j, -X[i, j])
                # out of the tree: refit the leaf and its ancestors
                tp = pos_of[i]
                talive[tp] = False
                nd = tleaf[tp]
                while nd >= 0:
                    nodes[nd, _COUNT] -= 1
                    if nodes[nd, _COUNT] > 0:
                        _fit_node(nd, Xt, talive, nodes, nf)
                    nd = nodes[nd, _PARENT]
                # out of the cone index: refit its bucket and super-bucket
                cp = pos[i]
                alive[cp] = False
                b = cp // bucket
                gq = b // group
                bcnt[b] -= 1
                gcnt[gq] -= 1
                _cones.refit(b if bcnt[b] > 0 else -1, gq if gcnt[gq] > 0 else -1, ang, rho, alive, bf, bcnt, bang,
                             gf, bucket, group, rel)
            nrem -= filled + 1
            g += 1
            done[0] += filled + 1  # records grouped so far: read by the progress display
        if not three:
            break
        rebuild = nrem < rebuild_fraction * st[_BUILT]
        if nrem >= 2 * k and (rebuild or recentre):
            st[_G] = g
            st[_NREM] = nrem
            for j in range(p):
                c[j] = _fsum_round(parts, npart, j) / nrem
            return _REBUILD if rebuild else _RECENTRE
    for i in range(n):
        if labels[i] < 0:
            labels[i] = g
    done[0] += nrem
    st[_G] = g
    st[_NREM] = 0
    return _DONE


def _run(X: np.ndarray, k: int, check=None) -> tuple[np.ndarray, np.ndarray]:
    """Raw labels and diagnostics: super-buckets and buckets searched by the farthest-
    from-r queries, leaves and inner nodes visited by the nearest-neighbour queries,
    builds, re-centrings of the farthest-from-centroid scan.

    Drives :func:`_mdav_core`, and between its calls rebuilds the tree and the cone
    index from the remaining records, centred on their centroid, or re-centres the
    scan. ``check(tree, index,
    labels)``, if given, sees both structures just before each rebuild (tests)."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    check_k(X, k)
    n, p = X.shape
    k = int(k)
    rel = 1e-9 + 8.0 * (p + 8) * np.finfo(np.float64).eps
    done = progress_counter()  # the kernel adds the records it groups (no GIL needed)
    st = np.zeros(_NSTATE, np.int64)
    st[_NREM] = n
    stats = np.zeros(6, np.int64)
    parts = np.zeros((p, _EXPANSION_CAPACITY))
    npart = np.zeros(p, np.int64)
    labels = np.full(n, -1, np.int64)
    pos_of = np.full(n, -1, np.int64)
    scratch = (np.empty(_STACK, np.int64), np.empty(_STACK), np.empty(max(LEAF_SIZE, _cones.BUCKET)), np.empty(k),
               np.empty(k, np.int64))
    cscratch = (np.empty(_cones.GROUP), np.empty(p), np.empty(p, np.float32), np.empty(_cones.BUCKET, np.float32))
    # any point serves the first build: the exact centroid comes with the exact sums
    c = X.mean(axis=0)
    tree = index = heap = ()
    status = _REBUILD
    while status != _DONE:
        idx = np.flatnonzero(labels < 0)
        if status == _REBUILD:
            if check is not None and tree:
                check(tree, index, labels)
            tree = _new_tree(X, idx)
            index = _cones.build(X, idx, c, rel)
            pos_of[tree[2]] = np.arange(idx.size)
            ng = index[10].shape[0]
            heap = (np.empty(ng), np.empty(ng, np.int64))
            st[_BUILT] = idx.size
            stats[4] += 1
        else:
            stats[5] += 1
        # (re-)centre the farthest-from-centroid scan on c, in numpy (it is rare, and
        # these distances only bound: any summation order, the margin rel covers it)
        d = X[idx] - c
        d = np.einsum("ij,ij->i", d, d)
        by = np.argsort(-d, kind="stable")
        st[_FC] = 0
        st[_HEAD] = 0
        status = _mdav_core(X, k, rel, REBUILD_FRACTION, st, stats, done, parts, npart, labels, c, idx[by],
                            np.sqrt(d[by]), c.copy(), pos_of, *tree, *index, *scratch, *heap, *cscratch)
    return labels, stats


@method_contract
def mdav_fast(X: np.ndarray, k: int, *, rng: np.random.Generator | None = None) -> np.ndarray:
    """MDAV-generic, exact and fast: the partition of ``mdav_reference``.

    Same steps as :func:`microagg_cli.methods.fixed_size.mdav_reference`; the queries
    of each iteration are answered from a tree over the remaining records (see the
    module docstring).

    {method contract}
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

    References
    ----------
    MDAV: those of :func:`microagg_cli.methods.fixed_size.mdav` (Domingo-Ferrer &
    Torra 2005; Domingo-Ferrer & Mateo-Sanz 2002). The queries:
    Ram, P. & Gray, A. G. (2012). Maximum inner-product search using cone trees. KDD.
    Shewchuk, J. R. (1997). Adaptive precision floating-point arithmetic and fast
    robust geometric predicates. Discrete & Computational Geometry 18(3).
    """
    if not in_range(X):
        raise InvalidParameterError("fast MDAV takes values of magnitude below 2**1000; use mdav_reference")
    return canonical_labels(_run(X, k)[0])


def in_range(X: np.ndarray) -> bool:
    """Whether the exact running sums of :func:`mdav_fast` cannot overflow on ``X``."""
    return not X.size or bool(np.abs(X).max() < 2.0**1000)
