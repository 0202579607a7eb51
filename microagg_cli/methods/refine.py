"""Refinement of a k-partition: local search (``mdav-ls``) and iterated local search (``ils``).

Both methods start from the partition of another registered method (MDAV by
default) and only ever lower its SSE (spec section 4, "Beyond the papers": every
refinement is monotone). The building blocks:

- **exact SSE deltas.** With c_G the centroid and |G| the size of group G, moving a
  record x from A to B changes the SSE by

      -|A|/(|A|-1) ||x-c_A||^2 + |B|/(|B|+1) ||x-c_B||^2,

  and swapping x (in A) with y (in B) changes it by

      ||y-c_A||^2 - ||x-c_A||^2 + ||x-c_B||^2 - ||y-c_B||^2 - (1/|A| + 1/|B|) ||x-y||^2

  (A' = A - x + y has centroid c_A + (y-x)/|A|; expand SSE(G) = sum ||z||^2 - |G| ||c_G||^2).
  :func:`move_delta` and :func:`swap_delta` state them in plain numpy; the compiled
  kernels evaluate the swap delta as one dot product per candidate y.
- **cyclic exchanges.** Records r_1 -> group of r_2 -> ... -> group of r_1 keep every
  size; the change is a sum of one-in, one-out replacements (replacing y by x in G
  changes SSE(G) by ||x-c_G||^2 - ||y-c_G||^2 - ||x-y||^2/|G|), :func:`cycle_delta`.
  No search here applies them directly: on Census (k=10) the partitions ``ils``
  returns admit no improving move, swap (over all pairs of records), 3- or 4-cycle,
  move-swap chain A -> B -> C, or exact reassignment to fixed centroids with every
  group >= k (measured by exhaustive enumeration), so they are not what is missing;
  ``ils`` reaches such structures through kicks (below).
- **candidate groups.** The groups a record may move to or swap with are the groups
  of its R nearest records (R = clip(2k + 4, 10, 16); a static k-d tree query), a
  record-level stand-in for "nearest centroids" that needs no upkeep as groups move
  (at k=10 on Census they reach 4.9 other groups on average).
- **split pass.** A group of 2k or more records is split by MDAV inside it. Splitting
  a group into parts never raises SSE (each part's SSE is measured around its own
  centroid, which is the best point for it), so the pass is monotone; afterwards
  groups have k..2k-1 records and the searches keep them so (a move never fills a
  group beyond 2k-1).

The compiled kernels of both searches are in :mod:`._refine_kernels`.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import threads
from ..errors import InvalidParameterError
from ..partition import canonical_labels
from ..progress import advance, phase
from ._common import check_k
from ._spec import CostModel, MethodSpec, ParamSpec, method_contract
from .fixed_size import mdav
from ._refine_kernels import ils_chunk, kick_chunk, local_search
from .genetic import stream_state

__all__ = ["mdav_ls", "ils", "ILS_ITERATIONS", "ils_iterations", "move_delta", "swap_delta", "cycle_delta", "split_large_groups",
           "SPECS"]

#: Perturbations per ILS search when ``iterations`` is given without a size (the
#: former fixed default; Census k=3 in 25-64 s, IL 4.6926).
ILS_ITERATIONS = 1_000_000
#: The default budget (:func:`ils_iterations`): ``ILS_PER_RECORD`` perturbations per
#: record and search, at least ``ILS_MIN_ITERATIONS``.
ILS_PER_RECORD = 3
ILS_MIN_ITERATIONS = 40_000


def ils_iterations(n: int) -> int:
    """The default perturbations per search of :func:`ils` on n records: max(40,000,
    3 n). A fixed amount of work (the same command and seed give the same partition on
    any machine) that grows with n like the neighbourhoods to visit: 40,000 up to
    13,333 records (Census, 1,080 x 13: about 2 s; 10,000 x 10: about 1 s), 150,000 at
    50,000 and 300,000 at 100,000 records (about 10 and 31 s: 13-16x MDAV's time on
    the 2-core reference machine, where 4 n took 22x at 100,000; the former fixed
    1,000,000 took 53-92 s at 10,000).

    >>> ils_iterations(1_080), ils_iterations(100_000)
    (40000, 300000)
    """
    return max(ILS_MIN_ITERATIONS, ILS_PER_RECORD * int(n))
#: Iterations per compiled ILS chunk; the clock is read and the running SSE is
#: recomputed exactly between chunks (chunk boundaries do not depend on timing).
_CHUNK = 1000
#: Largest number of neighbouring groups one ILS perturbation re-partitions.
_MAX_POOL = 6
#: Initial annealing temperature as a share of the mean group SSE.
_TAU = 0.2
#: Largest number of record exchanges in one swap kick.
_MAX_SWAPS = 4
#: With ``threads=1``, the share of the time budget given to the re-partitioning
#: search (the kick search, which levels off sooner, gets the rest).
_REPARTITION_SHARE = 2.0 / 3.0


# ------------------------------------------------------------------ exact deltas
def move_delta(X: np.ndarray, labels: np.ndarray, i: int, b: int) -> float:
    """SSE change of moving record ``i`` to group ``b`` (closed form; |A| >= 2).

    Examples
    --------
    >>> X = np.array([[0.0], [1.0], [5.0], [6.0], [2.0]])
    >>> round(move_delta(X, np.array([0, 0, 1, 1, 0]), 4, 1), 6)  # -1.5 + (2/3) 3.5^2
    6.666667
    """
    a = labels[i]
    A = X[labels == a]
    B = X[labels == b]
    ma, mb = A.shape[0], B.shape[0]
    x = X[i]
    return float(-ma / (ma - 1.0) * ((x - A.mean(0)) ** 2).sum()
                 + mb / (mb + 1.0) * ((x - B.mean(0)) ** 2).sum())


def swap_delta(X: np.ndarray, labels: np.ndarray, i: int, j: int) -> float:
    """SSE change of exchanging record ``i`` (group A) with record ``j`` (group B)."""
    A = X[labels == labels[i]]
    B = X[labels == labels[j]]
    ca, cb = A.mean(0), B.mean(0)
    x, y = X[i], X[j]
    w = 1.0 / A.shape[0] + 1.0 / B.shape[0]
    return float(((y - ca) ** 2).sum() - ((x - ca) ** 2).sum() + ((x - cb) ** 2).sum()
                 - ((y - cb) ** 2).sum() - w * ((x - y) ** 2).sum())


def cycle_delta(X: np.ndarray, labels: np.ndarray, records) -> float:
    """SSE change of a cyclic exchange: ``records[t]`` (one per group, groups distinct)
    moves to the group of ``records[t+1]``, the last one to the group of the first.

    Every group loses one record and gains one, so the change is a sum of one-in,
    one-out replacements: replacing y by x in group G changes SSE(G) by
    ||x-c_G||^2 - ||y-c_G||^2 - ||x-y||^2 / |G|. A cycle of two records is a swap.

    Examples
    --------
    >>> X = np.array([[0.0], [1.0], [10.0], [11.0], [20.0], [21.0]])
    >>> labels = np.array([0, 2, 1, 0, 2, 1])  # {0, 11}, {10, 21}, {1, 20}: SSE 301.5
    >>> cycle_delta(X, labels, [3, 5, 1])  # 11 -> B, 21 -> C, 1 -> A: SSE 1.5
    -300.0
    """
    X = np.asarray(X, dtype=np.float64)
    labels = np.asarray(labels)
    records = [int(r) for r in records]
    total = 0.0
    for t, x in enumerate(records):
        y = records[(t + 1) % len(records)]
        G = X[labels == labels[y]]
        c = G.mean(0)
        total += (((X[x] - c) ** 2).sum() - ((X[y] - c) ** 2).sum()
                  - ((X[x] - X[y]) ** 2).sum() / G.shape[0])
    return float(total)


# ------------------------------------------------------------------ Python side
def _knn(X: np.ndarray, k: int) -> np.ndarray:
    """Each record's R nearest other records (k-d tree; self removed even on ties)."""
    from scipy.spatial import cKDTree  # 0.15 s to import: only when used
    n = X.shape[0]
    R = int(min(np.clip(2 * k + 4, 10, 16), n - 1))
    _, idx = cKDTree(X).query(X, R + 1)
    idx = np.asarray(idx, dtype=np.int64).reshape(n, R + 1)
    keep = idx != np.arange(n)[:, None]
    no_self = keep.all(axis=1)
    keep[no_self, R] = False  # self lost among equal distances: drop the farthest
    return np.ascontiguousarray(idx[keep].reshape(n, R))


class _Partition:
    """Mutable partition state shared with the kernels (groups of k..2k-1 records)."""

    def __init__(self, X: np.ndarray, labels: np.ndarray, k: int, knn: np.ndarray | None = None):
        n, p = X.shape
        self.X = X
        self.k = k
        self.cap = 2 * k - 1
        self.nrm = np.einsum("ij,ij->i", X, X)
        self.knn = _knn(X, k) if knn is None else knn
        gmax = n // k
        labels = canonical_labels(labels)
        n_groups = int(labels.max()) + 1
        self.labels = labels.astype(np.int64).copy()
        self.sizes = np.bincount(labels, minlength=gmax).astype(np.int64)
        order = np.argsort(labels, kind="stable")
        self.members = np.full((gmax, 2 * self.cap + 1), -1, dtype=np.int64)
        self.pos = np.empty(n, dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(self.sizes)])
        slot = np.arange(n) - starts[labels[order]]
        self.members[labels[order], slot] = order
        self.pos[order] = slot
        self.resync()
        # unused group slots, popped from the end
        self.free = np.concatenate([np.arange(gmax - 1, n_groups - 1, -1),
                                    np.zeros(n_groups)]).astype(np.int64)
        self.nfree = gmax - n_groups

    def resync(self) -> float:
        """Recompute group sums exactly (no drift) and return the exact SSE."""
        gmax, p = self.sizes.size, self.X.shape[1]
        self.sums = np.zeros((gmax, p))
        np.add.at(self.sums, self.labels, self.X)
        return _sse(self.X, self.labels)

    def descend(self) -> None:
        """Full passes of the worklist descent until a pass improves nothing."""
        n = self.X.shape[0]
        queue = np.empty(n, dtype=np.int64)
        inq = np.zeros(n, dtype=np.bool_)
        no_log = np.empty((0, 2), dtype=np.int64)
        everyone = np.arange(n, dtype=np.int64)
        while True:
            _, _, nimp = local_search(self.X, self.nrm, everyone, self.knn, self.k, self.cap,
                                      self.labels, self.members, self.pos, self.sizes,
                                      self.sums, no_log, 0, queue, inq)
            if nimp == 0:
                break
        self.resync()


def _sse(X: np.ndarray, labels: np.ndarray) -> float:
    labels = np.asarray(labels, dtype=np.int64)
    counts = np.bincount(labels).astype(np.float64)
    sums = np.zeros((counts.size, X.shape[1]))
    np.add.at(sums, labels, X)
    used = counts > 0
    return float((X * X).sum() - ((sums[used] ** 2).sum(axis=1) / counts[used]).sum())


def split_large_groups(X: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """Split every group of 2k or more records with MDAV inside it (never raises SSE).

    Returns canonical labels whose groups all have k..2k-1 records (other groups
    unchanged).

    Examples
    --------
    >>> X = np.array([[0.0], [1.0], [2.0], [10.0], [11.0], [12.0]])
    >>> split_large_groups(X, np.zeros(6, dtype=int), 3).tolist()
    [0, 0, 0, 1, 1, 1]
    """
    labels = canonical_labels(labels)
    sizes = np.bincount(labels)
    if sizes.max() < 2 * k:
        return labels
    out = labels.copy()
    next_label = sizes.size
    for g in np.flatnonzero(sizes >= 2 * k):
        idx = np.flatnonzero(labels == g)
        sub = mdav(X[idx], k)
        out[idx] = np.where(sub == 0, g, sub + next_label - 1)
        next_label += int(sub.max())
    return canonical_labels(out)


def _start_partition(X: np.ndarray, k: int, rng: np.random.Generator, start: str,
                     caller: str) -> np.ndarray:
    """Labels of the method ``start`` run with its default parameters on ``X``."""
    from . import METHODS  # lazy: this module is imported by the registry

    spec = METHODS.get(start)
    if spec is None:
        raise InvalidParameterError(
            f"{caller}: unknown start method {start!r} (known: {', '.join(METHODS)})")
    if start == caller:
        raise InvalidParameterError(f"{caller}: a method cannot start from itself")
    if spec.output != "labels":
        raise InvalidParameterError(
            f"{caller}: start method {start!r} does not return one partition of the records")
    if spec.max_columns is not None and X.shape[1] > spec.max_columns:
        raise InvalidParameterError(
            f"{caller}: start method {start!r} handles at most {spec.max_columns} column(s)")
    labels = np.asarray(spec.func(X, k, rng=rng, **spec.validate_params(None)))
    sizes = np.bincount(canonical_labels(labels))
    if labels.shape != (X.shape[0],) or sizes.min() < k:  # pragma: no cover - contract
        raise InvalidParameterError(f"{caller}: start method {start!r} broke the k-partition contract")
    return canonical_labels(labels)


def _prepared(X: np.ndarray, k: int, rng: np.random.Generator, start: str, caller: str):
    X = np.ascontiguousarray(X, dtype=np.float64)
    n = check_k(X, k)
    with phase(f"{caller}: start ({start})", total=n):  # its own count: the caller's phase goes on after it
        base = split_large_groups(X, _start_partition(X, k, rng, start, caller), k)
    return X, n, base


@method_contract
def mdav_ls(X: np.ndarray, k: int, *, rng: np.random.Generator, start: str = "mdav") -> np.ndarray:
    """A start partition (MDAV) improved by moves and swaps until none lowers SSE.

    1. Run the method ``start`` (default ``mdav``) with its default parameters.
    2. Split every group of 2k or more records with MDAV inside it (never raises SSE).
    3. Local search: for each record x (in group A), among the groups B of its R
       nearest records, the best of moving x to B (allowed while |A| > k and
       |B| < 2k-1) and swapping x with a member y of B, by the exact SSE deltas of the
       module docstring; apply it if it lowers SSE. A worklist re-examines the
       members of both groups after each change; full passes repeat until a whole
       pass finds no improving move or swap.
    4. The split pass again (a no-op here, since no move fills a group beyond 2k-1),
       and the result is compared with the start: never worse.

    {method contract}
    rng : handed to the start method (the search itself is deterministic).
    start : name of a registered method returning a partition (not ``mdav-ls``).

    Returns
    -------
    labels : (n,) int64, canonical; groups of k..2k-1 records.

    Notes
    -----
    Cost: one k-d tree query for the neighbours, then O(n R k p) per pass; a few
    passes in practice (milliseconds on Census). Records are examined in input order
    and candidates in order of their nearest records, ties keep the first found, so
    the result is deterministic. Measured on Census (13 attributes, one block):
    IL = 5.2312 (k=3), 8.2151 (k=5), 12.3495 (k=10) from MDAV's 5.6922, 9.0884,
    14.1559, in well under a second each.

    References
    ----------
    Domingo-Ferrer, J. & Mateo-Sanz, J. M. (2002). Practical data-oriented
    microaggregation for statistical disclosure control. IEEE TKDE 14(1) (MDAV).
    The local search is ours (spec section 4, "Beyond the papers").

    Examples
    --------
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0], [10.0], [11.0], [12.0]])
    >>> mdav_ls(X, 3, rng=np.random.default_rng(0)).tolist()
    [0, 0, 0, 0, 1, 1, 1]
    """
    X, n, base = _prepared(X, k, rng, start, "mdav-ls")
    if n < 2 * k:
        return base
    with phase("mdav-ls: local search", total=None):
        part = _Partition(X, base, k)
        part.descend()
    labels = split_large_groups(X, part.labels, k)
    return labels if _sse(X, labels) <= _sse(X, base) else base


@method_contract
def ils(X: np.ndarray, k: int, *, rng: np.random.Generator, start: str = "mdav",
        time_budget: float = 0.0, iterations: int | None = None, threads: int = 2,
        start_labels: np.ndarray | None = None) -> np.ndarray:
    """Iterated local search: two annealed searches from the mdav-ls partition; the better wins.

    1. Start as :func:`mdav_ls` (start method, split pass, local search).
    2. Re-partitioning search. Repeat: choose a
       neighbourhood of 2..6 nearby groups around a badly placed record; re-partition
       its records (optimal contiguous runs along the neighbourhood's first principal
       axis, or a serpentine over its first two axes, or along a random line; or a
       randomised MDAV-like grouping), which may change the number of groups;
       re-optimise with the local search of :func:`mdav_ls` started from those
       records; keep the change if SSE dropped, otherwise with a simulated-annealing
       probability exp(-delta/T) whose temperature falls from 0.2 x (mean group SSE)
       to 0 over the search, else undo it.
    3. Swap-kick search, from the same start: the same
       neighbourhoods and acceptance, but the perturbation is 1 to 4 exchanges of two
       random records of the neighbourhood (a "kick"), then the same local search.
       Sizes change only by single moves, so the number of groups stays the start's.
    4. Return the better of the two best partitions met (never worse than the start).

    The two searches run side by side in two threads, each for the whole time
    budget, when ``threads`` >= 2 and the process may use two CPUs; otherwise one
    after the other, the re-partitioning search taking 2/3 of the remaining budget.

    {method contract}
    rng : handed to the start method, then one seed for the searches is drawn from it.
    start : name of a registered method returning a partition (not ``ils``).
    time_budget : > 0: seconds for the whole run (start included) instead of a fixed
        number of iterations; the result then depends on the machine's speed and load
        (not reproducible across machines). 0 (default): ``iterations``.
    iterations : perturbations per search (each of the two); None (default): the
        budget for n, :func:`ils_iterations` (max(40,000, 3 n); Census k=3 in about 2 s
        on a busy 2-core machine). Used unless ``time_budget`` > 0.
    threads : 2 (default) runs the two searches side by side, 1 one after the
        other. With ``iterations`` > 0 the result is the same either way.
    start_labels : (n,) labels of a k-partition to start from instead of running
        ``start`` (library use, e.g. the column-generation MIP solution of
        :func:`microagg_cli.metrics.cg_bound.cg_lower_bound`: CG columns -> MIP ->
        local search); groups of 2k or more are split first. Not a CLI parameter.

    Returns
    -------
    labels : (n,) int64, canonical; groups of k..2k-1 records.

    Notes
    -----
    Why two searches: neither dominates. A kick costs about half a re-partition and
    disturbs less, so the annealing makes more useful steps per second; at k=10 on
    Census the kick search keeps MDAV's 108 groups of 10 and reaches IL 11.35 in
    30 s, a level the re-partitioning search reaches only after about 4 minutes
    (2 million iterations: 11.342) because it lets the number of groups drift down
    to 106 (dissolving groups is accepted at high temperature and not undone when
    it is cold). On data whose good partitions need unequal group sizes (a Gaussian
    mixture with unequal spreads; Census at k=3 and 5) only the re-partitioning
    search can change the number of groups, and it wins (run one after the other,
    it gets the larger share because the kick search levels off sooner). With
    ``iterations`` > 0 the first search is exactly the ``ils`` of the previous
    release, so the result is never worse than it.

    By default (``iterations``) the result depends only on the data, k, the start
    method and the seed. With a time budget the number of iterations done, and the
    cooling schedule, follow the clock: the result depends on the machine's speed and
    load (the report says "not reproducible across machines"). An iteration costs O(m k R k p)
    for a neighbourhood of m groups (tens of microseconds on Census); the clock is
    checked every 1,000 iterations, and the first call compiles the kernels (cached
    on disk afterwards). Measured on Census (13 attributes, one block, seed 0, a
    2-core machine, two threads): 120 s budget IL = 4.6880 (k=3), 7.2632 (k=5),
    11.3589 (k=10; seed 1: 11.3438); 60 s budget (the former default) 4.6847, 7.2589, 11.3433;
    200,000 iterations per search (reproducible) IL = 4.6893 (k=3, 10 s), 7.2743
    (k=5, 12 s), 11.3810 (k=10, 29 s; 11.4075 with the re-partitioning search
    alone); 1,000,000 (a former default, :data:`ILS_ITERATIONS`) IL = 4.6926 / 6.0414 /
    7.2691 / 11.3495 at k = 3 / 4 / 5 / 10 (k=3 in 25-64 s depending on the load,
    k=10 several minutes; more iterations are not always better for one seed: the
    cooling is slower; benchmarks/methods_census.py). The target was 11.30 at k=10 in 120 s: not reached; both searches
    level off near 11.34 (11.343 after 4 million kicks, 4 minutes), and on their
    results no move, swap, 3-cycle, move-swap chain, optimal re-split of two
    neighbouring groups or reassignment to fixed centroids improves
    (``benchmarks/refine.py --certify``).
    The lower bound LB_NN is 3.4438, 5.0168, 7.3363; the best published heuristics
    report 5.58, 8.89, 13.52.

    References
    ----------
    Lourenco, H. R., Martin, O. C. & Stuetzle, T. (2003). Iterated local search.
    Handbook of Metaheuristics, 320-353. Kirkpatrick, S., Gelatt, C. D. & Vecchi,
    M. P. (1983). Optimization by simulated annealing. Science 220(4598), 671-680.
    Hansen, S. L. & Mukherjee, S. (2003). A polynomial algorithm for optimal
    univariate microaggregation. IEEE TKDE 15(4) (the contiguous runs).

    Examples
    --------
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0], [10.0], [11.0], [12.0]])
    >>> ils(X, 3, rng=np.random.default_rng(0), iterations=50).tolist()
    [0, 0, 0, 0, 1, 1, 1]
    """
    t0 = time.perf_counter()
    if iterations is None:
        iterations = ils_iterations(X.shape[0])
    if time_budget <= 0 and iterations <= 0:
        raise InvalidParameterError("ils: give a positive time_budget or iterations")
    if time_budget > 0:  # the clock decides how much work is done (not reproducible)
        iterations = 0
    if start_labels is None:
        X, n, base = _prepared(X, k, rng, start, "ils")
    else:
        X = np.ascontiguousarray(X, dtype=np.float64)
        n = check_k(X, k)
        lab = np.asarray(start_labels)
        if lab.shape != (n,) or np.bincount(canonical_labels(lab)).min() < k:
            raise InvalidParameterError("ils: start_labels must be a k-partition of the records")
        base = split_large_groups(X, lab, k)
    seed = int(rng.integers(0, 2**63 - 1))
    if n < 2 * k:
        return base
    with phase("ils: local search", total=None):
        part = _Partition(X, base, k)
        part.descend()
        fixed = _Partition(X, part.labels, k, part.knn)
    left = max(0.0, t0 + time_budget - time.perf_counter())
    with phase("ils: perturbations (two searches)", total=2 * iterations if iterations > 0 else None,
               unit="iterations"):
        sse1, labels1, sse2, labels2 = _searches(part, fixed, seed, iterations, left, threads,
                                                 t0 + time_budget)
    labels = split_large_groups(X, labels2 if sse2 < sse1 else labels1, k)
    return labels if _sse(X, labels) <= _sse(X, base) else base


def _searches(part: "_Partition", fixed: "_Partition", seed: int, iterations: int, left: float, threads: int,
              deadline: float) -> tuple[float, np.ndarray, float, np.ndarray]:
    """The two searches of :func:`ils`, side by side or one after the other."""
    if threads >= 2 and _cpus() >= 2:
        # side by side: each search gets the whole remaining budget (the kernels
        # release the GIL); the results do not depend on the threading
        stop = threading.Event()
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="ils") as pool:
            one = pool.submit(_repartition_search, part, seed, iterations, left, stop)
            two = pool.submit(_kick_search, fixed, seed + 1, iterations, left, stop)
            try:
                sse1, labels1 = one.result()
                sse2, labels2 = two.result()
            except BaseException:  # Ctrl-C or an error: stop the other search too
                stop.set()
                raise
    else:
        sse1, labels1 = _repartition_search(part, seed, iterations, left * _REPARTITION_SHARE)
        sse2, labels2 = _kick_search(fixed, seed + 1, iterations, deadline - time.perf_counter())
    return sse1, labels1, sse2, labels2


def _cpus() -> int:
    """Threads this call may use: the CPUs of the process, or the share of a
    ``sdc compare --jobs`` worker (:mod:`microagg_cli.threads`)."""
    return threads.limit()


def _repartition_search(part: _Partition, seed: int, iterations: int, seconds: float,
                        stop: threading.Event | None = None) -> tuple[float, np.ndarray]:
    """Annealing over pool re-partitions (:func:`._refine_kernels.ils_chunk`) from ``part``; best (SSE, labels)."""
    state = stream_state(seed)

    def chunk(todo, cur, best, best_labels, temp0, frac0, dfrac):
        cur, best, part.nfree, _ = ils_chunk(
            part.X, part.nrm, part.knn, part.k, part.cap, part.labels, part.members,
            part.pos, part.sizes, part.sums, part.free, part.nfree, state, todo, _MAX_POOL,
            best_labels, cur, best, temp0, frac0, dfrac)
        return cur, best

    return _anneal(part, chunk, iterations, seconds, stop)


def _kick_search(part: _Partition, seed: int, iterations: int, seconds: float,
                 stop: threading.Event | None = None) -> tuple[float, np.ndarray]:
    """Annealing over swap kicks (:func:`._refine_kernels.kick_chunk`) from ``part``; best (SSE, labels).

    Group sizes change only through the descent's single moves, so the number of
    groups stays that of ``part``.
    """
    state = stream_state(seed)

    def chunk(todo, cur, best, best_labels, temp0, frac0, dfrac):
        cur, best, _ = kick_chunk(
            part.X, part.nrm, part.knn, part.k, part.cap, part.labels, part.members,
            part.pos, part.sizes, part.sums, state, todo, _MAX_POOL, _MAX_SWAPS,
            best_labels, cur, best, temp0, frac0, dfrac)
        return cur, best

    return _anneal(part, chunk, iterations, seconds, stop)


def _anneal(part: _Partition, chunk, iterations: int, seconds: float,
            stop: threading.Event | None = None) -> tuple[float, np.ndarray]:
    """Run ``chunk`` (one of the compiled searches) from ``part``; return the best (SSE, labels).

    ``iterations`` > 0: that many perturbations, the cooling fraction counted in
    iterations (reproducible). Otherwise for ``seconds`` of wall time, the fraction
    counted in seconds. Chunks of :data:`_CHUNK` iterations; the SSE is recomputed
    exactly between chunks. ``stop`` (when set) ends the search after the current chunk.
    """
    cur = part.resync()
    best = cur
    best_labels = part.labels.copy()
    temp0 = _TAU * cur / max(1, int(np.count_nonzero(part.sizes)))
    done = 0
    t_begin = time.perf_counter()
    chunk_seconds = None
    while stop is None or not stop.is_set():
        if iterations > 0:
            if done >= iterations:
                break
            todo = min(_CHUNK, iterations - done)
            frac0, dfrac = done / iterations, 1.0 / iterations
        else:
            elapsed = time.perf_counter() - t_begin
            if elapsed >= seconds:
                break
            todo = _CHUNK
            frac0 = elapsed / seconds
            dfrac = (chunk_seconds or 0.0) / _CHUNK / seconds
        t1 = time.perf_counter()
        cur, best = chunk(todo, cur, best, best_labels, temp0, frac0, dfrac)
        chunk_seconds = time.perf_counter() - t1
        cur = part.resync()  # exact again: no drift across chunks
        done += todo
        advance(todo)  # the progress display (both searches count into one phase)
    return _sse(part.X, best_labels), best_labels

SPECS: tuple[MethodSpec, ...] = (
    MethodSpec(name="mdav-ls", cost=CostModel(1.0, 1.3), func=mdav_ls, summary="a start partition (MDAV) improved by record moves and swaps until no move lowers SSE; groups of k..2k-1",
               reference="ours: local search with exact SSE deltas on top of Domingo-Ferrer & Mateo-Sanz (2002), Practical data-oriented microaggregation, IEEE TKDE 14(1)",
               params=(ParamSpec("start", "str", "mdav", "method giving the start partition (run with its defaults)"),)),
    MethodSpec(name="ils", cost=CostModel(1.0, 0.75, iterations="iterations", default_iterations=40_000, budget=ils_iterations, seconds_param="time_budget"), func=ils, summary="iterated local search: re-partition nearby groups or exchange records between them, re-optimise, keep the best (never worse than the start)",
               reference="ours: iterated local search (Lourenco, Martin & Stuetzle 2003) with simulated-annealing acceptance over mdav-ls; two searches (re-partitions, swap kicks), the better wins",
               params=(ParamSpec("start", "str", "mdav", "method giving the start partition (run with its defaults)"),
                       ParamSpec("time_budget", "float", 0.0, "> 0: seconds for the run instead of iterations (not reproducible across machines)", min=0.0),
                       ParamSpec("iterations", "int", None, "perturbations per search (reproducible: same seed, same output on any machine); "
                                 "not set: max(40,000, 3 n) (the report states the number used)", min=1),
                       ParamSpec("threads", "int", 2, "2: the two searches run side by side, each for the whole budget; 1: one after the other (same result with iterations)", min=1, max=2))),
)
