"""The last few results of a costly function of a matrix, by a digest of its bytes.

``sdc compare`` measures every cell against the same original: its robust scatter
(:func:`microagg_cli.mcd.det_mcd`) and its LB_NN (:mod:`microagg_cli.metrics.utility`)
would otherwise be computed once per cell. A cache given a ``name`` can also be copied
into another process (:func:`exported`, :func:`absorb`): a grid's worker computes such
a result once and every worker receives it, instead of each computing its own.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable, Mapping, Sequence

import numpy as np

__all__ = ["LastResults", "absorb", "array_key", "clear", "exported"]


def array_key(A: np.ndarray) -> tuple:
    """(shape, dtype, 256-bit BLAKE2b digest of the bytes) of a C-contiguous array."""
    A = np.ascontiguousarray(A)
    return A.shape, A.dtype.str, hashlib.blake2b(A.view(np.uint8), digest_size=32).digest()


#: The named caches of this process, by name (see :func:`exported`).
_NAMED: dict[str, "LastResults"] = {}
#: Results absorbed for a cache whose module is not imported yet: kept when it is.
_PENDING: dict[str, list[tuple[Hashable, Any]]] = {}


class LastResults:
    """The last ``size`` results by key, least recently used out first (thread-safe;
    two threads asking for a missing key at once may both compute it).

    ``name``: the cache's name for :func:`exported` and :func:`absorb` (unique in the
    process); its results must then be picklable and the same whichever process
    computes them.
    """

    def __init__(self, size: int, *, name: str | None = None) -> None:
        self.size = int(size)
        self._results: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()
        if name is not None:
            if name in _NAMED:
                raise ValueError(f"a cache named {name!r} exists already")
            _NAMED[name] = self
            for key, value in _PENDING.pop(name, []):
                self.put(key, value)

    def get(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """The result kept under ``key``, else ``compute()`` (kept)."""
        with self._lock:
            if key in self._results:
                self._results.move_to_end(key)
                return self._results[key]
        value = compute()
        self.put(key, value)
        return value

    def put(self, key: Hashable, value: Any) -> None:
        """Keep ``value`` under ``key`` (the most recent)."""
        with self._lock:
            self._results[key] = value
            self._results.move_to_end(key)
            while len(self._results) > self.size:
                self._results.popitem(last=False)

    def items(self) -> list[tuple[Hashable, Any]]:
        """The kept (key, result) pairs, least recently used first."""
        with self._lock:
            return list(self._results.items())

    def clear(self) -> None:
        with self._lock:
            self._results.clear()


def exported(names: Sequence[str]) -> dict[str, list[tuple[Hashable, Any]]]:
    """The results kept by the named caches ``names``: ``{name: [(key, result), ...]}``
    (picklable, for :func:`absorb` in another process; none for a cache whose module
    is not imported)."""
    return {name: _NAMED[name].items() if name in _NAMED else [] for name in names}


def absorb(entries: Mapping[str, Sequence[tuple[Hashable, Any]]]) -> None:
    """Keep the results of :func:`exported` (from this or another process) in this
    process's caches of the same names (in a cache not created yet: when it is); a key
    kept already is left as it is."""
    for name, items in entries.items():
        cache = _NAMED.get(name)
        if cache is None:
            _PENDING.setdefault(name, []).extend(items)
            continue
        have = {key for key, _ in cache.items()}
        for key, value in items:
            if key not in have:
                cache.put(key, value)


def clear(names: Sequence[str] | None = None) -> None:
    """Forget the results of the named caches ``names`` (default: every named cache),
    e.g. to measure or test a computation from scratch."""
    for name in (list(_NAMED) if names is None else names):
        _NAMED[name].clear()
