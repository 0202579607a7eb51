"""Group statistics before and after protection, and their relative change.

Per group: n, means, medians and weighted totals of each protected column.

The publication-table view of utility (sdcMicro's ``summary.micro`` and the tables a
statistical office releases): does protection keep the means and totals of each
stratum or category? Microaggregation within strata keeps each stratum's (weighted)
mean and total exactly.

What the report may show without ``internal``. The protected figures (means, medians,
totals of the protected file) can be computed by anyone from the released file and are
always shown. An original group mean or total over at least k records is an aggregate,
as in any published table, so its relative change is shown (from it and the protected
figure the original aggregate follows: that is accepted, as for any released table).
Two things are held back: every figure of a group of fewer than k records (its mean is
close to, and for one record equal to, an original value; only n is shown and the
group is marked ``suppressed``), and the original medians with their relative changes
(a median is one record's original value, or the mean of two, whatever the group size).
With ``internal`` every original figure is shown.

References
----------
Templ, Kowarik & Meindl (2015), Statistical disclosure control for micro-data using the
R package sdcMicro, Journal of Statistical Software 67(4) (``summary.micro``).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import DataError

__all__ = ["MAX_GROUPS", "group_codes", "group_table", "relative_change", "GROUPS_RULE", "GROUP_FORMULA",
           "REFERENCE"]

#: More groups than this is refused (a --by column that identifies records, not groups).
MAX_GROUPS = 10_000
REFERENCE = ("Templ, Kowarik & Meindl (2015), Statistical disclosure control for micro-data using the R "
             "package sdcMicro, J. Statistical Software 67(4)")
GROUPS_RULE = ("without --internal: groups of fewer than k records show only n (suppressed); original medians "
               "and their changes are left out (a median is an original value); relative changes of means "
               "and totals are shown (aggregates of at least k records)")
GROUP_FORMULA = ("change = 100 * (protected - original) / |original| per group, column and statistic (mean: "
                 "weighted with --weights; total: sum of weight * value, with --weights only; median: "
                 "unweighted); group_mean_change = the largest |change| of a group mean over the shown groups")


def relative_change(original: float, protected: float) -> float | None:
    """100 * (protected - original) / |original| (None when the original is 0 and they differ; 0 when equal).

    >>> relative_change(200.0, 210.0)
    5.0
    """
    if original == protected:
        return 0.0
    if original == 0:
        return None
    return float(100.0 * (protected - original) / abs(original))


def group_codes(keys: Sequence[np.ndarray]) -> tuple[np.ndarray, list[tuple[Any, ...]]]:
    """Group number of every record from one or more key arrays, and each group's key
    values; groups in sorted order of their keys (numbers before strings)."""
    if not keys:
        raise DataError("no grouping column (group_table takes codes of zeros for one group)")
    n = len(keys[0])
    per: list[np.ndarray] = []
    uniq: list[np.ndarray] = []
    for a in keys:
        u, inv = np.unique(np.asarray(a), return_inverse=True)
        per.append(inv.reshape(n))
        uniq.append(u)
    combined = np.stack(per, axis=1) if len(per) > 1 else per[0][:, None]
    rows, codes = np.unique(combined, axis=0, return_inverse=True)
    labels = [tuple(_plain(uniq[j][r[j]]) for j in range(len(keys))) for r in rows]
    return codes.reshape(n).astype(np.int64), labels


def _plain(v: Any) -> Any:
    if isinstance(v, (np.floating, float)):
        f = float(v)
        return int(f) if f.is_integer() and abs(f) < 2**53 else f
    if isinstance(v, np.integer):
        return int(v)
    return str(v)


def _medians(x: np.ndarray, order: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Median of every group; ``order`` lists the records group by group."""
    if counts.size == 1:  # one group: a selection, not a sort
        return np.array([float(np.median(x))])
    xs = x[order]
    out = np.empty(counts.size)
    for g, (a, c) in enumerate(zip(starts.tolist(), counts.tolist())):
        v = np.sort(xs[a:a + c])  # each group sorted on its own: O(n log(n / G)) in all
        out[g] = (v[(c - 1) // 2] + v[c // 2]) / 2
    return out


def group_table(
    X: np.ndarray,
    Xp: np.ndarray,
    codes: np.ndarray,
    labels: Sequence[tuple[Any, ...]],
    *,
    names: Sequence[str],
    by: Sequence[str],
    k: int,
    weights: np.ndarray | None = None,
    internal: bool = False,
) -> dict[str, Any]:
    """The group statistics table (JSON-ready).

    Parameters
    ----------
    X, Xp : (n, p) original and protected values of the columns ``names`` (finite).
    codes : (n,) group number of each record (0 .. G-1, every group non-empty);
        ``labels[g]``: the values of the ``by`` columns of group g.
    k : groups smaller than k are suppressed unless ``internal``.
    weights : (n,) positive weights (weighted means and totals) or None.
    internal : show the original figures (medians included) and small groups.

    Returns
    -------
    ``{"by", "weighted", "k", "internal", "rule", "columns", "count", "suppressed",
    "max_abs_mean_change", "rows"}``; a row: ``{"group": {col: value}, "n",
    "suppressed", "columns": {name: {...}}}``.

    Notes
    -----
    O(n log(n / G)) per column (each group's values sorted on their own).
    """
    X = np.asarray(X, dtype=np.float64)
    Xp = np.asarray(Xp, dtype=np.float64)
    codes = np.asarray(codes, dtype=np.int64)
    G = len(labels)
    if G > MAX_GROUPS:
        raise DataError(f"--by {','.join(by)} makes {G} groups, more than {MAX_GROUPS}: group by a "
                        "stratum or category, not an identifier")
    counts = np.bincount(codes, minlength=G)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    order = np.argsort(codes, kind="stable")
    w = np.ones(X.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    wsum = np.bincount(codes, weights=w, minlength=G)
    stats: dict[str, dict[str, np.ndarray]] = {}
    for j, name in enumerate(names):
        s: dict[str, np.ndarray] = {}
        for side, M in (("original", X), ("protected", Xp)):
            tot = np.bincount(codes, weights=w * M[:, j], minlength=G)
            s[f"mean_{side}"] = tot / wsum
            s[f"total_{side}"] = tot
            s[f"median_{side}"] = _medians(M[:, j], order, starts, counts)
        stats[name] = s
    rows = []
    worst: float | None = None
    suppressed = 0
    for g in range(G):
        small = bool(counts[g] < k) and not internal
        row: dict[str, Any] = {"group": dict(zip(by, labels[g])), "n": int(counts[g]), "suppressed": small}
        if weights is not None:
            row["weight_total"] = None if small else float(wsum[g])
        if small:
            suppressed += 1
            row["columns"] = None
            rows.append(row)
            continue
        cols: dict[str, Any] = {}
        for name in names:
            s = stats[name]
            c: dict[str, Any] = {
                "mean_protected": float(s["mean_protected"][g]),
                "mean_change": relative_change(float(s["mean_original"][g]), float(s["mean_protected"][g])),
                "median_protected": float(s["median_protected"][g]),
            }
            if weights is not None:
                c["total_protected"] = float(s["total_protected"][g])
                c["total_change"] = relative_change(float(s["total_original"][g]), float(s["total_protected"][g]))
            if internal:
                c["mean_original"] = float(s["mean_original"][g])
                c["median_original"] = float(s["median_original"][g])
                c["median_change"] = relative_change(c["median_original"], c["median_protected"])
                if weights is not None:
                    c["total_original"] = float(s["total_original"][g])
            if c["mean_change"] is not None:
                worst = abs(c["mean_change"]) if worst is None else max(worst, abs(c["mean_change"]))
            cols[name] = c
        row["columns"] = cols
        rows.append(row)
    return {
        "by": list(by),
        "weighted": weights is not None,
        "k": int(k),
        "internal": bool(internal),
        "rule": GROUPS_RULE,
        "columns": list(names),
        "count": G,
        "suppressed": suppressed,
        "max_abs_mean_change": worst,
        "rows": rows,
    }


def group_mean_change(X: np.ndarray, Xp: np.ndarray) -> float | None:
    """The largest |relative change| (percent) of a column mean, all records one group."""
    X = np.asarray(X, dtype=np.float64)
    Xp = np.asarray(Xp, dtype=np.float64)
    codes = np.zeros(X.shape[0], dtype=np.int64)
    names = [f"c{j}" for j in range(X.shape[1])]
    return group_table(X, Xp, codes, [("all",)], names=names, by=["all"], k=1)["max_abs_mean_change"]
