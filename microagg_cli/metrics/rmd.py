"""Interval disclosure weighted by robust Mahalanobis distances (RMDID1, RMDID1w, RMDID2).

SDID (:func:`microagg_cli.metrics.risk.sdid`) puts the same interval around every
original value; an outlier, easier to re-identify, deserves a wider one. Templ & Meindl
(2008) widen each record's interval with its robust Mahalanobis distance from the
centre of the data cloud; sdcMicro implements the measures as ``dRiskRMD``. The
figures here follow sdcMicro's definitions (its documentation and behaviour), with
this project's deterministic MCD (:func:`microagg_cli.mcd.det_mcd`) in place of R's
randomised ``covMcd``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidParameterError
from .utility import standardized_columns, as_pair

__all__ = ["RMD_K", "RMD_K2", "RMD_SCALE", "RMD_RCOND", "mcd_scatter", "original_scatter", "rmd_risk",
           "scatter_rcond"]

#: Default weight of the distances in the interval half-widths (sdcMicro's ``k``).
RMD_K = 0.01
#: Default radius around a masked record within which another masked record makes an
#: unsafe record safe again (RMDID2; sdcMicro's ``k2``), in standardized units.
RMD_K2 = 0.05
#: The factor applied to the robust Mahalanobis distance before ``k`` (sdcMicro's 0.05).
RMD_SCALE = 0.05
#: Below this reciprocal condition number (smallest / largest eigenvalue) the robust
#: scatter is singular or nearly so: its inverse amplifies rounding errors by more than
#: 10^12 and the distances, hence every RMD figure, are noise. The measures are then
#: skipped with the reason (R's ``solve``, which sdcMicro calls, stops below 2.2e-16 with
#: "system is computationally singular"; between the two it returns such noise).
RMD_RCOND = 1e-12


def scatter_rcond(S: np.ndarray) -> float:
    """Smallest over largest eigenvalue of the symmetric scatter ``S`` (0 when singular,
    1 for an empty or identity matrix)."""
    if S.size == 0:
        return 1.0
    e = np.linalg.eigvalsh((S + S.T) / 2.0)
    top = float(e.max())
    return max(float(e.min()), 0.0) / top if top > 0 else 0.0


def _standardize(A: np.ndarray) -> np.ndarray:
    """Columns centred on their means and divided by their sample sds (divisor n - 1);
    a constant column is only centred (its sd taken as 1, where R's ``scale`` would
    give NaN)."""
    sd = A.std(axis=0, ddof=1) if A.shape[0] > 1 else np.zeros(A.shape[1])
    return (A - A.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


def mcd_scatter(Z: np.ndarray) -> np.ndarray:
    """The reweighted MCD scatter of ``Z`` scaled as R's ``covMcd`` scales its own: the
    covariance of the m records kept by the reweighting with divisor m - 1, times the
    consistency factor ``c(p, m/n) = (m/n) / P(chi2_{p+2} <= chi2_p^{-1}(m/n))``
    (Croux & Haesbroeck 1999) when m < n. The estimate itself is this project's
    deterministic one (:func:`microagg_cli.mcd.det_mcd_kept`)."""
    from scipy.special import gammainc, gammaincinv

    from ..mcd import det_mcd_kept  # loaded only when the RMD measures are asked for

    n, p = Z.shape
    _, S, m = det_mcd_kept(Z)
    if m > 1:
        S = S * (m / (m - 1.0))
    if 0 < m < n:
        a = m / n
        S = S * (a / float(gammainc(p / 2.0 + 1.0, float(gammaincinv(p / 2.0, a)))))
    return S


def _live(X: np.ndarray) -> np.ndarray:
    """The columns not constant in the original."""
    return np.flatnonzero(X.max(axis=0) > X.min(axis=0))


def original_scatter(X: np.ndarray) -> np.ndarray:
    """The scatter :func:`rmd_risk` computes from the original ``X`` alone: the
    :func:`mcd_scatter` of its non-constant columns (an empty matrix when there are
    none). The MCD is kept (:func:`microagg_cli.mcd.det_mcd_kept`), so that calling this
    first (``sdc compare``, once for every cell) spares :func:`rmd_risk` the work."""
    X = np.asarray(X, dtype=np.float64)
    live = _live(X)
    if not live.size:
        return np.zeros((0, 0))
    # standardized exactly as robeigen standardizes (same bytes), so that inside
    # ``sdc evaluate`` the original's MCD is computed once
    return mcd_scatter(standardized_columns(X, live))


def rmd_risk(
    X: np.ndarray,
    Xp: np.ndarray,
    *,
    k: float = RMD_K,
    k2: float = RMD_K2,
    scatter: np.ndarray | None = None,
    centre: np.ndarray | None = None,
    workers: int = 1,
) -> dict[str, Any]:
    """RMDID1, RMDID1w, RMDID2 and RMDID2w of a protected file.

    1. Standardize the original ``X`` and the protected ``Xp`` each by its own column
       means and sample sds (Z, Z').
    2. Robust distance of each original record: ``d_i = 0.05 * sqrt((z_i - c)' S^-1
       (z_i - c))`` with S the reweighted MCD scatter of Z and c the column means of Z
       (zero; sdcMicro centres the distances on the mean, not the MCD centre).
    3. Record i is *unsafe* (RMDID1) when at least one of its protected values lies
       strictly inside ``(z_ij - k d_i, z_ij + k d_i)``.
    4. An unsafe record stays unsafe under RMDID2 only when no other protected record
       lies within Euclidean distance ``k2`` of z'_i (a close neighbour hides it).
    5. ``rmdid1 = |U1| / n``, ``rmdid2 = |U2| / n`` (shares in [0, 1]) and the weighted
       ``rmdid1w = |U1| * sum_{i in U1} d_i / n``, ``rmdid2w`` likewise on U2 (sdcMicro's
       ``wrisk1`` / ``wrisk2``, including its factor |U|: they are >= 0, unbounded, and
       grow with both the number and the outlyingness of the unsafe records).

    Parameters
    ----------
    X, Xp : (n, p) original and protected matrices, same records in the same order;
        not mutated.
    k : weight of the distances in the interval half-widths (sdcMicro's default 0.01).
    k2 : RMDID2's neighbourhood radius (standardized units; sdcMicro's default 0.05).
    scatter, centre : the (p, p) scatter and (p,) centre of the distances, in the
        standardized space of step 1 (default: :func:`mcd_scatter` of Z, and the column
        means of Z); given to reproduce another program's figures.
    workers : threads of the k-d tree query of step 4 (the result does not depend on it).

    Returns
    -------
    ``{"rmdid1", "rmdid1w", "rmdid2", "rmdid2w", "unsafe1", "unsafe2", "k", "k2",
    "scatter", "rcond"}``: the four figures, the counts |U1| and |U2|, the parameters,
    ``"mcd"`` or ``"given"``, and the scatter's reciprocal condition number. When it is
    below :data:`RMD_RCOND` the figures and counts are None and ``"skipped_reason"``
    says why (never a number computed from a singular scatter).

    Notes
    -----
    O(n p^2) plus the MCD and one k-d tree query per unsafe record. Columns constant in
    the original are left out (sdcMicro would return NaN). sdcMicro builds the
    full n x n distance matrix of the masked records for step 4; the k-d tree finds the
    same nearest neighbours. With one record there is no neighbour: it stays unsafe.

    References
    ----------
    Templ, M. & Meindl, B. (2008). Robust statistics meets SDC: new disclosure risk
    measures for continuous microdata masking. PSD 2008, LNCS 5262, 113-126.
    Templ, M. (2017). Statistical Disclosure Control for Microdata: Methods and
    Applications in R. Springer.
    """
    X, Xp = as_pair(X, Xp)
    n, p = X.shape
    if not (np.isfinite(k) and k >= 0 and np.isfinite(k2) and k2 >= 0):
        raise InvalidParameterError(f"RMD parameters k and k2 must be finite and >= 0, got {k!r}, {k2!r}")
    Z = _standardize(X)
    Zp = _standardize(Xp)
    # a column constant in the original reveals nothing: it is left out of the
    # distances and of the intervals (R's scale() would make every figure NaN)
    live = _live(X)
    how = "mcd" if scatter is None else "given"
    d2 = np.zeros(n)
    rcond = 1.0
    if live.size:
        if scatter is None:
            S = original_scatter(X)
        else:
            S = np.asarray(scatter, dtype=np.float64).reshape(p, p)[np.ix_(live, live)]
        rcond = scatter_rcond(S)
        if rcond < RMD_RCOND:
            return {"rmdid1": None, "rmdid1w": None, "rmdid2": None, "rmdid2w": None, "unsafe1": None,
                    "unsafe2": None, "k": float(k), "k2": float(k2), "scatter": how, "rcond": rcond,
                    "skipped_reason": (f"the robust scatter is singular or nearly so (reciprocal condition "
                                       f"number {rcond:.3g} < {RMD_RCOND:g}: collinear columns, such as a "
                                       "total and its parts): Mahalanobis distances would be rounding noise; "
                                       "sdcMicro stops here with 'system is computationally singular'. Leave "
                                       "a column of each collinear set out (--columns) to get RMD")}
        c = Z.mean(axis=0) if centre is None else np.asarray(centre, dtype=np.float64).reshape(p)
        D = Z[:, live] - c[live]
        # squared distances by solving S y = d (as R's mahalanobis inverts the covariance)
        Y = np.linalg.solve(S, D.T).T
        d2 = np.einsum("ij,ij->i", D, Y)
    d = RMD_SCALE * np.sqrt(np.maximum(d2, 0.0))
    half = (k * d)[:, None]
    Zl, Zpl = Z[:, live], Zp[:, live]
    inside = (Zpl > Zl - half) & (Zpl < Zl + half)
    unsafe1 = np.flatnonzero(inside.any(axis=1))
    unsafe2 = unsafe1
    if unsafe1.size:
        hidden = np.zeros(unsafe1.size, dtype=bool)
        if n >= 2:
            # an identical masked record (a microaggregation group) lies at distance 0:
            # found by sorting, so that the k-d tree is built only when needed
            _, inv, counts = np.unique(Zp, axis=0, return_inverse=True, return_counts=True)
            hidden = counts[inv.ravel()[unsafe1]] > 1
            rest = unsafe1[~hidden]
            if rest.size:
                from scipy.spatial import cKDTree  # 0.15 s to import: only when used

                # the nearest other masked record: the second of the two nearest (the
                # first is the record itself)
                dist, _ = cKDTree(Zp).query(Zp[rest], k=2, workers=workers)
                hidden[~hidden] = dist[:, 1] <= k2
        unsafe2 = unsafe1[~hidden]
    n1, n2 = int(unsafe1.size), int(unsafe2.size)
    return {
        "rmdid1": n1 / n,
        "rmdid1w": n1 * float(d[unsafe1].sum()) / n,
        "rmdid2": n2 / n,
        "rmdid2w": n2 * float(d[unsafe2].sum()) / n,
        "unsafe1": n1,
        "unsafe2": n2,
        "k": float(k),
        "k2": float(k2),
        "scatter": how,
        "rcond": rcond,
    }
