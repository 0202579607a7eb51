"""lb_cg, the column-generation bound as a measure: per block and overall, and the
``sdc evaluate --bound cg`` section.

:func:`cg_bound_blocks` z-scores the original matrix (original means, population
standard deviations), runs :func:`.cg_bound.cg_lower_bound` on each block with a
share of the time limit and turns the SSE bounds into IL_SSE percentages;
:func:`cg_report` adds the certified gap of a protected file that is a k-partition.
The bound is that of Aloise, Hansen, Rocha & Santi (2014), "Column generation bounds
for numerical microaggregation", Journal of Global Optimization 60(2), 165-182.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np

from .cg_bound import MAX_ROWS, cg_lower_bound

__all__ = ["cg_bound_blocks", "cg_report"]


def cg_bound_blocks(
    X: np.ndarray,
    k: int,
    blocks: Sequence[Sequence[int]] | None = None,
    *,
    labels: Sequence[np.ndarray | None] | None = None,
    time_limit: float | None = 600.0,
) -> dict[str, Any]:
    """lb_cg per block and overall, on the z-scale of every measure (original means, population sds).

    Parameters
    ----------
    X : (n, p) original matrix (not z-scored).
    blocks : column positions per block (default: one block of all columns).
    labels : per block, a k-partition to start from (e.g. the protected file's classes).
    time_limit : seconds for all blocks together (shared out over the blocks left).

    Returns
    -------
    ``{"lb_cg": {"overall", "per_block"}, "cg_status": {...}, "cg_seconds": {...},
    "lp_value": {...}, "upper": {...}}``; lb_cg in IL_SSE percent; overall lb_cg is
    100 * (sum of the blocks' SSE bounds) / (total SST); overall status is "optimal"
    only when every block is. A block with more than :data:`MAX_ROWS` records or
    fewer than k gets None (status "skipped").
    """
    X = np.asarray(X, dtype=np.float64)
    n, p = X.shape
    blist = [list(range(p))] if blocks is None else [list(b) for b in blocks]
    mean = X.mean(axis=0)
    sd = X.std(axis=0)
    Z = (X - mean) / np.where(sd > 0, sd, 1.0)
    sst_col = ((Z - Z.mean(axis=0)) ** 2).sum(axis=0)
    t0 = time.perf_counter()
    lbs: list[float | None] = []
    status: list[str] = []
    secs: list[float] = []
    lps: list[float | None] = []
    ups: list[float | None] = []
    total = 0.0
    complete = True
    for b, cols in enumerate(blist):
        den = float(sst_col[cols].sum())
        if n < k or n > MAX_ROWS:
            lbs.append(None), status.append("skipped"), secs.append(0.0), lps.append(None), ups.append(None)
            complete = False
            continue
        left = None
        if time_limit is not None:
            left = max(1.0, (float(time_limit) - (time.perf_counter() - t0)) / (len(blist) - b))
        start = None if labels is None else labels[b]
        res = cg_lower_bound(Z[:, cols], k, time_limit=left, start_labels=start)
        total += res.lower
        scale = 100.0 / den if den > 0 else 0.0
        lbs.append(res.lower * scale)
        status.append(res.status)
        secs.append(res.seconds)
        lps.append(res.lp_value * scale)
        ups.append(None if res.upper is None else res.upper * scale)
    den = float(sst_col.sum())
    overall = (100.0 * total / den if den > 0 else 0.0) if complete else None
    return {
        "lb_cg": {"overall": overall, "per_block": lbs},
        "cg_status": {"overall": ("optimal" if all(s == "optimal" for s in status) else
                                  "skipped" if not complete else "time_limit"), "per_block": status},
        "cg_seconds": {"overall": time.perf_counter() - t0, "per_block": secs},
        "lp_value": {"per_block": lps},
        "upper": {"per_block": ups},
    }


def cg_report(
    X: np.ndarray,
    Xp: np.ndarray,
    k: int,
    blocks: Sequence[Sequence[int]],
    *,
    il_sse: dict[str, Any],
    partition_based: bool,
    time_limit: float | None = 600.0,
) -> dict[str, Any]:
    """The ``sdc evaluate --bound cg`` section: lb_cg, the certified gap, status and time.

    Parameters
    ----------
    X, Xp : (n, p) original and protected matrices (same rows).
    blocks : column positions per block.
    il_sse : ``{"overall", "per_block"}`` IL_SSE of the protected file (percent).
    partition_based : the protected file is a k-partition in every block; then its
        classes of identical rows start the column generation, and the gap is given.
    time_limit : seconds for all blocks together (None: until every LP is solved).

    Returns
    -------
    ``{"k", "time_limit", "lb_cg", "cg_gap", "cg_status", "cg_seconds", "lp_value"}``,
    each except k / time_limit ``{"overall", "per_block"}``; cg_gap =
    (IL_SSE - lb_cg) / IL_SSE (a share; None when IL_SSE is 0 or the protected file
    is not a k-partition, whose IL the bound does not bound).
    """
    labels = None
    if partition_based:
        labels = [np.unique(Xp[:, list(cols)], axis=0, return_inverse=True)[1].reshape(-1)
                  for cols in blocks]
    out = cg_bound_blocks(X, k, blocks, labels=labels, time_limit=time_limit)

    def gap(il: float | None, lb: float | None) -> float | None:
        if not partition_based or il is None or lb is None or il <= 0:
            return None
        return (il - lb) / il

    return {
        "k": int(k),
        "time_limit": time_limit,
        "lb_cg": out["lb_cg"],
        "cg_gap": {
            "overall": gap(il_sse.get("overall"), out["lb_cg"]["overall"]),
            "per_block": [gap(a, b) for a, b in zip(il_sse.get("per_block", []), out["lb_cg"]["per_block"])],
        },
        "cg_status": out["cg_status"],
        "cg_seconds": out["cg_seconds"],
        "lp_value": out["lp_value"],
    }
