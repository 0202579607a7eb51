"""The result document of ``sdc compare`` and its gates.

:func:`build_document` lays a grid's rows out as the JSON-ready result (the source of
truth the renderers in :mod:`microagg_cli.report.compare` read; schema
:data:`COMPARE_SCHEMA_VERSION`), with the formulas of its measures taken from
:data:`microagg_cli.metrics.METRICS`. :func:`check_grid_gates` and
:func:`raise_for_grid_gates` apply the ``sdc compare`` gates to the finished rows.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .._version import __version__
from ..errors import InvalidParameterError, ThresholdExceeded
from ..evaluation import GATES
from ..io import Table, file_fingerprint
from ..methods import get_method
from ..request import (COMPARE_EXACT_MAX, COMPARE_LINKAGE_SCENARIOS, COMPARE_LINKAGE_WINDOWS, COMPARE_RISK_SAMPLE,
                       CompareRequest)
from ..metrics import METRICS
from .cells import Cell, EvalOptions, PlanChoice, mark_dominated
from .presets import Preset

__all__ = ["COMPARE_SCHEMA_VERSION", "build_document", "check_grid_gates", "raise_for_grid_gates",
           "raise_for_gates"]

#: Version of the ``sdc compare`` JSON layout; bumped on any incompatible change.
COMPARE_SCHEMA_VERSION = "1.3"

#: The formulas of the compare result (from :data:`microagg_cli.metrics.METRICS`); risk
#: figures are means over the intruder scenarios of each cell.
_FORMULAS = {
    **{name: METRICS[name].formula + ("; mean over the intruder scenarios" if METRICS[name].kind == "risk" else "")
       for name in ("il_sse", "il_score", "dld", "pld", "id", "k_prime", "ci_overlap", "pmse_ratio")},
    "labels": "a scenario's label mG says how many blocks of the plan its known columns touch",
}
_FORMULAS.update({"linkage": METRICS["linkage"].formula + "; mean over the scenarios it is computed for (the "
                             "largest), worst_linkage their largest",
                  "rmdid1": METRICS["rmdid1"].formula + "; all protected columns known"})


# ------------------------------------------------------------------- the document


def build_document(
    *,
    table: Table,
    cells: Sequence[Cell],
    rows: Sequence[dict[str, Any] | None],
    options: EvalOptions,
    preset: Preset | None,
    seconds: float,
    jobs: int,
) -> dict[str, Any]:
    """The result of a grid (JSON-ready; schema :data:`COMPARE_SCHEMA_VERSION`).

    Only ``timing`` and each row's ``seconds`` differ between two runs of the same
    grid (``jobs`` is under ``timing``).
    """
    plans: list[PlanChoice] = []
    methods: dict[str, dict[str, Any]] = {}
    for c in cells:
        if c.plan not in plans:
            plans.append(c.plan)
        key = c.method.label or c.method.name
        entry = methods.setdefault(key, {
            "label": key, "name": c.method.name, "params": dict(c.method.params),
            "k_counts": "values" if c.method.values_k else "records", "k_values": [],
            "summary": get_method(c.method.name).summary, "reference": get_method(c.method.name).reference,
        })
        if c.k not in entry["k_values"]:
            entry["k_values"].append(c.k)
    done = [r for r in rows if r is not None]
    mark_dominated(done)
    fp = file_fingerprint(table)
    return {
        "schema_version": COMPARE_SCHEMA_VERSION,
        "tool": {"name": "sdc", "distribution": "microagg-cli", "version": __version__},
        "command": "compare",
        "input": {**fp, "format": table.fmt, "rows": int(table.n_rows),
                  "columns": len(table.columns)},
        "preset": None if preset is None else {
            "name": preset.name, "summary": preset.summary, "reference": preset.reference, "notes": preset.notes},
        "plans": [{"name": p.name, "source": p.source,
                   "blocks": [{"name": n, "columns": list(cols)} for n, cols in p.blocks]} for p in plans],
        "methods": list(methods.values()),
        "parameters": {
            "seed": int(options.seed),
            "known": [list(s) for s in options.known] if options.known is not None else None,
            "max_scenarios": options.max_scenarios,
            "dr_weights": dict(options.dr_weights) if options.dr_weights else None,
            "score_weights": dict(options.score_weights) if options.score_weights else None,
            "aggregation": "mean",
            "evaluation_k": "the cell's k (methods whose k counts values: none)",
            "screening": {
                "dld_pld_exact_max": COMPARE_EXACT_MAX,
                "dld_pld_sample": COMPARE_RISK_SAMPLE,
                "linkage_scenarios": COMPARE_LINKAGE_SCENARIOS,
                "linkage_windows": COMPARE_LINKAGE_WINDOWS,
                "rule": "per cell, DLD and PLD are exact up to dld_pld_exact_max records, above it the mean "
                        "over dld_pld_sample seeded originals; one-to-one linkage of the largest "
                        "scenario(s) only, on linkage_windows local windows above the linkage's exact size; "
                        "sdc evaluate gives every figure of the chosen cell exactly",
            },
        },
        "formulas": dict(_FORMULAS),
        "cells": len(cells),
        "finished": len(done),
        "complete": len(done) == len(cells),
        "rows": done,
        "timing": {"seconds": seconds, "jobs": jobs},
    }


# ---------------------------------------------------------------------- gates


def check_grid_gates(gates: Mapping[str, float] | None) -> dict[str, float]:
    """The gates of ``sdc compare`` (keys of :data:`microagg_cli.evaluation.GATES` whose
    figure every row holds: ``min_ci_overlap``)."""
    gates = dict(gates or {})
    for key in gates:
        if key not in GATES or GATES[key].stat != "overall" or GATES[key].field not in _ROW_GATE_FIELDS:
            raise InvalidParameterError(f"unknown compare gate {key!r} (known: "
                                        f"{', '.join(g.key for g in GATES.values() if g.field in _ROW_GATE_FIELDS)})")
    return gates


#: Row fields a compare gate may check (figures with one value per cell).
_ROW_GATE_FIELDS = ("ci_overlap",)


def raise_for_grid_gates(doc: Mapping[str, Any], gates: Mapping[str, float] | None) -> None:
    """Raise :class:`ThresholdExceeded` (exit code 5) naming the cells that fail a gate."""
    parts = []
    for key, threshold in check_grid_gates(gates).items():
        gate = GATES[key]
        bad = []
        for r in doc["rows"]:
            v = r.get(gate.field)
            if v is None or (v < threshold if gate.direction == "min" else v > threshold):
                bad.append((r, v))
        if bad:
            worst = min(bad, key=lambda rv: -1e300 if rv[1] is None else rv[1]) if gate.direction == "min" else \
                max(bad, key=lambda rv: 1e300 if rv[1] is None else rv[1])
            r, v = worst
            shown = "not computed" if v is None else f"{v:.4g}"
            parts.append(f"{gate.option} {threshold:g}: {len(bad)} of {len(doc['rows'])} cell(s) fail, worst "
                         f"{r['label']} k={r['k']} ({r['plan']}): {gate.measure} {shown}")
    if parts:
        raise ThresholdExceeded("gate failed: " + "; ".join(parts))


def raise_for_gates(doc: dict[str, Any], request: CompareRequest) -> None:
    """Raise :class:`~microagg_cli.errors.ThresholdExceeded` (exit code 5) when a cell
    fails a gate of ``request`` (``max_linkage``: a cell's worst-scenario one-to-one
    linkage above it); called after every output is written."""
    if request.max_linkage is None:
        return
    bad = [r for r in doc["rows"]
           if r is not None and r.get("worst_linkage") is not None and r["worst_linkage"] > request.max_linkage]
    if bad:
        cells = ", ".join(f"{r['label']} k={r['k']} ({r['plan']}): {r['worst_linkage']:.4g}" for r in bad[:5])
        more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        raise ThresholdExceeded(f"gate failed: --max-linkage {request.max_linkage:g}: linkage (worst scenario) "
                                f"above it in {len(bad)} of {len(doc['rows'])} cells: {cells}{more}")
