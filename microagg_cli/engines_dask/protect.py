"""A thin-client run from an opened Parquet input to staged output files.

:func:`protect_thin` drives :class:`microagg_cli.engines_dask.thin.ThinRun` (the
workers read their rows, the cuts come from their statistics, parts and output files
are made on the workers) and stages the output files in the run's
:class:`microagg_cli.outputs.OutputSet`; :func:`microagg_cli.engines.protect_stream`
chooses this path and writes the report.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..audit import digesting, digesting_folder
from ..blocking import BlockPlan
from ..errors import InvalidParameterError
from ..io import PARQUET_ROW_GROUP_ROWS, OutputSet
from ..progress import phase as progress_phase
from ..protection.run import HYGIENE_KEY
from ..request import ProtectRequest
from .session import DaskRunner, peak_rss_bytes
from .thin import ReadSpec, ThinRun, WriteSpec, temp_beside

__all__ = ["protect_thin"]


def protect_thin(client: Any, runner: DaskRunner, src: Any, target: Any, plan: BlockPlan,
                 schema: Any, request: ProtectRequest, *, files: OutputSet, progress: Callable[[int], None],
                 t0: float, batch_rows: int) -> tuple[list[Any], list[tuple[float, float]], dict[str, Any]]:
    """The thin Dask client (:mod:`microagg_cli.engines_dask`): workers read their rows,
    the cuts come from their statistics, parts and output files are made on the workers;
    the output is staged in ``files`` (committed by the caller). ``request``: the run's
    options (seed, statistic, part size, bound, the identifier column to regenerate).
    ``src``: the :class:`microagg_cli.engines.ParquetSource`; ``target``: the output
    (its ``path``, ``is_dataset``); ``batch_rows``: rows per batch the writers read."""
    from ..protection.block import BlockResult

    seed, id_column = request.run.seed, request.regenerated_id

    spec = ReadSpec(tuple(str(f.resolve()) for f in src.files), tuple(src.rows))
    run = ThinRun(client, spec, plan, request.run, progress=progress)
    from distributed import KilledWorker

    try:
        stats, il_parts, details = run.protect()
        results = [BlockResult(block, None, None, st) for block, st in zip(run.resolved, stats)]  # type: ignore[arg-type]
        t_pass1 = time.perf_counter() - t0
        client_peak = peak_rss_bytes()
        t1 = time.perf_counter()
        wspec = WriteSpec(schema, tuple(tuple(b.columns) for b in plan.blocks), batch_rows, PARQUET_ROW_GROUP_ROWS,
                          src.n_rows, int(seed), id_column, HYGIENE_KEY)
        starts = np.concatenate([[0], np.cumsum(src.rows)]).astype(int).tolist()
        try:
            with progress_phase(f"writing {target.path.name}", total=None):
                if target.is_dataset:
                    def build(tmp: Path) -> None:
                        run.write([(str((tmp / name).resolve()), [(spec.files[i], src.rows[i])], starts[i])
                                   for i, name in enumerate(src.relative_names())], wspec)

                    files.add_folder(target.path, digesting_folder(target.path, build), what="output")
                else:
                    def writer_fn(fh: Any) -> None:
                        # one worker writes the file beside the target; it is copied into the
                        # output set's temporary file (never held whole in memory) and removed
                        part = temp_beside(target.path)
                        try:
                            run.write([(str(part.resolve()), list(zip(spec.files, src.rows)), 0)], wspec)
                            with open(part, "rb") as fin:
                                for chunk in iter(lambda: fin.read(1 << 20), b""):
                                    fh.write(chunk)
                        finally:
                            with contextlib.suppress(FileNotFoundError):
                                os.unlink(part)

                    files.add_file(target.path, digesting(target.path, writer_fn), what="output")
        except BaseException:
            files.discard()
            raise
        info = runner.describe()
    except KilledWorker:
        raise InvalidParameterError(
            "Dask workers died while protecting a part (out of memory?); use a smaller --partition-size "
            "or give the workers more memory; nothing was written"
        ) from None
    finally:
        run.release()
    info.update(mode="workers read their rows and write the output", clientpeak_rss_bytes=client_peak,
                pass1_seconds=t_pass1, pass2_seconds=time.perf_counter() - t1, thin=details)
    return results, il_parts, info
