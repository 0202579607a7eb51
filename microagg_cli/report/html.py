"""The one HTML template and stylesheet of every HTML report (evaluate, compare).

A page is self-contained: inline CSS and inline SVG only (no script, no link, no image
file), so it reads offline; the markup is well-formed XML (XHTML-compatible). Layout
rules that hold for every report:

- wide tables scroll inside their own box (``div.scroll``), so the page never scrolls
  sideways (checked at 1024 px by ``checks/browser.py``); long unbroken strings
  (hashes, command lines) wrap;
- printed on A4 the tables shrink and wrap instead of losing their last columns;
- booleans read yes/no (:func:`microagg_cli.report.common.fmt`), never ``True``.
"""

from __future__ import annotations

import hashlib
import shlex
from html import escape
from pathlib import Path
from typing import Any, Iterable, Mapping, MutableMapping, Sequence

__all__ = ["CSS", "Html", "audit_section", "html_file_entry", "attach_html"]

CSS = """
:root { --fg: #1d232a; --muted: #5b6670; --line: #d8dee4; --bg: #ffffff; --card: #f5f7f9;
        --ok: #1a7f37; --bad: #c62828; --warn: #8a5a00; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1180px; padding: 24px 28px 48px; color: var(--fg); background: var(--bg);
       font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif;
       overflow-wrap: break-word; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 32px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 14px; margin: 18px 0 6px; }
p.sub, .muted { color: var(--muted); }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px;
              overflow-wrap: anywhere; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 16px 0; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px;
        min-width: 128px; flex: 1 1 128px; }
.card .v { font-size: 22px; font-weight: 600; }
.card .l { color: var(--muted); font-size: 12px; }
.scroll { max-width: 100%; overflow-x: auto; margin: 8px 0 12px; }
table { border-collapse: collapse; font-size: 13px; }
caption { text-align: left; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 10px; text-align: right; vertical-align: top; }
th { background: var(--card); font-weight: 600; }
td.l, th.l { text-align: left; }
td.wrap { overflow-wrap: anywhere; min-width: 12em; }
tr.group td { border-top: 2px solid #9aa4ad; }
.figs { display: flex; flex-wrap: wrap; gap: 16px; }
figure { margin: 0 0 16px; border: 1px solid var(--line); border-radius: 8px; padding: 8px; background: #fff;
         max-width: 100%; }
figcaption { color: var(--muted); font-size: 12px; max-width: 760px; padding: 4px 6px 0; }
svg { display: block; max-width: 100%; height: auto; }
.pass { color: var(--ok); font-weight: 700; }
.fail { color: var(--bad); font-weight: 700; }
.banner { border-radius: 8px; padding: 10px 14px; margin: 14px 0; font-weight: 600; }
.banner.ok { background: #e6f4ea; color: var(--ok); border: 1px solid #b7dfc3; }
.banner.bad { background: #fdecea; color: var(--bad); border: 1px solid #f5c2c0; }
.banner.internal { background: #fff4e5; color: var(--warn); border: 1px solid #f3d19e; }
dl.formulas dt { font-weight: 600; margin-top: 6px; }
dl.formulas dd { margin: 2px 0 0 16px; }
footer { margin-top: 40px; color: var(--muted); font-size: 12px; border-top: 1px solid var(--line);
         padding-top: 8px; }
@page { size: A4; margin: 12mm; }
@media print {
  body { max-width: none; padding: 0; font-size: 10px; }
  .scroll { overflow: visible; }
  table { font-size: 8px; width: auto; max-width: 100%; }
  th, td { padding: 1px 3px; overflow-wrap: anywhere; }
  code, .mono { font-size: 8px; }
  figure, tr, .card { break-inside: avoid; }
  h2, h3 { break-after: avoid; }
}
"""


class Html:
    """A page under construction: :meth:`add` markup, :meth:`el` escaped elements,
    :meth:`table` tables (in their own scrolling box), :meth:`page` the whole
    document in the one template."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def add(self, text: str) -> None:
        self.parts.append(text)

    def el(self, tag: str, text: Any = "", cls: str | None = None) -> None:
        c = f' class="{escape(cls)}"' if cls else ""
        self.parts.append(f"<{tag}{c}>{escape(str(text))}</{tag}>")

    def table(self, head: Sequence[str], rows: Iterable[Sequence[Any]], left: int = 1,
              caption: str | None = None, groups: Sequence[bool] | None = None,
              wrap: Sequence[int] = ()) -> None:
        """A table; the first ``left`` columns are left-aligned text; ``groups[i]``
        draws a rule above row i (a new method group); columns in ``wrap`` (long
        strings: hashes, paths) wrap anywhere."""
        out = ['<div class="scroll"><table>']
        if caption:
            out.append(f'<caption class="muted">{escape(caption)}</caption>')
        out.append("<thead><tr>" + "".join(
            f'<th class="l">{escape(h)}</th>' if i < left else f"<th>{escape(h)}</th>"
            for i, h in enumerate(head)) + "</tr></thead><tbody>")
        for n, r in enumerate(rows):
            cls = ' class="group"' if groups is not None and n > 0 and groups[n] else ""
            cells = []
            for i, v in enumerate(r):
                klass = " ".join(c for c in ("l" if i < left else "", "wrap" if i in wrap else "") if c)
                attr = f' class="{klass}"' if klass else ""
                cells.append(f"<td{attr}>{escape(_cell(v))}</td>")
            out.append(f"<tr{cls}>" + "".join(cells) + "</tr>")
        out.append("</tbody></table></div>")
        self.parts.append("".join(out))

    def cards(self, items: Sequence[tuple[str, str, str]]) -> None:
        """Headline figures: (label, value, hint) each."""
        self.add('<div class="cards">')
        for label, value, hint in items:
            self.add(f'<div class="card"><div class="l">{escape(label)}</div><div class="v">{escape(value)}</div>'
                     f'<div class="l">{escape(hint)}</div></div>')
        self.add("</div>")

    def figures(self, figs: Sequence[tuple[str, str]]) -> None:
        """(inline SVG, caption) pairs side by side (wrapping)."""
        self.add('<div class="figs">')
        for svg, caption in figs:
            self.add(f"<figure>{svg}<figcaption>{escape(caption)}</figcaption></figure>")
        self.add("</div>")

    def page(self, *, title: str, version: str, footer: str) -> str:
        """The whole document: head (charset, viewport, generator, title, the one
        stylesheet), the body built so far and the footer."""
        head = [
            "<!DOCTYPE html>",
            '<html xmlns="http://www.w3.org/1999/xhtml" lang="en">',
            "<head>",
            '<meta charset="utf-8"/>',
            '<meta name="viewport" content="width=device-width, initial-scale=1"/>',
            f'<meta name="generator" content="sdc {escape(version)}"/>',
            f"<title>{escape(title)}</title>",
            f"<style>{CSS}</style>",
            "</head>",
            "<body>",
        ]
        tail = [f"<footer>{escape(footer)}</footer>", "</body>", "</html>"]
        return "\n".join(head + self.parts + tail) + "\n"


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v)


def audit_section(h: Html, section: Mapping[str, Any] | None) -> None:
    """The report's ``audit`` section: command line, times, versions, files with hashes."""
    if not section:
        return
    vers = section.get("versions") or {}
    rows = [
        ("command line", shlex.join(section.get("argv") or []) + f" ({section.get('entry')})"),
        ("working directory", section.get("cwd_name")),
        ("started (UTC)", section.get("started_utc")),
        ("duration", f"{float(section.get('duration_seconds') or 0.0):.2f} s"),
        ("versions", ", ".join(f"{k} {v}" for k, v in vers.items() if v)),
        ("platform", section.get("platform")),
    ]
    rep = section.get("reproduce")
    if rep:
        rows.append(("reproduce", (rep.get("command") or "-")
                     + ("" if rep.get("reproducible") else f" ({rep.get('note')})")))
    h.add("<h2>Audit trail</h2>")
    h.add('<dl class="formulas">')
    h.add("".join(f"<dt>{escape(k)}</dt><dd><code>{escape(_cell(v))}</code></dd>" for k, v in rows))
    h.add("</dl>")
    files = section.get("files") or []
    if files:
        h.table(["file", "path", "bytes", "SHA-256"],
                [[f.get("role"), f.get("path"), f.get("size_bytes"), f.get("sha256") or "-"] for f in files],
                left=2, wrap=(1, 3))
        h.el("p", "The HTML page lists the files written before it; the JSON report also lists the page.",
             "muted")


def html_file_entry(path: str | Path, data: bytes, role: str = "HTML report") -> dict[str, Any]:
    """An audit ``files`` entry for bytes about to be written to ``path``."""
    return {"role": role, "path": str(path), "name": Path(path).name, "size_bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest()}


def attach_html(doc: MutableMapping[str, Any], path: str | Path, html_text: str) -> bytes:
    """The page's bytes, after adding their size and SHA-256 to ``doc``'s audit files.

    Render the page first (it shows the audit trail without itself: a file cannot
    hold its own hash), attach, then serialise the JSON report: the JSON names the
    exact bytes of the page written beside it.
    """
    data = html_text.encode("utf-8")
    audit = doc.get("audit")
    if isinstance(audit, MutableMapping):
        files = [f for f in audit.get("files") or [] if f.get("path") != str(path)]
        audit["files"] = files + [html_file_entry(path, data)]
    return data
