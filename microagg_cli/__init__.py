"""microagg_cli: microaggregation for statistical disclosure control.

The public API (the ``sdc`` command line is a thin layer over it):

- :func:`protect` -- protect a CSV/Parquet file and write a report;
- :func:`protect_table`, :func:`protect_array` -- the same on in-memory data;
- :data:`METHODS` -- the method registry (name -> :class:`MethodSpec`);
- :class:`BlockPlan`, :class:`Block` -- attribute-blocking plans;
- the error classes, each with its exit code.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .api import compare, evaluate, protect, protect_array, protect_table  # noqa: E402
from .blocking import Block, BlockPlan, load_plan, make_plan  # noqa: E402
from .errors import (  # noqa: E402
    DataError,
    InfeasibleError,
    InvalidParameterError,
    PrivacyCheckError,
    SdcError,
    ThresholdExceeded,
)
from .methods import METHODS, MethodSpec, ParamSpec  # noqa: E402

__all__ = [
    "__version__",
    "protect",
    "evaluate",
    "compare",
    "protect_array",
    "protect_table",
    "Block",
    "BlockPlan",
    "load_plan",
    "make_plan",
    "METHODS",
    "MethodSpec",
    "ParamSpec",
    "SdcError",
    "InvalidParameterError",
    "DataError",
    "InfeasibleError",
    "PrivacyCheckError",
    "ThresholdExceeded",
]
