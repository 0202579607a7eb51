"""``sdc protect``: microaggregate a file and write the protected file plus a report."""

from __future__ import annotations

import click

from .. import api, progress
from ..blocking import load_plan
from ..errors import InvalidParameterError
from ..methods import METHODS
from ._options import (
    complete_method,
    format_options,
    listing_option,
    parse_params,
    plain_output,
    setup_logging,
    split_names,
    stderr_console,
    verbosity_options,
)

__all__ = ["protect_command", "methods_text"]


def methods_text() -> str:
    """Plain-text list of every method: name, summary, parameters, reference."""
    lines = []
    for spec in METHODS.values():
        lines.append(f"{spec.name}: {spec.summary}")
        for p in spec.params:
            lines.append(f"    --param {p.describe()}")
        lines.append(f"    reference: {spec.reference}")
    return "\n".join(lines)


@click.command("protect", context_settings={"max_content_width": 100})
@click.argument("input", metavar="INPUT", type=click.Path(dir_okay=True, allow_dash=True))
@click.option("-o", "--output", required=True, metavar="OUTPUT",
              help="Protected file to write (.csv or .parquet; '-' = CSV on stdout).")
@click.option("-k", "k", type=int, default=None, metavar="K",
              help="Minimum group size (>= 2): every protected record shares its values with >= K-1 others.")
@click.option("-m", "--method", default="mdav", show_default=True, metavar="NAME", shell_complete=complete_method,
              help="Microaggregation method; see --list-methods.")
@click.option("-p", "--param", "params", multiple=True, metavar="NAME=VALUE",
              help="Method parameter (repeatable), e.g. --param gamma=0.3.")
@click.option("-c", "--columns", default=None, metavar="A,B,C",
              help="Columns to protect as one block (default: every numeric column not dropped).")
@click.option("--plan", "plan", default=None, metavar="PLAN",
              help="Blocking plan (.toml/.json, see sdc blocks): protect each block on its own. "
                   "-k/--method/--param then fill in what a block and the plan's [defaults] leave out; "
                   "--columns is not allowed.")
@click.option("-d", "--drop", default=None, metavar="ID,NAME",
              help="Identifier columns to remove from the output.")
@click.option("--passthrough", default=None, metavar="A,B",
              help="Columns to release unchanged on purpose (never protected). With the default selection a "
                   "column whose non-empty cells are at least half numbers, but not all, is an error (exit 3) "
                   "unless it is passed through, dropped or protected with --columns.")
@click.option("-r", "--report", default=None, metavar="FILE.json",
              help="Write the JSON report here ('-' = stdout).")
@click.option("--stat", default="mean", show_default=True, metavar="mean|median|trimmed:P|onestep",
              help="Statistic replacing each group's values.")
@click.option("-s", "--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of randomised methods; same seed, same output, byte for byte.")
@click.option("--strata", default=None, metavar="COL[,COL]",
              help="Microaggregate within each stratum (value combination of these columns); groups never mix strata.")
@click.option("--small-strata", type=click.Choice(["error", "merge", "suppress"]), default="error", show_default=True,
              help="Strata with fewer than K records: refuse, merge into the stratum nearest in centroid, or blank their protected values.")
@click.option("--strata-missing", type=click.Choice(["error", "own"]), default="error", show_default=True,
              help="An empty or NA stratum value: refuse (exit 3, counts per column), or make it a stratum of its own.")
@click.option("--weights", default=None, metavar="COL",
              help="Sampling weights (positive): group values are weighted means, preserving weighted totals.")
@click.option("--missing", type=click.Choice(["error", "complete", "available"]), default="error", show_default=True,
              help="Missing protected values: refuse; leave such records out of the grouping (their protected values "
                   "are blanked); or group on the observed values (mdav only; missing cells stay missing).")
@click.option("--shuffle-rows", is_flag=True, help="Write rows in a seeded random order so the order does not reveal groups.")
@click.option("--id-column", default=None, metavar="COL", help="Identifier column (pass-through), for --regenerate-ids.")
@click.option("--regenerate-ids", is_flag=True, help="Replace --id-column with fresh random ids (seeded permutation of 1..n).")
@click.option("--decimal", type=click.Choice([".", ","]), default=".", show_default=True,
              help="Decimal mark of CSV input and output (',' for European CSV with ';' delimiter).")
@click.option("--thousands", default=None, metavar="SEP",
              help="Thousands separator in the input's numbers (',' '.' ' ' or \"'\"), removed before parsing: "
                   "--thousands . --decimal , reads 1.234,5 as 1234.5.")
@click.option("--na-values", default=None, metavar="TOKENS",
              help="Extra cells read as missing, comma-separated (placeholders of official tables such as "
                   "'..', 'x', '-'), besides empty cells, NA, N/A, NaN, NULL and '.'.")
@click.option("--keys", default=None, metavar="COL[,COL]",
              help="Released columns that identify records together with the protected ones (e.g. a region "
                   "code): every class of identical (strata, keys, protected values) rows must hold >= K records, "
                   "or nothing is written (exit 4).")
@click.option("--evaluate", "evaluate_risk", is_flag=True,
              help="Add the full risk section of sdc evaluate to the report and summary: DLD, PLD, ID, k', DR "
                   "and score over the intruder scenarios (1G, 2G... by blocks touched).")
@click.option("--bound/--no-bound", "bound", default=None,
              help="The report's lower bound LB_NN (how far from optimal the grouping can be): by default "
                   "computed when it costs at most 25 % of the method's time, else skipped with a note; "
                   "--bound always computes it, --no-bound never (sdc evaluate --bound cg certifies more).")
@click.option("--partition-size", type=click.IntRange(min=3), default=None, metavar="N",
              help="Partitioned mode for very large files: cut each block into locality-preserving parts of "
                   "at most N records (recursive median splits on principal axes) and protect each part on its "
                   "own; the report estimates the extra information loss against one exact run on a sample.")
@click.option("--engine", type=click.Choice(["local", "dask"]), default=None,
              help="Stream Parquet in two passes (the protected columns first, then all columns batch by batch: "
                   "memory grows with the protected columns, not the file) and run the parts here (local) or as "
                   "tasks on a Dask cluster "
                   "(dask; pip install 'microagg-cli[dask]'). INPUT: a Parquet file or dataset directory; OUTPUT: "
                   "a .parquet file or a directory. Default: in memory (a dataset directory INPUT is streamed "
                   "locally).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Dask scheduler for --engine dask, e.g. tcp://HOST:PORT (default: a local cluster of 2 worker "
                   "processes on this machine, loopback only).")
@click.option("-f", "--force", is_flag=True, help="Replace OUTPUT/report if they exist.")
@format_options
@listing_option("--list-methods", methods_text, "List every method with its parameters and reference, then exit.")
@verbosity_options
def protect_command(input, output, k, method, params, columns, plan, drop, passthrough, report, stat, seed, strata, small_strata, strata_missing,
                    weights, missing, shuffle_rows, id_column, regenerate_ids, decimal, thousands, na_values, keys,
                    evaluate_risk,
                    bound, partition_size, engine, scheduler, force, input_format, output_format, delimiter, quiet,
                    verbose):
    """Microaggregate INPUT and write the protected OUTPUT (plus a report).

    The protected columns are z-scored, partitioned into groups of at least K
    records by the method, and every record's values are replaced by its group's
    mean (in original units). Other columns pass through unchanged; --drop removes
    identifiers. Before anything is written, every group is checked to hold at least
    K records; the write is atomic and an existing OUTPUT is replaced only with
    --force.

    \b
    Examples:
      sdc protect sample_data/census.csv -o protected.csv -k 3 --report report.json
      sdc protect survey.parquet -o out.parquet -k 5 -m vmdav -p gamma=0.3 \\
          --columns income,expend,savings --drop hh_id
      sdc protect sample_data/household.csv -o hh.csv -k 3 --columns income,expend,savings \\
          --strata urbrur --weights sampling_weight --report hh.json
      sdc protect sample_data/census.csv -o blocked.csv --plan sample_data/plans/census-correlated.toml
      sdc protect register/ -o protected/ -k 3 --columns income,expend --partition-size 50000 \\
          --engine dask --scheduler tcp://10.0.0.5:8786
    """
    setup_logging(quiet, verbose)
    block_plan = None
    if plan is not None:
        if columns is not None:
            raise InvalidParameterError("--columns cannot be combined with --plan (the plan names the columns)")
        block_plan = load_plan(plan, default_k=k, default_method=method,
                               default_params=parse_params(params)).with_drop(split_names(drop))
    # progress: a bar on a terminal; a heartbeat line every 10 s in logs (-v) otherwise
    mode = "off" if quiet else ("bar" if not plain_output() else ("heartbeat" if verbose else "off"))
    with progress.tracking(progress.Tracker(mode, console=stderr_console())):
        rep = api.protect(
            input, output, k=k, method=method, params=parse_params(params), plan=block_plan,
            columns=split_names(columns), drop=split_names(drop), passthrough=split_names(passthrough), report=report, seed=seed,
            stat=stat, force=force, input_format=input_format, output_format=output_format,
            delimiter=delimiter, decimal=decimal, thousands=thousands,
            na_values=None if na_values is None else [v for v in na_values.split(",") if v.strip()],
            keys=split_names(keys), strata=split_names(strata), small_strata=small_strata,
            strata_missing=strata_missing, weights=weights, missing=missing, shuffle_rows=shuffle_rows, id_column=id_column,
            regenerate_ids=regenerate_ids, evaluate_risk=evaluate_risk, partition_size=partition_size,
            engine=engine, scheduler=scheduler, bound={None: "auto", True: "on", False: "off"}[bound],
        )
    if not quiet:
        from ..report import print_protect_summary

        print_protect_summary(rep, stderr_console())
