"""Rendering of evaluation reports: JSON text, terminal summary, self-contained HTML."""

from __future__ import annotations

import hashlib
import io
import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

from conftest import SAMPLE
from microagg_cli import api, report
from microagg_cli.errors import ThresholdExceeded

XHTML = "{http://www.w3.org/1999/xhtml}"
SVG = "{http://www.w3.org/2000/svg}"
VOID = {"meta", "link", "br", "hr", "img", "input", "col", "area", "base", "wbr", "source"}


@pytest.fixture(scope="module")
def rep(tmp_path_factory):
    """A blocked evaluation with awkward column names (markup characters, non-ASCII)."""
    tmp = tmp_path_factory.mktemp("rep")
    rng = np.random.default_rng(7)
    X = rng.normal(size=(24, 4)).round(4) * [1, 10, 100, 1]
    cols = ["a<b", "x&y", "r\u00e9venu", 'q"t']
    orig = pd.DataFrame(X, columns=cols)
    prot = orig.copy()
    groups = np.repeat(np.arange(8), 3)
    prot[cols[:2]] = orig[cols[:2]].groupby(groups).transform("mean")
    prot[cols[2:]] = orig[cols[2:]].groupby(groups[::-1]).transform("mean")
    o, p = tmp / "o.csv", tmp / "p.csv"
    orig.to_csv(o, index=False)
    prot.to_csv(p, index=False)
    # one gate passes, one fails: the report travels with the exception
    with pytest.raises(ThresholdExceeded) as info:
        api.evaluate(o, p, blocks=[cols[:2], cols[2:]], k=3, gates={"max_dld": 100.0, "min_kprime": 5.0})
    return info.value.report


class _Balance(HTMLParser):
    """Checks that every non-void element is closed in order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.extend(attrs)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.extend(attrs)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unexpected </{tag}> (open: {self.stack[-3:]})")
        else:
            self.stack.pop()


def test_fmt_and_scenario_text():
    assert report.fmt(5.69218627) == "5.6922"
    assert report.fmt(None) == "-" and report.fmt(True) == "yes" and report.fmt(7) == "7"
    assert report.fmt(0.00001234, 4) == "1.234e-05"
    assert report.fmt(0.0) == "0.0000" and report.fmt(3.0, 0) == "3"
    assert report.scenario_text(["a"], ["a", "b"]) == "a"
    assert report.scenario_text(["a", "b"], ["a", "b"]) == "all 2 columns"
    assert report.scenario_text(list("abcdefgh"), list("abcdefghi")) == "a,b,c,d,e,f +2 more"


def test_json_text_is_the_report_with_stable_key_order(rep):
    text = report.to_json(rep)
    assert text.endswith("}\n")
    assert json.loads(text) == rep
    keys = list(json.loads(text))
    assert keys[:4] == ["schema_version", "tool", "command", "internal"]
    for key in ("original", "protected", "matching", "records", "columns", "blocks", "parameters",
                "formulas", "summary", "measures", "gates", "timing"):
        assert key in keys
    assert keys.index("summary") < keys.index("measures") < keys.index("gates")
    assert report.to_json(rep) == text  # rendering is a pure function


def test_html_is_well_formed_xhtml_and_self_contained(rep):
    html = report.render_html(rep)
    assert html.startswith("<!DOCTYPE html>\n")
    root = ET.fromstring(html.split("\n", 1)[1])  # XML parser: well-formed, entities known
    assert root.tag == f"{XHTML}html"
    assert root.find(f"{XHTML}head/{XHTML}style") is not None
    svgs = list(root.iter(f"{SVG}svg"))
    assert len(svgs) >= 3
    titles = [s.find(f"{SVG}title").text for s in svgs]
    assert "Linkage risk per label" in titles and "Real anonymity k' per label" in titles
    assert "Risk-utility map" in titles
    # bars exist: one rect per label and measure with a mean
    assert sum(1 for s in svgs for _ in s.iter(f"{SVG}rect")) >= 6
    checker = _Balance()
    checker.feed(html)
    checker.close()
    assert checker.errors == [] and checker.stack == []
    # nothing is fetched: no script, no stylesheet link, no image, no URL but the namespaces
    assert not {"script", "link", "img", "iframe", "object"} & set(checker.tags)
    urls = re.findall(r"(?:https?:)?//[\w.-]+", html)
    assert set(urls) <= {"http://www.w3.org"}
    assert not any(name in ("src", "href") for name, _ in checker.attrs)


def test_html_escapes_names_and_shows_the_numbers(rep):
    html = report.render_html(rep)
    assert "a&lt;b" in html and "x&amp;y" in html and "r\u00e9venu" in html
    assert "a<b" not in html.replace("<b>", "")
    s = rep["summary"]
    assert report.fmt(s["il_sse"]) in html and report.fmt(s["dr"], 2) in html
    assert rep["formulas"]["dr"] in html and rep["formulas"]["score"] in html
    # the per-label table lists 1G and 2G and an "all" row; the failed gate is flagged
    for label in ("1G", "2G", "all"):
        assert f'<td class="l">{label}</td>' in html
    assert "A release gate failed." in html and "FAIL" in html
    assert "INTERNAL" not in html and "holds no original value" in html


def test_html_for_a_single_label_and_no_optimality(tmp_path):
    o, p = tmp_path / "o.csv", tmp_path / "p.csv"
    pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0]}).to_csv(o, index=False)
    pd.DataFrame({"x": [1.0, 2.0, 3.5, 3.5]}).to_csv(p, index=False)
    r = api.evaluate(o, p, k=2)
    assert r["measures"]["utility"]["optimality"] is None  # singleton classes: not a 2-partition
    html = report.render_html(r)
    ET.fromstring(html.split("\n", 1)[1])
    assert "not a k-partition" in html or "shown only when" in html
    per_label = html.split("<h3>Per label</h3>", 1)[1].split("</table>", 1)[0]
    assert '<td class="l">1G</td>' in per_label
    assert '<td class="l">all</td>' not in per_label  # one label: no duplicate "all" row
    assert "release gate" not in html  # no gate given: no gate banner


def test_terminal_summary_fits_80_columns(rep):
    buf = io.StringIO()
    console = Console(file=buf, width=80, highlight=False, color_system=None)
    report.print_summary(rep, console)
    text = buf.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "\u2026" not in text  # nothing truncated
    s = rep["summary"]
    assert report.fmt(s["il_sse"]) in text and report.fmt(s["dr"], 2) in text
    assert rep["formulas"]["dr"] in text
    for label in ("1G", "2G", "all"):
        assert re.search(rf"^\s*{label}\s", text, flags=re.M)
    assert "gate --max-dld 100" in text and "pass" in text
    assert "gate --min-kprime 5" in text and "FAIL" in text


# ------------------------------------------------------------------ fixed defects


def _text_of(html: str) -> str:
    """The page's visible text (markup dropped)."""
    return re.sub(r"<[^>]+>", " ", html.split("<body>", 1)[1])


def test_html_prints_no_python_booleans_and_shows_k_per_block(rep):
    html = report.render_html(rep)
    words = set(re.findall(r"\w+", _text_of(html)))
    assert not {"True", "False", "None"} & words
    assert "partition_based" in html  # the boolean parameter is there, as yes/no
    row = re.search(r"<td>partition_based</td><td>(\w+)</td>|<td class=\"l\">partition_based</td>"
                    r"<td class=\"l\">(\w+)</td>", html)
    assert row and (row.group(1) or row.group(2)) in ("yes", "no")
    # the blocks were given without their own k: the IL table shows the run's k = 3, not "-"
    il = html.split("<h2>Information loss</h2>", 1)[1].split("</table>", 1)[0]
    for b in rep["blocks"]:
        assert b.get("k") is None
        assert re.search(rf'<td class="l">{re.escape(b["name"])}</td><td class="l">[^<]*</td><td>3</td>', il)


def test_every_table_scrolls_in_its_own_box_and_print_css_fits_a4(rep):
    html = report.render_html(rep)
    assert html.count("<table>") == html.count('<div class="scroll"><table>') > 5
    css = html.split("<style>", 1)[1].split("</style>", 1)[0]
    assert ".scroll" in css and "overflow-x: auto" in css
    assert "@page { size: A4" in css and "@media print" in css


def _text_boxes(svg_text: str) -> list[tuple[str, tuple[float, float, float, float]]]:
    from microagg_cli.report.svg import text_box

    root = ET.fromstring(svg_text)
    out = []
    for e in root.iter():
        if e.tag.rsplit("}", 1)[-1] != "text" or e.get("transform"):
            continue
        size = float(e.get("font-size", 11))
        out.append((e.text, text_box(float(e.get("x")), float(e.get("y")), e.text, size,
                                     e.get("text-anchor", "start"), e.get("font-weight", "normal"))))
    return out


def _overlapping(boxes):
    bad = []
    for i, (sa, a) in enumerate(boxes):
        for sb, b in boxes[i + 1:]:
            if min(a[2], b[2]) - max(a[0], b[0]) > 0.5 and min(a[3], b[3]) - max(a[1], b[1]) > 0.5:
                bad.append((sa, sb))
    return bad


def test_compare_map_places_labels_of_close_points_apart():
    def row(label, k, il, dr):
        return {"label": label, "plan": "p", "k": k, "k_counts": "values", "il_sse": il, "il_score": il,
                "dr": dr, "score": 1.0, "k_prime": 1.0}

    # mic1d 300 and 900 nearly on top of each other (the reported overlap), plus a crowd
    rows = [row("mic1d", 300, 0.02, 95.1), row("mic1d", 900, 0.03, 95.4), row("mdav", 3, 0.04, 95.0),
            row("mdav", 5, 0.05, 95.3), row("zscores", 3, 30.0, 12.0)]
    svg = report.risk_utility_svg({"rows": rows, "plans": [{"name": "p"}]})
    boxes = _text_boxes(svg)
    labels = [s for s, _b in boxes]
    for expected in ("mic1d 300", "mic1d 900", "mdav 3", "mdav 5", "zscores 3"):
        assert expected in labels
    assert _overlapping(boxes) == []


def test_evaluate_charts_have_no_overlapping_texts(rep):
    html = report.render_html(rep)
    for svg in re.findall(r"<svg .*?</svg>", html, flags=re.S):
        assert _overlapping(_text_boxes(svg)) == [], svg[:200]


def test_svg_place_moves_a_label_off_a_taken_spot():
    from microagg_cli.report.svg import Svg, text_box

    svg = Svg(300, 200, "t", "d")
    texts = [f"label {i}" for i in range(10)]  # ten labels for one point: the near places run out
    placed = [svg.place(150, 100, t, size=10) for t in texts]
    boxes = [(t, text_box(x, y, t, 10, anchor)) for t, (x, y, anchor) in zip(texts, placed)]
    assert _overlapping(boxes) == []
    assert all(0 <= b[0] and b[2] <= 300 and 0 <= b[1] and b[3] <= 200 for _t, b in boxes)
    assert "<line" in svg.close()  # a label moved further out has a leader line to its point


# ----------------------------------------------------------- certified bound


@pytest.fixture(scope="module")
def cg_rep(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cg")
    rng = np.random.default_rng(3)
    X = rng.normal(size=(12, 4)).round(3)
    orig = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    prot = orig.copy()
    groups = np.repeat(np.arange(4), 3)
    prot[["a", "b"]] = orig[["a", "b"]].groupby(groups).transform("mean")
    prot[["c", "d"]] = orig[["c", "d"]].groupby(groups[::-1]).transform("mean")
    o, p = tmp / "o.csv", tmp / "p.csv"
    orig.to_csv(o, index=False)
    prot.to_csv(p, index=False)
    return api.evaluate(o, p, blocks=[["a", "b"], ["c", "d"]], k=3, bound="cg", time_limit=60,
                        max_scenarios=4)


def test_html_and_terminal_show_lb_cg_and_the_certified_gap_per_block_and_overall(cg_rep):
    cg = cg_rep["measures"]["utility"]["cg_bound"]
    html = report.render_html(cg_rep)
    il = html.split("<h2>Information loss</h2>", 1)[1].split("</table>", 1)[0]
    assert "lb_cg (%)" in il and "certified gap" in il
    for i, b in enumerate(cg_rep["blocks"]):
        lb = report.fmt(cg["lb_cg"]["per_block"][i])
        assert re.search(rf'<td class="l">{b["name"]}</td>.*?<td>{re.escape(lb)}</td>', il)
    assert f'<td>{report.fmt(cg["lb_cg"]["overall"])}</td>' in il.split('<td class="l">overall</td>', 1)[1]
    gap = cg["cg_gap"]["overall"]
    assert f"{100 * gap:.2f} %" in il
    assert '<div class="l">lb_cg</div>' in html  # a headline card
    buf = io.StringIO()
    report.print_summary(cg_rep, Console(file=buf, width=80, highlight=False, color_system=None))
    text = buf.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80 and "\u2026" not in text
    assert "lb_cg" in text and f"{100 * gap:.2f} %" in text
    for b in cg_rep["blocks"]:
        assert re.search(rf"^\s*{b['name']}\s", text, flags=re.M)


def test_evaluate_page_without_cg_points_to_it(rep):
    assert "--bound cg" in report.render_html(rep)


def test_protect_summary_points_to_the_certified_bound(tmp_path):
    o = tmp_path / "o.csv"
    pd.DataFrame(np.random.default_rng(1).normal(size=(12, 2)), columns=["a", "b"]).to_csv(o, index=False)
    rep = api.protect(o, tmp_path / "p.csv", k=3)
    buf = io.StringIO()
    report.print_protect_summary(rep, Console(file=buf, width=100, highlight=False, color_system=None))
    text = buf.getvalue()
    assert "LB_NN" in text and "sdc evaluate ORIGINAL PROTECTED --bound cg" in text


# ----------------------------------------------------------- the page's hash


def test_attach_html_adds_the_pages_bytes_to_the_audit_files():
    doc = {"audit": {"files": [{"role": "output", "path": "x.csv"}]}}
    data = report.attach_html(doc, "dir/page.html", "<p>\u00e9</p>")
    assert data == "<p>\u00e9</p>".encode()
    entry = doc["audit"]["files"][-1]
    assert entry == {"role": "HTML report", "path": "dir/page.html", "name": "page.html",
                     "size_bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    report.attach_html(doc, "dir/page.html", "<p/>")  # a second render replaces the entry
    assert [f["path"] for f in doc["audit"]["files"]] == ["x.csv", "dir/page.html"]


def test_compare_json_lists_the_html_page_with_its_hash(tmp_path):
    out, page = tmp_path / "g.json", tmp_path / "g.html"
    api.compare(SAMPLE / "census.csv", methods=["mdav"], k=[3], known=[["AGI"]], output=out, html=page)
    doc = json.loads(out.read_text())
    entry = next(f for f in doc["audit"]["files"] if f["role"] == "HTML report")
    data = page.read_bytes()
    assert entry["path"] == str(page) and entry["size_bytes"] == len(data)
    assert entry["sha256"] == hashlib.sha256(data).hexdigest()


# ----------------------------------------------------------------- the package


def test_report_imports_no_orchestration_and_no_private_names():
    import ast
    from pathlib import Path

    pkg = Path(report.__file__).parent
    for path in pkg.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                mod = node.module or ""
                if node.level == 2:  # microagg_cli.<mod>
                    assert mod.split(".")[0] not in ("api", "comparison", "blocks_advice", "engines", "blocking",
                                                     "evaluation", "protection"), f"{path.name} imports {mod}"
                for a in node.names:
                    assert not (a.name.startswith("_") and not a.name.startswith("__")), \
                        f"{path.name} imports {mod}.{a.name}"
            elif isinstance(node, ast.Import):
                assert not any(a.name.startswith("microagg_cli") for a in node.names)


def test_blocks_text_views_read_the_json_document():
    doc = {
        "candidates": [{
            "name": "correlated", "mean_abs_corr": 0.5, "block_mean_abs_corr": {"b1": 0.7, "b2": 0.3},
            "plan": {"version": 1, "drop": ["id"], "blocks": [
                {"name": "b1", "columns": ["x", "y"], "method": "mdav", "k": 3},
                {"name": "b2", "columns": ["z"], "method": "mdav"}]},
            "il_sse": 4.25, "k": 3, "blocks": [],
            "risk": {"labels": {"1G": {"scenarios": 3, "k_prime_mean": 3.5, "k_prime_worst": 3.0,
                                       "k_min_worst": 3, "share_below_k_mean": 0.0}},
                     "worst": {"k_prime_worst": 3.0, "worst_known": ["x"]}},
        }],
        "recommended": "correlated", "max_il": 5.0,
    }
    text = report.blocks_text(doc)
    assert "correlated: 2 block(s), 3 column(s)" in text and "drop: id" in text
    ev = report.evaluation_text(doc)
    assert "recommended: correlated (worst k' 3.00, IL_SSE 4.2500 <= 5)" in ev


def test_evaluate_json_lists_the_html_page_with_its_hash(tmp_path):
    import hashlib

    from microagg_cli import api

    orig, prot = tmp_path / "o.csv", tmp_path / "p.csv"
    orig.write_text("a,b\n1,10\n2,11\n3,12\n4,30\n5,31\n6,32\n")
    prot.write_text("a,b\n2,11\n2,11\n2,11\n5,31\n5,31\n5,31\n")
    rep = api.evaluate(orig, prot, k=3, report=tmp_path / "r.json", html=tmp_path / "r.html")
    entry = [f for f in rep["audit"]["files"] if f["role"] == "HTML report"]
    page = (tmp_path / "r.html").read_bytes()
    assert len(entry) == 1 and entry[0]["sha256"] == hashlib.sha256(page).hexdigest()
    assert entry[0]["size_bytes"] == len(page)
