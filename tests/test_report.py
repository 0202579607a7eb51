"""Rendering of evaluation reports: JSON text, terminal summary, self-contained HTML."""

from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

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
