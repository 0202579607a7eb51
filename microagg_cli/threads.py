"""How many CPU threads a method or metric of this process may start.

``sdc compare --jobs N`` runs cells in N worker processes; each worker gets
``cpus // N`` threads (at least 1) through :func:`set_limit`, so that workers times
threads never exceeds the CPUs the process may use: ``ils`` runs its two searches one
after the other instead of side by side when it may use one thread (same result with
``iterations``), the kd-tree queries of LB_NN and the exact pricing of the column-generation
bound (seeds side by side) use that many threads. Everything else
sees :func:`available_cpus`. Results never depend on the limit. Standard library only.
"""

from __future__ import annotations

import contextlib
import os
from typing import Iterator

__all__ = ["available_cpus", "limit", "set_limit", "limited", "limit_native_pools"]

_LIMIT: list[int | None] = [None]


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the system has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def limit() -> int:
    """Threads one method or metric call may use: the limit set, at most the CPUs."""
    cpus = available_cpus()
    cap = _LIMIT[0]
    return cpus if cap is None else max(1, min(cap, cpus))


def set_limit(n: int | None) -> None:
    """Cap the threads of this process's method and metric calls (None: every CPU)."""
    _LIMIT[0] = None if n is None else max(1, int(n))


@contextlib.contextmanager
def limited(n: int | None) -> Iterator[None]:
    """:func:`set_limit` within a block."""
    old = _LIMIT[0]
    set_limit(n)
    try:
        yield
    finally:
        _LIMIT[0] = old


def limit_native_pools(n: int) -> bool:
    """Cap the thread pools of the native libraries loaded in this process (OpenBLAS
    under numpy and scipy, OpenMP) at ``n`` threads, for good; True when done.

    A worker process of ``sdc compare --jobs N`` calls it with its share of the CPUs:
    OpenBLAS otherwise starts one (busy-waiting) thread per CPU in every worker.
    Needs ``threadpoolctl`` (a dependency); without it nothing is changed.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - a dependency
        return False
    threadpool_limits(limits=max(1, int(n)))
    return True
