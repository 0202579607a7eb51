"""The last few results of a costly function of a matrix, by a digest of its bytes.

``sdc compare`` measures every cell against the same original: its robust scatter
(:func:`microagg_cli.mcd.det_mcd`) and its LB_NN (:mod:`microagg_cli.metrics.utility`)
would otherwise be computed once per cell.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable

import numpy as np

__all__ = ["LastResults", "array_key"]


def array_key(A: np.ndarray) -> tuple:
    """(shape, dtype, 256-bit BLAKE2b digest of the bytes) of a C-contiguous array."""
    A = np.ascontiguousarray(A)
    return A.shape, A.dtype.str, hashlib.blake2b(A.view(np.uint8), digest_size=32).digest()


class LastResults:
    """The last ``size`` results by key, least recently used out first (thread-safe;
    two threads asking for a missing key at once may both compute it)."""

    def __init__(self, size: int) -> None:
        self.size = int(size)
        self._results: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """The result kept under ``key``, else ``compute()`` (kept)."""
        with self._lock:
            if key in self._results:
                self._results.move_to_end(key)
                return self._results[key]
        value = compute()
        with self._lock:
            self._results[key] = value
            while len(self._results) > self.size:
                self._results.popitem(last=False)
        return value
