"""The Dask session: the client and its cluster, and the runner of the parts' tasks.

:func:`dask_client` opens a ``distributed.Client`` (on a running scheduler, or on a
:class:`distributed.LocalCluster` of this machine, loopback only, no dashboard) and
describes it for the report; :class:`DaskRunner` runs the block loop's parts as tasks
on it when the client reads the rows and ships them to the workers (the streaming
engine's mode for inputs the thin client cannot take, :mod:`microagg_cli.engines_dask.thin`).
Dask is imported only inside these functions (:func:`import_distributed`), so that
importing this module, and a run without ``--engine dask``, never loads it.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from ..errors import InvalidParameterError

__all__ = ["DASK_INSTALL_HINT", "import_distributed", "dask_client", "peak_rss_bytes", "DaskRunner"]

DASK_INSTALL_HINT = "pip install 'microagg-cli[dask]'"


def import_distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise InvalidParameterError(f"--engine dask needs Dask, which is not installed: {DASK_INSTALL_HINT}") from None
    return distributed


def _default_memory_limit(n_workers: int) -> int:
    """4 GB per worker, or an even share of this machine's memory when that is less."""
    limit = 4 * 10**9
    try:
        import psutil

        limit = min(limit, int(0.9 * psutil.virtual_memory().total / max(n_workers, 1)))
    except ImportError:  # pragma: no cover -- psutil comes with distributed
        pass
    return limit


@contextlib.contextmanager
def dask_client(
    scheduler: Any = None,
    *,
    n_workers: int = 2,
    memory_limit: int | str | None = None,
    processes: bool = True,
) -> Iterator[tuple[Any, dict[str, Any]]]:
    """A ``distributed.Client`` and a description of the cluster, closed on exit.

    ``scheduler``: an address (``tcp://HOST:PORT``) of a running scheduler, an existing
    ``distributed.Client`` (used as is, not closed), or None for a
    :class:`distributed.LocalCluster` on this machine: ``n_workers`` worker processes
    (threads with ``processes=False``) of one thread each, ``memory_limit`` per worker
    (default 4 GB or an even share of the machine's memory), on the loopback interface,
    no dashboard.
    """
    distributed = import_distributed()
    if isinstance(scheduler, distributed.Client):
        yield scheduler, {"name": "dask", "scheduler": scheduler.scheduler.address}
        return
    if scheduler is not None:
        if not isinstance(scheduler, str) or "://" not in scheduler:
            raise InvalidParameterError(f"--scheduler expects an address such as tcp://HOST:PORT, got {scheduler!r}")
        try:
            client = distributed.Client(scheduler, timeout="20s", set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise InvalidParameterError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
        try:
            yield client, {"name": "dask", "scheduler": scheduler}
        finally:
            client.close()
        return
    limit = memory_limit if memory_limit is not None else _default_memory_limit(n_workers)
    cluster = distributed.LocalCluster(
        n_workers=n_workers, threads_per_worker=1, processes=processes, memory_limit=limit,
        dashboard_address=None, silence_logs=logging.ERROR,
        # no dashboard; the scheduler's small HTTP server (health checks) takes a free
        # loopback port instead of 8787, so that concurrent runs do not collide
        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
        # worker processes talk tcp on the loopback only; threads talk in-process
        **({"host": "127.0.0.1"} if processes else {}),
    )
    try:
        client = distributed.Client(cluster, set_as_default=False)
        try:
            yield client, {"name": "dask", "scheduler": "local cluster", "n_workers": n_workers,
                           "processes": processes, "memory_limit_bytes": limit if isinstance(limit, int) else str(limit)}
        finally:
            client.close()
    finally:
        cluster.close()


def peak_rss_bytes() -> int:
    """Peak resident memory of this process (Linux: ru_maxrss in KiB)."""
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


class DaskRunner:
    """Runs calls as tasks on a Dask cluster, a bounded number in flight, results in any order."""

    name = "dask"

    def __init__(self, client: Any, description: dict[str, Any]):
        self.client = client
        self.description = description
        threads = sum(w.get("nthreads", 1) for w in client.scheduler_info().get("workers", {}).values())
        self.window = 2 * max(threads, 1) + 1

    def run(self, calls: Iterable[tuple[Callable[..., Any], tuple[Any, ...]]],
            on_result: Callable[[int, Any], None]) -> None:
        from distributed import KilledWorker, as_completed

        client = self.client
        tag = uuid.uuid4().hex[:12]
        index: dict[str, int] = {}
        it = enumerate(calls)
        pending = as_completed(loop=client.loop)

        def submit_next() -> bool:
            try:
                j, (func, args) = next(it)
            except StopIteration:
                return False
            # arrays travel as scattered data, not inside the task graph
            args = tuple(client.scatter(a, hash=False) if isinstance(a, np.ndarray) and a.nbytes > (1 << 16)
                         else a for a in args)
            fut = client.submit(func, *args, key=f"sdc-{func.__name__.strip('_')}-{tag}-{j}", pure=False)
            index[fut.key] = j
            pending.add(fut)
            return True

        try:
            for _ in range(self.window):
                if not submit_next():
                    break
            for fut in pending:
                res = fut.result()
                on_result(index[fut.key], res)
                fut.release()
                submit_next()
        except KilledWorker:
            for fut in list(pending.futures):
                fut.cancel()
            raise InvalidParameterError(
                "Dask workers died while protecting a part (out of memory?); use a smaller --partition-size "
                "or give the workers more memory; nothing was written"
            ) from None
        except BaseException:
            for fut in list(pending.futures):
                fut.cancel()
            raise

    def describe(self) -> dict[str, Any]:
        out = dict(self.description)
        try:
            peaks = self.client.run(peak_rss_bytes)
            out["workers"] = [{"address": a, "peak_rss_bytes": int(v)} for a, v in sorted(peaks.items())]
        except Exception:  # noqa: BLE001 -- memory figures are informative only
            pass
        return out
