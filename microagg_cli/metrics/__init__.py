"""Risk and utility measures (numpy only); see ``../shared/spec/metrics.md``."""

from __future__ import annotations

from .utility import il_sse

__all__ = ["il_sse"]
