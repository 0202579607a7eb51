"""DLD's k-d tree (:class:`BoxTree`, built by ``_kd_kernels.kd_build_columns``).

The search trusts the tree blindly: a box that misses one of its points, a child range
outside its parent's or a point in two leaves would lose or double a link without any
error. So every invariant the search relies on is checked here on random point sets
(ties included), plus hand-worked trees.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from microagg_cli.metrics.risk.distance_linkage import BoxTree


def _nodes(tree: np.ndarray) -> int:
    """Number of nodes (breadth first: every split adds two)."""
    n, i = 1, 0
    while i < n:
        if tree[0, i] >= 0:
            n += 2
        i += 1
    return n


def _check(t: BoxTree, P: np.ndarray, mult: np.ndarray, leaf: int) -> None:
    m, s = P.shape
    left, right, start, end = t.tree
    nn = _nodes(t.tree)
    assert t.perm.dtype == np.int64 and t.tree.dtype == np.int64
    assert np.array_equal(np.sort(t.perm), np.arange(m))
    assert t.PT.flags.c_contiguous and t.PT.shape == (s, m)
    assert np.array_equal(t.PT, P[t.perm].T)
    assert t.mult.dtype == np.float64 and np.array_equal(t.mult, mult[t.perm])
    assert t.box.shape[0] == 2 and t.box.shape[2] == s and t.box.shape[1] >= nn
    assert (start[0], end[0]) == (0, m)
    leaves = []
    for i in range(nn):
        s0, s1 = start[i], end[i]
        pts = P[t.perm[s0:s1]]
        if s1 > s0:  # the tight box: exactly the low and high of the node's points
            assert np.array_equal(t.box[0, i], pts.min(axis=0))
            assert np.array_equal(t.box[1, i], pts.max(axis=0))
        if left[i] < 0:
            assert right[i] < 0 and s1 - s0 <= leaf
            leaves.append((s0, s1))
            # stable partitions: a leaf lists its rows in increasing order
            assert np.all(np.diff(t.perm[s0:s1]) > 0)
            continue
        a, b = left[i], right[i]
        assert i < a and b == a + 1 and b < nn
        assert s1 - s0 > leaf
        # the children split the parent's range at its middle
        assert (start[a], end[a], start[b], end[b]) == (s0, s0 + (s1 - s0) // 2, s0 + (s1 - s0) // 2, s1)
        # on the parent's widest coordinate (the first of largest spread), none of the
        # left child's points is above any of the right child's
        spread = t.box[1, i] - t.box[0, i]
        d = int(np.argmax(spread))
        assert P[t.perm[start[a]:end[a]], d].max() <= P[t.perm[start[b]:end[b]], d].min()
    # the leaves tile 0..m
    leaves.sort()
    assert sum(e - b for b, e in leaves) == m
    assert all(leaves[j][1] == leaves[j + 1][0] for j in range(len(leaves) - 1))


@settings(max_examples=60, deadline=None)
@given(
    m=st.integers(1, 400),
    s=st.integers(1, 6),
    leaf=st.sampled_from([1, 2, 3, 8, 48]),
    levels=st.sampled_from([0, 2, 5]),
    seed=st.integers(0, 2**31 - 1),
)
def test_tree_invariants(m: int, s: int, leaf: int, levels: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    # levels > 0: few distinct values per coordinate (many ties on the split values)
    P = rng.integers(0, levels, size=(m, s)).astype(float) if levels else rng.normal(size=(m, s)) ** 3
    mult = rng.integers(1, 5, size=m).astype(float)
    t = BoxTree(P, mult, leaf=leaf)
    _check(t, P, mult, leaf)
    # from_columns: the same tree, the columns gathered in the build
    U = np.hstack([rng.normal(size=(m, 2)), P])
    cols = np.arange(2, 2 + s)[::-1].copy()
    u = BoxTree.from_columns(U, cols, mult, leaf=leaf)
    _check(u, U[:, cols], mult, leaf)
    t2 = BoxTree(U[:, cols], mult, leaf=leaf)
    nn = _nodes(t2.tree)
    assert np.array_equal(u.perm, t2.perm) and np.array_equal(u.tree[:, :nn], t2.tree[:, :nn])
    assert np.array_equal(u.box[:, :nn], t2.box[:, :nn])


def test_large_node_median_by_histogram() -> None:
    """Nodes far above the plain selection's size: the histogram of the median,
    heavy tails (most values in a few buckets) and many ties."""
    rng = np.random.default_rng(7)
    m = 5000
    P = np.column_stack([rng.standard_cauchy(m), np.round(rng.normal(size=m), 1), rng.normal(size=m)])
    P[:40, 2] = 1e12  # one huge outlier cluster: the others share a bucket
    mult = np.ones(m)
    for leaf in (8, 48):
        _check(BoxTree(P, mult, leaf=leaf), P, mult, leaf)


def test_hand_worked_one_coordinate() -> None:
    # values 5 1 4 2 3 (rows 0..4), one point per leaf: node 0 keeps rows 1, 3 (values
    # 1, 2) on the left, rows 0, 2, 4 (5, 4, 3) on the right, in row order; node 1
    # splits {1, 3} into {1}, {3}; node 2 puts row 4 (3) left of rows 0, 2; node 6
    # splits rows 0, 2 into row 2 (4) and row 0 (5)
    P = np.array([[5.0], [1.0], [4.0], [2.0], [3.0]])
    t = BoxTree(P, np.array([1.0, 2, 3, 4, 5]), leaf=1)
    assert t.perm.tolist() == [1, 3, 4, 2, 0]
    assert _nodes(t.tree) == 9
    assert t.tree[:, :9].tolist() == [
        [1, 3, 5, -1, -1, -1, 7, -1, -1],
        [2, 4, 6, -1, -1, -1, 8, -1, -1],
        [0, 0, 2, 0, 1, 2, 3, 3, 4],
        [5, 2, 5, 1, 2, 3, 5, 4, 5],
    ]
    assert t.box[0, :9, 0].tolist() == [1, 1, 3, 1, 2, 3, 4, 4, 5]
    assert t.box[1, :9, 0].tolist() == [5, 2, 5, 1, 2, 3, 5, 4, 5]
    assert t.mult.tolist() == [2, 4, 5, 3, 1]
    assert t.PT.tolist() == [[1, 2, 3, 4, 5]]


def test_hand_worked_ties_and_widest_coordinate() -> None:
    # the left child keeps the n // 2 smallest by (value, row) on the widest coordinate
    P = np.array([[0.0, 1.0], [1.0, 1.0], [0.0, 1.0], [1.0, 0.0], [0.5, 3.0]])
    t = BoxTree(P[:4], np.ones(4), leaf=2)
    # coordinate 0 and 1 both spread 1: the first, coordinate 0 (values 0 1 0 1):
    # left rows 0, 2, right rows 1, 3
    assert t.perm.tolist() == [0, 2, 1, 3]
    t = BoxTree(P[[0, 1, 2, 4]], np.ones(4), leaf=2)
    # coordinate 1 (1 1 1 3) spreads 2 against 1: the two smallest are the first two
    # of the tied 1s, rows 0 and 1; right rows 2, 3
    assert t.perm.tolist() == [0, 1, 2, 3]
    assert t.box[:, 1].tolist() == [[0.0, 1.0], [1.0, 1.0]]
    assert t.box[:, 2].tolist() == [[0.0, 1.0], [0.5, 3.0]]


@pytest.mark.parametrize("m", [0, 1])
def test_tiny(m: int) -> None:
    P = np.ones((m, 3))
    t = BoxTree(P, np.ones(m))
    assert t.perm.tolist() == list(range(m))
    assert t.tree[:, 0].tolist() == [-1, -1, 0, m]
    assert t.PT.shape == (3, m)
    if m:
        assert t.box[:, 0].tolist() == [[1.0] * 3, [1.0] * 3]
