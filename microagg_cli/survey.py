"""Survey realities: strata, small-strata policies and grouping with missing values.

numpy only. The block loop (:mod:`microagg_cli.protection.table`) uses these to
protect each stratum of each block on its own, to merge or suppress strata smaller
than k, and to group records that have missing protected values. The name covers both
halves, which a name like ``strata`` would not: they are what survey files bring that
the method contract (a complete numeric matrix, one population) leaves out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import InfeasibleError
from .methods._common import check_k, smallest_m
from .partition import canonical_labels

__all__ = ["Strata", "stratify", "resolve_small_strata", "mdav_available", "nan_zscore"]


@dataclass
class Strata:
    """Rows of each stratum, in order of first appearance of its key.

    Attributes
    ----------
    keys : one tuple of key values (as text) per stratum.
    members : row indices of each stratum (increasing).
    merged : ``{absorbed key: key it was merged into}`` (``merge`` policy).
    suppressed : keys of strata whose protected values are blanked (``suppress``).
    """

    keys: list[tuple[str, ...]]
    members: list[np.ndarray]
    merged: dict[tuple[str, ...], tuple[str, ...]] = field(default_factory=dict)
    suppressed: list[tuple[str, ...]] = field(default_factory=list)


def stratify(key_columns: list[np.ndarray] | None, n: int) -> Strata:
    """Group rows by the tuple of their key values (one stratum when no key)."""
    if not key_columns:
        return Strata([()], [np.arange(n)])
    keys = list(zip(*[np.asarray(c).astype(str).tolist() for c in key_columns]))
    index: dict[tuple[str, ...], list[int]] = {}
    for i, key in enumerate(keys):
        index.setdefault(key, []).append(i)
    return Strata(list(index), [np.asarray(v, dtype=np.int64) for v in index.values()])


def _describe(key: tuple[str, ...]) -> str:
    text = "/".join(key) if key else "(all)"
    return text if len(text) <= 40 else text[:40] + "..."  # a log line stays a line


def resolve_small_strata(strata: Strata, Z: np.ndarray, k: int, policy: str) -> Strata:
    """Apply the small-strata policy to strata with fewer than ``k`` records.

    - ``error``: :class:`InfeasibleError` listing every small stratum;
    - ``merge``: repeatedly the smallest stratum below k (first in input order on
      ties) joins the stratum whose centroid (mean of the z-scored block) is nearest
      in Euclidean distance (first on ties); centroids are recomputed after every merge;
    - ``suppress``: small strata are left out of the grouping; their protected values
      are blanked by the caller.
    """
    sizes = [m.size for m in strata.members]
    small = [strata.keys[i] for i, s in enumerate(sizes) if s < k]
    if not small:
        return strata
    if len(strata.keys) == 1 and strata.keys[0] == ():
        n = sizes[0]
        if n < 2:  # no k >= 2 fits: saying "choose k <= 1" would send the user to a k that is no protection
            raise InfeasibleError(
                ("only 1 record to group; " if n == 1 else "no record to group; ")
                + "microaggregation needs groups of at least k >= 2 records, so "
                + ("a single record cannot be protected" if n == 1 else "there is nothing to protect")
                + "; nothing was written")
        raise InfeasibleError(f"k={k} exceeds the {n} record(s) to group; choose k <= {n}")
    if policy == "error":
        index = {key: i for i, key in enumerate(strata.keys)}
        listed = ", ".join(f"{_describe(key)} ({sizes[index[key]]})" for key in small[:10])
        if len(small) > 10:
            listed += ", ..."
        raise InfeasibleError(
            f"{len(small)} stratum/strata have fewer than k={k} records: {listed}; "
            "use --small-strata merge|suppress"
        )
    keys = list(strata.keys)
    members = [m.copy() for m in strata.members]
    if policy == "suppress":
        keep = [i for i, m in enumerate(members) if m.size >= k]
        if not keep:
            raise InfeasibleError(
                f"every stratum has fewer than k={k} records (the largest {max(sizes)}): suppressing them all "
                "would release nothing; choose a smaller k, fewer strata columns or --small-strata merge")
        return Strata([keys[i] for i in keep], [members[i] for i in keep], {}, small)
    merged: dict[tuple[str, ...], tuple[str, ...]] = {}
    while True:
        sizes = np.array([m.size for m in members])
        below = np.flatnonzero(sizes < k)
        if below.size == 0:
            break
        if len(members) == 1:
            raise InfeasibleError(f"all strata together hold {sizes[0]} records, fewer than k={k}")
        i = int(below[np.argmin(sizes[below])])  # smallest, first on ties
        cents = np.array([Z[m].mean(axis=0) for m in members])
        d = ((cents - cents[i]) ** 2).sum(axis=1)
        d[i] = np.inf
        j = int(np.argmin(d))
        merged[keys[i]] = keys[j]
        for a, b in list(merged.items()):  # keep the map pointing at the final stratum
            if b == keys[i]:
                merged[a] = keys[j]
        members[j] = np.sort(np.concatenate([members[j], members[i]]))
        del members[i], keys[i]
    return Strata(keys, members, merged, [])


def nan_zscore(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Z-score ignoring NaN (population sd); constant/empty columns get scale 1."""
    with np.errstate(invalid="ignore"):
        obs = ~np.isnan(X)
        cnt = obs.sum(axis=0)
        mean = np.where(cnt > 0, np.nansum(X, axis=0) / np.maximum(cnt, 1), 0.0)
        var = np.where(cnt > 0, np.nansum((X - mean) ** 2, axis=0) / np.maximum(cnt, 1), 0.0)
    sd = np.sqrt(var)
    scale = np.where(sd > 0, sd, 1.0)
    return (X - mean) / scale, mean, scale


def _masked_sq_dist(Z: np.ndarray, obs: np.ndarray, point: np.ndarray, point_obs: np.ndarray) -> np.ndarray:
    """Squared distances over coordinates observed in both, rescaled by p / shared.

    Rows sharing no observed coordinate with ``point`` get +inf.
    """
    p = Z.shape[1]
    both = obs & point_obs
    diff = np.where(both, Z - np.where(point_obs, point, 0.0), 0.0)
    shared = both.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        # same arithmetic as methods._common.sq_dist_to on complete rows (einsum)
        d = np.einsum("ij,ij->i", diff, diff) * (p / shared)
    return np.where(shared > 0, d, np.inf)


def _nan_centroid(Z: np.ndarray, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    cnt = obs.sum(axis=0)
    c = np.where(cnt > 0, np.where(obs, Z, 0.0).sum(axis=0) / np.maximum(cnt, 1), 0.0)
    return c, cnt > 0


def mdav_available(Z: np.ndarray, k: int) -> np.ndarray:
    """MDAV-generic on records with missing values, using the observed attributes only.

    Distances use the coordinates observed in both points, rescaled by the share
    observed (p / shared); centroids are means over the non-missing values of each
    attribute. Records with no shared coordinate are the farthest-last candidates
    (never chosen as "farthest", chosen last as "nearest"). Otherwise the steps and tie
    rules are those of ``mdav``; with no missing value the partition equals ``mdav``'s.

    Parameters
    ----------
    Z : (n, p) z-scored block with NaN for missing cells; every row has at least one
        observed value.
    k : minimum group size.

    Returns
    -------
    (n,) canonical labels; all groups k except the last (k..2k-1).

    References
    ----------
    Domingo-Ferrer & Torra (2005), Ordinal, continuous and heterogeneous k-anonymity
    through microaggregation, DMKD 11(2) (MDAV-generic); the missing-value distance is
    the usual available-case rescaling (as in Gower's general similarity coefficient).
    """
    Z = np.asarray(Z, dtype=np.float64)
    n = check_k(Z, k)
    obs = ~np.isnan(Z)
    labels = np.full(n, -1, dtype=np.int64)
    rem = np.arange(n)
    g = 0

    def farthest_from(point, point_obs, rows):
        d = _masked_sq_dist(Z[rows], obs[rows], point, point_obs)
        d = np.where(np.isinf(d), -1.0, d)
        return int(np.argmax(d))

    def take(rows, centre):
        d = _masked_sq_dist(Z[rows], obs[rows], Z[rows[centre]], obs[rows[centre]])
        d[centre] = -1.0
        return smallest_m(d, k)

    while rem.size >= 3 * k or rem.size >= 2 * k:
        c, c_obs = _nan_centroid(Z[rem], obs[rem])
        r = farthest_from(c, c_obs, rem)
        if rem.size >= 3 * k:
            s_index = rem[farthest_from(Z[rem[r]], obs[rem[r]], rem)]
            grp = take(rem, r)
            labels[rem[grp]] = g
            g += 1
            rem = np.delete(rem, grp)
            s = int(np.searchsorted(rem, s_index))
            grp = take(rem, s)
        else:
            grp = take(rem, r)
        labels[rem[grp]] = g
        g += 1
        rem = np.delete(rem, grp)
        if rem.size < 2 * k:
            break
    labels[rem] = g
    return canonical_labels(labels)
