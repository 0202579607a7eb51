"""``sdc blocks``: propose, check and evaluate attribute-blocking plans."""

from __future__ import annotations

import json

import click

from .. import blocking, report
from ..errors import ThresholdExceeded
from ..statfiles import INPUT_FORMATS  # #28
from ._options import check_delimiter, complete_method, parse_params, setup_logging, split_names, stderr_console, verbosity_options

__all__ = ["blocks_command"]

_STRATEGY_CHOICES = [*blocking.STRATEGIES, "all"]


@click.command("blocks", context_settings={"max_content_width": 100})
@click.argument("input", metavar="INPUT", type=click.Path(dir_okay=True, allow_dash=True))
@click.option("--strategy", type=click.Choice(_STRATEGY_CHOICES), default=None,
              help="How to form blocks (default: correlated): correlated = blocks of strongly correlated "
                   "columns; cross = the j-th columns of all blocks strongly correlated; individual = one "
                   "column per block; single = one block; random = seeded; all = every strategy "
                   "(with --evaluate).")
@click.option("--size", type=int, default=None, metavar="S",
              help="Columns per block (correlated, cross, random; default 3). When S does not divide the number of "
                   "columns, some blocks are smaller: one block holds the remainder (correlated, random) or "
                   "sizes differ by at most one (cross); blocks are listed in the order of their first column, "
                   "so the smaller one need not be the last.")
@click.option("--check", "check", default=None, metavar="PLAN",
              help="Validate the plan file PLAN (.toml/.json) against INPUT and print its blocks "
                   "instead of proposing one.")
@click.option("-c", "--columns", default=None, metavar="A,B,C",
              help="Columns to split into blocks (default: every numeric column not dropped).")
@click.option("-d", "--drop", default=None, metavar="ID,NAME",
              help="Identifier columns: written to the plan's drop list.")
@click.option("-m", "--method", default="mdav", show_default=True, metavar="NAME", shell_complete=complete_method,
              help="Method written into the plan and used by --evaluate (see sdc protect --list-methods).")
@click.option("-k", "k", type=int, default=None, metavar="K",
              help="k written into the plan (default: none, sdc protect -k decides); needed by --evaluate.")
@click.option("-p", "--param", "params", multiple=True, metavar="NAME=VALUE",
              help="Method parameter written into the plan (repeatable).")
@click.option("--evaluate", is_flag=True,
              help="Protect in memory with each candidate plan and print IL_SSE and k' per intruder "
                   "scenario, labelled by blocks touched (1G, 2G, ...).")
@click.option("--recommend", is_flag=True,
              help="Pick the candidate with the best worst-case k' (ties: higher mean k', then lower "
                   "IL_SSE; implies --evaluate); -o writes it. Bound the intruder with --max-known: "
                   "knowing every attribute, any plan of several blocks has k' near 1.")
@click.option("--max-il", type=float, default=None, metavar="IL",
              help="With --recommend: only plans with IL_SSE <= IL qualify (implies --recommend); "
                   "exit code 5 when none does.")
@click.option("--max-known", type=int, default=None, metavar="N",
              help="Intruder scenarios of at most N known attributes (default: every subset, or a "
                   "seeded sample of 512 when there are more).")
@click.option("-s", "--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the random strategy, of randomised methods and of scenario sampling.")
@click.option("-o", "--output", default=None, metavar="PLAN",
              help="Write the plan here (.toml or .json) instead of printing it.")
@click.option("-f", "--force", is_flag=True, help="Replace the plan file if it exists.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="What goes to stdout: a text table / TOML plan, or JSON.")
@click.option("--input-format", type=click.Choice(list(INPUT_FORMATS)), default=None,
              help="Input format (default: from the extension).")
@click.option("--delimiter", default=None, metavar="CHAR", callback=check_delimiter,
              help="CSV delimiter of the input (default: sniffed from , ; TAB |).")
@verbosity_options
def blocks_command(input, strategy, size, check, columns, drop, method, k, params, evaluate, recommend,
                   max_il, max_known, seed, output, force, fmt, input_format, delimiter, quiet, verbose):
    """Propose, check or evaluate a plan splitting INPUT's columns into blocks.

    Each block of a plan is microaggregated on its own (sdc protect --plan): smaller
    blocks lose less information, but an intruder who knows attributes of several
    blocks can single records out, since k-anonymity holds only inside each block.
    This command proposes a plan (TOML on stdout, or -o PLAN), checks a hand-written
    one (--check PLAN), and with --evaluate measures both sides of the trade-off:
    IL_SSE, and the real anonymity k' (records / distinct protected rows) for
    intruders knowing 1, 2, 3 ... attributes, grouped by how many blocks those
    attributes touch (1G, 2G, ...). Within one block k' >= k; across blocks it falls.

    \b
    Examples:
      sdc blocks sample_data/census.csv --strategy correlated --size 3 -k 5 -o plan.toml
      sdc blocks sample_data/census.csv --check sample_data/plans/census-correlated.toml --evaluate
      sdc blocks sample_data/census.csv --strategy all --size 3 -k 5 --max-known 2 --max-il 4 -o best.toml
      sdc protect sample_data/census.csv --plan plan.toml -o protected.csv
    """
    setup_logging(quiet, verbose)
    from ..api import propose_plans

    res = propose_plans(
        input, strategy=strategy, size=size, seed=seed, columns=split_names(columns),
        drop=split_names(drop), method=method, k=k, params=parse_params(params), check=check,
        evaluate=evaluate, recommend=recommend, max_il=max_il, max_known=max_known,
        output=output, force=force, input_format=input_format, delimiter=delimiter,
    )
    asked_recommend = recommend or max_il is not None
    evaluated = any(c["evaluation"] is not None for c in res["candidates"].values())
    doc = report.blocks_document(
        res, plans={name: blocking.plan_to_dict(entry["plan"]) for name, entry in res["candidates"].items()},
        schema_version=blocking.BLOCKS_SCHEMA_VERSION, max_il=max_il, seed=seed)
    if fmt == "json":
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
    elif evaluated:
        click.echo(report.evaluation_text(doc), nl=False)
    elif check is not None:
        click.echo(report.blocks_text(doc), nl=False)
    elif res["written"] is None:
        name = res["chosen"]
        entry = res["candidates"][name]
        click.echo(blocking.plan_to_toml(entry["plan"], comment=blocking.plan_comment(name, size, seed, res["input"]["name"]),
                                         block_comments=blocking.block_notes(entry)), nl=False)
    if not quiet and fmt == "text" and not evaluated and check is None:
        console = stderr_console()
        console.print(report.blocks_text(doc).rstrip("\n"), markup=False)
    if res["written"] and not quiet:
        stderr_console().print(f"wrote {res['chosen']} plan to {res['written']}", markup=False)
    if asked_recommend and res["recommended"] is None:
        bound = f"IL_SSE <= {max_il:g}" if max_il is not None else "the bound"
        raise ThresholdExceeded(f"no candidate plan meets {bound}; nothing was written")
