"""Roles: what each column of a microdata file is, decided once.

Every column has exactly one role:

- ``continuous`` -- a numerical attribute, microaggregated;
- ``categorical`` -- a nominal key (grouped with the continuous attributes, released as
  each group's mode);
- ``ordinal`` -- an ordered key (grouped by rank, released as each group's median
  category);
- ``weight`` -- the sampling weight (at most one);
- ``stratum`` -- groups never mix its values;
- ``identifier`` -- removed from the output;
- ``passthrough`` -- released unchanged, on purpose.

Where a role comes from, most binding first:

1. the command line (``--columns``, ``--categorical``, ``--ordinal``, ``--keys``,
   ``--weights``, ``--strata``, ``--drop``, ``--passthrough``, ``--id-column``) and the
   plan file's ``[roles]`` table: one source; a column given two roles there is a usage
   error (exit code 2) naming it;
2. the file's own metadata: SPSS measure level (nominal, ordinal, scale), value labels
   on codes that are not declared missing (SPSS, Stata), the SPSS weight variable, an
   Arrow dictionary or pandas categorical column (Parquet; ordered: ordinal);
3. a mu-ARGUS metadata file (``--metadata FILE.rda``): ``<RECODABLE>`` a categorical
   key, ``<NUMERIC>`` continuous, ``<WEIGHT>`` the weight, ``<HOUSE_ID>`` an
   identifier, the codes after the width declared missing (:func:`parse_rda`). An SPSS
   measure level *scale* gives way to it, since SPSS marks numeric variables scale
   unless told otherwise.

Inference never decides a role: :func:`propose_roles` (``sdc roles``) proposes one
per column with its evidence, and :func:`resolve_default` makes the default run (no
``--columns``, ``--categorical``, ``--ordinal`` or plan) refuse, before any work, when
an undeclared numeric column looks like a code, a weight, an identifier or a date:
such a column is never averaged silently.

This module imports the reading layer (:mod:`microagg_cli.io`) and the plan model
(:mod:`microagg_cli.blocking`) only.
"""

from __future__ import annotations

import json
import logging
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from .errors import DataError, InvalidParameterError

__all__ = [
    "ROLES",
    "RdaMetadata",
    "RdaVariable",
    "parse_rda",
    "load_rda",
    "Evidence",
    "column_evidence",
    "file_declarations",
    "explicit_roles",
    "resolve_default",
    "apply_missing_codes",
    "resolve_request",
    "check_streamed_default",
    "check_declared_missing",
    "DateColumn",
    "prepare_dates",
    "release_dates",
    "propose_roles",
    "roles_to_toml",
    "roles_to_dict",
    "ROLES_SCHEMA_VERSION",
]

log = logging.getLogger("microagg_cli")

#: The roles, in the order a roles file lists them.
ROLES = ("continuous", "categorical", "ordinal", "weight", "stratum", "identifier", "passthrough")

#: Version of ``sdc roles --format json``.
ROLES_SCHEMA_VERSION = "1.0"

#: Values judge a column only from this many values on (a handful of rows shows no pattern).
MIN_VALUES = 20
#: Integer codes: at most this many distinct values...
CODE_MAX_DISTINCT = 20
#: ... each seen on average at least this many times (a small file of integers is not codes).
CODE_MIN_REPEATS = 5

_WEIGHT_TOKENS = {"weight", "weights", "wgt", "wght", "wt", "pweight", "fweight", "aweight", "iweight", "pwgt",
                  "hwgt", "hhwgt", "perwt", "hhwt", "pwt", "wgtp",
                  "expfac", "fexp", "pondera", "ponderacion", "gewicht", "poids"}
_ID_TOKENS = {"id", "ids", "hid", "pid", "iid", "uid", "hhid", "personid", "serial", "serialno", "recno",
              "key", "uuid", "guid"}
_CODE_TOKENS = {"code", "cd", "cat", "class", "type", "status", "region", "sex", "gender", "nace", "isco"}


# =================================================================================
# mu-ARGUS metadata (.rda)

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


@dataclass(frozen=True)
class RdaMetadata:
    """A parsed mu-ARGUS ``.rda`` file: its variables (in file order) and separator."""

    name: str
    variables: tuple[RdaVariable, ...]
    separator: str | None = None

    def roles(self) -> dict[str, str]:
        return {v.name: v.role for v in self.variables if v.role is not None}

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
                                         current.get("decimals")))

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


def _match_names(meta: RdaMetadata, columns: Sequence[str]) -> dict[str, RdaVariable]:
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
        else:
            log.warning("%s, line %d: variable %r is not a column of the input; ignored", meta.name, v.line, v.name)
    return out


# =================================================================================
# evidence


_ISO_DATE = r"^\s*\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?\s*$"
_SPSS_DATE = re.compile(r"^(DATETIME|DATE|ADATE|EDATE|SDATE|JDATE|YMDHMS|TIME|DTIME|MTIME|WKDAY|MONTH|MOYR|QYR|WKYR)\d*",
                        re.I)
_SAS_DATE = re.compile(r"^(DATETIME|DATE|DDMMYY|MMDDYY|YYMMDD|YYMMDDN|MONYY|TIME|TOD|HHMM|E8601|B8601|IS8601|"
                       r"WEEKDATE|WORDDATE|JULIAN|NLDATE|DTDATE|YYQ|YEAR)", re.I)


def date_format(fmt: str | None, family: str) -> str | None:
    """The date/time unit of a statistical package's display format, or None.

    Returns ``"day"``, ``"second"``, ``"millisecond"`` or ``"period"`` (Stata weeks,
    months, quarters, half-years, years: integers of their own unit)."""
    if not fmt:
        return None
    f = fmt.strip()
    if family == "stata":
        m = re.match(r"^%-?t?([dcCwmqhyb])", f)
        if f.startswith("%d") or (m and f.startswith("%t") and m.group(1) == "d"):
            return "day"
        if m and f.startswith("%t"):
            return {"c": "millisecond", "C": "millisecond"}.get(m.group(1), "period")
        return None
    if family == "spss":
        m = _SPSS_DATE.match(f)
        if not m:
            return None
        kind = m.group(1).upper()
        return "day" if kind in ("DATE", "ADATE", "EDATE", "SDATE", "JDATE", "MOYR", "QYR", "WKYR", "MONTH",
                                 "WKDAY") else "second"
    if family == "sas":
        m = _SAS_DATE.match(f)
        if not m:
            return None
        kind = m.group(1).upper()
        return "second" if kind in ("DATETIME", "TIME", "TOD", "HHMM") or "DT" in f.upper()[:8] else "day"
    return None


def _tokens_of(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [t for t in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if t]


def name_hint(name: str) -> str | None:
    """``"weight"``, ``"identifier"`` or ``"code"`` when the column's name says so (by its
    words: ``sampling_weight``, ``hh_id``, ``regionCode``; ``AFNLWGT`` is one word)."""
    toks = _tokens_of(name)
    if any(t in _WEIGHT_TOKENS or t.endswith(("weight", "weights")) for t in toks):
        return "weight"
    if any(t in _ID_TOKENS for t in toks):
        return "identifier"
    if any(t in _CODE_TOKENS for t in toks):
        return "code"
    return None


@dataclass
class Evidence:
    """What one column shows: its type, values and declarations, and the role proposed."""

    column: str
    kind: str  # numeric | text | date | empty | other
    storage: str
    rows: int
    missing: int = 0
    distinct: int | None = None
    integer: bool | None = None
    unique: bool = False
    consecutive: bool = False
    zero_share: float | None = None
    top_share: float | None = None
    value_labels: int = 0
    measure: str | None = None
    date_unit: str | None = None
    date_format: str | None = None
    name_hint: str | None = None
    declared: str | None = None
    declared_by: str | None = None
    suspect: str | None = None
    proposed: str = "passthrough"
    reasons: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """One line of evidence (no original values, only counts and shares)."""
        if self.kind == "date":
            parts = [f"date ({self.date_format or self.storage})"]
        elif self.storage == "text (CSV)":
            parts = ["numbers" if self.kind == "numeric" else self.kind]
        else:
            parts = [self.storage]
        if self.distinct is not None:
            parts.append(f"{self.distinct} distinct value{'s' if self.distinct != 1 else ''}")
        if self.kind == "numeric" and self.integer:
            parts.append("integers")
        if self.unique:
            parts.append("unique per record")
        if self.consecutive:
            parts.append("consecutive integers")
        if self.zero_share is not None and self.zero_share >= 0.2:
            parts.append(f"{100 * self.zero_share:.0f} % zeros")
        elif self.top_share is not None and self.top_share >= 0.5 and (self.distinct or 0) > 1:
            parts.append(f"most frequent value in {100 * self.top_share:.0f} % of records")
        if self.missing:
            parts.append(f"{self.missing} missing")
        if self.value_labels:
            parts.append(f"{self.value_labels} value labels")
        if self.measure:
            parts.append(f"measure {self.measure}")
        if self.declared:
            parts.append(f"declared {self.declared} by {self.declared_by}")
        return "; ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {
            "column": self.column, "role": self.proposed, "kind": self.kind, "storage": self.storage,
            "rows": self.rows, "missing": self.missing, "distinct": self.distinct, "integer": self.integer,
            "unique": self.unique, "consecutive": self.consecutive, "zero_share": self.zero_share,
            "top_share": self.top_share, "value_labels": self.value_labels, "measure": self.measure,
            "date_unit": self.date_unit, "name_hint": self.name_hint, "declared": self.declared,
            "declared_by": self.declared_by, "suspect": self.suspect, "reasons": list(self.reasons),
        }


def _family(fmt: str) -> str:
    return {"sav": "spss", "zsav": "spss", "dta": "stata", "sas7bdat": "sas", "xpt": "sas"}.get(fmt, "")


def _storage(table: Any, name: str) -> str:
    if table.fmt == "csv":
        return "text (CSV)"
    from .statfiles import stat_meta

    meta = stat_meta(table.data) or {}
    storage = meta.get("columns", {}).get(name, {}).get("storage")
    return str(storage) if storage else str(table.column(name).type)


def _temporal(table: Any, name: str) -> bool:
    import pyarrow as pa

    if table.fmt == "csv":
        return False
    t = table.column(name).type
    return pa.types.is_temporal(t)


def _iso_dates(table: Any, name: str) -> bool:
    """Every non-missing cell of a text column is an ISO 8601 date or date-time."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from .io import missing_mask

    col = table.column(name)
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        return False
    present = ~missing_mask(table, name)
    if not present.any():
        return False
    ok = np.asarray(pc.match_substring_regex(col, _ISO_DATE).to_numpy(zero_copy_only=False), dtype=bool)
    return bool(ok[present].all())


def _labels_on_codes(info: Mapping[str, Any]) -> int:
    """Value labels on codes that are values (not declared missing: SPSS missing ranges,
    Stata/SAS letters)."""
    labels = info.get("value_labels") or []
    ranges = info.get("missing_ranges") or []
    n = 0
    for value, _label in labels:
        if isinstance(value, str):  # Stata .a-.z, SAS .A-.Z: declared missing
            continue
        if any(isinstance(r.get("lo"), (int, float)) and r["lo"] <= value <= r["hi"] for r in ranges):
            continue
        n += 1
    return n


def file_declarations(table: Any) -> dict[str, tuple[str, str, bool]]:
    """Roles the file itself declares: ``{column: (role, by what, strong)}``.

    ``strong`` is False for an SPSS measure level *scale*, which SPSS gives every
    numeric variable unless told otherwise (a mu-ARGUS metadata file then decides)."""
    import pyarrow as pa

    from .io import pandas_index_columns
    from .statfiles import stat_meta

    out: dict[str, tuple[str, str, bool]] = {}
    if table.fmt in ("sav", "zsav", "dta", "sas7bdat", "xpt"):
        meta = stat_meta(table.data) or {}
        family = _family(table.fmt)
        for name, info in meta.get("columns", {}).items():
            measure = info.get("measure")
            if date_format(info.get("format"), family):
                continue  # a date: judged as a date, never as a code
            if measure in ("nominal", "ordinal"):
                out[name] = ("categorical" if measure == "nominal" else "ordinal",
                             f"its SPSS measure level ({measure})", True)
            elif measure == "scale":
                out[name] = ("continuous", "its SPSS measure level (scale)", False)
            elif _labels_on_codes(info) and info.get("storage") != "string":
                out[name] = ("categorical", f"its value labels ({_labels_on_codes(info)})", True)
        weight = meta.get("weight")
        if weight:
            out[weight] = ("weight", "the SPSS file's weight variable", True)
        return out
    if not table.arrow_backed or table.fmt == "csv":
        return out
    pandas_meta: dict[str, Any] = {}
    raw = (table.data.schema.metadata or {}).get(b"pandas")
    if raw:
        try:
            for c in json.loads(raw).get("columns", []):
                if c.get("pandas_type") == "categorical" and c.get("name") is not None:
                    pandas_meta[str(c["name"])] = c.get("metadata") or {}
        except ValueError:
            pass
    index = set(pandas_index_columns(table.data.schema))
    for f in table.data.schema:
        if f.name in index:
            continue
        if pa.types.is_dictionary(f.type) or f.name in pandas_meta:  # pandas stores int categories as ints
            ordered = bool(getattr(f.type, "ordered", False) or pandas_meta.get(f.name, {}).get("ordered"))
            what = "a pandas categorical" if f.name in pandas_meta else "an Arrow dictionary"
            out[f.name] = ("ordinal" if ordered else "categorical",
                           f"its type ({'ordered ' if ordered else ''}{what})", True)
    return out


def column_evidence(table: Any, name: str, declared: tuple[str, str, bool] | None = None) -> Evidence:
    """The :class:`Evidence` of one column, with the role proposed for it."""
    from .io import column_values
    from .statfiles import stat_meta

    n = table.n_rows
    ev = Evidence(name, "other", _storage(table, name), n, name_hint=name_hint(name))
    if declared is not None:
        ev.declared, ev.declared_by = declared[0], declared[1]
    info: Mapping[str, Any] = {}
    if table.fmt in ("sav", "zsav", "dta", "sas7bdat", "xpt"):
        info = (stat_meta(table.data) or {}).get("columns", {}).get(name, {})
        ev.value_labels = _labels_on_codes(info)
        ev.measure = info.get("measure")
        unit = date_format(info.get("format"), _family(table.fmt))
        if unit:
            ev.kind, ev.date_unit, ev.date_format = "date", unit, str(info.get("format"))
    if _temporal(table, name):
        ev.kind, ev.date_unit = "date", "type"
    if ev.kind != "date":
        values, bad = column_values(table, name)
        nan = np.isnan(values)
        ev.missing = int((nan & ~bad).sum())
        if bad.any():
            ev.kind = "date" if _iso_dates(table, name) else "text"
            if ev.kind == "date":
                ev.date_unit, ev.date_format = "ISO 8601", "ISO 8601"
            ev.missing = int(np.count_nonzero(nan & ~bad))
            if ev.kind == "text":
                import pyarrow.compute as pc

                ev.distinct = int(pc.count_distinct(table.column(name)).as_py())
        elif nan.all():
            ev.kind = "empty"
        else:
            ev.kind = "numeric"
            v = values[~nan]
            uniq, counts = np.unique(v, return_counts=True)
            ev.distinct = int(uniq.size)
            ev.integer = bool(np.all(v == np.round(v)))
            ev.unique = ev.distinct == v.size and v.size > 1
            ev.consecutive = bool(ev.integer and ev.distinct > 2 and uniq[-1] - uniq[0] + 1 == uniq.size)
            ev.zero_share = float(np.count_nonzero(v == 0) / v.size)
            ev.top_share = float(counts.max() / v.size)
    _propose(ev)
    return ev


def _propose(ev: Evidence) -> None:
    """The proposed role and, for an undeclared numeric column, what makes it suspect."""
    hint = ev.name_hint
    if ev.kind == "date":
        ev.suspect = "date"
        ev.proposed = ev.declared if ev.declared in ("identifier", "passthrough") else "passthrough"
        ev.reasons.append("a date or time: never averaged by default; protect it with --columns to "
                          "release dates of its own unit")
        return
    if ev.kind == "numeric":
        enough = ev.rows - ev.missing >= MIN_VALUES
        codes = enough and (ev.integer and ev.distinct is not None and 1 < ev.distinct <= CODE_MAX_DISTINCT
                 and ev.distinct * CODE_MIN_REPEATS <= ev.rows - ev.missing)
        if hint == "weight":
            ev.suspect = "weight"
            ev.reasons.append("weight-like name")
        elif enough and ev.consecutive and (ev.unique or hint == "identifier"):
            ev.suspect = "identifier"
            ev.reasons.append("consecutive integers" + (", unique per record" if ev.unique else "")
                              + (", identifier-like name" if hint == "identifier" else ""))
        elif hint == "identifier" and ev.integer and (ev.unique or (ev.distinct or 0) > CODE_MAX_DISTINCT):
            ev.suspect = "identifier"
            ev.reasons.append("identifier-like name, integers" + (", unique per record" if ev.unique else ""))
        elif codes:
            ev.suspect = "code"
            ev.reasons.append("integer codes" + (", code-like name" if hint == "code" else ""))
    if ev.declared is not None:
        ev.proposed = ev.declared
        agrees = {"weight": "weight", "identifier": "identifier", "code": ev.declared}.get(ev.suspect or "")
        if agrees in (ev.declared, None):
            ev.reasons.clear()  # the values say what the declaration says
        else:
            ev.reasons = ["but the values suggest: " + "; ".join(ev.reasons)]
        return
    ev.proposed = {"weight": "weight", "identifier": "identifier", "code": "categorical"}.get(
        ev.suspect or "", "continuous" if ev.kind == "numeric" else "passthrough")
    if ev.kind == "text" and ev.distinct is not None and 1 < ev.distinct <= CODE_MAX_DISTINCT \
            and ev.distinct * CODE_MIN_REPEATS <= ev.rows:
        ev.proposed = "categorical"
        ev.reasons.append(f"text with {ev.distinct} distinct values")
    elif ev.kind in ("text", "empty", "other") and not ev.reasons:
        ev.reasons.append("not numeric: released unchanged")


# =================================================================================
# resolution


#: request field -> (role, option shown in messages)
_OPTION_ROLES = (
    ("columns", "continuous", "--columns"),
    ("categorical", "categorical", "--categorical"),
    ("ordinal", "ordinal", "--ordinal"),
    ("keys", "key", "--keys"),
    ("weights", "weight", "--weights"),
    ("strata", "stratum", "--strata"),
    ("drop", "identifier", "--drop"),
    ("passthrough", "passthrough", "--passthrough"),
    ("id_column", "identifier", "--id-column"),
)
#: option roles that today's checks already keep apart (with today's messages)
_OLD = {"--columns", "--keys", "--weights", "--strata", "--drop", "--passthrough", "--id-column"}


def _request_value(request: Any, name: str) -> list[str]:
    for part in (request, getattr(request, "run", None)):
        if part is not None and hasattr(part, name):
            value = getattr(part, name)
            if value is None:
                return []
            return [value] if isinstance(value, str) else list(value)
    return []


def explicit_roles(request: Any, plan: Any = None) -> dict[str, tuple[str, str]]:
    """``{column: (role, source)}`` from the command line and the plan's roles.

    A column named for two roles is a usage error naming it and both sources (exit
    code 2). Pairs of today's options (``--columns``, ``--keys``, ``--weights``,
    ``--strata``, ``--drop``, ``--passthrough``, ``--id-column``) are left to today's
    checks and messages. ``--keys`` columns are released unchanged (role ``key``)."""
    out: dict[str, tuple[str, str]] = {}
    old: set[str] = set()

    def put(column: str, role: str, source: str, today: bool) -> None:
        if column in out and out[column][0] != role:
            if today and column in old:
                return  # today's checks say it, in today's words
            raise InvalidParameterError(f"column {column!r} is given two roles: {out[column][0]} "
                                        f"({out[column][1]}) and {role} ({source})")
        if column not in out:
            out[column] = (role, source)
            if today:
                old.add(column)

    for field_name, role, option in _OPTION_ROLES:
        for c in _request_value(request, field_name):
            put(c, role, option, option in _OLD)
    if plan is not None:
        where = f"the plan {plan.source.name}" if getattr(plan, "source", None) else "the plan"
        for c in plan.columns:
            put(c, "continuous", where, True)
        for c in plan.drop:
            put(c, "identifier", where, True)
        for c in plan.passthrough:
            put(c, "passthrough", where, True)
        for role, cols in (getattr(plan, "roles", None) or {}).items():
            for c in cols:
                put(c, "key" if role == "keys" else role, where, False)
    return out


def _numeric_candidates(table: Any, exempt: set[str]) -> list[str]:
    from .io import default_column

    return [c for c in table.columns if c not in exempt and default_column(table, c)]


def declared_roles(table: Any, rda: RdaMetadata | None) -> dict[str, tuple[str, str]]:
    """``{column: (role, by what)}`` from the file's metadata, then the ``.rda`` file."""
    file = file_declarations(table)
    out = {c: (r, by) for c, (r, by, strong) in file.items() if strong}
    if rda is not None:
        for c, v in _match_names(rda, table.columns).items():
            if v.role is not None and c not in out:
                out[c] = (v.role, f"{rda.name}, line {v.line}")
    for c, (r, by, strong) in file.items():
        out.setdefault(c, (r, by))
    return out


def resolve_default(table: Any, request: Any, rda: RdaMetadata | None = None) -> dict[str, Any]:
    """The roles of a default run (no ``--columns``, ``--categorical``, ``--ordinal`` or
    plan): what the file and ``rda`` declare fills what the command line left open.

    Returns the request fields to change (``categorical``, ``ordinal``, ``weights``;
    empty when nothing is declared, so that an all-continuous file runs exactly as
    before).

    Raises
    ------
    DataError : before any work (exit code 3), when a numeric column without a role
        looks like a code, a weight, an identifier or a date; the message names each
        such column with its evidence, and ``sdc roles``.
    InvalidParameterError : two weights declared and none chosen with ``--weights``.
    """
    explicit = explicit_roles(request)
    declared = {c: rd for c, rd in declared_roles(table, rda).items() if c not in explicit}
    changes: dict[str, Any] = {}
    cats = [c for c in table.columns if declared.get(c, ("",))[0] == "categorical"]
    ords = [c for c in table.columns if declared.get(c, ("",))[0] == "ordinal"]
    weights = [c for c in table.columns if declared.get(c, ("",))[0] == "weight"]
    if cats:
        changes["categorical"] = cats
    if ords:
        changes["ordinal"] = ords
    if weights:
        if request.run.weights is None:
            if len(weights) > 1:
                raise InvalidParameterError(
                    "two weights are declared (" + ", ".join(f"{c!r} by {declared[c][1]}" for c in weights)
                    + "): choose one with --weights")
            changes["weights"] = weights[0]
        else:  # another weight was chosen: the declared one is released as it is, never averaged
            changes["passthrough"] = list(request.passthrough or []) + weights
    exempt = set(explicit) | set(cats) | set(ords) | set(weights)
    suspects: list[Evidence] = []
    for c in table.columns:
        if c in exempt:
            continue
        role = declared.get(c, (None,))[0]
        if role == "continuous":
            ev = column_evidence(table, c, (role, declared[c][1]))
            if ev.kind == "date":
                suspects.append(ev)
            continue
        if role == "identifier":
            ev = column_evidence(table, c, (role, declared[c][1]))
            ev.suspect = "identifier"
            ev.reasons = [f"declared an identifier by {declared[c][1]}"]
            suspects.append(ev)
            continue
        if role == "passthrough":
            continue
        ev = column_evidence(table, c)
        if ev.kind == "date" and _temporal(table, c):
            continue  # an Arrow date/time is not a number: released unchanged, as before
        if ev.kind == "date" and table.fmt == "csv":
            continue  # ISO dates in text: released unchanged, as before
        if ev.suspect is not None and ev.kind in ("numeric", "date"):
            suspects.append(ev)
    if suspects:
        raise _refusal(suspects, table)
    return changes


def _refusal(suspects: Sequence[Evidence], table: Any) -> DataError:
    what = "; ".join(f"{e.column} ({_why(e)})" for e in suspects)
    return DataError(
        f"{len(suspects)} numeric column(s) look like codes, weights, identifiers or dates, not continuous "
        f"attributes, and would be averaged: {what}. Declare their roles (--categorical, --ordinal, "
        "--weights, --strata, --drop, --passthrough, or --columns for the ones to protect), or write a "
        f"roles file with `sdc roles {_shown(table)} -o roles.toml`, edit it and pass it with --plan")


def check_streamed_default(stand_in: Any, columns: Sequence[str], column_table: Any) -> None:
    """The default run's refusal on the streaming path, one column in memory at a time:
    ``stand_in`` is a table with the file's schema (no rows), ``column_table(name)`` a
    table holding that one column. A selected column declared non-continuous by the
    file's schema (a pandas categorical) or looking like a code, a weight, an identifier
    or a date is refused (exit code 3), as in memory."""
    declared = file_declarations(stand_in)
    suspects: list[Evidence] = []
    for c in columns:
        if c in declared and declared[c][0] != "continuous":
            ev = Evidence(c, "numeric", "declared", 0, declared=declared[c][0], declared_by=declared[c][1])
            ev.suspect = declared[c][0]
            ev.reasons = [f"declared {declared[c][0]} by {declared[c][1]}"]
            suspects.append(ev)
            continue
        ev = column_evidence(column_table(c), c)
        if ev.suspect is not None:
            suspects.append(ev)
    if suspects:
        raise _refusal(suspects, stand_in)


def _why(e: Evidence) -> str:
    why = e.reasons[0] if e.reasons else str(e.suspect)
    if e.suspect == "date":
        why = f"a date, {e.date_format or e.storage}"
    elif e.distinct is not None and e.suspect != "identifier":
        why += f", {e.distinct} distinct value{'s' if e.distinct != 1 else ''}"
    return why


def _shown(table: Any) -> str:
    return shlex.quote(str(table.path)) if table.path is not None else "INPUT"


def apply_missing_codes(table: Any, rda: RdaMetadata, columns: Sequence[str]) -> tuple[Any, dict[str, Any]]:
    """``table`` with the ``.rda``'s declared missing codes made missing in ``columns``.

    A cell equal to a code (as text, or as a number) becomes an empty CSV cell or an
    Arrow null, so that no method averages it and ``--missing`` decides what happens
    to its record. Returns the new table and ``{column: {code: {"label": None,
    "count": n}}}`` for the report's ``declared_missing``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from .io import Table, column_values

    matched = _match_names(rda, table.columns)
    data = table.data
    counts: dict[str, Any] = {}
    for c in columns:
        v = matched.get(c)
        if v is None or not v.missing:
            continue
        col = data.column(c)
        hit = np.zeros(table.n_rows, dtype=bool)
        per: dict[str, int] = {}
        values, _bad = column_values(table, c)
        text = None
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            text = np.asarray(pc.utf8_trim_whitespace(col).to_numpy(zero_copy_only=False), dtype=object)
        for code in v.missing:
            mask = np.zeros(table.n_rows, dtype=bool)
            if text is not None:
                mask |= text == code.strip()
            try:
                num = float(code)
            except ValueError:
                num = None
            if num is not None:
                mask |= values == num
            mask &= ~hit
            if mask.any():
                per[code] = int(mask.sum())
                hit |= mask
        if not hit.any():
            continue
        counts[c] = {code: {"label": None, "count": n} for code, n in per.items()}
        if table.fmt == "csv":
            new = pc.if_else(pa.array(hit), pa.scalar("", col.type), col)
        else:
            new = pc.if_else(pa.array(hit), pa.scalar(None, col.type), col)
        data = data.set_column(data.column_names.index(c), data.schema.field(c), new)
    if not counts:
        return table, {}
    out = Table(data, table.fmt, table.path, table.delimiter, table.decimal, table.thousands, table.na_values)
    out.fingerprint = table.fingerprint
    return out, counts


# =================================================================================
# proposal (sdc roles)


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


def roles_to_toml(evidence: Sequence[Evidence], *, source: str = "INPUT", k: int | None = None) -> str:
    """A roles file in the plan format (``[roles]``), each column on its own line with a
    comment carrying its evidence; ``sdc protect INPUT --plan FILE -k K`` applies it as it is."""
    lines = [
        f"# sdc roles: roles proposed for {source} from its types, values and metadata.",
        "# Check every line: inference only proposes. Move a column to another role by moving its line.",
        f"# Apply it with: sdc protect {source} --plan THIS_FILE -k K -o OUTPUT",
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
    return {"schema_version": ROLES_SCHEMA_VERSION, "input": dict(fingerprint), "roles": roles,
            "columns": [e.as_dict() for e in evidence]}


# =================================================================================
# the protect request


def _merge_plan_roles(request: Any, plan: Any) -> Any:
    """The request with the plan's roles filled in (a different ``--weights`` is an error)."""
    roles = getattr(plan, "roles", None) or {}
    if not roles:
        return request
    run = request.run
    changes: dict[str, Any] = {}
    for role, name in (("categorical", "categorical"), ("ordinal", "ordinal"), ("stratum", "strata"),
                       ("keys", "keys")):
        cols = list(roles.get(role, ()))
        if cols:
            given = list(getattr(run, name) or [])
            changes[name] = given + [c for c in cols if c not in given]
    weight = roles.get("weight")
    if weight:
        if run.weights is not None and run.weights != weight[0]:
            raise InvalidParameterError(f"--weights {run.weights!r} but the plan's weight is {weight[0]!r}: "
                                        "give one of them")
        changes["weights"] = weight[0]
    return request.replace(**changes)


def resolve_request(table: Any, request: Any, rda: RdaMetadata | None = None) -> tuple[Any, Any, dict[str, Any]]:
    """Every column's role for ``sdc protect``, turned into the request's fields.

    The command line and the plan first (a column given two roles: exit code 2); then,
    in a default run (no ``--columns``, ``--categorical``, ``--ordinal`` or plan), what
    the file and the ``.rda`` declare, and a refusal (exit code 3) when a numeric column
    without a role does not look continuous (:func:`resolve_default`). The ``.rda``'s
    missing codes are made missing in every column that is grouped or used
    (:func:`apply_missing_codes`; passed-through, dropped and key columns are released
    as they are).

    Returns ``(table, request, declared_missing)``.
    """
    plan = request.plan
    explicit_roles(request, plan)
    request = _merge_plan_roles(request, plan)
    run = request.run
    if plan is None and request.columns is None and not run.categorical and not run.ordinal:
        changes = resolve_default(table, request, rda)
        if changes:
            request = request.replace(**changes)
    counts: dict[str, Any] = {}
    if rda is not None:
        keep = set(request.passthrough or []) | set(request.drop or []) | set(run.keys or [])
        if plan is not None:
            keep |= set(plan.passthrough) | set(plan.drop)
        if request.id_column:
            keep.add(request.id_column)
        table, counts = apply_missing_codes(table, rda, [c for c in table.columns if c not in keep])
    return table, request, counts


def check_declared_missing(counts: Mapping[str, Any], protected: Sequence[str], missing: str, source: str) -> None:
    """Under ``--missing error``, a protected column holding codes the ``.rda`` declares
    missing is refused with the codes named (exit code 3)."""
    if missing != "error":
        return
    for c in protected:
        if c in counts:
            n = sum(v["count"] for v in counts[c].values())
            codes = ", ".join(counts[c])
            raise DataError(f"column {c!r} holds missing codes declared by {source} ({codes}) in {n} row(s); "
                            "they are missing, not numbers: use --missing available (group on the observed "
                            "values) or --missing complete (leave those records out)")


# =================================================================================
# dates protected on purpose: released as dates of their own unit

#: seconds per step of a date format's unit, per statistical package (SPSS dates are
#: seconds since 1582-10-14; Stata and SAS dates are days, their date-times seconds or ms)
_STEPS = {("spss", "day"): 86400.0}


@dataclass(frozen=True)
class DateColumn:
    """How a protected date column is turned into numbers and back."""

    name: str
    kind: str  # "stat" (numbers with a date format), "arrow" (a temporal type), "iso" (CSV text)
    step: float = 1.0
    arrow_type: Any = None
    numpy_unit: str = "D"
    separator: str = "T"


def prepare_dates(table: Any, columns: Sequence[str]) -> tuple[Any, list[DateColumn]]:
    """The protected date and time columns among ``columns`` as numbers of their unit.

    An SPSS, Stata or SAS column with a date or time display format is already a
    number (it only needs rounding back, :func:`release_dates`); a Parquet date,
    timestamp or time column becomes its integer count of days, seconds, ms... ; a CSV
    column of ISO 8601 dates (or date-times, no time zone) becomes days (seconds).
    Returns the table to protect and what :func:`release_dates` needs."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from .io import Table, missing_mask
    from .statfiles import stat_meta

    dates: list[DateColumn] = []
    data = table.data
    family = _family(table.fmt)
    cols_meta = (stat_meta(data) or {}).get("columns", {}) if family else {}
    for name in columns:
        if name not in table.columns:
            continue
        if family:
            unit = date_format(cols_meta.get(name, {}).get("format"), family)
            if unit:
                dates.append(DateColumn(name, "stat", _STEPS.get((family, unit), 1.0)))
            continue
        col = data.column(name)
        if table.fmt != "csv" and pa.types.is_temporal(col.type):
            t = col.type
            if pa.types.is_date32(t) or pa.types.is_time32(t):
                ints = col.cast(pa.int32()).cast(pa.int64())
            else:
                ints = col.cast(pa.int64())
            values = np.asarray(ints.to_numpy(zero_copy_only=False), dtype=np.float64)
            if ints.null_count:
                values[np.asarray(ints.is_null().to_numpy(zero_copy_only=False), dtype=bool)] = np.nan
            step = 1.0
            if pa.types.is_timestamp(t):  # midnights only: days; whole seconds: seconds
                per_second = {"s": 1, "ms": 10 ** 3, "us": 10 ** 6, "ns": 10 ** 9}[t.unit]
                whole = values[~np.isnan(values)]
                for candidate in (86400.0 * per_second, float(per_second)):
                    if whole.size and np.all(np.mod(whole, candidate) == 0):
                        step = candidate
                        break
            data = data.set_column(data.column_names.index(name), pa.field(name, pa.float64()),
                                   pa.array(values, type=pa.float64(), from_pandas=True))
            dates.append(DateColumn(name, "arrow", step, arrow_type=t))
            continue
        if (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)) and _iso_dates(table, name):
            missing = missing_mask(table, name)
            text = np.asarray(pc.utf8_trim_whitespace(col).to_numpy(zero_copy_only=False), dtype=object)
            present = [str(v) for v in text[~missing]]
            if any(re.search(r"(Z|[+-]\d{2}:?\d{2})$", v) and "T" in v or " " in v and re.search(r"[+-]\d{2}:?\d{2}$", v)
                   for v in present):
                raise DataError(f"column {name!r}: dates with a time zone; convert them to one zone (and drop "
                                "the offset) before protecting them")
            timed = any(len(v) > 10 for v in present)
            sep = " " if any(len(v) > 10 and v[10] == " " for v in present) else "T"
            unit = ("ms" if any("." in v for v in present) else "s") if timed else "D"
            stamps = np.array([v.replace(" ", "T") for v in present], dtype=f"datetime64[{unit}]")
            values = np.full(table.n_rows, np.nan)
            values[~missing] = stamps.astype(np.int64).astype(np.float64)
            texts = np.array(["" if np.isnan(v) else repr(float(v)).replace(".", table.decimal) for v in values],
                             dtype=object)
            data = data.set_column(data.column_names.index(name), data.schema.field(name),
                                   pa.array(texts.tolist(), type=pa.string()))
            dates.append(DateColumn(name, "iso", numpy_unit=unit, separator=sep))
    if not dates or all(d.kind == "stat" for d in dates):
        return table, dates
    out = Table(data, table.fmt, table.path, table.delimiter, table.decimal, table.thousands, table.na_values)
    out.fingerprint = table.fingerprint
    return out, dates


def release_dates(data: Any, dates: Sequence[DateColumn]) -> Any:
    """The output with each protected date column released as dates: group values
    rounded to the column's unit (a day, a second...) and given back their type (Arrow)
    or their ISO 8601 text (CSV)."""
    import pyarrow as pa

    from .io import with_column

    for d in dates:
        if d.name not in data.column_names:
            continue
        values = np.asarray(data.column(d.name).to_numpy(zero_copy_only=False), dtype=np.float64)
        nan = np.isnan(values)
        rounded = np.where(nan, 0.0, np.round(values / d.step) * d.step)
        if d.kind == "stat":
            arr = pa.array(np.where(nan, np.nan, rounded), type=pa.float64(), from_pandas=True)
            data = with_column(data, d.name, arr)
        elif d.kind == "arrow":
            ints = pa.array(rounded.astype(np.int64), type=pa.int64(), mask=nan if nan.any() else None)
            t = d.arrow_type
            arr = ints.cast(pa.int32()).cast(t) if (pa.types.is_date32(t) or pa.types.is_time32(t)) else ints.cast(t)
            data = with_column(data, d.name, arr, type=t)
        else:
            stamps = rounded.astype(np.int64).astype(f"datetime64[{d.numpy_unit}]")
            text = np.datetime_as_string(stamps, unit=d.numpy_unit)
            if d.separator != "T":
                text = np.char.replace(text, "T", d.separator)
            arr = pa.array(np.where(nan, "", text).tolist(), type=pa.string())
            data = with_column(data, d.name, arr, type=pa.string())
    return data
