"""Streaming a CSV file in record batches.

:func:`open_csv_source` checks a CSV file (header, encoding, field counts) and counts
its rows without holding it, and returns a :class:`CsvSource` that yields record
batches of :data:`BATCH_ROWS` rows, the interface of the Parquet source used by the
streaming engine.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

from ..errors import DataError, InvalidParameterError
from .read import (
    BLOCK_BYTES,
    BOM,
    MAX_BLOCK_BYTES,
    arrow_csv_error,
    arrow_options,
    blank_values,
    check_header,
    check_utf8,
    first_record,
    is_blank,
    sample,
    sniff_delimiter,
    straddles,
)

#: Rows per record batch of :class:`CsvSource` (the Parquet engine's batch size).
BATCH_ROWS = 65_536


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
    block_bytes: int = BLOCK_BYTES

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

        read, parse, convert = arrow_options(len(self.schema.names), self.delimiter, threads=False,
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
        check_utf8(iter(lambda: fh.read(1 << 23), b""), name)
        fh.seek(0)
        head = fh.read(1 << 20)
    start = 3 if head[:3] == BOM else 0
    body = memoryview(head)[start:]
    if is_blank(body):
        with open(src, "rb") as fh:
            fh.seek(start)
            if not any(c.strip() for c in iter(lambda: fh.read(1 << 23).decode("utf-8", "ignore"), "")):
                raise DataError(f"{name}: the file is empty")
    delim = delimiter or sniff_delimiter(sample(body))

    def prefix(k: int) -> bytes:
        with open(src, "rb") as fh:
            fh.seek(start)
            return fh.read(k)

    header = first_record(prefix, src.stat().st_size - start, delim, name)
    check_header(header, name)
    ncols = len(header)
    block = BLOCK_BYTES
    while True:  # a cell larger than the block: a larger block (the batches stay as they are)
        try:
            rows, names = _count_rows(src, name, ncols, delim, decimal, block)
            break
        except pa.ArrowInvalid as exc:
            if straddles(exc) and block < MAX_BLOCK_BYTES:
                block *= 8
                continue
            if straddles(exc):
                raise DataError(f"{name}: a cell or row is larger than {MAX_BLOCK_BYTES >> 20} MB, "
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
        if ncols == 1 and blank_values(batch.column(0)):
            raise DataError(f"{name}: a line holds only white space; read this file in memory")
        rows += batch.num_rows
    return rows, names
