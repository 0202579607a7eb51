"""CSV through pyarrow: reading as text, strict number parsing, formatting, streaming.

The CSV layer under :mod:`microagg_cli.io`. Every column is read as text
(``pa.string()``), exactly as in the file (empty cells are ``""``, never null), so that
columns ``sdc`` does not protect are written back byte for byte. Protected columns are
parsed into float64 with :func:`parse_numbers` (vectorised, the rules of the pandas
reader this replaces) and written with :func:`format_floats` (the text pandas'
``DataFrame.to_csv`` wrote, so outputs stay byte-identical).

Nothing here imports pandas at module level; the rare slow paths (a CSV the Arrow
parser refuses, a cell that is not a plain number, a Parquet column of a type without
a direct text form) import it when they run.

Notes
-----
Speed. A 1,000,000 x 11 CSV (197 MB) reads in about 2 s at about 0.6 GB peak
(pandas with ``dtype=str``: 54 s, 1.8 GB); writing it takes a few seconds: every cell
is formatted by Arrow kernels, only floats outside ``[1e-4, 1e16)`` or whose Arrow
text has an exponent go through numpy's ``str`` one by one.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import hashlib
import io as _io
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator, Sequence

import numpy as np

from .errors import DataError, InvalidParameterError

__all__ = [
    "MISSING_TOKENS",
    "check_input_file",
    "BATCH_ROWS",
    "sniff_delimiter",
    "check_header",
    "read_csv_arrow",
    "parse_numbers",
    "format_floats",
    "column_text",
    "CsvWriter",
    "write_csv",
    "csv_bytes",
    "CsvSource",
    "open_csv_source",
]

#: Cell texts (after stripping white space) that mean "missing" in a numeric column.
MISSING_TOKENS = frozenset({"", "NA", "N/A", "NaN", "nan", "NULL", "null", "."})

#: Rows per record batch of :class:`CsvSource` (the Parquet engine's batch size).
BATCH_ROWS = 65_536

#: Bytes per block of the Arrow CSV reader (1 MB: faster and leaner than larger blocks here).
_BLOCK_BYTES = 1 << 20

#: Rows formatted at a time by :class:`CsvWriter` (bounds the text held in memory).
_WRITE_ROWS = 1 << 17

_BOM = b"\xef\xbb\xbf"
#: The first line spreadsheet software writes to name the delimiter (``sep=;``).
_SEP_LINE = re.compile(rb"^sep=([,;\t|])\r?\n")
_ASCII_WS = " \t\n\r\x0b\x0c"
# A plain decimal number (after the decimal mark became "."). Every text matching it
# is parsed by Arrow to the same float as pandas.to_numeric (checked on random texts
# in tests/io/test_arrow_io.py); anything else takes the exact slow path.
_NUMBER_RE = r"^[+-]?([0-9]{1,25}(\.[0-9]{0,25})?|\.[0-9]{1,25})([eE][+-]?[0-9]{1,3})?$"


# ------------------------------------------------------------------------ reading


@contextlib.contextmanager
def unlimited_fields() -> Iterator[None]:
    """Python's csv module without its field size limit (131,072 characters) for the block:
    a cell is as large as memory allows, as in the Arrow and pandas readers (a free-text
    column of an agency export may hold megabytes). The limit is the module's global
    setting, so it is restored on leaving."""
    old = csv.field_size_limit()
    try:
        csv.field_size_limit(sys.maxsize)
    except OverflowError:  # a C long of 32 bits
        csv.field_size_limit(2**31 - 1)
    try:
        yield
    finally:
        csv.field_size_limit(old)


def _straddles(exc: BaseException) -> bool:
    """Arrow's CSV reader met a cell (or row) larger than its block."""
    return "straddl" in str(exc)


#: The largest block the CSV readers grow to when a cell does not fit (then exit code 3).
_MAX_BLOCK_BYTES = 1 << 30


def sniff_delimiter(sample: str) -> str:
    """The delimiter of a CSV sample: csv.Sniffer among ``, ; TAB |``, else the most
    frequent of them in the first line, else a comma."""
    first = sample.splitlines()[0] if sample else ""
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        counts = {d: first.count(d) for d in ",;\t|"}
        best = max(counts, key=lambda d: counts[d])
        return best if counts[best] else ","


def check_header(header: list[str], name: str) -> None:
    """Refuse a missing header, an empty or duplicate name, or a header of numbers."""
    names = [h.strip() for h in header]
    if not names or all(not h for h in names):
        raise DataError(f"{name}: no header row")
    if any(not h for h in names):
        raise DataError(f"{name}: the header has an empty column name")
    seen: set[str] = set()
    for h in names:
        if h in seen:
            raise DataError(f"{name}: duplicate column {h!r} in the header")
        seen.add(h)
    numeric = 0
    for h in names:
        try:
            float(h)
            numeric += 1
        except ValueError:
            pass
    if numeric == len(names):
        raise DataError(f"{name}: the first row looks like data, not a header row")


def _check_utf8(chunks: Iterator[bytes], name: str) -> None:
    """Raise unless the bytes are UTF-8 (decoded chunk by chunk: no copy of the file)."""
    dec = codecs.getincrementaldecoder("utf-8")()
    lines = 1
    try:
        for chunk in chunks:
            dec.decode(chunk)
            lines += bytes(chunk).count(b"\n")
        dec.decode(b"", final=True)
    except UnicodeDecodeError as exc:
        line = lines + bytes(exc.object[:exc.start]).count(b"\n")
        raise DataError(undecodable(name, line, bytes(exc.object[exc.start:exc.start + 1]), "utf-8")) from None


def undecodable(name: str, line: int, byte: bytes, encoding: str) -> str:
    """The message for bytes that are not text in ``encoding``: the line and ``--encoding``."""
    hint = ("give the file's encoding with --encoding (e.g. --encoding cp1252 for Windows, "
            "--encoding latin-1)" if codecs.lookup(encoding).name == "utf-8" else
            "give the file's real encoding with --encoding")
    shown = "UTF-8" if codecs.lookup(encoding).name == "utf-8" else codecs.lookup(encoding).name
    return (f"{name}: line {line} is not {shown} text (byte 0x{byte.hex() or '??'}); "
            f"{hint}")


def recode(raw: bytes, name: str, encoding: str) -> bytes:
    """``raw`` (text in ``encoding``) as UTF-8; undecodable bytes are a :class:`DataError`
    naming the line and ``--encoding``. UTF-8 input is returned as it is (checked later)."""
    if codecs.lookup(encoding).name == "utf-8":
        return raw
    try:
        text = bytes(raw).decode(encoding)
    except UnicodeDecodeError as exc:
        line = bytes(raw[:exc.start]).count(b"\n") + 1
        raise DataError(undecodable(name, line, bytes(raw[exc.start:exc.start + 1]), encoding)) from None
    return text.encode("utf-8")


def _chunks(raw: bytes | memoryview, size: int = 1 << 23) -> Iterator[bytes]:
    view = memoryview(raw)
    for i in range(0, len(view), size):
        yield view[i:i + size]  # type: ignore[misc]


def _is_blank(body: memoryview) -> bool:
    """True when the text holds only white space (Python's ``str.strip`` sense)."""
    stripped = bytes(body[:1 << 16]).lstrip() if len(body) else b""
    if stripped and stripped[0] < 0x80:
        return False
    dec = codecs.getincrementaldecoder("utf-8")()
    for chunk in _chunks(body, 1 << 16):
        if dec.decode(chunk).strip():
            return False
    return not dec.decode(b"", final=True).strip()


def _sample(body: memoryview) -> str:
    """The first 65,536 characters (what the delimiter is sniffed from)."""
    return bytes(body[:4 * 65536]).decode("utf-8", errors="ignore")[:65536]


def _first_record(prefix: Callable[[int], bytes], size: int, delimiter: str, name: str = "<input>") -> list[str]:
    """The first record as Python's csv module reads it (lines split at ``\\n`` only,
    as from ``io.StringIO(text)``). ``prefix(k)``: the first ``k`` bytes of the text;
    ``size``: its length in bytes (the prefix read grows until the record is complete)."""
    limit = 1 << 20
    while True:
        truncated = size > limit
        text = prefix(limit).decode("utf-8", errors="ignore")
        used = [0]

        def lines(src: _io.StringIO = _io.StringIO(text)) -> Iterator[str]:
            for line in src:
                used[0] += len(line)  # noqa: B023 - read within this iteration
                yield line

        with unlimited_fields():
            try:
                first = next(csv.reader(lines(), delimiter=delimiter), [])
            except csv.Error as exc:
                raise DataError(f"{name}: malformed CSV header ({_without_cells(str(exc))})") from None
        if not truncated or used[0] < len(text):
            return first
        limit *= 4


def _arrow_options(ncols: int, delimiter: str, *, threads: bool = True,
                   block_bytes: int = _BLOCK_BYTES) -> tuple[Any, Any, Any]:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    read = pacsv.ReadOptions(use_threads=threads, block_size=block_bytes, autogenerate_column_names=True)
    parse = pacsv.ParseOptions(delimiter=delimiter, quote_char='"', double_quote=True, escape_char=False,
                               newlines_in_values=True, ignore_empty_lines=True)
    convert = pacsv.ConvertOptions(
        column_types={f"f{i}": pa.string() for i in range(ncols)}, null_values=[], true_values=[],
        false_values=[], strings_can_be_null=False, quoted_strings_can_be_null=False, check_utf8=False,
        auto_dict_encode=False,
    )
    return read, parse, convert


def _blank_values(col: Any) -> bool:
    """Any cell of only white space (a one-column file: pandas skips such lines)."""
    import pyarrow.compute as pc

    return bool(pc.any(pc.match_substring_regex(col, r"^\s+$")).as_py() or False)


def read_csv_arrow(raw: bytes, name: str, delimiter: str | None = None, *,
                   encoding: str = "utf-8") -> tuple[Any, str]:
    """Parse CSV bytes into an all-text Arrow table; return (table, delimiter).

    The checks and messages of the pandas reader this replaces: not UTF-8, empty file,
    header problems (:func:`check_header`), malformed CSV, header without data rows.
    A file the Arrow parser refuses (a short row, a line of spaces, a data row with one
    more field than the header) is read by pandas exactly as before and converted, so
    that every file reads as it did (cells pandas filled in are ``""``).
    """
    import pyarrow as pa
    import pyarrow.csv as pacsv

    raw = recode(raw, name, encoding)
    _check_utf8(_chunks(raw), name)
    start = 3 if raw[:3] == _BOM else 0
    declared = _SEP_LINE.match(bytes(raw[start:start + 16]))
    if declared:  # a spreadsheet's "sep=;" first line: it names the delimiter
        start += declared.end()
        delimiter = delimiter or declared.group(1).decode("ascii")
    body = memoryview(raw)[start:]
    if _is_blank(body):
        raise DataError(f"{name}: the file is empty")
    delim = delimiter or sniff_delimiter(_sample(body))
    header = _first_record(lambda k: bytes(body[:k]), len(body), delim, name)
    check_header(header, name)
    read, parse, convert = _arrow_options(len(header), delim)
    table = None
    try:
        try:
            whole = pacsv.read_csv(pa.BufferReader(pa.py_buffer(raw).slice(start)), read_options=read,
                                   parse_options=parse, convert_options=convert)
        except pa.ArrowInvalid as exc:
            if not _straddles(exc):
                raise
            # a cell larger than a block: one block holding the whole file
            read, parse, convert = _arrow_options(len(header), delim,
                                                  block_bytes=min(max(len(raw), 1) + 1, 2**31 - 1))
            whole = pacsv.read_csv(pa.BufferReader(pa.py_buffer(raw).slice(start)), read_options=read,
                                   parse_options=parse, convert_options=convert)
        if whole.num_columns == len(header) and not (whole.num_columns == 1 and _blank_values(whole.column(0))):
            names = [str(whole.column(i)[0].as_py()) for i in range(whole.num_columns)]
            table = whole.slice(1).rename_columns(names)
    except pa.ArrowException:  # refused by Arrow: the pandas reader decides (and words the error)
        table = None
    if table is None:
        _check_field_counts(body, name, delim, len(header))
        table = _read_with_pandas(body, name, delim)
    if table.num_rows == 0:
        raise DataError(f"{name}: the file has a header but no data rows")
    return table, delim


def _check_field_counts(body: memoryview, name: str, delim: str, width: int) -> None:
    """Refuse a row whose number of fields differs from the header's (exit code 3, line number).

    A short row must not become missing cells and a long row (or a delimiter ending
    every data row while the header has none) must not shift the columns: pandas would
    take the extra first field as a row index and move every column by one. Blank lines
    (empty or white space only) are skipped, as the readers skip them."""
    text = bytes(body).decode("utf-8")
    reader = csv.reader(_io.StringIO(text, newline=""), delimiter=delim)
    first_bad: tuple[int, int] | None = None
    trailing = rows = 0
    with unlimited_fields():
        try:
            next(reader, None)
            for record in reader:
                if not record or (len(record) == 1 and not record[0].strip()):
                    continue
                rows += 1
                if len(record) != width:
                    if first_bad is None:
                        first_bad = (reader.line_num, len(record))
                    if len(record) == width + 1 and not record[-1].strip():
                        trailing += 1
        except csv.Error as exc:  # a NUL byte, a quote left open at the end of the file
            raise DataError(f"{name}: malformed CSV near line {reader.line_num} ({_without_cells(str(exc))})"
                            ) from None
    if first_bad is None:
        return
    line, got = first_bad
    if trailing == rows:
        raise DataError(f"{name}: every data row ends with a delimiter {delim!r} the header lacks "
                        f"({width + 1} fields from line {line} on, the header has {width}); remove the trailing "
                        "delimiters or add a header name for the last column")
    kind = "short" if got < width else "long"
    raise DataError(f"{name}: malformed CSV: line {line} has {got} field(s), the header has {width} "
                    f"(a {kind} row); every row must have as many fields as the header")


def _without_cells(msg: str) -> str:
    """A parser's message without the row text it quotes (cells never reach a log), at most 120 characters."""
    msg = re.sub(r"(got \d+)\s*:.*$", r"\1", msg)
    return msg[:120]


def arrow_csv_error(exc: BaseException) -> str:
    """Arrow's CSV error in one line, the quoted row left out (``Row #2: Expected 3 columns, got 4``)."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return _without_cells(text)


def _read_with_pandas(body: memoryview, name: str, delim: str) -> Any:
    """The pandas reader of earlier versions (files the Arrow parser refuses)."""
    import pandas as pd
    import pyarrow as pa

    text = bytes(body).decode("utf-8")
    try:
        frame = pd.read_csv(_io.StringIO(text), sep=delim, dtype=str, keep_default_na=False,
                            na_filter=False, engine="c")
    except (pd.errors.ParserError, ValueError) as exc:
        msg = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise DataError(f"{name}: malformed CSV ({_without_cells(msg)})") from None
    arrays = [pa.array(frame[c].astype(object).where(frame[c].notna(), "").tolist(), type=pa.string())
              for c in frame.columns]
    return pa.table(arrays, names=[str(c) for c in frame.columns])


# ------------------------------------------------------------------------ numbers


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


# ---------------------------------------------------------------------- formatting


def _quote_chars(delimiter: str) -> str:
    """Characters that make Python's csv writer (pandas' writer) quote a field."""
    out = {delimiter, '"'}
    for c in "\r\n \t\x0b\x0c":
        buf = _io.StringIO()
        csv.writer(buf, delimiter=delimiter, lineterminator="\n").writerow(["a" + c + "b", "x"])
        if buf.getvalue().startswith('"'):
            out.add(c)
    return "".join(sorted(out))


def _char_class(chars: str) -> str:
    return "[" + "".join(f"\\x{{{ord(c):x}}}" for c in chars) + "]"


def format_floats(values: Any, decimal: str = ".") -> Any:
    """float64 values as the text pandas' ``to_csv`` writes: numpy's shortest
    round-trip ``str`` (``1.0``, ``1e-05``, ``1e+16``, ``-0.0``), NaN and null as ``""``,
    the first ``"."`` replaced by ``decimal``. Returns an Arrow string array.

    Arrow formats the bulk (the same shortest digits); its text differs from numpy's
    only in layout (``"1"`` for ``1.0``, ``"1e+15"`` for ``1000000000000000.0``), so
    values whose Arrow text is an integer get ``".0"`` and values outside numpy's
    positional range ``[1e-4, 1e16)`` or with an Arrow exponent are formatted by numpy.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(values, np.ndarray):
        arr = pa.array(np.asarray(values, dtype=np.float64), type=pa.float64(), from_pandas=True)
    elif isinstance(values, pa.ChunkedArray):
        arr = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    else:
        arr = values
    if arr.type != pa.float64():
        arr = pc.cast(arr, pa.float64())
    x = arrow_numpy(arr)  # NaN for null
    text = pc.cast(arr, pa.string())
    with np.errstate(invalid="ignore"):
        ax = np.abs(x)
        positional = ((ax >= 1e-4) & (ax < 1e16)) | (ax == 0)
    expo = np.asarray(arrow_numpy(pc.fill_null(pc.match_substring(text, "e"), False)), dtype=bool)
    missing = np.isnan(x)
    slow = ~missing & (~positional | expo)
    # integral values: Arrow writes "12", numpy "12.0" (and "-0" / "-0.0")
    whole = ~missing & ~slow & ~np.asarray(arrow_numpy(pc.fill_null(pc.match_substring(text, "."), True)),
                                           dtype=bool)
    fix = slow | whole
    if fix.any():
        idx = np.flatnonzero(fix)
        fixed = pa.array(x[idx].astype(str).tolist(), type=pa.string())
        text = pc.replace_with_mask(text, pa.array(fix), fixed)
    if missing.any():
        text = pc.if_else(pa.array(missing), "", text)
    if decimal != ".":
        text = pc.replace_substring(text, ".", decimal, max_replacements=1)
    return text


def _is_text(t: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _direct(t: Any) -> bool:
    """Types whose CSV text is made by Arrow (the rest goes through pandas)."""
    import pyarrow as pa

    return _is_text(t) or t == pa.float64() or pa.types.is_integer(t)


def column_text(col: Any, decimal: str = ".") -> Any:
    """The unquoted CSV text of a text, float64 or null-free integer column (Arrow)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if _is_text(col.type):
        return pc.fill_null(col, "") if col.null_count else col
    if col.type == pa.float64():
        return format_floats(col, decimal)
    if pa.types.is_integer(col.type) and not col.null_count:
        return pc.cast(col, pa.string())
    raise TypeError(f"no direct CSV text for {col.type}")


def _pandas_text(table: Any, name: str, delimiter: str, decimal: str) -> Any:
    """One column's CSV text as pandas writes it (types without a direct form: dates,
    booleans, decimals, lists, integers with nulls ...). ``table``: one pandas chunk."""
    import pyarrow as pa

    frame = table.select([name]).to_pandas()
    text = frame.to_csv(index=False, header=False, sep=delimiter, decimal=decimal, lineterminator="\n")
    cells = [row[0] if row else "" for row in csv.reader(_io.StringIO(text, newline=""), delimiter=delimiter)]
    return pa.array(cells, type=pa.string())


class CsvWriter:
    """Write Arrow data as CSV, batch by batch, exactly as pandas' ``to_csv`` did.

    The header is written at once; :meth:`write` appends tables or record batches of
    ``schema``; :meth:`close` (or leaving the ``with`` block) flushes. The bytes are
    those of :func:`write_csv` for the whole table, whatever the batch sizes.

    Parameters
    ----------
    fh : binary file object.
    schema : the Arrow schema of the data (its pandas metadata decides how pandas would
        have shown columns of types without a direct text form).
    delimiter, decimal : field separator and decimal mark of floats.

    Notes
    -----
    Text columns are written as they are, float64 columns by :func:`format_floats`,
    null-free integers as digits; other types (Parquet input only) as pandas writes
    them, formatted in pandas' chunks of ``100_000 // ncols`` rows (a chunk of dates at
    midnight prints without times), which is why rows are then held back until a chunk
    is complete. Fields holding the delimiter, a quote or a line break are quoted, a
    lone empty field is written ``""`` (Python's csv writer, which pandas uses).
    """

    def __init__(self, fh: BinaryIO, schema: Any, *, delimiter: str = ",", decimal: str = "."):
        import pyarrow as pa
        import pyarrow.compute as pc

        if len(delimiter) != 1:
            raise InvalidParameterError("the delimiter must be one character")
        self.fh = fh
        self.schema = schema
        self.delimiter = delimiter
        self.decimal = decimal
        quote_chars = _quote_chars(delimiter)
        self._pattern = _char_class(quote_chars)
        self._plain_floats = not (set(quote_chars) & set("0123456789+-.einfa" + decimal))
        self._pc, self._pa = pc, pa
        self._chunk = (100_000 // (len(schema.names) or 1)) or 1
        self._slow = [not _direct(f.type) for f in schema]
        self._pending: list[Any] = []
        self._pending_rows = 0
        buf = _io.StringIO()
        csv.writer(buf, delimiter=delimiter, lineterminator="\n").writerow([str(n) for n in schema.names])
        self.fh.write(buf.getvalue().encode("utf-8"))
        self.rows = 0

    def __enter__(self) -> CsvWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        if exc[0] is None:
            self.close()

    def write(self, data: Any) -> None:
        """Append a ``pa.Table`` or ``pa.RecordBatch`` of the writer's schema."""
        pa = self._pa
        table = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
        if table.schema.names != self.schema.names:
            raise ValueError("the data's columns differ from the writer's schema")
        if table.schema.metadata != self.schema.metadata:  # pandas dtypes come from the writer's schema
            table = table.replace_schema_metadata(self.schema.metadata)
        if not any(self._slow):
            for start in range(0, table.num_rows, _WRITE_ROWS):
                self._emit(table.slice(start, _WRITE_ROWS))
            return
        self._pending.append(table)
        self._pending_rows += table.num_rows
        if self._pending_rows < self._chunk:
            return
        whole = pa.concat_tables(self._pending)
        full = (whole.num_rows // self._chunk) * self._chunk
        for start in range(0, full, self._chunk):
            self._emit(whole.slice(start, self._chunk))
        rest = whole.slice(full)
        self._pending = [rest] if rest.num_rows else []
        self._pending_rows = rest.num_rows

    def close(self) -> None:
        """Write rows held back (see Notes)."""
        if self._pending:
            whole = self._pa.concat_tables(self._pending)
            self._pending, self._pending_rows = [], 0
            if whole.num_rows:
                self._emit(whole)

    def _field(self, table: Any, j: int) -> Any:
        pc = self._pc
        if self._slow[j]:
            text = _pandas_text(table, self.schema.names[j], self.delimiter, self.decimal)
        else:
            col = table.column(j)
            if self._pa.types.is_integer(col.type) and col.null_count:
                text = _pandas_text(table, self.schema.names[j], self.delimiter, self.decimal)
            else:
                text = column_text(col, self.decimal)
        if _is_text(text.type) and text.type != self._pa.string():
            text = pc.cast(text, self._pa.string())
        if self._plain_floats and not self._slow[j] and self.schema.types[j] == self._pa.float64():
            return text  # digits, "-", "+", "e", "." / the decimal mark, "inf": nothing to quote
        needs = pc.match_substring_regex(text, self._pattern)
        if pc.any(needs).as_py():
            quoted = pc.binary_join_element_wise('"', pc.replace_substring(text, '"', '""'), '"', "")
            text = pc.if_else(needs, quoted, text)
        return text

    def _emit(self, table: Any) -> None:
        if not table.num_rows:
            return
        pa, pc = self._pa, self._pc
        fields = [self._field(table, j) for j in range(table.num_columns)]
        if len(fields) == 1:  # Python's csv writer quotes a lone empty field
            fields[0] = pc.if_else(pc.equal(fields[0], ""), '""', fields[0])
            line = pc.binary_join_element_wise(fields[0], "\n", "")
        else:
            line = pc.binary_join_element_wise(*fields, self.delimiter)
            line = pc.binary_join_element_wise(line, "\n", "")
        if isinstance(line, pa.ChunkedArray):
            chunks = line.chunks
        else:
            chunks = [line]
        for chunk in chunks:
            offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int32 if chunk.type == pa.string() else np.int64)
            lo, hi = int(offsets[chunk.offset]), int(offsets[chunk.offset + len(chunk)])
            self.fh.write(memoryview(chunk.buffers()[2])[lo:hi])
        self.rows += table.num_rows


def write_csv(table: Any, fh: BinaryIO, *, delimiter: str = ",", decimal: str = ".") -> None:
    """Write a whole Arrow table as CSV into a binary file object (see :class:`CsvWriter`)."""
    with CsvWriter(fh, table.schema, delimiter=delimiter, decimal=decimal) as writer:
        writer.write(table)


def csv_bytes(table: Any, *, delimiter: str = ",", decimal: str = ".") -> bytes:
    """The CSV text of an Arrow table, as bytes."""
    buf = _io.BytesIO()
    write_csv(table, buf, delimiter=delimiter, decimal=decimal)
    return buf.getvalue()


# ----------------------------------------------------------------------- streaming


@dataclass(frozen=True)
class CsvSource:
    """A CSV file opened for streaming, the interface of
    :class:`microagg_cli.engines.ParquetSource` (all columns text).

    Attributes
    ----------
    path : the file.
    files : ``(path,)``.
    rows : ``(number of data rows,)``.
    schema : every column ``pa.string()``, in file order.
    metadata : ``{}`` (a CSV has no schema metadata).
    is_dataset : False.
    delimiter, decimal : the dialect found or given.

    Notes
    -----
    :func:`open_csv_source` reads the file once to check it and count its rows; every
    :meth:`batches` call reads it again (pyarrow's streaming reader, one block of
    16 MB and one batch in memory). A file the streaming parser refuses (a row with
    fewer fields than the header, which the in-memory reader pads with empty cells) is
    a :class:`DataError` here.
    """

    path: Path
    files: tuple[Path, ...]
    rows: tuple[int, ...]
    schema: Any
    metadata: dict[bytes, bytes] = field(default_factory=dict)
    is_dataset: bool = False
    delimiter: str = ","
    decimal: str = "."
    block_bytes: int = _BLOCK_BYTES

    @property
    def n_rows(self) -> int:
        return int(sum(self.rows))

    @property
    def columns(self) -> list[str]:
        return list(self.schema.names)

    def relative_names(self) -> list[str]:
        return [self.path.name]

    def _reader(self) -> Any:
        import pyarrow.csv as pacsv

        read, parse, convert = _arrow_options(len(self.schema.names), self.delimiter, threads=False,
                                              block_bytes=self.block_bytes)
        return pacsv.open_csv(str(self.path), read_options=read, parse_options=parse, convert_options=convert)

    def batches(self, columns: Sequence[str] | None = None, *, batch_rows: int = BATCH_ROWS) -> Iterator[Any]:
        """Record batches of ``columns`` (default all, in file order), ``batch_rows`` rows
        each (the last one shorter), in file order."""
        import pyarrow as pa

        if batch_rows < 1:
            raise ValueError("batch_rows must be at least 1")
        names = self.columns if columns is None else list(columns)
        idx = [self.columns.index(c) for c in names]
        schema = pa.schema([self.schema.field(i) for i in idx])
        pending: list[Any] = []
        n_pending = 0
        first = True
        try:
            for batch in self._reader():
                if first:  # the header row
                    batch, first = batch.slice(1), False
                batch = pa.RecordBatch.from_arrays([batch.column(i) for i in idx], schema=schema)
                pending.append(batch)
                n_pending += batch.num_rows
                while n_pending >= batch_rows:
                    whole = pa.Table.from_batches(pending, schema=schema).combine_chunks()
                    yield whole.slice(0, batch_rows).to_batches()[0]
                    rest = whole.slice(batch_rows)
                    pending = rest.to_batches() if rest.num_rows else []
                    n_pending = rest.num_rows
        except pa.ArrowInvalid as exc:
            raise DataError(f"{self.path}: malformed CSV ({arrow_csv_error(exc)})") from None
        if n_pending:
            yield pa.Table.from_batches(pending, schema=schema).combine_chunks().to_batches()[0]

    def read_rows(self, start: int, stop: int, columns: Sequence[str] | None = None) -> Any:
        """Rows ``start:stop`` of ``columns`` as an Arrow table (streams up to ``stop``)."""
        import pyarrow as pa

        names = self.columns if columns is None else list(columns)
        out, row = [], 0
        for batch in self.batches(names):
            end = row + batch.num_rows
            if end > start and row < stop:
                out.append(batch.slice(max(start - row, 0), min(stop, end) - max(start, row)))
            row = end
            if row >= stop:
                break
        return pa.Table.from_batches(out, schema=pa.schema([self.schema.field(c) for c in names]))

    def read_columns(self, names: Sequence[str]) -> Any:
        """Columns ``names`` of every row, as an Arrow table (one pass over the file)."""
        import pyarrow as pa

        schema = pa.schema([self.schema.field(c) for c in names])
        return pa.Table.from_batches(list(self.batches(names)), schema=schema)

    def read_column(self, name: str) -> Any:
        """One column, as a single-column Arrow table."""
        return self.read_columns([name])

    def fingerprint(self) -> dict[str, Any]:
        """Name, size and SHA-256 of the file."""
        digest = hashlib.sha256()
        with open(self.path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
        return {"name": self.path.name, "size_bytes": self.path.stat().st_size, "sha256": digest.hexdigest()}


def check_input_file(src: Path) -> None:
    """An input file exists, is a file and is readable (:class:`DataError` otherwise)."""
    if not src.exists():
        raise DataError(f"input file {str(src)!r} does not exist")
    if src.is_dir():
        raise DataError(f"input {str(src)!r} is a directory, not a file")
    if not os.access(src, os.R_OK):
        raise DataError(f"input file {str(src)!r} is not readable")


def open_csv_source(path: str | Path, *, delimiter: str | None = None, decimal: str = ".") -> CsvSource:
    """Open a CSV file for streaming: the checks of :func:`microagg_cli.io.read_table`
    (missing, unreadable, not UTF-8, empty, header, no data rows), made while reading
    the file once to count its rows; the file is never held whole in memory."""
    import pyarrow as pa

    if str(path) == "-":
        raise InvalidParameterError("streaming mode reads a file, not stdin")
    src = Path(path)
    check_input_file(src)
    name = str(src)
    with open(src, "rb") as fh:
        _check_utf8(iter(lambda: fh.read(1 << 23), b""), name)
        fh.seek(0)
        head = fh.read(1 << 20)
    start = 3 if head[:3] == _BOM else 0
    body = memoryview(head)[start:]
    if _is_blank(body):
        with open(src, "rb") as fh:
            fh.seek(start)
            if not any(c.strip() for c in iter(lambda: fh.read(1 << 23).decode("utf-8", "ignore"), "")):
                raise DataError(f"{name}: the file is empty")
    delim = delimiter or sniff_delimiter(_sample(body))

    def prefix(k: int) -> bytes:
        with open(src, "rb") as fh:
            fh.seek(start)
            return fh.read(k)

    header = _first_record(prefix, src.stat().st_size - start, delim, name)
    check_header(header, name)
    ncols = len(header)
    block = _BLOCK_BYTES
    while True:  # a cell larger than the block: a larger block (the batches stay as they are)
        try:
            rows, names = _count_rows(src, name, ncols, delim, decimal, block)
            break
        except pa.ArrowInvalid as exc:
            if _straddles(exc) and block < _MAX_BLOCK_BYTES:
                block *= 8
                continue
            if _straddles(exc):
                raise DataError(f"{name}: a cell or row is larger than {_MAX_BLOCK_BYTES >> 20} MB, "
                                "the most the streaming reader holds") from None
            raise DataError(f"{name}: malformed CSV ({arrow_csv_error(exc)})") from None
    if not rows:
        raise DataError(f"{name}: the file has a header but no data rows")
    schema = pa.schema([pa.field(n, pa.string()) for n in (names or [])])
    return CsvSource(src, (src,), (rows,), schema, {}, False, delim, decimal, block)


def _count_rows(src: Path, name: str, ncols: int, delim: str, decimal: str, block: int) -> tuple[int, list[str] | None]:
    """Data rows and header names of a CSV file, read in blocks of ``block`` bytes."""
    import pyarrow as pa

    draft = CsvSource(src, (src,), (0,), pa.schema([pa.field(f"f{i}", pa.string()) for i in range(ncols)]),
                      {}, False, delim, decimal, block)
    rows = 0
    names: list[str] | None = None
    for batch in draft._reader():
        if names is None:
            names = [str(batch.column(i)[0].as_py()) for i in range(batch.num_columns)]
            if batch.num_columns != ncols:
                raise DataError(f"{name}: malformed CSV (the header has {ncols} fields as csv reads it, "
                                f"{batch.num_columns} as Arrow reads it)")
            rows -= 1
        if ncols == 1 and _blank_values(batch.column(0)):
            raise DataError(f"{name}: a line holds only white space; read this file in memory")
        rows += batch.num_rows
    return rows, names
