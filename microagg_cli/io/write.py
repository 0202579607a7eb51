"""Output assembly and writing: the output table, built without pandas, written atomically.

:func:`assemble_output` builds the output ``pyarrow.Table`` (protected columns replaced
by float64, every other column the very same Arrow array), :func:`output_schema` its
schema (the pandas metadata kept or rewritten), :func:`take_rows` and
:func:`with_column` reorder rows and replace or insert a column (:func:`id_type` for
regenerated ids). :func:`write_table` and :func:`write_json` write a table or a report
atomically, or stage it in an :class:`~microagg_cli.outputs.OutputSet`; CSV goes to
stdout for ``-``, a ``.csv.gz`` is compressed by :func:`gzip_writer`.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

from ..audit import digesting
from ..csvio import float_arrow, write_csv
from ..errors import DataError, InvalidParameterError
from ..outputs import OutputSet, atomic_write_bytes, json_text
from ..statfiles import STAT_FORMATS
from .table import Table, is_arrow_table, is_gzip

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pyarrow as pa


#: Rows per row group of a Parquet output (the streaming engine's batch size, so that
#: the in-memory and streaming paths write the same row groups).
PARQUET_ROW_GROUP_ROWS = 65_536


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
    from ..statfiles import permute_codes  # declared missing codes follow their rows

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
    arrow = is_arrow_table(frame)
    if path is None:
        if fmt != "csv":
            raise InvalidParameterError("only CSV can be written to stdout (-o -)")
        with _stdout_errors("output"):
            _write_stdout_csv(frame, arrow, delimiter, decimal)
        return
    if fmt in STAT_FORMATS:  # SPSS, Stata, SAS transport (labels and codes written back)
        from ..statfiles import stat_writer

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
            from ..csvio import csv_bytes

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
