"""The genetic method: MDAV + macrogroups + a genetic algorithm per macrogroup."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from microagg_cli.errors import InvalidParameterError
from microagg_cli.methods import METHODS
from microagg_cli.methods.fixed_size import mdav
from microagg_cli.methods.genetic import (
    _decode_sse,
    _macrogroups,
    _seed_keys,
    genetic,
    stream_state,
)
from microagg_cli.partition import canonical_labels, information_loss, sse


def _rng(seed=0):
    return np.random.default_rng(seed)


def _best_two_group_sse(X: np.ndarray, k: int) -> float:
    """Brute force over the 2-group k-partitions (n < 3k records)."""
    n = X.shape[0]
    best = np.inf
    for size in range(k, n - k + 1):
        for a in combinations(range(1, n), size - 1):
            g = np.zeros(n, dtype=int)
            g[[0, *a]] = 1
            best = min(best, sse(X, g))
    return best


def test_two_clusters_hand_case():
    X = np.array([[0.0], [1.0], [2.0], [10.0], [11.0], [12.0]])
    assert genetic(X, 3, rng=_rng(), iterations=20).tolist() == [0, 0, 0, 1, 1, 1]


def test_registered_with_declared_params():
    spec = METHODS["genetic"]
    names = [p.name for p in spec.params]
    assert names == ["macro_k", "one_step", "chromosomes", "mutation", "crossover", "iterations"]
    defaults = spec.validate_params(None)
    assert defaults == {"macro_k": 0, "one_step": False, "chromosomes": 10,
                        "mutation": 0.1, "crossover": 0.5, "iterations": 10_000}
    with pytest.raises(InvalidParameterError):
        spec.validate_params({"mutation": 1.5})
    with pytest.raises(InvalidParameterError):
        spec.validate_params({"chromosomes": 1})


@pytest.mark.parametrize("macro_k", [4, 7, 3])
def test_macro_k_must_be_a_multiple_of_k_at_least_2k(macro_k):
    X = _rng().normal(size=(30, 2))
    with pytest.raises(InvalidParameterError, match="macro_k"):
        genetic(X, 3, rng=_rng(), macro_k=macro_k, iterations=1)


def test_seed_keys_encode_the_mdav_partition_exactly():
    """Chromosome 0 decodes to the macrogroup's MDAV partition (larger group last)."""
    X = _rng(3).normal(size=(23, 3))
    labels = mdav(X, 4)  # 4,4,4,4,7 -> one larger group
    keys = _seed_keys(labels, 4)
    order = np.empty(23, dtype=np.int64)
    got = _decode_sse(X, keys, 4, order)
    assert got == pytest.approx(sse(X, labels), rel=1e-12)
    decoded = np.minimum(np.arange(23) // 4, 23 // 4 - 1)
    out = np.empty(23, dtype=np.int64)
    out[order] = decoded
    assert canonical_labels(out).tolist() == canonical_labels(labels).tolist()


def test_macrogroups_two_step_are_unions_of_mdav_groups():
    X = _rng(1).normal(size=(200, 3))
    labels = mdav(X, 3)
    macro, seed = _macrogroups(X, labels, 3, 21, one_step=False)
    assert seed.tolist() == labels.tolist()
    for g in np.unique(labels):
        assert np.unique(macro[labels == g]).size == 1
    # MDAV with group size 7 on 66 centroids: 7-group macrogroups, one of 7..13
    groups_per_macro = np.array([np.unique(labels[macro == m]).size for m in np.unique(macro)])
    assert sorted(set(groups_per_macro.tolist()))[0] == 7
    assert groups_per_macro.max() < 14


def test_macrogroups_one_step_is_mdav_k_partition_of_records():
    X = _rng(2).normal(size=(100, 2))
    macro, seed = _macrogroups(X, mdav(X, 5), 5, 20, one_step=True)
    assert canonical_labels(macro).tolist() == mdav(X, 20).tolist()
    for m in np.unique(macro):
        idx = np.flatnonzero(macro == m)
        assert canonical_labels(seed[idx]).tolist() == mdav(X[idx], 5).tolist()


@pytest.mark.parametrize("seed", range(8))
def test_reaches_brute_force_optimum_on_a_small_macrogroup(seed):
    """7 records, k=3: every k-partition is decodable; the default GA finds the best."""
    X = np.random.default_rng(seed).normal(size=(7, 2))
    got = sse(X, genetic(X, 3, rng=_rng()))
    assert got == pytest.approx(_best_two_group_sse(X, 3), abs=1e-9)
    assert got <= sse(X, mdav(X, 3)) + 1e-12


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(6, 80),
    p=st.integers(1, 4),
    k=st.integers(2, 5),
    seed=st.integers(0, 10_000),
    one_step=st.booleans(),
)
def test_never_worse_than_mdav_and_valid(n, p, k, seed, one_step):
    X = np.random.default_rng(seed).normal(size=(n, p)).round(1)  # rounding makes ties
    if n < k:
        return
    X0 = X.copy()
    labels = genetic(X, k, rng=_rng(seed), one_step=one_step, iterations=30)
    assert np.array_equal(X, X0)
    assert labels.tolist() == canonical_labels(labels).tolist()
    sizes = np.bincount(labels)
    assert sizes.min() >= k and sizes.max() < 2 * k
    if one_step:
        # never worse than the per-macrogroup MDAV seeds
        macro, seeds = _macrogroups(X, mdav(X, k), k, 7 * k, one_step=True)
        assert sse(X, labels) <= sse(X, seeds) + 1e-9
    else:
        assert sse(X, labels) <= sse(X, mdav(X, k)) + 1e-9
        # groups never straddle two macrogroups
        macro, _ = _macrogroups(X, mdav(X, k), k, 7 * k, one_step=False)
        for g in range(labels.max() + 1):
            assert np.unique(macro[labels == g]).size == 1


def test_deterministic_per_seed_and_seed_matters():
    X = _rng(7).normal(size=(120, 3))
    a = genetic(X, 3, rng=_rng(11), iterations=200)
    b = genetic(X, 3, rng=_rng(11), iterations=200)
    assert a.tolist() == b.tolist()
    others = {tuple(genetic(X, 3, rng=_rng(s), iterations=200).tolist()) for s in range(4)}
    assert len(others) > 1


def test_stream_state_is_non_zero_and_seed_dependent():
    states = {int(stream_state(s)[0]) for s in range(100)}
    assert len(states) == 100 and 0 not in states


def test_census_improves_on_mdav(census_z):
    labels = genetic(census_z, 3, rng=_rng(), iterations=300)
    il = information_loss(census_z, labels)
    assert il < 5.6922 - 0.02
    assert np.bincount(labels).min() >= 3
