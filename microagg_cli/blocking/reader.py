"""Reading plan files: TOML or JSON text -> a validated :class:`BlockPlan`.

:func:`load_plan` reads a plan file (the extension chooses the format) and
:func:`parse_plan` a plan's text; both decode it, check every key, type, column and
method parameter, resolve the defaults and return a :class:`BlockPlan`. Every error names
the file and, where the locator of :mod:`microagg_cli.blocking.locator` finds it, the line.
The layout of a plan file and the resolution of defaults follow.

Plan files
----------
TOML (``.toml``) or JSON (``.json``), chosen by the extension. Every key is optional
except ``blocks`` and each block's ``columns``::

    # census-correlated.toml
    version = 1                      # the plan-file layout; only 1 exists
    drop = ["AFNLWGT"]               # identifier columns removed from the output
    passthrough = ["STATETAX"]       # columns that must stay unprotected (a check:
                                     # columns named nowhere pass through anyway)

    [defaults]                       # for blocks that do not say otherwise
    method = "mdav"
    k = 5
    params = { }                     # method parameters, for blocks using this method

    [[blocks]]
    name = "income"                  # default: block1, block2, ... by position
    columns = ["AGI", "FICA", "INTVAL"]

    [[blocks]]
    columns = ["EMCONTRB", "TAXINC", "WSALVAL"]
    method = "vmdav"
    k = 3
    params = { gamma = 0.3 }         # or a [blocks.params] table

A plan may carry every column's role (the file ``sdc roles`` writes; see
:mod:`microagg_cli.roles`)::

    [roles]
    continuous = ["age", "income"]   # one block when there is no [[blocks]]; with
                                     # blocks it must list exactly their columns
    categorical = ["region", "sex"]  # keys grouped with the continuous columns
    ordinal = ["education"]
    weight = "w"                     # one column (a string, or a list of one)
    stratum = ["urbrur"]
    keys = ["district"]              # released unchanged, checked as keys (--keys)
    identifier = ["hh_id"]           # joins drop
    passthrough = ["note"]           # joins passthrough

A column in two roles is an error with its line.

A JSON plan is the same document as an object: ``{"defaults": {...}, "drop": [...],
"blocks": [{"columns": [...]}, ...]}``.

Resolution, most specific first: a block's ``method``/``k`` -> the file's
``[defaults]`` -> the caller's defaults (``sdc protect --plan P -k K -m M``). A
block's parameters are the caller's ``-p`` parameters when the block uses the
caller's method, overlaid by ``[defaults] params`` when it uses the file's default
method, overlaid by its own ``params``, key by key.

Errors name the file and, where it can be found, the line: malformed TOML/JSON, a
wrong type, an unknown key, a column named twice, k < 2, an unknown method or method
parameter raise :class:`InvalidParameterError` (exit code 2) when the plan is loaded;
a column missing from the input raises :class:`DataError` (exit code 3) when the plan
is checked against the input (:meth:`BlockPlan.check`).
"""

from __future__ import annotations

import difflib
import json
import logging
import re
import tomllib
from pathlib import Path
from typing import Any, Mapping

from ..errors import DataError, InvalidParameterError, check_k_value, k_message
from ..request import ProtectRequest, default
from .locator import PlanSource
from .model import PLAN_VERSION, ROLE_KEYS, Block, BlockPlan

__all__ = ["load_plan", "parse_plan"]

log = logging.getLogger("microagg_cli")
_TOP_KEYS = ("version", "defaults", "drop", "passthrough", "roles", "blocks")
_DEFAULT_KEYS = ("method", "k", "params")
_BLOCK_KEYS = ("name", "columns", "method", "k", "params")


class _PlanReader:
    """Validates a decoded plan document; every error names the file and line."""

    def __init__(self, source: PlanSource):
        self.src = source

    def fail(self, msg: str, *path: Any, value: str | None = None) -> InvalidParameterError:
        return InvalidParameterError(f"{self.src.where(*path, value=value)}: {msg}")

    def names(self, value: Any, what: str, *path: Any) -> tuple[str, ...]:
        if not isinstance(value, list):
            raise self.fail(f"{what} must be a list of column names, got {_tname(value)}", *path)
        out: list[str] = []
        for v in value:
            if not isinstance(v, str) or not v:
                raise self.fail(f"{what} must hold non-empty column names (strings), got {v!r}", *path)
            if v in out:
                raise self.fail(f"{what}: column {v!r} is named twice", *path, value=v)
            out.append(v)
        return tuple(out)

    def k(self, value: Any, *path: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 2:
            raise self.fail(k_message(value), *path)
        return value

    def method(self, value: Any, *path: Any) -> str:
        from ..methods import get_method

        if not isinstance(value, str):
            raise self.fail(f"method must be a method name (string), got {value!r}", *path)
        try:
            return get_method(value).name
        except InvalidParameterError as exc:
            raise self.fail(str(exc), *path) from None

    def params(self, value: Any, *path: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(f"params must be a table of NAME = VALUE, got {_tname(value)}", *path)
        for name, v in value.items():
            if isinstance(v, (dict, list)) or v is None:
                raise self.fail(f"parameter {name!r} must be a number, string or boolean, got {v!r}", *path, name)
        return dict(value)

    def unknown_keys(self, table: dict[str, Any], known: tuple[str, ...], what: str, *path: Any) -> None:
        for key in table:
            if key not in known:
                near = difflib.get_close_matches(key, known, n=1)
                hint = f"did you mean {near[0]!r}? " if near else ""
                raise self.fail(f"unknown key {key!r} in {what} ({hint}known: {', '.join(known)})", *path, key)

    def read(
        self,
        doc: Any,
        *,
        default_k: int | None,
        default_method: str,
        default_params: Mapping[str, Any] | None,
    ) -> BlockPlan:
        from ..methods import get_method

        if not isinstance(doc, dict):
            raise self.fail(f"a plan must be a table/object, got {_tname(doc)}")
        self.unknown_keys(doc, _TOP_KEYS, "the plan")
        if "version" in doc and (isinstance(doc["version"], bool) or doc["version"] != PLAN_VERSION):
            raise self.fail(f"version must be {PLAN_VERSION}, got {doc['version']!r}", "version")
        defaults = doc.get("defaults", {})
        if not isinstance(defaults, dict):
            raise self.fail(f"defaults must be a table, got {_tname(defaults)}", "defaults")
        self.unknown_keys(defaults, _DEFAULT_KEYS, "[defaults]", "defaults")
        # caller defaults, overlaid by the file's [defaults]
        cli_method = get_method(default_method).name
        cli_params = dict(default_params or {})
        d_method = self.method(defaults["method"], "defaults", "method") if "method" in defaults else cli_method
        d_k = self.k(defaults["k"], "defaults", "k") if "k" in defaults else default_k
        if default_k is not None:
            check_k_value(default_k)
        d_params = self.params(defaults["params"], "defaults", "params") if "params" in defaults else {}
        drop = self.names(doc.get("drop", []), "drop", "drop")
        passthrough = self.names(doc.get("passthrough", []), "passthrough", "passthrough")
        roles = self.roles(doc.get("roles", {}))
        drop += tuple(c for c in roles.pop("identifier", ()) if c not in drop)
        passthrough += tuple(c for c in roles.pop("passthrough", ()) if c not in passthrough)
        continuous = roles.pop("continuous", None)
        if "blocks" not in doc and continuous is not None:
            doc = {**doc, "blocks": [{"name": "block1", "columns": list(continuous)}]}
        if "blocks" not in doc:
            raise self.fail("the plan has no [[blocks]] (each block: columns = [...]) and no "
                            "[roles] continuous = [...]")
        raw_blocks = doc["blocks"]
        if not isinstance(raw_blocks, list) or not all(isinstance(b, dict) for b in raw_blocks):
            raise self.fail("blocks must be an array of tables ([[blocks]] sections)", "blocks")
        if not raw_blocks:
            raise self.fail("the plan has no block", "blocks")
        blocks: list[Block] = []
        owner: dict[str, str] = {}
        names: set[str] = set()
        used_cli_params = used_cli_k = False
        for i, raw in enumerate(raw_blocks):
            self.unknown_keys(raw, _BLOCK_KEYS, f"block {i + 1}", "blocks", i)
            name = raw.get("name", f"block{i + 1}")
            if not isinstance(name, str) or not name.strip():
                raise self.fail(f"block {i + 1}: name must be a non-empty string, got {name!r}", "blocks", i, "name")
            if name in names:
                raise self.fail(f"block name {name!r} is used twice", "blocks", i, "name")
            names.add(name)
            if "columns" not in raw:
                raise self.fail(f"block {name!r} has no columns = [...]", "blocks", i)
            cols = self.names(raw["columns"], f"block {name!r}: columns", "blocks", i, "columns")
            if not cols:
                raise self.fail(f"block {name!r} has no column", "blocks", i, "columns")
            for c in cols:
                where = ("blocks", i, "columns")
                if c in owner:
                    raise self.fail(
                        f"column {c!r} is in block {owner[c]!r} and block {name!r}; blocks must be disjoint",
                        *where, value=c,
                    )
                if c in drop:
                    raise self.fail(f"column {c!r} is both in block {name!r} and in drop", *where, value=c)
                if c in passthrough:
                    raise self.fail(f"column {c!r} is both in block {name!r} and in passthrough", *where, value=c)
                owner[c] = name
            method = self.method(raw["method"], "blocks", i, "method") if "method" in raw else d_method
            k = self.k(raw["k"], "blocks", i, "k") if "k" in raw else d_k
            used_cli_k = used_cli_k or ("k" not in raw and "k" not in defaults)
            own = self.params(raw["params"], "blocks", i, "params") if "params" in raw else {}
            spec = get_method(method)
            layers: list[tuple[dict[str, Any], tuple[Any, ...]]] = []
            if method == cli_method and cli_params:
                layers.append((cli_params, ()))
                used_cli_params = True
            if method == d_method:
                layers.append((d_params, ("defaults", "params")))
            layers.append((own, ("blocks", i, "params")))
            params: dict[str, Any] = {}
            for given, where in layers:
                for pname, pvalue in given.items():
                    try:
                        params[pname] = spec.validate_params({pname: pvalue})[pname]
                    except InvalidParameterError as exc:
                        if not where:  # from the command line
                            raise InvalidParameterError(f"--param {pname}: {exc}") from None
                        raise self.fail(f"block {name!r}: {exc}", *where, pname) from None
            if spec.max_columns is not None and len(cols) > spec.max_columns:
                raise self.fail(
                    f"block {name!r}: method {spec.name!r} takes at most {spec.max_columns} column(s), "
                    f"got {len(cols)}",
                    "blocks", i, "method" if "method" in raw else "columns",
                )
            blocks.append(Block(name, cols, method, k, params))
        for c in drop:
            if c in passthrough:
                raise self.fail(f"column {c!r} is both in drop and in passthrough", "passthrough", value=c)
        # keys named in a block are grouped with its continuous columns (mixed microaggregation)
        grouped_keys = {c for r in ("categorical", "ordinal") for c in roles.get(r, ()) if c in owner}
        if continuous is not None and set(continuous) != set(owner) - grouped_keys:
            odd = sorted(set(continuous) ^ (set(owner) - grouped_keys))[0]
            raise self.fail(f"column {odd!r}: [roles] continuous must list exactly the blocks' columns",
                            "roles", "continuous")
        for role, cols in roles.items():
            for c in cols:
                other = owner.get(c) and f"block {owner[c]!r}" or ("drop" if c in drop else
                                                                   "passthrough" if c in passthrough else None)
                if other and not (c in grouped_keys and role in ("categorical", "ordinal")):
                    raise self.fail(f"column {c!r} is given two roles: {role} and {other}", "roles", role, value=c)
        if default_k is not None and not used_cli_k:
            log.warning("-k %d is not used: the plan gives every block its k", default_k)
        if cli_params and not used_cli_params:
            log.warning("--param is ignored: no block of the plan uses method %r", cli_method)
        return BlockPlan(tuple(blocks), drop, passthrough, self.src, roles)

    def roles(self, table: Any) -> dict[str, tuple[str, ...]]:
        """The ``[roles]`` table: ``{role: columns}``; a column in two roles is an error."""
        if not isinstance(table, dict):
            raise self.fail(f"roles must be a table, got {_tname(table)}", "roles")
        self.unknown_keys(table, ROLE_KEYS, "[roles]", "roles")
        out: dict[str, tuple[str, ...]] = {}
        seen: dict[str, str] = {}
        for role in ROLE_KEYS:
            if role not in table:
                continue
            value = table[role]
            if role == "weight" and isinstance(value, str):
                value = [value]
            cols = self.names(value, f"roles.{role}", "roles", role)
            if role == "weight" and len(cols) > 1:
                raise self.fail(f"roles.weight: at most one weight column, got {len(cols)}", "roles", role)
            for c in cols:
                if c in seen:
                    raise self.fail(f"column {c!r} is given two roles: {seen[c]} and {role}", "roles", role, value=c)
                seen[c] = role
            out[role] = cols
        return out


def _tname(value: Any) -> str:
    return {dict: "a table", list: "a list", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number"}.get(type(value), type(value).__name__)


_TOML_POS = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")


def parse_plan(
    text: str,
    *,
    fmt: str = "toml",
    name: str = "<plan>",
    default_k: int | None = None,
    default_method: str = default(ProtectRequest, "method"),
    default_params: Mapping[str, Any] | None = None,
) -> BlockPlan:
    """A :class:`BlockPlan` from the text of a plan file (``fmt`` ``"toml"`` or ``"json"``).

    See the module docstring for the layout and the resolution of defaults. Raises
    :class:`InvalidParameterError` with the file name and line for any error.
    """
    src = PlanSource(name, text, fmt)
    if fmt == "toml":
        try:
            doc: Any = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            msg = str(exc)
            m = _TOML_POS.search(msg)
            if m:
                raise InvalidParameterError(
                    f"{name}, line {m.group(1)}, column {m.group(2)}: malformed TOML: {msg[:m.start()]}"
                ) from None
            raise InvalidParameterError(f"{name}: malformed TOML: {msg}") from None
    elif fmt == "json":
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidParameterError(
                f"{name}, line {exc.lineno}, column {exc.colno}: malformed JSON: {exc.msg}"
            ) from None
    else:
        raise InvalidParameterError(f"unknown plan format {fmt!r} (use toml or json)")
    return _PlanReader(src).read(
        doc, default_k=default_k, default_method=default_method, default_params=default_params
    )


def load_plan(
    path: str | Path,
    *,
    default_k: int | None = None,
    default_method: str = default(ProtectRequest, "method"),
    default_params: Mapping[str, Any] | None = None,
) -> BlockPlan:
    """Read and validate a plan file (``.toml`` or ``.json``).

    Parameters
    ----------
    path : the plan file; the extension selects the format.
    default_k, default_method, default_params : used by blocks for which neither the
        block nor the file's ``[defaults]`` gives a value (the command line's ``-k``,
        ``--method``, ``--param``).

    Raises
    ------
    DataError : the file is missing or unreadable (exit code 3).
    InvalidParameterError : anything wrong inside it, with the line (exit code 2).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".toml", ".json"):
        raise InvalidParameterError(f"plan {str(path)!r}: use a .toml or .json file")
    if not path.exists():
        raise DataError(f"plan file {str(path)!r} does not exist")
    if path.is_dir():
        raise DataError(f"plan {str(path)!r} is a directory, not a file")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidParameterError(f"plan {str(path)!r}: not a UTF-8 text file") from None
    except OSError as exc:
        raise DataError(f"plan {str(path)!r}: cannot read ({exc.strerror})") from None
    return parse_plan(
        text, fmt=suffix[1:], name=path.name, default_k=default_k,
        default_method=default_method, default_params=default_params,
    )
