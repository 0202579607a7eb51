"""FROZEN REFERENCE (the speed-up must not change a figure): microagg_cli/metrics/risk.py as it was before the speed-up.

The tests check the fast implementation against this one; do not edit it.

Disclosure-risk measures of a protected matrix against its original.

The intruder knows the original values of a set S of attributes (a *scenario*, a
tuple of column positions) and tries to link them to the protected file. Every
function takes the original ``X`` and the protected ``Xp`` as (n, p) float arrays in
original units, same records in the same order; neither is mutated. Conventions (sdc-metrics(7)):

- distances use attributes z-scored with the **original's** means and population sds
  (a constant column gets scale 1);
- a *rank* of a value y in column v is its insertion position into the sorted
  original column, ``R(y) = #{original values < y}`` (numpy ``searchsorted(...,
  side="left")``): tied original values share the smallest rank, a protected value
  equal to an original value gets that value's rank;
- when t candidates tie for the best link and the true record is among them, the
  link counts 1/t (order-independent).

:class:`RiskEvaluator` precomputes what every scenario shares (z-scores, ranks, the
PLD pair table, interval hits) so that evaluating hundreds of scenarios costs little
more than one; the module-level functions evaluate one scenario.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from microagg_cli.errors import InvalidParameterError

__all__ = [
    "DEFAULT_DR_WEIGHTS",
    "DEFAULT_SCORE_WEIGHTS",
    "DEFAULT_ID_PERCENTS",
    "PLD_MAX_ATTRIBUTES",
    "RiskEvaluator",
    "dld",
    "pld",
    "interval_disclosure",
    "sdid",
    "real_anonymity",
    "fellegi_sunter_em",
    "disclosure_risk",
    "overall_score",
    "pld_window",
    "id_window",
]

#: DR = 0.25 * DLD + 0.25 * PLD + 0.5 * ID.
DEFAULT_DR_WEIGHTS: dict[str, float] = {"dld": 0.25, "pld": 0.25, "id": 0.5}
#: score = 0.5 * IL_score + 0.5 * DR.
DEFAULT_SCORE_WEIGHTS: dict[str, float] = {"il": 0.5, "dr": 0.5}
#: ID(p) is computed for p = 1..10 percent.
DEFAULT_ID_PERCENTS: tuple[int, ...] = tuple(range(1, 11))
#: Agreement patterns are bit masks in int64.
PLD_MAX_ATTRIBUTES = 62

# relative margin between the kd-tree's distances and our fixed-order formula
_REL = 1e-9
# approximation factor of the first, pruning nearest-neighbour pass of DLD
_DLD_EPS = 3.0
# records per bounded exact query of DLD
_DLD_BATCH = 512
# EM probabilities are kept inside [_EPS, 1 - _EPS] so that every log is finite
_EPS = 1e-12


# ---------------------------------------------------------------------------------
# small helpers


def _as_pair(X: np.ndarray, Xp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X, dtype=np.float64)
    Xp = np.asarray(Xp, dtype=np.float64)
    if X.ndim != 2 or X.shape != Xp.shape:
        raise InvalidParameterError(
            f"original and protected matrices must have the same 2-D shape, "
            f"got {X.shape} and {Xp.shape}"
        )
    if X.shape[0] == 0:
        raise InvalidParameterError("risk measures need at least one record")
    return X, Xp


def _subset(attributes: Iterable[int] | None, p: int) -> tuple[int, ...]:
    if attributes is None:
        return tuple(range(p))
    sc = tuple(sorted(int(v) for v in attributes))
    if not sc or len(set(sc)) != len(sc) or sc[0] < 0 or sc[-1] >= p:
        raise InvalidParameterError(f"invalid attribute subset {list(attributes)} for {p} columns")
    return sc


def _sq_rows(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Row-wise squared Euclidean distances, summed column by column left to right.

    One fixed order of operations, so equal inputs give bit-identical distances and
    exact ties are detected exactly.
    """
    acc = np.zeros(A.shape[0])
    for j in range(A.shape[1]):
        d = A[:, j] - B[:, j]
        acc += d * d
    return acc


def pld_window(n: int, share: float = 0.01) -> int:
    """PLD rank window w = max(1, floor(share * n)).

    >>> pld_window(50_000), pld_window(99)
    (500, 1)
    """
    return max(1, int(math.floor(share * n)))


def id_window(n: int, percent: float) -> int:
    """ID rank window w = floor(percent * n / 200) (the interval covers percent % of n).

    >>> id_window(1000, 1), id_window(1000, 10), id_window(150, 1)
    (5, 50, 0)
    """
    return int(math.floor(percent * n / 200.0))


def _ranks(X: np.ndarray, Xp: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Ranks of the original and protected values in the sorted original columns."""
    n, p = X.shape
    Ro = np.empty((n, p), dtype=np.int64)
    Rp = np.empty((n, p), dtype=np.int64)
    sorted_cols = []
    for v in range(p):
        s = np.sort(X[:, v])
        sorted_cols.append(s)
        Ro[:, v] = np.searchsorted(s, X[:, v], side="left")
        Rp[:, v] = np.searchsorted(s, Xp[:, v], side="left")
    return Ro, Rp, sorted_cols


# ---------------------------------------------------------------------------------
# exact row classes (real anonymity, deduplication for DLD)


class _RowClasses:
    """Classes of protected rows that are exactly equal on an attribute subset.

    Each column is factorised once; the classes of a subset are built column by column
    (key = previous class * cardinality + column code, refactorised) and the classes of
    every prefix are kept on a stack, so scenarios visited in lexicographic order cost
    about one factorisation each.
    """

    def __init__(self, Xp: np.ndarray) -> None:
        self.n = Xp.shape[0]
        self.codes: list[np.ndarray] = []
        self.card: list[int] = []
        for v in range(Xp.shape[1]):
            uniq, inv = np.unique(Xp[:, v], return_inverse=True)
            self.codes.append(inv.astype(np.int64).ravel())
            self.card.append(int(uniq.size))
        self._stack: list[tuple[int, np.ndarray, int]] = []

    def classes(self, subset: Sequence[int]) -> tuple[np.ndarray, int]:
        """(class code of each record in 0..m-1, m) for the sorted ``subset``."""
        common = 0
        while (
            common < len(self._stack)
            and common < len(subset)
            and self._stack[common][0] == subset[common]
        ):
            common += 1
        del self._stack[common:]
        for v in subset[common:]:
            if self._stack:
                _, prev, _m = self._stack[-1]
                key = prev * self.card[v] + self.codes[v]
                uniq, inv = np.unique(key, return_inverse=True)
                self._stack.append((v, inv.astype(np.int64).ravel(), int(uniq.size)))
            else:
                self._stack.append((v, self.codes[v], self.card[v]))
        _, codes, m = self._stack[-1]
        return codes, m


def _anonymity(codes: np.ndarray, m: int, k: int | None) -> dict[str, Any]:
    n = codes.size
    counts = np.bincount(codes, minlength=m)
    out: dict[str, Any] = {
        "k_prime": n / m,
        "k_min": int(counts.min()),
        "classes": int(m),
        "share_below_k": None,
    }
    if k is not None:
        out["share_below_k"] = float(counts[counts < k].sum()) / n
    return out


def real_anonymity(
    Xp: np.ndarray, attributes: Iterable[int] | None = None, *, k: int | None = None
) -> dict[str, Any]:
    """Real anonymity of the protected file over an attribute set.

    k' = n / (number of distinct protected rows restricted to S); k_min = smallest
    class size; share_below_k = share of records in classes smaller than ``k``. Rows
    are compared by exact equality of the values.

    Returns
    -------
    ``{"k_prime": float, "k_min": int, "classes": int, "share_below_k": float|None}``

    Examples
    --------
    >>> Xp = np.array([[1.0, 5.0], [1.0, 5.0], [1.0, 6.0], [2.0, 6.0]])
    >>> real_anonymity(Xp, k=2)
    {'k_prime': 1.3333333333333333, 'k_min': 1, 'classes': 3, 'share_below_k': 0.5}
    >>> real_anonymity(Xp, [0])["k_prime"]
    2.0
    """
    Xp = np.asarray(Xp, dtype=np.float64)
    sc = _subset(attributes, Xp.shape[1])
    codes, m = _RowClasses(Xp).classes(sc)
    return _anonymity(codes, m, k)


# ---------------------------------------------------------------------------------
# DLD


def _dld_scenario(
    Zs: np.ndarray,
    Zps: np.ndarray,
    codes: np.ndarray,
    m: int,
    workers: int,
    cand_rows: np.ndarray | None = None,
) -> float:
    """DLD on already restricted z-scores; ``codes`` are exact classes of Zps rows.

    ``cand_rows`` (n, K) optionally names, per original record, K protected records
    likely to be near it: one of them strictly nearer than the true record settles
    "no credit" without a tree query (any protected records are valid candidates).
    """
    from scipy.spatial import cKDTree  # 0.15 s to import: only when used
    n = Zs.shape[0]
    # identical protected rows have identical z-scores: the true distance is to Zps[i]
    d2_true = _sq_rows(Zs, Zps)
    todo = np.arange(n)
    if cand_rows is not None and cand_rows.size:
        acc = np.zeros(cand_rows.shape)
        for j in range(Zs.shape[1]):  # same order of operations as _sq_rows
            d = Zs[:, j][:, None] - Zps[:, j][cand_rows]
            acc += d * d
        todo = np.flatnonzero(~(acc < d2_true[:, None]).any(axis=1))
        if todo.size == 0:
            return 0.0
    # one representative (first record) per distinct protected row, and multiplicities
    first = np.full(m, n, dtype=np.int64)
    np.minimum.at(first, codes, np.arange(n, dtype=np.int64))
    mult = np.bincount(codes, minlength=m).astype(np.float64)
    U = Zps[first]
    tree = cKDTree(U)
    d_true = np.sqrt(d2_true)
    # 1) approximate nearest neighbours (within a factor 1 + eps of the nearest): a
    #    real row strictly nearer than the true one settles "no credit" cheaply
    dapp, _ = tree.query(Zs[todo], k=1, eps=_DLD_EPS, workers=workers)
    cand = todo[dapp >= d_true[todo] * (1.0 - _REL)]
    # 2) exact two nearest rows for the rest, searched only up to the true distance
    #    (records in batches of similar true distance share one search bound): the
    #    true row must be nearest, and a second row within rounding of it is a
    #    near-tie settled below
    credit = np.zeros(n)
    if cand.size == 0:
        return 0.0
    cand = cand[np.argsort(d_true[cand], kind="stable")]
    near = np.empty((cand.size, 2))
    for b in range(0, cand.size, _DLD_BATCH):
        sl = slice(b, b + _DLD_BATCH)
        bound = float(d_true[cand[sl]].max()) * (1.0 + _REL) + 1e-12
        d, _ = tree.query(Zs[cand[sl]], k=2, distance_upper_bound=bound, workers=workers)
        near[sl] = np.asarray(d).reshape(-1, 2)
    dc = d_true[cand]
    beaten = near[:, 0] < dc * (1.0 - _REL)
    alone = ~beaten & np.isfinite(near[:, 0]) & (near[:, 1] > dc * (1.0 + _REL))
    credit[cand[alone]] = 1.0 / mult[codes[cand[alone]]]
    amb = cand[~beaten & ~alone]
    if amb.size:
        # near-ties: recompute every candidate's distance with the fixed formula
        radius = d_true[amb] * (1.0 + _REL) + 1e-12
        lists = tree.query_ball_point(Zs[amb], radius, workers=workers)
        sizes = np.fromiter((len(x) for x in lists), dtype=np.int64, count=amb.size)
        rows = np.fromiter((j for x in lists for j in x), dtype=np.int64, count=int(sizes.sum()))
        owner = np.repeat(np.arange(amb.size), sizes)
        d2 = _sq_rows(Zs[amb][owner], U[rows])
        ref = d2_true[amb][owner]
        closer = np.bincount(owner, weights=(d2 < ref), minlength=amb.size)
        ties = np.bincount(owner, weights=np.where(d2 == ref, mult[rows], 0.0), minlength=amb.size)
        ok = (closer == 0) & (ties > 0)
        credit[amb[ok]] = 1.0 / ties[ok]
    return 100.0 * float(credit.sum()) / n


def dld(
    X: np.ndarray, Xp: np.ndarray, attributes: Iterable[int] | None = None, *, workers: int = 1
) -> float:
    """Distance-based record linkage: percentage of originals linked correctly.

    For each original record (restricted to ``attributes``), the nearest protected
    record in Euclidean distance on attributes z-scored with the original's means and
    population sds. A link is correct when the true record is nearest; when t
    protected records tie at the minimum distance and the true one is among them, the
    link counts 1/t. DLD = 100 * correct links / n.

    Parameters
    ----------
    X, Xp : (n, p) original and protected matrices (original units).
    attributes : column positions the intruder knows (default: all).
    workers : threads for the kd-tree queries (results do not depend on it).

    Returns
    -------
    float in [0, 100].

    Notes
    -----
    Identical protected rows are merged (with their multiplicity) and put in a
    cKDTree. (:class:`RiskEvaluator`, used for many scenarios, first tries 8
    candidate protected records per original, found once on all attributes; one
    strictly nearer than the true record settles most records without a tree query.)
    A first approximate nearest-neighbour pass (a neighbour within a factor
    1 + 3 of the nearest, much cheaper in 5-10 dimensions) already finds a row
    strictly nearer than the true one for many records; the others get an exact
    two-nearest query bounded by their true distance, plus a radius query when the
    second row is within a relative 1e-9 of the true distance (a near-tie). Distances
    deciding a tie are recomputed with one fixed formula, so exact ties are exact and
    the result is exact. O(n log n) for a fixed number of attributes; memory O(n).

    References
    ----------
    Domingo-Ferrer, J. & Torra, V. (2001). A quantitative comparison of disclosure
    control methods for microdata. In Confidentiality, Disclosure and Data Access,
    North-Holland, 111-134.

    Examples
    --------
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> dld(X, X)
    100.0
    >>> dld(X, np.array([[0.5], [0.5], [2.5], [2.5]]))
    50.0
    """
    X, Xp = _as_pair(X, Xp)
    ev = RiskEvaluator(X, Xp, pld=False, dld_candidates=0, workers=workers)
    return ev.dld(_subset(attributes, X.shape[1]))


# ---------------------------------------------------------------------------------
# interval disclosure and SDID


def _id_hits(X: np.ndarray, Xp: np.ndarray, sorted_cols: list[np.ndarray],
             percents: Sequence[float]) -> np.ndarray:
    """(p, len(percents)) number of records whose original lies in the interval."""
    n, p = X.shape
    hits = np.zeros((p, len(percents)), dtype=np.int64)
    for v in range(p):
        s = sorted_cols[v]
        rho = np.searchsorted(s, Xp[:, v], side="left")
        for qi, q in enumerate(percents):
            w = id_window(n, q)
            lo = np.clip(rho - w, 0, n - 1)
            hi = np.clip(rho + w, 0, n - 1)
            hits[v, qi] = int(((s[lo] <= X[:, v]) & (X[:, v] <= s[hi])).sum())
    return hits


def interval_disclosure(
    X: np.ndarray,
    Xp: np.ndarray,
    attributes: Iterable[int] | None = None,
    *,
    percents: Sequence[float] = DEFAULT_ID_PERCENTS,
) -> dict[str, Any]:
    """Rank-based interval disclosure ID(p) and its mean.

    For attribute v and p percent: place x'_iv into the sorted original column (rank
    rho, see the module notes); the interval spans the original values with ranks in
    [rho - w, rho + w] (clipped to the column), w = floor(p n / 200); the value is
    disclosed when x_iv lies in it (by value, so ties at the ends count).
    ID(p) = 100 * disclosed / (n |S|); ID = mean over ``percents``.

    Returns
    -------
    ``{"value": mean ID, "by_percent": [ID(p), ...], "percents": [...],
    "windows": [w, ...]}``

    References
    ----------
    Mateo-Sanz, J. M., Sebe, F. & Domingo-Ferrer, J. (2004). Outlier protection in
    continuous microdata masking. PSD 2004, LNCS 3050.

    Examples
    --------
    Shifting every value by 3 ranks escapes a window of 2 ranks, except for the two
    largest values (the interval is clipped at the end of the column):

    >>> X = np.arange(400.0).reshape(-1, 1)
    >>> r = interval_disclosure(X, X + 3.0, percents=(1, 2))
    >>> r["windows"], r["by_percent"]
    ([2, 4], [0.5, 100.0])
    """
    X, Xp = _as_pair(X, Xp)
    sc = _subset(attributes, X.shape[1])
    ev = RiskEvaluator(X, Xp, pld=False, id_percents=percents)
    return ev.interval_disclosure(sc)


def sdid(
    X: np.ndarray,
    Xp: np.ndarray,
    attributes: Iterable[int] | None = None,
    *,
    factor: float = 0.05,
    max_outside: int = 0,
) -> float:
    """sdcMicro's dRisk: share of records whose original values are all close.

    A record is at risk when, for every attribute j in S, x_ij lies in
    [x'_ij - factor * s'_j, x'_ij + factor * s'_j], s'_j the sample sd (divisor n - 1)
    of the protected column. Returns the share in [0, 1] (sdcMicro's scale, not a
    percentage).

    Parameters
    ----------
    factor : half-width of the interval in protected sds (sdcMicro's ``k``).
    max_outside : a record is still at risk with up to this many attributes outside
        their interval. 0 is "every value" (SDID in sdc-metrics(7)); sdcMicro's ``dRiskWORK`` counts
        records with 0 or 1 attributes outside (``rowSums(...) %in% 0:1``), so use 1
        to reproduce its figures.

    References
    ----------
    Templ, M., Kowarik, A. & Meindl, B. (2015). Statistical disclosure control for
    micro-data using the R package sdcMicro. J. Stat. Software 67(4).

    Examples
    --------
    >>> X = np.array([[0.0], [10.0], [20.0], [30.0]])
    >>> sdid(X, X + np.array([[0.1], [0.0], [5.0], [-0.2]]))
    0.75
    """
    X, Xp = _as_pair(X, Xp)
    sc = _subset(attributes, X.shape[1])
    ev = RiskEvaluator(X, Xp, pld=False, sdid_factor=factor, sdid_max_outside=max_outside)
    return ev.sdid(sc)


# ---------------------------------------------------------------------------------
# PLD: Fellegi-Sunter with EM


def fellegi_sunter_em(
    patterns: np.ndarray,
    counts: np.ndarray,
    *,
    match_share: float,
    m_start: float = 0.9,
    u_start: np.ndarray | None = None,
    max_iter: int = 500,
    tol: float = 1e-8,
) -> dict[str, Any]:
    """EM estimates of the Fellegi-Sunter m, u probabilities and the match share.

    Conditional independence of the attributes given match status (Jaro 1989).

    Parameters
    ----------
    patterns : (P, m) 0/1 agreement patterns (distinct).
    counts : (P,) number of record pairs with each pattern.
    match_share : starting share of matches among the pairs (1/n for linkage of two
        files of n records).
    m_start : starting m for every attribute.
    u_start : starting u; default the observed agreement rate of each attribute.
    max_iter, tol : stop after ``max_iter`` iterations or when the largest relative
        change of any parameter is below ``tol``.

    Returns
    -------
    ``{"m": [...], "u": [...], "match_share": float, "iterations": int,
    "converged": bool}``; probabilities are kept within [1e-12, 1 - 1e-12].

    References
    ----------
    Jaro, M. A. (1989). Advances in record-linkage methodology as applied to matching
    the 1985 Census of Tampa, Florida. JASA 84(406), 414-420.
    Fellegi, I. P. & Sunter, A. B. (1969). A theory for record linkage. JASA 64(328).
    """
    G = np.asarray(patterns, dtype=np.float64)
    c = np.asarray(counts, dtype=np.float64)
    N = float(c.sum())
    H = 1.0 - G
    q = G.shape[1]
    m = np.full(q, float(m_start))
    u = (G.T @ c) / N if u_start is None else np.asarray(u_start, dtype=np.float64).copy()
    # theta = [pi, m_1..m_q, u_1..u_q]; columns 0 / 1 of the (q, 2) blocks are
    # "match" / "non-match" so each step is a couple of small matrix products
    theta = np.clip(np.concatenate(([match_share], m, u)), _EPS, 1 - _EPS)
    converged = False
    it = 0
    for it in range(1, max_iter + 1):
        pi = theta[0]
        mu = np.stack((theta[1:q + 1], theta[q + 1:]), axis=1)  # (q, 2)
        logl = G @ np.log(mu) + H @ np.log1p(-mu)  # (P, 2) log-likelihoods
        a = logl[:, 0] + math.log(pi)
        b = logl[:, 1] + math.log1p(-pi)
        g = np.exp(a - np.logaddexp(a, b))
        cg = c * g
        w = np.stack((cg, c - cg), axis=1)  # expected match / non-match counts
        tot = w.sum(axis=0)
        agree = G.T @ w  # (q, 2)
        mu_new = np.where(tot > 0, agree / np.where(tot > 0, tot, 1.0), mu)
        new = np.clip(np.concatenate(([tot[0] / N], mu_new[:, 0], mu_new[:, 1])), _EPS, 1 - _EPS)
        change = float(np.max(np.abs(new - theta) / theta))
        theta = new
        if change < tol:
            converged = True
            break
    pi = float(theta[0])
    m = theta[1:q + 1]
    u = theta[q + 1:]
    return {
        "m": m.tolist(),
        "u": u.tolist(),
        "match_share": pi,
        "iterations": it,
        "converged": converged,
    }


def _weight_levels(weights: np.ndarray) -> np.ndarray:
    """Integer levels ordering ``weights``; weights within a relative 1e-9 share a level.

    Mathematically equal sums of log-ratios can differ in the last bits; merging them
    makes ties order-independent.
    """
    order = np.argsort(weights, kind="stable")
    w = weights[order]
    step = np.diff(w) > _REL * np.maximum(1.0, np.abs(w[1:]))
    lev_sorted = np.concatenate(([0], np.cumsum(step)))
    lev = np.empty(weights.size, dtype=np.int64)
    lev[order] = lev_sorted
    return lev


def _pack_bits(agree: np.ndarray) -> np.ndarray:
    """(N, q) boolean -> (N,) int64 with bit j = column j (endianness-independent)."""
    packed = np.packbits(agree, axis=1, bitorder="little")
    out = packed[:, 0].astype(np.int64)
    for byte in range(1, packed.shape[1]):
        out |= packed[:, byte].astype(np.int64) << (8 * byte)
    return out


class _PLDTable:
    """Agreement patterns of every (original, protected) pair, counted per original.

    For each attribute v, originals and protected records are sorted by their rank on
    v; the pairs agreeing on v (|R(a_v) - R(b_v)| <= w) then form a band, covered by
    dense tiles of consecutive originals times the union of their windows (at most
    ``block_cells`` cells each), where the full agreement pattern over all table
    attributes is computed with a few vector operations per attribute. A pair is kept
    in the pass of its *lowest* agreeing attribute, so every pair that agrees
    somewhere is counted once; pairs agreeing nowhere are only counted. The result
    is, per original record, its distinct full patterns with their counts, from which
    every scenario's pattern counts (for EM) and exact best links follow by masking.

    Work O(q * n * (2w + 1)) cell checks (plus a tile overhead of about the tile
    height / window), memory O(n * distinct patterns per record) plus one tile.
    """

    def __init__(self, Ro: np.ndarray, Rp: np.ndarray, window: int, *,
                 block_cells: int = 1 << 18) -> None:
        n, q = Ro.shape
        self.n = n
        self.q = q
        self.window = w = int(window)
        span = np.uint32(2 * w)
        # lower window ends of the originals and protected ranks, one row per attribute
        RloT = np.ascontiguousarray((Ro - w).T, dtype=np.int32)
        RpT = np.ascontiguousarray(Rp.T, dtype=np.int32)
        pdt = np.int32 if q <= 30 else np.int64
        by_count = q <= 12  # aggregate (record, pattern) keys with bincount
        max_rows = max(1, (1 << 22) >> q) if by_count else n
        pieces_a: list[np.ndarray] = []
        pieces_p: list[np.ndarray] = []
        pieces_c: list[np.ndarray] = []
        for v in range(q):
            # originals and protected records both sorted by their rank on v: the
            # window of consecutive originals is a contiguous, sliding range of
            # protected records, so a block of originals and the union of their
            # windows form a dense band tile (no per-pair gathers)
            oo = np.argsort(Ro[:, v], kind="stable")
            op = np.argsort(Rp[:, v], kind="stable")
            sr = Rp[op, v]
            ro = Ro[oo, v]
            lo = np.searchsorted(sr, ro - w, side="left")
            hi = np.searchsorted(sr, ro + w, side="right")
            bit_v = 1 << v
            need = bit_v | (bit_v - 1)  # agrees on v, on no attribute before v
            i0 = 0
            while i0 < n:
                a, b = i0 + 1, min(n, i0 + max_rows)
                while a < b:  # largest tile within the cell budget
                    mid = (a + b + 1) // 2
                    if (mid - i0) * (hi[mid - 1] - lo[i0]) <= block_cells:
                        a = mid
                    else:
                        b = mid - 1
                i1 = a
                A = oo[i0:i1]
                B = op[lo[i0]:hi[i1 - 1]]
                i0 = i1
                if B.size == 0:
                    continue
                pat = np.zeros((A.size, B.size), dtype=pdt)
                for u in range(q):
                    agree = (RpT[u][B][None, :] - RloT[u][A][:, None]).view(np.uint32) <= span
                    pat |= agree.astype(pdt) << u
                valid = (pat & need) == bit_v
                rows = np.broadcast_to(np.arange(A.size, dtype=np.int64)[:, None], pat.shape)[valid]
                pv = pat[valid].astype(np.int64)
                if by_count:
                    cnt = np.bincount((rows << q) | pv, minlength=A.size << q)
                    nz = np.flatnonzero(cnt)
                    pieces_a.append(A[nz >> q].astype(np.int32))
                    pieces_p.append((nz & ((1 << q) - 1)).astype(pdt))
                    pieces_c.append(cnt[nz].astype(np.int32))
                else:
                    srt = np.lexsort((pv, rows))
                    rows = rows[srt]
                    pv = pv[srt]
                    new = np.ones(rows.size, dtype=bool)
                    new[1:] = (rows[1:] != rows[:-1]) | (pv[1:] != pv[:-1])
                    starts = np.flatnonzero(new)
                    pieces_a.append(A[rows[starts]].astype(np.int32))
                    pieces_p.append(pv[starts].astype(pdt))
                    pieces_c.append(np.diff(np.append(starts, rows.size)).astype(np.int32))
        true_pat = _pack_bits((RpT - RloT).T.view(np.uint32) <= span)
        ep = np.concatenate(pieces_p) if pieces_p else np.empty(0, pdt)
        del pieces_p
        # distinct full patterns; index 0 = no agreement at all
        self.gpat = np.unique(np.concatenate(([0], np.unique(ep).astype(np.int64), true_pat)))
        idx_dtype = np.int32 if self.gpat.size < 2**31 else np.int64
        e_g = np.searchsorted(self.gpat, ep).astype(idx_dtype)
        del ep
        ea = np.concatenate(pieces_a).astype(np.int32) if pieces_a else np.empty(0, np.int32)
        del pieces_a
        srt = np.argsort(ea, kind="stable")
        self.e_g = e_g[srt]
        del e_g
        self.e_cnt = (np.concatenate(pieces_c) if pieces_c else np.empty(0, np.int32))[srt]
        ea = ea[srt]
        del pieces_c, srt
        self.entries_per_record = np.bincount(ea, minlength=n)
        self.zero_a = n - np.bincount(ea, weights=self.e_cnt, minlength=n).astype(np.int64)
        del ea
        self.true_g = np.searchsorted(self.gpat, true_pat)
        self.gcnt = np.bincount(self.e_g, weights=self.e_cnt, minlength=self.gpat.size)
        self.gcnt[0] += float(self.zero_a.sum())
        self._nonempty = self.entries_per_record > 0
        self._offsets = np.cumsum(self.entries_per_record) - self.entries_per_record
        self._starts = self._offsets[self._nonempty]

    @property
    def entries(self) -> int:
        return int(self.e_g.size)

    def scenario(self, cols: Sequence[int], *, max_iter: int = 500,
                 tol: float = 1e-8) -> dict[str, Any]:
        """PLD and the EM fit for the table attributes at positions ``cols``."""
        n = self.n
        mask = 0
        for c in cols:
            mask |= 1 << int(c)
        ru, rinv = np.unique(self.gpat & mask, return_inverse=True)
        rinv = rinv.ravel()
        rc = np.bincount(rinv, weights=self.gcnt, minlength=ru.size)
        bits = np.array(cols, dtype=np.int64)
        Gm = ((ru[:, None] >> bits[None, :]) & 1).astype(bool)
        em = fellegi_sunter_em(Gm, rc, match_share=1.0 / n, max_iter=max_iter, tol=tol)
        m = np.array(em["m"])
        u = np.array(em["u"])
        agree_w = np.log(m) - np.log(u)
        disagree_w = np.log1p(-m) - np.log1p(-u)
        wts = np.zeros(ru.size)
        for j in range(len(cols)):  # fixed summation order
            wts += np.where(Gm[:, j], agree_w[j], disagree_w[j])
        lev_g = _weight_levels(wts)[rinv].astype(np.int32)
        Lt = lev_g[self.true_g]
        L0 = int(lev_g[0])
        # best level each original reaches: its entries, and "no agreement" if some
        # protected record agrees with it nowhere
        best = np.where(self.zero_a > 0, L0, np.iinfo(np.int32).min).astype(np.int32)
        le = lev_g[self.e_g]
        if le.size:
            best[self._nonempty] = np.maximum(best[self._nonempty],
                                              np.maximum.reduceat(le, self._starts))
        # only originals whose true record reaches the best level get credit: count
        # the protected records tied with it (entries of those originals only)
        cand = np.flatnonzero(Lt >= best)
        equal = np.where(L0 == Lt[cand], self.zero_a[cand], 0).astype(np.float64)
        lens = self.entries_per_record[cand]
        has = lens > 0
        if has.any():
            c_has = cand[has]
            l_has = lens[has]
            seg0 = self._offsets[c_has]
            offs = np.cumsum(l_has) - l_has
            idx = np.arange(int(l_has.sum())) + np.repeat(seg0 - offs, l_has)
            hit = np.where(le[idx] == np.repeat(Lt[c_has], l_has), self.e_cnt[idx], 0)
            equal[has] += np.add.reduceat(hit, offs)
        credit = float((1.0 / equal[equal > 0]).sum())
        em["agreement_weight"] = agree_w.tolist()
        em["disagreement_weight"] = disagree_w.tolist()
        return {"value": 100.0 * credit / n, "em": em}


def pld(
    X: np.ndarray,
    Xp: np.ndarray,
    attributes: Iterable[int] | None = None,
    *,
    window_share: float = 0.01,
) -> dict[str, Any]:
    """Probabilistic record linkage (Fellegi-Sunter, EM): percentage linked correctly.

    For every pair (original a, protected b) a binary vector over S: attribute v
    agrees when the ranks of a_v and b_v in the sorted original column differ by at
    most w = max(1, floor(window_share * n)). m_v, u_v and the match share are fitted
    by EM on the counts of the distinct agreement patterns over all n^2 pairs (start
    m = 0.9, u = observed agreement rate, match share = 1/n; stop at a relative change
    < 1e-8 or 500 iterations). Each original is linked to the protected record(s) of
    highest weight sum_v [g_v log(m_v/u_v) + (1-g_v) log((1-m_v)/(1-u_v))]; t tied
    records with the true one among them count 1/t. PLD = 100 * correct / n.

    Returns
    -------
    ``{"value": float, "window": int, "window_share": float, "em": {"m", "u",
    "match_share", "iterations", "converged", "agreement_weight",
    "disagreement_weight"}}``

    Notes
    -----
    No pair is ever materialised as an n x n array: pairs agreeing on at least one
    attribute are enumerated through rank windows (see :class:`_PLDTable`), all
    others are counted. The best link of every record is exact (every pair's
    pattern is known). Time O(|S| n w) with w ~ n/100, memory O(n) times the number
    of distinct patterns per record. Weights within a relative 1e-9 of each other are
    treated as equal (ties).

    References
    ----------
    Fellegi, I. P. & Sunter, A. B. (1969). A theory for record linkage. JASA 64(328).
    Jaro, M. A. (1989). Advances in record-linkage methodology as applied to matching
    the 1985 Census of Tampa, Florida. JASA 84(406).
    Domingo-Ferrer, J. & Torra, V. (2001). A quantitative comparison of disclosure
    control methods for microdata.
    """
    X, Xp = _as_pair(X, Xp)
    sc = _subset(attributes, X.shape[1])
    ev = RiskEvaluator(X, Xp, pld_window_share=window_share, pld_attributes=sc)
    return ev.pld(sc)


# ---------------------------------------------------------------------------------
# the evaluator shared by all scenarios


class RiskEvaluator:
    """Precomputed state to evaluate many intruder scenarios of one file pair.

    Parameters
    ----------
    X, Xp : (n, p) original and protected matrices (original units); not mutated.
    k : minimum group size (for the share of records in classes smaller than k).
    pld : build the PLD pair table (False skips PLD entirely).
    pld_window_share : PLD agreement window as a share of n (w = max(1, floor(share n))).
    pld_attributes : columns the PLD table covers (default all; a scenario using other
        columns has no PLD). At most :data:`PLD_MAX_ATTRIBUTES`.
    id_percents : the interval sizes p of ID(p), in percent.
    sdid_factor : the SDID interval half-width in protected sds.
    sdid_max_outside : attributes allowed outside their SDID interval (0 = spec;
        1 = sdcMicro's ``dRiskWORK``).
    dld_candidates : K protected records per original, found once by an
        approximate K-nearest-neighbour query on all attributes, tried first in every
        scenario's DLD (a speed-up for many scenarios; 0 = none). Results do not
        depend on it.
    workers : threads for kd-tree queries (results do not depend on it).
    """

    def __init__(
        self,
        X: np.ndarray,
        Xp: np.ndarray,
        *,
        k: int | None = None,
        pld: bool = True,
        pld_window_share: float = 0.01,
        pld_attributes: Sequence[int] | None = None,
        id_percents: Sequence[float] = DEFAULT_ID_PERCENTS,
        sdid_factor: float = 0.05,
        sdid_max_outside: int = 0,
        dld_candidates: int = 8,
        workers: int = 1,
    ) -> None:
        X, Xp = _as_pair(X, Xp)
        n, p = X.shape
        self.n, self.p = n, p
        self.k = k
        self.workers = int(workers)
        mean = X.mean(axis=0)
        sd = X.std(axis=0)
        scale = np.where(sd > 0, sd, 1.0)
        self.Z = (X - mean) / scale
        self.Zp = (Xp - mean) / scale
        self.rows = _RowClasses(Xp)
        self.dld_candidates = int(dld_candidates)
        self._cand_rows: np.ndarray | None = None
        self.id_percents = [float(q) if not float(q).is_integer() else int(q) for q in id_percents]
        if not self.id_percents or any(not (0 < q <= 100) for q in self.id_percents):
            raise InvalidParameterError("ID percents must be in (0, 100]")
        Ro, Rp, sorted_cols = _ranks(X, Xp)
        self.id_hits = _id_hits(X, Xp, sorted_cols, self.id_percents)
        if sdid_factor < 0:
            raise InvalidParameterError("the SDID factor must be >= 0")
        self.sdid_factor = float(sdid_factor)
        if int(sdid_max_outside) != sdid_max_outside or sdid_max_outside < 0:
            raise InvalidParameterError("sdid_max_outside must be an integer >= 0")
        self.sdid_max_outside = int(sdid_max_outside)
        sdp = Xp.std(axis=0, ddof=1) if n > 1 else np.zeros(p)
        self.sdid_within = np.abs(X - Xp) <= self.sdid_factor * sdp
        if not 0 < pld_window_share <= 1:
            raise InvalidParameterError("the PLD window share must be in (0, 1]")
        self.pld_window_share = float(pld_window_share)
        self.pld_window = pld_window(n, pld_window_share)
        self.pld_skipped_reason: str | None = None
        self.pld_table: _PLDTable | None = None
        self.pld_columns: list[int] = []
        if pld:
            cols = (list(range(p)) if pld_attributes is None
                    else sorted(set(map(int, pld_attributes))))
            if len(cols) > PLD_MAX_ATTRIBUTES:
                self.pld_skipped_reason = (
                    f"PLD supports at most {PLD_MAX_ATTRIBUTES} attributes, got {len(cols)}"
                )
            else:
                self.pld_columns = cols
                self.pld_table = _PLDTable(Ro[:, cols], Rp[:, cols], self.pld_window)
        else:
            self.pld_skipped_reason = "not requested"

    # -- single measures --------------------------------------------------------

    def anonymity(self, sc: Sequence[int]) -> dict[str, Any]:
        codes, m = self.rows.classes(sc)
        return _anonymity(codes, m, self.k)

    def _candidates(self) -> np.ndarray | None:
        from scipy.spatial import cKDTree  # 0.15 s to import: only when used
        if self.dld_candidates <= 0:
            return None
        if self._cand_rows is None:
            codes, m = _RowClasses(self.Zp).classes(tuple(range(self.p)))
            first = np.full(m, self.n, dtype=np.int64)
            np.minimum.at(first, codes, np.arange(self.n, dtype=np.int64))
            K = min(self.dld_candidates, m)
            _, nb = cKDTree(self.Zp[first]).query(self.Z, k=K, eps=1.0, workers=self.workers)
            self._cand_rows = first[np.asarray(nb).reshape(self.n, K)]
        return self._cand_rows

    def dld(self, sc: Sequence[int]) -> float:
        codes, m = self.rows.classes(sc)
        cols = list(sc)
        return _dld_scenario(
            np.ascontiguousarray(self.Z[:, cols]),
            np.ascontiguousarray(self.Zp[:, cols]),
            codes,
            m,
            self.workers,
            self._candidates(),
        )

    def pld(self, sc: Sequence[int]) -> dict[str, Any] | None:
        base = {"window": self.pld_window, "window_share": self.pld_window_share}
        if self.pld_table is None or not set(sc) <= set(self.pld_columns):
            reason = self.pld_skipped_reason or "attributes outside the PLD table"
            return {"value": None, **base, "em": None, "skipped_reason": reason}
        pos = {c: i for i, c in enumerate(self.pld_columns)}
        out = self.pld_table.scenario([pos[c] for c in sc])
        return {"value": out["value"], **base, "em": out["em"]}

    def interval_disclosure(self, sc: Sequence[int]) -> dict[str, Any]:
        hits = self.id_hits[list(sc)].sum(axis=0)
        by = (100.0 * hits / (self.n * len(sc))).tolist()
        return {
            "value": float(np.mean(by)),
            "by_percent": by,
            "percents": list(self.id_percents),
            "windows": [id_window(self.n, q) for q in self.id_percents],
        }

    def sdid(self, sc: Sequence[int]) -> float:
        outside = (~self.sdid_within[:, list(sc)]).sum(axis=1)
        return float((outside <= self.sdid_max_outside).mean())

    # -- everything for one scenario -------------------------------------------

    def scenario(self, sc: Sequence[int]) -> dict[str, Any]:
        """Every risk measure for the sorted scenario ``sc``."""
        sc = tuple(int(v) for v in sc)
        an = self.anonymity(sc)
        idd = self.interval_disclosure(sc)
        pl = self.pld(sc)
        return {
            "attributes": list(sc),
            **an,
            "dld": self.dld(sc),
            "pld": pl["value"],
            "id": idd["value"],
            "id_by_percent": idd["by_percent"],
            "sdid": self.sdid(sc),
            "pld_em": pl["em"],
        }

    def evaluate(self, scenarios: Sequence[Sequence[int]]) -> list[dict[str, Any]]:
        """:meth:`scenario` for each scenario, in the given order.

        Scenarios are visited in lexicographic order internally so that the exact row
        classes of shared prefixes are reused.
        """
        scs = [tuple(sorted(int(v) for v in s)) for s in scenarios]
        out: list[dict[str, Any] | None] = [None] * len(scs)
        for i in sorted(range(len(scs)), key=lambda i: scs[i]):
            out[i] = self.scenario(scs[i])
        return out  # type: ignore[return-value]


# ---------------------------------------------------------------------------------
# combined figures


def _check_weights(weights: Mapping[str, float] | None, default: Mapping[str, float],
                   what: str) -> dict[str, float]:
    w = dict(default)
    if weights:
        unknown = set(weights) - set(default)
        if unknown:
            raise InvalidParameterError(
                f"unknown {what} weight(s) {sorted(unknown)} (known: {', '.join(default)})"
            )
        for key, val in weights.items():
            val = float(val)
            if not np.isfinite(val) or val < 0:
                raise InvalidParameterError(f"{what} weight {key!r} must be a finite number >= 0")
            w[key] = val
    return w


def _formula(lhs: str, weights: Mapping[str, float], names: Mapping[str, str]) -> str:
    return f"{lhs} = " + " + ".join(f"{weights[key]:g} * {names[key]}" for key in weights)


def disclosure_risk(
    dld_value: float | None,
    pld_value: float | None,
    id_value: float | None,
    *,
    weights: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """DR = w_dld * DLD + w_pld * PLD + w_id * ID (defaults 0.25, 0.25, 0.5).

    Returns ``{"value", "formula", "weights"}``; value None when a term with a
    non-zero weight is missing.

    >>> disclosure_risk(10.0, 20.0, 30.0)["value"]
    22.5
    >>> disclosure_risk(10.0, 20.0, 30.0)["formula"]
    'DR = 0.25 * DLD + 0.25 * PLD + 0.5 * ID'
    """
    w = _check_weights(weights, DEFAULT_DR_WEIGHTS, "DR")
    terms = {"dld": dld_value, "pld": pld_value, "id": id_value}
    missing = [key for key in w if w[key] != 0 and terms[key] is None]
    value = None if missing else float(sum(w[key] * (terms[key] or 0.0) for key in w))
    return {
        "value": value,
        "formula": _formula("DR", w, {"dld": "DLD", "pld": "PLD", "id": "ID"}),
        "weights": w,
    }


def overall_score(
    il_score_value: float | None,
    dr_value: float | None,
    *,
    weights: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """score = w_il * IL_score + w_dr * DR (defaults 0.5, 0.5; lower is better).

    >>> overall_score(20.0, 30.0)
    {'value': 25.0, 'formula': 'score = 0.5 * IL_score + 0.5 * DR', 'weights': {'il': 0.5, 'dr': 0.5}}
    """
    w = _check_weights(weights, DEFAULT_SCORE_WEIGHTS, "score")
    terms = {"il": il_score_value, "dr": dr_value}
    missing = [key for key in w if w[key] != 0 and terms[key] is None]
    value = None if missing else float(sum(w[key] * (terms[key] or 0.0) for key in w))
    return {
        "value": value,
        "formula": _formula("score", w, {"il": "IL_score", "dr": "DR"}),
        "weights": w,
    }
