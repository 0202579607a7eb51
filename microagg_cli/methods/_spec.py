"""Declarative method and parameter specifications.

A :class:`ParamSpec` is declared once and drives validation, the CLI (``--param
name=value``), ``--help``, ``--list-methods``, the man pages and the README.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

import numpy as np

from ..errors import InvalidParameterError
from ._common import check_k

__all__ = ["ParamSpec", "MethodSpec", "method_contract"]

_TYPES = {"int": int, "float": float, "str": str, "bool": bool}

#: The method contract's two first parameters, documented once: a method's docstring
#: has the line ``{method contract}`` where its Parameters section starts, and
#: :func:`method_contract` writes these lines there (numpydoc, at that line's indent).
CONTRACT_DOC = (
    "Parameters",
    "----------",
    "X : (n, p) float array, z-scored; not mutated.",
    "k : minimum group size, 2 <= k <= n.",
)
_CONTRACT_MARK = "{method contract}"


def method_contract(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator for a method ``func(X, k, *, rng, **params)``: the contract's input
    checks and documentation, written once.

    The method receives ``X`` as a float64 array, already checked by
    :func:`._common.check_k` (2-D, 2 <= k <= n; :class:`InvalidParameterError` or
    :class:`InfeasibleError` otherwise), and the line ``{method contract}`` of its
    docstring is expanded into :data:`CONTRACT_DOC` (the same text in every
    method's ``help``).
    """
    lines = (func.__doc__ or "").split("\n")
    out = []
    for line in lines:
        if line.strip() == _CONTRACT_MARK:
            indent = line[: len(line) - len(line.lstrip())]
            out.extend(indent + c for c in CONTRACT_DOC)
        else:
            out.append(line)
    if len(out) == len(lines):
        raise ValueError(f"{func.__qualname__}: no {_CONTRACT_MARK} line in the docstring")
    func.__doc__ = "\n".join(out)

    @functools.wraps(func)
    def checked(X: np.ndarray, k: int, *args: Any, **kwargs: Any) -> Any:
        X = np.asarray(X, dtype=np.float64)
        check_k(X, k)
        return func(X, k, *args, **kwargs)

    return checked


@dataclass(frozen=True)
class ParamSpec:
    """One method parameter.

    Attributes
    ----------
    name : parameter name as typed by the user (``gamma``), a valid identifier.
    type : ``"int"``, ``"float"``, ``"str"`` or ``"bool"``.
    default : default value (already of ``type``); ``None`` means "not set".
    help : one line shown in ``--help`` and ``--list-methods``.
    min, max : inclusive numeric bounds (``None`` = unbounded).
    choices : allowed values for ``str`` parameters (``None`` = free text).
    """

    name: str
    type: str
    default: Any
    help: str
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] | None = None

    def convert(self, value: Any, *, method: str = "") -> Any:
        """Convert a user value (string or Python value) and check its range."""
        where = f"{method}: parameter {self.name!r}" if method else f"parameter {self.name!r}"
        if value is None:
            return None
        given = value
        try:
            if self.type == "bool":
                if isinstance(value, str):
                    low = value.strip().lower()
                    if low not in {"1", "0", "true", "false", "yes", "no", "on", "off"}:
                        raise ValueError(value)
                    value = low in {"1", "true", "yes", "on"}
                else:
                    value = bool(value)
            elif self.type == "int":
                if isinstance(value, float) and not value.is_integer():
                    raise ValueError(value)
                if isinstance(value, bool):
                    raise ValueError(value)
                value = int(str(value).strip()) if isinstance(value, str) else int(value)
            elif self.type == "float":
                value = float(value)
            else:
                value = str(value)
        except (TypeError, ValueError):
            raise InvalidParameterError(f"{where} must be of type {self.type}, got {str(given)[:40]!r}") from None
        if self.type == "float" and not np.isfinite(value):
            raise InvalidParameterError(f"{where} must be a finite number, got {str(given).strip()[:40]!r}")
        if self.min is not None and value < self.min:
            raise InvalidParameterError(f"{where} must be >= {self.min}, got {value!r}")
        if self.max is not None and value > self.max:
            raise InvalidParameterError(f"{where} must be <= {self.max}, got {value!r}")
        if self.choices is not None and not _choice_ok(value, self.choices):
            raise InvalidParameterError(
                f"{where} must be one of {', '.join(self.choices)}, got {value!r}"
            )
        return value

    def describe(self) -> str:
        """Short ``name=default (type, range): help`` text."""
        bits = [self.type]
        if self.choices:
            bits.append("|".join(self.choices))
        if self.min is not None or self.max is not None:
            lo = "-inf" if self.min is None else f"{self.min:g}"
            hi = "inf" if self.max is None else f"{self.max:g}"
            bits.append(f"[{lo}, {hi}]")
        return f"{self.name}={self.default!r} ({', '.join(bits)}): {self.help}"


def _choice_ok(value: str, choices: tuple[str, ...]) -> bool:
    # A choice ending in ':' (e.g. 'pv:') accepts any suffix ('pv:AGE').
    return any(value == c or (c.endswith(":") and value.startswith(c) and len(value) > len(c))
               for c in choices)


@dataclass(frozen=True)
class MethodSpec:
    """A registered microaggregation method.

    Attributes
    ----------
    name : registry name (``mdav``).
    func : ``func(X, k, *, rng, **params) -> result``; ``X`` is never mutated.
    summary : one-line description for ``--list-methods``.
    reference : "Authors (year), title, venue".
    params : declared parameters.
    output : ``"labels"`` -- one partition for the block, shape (n,), groups >= k;
        ``"column_labels"`` -- one partition per column, shape (n, p) (individual
        ranking); ``"values"`` -- the protected matrix itself, shape (n, p), in the
        units of ``X`` (``mic1d``: k counts values, record k-anonymity not guaranteed).
    standardize : whether ``X`` is handed to ``func`` z-scored (population sd) --
        the default for every distance-based method -- or in original units.
    max_columns : the method's limit on block width (``optimal-1d``: 1), or None.
    """

    name: str
    func: Callable[..., np.ndarray]
    summary: str
    reference: str
    params: tuple[ParamSpec, ...] = field(default_factory=tuple)
    output: Literal["labels", "column_labels", "values"] = "labels"
    standardize: bool = True
    max_columns: int | None = None

    def param(self, name: str) -> ParamSpec:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def validate_params(self, given: dict[str, Any] | None) -> dict[str, Any]:
        """Defaults merged with converted, range-checked user values.

        Raises :class:`InvalidParameterError` for unknown names or bad values.
        """
        given = dict(given or {})
        known = {p.name for p in self.params}
        unknown = sorted(set(given) - known)
        if unknown:
            accepted = ", ".join(sorted(known)) or "none"
            raise InvalidParameterError(
                f"method {self.name!r} has no parameter {unknown[0]!r} (accepted: {accepted})"
            )
        out = {}
        for p in self.params:
            out[p.name] = p.convert(given[p.name], method=self.name) if p.name in given else p.default
        return out
