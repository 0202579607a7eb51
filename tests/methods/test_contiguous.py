"""The one optimal contiguous-partition kernel (``methods/_contiguous.py``) against brute force.

``optimal-1d``, ``individual-ranking --optimal``, ``pcp``, ``zscores``, ``sugeno``,
``mhm``, ``genetic`` and ``ils`` all cut an ordered sequence with
:func:`shortest_path`; here it is checked once against every partition of small
sequences into runs, in exact arithmetic.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from microagg_cli.errors import InvalidParameterError
from microagg_cli.methods._contiguous import check_kernel_input, optimal_sizes, shortest_path, sizes_from_back


def exact_sse(rows: list[tuple[int, ...]]) -> Fraction:
    m = len(rows)
    total = Fraction(0)
    for c in range(len(rows[0])):
        col = [Fraction(r[c]) for r in rows]
        mean = sum(col) / m
        total += sum((x - mean) ** 2 for x in col)
    return total


def compositions(n: int, lo: int, hi: int):
    """Every tuple of run lengths in [lo, hi] summing to n, first run first."""
    if n == 0:
        yield ()
        return
    for m in range(lo, min(hi, n) + 1):
        for rest in compositions(n - m, lo, hi):
            yield (m,) + rest


def runs_sse(rows, sizes) -> Fraction:
    total, a = Fraction(0), 0
    for m in sizes:
        total += exact_sse(rows[a:a + m])
        a += m
    return total


def brute(rows, k: int, cap: int):
    """(least SSE, the partition the tie rule picks) over all runs of k..cap; None if none.
    Tie rule: among optimal partitions the smallest last run, then the smallest run
    before it, and so on (lexicographic on the reversed sizes)."""
    run_sse = {(a, m): exact_sse(rows[a:a + m]) for a in range(len(rows))
               for m in range(k, min(cap, len(rows) - a) + 1)}
    best = None
    for sizes in compositions(len(rows), k, cap):
        total, a = Fraction(0), 0
        for m in sizes:
            total += run_sse[a, m]
            a += m
        key = (total, sizes[::-1])
        if best is None or key < best:
            best = key
    return None if best is None else (best[0], best[1][::-1])


def run(Z: np.ndarray, k: int, cap: int):
    n = Z.shape[0]
    cost, back = np.empty(n + 1), np.empty(n + 1, dtype=np.int64)
    total = shortest_path(np.ascontiguousarray(Z, dtype=np.float64), k, cap, cost, back)
    return total, cost, back


rows_strategy = st.integers(1, 3).flatmap(lambda p: st.lists(
    st.tuples(*[st.integers(-3, 3)] * p), min_size=1, max_size=12))


@settings(max_examples=200, deadline=None)
@given(rows=rows_strategy, k=st.integers(1, 4), extra=st.integers(0, 2))
def test_shortest_path_equals_brute_force(rows, k, extra):
    # Small integers: many ties (equal rows, equal SSE), and distinct SSEs of runs of
    # at most 8 rows differ by at least 1/840, far above the kernel's rounding.
    n = len(rows)
    k = min(k, n)
    cap = 2 * k - 1 + extra  # the methods use 2k-1 (a partition exists for every n >= k)
    Z = np.array(rows, dtype=float)
    total, cost, back = run(Z, k, cap)
    for j in range(max(0, n - 3), n + 1):  # the last prefixes are solved too
        want = brute(rows[:j], k, cap) if j else (Fraction(0), ())
        if want is None:
            assert cost[j] == np.inf and back[j] == 0
            continue
        assert abs(cost[j] - float(want[0])) <= 1e-9 * (1 + float(want[0])), (j, cost[j], want)
    want_sse, want_sizes = brute(rows, k, cap)
    sizes = sizes_from_back(back, n, k).tolist()
    assert sum(sizes) == n and all(k <= m <= cap for m in sizes)
    assert runs_sse(rows, sizes) == want_sse  # an exact optimum, not only a near one
    assert total == cost[n]
    if want_sse == 0:  # every computed cost of an optimum is exactly 0: the tie rule decides
        assert tuple(sizes) == want_sizes


@settings(max_examples=100, deadline=None)
@given(values=st.lists(st.floats(-1e3, 1e3, allow_nan=False, allow_subnormal=False), min_size=1, max_size=12),
       k=st.integers(1, 4))
def test_shortest_path_on_reals_within_rounding_of_brute_force(values, k):
    n = len(values)
    k = min(k, n)
    Z = np.array(values)[:, None]
    sizes = optimal_sizes(Z, k)
    got = sum(float(np.sum((Z[a:b] - Z[a:b].mean()) ** 2)) for a, b in
              zip(np.r_[0, np.cumsum(sizes)[:-1]], np.cumsum(sizes)))
    best = min(sum(float(np.sum((Z[a:b] - Z[a:b].mean()) ** 2)) for a, b in
                   zip(np.r_[0, np.cumsum(s)[:-1]], np.cumsum(s)))
               for s in compositions(n, k, 2 * k - 1))
    assert got <= best + 1e-9 * (1.0 + float(np.sum(Z * Z)))


@settings(max_examples=100, deadline=None)
@given(values=st.lists(st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False), min_size=1, max_size=60),
       k=st.integers(1, 8))
def test_one_column_path_is_the_general_path_bit_for_bit(values, k):
    # The kernel sums one column in scalars; with a second, all-zero column it takes
    # the general loop: same costs to the last bit, so the same partition.
    k = min(k, len(values))
    v = np.array(values)[:, None]
    one = run(v, k, 2 * k - 1)
    two = run(np.hstack([v, np.zeros_like(v)]), k, 2 * k - 1)
    assert one[1].tobytes() == two[1].tobytes() and one[2].tolist() == two[2].tolist()


@pytest.mark.parametrize("n,k", [(10, 3), (25, 10), (7, 1), (5, 5), (9, 2)])
def test_all_ties_give_groups_of_k_from_the_end(n, k):
    # every partition costs 0: the smallest last group wins, recursively
    sizes = optimal_sizes(np.full((n, 2), 1.5), k)
    assert sizes.tolist() == [n - (n // k - 1) * k] + [k] * (n // k - 1)


def test_hand_worked_case():
    # 0 1 2 | 10 11 12 13 with k = 3: SSE 2 + 5 = 7; the cut 0 1 2 10 | 11 12 13 costs 74 + 2
    total, cost, back = run(np.array([[0.0], [1], [2], [10], [11], [12], [13]]), 3, 5)
    assert sizes_from_back(back, 7, 3).tolist() == [3, 4]
    assert total == pytest.approx(7.0)
    assert cost[:3].tolist() == [0.0, np.inf, np.inf] and cost[3] == pytest.approx(2.0)


def test_check_kernel_input():
    with pytest.raises(InvalidParameterError, match="at least k=3"):
        check_kernel_input(np.zeros(2), 3)
    with pytest.raises(InvalidParameterError, match="finite"):
        check_kernel_input(np.array([1.0, np.nan]), 1)
