"""Refinement methods: mdav-ls (local search) and ils (iterated local search)."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from method_checks import problem_sizes
from microagg_cli.errors import InvalidParameterError
from microagg_cli.methods import METHODS
from microagg_cli.methods.fixed_size import mdav
from microagg_cli.methods._refine_kernels import best_step
from microagg_cli.methods.refine import (
    _kick_search,
    _knn,
    _Partition,
    _repartition_search,
    _sse,
    cycle_delta,
    ils,
    mdav_ls,
    move_delta,
    split_large_groups,
    swap_delta,
)
from microagg_cli.partition import canonical_labels, information_loss, sse


def _rng(seed=0):
    return np.random.default_rng(seed)


def _partitions(items, k):
    """Every set partition of ``items`` into blocks of k..2k-1 elements."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for size in range(k - 1, 2 * k - 1):
        for comb in combinations(rest, size):
            remaining = [x for x in rest if x not in comb]
            if 0 < len(remaining) < k:
                continue
            for tail in _partitions(remaining, k):
                yield [[first, *comb], *tail]


def _optimum(X, k):
    return min(sum(((X[b] - X[b].mean(0)) ** 2).sum() for b in part)
               for part in _partitions(list(range(X.shape[0])), k))


# ------------------------------------------------------------------ the deltas
def test_move_delta_hand_case():
    # A = {0, 1, 2} (centroid 1), B = {5, 6} (centroid 5.5); moving 2 to B:
    # SSE before 2 + 0.5; after A = {0, 1}: 0.5, B = {2, 5, 6}: 26/3
    X = np.array([[0.0], [1.0], [2.0], [5.0], [6.0]])
    labels = np.array([0, 0, 0, 1, 1])
    after = labels.copy()
    after[2] = 1
    expected = sse(X, after) - sse(X, labels)
    assert expected == pytest.approx(0.5 + 26 / 3 - 2.5)
    # -3/2 * 1 + 2/3 * (2 - 5.5)^2 = -1.5 + 8.1666...
    assert move_delta(X, labels, 2, 1) == pytest.approx(-1.5 + 2 / 3 * 12.25)
    assert move_delta(X, labels, 2, 1) == pytest.approx(expected)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 100_000), st.integers(2, 6), st.integers(2, 5), st.integers(1, 4))
def test_move_and_swap_deltas_match_recomputation(seed, ma, mb, p):
    r = np.random.default_rng(seed)
    X = r.normal(size=(ma + mb + 3, p)) * r.uniform(0.1, 5)
    labels = np.array([0] * ma + [1] * mb + [2] * 3)
    i, j = int(r.integers(ma)), ma + int(r.integers(mb))
    moved = labels.copy()
    moved[i] = 1
    assert move_delta(X, labels, i, 1) == pytest.approx(sse(X, moved) - sse(X, labels), abs=1e-9)
    swapped = labels.copy()
    swapped[i], swapped[j] = 1, 0
    assert swap_delta(X, labels, i, j) == pytest.approx(sse(X, swapped) - sse(X, labels), abs=1e-9)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 100_000), st.integers(2, 4))
def test_kernel_step_delta_equals_recomputed_sse_change(seed, k):
    """The compiled step (moves and swaps, expanded formula) reports the true change."""
    r = np.random.default_rng(seed)
    X = r.normal(size=(12 * k, 3))
    start = r.permutation(np.arange(12 * k) // k)  # random k-partition, sizes k
    part = _Partition(X, start, k)
    p = X.shape[1]
    buf = [np.empty(p), np.empty(p), np.empty(p), np.empty(part.knn.shape[1], np.int64)]
    seen_move = seen_swap = 0
    for i in range(X.shape[0]):
        before = sse(X, part.labels)
        old = part.labels.copy()
        d, _, b = best_step(X, part.nrm, i, part.knn, k, part.cap, part.labels, part.members,
                            part.pos, part.sizes, part.sums, *buf, np.empty((0, 2), np.int64), 0)
        after = sse(X, part.labels)
        if b < 0:
            assert after == before and np.array_equal(old, part.labels)
            continue
        assert d < 0
        assert d == pytest.approx(after - before, rel=1e-9, abs=1e-9)
        changed = int((old != part.labels).sum())
        seen_move += changed == 1
        seen_swap += changed == 2
    assert np.bincount(part.labels).min() >= k
    assert seen_move + seen_swap > 0


def test_knn_drops_self_even_among_duplicates():
    X = np.zeros((30, 2))
    X[20:] = 1.0
    nn = _knn(X, 3)
    assert nn.shape == (30, 10)
    assert not (nn == np.arange(30)[:, None]).any()


# ------------------------------------------------------------------ split pass
def test_split_pass_hand_case_and_monotone():
    X = np.array([[0.0], [1.0], [2.0], [10.0], [11.0], [12.0], [30.0], [31.0], [32.0]])
    labels = np.array([0, 0, 0, 0, 0, 0, 1, 1, 1])
    out = split_large_groups(X, labels, 3)
    assert out.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert sse(X, out) < sse(X, labels)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 100_000), st.integers(2, 4), st.integers(1, 5))
def test_split_pass_never_raises_sse(seed, k, n_groups):
    r = np.random.default_rng(seed)
    sizes = r.integers(k, 5 * k, size=n_groups)
    labels = np.repeat(np.arange(n_groups), sizes)
    X = r.normal(size=(labels.size, 2))
    out = split_large_groups(X, labels, k)
    assert sse(X, out) <= sse(X, labels) + 1e-9
    s = np.bincount(out)
    assert s.min() >= k and s.max() < 2 * k
    # only splits: each new group lies inside one old group
    for g in range(out.max() + 1):
        assert np.unique(labels[out == g]).size == 1


# ------------------------------------------------------------------ mdav-ls
def test_mdav_ls_hand_case():
    X = np.array([[0.0], [1.0], [2.0], [3.0], [10.0], [11.0], [12.0]])
    # MDAV: {10,11,12} around the farthest record, {0,1,2,3} rest: already optimal
    assert mdav_ls(X, 3, rng=_rng()).tolist() == [0, 0, 0, 0, 1, 1, 1]


def test_mdav_ls_fixes_mdav_on_a_small_set():
    X = np.random.default_rng(0).normal(size=(7, 2))
    best = _optimum(X, 3)
    assert sse(X, mdav(X, 3)) > best + 1.0
    assert sse(X, mdav_ls(X, 3, rng=_rng())) == pytest.approx(best, abs=1e-9)


@settings(max_examples=30, deadline=None)
@given(**problem_sizes((2, 90)), start=st.sampled_from(["mdav", "genetic"]))
def test_mdav_ls_monotone_valid_deterministic(n, p, k, seed, start):
    if start == "genetic":
        # the genetic start runs three times an example at 10,000 generations per
        # macrogroup; 30 records still make one or two macrogroups (K = 7k)
        n = min(n, 30)
    if n < k:
        return
    X = np.random.default_rng(seed).normal(size=(n, p)).round(1)  # rounding makes ties
    X0 = X.copy()
    if start == "genetic":
        base = METHODS["genetic"].func(X, k, rng=_rng(seed))
        rng_ls = _rng(seed)
    else:
        base, rng_ls = mdav(X, k), _rng(seed)
    labels = mdav_ls(X, k, rng=rng_ls, start=start)
    assert np.array_equal(X, X0)
    assert labels.tolist() == canonical_labels(labels).tolist()
    sizes = np.bincount(labels)
    assert sizes.min() >= k and sizes.max() < 2 * k
    assert sse(X, labels) <= sse(X, base) + 1e-9
    assert mdav_ls(X, k, rng=_rng(seed), start=start).tolist() == labels.tolist()


def test_mdav_ls_is_a_local_optimum_for_its_neighbourhood():
    """No move or swap towards a group of a record's R nearest records lowers SSE."""
    X = _rng(5).normal(size=(150, 3))
    k = 3
    labels = mdav_ls(X, k, rng=_rng())
    nn = _knn(X, k)
    base = sse(X, labels)
    sizes = np.bincount(labels)
    for i in range(X.shape[0]):
        a = labels[i]
        for b in set(labels[nn[i]].tolist()) - {a}:
            if sizes[a] > k and sizes[b] < 2 * k - 1:
                assert move_delta(X, labels, i, b) > -1e-9
            for j in np.flatnonzero(labels == b):
                assert swap_delta(X, labels, i, int(j)) > -1e-9
    assert base < sse(X, mdav(X, k))


def test_mdav_ls_census_k3_below_target(census_z):
    labels = mdav_ls(census_z, 3, rng=_rng())
    il = information_loss(census_z, labels)
    assert il < 5.35
    assert np.bincount(labels).min() == 3 and np.bincount(labels).max() <= 5


def test_start_parameter_errors():
    X = _rng().normal(size=(20, 2))
    with pytest.raises(InvalidParameterError, match="unknown start"):
        mdav_ls(X, 3, rng=_rng(), start="nope")
    with pytest.raises(InvalidParameterError, match="itself"):
        mdav_ls(X, 3, rng=_rng(), start="mdav-ls")
    with pytest.raises(InvalidParameterError, match="itself"):
        ils(X, 3, rng=_rng(), start="ils", iterations=5)


# ------------------------------------------------------------------ ils
@pytest.mark.parametrize("seed", range(8))
def test_ils_reaches_brute_force_optimum_on_small_sets(seed):
    """10 records, k=3 (seeds 3 and 5: mdav-ls stops short of the optimum)."""
    X = np.random.default_rng(seed).normal(size=(10, 3))
    got = sse(X, ils(X, 3, rng=_rng(), iterations=200))
    assert got == pytest.approx(_optimum(X, 3), abs=1e-9)


@pytest.mark.parametrize("seed", [3, 5])
def test_mdav_ls_alone_is_not_optimal_on_those_sets(seed):
    X = np.random.default_rng(seed).normal(size=(10, 3))
    assert sse(X, mdav_ls(X, 3, rng=_rng())) > _optimum(X, 3) + 1e-3


@settings(max_examples=20, deadline=None)
@given(**problem_sizes((2, 120)))
def test_ils_monotone_valid_deterministic(n, p, k, seed):
    if n < k:
        return
    X = np.random.default_rng(seed).normal(size=(n, p)).round(1)
    X0 = X.copy()
    labels = ils(X, k, rng=_rng(seed), iterations=150)
    assert np.array_equal(X, X0)
    assert labels.tolist() == canonical_labels(labels).tolist()
    sizes = np.bincount(labels)
    assert sizes.min() >= k and sizes.max() < 2 * k
    assert sse(X, labels) <= sse(X, mdav_ls(X, k, rng=_rng(seed))) + 1e-9
    assert ils(X, k, rng=_rng(seed), iterations=150).tolist() == labels.tolist()


def test_ils_iterations_mode_ignores_the_clock_and_seed_matters(monkeypatch):
    import microagg_cli.methods.refine as refine

    X = _rng(9).normal(size=(300, 4))
    a = ils(X, 3, rng=_rng(1), iterations=2500)
    clock = iter(range(0, 10**9, 1000))  # a clock running absurdly fast changes nothing
    monkeypatch.setattr(refine.time, "perf_counter", lambda: float(next(clock)))
    b = ils(X, 3, rng=_rng(1), iterations=2500)
    monkeypatch.undo()
    assert a.tolist() == b.tolist()
    c = ils(X, 3, rng=_rng(2), iterations=2500)
    assert c.tolist() != a.tolist()


def test_ils_time_budget_mode_stops_and_improves(census_z, monkeypatch):
    """The budget is spent by the clock the search reads: a fake one here, 0.05 s a
    reading, so the test asserts no wall-clock time and still sees the run stop."""
    import itertools

    import microagg_cli.methods.refine as refine

    readings = itertools.count()
    monkeypatch.setattr(refine.time, "perf_counter", lambda: 0.05 * next(readings))
    labels = ils(census_z, 5, rng=_rng(), time_budget=1.0, threads=1)
    used = next(readings)
    monkeypatch.undo()
    # 1 s of clock at 3 readings a chunk of 1,000 iterations: a handful of chunks
    assert 20 <= used < 40
    assert information_loss(census_z, labels) < information_loss(
        census_z, mdav_ls(census_z, 5, rng=_rng()))


def test_ils_census_k3_improves_well_beyond_mdav_ls(census_z):
    labels = ils(census_z, 3, rng=_rng(), iterations=5000)
    assert information_loss(census_z, labels) < 4.95


def test_ils_needs_a_budget():
    with pytest.raises(InvalidParameterError, match="time_budget or iterations"):
        ils(np.zeros((6, 1)), 3, rng=_rng(), time_budget=0.0, iterations=0)


def test_registered_params():
    assert [p.name for p in METHODS["mdav-ls"].params] == ["start"]
    # reproducible by default: a fixed amount of work, no clock
    assert METHODS["ils"].validate_params(None) == {"start": "mdav", "time_budget": 0.0,
                                                    "iterations": None, "threads": 2}
    with pytest.raises(InvalidParameterError):
        METHODS["ils"].validate_params({"iterations": "0"})
    with pytest.raises(InvalidParameterError):
        METHODS["ils"].validate_params({"threads": "3"})


def test_ils_default_budget_scales_with_n():
    """Not set: max(40,000, 3 n) perturbations per search (a fixed 1,000,000 took 80 s at
    2,000 records and 53-92 s at 10,000); the registry fills it in for the report and
    keeps an explicit value; the estimate follows the budget."""
    import microagg_cli.methods.refine as refine

    assert [refine.ils_iterations(n) for n in (10, 1_080, 13_333, 13_334, 100_000)] == [
        40_000, 40_000, 40_000, 40_002, 300_000]
    spec = METHODS["ils"]
    assert spec.budgeted(spec.validate_params(None), 50_000)["iterations"] == 150_000
    assert spec.budgeted(spec.validate_params({"iterations": "5"}), 50_000)["iterations"] == 5
    assert spec.estimate_seconds(100_000, 10, 3, {"iterations": 600_000}) == pytest.approx(
        2 * spec.estimate_seconds(100_000, 10, 3))
    assert spec.estimate_seconds(100_000, 10, 3, {"time_budget": 42.0}) == 42.0


@pytest.mark.parametrize("k", [2, 3])
def test_ils_threads_do_not_change_the_result(k):
    X = np.random.default_rng(k).normal(size=(240, 3))
    one = ils(X, k, rng=_rng(5), iterations=3000, threads=1)
    two = ils(X, k, rng=_rng(5), iterations=3000, threads=2)
    assert np.array_equal(one, two)


def test_ils_side_by_side_searches_each_get_the_whole_budget(monkeypatch):
    """With two threads both searches are handed the remaining budget (not 2/3, 1/3)."""
    import microagg_cli.methods.refine as refine

    seen = {}

    def fake(name):
        def search(part, seed, iterations, seconds, stop=None):
            seen[name] = seconds
            return refine._sse(part.X, part.labels), part.labels.copy()
        return search

    monkeypatch.setattr(refine, "_repartition_search", fake("re-partition"))
    monkeypatch.setattr(refine, "_kick_search", fake("kick"))
    monkeypatch.setattr(refine, "_cpus", lambda: 2)
    X = np.random.default_rng(0).normal(size=(60, 2))
    ils(X, 3, rng=_rng(), time_budget=30.0, threads=2)
    assert 25.0 < seen["re-partition"] <= 30.0 and 25.0 < seen["kick"] <= 30.0
    ils(X, 3, rng=_rng(), time_budget=30.0, threads=1)
    # one after the other: 2/3 of it, then whatever is left (all of it here: the fake
    # re-partition search returns at once)
    assert 15.0 < seen["re-partition"] <= 20.0 and 25.0 < seen["kick"] <= 30.0


def test_anneal_stops_when_told():
    import threading

    import microagg_cli.methods.refine as refine

    X = np.random.default_rng(1).normal(size=(90, 2))
    part = refine._Partition(X, mdav_ls(X, 3, rng=_rng()), 3)
    calls = []

    def chunk(todo, cur, best, best_labels, temp0, frac0, dfrac):
        calls.append(todo)
        stop.set()
        return cur, best

    stop = threading.Event()
    refine._anneal(part, chunk, 0, 1000.0, stop)  # would run 1000 s without the event
    assert calls == [refine._CHUNK]


@pytest.mark.parametrize("method", [mdav_ls, ils])
def test_constant_and_one_column_data(method):
    kw = {"iterations": 50} if method is ils else {}
    X = np.zeros((20, 2))
    labels = method(X, 3, rng=_rng(), **kw)
    assert np.bincount(labels).min() >= 3 and np.bincount(labels).max() <= 5
    x = np.arange(20.0)[:, None]  # 1-D: optimal groups are contiguous runs
    labels = method(x, 4, rng=_rng(), **kw)
    runs = [x[labels == g, 0] for g in range(labels.max() + 1)]
    assert all(r.max() - r.min() == r.size - 1 for r in runs)
    assert sse(x, labels) == pytest.approx(5 * 5.0)  # five runs of 4: 5 each


# ------------------------------------------------------------------ swap-kick search
def _equal_size_optimum(X, k):
    """Brute-force optimum over partitions into groups of exactly k records."""
    return min(sum(((X[b] - X[b].mean(0)) ** 2).sum() for b in part)
               for part in _partitions(list(range(X.shape[0])), k)
               if all(len(b) == k for b in part))


@pytest.mark.parametrize("seed", range(6))
def test_kick_search_reaches_the_equal_size_optimum(seed):
    """9 records, k=3, start = MDAV (three groups of 3): the kick search keeps the
    sizes and finds the best partition into three triples."""
    X = np.random.default_rng(seed).normal(size=(9, 2))
    part = _Partition(X, mdav(X, 3), 3)
    part.descend()
    got, labels = _kick_search(part, 1, 300, 0.0)
    assert np.bincount(labels).tolist() == [3, 3, 3]
    assert got == pytest.approx(_sse(X, labels))
    assert got == pytest.approx(_equal_size_optimum(X, 3), abs=1e-9)


#: Nine points, three triples {0,1,6} {2,3,7} {4,5,8}: no exchange of two records
#: lowers SSE and no single move is allowed (every group has k=3 records), but the
#: 3-cycle 0 -> group of 7, 7 -> group of 8, 8 -> group of 0 gives the optimum.
CYCLE_X = np.array([[8.0, 9.0], [3.0, 6.0], [9.0, 6.0], [8.0, 6.0], [7.0, 3.0],
                    [8.0, 1.0], [5.0, 7.0], [8.0, 5.0], [3.0, 3.0]])
CYCLE_START = np.array([0, 0, 1, 1, 2, 2, 0, 1, 2])


def test_cycle_hand_case_only_a_three_cycle_improves():
    X, labels = CYCLE_X, CYCLE_START
    assert sse(X, labels) == pytest.approx(106 / 3)
    assert min(swap_delta(X, labels, i, j) for i in range(9) for j in range(9)
               if labels[i] != labels[j]) > 0
    part = _Partition(X, labels, 3)
    part.descend()  # the local search cannot leave the start
    assert part.labels.tolist() == labels.tolist()
    # the cycle's delta, composed of three one-in-one-out replacements
    assert cycle_delta(X, labels, [0, 7, 8]) == pytest.approx(80 / 3 - 106 / 3)
    cycled = labels.copy()
    cycled[[0, 7, 8]] = labels[[7, 8, 0]]
    assert sse(X, cycled) == pytest.approx(80 / 3)
    assert sse(X, cycled) == pytest.approx(_equal_size_optimum(X, 3))
    # the kick search (exchanges, then descent) finds it
    got, found = _kick_search(_Partition(X, labels, 3), 0, 50, 0.0)
    assert got == pytest.approx(80 / 3)
    assert canonical_labels(found).tolist() == canonical_labels(cycled).tolist()


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 100_000), st.integers(2, 5), st.integers(1, 4))
def test_cycle_delta_matches_recomputation(seed, m, p):
    r = np.random.default_rng(seed)
    sizes = r.integers(2, 6, size=m + 1)
    labels = np.repeat(np.arange(m + 1), sizes)
    X = r.normal(size=(labels.size, p))
    cycle = [int(r.choice(np.flatnonzero(labels == g))) for g in r.permutation(m + 1)[:m]]
    after = labels.copy()
    after[cycle] = labels[np.roll(cycle, -1)]
    assert cycle_delta(X, labels, cycle) == pytest.approx(sse(X, after) - sse(X, labels), abs=1e-9)


@settings(max_examples=20, deadline=None)
@given(**problem_sizes((6, 90)))
def test_kick_search_keeps_group_count_reports_true_sse_and_never_worsens(n, p, k, seed):
    if n < 2 * k:
        return
    X = np.random.default_rng(seed).normal(size=(n, p)).round(1)
    start = mdav(X, k)
    part = _Partition(X, start, k)
    part.descend()
    before = _sse(X, part.labels)
    groups = np.count_nonzero(part.sizes)
    got, labels = _kick_search(part, seed, 200, 0.0)
    sizes = np.bincount(canonical_labels(labels))
    assert sizes.size == groups and sizes.min() >= k and sizes.max() < 2 * k
    assert got == pytest.approx(_sse(X, labels), rel=1e-9, abs=1e-9)
    assert got <= before + 1e-9
    # the running SSE the kernel kept by deltas matches the state it left behind
    assert part.resync() == pytest.approx(sse(X, part.labels), rel=1e-9, abs=1e-9)
    again = _Partition(X, start, k)
    again.descend()
    assert _kick_search(again, seed, 200, 0.0)[1].tolist() == labels.tolist()


def test_ils_returns_the_better_of_its_two_searches(census_z):
    """In iterations mode ils = best of (re-partitioning search, kick search), each
    run for ``iterations`` perturbations; so it is never worse than the
    re-partitioning search alone (the ils of the previous release)."""
    X, k, it = census_z[:400], 5, 3000
    seed = int(_rng(3).integers(0, 2**63 - 1))  # what ils draws after the MDAV start
    base = mdav(X, k)
    part = _Partition(X, base, k)
    part.descend()
    fixed = _Partition(X, part.labels, k, part.knn)
    s1, l1 = _repartition_search(part, seed, it, 0.0)
    s2, l2 = _kick_search(fixed, seed + 1, it, 0.0)
    got = ils(X, k, rng=_rng(3), iterations=it)
    assert sse(X, got) == pytest.approx(min(s1, s2))
    assert sse(X, got) <= s1 + 1e-9


def test_kick_search_on_census_k10_keeps_108_groups_of_10(census_z):
    """MDAV gives 108 groups of exactly 10 records; the kick search keeps them (no
    group can give a record away) and lowers IL from mdav-ls's 12.3495."""
    k, it = 10, 20_000
    part = _Partition(census_z, mdav(census_z, k), k)
    part.descend()
    assert information_loss(census_z, part.labels) == pytest.approx(12.3495, abs=1e-4)
    got, labels = _kick_search(part, 8, it, 0.0)
    assert np.bincount(canonical_labels(labels)).tolist() == [10] * 108
    assert information_loss(census_z, labels) < 11.47


def test_ils_time_budget_replaces_the_iterations(monkeypatch):
    """time_budget > 0 is the clock mode whatever iterations says (not reproducible)."""
    import microagg_cli.methods.refine as refine

    seen = {}

    def fake(name):
        def search(part, seed, iterations, seconds, stop=None):
            seen[name] = (iterations, seconds)
            return refine._sse(part.X, part.labels), part.labels.copy()
        return search

    monkeypatch.setattr(refine, "_repartition_search", fake("re-partition"))
    monkeypatch.setattr(refine, "_kick_search", fake("kick"))
    X = np.random.default_rng(0).normal(size=(60, 2))
    ils(X, 3, rng=_rng(), time_budget=5.0, iterations=777)
    assert seen["re-partition"][0] == 0 and 0 < seen["re-partition"][1] <= 5.0
    ils(X, 3, rng=_rng())
    assert seen["re-partition"][0] == refine.ils_iterations(60) == refine.ILS_MIN_ITERATIONS == seen["kick"][0]
