"""A certified lower bound on the optimal SSE of a k-partition, by column generation.

The microaggregation problem on a z-scored block Z (n records) is the set-partitioning
model

    minimise  sum_S SSE(S) x_S   s.t.  sum_{S containing i} x_S = 1 for every record i,
    x_S in {0, 1},  over all subsets S with k <= |S| <= 2k - 1

(groups of 2k or more records can be split without raising the SSE, so the size cap
loses no optimum). Its LP relaxation is solved by column generation (Aloise, Hansen,
Rocha & Santi 2014): a restricted master LP over the columns met so far (HiGHS via
:func:`scipy.optimize.linprog`, duals ``u`` from the equality marginals), heuristic
pricing to grow the column set fast, and an *exact* pricing by branch and bound that
proves what the most negative reduced cost rc(S) = SSE(S) - sum_{i in S} u_i is.

The master is box-step stabilised (du Merle et al. 1999): without it, a k-partition
start leaves a huge degenerate dual face and the duals jump around wildly. The exact
pricing first proves only rc >= -theta (a certified tolerance, costing at most
floor(n/k) * theta of the bound), then tightens theta to ``tol``.

What makes the exact pricing work at k = 10 (groups of 10..19 records in 13-D):
seeds taken in order of decreasing dual (:func:`pricing_order`), so that the records
with large duals, which make the reduced-cost bounds weakest, are kept out of every
later seed's candidates; nearest-neighbour sums restricted to the node's pool of
candidates (:func:`._cg_kernels.local_nn`); and a second, Gilmore-Lawler bound with part of the
linear terms moved onto the pairs (:func:`._cg_kernels.alpha_filter`), which charges a record
for its partners' costs. On Census at k = 5 the LP is now solved in about 70 s (was
13 min). Where the pricing still cannot finish at the column-generation duals, the
bound is taken at smoothed duals between the plain restricted master's duals and the
LB_NN duals (:func:`_smoothed_bounds`), every one of which gives a valid bound; there
the few seeds a pass leaves cut are priced again alone, with a wider node budget each
round (Census k = 10: 10.73 % after one pass, 10.83 % after two such rounds). Seeds are
priced side by side in threads (``jobs``; each seed's search is independent).
The compiled kernels are in :mod:`._cg_kernels`; the measure built on the bound
(lb_cg per block and overall, the ``sdc evaluate --bound cg`` section) in :mod:`.lb_cg`.

A search cut by its node budget still gives a bound: every subtree left unexplored
is charged the largest bound met on its path from the root (a child's own bound can
be weaker than its parent's: it is computed over a different pool, often without the
partner-charging bound). A seed whose search was cut is searched again, first with
the partner-charging bound at the top ``deep`` levels of the tree (not only at the
root), then with its threshold bisected between the bound proven and the best rc met
(:func:`exact_pricing`); each result, completed or cut, is a valid bound. Census
k = 10, one pricing pass at the same duals and 2,000 nodes per seed: 455 with
the old accounting, 1,088 with the path maximum; at smoothed duals (3,000 nodes) the
15 hardest seeds' bounds summed to -71.7 before the deeper bound, -13.2 with it.

The bound reported is never the LP value of the restricted master itself (that is an
upper bound on the LP optimum): it is a Lagrangian (Farley-type) bound, valid for ANY
vector ``u``, computed from the exact pricing (see :func:`lagrangian_bound`). Every
group S has one *seed*, its first member in the pricing order; the exact pricing gives, for each
record i, a proven lower bound l_i <= min {rc(S) : seed(S) = i} (clipped at 0). A
k-partition has at most floor(n/k) groups with distinct seeds, so

    OPT >= sum_i u_i + (sum of the floor(n/k) most negative l_i),

which is the classical bound LP + (n/k) x (min reduced cost), sharpened by using one
value per seed. Because it holds for every ``u``, inaccurate duals or an unfinished
column generation only weaken it; a time limit still returns a valid bound.

Floating point. The duals are just numbers; nothing assumes they are optimal or
feasible. The bound is evaluated from them with an explicit rounding allowance:
sum u is a correctly rounded :func:`math.fsum`, and each per-seed l_i is lowered by a
margin that dominates the rounding error of the float64 expressions the branch and
bound evaluates (sums of at most (2k-1)^2 non-negative squared distances and 2k-1
duals; relative error <= (2k)^2 * 2^-52, taken x 64 for safety, times the
magnitudes involved). The squared distances are computed coordinate-wise (no
|a|^2 + |b|^2 - 2ab cancellation). What remains is the rounding of the z-scored data
itself, which the IL figure being bounded shares.

References
----------
Aloise, D., Hansen, P., Rocha, C. & Santi, E. (2014). Column generation bounds for
numerical microaggregation. Journal of Global Optimization 60(2), 165-182.
Castro, J., Gentile, C. & Spagnolo-Arrizabalaga, E. (2022). An optimization-based
decomposition heuristic for the microaggregation problem. PSD 2022, LNCS 13463.
du Merle, O., Villeneuve, D., Desrosiers, J. & Hansen, P. (1999). Stabilized column
generation. Discrete Mathematics 194, 229-237.
Wentges, P. (1997). Weighted Dantzig-Wolfe decomposition for linear mixed-integer
programming. International Transactions in Operational Research 4(2), 151-162.
Farley, A. A. (1990). A note on bounding a class of linear programming problems,
including cutting stock problems. Operations Research 38(5), 922-923.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy import sparse
from scipy.optimize import LinearConstraint, OptimizeWarning, linprog, milp

from ..errors import InvalidParameterError
from ..partition import canonical_labels
from ._cg_kernels import exact_seed, heuristic_all, nn_prefix, sqdist

__all__ = [
    "CGResult",
    "cg_lower_bound",
    "lagrangian_bound",
    "exact_pricing",
    "PricingOptions",
    "pricing_order",
    "squared_distances",
    "MAX_ROWS",
]

#: Largest block (records) the bound is computed for: the pricing keeps the n x n
#: matrix of squared distances (8 n^2 bytes, 128 MB at 4,000).
MAX_ROWS = 4000

_EPS = 2.0 ** -52


def squared_distances(Z: np.ndarray) -> np.ndarray:
    """(n, n) squared Euclidean distances, coordinate-wise (non-negative, no cancellation)."""
    return sqdist(np.ascontiguousarray(Z, dtype=np.float64))


def _group_sse(D: np.ndarray, members: np.ndarray) -> float:
    m = members.size
    sub = D[np.ix_(members, members)]
    return float(sub.sum()) / (2.0 * m)


def _start_partition(Z: np.ndarray, k: int, labels: np.ndarray | None) -> list[np.ndarray]:
    """Groups of a feasible start (sizes k..2k-1): the given labels, large groups split."""
    n = Z.shape[0]
    groups: list[np.ndarray] = []
    if labels is not None:
        lab = canonical_labels(np.asarray(labels))
        sizes = np.bincount(lab)
        if lab.shape == (n,) and sizes.min() >= k:
            for g in range(sizes.size):
                groups.extend(_split(Z, np.flatnonzero(lab == g), k))
            return groups
    return _split(Z, np.arange(n), k)


def _split(Z: np.ndarray, idx: np.ndarray, k: int) -> list[np.ndarray]:
    """Cut a set of >= k records into runs of k..2k-1 along its first principal axis."""
    s = idx.size
    if s <= 2 * k - 1:
        return [idx]
    Y = Z[idx] - Z[idx].mean(axis=0)
    _, _, vt = np.linalg.svd(Y, full_matrices=False)
    order = idx[np.argsort(Y @ vt[0], kind="stable")]
    parts = s // k
    cuts = [k * a for a in range(parts)] + [s]
    return [order[cuts[a]: cuts[a + 1]] for a in range(parts)]


def lagrangian_bound(u: np.ndarray, seed_lower: np.ndarray, n: int, k: int,
                     margin: np.ndarray | float = 0.0) -> float:
    """OPT >= fsum(u) + sum of the floor(n/k) most negative min(0, seed_lower_i - margin_i).

    Valid for any ``u`` when ``seed_lower[i]`` is a lower bound on the reduced cost
    SSE(S) - u(S) of every group S (k..2k-1 records) whose seed is i (one member
    chosen by a fixed rule, e.g. the first in an order of the records): a partition has at most floor(n/k) groups, with distinct seeds. See the module
    docstring for the rounding allowance ``margin``.
    """
    v = np.minimum(0.0, np.asarray(seed_lower, dtype=np.float64) - margin)
    g = n // k
    worst = np.sort(v)[:g]
    # the sum of non-positive terms, rounded, is within g * eps * sum|v| of the exact
    # sum; subtract that allowance too
    s = math.fsum(worst.tolist())
    s -= 4.0 * g * _EPS * float(np.abs(worst).sum())
    su = math.fsum(np.asarray(u, dtype=np.float64).tolist())
    su -= 4.0 * n * _EPS * float(np.abs(u).sum())
    return su + s


def _margin(u: np.ndarray, D: np.ndarray, kmax: int) -> np.ndarray:
    """Per-seed rounding allowance for the branch and bound's reduced costs."""
    ops = float(kmax * kmax + 4 * kmax)
    umax = float(np.abs(u).max()) if u.size else 0.0
    dmax = float(D.max()) if D.size else 0.0
    scale = kmax * umax + kmax * dmax + 1.0
    return np.full(u.shape[0], 64.0 * ops * _EPS * scale)


def pricing_order(u: np.ndarray) -> np.ndarray:
    """The records by decreasing dual (ties by index): the seed order of the exact pricing.

    Any order gives valid per-seed bounds (each group has exactly one seed, its
    first member in the order). Putting the records with large duals first makes
    them seeds early and keeps them out of every later seed's candidates, where
    their duals would make the reduced-cost bounds weakest.
    """
    return np.argsort(-np.asarray(u, dtype=np.float64), kind="stable").astype(np.int64)


def _collect(out_sets: np.ndarray, out_rc: np.ndarray, found: int, keep: int,
             cols: list[np.ndarray], default: float) -> float:
    """Append the groups a search wrote (``found``, at most ``keep``); return the best rc met."""
    for a in range(min(found, keep)):
        s = out_sets[a]
        cols.append(np.sort(s[s >= 0]))
    return float(out_rc[(found - 1) % keep]) if found else default


@dataclass(frozen=True)
class PricingOptions:
    """How :func:`exact_pricing` searches; the fields are described there."""

    tol: float = 1e-7
    node_limit: int = 10**9
    deadline: float | None = None
    keep: int = 3
    refine: int = 3
    deep: int = 3
    jobs: int | None = None


def _price_seed(D: np.ndarray, u: np.ndarray, nnp: np.ndarray, k: int, i: int, cand: np.ndarray,
                opts: PricingOptions, lim: int) -> tuple[float, int, bool, list[np.ndarray]]:
    """One seed of :func:`exact_pricing`: ``(lower, nodes, cut, columns)``; ``lim``
    is this seed's node limit. Own buffers: seeds are priced side by side in threads
    (the kernels release the GIL).
    """
    tol, keep, refine, deep = opts.tol, opts.keep, opts.refine, opts.deep
    kmax = 2 * k - 1
    out_sets = np.empty((keep, kmax), dtype=np.int64)
    out_rc = np.empty(keep)
    cols: list[np.ndarray] = []
    # the defaults of exact_seed spelled out, as int64 like the retries' (one compiled
    # version instead of three: see the module doc of ._cg_kernels)
    low, nodes, found, limited = exact_seed(D, u, nnp, i, cand, k, kmax, -tol, lim, out_sets, out_rc,
                                            1.25, np.int64(150), np.int64(1))
    hi = _collect(out_sets, out_rc, found, keep, cols, -tol)
    if limited and lim > 1 and low < hi:
        # A cut search is retried, each result (completed or cut) being a valid
        # bound: first with the partner-charging bound of alpha_filter at the top
        # ``deep`` levels of the tree, not only at the root (O(pool^2 k) a node, so
        # only for the seeds that need it; Census k=10, 15 hard seeds at smoothed
        # duals: the sum of their bounds went from -71.7 to -13.2), then by
        # bisection of the search's threshold between the proven bound and the
        # best rc met (or -tol): a search that only has to prove rc >= mid prunes
        # far more.
        depth = max(1, deep)
        thr = hi if depth > 1 else 0.5 * (low + hi)
        for step in range(refine + (depth > 1)):
            if not low < hi:
                break
            if step > 0 or depth == 1:
                thr = 0.5 * (low + hi)
            low2, nd, found2, lim2 = exact_seed(D, u, nnp, i, cand, k, kmax, thr, lim, out_sets, out_rc,
                                                1.25, np.int64(150), depth)
            nodes += nd
            hi = min(hi, _collect(out_sets, out_rc, found2, keep, cols, hi))
            low = max(low, low2)
            if lim2:
                hi = min(hi, thr)
            elif low2 < thr:
                break  # a complete search met a group below thr: low2 is the minimum
            # else: proven rc >= thr; go on between thr and hi
        limited = low < hi
    return float(low), int(nodes), bool(limited), cols


def exact_pricing(D: np.ndarray, u: np.ndarray, k: int, opts: PricingOptions = PricingOptions(), *,
                  nnp: np.ndarray | None = None, order: np.ndarray | None = None,
                  prev: np.ndarray | None = None, redo: np.ndarray | None = None,
                  ) -> tuple[np.ndarray, list[np.ndarray], dict[str, Any]]:
    """Per-seed lower bounds on the reduced costs, and the negative columns met.

    ``opts`` (:class:`PricingOptions`) holds ``tol``, ``node_limit``, ``deadline``,
    ``keep`` (columns kept a seed), ``refine``, ``deep`` and ``jobs``; ``nnp`` is
    the neighbour-prefix table (computed when None).

    Returns ``(seed_lower, columns, info)``: ``seed_lower[i]`` <= min(-tol, rc(S)) over
    every group S of k..2k-1 records whose *seed* is i, its first member in ``order``
    (default :func:`pricing_order`; ``np.arange(n)``: the smallest index);
    ``columns`` lists groups with rc < -tol found on the way; ``info`` counts nodes
    and seeds whose search was cut (by ``node_limit``, or to a root-only bound once
    ``deadline`` has passed) and gives them as a boolean mask ``cut``.

    A larger ``tol`` is a *certified tolerance*: the search only has to prove
    rc >= -tol, which prunes far more (the Lagrangian bound then loses at most
    floor(n/k) * tol); column generation uses it to get a good bound early and
    tightens it pass by pass.

    A seed whose search is cut by ``node_limit`` is searched again: once with the
    partner-charging bound (:func:`._cg_kernels.alpha_filter`) at the nodes of depth < ``deep``
    (1: at the root only, no such retry), then ``refine`` times with the search's
    threshold bisected between the bound proven and the best rc met; its bound is the
    best of all these (each is valid). ``cut_seeds`` counts the seeds still not
    proven to that best rc (or -tol).

    ``prev`` and ``redo`` continue an earlier call at the same ``u``, ``tol`` and
    ``order``: only the seeds in the boolean mask ``redo`` (typically the earlier
    ``info["cut"]``, now with a wider ``node_limit``) are priced again; each seed's
    bound is the larger of the two (both are valid), the others keep ``prev``'s.

    ``jobs`` threads (default :func:`microagg_cli.threads.limit`) price seeds side by
    side; seeds are independent, so the result does not depend on it (columns in
    seed order), except through ``deadline``, which is a matter of timing anyway.
    """
    n = D.shape[0]
    kmax = 2 * k - 1
    tol, node_limit, deadline, jobs = opts.tol, opts.node_limit, opts.deadline, opts.jobs
    if nnp is None:
        nnp = nn_prefix(D, kmax)
    u = np.ascontiguousarray(u, dtype=np.float64)
    order = pricing_order(u) if order is None else np.asarray(order, dtype=np.int64)
    if order.shape != (n,) or not np.array_equal(np.sort(order), np.arange(n)):
        raise InvalidParameterError("exact_pricing: order must be a permutation of the records")
    if (prev is None) != (redo is None):
        raise InvalidParameterError("exact_pricing: prev and redo go together")
    if jobs is None:
        from ..threads import limit  # function level: metrics stay light to import

        jobs = limit()
    # seeds of fewer than k remaining records have no group
    seed_lower = np.full(n, -tol) if prev is None else np.array(prev, dtype=np.float64)
    cut = np.zeros(n, dtype=bool)
    positions = [pos for pos in range(max(0, n - k + 1)) if redo is None or redo[order[pos]]]

    def one(pos: int) -> tuple[float, int, bool, list[np.ndarray]]:
        i = int(order[pos])
        rest = order[pos + 1:]
        cand = rest[np.argsort(D[i, rest], kind="stable")]
        lim = 1 if deadline is not None and time.perf_counter() > deadline else node_limit
        return _price_seed(D, u, nnp, k, i, cand, opts, lim)

    if jobs > 1 and len(positions) > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=int(jobs)) as pool:
            results = list(pool.map(one, positions))
    else:
        results = [one(pos) for pos in positions]
    cols: list[np.ndarray] = []
    nodes = 0
    for pos, (low, nd, limited, found) in zip(positions, results):
        i = order[pos]
        seed_lower[i] = low if prev is None else max(low, seed_lower[i])
        cut[i] = limited
        nodes += nd
        cols.extend(found)
    return seed_lower, cols, {"nodes": nodes, "cut_seeds": int(cut.sum()), "cut": cut}


@dataclass
class CGResult:
    """Outcome of :func:`cg_lower_bound` (SSE in z-units; IL = 100 * SSE / SST)."""

    lower: float  #: certified lower bound on the optimal SSE
    lp_value: float  #: value of the last (stabilised) restricted master LP (not a bound)
    status: str  #: "optimal" (LP solved: no negative reduced cost) or "time_limit"
    sst: float
    seconds: float
    iterations: int
    columns: int
    upper: float | None = None  #: SSE of the best partition found (start or MIP)
    labels: np.ndarray | None = None  #: that partition
    history: list[dict[str, Any]] = field(default_factory=list)
    bound_seconds: float | None = None  #: when the bound was final (before the MIP and polishing)

    @property
    def lb_il(self) -> float:
        """The bound as IL_SSE (percent)."""
        return 100.0 * self.lower / self.sst if self.sst > 0 else 0.0

    @property
    def ub_il(self) -> float | None:
        return None if self.upper is None else (100.0 * self.upper / self.sst if self.sst > 0 else 0.0)


class _Columns:
    """The restricted master's columns (deduplicated)."""

    def __init__(self, D: np.ndarray):
        self.D = D
        self.keys: set[bytes] = set()
        self.sets: list[np.ndarray] = []
        self.cost: list[float] = []

    def add(self, members: np.ndarray) -> bool:
        members = np.sort(np.asarray(members, dtype=np.int64))
        key = members.tobytes()
        if key in self.keys:
            return False
        self.keys.add(key)
        self.sets.append(members)
        self.cost.append(_group_sse(self.D, members))
        return True

    def matrix(self, n: int) -> sparse.csc_matrix:
        lens = np.fromiter((s.size for s in self.sets), dtype=np.int64, count=len(self.sets))
        indptr = np.concatenate([[0], np.cumsum(lens)])
        indices = np.concatenate(self.sets) if self.sets else np.zeros(0, dtype=np.int64)
        return sparse.csc_matrix((np.ones(indices.size), indices, indptr), shape=(n, len(self.sets)))


def _solve_lp(cols: _Columns, n: int, center: np.ndarray | None = None, delta: float = 0.0,
              eps: float = 1.0) -> tuple[float, np.ndarray, float]:
    """Restricted master LP; returns ``(value, duals, artificial total)``.

    With a ``center``, box-step stabilisation (du Merle, Villeneuve, Desrosiers &
    Hansen 1999, on minimum sum-of-squares clustering): per row, an artificial
    column e_i of cost center_i + delta and one -e_i of cost -(center_i - delta),
    both bounded by ``eps``, keep the duals in [center - delta, center + delta]
    unless leaving the box pays. Without it, the masters are so degenerate (a
    k-partition start at k=10 leaves a 970-dimensional optimal dual face) that the
    duals range over +-1000 and the LP value does not move for thousands of
    columns. With no artificial active (total 0) the value is the master's LP value.
    """
    A = cols.matrix(n)
    c = np.asarray(cols.cost)
    bounds: Any = (0, None)
    if center is not None:
        eye = sparse.identity(n, format="csc")
        A = sparse.hstack([A, eye, -eye], format="csc")
        c = np.concatenate([c, center + delta, -(center - delta)])
        m = len(cols.cost)
        bounds = [(0, None)] * m + [(0, eps)] * (2 * n)
    # Interior point without crossover: 3-4x faster than simplex from scratch on these
    # degenerate set-partitioning masters (Census k=5, 8,659 columns: 1.5 s vs 4.9 s).
    # The bound does not need the duals to be exact (any u is valid).
    with warnings.catch_warnings():
        # HiGHS's own option name, passed through by linprog with a warning
        warnings.filterwarnings("ignore", message="Unrecognized options", category=OptimizeWarning)
        res = linprog(c, A_eq=A, b_eq=np.ones(n), bounds=bounds, method="highs-ipm",
                      options={"run_crossover": "off"})
    if res.status != 0:  # IPM stalled (seen on tiny degenerate masters): simplex
        res = linprog(c, A_eq=A, b_eq=np.ones(n), bounds=bounds, method="highs-ds")
    if res.status != 0:  # pragma: no cover - the start partition keeps it feasible
        raise RuntimeError(f"restricted master LP failed: {res.message}")
    art = float(np.abs(res.x[len(cols.cost):]).sum()) if center is not None else 0.0
    return float(res.fun), np.asarray(res.eqlin.marginals, dtype=np.float64), art


def _solve_mip(cols: _Columns, n: int, seconds: float) -> np.ndarray | None:
    A = cols.matrix(n)
    c = np.asarray(cols.cost)
    res = milp(c, constraints=LinearConstraint(A, 1, 1), integrality=np.ones(c.size),
               bounds=(0, 1), options={"time_limit": max(1.0, seconds), "disp": False})
    if res.x is None:
        return None
    chosen = np.flatnonzero(res.x > 0.5)
    labels = np.full(n, -1, dtype=np.int64)
    for g, j in enumerate(chosen):
        labels[cols.sets[j]] = g
    if (labels < 0).any():  # pragma: no cover - milp returned an infeasible point
        return None
    return canonical_labels(labels)


def _labels_sse(D: np.ndarray, labels: np.ndarray) -> float:
    return float(sum(_group_sse(D, np.flatnonzero(labels == g)) for g in range(int(labels.max()) + 1)))


def _smoothed_bounds(D: np.ndarray, nnp: np.ndarray, u: np.ndarray, k: int, final: float,
                     node_limit: int, theta: float, history: list[dict[str, Any]], t0: float,
                     verbose: bool) -> float:
    """Best Lagrangian bound over duals between ``u`` and the LB_NN duals; -inf if none.

    ``u`` is the plain restricted master's duals (interior point, no crossover).
    When the exact pricing cannot finish at the column-generation duals (large k:
    the duals of outlying records are so large that the branch and bound cannot
    prove their groups' reduced costs), the bound is evaluated at
    u(lam) = lam u + (1 - lam) u0 instead, u0_i = nnp_i(k-1) / (2k) (record i's
    share of LB_NN: every group has rc >= 0 at u0, see the proof of LB_NN in sdc-metrics(7)).
    Smaller lam: an easier pricing but a smaller sum of duals. Any vector gives a
    valid bound (:func:`lagrangian_bound`), so the search over lam only chooses the
    best one certified before ``final``: lam = 0.9, then 0.95 and up by 0.05 while
    the bound rises, else 0.8 and down by 0.1 while it rises, one pricing pass each
    (``node_limit`` nodes a seed), for at most 60 % of the time left. A dual-smoothing
    step in the spirit of Wentges (1997), with the LB_NN point as the stability centre.

    Then the seeds the best lam's pass left cut are priced again, alone (the other
    seeds' bounds stand: same duals), with a budget 4x wider each round, while a
    round raises the bound and one seed's worst case fits in the time left and in
    5 % of the smoothing time (the budget shrinks to fit; a round that cannot fit 2x
    the budget is not run; seeds a round reaches after ``final`` keep their bounds,
    so the limit is overrun by at most that worst case). The few hard
    seeds hold most of the bound's loss. Census k=10 at lam = 0.9, 3,000 nodes a
    seed: 23 seeds cut, bound 1,506.5 (358 s); those at 12,000 nodes: 9 cut, 1,517.7
    (+262 s); at 48,000: 4 cut, 1,520.5 (+153 s). At lam = 0.95: 44 cut, 1,511.2
    (538 s); at 12,000: 22 cut, 1,528.5 (+417 s). Widening the budget of every seed
    costs about 4x a full pass each time instead.
    """
    n = D.shape[0]
    kmax = 2 * k - 1
    u0 = nnp[:, k - 1] / (2.0 * k)
    start = time.perf_counter()
    # the search over lam ends here; the rest of the time goes to the hard seeds
    window = max(0.0, final - start)
    stop_search = start + 0.6 * window
    from ..threads import limit  # function level: metrics stay light to import

    jobs = limit()  # exact_pricing's default
    tries = 4  # searches of a cut seed: plain, deep (deep=3), 2 bisections (refine=2)
    smoothing = PricingOptions(tol=theta, deadline=final, refine=2, deep=3)
    passes: dict[float, tuple[float, np.ndarray, np.ndarray, dict[str, Any], float]] = {}

    def bound(ul: np.ndarray, low: np.ndarray) -> float:
        return lagrangian_bound(ul, low, n, k, _margin(ul, D, kmax))

    def log(lam: float, lb: float, budget: int, info: dict[str, Any], redo: bool) -> None:
        history.append({"iteration": None, "lp": None, "bound": lb, "theta": theta, "lambda": lam,
                        "node_limit": budget, "cut_seeds": info["cut_seeds"], "redo": redo,
                        "seconds": time.perf_counter() - t0})
        if verbose:
            what = "cut seeds again" if redo else "all seeds"
            print(f"smoothing lam {lam:.2f} ({what}, nodes/seed {budget}): bound {lb:.4f} "
                  f"cut {info['cut_seeds']} nodes {info['nodes']} {time.perf_counter() - t0:.1f}s", flush=True)

    def value(lam: float) -> float:
        lam = round(lam, 4)
        if lam not in passes:
            ul = lam * u + (1.0 - lam) * u0
            began = time.perf_counter()
            low, _, info = exact_pricing(D, ul, k, replace(smoothing, node_limit=node_limit), nnp=nnp)
            lb = bound(ul, low)
            log(lam, lb, node_limit, info, False)
            passes[lam] = (lb, ul, low, info, time.perf_counter() - began)
        return passes[lam][0]

    best_lam, best = 0.9, value(0.9)
    for step in (0.05, -0.1):
        lam = best_lam + step
        while 0.0 < lam < 1.0 and time.perf_counter() < stop_search:
            v = value(lam)
            if not v > best:
                break
            best, best_lam = v, lam
            lam += step
        if best_lam != 0.9:
            break  # going up paid: no need to look down

    # the seeds the best lam's pass left cut, again and alone, budget 4x each round
    best_lam = round(best_lam, 4)
    lb, ul, low, info, seconds = passes[best_lam]
    budget = node_limit
    while info["cut_seeds"] and budget < 10**8:
        began = time.perf_counter()
        left = final - began
        # A round need not finish: the seeds it reaches after ``final`` keep their
        # bounds (their searches get one node). What must fit is one seed's worst
        # case, its whole budget in each of its searches at one thread's node rate of
        # the last pass: within the time left and 5 % of the smoothing time, the most
        # the limit can be overrun by.
        rate = max(info["nodes"], 1) / max(seconds, 1e-3) / jobs
        fit = int(min(left, 0.05 * window) * rate / tries) if left > 0 else 0
        new_budget = min(4 * budget, fit)
        if new_budget < 2 * budget:
            break
        budget = new_budget
        low, _, info = exact_pricing(D, ul, k, replace(smoothing, node_limit=budget), nnp=nnp,
                                     prev=low, redo=info["cut"])
        seconds = time.perf_counter() - began
        lb2 = bound(ul, low)
        log(best_lam, lb2, budget, info, True)
        gain = lb2 - lb
        lb = max(lb, lb2)
        if gain <= 1e-6 * abs(lb):
            break
    return max(best, lb)


def cg_lower_bound(
    Z: np.ndarray,
    k: int,
    *,
    time_limit: float | None = 600.0,
    start_labels: np.ndarray | None = None,
    mip_seconds: float = 0.0,
    tol: float = 1e-6,
    near: int | None = None,
    max_new: int | None = None,
    theta_share: float = 0.01,
    stabilize: bool = True,
    verbose: bool = False,
) -> CGResult:
    """Certified lower bound on min SSE over k-partitions of ``Z``, by column generation.

    Parameters
    ----------
    Z : (n, p) float array, already z-scored (the bound is on SSE in these units).
    k : minimum group size, 2 <= k <= n.
    time_limit : seconds (None: until the LP is solved). The bound returned is valid
        whenever the run stops; a final exact pricing pass is always made (cut to
        root bounds for seeds reached after the limit).
    start_labels : a k-partition to start from (its groups, large ones split, are the
        first columns and the first upper bound); default: runs along the first
        principal axis.
    mip_seconds : > 0 solves the set-partitioning MIP over the generated columns
        (:func:`scipy.optimize.milp`) for up to this long, as a primal side. (The
        decomposition heuristic of Castro, Gentile & Spagnolo-Arrizabalaga (2022),
        column generation -> MIP -> local search, runs
        :func:`microagg_cli.methods.refine.ils` from ``CGResult.labels`` next: a
        measure never runs a method; ``benchmarks/bounds.py --polish`` does both.)
    tol : reduced costs above -tol count as non-negative (the bound accounts for it).
    near : records scanned by the heuristic pricing around each seed (default
        clip(6k, 20, 80)).
    max_new : columns added per iteration (default n).
    theta_share : the first exact pricing pass proves only rc >= -theta with
        floor(n/k) * theta = theta_share x (LP value); later passes shrink theta to
        ``tol``. Larger: a usable bound sooner at large k.
    stabilize : box-step dual stabilisation of the master (see :func:`_solve_lp`).

    Returns
    -------
    :class:`CGResult`; ``lower`` <= the SSE of every partition of ``Z`` into groups
    of at least k records.

    Notes
    -----
    Each iteration solves the restricted master LP, prices heuristically from every
    seed (greedy growth among the seed's near records, then swaps); when that finds
    no column of negative reduced cost, the exact pricing runs (branch and bound per
    seed over the records after it in :func:`pricing_order`, nearest first, with the
    bounds of :func:`._cg_kernels.bound_filter` and :func:`._cg_kernels.alpha_filter`) and yields a certified
    bound. The status is "optimal" when the exact pricing finds no column with
    rc < -tol with no search cut; then the LP optimum is within n * tol of the bound.
    With a time limit, when searches stay cut at a node budget of 8,000 per seed, the
    column generation stops and the rest of the time goes to smoothed duals
    (:func:`_smoothed_bounds`); the status is then "time_limit". Memory O(n^2) (the
    distance matrix); time grows steeply with k (groups up to 2k-1 records).
    Measured on Census (n = 1,080, 13 attributes, one core, a loaded 2-core
    machine): LP solved and certified in 4 s (k=3), 15 s (k=4), 71 s (k=5).

    Examples
    --------
    >>> Z = np.array([[0.0], [1.0], [10.0], [11.0]])
    >>> round(cg_lower_bound(Z, 2).lower, 6)
    1.0
    """
    t0 = time.perf_counter()
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    n = Z.shape[0]
    if isinstance(k, bool) or int(k) != k or k < 2:
        raise InvalidParameterError(f"k must be an integer >= 2, got {k!r}")
    k = int(k)
    if n < k:
        raise InvalidParameterError(f"{n} records, fewer than k={k}")
    if n > MAX_ROWS:
        raise InvalidParameterError(f"the column-generation bound is limited to {MAX_ROWS:,} records per block")
    kmax = 2 * k - 1
    # column generation stops at 75 % of the limit; the exact pricing of the last
    # duals may use the rest (seeds it cannot reach get their root bound)
    deadline = None if time_limit is None else t0 + 0.75 * float(time_limit)
    final = None if time_limit is None else t0 + float(time_limit)
    sst = float(((Z - Z.mean(axis=0)) ** 2).sum())
    D = squared_distances(Z)
    nnp = nn_prefix(D, kmax)
    L = min(n - 1, near if near is not None else int(np.clip(6 * k, 20, 80)))
    near_idx = np.argsort(D, axis=1, kind="stable")[:, 1: L + 1].astype(np.int64) if L > 0 else \
        np.zeros((n, 0), dtype=np.int64)
    max_new = n if max_new is None else int(max_new)

    cols = _Columns(D)
    start = _start_partition(Z, k, start_labels)
    for g in start:
        cols.add(g)
    labels = np.empty(n, dtype=np.int64)
    for g, idx in enumerate(start):
        labels[idx] = g
    best_labels = canonical_labels(labels)
    upper = _labels_sse(D, best_labels)
    # stabilisation centre: each record's share of its start group's SSE
    center: np.ndarray | None = None
    delta = delta_min = 0.0
    if stabilize:
        center = np.empty(n)
        for idx in start:
            center[idx] = _group_sse(D, idx) / idx.size
        delta = 0.5 * float(np.abs(center).mean()) + 1e-9
        delta_min = 1e-3 * delta

    # LB_NN (sdc-metrics(7)) in SSE units is also a valid bound; the result is the larger one
    # (relative rounding of n(k-1) non-negative terms is < n k eps < 1e-9 for n <= MAX_ROWS)
    lbnn = float(nnp[:, k - 1].sum()) / (2.0 * k) * (1.0 - 1e-9) if n >= k else 0.0
    best_lb = max(0.0, lbnn)
    # when the heuristic finds only a few columns (tailing off), price exactly: that
    # certifies a bound and finds several columns per seed
    few = max(5, n // 50)
    # certified pricing tolerance: the first exact pass proves rc >= -theta only
    # (bound loss <= floor(n/k) * theta = theta_share of the LP value); theta shrinks
    # by 4 each time a pass finds nothing below it, down to tol
    theta = None
    # node budget per seed and pass (a cut search still yields a valid, weaker bound)
    node_limit = 2_000
    status = "time_limit"
    history: list[dict[str, Any]] = []
    it = 0
    hs = np.empty((n, kmax), dtype=np.int64)
    hrc = np.empty(n)
    lp = np.nan
    u = np.zeros(n)
    while True:
        it += 1
        lp, u, art = _solve_lp(cols, n, center, delta)
        if center is not None:
            # follow the duals with a shrinking box; once it is small and inactive
            # the stabilised master is the plain one
            center = u.copy()
            delta = max(delta_min, 0.8 * delta)
        out_of_time = deadline is not None and time.perf_counter() > deadline
        added = 0
        if not out_of_time and L > 0:
            cnt = heuristic_all(D, u, near_idx, k, kmax, tol, hs, hrc)
            order = np.argsort(hrc[:cnt], kind="stable")[:max_new]
            for a in order:
                s = hs[a]
                added += cols.add(s[s >= 0])
        if added > few and not out_of_time:
            if verbose:
                print(f"it {it}: LP {lp:.4f} art {art:.3g} delta {delta:.3g} u [{u.min():.3g}, {u.max():.3g}] "
                      f"cols {len(cols.sets)} heur +{added} "
                      f"{time.perf_counter() - t0:.1f}s", flush=True)
            continue
        # exact pricing: a certified bound at these duals
        if theta is None:
            theta = max(tol, theta_share * lp / max(1, n // k))
        seed_lower, new, info = exact_pricing(
            D, u, k, PricingOptions(tol=theta, node_limit=node_limit, deadline=final, refine=0, deep=1), nnp=nnp)
        lb = lagrangian_bound(u, seed_lower, n, k, _margin(u, D, kmax))
        best_lb = max(best_lb, lb)
        exact_added = sum(cols.add(s) for s in new)
        history.append({"iteration": it, "lp": lp, "bound": lb, "theta": theta, "columns": len(cols.sets),
                        "exact_new": exact_added, "cut_seeds": info["cut_seeds"],
                        "seconds": time.perf_counter() - t0})
        if verbose:
            print(f"it {it}: LP {lp:.4f} bound {lb:.4f} (best {best_lb:.4f}) theta {theta:.2g} cols {len(cols.sets)} "
                  f"exact +{exact_added} cut {info['cut_seeds']} nodes {info['nodes']} "
                  f"{time.perf_counter() - t0:.1f}s", flush=True)
        if info["cut_seeds"] and deadline is not None:
            if node_limit >= 8_000 or time.perf_counter() > deadline or info["cut_seeds"] > n // 20:
                # the searches stay cut even with a wide budget, or too many of them
                # are cut (Census k=10: 285 of 1,080): these duals are too hard to
                # certify; smoothing them (below) gives the better bound
                break
            node_limit *= 4  # searches were cut by their node budget: widen it
            continue
        if exact_added == 0 and added == 0:
            # no new column with rc < -theta (any met is in the master already: HiGHS's
            # tolerances; the bound does not depend on them)
            if info["cut_seeds"]:
                if deadline is not None and time.perf_counter() > deadline:
                    break  # stopped at the time limit
                node_limit *= 4  # searches were cut by their node budget: widen it
                continue
            if art > 1e-9:
                # the box binds yet every column prices out: u is dual feasible (its
                # bound is recorded); finish on the plain master, whose LP optimum
                # the remaining passes certify
                center = None
                continue
            if theta <= tol:
                status = "optimal"
                break
            theta = max(tol, theta / 4.0)
            continue
        if deadline is not None and time.perf_counter() > deadline:
            break
    if status != "optimal" and final is not None and time.perf_counter() < final:
        if center is not None and L > 0:
            # the stabilised master's duals are pinned to the box (its value counts the
            # artificials); the plain master, priced heuristically until nothing is
            # found, gives interior-point duals on its optimal face (sum u = its LP
            # value) to smooth towards instead. Census k=10: sum u 1,586 against 1,567,
            # and u in [-1.9, 40] for the boxed duals
            stop = t0 + 0.4 * float(time_limit)
            while True:
                lp, u, _ = _solve_lp(cols, n)
                cnt = heuristic_all(D, u, near_idx, k, kmax, tol, hs, hrc)
                added = 0
                for a in np.argsort(hrc[:cnt], kind="stable")[:max_new]:
                    s = hs[a]
                    added += cols.add(s[s >= 0])
                if verbose:
                    print(f"plain master: LP {lp:.4f} heur +{added} {time.perf_counter() - t0:.1f}s", flush=True)
                if added == 0 or time.perf_counter() > stop:
                    break
        # a smaller certified tolerance than the column generation's: the smoothed
        # duals are priced once each (Census k=10: theta 0.15 -> 0.02 raises the bound
        # by ~13, for ~10 % more time)
        best_lb = max(best_lb, _smoothed_bounds(D, nnp, u, k, final, 3_000,
                                                max(tol, theta_share * lp / max(1, n // k) / 8.0),
                                                history, t0, verbose))
    bound_seconds = time.perf_counter() - t0
    if mip_seconds > 0:
        lab = _solve_mip(cols, n, mip_seconds)
        if lab is not None:
            val = _labels_sse(D, lab)
            if val < upper:
                upper, best_labels = val, lab
    # the bound can never exceed a feasible value; if rounding made it do so, cap it
    lower = min(best_lb, upper)  # (LB_NN and the Lagrangian bounds, the best one)
    return CGResult(lower=float(lower), lp_value=float(lp), status=status, sst=sst,
                    seconds=time.perf_counter() - t0, iterations=it, columns=len(cols.sets),
                    upper=upper, labels=best_labels, history=history, bound_seconds=bound_seconds)
