"""The merge-and-split post-step shared by MDAV-2 (``mdav --param refine=true``) and
DBA-2 (``dba --param refine=true``).

Lin, Wen, Hsieh & Chang (2010) follow their density-based grouping (DBA-1) with a
refinement that they also apply to MDAV (MDAV-2): visit the groups in the reverse of
their creation order; dissolve a group when sending each of its records to the
nearest other group lowers the total SSE; finally re-partition every group that has
grown beyond 2k-1 records with MDAV. This module holds that step only; it never
imports a method module (the splitter is handed in), so ``fixed_size`` and
``density`` can both use it.
"""

from __future__ import annotations

from typing import Callable, Iterable

import numpy as np

from ..partition import canonical_labels

__all__ = ["merge_split", "split_parts"]

#: A dissolution is applied only when it lowers SSE by more than this share of the
#: SSE involved (rounding noise is not an improvement).
_REL_TOL = 1e-12


def merge_split(
    X: np.ndarray,
    labels: np.ndarray,
    k: int,
    *,
    split: Callable[[np.ndarray, int], np.ndarray],
    visit: np.ndarray | None = None,
) -> np.ndarray:
    """Merge-and-split post-step (the refinement of DBA-2 and MDAV-2).

    1. Visit the groups in the order ``visit`` (default: labels from the highest
       down, i.e. the reverse of creation order when labels number the groups as
       they were created). For a group G still present, tentatively move its records,
       one by one in input order, each to the group other than G whose *current*
       centroid is nearest (centroids are updated after every move). If the total
       SSE drops, the moves are kept and G disappears; otherwise nothing changes.
    2. Every group with more than 2k-1 records is re-partitioned by ``split`` (MDAV:
       groups of k, the last k..2k-1).

    Parameters
    ----------
    X : (n, p) float array, z-scored; not mutated.
    labels : (n,) int array of group ids 0..G-1, every group >= k records.
    k : minimum group size.
    split : ``split(X_sub, k) -> labels`` partitioning a large group (e.g. ``mdav``).
    visit : optional permutation of 0..G-1, the visiting order.

    Returns
    -------
    labels : (n,) int64, canonical; every group has >= k records and the SSE is never
        larger than that of the input partition.

    Notes
    -----
    The SSE change of a dissolution is exact: removing G lowers SSE by SSE(G), and a
    record x joining a group of b records with centroid c raises it by
    b / (b + 1) * ||x - c||^2. A dissolution is applied only when it lowers SSE by
    more than a relative 1e-12 (rounding noise). Splitting a group never raises SSE
    (a group's SSE is at least the sum of its parts' SSEs). Ties: a record equally
    near two groups joins the one with the lower label. Cost O(n G p) for the visit
    (G groups) plus the splits.

    References
    ----------
    Lin et al. (2010), the DBA-2 step: see :func:`microagg_cli.methods.density.dba`.

    Examples
    --------
    >>> from microagg_cli.methods.fixed_size import mdav
    >>> X = np.array([[0.0], [1.0], [1.4], [50.0], [49.0], [51.0]])
    >>> merge_split(X, np.array([0, 0, 1, 1, 2, 2]), 2, split=mdav).tolist()
    [0, 0, 0, 1, 1, 1]
    """
    X = np.asarray(X, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64).copy()
    n_groups = int(labels.max()) + 1 if labels.size else 0
    counts = np.bincount(labels, minlength=n_groups).astype(np.float64)
    sums = np.zeros((n_groups, X.shape[1]))
    np.add.at(sums, labels, X)
    alive = counts > 0
    order = np.arange(n_groups - 1, -1, -1) if visit is None else np.asarray(visit)
    for g in order:
        g = int(g)
        if not alive[g]:
            continue
        members = np.flatnonzero(labels == g)
        others = np.flatnonzero(alive)
        others = others[others != g]
        if others.size == 0:
            continue
        Xg = X[members]
        removed = float(((Xg - sums[g] / counts[g]) ** 2).sum())
        s = sums[others].copy()
        c = counts[others].copy()
        added = 0.0
        target = np.empty(members.size, dtype=np.int64)
        for t, x in enumerate(Xg):
            diff = s / c[:, None] - x
            d = np.einsum("ij,ij->i", diff, diff)
            h = int(np.argmin(d))  # first (lowest label) on ties
            added += c[h] / (c[h] + 1.0) * float(d[h])
            s[h] += x
            c[h] += 1.0
            target[t] = h
        if added - removed < -_REL_TOL * max(removed + added, 1e-300):
            labels[members] = others[target]
            sums[others] = s
            counts[others] = c
            sums[g] = 0.0
            counts[g] = 0.0
            alive[g] = False
    return split_parts(X, (np.flatnonzero(labels == g) for g in range(n_groups) if alive[g]), k, split)


def split_parts(X: np.ndarray, parts: Iterable[np.ndarray], k: int,
                split: Callable[[np.ndarray, int], np.ndarray]) -> np.ndarray:
    """Canonical labels from disjoint ``parts`` (index arrays covering the records):
    a part of at most 2k-1 records is one group, a larger one is partitioned by
    ``split(X[part], k)`` (e.g. ``mdav``; groups of k..2k-1). Groups are numbered
    part by part before the labels are made canonical.

    Examples
    --------
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0], [9.0], [10.0], [11.0]])
    >>> halves = lambda Xs, k: (np.arange(len(Xs)) >= len(Xs) // 2).astype(np.int64)
    >>> split_parts(X, [np.array([4, 5, 6]), np.arange(4)], 2, halves).tolist()
    [0, 0, 1, 1, 2, 2, 2]
    """
    out = np.full(X.shape[0], -1, dtype=np.int64)
    next_label = 0
    for m in parts:
        if m.size > 2 * k - 1:
            sub = np.asarray(split(X[m], k), dtype=np.int64)
            out[m] = sub + next_label
            next_label += int(sub.max()) + 1
        else:
            out[m] = next_label
            next_label += 1
    return canonical_labels(out)
