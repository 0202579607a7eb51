"""Reading and writing microdata files: CSV and Parquet as Arrow, column checks, atomic writes.

A :class:`Table` holds the file as read, as a ``pyarrow.Table``: a CSV file as text
(every column ``pa.string()``, exactly as in the file), so that columns ``sdc`` does
not protect are written back exactly as they were read (leading zeros, number formats,
codes); a Parquet file with its own schema and metadata, so that untouched columns keep
their types (nullable integers, decimals, dictionaries, time zones, lists, structs).
Protected columns are parsed strictly: a value that is not a finite number is a
:class:`DataError`. :func:`assemble_output` builds the output table without pandas;
:func:`write_table` writes it. The CSV machinery lives in :mod:`microagg_cli.csvio`.

The package re-exports its modules' public names: :mod:`~microagg_cli.io.table` (the
table model, formats and reading), :mod:`~microagg_cli.io.columns` (column
classification and the release rule), :mod:`~microagg_cli.io.paths` (path safety) and
:mod:`~microagg_cli.io.write` (output assembly, atomic writes and output sets), with the
CSV source and writer of :mod:`microagg_cli.csvio` and the output sets of
:mod:`microagg_cli.outputs`.
"""

from __future__ import annotations

from ..csvio import CsvSource, CsvWriter, open_csv_source
from ..outputs import (
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
from .columns import (
    check_release,
    column_values,
    default_column,
    missing_mask,
    mostly_numeric_error,
    numeric_columns,
    numeric_matrix,
    reading_error,
    resolve_columns,
)
from .paths import check_output_path, check_overlap, check_unchanged, input_stamp
from .table import Table, detect_format, file_fingerprint, is_gzip, pandas_index_columns, read_table
from .write import (
    PARQUET_ROW_GROUP_ROWS,
    assemble_output,
    gzip_writer,
    id_type,
    output_schema,
    take_rows,
    with_column,
    write_json,
    write_table,
)

# public names of the module before it became a package, outside __all__ as they were
from ..outputs import json_text as json_text
from .columns import MOSTLY_NUMERIC as MOSTLY_NUMERIC
from .columns import column_reading as column_reading

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
