"""What a column shows (type, values, name, declarations) and the role it suggests."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from .rda import RdaMetadata, match_names

__all__ = ["ROLES", "MIN_VALUES", "CODE_MAX_DISTINCT", "CODE_MIN_REPEATS", "Evidence", "date_format", "name_hint",
           "family_of", "is_temporal", "iso_dates", "file_declarations", "declared_roles", "column_evidence",
           "strong_name_hint", "release_suspect", "numeric_why", "NEAR_UNIQUE"]

#: The roles, in the order a roles file lists them.
ROLES = ("continuous", "categorical", "ordinal", "weight", "stratum", "identifier", "passthrough")

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


#: Endings of a word that mark an identifier inside it (``PERSONID``, ``HHNR``, ``CASENUM``),
#: and the common words that end so without being one.
_ID_ENDINGS = ("id", "nr", "nbr", "num", "no")
_NOT_ID_WORDS = {"paid", "valid", "invalid", "said", "void", "avoid", "rapid", "fluid", "solid", "acid", "humid",
                 "hybrid", "grid", "liquid", "lucid", "vivid", "arid", "squid", "amid", "android", "covid",
                 "casino", "volcano", "piano", "domino", "albino", "merino", "aluminum", "platinum", "inferno"}
#: Words of code columns, matched inside longer words too (``OCCUCODE``, ``REGCODE``, ``ISCO08``).
_CODE_STEMS = ("code", "isco", "nace", "region", "regio", "province", "district", "county", "municip",
               "occup", "industr", "marital", "educ", "nationalit", "religion", "ethnic", "country")
_CODE_PREFIXES = ("reg", "occ")


def name_hint(name: str) -> str | None:
    """``"weight"``, ``"identifier"`` or ``"code"`` when the column's name says so: by its
    words (``sampling_weight``, ``hh_id``, ``regionCode``) and inside a word by common
    agency spellings (``HHWGT``, ``PERSONID``, ``HHNR``, ``OCCUCODE``, ``REG``). A hint
    found only inside a word is weak: :func:`column_evidence` needs the values to agree
    (:func:`strong_name_hint` tells which)."""
    return _name_hints(name)[0]


def _name_hints(name: str) -> tuple[str | None, bool]:
    """(:func:`name_hint`, whether it is weak: found inside a word only)."""
    toks = _tokens_of(name)
    strong = _whole_word_hint(toks)
    return (strong, False) if strong is not None else (_inside_word_hint(toks), True)


def _inside_word_hint(toks: list[str]) -> str | None:
    if any(("wgt" in t or "wght" in t or "weight" in t) for t in toks):
        return "weight"
    if any(t.endswith(_ID_ENDINGS) and t not in _NOT_ID_WORDS and len(t) > 3
           and not t.endswith(("ratio", "audio", "radio", "video", "portfolio")) for t in toks):
        return "identifier"
    if any(any(stem in t for stem in _CODE_STEMS) or (t.startswith(_CODE_PREFIXES) and len(t) <= 6) for t in toks):
        return "code"
    return None


def strong_name_hint(name: str) -> str | None:
    """The hint of a column's whole words only (``sampling_weight``, ``hh_id``, ``sex``)."""
    return _whole_word_hint(_tokens_of(name))


def _whole_word_hint(toks: list[str]) -> str | None:
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
    #: integers: max - min + 1 (how many codes the range could hold)
    span: int | None = None
    positive: bool | None = None
    zero_share: float | None = None
    top_share: float | None = None
    value_labels: int = 0
    measure: str | None = None
    date_unit: str | None = None
    date_format: str | None = None
    name_hint: str | None = None
    #: the name hint is found inside a word only (``HHWGT``): the values must agree
    weak_hint: bool = False
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


def family_of(fmt: str) -> str:
    return {"sav": "spss", "zsav": "spss", "dta": "stata", "sas7bdat": "sas", "xpt": "sas"}.get(fmt, "")


def _storage(table: Any, name: str) -> str:
    if table.fmt == "csv":
        return "text (CSV)"
    from ..statfiles import stat_meta

    meta = stat_meta(table.data) or {}
    storage = meta.get("columns", {}).get(name, {}).get("storage")
    return str(storage) if storage else str(table.column(name).type)


def is_temporal(table: Any, name: str) -> bool:
    import pyarrow as pa

    if table.fmt == "csv":
        return False
    t = table.column(name).type
    return pa.types.is_temporal(t)


def iso_dates(table: Any, name: str) -> bool:
    """Every non-missing cell of a text column is an ISO 8601 date or date-time."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..io import missing_mask

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

    from ..io import pandas_index_columns
    from ..statfiles import stat_meta

    out: dict[str, tuple[str, str, bool]] = {}
    if table.fmt in ("sav", "zsav", "dta", "sas7bdat", "xpt"):
        meta = stat_meta(table.data) or {}
        family = family_of(table.fmt)
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
    from ..io import column_values
    from ..statfiles import stat_meta

    n = table.n_rows
    hint, weak = _name_hints(name)
    ev = Evidence(name, "other", _storage(table, name), n, name_hint=hint, weak_hint=hint is not None and weak)
    if declared is not None:
        ev.declared, ev.declared_by = declared[0], declared[1]
    info: Mapping[str, Any] = {}
    if table.fmt in ("sav", "zsav", "dta", "sas7bdat", "xpt"):
        info = (stat_meta(table.data) or {}).get("columns", {}).get(name, {})
        ev.value_labels = _labels_on_codes(info)
        ev.measure = info.get("measure")
        unit = date_format(info.get("format"), family_of(table.fmt))
        if unit:
            ev.kind, ev.date_unit, ev.date_format = "date", unit, str(info.get("format"))
    if is_temporal(table, name):
        ev.kind, ev.date_unit = "date", "type"
    if ev.kind != "date":
        values, bad = column_values(table, name)
        nan = np.isnan(values)
        ev.missing = int((nan & ~bad).sum())
        if bad.any():
            ev.kind = "date" if iso_dates(table, name) else "text"
            if ev.kind == "date":
                ev.date_unit, ev.date_format = "ISO 8601", "ISO 8601"
            ev.missing = int(np.count_nonzero(nan & ~bad))
            if ev.kind in ("text", "date"):
                _text_levels(ev, table.column(name))
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
            if ev.integer and abs(uniq[-1] - uniq[0]) < 2**53:
                ev.span = int(uniq[-1] - uniq[0]) + 1
            ev.positive = bool(uniq[0] > 0)
            ev.zero_share = float(np.count_nonzero(v == 0) / v.size)
            ev.top_share = float(counts.max() / v.size)
    elif ev.date_unit == "type":  # an Arrow date/time: its levels, as for text
        _text_levels(ev, table.column(name))
    _propose(ev)
    return ev


def _text_levels(ev: Evidence, col: Any) -> None:
    """Distinct values and uniqueness of a text (or date/time) column, dictionaries decoded."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(col, pa.ChunkedArray) and pa.types.is_dictionary(col.type):
        col = pa.chunked_array([c.dictionary_decode() for c in col.chunks], type=col.type.value_type)
    ev.distinct = int(pc.count_distinct(col, mode="only_valid").as_py())
    present = ev.rows - int(col.null_count)
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        blank = int(pc.sum(pc.equal(pc.utf8_trim_whitespace(col), "")).as_py() or 0)
        present -= blank
        if ev.distinct and blank:
            ev.distinct -= 1  # the empty cell is missing, not a level
    ev.unique = ev.distinct == present and present > 1


#: Text or dates with at least this share of distinct values are (nearly) unique per record.
NEAR_UNIQUE = 0.9
#: Integers covering at least this share of their range are consecutive codes...
CONSECUTIVE_SHARE = 0.9
#: ... when they have more levels than this: ages and years of birth span at most about 120
#: consecutive integers and are quantities; more consecutive levels, each shared by several
#: records, are a code list (regions, municipalities, occupations).
CODE_MANY_LEVELS = 120


def _present(ev: Evidence) -> int:
    return ev.rows - ev.missing


def release_suspect(ev: Evidence) -> tuple[str, str] | None:
    """``("identifier" | "key", why)`` when releasing the column unchanged would release an
    identifier (unique or nearly unique per record) or a key (a few levels, each shared
    by several records) in clear; None otherwise (a continuous attribute, a constant,
    a handful of values: :data:`MIN_VALUES`)."""
    present = _present(ev)
    if ev.kind in ("empty", "other") or present < MIN_VALUES or not ev.distinct or ev.distinct < 2:
        return None
    if ev.kind == "numeric":
        if ev.suspect == "identifier":
            return "identifier", numeric_why(ev)
        if ev.suspect == "code":
            return "key", numeric_why(ev)
        return None
    what = "text" if ev.kind == "text" else "dates"
    if ev.unique or ev.distinct >= NEAR_UNIQUE * present:
        return "identifier", f"{what}, {ev.distinct} distinct values in {present} records" + (
            " (unique per record)" if ev.unique else "")
    if ev.kind == "text" or ev.distinct * CODE_MIN_REPEATS <= present and ev.distinct <= CODE_MAX_DISTINCT:
        share = ev.distinct / present
        if ev.kind == "text" and share >= 0.5:
            return "identifier", f"text, {ev.distinct} distinct values in {present} records"
        return "key", f"{what} with {ev.distinct} levels in {present} records"
    return None


def numeric_why(ev: Evidence) -> str:
    """What makes a numeric column suspect, in one phrase: its reasons (without the
    declaration's "but the values suggest" lead) and, but for an identifier, its count of
    distinct values."""
    why = "; ".join(ev.reasons) if ev.reasons else str(ev.suspect)
    why = why.removeprefix("but the values suggest: ")
    if ev.distinct is not None and ev.suspect != "identifier" and "distinct" not in why:
        why += f", {ev.distinct} distinct value{'s' if ev.distinct != 1 else ''}"
    return why


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
        present = _present(ev)
        enough = present >= MIN_VALUES
        distinct = ev.distinct or 0
        weak = ev.weak_hint
        codes = enough and (ev.integer and 1 < distinct <= CODE_MAX_DISTINCT
                            and distinct * CODE_MIN_REPEATS <= present)
        span_share = 0.0
        if ev.integer and ev.span:
            span_share = distinct / ev.span
        # many integer values covering their range, each repeated: codes numbered 1..m (regions)
        many_codes = enough and ev.integer and distinct > CODE_MANY_LEVELS and span_share >= CONSECUTIVE_SHARE \
            and distinct * 2 <= present
        # a code-like name on repeated integers (OCCUCODE, COMPCODE)
        named_codes = enough and hint == "code" and ev.integer and 1 < distinct and (
            distinct * 2 <= present if weak else not ev.unique)
        # weights: repeated positive values (design weights are shared by the records of a stratum)
        weight_values = bool(ev.positive) and distinct * 2 <= present
        if hint == "weight" and (not weak or weight_values):
            ev.suspect = "weight"
            ev.reasons.append("weight-like name" + (" and repeated positive values" if weak else ""))
        elif enough and ev.consecutive and (ev.unique or hint == "identifier"):
            ev.suspect = "identifier"
            ev.reasons.append("consecutive integers" + (", unique per record" if ev.unique else "")
                              + (", identifier-like name" if hint == "identifier" else ""))
        elif hint == "identifier" and ev.integer and (ev.unique or distinct > CODE_MAX_DISTINCT) \
                and (not weak or ev.unique or span_share >= CONSECUTIVE_SHARE):
            ev.suspect = "identifier"
            ev.reasons.append("identifier-like name, integers" + (", unique per record" if ev.unique else ""))
        elif codes:
            ev.suspect = "code"
            ev.reasons.append("integer codes" + (", code-like name" if hint == "code" else ""))
        elif many_codes:
            ev.suspect = "code"
            ev.reasons.append(f"{distinct} consecutive integer values, each in {present / distinct:.1f} records "
                              "on average" + (", code-like name" if hint == "code" else ""))
        elif named_codes:
            ev.suspect = "code"
            ev.reasons.append(f"code-like name, integers repeated ({distinct} distinct values)")
    if ev.declared is not None:
        ev.proposed = ev.declared
        agrees = {"weight": "weight", "identifier": "identifier",
                  "code": ev.declared if ev.declared in ("categorical", "ordinal", "stratum") else "categorical",
                  }.get(ev.suspect or "")
        if agrees in (ev.declared, None):
            ev.reasons.clear()  # the values say what the declaration says
        else:
            ev.reasons = ["but the values suggest: " + "; ".join(ev.reasons)]
        return
    ev.proposed = {"weight": "weight", "identifier": "identifier", "code": "categorical"}.get(
        ev.suspect or "", "continuous" if ev.kind == "numeric" else "passthrough")
    released = release_suspect(ev) if ev.kind in ("text", "date") else None
    if ev.kind == "text" and released is not None and released[0] == "key":
        ev.proposed = "categorical"
        ev.reasons.append(released[1])
    elif ev.kind == "text" and released is not None:
        ev.proposed = "identifier"
        ev.reasons.append(released[1] + ": an identifier, dropped")
    elif ev.kind in ("text", "empty", "other") and not ev.reasons:
        ev.reasons.append("not numeric: released unchanged")


def declared_roles(table: Any, rda: RdaMetadata | None) -> dict[str, tuple[str, str]]:
    """``{column: (role, by what)}`` from the file's metadata, then the ``.rda`` file."""
    file = file_declarations(table)
    out = {c: (r, by) for c, (r, by, strong) in file.items() if strong}
    if rda is not None:
        for c, v in match_names(rda, table.columns).items():
            if v.role is not None and c not in out:
                out[c] = (v.role, f"{rda.name}, line {v.line}")
    for c, (r, by, strong) in file.items():
        out.setdefault(c, (r, by))
    return out
