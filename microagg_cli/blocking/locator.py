"""Where a plan was read from, and the line of a key or value in its text.

:class:`PlanSource` keeps a plan file's name, text and format so that every error about
the plan can name the file and, where it can be found, the line (``name, line N:``); the
line is found by a best-effort locator that cuts a TOML or JSON text into sections (the
top level, ``defaults``, ``roles`` and each block) and searches a key or quoted value
inside a section, comments excluded.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Sequence

__all__ = ["PlanSource"]


def _code_part(line: str) -> str:
    """The line without a trailing ``# comment`` (quotes respected)."""
    quote = None
    escaped = False
    for i, ch in enumerate(line):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\" and quote == '"':
                escaped = True
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            return line[:i]
    return line


class _Locator:
    """Finds the line of a key or value in a plan's text (best effort).

    The text is cut into sections: the top level, ``defaults`` and each block; inside
    a section the key (``k = ...``, ``"k": ...``, ``params.gamma = ...``,
    ``{ gamma = ... }``) or a quoted value is searched line by line.
    """

    def __init__(self, text: str, fmt: str):
        self.lines = text.splitlines()
        self.ranges = self._json_ranges() if fmt == "json" else self._toml_ranges()

    def _toml_ranges(self) -> dict[Any, tuple[int, int]]:
        headers: list[tuple[int, str]] = []
        for i, raw in enumerate(self.lines):
            code = _code_part(raw).strip()
            m = re.match(r"^\[\[\s*([^\]]+?)\s*\]\]$", code) or re.match(r"^\[\s*([^\]]+?)\s*\]$", code)
            if m:
                headers.append((i, ("[[" if code.startswith("[[") else "[") + m.group(1).replace(" ", "")))
        ranges: dict[Any, tuple[int, int]] = {"top": (0, headers[0][0] if headers else len(self.lines))}
        sections: list[tuple[int, Any]] = []
        n_block = -1
        for line, name in headers:
            if name.startswith(("[blocks.", "[defaults.", "[roles.")):
                continue  # a sub-table ([blocks.params]) belongs to the section above
            if name == "[[blocks":
                n_block += 1
                sections.append((line, ("blocks", n_block)))
            else:
                sections.append((line, {"[defaults": "defaults", "[roles": "roles"}.get(name)))
        for (line, ident), (end, _) in zip(sections, sections[1:] + [(len(self.lines), None)]):
            if ident is not None:
                ranges[ident] = (line, end)
        return ranges

    def _json_ranges(self) -> dict[Any, tuple[int, int]]:
        """Line ranges of ``defaults`` and each element of ``blocks`` in a JSON text."""
        text = "\n".join(self.lines)
        ranges: dict[Any, tuple[int, int]] = {"top": (0, len(self.lines))}
        stack: list[list[Any]] = []  # [kind, key, start_line, child_count]
        line = 0
        key: str | None = None
        last_string: str | None = None
        i = 0
        while i < len(text):
            ch = text[i]
            if ch == "\n":
                line += 1
            elif ch == '"':
                j = i + 1
                while j < len(text) and text[j] != '"':
                    j += 2 if text[j] == "\\" else 1
                last_string = text[i + 1:j]
                i = j
            elif ch == ":":
                key = last_string
            elif ch in "{[":
                if stack and stack[-1][0] == "[":
                    stack[-1][3] += 1
                    ident: Any = (stack[-1][1], stack[-1][3] - 1)
                else:
                    ident = key if len(stack) == 1 else None
                stack.append([ch, ident, line, 0])
            elif ch in "}]":
                if stack:
                    kind, ident, start, _ = stack.pop()
                    if len(stack) == 1 and ident in ("defaults", "roles"):
                        ranges[ident] = (start, line + 1)
                    elif len(stack) == 2 and isinstance(ident, tuple) and ident[0] == "blocks":
                        ranges[ident] = (start, line + 1)
            i += 1
        return ranges

    @staticmethod
    def _key_re(key: str) -> re.Pattern[str]:
        k = re.escape(key)
        return re.compile(rf"(^|[\s{{,.\[])(\"{k}\"|'{k}'|{k})\s*[=:]|^\s*\[\s*(blocks|defaults)\.{k}\s*\]")

    def _find(self, lo: int, hi: int, pattern: re.Pattern[str] | None, value: str | None) -> int | None:
        start = lo
        if pattern is not None:
            for i in range(lo, hi):
                if pattern.search(_code_part(self.lines[i])):
                    start = i
                    break
            else:
                return None
            if value is None:
                return start
        assert value is not None
        quoted = (json.dumps(value, ensure_ascii=False), f"'{value}'")
        for i in range(start, hi):
            code = _code_part(self.lines[i])
            if any(q in code for q in quoted):
                return i
        return None

    def line(self, path: Sequence[Any], value: str | None) -> int | None:
        path = list(path)
        if path and path[0] == "blocks" and len(path) > 1 and isinstance(path[1], int):
            section: Any = ("blocks", path[1])
            keys = path[2:]
        elif path and path[0] in ("defaults", "roles"):
            section, keys = path[0], path[1:]
        else:
            section, keys = "top", path
        found: int | None = None
        if section in self.ranges:  # absent e.g. for blocks written as inline tables
            lo, hi = self.ranges[section]
            if not keys and value is None:
                found = lo if section != "top" else None
            else:
                # each key is searched from its parent key's line on
                start = lo
                for key in keys:
                    hit = self._find(start, hi, self._key_re(str(key)), None)
                    if hit is None:
                        break
                    start = found = hit
                if value is not None:
                    hit = self._find(start, hi, None, value)
                    found = hit if hit is not None else found
        if found is None and value is not None:
            # last resort: a value that occurs on exactly one line of the file
            quoted = json.dumps(value, ensure_ascii=False)
            hits = [i for i, ln in enumerate(self.lines) if quoted in _code_part(ln)]
            found = hits[0] if len(hits) == 1 else None
        return None if found is None else found + 1


@dataclass(frozen=True)
class PlanSource:
    """Where a plan was read from: used to point error messages at a line."""

    name: str
    text: str
    fmt: str

    def line_of(self, *path: Any, value: str | None = None) -> int | None:
        """1-based line of a key path such as ``("blocks", 2, "k")``, or None."""
        return _Locator(self.text, self.fmt).line(path, value)

    def where(self, *path: Any, value: str | None = None) -> str:
        line = self.line_of(*path, value=value)
        return f"{self.name}, line {line}" if line else self.name

