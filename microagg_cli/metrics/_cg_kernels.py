"""Compiled kernels of the column-generation lower bound (:mod:`.cg_bound`).

The numeric core of the bound of Aloise, Hansen, Rocha & Santi (2014), "Column
generation bounds for numerical microaggregation" (Journal of Global Optimization
60(2), 165-182): squared distances and nearest-neighbour prefix sums
(:func:`sqdist`, :func:`nn_prefix`, :func:`local_nn`), the reduced-cost bounds of a
branch-and-bound node (:func:`bound_filter`; :func:`alpha_filter`, the Gilmore-Lawler
bound with part of the linear terms moved onto the pairs; :func:`tighten`), the exact
pricing of one seed (:func:`exact_seed`) and the heuristic pricing
(:func:`heuristic_seed`, :func:`heuristic_all`). The algorithm, the validity of the
bound and its rounding allowance are described in :mod:`.cg_bound`, which calls
these. Every kernel is compiled with ``nogil=True``: seeds are priced side by side in
threads.

An integer constant handed to another kernel (``t = 1`` at the root, a counter that
starts at 0) is written ``np.int64(...)``: numba types a bare constant as a literal and
compiles the callee once for the literal and once more for int64, which doubled the
first run's compile time of these kernels; the values, and so the results, are the same.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit

__all__ = ["sqdist", "nn_prefix", "keep_smallest", "smallest_to_pool", "local_nn", "bound_filter", "alpha_filter", "tighten",
           "exact_seed", "heuristic_seed", "heuristic_all"]


@njit(cache=True, nogil=True)
def sqdist(Z):  # pragma: no cover - compiled
    n, p = Z.shape
    D = np.empty((n, n))
    for i in range(n):
        D[i, i] = 0.0
        for j in range(i + 1, n):
            s = 0.0
            for a in range(p):
                d = Z[i, a] - Z[j, a]
                s += d * d
            D[i, j] = s
            D[j, i] = s
    return D


@njit(cache=True, nogil=True)
def nn_prefix(D, r_max):  # pragma: no cover - compiled
    """nnp[j, q] = sum of the q smallest D[j, l] over l != j (q = 0..r_max)."""
    n = D.shape[0]
    out = np.zeros((n, r_max + 1))
    for j in range(n):
        row = D[j].copy()
        row[j] = np.inf
        srt = np.sort(row)
        s = 0.0
        for q in range(1, r_max + 1):
            if q - 1 < n - 1:
                s += srt[q - 1]
                out[j, q] = s
            else:
                out[j, q] = np.inf
    return out


@njit(cache=True, nogil=True)
def keep_smallest(buf, cnt, R, v):  # pragma: no cover - compiled
    """Insert ``v`` into ``buf[0:cnt]``, the ``R`` smallest values seen so far in
    ascending order; return the new count (at most ``R``)."""
    if cnt < R:
        pos = cnt
        cnt += 1
    elif v < buf[R - 1]:
        pos = R - 1
    else:
        return cnt
    while pos > 0 and buf[pos - 1] > v:
        buf[pos] = buf[pos - 1]
        pos -= 1
    buf[pos] = v
    return cnt


@njit(cache=True, nogil=True)
def smallest_to_pool(D, pool, plen, c, R, buf, weights):  # pragma: no cover - compiled
    """buf[0..cnt) = the R smallest D[pool[c], pool[l]] (plus ``weights[l]`` unless
    ``weights`` is None) over the other pool records l, ascending; returns cnt."""
    j = pool[c]
    cnt = 0
    for l in range(plen):
        if l == c:
            continue
        if weights is None:
            v = D[j, pool[l]]
        else:
            v = D[j, pool[l]] + weights[l]
        cnt = keep_smallest(buf, cnt, R, v)
    return cnt


@njit(cache=True, nogil=True)
def local_nn(D, pool, plen, R, lnn, buf):  # pragma: no cover - compiled
    """lnn[c, q] = sum of the q smallest D[pool[c], pool[l]] over l != c, q = 0..R (inf: fewer).

    A completion's added records all come from the pool, so each one's partners
    among them are at least as far as its nearest *pool* records: restricting the
    nearest-neighbour sums to the pool keeps the bound of :func:`bound_filter`
    valid and makes it much tighter once the pool has shrunk.
    """
    for c in range(plen):
        cnt = smallest_to_pool(D, pool, plen, c, R, buf, None)
        lnn[c, 0] = 0.0
        s = 0.0
        for q in range(1, R + 1):
            if q <= cnt:
                s += buf[q - 1]
                lnn[c, q] = s
            else:
                lnn[c, q] = np.inf


@njit(cache=True, nogil=True)
def _sizes(t, k, kmax, plen):  # pragma: no cover - compiled
    """The group sizes m_lo..m_hi a completion of a node of ``t`` records can reach
    from a pool of ``plen`` records (none when m_hi < m_lo)."""
    m_lo = k if k > t + 1 else t + 1
    m_hi = kmax if kmax < plen + t else plen + t
    return m_lo, m_hi


@njit(cache=True, nogil=True)
def _size_bound(sel, r, m, ps, ut, wbuf, bound):  # pragma: no cover - compiled
    """The bound at group size m from the r smallest terms ``sel[0..r)``: ps/m - ut plus
    their sum; ``wbuf[m]`` gets it without the r-th (the term a forced record replaces).
    Returns the smaller of it and ``bound``."""
    base = ps / m - ut
    s = 0.0
    for q in range(r - 1):
        s += sel[q]
    wbuf[m] = base + s
    lb = base + s + sel[r - 1]
    return lb if lb < bound else bound


@njit(cache=True, nogil=True)
def _keep(pool, acc, lnn, keep, c, R):  # pragma: no cover - compiled
    """Move pool record ``c`` (its ``acc`` and first ``R`` ``lnn`` columns) to slot
    ``keep``; returns the next slot."""
    if keep != c:
        pool[keep] = pool[c]
        acc[keep] = acc[c]
        for q in range(R):
            lnn[keep, q] = lnn[c, q]
    return keep + 1


# numba kernel: arrays passed one by one (no structs of arrays in nopython mode,
# and a jitclass would defeat cache=True)
@njit(cache=True, nogil=True)
def bound_filter(t, ps, ut, pool, acc, lnn, plen, u, k, kmax, best, wbuf, sel):  # pragma: no cover
    """Lower bound on rc over every completion of a node; filters the node's pool in place.

    The node holds t records with pairwise squared-distance sum ``ps`` and dual sum
    ``ut``; ``acc[c]`` is the sum of squared distances from pool record ``pool[c]`` to
    the node's records, ``lnn[c, q]`` a lower bound on the sum of its q smallest
    squared distances to other pool records. A completion S of size m adds a set A
    (|A| = r = m - t) from the pool and m SSE(S) = ps + sum_{j in A} acc_j + pairs(A),
    with pairs(A) >= (1/2) sum_{j in A} lnn[j, r-1] (each j's r-1 partners in A are
    pool records). So rc(S) >= ps/m - ut + sum_{j in A} v_j(m),
    v_j(m) = (acc_j + lnn[j, r-1]/2)/m - u_j, minimised by the r smallest v_j(m).
    A pool record j is dropped when even the bound with j forced in is >= ``best``
    for every m (its rows of ``acc`` and ``lnn`` move with it).

    Returns ``(bound, new_plen)``.
    """
    m_lo, m_hi = _sizes(t, k, kmax, plen)
    bound = np.inf
    for m in range(m_lo, m_hi + 1):
        r = m - t
        # r smallest v_j(m), kept sorted in sel[0..r)
        cnt = np.int64(0)
        for c in range(plen):
            j = pool[c]
            v = (acc[c] + 0.5 * lnn[c, r - 1]) / m - u[j]
            cnt = keep_smallest(sel, cnt, r, v)
        bound = _size_bound(sel, r, m, ps, ut, wbuf, bound)
    if m_hi < m_lo or bound >= best:
        return bound, plen
    # filter: keep j when some m gives (bound with j forced) < best
    keep = 0
    R = kmax - t  # columns 0..kmax-t-1 are the ones this node's descendants read
    for c in range(plen):
        j = pool[c]
        for m in range(m_lo, m_hi + 1):
            v = (acc[c] + 0.5 * lnn[c, m - t - 1]) / m - u[j]
            if wbuf[m] + v < best:
                keep = _keep(pool, acc, lnn, keep, c, R)
                break
    return bound, keep


# numba kernel: arrays passed one by one (no structs of arrays in nopython mode,
# and a jitclass would defeat cache=True)
@njit(cache=True, nogil=True)
def alpha_filter(D, t, ps, ut, pool, acc, lnn, plen, u, k, kmax, alpha, best, hm, wbuf, sel, pbuf):  # pragma: no cover
    """A second bound, with part of the linear terms moved onto the pairs; filters the pool.

    With L_j = acc_j/m - u_j and Q_jl = D_jl/m the completion's cost is
    sum_{j in A} L_j + sum_{pairs in A} Q_jl, which equals, for any alpha,
    sum_{j in A} [(1 - alpha/2) L_j + (1/2) sum_{l in A, l != j} (Q_jl + alpha L_l / (r-1))]
    (each L_l is counted r-1 times in the double sum). Bounding each j's inner sum by
    its r-1 smallest terms over the pool (Gilmore-Lawler) gives h_j(m), and the cost
    is >= the sum of the r smallest h_j(m). Unlike :func:`bound_filter`, a record
    is charged for the cost of its partners too: a set of attractive records (large
    duals) far from each other, each with cheap neighbours of its own, no longer looks
    like a good group. ``hm`` is (kmax + 1, >= plen) scratch. Returns ``(bound, new_plen)``.
    """
    m_lo, m_hi = _sizes(t, k, kmax, plen)
    bound = np.inf
    for m in range(m_lo, m_hi + 1):
        r = m - t
        if r == 1:
            for c in range(plen):
                hm[m, c] = acc[c] / m - u[pool[c]]
        else:
            w = alpha / (r - 1)
            for c in range(plen):  # partner weights in D units: alpha m L_l / (r-1)
                pbuf[c] = w * (acc[c] - m * u[pool[c]])
            R = r - 1
            for c in range(plen):
                j = pool[c]
                smallest_to_pool(D, pool, plen, c, R, sel, pbuf)
                s = 0.0
                for q in range(R):
                    s += sel[q]
                hm[m, c] = (1.0 - 0.5 * alpha) * (acc[c] / m - u[j]) + 0.5 * s / m
        # the r smallest h
        cnt = np.int64(0)
        for c in range(plen):
            cnt = keep_smallest(sel, cnt, r, hm[m, c])
        bound = _size_bound(sel, r, m, ps, ut, wbuf, bound)
    if m_hi < m_lo or bound >= best:
        return bound, plen
    keep = 0
    R = kmax - t
    for c in range(plen):
        for m in range(m_lo, m_hi + 1):
            if wbuf[m] + hm[m, c] < best:
                keep = _keep(pool, acc, lnn, keep, c, R)
                break
    return bound, keep


# numba kernel: arrays passed one by one (no structs of arrays in nopython mode,
# and a jitclass would defeat cache=True)
@njit(cache=True, nogil=True)
def tighten(D, t, ps, ut, pool, acc, lnn, plen, lsize, u, k, kmax, best, wbuf, sel, nbuf,
            hm, pbuf, alpha, alpha_pool, alpha_depth=1):  # pragma: no cover
    """Filter a node's pool; recompute pool-restricted neighbour sums when it has shrunk.

    ``lsize`` is the size of the pool the node's ``lnn`` rows were computed over
    (inherited from an ancestor: still valid, the pool only shrinks). They are
    recomputed (O(plen^2)) once the pool is below 3/4 of that, then filtered again.
    When that does not prune the node and the pool has at most ``alpha_pool``
    records (always at the root, t = 1), the bound of :func:`alpha_filter`
    (O(plen^2 k)) is tried too. Returns ``(bound, plen, lsize)``.
    """
    b, pl = bound_filter(t, ps, ut, pool, acc, lnn, plen, u, k, kmax, best, wbuf, sel)
    R = kmax - t - 1  # a completion adds at most kmax - t records: r - 1 <= R partners
    for _ in range(3):
        if b >= best or R < 1 or pl < 2 or 4 * pl > 3 * lsize:
            break
        local_nn(D, pool, pl, R, lnn, nbuf)
        lsize = pl
        b, pl = bound_filter(t, ps, ut, pool, acc, lnn, pl, u, k, kmax, best, wbuf, sel)
    if b < best and alpha > 0.0 and (t <= alpha_depth or pl <= alpha_pool):
        b2, pl = alpha_filter(D, t, ps, ut, pool, acc, lnn, pl, u, k, kmax, alpha, best, hm, wbuf, sel, pbuf)
        if b2 > b:
            b = b2
    return b, pl, lsize


# numba kernel: arrays passed one by one (no structs of arrays in nopython mode,
# and a jitclass would defeat cache=True)
@njit(cache=True, nogil=True)
def exact_seed(D, u, nnp, seed, cand, k, kmax, thr0, node_limit, out_sets, out_rc,
               alpha=1.25, alpha_pool=150, alpha_depth=1):  # pragma: no cover
    """Branch and bound: min rc(S) over groups S with seed ``seed`` and other members from ``cand``.

    ``cand`` lists the admissible partners (records after the seed in the pricing
    order), nearest first. The search keeps an incumbent starting at ``thr0`` (< 0):
    only groups with rc below it matter (the bound clips at ``thr0``). Each node's
    pool is filtered by :func:`tighten` (global, then pool-restricted neighbour
    sums). Returns ``(lower, nodes, found, limited)``:
    ``lower`` <= every rc(S) of the seed's groups, or ``thr0`` when none is below it;
    up to ``out_sets.shape[0]`` of the last improving groups are written to
    ``out_sets`` / ``out_rc`` (``found`` of them, -1 padded, best last); ``limited``
    tells that the node budget ran out: the subtrees not searched then contribute
    their bounds (``node_limit`` <= 1: the root bound alone).
    """
    nc = cand.shape[0]
    pool = np.empty((kmax, nc), dtype=np.int64)
    acc = np.empty((kmax, nc))
    lnn = np.empty((kmax, nc, kmax))
    plen = np.zeros(kmax, dtype=np.int64)
    lsz = np.zeros(kmax, dtype=np.int64)
    cur = np.zeros(kmax, dtype=np.int64)
    members = np.empty(kmax, dtype=np.int64)
    ps = np.zeros(kmax)
    ut = np.zeros(kmax)
    wbuf = np.empty(kmax + 1)
    sel = np.empty(kmax)
    nbuf = np.empty(kmax)
    hm = np.empty((kmax + 1, nc))
    pbuf = np.empty(nc)
    nbuf_out = out_sets.shape[0]
    found = 0
    best = thr0
    cut = np.inf
    members[0] = seed
    ut[0] = u[seed]
    for c in range(nc):
        pool[0, c] = cand[c]
        acc[0, c] = D[seed, cand[c]]
        for q in range(kmax):
            lnn[0, c, q] = nnp[cand[c], q]
    # the global sums count neighbours outside the pool: as if computed over n + 1 records
    b, pl, ls = tighten(D, np.int64(1), 0.0, ut[0], pool[0], acc[0], lnn[0], nc, D.shape[0] + 1, u, k, kmax,
                         best, wbuf, sel, nbuf, hm, pbuf, alpha, alpha_pool, alpha_depth)
    nodes = 1
    if b >= best:
        return best, nodes, found, False
    if node_limit <= 1:
        return b, nodes, found, True
    plen[0] = pl
    lsz[0] = ls
    cur[0] = 0
    # a node's bound holds for its whole subtree, so a cut subtree is accounted for by
    # the largest bound on its path (a child's own bound can be the weaker one)
    bnd = np.empty(kmax)
    bnd[0] = b
    d = 0
    limited = False
    while d >= 0:
        if cur[d] >= plen[d]:
            d -= 1
            continue
        q = cur[d]
        cur[d] += 1
        j = pool[d, q]
        t = d + 2
        ps_c = ps[d] + acc[d, q]
        ut_c = ut[d] + u[j]
        members[d + 1] = j
        if t >= k:
            rc = ps_c / t - ut_c
            if rc < best:
                best = rc
                slot = found % nbuf_out
                for a in range(kmax):
                    out_sets[slot, a] = members[a] if a < t else -1
                out_rc[slot] = rc
                found += 1
        if t >= kmax:
            continue
        # child pool: the parent's pool after q (neighbour sums inherited: still valid)
        e = d + 1
        m = np.int64(0)
        for c in range(q + 1, plen[d]):
            jj = pool[d, c]
            pool[e, m] = jj
            acc[e, m] = acc[d, c] + D[j, jj]
            for a in range(kmax - t):
                lnn[e, m, a] = lnn[d, c, a]
            m += 1
        nodes += 1
        b, pl, ls = tighten(D, t, ps_c, ut_c, pool[e], acc[e], lnn[e], m, lsz[d], u, k, kmax, best,
                             wbuf, sel, nbuf, hm, pbuf, alpha, alpha_pool, alpha_depth)
        if b >= best:
            continue
        if b < bnd[d]:
            b = bnd[d]
        if limited:
            # budget spent: account for this subtree by its bound, do not descend
            if b < cut:
                cut = b
            continue
        if nodes >= node_limit:
            limited = True
            if b < cut:
                cut = b
            continue
        plen[e] = pl
        lsz[e] = ls
        bnd[e] = b
        ps[e] = ps_c
        ut[e] = ut_c
        cur[e] = 0
        d = e
    lower = best if best < cut else cut
    return lower, nodes, found, limited


@njit(cache=True, nogil=True)
def heuristic_seed(D, u, near, seed, k, kmax, out_set):  # pragma: no cover
    """Greedy group around ``seed`` over its near records, then best-improvement swaps.

    Returns the best reduced cost met (size k..kmax) and writes its members to
    ``out_set`` (-1 padded). Any group found is a valid column; optimality is not
    claimed (the exact pricing does that).
    """
    L = near.shape[0]
    inset = np.zeros(L, dtype=np.bool_)
    accv = np.zeros(L)  # sum of D to current members, per near record
    memb = np.empty(kmax, dtype=np.int64)  # positions in near (seed = -1)
    t = 1
    ps = 0.0
    ut = u[seed]
    for c in range(L):
        accv[c] = D[seed, near[c]]
    best = np.inf
    best_t = 0
    best_m = np.empty(kmax, dtype=np.int64)
    while t < kmax:
        bc = -1
        bv = np.inf
        for c in range(L):
            if inset[c]:
                continue
            v = (ps + accv[c]) / (t + 1) - ut - u[near[c]]
            if v < bv:
                bv = v
                bc = c
        if bc < 0:
            break
        inset[bc] = True
        memb[t - 1] = bc
        ps += accv[bc]
        ut += u[near[bc]]
        jj = near[bc]
        for c in range(L):
            accv[c] += D[jj, near[c]]
        t += 1
        if t >= k and bv < best:
            best = bv
            best_t = t
            for a in range(t - 1):
                best_m[a] = memb[a]
    if best_t == 0:
        return np.inf
    # rebuild the best set and improve it by swaps (seed fixed), first improvement
    t = best_t
    inset[:] = False
    for a in range(t - 1):
        inset[best_m[a]] = True
    for c in range(L):
        s = D[seed, near[c]]
        for a in range(t - 1):
            s += D[near[best_m[a]], near[c]]
        accv[c] = s
    ut = u[seed]
    for a in range(t - 1):
        ut += u[near[best_m[a]]]
    ps = 0.0
    for a in range(t - 1):
        ps += D[seed, near[best_m[a]]]
        for b2 in range(a + 1, t - 1):
            ps += D[near[best_m[a]], near[best_m[b2]]]
    cur = ps / t - ut
    for _ in range(4 * kmax):
        bd = 0.0
        ba = -1
        bc = -1
        for a in range(t - 1):
            oa = best_m[a]
            jo = near[oa]
            for c in range(L):
                if inset[c]:
                    continue
                jn = near[c]
                # swap jo out, jn in
                nps = ps - accv[oa] + accv[c] - D[jo, jn]
                nut = ut - u[jo] + u[jn]
                dv = nps / t - nut - cur
                if dv < bd - 1e-12:
                    bd = dv
                    ba = a
                    bc = c
        if ba < 0:
            break
        oa = best_m[ba]
        jo = near[oa]
        jn = near[bc]
        ps = ps - accv[oa] + accv[bc] - D[jo, jn]
        ut = ut - u[jo] + u[jn]
        cur = ps / t - ut
        inset[oa] = False
        inset[bc] = True
        best_m[ba] = bc
        for c in range(L):
            accv[c] += D[jn, near[c]] - D[jo, near[c]]
    out_set[0] = seed
    for a in range(kmax - 1):
        out_set[a + 1] = near[best_m[a]] if a < t - 1 else -1
    return cur


@njit(cache=True, nogil=True)
def heuristic_all(D, u, near, k, kmax, tol, out_sets, out_rc):  # pragma: no cover
    n = near.shape[0]
    buf = np.empty(kmax, dtype=np.int64)
    cnt = 0
    for i in range(n):
        rc = heuristic_seed(D, u, near[i], i, k, kmax, buf)
        if rc < -tol:
            out_sets[cnt, :] = buf
            out_rc[cnt] = rc
            cnt += 1
    return cnt
