"""``sdc evaluate``: disclosure risk and information loss of a protected file."""

from __future__ import annotations

import click

from .. import api, progress, threads
from .. import report as render
from ..errors import InvalidParameterError, ThresholdExceeded
from ._common_eval import (
    collect_gates,
    gate_options,
    input_options,
    parse_blocks,
    parse_known,
    parse_weights,
    scenario_options,
)
from ._options import plain_output, setup_logging, split_names, stderr_console, verbosity_options

__all__ = ["evaluate_command"]


@click.command("evaluate", context_settings={"max_content_width": 100})
@click.argument("original", metavar="ORIGINAL", type=click.Path(dir_okay=True, allow_dash=True))
@click.argument("protected", metavar="PROTECTED", type=click.Path(dir_okay=True, allow_dash=True))
@click.option("-c", "--columns", default=None, metavar="A,B,C",
              help="Columns to evaluate as one block (default: the numeric columns whose values differ "
                   "between the two files).")
@click.option("--key", default=None, metavar="COL",
              help="Match rows by this identifier column (in both files) instead of by order; duplicate, "
                   "empty or unmatched keys are an error.")
@click.option("--blocks", default=None, metavar="A,B;C,D",
              help="Attribute blocks protected separately, ';' between blocks: scenarios are labelled 1G, "
                   "2G... by the blocks they touch, IL_SSE and LB_NN are given per block.")
@click.option("--plan", default=None, metavar="PLAN",
              help="Take columns, blocks and k from a blocking plan (.toml/.json, see sdc blocks).")
@scenario_options
@click.option("--dr-weights", default=None, metavar="dld=W,pld=W,id=W",
              help="Weights of DR = w_dld * DLD + w_pld * PLD + w_id * ID (default 0.25, 0.25, 0.5).")
@click.option("--score-weights", default=None, metavar="il=W,dr=W",
              help="Weights of score = w_il * IL_score + w_dr * DR (default 0.5, 0.5).")
@click.option("--scale", type=click.Choice(["z", "raw"]), default="z", show_default=True,
              help="Scale of the headline information loss: z = IL_SSE on z-scores (the literature's IL); "
                   "raw = also IL_SSE on the unstandardised values, as some papers print it (the JSON "
                   "report always holds both).")
@click.option("--bound", type=click.Choice(["nn", "cg"]), default="nn", show_default=True,
              help="Lower bound on the IL_SSE of any k-partition: nn = LB_NN (instant, loose); cg = also the "
                   "certified column-generation bound lb_cg and the gap (IL_SSE - lb_cg) / IL_SSE (minutes; "
                   "blocks of up to 4,000 records).")
@click.option("--time-limit", type=click.FloatRange(min=0), default=600.0, show_default=True, metavar="S",
              help="Seconds for --bound cg over all blocks; the bound stays valid when stopped (weaker), "
                   "and the report says whether the LP was solved (cg_status optimal) or stopped.")
@click.option("--missing", type=click.Choice(["error", "complete"]), default="error", show_default=True,
              help="Missing values in an evaluated column: refuse, or evaluate the records complete in both "
                   "files (the number left out is reported).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="What goes to stdout: nothing (text: the summary goes to stderr) or the JSON report.")
@click.option("-r", "--report", default=None, metavar="FILE.json",
              help="Write the JSON report here ('-' = stdout).")
@click.option("--html", default=None, metavar="FILE.html",
              help="Write a self-contained HTML report (tables and charts, no external assets).")
@click.option("--internal", is_flag=True,
              help="Let the reports include original values (per-column statistics); for internal use, "
                   "never for release.")
@gate_options
@click.option("-f", "--force", is_flag=True, help="Replace the report files if they exist.")
@click.option("-j", "--jobs", type=click.IntRange(min=0), default=0, show_default=True, metavar="N",
              help="Threads evaluating intruder scenarios side by side (and building the PLD pair table); "
                   "0 = the CPUs this process may use. The report does not depend on it.")
@input_options
@verbosity_options
def evaluate_command(original, protected, columns, key, blocks, plan, k, known, max_scenarios, seed,
                     dr_weights, score_weights, scale, bound, time_limit, missing, fmt, report, html, internal, max_dld, max_id,
                     max_score, min_kprime, max_il, gate_on, force, jobs, input_format, delimiter, decimal,
                     quiet, verbose):
    """Measure disclosure risk and information loss of PROTECTED against ORIGINAL.

    Both files hold the same records (same order, or matched with --key). For the
    evaluated columns it computes the information loss (IL_SSE per block and
    overall, on z-scores and, with --scale raw, on the unstandardised values too;
    IL1-IL5, IL_score, IL1s, sdcMicro's eigenvalue figures eigen and robeigen,
    data-quality figures and, for a k-partition,
    the lower bound LB_NN and the optimality gap) and the disclosure risk of an
    intruder who knows the original values of some columns: real anonymity k',
    k_min and the share of records in classes smaller than k, distance-based (DLD)
    and probabilistic (PLD) record linkage, interval disclosure (ID) and SDID, for
    every intruder scenario (every subset of the columns, a seeded sample, or
    --known), labelled 1G, 2G... by the number of blocks touched, with means and
    the worst scenario. DR = 0.25 DLD + 0.25 PLD + 0.5 ID and score = 0.5 IL_score
    + 0.5 DR summarise them (lower is better).

    --bound cg adds lb_cg, a certified lower bound on the IL_SSE of every
    k-partition (column generation with exact pricing; valid even when
    --time-limit stops it), and the certified gap (IL_SSE - lb_cg) / IL_SSE.

    Above 100,000 records PLD is estimated from a seeded sample of 20,000 originals
    (each against every protected record), above 500,000 records DLD from a seeded
    sample of 100,000; the report names the method (pld_method, dld_method) and a
    95 % error bound per scenario (pld_bound, dld_bound). A progress bar
    with the time left shows on a terminal (with -v off a terminal: a heartbeat line
    every 10 s); Ctrl-C ends the run within about a second, writing nothing.

    A summary goes to stderr (-q: none); --format json prints the JSON report on
    stdout, --report and --html write it to files. The reports hold no original
    value of a protected attribute unless --internal is given. Gates (--max-dld,
    --max-id, --max-score, --min-kprime, --max-il) end with exit code 5 and one line
    naming the failed gate, after the reports are written.

    \b
    Examples:
      sdc protect sample_data/census.csv -o protected.csv -k 3
      sdc evaluate sample_data/census.csv protected.csv --html report.html
      sdc evaluate census.csv blocked.csv --plan sample_data/plans/census-correlated.toml \\
          --report eval.json --max-dld 20 --min-kprime 3
      sdc evaluate survey.csv released.csv --key hh_id --columns income,expend \\
          --known income --known income,expend --format json -q
    """
    setup_logging(quiet, verbose)
    if fmt == "json" and report == "-":
        raise InvalidParameterError("--format json and --report - would both write JSON to stdout; use one")
    block_plan = None
    if plan is not None:
        from ..blocking import load_plan

        block_plan = load_plan(plan, default_k=k)
    kwargs = dict(
        columns=split_names(columns), key=key, blocks=parse_blocks(blocks), plan=block_plan, k=k,
        known=parse_known(known), max_scenarios=max_scenarios, seed=seed,
        dr_weights=parse_weights(dr_weights, "--dr-weights"),
        score_weights=parse_weights(score_weights, "--score-weights"),
        gates=collect_gates(dict(max_dld=max_dld, max_id=max_id, max_score=max_score, min_kprime=min_kprime,
                                 max_il=max_il)),
        gate_on=gate_on, missing=missing, scale=scale, report=report, html=html, internal=internal, force=force,
        input_format=input_format, delimiter=delimiter, decimal=decimal, bound=bound, time_limit=time_limit,
    )
    failure: ThresholdExceeded | None = None
    # progress: a bar on a terminal; a heartbeat line every 10 s in logs (-v) otherwise
    mode = "off" if quiet else ("bar" if not plain_output() else ("heartbeat" if verbose else "off"))
    try:
        with progress.tracking(progress.Tracker(mode, console=stderr_console())), \
                threads.limited(jobs or None):
            rep = api.evaluate(original, protected, **kwargs)
    except ThresholdExceeded as exc:
        rep = getattr(exc, "report", None)
        if rep is None:
            raise
        failure = exc
    if fmt == "json":
        click.echo(render.to_json(rep), nl=False)
    if not quiet:
        render.print_summary(rep, stderr_console())  # lb_cg and the certified gap too (--bound cg)
    if failure is not None:
        raise failure
