"""Evaluate a protected table against its original: measures, intruder scenarios, gates.

The measurement side of ``sdc`` above :mod:`microagg_cli.metrics` (which computes the
measures on matrices): choosing and matching the evaluated columns and rows, the
intruder scenarios (one implementation for ``sdc evaluate``, ``sdc protect
--evaluate``, ``sdc compare`` and ``sdc blocks``), the release gates and the JSON
report of ``sdc evaluate``. The measures are those of Domingo-Ferrer & Torra (2001),
"A quantitative comparison of disclosure control methods for microdata", and
Mateo-Sanz, Domingo-Ferrer & Sebe (2005), "Probabilistic information loss measures in
confidentiality protection of continuous microdata" (see :data:`microagg_cli.metrics.METRICS`).
Nothing here reads or writes files (:func:`microagg_cli.api.evaluate` does).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Mapping, Sequence

import numpy as np

from ._version import __version__
from .blocking import BlockPlan
from .errors import DataError, InvalidParameterError, ThresholdExceeded, check_k_value
from .io import Table, column_values, file_fingerprint, numeric_columns, numeric_matrix
from .pairing import check_pairing, key_columns, pair_records, unshared_columns, weight_candidates
from .metrics import GATE_ORDER, METRICS, MeasureOptions, evaluate_arrays, model_utility
from .metrics.groups import group_codes
from .metrics.regression import parse_model
from .metrics.risk import real_anonymity
from .metrics.scenarios import all_subsets, default_scenarios, scenario_label, summarize
from .protection import ProtectResult
from .request import EVALUATE_K, BlocksRequest, EvaluateRequest, default
from .report import scenario_text

__all__ = [
    "EVALUATION_SCHEMA_VERSION", "Gate", "GATES", "FORMULAS", "known_positions", "scenario_sampling",
    "scenario_subsets", "measure", "scenario_risk", "evaluate_matrices", "evaluate_tables",
    "raise_for_gates", "evaluate_protected", "model_summary", "MODEL_FORMULAS",
]

#: Version of the ``sdc evaluate`` JSON layout; bumped on any incompatible change.
EVALUATION_SCHEMA_VERSION = "1.3"


@dataclass(frozen=True)
class Gate:
    """A release gate of ``sdc evaluate``: a threshold on one headline figure.

    Built from the measure's :class:`microagg_cli.metrics.GateSpec`. ``stat`` is
    ``"scenarios"`` for figures computed per intruder scenario (the gate checks the
    worst scenario or the mean, see ``gate_on``) and ``"overall"`` for figures that
    have one value.
    """

    key: str
    option: str
    measure: str
    direction: str  # "max": value must be <= threshold; "min": value must be >= threshold
    stat: str
    field: str  # key in the risk summaries (scenario figures) or in "summary"


#: The gates, keyed like :func:`evaluate_tables`'s ``gates`` argument (from :data:`METRICS`).
GATES: dict[str, Gate] = {
    spec.gate.key: Gate(spec.gate.key, spec.gate.option, spec.heading, spec.gate.direction, spec.gate.stat,
                        spec.gate.field)
    for spec in (METRICS[name] for name in GATE_ORDER) if spec.gate is not None
}

#: The formulas of the evaluate report (from :data:`METRICS`).
FORMULAS: dict[str, str] = {
    name: METRICS[name].formula for name in ("il_sse", "lb_nn", "il1s", "dld", "pld", "id", "sdid", "k_prime")
}
FORMULAS.update({name: METRICS[name].formula for name in ("linkage", "rmdid1", "rmdid1w", "rmdid2")})


def _check_names(names: list[str], orig: Table, prot: Table, key: list[str], option: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InvalidParameterError(f"{option}: column {name!r} is named twice")
        seen.add(name)
        if name in key:
            raise InvalidParameterError(f"{option}: the --key column {name!r} cannot be evaluated")
        for table, what in ((orig, "original"), (prot, "protected")):
            if name not in table.columns:
                shown = ", ".join(table.columns[:20]) + (", ..." if len(table.columns) > 20 else "")
                raise DataError(f"{option}: no column {name!r} in the {what} file (columns: {shown})")


def _columns(
    orig: Table,
    prot: Table,
    order: np.ndarray | None,
    *,
    columns: list[str] | None,
    key: list[str],
    blocks: list[list[str]] | None,
    plan: BlockPlan | None,
    unshared: dict[str, list[str]] | None = None,
    exclude: Sequence[str] = (),
    detect_keys: bool = False,
) -> tuple[list[str], list[tuple[str, list[str], int | None]], dict[str, Any]]:
    """Evaluated columns, blocks ``(name, columns, k)`` and a description of the choice.

    ``detect_keys``: in the default selection, a changed column that is code-like in the
    original (:func:`microagg_cli.roles.column_evidence`) and released as codes of the
    original only (a group's mode, never a mean) is a key, not a continuous attribute:
    it is left out of the columns and listed in ``info["detected_keys"]``."""
    info: dict[str, Any] = {}
    if plan is not None:  # without --columns/--blocks (the request says so)
        names = list(plan.columns)
        _check_names(names, orig, prot, key, "--plan")
        info["selection"] = "plan"
        return names, [(b.name, list(b.columns), b.k) for b in plan.blocks], info
    if blocks is not None:
        names = [c for b in blocks for c in b]
        _check_names(names, orig, prot, key, "--blocks")
        info["selection"] = "blocks"
        return names, [(f"block{i + 1}", list(b), None) for i, b in enumerate(blocks)], info
    if columns is not None:
        _check_names(list(columns), orig, prot, key, "--columns")
        info["selection"] = "given"
        return list(columns), [("block1", list(columns), None)], info
    # default: numeric columns of both files whose values differ between them
    prot_numeric = set(numeric_columns(prot))
    names, unchanged, skipped, keys = [], [], [], []
    for name in numeric_columns(orig):
        if name in key or name not in prot.columns or name in exclude:  # not in both files: named by unshared_columns
            continue
        if name not in prot_numeric:
            skipped.append(name)
            continue
        a, b = _paired_values(orig, prot, order, name)
        if ((a == b) | (np.isnan(a) & np.isnan(b))).all():
            unchanged.append(name)
        elif detect_keys and _released_codes(orig, name, a, b):
            keys.append(name)
        else:
            names.append(name)
    if not names:
        apart = "; ".join(f"{what}: {', '.join(repr(c) for c in cols)}" for what, cols in (
            ("only in the original", (unshared or {}).get("only_in_original")),
            ("only in the protected file", (unshared or {}).get("only_in_protected"))) if cols)
        raise DataError(
            "no numeric column differs between the original and the protected file; "
            + (f"columns not in both files are not evaluated ({apart}); " if apart else "")
            + "name the protected columns with --columns"
        )
    info.update(selection="numeric columns whose values differ", unchanged=unchanged,
                not_numeric_in_protected=skipped)
    if keys:
        info["detected_keys"] = keys
    return names, [("block1", names, None)], info


def _paired_values(orig: Table, prot: Table, order: np.ndarray | None, name: str) -> tuple[np.ndarray, np.ndarray]:
    """A column's values in the original and, paired record by record, in the protected file."""
    a, _ = column_values(orig, name)
    b, _ = column_values(prot, name)
    return a, (b if order is None else b[order])


def _released_codes(orig: Table, name: str, a: np.ndarray, b: np.ndarray) -> bool:
    """Column ``name`` (original values ``a``, released ``b``) is a code column of the
    original released as its codes only."""
    from .roles import column_evidence

    return column_evidence(orig, name).suspect == "code" and bool(np.isin(b[~np.isnan(b)], a[~np.isnan(a)]).all())


def _partition_based(Xp: np.ndarray, block_pos: list[list[int]], k: int) -> bool:
    """True when, in every block, each class of identical protected rows holds >= k (and >= 2)
    records: the protected file is a k-partition, so LB_NN bounds its IL_SSE."""
    need = max(int(k), 2)
    for cols in block_pos:
        _, counts = np.unique(Xp[:, cols], axis=0, return_counts=True)
        if counts.min() < need:
            return False
    return True


def _dig(d: Any, *path: Any) -> Any:
    for step in path:
        if d is None:
            return None
        d = d[step] if isinstance(d, list) else d.get(step)
    return d


def _summary(measures: dict[str, Any]) -> dict[str, Any]:
    """The headline figures, flat (``jq .summary.dr``)."""
    g = lambda *p: _dig(measures, *p)  # noqa: E731
    return {
        "il_sse": g("utility", "il_sse", "overall"),
        "il_score": g("utility", "il_score", "value"),
        "il1s": g("utility", "il1s", "value"),
        "il_sse_raw": g("utility", "il_sse_raw", "overall"),
        "eigen": g("utility", "eigen", "value"),
        "robeigen": g("utility", "robeigen", "value"),
        "lb_nn": g("utility", "optimality", "lb_nn", "overall"),
        "optimality_gap": g("utility", "optimality", "gap", "overall"),
        "dld": g("risk", "mean", "dld"),
        "pld": g("risk", "mean", "pld"),
        "pld_method": g("risk", "parameters", "pld_method"),
        "pld_bound": g("risk", "pld_bound", "mean"),
        "dld_method": g("risk", "parameters", "dld_method"),
        "dld_bound": g("risk", "dld_bound", "mean"),
        "id": g("risk", "mean", "id"),
        "sdid": g("risk", "mean", "sdid"),
        "sdid_all": g("risk", "sdid_all"),
        "dr": g("risk", "dr", "value"),
        "score": g("score", "value"),
        "k_prime": g("risk", "anonymity", "k_prime"),
        "k_min": g("risk", "anonymity", "k_min"),
        "share_below_k": g("risk", "anonymity", "share_below_k"),
        "worst_dld": g("risk", "worst", "dld", "value"),
        "worst_id": g("risk", "worst", "id", "value"),
        "worst_k_prime": g("risk", "worst", "k_prime", "value"),
        "linkage": g("risk", "mean", "linkage"),
        "worst_linkage": g("risk", "worst", "linkage", "value"),
        "linkage_method": g("risk", "linkage", "method"),
        "linkage_scenarios": g("risk", "linkage", "scenarios"),
        "rmdid1": g("risk", "rmd", "rmdid1"),
        "rmdid1w": g("risk", "rmd", "rmdid1w"),
        "rmdid2": g("risk", "rmd", "rmdid2"),
    }


# ----------------------------------------------------------------- intruder scenarios
# One implementation for sdc evaluate, protect --evaluate, compare and blocks.


def known_positions(known: Sequence[Sequence[str]] | None, names: Sequence[str], *,
                    what: str) -> list[list[int]] | None:
    """Explicit intruder scenarios (``--known``) as column positions in ``names``.

    ``what`` names the columns a scenario may use in the error message (e.g. "an
    evaluated column"). None stays None (the default scenarios).
    """
    if known is None:
        return None
    pos = {c: j for j, c in enumerate(names)}
    scenarios = []
    for subset in known:
        for c in subset:
            if c not in pos:
                raise InvalidParameterError(f"--known: {c!r} is not {what} ({', '.join(names)})")
        if len(set(subset)) != len(subset):
            raise InvalidParameterError(f"--known {','.join(subset)}: a column is named twice")
        scenarios.append([pos[c] for c in subset])
    return scenarios


def scenario_sampling(p: int, max_scenarios: int | None) -> tuple[int, int]:
    """``(max_all_subsets, sample_size)`` of :func:`microagg_cli.metrics.evaluate_arrays`.

    None: every subset up to 10 columns, else a seeded sample of 512; 0: every subset,
    whatever the number of columns; m >= 1: every subset when there are at most m,
    else a seeded stratified sample of m.
    """
    if max_scenarios is None:  # the measures' own default (checked >= 0 by the request)
        return MeasureOptions.max_all_subsets, MeasureOptions.sample_size
    sample = max(1, int(max_scenarios))
    return (p if (int(max_scenarios) == 0 or 2**p - 1 <= sample) else 0), sample


def scenario_subsets(p: int, *, max_known: int | None = None,
                     seed: int = default(BlocksRequest, "seed")) -> list[tuple[int, ...]]:
    """Intruder scenarios (sets of attribute positions) of at most ``max_known`` attributes.

    The defaults of :mod:`microagg_cli.metrics.scenarios`: every non-empty subset when
    p <= 10, else a seeded sample of 512 stratified by size. With ``max_known``: every
    subset of at most ``max_known`` attributes when there are at most 512 of them,
    else the default sample restricted to those sizes.
    """
    if max_known is None or max_known >= p:
        return default_scenarios(p, rng=np.random.default_rng(int(seed)))[0]
    top = max(1, int(max_known))
    if p <= 10 or sum(math.comb(p, s) for s in range(1, top + 1)) <= 512:
        return [c for s in range(1, top + 1) for c in combinations(range(p), s)] if p > 10 else [
            c for c in all_subsets(p) if len(c) <= top]
    sample = default_scenarios(p, rng=np.random.default_rng(int(seed)))[0]
    return [c for c in sample if len(c) <= top]


def measure(
    X: np.ndarray,
    Xp: np.ndarray,
    block_pos: list[list[int]],
    *,
    k: int | None,
    scenarios: list[list[int]] | None = None,
    max_scenarios: int | None,
    seed: int,
    dr_weights: Mapping[str, float] | None = None,
    score_weights: Mapping[str, float] | None = None,
    partition_based: bool = True,
    per_scenario: bool = True,
    progress: Any = None,
    **more: Any,
) -> dict[str, Any]:
    """Every measure of sdc-metrics(7) on two matrices: the scenario rules of ``sdc``
    (:func:`scenario_sampling`, the run seed) around :func:`microagg_cli.metrics.evaluate_arrays`;
    ``more``: further options of :class:`microagg_cli.metrics.evaluate.MeasureOptions`
    (flat, as :meth:`~microagg_cli.metrics.evaluate.MeasureOptions.build` takes them)."""
    max_all, sample = scenario_sampling(X.shape[1], max_scenarios)
    options = MeasureOptions.build(
        blocks=block_pos, k=k, scenarios=scenarios, dr_weights=dr_weights, score_weights=score_weights,
        rng=np.random.default_rng(np.random.SeedSequence(int(seed))), max_all_subsets=max_all, sample_size=sample,
        partition_based=partition_based, per_scenario=per_scenario, **more,
    )
    return evaluate_arrays(X, Xp, options, progress=progress)


def scenario_risk(
    Xp: np.ndarray,
    plan: BlockPlan,
    k: int,
    *,
    max_known: int | None = None,
    seed: int = default(BlocksRequest, "seed"),
) -> dict[str, Any]:
    """k' per intruder scenario of a protected plan, summarised by blocks touched (1G, 2G, ...).

    ``Xp`` holds the protected columns in ``plan.columns`` order; k' per scenario is
    :func:`metrics.risk.real_anonymity`. Returns
    ``{"scenarios": count, "labels": {"1G": summary, ...}, "by_known": {"1": summary,
    ...}, "worst": summary}``; a summary gives the number of scenarios, the mean and
    worst k' (``k_prime_mean``, ``k_prime_worst``), the worst k_min, the mean share of
    records in classes below k and the attributes of the worst scenario
    (``worst_known``). Summaries come from :func:`metrics.scenarios.summarize`.
    """
    names = plan.columns
    block_of = plan.block_of()
    blocks: list[list[int]] = [[] for _ in plan.blocks]
    for j, c in enumerate(names):
        blocks[block_of[c]].append(j)
    Xp = np.asarray(Xp, dtype=np.float64)
    subsets = scenario_subsets(len(names), max_known=max_known, seed=seed)
    values = [real_anonymity(Xp, s, k=k) for s in subsets]
    measures = {m: [v[m] for v in values] for m in ("k_prime", "k_min", "share_below_k")}

    def reshape(entry: Mapping[str, Any], count: int) -> dict[str, Any]:
        worst = entry["worst"]["k_prime"]
        return {
            "scenarios": count,
            "k_prime_mean": entry["mean"]["k_prime"],
            "k_prime_worst": worst["value"],
            "k_min_worst": int(entry["worst"]["k_min"]["value"]),
            "share_below_k_mean": entry["mean"]["share_below_k"],
            "worst_known": [names[j] for j in worst["attributes"]],
        }

    by_blocks = summarize(measures, subsets, [scenario_label(s, blocks) for s in subsets])
    by_size = summarize(measures, subsets, [f"{len(s)}K" for s in subsets])
    return {
        "scenarios": len(subsets),
        "labels": {lab: reshape(e, e["scenarios"]) for lab, e in by_blocks["by_label"].items()},
        "by_known": {lab[:-1]: reshape(e, e["scenarios"]) for lab, e in by_size["by_label"].items()},
        "worst": reshape(by_blocks, len(subsets)),
    }


#: The risk measures' parameters the evaluate report's ``parameters`` repeat, in its order.
_RISK_PARAMETERS = ("pld_window_share", "pld_method", "pld_exact_max", "pld_sample", "dld_method", "dld_exact_max",
                    "dld_sample", "id_percents", "sdid_factor")


def evaluate_matrices(
    X: np.ndarray,
    Xp: np.ndarray,
    names: list[str],
    blocks: list[tuple[str, list[str], int | None]],
    request: EvaluateRequest | None = None,
    *,
    progress: Any = None,
) -> dict[str, Any]:
    """The measurement part shared by ``sdc evaluate`` and ``sdc protect --evaluate``.

    Parameters
    ----------
    X, Xp : (n, p) original and protected values of the columns ``names`` (same rows in
        the same order, finite).
    blocks : ``(name, columns, k)`` per block; the blocks partition ``names``.
    request : the options (:class:`microagg_cli.request.EvaluateRequest`; default: its
        defaults), of which these apply:
    k : k for the share below k and LB_NN (default: the smallest block k, else
        :data:`~microagg_cli.request.EVALUATE_K`).
    known : intruder scenarios as lists of column names (default: every subset, or a
        seeded sample).
    max_scenarios : evaluate every subset when there are at most this many, else a
        seeded stratified sample of this size; 0 = every subset, whatever the number
        of columns (default: every subset up to 10 columns, else 512).
    scale : ``"z"`` (default) or ``"raw"``: the headline IL is z-scored; with
        ``"raw"`` the summary also shows IL_SSE on the unstandardised values
        (``measures.utility.il_sse_raw`` is always in the report).
    bound : ``"nn"`` (default: LB_NN only) or ``"cg"``: also the certified
        column-generation bound lb_cg (``measures.utility.cg_bound``, see
        :func:`microagg_cli.metrics.lb_cg.cg_report`), at most ``time_limit`` s.

    Returns
    -------
    ``{"blocks", "parameters", "formulas", "summary", "measures"}`` (JSON-ready);
    ``measures`` is :func:`microagg_cli.metrics.evaluate_arrays`'s dict.
    """
    request = EvaluateRequest() if request is None else request
    k, known, max_scenarios, seed = request.k, request.known, request.max_scenarios, request.seed
    scale, bound, time_limit = request.scale, request.bound, request.time_limit
    pos = {c: j for j, c in enumerate(names)}
    block_pos = [[pos[c] for c in cols] for _n, cols, _k in blocks]
    k_source = "option"
    if k is None:
        ks = [bk for _n, _c, bk in blocks if bk is not None]
        k, k_source = (min(ks), "plan") if ks else (EVALUATE_K, "default")
    k = check_k_value(k)
    scenarios = known_positions(known, names, what="an evaluated column")
    partition = _partition_based(Xp, block_pos, k)
    measures = measure(X, Xp, block_pos, k=k, scenarios=scenarios, max_scenarios=max_scenarios, seed=seed,
                       dr_weights=request.dr_weights, score_weights=request.score_weights,
                       partition_based=partition, rmd_k=request.rmd_k, rmd_k2=request.rmd_k2,
                       linkage_distance=request.linkage_distance, linkage_exact_max=request.linkage_exact_max,
                       progress=progress)
    cg_summary: dict[str, Any] = {}
    if bound == "cg":
        from .metrics.lb_cg import cg_report  # scipy's HiGHS: loaded only when asked for

        cg = cg_report(X, Xp, k, block_pos, il_sse=measures["utility"]["il_sse"],
                       partition_based=partition, time_limit=time_limit)
        measures["utility"]["cg_bound"] = cg
        cg_summary = {key: cg[key]["overall"] for key in ("lb_cg", "cg_gap", "cg_status", "cg_seconds")}
    formulas = dict(FORMULAS)
    formulas["il_score"] = "IL_score = " + str(_dig(measures, "utility", "il_score", "formula"))
    formulas["dr"] = measures["risk"]["dr"]["formula"]
    formulas["score"] = measures["score"]["formula"]
    return {
        "blocks": [{"name": bn, "columns": list(cols), "k": bk} for bn, cols, bk in blocks],
        "parameters": {
            "k": k,
            "k_source": k_source,
            "seed": int(seed),
            "known": [list(s) for s in known] if known is not None else None,
            "max_scenarios": max_scenarios,
            "scale": scale,
            "scenario_mode": measures["risk"]["scenarios"]["mode"],
            "scenario_count": measures["risk"]["scenarios"]["count"],
            "dr_weights": measures["risk"]["dr"]["weights"],
            "score_weights": measures["score"]["weights"],
            **{name: measures["risk"]["parameters"][name] for name in _RISK_PARAMETERS},
            **{f"linkage_{name}": measures["risk"]["linkage"][name] for name in ("method", "scenarios", "exact_max")},
            "partition_based": partition,
            "partition_rule": "LB_NN and the optimality gap are reported when every class of identical "
                              "protected rows in every block holds at least k records",
        },
        "formulas": formulas,
        "summary": {**_summary(measures),
                    **({} if scale == "raw" else {"il_sse_raw": None}), **cg_summary},
        "measures": measures,
    }


def _complete_rows(X: np.ndarray, Xp: np.ndarray, names: list[str], missing: str) -> np.ndarray:
    """Rows complete in both matrices (all rows when nothing is missing)."""
    bad = np.isnan(X) | np.isnan(Xp)
    if not bad.any():
        return np.arange(X.shape[0])
    if missing == "error":
        j = int(np.flatnonzero(bad.any(axis=0))[0])
        i = int(np.flatnonzero(bad[:, j])[0])
        which = "original" if np.isnan(X[i, j]) else "protected"
        raise DataError(
            f"column {names[j]!r} has {int(bad[:, j].sum())} missing value(s) (first in row {i + 1} of "
            f"the {which} file); use --missing complete to evaluate the complete records only"
        )
    rows = np.flatnonzero(~bad.any(axis=1))
    if rows.size < 2:
        raise DataError(f"only {rows.size} record(s) are complete in both files; nothing to evaluate")
    return rows


def _column_stats(values: np.ndarray) -> dict[str, Any]:
    return {"mean": float(values.mean()), "sd": float(values.std(ddof=1)) if values.size > 1 else None,
            "min": float(values.min()), "max": float(values.max())}


def _gates(rep: dict[str, Any], gates: Mapping[str, float], gate_on: str) -> dict[str, Any]:
    names = rep["columns"]["evaluated"]
    measures = rep["measures"]
    checks = []
    for key, threshold in gates.items():
        gate = GATES[key]
        scenario = None
        if gate.stat == "overall":
            value, stat = rep["summary"][gate.field], "overall"
        elif gate_on == "mean":
            value, stat = _dig(measures, "risk", "mean", gate.field), "mean over scenarios"
        else:
            worst = _dig(measures, "risk", "worst", gate.field)
            value, stat = (worst or {}).get("value"), "worst scenario"
            if worst:
                scenario = [names[j] for j in worst["attributes"]]
        passed = value is not None and (value <= threshold if gate.direction == "max" else value >= threshold)
        checks.append({
            "option": gate.option, "measure": gate.measure, "statistic": stat,
            "threshold": float(threshold), "value": value, "scenario": scenario, "passed": bool(passed),
        })
    return {"on": gate_on, "passed": all(c["passed"] for c in checks), "checks": checks}


def _gate_message(gates: dict[str, Any], evaluated: list[str]) -> str:
    parts = []
    for c in gates["checks"]:
        if c["passed"]:
            continue
        if c["value"] is None:
            parts.append(f"{c['option']} {c['threshold']:g}: {c['measure']} was not computed")
            continue
        op = ">" if c["option"].startswith("--max") else "<"
        where = f": {scenario_text(c['scenario'], evaluated)}" if c["scenario"] else ""
        parts.append(f"{c['option']} {c['threshold']:g}: {c['measure']} = {c['value']:.4g} "
                     f"({c['statistic']}{where}) {op} {c['threshold']:g}")
    return "gate failed: " + "; ".join(parts)


def evaluate_tables(
    orig: Table,
    prot: Table,
    request: EvaluateRequest | None = None,
    *,
    progress: Any = None,
) -> dict[str, Any]:
    """Risk and utility of ``prot`` against ``orig`` (tables in memory): the report dict.

    Matches the rows (by order, or by the identifier column ``key``), chooses the
    evaluated columns, computes every measure of sdc-metrics(7)
    (:func:`evaluate_matrices`) and checks the ``gates`` (the result is in
    ``report["gates"]``; :func:`raise_for_gates` turns a failure into
    :class:`ThresholdExceeded`). ``request``: the options of
    :func:`microagg_cli.api.evaluate` (:class:`microagg_cli.request.EvaluateRequest`);
    the report's ``parameters`` are made from it.
    """
    request = EvaluateRequest() if request is None else request
    columns, key, blocks, plan = request.columns, request.key, request.blocks, request.plan
    gate_on, internal = request.gate_on, request.internal
    gates = dict(request.gates or {})  # names and gate_on checked by the request
    key = key_columns(key)
    if orig.n_rows < 2:  # said before the pairing proof, which a single record cannot make
        n, p = orig.n_rows, len(orig.columns)
        raise DataError(f"evaluation needs at least 2 records and 1 column, got {n} record{'' if n == 1 else 's'} "
                        f"and {p} column{'' if p == 1 else 's'}")
    order, matching = pair_records(orig, prot, key=key, pairing_file=request.pairing_file)
    unshared = unshared_columns(orig, prot, exclude=key)
    # without --categorical, the role evidence of sdc protect: a released code column is a key, scored as one
    names, blist, selection = _columns(orig, prot, order, columns=columns, key=key, blocks=blocks, plan=plan,
                                       unshared=unshared, exclude=request.categorical or (),
                                       detect_keys=request.categorical is None)
    detected_keys = selection.pop("detected_keys", [])
    if detected_keys:
        request = request.replace(categorical=detected_keys)
    X = numeric_matrix(orig, names, allow_missing=True)
    Xp = numeric_matrix(prot, names, allow_missing=True)
    if order is not None:
        Xp = Xp[order]
    # the proof that the records are paired right, before any figure
    matching = check_pairing(X, Xp, names, matching, check=request.pairing_check, rows_of=order,
                             candidate_weights=lambda: weight_candidates(orig, prot, order, [*names, *key]))
    rows = _complete_rows(X, Xp, names, request.missing)
    X, Xp = X[rows], Xp[rows]
    analysis = _AnalysisInputs.read(orig, prot, order, rows, names, request)
    section = evaluate_matrices(X, Xp, names, blist, request, progress=progress)
    _add_model_utility(section, X, Xp, names, analysis, request)

    def file_entry(table: Table) -> dict[str, Any]:
        return {**file_fingerprint(table), "format": table.fmt, "rows": int(table.n_rows),
                "columns": len(table.columns)}

    rep: dict[str, Any] = {
        "schema_version": EVALUATION_SCHEMA_VERSION,
        "tool": {"name": "sdc", "distribution": "microagg-cli", "version": __version__},
        "command": "evaluate",
        "internal": bool(internal),
        "original": file_entry(orig),
        "protected": file_entry(prot),
        "matching": matching,
        "records": {"evaluated": int(rows.size), "left_out_incomplete": int(orig.n_rows - rows.size)},
        "columns": {"evaluated": names, **selection, **unshared},
        "blocks": section["blocks"],
        "parameters": {**section["parameters"], **request.parameters()},
        "formulas": section["formulas"],
        "summary": section["summary"],
        "measures": section["measures"],
        "gates": None,
    }
    if internal:
        rep["internal_details"] = {
            "warning": "contains original values of protected attributes: for internal use only",
            "columns": [
                {"name": c, "original": _column_stats(X[:, j]), "protected": _column_stats(Xp[:, j])}
                for j, c in enumerate(names)
            ],
        }
    if request.categorical:
        rep["categorical"] = _categorical(orig, prot, order, rows, request, Xp, names)
        if detected_keys:
            rep["categorical"]["detected"] = {
                "columns": detected_keys,
                "rule": "integer code columns of the original (as sdc roles judges them) whose released values "
                        "are all codes of the original: scored as categorical keys, not as continuous "
                        "(name the columns with --columns or --categorical to choose)"}
    rep["gates"] = _gates(rep, gates, gate_on)
    return rep


# ------------------------------------------------------- regression, pMSE, group table
# The analysis-utility measures of sdc evaluate (and sdc compare's default models):
# columns named by --model, --weights and --by are read here; the measures themselves are
# computed by microagg_cli.metrics.model_utility.


@dataclass(frozen=True)
class _AnalysisInputs:
    """What --model, --weights and --by need from the files, on the evaluated rows."""

    models: list[Any] | None
    extra: tuple[dict[str, np.ndarray], dict[str, np.ndarray]]
    weights: np.ndarray | None
    codes: np.ndarray | None
    labels: list[tuple[Any, ...]] | None
    by: list[str]

    @classmethod
    def read(cls, orig: Table, prot: Table, order: np.ndarray | None, rows: np.ndarray, names: list[str],
             request: EvaluateRequest) -> "_AnalysisInputs":
        def aligned(table: Table, col: str, protected: bool) -> np.ndarray:
            values = numeric_matrix(table, [col], allow_missing=True)[:, 0]
            if protected and order is not None:
                values = values[order]
            return values[rows]

        def check(col: str, option: str, *, both: bool) -> None:
            if col in key_columns(request.key):
                raise InvalidParameterError(f"{option}: {col!r} is the --key column")
            for table, what in ((orig, "original"), (prot, "protected"))[: 2 if both else 1]:
                if col not in table.columns:
                    raise DataError(f"{option}: no column {col!r} in the {what} file")

        models = None
        extra: tuple[dict[str, np.ndarray], dict[str, np.ndarray]] = ({}, {})
        if request.models is not None:
            models = [parse_model(text, names) for text in request.models]
            for model in models:
                for col in (model.response, *model.predictors):
                    if col in names or col in extra[0]:
                        continue
                    check(col, f"--model {model.text!r}", both=True)
                    extra[0][col] = aligned(orig, col, False)
                    extra[1][col] = aligned(prot, col, True)
        weights = None
        if request.weights is not None:
            w = request.weights
            check(w, "--weights", both=False)
            if w in names:
                raise InvalidParameterError(f"--weights: {w!r} is an evaluated column; weights are not protected")
            weights = aligned(orig, w, False)
            bad = np.flatnonzero(~(np.isfinite(weights) & (weights > 0)))
            if bad.size:
                raise DataError(f"--weights {w!r}: row {int(rows[bad[0]]) + 1} of the original file has weight "
                                f"{weights[bad[0]]!r}; weights must be positive numbers")
        codes = labels = None
        by = list(request.by if request.by is not None else (request.strata or []))
        if by:  # each named once (the request says so)
            keys = []
            for col in by:
                check(col, "--by", both=False)
                if col in names:
                    raise InvalidParameterError(f"--by: {col!r} is an evaluated (protected) column; group by a "
                                                "stratum or category")
                values, bad = column_values(orig, col)
                if not bad.any() and not np.isnan(values).any():
                    keys.append(values[rows])
                else:
                    text = orig.pandas_column(col).tolist()
                    keys.append(np.array([_group_key(text[i]) for i in rows], dtype=object).astype(str))
            codes, labels = group_codes(keys)
        return cls(models, extra, weights, codes, labels, by)


def _group_key(value: Any) -> str:
    """A --by cell as text; empty and missing cells form the group "(missing)"."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or not str(value).strip():
        return "(missing)"
    return str(value)


def _add_model_utility(section: dict[str, Any], X: np.ndarray, Xp: np.ndarray, names: list[str],
                       inputs: _AnalysisInputs, request: EvaluateRequest) -> None:
    """CI overlap, pMSE and the group table into an evaluation section (``measures.utility``,
    ``summary``, ``formulas``)."""
    util = model_utility(
        X, Xp, names=names, models=inputs.models, model_columns=inputs.extra, weights=inputs.weights,
        codes=inputs.codes, labels=inputs.labels, by=inputs.by, k=int(section["parameters"]["k"]),
        internal=request.internal, rng=np.random.default_rng(np.random.SeedSequence(int(request.seed)).spawn(1)[0]),
    )
    section["measures"]["utility"].update(util)
    section["summary"].update(model_summary(util))
    section["formulas"].update(MODEL_FORMULAS)


#: The formulas of the analysis-utility measures (from :data:`METRICS`).
MODEL_FORMULAS: dict[str, str] = {name: METRICS[name].formula for name in ("ci_overlap", "pmse_ratio",
                                                                            "group_mean_change")}


def model_summary(util: Mapping[str, Any]) -> dict[str, Any]:
    """The headline figures of :func:`microagg_cli.metrics.model_utility`'s result."""
    return {
        "ci_overlap": _dig(util, "ci_overlap", "mean"),
        "ci_overlap_min": _dig(util, "ci_overlap", "min"),
        "pmse": _dig(util, "pmse", "pmse"),
        "pmse_ratio": _dig(util, "pmse", "ratio"),
        "group_mean_change": _dig(util, "groups", "max_abs_mean_change"),
    }


def _categorical(orig: Table, prot: Table, order: np.ndarray | None, rows: np.ndarray, request: EvaluateRequest,
                 Xp: np.ndarray, names: list[str]) -> dict[str, Any]:
    """The report's ``categorical`` section (:func:`microagg_cli.metrics.categorical.categorical_measures`)
    over the evaluated records; categories are compared as the files' text (a missing
    cell is a category of its own)."""
    import pandas as pd

    from .metrics.categorical import categorical_measures
    from .metrics.keyrisk import before_after

    cats = list(request.categorical or [])
    _check_names(cats, orig, prot, key_columns(request.key), "--categorical")
    both = [c for c in cats if c in names]
    if both:
        raise InvalidParameterError(f"--categorical: column {both[0]!r} is also an evaluated (continuous) column")
    o_codes, r_codes, o_miss, r_miss = [], [], [], []
    for c in cats:
        a = orig.pandas_column(c).astype("string").fillna("").to_numpy(dtype=object)
        b = prot.pandas_column(c).astype("string").fillna("").to_numpy(dtype=object)
        if order is not None:
            b = b[order]
        codes = pd.factorize(np.concatenate([a[rows], b[rows]]))[0]
        o_codes.append(codes[:rows.size])
        r_codes.append(codes[rows.size:])
        o_miss.append(a[rows] == "")
        r_miss.append(b[rows] == "")
    k = request.k if request.k is not None else EVALUATE_K
    o, r = np.column_stack(o_codes), np.column_stack(r_codes)
    section = categorical_measures(cats, o, r, Xp, names, k)
    # the keys' disclosure risk before and after (sdc risk's figures; a missing cell matches any category)
    section["key_risk"] = before_after(np.where(np.column_stack(o_miss), -1, o),
                                       np.where(np.column_stack(r_miss), -1, r), k)
    return section


def raise_for_gates(rep: dict[str, Any]) -> None:
    """Raise :class:`ThresholdExceeded` (with the report attached) when a gate failed."""
    if not rep["gates"]["passed"]:
        exc = ThresholdExceeded(_gate_message(rep["gates"], rep["columns"]["evaluated"]))
        exc.report = rep  # type: ignore[attr-defined]
        raise exc


def evaluate_protected(table: Table, plan: BlockPlan, result: ProtectResult, *, seed: int) -> dict[str, Any]:
    """The risk section of ``sdc protect --evaluate``: :func:`evaluate_matrices` on the
    protected blocks of ``result`` (rows in input order; records with a missing or
    suppressed protected value are left out and counted)."""
    names = list(plan.columns)
    X = numeric_matrix(table, names, allow_missing=True)
    Xp = np.column_stack([r.values[:, j] for r in result.blocks for j in range(len(r.block.columns))])
    bad = np.isnan(X) | np.isnan(Xp)
    rows = np.flatnonzero(~bad.any(axis=1))
    if rows.size < 2:
        raise DataError(f"only {rows.size} record(s) have every protected value; nothing to evaluate")
    blist = [(r.block.name, list(r.block.columns), r.block.k) for r in result.blocks]
    section = evaluate_matrices(X[rows], Xp[rows], names, blist, EvaluateRequest(seed=seed))
    section["records"] = {"evaluated": int(rows.size), "left_out_incomplete": int(X.shape[0] - rows.size)}
    section["columns"] = names
    return section


# =================================================================================
# sdc compare: method x k x plan grids. (Section owned by the compare command; the
# work is done in :mod:`microagg_cli.comparison`.)

