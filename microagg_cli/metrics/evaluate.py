"""Every measure of :data:`microagg_cli.metrics.METRICS` for an original matrix and its protected version.

:func:`evaluate_arrays` (the nested dict described in :mod:`microagg_cli.metrics`, options in
:class:`MeasureOptions`) and :func:`model_utility` (the analysis-utility measures that need
models, labels or groups). The package re-exports both; the catalogue stays in its
``__init__`` and reads nothing from here but :func:`evaluate_arrays`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..errors import DataError, InvalidParameterError
from ..progress import phase as progress_phase
from ..progress import set_done as progress_set
from ..progress import silenced as progress_silenced
from ..threads import in_background
from ..threads import limit as thread_limit
from ..threads import limited as threads_limited
from . import groups, pmse, regression, risk
from . import scenarios as _scenarios
from .risk import (
    RiskEvaluator,
    RiskOptions,
    disclosure_risk,
    overall_score,
)
from .linkage import LINKAGE_EXACT_MAX, LINKAGE_SCENARIOS, LINKAGE_WINDOW, LINKAGE_WINDOWS
from .linkage import LinkageEvaluator, linkage_scenarios
from .rmd import RMD_K, RMD_K2, rmd_risk
from .scenarios import scenario_label
from .utility import (
    data_quality,
    eigen,
    robeigen,
    il1s,
    il_score,
    il_sse_blocks,
    optimality_gap,
)

__all__ = ["SCHEMA", "MeasureOptions", "evaluate_arrays", "model_utility"]

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
    robeigen: bool = True
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
    linkage_distance : ``"euclidean"`` (squared), ``"euclidean-plain"``, ``"manhattan"`` or ``"gower"``.
    linkage_exact_max, linkage_window, linkage_windows, linkage_seed : exact linkage up to
        ``linkage_exact_max`` records, above it the windows estimator
        (:class:`microagg_cli.metrics.linkage.LinkageEvaluator`).
    robeigen : compute the robust eigenvalue change (two MCD estimates; None when False).
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
    used = sorted({v for s in subsets for v in s})
    risk_options = o.risk.replace(k=k, pld_attributes=used, workers=max(int(o.risk.workers), n_jobs))

    def risk_setup() -> RiskEvaluator:
        with progress_silenced():  # one phase shows at a time: the utility measures'
            return RiskEvaluator(X, Xp, risk_options)

    # with more than one thread the risk set-up (ranks, interval hits, the PLD pair
    # table: mostly one thread of sorting) runs beside the utility measures; it is
    # the same computation either way
    risk_ready = in_background(risk_setup, name="sdc-risk-setup") if n_jobs > 1 else None
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
        util["robeigen"] = robeigen(X, Xp) if o.robeigen else None
        progress_set(6)
        util["data_quality"] = data_quality(X, Xp)
        progress_set(7)
        util["optimality"] = (
            optimality_gap(X, Xp, k, blist) if (k is not None and partition_based) else None
        )
        progress_set(steps)

    # -- risk -------------------------------------------------------------------
    if risk_ready is None:
        ev = RiskEvaluator(X, Xp, risk_options)
    else:
        with progress_phase("risk set-up (ranks, interval hits, PLD pair table)"):
            ev = risk_ready()  # what is left of it after the utility measures

    def side_measures() -> tuple[dict[str, Any], dict[str, Any] | None]:
        link = _linkage_of(X, Xp, subsets, o)
        rmd = (rmd_risk(X, Xp, k=o.rmd_k, k2=o.rmd_k2, workers=max(int(o.risk.workers), n_jobs))
               if o.rmd else None)
        return link, rmd

    # with more than one thread the one-to-one linkage and RMD (one thread each) run
    # beside the scenarios, whose threads they share: the same computations either way
    side_ready = None
    if n_jobs > 1:
        def side_silenced() -> tuple[dict[str, Any], dict[str, Any] | None]:
            with progress_silenced():
                return side_measures()

        side_ready = in_background(side_silenced, name="sdc-linkage")
    rows = ev.evaluate(subsets, jobs=n_jobs, progress=progress)
    for row, sc in zip(rows, subsets):
        row["label"] = scenario_label(sc, blist)
        row["size"] = len(sc)
    per = [r for r in rows if r is not None]
    if side_ready is None:
        link, rmd_out = side_measures()
    else:
        with progress_phase("one-to-one linkage and RMD"):
            link, rmd_out = side_ready()
    link_out = _linkage_rows(per, link)
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
        # what sdcMicro's dRisk prints: SDID with every column known (the mean is over scenarios)
        "sdid_all": ev.sdid(tuple(range(p))) if p else None,
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
        "rmd": rmd_out,
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


def _linkage_of(X: np.ndarray, Xp: np.ndarray, subsets: Sequence[Sequence[int]],
                o: MeasureOptions) -> dict[str, Any]:
    """One-to-one linkage of the chosen scenarios: ``{"values": {position: value},
    "report": the report's description of it}``."""
    ev = LinkageEvaluator(X, Xp, distance=o.linkage_distance, exact_max=o.linkage_exact_max,
                          window=o.linkage_window, windows=o.linkage_windows, seed=o.linkage_seed)
    chosen = linkage_scenarios(subsets, int(o.linkage_scenarios))
    done: dict[tuple[int, ...], dict[str, Any]] = {}
    values: dict[int, float] = {}
    with progress_phase("one-to-one linkage", total=len(chosen), unit="scenarios"):
        for count, i in enumerate(chosen, 1):
            sc = tuple(sorted(int(v) for v in subsets[i]))
            if sc not in done:
                done[sc] = ev.scenario(sc)
            values[i] = done[sc]["value"]
            progress_set(count)
    report = {**ev.parameters(), "scenarios": len(done), "max_scenarios": int(o.linkage_scenarios),
              "records": next(iter(done.values()))["records"] if done else None}
    return {"values": values, "report": report}


def _linkage_rows(rows: list[dict[str, Any]], link: dict[str, Any]) -> dict[str, Any]:
    """The linkage values of :func:`_linkage_of` into their scenarios' ``rows``
    (``"linkage"``, None for the others); returns the report's description."""
    for i, r in enumerate(rows):
        r["linkage"] = link["values"].get(i)
    return link["report"]


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
