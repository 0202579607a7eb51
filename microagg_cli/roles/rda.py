"""mu-ARGUS metadata files (``.rda``): each variable's role and declared missing codes."""

from __future__ import annotations

import logging
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ..errors import DataError

__all__ = ["RdaVariable", "RdaMetadata", "parse_rda", "load_rda", "match_names", "check_fits"]

log = logging.getLogger("microagg_cli")


#: tags before the first variable (file level): name -> number of values
_FILE_TAGS = {"<SEPARATOR>": 1, "<SPSS>": 0, "<NAMESINFRONT>": 0, "<FIXED>": 0, "<FREE>": 0}
#: tags of a variable: name -> (least, most) number of values
_VAR_TAGS = {
    "<RECODABLE>": (0, 0), "<RECODEABLE>": (0, 0), "<NUMERIC>": (0, 0), "<WEIGHT>": (0, 0),
    "<HOUSE_ID>": (0, 0), "<HOUSEHOLD>": (0, 0), "<TRUNCABLE>": (0, 0), "<HIERARCHICAL>": (0, 0),
    "<CODELIST>": (1, 1), "<IDLEVEL>": (1, 1), "<DECIMALS>": (1, 1), "<SUPPRESSWEIGHT>": (1, 1),
    "<SUPPRESSPRIORITY>": (1, 1), "<RELATED>": (1, 1), "<TOTCODE>": (1, 1), "<HIERCODELIST>": (1, 1),
    "<HIERLEADSTRING>": (1, 1), "<HIERLEVELS>": (1, 20), "<REQUEST>": (1, 2), "<DISTANCE>": (1, 5),
    "<CODELISTFILE>": (1, 1), "<PRAM>": (0, 1),
}
_INT_TAGS = ("<IDLEVEL>", "<DECIMALS>", "<SUPPRESSWEIGHT>", "<SUPPRESSPRIORITY>")


@dataclass(frozen=True)
class RdaVariable:
    """One variable of a mu-ARGUS metadata file."""

    name: str
    line: int
    role: str | None
    missing: tuple[str, ...] = ()
    decimals: int | None = None
    #: ``<IDLEVEL>``: how identifying the key is (1 most); None when not given
    idlevel: int | None = None


@dataclass(frozen=True)
class RdaMetadata:
    """A parsed mu-ARGUS ``.rda`` file: its variables (in file order) and separator."""

    name: str
    variables: tuple[RdaVariable, ...]
    separator: str | None = None

    def roles(self) -> dict[str, str]:
        return {v.name: v.role for v in self.variables if v.role is not None}

    def idlevels(self) -> dict[str, int]:
        """``{variable: <IDLEVEL>}`` of the variables that give one."""
        return {v.name: v.idlevel for v in self.variables if v.idlevel is not None}

    def missing_codes(self) -> dict[str, tuple[str, ...]]:
        return {v.name: v.missing for v in self.variables if v.missing}


def _tokens(text: str, name: str, line: int) -> list[str]:
    lexer = shlex.shlex(text, posix=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:
        raise DataError(f"{name}, line {line}: malformed line (an unclosed quote)") from None


def _is_int(text: str) -> bool:
    return re.fullmatch(r"[+-]?\d+", text) is not None


def parse_rda(text: str, name: str = "<metadata>") -> RdaMetadata:
    """A mu-ARGUS metadata file (``.rda``) from its text.

    Layout (one variable per unindented line, its tags indented below it)::

        <SEPARATOR> ","              free format; without it the data file is fixed-width
        REGION 1 4 9999 9998         name, start column (fixed format only), width,
          <RECODABLE>                then up to two missing codes (quoted or not)
          <IDLEVEL> 1
        WEIGHT 44 6
          <NUMERIC>
          <DECIMALS> 2
          <WEIGHT>

    ``<RECODABLE>`` (a categorical key), ``<NUMERIC>`` (continuous), ``<WEIGHT>`` (the
    weight; with ``<NUMERIC>`` too), ``<HOUSE_ID>`` (an identifier) give the role; the
    missing codes are declared missing (never averaged). ``<SEPARATOR>``,
    ``<DECIMALS>``, ``<IDLEVEL>``, ``<CODELIST>``, ``<TRUNCABLE>``, ``<TOTCODE>``,
    ``<HIERARCHICAL>`` and mu-ARGUS's other tags are read and otherwise ignored.

    Raises
    ------
    DataError : an unknown tag or a malformed line (exit code 3), with its line number.
    """
    variables: list[RdaVariable] = []
    separator: str | None = None
    free = False
    current: dict[str, Any] | None = None
    seen: dict[str, int] = {}

    def close() -> None:
        if current is not None:
            tags = current["tags"]
            recodable = "<RECODABLE>" in tags or "<RECODEABLE>" in tags
            if recodable and "<NUMERIC>" in tags and "<WEIGHT>" not in tags:
                raise DataError(f"{name}, line {current['line']}: variable {current['name']!r} is both <RECODABLE> "
                                "(a categorical key) and <NUMERIC> (continuous): keep the one tag of its role")
            role = None
            if "<WEIGHT>" in tags:
                role = "weight"
            elif "<HOUSE_ID>" in tags:
                role = "identifier"
            elif "<RECODABLE>" in tags or "<RECODEABLE>" in tags:
                role = "categorical"
            elif "<NUMERIC>" in tags:
                role = "continuous"
            variables.append(RdaVariable(current["name"], current["line"], role, tuple(current["missing"]),
                                         current.get("decimals"), current.get("idlevel")))

    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        tokens = _tokens(raw, name, number)
        head = tokens[0]
        if head.startswith("<"):
            tag = head.upper()
            args = tokens[1:]
            if current is None:
                if tag not in _FILE_TAGS:
                    known = "a variable line, or " + ", ".join(_FILE_TAGS)
                    raise DataError(f"{name}, line {number}: {head} before the first variable (expected {known})")
                if len(args) != _FILE_TAGS[tag]:
                    raise DataError(f"{name}, line {number}: {head} takes {_FILE_TAGS[tag]} value(s), got {len(args)}")
                if tag == "<SEPARATOR>":
                    if args[0].upper() in ("TAB", "\\T"):
                        args[0] = "\t"
                    if len(args[0]) != 1:
                        raise DataError(f"{name}, line {number}: <SEPARATOR> must be one character, got {args[0]!r}")
                    separator, free = args[0], True
                elif tag in ("<SPSS>", "<NAMESINFRONT>", "<FREE>"):
                    free = True
                continue
            if tag not in _VAR_TAGS:
                raise DataError(f"{name}, line {number}: unknown tag {head} (variable {current['name']!r})")
            least, most = _VAR_TAGS[tag]
            if not least <= len(args) <= most:
                want = str(least) if least == most else f"{least} to {most}"
                raise DataError(f"{name}, line {number}: {head} takes {want} value(s), got {len(args)}")
            if tag in _INT_TAGS and not _is_int(args[0]):
                raise DataError(f"{name}, line {number}: {head} needs an integer, got {args[0]!r}")
            if tag == "<DECIMALS>":
                current["decimals"] = int(args[0])
            if tag == "<IDLEVEL>":
                current["idlevel"] = int(args[0])
            current["tags"].add(tag)
            continue
        if raw[:1].isspace():
            raise DataError(f"{name}, line {number}: an indented line that is not a <TAG>: {raw.strip()[:40]!r}")
        close()
        var, rest = head, tokens[1:]
        if not free:  # fixed format: the start column comes first
            if not rest or not _is_int(rest[0]) or int(rest[0]) < 1:
                raise DataError(f"{name}, line {number}: variable {var!r} needs its start column and width "
                                "(a fixed-format file; free format starts with <SEPARATOR>)")
            rest = rest[1:]
        if not rest or not _is_int(rest[0]) or int(rest[0]) < 1:
            raise DataError(f"{name}, line {number}: variable {var!r} needs a width (a positive integer)")
        missing = rest[1:]
        if len(missing) > 2:
            raise DataError(f"{name}, line {number}: variable {var!r} has {len(missing)} missing codes "
                            "(at most 2)")
        if var.lower() in seen:
            raise DataError(f"{name}, line {number}: variable {var!r} is described twice "
                            f"(first on line {seen[var.lower()]})")
        seen[var.lower()] = number
        current = {"name": var, "line": number, "missing": [m for m in missing if m != ""], "tags": set()}
    close()
    if not variables:
        raise DataError(f"{name}: no variable described (not a mu-ARGUS metadata file?)")
    return RdaMetadata(name, tuple(variables), separator)


def load_rda(path: str | Path) -> RdaMetadata:
    """:func:`parse_rda` of a file (exit code 3 when missing or unreadable)."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"metadata file {str(path)!r} does not exist")
    if path.is_dir():
        raise DataError(f"metadata {str(path)!r} is a directory, not a file")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"metadata file {str(path)!r}: cannot read ({exc.strerror})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")  # mu-ARGUS writes the platform's 8-bit encoding
    return parse_rda(text, path.name)


def match_names(meta: RdaMetadata, columns: Sequence[str], *, warn: bool = True) -> dict[str, RdaVariable]:
    """column -> its variable: the same name, else the same name ignoring case."""
    exact = set(columns)
    lower: dict[str, list[str]] = {}
    for c in columns:
        lower.setdefault(c.lower(), []).append(c)
    out: dict[str, RdaVariable] = {}
    for v in meta.variables:
        if v.name in exact:
            out[v.name] = v
        elif len(lower.get(v.name.lower(), [])) == 1:
            out[lower[v.name.lower()][0]] = v
        elif warn:
            log.warning("%s, line %d: variable %r is not a column of the input; ignored", meta.name, v.line, v.name)
    return out


def check_fits(meta: RdaMetadata, columns: Sequence[str]) -> None:
    """Refuse a metadata file that does not describe the input (exit code 3): none of its
    variables is a column, or the input was read as one column where the ``.rda``
    describes several (a separator that does not match the data)."""
    found = match_names(meta, columns, warn=False)
    if not found or (len(columns) == 1 and len(meta.variables) > 1):
        sep = f" (its <SEPARATOR> is {meta.separator!r})" if meta.separator else ""
        raise DataError(f"{meta.name} describes {len(meta.variables)} variable(s), {len(found)} of them columns of the "
                        f"input, which was read as {len(columns)} column(s){sep}: the metadata does not fit this file "
                        "(another file's .rda, or a separator that does not match the data: see --delimiter)")
