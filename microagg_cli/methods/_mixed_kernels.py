"""numba kernels of heterogeneous MDAV (:func:`microagg_cli.methods.mixed.mixed_mdav`).

No allocation inside (``_nrt=False``), as in :mod:`._fast_mdav`: every buffer is made
by the caller. The records still to group are kept in input order in column-major
working copies (one contiguous row per attribute), compacted (stably) whenever a
quarter of them has left, so that a query fills a buffer of distances attribute by
attribute over contiguous memory (loops the compiler vectorises), and ties fall to the
earlier record.

Per MDAV iteration three passes over the remaining records answer the four queries:
the record ``r`` farthest from the centroid; in one pass the distances to ``r`` give
both ``s`` (the farthest from ``r``) and the k-1 nearest of ``r``; a last pass the k-1
nearest of ``s``. The centroid is the mean of the continuous coordinates, the mode of
each nominal column (ties: the smallest code, i.e. the category met first in input
order) and the lower median category of each ordinal column, all kept up to date from
running sums and per-level counts as records leave. A squared distance adds, in this
order, the continuous terms left to right, the nominal mismatches, the ordinal terms
(so without keys the distances are bit for bit those of MDAV's reference).

:func:`mixed_mdav_screened`, the kernel :func:`microagg_cli.methods.mixed.mixed_mdav`
runs, takes the same decisions on the same float64 distances but computes them only
where a float32 screen (half the memory, twice the vector width) cannot rule a record
out, and skips whole blocks of records; :func:`mixed_mdav_core` is the plain kernel it
is tested against (and the fallback for coordinates beyond float32's range).
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from .._select import insert_nearest


@njit(cache=True, nogil=True, _nrt=False, no_cpython_wrapper=True)
def _add_ordinal(D, m, KOT, co, qo):
    """D[:m] += the ordinal terms: squared differences of the level coordinates ``co``
    (in ``D``'s precision) of the working records' and the query's levels ``qo``."""
    for j in range(KOT.shape[0]):
        q = co[j, qo[j]]
        row = KOT[j]
        for i in range(m):
            t = co[j, row[i]] - q
            D[i] += t * t


@njit(cache=True, nogil=True, _nrt=False, no_cpython_wrapper=True)
def _fill(D, m, WT, KNT, wn, KOT, co, qc, qn, qo):
    """D[:m] = squared mixed distances of the working records to the point (qc, qn, qo)."""
    for i in range(m):
        D[i] = 0.0
    for j in range(WT.shape[0]):
        q = qc[j]
        row = WT[j]
        for i in range(m):
            t = row[i] - q
            D[i] += t * t
    for j in range(KNT.shape[0]):
        q = qn[j]
        w = wn[j]
        row = KNT[j]
        for i in range(m):  # branch-free, so the loop vectorises
            D[i] += w * (row[i] != q)
    _add_ordinal(D, m, KOT, co, qo)


@njit(cache=True, nogil=True, _nrt=False, no_cpython_wrapper=True)
def _compact_rows(A, alive, m):
    """Move the columns ``i < m`` of ``A`` whose record is alive to the front, in order."""
    t = 0
    for i in range(m):
        if alive[i]:
            if t != i:
                for j in range(A.shape[0]):
                    A[j, t] = A[j, i]
            t += 1


@njit(cache=True, nogil=True, _nrt=False, no_cpython_wrapper=True)
def _compact(m, alive, idx, WT, KNT, KOT):
    """Compact (stably) the working copies to their alive records; returns their number."""
    _compact_rows(WT, alive, m)
    _compact_rows(KNT, alive, m)
    _compact_rows(KOT, alive, m)
    t = 0
    for i in range(m):
        if alive[i]:
            idx[t] = idx[i]
            alive[t] = True
            t += 1
    return t


@njit(cache=True, nogil=True, _nrt=False, no_cpython_wrapper=True)
def _centroid(n_alive, csum, cnt_n, cnt_o, cen, mode, med):
    """The remaining records' centroid: means, modes (smallest code on ties), lower medians."""
    for j in range(cen.shape[0]):
        cen[j] = csum[j] / n_alive
    for j in range(mode.shape[0]):
        best = -1
        bm = 0
        for lv in range(cnt_n.shape[1]):
            if cnt_n[j, lv] > best:
                best = cnt_n[j, lv]
                bm = lv
        mode[j] = bm
    half = (n_alive - 1) // 2
    for j in range(med.shape[0]):
        acc = 0
        for lv in range(cnt_o.shape[1]):
            acc += cnt_o[j, lv]
            if acc > half:
                med[j] = lv
                break


# A numba kernel: its arrays come one by one (no objects in nopython mode).
@njit(cache=True, nogil=True, _nrt=False, no_cpython_wrapper=True)
def _take(q, bi, k, g, gr, alive, labels, idx, WT, KNT, KOT, csum, cnt_n, cnt_o):
    """Group ``g`` = record ``q`` and its k-1 nearest ``bi[:k-1]``: label them, take them
    out of the working records and of the running sums and counts."""
    gr[0] = q
    for t in range(k - 1):
        gr[t + 1] = bi[t]
    for t in range(k):
        i = gr[t]
        alive[i] = False
        labels[idx[i]] = g
        for j in range(WT.shape[0]):
            csum[j] -= WT[j, i]
        for j in range(KNT.shape[0]):
            cnt_n[j, KNT[j, i]] -= 1
        for j in range(KOT.shape[0]):
            cnt_o[j, KOT[j, i]] -= 1


@njit(cache=True, nogil=True, _nrt=False, no_cpython_wrapper=True)
def _next_alive(s, alive, m):
    """``s`` if it is alive, else the next alive working record after it (cyclically)."""
    t = s
    while t < m and not alive[t]:
        t += 1
    if t == m:
        t = 0
        while not alive[t]:
            t += 1
    return t


@njit(cache=True, nogil=True, _nrt=False, no_cpython_wrapper=True)
def _label_rest(m, alive, labels, idx, g):
    """The last group: every remaining record gets label ``g``; returns the number of groups."""
    for i in range(m):
        if alive[i]:
            labels[idx[i]] = g
    return g + 1


@njit(cache=True, nogil=True, _nrt=False)
def mixed_mdav_core(WT, KNT, wn, KOT, co, cnt_n, cnt_o, csum, idx, alive, labels, k, bd, bi, gr, cen, mode, med,
                    D, qc, qn, qo, done):
    """Heterogeneous MDAV on working copies; writes ``labels`` (input order); returns groups.

    A numba kernel: its arrays come one by one (no allocation inside, see module doc).

    WT (pc, m) continuous coordinates, KNT (pn, m) nominal codes with weights ``wn``,
    KOT (po, m) ordinal codes with level coordinates ``co`` (po, L); ``cnt_n``/``cnt_o``
    per-level counts of the remaining records, ``csum`` their coordinate sums; ``idx``
    input index of each working record; ``alive`` working flags; ``bd``/``bi``/``gr``
    (k) scratch; ``cen``/``mode``/``med`` the centroid; ``D`` (m) distances; ``qc``,
    ``qn``, ``qo`` a query record; ``done[0]`` counts the records grouped (the progress
    display reads it).
    """
    m = WT.shape[1]
    pc = WT.shape[0]
    pn = KNT.shape[0]
    po = KOT.shape[0]
    n_alive = m
    dead = 0
    g = 0
    while n_alive > 0:
        # -- compaction (stable) when a quarter has left
        if dead * 4 > m:
            m = _compact(m, alive, idx, WT, KNT, KOT)
            dead = 0
        if n_alive < 2 * k:
            done[0] += n_alive
            return _label_rest(m, alive, labels, idx, g)
        # -- centroid: mean, modes (smallest code on ties), lower medians
        _centroid(n_alive, csum, cnt_n, cnt_o, cen, mode, med)
        # -- r: farthest from the centroid (first in input order on ties)
        _fill(D, m, WT, KNT, wn, KOT, co, cen, mode, med)
        r = -1
        dmax = -1.0
        for i in range(m):
            if alive[i] and D[i] > dmax:
                dmax = D[i]
                r = i
        three = n_alive >= 3 * k
        for step in range(2):
            q = r
            for j in range(pc):
                qc[j] = WT[j, q]
            for j in range(pn):
                qn[j] = KNT[j, q]
            for j in range(po):
                qo[j] = KOT[j, q]
            _fill(D, m, WT, KNT, wn, KOT, co, qc, qn, qo)
            # -- its k-1 nearest, and (first step) the farthest s
            nb = 0
            s = -1
            dmax = -1.0
            for i in range(m):
                if not alive[i] or i == q:
                    continue
                d = D[i]
                if d > dmax:
                    dmax = d
                    s = i
                nb = insert_nearest(bd, bi, nb, k - 1, d, i)
            _take(q, bi, k, g, gr, alive, labels, idx, WT, KNT, KOT, csum, cnt_n, cnt_o)
            g, n_alive, dead = g + 1, n_alive - k, dead + k
            done[0] += k  # records grouped: read by the progress display
            if not three:
                break  # 2k <= remaining < 3k: one group around r, the rest form the last
            r = _next_alive(s, alive, m)  # s joined r's group: the next remaining record in input order
    return g


#: Records per block of the screened scans: a block whose screened distances all miss the
#: running farthest and the running (k-1)-th nearest by the margin is skipped whole.
BLOCK = 64


@njit(cache=True, nogil=True, _nrt=False, no_cpython_wrapper=True)
def _fill32(D, m, WT, KNT, wn, KOT, co, qc, qn, qo):
    """D[:m] = :func:`_fill`'s distances in float32 (``WT``, ``wn``, ``co``, ``qc`` and ``D``
    float32): the screened distances, half the memory traffic and twice the vector width
    of float64; attributes are taken four at a time (one read and write of ``D`` per
    four), which changes the order of the float32 sum, not its error bound."""
    zero = np.float32(0.0)
    for i in range(m):
        D[i] = zero
    pc = WT.shape[0]
    j = 0
    while j + 4 <= pc:
        q0, q1, q2, q3 = qc[j], qc[j + 1], qc[j + 2], qc[j + 3]
        r0, r1, r2, r3 = WT[j], WT[j + 1], WT[j + 2], WT[j + 3]
        for i in range(m):
            t0 = r0[i] - q0
            t1 = r1[i] - q1
            t2 = r2[i] - q2
            t3 = r3[i] - q3
            D[i] += (t0 * t0 + t1 * t1) + (t2 * t2 + t3 * t3)
        j += 4
    while j < pc:
        q = qc[j]
        row = WT[j]
        for i in range(m):
            t = row[i] - q
            D[i] += t * t
        j += 1
    pn = KNT.shape[0]
    j = 0
    while j + 4 <= pn:
        q0, q1, q2, q3 = np.int32(qn[j]), np.int32(qn[j + 1]), np.int32(qn[j + 2]), np.int32(qn[j + 3])
        w0, w1, w2, w3 = wn[j], wn[j + 1], wn[j + 2], wn[j + 3]
        r0, r1, r2, r3 = KNT[j], KNT[j + 1], KNT[j + 2], KNT[j + 3]
        for i in range(m):
            D[i] += (((w0 if r0[i] != q0 else zero) + (w1 if r1[i] != q1 else zero))
                     + ((w2 if r2[i] != q2 else zero) + (w3 if r3[i] != q3 else zero)))
        j += 4
    while j < pn:
        q = np.int32(qn[j])  # codes are int32: a 32-bit compare, as wide as the float32 lanes
        w = wn[j]
        row = KNT[j]
        for i in range(m):
            D[i] += w if row[i] != q else zero
        j += 1
    _add_ordinal(D, m, KOT, co, qo)


@njit(cache=True, nogil=True, _nrt=False, no_cpython_wrapper=True, fastmath={"nnan", "nsz"})
def _block_range(D, b0, b1):
    """(min, max) of D[b0:b1] (b0 < b1). The screened distances are finite and non-negative
    (the wrapper keeps the coordinates far from float32's range), so the no-NaN and
    no-signed-zero flags, which let the compiler use vector min/max, do not change it."""
    lo = D[b0]
    hi = D[b0]
    for i in range(b1 - b0):
        x = D[b0 + i]
        lo = x if x < lo else lo
        hi = x if x > hi else hi
    return lo, hi


@njit(cache=True, nogil=True, _nrt=False, no_cpython_wrapper=True)
def _exact(i, WT, KNT, wn, KOT, co, qc, qn, qo):
    """The float64 distance of working record ``i`` to the query, summed in :func:`_fill`'s
    order, so bit for bit the value :func:`_fill` writes."""
    d = 0.0
    for j in range(WT.shape[0]):
        t = WT[j, i] - qc[j]
        d += t * t
    for j in range(KNT.shape[0]):
        d += wn[j] * (KNT[j, i] != qn[j])
    for j in range(KOT.shape[0]):
        t = co[j, KOT[j, i]] - co[j, qo[j]]
        d += t * t
    return d


@njit(cache=True, nogil=True, _nrt=False, no_cpython_wrapper=True)
def _farthest_by_order(n_alive, WT, KNT, wn, KOT, co, alive, cen, mode, med, order, dsort, nord, head, c0c, c0n,
                       c0o, st):
    """The alive record farthest from the centroid (ties: the smallest index) by the
    reference order (see :func:`mixed_mdav_screened`); leaves the new order head in
    ``st[5]`` and the records scanned in ``st[6]``.

    A numba kernel: its arrays come one by one (no objects in nopython mode)."""
    pc = WT.shape[0]
    delta = 0.0
    for j in range(pc):
        t2 = cen[j] - c0c[j]
        delta += t2 * t2
    for j in range(KNT.shape[0]):
        if mode[j] != c0n[j]:
            delta += wn[j]
    for j in range(KOT.shape[0]):
        t2 = co[j, med[j]] - co[j, c0o[j]]
        delta += t2 * t2
    delta = np.sqrt(delta)
    r = -1
    dmax = -1.0
    scanned = 0
    t = head
    while t < nord:
        i = order[t]
        if not alive[i]:
            if t == head:
                head += 1
            t += 1
            continue
        ub = np.sqrt(dsort[t]) + delta
        if ub * ub * (1.0 + 1e-9) < dmax:
            break  # no record further on can reach or tie the farthest found
        d = _exact(i, WT, KNT, wn, KOT, co, cen, mode, med)
        scanned += 1
        if d > dmax or (d == dmax and i < r):
            dmax = d
            r = i
        t += 1
    st[5] = head
    st[6] = scanned
    return r


# A numba kernel: its arrays and scratch buffers come one by one (no objects in nopython mode).
@njit(cache=True, nogil=True, _nrt=False)
def mixed_mdav_screened(WT, KNT, wn, KOT, co, WT32, wn32, co32, cnt_n, cnt_o, csum, idx, alive, labels, k, bd, bi,
                        gr, cen, mode, med, D32, qc, qn, qo, qc32, big, wsum, done, order, dsort, newpos, c0c, c0n,
                        c0o, st):
    """:func:`mixed_mdav_core` with float32 screening and exact float64 confirmation:
    the same partition (every decision is taken on the float64 distances of
    :func:`_fill`, ties by input order), about twice as fast.

    Each query of the nearest records and of the farthest from ``r`` fills the float32
    distances ``D32`` once; one scan then keeps the running farthest record and the
    running k-1 nearest (an insertion buffer) on exact distances, computed
    (:func:`_exact`) only for the records whose screened distance comes within
    ``margin`` of the current farthest or of the current (k-1)-th nearest. With
    ``u = 2^-24`` and ``P`` attributes, the screened and the exact distance differ by at
    most ``(P + 7) u (2 (|x|^2 + |q|^2) + sum wn)`` (each squared difference of rounded
    coordinates by ``6 u (|x_j| + |q_j|)^2``, each float32 addition by ``u`` of the sum,
    the float64 sum far less); ``big`` bounds ``|x|^2`` over the records (the
    continuous and ordinal coordinates), ``wsum`` is ``sum wn``; the margin doubles it.

    The record farthest from the centroid ``c`` is sought without a pass: the mixed
    distance is a squared Euclidean distance (a nominal key as its one-hot indicators
    scaled by ``sqrt(w / 2)``, the centroid's mode as its indicator), so
    ``sqrt d(x, c) <= sqrt d(x, c0) + sqrt d(c, c0)`` for a reference point ``c0`` (the
    centroid when the order was made). The records are kept in decreasing
    ``d(x, c0)`` (``order``, ``dsort``: ``st[4]`` entries from ``st[5]``); the scan
    stops at the first record whose bound, widened by a relative 1e-9 (far above any
    rounding), falls below the farthest distance found, so none after it can reach
    or tie it. When the scans since the order was made exceed the records left, the
    kernel returns 2 and the caller makes a new order around the current centroid
    (:func:`microagg_cli.methods.mixed._reference_order`); the compactions carry the
    order along (``newpos`` scratch).

    ``st`` = (groups, records left, working records, dead among them, order length,
    order head, records scanned since the order was made, 1 once the order is off: see
    :func:`_farthest_by_order`, the kernel then makes a screened pass as for the other
    queries; the groups made when the order was made) is carried between calls: when the
    scans since the order cover the records left within 64 groups, the order is turned
    off instead of made again;
    returns 0 when every record is grouped. The other arrays are those of
    :func:`mixed_mdav_core`; ``WT32``/``wn32``/``co32`` float32 copies, ``qc32`` (pc)
    float32 scratch; ``c0c``/``c0n``/``c0o`` the reference point.
    """
    pc = WT.shape[0]
    pn = KNT.shape[0]
    po = KOT.shape[0]
    P = pc + pn + po
    g = st[0]
    n_alive = st[1]
    m = st[2]
    dead = st[3]
    nord = st[4]
    head = st[5]
    scanned = st[6]
    while n_alive > 0:
        # -- compaction (stable) when an eighth has left; the order follows
        if dead * 8 > m:
            c = 0
            for i in range(m):
                if alive[i]:
                    newpos[i] = c
                    c += 1
            w = 0
            for t in range(head, nord):
                i = order[t]
                if alive[i]:
                    order[w] = newpos[i]
                    dsort[w] = dsort[t]
                    w += 1
            nord = w
            head = 0
            _compact_rows(WT32, alive, m)
            m = _compact(m, alive, idx, WT, KNT, KOT)
            dead = 0
        if n_alive < 2 * k:
            done[0] += n_alive
            st[0] = g + 1
            st[1] = 0
            _label_rest(m, alive, labels, idx, g)
            return 0
        if st[7] == 0 and scanned > st[10] * n_alive:
            if g - st[8] < st[9] and st[4] > 0:
                st[7] = 1  # an order used up within a few groups (ties): screened passes cost less
            else:
                st[0] = g
                st[1] = n_alive
                st[2] = m
                st[3] = dead
                return 2
        # -- centroid: mean, modes (smallest code on ties), lower medians
        _centroid(n_alive, csum, cnt_n, cnt_o, cen, mode, med)
        if st[7] == 1:
            # -- r: farthest from the centroid (first in input order on ties), by a pass
            qq = 0.0
            for j in range(pc):
                qc32[j] = cen[j]
                qq += cen[j] * cen[j]
            for j in range(po):
                qq += co[j, med[j]] * co[j, med[j]]
            margin = 2.0 * (P + 7) * 2.0 ** -24 * (2.0 * (big + qq) + wsum) + 1e-30
            _fill32(D32, m, WT32, KNT, wn32, KOT, co32, qc32, mode, med)
            r = -1
            dmax = -1.0
            for b0 in range(0, m, BLOCK):
                b1 = min(b0 + BLOCK, m)
                hi = _block_range(D32, b0, b1)[1]
                if hi + margin < dmax:
                    continue  # no record of the block can be farther
                for i in range(b0, b1):
                    if alive[i] and D32[i] + margin >= dmax:
                        d = _exact(i, WT, KNT, wn, KOT, co, cen, mode, med)
                        if d > dmax:
                            dmax = d
                            r = i
            nord = 0
        else:
            r = _farthest_by_order(n_alive, WT, KNT, wn, KOT, co, alive, cen, mode, med, order, dsort, nord,
                                   head, c0c, c0n, c0o, st)
            head = st[5]
            scanned += st[6]
            if st[6] * st[11] > n_alive + 64:
                if st[12]:
                    scanned = st[10] * n_alive + 1  # a long scan: a new order (or off, see above)
                else:
                    st[7] = 1  # one scan covered a large share: passes cost less from here on
        three = n_alive >= 3 * k
        for step in range(2):
            q = r
            qq = 0.0
            for j in range(pc):
                qc[j] = WT[j, q]
                qc32[j] = WT32[j, q]
                qq += qc[j] * qc[j]
            for j in range(pn):
                qn[j] = KNT[j, q]
            for j in range(po):
                qo[j] = KOT[j, q]
                qq += co[j, qo[j]] * co[j, qo[j]]
            margin = 2.0 * (P + 7) * 2.0 ** -24 * (2.0 * (big + qq) + wsum) + 1e-30
            # -- its k-1 nearest, and (first step only: the second needs none) the
            # farthest s, on exact distances
            _fill32(D32, m, WT32, KNT, wn32, KOT, co32, qc32, qn, qo)
            nb = 0
            s = -1
            dmax = -1.0
            for b0 in range(0, m, BLOCK):
                b1 = min(b0 + BLOCK, m)
                lo, hi = _block_range(D32, b0, b1)
                if (step == 1 or hi + margin < dmax) and nb == k - 1 and lo - margin > bd[k - 2]:
                    continue  # no record of the block can be farther or nearer
                for i in range(b0, b1):
                    if not alive[i] or i == q:
                        continue
                    d32 = D32[i]
                    far = step == 0 and d32 + margin >= dmax
                    near = nb < k - 1 or d32 - margin <= bd[nb - 1]
                    if not (far or near):
                        continue
                    d = _exact(i, WT, KNT, wn, KOT, co, qc, qn, qo)
                    if far and d > dmax:
                        dmax = d
                        s = i
                    nb = insert_nearest(bd, bi, nb, k - 1, d, i)
            _take(q, bi, k, g, gr, alive, labels, idx, WT, KNT, KOT, csum, cnt_n, cnt_o)
            g, n_alive, dead = g + 1, n_alive - k, dead + k
            done[0] += k  # records grouped: read by the progress display
            if not three or step == 1:
                break  # 2k <= remaining < 3k: one group around r, the rest form the last
            r = _next_alive(s, alive, m)  # s joined r's group: the next remaining record in input order
    st[0] = g
    st[1] = 0
    return 0
