"""Rank-based interval disclosure: the window of ID(p) and the disclosed counts.

The per-attribute counts of disclosed values that every scenario sums (Mateo-Sanz, J. M., Sebe, F. &
Domingo-Ferrer, J. (2004), Outlier protection in continuous microdata masking, PSD 2004,
LNCS 3050). The measure of one scenario is :func:`~microagg_cli.metrics.risk.interval_disclosure`,
sdcMicro's dRisk is :func:`~microagg_cli.metrics.risk.sdid` (both built on the
evaluator).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

__all__ = ["DEFAULT_ID_PERCENTS", "id_window", "id_hits"]

#: ID(p) is computed for p = 1..10 percent.
DEFAULT_ID_PERCENTS: tuple[int, ...] = tuple(range(1, 11))


def id_window(n: int, percent: float) -> int:
    """ID rank window w = floor(percent * n / 200) (the interval covers percent % of n).

    >>> id_window(1000, 1), id_window(1000, 10), id_window(150, 1)
    (5, 50, 0)
    """
    return int(math.floor(percent * n / 200.0))


def id_hits(X: np.ndarray, sorted_cols: list[np.ndarray], Rp: np.ndarray,
            percents: Sequence[float]) -> np.ndarray:
    """(p, len(percents)) number of records whose original lies in the interval.

    Per attribute v and percent q: the protected value's rank rho = ``Rp[:, v]`` in the
    sorted original column ``sorted_cols[v]`` (:func:`.common.ranks`' ``Rp``), the
    interval of original values with ranks in [rho - w, rho + w] (clipped),
    w = :func:`id_window`; counted by value.
    """
    n, p = X.shape
    hits = np.zeros((p, len(percents)), dtype=np.int64)
    for v in range(p):
        s = sorted_cols[v]
        rho = Rp[:, v]
        for qi, q in enumerate(percents):
            w = id_window(n, q)
            lo = np.clip(rho - w, 0, n - 1)
            hi = np.clip(rho + w, 0, n - 1)
            hits[v, qi] = int(((s[lo] <= X[:, v]) & (X[:, v] <= s[hi])).sum())
    return hits
