import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from microagg_cli.errors import PrivacyCheckError
from microagg_cli.partition import (
    aggregate, canonical_labels, check_min_group_size, information_loss, size_histogram, sse, sst, zscore,
)


def test_canonical_labels_first_appearance():
    assert canonical_labels(np.array([5, 5, 1, 9, 1, 9, 5])).tolist() == [0, 0, 1, 2, 1, 2, 0]


def test_size_histogram():
    assert size_histogram(np.array([0, 0, 0, 1, 1, 1, 2, 2, 2, 2])) == {3: 2, 4: 1}


def test_check_min_group_size_refuses_small_groups():
    check_min_group_size(np.array([0, 0, 1, 1]), 2)
    with pytest.raises(PrivacyCheckError, match="fewer than k=3"):
        check_min_group_size(np.array([0, 0, 0, 1, 1]), 3)


def test_zscore_population_sd_and_constant_column():
    X = np.array([[1.0, 5.0], [3.0, 5.0]])
    Z, mean, scale, constant = zscore(X)
    assert Z[:, 0].tolist() == [-1.0, 1.0]
    assert Z[:, 1].tolist() == [0.0, 0.0]
    assert constant.tolist() == [False, True]
    assert scale.tolist() == [1.0, 1.0]


def test_sse_hand_worked():
    Z = np.array([[0.0], [2.0], [10.0], [12.0]])
    labels = np.array([0, 0, 1, 1])
    # groups {0,2} and {10,12}: each contributes 1 + 1
    assert sse(Z, labels) == 4.0
    # SST: mean 6 -> 36+16+16+36
    assert sst(Z) == 104.0
    assert information_loss(Z, labels) == pytest.approx(400 / 104)


def test_aggregate_mean_median_weighted_trimmed():
    X = np.array([[1.0], [2.0], [9.0], [10.0], [20.0], [30.0]])
    labels = np.array([0, 0, 0, 1, 1, 1])
    assert aggregate(X, labels)[:, 0].tolist() == [4.0] * 3 + [20.0] * 3
    assert aggregate(X, labels, stat="median")[:, 0].tolist() == [2.0] * 3 + [20.0] * 3
    w = np.array([1.0, 1.0, 2.0, 1.0, 1.0, 2.0])
    assert aggregate(X, labels, weights=w)[0, 0] == pytest.approx((1 + 2 + 18) / 4)
    # trimmed 1/3 cuts one value from each end of three
    assert aggregate(X, labels, stat="trimmed:0.34")[:, 0].tolist() == [2.0] * 3 + [20.0] * 3


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=40))
def test_canonical_labels_is_a_relabelling(raw):
    raw = np.array(raw)
    lab = canonical_labels(raw)
    # same partition: equal raw labels <=> equal canonical labels
    assert ((raw[:, None] == raw[None, :]) == (lab[:, None] == lab[None, :])).all()
    # first appearances are 0, 1, 2, ...
    _, first = np.unique(lab, return_index=True)
    assert lab[np.sort(first)].tolist() == list(range(lab.max() + 1))


# ------------------------------------------------------------------ classes of identical rows
@settings(max_examples=150, deadline=None)
@given(st.integers(1, 40), st.integers(1, 4), st.integers(0, 2**32 - 1), st.booleans())
def test_row_classes_by_hash_equal_the_exact_definition(n, p, seed, with_nan):
    from microagg_cli.protection import block

    r = np.random.default_rng(seed)
    X = r.choice(np.array([0.0, -0.0, 1.5, -2.25, 1e300]), size=(n, p))
    if with_nan:
        X[r.random((n, p)) < 0.2] = np.nan
    sizes, count = block.row_classes(X)
    want_sizes, want_count = block._row_classes_exact(X)
    assert count == want_count and np.array_equal(sizes, want_sizes)


def test_row_classes_fall_back_when_hashes_collide(monkeypatch):
    from microagg_cli.protection import block

    X = np.array([[1.0, 2.0], [1.0, 2.0], [3.0, np.nan], [3.0, np.nan], [-0.0, 5.0], [0.0, 5.0], [9.0, 9.0]])
    monkeypatch.setattr(block, "_row_hash", lambda bits: np.zeros(bits.shape[0], dtype=np.uint64))
    sizes, count = block.row_classes(X)
    assert count == 4 and sizes.tolist() == [2, 2, 2, 2, 2, 2, 1]
