"""Attribute-blocking plans: which columns are microaggregated together.

A :class:`BlockPlan` is a tuple of disjoint :class:`Block`\\ s; each block is protected
on its own with its own method, k and parameters, seeded from the run seed by its
position in the plan (``SeedSequence(seed, spawn_key=(position,))``). Splitting the
attributes into blocks lowers the information loss but gives up k-anonymity across
blocks: an intruder who knows attributes of two blocks may single records out. This
module reads and writes plan files, proposes plans (:func:`make_plan`) and measures
what a plan costs and risks (:func:`evaluate_plan`).

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

Strategies
----------
:func:`make_plan` proposes a plan from the data (deterministic; columns inside a
block keep their input order and blocks are ordered by their first column):

- ``correlated`` -- blocks of ``size`` strongly correlated attributes: greedy seeding
  on |Pearson correlation| then pairwise swaps between blocks until no swap raises the
  sum of within-block |r|; when ``size`` does not divide the number of columns, one
  block takes the remainder (smaller than ``size``; not necessarily the last one, since
  blocks are ordered by their first column).
- ``cross`` -- blocks correlated with each other: the columns are first grouped into
  strongly correlated groups of ``m = ceil(p / size)`` (the number of blocks), then
  the members of each group are dealt out one per block, so that the j-th attributes
  of all blocks are strongly correlated and the attributes inside a block are not
  (swaps between blocks within a group then lower the within-block |r|). Column j of
  every block comes from group j (the block keeps that order); block sizes differ by
  at most one.
- ``individual`` -- one block per column; ``single`` -- one block of every column;
  ``random`` -- a seeded random permutation cut into blocks of ``size`` (one block,
  wherever its first column puts it, takes the remainder).
"""

from __future__ import annotations

import difflib
import json
import logging
import math
import re
import tomllib
from dataclasses import dataclass, field, replace
from itertools import combinations
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from .errors import DataError, InvalidParameterError, check_k_value, k_message
from .readings import name_list
from .request import BlocksRequest, ProtectRequest, default


__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "Block",
    "BlockPlan",
    "PLAN_VERSION",
    "PLAN_ROLES",
    "ROLE_KEYS",
    "STRATEGIES",
    "load_plan",
    "parse_plan",
    "plan_to_toml",
    "plan_to_dict",
    "plan_to_json",
    "abs_correlation",
    "propose_blocks",
    "make_plan",
    "block_mean_abs_corr",
    "plan_mean_abs_corr",
    "plan_comment",
    "block_notes",
    "check_k_option",
    "BLOCKS_SCHEMA_VERSION",
]

log = logging.getLogger("microagg_cli")

#: Version of the ``sdc blocks --format json`` layout (``microagg_cli/schemas/blocks.json``).
BLOCKS_SCHEMA_VERSION = "1.0"

#: The plan-file layout version written by :func:`plan_to_toml`.
PLAN_VERSION = 1

_TOP_KEYS = ("version", "defaults", "drop", "passthrough", "roles", "blocks")
#: keys of a plan's ``[roles]`` table (see :mod:`microagg_cli.roles`); ``keys`` are
#: released unchanged and checked as keys (``--keys``)
ROLE_KEYS = ("continuous", "categorical", "ordinal", "weight", "stratum", "identifier", "passthrough", "keys")
#: the roles a plan carries besides its blocks, drop and passthrough
PLAN_ROLES = ("categorical", "ordinal", "weight", "stratum", "keys")
_DEFAULT_KEYS = ("method", "k", "params")
_BLOCK_KEYS = ("name", "columns", "method", "k", "params")


# --------------------------------------------------------------------------- plans


@dataclass(frozen=True)
class Block:
    """One block: columns aggregated together with one method.

    ``k=None`` means "not set": :meth:`BlockPlan.check` refuses such a plan, so the
    caller must resolve it (``load_plan(..., default_k=K)``).
    """

    name: str
    columns: tuple[str, ...]
    method: str = default(ProtectRequest, "method")
    k: int | None = 3
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PlanSource:
    """Where a plan was read from: used to point error messages at a line."""

    name: str
    text: str
    fmt: str

    def line_of(self, *path: Any, value: str | None = None) -> int | None:
        """1-based line of a key path such as ``("blocks", 2, "k")``, or None."""
        return _Locator(self.text, self.fmt).line(path, value)

    def where(self, *path: Any, value: str | None = None) -> str:
        line = self.line_of(*path, value=value)
        return f"{self.name}, line {line}" if line else self.name


@dataclass(frozen=True)
class BlockPlan:
    """A blocking plan: disjoint blocks, identifier columns to drop, and columns that
    must pass through unprotected."""

    blocks: tuple[Block, ...]
    drop: tuple[str, ...] = ()
    passthrough: tuple[str, ...] = ()
    source: PlanSource | None = field(default=None, compare=False, repr=False)
    #: the plan's other roles: ``{"categorical": (...), "ordinal": (...), "weight": (col,),
    #: "stratum": (...), "keys": (...)}`` (only the roles it names)
    roles: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def single(
        cls,
        columns: list[str] | tuple[str, ...],
        *,
        method: str = default(ProtectRequest, "method"),
        k: int | None = 3,
        params: Mapping[str, Any] | None = None,
        drop: tuple[str, ...] | list[str] = (),
        passthrough: tuple[str, ...] | list[str] = (),
    ) -> "BlockPlan":
        """A plan with one block holding ``columns``."""
        return cls((Block("block1", tuple(columns), method, k, dict(params or {})),), tuple(drop),
                   tuple(passthrough))

    @property
    def columns(self) -> list[str]:
        """Every protected column, in block order."""
        return [c for b in self.blocks for c in b.columns]

    def block_of(self) -> dict[str, int]:
        """``{column: position of its block}``."""
        return {c: i for i, b in enumerate(self.blocks) for c in b.columns}

    def with_passthrough(self, extra: Iterable[str] | None) -> "BlockPlan":
        """The same plan with ``extra`` columns released unchanged on purpose (never protected)."""
        extra = [c for c in (extra or []) if c not in self.passthrough]
        for c in extra:
            if c in self.columns:
                raise InvalidParameterError(f"--passthrough {c!r}: the plan protects this column")
            if c in self.drop:
                raise InvalidParameterError(f"column {c!r} is both passed through and dropped")
        return replace(self, passthrough=self.passthrough + tuple(dict.fromkeys(extra))) if extra else self

    def with_drop(self, extra: Iterable[str] | None) -> "BlockPlan":
        """The same plan with ``extra`` identifier columns dropped too."""
        extra = [c for c in (extra or []) if c not in self.drop]
        return replace(self, drop=self.drop + tuple(dict.fromkeys(extra))) if extra else self

    def _where(self, *path: Any, value: str | None = None) -> str:
        return self.source.where(*path, value=value) + ": " if self.source else ""

    def check(self, available: list[str], *, require_k: bool = True) -> None:
        """Blocks non-empty, disjoint, named uniquely, k set (unless not
        ``require_k``), columns present in ``available``, none dropped or declared
        pass-through."""
        if not self.blocks:
            raise InvalidParameterError(f"{self._where('blocks')}the plan has no block")
        have = set(available)
        seen: dict[str, str] = {}
        names: set[str] = set()

        def missing(c: str) -> str:
            shown = name_list(available, limit=20)
            return f"no column {c!r} in the input (columns: {shown})"

        for i, b in enumerate(self.blocks):
            if b.name in names:
                raise InvalidParameterError(f"{self._where('blocks', i, 'name')}block name {b.name!r} is used twice")
            names.add(b.name)
            if not b.columns:
                raise InvalidParameterError(f"{self._where('blocks', i)}block {b.name!r} has no column")
            if b.k is None and require_k:
                raise InvalidParameterError(
                    f"{self._where('blocks', i)}block {b.name!r} has no k "
                    "(set k in the block or in [defaults], or give -k)"
                )
            for c in b.columns:
                if c not in have:
                    raise DataError(f"{self._where('blocks', i, 'columns', value=c)}block {b.name!r}: {missing(c)}")
                if c in seen:
                    raise InvalidParameterError(
                        f"{self._where('blocks', i, 'columns', value=c)}column {c!r} is in block "
                        f"{seen[c]!r} and block {b.name!r}; blocks must be disjoint"
                    )
                if c in self.drop:
                    raise InvalidParameterError(f"column {c!r} is both protected (block {b.name!r}) and dropped")
                if c in self.passthrough:
                    raise InvalidParameterError(
                        f"column {c!r} is declared pass-through but protected in block {b.name!r}"
                    )
                seen[c] = b.name
        for c in self.drop:
            if c not in have:
                raise DataError(f"{self._where('drop', value=c)}drop: {missing(c)}")
            if c in self.passthrough:
                raise InvalidParameterError(f"column {c!r} is both dropped and declared pass-through")
        for c in self.passthrough:
            if c not in have:
                raise DataError(f"{self._where('passthrough', value=c)}passthrough: {missing(c)}")
        for role, cols in self.roles.items():
            for c in cols:
                if c not in have:
                    raise DataError(f"{self._where('roles', role, value=c)}roles.{role}: {missing(c)}")


# ------------------------------------------------------------------- line locator


def _code_part(line: str) -> str:
    """The line without a trailing ``# comment`` (quotes respected)."""
    quote = None
    escaped = False
    for i, ch in enumerate(line):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\" and quote == '"':
                escaped = True
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            return line[:i]
    return line


class _Locator:
    """Finds the line of a key or value in a plan's text (best effort).

    The text is cut into sections: the top level, ``defaults`` and each block; inside
    a section the key (``k = ...``, ``"k": ...``, ``params.gamma = ...``,
    ``{ gamma = ... }``) or a quoted value is searched line by line.
    """

    def __init__(self, text: str, fmt: str):
        self.lines = text.splitlines()
        self.ranges = self._json_ranges() if fmt == "json" else self._toml_ranges()

    def _toml_ranges(self) -> dict[Any, tuple[int, int]]:
        headers: list[tuple[int, str]] = []
        for i, raw in enumerate(self.lines):
            code = _code_part(raw).strip()
            m = re.match(r"^\[\[\s*([^\]]+?)\s*\]\]$", code) or re.match(r"^\[\s*([^\]]+?)\s*\]$", code)
            if m:
                headers.append((i, ("[[" if code.startswith("[[") else "[") + m.group(1).replace(" ", "")))
        ranges: dict[Any, tuple[int, int]] = {"top": (0, headers[0][0] if headers else len(self.lines))}
        sections: list[tuple[int, Any]] = []
        n_block = -1
        for line, name in headers:
            if name.startswith(("[blocks.", "[defaults.", "[roles.")):
                continue  # a sub-table ([blocks.params]) belongs to the section above
            if name == "[[blocks":
                n_block += 1
                sections.append((line, ("blocks", n_block)))
            else:
                sections.append((line, {"[defaults": "defaults", "[roles": "roles"}.get(name)))
        for (line, ident), (end, _) in zip(sections, sections[1:] + [(len(self.lines), None)]):
            if ident is not None:
                ranges[ident] = (line, end)
        return ranges

    def _json_ranges(self) -> dict[Any, tuple[int, int]]:
        """Line ranges of ``defaults`` and each element of ``blocks`` in a JSON text."""
        text = "\n".join(self.lines)
        ranges: dict[Any, tuple[int, int]] = {"top": (0, len(self.lines))}
        stack: list[list[Any]] = []  # [kind, key, start_line, child_count]
        line = 0
        key: str | None = None
        last_string: str | None = None
        i = 0
        while i < len(text):
            ch = text[i]
            if ch == "\n":
                line += 1
            elif ch == '"':
                j = i + 1
                while j < len(text) and text[j] != '"':
                    j += 2 if text[j] == "\\" else 1
                last_string = text[i + 1:j]
                i = j
            elif ch == ":":
                key = last_string
            elif ch in "{[":
                if stack and stack[-1][0] == "[":
                    stack[-1][3] += 1
                    ident: Any = (stack[-1][1], stack[-1][3] - 1)
                else:
                    ident = key if len(stack) == 1 else None
                stack.append([ch, ident, line, 0])
            elif ch in "}]":
                if stack:
                    kind, ident, start, _ = stack.pop()
                    if len(stack) == 1 and ident in ("defaults", "roles"):
                        ranges[ident] = (start, line + 1)
                    elif len(stack) == 2 and isinstance(ident, tuple) and ident[0] == "blocks":
                        ranges[ident] = (start, line + 1)
            i += 1
        return ranges

    @staticmethod
    def _key_re(key: str) -> re.Pattern[str]:
        k = re.escape(key)
        return re.compile(rf"(^|[\s{{,.\[])(\"{k}\"|'{k}'|{k})\s*[=:]|^\s*\[\s*(blocks|defaults)\.{k}\s*\]")

    def _find(self, lo: int, hi: int, pattern: re.Pattern[str] | None, value: str | None) -> int | None:
        start = lo
        if pattern is not None:
            for i in range(lo, hi):
                if pattern.search(_code_part(self.lines[i])):
                    start = i
                    break
            else:
                return None
            if value is None:
                return start
        assert value is not None
        quoted = (json.dumps(value, ensure_ascii=False), f"'{value}'")
        for i in range(start, hi):
            code = _code_part(self.lines[i])
            if any(q in code for q in quoted):
                return i
        return None

    def line(self, path: Sequence[Any], value: str | None) -> int | None:
        path = list(path)
        if path and path[0] == "blocks" and len(path) > 1 and isinstance(path[1], int):
            section: Any = ("blocks", path[1])
            keys = path[2:]
        elif path and path[0] in ("defaults", "roles"):
            section, keys = path[0], path[1:]
        else:
            section, keys = "top", path
        found: int | None = None
        if section in self.ranges:  # absent e.g. for blocks written as inline tables
            lo, hi = self.ranges[section]
            if not keys and value is None:
                found = lo if section != "top" else None
            else:
                # each key is searched from its parent key's line on
                start = lo
                for key in keys:
                    hit = self._find(start, hi, self._key_re(str(key)), None)
                    if hit is None:
                        break
                    start = found = hit
                if value is not None:
                    hit = self._find(start, hi, None, value)
                    found = hit if hit is not None else found
        if found is None and value is not None:
            # last resort: a value that occurs on exactly one line of the file
            quoted = json.dumps(value, ensure_ascii=False)
            hits = [i for i, ln in enumerate(self.lines) if quoted in _code_part(ln)]
            found = hits[0] if len(hits) == 1 else None
        return None if found is None else found + 1


# ------------------------------------------------------------------ plan loading


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
        from .methods import get_method

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
        from .methods import get_method

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
        if continuous is not None and set(continuous) != set(owner):
            odd = sorted(set(continuous) ^ set(owner))[0]
            raise self.fail(f"column {odd!r}: [roles] continuous must list exactly the blocks' columns",
                            "roles", "continuous")
        for role, cols in roles.items():
            for c in cols:
                other = owner.get(c) and f"block {owner[c]!r}" or ("drop" if c in drop else
                                                                   "passthrough" if c in passthrough else None)
                if other:
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


# ------------------------------------------------------------------ plan writing


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


# -------------------------------------------------------------------- strategies


def abs_correlation(X: np.ndarray) -> np.ndarray:
    """|Pearson correlation| of the columns of ``X`` (p x p), 1 on the diagonal.

    Missing values (NaN) are left out pair by pair (pairwise-complete records); a
    pair with fewer than two common records or a constant column has correlation 0.
    """
    X = np.asarray(X, dtype=np.float64)
    p = X.shape[1]
    finite = np.isfinite(X)
    A = np.zeros((p, p))
    if finite.all():
        sd = X.std(axis=0)
        ok = sd > 0
        Z = np.zeros_like(X)
        Z[:, ok] = (X[:, ok] - X[:, ok].mean(axis=0)) / sd[ok]
        A = np.abs(Z.T @ Z) / X.shape[0]
    else:
        for i in range(p):
            for j in range(i + 1, p):
                m = finite[:, i] & finite[:, j]
                if m.sum() < 2:
                    continue
                a, b = X[m, i], X[m, j]
                sa, sb = a.std(), b.std()
                if sa > 0 and sb > 0:
                    A[i, j] = A[j, i] = abs(float(((a - a.mean()) * (b - b.mean())).mean() / (sa * sb)))
    A = np.clip(A, 0.0, 1.0)
    np.fill_diagonal(A, 1.0)
    return A


def _sizes(p: int, size: int) -> list[int]:
    return [size] * (p // size) + ([p % size] if p % size else [])


def _greedy_correlated(A: np.ndarray, size: int) -> list[list[int]]:
    """Seed each block with the most correlated free pair, grow it by the free column
    with the largest summed |r| to the block; ties to the lowest column position."""
    p = A.shape[0]
    free = list(range(p))
    blocks: list[list[int]] = []
    for target in _sizes(p, size):
        if target == 1 or len(free) == 1:
            block = [free[0]]
        else:
            best, pair = -1.0, (free[0], free[1])
            for a, b in combinations(free, 2):
                if A[a, b] > best:
                    best, pair = A[a, b], (a, b)
            block = list(pair)
            while len(block) < target:
                cand = [c for c in free if c not in block]
                score = [A[c, block].sum() for c in cand]
                block.append(cand[int(np.argmax(score))])
        blocks.append(block)
        free = [c for c in free if c not in block]
    return blocks


def _swap_improve(A: np.ndarray, blocks: list[list[int]], sign: float, groups: list[list[int]] | None = None,
                  max_rounds: int = 1000) -> list[list[int]]:
    """Best-improvement swaps of two columns between blocks, raising
    ``sign * sum of within-block |r|``, until none helps.

    With ``groups``, only columns of the same group may be swapped (keeps the
    cross structure).
    """
    blocks = [list(b) for b in blocks]
    group_of = {c: g for g, grp in enumerate(groups) for c in grp} if groups else None
    for _ in range(max_rounds):
        best_gain, best_move = 1e-12, None
        for a, b in combinations(range(len(blocks)), 2):
            for x in blocks[a]:
                rest_a = [c for c in blocks[a] if c != x]
                for y in blocks[b]:
                    if group_of is not None and group_of[x] != group_of[y]:
                        continue
                    rest_b = [c for c in blocks[b] if c != y]
                    gain = (A[y, rest_a].sum() - A[x, rest_a].sum() + A[x, rest_b].sum() - A[y, rest_b].sum())
                    gain *= sign
                    if gain > best_gain:
                        best_gain, best_move = gain, (a, x, b, y)
        if best_move is None:
            break
        a, x, b, y = best_move
        blocks[a][blocks[a].index(x)] = y
        blocks[b][blocks[b].index(y)] = x
    return blocks


def _canonical(blocks: list[list[int]]) -> list[list[int]]:
    return sorted((sorted(b) for b in blocks if b), key=lambda b: b[0])


def _correlated(A: np.ndarray, size: int, seed: int) -> list[list[int]]:
    return _canonical(_swap_improve(A, _greedy_correlated(A, size), +1.0))


def _cross(A: np.ndarray, size: int, seed: int) -> list[list[int]]:
    p = A.shape[0]
    m = math.ceil(p / size)  # number of blocks
    groups = _correlated(A, m, seed)
    blocks: list[list[int]] = [[] for _ in range(m)]
    for grp in groups:
        for t, c in enumerate(grp):
            blocks[t].append(c)
    blocks = _swap_improve(A, blocks, -1.0, groups=groups)
    # keep the group order inside each block: column j of every block comes from group j
    return sorted((b for b in blocks if b), key=lambda b: b[0])


def _individual(A: np.ndarray, size: int, seed: int) -> list[list[int]]:
    return [[j] for j in range(A.shape[0])]


def _single(A: np.ndarray, size: int, seed: int) -> list[list[int]]:
    return [list(range(A.shape[0]))]


def _random(A: np.ndarray, size: int, seed: int) -> list[list[int]]:
    perm = np.random.default_rng(int(seed)).permutation(A.shape[0]).tolist()
    return _canonical([perm[i:i + size] for i in range(0, len(perm), size)])


#: Columns per block when a strategy needs a size and none is given (``sdc blocks``
#: without ``--size``): blocks of three attributes, as in the literature's Census tables
#: (Nin, Herranz & Torra 2008, "How to group attributes in multivariate microaggregation").
DEFAULT_BLOCK_SIZE = 3

#: name -> (function(|corr| matrix, size, seed) -> blocks of column positions,
#: whether it needs a block size, one-line description).
STRATEGIES: dict[str, tuple[Callable[[np.ndarray, int, int], list[list[int]]], bool, str]] = {
    "correlated": (_correlated, True, "blocks of SIZE strongly correlated columns (one block: the remainder)"),
    "cross": (_cross, True, "the j-th columns of all blocks strongly correlated; weak correlation inside a block"),
    "individual": (_individual, False, "one block per column"),
    "single": (_single, False, "one block of every column"),
    "random": (_random, True, "a seeded random permutation cut into blocks of SIZE"),
}


def propose_blocks(
    X: np.ndarray,
    names: Sequence[str],
    strategy: str,
    size: int | None = None,
    *,
    seed: int = default(BlocksRequest, "seed"),
) -> list[tuple[str, ...]]:
    """Blocks of column names proposed by ``strategy`` for the (n, p) data ``X``.

    Deterministic: the same data, size and seed give the same blocks. Columns in a
    block keep their order in ``names``; blocks are ordered by their first column.
    """
    if strategy not in STRATEGIES:
        raise InvalidParameterError(f"unknown strategy {strategy!r} (known: {', '.join(STRATEGIES)})")
    func, needs_size, _ = STRATEGIES[strategy]
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != len(names) or X.shape[1] == 0:
        raise InvalidParameterError("propose_blocks needs an (n, p) matrix and p column names, p >= 1")
    if needs_size:
        if size is None:
            raise InvalidParameterError(f"strategy {strategy!r} needs a block size (--size S)")
        if isinstance(size, bool) or int(size) != size or size < 1:
            raise InvalidParameterError(f"the block size must be an integer >= 1, got {size!r}")
    size = int(size) if size is not None else 1
    blocks = func(abs_correlation(X), min(size, X.shape[1]), seed)
    return [tuple(names[j] for j in b) for b in blocks]


def make_plan(
    X: np.ndarray,
    names: Sequence[str],
    *,
    strategy: str,
    size: int | None = None,
    seed: int = default(BlocksRequest, "seed"),
    method: str = default(BlocksRequest, "method"),
    k: int | None = None,
    params: Mapping[str, Any] | None = None,
    drop: Sequence[str] = (),
) -> BlockPlan:
    """A :class:`BlockPlan` proposed by ``strategy``; every block gets ``method``,
    ``k`` (None: left to ``sdc protect -k``) and ``params``."""
    from .methods import get_method

    spec = get_method(method)
    spec.validate_params(dict(params or {}))
    # keep only the parameters given (converted), so the plan file stays short
    params = {p: spec.validate_params({p: v})[p] for p, v in (params or {}).items()}
    if k is not None:
        check_k_value(k)
    blocks = propose_blocks(X, names, strategy, size, seed=seed)
    return BlockPlan(
        tuple(Block(f"block{i + 1}", cols, spec.name, k, dict(params)) for i, cols in enumerate(blocks)),
        tuple(drop),
    )


def block_mean_abs_corr(A: np.ndarray, positions: Sequence[int]) -> float | None:
    """Mean |r| over the pairs of a block (None for a one-column block)."""
    pairs = list(combinations(positions, 2))
    return float(np.mean([A[i, j] for i, j in pairs])) if pairs else None


def plan_mean_abs_corr(X: np.ndarray, names: Sequence[str], plan: BlockPlan) -> float | None:
    """Mean |r| over every within-block pair of columns of ``plan`` (pooled)."""
    A = abs_correlation(X)
    pos = {c: j for j, c in enumerate(names)}
    values = [A[pos[a], pos[b]] for blk in plan.blocks for a, b in combinations(blk.columns, 2)]
    return float(np.mean(values)) if values else None


# ----------------------------------------------------------- evaluation (k')


def check_k_option(k: int | None) -> None:
    """A k given as an option (None = not given) must be an integer >= 2."""
    if k is not None:
        check_k_value(k)


def plan_comment(name: str, size: int | None, seed: int, source: str = "INPUT") -> str:
    """The header comment of a plan file written by ``sdc blocks`` for candidate ``name``."""
    if name in STRATEGIES:
        how = f"--strategy {name}" + (f" --size {size}" if STRATEGIES[name][1] and size is not None else "")
        how += f" --seed {seed}" if name == "random" else ""
    else:
        how = f"--check {name}"
    return (f"sdc blocking plan: sdc blocks {source} {how}\n"
            "Edit freely; `sdc blocks INPUT --check PLAN` validates it, "
            "`sdc protect INPUT --plan PLAN -o OUT` applies it.")


def block_notes(entry: Mapping[str, Any]) -> dict[str, str]:
    """Per-block comments (mean |r| inside the block) for :func:`plan_to_toml`."""
    out = {}
    for name, value in entry.get("block_mean_abs_corr", {}).items():
        if value is not None:
            out[name] = f"mean |corr| inside the block: {value:.3f}"
    return out
