"""``sdc blocks``: the JSON document of a proposal/check/evaluation and its text tables.

:func:`blocks_document` shapes the result of :func:`microagg_cli.blocking.propose_plans`
into the JSON report (schema ``BLOCKS_SCHEMA_VERSION``); the text views read that
document, so what the terminal shows is what the JSON holds. The plans arrive as
plan-file dicts (:func:`microagg_cli.blocking.plan_to_dict`): this module never
imports the blocking machinery.
"""

from __future__ import annotations

from typing import Any, Mapping

from .._version import __version__

__all__ = ["blocks_document", "blocks_text", "evaluation_text"]


def blocks_document(res: Mapping[str, Any], *, plans: Mapping[str, Mapping[str, Any]], schema_version: str,
                    max_il: float | None, seed: int) -> dict[str, Any]:
    """The ``sdc blocks`` JSON report.

    Parameters
    ----------
    res : the result of ``propose_plans`` (candidates, recommended, written, warnings, audit).
    plans : candidate name -> its plan as a plan-file dict.
    schema_version : ``BLOCKS_SCHEMA_VERSION``.
    """
    cands = []
    for name, entry in res["candidates"].items():
        item = {
            "name": name,
            "plan": dict(plans[name]),
            "mean_abs_corr": entry["mean_abs_corr"],
            "block_mean_abs_corr": entry["block_mean_abs_corr"],
        }
        if entry["evaluation"] is not None:
            ev = entry["evaluation"]
            item.update(il_sse=ev["il_sse"], k=ev["k"], blocks=ev["blocks"], risk=ev["risk"])
        cands.append(item)
    return {
        "schema_version": schema_version,
        "tool": {"name": "sdc", "distribution": "microagg-cli", "version": __version__},
        "command": "blocks",
        "input": res["input"],
        "columns": res["columns"],
        "seed": seed,
        "max_il": max_il,
        "candidates": cands,
        "recommended": res["recommended"],
        "written": res["written"],
        "warnings": res["warnings"],
        "audit": res["audit"],
    }


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _table(header: list[str], rows: list[list[str]], right: set[int]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)]) + "\n"


def blocks_text(doc: Mapping[str, Any]) -> str:
    """The candidate plans' blocks as a text table, one line per block, then a line per plan."""
    rows = []
    for c in doc["candidates"]:
        for b in c["plan"]["blocks"]:
            rows.append([c["name"], b["name"], b["method"], _fmt(b.get("k")),
                         _fmt(c["block_mean_abs_corr"][b["name"]]), ", ".join(b["columns"])])
    out = _table(["plan", "block", "method", "k", "mean |corr|", "columns"], rows, {3, 4})
    for c in doc["candidates"]:
        plan = c["plan"]
        extra = []
        if plan.get("drop"):
            extra.append(f"drop: {', '.join(plan['drop'])}")
        if plan.get("passthrough"):
            extra.append(f"passthrough: {', '.join(plan['passthrough'])}")
        ncols = sum(len(b["columns"]) for b in plan["blocks"])
        out += (f"{c['name']}: {len(plan['blocks'])} block(s), {ncols} column(s), mean |corr| inside "
                f"blocks {_fmt(c['mean_abs_corr'])}" + ("; " + "; ".join(extra) if extra else "") + "\n")
    return out


def evaluation_text(doc: Mapping[str, Any]) -> str:
    """The evaluation of every candidate as a plain-text table (one row per scenario label)."""
    rows = []
    evaluated = [c for c in doc["candidates"] if c.get("risk") is not None]
    for c in evaluated:
        first = True
        for label, s in c["risk"]["labels"].items():
            rows.append([
                c["name"] if first else "", str(len(c["plan"]["blocks"])) if first else "",
                _fmt(c["il_sse"], 4) if first else "", label, str(s["scenarios"]),
                _fmt(s["k_prime_mean"], 2), _fmt(s["k_prime_worst"], 2), str(s["k_min_worst"]),
                _fmt(s["share_below_k_mean"], 3),
            ])
            first = False
    out = _table(["plan", "blocks", "IL_SSE", "known", "scenarios", "k' mean", "k' worst", "k_min", "<k share"],
                 rows, {1, 2, 4, 5, 6, 7, 8})
    out += ("known: intruder scenarios grouped by how many blocks the known attributes touch; "
            "k' = records / distinct protected rows over the known attributes; k_min = smallest such "
            "class (worst scenario); <k share = mean share of records in classes below k.\n")
    for c in evaluated:
        blocks = " | ".join(f"{b['name']}: {', '.join(b['columns'])}" for b in c["plan"]["blocks"])
        worst = c["risk"]["worst"]
        out += f"{c['name']}: {blocks}; worst k' {worst['k_prime_worst']:.2f} knowing {', '.join(worst['worst_known'])}\n"
    rec = doc.get("recommended")
    if rec is not None:
        c = next(c for c in doc["candidates"] if c["name"] == rec)
        max_il = doc.get("max_il")
        out += (f"recommended: {rec} (worst k' {c['risk']['worst']['k_prime_worst']:.2f}, "
                f"IL_SSE {c['il_sse']:.4f}" + (f" <= {max_il:g}" if max_il is not None else "") + ")\n")
    return out
