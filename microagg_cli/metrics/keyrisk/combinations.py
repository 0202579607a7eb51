"""mu-ARGUS-style combinations: every set of keys up to a size, with its unsafe cells.

mu-ARGUS checks every combination of key variables up to the identification level
(the ``.rda`` IDLEVEL), not only the cross of all keys: a cell (one combination of
values) holding fewer than k records is *unsafe*, and so are its records (Hundepool et
al. 2012, 3.4). A record missing one of the combination's keys is in none of its cells
(missing values are never unsafe in mu-ARGUS).
"""

from __future__ import annotations

from itertools import combinations
from typing import Any, Sequence

import numpy as np

from .frequencies import as_codes, subset_classes

__all__ = ["CombinationTable", "combinations_table"]


class CombinationTable:
    """Accumulates the unsafe cells of each key set it is shown (a SUDA2 visitor)."""

    def __init__(self, n: int, k: int, names: Sequence[str], max_size: int) -> None:
        self.n, self.k, self.names, self.max_size = n, int(k), list(names), int(max_size)
        self.rows: list[dict[str, Any]] = []
        #: records in at least one unsafe cell of some combination
        self.unsafe_any = np.zeros(n, dtype=bool)

    def __call__(self, S: tuple[int, ...], cls: np.ndarray, sizes: np.ndarray) -> None:
        if len(S) > self.max_size:
            return
        unsafe_cells = (sizes > 0) & (sizes < self.k)
        inside = cls >= 0
        rec = np.zeros(self.n, dtype=bool)
        rec[inside] = unsafe_cells[cls[inside]]
        self.unsafe_any |= rec
        self.rows.append({"keys": [self.names[v] for v in S], "size": len(S),
                          "cells": int((sizes > 0).sum()), "unsafe_cells": int(unsafe_cells.sum()),
                          "unsafe_records": int(rec.sum()),
                          "unique_cells": int((sizes == 1).sum())})

    def result(self, top: int | None = None) -> dict[str, Any]:
        """Rows ordered by unsafe records (descending), then size, then key order."""
        order = sorted(range(len(self.rows)),
                       key=lambda i: (-self.rows[i]["unsafe_records"], self.rows[i]["size"], i))
        rows = [self.rows[i] for i in order]
        return {"k": self.k, "max_size": self.max_size, "count": len(rows),
                "unsafe_combinations": sum(1 for r in rows if r["unsafe_cells"]),
                "records_in_unsafe_cells": int(self.unsafe_any.sum()),
                "rows": rows if top is None else rows[:top]}


def combinations_table(codes: Any, k: int, *, max_size: int, names: Sequence[str] | None = None,
                       top: int | None = None) -> dict[str, Any]:
    """Every combination of 1..``max_size`` keys with its cells, unsafe cells (< k
    records) and records in them.

    Examples
    --------
    >>> t = combinations_table([[0, 0], [0, 1], [1, 1], [1, 1]], 2, max_size=2, names=["a", "b"])
    >>> [(r["keys"], r["unsafe_cells"], r["unsafe_records"]) for r in t["rows"]]
    [(['a', 'b'], 2, 2), (['b'], 1, 1), (['a'], 0, 0)]
    """
    c = as_codes(codes)
    n, A = c.shape
    names = [str(j) for j in range(A)] if names is None else list(names)
    m = min(int(max_size), A)
    table = CombinationTable(n, k, names, m)
    for s in range(1, m + 1):
        for S in combinations(range(A), s):
            cls, sizes = subset_classes(c, S)
            table(S, cls, sizes)
    return table.result(top)
