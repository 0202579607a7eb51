"""The compiled tree MDAV returns exactly the partition of the straightforward one."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from conftest import CENSUS_MDAV_IL
from microagg_cli.errors import InfeasibleError, InvalidParameterError
from microagg_cli.methods import _cones, _fast_mdav as fm
from microagg_cli.methods.fixed_size import FAST_MDAV_MIN_N, mdav, mdav_reference
from microagg_cli.partition import group_sizes, information_loss


def _data(rng: np.random.Generator, kind: str, n: int, p: int) -> np.ndarray:
    if kind == "gauss":
        return rng.standard_normal((n, p))
    if kind == "small-ints":  # many exact ties between distances
        return rng.integers(-2, 3, (n, p)).astype(float)
    if kind == "binary":
        return rng.integers(0, 2, (n, p)) * 0.1
    if kind == "duplicated-rows":
        base = rng.standard_normal((max(1, n // 4), p))
        return base[rng.integers(0, base.shape[0], n)]
    if kind == "all-equal":
        return np.full((n, p), 0.3)
    if kind == "constant-column":
        X = rng.standard_normal((n, p))
        X[:, 0] = -1.25
        return X
    if kind == "wide-range":  # exact sums that a naive float sum gets wrong
        return rng.standard_normal((n, p)) * 10.0 ** rng.integers(-12, 13, (n, p))
    raise AssertionError(kind)


KINDS = ["gauss", "small-ints", "binary", "duplicated-rows", "all-equal", "constant-column",
         "wide-range"]


@pytest.mark.parametrize("k", sorted(CENSUS_MDAV_IL))
def test_census_reference_figures(census_z, k):
    fast = fm.mdav_fast(census_z, k)
    assert (fast == mdav_reference(census_z, k)).all()
    assert (fast == mdav(census_z, k)).all()
    assert round(information_loss(census_z, fast), 4) == CENSUS_MDAV_IL[k]


def test_seeded_random_data_sets():
    rng = np.random.default_rng(20240611)
    for case in range(140):
        kind = KINDS[case % len(KINDS)]
        k = int(rng.integers(2, 11))
        p = int(rng.integers(1, 7))
        n = int(rng.integers(k, 400))
        X = _data(rng, kind, n, p)
        fast = fm.mdav_fast(X, k)
        ref = mdav_reference(X, k)
        assert (fast == ref).all(), (case, kind, n, p, k)


@pytest.mark.parametrize("kind", ["gauss", "small-ints", "duplicated-rows", "binary"])
def test_a_few_thousand_records(kind):
    rng = np.random.default_rng(7)
    X = _data(rng, kind, 2500, 4)
    for k in (2, 5):
        assert (fm.mdav_fast(X, k) == mdav_reference(X, k)).all()


def test_mdav_dispatches_to_the_fast_version_from_the_threshold_on():
    X = np.random.default_rng(3).integers(0, 4, (FAST_MDAV_MIN_N, 3)).astype(float)
    assert (mdav(X, 3) == mdav_reference(X, 3)).all()


@settings(max_examples=60, deadline=None)
@given(
    arrays(np.float64, st.tuples(st.integers(2, 70), st.integers(1, 6)),
           elements=st.integers(-3, 3).map(float)),
    st.integers(2, 10),
)
def test_tie_heavy_property(X, k):
    assume(X.shape[0] >= k)
    assert (fm.mdav_fast(X, k) == mdav_reference(X, k)).all()


@settings(max_examples=40, deadline=None)
@given(
    arrays(np.float64, st.tuples(st.integers(2, 70), st.integers(1, 6)),
           elements=st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)),
    st.integers(2, 10),
)
def test_float_property(X, k):
    assume(X.shape[0] >= k)
    assert (fm.mdav_fast(X, k) == mdav_reference(X, k)).all()


def test_s_absorbed_into_r_group():
    # r = row 0 (farthest from the centroid 8/9); every other row is at distance 1
    # from r, so s = row 1, which r's group {0, 1, 2} takes; the next remaining row
    # in input order (3) is the second centre; rows 6..8 are the last group.
    X = np.array([[0.0]] + [[1.0]] * 8)
    expected = [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert mdav_reference(X, 3).tolist() == expected
    assert fm.mdav_fast(X, 3).tolist() == expected


def test_ties_go_to_the_first_record():
    X = np.array([[0.0], [0.0], [0.0], [0.0], [5.0], [5.0]])
    assert fm.mdav_fast(X, 2).tolist() == [0, 0, 1, 1, 2, 2]


def test_all_equal_rows_at_scale_groups_in_input_order():
    # every distance ties: groups are runs of k in input order, the last one 2k-1..k
    n, k = 20_001, 4
    labels = fm.mdav_fast(np.full((n, 3), 1.5), k)
    expected = np.minimum(np.arange(n) // k, n // k - 1)
    assert (labels == expected).all()


def test_sizes_input_untouched_and_layout_independent():
    rng = np.random.default_rng(11)
    X = rng.standard_normal((900, 5))
    before = X.copy()
    labels = fm.mdav_fast(X, 3)
    assert (X == before).all()
    sizes = group_sizes(labels)
    assert sizes.min() >= 3 and (sizes != 3).sum() <= 1 and sizes.max() <= 5
    assert (fm.mdav_fast(np.asfortranarray(X), 3) == labels).all()
    wide = np.zeros((900, 10))
    wide[:, ::2] = X
    assert (fm.mdav_fast(wide[:, ::2], 3) == labels).all()


def test_n_equal_k_and_errors():
    X = np.random.default_rng(0).standard_normal((4, 2))
    assert fm.mdav_fast(X, 4).tolist() == [0, 0, 0, 0]
    with pytest.raises(InvalidParameterError):
        fm.mdav_fast(X, 1)
    with pytest.raises(InfeasibleError):
        fm.mdav_fast(X, 5)


def test_huge_values_go_to_the_reference():
    # |x| >= 2**1000: an exact running sum could overflow; distances overflow anyway
    from microagg_cli.methods.fixed_size import FAST_MDAV_MIN_N, mdav

    X = np.random.default_rng(1).standard_normal((max(30, FAST_MDAV_MIN_N), 2)) * 1e305
    assert not fm.in_range(X) and fm.in_range(X / 1e305)
    with pytest.raises(InvalidParameterError, match="below 2\\*\\*1000"):
        fm.mdav_fast(X, 3)
    with np.errstate(over="ignore", invalid="ignore"):
        assert (mdav(X, 3) == mdav_reference(X, 3)).all()


# --------------------------------------------------------------------------- exact sums
def _expansion(values):
    parts = np.zeros((1, fm._EXPANSION_CAPACITY))
    npart = np.zeros(1, np.int64)
    for v in values:
        fm._fsum_add(parts, npart, 0, float(v))
    return parts, npart


@pytest.mark.parametrize(
    "values",
    [
        [1e-16, 1.0, 1e16],  # half-even across partials: rounds up
        [1e100, 1.0, -1e100, 1e-100],
        [0.1] * 10,
        [2.0**-1074, 2.0**1000, -(2.0**1000)],
        [1.0, 2.0**-53, 2.0**-106],
        [-0.0, 0.0],
        [],
    ],
)
def test_exact_sum_matches_fsum(values):
    parts, npart = _expansion(values)
    assert fm._fsum_round(parts, npart, 0) == math.fsum(values)


def test_running_sum_with_removals_matches_fsum_of_the_rest():
    rng = np.random.default_rng(5)
    for _ in range(30):
        v = rng.standard_normal(300) * 10.0 ** rng.integers(-20, 21, 300)
        parts, npart = _expansion(v)
        keep = np.ones(v.size, bool)
        for i in rng.permutation(v.size)[:250]:
            fm._fsum_add(parts, npart, 0, -v[i])
            keep[i] = False
            assert fm._fsum_round(parts, npart, 0) == math.fsum(v[keep].tolist())


# --------------------------------------------------------------------------- bounds
BOUND_KINDS = ("gauss", "small-ints", "duplicated-rows", "wide-range", "all-equal")


def _rel(p: int) -> float:
    return 1e-9 + 8.0 * (p + 8) * np.finfo(np.float64).eps


def test_tree_boxes_bound_the_rounded_distances_from_below():
    rng = np.random.default_rng(9)
    for kind in BOUND_KINDS:
        X = _data(rng, kind, 600, 4)
        c = X.mean(axis=0)
        tree = fm._build(X, np.arange(600), c, 8)
        Xt, _, pi, alive, _, nodes, nf, _, _ = tree
        pos_of = np.empty(600, np.int64)
        pos_of[pi[0]] = np.arange(600)
        for i in rng.permutation(600)[:400]:  # boxes are refitted as records leave
            fm._remove(tree, i, pos_of)
        queries = np.vstack([X[rng.integers(0, 600, 5)], rng.standard_normal((5, 4)) * 3, c])
        for q in queries:
            d = np.array([fm._dist(Xt, t, q) for t in range(600)])
            for nd in range(nodes.shape[0]):
                members = np.arange(nodes[nd, 0], nodes[nd, 1])
                members = members[alive[members]]
                assert members.size == nodes[nd, 6]
                if members.size == 0:
                    continue
                assert fm._box_lower(nf, nd, 4, q) <= d[members].min()
                assert nodes[nd, 5] <= pi[0, members].min()


def test_cone_bounds_hold_for_the_rounded_distances():
    rng = np.random.default_rng(11)
    rel = _rel(4)
    for kind in BOUND_KINDS:
        X = _data(rng, kind, 700, 4)
        c0 = X[:350].mean(axis=0)  # an off-centre reference point
        index = _cones.build(X, np.arange(700), c0, rel, 8, 4)
        cx, ba, bf, bcnt, ga, gf, gcnt, _ = index
        for i in rng.permutation(700)[:450]:  # cones are refitted as records leave
            _cones.remove(index, i, rel)
        alive, inp = cx[2], cx[4]
        queries = np.vstack([X[rng.integers(0, 700, 5)], rng.standard_normal((5, 4)) * 3, c0])
        for q in queries:
            w = q - c0
            sn2 = float(w @ w)
            ubb = np.empty(ba.shape[0])
            ubg = np.empty(ga.shape[0])
            _cones._bounds(ba, bf, bcnt, 0, ba.shape[0], w, math.sqrt(sn2), sn2, rel, ubb)
            _cones._bounds(ga, gf, gcnt, 0, ga.shape[0], w, math.sqrt(sn2), sn2, rel, ubg)
            d = np.array([fm._dist(X, int(i), q) for i in inp])
            for b in range(ba.shape[0]):
                members = np.arange(b * 8, min(700, (b + 1) * 8))
                members = members[alive[members]]
                assert members.size == bcnt[b]
                if members.size:
                    assert ubb[b] >= d[members].max()
                    assert ubg[b // 4] >= d[members].max()
                else:
                    assert ubb[b] == -1.0
            # and the query answers exactly as a scan does: farthest, first on ties
            gub = np.empty(ga.shape[0])
            heap = np.empty(ga.shape[0], np.int64)
            got = _cones.farthest(index, q, rel, gub, heap, np.empty(4), np.empty(8),
                                  np.zeros(2, np.int64))
            live = inp[alive]
            dl = d[alive]
            assert got == live[dl == dl.max()].min()


def test_recentred_scan_finds_the_farthest_from_the_centroid():
    rng = np.random.default_rng(12)
    rel = _rel(3)
    for kind in BOUND_KINDS:
        X = _data(rng, kind, 400, 3)
        tree = fm._build(X, np.arange(400), X.mean(axis=0), 8)
        pos_of = np.empty(400, np.int64)
        pos_of[tree[2][0]] = np.arange(400)
        keep = np.ones(400, bool)
        for step, i in enumerate(rng.permutation(400)[:300]):
            fm._remove(tree, i, pos_of)
            keep[i] = False
            c = X[keep].mean(axis=0) + (0.5 if step % 2 else 0.0)
            if step % 50 == 0:
                fm._recentre(tree, c)
            got = fm._farthest_from_centroid(tree, c, rel, np.zeros(8, np.int64))
            exact = np.array([fm._dist(X, j, c) if keep[j] else -1.0 for j in range(400)])
            assert got == np.flatnonzero(exact == exact.max()).min()


def test_float32_screening_never_hides_a_farther_record():
    # exact ties between records with different coordinates: in float32 (centred on an
    # off-grid point and scaled) their screened distances differ by an ulp, and a
    # screen without its error margin would drop the tied record that comes first
    rng = np.random.default_rng(13)
    p = 5
    X = rng.integers(-3, 4, (3000, p)).astype(float)
    rel = _rel(p)
    index = _cones.build(X, np.arange(3000), X.mean(axis=0) + 0.123, rel, 8, 4)
    assert index[0][9][0] > 0.0  # screening is on
    gub = np.empty(index[4].shape[0])
    heap = np.empty(index[4].shape[0], np.int64)
    for q in X[rng.integers(0, 3000, 40)]:
        got = _cones.farthest(index, q, rel, gub, heap, np.empty(4), np.empty(8), np.zeros(2, np.int64))
        d = np.array([fm._dist(X, i, q) for i in range(3000)])
        assert got == np.flatnonzero(d == d.max()).min()
