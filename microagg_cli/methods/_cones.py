"""Exact farthest-record queries from a cone index (for the exact fast MDAV).

MDAV's costly query is "the remaining record farthest from a record ``q``" (``q`` is
itself the record farthest from the centroid). Ball and box bounds are loose for it in
10 dimensions: a cell's radius is comparable to the slack that separates the farthest
record from the many nearly as far. The bound used here follows the geometry of the
query instead. With ``c0`` a fixed centre, ``y = x - c0``, ``w = q - c0``,

    |x - q|^2 = |y|^2 + |w|^2 + 2 |y| |w| cos(angle(y, -w)),

so a bucket of records whose directions from ``c0`` lie in a cone of half-angle
``beta`` around a unit axis ``a``, and whose norms lie in ``[lo, hi]``, is no farther
from ``q`` than ``max over rho in {lo, hi} of rho^2 + |w|^2 + 2 rho |w| kappa`` with
``kappa = cos(max(0, angle(a, -w) - beta))`` -- tight near the antipode of ``q``,
where the answer lies (the cone bound of maximum-inner-product search: Ram & Gray,
2012, Maximum inner-product search using cone trees, KDD).

Layout: records are ordered by recursive median splits along the principal axis of
their (direction, norm) features, cut into buckets of ``BUCKET`` records, and
``GROUP`` consecutive buckets form a super-bucket; both levels carry a cone and a norm
range over their remaining records. A query bounds every super-bucket, searches the
most promising one first, then every other one whose bound reaches the best distance
so far, bucket by bucket. A visited bucket is first screened in float32 (a scaled copy
of the centred records: half the memory traffic, which is what a query costs at a
million records); a record goes on to the exact distance only if its screened distance
plus a proven error margin, ``2 (p + 6) 2^-24 (|y|^2 + |w|^2)`` doubled, reaches the
best so far. Exact distances are computed as the reference does (left to right in the
input coordinates), so the answer -- ties to the first record in the input -- is the
reference's; the bounds only skip buckets that cannot hold a record at least as far as
the best, with margins (``rel`` on lengths, ``_ANGLE_MARGIN`` on angles) far above
every rounding error.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit

#: Records per bucket and buckets per super-bucket.
BUCKET = 32
GROUP = 16
#: Records sampled per cell to find its principal axis.
_PCA_SAMPLE = 32
#: Weight of the norm against the direction when records are ordered into buckets.
_RHO_WEIGHT = 6.0
#: Margin (radians) added to every cone's half-angle and to every ``kappa``: far above
#: the rounding error of the computed angles (arccos near 0 turns 1e-16 into 1.5e-8).
_ANGLE_MARGIN = 1e-6
#: Scalar fields of a cone (columns of the ``*f`` arrays).
_COSB, _SINB, _BETA, _LO, _HI, _BETA0 = 0, 1, 2, 3, 4, 5


# ------------------------------------------------------------------------ the order
@njit(cache=True, nogil=True)
def _axis_key(F, perm, s, e, key, axis, sample, steps):
    """Projection of the rows ``perm[s:e]`` of ``F`` on their first principal axis
    (power iteration on the covariance of an even subsample, started on the widest
    coordinate; deterministic), into ``key[s:e]``."""
    p = F.shape[1]
    step = max(1, (e - s) // sample)
    mean = np.zeros(p)
    cnt = 0
    for t in range(s, e, step):
        for j in range(p):
            mean[j] += F[perm[t], j]
        cnt += 1
    for j in range(p):
        mean[j] /= cnt
    cov = np.zeros((p, p))
    for t in range(s, e, step):
        for a in range(p):
            u = F[perm[t], a] - mean[a]
            for b in range(a, p):
                cov[a, b] += u * (F[perm[t], b] - mean[b])
    w = 0
    for a in range(p):
        for b in range(a):
            cov[a, b] = cov[b, a]
        if cov[a, a] > cov[w, w]:
            w = a
    for j in range(p):
        axis[j] = 0.0
    axis[w] = 1.0
    nxt = np.empty(p)
    for _ in range(steps):
        # cov @ axis, written out (a matrix product would compile a BLAS call)
        nrm2 = 0.0
        for a in range(p):
            v = 0.0
            for b in range(p):
                v += cov[a, b] * axis[b]
            nxt[a] = v
            nrm2 += v * v
        nrm = np.sqrt(nrm2)
        if not nrm > 0.0:
            break
        for j in range(p):
            axis[j] = nxt[j] / nrm
    for t in range(s, e):
        v = 0.0
        for j in range(p):
            v += F[perm[t], j] * axis[j]
        key[t] = v


@njit(cache=True, nogil=True)
def _select(key, perm, s, e, kth):
    """Quickselect on ``key[s:e]`` (``perm`` moved alike): position ``kth`` ends with
    the kth smallest key, none larger before it, none smaller after."""
    lo = s
    hi = e - 1
    while hi > lo:
        a = key[lo]
        b = key[(lo + hi) // 2]
        c = key[hi]
        pv = max(min(a, b), min(max(a, b), c))
        i = lo
        j = hi
        while i <= j:
            while key[i] < pv:
                i += 1
            while key[j] > pv:
                j -= 1
            if i <= j:
                key[i], key[j] = key[j], key[i]
                perm[i], perm[j] = perm[j], perm[i]
                i += 1
                j -= 1
        if kth <= j:
            hi = j
        elif kth >= i:
            lo = i
        else:
            return


@njit(cache=True, nogil=True)
def _order(F, bucket):
    """Positions of the rows of ``F`` such that every aligned run of ``bucket`` rows
    (and every aligned run of a power of two of those) is a cell of recursive
    principal-axis splits: the left part of a cell always holds a power of two of
    buckets, the largest below the cell's bucket count."""
    m = F.shape[0]
    perm = np.empty(m, np.int64)
    for t in range(m):
        perm[t] = t
    key = np.empty(m)
    axis = np.empty(F.shape[1])
    stack = np.empty((128, 2), np.int64)
    stack[0, 0] = 0
    stack[0, 1] = m
    top = 1
    while top > 0:
        top -= 1
        s = stack[top, 0]
        e = stack[top, 1]
        nb = (e - s + bucket - 1) // bucket
        if nb <= 1:
            continue
        half = 1
        while 2 * half < nb:
            half *= 2
        mid = s + half * bucket
        _axis_key(F, perm, s, e, key, axis, _PCA_SAMPLE, 12)
        _select(key, perm, s, e, mid)
        stack[top, 0] = s
        stack[top, 1] = mid
        stack[top + 1, 0] = mid
        stack[top + 1, 1] = e
        top += 2
    return perm


# ------------------------------------------------------------------------ cones
@njit(cache=True, nogil=True)
def _set(f, i, beta, lo, hi):
    beta = min(beta, np.pi)
    f[i, _BETA] = beta
    f[i, _COSB] = np.cos(beta)
    f[i, _SINB] = np.sin(beta)
    f[i, _LO] = lo
    f[i, _HI] = hi


@njit(cache=True, nogil=True)
def _axis_of(U, s, e, axis):
    """Unit axis of the cone around the directions ``U[s:e]`` (their normalised sum)
    into ``axis``, and the cone's half-angle over them (with ``_ANGLE_MARGIN``); pi
    when the directions do not fit a narrower cone. Zero rows (records at ``c0``)
    have no direction and need none: their distance to any ``q`` is ``|q - c0|``,
    which the norm range covers."""
    p = axis.shape[0]
    for j in range(p):
        axis[j] = 0.0
    for t in range(s, e):
        for j in range(p):
            axis[j] += U[t, j]
    nrm2 = 0.0
    for j in range(p):
        nrm2 += axis[j] * axis[j]
    nrm = np.sqrt(nrm2)
    if not nrm > 1e-6:
        return np.pi
    for j in range(p):
        axis[j] /= nrm
    beta = 0.0
    for t in range(s, e):
        beta = max(beta, _angle(U, t, axis))
    return beta + _ANGLE_MARGIN


@njit(cache=True, nogil=True)
def _angle(U, t, axis):
    """Angle between the direction ``U[t]`` and a unit axis (0 for a zero row)."""
    u = 0.0
    z = True
    for j in range(axis.shape[0]):
        u += U[t, j] * axis[j]
        z = z and U[t, j] == 0.0
    return 0.0 if z else np.arccos(min(1.0, max(-1.0, u)))


@njit(cache=True, nogil=True)
def _fit_bucket(b, cx, bf, rel):
    """Cone (around the axis fixed at build time) and norm range of the remaining
    records of bucket ``b``, from each record's stored angle to that axis."""
    ang, rho, alive, bucket = cx[0], cx[1], cx[2], cx[7][0]
    s = b * bucket
    lo = np.inf
    hi = 0.0
    beta = 0.0
    for t in range(s, min(s + bucket, rho.shape[0])):
        if alive[t]:
            lo = min(lo, rho[t])
            hi = max(hi, rho[t])
            beta = max(beta, ang[t])
    _set(bf, b, beta, lo * (1.0 - rel), hi * (1.0 + rel))


@njit(cache=True, nogil=True)
def _fit_group(g, bf, bcnt, bang, gf, group):
    """Cone of super-bucket ``g`` from its buckets' cones (``bang``: the angle of each
    bucket's axis to its super-bucket's, with margin), never wider than the one
    fitted to its records when the index was built."""
    beta = 0.0
    lo = np.inf
    hi = 0.0
    for b in range(g * group, min(bf.shape[0], (g + 1) * group)):
        if bcnt[b] == 0:
            continue
        beta = max(beta, bang[b] + bf[b, _BETA])
        lo = min(lo, bf[b, _LO])
        hi = max(hi, bf[b, _HI])
    _set(gf, g, min(beta, gf[g, _BETA0]), lo, hi)


@njit(cache=True, nogil=True)
def build(X, idx, c0, rel, bucket=BUCKET, group=GROUP):
    """Cone index over the records ``idx`` of ``X``, centred on ``c0``.

    Returns ``(cx, ba, bf, bcnt, ga, gf, gcnt, bang)``: the record arrays ``cx`` = (angle of
    each record's direction to its bucket's axis, norm ``|x - c0|``, alive, the records
    by bucket as a (buckets, p, ``bucket``) coordinate-major array, input index,
    position of each input index (-1 if absent), c0, (bucket, group)); then the
    bucket axes / fields / remaining counts and the super-bucket axes / fields /
    counts, and the angle of each bucket's axis to its super-bucket's. Axes are fixed at
    build time; removals refit the half-angles and norm ranges.
    """
    n, p = X.shape
    m = idx.size
    # read back as run-time integers: literal defaults would compile every helper
    # they reach a second time (once per literal value)
    bg = np.empty(2, np.int64)
    bg[0] = bucket
    bg[1] = group
    bucket = bg[0]
    group = bg[1]
    F = np.empty((m, p + 1))
    rho0 = np.empty(m)
    for t in range(m):
        r2 = 0.0
        for j in range(p):
            u = X[idx[t], j] - c0[j]
            r2 += u * u
        r = np.sqrt(r2)
        rho0[t] = r
        for j in range(p):
            F[t, j] = (X[idx[t], j] - c0[j]) / r if r > 0.0 else 0.0
        F[t, p] = r
    # the norm column, scaled to weigh _RHO_WEIGHT against a unit direction
    rsum = 0.0
    for t in range(m):
        rsum += rho0[t]
    scale = _RHO_WEIGHT / max(1e-300, rsum / m)
    for t in range(m):
        F[t, p] *= scale
    perm = _order(F, bucket)
    nb = (m + bucket - 1) // bucket
    ng = (nb + group - 1) // group
    U = np.empty((m, p))
    Xb = np.zeros((nb, p, bucket))
    rho = np.empty(m)
    inp = np.empty(m, np.int64)
    pos = np.empty(n, np.int64)
    for i in range(n):
        pos[i] = -1
    for t in range(m):
        i = idx[perm[t]]
        inp[t] = i
        pos[i] = t
        rho[t] = rho0[perm[t]]
        for j in range(p):
            Xb[t // bucket, j, t % bucket] = X[i, j]
            U[t, j] = F[perm[t], j]
    ba = np.empty((nb, p))
    bf = np.empty((nb, 6))
    bcnt = np.empty(nb, np.int64)
    ang = np.empty(m)
    for b in range(nb):
        s = b * bucket
        e = min(m, s + bucket)
        bcnt[b] = e - s
        if _axis_of(U, s, e, ba[b]) >= np.pi:
            for t in range(s, e):
                ang[t] = np.pi
        else:
            for t in range(s, e):
                ang[t] = _angle(U, t, ba[b]) + _ANGLE_MARGIN
    alive = np.empty(m, np.bool_)
    sigma = 0.0
    for t in range(m):
        alive[t] = True
        sigma = max(sigma, rho[t])
    # float32 copy of the centred records, scaled by the largest norm, for screening
    usable = 1e-30 < sigma < 1e30
    Yb = np.zeros((nb, p, bucket), np.float32)
    if usable:
        for t in range(m):
            for j in range(p):
                Yb[t // bucket, j, t % bucket] = np.float32((Xb[t // bucket, j, t % bucket] - c0[j]) / sigma)
    c0c = np.empty(p)
    for j in range(p):
        c0c[j] = c0[j]
    sg = np.empty(1)
    sg[0] = sigma if usable else 0.0
    cx = (ang, rho, alive, Xb, inp, pos, c0c, bg, Yb, sg)
    for b in range(nb):
        _fit_bucket(b, cx, bf, rel)
    ga = np.empty((ng, p))
    gf = np.empty((ng, 6))
    gcnt = np.zeros(ng, np.int64)
    bang = np.empty(nb)
    for g in range(ng):
        s = g * group * bucket
        e = min(m, (g + 1) * group * bucket)
        gcnt[g] = e - s
        gf[g, _BETA0] = _axis_of(U, s, e, ga[g])
        for b in range(g * group, min(nb, (g + 1) * group)):
            bang[b] = _angle(ba, b, ga[g]) + _ANGLE_MARGIN
        _fit_group(g, bf, bcnt, bang, gf, group)
    return cx, ba, bf, bcnt, ga, gf, gcnt, bang


@njit(cache=True, nogil=True)
def remove(index, i, rel):
    """Take input record ``i`` out of the index; refit its bucket and super-bucket."""
    cx, ba, bf, bcnt, ga, gf, gcnt, bang = index
    bucket, group = cx[7][0], cx[7][1]
    t = cx[5][i]
    cx[2][t] = False
    b = t // bucket
    g = b // group
    bcnt[b] -= 1
    gcnt[g] -= 1
    if bcnt[b] > 0:
        _fit_bucket(b, cx, bf, rel)
    if gcnt[g] > 0:
        _fit_group(g, bf, bcnt, bang, gf, group)


# ------------------------------------------------------------------------ the query
@njit(cache=True, nogil=True)
def _bounds(A, F, cnt, s, e, w, wn, sn2, rel, out):
    """Upper bounds on the rounded squared distance from ``q = c0 + w`` to any record
    of the cones ``s..e-1`` (axes ``A``, fields ``F``), into ``out[:e - s]``; -1 for an
    empty cone. ``wn = |w|``, ``sn2 = |w|^2``. Two passes over contiguous arrays, so
    that the compiler vectorises them."""
    p = w.shape[0]
    if not wn > 0.0:
        for c in range(s, e):
            hi = F[c, _HI]
            out[c - s] = hi * hi * (1.0 + rel) ** 2 + 1e-300 if cnt[c] > 0 else -1.0
        return
    for c in range(s, e):
        ca = 0.0
        for j in range(p):
            ca -= A[c, j] * w[j]
        out[c - s] = ca / wn
    for c in range(s, e):
        ca = out[c - s]
        cb = F[c, _COSB]
        sa = np.sqrt(max(0.0, 1.0 - ca * ca))
        kap = 1.0 if ca >= cb else min(1.0, ca * cb + sa * F[c, _SINB] + _ANGLE_MARGIN)
        lo = F[c, _LO]
        hi = F[c, _HI]
        g = max(lo * lo + 2.0 * wn * lo * kap, hi * hi + 2.0 * wn * hi * kap) + sn2
        ub = (g + rel * (hi * hi + sn2 + 2.0 * wn * hi)) * (1.0 + rel) + 1e-300
        out[c - s] = ub if cnt[c] > 0 else -1.0


@njit(cache=True, nogil=True)
def _search_group(g, index, q, w, wn, sn2, rel, best, ub, buf, w32, buf32, screen, stats):
    """Search super-bucket ``g``: its buckets by decreasing bound, each one only if its
    bound reaches ``best[0]``; ``best`` = (distance, input index) updated in place."""
    cx, ba, bf, bcnt, ga, gf, gcnt, bang = index
    alive, Xb, inp, Yb = cx[2], cx[3], cx[4], cx[8]
    bucket, group = cx[7][0], cx[7][1]
    p = q.shape[0]
    nb = ba.shape[0]
    b0 = g * group
    b1 = min(nb, b0 + group)
    _bounds(ba, bf, bcnt, b0, b1, w, wn, sn2, rel, ub)
    for _ in range(b1 - b0):
        top = 0
        for t in range(1, b1 - b0):
            if ub[t] > ub[top]:
                top = t
        if ub[top] < best[0]:
            return
        ub[top] = -1.0
        b = b0 + top
        stats[1] += 1
        s = b * bucket
        e = min(bucket, alive.shape[0] - s)
        if screen[0] > 0.0:
            # screen in float32 (half the memory traffic): a record can beat the best
            # only if its screened distance plus the error margin reaches it
            for t in range(bucket):
                buf32[t] = 0.0
            for j in range(p):
                wj = w32[j]
                for t in range(bucket):
                    u = Yb[b, j, t] - wj
                    buf32[t] += u * u
            thr = best[0] * screen[1] - screen[2]
            for t in range(e):
                if alive[s + t] and buf32[t] >= thr:
                    # the exact distance, left to right as the reference
                    d = 0.0
                    for j in range(p):
                        u = Xb[b, j, t] - q[j]
                        d += u * u
                    i = inp[s + t]
                    if d > best[0] or (d == best[0] and i < best[1]):
                        best[0] = d
                        best[1] = i
            continue
        # distances of the bucket's records, each summed left to right over the
        # coordinates exactly as the reference does, vectorised across the records
        for t in range(bucket):
            buf[t] = 0.0
        for j in range(p):
            qj = q[j]
            for t in range(bucket):
                u = Xb[b, j, t] - qj
                buf[t] += u * u
        for t in range(e):
            if alive[s + t]:
                d = buf[t]
                i = inp[s + t]
                if d > best[0] or (d == best[0] and i < best[1]):
                    best[0] = d
                    best[1] = i


@njit(cache=True, nogil=True)
def _sift_down(heap, key, root, n):
    """Restore the max-heap property of ``heap[:n]`` (ids keyed by ``key``) below
    ``root``."""
    while True:
        child = 2 * root + 1
        if child >= n:
            return
        if child + 1 < n and key[heap[child + 1]] > key[heap[child]]:
            child += 1
        if key[heap[child]] > key[heap[root]]:
            heap[root], heap[child] = heap[child], heap[root]
            root = child
        else:
            return


@njit(cache=True, nogil=True)
def farthest(index, q, rel, gub, heap, ub, buf, stats):
    """Input index of the remaining record farthest from ``q`` (first on ties).

    ``gub`` and ``heap`` (one entry per super-bucket), ``ub`` (``GROUP`` entries) and
    ``buf`` (``BUCKET`` entries) are scratch arrays.
    """
    cx, ba, bf, bcnt, ga, gf, gcnt, bang = index
    c0 = cx[6]
    p = q.shape[0]
    w = np.empty(p)
    sn2 = 0.0
    for j in range(p):
        w[j] = q[j] - c0[j]
        sn2 += w[j] * w[j]
    wn = np.sqrt(sn2)
    # float32 screening: scaled query, 1/sigma^2 and the error margin (scaled units):
    # |screened - exact| <= (p + 6) u sum_j (|y_j| + |w_j|)^2 <= 2 (p + 6) u (|y|^2 + |w|^2)
    # with u = 2^-24 and |y| <= sigma; doubled for safety, plus an absolute floor
    sigma = cx[9][0]
    screen = np.zeros(3)
    w32 = np.empty(p, np.float32)
    buf32 = np.empty(cx[7][0], np.float32)
    if sigma > 0.0 and wn < 1e6 * sigma:
        inv = 1.0 / sigma
        for j in range(p):
            w32[j] = np.float32(w[j] * inv)
        screen[0] = 1.0
        screen[1] = inv * inv
        screen[2] = 4.0 * (p + 6) * 2.0 ** -24 * (1.0 + sn2 * inv * inv) * (1.0 + rel) + 1e-30
    ng = ga.shape[0]
    zero = np.int64(0)  # not the literal 0: a literal argument compiles a second copy
    _bounds(ga, gf, gcnt, zero, ng, w, wn, sn2, rel, gub)
    # super-buckets by decreasing bound (a binary max-heap of their ids), searched
    # until the best bound left cannot reach the best distance found
    for g in range(ng):
        heap[g] = g
    for g in range(ng // 2 - 1, -1, -1):
        _sift_down(heap, gub, g, ng)
    size = ng
    best = np.empty(2)
    best[0] = -1.0
    best[1] = np.inf
    while size > 0:
        g = heap[0]
        if gub[g] < best[0] or gub[g] < 0.0:
            break
        size -= 1
        heap[0] = heap[size]
        _sift_down(heap, gub, zero, size)
        stats[0] += 1
        _search_group(g, index, q, w, wn, sn2, rel, best, ub, buf, w32, buf32, screen, stats)
    if best[0] < 0.0:
        return -1
    return int(best[1])
