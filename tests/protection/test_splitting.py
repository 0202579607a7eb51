"""Locality-preserving partitions for the partitioned mode."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from microagg_cli.errors import InvalidParameterError
from microagg_cli.splitting import principal_axis, split_indices


def _check_cover(parts, n):
    allidx = np.concatenate(parts) if parts else np.empty(0, np.int64)
    assert np.array_equal(np.sort(allidx), np.arange(n))  # disjoint and covering
    for part in parts:
        assert part.dtype == np.int64
        assert np.all(np.diff(part) > 0)  # sorted increasingly


def test_hand_worked_one_dimension():
    # 6 records, max 3: one split at the median of the values 0 1 2 | 5 6 7
    Z = np.array([[0.0], [5.0], [1.0], [6.0], [2.0], [7.0]])
    assert [p.tolist() for p in split_indices(Z, 3, 2)] == [[0, 2, 4], [1, 3, 5]]


def test_hand_worked_two_levels_along_the_principal_axis():
    # points on the diagonal y = x: the principal axis is (1, 1)/sqrt(2); 8 records,
    # max 3 -> two levels of median splits (8 -> 4 + 4 -> 2 + 2 + 2 + 2), parts in
    # order along the axis
    t = np.array([3.0, 0.0, 7.0, 1.0, 6.0, 2.0, 5.0, 4.0])
    Z = np.column_stack([t, t])
    parts = [p.tolist() for p in split_indices(Z, 3, 2)]
    assert parts == [[1, 3], [0, 5], [6, 7], [2, 4]]


def test_ties_go_by_input_order():
    # all records equal: every projection ties, halves are runs in input order
    parts = split_indices(np.ones((10, 3)), 5, 2)
    assert [p.tolist() for p in parts] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    parts = split_indices(np.ones((11, 2)), 5, 2)  # 11 -> 5 + 6 -> 5 + 3 + 3
    assert [p.tolist() for p in parts] == [[0, 1, 2, 3, 4], [5, 6, 7], [8, 9, 10]]


def test_small_block_is_one_part():
    Z = np.random.default_rng(0).standard_normal((40, 3))
    parts = split_indices(Z, 40, 3)
    assert len(parts) == 1 and parts[0].tolist() == list(range(40))
    assert [p.tolist() for p in split_indices(Z[:2], 5, 3)] == [[0, 1]]


def test_sizes_cover_and_determinism():
    rng = np.random.default_rng(1)
    Z = rng.standard_normal((5000, 6)) @ rng.standard_normal((6, 6))
    parts = split_indices(Z, 700, 5)
    _check_cover(parts, 5000)
    sizes = np.array([p.size for p in parts])
    assert sizes.max() <= 700 and sizes.min() >= 350  # halves of parts > 700
    again = split_indices(Z.copy(), 700, 5)
    assert all(np.array_equal(a, b) for a, b in zip(parts, again, strict=True))


def test_clusters_are_not_cut():
    # two far clusters of 300: the first split separates them exactly
    rng = np.random.default_rng(2)
    A = rng.standard_normal((300, 4))
    B = rng.standard_normal((300, 4)) + 50.0
    order = rng.permutation(600)
    Z = np.vstack([A, B])[order]
    in_b = order >= 300
    parts = split_indices(Z, 400, 3)
    assert len(parts) == 2
    assert all(in_b[p].all() or (~in_b[p]).all() for p in parts)


def test_input_not_mutated():
    Z = np.random.default_rng(3).standard_normal((500, 3))
    before = Z.copy()
    split_indices(Z, 100, 3)
    assert (Z == before).all()


def test_errors():
    Z = np.zeros((10, 2))
    with pytest.raises(InvalidParameterError):
        split_indices(Z, 4, 3)  # below 2k - 1 = 5
    with pytest.raises(InvalidParameterError):
        split_indices(Z, 10, 1)
    with pytest.raises(InvalidParameterError):
        split_indices(Z, 7.5, 3)
    with pytest.raises(InvalidParameterError):
        split_indices(np.zeros(10), 10, 3)


def test_principal_axis_sign_and_degenerate_block():
    v = principal_axis(np.array([[0.0, 0.0], [-1.0, -2.0], [1.0, 2.0]]))
    assert np.allclose(v, np.array([1.0, 2.0]) / np.sqrt(5.0))
    assert principal_axis(np.ones((4, 3))).tolist() == [1.0, 0.0, 0.0]


@settings(max_examples=50, deadline=None)
@given(
    arrays(np.float64, st.tuples(st.integers(1, 400), st.integers(1, 5)),
           elements=st.integers(-4, 4).map(float)),
    st.integers(2, 6),
    st.integers(0, 40),
)
def test_invariants(Z, k, extra):
    max_size = 2 * k - 1 + extra
    parts = split_indices(Z, max_size, k)
    _check_cover(parts, Z.shape[0])
    if Z.shape[0] <= max_size:
        assert len(parts) == 1
    else:
        assert all(k <= p.size <= max_size for p in parts)
    assert all(np.array_equal(a, b) for a, b in zip(parts, split_indices(Z, max_size, k),
                                                    strict=True))
