"""``sdc compare``: a method x k x plan grid, protected in memory and evaluated."""

from __future__ import annotations

import sys

import click

from .. import api
from .. import comparison, interrupts, report
from ..statfiles import INPUT_FORMATS  # SPSS, Stata and SAS files too
from ..request import CompareRequest
from ..request import CompareRequest as C
from ._common_eval import parse_known, parse_weights
from ._options import (
    build_request,
    check_delimiter,
    complete_method_list, field_option, listing_option, setup_logging, split_list, split_names, stderr_console, stdout_console,
                       verbosity_options)

__all__ = ["compare_command"]


def _list(value: str | None, option: str) -> list[str] | None:
    return split_list(value, f"{option}: empty item in")


def _methods(value: str | None) -> list[str] | None:
    """Methods are comma-separated; a parameter value never holds a comma."""
    return _list(value, "--methods")


def _names(value, _values):
    return split_names(value)


def _gates(_value, values):
    """``--min-ci-overlap J``: the request's gates."""
    overlap = values.pop("min_ci_overlap")
    return {"min_ci_overlap": overlap} if overlap is not None else None


#: The command line's own parsing of compare's options, in the order it runs (every
#: other option passes to :class:`CompareRequest` as click gives it).
PARSE = {
    "methods": lambda value, _values: _methods(value),
    "k": lambda value, _values: _list(value, "--k"),
    "mic1d_k": lambda value, _values: _list(value, "--mic1d-k"),
    "plans": lambda value, _values: _list(value, "--plans"),
    "strategies": lambda value, _values: _list(value, "--strategies"),
    "columns": _names,
    "categorical": _names,
    "mixed_weights": lambda value, _values: comparison.parse_weight_axes(value),
    "keys_sets": lambda value, _values: None if value is None else [split_names(v) for v in value.split(";")],
    "known": lambda value, _values: parse_known(value),
    "dr_weights": lambda value, _values: parse_weights(value, "--dr-weights"),
    "score_weights": lambda value, _values: parse_weights(value, "--score-weights"),
    "output": lambda value, _values: None if value in (None, "-") else value,
    "gates": _gates,
}


def _presets_text() -> str:
    lines = []
    for p in comparison.PRESETS.values():
        lines.append(f"{p.name}: {p.summary}")
        lines.append(f"    reference: {p.reference}")
        lines.append(f"    {p.notes}")
    return "\n".join(lines)


@click.command("compare", context_settings={"max_content_width": 100})
@click.argument("input", metavar="INPUT", type=click.Path(dir_okay=True, allow_dash=True))
@field_option(C, "methods", "-m", "--methods", metavar="M1,M2", shell_complete=complete_method_list)
@field_option(C, "k", "-k", "--k", "k", metavar="K1,K2")
@field_option(C, "mic1d_k", "--mic1d-k", metavar="V1,V2")
@field_option(C, "plans", "--plans", metavar="A.toml,B.json")
@field_option(C, "strategies", "--strategies", metavar="S1,S2")
@field_option(C, "block_size", "--block-size", type=int, metavar="S")
@field_option(C, "columns", "-c", "--columns", metavar="A,B,C")
@field_option(C, "categorical", "--categorical", metavar="COL[,COL]")
@field_option(C, "mixed_weights", "--mixed-weights", metavar="ROLE=W[,W...]")
@field_option(C, "keys_sets", "--keys-sets", metavar="A,B;A,B,C")
@field_option(C, "preset", "--preset", type=click.Choice(list(comparison.PRESETS)))
@field_option(C, "known", "--known", multiple=True, metavar="A,B,C", default=())
@field_option(C, "max_scenarios", "--max-scenarios", type=int, show_default=True, metavar="N")
@field_option(C, "dr_weights", "--dr-weights", metavar="dld=W,pld=W,id=W")
@field_option(C, "score_weights", "--score-weights", metavar="il=W,dr=W")
@field_option(C, "fmt", "--format", "fmt", type=click.Choice(["table", "csv", "json"]))
@field_option(C, "output", "-o", "--output", metavar="FILE")
@field_option(C, "html", "--html", metavar="FILE.html")
@field_option(C, "save_protected", "--save-protected", metavar="DIR")
@field_option(C, "jobs", "-j", "--jobs", type=int, show_default=True, metavar="N")
@field_option(C, "seed", "-s", "--seed", type=click.IntRange(min=0), show_default=True)
@field_option(C, "force", "-f", "--force", is_flag=True)
@click.option("--min-ci-overlap", "min_ci_overlap", type=float, default=None, metavar="J",
              help="Fail (exit code 5, after the outputs are written) when a cell's mean confidence-interval "
                   "overlap of the regression coefficients is below J (0 to 1).")
@field_option(C, "max_linkage", "--max-linkage", type=float, metavar="PCT")
@field_option(C, "input_format", "--input-format", type=click.Choice(list(INPUT_FORMATS)))
@field_option(C, "delimiter", "--delimiter", metavar="CHAR", callback=check_delimiter)
@field_option(C, "encoding", "--encoding", metavar="NAME", show_default=True)
@field_option(C, "decimal", "--decimal", type=click.Choice([".", ","]), show_default=True,
              help="Decimal mark of the CSV input (',' for European CSV with ';' delimiter).")
@listing_option("--list-presets", _presets_text, "List the presets with their references and notes, then exit.")
@verbosity_options
def compare_command(input, quiet, verbose, **options):
    """Compare methods, k values and blocking plans on INPUT: information loss against risk.

    Every combination ("cell") of a method, a k and a plan is protected in memory
    and evaluated like sdc evaluate: IL_SSE, IL_score, the record-linkage risks DLD
    and PLD, interval disclosure ID, DR, score, the real anonymity k', the
    one-to-one linkage and RMDID1, with k' and DLD per intruder-knowledge label
    (1G, 2G... = scenarios touching 1, 2... blocks of the plan). The result is one
    table per plan, rows grouped by method then k (--format csv or json for
    machines), and with --html a page holding the tables and a risk-utility map: one labelled marker per cell, lower left is
    better. The figures do not depend on --jobs; only timings do.

    Every cell also gets the mean confidence-interval overlap of the default
    regressions (each column on the others) and the pMSE ratio, as in sdc evaluate;
    --min-ci-overlap fails (exit code 5) when a cell falls below it.

    Intruder scenarios are capped at --max-scenarios per cell (64 by default: a
    grid of 15 cells on Census takes well under a minute); every cell of a plan
    uses the same scenarios. A cell is a screen: above 20,000 records its DLD and
    PLD are estimated from 10,000 seeded originals, its one-to-one linkage covers
    the largest scenario only (sdc evaluate gives the chosen cell's exact figures).
    A progress bar shows on a terminal (not with -q).
    --max-linkage PCT ends with exit code 5, after the outputs are written, when a
    cell's one-to-one linkage (largest scenario) exceeds PCT %.
    Ctrl-C stops the grid; with -o the finished rows stay in the file (exit code
    130).

    \b
    Examples:
      sdc compare sample_data/census.csv --methods mdav,pcp,zscores,sugeno --k 3,5 --format json
      sdc compare sample_data/census.csv --methods mdav,vmdav:gamma=0.3,mic1d --k 3,5,10 \\
          --mic1d-k 3000,4000 --jobs 2 -o grid.csv --html grid.html
      sdc compare sample_data/census.csv --strategies correlated,cross --block-size 3 --k 5
      sdc compare sample_data/census.csv --preset nin-census --html nin.html
    """
    setup_logging(quiet, verbose)
    request = build_request(C, options, PARSE)
    try:
        if not quiet and sys.stderr.isatty():
            doc = _with_progress(input, request)
        else:
            doc = api.compare_request(input, request)
    except comparison.GridInterrupted as exc:
        done = exc.document["finished"] if exc.document else 0
        total = exc.document["cells"] if exc.document else "?"
        kept = f"; the finished rows are in {', '.join(exc.written)}" if exc.written else "; nothing was written"
        click.echo(f"Error: interrupted after {done} of {total} cells{kept}", err=True)
        click.get_current_context().exit(interrupts.exit_code(exc))  # 130 for SIGINT, 143 for SIGTERM
    out_fmt = comparison.output_format(request.fmt, request.output)
    if request.output is None:
        if out_fmt == "table":
            report.print_tables(doc, stdout_console())  # ASCII boxes into files and pipes
        else:
            click.echo(report.render_compare(doc, out_fmt), nl=False)
    elif not quiet:
        stderr_console().print(f"sdc compare: {doc['finished']} cells written to {request.output}"
                               + (f"; HTML page {request.html}" if request.html else ""))
    comparison.raise_for_grid_gates(doc, request.gates)
    comparison.raise_for_gates(doc, request)


def _with_progress(input: str, request: CompareRequest) -> dict:
    """Run the grid with a rich progress bar on stderr (cells done / total, ETA)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(TextColumn("cells"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("ETA"), TimeRemainingColumn(), console=stderr_console(), transient=True) as bar:
        task = bar.add_task("cells", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        return api.compare_request(input, request, progress=progress)
