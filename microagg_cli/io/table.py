"""The table model and reading: :class:`Table` and :func:`read_table`.

A :class:`Table` holds a file as read, as a ``pyarrow.Table`` (CSV as text, every column
``pa.string()``; Parquet with its own schema and metadata; Excel and the SPSS, Stata and
SAS formats through :mod:`microagg_cli.io.xlsx` and :mod:`microagg_cli.statfiles`).
:func:`detect_format` tells the format from an option or the file's extension,
:func:`read_table` reads a file (or CSV on stdin, gzip-compressed text included) and
records the fingerprint of the very bytes it parsed (:func:`file_fingerprint`);
:func:`pandas_index_columns` names a Parquet file's stored pandas index, which is not
a data column. Judging columns is :mod:`microagg_cli.io.columns`' work.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from ..csvio import check_input_file, read_csv_arrow, sniff_delimiter
from ..errors import DataError, InvalidParameterError
from ..request import ReadOptions
from ..statfiles import INPUT_FORMATS, STAT_FORMATS, STAT_SUFFIXES, schema_json  # SPSS, Stata, SAS
from .paths import check_unchanged, input_stamp

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pyarrow as pa

_FORMATS = {".csv": "csv", ".tsv": "csv", ".txt": "csv", ".parquet": "parquet", ".pq": "parquet", ".xlsx": "xlsx"}
_FORMATS.update(STAT_SUFFIXES)  # SPSS, Stata, SAS: microagg_cli.statfiles
#: Text formats whose gzip-compressed form (``.csv.gz``) is read and written as well.
_TEXT_SUFFIXES = (".csv", ".tsv", ".txt")
_GZIP_MAGIC = b"\x1f\x8b"


def is_gzip(path: str | Path | None) -> bool:
    """Is ``path`` a gzip-compressed text file by its name (``.csv.gz``, ``.tsv.gz``)?"""
    return path is not None and str(path) != "-" and str(path).lower().endswith(".gz")


def _gunzip(raw: bytes, name: str) -> bytes:
    import gzip
    import zlib

    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as exc:
        raise DataError(f"{name}: not a readable gzip file ({str(exc) or type(exc).__name__})") from None


def is_arrow_table(obj: Any) -> bool:
    """Is ``obj`` a ``pyarrow.Table`` (without importing pyarrow for anything else)?"""
    mod = type(obj).__module__
    if not mod.startswith("pyarrow"):
        return False
    import pyarrow as pa

    return isinstance(obj, pa.Table)


class Table:
    """A data file held in memory.

    ``Table(data, fmt, path, delimiter=",", decimal=".")`` with ``data`` a
    ``pyarrow.Table`` (what :func:`read_table` builds) or a pandas DataFrame (kept for
    callers that build tables from frames; such a table behaves exactly as before).

    Attributes
    ----------
    data : ``pyarrow.Table``, the file as read. CSV: every column ``pa.string()``, the
        text exactly as in the file (empty cells ``""``, never null). Parquet: the file's
        own schema and schema metadata. (A DataFrame-built table: ``from_pandas``.)
    frame : a pandas view, built from ``data`` on first use and cached: CSV text columns
        (``str``), Parquet ``to_pandas()`` (the index restored from the pandas metadata).
    fmt : ``"csv"`` or ``"parquet"``.
    path : where it was read from (``None`` for stdin).
    delimiter, decimal : the CSV dialect found or given.
    thousands : the thousands separator removed before parsing numbers (``--thousands``), or None.
    na_values : extra cells read as missing (``--na-values``), besides the usual tokens.
    """

    def __init__(self, data: Any, fmt: str = "csv", path: Path | None = None, delimiter: str = ",",
                 decimal: str = ".", thousands: str | None = None, na_values: Sequence[str] = ()):
        if is_arrow_table(data):
            self._data, self._frame, self._arrow = data, None, True
        else:
            self._data, self._frame, self._arrow = None, data, False
        self.fmt = fmt
        self.path = path
        self.delimiter = delimiter
        self.decimal = decimal
        self.thousands = thousands
        self.na_values = tuple(na_values)
        #: name, size and SHA-256 of the bytes this table was parsed from (set by :func:`read_table`)
        self.fingerprint: dict[str, Any] | None = None

    def with_data(self, data: Any) -> "Table":
        """The same table (format, dialect, reading options, fingerprint) holding ``data``
        instead: a column replaced before protection keeps what the input was."""
        out = Table(data, self.fmt, self.path, self.delimiter, self.decimal, self.thousands, self.na_values)
        out.fingerprint = self.fingerprint
        return out

    def __repr__(self) -> str:
        return (f"Table(<{self.n_rows} x {len(self.columns)}>, fmt={self.fmt!r}, path={self.path!r}, "
                f"delimiter={self.delimiter!r}, decimal={self.decimal!r})")

    @property
    def arrow_backed(self) -> bool:
        """True when the table was built from Arrow data (read from a file)."""
        return self._arrow

    @property
    def data(self) -> pa.Table:
        if self._data is None:
            import pyarrow as pa

            self._data = pa.Table.from_pandas(self._frame, preserve_index=False)
        return self._data

    @property
    def frame(self) -> pd.DataFrame:
        if self._frame is None:
            self._frame = self._data.to_pandas()
        return self._frame

    @frame.setter
    def frame(self, value: pd.DataFrame) -> None:
        self._frame, self._data, self._arrow = value, None, False

    @property
    def columns(self) -> list[str]:
        """Column names (a Parquet file's stored pandas index is not a column)."""
        if not self._arrow:
            return [str(c) for c in self._frame.columns]
        index = set(pandas_index_columns(self._data.schema))
        return [c for c in self._data.column_names if c not in index]

    @property
    def n_rows(self) -> int:
        return int(self._data.num_rows) if self._arrow else int(self._frame.shape[0])

    def column(self, name: str) -> pa.ChunkedArray:
        """One column of :attr:`data`, as stored."""
        return self.data.column(name)

    def pandas_column(self, name: str) -> pd.Series:
        """One column as the pandas view shows it (without building the whole view)."""
        if self._frame is not None or not self._arrow:
            return self.frame[name]
        return self._data.select([name]).to_pandas()[name]

    def cell_text(self, name: str, row: int) -> str:
        """The cell as text (the file's text for CSV; the pandas value's ``str`` otherwise)."""
        if self._arrow and self.fmt == "csv":
            return str(self._data.column(name)[row].as_py())
        return str(self.pandas_column(name).iloc[row])


def _pandas_meta(schema: Any) -> dict[str, Any] | None:
    return schema_json(schema.metadata, b"pandas")


def pandas_index_columns(schema: Any) -> list[str]:
    """Stored pandas index columns (``__index_level_0__``) named in the schema's pandas
    metadata and present: not data columns (:attr:`Table.columns` leaves them out, and
    so does the output). A streaming source should leave them out too."""
    meta = _pandas_meta(schema)
    if not meta:
        return []
    names = set(schema.names)
    return [c for c in meta.get("index_columns", []) if isinstance(c, str) and c in names]


def detect_format(path: str | Path, override: str | None = None) -> str:
    """``"csv"`` or ``"parquet"`` from ``override`` or the file extension."""
    if override:
        fmt = override.lower()
        if fmt not in INPUT_FORMATS:
            raise InvalidParameterError(f"unknown format {override!r} (use {', '.join(INPUT_FORMATS)})")
        return fmt
    if str(path) == "-":
        return "csv"
    suffix = Path(path).suffix.lower()
    if suffix == ".gz":  # agency exports: .csv.gz, .tsv.gz (compressed text, read and written as it)
        inner = Path(str(path)[:-3]).suffix.lower()
        if inner in _TEXT_SUFFIXES:
            return "csv"
        raise InvalidParameterError(
            f"{str(path)!r}: only compressed text files ({', '.join(s + '.gz' for s in _TEXT_SUFFIXES)}) are read "
            "and written as they are; decompress the file first")
    if suffix not in _FORMATS:
        raise InvalidParameterError(
            f"cannot tell the format of {str(path)!r} from its extension; "
            "use --input-format/--output-format " + "|".join(INPUT_FORMATS)
        )
    return _FORMATS[suffix]


_sniff_delimiter = sniff_delimiter


def read_table(path: str | Path, options: ReadOptions | None = None, *, fmt: str | None = None) -> Table:
    """Read a CSV or Parquet file (``-`` = CSV on stdin) into an Arrow-backed :class:`Table`.

    ``options``: how to read it (:class:`microagg_cli.request.ReadOptions`: delimiter,
    decimal mark, thousands separator, extra missing-value tokens; default: its
    defaults); ``fmt`` the format (default: ``options.input_format``, else from the
    extension).

    CSV is parsed by pyarrow, every column as text; the delimiter is sniffed when not
    given. Raises :class:`DataError` for a missing, unreadable or empty file, a file
    that is not UTF-8, malformed CSV, a CSV without a header row or without data rows,
    or duplicate column names.
    """
    options = ReadOptions() if options is None else options
    delimiter, decimal, thousands = options.delimiter, options.decimal, options.thousands
    na_values: Sequence[str] = options.na_values or ()
    fmt = detect_format(path, fmt or options.input_format)
    src = None if str(path) == "-" else Path(path)
    if src is not None:
        check_input_file(src)
    if fmt in STAT_FORMATS:  # SPSS, Stata, SAS (labels and declared missing codes kept)
        if src is None:
            raise InvalidParameterError(f"{fmt} input cannot come from stdin")
        from ..statfiles import read_stat

        # the reader opens the path itself: hash the file and make sure it stayed put meanwhile
        stamp = input_stamp([src])
        stat_table = Table(read_stat(src, fmt), fmt, src, thousands=thousands, na_values=na_values)
        fp = file_fingerprint(src)
        check_unchanged(stamp, [src], str(src))
        stat_table.fingerprint = fp
        return stat_table
    try:
        raw = sys.stdin.buffer.read() if src is None else src.read_bytes()
    except OSError as exc:
        raise DataError(f"{_name(src)}: cannot read ({exc.strerror})") from None
    fingerprint = ({"name": "<stdin>", "size_bytes": None, "sha256": None} if src is None else
                   {"name": src.name, "size_bytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()})
    if fmt == "csv" and (is_gzip(src) or raw[:2] == _GZIP_MAGIC):
        raw = _gunzip(raw, _name(src))
    # the report's fingerprint is of these very bytes (above), not of a second read of the path
    if fmt == "parquet":
        table = Table(_read_parquet(src, raw), "parquet", src, thousands=thousands, na_values=na_values)
    elif fmt == "xlsx":  # read as the CSV file Excel would save: every rule of CSV input holds
        from .xlsx import read_xlsx

        if src is None:
            raise InvalidParameterError("Excel input cannot come from stdin")
        table = Table(read_xlsx(raw, _name(src)), "csv", src, ",", decimal, thousands, na_values)
    else:
        data, delim = read_csv_arrow(raw, _name(src), delimiter, encoding=options.encoding)
        table = Table(data, "csv", src, delim, decimal, thousands, na_values)
    table.fingerprint = fingerprint
    return table


def _name(src: Path | None) -> str:
    return "<stdin>" if src is None else str(src)


def _read_parquet(src: Path | None, raw: bytes) -> pa.Table:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if src is None:
        raise InvalidParameterError("Parquet input cannot come from stdin")
    try:  # ParquetFile, not read_table: the latter loads pyarrow.dataset and pandas (0.2 s)
        with pq.ParquetFile(pa.BufferReader(raw)) as parquet:
            table = parquet.read()
        # Parquet does not check that text is UTF-8: a damaged file must fail here, not in a kernel
        table.validate(full=True)
    except Exception as exc:  # noqa: BLE001 - Arrow, OS and decoding errors of a damaged file
        text = str(exc).splitlines()
        why = text[0][:120] if text else type(exc).__name__
        raise DataError(f"{src}: not a readable Parquet file ({why})") from None
    names = list(table.column_names)
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise DataError(f"{src}: duplicate column {dup[0]!r}")
    if b"pandas" in (table.schema.metadata or {}):
        # what pandas reads to restore dtypes and the index: damaged, it would fail much later
        # (any column shown through pandas); an empty slice runs the same reconstruction
        try:
            table.slice(0, 0).to_pandas()
        except Exception as exc:  # noqa: BLE001 - KeyError, ValueError, TypeError ... of the metadata
            raise DataError(f"{src}: not a readable Parquet file (its pandas metadata is damaged: "
                            f"{type(exc).__name__})") from None
    if table.num_rows == 0:
        raise DataError(f"{src}: the file has no rows")
    return table



def file_fingerprint(path: Path | Table | None) -> dict[str, Any]:
    """Name, size and SHA-256 of an input file (for the report). Given a :class:`Table`
    read by :func:`read_table`, those of the bytes it was parsed from (a file replaced
    or truncated during the run is not certified as the one protected)."""
    if isinstance(path, Table):
        if path.fingerprint is not None:
            return dict(path.fingerprint)
        path = path.path
    if path is None:
        return {"name": "<stdin>", "size_bytes": None, "sha256": None}
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return {"name": path.name, "size_bytes": path.stat().st_size, "sha256": digest.hexdigest()}
