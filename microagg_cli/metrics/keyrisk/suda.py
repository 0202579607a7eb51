"""SUDA2: minimal sample uniques, SUDA and DIS-SUDA scores, each key's contribution.

A set S of keys is a *minimal sample unique* (MSU) of record i when i's combination of
values on S occurs once in the file and no proper subset of S is unique for i
(Elliot, Manning, Mayes, Gurd & Bane 2005; Manning, Haglin & Keane 2008). Uniqueness
only grows with S, so it is enough that no subset of size |S| - 1 is unique. A missing
key value matches nothing (sdcMicro's ``suda2`` ignores missing items): a record is
never unique, nor part of a count, on a set holding one of its missing keys.

Scores (Elliot et al., with A keys and MSUs searched up to size m <= A): an MSU of size
s weighs w(s) = prod_{j=s}^{m-1} (A - j) (= (A - s)! when m = A, sdcMicro's
``original_scores``); the SUDA score of a record is the sum of the weights of its MSUs.
The DIS-SUDA score turns it into a probability of a correct match (Elliot 2000; Skinner
& Elliot 2002), with the sampling fraction f (``dis_fraction``), U the records unique on
every key, P the records in classes of exactly two, Dis = U f / (U f + P (1 - f)),
Q = 1 + (8 - A) / 20 and S_Q = sum over scored records of score^-Q:

    DIS_i = 1 / (1 + (U / Dis - U) / (score_i^Q * S_Q))    (0 for a score of 0)

It does not change when every weight is scaled, so it is the same for every m that
finds the same MSUs. (sdcMicro holds f and Dis in single precision, so its DIS-SUDA
scores can differ from these in the 7th significant digit.) A key's contribution is the share of the total score coming from
MSUs that hold it, in percent (they add to more than 100: an MSU holds several keys).

Complexity: one grouping (a sort of n codes) per subset of at most m keys,
sum_{s<=m} C(A, s) of them; memory O(n C(A, m - 1)) booleans for the last level.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any, Callable, Sequence

import numpy as np

from .frequencies import group_codes, subset_classes, as_codes

__all__ = ["suda2", "msu_weight", "DIS_BINS"]

#: sdcMicro's print of DIS-SUDA scores: == 0, (0, 0.1], ..., (0.6, 0.7], > 0.7
DIS_BINS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)

#: (subset of key positions, class per record (-1: missing on it), class sizes)
Visitor = Callable[[tuple[int, ...], np.ndarray, np.ndarray], None]


def msu_weight(size: int, n_keys: int, max_size: int) -> float:
    """w(s) = prod_{j=s}^{m-1} (A - j): the SUDA weight of an MSU of ``size`` keys."""
    w = 1.0
    for j in range(size, max_size):
        w *= n_keys - j
    return w


def suda2(codes: Any, *, max_size: int | None = None, dis_fraction: float = 0.01,
          names: Sequence[str] | None = None, visit: Visitor | None = None) -> dict[str, Any]:
    """MSUs up to ``max_size`` keys (default all), SUDA and DIS-SUDA scores.

    Parameters
    ----------
    codes : (n, A) key codes, -1 missing.
    max_size : largest MSU searched (1..A; default A).
    dis_fraction : the sampling fraction f of the DIS score (sdcMicro's ``DisFraction``).
    names : key names for the per-key output (default ``"0"``, ``"1"``...).
    visit : called with every subset's classes as they are computed (the combinations
        table uses it to share the groupings).

    Returns
    -------
    dict: ``score``, ``dis_score`` ((n,) float), ``msu_count`` ((n, m) int, MSUs of each
    size per record), ``contribution`` ((n, A) share of each record's score per key),
    ``per_key`` ([{"key", "contribution", "msus"}]: percent of the total score, MSUs
    holding the key), ``msus_by_size``, ``records_with_msu``, ``dis``, ``unique_records``,
    ``pair_records``, ``max_size``, ``dis_fraction``, ``dis_table`` (sdcMicro's bins).

    Examples
    --------
    >>> r = suda2([[0, 0], [0, 1], [1, 1], [1, 1]])
    >>> r["msu_count"].tolist()
    [[1, 0], [0, 1], [0, 0], [0, 0]]
    >>> r["score"].tolist()
    [1.0, 1.0, 0.0, 0.0]
    """
    c = as_codes(codes)
    n, A = c.shape
    m = A if max_size is None else int(max_size)
    if not 1 <= m <= max(A, 1):
        raise ValueError(f"max_size must be in 1..{A}, got {max_size}")
    if not 0.0 < dis_fraction < 1.0:
        raise ValueError(f"dis_fraction must be in (0, 1), got {dis_fraction}")
    names = [str(j) for j in range(A)] if names is None else list(names)
    weights = np.array([msu_weight(s, A, m) for s in range(1, m + 1)])
    msu_count = np.zeros((n, m), dtype=np.int64)
    contribution = np.zeros((n, A))
    key_msus = np.zeros(A, dtype=np.int64)
    previous: dict[tuple[int, ...], np.ndarray] = {}
    for s in range(1, m + 1):
        level: dict[tuple[int, ...], np.ndarray] = {}
        for S in combinations(range(A), s):
            cls, sizes = subset_classes(c, S)
            if visit is not None:
                visit(S, cls, sizes)
            unique = np.zeros(n, dtype=bool)
            inside = cls >= 0
            unique[inside] = sizes[cls[inside]] == 1
            if s < m:
                level[S] = unique
            msu = unique
            if s > 1:
                msu = unique.copy()
                for T in combinations(S, s - 1):
                    msu &= ~previous[T]
            hit = np.flatnonzero(msu)
            if hit.size:
                msu_count[hit, s - 1] += 1
                for v in S:
                    contribution[hit, v] += weights[s - 1]
                    key_msus[v] += hit.size
        previous = level
    score = msu_count @ weights
    scored = score > 0
    contribution[scored] /= score[scored, None]
    # U and P over every key, a missing value being a category of its own (sdcMicro)
    cls_all, n_all = group_codes(c)
    sizes_all = np.bincount(cls_all, minlength=n_all)
    U = int((sizes_all == 1).sum())
    P = int(2 * (sizes_all == 2).sum())
    Q = 1.0 + (8.0 - A) / 20.0
    dis_score = np.zeros(n)
    dis = None
    if U > 0:
        dis = U * dis_fraction / (U * dis_fraction + P * (1.0 - dis_fraction))
        sq = score[scored] ** Q
        adj = float((1.0 / sq).sum())
        dis_score[scored] = 1.0 / (1.0 + (U / dis - U) / (sq * adj))
    total = float(score.sum())
    per_key = [{"key": names[v],
                "contribution": (100.0 * float((contribution[:, v] * score).sum()) / total) if total else 0.0,
                "msus": int(key_msus[v])} for v in range(A)]
    edges = np.array(DIS_BINS)
    table = [{"interval": "== 0", "records": int((dis_score == 0).sum())}]
    for lo, hi in zip(edges[:-1], edges[1:]):
        table.append({"interval": f"({lo:.1f}, {hi:.1f}]",
                      "records": int(((dis_score > lo) & (dis_score <= hi)).sum())})
    table.append({"interval": "> 0.7", "records": int((dis_score > edges[-1]).sum())})
    return {
        "score": score, "dis_score": dis_score, "msu_count": msu_count, "contribution": contribution,
        "per_key": per_key,
        "msus_by_size": [int(x) for x in msu_count.sum(axis=0)],
        "records_with_msu": int(scored.sum()),
        "unique_records": U, "pair_records": P, "dis": dis, "q": Q,
        "max_size": m, "n_keys": A, "dis_fraction": float(dis_fraction),
        "weights": [float(w) for w in weights],
        "dis_table": table,
    }
