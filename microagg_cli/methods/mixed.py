"""Heterogeneous microaggregation: continuous, ordinal and nominal keys grouped together.

Domingo-Ferrer & Torra (2005), "Ordinal, continuous and heterogeneous k-anonymity
through microaggregation", Data Mining and Knowledge Discovery 11(2):195-212: MDAV
runs on a distance that adds one term per attribute type, and each group is replaced
by its centroid -- the mean of the continuous attributes, the median category of the
ordinal ones, the mode of the nominal ones. Every record of a group is then released
with the same row over all those attributes, so every class of identical released rows
is a union of groups and holds at least k records.

The squared distance between records (or a record and a centroid) ``x`` and ``y``::

    d2(x, y) = w_c * sum_continuous (z_x - z_y)^2
             + w_o * sum_ordinal (u_x - u_y)^2
             + w_n * sum_nominal 2 [x != y] / h

with ``z`` the z-scores (population sd), ``u`` the ordinal categories' coordinates
(:func:`ordinal_coordinates`: the z-score of each category's mid-rank among the
records, so an ordinal key counts like a continuous one measured by rank) and
``[x != y]`` the 0/1 mismatch, standardised per key like a z-score: divided by half the
key's Gini-Simpson index ``h = 1 - sum_c p_c^2`` (the chance that two records drawn at
random differ), so that, as for a z-scored column, two random records differ by 2 on
average. ``w_c``, ``w_o``, ``w_n`` are the role weights (:data:`DEFAULT_WEIGHTS`); the
categorical weight is 2 by default: on ``household.csv`` (8 categorical and 4
continuous keys) it changes fewer categories than MDAV on z-scored one-hot indicators
while losing less numeric information (``benchmarks/mixed_vs_gower.py``); MDAV on 0/1
indicators loses less numeric information than it and changes three times as many
categories, and only weights of 0.3 to 0.5 beat that one on both losses.

One-hot coding with every indicator scaled by ``sqrt(w_n / h)`` gives the same
record-to-record distances (two different categories differ in two indicators), but as
many coordinates as categories; the kernel compares codes instead, so a key of 100
categories costs what one continuous column costs.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from ..errors import InvalidParameterError
from ..partition import aggregate_codes, canonical_labels
from ._common import check_k

__all__ = ["prepare", "DEFAULT_WEIGHTS", "ROLES", "MIXED_METHODS", "check_weights", "ordinal_coordinates", "mixed_mdav",
           "mixed_objective", "first_codes", "REFERENCE"]

#: The roles of a mixed distance and their default weights (see the module doc).
DEFAULT_WEIGHTS: dict[str, float] = {"continuous": 1.0, "ordinal": 1.0, "categorical": 2.0}
ROLES = tuple(DEFAULT_WEIGHTS)
#: Methods that group mixed keys (others refuse ``--categorical`` / ``--ordinal``).
MIXED_METHODS = ("mdav", "ils")
REFERENCE = ("Domingo-Ferrer & Torra (2005), Ordinal, continuous and heterogeneous k-anonymity through "
             "microaggregation, Data Mining and Knowledge Discovery 11(2)")


def check_weights(weights: Mapping[str, float] | None) -> dict[str, float]:
    """The role weights with defaults filled in; :class:`InvalidParameterError` for an
    unknown role or a weight that is not a finite number >= 0 (continuous: > 0)."""
    out = dict(DEFAULT_WEIGHTS)
    for role, value in dict(weights or {}).items():
        if role not in DEFAULT_WEIGHTS:
            raise InvalidParameterError(
                f"--mixed-weights: unknown role {role!r} (use {', '.join(ROLES)})")
        try:
            w = float(value)
        except (TypeError, ValueError):
            raise InvalidParameterError(f"--mixed-weights: {role}={value!r} is not a number") from None
        if not np.isfinite(w) or w < 0 or (role == "continuous" and w == 0):
            raise InvalidParameterError(
                f"--mixed-weights: {role} must be a finite number {'> 0' if role == 'continuous' else '>= 0'}, "
                f"got {value!r}")
        out[role] = w
    return out


def first_codes(codes: np.ndarray) -> np.ndarray:
    """Renumber integer codes by first appearance (0 for the category met first)."""
    codes = np.asarray(codes, dtype=np.int64)
    _, first, inv = np.unique(codes, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    return rank[inv.reshape(-1)]


def ordinal_coordinates(codes: np.ndarray, levels: int) -> np.ndarray:
    """Coordinate of each ordinal category: the z-score of its mid-rank among the records.

    ``codes`` (n,) are the records' categories as 0..levels-1 in their order. A
    category held by records ranked a..b (1-based, ties averaged) sits at (a + b) / 2;
    the coordinates are z-scored over the records (population sd; all 0 when every
    record holds one category). Categories no record holds get the coordinate of the
    next category present below them (they are never a median, so never used).

    Examples
    --------
    >>> ordinal_coordinates(np.array([0, 0, 1, 2]), 3).round(4).tolist()
    [-0.9428, 0.4714, 1.4142]
    """
    codes = np.asarray(codes, dtype=np.int64)
    counts = np.bincount(codes, minlength=levels).astype(np.float64)
    upper = np.cumsum(counts)
    mid = upper - (counts - 1) / 2.0
    ranks = mid[codes]
    sd = ranks.std()
    coord = (mid - ranks.mean()) / sd if sd > 0 else np.zeros(levels)
    return coord


def prepare(Z: np.ndarray, nominal: np.ndarray | None, ordinal: np.ndarray | None,
            ordinal_levels: list[int] | None, weights: Mapping[str, float] | None):
    """The kernels' inputs: weighted continuous coordinates ``W``, nominal codes renumbered
    by first appearance with their mismatch weights ``wn``, ordinal codes with their
    weighted level coordinates ``co``, and the role weights."""
    n = Z.shape[0]
    w = check_weights(weights)
    W = np.ascontiguousarray(np.asarray(Z, dtype=np.float64) * np.sqrt(w["continuous"]))
    KN = np.zeros((n, 0), dtype=np.int32) if nominal is None else np.asarray(nominal)
    KO = np.zeros((n, 0), dtype=np.int32) if ordinal is None else np.asarray(ordinal)
    if KN.ndim != 2 or KN.shape[0] != n or KO.ndim != 2 or KO.shape[0] != n:
        raise InvalidParameterError("nominal/ordinal codes must be (n, q) integer arrays, one row per record")
    if (KN.size and KN.min() < 0) or (KO.size and KO.min() < 0):
        raise InvalidParameterError("category codes must be >= 0 (missing categories are handled by the caller)")
    KN = np.ascontiguousarray(np.column_stack([first_codes(KN[:, j]) for j in range(KN.shape[1])])
                              if KN.shape[1] else KN, dtype=np.int32)
    po = KO.shape[1]
    levels_o = list(ordinal_levels) if ordinal_levels is not None else [int(KO[:, j].max()) + 1 for j in range(po)]
    Lo = max(levels_o, default=1)
    co = np.zeros((po, Lo))
    for j in range(po):
        co[j, :levels_o[j]] = ordinal_coordinates(KO[:, j], levels_o[j]) * np.sqrt(w["ordinal"])
    KO = np.ascontiguousarray(KO, dtype=np.int32)
    wn = np.empty(KN.shape[1])
    for j in range(KN.shape[1]):  # a mismatch weighs 2 / Gini-Simpson index: 2 on average, as a z-score
        share = np.bincount(KN[:, j]) / n
        gini = 1.0 - float((share * share).sum())
        wn[j] = w["categorical"] * 2.0 / gini if gini > 0 else 0.0
    return W, KN, wn, KO, co, w


def mixed_mdav(
    Z: np.ndarray,
    k: int,
    *,
    nominal: np.ndarray | None = None,
    ordinal: np.ndarray | None = None,
    ordinal_levels: list[int] | None = None,
    weights: Mapping[str, float] | None = None,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Heterogeneous MDAV (Domingo-Ferrer & Torra 2005): labels of a k-partition.

    Parameters
    ----------
    Z : (n, pc) float array: the continuous keys, z-scored (pc may be 0).
    k : minimum group size, 2 <= k <= n.
    nominal : (n, pn) integer codes >= 0 of the nominal keys (any numbering).
    ordinal : (n, po) integer codes >= 0 of the ordinal keys, in the categories' order.
    ordinal_levels : number of categories of each ordinal key (default: max code + 1).
    weights : role weights ``{"continuous", "ordinal", "categorical"}``
        (:data:`DEFAULT_WEIGHTS`).
    rng : unused (MDAV is deterministic); accepted for the method contract.

    Returns
    -------
    (n,) canonical labels; every group holds k..2k-1 records.

    Notes
    -----
    MDAV-generic with the mixed distance of the module doc: while 3k or more records
    remain, r is the record farthest from the centroid (mean / median category / mode
    of the remaining records), s the one farthest from r; r's and then s's k-1 nearest
    neighbours form two groups; with 2k..3k-1 left, one group around r and the rest;
    fewer, one group. Ties go to the record first in the input; a mode tie to the
    category met first in the input. O(n^2 p / k) time, O(n p) memory: the record
    farthest from the centroid is found from a sorted reference order by the triangle
    inequality (the mixed distance is a squared Euclidean distance over one-hot keys),
    the other queries take two screened passes per pair of groups
    (:mod:`._mixed_kernels`).

    References
    ----------
    Domingo-Ferrer, J. & Torra, V. (2005). Ordinal, continuous and heterogeneous
    k-anonymity through microaggregation. Data Mining and Knowledge Discovery 11(2).

    Examples
    --------
    >>> Z = np.array([[0.0], [0.1], [0.2], [5.0], [5.1], [5.2]])
    >>> mixed_mdav(Z, 3, nominal=np.array([[0], [0], [1], [1], [1], [0]])).tolist()
    [0, 0, 0, 1, 1, 1]
    """
    Z = np.asarray(Z, dtype=np.float64)
    if Z.ndim != 2:
        raise InvalidParameterError("Z must be an (n, p) array")
    check_k(Z if Z.shape[1] else np.zeros((Z.shape[0], 1)), k)
    W, KN, wn, KO, co, _ = prepare(Z, nominal, ordinal, ordinal_levels, weights)
    return canonical_labels(_group(W, KN, wn, KO, co, int(k), screened=True))


#: The screened kernel turns its reference order off when one is used up within fewer groups.
REFERENCE_GROUPS = 64
#: A new reference order when the scans since the last one have covered this many times the
#: records left; the order is turned off when one scan covers more than 1 / REFERENCE_LONG of
#: them (at 1,000,000 records: 468 CPU s when such a scan asked for a new order instead).
REFERENCE_SCANS = 1
REFERENCE_LONG = 8
#: 1: a long scan asks for a new order (turned off only under REFERENCE_GROUPS); 0: it
#: turns the order off.
REFERENCE_RENEW = 1


def _group(W: np.ndarray, KN: np.ndarray, wn: np.ndarray, KO: np.ndarray, co: np.ndarray, k: int,
           screened: bool = True) -> np.ndarray:
    """Run the MDAV kernel on :func:`prepare`'s arrays: the float32-screened one
    (``screened``, when the coordinates are small enough for float32) or the plain
    float64 one; both give the same labels."""
    from ..progress import counter
    from ._mixed_kernels import mixed_mdav_core, mixed_mdav_screened

    n = W.shape[0]
    Ln = max([int(KN[:, j].max()) + 1 for j in range(KN.shape[1])], default=1)
    cnt_n = np.zeros((KN.shape[1], Ln), dtype=np.int64)
    for j in range(KN.shape[1]):
        cnt_n[j] = np.bincount(KN[:, j], minlength=Ln)
    cnt_o = np.zeros((KO.shape[1], co.shape[1]), dtype=np.int64)
    for j in range(KO.shape[1]):
        cnt_o[j] = np.bincount(KO[:, j], minlength=co.shape[1])
    labels = np.full(n, -1, dtype=np.int64)
    pc, pn, po = W.shape[1], KN.shape[1], KO.shape[1]
    # copies: the kernels compact them in place (the transpose of one column is a view)
    WT, KNT, KOT = W.T.copy(), KN.T.copy(), KO.T.copy()
    scratch = (np.zeros(k), np.zeros(k, dtype=np.int64), np.zeros(k, dtype=np.int64),
               np.zeros(max(pc, 1)), np.zeros(max(pn, 1), dtype=np.int64), np.zeros(max(po, 1), dtype=np.int64))
    query = (np.zeros(max(pc, 1)), np.zeros(max(pn, 1), dtype=np.int64), np.zeros(max(po, 1), dtype=np.int64))
    state = (cnt_n, cnt_o, W.sum(axis=0), np.arange(n, dtype=np.int64), np.ones(n, dtype=np.bool_), labels, k)
    # the screening margin needs |x|^2 and sum wn far from float32's range
    big = float((W * W).sum(axis=1).max(initial=0.0))
    if po:
        big = float(((W * W).sum(axis=1) + sum(co[j, KO[:, j]] ** 2 for j in range(po))).max())
    wsum = float(wn.sum())
    if screened and big < 1e30 and wsum < 1e30:
        order, dsort, newpos = np.zeros(n, dtype=np.int64), np.zeros(n), np.zeros(n, dtype=np.int64)
        c0 = (np.zeros(max(pc, 1)), np.zeros(max(pn, 1), dtype=np.int64), np.zeros(max(po, 1), dtype=np.int64))
        # groups, records left, working records, dead, order length, order head, scans since the order,
        # order off, groups when the order was made
        st = np.array([0, n, n, 0, 0, 0, n + 1, 0, 0, REFERENCE_GROUPS, REFERENCE_SCANS, REFERENCE_LONG,
                       REFERENCE_RENEW], dtype=np.int64)
        WT32 = WT.astype(np.float32)
        done = counter()
        while mixed_mdav_screened(WT, KNT, wn, KOT, co, WT32, wn.astype(np.float32), co.astype(np.float32), *state,
                                  *scratch, np.zeros(n, dtype=np.float32), *query,
                                  np.zeros(max(pc, 1), dtype=np.float32), big, wsum, done, order, dsort, newpos,
                                  *c0, st):
            _reference_order((WT, KNT, wn, KOT, co), state, st, order, dsort, c0)
    else:
        mixed_mdav_core(WT, KNT, wn, KOT, co, *state, *scratch, np.zeros(n), *query, counter())
    return labels


def _reference_order(data: tuple, state: tuple, st: np.ndarray, order: np.ndarray, dsort: np.ndarray,
                     c0: tuple) -> None:
    """A new reference order for the screened kernel: ``c0`` the current centroid (mean,
    modes with the smallest code on ties, lower medians), the alive working records in
    decreasing distance to it (``order``, ``dsort``), the scan count reset. ``data`` =
    (WT, KNT, wn, KOT, co) the working copies, ``state`` the kernel's running counts."""
    WT, KNT, wn, KOT, co = data
    cnt_n, cnt_o, csum, _idx, alive = state[:5]
    c0c, c0n, c0o = c0
    m, n_alive = int(st[2]), int(st[1])
    pc, pn, po = WT.shape[0], KNT.shape[0], KOT.shape[0]
    c0c[:pc] = csum / n_alive
    for j in range(pn):
        c0n[j] = int(np.argmax(cnt_n[j]))
    for j in range(po):
        c0o[j] = int(np.searchsorted(np.cumsum(cnt_o[j]), (n_alive - 1) // 2, side="right"))
    rows = np.flatnonzero(alive[:m])
    d = np.zeros(rows.size)
    for j in range(pc):
        d += (WT[j, rows] - c0c[j]) ** 2
    for j in range(pn):
        d += wn[j] * (KNT[j, rows] != c0n[j])
    for j in range(po):
        d += (co[j, KOT[j, rows]] - co[j, c0o[j]]) ** 2
    sort = np.argsort(-d, kind="stable")
    order[:rows.size] = rows[sort]
    dsort[:rows.size] = d[sort]
    st[4], st[5], st[6], st[8] = rows.size, 0, 0, st[0]


def mixed_objective(
    Z: np.ndarray,
    labels: np.ndarray,
    *,
    nominal: np.ndarray | None = None,
    ordinal: np.ndarray | None = None,
    ordinal_levels: list[int] | None = None,
    weights: Mapping[str, float] | None = None,
) -> float:
    """The mixed within-group dissimilarity of a partition: the sum over records of the
    squared mixed distance (module doc) to their group's centroid (mean, median
    category, mode). For continuous keys alone it is the within-group SSE.

    Examples
    --------
    Two groups of a z-scored column (SSE 2 + 2) and a nominal key whose one mismatch
    (record 1 against its group's mode 0) costs the categorical weight 2 over half the
    key's Gini-Simpson index (1 - 0.25**2 - 0.75**2) / 2 = 0.1875:

    >>> Z = np.array([[0.0], [2.0], [10.0], [12.0]])
    >>> round(mixed_objective(Z, np.array([0, 0, 1, 1]), nominal=np.array([[0], [1], [1], [1]])), 6)
    14.666667
    """
    W, KN, wn, KO, co, _ = prepare(np.asarray(Z, dtype=np.float64), nominal, ordinal, ordinal_levels, weights)
    labels = canonical_labels(np.asarray(labels))
    g = int(labels.max()) + 1
    counts = np.bincount(labels, minlength=g).astype(np.float64)
    total = 0.0
    if W.shape[1]:
        sums = np.zeros((g, W.shape[1]))
        np.add.at(sums, labels, W)
        total += float(((W - (sums / counts[:, None])[labels]) ** 2).sum())
    for j in range(KN.shape[1]):
        total += float(wn[j] * (KN[:, j] != aggregate_codes(KN[:, j], labels, ordered=False)).sum())
    for j in range(KO.shape[1]):
        med = aggregate_codes(KO[:, j], labels, ordered=True)
        total += float(((co[j, KO[:, j]] - co[j, med]) ** 2).sum())
    return total
