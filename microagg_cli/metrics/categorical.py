"""Measures for categorical keys: how much a release changed them, and k over all keys.

Every function takes integer category codes coded jointly for the original and the
released file (the same category has the same code in both; the caller codes them),
as (n, q) arrays with rows paired by record. No original value enters a result: only
shares, distances and class sizes.

* :func:`changed_share` -- per key, the share of records whose released category
  differs from their own (0 = untouched; the share of records "perturbed" on that key).
* :func:`tv_distances` -- the total-variation distance between the original and the
  released one-way table of every key and two-way table of every pair of keys:
  ``TV = 1/2 * sum_cells |p_orig(cell) - p_released(cell)|``, the largest difference of
  a share of records any set of cells can show (0 = same table, 1 = disjoint).
* :func:`released_k` -- k over the released keys: the smallest class of identical
  released rows and the share of records in classes smaller than k.

Examples
--------
>>> o = np.array([[0, 0], [0, 1], [1, 1], [1, 1]])
>>> r = np.array([[0, 1], [0, 1], [1, 1], [1, 1]])
>>> changed_share(o, r).tolist()
[0.0, 0.25]
>>> tv = tv_distances(o, r)
>>> tv["one_way"], tv["two_way"]
([0.0, 0.25], [[0, 1, 0.25]])
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["changed_share", "tv_distance", "tv_distances", "released_k", "categorical_measures"]


def _codes(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=np.int64)
    return a.reshape(-1, 1) if a.ndim == 1 else a


def changed_share(original: np.ndarray, released: np.ndarray) -> np.ndarray:
    """(q,) share of records whose category changed, per key."""
    o, r = _codes(original), _codes(released)
    if o.shape[0] == 0:
        return np.zeros(o.shape[1])
    return (o != r).mean(axis=0)


def tv_distance(original: np.ndarray, released: np.ndarray) -> float:
    """Total-variation distance between the tables of the rows of ``original`` and of
    ``released`` ((n, c) codes: a one-way table for c = 1, two-way for c = 2...)."""
    o, r = _codes(original), _codes(released)
    n = o.shape[0]
    if n == 0:
        return 0.0
    both = np.vstack([o, r])
    _, cell = np.unique(both, axis=0, return_inverse=True)
    cell = cell.reshape(-1)
    cells = int(cell.max()) + 1
    po = np.bincount(cell[:n], minlength=cells) / n
    pr = np.bincount(cell[n:], minlength=cells) / n
    return float(0.5 * np.abs(po - pr).sum())


def tv_distances(original: np.ndarray, released: np.ndarray) -> dict[str, Any]:
    """TV distances of every key's one-way table and every pair's two-way table
    (``two_way``: ``[i, j, tv]`` with key positions i < j), with their maxima."""
    o, r = _codes(original), _codes(released)
    q = o.shape[1]
    one = [tv_distance(o[:, j], r[:, j]) for j in range(q)]
    two = [[i, j, tv_distance(o[:, [i, j]], r[:, [i, j]])] for i in range(q) for j in range(i + 1, q)]
    return {"one_way": one, "two_way": two, "max_one_way": max(one, default=0.0),
            "max_two_way": max((t for _, _, t in two), default=0.0),
            "mean_two_way": float(np.mean([t for _, _, t in two])) if two else 0.0}


def released_k(released: np.ndarray, k: int) -> dict[str, Any]:
    """k over the released keys ((n, c) float or integer matrix of every released key):
    the smallest class of identical rows, the share of records in classes below k, and
    whether every class holds at least k (NaN equals NaN)."""
    X = np.asarray(released, dtype=np.float64)
    if X.shape[0] == 0:
        return {"k": int(k), "k_min": None, "share_below_k": None, "k_anonymous": None}
    nan = np.isnan(X)
    key = np.hstack([np.where(nan, 0.0, X) + 0.0, nan.astype(np.float64)])
    _, inv, counts = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    sizes = counts[inv.reshape(-1)]
    return {"k": int(k), "k_min": int(sizes.min()), "share_below_k": float((sizes < k).mean()),
            "records_below_k": int((sizes < k).sum()), "k_anonymous": bool(sizes.min() >= k)}


def categorical_measures(names: list[str], original: np.ndarray, released: np.ndarray,
                         continuous_released: np.ndarray, continuous_names: list[str], k: int) -> dict[str, Any]:
    """The evaluate report's ``categorical`` section: per key the changed share and the
    one-way TV distance, the two-way TV distance per pair, and k over every released key
    (the categorical keys and the evaluated continuous columns)."""
    o, r = _codes(original), _codes(released)
    share = changed_share(o, r)
    tv = tv_distances(o, r)
    pairs = [{"keys": [names[i], names[j]], "tv": t} for i, j, t in tv["two_way"]]
    keys = np.hstack([r.astype(np.float64), np.asarray(continuous_released, dtype=np.float64).reshape(r.shape[0], -1)])
    return {
        "keys": list(names),
        "per_key": [{"name": c, "changed_share": float(share[j]), "tv_one_way": tv["one_way"][j]}
                    for j, c in enumerate(names)],
        "mean_changed_share": float(share.mean()) if share.size else None,
        "tv_two_way": pairs,
        "max_tv_one_way": tv["max_one_way"],
        "max_tv_two_way": tv["max_two_way"],
        "released_k": {**released_k(keys, k), "columns": list(names) + list(continuous_names)},
    }
