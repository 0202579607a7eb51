"""Optimal univariate k-partition for large k: row minima of a Monge band, block by block.

The shortest path of Hansen & Mukherjee (2003) over nodes 0..n of sorted values,

    cost[j] = min over i in [j-2k+1, j-k] of  cost[i] + SSE(i, j),

(SSE(i, j) = within-group SSE of sorted values i..j-1, 0-based) is a least-weight
subsequence problem whose weight SSE(i, j) satisfies the quadrangle (Monge)
inequality on sorted data; the band of allowed i (and the unreachable nodes
1..k-1, cost +inf) keeps the matrix M[j, i] = cost[i] + SSE(i, j) Monge with +inf
entries only in its lower-left and upper-right corners. Hence the *largest* minimising
i of a row never decreases from one row to the next (total monotonicity).

Because i <= j - k, the rows j of one block [a, a + k) only read cost[i] with
i < a, all final before the block starts: each block is an offline row-minima problem
of k rows by 2k - 1 columns. :func:`optimal_sizes_monge` solves it by monotone divide
and conquer -- the row in the middle is scanned over its allowed columns, its argmin
splits the columns of the rows above and below: O(k log k) edge evaluations per
block, O(n log k) in all. :func:`optimal_sizes_smawk` solves it by SMAWK, O(k) per
block and O(n) in all, as microagg1d does; its bookkeeping costs more per row, so
the divide and conquer is faster below k of a few thousand (``univariate.SMAWK_MIN_K``
chooses). Both return the same partition (tested against each other and against the
O(n k) shortest path).

Edge costs are O(1) each from prefix sums local to the block's window of 3k - 1 values
and anchored at a value inside it (no cancellation across the whole file, unlike
global prefix sums), then re-anchored at the group's own last value v[j-1], the
anchor the O(n k) kernel of ``_contiguous.py`` uses: on integer-valued data (sums
exact) both kernels compute bit-identical edge costs.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from ._contiguous import sizes_from_back

__all__ = ["optimal_sizes_monge", "optimal_sizes_smawk"]


@njit(cache=True, nogil=True, inline="always")
def _edge(P1: np.ndarray, P2: np.ndarray, lo: int, A: float, v: np.ndarray,
          i: int, j: int) -> float:  # pragma: no cover - numba
    # SSE of v[i..j-1] from window prefix sums of (v - A), re-anchored at v[j-1].
    m = j - i
    s0 = P1[j - lo] - P1[i - lo]
    q0 = P2[j - lo] - P2[i - lo]
    d = v[j - 1] - A
    s = s0 - m * d
    q = q0 - 2.0 * d * s0 + m * d * d
    e = q - s * s / m
    if e < 0.0:
        e = 0.0
    return e


@njit(cache=True, nogil=True)
def _start(n, k):  # pragma: no cover - numba
    """The shortest path's arrays: cost (node 0 reached at 0, the others not yet),
    back, and the two prefix-sum buffers of a block's window of 3k - 1 values."""
    cost = np.full(n + 1, np.inf)
    cost[0] = 0.0
    return cost, np.zeros(n + 1, dtype=np.int64), np.zeros(3 * k + 1), np.zeros(3 * k + 1)


@njit(cache=True, nogil=True)
def optimal_sizes_monge(v: np.ndarray, k: int) -> np.ndarray:  # pragma: no cover - numba
    """Group sizes of the optimal contiguous k-partition of sorted ``v`` (see module).

    ``back[j]`` (size of the last group of the best path to node j) is the largest
    minimising i's group, i.e. among equal computed costs the smallest last group:
    the tie rule of the O(n k) kernel.
    """
    n = v.shape[0]
    cost, back, P1, P2 = _start(n, k)
    stack = np.empty((130, 4), dtype=np.int64)
    a = k
    while a <= n:
        b = min(a + k, n + 1)  # rows a..b-1
        lo = max(0, a - 2 * k + 1)
        A = v[a - 1]
        w = b - 1 - lo  # values lo..b-2
        for t in range(w):
            d = v[lo + t] - A
            P1[t + 1] = P1[t] + d
            P2[t + 1] = P2[t] + d * d
        top = 0
        stack[0, 0] = a
        stack[0, 1] = b - 1
        stack[0, 2] = lo
        stack[0, 3] = b - 1 - k
        top = 1
        while top > 0:
            top -= 1
            r_lo = stack[top, 0]
            r_hi = stack[top, 1]
            c_lo = stack[top, 2]
            c_hi = stack[top, 3]
            if r_lo > r_hi:
                continue
            r = (r_lo + r_hi) // 2
            i0 = max(c_lo, r - 2 * k + 1, 0)
            i1 = min(c_hi, r - k)
            best = np.inf
            best_i = -1
            for i in range(i0, i1 + 1):
                c = cost[i]
                if c < np.inf:
                    c += _edge(P1, P2, lo, A, v, i, r)
                    if c <= best:  # the largest i (smallest last group) on ties
                        best = c
                        best_i = i
            if best_i < 0:  # cannot happen for exact Monge costs; full band as a guard
                for i in range(max(r - 2 * k + 1, 0), r - k + 1):
                    c = cost[i]
                    if c < np.inf:
                        c += _edge(P1, P2, lo, A, v, i, r)
                        if c <= best:
                            best = c
                            best_i = i
            cost[r] = best
            back[r] = r - best_i
            stack[top, 0] = r + 1
            stack[top, 1] = r_hi
            stack[top, 2] = best_i
            stack[top, 3] = c_hi
            stack[top + 1, 0] = r_lo
            stack[top + 1, 1] = r - 1
            stack[top + 1, 2] = c_lo
            stack[top + 1, 3] = best_i
            top += 2
        a = b
    return sizes_from_back(back, n, k)


@njit(cache=True, nogil=True, inline="always")
def _entry(cost: np.ndarray, P1: np.ndarray, P2: np.ndarray, lo: int, A: float, v: np.ndarray,
           k: int, r: int, c: int) -> tuple[int, float]:  # pragma: no cover - numba
    # M[r, c] as (class, value), compared lexicographically. 0: inside the band, the
    # path cost; 1: outside it, -c below the band (c < r-2k+1), +c above it (c > r-k);
    # 2: unreachable node. With these values the whole block is totally monotone
    # for rightmost minima (the band's +inf corners no longer tie).
    if cost[c] == np.inf:
        return 2, 0.0
    if c > r - k:
        return 1, float(c)
    if c < r - 2 * k + 1:
        return 1, -float(c)
    return 0, cost[c] + _edge(P1, P2, lo, A, v, c, r)


@njit(cache=True, nogil=True, inline="always")
def _not_worse(c1: int, v1: float, c2: int, v2: float) -> bool:  # pragma: no cover - numba
    return c1 < c2 or (c1 == c2 and v1 <= v2)


@njit(cache=True, nogil=True)
def optimal_sizes_smawk(v: np.ndarray, k: int) -> np.ndarray:  # pragma: no cover - numba
    """The same partition as :func:`optimal_sizes_monge`, each block by SMAWK: O(n).

    SMAWK (Aggarwal, Klawe, Moran, Shor & Wilber 1987) for the rightmost row minima of
    the block: REDUCE the columns to at most one per row (a column that a later column
    weakly beats in the row of its stack position is dropped), solve the odd rows
    recursively, then scan each even row between the argmins of its odd neighbours.
    Written level by level (no recursion): the reduced columns of every level go
    into one buffer, the rows of level l+1 are the odd rows of level l.
    """
    n = v.shape[0]
    cost, back, P1, P2 = _start(n, k)
    ans = np.empty(k, dtype=np.int64)
    buf = np.empty(4 * k + 8, dtype=np.int64)  # reduced columns, all levels (<= 2k)
    off = np.empty(70, dtype=np.int64)
    cnt = np.empty(70, dtype=np.int64)
    lstart = np.empty(70, dtype=np.int64)
    lstep = np.empty(70, dtype=np.int64)
    lrows = np.empty(70, dtype=np.int64)
    a = k
    while a <= n:
        b = min(a + k, n + 1)  # rows a..b-1, columns lo..b-1-k
        lo = max(0, a - 2 * k + 1)
        A = v[a - 1]
        for t in range(b - 1 - lo):
            d = v[lo + t] - A
            P1[t + 1] = P1[t] + d
            P2[t + 1] = P2[t] + d * d
        # Downward: REDUCE at every level.
        in_off = -1  # level 0 reads the columns lo..b-1-k themselves
        in_cnt = b - k - lo
        start = a
        step = 1
        nrows = b - a
        pos = 0
        L = 0
        while True:
            lstart[L] = start
            lstep[L] = step
            lrows[L] = nrows
            off[L] = pos
            top = 0
            for t in range(in_cnt):
                c = lo + t if in_off < 0 else buf[in_off + t]
                while top > 0:
                    r = start + (top - 1) * step
                    c1, v1 = _entry(cost, P1, P2, lo, A, v, k, r, c)
                    c2, v2 = _entry(cost, P1, P2, lo, A, v, k, r, buf[pos + top - 1])
                    if _not_worse(c1, v1, c2, v2):
                        top -= 1
                    else:
                        break
                if top < nrows:
                    buf[pos + top] = c
                    top += 1
            cnt[L] = top
            in_off = pos
            in_cnt = top
            pos += top
            if nrows == 1:
                break
            start += step
            step *= 2
            nrows //= 2
            L += 1
        # Upward: the even rows of each level between their odd neighbours' argmins.
        for lev in range(L, -1, -1):
            start = lstart[lev]
            step = lstep[lev]
            nrows = lrows[lev]
            o = off[lev]
            m = cnt[lev]
            j = 0
            for i in range(0, nrows, 2):
                r = start + i * step
                stop_col = ans[r + step - a] if i + 1 < nrows else buf[o + m - 1]
                best_c = -1
                best_cls = 3
                best_val = 0.0
                while True:
                    c = buf[o + j]
                    c1, v1 = _entry(cost, P1, P2, lo, A, v, k, r, c)
                    if _not_worse(c1, v1, best_cls, best_val):  # rightmost on ties
                        best_cls = c1
                        best_val = v1
                        best_c = c
                    if c == stop_col:
                        break
                    j += 1
                ans[r - a] = best_c
        for r in range(a, b):
            c1, v1 = _entry(cost, P1, P2, lo, A, v, k, r, ans[r - a])
            cost[r] = v1
            back[r] = r - ans[r - a]
        a = b
    return sizes_from_back(back, n, k)
