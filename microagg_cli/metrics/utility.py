"""Information-loss measures of a protected matrix against its original.

Every function takes the original ``X`` and the protected ``Xp`` as (n, p) float
arrays (same records in the same order, original units) and never mutates them.

Conventions of every measure: z-scores use the **original's** means and
population standard deviations (a constant column gets scale 1); covariances use the
divisor n; where a division by zero could occur the cell is skipped and the number of
skipped cells is returned next to the value (``value`` is ``None`` when every cell was
skipped).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .. import threads
from ..memo import LastResults, array_key

__all__ = [
    "SCIPY_SPATIAL_IMPORT_SECONDS",
    "il_sse",
    "il_sse_blocks",
    "il_score",
    "il1s",
    "eigen",
    "robeigen",
    "standardized_columns",
    "data_quality",
    "lb_nn",
    "lb_nn_blocks",
    "lb_nn_prepare",
    "optimality_gap",
    "IL_SCORE_FORMULA",
]

#: The formula of IL_score as printed in the report.
IL_SCORE_FORMULA = "100 * mean(min(IL1,1), min(IL2,1), min(IL3,1), min(IL4,1), min(IL5,1))"


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


# ---------------------------------------------------------------------------------
# helpers


def as_pair(X: np.ndarray, Xp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both matrices as float64 (n, p) arrays of the same shape (InvalidParameterError otherwise)."""
    X = np.asarray(X, dtype=np.float64)
    Xp = np.asarray(Xp, dtype=np.float64)
    if X.ndim != 2 or X.shape != Xp.shape:
        from ..errors import InvalidParameterError

        raise InvalidParameterError(
            f"original and protected matrices must have the same 2-D shape, "
            f"got {X.shape} and {Xp.shape}"
        )
    return X, Xp


def _zscore_pair(X: np.ndarray, Xp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Z, Z': both z-scored with the original's means and population sds."""
    mean = X.mean(axis=0)
    sd = X.std(axis=0)
    scale = np.where(sd > 0, sd, 1.0)
    return (X - mean) / scale, (Xp - mean) / scale


def _constant(X: np.ndarray) -> np.ndarray:
    """Boolean (p,): columns whose values are all equal."""
    if X.shape[0] == 0:
        return np.ones(X.shape[1], dtype=bool)
    return np.ptp(X, axis=0) == 0


def _moments(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Means, covariance matrix (divisor n) and the constant-column mask.

    A constant column gets its value as mean and exactly zero (co)variances, so that
    "zero denominator" is decided exactly, never by rounding noise.
    """
    const = _constant(X)
    mean = X.mean(axis=0)
    mean[const] = X[0, const]
    C = X - mean
    C[:, const] = 0.0
    cov = (C.T @ C) / X.shape[0]
    return mean, cov, const


def _correlations(cov: np.ndarray, const: np.ndarray) -> np.ndarray:
    """Pearson correlations from a covariance matrix; NaN where a column is constant."""
    sd = np.sqrt(np.diag(cov))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = cov / np.outer(sd, sd)
    r[const, :] = np.nan
    r[:, const] = np.nan
    return np.clip(r, -1.0, 1.0)


def _correlation_change(cov: np.ndarray, const: np.ndarray, cov_p: np.ndarray,
                        const_p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Both files' correlation matrices r and r' (:func:`_correlations`), the changes
    |r_jl - r'_jl| over the pairs j < l, and the mask of the pairs where both are
    defined (no constant column)."""
    r = _correlations(cov, const)
    rp = _correlations(cov_p, const_p)
    ju = np.triu_indices(r.shape[0], 1)
    d = np.abs(r[ju] - rp[ju])
    return r, rp, d, ~np.isnan(d)


def _mean_ratio(num: np.ndarray, den: np.ndarray) -> dict[str, Any]:
    """Mean of |num| / |den| over cells with den != 0; skipped cells counted."""
    num = np.abs(np.asarray(num, dtype=np.float64)).ravel()
    den = np.abs(np.asarray(den, dtype=np.float64)).ravel()
    ok = den != 0
    used = int(ok.sum())
    value = float((num[ok] / den[ok]).mean()) if used else None
    return {"value": value, "cells": used, "skipped": int(num.size - used)}


# ---------------------------------------------------------------------------------
# IL_SSE per block


def _sse_sst_columns(X: np.ndarray, Xp: np.ndarray, scale: str = "z") -> tuple[np.ndarray, np.ndarray]:
    if scale not in ("z", "raw"):
        from ..errors import InvalidParameterError

        raise InvalidParameterError(f"scale must be 'z' or 'raw', got {scale!r}")
    Z, Zp = _zscore_pair(X, Xp) if scale == "z" else (X, Xp)
    sse = ((Z - Zp) ** 2).sum(axis=0)
    sst = ((Z - Z.mean(axis=0)) ** 2).sum(axis=0)
    return sse, sst


def _blocks_or_all(blocks: Sequence[Sequence[int]] | None, p: int) -> list[list[int]]:
    return [list(range(p))] if blocks is None else [list(map(int, b)) for b in blocks]


def il_sse_blocks(
    X: np.ndarray, Xp: np.ndarray, blocks: Sequence[Sequence[int]] | None = None,
    *, scale: str = "z",
) -> dict[str, Any]:
    """IL_SSE per block and overall.

    Parameters
    ----------
    X, Xp : (n, p) original and protected matrices.
    blocks : lists of column positions (default: one block of all columns).
    scale : ``"z"`` (default) -- both z-scored with the original's means and sds, the
        literature's IL; ``"raw"`` -- on the unstandardised values,
        100 * ||X - X'||^2 / ||X - mean(X)||^2, where the attributes of largest
        variance dominate (some papers print this figure, e.g. Multi-DSort's).

    Returns
    -------
    ``{"overall": float, "per_block": [float, ...]}``; overall = 100 * (sum of the
    blocks' ||Z - Z'||^2) / (sum of their SST). A block whose SST is 0 (all columns
    constant) reports 0.0, like :func:`il_sse`.

    Examples
    --------
    >>> X = np.array([[0.0, 1.0], [2.0, 1.0], [4.0, 5.0], [6.0, 5.0]])
    >>> Xp = np.array([[1.0, 1.0], [1.0, 1.0], [5.0, 5.0], [5.0, 5.0]])
    >>> il_sse_blocks(X, Xp)
    {'overall': 10.0, 'per_block': [10.0]}
    >>> il_sse_blocks(X, Xp, scale="raw")["overall"]  # 4 / (20 + 16)
    11.11111111111111
    """
    X, Xp = as_pair(X, Xp)
    sse, sst = _sse_sst_columns(X, Xp, scale)
    per_block = []
    for cols in _blocks_or_all(blocks, X.shape[1]):
        den = float(sst[cols].sum())
        per_block.append(100.0 * float(sse[cols].sum()) / den if den > 0 else 0.0)
    den = float(sst.sum())
    overall = 100.0 * float(sse.sum()) / den if den > 0 else 0.0
    return {"overall": overall, "per_block": per_block}


# ---------------------------------------------------------------------------------
# IL1..IL5 and the score


def il_score(X: np.ndarray, Xp: np.ndarray) -> dict[str, Any]:
    """The "score" family IL1..IL5 and IL_score.

    - IL1: mean over the n*p cells of |x_ij - x'_ij| / |x_ij| (cells with x_ij = 0
      skipped);
    - IL2: mean over attributes of |mean_j - mean'_j| / |mean_j|;
    - IL3: mean over the p(p+1)/2 entries i <= j of |v_ij - v'_ij| / |v_ij|
      (covariances with divisor n; zero original covariances skipped);
    - IL4: the same over the variances v_jj only;
    - IL5: mean over the p(p-1)/2 pairs i < j of |r_ij - r'_ij| (pairs where a column is
      constant in the original or the protected file have no correlation: skipped);
    - IL_score = 100 * mean of the defined terms, each capped at 1 (with all five
      defined this is Domingo-Ferrer & Torra's sum / 5).

    Returns
    -------
    ``{"il1": {"value", "cells", "skipped"}, ..., "il5": {...},
    "il_score": {"value", "terms_used", "formula"}}``; a term whose cells were all
    skipped (or that has no cells, e.g. IL5 with p = 1) has ``value`` None and is
    left out of IL_score (listed in ``terms_used``).

    Examples
    --------
    >>> X = np.array([[1.0, 2.0], [3.0, 6.0]])
    >>> r = il_score(X, np.array([[2.0, 2.0], [2.0, 6.0]]))
    >>> r["il1"]["value"], r["il2"]["value"], r["il4"]["value"]
    (0.3333333333333333, 0.0, 0.5)
    >>> r["il5"], r["il_score"]["value"]
    ({'value': None, 'cells': 0, 'skipped': 1}, 37.5)
    """
    X, Xp = as_pair(X, Xp)
    n, p = X.shape
    mean, cov, const = _moments(X)
    mean_p, cov_p, const_p = _moments(Xp)
    iu = np.triu_indices(p)
    il1 = _mean_ratio(X - Xp, X)
    il2 = _mean_ratio(mean - mean_p, mean)
    il3 = _mean_ratio((cov - cov_p)[iu], cov[iu])
    il4 = _mean_ratio(np.diag(cov) - np.diag(cov_p), np.diag(cov))
    _, _, d, ok = _correlation_change(cov, const, cov_p, const_p)
    il5 = {
        "value": float(d[ok].mean()) if ok.any() else None,
        "cells": int(ok.sum()),
        "skipped": int(d.size - ok.sum()),
    }
    out: dict[str, Any] = {"il1": il1, "il2": il2, "il3": il3, "il4": il4, "il5": il5}
    used = [name for name in ("il1", "il2", "il3", "il4", "il5") if out[name]["value"] is not None]
    value = (
        100.0 * float(np.mean([min(out[name]["value"], 1.0) for name in used])) if used else None
    )
    out["il_score"] = {"value": value, "terms_used": used, "formula": IL_SCORE_FORMULA}
    return out


def il1s(X: np.ndarray, Xp: np.ndarray) -> dict[str, Any]:
    """IL1s = mean over cells of |x_ij - x'_ij| / (sqrt(2) * s_j).

    s_j is the sample sd (divisor n - 1) of original column j; the cells of a constant
    column (or all cells when n < 2) are skipped and counted.

    Examples
    --------
    >>> X = np.array([[0.0, 5.0], [2.0, 5.0]])
    >>> r = il1s(X, np.array([[1.0, 5.0], [1.0, 5.0]]))
    >>> round(r["value"], 12), r["cells"], r["skipped"]
    (0.5, 2, 2)
    """
    X, Xp = as_pair(X, Xp)
    n, p = X.shape
    if n < 2:
        return {"value": None, "cells": 0, "skipped": int(n * p)}
    s = X.std(axis=0, ddof=1)
    s[_constant(X)] = 0.0
    den = np.broadcast_to(np.sqrt(2.0) * s, X.shape)
    return _mean_ratio(X - Xp, den)


# ---------------------------------------------------------------------------------
# eigenvalue figures (sdcMicro's dUtility "eigen" / "robeigen")


def standardized_columns(X: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """R's ``scale(x)``: own means and sample sds."""
    A = X[:, cols]
    return (A - A.mean(axis=0)) / A.std(axis=0, ddof=1)


#: Eigenvalues of the original below this share of the largest are skipped by
#: :func:`eigen` / :func:`robeigen` (counted in ``eigenvalues_skipped``).
_EIG_REL_TOL = 1e-6


def _eigen_change(e1: np.ndarray, e2: np.ndarray, used: int, skipped: int) -> dict[str, Any]:
    """sum_j |e1_j - e2_j| / e1_j over the eigenvalues in decreasing order, e1_j > 0."""
    e1 = np.sort(e1)[::-1]
    e2 = np.sort(e2)[::-1]
    # the original's null space (eigenvalues below 1e-6 times the largest: exact linear
    # dependencies, or an MCD exact fit on tied data) has no meaningful relative change
    ok = e1 > _EIG_REL_TOL * max(float(e1.max()), 0.0)
    ok &= e1 > 0
    value = float((np.abs(e1[ok] - e2[ok]) / e1[ok]).sum()) if used else None
    return {"value": value, "attributes": int(used), "skipped": int(skipped),
            "eigenvalues_skipped": int((~ok).sum()) if used else 0}


def _usable_columns(X: np.ndarray, Xp: np.ndarray) -> np.ndarray:
    """Columns constant in neither file (a constant column has no standardized form)."""
    return np.flatnonzero(~_constant(X) & ~_constant(Xp))


def _spectrum_change(X: np.ndarray, Xp: np.ndarray, scatter: Callable[[np.ndarray], np.ndarray],
                     *, side_by_side: bool = False) -> dict[str, Any]:
    """:func:`_eigen_change` of the eigenvalues of ``scatter`` of each file
    standardized on the usable columns (the figure of :func:`eigen` and
    :func:`robeigen`); value None when no column is usable or n < 2. With
    ``side_by_side`` and more than one thread allowed (:func:`threads.limit`), the two
    files' scatters are computed in two threads (numpy releases the GIL; each is
    computed exactly as alone)."""
    X, Xp = as_pair(X, Xp)
    cols = _usable_columns(X, Xp)
    if cols.size == 0 or X.shape[0] < 2:
        return {"value": None, "attributes": 0, "skipped": int(X.shape[1]), "eigenvalues_skipped": 0}
    A, B = standardized_columns(X, cols), standardized_columns(Xp, cols)
    if side_by_side and threads.limit() > 1:
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(1, thread_name_prefix="sdc-scatter")
        try:
            other = pool.submit(scatter, B)
            SA = scatter(A)
            SB = other.result()
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
    else:
        SA, SB = scatter(A), scatter(B)
    return _eigen_change(np.linalg.eigvalsh(SA), np.linalg.eigvalsh(SB), cols.size, X.shape[1] - cols.size)


def eigen(X: np.ndarray, Xp: np.ndarray) -> dict[str, Any]:
    """sdcMicro's ``dUtility(method = "eigen")``: relative change of the eigenvalues.

    e and e' are the eigenvalues, in decreasing order, of the correlation matrices of
    ``X`` and ``Xp`` (each file standardized with its own means and sds, R's
    ``var(scale(x))``); the figure is sum_j |e_j - e'_j| / e_j (0 = the protected
    file's correlation structure has the same spectrum). Columns constant in either
    file are left out (``skipped``), as are the original's eigenvalues below 1e-6
    times its largest (``eigenvalues_skipped``): exact linear dependencies between
    attributes (Census has one) give a zero eigenvalue whose relative change is
    rounding noise; sdcMicro divides by it.

    Returns
    -------
    ``{"value", "attributes", "skipped", "eigenvalues_skipped"}``; value None when
    fewer than 1 column is usable (or n < 2).

    References
    ----------
    Templ, M. & Meindl, B. (2008). Robust statistics meets SDC: new disclosure risk
    measures for continuous microdata masking. Privacy in Statistical Databases,
    LNCS 5262, 177-189.

    Examples
    --------
    >>> X = np.array([[1.0, 2.0], [2.0, 1.0], [3.0, 4.0], [4.0, 3.0]])
    >>> eigen(X, X)["value"]
    0.0

    Perfectly correlated protected columns: the spectrum (1.6, 0.4) of r = 0.6 becomes
    (2, 0), so the figure is 0.4 / 1.6 + 0.4 / 0.4:

    >>> eigen(X, X[:, [0, 0]] + [0.0, 0.5])["value"]
    1.25
    """
    return _spectrum_change(X, Xp, lambda A: np.einsum("ni,nj->ij", A, A) / (A.shape[0] - 1))


def robeigen(X: np.ndarray, Xp: np.ndarray) -> dict[str, Any]:
    """sdcMicro's ``dUtility(method = "robeigen")``: :func:`eigen` with robust scatter.

    The eigenvalues are those of the MCD covariance (:func:`microagg_cli.mcd.det_mcd`,
    deterministic reweighted MCD; sdcMicro uses robustbase's random-start
    ``covMcd``) of each file standardized with its own means and sds; the figure is
    sum_j |e_j - e'_j| / e_j over the original's eigenvalues above 1e-6 times its
    largest. Tied data (many zeros; a microaggregated file's identical rows) can make
    the MCD an exact fit with (near-)zero eigenvalues: on Census 4 of the original's
    13 are below the threshold and skipped.

    Returns
    -------
    ``{"value", "attributes", "skipped", "eigenvalues_skipped"}`` as :func:`eigen`.

    References
    ----------
    Templ & Meindl (2008), as for :func:`eigen`.

    Examples
    --------
    >>> X = np.random.default_rng(0).normal(size=(40, 3))
    >>> robeigen(X, X)["value"]
    0.0
    """
    from ..mcd import det_mcd  # loaded only for robeigen

    return _spectrum_change(X, Xp, lambda A: det_mcd(A)[1], side_by_side=True)


# ---------------------------------------------------------------------------------
# data quality


def _first_pc(corr: np.ndarray) -> tuple[float, np.ndarray]:
    """Largest eigenvalue and its unit eigenvector (largest-magnitude loading > 0)."""
    vals, vecs = np.linalg.eigh(corr)
    lam = float(vals[-1])
    vec = vecs[:, -1].copy()
    if vec[int(np.argmax(np.abs(vec)))] < 0:
        vec = -vec
    return lam, vec


def data_quality(X: np.ndarray, Xp: np.ndarray) -> dict[str, Any]:
    """Mateo-Sanz & Domingo-Ferrer's data-quality comparison.

    Returns
    -------
    dict with

    - ``mean_sd_z``: ``{"value", "skipped"}`` mean over attributes of the population
      sd of the z-scored protected attribute (z-scored with the original's mean and
      sd, so 1.0 = no variance lost); constant original columns skipped;
    - ``correlation_discrepancy``: ``{"mean", "sd", "pairs", "skipped"}`` of the
      p(p-1)/2 values |r_ij - r'_ij| (population sd; pairs involving a constant column
      skipped);
    - ``pc1``: first principal component of the correlation matrix (columns constant
      in neither file): ``{"share_before", "share_after", "share_change",
      "loading_change", "correlation_change", "attributes", "skipped"}`` -- share of
      variance it explains, mean |l_j - l'_j| of its unit loadings (the protected
      vector's sign aligned with the original's) and mean absolute change of the
      attributes' correlations with it (sqrt(lambda_1) * l_j). ``None`` values when
      no column is usable.

    References
    ----------
    Mateo-Sanz, J. M. & Domingo-Ferrer, J. (1998). A comparative study of
    microaggregation methods. Questiio 22(3).
    """
    X, Xp = as_pair(X, Xp)
    n, p = X.shape
    const = _constant(X)
    const_p = _constant(Xp)
    sd = X.std(axis=0)
    sdp = Xp.std(axis=0)
    ok = ~const
    mean_sd = {
        "value": float((sdp[ok] / sd[ok]).mean()) if ok.any() else None,
        "skipped": int(const.sum()),
    }
    _, cov, _ = _moments(X)
    _, cov_p, _ = _moments(Xp)
    r, rp, d, good = _correlation_change(cov, const, cov_p, const_p)
    corr = {
        "mean": float(d[good].mean()) if good.any() else None,
        "sd": float(d[good].std()) if good.any() else None,
        "pairs": int(good.sum()),
        "skipped": int(d.size - good.sum()),
    }
    cols = np.flatnonzero(~const & ~const_p)
    pc: dict[str, Any] = {
        "share_before": None,
        "share_after": None,
        "share_change": None,
        "loading_change": None,
        "correlation_change": None,
        "attributes": int(cols.size),
        "skipped": int(p - cols.size),
    }
    if cols.size:
        lam, vec = _first_pc(r[np.ix_(cols, cols)])
        lam_p, vec_p = _first_pc(rp[np.ix_(cols, cols)])
        if float(vec @ vec_p) < 0:
            vec_p = -vec_p
        m = cols.size
        pc.update(
            share_before=lam / m,
            share_after=lam_p / m,
            share_change=(lam_p - lam) / m,
            loading_change=float(np.abs(vec - vec_p).mean()),
            correlation_change=float(
                np.abs(np.sqrt(lam) * vec - np.sqrt(max(lam_p, 0.0)) * vec_p).mean()
            ),
        )
    return {"mean_sd_z": mean_sd, "correlation_discrepancy": corr, "pc1": pc}


# ---------------------------------------------------------------------------------
# lower bound and optimality gap


#: The last few :func:`_lb_nn_sum` results (floats): LB_NN depends on the original
#: only, and ``sdc compare`` asks for it once per cell, for each of its k values
#: (named: a grid's workers share them).
_LB_NN_RESULTS = LastResults(256, name="lb_nn")

#: :func:`lb_nn_prepare` queries the largest k once for every k when the distances
#: (n x largest k) take at most this many cells (64 MB); else one query per k.
_LB_NN_SHARED_CELLS = 1 << 23


def _lb_nn_sum(Z: np.ndarray, k: int, *, chunk_cells: int = 1 << 20) -> float:
    """(1/(2k)) * sum_i sum_{l<k} d^2(z_i, l-th nearest neighbour of z_i) (the last
    few results kept, keyed by a digest of ``Z``'s bytes and k)."""
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    return _LB_NN_RESULTS.get((array_key(Z), int(k)), lambda: _lb_nn_sum_of(Z, int(k), chunk_cells))


#: Blocks of at most this many pair-columns (n * n * p) get their nearest neighbours by
#: a direct scan instead of scipy's k-d tree (whose import alone, about 0.2 s, is more
#: than the scan of a file of a few thousand records: ``sdc protect`` of a small file).
_LB_NN_SCAN_CELLS = 120_000_000


class _Neighbours:
    """The k nearest distances of rows of ``Z`` among all rows (each row included, at
    distance 0), sorted ascending: from scipy's k-d tree, or for a small block
    (:data:`_LB_NN_SCAN_CELLS`) from a direct scan. Either way a row's distances do not
    depend on which other rows are asked with it."""

    def __init__(self, Z: np.ndarray):
        self.Z = Z
        n, p = Z.shape
        self.tree = None
        if n * n * max(p, 1) > _LB_NN_SCAN_CELLS:
            from scipy.spatial import cKDTree  # 0.2 s to import: only when used

            self.tree = cKDTree(Z)

    def query(self, rows: slice, k: int) -> np.ndarray:
        if self.tree is not None:
            d, _ = self.tree.query(self.Z[rows], k=k, workers=threads.limit())
            return d
        A = self.Z[rows]
        n, p = self.Z.shape
        out = np.empty((A.shape[0], k))
        step = max(1, (1 << 20) // n)
        for s in range(0, A.shape[0], step):
            acc = np.zeros((min(step, A.shape[0] - s), n))
            for j in range(p):  # left to right over the columns, element-wise
                t = A[s: s + step, j, None] - self.Z[None, :, j]
                acc += t * t
            near = np.partition(acc, k - 1, axis=1)[:, :k]
            near.sort(axis=1)
            out[s: s + step] = np.sqrt(near)
        return out


def _lb_nn_sum_of(Z: np.ndarray, k: int, chunk_cells: int) -> float:
    n = Z.shape[0]
    if k <= 1 or n == 0:
        return 0.0
    nb = _Neighbours(Z)
    rows = max(1, chunk_cells // k)
    total = 0.0
    for start in range(0, n, rows):
        # the k nearest data points; the record itself (distance 0) is the smallest,
        # so the k distances are 0 plus its k-1 nearest others, also with duplicate rows
        d = nb.query(slice(start, start + rows), k)
        total += float((d * d).sum())
    return total / (2.0 * k)


def _lb_nn_sums_of(Z: np.ndarray, ks: Sequence[int], chunk_cells: int) -> dict[int, float]:
    """:func:`_lb_nn_sum_of` of every k in ``ks`` from one query of the largest: the k
    nearest distances are the first k of the K nearest (the same sorted values, each
    computed alike, ties included), and each k's sum runs over the same chunks in the
    same order as its own query's, so every figure is the same to the last bit."""
    n = Z.shape[0]
    out = {k: 0.0 for k in ks if k <= 1 or n == 0}
    todo = sorted({k for k in ks if k not in out})
    if not todo:
        return out
    K = todo[-1]
    nb = _Neighbours(Z)
    rows_k = max(1, chunk_cells // K)
    D = np.empty((n, K))
    for start in range(0, n, rows_k):
        D[start: start + rows_k] = nb.query(slice(start, start + rows_k), K)
    for k in todo:
        rows = max(1, chunk_cells // k)
        total = 0.0
        for start in range(0, n, rows):
            d = np.ascontiguousarray(D[start: start + rows, :k])
            total += float((d * d).sum())
        out[k] = total / (2.0 * k)
    return out


def _lb_nn_z(X: np.ndarray) -> np.ndarray:
    """``X`` z-scored as LB_NN z-scores it (original means, population sds)."""
    mean = X.mean(axis=0)
    sd = X.std(axis=0)
    return (X - mean) / np.where(sd > 0, sd, 1.0)


def lb_nn_prepare(X: np.ndarray, ks: Sequence[int], blocks: Sequence[Sequence[int]] | None = None,
                  *, chunk_cells: int = 1 << 20) -> None:
    """Compute and keep (see :data:`_LB_NN_RESULTS`) LB_NN's sums of every block for every
    k in ``ks`` at once, so that :func:`lb_nn_blocks` of ``X`` with any of them costs
    nothing after; one k-d tree query of the largest k serves all (``sdc compare``:
    its k values on one original). The figures are those each k would compute alone."""
    X = np.asarray(X, dtype=np.float64)
    n, p = X.shape
    ks = sorted({int(k) for k in ks if n >= int(k)})
    if not ks:
        return
    Z = _lb_nn_z(X)
    for cols in _blocks_or_all(blocks, p):
        Zb = np.ascontiguousarray(Z[:, cols], dtype=np.float64)
        key = array_key(Zb)
        kept = {key_k[1] for key_k, _ in _LB_NN_RESULTS.items() if key_k[0] == key}
        todo = [k for k in ks if k not in kept]
        if not todo:
            continue
        if n * max(todo) <= _LB_NN_SHARED_CELLS:
            sums = _lb_nn_sums_of(Zb, todo, chunk_cells)
        else:
            sums = {k: _lb_nn_sum_of(Zb, k, chunk_cells) for k in todo}
        for k in todo:
            _LB_NN_RESULTS.put((key, k), sums[k])


#: What loading scipy's k-d tree (``scipy.spatial``) costs the first time in a process,
#: seconds on the 2-core reference machine: part of LB_NN's estimated price above
#: :data:`microagg_cli.protection.table.LB_SMALL_ROWS` records.
SCIPY_SPATIAL_IMPORT_SECONDS = 0.15


#: LB_NN's cost model (:func:`lb_nn_seconds`), fitted on the 2-core reference machine
#: (Gaussian mixtures, n = 10,000-100,000, p = 2-40, k = 3-10): a k-d tree query costs
#: about ``LB_KD_NS`` ns per record x log2(n) x 1.28 ** p (it degrades by about 28 % a
#: column), capped by the brute-force scan's ``LB_BRUTE_NS`` ns per pair and column.
LB_KD_NS = 60.0
LB_KD_GROWTH = 1.28
LB_BRUTE_NS = 1.0


def lb_nn_seconds(n: int, p: int, k: int) -> float:
    """Estimated seconds of :func:`lb_nn` on n records of p columns, from n, p and k
    alone: no timing probe, so the same block always gets the same estimate (and the
    report's choice to compute the bound does not depend on the machine's load).

    Examples
    --------
    >>> round(lb_nn_seconds(10_000, 10, 3), 3)
    0.094
    >>> lb_nn_seconds(2, 10, 3)
    0.0
    """
    if n < k or k <= 1 or n < 2:
        return 0.0
    kd = LB_KD_NS * 1e-9 * n * np.log2(n) * np.sqrt(k / 3.0) * LB_KD_GROWTH ** min(p, 60)
    brute = LB_BRUTE_NS * 1e-9 * float(n) * n * max(p, 1)
    return float(min(kd, brute))


def lb_nn_blocks(
    X: np.ndarray, k: int, blocks: Sequence[Sequence[int]] | None = None
) -> dict[str, Any]:
    """LB_NN per block and overall (see :func:`lb_nn`).

    Returns ``{"overall": float | None, "per_block": [...]}`` with None when the
    file has fewer than k records (no k-partition exists).
    """
    X = np.asarray(X, dtype=np.float64)
    n, p = X.shape
    blist = _blocks_or_all(blocks, p)
    if n < k:
        return {"overall": None, "per_block": [None] * len(blist)}
    Z = _lb_nn_z(X)
    sst_col = ((Z - Z.mean(axis=0)) ** 2).sum(axis=0)
    per_block = []
    num_total = 0.0
    for cols in blist:
        num = _lb_nn_sum(Z[:, cols], int(k))
        den = float(sst_col[cols].sum())
        num_total += num
        per_block.append(100.0 * num / den if den > 0 else 0.0)
    den = float(sst_col.sum())
    return {"overall": 100.0 * num_total / den if den > 0 else 0.0, "per_block": per_block}


def lb_nn(X: np.ndarray, k: int) -> float | None:
    """LB_NN: a lower bound on IL_SSE of every k-partition of ``X`` (one block).

    LB_NN = 100 * (1/(2k)) * sum_i sum_{l=1..k-1} d^2(z_i, l-th nearest neighbour
    of z_i) / SST, with Z the z-scored ``X`` (original means, population sds).

    Parameters
    ----------
    X : (n, p) original matrix (not z-scored).
    k : minimum group size.

    Returns
    -------
    float, or None when n < k.

    Notes
    -----
    Valid because SSE of a group g of m >= k records is (1/(2m)) times the sum of
    squared distances over ordered pairs in g, and each record's m-1 partners are at
    least as far on average as its k-1 nearest neighbours, with (m-1)/m >= (k-1)/k.
    The k-1 nearest neighbours come from a cKDTree: O(n log n) time for fixed p,
    memory O(n k) (queries in chunks).

    Examples
    --------
    >>> round(lb_nn(np.array([[0.0], [1.0], [10.0], [11.0]]), 2), 6)
    0.990099
    """
    return lb_nn_blocks(X, k)["overall"]


def optimality_gap(
    X: np.ndarray,
    Xp: np.ndarray,
    k: int,
    blocks: Sequence[Sequence[int]] | None = None,
) -> dict[str, Any]:
    """IL_SSE, the lower bound LB_NN and the gap between them, per block and overall.

    Returns
    -------
    ``{"k", "il_sse": {"overall", "per_block"}, "lb_nn": {...},
    "gap": {"overall", "per_block"}, "ratio": {"overall", "per_block"}}``; gap =
    IL_SSE - LB_NN (percentage points), ratio = IL_SSE / LB_NN (None when LB_NN is 0
    or undefined). Meaningful for partition-based methods only.
    """
    il = il_sse_blocks(X, Xp, blocks)
    lb = lb_nn_blocks(X, k, blocks)

    def gap(a: float, b: float | None) -> float | None:
        return None if b is None else a - b

    def ratio(a: float, b: float | None) -> float | None:
        return None if b is None or b <= 0 else a / b

    return {
        "k": int(k),
        "il_sse": il,
        "lb_nn": lb,
        "gap": {
            "overall": gap(il["overall"], lb["overall"]),
            "per_block": [gap(a, b) for a, b in zip(il["per_block"], lb["per_block"])],
        },
        "ratio": {
            "overall": ratio(il["overall"], lb["overall"]),
            "per_block": [ratio(a, b) for a, b in zip(il["per_block"], lb["per_block"])],
        },
    }
