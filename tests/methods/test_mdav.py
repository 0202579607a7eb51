"""MDAV (MDAV-generic): reference figures, hand-worked cases, invariants."""

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from conftest import CENSUS_MDAV_IL
from method_checks import tie_heavy
from microagg_cli.errors import InfeasibleError, InvalidParameterError
from microagg_cli.methods.fixed_size import mdav
from microagg_cli.partition import group_sizes, information_loss


@pytest.mark.parametrize("k", sorted(CENSUS_MDAV_IL))
def test_census_reference_figures(census_z, k):
    labels = mdav(census_z, k)
    assert round(information_loss(census_z, labels), 4) == CENSUS_MDAV_IL[k]


def test_hand_worked_two_clusters():
    X = np.array([[0.0], [1.0], [2.0], [10.0], [11.0], [12.0]])
    assert mdav(X, 3).tolist() == [0, 0, 0, 1, 1, 1]


def test_hand_worked_three_k_loop_and_last_group():
    # n = 7, k = 2: loop runs while |R| >= 6.
    # centroid 3.857...; farthest r = 10 (row 6); s = farthest from r = 0 (row 0).
    # G_r = {10, 9}; G_s = {0, 1}; R = {2, 3, 4} (3 < 2k=4) -> last group.
    X = np.array([[0.0], [1.0], [2.0], [3.0], [4.0], [9.0], [10.0]])
    labels = mdav(X, 2)
    assert labels.tolist() == [0, 0, 1, 1, 1, 2, 2]


def test_ties_go_to_the_first_record():
    # Four identical points and two far ones; k = 2. All distances to r tie at 0:
    # the earliest rows win.
    X = np.array([[0.0], [0.0], [0.0], [0.0], [5.0], [5.0]])
    labels = mdav(X, 2)
    # centroid 5/3: r = row 4 (first of the 5s), its nearest row 5; s = farthest from
    # r = row 0 (first of four tied 0s), its nearest row 1 (first of three tied);
    # rows 2, 3 are the last group. Canonical labels by first appearance.
    assert labels.tolist() == [0, 0, 1, 1, 2, 2]


def test_two_k_rule_last_groups():
    # n = 2k + 1 = 5, k = 2: the |R| >= 2k step makes one group of 2, then 3 remain.
    X = np.array([[0.0], [1.0], [2.0], [3.0], [100.0]])
    labels = mdav(X, 2)
    assert labels[4] == labels[3]
    assert sorted(group_sizes(labels).tolist()) == [2, 3]


def test_errors():
    X = np.zeros((3, 2))
    with pytest.raises(InvalidParameterError):
        mdav(X, 1)
    with pytest.raises(InfeasibleError):
        mdav(X, 4)


@settings(max_examples=60, deadline=None)
@given(tie_heavy(60, 4, 5), st.integers(2, 6))
def test_invariants(X, k):
    assume(X.shape[0] >= k)
    before = X.copy()
    labels = mdav(X, k)
    assert (X == before).all()
    sizes = group_sizes(labels)
    assert sizes.min() >= k
    # all groups have exactly k records except at most one of k..2k-1
    assert (sizes != k).sum() <= 1 and sizes.max() <= 2 * k - 1
    assert (mdav(X, k) == labels).all()
