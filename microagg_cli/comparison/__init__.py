"""The library behind ``sdc compare``: method x k x plan grids, the way the microaggregation papers compare methods.

``sdc compare`` (and :func:`microagg_cli.api.compare`) protects one input file with
every combination ("cell") of a method, a k and a blocking plan, in memory, measures
each protected version with the metrics package, and lays the results out the way
the papers' tables do: one table per plan, rows grouped by method then k, columns
the measures. A self-contained HTML page adds a risk-utility map (information loss
on x, disclosure risk on y, one labelled marker per cell).

One module per concern: :mod:`.cells` (the cell model, the plans, one cell's run),
:mod:`.presets` (the literature experiments), :mod:`.pool` (every cell, in this
process or a process pool), :mod:`.document` (the JSON-ready result and its gates),
:mod:`.entry` (from a request to a document, in memory or on a file). Rendering lives
in :mod:`microagg_cli.report.compare` and is re-exported here for callers.

Pipeline
--------
1. :func:`build_cells` -- the grid, in the order plan, method, k. ``mic1d`` (whose k
   counts *values* per partition, not records) takes its own k values.
2. :func:`check_cells` -- everything that can fail is checked before the first cell
   runs: methods, parameters, k against the size of every block, the data.
3. :func:`run_grid` -- each cell is :func:`run_cell`: ``protect_table`` then
   :func:`microagg_cli.metrics.evaluate_arrays`. ``jobs > 1`` runs cells in worker
   processes; rows are stored by cell index, so the result is the same whatever
   ``jobs`` is (timings aside). Ctrl-C stops the workers and keeps the finished rows.
4. :func:`build_document` -- the JSON-ready result (the source of truth); then
   :func:`to_json`, :func:`to_csv`, :func:`table_text` / :func:`print_tables`
   (rich) and :func:`render_html` render it.

Determinism: every cell is protected with the run seed (blocks get their streams by
position, as in ``sdc protect``) and evaluated with the same seeded scenario sample,
so a cell's figures do not depend on the other cells, on their order or on ``jobs``.

The name: the package is called ``comparison``, not ``compare``, because
``microagg_cli.compare`` is already the public function :func:`microagg_cli.api.compare`
(a lazy export of the package): a subpackage of that name would replace the function
by the module as soon as it is imported. ``commands/compare.py`` (the click command)
and ``report/compare.py`` (the rendering) keep the command's name.
"""

from __future__ import annotations

from ..report import to_json
from ..report.compare import (  # rendering lives in report/; re-exported for callers of the comparison
    MEASURES,
    print_tables,
    render_html,
    risk_utility_svg,
    table_text,
    to_csv,
)
from .cells import DEFAULT_MAX_SCENARIOS, Cell, EvalOptions, MethodChoice, PlanChoice, build_cells, check_cells
from .cells import file_plans, parse_method, run_cell, saved_name, single_plan, strategy_plans
from .cells import MixedChoice, mark_dominated, mixed_choices, parse_weight_axes
from .document import (COMPARE_SCHEMA_VERSION, build_document, check_grid_gates, raise_for_gates,
                       raise_for_grid_gates)
from .entry import compare_file, compare_table, grid_options, output_format, plan_cells
from .pool import GridInterrupted, resolve_jobs, run_grid
from .presets import PRESETS, Preset, resolve_preset

__all__ = [
    "COMPARE_SCHEMA_VERSION",
    "DEFAULT_MAX_SCENARIOS",
    "MEASURES",
    "PRESETS",
    "Cell",
    "EvalOptions",
    "GridInterrupted",
    "MethodChoice",
    "PlanChoice",
    "Preset",
    "build_cells",
    "build_document",
    "check_cells",
    "check_grid_gates",
    "compare_file",
    "compare_table",
    "file_plans",
    "grid_options",
    "output_format",
    "plan_cells",
    "parse_method",
    "parse_weight_axes",
    "mixed_choices",
    "mark_dominated",
    "MixedChoice",
    "print_tables",
    "raise_for_gates",
    "raise_for_grid_gates",
    "render_html",
    "resolve_jobs",
    "resolve_preset",
    "run_cell",
    "risk_utility_svg",
    "run_grid",
    "saved_name",
    "single_plan",
    "strategy_plans",
    "table_text",
    "to_csv",
    "to_json",
]
