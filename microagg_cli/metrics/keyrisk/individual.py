"""Individual, global and household re-identification risk (Benedetti-Franconi).

The intruder matches a record's key combination against the population; the record is
re-identified with probability 1 / F, F the (unknown) population frequency of its
combination. Given the sample frequency f and the sampling fraction p = f / F_hat
(F_hat the sum of the class's sampling weights), F - f is modelled as negative
binomial with f successes and success probability p, and the individual risk is

    r = E[1 / F | f] = p^f * int_0^1 t^(f-1) (1 - q t)^(-f) dt,   q = 1 - p

(Benedetti & Franconi 1998; Franconi & Polettini 2004). Closed forms:

- f = 1: r = p / q * log(1 / p)
- f = 2: r = p / q - (p / q)^2 * log(1 / p)
- f = 3: r = p / q^3 * (q (1 - 3 p) / 2 + p^2 log(1 / p))

``method="approx"`` (sdcMicro's ``measure_risk`` and ``indivRisk`` default) uses the
closed forms for f = 1, 2 and the approximation r = p / (f - q) from f = 3 on;
``method="exact"`` uses the closed forms for f <= 3 and the integral for larger f
(:func:`~microagg_cli.metrics._keyrisk_kernels.negbin_exact_risk`). Both give 1 / f
when F_hat = f (p = 1: the file is the population, or every weight of the class is 1);
F_hat < f (weights below 1) is read as p = 1. Without weights every risk is 1 / f_k.
For p >= 1/2 the closed forms lose every digit as p -> 1 (they divide by q^3); there
the same values come from the integral's series, so the risk stays in [0, 1 / f] (where
sdcMicro's closed forms can print, for F_hat = 2.0000001 and f = 2, 0.479 for 0.5).

The global risk is the expected number of re-identifications ER = sum_i r_i, also as a
share ER / n (sdcMicro ``global_risk``, ``global_risk_ER``, ``global_risk_pct``). The
household risk of a record is 1 - prod_{j in its household} (1 - r_j), the probability
that at least one member is re-identified (Hundepool et al. 2012, 3.5.3); its ER is
the sum over records (sdcMicro ``hier_risk_ER``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._keyrisk_kernels import negbin_exact_risk

__all__ = ["RISK_METHODS", "individual_risk", "global_risk", "household_risk", "risk_distribution"]

RISK_METHODS = ("approx", "exact")


def individual_risk(fk: Any, Fk: Any = None, *, method: str = "approx") -> np.ndarray:
    """(n,) Benedetti-Franconi risk of each record from its f_k and F_k (module doc).

    ``Fk=None``: the file is the population, r = 1 / f_k.

    Examples
    --------
    >>> individual_risk([1, 2, 2], [100.0, 2.0, 8.0]).round(6).tolist()
    [0.046517, 0.5, 0.179301]
    """
    if method not in RISK_METHODS:
        raise ValueError(f"method must be one of {RISK_METHODS}, got {method!r}")
    f = np.asarray(fk, dtype=np.int64).reshape(-1)
    if Fk is None:
        return 1.0 / f
    F = np.asarray(Fk, dtype=np.float64).reshape(-1)
    p = np.minimum(f / F, 1.0)
    r = np.empty(f.shape[0])
    full = p >= 1.0
    r[full] = 1.0 / f[full]
    rest = ~full
    pp, ff = p[rest], f[rest]
    q = 1.0 - pp
    lg = np.log(1.0 / pp)
    out = np.empty(pp.shape[0])
    one, two, three, more = ff == 1, ff == 2, ff == 3, ff > 3
    with np.errstate(divide="ignore", invalid="ignore"):
        out[one] = pp[one] / q[one] * lg[one]
        out[two] = pp[two] / q[two] - (pp[two] / q[two]) ** 2 * lg[two]
        if method == "approx":
            big = three | more
            out[big] = pp[big] / (ff[big] - q[big])
            series = (one | two) & (pp >= 0.5)
        else:
            p3, q3 = pp[three], q[three]
            out[three] = p3 / q3 ** 3 * (q3 * (1.0 - 3.0 * p3) / 2.0 + p3 ** 2 * lg[three])
            series = more | ((one | two | three) & (pp >= 0.5))
    if series.any():
        # the closed forms cancel catastrophically as p -> 1 (q^3 in a denominator): there
        # the same value comes from the integral's series; one evaluation per distinct (f, p)
        fp = np.stack([ff[series].astype(np.float64), pp[series]], axis=1)
        uniq, inv = np.unique(fp, axis=0, return_inverse=True)
        vals = np.empty(uniq.shape[0])
        negbin_exact_risk(np.ascontiguousarray(uniq[:, 0]).astype(np.int64),
                          np.ascontiguousarray(uniq[:, 1]), vals)
        out[series] = vals[inv.reshape(-1)]
    # rounding can leave the closed forms a hair outside [1/F-ish, 1]; a risk is a probability
    r[rest] = np.clip(out, 0.0, 1.0)
    return r


def global_risk(risk: np.ndarray) -> dict[str, float]:
    """Expected re-identifications ER = sum r_i, and ER / n as a share and a percentage."""
    r = np.asarray(risk, dtype=np.float64)
    er = float(r.sum())
    share = er / r.size if r.size else 0.0
    return {"expected_reidentifications": er, "share": share, "percent": 100.0 * share}


def household_risk(risk: np.ndarray, household: np.ndarray) -> np.ndarray:
    """(n,) 1 - prod (1 - r_j) over each record's household (``household``: (n,) ids,
    any integers). Computed as 1 - exp(sum log(1 - r_j)), with r_j = 1 giving 1."""
    r = np.asarray(risk, dtype=np.float64)
    _, hh = np.unique(np.asarray(household), return_inverse=True)
    hh = hh.reshape(-1)
    certain = np.bincount(hh, weights=(r >= 1.0).astype(np.float64)) > 0
    logs = np.bincount(hh, weights=np.log1p(-np.where(r >= 1.0, 0.0, r)))
    hr = -np.expm1(logs)
    hr[certain] = 1.0
    return hr[hh]


#: The upper bounds of the risk distribution's bins (sdcMicro prints quantiles; a
#: review board asks "how many records above 1 %, 5 %, 10 %, 50 %").
RISK_BINS = (0.01, 0.05, 0.1, 0.2, 0.5, 1.0)


def risk_distribution(risk: np.ndarray) -> dict[str, Any]:
    """Quantiles (min, 25/50/75/90/99 %, max, mean) and the records above each of
    :data:`RISK_BINS` (strictly above; the last bin counts r = 1)."""
    r = np.asarray(risk, dtype=np.float64)
    if r.size == 0:
        return {"quantiles": None, "above": []}
    qs = np.quantile(r, [0.0, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0])
    names = ("min", "q25", "median", "q75", "q90", "q99", "max")
    above = [{"threshold": t, "records": int((r > t).sum() if t < 1.0 else (r >= 1.0).sum())}
             for t in RISK_BINS]
    return {"quantiles": {**dict(zip(names, map(float, qs))), "mean": float(r.mean())}, "above": above}
