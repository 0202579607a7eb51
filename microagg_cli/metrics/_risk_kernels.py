"""Compiled kernels of the risk measures (PLD pair table and EM, PLD links, DLD checks).

Every kernel is compiled with ``nogil=True``: the scenarios of ``sdc evaluate --jobs N``
run in N threads, and the interrupt watchdog needs the GIL while the main thread is in
a kernel (see :mod:`microagg_cli.interrupts`). Nothing here allocates inside a loop.
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import njit
from .._select import insert_nearest

__all__ = ["em_fit", "pld_pass", "pld_credit", "dld_filter", "pld_credit_batch", "refine_classes", "dld_search",
           "round_down_f32", "stable_order_by", "counting_order"]


@njit(cache=True, nogil=True)
def em_fit(G, c, theta, max_iter, tol, eps):  # pragma: no cover - compiled
    """Fellegi-Sunter EM on distinct agreement patterns (see ``risk.fellegi_sunter_em``).

    ``G`` (P, q) uint8 patterns, ``c`` (P,) counts, ``theta`` = [pi, m_1..m_q, u_1..u_q]
    (clipped start, updated in place). Returns (iterations, converged). One iteration is
    O(P q): the E step gives each pattern's match probability g, the M step the
    g-weighted agreement rates.
    """
    P, q = G.shape
    N = 0.0
    for i in range(P):
        N += c[i]
    lm = np.empty(q)
    l1m = np.empty(q)
    lu = np.empty(q)
    l1u = np.empty(q)
    ag0 = np.empty(q)
    ag1 = np.empty(q)
    new = np.empty(theta.size)
    # the patterns as columns (one attribute's bits contiguous) and per-pattern sums:
    # every loop over patterns runs without branches, so it vectorises. A sum skips
    # nothing it used to add: a term left out is added as +0.0, which leaves a sum
    # unchanged (the terms are logs of probabilities below 1, or weights >= 0), so
    # each sum is the one of the loop over the set bits, bit for bit
    GT = np.empty((q, P), dtype=np.bool_)
    for i in range(P):
        for v in range(q):
            GT[v, i] = G[i, v] != 0
    A = np.empty(P)
    Bs = np.empty(P)
    CG = np.empty(P)
    CN = np.empty(P)
    it = 0
    converged = False
    for it in range(1, max_iter + 1):
        pi = theta[0]
        lpi = math.log(pi)
        l1pi = math.log1p(-pi)
        for v in range(q):
            lm[v] = math.log(theta[1 + v])
            l1m[v] = math.log1p(-theta[1 + v])
            lu[v] = math.log(theta[1 + q + v])
            l1u[v] = math.log1p(-theta[1 + q + v])
            ag0[v] = 0.0
            ag1[v] = 0.0
        for i in range(P):
            A[i] = 0.0
            Bs[i] = 0.0
        for v in range(q):  # the agreeing attributes, in order
            g_v = GT[v]
            x = lm[v]
            y = lu[v]
            for i in range(P):
                A[i] += x if g_v[i] else 0.0
                Bs[i] += y if g_v[i] else 0.0
        for v in range(q):  # then the disagreeing ones
            g_v = GT[v]
            x = l1m[v]
            y = l1u[v]
            for i in range(P):
                A[i] += 0.0 if g_v[i] else x
                Bs[i] += 0.0 if g_v[i] else y
        tot0 = 0.0
        tot1 = 0.0
        for i in range(P):
            a = A[i] + lpi
            b = Bs[i] + l1pi
            hi = a if a > b else b
            lse = hi + math.log1p(math.exp(-abs(a - b)))
            g = math.exp(a - lse)
            cg = c[i] * g
            cn = c[i] - cg
            CG[i] = cg
            CN[i] = cn
            tot0 += cg
            tot1 += cn
        for v in range(q):
            g_v = GT[v]
            s0 = 0.0
            s1 = 0.0
            for i in range(P):
                s0 += CG[i] if g_v[i] else 0.0
                s1 += CN[i] if g_v[i] else 0.0
            ag0[v] = s0
            ag1[v] = s1
        new[0] = tot0 / N
        for v in range(q):
            new[1 + v] = ag0[v] / tot0 if tot0 > 0 else theta[1 + v]
            new[1 + q + v] = ag1[v] / tot1 if tot1 > 0 else theta[1 + q + v]
        change = 0.0
        for j in range(theta.size):
            x = new[j]
            if x < eps:
                x = eps
            elif x > 1.0 - eps:
                x = 1.0 - eps
            d = abs(x - theta[j]) / theta[j]
            if d > change:
                change = d
            theta[j] = x
        if change < tol:
            converged = True
            break
    return it, converged


@njit(cache=True, nogil=True)
def pld_pass(Ro, RsT, ms, lo, hi, v, w, todo, start, out_a, out_p, out_c, scratch, touched):  # pragma: no cover
    """Pairs whose lowest agreeing attribute is ``v``, counted per (original, full pattern).

    (A numba kernel: its arrays come one by one, nopython mode has no structs of arrays.)
    ``RsT`` (q, U) the distinct protected rank rows sorted by rank on ``v``, transposed
    (one attribute's ranks contiguous: the agreement bits of a window are built one
    attribute at a time over consecutive rows, a loop the compiler vectorises), ``ms``
    their multiplicities; original ``a`` agrees on ``v`` with rows ``lo[a]:hi[a]``.
    Originals ``todo[start:]`` are processed until the outputs are full; returns (next
    position in ``todo``, entries written). ``scratch`` (2^q) is zero on entry and on
    return.
    """
    q = RsT.shape[0]
    cap = out_a.size
    pos = 0
    below = (np.int64(1) << v) - 1
    bits = np.empty(0, dtype=np.int64)
    t = start
    while t < todo.size:
        a = todo[t]
        l0 = lo[a]
        h0 = hi[a]
        if pos + min(h0 - l0, scratch.size) > cap:
            break
        m = h0 - l0
        if bits.size < m:
            bits = np.empty(max(m, 2 * bits.size), dtype=np.int64)
        for j in range(m):
            bits[j] = 0
        for u in range(q):
            r = Ro[a, u]
            bit = np.int64(1) << u
            row = RsT[u, l0:h0]  # a slice: the loop vectorises (see dld_search)
            for j in range(m):
                d = r - row[j]
                if -w <= d <= w:
                    bits[j] |= bit
        nt = 0
        for j in range(m):
            pat = bits[j]
            if pat & below:
                continue
            if scratch[pat] == 0:
                touched[nt] = pat
                nt += 1
            scratch[pat] += ms[l0 + j]
        for j in range(nt):
            pat = touched[j]
            out_a[pos] = a
            out_p[pos] = pat
            out_c[pos] = scratch[pat]
            scratch[pat] = 0
            pos += 1
        t += 1
    return t, pos


@njit(cache=True, nogil=True, inline="always")
def _counting_pass(keys, n_keys, order):  # pragma: no cover - compiled
    """The entries in ``order`` (a permutation of the indices of ``keys``, whose values
    are in [0, ``n_keys``)) placed stably by their key: one counting pass, O(N + n_keys)."""
    N = order.size
    cnt = np.zeros(n_keys + 1, dtype=np.int64)
    for i in range(N):
        cnt[keys[i] + 1] += 1
    for v in range(n_keys):
        cnt[v + 1] += cnt[v]
    out = np.empty(N, dtype=np.int64)
    for j in range(N):
        i = order[j]
        v = keys[i]
        out[cnt[v]] = i
        cnt[v] += 1
    return out


@njit(cache=True, nogil=True)
def counting_order(keys, n_keys):  # pragma: no cover - compiled
    """The order of a stable sort of ``keys`` (values in [0, ``n_keys``)) by one
    counting pass, O(N + n_keys): the permutation of ``np.argsort(keys,
    kind="stable")`` without its comparisons."""
    return _counting_pass(keys, n_keys, np.arange(keys.size))


@njit(cache=True, nogil=True)
def stable_order_by(major, minor, n_major, n_minor):  # pragma: no cover - compiled
    """The order of a stable sort of the entries by (``major``, ``minor``): two stable
    counting passes (``minor`` first, then ``major``; values in [0, ``n_major``) and
    [0, ``n_minor``)), O(entries + n_major + n_minor). The same permutation as
    ``np.argsort(major * n_minor + minor, kind="stable")`` (equal keys keep their
    order), without its O(N log N) comparisons (4.8 M PLD entries at 50,000 x 10:
    0.3 s of one thread)."""
    return _counting_pass(major, n_major, counting_order(minor, n_minor))


@njit(cache=True, nogil=True)
def pld_credit(lev_g, e_g, e_cnt, offsets, zero_a, true_g, L0):  # pragma: no cover - compiled
    """Sum over originals of 1/t when the true record is among the t records of the
    best weight level (0 when it is not). ``lev_g`` levels of the full patterns,
    original ``a``'s entries are ``offsets[a]:offsets[a+1]`` of ``e_g``/``e_cnt``;
    ``zero_a[a]`` protected records agree with it nowhere (pattern level ``L0``)."""
    n = zero_a.size
    credit = 0.0
    for a in range(n):
        Lt = lev_g[true_g[a]]
        s0 = offsets[a]
        s1 = offsets[a + 1]
        best = L0 if zero_a[a] > 0 else -(1 << 62)
        for e in range(s0, s1):
            le = lev_g[e_g[e]]
            if le > best:
                best = le
        if Lt < best:
            continue
        equal = zero_a[a] if L0 == Lt else 0
        for e in range(s0, s1):
            if lev_g[e_g[e]] == Lt:
                equal += e_cnt[e]
        if equal > 0:
            credit += 1.0 / equal
    return credit


@njit(cache=True, nogil=True, inline="always")
def _row_distance(Zw, U, i, b, cols):  # pragma: no cover - compiled
    """Squared distance of original ``Zw[i]`` and distinct row ``U[b]`` over ``cols``,
    summed left to right (the fixed order of every DLD distance)."""
    acc = 0.0
    for j in range(cols.size):
        c = cols[j]
        d = Zw[i, c] - U[b, c]
        acc += d * d
    return acc


@njit(cache=True, nogil=True)
def round_down_f32(x, out):  # pragma: no cover - compiled
    """``out[i]`` = ``x[i]`` as float32, rounded down: x - |x| 2.5e-7 - 1e-30 rounded to
    the nearest float32 (a relative step of at most 6e-8 below x: a lower bound stays
    one). One pass, no temporaries."""
    for i in range(x.size):
        v = x[i]
        out[i] = np.float32(v - abs(v) * 2.5e-7 - 1e-30)
    return 0


@njit(cache=True, nogil=True, inline="always")
def _memo_place(memo, i, b):  # pragma: no cover - compiled
    """The place of row ``b`` in ``memo[i]``, -1 when it is not there."""
    for r in range(memo.shape[1]):
        if memo[i, r] == b:
            return r
    return -1


@njit(cache=True, nogil=True, inline="always")
def _mru_push(memo, i, b):  # pragma: no cover - compiled
    """Puts row ``b`` first in ``memo[i]`` (the rows that beat original ``i``, most
    recent first): the others move one place down, the last (or ``b``'s old place)
    is dropped."""
    j = _memo_place(memo, i, b)
    if j < 0:
        j = memo.shape[1] - 1
    for r in range(j, 0, -1):
        memo[i, r] = memo[i, r - 1]
    memo[i, 0] = b


# numba kernel: arrays passed one by one (no structs of arrays in nopython mode)
@njit(cache=True, nogil=True)
def dld_filter(W, U, cols, ec, ecT, prev, prevL, prevD, parents, per, cand, out, memo, todo, L, D):  # pragma: no cover
    """One scenario's DLD for the originals settled without a search; the rest in ``todo``.

    Per searched original ``i`` (``W[0, i]`` its z-scores, ``W[1, i]`` those of its
    protected row; ``per`` = (tol, own), ``out`` = (d2, lb, credit), rows of one array
    each): ``d2[i]`` = sum over ``cols`` (left to right) of (W[0, i, c] - W[1, i, c])^2,
    the fixed order of every distance here. ``lb[i]`` gets a lower bound of the
    original's *margin* on the scenario: min over the other distinct protected rows b
    of d(i, b) - d2[i]. What a parent scenario (the scenario without attribute
    v = cols[j], stored at ``parents[j]``, -1: none) kept per original: a margin bound
    ``prev``, a list of distinct rows ``prevL`` (-1 ends it) and a distance bound
    ``prevD`` of every other row not in that list. Adding v adds at least 0 to every
    d(i, b) and exactly ``ec[i, v]`` = (W[0, i, v] - W[1, i, v])^2 to d2[i], so the
    margin is at least the parent's margin minus ``ec[i, v]`` (tried first, no
    distance to compute), and at least min(the distances of the parent's list rows
    here, the parent's bound) - d2[i]; always at least -d2[i]. A bound above
    ``tol[i]`` (far above any rounding of these sums) settles the original: no row
    is as near as its own, its credit is 1 / ``own[i]`` (the multiplicity of its own
    row), and it inherits the list and bound of the parent that gave the bound
    (still true here: distances only grow with attributes). Otherwise one strictly
    nearer row settles "no credit": ``memo[i]`` (the last rows that beat it in this
    thread, most recent first), the parents' list rows (a beaten parent's list holds
    its beater) and its candidates ``cand[i]`` are tried; the row found goes first
    into ``memo[i]`` and as
    the only row of the original's list ``L[i]`` (bound ``D[i]`` = 0). Returns the
    number of originals left, in ``todo`` (their ``L``/``D`` are the search's).
    ``ecT`` is ``ec`` transposed (p, n): d2 and the parents' margins are taken a column
    at a time.
    """
    Zw = W[0]
    tol = per[0]
    own = per[1]
    d2 = out[0]
    lb = out[1]
    credit = out[2]
    K = cand.shape[1]
    KL = L.shape[1]
    s = cols.size
    nt = 0
    nw = Zw.shape[0]
    # the own distances and the parents' margin bounds, a column at a time (slices:
    # the loops vectorise); the same sums in the same order as per original
    for i in range(nw):
        d2[i] = 0.0
    for j in range(s):
        e = ecT[cols[j], :nw]
        for i in range(nw):
            d2[i] += e[i]
    bps = np.empty(nw, dtype=np.int64)
    for i in range(nw):
        lb[i] = -d2[i]
        bps[i] = -1
    for j in range(s):
        par = parents[j]
        if par < 0:
            continue
        e = ecT[cols[j], :nw]
        pr = prev[par, :nw]
        for i in range(nw):
            x = pr[i] - e[i]
            if x > lb[i]:
                lb[i] = x
                bps[i] = par
    for i in range(nw):
        acc = d2[i]
        bound = lb[i]
        bp = bps[i]
        if bound > tol[i]:  # settled by a parent's margin: the common case
            credit[i] = 1.0 / own[i]
            for q in range(KL):
                L[i, q] = prevL[bp, i, q]
            D[i] = prevD[bp, i]
            continue
        credit[i] = 0.0
        found = -1
        # here bound <= tol[i]: the memo, then the parents' lists (their rows' distances
        # also bound the margin), then the candidates
        for r in range(memo.shape[1]):
            b = memo[i, r]
            if b < 0:
                break
            acc2 = _row_distance(Zw, U, i, b, cols)
            if acc2 < acc:
                found = b
                break
        if found < 0:
            for jp in range(s):
                par = parents[jp]
                if par < 0:
                    continue
                lmin = prevD[par, i]
                for q in range(KL):
                    b = prevL[par, i, q]
                    if b < 0:
                        break
                    acc2 = _row_distance(Zw, U, i, b, cols)
                    if acc2 < acc:
                        found = b
                        break
                    if acc2 < lmin:
                        lmin = acc2
                if found >= 0:
                    break
                x = lmin - acc
                if x > bound:
                    bound = x
                    bp = par
        if found < 0 and bound <= tol[i]:
            for t in range(K):
                b = cand[i, t]
                if b < 0 or _memo_place(memo, i, b) >= 0:  # the last beaters were tried first
                    continue
                acc2 = _row_distance(Zw, U, i, b, cols)
                if acc2 < acc:
                    found = b
                    break
        lb[i] = bound
        if found >= 0:
            _mru_push(memo, i, found)
            L[i, 0] = found
            for q in range(1, KL):
                L[i, q] = -1
            D[i] = 0.0
        elif bound > tol[i]:
            credit[i] = 1.0 / own[i]
            for q in range(KL):
                L[i, q] = prevL[bp, i, q]
            D[i] = prevD[bp, i]
        else:
            todo[nt] = i
            nt += 1
    return nt


# numba kernel: arrays passed one by one (no structs of arrays in nopython mode)
@njit(cache=True, nogil=True)
def pld_credit_batch(lev, masks, fast, L0, gpat, e_g, e_cnt, bounds, zero_a, true_g, a0, a1, F, credits,
                     squares):  # pragma: no cover
    """PLD credits of originals ``a0:a1`` in every scenario at once (record-major).

    ``lev[s, g]`` is the weight level of full pattern ``gpat[g]`` in scenario ``s``
    (mask ``masks[s]``); ``fast[s]``: the all-agree pattern of the scenario is alone on
    the top level. Then an original whose true record agrees on every attribute of
    the scenario ties exactly with the protected records agreeing on all of them: the
    sum of the counts of its patterns that contain the mask. An original whose true
    pattern has few bits needs that sum for few masks, taken over its entries; one
    with many, for many, read from all 2^q superset sums in ``F`` (a zeta transform,
    O(q 2^q)), whichever costs less. Otherwise its entries are scanned (richest
    patterns first, so a better pattern ends the scan early). Adds to ``credits[s]``
    (and the squared credits to ``squares[s]``, for the sampled estimator's
    variance); ``F`` is a 2^q scratch.
    """
    S = masks.size
    Fn = F.size
    q = 0
    while (1 << q) < Fn:
        q += 1
    for a in range(a0, a1):
        s0 = bounds[a]
        s1 = bounds[a + 1]
        tg = true_g[a]
        tpat = gpat[tg]
        # masks inside the true pattern: at most 2^bits of them, each summed over the
        # entries, against one transform (a microaggregated file: few bits, few sums)
        bits = 0
        for v in range(q):
            bits += (tpat >> v) & 1
        zeta = (np.int64(1) << bits) * (s1 - s0) > q * Fn
        if zeta:
            for i in range(Fn):
                F[i] = 0
            for e in range(s0, s1):
                F[gpat[e_g[e]]] += e_cnt[e]
            for bit in range(q):
                step = 1 << bit
                for T in range(Fn):
                    if not (T & step):
                        F[T] += F[T | step]
        for s in range(S):
            M = masks[s]
            if fast[s] and (tpat & M) == M:
                if zeta:
                    eq = F[M]
                else:
                    eq = 0
                    for e in range(s0, s1):
                        if (gpat[e_g[e]] & M) == M:
                            eq += e_cnt[e]
                if eq > 0:
                    credits[s] += 1.0 / eq
                    squares[s] += 1.0 / (eq * eq)
                continue
            Lt = lev[s, tg]
            if zero_a[a] > 0 and L0[s] > Lt:
                continue
            eq = zero_a[a] if L0[s] == Lt else 0
            beaten = False
            for e in range(s0, s1):
                le = lev[s, e_g[e]]
                if le > Lt:
                    beaten = True
                    break
                if le == Lt:
                    eq += e_cnt[e]
            if not beaten and eq > 0:
                credits[s] += 1.0 / eq
                squares[s] += 1.0 / (eq * eq)
    return 0


@njit(cache=True, nogil=True)
def refine_classes(prev, col, card, keys, out):  # pragma: no cover - compiled
    """Classes of the pairs (``prev[i]``, ``col[i]``), numbered by first appearance:
    writes ``out`` and returns their number. ``keys`` is a scratch hash table (a power
    of two of at least twice the records); O(n) expected."""
    n = prev.size
    size = keys.size
    mask = size - 1
    for i in range(size):
        keys[i] = -1
    vals = np.empty(size, dtype=np.int64)
    m = 0
    for i in range(n):
        key = prev[i] * card + col[i]
        h = np.uint64(key) * np.uint64(11400714819323198485)
        j = np.int64(h >> np.uint64(40)) & mask
        while True:
            kj = keys[j]
            if kj == key:
                out[i] = vals[j]
                break
            if kj == -1:
                keys[j] = key
                vals[j] = m
                out[i] = m
                m += 1
                break
            j = (j + 1) & mask
    return m


# numba kernel: arrays passed one by one (no structs of arrays in nopython mode)
@njit(cache=True, nogil=True)
def dld_search(Zw, cols, ec, extra, todo, per, tree, P, mult, box, perm, ownpos, out, memo, L, D):  # pragma: no cover
    """Exact DLD credits and margins of the originals ``todo`` (positions) by a search.

    The originals are rows ``todo`` of ``Zw`` (their squared distances to their own
    rows on each attribute in ``ec``; ``per``, ``out``, ``memo``, ``L`` and ``D`` as in
    :func:`dld_filter`), searched on the attributes ``cols``; ``P`` (s, m) holds the
    distinct protected rows (as columns) on those attributes, in the order of the k-d
    tree (``perm`` maps a position to its distinct row; ``ownpos[t]`` is the position
    of the own row of ``todo[t]``; ``box`` (2, nodes, s) the low and high corner of
    every node's box; ``tree`` (4, nodes) its left and right children (-1 at a leaf)
    and the first and end row of each node), ``mult`` their multiplicities. For
    original ``todo[t]``, a depth-first search, nearer box first, over the boxes
    within radius r = d2 + cap, shrunk to the K-th nearest other row found (K the
    width of ``L``): a row strictly nearer than d2 ends it with its leaf (no credit;
    the leaf's nearest such row goes first into ``memo`` and as the only row of the
    list, bound 0); rows exactly as near (same
    fixed-order formula) are ties, and the credit is 1 / their total multiplicity.
    The K nearest other rows found go to ``L[a]`` (nearest first, -1 after the last)
    and the final radius to ``D[a]``: every other row not in the list is at least
    that far (within the first radius all were seen; a box is skipped only beyond
    the radius). When the only ties are the original's own row (``own`` its
    multiplicity), ``lb`` is raised to the margin found (nearest other row within
    r, else r, minus d2); other ties give a margin of 0. A box is skipped only when
    its lower bound, computed in the same order of operations as a point's distance
    (rounding is monotone), exceeds the radius, so no row within it is skipped. The
    cap is the sum of ``ec`` over the attributes ``extra`` (those whose addition
    makes a scenario still to come: a margin beyond it is of no use), raised by a
    millionth and three tolerances so that the rounded-down margin still settles
    the scenario that adds them all; with no ``extra`` this is the plain exact
    search. A leaf's points are ``P``'s columns (``P`` is (s, m), coordinates by rows).
    """
    s = cols.size
    KL = L.shape[1]
    own = per[1]
    d2 = out[0]
    lb = out[1]
    credit = out[2]
    q = np.empty(s)
    lo = box[0]
    hi = box[1]
    left = tree[0]
    right = tree[1]
    start = tree[2]
    end = tree[3]
    stack = np.empty(512, dtype=np.int64)
    stack_lb = np.empty(512)
    accs = np.empty(P.shape[1])
    kd = np.empty(KL)
    ki = np.empty(KL, dtype=np.int64)
    for t in range(todo.size):
        a = todo[t]
        mine = ownpos[t]
        ref = d2[a]
        cap = 0.0
        for j in range(extra.size):
            cap += ec[a, extra[j]]
        if extra.size:
            # a little beyond the sum: the margin found is stored rounded down (float32)
            # and its descendants subtract their attributes' ``ec`` from it, so a
            # margin of exactly the sum would leave the last of them at 0, unsettled
            cap = cap * (1.0 + 1e-6) + 3.0 * per[0][a]
        far_r = ref + cap
        best = far_r
        nk = 0
        for j in range(s):
            q[j] = Zw[a, cols[j]]
        ties = 0.0
        beaten = -1
        stack[0] = 0
        stack_lb[0] = 0.0
        sp = 1
        while sp > 0 and beaten < 0:
            sp -= 1
            node = stack[sp]
            if stack_lb[sp] > best:
                continue
            if left[node] < 0:
                u0 = start[node]
                nu = end[node] - u0
                # the leaf's distances a coordinate at a time (rows of ``P`` are
                # coordinates: the loop over points vectorises), each point's sum
                # still taken over the attributes left to right
                for u in range(nu):
                    accs[u] = 0.0
                for j in range(s):
                    z = q[j]
                    # a slice: its index cannot be negative, so the loop vectorises
                    # (P[j][u0 + u] does not: 10-17 % of the whole search)
                    row = P[j, u0:u0 + nu]
                    for u in range(nu):
                        d = z - row[u]
                        accs[u] += d * d
                # nothing in the leaf within the radius (best >= ref): no beater, tie
                # or list row; its nearest point, found without branches, tells
                lm = np.inf
                for uu in range(nu):
                    lm = min(lm, accs[uu])
                if lm > best:
                    continue
                bmin = ref
                for uu in range(nu):
                    u = u0 + uu
                    acc = accs[uu]
                    if acc < bmin:
                        beaten = u
                        bmin = acc
                    if beaten >= 0:
                        continue
                    if acc == ref:
                        ties += mult[u]
                    if u != mine and acc < best:
                        # into the list of the K nearest other rows (sorted)
                        nk = insert_nearest(kd, ki, nk, KL, acc, u)
                        if nk == KL and kd[KL - 1] < best:
                            best = kd[KL - 1]
                continue
            # push the farther child first: the nearer one is searched first
            near = left[node]
            far = right[node]
            # both children's box bounds in one pass, each summed as a point's distance;
            # without branches (a coordinate inside the box adds 0.0, which leaves the
            # sum as it was): 13 % of the search, the branches were unpredictable
            b_near = 0.0
            b_far = 0.0
            for j in range(s):
                z = q[j]
                d = max(lo[near, j] - z, z - hi[near, j], 0.0)
                b_near += d * d
                d = max(lo[far, j] - z, z - hi[far, j], 0.0)
                b_far += d * d
            if b_far < b_near:
                near, far = far, near
                b_near, b_far = b_far, b_near
            if b_far <= best:
                stack[sp] = far
                stack_lb[sp] = b_far
                sp += 1
            if b_near <= best:
                stack[sp] = near
                stack_lb[sp] = b_near
                sp += 1
        if beaten >= 0:
            b = perm[beaten]
            _mru_push(memo, a, b)
            L[a, 0] = b
            for r in range(1, KL):
                L[a, r] = -1
            D[a] = 0.0
            continue
        credit[a] = 1.0 / ties
        margin = ((kd[0] if nk else far_r) - ref) if ties == own[a] else 0.0
        if margin > lb[a]:
            lb[a] = margin
        for r in range(KL):
            L[a, r] = perm[ki[r]] if r < nk else -1
        D[a] = best
    return 0
