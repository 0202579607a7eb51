"""The entry points of ``sdc compare``: from a request to a result document.

:func:`grid_options` checks a :class:`microagg_cli.request.CompareRequest` before any
file is read (a preset fills in what is not given), :func:`plan_cells` makes the plans
and cells for a table, :func:`compare_table` runs a grid on a table in memory and
:func:`compare_file` on a file, writing the output and the HTML page atomically (and
the finished rows when Ctrl-C stops the run).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .. import audit
from ..blocking import BlockPlan
from ..errors import DataError, InvalidParameterError
from ..io import (
    OutputSet,
    Table,
    atomic_write_bytes,
    check_output_path,
    detect_format,
    read_table,
    resolve_columns,
)
from ..report import attach_html, render_compare
from ..report.compare import render_html
from ..request import COMPARE_K, COMPARE_METHOD, CompareRequest
from .cells import (
    Cell,
    EvalOptions,
    MethodChoice,
    MixedChoice,
    PlanChoice,
    build_cells,
    check_cells,
    file_plans,
    mixed_choices,
    parse_method,
    parse_weight_axes,
    saved_name,
    single_plan,
    strategy_plans,
)
from .document import build_document, check_grid_gates
from .pool import GridInterrupted, resolve_jobs, run_grid
from .presets import Preset, resolve_preset

__all__ = ["compare_file", "compare_table", "grid_options", "output_format", "plan_cells"]


# ---------------------------------------------------------------------- the file API

_FORMATS = ("table", "csv", "json")


def _render(doc: Mapping[str, Any], fmt: str) -> str:
    return render_compare(doc, fmt)


def output_format(fmt: str | None, output: str | Path | None) -> str:
    """``fmt`` or, when None, from the output's extension (.json, .csv; else table)."""
    if fmt is not None:
        if fmt not in _FORMATS:
            raise InvalidParameterError(f"unknown format {fmt!r} (use {', '.join(_FORMATS)})")
        return fmt
    if output is not None and str(output) != "-":
        suffix = Path(output).suffix.lower()
        if suffix in (".json", ".csv"):
            return suffix[1:]
    return "table"


def grid_options(request: CompareRequest) -> tuple[Preset | None, list[MethodChoice], list[int], list[int] | None,
                                                  EvalOptions]:
    """Check a grid's options (before any file is read): the preset, the methods, the k
    values (a preset fills in what is not given) and the evaluation options."""
    r = request
    preset, plans, strategies, columns = r.preset, r.plans, r.strategies, r.columns
    max_scenarios, methods, k, mic1d_k = r.max_scenarios, r.methods, r.k, r.mic1d_k
    seed, known, dr_weights, score_weights = r.seed, r.known, r.dr_weights, r.score_weights
    pre = resolve_preset(preset) if preset is not None else None
    check_grid_gates(r.gates)
    if (plans or (pre is not None and pre.plans and not strategies)) and columns is not None:
        raise InvalidParameterError("--columns cannot be combined with plans (the plans name the columns)")
    # the method list and k values (a preset fills in what is not given)
    if methods is None:
        choices = list(pre.methods) if pre is not None else [MethodChoice(COMPARE_METHOD, {}, COMPARE_METHOD)]
    else:
        choices = [m if isinstance(m, MethodChoice) else parse_method(str(m)) for m in methods]
    ks = list(k) if k is not None else (list(pre.ks) if pre is not None else list(COMPARE_K))
    vks = list(mic1d_k) if mic1d_k is not None else (list(pre.mic1d_ks) if pre is not None and pre.mic1d_ks else None)
    options = EvalOptions(
        seed=int(seed),
        known=tuple(tuple(s) for s in known) if known is not None else None,
        max_scenarios=None if max_scenarios is None else int(max_scenarios),
        dr_weights=dict(dr_weights) if dr_weights else None,
        score_weights=dict(score_weights) if score_weights else None,
        categorical=tuple(dict.fromkeys(c for keys in key_sets(r) for c in keys)),
    )
    if options.categorical:
        from ..methods.mixed import MIXED_METHODS

        for c in choices:
            if c.name not in MIXED_METHODS:
                raise InvalidParameterError(f"--categorical: method {c.name!r} does not group categorical keys; "
                                            f"use {' or '.join(MIXED_METHODS)}")
    return pre, choices, ks, vks, options


def key_sets(request: CompareRequest) -> list[list[str]]:
    """The grid's sets of categorical keys: ``keys_sets``, or ``categorical`` as one set."""
    if request.keys_sets:
        return [list(keys) for keys in request.keys_sets]
    return [list(request.categorical)] if request.categorical else []


def plan_cells(
    table: Table,
    pre: Preset | None,
    choices: Sequence[MethodChoice],
    ks: Sequence[int],
    vks: Sequence[int] | None,
    *,
    plans: Sequence[str | Path | BlockPlan] | None,
    strategies: Sequence[str] | None,
    block_size: int | None,
    columns: Sequence[str] | None,
    seed: int,
    roles: Sequence[str] = (),
    mixed: Sequence[MixedChoice] = (),
) -> list[Cell]:
    """The grid's plans (given, proposed by strategies, the preset's, or one block of the
    columns) and its cells, checked against ``table``."""
    # the plans
    if plans:
        plan_choices = []
        for i, p in enumerate(plans):
            if isinstance(p, BlockPlan):
                plan_choices.append(PlanChoice.from_plan(f"plan{i + 1}", p, "given plan"))
            else:
                plan_choices += file_plans([p])
    else:
        if columns is not None:
            cols, _ = resolve_columns(table, list(columns), None)
        elif pre is not None and pre.columns is not None:
            cols = list(pre.columns)
        elif pre is not None and pre.plans is not None:
            cols = [c for p in pre.plans for c in p.columns]
        else:
            cols, _ = resolve_columns(table, None, None, roles=list(roles) or None)
        missing = [c for c in cols if c not in table.columns]
        if missing:
            what = f"preset {pre.name!r} needs" if pre is not None else "the grid needs"
            raise DataError(f"{what} column {missing[0]!r}, which the input lacks (columns: "
                            f"{', '.join(table.columns[:20])})")
        if strategies:
            plan_choices = strategy_plans(table, cols, strategies, block_size, seed=seed)
        elif pre is not None and pre.plans is not None:
            plan_choices = list(pre.plans)
        else:
            plan_choices = [single_plan(cols)]
    cells = build_cells(choices, ks, plan_choices, mic1d_ks=vks, mixed=mixed)
    check_cells(table, cells)
    return cells


def compare_table(
    table: Table,
    request: CompareRequest | None = None,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Run a grid on a table in memory (nothing written); see :func:`microagg_cli.api.compare`
    (``request``: its options, :class:`microagg_cli.request.CompareRequest`)."""
    t0 = time.perf_counter()
    request = CompareRequest() if request is None else request
    pre, choices, ks, vks, options = grid_options(request)
    cells = _cells(table, pre, choices, ks, vks, request)
    jobs = resolve_jobs(request.jobs, len(cells))
    final = run_grid(table, cells, options, jobs=jobs, progress=progress)
    return build_document(table=table, cells=cells, rows=final, options=options, preset=pre,
                          seconds=time.perf_counter() - t0, jobs=jobs)


def _cells(table: Table, pre: Preset | None, choices: Sequence[MethodChoice], ks: Sequence[int],
           vks: Sequence[int] | None, request: CompareRequest) -> list[Cell]:
    return plan_cells(table, pre, choices, ks, vks, plans=request.plans, strategies=request.strategies,
                      block_size=request.block_size, columns=request.columns, seed=request.seed,
                      roles=[c for keys in key_sets(request) for c in keys],
                      mixed=_mixed(request))


def _mixed(request: CompareRequest) -> list[MixedChoice]:
    """The mixed axes: one choice per key set and combination of weights (none without
    keys, and one without a weight list or several key sets: the rows keep their label)."""
    sets = key_sets(request)
    if not sets:
        return []
    weights = parse_weight_axes(request.mixed_weights)
    return mixed_choices(sets, weights)


def compare_file(
    input: str | Path,
    request: CompareRequest,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Run a grid on a file; see :func:`microagg_cli.api.compare` (the documented entry;
    ``request``: its options, :class:`microagg_cli.request.CompareRequest`)."""
    t0 = time.perf_counter()
    pre, choices, ks, vks, options = grid_options(request)
    output, html, force, save_protected = request.output, request.html, request.force, request.save_protected
    read = request.read
    # the outputs, checked before any work
    src = None if str(input) == "-" else Path(input)
    fmt = output_format(request.fmt, output)
    out_path = check_output_path(output, force=force, inputs=(src,)) if output is not None else None
    html_path = None
    if html is not None:
        if str(html) == "-":
            raise InvalidParameterError("--html needs a file name (the HTML page is not written to stdout)")
        html_path = check_output_path(html, force=force, inputs=(src,), what="HTML page")
        if out_path is not None and out_path.resolve() == html_path.resolve():
            raise InvalidParameterError("-o and --html name the same file")
    table = read_table(input, read, fmt=detect_format(input, read.input_format))
    cells = _cells(table, pre, choices, ks, vks, request)
    save_dir = None
    if save_protected is not None:
        save_dir = Path(save_protected)
        if save_dir.exists() and not save_dir.is_dir():
            raise DataError(f"--save-protected {str(save_dir)!r} is a file, not a folder")
        if not save_dir.parent.is_dir():
            raise DataError(f"--save-protected: folder {str(save_dir.parent)!r} does not exist")
        save_dir.mkdir(exist_ok=True)
        for cell in cells:
            check_output_path(save_dir / saved_name(cell), force=force, inputs=(src,), what="protected file")
    jobs = resolve_jobs(request.jobs, len(cells))
    rows: list[dict[str, Any] | None] = [None] * len(cells)
    written_once = False

    def document(final_rows: Sequence[dict[str, Any] | None]) -> dict[str, Any]:
        doc = build_document(table=table, cells=cells, rows=final_rows, options=options, preset=pre,
                             seconds=time.perf_counter() - t0, jobs=jobs)
        doc["audit"] = audit.trail(t0, files=[audit.file_entry(save_dir / r["saved"], "protected (saved)")
                                              for r in final_rows if r is not None and r.get("saved") and save_dir])
        return doc

    def write_output(doc: Mapping[str, Any]) -> None:
        nonlocal written_once
        if out_path is None:
            return
        data = _render(doc, fmt).encode("utf-8")
        # the first write honours --force; later ones replace our own partial file
        atomic_write_bytes(out_path, lambda fh: fh.write(data), force=force or written_once)
        written_once = True

    def on_row(i: int, row: dict[str, Any]) -> None:
        rows[i] = row
        write_output(document(rows))

    try:
        final = run_grid(table, cells, options, jobs=jobs, save_dir=save_dir, force=force,
                         progress=progress, on_row=on_row)
    except GridInterrupted as exc:
        doc = document(exc.rows)
        written = []
        # the page first: its size and SHA-256 go into the JSON's audit files
        page = attach_html(doc, html, render_html(doc)) if html_path is not None and doc["finished"] else None
        if out_path is not None and doc["finished"]:
            write_output(doc)
            written.append(str(out_path))
        if page is not None:
            atomic_write_bytes(html_path, lambda fh: fh.write(page), force=force)
            written.append(str(html_path))
        raise GridInterrupted(exc.rows, doc, written) from None
    doc = document(final)
    # the page first (its hash goes into the output's audit trail), then the final
    # output and the page as one transaction
    data = attach_html(doc, html, render_html(doc)) if html_path is not None else None
    with OutputSet(force=force) as files:
        if out_path is not None:
            text = _render(doc, fmt).encode("utf-8")
            # the first write honours --force; later ones replace our own partial file
            files.add_file(out_path, lambda fh: fh.write(text), what="output", force=force or written_once)
        if html_path is not None and data is not None:
            files.add_file(html_path, lambda fh: fh.write(data), what="HTML page")
        files.commit()
    return doc
