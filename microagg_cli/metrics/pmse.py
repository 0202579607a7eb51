"""General utility: the propensity-score mean squared error (pMSE) and its null ratio.

The original and the protected records are stacked and a logistic regression predicts
"is protected" from the attributes (Woo, Reiter, Oganian & Karr 2009). If the
protected file is distributed like the original, no model does better than the share
c = n_p / N of protected rows and every propensity p_i is near c:

    pMSE = (1/N) sum_i (p_i - c)^2

0 when every propensity equals c (e.g. the two files are identical: each row appears
once with each label), larger the better the model tells the files apart. For a
logistic model with m parameters (intercept included) fitted on two samples of the
same distribution, Snoke, Raab, Nowok, Dibben & Slavkovic (2018) give the null
expectation and standard deviation

    E[pMSE] = (m - 1) (1 - c)^2 c / N,    SD[pMSE] = sqrt(2 (m - 1)) (1 - c)^2 c / N

and the ratio pMSE / E[pMSE] (lower is better) and the standardised (pMSE - E) / SD;
synthpop's ``utility.gen`` uses the same normalisation, so the ratios compare. Two
*independent* samples of one distribution give a larger mean, (m - 1) c (1 - c) / N (a
first-order expansion of the fit; measured here too), so their ratio averages
1 / (1 - c), about 2 for files of equal size: a protected file whose ratio is below
2 is as hard to tell from the original as a fresh sample of the same population.
Identical files give pMSE = 0.

The model: main effects and squares of the attributes, each standardised with the
stacked file's mean and sd (a constant column is left out, and the square of a column
with at most two distinct values, which would repeat its main effect); fitted by
Newton's method (IRLS) with a small ridge on the slopes (1e-6 N), so that a file the
model separates perfectly still gives finite propensities. No scikit-learn.

References
----------
Woo, Reiter, Oganian & Karr (2009), Global measures of data utility for microdata masked
for disclosure limitation, Journal of Privacy and Confidentiality 1(1).
Snoke, Raab, Nowok, Dibben & Slavkovic (2018), General and specific utility measures for
synthetic data, Journal of the Royal Statistical Society A 181(3).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import DataError

__all__ = ["PMSE_MAX_ROWS", "pmse", "logistic_fit", "PMSE_FORMULA", "REFERENCE"]

#: Above this many records per file, pMSE is computed on a seeded sample of this many
#: records (the same rows of both files); the null expectation uses the sample's N.
PMSE_MAX_ROWS = 100_000
REFERENCE = ("Woo, Reiter, Oganian & Karr (2009), Global measures of data utility for microdata masked for "
             "disclosure limitation, J. Privacy and Confidentiality 1(1); Snoke, Raab, Nowok, Dibben & "
             "Slavkovic (2018), General and specific utility measures for synthetic data, JRSS A 181(3)")
PMSE_FORMULA = ("pMSE = mean over the N stacked records of (p_i - c)^2, p_i the propensity of being protected "
                "(logistic regression on the standardised attributes and their squares), c = n_p / N; "
                "pmse_ratio = pMSE / E[pMSE], E[pMSE] = (m - 1)(1 - c)^2 c / N, m parameters incl. the intercept")

_RIDGE = 1e-6  # times N, on the slopes' Hessian diagonal


def _expit(eta: np.ndarray) -> np.ndarray:
    out = np.empty_like(eta)
    pos = eta >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-eta[pos]))
    e = np.exp(eta[~pos])
    out[~pos] = e / (1.0 + e)
    return out


def _loss(eta: np.ndarray, y: np.ndarray, beta: np.ndarray, lam: float) -> float:
    """Penalised negative log-likelihood at linear predictor ``eta`` (sum log(1 + e^eta) - y eta, stably)."""
    return float(np.logaddexp(0.0, eta).sum() - np.sum(y * eta) + 0.5 * lam * float(np.sum(beta[1:] ** 2)))


def logistic_fit(Z: np.ndarray, y: np.ndarray, *, ridge: float = _RIDGE, max_iter: int = 100,
                 tol: float = 1e-10) -> tuple[np.ndarray, int, bool]:
    """Ridge-penalised logistic regression by Newton's method with step halving.

    Z : (N, m) design whose first column is the intercept (not penalised); y : (N,) 0/1.
    Returns ``(beta, iterations, converged)``. Each step costs one pass over Z for the
    gradient and Hessian and one per trial step (the accepted step's linear predictor
    is kept for the next).
    """
    N, m = Z.shape
    lam = ridge * N
    pen = np.full(m, lam)
    pen[0] = 0.0
    beta = np.zeros(m)
    ybar = float(y.mean())
    beta[0] = np.log(ybar / (1 - ybar)) if 0 < ybar < 1 else 0.0
    eta = Z @ beta
    loss = _loss(eta, y, beta, lam)
    for it in range(1, max_iter + 1):
        p = _expit(eta)
        grad = Z.T @ (y - p) - pen * beta
        w = p * (1 - p)
        H = (Z * w[:, None]).T @ Z
        H[np.diag_indices(m)] += pen + 1e-12 * N
        try:
            step = np.linalg.solve(H, grad)
        except np.linalg.LinAlgError:  # pragma: no cover - the ridge keeps H positive definite
            step = np.linalg.lstsq(H, grad, rcond=None)[0]
        t = 1.0
        while True:
            new = beta + t * step
            new_eta = Z @ new
            new_loss = _loss(new_eta, y, new, lam)
            if new_loss <= loss + 1e-12 * abs(loss) or t < 1e-8:
                break
            t /= 2
        done = abs(loss - new_loss) <= tol * max(1.0, abs(loss)) and float(np.max(np.abs(t * step))) < 1e-6
        beta, eta, loss = new, new_eta, new_loss
        if done:
            return beta, it, True
    return beta, max_iter, False


def _more_than_two(x: np.ndarray) -> bool:
    """Whether ``x`` holds more than two distinct values (O(n), no sort)."""
    rest = x[x != x[0]]
    return bool(rest.size) and bool(np.any(rest != rest[0]))


def _features(S: np.ndarray) -> tuple[np.ndarray, int]:
    """Intercept, standardised main effects and standardised squares; constant columns
    and squares of two-valued columns left out. Returns ``(Z, main_effects)``."""
    mean = S.mean(axis=0)
    sd = S.std(axis=0)
    keep = sd > 0
    Zm = (S[:, keep] - mean[keep]) / sd[keep]
    parts = [np.ones((S.shape[0], 1)), Zm]
    sq = Zm ** 2
    many = np.array([_more_than_two(S[:, j]) for j in np.flatnonzero(keep)], dtype=bool)
    sq = sq[:, many]
    if sq.shape[1]:
        s_sd = sq.std(axis=0)
        ok = s_sd > 0
        parts.append((sq[:, ok] - sq[:, ok].mean(axis=0)) / s_sd[ok])
    return np.hstack(parts), int(Zm.shape[1])


def pmse(X: np.ndarray, Xp: np.ndarray, *, rng: np.random.Generator | None = None,
         max_rows: int = PMSE_MAX_ROWS) -> dict[str, Any]:
    """pMSE of ``Xp`` against ``X`` and its ratio to the null expectation.

    Parameters
    ----------
    X : (n_o, p) original values; Xp : (n_p, p) protected values (finite).
    rng : generator of the row sample (used only above ``max_rows`` records per file;
        default ``default_rng(0)``).
    max_rows : records per file above which a sample of this many is used (the same
        positions in both files when they have the same rows).

    Returns
    -------
    ``{"pmse", "expected", "sd", "ratio", "standardized", "parameters", "records", "c",
    "sampled", "iterations", "converged"}`` (``ratio``: lower is better, about 1 for an
    independent sample of the same distribution).

    Notes
    -----
    O(N m^2) per Newton step, m = 1 + 2p at most; a handful of steps.
    """
    X = np.asarray(X, dtype=np.float64)
    Xp = np.asarray(Xp, dtype=np.float64)
    if X.ndim != 2 or Xp.ndim != 2 or X.shape[1] != Xp.shape[1]:
        raise DataError(f"pMSE needs two matrices with the same columns, got {X.shape} and {Xp.shape}")
    sampled = False
    if max(X.shape[0], Xp.shape[0]) > max_rows:
        rng = np.random.default_rng(0) if rng is None else rng
        sampled = True
        if X.shape[0] == Xp.shape[0]:
            rows = np.sort(rng.choice(X.shape[0], size=max_rows, replace=False))
            X, Xp = X[rows], Xp[rows]
        else:
            X = X[np.sort(rng.choice(X.shape[0], size=min(max_rows, X.shape[0]), replace=False))]
            Xp = Xp[np.sort(rng.choice(Xp.shape[0], size=min(max_rows, Xp.shape[0]), replace=False))]
    n_o, n_p = X.shape[0], Xp.shape[0]
    N = n_o + n_p
    S = np.vstack([X, Xp])
    y = np.concatenate([np.zeros(n_o), np.ones(n_p)])
    Z, _main = _features(S)
    m = Z.shape[1]
    c = n_p / N
    beta, iterations, converged = logistic_fit(Z, y)
    prob = _expit(Z @ beta)
    value = float(np.mean((prob - c) ** 2))
    expected = (m - 1) * (1 - c) ** 2 * c / N
    sd = np.sqrt(2 * (m - 1)) * (1 - c) ** 2 * c / N
    return {
        "pmse": value,
        "expected": float(expected) if m > 1 else None,
        "sd": float(sd) if m > 1 else None,
        "ratio": float(value / expected) if m > 1 else None,
        "standardized": float((value - expected) / sd) if m > 1 else None,
        "parameters": int(m),
        "records": int(N),
        "c": float(c),
        "sampled": sampled,
        "iterations": int(iterations),
        "converged": bool(converged),
    }
