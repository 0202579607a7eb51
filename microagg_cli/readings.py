"""Numbers written in other conventions: is a text column a number after all?

A column that ``sdc`` does not parse as numbers is released unchanged, so a column of
numbers that merely *looks* like text to the strict parser (a decimal comma ``1,5``,
thousands separators ``248,514`` / ``248.514`` / ``248 514`` / ``248'514``, a currency
or percent sign ``$9192`` / ``12 %``, an accounting negative ``(120)``, or a majority of
placeholder cells ``-`` / ``..`` / ``x`` as official tables use for "not available" or
"confidential") would be released in clear. :func:`numeric_reading` reads a text column
under each of these conventions and returns the one that makes it numeric (or mostly
numeric), with the option that settles it; the caller refuses the column unless the
user named it (:func:`microagg_cli.io.default_column`, :func:`microagg_cli.io.released_check`).

:func:`masked_shape` describes a cell without its value (digits become ``9``, a cell
with letters is only "a value with letters"), for error messages about columns that
hold or may hold protected numbers: logs never get an original value.

Only pyarrow compute (regular expressions in C++) and numpy: a column of a million
names is read in well under a second.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from .csvio import text_array

__all__ = ["Reading", "numeric_reading", "masked_shape", "quote", "name_list", "needs_quotes", "missing_column", "option_list",
           "PLACEHOLDERS",
           "decimal_comma_file", "mostly_share"]

#: Cells official tables use for "not available", "not applicable", "confidential",
#: "nil" (Eurostat, ONS, Destatis, Statistics Canada, ABS conventions).
PLACEHOLDERS = frozenset({
    "-", "--", "---", "\u2013", "\u2014", "..", "...", "\u2026", ":", "x", "X", "xx", "XX", "xxx", "XXX",
    "*", "**", "***", "c", "C", "(c)", "(C)", "(x)", "(X)", "z", "(z)", "s", "S", "(s)", "F", "(F)", "?",
    "#", "n.a.", "n/a", "na", "n.v.", "nd", "n.d.", "#N/A", "#NA", "N.A.", "NULL", "(NA)", "-.-", "/",
})

#: The share of non-empty cells that must read as numbers for a column to count as
#: numeric under a convention (the same threshold as the strict "mostly numeric" rule).
mostly_share = 0.5

_D = r"[0-9]"
_SIGN = "[+\\-\u2212]?"
_EXP = r"([eE][+-]?[0-9]{1,3})?"
_SPACES = " \u00a0\u202f\u2009"          # space, no-break space, narrow no-break space, thin space
_QUOTES = "'\u2019"                      # apostrophe, right single quotation mark (Swiss style)
_CURRENCY = "(\\$|US\\$|\u20ac|\u00a3|\u00a5|\u20b9|\u20bd|\u20a9|\u20ba|CHF|EUR|USD|GBP|JPY|SEK|NOK|DKK|PLN|CZK|HUF|Fr\\.?|kr\\.?|R\\$|zl|z\u0142)"
_PCT = "(%|\u2030|pct)"

_DECIMAL_COMMA = rf"{_SIGN}({_D}+,{_D}*|,{_D}+){_EXP}"
_PLAIN = rf"{_SIGN}({_D}+(\.{_D}*)?|\.{_D}+){_EXP}"
_GROUP_COMMA = rf"{_SIGN}({_D}{{1,3}}(,{_D}{{3}})+|{_D}{{1,2}}(,{_D}{{2}})*,{_D}{{3}})(\.{_D}+)?"  # also 12,34,567
_GROUP_DOT = rf"{_SIGN}{_D}{{1,3}}(\.{_D}{{3}})+(,{_D}+)?"
_GROUP_SPACE = rf"{_SIGN}{_D}{{1,3}}([{_SPACES}]{_D}{{3}})+([.,]{_D}+)?"
_GROUP_QUOTE = rf"{_SIGN}{_D}{{1,3}}([{_QUOTES}]{_D}{{3}})+([.,]{_D}+)?"
_ANY_NUMBER = "(" + "|".join((_GROUP_COMMA, _GROUP_DOT, _GROUP_SPACE, _GROUP_QUOTE, _DECIMAL_COMMA, _PLAIN)) + ")"
_AFFIXED = (rf"^{_SIGN}\s?({_CURRENCY}\s?{_SIGN}\s?{_ANY_NUMBER}|{_ANY_NUMBER}\s?({_CURRENCY}|{_PCT}))$"
            rf"|^{_ANY_NUMBER}[\-" "\u2212" "]$"  # a trailing minus (ledger exports: 120-)
            rf"|^'{_SIGN}{_ANY_NUMBER}$")  # a leading apostrophe (a spreadsheet's "keep as text")
_PARENS = rf"^\(\s?({_CURRENCY}\s?)?{_ANY_NUMBER}\s?({_CURRENCY}|{_PCT})?\s?\)$"

# Any script (RE2 Unicode classes): decimal digits of category Nd (Arabic-Indic ٠-٩, Extended
# Arabic-Indic, Devanagari, Bengali, Thai, fullwidth ０-９ ...), separated by grouping or
# decimal marks (. , ' ’ · Arabic ٫ ٬ ، fullwidth ，．, any space), with signs (+ - U+2212
# and their fullwidth or small forms), currency (category Sc or a code), percent signs and
# parentheses around them.
_U_SPACE = r"[\s\p{Zs}\x{200B}-\x{200F}\x{2066}-\x{2069}\x{061C}]"  # with zero-width and direction marks
_U_SIGN = r"[+\-\x{2212}\x{2010}-\x{2015}\x{FE63}\x{FF0B}\x{FF0D}]"
_U_MARK = r"[.,'\x{2019}\x{00B7}\x{066B}\x{066C}\x{060C}\x{FF0C}\x{FF0E}\x{2E41}\s\p{Zs}]"  # one grouping mark
_U_AFFIX = rf"({_U_SPACE}|{_U_SIGN}|\p{{Sc}}|{_CURRENCY}|[%\x{{2030}}\x{{066A}}\x{{FF05}}()\x{{FF08}}\x{{FF09}}])"
_U_DECIMAL = r"[.,\x{00B7}\x{066B}\x{FF0C}\x{FF0E}]"
# plain digits, or groups of three after the first (1,234,567) or Indian groups (12,34,567),
# then an optional decimal part: a version "1.2.3" or a phone number "+41 44 123 45 67" is not a number
_U_CORE = (rf"(\p{{Nd}}+|\p{{Nd}}{{1,3}}({_U_MARK}\p{{Nd}}{{3}})+|\p{{Nd}}{{1,2}}({_U_MARK}\p{{Nd}}{{2}})*{_U_MARK}\p{{Nd}}{{3}})"
           rf"({_U_DECIMAL}\p{{Nd}}+)?")
_UNICODE_NUMBER = rf"^{_U_AFFIX}*{_U_CORE}{_U_AFFIX}*$"


@dataclass(frozen=True)
class Reading:
    """A convention under which a text column reads as numbers.

    Attributes
    ----------
    name : what the convention is, for the message (``"a decimal comma"``).
    option : the option that settles it (``"--decimal ,"``), or None where only
        converting the column first (or naming it) does.
    matched, total : cells that read as numbers under it, of the non-empty,
        non-placeholder cells.
    example_row : the first row (0-based) that needs the convention.
    """

    name: str
    option: str | None
    matched: int
    total: int
    example_row: int
    placeholders: int = 0


def _text(col: Any) -> Any:
    import pyarrow.compute as pc

    return pc.utf8_trim_whitespace(text_array(col))


def _match(text: Any, regex: str) -> np.ndarray:
    import pyarrow.compute as pc

    return np.asarray(pc.match_substring_regex(text, regex).to_numpy(zero_copy_only=False), dtype=bool)


def _is_in(text: Any, values: Iterable[str]) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    return np.asarray(pc.is_in(text, value_set=pa.array(sorted(set(values)), type=pa.string()))
                      .to_numpy(zero_copy_only=False), dtype=bool)


def numeric_reading(col: Any, *, decimal: str = ".", thousands: str | None = None,
                    missing_tokens: Iterable[str] = (), strict_numbers: np.ndarray | None = None,
                    ) -> Reading | None:
    """The convention under which the text column ``col`` is numeric, or None.

    Parameters
    ----------
    col : an Arrow array of text (chunked or not; other types are cast to text).
    decimal, thousands : the conventions already in force (``--decimal``,
        ``--thousands``): a reading they already apply is not suggested again.
    missing_tokens : cells that are missing (empty, ``NA``, the user's ``--na-values``).
    strict_numbers : a mask of cells the strict parser read as numbers (computed here
        when not given).

    Returns
    -------
    The :class:`Reading` that makes at least one and at least half of the non-empty,
    non-placeholder cells numbers (the strict numbers count for every reading), where
    the strict reading alone does not; else None. Placeholders (:data:`PLACEHOLDERS`):
    when the strict numbers are at least half of the cells other than placeholders, the
    reading is "placeholder cells", settled with ``--na-values``.
    """
    text = _text(col)
    n = len(text)
    if n == 0:
        return None
    missing = _is_in(text, set(missing_tokens) | {""})
    placeholder = _is_in(text, PLACEHOLDERS) & ~missing
    if strict_numbers is None:
        strict_numbers = _match(text, rf"^{_PLAIN}$") if decimal == "." else _match(text, rf"^{_DECIMAL_COMMA}$|^{_PLAIN}$")
    strict = np.asarray(strict_numbers, dtype=bool) & ~missing
    counted = ~missing & ~placeholder
    total = int(counted.sum())
    n_strict = int((strict & counted).sum())
    readings: list[tuple[str, str | None, str]] = []
    if decimal == ".":
        readings.append(("a decimal comma", "--decimal ,", rf"^{_DECIMAL_COMMA}$"))
    if thousands != ",":
        readings.append(("',' as a thousands separator", "--thousands ,", rf"^{_GROUP_COMMA}$"))
    if thousands != ".":
        readings.append(("'.' as a thousands separator", "--thousands ." + ("" if decimal == "," else " --decimal ,"),
                         rf"^{_GROUP_DOT}$"))
    if thousands not in tuple(_SPACES):
        readings.append(("a space as a thousands separator", "--thousands ' '", rf"^{_GROUP_SPACE}$"))
    if thousands not in tuple(_QUOTES):
        readings.append(("an apostrophe as a thousands separator", "--thousands \"'\"", rf"^{_GROUP_QUOTE}$"))
    readings.append(("currency or percent signs (or a trailing minus, a leading apostrophe)", None, _AFFIXED))
    readings.append(("accounting negatives in parentheses", None, _PARENS))
    found: list[tuple[int, str, str | None, int]] = []
    anything = np.zeros(n, dtype=bool)  # cells some reading explains (each regex runs once)
    for name, option, regex in readings:
        hits = _match(text, regex) & counted & ~strict
        anything |= hits
        m = int(hits.sum())
        if m and n_strict + m >= mostly_share * total:
            found.append((m, name, option, int(np.flatnonzero(hits)[0])))
    if found:
        # the reading that explains most cells; readings that explain as many (1,234:
        # a decimal comma or a thousands separator?) are named with it
        top = max(m for m, *_ in found)
        best = [f for f in found if f[0] == top]
        options = [o for _m, _n, o, _r in best if o]
        return Reading(" or ".join(n for _m, n, _o, _r in best), " or ".join(options) if options else None,
                       n_strict + top, total, min(r for *_x, r in best))
    # any script, sign or mark: cells that are decimal digits (Unicode Nd) once spaces,
    # signs, currency, percent and grouping marks are set aside
    hits = _match(text, _UNICODE_NUMBER) & counted & ~strict
    m = int(hits.sum())
    if m and m >= int(anything.sum()) and n_strict + m >= mostly_share * total:
        return Reading("digits, signs or grouping marks of another script or convention", None, n_strict + m, total,
                       int(np.flatnonzero(hits)[0]))
    anything |= hits
    # every convention at once (a file may mix them): still mostly numbers?
    m = int(anything.sum())
    if m and n_strict + m >= mostly_share * total:
        return Reading("a mix of number conventions", None, n_strict + m, total, int(np.flatnonzero(anything)[0]))
    ph = int(placeholder.sum())
    if ph and n_strict >= 1 and n_strict >= mostly_share * total:
        tokens = sorted(set(text.filter(_arrow_mask(placeholder)).to_pylist()))
        return Reading("placeholder cells (" + ", ".join(repr(t) for t in tokens[:6]) + ") for missing values",
                       "--na-values " + ",".join(tokens[:6]), n_strict, total, int(np.flatnonzero(placeholder)[0]),
                       placeholders=ph)
    return None


def _arrow_mask(mask: np.ndarray) -> Any:
    import pyarrow as pa

    return pa.array(mask, type=pa.bool_())


def decimal_comma_file(columns: Iterable[Any]) -> bool:
    """Are the file's decimal numbers mostly written with a decimal comma?

    Counts cells like ``1,5`` (and not a thousands grouping such as ``1,500``) against
    cells like ``1.5`` over the given text columns."""
    comma = dot = 0
    for col in columns:
        text = _text(col)
        comma += int((_match(text, rf"^{_SIGN}{_D}*,{_D}+$") & ~_match(text, rf"^{_GROUP_COMMA}$")).sum())
        dot += int((_match(text, rf"^{_SIGN}{_D}*\.{_D}+$") & ~_match(text, rf"^{_GROUP_DOT}$")).sum())
    return comma > dot


def masked_shape(value: Any, limit: int = 40) -> str:
    """A cell described without its value: ``'99,9'`` for ``'12,5'``; "a value with
    letters" for anything with a letter; at most ``limit`` characters."""
    text = str(value)
    if any(ch.isalpha() for ch in text):
        return f"a value with letters ({len(text)} characters)"
    if not text.strip():
        return "an empty-looking value"
    shape = "".join("9" if ch.isdigit() else ch for ch in text)
    return "a value shaped " + quote(shape, limit)


def quote(value: Any, limit: int = 40) -> str:
    """``repr`` of a value cut to ``limit`` characters (cron logs must not get a 10 MB line)."""
    text = str(value)
    if len(text) > limit:
        return repr(text[:limit]) + f"... ({len(text)} characters)"
    return repr(text)


def name_list(names: Iterable[str], limit: int = 12) -> str:
    """``a, b, c`` for a message: each name capped at 40 characters, at most ``limit``
    names (then ``... (N in all)``). When a name holds a comma, a quote, leading or
    trailing white space or is empty, every name is quoted (``'income, net', 'age'``),
    so the list cannot be read two ways.

    >>> name_list(["a", "b"]), name_list(["income, net", " age"])
    ('a, b', "'income, net', ' age'")
    """
    names = [str(n) for n in names]
    shown = [n if len(n) <= 40 else n[:40] + "..." for n in names[:limit]]
    if any(needs_quotes(n) for n in names):
        shown = [repr(n) for n in shown]
    more = f", ... ({len(names)} in all)" if len(names) > limit else ""
    return ", ".join(shown) + more


def needs_quotes(name: str) -> bool:
    """Would ``name`` be misread in a plain comma-separated list (or on a command line)?"""
    return (not name or name != name.strip() or any(c in name for c in ",;\"'")
            or not name.isprintable())


def option_list(names: Iterable[str]) -> str:
    """Names as a comma-list option takes them back: a name that needs it in double
    quotes (``"income, net",age``), so a suggested ``--passthrough`` can be pasted.

    >>> option_list(["income, net", "age"])
    '"income, net",age'
    """
    return ",".join('"' + n.replace('"', '""') + '"' if needs_quotes(n) else n for n in map(str, names))


def missing_column(name: str, have: Iterable[str]) -> str:
    """``no column 'x' in the input (columns: ...)``, with the column it may mean when only
    white space differs (a padded header name is matched exactly: quote it)."""
    have = [str(h) for h in have]
    near = [h for h in have if h.strip() == name.strip() and h != name]
    hint = ""
    if near:
        quoted = '"' + near[0].replace('"', '""') + '"'
        hint = f"; the input has {near[0]!r} (with spaces): name it in quotes, e.g. '{quoted}'"
    return f"no column {quote(name)} in the input (columns: {name_list(have)}){hint}"
