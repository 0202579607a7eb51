"""Declarative method and parameter specifications.

A :class:`ParamSpec` is declared once and drives validation, the CLI (``--param
name=value``), ``--help``, ``--list-methods``, the man pages and the README.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Mapping

import numpy as np

from ..errors import InvalidParameterError
from ._common import check_k

__all__ = ["CostModel", "ParamSpec", "MethodSpec", "method_contract"]

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
class CostModel:
    """A method's running time as a function of the block's size, for estimates made
    before it starts (no timing probe: the same block always gets the same estimate).

    seconds = ``at_10k`` * (n / 10,000) ** ``exponent`` * (p / 10) ** ``width``
    * (k / 3) ** ``k_power`` [* iterations / ``default_iterations``], where ``at_10k``
    is the method's time on 10,000 x 10 records, k = 3, default parameters, on the
    2-core reference machine (``benchmarks/methods_scale.py``). ``iterations``: the
    name of a parameter the time is proportional to (ILS's perturbations, the genetic
    algorithm's generations), ``default_iterations`` its value in that measurement and
    ``budget(n)`` its default for n records (used when the parameter is not set).
    ``seconds_param``: a parameter that, when positive, is the run's time itself
    (ILS's ``time_budget``).
    """

    at_10k: float
    exponent: float
    width: float = 1.0
    k_power: float = 0.0
    iterations: str | None = None
    default_iterations: float = 1.0
    budget: Callable[[int], int] | None = None
    seconds_param: str | None = None

    def seconds(self, n: int, p: int, k: int, params: Mapping[str, Any] | None = None) -> float:
        params = params or {}
        if self.seconds_param is not None and float(params.get(self.seconds_param) or 0) > 0:
            return float(params[self.seconds_param])
        t = self.at_10k * (max(n, 1) / 10_000) ** self.exponent * (max(p, 1) / 10) ** self.width
        t *= (max(k, 2) / 3) ** self.k_power
        if self.iterations is not None:
            given = params.get(self.iterations)
            if given is None and self.budget is not None:
                given = self.budget(n)
            if given is not None:
                t *= float(given) / self.default_iterations
        return t


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
    cost : the :class:`CostModel` behind :meth:`estimate_seconds`.
    """

    name: str
    func: Callable[..., np.ndarray]
    summary: str
    reference: str
    params: tuple[ParamSpec, ...] = field(default_factory=tuple)
    output: Literal["labels", "column_labels", "values"] = "labels"
    standardize: bool = True
    max_columns: int | None = None
    cost: CostModel | None = None

    def estimate_seconds(self, n: int, p: int, k: int, params: Mapping[str, Any] | None = None) -> float:
        """Estimated seconds of this method on an n x p block (see :class:`CostModel`);
        ``params`` as given or validated (an unset budget counts as its default for n)."""
        if self.cost is None:
            return float("nan")
        return self.cost.seconds(n, min(p, self.max_columns or p), k, params)

    def budgeted(self, params: Mapping[str, Any], n: int) -> dict[str, Any]:
        """Validated ``params`` with the default budget for n records filled in where the
        budget parameter is not set (``CostModel.budget``: ILS's perturbations, the
        genetic algorithm's generations), so that the report states what ran."""
        out = dict(params)
        cost = self.cost
        if cost is not None and cost.iterations and cost.budget is not None and out.get(cost.iterations) is None:
            out[cost.iterations] = int(cost.budget(int(n)))
        return out

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
