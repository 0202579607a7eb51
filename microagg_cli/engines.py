"""Engines for large files: streaming Parquet or CSV in two passes, locally or on Dask.

The in-memory path (:func:`microagg_cli.protection.protect_table`) holds the whole
file. For files beyond that, :func:`protect_stream` streams a Parquet file, a Parquet
dataset directory or a CSV file in two passes, around the same block loop
(:func:`microagg_cli.protection.protect_blocks`):

1. **key columns** -- only the protected columns (and a weights column) are read,
   block by block. The block is z-scaled as a whole and cut into parts with
   :func:`microagg_cli.splitting.split_indices`; each part is protected on its own
   with the block's scaling and the seed of its part id, exactly as the in-memory
   partitioned mode does (``protect_table(partition_size=N)``). The protected values
   (n x p floats) are kept.
2. **all columns** -- the file is read again batch by batch (never whole); in each
   batch the protected columns are replaced by their protected values, identifiers
   are dropped, and the batch is written to the output Parquet file or dataset
   directory, atomically (a temporary file or folder in the target folder, renamed
   at the end).

Memory is therefore bounded by the key columns (n x p floats, plus transient copies of
the same size while a block is scaled and split) and one batch of the other columns,
never by the whole file. The output values are those of the in-memory partitioned
mode for the same input and partitioning.

Engines run the parts: ``"local"`` one after the other in this process, ``"dask"`` as
tasks on a Dask cluster (``distributed``; optional extra ``microagg-cli[dask]``): the
cluster at ``scheduler`` (``tcp://HOST:PORT``), or by default a
:class:`distributed.LocalCluster` of two worker processes on this machine (loopback
only, no dashboard). Each part's stream depends on its part id only, so both engines
write the same bytes.

On Dask, a Parquet input every worker can open runs the *thin client*
(:mod:`microagg_cli.engines_dask`): the workers read their own row ranges, the cuts are
made from statistics they return (the chunk rule of :mod:`microagg_cli.splitting`,
so they equal the local engine's), and the parts and the output files are made on the
workers; this process holds a few numbers per node of the splitting tree, never a
record. Other runs (a CSV input, strata, weights, ``--missing complete|available``, a
method whose output is not a partition, workers without access to the files) keep the
two passes above with the parts' rows shipped to the workers; the report's
``engine.mode`` (and ``engine.mode_reason``) says which ran.

Examples
--------
>>> from microagg_cli.blocking import BlockPlan                     # doctest: +SKIP
>>> from microagg_cli.request import ProtectRequest                  # doctest: +SKIP
>>> plan = BlockPlan.single(["income", "expend"], k=3)              # doctest: +SKIP
>>> request = ProtectRequest.build(partition_size=50_000, engine="dask")  # doctest: +SKIP
>>> rep = protect_stream("big/", "out/", plan, request)             # doctest: +SKIP
"""

from __future__ import annotations

import codecs
import contextlib
import hashlib
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from .blocking import BlockPlan
from .errors import DataError, InvalidParameterError, OutputExistsError
from .audit import digesting, digesting_folder, file_entry, reproduce_entry, trail
from .io import (
    OutputSet,
    Table,
    PARQUET_ROW_GROUP_ROWS,
    check_output_path,
    check_overlap,
    check_release,
    check_unchanged,
    detect_format,
    is_gzip,
    file_mode,
    missing_mask,
    numeric_matrix,
    default_column,
    output_schema,
    input_stamp,
    pandas_index_columns,
    resolve_columns,
    write_json,
)
from .io import id_type as io_id_type
from .methods import get_method
from .csvio import CsvSource, CsvWriter, open_csv_source
from .outputs import check_replaceable_folder
from .statfiles import check_writable
from .readings import name_list, quote
from .engines_dask import (
    DASK_INSTALL_HINT,
    DaskRunner,
    dask_client,
    import_distributed,
    peak_rss_bytes,
    protect_thin,
    replaced_slice,
    thin_reason,
    workers_can_open,
    write_parquet_rows,
)
from .progress import advance
from .progress import phase as progress_phase
from .protection import LocalRunner, ProtectResult, protect_blocks
from .protection.mixed import released_cells
from .protection.run import HYGIENE_KEY, build_report
from .protection.table import check_id_column, check_keys, check_options, check_run, overall_stats

__all__ = [
    "ENGINES",
    "ParquetSource",
    "open_parquet",
    "open_source",
    "StreamColumns",
    "protect_stream",
    "protect_streaming",
    "dask_client",
    "DASK_INSTALL_HINT",
]

log = logging.getLogger("microagg_cli")

#: Engines that run the parts of a block.
from .request import ENGINES, ProtectRequest, ReadOptions  # noqa: E402  (defined once there)
from .roles import RoleContext, check_roles, column_evidence, declared_roles, explicit_roles  # noqa: E402

#: Rows per batch of the second pass (and per row group of the output).
BATCH_ROWS = 65_536

_PARQUET_SUFFIXES = (".parquet", ".pq")


# ----------------------------------------------------------------------------- input


@contextlib.contextmanager
def damaged_parquet(path: Path) -> Iterator[None]:
    """A Parquet file found damaged while it streams (a page that does not decode, text
    that is not UTF-8) is a :class:`DataError` naming it (exit code 3), not a bug."""
    import pyarrow as pa

    try:
        yield
    except (pa.ArrowException, UnicodeDecodeError) as exc:
        text = str(exc).splitlines()
        raise DataError(f"{path}: not a readable Parquet file ({text[0][:120] if text else type(exc).__name__})"
                        ) from None


@dataclass(frozen=True)
class ParquetSource:
    """A Parquet file or dataset directory opened for streaming.

    Attributes
    ----------
    path : the file or directory given.
    files : the Parquet files, in reading order (a dataset's files in lexicographic
        order of their paths relative to the directory).
    rows : rows of each file.
    schema : the common Arrow schema (without metadata).
    metadata : the schema metadata of the first file.
    is_dataset : True for a directory.
    """

    path: Path
    files: tuple[Path, ...]
    rows: tuple[int, ...]
    schema: Any
    metadata: dict[bytes, bytes]
    is_dataset: bool

    @property
    def n_rows(self) -> int:
        return int(sum(self.rows))

    @property
    def columns(self) -> list[str]:
        """The data columns (a stored pandas index is not one, as in :func:`microagg_cli.io.read_table`)."""
        index = set(pandas_index_columns(self.schema.with_metadata(self.metadata or {})))
        return [c for c in self.schema.names if c not in index]

    def relative_names(self) -> list[str]:
        """Output file names of a dataset-directory output (paths relative to the input)."""
        if self.is_dataset:
            return [f.relative_to(self.path).as_posix() for f in self.files]
        return [self.path.name]

    def read_column(self, name: str) -> Any:
        """One column of every file, as a single-column Arrow table."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        chunks = []
        for f in self.files:
            with damaged_parquet(f):
                col = pq.ParquetFile(f).read(columns=[name]).column(0)
                col.validate(full=True)  # Parquet does not check that text is UTF-8
            chunks.extend(col.chunks)
        return pa.table({name: pa.chunked_array(chunks, type=self.schema.field(name).type)})

    def fingerprint(self) -> dict[str, Any]:
        """Name, size and SHA-256 (a dataset: of the lines ``<sha256>  <relative path>``)."""
        def file_hash(p: Path) -> str:
            digest = hashlib.sha256()
            with open(p, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(chunk)
            return digest.hexdigest()

        size = sum(f.stat().st_size for f in self.files)
        if not self.is_dataset:
            return {"name": self.path.name, "size_bytes": size, "sha256": file_hash(self.path)}
        lines = "".join(f"{file_hash(f)}  {name}\n" for f, name in zip(self.files, self.relative_names()))
        return {"name": self.path.name, "size_bytes": size,
                "sha256": hashlib.sha256(lines.encode("utf-8")).hexdigest(), "files": len(self.files)}


class StreamColumns:
    """The block loop's :class:`microagg_cli.protection.table.ColumnSource` over a
    streaming source (:class:`ParquetSource` or :class:`microagg_cli.csvio.CsvSource`):
    columns are read and checked exactly as the in-memory path does
    (:func:`microagg_cli.io.numeric_matrix`), never the whole file at once."""

    def __init__(self, src: Any):
        self.src = src
        self.csv = isinstance(src, CsvSource)

    @property
    def columns(self) -> list[str]:
        return self.src.columns

    @property
    def n_rows(self) -> int:
        return self.src.n_rows

    def _table(self, data: Any) -> Table:
        if self.csv:
            return Table(data, "csv", self.src.path, self.src.delimiter, self.src.decimal)
        return Table(data, "parquet", self.src.path)

    def numeric(self, names: list[str], *, allow_missing: bool = False) -> np.ndarray:
        """Columns as an (n, p) float matrix: a CSV's in one pass over the file (their text
        only), a Parquet file's one column at a time."""
        if self.csv:
            return numeric_matrix(self._table(self.src.read_columns(names)), list(names), allow_missing=allow_missing)
        out = np.empty((self.n_rows, len(names)), dtype=np.float64)
        for j, name in enumerate(names):
            out[:, j] = numeric_matrix(self._table(self.src.read_column(name)), [name],
                                       allow_missing=allow_missing)[:, 0]
        return out

    def keys(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(values, missing mask) of a stratum column, as the in-memory path sees them."""
        table = self._table(self.src.read_column(name))
        return table.pandas_column(name).to_numpy(), missing_mask(table, name)


def _dataset_files(root: Path) -> list[Path]:
    """Parquet files under ``root`` (hidden ``.x``/``_x`` names skipped), sorted by relative path."""
    files = []
    for p in root.rglob("*"):
        rel = p.relative_to(root)
        if any(part.startswith((".", "_")) for part in rel.parts):
            continue
        if p.is_file() and p.suffix.lower() in _PARQUET_SUFFIXES:
            files.append(p)
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def open_parquet(path: str | Path) -> ParquetSource:
    """Open a Parquet file or a dataset directory (its ``*.parquet`` files, read in
    lexicographic order of their relative paths; every file must have the same schema).

    Raises :class:`DataError` for a missing or unreadable input, a directory without
    Parquet files, files with different schemas, duplicate column names, or no rows.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = Path(path)
    if str(path) == "-":
        raise InvalidParameterError("streaming mode reads a Parquet file or dataset directory, not stdin")
    if not src.exists():
        raise DataError(f"input {str(src)!r} does not exist")
    is_dataset = src.is_dir()
    files = _dataset_files(src) if is_dataset else [src]
    if not files:
        raise DataError(f"input directory {str(src)!r} holds no .parquet file")
    schema = None
    metadata: dict[bytes, bytes] = {}
    rows = []
    for f in files:
        try:
            meta = pq.read_metadata(f)
            fschema = meta.schema.to_arrow_schema()
        except (pa.ArrowException, OSError, ValueError) as exc:  # ValueError: names that are not UTF-8
            raise DataError(f"{f}: not a readable Parquet file ({str(exc).splitlines()[0]})") from None
        bare = fschema.remove_metadata()
        if schema is None:
            schema = bare
            metadata = dict(fschema.metadata or {})
            names = list(bare.names)
            dup = sorted({n for n in names if names.count(n) > 1})
            if dup:
                raise DataError(f"{f}: duplicate column {dup[0]!r}")
        elif not bare.equals(schema):
            raise DataError(
                f"{f}: its columns or column types differ from those of {files[0]}; "
                "every file of a dataset must have the same schema"
            )
        rows.append(int(meta.num_rows))
    if sum(rows) == 0:
        raise DataError(f"{src}: the {'dataset' if is_dataset else 'file'} has no rows")
    return ParquetSource(src, tuple(files), tuple(rows), schema, metadata, is_dataset)


def open_source(path: str | Path, read: ReadOptions) -> Any:
    """A streaming source: :class:`ParquetSource` for a Parquet file or dataset directory,
    :class:`microagg_cli.csvio.CsvSource` for a CSV file (read in batches, never whole);
    ``read``: format, delimiter and decimal mark (:class:`microagg_cli.request.ReadOptions`)."""
    input_format, delimiter, decimal = read.input_format, read.delimiter, read.decimal
    if str(path) != "-" and not Path(path).is_dir() and (
            is_gzip(path) or detect_format(path, input_format) == "xlsx"
            or codecs.lookup(read.encoding).name != "utf-8"):
        raise InvalidParameterError(
            "--engine/--scheduler stream plain UTF-8 CSV and Parquet files; a compressed (.gz) or Excel file, "
            "or one read with --encoding, is read in memory: leave --engine/--scheduler out")
    if str(path) != "-" and not Path(path).is_dir() and detect_format(path, input_format) == "csv":
        return open_csv_source(path, delimiter=delimiter, decimal=decimal)
    return open_parquet(path)


def _default_columns(src: Any, exempt: set[str]) -> list[str]:
    """The default selection of :func:`microagg_cli.io.resolve_columns`, one column in
    memory at a time: every column with a number and nothing else, a mostly-numeric
    column an error (:func:`microagg_cli.io.default_column`)."""
    fmt = "csv" if isinstance(src, CsvSource) else "parquet"
    delimiter, decimal = (src.delimiter, src.decimal) if isinstance(src, CsvSource) else (",", ".")
    out = []
    for name in src.columns:
        if name in exempt:
            continue
        if default_column(Table(src.read_column(name), fmt, src.path, delimiter, decimal), name):
            out.append(name)
    return out


# ---------------------------------------------------------------------------- output


@dataclass(frozen=True)
class _Target:
    path: Path
    is_dataset: bool
    fmt: str = "parquet"


def _output_target(output: str | Path, output_format: str | None, src: Any, *, force: bool) -> _Target:
    """A Parquet file (a name ending in .parquet/.pq, or any name with --output-format
    parquet), a CSV file (.csv, or --output-format csv) or a dataset directory (a name
    without extension, or an existing directory)."""
    if str(output) == "-":
        raise InvalidParameterError(
            "streaming mode writes a file or a dataset directory, not stdout; give -o OUT.parquet, OUT.csv or OUTDIR"
        )
    out = Path(output)
    if out.is_dir() or (not out.suffix and output_format in (None, "parquet") and not out.is_file()):
        parent = out.parent if str(out.parent) else Path(".")
        if not parent.is_dir():
            raise DataError(f"output folder {str(parent)!r} does not exist")
        check_overlap(out, (src.path,))
        if (out.exists() or out.is_symlink()) and not force:
            raise OutputExistsError(f"output {str(out)!r} exists; use --force to replace it")
        check_replaceable_folder(out, set(src.relative_names()))  # --force replaces only sdc's own files
        return _Target(out, True)
    fmt = detect_format(out, output_format)
    if is_gzip(out):
        raise InvalidParameterError("--engine/--scheduler write plain CSV or Parquet; a compressed output "
                                    f"({out.name}) is written in memory: leave --engine/--scheduler out")
    check_writable(fmt)
    if fmt == "csv" and src.is_dataset:
        raise InvalidParameterError(
            "a dataset directory is streamed to Parquet only: give -o OUT.parquet or a directory name"
        )
    checked = check_output_path(out, force=force, inputs=(src.path,))
    assert checked is not None
    return _Target(checked, False, fmt)


def _output_schema(src: ParquetSource, drop: set[str], protected: set[str], id_type: Any | None,
                   id_column: str | None) -> Any:
    """The output schema, built as the in-memory path builds it (:func:`microagg_cli.io.output_schema`)."""
    import pyarrow as pa

    names = [c for c in src.columns if c not in drop]
    changed = {c: pa.float64() for c in names if c in protected}
    if id_column is not None and id_type is not None:
        changed[id_column] = id_type
    return output_schema(src.schema.with_metadata(src.metadata or {}), names, changed, n_rows=src.n_rows)


def _batches(src: Any, index: int, columns: list[str]) -> Iterator[tuple[int, Any]]:
    """(rows, record batch of ``columns``) of file ``index``, BATCH_ROWS rows at a time."""
    import pyarrow.parquet as pq

    n = src.rows[index]
    if not columns:
        for start in range(0, n, BATCH_ROWS):
            yield min(BATCH_ROWS, n - start), None
        return
    if isinstance(src, CsvSource):
        for batch in src.batches(columns, batch_rows=BATCH_ROWS):
            yield batch.num_rows, batch
        return
    with damaged_parquet(src.files[index]):
        pf = pq.ParquetFile(src.files[index])
        for batch in pf.iter_batches(batch_size=BATCH_ROWS, columns=columns, use_threads=False):
            batch.validate(full=True)  # Parquet does not check that text is UTF-8
            yield batch.num_rows, batch


def _write_pass(
    src: ParquetSource,
    target: _Target,
    schema: Any,
    replaced: dict[str, np.ndarray],
    *,
    files: OutputSet,
) -> None:
    """Pass 2: stream every file batch by batch, replace columns, stage in ``files``.

    ``replaced`` maps an output column to its n new values (protected columns: float64,
    NaN written as null like the in-memory path; a regenerated id column).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    read_cols = [f.name for f in schema if f.name not in replaced]

    def write_file(writer: Any, index: int, row0: int) -> int:
        # row groups of exactly PARQUET_ROW_GROUP_ROWS rows, as the in-memory writer makes
        # them, so that both paths (and the Dask engine's writers) write the same bytes
        return write_parquet_rows(writer, schema, _batches(src, index, read_cols), replaced, row0,
                                  row_group_rows=PARQUET_ROW_GROUP_ROWS, advance=advance)

    if target.fmt == "csv":
        # the in-memory writer's format: the input's dialect for a CSV input
        delimiter, decimal = (src.delimiter, src.decimal) if isinstance(src, CsvSource) else (",", ".")

        def csv_fn(fh: Any) -> None:
            with CsvWriter(fh, schema, delimiter=delimiter, decimal=decimal) as writer:
                row0 = 0
                for rows, batch in _batches(src, 0, read_cols):
                    arrays = [replaced_slice(replaced[f.name], row0, rows, f.type)
                              if f.name in replaced else batch.column(batch.schema.get_field_index(f.name))
                              for f in schema]
                    writer.write(pa.Table.from_arrays(arrays, schema=schema))
                    row0 += rows
                    advance(rows)
        files.add_file(target.path, digesting(target.path, csv_fn), what="output")
        return

    if not target.is_dataset:
        def writer_fn(fh: Any) -> None:
            with pq.ParquetWriter(fh, schema) as writer:
                row0 = 0
                for i in range(len(src.files)):
                    row0 = write_file(writer, i, row0)
        files.add_file(target.path, digesting(target.path, writer_fn), what="output")
        return

    def build(tmp: Path) -> None:
        row0 = 0
        for i, name in enumerate(src.relative_names()):
            dest = tmp / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            with open(dest, "wb") as fh:
                with pq.ParquetWriter(fh, schema) as writer:
                    row0 = write_file(writer, i, row0)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(dest, file_mode())

    files.add_folder(target.path, digesting_folder(target.path, build), what="output")


def protect_stream(
    input: str | Path,
    output: str | Path,
    plan: BlockPlan,
    request: ProtectRequest | None = None,
    *,
    cluster: Mapping[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Protect a Parquet file, a Parquet dataset directory or a CSV file in two streaming passes.

    Parameters
    ----------
    input : Parquet file, or dataset directory (its ``*.parquet`` files in lexicographic
        order of their relative paths, all with the same schema).
    output : ``*.parquet`` file, or a dataset directory (a name without extension, or
        an existing directory with ``force``): one file per input file, same names.
    plan : the blocks (``plan.drop`` columns are removed from the output).
    request : the options (:class:`microagg_cli.request.ProtectRequest`; default: its
        defaults), of which these apply: ``run`` (partition_size: parts of at most this
        many records per block, None: one exact run per block, on the key columns only;
        seed, stat, weights, missing, small_strata, strata, strata_missing, keys, bound:
        as in :func:`microagg_cli.protection.protect_table`, the same block loop runs
        here), ``read`` (input_format, delimiter, decimal), ``regenerated_id`` (a seeded
        permutation of 1..n, the stream of ``sdc protect --regenerate-ids``), ``engine``
        (``"local"``, the default, parts in this process, or ``"dask"``, parts as Dask
        tasks), ``scheduler`` (for ``"dask"``: a scheduler address ``tcp://HOST:PORT``, a
        ``distributed.Client``, or None for a local cluster, see :func:`dask_client`),
        ``force``, ``output_format`` and ``report`` (JSON report path, ``"-"`` = stdout,
        or None).
    cluster : keyword arguments of :func:`dask_client` for the local cluster
        (``n_workers``, ``memory_limit``, ``processes``).
    progress : ``progress(records_done, records_total)`` after each part.

    Returns
    -------
    The report (dict): the layout of :func:`microagg_cli.api.protect`'s report, with an
    ``engine`` section (the runner, the cluster, peak memory per worker).

    Raises
    ------
    InvalidParameterError : an unknown engine or policy, Dask not installed
        (``pip install 'microagg-cli[dask]'``), an unreachable scheduler.
    DataError, InfeasibleError, PrivacyCheckError : as the in-memory path.
    """
    t0 = time.perf_counter()
    request = ProtectRequest() if request is None else request
    run, read = request.run, request.read
    engine, scheduler, force, report = _check_engine(request), request.scheduler, request.force, request.report
    seed, strata, weights, missing = run.seed, run.strata, run.weights, run.missing
    partition_size, keys = run.partition_size, run.keys
    id_column = request.regenerated_id
    src = open_source(input, read)
    stamp = input_stamp(src.files)  # the report certifies these very files: they must stay put
    target = _output_target(output, request.output_format, src, force=force)
    rep_path = None
    if report is not None:
        rep_path = check_output_path(report, force=force, inputs=(src.path,),
                                     what="report")
        if rep_path is not None and rep_path.resolve() == target.path.resolve():
            raise InvalidParameterError("the report and the output are the same file")
    check_run(src.columns, plan, run.replace(keys=None))  # keys: checked by the caller (check_keys)
    protected = set(plan.columns)
    if id_column is not None:
        if id_column not in src.columns:
            raise DataError(f"--id-column: no column {id_column!r} in the input")
        if id_column in protected:
            raise InvalidParameterError(f"--id-column column {id_column!r} cannot also be protected")
        if id_column in plan.drop:
            raise InvalidParameterError(f"--id-column column {id_column!r} cannot also be dropped")
    n = src.n_rows

    total = n * len(plan.blocks)
    done = [0]

    def tick(m: int) -> None:
        done[0] += m
        if progress is not None:
            progress(done[0], total)

    import pyarrow as pa

    hygiene = {"rows_shuffled": False, "ids_regenerated": id_column}
    id_type = None
    if id_column is not None:
        # the in-memory path writes text ids for a text column (object dtype), else integers
        id_type = io_id_type(src.schema.field(id_column).type)
    schema = _output_schema(src, set(plan.drop), protected, id_type, id_column)
    files = OutputSet(force=force)
    thin = None
    if engine == "dask":
        thin = thin_reason(parquet=isinstance(src, ParquetSource), output_parquet=target.fmt == "parquet", plan=plan,
                           strata=strata, weights=weights, missing=missing, partition_size=partition_size,
                           n_rows=n)
        if thin is None and keys:
            thin = "--keys (checked on the client with the protected values)"
        if thin is None and (run.categorical or run.ordinal):
            thin = "categorical/ordinal keys (grouped on the client, in parts with --partition-size)"
    with contextlib.ExitStack() as stack:
        if engine == "dask":
            client, description = stack.enter_context(dask_client(scheduler, **dict(cluster or {})))
            runner: Any = DaskRunner(client, description)
            if thin is None and not workers_can_open(client, tuple(str(f.resolve()) for f in src.files)):
                thin = "the workers cannot open the input files (no shared file system)"
        else:
            runner = LocalRunner()
        if engine == "dask" and thin is None:
            results, il_parts, engine_info = protect_thin(client, runner, src, target, plan, schema, request,
                                                          files=files, progress=tick, t0=t0, batch_rows=BATCH_ROWS)
        else:
            results, il_parts = protect_blocks(StreamColumns(src), plan, run, runner=runner, progress=tick)
            engine_info = runner.describe()
            if engine == "dask":
                engine_info["mode"] = "client reads the rows and ships them to the workers"
                engine_info["mode_reason"] = thin
    if thin is not None or engine != "dask":
        engine_info["client_peak_rss_bytes"] = peak_rss_bytes()
        engine_info["pass1_seconds"] = time.perf_counter() - t0

        # pass 2: every column, batch by batch
        replaced = {col: res.values[:, j] for res in results for j, col in enumerate(res.block.columns)}
        for res in results:  # categorical/ordinal keys: each record gets an input cell (Arrow, its type kept)
            if res.keys is not None:
                for j, name in enumerate(res.mixed.names):
                    column = StreamColumns(src)._table(src.read_column(name)).data.column(name)
                    replaced[name] = released_cells(column, res.mixed.first_row[j], res.keys[:, j]).combine_chunks()
        if id_column is not None:
            rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=HYGIENE_KEY))
            ids = rng.permutation(n) + 1
            as_text = pa.types.is_string(id_type) or pa.types.is_large_string(id_type)
            replaced[id_column] = ids.astype(str) if as_text else ids
        t1 = time.perf_counter()
        try:
            with progress_phase(f"writing {target.path.name}", total=n, unit="rows"):
                _write_pass(src, target, schema, replaced, files=files)
        except BaseException:
            files.discard()
            raise
        engine_info["pass2_seconds"] = time.perf_counter() - t1

    overall = overall_stats(results, il_parts)
    stand_in = Table(src.schema.empty_table(), "parquet", None)
    result = ProtectResult(schema.empty_table(), results, {}, overall)
    rep = build_report(stand_in, plan, result, request, output=target.path.name,
                       seconds=time.perf_counter() - t0, engine=engine)
    check_unchanged(stamp, src.files, str(src.path))
    rep["input"] = {**src.fingerprint(), "format": "csv" if isinstance(src, CsvSource) else "parquet", "rows": n,
                    "columns": len(src.columns)}
    check_unchanged(stamp, src.files, str(src.path))
    rep["output"] = {"name": target.path.name, "rows": n, "columns": len(schema.names)}
    if target.is_dataset:
        rep["output"]["files"] = len(src.files)
    rep["output_hygiene"] = hygiene
    rep["engine"] = {**engine_info, "streaming": True, "batch_rows": BATCH_ROWS}
    rep["timing"]["seconds"] = time.perf_counter() - t0
    rep["audit"] = trail(t0, files=[file_entry(output, "output", since=t0)],
                         reproduce=reproduce_entry(request, plan))
    # one transaction: the output and the report appear together or not at all
    with files:
        if rep_path is not None:
            write_json(rep, rep_path, force=force, into=files)
        files.commit()
    if rep_path is None and str(report) == "-":
        write_json(rep, None, force=force)
    return rep


def _check_engine(request: ProtectRequest) -> str:
    """The request's streaming engine (default ``"local"``; a known name, and no
    ``scheduler`` without ``"dask"``, as the request says), with Dask installed for
    ``"dask"``."""
    engine = request.engine or "local"
    if engine == "dask":
        import_distributed()
    return engine


def protect_streaming(
    input: str | Path,
    output: str | Path,
    request: ProtectRequest,
    *,
    cluster: Mapping[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """:func:`microagg_cli.api.protect` for the streaming engines (``--engine``, or a
    Parquet dataset directory as input; a Parquet or CSV file with ``--engine``): checks
    the options the streaming mode supports, builds the plan, then runs
    :func:`protect_stream`. ``request``: the options
    (:class:`microagg_cli.request.ProtectRequest`; ``engine`` None means ``"local"``)."""
    engine = _check_engine(request)
    read, run = request.read, request.run
    plan, columns, drop, passthrough = request.plan, request.columns, request.drop, request.passthrough
    where = "--engine " + engine if engine == "dask" else "the streaming mode (--engine local or a dataset directory)"
    unsupported = [
        ("--shuffle-rows", request.shuffle_rows, "the streaming mode writes rows in input order"),
        ("--evaluate", request.evaluate_risk, "run sdc evaluate on the output instead"),
        ("--thousands", read.thousands, "remove the separators first, or protect in memory (without --engine)"),
        ("--na-values", read.na_values, "blank the placeholders first, or protect in memory (without --engine)"),
        ("--metadata", request.metadata, "protect in memory (without --engine), or give the roles as options"),
    ]
    for option, given, hint in unsupported:
        if given:
            raise InvalidParameterError(f"{option} is not supported by {where}: {hint}")
    if str(input) == "-":
        raise InvalidParameterError(f"{where} reads a file or a dataset directory, not stdin")
    src = open_source(input, read)
    is_csv = isinstance(src, CsvSource)
    stand_in = Table(src.schema.empty_table(), "csv" if is_csv else "parquet", src.path)
    roles = request.roles
    default_selection = False
    if plan is None:
        get_method(request.method)
        if request.k is None:
            raise InvalidParameterError("k is required (-k K)")
        if columns is None:
            for label, names in (("--drop", drop or []), ("--passthrough", passthrough or [])):
                for name in names:
                    if name not in src.columns:
                        raise DataError(f"{label}: no column {quote(name)} in the input "
                                        f"(columns: {name_list(src.columns)})")
            columns = _default_columns(src, set(drop or []) | set(passthrough or []) | set(roles))
            if not columns:
                raise DataError("the input has no numeric column to protect; name them with --columns")
            default_selection = True
        protected, dropped = resolve_columns(stand_in, columns, drop, passthrough)
        plan = BlockPlan.single(protected, method=request.method, k=request.k, params=request.params or {},
                                drop=tuple(dropped), passthrough=tuple(passthrough or ()))
    check_id_column(src.columns, plan, request.id_column)
    check_keys(src.columns, plan, run.keys, run.strata)
    check_options(src.columns, plan, run)  # a bad option is exit 2 before the roles are judged
    # every column held against its evidence, as in memory (one column read at a time)
    fmt, delim, dec = ("csv", src.delimiter, src.decimal) if is_csv else ("parquet", ",", ".")
    context = RoleContext(explicit_roles(request, request.plan), declared_roles(stand_in, None))
    check_roles(stand_in, request, plan, context,
                evidence_of=lambda name: column_evidence(Table(src.read_column(name), fmt, src.path, delim, dec), name))
    if not default_selection:  # nothing released in clear unless named (the default selection checked its own)
        for name in src.columns:
            if name not in plan.columns and name not in plan.drop and name not in plan.passthrough \
                    and name not in roles:
                check_release(Table(src.read_column(name), fmt, src.path, delim, dec), name)
    return protect_stream(input, output, plan, request.replace(engine=engine), cluster=cluster, progress=progress)
