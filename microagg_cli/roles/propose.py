"""``sdc roles``: a proposed roles file (TOML in the plan format, or JSON) with each column's evidence."""

from __future__ import annotations

import json
import shlex
from typing import Any, Mapping, Sequence

from .evidence import ROLES, Evidence, column_evidence, declared_roles
from .rda import RdaMetadata

__all__ = ["ROLES_SCHEMA_VERSION", "propose_roles", "roles_to_toml", "roles_to_dict"]

#: Version of ``sdc roles --format json``.
ROLES_SCHEMA_VERSION = "1.1"


def propose_roles(table: Any, rda: RdaMetadata | None = None) -> list[Evidence]:
    """Every column's :class:`Evidence` and proposed role (declarations first).

    At most one weight is proposed (the declared one, else the first weight-like
    column); other weight-like columns are proposed ``passthrough``."""
    declared = declared_roles(table, rda)
    out = [column_evidence(table, c, declared.get(c) and (declared[c][0], declared[c][1], True))
           for c in table.columns]
    weights = [e for e in out if e.proposed == "weight"]
    keep = next((e for e in weights if e.declared == "weight"), weights[0] if weights else None)
    for e in weights:
        if e is not keep:
            e.proposed = "passthrough"
            e.reasons.append("a second weight-like column: released unchanged (at most one weight)")
    return out


def _toml_str(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def roles_to_toml(evidence: Sequence[Evidence], *, source: str = "INPUT", k: int | None = None,
                  metadata: str | None = None) -> str:
    """A roles file in the plan format (``[roles]``), each column on its own line with a
    comment carrying its evidence; ``sdc protect INPUT --plan FILE -k K`` applies it as it is."""
    lines = [
        f"# sdc roles: roles proposed for {source} from its types, values and metadata.",
        "# Check every line: inference only proposes. Move a column to another role by moving its line.",
        f"# Apply it with: sdc protect {source}{'' if metadata is None else ' --metadata ' + shlex.quote(metadata)}"
        " --plan THIS_FILE -k K -o OUTPUT",
        *([f"# Made with --metadata {metadata}: its declared missing codes apply only when it is given again."]
          if metadata is not None else []),
        "# Roles: continuous (microaggregated), categorical / ordinal (keys grouped with them, released as",
        "# each group's mode / median), weight (one), stratum, identifier (dropped), passthrough (unchanged).",
        "version = 1",
    ]
    if k is not None:
        lines += ["", "[defaults]", f"k = {int(k)}"]
    lines += ["", "[roles]"]
    by_role: dict[str, list[Evidence]] = {r: [] for r in ROLES}
    for e in evidence:
        by_role[e.proposed].append(e)
    for role in ROLES:
        items = by_role[role]
        if role == "weight":
            if items:
                e = items[0]
                lines.append(f"weight = {_toml_str(e.column)}  # {_comment(e)}")
            continue
        if not items:
            continue
        lines.append(f"{role} = [")
        for e in items:
            lines.append(f"    {_toml_str(e.column)},  # {_comment(e)}")
        lines.append("]")
    return "\n".join(lines) + "\n"


def _comment(e: Evidence) -> str:
    text = e.describe()
    if e.reasons:
        text += " -- " + "; ".join(e.reasons)
    return " ".join(text.split())


def roles_to_dict(evidence: Sequence[Evidence], fingerprint: Mapping[str, Any]) -> dict[str, Any]:
    """``sdc roles --format json``: the proposal by role and each column's evidence."""
    roles: dict[str, Any] = {r: [e.column for e in evidence if e.proposed == r] for r in ROLES}
    roles["weight"] = roles["weight"][0] if roles["weight"] else None
    from .._version import __version__

    return {"schema_version": ROLES_SCHEMA_VERSION,
            "tool": {"name": "sdc", "distribution": "microagg-cli", "version": __version__},
            "command": "roles", "input": dict(fingerprint), "roles": roles,
            "columns": [e.as_dict() for e in evidence]}
