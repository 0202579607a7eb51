"""The library behind ``sdc blocks``' evaluate-and-recommend: measure candidate plans and recommend one.

A plan is protected in memory (:func:`microagg_cli.protection.protect_table`) and
measured by its information loss and its real anonymity k' per intruder scenario
(:func:`microagg_cli.evaluation.scenario_risk`), following the attribute-blocking
discussion of Nin, Herranz & Torra (2008), "How to group attributes in multivariate
microaggregation", IJUFKS 16(suppl. 1):121-138: blocks of correlated attributes lose
less information, but an intruder who knows attributes from several blocks may
re-identify records whose groups differ between blocks.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from .blocking import (
    BlockPlan,
    abs_correlation,
    block_mean_abs_corr,
    load_plan,
    make_plan,
    plan_mean_abs_corr,
    plan_to_dict,
)
from .evaluation import scenario_risk
from .io import Table, numeric_matrix, resolve_columns
from .metrics import il_sse
from .protection import protect_table
from .request import BlocksRequest, RunOptions, default

__all__ = ["evaluate_plan", "recommend_plan", "kprime_warnings", "advise", "plan_to_check"]

log = logging.getLogger("microagg_cli")


def evaluate_plan(
    table: "Table",
    plan: BlockPlan,
    *,
    seed: int = default(BlocksRequest, "seed"),
    stat: str = default(BlocksRequest, "stat"),
    max_known: int | None = None,
) -> dict[str, Any]:
    """Protect ``table`` with ``plan`` in memory and measure IL_SSE and k' per scenario.

    k for the share below k is the smallest k of the plan's blocks. Nothing is
    written.
    """
    plan.check(table.columns)
    result = protect_table(table, plan, RunOptions(seed=seed, stat=stat))
    cols = plan.columns
    X = numeric_matrix(table, cols, allow_missing=True)
    Xp = np.column_stack([r.values for r in result.blocks])
    k = min(int(b.k) for b in plan.blocks if b.k is not None)
    finite = np.isfinite(X).all(axis=1)
    il = il_sse(X[finite], Xp[finite])
    return {
        "plan": plan_to_dict(plan),
        "il_sse": il,
        "k": k,
        "blocks": [
            {"name": r.block.name, "columns": list(r.block.columns), "method": r.block.method,
             "k": r.block.k, "il_sse": r.stats.get("il_sse"), "k_prime": r.stats.get("k_prime")}
            for r in result.blocks
        ],
        "risk": scenario_risk(np.where(np.isfinite(Xp), Xp, np.nan), plan, k, max_known=max_known, seed=seed),
    }


def recommend_plan(evaluations: Mapping[str, Mapping[str, Any]], *, max_il: float | None = None) -> str | None:
    """The candidate with the best worst-case k' among those with IL_SSE <= ``max_il``.

    k' values are compared as displayed (2 decimals); ties go to the higher mean k'
    over the scenarios (2 decimals), then to the lower IL_SSE, then to the first
    candidate. None when no candidate meets the bound. Without a bound on the
    intruder's knowledge (``max_known``) the worst case is an intruder who knows every
    attribute, where any plan of several blocks is near k' = 1.
    """
    best: tuple[float, float, float, int] | None = None
    choice = None
    for pos, (name, ev) in enumerate(evaluations.items()):
        if max_il is not None and ev["il_sse"] > max_il:
            continue
        worst = ev["risk"]["worst"]
        key = (-round(worst["k_prime_worst"], 2), -round(worst["k_prime_mean"], 2), ev["il_sse"], pos)
        if best is None or key < best:
            best, choice = key, name
    return choice


def advise(
    table: Table,
    request: BlocksRequest,
    *,
    names: Sequence[str],
    check_plan: BlockPlan | None = None,
    check_name: str | None = None,
) -> dict[str, Any]:
    """The in-memory side of ``sdc blocks``: candidate plans for ``table``, measured and ranked.

    ``names`` are the strategies to propose (:data:`microagg_cli.blocking.STRATEGIES`);
    ``check_plan`` (named ``check_name``) is checked instead. ``request`` holds the
    options (:class:`microagg_cli.request.BlocksRequest`): with ``evaluate`` each
    candidate is protected in memory and measured (:func:`evaluate_plan`), with
    ``recommend`` the candidate of best worst-case k' whose IL_SSE is at most
    ``max_il`` is picked (:func:`recommend_plan`). Returns ``{"columns", "candidates",
    "recommended", "chosen", "warned", "warnings"}``; warnings are logged too.
    """
    r = request
    evaluate, recommend, seed, stat, max_known = r.evaluating, r.recommending, r.seed, r.stat, r.max_known
    candidates: dict[str, dict[str, Any]] = {}
    if check_plan is not None:
        plan = check_plan
        plan.check(table.columns, require_k=evaluate)
        cols = plan.columns
        X = numeric_matrix(table, cols, allow_missing=True)
        candidates[check_name or "plan"] = {"plan": plan}
    else:
        cols, dropped = resolve_columns(table, r.columns, r.drop)
        X = numeric_matrix(table, cols, allow_missing=True)
        for name in names:
            plan = make_plan(X, cols, strategy=name, size=r.size, seed=seed, method=r.method, k=r.k,
                             params=r.params, drop=tuple(dropped))
            candidates[name] = {"plan": plan}
    A = abs_correlation(X)
    pos = {c: j for j, c in enumerate(cols)}
    for entry in candidates.values():
        plan = entry["plan"]
        entry["mean_abs_corr"] = plan_mean_abs_corr(X, cols, plan)
        entry["block_mean_abs_corr"] = {
            b.name: block_mean_abs_corr(A, [pos[c] for c in b.columns]) for b in plan.blocks
        }
        entry["evaluation"] = None
    if evaluate:
        for entry in candidates.values():
            entry["evaluation"] = evaluate_plan(table, entry["plan"], seed=seed, stat=stat, max_known=max_known)
    recommended = None
    if recommend:
        recommended = recommend_plan({n: e["evaluation"] for n, e in candidates.items()}, max_il=r.max_il)
    chosen = recommended if recommend else (next(iter(candidates)) if len(candidates) == 1 else None)
    # the plan a user would apply: the recommended one, the checked one, the one proposed
    warned = recommended if recommend else (next(iter(candidates)) if check_plan is not None else chosen)
    warnings = []
    if warned is not None and candidates[warned]["evaluation"] is not None:
        warnings = kprime_warnings(warned, candidates[warned]["evaluation"])
    for line in warnings:
        log.warning("%s", line)
    return {"columns": cols, "candidates": candidates, "recommended": recommended, "chosen": chosen,
            "warnings": warnings}


def plan_to_check(request: BlocksRequest) -> tuple[BlockPlan | None, str | None]:
    """The plan of ``request.check`` (a plan file, or a :class:`BlockPlan`) with the
    request's k, method and parameters filling in what it leaves out and its drop list,
    and the name its candidate gets (the file's name; ``plan`` for an object)."""
    check = request.check
    if check is None:
        return None, None
    if isinstance(check, BlockPlan):
        return check.with_drop(request.drop), "plan"
    plan = load_plan(check, default_k=request.k, default_method=request.method, default_params=request.params)
    return plan.with_drop(request.drop), Path(check).name


def kprime_warnings(name: str, evaluation: Mapping[str, Any]) -> list[str]:
    """One line per scenario label (1G, 2G, ...) of plan ``name`` where an intruder
    scenario has k' < k, naming the worst such scenario.

    k is the smallest k of the plan's blocks (as in :func:`evaluate_plan`).

    >>> ev = {"k": 5, "risk": {"labels": {
    ...     "1G": {"scenarios": 3, "k_prime_worst": 5.0, "worst_known": ["a"]},
    ...     "2G": {"scenarios": 4, "k_prime_worst": 1.04, "worst_known": ["a", "c"]}}}}
    >>> kprime_warnings("cross", ev)
    ["plan cross: k' < k = 5 for 2G intruders (worst of 4 scenarios: k' = 1.04 knowing a, c)"]
    """
    k = evaluation["k"]
    out = []
    for label, s in evaluation["risk"]["labels"].items():
        if s["k_prime_worst"] < k:
            out.append(f"plan {name}: k' < k = {k} for {label} intruders (worst of {s['scenarios']} "
                       f"scenarios: k' = {s['k_prime_worst']:.2f} knowing {', '.join(s['worst_known'])})")
    return out
