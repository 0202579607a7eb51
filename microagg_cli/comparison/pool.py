"""Running every cell of a ``sdc compare`` grid, in this process or in a process pool.

:func:`run_grid` runs the cells one after the other (``jobs`` = 1) or in worker
processes (``fork`` on Linux, so workers inherit the table), each worker limited to
its share of the CPUs; rows are stored by cell index, so the result is the same
whatever ``jobs`` is. What every cell of a plan computes from the original alone (the
robust scatter of RMDID1, LB_NN of every k: :func:`~.cells.original_work`) is computed
first, each item by one worker, and copied into every worker (:mod:`microagg_cli.memo`):
at 50,000 x 10 that spares each worker 1.7 s of MCD and one LB_NN query per k. Ctrl-C
stops the workers and :class:`GridInterrupted` carries the finished rows.
:func:`resolve_jobs` turns ``--jobs`` into a worker count.
"""

from __future__ import annotations

import multiprocessing
import signal
import sys
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from .. import memo, threads
from ..errors import InvalidParameterError
from ..io import Table
from .cells import ORIGINAL_CACHES, Cell, EvalOptions, OriginalWork, original_work, run_cell, run_original_work

__all__ = ["GridInterrupted", "resolve_jobs", "run_grid"]


# ------------------------------------------------------------------------ the run


class GridInterrupted(KeyboardInterrupt):
    """Ctrl-C during a grid: ``rows`` holds the finished rows (None where unfinished),
    ``document`` the partial result and ``written`` the files that keep them."""

    def __init__(self, rows: list[dict[str, Any] | None], document: dict[str, Any] | None = None,
                 written: Sequence[str] = ()):
        super().__init__("interrupted")
        self.rows = rows
        self.document = document
        self.written = list(written)


@dataclass
class _WorkerState:
    table: Table
    cells: list[Cell]
    options: EvalOptions
    save_dir: Path | None
    force: bool
    threads: int = 0  # threads per worker (0: no limit)
    work: list[OriginalWork] = field(default_factory=list)  # the original-only work


_STATE: _WorkerState | None = None


def _worker_init(state: _WorkerState) -> None:
    """Worker set-up: the shared inputs, and Ctrl-C left to the parent (which stops us)."""
    global _STATE
    _STATE = state
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if state.threads:  # workers x threads <= CPUs: no oversubscription (ils, LB_NN, OpenBLAS)
        threads.set_limit(state.threads)
        threads.limit_native_pools(state.threads)


def _worker_original(index: int) -> dict[str, Any]:
    """One item of the original-only work; returns what the caches keep (small: the
    MCD's centre and scatter, LB_NN's sums) for the other workers."""
    assert _STATE is not None
    run_original_work(_STATE.table, _STATE.work[index])
    return memo.exported(ORIGINAL_CACHES)


def _worker_run(index: int, shared: dict[str, Any]) -> dict[str, Any]:
    assert _STATE is not None
    s = _STATE
    memo.absorb(shared)
    return run_cell(s.table, s.cells[index], s.options, save_dir=s.save_dir, force=s.force)


def _mp_context() -> Any:
    """``fork`` on Linux (workers inherit the table, no re-import); ``spawn`` elsewhere."""
    methods = multiprocessing.get_all_start_methods()
    if sys.platform.startswith("linux") and "fork" in methods:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and end the worker processes we started."""
    terminate = getattr(pool, "terminate_workers", None)  # Python >= 3.14
    if terminate is not None:
        terminate()
        return
    # before 3.14: the pool's own process handles (shutdown() forgets them)
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    for proc in procs:
        proc.join(timeout=10)


def resolve_jobs(jobs: int | None, cells: int) -> int:
    """``jobs`` (0 or None: one per CPU), at most one per cell and one per CPU (more
    processes than CPUs only slow a CPU-bound grid down)."""
    if jobs is None or jobs == 0:
        jobs = threads.available_cpus()
    if isinstance(jobs, bool) or int(jobs) < 0:
        raise InvalidParameterError(f"--jobs must be >= 0, got {jobs!r}")
    return max(1, min(int(jobs), max(cells, 1), threads.available_cpus()))


def run_grid(
    table: Table,
    cells: Sequence[Cell],
    options: EvalOptions,
    *,
    jobs: int,
    save_dir: Path | None = None,
    force: bool = False,
    progress: Callable[[int, int], None] | None = None,
    on_row: Callable[[int, dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Run every cell; rows in cell order, whatever ``jobs`` is.

    ``on_row(index, row)`` is called in this process as each cell finishes (in
    finishing order) and ``progress(done, total)`` after it. On Ctrl-C the workers
    are stopped and :class:`GridInterrupted` carries the finished rows.
    """
    cells = list(cells)
    total = len(cells)
    rows: list[dict[str, Any] | None] = [None] * total
    done = 0

    def finished(i: int, row: dict[str, Any]) -> None:
        nonlocal done
        rows[i] = row
        done += 1
        if on_row is not None:
            on_row(i, row)
        if progress is not None:
            progress(done, total)

    if progress is not None:
        progress(0, total)
    jobs = resolve_jobs(jobs, total)
    # what every cell of a plan would compute from its original alone (the robust
    # scatter, LB_NN of every k): computed once, first; in a pool each item by one
    # worker, the results copied into every cell's worker
    work = original_work(cells)
    if jobs == 1:
        try:
            for item in work:
                run_original_work(table, item)
            for cell in cells:
                finished(cell.index, run_cell(table, cell, options, save_dir=save_dir, force=force))
        except KeyboardInterrupt:
            raise GridInterrupted(rows) from None
        return rows  # type: ignore[return-value]
    # size workers and method threads together: each worker gets its share of the CPUs
    state = _WorkerState(table, cells, options, save_dir, force, max(1, threads.available_cpus() // jobs), work)
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=_mp_context(), initializer=_worker_init,
                               initargs=(state,))
    try:
        shared: dict[str, list[Any]] = {name: [] for name in ORIGINAL_CACHES}
        for fut in [pool.submit(_worker_original, i) for i in range(len(work))]:
            for name, items in fut.result().items():
                shared[name] += items
        pending = {pool.submit(_worker_run, c.index, shared): c.index for c in cells}
        while pending:
            ready, _ = wait(pending, return_when=FIRST_COMPLETED)
            # several may finish together: handle them in cell order (same on_row order)
            for fut in sorted(ready, key=lambda f: pending[f]):
                i = pending.pop(fut)
                finished(i, fut.result())
    except KeyboardInterrupt:
        _stop_workers(pool)
        raise GridInterrupted(rows) from None
    except BaseException:
        _stop_workers(pool)
        raise
    pool.shutdown(wait=True)
    return rows  # type: ignore[return-value]

