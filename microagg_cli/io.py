"""Reading and writing microdata files: CSV and Parquet as Arrow, column checks, atomic writes.

A :class:`Table` holds the file as read, as a ``pyarrow.Table``: a CSV file as text
(every column ``pa.string()``, exactly as in the file), so that columns ``sdc`` does
not protect are written back exactly as they were read (leading zeros, number formats,
codes); a Parquet file with its own schema and metadata, so that untouched columns keep
their types (nullable integers, decimals, dictionaries, time zones, lists, structs).
Protected columns are parsed strictly: a value that is not a finite number is a
:class:`DataError`. :func:`assemble_output` builds the output table without pandas;
:func:`write_table` writes it. The CSV machinery lives in :mod:`microagg_cli.csvio`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

from .audit import digesting
from .csvio import MISSING_TOKENS, CsvSource, CsvWriter, missing_tokens, open_csv_source, parse_numbers
from .csvio import arrow_numpy, check_input_file, float_arrow, read_csv_arrow, sniff_delimiter, write_csv
from .errors import DataError, InvalidParameterError, OutputExistsError
from .request import ReadOptions
from .readings import Reading, decimal_comma_file, masked_shape, missing_column, numeric_reading, option_list
from .statfiles import INPUT_FORMATS, STAT_FORMATS, STAT_SUFFIXES, schema_json  # #28: SPSS, Stata, SAS
from .outputs import (
    COMMIT_LOCK,
    OutputSet,
    atomic_write_bytes,
    clean_stale_temps,
    commit_in_progress,
    committed_files,
    defer_signal,
    discard_live_temps,
    file_mode,
    json_text,
)

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pyarrow as pa

__all__ = [
    "Table",
    "detect_format",
    "read_table",
    "numeric_matrix",
    "numeric_columns",
    "column_values",
    "resolve_columns",
    "default_column",
    "mostly_numeric_error",
    "reading_error",
    "check_release",
    "missing_mask",
    "assemble_output",
    "output_schema",
    "pandas_index_columns",
    "take_rows",
    "with_column",
    "id_type",
    "PARQUET_ROW_GROUP_ROWS",
    "CsvSource",
    "CsvWriter",
    "open_csv_source",
    "file_fingerprint",
    "check_output_path",
    "check_overlap",
    "input_stamp",
    "check_unchanged",
    "atomic_write_bytes",
    "OutputSet",
    "clean_stale_temps",
    "discard_live_temps",
    "committed_files",
    "commit_in_progress",
    "defer_signal",
    "COMMIT_LOCK",
    "file_mode",
    "write_table",
    "gzip_writer",
    "is_gzip",
    "write_json",
]

_FORMATS = {".csv": "csv", ".tsv": "csv", ".txt": "csv", ".parquet": "parquet", ".pq": "parquet", ".xlsx": "xlsx"}
_FORMATS.update(STAT_SUFFIXES)  # SPSS, Stata, SAS: microagg_cli.statfiles (#28)
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
_MISSING_TOKENS = set(MISSING_TOKENS)

#: Rows per row group of a Parquet output (the streaming engine's batch size, so that
#: the in-memory and streaming paths write the same row groups).
PARQUET_ROW_GROUP_ROWS = 65_536


def _is_arrow_table(obj: Any) -> bool:
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
        if _is_arrow_table(data):
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
    if fmt in STAT_FORMATS:  # #28: SPSS, Stata, SAS (labels and declared missing codes kept)
        if src is None:
            raise InvalidParameterError(f"{fmt} input cannot come from stdin")
        from .statfiles import read_stat

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


def _parse_numbers(values: pd.Series, decimal: str) -> tuple[np.ndarray, np.ndarray]:
    """Strict float parse of text values: (numbers with NaN where missing, bad mask)."""
    import pandas as pd

    text = values.astype(str).str.strip()
    if decimal != ".":
        text = text.str.replace(decimal, ".", regex=False)
    missing = text.isin(_MISSING_TOKENS).to_numpy()
    num = np.array(pd.to_numeric(text.where(~missing, None), errors="coerce"), dtype=np.float64)
    bad = np.isnan(num) & ~missing
    num[missing] = np.nan
    return num, bad


def _arrow_kind(t: Any) -> str:
    """"int", "float", "text" or "other" (an Arrow type as column_values treats it)."""
    import pyarrow as pa

    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "text"
    return "other"


def missing_mask(table: Table, name: str) -> np.ndarray:
    """Cells of ``name`` that are missing: empty or NA-like text (CSV), null (Parquet)."""
    if table.arrow_backed:
        import pyarrow as pa
        import pyarrow.compute as pc

        col = table.column(name)
        kind = _arrow_kind(col.type)
        if table.fmt == "csv":
            col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
            text = pc.utf8_trim(col, " ")
            out = np.zeros(len(col), dtype=bool)
            short = np.flatnonzero(np.asarray(pc.less_equal(pc.utf8_length(text), 4)  # tokens: <= 4 chars
                                              .to_numpy(zero_copy_only=False), dtype=bool))
            if short.size:
                out[short] = np.asarray(pc.is_in(text.take(pa.array(short)), value_set=_token_array())
                                        .to_numpy(zero_copy_only=False), dtype=bool)
            if table.na_values:
                out |= np.asarray(pc.is_in(pc.utf8_trim_whitespace(col),
                                           value_set=pa.array(sorted(missing_tokens(table.na_values))))
                                  .to_numpy(zero_copy_only=False), dtype=bool)
            # cells with characters other than printable ASCII: the old code decides
            odd = np.flatnonzero(~np.asarray(pc.match_substring_regex(col, r"^[\x20-\x7e]*$")
                                             .to_numpy(zero_copy_only=False), dtype=bool))
            if odd.size:
                import pandas as pd

                sub = pd.Series(col.take(pa.array(odd)).to_pylist(), dtype=object)
                out[odd] = sub.astype("string").fillna("").str.strip().isin(_MISSING_TOKENS).to_numpy(dtype=bool)
            return out
        if kind == "int":
            return arrow_numpy(pc.is_null(col))
        if kind == "float":
            return arrow_numpy(pc.is_null(col, nan_is_null=True))
    col = table.pandas_column(name)
    if table.fmt == "csv" or col.dtype == object:
        text = col.astype("string").fillna("").str.strip()
        return text.isin(_MISSING_TOKENS).to_numpy(dtype=bool)
    return col.isna().to_numpy(dtype=bool)


def _token_array() -> Any:
    import pyarrow as pa

    return pa.array(sorted(_MISSING_TOKENS))


def column_values(table: Table, name: str) -> tuple[np.ndarray, np.ndarray]:
    """A column as float64 with NaN for missing cells, and a mask of non-numeric cells."""
    if table.arrow_backed:
        col = table.column(name)
        if table.fmt == "csv":
            return parse_numbers(col, table.decimal, thousands=table.thousands, na_values=table.na_values)
        kind = _arrow_kind(col.type)
        if kind in ("int", "float"):
            import pyarrow as pa

            n = len(col)
            arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
            if kind == "int":  # a C cast, as pandas' conversion (int64 -> float64 rounds to nearest)
                out = np.asarray(arrow_numpy(arr.fill_null(0) if arr.null_count else arr), dtype=np.float64)
                if arr.null_count:
                    out[arrow_numpy(arr.is_null())] = np.nan
            else:
                out = arrow_numpy(arr.cast(pa.float64()))
            return np.array(out, dtype=np.float64), np.zeros(n, dtype=bool)
        if kind == "text":
            return parse_numbers(col, ".", thousands=table.thousands, na_values=table.na_values)
    import pandas as pd

    col = table.pandas_column(name) if table.arrow_backed else table.frame[name]
    if table.fmt == "csv":
        return _parse_numbers(col, table.decimal)
    if pd.api.types.is_bool_dtype(col.dtype):
        return np.full(len(col), np.nan), np.ones(len(col), dtype=bool)
    if pd.api.types.is_numeric_dtype(col.dtype):
        return np.array(col.to_numpy(dtype=np.float64, na_value=np.nan)), np.zeros(len(col), dtype=bool)
    return _parse_numbers(col.astype("string").fillna(""), ".")


def numeric_columns(table: Table) -> list[str]:
    """Columns whose every non-missing value is a number (at least one value present)."""
    out = []
    for name in table.columns:
        values, bad = column_values(table, name)
        if not bad.any() and not np.isnan(values).all():
            out.append(name)
    return out


#: The default selection refuses a column when at least this share of its non-empty
#: cells are numbers but not all are (a mistyped number must not release the column).
MOSTLY_NUMERIC = 0.5


def mostly_numeric_error(table: Table, name: str, parsed: tuple[np.ndarray, np.ndarray] | None = None,
                         *, reading: Reading | None = None) -> DataError | None:
    """A :class:`DataError` if ``name`` is mostly but not entirely numeric, else None.

    The rule: at least one non-empty cell parses as a number, at least half of them
    do, and some do not. Such a column is most likely a numeric attribute with a typo,
    and passing it through would release it in clear. ``parsed``: the column's
    :func:`column_values`, when the caller has them already. The message gives the
    offending cell's row and its shape only (:func:`microagg_cli.readings.masked_shape`):
    the cell may hold a confidential number.
    """
    values, bad = parsed if parsed is not None else column_values(table, name)
    n_bad = int(bad.sum())
    if not n_bad:
        return None
    n_num = int((~np.isnan(values)).sum())
    if n_num == 0 or n_num < MOSTLY_NUMERIC * (n_num + n_bad):
        return None
    i = int(np.flatnonzero(bad)[0])
    return DataError(
        f"column {name!r} is mostly numeric ({n_num} of {n_num + n_bad} non-empty cells) but row {i + 1} "
        f"holds {masked_shape(table.cell_text(name, i))}: fix the cell, protect it explicitly with --columns, "
        f"remove it with --drop {option_list([name])}, or release it unchanged on purpose with --passthrough {option_list([name])}"
        f"{_reading_hint(table, reading)}"
    )


def _reading_hint(table: Table, reading: Reading | None) -> str:
    if reading is None:
        return ""
    return (f"; it reads as numbers written with {reading.name}: "
            f"{_settle(reading)}{_decimal_comma_hint(table, reading)}")


def _settle(reading: Reading) -> str:
    return (f"settle it with {' or '.join('`' + o + '`' for o in reading.option.split(' or '))}"
            if reading.option else "convert the column to plain numbers first")


def _decimal_comma_hint(table: Table, reading: Reading) -> str:
    if table.decimal == "." and reading.option != "--decimal ,":
        texts = [c for c in (_text_column(table, n) for n in table.columns) if c is not None]
        if decimal_comma_file(texts):
            return "; the file's numbers are mostly written with a decimal comma: use `--decimal ,`"
    return ""


def column_reading(table: Table, name: str, parsed: tuple[np.ndarray, np.ndarray] | None = None,
                   ) -> Reading | None:
    """The other convention under which the text column ``name`` reads as numbers
    (:func:`microagg_cli.readings.numeric_reading`), or None."""
    col = _text_column(table, name)
    if col is None:
        return None
    values, _bad = parsed if parsed is not None else column_values(table, name)
    return numeric_reading(col, decimal=table.decimal, thousands=table.thousands,
                           missing_tokens=missing_tokens(table.na_values), strict_numbers=~np.isnan(values))


def _text_column(table: Table, name: str) -> Any:
    """The column as Arrow text, or None when it is stored as numbers, booleans or another
    non-text type (those are judged by their type)."""
    import pyarrow as pa

    if table.arrow_backed:
        col = table.column(name)
        if table.fmt == "csv" or _arrow_kind(col.type) == "text":
            return col
        if pa.types.is_dictionary(col.type) and _arrow_kind(col.type.value_type) == "text":
            return col.cast(pa.string())  # a categorical column of text: read it as text
        return None
    col = table.frame[name]
    if table.fmt == "csv" or col.dtype == object or str(col.dtype) == "string":
        return pa.array(col.astype("string").fillna("").tolist(), type=pa.string())
    return None


def reading_error(table: Table, name: str, parsed: tuple[np.ndarray, np.ndarray] | None = None,
                  ) -> DataError | None:
    """A :class:`DataError` refusing to release ``name`` in clear, or None.

    The column is mostly numeric (:func:`mostly_numeric_error`, with the convention
    that explains it where one does), or it reads as numbers under another convention
    (:func:`column_reading`: decimal comma, thousands separators, currency or percent
    signs, accounting negatives, placeholder cells); the message names the column, the
    convention and the option that settles it."""
    parsed = parsed if parsed is not None else column_values(table, name)
    reading = column_reading(table, name, parsed)
    err = mostly_numeric_error(table, name, parsed, reading=reading)
    if err is not None or reading is None:
        return err
    besides = f", besides {reading.placeholders} placeholder cells" if reading.placeholders else ""
    return DataError(
        f"column {name!r} holds numbers written with {reading.name} ({reading.matched} of {reading.total} "
        f"non-empty cells{besides}; e.g. row {reading.example_row + 1}); {_settle(reading)} (or protect it with "
        f"--columns, remove it with --drop {option_list([name])}, or release it unchanged on purpose with --passthrough {option_list([name])})"
        f"{_decimal_comma_hint(table, reading)}"
    )


def default_column(table: Table, name: str) -> bool:
    """Does the default selection protect column ``name``? Yes for a numeric column with
    at least one value, no for a column that is not a number under any common
    convention; a column that is mostly but not entirely numeric raises
    :func:`mostly_numeric_error`, and one that reads as numbers under another convention
    raises :func:`reading_error` (neither may release a number in clear). Each column is
    parsed once; the streaming engines call this one column at a time."""
    values, bad = check_release(table, name)
    return not bad.any() and not bool(np.isnan(values).all())


def check_release(table: Table, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Refuse to release column ``name`` in clear when it is a number in disguise.

    Called, with an explicit selection (``--columns`` or a plan), for every column that
    would pass through unchanged without being named (``--passthrough``, a plan's
    passthrough, ``--strata``, ``--weights``, ``--keys``, the id column): a column that
    is mostly numeric, or numeric under another convention (decimal comma, thousands
    separators, currency or percent signs, accounting negatives, placeholder cells),
    raises :func:`reading_error`'s :class:`DataError` (exit code 3). A column the strict
    parser reads as numbers in full is plainly visible as such: it passes through as
    the explicit selection left it, and is listed as passed through in the summary and
    the report. Returns the column's :func:`column_values` (the default selection
    decides with them)."""
    values, bad = column_values(table, name)
    if bad.any():
        err = reading_error(table, name, (values, bad))
        if err is not None:
            raise err
    return values, bad


def resolve_columns(
    table: Table, columns: list[str] | None, drop: list[str] | None = None,
    passthrough: list[str] | None = None, roles: list[str] | None = None,
) -> tuple[list[str], list[str]]:
    """Check ``columns``, ``drop`` and ``passthrough`` against the file; return (protected, dropped).

    ``columns=None`` selects every numeric column that is neither dropped, passed
    through nor given another role (``roles``: strata, weights, id columns, which pass
    through unchanged); a column that is mostly but not entirely numeric is then an
    error (:func:`mostly_numeric_error`) unless it is dropped, passed through or has a
    role.
    """
    have = table.columns
    drop = list(drop or [])
    passthrough = list(passthrough or [])
    for label, names in (("--drop", drop), ("--columns", columns or []), ("--passthrough", passthrough)):
        seen: set[str] = set()
        for name in names:
            if name not in have:
                raise DataError(f"{label}: {missing_column(name, have)}")
            if name in seen:
                raise InvalidParameterError(f"{label}: column {name!r} is named twice")
            seen.add(name)
    for name in passthrough:
        if name in drop:
            raise InvalidParameterError(f"column {name!r} is both passed through and dropped")
        if columns is not None and name in columns:
            raise InvalidParameterError(f"column {name!r} is both protected and passed through")
    if columns is None:
        exempt = set(drop) | set(passthrough) | set(roles or [])
        protected = [name for name in have if name not in exempt and default_column(table, name)]
        if not protected:
            raise DataError("the input has no numeric column to protect; name them with --columns")
    else:
        both = [c for c in columns if c in drop]
        if both:
            raise InvalidParameterError(f"column {both[0]!r} is both protected and dropped")
        protected = list(columns)
    if not protected:
        raise InvalidParameterError("no column to protect")
    return protected, drop


def numeric_matrix(table: Table, columns: list[str], *, allow_missing: bool = False) -> np.ndarray:
    """The named columns as an (n, p) float64 matrix, checked strictly.

    Raises :class:`DataError` naming the first offending column and row (1-based data
    row) for a non-numeric value, a missing value (unless ``allow_missing``, then NaN)
    or an infinite value.
    """
    out = np.empty((table.n_rows, len(columns)), dtype=np.float64)
    for j, name in enumerate(columns):
        values, bad = column_values(table, name)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(
                f"column {name!r} is not numeric: row {i + 1} holds {masked_shape(table.cell_text(name, i))}"
                f"{_reading_hint(table, column_reading(table, name, (values, bad)))}"
            )
        nan = np.isnan(values)
        if nan.any() and not allow_missing:
            i = int(np.flatnonzero(nan)[0])
            if table.fmt in STAT_FORMATS:  # #28: name the declared missing code and its label
                from .statfiles import declared_missing_message

                msg = declared_missing_message(table.data, name)
                if msg:
                    raise DataError(msg)
            raise DataError(
                f"column {name!r} has {int(nan.sum())} missing value(s) (first in row {i + 1}); "
                "use --missing complete|available, or remove or impute them first"
            )
        inf = np.isinf(values)
        if inf.any():
            i = int(np.flatnonzero(inf)[0])
            raise DataError(f"column {name!r} has an infinite value in row {i + 1}")
        out[:, j] = values
    return out


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


def input_stamp(files: Sequence[Path]) -> tuple[tuple[int, int, int, int], ...]:
    """(device, inode, size, modification time) of each input file, to compare at the end."""
    out = []
    for f in files:
        st = os.stat(f)
        out.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(out)


def check_unchanged(stamp: tuple[tuple[int, int, int, int], ...], files: Sequence[Path], name: str) -> None:
    """Refuse to certify an input that was replaced, truncated or rewritten during the run
    (its inode, size or modification time changed since :func:`input_stamp`): exit code 3."""
    try:
        now = input_stamp(files)
    except OSError:
        now = ()
    if now != stamp:
        raise DataError(f"input {name!r} changed while it was being protected (replaced, truncated or rewritten); "
                        "nothing was written: run again on a file that stays put")


def _identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of what ``path`` names (links followed), or None where it is missing."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def _lineage(path: Path) -> set[tuple[int, int]]:
    """The identities of ``path`` and of every folder above it, spelled both as written
    (``..`` folded) and with links resolved: bind mounts and links cannot hide a folder."""
    out = set()
    for p in (Path(os.path.abspath(path)), Path(os.path.realpath(path))):
        for q in (p, *p.parents):
            ident = _identity(q)
            if ident is not None:
                out.add(ident)
    return out


def check_overlap(out: str | Path, inputs: Sequence[Path | None], *, what: str = "output") -> None:
    """Refuse an output that is, contains or lies inside an input (file or dataset folder).

    Compared by device and inode along both paths, so a relative spelling, ``..``, a
    symbolic link or a bind mount of the same folder cannot hide the overlap. Raises
    :class:`DataError` (exit code 3): the input is never modified."""
    out = Path(out)
    above_out = _lineage(out)
    here = _identity(out)
    for src in inputs:
        if src is None:
            continue
        ident = _identity(src)
        if ident is None:
            continue
        kind = "folder" if Path(src).is_dir() else "file"
        if here == ident:
            raise DataError(f"{what} {str(out)!r} is the input {kind} {str(src)!r}; the input is never modified")
        if ident in above_out:
            raise DataError(f"{what} {str(out)!r} lies inside the input {kind} {str(src)!r}; "
                            "the input is never modified")
        if here is not None and here in _lineage(Path(src)):
            raise DataError(f"{what} {str(out)!r} contains the input {kind} {str(src)!r}; "
                            "the input is never modified")


def check_output_path(
    path: str | Path, *, force: bool, inputs: tuple[Path | None, ...] = (), what: str = "output"
) -> Path | None:
    """Refuse an output that is, contains or lies in an input, sits in a missing folder,
    is a folder, or exists without force (a dangling symbolic link exists too).

    Returns the path (``None`` for ``-``, stdout).
    """
    if str(path) == "-":
        return None
    out = Path(path)
    check_overlap(out, inputs, what=what)
    for src in inputs:  # the same name, whatever exists
        if src is not None and os.path.abspath(out) == os.path.abspath(src):
            raise DataError(f"{what} {str(out)!r} is the input file; the input is never modified")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise DataError(f"{what} folder {str(parent)!r} does not exist")
    if out.is_dir():
        raise DataError(f"{what} {str(out)!r} is a directory")
    if out.is_symlink() and not out.exists() and not force:
        raise OutputExistsError(f"{what} {str(out)!r} exists (a symbolic link to a missing file); "
                                "use --force to replace the link")
    if out.exists() and not force:
        raise OutputExistsError(f"{what} {str(out)!r} exists; use --force to replace it")
    return out


def _csv_text(frame: pd.DataFrame, delimiter: str, decimal: str) -> str:
    return frame.to_csv(index=False, sep=delimiter, decimal=decimal, lineterminator="\n")


# ------------------------------------------------------------------ output assembly


def output_schema(schema: pa.Schema, columns: Sequence[str], changed: Mapping[str, pa.DataType],
                  *, n_rows: int | None = None) -> pa.Schema:
    """The schema of an output: ``columns`` of ``schema`` in that order, the columns in
    ``changed`` (protected columns, a regenerated id) with their new type, every other
    field as it is (type, nullability, field metadata), the schema metadata kept.

    Notes
    -----
    The ``pandas`` entry of the schema metadata describes every column's pandas dtype
    (nullable ``Int64``, categorical order, time zone, ``object`` strings) and the
    index. It is kept as is when it still describes the output; else it is rewritten,
    not dropped, so that pass-through columns keep their pandas dtypes when the output
    is read back: entries of columns not in the output (dropped columns, a stored index)
    are removed, a changed column gets the entry of its new type (``float64``), the
    index becomes the default range index (the output never stores one, as the pandas
    path wrote with ``preserve_index=False``; a stored range index is kept only while it
    is the default ``0..n``, which it stays when rows are permuted). Should the entry
    hold something this does not understand, it is dropped instead (it would be wrong).
    """
    import pyarrow as pa

    fields = []
    for name in columns:
        if name in changed:
            fields.append(pa.field(name, changed[name]))
        else:
            fields.append(schema.field(name))
    metadata = dict(schema.metadata or {})
    if b"pandas" in metadata:
        new = _rewrite_pandas_meta(metadata[b"pandas"], list(columns), changed, n_rows)
        if new is None:
            del metadata[b"pandas"]
        else:
            metadata[b"pandas"] = new
    return pa.schema(fields, metadata=metadata or None)


_PANDAS_TYPES = {"double": ("float64", "float64"), "int64": ("int64", "int64"), "string": ("unicode", "object"),
                 "large_string": ("unicode", "object")}


def _rewrite_pandas_meta(raw: bytes, columns: list[str], changed: Mapping[str, Any],
                         n_rows: int | None) -> bytes | None:
    try:
        meta = json.loads(raw)
        entries = {e["field_name"]: e for e in meta["columns"]}
        index = meta.get("index_columns", [])
    except (ValueError, KeyError, TypeError):
        return None
    default_range = all(isinstance(i, dict) and i.get("kind") == "range" and i.get("start") == 0
                        and i.get("step") == 1 and i.get("name") is None
                        and (n_rows is None or i.get("stop") == n_rows) for i in index)
    index_fields = {i for i in index if isinstance(i, str)}
    listed = [f for f in entries if f not in index_fields]
    if listed == columns and not changed and default_range:
        return raw  # still exact
    out_entries = []
    for name in columns:
        if name in changed:
            kind = _PANDAS_TYPES.get(str(changed[name]))
            if kind is None:
                return None
            out_entries.append({"name": name, "field_name": name, "pandas_type": kind[0],
                                "numpy_type": kind[1], "metadata": None})
        elif name in entries:
            out_entries.append(entries[name])
        else:
            return None
    meta["columns"] = out_entries
    if not default_range:
        meta["index_columns"] = []
    return json.dumps(meta).encode("utf-8")


def assemble_output(table: Table, values: Mapping[str, np.ndarray], drop: Sequence[str]) -> pa.Table:
    """The output table: the input's columns minus ``drop``, in input order, with the
    columns in ``values`` replaced by float64 (NaN written as null, as the pandas path
    wrote a blanked value: an empty CSV cell, a Parquet null), every other column the
    very same Arrow array (type, nullability, dictionary, decimals, zones, nesting).

    Parameters
    ----------
    table : the input (:func:`read_table`).
    values : protected column -> its n new values.
    drop : columns left out of the output.

    Returns
    -------
    ``pyarrow.Table``; its schema metadata is the input's (see :func:`output_schema`
    for the ``pandas`` entry).

    Examples
    --------
    >>> import numpy as np, pyarrow as pa
    >>> t = Table(pa.table({"id": ["007", "008"], "x": ["1", "3"], "z": ["a", "b"]}), "csv", None)
    >>> out = assemble_output(t, {"x": np.array([2.0, 2.0])}, drop=["z"])
    >>> out.column_names, out.column("id").to_pylist(), out.column("x").to_pylist()
    (['id', 'x'], ['007', '008'], [2.0, 2.0])
    """
    import pyarrow as pa

    have = table.columns
    drop_set = set(drop)
    for name in list(drop_set) + list(values):
        if name not in have:
            raise ValueError(f"no column {name!r} in the table")
    both = drop_set & set(values)
    if both:
        raise ValueError(f"column {sorted(both)[0]!r} is both replaced and dropped")
    data = table.data
    n = data.num_rows
    names = [c for c in have if c not in drop_set]
    arrays = []
    for name in names:
        if name in values:
            v = np.asarray(values[name], dtype=np.float64)
            if v.shape != (n,):
                raise ValueError(f"column {name!r}: {v.shape} values for {n} rows")
            arrays.append(float_arrow(v))
        else:
            arrays.append(data.column(name))
    schema = output_schema(data.schema, names, {c: pa.float64() for c in values}, n_rows=n)
    return pa.Table.from_arrays(arrays, schema=schema)


def take_rows(data: pa.Table, order: Any) -> pa.Table:
    """Rows of ``data`` in the order ``order`` (a permutation of ``0..n-1``; every column
    and the schema metadata kept). ``assemble_output(...)`` then ``take_rows(out,
    rng.permutation(n))`` is ``--shuffle-rows``."""
    import pyarrow as pa

    idx = pa.array(np.asarray(order, dtype=np.int64))
    from .statfiles import permute_codes  # #28: declared missing codes follow their rows

    return permute_codes(data.take(idx), order)


def with_column(data: pa.Table, name: str, values: Any, *, type: pa.DataType | None = None,
                position: int | None = None) -> pa.Table:
    """``data`` with column ``name`` replaced (same position) or inserted (at
    ``position``, default the end); the schema metadata follows (:func:`output_schema`).

    ``type``: the Arrow type of the new column (default: that of ``values``). For ids
    (``--regenerate-ids``) ``id_type(data.schema.field(name).type)`` keeps a text id
    text and an integer id an integer.
    """
    import pyarrow as pa

    arr = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(np.asarray(values))
    if type is not None and arr.type != type:
        if pa.types.is_string(type) or pa.types.is_large_string(type):
            arr = pa.array([str(v) for v in arr.to_pylist()], type=type) if not (
                pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)) else arr.cast(type)
        else:
            arr = arr.cast(type)
    if len(arr) != data.num_rows:
        raise ValueError(f"column {name!r}: {len(arr)} values for {data.num_rows} rows")
    names = list(data.column_names)
    if name in names:
        i = names.index(name)
        columns = [data.column(j) if j != i else arr for j in range(len(names))]
    else:
        i = len(names) if position is None else position
        names.insert(i, name)
        columns = [data.column(c) for c in data.column_names]
        columns.insert(i, arr)
    schema = output_schema(data.schema.append(pa.field(name, arr.type)) if name not in data.column_names
                           else data.schema, names, {name: arr.type}, n_rows=data.num_rows)
    return pa.Table.from_arrays(columns, schema=schema)


def id_type(current: pa.DataType) -> pa.DataType:
    """The type of regenerated ids 1..n in a column of type ``current``: text stays text
    (same string type), an integer column of at least 32 bits keeps its type, else int64."""
    import pyarrow as pa

    if pa.types.is_string(current) or pa.types.is_large_string(current):
        return current
    if pa.types.is_integer(current) and current.bit_width >= 32:
        return current
    return pa.int64()


def write_table(
    frame: pd.DataFrame | pa.Table,
    path: Path | None,
    *,
    fmt: str,
    force: bool,
    delimiter: str = ",",
    decimal: str = ".",
    into: OutputSet | None = None,
) -> None:
    """Write a table as CSV or Parquet atomically (``path=None``: CSV to stdout).

    ``frame``: a ``pyarrow.Table`` (e.g. :func:`assemble_output`) or a pandas DataFrame.
    Arrow: Parquet keeps the schema and its metadata (row groups of
    :data:`PARQUET_ROW_GROUP_ROWS` rows); CSV is written by
    :class:`microagg_cli.csvio.CsvWriter` (text as it is, floats as pandas wrote them).
    A DataFrame is written by pandas as before. With ``into``, the file is staged in
    that :class:`OutputSet` (renamed into place by its commit) instead of being
    committed at once.
    """
    arrow = _is_arrow_table(frame)
    if path is None:
        if fmt != "csv":
            raise InvalidParameterError("only CSV can be written to stdout (-o -)")
        with _stdout_errors("output"):
            _write_stdout_csv(frame, arrow, delimiter, decimal)
        return
    if fmt in STAT_FORMATS:  # #28: SPSS, Stata, SAS transport (labels and codes written back)
        from .statfiles import stat_writer

        if not arrow:
            import pyarrow as pa

            frame = pa.Table.from_pandas(frame, preserve_index=False)
        _stage_or_write(path, stat_writer(frame, fmt, str(path)), force=force, into=into, what="output")
        return
    if fmt == "csv":
        if arrow:
            writer: Callable[[Any], None] = lambda fh: write_csv(  # noqa: E731
                frame, fh, delimiter=delimiter, decimal=decimal)
        else:
            data = _csv_text(frame, delimiter, decimal).encode("utf-8")
            writer = lambda fh: fh.write(data)  # noqa: E731
        if is_gzip(path):
            writer = gzip_writer(writer)
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if arrow:
            table = frame
            writer = lambda fh: pq.write_table(table, fh, row_group_size=PARQUET_ROW_GROUP_ROWS)  # noqa: E731
        else:
            table = pa.Table.from_pandas(frame, preserve_index=False)
            writer = lambda fh: pq.write_table(table, fh)  # noqa: E731
    _stage_or_write(path, writer, force=force, into=into, what="output")


def gzip_writer(writer: Callable[[Any], None]) -> Callable[[Any], None]:
    """``writer`` compressing what it writes with gzip (no time stamp or name in the
    header: the same table gives the same bytes); the file stays atomic, as ``writer``'s."""
    import gzip

    def write(fh: Any) -> None:
        with gzip.GzipFile(filename="", fileobj=fh, mode="wb", mtime=0) as gz:
            writer(gz)

    return write


@contextlib.contextmanager
def _stdout_errors(what: str) -> Any:
    """An OS error while writing to standard output (a full device, a closed pipe) names it."""
    try:
        yield
    except OSError as exc:
        raise DataError(f"cannot write the {what} to standard output ('-'): "
                        f"{exc.strerror or type(exc).__name__}") from None


def _write_stdout_csv(frame: Any, arrow: bool, delimiter: str, decimal: str) -> None:
    if arrow:
        out = getattr(sys.stdout, "buffer", None)
        sys.stdout.flush()
        if out is not None:
            write_csv(frame, out, delimiter=delimiter, decimal=decimal)
            out.flush()
        else:
            from .csvio import csv_bytes

            sys.stdout.write(csv_bytes(frame, delimiter=delimiter, decimal=decimal).decode("utf-8"))
    else:
        sys.stdout.write(_csv_text(frame, delimiter, decimal))
    sys.stdout.flush()


def _stage_or_write(path: Path, writer: Callable[[Any], None], *, force: bool, into: OutputSet | None,
                    what: str, private: bool = False) -> None:
    writer = digesting(path, writer)  # the audit trail hashes the bytes as written
    if into is not None:
        into.add_file(path, writer, what=what, private=private)
    else:
        atomic_write_bytes(path, writer, force=force, what=what, private=private)


def write_json(obj: Any, path: Path | None, *, force: bool, into: OutputSet | None = None,
               private: bool = False, what: str = "report") -> None:
    """Write JSON atomically (``path=None``: stdout). ``private``: mode 0600 (internal reports).
    The text is :func:`microagg_cli.outputs.json_text` (``report.to_json``)."""
    text = json_text(obj)
    if path is None:
        with _stdout_errors(what):
            sys.stdout.write(text)
            sys.stdout.flush()
        return
    data = text.encode("utf-8")
    _stage_or_write(path, lambda fh: fh.write(data), force=force, into=into, what=what, private=private)
