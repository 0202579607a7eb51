"""What the measures keep of an original between calls (``sdc compare`` measures every
cell against it): LB_NN of several k from one query, the original's ranks, the copy of
named caches into another process (:mod:`microagg_cli.memo`)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from microagg_cli import memo
from microagg_cli.metrics.risk.common import original_ranks, ranks
from microagg_cli.metrics.risk.interval import id_hits
from microagg_cli.metrics.utility import _lb_nn_sum_of, _lb_nn_sums_of, lb_nn_blocks, lb_nn_prepare


def _data(seed: int, n: int, p: int, ties: bool) -> np.ndarray:
    X = np.random.default_rng(seed).normal(size=(n, p))
    return np.round(X, 1) if ties else X  # rounded: duplicate rows and tied distances


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 60), p=st.integers(1, 4), ties=st.booleans(),
       ks=st.lists(st.integers(1, 9), min_size=1, max_size=4), chunk=st.integers(1, 40))
def test_lb_nn_of_several_k_from_one_query_is_bit_identical(seed, n, p, ties, ks, chunk):
    Z = np.ascontiguousarray(_data(seed, n, p, ties))
    ks = [k for k in ks if k <= n] or [1]
    together = _lb_nn_sums_of(Z, ks, chunk)
    for k in ks:
        alone = _lb_nn_sum_of(Z, k, chunk)  # chunks of chunk // k rows: they differ per k
        assert together[k] == alone  # not approx: the same bits


def test_lb_nn_prepare_keeps_what_lb_nn_blocks_computes():
    X = _data(1, 300, 5, True) * [1.0, 10.0, 100.0, 1.0, 3.0]
    blocks = [[0, 3], [1, 2, 4]]
    memo.clear(["lb_nn"])
    alone = {k: lb_nn_blocks(X, k, blocks) for k in (2, 3, 7)}
    memo.clear(["lb_nn"])
    lb_nn_prepare(X, [7, 3, 2, 500], blocks)  # 500 > n: no k-partition, nothing kept
    kept = memo.exported(["lb_nn"])["lb_nn"]
    assert sorted(key[1] for key, _ in kept) == [2, 2, 3, 3, 7, 7]  # every block, every k
    assert {k: lb_nn_blocks(X, k, blocks) for k in (2, 3, 7)} == alone
    assert len(memo.exported(["lb_nn"])["lb_nn"]) == 6  # nothing computed again


def test_original_ranks_are_kept_read_only_and_exact():
    rng = np.random.default_rng(5)
    X = np.round(rng.normal(size=(200, 3)), 1)
    Xp = np.round(X + rng.normal(size=X.shape), 1)
    Ro, Rp, cols = ranks(X, Xp)
    for v in range(3):
        s = np.sort(X[:, v])
        assert np.array_equal(cols[v], s)
        assert np.array_equal(Ro[:, v], np.searchsorted(s, X[:, v], side="left"))
        assert np.array_equal(Rp[:, v], np.searchsorted(s, Xp[:, v], side="left"))
    kept = original_ranks(X)
    assert kept.ranks is Ro  # kept: the next protected file of X reuses it
    for v in range(3):  # the stable order of the values is the stable order of their ranks
        assert np.array_equal(kept.orders[v], np.argsort(Ro[:, v], kind="stable"))
    with pytest.raises(ValueError):
        Ro[0, 0] = 1
    # ID from the kept ranks: each record's interval by its own search, counted by hand
    n = X.shape[0]
    for v in range(3):
        s = np.sort(X[:, v])
        for qi, q in enumerate([1, 5, 10]):
            w = int(q * n // 200)
            want = sum(s[max(0, r - w)] <= x <= s[min(n - 1, r + w)]
                       for r, x in zip(np.searchsorted(s, Xp[:, v], side="left"), X[:, v]))
            assert id_hits(X, cols, Rp, [1, 5, 10])[v, qi] == want


def test_named_caches_travel_and_never_overwrite():
    cache = memo.LastResults(3, name="test-travel")
    with pytest.raises(ValueError, match="exists already"):
        memo.LastResults(1, name="test-travel")
    assert cache.get("a", lambda: 1) == 1
    assert cache.get("a", lambda: 2) == 1  # kept
    cache.put("b", 2)
    shipped = pickle.loads(pickle.dumps(memo.exported(["test-travel"])))
    assert shipped == {"test-travel": [("a", 1), ("b", 2)]}
    memo.clear(["test-travel"])
    assert cache.items() == []
    cache.put("a", 10)
    memo.absorb(shipped)
    assert dict(cache.items()) == {"a": 10, "b": 2}  # a kept result is left as it is
    for key in "cdef":
        cache.put(key, 0)
    assert [k for k, _ in cache.items()] == ["d", "e", "f"]  # the least recently used out


def test_results_for_a_cache_not_created_yet_wait_for_it():
    memo.absorb({"test-later": [("k", 1.5)]})
    assert memo.exported(["test-later"]) == {"test-later": []}
    cache = memo.LastResults(2, name="test-later")  # its module imported after the results came
    assert cache.get("k", lambda: 0.0) == 1.5
