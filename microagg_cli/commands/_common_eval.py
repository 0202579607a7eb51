"""Options and parsers shared by the commands that evaluate risk and utility.

``sdc evaluate`` uses all of them; the gate and scenario option groups are written as
decorators so that another command (``sdc protect --evaluate``, ``sdc compare``) can
reuse exactly the same names, help texts and parsing.
"""

from __future__ import annotations

from typing import Any, Callable

import click

from ._options import check_delimiter, field_option, split_quoted
from ..request import GATE_ON
from ..request import EvaluateRequest as E

from ..errors import InvalidParameterError, ThresholdExceeded
from ..statfiles import INPUT_FORMATS  # SPSS, Stata and SAS files too
from ..metrics import GATE_ORDER, METRICS

__all__ = [
    "gated",
    "GATE_OPTIONS",
    "gate_options",
    "scenario_options",
    "input_options",
    "collect_gates",
    "parse_blocks",
    "parse_known",
    "parse_weights",
]

#: (option name, keyword of :func:`microagg_cli.api.evaluate`'s ``gates``, metavar, help),
#: from the measure catalogue :data:`microagg_cli.metrics.METRICS`.
GATE_OPTIONS: tuple[tuple[str, str, str, str], ...] = tuple(
    (g.option, g.key, g.metavar, g.help) for g in (METRICS[name].gate for name in GATE_ORDER) if g is not None
)


def gate_options(func: Callable) -> Callable:
    """``--max-dld``, ``--max-id``, ``--max-score``, ``--min-kprime``, ``--max-il``, ``--gate-on``."""
    func = field_option(E, "gate_on", "--gate-on", type=click.Choice(list(GATE_ON)), show_default=True)(func)
    for opt, dest, metavar, text in reversed(GATE_OPTIONS):
        func = click.option(opt, dest, type=float, default=None, metavar=metavar, help=text)(func)
    return func


def scenario_options(func: Callable) -> Callable:
    """``--known`` (repeatable), ``--max-scenarios``, ``-s/--seed``, ``-k``."""
    func = field_option(E, "seed", "-s", "--seed", type=click.IntRange(min=0), show_default=True, metavar="N")(func)
    func = field_option(E, "max_scenarios", "--max-scenarios", type=int, metavar="N")(func)
    func = field_option(E, "known", "--known", multiple=True, metavar="A,B,C", default=())(func)
    func = field_option(E, "k", "-k", "k", type=int, metavar="K")(func)
    return func


def input_options(func: Callable) -> Callable:
    """``--input-format``, ``--delimiter``, ``--decimal``, ``--encoding`` (for both input files)."""
    func = field_option(E, "decimal", "--decimal", type=click.Choice([".", ","]), show_default=True,
                        help="Decimal mark of CSV inputs (',' for European CSV with ';' delimiter).")(func)
    func = field_option(E, "delimiter", "--delimiter", metavar="CHAR", callback=check_delimiter,
                        help="CSV delimiter of both inputs (default: sniffed from , ; TAB |).")(func)
    func = field_option(E, "input_format", "--input-format", type=click.Choice(list(INPUT_FORMATS)),
                        help="Format of both inputs (default: from each file's extension).")(func)
    func = field_option(E, "encoding", "--encoding", metavar="NAME", show_default=True,
                        help="Text encoding of both CSV inputs (utf-8, latin-1, cp1252, or any Python codec).")(func)
    return func


def collect_gates(values: dict[str, Any]) -> dict[str, float]:
    """The gates given on the command line: ``{"max_dld": 5.0, ...}`` (unset ones left out)."""
    return {dest: float(values[dest]) for _opt, dest, _m, _h in GATE_OPTIONS if values.get(dest) is not None}


def _names(text: str, what: str) -> list[str]:
    names = split_quoted(text, ",", what=what)
    if not names or any(not v for v in names):
        raise InvalidParameterError(f"{what}: empty column name in {text!r}")
    return names


def parse_blocks(value: str | None) -> list[list[str]] | None:
    """``"a,b;c,d"`` -> ``[["a", "b"], ["c", "d"]]``; None stays None.

    >>> parse_blocks("AGI, FICA; INTVAL")
    [['AGI', 'FICA'], ['INTVAL']]
    """
    if value is None:
        return None
    parts = _raw_parts(value, ";")
    if any(not p.strip() for p in parts):
        raise InvalidParameterError(f"--blocks: empty block in {value!r} (use \"a,b;c,d\")")
    return [_names(p, "--blocks") for p in parts]


def _raw_parts(value: str, sep: str) -> list[str]:
    """``value`` split at ``sep`` outside double quotes, each part as written (quotes kept)."""
    parts, start, quoted = [], 0, False
    for i, ch in enumerate(value):
        if ch == '"':
            quoted = not quoted
        elif ch == sep and not quoted:
            parts.append(value[start:i])
            start = i + 1
    parts.append(value[start:])
    return parts


def parse_known(values: tuple[str, ...]) -> list[list[str]] | None:
    """Repeated ``--known a,b`` -> ``[["a", "b"], ...]``; none given -> None."""
    if not values:
        return None
    return [_names(v, "--known") for v in values]


def parse_weights(value: str | None, option: str) -> dict[str, float] | None:
    """``"dld=0.5,pld=0,id=0.5"`` -> ``{"dld": 0.5, "pld": 0.0, "id": 0.5}``.

    >>> parse_weights("il=0.3, dr=0.7", "--score-weights")
    {'il': 0.3, 'dr': 0.7}
    """
    if value is None:
        return None
    out: dict[str, float] = {}
    for item in value.split(","):
        name, sep, num = item.partition("=")
        name = name.strip().lower()
        try:
            weight = float(num)
        except ValueError:
            weight = None
        if not sep or not name or weight is None:
            raise InvalidParameterError(f"{option} expects NAME=WEIGHT[,NAME=WEIGHT...], got {value!r}")
        if name in out:
            raise InvalidParameterError(f"{option}: weight {name!r} given twice")
        out[name] = weight
    return out


def gated(call: Callable[[], dict[str, Any]]) -> tuple[dict[str, Any], ThresholdExceeded | None]:
    """``(report, None)`` from ``call()``, or ``(report, failure)`` when a gate failed after
    the reports were written: the command prints its output and summary, then raises the
    failure (its exit code). A failure without a report is raised at once."""
    try:
        return call(), None
    except ThresholdExceeded as exc:
        rep = getattr(exc, "report", None)
        if rep is None:
            raise
        return rep, exc
