"""The thin Dask client: workers read their own rows, cut, protect and write; the
client holds no record.

:func:`microagg_cli.engines.protect_stream` runs this path for ``--engine dask`` when
the input is a Parquet file or dataset directory the workers can open (a shared file
system) and the run needs nothing else per record (no strata, no weights,
``--missing error``, a method whose output is labels, a Parquet output); otherwise it
keeps the mode where the client reads the protected columns and ships the parts' rows
(the report's ``engine.mode`` says which ran). Everything here is a Dask task on plain
arguments (file names, row ranges, a few numbers per node of the splitting tree):

1. **units** -- row ranges of :data:`UNIT_CHUNKS` chunks of
   :data:`microagg_cli.splitting.CHUNK_ROWS` records; a worker reads its unit's
   protected columns from the Parquet files (:func:`read_rows`) and keeps them.
2. **scaling and cuts** -- the client asks the units for partial sums per chunk and
   node (:func:`unit_moments`, :func:`unit_spreads`, :func:`node_moments`,
   :func:`node_cross`) and adds them exactly: the z-scaling, node means and principal
   axes are bit for bit those of :func:`microagg_cli.splitting.split_indices` (the
   chunk rule). The median of a node, the record of rank floor(m/2) in (projection,
   input index) order, is found by an exact radix selection on the 128-bit keys
   (:func:`microagg_cli.splitting.sort_keys` of the projection, input index): 16
   bits per round (:func:`node_histograms`, summed on a worker: :func:`pick_bins`),
   and once at most
   :data:`CANDIDATES` records share the known digits they are fetched and ranked
   (:func:`node_candidates`). The client holds three numbers per node and round.
3. **parts** -- every unit splits its rows by part (:func:`split_unit`); a part task
   gathers its rows, protects them with the block's scaling and the seed of its part
   id (:func:`microagg_cli.protection.partitioned.part_task`, as every engine does) and keeps
   the protected values; it returns its statistics and its distinct protected rows by
   hash bucket, which :func:`reduce_classes` counts exactly (k', k_min).
4. **output** -- one writer task per output file (one per input file for a dataset
   directory, one for a single file) collects its rows' protected values from the
   parts and streams the file's other columns, writing the bytes the local engine
   writes (:func:`write_parquet_rows`), into the temporary folder of the run's
   :class:`microagg_cli.outputs.OutputSet`; nothing appears under the final name until
   every writer has succeeded.

Every task is a pure function of the input files and its arguments, so a worker lost
mid-run is replaced by Dask recomputing the lost results from their lineage; the
output bytes do not change.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import time
from dataclasses import dataclass
from operator import getitem
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

import numpy as np

from .. import splitting
from ..request import RunOptions
from ..blocking import Block, BlockPlan
from ..errors import check_k_value
from ..io import Table, file_mode, numeric_matrix
from ..methods import get_method
from ..partition import sse
from ..splitting import (
    axis_of,
    cross_partial,
    exact_sum,
    finish_scaling,
    moment_partial,
    projections,
    sort_keys,
    spread_partial,
)
from ..protection import partitioned
from ..protection.block import BlockResult, block_seed
from ..protection.table import optimality

__all__ = [
    "UNIT_CHUNKS", "CANDIDATES", "THIN_LB_ROWS", "N_BUCKETS", "DIGITS", "ReadSpec", "thin_reason",
    "read_rows", "write_parquet_rows", "replaced_slice", "ThinRun", "can_open", "workers_can_open",
]

log = logging.getLogger("microagg_cli")

#: Chunks of the chunk rule per unit (a unit is what one task reads and keeps).
UNIT_CHUNKS = 8
#: A node's median is ranked on the client once at most this many records share its known key digits.
CANDIDATES = 1 << 15
#: The report's LB_NN needs the whole block on one worker: only blocks up to this size.
THIN_LB_ROWS = 200_000
#: Hash buckets of the distinct protected rows (the k' / k_min count).
N_BUCKETS = 8
#: Radix digits of the selection key (field 0: the projection's sort key, 1: the input index).
DIGITS = ((0, 48), (0, 32), (0, 16), (0, 0), (1, 48), (1, 32), (1, 16), (1, 0))
_RADIX = 1 << 16


def thin_reason(*, parquet: bool, output_parquet: bool, plan: BlockPlan, strata: Any, weights: Any,
                missing: str, partition_size: int | None, n_rows: int) -> str | None:
    """Why the thin client cannot run (None: it can)."""
    if not parquet:
        return "the input is not Parquet (only the client reads it)"
    if not output_parquet:
        return "the output is not Parquet"
    if strata:
        return "--strata"
    if weights:
        return "--weights"
    if missing != "error":
        return f"--missing {missing}"
    if not partition_size:
        return "no --partition-size"
    if n_rows <= partition_size:
        return "the block fits in one part"
    for block in plan.blocks:
        if get_method(block.method).output != "labels":
            return f"method {block.method} (its output is not a partition)"
    return None


# ---------------------------------------------------------------------------- reading


def can_open(files: tuple[str, ...]) -> bool:
    """Whether this process can read every file (run on each worker before the thin mode)."""
    return all(os.access(f, os.R_OK) for f in files)


def workers_can_open(client: Any, files: tuple[str, ...]) -> bool:
    """Whether every worker of ``client`` can read the input files (a shared file system)."""
    try:
        answers = client.run(can_open, files)
    except Exception:  # noqa: BLE001 -- a worker that cannot answer cannot read them either
        return False
    return bool(answers) and all(answers.values())


@dataclass(frozen=True)
class ReadSpec:
    """Where the rows are: Parquet files (paths the workers can open) and their row counts."""

    files: tuple[str, ...]
    rows: tuple[int, ...]

    @property
    def n_rows(self) -> int:
        return int(sum(self.rows))


def _range_table(spec: ReadSpec, start: int, stop: int, columns: list[str]) -> Any:
    """Rows [start, stop) of the concatenated files, ``columns`` only (only the row groups needed are read)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pieces = []
    offset = 0
    for path, rows in zip(spec.files, spec.rows):
        lo, hi = max(start, offset), min(stop, offset + rows)
        if lo < hi:
            pf = pq.ParquetFile(path)
            groups, first, at = [], None, offset
            for g in range(pf.metadata.num_row_groups):
                nr = pf.metadata.row_group(g).num_rows
                if at < hi and at + nr > lo:
                    groups.append(g)
                    first = at if first is None else first
                at += nr
            table = pf.read_row_groups(groups, columns=columns, use_threads=False)
            pieces.append(table.slice(lo - first, hi - lo))
        offset += rows
    return pa.concat_tables(pieces) if len(pieces) > 1 else pieces[0]


def read_rows(spec: ReadSpec, start: int, stop: int, columns: list[str]) -> np.ndarray:
    """Rows [start, stop) of ``columns`` as a float matrix, checked as the local engine
    checks them (:func:`microagg_cli.io.numeric_matrix`; no missing value). A task."""
    table = Table(_range_table(spec, start, stop, list(columns)), "parquet", Path(spec.files[0]))
    return numeric_matrix(table, list(columns))


# ------------------------------------------------------------------ worker statistics


def _chunks(rows: np.ndarray, n: int) -> list[np.ndarray]:
    """``rows`` (increasing positions in a unit that starts on a chunk border) cut at chunk borders."""
    step = splitting.CHUNK_ROWS
    cuts = np.searchsorted(rows, np.arange(step, n, step))
    return [s for s in np.split(rows, cuts) if s.size]


def unit_moments(X: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """(observed counts, partial column sums per chunk) of a unit's rows. A task."""
    step = splitting.CHUNK_ROWS
    return (~np.isnan(X)).sum(axis=0), [moment_partial(X[a:a + step]) for a in range(0, X.shape[0], step)]


def unit_spreads(X: np.ndarray, mean: np.ndarray) -> list[np.ndarray]:
    step = splitting.CHUNK_ROWS
    return [spread_partial(X[a:a + step], mean) for a in range(0, X.shape[0], step)]


def zscale(X: np.ndarray, mean: np.ndarray, scale: np.ndarray) -> np.ndarray:
    Z = (X - mean) / scale
    return np.nan_to_num(Z, copy=False)


def _labels(lab: np.ndarray | None, n: int) -> np.ndarray:
    return np.zeros(n, dtype=np.int32) if lab is None else lab


def _node_rows(lab: np.ndarray, ids: list[int]) -> list[np.ndarray]:
    """Positions (increasing) of the rows of each node: one stable sort, not one scan per node."""
    if len(ids) == 1:
        return [np.flatnonzero(lab == ids[0])]
    order = np.argsort(lab, kind="stable")
    sorted_lab = lab[order]
    lo = np.searchsorted(sorted_lab, ids, side="left")
    hi = np.searchsorted(sorted_lab, ids, side="right")
    return [order[a:b] for a, b in zip(lo, hi)]


def node_moments(Z: np.ndarray, lab: np.ndarray | None, ids: list[int]) -> list[list[np.ndarray]]:
    """Per node: the partial column sums of its rows in each chunk of the unit. A task."""
    lab = _labels(lab, Z.shape[0])
    return [[moment_partial(Z[s]) for s in _chunks(rows, Z.shape[0])] for rows in _node_rows(lab, ids)]


def node_cross(Z: np.ndarray, lab: np.ndarray | None, ids: list[int], means: list[np.ndarray]) -> list[list[np.ndarray]]:
    """Per node: the partial cross-products about its mean in each chunk. A task."""
    lab = _labels(lab, Z.shape[0])
    return [[cross_partial(Z[s], mu) for s in _chunks(rows, Z.shape[0])]
            for rows, mu in zip(_node_rows(lab, ids), means)]


def node_keys(Z: np.ndarray, lab: np.ndarray | None, ids: list[int], means: list[np.ndarray],
              axes: list[np.ndarray]) -> np.ndarray:
    """Sort keys of the projections of the rows of the nodes being split (0 elsewhere). A task."""
    lab = _labels(lab, Z.shape[0])
    hi = np.zeros(Z.shape[0], dtype=np.uint64)
    for rows, mu, v in zip(_node_rows(lab, ids), means, axes):
        if rows.size:
            hi[rows] = sort_keys(projections(Z[rows], mu, v))
    return hi


def _matching(hi: np.ndarray, rows: np.ndarray, start: int, fixed: list[int]) -> tuple[np.ndarray, ...]:
    fields = [hi[rows], (rows + start).astype(np.uint64)]
    for d, value in enumerate(fixed):
        field, shift = DIGITS[d]
        keep = ((fields[field] >> np.uint64(shift)) & np.uint64(_RADIX - 1)) == np.uint64(value)
        fields = [f[keep] for f in fields]
    return fields[0], fields[1]


def node_histograms(hi: np.ndarray, lab: np.ndarray | None, start: int, ids: list[int],
                    fixed: list[list[int]]) -> np.ndarray:
    """(nodes, 65536) counts of the next key digit among the rows matching the known digits. A task."""
    lab = _labels(lab, hi.shape[0])
    out = np.zeros((len(ids), _RADIX), dtype=np.int32)  # a unit holds < 2**31 records
    for i, (rows, known) in enumerate(zip(_node_rows(lab, ids), fixed)):
        fields = _matching(hi, rows, start, known)
        field, shift = DIGITS[len(known)]
        digit = ((fields[field] >> np.uint64(shift)) & np.uint64(_RADIX - 1)).astype(np.int64)
        out[i] = np.bincount(digit, minlength=_RADIX)
    return out


def add_arrays(*arrays: np.ndarray) -> np.ndarray:
    total = arrays[0].astype(np.int64)
    for a in arrays[1:]:
        total += a
    return total


def pick_bins(ranks: list[int], *hists: np.ndarray) -> list[tuple[int, int, int]]:
    """Per node: (the digit holding its record of rank ``ranks[i]``, that record's rank
    among the records with this digit, how many they are), from the units' histograms.
    A task: the client gets three numbers per node, not the histograms."""
    total = add_arrays(*hists)
    out = []
    for row, rank in enumerate(ranks):
        cum = np.cumsum(total[row])
        b = int(np.searchsorted(cum, rank, side="right"))
        out.append((b, rank - (int(cum[b - 1]) if b else 0), int(total[row][b])))
    return out


def node_candidates(hi: np.ndarray, lab: np.ndarray | None, start: int, ids: list[int],
                    fixed: list[list[int]]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per node: (key, input index) of the rows matching all its known digits. A task."""
    lab = _labels(lab, hi.shape[0])
    return [_matching(hi, rows, start, known) for rows, known in zip(_node_rows(lab, ids), fixed)]


def assign(hi: np.ndarray, lab: np.ndarray | None, start: int,
           splits: list[tuple[int, int, int, int, int]]) -> np.ndarray:
    """New node labels: a split node's rows below its pivot (key, index) go to its first child. A task."""
    lab = _labels(lab, hi.shape[0])
    new = lab.copy()
    for rows, (nid, pivot_hi, pivot_lo, first, second) in zip(_node_rows(lab, [sp[0] for sp in splits]), splits):
        h, g = hi[rows], (rows + start).astype(np.uint64)
        below = (h < np.uint64(pivot_hi)) | ((h == np.uint64(pivot_hi)) & (g < np.uint64(pivot_lo)))
        new[rows] = np.where(below, first, second)
    return new


def split_unit(X: np.ndarray, lab: np.ndarray | None, start: int, leaves: list[int]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per part (leaf, in part order): (input indices, rows of X) of the unit. A task."""
    lab = _labels(lab, X.shape[0])
    return [(rows + start, X[rows]) for rows in _node_rows(lab, leaves)]


def _row_bytes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct rows as a void array, their counts); -0.0 equals 0.0."""
    key = np.ascontiguousarray(values + 0.0)
    void = key.view(np.dtype((np.void, key.dtype.itemsize * key.shape[1]))).ravel()
    return np.unique(void, return_counts=True)


def _bucket(void: np.ndarray, p: int) -> np.ndarray:
    bits = np.frombuffer(void.tobytes(), dtype=np.uint64).reshape(-1, p)
    h = np.full(bits.shape[0], 0xCBF29CE484222325, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(p):
            h = (h ^ bits[:, j]) * np.uint64(0x100000001B3)
            h ^= h >> np.uint64(29)
    return (h % np.uint64(N_BUCKETS)).astype(np.int64)


def run_part(j: int, block: Block, entropy: Any, spawn: tuple[int, ...], name: str,
             scaling: tuple[np.ndarray, np.ndarray], kwargs: dict[str, Any],
             *pieces: tuple[np.ndarray, np.ndarray]) -> dict[str, Any]:
    """Protect part ``j`` from its pieces (one per unit, in unit order). A task.

    Returns its statistics (``summary``), its input indices and protected values (kept
    on the worker for the writers) and its distinct protected rows by hash bucket."""
    gidx = np.concatenate([p[0] for p in pieces])
    X = np.concatenate([p[1] for p in pieces])
    res: BlockResult = partitioned.part_task(X, block.k, entropy, spawn + (j,), None, name, scaling, kwargs)
    mean, scale = scaling
    Z = (X - mean) / scale
    Zp = (res.values - mean) / scale
    void, counts = _row_bytes(res.values)
    bucket = _bucket(void, X.shape[1])
    classes = [(void[bucket == b], counts[bucket == b]) for b in range(N_BUCKETS)]
    summary = {
        "rows": int(X.shape[0]), "stats": res.stats, "compile_seconds": res.compile_seconds, "block": res.block,
        "sq_err": float(((Z - Zp) ** 2).sum()), "z_sum": Z.sum(axis=0), "z_sq": (Z * Z).sum(axis=0),
        "sse": sse(Z, res.labels),
    }
    return {"summary": summary, "gidx": gidx, "values": res.values, "classes": classes}


def part_classes(result: dict[str, Any], b: int) -> tuple[np.ndarray, np.ndarray]:
    return result["classes"][b]


def reduce_classes(k: int, *buckets: tuple[np.ndarray, np.ndarray]) -> tuple[int, int | None, int]:
    """(classes, smallest class, records in classes below k) of one hash bucket of every part. A task."""
    voids = [v for v, _ in buckets if v.size]
    if not voids:
        return 0, None, 0
    void = np.concatenate(voids)
    counts = np.concatenate([c for v, c in buckets if v.size])
    _, inverse = np.unique(void, return_inverse=True)
    sizes = np.bincount(inverse.reshape(-1), weights=counts).astype(np.int64)
    return int(sizes.size), int(sizes.min()), int(sizes[sizes < k].sum())


def part_slices(result: dict[str, Any], bounds: list[int]) -> list[tuple[np.ndarray, np.ndarray]]:
    """The part's (positions in the output file, values) for each output file [bounds[f], bounds[f+1]). A task."""
    gidx, values = result["gidx"], result["values"]
    cuts = np.searchsorted(gidx, bounds)
    return [(gidx[a:b] - bounds[f], values[a:b]) for f, (a, b) in enumerate(zip(cuts[:-1], cuts[1:]))]


def run_check(block: Block, entropy: Any, spawn: tuple[int, ...], stat: str, partition_size: int, n0: int,
              *pieces: tuple[np.ndarray, np.ndarray]) -> dict[str, Any]:
    """The partitioned mode's check on the union of parts 1 and 2 (their pieces: part 1's
    ``n0`` first), as :func:`microagg_cli.protection.partitioned.protect_rows` runs it. A task."""
    g = [np.concatenate([p[0] for p in pieces[:n0]]), np.concatenate([p[0] for p in pieces[n0:]])]
    X = np.concatenate([p[1] for p in pieces])
    allg = np.concatenate(g)
    order = np.argsort(allg, kind="stable")
    sample = allg[order]
    return partitioned.check_task(X[order], block, [np.searchsorted(sample, x) for x in g], entropy, spawn,
                                   stat, partition_size)


def run_optimality(k: int, il: float | None, method_seconds: float, bound: str, *units: np.ndarray) -> dict[str, Any]:
    """The report's LB_NN of a (small) block, on a worker. A task."""
    return optimality(np.concatenate(units), k, il, method_seconds=method_seconds, bound=bound)


# ---------------------------------------------------------------------------- writing


def replaced_slice(values: Any, row0: int, rows: int, type: Any) -> Any:
    """Rows ``row0 .. row0 + rows`` of a replaced column as an Arrow array of ``type``:
    a numpy array converted (NaN as null), an Arrow array (released key cells) sliced."""
    import pyarrow as pa

    if isinstance(values, pa.Array):
        return values.slice(row0, rows)
    return pa.array(values[row0:row0 + rows], type=type, from_pandas=True)


def write_parquet_rows(writer: Any, schema: Any, batches: Iterable[tuple[int, Any]],
                       replaced: Mapping[str, np.ndarray], row0: int, *, row_group_rows: int,
                       advance: Callable[[int], None] | None = None) -> int:
    """Write one input file's batches, with the columns of ``replaced`` (indexed by row
    from ``row0``) put in, into ``writer`` in row groups of exactly ``row_group_rows``
    rows (the last one shorter), as the in-memory writer makes them. Returns the next row."""
    import pyarrow as pa

    pending: list[Any] = []
    held = 0

    def flush(final: bool) -> None:
        nonlocal pending, held
        if not pending:
            return
        whole = pa.Table.from_batches(pending, schema=schema)
        cut = held if final else (held // row_group_rows) * row_group_rows
        if cut:
            writer.write_table(whole.slice(0, cut), row_group_size=row_group_rows)
        rest = whole.slice(cut)
        pending, held = (rest.to_batches() if rest.num_rows else []), rest.num_rows

    for rows, batch in batches:
        arrays = []
        for field in schema:
            if field.name in replaced:
                arrays.append(replaced_slice(replaced[field.name], row0, rows, field.type))
            else:
                arrays.append(batch.column(batch.schema.get_field_index(field.name)))
        pending.append(pa.RecordBatch.from_arrays(arrays, schema=schema))
        held += rows
        row0 += rows
        if advance is not None:
            advance(rows)
        if held >= row_group_rows:
            flush(False)
    flush(True)
    return row0


def _file_batches(path: str, n: int, columns: list[str], batch_rows: int) -> Iterator[tuple[int, Any]]:
    import pyarrow.parquet as pq

    if not columns:
        for start in range(0, n, batch_rows):
            yield min(batch_rows, n - start), None
        return
    for batch in pq.ParquetFile(path).iter_batches(batch_size=batch_rows, columns=columns, use_threads=False):
        yield batch.num_rows, batch


@dataclass(frozen=True)
class WriteSpec:
    """What a writer task needs besides the protected values."""

    schema: Any
    block_columns: tuple[tuple[str, ...], ...]
    batch_rows: int
    row_group_rows: int
    n_rows: int
    seed: int
    id_column: str | None
    hygiene_key: tuple[int, ...]


def write_output(dest: str, spec: WriteSpec, sources: list[tuple[str, int]], row0: int, n_parts: list[int],
                 *pieces: tuple[np.ndarray, np.ndarray]) -> int:
    """Write the output file ``dest`` from input files ``sources`` ((path, rows), starting
    at input row ``row0``) with the protected values of every block (``n_parts[b]``
    pieces of block b, in order). A task; returns the rows written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = sum(r for _, r in sources)
    replaced: dict[str, np.ndarray] = {}
    at = 0
    for columns, count in zip(spec.block_columns, n_parts):
        values = np.empty((rows, len(columns)))
        for pos, vals in pieces[at:at + count]:
            values[pos] = vals
        at += count
        for j, col in enumerate(columns):
            replaced[col] = values[:, j]
    if spec.id_column is not None:
        rng = np.random.default_rng(np.random.SeedSequence(int(spec.seed), spawn_key=spec.hygiene_key))
        ids = (rng.permutation(spec.n_rows) + 1)[row0:row0 + rows]
        id_type = spec.schema.field(spec.id_column).type
        as_text = pa.types.is_string(id_type) or pa.types.is_large_string(id_type)
        replaced[spec.id_column] = ids.astype(str) if as_text else ids
    read_cols = [f.name for f in spec.schema if f.name not in replaced]
    Path(dest).parent.mkdir(parents=True, exist_ok=True)
    with open(dest, "wb") as fh:
        with pq.ParquetWriter(fh, spec.schema) as writer:
            local = 0
            for path, n in sources:
                local = write_parquet_rows(writer, spec.schema, _file_batches(path, n, read_cols, spec.batch_rows),
                                           replaced, local, row_group_rows=spec.row_group_rows)
        fh.flush()
        os.fsync(fh.fileno())
    os.chmod(dest, file_mode())
    return rows


def temp_beside(path: Path) -> Path:
    """A hidden temporary name beside ``path`` in the naming of :mod:`microagg_cli.outputs`
    (``.<name>.sdc-<host>-<pid>-<random>.tmp``), so that a later run removes it if this
    process is killed before it is gone."""
    import re

    host = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname().split(".")[0])[:40] or "host"
    parent = path.parent if str(path.parent) else Path(".")
    return parent / f".{path.name}.sdc-{host}-{os.getpid()}-{secrets.token_hex(4)}.tmp"


# ------------------------------------------------------------------------------ client


class ThinRun:
    """One thin-client run on ``client``: :meth:`protect` (cut and protect every block),
    then :meth:`write_folder` / :meth:`write_file` (the output), then :meth:`release`."""

    def __init__(self, client: Any, spec: ReadSpec, plan: BlockPlan, options: RunOptions, *,
                 progress: Callable[[int], None] | None = None):
        self.client = client
        self.spec = spec
        self.plan = plan
        self.seed = options.seed
        self.stat = options.stat
        self.partition_size = int(options.partition_size or 0)
        self.bound = options.bound
        self.progress = progress
        self.tag = secrets.token_hex(6)
        self.counter = 0
        self.part_futures: list[list[Any]] = []  # per block, per part
        self.timing: dict[str, float] = {}
        self.rounds = 0
        self.resolved: list[Block] = []  # per block, with its parameters resolved

    # -- task plumbing
    def _submit(self, func: Callable[..., Any], *args: Any) -> Any:
        self.counter += 1
        name = func.__name__.strip("_").replace("_", "-")
        return self.client.submit(func, *args, key=f"sdc-{name}-{self.tag}-{self.counter}", pure=False)

    def _gather(self, futures: list[Any]) -> list[Any]:
        self.rounds += 1
        return self.client.gather(futures)

    def units(self) -> list[tuple[int, int]]:
        step = UNIT_CHUNKS * splitting.CHUNK_ROWS
        n = self.spec.n_rows
        return [(a, min(a + step, n)) for a in range(0, n, step)]

    # -- the cuts
    def _scaling(self, X_u: list[Any]) -> tuple[np.ndarray, np.ndarray]:
        got = self._gather([self._submit(unit_moments, x) for x in X_u])
        cnt = sum(c for c, _ in got)
        sums = exact_sum([s for _, parts in got for s in parts])

        def spread(mean: np.ndarray) -> np.ndarray:
            spreads = self._gather([self._submit(unit_spreads, x, mean) for x in X_u])
            return exact_sum([s for parts in spreads for s in parts])

        return finish_scaling(cnt, sums, spread)

    def _cut(self, Z_u: list[Any], starts: list[int], max_size: int) -> tuple[list[Any], list[int], list[int]]:
        """Split the block's records into parts as :func:`split_indices` does; returns the
        final label futures per unit, the leaf ids in part order and their sizes."""
        n = self.spec.n_rows
        lab_u: list[Any] = [None] * len(Z_u)
        path: dict[int, tuple[int, ...]] = {0: ()}
        size: dict[int, int] = {0: n}
        active = [0] if n > max_size else []
        next_id = 1
        while active:
            moments = self._gather([self._submit(node_moments, z, lab, active) for z, lab in zip(Z_u, lab_u)])
            means = [exact_sum([s for unit in moments for s in unit[i]]) / size[nid] for i, nid in enumerate(active)]
            cross = self._gather([self._submit(node_cross, z, lab, active, means) for z, lab in zip(Z_u, lab_u)])
            axes = [axis_of(exact_sum([c for unit in cross for c in unit[i]])) for i in range(len(active))]
            hi_u = [self._submit(node_keys, z, lab, active, means, axes) for z, lab in zip(Z_u, lab_u)]
            pivots = self._select(hi_u, lab_u, starts, active, [size[nid] // 2 for nid in active])
            splits = []
            nxt = []
            for nid, (ph, pl) in zip(active, pivots):
                first, second = next_id, next_id + 1
                next_id += 2
                half = size[nid] // 2
                path[first], path[second] = path[nid] + (0,), path[nid] + (1,)
                size[first], size[second] = half, size[nid] - half
                splits.append((nid, ph, pl, first, second))
                nxt.extend(c for c in (first, second) if size[c] > max_size)
            lab_u = [self._submit(assign, h, lab, s, splits) for h, lab, s in zip(hi_u, lab_u, starts)]
            del hi_u
            active = nxt
        parents = {p[:-1] for p in path.values() if p}
        leaves = sorted((nid for nid, p in path.items() if p not in parents), key=lambda nid: path[nid])
        return lab_u, leaves, [size[nid] for nid in leaves]

    def _select(self, hi_u: list[Any], lab_u: list[Any], starts: list[int], ids: list[int],
                ranks: list[int]) -> list[tuple[int, int]]:
        """Exact (key, index) of the record of rank ``ranks[i]`` of each node: radix rounds, then candidates."""
        fixed: list[list[int]] = [[] for _ in ids]
        rank = list(ranks)
        todo = list(range(len(ids)))
        pivots: list[tuple[int, int] | None] = [None] * len(ids)
        while todo:
            hists = [self._submit(node_histograms, h, lab, s, [ids[i] for i in todo], [fixed[i] for i in todo])
                     for h, lab, s in zip(hi_u, lab_u, starts)]
            picked = self._gather([self._submit(pick_bins, [rank[i] for i in todo], *hists)])[0]
            del hists
            fetch = []
            for (b, within, count), i in zip(picked, todo):
                rank[i] = within
                fixed[i].append(b)
                if count <= CANDIDATES or len(fixed[i]) == len(DIGITS):
                    fetch.append(i)
            if fetch:
                got = self._gather([self._submit(node_candidates, h, lab, s, [ids[i] for i in fetch],
                                                 [fixed[i] for i in fetch])
                                    for h, lab, s in zip(hi_u, lab_u, starts)])
                for row, i in enumerate(fetch):
                    hi = np.concatenate([unit[row][0] for unit in got])
                    lo = np.concatenate([unit[row][1] for unit in got])
                    order = np.lexsort((lo, hi))
                    pivots[i] = (int(hi[order[rank[i]]]), int(lo[order[rank[i]]]))
            todo = [i for i in todo if pivots[i] is None]
        return [p for p in pivots if p is not None]

    # -- protection
    def protect(self) -> tuple[list[dict[str, Any]], list[tuple[float, float]], dict[str, Any]]:
        """Cut and protect every block; returns per block its statistics (the report's
        block entry, as :func:`microagg_cli.protection.table.block_stats` makes it) with
        the resolved block, the IL_SSE parts, and run details."""
        units = self.units()
        starts = [a for a, _ in units]
        self.file_bounds: list[int] = []
        out_stats, il_parts = [], []
        for i, block in enumerate(self.plan.blocks):
            t0 = time.perf_counter()
            splitting.check_partition_size(self.partition_size, check_k_value(block.k))
            cols = list(block.columns)
            log.info("block %s: %s, k=%d, %d x %d, 1 stratum/strata (read by the Dask workers)", block.name,
                     block.method, block.k, self.spec.n_rows, len(cols))
            X_u = [self._submit(read_rows, self.spec, a, b, cols) for a, b in units]
            mean, scale = self._scaling(X_u)
            Z_u = [self._submit(zscale, x, mean, scale) for x in X_u]
            lab_u, leaves, sizes = self._cut(Z_u, starts, self.partition_size)
            del Z_u
            t1 = time.perf_counter()
            seed = block_seed(self.seed, i, None)
            entropy, spawn = seed.entropy, tuple(seed.spawn_key)
            kwargs = dict(method=block.method, params=block.params, columns=block.columns, stat=self.stat)
            splits = [self._submit(split_unit, x, lab, s, leaves) for x, lab, s in zip(X_u, lab_u, starts)]
            pieces = [[self._submit(getitem, sp, j) for sp in splits] for j in range(len(leaves))]
            check = None
            if len(leaves) > 1:
                check = self._submit(run_check, block, entropy, spawn, self.stat, self.partition_size, len(splits),
                                     *pieces[0], *pieces[1])
            futures = [self._submit(run_part, j, block, entropy, spawn, f"{block.name}#part{j + 1}",
                                    (mean, scale), kwargs, *pieces[j]) for j in range(len(leaves))]
            # the units' rows are needed again only for a small block's LB_NN: let the
            # workers free them once split (Dask keeps their lineage for a lost worker)
            keep = X_u if self.spec.n_rows <= THIN_LB_ROWS and self.bound != "off" else []
            del pieces, splits, X_u, lab_u
            summaries = self._summaries(futures, sizes)
            self.part_futures.append(futures)
            classes = self._gather([self._submit(reduce_classes, block.k,
                                                 *[self._submit(part_classes, f, b) for f in futures])
                                    for b in range(N_BUCKETS)])
            checked = check.result() if check is not None else None
            stats, parts_il = self._block_stats(block, summaries, classes, sizes, checked, keep)
            out_stats.append(stats)
            il_parts.append(parts_il)
            self.timing[f"{block.name}_cut_seconds"] = t1 - t0
            self.timing[f"{block.name}_parts_seconds"] = time.perf_counter() - t1
            del keep
        return out_stats, il_parts, {"parts": [len(f) for f in self.part_futures], "rounds": self.rounds,
                                     **self.timing}

    def _summaries(self, futures: list[Any], sizes: list[int]) -> list[dict[str, Any]]:
        from distributed import as_completed

        index = {f.key: j for j, f in enumerate(futures)}
        out: list[Any] = [None] * len(futures)
        summary_futures = [self._submit(getitem, f, "summary") for f in futures]
        by_key = {s.key: index[f.key] for s, f in zip(summary_futures, futures)}
        for fut in as_completed(summary_futures, loop=self.client.loop):
            j = by_key[fut.key]
            out[j] = fut.result()
            fut.release()
            if self.progress is not None:
                self.progress(sizes[j])
        return out

    def _block_stats(self, block: Block, summaries: list[dict[str, Any]], classes: list[tuple[int, Any, int]],
                     sizes: list[int], checked: dict[str, Any] | None, X_u: list[Any]) -> tuple[dict[str, Any], tuple[float, float]]:
        n = self.spec.n_rows
        first = summaries[0]
        resolved = first["block"]
        resolved = Block(block.name, block.columns, resolved.method, resolved.k, resolved.params)
        self.resolved.append(resolved)
        stats: dict[str, Any] = {}
        stats["partitions"] = {"size": self.partition_size, "count": len(sizes), "smallest": int(min(sizes)),
                               "largest": int(max(sizes))}
        if checked is not None:
            stats["partition_check"] = checked
        hist: dict[int, int] = {}
        for s in summaries:
            for size, count in s["stats"]["group_size_histogram"].items():
                hist[int(size)] = hist.get(int(size), 0) + int(count)
        z_sum = exact_sum([s["z_sum"] for s in summaries])
        z_sq = exact_sum([s["z_sq"] for s in summaries])
        sst = float(np.sum(z_sq - z_sum * z_sum / n))
        sq_err = float(exact_sum([np.array([s["sq_err"]]) for s in summaries])[0])
        stats["n_groups"] = sum(s["stats"]["n_groups"] for s in summaries)
        stats["group_size_histogram"] = {str(size): hist[size] for size in sorted(hist)}
        stats["sse"] = float(exact_sum([np.array([s["sse"]]) for s in summaries])[0])
        stats["sst"] = sst
        n_classes = sum(c for c, _, _ in classes)
        k_min = min(m for c, m, _ in classes if c)
        below = sum(b for _, _, b in classes)
        seconds = sum(s["stats"]["seconds"] for s in summaries)
        il = 100.0 * sq_err / sst if sst > 0 else 0.0
        stats.update(il_sse=il, k_prime=n / n_classes, k_min=int(k_min), share_below_k=below / n,
                     k_anonymous=bool(k_min >= block.k), constant_columns=[], seconds=seconds)
        own = get_method(block.method).estimate_seconds(n, len(block.columns), int(block.k), dict(block.params))
        if self.bound == "off":
            stats.update(optimality(np.empty((0, len(block.columns))), block.k, il, method_seconds=own, bound="off"))
        elif n <= THIN_LB_ROWS:
            stats.update(self.client.submit(run_optimality, resolved.k, il, own, self.bound, *X_u,
                                            key=f"sdc-optimality-{self.tag}-{block.name}", pure=False).result())
        else:
            stats.update({"lb_nn": None, "optimality_gap": None,
                          "lb_nn_skipped": (f"the Dask engine computes it for blocks of at most {THIN_LB_ROWS:,} "
                                            "records; sdc evaluate ORIGINAL PROTECTED computes it"),
                          "lb_nn_policy": {"mode": self.bound}})
        stats["missing"] = {"policy": "error", "missing_cells": 0, "records_not_grouped": 0, "records_suppressed": 0,
                            "cells_blanked": {}}
        return stats, (sq_err, sst)

    # -- output
    def _write_futures(self, targets: list[tuple[str, list[tuple[str, int]], int]], wspec: WriteSpec) -> list[Any]:
        bounds = [row0 for _, _, row0 in targets] + [self.spec.n_rows]
        slices = [[self._submit(part_slices, f, bounds) for f in futures] for futures in self.part_futures]
        out = []
        for w, (dest, sources, row0) in enumerate(targets):
            pieces = [self._submit(getitem, s, w) for block in slices for s in block]
            out.append(self._submit(write_output, dest, wspec, sources, row0, [len(b) for b in slices], *pieces))
        return out

    def write(self, targets: list[tuple[str, list[tuple[str, int]], int]], wspec: WriteSpec) -> None:
        """Write every output file (dest, its input files (path, rows), first input row); waits for all."""
        futures = self._write_futures(targets, wspec)
        self.client.gather(futures)

    def release(self) -> None:
        for futures in self.part_futures:
            for f in futures:
                f.release()
        self.part_futures = []
