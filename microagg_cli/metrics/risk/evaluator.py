"""The evaluator shared by all intruder scenarios of one file pair.

The evaluator (:class:`RiskEvaluator`, its options :class:`RiskOptions`): z-scores, ranks, the PLD
pair table, the interval-disclosure counts and the DLD search state are built once, so
that evaluating hundreds of scenarios costs little more than one; and the measures of
one scenario built on it: :func:`dld` (Domingo-Ferrer & Torra 2001), :func:`pld`
(Fellegi & Sunter 1969, Jaro 1989), :func:`interval_disclosure` (Mateo-Sanz, Sebe &
Domingo-Ferrer 2004) and :func:`sdid` (sdcMicro's dRisk: Templ, Kowarik & Meindl 2015).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ...errors import InvalidParameterError
from ...progress import phase as progress_phase
from ...progress import set_done as progress_set
from ...threads import one_blas_thread
from .anonymity import RowClasses, class_summary
from .common import attribute_subset, checked_pair, original_ranks, protected_ranks
from .distance_linkage import DLD_EXACT_MAX, DLD_SAMPLE, DLDShared, dld_by_layers
from .interval import DEFAULT_ID_PERCENTS, id_hits, id_window
from .probabilistic_linkage import PLD_EXACT_MAX, PLD_MAX_ATTRIBUTES, PLD_SAMPLE, PLDTable, pld_window
from .sampling import sample_bound, sample_plan

__all__ = ["RiskOptions", "RiskEvaluator", "dld", "pld", "interval_disclosure", "sdid"]


@dataclasses.dataclass(frozen=True)
class RiskOptions:
    """The options of a :class:`RiskEvaluator` (defaults written once, here).

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
        # the options, as one object; keywords (``k=3``...) replace its fields
        o = (options or RiskOptions()).replace(**changes) if changes else (options or RiskOptions())
        k, pld, pld_window_share, pld_attributes = o.k, o.pld, o.pld_window_share, o.pld_attributes
        pld_exact_max, pld_sample, pld_seed = o.pld_exact_max, o.pld_sample, o.pld_seed
        dld_exact_max, dld_sample, dld_seed = o.dld_exact_max, o.dld_sample, o.dld_seed
        id_percents, sdid_factor, sdid_max_outside = o.id_percents, o.sdid_factor, o.sdid_max_outside
        dld_candidates, workers = o.dld_candidates, o.workers
        X, Xp = checked_pair(X, Xp)
        n, p = X.shape
        self.n, self.p = n, p
        self.k = k
        self.workers = int(workers)
        mean = X.mean(axis=0)
        sd = X.std(axis=0)
        scale = np.where(sd > 0, sd, 1.0)
        self.Z = (X - mean) / scale
        self.Zp = (Xp - mean) / scale
        self.rows = RowClasses(Xp)
        self.dld_candidates = int(dld_candidates)
        self._cand_rows: np.ndarray | None = None
        self._rows_all: tuple[np.ndarray, np.ndarray, int] | None = None
        self._dld_sh: DLDShared | None = None
        self.id_percents = [float(q) if not float(q).is_integer() else int(q) for q in id_percents]
        if not self.id_percents or any(not (0 < q <= 100) for q in self.id_percents):
            raise InvalidParameterError("ID percents must be in (0, 100]")
        orig = original_ranks(X)  # kept for the next protected file of X
        Ro, sorted_cols = orig.ranks, list(orig.sorted_cols)
        Rp = protected_ranks(sorted_cols, Xp)
        self.id_hits = id_hits(X, sorted_cols, Rp, self.id_percents)
        if sdid_factor < 0:
            raise InvalidParameterError("the SDID factor must be >= 0")
        self.sdid_factor = float(sdid_factor)
        if int(sdid_max_outside) != sdid_max_outside or sdid_max_outside < 0:
            raise InvalidParameterError("sdid_max_outside must be an integer >= 0")
        self.sdid_max_outside = int(sdid_max_outside)
        sdp = Xp.std(axis=0, ddof=1) if n > 1 else np.zeros(p)
        self.sdid_within = np.abs(X - Xp) <= self.sdid_factor * sdp
        # per record, a bit per attribute outside its interval: a scenario with no
        # attribute allowed outside (the default) is then one AND per record
        self._sdid_bits = (None if p > 63 else
                           ((~self.sdid_within).astype(np.int64) << np.arange(p, dtype=np.int64)).sum(axis=1))
        if not 0 < pld_window_share <= 1:
            raise InvalidParameterError("the PLD window share must be in (0, 1]")
        self.pld_window_share = float(pld_window_share)
        self.pld_window = pld_window(n, pld_window_share)
        self.pld_skipped_reason: str | None = None
        self.pld_table: PLDTable | None = None
        self.pld_columns: list[int] = []
        self.pld_exact_max, self.pld_sample, self.pld_seed = int(pld_exact_max), int(pld_sample), int(pld_seed)
        self.pld_method, pld_rows = sample_plan("pld", n, self.pld_exact_max, self.pld_sample, self.pld_seed)
        self.pld_rows: np.ndarray | None = pld_rows if pld else None
        self.dld_exact_max, self.dld_sample, self.dld_seed = int(dld_exact_max), int(dld_sample), int(dld_seed)
        self.dld_method, self.dld_rows = sample_plan("dld", n, self.dld_exact_max, self.dld_sample, self.dld_seed)
        if pld:
            cols = (list(range(p)) if pld_attributes is None
                    else sorted(set(map(int, pld_attributes))))
            if len(cols) > PLD_MAX_ATTRIBUTES:
                self.pld_skipped_reason = (
                    f"PLD supports at most {PLD_MAX_ATTRIBUTES} attributes, got {len(cols)}"
                )
            else:
                self.pld_columns = cols
                self.pld_table = PLDTable(Ro[:, cols], Rp[:, cols], self.pld_window, workers=self.workers,
                                           rows=self.pld_rows, orders=[orig.orders[c] for c in cols])
        else:
            self.pld_skipped_reason = "not requested"

    # -- single measures --------------------------------------------------------

    def anonymity(self, sc: Sequence[int], *, rows: RowClasses | None = None) -> dict[str, Any]:
        codes, m = (rows or self.rows).classes(sc)
        return class_summary(codes, m, self.k)

    def _distinct(self) -> tuple[np.ndarray, np.ndarray, int]:
        """(class of each record, its first record, number of classes) of the
        identical protected rows (on every attribute)."""
        if self._rows_all is None:
            codes, m = RowClasses(self.Zp).classes(tuple(range(self.p)))
            self._rows_all = (codes, RowClasses.first_rows(codes), m)
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
                   finish: Callable[[tuple[int, ...], tuple[float, float | None], RowClasses], Any],
                   after: Callable[[int], None] | None = None) -> dict[tuple[int, ...], Any]:
        """``{sc: finish(sc, its DLD, row classes)}`` for the sorted scenarios ``scs``, by
        layers of scenario sizes (:func:`.distance_linkage.dld_by_layers`)."""
        return dld_by_layers(self._dld_shared(), self.rows, self.p, scs, jobs, self._dld_value, finish, after)

    def _dld_shared(self) -> DLDShared:
        if self._dld_sh is None:
            self._dld_sh = DLDShared(self.Z, self.Zp, self._distinct(), self.dld_rows, self._candidates())
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
        if self.sdid_max_outside == 0 and self._sdid_bits is not None:
            mask = np.int64(sum(1 << int(v) for v in set(sc)))
            return float(np.count_nonzero((self._sdid_bits & mask) == 0)) / self._sdid_bits.size
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

    def scenario(self, sc: Sequence[int], *, rows: RowClasses | None = None,
                 pld: dict[str, Any] | None = None,
                 dld: tuple[float, float | None] | None = None) -> dict[str, Any]:
        """Every risk measure for the sorted scenario ``sc``.

        ``rows`` (a :class:`RowClasses` of this file) lets threads evaluate scenarios
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
        with one_blas_thread(jobs):
            plds = dict(zip(distinct, self.pld_many(distinct, jobs=jobs)))

        def finish(sc: tuple[int, ...], dld: tuple[float, float | None], rows: RowClasses) -> dict[str, Any]:
            return self.scenario(sc, rows=rows, pld=plds[sc], dld=dld)

        def after(count: int) -> None:
            progress_set(count)
            if progress is not None:
                progress(count, total)

        with progress_phase("intruder scenarios", total=total, unit="scenarios"), one_blas_thread(jobs):
            done = self._by_layers(distinct, jobs, finish, after=after)
        return [dict(done[sc]) for sc in scs]


# ---------------------------------------------------------------------------------
# the measures of one scenario


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
    (the last 4 rows that beat them and the rows kept by the scenarios with one
    attribute less; with ``dld_candidates`` K of :class:`RiskEvaluator`, also their K
    approximate nearest rows on every attribute and the K rows nearest to their true
    row): one strictly nearer settles "no credit". The others are
    searched exactly in a k-d tree of the distinct rows on the scenario's attributes
    (compiled; a box is pruned only when its lower bound, computed in the same order of
    operations, exceeds the radius): a strictly nearer row ends the search, rows
    exactly as near are counted as ties, and the nearest other row gives the margin.
    Bounds and tried rows only decide whether a search runs, never its result: exact.
    O(n log n) per scenario for a fixed number of attributes in practice, memory O(n)
    plus the margins and near rows kept for the next size of scenarios (at most 2 x 576 MB).

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
    X, Xp = checked_pair(X, Xp)
    ev = RiskEvaluator(X, Xp, RiskOptions(pld=False, dld_candidates=0, workers=workers, dld_exact_max=X.shape[0]))
    return ev.dld(attribute_subset(attributes, X.shape[1]))


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
    X, Xp = checked_pair(X, Xp)
    sc = attribute_subset(attributes, X.shape[1])
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
    X, Xp = checked_pair(X, Xp)
    sc = attribute_subset(attributes, X.shape[1])
    ev = RiskEvaluator(X, Xp, RiskOptions(pld=False, sdid_factor=factor, sdid_max_outside=max_outside))
    return ev.sdid(sc)


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
    attribute are enumerated through rank windows (see :class:`.probabilistic_linkage.PLDTable`), all
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
    X, Xp = checked_pair(X, Xp)
    sc = attribute_subset(attributes, X.shape[1])
    ev = RiskEvaluator(X, Xp, RiskOptions(pld_window_share=window_share, pld_attributes=sc))
    return ev.pld(sc)
