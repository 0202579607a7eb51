"""The method registry: every microaggregation method ``sdc`` offers.

Each family module ends with a ``SPECS`` tuple of :class:`MethodSpec`; this module
lists the family modules explicitly (no import magic, no if/elif dispatch on names).
"""

from __future__ import annotations

from ..errors import InvalidParameterError
from . import (
    approx,
    density,
    fixed_size,
    fuzzy,
    genetic,
    hierarchical,
    mhm,
    mst,
    one_dimension,
    projection,
    refine,
    robust,
    rsorts,
    univariate,
    variable_size,
)
from ._spec import CostModel, MethodSpec, ParamSpec

__all__ = ["METHODS", "CostModel", "MethodSpec", "ParamSpec", "get_method"]

_FAMILIES = (
    fixed_size,
    density,
    robust,
    rsorts,
    variable_size,
    hierarchical,
    univariate,
    projection,
    mhm,
    mst,
    approx,
    fuzzy,
    one_dimension,
    genetic,
    refine,
)

#: name -> MethodSpec, in family order.
METHODS: dict[str, MethodSpec] = {}
for _family in _FAMILIES:
    for _spec in _family.SPECS:
        if _spec.name in METHODS:  # pragma: no cover - caught by the registry test
            raise RuntimeError(f"method {_spec.name!r} registered twice")
        METHODS[_spec.name] = _spec


def get_method(name: str) -> MethodSpec:
    """The :class:`MethodSpec` called ``name``; :class:`InvalidParameterError` if none."""
    try:
        return METHODS[name]
    except KeyError:
        raise InvalidParameterError(
            f"unknown method {name!r} (known: {', '.join(METHODS)})"
        ) from None
