"""Intruder scenarios: subsets, stratified sample, explicit lists, labels, summaries."""

from __future__ import annotations

from collections import Counter
from math import comb

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from microagg_cli.errors import InvalidParameterError
from microagg_cli.metrics.scenarios import (
    _quotas,
    all_subsets,
    blocks_touched,
    default_scenarios,
    sample_subsets,
    scenario_label,
    summarize,
    validate_blocks,
    validate_subsets,
)


def test_all_subsets_order_and_count():
    assert all_subsets(3) == [(0,), (1,), (2,), (0, 1), (0, 2), (1, 2), (0, 1, 2)]
    subs = all_subsets(10)
    assert len(subs) == 1023 == len(set(subs))
    assert [len(s) for s in subs] == sorted(len(s) for s in subs)


def test_default_is_every_subset_up_to_ten_attributes():
    subs, mode = default_scenarios(10)
    assert mode == "all" and len(subs) == 2**10 - 1
    subs, mode = default_scenarios(1)
    assert mode == "all" and subs == [(0,)]


def test_quotas_hand_worked_p11():
    # 46 each; sizes 1, 10, 11 capped (11, 11, 1); then 15 more each, sizes 2 and 9
    # capped at 55; then 2 more each; the last one to size 5 (C(11,5) = C(11,6), smaller first)
    assert _quotas(11, 512) == [11, 55, 63, 63, 64, 63, 63, 63, 55, 11, 1]
    assert _quotas(3, 512) == [3, 3, 1]  # fewer subsets than asked: all of them


def test_sample_stratified_by_size():
    rng = np.random.default_rng(5)
    subs, mode = default_scenarios(11, rng=rng)
    assert mode == "sample" and len(subs) == 512 == len(set(subs))
    sizes = Counter(len(s) for s in subs)
    assert [sizes[s] for s in range(1, 12)] == _quotas(11, 512)
    assert all(list(s) == sorted(set(s)) and 0 <= s[0] and s[-1] < 11 for s in subs)
    assert [len(s) for s in subs] == sorted(len(s) for s in subs)


def test_sample_deterministic_per_seed():
    a = sample_subsets(25, 512, np.random.default_rng(1))
    b = sample_subsets(25, 512, np.random.default_rng(1))
    c = sample_subsets(25, 512, np.random.default_rng(2))
    assert a == b and a != c
    assert len(a) == 512 == len(set(a))


@settings(max_examples=25, deadline=None)
@given(p=st.integers(1, 40), count=st.integers(1, 600), seed=st.integers(0, 10**6))
def test_sample_properties(p, count, seed):
    subs = sample_subsets(p, count, np.random.default_rng(seed))
    assert len(subs) == min(count, 2**p - 1) == len(set(subs))
    sizes = Counter(len(s) for s in subs)
    for size, n in sizes.items():
        assert n <= comb(p, size)
    if sizes:  # equal allocation: quotas differ by at most one unless capped
        open_sizes = [sizes[s] for s in range(1, p + 1) if sizes[s] < comb(p, s)]
        assert not open_sizes or max(open_sizes) - min(open_sizes) <= 1


def test_validate_subsets():
    assert validate_subsets([[2, 0], [1]], 3) == [(0, 2), (1,)]
    for bad in ([[]], [[3]], [[-1]], [[0, 0]], [[0, 1], [1, 0]], []):
        with pytest.raises(InvalidParameterError):
            validate_subsets(bad, 3)


def test_blocks_and_labels():
    blocks = [[0, 1], [2], [3, 4]]
    assert blocks_touched((0, 1), blocks) == 1
    assert blocks_touched((0, 2, 3), blocks) == 3
    assert blocks_touched((1, 4), blocks) == 2
    assert scenario_label((1, 4), blocks) == "2G"
    assert scenario_label((0, 1, 2, 3, 4), None) == "1G"
    assert validate_blocks(None, 3) == [[0, 1, 2]]
    assert validate_blocks([[2], [0, 1]], 3) == [[2], [0, 1]]
    for bad in ([[0], [0, 1, 2]], [[0, 1]], [[0, 1, 2], []], [[0, 1, 2, 3]]):
        with pytest.raises(InvalidParameterError):
            validate_blocks(bad, 3)


def test_summarize_hand_worked():
    subsets = [(0,), (1,), (0, 1), (0, 2), (1, 2)]
    labels = ["1G", "1G", "1G", "2G", "2G"]
    measures = {
        "dld": [10.0, 30.0, 30.0, 5.0, None],
        "k_prime": [3.0, 4.0, 3.0, 6.0, 2.0],
    }
    s = summarize(measures, subsets, labels)
    assert s["mean"]["dld"] == pytest.approx(75.0 / 4)  # None left out
    assert s["mean"]["k_prime"] == pytest.approx(18.0 / 5)
    # ties for the worst go to the earlier scenario; k' is worst when smallest
    assert s["worst"]["dld"] == {"value": 30.0, "attributes": [1], "label": "1G"}
    assert s["worst"]["k_prime"] == {"value": 2.0, "attributes": [1, 2], "label": "2G"}
    assert list(s["by_label"]) == ["1G", "2G"]
    g1 = s["by_label"]["1G"]
    assert g1["scenarios"] == 3
    assert g1["mean"]["dld"] == pytest.approx(70.0 / 3)
    assert g1["worst"]["k_prime"] == {"value": 3.0, "attributes": [0], "label": "1G"}
    g2 = s["by_label"]["2G"]
    assert g2["mean"]["dld"] == 5.0
    assert g2["worst"]["dld"]["attributes"] == [0, 2]


def test_summarize_all_missing_and_label_order():
    s = summarize({"pld": [None, None]}, [(0,), (0, 1)], ["10G", "2G"])
    assert s["mean"]["pld"] is None and s["worst"]["pld"] is None
    assert list(s["by_label"]) == ["2G", "10G"]
