"""k-Ward (multivariate and univariate): hand-worked partitions, the size constraint
on every merge, the recursion, an O(n^3) reference, Census figures."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from microagg_cli.errors import InfeasibleError, InvalidParameterError
from microagg_cli.methods import METHODS
from microagg_cli.methods._axes import projection_axis
from microagg_cli.methods.hierarchical import KwardMerge, kward, kward_1d
from microagg_cli.partition import group_sizes, information_loss

from conftest import CENSUS_LB_NN

# ----------------------------------------------------------------------------------
# A literal, O(n^3) reference of the definition (sdc-methods(7)) (every allowed pair scanned at every merge).
# ----------------------------------------------------------------------------------


def _d2(u, v) -> float:
    s = 0.0
    for a, b in zip(u.tolist(), v.tolist()):
        s += (a - b) * (a - b)
    return s


def _ref_seeds(Z, k, order):
    n = Z.shape[0]
    if order == "md":
        best, pair = -1.0, None
        for i in range(n):
            for j in range(i + 1, n):
                d = _d2(Z[i], Z[j])
                if d > best:
                    best, pair = d, (i, j)
        a, b = pair
        others = sorted((i for i in range(n) if i not in (a, b)), key=lambda i: (_d2(Z[i], Z[a]), i))
        first = sorted([a] + others[: k - 1])
        rest = [i for i in range(n) if i not in first and i != b]
        rest.sort(key=lambda i: (_d2(Z[i], Z[b]), i))
        last = sorted([b] + rest[: k - 1])
        return first, last
    y = projection_axis(Z, order)
    o = sorted(range(n), key=lambda i: (y[i], i))
    return sorted(o[:k]), sorted(o[-k:])


def _ref_kward(Z, k, order, rows, depth, trace, out):
    n = Z.shape[0]
    if n < 2 * k:
        out.append(sorted(rows.tolist()))
        return
    first, last = _ref_seeds(Z, k, order)
    singles = [i for i in range(n) if i not in first and i not in last]
    groups = [first, last] + [[i] for i in singles]
    sums = [Z[first].sum(axis=0), Z[last].sum(axis=0)] + [Z[i].copy() for i in singles]
    cents = [s / len(g) for s, g in zip(sums, groups)]
    alive = list(range(len(groups)))
    while any(len(groups[g]) < k for g in alive):
        best = None
        for ia, a in enumerate(alive):
            for b in alive[ia + 1:]:
                na, nb = float(len(groups[a])), float(len(groups[b]))
                if na >= k and nb >= k:
                    continue
                key = ((na * nb / (na + nb)) * _d2(cents[a], cents[b]), a, b)
                if best is None or key < best:
                    best = key
        cost, a, b = best
        trace.append((depth, tuple(rows[groups[a]].tolist()), tuple(rows[groups[b]].tolist()), cost))
        groups.append(sorted(groups[a] + groups[b]))
        sums.append(sums[a] + sums[b])
        cents.append(sums[-1] / len(groups[-1]))
        alive = [g for g in alive if g not in (a, b)] + [len(groups) - 1]
    for g in sorted((groups[g] for g in alive), key=lambda g: g[0]):
        sub = rows[g]
        _ref_kward(Z[g], k, order, sub, depth + 1, trace, out)


def ref_kward(Z, k, order):
    out, trace = [], []
    _ref_kward(np.asarray(Z, dtype=float), k, order, np.arange(Z.shape[0]), 0, trace, out)
    labels = np.empty(Z.shape[0], dtype=np.int64)
    for g, members in enumerate(sorted(out, key=lambda g: g[0])):
        labels[members] = g
    return labels, trace


def run_traced(func, X, k, **params):
    events: list[KwardMerge] = []
    labels = func(X, k, trace=events.append, **params)
    return labels, [(e.depth, e.a, e.b, e.cost) for e in events]


def assert_constraint(events, k):
    for depth, a, b, cost in events:
        assert len(a) < k or len(b) < k, f"merged two groups of >= k records: {a} + {b}"
        assert cost >= 0


# ----------------------------------------------------------------------------------
# Hand-worked cases (derived from the definition by hand; comments show the arithmetic).
# ----------------------------------------------------------------------------------


def test_constraint_blocks_cheapest_pair():
    # k=3, pv:0. Seeds {0,1,2} (creation 0) and {200,201,202} (1); singletons
    # 3 (2), 4 (3), 5 (4), 100 (5). Merges: 3+4 cost 1/2; 5+{3,4} cost 2/3*1.5^2 = 1.5;
    # now {0,1,2}+{3,4,5} would cost 3*3/6*3^2 = 13.5, the cheapest pair, but both have
    # >= k records; so 100 joins {3,4,5} at 3/4*96^2 = 6912 (vs 3/4*99^2 with {0,1,2}).
    X = np.array([0.0, 1, 2, 3, 4, 5, 100, 200, 201, 202])[:, None]
    labels, events = run_traced(kward, X, 3, order="pv:0")
    assert labels.tolist() == [0, 0, 0, 1, 1, 1, 1, 2, 2, 2]
    assert events == [
        (0, (3,), (4,), 0.5),
        (0, (5,), (3, 4), 1.5),
        (0, (6,), (3, 4, 5), 6912.0),
    ]
    assert kward_1d(X, 3, order="pv:0").tolist() == labels.tolist()


def test_tie_goes_to_lowest_creation_pair():
    # k=2, pv:0: seeds {0,1} (creation 0), {11,12} (1); singletons 2 (2), 10 (3).
    # {0,1}+2 and {11,12}+10 both cost 2/3*1.5^2 = 1.5: pair (0, 2) < (1, 3) goes first.
    X = np.array([0.0, 1, 2, 10, 11, 12])[:, None]
    labels, events = run_traced(kward, X, 2, order="pv:0")
    assert labels.tolist() == [0, 0, 0, 1, 1, 1]
    assert events == [(0, (0, 1), (2,), 1.5), (0, (4, 5), (3,), 1.5)]


def test_md_seeds_farthest_pair_tie():
    # (0,0)-(10,1) and (0,1)-(10,0) are both at squared distance 101: the lowest pair
    # (0, 4) wins; seeds {0,1} and {3,4}; then 2 and 5 merge (1/2*1 = 0.5).
    X = np.array([[0.0, 0], [0, 1], [5, 0], [10, 0], [10, 1], [5, 1]])
    labels, events = run_traced(kward, X, 2)
    assert labels.tolist() == [0, 0, 1, 2, 2, 1]
    assert events == [(0, (2,), (5,), 0.5)]


def test_sorted_seed_ties_follow_the_stable_sort():
    # pv:0, k=2: r0, r3, r4 tie at 5. The stable ascending order is r1 r2 r0 r3 r4,
    # so the last seed group is {r3, r4} (not {r0, r3}); r0 then joins {r1, r2}
    # (2/3*(25 + 0.5^2) against 2/3*100.5^2).
    X = np.array([[5.0, 0], [0, 0], [0, 1], [5, 100], [5, 101]])
    labels, events = run_traced(kward, X, 2, order="pv:0")
    assert labels.tolist() == [0, 0, 0, 1, 1]
    assert [e[1:3] for e in events] == [((1, 2), (0,))]


def test_recursion_splits_group_of_2k():
    # k=2: {0,1}+1.2 (2/3*0.7^2), then 2.2 joins it (3/4*(2.2-0.7333)^2) -> a group
    # of 4 = 2k, split again: seeds {0,1} and {1.2,2.2}, nothing left to merge.
    X = np.array([0.0, 1, 1.2, 2.2, 50, 51])[:, None]
    labels, events = run_traced(kward, X, 2, order="pv:0")
    assert labels.tolist() == [0, 0, 1, 1, 2, 2]
    # the singleton 2.2 (creation index 3) is older than the merged group (index 4)
    assert [(d, a, b) for d, a, b, _ in events] == [(0, (0, 1), (2,)), (0, (3,), (0, 1, 2))]
    assert events[0][3] == pytest.approx(2 / 3 * 0.7**2)
    assert events[1][3] == pytest.approx(0.75 * (2.2 - 2.2 / 3) ** 2)


def test_univariate_groups_need_not_be_contiguous():
    # B = five values around 1 and T = three values around 1.041 each reach k=3 first
    # and may not merge; then 0 prefers T (3/4*1.041^2 = 0.8128) over B (5/6*1^2), so
    # a merge jumps over a neighbour: k-Ward is not a neighbours-only method even in 1-D.
    v = [-100, -99, -98, 0, 0.998, 0.999, 1.0, 1.001, 1.002, 1.040, 1.041, 1.042, 100, 101, 102]
    X = np.array(v)[:, None]
    labels, events = run_traced(kward_1d, X, 3, order="pv:0")
    assert labels.tolist() == [0, 0, 0, 1, 2, 2, 2, 2, 2, 1, 1, 1, 3, 3, 3]
    assert events[-1][1:3] == ((3,), (9, 10, 11))
    assert events[-1][3] == pytest.approx(0.75 * 1.041**2)
    assert_constraint(events, 3)
    ref, ref_events = ref_kward(X, 3, "pv:0")
    assert ref.tolist() == labels.tolist() and ref_events == events


def test_small_blocks():
    X = np.arange(5.0)[:, None]
    assert kward(X, 3).tolist() == [0] * 5  # k <= n < 2k: one group
    assert kward_1d(X, 5).tolist() == [0] * 5
    # n == 2k: the two seed groups, nothing to merge
    assert kward(np.array([0.0, 9, 1, 8])[:, None], 2, order="sz").tolist() == [0, 1, 0, 1]
    with pytest.raises(InfeasibleError):
        kward(X, 6)
    with pytest.raises(InvalidParameterError):
        kward_1d(X, 1)


def test_all_identical_records():
    X = np.zeros((11, 3))
    for func, order in ((kward, "md"), (kward, "fpc"), (kward_1d, "sz")):
        labels = func(X, 3, order=order)
        sizes = group_sizes(labels)
        assert sizes.min() >= 3 and sizes.max() < 6


# ----------------------------------------------------------------------------------
# Parameters and registry.
# ----------------------------------------------------------------------------------


def test_specs_registered_and_validate_order():
    spec = METHODS["kward"]
    assert spec.validate_params({}) == {"order": "md"}
    assert spec.validate_params({"order": "pv:2"}) == {"order": "pv:2"}
    assert METHODS["kward-1d"].validate_params({}) == {"order": "fpc"}
    with pytest.raises(InvalidParameterError):
        METHODS["kward-1d"].validate_params({"order": "md"})
    with pytest.raises(InvalidParameterError):
        spec.validate_params({"trace": print})  # not a user parameter
    X = np.arange(12.0).reshape(6, 2)
    with pytest.raises(InvalidParameterError):
        kward(X, 2, order="pv:7")
    with pytest.raises(InvalidParameterError):
        kward(X, 2, order="nope")


def test_kward_1d_is_kward_on_the_projected_column():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 4))
    for order in ("fpc", "sz", "pv:2"):
        y = projection_axis(X, order)[:, None]
        assert kward_1d(X, 4, order=order).tolist() == kward(y, 4, order="pv:0").tolist()


# ----------------------------------------------------------------------------------
# Fast engine == literal reference; invariants (hypothesis).
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize("order", ["md", "sz", "fpc", "pv:1"])
@pytest.mark.parametrize("seed", [0, 1])
def test_matches_reference_random(order, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, 3))
    k = 3
    labels, events = run_traced(kward, X, k, order=order)
    ref, ref_events = ref_kward(X, k, order)
    assert labels.tolist() == ref.tolist()
    assert [e[:3] for e in events] == [e[:3] for e in ref_events]
    assert [e[3] for e in events] == pytest.approx([e[3] for e in ref_events])


int_blocks = st.integers(1, 3).flatmap(
    lambda p: arrays(np.int64, st.tuples(st.integers(2, 22), st.just(p)), elements=st.integers(-3, 3))
)


@settings(max_examples=60, deadline=None)
@given(X=int_blocks, k=st.integers(2, 4), order=st.sampled_from(["md", "sz", "pv:0"]))
def test_matches_reference_with_ties(X, k, order):
    # Small integers: many exact ties, and both sides compute bit-identical costs.
    X = X.astype(float)
    if X.shape[0] < k:
        with pytest.raises(InfeasibleError):
            kward(X, k, order=order)
        return
    labels, events = run_traced(kward, X, k, order=order)
    ref, ref_events = ref_kward(X, k, order)
    assert labels.tolist() == ref.tolist()
    assert events == ref_events


@settings(max_examples=40, deadline=None)
@given(
    X=arrays(np.float64, st.tuples(st.integers(4, 60), st.integers(1, 4)),
             elements=st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)),
    k=st.integers(2, 5),
    order=st.sampled_from(["md", "fpc", "sz"]),
    one_d=st.booleans(),
)
def test_invariants(X, k, order, one_d):
    if X.shape[0] < k:
        return
    func = kward_1d if one_d and order != "md" else kward
    before = X.copy()
    labels, events = run_traced(func, X, k, order=order)
    np.testing.assert_array_equal(X, before)  # not mutated
    sizes = group_sizes(labels)
    assert labels.shape == (X.shape[0],)
    assert sizes.min() >= k
    assert sizes.max() < 2 * k
    assert labels[0] == 0 and np.all(np.diff(np.maximum.accumulate(labels)) <= 1)  # canonical
    assert_constraint(events, k)
    assert func(X, k, order=order).tolist() == labels.tolist()  # deterministic


# ----------------------------------------------------------------------------------
# Census reference figures.
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [3, 5, 10])
def test_census_il_above_lower_bound(census_z, k):
    before = census_z.copy()
    events: list[KwardMerge] = []
    labels = kward(census_z, k, trace=events.append)
    np.testing.assert_array_equal(census_z, before)
    sizes = group_sizes(labels)
    assert sizes.min() >= k and sizes.max() < 2 * k
    assert_constraint([(e.depth, e.a, e.b, e.cost) for e in events], k)
    il = information_loss(census_z, labels)
    assert il >= CENSUS_LB_NN[k]
    # measured with order=md (see the notes): 5.9908, 9.0664, 14.0924
    assert il == pytest.approx({3: 5.9908, 5: 9.0664, 10: 14.0924}[k], abs=1e-4)
    il_1d = information_loss(census_z, kward_1d(census_z, k))
    assert il_1d >= CENSUS_LB_NN[k]


@pytest.mark.slow
@pytest.mark.parametrize("k", [3, 5, 10])
def test_scale_4000_by_11(k):
    import time

    rng = np.random.default_rng(0)
    X = rng.lognormal(size=(4000, 11)) @ rng.normal(size=(11, 11))
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    for func, order in ((kward, "md"), (kward, "fpc"), (kward_1d, "fpc")):
        t = time.perf_counter()
        labels = func(X, k, order=order)
        assert time.perf_counter() - t < 60
        sizes = group_sizes(labels)
        assert sizes.min() >= k and sizes.max() < 2 * k
