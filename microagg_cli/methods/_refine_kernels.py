"""Compiled kernels of ``mdav-ls`` and ``ils`` (:mod:`.refine`).

The partition state (labels, members, positions, sizes and group sums) is updated in
place by record moves (:func:`move`) and the local search over moves and swaps with
exact SSE deltas (:func:`best_step`, :func:`local_search`); the iterated local search
of Lourenco, Martin & Stuetzle (2003), "Iterated local search" (Handbook of
Metaheuristics, 320-353), with simulated-annealing acceptance (Kirkpatrick, Gelatt &
Vecchi 1983, :func:`accept`, :func:`settle`) runs in chunks: :func:`ils_chunk`
re-partitions a pool of nearby groups (:func:`pick_pool`; optimal contiguous runs
along an axis after Hansen & Mukherjee (2003), :func:`axis_partition`, a serpentine,
:func:`serpentine`, or a randomised MDAV-like grouping, :func:`greedy_partition`),
:func:`kick_chunk` exchanges random records of the pool. The deltas, the searches and
their tie rules are described in :mod:`.refine`, which calls these. Every kernel is
compiled with ``nogil=True``: the two searches of ``ils`` run side by side in threads.

An integer constant handed to another kernel (a record or group index that starts at
-1, a log length that starts at 0) is written ``np.int64(...)``: numba types a bare
constant as a literal and compiles the callee once for the literal and once more for
int64 (five versions of :func:`move`), which lengthened the first run's compile; the
values, and so the results, are the same.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from ._contiguous import shortest_path
from .genetic import stream_randint, stream_uniform

__all__ = ["move", "best_step", "local_search", "group_sse", "axis_partition", "power_iteration", "serpentine",
           "greedy_partition", "pick_pool", "accept", "scratch", "pool_records", "next_pool", "settle", "ils_chunk",
           "kick_chunk"]


@njit(cache=True, nogil=True)
def move(Z, i, b, labels, members, pos, sizes, sums, log, nlog):  # pragma: no cover
    """Move record i to group b (sizes unchecked); log (i, old group) when logging."""
    a = labels[i]
    pa = pos[i]
    last = members[a, sizes[a] - 1]
    members[a, pa] = last
    pos[last] = pa
    sizes[a] -= 1
    members[b, sizes[b]] = i
    pos[i] = sizes[b]
    sizes[b] += 1
    for j in range(Z.shape[1]):
        sums[a, j] -= Z[i, j]
        sums[b, j] += Z[i, j]
    labels[i] = b
    if log.shape[0] > 0:
        log[nlog, 0] = i
        log[nlog, 1] = a
        nlog += 1
    return nlog


# numba kernel: arrays passed one by one (no structs of arrays in nopython mode,
# and a jitclass would defeat cache=True)
@njit(cache=True, nogil=True)
def best_step(Z, nrm, i, knn, k, cap, labels, members, pos, sizes, sums,
              cA, cB, vv, cand, log, nlog):  # pragma: no cover
    """Apply the best SSE-lowering move or swap of record i; return (delta, nlog, B).

    Candidates: groups of i's nearest records, in order of first appearance; ties
    keep the earliest candidate (moves before swaps within a group). B = -1: none.
    """
    p = Z.shape[1]
    a = labels[i]
    ma = sizes[a]
    for j in range(p):
        cA[j] = sums[a, j] / ma
    dxa = 0.0
    na = 0.0
    for j in range(p):
        d = Z[i, j] - cA[j]
        dxa += d * d
        na += cA[j] * cA[j]
    nc = 0
    for t in range(knn.shape[1]):
        b = labels[knn[i, t]]
        if b == a:
            continue
        dup = False
        for u in range(nc):
            if cand[u] == b:
                dup = True
                break
        if not dup:
            cand[nc] = b
            nc += 1
    # a tolerance relative to the magnitudes involved: only real decreases count
    best = -1e-12 * (1.0 + dxa + nrm[i])
    best_b = np.int64(-1)
    best_y = np.int64(-1)
    for t in range(nc):
        b = cand[t]
        mb = sizes[b]
        dxb = 0.0
        nb = 0.0
        for j in range(p):
            cB[j] = sums[b, j] / mb
            d = Z[i, j] - cB[j]
            dxb += d * d
            nb += cB[j] * cB[j]
        if ma > k and mb < cap:
            d = -ma / (ma - 1.0) * dxa + mb / (mb + 1.0) * dxb
            if d < best:
                best = d
                best_b = b
                best_y = np.int64(-1)
        # swap delta = dxb - dxa + |y-cA|^2 - |y-cB|^2 - w |x-y|^2
        #            = [dxb - dxa + |cA|^2 - |cB|^2 - w |x|^2] - w |y|^2 + 2 y.(w x - cA + cB)
        w = 1.0 / ma + 1.0 / mb
        for j in range(p):
            vv[j] = w * Z[i, j] - cA[j] + cB[j]
        base = dxb - dxa + na - nb - w * nrm[i]
        for u in range(mb):
            y = members[b, u]
            dot = 0.0
            for j in range(p):
                dot += Z[y, j] * vv[j]
            d = base - w * nrm[y] + 2.0 * dot
            if d < best:
                best = d
                best_b = b
                best_y = y
    if best_b < 0:
        return 0.0, nlog, -1
    nlog = move(Z, i, best_b, labels, members, pos, sizes, sums, log, nlog)
    if best_y >= 0:
        nlog = move(Z, best_y, a, labels, members, pos, sizes, sums, log, nlog)
    return best, nlog, best_b


# numba kernel: arrays passed one by one (no structs of arrays in nopython mode,
# and a jitclass would defeat cache=True)
@njit(cache=True, nogil=True)
def local_search(Z, nrm, start, knn, k, cap, labels, members, pos, sizes, sums,
                 log, nlog, queue, inq):  # pragma: no cover
    """Worklist descent from the records ``start``; returns (delta, nlog, improvements).

    A record is examined when popped; after an improving step every member of the
    two groups involved is queued again (their centroids moved). Stops when the queue
    is empty (or the undo log is nearly full).
    """
    n, p = Z.shape
    cA = np.empty(p)
    cB = np.empty(p)
    vv = np.empty(p)
    cand = np.empty(knn.shape[1], np.int64)
    head = 0
    cnt = 0
    for t in range(start.shape[0]):
        i = start[t]
        if not inq[i]:
            inq[i] = True
            queue[(head + cnt) % n] = i
            cnt += 1
    total = 0.0
    nimp = 0
    while cnt > 0:
        if log.shape[0] > 0 and nlog >= log.shape[0] - 2:
            while cnt > 0:  # leave the queue clean for the next call
                inq[queue[head]] = False
                head = (head + 1) % n
                cnt -= 1
            break
        i = queue[head]
        head = (head + 1) % n
        cnt -= 1
        inq[i] = False
        a = labels[i]
        d, nlog, b = best_step(Z, nrm, i, knn, k, cap, labels, members, pos, sizes,
                               sums, cA, cB, vv, cand, log, nlog)
        if b >= 0:
            total += d
            nimp += 1
            for g in (a, b):
                for u in range(sizes[g]):
                    y = members[g, u]
                    if not inq[y]:
                        inq[y] = True
                        queue[(head + cnt) % n] = y
                        cnt += 1
    return total, nlog, nimp


@njit(cache=True, nogil=True)
def group_sse(Z, nrm, g, members, sizes, sums):  # pragma: no cover
    m = sizes[g]
    s = 0.0
    for u in range(m):
        s += nrm[members[g, u]]
    c2 = 0.0
    for j in range(Z.shape[1]):
        c2 += sums[g, j] * sums[g, j]
    return s - c2 / m


@njit(cache=True, nogil=True)
def axis_partition(Zp, proj, k, cap):  # pragma: no cover
    """Optimal partition of the pool into runs of k..cap records along ``proj``.

    Records sorted by their projection (stable); the shortest path of
    ``_contiguous.py`` over cut points, edge cost = multivariate SSE of the run.
    Returns (labels, groups); the last run is group 0.
    """
    N, p = Zp.shape
    order = np.argsort(proj, kind="mergesort")
    rows = np.empty((N, p))
    for t in range(N):
        for j in range(p):
            rows[t, j] = Zp[order[t], j]
    cost = np.empty(N + 1)
    back = np.empty(N + 1, np.int64)
    shortest_path(rows, k, cap, cost, back)
    lab = np.empty(N, np.int64)
    e = N
    g = 0
    while e > 0:
        s = e - back[e]
        for t in range(s, e):
            lab[order[t]] = g
        g += 1
        e = s
    return lab, g


@njit(cache=True, nogil=True)
def power_iteration(Xc, v):  # pragma: no cover
    """Replace ``v`` (a random start) by the leading right singular vector of ``Xc``."""
    for _ in range(15):
        w = Xc.T @ (Xc @ v)
        nv = np.sqrt((w * w).sum())
        if nv == 0.0:
            return
        v[:] = w / nv


@njit(cache=True, nogil=True)
def serpentine(Xc, v1, strips, state):  # pragma: no cover
    """Positions of the centred pool ``Xc`` along a serpentine over two principal axes.

    Cut the records into ``strips`` equal slices by the first axis ``v1``; inside each
    slice order them by the second axis (the first axis of the deflated data),
    alternately up and down, so that consecutive runs stay compact in the plane.
    """
    N, p = Xc.shape
    p1 = Xc @ v1
    Xd = Xc - np.outer(p1, v1)
    v2 = np.empty(p)
    for j in range(p):
        v2[j] = stream_uniform(state) - 0.5
    power_iteration(Xd, v2)
    p2 = Xd @ v2
    o1 = np.argsort(p1, kind="mergesort")
    out = np.empty(N)
    at = 0
    for s in range(strips):
        lo = s * N // strips
        hi = (s + 1) * N // strips
        seg = o1[lo:hi]
        o2 = np.argsort(p2[seg], kind="mergesort")
        for t in range(hi - lo):
            tt = t if s % 2 == 0 else hi - lo - 1 - t
            out[seg[o2[tt]]] = at
            at += 1
    return out


@njit(cache=True, nogil=True)
def greedy_partition(Zp, k, cap, state):  # pragma: no cover
    """Randomised MDAV-like partition of the pool.

    While k or more records are free: a centre (with probability 1/2 the free record
    farthest from the free records' centroid, else a uniformly random free record)
    and its k-1 nearest free records form a group. The < k leftovers join the group
    with the nearest centroid that has room (< cap).
    """
    N, p = Zp.shape
    lab = np.full(N, -1, np.int64)
    free = N
    g = 0
    d = np.empty(N)
    c = np.empty(p)
    while free >= k:
        r = -1
        if stream_uniform(state) < 0.5:
            c[:] = 0.0
            for i in range(N):
                if lab[i] < 0:
                    for j in range(p):
                        c[j] += Zp[i, j]
            far = -1.0
            for i in range(N):
                if lab[i] < 0:
                    s = 0.0
                    for j in range(p):
                        dd = Zp[i, j] - c[j] / free
                        s += dd * dd
                    if s > far:
                        far = s
                        r = i
        else:
            t = stream_randint(state, free)
            for i in range(N):
                if lab[i] < 0:
                    if t == 0:
                        r = i
                        break
                    t -= 1
        for i in range(N):
            if lab[i] < 0:
                s = 0.0
                for j in range(p):
                    dd = Zp[i, j] - Zp[r, j]
                    s += dd * dd
                d[i] = s
            else:
                d[i] = np.inf
        d[r] = -1.0
        idx = np.argsort(d, kind="mergesort")[:k]
        for i in idx:
            lab[i] = g
        free -= k
        g += 1
    if free > 0:
        cents = np.zeros((g, p))
        cnt = np.zeros(g, np.int64)
        for i in range(N):
            if lab[i] >= 0:
                cnt[lab[i]] += 1
                for j in range(p):
                    cents[lab[i], j] += Zp[i, j]
        for h in range(g):
            for j in range(p):
                cents[h, j] /= cnt[h]
        for i in range(N):
            if lab[i] < 0:
                near = np.inf
                bg = 0
                for h in range(g):
                    if cnt[h] >= cap:
                        continue
                    s = 0.0
                    for j in range(p):
                        dd = Zp[i, j] - cents[h, j]
                        s += dd * dd
                    if s < near:
                        near = s
                        bg = h
                lab[i] = bg
                cnt[bg] += 1
    return lab, g


# numba kernel: arrays passed one by one (no structs of arrays in nopython mode,
# and a jitclass would defeat cache=True)
@njit(cache=True, nogil=True)
def pick_pool(Z, knn, max_pool, labels, members, sizes, sums, state, gmark, pool_g,
              cand_g, cand_d, c0):  # pragma: no cover
    """Choose a neighbourhood of groups for one perturbation; returns its size ng.

    Seed record: the worse placed (squared distance to its centroid) of two random
    records. Pool: the seed's group, then the groups met among its members' nearest
    records, nearest centroid first, up to m groups (m uniform in 2..max_pool).
    """
    n, p = Z.shape
    s = stream_randint(state, n)
    s2 = stream_randint(state, n)
    e1 = 0.0
    e2 = 0.0
    g1 = labels[s]
    g2 = labels[s2]
    for j in range(p):
        d1 = Z[s, j] - sums[g1, j] / sizes[g1]
        d2 = Z[s2, j] - sums[g2, j] / sizes[g2]
        e1 += d1 * d1
        e2 += d2 * d2
    if e2 > e1:
        s = s2
    m = 2 + stream_randint(state, max_pool - 1)
    g0 = labels[s]
    pool_g[0] = g0
    ng = 1
    gmark[g0] = True
    nc = 0
    for u in range(sizes[g0]):
        y = members[g0, u]
        for t in range(knn.shape[1]):
            h = labels[knn[y, t]]
            if not gmark[h] and nc < cand_g.shape[0]:
                gmark[h] = True
                cand_g[nc] = h
                nc += 1
    gmark[g0] = False
    for t in range(nc):
        gmark[cand_g[t]] = False
    for j in range(p):
        c0[j] = sums[g0, j] / sizes[g0]
    for t in range(nc):
        h = cand_g[t]
        dd = 0.0
        for j in range(p):
            x = sums[h, j] / sizes[h] - c0[j]
            dd += x * x
        cand_d[t] = dd
    order = np.argsort(cand_d[:nc], kind="mergesort")
    for t in range(min(m - 1, nc)):
        pool_g[ng] = cand_g[order[t]]
        ng += 1
    return ng


@njit(cache=True, nogil=True)
def accept(delta, cur, temp0, frac, state):  # pragma: no cover
    """Annealing acceptance: any non-increase, else probability exp(-delta / T),
    T = temp0 * (1 - frac)^2 (no uphill step once frac >= 1)."""
    if delta <= 1e-12 * cur:
        return True
    if temp0 > 0.0 and frac < 1.0:
        return stream_uniform(state) < np.exp(-delta / (temp0 * (1.0 - frac) ** 2))
    return False


@njit(cache=True, nogil=True)
def scratch(n, p, gmax, max_pool, cap):  # pragma: no cover
    """Work arrays of the search kernels: the undo log, the descent's worklist, the
    pool's group marks, groups and records, candidate groups and their distances,
    and a centroid."""
    return (np.empty((4 * n + 64, 2), np.int64), np.empty(n, np.int64),
            np.zeros(n, np.bool_), np.zeros(gmax, np.bool_), np.empty(max_pool, np.int64),
            np.empty(max_pool * cap, np.int64), np.empty(64, np.int64), np.empty(64),
            np.empty(p))


# numba kernel: arrays passed one by one (no structs of arrays in nopython mode,
# and a jitclass would defeat cache=True)
@njit(cache=True, nogil=True)
def next_pool(Z, nrm, knn, max_pool, labels, members, sizes, sums, state, gmark, pool_g, pool_r,
              cand_g, cand_d, c0):  # pragma: no cover
    """The next perturbation's pool (:func:`pick_pool`) and its records
    (:func:`pool_records`); returns (ng groups, N records, pool SSE, a copy of the records)."""
    ng = pick_pool(Z, knn, max_pool, labels, members, sizes, sums, state, gmark,
                   pool_g, cand_g, cand_d, c0)
    N, old = pool_records(Z, nrm, ng, pool_g, members, sizes, sums, pool_r)
    return ng, N, old, pool_r[:N].copy()


@njit(cache=True, nogil=True)
def pool_records(Z, nrm, ng, pool_g, members, sizes, sums, pool_r):  # pragma: no cover
    """Write the records of the pool's ``ng`` groups into pool_r; return (N, pool SSE)."""
    N = 0
    old = 0.0
    for t in range(ng):
        g = pool_g[t]
        old += group_sse(Z, nrm, g, members, sizes, sums)
        for u in range(sizes[g]):
            pool_r[N] = members[g, u]
            N += 1
    return N, old


# numba kernel: arrays passed one by one (no structs of arrays in nopython mode,
# and a jitclass would defeat cache=True)
@njit(cache=True, nogil=True)
def settle(Z, delta, cur, best, best_labels, temp0, frac, state, labels, members, pos,
           sizes, sums, log, nlog):  # pragma: no cover
    """Keep a perturbation (by :func:`accept`; note a new best) or undo its logged moves.

    Returns (kept, cur, best).
    """
    if accept(delta, cur, temp0, frac, state):
        cur += delta
        if cur < best - 1e-12 * best:
            best = cur
            best_labels[:] = labels
        return True, cur, best
    for t in range(nlog - 1, -1, -1):
        move(Z, log[t, 0], log[t, 1], labels, members, pos, sizes, sums, log[:0], np.int64(0))
    return False, cur, best


# numba kernel: arrays passed one by one (no structs of arrays in nopython mode,
# and a jitclass would defeat cache=True)
@njit(cache=True, nogil=True)
def ils_chunk(Z, nrm, knn, k, cap, labels, members, pos, sizes, sums, free, nfree,
              state, iters, max_pool, best_labels, cur, best, temp0, frac0, dfrac):  # pragma: no cover
    """``iters`` re-partitioning iterations; returns (cur, best, nfree, accepted).

    One iteration: a pool of 2..max_pool nearby groups (:func:`pick_pool`);
    re-partition their records (optimal runs along the pool's first principal axis
    -- a serpentine over the first two axes for pools of 4 or more groups' worth of
    records -- or along the line through two random pool records, or a randomised
    MDAV-like grouping, with probability 1/4, 1/4, 1/2), which may change the number
    of groups; run the worklist descent from the pool's records; accept by
    :func:`accept`, otherwise undo every change. The best partition seen is kept in
    best_labels.
    """
    n, p = Z.shape
    log, queue, inq, gmark, pool_g, pool_r, cand_g, cand_d, c0 = scratch(
        n, p, sizes.shape[0], max_pool, cap)
    slots = np.empty(max_pool * cap, np.int64)
    v = np.empty(p)
    accepted = 0
    for it in range(iters):
        ng, N, old, pr = next_pool(Z, nrm, knn, max_pool, labels, members, sizes, sums, state, gmark,
                                   pool_g, pool_r, cand_g, cand_d, c0)
        Zp = Z[pr]
        # -- re-partition the pool
        u = stream_uniform(state)
        if u < 0.5:
            if u < 0.25:
                mu = np.zeros(p)
                for i in range(N):
                    for j in range(p):
                        mu[j] += Zp[i, j]
                for j in range(p):
                    mu[j] /= N
                    v[j] = stream_uniform(state) - 0.5
                Xc = Zp - mu
                power_iteration(Xc, v)
                strips = int(np.sqrt(N / k) + 0.5)
                if strips >= 2:
                    proj = serpentine(Xc, v, strips, state)
                else:
                    proj = Xc @ v
            else:
                a = stream_randint(state, N)
                b = stream_randint(state, N)
                for j in range(p):
                    v[j] = Zp[a, j] - Zp[b, j]
                proj = Zp @ v
            lab, ngn = axis_partition(Zp, proj, k, cap)
        else:
            lab, ngn = greedy_partition(Zp, k, cap, state)
        for t in range(ngn):
            if t < ng:
                slots[t] = pool_g[t]
            else:
                nfree -= 1
                slots[t] = free[nfree]
        nlog = np.int64(0)
        for t in range(N):
            i = pr[t]
            b = slots[lab[t]]
            if labels[i] != b:
                nlog = move(Z, i, b, labels, members, pos, sizes, sums, log, nlog)
        new = 0.0
        for t in range(ngn):
            new += group_sse(Z, nrm, slots[t], members, sizes, sums)
        for t in range(ngn, ng):
            free[nfree] = pool_g[t]
            nfree += 1
        delta = new - old
        d2, nlog, _ = local_search(Z, nrm, pr, knn, k, cap, labels, members, pos, sizes,
                                   sums, log, nlog, queue, inq)
        delta += d2
        ok, cur, best = settle(Z, delta, cur, best, best_labels, temp0, frac0 + it * dfrac,
                               state, labels, members, pos, sizes, sums, log, nlog)
        accepted += ok
        if not ok:
            for t in range(ngn, ng):
                nfree -= 1
            for t in range(ngn - 1, ng - 1, -1):
                free[nfree] = slots[t]
                nfree += 1
    return cur, best, nfree, accepted


# numba kernel: arrays passed one by one (no structs of arrays in nopython mode,
# and a jitclass would defeat cache=True)
@njit(cache=True, nogil=True)
def kick_chunk(Z, nrm, knn, k, cap, labels, members, pos, sizes, sums, state, iters,
               max_pool, max_swaps, best_labels, cur, best, temp0, frac0,
               dfrac):  # pragma: no cover
    """``iters`` swap-kick iterations; returns (cur, best, accepted).

    One iteration: a pool of 2..max_pool nearby groups (:func:`pick_pool`); 1 to
    ``max_swaps`` exchanges of two random pool records of different groups (group
    sizes, and so the number of groups, never change); the worklist descent from the
    pool's records; accept by :func:`accept`, otherwise undo every change. The best
    partition seen is kept in best_labels.
    """
    n, p = Z.shape
    log, queue, inq, gmark, pool_g, pool_r, cand_g, cand_d, c0 = scratch(
        n, p, sizes.shape[0], max_pool, cap)
    accepted = 0
    for it in range(iters):
        ng, N, old, pr = next_pool(Z, nrm, knn, max_pool, labels, members, sizes, sums, state, gmark,
                                   pool_g, pool_r, cand_g, cand_d, c0)
        nlog = np.int64(0)
        for t in range(1 + stream_randint(state, max_swaps)):
            x = pr[stream_randint(state, N)]
            y = pr[stream_randint(state, N)]
            a = labels[x]
            b = labels[y]
            if a != b:
                nlog = move(Z, x, b, labels, members, pos, sizes, sums, log, nlog)
                nlog = move(Z, y, a, labels, members, pos, sizes, sums, log, nlog)
        new = 0.0
        for t in range(ng):
            new += group_sse(Z, nrm, pool_g[t], members, sizes, sums)
        d2, nlog, _ = local_search(Z, nrm, pr, knn, k, cap, labels, members, pos, sizes,
                                   sums, log, nlog, queue, inq)
        delta = new - old + d2
        ok, cur, best = settle(Z, delta, cur, best, best_labels, temp0, frac0 + it * dfrac,
                               state, labels, members, pos, sizes, sums, log, nlog)
        accepted += ok
    return cur, best, accepted
