"""``sdc schema KIND``: print the published JSON Schema of a report kind."""

from __future__ import annotations

import click

from .. import schemas

__all__ = ["schema_command"]


@click.command("schema", context_settings={"max_content_width": 100})
@click.argument("kind", metavar="KIND", type=click.Choice(schemas.KINDS))
def schema_command(kind):
    """Print the JSON Schema (draft 2020-12) of the KIND report on stdout.

    KIND is protect, evaluate, blocks (sdc blocks --format json), compare (sdc
    compare --format json), roles (sdc roles --format json) or risk (sdc risk --report). Every report carries its schema_version: MAJOR.MINOR,
    MINOR grows when a field is added, MAJOR when one is removed, renamed or changes
    meaning. Validate a report with any JSON Schema validator, e.g. the jsonschema
    package.

    \b
    Examples:
      sdc schema protect > protect.schema.json
      check-jsonschema --schemafile protect.schema.json report.json
    """
    click.echo(schemas.schema_text(kind), nl=False)
