"""``sdc evaluate``: disclosure risk and information loss of a protected file."""

from __future__ import annotations

import click

from .. import api, progress, threads
from .. import report as render
from ..errors import InvalidParameterError
from ._common_eval import (
    collect_gates,
    gated,
    gate_options,
    input_options,
    parse_blocks,
    parse_known,
    parse_weights,
    scenario_options,
)
from ..request import EvaluateRequest as E
from ._options import build_request, field_option, plain_output, setup_logging, split_names, stderr_console, verbosity_options

__all__ = ["evaluate_command"]


def _plan(path, values):
    """``--plan PLAN`` loaded, -k filling in the blocks' k it leaves out."""
    if path is None:
        return None
    from ..blocking import load_plan

    return load_plan(path, default_k=values["k"])


def _names(value, _values):
    return split_names(value)


#: the gate options (``--max-dld``...), one request field ``gates``
GATE_OPTIONS = ("max_dld", "max_id", "max_score", "min_kprime", "max_il", "min_ci_overlap", "max_linkage")

#: The command line's own parsing of evaluate's options, in the order it runs (every
#: other option passes to :class:`EvaluateRequest` as click gives it).
PARSE = {
    "plan": _plan,
    "columns": _names,
    "key": _names,
    "blocks": lambda value, _values: parse_blocks(value),
    "known": lambda value, _values: parse_known(value),
    "dr_weights": lambda value, _values: parse_weights(value, "--dr-weights"),
    "score_weights": lambda value, _values: parse_weights(value, "--score-weights"),
    "gates": lambda _value, values: collect_gates({name: values.pop(name) for name in GATE_OPTIONS}),
    "models": lambda value, _values: list(value) or None,
    "by": _names,
    "strata": _names,
    "categorical": _names,
}


@click.command("evaluate", context_settings={"max_content_width": 100})
@click.argument("original", metavar="ORIGINAL", type=click.Path(dir_okay=True, allow_dash=True))
@click.argument("protected", metavar="PROTECTED", type=click.Path(dir_okay=True, allow_dash=True))
@field_option(E, "columns", "-c", "--columns", metavar="A,B,C")
@field_option(E, "key", "--key", metavar="COL[,COL]")
@field_option(E, "pairing_file", "--pairing-file", metavar="FILE")
@field_option(E, "pairing_check", "--pairing-check/--no-pairing-check", "pairing_check", default=True,
              show_default=True)
@field_option(E, "blocks", "--blocks", metavar="A,B;C,D")
@field_option(E, "plan", "--plan", metavar="PLAN")
@field_option(E, "categorical", "--categorical", metavar="COL[,COL]")
@scenario_options
@field_option(E, "dr_weights", "--dr-weights", metavar="dld=W,pld=W,id=W")
@field_option(E, "score_weights", "--score-weights", metavar="il=W,dr=W")
@field_option(E, "scale", "--scale", type=click.Choice(["z", "raw"]), show_default=True)
@field_option(E, "bound", "--bound", type=click.Choice(["nn", "cg"]), show_default=True)
@field_option(E, "time_limit", "--time-limit", type=click.FloatRange(min=0), show_default=True, metavar="S")
@field_option(E, "rmd_k", "--rmd-k", type=float, show_default=True, metavar="K")
@field_option(E, "rmd_k2", "--rmd-k2", type=float, show_default=True, metavar="K2")
@field_option(E, "linkage_distance", "--linkage-distance",
              type=click.Choice(["euclidean", "euclidean-plain", "manhattan", "gower"]), show_default=True)
@field_option(E, "linkage_exact_max", "--linkage-exact-max", type=click.IntRange(min=0), show_default=True,
              metavar="N")
@field_option(E, "missing", "--missing", type=click.Choice(["error", "complete"]), show_default=True)
@field_option(E, "models", "--model", "models", multiple=True, metavar="\"Y ~ X1 + X2\"", default=())
@field_option(E, "weights", "--weights", metavar="COL")
@field_option(E, "by", "--by", metavar="A,B")
@field_option(E, "strata", "--strata", metavar="A,B")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="What goes to stdout: nothing (text: the summary goes to stderr) or the JSON report.")
@field_option(E, "report", "-r", "--report", metavar="FILE.json")
@field_option(E, "html", "--html", metavar="FILE.html")
@field_option(E, "internal", "--internal", is_flag=True)
@gate_options
@field_option(E, "force", "-f", "--force", is_flag=True)
@click.option("-j", "--jobs", type=click.IntRange(min=0), default=0, show_default=True, metavar="N",
              help="Threads evaluating intruder scenarios side by side (and building the PLD pair table); "
                   "0 = the CPUs this process may use. The report does not depend on it.")
@input_options
@verbosity_options
def evaluate_command(original, protected, fmt, jobs, quiet, verbose, **options):
    """Measure disclosure risk and information loss of PROTECTED against ORIGINAL.

    Both files hold the same records, paired by position, by key columns (--key)
    or by the private pairing file of sdc protect --shuffle-rows (--pairing-file).
    Before any figure the pairing is proven: in every evaluated column, each class of
    records sharing a released value must hold it within the range of their original
    values, as every group statistic does (mean, weighted mean, median, trimmed
    mean, one-step); a shuffled, re-sorted or unrelated file fails with exit code 3
    (--no-pairing-check skips the proof for releases that are not group statistics,
    such as noise; the report says so). Columns found in one file only are named. For the
    evaluated columns it computes the information loss (IL_SSE per block and
    overall, on z-scores and, with --scale raw, on the unstandardised values too;
    IL1-IL5, IL_score, IL1s, sdcMicro's eigenvalue figures eigen and robeigen,
    data-quality figures and, for a k-partition,
    the lower bound LB_NN and the optimality gap) and the disclosure risk of an
    intruder who knows the original values of some columns: real anonymity k',
    k_min and the share of records in classes smaller than k, distance-based (DLD)
    and probabilistic (PLD) record linkage, interval disclosure (ID) and SDID for
    every intruder scenario (every subset of the columns, a seeded sample, or
    --known), labelled 1G, 2G... by the number of blocks touched, with means and
    the worst scenario; one-to-one record linkage (linkage: the assignment of
    smallest total distance) for the 4 largest scenarios; sdcMicro's RMD interval
    disclosure (RMDID1, RMDID1w, RMDID2) over all columns. DR = 0.25 DLD + 0.25 PLD
    + 0.5 ID and score = 0.5 IL_score + 0.5 DR summarise them (lower is better).

    --bound cg adds lb_cg, a certified lower bound on the IL_SSE of every
    k-partition (column generation with exact pricing; valid even when
    --time-limit stops it), and the certified gap (IL_SSE - lb_cg) / IL_SSE.

    Above 100,000 records PLD is estimated from a seeded sample of 20,000 originals
    (each against every protected record), above 500,000 records DLD from a seeded
    sample of 100,000; the report names the method (pld_method, dld_method) and a
    95 % error bound per scenario (pld_bound, dld_bound). Above 2,000 records the
    one-to-one linkage is estimated on 4 seeded local windows of 1,000 records
    (linkage_method windows). A progress bar
    with the time left shows on a terminal (with -v off a terminal: a heartbeat line
    every 10 s); Ctrl-C ends the run within about a second, writing nothing.

    A summary goes to stderr (-q: none); --format json prints the JSON report on
    stdout, --report and --html write it to files. The reports hold no original
    value of a protected attribute unless --internal is given. Gates (--max-dld,
    --max-id, --max-score, --min-kprime, --max-il, --min-ci-overlap,
    --max-linkage) end with exit
    code 5 and one line naming the failed gate, after the reports are written.

    Analysis utility: the confidence-interval overlap of regression coefficients
    fitted on both files (--model, repeatable; default each evaluated column on the
    others; --weights for weighted least squares), the propensity-score pMSE and its
    ratio to the null expectation (above 100,000 records on a seeded sample), and a
    group table (--by, default --strata: n, means, medians and weighted totals per
    group, original vs protected; without --internal, groups smaller than k and
    original medians are held back).

    \b
    Examples:
      sdc protect sample_data/census.csv -o protected.csv -k 3
      sdc evaluate sample_data/census.csv protected.csv --html report.html
      sdc evaluate census.csv blocked.csv --plan sample_data/plans/census-correlated.toml \\
          --report eval.json --max-dld 20 --min-kprime 3
      sdc evaluate survey.csv released.csv --key hh_id --columns income,expend \\
          --known income --known income,expend --format json -q
      sdc evaluate survey.csv released.csv --model "income ~ expend + age" --weights w \\
          --by region --min-ci-overlap 0.8
      sdc evaluate sample_data/household.csv hh.csv --columns age,expend,income,savings \\
          --categorical urbrur,roof,walls,water,electcon,relat,sex,hhcivil
    """
    setup_logging(quiet, verbose)
    if fmt == "json" and options["report"] == "-":
        raise InvalidParameterError("--format json and --report - would both write JSON to stdout; use one")
    request = build_request(E, options, PARSE)
    # progress: a bar on a terminal; a heartbeat line every 10 s in logs (-v) otherwise
    mode = "off" if quiet else ("bar" if not plain_output() else ("heartbeat" if verbose else "off"))

    def run() -> dict:
        with progress.tracking(progress.Tracker(mode, console=stderr_console())), threads.limited(jobs or None):
            return api.evaluate_request(original, protected, request)

    rep, failure = gated(run)
    if fmt == "json":
        click.echo(render.to_json(rep), nl=False)
    if not quiet:
        render.print_summary(rep, stderr_console())  # lb_cg and the certified gap too (--bound cg)
    if failure is not None:
        raise failure
