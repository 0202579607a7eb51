"""The plan model: :class:`Block` and :class:`BlockPlan`, and the plan's roles.

A :class:`BlockPlan` is a tuple of disjoint :class:`Block`\\ s (columns aggregated
together with one method, k and parameters) with the identifier columns to drop, the
columns that must pass through unprotected and the plan's other roles; it checks itself
against an input's columns (:meth:`BlockPlan.check`). The plan-file layout version and
the keys of a plan's ``[roles]`` table are defined here, below the reader and writer
that share them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping

from ..errors import DataError, InvalidParameterError
from ..readings import name_list
from ..request import ProtectRequest, default
from .locator import PlanSource

__all__ = ["Block", "BlockPlan", "PLAN_VERSION", "PLAN_ROLES", "ROLE_KEYS"]

#: The plan-file layout version written by :func:`plan_to_toml`.
PLAN_VERSION = 1
#: keys of a plan's ``[roles]`` table (see :mod:`microagg_cli.roles`); ``keys`` are
#: released unchanged and checked as keys (``--keys``)
ROLE_KEYS = ("continuous", "categorical", "ordinal", "weight", "stratum", "identifier", "passthrough", "keys")
#: the roles a plan carries besides its blocks, drop and passthrough
PLAN_ROLES = ("categorical", "ordinal", "weight", "stratum", "keys")


@dataclass(frozen=True)
class Block:
    """One block: columns aggregated together with one method.

    ``k=None`` means "not set": :meth:`BlockPlan.check` refuses such a plan, so the
    caller must resolve it (``load_plan(..., default_k=K)``).
    """

    name: str
    columns: tuple[str, ...]
    method: str = default(ProtectRequest, "method")
    k: int | None = 3
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BlockPlan:
    """A blocking plan: disjoint blocks, identifier columns to drop, and columns that
    must pass through unprotected."""

    blocks: tuple[Block, ...]
    drop: tuple[str, ...] = ()
    passthrough: tuple[str, ...] = ()
    source: PlanSource | None = field(default=None, compare=False, repr=False)
    #: the plan's other roles: ``{"categorical": (...), "ordinal": (...), "weight": (col,),
    #: "stratum": (...), "keys": (...)}`` (only the roles it names)
    roles: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def single(
        cls,
        columns: list[str] | tuple[str, ...],
        *,
        method: str = default(ProtectRequest, "method"),
        k: int | None = 3,
        params: Mapping[str, Any] | None = None,
        drop: tuple[str, ...] | list[str] = (),
        passthrough: tuple[str, ...] | list[str] = (),
    ) -> "BlockPlan":
        """A plan with one block holding ``columns``."""
        return cls((Block("block1", tuple(columns), method, k, dict(params or {})),), tuple(drop),
                   tuple(passthrough))

    @property
    def columns(self) -> list[str]:
        """Every protected column, in block order."""
        return [c for b in self.blocks for c in b.columns]

    def block_of(self) -> dict[str, int]:
        """``{column: position of its block}``."""
        return {c: i for i, b in enumerate(self.blocks) for c in b.columns}

    def with_passthrough(self, extra: Iterable[str] | None) -> "BlockPlan":
        """The same plan with ``extra`` columns released unchanged on purpose (never protected)."""
        extra = [c for c in (extra or []) if c not in self.passthrough]
        for c in extra:
            if c in self.columns:
                raise InvalidParameterError(f"--passthrough {c!r}: the plan protects this column")
            if c in self.drop:
                raise InvalidParameterError(f"column {c!r} is both passed through and dropped")
        return replace(self, passthrough=self.passthrough + tuple(dict.fromkeys(extra))) if extra else self

    def with_drop(self, extra: Iterable[str] | None) -> "BlockPlan":
        """The same plan with ``extra`` identifier columns dropped too."""
        extra = [c for c in (extra or []) if c not in self.drop]
        return replace(self, drop=self.drop + tuple(dict.fromkeys(extra))) if extra else self

    def _where(self, *path: Any, value: str | None = None) -> str:
        return self.source.where(*path, value=value) + ": " if self.source else ""

    def check(self, available: list[str], *, require_k: bool = True) -> None:
        """Blocks non-empty, disjoint, named uniquely, k set (unless not
        ``require_k``), columns present in ``available``, none dropped or declared
        pass-through."""
        if not self.blocks:
            raise InvalidParameterError(f"{self._where('blocks')}the plan has no block")
        have = set(available)
        seen: dict[str, str] = {}
        names: set[str] = set()

        def missing(c: str) -> str:
            shown = name_list(available, limit=20)
            return f"no column {c!r} in the input (columns: {shown})"

        for i, b in enumerate(self.blocks):
            if b.name in names:
                raise InvalidParameterError(f"{self._where('blocks', i, 'name')}block name {b.name!r} is used twice")
            names.add(b.name)
            if not b.columns:
                raise InvalidParameterError(f"{self._where('blocks', i)}block {b.name!r} has no column")
            if b.k is None and require_k:
                raise InvalidParameterError(
                    f"{self._where('blocks', i)}block {b.name!r} has no k "
                    "(set k in the block or in [defaults], or give -k)"
                )
            for c in b.columns:
                if c not in have:
                    raise DataError(f"{self._where('blocks', i, 'columns', value=c)}block {b.name!r}: {missing(c)}")
                if c in seen:
                    raise InvalidParameterError(
                        f"{self._where('blocks', i, 'columns', value=c)}column {c!r} is in block "
                        f"{seen[c]!r} and block {b.name!r}; blocks must be disjoint"
                    )
                if c in self.drop:
                    raise InvalidParameterError(f"column {c!r} is both protected (block {b.name!r}) and dropped")
                if c in self.passthrough:
                    raise InvalidParameterError(
                        f"column {c!r} is declared pass-through but protected in block {b.name!r}"
                    )
                seen[c] = b.name
        for c in self.drop:
            if c not in have:
                raise DataError(f"{self._where('drop', value=c)}drop: {missing(c)}")
            if c in self.passthrough:
                raise InvalidParameterError(f"column {c!r} is both dropped and declared pass-through")
        for c in self.passthrough:
            if c not in have:
                raise DataError(f"{self._where('passthrough', value=c)}passthrough: {missing(c)}")
        for role, cols in self.roles.items():
            for c in cols:
                if c not in have:
                    raise DataError(f"{self._where('roles', role, value=c)}roles.{role}: {missing(c)}")
