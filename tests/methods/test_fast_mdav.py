"""The compiled tree MDAV returns exactly the partition of the straightforward one."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from conftest import CENSUS_MDAV_IL
from method_checks import tie_heavy
from microagg_cli._jit import njit
from microagg_cli.errors import InfeasibleError, InvalidParameterError
from microagg_cli.methods import _cones, _fast_mdav as fm
from microagg_cli.methods.fixed_size import FAST_MDAV_MIN_N, mdav, mdav_reference
from microagg_cli.partition import canonical_labels, group_sizes, information_loss


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
@given(tie_heavy(70, 6, 3), st.integers(2, 10))
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


def test_one_column_and_large_k():
    rng = np.random.default_rng(21)
    for X, k in ((rng.standard_normal((2500, 1)), 3), (rng.integers(0, 9, (2500, 1)).astype(float), 4),
                 (rng.standard_normal((2200, 3)), 60), (rng.integers(-1, 2, (2100, 2)).astype(float), 250),
                 (rng.standard_normal((700, 4)), 233)):
        assert (fm.mdav_fast(X, k) == mdav_reference(X, k)).all(), (X.shape, k)
        assert (mdav(X, k) == mdav_reference(X, k)).all()


def test_float32_screening_with_exact_ties_between_different_records():
    # exact ties between records of different coordinates: in float32 (centred on the
    # off-grid centroid and scaled) their screened distances differ by an ulp, and a
    # screen without its error margin would drop the tied record that comes first
    X = np.random.default_rng(13).integers(-3, 4, (3000, 5)).astype(float)
    assert (fm.mdav_fast(X, 3) == mdav_reference(X, 3)).all()


# --------------------------------------------------------------------------- exact sums
@njit(nogil=True)
def _sums_while_removing(values, order, out):
    """The rounded exact sum of ``values``, then after removing each of ``order``."""
    parts = np.zeros((1, fm._EXPANSION_CAPACITY))
    npart = np.zeros(1, np.int64)
    zero = np.int64(0)
    for v in values:
        fm._fsum_add(parts, npart, zero, v)
    out[0] = fm._fsum_round(parts, npart, zero)
    for t in range(order.shape[0]):
        fm._fsum_add(parts, npart, zero, -values[order[t]])
        out[t + 1] = fm._fsum_round(parts, npart, zero)


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
    out = np.empty(1)
    _sums_while_removing(np.array(values, dtype=float), np.empty(0, np.int64), out)
    assert out[0] == math.fsum(values)


def test_running_sum_with_removals_matches_fsum_of_the_rest():
    rng = np.random.default_rng(5)
    for _ in range(30):
        v = rng.standard_normal(300) * 10.0 ** rng.integers(-20, 21, 300)
        order = rng.permutation(v.size)[:250]
        out = np.empty(order.size + 1)
        _sums_while_removing(v, order, out)
        keep = np.ones(v.size, bool)
        assert out[0] == math.fsum(v.tolist())
        for t, i in enumerate(order):
            keep[i] = False
            assert out[t + 1] == math.fsum(v[keep].tolist())


# --------------------------------------------------------------------------- bounds
BOUND_KINDS = ("gauss", "small-ints", "duplicated-rows", "wide-range", "all-equal")


@njit(nogil=True)
def _cone_bounds(A, F, cnt, w, rel, out):
    wn2 = 0.0
    for j in range(w.shape[0]):
        wn2 += w[j] * w[j]
    _cones.bounds(A, F, cnt, np.int64(0), np.int64(A.shape[0]), w, np.sqrt(wn2), wn2, rel, out)


def _ltr(A: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Squared distances summed left to right over the columns (as the kernels do)."""
    d = np.zeros(A.shape[0])
    for j in range(A.shape[1]):
        d += (A[:, j] - q[j]) * (A[:, j] - q[j])
    return d


def _check_structures(X, rel, rng, seen):
    """Invariants of the tree and the cone index after removals (before a rebuild):
    counts and minimum input indices of the nodes, boxes holding their remaining
    records, cone bounds above the rounded distances of theirs."""
    p = X.shape[1]

    def check(tree, index, labels):
        seen.append(1)
        Xt, _, tin, _, talive, nodes, nf = tree
        assert (talive == (labels[tin] < 0)).all()
        for nd in range(nodes.shape[0]):
            members = np.arange(nodes[nd, 0], nodes[nd, 1])
            members = members[talive[members]]
            assert members.size == nodes[nd, 6]
            if members.size:
                assert (nf[nd, :p] <= Xt[members]).all() and (Xt[members] <= nf[nd, p:]).all()
                assert nodes[nd, 5] <= tin[members].min()
        ang, rho, alive, inp, pos, Xb, Yb, ba, bf, bcnt, ga, gf, gcnt, bang, c0, geo, sigma = index
        assert (alive == (labels[inp] < 0)).all()
        bucket, group = geo
        queries = np.vstack([X[rng.integers(0, X.shape[0], 4)], rng.standard_normal((3, p)) * 3, c0])
        for q in queries:
            ubb = np.empty(ba.shape[0])
            ubg = np.empty(ga.shape[0])
            _cone_bounds(ba, bf, bcnt, q - c0, rel, ubb)
            _cone_bounds(ga, gf, gcnt, q - c0, rel, ubg)
            d = _ltr(X[inp], q)
            for b in range(ba.shape[0]):
                members = np.arange(b * bucket, min(inp.size, (b + 1) * bucket))
                members = members[alive[members]]
                assert members.size == bcnt[b]
                if members.size:
                    assert ubb[b] >= d[members].max()
                    assert ubg[b // group] >= d[members].max()
                else:
                    assert ubb[b] == -1.0

    return check


def test_boxes_and_cone_bounds_hold_as_records_leave():
    rng = np.random.default_rng(9)
    for kind in BOUND_KINDS:
        for p in (1, 4):
            X = _data(rng, kind, 900, p)
            rel = 1e-9 + 8.0 * (p + 8) * np.finfo(np.float64).eps
            seen = []
            labels, _ = fm._run(X, 3, check=_check_structures(X, rel, rng, seen))
            assert len(seen) >= 3, kind
            assert (canonical_labels(labels) == mdav_reference(X, 3)).all()
