"""Attribute-blocking plans: which columns are microaggregated together.

A :class:`BlockPlan` is a tuple of disjoint :class:`Block`\\ s; each block is protected
on its own with its own method, k and parameters, seeded from the run seed by its
position in the plan.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from .errors import DataError, InvalidParameterError

__all__ = ["Block", "BlockPlan"]


@dataclass(frozen=True)
class Block:
    """One block: columns aggregated together with one method."""

    name: str
    columns: tuple[str, ...]
    method: str = "mdav"
    k: int = 3
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BlockPlan:
    """A blocking plan: disjoint blocks, plus identifier columns to drop."""

    blocks: tuple[Block, ...]
    drop: tuple[str, ...] = ()

    @classmethod
    def single(
        cls,
        columns: list[str] | tuple[str, ...],
        *,
        method: str = "mdav",
        k: int = 3,
        params: Mapping[str, Any] | None = None,
        drop: tuple[str, ...] | list[str] = (),
    ) -> "BlockPlan":
        """A plan with one block holding ``columns``."""
        return cls((Block("block1", tuple(columns), method, k, dict(params or {})),), tuple(drop))

    @property
    def columns(self) -> list[str]:
        """Every protected column, in block order."""
        return [c for b in self.blocks for c in b.columns]

    def check(self, available: list[str]) -> None:
        """Blocks non-empty, disjoint, named uniquely, columns present, none dropped."""
        if not self.blocks:
            raise InvalidParameterError("the plan has no block")
        have = set(available)
        seen: dict[str, str] = {}
        names: set[str] = set()
        for b in self.blocks:
            if b.name in names:
                raise InvalidParameterError(f"block name {b.name!r} is used twice")
            names.add(b.name)
            if not b.columns:
                raise InvalidParameterError(f"block {b.name!r} has no column")
            for c in b.columns:
                if c not in have:
                    raise DataError(f"block {b.name!r}: no column {c!r} in the input")
                if c in seen:
                    raise InvalidParameterError(
                        f"column {c!r} is in block {seen[c]!r} and block {b.name!r}; blocks must be disjoint"
                    )
                if c in self.drop:
                    raise InvalidParameterError(f"column {c!r} is both protected and dropped")
                seen[c] = b.name
        for c in self.drop:
            if c not in have:
                raise DataError(f"drop: no column {c!r} in the input")
