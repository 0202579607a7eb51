"""optimal-1d, individual-ranking, ufs and simple (methods/univariate.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from method_checks import brute_contiguous, py_sse
from microagg_cli.errors import InfeasibleError, InvalidParameterError
from microagg_cli.methods import get_method
from microagg_cli.methods._axes import projection_axis
from microagg_cli.methods.univariate import (
    fixed_contiguous_sizes,
    individual_ranking,
    labels_from_sorted_sizes,
    optimal_1d,
    optimal_contiguous_sizes,
    simple,
    ufs,
)
from microagg_cli.partition import canonical_labels, group_sizes

# ---------------------------------------------------------------------------
# Plain-Python references
# ---------------------------------------------------------------------------


def partition_sse_1d(x: np.ndarray, labels: np.ndarray) -> float:
    groups: dict[int, list[float]] = {}
    for v, g in zip(x.tolist(), labels.tolist()):
        groups.setdefault(g, []).append(v)
    return sum(py_sse(g) for g in groups.values())


def brute_all_partitions(v: list[float], k: int) -> float:
    """Minimum SSE over ALL set partitions of ``v`` whose blocks have >= k members."""
    n = len(v)
    best = [float("inf")]

    def rec(i: int, blocks: list[list[float]]) -> None:
        if i == n:
            if all(len(b) >= k for b in blocks):
                best[0] = min(best[0], sum(py_sse(b) for b in blocks))
            return
        # prune: blocks still short of k cannot all be filled by the remaining values
        if sum(max(0, k - len(b)) for b in blocks) > n - i:
            return
        for b in blocks:
            b.append(v[i])
            rec(i + 1, blocks)
            b.pop()
        blocks.append([v[i]])
        rec(i + 1, blocks)
        blocks.pop()

    rec(0, [])
    return best[0]


def close(a: float, b: float, scale: float) -> bool:
    """Equal to 1e-9 relative (plus a rounding floor relative to the data's scale)."""
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b)) + 1e-12 * (1.0 + scale)


def assert_contiguous_in_order(labels: np.ndarray, order: np.ndarray) -> None:
    """The groups are runs of the permutation ``order``."""
    along = labels[order]
    changes = int(np.count_nonzero(np.diff(along)))
    assert changes == np.unique(labels).size - 1


values_1d = st.one_of(
    st.lists(st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False), min_size=2, max_size=12),
    st.lists(st.sampled_from([0.0, 1.0, 2.5, 7.0]), min_size=2, max_size=12),  # many ties
    st.lists(st.integers(-5, 5).map(float), min_size=2, max_size=12),
)


# ---------------------------------------------------------------------------
# optimal-1d
# ---------------------------------------------------------------------------


def test_optimal_1d_hand_worked():
    # Sorted: 0 1 2 3 | 100 101 102. Fixed-size grouping would give {0,1,2} and
    # {3,100,101,102} (SSE 2 + 7299.5 ...); the optimum moves 3 down:
    # {0,1,2,3}: mean 1.5, SSE 2.25+0.25+0.25+2.25 = 5; {100,101,102}: SSE 2. Total 7.
    x = np.array([101.0, 0.0, 3.0, 100.0, 2.0, 102.0, 1.0])
    labels = optimal_1d(x[:, None], 3)
    assert labels.tolist() == [0, 1, 1, 0, 1, 0, 1]
    assert partition_sse_1d(x, labels) == pytest.approx(7.0)


def test_optimal_1d_example_of_microagg1d_readme():
    # x = [6, 2, 0.7, 1.1, 5, 1, 5.1], k = 3: {0.7, 1, 1.1, 2} and {5, 5.1, 6}.
    x = np.array([6.0, 2.0, 0.7, 1.1, 5.0, 1.0, 5.1])
    assert optimal_1d(x[:, None], 3).tolist() == [0, 1, 1, 1, 0, 1, 0]


def test_optimal_1d_all_ties_tie_rule():
    # Every partition has SSE 0; the documented rule keeps the last group smallest:
    # n = 7, k = 3 -> sizes 4, 3, in input order (stable sort).
    labels = optimal_1d(np.full((7, 1), 2.0), 3)
    assert labels.tolist() == [0, 0, 0, 0, 1, 1, 1]
    assert optimal_contiguous_sizes(np.zeros(10), 3).tolist() == [4, 3, 3]


def test_optimal_1d_ties_keep_input_order():
    # values 1,1,1,1 then 9,9: the equal 1s are grouped in input order
    x = np.array([9.0, 1.0, 1.0, 9.0, 1.0, 1.0])
    assert optimal_1d(x[:, None], 2).tolist() == [0, 1, 1, 0, 2, 2]


def test_optimal_1d_small_n_single_group():
    for n in (3, 4, 5):  # k..2k-1 with k = 3: one group
        assert optimal_1d(np.arange(n, dtype=float)[:, None], 3).tolist() == [0] * n


@settings(max_examples=120, deadline=None)
@given(values=values_1d, k=st.integers(2, 4))
def test_optimal_1d_equals_brute_force_contiguous(values, k):
    if len(values) < k:
        values = values + [0.0] * (k - len(values))
    values = values[: 3 * k]  # n between k and 3k
    x = np.array(values)
    labels = optimal_1d(x[:, None], k)
    sizes = group_sizes(labels)
    assert sizes.min() >= k and sizes.max() <= 2 * k - 1
    assert_contiguous_in_order(labels, np.argsort(x, kind="stable"))
    got = partition_sse_1d(x, labels)
    want = brute_contiguous(sorted(values), k)
    assert close(got, want, float(np.sum(x * x))), (got, want)


@settings(max_examples=40, deadline=None)
@given(
    values=st.one_of(
        st.lists(st.floats(-100, 100, allow_nan=False), min_size=4, max_size=8),
        st.lists(st.sampled_from([0.0, 1.0, 3.0]), min_size=4, max_size=8),
    ),
    k=st.integers(2, 3),
)
def test_optimal_1d_equals_brute_force_over_all_partitions(values, k):
    # Proves on tiny inputs that restricting to contiguous groups of k..2k-1 loses
    # nothing (Hansen & Mukherjee's lemma).
    x = np.array(values)
    got = partition_sse_1d(x, optimal_1d(x[:, None], k))
    want = brute_all_partitions(values, k)
    assert close(got, want, float(np.sum(x * x))), (got, want)


def test_optimal_1d_matches_brute_force_on_random_medium():
    rng = np.random.default_rng(3)
    for k in (2, 3, 5):
        x = np.round(rng.normal(size=40), 1)  # rounding creates ties
        got = partition_sse_1d(x, optimal_1d(x[:, None], k))
        assert close(got, brute_contiguous(sorted(x.tolist()), k), float(np.sum(x * x)))


def test_optimal_1d_refuses_several_columns_and_bad_k():
    with pytest.raises(InvalidParameterError, match="one attribute"):
        optimal_1d(np.zeros((6, 2)), 3)
    with pytest.raises(InvalidParameterError):
        optimal_1d(np.zeros((6, 1)), 1)
    with pytest.raises(InfeasibleError):
        optimal_1d(np.zeros((2, 1)), 3)


def test_optimal_1d_deterministic_and_input_untouched(rng):
    X = rng.normal(size=(200, 1))
    before = X.copy()
    a = optimal_1d(X, 4)
    b = optimal_1d(X, 4, rng=np.random.default_rng(99))
    assert np.array_equal(a, b)
    assert np.array_equal(X, before)
    assert np.array_equal(a, canonical_labels(a))


def test_optimal_1d_never_worse_than_fixed_size(rng):
    x = rng.lognormal(size=500)
    opt = partition_sse_1d(x, optimal_1d(x[:, None], 5))
    order = np.argsort(x, kind="stable")
    fixed = labels_from_sorted_sizes(order, fixed_contiguous_sizes(x.size, 5))
    assert opt <= partition_sse_1d(x, fixed) + 1e-9


# ---------------------------------------------------------------------------
# shared helpers
# ---------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 60), k=st.integers(2, 6), seed=st.integers(0, 10**6))
def test_labels_from_sorted_sizes_is_canonical(n, k, seed):
    if n < k:
        n = k
    r = np.random.default_rng(seed)
    order = r.permutation(n)
    sizes = fixed_contiguous_sizes(n, k)
    labels = labels_from_sorted_sizes(order, sizes)
    naive = np.empty(n, dtype=np.int64)
    naive[order] = np.repeat(np.arange(sizes.size), sizes)
    assert np.array_equal(labels, canonical_labels(naive))


def test_fixed_contiguous_sizes():
    assert fixed_contiguous_sizes(7, 3).tolist() == [3, 4]
    assert fixed_contiguous_sizes(6, 3).tolist() == [3, 3]
    assert fixed_contiguous_sizes(5, 3).tolist() == [5]


# ---------------------------------------------------------------------------
# individual-ranking
# ---------------------------------------------------------------------------


def test_individual_ranking_hand_worked():
    # column 0 sorted: rows 0,1,2,3,4 -> {0,1} {2,3,4} (last takes the remainder)
    # column 1 sorted: 1(r1) 2(r3) 5(r4) 8(r2) 9(r0) -> {r1,r3} {r4,r2,r0}
    X = np.array([[1.0, 9.0], [2.0, 1.0], [3.0, 8.0], [4.0, 2.0], [5.0, 5.0]])
    out = individual_ranking(X, 2)
    assert out.shape == (5, 2)
    assert out[:, 0].tolist() == [0, 0, 1, 1, 1]
    assert out[:, 1].tolist() == [0, 1, 0, 1, 0]


def test_individual_ranking_optimal_differs_from_fixed():
    # column: 0 1 2 3 100 101 102 -> fixed {0,1,2}{3,100,101,102}, optimal {0..3}{100..102}
    x = np.array([0.0, 1.0, 2.0, 3.0, 100.0, 101.0, 102.0])
    X = np.column_stack([x, x[::-1]])
    fixed = individual_ranking(X, 3)
    opt = individual_ranking(X, 3, optimal=True)
    assert fixed[:, 0].tolist() == [0, 0, 0, 1, 1, 1, 1]
    assert opt[:, 0].tolist() == [0, 0, 0, 0, 1, 1, 1]
    assert opt[:, 1].tolist() == [0, 0, 0, 1, 1, 1, 1]


@settings(max_examples=50, deadline=None)
@given(
    n=st.integers(2, 40), p=st.integers(1, 4), k=st.integers(2, 5),
    seed=st.integers(0, 10**6), optimal=st.booleans(),
)
def test_individual_ranking_per_column_invariants(n, p, k, seed, optimal):
    if n < k:
        n = k
    r = np.random.default_rng(seed)
    X = np.round(r.normal(size=(n, p)), 1)
    before = X.copy()
    out = individual_ranking(X, k, optimal=optimal)
    assert np.array_equal(X, before)
    assert out.shape == (n, p)
    for j in range(p):
        col = out[:, j]
        assert np.array_equal(col, canonical_labels(col))
        sizes = group_sizes(col)
        assert sizes.min() >= k and sizes.max() <= 2 * k - 1
        assert_contiguous_in_order(col, np.argsort(X[:, j], kind="stable"))
        if optimal:
            assert np.array_equal(col, optimal_1d(X[:, [j]], k))
        else:  # all k except the last group in sorted order
            assert sorted(sizes.tolist())[:-1] == [k] * (sizes.size - 1)


def test_individual_ranking_spec():
    spec = get_method("individual-ranking")
    assert spec.output == "column_labels"
    assert spec.validate_params({"optimal": "yes"}) == {"optimal": True}
    assert get_method("optimal-1d").max_columns == 1


# ---------------------------------------------------------------------------
# ufs and simple
# ---------------------------------------------------------------------------


def test_ufs_hand_worked_pv_and_descending():
    # column 0: 3 0 2 1 4 -> ascending rows 1,3,2,0,4 -> {1,3} {2,0,4}
    # descending rows 4,0,2,3,1 -> {4,0} {2,3,1}
    X = np.array([[3.0, 0.0], [0.0, 1.0], [2.0, 5.0], [1.0, 4.0], [4.0, 0.5]])
    assert ufs(X, 2, order="pv:0").tolist() == [0, 1, 0, 1, 0]
    assert ufs(X, 2, order="pv:0", descending=True).tolist() == [0, 1, 1, 1, 0]
    # sz: sums 3 1 7 5 4.5 -> ascending rows 1,0,4,3,2 -> {1,0} {4,3,2}
    assert ufs(X, 2, order="sz").tolist() == [0, 0, 1, 1, 1]


def test_ufs_ties_keep_input_order_both_directions():
    X = np.zeros((4, 1))
    assert ufs(X, 2, order="pv:0").tolist() == [0, 0, 1, 1]
    assert ufs(X, 2, order="pv:0", descending=True).tolist() == [0, 0, 1, 1]


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 50), p=st.integers(1, 4), k=st.integers(2, 5),
       seed=st.integers(0, 10**6), order=st.sampled_from(["fpc", "sz", "pv:0"]),
       descending=st.booleans())
def test_ufs_invariants(n, p, k, seed, order, descending):
    if n < k:
        n = k
    X = np.random.default_rng(seed).normal(size=(n, p))
    labels = ufs(X, k, order=order, descending=descending)
    sizes = group_sizes(labels)
    assert np.array_equal(labels, canonical_labels(labels))
    assert sizes.min() >= k and sizes.max() <= 2 * k - 1
    assert sorted(sizes.tolist())[:-1] == [k] * (sizes.size - 1)
    axis = projection_axis(X, order)
    assert_contiguous_in_order(labels, np.argsort(-axis if descending else axis, kind="stable"))


def test_ufs_params():
    spec = get_method("ufs")
    assert spec.validate_params({}) == {"order": "fpc", "descending": False}
    assert spec.validate_params({"order": "pv:3"})["order"] == "pv:3"
    with pytest.raises(InvalidParameterError):
        spec.validate_params({"order": "md"})
    with pytest.raises(InvalidParameterError):
        ufs(np.zeros((4, 2)), 2, order="pv:5")


def test_simple_hand_worked():
    assert simple(np.zeros((7, 2)), 3).tolist() == [0, 0, 0, 1, 1, 1, 1]
    assert simple(np.zeros((6, 1)), 3).tolist() == [0, 0, 0, 1, 1, 1]
    assert simple(np.zeros((5, 1)), 3).tolist() == [0, 0, 0, 0, 0]
    assert simple(np.zeros((8, 1)), 2).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    with pytest.raises(InfeasibleError):
        simple(np.zeros((2, 1)), 3)


def test_kernel_guards_for_library_callers():
    with pytest.raises(InvalidParameterError, match="finite"):
        optimal_contiguous_sizes(np.array([np.nan, 1.0, 2.0]), 2)
    with pytest.raises(InvalidParameterError, match="at least"):
        optimal_contiguous_sizes(np.array([1.0, 2.0]), 3)


# ---------------------------------------------------------------------------
# The O(n log k) Monge solver (k >= MONGE_MIN_K) against the O(n k) shortest path
# ---------------------------------------------------------------------------

from microagg_cli.methods._monge import optimal_sizes_monge, optimal_sizes_smawk  # noqa: E402
from microagg_cli.methods._contiguous import optimal_sizes  # noqa: E402
from microagg_cli.methods.univariate import MONGE_MIN_K, SMAWK_MIN_K  # noqa: E402

LARGE_K_SOLVERS = pytest.mark.parametrize(
    "solver", [optimal_sizes_monge, optimal_sizes_smawk], ids=["divide-and-conquer", "smawk"])


def shortest_path_sizes(v: np.ndarray, k: int) -> np.ndarray:
    """The O(n k) shortest path (``_contiguous.py``) on sorted values."""
    return optimal_sizes(v.reshape(-1, 1), k)


def sizes_sse(v: np.ndarray, sizes: np.ndarray) -> float:
    """SSE of consecutive runs of sorted ``v``, two-pass per run."""
    bounds = np.concatenate(([0], np.cumsum(sizes)))
    return sum(py_sse(v[a:b].tolist()) for a, b in zip(bounds[:-1], bounds[1:]))


def check_runs(sizes: np.ndarray, n: int, k: int) -> None:
    assert int(sizes.sum()) == n
    assert sizes.min() >= k and sizes.max() <= 2 * k - 1 or sizes.size == 1


@LARGE_K_SOLVERS
@settings(max_examples=150, deadline=None)
@given(
    values=st.lists(st.integers(-50, 50), min_size=1, max_size=160),
    k=st.integers(1, 40),
)
def test_monge_solver_identical_to_shortest_path_on_integers(solver, values, k):
    # Integer values: both kernels compute bit-identical edge costs, so the same
    # tie rule gives the same partition, ties included.
    v = np.sort(np.array(values, dtype=float))
    k = min(k, v.size)
    got = solver(v, k)
    check_runs(got, v.size, k)
    assert got.tolist() == shortest_path_sizes(v, k).tolist()


@settings(max_examples=150, deadline=None)
@given(
    values=st.one_of(
        st.lists(st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False), min_size=1, max_size=160),
        st.lists(st.sampled_from([0.1, 0.2, 0.3, 1e-9, 7.0]), min_size=1, max_size=160),
    ),
    k=st.integers(1, 40),
)
@LARGE_K_SOLVERS
def test_monge_solver_never_worse_than_shortest_path(solver, values, k):
    v = np.sort(np.array(values, dtype=float))
    k = min(k, v.size)
    got = solver(v, k)
    check_runs(got, v.size, k)
    ref = shortest_path_sizes(v, k)
    scale = float(np.sum(v * v)) + 1.0
    assert sizes_sse(v, got) <= sizes_sse(v, ref) + 1e-12 * scale


@settings(max_examples=60, deadline=None)
@given(values=values_1d, k=st.integers(MONGE_MIN_K, MONGE_MIN_K + 2))
def test_optimal_1d_large_k_equals_brute_force_contiguous(values, k):
    values = (values * (3 * k // max(len(values), 1) + 1))[: 3 * k]  # n between k and 3k
    if len(values) < k:
        values = values + [0.0] * (k - len(values))
    x = np.array(values) + np.linspace(0.0, 1e-3, len(values))  # break the repeats
    labels = optimal_1d(x[:, None], k)
    got = partition_sse_1d(x, labels)
    want = brute_contiguous(sorted(x.tolist()), k)
    assert close(got, want, float(np.sum(x * x))), (got, want)


@pytest.mark.parametrize("k", [MONGE_MIN_K, 37, 100, 1000])
def test_monge_solver_same_partition_on_lognormal(k):
    # Continuous data (no ties): the partition of optimal-1d does not change at the
    # switches of solver.
    v = np.sort(np.random.default_rng(k).lognormal(size=20_000))
    got = optimal_contiguous_sizes(v, k)
    assert got.tolist() == shortest_path_sizes(v, k).tolist()
    assert got.tolist() == optimal_sizes_monge(v, k).tolist()
    assert got.tolist() == optimal_sizes_smawk(v, k).tolist()


def test_smawk_from_smawk_min_k():
    # the two large-k solvers agree where optimal_contiguous_sizes switches to SMAWK
    # (the O(n k) reference is too slow there: checked against it above, k <= 1000)
    v = np.sort(np.random.default_rng(0).normal(size=4 * SMAWK_MIN_K + 17))
    for k in (SMAWK_MIN_K - 1, SMAWK_MIN_K, SMAWK_MIN_K + 1):
        got = optimal_contiguous_sizes(v, k)
        assert got.tolist() == optimal_sizes_monge(v, k).tolist() == optimal_sizes_smawk(v, k).tolist()
        assert got.min() >= k and got.max() <= 2 * k - 1


@LARGE_K_SOLVERS
def test_monge_solver_all_ties_tie_rule(solver):
    # All values equal: every partition has SSE 0; the smallest last group wins,
    # recursively, so groups of k from the top and the remainder at the bottom.
    for n, k in ((25, 10), (39, 10), (40, 10), (1000, 300), (7, 1), (5, 5)):
        sizes = solver(np.full(n, 2.5), k)
        assert sizes.tolist() == [n - (n // k - 1) * k] + [k] * (n // k - 1)


def test_optimal_contiguous_sizes_solver_choice():
    v = np.sort(np.random.default_rng(4).integers(0, 40, size=300).astype(float))
    ref = optimal_contiguous_sizes(v, 12, solver="shortest-path")
    for solver in ("auto", "divide-and-conquer", "smawk"):
        assert optimal_contiguous_sizes(v, 12, solver=solver).tolist() == ref.tolist()
    with pytest.raises(InvalidParameterError, match="solver"):
        optimal_contiguous_sizes(v, 12, solver="wilber")
