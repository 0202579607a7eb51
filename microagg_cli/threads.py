"""How many CPU threads a method or metric of this process may start.

``sdc compare --jobs N`` runs cells in N worker processes; each worker gets
``cpus // N`` threads (at least 1) through :func:`set_limit`, so that workers times
threads never exceeds the CPUs the process may use: ``ils`` runs its two searches one
after the other instead of side by side when it may use one thread (same result with
``iterations``), the kd-tree queries of LB_NN and the exact pricing of the column-generation
bound (seeds side by side) use that many threads. Everything else
sees :func:`available_cpus`. Results never depend on the limit. :func:`in_threads` runs
a list of items in a few daemon threads (for kernels that release the GIL, such as the
risk measures' pair table and DLD search), :func:`in_background` one call beside the
calling thread's work, :func:`one_blas_thread` keeps BLAS from
adding threads of its own meanwhile. Standard library only (``threadpoolctl`` when
present).
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Any, Callable, Iterator, Sequence

__all__ = ["available_cpus", "limit", "set_limit", "limited", "limit_native_pools", "in_threads",
           "in_background", "one_blas_thread"]

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


@contextlib.contextmanager
def one_blas_thread(jobs: int) -> Iterator[None]:
    """With ``jobs`` threads of our own, BLAS / OpenMP pools get one thread each (no
    oversubscription; the compiled kernels start no threads of their own)."""
    if jobs <= 1:
        yield
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - a dependency
        yield
        return
    with threadpool_limits(limits=1):
        yield


def in_threads(func: Callable[[Any], Any], items: Sequence[Any], jobs: int,
               after: Callable[[int], None] | None = None, *, name: str = "sdc") -> list[Any]:
    """``[func(x) for x in items]`` in ``jobs`` daemon threads (the compiled kernels and
    the k-d tree searches release the GIL), results in the order of ``items``.

    The calling thread waits in short joins, so Ctrl-C (SIGINT, SIGTERM) reaches it
    at once; it then tells the threads to stop after their current item and re-raises.
    ``after(done)`` is called from the calling thread as items finish. Threads are
    named ``{name}-0``, ``{name}-1``...

    >>> in_threads(lambda x: x * x, [1, 2, 3], 2)
    [1, 4, 9]
    """
    out: list[Any] = [None] * len(items)
    if jobs <= 1 or len(items) <= 1:
        for i, x in enumerate(items):
            out[i] = func(x)
            if after is not None:
                after(i + 1)
        return out
    state = {"next": 0, "done": 0}
    lock = threading.Lock()
    stop = threading.Event()
    errors: list[BaseException] = []

    def work() -> None:
        try:
            while not stop.is_set():
                with lock:
                    i = state["next"]
                    state["next"] += 1
                if i >= len(items):
                    return
                out[i] = func(items[i])
                with lock:
                    state["done"] += 1
        except BaseException as exc:  # noqa: BLE001 - re-raised in the calling thread
            errors.append(exc)
            stop.set()

    pool = [threading.Thread(target=work, name=f"{name}-{t}", daemon=True) for t in range(min(jobs, len(items)))]
    for t in pool:
        t.start()
    last = -1
    try:
        while True:
            alive = [t for t in pool if t.is_alive()]
            if not alive:
                break
            alive[0].join(timeout=0.1)
            if after is not None and state["done"] != last:
                last = state["done"]
                after(last)
    except BaseException:
        stop.set()
        raise
    if errors:
        raise errors[0]
    if after is not None and last != len(items):
        after(len(items))
    return out


def in_background(func: Callable[[], Any], *, name: str = "sdc-background") -> Callable[[], Any]:
    """Start ``func()`` in a daemon thread and return a
    ``wait()`` that gives its result or re-raises its exception. ``wait`` joins in short
    steps, so Ctrl-C (SIGINT, SIGTERM) reaches the calling thread at once.

    >>> wait = in_background(lambda: 6 * 7)
    >>> wait()
    42
    """
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = func()
        except BaseException as exc:  # noqa: BLE001 - re-raised by wait()
            box["error"] = exc

    thread = threading.Thread(target=work, name=name, daemon=True)
    thread.start()

    def wait() -> Any:
        while thread.is_alive():
            thread.join(timeout=0.1)
        if "error" in box:
            raise box["error"]
        return box["value"]

    return wait
