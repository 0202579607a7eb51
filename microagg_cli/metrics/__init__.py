"""Risk and utility measures (numpy/scipy only), defined in sdc-metrics(7).

:func:`evaluate_arrays` computes every measure of :data:`METRICS` for an original matrix and
its protected version and returns a JSON-ready nested dict (plain Python types, None
for "not computed"). :data:`METRICS` lists every headline measure with its unit,
direction, place in that dict and reference; the CLI, the report and the docs read it.

Report schema (``"schema": "microagg_cli.evaluate/1"``; keys are stable -- renaming
or removing one is a breaking change)::

    n, p                       records and attributes
    blocks                     list of lists of column positions (one block = all)
    k                          minimum group size given, or None
    utility:
      il_sse                   {"overall", "per_block": [...]}            percent
      il1 .. il5               {"value", "cells", "skipped"}              ratios
      il_score                 {"value", "terms_used", "formula"}         percent
      il1s                     {"value", "cells", "skipped"}
      il_sse_raw               {"overall", "per_block"} percent, IL_SSE on the
                               unstandardised values (sdc evaluate --scale raw shows it)
      eigen, robeigen          {"value", "attributes", "skipped", "eigenvalues_skipped"}
                               sum |e - e'| / e of the (MCD) correlation eigenvalues
      data_quality             {"mean_sd_z": {"value", "skipped"},
                                "correlation_discrepancy": {"mean", "sd", "pairs", "skipped"},
                                "pc1": {"share_before", "share_after", "share_change",
                                        "loading_change", "correlation_change",
                                        "attributes", "skipped"}}
      optimality               None, or {"k", "il_sse", "lb_nn", "gap", "ratio"}, each
                               (except k) {"overall", "per_block"}; gap = IL_SSE - LB_NN
      ci_overlap, pmse, groups not from evaluate_arrays: :func:`model_utility` computes
                               them (sdc evaluate and sdc compare add them here)
    risk:
      parameters               {"distance", "rank", "pld_window", "pld_window_share",
                                "pld_method" ("exact" | "sampled"), "pld_exact_max",
                                "pld_sample", "pld_seed", "pld_confidence" (None when
                                exact), "dld_method", "dld_exact_max", "dld_sample",
                                "dld_seed", "dld_confidence", "id_percents",
                                "id_windows", "sdid_factor",
                                "sdid_max_outside", "k",
                                "tie_rule"}
      scenarios                {"mode": "all"|"sample"|"explicit", "count",
                                "max_all_subsets", "sample_size"}
      anonymity                {"k_prime", "k_min", "classes", "share_below_k"} over all
                               attributes
      sdid_all                 SDID with every attribute known (sdcMicro's dRisk); the
                               headline sdid is the mean over scenarios
      mean                     {"dld", "pld", "id", "sdid", "k_prime", "k_min",
                                "share_below_k"}: means over all scenarios
      worst                    same keys -> {"value", "attributes", "label"} (max for
                               risks, min for k_prime / k_min)
      by_label                 {"1G": {"scenarios", "mean": {...}, "worst": {...}}, ...}
      per_scenario             [{"attributes", "label", "size", "k_prime", "k_min",
                                 "classes", "share_below_k", "dld", "pld", "id",
                                 "id_by_percent", "sdid", "pld_em", "pld_bound",
                                 "dld_bound"}, ...] (bounds: None when exact; scenario
                               order: by size, then lexicographic; explicit: as given)
      pld_skipped_reason       None or why PLD was not computed
      dld_bound                None (exact DLD) or {"mean", "max", "rule"}, as pld_bound
      pld_bound                None (exact PLD) or {"mean", "max", "rule"}: the sampled
                               PLD's 95 % error bounds over the scenarios, in points
      dr                       {"value", "formula", "weights"}
      linkage                  {"method" ("exact" | "windows"), "distance", "scale",
                                "exact_max", "window", "windows", "seed", "tie_rule",
                                "scenarios", "max_scenarios", "records"}: the one-to-one
                               record linkage (per_scenario rows and mean / worst /
                               by_label carry "linkage", percent, None for scenarios it
                               was not computed for)
      rmd                      None, or {"rmdid1", "rmdid1w", "rmdid2", "rmdid2w",
                               "unsafe1", "unsafe2", "k", "k2", "scatter", "rcond"} over all
                               attributes (shares in [0, 1]; the weighted ones >= 0); on a
                               singular scatter the figures are None and "skipped_reason"
                               says why
    score                      {"value", "formula", "weights"}

Percentages are in [0, 100] except ``sdid`` and ``share_below_k`` (shares in [0, 1],
sdcMicro's scale) and the raw IL1..IL5 / IL1s ratios.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from . import groups, pmse, regression, risk, scenarios, utility
from . import linkage as _linkage
from .evaluate import SCHEMA, MeasureOptions, evaluate_arrays, model_utility
from .risk import (
    DEFAULT_DR_WEIGHTS,
    DEFAULT_ID_PERCENTS,
    DEFAULT_SCORE_WEIGHTS,
    RiskEvaluator,
    disclosure_risk,
    dld,
    fellegi_sunter_em,
    interval_disclosure,
    overall_score,
    pld,
    real_anonymity,
    sdid,
)
from .linkage import LinkageEvaluator
from .rmd import RMD_K, RMD_K2, rmd_risk
from .scenarios import all_subsets, default_scenarios, sample_subsets, scenario_label
from .utility import data_quality, eigen, il1s, il_score, il_sse, il_sse_blocks, lb_nn, lb_nn_blocks
from .utility import optimality_gap, robeigen

__all__ = [
    "SCHEMA",
    "MetricSpec",
    "GateSpec",
    "METRICS",
    "GATE_ORDER",
    "evaluate_arrays",
    "MeasureOptions",
    # the utility measures
    "il_sse", "il_sse_blocks", "il_score", "il1s", "eigen", "robeigen", "data_quality",
    "lb_nn", "lb_nn_blocks", "optimality_gap",
    "dld",
    "pld",
    "interval_disclosure",
    "sdid",
    "real_anonymity",
    "LinkageEvaluator",
    "rmd_risk",
    "fellegi_sunter_em",
    "disclosure_risk",
    "overall_score",
    "RiskEvaluator",
    "all_subsets",
    "sample_subsets",
    "default_scenarios",
    "scenario_label",
    "DEFAULT_DR_WEIGHTS",
    "DEFAULT_SCORE_WEIGHTS",
    "DEFAULT_ID_PERCENTS",
    "risk",
    "scenarios",
    "utility",
    "regression",
    "pmse",
    "groups",
    "model_utility",
]


# ---------------------------------------------------------------------------------
# registry


@dataclass(frozen=True)
class MetricSpec:
    """One headline measure.

    Attributes
    ----------
    name : identifier used by the CLI (``--max-risk dld=5``) and the docs.
    kind : ``"utility"`` or ``"risk"``.
    summary : one line for ``--help`` and the README.
    unit : ``"percent"``, ``"ratio"``, ``"share"`` or ``"records"``.
    better : ``"lower"`` or ``"higher"``.
    report_key : dotted path of the value in the :func:`evaluate_arrays` dict.
    reference : authors (year), title, venue.
    func : ``func(X, Xp, **params) -> float | None`` computing the headline value on
        its own (risk measures: intruder knows all attributes).
    params : names of the keyword parameters ``func`` accepts.
    identity : value under identity protection (Xp = X) of a file with distinct
        values in every column, or None when it depends on the data.
    heading : the column heading in tables and reports (``"IL_SSE"``, ``"k'"``).
    digits : decimals shown in tables.
    formula : the definition as one line of text (the reports' "formulas").
    gate : the release gate of ``sdc evaluate`` on this measure, or None.
    notes : why the definition holds or how it is computed, for sdc-metrics(7)
        (e.g. the proof that LB_NN is a lower bound).
    """

    name: str
    kind: str
    summary: str
    unit: str
    better: str
    report_key: str
    reference: str
    func: Callable[..., float | None] = field(repr=False)
    params: tuple[str, ...] = ()
    identity: float | None = None
    heading: str = ""
    digits: int = 2
    formula: str = ""
    gate: GateSpec | None = None
    notes: str = ""


@dataclass(frozen=True)
class GateSpec:
    """A release gate of ``sdc evaluate`` on a measure (see :data:`METRICS`).

    ``direction``: ``"max"`` (the value must be <= the threshold) or ``"min"``;
    ``stat``: ``"scenarios"`` for figures computed per intruder scenario (the gate
    checks the worst scenario or the mean) or ``"overall"``; ``field``: key in the risk
    summaries or the evaluate report's ``summary``; ``metavar`` and ``help`` make the
    CLI option ``--max-NAME`` / ``--min-NAME``.
    """

    option: str
    direction: str
    stat: str
    field: str
    metavar: str
    help: str

    @property
    def key(self) -> str:
        """The keyword of :func:`microagg_cli.api.evaluate`'s ``gates`` (``max_dld``)."""
        return self.option.lstrip("-").replace("-", "_")


def _score_term(term: str) -> Callable[..., float | None]:
    def f(X: np.ndarray, Xp: np.ndarray) -> float | None:
        return il_score(X, Xp)[term]["value"]

    f.__name__ = term
    return f


_DF_MS = ("Domingo-Ferrer & Mateo-Sanz (2002), Practical data-oriented microaggregation "
          "for statistical disclosure control, IEEE TKDE 14(1)")
_DF_T = ("Domingo-Ferrer & Torra (2001), A quantitative comparison of disclosure control "
         "methods for microdata, in Confidentiality, Disclosure and Data Access, North-Holland")
_TM = ("Templ & Meindl (2008), Robust statistics meets SDC: new disclosure risk measures for "
       "continuous microdata masking, PSD 2008, LNCS 5262")
_MS_DF = ("Mateo-Sanz & Domingo-Ferrer (1998), A comparative study of microaggregation "
          "methods, Questiio 22(3)")

def _il_term(name: str, summary: str) -> MetricSpec:
    """A row of IL1..IL5: a ratio of the score family (lower is better, 0 under identity)."""
    return MetricSpec(name, "utility", summary, "ratio", "lower", f"utility.{name}.value", _DF_T,
                      func=_score_term(name), identity=0.0, heading=name.upper(), digits=3)


#: Why LB_NN is a lower bound (sdc-metrics(7) prints it).
_LB_NN_PROOF = ("The SSE of a group g of m >= k records is 1/(2m) times the sum of squared distances over "
                "the ordered pairs of g; each record's m-1 partners are on average at least as far as its k-1 "
                "nearest neighbours among all records, and (m-1)/m >= (k-1)/k, so every group's SSE is at least "
                "1/(2k) times its records' sums of squared distances to their k-1 nearest neighbours. Summed "
                "over the groups, LB_NN bounds the IL_SSE of every k-partition from below, the optimal one "
                "included; the nearest neighbours come from a k-d tree, O(n log n) for a fixed number of "
                "attributes.")

_SPECS: tuple[MetricSpec, ...] = (
    MetricSpec("il_sse", "utility", "100 * SSE / SST on z-scores (the microaggregation IL)",
               "percent", "lower", "utility.il_sse.overall", _DF_MS,
               func=lambda X, Xp: il_sse(X, Xp), identity=0.0,
               heading="IL_SSE", digits=4, formula="IL_SSE = 100 * ||Z - Z'||^2 / ||Z - mean(Z)||^2 (Z, Z' z-scored with the "
               "original's means and population sds; per block and overall = sums over blocks)",
               gate=GateSpec("--max-il", "max", "overall", "il_sse", "PCT",
                             "Fail (exit code 5) when IL_SSE over all evaluated columns exceeds PCT %.")),
    _il_term("il1", "mean |x - x'| / |x| over cells"),
    _il_term("il2", "mean relative change of attribute means"),
    _il_term("il3", "mean relative change of covariances (i <= j)"),
    _il_term("il4", "mean relative change of variances"),
    _il_term("il5", "mean |r - r'| over attribute pairs"),
    MetricSpec("il_score", "utility", "100 * mean of IL1..IL5 capped at 1", "percent", "lower",
               "utility.il_score.value", _DF_T, func=_score_term("il_score"), identity=0.0,
               heading="IL_score", formula="IL_score = 100 * mean of IL1..IL5, each capped at 1"),
    MetricSpec("il1s", "utility", "mean |x - x'| / (sqrt(2) s) over cells", "ratio", "lower",
               "utility.il1s.value", _DF_T,
               func=lambda X, Xp: il1s(X, Xp)["value"], identity=0.0,
               heading="IL1s", digits=3, formula="IL1s = mean over cells of |x - x'| / (sqrt(2) * s_j), s_j the sample sd of "
               "original column j"),
    MetricSpec("il_sse_raw", "utility",
               "100 * SSE / SST on unstandardised values (sdc evaluate --scale raw)",
               "percent", "lower", "utility.il_sse_raw.overall", _DF_MS,
               func=lambda X, Xp: il_sse_blocks(X, Xp, scale="raw")["overall"], identity=0.0,
               heading="IL_SSE raw", digits=4),
    MetricSpec("eigen", "utility", "sum |e - e'| / e of the correlation matrix's eigenvalues",
               "ratio", "lower", "utility.eigen.value", _TM,
               func=lambda X, Xp: eigen(X, Xp)["value"], identity=0.0,
               heading="eigen", digits=3),
    MetricSpec("robeigen", "utility", "sum |e - e'| / e of the MCD correlation's eigenvalues",
               "ratio", "lower", "utility.robeigen.value", _TM,
               func=lambda X, Xp: robeigen(X, Xp)["value"], identity=0.0,
               heading="robeigen", digits=3),
    MetricSpec("mean_sd_z", "utility",
               "mean sd of the z-scored protected attributes (1 = none lost)",
               "ratio", "higher", "utility.data_quality.mean_sd_z.value", _MS_DF,
               func=lambda X, Xp: data_quality(X, Xp)["mean_sd_z"]["value"], identity=1.0,
               heading="mean sd(z')", digits=3),
    MetricSpec("correlation_discrepancy", "utility", "mean |r - r'| of the correlation matrix",
               "ratio", "lower", "utility.data_quality.correlation_discrepancy.mean", _MS_DF,
               func=lambda X, Xp: data_quality(X, Xp)["correlation_discrepancy"]["mean"],
               identity=None,
               heading="|r - r'|", digits=3),  # None for p = 1
    MetricSpec("pc1_loading_change", "utility", "mean |l - l'| of the first PC's loadings",
               "ratio", "lower", "utility.data_quality.pc1.loading_change", _MS_DF,
               func=lambda X, Xp: data_quality(X, Xp)["pc1"]["loading_change"], identity=0.0,
               heading="PC1 loadings", digits=3),
    MetricSpec("ci_overlap", "utility",
               "mean confidence-interval overlap of regression coefficients fitted on both files (1 = same)",
               "ratio", "higher", "utility.ci_overlap.mean", regression.REFERENCE,
               func=lambda X, Xp: regression.ci_overlap_matrix(X, Xp), identity=1.0,
               heading="CI overlap", digits=3, formula=regression.CI_OVERLAP_FORMULA,
               gate=GateSpec("--min-ci-overlap", "min", "overall", "ci_overlap", "J",
                             "Fail (exit code 5) when the mean confidence-interval overlap of the regression "
                             "coefficients (--model) is below J (0 to 1).")),
    MetricSpec("pmse_ratio", "utility",
               "pMSE over its null expectation: how well a logistic model tells protected from original rows",
               "ratio", "lower", "utility.pmse.ratio", pmse.REFERENCE,
               func=lambda X, Xp: pmse.pmse(X, Xp)["ratio"], identity=0.0,
               heading="pMSE ratio", digits=3, formula=pmse.PMSE_FORMULA),
    MetricSpec("group_mean_change", "utility",
               "largest |relative change| of a group mean (--by groups; all records as one group by default)",
               "percent", "lower", "utility.groups.max_abs_mean_change", groups.REFERENCE,
               func=lambda X, Xp: groups.group_mean_change(X, Xp), identity=0.0,
               heading="group mean change", digits=3, formula=groups.GROUP_FORMULA),
    MetricSpec("lb_nn", "utility",
               "lower bound on IL_SSE of any k-partition (k-1 nearest neighbours)",
               "percent", "lower", "utility.optimality.lb_nn.overall",
               "this project (the proof is in sdc-metrics(7))",
               func=lambda X, Xp, k=3: lb_nn(X, k), params=("k",), identity=None,
               heading="LB_NN", digits=4, formula="LB_NN = 100 * (1/(2k)) * sum_i sum_{l=1..k-1} d^2(z_i, l-th nearest neighbour) / "
               "SST (a lower bound on IL_SSE of any k-partition); gap = IL_SSE - LB_NN",
               notes=_LB_NN_PROOF),
    MetricSpec("optimality_gap", "utility", "IL_SSE - LB_NN (percentage points)", "percent",
               "lower", "utility.optimality.gap.overall", "this project (LB_NN in sdc-metrics(7))",
               func=lambda X, Xp, k=3: optimality_gap(X, Xp, k)["gap"]["overall"],
               params=("k",), identity=None,
               heading="gap", digits=4),
    MetricSpec("dld", "risk", "distance-based record linkage, % linked correctly", "percent",
               "lower", "risk.mean.dld", _DF_T,
               func=lambda X, Xp: dld(X, Xp), identity=100.0,
               heading="DLD", formula="DLD = 100 * (links to the true record by nearest z-scored distance, ties 1/t) / n",
               gate=GateSpec("--max-dld", "max", "scenarios", "dld", "PCT",
                             "Fail (exit code 5) when DLD, the share of records linked correctly by distance, "
                             "exceeds PCT %.")),
    MetricSpec("pld", "risk", "probabilistic (Fellegi-Sunter/EM) record linkage, % linked",
               "percent", "lower", "risk.mean.pld",
               "Jaro (1989), Advances in record-linkage methodology, JASA 84(406)",
               func=lambda X, Xp, window_share=0.01: pld(X, Xp, window_share=window_share)["value"],
               params=("window_share",), identity=None,
               heading="PLD", formula="PLD = 100 * (links to the true record by highest Fellegi-Sunter weight, EM-fitted, "
               "ties 1/t) / n"),
    MetricSpec("id", "risk", "rank-based interval disclosure, mean of ID(1..10)", "percent",
               "lower", "risk.mean.id",
               "Mateo-Sanz, Sebe & Domingo-Ferrer (2004), Outlier protection in continuous "
               "microdata masking, PSD 2004, LNCS 3050",
               func=lambda X, Xp: interval_disclosure(X, Xp)["value"], identity=100.0,
               heading="ID", formula="ID = mean over p = 1..10 % of 100 * (original values inside the rank interval of "
               "width p % around the protected value) / (n * |S|)",
               gate=GateSpec("--max-id", "max", "scenarios", "id", "PCT",
                             "Fail (exit code 5) when ID, the interval-disclosure share averaged over 1..10 % "
                             "intervals, exceeds PCT %.")),
    MetricSpec("sdid", "risk", "sdcMicro dRisk: share of records within 0.05 sd everywhere",
               "share", "lower", "risk.mean.sdid",
               "Templ, Kowarik & Meindl (2015), Statistical disclosure control for micro-data "
               "using the R package sdcMicro, JSS 67(4)",
               func=lambda X, Xp, factor=0.05: sdid(X, Xp, factor=factor),
               params=("factor",), identity=1.0,
               heading="SDID", digits=4, formula="SDID = share of records whose every protected value lies within 0.05 * sd(x'_j) "
               "of its original"),
    MetricSpec("k_prime", "risk", "real anonymity n / distinct protected rows", "records",
               "higher", "risk.anonymity.k_prime",
               "Domingo-Ferrer & Torra (2005), Ordinal, continuous and heterogeneous "
               "k-anonymity through microaggregation, DMKD 11(2)",
               func=lambda X, Xp: real_anonymity(Xp)["k_prime"], identity=1.0,
               heading="k'", formula="k' = n / (number of distinct protected rows over the known attributes); k_min = "
               "smallest class; share_below_k = share of records in classes smaller than k",
               gate=GateSpec("--min-kprime", "min", "scenarios", "k_prime", "K",
                             "Fail (exit code 5) when the real anonymity k' (records per distinct protected row) "
                             "is below K.")),
    MetricSpec("dr", "risk", "DR = 0.25 DLD + 0.25 PLD + 0.5 ID over the intruder scenarios",
               "percent", "lower", "risk.dr.value", _DF_T,
               func=lambda X, Xp: evaluate_arrays(X, Xp)["risk"]["dr"]["value"], identity=None,
               heading="DR"),
    MetricSpec("score", "risk", "score = 0.5 IL_score + 0.5 DR (lower is better)", "percent",
               "lower", "score.value", _DF_T,
               func=lambda X, Xp: evaluate_arrays(X, Xp)["score"]["value"], identity=None,
               heading="score",
               gate=GateSpec("--max-score", "max", "overall", "score", "S",
                             "Fail (exit code 5) when score = 0.5 * IL_score + 0.5 * DR exceeds S.")),
)

_HNRT = ("Herranz, Nin, Rodriguez & Tassa (2015), Revisiting distance-based record linkage for "
         "privacy-preserving release of statistical datasets, Data & Knowledge Engineering 100")


def _rmd_figure(name: str) -> Callable[..., float | None]:
    def f(X: np.ndarray, Xp: np.ndarray, k: float = RMD_K, k2: float = RMD_K2) -> float | None:
        return rmd_risk(X, Xp, k=k, k2=k2)[name]

    f.__name__ = name
    return f


_SPECS = _SPECS + (
    MetricSpec("linkage", "risk", "one-to-one distance-based record linkage, % linked correctly", "percent",
               "lower", "risk.mean.linkage", _HNRT,
               func=lambda X, Xp, distance="euclidean": _linkage.linkage(X, Xp, distance=distance),
               params=("distance",), identity=100.0, heading="linkage",
               formula="linkage = 100 * (originals linked to their true record by the one-to-one assignment of "
               "smallest total squared z-scored Euclidean distance, identical records sharing the credit) / n",
               gate=GateSpec("--max-linkage", "max", "scenarios", "linkage", "PCT",
                             "Fail (exit code 5) when linkage, the share of records linked correctly by the "
                             "one-to-one assignment of smallest total distance, exceeds PCT %.")),
    MetricSpec("rmdid1", "risk", "sdcMicro dRiskRMD: share of records with a value inside its RMD-weighted "
               "interval", "share", "lower", "risk.rmd.rmdid1", _TM,
               func=_rmd_figure("rmdid1"), params=("k", "k2"), identity=None, heading="RMDID1", digits=4,
               formula="RMDID1 = share of records with a protected value strictly within k * 0.05 * RMD_i of its "
               "original (both files standardized; RMD_i the robust Mahalanobis distance under the MCD scatter; "
               "k = 0.01)"),
    MetricSpec("rmdid1w", "risk", "sdcMicro dRiskRMD wrisk1: |U| * sum of 0.05 RMD over the RMDID1 records / n",
               "ratio", "lower", "risk.rmd.rmdid1w", _TM,
               func=_rmd_figure("rmdid1w"), params=("k", "k2"), identity=None, heading="RMDID1w", digits=4,
               formula="RMDID1w = |U1| * sum_{i in U1} 0.05 * RMD_i / n, U1 the RMDID1 records (sdcMicro's wrisk1)"),
    MetricSpec("rmdid2", "risk", "sdcMicro dRiskRMD: RMDID1 records with no other protected record within k2",
               "share", "lower", "risk.rmd.rmdid2", _TM,
               func=_rmd_figure("rmdid2"), params=("k", "k2"), identity=None, heading="RMDID2", digits=4,
               formula="RMDID2 = share of RMDID1 records with no other protected record within Euclidean "
               "distance k2 = 0.05 (standardized)"),
)

#: name -> MetricSpec, in report order: the one catalogue of measures. The gates of
#: ``sdc evaluate`` (:data:`microagg_cli.evaluation.GATES` and the CLI options), the
#: formulas of every report and the headings of every table derive from it.
METRICS: dict[str, MetricSpec] = {spec.name: spec for spec in _SPECS}

#: The gates, in CLI option order (--max-dld, --max-id, --max-score, --min-kprime, --max-il,
#: --min-ci-overlap, --max-linkage).
GATE_ORDER: tuple[str, ...] = ("dld", "id", "score", "k_prime", "il_sse", "ci_overlap", "linkage")
