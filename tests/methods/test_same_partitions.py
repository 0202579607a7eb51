"""Faster versions of deterministic methods give the very partition of the version they
replace (kept as ``*_reference``), ties included, at 2,000 records and on tie-heavy data."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from microagg_cli.methods.fixed_size import multidsort, multidsort_reference

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from end_to_end import synthetic  # noqa: E402  (the benchmarks' Gaussian mixture)


def _cases():
    rng = np.random.default_rng(20261128)
    mixture = synthetic(2_000, 10)
    yield "mixture 2000x10", (mixture - mixture.mean(axis=0)) / mixture.std(axis=0)
    yield "rounded 2000x4 (ties)", np.round(rng.normal(size=(2_000, 4)) * 2)
    yield "three values 600x3 (many ties)", rng.integers(0, 3, size=(600, 3)).astype(float)
    yield "one column 301", rng.normal(size=(301, 1))
    yield "all equal 40x2", np.zeros((40, 2))


@pytest.mark.parametrize("k", [2, 3, 5])
def test_multidsort_same_partition_as_reference(k):
    for name, X in _cases():
        got, want = multidsort(X, k), multidsort_reference(X, k)
        assert np.array_equal(got, want), name
        assert np.bincount(got).min() >= k


@pytest.mark.parametrize("length", [5, 12, 32])
def test_dba_neighbour_lists_from_the_tree_are_the_scans(length):
    from microagg_cli.methods import density

    for name, X in _cases():
        if X.shape[0] - 1 <= length:
            continue
        assert np.array_equal(density._neighbour_lists_tree(X, length),
                              density._neighbour_lists_scan(X, length)), name


@pytest.mark.parametrize("k", [2, 3, 5])
def test_dba_same_partition_with_and_without_the_tree(k, monkeypatch):
    from microagg_cli.methods import density

    for name, X in _cases():
        fast = density.dba(X, k)
        monkeypatch.setattr(density, "_TREE_ROWS", 10**9)  # every list by the scan of all pairs
        slow = density.dba(X, k)
        monkeypatch.undo()
        assert np.array_equal(fast, slow), name


@pytest.mark.parametrize("cap", [2048, 5, 0])  # 5 and 0: rows scanned instead of their ball
@pytest.mark.parametrize("k", [2, 3, 5])
def test_mu_approx_same_partition_with_and_without_the_tree(k, cap, monkeypatch):
    from microagg_cli.methods import approx, density

    monkeypatch.setattr(approx, "_BALL_CAP", cap)
    monkeypatch.setattr(density, "_BALL_CAP", cap)
    for name, X in _cases():
        fast = approx.mu_approx(X, k)
        forest = approx.nearest_neighbour_forest(X, k)
        with monkeypatch.context() as m:
            m.setattr(approx, "_TREE_ROWS", 10**9)  # every nearest record by the scan
            slow = approx.mu_approx(X, k)
            slow_forest = approx.nearest_neighbour_forest(X, k)
        assert np.array_equal(fast, slow), name
        assert all(np.array_equal(a, b) for a, b in zip(forest, slow_forest)), name
        if X.shape[0] > 13:
            assert np.array_equal(density._neighbour_lists_tree(X, 12), density._neighbour_lists_scan(X, 12)), name
