"""Disclosure risk of categorical keys in one file (numpy only), defined in sdc-metrics(7).

The figures sdcMicro and mu-ARGUS print for a file with categorical key variables,
computed from the literature's definitions:

- :mod:`.frequencies` -- sample frequencies f_k (a missing key matches any category),
  population estimates F_k (sums of sampling weights), k-anonymity violations;
- :mod:`.individual` -- Benedetti-Franconi individual risk, global risk (expected
  re-identifications), household risk;
- :mod:`.diversity` -- distinct and entropy l-diversity of sensitive variables;
- :mod:`.suda` -- SUDA2 minimal sample uniques, SUDA and DIS-SUDA scores;
- :mod:`.combinations` -- mu-ARGUS combinations up to a size with their unsafe cells.

:func:`key_risk` computes all of them for one file and returns a JSON-ready dict plus
the per-record arrays (under ``"records"``, numpy arrays, for the caller to pick from).

References
----------
Benedetti, R. & Franconi, L. (1998), Statistical and technological solutions for
controlled data dissemination, Pre-proceedings of NTTS 1998, 225-232.
Franconi, L. & Polettini, S. (2004), Individual risk estimation in mu-Argus: a review,
Privacy in Statistical Databases, LNCS 3050, 262-272.
Elamir, E. A. H. & Skinner, C. J. (2006), Record level measures of disclosure risk for
survey microdata, Journal of Official Statistics 22(3), 525-539.
Manning, A. M., Haglin, D. J. & Keane, J. A. (2008), A recursive search algorithm for
statistical disclosure assessment, Data Mining and Knowledge Discovery 16, 165-196.
Machanavajjhala, A., Kifer, D., Gehrke, J. & Venkitasubramaniam, M. (2007),
l-Diversity: privacy beyond k-anonymity, ACM TKDD 1(1).
Hundepool, A. et al. (2012), Statistical Disclosure Control, Wiley, chapter 3.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations as key_sets
from typing import Any, Mapping, Sequence

import numpy as np

from .combinations import CombinationTable, combinations_table
from .diversity import l_diversity
from .frequencies import (
    DEFAULT_VIOLATION_K,
    MISSING,
    as_codes,
    group_codes,
    sample_frequencies,
    subset_classes,
    violations,
)
from .individual import RISK_METHODS, global_risk, household_risk, individual_risk, risk_distribution
from .suda import DIS_BINS, msu_weight, suda2

__all__ = [
    "MISSING", "DEFAULT_VIOLATION_K", "RISK_METHODS", "DIS_BINS",
    "as_codes", "group_codes", "sample_frequencies", "violations",
    "individual_risk", "global_risk", "household_risk", "risk_distribution",
    "l_diversity", "suda2", "msu_weight", "combinations_table", "key_risk",
    "SUDA_DEFAULT_MAX_KEYS", "key_summary", "before_after", "KeyRiskOptions",
]

#: Without an explicit SUDA2 size, MSUs are searched over every key (sdcMicro) up to
#: this many keys, and up to size 3 beyond (2^A subsets would not finish).
SUDA_DEFAULT_MAX_KEYS = 10


@dataclass(frozen=True)
class KeyRiskOptions:
    """The parameters of :func:`key_risk` (the data arrays are its arguments).

    k : the k of the combinations' unsafe cells (and of the headline violation count).
    l : the l-diversity threshold. violation_k : the k values of the violation counts.
    risk_method : ``"approx"`` (sdcMicro) or ``"exact"``.
    max_combination_size : combinations of up to this many keys (default min(q, 3)).
    suda : compute SUDA2; suda_max_size : its largest MSU (default q when q <= 10,
    else 3); dis_fraction : the DIS score's sampling fraction.
    top : the combinations listed (the unsafe ones first).
    """

    k: int = 3
    l: int = 2  # noqa: E741
    violation_k: tuple[int, ...] = DEFAULT_VIOLATION_K
    risk_method: str = "approx"
    max_combination_size: int | None = None
    suda: bool = True
    suda_max_size: int | None = None
    dis_fraction: float = 0.01
    top: int = 20


def key_risk(codes: Any, names: Sequence[str], *, weights: Any = None, household: Any = None,
             sensitive: Mapping[str, Any] | None = None, options: KeyRiskOptions | None = None) -> dict[str, Any]:
    """Every measure of this package for one file.

    Parameters
    ----------
    codes : (n, q) key codes, -1 missing. names : the q key names.
    weights : (n,) sampling weights > 0 or None (then F_k = f_k and risk = 1 / f_k).
    household : (n,) household ids or None. sensitive : name -> (n,) integer codes.
    options : :class:`KeyRiskOptions` (default: its defaults).

    Returns
    -------
    The JSON-ready sections (``frequencies``, ``violations``, ``individual``,
    ``global``, ``household``, ``l_diversity``, ``suda2``, ``combinations``,
    ``parameters``) and ``records``: numpy arrays ``fk``, ``Fk``, ``risk``,
    ``household_risk``, ``suda_score``, ``dis_score`` (None when not computed).
    """
    o = KeyRiskOptions() if options is None else options
    k, l, violation_k, risk_method = o.k, o.l, o.violation_k, o.risk_method  # noqa: E741
    max_combination_size, suda, suda_max_size = o.max_combination_size, o.suda, o.suda_max_size
    dis_fraction, top = o.dis_fraction, o.top
    c = as_codes(codes)
    n, q = c.shape
    names = list(names)
    w = None if weights is None else np.asarray(weights, dtype=np.float64).reshape(-1)
    fk, Fk = sample_frequencies(c, w)
    risk = individual_risk(fk, Fk if w is not None else None, method=risk_method)
    glob = global_risk(risk)
    cls, m = group_codes(c)
    sizes = np.bincount(cls, minlength=m)
    out: dict[str, Any] = {
        "parameters": {"k": int(k), "violation_k": [int(x) for x in violation_k], "risk_method": risk_method,
                       "weighted": w is not None, "missing_rule": "a missing key value matches any category",
                       "l": int(l), "dis_fraction": float(dis_fraction)},
        "frequencies": {
            "records": int(n), "keys": names,
            "classes": int(m), "sample_uniques": int((fk == 1).sum()),
            "fk_min": int(fk.min()) if n else None, "fk_mean": float(fk.mean()) if n else None,
            "Fk_min": float(Fk.min()) if n else None,
            "population": float(w.sum()) if w is not None else None,
            "missing_values": int((c < 0).sum()),
            "class_sizes": {str(s): int(x) for s, x in zip(*np.unique(np.minimum(sizes, 11), return_counts=True))},
        },
        "violations": violations(fk, sorted(set(violation_k) | {int(k)}), w),
        "individual": {**risk_distribution(risk)},
        "global": glob,
    }
    if out["frequencies"]["class_sizes"].pop("11", None) is not None:
        out["frequencies"]["class_sizes"][">10"] = int((sizes > 10).sum())
    records: dict[str, Any] = {"fk": fk, "Fk": Fk, "risk": risk, "household_risk": None,
                               "suda_score": None, "dis_score": None}
    if household is not None:
        hr = household_risk(risk, household)
        records["household_risk"] = hr
        _, hh_count = np.unique(np.asarray(household), return_counts=True)
        out["household"] = {**global_risk(hr), "households": int(hh_count.size),
                            "max_household_size": int(hh_count.max()) if hh_count.size else 0}
    else:
        out["household"] = None
    out["l_diversity"] = []
    for name, values in (sensitive or {}).items():
        res = l_diversity(c, values, l=l)
        res.pop("per_record")
        out["l_diversity"].append({"variable": name, **res})
    m_comb = min(q, 3) if max_combination_size is None else min(int(max_combination_size), q)
    table = CombinationTable(n, k, names, m_comb)
    if suda and q:
        m_suda = (q if q <= SUDA_DEFAULT_MAX_KEYS else 3) if suda_max_size is None else min(int(suda_max_size), q)
        sres = suda2(c, max_size=m_suda, dis_fraction=dis_fraction, names=names, visit=table)
        # the combinations beyond SUDA2's size are grouped on their own
        if m_comb > m_suda:
            for size in range(m_suda + 1, m_comb + 1):
                for S in key_sets(range(q), size):
                    table(S, *subset_classes(c, S))
        records["suda_score"] = sres.pop("score")
        records["dis_score"] = sres.pop("dis_score")
        sres.pop("msu_count")
        sres.pop("contribution")
        sres["score_max"] = float(records["suda_score"].max()) if n else None
        sres["dis_score_mean"] = float(records["dis_score"].mean()) if n else None
        sres["dis_score_max"] = float(records["dis_score"].max()) if n else None
        out["suda2"] = sres
    else:
        out["suda2"] = None
        if q:
            out["combinations"] = combinations_table(c, k, max_size=m_comb, names=names, top=top)
    if "combinations" not in out:
        out["combinations"] = table.result(top) if q else None
    out["records"] = records
    return out


def key_summary(codes: Any, k: int, *, weights: Any = None, risk_method: str = "approx") -> dict[str, Any]:
    """The headline figures of a file's keys: sample uniques, records violating
    k-anonymity (f_k < k), the Benedetti-Franconi global risk (expected
    re-identifications, and %) and the largest individual risk. What ``sdc evaluate``
    and ``sdc compare`` show for their categorical keys."""
    c = as_codes(codes)
    w = None if weights is None else np.asarray(weights, dtype=np.float64).reshape(-1)
    fk, Fk = sample_frequencies(c, w)
    r = individual_risk(fk, Fk if w is not None else None, method=risk_method)
    g = global_risk(r)
    bad = fk < k
    return {"records": int(c.shape[0]), "sample_uniques": int((fk == 1).sum()), "k": int(k),
            "violations": int(bad.sum()), "violations_share": float(bad.mean()) if c.shape[0] else 0.0,
            "expected_reidentifications": g["expected_reidentifications"], "global_risk_percent": g["percent"],
            "max_risk": float(r.max()) if r.size else None, "weighted": w is not None,
            "risk_method": risk_method}


def before_after(original: Any, released: Any, k: int, *, weights: Any = None) -> dict[str, Any]:
    """:func:`key_summary` of the original keys and of the released keys (same records,
    same coding; -1 missing), and whether the release lowered the global risk and holds
    k-anonymity over its keys."""
    before = key_summary(original, k, weights=weights)
    after = key_summary(released, k, weights=weights)
    return {"before": before, "after": after,
            "risk_lowered": after["expected_reidentifications"] < before["expected_reidentifications"],
            "k_anonymous_after": after["violations"] == 0,
            "rule": "a missing key value matches any category; risk: Benedetti-Franconi (approx), "
                    "1 / f_k without weights"}
