"""The genetic method: MDAV + macrogroups + a genetic algorithm per macrogroup."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from method_checks import problem_sizes
from microagg_cli.errors import InvalidParameterError
from microagg_cli.methods import METHODS
from microagg_cli.methods.fixed_size import mdav
from microagg_cli.methods.genetic import (
    _decode,
    _macrogroups,
    _seed_keys,
    genetic,
    macrogroups,
    stream_state,
)
from microagg_cli.partition import canonical_labels, information_loss, sse


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
    assert genetic(X, 3, rng=np.random.default_rng(0), iterations=20).tolist() == [0, 0, 0, 1, 1, 1]


def test_registered_with_declared_params():
    spec = METHODS["genetic"]
    names = [p.name for p in spec.params]
    assert names == ["macro_k", "one_step", "chromosomes", "mutation", "crossover", "iterations",
                     "rounds"]
    defaults = spec.validate_params(None)
    assert defaults == {"macro_k": 0, "one_step": False, "chromosomes": 10,
                        "mutation": 0.1, "crossover": 0.5, "iterations": None, "rounds": 2}
    with pytest.raises(InvalidParameterError):
        spec.validate_params({"mutation": 1.5})
    with pytest.raises(InvalidParameterError):
        spec.validate_params({"chromosomes": 1})


def test_default_generations_scale_with_n():
    """Not set: 4,000,000 / n generations between 300 and 10,000, so the default run's
    work stays about the same whatever n (a fixed 10,000 took 189 s at 10,000 records);
    the registry fills it in for the report, and an explicit value is kept."""
    from microagg_cli.methods.genetic import genetic_generations

    assert [genetic_generations(n) for n in (100, 400, 1_080, 10_000, 13_334, 100_000, 10**6)] == [
        10_000, 10_000, 3_703, 400, 300, 300, 300]
    spec = METHODS["genetic"]
    assert spec.budgeted(spec.validate_params(None), 10_000)["iterations"] == 400
    assert spec.budgeted(spec.validate_params({"iterations": "7"}), 10_000)["iterations"] == 7
    # the estimate follows the budget: the same time per record from 13,334 records on
    at_100k, at_1m = spec.estimate_seconds(100_000, 10, 3), spec.estimate_seconds(10**6, 10, 3)
    assert at_1m == pytest.approx(10 * at_100k)
    assert spec.estimate_seconds(10_000, 10, 3, {"iterations": 800}) == pytest.approx(
        2 * spec.estimate_seconds(10_000, 10, 3))


def test_default_generations_used_when_not_set():
    X = np.random.default_rng(4).normal(size=(60, 2))
    assert genetic(X, 3, rng=np.random.default_rng(0)).tolist() == genetic(
        X, 3, rng=np.random.default_rng(0), iterations=10_000).tolist()


@pytest.mark.parametrize("macro_k", [4, 7, 3])
def test_macro_k_must_be_a_multiple_of_k_at_least_2k(macro_k):
    X = np.random.default_rng(0).normal(size=(30, 2))
    with pytest.raises(InvalidParameterError, match="macro_k"):
        genetic(X, 3, rng=np.random.default_rng(0), macro_k=macro_k, iterations=1)


def test_seed_keys_decode_to_at_most_the_seed_partition():
    """Chromosome 0 decodes to the macrogroup's MDAV partition or a better re-cut of it."""
    X = np.random.default_rng(3).normal(size=(23, 3))
    labels = mdav(X, 4)  # 4,4,4,4,7 -> one larger group
    keys = _seed_keys(labels, 4)
    got, cost = _decode(X, keys, 4)
    assert cost == pytest.approx(sse(X, got), rel=1e-10)
    assert sse(X, got) <= sse(X, labels) + 1e-12
    sizes = np.bincount(got)
    assert sizes.min() >= 4 and sizes.max() <= 7


def test_decoder_cuts_optimally_into_variable_sizes():
    """Sequence 0, .1, .2, .3 | 9, 9.1, 9.2: the optimal cut is 4 + 3, not 3 + 4."""
    X = np.array([[0.0], [0.1], [0.2], [0.3], [9.0], [9.1], [9.2]])
    keys = np.arange(7) / 7.0
    labels, cost = _decode(X, keys, 3)
    assert labels.tolist() == [0, 0, 0, 0, 1, 1, 1]
    assert cost == pytest.approx(sse(X, labels))
    # the same records in another encoded order: the decoder follows the order
    labels, _ = _decode(X, keys[::-1].copy(), 3)
    assert labels.tolist() == [0, 0, 0, 0, 1, 1, 1]


@pytest.mark.parametrize("seed", range(5))
def test_decoder_matches_brute_force_over_cuts(seed):
    """Every cut of the encoded sequence into consecutive groups of k..2k-1."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(13, 2))
    keys = rng.random(13)
    order = np.argsort(keys, kind="stable")
    k = 3

    def best(start):
        if start == 13:
            return 0.0
        out = np.inf
        for size in range(k, 2 * k):
            if start + size <= 13:
                g = X[order[start:start + size]]
                out = min(out, ((g - g.mean(0)) ** 2).sum() + best(start + size))
        return out

    labels, cost = _decode(X, keys, k)
    assert cost == pytest.approx(best(0), rel=1e-10)
    assert sse(X, labels) == pytest.approx(best(0), rel=1e-10)


def test_variable_sizes_beat_fixed_sizes_when_the_data_ask_for_it():
    """Two clusters of 4 records at k = 3: MDAV and cuts into k, k, ..., remainder give
    3 + 5; only variable sizes give 4 + 4."""
    X = np.array([[0.0], [0.1], [0.2], [0.3], [9.0], [9.1], [9.2], [9.3]])
    assert sorted(np.bincount(mdav(X, 3)).tolist()) == [3, 5]
    labels = genetic(X, 3, rng=np.random.default_rng(0), iterations=50)
    assert labels.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert sse(X, labels) == pytest.approx(0.1)
    assert sse(X, mdav(X, 3)) > 10.0


def test_macrogroups_count_and_logging(caplog):
    X = np.random.default_rng(5).normal(size=(120, 2))
    m = macrogroups(X, 3, macro_k=12)
    assert m.tolist() == canonical_labels(m).tolist()
    assert int(m.max()) + 1 == 10  # 40 MDAV groups, 4 per macrogroup
    with caplog.at_level("INFO", logger="microagg_cli"):
        genetic(X, 3, rng=np.random.default_rng(0), macro_k=12, iterations=5, rounds=2)
    text = caplog.text
    assert "10 macrogroups (K = 12) in round 1" in text
    assert "in round 2" in text


def test_rounds_never_worsen():
    X = np.random.default_rng(9).normal(size=(150, 3))
    one = sse(X, genetic(X, 3, rng=np.random.default_rng(2), macro_k=12, iterations=200, rounds=1))
    three = sse(X, genetic(X, 3, rng=np.random.default_rng(2), macro_k=12, iterations=200, rounds=3))
    assert three <= one + 1e-9


def test_macrogroups_two_step_are_unions_of_mdav_groups():
    X = np.random.default_rng(1).normal(size=(200, 3))
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
    X = np.random.default_rng(2).normal(size=(100, 2))
    macro, seed = _macrogroups(X, mdav(X, 5), 5, 20, one_step=True)
    assert canonical_labels(macro).tolist() == mdav(X, 20).tolist()
    for m in np.unique(macro):
        idx = np.flatnonzero(macro == m)
        assert canonical_labels(seed[idx]).tolist() == mdav(X[idx], 5).tolist()


@pytest.mark.parametrize("seed", range(8))
def test_reaches_brute_force_optimum_on_a_small_macrogroup(seed):
    """7 records, k=3: every k-partition is decodable; the default GA finds the best."""
    X = np.random.default_rng(seed).normal(size=(7, 2))
    got = sse(X, genetic(X, 3, rng=np.random.default_rng(0)))
    assert got == pytest.approx(_best_two_group_sse(X, 3), abs=1e-9)
    assert got <= sse(X, mdav(X, 3)) + 1e-12


@settings(max_examples=25, deadline=None)
@given(**problem_sizes((6, 80), seeds=10_000), one_step=st.booleans(), rounds=st.integers(1, 2))
def test_never_worse_than_mdav_and_valid(n, p, k, seed, one_step, rounds):
    X = np.random.default_rng(seed).normal(size=(n, p)).round(1)  # rounding makes ties
    if n < k:
        return
    X0 = X.copy()
    labels = genetic(X, k, rng=np.random.default_rng(seed), one_step=one_step, iterations=30, rounds=rounds)
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
    if rounds == 1:
        # groups never straddle two macrogroups
        macro, _ = _macrogroups(X, mdav(X, k), k, 7 * k, one_step=one_step)
        for g in range(labels.max() + 1):
            assert np.unique(macro[labels == g]).size == 1


def test_deterministic_per_seed_and_seed_matters():
    X = np.random.default_rng(7).normal(size=(120, 3))
    a = genetic(X, 3, rng=np.random.default_rng(11), iterations=200)
    b = genetic(X, 3, rng=np.random.default_rng(11), iterations=200)
    assert a.tolist() == b.tolist()
    others = {tuple(genetic(X, 3, rng=np.random.default_rng(s), iterations=200).tolist()) for s in range(4)}
    assert len(others) > 1


def test_stream_state_is_non_zero_and_seed_dependent():
    states = {int(stream_state(s)[0]) for s in range(100)}
    assert len(states) == 100 and 0 not in states


def test_census_improves_on_mdav(census_z):
    labels = genetic(census_z, 3, rng=np.random.default_rng(0), iterations=300)
    il = information_loss(census_z, labels)
    assert il < 5.6922 - 0.02
    assert np.bincount(labels).min() >= 3


@pytest.mark.slow
@pytest.mark.parametrize("K, paper", [(12, 4.0), (18, 4.0), (27, 1.0)])
def test_census_two_step_gains_reach_the_paper(census_z, K, paper):
    """The paper's two-step gains over MDAV on Census, k = 3, default parameters (rounds = 2)."""
    base = information_loss(census_z, mdav(census_z, 3))
    il = information_loss(census_z, genetic(census_z, 3, rng=np.random.default_rng(0), macro_k=K))
    assert 100 * (base - il) / base >= paper
