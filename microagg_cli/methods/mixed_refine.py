"""Local search on the mixed objective: moves and swaps between neighbouring groups.

The objective is :func:`microagg_cli.methods.mixed.mixed_objective`, the mixed
within-group dissimilarity: per group, the squared z-score deviations from the group
mean, the squared deviations of the ordinal coordinates from the median category's,
and the weighted mismatches with the group's mode. Starting from a k-partition
(heterogeneous MDAV), every record in input order tries

* a move into one of the ``NEIGHBOURS`` groups whose centroids are nearest to it (above
  ``FULL_SCAN`` records, among the ``WINDOW`` groups on either side of its own in the
  order of the groups' MDAV centroids projected on the first principal axis of the
  continuous keys), when
  its own group keeps at least k records and the receiving one stays below 2k;
* a swap with a record of one of those groups (sizes unchanged: MDAV's groups mostly
  hold exactly k records, so moves alone rarely apply);

and takes the best change that lowers the objective (each group's cost recomputed
exactly, modes and medians included). Passes repeat until one changes nothing or
``MAX_PASSES`` are done. The objective never increases, every group keeps >= k
records, and the result is deterministic (no randomness: first-improvement order is
the input order, ties keep the current partition). This is the descent step of an
iterated local search (Lourenco, Martin & Stuetzle 2003) without kicks: on mixed data
it already lowers both the numeric loss and the share of changed categories of the
heterogeneous MDAV start.

Cost: O(n g p) per pass for the nearest centroids (g groups; O(n W p) above
``FULL_SCAN`` records), O(n G k^2 p) for the moves and swaps; above ``MAX_RECORDS``
records (per stratum) the search is skipped.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .._jit import njit
from .._select import insert_nearest
from ..errors import InvalidParameterError
from ..partition import canonical_labels
from .mixed import prepare

__all__ = ["mixed_local_search", "NEIGHBOURS", "FULL_SCAN", "WINDOW", "MAX_PASSES", "MAX_RECORDS"]

#: Groups (by nearest centroid) a record may move or swap into.
NEIGHBOURS = 6
#: Passes over the records at most.
MAX_PASSES = 20
#: Up to this many records, a record's ``NEIGHBOURS`` nearest groups are sought among all
#: groups; above, among the ``WINDOW`` groups on either side of its own in the order of
#: the groups' projections on the first principal axis (linear cost per pass).
FULL_SCAN = 5000
WINDOW = 64
#: Above this many records the search is skipped: the MDAV partition is returned as it is.
MAX_RECORDS = 50000


@njit(cache=True, nogil=True, _nrt=False, no_cpython_wrapper=True)
def _group_cost(members, size, W, KN, wn, KO, co, cnt, cnt_o, mean):
    """Mixed dissimilarity of the records ``members[:size]`` to their centroid."""
    pc = W.shape[1]
    cost = 0.0
    for j in range(pc):
        s = 0.0
        for t in range(size):
            s += W[members[t], j]
        mean[j] = s / size
    for t in range(size):
        i = members[t]
        for j in range(pc):
            d = W[i, j] - mean[j]
            cost += d * d
    for j in range(KN.shape[1]):
        best = 0
        for t in range(size):
            cnt[KN[members[t], j]] += 1
        for t in range(size):
            c = cnt[KN[members[t], j]]
            if c > best:
                best = c
        for t in range(size):
            cnt[KN[members[t], j]] = 0
        cost += wn[j] * (size - best)
    half = (size - 1) // 2
    for j in range(KO.shape[1]):
        for t in range(size):
            cnt_o[KO[members[t], j]] += 1
        acc = 0
        med = 0
        for lv in range(cnt_o.shape[0]):
            acc += cnt_o[lv]
            if acc > half:
                med = lv
                break
        for t in range(size):
            cnt_o[KO[members[t], j]] = 0
            d = co[j, KO[members[t], j]] - co[j, med]
            cost += d * d
    return cost


@njit(cache=True, nogil=True, _nrt=False)
def _search(W, KN, wn, KO, co, labels, k, n_groups, neighbours, max_passes,
            members, sizes, cen, modes, cost, near, neard, a_buf, b_buf, cnt, cnt_o, mean, order, rank, window):
    """Moves and swaps (see module doc); ``members`` (g, 2k) and ``sizes`` are the groups.

    A numba kernel: its arrays and scratch buffers come one by one (no allocation inside)."""
    n = W.shape[0]
    pc = W.shape[1]
    pn = KN.shape[1]
    for g in range(n_groups):
        cost[g] = _group_cost(members[g], sizes[g], W, KN, wn, KO, co, cnt, cnt_o, mean)
    passes = 0
    for _ in range(max_passes):
        passes += 1
        changed = 0
        # centroids (means and modes; ordinal keys enter through the exact costs only)
        for g in range(n_groups):
            for j in range(pc):
                s = 0.0
                for t in range(sizes[g]):
                    s += W[members[g, t], j]
                cen[g, j] = s / sizes[g]
            for j in range(pn):
                best = 0
                bm = 0
                for t in range(sizes[g]):
                    cnt[KN[members[g, t], j]] += 1
                for t in range(sizes[g]):
                    v = KN[members[g, t], j]
                    if cnt[v] > best or (cnt[v] == best and v < bm):
                        best = cnt[v]
                        bm = v
                for t in range(sizes[g]):
                    cnt[KN[members[g, t], j]] = 0
                modes[g, j] = bm
        for i in range(n):
            a = labels[i]
            # the nearest group centroids other than its own, among the groups next to it
            # along the first principal axis
            nb = 0
            lo = rank[a] - window if rank[a] > window else 0
            hi = rank[a] + window + 1 if rank[a] + window + 1 < n_groups else n_groups
            for u in range(lo, hi):
                g = order[u]
                if g == a:
                    continue
                d = 0.0
                for j in range(pc):
                    t2 = W[i, j] - cen[g, j]
                    d += t2 * t2
                for j in range(pn):
                    if KN[i, j] != modes[g, j]:
                        d += wn[j]
                nb = insert_nearest(neard, near, nb, neighbours, d, g)
            ia = 0
            for t in range(sizes[a]):
                if members[a, t] == i:
                    ia = t
            best_gain = 1e-9 * (1.0 + cost[a])
            best_b = -1
            best_j = -1
            best_ca = 0.0
            best_cb = 0.0
            for u in range(nb):
                b = near[u]
                # a move of i into b
                if sizes[a] > k and sizes[b] < 2 * k - 1:
                    na = np.int64(0)  # int64, not a literal: _group_cost compiled once
                    for t in range(sizes[a]):
                        if t != ia:
                            a_buf[na] = members[a, t]
                            na += 1
                    for t in range(sizes[b]):
                        b_buf[t] = members[b, t]
                    b_buf[sizes[b]] = i
                    ca = _group_cost(a_buf, na, W, KN, wn, KO, co, cnt, cnt_o, mean)
                    cb = _group_cost(b_buf, sizes[b] + 1, W, KN, wn, KO, co, cnt, cnt_o, mean)
                    gain = cost[a] + cost[b] - ca - cb
                    if gain > best_gain:
                        best_gain, best_b, best_j, best_ca, best_cb = gain, b, -1, ca, cb
                # swaps of i with each member of b
                for tb in range(sizes[b]):
                    for t in range(sizes[a]):
                        a_buf[t] = members[a, t]
                    a_buf[ia] = members[b, tb]
                    for t in range(sizes[b]):
                        b_buf[t] = members[b, t]
                    b_buf[tb] = i
                    ca = _group_cost(a_buf, sizes[a], W, KN, wn, KO, co, cnt, cnt_o, mean)
                    cb = _group_cost(b_buf, sizes[b], W, KN, wn, KO, co, cnt, cnt_o, mean)
                    gain = cost[a] + cost[b] - ca - cb
                    if gain > best_gain:
                        best_gain, best_b, best_j, best_ca, best_cb = gain, b, tb, ca, cb
            if best_b < 0:
                continue
            b = best_b
            if best_j < 0:  # move
                members[a, ia] = members[a, sizes[a] - 1]
                sizes[a] -= 1
                members[b, sizes[b]] = i
                sizes[b] += 1
            else:  # swap
                j2 = members[b, best_j]
                members[a, ia] = j2
                members[b, best_j] = i
                labels[j2] = a
            labels[i] = b
            cost[a] = best_ca
            cost[b] = best_cb
            changed += 1
        if changed == 0:
            break
    return passes


def mixed_local_search(
    Z: np.ndarray,
    labels: np.ndarray,
    k: int,
    *,
    nominal: np.ndarray | None = None,
    ordinal: np.ndarray | None = None,
    ordinal_levels: list[int] | None = None,
    weights: Mapping[str, float] | None = None,
    params: Mapping[str, Any] | None = None,
    seed: Any = None,
) -> np.ndarray:
    """Improve a k-partition of mixed records by moves and swaps (module doc).

    Parameters
    ----------
    Z, nominal, ordinal, ordinal_levels, weights : as
        :func:`microagg_cli.methods.mixed.mixed_mdav`.
    labels : (n,) the starting k-partition (every group k..2k-1 records).
    k : minimum group size.
    params : the block's method parameters: none are taken (``ils``'s own parameters
        belong to its numeric search).
    seed : unused (the search is deterministic).

    Returns
    -------
    (n,) canonical labels of a k-partition whose mixed objective is at most the start's.
    """
    if params:
        raise InvalidParameterError(
            f"ils with categorical/ordinal keys runs a local search on the mixed objective and takes no "
            f"parameters (got {', '.join(sorted(params))})")
    W, KN, wn, KO, co, _ = prepare(np.asarray(Z, dtype=np.float64), nominal, ordinal, ordinal_levels, weights)
    labels = canonical_labels(np.asarray(labels)).astype(np.int64)
    g = int(labels.max()) + 1
    sizes = np.bincount(labels, minlength=g).astype(np.int64)
    if sizes.max() > 2 * k - 1 or g < 2 or labels.size > MAX_RECORDS:
        return labels
    members = np.zeros((g, 2 * k), dtype=np.int64)
    fill = np.zeros(g, dtype=np.int64)
    for i, lab in enumerate(labels):
        members[lab, fill[lab]] = i
        fill[lab] += 1
    pc, pn = W.shape[1], KN.shape[1]
    levels_n = int(KN.max()) + 1 if KN.size else 1
    nb = min(NEIGHBOURS, g - 1)
    # groups ordered along the first principal axis of the continuous coordinates
    sums = np.zeros((g, W.shape[1]))
    np.add.at(sums, labels, W)
    cen0 = sums / sizes[:, None]
    if W.shape[1]:
        _, _, vt = np.linalg.svd(W - W.mean(axis=0), full_matrices=False)
        proj = cen0 @ vt[0]
    else:
        proj = np.zeros(g)
    order = np.argsort(proj, kind="stable").astype(np.int64)
    pos = np.empty(g, dtype=np.int64)
    pos[order] = np.arange(g)
    _search(W, KN, wn, KO, co, labels, int(k), g, nb, MAX_PASSES, members, sizes,
            np.zeros((g, max(pc, 1))), np.zeros((g, max(pn, 1)), dtype=np.int64), np.zeros(g),
            np.zeros(nb, dtype=np.int64), np.zeros(nb), np.zeros(2 * k, dtype=np.int64),
            np.zeros(2 * k, dtype=np.int64), np.zeros(levels_n, dtype=np.int64),
            np.zeros(co.shape[1], dtype=np.int64), np.zeros(max(pc, 1)), order, pos,
            g if labels.size <= FULL_SCAN else WINDOW)
    return canonical_labels(labels)
