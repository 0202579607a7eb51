"""``sdc roles``: propose a role for every column of a file, with its evidence."""

from __future__ import annotations

import click

from ..request import RolesRequest
from ..request import RolesRequest as R
from ..statfiles import INPUT_FORMATS
from ._options import check_delimiter, field_option, setup_logging, stderr_console, verbosity_options

__all__ = ["roles_command"]


@click.command("roles", context_settings={"max_content_width": 100})
@click.argument("input", metavar="INPUT", type=click.Path(dir_okay=False, allow_dash=True))
@field_option(R, "output", "-o", "--output", metavar="FILE")
@field_option(R, "force", "-f", "--force", is_flag=True)
@field_option(R, "fmt", "--format", "fmt", type=click.Choice(["toml", "json"]))
@field_option(R, "metadata", "--metadata", metavar="FILE.rda")
@field_option(R, "k", "-k", "k", type=click.IntRange(min=2), metavar="K")
@field_option(R, "input_format", "--input-format", type=click.Choice(list(INPUT_FORMATS)))
@field_option(R, "delimiter", "--delimiter", metavar="CHAR", callback=check_delimiter)
@field_option(R, "decimal", "--decimal", type=click.Choice([".", ","]), show_default=True)
@verbosity_options
def roles_command(input, output, force, fmt, metadata, k, input_format, delimiter, decimal, quiet, verbose):
    """Propose a role for every column of INPUT, with its evidence, as a roles file.

    Every column gets one role: continuous (microaggregated), categorical or
    ordinal (keys grouped with the continuous columns), weight, stratum,
    identifier (dropped) or passthrough (released unchanged). The file's own
    metadata (SPSS measure levels and value labels, Stata value labels, Parquet
    categoricals) and a mu-ARGUS --metadata file come first; the rest is proposed
    from each column's type, distinct values, integer codes, name (weight, wgt, id,
    code...), uniqueness per record and dates. The proposal is TOML in the plan
    format, each column's evidence in a comment: check it, edit it, and pass it to
    sdc protect --plan as it is.

    \b
    Examples:
      sdc roles sample_data/household.csv -o roles.toml
      sdc protect sample_data/household.csv --plan roles.toml -k 3 -o protected.csv
      sdc roles survey.csv --metadata survey.rda --format json
    """
    setup_logging(quiet, verbose)
    from ..api import roles_request

    res = roles_request(input, RolesRequest.build(
        output=output, force=force, fmt=fmt, metadata=metadata, k=k, input_format=input_format,
        delimiter=delimiter, decimal=decimal))
    if res["written"] is None:
        click.echo(res["text"], nl=False)
    elif not quiet:
        stderr_console().print(f"wrote the proposed roles to {res['written']}", markup=False)
