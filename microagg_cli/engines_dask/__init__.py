"""The Dask engine (``--engine dask``): the session, the shipped-rows runner and the thin client.

:func:`microagg_cli.engines.protect_stream` runs its block loop on Dask in one of two
modes, and the report's ``engine.mode`` says which ran:

- **thin client** (:mod:`.thin`, driven by :func:`.protect.protect_thin`): for a
  Parquet input every worker can open, the workers read their own rows, the cuts are
  made from the statistics they return, and the parts and the output files are made on
  the workers; the client holds a few numbers per node of the splitting tree, never a
  record.
- **shipped rows** (:class:`.session.DaskRunner`): otherwise the client reads the
  protected columns, as the local engine does, and sends each part's rows to a worker.

:mod:`.session` opens the client (:func:`.session.dask_client`: a running scheduler,
or a local cluster on the loopback interface). Dask is imported only inside functions
(:func:`.session.import_distributed`): importing this package never loads it.
"""

from __future__ import annotations

from .protect import protect_thin
from .session import DASK_INSTALL_HINT, DaskRunner, dask_client, import_distributed, peak_rss_bytes
from .thin import (
    ReadSpec,
    ThinRun,
    WriteSpec,
    replaced_slice,
    temp_beside,
    thin_reason,
    workers_can_open,
    write_parquet_rows,
)

__all__ = [
    "DASK_INSTALL_HINT", "DaskRunner", "dask_client", "import_distributed", "peak_rss_bytes", "protect_thin",
    "ReadSpec", "ThinRun", "WriteSpec", "replaced_slice", "temp_beside", "thin_reason", "workers_can_open", "write_parquet_rows",
]
