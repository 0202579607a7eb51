"""One home for rendering: result dicts -> JSON (the source of truth) -> terminal / HTML.

Every report kind is a JSON-ready dict built by the library (``protect``, ``evaluate``,
``compare``) or shaped here (``blocks``: :func:`blocks_document`). This package turns
those dicts into text and never computes a measure; it imports no orchestration
(api, grid, engines, blocking), only the dicts it is given. Modules:

- :mod:`~microagg_cli.report.common` -- JSON text, number formatting (booleans read yes/no);
- :mod:`~microagg_cli.report.svg` -- the one set of SVG helpers (writer, axes,
  markers, label placement without overlaps);
- :mod:`~microagg_cli.report.html` -- the one HTML template and stylesheet, the audit
  section, and :func:`attach_html` (the page's hash into the JSON's audit trail);
- :mod:`~microagg_cli.report.evaluate`, :mod:`~microagg_cli.report.compare`,
  :mod:`~microagg_cli.report.protect`, :mod:`~microagg_cli.report.blocks` -- one per
  command.

``render_html`` is the evaluate page (the name callers have used since 1.0);
``render_compare_html`` the compare page.
"""

from __future__ import annotations

from .blocks import blocks_document, blocks_text, evaluation_text
from .common import fixed, fmt, get, json_value, label_order, scenario_text, to_json
from .compare import print_tables, render as render_compare, render_html as render_compare_html
from .compare import risk_utility_svg, table_text, to_csv
from .evaluate import cg_rows, print_risk_summary, print_summary, render_html
from .html import attach_html, html_file_entry
from .protect import print_protect_summary

__all__ = [
    "attach_html",
    "blocks_document",
    "blocks_text",
    "cg_rows",
    "evaluation_text",
    "fixed",
    "fmt",
    "get",
    "html_file_entry",
    "json_value",
    "label_order",
    "print_protect_summary",
    "print_risk_summary",
    "print_summary",
    "print_tables",
    "render_compare",
    "render_compare_html",
    "render_html",
    "risk_utility_svg",
    "scenario_text",
    "table_text",
    "to_csv",
    "to_json",
]
