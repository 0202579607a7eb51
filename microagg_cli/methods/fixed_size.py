"""Distance-based fixed-size heuristics: the MDAV family and its relatives.

Every function takes a validated (n, p) float matrix -- z-scored by the caller -- and
the minimum group size ``k`` and returns canonical labels (groups numbered in order of
first appearance). Ties between equal distances go to the record that comes first in
the input.
"""

from __future__ import annotations

import numpy as np

from ..partition import canonical_labels
from ._common import check_k, farthest, smallest_m, sq_dist_to
from ._spec import MethodSpec

__all__ = ["mdav", "SPECS"]


def _take_group(X: np.ndarray, rem: np.ndarray, centre_pos: int, k: int) -> np.ndarray:
    """Positions (into ``rem``) of the record at ``centre_pos`` and its k-1 nearest."""
    d = sq_dist_to(X[rem], X[rem[centre_pos]])
    d[centre_pos] = -1.0  # the centre itself always belongs to its group
    return smallest_m(d, k)


def mdav(X: np.ndarray, k: int, *, rng: np.random.Generator | None = None) -> np.ndarray:
    """MDAV-generic: maximum distance to average vector.

    While at least 3k records remain: r = the record farthest from the centroid of
    the remaining records, s = the record farthest from r (chosen before r's group is
    removed); r and its k-1 nearest form a group, then s and its k-1 nearest among the
    rest. With 2k..3k-1 left, one more group around the record farthest from the
    centroid; the last k..2k-1 records form the last group.

    Parameters
    ----------
    X : (n, p) float array, z-scored; not mutated.
    k : minimum group size, 2 <= k <= n.
    rng : unused (deterministic method); accepted for the common contract.

    Returns
    -------
    labels : (n,) int64, canonical; all groups of size k except the last (k..2k-1).

    Notes
    -----
    Ties (equal distances) go to the record that comes first in the input. This is the
    straightforward O(n^2 p / k) definition; it is the reference implementation.

    References
    ----------
    Domingo-Ferrer, J. & Torra, V. (2005). Ordinal, continuous and heterogeneous
    k-anonymity through microaggregation. Data Mining and Knowledge Discovery 11(2).
    Domingo-Ferrer, J. & Mateo-Sanz, J. M. (2002). Practical data-oriented
    microaggregation for statistical disclosure control. IEEE TKDE 14(1).

    Examples
    --------
    >>> X = np.array([[0.0], [1.0], [2.0], [10.0], [11.0], [12.0]])
    >>> mdav(X, 3).tolist()
    [0, 0, 0, 1, 1, 1]
    """
    X = np.asarray(X, dtype=np.float64)
    n = check_k(X, k)
    labels = np.full(n, -1, dtype=np.int64)
    rem = np.arange(n)
    g = 0
    while rem.size >= 3 * k:
        Xr = X[rem]
        r = farthest(sq_dist_to(Xr, Xr.mean(axis=0)))
        s_index = rem[farthest(sq_dist_to(Xr, Xr[r]))]
        grp = _take_group(X, rem, r, k)
        labels[rem[grp]] = g
        g += 1
        rem = np.delete(rem, grp)
        s = int(np.searchsorted(rem, s_index))
        grp = _take_group(X, rem, s, k)
        labels[rem[grp]] = g
        g += 1
        rem = np.delete(rem, grp)
    if rem.size >= 2 * k:
        Xr = X[rem]
        r = farthest(sq_dist_to(Xr, Xr.mean(axis=0)))
        grp = _take_group(X, rem, r, k)
        labels[rem[grp]] = g
        g += 1
        rem = np.delete(rem, grp)
    labels[rem] = g
    return canonical_labels(labels)


SPECS: tuple[MethodSpec, ...] = (
    MethodSpec(
        name="mdav",
        func=mdav,
        summary="MDAV-generic: groups of k around the records farthest from the centroid (the default)",
        reference=(
            "Domingo-Ferrer & Torra (2005), Ordinal, continuous and heterogeneous "
            "k-anonymity through microaggregation, DMKD 11(2)"
        ),
    ),
)
