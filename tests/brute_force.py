"""Plain-Python references shared by the tests of the contiguous-group methods
(test_univariate: optimal-1d; test_projection: pcp, zscores, sugeno)."""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, Sequence


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
