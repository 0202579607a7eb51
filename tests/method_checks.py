"""Helpers shared by the method tests: plain-Python references, data, hypothesis
strategies and the partition checks run on a method's labels."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Sequence

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from microagg_cli.partition import canonical_labels, group_sizes, zscore


def normal_data(n: int, p: int = 3, seed: int = 0) -> np.ndarray:
    """z-scored normal data rounded to one decimal (some ties)."""
    return zscore(np.random.default_rng(seed).normal(size=(n, p)).round(1))[0]


def check_method(run: Callable[[np.ndarray, int], np.ndarray], X: np.ndarray, k: int, *,
                 max_size: int | None = None) -> np.ndarray:
    """Run ``run(X, k)`` twice: input not mutated, canonical labels of shape (n,),
    groups of k..``max_size`` records, the same labels again. Returns the labels."""
    before = X.copy()
    labels = run(X, k)
    assert (X == before).all()
    assert labels.shape == (X.shape[0],)
    assert (canonical_labels(labels) == labels).all()
    sizes = group_sizes(labels)
    assert sizes.min() >= k
    if max_size is not None:
        assert sizes.max() <= max_size
    assert np.array_equal(labels, run(X, k))
    return labels


def problem_sizes(n: tuple[int, int], *, seeds: int = 100_000, k: tuple[int, int] = (2, 5),
                  p: tuple[int, int] = (1, 4)) -> dict[str, Any]:
    """Strategies for ``@given(**problem_sizes(...))``: n, p, k and a data seed."""
    return {"n": st.integers(*n), "p": st.integers(*p), "k": st.integers(*k), "seed": st.integers(0, seeds)}


def tie_heavy(n_max: int, p_max: int, level: int) -> st.SearchStrategy[np.ndarray]:
    """Matrices of 2..n_max rows, 1..p_max columns, integer values in [-level, level]."""
    return arrays(np.float64, st.tuples(st.integers(2, n_max), st.integers(1, p_max)),
                  elements=st.integers(-level, level).map(float))


def py_sse(values: list[float]) -> float:
    """SSE of a list of numbers, two-pass, plain Python."""
    m = sum(values) / len(values)
    return sum((v - m) ** 2 for v in values)


def py_sse_rows(rows: list[list[float]]) -> float:
    """Multivariate SSE of a list of rows, plain Python."""
    m = len(rows)
    p = len(rows[0])
    means = [sum(r[c] for r in rows) / m for c in range(p)]
    return sum((r[c] - means[c]) ** 2 for r in rows for c in range(p))


def brute_contiguous(items: Sequence, k: int, cost: Callable[[list], float] = py_sse) -> float:
    """Minimum total ``cost`` over all partitions of ``items`` (in their order) into
    runs of k..2k-1 items; ``cost`` is :func:`py_sse` for values, :func:`py_sse_rows`
    for rows."""

    @lru_cache(maxsize=None)
    def best(i: int) -> float:  # best cost of items[i:]
        if i == len(items):
            return 0.0
        out = float("inf")
        for m in range(k, 2 * k):
            if i + m <= len(items):
                out = min(out, cost(items[i:i + m]) + best(i + m))
        return out

    return best(0)
