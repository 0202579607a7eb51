"""``sdc protect``: microaggregate a file and write the protected file plus a report."""

from __future__ import annotations

import click

from .. import api, progress
from ..blocking import load_plan
from ..methods import METHODS
from ..request import (
    ENGINES,
    MISSING_POLICIES,
    SMALL_STRATA_POLICIES,
    STRATA_MISSING_POLICIES,
    ProtectRequest,
    check_plan_without_columns,
    default,
)
from ._common_eval import parse_weights
from ._options import (
    build_request,
    complete_method,
    field_option,
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

R = ProtectRequest
#: ``--bound/--no-bound`` (unset, on, off) for the request's ``bound`` modes.
BOUND_FLAG = {"auto": None, "on": True, "off": False}


def _plan(path, values):
    """``--plan PLAN`` loaded, -k, --method, --param filling in what it leaves out."""
    if path is None:
        return None
    check_plan_without_columns(path, values["columns"])  # before the plan file is read
    return load_plan(path, default_k=values["k"], default_method=values["method"],
                     default_params=values["params"]).with_drop(split_names(values["drop"]))


def _names(value, _values):
    return split_names(value)


#: The command line's own parsing of protect's options, in the order it runs (every
#: other option passes to :class:`ProtectRequest` as click gives it).
PARSE = {
    "params": lambda value, _values: parse_params(value),
    "plan": _plan,
    "columns": _names,
    "drop": _names,
    "passthrough": _names,
    "na_values": lambda value, _values: None if value is None else [v for v in value.split(",") if v.strip()],
    "keys": _names,
    "categorical": _names,
    "ordinal": _names,
    "mixed_weights": lambda value, _values: parse_weights(value, "--mixed-weights"),
    "strata": _names,
    "bound": lambda value, _values: {flag: mode for mode, flag in BOUND_FLAG.items()}[value],
}


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
@field_option(R, "k", "-k", "k", type=int, metavar="K")
@field_option(R, "method", "-m", "--method", show_default=True, metavar="NAME", shell_complete=complete_method)
@field_option(R, "params", "-p", "--param", "params", multiple=True, metavar="NAME=VALUE", default=())
@field_option(R, "columns", "-c", "--columns", metavar="A,B,C")
@field_option(R, "plan", "--plan", "plan", metavar="PLAN")
@field_option(R, "drop", "-d", "--drop", metavar="ID,NAME")
@field_option(R, "passthrough", "--passthrough", metavar="A,B")
@field_option(R, "report", "-r", "--report", metavar="FILE.json")
@field_option(R, "stat", "--stat", show_default=True, metavar="mean|median|trimmed:P|onestep")
@field_option(R, "seed", "-s", "--seed", type=click.IntRange(min=0), show_default=True)
@field_option(R, "strata", "--strata", metavar="COL[,COL]")
@field_option(R, "small_strata", "--small-strata", type=click.Choice(list(SMALL_STRATA_POLICIES)), show_default=True)
@field_option(R, "strata_missing", "--strata-missing", type=click.Choice(list(STRATA_MISSING_POLICIES)),
              show_default=True)
@field_option(R, "weights", "--weights", metavar="COL")
@field_option(R, "missing", "--missing", type=click.Choice(list(MISSING_POLICIES)), show_default=True)
@field_option(R, "shuffle_rows", "--shuffle-rows", is_flag=True)
@field_option(R, "pairing_file", "--pairing-file", metavar="FILE")
@field_option(R, "id_column", "--id-column", metavar="COL")
@field_option(R, "regenerate_ids", "--regenerate-ids", is_flag=True)
@field_option(R, "decimal", "--decimal", type=click.Choice([".", ","]), show_default=True)
@field_option(R, "thousands", "--thousands", metavar="SEP")
@field_option(R, "na_values", "--na-values", metavar="TOKENS")
@field_option(R, "keys", "--keys", metavar="COL[,COL]")
@field_option(R, "categorical", "--categorical", metavar="COL[,COL]")
@field_option(R, "ordinal", "--ordinal", metavar="COL[,COL]")
@field_option(R, "metadata", "--metadata", metavar="FILE.rda")
@field_option(R, "allow_unique_keys", "--allow-unique-keys", is_flag=True)
@field_option(R, "mixed_weights", "--mixed-weights", metavar="ROLE=W[,ROLE=W]")
@field_option(R, "evaluate_risk", "--evaluate", "evaluate_risk", is_flag=True)
@field_option(R, "bound", "--bound/--no-bound", "bound", default=BOUND_FLAG[default(R, "bound")])
@field_option(R, "partition_size", "--partition-size", type=click.IntRange(min=3), metavar="N")
@field_option(R, "time_limit", "--time-limit", type=click.FloatRange(min=0), metavar="SECONDS", show_default=True)
@field_option(R, "engine", "--engine", type=click.Choice(list(ENGINES)))
@field_option(R, "scheduler", "--scheduler", metavar="ADDRESS")
@field_option(R, "force", "-f", "--force", is_flag=True)
@format_options
@listing_option("--list-methods", methods_text, "List every method with its parameters and reference, then exit.")
@verbosity_options
def protect_command(input, output, quiet, verbose, **options):
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
      sdc protect sample_data/household.csv -o hh.csv -k 3 --columns age,expend,income,savings \\
          --categorical urbrur,roof,walls,water,electcon,relat,sex,hhcivil --weights sampling_weight
      sdc protect register/ -o protected/ -k 3 --columns income,expend --partition-size 50000 \\
          --engine dask --scheduler tcp://10.0.0.5:8786
    """
    setup_logging(quiet, verbose)
    request = build_request(R, options, PARSE)
    # progress: a bar on a terminal; a heartbeat line every 10 s in logs (-v) otherwise
    mode = "off" if quiet else ("bar" if not plain_output() else ("heartbeat" if verbose else "off"))
    with progress.tracking(progress.Tracker(mode, console=stderr_console())):
        rep = api.protect_request(input, output, request)
    if not quiet:
        from ..report import print_protect_summary

        print_protect_summary(rep, stderr_console())
