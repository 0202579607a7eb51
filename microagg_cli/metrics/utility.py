"""Information-loss measures of a protected matrix against its original."""

from __future__ import annotations

import numpy as np

__all__ = ["il_sse"]


def il_sse(X: np.ndarray, Xp: np.ndarray) -> float:
    """IL_SSE = 100 * ||Z - Z'||^2 / ||Z - mean(Z)||^2.

    Z is ``X`` z-scored with its own means and population sds, Z' is ``Xp`` z-scored
    with the **same** means and sds (a constant column gets scale 1). For a
    centroid-replacement partition this equals 100 * SSE / SST.

    References
    ----------
    Domingo-Ferrer & Mateo-Sanz (2002), Practical data-oriented microaggregation for
    statistical disclosure control, IEEE TKDE 14(1).
    """
    X = np.asarray(X, dtype=np.float64)
    Xp = np.asarray(Xp, dtype=np.float64)
    mean = X.mean(axis=0)
    sd = X.std(axis=0)
    scale = np.where(sd > 0, sd, 1.0)
    Z = (X - mean) / scale
    Zp = (Xp - mean) / scale
    sst = float(((Z - Z.mean(axis=0)) ** 2).sum())
    if sst == 0:
        return 0.0
    return 100.0 * float(((Z - Zp) ** 2).sum()) / sst
