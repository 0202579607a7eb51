"""Univariate and sorted-axis methods: optimal univariate, individual ranking, UFS, simple.

Every function takes a validated (n, p) float matrix -- z-scored by the caller -- and
the minimum group size ``k``. ``optimal_1d``, ``ufs`` and ``simple`` return canonical
labels (groups numbered in order of first appearance in the input);
``individual_ranking`` returns one canonical partition per column, shape (n, p).

Sorting is always stable, so equal values keep their input order ("the record that
comes first in the input wins"). The exact univariate dynamic programme lives here
(:func:`optimal_contiguous_sizes`: the shortest path of ``_contiguous.py``, shared
with the methods that cut a sequence into runs, and from k = 10 on the Monge solver
of ``_monge.py``).
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidParameterError
from ._axes import projection_axis, sort_order
from ._contiguous import check_kernel_input, optimal_sizes
from ._monge import optimal_sizes_monge, optimal_sizes_smawk
from ._common import check_k
from ..progress import advance
from ._spec import CostModel, MethodSpec, ParamSpec, method_contract

__all__ = [
    "optimal_1d",
    "individual_ranking",
    "ufs",
    "simple",
    "optimal_contiguous_sizes",
    "fixed_contiguous_sizes",
    "labels_from_sorted_sizes",
    "MONGE_MIN_K",
    "SMAWK_MIN_K",
    "SOLVERS",
    "SPECS",
]

#: From this k on, :func:`optimal_contiguous_sizes` uses the Monge solvers of
#: ``_monge.py`` instead of the O(n k) shortest path (the crossover measured on
#: 1,000,000 lognormal values: equal at k = 10, the Monge solver 2x faster at k = 30,
#: 40x at k = 1,000; ``benchmarks/univariate.py --vs microagg1d``).
MONGE_MIN_K = 10

#: From this k on, each block of the Monge solver is solved by SMAWK (O(k) per block,
#: O(n) in all) instead of divide and conquer (O(k log k) per block), which is faster
#: below it: measured crossover between k = 3,000 and 10,000 on 1,000,000 values.
#: With the thresholds the whole solver is O(n) for every k: O(n k) with k < 10,
#: O(n log k) with k < SMAWK_MIN_K, O(n) above.
SMAWK_MIN_K = 5000


# ---------------------------------------------------------------------------
# Shared building blocks
# ---------------------------------------------------------------------------


#: The solvers :func:`optimal_contiguous_sizes` can be asked for (``auto`` picks by k).
SOLVERS = ("auto", "shortest-path", "divide-and-conquer", "smawk")


def optimal_contiguous_sizes(values_sorted: np.ndarray, k: int, *, solver: str = "auto") -> np.ndarray:
    """Group sizes of the optimal contiguous k-partition of sorted values.

    Exact shortest path of Hansen & Mukherjee (2003): the groups of an optimal
    univariate k-partition are contiguous in sorted order with k..2k-1 members, so
    the best partition is the shortest path over nodes 0..n with edges (i, j),
    i + k <= j <= i + 2k - 1, of cost = SSE of sorted values i+1..j.

    Parameters
    ----------
    values_sorted : (n,) float array in non-decreasing order (n >= k).
    k : minimum group size (>= 1).
    solver : ``auto`` (by k, below), or one of ``shortest-path``,
        ``divide-and-conquer``, ``smawk`` (for checks: same partition).

    Returns
    -------
    sizes : (g,) int64, the group sizes from the smallest values up; sum == n.

    Notes
    -----
    k < :data:`MONGE_MIN_K`: the shortest path, O(n k) time (numba). Larger k: the
    same recurrence solved as row minima of a Monge matrix, block of k rows by
    block (``_monge.py``): each block by divide and conquer, O(k log k)
    (``optimal_sizes_monge``), or from :data:`SMAWK_MIN_K` on by SMAWK, O(k)
    (``optimal_sizes_smawk``) -- O(n) in all for every k; the DP at n =
    1,000,000, k = 10,000 takes about 0.1 s where the shortest path needs 30 s.
    All three O(n) memory. All pick, among partitions of equal computed cost, the
    one whose last group is smallest, recursively from the top end, and compute
    bit-identical edge costs on integer-valued data; on 20,000 random inputs (all
    n < 120, every k) the divide and conquer returned the shortest path's
    partition except on 20 inputs made of a handful of repeated non-integer values,
    where several partitions have the same SSE in real arithmetic and rounding
    separates them (SSE equal to the last bit).
    """
    v = np.ascontiguousarray(values_sorted, dtype=np.float64)
    check_kernel_input(v, k)
    if solver not in SOLVERS:
        raise InvalidParameterError(f"solver must be one of {', '.join(SOLVERS)}, got {solver!r}")
    if solver == "auto":
        solver = ("smawk" if int(k) >= SMAWK_MIN_K else "divide-and-conquer"
                  if int(k) >= MONGE_MIN_K else "shortest-path")
    if solver == "smawk":
        return optimal_sizes_smawk(v, int(k))
    if solver == "divide-and-conquer":
        return optimal_sizes_monge(v, int(k))
    return optimal_sizes(v.reshape(-1, 1), int(k))


def fixed_contiguous_sizes(n: int, k: int) -> np.ndarray:
    """Sizes of consecutive groups of k, the last one taking the remainder (k..2k-1)."""
    g = n // k
    sizes = np.full(g, k, dtype=np.int64)
    sizes[-1] += n - g * k
    return sizes


def labels_from_sorted_sizes(order: np.ndarray, sizes: np.ndarray, *, count: bool = True) -> np.ndarray:
    """Canonical labels of a partition given as consecutive runs of a permutation.

    ``order[pos]`` is the record at sorted position ``pos``; the runs of ``sizes``
    along the sorted positions are the groups. Equal to
    ``partition.canonical_labels`` of the same partition, in O(n + g log g) instead of
    a full sort of the labels. ``count``: the records count as grouped in the
    progress display (:func:`microagg_cli.progress.advance`), unless the caller counts.
    """
    order = np.asarray(order, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=np.int64)
    g = sizes.size
    starts = np.zeros(g, dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    first = np.minimum.reduceat(order, starts)  # first input position of each group
    rank = np.empty(g, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(g)  # first positions are distinct
    labels = np.empty(order.size, dtype=np.int64)
    labels[order] = np.repeat(rank, sizes)
    if count:
        advance(order.size)  # every record grouped (the progress display)
    return labels


def _as_matrix(X: np.ndarray) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise InvalidParameterError("the data matrix must be two-dimensional")
    return X


# ---------------------------------------------------------------------------
# Methods
# ---------------------------------------------------------------------------


def optimal_1d(X: np.ndarray, k: int, *, rng: np.random.Generator | None = None) -> np.ndarray:
    """Optimal univariate microaggregation (Hansen & Mukherjee).

    1. Sort the values of the single attribute (stable: ties keep input order).
    2. Find the shortest path over nodes 0..n whose edges (i, j), i+k <= j <= i+2k-1,
       cost the within-group SSE of sorted values i+1..j.
    3. The edges of the path are the groups.

    Parameters
    ----------
    X : (n, 1) float array (z-scored by the caller; the optimum does not depend on
        the scaling); not mutated.
    k : minimum group size, 2 <= k <= n.
    rng : unused (deterministic method); accepted for the common contract.

    Returns
    -------
    labels : (n,) int64, canonical; groups are contiguous in sorted order with
        k..2k-1 members and their SSE is the minimum over *all* k-partitions.

    Notes
    -----
    O(n log n) for the sort plus O(n) for the dynamic programme (numba) for every k:
    the O(n k) shortest path below k = 10, row minima of a Monge matrix from k = 10
    on (see :func:`optimal_contiguous_sizes`). Measured on 1,000,000 z-scored
    lognormal values (2-core machine, ``benchmarks/univariate.py --vs microagg1d``):
    0.22-0.27 s for the whole method at every k from 3 to 10,000 at a load of 3
    (0.39-0.45 s at a load of 11), most of it the stable sort, against 0.35-0.66 s
    (0.53-1.06 s) for microagg1d (Stamm & Schaub 2024, O(n) for every k); the first
    call in a process adds about 0.5 s to load the compiled kernels.
    microagg1d's SSE is slightly higher at small k (k = 10: 3562.4134 against
    3562.3646) because it takes every group's cost as a difference of global prefix
    sums of x and x^2: their rounding error (about eps * sum x^2) exceeds the SSE of
    k neighbouring values where the data are dense, so its choices there follow
    rounding noise. The kernels here sum only the values of the candidate group (or
    of a block of 3k - 1 values), relative to one of them.
    Ties: equal values stay in input order; among partitions of equal computed SSE
    the one whose last (largest-valued) group is smallest wins, recursively.

    References
    ----------
    Hansen, S. L. & Mukherjee, S. (2003). A polynomial algorithm for optimal
    univariate microaggregation. IEEE Transactions on Knowledge and Data Engineering
    15(4), 1043-1044.
    Stamm, F. I. & Schaub, M. T. (2024). Faster optimal univariate
    microaggregation. Transactions on Machine Learning Research (arXiv:2401.02381).

    Examples
    --------
    >>> X = np.array([[6.0], [2.0], [0.7], [1.1], [5.0], [1.0], [5.1]])
    >>> optimal_1d(X, 3).tolist()
    [0, 1, 1, 1, 0, 1, 0]
    """
    X = _as_matrix(X)
    n = check_k(X, k)
    if X.shape[1] != 1:
        raise InvalidParameterError(
            f"optimal-1d works on one attribute, got a block of {X.shape[1]}; "
            "use individual-ranking --optimal for several attributes"
        )
    x = X[:, 0]
    order = sort_order(x)
    sizes = optimal_contiguous_sizes(x[order], k)
    assert int(sizes.sum()) == n
    return labels_from_sorted_sizes(order, sizes)


def individual_ranking(X: np.ndarray, k: int, *, rng: np.random.Generator | None = None,
                       optimal: bool = False) -> np.ndarray:
    """Individual ranking: every attribute microaggregated on its own.

    For each column j: sort its values (stable), then either cut the sorted column
    into consecutive groups of k with the last group taking the remainder (k..2k-1),
    or, with ``optimal=True``, use the optimal univariate partition of
    :func:`optimal_1d`. Each column gets its own partition.

    Parameters
    ----------
    X : (n, p) float array (z-scored by the caller; the partitions do not depend on
        the scaling); not mutated.
    k : minimum group size, 2 <= k <= n.
    rng : unused (deterministic method).
    optimal : use the optimal univariate partition per column.

    Returns
    -------
    labels : (n, p) int64; column j is the canonical partition of attribute j, every
        group with k..2k-1 records.

    Notes
    -----
    O(p n log n) (plus O(p n k) with ``optimal``). The result is k-anonymous per
    attribute only: the combination of several protected attributes usually
    identifies groups much smaller than k (higher disclosure risk than a joint
    partition). Ties: equal values keep input order.

    References
    ----------
    Defays, D. & Nanopoulos, P. (1993). Panels of enterprises and confidentiality:
    the small aggregates method. Proceedings of the 1992 Symposium on Design and
    Analysis of Longitudinal Surveys, Statistics Canada, 195-204.
    Domingo-Ferrer, J. & Mateo-Sanz, J. M. (2002). Practical data-oriented
    microaggregation for statistical disclosure control. IEEE TKDE 14(1), 189-201.

    Examples
    --------
    >>> X = np.array([[1.0, 9.0], [2.0, 1.0], [3.0, 8.0], [4.0, 2.0]])
    >>> individual_ranking(X, 2).tolist()
    [[0, 0], [0, 1], [1, 0], [1, 1]]
    """
    X = _as_matrix(X)
    n = check_k(X, k)
    out = np.empty(X.shape, dtype=np.int64)
    fixed = fixed_contiguous_sizes(n, k)
    for j in range(X.shape[1]):
        order = sort_order(X[:, j])
        sizes = optimal_contiguous_sizes(X[order, j], k) if optimal else fixed
        out[:, j] = labels_from_sorted_sizes(order, sizes, count=False)
        advance(n * (j + 1) // X.shape[1] - n * j // X.shape[1])  # a column's share of the records
    return out


@method_contract
def ufs(X: np.ndarray, k: int, *, rng: np.random.Generator | None = None, order: str = "fpc",
        descending: bool = False) -> np.ndarray:
    """Univariate fixed size microaggregation on a sorted axis.

    1. Project every record on the axis named by ``order`` (``sz`` sum of z-scores,
       ``fpc`` first principal component, ``pv:J`` column J; see ``_axes.py``).
    2. Sort the records by it (stable; ascending unless ``descending``).
    3. Consecutive groups of k records; the last group takes the remainder (k..2k-1).

    {method contract}
    rng : unused (deterministic method).
    order : ``"fpc"`` (default), ``"sz"`` or ``"pv:J"``.
    descending : sort from the largest projected value down.

    Returns
    -------
    labels : (n,) int64, canonical; all groups of size k except the last one.

    Notes
    -----
    O(n p) for the axis plus O(n log n) for the sort. Ties (equal projected values)
    keep input order in both directions.

    References
    ----------
    Defays, D. & Anwar, M. N. (1998). Masking microdata using micro-aggregation.
    Journal of Official Statistics 14(4), 449-461.
    Domingo-Ferrer, J. & Mateo-Sanz, J. M. (2002). Practical data-oriented
    microaggregation for statistical disclosure control. IEEE TKDE 14(1), 189-201.

    Examples
    --------
    >>> X = np.array([[3.0, 0.0], [0.0, 1.0], [2.0, 5.0], [1.0, 4.0]])
    >>> ufs(X, 2, order="pv:0").tolist()
    [0, 1, 0, 1]
    """
    X = _as_matrix(X)
    n = check_k(X, k)
    perm = sort_order(projection_axis(X, order), descending=descending)
    return labels_from_sorted_sizes(perm, fixed_contiguous_sizes(n, k))


def simple(X: np.ndarray, k: int, *, rng: np.random.Generator | None = None) -> np.ndarray:
    """Simple microaggregation: consecutive groups of k records in file order.

    Records 1..k form the first group, k+1..2k the second, and so on; the last group
    takes the remainder (k..2k-1 records). The values are not looked at.

    Parameters
    ----------
    X : (n, p) float array; not mutated (only its number of rows is used).
    k : minimum group size, 2 <= k <= n.
    rng : unused (deterministic method).

    Returns
    -------
    labels : (n,) int64, canonical (already non-decreasing).

    Notes
    -----
    O(n). A baseline: its information loss shows what a method gains over ignoring
    the data (sdcMicro's ``simple`` method does the same).

    References
    ----------
    Templ, M., Kowarik, A. & Meindl, B. (2015). Statistical disclosure control for
    micro-data using the R package sdcMicro. Journal of Statistical Software 67(4)
    (method ``simple`` of ``microaggregation``).

    Examples
    --------
    >>> simple(np.zeros((7, 1)), 3).tolist()
    [0, 0, 0, 1, 1, 1, 1]
    """
    X = _as_matrix(X)
    n = check_k(X, k)
    advance(n)
    return np.minimum(np.arange(n, dtype=np.int64) // k, n // k - 1)


_ORDER = ParamSpec(
    "order", "str", "fpc",
    "sorting axis: fpc (first principal component), sz (sum of z-scores) or pv:COLUMN",
    choices=("fpc", "sz", "pv:"),
)

SPECS: tuple[MethodSpec, ...] = (
    MethodSpec(name="optimal-1d", cost=CostModel(0.02, 1.1), func=optimal_1d, summary="exact optimal univariate microaggregation (one attribute; shortest path, groups k..2k-1)",
               reference="Hansen & Mukherjee (2003), A polynomial algorithm for optimal univariate microaggregation, IEEE TKDE 15(4)", max_columns=1),
    MethodSpec(name="individual-ranking", cost=CostModel(0.03, 1.1), func=individual_ranking, summary="each attribute grouped on its own (k-anonymous per attribute only)",
               reference="Defays & Nanopoulos (1993), Panels of enterprises and confidentiality: the small aggregates method, Proc. Symposium on Longitudinal Surveys, Statistics Canada", output="column_labels",
               params=(ParamSpec("optimal", "bool", False, "use the exact optimal univariate partition on each attribute"),)),
    MethodSpec(name="ufs", cost=CostModel(0.02, 1.1), func=ufs, summary="univariate fixed size: sort records on one axis, consecutive groups of k",
               reference="Defays & Anwar (1998), Masking microdata using micro-aggregation, Journal of Official Statistics 14(4)",
               params=(_ORDER,
                       ParamSpec("descending", "bool", False, "sort from the largest axis value down"))),
    MethodSpec(name="simple", cost=CostModel(0.01, 1.0), func=simple, summary="baseline: consecutive groups of k records in file order",
               reference="Templ, Kowarik & Meindl (2015), Statistical disclosure control for micro-data using the R package sdcMicro, Journal of Statistical Software 67(4)"),
)
