"""``sdc risk``: the terminal summary and the HTML page of a key-risk report (a dict)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .common import fmt
from .html import Html, audit_section
from .svg import COLORS, Svg, axes, nice_max

__all__ = ["print_key_risk_summary", "key_risk_lines", "render_risk_html", "bars_svg"]


def _pct(share: float | None) -> str:
    return "-" if share is None else f"{100 * share:.2f} %"


def key_risk_lines(rep: Mapping[str, Any]) -> list[str]:
    """The summary as plain lines (the terminal prints them; tests read them)."""
    fr, g, p = rep["frequencies"], rep["global"], rep["parameters"]
    lines = [f"sdc risk: {rep['input']['name']}: {fr['records']} records, keys {', '.join(p['keys'])}"
             + (f", weights {p['weights']}" if p["weights"] else " (no weights: the file is the population)"),
             f"key classes {fr['classes']}; sample uniques {fr['sample_uniques']}; missing key values "
             f"{fr['missing_values']} (a missing value matches any category)"]
    lines.append("k-anonymity violations: " + "; ".join(
        f"{v['k']}-anonymity {v['records']} ({_pct(v['share'])})" for v in rep["violations"]))
    q = rep["individual"]["quantiles"] or {}
    lines.append(f"global risk: {fmt(g['expected_reidentifications'], 2)} expected re-identifications "
                 f"({g['percent']:.3f} % of the records); individual risk max {fmt(q.get('max'))}, "
                 f"median {fmt(q.get('median'))} ({p['risk_method']})")
    hh = rep.get("household")
    if hh:
        lines.append(f"household risk: {fmt(hh['expected_reidentifications'], 2)} expected re-identifications "
                     f"({hh['percent']:.3f} %) over {hh['households']} households")
    for ld in rep.get("l_diversity") or []:
        lines.append(f"l-diversity of {ld['variable']}: min l {ld['min_l']}; {ld['records_below']} records "
                     f"({_pct(ld['share_below'])}) in {ld['classes_below']} classes with l < {ld['l']}")
    s = rep.get("suda2")
    if s:
        top = sorted(s["per_key"], key=lambda x: -x["contribution"])[:3]
        lines.append(f"SUDA2 (MSUs up to {s['max_size']} keys): {s['records_with_msu']} records with a minimal "
                     f"sample unique; DIS-SUDA max {fmt(s['dis_score_max'])}; largest contributions "
                     + ", ".join(f"{t['key']} {t['contribution']:.1f} %" for t in top))
    c = rep.get("combinations")
    if c:
        lines.append(f"combinations of up to {c['max_size']} keys: {c['unsafe_combinations']} of {c['count']} "
                     f"have cells below k = {c['k']}; {c['records_in_unsafe_cells']} records in an unsafe cell")
        for row in c["rows"][:3]:
            if row["unsafe_cells"]:
                lines.append(f"  {' x '.join(row['keys'])}: {row['unsafe_cells']} unsafe cells, "
                             f"{row['unsafe_records']} records")
    for chk in rep["gates"]["checks"]:
        lines.append(f"gate {chk['gate']}: {fmt(chk['value'])} vs {fmt(chk['limit'])}: "
                     f"{'passed' if chk['passed'] else 'FAILED'}")
    return lines


def print_key_risk_summary(rep: Mapping[str, Any], console: Any = None) -> None:
    """The summary on ``console`` (stderr by default)."""
    from rich.console import Console

    console = console or Console(stderr=True, highlight=False)
    for line in key_risk_lines(rep):
        console.print(line, markup=False, highlight=False)


def bars_svg(labels: Sequence[str], values: Sequence[float], *, title: str, ylabel: str) -> str:
    """A bar chart (one bar per label), inline SVG."""
    w, h, x0, y0, pw, ph = 520, 260, 60, 20, 440, 190
    svg = Svg(w, h, title, f"{title}: " + ", ".join(f"{lab} {v:g}" for lab, v in zip(labels, values)))
    ymax = nice_max(max(values) if values and max(values) > 0 else 1.0)
    axes(svg, x0, y0, pw, ph, ymax, ylabel)
    n = max(len(values), 1)
    bw = pw / n
    for i, (lab, v) in enumerate(zip(labels, values)):
        bh = ph * v / ymax
        svg.add("rect", x=f"{x0 + i * bw + bw * 0.15:.1f}", y=f"{y0 + ph - bh:.1f}", width=f"{bw * 0.7:.1f}",
                height=f"{bh:.1f}", fill=COLORS["dld"])
        svg.text(x0 + i * bw + bw / 2, y0 + ph + 14, lab, size=9, fill="#333")
    return svg.close()


def render_risk_html(rep: Mapping[str, Any]) -> str:
    """The page: headline cards, the violations, the risk distribution and DIS-SUDA
    histogram as pictures, the riskiest records and combinations, the audit trail."""
    from .._version import __version__

    h = Html()
    h.el("h1", f"Disclosure risk of {rep['input']['name']}")
    h.el("p", "; ".join(key_risk_lines(rep)[:2]), cls="muted")
    g = rep["global"]
    v = {x["k"]: x for x in rep["violations"]}
    k = rep["parameters"]["k"]
    cards = [("expected re-identifications", fmt(g["expected_reidentifications"], 2), f"{g['percent']:.3f} %"),
             (f"violate {k}-anonymity", str(v[k]["records"]), _pct(v[k]["share"])),
             ("sample uniques", str(rep["frequencies"]["sample_uniques"]), "f_k = 1")]
    if rep.get("household"):
        cards.append(("household risk", fmt(rep["household"]["expected_reidentifications"], 2),
                      f"{rep['household']['percent']:.3f} %"))
    h.cards(cards)
    h.el("h2", "k-anonymity violations")
    h.table(["k", "records", "share", "weighted"],
            [[x["k"], x["records"], _pct(x["share"]), x.get("weighted")] for x in rep["violations"]])
    figs = []
    above = rep["individual"]["above"]
    if above:
        figs.append((bars_svg([f">{a['threshold']:g}" for a in above], [a["records"] for a in above],
                              title="records above each individual risk", ylabel="records"),
                     "Records whose individual risk exceeds each threshold"))
    s = rep.get("suda2")
    if s:
        figs.append((bars_svg([t["interval"] for t in s["dis_table"]], [t["records"] for t in s["dis_table"]],
                              title="DIS-SUDA scores", ylabel="records"), "Records by DIS-SUDA score"))
    if figs:
        h.figures(figs)
    q = rep["individual"]["quantiles"]
    if q:
        h.table(list(q), [[fmt(x) for x in q.values()]], left=0, caption="individual risk quantiles")
    for ld in rep.get("l_diversity") or []:
        h.el("h2", f"l-diversity of {ld['variable']}")
        h.table(["min l", "classes", f"classes l < {ld['l']}", "records below", "share", "entropy min l"],
                [[ld["min_l"], ld["classes"], ld["classes_below"], ld["records_below"], _pct(ld["share_below"]),
                  fmt(ld["entropy_min_l"])]], left=0)
    if s:
        h.el("h2", "SUDA2: contribution of each key")
        h.table(["key", "contribution %", "MSUs"], [[t["key"], fmt(t["contribution"], 2), t["msus"]]
                                                    for t in s["per_key"]])
    c = rep.get("combinations")
    if c:
        h.el("h2", f"Combinations of up to {c['max_size']} keys (unsafe: cells below k = {c['k']})")
        h.table(["keys", "cells", "unsafe cells", "unsafe records", "unique cells"],
                [[" x ".join(r["keys"]), r["cells"], r["unsafe_cells"], r["unsafe_records"], r["unique_cells"]]
                 for r in c["rows"]])
    recs = rep.get("top_records") or []
    if recs:
        h.el("h2", "The riskiest records")
        keys = list(recs[0].get("keys", {})) if rep.get("internal") else []
        h.table(["row", "f_k", "F_k", "risk", "household risk", "SUDA", "DIS-SUDA", *keys],
                [[r["row"], r["fk"], fmt(r["Fk"], 2), fmt(r["risk"]), fmt(r["household_risk"]),
                  fmt(r["suda_score"]), fmt(r["dis_score"]), *[r["keys"][kk] for kk in keys]] for r in recs])
    audit_section(h, rep.get("audit"))
    return h.page(title=f"sdc risk: {rep['input']['name']}", version=__version__,
                  footer=f"sdc {__version__} - schema {rep['schema_version']}")
