"""Strict parsing of text columns into float64 numbers.

:func:`parse_numbers` parses a text column with the rules of the pandas reader it
replaces (missing tokens, decimal mark, thousands separator), vectorised through
Arrow for plain numbers and exactly, one by one, for every other text;
:func:`arrow_numpy` and :func:`float_arrow` move arrays between Arrow and numpy
without importing pandas.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

import numpy as np

#: Cell texts (after stripping white space) that mean "missing" in a numeric column.
MISSING_TOKENS = frozenset({"", "NA", "N/A", "NaN", "nan", "NULL", "null", "."})

_ASCII_WS = " \t\n\r\x0b\x0c"
# A plain decimal number (after the decimal mark became "."). Every text matching it
# is parsed by Arrow to the same float as pandas.to_numeric (checked on random texts
# in tests/io/test_arrow_io.py); anything else takes the exact slow path.
_NUMBER_RE = r"^[+-]?([0-9]{1,25}(\.[0-9]{0,25})?|\.[0-9]{1,25})([eE][+-]?[0-9]{1,3})?$"


def arrow_numpy(arr: Any) -> np.ndarray:
    """An Arrow array (or chunked array) as a new numpy array, as ``to_numpy(
    zero_copy_only=False)`` gives it (NaN for null floats), without importing pandas.

    pyarrow's general conversion imports pandas (0.2 s) the first time it runs. Numbers
    and booleans without nulls, and floats with nulls, are read from the Arrow buffers
    here; any other array (text, nulls in integers or booleans) takes pyarrow's way.
    """
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    t, n = arr.type, len(arr)
    if n == 0:
        return np.asarray(arr.to_numpy(zero_copy_only=False))
    if pa.types.is_boolean(t) and not arr.null_count:
        return _bitmap(arr.buffers()[1], arr.offset, n)
    if pa.types.is_floating(t) or (pa.types.is_integer(t) and not arr.null_count):
        kind = "f" if pa.types.is_floating(t) else "i" if pa.types.is_signed_integer(t) else "u"
        dtype = np.dtype(f"{kind}{t.bit_width // 8}")
        out = np.frombuffer(arr.buffers()[1], dtype=dtype)[arr.offset:arr.offset + n].copy()
        if arr.null_count:  # floats: NaN for null
            out[~_bitmap(arr.buffers()[0], arr.offset, n)] = np.nan
        return out
    return np.asarray(arr.to_numpy(zero_copy_only=False))


def _bitmap(buffer: Any, offset: int, n: int) -> np.ndarray:
    """An Arrow bitmap (values of a boolean array, or validity) as n bools from ``offset``."""
    bits = np.frombuffer(buffer, dtype=np.uint8)
    return np.unpackbits(bits, bitorder="little")[offset:offset + n].astype(bool)


def float_arrow(values: np.ndarray) -> Any:
    """float64 values as an Arrow array, NaN as null: ``pa.array(values,
    type=pa.float64(), from_pandas=True)`` without importing pandas (see
    :func:`arrow_numpy`). The values are copied, as pyarrow's conversion does."""
    import pyarrow as pa

    v = np.array(values, dtype=np.float64, order="C")  # a copy: later writes to values stay out
    nan = np.isnan(v)
    n_null = int(nan.sum())
    validity = pa.py_buffer(np.packbits(~nan, bitorder="little")) if n_null else None
    return pa.Array.from_buffers(pa.float64(), len(v), [validity, pa.py_buffer(v)], null_count=n_null)


def _parse_slow(texts: list[Any], decimal: str, tokens: frozenset[str] = MISSING_TOKENS,
                ) -> tuple[np.ndarray, np.ndarray]:
    """The pandas parse of earlier versions: (numbers with NaN where missing, bad mask)."""
    import pandas as pd

    values = pd.Series(texts, dtype=object)
    text = values.astype(str).str.strip()
    extra = text.isin(tokens - MISSING_TOKENS).to_numpy() if tokens is not MISSING_TOKENS else None
    if decimal != ".":
        text = text.str.replace(decimal, ".", regex=False)
    missing = text.isin(MISSING_TOKENS).to_numpy()
    if extra is not None:
        missing |= extra
    num = np.array(pd.to_numeric(text.where(~missing, None), errors="coerce"), dtype=np.float64)
    bad = np.isnan(num) & ~missing
    num[missing] = np.nan
    return num, bad


def missing_tokens(na_values: Sequence[str] = ()) -> frozenset[str]:
    """The cells read as missing: :data:`MISSING_TOKENS` and the user's ``--na-values``."""
    return MISSING_TOKENS | frozenset(v.strip() for v in na_values) if na_values else MISSING_TOKENS


def _strip_thousands(text: Any, thousands: str, decimal: str) -> Any:
    """Remove the thousands separator from cells grouped by it (``1,234,567.5``); a cell
    holding the separator anywhere else (``1,5`` with ``--thousands ,``) becomes bad."""
    import pyarrow.compute as pc

    sep = re.escape(thousands)
    grouped = pc.match_substring_regex(
        text, rf"^[+-]?([0-9]{{1,3}}({sep}[0-9]{{3}})+|[0-9]{{1,2}}({sep}[0-9]{{2}})*{sep}[0-9]{{3}})"
              rf"({re.escape(decimal)}[0-9]*)?([eE][+-]?[0-9]{{1,3}})?$")  # 1,234,567 and 12,34,567
    text = pc.if_else(grouped, pc.replace_substring(text, thousands, ""), text)
    stray = pc.match_substring(text, thousands)
    return pc.if_else(stray, "\x00", text)


def text_array(col: Any) -> Any:
    """One Arrow string array of a column (chunks joined, other types cast, null = ``""``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        col = pc.cast(col, pa.string())
    if col.null_count:
        col = pc.fill_null(col, "")
    return col


def parse_numbers(col: Any, decimal: str = ".", *, thousands: str | None = None,
                  na_values: Sequence[str] = ()) -> tuple[np.ndarray, np.ndarray]:
    """Strict float parse of a text column: (float64 with NaN where missing, bad mask).

    ``col``: an Arrow string array (chunked or not; null = ``""``). The rules: a cell
    is stripped of white space and its decimal mark becomes ``"."``; then one of
    :data:`MISSING_TOKENS` is missing, a number is parsed as pandas.to_numeric does,
    anything else (``"x"``, ``"1 000"``) is bad. Plain numbers are parsed by Arrow in
    bulk; other cells (``"inf"``, unusual white space, very long digit strings) by the
    pandas code of earlier versions, cell by cell, so the results are those of that code.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    col = text_array(col)
    # Only spaces are trimmed here: a cell with any other character outside printable
    # ASCII (a tab, a no-break space) matches neither a token nor a plain number and
    # takes the slow path, whose idea of white space is the old code's by construction.
    text = pc.utf8_trim(col, " ")
    tokens = missing_tokens(na_values)
    if na_values:
        col = pc.if_else(pc.is_in(pc.utf8_trim_whitespace(col), value_set=pa.array(sorted(tokens))), "", col)
        text = pc.utf8_trim(col, " ")
    if thousands:
        col = _strip_thousands(pc.utf8_trim_whitespace(col), thousands, decimal)
        text = col
    if decimal != ".":
        text = pc.replace_substring(text, decimal, ".")
    plain = np.asarray(arrow_numpy(pc.match_substring_regex(text, _NUMBER_RE)), dtype=bool)
    bad = np.zeros(len(col), dtype=bool)
    missing = np.zeros(len(col), dtype=bool)
    if plain.all():  # the usual protected column: one cast
        num = np.array(arrow_numpy(pc.cast(text, pa.float64())), dtype=np.float64)
    else:
        num = np.array(arrow_numpy(pc.cast(pc.if_else(pa.array(plain), text, None), pa.float64())),
                       dtype=np.float64)  # NaN where not plain
        rest = np.flatnonzero(~plain)
        is_token = np.asarray(arrow_numpy(pc.is_in(text.take(pa.array(rest)),
                                                    value_set=pa.array(sorted(tokens)))), dtype=bool)
        missing[rest[is_token]] = True
        other = rest[~is_token]
        if other.size:
            slow_num, slow_bad = _parse_slow(col.take(pa.array(other)).to_pylist(), decimal, tokens)
            num[other] = slow_num
            bad[other] = slow_bad
    num[missing] = np.nan
    neg_zero = (num == 0) & np.signbit(num)
    if neg_zero.any():
        # pandas parses a column of integers as int64 ("-0" -> 0.0), other columns as
        # floats ("-0" -> -0.0): the whole column decides, so let the old code decide.
        return _parse_slow(col.to_pylist(), decimal, tokens)
    return num, bad

