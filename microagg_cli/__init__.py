"""microagg_cli: microaggregation for statistical disclosure control.

The public API (the ``sdc`` command line is a thin layer over it):

- :func:`protect` -- protect a CSV/Parquet file and write a report;
- :func:`protect_table`, :func:`protect_array` -- the same on in-memory data;
- :func:`risk` -- the disclosure risk of one file over its categorical keys (``sdc risk``);
- :func:`propose_roles` -- every column's proposed role with its evidence (``sdc roles``);
- :data:`METHODS` -- the method registry (name -> :class:`MethodSpec`);
- :class:`BlockPlan`, :class:`Block` -- attribute-blocking plans;
- the error classes, each with its exit code.
"""

from __future__ import annotations

from ._version import __version__

# The API is imported on first use (PEP 562), so that ``sdc --help``, ``sdc --version``
# and shell completion do not pay for numpy, pandas, scipy and numba.
_LAZY = {
    "protect": "api", "evaluate": "api", "compare": "api", "protect_array": "protection", "protect_table": "protection",
    "Block": "blocking", "BlockPlan": "blocking", "load_plan": "blocking", "make_plan": "blocking",
    "DataError": "errors", "InfeasibleError": "errors", "InvalidParameterError": "errors",
    "PrivacyCheckError": "errors", "SdcError": "errors", "ThresholdExceeded": "errors",
    "METHODS": "methods", "MethodSpec": "methods", "ParamSpec": "methods",
    "protect_frame": "frames", "evaluate_frame": "frames", "compare_frames": "frames", "propose_blocks": "frames",
    "ProtectResult": "protection", "BlockResult": "protection", "METRICS": "metrics",
    "propose_roles": "api", "ROLES": "roles", "risk": "api",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "__version__",
    "protect",
    "evaluate",
    "compare",
    "risk",
    "protect_array",
    "protect_table",
    "protect_frame",
    "evaluate_frame",
    "compare_frames",
    "propose_blocks",
    "propose_roles",
    "ROLES",
    "ProtectResult",
    "BlockResult",
    "METRICS",
    "Block",
    "BlockPlan",
    "load_plan",
    "make_plan",
    "METHODS",
    "MethodSpec",
    "ParamSpec",
    # the errors
    "SdcError", "InvalidParameterError", "DataError", "InfeasibleError", "PrivacyCheckError", "ThresholdExceeded",
]
