"""Reading and writing microdata files: CSV and Parquet, column checks, atomic writes.

CSV files are read as text so that columns ``sdc`` does not protect are written back
exactly as they were read (leading zeros, number formats, codes). Protected columns are
parsed strictly: a value that is not a finite number is a :class:`DataError`.
"""

from __future__ import annotations

import csv
import hashlib
import io as _io
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from .audit import digesting
from .errors import DataError, InvalidParameterError, OutputExistsError
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
)

__all__ = [
    "Table",
    "detect_format",
    "read_table",
    "numeric_matrix",
    "numeric_columns",
    "resolve_columns",
    "mostly_numeric_error",
    "missing_mask",
    "file_fingerprint",
    "check_output_path",
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
    "write_json",
    "json_text",
]

_FORMATS = {".csv": "csv", ".tsv": "csv", ".txt": "csv", ".parquet": "parquet", ".pq": "parquet"}
_MISSING_TOKENS = {"", "NA", "N/A", "NaN", "nan", "NULL", "null", "."}


@dataclass
class Table:
    """A data file held in memory.

    Attributes
    ----------
    frame : the data. For CSV input every column is text (``object``), exactly as read.
    fmt : ``"csv"`` or ``"parquet"``.
    path : where it was read from (``None`` for stdin).
    delimiter, decimal : the CSV dialect found or given.
    """

    frame: pd.DataFrame
    fmt: str
    path: Path | None
    delimiter: str = ","
    decimal: str = "."

    @property
    def columns(self) -> list[str]:
        return [str(c) for c in self.frame.columns]


def detect_format(path: str | Path, override: str | None = None) -> str:
    """``"csv"`` or ``"parquet"`` from ``override`` or the file extension."""
    if override:
        fmt = override.lower()
        if fmt not in {"csv", "parquet"}:
            raise InvalidParameterError(f"unknown format {override!r} (use csv or parquet)")
        return fmt
    if str(path) == "-":
        return "csv"
    suffix = Path(path).suffix.lower()
    if suffix not in _FORMATS:
        raise InvalidParameterError(
            f"cannot tell the format of {str(path)!r} from its extension; "
            "use --input-format/--output-format csv|parquet"
        )
    return _FORMATS[suffix]


def _sniff_delimiter(sample: str) -> str:
    first = sample.splitlines()[0] if sample else ""
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        counts = {d: first.count(d) for d in ",;\t|"}
        best = max(counts, key=lambda d: counts[d])
        return best if counts[best] else ","


def read_table(
    path: str | Path,
    *,
    fmt: str | None = None,
    delimiter: str | None = None,
    decimal: str = ".",
) -> Table:
    """Read a CSV or Parquet file (``-`` = CSV on stdin).

    Raises :class:`DataError` for a missing, unreadable or empty file, a CSV without
    a header row, or duplicate column names.
    """
    fmt = detect_format(path, fmt)
    src = None if str(path) == "-" else Path(path)
    if src is not None:
        if not src.exists():
            raise DataError(f"input file {str(src)!r} does not exist")
        if src.is_dir():
            raise DataError(f"input {str(src)!r} is a directory, not a file")
        if not os.access(src, os.R_OK):
            raise DataError(f"input file {str(src)!r} is not readable")
    if fmt == "parquet":
        return Table(_read_parquet(src), "parquet", src)
    try:
        raw = sys.stdin.buffer.read() if src is None else src.read_bytes()
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DataError(f"{_name(src)}: not a UTF-8 text file") from None
    except OSError as exc:
        raise DataError(f"{_name(src)}: cannot read ({exc.strerror})") from None
    if not text.strip():
        raise DataError(f"{_name(src)}: the file is empty")
    delim = delimiter or _sniff_delimiter(text[:65536])
    header = next(csv.reader(_io.StringIO(text), delimiter=delim), [])
    _check_header(header, src)
    try:
        frame = pd.read_csv(
            _io.StringIO(text), sep=delim, dtype=str, keep_default_na=False,
            na_filter=False, engine="c",
        )
    except (pd.errors.ParserError, ValueError) as exc:
        msg = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise DataError(f"{_name(src)}: malformed CSV ({msg})") from None
    if frame.shape[0] == 0:
        raise DataError(f"{_name(src)}: the file has a header but no data rows")
    return Table(frame, "csv", src, delim, decimal)


def _name(src: Path | None) -> str:
    return "<stdin>" if src is None else str(src)


def _check_header(header: list[str], src: Path | None) -> None:
    names = [h.strip() for h in header]
    if not names or all(not h for h in names):
        raise DataError(f"{_name(src)}: no header row")
    if any(not h for h in names):
        raise DataError(f"{_name(src)}: the header has an empty column name")
    seen: set[str] = set()
    for h in names:
        if h in seen:
            raise DataError(f"{_name(src)}: duplicate column {h!r} in the header")
        seen.add(h)
    numeric = 0
    for h in names:
        try:
            float(h)
            numeric += 1
        except ValueError:
            pass
    if numeric == len(names):
        raise DataError(f"{_name(src)}: the first row looks like data, not a header row")


def _read_parquet(src: Path | None) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if src is None:
        raise InvalidParameterError("Parquet input cannot come from stdin")
    try:
        table = pq.read_table(src)
    except (pa.ArrowException, OSError) as exc:
        raise DataError(f"{src}: not a readable Parquet file ({str(exc).splitlines()[0]})") from None
    names = list(table.column_names)
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise DataError(f"{src}: duplicate column {dup[0]!r}")
    if table.num_rows == 0:
        raise DataError(f"{src}: the file has no rows")
    return table.to_pandas()


def _parse_numbers(values: pd.Series, decimal: str) -> tuple[np.ndarray, np.ndarray]:
    """Strict float parse of text values: (numbers with NaN where missing, bad mask)."""
    text = values.astype(str).str.strip()
    if decimal != ".":
        text = text.str.replace(decimal, ".", regex=False)
    missing = text.isin(_MISSING_TOKENS).to_numpy()
    num = np.array(pd.to_numeric(text.where(~missing, None), errors="coerce"), dtype=np.float64)
    bad = np.isnan(num) & ~missing
    num[missing] = np.nan
    return num, bad


def missing_mask(table: Table, name: str) -> np.ndarray:
    """Cells of ``name`` that are missing: empty or NA-like text (CSV), null (Parquet)."""
    col = table.frame[name]
    if table.fmt == "csv" or col.dtype == object:
        text = col.astype("string").fillna("").str.strip()
        return text.isin(_MISSING_TOKENS).to_numpy(dtype=bool)
    return col.isna().to_numpy(dtype=bool)


def column_values(table: Table, name: str) -> tuple[np.ndarray, np.ndarray]:
    """A column as float64 with NaN for missing cells, and a mask of non-numeric cells."""
    col = table.frame[name]
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
                         ) -> DataError | None:
    """A :class:`DataError` if ``name`` is mostly but not entirely numeric, else None.

    The rule: at least one non-empty cell parses as a number, at least half of them
    do, and some do not. Such a column is most likely a numeric attribute with a typo,
    and passing it through would release it in clear. ``parsed``: the column's
    :func:`column_values`, when the caller has them already.
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
        f"holds {str(table.frame[name].iloc[i])!r}: fix the cell, protect it explicitly with --columns, "
        f"remove it with --drop {name}, or release it unchanged on purpose with --passthrough {name}"
    )


def resolve_columns(
    table: Table, columns: list[str] | None, drop: list[str] | None = None,
    passthrough: list[str] | None = None, roles: list[str] | None = None,
) -> tuple[list[str], list[str]]:
    """Check ``columns``, ``drop`` and ``passthrough`` against the file; return (protected, dropped).

    ``columns=None`` selects every numeric column that is neither dropped nor passed
    through; a column that is mostly but not entirely numeric is then an error
    (:func:`mostly_numeric_error`) unless it is dropped, passed through or has another
    role (``roles``: strata, weights, id columns).
    """
    have = table.columns
    drop = list(drop or [])
    passthrough = list(passthrough or [])
    for label, names in (("--drop", drop), ("--columns", columns or []), ("--passthrough", passthrough)):
        seen: set[str] = set()
        for name in names:
            if name not in have:
                raise DataError(f"{label}: no column {name!r} in the input (columns: {', '.join(have)})")
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
        protected = []
        for name in have:  # each column parsed once
            if name in drop or name in passthrough:
                continue
            values, bad = column_values(table, name)
            if not bad.any():
                if not np.isnan(values).all():
                    protected.append(name)
            elif name not in exempt:
                err = mostly_numeric_error(table, name, (values, bad))
                if err is not None:
                    raise err
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
    out = np.empty((table.frame.shape[0], len(columns)), dtype=np.float64)
    for j, name in enumerate(columns):
        values, bad = column_values(table, name)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(
                f"column {name!r} is not numeric: row {i + 1} holds {str(table.frame[name].iloc[i])!r}"
            )
        nan = np.isnan(values)
        if nan.any() and not allow_missing:
            i = int(np.flatnonzero(nan)[0])
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


def file_fingerprint(path: Path | None) -> dict[str, Any]:
    """Name, size and SHA-256 of an input file (for the report)."""
    if path is None:
        return {"name": "<stdin>", "size_bytes": None, "sha256": None}
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return {"name": path.name, "size_bytes": path.stat().st_size, "sha256": digest.hexdigest()}


def check_output_path(
    path: str | Path, *, force: bool, inputs: tuple[Path | None, ...] = (), what: str = "output"
) -> Path | None:
    """Refuse an output that is an input, sits in a missing folder, or exists without force.

    Returns the path (``None`` for ``-``, stdout).
    """
    if str(path) == "-":
        return None
    out = Path(path)
    for src in inputs:
        if src is not None and out.exists() and src.exists() and os.path.samefile(out, src):
            raise DataError(f"{what} {str(out)!r} is the input file; the input is never modified")
        if src is not None and out.resolve() == src.resolve():
            raise DataError(f"{what} {str(out)!r} is the input file; the input is never modified")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise DataError(f"{what} folder {str(parent)!r} does not exist")
    if out.is_dir():
        raise DataError(f"{what} {str(out)!r} is a directory")
    if out.exists() and not force:
        raise OutputExistsError(f"{what} {str(out)!r} exists; use --force to replace it")
    return out


def _csv_text(frame: pd.DataFrame, delimiter: str, decimal: str) -> str:
    return frame.to_csv(index=False, sep=delimiter, decimal=decimal, lineterminator="\n")


def write_table(
    frame: pd.DataFrame,
    path: Path | None,
    *,
    fmt: str,
    force: bool,
    delimiter: str = ",",
    decimal: str = ".",
    into: OutputSet | None = None,
) -> None:
    """Write ``frame`` as CSV or Parquet atomically (``path=None``: CSV to stdout).

    With ``into``, the file is staged in that :class:`OutputSet` (renamed into place by
    its commit) instead of being committed at once.
    """
    if path is None:
        if fmt != "csv":
            raise InvalidParameterError("only CSV can be written to stdout (-o -)")
        sys.stdout.write(_csv_text(frame, delimiter, decimal))
        sys.stdout.flush()
        return
    if fmt == "csv":
        data = _csv_text(frame, delimiter, decimal).encode("utf-8")
        writer: Callable[[Any], None] = lambda fh: fh.write(data)  # noqa: E731
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(frame, preserve_index=False)
        writer = lambda fh: pq.write_table(table, fh)  # noqa: E731
    _stage_or_write(path, writer, force=force, into=into, what="output")


def _stage_or_write(path: Path, writer: Callable[[Any], None], *, force: bool, into: OutputSet | None,
                    what: str, private: bool = False) -> None:
    writer = digesting(path, writer)  # the audit trail hashes the bytes as written
    if into is not None:
        into.add_file(path, writer, what=what, private=private)
    else:
        atomic_write_bytes(path, writer, force=force, what=what, private=private)


def json_text(obj: Any) -> str:
    """The JSON text of a report (key order is the schema's; no NaN)."""
    return json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_json(obj: Any, path: Path | None, *, force: bool, into: OutputSet | None = None,
               private: bool = False, what: str = "report") -> None:
    """Write JSON atomically (``path=None``: stdout). ``private``: mode 0600 (internal reports)."""
    text = json_text(obj)
    if path is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    data = text.encode("utf-8")
    _stage_or_write(path, lambda fh: fh.write(data), force=force, into=into, what=what, private=private)
