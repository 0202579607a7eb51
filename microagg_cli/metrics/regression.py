"""Regression utility: confidence-interval overlap of least-squares coefficients.

A linear model ``y ~ x1 + x2 + ...`` is fitted by (weighted) least squares on the
original and on the protected values; for every coefficient the 95 % confidence
intervals of the two fits are compared by the interval overlap of Karr, Kohnen,
Oganian, Reiter & Sanil (2006):

    J = 1/2 [ (min(U_o, U_p) - max(L_o, L_p)) / (U_o - L_o)
            + (min(U_o, U_p) - max(L_o, L_p)) / (U_p - L_p) ]

1 when the intervals are identical, 0 when they are disjoint (the paper sets J to 0
when the intervals do not overlap; the unclipped value, negative then, is reported
as ``overlap_raw`` and says how far apart they are). Higher is better.

The fits use the Householder QR decomposition of the (square-root-weighted) data (no
normal equations), so that a nearly collinear design loses no more accuracy than the
data allow, and a rank-deficient one is detected (R's ``lm`` tolerance) instead of
giving arbitrary coefficients. One R factor per file and column set serves every model
on that set: the default models (each column on the others) cost one pass over the
data per file. The intervals are the textbook ones of a linear model with precision
weights (R's ``lm(weights = )``): beta_j +- t_{0.975, n - m} * s * sqrt([(X'WX)^-1]_jj),
s^2 = sum w r^2 / (n - m). Sampling weights give the same point estimates as a
survey-weighted fit; the intervals are then model-based, not design-based.

References
----------
Karr, Kohnen, Oganian, Reiter & Sanil (2006), A framework for evaluating the utility
of data altered to protect confidentiality, The American Statistician 60(3).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..errors import DataError, InvalidParameterError

__all__ = [
    "CI_LEVEL",
    "DEFAULT_MAX_MODELS",
    "Model",
    "parse_model",
    "default_models",
    "independent_columns",
    "independent_from_r",
    "ci_overlap_matrix",
    "default_ci_overlap",
    "fit_ols",
    "fit_from_r",
    "r_factor",
    "interval_overlap",
    "ci_overlap",
    "CI_OVERLAP_FORMULA",
    "REFERENCE",
]

#: Confidence level of the compared intervals (Karr et al. use 95 % intervals).
CI_LEVEL = 0.95
#: The default models regress each protected column on the others; with more columns
#: than this, only the first DEFAULT_MAX_MODELS columns are responses (each still on all
#: the others), so the cost stays linear in the number of columns.
DEFAULT_MAX_MODELS = 10
REFERENCE = ("Karr, Kohnen, Oganian, Reiter & Sanil (2006), A framework for evaluating the utility of "
             "data altered to protect confidentiality, The American Statistician 60(3)")
CI_OVERLAP_FORMULA = ("J = 1/2 [(min(U_o,U_p) - max(L_o,L_p)) / (U_o - L_o) + (min(U_o,U_p) - max(L_o,L_p)) / "
                      "(U_p - L_p)] per coefficient of each least-squares model, 95 % t intervals, 0 when the "
                      "intervals are disjoint; ci_overlap = mean over every coefficient of every model")

# relative size of the smallest pivot of R below which the design counts as singular
_RANK_TOL = 1e-10


@dataclass(frozen=True)
class Model:
    """A linear model: ``response ~ predictors`` (``intercept``: with a constant term)."""

    response: str
    predictors: tuple[str, ...]
    intercept: bool = True

    @property
    def text(self) -> str:
        rhs = " + ".join(self.predictors) if self.predictors else ""
        if not self.intercept:
            rhs = (rhs + " - 1") if rhs else "0"
        return f"{self.response} ~ {rhs or '1'}"

    @property
    def terms(self) -> list[str]:
        """Coefficient names in fit order (``(Intercept)`` first, as R names it)."""
        return (["(Intercept)"] if self.intercept else []) + list(self.predictors)


_NAME = r"`[^`]+`|[^\s+~`-][^+~`]*?"


def _name(token: str) -> str:
    token = token.strip()
    return token[1:-1] if token.startswith("`") and token.endswith("`") else token


def parse_model(text: str, columns: Sequence[str] | None = None) -> Model:
    """A model from R-like formula text.

    ``"y ~ x1 + x2"``; ``"y ~ ."`` (every column of ``columns`` but y); ``"y ~ 1"``
    (intercept only: the interval of the mean); ``- 1`` or ``+ 0`` drops the
    intercept; names with spaces or signs go in backquotes (``"`net income` ~ age"``).
    Raises :class:`InvalidParameterError` on bad syntax (checking that the columns
    exist is the caller's, who knows the files).

    >>> parse_model("y ~ x1 + x2").terms
    ['(Intercept)', 'x1', 'x2']
    >>> parse_model("y ~ . - 1", ["x", "y", "z"]).text
    'y ~ x + z - 1'
    """
    where = f"--model {text!r}"
    if text.count("~") != 1:
        raise InvalidParameterError(f"{where}: expected one '~', as in \"y ~ x1 + x2\"")
    lhs, rhs = text.split("~")
    lhs = lhs.strip()
    if not lhs or not re.fullmatch(_NAME, lhs):
        raise InvalidParameterError(f"{where}: one response column before '~' expected")
    response = _name(lhs)
    intercept = True
    # split on + and - outside backquotes, keeping the sign of each term
    chunks: list[tuple[str, str]] = []
    sign, buf, quoted = "+", "", False
    for ch in rhs:
        if ch == "`":
            quoted = not quoted
        if ch in "+-" and not quoted:
            chunks.append((sign, buf.strip()))
            sign, buf = ch, ""
        else:
            buf += ch
    chunks.append((sign, buf.strip()))
    if quoted:
        raise InvalidParameterError(f"{where}: unbalanced backquote")
    if len(chunks) > 1 and not chunks[0][1]:
        chunks = chunks[1:]  # a leading sign: "y ~ -1 + x"
    if any(not term for _s, term in chunks):
        raise InvalidParameterError(f"{where}: empty term")
    terms = chunks
    predictors: list[str] = []
    for sign, term in terms:
        if term in ("0", "1"):
            if (sign, term) in (("-", "1"), ("+", "0")):
                intercept = False
            elif (sign, term) == ("+", "1"):
                intercept = True
            else:
                raise InvalidParameterError(f"{where}: '{sign} {term}' is not a term")
            continue
        if sign == "-":
            raise InvalidParameterError(f"{where}: only '- 1' may be subtracted")
        if term == ".":
            if columns is None:
                raise InvalidParameterError(f"{where}: '.' needs the list of columns")
            predictors.extend(c for c in columns if c != response and c not in predictors)
            continue
        if not re.fullmatch(_NAME, term) or any(ch in term for ch in "()*:^/|=,"):
            raise InvalidParameterError(f"{where}: {term!r} is not a column name (use backquotes for "
                                        "names with spaces or signs; interactions and functions are not supported)")
        name = _name(term)
        if name == response:
            raise InvalidParameterError(f"{where}: the response {name!r} is also a predictor")
        if name in predictors:
            raise InvalidParameterError(f"{where}: {name!r} is named twice")
        predictors.append(name)
    if not predictors and not intercept:
        raise InvalidParameterError(f"{where}: a model needs a predictor or an intercept")
    return Model(response, tuple(predictors), intercept)


def independent_columns(X: np.ndarray) -> np.ndarray:
    """Positions (ascending) of a largest set of columns of ``X`` of which none is,
    with an intercept, an exact linear combination of the others (column-pivoted QR of
    the centred, scaled columns; constant columns never qualify)."""
    from scipy.linalg import qr

    X = np.asarray(X, dtype=np.float64)
    sd = X.std(axis=0)
    live = np.flatnonzero(sd > 0)
    if live.size == 0:
        return live
    Z = (X[:, live] - X[:, live].mean(axis=0)) / sd[live]
    _q, R, piv = qr(Z, mode="economic", pivoting=True, check_finite=False)
    diag = np.abs(np.diag(R))
    rank = int((diag > 1e-8 * diag[0]).sum())
    return np.sort(live[piv[:rank]])


def independent_from_r(R: np.ndarray) -> np.ndarray:
    """:func:`independent_columns` of X from the R factor of ``[1, X]`` (:func:`r_factor`,
    weighted or not): R[1:, 1:] is the geometry of the centred columns, so no second
    pass over the data is needed."""
    from scipy.linalg import qr

    B = R[1:, 1:]
    total = np.sqrt((R[:, 1:] ** 2).sum(axis=0))
    centred = np.sqrt((B ** 2).sum(axis=0))
    live = np.flatnonzero(centred > 1e-10 * np.maximum(total, 1e-300))
    if live.size == 0:
        return live
    _q, R2, piv = qr(B[:, live] / centred[live], mode="economic", pivoting=True, check_finite=False)
    diag = np.abs(np.diag(R2))
    rank = int((diag > 1e-8 * diag[0]).sum())
    return np.sort(live[piv[:rank]])


def default_models(columns: Sequence[str], max_models: int = DEFAULT_MAX_MODELS,
                   X: np.ndarray | None = None, *, keep: Sequence[int] | None = None
                   ) -> tuple[list[Model], list[str]]:
    """Each column regressed on all the others (the first ``max_models`` columns as
    responses); one column: the intercept-only model (the interval of its mean).

    With the original values ``X`` (columns in ``columns``' order), or the positions
    ``keep`` of :func:`independent_columns`, columns that are constant or exact linear
    combinations of the others are left out first (a model would be singular, or fit
    its response exactly): returns ``(models, left_out)``.
    """
    cols = list(columns)
    left_out: list[str] = []
    if X is not None or keep is not None:
        kept = set((independent_columns(X) if keep is None else np.asarray(keep)).tolist())
        left_out = [c for j, c in enumerate(cols) if j not in kept]
        cols = [c for j, c in enumerate(cols) if j in kept]
    return [Model(y, tuple(c for c in cols if c != y)) for y in cols[:max(1, int(max_models))]], left_out


def r_factor(A: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """The triangular factor R of the QR decomposition of sqrt(W) A (Householder; Q is
    never formed). Every least-squares fit among A's columns follows from R alone
    (:func:`fit_from_r`), so the models sharing a column set share one pass over the data."""
    A = np.asarray(A, dtype=np.float64)
    if weights is not None:
        A = A * np.sqrt(np.asarray(weights, dtype=np.float64))[:, None]
    return np.linalg.qr(A, mode="r")


def fit_from_r(R: np.ndarray, response: int, predictors: Sequence[int], n: int) -> dict[str, Any]:
    """Least squares of column ``response`` on columns ``predictors`` of A, given A's R.

    A[:, perm] = Q R[:, perm], so the QR of the small R[:, perm] (predictors, then the
    response) is the QR of the permuted data: R2 = [[R11, r12], [0, r22]] gives
    beta = R11^-1 r12, RSS = r22^2, cov = s^2 R11^-1 R11^-T with s^2 = RSS / (n - m)
    (Golub & Van Loan, Matrix Computations, 5.3). O(m^3), no pass over the data.

    Returns ``{"coef", "se", "df", "rank"}``; ``coef``/``se`` None when the design is
    singular (a predictor whose part not explained by the earlier ones is below 1e-7
    of its length, R's ``lm`` tolerance) or has no residual degree of freedom.
    """
    from scipy.linalg import solve_triangular

    perm = list(predictors) + [int(response)]
    m = len(predictors)
    R2 = np.linalg.qr(R[:, perm], mode="r")
    df = int(n) - m
    if m == 0:
        rss = float(R2[0, 0] ** 2)
        return {"coef": np.zeros(0), "se": np.zeros(0), "df": df, "rank": 0, "rss": rss}
    norms = np.sqrt((R[:, predictors] ** 2).sum(axis=0))
    diag = np.abs(np.diag(R2)[:m])
    rank = int((diag > 1e-7 * np.maximum(norms, 1e-300)).sum())
    if rank < m or df <= 0:
        return {"coef": None, "se": None, "df": df, "rank": rank}
    R11, r12 = R2[:m, :m], R2[:m, m]
    r22 = float(R2[m, m]) if R2.shape[0] > m else 0.0
    if abs(r22) <= 1e-7 * float(np.sqrt((R[:, response] ** 2).sum())):
        # the response is an exact linear combination of the predictors: zero-width intervals
        return {"coef": None, "se": None, "df": df, "rank": rank, "exact": True}
    coef = solve_triangular(R11, r12, check_finite=False)
    s2 = r22 * r22 / df
    Rinv = solve_triangular(R11, np.eye(m), check_finite=False)
    se = np.sqrt(s2 * (Rinv ** 2).sum(axis=1))
    return {"coef": coef, "se": se, "df": df, "rank": rank}


def fit_ols(X: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None) -> dict[str, Any]:
    """(Weighted) least squares of ``y`` on the columns of ``X`` (intercept column
    included when wanted) by Householder QR: ``{"coef", "se", "df", "rank"}``
    (coef/se None for a singular design). O(n m^2)."""
    X = np.asarray(X, dtype=np.float64)
    A = np.column_stack([X, np.asarray(y, dtype=np.float64)])
    m = X.shape[1]
    return fit_from_r(r_factor(A, weights), m, list(range(m)), X.shape[0])


def interval_overlap(lo_o: float, up_o: float, lo_p: float, up_p: float) -> tuple[float | None, float | None]:
    """``(J, J_raw)``: Karr et al.'s overlap of [lo_o, up_o] and [lo_p, up_p] (0 when
    disjoint) and the unclipped value. A zero-width interval counts as fully inside the
    other when it lies in it (its term is 1) and as disjoint otherwise; two points: 1
    when equal, else 0 (raw: None).

    >>> interval_overlap(0.0, 2.0, 1.0, 3.0)
    (0.5, 0.5)
    >>> interval_overlap(0.0, 1.0, 3.0, 4.0)
    (0.0, -2.0)
    """
    inter = min(up_o, up_p) - max(lo_o, lo_p)
    wo, wp = up_o - lo_o, up_p - lo_p
    if wo <= 0 or wp <= 0:
        if wo <= 0 and wp <= 0:
            same = 1.0 if lo_o == lo_p else 0.0
            return same, (same if same else None)
        term_pt = 1.0 if inter >= 0 else 0.0
        other = max(inter, 0.0) / (wp if wo <= 0 else wo)
        j = 0.5 * (term_pt + other)
        return j, (j if inter >= 0 else None)
    raw = 0.5 * (inter / wo + inter / wp)
    return max(raw, 0.0), raw


def ci_overlap(
    original: dict[str, np.ndarray],
    protected: dict[str, np.ndarray],
    models: Sequence[Model],
    *,
    weights: np.ndarray | None = None,
    level: float = CI_LEVEL,
    strict: bool = True,
    factors: dict[tuple[Any, ...], tuple[list[str], np.ndarray, np.ndarray]] | None = None,
) -> dict[str, Any]:
    """Confidence-interval overlap of every coefficient of every model.

    Parameters
    ----------
    original, protected : column name -> (n,) values of the same records (NaN =
        missing); every column a model names must be in both.
    models : the models (:func:`parse_model`, :func:`default_models`).
    weights : (n,) positive weights of the weighted fits, or None.
    level : confidence level of the intervals.
    strict : a model whose design is singular (on either file) or has no residual
        degree of freedom raises :class:`DataError`; with False it is reported with
        ``skipped`` (the default models).
    factors : R factors already computed, keyed ``(sorted column names, intercept)``
        -> ``(those names, R original, R protected)`` of ``[1, columns]`` on every
        record (only for models whose columns have no missing value).

    Returns
    -------
    ``{"mean", "min", "coefficients", "models", "skipped", "level", "weighted"}``:
    ``mean`` over every coefficient of every fitted model (the headline, higher is
    better), ``min`` the worst coefficient; per model its formula, records used and per
    coefficient the estimates, intervals and overlap. The original's estimates are
    aggregates of the original data (regression coefficients), never record values.
    """
    from scipy.special import stdtrit  # the t quantile (scipy.stats costs seconds to import)

    out_models: list[dict[str, Any]] = []
    values: list[float] = []
    skipped = 0
    factors = {} if factors is None else dict(factors)
    for model in models:
        used = [model.response, *model.predictors]
        ok = np.ones(len(next(iter(original.values()))), dtype=bool)
        for c in used:
            ok &= np.isfinite(original[c]) & np.isfinite(protected[c])
        if weights is not None:
            ok &= np.isfinite(weights)
        rows = np.flatnonzero(ok)
        entry: dict[str, Any] = {"model": model.text, "records": int(rows.size), "coefficients": None,
                                 "mean": None, "skipped": None}
        # one R per file and column set: the default models (each column on the others)
        # share it, so their cost is one pass over the data per file
        key = (tuple(sorted(used)), model.intercept)
        if key not in factors:
            w = None if weights is None else weights[rows]
            cols = list(key[0])
            factors[key] = (cols, *(r_factor(np.column_stack(
                ([np.ones(rows.size)] if model.intercept else []) + [side[c][rows] for c in cols]), w)
                for side in (original, protected)))
        cols, Ro, Rp = factors[key]
        shift = 1 if model.intercept else 0
        pos = {c: shift + i for i, c in enumerate(cols)}
        preds = ([0] if model.intercept else []) + [pos[c] for c in model.predictors]
        fo = fit_from_r(Ro, pos[model.response], preds, rows.size)
        fp = fit_from_r(Rp, pos[model.response], preds, rows.size)
        reason = None
        m = len(preds)
        if rows.size - m <= 0:
            reason = f"{rows.size} complete record(s) for {m} coefficient(s): no residual degree of freedom"
        elif fo.get("exact") or fp.get("exact"):
            which = "original" if fo.get("exact") else "protected"
            reason = (f"the response is an exact linear combination of the predictors in the {which} file "
                      "(no residual variance, no confidence interval)")
        elif fo["coef"] is None or fp["coef"] is None:
            which = "original" if fo["coef"] is None else "protected"
            reason = (f"singular design in the {which} file (rank {fo['rank'] if which == 'original' else fp['rank']}"
                      f" < {m} coefficients: a constant or collinear predictor)" if (fo if which == "original" else fp)["rank"] < m
                      else f"singular design in the {which} file")
        if reason is not None:
            if strict:
                raise DataError(f"--model {model.text!r}: {reason}")
            entry["skipped"] = reason
            skipped += 1
            out_models.append(entry)
            continue
        q = float(stdtrit(fo["df"], 0.5 + level / 2))
        coefs = []
        for j, term in enumerate(model.terms):
            lo_o, up_o = fo["coef"][j] - q * fo["se"][j], fo["coef"][j] + q * fo["se"][j]
            lo_p, up_p = fp["coef"][j] - q * fp["se"][j], fp["coef"][j] + q * fp["se"][j]
            J, raw = interval_overlap(lo_o, up_o, lo_p, up_p)
            values.append(J)
            coefs.append({"term": term, "estimate_original": float(fo["coef"][j]),
                          "estimate_protected": float(fp["coef"][j]),
                          "ci_original": [float(lo_o), float(up_o)], "ci_protected": [float(lo_p), float(up_p)],
                          "overlap": float(J), "overlap_raw": None if raw is None else float(raw)})
        entry["coefficients"] = coefs
        entry["mean"] = float(np.mean([c["overlap"] for c in coefs]))
        out_models.append(entry)
    return {
        "mean": float(np.mean(values)) if values else None,
        "min": float(np.min(values)) if values else None,
        "coefficients": len(values),
        "level": float(level),
        "weighted": weights is not None,
        "skipped": skipped,
        "models": out_models,
    }


def default_ci_overlap(X: np.ndarray, Xp: np.ndarray, names: Sequence[str], *,
                       weights: np.ndarray | None = None) -> dict[str, Any]:
    """:func:`ci_overlap` of the default models (:func:`default_models`) on two complete
    matrices with columns ``names``, plus ``left_out`` (the constant or collinear columns).

    One pass over each file: the R factor of ``[1, X]`` gives the collinear columns
    (:func:`independent_from_r`) and, re-triangularised on the kept columns, every
    default model (each kept column on the others).
    """
    X = np.asarray(X, dtype=np.float64)
    Xp = np.asarray(Xp, dtype=np.float64)
    names = list(names)
    ones = np.ones((X.shape[0], 1))
    Ro = r_factor(np.hstack([ones, X]), weights)
    models, left_out = default_models(names, keep=independent_from_r(Ro))
    kept = sorted(c for c in names if c not in left_out)
    factors = None
    if kept:
        Rp = r_factor(np.hstack([ones, Xp]), weights)
        idx = [0] + [1 + names.index(c) for c in kept]
        factors = {(tuple(kept), True): (kept, np.linalg.qr(Ro[:, idx], mode="r"), np.linalg.qr(Rp[:, idx], mode="r"))}
    out = ci_overlap({c: X[:, j] for j, c in enumerate(names)}, {c: Xp[:, j] for j, c in enumerate(names)},
                     models, weights=weights, strict=False, factors=factors)
    out["left_out"] = left_out
    return out


def ci_overlap_matrix(X: np.ndarray, Xp: np.ndarray, **options: Any) -> float | None:
    """The mean overlap of the default models on two matrices (columns ``c0, c1, ...``)."""
    return default_ci_overlap(X, Xp, [f"c{j}" for j in range(np.shape(X)[1])], **options)["mean"]
