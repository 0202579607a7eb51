"""Writing Arrow tables as CSV, byte-identical to pandas.

:func:`format_floats` gives the text pandas' ``DataFrame.to_csv`` wrote for a float,
:func:`column_text` the text of any column, and :class:`CsvWriter` writes tables batch
by batch, quoting as Python's csv writer does; :func:`write_csv` and :func:`csv_bytes`
write one table whole.
"""

from __future__ import annotations

import csv
import io as _io
from typing import Any, BinaryIO

import numpy as np

from ..errors import InvalidParameterError
from .numbers import arrow_numpy

#: Rows formatted at a time by :class:`CsvWriter` (bounds the text held in memory).
_WRITE_ROWS = 1 << 17


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
    # (no Python value is converted to Arrow below: pyarrow imports pandas, 0.1-0.2 s, the
    # first time it does; null matches count as False / True through Kleene logic)
    e = pc.match_substring(text, "e")
    expo = np.asarray(arrow_numpy(pc.and_kleene(e, pc.is_valid(e))), dtype=bool)
    missing = np.isnan(x)
    slow = ~missing & (~positional | expo)
    # integral values: Arrow writes "12", numpy "12.0" (and "-0" / "-0.0")
    dot = pc.match_substring(text, ".")
    whole = ~missing & ~slow & ~np.asarray(arrow_numpy(pc.or_kleene(dot, pc.is_null(dot))), dtype=bool)
    fix = slow | whole
    if fix.any():
        idx = np.flatnonzero(fix)
        fixed = _strings(x[idx].astype(str).tolist())
        text = pc.replace_with_mask(text, _bool_array(fix), fixed)
    if missing.any():
        text = pc.replace_with_mask(text, _bool_array(missing), _strings([""] * int(missing.sum())))
    if decimal != ".":
        text = pc.replace_substring(text, ".", decimal, max_replacements=1)
    return text


def _bool_array(mask: np.ndarray) -> Any:
    """A numpy bool array as an Arrow boolean array (from its bits: no pandas)."""
    import pyarrow as pa

    bits = np.packbits(np.asarray(mask, dtype=bool), bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), int(mask.size), [None, pa.py_buffer(bits)])


def _strings(values: list[str]) -> Any:
    """Python strings as an Arrow string array, built from its offsets and UTF-8 bytes
    (no pandas); an element of it is an Arrow string scalar made the same way."""
    import pyarrow as pa

    encoded = [v.encode("utf-8") for v in values]
    offsets = np.zeros(len(values) + 1, dtype=np.int32)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return pa.Array.from_buffers(pa.string(), len(values), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))])


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
        # the separators as Arrow scalars made without pandas (see format_floats)
        self._lit = dict(zip(('"', '""', "", "\n", delimiter), _strings(['"', '""', "", "\n", delimiter])))
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
            lit = self._lit
            quoted = pc.binary_join_element_wise(lit['"'], pc.replace_substring(text, '"', '""'), lit['"'], lit[""])
            text = pc.if_else(needs, quoted, text)
        return text

    def _emit(self, table: Any) -> None:
        if not table.num_rows:
            return
        pa, pc = self._pa, self._pc
        fields = [self._field(table, j) for j in range(table.num_columns)]
        lit = self._lit
        if len(fields) == 1:  # Python's csv writer quotes a lone empty field
            fields[0] = pc.if_else(pc.equal(fields[0], lit[""]), lit['""'], fields[0])
            line = pc.binary_join_element_wise(fields[0], lit["\n"], lit[""])
        else:
            line = pc.binary_join_element_wise(*fields, lit[self.delimiter])
            line = pc.binary_join_element_wise(line, lit["\n"], lit[""])
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

