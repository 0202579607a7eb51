"""Compiled kernels of the risk measures (PLD pair table and EM, PLD links, DLD checks).

Every kernel is compiled with ``nogil=True``: the scenarios of ``sdc evaluate --jobs N``
run in N threads, and the interrupt watchdog needs the GIL while the main thread is in
a kernel (see :mod:`microagg_cli.interrupts`). Nothing here allocates inside a loop.
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import njit

__all__ = ["em_fit", "pld_pass", "pld_credit", "dld_filter", "pld_credit_batch", "refine_classes", "dld_search"]


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
        tot0 = 0.0
        tot1 = 0.0
        for i in range(P):
            a = 0.0
            b = 0.0
            for v in range(q):
                if G[i, v]:
                    a += lm[v]
                    b += lu[v]
            for v in range(q):
                if not G[i, v]:
                    a += l1m[v]
                    b += l1u[v]
            a += lpi
            b += l1pi
            hi = a if a > b else b
            lse = hi + math.log1p(math.exp(-abs(a - b)))
            g = math.exp(a - lse)
            cg = c[i] * g
            cn = c[i] - cg
            tot0 += cg
            tot1 += cn
            for v in range(q):
                if G[i, v]:
                    ag0[v] += cg
                    ag1[v] += cn
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
            row = RsT[u]
            for j in range(m):
                d = r - row[l0 + j]
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


@njit(cache=True, nogil=True)
def dld_filter(W, U, cols, ec, prev, prevb, parents, per, cand, out, link, todo):  # pragma: no cover
    """One scenario's DLD for the originals settled without a search; the rest in ``todo``.

    Per searched original ``i`` (``W[0, i]`` its z-scores, ``W[1, i]`` those of its
    protected row; ``per`` = (tol, own), ``out`` = (d2, lb, credit) and ``link`` =
    (memo, beater), rows of one array each): ``d2[i]`` = sum over ``cols`` (left to
    right) of (W[0, i, c] - W[1, i, c])^2, the fixed order of every distance here.
    ``lb[i]`` gets a lower bound of the original's *margin* on the scenario: min over
    the other distinct protected rows b of d(i, b) - d2[i]. For every attribute
    v = cols[j] whose parent scenario (the scenario without v) has stored margins
    ``prev[parents[j]]`` (-1: none), the margin is at least that margin minus
    ``ec[i, v]`` = (W[0, i, v] - W[1, i, v])^2, since adding v adds at least 0 to
    d(i, b) and exactly ``ec[i, v]`` to d2[i]; and always at least -d2[i]. A bound
    above ``tol[i]`` (far above any rounding of these sums) settles the original: no
    row is as near as its own, its credit is 1 / ``own[i]`` (the multiplicity of its
    own row). Otherwise these distinct protected rows (of ``U``) are tried, one
    strictly nearer settling "no credit": ``memo[i]`` (the last row that beat it in
    this thread), the rows that beat it in the parent scenarios (``prevb``, -1: none)
    and its candidates ``cand[i]``; the row found goes to ``beater[i]`` and
    ``memo[i]`` (-1 when none). Returns the number of originals left, in ``todo``.
    """
    Zw = W[0]
    tol = per[0]
    own = per[1]
    d2 = out[0]
    lb = out[1]
    credit = out[2]
    memo = link[0]
    beater = link[1]
    K = cand.shape[1]
    s = cols.size
    nt = 0
    for i in range(Zw.shape[0]):
        acc = 0.0
        for j in range(s):  # ec[i, c] is (W[0, i, c] - W[1, i, c])^2, the same double
            acc += ec[i, cols[j]]
        d2[i] = acc
        bound = -acc
        for j in range(s):
            par = parents[j]
            if par >= 0:
                x = prev[par, i] - ec[i, cols[j]]
                if x > bound:
                    bound = x
        lb[i] = bound
        credit[i] = 0.0
        beater[i] = -1
        if bound > tol[i]:
            credit[i] = 1.0 / own[i]
            continue
        found = -1
        tried = -1
        # the memo, then the parents' beaters, then the candidates
        for t in range(1 + s + K):
            if t == 0:
                b = memo[i]
            elif t <= s:
                par = parents[t - 1]
                b = prevb[par, i] if par >= 0 else -1
            else:
                b = cand[i, t - 1 - s]
            if b < 0 or b == tried:
                continue
            tried = b
            acc2 = 0.0
            for j in range(s):
                c = cols[j]
                d = Zw[i, c] - U[b, c]
                acc2 += d * d
            if acc2 < acc:
                found = b
                break
        if found >= 0:
            beater[i] = found
            memo[i] = found
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
    superset sum ``F[mask]`` of its pattern counts (zeta transform, O(q 2^q) per
    original). Otherwise its entries are scanned (richest patterns first, so a better
    pattern ends the scan early). Adds to ``credits[s]`` (and the squared credits to
    ``squares[s]``, for the sampled estimator's variance); ``F`` is a 2^q scratch.
    """
    S = masks.size
    Fn = F.size
    q = 0
    while (1 << q) < Fn:
        q += 1
    for a in range(a0, a1):
        s0 = bounds[a]
        s1 = bounds[a + 1]
        for i in range(Fn):
            F[i] = 0
        for e in range(s0, s1):
            F[gpat[e_g[e]]] += e_cnt[e]
        for bit in range(q):
            step = 1 << bit
            for T in range(Fn):
                if not (T & step):
                    F[T] += F[T | step]
        tg = true_g[a]
        tpat = gpat[tg]
        for s in range(S):
            M = masks[s]
            if fast[s] and (tpat & M) == M:
                eq = F[M]
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


@njit(cache=True, nogil=True)
def dld_search(Zw, cols, ec, extra, todo, per, tree, P, mult, box, out, beat):  # pragma: no cover
    """Exact DLD credits and margins of the originals ``todo`` (positions) by a search.

    The originals are rows ``todo`` of ``Zw`` (their squared distances to their own
    rows on each attribute in ``ec``, ``per`` and ``out`` as in :func:`dld_filter`),
    searched on the attributes ``cols``; ``P`` (s, m) holds the distinct protected rows
    (as columns) on those attributes, in the
    order of the k-d tree (``box`` (2, nodes, s) the low and high corner of every node's
    box; ``tree`` (4,
    nodes) its left and right children (-1 at a leaf) and the first and end row of each
    node), ``mult`` their multiplicities. For original ``todo[t]``, a depth-first search,
    nearer box first, over the boxes within radius r = d2 + cap, shrunk to the
    nearest row found beyond d2: a row strictly nearer than d2 ends it (no credit; its
    position in ``P`` goes to ``beat[t]``); rows exactly as near (same fixed-order formula)
    are ties, and the credit is 1 / their total multiplicity. When the only ties are the
    original's own row (``own`` its multiplicity), ``lb`` is raised to the margin found
    (nearest other row within r, else r, minus d2); other ties give a margin of 0. A box
    is skipped only when its lower bound, computed in the same order of operations as a
    point's distance (rounding is monotone), exceeds the radius, so no row within it is
    skipped. The cap is the sum of ``ec`` over the attributes ``extra`` (those whose
    addition makes a scenario still to come: a margin beyond it is of no use), raised
    by a millionth and three tolerances so that the rounded-down margin still settles
    the scenario that adds them all; with no ``extra`` this is the plain exact search.
    A leaf's points are ``P``'s columns (``P`` is (s, m), coordinates by rows).
    """
    s = cols.size
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
    for t in range(todo.size):
        a = todo[t]
        ref = d2[a]
        cap = 0.0
        for j in range(extra.size):
            cap += ec[a, extra[j]]
        if extra.size:
            # a little beyond the sum: the margin found is stored rounded down (float32)
            # and its descendants subtract their attributes' ``ec`` from it, so a
            # margin of exactly the sum would leave the last of them at 0, unsettled
            cap = cap * (1.0 + 1e-6) + 3.0 * per[0][a]
        best = ref + cap
        for j in range(s):
            q[j] = Zw[a, cols[j]]
        ties = 0.0
        beaten = False
        stack[0] = 0
        stack_lb[0] = 0.0
        sp = 1
        while sp > 0 and not beaten:
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
                    row = P[j]
                    for u in range(nu):
                        d = z - row[u0 + u]
                        accs[u] += d * d
                for uu in range(nu):
                    u = u0 + uu
                    acc = accs[uu]
                    if acc < ref:
                        beaten = True
                        beat[t] = u
                        break
                    if acc == ref:
                        ties += mult[u]
                    elif acc < best:
                        best = acc
                continue
            # push the farther child first: the nearer one is searched first
            near = left[node]
            far = right[node]
            # both children's box bounds in one pass, each summed as a point's distance
            b_near = 0.0
            b_far = 0.0
            for j in range(s):
                z = q[j]
                d = lo[near, j] - z
                if d > 0:
                    b_near += d * d
                else:
                    d = z - hi[near, j]
                    if d > 0:
                        b_near += d * d
                d = lo[far, j] - z
                if d > 0:
                    b_far += d * d
                else:
                    d = z - hi[far, j]
                    if d > 0:
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
        if not beaten and ties > 0:
            credit[a] = 1.0 / ties
            margin = best - ref if ties == own[a] else 0.0
            if margin > lb[a]:
                lb[a] = margin
    return 0
