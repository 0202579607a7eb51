"""Writing plan files: a :class:`BlockPlan` as TOML or as JSON.

:func:`plan_to_toml` writes the TOML plan file (a method, k or parameter table shared by
every block once under ``[defaults]``, long column lists wrapped, optional comments),
:func:`plan_to_dict` the JSON-ready dict of the plan-file layout and
:func:`plan_to_json` its JSON text; :func:`microagg_cli.blocking.parse_plan` reads
either back to an equal plan.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Mapping, Sequence

import numpy as np

from .model import PLAN_ROLES, PLAN_VERSION, BlockPlan

__all__ = ["plan_to_toml", "plan_to_dict", "plan_to_json"]


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, np.generic):
        return _toml_value(value.item())
    raise TypeError(f"cannot write {value!r} to a plan file")


def _toml_array(key: str, values: Sequence[str], width: int = 88) -> str:
    """``key = [...]`` on one line, or wrapped over several when longer than ``width``."""
    one = f"{key} = {_toml_value(list(values))}"
    if len(one) <= width:
        return one
    lines, cur = [], "   "
    for v in values:
        item = " " + _toml_value(v) + ","
        if len(cur) + len(item) > width and cur.strip():
            lines.append(cur)
            cur = "   "
        cur += item
    lines.append(cur)
    return f"{key} = [\n" + "\n".join(lines) + "\n]"


def _toml_params(params: Mapping[str, Any]) -> str:
    bare = re.compile(r"^[A-Za-z0-9_-]+$")
    items = [f"{k if bare.match(k) else json.dumps(k)} = {_toml_value(v)}" for k, v in params.items()]
    return "{ " + ", ".join(items) + " }" if items else "{}"


def _common(values: list[Any]) -> tuple[bool, Any]:
    first = values[0]
    return all(v == first for v in values[1:]), first


def plan_to_toml(
    plan: BlockPlan,
    *,
    comment: str | None = None,
    block_comments: Mapping[str, str] | None = None,
) -> str:
    """The plan as a TOML plan file; :func:`parse_plan` reads it back to an equal plan.

    A method, k or parameter table shared by every block is written once under
    ``[defaults]``. ``comment`` (may span lines) heads the file; ``block_comments``
    (block name -> text) go above their block.
    """
    out: list[str] = []
    if comment:
        out += [f"# {ln}".rstrip() for ln in comment.splitlines()]
    out.append(f"version = {PLAN_VERSION}")
    if plan.drop:
        out.append(_toml_array("drop", plan.drop))
    if plan.passthrough:
        out.append(_toml_array("passthrough", plan.passthrough))
    blocks = plan.blocks
    roles = [(r, plan.roles[r]) for r in PLAN_ROLES if plan.roles.get(r)]
    if roles:
        out += ["", "[roles]"]
        for role, cols in roles:
            out.append(f"weight = {_toml_value(cols[0])}" if role == "weight" else _toml_array(role, cols))
    same_method, method = _common([b.method for b in blocks]) if blocks else (False, None)
    same_k, k = _common([b.k for b in blocks]) if blocks else (False, None)
    same_params, params = _common([dict(b.params) for b in blocks]) if blocks else (False, None)
    same_params = same_params and same_method and bool(params)
    defaults = []
    if same_method:
        defaults.append(f"method = {_toml_value(method)}")
    if same_k and k is not None:
        defaults.append(f"k = {k}")
    if same_params:
        defaults.append(f"params = {_toml_params(params)}")
    if defaults:
        out += ["", "[defaults]", *defaults]
    for i, b in enumerate(blocks):
        out.append("")
        note = (block_comments or {}).get(b.name)
        if note:
            out += [f"# {ln}".rstrip() for ln in note.splitlines()]
        out.append("[[blocks]]")
        out.append(f"name = {_toml_value(b.name)}")
        out.append(_toml_array("columns", b.columns))
        if not same_method:
            out.append(f"method = {_toml_value(b.method)}")
        if not (same_k and k is not None) and b.k is not None:
            out.append(f"k = {b.k}")
        if not same_params and b.params:
            out.append(f"params = {_toml_params(b.params)}")
    return "\n".join(out) + "\n"


def plan_to_dict(plan: BlockPlan) -> dict[str, Any]:
    """The plan as a JSON-ready dict in the plan-file layout (every value explicit)."""
    doc: dict[str, Any] = {"version": PLAN_VERSION}
    if plan.drop:
        doc["drop"] = list(plan.drop)
    if plan.passthrough:
        doc["passthrough"] = list(plan.passthrough)
    roles = {r: (plan.roles[r][0] if r == "weight" else list(plan.roles[r]))
             for r in PLAN_ROLES if plan.roles.get(r)}
    if roles:
        doc["roles"] = roles
    blocks = []
    for b in plan.blocks:
        entry: dict[str, Any] = {"name": b.name, "columns": list(b.columns), "method": b.method}
        if b.k is not None:
            entry["k"] = b.k
        if b.params:
            entry["params"] = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in b.params.items()}
        blocks.append(entry)
    doc["blocks"] = blocks
    return doc


def plan_to_json(plan: BlockPlan) -> str:
    """The plan as a JSON plan file (read back by :func:`parse_plan` with ``fmt="json"``)."""
    return json.dumps(plan_to_dict(plan), indent=2, ensure_ascii=False) + "\n"
