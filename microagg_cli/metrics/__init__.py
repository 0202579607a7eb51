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
                               "unsafe1", "unsafe2", "k", "k2", "scatter"} over all
                               attributes (shares in [0, 1]; the weighted ones >= 0)
    score                      {"value", "formula", "weights"}

Percentages are in [0, 100] except ``sdid`` and ``share_below_k`` (shares in [0, 1],
sdcMicro's scale) and the raw IL1..IL5 / IL1s ratios.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..errors import DataError, InvalidParameterError
from ..progress import phase as progress_phase
from ..progress import set_done as progress_set
from ..threads import limit as thread_limit
from ..threads import limited as threads_limited
from . import groups, pmse, regression, risk, scenarios, utility
from . import linkage as _linkage
from . import scenarios as _scenarios
from .risk import (
    DEFAULT_DR_WEIGHTS,
    DEFAULT_ID_PERCENTS,
    DEFAULT_SCORE_WEIGHTS,
    RiskEvaluator,
    RiskOptions,
    disclosure_risk,
    dld,
    fellegi_sunter_em,
    interval_disclosure,
    overall_score,
    pld,
    real_anonymity,
    sdid,
)
from .linkage import LINKAGE_EXACT_MAX, LINKAGE_SCENARIOS, LINKAGE_WINDOW, LINKAGE_WINDOWS
from .linkage import LinkageEvaluator, linkage_scenarios
from .rmd import RMD_K, RMD_K2, rmd_risk
from .scenarios import all_subsets, default_scenarios, sample_subsets, scenario_label
from .utility import (
    data_quality,
    eigen,
    robeigen,
    il1s,
    il_score,
    il_sse,
    il_sse_blocks,
    lb_nn,
    lb_nn_blocks,
    optimality_gap,
)

__all__ = [
    "SCHEMA",
    "MetricSpec",
    "GateSpec",
    "METRICS",
    "GATE_ORDER",
    "evaluate_arrays",
    "MeasureOptions",
    "il_sse",
    "il_sse_blocks",
    "il_score",
    "il1s",
    "eigen",
    "robeigen",
    "data_quality",
    "lb_nn",
    "lb_nn_blocks",
    "optimality_gap",
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

#: Version tag of the dict returned by :func:`evaluate_arrays`.
SCHEMA = "microagg_cli.evaluate/1"


# ---------------------------------------------------------------------------------
# evaluate


def _check_pair(X: Any, Xp: Any) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X, dtype=np.float64)
    Xp = np.asarray(Xp, dtype=np.float64)
    if X.ndim != 2 or X.shape != Xp.shape:
        raise DataError(
            f"original and protected data must have the same shape, got {X.shape} and {Xp.shape}"
        )
    if X.shape[0] < 2 or X.shape[1] < 1:
        raise DataError(f"evaluation needs at least 2 records and 1 column, got {X.shape[0]} "
                        f"record{'' if X.shape[0] == 1 else 's'} and {X.shape[1]} column{'' if X.shape[1] == 1 else 's'}")
    if not (np.isfinite(X).all() and np.isfinite(Xp).all()):
        raise DataError("original and protected data must be finite (no NaN or inf)")
    return X, Xp


@dataclass(frozen=True)
class MeasureOptions:
    """The options of :func:`evaluate_arrays` (defaults written once, here, so that the library, the CLI and the reports cannot disagree); the
    risk evaluator's own options are the nested :class:`~microagg_cli.metrics.risk.RiskOptions`
    (whose ``k`` is this ``k``). Fields as in :func:`evaluate_arrays`'s parameters."""

    blocks: Sequence[Sequence[int]] | None = None
    k: int | None = None
    scenarios: Sequence[Sequence[int]] | None = None
    dr_weights: Mapping[str, float] | None = None
    score_weights: Mapping[str, float] | None = None
    rng: np.random.Generator | None = None
    max_all_subsets: int = 10
    sample_size: int = 512
    partition_based: bool = True
    per_scenario: bool = True
    jobs: int | None = None
    linkage_scenarios: int = LINKAGE_SCENARIOS
    linkage_distance: str = "euclidean"
    linkage_exact_max: int = LINKAGE_EXACT_MAX
    linkage_window: int = LINKAGE_WINDOW
    linkage_windows: int = LINKAGE_WINDOWS
    linkage_seed: int = 0
    rmd: bool = True
    rmd_k: float = RMD_K
    rmd_k2: float = RMD_K2
    risk: RiskOptions = field(default_factory=RiskOptions)

    @classmethod
    def build(cls, **options: Any) -> "MeasureOptions":
        """From the flat keywords of :func:`evaluate_arrays` (risk options such as
        ``pld_window_share`` go to :attr:`risk`)."""
        own = {f for f in cls.__dataclass_fields__ if f != "risk"}
        risk_opts = {key: options.pop(key) for key in list(options) if key not in own and key != "risk"}
        base = options.pop("risk", None) or RiskOptions()
        return cls(**options, risk=base.replace(**risk_opts) if risk_opts else base)


def evaluate_arrays(
    X: np.ndarray,
    Xp: np.ndarray,
    options: MeasureOptions | None = None,
    *,
    progress: Callable[[int, int], None] | None = None,
    **changes: Any,
) -> dict[str, Any]:
    """Every risk and utility measure of sdc-metrics(7) for one file pair.

    Parameters
    ----------
    X, Xp : (n, p) original and protected matrices, same records in the same order,
        restricted to the protected attributes, original units; not mutated.
    options : a :class:`MeasureOptions` holding the options below (default: its
        defaults); keywords given with or without it replace its fields
        (``evaluate_arrays(X, Xp, k=3, pld_window_share=0.05)``).
    blocks : the blocking plan as lists of column positions partitioning range(p)
        (default one block). Drives IL_SSE / LB_NN per block and the scenario labels
        1G, 2G, ...
    k : the minimum group size used for protection; enables LB_NN / the optimality
        gap and the share of records in classes smaller than k.
    scenarios : explicit intruder scenarios (lists of column positions); default every
        non-empty subset when p <= ``max_all_subsets``, else ``sample_size`` subsets
        sampled with ``rng`` stratified by size.
    dr_weights : weights of DLD, PLD, ID in DR (keys "dld", "pld", "id"; defaults
        0.25, 0.25, 0.5).
    score_weights : weights of IL_score and DR in the score (keys "il", "dr";
        defaults 0.5, 0.5).
    rng : generator for the scenario sample (``default_rng(0)`` when None).
    pld_window_share : PLD agreement window w = max(1, floor(share * n)).
    pld_exact_max, pld_sample, pld_seed : PLD is exact up to ``pld_exact_max``
        records; above, estimated from ``pld_sample`` originals drawn with
        ``pld_seed``, with a 95 % error bound per scenario (``pld_bound``; see
        :class:`microagg_cli.metrics.risk.RiskEvaluator`).
    dld_exact_max, dld_sample, dld_seed : DLD is exact up to ``dld_exact_max`` records;
        above, the mean exact credit of ``dld_sample`` originals drawn with
        ``dld_seed``, with a 95 % error bound per scenario (``dld_bound``).
    id_percents : the interval sizes of ID(p), percent.
    sdid_factor : SDID half-width in protected sds.
    sdid_max_outside : attributes allowed outside their SDID interval (0 = every value
        within its interval, the definition in sdc-metrics(7); 1 reproduces sdcMicro's dRiskWORK).
    partition_based : report the optimality gap (needs ``k``); False for methods that
        do not partition records.
    per_scenario : include the per-scenario list (the summaries are always there).
    linkage_scenarios : one-to-one linkage is computed for this many scenarios (the
        largest; 0 = every scenario), see :func:`microagg_cli.metrics.linkage.linkage_scenarios`.
    linkage_distance : ``"euclidean"``, ``"manhattan"`` or ``"gower"``.
    linkage_exact_max, linkage_window, linkage_windows, linkage_seed : exact linkage up to
        ``linkage_exact_max`` records, above it the windows estimator
        (:class:`microagg_cli.metrics.linkage.LinkageEvaluator`).
    rmd, rmd_k, rmd_k2 : compute RMDID1/RMDID1w/RMDID2 over all attributes (sdcMicro's
        ``k`` and ``k2``; :func:`microagg_cli.metrics.rmd.rmd_risk`).
    workers : threads for kd-tree queries (results do not depend on it).
    progress : optional callback ``progress(done, total)`` after each scenario.
    jobs : intruder scenarios evaluated side by side in threads (default
        :func:`microagg_cli.threads.limit`, the CPUs this process may use); the
        result does not depend on it.

    Returns
    -------
    dict following the schema in this module's docstring; only plain Python types.

    Raises
    ------
    DataError : shapes differ, fewer than 2 records, NaN/inf.
    InvalidParameterError : bad blocks, scenarios, weights or parameters.
    """
    o = options or MeasureOptions()
    if changes:
        o = MeasureOptions.build(**{**{f: getattr(o, f) for f in o.__dataclass_fields__}, **changes})
    blocks, k, scenarios, rng = o.blocks, o.k, o.scenarios, o.rng
    dr_weights, score_weights, max_all_subsets, sample_size = o.dr_weights, o.score_weights, o.max_all_subsets, \
        o.sample_size
    partition_based, per_scenario, jobs = o.partition_based, o.per_scenario, o.jobs
    X, Xp = _check_pair(X, Xp)
    n, p = X.shape
    blist = _scenarios.validate_blocks(blocks, p)
    if k is not None and (isinstance(k, bool) or int(k) != k or k < 1):
        raise InvalidParameterError(f"k must be a positive integer, got {k!r}")
    k = None if k is None else int(k)
    if sample_size < 1 or max_all_subsets < 0:
        raise InvalidParameterError("sample_size must be >= 1 and max_all_subsets >= 0")
    # weights are checked before any heavy work
    disclosure_risk(0.0, 0.0, 0.0, weights=dr_weights)
    overall_score(0.0, 0.0, weights=score_weights)

    if scenarios is None:
        subsets, mode = _scenarios.default_scenarios(
            p, rng=rng, max_all=max_all_subsets, sample_size=sample_size
        )
    else:
        subsets, mode = _scenarios.validate_subsets(scenarios, p), "explicit"

    # -- utility ----------------------------------------------------------------
    # a phase of steps: at 1,000,000 records the robust eigenvalues (two DetMCDs) and
    # LB_NN take a minute or more each, and the heartbeat says where the run is
    steps = 8
    n_jobs = thread_limit() if jobs is None else max(1, int(jobs))
    with progress_phase("utility measures", total=steps, unit="measures"), threads_limited(n_jobs):
        scores = il_score(X, Xp)
        util: dict[str, Any] = {"il_sse": il_sse_blocks(X, Xp, blist)}
        for name in ("il1", "il2", "il3", "il4", "il5", "il_score"):
            util[name] = scores[name]
        progress_set(1)
        util["il1s"] = il1s(X, Xp)
        progress_set(2)
        util["il_sse_raw"] = il_sse_blocks(X, Xp, blist, scale="raw")
        progress_set(3)
        util["eigen"] = eigen(X, Xp)
        progress_set(4)
        util["robeigen"] = robeigen(X, Xp)
        progress_set(6)
        util["data_quality"] = data_quality(X, Xp)
        progress_set(7)
        util["optimality"] = (
            optimality_gap(X, Xp, k, blist) if (k is not None and partition_based) else None
        )
        progress_set(steps)

    # -- risk -------------------------------------------------------------------
    used = sorted({v for s in subsets for v in s})
    ev = RiskEvaluator(X, Xp, o.risk.replace(
        k=k,
        pld_attributes=used,
        workers=max(int(o.risk.workers), n_jobs),
    ))
    rows = ev.evaluate(subsets, jobs=n_jobs, progress=progress)
    for row, sc in zip(rows, subsets):
        row["label"] = scenario_label(sc, blist)
        row["size"] = len(sc)
    per = [r for r in rows if r is not None]
    link_out = _linkage_rows(X, Xp, subsets, per, o)
    labels = [r["label"] for r in per]
    measures = {
        name: [r[name] for r in per]
        for name in ("dld", "pld", "id", "sdid", "k_prime", "k_min", "share_below_k", "linkage")
    }
    summary = _scenarios.summarize(measures, subsets, labels)
    mean = summary["mean"]
    dr = disclosure_risk(mean["dld"], mean["pld"], mean["id"], weights=dr_weights)
    key_order = ("attributes", "label", "size", "k_prime", "k_min", "classes",
                 "share_below_k", "dld", "pld", "id", "id_by_percent", "sdid", "pld_em", "pld_bound", "dld_bound", "linkage")
    bounds = [r["pld_bound"] for r in per if r["pld_bound"] is not None]
    dbounds = [r["dld_bound"] for r in per if r["dld_bound"] is not None]
    risk_out: dict[str, Any] = {
        "parameters": {
            "distance": "euclidean on attributes z-scored with the original's means and "
                        "population sds",
            "rank": "insertion position into the sorted original column (ties share the "
                    "smallest rank)",
            "tie_rule": "t records tied for the best link with the true one among them count 1/t",
            "pld_window": ev.pld_window,
            "pld_window_share": ev.pld_window_share,
            "pld_method": ev.pld_method,
            "pld_exact_max": ev.pld_exact_max,
            "pld_sample": ev.pld_sample if ev.pld_method == "sampled" else None,
            "pld_seed": ev.pld_seed if ev.pld_method == "sampled" else None,
            "pld_confidence": risk.PLD_CONFIDENCE if ev.pld_method == "sampled" else None,
            "dld_method": ev.dld_method,
            "dld_exact_max": ev.dld_exact_max,
            "dld_sample": ev.dld_sample if ev.dld_method == "sampled" else None,
            "dld_seed": ev.dld_seed if ev.dld_method == "sampled" else None,
            "dld_confidence": risk.PLD_CONFIDENCE if ev.dld_method == "sampled" else None,
            "id_percents": list(ev.id_percents),
            "id_windows": [risk.id_window(n, q) for q in ev.id_percents],
            "sdid_factor": ev.sdid_factor,
            "sdid_max_outside": ev.sdid_max_outside,
            "k": k,
        },
        "scenarios": {
            "mode": mode,
            "count": len(subsets),
            "max_all_subsets": max_all_subsets,
            "sample_size": sample_size,
        },
        "anonymity": ev.anonymity(tuple(range(p))),
        "mean": mean,
        "worst": summary["worst"],
        "by_label": summary["by_label"],
        "per_scenario": [{key: r[key] for key in key_order} for r in per] if per_scenario else None,
        "pld_skipped_reason": ev.pld_skipped_reason,
        "dld_bound": None if not dbounds else {
            "mean": float(np.mean(dbounds)),
            "max": float(np.max(dbounds)),
            "rule": "half-width of a two-sided 95 % empirical Bernstein interval (Maurer & Pontil 2009) "
                    "for each scenario's DLD (mean exact credit of the sampled originals), in percentage points",
        },
        "pld_bound": None if not bounds else {
            "mean": float(np.mean(bounds)),
            "max": float(np.max(bounds)),
            "rule": "half-width of a two-sided 95 % empirical Bernstein interval (Maurer & Pontil 2009) "
                    "for each scenario's PLD, in percentage points, given the EM fitted on the sample",
        },
        "dr": dr,
        "linkage": link_out,
        "rmd": (rmd_risk(X, Xp, k=o.rmd_k, k2=o.rmd_k2, workers=max(int(o.risk.workers), n_jobs))
                if o.rmd else None),
    }
    return {
        "schema": SCHEMA,
        "n": int(n),
        "p": int(p),
        "blocks": blist,
        "k": k,
        "utility": util,
        "risk": risk_out,
        "score": overall_score(util["il_score"]["value"], dr["value"], weights=score_weights),
    }


def _linkage_rows(X: np.ndarray, Xp: np.ndarray, subsets: Sequence[Sequence[int]],
                  rows: list[dict[str, Any]], o: MeasureOptions) -> dict[str, Any]:
    """One-to-one linkage of the chosen scenarios into their ``rows`` (``"linkage"``,
    None for the others) and the report's description of it."""
    ev = LinkageEvaluator(X, Xp, distance=o.linkage_distance, exact_max=o.linkage_exact_max,
                          window=o.linkage_window, windows=o.linkage_windows, seed=o.linkage_seed)
    chosen = linkage_scenarios(subsets, int(o.linkage_scenarios))
    for r in rows:
        r["linkage"] = None
    done: dict[tuple[int, ...], dict[str, Any]] = {}
    with progress_phase("one-to-one linkage", total=len(chosen), unit="scenarios"):
        for count, i in enumerate(chosen, 1):
            sc = tuple(sorted(int(v) for v in subsets[i]))
            if sc not in done:
                done[sc] = ev.scenario(sc)
            rows[i]["linkage"] = done[sc]["value"]
            progress_set(count)
    return {**ev.parameters(), "scenarios": len(done), "max_scenarios": int(o.linkage_scenarios),
            "records": next(iter(done.values()))["records"] if done else None}


# ---------------------------------------------------------------------------------
# analysis utility: regression, propensity score, group statistics


def model_utility(
    X: np.ndarray,
    Xp: np.ndarray,
    *,
    names: Sequence[str] | None = None,
    models: Sequence[regression.Model] | None = None,
    model_columns: tuple[Mapping[str, np.ndarray], Mapping[str, np.ndarray]] | None = None,
    weights: np.ndarray | None = None,
    codes: np.ndarray | None = None,
    labels: Sequence[tuple[Any, ...]] | None = None,
    by: Sequence[str] = (),
    k: int = 1,
    internal: bool = False,
    rng: np.random.Generator | None = None,
) -> dict[str, Any]:
    """The analysis-utility measures of one file pair, beside :func:`evaluate_arrays`'s:
    ``{"ci_overlap", "pmse", "groups"}`` (the evaluate report's ``measures.utility``).

    ``X``, ``Xp``: (n, p) original and protected values of the protected columns
    ``names`` (default ``c0, c1, ...``). ``models``: the regressions of
    :func:`microagg_cli.metrics.regression.ci_overlap` (default: each column on the
    others, at most :data:`~microagg_cli.metrics.regression.DEFAULT_MAX_MODELS`, columns
    that are constant or exact linear combinations of others left out (``left_out``);
    a protected design that is singular is skipped, a given model's is an error);
    ``model_columns``: ``(original, protected)`` name -> values of further columns the
    models name. ``weights``: weights of the fits, the group means and totals.
    ``codes``/``labels``/``by``: the groups of the table (default: one group of every
    record); ``k`` and ``internal``: what the table may show
    (:mod:`microagg_cli.metrics.groups`). ``rng``: pMSE's row sample above
    :data:`~microagg_cli.metrics.pmse.PMSE_MAX_ROWS` records.
    """
    from threadpoolctl import threadpool_limits

    # one BLAS thread: a product split over threads sums in another order, and the
    # figures must not depend on the CPUs (sdc compare --jobs); these are cheap anyway
    with threadpool_limits(limits=1, user_api="blas"):
        return _model_utility(X, Xp, names=names, models=models, model_columns=model_columns, weights=weights,
                              codes=codes, labels=labels, by=by, k=k, internal=internal, rng=rng)


def _model_utility(X: np.ndarray, Xp: np.ndarray, *, names: Sequence[str] | None,
                   models: Sequence[regression.Model] | None,
                   model_columns: tuple[Mapping[str, np.ndarray], Mapping[str, np.ndarray]] | None,
                   weights: np.ndarray | None, codes: np.ndarray | None, labels: Sequence[tuple[Any, ...]] | None,
                   by: Sequence[str], k: int, internal: bool, rng: np.random.Generator | None) -> dict[str, Any]:
    X, Xp = _check_pair(X, Xp)
    names = [f"c{j}" for j in range(X.shape[1])] if names is None else list(names)
    orig = {c: X[:, j] for j, c in enumerate(names)}
    prot = {c: Xp[:, j] for j, c in enumerate(names)}
    if model_columns is not None:
        orig.update(model_columns[0])
        prot.update(model_columns[1])
    given = models is not None
    if given:
        ci = regression.ci_overlap(orig, prot, list(models or []), weights=weights, strict=True)
        ci["left_out"] = []
    else:
        ci = regression.default_ci_overlap(X, Xp, names, weights=weights)
    ci["models_given"] = given
    if codes is None:
        codes, labels, by = np.zeros(X.shape[0], dtype=np.int64), [()], ()
    table = groups.group_table(X, Xp, codes, list(labels or []), names=names, by=list(by), k=k,
                               weights=weights, internal=internal)
    return {"ci_overlap": ci, "pmse": pmse.pmse(X, Xp, rng=rng), "groups": table}


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
    MetricSpec("il1", "utility", "mean |x - x'| / |x| over cells", "ratio", "lower",
               "utility.il1.value", _DF_T, func=_score_term("il1"), identity=0.0,
               heading="IL1", digits=3),
    MetricSpec("il2", "utility", "mean relative change of attribute means", "ratio", "lower",
               "utility.il2.value", _DF_T, func=_score_term("il2"), identity=0.0,
               heading="IL2", digits=3),
    MetricSpec("il3", "utility", "mean relative change of covariances (i <= j)", "ratio",
               "lower", "utility.il3.value", _DF_T, func=_score_term("il3"), identity=0.0,
               heading="IL3", digits=3),
    MetricSpec("il4", "utility", "mean relative change of variances", "ratio", "lower",
               "utility.il4.value", _DF_T, func=_score_term("il4"), identity=0.0,
               heading="IL4", digits=3),
    MetricSpec("il5", "utility", "mean |r - r'| over attribute pairs", "ratio", "lower",
               "utility.il5.value", _DF_T, func=_score_term("il5"), identity=0.0,
               heading="IL5", digits=3),
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
