"""One-to-one record linkage: the share of records an intruder links correctly.

Every protected record may be claimed by one original only.

DLD (:func:`microagg_cli.metrics.risk.dld`) links each original to its nearest
protected record, so several originals may claim the same one. An intruder holding
the whole original file can do better: choose the one-to-one assignment of originals
to protected records of smallest total distance (global distance-based record
linkage, Herranz, Nin, Rodriguez & Tassa 2015; sdcMicro's ``recordLinkage``). This
module solves that assignment exactly (``scipy.optimize.linear_sum_assignment``) up
to :data:`LINKAGE_EXACT_MAX` records and estimates it on local windows above.

Ties. Protected records that are identical on the known attributes (a
microaggregation group) are interchangeable: every optimal assignment stays optimal
when they are permuted, and so do identical originals. A record earns the expected
credit over those permutations: original i, in the class a of originals identical
to it and linked (by the assignment) ``m_ab`` times into the class b of protected
records identical to its true one, earns ``m_ab / (|a| |b|)`` (1 when nothing is tied;
1/t for a link into the true record's class of t identical protected records when
the originals are distinct). The figure does not depend on which of those optimal
assignments the solver returns. Other equally good assignments (rare with squared
Euclidean distances, common with Manhattan or Gower on few attributes) are decided by
the solver, the same way for the same input.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import InvalidParameterError
from .utility import as_pair

__all__ = [
    "LINKAGE_DISTANCES",
    "LINKAGE_EXACT_MAX",
    "LINKAGE_SCENARIOS",
    "LINKAGE_WINDOW",
    "LINKAGE_WINDOWS",
    "TIE_RULE",
    "LinkageEvaluator",
    "linkage",
    "linkage_scenarios",
]

#: The distances offered: euclidean (the assignment minimises the sum of *squared*
#: Euclidean distances), euclidean-plain (the sum of plain Euclidean distances, as
#: sdcMicro's ``recordLinkage`` sums them), manhattan and gower.
LINKAGE_DISTANCES = ("euclidean", "euclidean-plain", "manhattan", "gower")
_METRIC = {"euclidean": "sqeuclidean", "euclidean-plain": "euclidean"}
#: Exact assignment up to this many records: one n x n cost matrix (32 MB at 2,000)
#: and 1-4 s of ``linear_sum_assignment`` (measured, microaggregated data, 2 cores).
LINKAGE_EXACT_MAX = 2000
#: Records per local window of the estimator used above :data:`LINKAGE_EXACT_MAX`. A
#: window has fewer decoys than the whole file, so smaller windows overstate the
#: linkage: 50,000 x 10 Gaussian mixture, MDAV k = 3, all columns known: 45.6 % with
#: windows of 500, 38.4 % (1,000), 35.3 % (2,000), 33.9 % (4,000); DLD 30.8 %. But the
#: assignment's time grows up to the cube of the window where linking is hard (groups
#: of 3 along one column, the same 50,000 x 10: 4 scenarios in 12 s with windows of
#: 1,000, 70 s with 2,000), so windows stay at 1,000.
LINKAGE_WINDOW = 1000
#: Windows per scenario of that estimator.
LINKAGE_WINDOWS = 4
#: Intruder scenarios linkage is computed for by default (the largest ones; see
#: :func:`linkage_scenarios`): one assignment per scenario is far dearer than DLD.
LINKAGE_SCENARIOS = 4

TIE_RULE = ("expected credit over the optimal assignments that permute identical records: original i "
            "linked m times into the class of protected records identical to its true one earns "
            "m / (|a| |b|), a and b the classes of identical originals and protected records")


def _scaled(X: np.ndarray, Xp: np.ndarray, distance: str) -> tuple[np.ndarray, np.ndarray]:
    """Both files on the distance's scale: z-scores with the original's means and
    population sds (euclidean, manhattan; as DLD), or divided by each column's range
    over both files and by the number of columns (gower, numeric columns as sdcMicro's
    ``daisy``); a constant column is left at 0."""
    if distance == "gower":
        lo = np.minimum(X.min(axis=0), Xp.min(axis=0))
        rng = np.maximum(X.max(axis=0), Xp.max(axis=0)) - lo
        rng = np.where(rng > 0, rng, 1.0) * X.shape[1]
        return (X - lo) / rng, (Xp - lo) / rng
    mean = X.mean(axis=0)
    sd = X.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    return (X - mean) / sd, (Xp - mean) / sd


def _classes(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(class of each row among identical rows, class sizes)."""
    _, inv, counts = np.unique(A, axis=0, return_inverse=True, return_counts=True)
    return inv.ravel(), counts


def _credit(A: np.ndarray, B: np.ndarray, assigned: np.ndarray) -> np.ndarray:
    """Expected credit of each original (row of ``A``) linked to protected row
    ``assigned[i]`` of ``B`` whose true partner is row i (see the module's ties)."""
    a, na = _classes(A)
    b, nb = _classes(B)
    # m_ab: links from class a into class b; each original asks for (a_i, b_i)
    key_link = a * nb.size + b[assigned]
    key_true = a * nb.size + b
    links, counts = np.unique(key_link, return_counts=True)
    pos = np.searchsorted(links, key_true)
    pos_ok = np.minimum(pos, links.size - 1)
    m = np.where(links[pos_ok] == key_true, counts[pos_ok], 0)
    return m / (na[a] * nb[b]).astype(np.float64)


def _assign(A: np.ndarray, B: np.ndarray, distance: str) -> np.ndarray:
    """The protected row assigned to each original by the one-to-one assignment of
    smallest total cost: squared Euclidean distance (euclidean), plain Euclidean distance
    (euclidean-plain), or the Manhattan distance of the scaled values (manhattan, gower)."""
    from scipy.optimize import linear_sum_assignment
    from scipy.spatial.distance import cdist

    cost = cdist(A, B, metric=_METRIC.get(distance, "cityblock"))
    rows, cols = linear_sum_assignment(cost)
    out = np.empty(A.shape[0], dtype=np.int64)
    out[rows] = cols
    return out


class LinkageEvaluator:
    """One-to-one linkage of one file pair under many intruder scenarios.

    Parameters
    ----------
    X, Xp : (n, p) original and protected matrices, same records in the same order;
        not mutated.
    distance : ``"euclidean"`` (default; the assignment minimises the sum of squared
        distances), ``"euclidean-plain"`` (the sum of plain distances) or ``"manhattan"``
        on z-scores, or ``"gower"`` (range-scaled
        Manhattan, mean over the columns).
    exact_max : exact assignment up to this many records (:data:`LINKAGE_EXACT_MAX`).
    window, windows, seed : above ``exact_max``, the ``"windows"`` estimator: ``windows``
        originals drawn with ``seed`` are window centres; each window is the ``window``
        originals nearest to its centre (on the scenario's attributes, ties by row
        order) with their protected records, linked exactly among themselves; the
        credit of the nearer half of each window (whose decoys lie around them as in
        the whole file) is averaged over the windows.

    Notes
    -----
    Exact: O(n^2) memory and O(n^3) time in the worst case (``linear_sum_assignment``,
    a shortest augmenting path method). A sparse assignment on k-nearest-neighbour
    candidates (``scipy.sparse.csgraph.min_weight_full_bipartite_matching``) was
    measured and set aside: without extra edges a full matching often does not exist
    (5,000 records, 10 candidates), and with them it took 239 s at 20,000 records.
    Windows: ``windows`` exact assignments of ``window`` records plus O(n p) per
    window, whatever n. A window holds fewer decoys than the whole file (at its rim,
    and more so in many dimensions), so the estimate errs on the high side, by less
    the larger the window (see :data:`LINKAGE_WINDOW`); the report names it with its
    window size.
    """

    def __init__(self, X: np.ndarray, Xp: np.ndarray, *, distance: str = "euclidean",
                 exact_max: int = LINKAGE_EXACT_MAX, window: int = LINKAGE_WINDOW,
                 windows: int = LINKAGE_WINDOWS, seed: int = 0) -> None:
        X, Xp = as_pair(X, Xp)
        if distance not in LINKAGE_DISTANCES:
            raise InvalidParameterError(
                f"unknown linkage distance {distance!r} (use {', '.join(LINKAGE_DISTANCES)})")
        if int(exact_max) < 0 or int(window) < 2 or int(windows) < 1:
            raise InvalidParameterError("linkage_exact_max must be >= 0, linkage_window >= 2 and "
                                        "linkage_windows >= 1")
        self.n, self.p = X.shape
        self.distance = distance
        self.exact_max, self.window, self.windows, self.seed = int(exact_max), int(window), int(windows), int(seed)
        self.method = "exact" if self.n <= self.exact_max else "windows"
        self.Z, self.Zp = _scaled(X, Xp, distance)
        self.centres: np.ndarray | None = None
        if self.method == "windows":
            rng = np.random.default_rng(np.random.SeedSequence(self.seed))
            self.centres = np.sort(rng.choice(self.n, size=min(self.n, self.windows), replace=False))

    def _window_rows(self, A: np.ndarray, centre: int) -> np.ndarray:
        """The ``window`` originals nearest to original ``centre`` on the columns of
        ``A``, nearest first, ties by row order."""
        D = A - A[centre]
        d = (np.abs(D).sum(axis=1) if self.distance not in _METRIC else np.einsum("ij,ij->i", D, D))
        m = min(self.window, self.n)
        part = np.argpartition(d, m - 1)[:m] if m < self.n else np.arange(self.n)
        cut = d[part].max()
        near = np.flatnonzero(d <= cut)  # the boundary's ties, in row order
        near = near[np.lexsort((near, d[near]))]
        return near[:m]

    def scenario(self, sc: Sequence[int]) -> dict[str, Any]:
        """``{"value", "records"}``: the percentage of credited records linked to their
        true protected record (expected credit, see the module's ties) and how many
        records were credited (n when exact)."""
        cols = list(sc)
        A, B = self.Z[:, cols], self.Zp[:, cols]
        if self.method == "exact":
            credit = _credit(A, B, _assign(A, B, self.distance))
            return {"value": 100.0 * float(credit.sum()) / self.n, "records": int(self.n)}
        total, count = 0.0, 0
        assert self.centres is not None
        for c in self.centres:
            rows = self._window_rows(A, int(c))
            sub_a, sub_b = A[rows], B[rows]
            credit = _credit(sub_a, sub_b, _assign(sub_a, sub_b, self.distance))
            inner = credit[: max(1, rows.size // 2)]
            total += float(inner.sum())
            count += int(inner.size)
        return {"value": 100.0 * total / count, "records": count}

    def parameters(self) -> dict[str, Any]:
        """The report's description of the linkage (method, distance, estimator sizes)."""
        sampled = self.method == "windows"
        return {
            "method": self.method,
            "distance": self.distance,
            "scale": "range / p" if self.distance == "gower" else "z-scores",
            "exact_max": self.exact_max,
            "window": self.window if sampled else None,
            "windows": int(self.centres.size) if sampled and self.centres is not None else None,
            "seed": self.seed if sampled else None,
            "tie_rule": TIE_RULE,
        }


def linkage(X: np.ndarray, Xp: np.ndarray, attributes: Sequence[int] | None = None, *,
            distance: str = "euclidean", exact_max: int = LINKAGE_EXACT_MAX,
            window: int = LINKAGE_WINDOW, windows: int = LINKAGE_WINDOWS, seed: int = 0) -> float:
    """Percentage of records linked to their true protected record by the one-to-one
    assignment of smallest total distance on ``attributes`` (default all); see
    :class:`LinkageEvaluator` for the parameters and the module for the tie rule.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0], [1.0]])
    >>> linkage(X, np.array([[0.6], [2.0]]))  # DLD: 50 (both nearest to 0.6)
    100.0
    >>> linkage(np.array([[0.0], [1.0], [2.0], [10.0], [11.0], [12.0]]),
    ...         np.array([[1.0], [1.0], [1.0], [11.0], [11.0], [11.0]]))  # groups of 3: 1/3 each
    33.33333333333333

    References
    ----------
    Herranz, J., Nin, J., Rodriguez, P. & Tassa, T. (2015). Revisiting distance-based
    record linkage for privacy-preserving release of statistical datasets. Data &
    Knowledge Engineering 100, 78-93.
    """
    ev = LinkageEvaluator(X, Xp, distance=distance, exact_max=exact_max, window=window,
                          windows=windows, seed=seed)
    sc = list(range(ev.p)) if attributes is None else sorted(int(v) for v in attributes)
    if not sc or sc[0] < 0 or sc[-1] >= ev.p or len(set(sc)) != len(sc):
        raise InvalidParameterError(f"invalid attribute subset {attributes!r} for {ev.p} columns")
    return ev.scenario(sc)["value"]


def linkage_scenarios(subsets: Sequence[Sequence[int]], cap: int) -> list[int]:
    """Positions (in ``subsets``) of the scenarios linkage is computed for: all when
    there are at most ``cap`` (0 = all), else the ``cap`` largest (the intruder who
    knows more links better; ties in the given order)."""
    if cap < 0:
        raise InvalidParameterError(f"the number of linkage scenarios must be >= 0, got {cap}")
    idx = list(range(len(subsets)))
    if cap == 0 or len(idx) <= cap:
        return idx
    return sorted(sorted(idx, key=lambda i: -len(subsets[i]))[:cap])
