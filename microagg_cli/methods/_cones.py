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

An index is a tuple of arrays (:data:`FIELDS`), allocated by :func:`build` in Python
and passed to the kernels one by one: the kernels allocate nothing and take no tuples,
which keeps numba's compile time on the first run short (each allocation routine and
each tuple type is a function numba compiles, see :mod:`._fast_mdav`).
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from .._select import select

#: Records per bucket and buckets per super-bucket.
BUCKET = 32
GROUP = 16
#: Records sampled per cell to find its principal axis, and power-iteration steps.
_PCA_SAMPLE = 32
_PCA_STEPS = 12
#: Weight of the norm against the direction when records are ordered into buckets.
_RHO_WEIGHT = 6.0
#: Margin (radians) added to every cone's half-angle and to every ``kappa``: far above
#: the rounding error of the computed angles (arccos near 0 turns 1e-16 into 1.5e-8).
_ANGLE_MARGIN = 1e-6
#: Scalar fields of a cone (columns of the ``*f`` arrays).
_COSB, _SINB, _BETA, _LO, _HI, _BETA0 = 0, 1, 2, 3, 4, 5
#: The arrays of an index, in order: per record (in index order) the angle of its
#: direction to its bucket's axis, its norm ``|x - c0|``, whether it remains, its input
#: index; the position of each input index (-1 if absent); the records by bucket as
#: (buckets, p, ``bucket``) coordinate-major arrays, exact and float32-screened; the
#: bucket axes, cone fields and remaining counts; the same for the super-buckets; the
#: angle of each bucket's axis to its super-bucket's; ``c0``; (``bucket``, ``group``);
#: (the screening scale ``sigma``, 0 when screening is off).
FIELDS = ("ang", "rho", "alive", "inp", "pos", "Xb", "Yb", "ba", "bf", "bcnt", "ga", "gf", "gcnt",
          "bang", "c0", "geo", "sigma")


# ------------------------------------------------------------------------ building
@njit(cache=True, nogil=True, _nrt=False, no_cpython_wrapper=True)
def _cone(U, s, e, axis, fit, out):
    """Angles of the directions ``U[s:e]`` to a unit axis, plus ``_ANGLE_MARGIN``, into
    ``out[s:e]``; returns the largest (the cone's half-angle). With ``fit``, the axis
    is first set to the normalised sum of those directions, and pi is returned
    (``out`` untouched) when they do not fit a narrower cone. Zero rows (records at
    ``c0``) have no direction and need none (angle 0): their distance to any ``q`` is
    ``|q - c0|``, which the norm range covers."""
    p = axis.shape[0]
    if fit:
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
        u = 0.0
        z = True
        for j in range(p):
            u += U[t, j] * axis[j]
            z = z and U[t, j] == 0.0
        a = 0.0 if z else np.arccos(1.0 if u > 1.0 else (-1.0 if u < -1.0 else u))
        out[t] = a + _ANGLE_MARGIN
        beta = a if a > beta else beta
    return beta + _ANGLE_MARGIN


@njit(cache=True, nogil=True, _nrt=False, no_cpython_wrapper=True)
def refit(b, g, ang, rho, alive, bf, bcnt, bang, gf, bucket, group, rel):
    """Refit the cone (around the axis fixed at build time) and the norm range of
    bucket ``b`` to its remaining records, from each record's stored angle to that
    axis; then those of super-bucket ``g`` from its buckets' (``bang``: the angle of
    each bucket's axis to its super-bucket's, with margin), never wider than the cone
    fitted to its records when the index was built. ``b`` or ``g`` = -1: skipped."""
    for level in range(2):
        if level == 0:
            if b < 0:
                continue
            s = b * bucket
            e = s + bucket if s + bucket < rho.shape[0] else rho.shape[0]
        else:
            if g < 0:
                continue
            s = g * group
            e = s + group if s + group < bcnt.shape[0] else bcnt.shape[0]
        lo = np.inf
        hi = 0.0
        beta = 0.0
        for t in range(s, e):
            if level == 0:
                if not alive[t]:
                    continue
                v = ang[t]
                vlo = rho[t]
                vhi = rho[t]
            else:
                if bcnt[t] == 0:
                    continue
                v = bang[t] + bf[t, _BETA]
                vlo = bf[t, _LO]
                vhi = bf[t, _HI]
            beta = v if v > beta else beta
            lo = vlo if vlo < lo else lo
            hi = vhi if vhi > hi else hi
        if level == 0:
            lo *= 1.0 - rel
            hi *= 1.0 + rel
            F = bf
            c = b
        else:
            beta = beta if beta < gf[g, _BETA0] else gf[g, _BETA0]
            F = gf
            c = g
        beta = beta if beta < np.pi else np.pi
        F[c, _BETA] = beta
        F[c, _COSB] = np.cos(beta)
        F[c, _SINB] = np.sin(beta)
        F[c, _LO] = lo
        F[c, _HI] = hi


# numba kernel: arrays passed one by one (no structs of arrays in nopython mode,
# and a jitclass would defeat cache=True)
@njit(cache=True, nogil=True, _nrt=False)
def _build(X, idx, rel, F, rho0, perm, key, U, axis, nxt, mean, cov, stack,
           ang, rho, alive, inp, pos, Xb, Yb, ba, bf, bcnt, ga, gf, gcnt, bang, c0, geo, sigma):
    """Fill the index arrays (see :func:`build`); ``F`` .. ``stack`` are scratch."""
    p = X.shape[1]
    m = idx.shape[0]
    bucket = geo[0]
    group = geo[1]
    # features: the direction of each record from c0 and its norm
    rsum = 0.0
    for t in range(m):
        r2 = 0.0
        for j in range(p):
            u = X[idx[t], j] - c0[j]
            r2 += u * u
        r = np.sqrt(r2)
        rho0[t] = r
        rsum += r
        for j in range(p):
            F[t, j] = (X[idx[t], j] - c0[j]) / r if r > 0.0 else 0.0
        F[t, p] = r
    # the norm column, scaled to weigh _RHO_WEIGHT against a unit direction
    scale = rsum / m
    scale = _RHO_WEIGHT / (scale if scale > 1e-300 else 1e-300)
    for t in range(m):
        F[t, p] *= scale
    # the order: every aligned run of ``bucket`` positions (and every aligned run of a
    # power of two of those) is a cell of recursive principal-axis splits; the left
    # part of a cell always holds a power of two of buckets, the largest below the
    # cell's bucket count
    q = p + 1
    for t in range(m):
        perm[t] = t
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
        # key = projection on the cell's first principal axis: power iteration on the
        # covariance of an even subsample, started on the widest coordinate
        step = (e - s) // _PCA_SAMPLE
        step = step if step > 1 else 1
        for j in range(q):
            mean[j] = 0.0
        cnt = 0
        for t in range(s, e, step):
            for j in range(q):
                mean[j] += F[perm[t], j]
            cnt += 1
        for j in range(q):
            mean[j] /= cnt
        for a in range(q):
            for b in range(q):
                cov[a, b] = 0.0
        for t in range(s, e, step):
            for a in range(q):
                u = F[perm[t], a] - mean[a]
                for b in range(a, q):
                    cov[a, b] += u * (F[perm[t], b] - mean[b])
        w = 0
        for a in range(q):
            for b in range(a):
                cov[a, b] = cov[b, a]
            if cov[a, a] > cov[w, w]:
                w = a
        for j in range(q):
            axis[j] = 0.0
        axis[w] = 1.0
        for _ in range(_PCA_STEPS):
            # cov @ axis, written out (a matrix product would compile a BLAS call)
            nrm2 = 0.0
            for a in range(q):
                v = 0.0
                for b in range(q):
                    v += cov[a, b] * axis[b]
                nxt[a] = v
                nrm2 += v * v
            nrm = np.sqrt(nrm2)
            if not nrm > 0.0:
                break
            for j in range(q):
                axis[j] = nxt[j] / nrm
        for t in range(s, e):
            v = 0.0
            for j in range(q):
                v += F[perm[t], j] * axis[j]
            key[t] = v
        select(key, perm, s, e, mid)
        stack[top, 0] = s
        stack[top, 1] = mid
        stack[top + 1, 0] = mid
        stack[top + 1, 1] = e
        top += 2
    nb = ba.shape[0]
    ng = ga.shape[0]
    sg = 0.0
    for t in range(m):
        i = idx[perm[t]]
        inp[t] = i
        pos[i] = t
        rho[t] = rho0[perm[t]]
        sg = rho[t] if rho[t] > sg else sg
        b = t // bucket
        o = t - b * bucket
        for j in range(p):
            Xb[b, j, o] = X[i, j]
            U[t, j] = F[perm[t], j]
    # float32 copy of the centred records, scaled by the largest norm, for screening
    usable = 1e-30 < sg < 1e30
    sigma[0] = sg if usable else 0.0
    if usable:
        for t in range(m):
            b = t // bucket
            o = t - b * bucket
            for j in range(p):
                Yb[b, j, o] = np.float32((Xb[b, j, o] - c0[j]) / sg)
    # run-time values, not literals: a literal argument compiles a callee once more
    skip, fit, given = np.int64(-1), np.int64(1), np.int64(0)
    for b in range(nb):
        s = b * bucket
        e = s + bucket if s + bucket < m else m
        bcnt[b] = e - s
        if _cone(U, s, e, ba[b], fit, ang) >= np.pi:
            for t in range(s, e):
                ang[t] = np.pi
        refit(b, skip, ang, rho, alive, bf, bcnt, bang, gf, bucket, group, rel)
    for g in range(ng):
        s = g * group * bucket
        e = (g + 1) * group * bucket
        e = e if e < m else m
        gcnt[g] = e - s
        # rho0 is free now: scratch for the records' angles to the super-bucket's axis
        gf[g, _BETA0] = _cone(U, s, e, ga[g], fit, rho0)
        b1 = (g + 1) * group
        _cone(ba, g * group, b1 if b1 < nb else nb, ga[g], given, bang)
        refit(skip, g, ang, rho, alive, bf, bcnt, bang, gf, bucket, group, rel)


def build(X: np.ndarray, idx: np.ndarray, c0: np.ndarray, rel: float, bucket: int = BUCKET,
          group: int = GROUP) -> tuple[np.ndarray, ...]:
    """Cone index over the records ``idx`` (input indices) of ``X``, centred on ``c0``.

    Returns the arrays of :data:`FIELDS`. Axes are fixed at build time; as records
    leave, the caller marks them (``alive``), decrements the counts and refits their
    bucket and super-bucket (:func:`refit`).
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    idx = np.ascontiguousarray(idx, dtype=np.int64)
    n, p = X.shape
    m = idx.size
    nb = -(-m // bucket)
    ng = -(-nb // group)
    index = (
        np.empty(m), np.empty(m), np.ones(m, np.bool_), np.empty(m, np.int64), np.full(n, -1, np.int64),
        np.zeros((nb, p, bucket)), np.zeros((nb, p, bucket), np.float32),
        np.empty((nb, p)), np.empty((nb, 6)), np.empty(nb, np.int64),
        np.empty((ng, p)), np.empty((ng, 6)), np.empty(ng, np.int64),
        np.empty(nb), np.array(c0, dtype=np.float64), np.array([bucket, group], dtype=np.int64), np.zeros(1),
    )
    q = p + 1
    _build(X, idx, float(rel), np.empty((m, q)), np.empty(m), np.empty(m, np.int64), np.empty(m),
           np.empty((m, p)), np.empty(q), np.empty(q), np.empty(q), np.empty((q, q)), np.empty((128, 2), np.int64),
           *index)
    return index


# ------------------------------------------------------------------------ the query
@njit(cache=True, nogil=True, _nrt=False, no_cpython_wrapper=True)
def bounds(A, F, cnt, s, e, w, wn, sn2, rel, out):
    """Upper bounds on the rounded squared distance from ``q = c0 + w`` to any record
    of the cones ``s..e-1`` (axes ``A``, fields ``F``), into ``out[:e - s]``; -1 for an
    empty cone. ``wn = |w|``, ``sn2 = |w|^2``. Two passes over contiguous arrays, so
    that the compiler vectorises them."""
    p = w.shape[0]
    if not wn > 0.0:
        for c in range(s, e):
            hi = F[c, _HI]
            out[c - s] = hi * hi * ((1.0 + rel) * (1.0 + rel)) + 1e-300 if cnt[c] > 0 else -1.0
        return
    for c in range(s, e):
        ca = 0.0
        for j in range(p):
            ca -= A[c, j] * w[j]
        out[c - s] = ca / wn
    for c in range(s, e):
        ca = out[c - s]
        cb = F[c, _COSB]
        sa = 1.0 - ca * ca
        sa = np.sqrt(sa) if sa > 0.0 else 0.0
        kap = 1.0
        if ca < cb:
            kap = ca * cb + sa * F[c, _SINB] + _ANGLE_MARGIN
            kap = kap if kap < 1.0 else 1.0
        lo = F[c, _LO]
        hi = F[c, _HI]
        glo = lo * lo + 2.0 * wn * lo * kap
        g = hi * hi + 2.0 * wn * hi * kap
        g = (g if g >= glo else glo) + sn2
        ub = (g + rel * (hi * hi + sn2 + 2.0 * wn * hi)) * (1.0 + rel) + 1e-300
        out[c - s] = ub if cnt[c] > 0 else -1.0
