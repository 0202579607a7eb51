"""Disclosure-risk measures of a protected matrix against its original.

The intruder knows the original values of a set S of attributes (a *scenario*, a
tuple of column positions) and tries to link them to the protected file. Every
function takes the original ``X`` and the protected ``Xp`` as (n, p) float arrays in
original units, same records in the same order; neither is mutated. Conventions of
``spec/metrics.md``:

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

import contextlib
import dataclasses
import math
import queue
import threading
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from ..errors import InvalidParameterError
from ..progress import phase as progress_phase
from ..progress import set_done as progress_set
from .utility import as_pair as _utility_pair
from ._risk_kernels import (dld_filter, dld_search, em_fit, kd_build, pld_credit, pld_credit_batch, pld_pass,
                            refine_classes)

__all__ = [
    "DEFAULT_DR_WEIGHTS",
    "DEFAULT_SCORE_WEIGHTS",
    "DEFAULT_ID_PERCENTS",
    "PLD_MAX_ATTRIBUTES",
    "PLD_EXACT_MAX",
    "PLD_SAMPLE",
    "PLD_CONFIDENCE",
    "sample_bound",
    "DLD_EXACT_MAX",
    "DLD_SAMPLE",
    "RiskEvaluator",
    "RiskOptions",
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
#: PLD is exact up to this many records; above it, estimated from a seeded sample of
#: originals (see :class:`RiskEvaluator`), with a stated error bound.
PLD_EXACT_MAX = 100_000
#: Sampled originals of the PLD estimator.
PLD_SAMPLE = 20_000
#: Confidence of the sampled PLD's (and DLD's) error bound.
PLD_CONFIDENCE = 0.95
#: DLD is exact up to this many records; above, estimated from a seeded sample of
#: originals (each searched exactly against every protected row), with a stated bound.
DLD_EXACT_MAX = 500_000
#: Sampled originals of the DLD estimator.
DLD_SAMPLE = 100_000

# relative margin between the kd-tree's distances and our fixed-order formula
_REL = 1e-9
# the compiled PLD table keeps a dense 2^q scratch of pattern counts: up to 20 attributes
_DENSE_MAX_Q = 20
# originals per task of the PLD pair table
_PLD_RUN = 8192
# originals per block of the all-scenario PLD pass (fixed: partial sums are added in block order)
_PLD_BLOCK = 2048
# rows per leaf of DLD's k-d trees (32-64 measured fastest: the point loop vectorises)
_DLD_LEAF = 48
# a DLD margin bound settles an original only above this share of (1 + its squared
# distance to its own row on every attribute): the bound is a sum of at most 2 p
# distances, each off by a few 1e-16 relative, so 1e-9 leaves six orders to spare
_DLD_MARGIN_TOL = 1e-9
# bytes of DLD margins and beaters kept per size of scenarios (two sizes are held at
# once); scenarios beyond it keep none, and their supersets search more
_DLD_KEEP_BYTES = 384 << 20
# EM probabilities are kept inside [_EPS, 1 - _EPS] so that every log is finite
_EPS = 1e-12


# ---------------------------------------------------------------------------------
# small helpers


def _as_pair(X: np.ndarray, Xp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`.utility.as_pair`, and at least one record."""
    X, Xp = _utility_pair(X, Xp)
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
        size = 1 << max(4, int(2 * self.n - 1).bit_length())
        zero = np.zeros(self.n, dtype=np.int64)
        for v in range(Xp.shape[1]):
            uniq, inv = np.unique(Xp[:, v], return_inverse=True)
            # renumbered by first appearance, as every refinement is (see first_rows)
            codes = np.empty(self.n, dtype=np.int64)
            refine_classes(zero, inv.astype(np.int64).ravel(), np.int64(uniq.size),
                           np.empty(size, dtype=np.int64), codes)
            self.codes.append(codes)
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
                # classes of (previous class, code): hashed once, O(n)
                size = 1 << max(4, int(2 * self.n - 1).bit_length())
                out = np.empty(self.n, dtype=np.int64)
                m = int(refine_classes(prev, self.codes[v], np.int64(self.card[v]),
                                       np.empty(size, dtype=np.int64), out))
                self._stack.append((v, out, m))
            else:
                self._stack.append((v, self.codes[v], self.card[v]))
        _, codes, m = self._stack[-1]
        return codes, m

    @staticmethod
    def first_rows(codes: np.ndarray) -> np.ndarray:
        """The first record of each class (classes are numbered by first appearance)."""
        return np.flatnonzero(np.diff(np.maximum.accumulate(codes), prepend=-1) > 0)

    def fresh(self) -> "_RowClasses":
        """A copy sharing the column codes, with its own (empty) prefix stack."""
        other = object.__new__(_RowClasses)
        other.n, other.codes, other.card = self.n, self.codes, self.card
        other._stack = []
        return other


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


class _BoxTree:
    """A k-d tree of points (built by :func:`._risk_kernels.kd_build`, compiled): median
    splits on the widest coordinate, leaves of at most ``leaf`` points, the bounding
    box of every node (``box`` (2, nodes, s): low and high corners), the children and
    row range of every node (``tree`` (4, nodes): left, right, start, end); searched by
    :func:`._risk_kernels.dld_search`.
    """

    def __init__(self, P: np.ndarray, mult: np.ndarray, *, leaf: int = _DLD_LEAF) -> None:
        P = np.ascontiguousarray(P, dtype=np.float64)
        m, s = P.shape
        cap = 4 * (m // leaf) + 16
        perm = np.empty(m, dtype=np.int64)
        self.box = np.empty((2, cap, s))
        self.tree = np.empty((4, cap), dtype=np.int64)
        kd_build(P, int(leaf), perm, self.box[0], self.box[1], *self.tree)
        self.perm = perm
        self.P = np.ascontiguousarray(P[perm])
        self.mult = np.ascontiguousarray(np.asarray(mult)[perm], dtype=np.float64)


class _DLDShared:
    """What every scenario's DLD shares (built once per file pair).

    ``who`` the searched originals (all, or the sample of ``dld_method = "sampled"``),
    in record order; ``U``/``mult`` the distinct protected rows and their
    multiplicities, numbered in the order of a k-d tree of all attributes (rows near
    in space near in memory); the searched originals are held in the order of their
    own rows (``order``: position j is ``who[order[j]]``), so an original's own row,
    the rows that beat it and its candidates lie near those of its neighbours (at
    200,000 records the rows no longer fit a cache). Per position j: ``W`` (2, j, p)
    the original and protected z-scores, ``ec`` (j, v) the squared distance to its own
    protected row on attribute v, ``per`` = (margin tolerance, multiplicity of its
    own row), ``row_of`` its own distinct row, ``cand`` its candidate distinct rows.
    """

    def __init__(self, ev: "RiskEvaluator") -> None:
        codes, first, m = ev._distinct()
        U = ev.Zp[first]
        mult = np.bincount(codes, minlength=m).astype(np.float64)
        # distinct rows renumbered in space order
        perm = _BoxTree(U, mult, leaf=8).perm
        rank = np.empty(perm.size, dtype=np.int64)
        rank[perm] = np.arange(perm.size)
        self.U = np.ascontiguousarray(U[perm])
        self.mult = np.ascontiguousarray(mult[perm])
        self.who = np.arange(ev.n, dtype=np.int64) if ev.dld_rows is None else ev.dld_rows
        own = rank[codes[self.who]]
        self.order = np.argsort(own, kind="stable")
        rec = self.who[self.order]
        self.W = np.stack((ev.Z[rec], ev.Zp[rec]))
        self.Zw = self.W[0]
        self.ec = (self.W[0] - self.W[1]) ** 2
        self.row_of = np.ascontiguousarray(own[self.order])
        self.per = np.vstack((_DLD_MARGIN_TOL * (1.0 + self.ec.sum(axis=1)), self.mult[self.row_of]))
        cand = ev._candidates()
        self.cand = (np.empty((rec.size, 0), dtype=np.int64) if cand is None
                     else np.ascontiguousarray(rank[codes[cand[rec]]]))

    def in_record_order(self, values: np.ndarray) -> np.ndarray:
        """Per-position ``values`` back in the order of ``who`` (sums as before)."""
        out = np.empty_like(values)
        out[self.order] = values
        return out


def _lower_f32(x: np.ndarray) -> np.ndarray:
    """``x`` as float32, every value rounded down (a lower bound stays one)."""
    return (x - np.abs(x) * 2.5e-7 - 1e-30).astype(np.float32)


def _dld_scenario(sh: _DLDShared, sc: tuple[int, ...], prev: tuple[np.ndarray, np.ndarray],
                  parents: np.ndarray, extra: Sequence[int], link: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One scenario's DLD credits and margin lower bounds of the originals ``sh.who``.

    ``prev`` = (margins, beaters), (rows, n) each: margin lower bounds and the distinct
    rows that beat each original (-1: none) of scenarios with one attribute less;
    ``parents[j]`` the row of ``sc`` without its j-th attribute (-1: not computed);
    ``extra`` the attributes whose addition to ``sc`` is a scenario still to come (the
    search looks that much further, to give it a margin); ``link`` (2, n) the last row
    that beat each original in this thread (updated) and, on return, the row that beat
    it here. Returns (credits, margins) per position.
    """
    nw = sh.who.size
    cols = np.asarray(sc, dtype=np.int64)
    out = np.empty((3, nw))  # squared true distances, margins, credits
    todo = np.empty(nw, dtype=np.int64)
    nt = int(dld_filter(sh.W, sh.U, cols, sh.ec, prev[0], prev[1], parents, sh.per, sh.cand, out, link, todo))
    if nt:
        todo = todo[:nt]
        # a k-d tree of the distinct protected rows on the scenario's attributes (its
        # splits and boxes on those attributes only prune far better than one tree of
        # every attribute), built once per scenario, compiled
        tree = _BoxTree(sh.U[:, cols], sh.mult)
        # originals in the tree order of their true rows: consecutive searches walk
        # the same nodes (1.2-1.7x faster at 200,000 records)
        place = np.empty(tree.perm.size, dtype=np.int64)
        place[tree.perm] = np.arange(tree.perm.size)
        todo = todo[np.argsort(place[sh.row_of[todo]], kind="stable")]
        beat = np.full(nt, -1, dtype=np.int64)
        dld_search(sh.Zw, cols, sh.ec, np.asarray(extra, dtype=np.int64), todo, sh.per, tree.tree, tree.P,
                   tree.mult, tree.box, out, beat)
        hit = beat >= 0
        link[:, todo[hit]] = tree.perm[beat[hit]]
    return out[2], out[1]


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
    Identical protected rows are merged (with their multiplicity). The squared true
    distance of every original is computed with one fixed formula (column by column,
    left to right). :class:`RiskEvaluator` evaluates many scenarios by size
    (:meth:`RiskEvaluator.dld_many`): a scenario keeps, per original, a lower bound of
    its *margin* (how much nearer its own row is than any other); adding an attribute v
    lowers the margin by at most the original's squared distance to its own row on v,
    so an original whose bound stays clearly positive (far above rounding) in the next
    scenario is credited without a search. The rest first try a few protected rows
    (the row that beat them last and the rows that beat them in the scenarios with one
    attribute less; with ``dld_candidates`` K of :class:`RiskEvaluator`, also their K
    approximate nearest rows on every attribute and the K rows nearest to their true
    row): one strictly nearer settles "no credit". The others are
    searched exactly in a k-d tree of the distinct rows on the scenario's attributes
    (compiled; a box is pruned only when its lower bound, computed in the same order of
    operations, exceeds the radius): a strictly nearer row ends the search, rows
    exactly as near are counted as ties, and the nearest other row gives the margin.
    Bounds and tried rows only decide whether a search runs, never its result: exact.
    O(n log n) per scenario for a fixed number of attributes in practice, memory O(n)
    plus the margins kept for the next size of scenarios (at most 2 x 384 MB).

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
    ev = RiskEvaluator(X, Xp, RiskOptions(pld=False, dld_candidates=0, workers=workers, dld_exact_max=X.shape[0]))
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
    ev = RiskEvaluator(X, Xp, RiskOptions(pld=False, id_percents=percents))
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
        their interval. 0 is the spec's "every value"; sdcMicro's ``dRiskWORK`` counts
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
    ev = RiskEvaluator(X, Xp, RiskOptions(pld=False, sdid_factor=factor, sdid_max_outside=max_outside))
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
    q = G.shape[1]
    m = np.full(q, float(m_start))
    u = (G.T @ c) / N if u_start is None else np.asarray(u_start, dtype=np.float64).copy()
    # theta = [pi, m_1..m_q, u_1..u_q]; the iterations run compiled, O(P q) each
    theta = np.clip(np.concatenate(([match_share], m, u)), _EPS, 1 - _EPS)
    it, converged = em_fit(np.ascontiguousarray(G != 0, dtype=np.uint8), np.ascontiguousarray(c), theta,
                           int(max_iter), float(tol), _EPS)
    it, converged = int(it), bool(converged)
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


@contextlib.contextmanager
def _one_blas_thread(jobs: int) -> Iterator[None]:
    """With ``jobs`` threads of our own, BLAS / OpenMP pools get one thread each (no
    oversubscription; the kernels here start no threads of their own)."""
    if jobs <= 1:
        yield
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - a dependency
        yield
        return
    with threadpool_limits(limits=1):
        yield


def _in_threads(func: Callable[[Any], Any], items: Sequence[Any], jobs: int,
                after: Callable[[int], None] | None = None) -> list[Any]:
    """``[func(x) for x in items]`` in ``jobs`` daemon threads (the compiled kernels and
    the k-d tree searches release the GIL), results in the order of ``items``.

    The calling thread waits in short joins, so Ctrl-C (SIGINT, SIGTERM) reaches it
    at once; it then tells the threads to stop after their current item and re-raises.
    ``after(done)`` is called from the calling thread as items finish.
    """
    out: list[Any] = [None] * len(items)
    if jobs <= 1 or len(items) <= 1:
        for i, x in enumerate(items):
            out[i] = func(x)
            if after is not None:
                after(i + 1)
        return out
    state = {"next": 0, "done": 0}
    lock = threading.Lock()
    stop = threading.Event()
    errors: list[BaseException] = []

    def work() -> None:
        try:
            while not stop.is_set():
                with lock:
                    i = state["next"]
                    state["next"] += 1
                if i >= len(items):
                    return
                out[i] = func(items[i])
                with lock:
                    state["done"] += 1
        except BaseException as exc:  # noqa: BLE001 - re-raised in the calling thread
            errors.append(exc)
            stop.set()

    pool = [threading.Thread(target=work, name=f"sdc-risk-{t}", daemon=True) for t in range(min(jobs, len(items)))]
    for t in pool:
        t.start()
    last = -1
    try:
        while True:
            alive = [t for t in pool if t.is_alive()]
            if not alive:
                break
            alive[0].join(timeout=0.1)
            if after is not None and state["done"] != last:
                last = state["done"]
                after(last)
    except BaseException:
        stop.set()
        raise
    if errors:
        raise errors[0]
    if after is not None and last != len(items):
        after(len(items))
    return out


def sample_bound(total: float, squares: float, m: int, confidence: float = PLD_CONFIDENCE) -> float:
    """Half-width (percentage points) of a sampled linkage share's confidence interval.

    The empirical Bernstein bound of Maurer & Pontil (2009, Theorem 4) for the mean of
    m credits in [0, 1] with sample variance V, two-sided at ``confidence``:
    100 * (sqrt(2 V ln(4/delta) / m) + 7 ln(4/delta) / (3 (m - 1))), delta = 1 -
    confidence. Sampling without replacement only tightens it (Bardenet & Maillard
    2015). ``total`` and ``squares`` are the sums of the credits and of their squares.

    >>> round(sample_bound(0.0, 0.0, 10_000), 4)
    0.1023
    """
    if m < 2:
        return 100.0
    delta = 1.0 - confidence
    var = max(0.0, (squares - total * total / m) / (m - 1))
    log = math.log(4.0 / delta)
    return 100.0 * min(1.0, math.sqrt(2.0 * var * log / m) + 7.0 * log / (3.0 * (m - 1)))


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
    height / window), memory O(n * distinct patterns per record) plus one tile. Up to
    ``_DENSE_MAX_Q`` attributes a compiled pass replaces the tiles: identical
    protected rank rows are merged (about n/k of them), each original's window is
    scanned once per attribute, and only the originals ``rows`` (all, or a sample for
    the estimator) are tabulated.
    """

    def __init__(self, Ro: np.ndarray, Rp: np.ndarray, window: int, *,
                 block_cells: int = 1 << 18, workers: int = 1, rows: np.ndarray | None = None) -> None:
        n, q = Ro.shape
        self.n = n
        self.q = q
        self.window = w = int(window)
        # the originals whose pairs are tabulated (all, or a sample: see RiskEvaluator)
        self.rows = None if rows is None else np.sort(np.asarray(rows, dtype=np.int64))
        self.n_records = n if self.rows is None else int(self.rows.size)
        span = np.uint32(2 * w)
        sel = slice(None) if self.rows is None else self.rows
        RloT = np.ascontiguousarray((Ro[sel] - w).T, dtype=np.int32)
        RpT = np.ascontiguousarray(Rp[sel].T, dtype=np.int32)
        pdt = np.int32 if q <= 30 else np.int64
        if q <= _DENSE_MAX_Q:
            pieces_a, pieces_p, pieces_c = self._compiled_pieces(Ro, Rp, w, workers, self.rows)
        elif self.rows is None:
            pieces_a, pieces_p, pieces_c = self._numpy_pieces(Ro, Rp, RloT, RpT, w, span, pdt, block_cells)
        else:
            raise InvalidParameterError(f"sampled PLD supports at most {_DENSE_MAX_Q} attributes")
        nr = self.n_records
        true_pat = _pack_bits((RpT - RloT).T.view(np.uint32) <= span)
        ep = np.concatenate(pieces_p).astype(pdt) if pieces_p else np.empty(0, pdt)
        del pieces_p
        # distinct full patterns; index 0 = no agreement at all
        if q <= _DENSE_MAX_Q:  # a table of the 2^q patterns: no sort
            present = np.zeros(1 << q, dtype=bool)
            present[0] = True
            present[ep] = True
            present[true_pat] = True
            self.gpat = np.flatnonzero(present).astype(np.int64)
            index_of = np.cumsum(present) - 1
            idx_dtype = np.int32 if self.gpat.size < 2**31 else np.int64
            e_g = index_of[ep].astype(idx_dtype)
        else:
            self.gpat = np.unique(np.concatenate(([0], np.unique(ep).astype(np.int64), true_pat)))
            idx_dtype = np.int32 if self.gpat.size < 2**31 else np.int64
            e_g = np.searchsorted(self.gpat, ep).astype(idx_dtype)
        del ep
        # record positions 0..nr-1 (the sampled originals in increasing order)
        ea = np.concatenate(pieces_a).astype(np.int32) if pieces_a else np.empty(0, np.int32)
        del pieces_a
        if self.rows is not None:
            ea = np.searchsorted(self.rows, ea).astype(np.int32)
        # per original, richest patterns first (an early better pattern ends a scan)
        # (one stable sort of the key record * (q + 1) + q - bits: np.lexsort's order, faster)
        srt = np.argsort(ea.astype(np.int64) * (q + 1) + (q - np.bitwise_count(self.gpat)[e_g].astype(np.int64)),
                         kind="stable")
        self.e_g = e_g[srt]
        del e_g
        self.e_cnt = (np.concatenate(pieces_c) if pieces_c else np.empty(0, np.int32))[srt]
        ea = ea[srt]
        del pieces_c, srt
        self.entries_per_record = np.bincount(ea, minlength=nr)
        self.zero_a = n - np.bincount(ea, weights=self.e_cnt, minlength=nr).astype(np.int64)
        del ea
        self.true_g = np.searchsorted(self.gpat, true_pat)
        self.gcnt = np.bincount(self.e_g, weights=self.e_cnt, minlength=self.gpat.size)
        self.gcnt[0] += float(self.zero_a.sum())
        if self.rows is not None:
            # pattern counts over all n * n pairs, estimated from the sampled originals
            self.gcnt *= n / nr
        self._bounds = np.concatenate(([0], np.cumsum(self.entries_per_record))).astype(np.int64)

    @staticmethod
    def _compiled_pieces(Ro: np.ndarray, Rp: np.ndarray, w: int, workers: int,
                         rows: np.ndarray | None) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
        """(original, full pattern, count) entries by the compiled pass per attribute.

        Identical protected rank rows are merged (a microaggregated file has about n/k
        of them), with their multiplicities as counts; the originals of a pass (all,
        or the sorted ``rows``) are processed in runs of consecutive ranks by
        ``workers`` threads (the kernel releases the GIL).
        """
        n, q = Ro.shape
        Ro32 = np.ascontiguousarray(Ro, dtype=np.int32)
        Rpu, mult = np.unique(np.ascontiguousarray(Rp, dtype=np.int32), axis=0, return_counts=True)
        Rpu = np.ascontiguousarray(Rpu)
        mult = mult.astype(np.int64)
        pieces_a: list[np.ndarray] = []
        pieces_p: list[np.ndarray] = []
        pieces_c: list[np.ndarray] = []
        workers = max(1, int(workers))
        keep = None
        if rows is not None:
            keep = np.zeros(n, dtype=bool)
            keep[rows] = True
        pdt = np.int32 if q < 31 else np.int64
        total = q * (n if rows is None else rows.size)

        def run(v: int, rs: tuple[np.ndarray, np.ndarray], lo: np.ndarray, hi: np.ndarray,
                todo: np.ndarray) -> list[tuple]:
            scratch = np.zeros(1 << q, dtype=np.int64)
            touched = np.empty(1 << q, dtype=np.int64)
            out = []
            start = 0
            cap = int(min(max(1 << 16, 4 * todo.size), 1 << 22))
            cap = max(cap, int(min((hi - lo).max(initial=0), 1 << q)))
            oa = np.empty(cap, dtype=np.int32)
            opat = np.empty(cap, dtype=np.int64)
            oc = np.empty(cap, dtype=np.int64)
            while start < todo.size:
                start, pos = pld_pass(Ro32, rs[0], rs[1], lo, hi, v, w, todo, start, oa, opat, oc,
                                      scratch, touched)
                out.append((oa[:pos].copy(), opat[:pos].astype(pdt), oc[:pos].astype(np.int32)))
            return out

        tasks = []
        for v in range(q):
            op = np.argsort(Rpu[:, v], kind="stable")
            sr = Rpu[op, v]
            lo = np.searchsorted(sr, Ro32[:, v] - w, side="left").astype(np.int64)
            hi = np.searchsorted(sr, Ro32[:, v] + w, side="right").astype(np.int64)
            # originals in rank order (neighbouring windows share cache lines)
            oo = np.argsort(Ro32[:, v], kind="stable").astype(np.int64)
            if keep is not None:
                oo = oo[keep[oo]]
            # the protected rows in rank order on v, transposed: a window is read in order
            rs = (np.ascontiguousarray(Rpu[op].T), np.ascontiguousarray(mult[op]))
            tasks.extend((v, rs, lo, hi, oo[j:j + _PLD_RUN]) for j in range(0, oo.size, _PLD_RUN))
        with progress_phase("PLD pair table", total=total, unit="rows"):
            sizes = np.cumsum([t[4].size for t in tasks])
            results = _in_threads(lambda t: run(*t), tasks, workers,
                                  after=lambda d: progress_set(int(sizes[d - 1]) if d else 0))
        for res in results:
            for oa, opat, oc in res:
                pieces_a.append(oa)
                pieces_p.append(opat)
                pieces_c.append(oc)
        return pieces_a, pieces_p, pieces_c

    @staticmethod
    def _numpy_pieces(Ro: np.ndarray, Rp: np.ndarray, RloT: np.ndarray, RpT: np.ndarray, w: int,
                      span: np.uint32, pdt: Any,
                      block_cells: int) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
        """The same entries by dense numpy tiles (more than ``_DENSE_MAX_Q`` attributes)."""
        n, q = Ro.shape
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
        return pieces_a, pieces_p, pieces_c

    @property
    def entries(self) -> int:
        return int(self.e_g.size)

    def fit(self, cols: Sequence[int], *, max_iter: int = 500,
            tol: float = 1e-8) -> tuple[dict[str, Any], np.ndarray, bool]:
        """The EM fit for the table attributes at positions ``cols``: ``(em, lev_g,
        fast)`` with ``lev_g`` the weight level of every full pattern of the table and
        ``fast`` True when the all-agree pattern of the scenario is alone on the top
        level (see :func:`._risk_kernels.pld_credit_batch`)."""
        mask = 0
        for c in cols:
            mask |= 1 << int(c)
        ru, rinv = np.unique(self.gpat & mask, return_inverse=True)
        rinv = rinv.ravel()
        rc = np.bincount(rinv, weights=self.gcnt, minlength=ru.size)
        bits = np.array(cols, dtype=np.int64)
        Gm = ((ru[:, None] >> bits[None, :]) & 1).astype(bool)
        em = fellegi_sunter_em(Gm, rc, match_share=1.0 / self.n, max_iter=max_iter, tol=tol)
        m = np.array(em["m"])
        u = np.array(em["u"])
        agree_w = np.log(m) - np.log(u)
        disagree_w = np.log1p(-m) - np.log1p(-u)
        wts = np.zeros(ru.size)
        for j in range(len(cols)):  # fixed summation order
            wts += np.where(Gm[:, j], agree_w[j], disagree_w[j])
        lev_u = _weight_levels(wts)
        lev_g = lev_u[rinv].astype(np.int64)
        em["agreement_weight"] = agree_w.tolist()
        em["disagreement_weight"] = disagree_w.tolist()
        top = lev_u.max() if lev_u.size else 0
        fast = bool(ru[-1] == mask and lev_u[-1] == top and int((lev_u == top).sum()) == 1)
        return em, lev_g, fast

    def scenario(self, cols: Sequence[int], *, max_iter: int = 500,
                 tol: float = 1e-8) -> dict[str, Any]:
        """PLD and the EM fit for the table attributes at positions ``cols``."""
        if self.rows is not None:  # the sampled estimator: its bound needs the squared credits
            return self.scenarios([cols], max_iter=max_iter, tol=tol)[0]
        em, lev_g, _fast = self.fit(cols, max_iter=max_iter, tol=tol)
        credit = float(pld_credit(lev_g, self.e_g, self.e_cnt, self._bounds, self.zero_a, self.true_g,
                                  int(lev_g[0])))
        return {"value": 100.0 * credit / self.n_records, "em": em}

    def scenarios(self, cols_list: Sequence[Sequence[int]], *, jobs: int = 1, max_iter: int = 500,
                  tol: float = 1e-8) -> list[dict[str, Any]]:
        """:meth:`scenario` for many scenarios: the EM fits side by side, then one pass
        over the originals for all scenarios (``jobs`` threads over fixed blocks of
        originals whose partial sums are added in block order: the result does not
        depend on ``jobs``)."""
        S = len(cols_list)
        if S == 0:
            return []
        if self.q > _DENSE_MAX_Q:  # no dense 2^q scratch: one scenario at a time
            return [self.scenario(c, max_iter=max_iter, tol=tol) for c in cols_list]
        jobs = max(1, int(jobs))
        fits = _in_threads(lambda c: self.fit(c, max_iter=max_iter, tol=tol), cols_list, jobs)
        G = self.gpat.size
        lev = np.empty((S, G), dtype=np.int32)
        masks = np.zeros(S, dtype=np.int64)
        fast = np.zeros(S, dtype=np.bool_)
        for s, (cols, (_em, lev_g, f)) in enumerate(zip(cols_list, fits)):
            lev[s] = lev_g
            fast[s] = f
            for c in cols:
                masks[s] |= 1 << int(c)
        L0 = np.ascontiguousarray(lev[:, 0])
        gpat = self.gpat.astype(np.int64)
        nr = self.n_records
        blocks = list(range(0, nr, _PLD_BLOCK))
        partial = np.zeros((len(blocks), S))
        partial2 = np.zeros((len(blocks), S))

        def run(b: int) -> None:
            a0 = blocks[b]
            F = np.zeros(1 << self.q, dtype=np.int64)
            pld_credit_batch(lev, masks, fast, L0, gpat, self.e_g, self.e_cnt, self._bounds, self.zero_a,
                             self.true_g, a0, min(nr, a0 + _PLD_BLOCK), F, partial[b], partial2[b])

        with progress_phase("PLD links, every scenario", total=nr, unit="rows"):
            _in_threads(run, range(len(blocks)), jobs,
                        after=lambda d: progress_set(min(nr, d * _PLD_BLOCK)))
        credit = partial.sum(axis=0)
        out = [{"value": 100.0 * float(credit[s]) / nr, "em": fits[s][0]} for s in range(S)]
        if self.rows is not None:
            squares = partial2.sum(axis=0)
            for s in range(S):
                out[s]["bound"] = sample_bound(float(credit[s]), float(squares[s]), nr)
        return out


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
    pattern is known). Time O(|S| n w / k) with w ~ n/100 and k the size of the
    classes of identical protected rows (compiled), memory O(n) times the number of
    distinct patterns per record. The EM runs compiled on the distinct patterns
    (O(2^|S| |S|) per iteration). Weights within a relative 1e-9 of each other are
    treated as equal (ties). The definition has no sub-quadratic exact algorithm
    known to us (the EM needs the counts of every agreement pattern over all n^2
    pairs: range counts in up to |S| dimensions), so :class:`RiskEvaluator` switches
    to a seeded estimator above ``pld_exact_max`` records and says so in its result.

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
    ev = RiskEvaluator(X, Xp, RiskOptions(pld_window_share=window_share, pld_attributes=sc))
    return ev.pld(sc)


# ---------------------------------------------------------------------------------
# the evaluator shared by all scenarios


@dataclasses.dataclass(frozen=True)
class RiskOptions:
    """The options of a :class:`RiskEvaluator` (defaults written once, here; #30).

    Fields as in :class:`RiskEvaluator`'s parameters.
    """

    k: int | None = None
    pld: bool = True
    pld_window_share: float = 0.01
    pld_exact_max: int = PLD_EXACT_MAX
    pld_sample: int = PLD_SAMPLE
    pld_seed: int = 0
    dld_exact_max: int = DLD_EXACT_MAX
    dld_sample: int = DLD_SAMPLE
    dld_seed: int = 0
    pld_attributes: Sequence[int] | None = None
    id_percents: Sequence[float] = DEFAULT_ID_PERCENTS
    sdid_factor: float = 0.05
    sdid_max_outside: int = 0
    dld_candidates: int = 0
    workers: int = 1

    def replace(self, **changes: Any) -> "RiskOptions":
        """A copy with ``changes`` (an unknown name is a TypeError, as for a keyword)."""
        return dataclasses.replace(self, **changes)


def _sample_plan(what: str, n: int, exact_max: int, sample: int, seed: int) -> tuple[str, np.ndarray | None]:
    """``("exact", None)`` up to ``exact_max`` records, else ``("sampled", rows)``: the
    sorted originals of a seeded sample of ``sample`` drawn without replacement (the
    estimators of PLD and DLD, ``what``)."""
    if exact_max < 0 or sample < 2:
        raise InvalidParameterError(f"{what}_exact_max must be >= 0 and {what}_sample >= 2")
    if n <= exact_max:
        return "exact", None
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    return "sampled", np.sort(rng.choice(n, size=min(n, sample), replace=False))


class RiskEvaluator:
    """Precomputed state to evaluate many intruder scenarios of one file pair.

    Parameters
    ----------
    X, Xp : (n, p) original and protected matrices (original units); not mutated.
    k : minimum group size (for the share of records in classes smaller than k).
    pld : build the PLD pair table (False skips PLD entirely).
    pld_window_share : PLD agreement window as a share of n (w = max(1, floor(share n))).
    pld_exact_max : PLD is exact up to this many records (default
        :data:`PLD_EXACT_MAX`); above, the estimator of ``pld_method = "sampled"``:
        the exact pair table of ``pld_sample`` originals drawn with ``pld_seed`` (all n
        protected records each), the EM fitted on their pattern counts scaled by n / m,
        and a confidence interval of half-width :func:`sample_bound`.
    pld_sample, pld_seed : size and seed of that sample.
    dld_exact_max, dld_sample, dld_seed : DLD is exact up to ``dld_exact_max`` records
        (default :data:`DLD_EXACT_MAX`); above, ``dld_method = "sampled"``: the exact
        credit of ``dld_sample`` originals drawn with ``dld_seed`` (each searched
        against every protected row), their mean, and :func:`sample_bound`.
    pld_attributes : columns the PLD table covers (default all; a scenario using other
        columns has no PLD). At most :data:`PLD_MAX_ATTRIBUTES`.
    id_percents : the interval sizes p of ID(p), in percent.
    sdid_factor : the SDID interval half-width in protected sds.
    sdid_max_outside : attributes allowed outside their SDID interval (0 = spec;
        1 = sdcMicro's ``dRiskWORK``).
    dld_candidates : K protected records per original, found once by an
        approximate K-nearest-neighbour query on all attributes, tried in every
        scenario's DLD after the rows that beat the original before (0 = none, the
        default: since those rows are tried, candidates cost more than they save,
        5-9 % at 10,000-50,000 records, all or 64 sampled scenarios). Results do not
        depend on it.
    workers : threads for kd-tree queries (results do not depend on it).
    """

    def __init__(
        self,
        X: np.ndarray,
        Xp: np.ndarray,
        options: RiskOptions | None = None,
        **changes: Any,
    ) -> None:
        # the options, as one object (#30); keywords (``k=3``...) replace its fields
        o = (options or RiskOptions()).replace(**changes) if changes else (options or RiskOptions())
        k, pld, pld_window_share, pld_attributes = o.k, o.pld, o.pld_window_share, o.pld_attributes
        pld_exact_max, pld_sample, pld_seed = o.pld_exact_max, o.pld_sample, o.pld_seed
        dld_exact_max, dld_sample, dld_seed = o.dld_exact_max, o.dld_sample, o.dld_seed
        id_percents, sdid_factor, sdid_max_outside = o.id_percents, o.sdid_factor, o.sdid_max_outside
        dld_candidates, workers = o.dld_candidates, o.workers
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
        self._rows_all: tuple[np.ndarray, np.ndarray, int] | None = None
        self._dld_sh: _DLDShared | None = None
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
        self.pld_exact_max, self.pld_sample, self.pld_seed = int(pld_exact_max), int(pld_sample), int(pld_seed)
        self.pld_method, pld_rows = _sample_plan("pld", n, self.pld_exact_max, self.pld_sample, self.pld_seed)
        self.pld_rows: np.ndarray | None = pld_rows if pld else None
        self.dld_exact_max, self.dld_sample, self.dld_seed = int(dld_exact_max), int(dld_sample), int(dld_seed)
        self.dld_method, self.dld_rows = _sample_plan("dld", n, self.dld_exact_max, self.dld_sample, self.dld_seed)
        if pld:
            cols = (list(range(p)) if pld_attributes is None
                    else sorted(set(map(int, pld_attributes))))
            if len(cols) > PLD_MAX_ATTRIBUTES:
                self.pld_skipped_reason = (
                    f"PLD supports at most {PLD_MAX_ATTRIBUTES} attributes, got {len(cols)}"
                )
            else:
                self.pld_columns = cols
                self.pld_table = _PLDTable(Ro[:, cols], Rp[:, cols], self.pld_window, workers=self.workers,
                                           rows=self.pld_rows)
        else:
            self.pld_skipped_reason = "not requested"

    # -- single measures --------------------------------------------------------

    def anonymity(self, sc: Sequence[int], *, rows: _RowClasses | None = None) -> dict[str, Any]:
        codes, m = (rows or self.rows).classes(sc)
        return _anonymity(codes, m, self.k)

    def _distinct(self) -> tuple[np.ndarray, np.ndarray, int]:
        """(class of each record, its first record, number of classes) of the
        identical protected rows (on every attribute)."""
        if self._rows_all is None:
            codes, m = _RowClasses(self.Zp).classes(tuple(range(self.p)))
            self._rows_all = (codes, _RowClasses.first_rows(codes), m)
        return self._rows_all

    def _candidates(self) -> np.ndarray | None:
        if self.dld_candidates <= 0:
            return None
        if self._cand_rows is None:
            from scipy.spatial import cKDTree  # 0.15 s to import: only when used

            codes, first, m = self._distinct()
            K = min(self.dld_candidates, m)
            tree = cKDTree(self.Zp[first])
            who = slice(None) if self.dld_rows is None else self.dld_rows
            _, nb = tree.query(self.Z[who], k=K, eps=1.0, workers=self.workers)
            near_x = np.zeros((self.n, K), dtype=np.int64)  # only the searched originals' rows are used
            near_x[who] = first[np.asarray(nb).reshape(-1, K)]
            # and the rows nearest to each distinct true row (itself comes first)
            K2 = min(self.dld_candidates + 1, m)
            _, nb2 = tree.query(self.Zp[first], k=K2, eps=1.0, workers=self.workers)
            near_t = first[np.asarray(nb2).reshape(m, K2)][codes][:, 1:]
            self._cand_rows = np.ascontiguousarray(np.hstack((near_x, near_t)), dtype=np.int64)
        return self._cand_rows

    def dld(self, sc: Sequence[int]) -> float:
        return self.dld_bounded(sc)[0]

    def dld_bounded(self, sc: Sequence[int]) -> tuple[float, float | None]:
        """DLD and, when sampled (``dld_method``), the half-width of its 95 % interval."""
        key = tuple(sorted(int(v) for v in sc))
        return self._by_layers([key], 1, lambda _sc, dld, _rows: dld)[key]

    def dld_many(self, scenarios: Sequence[Sequence[int]], *, jobs: int = 1) -> list[tuple[float, float | None]]:
        """:meth:`dld_bounded` of many scenarios, computed together (see :meth:`_by_layers`:
        far faster than one by one when scenarios and their subsets are asked for)."""
        scs = [tuple(sorted(int(v) for v in sc)) for sc in scenarios]
        done = self._by_layers(sorted(set(scs)), jobs, lambda _sc, dld, _rows: dld)
        return [done[sc] for sc in scs]

    def _dld_value(self, credit: np.ndarray) -> tuple[float, float | None]:
        total = float(credit.sum())
        if self.dld_rows is None:
            return 100.0 * total / self.n, None
        m = int(credit.size)
        return 100.0 * total / m, sample_bound(total, float((credit * credit).sum()), m)

    def _by_layers(self, scs: Sequence[tuple[int, ...]], jobs: int,
                   finish: Callable[[tuple[int, ...], tuple[float, float | None], _RowClasses], Any],
                   after: Callable[[int], None] | None = None) -> dict[tuple[int, ...], Any]:
        """``{sc: finish(sc, its DLD, row classes)}`` for the sorted scenarios ``scs``.

        Scenarios are visited by size, then lexicographically (shared prefixes reuse
        their exact row classes). Each scenario keeps, per original, a lower bound of
        its DLD *margin* (how much nearer than any other protected row its own row is)
        while a scenario with one attribute more is still to come; that scenario's
        originals whose bound, less the new attribute's own squared distance, stays
        clearly positive are credited without a search (see
        :func:`._risk_kernels.dld_filter`): on MDAV data most of the credited links
        of larger scenarios. Within a size, scenarios run in ``jobs`` threads, runs of
        consecutive scenarios each, one memo of beaten originals per thread; a bound
        or a memo only decides whether a search runs, never its result, so the result
        does not depend on ``jobs``. ``after(done)`` reports finished scenarios.
        """
        sh = self._dld_shared()
        want = set(scs)
        layers: dict[int, list[tuple[int, ...]]] = {}
        for sc in sorted(want):
            layers.setdefault(len(sc), []).append(sc)
        jobs = max(1, int(jobs))
        memos: queue.SimpleQueue[np.ndarray] = queue.SimpleQueue()
        for _ in range(jobs):
            memos.put(np.full((2, sh.who.size), -1, dtype=np.int64))
        results: dict[tuple[int, ...], Any] = {}
        prev = (np.empty((0, sh.who.size), dtype=np.float32), np.empty((0, sh.who.size), dtype=np.int32))
        prev_rows: dict[tuple[int, ...], int] = {}
        finished = 0
        for size in sorted(layers):
            layer = layers[size]
            # margins kept: the scenarios of this size that a scenario of the next is built on
            keep: dict[tuple[int, ...], int] = {}
            most = _DLD_KEEP_BYTES // (8 * max(1, sh.who.size))
            for t in layers.get(size + 1, []):
                for j in range(len(t)):
                    u = t[:j] + t[j + 1:]
                    if u in want and u not in keep and len(keep) < most:
                        keep[u] = len(keep)
            store = (np.empty((len(keep), sh.who.size), dtype=np.float32),
                     np.empty((len(keep), sh.who.size), dtype=np.int32))
            chunk = 1 if jobs == 1 else max(1, min(32, len(layer) // (8 * jobs)))
            runs = [layer[j:j + chunk] for j in range(0, len(layer), chunk)]
            ends = np.cumsum([len(r) for r in runs])

            def run(batch: list[tuple[int, ...]], prev: tuple = prev, prev_rows: dict = prev_rows,
                    keep: dict = keep, store: tuple = store) -> None:
                memo = memos.get()
                rows = self.rows if jobs == 1 else self.rows.fresh()
                try:
                    for sc in batch:
                        parents = np.array([prev_rows.get(sc[:j] + sc[j + 1:], -1) for j in range(len(sc))],
                                           dtype=np.int64)
                        extra = ([v for v in range(self.p) if v not in sc and tuple(sorted(sc + (v,))) in want]
                                 if sc in keep else [])
                        credit, margin = _dld_scenario(sh, sc, prev, parents, extra, memo)
                        if sc in keep:
                            store[0][keep[sc]] = _lower_f32(margin)
                            store[1][keep[sc]] = memo[1]
                        results[sc] = finish(sc, self._dld_value(sh.in_record_order(credit)), rows)
                finally:
                    memos.put(memo)

            def report(done: int, base: int = finished, ends: np.ndarray = ends) -> None:
                if after is not None:
                    after(base + (int(ends[done - 1]) if done else 0))

            _in_threads(run, runs, jobs, after=report)
            finished += len(layer)
            prev, prev_rows = store, keep
        return results

    def _dld_shared(self) -> _DLDShared:
        if self._dld_sh is None:
            self._dld_sh = _DLDShared(self)
        return self._dld_sh

    def pld(self, sc: Sequence[int]) -> dict[str, Any] | None:
        base = {"window": self.pld_window, "window_share": self.pld_window_share}
        if self.pld_table is None or not set(sc) <= set(self.pld_columns):
            reason = self.pld_skipped_reason or "attributes outside the PLD table"
            return {"value": None, **base, "em": None, "bound": None, "skipped_reason": reason}
        pos = {c: i for i, c in enumerate(self.pld_columns)}
        out = self.pld_table.scenario([pos[c] for c in sc])
        return {"value": out["value"], **base, "em": out["em"], "bound": out.get("bound")}

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

    def pld_many(self, scenarios: Sequence[Sequence[int]], *, jobs: int = 1) -> list[dict[str, Any]]:
        """:meth:`pld` of many sorted scenarios at once (one pass over the pair table)."""
        base = {"window": self.pld_window, "window_share": self.pld_window_share}
        out: list[dict[str, Any] | None] = [None] * len(scenarios)
        todo = []
        for i, sc in enumerate(scenarios):
            if self.pld_table is None or not set(sc) <= set(self.pld_columns):
                out[i] = self.pld(sc)
            else:
                todo.append(i)
        if todo:
            pos = {c: j for j, c in enumerate(self.pld_columns)}
            res = self.pld_table.scenarios([[pos[c] for c in scenarios[i]] for i in todo], jobs=jobs)
            for i, r in zip(todo, res):
                out[i] = {"value": r["value"], **base, "em": r["em"], "bound": r.get("bound")}
        return out  # type: ignore[return-value]

    def scenario(self, sc: Sequence[int], *, rows: _RowClasses | None = None,
                 pld: dict[str, Any] | None = None,
                 dld: tuple[float, float | None] | None = None) -> dict[str, Any]:
        """Every risk measure for the sorted scenario ``sc``.

        ``rows`` (a :class:`_RowClasses` of this file) lets threads evaluate scenarios
        side by side (each thread its own prefix cache); ``pld`` and ``dld`` are this
        scenario's results of :meth:`pld_many` and the layered DLD pass, when computed
        already.
        """
        sc = tuple(int(v) for v in sc)
        an = self.anonymity(sc, rows=rows)
        idd = self.interval_disclosure(sc)
        pl = self.pld(sc) if pld is None else pld
        dld_value, dld_bound = self.dld_bounded(sc) if dld is None else dld
        return {
            "attributes": list(sc),
            **an,
            "dld": dld_value,
            "pld": pl["value"],
            "id": idd["value"],
            "id_by_percent": idd["by_percent"],
            "sdid": self.sdid(sc),
            "pld_em": pl["em"],
            "pld_bound": pl.get("bound"),
            "dld_bound": dld_bound,
        }

    def evaluate(self, scenarios: Sequence[Sequence[int]], *, jobs: int = 1,
                 progress: Callable[[int, int], None] | None = None) -> list[dict[str, Any]]:
        """:meth:`scenario` for each scenario, in the given order.

        Scenarios are visited by size, then in lexicographic order (see
        :meth:`_by_layers`: DLD margins of a size settle most credited links of the
        next; the exact row classes of shared prefixes are reused). With ``jobs`` > 1
        the scenarios of a size run in that many threads (the compiled kernels and
        the kd-tree queries release the GIL); every scenario is computed the same way
        whatever the thread, so the result does not depend on ``jobs``.
        ``progress(done, total)`` counts distinct scenarios, called from the calling
        thread (with jobs > 1: at least every 0.1 s).
        """
        scs = [tuple(sorted(int(v) for v in s)) for s in scenarios]
        distinct = sorted(set(scs))
        total = len(distinct)
        jobs = max(1, int(jobs))
        if total:  # shared by every thread: built once, before them
            self._dld_shared()
        with _one_blas_thread(jobs):
            plds = dict(zip(distinct, self.pld_many(distinct, jobs=jobs)))

        def finish(sc: tuple[int, ...], dld: tuple[float, float | None], rows: _RowClasses) -> dict[str, Any]:
            return self.scenario(sc, rows=rows, pld=plds[sc], dld=dld)

        def after(count: int) -> None:
            progress_set(count)
            if progress is not None:
                progress(count, total)

        with progress_phase("intruder scenarios", total=total, unit="scenarios"), _one_blas_thread(jobs):
            done = self._by_layers(distinct, jobs, finish, after=after)
        return [dict(done[sc]) for sc in scs]


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
