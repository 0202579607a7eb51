"""pcp, zscores, sugeno: projected optimal microaggregation (methods/projection.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from method_checks import brute_contiguous, py_sse_rows
from microagg_cli.errors import InfeasibleError, InvalidParameterError
from microagg_cli.methods import get_method
from microagg_cli.methods._axes import projection_axis
from microagg_cli.methods.projection import (
    optimal_contiguous_sizes_multi,
    pcp,
    sugeno,
    sugeno_integral,
    zscores,
)
from microagg_cli.methods.univariate import (
    fixed_contiguous_sizes,
    labels_from_sorted_sizes,
    optimal_1d,
    ufs,
)
from microagg_cli.partition import canonical_labels, group_sizes, sse, zscore

METHODS = {"pcp": pcp, "zscores": zscores, "sugeno": sugeno}


def axis_of(name: str, X: np.ndarray, alpha: float = 1.0) -> np.ndarray:
    if name == "pcp":
        return projection_axis(X, "fpc")
    if name == "zscores":
        return projection_axis(X, "sz")
    return sugeno_integral(X, alpha)


def partition_sse_py(X: np.ndarray, labels: np.ndarray) -> float:
    groups: dict[int, list[list[float]]] = {}
    for row, g in zip(X.tolist(), labels.tolist()):
        groups.setdefault(g, []).append(row)
    return sum(py_sse_rows(g) for g in groups.values())


def close(a: float, b: float, scale: float) -> bool:
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b)) + 1e-12 * (1.0 + scale)


# ---------------------------------------------------------------------------
# Sugeno integral
# ---------------------------------------------------------------------------


def test_sugeno_hand_computed():
    # Rows of zeros and ones fix every column's min 0 and max 1: the rescaled values
    # are the values themselves. p = 3, Q(i/p) for i = 1, 2, 3:
    #   alpha = 1:   1/3, 2/3, 1
    #   alpha = 2:   1/9, 4/9, 1
    #   alpha = 0.5: 0.57735, 0.81650, 1
    # row (0.2, 0.9, 0.5): decreasing 0.9, 0.5, 0.2
    #   alpha 1:   max(min(1/3,.9), min(2/3,.5), min(1,.2)) = max(1/3, .5, .2) = 0.5
    #   alpha 2:   max(1/9, 4/9, .2) = 4/9
    #   alpha 0.5: max(.57735, .5, .2) = 1/sqrt(3)
    # row (0.6, 0.1, 0.3): decreasing 0.6, 0.3, 0.1
    #   alpha 1:   max(1/3, .3, .1) = 1/3
    #   alpha 2:   max(1/9, .3, .1) = 0.3
    #   alpha 0.5: max(.57735, .3, .1) = 1/sqrt(3)
    X = np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [0.2, 0.9, 0.5], [0.6, 0.1, 0.3]])
    assert sugeno_integral(X, 1.0) == pytest.approx([0.0, 1.0, 0.5, 1 / 3])
    assert sugeno_integral(X, 2.0) == pytest.approx([0.0, 1.0, 4 / 9, 0.3])
    assert sugeno_integral(X, 0.5) == pytest.approx([0.0, 1.0, 3**-0.5, 3**-0.5])


def test_sugeno_rescaling_and_constant_column():
    # column 0: 10 -> 0, 30 -> 1 (min-max); column 1 constant -> 0.5.
    # alpha = 2, p = 2: Q(1/2) = 0.25, Q(1) = 1.
    # row 0: (0, .5) -> decreasing .5, 0 -> max(min(.25,.5), min(1,0)) = 0.25
    # row 1: (1, .5) -> decreasing 1, .5 -> max(min(.25,1), min(1,.5)) = 0.5
    X = np.array([[10.0, 7.0], [30.0, 7.0]])
    assert sugeno_integral(X, 2.0) == pytest.approx([0.25, 0.5])


def test_sugeno_invariant_to_positive_affine_scaling(rng):
    X = rng.normal(size=(30, 4))
    Y = X * np.array([2.0, 0.5, 10.0, 3.0]) + np.array([1.0, -4.0, 100.0, 0.0])
    assert np.allclose(sugeno_integral(X, 1.7), sugeno_integral(Y, 1.7), atol=1e-12)


def test_sugeno_alpha_must_be_positive():
    with pytest.raises(InvalidParameterError):
        sugeno_integral(np.eye(3), 0.0)
    with pytest.raises(InvalidParameterError):
        get_method("sugeno").validate_params({"alpha": "0"})
    assert get_method("sugeno").validate_params({"alpha": "2.5"})["alpha"] == 2.5


# ---------------------------------------------------------------------------
# Projected optimal partition
# ---------------------------------------------------------------------------


def test_zscores_hand_worked_multivariate_vs_projection_only():
    # Sums 0 1 2 3 4 (already sorted), k = 2, n = 5: the contiguous partitions are
    # sizes (2,3) -> A = {P0,P1},{P2,P3,P4} and (3,2) -> B = {P0,P1,P2},{P3,P4}.
    # Multivariate SSE:
    #   A: {P0,P1}: |P0-P1|^2/2 = 1/2; {P2,P3,P4}: mean (2,1), 1 + 8 + 5 = 14 -> 14.5
    #   B: {P0,P1,P2}: mean (2/3,1/3), 5/9 + 8/9 + 17/9 = 10/3; {P3,P4}: 25/2 -> 15.83
    # so the method picks A. On the projected values 0..4 both cost 0.5 + 2 = 2.5;
    # the tie rule (smallest last group) picks B.
    X = np.array([[0.0, 0.0], [0.0, 1.0], [2.0, 0.0], [0.0, 3.0], [4.0, 0.0]])
    a = zscores(X, 2)
    assert a.tolist() == [0, 0, 1, 1, 1]
    assert sse(X, a) == pytest.approx(14.5)
    b = zscores(X, 2, projection_only=True)
    assert b.tolist() == [0, 0, 0, 1, 1]
    assert sse(X, b) == pytest.approx(15.5 + 1 / 3)


@pytest.mark.parametrize("name", sorted(METHODS))
def test_projected_equals_brute_force_on_projected_order(name):
    rng = np.random.default_rng({"pcp": 1, "zscores": 2, "sugeno": 3}[name])
    for n, k in ((7, 2), (9, 3), (12, 3), (11, 4)):
        X = zscore(np.round(rng.normal(size=(n, 3)), 1))[0]
        labels = METHODS[name](X, k)
        order = np.argsort(axis_of(name, X), kind="stable")
        want = brute_contiguous(X[order].tolist(), k, py_sse_rows)
        assert close(partition_sse_py(X, labels), want, float((X * X).sum()))


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(sorted(METHODS)),
    n=st.integers(2, 16), p=st.integers(1, 4), k=st.integers(2, 4),
    seed=st.integers(0, 10**6), ties=st.booleans(),
)
def test_projected_invariants(name, n, p, k, seed, ties):
    if n < k:
        n = k
    r = np.random.default_rng(seed)
    raw = r.integers(0, 3, size=(n, p)).astype(float) if ties else r.normal(size=(n, p))
    X = zscore(raw)[0]
    before = X.copy()
    labels = METHODS[name](X, k)
    assert np.array_equal(X, before)
    assert np.array_equal(labels, canonical_labels(labels))
    sizes = group_sizes(labels)
    assert sizes.min() >= k and sizes.max() <= 2 * k - 1
    # contiguous in (stable) projected order
    order = np.argsort(axis_of(name, X), kind="stable")
    along = labels[order]
    assert int(np.count_nonzero(np.diff(along))) == sizes.size - 1
    # exact optimum over contiguous runs of that order
    scale = float((X * X).sum())
    got = partition_sse_py(X, labels)
    assert close(got, brute_contiguous(X[order].tolist(), k, py_sse_rows), scale)
    # never worse than fixed-size groups (ufs) on the same order
    fixed = labels_from_sorted_sizes(order, fixed_contiguous_sizes(n, k))
    assert got <= partition_sse_py(X, fixed) + 1e-9 * got + 1e-12 * (1 + scale)
    if name != "sugeno":
        ufs_labels = ufs(X, k, order="fpc" if name == "pcp" else "sz")
        assert np.array_equal(ufs_labels, fixed)


@pytest.mark.parametrize("name", sorted(METHODS))
def test_projection_only_is_optimal_1d_on_the_axis(name, rng):
    X = zscore(rng.normal(size=(60, 3)))[0]
    got = METHODS[name](X, 4, projection_only=True)
    assert np.array_equal(got, optimal_1d(axis_of(name, X)[:, None], 4))


def test_single_column_zscores_is_optimal_1d(rng):
    x = zscore(rng.lognormal(size=(80, 1)))[0]
    assert np.array_equal(zscores(x, 3), optimal_1d(x, 3))
    assert np.array_equal(pcp(x, 3), optimal_1d(x, 3))


def test_multivariate_beats_projection_only_and_ufs_on_correlated_data(rng):
    A = rng.normal(size=(300, 4)) @ rng.normal(size=(4, 4))
    X = zscore(A)[0]
    for name, f in METHODS.items():
        full = sse(X, f(X, 5))
        assert full <= sse(X, f(X, 5, projection_only=True)) + 1e-9
    assert sse(X, pcp(X, 5)) < sse(X, ufs(X, 5, order="fpc"))
    assert sse(X, zscores(X, 5)) < sse(X, ufs(X, 5, order="sz"))


def test_kernel_direct_and_errors():
    Z = np.array([[0.0], [0.1], [5.0], [5.1]])
    assert optimal_contiguous_sizes_multi(Z, 2).tolist() == [2, 2]
    with pytest.raises(InfeasibleError):
        pcp(np.zeros((2, 2)), 3)
    with pytest.raises(InvalidParameterError):
        zscores(np.zeros((4, 2)), 1)


def test_deterministic(rng):
    X = zscore(rng.normal(size=(100, 5)))[0]
    for f in METHODS.values():
        assert np.array_equal(f(X, 3), f(X, 3, rng=np.random.default_rng(7)))


def test_specs():
    for name in METHODS:
        spec = get_method(name)
        assert spec.output == "labels" and spec.standardize
        assert spec.validate_params({})["projection_only"] is False
    assert get_method("sugeno").validate_params({}) == {"alpha": 1.0, "projection_only": False}


def test_multi_kernel_guards():
    with pytest.raises(InvalidParameterError, match="finite"):
        optimal_contiguous_sizes_multi(np.array([[np.inf], [1.0], [2.0]]), 2)
    with pytest.raises(InvalidParameterError, match="at least"):
        optimal_contiguous_sizes_multi(np.zeros((2, 3)), 3)
