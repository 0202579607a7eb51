"""Local and iterated local search on the mixed objective: moves, swaps and kicks.

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
heterogeneous MDAV start. ``mdav`` with keys runs it (:func:`mixed_local_search`);
``ils`` with keys adds seeded kicks (:func:`mixed_ils`).

Cost: O(n g p) per pass for the nearest centroids (g groups; O(n W p) above
``FULL_SCAN`` records), O(n G k^2 p) for the moves and swaps: linear in n, so the
search runs at every size.
"""

from __future__ import annotations

import time
from typing import Any, Mapping

import numpy as np

from .._jit import njit
from .._select import insert_nearest
from ..errors import InvalidParameterError
from ..partition import canonical_labels
from .mixed import prepare

__all__ = ["mixed_local_search", "mixed_ils", "NEIGHBOURS", "FULL_SCAN", "WINDOW", "MAX_PASSES", "KICKS_PER_GROUP",
           "MAX_POOL", "MAX_SWAPS", "KICK_CHUNK"]

#: Groups (by nearest centroid) a record may move or swap into.
NEIGHBOURS = 6
#: Passes over the records at most.
MAX_PASSES = 20
#: Up to this many records, a record's ``NEIGHBOURS`` nearest groups are sought among all
#: groups; above, among the ``WINDOW`` groups on either side of its own in the order of
#: the groups' projections on the first principal axis (linear cost per pass).
FULL_SCAN = 5000
WINDOW = 64
#: ``ils`` with keys: kicks per group by default (work linear in n).
KICKS_PER_GROUP = 10
#: Largest pool of groups one kick disturbs, and most record exchanges of one kick.
MAX_POOL = 6
MAX_SWAPS = 3
#: Kicks per compiled call (the clock of a time budget is read between calls; the
#: random numbers are drawn per call, so the result does not depend on the clock).
KICK_CHUNK = 4096


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


@njit(cache=True, nogil=True, _nrt=False, no_cpython_wrapper=True)
def _best_change(i, ia, a, b, best_gain, best_b, best_j, best_ca, best_cb, members, sizes, cost, W, KN, wn, KO, co,
                 k, a_buf, b_buf, cnt, cnt_o, mean):
    """The best of (the best change so far; a move of record ``i`` (``members[a, ia]``)
    into group ``b``; its swaps with each member of ``b``): ``(gain, b, j, cost of a,
    cost of b)``, ``j`` -1 for a move. A move keeps both groups within k..2k-1.

    A numba kernel: its arrays and scratch buffers come one by one (no allocation inside)."""
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
    return best_gain, best_b, best_j, best_ca, best_cb


@njit(cache=True, nogil=True, _nrt=False, no_cpython_wrapper=True)
def _apply_change(i, ia, a, b, j, ca, cb, members, sizes, cost, labels):
    """Move record ``i`` (``members[a, ia]``) into group ``b`` (``j`` -1), or swap it with
    ``members[b, j]``; the groups' costs become ``ca`` and ``cb``."""
    if j < 0:  # move
        members[a, ia] = members[a, sizes[a] - 1]
        sizes[a] -= 1
        members[b, sizes[b]] = i
        sizes[b] += 1
    else:  # swap
        j2 = members[b, j]
        members[a, ia] = j2
        members[b, j] = i
        labels[j2] = a
    labels[i] = b
    cost[a] = ca
    cost[b] = cb


@njit(cache=True, nogil=True, _nrt=False, no_cpython_wrapper=True)
def _centre(g, members, sizes, W, KN, cen, modes, cnt):
    """Group ``g``'s mean (``cen[g]``) and modes (``modes[g]``, smallest code on ties)."""
    for j in range(W.shape[1]):
        s = 0.0
        for t in range(sizes[g]):
            s += W[members[g, t], j]
        cen[g, j] = s / sizes[g]
    for j in range(KN.shape[1]):
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


@njit(cache=True, nogil=True, _nrt=False)
def _centres(n_groups, members, sizes, W, KN, cen, modes, cnt):
    """:func:`_centre` of every group."""
    for g in range(n_groups):
        _centre(g, members, sizes, W, KN, cen, modes, cnt)


@njit(cache=True, nogil=True, _nrt=False)
def _search(W, KN, wn, KO, co, labels, k, n_groups, neighbours, max_passes,
            members, sizes, cen, modes, cost, near, neard, a_buf, b_buf, cnt, cnt_o, mean, order, rank, window,
            done):
    """Moves and swaps (see module doc); ``members`` (g, 2k) and ``sizes`` are the groups.

    A numba kernel: its arrays and scratch buffers come one by one (no allocation inside).
    ``done[0]`` counts the records visited (the progress display reads it)."""
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
            _centre(g, members, sizes, W, KN, cen, modes, cnt)
        for i in range(n):
            if i & 1023 == 1023:
                done[0] += 1024
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
                best_gain, best_b, best_j, best_ca, best_cb = _best_change(
                    i, ia, a, near[u], best_gain, best_b, best_j, best_ca, best_cb, members, sizes, cost, W, KN, wn,
                    KO, co, k, a_buf, b_buf, cnt, cnt_o, mean)
            if best_b < 0:
                continue
            _apply_change(i, ia, a, best_b, best_j, best_ca, best_cb, members, sizes, cost, labels)
            changed += 1
        if changed == 0:
            break
    return passes


@njit(cache=True, nogil=True, _nrt=False, no_cpython_wrapper=True)
def _pool_descent(pool, npool, members, sizes, cost, labels, W, KN, wn, KO, co, k, a_buf, b_buf, cnt, cnt_o,
                  mean):
    """Moves and swaps among the groups ``pool[:npool]`` until none lowers their cost
    (first record in pool order, best change for it); group sizes stay in k..2k-1.

    A numba kernel: its arrays and scratch buffers come one by one (no allocation inside)."""
    for _ in range(50):
        changed = 0
        for ua in range(npool):
            a = pool[ua]
            ia = 0
            while ia < sizes[a]:
                i = members[a, ia]
                best_gain = 1e-9 * (1.0 + cost[a])
                best_b = -1
                best_j = -1
                best_ca = 0.0
                best_cb = 0.0
                for ub in range(npool):
                    if pool[ub] != a:
                        best_gain, best_b, best_j, best_ca, best_cb = _best_change(
                            i, ia, a, pool[ub], best_gain, best_b, best_j, best_ca, best_cb, members, sizes, cost, W,
                            KN, wn, KO, co, k, a_buf, b_buf, cnt, cnt_o, mean)
                if best_b < 0:
                    ia += 1
                    continue
                _apply_change(i, ia, a, best_b, best_j, best_ca, best_cb, members, sizes, cost, labels)
                if best_j >= 0:  # a swap leaves a record at ia that was judged in b: the next one
                    ia += 1
                changed += 1
        if changed == 0:
            return


@njit(cache=True, nogil=True, _nrt=False)
def _kicks(W, KN, wn, KO, co, labels, k, n_groups, members, sizes, cen, modes, cost, order, rank, window,
           draws, max_pool, max_swaps, near, neard, saved, saved_sizes, saved_cost, pool, a_buf, b_buf, cnt,
           cnt_o, mean, done):
    """One chunk of the iterated local search (module doc), one row of ``draws`` (random
    integers >= 0) per kick; returns the number of kicks kept. ``cen``/``modes`` are kept
    up to date for the groups a kept kick changed.

    A numba kernel: its arrays and scratch buffers come one by one (no allocation inside)."""
    pc = W.shape[1]
    pn = KN.shape[1]
    kept = 0
    for it in range(draws.shape[0]):
        r = draws[it]
        a = r[0] % n_groups
        npool = 2 + r[1] % (max_pool - 1)
        # the pool: a and the groups with the nearest centres, among those next to it along the axis
        nb = 0
        lo = rank[a] - window if rank[a] > window else 0
        hi = rank[a] + window + 1 if rank[a] + window + 1 < n_groups else n_groups
        for u in range(lo, hi):
            g = order[u]
            if g == a:
                continue
            d = 0.0
            for j in range(pc):
                t2 = cen[a, j] - cen[g, j]
                d += t2 * t2
            for j in range(pn):
                if modes[a, j] != modes[g, j]:
                    d += wn[j]
            nb = insert_nearest(neard, near, nb, npool - 1, d, g)
        pool[0] = a
        for u in range(nb):
            pool[u + 1] = near[u]
        npool = nb + 1
        before = 0.0
        for u in range(npool):
            g = pool[u]
            before += cost[g]
            saved_sizes[u] = sizes[g]
            saved_cost[u] = cost[g]
            for t in range(sizes[g]):
                saved[u, t] = members[g, t]
        # the kick: 1..max_swaps exchanges of two random records of two pool groups
        swaps = 1 + r[2] % max_swaps
        for s in range(swaps):
            ua = r[3 + 3 * s] % npool
            ub = (ua + 1 + r[4 + 3 * s] % (npool - 1)) % npool
            ga = pool[ua]
            gb = pool[ub]
            ta = r[5 + 3 * s] % sizes[ga]
            tb = (r[5 + 3 * s] // 7) % sizes[gb]
            x = members[ga, ta]
            y = members[gb, tb]
            members[ga, ta] = y
            members[gb, tb] = x
            labels[x] = gb
            labels[y] = ga
        for u in range(npool):
            g = pool[u]
            cost[g] = _group_cost(members[g], sizes[g], W, KN, wn, KO, co, cnt, cnt_o, mean)
        _pool_descent(pool, npool, members, sizes, cost, labels, W, KN, wn, KO, co, k, a_buf, b_buf, cnt,
                      cnt_o, mean)
        after = 0.0
        for u in range(npool):
            after += cost[pool[u]]
        if after < before - 1e-9 * (1.0 + before):
            kept += 1
            for u in range(npool):
                _centre(pool[u], members, sizes, W, KN, cen, modes, cnt)
        else:  # undo
            for u in range(npool):
                g = pool[u]
                sizes[g] = saved_sizes[u]
                cost[g] = saved_cost[u]
                for t in range(sizes[g]):
                    members[g, t] = saved[u, t]
                    labels[saved[u, t]] = g
        done[0] += 1
    return kept


def _setup(Z, labels, k, nominal, ordinal, ordinal_levels, weights):
    """The searches' arrays for a k-partition ``labels`` (None when there is nothing to
    search: one group, or a group of 2k or more records)."""
    W, KN, wn, KO, co, _ = prepare(np.asarray(Z, dtype=np.float64), nominal, ordinal, ordinal_levels, weights)
    labels = canonical_labels(np.asarray(labels)).astype(np.int64)
    g = int(labels.max()) + 1
    sizes = np.bincount(labels, minlength=g).astype(np.int64)
    if sizes.max() > 2 * k - 1 or g < 2:
        return labels, None
    members = np.zeros((g, 2 * k), dtype=np.int64)
    order_in = np.argsort(labels, kind="stable")
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    members[labels[order_in], np.arange(labels.size) - starts[labels[order_in]]] = order_in
    pc, pn = W.shape[1], KN.shape[1]
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
    return labels, {
        "W": W, "KN": KN, "wn": wn, "KO": KO, "co": co, "g": g, "members": members, "sizes": sizes,
        "cen": np.zeros((g, max(pc, 1))), "modes": np.zeros((g, max(pn, 1)), dtype=np.int64),
        "cost": np.zeros(g), "order": order, "pos": pos,
        "window": g if labels.size <= FULL_SCAN else WINDOW,
        "cnt": np.zeros(int(KN.max()) + 1 if KN.size else 1, dtype=np.int64),
        "cnt_o": np.zeros(co.shape[1], dtype=np.int64), "mean": np.zeros(max(pc, 1)),
        "a_buf": np.zeros(2 * k, dtype=np.int64), "b_buf": np.zeros(2 * k, dtype=np.int64),
    }


def _descend(st, labels, k) -> int:
    """Run the descent (:func:`_search`) on :func:`_setup`'s state; returns the passes."""
    from ..progress import counter

    nb = min(NEIGHBOURS, st["g"] - 1)
    return int(_search(st["W"], st["KN"], st["wn"], st["KO"], st["co"], labels, int(k), st["g"], nb, MAX_PASSES,
                       st["members"], st["sizes"], st["cen"], st["modes"], st["cost"],
                       np.zeros(nb, dtype=np.int64), np.zeros(nb), st["a_buf"], st["b_buf"], st["cnt"],
                       st["cnt_o"], st["mean"], st["order"], st["pos"], st["window"], counter()))


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
    info: dict | None = None,
) -> np.ndarray:
    """Improve a k-partition of mixed records by moves and swaps (module doc).

    Parameters
    ----------
    Z, nominal, ordinal, ordinal_levels, weights : as
        :func:`microagg_cli.methods.mixed.mixed_mdav`.
    labels : (n,) the starting k-partition (every group k..2k-1 records).
    k : minimum group size.
    params : the block's method parameters: none are taken.
    seed : unused (the search is deterministic).
    info : a dict that receives ``passes`` (passes over the records).

    Returns
    -------
    (n,) canonical labels of a k-partition whose mixed objective is at most the start's.

    Notes
    -----
    Runs at every size: a pass costs O(n W p) (linear in n), about 1 s per pass and
    100,000 records of 10 keys; the passes stop when one changes nothing or after
    ``MAX_PASSES``.
    """
    if params:
        raise InvalidParameterError(
            f"mdav with categorical/ordinal keys runs heterogeneous MDAV and a local search on the mixed "
            f"objective, and takes no parameters (got {', '.join(sorted(params))})")
    labels, st = _setup(Z, labels, k, nominal, ordinal, ordinal_levels, weights)
    passes = 0 if st is None else _descend(st, labels, k)
    if info is not None:
        info["passes"] = passes
    return canonical_labels(labels)


def mixed_ils(
    Z: np.ndarray,
    labels: np.ndarray,
    k: int,
    *,
    rng: np.random.Generator,
    nominal: np.ndarray | None = None,
    ordinal: np.ndarray | None = None,
    ordinal_levels: list[int] | None = None,
    weights: Mapping[str, float] | None = None,
    iterations: int | None = None,
    time_budget: float = 0.0,
    info: dict | None = None,
) -> np.ndarray:
    """Iterated local search on the mixed objective, from a k-partition (``ils`` with keys).

    1. The descent of :func:`mixed_local_search` (moves and swaps until none helps).
    2. ``iterations`` kicks (default :data:`KICKS_PER_GROUP` per group): a pool of a
       random group and its 1..``MAX_POOL``-1 nearest groups (centres: means and modes),
       1..``MAX_SWAPS`` exchanges of two random records of two pool groups, then moves
       and swaps among the pool's groups until none lowers their cost; the change is
       kept only if the pool's mixed cost dropped, otherwise undone.

    The mixed objective (:func:`microagg_cli.methods.mixed.mixed_objective`) never
    rises, every group keeps k..2k-1 records, the number of groups may only change by
    the descent's moves (never below the start's groups' needs), and the result depends
    only on the data, k, the weights, ``iterations`` and ``rng`` (the kicks are drawn
    from it in chunks of :data:`KICK_CHUNK`).

    Parameters
    ----------
    Z, labels, k, nominal, ordinal, ordinal_levels, weights : as :func:`mixed_local_search`.
    rng : the kicks' random numbers.
    iterations : kicks (>= 0); default ``KICKS_PER_GROUP`` x the number of groups.
    time_budget : > 0: stop the kicks after that many seconds (not reproducible across
        machines; the number done goes to ``info``).
    info : a dict that receives ``passes``, ``kicks`` (done), ``kept`` and ``stopped``
        (``"iterations"`` or ``"time_budget"``).

    Returns
    -------
    (n,) canonical labels of a k-partition whose mixed objective is at most the start's.

    Notes
    -----
    A kick costs O(P k (P k) k p) for a pool of P groups (tens of microseconds at
    k = 3); the default work is linear in n.

    References
    ----------
    Lourenco, H. R., Martin, O. C. & Stuetzle, T. (2003). Iterated local search.
    Handbook of Metaheuristics, 320-353.
    """
    from ..progress import counter, phase

    if iterations is not None and iterations < 0:
        raise InvalidParameterError("ils: iterations must be >= 0")
    labels, st = _setup(Z, labels, k, nominal, ordinal, ordinal_levels, weights)
    out = {"passes": 0, "kicks": 0, "kept": 0, "stopped": "iterations"}
    if st is not None:
        out["passes"] = _descend(st, labels, k)
        g = st["g"]
        todo = KICKS_PER_GROUP * g if iterations is None else int(iterations)
        _centres(g, st["members"], st["sizes"], st["W"], st["KN"], st["cen"], st["modes"], st["cnt"])
        pool_max = min(MAX_POOL, g)
        width = 3 + 3 * MAX_SWAPS
        bufs = (np.zeros(pool_max, dtype=np.int64), np.zeros(pool_max), np.zeros((pool_max, 2 * k), dtype=np.int64),
                np.zeros(pool_max, dtype=np.int64), np.zeros(pool_max), np.zeros(pool_max, dtype=np.int64))
        t_end = time.perf_counter() + time_budget if time_budget > 0 else None
        with phase("mixed ILS kicks", total=todo, unit="kicks"):
            done = 0
            while done < todo:
                if t_end is not None and time.perf_counter() > t_end:
                    out["stopped"] = "time_budget"
                    break
                m = min(KICK_CHUNK, todo - done)
                draws = rng.integers(0, 2**62, size=(m, width), dtype=np.int64)
                out["kept"] += int(_kicks(st["W"], st["KN"], st["wn"], st["KO"], st["co"], labels, int(k), g,
                                          st["members"], st["sizes"], st["cen"], st["modes"], st["cost"],
                                          st["order"], st["pos"], st["window"], draws, pool_max, MAX_SWAPS,
                                          *bufs, st["a_buf"], st["b_buf"], st["cnt"], st["cnt_o"], st["mean"],
                                          counter()))
                done += m
        out["kicks"] = done
    if info is not None:
        info.update(out)
    return canonical_labels(labels)
