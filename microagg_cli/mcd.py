"""Deterministic robust location and scatter (reweighted MCD with DetMCD starts).

Shared by the robust methods (:mod:`microagg_cli.methods.robust`,
:mod:`microagg_cli.methods.rsorts`) and the robust utility figure ``robeigen``
(:mod:`microagg_cli.metrics.utility`), so it lives below both packages. Results never
depend on a random seed, the platform's BLAS or thread count: every product and sum
over records is an element-wise numpy/einsum operation or a compiled loop in a fixed
order (no BLAS), and only p x p eigen-decompositions go to LAPACK.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit
from .memo import LastResults, array_key

__all__ = ["det_mcd", "det_mcd_kept", "robust_mahalanobis", "robust_scale"]


#: Relative floor of the eigenvalues of a scatter matrix (see :func:`_inv_sqrt_parts`).
_EIG_FLOOR = 1e-12
#: At most this many concentration steps per start.
_MAX_CSTEPS = 200


def robust_scale(v: np.ndarray) -> float:
    """Robust scale of a vector: MAD * 1.4826; when it is zero or negligible (below
    1e-10 times the largest deviation from the median: most values tied), IQR / 1.349,
    then the standard deviation; 1 for a constant vector."""
    med = np.median(v)
    dev = np.abs(v - med)
    floor = 1e-10 * float(dev.max())
    s = 1.482602218505602 * float(np.median(dev))
    if s > floor:
        return s
    q1, q3 = np.quantile(v, [0.25, 0.75])
    s = float(q3 - q1) / 1.3489795003921634
    if s > floor:
        return s
    s = float(v.std())
    return s if s > floor else 1.0


def _cov(A: np.ndarray, centre: np.ndarray | None = None) -> np.ndarray:
    """Covariance (divisor m) of the rows of ``A`` around ``centre`` (their mean)."""
    if centre is None:
        centre = A.mean(axis=0)
    C = A - centre
    return np.einsum("ni,nj->ij", C, C) / A.shape[0]


def _corr(A: np.ndarray) -> np.ndarray:
    S = _cov(A)
    sd = np.sqrt(np.diag(S))
    sd = np.where(sd > 0, sd, 1.0)
    return S / sd[:, None] / sd[None, :]


def _eig(S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (floored at 1e-12 times max(largest, 1)) and eigenvectors of ``S``.

    The floor keeps distances defined when the scatter is singular (an exact fit: more
    than h records on a hyperplane, e.g. heavily tied data)."""
    w, V = np.linalg.eigh((S + S.T) / 2.0)
    floor = _EIG_FLOOR * max(float(w.max()), 1.0)
    return np.maximum(w, floor), V


def _mahal2(A: np.ndarray, centre: np.ndarray, S: np.ndarray) -> np.ndarray:
    """Squared Mahalanobis distances of the rows of ``A`` (see :func:`_mahal2_rows`);
    also used for the final ranking, so equal rows always get bit-identical distances."""
    w, V = _eig(S)
    A = np.ascontiguousarray(A, dtype=np.float64)
    return _mahal2_rows(A, np.ascontiguousarray(centre, dtype=np.float64), np.ascontiguousarray(V), 1.0 / w,
                        np.empty(A.shape[0]))


@njit(cache=True, nogil=True)
def _mahal2_rows(A, centre, V, winv, out):  # pragma: no cover - compiled
    """``out[r]`` = sum over j of y_j^2 * ``winv[j]``, y_j = sum over i of (A[r, i] -
    centre[i]) * V[i, j], both sums in index order: every row the same operations in
    the same order (equal rows, equal distances; no BLAS, no threads). Rows go in
    blocks of 64, each copied as columns so that the loops over its rows vectorise
    (4-5x the einsum it replaces; C-steps call it once per step)."""
    n, p = A.shape
    B = 64
    buf = np.empty((p, B))
    y = np.empty(B)
    acc = np.empty(B)
    for r0 in range(0, n, B):
        m = min(B, n - r0)
        for r in range(m):
            for i in range(p):
                buf[i, r] = A[r0 + r, i] - centre[i]
        for r in range(m):
            acc[r] = 0.0
        for j in range(p):
            for r in range(m):
                y[r] = 0.0
            for i in range(p):
                b = buf[i, :m]
                v = V[i, j]
                for r in range(m):
                    y[r] += b[r] * v
            wj = winv[j]
            for r in range(m):
                acc[r] += y[r] * y[r] * wj
        o = out[r0:r0 + m]
        for r in range(m):
            o[r] = acc[r]
    return out


def _logdet(S: np.ndarray) -> float:
    return float(np.log(_eig(S)[0]).sum())


def _first_m(d: np.ndarray, m: int) -> np.ndarray:
    """Indices of the m smallest values of ``d`` (ties by position), sorted: the first
    m of a stable argsort, found by selection (the m-th smallest value, everything
    below it and the first positions equal to it), O(n) instead of O(n log n)."""
    n = d.size
    if m >= n:
        return np.arange(n)
    if m <= 0:
        return np.empty(0, dtype=np.int64)
    if np.isnan(d).any():  # NaN sorts last in argsort; keep its exact order
        return np.sort(np.argsort(d, kind="stable")[:m])
    cut = np.partition(d, m - 1)[m - 1]
    keep = d < cut
    keep[np.flatnonzero(d == cut)[: m - int(np.count_nonzero(keep))]] = True
    return np.flatnonzero(keep)


def _csteps(A: np.ndarray, start: np.ndarray, h: int) -> tuple[float, np.ndarray]:
    """Concentration steps: from the mean and covariance of the ``start`` records, take
    the h records of smallest distance, recompute, and repeat until the h-subset stops
    changing or its covariance determinant stops decreasing; returns (log det, h-subset)."""
    mu = A[start].mean(axis=0)
    subset = _first_m(_mahal2(A, mu, _cov(A[start], mu)), h)
    best: tuple[float, np.ndarray] | None = None
    for _ in range(_MAX_CSTEPS):
        mu = A[subset].mean(axis=0)
        S = _cov(A[subset], mu)
        ld = _logdet(S)
        if best is not None and ld >= best[0]:
            break
        best = (ld, subset)
        new = _first_m(_mahal2(A, mu, S), h)
        if np.array_equal(new, subset):
            break
        subset = new
    assert best is not None
    return best


def _univariate_mcd(a: np.ndarray, h: int) -> np.ndarray:
    """Exact univariate MCD: the h consecutive sorted values of smallest variance (the
    lowest such window on ties); returns the records' indices, sorted."""
    order = np.argsort(a, kind="stable")
    v = a[order] - np.median(a)
    c1 = np.concatenate([[0.0], np.cumsum(v)])
    c2 = np.concatenate([[0.0], np.cumsum(v * v)])
    s1 = c1[h:] - c1[:-h]
    s2 = c2[h:] - c2[:-h]
    i = int(np.argmin(s2 - s1 * s1 / h))
    return np.sort(order[i : i + h])


def _average_ranks(A: np.ndarray) -> np.ndarray:
    """Ranks 1..n of each column, ties sharing their mean rank (``scipy.stats.rankdata``
    with ``method="average"``; the values are exact halves, so any order of work gives
    the same)."""
    n, p = A.shape
    out = np.empty((n, p))
    for j in range(p):
        order = np.argsort(A[:, j], kind="mergesort")
        x = A[order, j]
        new = np.r_[True, x[1:] != x[:-1]]
        run = np.cumsum(new) - 1
        edges = np.r_[np.flatnonzero(new), n]
        out[order, j] = 0.5 * (edges[run] + edges[run + 1] + 1)
    return out


def _chi2_quantile(q: float, df: int) -> float:
    """The q quantile of chi-square with ``df`` degrees of freedom (as scipy.stats'
    ``chi2.ppf`` computes it: 2 * gammaincinv(df / 2, q))."""
    from scipy.special import gammaincinv

    return float(2.0 * gammaincinv(df / 2.0, q))


def _starts(A: np.ndarray) -> list[np.ndarray]:
    """Initial scatter matrices of DetMCD (Hubert, Rousseeuw & Verdonck 2012), on the
    robustly standardized data: tanh correlation, Spearman correlation, normal-scores
    correlation, spatial-sign covariance and the covariance of the half of the records
    closest to the coordinate-wise median (the raw OGK start is not used)."""
    n = A.shape[0]
    from scipy.special import ndtri  # the normal quantile (scipy.stats' norm.ppf); scipy.stats takes 1.4 s to import

    ranks = _average_ranks(A)
    norms = np.sqrt(np.einsum("ni,ni->n", A, A))
    signs = A / np.where(norms > 0, norms, 1.0)[:, None]
    return [
        _corr(np.tanh(A)),
        _corr(ranks),
        _corr(ndtri((ranks - 1.0 / 3.0) / (n + 1.0 / 3.0))),
        np.einsum("ni,nj->ij", signs, signs) / n,
        _cov(A[_first_m(norms, (n + 1) // 2)]),
    ]


#: The last few :func:`det_mcd` results: ``sdc compare`` asks for the original's
#: estimate once per cell.
_RESULTS = LastResults(4, name="mcd")


def det_mcd(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Deterministic reweighted MCD estimate of location and scatter (see
    :func:`_det_mcd`); the last few results are kept, keyed by a digest of the
    matrix's bytes, and returned as copies."""
    centre, scatter, _ = det_mcd_kept(X)
    return centre, scatter


def det_mcd_kept(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """:func:`det_mcd`, and the number of records its reweighting step kept (all n
    when the reweighting was skipped), for callers that rescale the reweighted scatter
    as another program does (R's ``covMcd`` multiplies it by m / (m - 1) and a
    consistency factor of the share m / n kept)."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    centre, scatter, kept = _RESULTS.get(array_key(X), lambda: _det_mcd(X))
    return centre.copy(), scatter.copy(), kept


def _det_mcd(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Deterministic reweighted MCD estimate of location and scatter.

    1. Standardize each column by its median and robust scale (MAD, see :func:`robust_scale`).
       With one column, the raw MCD subset is exact: the h consecutive sorted values
       of smallest variance (steps 2-3 below are for p >= 2).
    2. For each of five deterministic initial scatter estimates S (DetMCD): take its
       eigenvectors E, the robust variances L of the data projected on them, the
       scatter E L E' and the centre given by the coordinate-wise median in the
       sphered space; the ceil(n/2) records of smallest distance start concentration
       steps (FAST-MCD's C-steps) with h = floor((n + p + 1) / 2).
    3. Keep the h-subset of smallest covariance determinant (first start on ties); its
       mean and covariance, scaled by median(d^2) / chi2_p(0.5) for consistency, are
       the raw MCD.
    4. Reweighting: the mean and covariance of the records with
       d^2 <= chi2_p(0.975) under the raw estimate.

    Parameters
    ----------
    X : (n, p) float array; not mutated.

    Returns
    -------
    centre : (p,) float array; scatter : (p, p) float array, in the units of ``X``;
    kept : records used by the reweighting (n when it was skipped).

    Notes
    -----
    O(n p^2) per concentration step. Deterministic: no random subsets (unlike
    FAST-MCD / R's ``covMcd``), and no BLAS calls whose results could depend on
    threads. When a scatter is singular (exact fit), its eigenvalues are floored at
    1e-12 times max(largest, 1) in the standardized space.

    References
    ----------
    Rousseeuw, P. J. & Van Driessen, K. (1999). A fast algorithm for the minimum
    covariance determinant estimator. Technometrics 41(3), 212-223.
    Hubert, M., Rousseeuw, P. J. & Verdonck, T. (2012). A deterministic algorithm for
    robust location and scatter. Journal of Computational and Graphical Statistics
    21(3), 618-637.
    """
    X = np.asarray(X, dtype=np.float64)
    n, p = X.shape
    med = np.median(X, axis=0)
    sc = np.array([robust_scale(X[:, j]) for j in range(p)])
    A = (X - med) / sc
    h = min(n, (n + p + 1) // 2)
    h0 = (n + 1) // 2
    if p == 1:
        subset = _univariate_mcd(A[:, 0], h)
    else:
        best: tuple[float, np.ndarray] | None = None
        for S0 in _starts(A):
            _, E = np.linalg.eigh((S0 + S0.T) / 2.0)
            B = np.einsum("ni,ij->nj", A, E)
            lam = np.array([robust_scale(B[:, j]) ** 2 for j in range(p)])
            S = np.einsum("ij,j,kj->ik", E, lam, E)
            # Centre: coordinate-wise median in the sphered coordinates, mapped back.
            centre = np.einsum("j,ij->i", np.median(B / np.sqrt(lam), axis=0) * np.sqrt(lam), E)
            found = _csteps(A, _first_m(_mahal2(A, centre, S), h0), h)
            if best is None or found[0] < best[0]:
                best = found
        assert best is not None
        subset = best[1]
    mu = A[subset].mean(axis=0)
    S = _cov(A[subset], mu)
    d2 = _mahal2(A, mu, S)
    c = float(np.median(d2)) / _chi2_quantile(0.5, p)
    if c > 0:
        S = S * c
        d2 = d2 / c
    keep = d2 <= _chi2_quantile(0.975, p)
    kept = n
    if keep.sum() > p:
        mu = A[keep].mean(axis=0)
        S = _cov(A[keep], mu)
        kept = int(keep.sum())
    # Back to the units of X.
    return mu * sc + med, S * sc[:, None] * sc[None, :], kept


def robust_mahalanobis(X: np.ndarray) -> np.ndarray:
    """Squared robust Mahalanobis distances of the rows of ``X`` (see :func:`det_mcd`),
    computed in the median/MAD-standardized space (affine invariance makes them equal
    to the distances in the units of ``X`` up to rounding)."""
    X = np.asarray(X, dtype=np.float64)
    med = np.median(X, axis=0)
    sc = np.array([robust_scale(X[:, j]) for j in range(X.shape[1])])
    centre, S = det_mcd(X)
    return _mahal2((X - med) / sc, (centre - med) / sc, S / sc[:, None] / sc[None, :])
