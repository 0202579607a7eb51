"""Distance-based fixed-size heuristics: the MDAV family and its relatives.

Every function takes a validated (n, p) float matrix -- z-scored by the caller -- and
the minimum group size ``k`` and returns canonical labels (groups numbered in order of
first appearance). Ties between equal distances go to the record that comes first in
the input.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InvalidParameterError
from ..partition import canonical_labels
from ._common import check_k, farthest, nearest_centroid_join, smallest_m, sq_dist_to
from ..progress import Shrinking, advance, phase
from ._spec import CostModel, MethodSpec, ParamSpec, method_contract
from .merge_split import merge_split, split_parts

__all__ = ["mdav", "mdav_reference", "mdav_classic", "md", "cbfs", "tfrp", "multidsort", "SPECS"]

#: From this many records on, :func:`mdav` runs the compiled tree version
#: (:func:`._fast_mdav.mdav_fast`, the identical partition); below, the straightforward
#: one finishes before numba has even loaded.
FAST_MDAV_MIN_N = 2000


def _take_group(X: np.ndarray, rem: np.ndarray, centre_pos: int, k: int) -> np.ndarray:
    """Positions (into ``rem``) of the record at ``centre_pos`` and its k-1 nearest."""
    d = sq_dist_to(X[rem], X[rem[centre_pos]])
    d[centre_pos] = -1.0  # the centre itself always belongs to its group
    return smallest_m(d, k)


def _centroid_exact(Xr: np.ndarray) -> np.ndarray:
    """Centroid for MDAV: each column's exact sum rounded once (:func:`math.fsum`), / m.

    Unlike ``Xr.mean(axis=0)`` this does not depend on the order of the records, so
    the fast MDAV can keep it up to date exactly while records leave.
    """
    m = Xr.shape[0]
    return np.array([math.fsum(Xr[:, j].tolist()) / m for j in range(Xr.shape[1])])


def _sq_dist_ltr(Xr: np.ndarray, point: np.ndarray) -> np.ndarray:
    """Squared distances for MDAV, summed strictly left to right over the columns.

    The compiled MDAV performs the very same IEEE operations in the same order, so both
    see bit-identical distances (einsum's summation order is not specified).
    """
    diff = Xr - point
    d = diff[:, 0] * diff[:, 0]
    for j in range(1, diff.shape[1]):
        d += diff[:, j] * diff[:, j]
    return d


def _take_group_ltr(X: np.ndarray, rem: np.ndarray, centre_pos: int, k: int) -> np.ndarray:
    """As :func:`_take_group`, with the distances of :func:`_sq_dist_ltr`."""
    d = _sq_dist_ltr(X[rem], X[rem[centre_pos]])
    d[centre_pos] = -1.0  # the centre itself always belongs to its group
    return smallest_m(d, k)


@method_contract
def mdav(
    X: np.ndarray, k: int, *, rng: np.random.Generator | None = None, refine: bool = False
) -> np.ndarray:
    """MDAV-generic: maximum distance to average vector.

    While at least 3k records remain: r = the record farthest from the centroid of
    the remaining records, s = the record farthest from r (chosen before r's group is
    removed); r and its k-1 nearest form a group, then s and its k-1 nearest among the
    rest. With 2k..3k-1 left, one more group around the record farthest from the
    centroid; the last k..2k-1 records form the last group.

    With ``refine`` (MDAV-2 of Lin et al. 2010), the merge-and-split post-step of
    :func:`.merge_split.merge_split` follows: groups are visited in the reverse of
    their creation order, a group is dissolved when sending its records one by one to
    the nearest other centroid lowers SSE, and groups grown beyond 2k-1 records are
    re-partitioned with MDAV.

    {method contract}
    rng : unused (deterministic method); accepted for the common contract.
    refine : run the merge-and-split post-step (MDAV-2; default False).

    Returns
    -------
    labels : (n,) int64, canonical; all groups of size k except the last (k..2k-1);
        with ``refine`` groups of k..2k-1 and an SSE never above MDAV's.

    Notes
    -----
    Ties (equal distances) go to the record that comes first in the input. The
    centroid is each column's exact sum, rounded once, divided by the count; squared
    distances are summed left to right over the columns. From
    ``FAST_MDAV_MIN_N`` records on, the work is done by
    :func:`._fast_mdav.mdav_fast` (branch-and-bound queries in a k-d tree and a cone
    index, compiled with numba), which returns the identical partition; :func:`mdav_reference` is the
    straightforward O(n^2 p / k) definition. ``refine`` needs the creation order of
    the groups, which the compiled version does not return, so MDAV-2 always runs the
    straightforward loop (the same partition) and then the post-step, O(n^2 p / k) in
    all; on Census (1080 x 13) it takes about 0.1 s. Measured Census IL of MDAV-2:
    5.6571 / 7.4134 / 9.0254 / 13.9553 at k = 3 / 4 / 5 / 10 (published 5.6560 /
    7.4096 / 9.0124 / 13.9441; visiting the groups in creation order instead gives
    5.6563 / 7.4092 / 9.0148 / 13.9389, equally close, but the paper says reverse).

    References
    ----------
    Domingo-Ferrer, J. & Torra, V. (2005). Ordinal, continuous and heterogeneous
    k-anonymity through microaggregation. Data Mining and Knowledge Discovery 11(2).
    Domingo-Ferrer, J. & Mateo-Sanz, J. M. (2002). Practical data-oriented
    microaggregation for statistical disclosure control. IEEE TKDE 14(1).
    Lin, J.-L., Wen, T.-H., Hsieh, J.-C. & Chang, P.-C. (2010). Density-based
    microaggregation for statistical disclosure control. Expert Systems with
    Applications 37(4), 3256-3263 (MDAV-2).

    Examples
    --------
    >>> X = np.array([[0.0], [1.0], [2.0], [10.0], [11.0], [12.0]])
    >>> mdav(X, 3).tolist()
    [0, 0, 0, 1, 1, 1]
    >>> X = np.array([[7.0], [8.0], [9.0], [12.0], [24.0], [26.0], [28.0]])
    >>> mdav(X, 2).tolist()
    [0, 0, 1, 1, 1, 2, 2]
    >>> mdav(X, 2, refine=True).tolist()
    [0, 0, 1, 1, 2, 2, 2]
    """
    if refine:
        return merge_split(X, _mdav_creation_labels(X, k), k, split=mdav)
    if X.shape[0] >= FAST_MDAV_MIN_N:
        from ._fast_mdav import in_range, mdav_fast  # numba: loaded only when it pays

        if in_range(X):  # values of magnitude 2**1000 or more go to the reference
            return mdav_fast(X, k)
    return mdav_reference(X, k)


def mdav_reference(
    X: np.ndarray, k: int, *, rng: np.random.Generator | None = None
) -> np.ndarray:
    """MDAV-generic, the straightforward O(n^2 p / k) definition (see :func:`mdav`).

    Not registered; the fast version is tested against it.
    """
    X = np.asarray(X, dtype=np.float64)
    check_k(X, k)
    return canonical_labels(_mdav_creation_labels(X, k))


def _mdav_creation_labels(X: np.ndarray, k: int) -> np.ndarray:
    """The partition of :func:`mdav_reference`, groups numbered in creation order."""
    n = X.shape[0]
    labels = np.full(n, -1, dtype=np.int64)
    rem = np.arange(n)
    g = 0
    left = Shrinking(n)
    while rem.size >= 3 * k:
        left.now(rem.size)
        Xr = X[rem]
        r = farthest(_sq_dist_ltr(Xr, _centroid_exact(Xr)))
        s_index = rem[farthest(_sq_dist_ltr(Xr, Xr[r]))]
        grp = _take_group_ltr(X, rem, r, k)
        labels[rem[grp]] = g
        g += 1
        rem = np.delete(rem, grp)
        # if s joined r's group, the next remaining record in input order takes its place
        s = int(np.searchsorted(rem, s_index))
        grp = _take_group_ltr(X, rem, s, k)
        labels[rem[grp]] = g
        g += 1
        rem = np.delete(rem, grp)
    if rem.size >= 2 * k:
        Xr = X[rem]
        r = farthest(_sq_dist_ltr(Xr, _centroid_exact(Xr)))
        grp = _take_group_ltr(X, rem, r, k)
        labels[rem[grp]] = g
        g += 1
        rem = np.delete(rem, grp)
    labels[rem] = g
    return labels


# ---------------------------------------------------------------------------
# Shared steps of the methods below
# ---------------------------------------------------------------------------


def _remove_group(
    X: np.ndarray, labels: np.ndarray, rem: np.ndarray, centre_pos: int, k: int, g: int
) -> np.ndarray:
    """Label the record at ``rem[centre_pos]`` and its k-1 nearest in ``rem`` as group
    ``g``; return ``rem`` without them (still in input order)."""
    grp = _take_group(X, rem, centre_pos, k)
    labels[rem[grp]] = g
    advance(grp.size)  # records grouped: the progress display
    return np.delete(rem, grp)


def _position(rem: np.ndarray, labels: np.ndarray, index: int) -> int:
    """Position of record ``index`` in ``rem``; 0 (the first remaining record) when it
    has already been absorbed by a group (see the Notes of the callers)."""
    if labels[index] >= 0:
        return 0
    return int(np.searchsorted(rem, index))


def _join_one_by_one(
    X: np.ndarray, labels: np.ndarray, leftovers: np.ndarray, n_groups: int
) -> None:
    """Leftover records, in input order, each join the group whose *current* centroid
    is nearest (first group label on ties); that centroid is updated before the next
    record joins."""
    if leftovers.size == 0:
        return
    assigned = labels >= 0
    counts = np.bincount(labels[assigned], minlength=n_groups).astype(np.float64)
    sums = np.zeros((n_groups, X.shape[1]))
    np.add.at(sums, labels[assigned], X[assigned])
    for i in leftovers:
        j = farthest(-sq_dist_to(sums / counts[:, None], X[i]))
        labels[i] = j
        sums[j] += X[i]
        counts[j] += 1.0


def _group_sse(Xg: np.ndarray) -> float:
    return float(((Xg - Xg.mean(axis=0)) ** 2).sum())


# ---------------------------------------------------------------------------
# MDAV with the 2k rule
# ---------------------------------------------------------------------------


@method_contract
def mdav_classic(X: np.ndarray, k: int, *, rng: np.random.Generator | None = None) -> np.ndarray:
    """MDAV with the 2k rule (the original "classic" MDAV loop).

    While at least 2k records remain: r = the record farthest from the centroid of the
    remaining records, s = the record farthest from r (chosen before r's group is
    removed); r and its k-1 nearest form a group, then s and its k-1 nearest among the
    rest. Afterwards, k..2k-1 remaining records form one last group; fewer than k
    remaining records each join the group whose centroid is nearest.

    {method contract}
    rng : unused (deterministic method); accepted for the common contract.

    Returns
    -------
    labels : (n,) int64, canonical; groups of k, at most one group of k..2k-1 (when the
        loop ends with k..2k-1 records), or some groups of k+1..2k-1 that received
        leftovers (when it ends with fewer than k).

    Notes
    -----
    O(n^2 p / k). Ties (equal distances) go to the record that comes first in the
    input. Leftovers join the nearest centroid of the groups as they are when the loop
    ends (centroids are not updated between joins; ties go to the earlier group).
    s can only have been absorbed by r's group when every remaining record is exactly
    as far from r as s; then the first remaining record (in input order) takes its
    place, which is the farthest from r among the remaining records.

    References
    ----------
    Domingo-Ferrer, J. & Mateo-Sanz, J. M. (2002). Practical data-oriented
    microaggregation for statistical disclosure control. IEEE TKDE 14(1), 189-201.

    Examples
    --------
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0], [10.0], [11.0], [12.0]])
    >>> mdav_classic(X, 3).tolist()
    [0, 0, 0, 0, 1, 1, 1]
    """
    rem = np.arange(X.shape[0])
    labels = np.full(rem.size, -1, dtype=np.int64)
    g = 0
    while rem.size >= 2 * k:
        Xr = X[rem]
        r = farthest(sq_dist_to(Xr, Xr.mean(axis=0)))
        s_index = int(rem[farthest(sq_dist_to(Xr, Xr[r]))])
        rem = _remove_group(X, labels, rem, r, k, g)
        g += 1
        rem = _remove_group(X, labels, rem, _position(rem, labels, s_index), k, g)
        g += 1
    if rem.size >= k:
        labels[rem] = g
    else:
        nearest_centroid_join(X, labels, rem, g)
    return canonical_labels(labels)


# ---------------------------------------------------------------------------
# MD: maximum distance
# ---------------------------------------------------------------------------

#: Length of the per-record candidate lists of ``_FarthestPairs`` (memory n * 4 bytes
#: each; see ``benchmarks`` notes: 256..1024 are equally fast at 4,000 records).
_LIST_LEN = 512
#: Block size (distances) when the lists are built.
_BLOCK = 1 << 21
#: Entries of a candidate list scanned per vectorized step.
_SCAN = 16


def _sq_block(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Squared distances between the rows of ``A`` and of ``B``, shape (len(A), len(B)).

    Accumulated column by column, left to right, with element-wise operations only, so
    an entry is bit-identical to the same pair computed by :func:`_sq_pairs` (no BLAS,
    no dependence on block shape or thread count).
    """
    acc = np.zeros((A.shape[0], B.shape[0]))
    for j in range(A.shape[1]):
        t = A[:, j, None] - B[None, :, j]
        acc += t * t
    return acc


def _top_desc(d: np.ndarray, m: int) -> np.ndarray:
    """Per row of ``d``, the columns of the m largest values in decreasing order, ties
    by column (the first m of a stable sort of -d), in O(row length + m log m)."""
    rows, cols = d.shape
    if m >= cols:
        return np.argsort(-d, axis=1, kind="stable")
    # Threshold = each row's m-th largest value; keep everything above it and the
    # first (by column) of the values equal to it.
    thr = -np.partition(-d, m - 1, axis=1)[:, m - 1 : m]
    above = d > thr
    equal = d == thr
    room = m - above.sum(axis=1, keepdims=True)
    keep = above | (equal & (np.cumsum(equal, axis=1) <= room))
    idx = np.nonzero(keep)[1].reshape(rows, m)  # ascending columns per row
    order = np.argsort(-np.take_along_axis(d, idx, axis=1), axis=1, kind="stable")
    return np.take_along_axis(idx, order, axis=1)


def _sq_pairs(X: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Squared distances of the pairs (i[t], j[t]), bit-identical to :func:`_sq_block`."""
    acc = np.zeros(i.shape[0])
    for c in range(X.shape[1]):
        t = X[i, c] - X[j, c]
        acc += t * t
    return acc


class _FarthestPairs:
    """The farthest pair of a shrinking set of records, exactly, without O(n^3) work.

    Every record keeps its L farthest other records sorted by decreasing distance (ties
    by input order) and a pointer to its first partner still alive: its farthest
    remaining record. A pointer only moves forward, and only for the records whose
    partner has just been removed, so a list's scans cost O(L) between rebuilds. A list
    whose entries are all removed is rebuilt from the remaining records (exact: a
    record outside the list comes after all of its entries in the same order).
    """

    def __init__(self, X: np.ndarray) -> None:
        n = X.shape[0]
        self.X = X
        self.alive = np.ones(n, dtype=bool)
        self.L = min(n - 1, _LIST_LEN)
        self.lists = np.empty((n, self.L), dtype=np.int32 if n < 2**31 else np.int64)
        self.length = np.full(n, self.L, dtype=np.int64)
        step = max(1, _BLOCK // n)
        for s in range(0, n, step):
            e = min(n, s + step)
            d = _sq_block(X[s:e], X)
            d[np.arange(e - s), np.arange(s, e)] = -1.0  # a record is never its own partner
            self.lists[s:e] = _top_desc(d, self.L)
        self.ptr = np.zeros(n, dtype=np.int64)
        self.partner = self.lists[:, 0].astype(np.int64)
        self.dist = _sq_pairs(X, np.arange(n), self.partner)

    def pair(self, rem: np.ndarray) -> tuple[int, int]:
        """(a, b): the farthest pair of ``rem``, a before b in input order; among
        equally distant pairs the one whose first record comes first, then whose
        second record comes first."""
        # a = first record whose farthest distance is the maximum; its first farthest
        # partner b necessarily comes after it (an earlier one would itself be a).
        a = int(rem[farthest(self.dist[rem])])
        return a, int(self.partner[a])

    def remove(self, gone: np.ndarray, rem: np.ndarray) -> None:
        """Mark ``gone`` removed; move the pointers of the records of ``rem`` (the
        records still remaining) whose partner was removed."""
        self.alive[gone] = False
        rows = rem[~self.alive[self.partner[rem]]]
        cols = np.arange(_SCAN)
        while rows.size:
            start = self.ptr[rows] + 1
            idx = start[:, None] + cols
            inside = idx < self.length[rows, None]
            cand = self.lists[rows[:, None], np.minimum(idx, self.L - 1)].astype(np.int64)
            ok = inside & self.alive[cand]
            hit = ok.any(axis=1)
            first = ok.argmax(axis=1)
            h = rows[hit]
            self.ptr[h] = start[hit] + first[hit]
            self.partner[h] = cand[hit, first[hit]]
            self.dist[h] = _sq_pairs(self.X, h, self.partner[h])
            miss = rows[~hit]
            self.ptr[miss] = start[~hit] + _SCAN - 1
            exhausted = self.ptr[miss] + 1 >= self.length[miss]
            for i in miss[exhausted]:
                self._rebuild(int(i), rem)
            rows = miss[~exhausted]

    def _rebuild(self, i: int, rem: np.ndarray) -> None:
        others = rem[rem != i]
        d = _sq_block(self.X[i : i + 1], self.X[others])
        m = min(self.L, others.size)
        top = others[_top_desc(d, m)[0]]
        self.lists[i, :m] = top
        self.length[i] = m
        self.ptr[i] = 0
        self.partner[i] = top[0]
        self.dist[i] = _sq_pairs(self.X, np.array([i]), top[:1])[0]


def _grow_group(
    X: np.ndarray, labels: np.ndarray, rem: np.ndarray, centre_pos: int, k: int, g: int
) -> np.ndarray:
    """As :func:`_remove_group`, but the group grows from its seed one record at a time,
    always adding the remaining record nearest to the group's current centroid (first
    in input order on ties)."""
    free = np.ones(rem.size, dtype=bool)
    free[centre_pos] = False
    total = X[rem[centre_pos]].copy()
    for m in range(1, k):
        d = sq_dist_to(X[rem], total / m)
        d[~free] = np.inf
        j = int(np.argmin(d))
        free[j] = False
        total += X[rem[j]]
    labels[rem[~free]] = g
    advance(k)
    return rem[free]


@method_contract
def md(
    X: np.ndarray, k: int, *, rng: np.random.Generator | None = None, grow: str = "seed"
) -> np.ndarray:
    """MD: maximum distance (multivariate fixed-size microaggregation).

    While at least 2k records remain: (a, b) = the two remaining records farthest
    apart; a and its k-1 nearest remaining records form a group, then b and its k-1
    nearest among the rest. Afterwards k..2k-1 remaining records form one last group;
    fewer than k remaining records each join the group whose centroid is nearest.

    With ``grow="group"`` (MFS_MD of the comparative study) a group is not the seed
    plus its k-1 nearest records: starting from the seed, the remaining record
    nearest to the group's *current centroid* joins, one at a time, until the group
    has k records.

    {method contract}
    rng : unused (deterministic method); accepted for the common contract.
    grow : ``"seed"`` (default: the seed's k-1 nearest) or ``"group"`` (nearest to
        the growing group's centroid).

    Returns
    -------
    labels : (n,) int64, canonical; groups of k, plus one group of k..2k-1 or some
        groups of k+1..2k-1 that received leftovers.

    Notes
    -----
    **Pair rule.** a comes before b in the input; among equally distant pairs the one
    whose first record comes first wins, then the one whose second record comes first
    (the first maximum of the distance matrix in row-major order). a's group is built
    first. b can only have been absorbed by a's group when every remaining record is
    exactly as far from a as b; then the first remaining record (in input order) takes
    its place, which is the farthest from a among the remaining records. Nearest
    neighbours tie by input order; leftovers join the nearest centroid of the groups
    as they are when the loop ends (ties to the earlier group).

    **Complexity.** The straightforward algorithm recomputes the farthest pair of the
    remaining records at every step: O(n^3 p / k). Here every record keeps its L = 512
    farthest candidates sorted by decreasing distance (ties by input order) and a
    pointer to the first one still remaining, which is its farthest remaining partner;
    after a removal only the records whose partner was removed advance their pointer,
    and a record whose candidates are all gone rebuilds its list from the remaining
    records (exact, since every record outside the list comes after all of its
    entries in the same order). The pair is then the first maximum over the records'
    partner distances. Cost: O(n^2 p) for the lists plus the scans and rare rebuilds,
    O(n L) memory, and exactly the partition of the straightforward definition
    (distances are summed in one fixed order, so equal distances compare equal).
    4,000 x 11 at k=3 takes about 3 s. ``grow="group"`` costs O(n k p) per group
    (k-1 scans of the remaining records), O(n^2 p) in all. Census IL with
    ``grow="group"``: 5.4203 / 7.2171 / 8.8069 / 14.5459 at k = 3 / 4 / 5 / 10 (seed:
    5.7210 / 7.6374 / 9.0065 / 14.3965); the study reports its MFS_MD on Tarragona
    only (15.60 / 19.27 / 22.67 at k = 3 / 4 / 5, against 16.98 / 19.54 / 22.94 for
    the seed rule).

    References
    ----------
    Mateo-Sanz, J. M. & Domingo-Ferrer, J. (1999). A method for data-oriented
    multivariate microaggregation. In Statistical Data Protection '98, Eurostat,
    Luxembourg, 89-99.
    Domingo-Ferrer, J. & Mateo-Sanz, J. M. (2002). Practical data-oriented
    microaggregation for statistical disclosure control. IEEE TKDE 14(1), 189-201.

    Examples
    --------
    >>> X = np.array([[0.0], [1.0], [5.0], [9.0], [10.0], [20.0]])
    >>> md(X, 2).tolist()
    [0, 0, 1, 1, 2, 2]
    """
    if grow not in ("seed", "group"):
        raise InvalidParameterError(f"md: grow must be seed or group, got {grow!r}")
    take = _remove_group if grow == "seed" else _grow_group
    n = X.shape[0]
    labels = np.full(n, -1, dtype=np.int64)
    rem = np.arange(n)
    g = 0
    if n >= 2 * k:
        with phase("md: candidate lists of the farthest records", total=None):
            pairs = _FarthestPairs(X)
        while rem.size >= 2 * k:
            a, b = pairs.pair(rem)
            before = rem
            rem = take(X, labels, rem, int(np.searchsorted(rem, a)), k, g)
            g += 1
            rem = take(X, labels, rem, _position(rem, labels, b), k, g)
            g += 1
            if rem.size >= 2 * k:
                pairs.remove(np.setdiff1d(before, rem, assume_unique=True), rem)
    if rem.size >= k:
        labels[rem] = g
    else:
        nearest_centroid_join(X, labels, rem, g)
    return canonical_labels(labels)


# ---------------------------------------------------------------------------
# CBFS: centroid-based fixed size
# ---------------------------------------------------------------------------


@method_contract
def cbfs(X: np.ndarray, k: int, *, rng: np.random.Generator | None = None) -> np.ndarray:
    """CBFS: centroid-based fixed-size microaggregation.

    One group per step: while at least k records remain, r = the remaining record
    farthest from the centroid of the remaining records, and r with its k-1 nearest
    remaining records form a group. Each of the fewer than k records left joins the
    group whose centroid is nearest.

    {method contract}
    rng : unused (deterministic method); accepted for the common contract.

    Returns
    -------
    labels : (n,) int64, canonical; groups of k, some of k+1..2k-1 after the leftovers
        joined.

    Notes
    -----
    O(n^2 p / k). Ties (equal distances) go to the record that comes first in the
    input. Leftovers join the nearest centroid of the groups as they are when the loop
    ends (centroids are not updated between joins; ties go to the earlier group).

    References
    ----------
    Laszlo, M. & Mukherjee, S. (2005). Minimum spanning tree partitioning algorithm for
    microaggregation. IEEE TKDE 17(7), 902-911.

    Examples
    --------
    >>> X = np.array([[0.0], [1.0], [2.0], [10.0], [11.0], [12.0], [13.0]])
    >>> cbfs(X, 3).tolist()
    [0, 0, 0, 1, 1, 1, 1]
    """
    rem = np.arange(X.shape[0])
    labels = np.full(rem.size, -1, dtype=np.int64)
    g = 0
    while rem.size >= k:
        Xr = X[rem]
        r = farthest(sq_dist_to(Xr, Xr.mean(axis=0)))
        rem = _remove_group(X, labels, rem, r, k, g)
        g += 1
    nearest_centroid_join(X, labels, rem, g)
    return canonical_labels(labels)


# ---------------------------------------------------------------------------
# TFRP: two fixed reference points
# ---------------------------------------------------------------------------


def _tfrp_refine(X: np.ndarray, labels: np.ndarray, n_groups: int, k: int) -> np.ndarray:
    """TFRP's enhancement step on creation-order labels 0..n_groups-1 (see tfrp)."""
    members = [np.flatnonzero(labels == g) for g in range(n_groups)]
    sums = np.array([X[m].sum(axis=0) for m in members])
    counts = np.array([m.size for m in members], dtype=np.float64)
    sse = np.array([_group_sse(X[m]) for m in members])
    alive = np.ones(n_groups, dtype=bool)
    for g in range(n_groups - 1, -1, -1):
        others = np.flatnonzero(alive)
        others = others[others != g]
        if others.size == 0:
            continue
        cents = sums[others] / counts[others, None]
        Xg = X[members[g]]
        # Each record's nearest other centroid (centroids before any move; first
        # group on ties), all records moving together.
        target = others[np.array([farthest(-sq_dist_to(cents, x)) for x in Xg])]
        delta = -sse[g]
        new_sse = {}
        scale = sse[g]
        for h in np.unique(target):
            joined = np.concatenate([members[h], members[g][target == h]])
            new_sse[h] = _group_sse(X[joined])
            delta += new_sse[h] - sse[h]
            scale += new_sse[h]
        # Strict decrease, beyond rounding noise, so that refining never raises SSE.
        if delta < -1e-12 * max(scale, 1e-300):
            for h, value in new_sse.items():
                moved = members[g][target == h]
                members[h] = np.concatenate([members[h], moved])
                sums[h] += X[moved].sum(axis=0)
                counts[h] += moved.size
                sse[h] = value
            alive[g] = False
    # Splitting never raises SSE (a group's SSE is at least the sum of its parts'
    # SSEs); mdav gives parts of k..2k-1.
    return split_parts(X, (np.sort(members[g]) for g in np.flatnonzero(alive)), k, mdav)


@method_contract
def tfrp(
    X: np.ndarray, k: int, *, rng: np.random.Generator | None = None, refine: bool = False
) -> np.ndarray:
    """TFRP: microaggregation around two fixed reference points.

    g1 is the point whose every coordinate is the smallest value of the (z-scored)
    block, g2 the point whose every coordinate is the largest; they never move. While
    at least k records remain: r = the remaining record farthest from g1 forms a group
    with its k-1 nearest remaining records; then, if at least k records still remain,
    s = the remaining record farthest from g2 does the same. The fewer than k records
    left join, one by one in input order, the group whose centroid is nearest (the
    centroid is updated after each join).

    With ``refine`` (TFRP-2), the enhancement step follows: groups are visited in
    reverse creation order, and a group is dissolved when moving each of its records to
    the nearest other group (by the centroids before the move) lowers SSE; then every
    group of 2k or more records is split with :func:`mdav`.

    {method contract}
    rng : unused (deterministic method); accepted for the common contract.
    refine : run the enhancement step (default False).

    Returns
    -------
    labels : (n,) int64, canonical; groups of k..2k-1 (without ``refine`` every group
        has k records except those that received leftovers).

    Notes
    -----
    O(n^2 p / k) for the grouping; the enhancement step costs O(n^2 p / k) more. Ties
    (equal distances) go to the record that comes first in the input; a leftover or a
    moved record equally near two groups joins the earlier-created one. A dissolution
    is applied only when it lowers SSE by more than a relative 1e-12 (rounding noise),
    and splitting never raises SSE, so ``refine=True`` never gives a larger SSE than
    ``refine=False``.

    References
    ----------
    Chang, C.-C., Li, Y.-C. & Huang, W.-H. (2007). TFRP: An efficient microaggregation
    algorithm for statistical disclosure control. Journal of Systems and Software
    80(11), 1866-1878.

    Examples
    --------
    >>> X = np.array([[0.0], [1.0], [2.0], [10.0], [11.0], [12.0], [6.0]])
    >>> tfrp(X, 3).tolist()
    [0, 0, 0, 1, 1, 1, 1]
    """
    d1 = sq_dist_to(X, X.min(axis=0))  # distances to g1 and g2 never change
    d2 = sq_dist_to(X, X.max(axis=0))
    rem = np.arange(X.shape[0])
    labels = np.full(rem.size, -1, dtype=np.int64)
    g = 0
    while rem.size >= k:
        rem = _remove_group(X, labels, rem, farthest(d1[rem]), k, g)
        g += 1
        if rem.size >= k:
            rem = _remove_group(X, labels, rem, farthest(d2[rem]), k, g)
            g += 1
    _join_one_by_one(X, labels, rem, g)
    if refine:
        labels = _tfrp_refine(X, labels, g, k)
    return canonical_labels(labels)


# ---------------------------------------------------------------------------
# Multi-DSort
# ---------------------------------------------------------------------------


def _rank_sum_order(Xr: np.ndarray) -> np.ndarray:
    """Records of ``Xr`` ordered by the sum of their per-attribute ranks 1..m (ties in
    an attribute and in the sum by input order)."""
    m, p = Xr.shape
    score = np.zeros(m, dtype=np.int64)
    ranks = np.empty(m, dtype=np.int64)
    for j in range(p):
        ranks[np.argsort(Xr[:, j], kind="stable")] = np.arange(1, m + 1)
        score += ranks
    return np.argsort(score, kind="stable")


@method_contract
def multidsort(X: np.ndarray, k: int, *, rng: np.random.Generator | None = None) -> np.ndarray:
    """Multi-DSort: multi-dimensional (rank-sum) sort + pairwise-systematic clustering.

    Sort: each record's score is the sum over attributes of its rank (1..m) in that
    attribute among the records considered; records are ordered by score. Clustering:
    while at least 3k records remain, re-order the remaining records by the score
    computed on them only; f = the first and l = the last record of that order; f and
    its k-1 nearest remaining records form a group, then l and its k-1 nearest among
    the rest. With 2k..3k-1 left, re-order, and f = the first record with its k-1
    nearest form a group; the rest is the last group. Fewer than 2k left form one group.

    {method contract}
    rng : unused (deterministic method); accepted for the common contract.

    Returns
    -------
    labels : (n,) int64, canonical; groups of k, the last one k..2k-1.

    Notes
    -----
    O(n^2 p / k): each attribute is sorted once and its order narrowed to the remaining
    records at each step (:func:`multidsort_reference` sorts again at every step,
    O(n^2 p log n / k); the same partition). Ties in an attribute's ranks and in the scores are broken by
    input order; "last" is literally the last record of that order (highest score,
    the later record among equal highest scores). Nearest neighbours tie by input
    order. l can only have been absorbed by f's group in degenerate data (duplicates);
    then the last record of the same order still remaining takes its place.

    The paper reports IL = 2.0954 at k=3 on the Census file. That figure cannot be
    a z-scored IL: it is below LB_NN = 3.4438, a valid lower bound on the IL of *any*
    3-partition of Census. This implementation of the paper's description measures
    IL = 6.4644 at k=3 (k=5: 10.6954, k=10: 16.4242). The paper's figure matches
    raw units instead: run on the unstandardised Census values (distances in raw
    units) and measured on them (IL = 100 * ||X - X'||^2 / ||X - mean(X)||^2, the
    ``il_sse_raw`` of ``sdc evaluate --scale raw``), multidsort gives IL = 2.1054 at
    k=3 (z-scored IL of that partition: 13.7669). The default z-scored run measured
    on raw units gives 9.9937.

    References
    ----------
    Mahmood, A. N., Kabir, M. E. & Mustafa, A. K. (2013). New multi-dimensional sorting
    based k-anonymity microaggregation for statistical disclosure control. In
    Security and Privacy in Communication Networks (SecureComm 2012), LNICST 106,
    Springer, 256-272.

    Examples
    --------
    >>> X = np.array([[0.0], [1.0], [2.0], [10.0], [11.0], [12.0]])
    >>> multidsort(X, 2).tolist()
    [0, 0, 1, 1, 2, 2]
    """
    n = X.shape[0]
    rem = np.arange(n)
    labels = np.full(n, -1, dtype=np.int64)
    orders = _RankOrders(X)
    g = 0
    while rem.size >= 3 * k:
        score = orders.rank_sums(rem, labels)  # by position in rem
        f_pos = int(np.argmin(score))  # the first of the order: lowest score, first in input
        before = rem
        rem = _remove_group(X, labels, rem, f_pos, k, g)
        g += 1
        # the last of the same order among the records still unlabelled: highest score,
        # the later record among equal highest scores
        score[labels[before] >= 0] = -1
        l_index = int(before[np.flatnonzero(score == score.max())[-1]])
        rem = _remove_group(X, labels, rem, int(np.searchsorted(rem, l_index)), k, g)
        g += 1
    if rem.size >= 2 * k:
        f_pos = int(np.argmin(orders.rank_sums(rem, labels)))
        rem = _remove_group(X, labels, rem, f_pos, k, g)
        g += 1
    labels[rem] = g
    return canonical_labels(labels)


class _RankOrders:
    """Every attribute's stable sort order of the records, computed once and narrowed
    to the remaining records as groups leave: the ranks of :func:`_rank_sum_order` in
    O(n p) per step instead of p sorts (a record's rank among the remaining records of
    an attribute is its position in that attribute's order of all records once the
    others are left out: the same ties by input order)."""

    def __init__(self, X: np.ndarray):
        self.orders = [np.argsort(X[:, j], kind="stable") for j in range(X.shape[1])]
        self.acc = np.zeros(X.shape[0], dtype=np.int64)
        self.ranks = np.arange(1, X.shape[0] + 1, dtype=np.int64)

    def rank_sums(self, rem: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Each remaining record's sum of ranks (1..m per attribute), by position in ``rem``."""
        m = rem.size
        acc = self.acc
        acc[rem] = 0
        for j, order in enumerate(self.orders):
            if order.size != m:
                order = self.orders[j] = order[labels[order] < 0]
            acc[order] += self.ranks[:m]
        return acc[rem].copy()


def multidsort_reference(X: np.ndarray, k: int, *, rng: np.random.Generator | None = None) -> np.ndarray:
    """:func:`multidsort` as first written: every attribute sorted again at each step
    (O(n^2 p log n / k)). Not registered; the registered one is tested against it."""
    X = np.asarray(X, dtype=np.float64)
    check_k(X, k)
    rem = np.arange(X.shape[0])
    labels = np.full(rem.size, -1, dtype=np.int64)
    g = 0
    while rem.size >= 3 * k:
        ordered = rem[_rank_sum_order(X[rem])]
        f_index = int(ordered[0])
        rem = _remove_group(X, labels, rem, int(np.searchsorted(rem, f_index)), k, g)
        g += 1
        still = ordered[labels[ordered] < 0]
        l_index = int(still[-1])
        rem = _remove_group(X, labels, rem, int(np.searchsorted(rem, l_index)), k, g)
        g += 1
    if rem.size >= 2 * k:
        f_index = int(rem[_rank_sum_order(X[rem])[0]])
        rem = _remove_group(X, labels, rem, int(np.searchsorted(rem, f_index)), k, g)
        g += 1
    labels[rem] = g
    return canonical_labels(labels)


SPECS: tuple[MethodSpec, ...] = (
    MethodSpec(name="mdav", cost=CostModel(0.07, 1.5), func=mdav, summary="MDAV-generic: groups of k around the records farthest from the centroid (the default)",
               reference="Domingo-Ferrer & Torra (2005), Ordinal, continuous and heterogeneous k-anonymity through microaggregation, DMKD 11(2)",
               params=(ParamSpec("refine", "bool", False, "merge-and-split post-step (MDAV-2): dissolve groups when it lowers SSE, split groups above 2k-1"),)),
    MethodSpec(name="mdav-classic", cost=CostModel(0.8, 2.1), func=mdav_classic, summary="MDAV with the 2k rule; fewer than k leftovers join the nearest group",
               reference="Domingo-Ferrer & Mateo-Sanz (2002), Practical data-oriented microaggregation for statistical disclosure control, IEEE TKDE 14(1)"),
    MethodSpec(name="md", cost=CostModel(7.9, 2.1), func=md, summary="Maximum distance: the two records farthest apart seed two groups of k",
               reference="Mateo-Sanz & Domingo-Ferrer (1999), A method for data-oriented multivariate microaggregation, Statistical Data Protection '98, Eurostat",
               params=(ParamSpec("grow", "str", "seed", "seed: a seed and its k-1 nearest; group: add the record nearest to the growing group's centroid (MFS_MD)", choices=("seed", "group")),)),
    MethodSpec(name="cbfs", cost=CostModel(2.0, 1.6), func=cbfs, summary="Centroid-based fixed size: one group of k around the record farthest from the centroid",
               reference="Laszlo & Mukherjee (2005), Minimum spanning tree partitioning algorithm for microaggregation, IEEE TKDE 17(7)"),
    MethodSpec(name="tfrp", cost=CostModel(0.52, 2.0), func=tfrp, summary="Two fixed reference points (per-attribute minima and maxima) seed groups of k",
               reference="Chang, Li & Huang (2007), TFRP: An efficient microaggregation algorithm for statistical disclosure control, Journal of Systems and Software 80(11)",
               params=(ParamSpec("refine", "bool", False, "enhancement step (TFRP-2): dissolve groups when it lowers SSE, split groups of 2k+"),)),
    MethodSpec(name="multidsort", cost=CostModel(0.7, 2.1), func=multidsort, summary="Multi-DSort: rank-sum sort, groups of k around the first and last records",
               reference="Mahmood, Kabir & Mustafa (2013), New multi-dimensional sorting based k-anonymity microaggregation for statistical disclosure control, SecureComm 2012, LNICST 106"),
)
