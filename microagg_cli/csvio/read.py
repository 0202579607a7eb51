"""Reading a CSV file as an all-text Arrow table.

Delimiter sniffing, header checks, UTF-8 and other encodings, the Arrow reader with
its checks on field counts and blank lines, and the pandas fallback for a file the
Arrow parser refuses. Every cell is read as text, exactly as in the file (empty cells
are ``""``, never null). The block reader helpers here are shared with
:mod:`microagg_cli.csvio.stream`.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import io as _io
import re
import sys
from typing import Any, Callable, Iterator

from ..errors import DataError

#: Bytes per block of the Arrow CSV reader (1 MB: faster and leaner than larger blocks here).
BLOCK_BYTES = 1 << 20

BOM = b"\xef\xbb\xbf"
#: The first line spreadsheet software writes to name the delimiter (``sep=;``).
_SEP_LINE = re.compile(rb"^sep=([,;\t|])\r?\n")


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


def straddles(exc: BaseException) -> bool:
    """Arrow's CSV reader met a cell (or row) larger than its block."""
    return "straddl" in str(exc)


#: The largest block the CSV readers grow to when a cell does not fit (then exit code 3).
MAX_BLOCK_BYTES = 1 << 30


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


def check_utf8(chunks: Iterator[bytes], name: str) -> None:
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


def is_blank(body: memoryview) -> bool:
    """True when the text holds only white space (Python's ``str.strip`` sense)."""
    stripped = bytes(body[:1 << 16]).lstrip() if len(body) else b""
    if stripped and stripped[0] < 0x80:
        return False
    dec = codecs.getincrementaldecoder("utf-8")()
    for chunk in _chunks(body, 1 << 16):
        if dec.decode(chunk).strip():
            return False
    return not dec.decode(b"", final=True).strip()


def sample(body: memoryview) -> str:
    """The first 65,536 characters (what the delimiter is sniffed from)."""
    return bytes(body[:4 * 65536]).decode("utf-8", errors="ignore")[:65536]


def first_record(prefix: Callable[[int], bytes], size: int, delimiter: str, name: str = "<input>") -> list[str]:
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


def arrow_options(ncols: int, delimiter: str, *, threads: bool = True,
                   block_bytes: int = BLOCK_BYTES) -> tuple[Any, Any, Any]:
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


def blank_values(col: Any) -> bool:
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
    check_utf8(_chunks(raw), name)
    start = 3 if raw[:3] == BOM else 0
    declared = _SEP_LINE.match(bytes(raw[start:start + 16]))
    if declared:  # a spreadsheet's "sep=;" first line: it names the delimiter
        start += declared.end()
        delimiter = delimiter or declared.group(1).decode("ascii")
    body = memoryview(raw)[start:]
    if is_blank(body):
        raise DataError(f"{name}: the file is empty")
    delim = delimiter or sniff_delimiter(sample(body))
    header = first_record(lambda k: bytes(body[:k]), len(body), delim, name)
    check_header(header, name)
    read, parse, convert = arrow_options(len(header), delim)
    table = None
    try:
        try:
            whole = pacsv.read_csv(pa.BufferReader(pa.py_buffer(raw).slice(start)), read_options=read,
                                   parse_options=parse, convert_options=convert)
        except pa.ArrowInvalid as exc:
            if not straddles(exc):
                raise
            # a cell larger than a block: one block holding the whole file
            read, parse, convert = arrow_options(len(header), delim,
                                                  block_bytes=min(max(len(raw), 1) + 1, 2**31 - 1))
            whole = pacsv.read_csv(pa.BufferReader(pa.py_buffer(raw).slice(start)), read_options=read,
                                   parse_options=parse, convert_options=convert)
        if whole.num_columns == len(header) and not (whole.num_columns == 1 and blank_values(whole.column(0))):
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

