"""The protection core: everything that turns original records into protected ones.

Layers, each importing only the ones before it:

- :mod:`.block` -- one block's matrix: run the method, aggregate, check k, statistics;
- :mod:`.partitioned` -- the partitioned mode (locality-preserving parts) and its runners;
- :mod:`.table` -- a table and a plan: the one block loop (strata, weights, missing
  values, small strata) shared by the in-memory, streaming and Dask paths, the block
  statistics and the output table;
- :mod:`.run` -- a protect run around the block loop: output hygiene and the JSON
  report (a dict; :mod:`microagg_cli.report` renders it);

Nothing here reads or writes files: :mod:`microagg_cli.api` and
:mod:`microagg_cli.engines` do.
"""

from __future__ import annotations

from .block import BlockResult, check_stat, protect_array
from .partitioned import LocalRunner
from .table import ProtectResult, protect_blocks, protect_table

__all__ = ["BlockResult", "ProtectResult", "LocalRunner", "check_stat", "protect_array", "protect_blocks",
           "protect_table"]
