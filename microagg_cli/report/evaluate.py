"""``sdc evaluate`` (and the risk section of ``sdc protect --evaluate``): terminal and HTML.

Everything here reads the report dict built by :func:`microagg_cli.api.evaluate`
(schema ``EVALUATION_SCHEMA_VERSION``) and never computes a measure. Views:

- :func:`print_summary` -- a rich summary for a terminal (stderr), 80 columns;
- :func:`print_risk_summary` -- its headline figures and risk table (also used by
  ``sdc protect --evaluate``);
- :func:`render_html` -- one self-contained HTML page in the one template of
  :mod:`microagg_cli.report.html`, with hand-drawn inline SVG charts.

None of the views adds data: original values of protected attributes appear only
when the report itself holds them (``internal_details``, ``sdc evaluate --internal``).
"""

from __future__ import annotations

from html import escape
from typing import Any, Sequence

from ..metrics import METRICS
from .common import fmt, get, json_value, scenario_text
from .evaluate_sections import analysis_section, categorical_section, linkage_rmd_html
from .evaluate_sections import column_names as _names
from .evaluate_sections import pct as _pct
from .html import Html, audit_section
from .svg import COLORS, LABEL_COLORS, Svg, axes, nice_max, text_box, tick_text, ticks

__all__ = ["print_summary", "print_risk_summary", "render_html", "cg_rows"]

#: Headings of the worst-scenario table: the catalogue's (:data:`microagg_cli.metrics.METRICS`),
#: plus the two class-size figures that are not measures of their own.
_MEASURE_NAMES = {
    **{key: METRICS[key].heading for key in ("dld", "pld", "id", "sdid", "k_prime")},
    "k_min": "k_min", "share_below_k": "share < k",
}


def _labels(measures: dict[str, Any]) -> list[str]:
    return list((get(measures, "risk", "by_label") or {}).keys())


def cg_rows(section: dict[str, Any]) -> dict[str, Any] | None:
    """The ``--bound cg`` figures of an evaluation, or None when it was not asked for:
    ``{"overall": (lb_cg, cg_gap, cg_status, cg_seconds), "per_block": [(...), ...]}``
    (cg_gap is a share of IL_SSE)."""
    cg = get(section, "measures", "utility", "cg_bound")
    if not cg:
        return None
    keys = ("lb_cg", "cg_gap", "cg_status", "cg_seconds")
    n = len(get(cg, "lb_cg", "per_block") or [])
    return {"overall": tuple(get(cg, key, "overall") for key in keys),
            "per_block": [tuple(get(cg, key, "per_block", i) for key in keys) for i in range(n)]}


# ----------------------------------------------------------------------------- terminal


def _title(rep: dict[str, Any]) -> str:
    o, p = rep["original"]["name"], rep["protected"]["name"]
    m = rep["measures"]
    sc = m["risk"]["scenarios"]
    blocks = len(rep.get("blocks") or [])
    return (f"sdc evaluate: {o} vs {p}: {m['n']} records, {m['p']} columns, {blocks} block(s), "
            f"{sc['count']} intruder scenario(s) ({sc['mode']})")


def pairing_text(rep: dict[str, Any]) -> str:
    """How the records were paired and whether the pairing was proven."""
    match = rep.get("matching") or {}
    by = match.get("by")
    if by == "key":
        key = match.get("key")
        how = "by key column(s) " + (key if isinstance(key, str) else ", ".join(key or []))
    elif by == "pairing file":
        how = f"by the pairing file {match.get('pairing_file')}"
    else:
        how = "by position"
    check = match.get("check") or {}
    if check.get("skipped"):
        return f"records paired {how}; the pairing was NOT proven (--no-pairing-check)"
    return f"records paired {how}" + ("; the pairing was proven" if check.get("passed") else "")


def _risk_table(section: dict[str, Any], title: str):
    from rich import box
    from rich.table import Table

    m = section["measures"]
    k = get(m, "risk", "parameters", "k")
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False)
    for col in ("label", "count", "k'\nmean", "k'\nworst", f"share<{k}\nworst" if k else "share<k\nworst",
                "DLD\nmean", "DLD\nworst", "PLD\nmean", "ID\nmean", "ID\nworst"):
        table.add_column(col, justify="left" if col == "label" else "right", no_wrap=True)

    def row(name: str, entry: dict[str, Any]) -> None:
        mean, worst = entry.get("mean") or {}, entry.get("worst") or {}
        table.add_row(
            name, str(entry.get("scenarios", "")), fmt(mean.get("k_prime"), 2),
            fmt(get(worst, "k_prime", "value"), 2), fmt(get(worst, "share_below_k", "value"), 2),
            fmt(mean.get("dld"), 1), fmt(get(worst, "dld", "value"), 1), fmt(mean.get("pld"), 1),
            fmt(mean.get("id"), 1), fmt(get(worst, "id", "value"), 1),
        )

    by_label = get(m, "risk", "by_label") or {}
    for label, entry in by_label.items():
        row(label, entry)
    risk = m["risk"]
    if len(by_label) != 1:
        row("all", {"scenarios": risk["scenarios"]["count"], "mean": risk["mean"], "worst": risk["worst"]})
    return table


def print_risk_summary(section: dict[str, Any], console: Any = None) -> None:
    """Headline figures and the per-label risk table of an evaluation section.

    ``section`` is a report of ``sdc evaluate`` or the ``evaluation`` entry of a
    ``sdc protect --evaluate`` report (both hold ``summary``, ``formulas``,
    ``measures``). Fits 80 columns (what a log file gets).
    """
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = console or Console(stderr=True, highlight=False)
    s = section["summary"]
    m = section["measures"]
    k = get(m, "risk", "parameters", "k")
    p = m.get("p")
    head = Table(title="Headline figures", title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1),
                 pad_edge=False)
    head.add_column("measure", no_wrap=True)
    head.add_column("value", justify="right", no_wrap=True)
    head.add_column("meaning")
    gap = f"; gap {fmt(s['optimality_gap'])}" if s["optimality_gap"] is not None else ""
    rows = [
        (METRICS["il_sse"].heading, fmt(s["il_sse"]), "% information loss, 100 * SSE / SST on z-scores"),
        ("LB_NN", fmt(s["lb_nn"]), f"lower bound on IL_SSE at k = {k}{gap}" if s["lb_nn"] is not None
         else "not shown: the protected file is not a k-partition"),
        ("IL_score", fmt(s["il_score"], 2), "% mean of IL1..IL5, each capped at 1"),
        (METRICS["dld"].heading, fmt(s["dld"], 2), f"% linked by distance (mean; worst {fmt(s['worst_dld'], 2)})"),
        ("PLD", fmt(s["pld"], 2), "% linked by Fellegi-Sunter weights (mean)"),
        ("ID", fmt(s["id"], 2), f"% interval disclosure (mean; worst {fmt(s['worst_id'], 2)})"),
        ("DR", fmt(s["dr"], 2), section["formulas"]["dr"]),
        ("score", fmt(s["score"], 2), section["formulas"]["score"] + " (lower is better)"),
        (METRICS["k_prime"].heading, fmt(s["k_prime"], 2), f"records per distinct row, all {p} columns known "
                                    f"(k_min {fmt(s['k_min'], 0)})"),
    ]
    if s.get("il_sse_raw") is not None:
        rows.insert(1, ("IL_SSE raw", fmt(s["il_sse_raw"]), "% 100 * SSE / SST on the unstandardised values"))
    cg = cg_rows(section)
    if cg is not None:
        lb, gap_cg, status, secs = cg["overall"]
        rows.insert(2, ("lb_cg", fmt(lb), f"certified lower bound (column generation, {status}, "
                                          f"{fmt(secs, 1)} s); certified gap {_pct(gap_cg)}"))
    if s.get("eigen") is not None:
        rows.insert(4 if cg is not None else 3, ("eigen", fmt(s["eigen"], 3),
                        "sum |e - e'| / e, eigenvalues of the correlation matrix (robust: "
                        f"{fmt(s.get('robeigen'), 3)})"))
    if s.get("sdid") is not None:
        rows.append(("SDID", fmt(s["sdid"], 4),
                     "share of records within 0.05 sd on every known column: mean over the intruder scenarios"
                     + (f"; with all {p} columns known (sdcMicro dRisk) {fmt(s['sdid_all'], 4)}"
                        if s.get("sdid_all") is not None else "")))
    if s.get("linkage") is not None:
        how = ("estimated on local windows of the file" if s["linkage_method"] == "windows"
               else "exact assignment")
        over = s.get("linkage_scenarios")
        rows.append((METRICS["linkage"].heading, fmt(s["linkage"], 2),
                     f"% linked one-to-one: mean over the {over if over is not None else ''} largest scenario(s), "
                     f"{how} (worst {fmt(s['worst_linkage'], 2)})"))
    if s.get("rmdid1") is not None:
        rows.append((METRICS["rmdid1"].heading, fmt(s["rmdid1"], 4),
                     f"share in RMD-weighted intervals (RMDID1w {fmt(s['rmdid1w'], 4)}, "
                     f"RMDID2 {fmt(s['rmdid2'], 4)})"))
    elif get(section, "measures", "risk", "rmd", "skipped_reason"):
        rows.append((METRICS["rmdid1"].heading, "skipped", get(section, "measures", "risk", "rmd", "skipped_reason")))
    for r in rows:
        head.add_row(*r)
    console.print(head)
    console.print(_risk_table(section, "Risk by intruder knowledge (label: blocks the known columns touch)"))
    reason = get(section, "measures", "risk", "pld_skipped_reason")
    if reason:
        console.print(f"PLD not computed: {reason}")


def print_summary(rep: dict[str, Any], console: Any = None) -> None:
    """The terminal summary of a ``sdc evaluate`` report (rich; plain text off a terminal)."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = console or Console(stderr=True, highlight=False)
    console.print(_title(rep))
    match = rep.get("matching") or {}
    if match.get("by") != "order" or (match.get("check") or {}).get("skipped"):
        console.print(pairing_text(rep), markup=False, highlight=False)
    if rep["records"]["left_out_incomplete"]:
        console.print(f"{rep['records']['left_out_incomplete']} record(s) with a missing value left out")
    print_risk_summary(rep, console)
    u = rep["measures"]["utility"]
    blocks = rep.get("blocks") or []
    cg = cg_rows(rep)
    if len(blocks) > 1 or cg is not None:
        bt = Table(title="IL_SSE per block" + (" and the certified bound" if cg is not None else ""),
                   title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False)
        cols = ["block", "columns", "IL_SSE", "LB_NN"] + (["lb_cg", "cert. gap", "LP"] if cg is not None else [])
        for col in cols:
            bt.add_column(col, justify="left" if col in ("block", "columns", "LP") else "right",
                          no_wrap=col != "columns")
        for i, b in enumerate(blocks):
            row = [b["name"], ", ".join(b["columns"]), fmt(get(u, "il_sse", "per_block", i)),
                   fmt(get(u, "optimality", "lb_nn", "per_block", i))]
            if cg is not None:
                lb, gap, status, _secs = cg["per_block"][i]
                row += [fmt(lb), _pct(gap), str(status or "-")]
            bt.add_row(*row)
        if len(blocks) > 1:
            row = ["overall", f"{len(rep['columns']['evaluated'])} columns", fmt(get(u, "il_sse", "overall")),
                   fmt(get(u, "optimality", "lb_nn", "overall"))]
            if cg is not None:
                lb, gap, status, _secs = cg["overall"]
                row += [fmt(lb), _pct(gap), str(status or "-")]
            bt.add_row(*row)
        console.print(bt)
    if cg is not None:
        lb, gap, status, secs = cg["overall"]
        console.print(f"lb_cg {fmt(lb)}: certified gap {_pct(gap)} of IL_SSE ({status}, {fmt(secs, 1)} s); "
                      "no k-partition of these columns loses less than lb_cg.", markup=False)
    _print_analysis(rep, console)
    gates = rep.get("gates") or {}
    for c in gates.get("checks", []):
        status = "[green]pass[/green]" if c["passed"] else "[bold red]FAIL[/bold red]"
        where = f": {scenario_text(c['scenario'], rep['columns']['evaluated'])}" if c.get("scenario") else ""
        console.print(f"gate {c['option']} {c['threshold']:g}: {c['measure']} = {fmt(c['value'])} "
                      f"({c['statistic']}{where}) {status}")
    cat = rep.get("categorical")
    if cat:
        rk = cat["released_k"]
        console.print(f"categorical keys: {fmt(100 * cat['mean_changed_share'], 2)} % of categories changed "
                      f"(mean over {len(cat['keys'])} keys); TV distance max {fmt(cat['max_tv_one_way'], 4)} "
                      f"(one-way), {fmt(cat['max_tv_two_way'], 4)} (two-way); k_min {rk['k_min']} over all "
                      f"released keys, {rk['records_below_k']} record(s) in classes below k = {rk['k']}",
                      markup=False)
        kr = cat.get("key_risk")
        if kr:
            b, a = kr["before"], kr["after"]
            console.print(f"categorical keys' risk (sdc risk): {fmt(b['expected_reidentifications'], 2)} -> "
                          f"{fmt(a['expected_reidentifications'], 2)} expected re-identifications "
                          f"({b['global_risk_percent']:.3f} % -> {a['global_risk_percent']:.3f} %), "
                          f"{b['violations']} -> {a['violations']} records violating {a['k']}-anonymity"
                          f"{'; the release lowered the risk' if kr['risk_lowered'] else ''}", markup=False)
    if rep.get("internal"):
        console.print("[bold]internal report[/bold]: it contains original values; do not release it")


def _print_analysis(rep: dict[str, Any], console: Any) -> None:
    """CI overlap, pMSE and the group table's headline (reports of schema 1.3 on)."""
    s = rep["summary"]
    u = rep["measures"]["utility"]
    if "ci_overlap" not in u:
        return
    ci, pm, gr = u["ci_overlap"], u.get("pmse") or {}, u.get("groups") or {}
    skipped = f", {ci['skipped']} model(s) skipped" if ci.get("skipped") else ""
    console.print(f"{METRICS['ci_overlap'].heading} {fmt(s.get('ci_overlap'), 3)} (worst coefficient "
                  f"{fmt(s.get('ci_overlap_min'), 3)}; {ci['coefficients']} coefficient(s) of "
                  f"{len(ci['models'])} model(s){skipped}; 1 = same confidence intervals)", markup=False)
    console.print(f"{METRICS['pmse_ratio'].heading} {fmt(pm.get('ratio'), 3)} (pMSE {fmt(pm.get('pmse'))}, "
                  f"null expectation {fmt(pm.get('expected'))}; {pm.get('records')} stacked records"
                  f"{', sampled' if pm.get('sampled') else ''}; lower = harder to tell apart)", markup=False)
    by = ", ".join(gr.get("by") or []) or "all records"
    console.print(f"{METRICS['group_mean_change'].heading} {fmt(s.get('group_mean_change'), 3)} % (largest change "
                  f"of a group mean; groups: {by}, {gr.get('count')} group(s), {gr.get('suppressed')} "
                  f"suppressed)", markup=False)


# ----------------------------------------------------------------------------- SVG charts


def _bar_chart(groups: Sequence[str], series: Sequence[tuple[str, str, Sequence[float | None],
               Sequence[float | None]]], *, title: str, desc: str, ylabel: str, ymax: float | None = None,
               ref: tuple[float, str] | None = None, width: int = 560, height: int = 300) -> str:
    """Grouped bars (one group per label) with a tick at the worst scenario's value.

    ``series``: (name, colour, means per group, worsts per group).
    """
    svg = Svg(width, height, title, desc)
    x0, y0, w, h = 56.0, 34.0, width - 72.0, height - 88.0
    vals = [v for _n, _c, means, worsts in series for v in list(means) + list(worsts) if v is not None]
    if ref is not None:
        vals.append(ref[0])
    top = ymax if ymax is not None else nice_max(max(vals) * 1.05 if vals else 1.0)
    svg.text(width / 2, 18, title, size=13, weight="bold")
    axes(svg, x0, y0, w, h, top, ylabel)
    ng, ns = max(len(groups), 1), max(len(series), 1)
    gw = w / ng
    bw = min(34.0, gw * 0.8 / ns)
    for gi, g in enumerate(groups):
        gx = x0 + gi * gw + (gw - bw * ns) / 2
        for si, (name, color, means, worsts) in enumerate(series):
            bx = gx + si * bw
            m = means[gi]
            wv = worsts[gi]
            if m is not None:
                bh = h * min(m, top) / top
                svg.add("rect", x=f"{bx + 1:.1f}", y=f"{y0 + h - bh:.1f}", width=f"{bw - 2:.1f}",
                        height=f"{bh:.1f}", fill=color)
                label = f"{m:.0f}" if m >= 10 else f"{m:.2g}"
                if bh >= 18:  # inside the bar, clear of the worst-scenario tick above it
                    svg.text(bx + bw / 2, y0 + h - bh + 12, label, size=9, fill="#fff", weight="bold")
                else:
                    top_y = y0 + h - h * min(max(m, wv if wv is not None else m), top) / top
                    svg.text(bx + bw / 2, min(y0 + h - bh, top_y) - 4, label, size=9, fill="#333")
            if wv is not None:
                wy = y0 + h - h * min(wv, top) / top
                svg.add("line", x1=f"{bx + 2:.1f}", x2=f"{bx + bw - 2:.1f}", y1=f"{wy:.1f}", y2=f"{wy:.1f}",
                        stroke=COLORS["worst"], stroke_width=2.5)
                if m is not None:
                    my = y0 + h - h * min(m, top) / top
                    svg.add("line", x1=f"{bx + bw / 2:.1f}", x2=f"{bx + bw / 2:.1f}", y1=f"{wy:.1f}",
                            y2=f"{my:.1f}", stroke=COLORS["worst"], stroke_width=1, stroke_dasharray="2 2")
        svg.text(x0 + gi * gw + gw / 2, y0 + h + 16, g, size=11, weight="bold")
    if ref is not None:
        ry = y0 + h - h * min(ref[0], top) / top
        svg.add("line", x1=f"{x0:.1f}", x2=f"{x0 + w:.1f}", y1=f"{ry:.1f}", y2=f"{ry:.1f}",
                stroke="#C00", stroke_width=1.5, stroke_dasharray="6 3")
        places = [(x0 + w - 4, ry - 4, "end"), (x0 + w - 4, ry + 12, "end"), (x0 + 4, ry - 4, "start"),
                  (x0 + 4, ry + 12, "start"), (x0 + w / 2, ry - 4, "middle")]
        lx, ly, anchor = next((pl for pl in places if svg.free(text_box(pl[0], pl[1], ref[1], 10, pl[2]))),
                              places[0])
        svg.text(lx, ly, ref[1], anchor=anchor, size=10, fill="#C00")
    # legend
    lx, ly = x0, height - 22
    for name, color, _m, _w in series:
        svg.add("rect", x=f"{lx:.1f}", y=f"{ly - 9:.1f}", width=12, height=12, fill=color)
        svg.text(lx + 16, ly + 1, f"{name} (mean)", anchor="start", size=10)
        lx += 96
    svg.add("line", x1=f"{lx:.1f}", x2=f"{lx + 14:.1f}", y1=f"{ly - 3:.1f}", y2=f"{ly - 3:.1f}",
            stroke=COLORS["worst"], stroke_width=2.5)
    svg.text(lx + 18, ly + 1, "worst scenario", anchor="start", size=10)
    return svg.close()


def _ru_map(rep: dict[str, Any], *, width: int = 560, height: int = 340) -> str | None:
    """Risk-utility map: IL_score (x) against DR (y), overall and per label, with lines of
    equal score."""
    m = rep["measures"]
    il = get(m, "utility", "il_score", "value")
    dr = get(m, "risk", "dr", "value")
    if il is None or dr is None:
        return None
    wts = get(m, "risk", "dr", "weights") or {}
    sw = get(m, "score", "weights") or {}
    points: list[tuple[str, float, str]] = []
    for i, (label, entry) in enumerate((get(m, "risk", "by_label") or {}).items()):
        mean = entry.get("mean") or {}
        terms = {t: mean.get(t) for t in ("dld", "pld", "id")}
        if any(wts.get(t, 0) and terms[t] is None for t in terms):
            continue
        value = sum(wts.get(t, 0) * (terms[t] or 0.0) for t in terms)
        points.append((label, value, LABEL_COLORS[i % len(LABEL_COLORS)]))
    xmax = nice_max(max(il * 1.25, 10.0))
    ymax = nice_max(max([dr * 1.25, 10.0] + [v * 1.1 for _l, v, _c in points]))
    title = "Risk-utility map"
    svg = Svg(width, height, title,
               f"IL_score {il:.2f} against DR {dr:.2f}; points per intruder knowledge label; dashed lines "
               "join files of equal score")
    x0, y0, w, h = 56.0, 34.0, width - 80.0, height - 84.0
    svg.text(width / 2, 18, title, size=13, weight="bold")
    svg.raw(f'<defs><clipPath id="ru-clip"><rect x="{x0:.1f}" y="{y0:.1f}" width="{w:.1f}" '
            f'height="{h:.1f}"/></clipPath></defs>')
    axes(svg, x0, y0, w, h, ymax, "DR (%)")
    for t in ticks(xmax):
        x = x0 + w * t / xmax
        svg.add("line", x1=f"{x:.1f}", x2=f"{x:.1f}", y1=f"{y0:.1f}", y2=f"{y0 + h:.1f}", stroke="#eee")
        svg.text(x, y0 + h + 14, tick_text(t), size=10, fill="#555")
    svg.text(x0 + w / 2, y0 + h + 32, "IL_score (%), information loss", size=11)

    def px(x: float) -> float:
        return x0 + w * x / xmax

    def py(y: float) -> float:
        return y0 + h - h * y / ymax

    a, b = float(sw.get("il", 0.5)), float(sw.get("dr", 0.5))
    score = get(m, "score", "value")
    if a > 0 and b > 0 and score is not None:
        levels = sorted({round(score * f, 6) for f in (0.5, 1.0, 1.5, 2.0)})
        for s in levels:
            dash = "none" if abs(s - score) < 1e-9 else "4 4"
            svg.add("line", x1=f"{px(0):.1f}", y1=f"{py(s / b):.1f}", x2=f"{px(s / a):.1f}", y2=f"{py(0):.1f}",
                    stroke="#999", stroke_width=1, stroke_dasharray=dash, clip_path="url(#ru-clip)")
            # label where the line meets the top or the right border of the box
            lx, ly = (s - b * ymax) / a, ymax
            if lx < 0 or lx > xmax:
                lx, ly = xmax, (s - a * xmax) / b
            text = f"score {s:.3g}"
            if 0 <= lx <= xmax and 0 <= ly <= ymax and svg.free(text_box(px(lx) - 4, py(ly) + 12, text, 9, "end")):
                svg.text(px(lx) - 4, py(ly) + 12, text, anchor="end", size=9, fill="#777")
    # markers first (labels avoid them), then the labels: the overall one to the left,
    # the per-label ones to the right, each where it covers nothing drawn before
    for label, value, color in points:
        svg.add("circle", cx=f"{px(il):.1f}", cy=f"{py(value):.1f}", r=5, fill=color, fill_opacity=0.85)
        svg.obstacle((px(il) - 5, py(value) - 5, px(il) + 5, py(value) + 5))
    svg.add("circle", cx=f"{px(il):.1f}", cy=f"{py(dr):.1f}", r=7, fill="none", stroke="#000", stroke_width=2)
    svg.obstacle((px(il) - 8, py(dr) - 8, px(il) + 8, py(dr) + 8))
    bounds = (x0, y0 - 6, x0 + w + 20, y0 + h)
    svg.place(px(il), py(dr), f"all: IL {il:.1f}, DR {dr:.1f}", size=10, weight="bold", gap=10,
              bounds=bounds, prefer="left")
    for label, value, color in points:
        svg.place(px(il), py(value), f"{label}: DR {value:.1f}", size=10, fill=color, gap=9, bounds=bounds)
    return svg.close()


def _scatter(rep: dict[str, Any], *, width: int = 560, height: int = 300) -> str | None:
    """DLD of every scenario against the number of known attributes, coloured by label."""
    per = get(rep, "measures", "risk", "per_scenario")
    if not per:
        return None
    labels = _labels(rep["measures"])
    color = {lab: LABEL_COLORS[i % len(LABEL_COLORS)] for i, lab in enumerate(labels)}
    p = int(rep["measures"]["p"])
    title = "DLD of every intruder scenario"
    svg = Svg(width, height, title, "one dot per scenario: attributes known (x) and DLD (y), colour = label")
    x0, y0, w, h = 56.0, 40.0, width - 72.0, height - 86.0
    svg.text(x0, 18, title, anchor="start", size=13, weight="bold")
    axes(svg, x0, y0, w, h, 100.0, "DLD (%)")
    for s in range(1, p + 1):
        svg.text(x0 + w * (s - 0.5) / p, y0 + h + 14, str(s), size=10, fill="#555")
    svg.text(x0 + w / 2, y0 + h + 30, "attributes known to the intruder", size=11)
    count: dict[int, int] = {}
    for r in per:
        if r.get("dld") is None:
            continue
        size = int(r["size"])
        i = count.get(size, 0)
        count[size] = i + 1
        # deterministic spread inside the column (golden-ratio sequence)
        jitter = ((i * 0.6180339887) % 1.0 - 0.5) * 0.7
        cx = x0 + w * (size - 0.5 + jitter) / p
        cy = y0 + h - h * min(float(r["dld"]), 100.0) / 100.0
        svg.add("circle", cx=f"{cx:.1f}", cy=f"{cy:.1f}", r=2.6, fill=color.get(r["label"], "#444"),
                fill_opacity=0.7)
    lx = x0 + w - 52 * len(labels)
    for lab in labels:  # legend in the top-right corner, above the plot
        svg.add("circle", cx=f"{lx + 5:.1f}", cy=f"{y0 - 12:.1f}", r=5, fill=color[lab])
        svg.text(lx + 14, y0 - 8, lab, anchor="start", size=10)
        lx += 52
    return svg.close()


# ----------------------------------------------------------------------------- HTML

def _risk_section(h: Html, rep: dict[str, Any]) -> None:
    m = rep["measures"]
    risk = m["risk"]
    by_label = risk.get("by_label") or {}
    labels = list(by_label)
    k = get(risk, "parameters", "k")
    h.add("<h2>Disclosure risk by intruder knowledge</h2>")
    sc = risk["scenarios"]
    mode = {"all": "every non-empty subset of the evaluated columns",
            "sample": "a seeded random sample of subsets, stratified by size",
            "explicit": "the scenarios named with --known"}.get(sc["mode"], sc["mode"])
    h.add(f"<p>The intruder knows the original values of some columns and links them to the protected "
          f"file. {sc['count']} scenario(s): {escape(mode)}. A scenario's label is the number of attribute "
          f"blocks its columns touch (1G = within one block).</p>")

    def series(name: str) -> tuple[list[Any], list[Any]]:
        return ([get(by_label, lab, "mean", name) for lab in labels],
                [get(by_label, lab, "worst", name, "value") for lab in labels])

    figs = []
    dld_m, dld_w = series("dld")
    pld_m, pld_w = series("pld")
    id_m, id_w = series("id")
    figs.append((_bar_chart(labels, [("DLD", COLORS["dld"], dld_m, dld_w), ("PLD", COLORS["pld"], pld_m, pld_w),
                                     ("ID", COLORS["id"], id_m, id_w)],
                            title="Linkage risk per label", ylabel="% of records", ymax=100.0,
                            desc="mean DLD, PLD and ID per label, with the worst scenario"),
                 "Bars: mean over the label's scenarios; black tick: its worst scenario. Lower is safer."))
    kp_m, kp_w = series("k_prime")
    figs.append((_bar_chart(labels, [("k'", COLORS["k_prime"], kp_m, kp_w)], title="Real anonymity k' per label",
                            ylabel="records per distinct row", ref=(float(k), f"k = {k}") if k else None,
                            desc="mean and worst k' per label"),
                 "k' = records / distinct protected rows over the known columns; higher is safer. "
                 "Black tick: the worst (smallest) scenario."))
    ru = _ru_map(rep)
    if ru:
        figs.append((ru, "The file's position between information loss and disclosure risk (lower-left is "
                         "better). Each label's DR uses that label's mean DLD, PLD and ID. The solid line "
                         "holds every file with this file's score."))
    sc_svg = _scatter(rep)
    if sc_svg:
        figs.append((sc_svg, "Each dot is one intruder scenario."))
    h.figures(figs)
    rows = []
    for lab in labels + (["all"] if len(labels) != 1 else []):
        e = by_label[lab] if lab != "all" else {"scenarios": sc["count"], "mean": risk["mean"],
                                                  "worst": risk["worst"]}
        mean, worst = e.get("mean") or {}, e.get("worst") or {}
        rows.append([lab, e.get("scenarios"), fmt(mean.get("k_prime"), 3), fmt(get(worst, "k_prime", "value"), 3),
                     fmt(get(worst, "k_min", "value"), 0), fmt(mean.get("share_below_k"), 4),
                     fmt(mean.get("dld"), 3), fmt(get(worst, "dld", "value"), 3),
                     fmt(mean.get("pld"), 3), fmt(get(worst, "pld", "value"), 3),
                     fmt(mean.get("id"), 3), fmt(get(worst, "id", "value"), 3), fmt(mean.get("sdid"), 4)])
    h.add("<h3>Per label</h3>")
    h.table(["label", "scenarios", "k' mean", "k' worst", "k_min worst", f"share < {k} mean" if k else "share < k",
             "DLD mean", "DLD worst", "PLD mean", "PLD worst", "ID mean", "ID worst", "SDID mean"], rows)
    h.add("<h3>Worst scenarios</h3>")
    rows = []
    for key in ("dld", "pld", "id", "sdid", "k_prime", "k_min", "share_below_k"):
        wv = (risk.get("worst") or {}).get(key)
        if not wv:
            continue
        digits = 0 if key == "k_min" else 4
        rows.append([_MEASURE_NAMES[key], fmt(wv["value"], digits), wv["label"], len(wv["attributes"]),
                     _names(rep, wv["attributes"])])
    h.table(["measure", "value", "label", "known", "columns the intruder knows"], rows)
    an = risk.get("anonymity") or {}
    h.add(f"<p>Over all {m['p']} evaluated columns: k' = {escape(fmt(an.get('k_prime'), 4))} "
          f"({escape(fmt(an.get('classes'), 0))} distinct protected rows), k_min = {escape(fmt(an.get('k_min'), 0))}, "
          f"share of records in classes smaller than {escape(str(k))} = {escape(fmt(an.get('share_below_k'), 4))}.</p>")
    if risk.get("pld_skipped_reason"):
        h.el("p", f"PLD not computed: {risk['pld_skipped_reason']}", "muted")
    linkage_rmd_html(h, rep)


def _utility_section(h: Html, rep: dict[str, Any]) -> None:
    u = rep["measures"]["utility"]
    blocks = rep.get("blocks") or []
    h.add("<h2>Information loss</h2>")
    opt = u.get("optimality")
    k_eval = get(rep, "measures", "risk", "parameters", "k")
    if k_eval is None:
        k_eval = get(opt, "k")
    cg = cg_rows(rep)
    head = ["block", "columns", "k", "IL_SSE (%)", "LB_NN (%)", "gap (points)"]
    if cg is not None:
        head += ["lb_cg (%)", "certified gap", "LP"]
    rows = []
    for i, b in enumerate(blocks):
        bk = b.get("k") if b.get("k") is not None else k_eval  # a block without its own k: the run's k
        row = [b["name"], ", ".join(b["columns"]), fmt(bk, 0),
               fmt(get(u, "il_sse", "per_block", i)), fmt(get(opt, "lb_nn", "per_block", i)),
               fmt(get(opt, "gap", "per_block", i))]
        if cg is not None:
            lb, gap, status, _secs = cg["per_block"][i] if i < len(cg["per_block"]) else (None,) * 4
            row += [fmt(lb), _pct(gap), status or "-"]
        rows.append(row)
    row = ["overall", f"{len(rep['columns']['evaluated'])} columns",
           fmt(k_eval, 0) if len({b.get("k") for b in blocks if b.get("k") is not None}) <= 1 else "per block",
           fmt(get(u, "il_sse", "overall")), fmt(get(opt, "lb_nn", "overall")), fmt(get(opt, "gap", "overall"))]
    if cg is not None:
        lb, gap, status, _secs = cg["overall"]
        row += [fmt(lb), _pct(gap), status or "-"]
    rows.append(row)
    h.table(head, rows, left=2)
    if opt is None:
        h.el("p", "LB_NN and the optimality gap are shown only when the protected file is a k-partition "
                  "(every class of identical protected rows in each block holds at least k records).", "muted")
    else:
        h.el("p", "LB_NN is a lower bound on the IL_SSE of any partition into groups of at least k records: "
                  "no microaggregation of these columns can lose less. The gap is what a better method could "
                  "still gain at most.", "muted")
    if cg is not None:
        lb, gap, status, secs = cg["overall"]
        h.el("p", f"lb_cg is a certified lower bound (LP relaxation of the set-partitioning model, column "
                  f"generation with exact pricing; {status}, {fmt(secs, 1)} s): no k-partition of these "
                  f"columns loses less. Certified gap = (IL_SSE - lb_cg) / IL_SSE = {_pct(gap)}: the protected "
                  "file is at most that far from optimal.", "muted")
    else:
        h.el("p", "A tighter, certified bound: sdc evaluate ORIGINAL PROTECTED --bound cg adds lb_cg and the "
                  "certified gap.", "muted")
    rows = []
    names = {"il1": "IL1: cell values |x - x'| / |x|", "il2": "IL2: means", "il3": "IL3: covariances",
             "il4": "IL4: variances", "il5": "IL5: correlations |r - r'|", "il1s": "IL1s: |x - x'| / (sqrt 2 s)"}
    for key, label in names.items():
        e = u.get(key) or {}
        rows.append([label, fmt(e.get("value")), fmt(e.get("cells"), 0), fmt(e.get("skipped"), 0)])
    ils = u.get("il_score") or {}
    rows.append(["IL_score (%)", fmt(ils.get("value")), "", ""])
    h.add("<h3>Score family</h3>")
    h.table(["measure", "value", "cells", "skipped (zero denominator)"], rows)
    dq = u.get("data_quality") or {}
    pc = dq.get("pc1") or {}
    cd = dq.get("correlation_discrepancy") or {}
    rows = [
        ["mean sd of z-scored protected columns (1 = no variance lost)", fmt(get(dq, "mean_sd_z", "value"))],
        ["correlation discrepancy |r - r'|: mean", fmt(cd.get("mean"))],
        ["correlation discrepancy |r - r'|: sd", fmt(cd.get("sd"))],
        ["first principal component: share of variance before", fmt(pc.get("share_before"))],
        ["first principal component: share of variance after", fmt(pc.get("share_after"))],
        ["first principal component: mean |loading change|", fmt(pc.get("loading_change"))],
        ["first principal component: mean |change of correlation with it|", fmt(pc.get("correlation_change"))],
    ]
    h.add("<h3>Data quality</h3>")
    h.table(["figure", "value"], rows)


def _gates_html(h: Html, rep: dict[str, Any]) -> None:
    gates = rep.get("gates") or {}
    checks = gates.get("checks") or []
    if not checks:
        return
    ok = gates.get("passed")
    h.add(f'<div class="banner {"ok" if ok else "bad"}">'
          f'{"Every release gate passed." if ok else "A release gate failed."}</div>')
    rows = []
    for c in checks:
        rows.append([c["option"], c["measure"], c["statistic"], fmt(c["threshold"]), fmt(c["value"]),
                     ", ".join(c["scenario"]) if c.get("scenario") else "-", "pass" if c["passed"] else "FAIL"])
    h.table(["gate", "measure", "checked on", "threshold", "value", "scenario", "result"], rows, left=3)


def _parameters_section(h: Html, rep: dict[str, Any]) -> None:
    h.add("<h2>Formulas</h2>")
    h.add('<dl class="formulas">')
    for key, text in (rep.get("formulas") or {}).items():
        h.add(f"<dt>{escape(key)}</dt><dd><code>{escape(str(text))}</code></dd>")
    h.add("</dl>")
    h.add("<h2>Inputs and parameters</h2>")
    rows = []
    for role in ("original", "protected"):
        f = rep[role]
        rows.append([role, f["name"], f["format"], f["rows"], f["columns"], f.get("sha256") or "-"])
    h.table(["file", "name", "format", "rows", "columns", "SHA-256"], rows, left=3)
    rec = rep.get("records") or {}
    lines = [
        ["records paired", pairing_text(rep)],
        ["records evaluated", rec.get("evaluated")],
        ["records left out (missing values)", rec.get("left_out_incomplete")],
        ["evaluated columns", ", ".join(rep["columns"]["evaluated"])],
        ["column choice", rep["columns"].get("selection", "-")],
    ]
    if rep["columns"].get("unchanged"):
        lines.append(["numeric columns equal in both files (not evaluated)", ", ".join(rep["columns"]["unchanged"])])
    params = rep.get("parameters") or {}
    for key, value in params.items():
        lines.append([key, json_value(value)])
    for key, value in (get(rep, "measures", "risk", "parameters") or {}).items():
        lines.append([f"risk: {key}", json_value(value)])
    cgp = get(rep, "measures", "utility", "cg_bound")
    if cgp:
        lines.append(["bound: time limit (s)", json_value(cgp.get("time_limit"))])
    h.table(["parameter", "value"], lines, left=2)


def _internal_section(h: Html, rep: dict[str, Any]) -> None:
    details = rep.get("internal_details")
    if not details:
        return
    h.add("<h2>Internal: original and protected column statistics</h2>")
    h.add('<div class="banner internal">This section contains original values of protected attributes. '
          "Do not release this report.</div>")
    rows = []
    for c in details.get("columns", []):
        o, p = c["original"], c["protected"]
        rows.append([c["name"], fmt(o["mean"]), fmt(p["mean"]), fmt(o["sd"]), fmt(p["sd"]),
                     repr(o["min"]), repr(p["min"]), repr(o["max"]), repr(p["max"])])
    h.table(["column", "mean (orig.)", "mean (prot.)", "sd (orig.)", "sd (prot.)", "min (orig.)", "min (prot.)",
             "max (orig.)", "max (prot.)"], rows)


def render_html(rep: dict[str, Any]) -> str:
    """The self-contained HTML report of a ``sdc evaluate`` result.

    Inline CSS and inline SVG only (no script, no link, no image file), so the page
    reads offline; the markup is well-formed XML (XHTML-compatible). It shows only
    what the report holds, hence no original value of a protected attribute unless the
    report was made with ``internal=True``.
    """
    h = Html()
    o, p = rep["original"]["name"], rep["protected"]["name"]
    m = rep["measures"]
    k = get(m, "risk", "parameters", "k")
    h.add("<header>")
    h.el("h1", "Risk and utility of a protected file")
    h.el("p", f"{o} (original) vs {p} (protected): {m['n']} records, {m['p']} evaluated column(s) in "
              f"{len(rep.get('blocks') or [])} block(s), k = {fmt(k, 0)}.", "sub")
    h.add("</header>")
    if rep.get("internal"):
        h.add('<div class="banner internal">INTERNAL report: it contains original values of protected '
              "attributes. Do not release it.</div>")
    s = rep["summary"]
    cards = [
        (METRICS["il_sse"].heading, fmt(s["il_sse"], 4), "% information loss (lower = better)"),
        ("LB_NN", fmt(s["lb_nn"], 4), "lower bound on IL_SSE at this k"),
    ]
    cg = cg_rows(rep)
    if cg is not None:
        cards.append(("lb_cg", fmt(cg["overall"][0], 4), f"certified bound; gap {_pct(cg['overall'][1])}"))
    cards += [
        ("IL_score", fmt(s["il_score"], 2), "% score family IL1-IL5"),
        ("DR", fmt(s["dr"], 2), "% disclosure risk (lower = safer)"),
        ("score", fmt(s["score"], 2), "IL/DR trade-off (lower = better)"),
        (METRICS["k_prime"].heading, fmt(s["k_prime"], 3), f"all columns known (k = {fmt(k, 0)})"),
        (METRICS["dld"].heading, fmt(s["dld"], 2), f"% linked, mean; worst {fmt(s['worst_dld'], 2)}"),
        ("ID", fmt(s["id"], 2), f"% disclosed, mean; worst {fmt(s['worst_id'], 2)}"),
    ]
    if s.get("ci_overlap") is not None or s.get("pmse_ratio") is not None:
        cards += [
            (METRICS["ci_overlap"].heading, fmt(s.get("ci_overlap"), 3), "regression intervals (1 = same)"),
            (METRICS["pmse_ratio"].heading, fmt(s.get("pmse_ratio"), 3), "propensity score (lower = better)"),
        ]
    h.cards(cards)
    _gates_html(h, rep)
    _risk_section(h, rep)
    _utility_section(h, rep)
    analysis_section(h, rep)
    categorical_section(h, rep)
    _internal_section(h, rep)
    _parameters_section(h, rep)
    audit_section(h, rep.get("audit"))
    privacy = ("INTERNAL: contains original values." if rep.get("internal") else
               "This report holds no original value of a protected attribute: only counts, shares and "
               "losses.")
    version = str(rep["tool"]["version"])
    return h.page(title=f"sdc evaluate: {o} vs {p}", version=version,
                  footer=f"Generated by sdc {version} (report schema {rep['schema_version']}). {privacy}")
