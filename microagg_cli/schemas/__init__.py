"""Published JSON Schemas (draft 2020-12) of the report kinds, shipped with the package.

``protect.json``, ``evaluate.json``, ``compare.json``, ``blocks.json``, ``roles.json``, ``risk.json``: ``sdc schema KIND``
prints one. Each pins its ``schema_version`` (``MAJOR.MINOR``): MINOR grows when a field is
added (readers of the old version keep working), MAJOR when a field is removed, renamed,
or changes type or meaning. A schema file changes only together with its version (a test
holds the hash of each file against its version).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any, Mapping

from ..errors import InvalidParameterError

__all__ = ["KINDS", "schema_text", "schema", "validate"]

#: The report kinds, in the order ``sdc --help`` lists their commands.
KINDS = ("protect", "evaluate", "blocks", "compare", "roles", "risk")


def schema_text(kind: str) -> str:
    """The JSON text of the schema of report kind ``kind`` (as shipped)."""
    if kind not in KINDS:
        raise InvalidParameterError(f"unknown report kind {kind!r} (known: {', '.join(KINDS)})")
    return resources.files(__name__).joinpath(f"{kind}.json").read_text(encoding="utf-8")


def schema(kind: str) -> dict[str, Any]:
    """The schema of report kind ``kind`` as a dict."""
    return json.loads(schema_text(kind))


def validate(report: Mapping[str, Any], kind: str | None = None) -> None:
    """Validate a report against its schema (kind from its ``command`` unless given).

    Needs the ``jsonschema`` package (in the ``test`` extra); raises
    ``jsonschema.ValidationError`` when the report does not match.
    """
    import jsonschema

    kind = kind or str(report.get("command"))
    jsonschema.Draft202012Validator(schema(kind), format_checker=jsonschema.FormatChecker()).validate(report)
