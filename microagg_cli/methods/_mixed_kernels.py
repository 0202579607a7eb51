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
"""

from __future__ import annotations

from .._jit import njit


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
    for j in range(KOT.shape[0]):
        q = co[j, qo[j]]
        row = KOT[j]
        for i in range(m):
            t = co[j, row[i]] - q
            D[i] += t * t


@njit(cache=True, nogil=True, _nrt=False)
def mixed_mdav_core(WT, KNT, wn, KOT, co, cnt_n, cnt_o, csum, idx, alive, labels, k, bd, bi, gr, cen, mode, med,
                    D, qc, qn, qo):
    """Heterogeneous MDAV on working copies; writes ``labels`` (input order); returns groups.

    A numba kernel: its arrays come one by one (no allocation inside, see module doc).

    WT (pc, m) continuous coordinates, KNT (pn, m) nominal codes with weights ``wn``,
    KOT (po, m) ordinal codes with level coordinates ``co`` (po, L); ``cnt_n``/``cnt_o``
    per-level counts of the remaining records, ``csum`` their coordinate sums; ``idx``
    input index of each working record; ``alive`` working flags; ``bd``/``bi``/``gr``
    (k) scratch; ``cen``/``mode``/``med`` the centroid; ``D`` (m) distances; ``qc``,
    ``qn``, ``qo`` a query record.
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
            t = 0
            for i in range(m):
                if alive[i]:
                    if t != i:
                        for j in range(pc):
                            WT[j, t] = WT[j, i]
                        for j in range(pn):
                            KNT[j, t] = KNT[j, i]
                        for j in range(po):
                            KOT[j, t] = KOT[j, i]
                        idx[t] = idx[i]
                    alive[t] = True
                    t += 1
            m = t
            dead = 0
        if n_alive < 2 * k:
            for i in range(m):
                if alive[i]:
                    labels[idx[i]] = g
            return g + 1
        # -- centroid: mean, modes (smallest code on ties), lower medians
        for j in range(pc):
            cen[j] = csum[j] / n_alive
        for j in range(pn):
            best = -1
            bm = 0
            for lv in range(cnt_n.shape[1]):
                if cnt_n[j, lv] > best:
                    best = cnt_n[j, lv]
                    bm = lv
            mode[j] = bm
        half = (n_alive - 1) // 2
        for j in range(po):
            acc = 0
            for lv in range(cnt_o.shape[1]):
                acc += cnt_o[j, lv]
                if acc > half:
                    med[j] = lv
                    break
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
                if nb < k - 1 or d < bd[nb - 1]:
                    pos = nb if nb < k - 1 else k - 2
                    while pos > 0 and bd[pos - 1] > d:
                        bd[pos] = bd[pos - 1]
                        bi[pos] = bi[pos - 1]
                        pos -= 1
                    bd[pos] = d
                    bi[pos] = i
                    if nb < k - 1:
                        nb += 1
            gr[0] = q
            for t in range(k - 1):
                gr[t + 1] = bi[t]
            for t in range(k):
                i = gr[t]
                alive[i] = False
                labels[idx[i]] = g
                for j in range(pc):
                    csum[j] -= WT[j, i]
                for j in range(pn):
                    cnt_n[j, KNT[j, i]] -= 1
                for j in range(po):
                    cnt_o[j, KOT[j, i]] -= 1
            g += 1
            n_alive -= k
            dead += k
            if not three:
                break  # 2k <= remaining < 3k: one group around r, the rest form the last
            if not alive[s]:  # s joined r's group: the next remaining record in input order
                t = s
                while t < m and not alive[t]:
                    t += 1
                if t == m:
                    t = 0
                    while not alive[t]:
                        t += 1
                s = t
            r = s
    return g
