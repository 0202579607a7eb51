"""Method family module (being filled in); see methods/__init__.py."""

from __future__ import annotations

from ._spec import MethodSpec

SPECS: tuple[MethodSpec, ...] = ()
