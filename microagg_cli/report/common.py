"""Small helpers shared by every view: JSON text, number formatting, dict paths.

Standard library only (no rich, no numpy): importing the report package stays cheap.
"""

from __future__ import annotations

import json
import math
from typing import Any, Sequence

from ..outputs import json_text as to_json

__all__ = ["to_json", "fmt", "fixed", "get", "scenario_text", "label_order", "json_value"]


def _plain(value: Any, *, strings: bool = False) -> str | None:
    """How :func:`fmt` and :func:`fixed` show what is not a finite float (None: it is one)."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if strings and isinstance(value, str):
        return value
    v = float(value)
    return None if math.isfinite(v) else str(v)


def fmt(value: Any, digits: int = 4) -> str:
    """A number for display: ``digits`` decimals, ``-`` for None, yes/no for booleans;
    a value that would print as zero switches to scientific notation.

    >>> fmt(5.69218627), fmt(None), fmt(3), fmt(0.000012345), fmt(True)
    ('5.6922', '-', '3', '1.234e-05', 'yes')
    """
    text = _plain(value, strings=True)
    if text is not None:
        return text
    v = float(value)
    if v != 0 and abs(v) < 0.5 * 10.0 ** (-digits):  # would print as zero
        return f"{v:.{max(digits - 1, 1)}e}"
    return f"{v:.{digits}f}"


def fixed(value: Any, digits: int = 2) -> str:
    """Like :func:`fmt` but always fixed-point (the compare tables' columns line up).

    >>> fixed(0.000012345), fixed(2.5, 1), fixed(False)
    ('0.00', '2.5', 'no')
    """
    text = _plain(value)
    return text if text is not None else f"{float(value):.{digits}f}"


def json_value(value: Any) -> str:
    """A parameter value for a table cell: lists and dicts as JSON, booleans as yes/no,
    None as ``-``.

    >>> json_value(True), json_value(None), json_value([1, 2]), json_value("x")
    ('yes', '-', '[1, 2]', 'x')
    """
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def get(d: Any, *path: Any) -> Any:
    """``d[p0][p1]...`` with None for any missing step (lists by index).

    >>> get({"a": [{"b": 1}]}, "a", 0, "b"), get({"a": None}, "a", "b"), get({}, "x", 3)
    (1, None, None)
    """
    for step in path:
        if d is None:
            return None
        if isinstance(d, list):
            d = d[step] if isinstance(step, int) and -len(d) <= step < len(d) else None
        else:
            d = d.get(step)
    return d


def scenario_text(columns: Sequence[str], evaluated: Sequence[str], limit: int = 6) -> str:
    """A scenario's known columns for one line of text.

    >>> scenario_text(["a", "b"], ["a", "b", "c"]), scenario_text(["a", "b", "c"], ["a", "b", "c"])
    ('a,b', 'all 3 columns')
    >>> scenario_text(list("abcdefgh"), list("abcdefghij"), limit=3)
    'a,b,c +5 more'
    """
    if len(columns) == len(evaluated) and len(columns) > 1:
        return f"all {len(columns)} columns"
    if len(columns) > limit:
        return ",".join(columns[:limit]) + f" +{len(columns) - limit} more"
    return ",".join(columns)


def label_order(label: str) -> tuple[int, str]:
    """Sort key of intruder-knowledge labels: 1G, 2G, ..., 10G (numeric; others first).

    >>> sorted(["10G", "2G", "1G"], key=label_order)
    ['1G', '2G', '10G']
    """
    return (int(label[:-1]) if label[:-1].isdigit() else 0, label)
