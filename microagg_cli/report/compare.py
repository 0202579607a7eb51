"""``sdc compare``: the grid document as CSV, terminal tables and an HTML page.

Everything here reads the JSON-ready document of :func:`microagg_cli.comparison.build_document`
(schema ``COMPARE_SCHEMA_VERSION``; the JSON text is :func:`microagg_cli.report.to_json`)
and never computes a measure:

- :func:`to_csv` -- one line per finished cell;
- :func:`rich_tables`, :func:`print_tables`, :func:`table_text` -- one table per plan,
  rows grouped by method then k, as the papers print them;
- :func:`render_html` -- the tables and two risk-utility maps (:func:`risk_utility_svg`)
  in the one template of :mod:`microagg_cli.report.html`.
"""

from __future__ import annotations

import csv
import io
from html import escape
from typing import Any, Mapping

from ..metrics import METRICS
from .common import fixed, label_order, to_json
from .html import Html, audit_section
from .svg import PALETTE, Svg, marker, nice_max, text_width, tick_text

__all__ = [
    "LABEL_MEASURES",
    "MEASURES",
    "print_tables",
    "render",
    "render_html",
    "rich_tables",
    "risk_utility_svg",
    "table_text",
    "to_csv",
]

#: The headline measures of a row: (key, column heading, decimals in tables), from the
#: measure catalogue :data:`microagg_cli.metrics.METRICS`.
MEASURES: tuple[tuple[str, str, int], ...] = tuple(
    (key, METRICS[key].heading, METRICS[key].digits)
    for key in ("il_sse", "il_score", "dld", "pld", "id", "dr", "score", "k_prime", "ci_overlap", "pmse_ratio", "linkage",
                "rmdid1")
)

#: Measures given per intruder-knowledge label (1G, 2G, ...): (key, heading).
LABEL_MEASURES: tuple[tuple[str, str], ...] = tuple(
    (key, METRICS[key].heading) for key in ("k_prime", "dld", "pld", "id", "dr")
)

#: Axis tops of the maps: finer steps than the evaluate charts (more of the box used).
_MAP_STEPS = (1, 2, 2.5, 3, 4, 5, 6, 8, 10)


#: Columns of grids with categorical keys (``sdc compare --categorical``): the mean share
#: of changed categories (%), the smallest class over every released key, over the
#: released categorical keys the global risk (% expected re-identifications) and the
#: records violating k-anonymity (f_k < k), and whether the cell is dominated on the front.
MIXED_MEASURES: tuple[tuple[str, str, int], ...] = (("categorical_changed", "cat. changed %", 2),
                                                    ("k_released", "k_min keys", 0),
                                                    ("key_risk", "key risk %", 3),
                                                    ("key_violations", "keys f_k<k", 0),
                                                    ("dominated", "dominated", 0))


def _measures(doc: Mapping[str, Any]) -> tuple[tuple[str, str, int], ...]:
    """The row measures shown: :data:`MEASURES`, then :data:`MIXED_MEASURES` in grids with keys."""
    return MEASURES + (MIXED_MEASURES if any("categorical_changed" in r for r in doc["rows"]) else ())


def _labels(doc: Mapping[str, Any]) -> list[str]:
    labels = {lab for r in doc["rows"] for lab in r["by_label"]}
    return sorted(labels, key=label_order)


def _csv_value(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v)
    return v


def to_csv(doc: Mapping[str, Any]) -> str:
    """One line per finished cell: coordinates, measures, per-label means, timings."""
    labels = _labels(doc)
    head = ["cell", "plan", "method", "label", "params", "k", "k_counts"]
    head += [h for _k, h, _d in _measures(doc)] + ["k_min", "share_below_k", "LB_NN", "gap", "scenarios"]
    head += [f"{h} {lab}" for lab in labels for _k, h in LABEL_MEASURES]
    head += ["warnings", "saved", "seconds_protect", "seconds_evaluate"]
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(head)
    for r in doc["rows"]:
        line = [r["cell"], r["plan"], r["method"], r["label"],
                ";".join(f"{k}={v}" for k, v in r["params"].items()), r["k"], r["k_counts"]]
        line += [r[k] for k, _h, _d in _measures(doc)]
        line += [r["k_min"], r["share_below_k"], r["lb_nn"], r["optimality_gap"], r["scenarios"]["count"]]
        for lab in labels:
            entry = r["by_label"].get(lab) or {}
            line += [entry.get(k) for k, _h in LABEL_MEASURES]
        line += [" | ".join(r["warnings"]), r["saved"], r["seconds"]["protect"], r["seconds"]["evaluate"]]
        w.writerow([_csv_value(v) for v in line])
    return out.getvalue()


def _k_text(row: Mapping[str, Any], short: bool = False) -> str:
    if row["k_counts"] != "values":
        return str(row["k"])
    return f"{row['k']} v" if short else f"{row['k']} values"


def _table_rows(doc: Mapping[str, Any], plan: str, labels: list[str]) -> list[tuple[bool, list[str]]]:
    """(first row of its method group, cells) for the rows of ``plan``."""
    out = []
    last = None
    for r in doc["rows"]:
        if r["plan"] != plan:
            continue
        first = r["label"] != last
        last = r["label"]
        cells = [r["label"] if first else "", _k_text(r, short=True)]
        cells += [fixed(r[k], d) for k, _h, d in _measures(doc)]
        for lab in labels:
            entry = r["by_label"].get(lab) or {}
            cells += [fixed(entry.get("k_prime")), fixed(entry.get("dld"))]
        cells.append(fixed(r["seconds"]["protect"] + r["seconds"]["evaluate"], 1))
        out.append((first, cells))
    return out


def _plan_labels(doc: Mapping[str, Any], plan: str) -> list[str]:
    labels = {lab for r in doc["rows"] if r["plan"] == plan for lab in r["by_label"]}
    labels_sorted = sorted(labels, key=label_order)
    return labels_sorted if len(labels_sorted) > 1 else []


def _plan_text(plan: Mapping[str, Any], width: int = 60) -> str:
    """``(a,b,c); (d,e)`` when short, else a count of columns and blocks."""
    text = "; ".join("(" + ",".join(b["columns"]) + ")" for b in plan["blocks"])
    if len(text) <= width:
        return text
    ncol = sum(len(b["columns"]) for b in plan["blocks"])
    return f"{ncol} columns in {len(plan['blocks'])} block(s)"


def rich_tables(doc: Mapping[str, Any]) -> list[Any]:
    """One rich table per plan: method, k, then the measures (and k', DLD per label)."""
    from rich.table import Table as RichTable

    tables = []
    for p in doc["plans"]:
        labels = _plan_labels(doc, p["name"])
        t = RichTable(title=f"{p['name']}: {_plan_text(p)}", title_justify="left")
        t.add_column("method", justify="left", no_wrap=True)
        t.add_column("k", justify="right", no_wrap=True)
        heads = [h for _k, h, _d in _measures(doc)] + [f"{m} {lab}" for lab in labels for m in ("k'", "DLD")] + ["s"]
        for h in heads:
            t.add_column(h, justify="right", no_wrap=True, min_width=len(h))
        rows = _table_rows(doc, p["name"], labels)
        for i, (_first, cells) in enumerate(rows):
            nxt_first = i + 1 < len(rows) and rows[i + 1][0]
            t.add_row(*cells, end_section=nxt_first)
        tables.append(t)
    return tables


def _footer_lines(doc: Mapping[str, Any]) -> list[str]:
    lines = []
    params = doc["parameters"]
    counts = sorted({r["scenarios"]["count"] for r in doc["rows"]})
    modes = sorted({r["scenarios"]["mode"] for r in doc["rows"]})
    if counts:
        lines.append(f"{doc['finished']} of {doc['cells']} cells; intruder scenarios per cell: "
                     f"{', '.join(map(str, counts))} ({', '.join(modes)}); seed {params['seed']}.")
    lines.append("DLD, PLD, ID: means over the scenarios (%); DR = 0.25 DLD + 0.25 PLD + 0.5 ID; "
                 "score = 0.5 IL_score + 0.5 DR (defaults; see the JSON formulas). k': records per distinct "
                 "protected row over all protected columns; 'k' nG', 'DLD nG': means over the scenarios "
                 "touching n blocks.")
    if any(r["k_counts"] == "values" for r in doc["rows"]):
        lines.append("'v' after k: the method's k counts values per partition (mic1d), not records; "
                     "it is not k-anonymous by construction (see k').")
    return lines


def print_tables(doc: Mapping[str, Any], console: Any) -> None:
    """Print the tables and notes on a rich console."""
    if doc.get("preset"):
        console.print(f"preset {doc['preset']['name']}: {doc['preset']['summary']}")
    for t in rich_tables(doc):
        console.print(t)
    for line in _footer_lines(doc):
        console.print(line, markup=False, highlight=False)


def table_text(doc: Mapping[str, Any], width: int = 200) -> str:
    """The tables as plain text (what ``--format table -o FILE`` writes)."""
    from rich.console import Console

    console = Console(file=io.StringIO(), width=width, record=True, color_system=None, highlight=False,
                      soft_wrap=False)
    print_tables(doc, console)
    return console.export_text(styles=False)


def render(doc: Mapping[str, Any], fmt: str) -> str:
    """The document in one of the ``--format`` choices: ``json``, ``csv`` or ``table``."""
    if fmt == "json":
        return to_json(doc)
    if fmt == "csv":
        return to_csv(doc)
    return table_text(doc)


# --------------------------------------------------------------------------- HTML


def _legend_rows(items: list[tuple[str, float]], x0: float, right: float) -> list[list[tuple[str, float]]]:
    """Legend entries (text, width) wrapped into rows between x0 and right."""
    rows: list[list[tuple[str, float]]] = [[]]
    lx = x0
    for text, wid in items:
        if rows[-1] and lx + wid > right:
            rows.append([])
            lx = x0
        rows[-1].append((text, wid))
        lx += wid
    return rows


def risk_utility_svg(doc: Mapping[str, Any], *, x_key: str = "il_sse", x_name: str = "IL_SSE",
                     width: int = 760, height: int = 460, y_key: str = "dr",
                     y_text: str = "DR (%), disclosure risk", title: str | None = None,
                     hollow_dominated: bool = False) -> str | None:
    """The risk-utility map as inline SVG: x = information loss, y = DR (``y_key``), one
    labelled marker per cell; colour = method, shape = plan; with ``hollow_dominated`` a
    row marked ``dominated`` (:func:`microagg_cli.comparison.mark_dominated`) is drawn
    hollow. None when no row has both values.

    Labels never overlap one another or a marker: each goes to the first free place
    around its marker, further out with a leader line when the near ones are taken
    (:meth:`microagg_cli.report.svg.Svg.place`).
    """
    pts = [r for r in doc["rows"] if r.get(x_key) is not None and r.get(y_key) is not None]
    if not pts:
        return None
    methods = list(dict.fromkeys(r["label"] for r in doc["rows"]))
    plans = [p["name"] for p in doc["plans"]]
    color = {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(methods)}
    shape = {p: i for i, p in enumerate(plans)}
    xmax = nice_max(max(r[x_key] for r in pts) * 1.08, _MAP_STEPS)
    ymax = nice_max(max(r[y_key] for r in pts) * 1.08, _MAP_STEPS)
    x0, y0 = 62.0, 36.0
    method_rows = _legend_rows([(m, 24 + text_width(m, 11)) for m in methods], x0, width - 10.0)
    plan_rows = (_legend_rows([(f"plan {p}", 30 + text_width(f"plan {p}", 11)) for p in plans], x0, width - 10.0)
                 if len(plans) > 1 else [])
    legend_rows = len(method_rows) + len(plan_rows)
    w, h = width - x0 - 24.0, height - y0 - 58.0 - 18.0 * legend_rows
    y_name = y_text.split(" (")[0]
    title = title or f"Risk-utility map: {x_name} against DR"
    svg = Svg(width, height, title, f"one marker per cell: {x_name} (x, lower is better) and {y_name} (y, lower "
                                    "is better); colour = method, shape = plan"
                                    + ("; hollow = dominated" if hollow_dominated else ""))

    def px(v: float) -> float:
        return x0 + w * v / xmax

    def py(v: float) -> float:
        return y0 + h - h * v / ymax

    svg.text(width / 2, 20, title, size=14, weight="bold")
    for i in range(6):
        tv = xmax * i / 5
        svg.add("line", x1=f"{px(tv):.1f}", x2=f"{px(tv):.1f}", y1=f"{y0:.1f}", y2=f"{y0 + h:.1f}", stroke="#eee")
        svg.text(px(tv), y0 + h + 15, tick_text(tv), size=10, fill="#555")
        tv = ymax * i / 5
        svg.add("line", x1=f"{x0:.1f}", x2=f"{x0 + w:.1f}", y1=f"{py(tv):.1f}", y2=f"{py(tv):.1f}", stroke="#eee")
        svg.text(x0 - 6, py(tv) + 4, tick_text(tv), anchor="end", size=10, fill="#555")
    svg.add("line", x1=f"{x0:.1f}", x2=f"{x0:.1f}", y1=f"{y0:.1f}", y2=f"{y0 + h:.1f}", stroke="#888")
    svg.add("line", x1=f"{x0:.1f}", x2=f"{x0 + w:.1f}", y1=f"{y0 + h:.1f}", y2=f"{y0 + h:.1f}", stroke="#888")
    svg.text(x0 + w / 2, y0 + h + 34, f"{x_name} (%), information loss", size=12)
    svg.text(16, y0 + h / 2, y_text, size=12, rotate=-90)
    xy = [(px(r[x_key]), py(r[y_key])) for r in pts]
    for r, (x, y) in zip(pts, xy):
        tip = (f"{r['label']}, k={_k_text(r)}, plan {r['plan']}: IL_SSE {fixed(r['il_sse'], 4)}, "
               f"IL_score {fixed(r['il_score'])}, DR {fixed(r['dr'])}, score {fixed(r['score'])}, "
               f"k' {fixed(r['k_prime'])}"
               + (f", categories changed {fixed(r['categorical_changed'])} %" if "categorical_changed" in r else "")
               + (", dominated" if hollow_dominated and r.get("dominated") else ""))
        svg.raw(marker(shape[r["plan"]], x, y, color[r["label"]], tip,
                       hollow=hollow_dominated and bool(r.get("dominated"))))
        svg.obstacle((x - 7, y - 7, x + 7, y + 7))
    # labels after every marker, so that none covers a marker drawn later
    bounds = (x0, y0 - 4, x0 + w + 20, y0 + h)
    for r, (x, y) in zip(pts, xy):
        svg.place(x, y, f"{r['label']} {r['k']}", size=9.5, fill=color[r["label"]], bounds=bounds)
    ly = height - 12.0 - 18.0 * (legend_rows - 1)
    for row in method_rows:
        lx = x0
        for m, wid in row:
            svg.add("rect", x=f"{lx:.1f}", y=f"{ly - 9:.1f}", width=11, height=11, fill=color[m])
            svg.text(lx + 15, ly + 1, m, anchor="start", size=11)
            lx += wid
        ly += 18
    for row in plan_rows:
        lx = x0
        for text, wid in row:
            svg.raw(marker(shape[text[5:]], lx + 5, ly - 4, "#555", text))
            svg.text(lx + 15, ly + 1, text, anchor="start", size=11)
            lx += wid
        ly += 18
    return svg.close()


def render_html(doc: Mapping[str, Any]) -> str:
    """One self-contained HTML page: the tables per plan and two risk-utility maps.

    Inline CSS and hand-drawn inline SVG only: no script, no external reference.
    """
    name = doc["input"]["name"]
    version = str(doc["tool"]["version"])
    h = Html()
    h.add("<header>")
    h.el("h1", f"sdc compare: {name}")
    h.el("p", f'{doc["input"]["rows"]} records; {doc["finished"]} of {doc["cells"]} cells'
              f'{"" if doc["complete"] else " (interrupted: the other cells did not run)"}; '
              f'{len(doc["methods"])} method(s), {len(doc["plans"])} plan(s); seed {doc["parameters"]["seed"]}.',
         "sub")
    h.add("</header>")
    if doc.get("preset"):
        pr = doc["preset"]
        h.add(f"<p><b>Preset {escape(pr['name'])}</b>: {escape(pr['summary'])}. "
              f"{escape(pr['notes'])} <span class=\"muted\">Reference: {escape(pr['reference'])}.</span></p>")
    h.add("<h2>Risk-utility maps</h2>")
    figs = []
    for key, label in (("il_sse", "IL_SSE"), ("il_score", "IL_score")):
        svg = risk_utility_svg(doc, x_key=key, x_name=label)
        if svg:
            figs.append((svg, f"Each marker is one cell (method, k, plan): lower left is better. x = {label}, "
                              "y = DR = 0.25 DLD + 0.25 PLD + 0.5 ID (means over the intruder scenarios). "
                              "Hover a marker for its figures."))
    front = risk_utility_svg(doc, y_key="categorical_changed", y_text="categories changed (%)",
                             title="The mixed trade-off: IL_SSE against categories changed", hollow_dominated=True)
    if front:
        figs.append((front, "Each marker is one cell (method, key set, weights, k): lower left is better. "
                            "x = numeric IL_SSE, y = mean share of categories changed over the keys. A hollow "
                            "marker is dominated: another cell of the same plan, k and key set loses less on both."))
    h.figures(figs)
    h.add("<h2>Results</h2>")
    for p in doc["plans"]:
        labels = _plan_labels(doc, p["name"])
        blocks = "; ".join("(" + ", ".join(b["columns"]) + ")" for b in p["blocks"])
        h.el("h3", p["name"])
        h.el("p", f"{p['source']}: {blocks}", "muted")
        head = ["method", "k"] + [hd for _k, hd, _d in _measures(doc)]
        for lab in labels:
            head += [f"k' {lab}", f"DLD {lab}"]
        head.append("seconds")
        rows = _table_rows(doc, p["name"], labels)
        h.table(head, [cells for _first, cells in rows], left=1, groups=[first for first, _c in rows])
    h.add("<h2>Notes</h2><ul>")
    for line in _footer_lines(doc):
        h.el("li", line)
    for key, text in doc["formulas"].items():
        h.add(f"<li><code>{escape(key)}</code>: {escape(text)}</li>")
    for w in sorted({w for r in doc["rows"] for w in r["warnings"]}):
        h.el("li", f"warning: {w}")
    h.add("</ul>")
    audit_section(h, doc.get("audit"))
    return h.page(title=f"sdc compare: {name}", version=version,
                  footer=f"sdc {version} (microagg-cli, report schema {doc.get('schema_version')}); "
                         f"input {name} sha256 {doc['input'].get('sha256')}.")
