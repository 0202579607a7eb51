"""``sdc blocks``: propose, check and evaluate attribute-blocking plans."""

from __future__ import annotations

import json
from typing import Any

import click

from .. import blocking
from .._version import __version__
from ..errors import ThresholdExceeded
from ._options import check_delimiter, complete_method, parse_params, setup_logging, split_names, stderr_console, verbosity_options

__all__ = ["blocks_command", "evaluation_text"]

_STRATEGY_CHOICES = [*blocking.STRATEGIES, "all"]


@click.command("blocks", context_settings={"max_content_width": 100})
@click.argument("input", metavar="INPUT", type=click.Path(dir_okay=True, allow_dash=True))
@click.option("--strategy", type=click.Choice(_STRATEGY_CHOICES), default=None,
              help="How to form blocks (default: correlated): correlated = blocks of strongly correlated "
                   "columns; cross = the j-th columns of all blocks strongly correlated; individual = one "
                   "column per block; single = one block; random = seeded; all = every strategy "
                   "(with --evaluate).")
@click.option("--size", type=int, default=None, metavar="S",
              help="Columns per block (correlated, cross, random). When S does not divide the number of "
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
@click.option("--input-format", type=click.Choice(["csv", "parquet"]), default=None,
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
    res = blocking.propose_plans(
        input, strategy=strategy, size=size, seed=seed, columns=split_names(columns),
        drop=split_names(drop), method=method, k=k, params=parse_params(params), check=check,
        evaluate=evaluate, recommend=recommend, max_il=max_il, max_known=max_known,
        output=output, force=force, input_format=input_format, delimiter=delimiter,
    )
    asked_recommend = recommend or max_il is not None
    evaluated = any(c["evaluation"] is not None for c in res["candidates"].values())
    if fmt == "json":
        click.echo(json.dumps(_json(res, max_il=max_il, seed=seed), indent=2, ensure_ascii=False))
    elif evaluated:
        click.echo(evaluation_text(res, max_il=max_il), nl=False)
    elif check is not None:
        click.echo(_blocks_text(res), nl=False)
    elif res["written"] is None:
        name = res["chosen"]
        entry = res["candidates"][name]
        click.echo(blocking.plan_to_toml(entry["plan"], comment=blocking.plan_comment(name, size, seed, res["input"]["name"]),
                                         block_comments=blocking.block_notes(entry)), nl=False)
    if not quiet and fmt == "text" and not evaluated and check is None:
        console = stderr_console()
        console.print(_blocks_text(res).rstrip("\n"), markup=False)
    if res["written"] and not quiet:
        stderr_console().print(f"wrote {res['chosen']} plan to {res['written']}", markup=False)
    if asked_recommend and res["recommended"] is None:
        bound = f"IL_SSE <= {max_il:g}" if max_il is not None else "the bound"
        raise ThresholdExceeded(f"no candidate plan meets {bound}; nothing was written")


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _table(header: list[str], rows: list[list[str]], right: set[int]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)]) + "\n"


def _blocks_text(res: dict) -> str:
    rows = []
    for name, entry in res["candidates"].items():
        for b in entry["plan"].blocks:
            rows.append([name, b.name, b.method, _fmt(b.k), _fmt(entry["block_mean_abs_corr"][b.name]),
                         ", ".join(b.columns)])
    out = _table(["plan", "block", "method", "k", "mean |corr|", "columns"], rows, {3, 4})
    for name, entry in res["candidates"].items():
        plan = entry["plan"]
        extra = []
        if plan.drop:
            extra.append(f"drop: {', '.join(plan.drop)}")
        if plan.passthrough:
            extra.append(f"passthrough: {', '.join(plan.passthrough)}")
        out += f"{name}: {len(plan.blocks)} block(s), {len(plan.columns)} column(s), mean |corr| inside " \
               f"blocks {_fmt(entry['mean_abs_corr'])}" + ("; " + "; ".join(extra) if extra else "") + "\n"
    return out


def evaluation_text(res: dict, *, max_il: float | None = None) -> str:
    """The evaluation of every candidate as a plain-text table (one row per scenario label)."""
    rows = []
    for name, entry in res["candidates"].items():
        ev = entry["evaluation"]
        first = True
        for label, s in ev["risk"]["labels"].items():
            rows.append([
                name if first else "", str(len(entry["plan"].blocks)) if first else "",
                _fmt(ev["il_sse"], 4) if first else "", label, str(s["scenarios"]),
                _fmt(s["k_prime_mean"], 2), _fmt(s["k_prime_worst"], 2), str(s["k_min_worst"]),
                _fmt(s["share_below_k_mean"], 3),
            ])
            first = False
    out = _table(["plan", "blocks", "IL_SSE", "known", "scenarios", "k' mean", "k' worst", "k_min", "<k share"],
                 rows, {1, 2, 4, 5, 6, 7, 8})
    out += ("known: intruder scenarios grouped by how many blocks the known attributes touch; "
            "k' = records / distinct protected rows over the known attributes; k_min = smallest such "
            "class (worst scenario); <k share = mean share of records in classes below k.\n")
    for name, entry in res["candidates"].items():
        blocks = " | ".join(f"{b.name}: {', '.join(b.columns)}" for b in entry["plan"].blocks)
        worst = entry["evaluation"]["risk"]["worst"]
        out += f"{name}: {blocks}; worst k' {worst['k_prime_worst']:.2f} knowing {', '.join(worst['worst_known'])}\n"
    if res["recommended"] is not None:
        ev = res["candidates"][res["recommended"]]["evaluation"]
        out += (f"recommended: {res['recommended']} (worst k' {ev['risk']['worst']['k_prime_worst']:.2f}, "
                f"IL_SSE {ev['il_sse']:.4f}" + (f" <= {max_il:g}" if max_il is not None else "") + ")\n")
    return out


def _json(res: dict, *, max_il: float | None, seed: int) -> dict:
    cands = []
    for name, entry in res["candidates"].items():
        item = {
            "name": name,
            "plan": blocking.plan_to_dict(entry["plan"]),
            "mean_abs_corr": entry["mean_abs_corr"],
            "block_mean_abs_corr": entry["block_mean_abs_corr"],
        }
        if entry["evaluation"] is not None:
            ev = entry["evaluation"]
            item.update(il_sse=ev["il_sse"], k=ev["k"], blocks=ev["blocks"], risk=ev["risk"])
        cands.append(item)
    return {
        "schema_version": blocking.BLOCKS_SCHEMA_VERSION,
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
