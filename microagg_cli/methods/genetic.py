"""Genetic refinement of MDAV: macrogroups and a genetic algorithm per macrogroup.

The module also holds the small random-number generator shared by the compiled
kernels of this family and of :mod:`._refine_kernels` (a xorshift64* stream seeded from the
caller's ``np.random.Generator``), so that every stochastic method here is
deterministic per seed, independent of numba's own generator state and of the
order in which independent pieces (macrogroups) are processed.
"""

from __future__ import annotations

import logging

import numpy as np
from .._jit import njit
from ._contiguous import shortest_path

from ..errors import InvalidParameterError
from ..partition import canonical_labels, sse
from ._common import check_k
from ..progress import advance, phase
from ._spec import CostModel, MethodSpec, ParamSpec, method_contract
from .fixed_size import mdav

__all__ = ["genetic", "macrogroups", "SPECS", "stream_state", "stream_uniform", "stream_randint"]

_U = np.uint64

log = logging.getLogger("microagg_cli")


# ----------------------------------------------------------------------------- RNG
def stream_state(seed: int) -> np.ndarray:
    """A non-zero xorshift64* state (uint64 array of length 1) for ``seed`` (splitmix64)."""
    mask = (1 << 64) - 1
    z = (int(seed) + 0x9E3779B97F4A7C15) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    z ^= z >> 31
    return np.array([z or 0x2545F4914F6CDD1D], dtype=np.uint64)


@njit(cache=True, nogil=True)
def stream_uniform(state):  # pragma: no cover - compiled
    """Uniform double in [0, 1) from the xorshift64* stream ``state`` (advanced)."""
    x = state[0]
    x ^= x >> _U(12)
    x ^= x << _U(25)
    x ^= x >> _U(27)
    state[0] = x
    return ((x * _U(2685821657736338717)) >> _U(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True, nogil=True)
def stream_randint(state, m):  # pragma: no cover - compiled
    """Uniform integer in 0..m-1."""
    v = int(stream_uniform(state) * m)
    return v if v < m else m - 1


# ------------------------------------------------------------------------ GA kernel
@njit(cache=True, nogil=True)
def _decode_sse(Zm, keys, k, order_out, sizes_out):  # pragma: no cover - compiled
    """SSE of the variable-size k-partition encoded by random ``keys`` (see :func:`genetic`).

    Records sorted by key (stable) form a sequence; the sequence is cut into
    consecutive groups of k..2k-1 records by the optimal cut: the shortest path of
    ``_contiguous.py`` (Hansen & Mukherjee's graph, with the multivariate cost). Ties
    go to the smaller last group. Writes the sorted order into ``order_out`` and the
    group sizes, in sequence order, into ``sizes_out`` (the rest of it zero); returns
    the SSE of the cut as :func:`_runs_sse` computes it.
    """
    K, p = Zm.shape
    order = np.argsort(keys, kind="mergesort")
    rows = np.empty((K, p))  # the records in encoded order
    for t in range(K):
        order_out[t] = order[t]
        for j in range(p):
            rows[t, j] = Zm[order[t], j]
    back = np.empty(K + 1, np.int64)
    shortest_path(rows, k, 2 * k - 1, np.empty(K + 1), back)
    for g in range(sizes_out.shape[0]):
        sizes_out[g] = 0
    n_groups = 0
    b = K
    while b > 0:
        n_groups += 1
        b -= back[b]
    b = K
    for g in range(n_groups - 1, -1, -1):
        sizes_out[g] = back[b]
        b -= back[b]
    return _runs_sse(rows, sizes_out, n_groups)


@njit(cache=True, nogil=True)
def _runs_sse(rows, sizes, n_groups):  # pragma: no cover - compiled
    """SSE of the runs ``sizes[:n_groups]`` of ``rows``, from prefix sums centred on the
    first row: the GA's fitness. The shortest path's own total (sums anchored at each
    group's last row) is the same cut's SSE but differs in the last bits, and the
    roulette wheel compares fitnesses to the bit: this arithmetic, the one the GA has
    always ranked by, keeps seeded runs reproducing their earlier output."""
    K, p = rows.shape
    S = np.zeros((K + 1, p))
    Q = np.zeros(K + 1)
    for t in range(K):
        q = 0.0
        for j in range(p):
            v = rows[t, j] - rows[0, j]
            S[t + 1, j] = S[t, j] + v
            q += v * v
        Q[t + 1] = Q[t] + q
    total = 0.0
    a = 0
    for g in range(n_groups):
        b = a + sizes[g]
        c2 = 0.0
        for j in range(p):
            d = S[b, j] - S[a, j]
            c2 += d * d
        c = Q[b] - Q[a] - c2 / (b - a)
        if c < 0.0:
            c = 0.0
        total += c
        a = b
    return total


@njit(cache=True, nogil=True)
def _ga_macrogroup(Zm, seed_keys, k, n_chrom, p_mut, p_cross, iterations, state):  # pragma: no cover
    """Genetic algorithm over k-partitions of one macrogroup; returns the best keys.

    Chromosome = one random key per record. Population 0 is the MDAV partition
    (``seed_keys``), the others uniform random keys. Each generation: the best
    chromosome is copied unchanged (elitism); the other n_chrom-1 slots are filled by
    roulette-wheel selection on fitness 1/(SSE+1); consecutive pairs of selected
    parents undergo one-point crossover with probability p_cross (tails swapped);
    every child is mutated with probability p_mut (the keys of two records swapped,
    i.e. two records exchange places in the encoded order).
    """
    K = Zm.shape[0]
    pop = np.empty((n_chrom, K))
    new = np.empty((n_chrom, K))
    sse = np.empty(n_chrom)
    order = np.empty(K, np.int64)
    sizes = np.empty(K // k + 1, np.int64)
    pop[0, :] = seed_keys
    for c in range(1, n_chrom):
        for t in range(K):
            pop[c, t] = stream_uniform(state)
    for c in range(n_chrom):
        sse[c] = _decode_sse(Zm, pop[c], k, order, sizes)
    cum = np.empty(n_chrom)
    parents = np.empty(n_chrom, np.int64)
    new_sse = np.empty(n_chrom)
    fresh = np.zeros(n_chrom, np.bool_)  # child differs from its parent: evaluate it
    for _ in range(iterations):
        best = 0
        for c in range(1, n_chrom):
            if sse[c] < sse[best]:
                best = c
        acc = 0.0
        for c in range(n_chrom):
            acc += 1.0 / (sse[c] + 1.0)
            cum[c] = acc
        for c in range(1, n_chrom):
            u = stream_uniform(state) * acc
            j = 0
            while j < n_chrom - 1 and cum[j] <= u:
                j += 1
            parents[c] = j
        new[0, :] = pop[best]
        new_sse[0] = sse[best]
        c = 1
        while c < n_chrom:
            a = parents[c]
            if c + 1 < n_chrom:
                b = parents[c + 1]
                fresh[c] = False
                fresh[c + 1] = False
                new_sse[c] = sse[a]
                new_sse[c + 1] = sse[b]
                if stream_uniform(state) < p_cross and K > 1:
                    fresh[c] = True
                    fresh[c + 1] = True
                    cut = 1 + stream_randint(state, K - 1)
                    for t in range(K):
                        if t < cut:
                            new[c, t] = pop[a, t]
                            new[c + 1, t] = pop[b, t]
                        else:
                            new[c, t] = pop[b, t]
                            new[c + 1, t] = pop[a, t]
                else:
                    new[c, :] = pop[a]
                    new[c + 1, :] = pop[b]
                c += 2
            else:
                new[c, :] = pop[a]
                new_sse[c] = sse[a]
                fresh[c] = False
                c += 1
        for c in range(1, n_chrom):
            if stream_uniform(state) < p_mut and K > 1:
                i = stream_randint(state, K)
                j = stream_randint(state, K - 1)
                if j >= i:
                    j += 1
                if stream_uniform(state) < 0.5:
                    # exchange: i and j swap places in the encoded order
                    tmp = new[c, i]
                    new[c, i] = new[c, j]
                    new[c, j] = tmp
                else:
                    # insertion: i moves to just after j (key halfway to j's successor),
                    # which lets a group grow or shrink by one record
                    nxt = 2.0
                    for t in range(K):
                        v = new[c, t]
                        if v > new[c, j] and v < nxt:
                            nxt = v
                    if nxt > 1.0:  # j is last: i goes between j and the end of [0, 1)
                        nxt = 1.0
                    new[c, i] = 0.5 * (new[c, j] + nxt)
                fresh[c] = True
            if fresh[c]:  # an unchanged copy keeps its parent's SSE
                new_sse[c] = _decode_sse(Zm, new[c], k, order, sizes)
        for c in range(n_chrom):
            pop[c, :] = new[c]
            sse[c] = new_sse[c]
    best = 0
    for c in range(1, n_chrom):
        if sse[c] < sse[best]:
            best = c
    return pop[best].copy(), sse[best]


# ------------------------------------------------------------------------- method
def _macrogroups(X: np.ndarray, labels: np.ndarray, k: int, K: int, one_step: bool):
    """Macrogroup id per record and the k-partition seeding each macrogroup.

    Two-step: MDAV with group size K/k on the centroids of the MDAV k-groups; the
    macrogroup keeps its MDAV k-groups as seed. One-step: MDAV K-partition of the
    records; the seed is MDAV with size k inside each macrogroup. When there are too
    few groups (records) for a second MDAV pass, the whole block is one macrogroup.
    """
    n = X.shape[0]
    if one_step:
        macro = mdav(X, K) if n >= K else np.zeros(n, dtype=np.int64)
        seed = np.empty(n, dtype=np.int64)
        offset = 0
        for m in range(int(macro.max()) + 1):
            idx = np.flatnonzero(macro == m)
            seed[idx] = mdav(X[idx], k) + offset
            offset = int(seed[idx].max()) + 1
        return macro, seed
    n_groups = int(labels.max()) + 1
    ratio = K // k
    if n_groups < ratio:
        return np.zeros(n, dtype=np.int64), labels
    counts = np.bincount(labels).astype(np.float64)
    sums = np.zeros((n_groups, X.shape[1]))
    np.add.at(sums, labels, X)
    macro_of_group = mdav(sums / counts[:, None], ratio)
    return macro_of_group[labels], labels


def _seed_keys(seed_labels: np.ndarray, k: int) -> np.ndarray:
    """Random keys that put the records group by group (in label order).

    The optimal cut of the decoder can reproduce the seed partition from that order
    (its groups are contiguous and of k..2k-1 records), so the decoded SSE is at most
    the seed's.
    """
    K = seed_labels.size
    order = np.lexsort((np.arange(K), seed_labels))
    keys = np.empty(K)
    keys[order] = (np.arange(K) + 0.5) / K
    return keys


def _decode(Zm: np.ndarray, keys: np.ndarray, k: int) -> tuple[np.ndarray, float]:
    """The k-partition (canonical labels) encoded by ``keys`` and its SSE."""
    K = Zm.shape[0]
    order = np.empty(K, dtype=np.int64)
    sizes = np.empty(K // k + 1, dtype=np.int64)
    cost = _decode_sse(Zm, keys, k, order, sizes)
    sizes = sizes[sizes > 0]
    local = np.empty(K, dtype=np.int64)
    local[order] = np.repeat(np.arange(sizes.size), sizes)
    return canonical_labels(local), float(cost)


def macrogroups(
    X: np.ndarray, k: int, *, macro_k: int = 0, one_step: bool = False
) -> np.ndarray:
    """Macrogroup of every record, as :func:`genetic` builds them (canonical labels).

    ``len(np.unique(macrogroups(X, k)))`` is the number of macrogroups (independent
    genetic searches) of a run; :func:`genetic` also logs it (logger
    ``microagg_cli``, level INFO).

    Examples
    --------
    >>> X = np.arange(60.0).reshape(-1, 1)
    >>> int(macrogroups(X, 3, macro_k=12).max()) + 1
    5
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    check_k(X, k)
    K = _macro_size(k, macro_k)
    macro, _ = _macrogroups(X, mdav(X, k), k, K, one_step)
    return canonical_labels(macro)


def _macro_size(k: int, macro_k: int) -> int:
    K = 7 * k if macro_k == 0 else int(macro_k)
    if K % k != 0 or K < 2 * k:
        raise InvalidParameterError(
            f"genetic: macro_k must be 0 (meaning 7k) or a multiple of k={k} that is >= 2k, got {macro_k}"
        )
    return K


@method_contract
def genetic(X: np.ndarray, k: int, *, rng: np.random.Generator, macro_k: int = 0,
            one_step: bool = False, chromosomes: int = 10, mutation: float = 0.1,
            crossover: float = 0.5, iterations: int | None = None, rounds: int = 2) -> np.ndarray:
    """MDAV, a two-step partition into macrogroups, and a genetic algorithm in each.

    1. MDAV k-partition of the block (:func:`fixed_size.mdav`).
    2. Two-step: MDAV with group size K/k on the group centroids; each resulting set
       of centroids, with its records, is a macrogroup of about K records. With
       ``one_step``: an MDAV K-partition of the records instead, each macrogroup
       seeded with its own MDAV k-partition.
    3. In each macrogroup a genetic algorithm searches k-partitions of its records
       with groups of k..2k-1 (variable size, as in the paper): a chromosome holds
       one random key per record; decoding sorts the records by key (stable) and
       cuts that sequence optimally into consecutive groups of k..2k-1 records (a
       shortest path over the cut points, edge cost the group's SSE, as in the
       Hansen-Mukherjee graph), so every chromosome is a valid k-partition and no
       repair is needed. Fitness 1/(SSE+1), roulette-wheel selection, one-point
       crossover (probability ``crossover``), mutation (probability ``mutation`` per
       child: two records exchange places, or -- with even odds -- one record moves
       to just after another, which lets groups grow and shrink). The macrogroup's
       MDAV partition is chromosome 0 of the initial population (the others are
       random) and the best chromosome is copied into every generation (elitism).
    4. The union of the macrogroups' best partitions is the result.
    5. Beyond the paper, ``rounds`` > 1 repeats steps 2-4: round r builds new
       macrogroups by MDAV with group size K/k on the centroids of round r-1's
       groups, and each macrogroup's search is seeded with round r-1's partition.
       ``rounds=1`` is the paper's single pass.

    A macrogroup's search result replaces its seed only if its exact SSE is not
    larger, so no macrogroup and no round ends worse than where it started: the
    two-step result is never worse than MDAV.

    {method contract}
    rng : generator; one seed per macrogroup is drawn from it, in macrogroup order,
        round after round.
    macro_k : macrogroup size K, a multiple of k and >= 2k; 0 (default) means 7k.
    one_step : build round 1's macrogroups by an MDAV K-partition of the records.
    chromosomes : population size (>= 2).
    mutation, crossover : probabilities in [0, 1].
    iterations : number of generations per macrogroup and round; None (default): the
        budget for n, :func:`genetic_generations` (10,000 up to 400 records, then
        4,000,000 / n, at least 300: the run's time grows like MDAV's instead of n
        times faster).
    rounds : passes of steps 2-4 (default 2; 1 = the paper).

    Returns
    -------
    labels : (n,) int64, canonical; groups of k..2k-1 records.

    Notes
    -----
    Cost O(rounds * iterations * chromosomes * n * (k p + log K)) after MDAV; the
    macrogroups are independent problems solved one after another by a compiled
    kernel, each with its own random stream (seeds drawn from ``rng`` before the
    round's searches), so the result depends on the seed only. The number of
    macrogroups of round 1 is :func:`macrogroups`; each round's count is logged
    (logger ``microagg_cli``, INFO).

    Why ``rounds`` defaults to 2: on Census (k = 3, seed 0) the exact optimum inside
    round 1's two-step macrogroups at K = 12 (90 macrogroups of 12 records, found
    by enumeration) is IL 5.4696, 3.91 % below MDAV's 5.6922 -- no encoding of
    the single pass can reach the paper's 4 %. Measured two-step gains over MDAV
    with the defaults and seed 0 (benchmarks/genetic_census.py), K = 12 / 18 / 27
    (90 / 60 / 40 macrogroups): rounds=2 5.08 / 5.33 / 4.75 % (IL 5.4028 / 5.3887 /
    5.4220, 8-12 s each); rounds=1 3.18 / 4.13 / 3.39 % (IL 5.5114 / 5.4572 /
    5.4992, 4-5 s); seeds 1 and 2 with rounds=2: 5.83 / 5.90 / 4.30 % and
    5.54 / 5.75 / 4.50 % (the paper: 4 / 4 / 1 %). With 10,000 generations and the
    other defaults (K = 7k = 21 at k = 3) IL 5.3948 / 7.1656 / 8.6264 / 13.4582 at k = 3 / 4 / 5 / 10
    (benchmarks/methods_census.py). Groups larger than k are rare
    on Census at k = 3. Unchanged children (no crossover, no mutation) keep their
    parent's SSE instead of being decoded again.

    References
    ----------
    Martinez-Balleste, A., Solanas, A., Domingo-Ferrer, J. & Mateo-Sanz, J. M.
    (2007). A genetic approach to multivariate microaggregation for database privacy.
    Proceedings of the IEEE 23rd International Conference on Data Engineering
    Workshops (ICDEW 2007), 180-185.
    Hansen, S. L. & Mukherjee, S. (2003). A polynomial algorithm for optimal
    univariate microaggregation. IEEE TKDE 15(4), 1043-1044.

    Examples
    --------
    >>> X = np.array([[0.0], [1.0], [2.0], [10.0], [11.0], [12.0]])
    >>> genetic(X, 3, rng=np.random.default_rng(0), iterations=10).tolist()
    [0, 0, 0, 1, 1, 1]

    Two clusters of 4 records at k = 3: MDAV makes groups of 3 and 5, the variable-size
    search finds 4 and 4.

    >>> X = np.array([[0.0], [0.1], [0.2], [0.3], [9.0], [9.1], [9.2], [9.3]])
    >>> genetic(X, 3, rng=np.random.default_rng(0), iterations=50).tolist()
    [0, 0, 0, 0, 1, 1, 1, 1]
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    check_k(X, k)
    K = _macro_size(k, macro_k)
    if chromosomes < 2:
        raise InvalidParameterError(f"genetic: chromosomes must be >= 2, got {chromosomes}")
    with phase("genetic: start (mdav)", total=X.shape[0]):
        labels = mdav(X, k)
    macro, labels = _macrogroups(X, labels, k, K, one_step)
    log.info("genetic: %d macrogroups (K = %d) in round 1", int(macro.max()) + 1, K)
    if iterations is None:
        iterations = genetic_generations(X.shape[0])
    ga = (int(chromosomes), float(mutation), float(crossover), int(iterations))
    with phase(f"genetic: round 1 of {int(rounds)}", total=X.shape[0]):
        labels = _ga_round(X, macro, labels, k, rng, ga)
    for r in range(2, int(rounds) + 1):
        macro, _ = _macrogroups(X, labels, k, K, False)
        log.info("genetic: %d macrogroups (K = %d) in round %d", int(macro.max()) + 1, K, r)
        with phase(f"genetic: round {r} of {int(rounds)}", total=X.shape[0]):
            labels = _ga_round(X, macro, labels, k, rng, ga)
    return labels


#: The default generations budget of :func:`genetic` (:func:`genetic_generations`).
GENETIC_WORK = 4_000_000
GENETIC_MIN_GENERATIONS = 300
GENETIC_MAX_GENERATIONS = 10_000


def genetic_generations(n: int) -> int:
    """The default generations per macrogroup and round of :func:`genetic` for n records:
    ``GENETIC_WORK / n`` between 300 and 10,000. A generation costs O(n) (every
    macrogroup's population is decoded), so the default run costs about 4,000,000
    record-generations whatever n (within the bounds): 10,000 generations up to 400
    records, 3,703 on Census (1,080 records), 400 at 10,000 records, 300 from 13,334
    records on (about 8 s at 10,000 x 10 and 60 s at 100,000 x 10 on the 2-core
    reference machine; a fixed 10,000 took 189 s at 10,000).

    >>> genetic_generations(1_080), genetic_generations(10_000), genetic_generations(100_000)
    (3703, 400, 300)
    """
    return int(min(GENETIC_MAX_GENERATIONS, max(GENETIC_MIN_GENERATIONS, GENETIC_WORK // max(int(n), 1))))


def _ga_round(
    X: np.ndarray, macro: np.ndarray, seed_labels: np.ndarray, k: int,
    rng: np.random.Generator, ga: tuple[int, float, float, int],
) -> np.ndarray:
    """One genetic search per macrogroup, seeded with ``seed_labels``; canonical labels.

    A macrogroup's result replaces its seed only when its exact SSE is not larger (the
    kernel ranks chromosomes by prefix-sum costs, so rounding can never make a
    macrogroup worse than its seed).
    """
    n = X.shape[0]
    n_macro = int(macro.max()) + 1
    seeds = rng.integers(0, 2**63 - 1, size=n_macro, dtype=np.int64)
    chromosomes, mutation, crossover, iterations = ga
    out = np.empty(n, dtype=np.int64)
    next_label = 0
    for m in range(n_macro):
        idx = np.flatnonzero(macro == m)
        local = canonical_labels(seed_labels[idx])
        if idx.size >= 2 * k and iterations > 0:
            Zm = X[idx]
            keys, _ = _ga_macrogroup(
                Zm, _seed_keys(local, k), k, chromosomes, mutation, crossover, iterations,
                stream_state(int(seeds[m])),
            )
            found, _ = _decode(Zm, keys, k)
            if sse(Zm, found) <= sse(Zm, local):
                local = found
        out[idx] = local + next_label
        next_label += int(local.max()) + 1
        advance(idx.size)  # the macrogroup's records searched (the progress display)
    return canonical_labels(out)


SPECS: tuple[MethodSpec, ...] = (
    MethodSpec(name="genetic", cost=CostModel(2.5, 1.0, iterations="iterations", default_iterations=400, budget=genetic_generations), func=genetic, summary="MDAV, macrogroups of about K records, a genetic algorithm over groups of k..2k-1 per macrogroup (never worse than MDAV)",
               reference="Martinez-Balleste, Solanas, Domingo-Ferrer & Mateo-Sanz (2007), A genetic approach to multivariate microaggregation for database privacy, ICDE Workshops",
               params=(ParamSpec("macro_k", "int", 0, "macrogroup size K, a multiple of k (0 = 7k)", min=0),
                       ParamSpec("one_step", "bool", False, "macrogroups from an MDAV K-partition of the records, not of the centroids"),
                       ParamSpec("chromosomes", "int", 10, "population size", min=2),
                       ParamSpec("mutation", "float", 0.1, "mutation probability per child", min=0.0, max=1.0),
                       ParamSpec("crossover", "float", 0.5, "one-point crossover probability per pair", min=0.0, max=1.0),
                       ParamSpec("iterations", "int", None, "generations per macrogroup and round; not set: 4,000,000 / n, "
                                 "between 300 and 10,000 (the report states the number used)", min=0),
                       ParamSpec("rounds", "int", 2, "rounds of macrogroups; round r > 1 regroups the previous result's groups", min=1))),
)
