"""``sdc blocks``: propose, check and evaluate attribute-blocking plans."""

from __future__ import annotations

import json

import click

from .. import blocking, report
from ..errors import ThresholdExceeded
from ..statfiles import INPUT_FORMATS  # SPSS, Stata and SAS files too
from ..request import BlocksRequest as B
from ._options import build_request, check_delimiter, field_option, complete_method, parse_params, setup_logging, split_names, stderr_console, verbosity_options

__all__ = ["blocks_command"]

_STRATEGY_CHOICES = [*blocking.STRATEGIES, "all"]


#: The command line's own parsing of blocks' options, in the order it runs (every other
#: option passes to :class:`BlocksRequest` as click gives it).
PARSE = {
    "columns": lambda value, _values: split_names(value),
    "drop": lambda value, _values: split_names(value),
    "params": lambda value, _values: parse_params(value),
}


@click.command("blocks", context_settings={"max_content_width": 100})
@click.argument("input", metavar="INPUT", type=click.Path(dir_okay=True, allow_dash=True))
@field_option(B, "strategy", "--strategy", type=click.Choice(_STRATEGY_CHOICES))
@field_option(B, "size", "--size", type=int, metavar="S")
@field_option(B, "check", "--check", "check", metavar="PLAN")
@field_option(B, "columns", "-c", "--columns", metavar="A,B,C")
@field_option(B, "drop", "-d", "--drop", metavar="ID,NAME")
@field_option(B, "method", "-m", "--method", show_default=True, metavar="NAME", shell_complete=complete_method)
@field_option(B, "k", "-k", "k", type=int, metavar="K")
@field_option(B, "params", "-p", "--param", "params", multiple=True, metavar="NAME=VALUE", default=())
@field_option(B, "evaluate", "--evaluate", is_flag=True)
@field_option(B, "recommend", "--recommend", is_flag=True)
@field_option(B, "max_il", "--max-il", type=float, metavar="IL")
@field_option(B, "max_known", "--max-known", type=int, metavar="N")
@field_option(B, "seed", "-s", "--seed", type=click.IntRange(min=0), show_default=True)
@field_option(B, "output", "-o", "--output", metavar="PLAN")
@field_option(B, "force", "-f", "--force", is_flag=True)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="What goes to stdout: a text table / TOML plan, or JSON.")
@field_option(B, "input_format", "--input-format", type=click.Choice(list(INPUT_FORMATS)))
@field_option(B, "delimiter", "--delimiter", metavar="CHAR", callback=check_delimiter)
@field_option(B, "encoding", "--encoding", metavar="NAME", show_default=True)
@verbosity_options
def blocks_command(input, fmt, quiet, verbose, **options):
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
    from ..api import propose_request

    request = build_request(B, options, PARSE)
    res = propose_request(input, request)
    check, size, seed, max_il = request.check, request.size, request.seed, request.max_il
    asked_recommend = request.recommending
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
