"""The optimal partition of an ordered sequence of records into consecutive runs.

Hansen & Mukherjee (2003): the groups of an optimal univariate k-partition are
consecutive in sorted order with k..2k-1 members, so the best partition is a shortest
path over nodes 0..n ("the first j records are grouped") with edges (i, j),
k <= j - i <= cap, of cost the within-group SSE of records i..j-1 (0-based). With
rows of several attributes the same path gives the best partition into consecutive
runs of a given order (not the best k-partition): ``pcp``, ``zscores``, ``sugeno`` and
``mhm`` (runs of a projected or path order), ``genetic`` (the order its random keys
encode) and ``ils`` (runs of a pool along an axis) all call :func:`shortest_path`.
``optimal-1d`` calls it for k below ``univariate.MONGE_MIN_K``; above, the Monge
solvers of ``_monge.py`` solve the same recurrence faster.

Edge costs: for node j the candidate groups ending at j are grown backwards one record
at a time, so each edge costs O(p) and the path O(n k p). Sums are taken relative
to the anchor ``Z[j-1]``, a member of every candidate group: SSE = sum ||z - a||^2 -
||sum (z - a)||^2 / m for any a, and with a inside the group the sums stay of the
size of the group's spread. Global prefix sums of z and ||z||^2 instead lose to
cancellation the digits that separate neighbouring groups of a long file.

Ties: among equal computed costs the smaller last group wins (strict comparison,
sizes tried from k up), recursively from the end.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from ..errors import InvalidParameterError

__all__ = ["shortest_path", "optimal_sizes", "sizes_from_back", "check_kernel_input"]


@njit(cache=True, nogil=True)
def shortest_path(Z: np.ndarray, k: int, cap: int, cost: np.ndarray,
                  back: np.ndarray) -> float:  # pragma: no cover - numba
    """Shortest path over the rows of ``Z`` in their order, runs of k..cap rows.

    Fills ``cost[j]`` (the least SSE of a partition of rows 0..j-1 into runs, +inf
    where there is none) and ``back[j]`` (the length of the last run of that
    partition, 0 where there is none) for j = 0..n; returns ``cost[n]``. ``cost`` and
    ``back`` have at least n + 1 entries. O(n (cap - k + 1 + k) p) time, O(p) extra.
    """
    n, p = Z.shape
    cost[0] = 0.0
    back[0] = 0
    for j in range(1, min(k, n + 1)):
        cost[j] = np.inf
        back[j] = 0
    s = np.zeros(p)
    v = Z.reshape(n * p)  # C-contiguous: row t, column c at t * p + c
    for j in range(k, n + 1):
        # one attribute (optimal-1d, projection_only): the same sums in scalars, twice
        # as fast as through the array s and bit-identical
        a = v[j - 1]
        s0 = 0.0
        for c in range(p):
            s[c] = 0.0
        q = 0.0
        for t in range(j - 2, j - k, -1):  # the k-1 members other than the anchor
            if p == 1:
                d = v[t] - a
                s0 += d
                q += d * d
            else:
                for c in range(p):
                    d = Z[t, c] - Z[j - 1, c]
                    s[c] += d
                    q += d * d
        best = np.inf
        best_m = 0
        top = min(cap, j)
        for m in range(k, top + 1):
            t = j - m
            if p == 1:
                d = v[t] - a
                s0 += d
                q += d * d
                ss = s0 * s0
            else:
                ss = 0.0
                for c in range(p):
                    d = Z[t, c] - Z[j - 1, c]
                    s[c] += d
                    q += d * d
                    ss += s[c] * s[c]
            prev = cost[t]
            if prev < np.inf:
                e = q - ss / m
                if e < 0.0:  # rounding; an SSE is never negative
                    e = 0.0
                tot = prev + e
                if tot < best:  # strict: on ties the smallest last group wins
                    best = tot
                    best_m = m
        cost[j] = best
        back[j] = best_m
    return cost[n]


@njit(cache=True, nogil=True)
def sizes_from_back(back: np.ndarray, n: int, k: int) -> np.ndarray:  # pragma: no cover - numba
    """Group sizes of a shortest path, first group first, from its back pointers.

    ``back[j]`` is the size of the last group of the best path to node j; the walk
    starts at node n, so sizes come out last group first and are reversed.
    Shared by :func:`optimal_sizes` and the Monge solvers of ``_monge.py``.
    """
    out = np.empty(n // k + 1, dtype=np.int64)
    g = 0
    j = n
    while j > 0:
        if back[j] <= 0:  # unreachable for finite input with n >= k
            raise ValueError("no feasible partition (non-finite values or n < k)")
        out[g] = back[j]
        j -= back[j]
        g += 1
    return out[:g][::-1].copy()


@njit(cache=True, nogil=True)
def optimal_sizes(Z: np.ndarray, k: int) -> np.ndarray:  # pragma: no cover - numba
    """Run lengths (k..2k-1, first run first) of the best partition of the rows of
    ``Z`` (n, p), n >= k, into consecutive runs: :func:`shortest_path` with cap 2k-1."""
    n = Z.shape[0]
    cost = np.empty(n + 1)
    back = np.empty(n + 1, dtype=np.int64)
    shortest_path(Z, k, 2 * k - 1, cost, back)
    return sizes_from_back(back, n, k)


def check_kernel_input(v: np.ndarray, k: int) -> None:
    """Guard of the public wrappers: k >= 1, at least k rows, finite values (the
    methods hand over validated data; this is for direct library callers)."""
    if int(k) < 1 or v.shape[0] < k:
        raise InvalidParameterError(f"need k >= 1 and at least k={k} values, got {v.shape[0]}")
    if not np.isfinite(v).all():
        raise InvalidParameterError("values must be finite")
