"""The HTML sections of an ``sdc evaluate`` page for analysis utility, categorical keys and linkage.

Split from :mod:`microagg_cli.report.evaluate` (which lays out the page): the regression
confidence-interval overlap, pMSE and group statistics; the categorical-key figures; the
one-to-one linkage and RMD interval disclosure tables. Like the rest of the report they
read the report dict and never compute a measure.
"""

from __future__ import annotations

from html import escape
from typing import Any, Iterable

from ..metrics import METRICS
from .common import fmt, get
from .html import Html
from .svg import COLORS, Svg

__all__ = ["analysis_section", "categorical_section", "column_names", "linkage_rmd_html", "pct"]


def column_names(rep: dict[str, Any], positions: Iterable[int] | None) -> str:
    """The evaluated columns at ``positions``, comma-separated; '-' for None."""
    cols = get(rep, "columns", "evaluated") or []
    if positions is None:
        return "-"
    return ", ".join(cols[j] if 0 <= j < len(cols) else str(j) for j in positions)


def pct(share: Any) -> str:
    """A share (0.0123) as a percentage for display ('1.23 %'); '-' for None."""
    return "-" if share is None else f"{100 * float(share):.2f} %"


def linkage_rmd_html(h: Html, rep: dict[str, Any]) -> None:
    """One-to-one linkage per computed scenario and the RMD interval disclosure figures."""
    risk = rep["measures"]["risk"]
    lk = risk.get("linkage")
    if lk:
        how = ("exact assignment" if lk["method"] == "exact" else
               f"estimated on {lk['windows']} seeded local windows of {lk['window']} records "
               f"(the nearer half of each credited; exact up to {lk['exact_max']} records)")
        h.add("<h3>One-to-one record linkage</h3>")
        h.add(f"<p>The intruder links every original to a distinct protected record, choosing the assignment "
              f"of smallest total {'squared ' if lk['distance'] == 'euclidean' else ''}{escape(lk['distance'])} "
              f"distance ({escape(lk['scale'])}); {escape(how)}. "
              f"Computed for the {lk['scenarios']} largest scenario(s). Identical records share the credit: "
              f"{escape(lk['tie_rule'])}.</p>")
        rows = [[column_names(rep, r["attributes"]), r["label"], fmt(r["linkage"], 3), fmt(r["dld"], 3)]
                for r in (risk.get("per_scenario") or []) if r.get("linkage") is not None]
        if rows:
            h.table(["columns the intruder knows", "label", "linkage %", "DLD %"], rows)
    rmd = risk.get("rmd")
    if rmd and rmd.get("skipped_reason"):
        h.add("<h3>RMD interval disclosure (sdcMicro dRiskRMD)</h3>")
        h.el("p", f"Not computed: {rmd['skipped_reason']}.", "muted")
    elif rmd:
        h.add("<h3>RMD interval disclosure (sdcMicro dRiskRMD)</h3>")
        h.add(f"<p>Intervals around each original value widened by the record's robust Mahalanobis distance "
              f"(k = {escape(fmt(rmd['k'], 4))}); RMDID2 clears a record another protected record lies within "
              f"{escape(fmt(rmd['k2'], 4))} of. All evaluated columns known.</p>")
        h.table(["measure", "value", "records", "definition"], [
            [METRICS["rmdid1"].heading, fmt(rmd["rmdid1"], 4), rmd["unsafe1"], METRICS["rmdid1"].formula],
            [METRICS["rmdid1w"].heading, fmt(rmd["rmdid1w"], 4), rmd["unsafe1"], METRICS["rmdid1w"].formula],
            [METRICS["rmdid2"].heading, fmt(rmd["rmdid2"], 4), rmd["unsafe2"], METRICS["rmdid2"].formula],
        ])


def _ci_chart(ci: dict[str, Any], *, limit: int = 30, width: int = 640) -> tuple[str, int] | None:
    """Every coefficient's two 95 % intervals on the original's scale: the original
    interval is [-1, 1] (centred on its estimate, in its half-widths), the protected one
    is drawn where it falls; right: the overlap J. Returns ``(svg, coefficients shown)``."""
    rows = [(m["model"], c) for m in ci.get("models") or [] for c in (m.get("coefficients") or [])]
    if not rows:
        return None
    shown = rows[:limit]
    row_h, top, label_w, right_w = 18.0, 40.0, 200.0, 56.0
    height = int(top + row_h * len(shown) + 44)
    title = "Confidence-interval overlap per coefficient"
    svg = Svg(width, height, title, "each coefficient's 95 % interval: original (grey, scaled to -1..1) and "
                                    "protected (blue) on the original's scale, with the overlap J")
    svg.text(width / 2, 18, title, size=13, weight="bold")
    x0, w = label_w, width - label_w - right_w - 8
    lim = 3.0

    def px(v: float) -> float:
        return x0 + w * (max(-lim, min(lim, v)) + lim) / (2 * lim)

    for t in (-3, -2, -1, 0, 1, 2, 3):
        svg.add("line", x1=f"{px(t):.1f}", x2=f"{px(t):.1f}", y1=f"{top - 6:.1f}",
                y2=f"{top + row_h * len(shown):.1f}", stroke="#ddd" if t else "#999")
        svg.text(px(t), top + row_h * len(shown) + 14, str(t), size=9, fill="#555")
    svg.text(x0 + w / 2, top + row_h * len(shown) + 30, "in half-widths of the original interval, "
             "from the original estimate", size=10, fill="#555")
    svg.text(width - right_w / 2, top - 10, "J", size=10, weight="bold")
    for i, (model, c) in enumerate(shown):
        y = top + row_h * i + row_h / 2
        lo_o, up_o = c["ci_original"]
        half = (up_o - lo_o) / 2 or 1.0
        mid = c["estimate_original"]
        lo_p, up_p = ((v - mid) / half for v in c["ci_protected"])
        response = model.split("~")[0].strip()
        label = f"{response}: {c['term']}"
        if len(label) > 32:
            label = label[:31] + "\u2026"
        svg.text(x0 - 6, y + 4, label, anchor="end", size=10)
        svg.add("rect", x=f"{px(-1):.1f}", y=f"{y - 6:.1f}", width=f"{px(1) - px(-1):.1f}", height="5",
                fill="#bbb")
        svg.add("rect", x=f"{px(lo_p):.1f}", y=f"{y + 1:.1f}", width=f"{max(px(up_p) - px(lo_p), 1.0):.1f}",
                height="5", fill=COLORS["dld"])
        j = c["overlap"]
        svg.text(width - right_w / 2, y + 4, f"{j:.2f}", size=10, fill="#C00" if j < 0.5 else "#222")
    return svg.close(), len(shown)


def analysis_section(h: Html, rep: dict[str, Any]) -> None:
    u = rep["measures"]["utility"]
    if "ci_overlap" not in u:
        return
    ci, pm, gr = u["ci_overlap"], u.get("pmse") or {}, u.get("groups") or {}
    h.add("<h2>Analysis utility</h2>")
    h.add("<h3>Regression: confidence-interval overlap</h3>")
    src = "the models given with --model" if ci.get("models_given") else \
        "each evaluated column regressed on the others (the default)"
    weighted = ", weighted least squares" if ci.get("weighted") else ""
    h.add(f"<p>Linear models fitted on both files ({escape(src)}{escape(weighted)}); for every coefficient the "
          f"overlap J of the two {escape(fmt(100 * ci.get('level', 0.95), 0))} % confidence intervals: 1 = the same "
          f"interval, 0 = disjoint (Karr et al. 2006). Mean J = {escape(fmt(ci.get('mean'), 3))}, worst "
          f"{escape(fmt(ci.get('min'), 3))}, over {ci.get('coefficients')} coefficient(s).</p>")
    if ci.get("left_out"):
        h.el("p", "Left out of the default models (constant, or an exact linear combination of the other "
                  f"columns): {', '.join(ci['left_out'])}.", "muted")
    chart = _ci_chart(ci)
    if chart is not None:
        svg, shown = chart
        total = ci.get("coefficients") or 0
        more = f" The first {shown} of {total} coefficients are drawn; the table lists all." if shown < total else ""
        h.figures([(svg, "Grey: the original's interval (always -1 to 1); blue: the protected file's, on the "
                         "same scale. J in red when below 0.5." + more)])
    rows = []
    for mdl in ci.get("models") or []:
        if mdl.get("skipped"):
            rows.append([mdl["model"], "-", "-", "-", "-", "-", "skipped: " + mdl["skipped"]])
            continue
        for c in mdl["coefficients"]:
            rows.append([mdl["model"], c["term"], fmt(c["estimate_original"]), fmt(c["estimate_protected"]),
                         f"{fmt(c['ci_original'][0])} .. {fmt(c['ci_original'][1])}",
                         f"{fmt(c['ci_protected'][0])} .. {fmt(c['ci_protected'][1])}", fmt(c["overlap"], 3)])
    h.table(["model", "coefficient", "estimate (orig.)", "estimate (prot.)", "95 % CI (orig.)",
             "95 % CI (prot.)", "J"], rows, left=2)
    h.add("<h3>Propensity score: pMSE</h3>")
    h.add("<p>A logistic regression (the attributes and their squares, standardised) tries to tell protected "
          "from original records; pMSE is the mean squared distance of its propensities from the share of "
          "protected records, the ratio compares it with its null expectation (Snoke et al. 2018; two "
          "independent samples of one population average about 2 for files of equal size). Lower is "
          "better; 0 = indistinguishable.</p>")
    h.table(["pMSE", "null expectation", "ratio", "standardised", "parameters", "stacked records", "sampled"],
            [[fmt(pm.get("pmse")), fmt(pm.get("expected")), fmt(pm.get("ratio"), 3), fmt(pm.get("standardized"), 3),
              pm.get("parameters"), pm.get("records"), fmt(pm.get("sampled"))]], left=0)
    _groups_html(h, gr)


#: rows of the group table shown in the HTML page (the JSON holds every group)
_GROUP_ROWS = 300


def _groups_html(h: Html, gr: dict[str, Any]) -> None:
    if not gr:
        return
    by = gr.get("by") or []
    h.add("<h3>Group statistics</h3>")
    h.add(f"<p>Per group ({escape(', '.join(by)) if by else 'all records as one group; --by splits them'}): "
          f"records, protected means, medians{' and weighted totals' if gr.get('weighted') else ''} and the "
          f"relative change against the original (percent). {gr.get('count')} group(s), "
          f"{gr.get('suppressed')} suppressed.</p>")
    h.el("p", "Shown: " + str(gr.get("rule", "")) + ".", "muted")
    internal = gr.get("internal")
    weighted = gr.get("weighted")
    head = ["group", "n", "column", "mean (prot.)", "mean change %", "median (prot.)"]
    if internal:
        head[3:3] = ["mean (orig.)"]
        head += ["median (orig.)", "median change %"]
    if weighted:
        head += (["total (orig.)"] if internal else []) + ["total (prot.)", "total change %"]
    rows = []
    for r in gr.get("rows") or []:
        label = ", ".join(f"{k}={v}" for k, v in r["group"].items()) or "all records"
        if r.get("suppressed"):
            rows.append([label, r["n"], f"suppressed (fewer than {gr.get('k')} records)"] + [""] * (len(head) - 3))
            continue
        for col, c in (r.get("columns") or {}).items():
            row = [label, r["n"], col, fmt(c["mean_protected"]), fmt(c["mean_change"], 3), fmt(c["median_protected"])]
            if internal:
                row[3:3] = [fmt(c.get("mean_original"))]
                row += [fmt(c.get("median_original")), fmt(c.get("median_change"), 3)]
            if weighted:
                row += ([fmt(c.get("total_original"))] if internal else []) + [fmt(c.get("total_protected")),
                                                                               fmt(c.get("total_change"), 3)]
            rows.append(row)
    if len(rows) > _GROUP_ROWS:
        h.el("p", f"The first {_GROUP_ROWS} of {len(rows)} rows; the JSON report holds every group.", "muted")
    h.table(head, rows[:_GROUP_ROWS], left=3)


def categorical_section(h: Html, rep: dict[str, Any]) -> None:
    """Categorical keys (``sdc evaluate --categorical``): changed shares, TV distances, k."""
    cat = rep.get("categorical")
    if not cat:
        return
    rk = cat["released_k"]
    h.add("<h2>Categorical keys</h2>")
    h.el("p", f"Share of records whose released category differs from their own, and the total-variation "
              f"distance between the original and released tables (0 = same table). Over every released key "
              f"({len(rk['columns'])} columns): smallest class {rk['k_min']}, {rk['records_below_k']} record(s) "
              f"in classes below k = {rk['k']}.", "muted")
    rows = [[e["name"], pct(e["changed_share"]), fmt(e["tv_one_way"], 4)] for e in cat["per_key"]]
    rows.append(["mean / max", pct(cat["mean_changed_share"]), fmt(cat["max_tv_one_way"], 4)])
    h.table(["key", "changed", "TV one-way"], rows)
    kr = cat.get("key_risk")
    if kr:
        b, a = kr["before"], kr["after"]
        h.table(["over the categorical keys", "original", "released"],
                [["expected re-identifications", fmt(b["expected_reidentifications"], 2),
                  fmt(a["expected_reidentifications"], 2)],
                 ["global risk %", fmt(b["global_risk_percent"], 3), fmt(a["global_risk_percent"], 3)],
                 [f"records violating {a['k']}-anonymity", b["violations"], a["violations"]],
                 ["sample uniques", b["sample_uniques"], a["sample_uniques"]]],
                caption="disclosure risk of the keys (as sdc risk; 1 / f_k per record, a missing value "
                        "matches any category)")
    if cat["tv_two_way"]:
        worst = sorted(cat["tv_two_way"], key=lambda e: -e["tv"])[:10]
        h.table(["pair of keys", "TV two-way"], [[" x ".join(e["keys"]), fmt(e["tv"], 4)] for e in worst],
                caption="two-way tables, the 10 farthest pairs")
