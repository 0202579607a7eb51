"""``sdc risk``: the disclosure risk of one file over its categorical keys."""

from __future__ import annotations

import click

from ..errors import InvalidParameterError
from ..request import RISK_METHODS
from ..request import RiskRequest as R
from ..statfiles import INPUT_FORMATS
from ._common_eval import gated
from ._options import (
    build_request,
    check_delimiter,
    field_option,
    setup_logging,
    split_names,
    stderr_console,
    verbosity_options,
)

__all__ = ["risk_command"]


def _keys(_value, values):
    keys, cats = split_names(values.pop("keys")), split_names(values.pop("categorical"))
    if keys is not None and cats is not None and keys != cats:
        raise InvalidParameterError("--keys and --categorical name different columns; give one of them")
    return keys if keys is not None else cats


PARSE = {
    "keys": _keys,
    "sensitive": lambda value, _values: split_names(value),
    "na_values": lambda value, _values: split_names(value),
}


@click.command("risk", context_settings={"max_content_width": 100})
@click.argument("input", metavar="INPUT", type=click.Path(dir_okay=False, allow_dash=True))
@field_option(R, "keys", "--keys", metavar="A,B,C")
@click.option("--categorical", metavar="A,B,C", default=None, help="The same as --keys (the name sdc protect uses).")
@field_option(R, "weights", "--weights", metavar="COL")
@field_option(R, "household_id", "--household-id", metavar="COL")
@field_option(R, "sensitive", "--sensitive", metavar="A,B")
@field_option(R, "k", "-k", "k", type=int, show_default=True, metavar="K")
@field_option(R, "l", "-l", "l", type=int, show_default=True, metavar="L")
@field_option(R, "max_combination_size", "--max-combination-size", type=int, metavar="N")
@field_option(R, "suda", "--suda/--no-suda", default=True, show_default=True)
@field_option(R, "suda_max_size", "--suda-max-size", type=int, metavar="N")
@field_option(R, "dis_fraction", "--dis-fraction", type=float, show_default=True, metavar="F")
@field_option(R, "risk_method", "--risk-method", type=click.Choice(list(RISK_METHODS)), show_default=True)
@field_option(R, "max_global_risk", "--max-global-risk", type=float, metavar="SHARE")
@field_option(R, "max_violations", "--max-violations", type=int, metavar="N")
@field_option(R, "metadata", "--metadata", metavar="FILE.rda")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="What goes to stdout: nothing (text: the summary goes to stderr) or the JSON report.")
@field_option(R, "report", "-r", "--report", metavar="FILE.json")
@field_option(R, "html", "--html", metavar="FILE.html")
@field_option(R, "internal", "--internal", is_flag=True)
@field_option(R, "top", "--top", type=int, show_default=True, metavar="N")
@field_option(R, "force", "-f", "--force", is_flag=True)
@field_option(R, "input_format", "--input-format", type=click.Choice(list(INPUT_FORMATS)))
@field_option(R, "delimiter", "--delimiter", metavar="CHAR", callback=check_delimiter)
@field_option(R, "decimal", "--decimal", type=click.Choice([".", ","]), show_default=True)
@field_option(R, "encoding", "--encoding", metavar="NAME", show_default=True)
@field_option(R, "na_values", "--na-values", metavar="A,B")
@verbosity_options
def risk_command(input, fmt, quiet, verbose, **options):
    """The disclosure risk of INPUT over its categorical keys, as agencies report it.

    For the key variables an intruder can match on (--keys, or the <RECODABLE>
    variables of a mu-ARGUS --metadata file) it computes: the sample frequency f_k
    of each record's key combination (a missing key value matches any category, as
    in sdcMicro's freqCalc) and, with --weights, the estimated population frequency
    F_k (the sum of the weights); the records violating 2-, 3-, 5- and k-anonymity;
    each record's Benedetti-Franconi re-identification risk and the global risk as
    the expected number of re-identifications (count and %); with --household-id,
    the household risk 1 - prod(1 - r) over each household; with --sensitive, the
    distinct l-diversity of each sensitive variable over the key classes; SUDA2
    (minimal sample uniques, DIS-SUDA scores, each key's contribution); and
    mu-ARGUS-style combinations: every set of up to --max-combination-size keys
    with its cells below k. The definitions are in sdc-metrics(7).

    Works on an original file (before choosing what to protect) and on any release.
    A summary goes to stderr (-q: none); --format json prints the JSON report
    (sdc schema risk) on stdout; --report and --html write it to files. Records are
    named by row number; their key values appear only with --internal. Gates
    (--max-global-risk, --max-violations) end with exit code 5 and one line,
    after the reports are written.

    \b
    Examples:
      sdc risk sample_data/household.csv --keys urbrur,water,sex,age \\
          --weights sampling_weight --household-id ori_hid
      sdc risk survey.csv --keys region,sex,agegroup,occupation --sensitive income_band \\
          --report risk.json --html risk.html --max-global-risk 0.01 --max-violations 0
      sdc risk release.csv --metadata survey.rda --max-combination-size 3 -k 5 --format json -q
    """
    setup_logging(quiet, verbose)
    from .. import api
    from .. import report as render
    from ..report.risk import print_key_risk_summary

    if fmt == "json" and options["report"] == "-":
        raise InvalidParameterError("--format json and --report - would both write JSON to stdout; use one")
    request = build_request(R, options, PARSE)
    rep, failure = gated(lambda: api.risk_request(input, request))
    if fmt == "json":
        click.echo(render.to_json(rep), nl=False)
    if not quiet:
        print_key_risk_summary(rep, stderr_console())
    if failure is not None:
        raise failure
