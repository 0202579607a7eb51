"""``sdc compare``: method x k x plan grids (microagg_cli/comparison/, commands/compare.py)."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import CENSUS_MDAV_IL, ROOT, SAMPLE
from microagg_cli import api, comparison, protection
from microagg_cli.blocking import load_plan, propose_blocks
from microagg_cli.cli import cli
from microagg_cli.errors import InvalidParameterError
from microagg_cli.io import numeric_matrix, read_table
from microagg_cli.methods import get_method
from microagg_cli.request import RunOptions

CENSUS = SAMPLE / "census.csv"
ACCEPT = ["--methods", "mdav,pcp,zscores,sugeno", "--k", "3,5", "--max-scenarios", "8", "-q"]


def run(*args):
    return CliRunner().invoke(cli, ["compare", *[str(a) for a in args]])


def strip_timing(doc: dict) -> dict:
    doc = json.loads(json.dumps(doc))
    doc.pop("timing")
    doc.pop("audit", None)
    for r in doc["rows"]:
        r.pop("seconds")
    return doc


@pytest.fixture(scope="module")
def accept_json() -> dict:
    res = run(CENSUS, *ACCEPT, "--format", "json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


#: A grid of four cells and two known-column scenarios: the formats, the page and --jobs
#: need no more (each linkage scenario solves a 1080 x 1080 assignment per cell).
SMALL = ["--methods", "mdav,zscores", "--k", "3,5", "--known", "AGI,FICA", "--known", "INTVAL", "-q"]


@pytest.fixture(scope="module")
def small_json() -> dict:
    res = run(CENSUS, *SMALL, "--format", "json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


@pytest.fixture(scope="module")
def small_files(tmp_path_factory):
    """The small grid written with -o grid.csv and --html grid.html in one run."""
    folder = tmp_path_factory.mktemp("small")
    res = run(CENSUS, *SMALL, "-o", folder / "grid.csv", "--html", folder / "grid.html")
    assert res.exit_code == 0, res.output
    return folder


# ------------------------------------------------------------------ acceptance


def test_acceptance_eight_rows_with_all_measures(accept_json):
    rows = accept_json["rows"]
    assert len(rows) == 8 and accept_json["cells"] == 8 and accept_json["complete"] is True
    # grouped like the papers' tables: method (as given), then k
    assert [(r["method"], r["k"]) for r in rows] == [
        (m, k) for m in ("mdav", "pcp", "zscores", "sugeno") for k in (3, 5)]
    assert [r["cell"] for r in rows] == list(range(8))
    for r in rows:
        for key, _h, _d in comparison.MEASURES:
            if key == "rmdid1":  # census.csv's robust scatter is singular: RMD skipped, said why
                assert r[key] is None and "singular" in r["rmd_skipped_reason"]
                continue
            assert isinstance(r[key], float), (r["method"], r["k"], key)
        assert set(r["by_label"]) == {"1G"}
        assert r["by_label"]["1G"]["scenarios"] == 8
        assert r["scenarios"] == {"mode": "sample", "count": 8}
        # partition methods: k' over all columns is n / number of groups >= k
        assert r["k_prime"] >= r["k"] and r["k_min"] >= r["k"]
        assert r["lb_nn"] <= r["il_sse"]
        # DR and score follow their default formulas
        assert r["dr"] == pytest.approx(0.25 * r["dld"] + 0.25 * r["pld"] + 0.5 * r["id"])
        assert r["score"] == pytest.approx(0.5 * r["il_score"] + 0.5 * r["dr"])
    mdav = {r["k"]: r for r in rows if r["method"] == "mdav"}
    assert round(mdav[3]["il_sse"], 4) == CENSUS_MDAV_IL[3] == 5.6922
    assert round(mdav[5]["il_sse"], 4) == CENSUS_MDAV_IL[5]
    # MDAV makes 360 groups of 3 and 216 groups of 5 on 1080 records
    assert mdav[3]["k_prime"] == 3.0 and mdav[5]["k_prime"] == 5.0
    # larger k: more loss, less distance-linkage risk, for every method
    for m in ("mdav", "pcp", "zscores", "sugeno"):
        a, b = [r for r in rows if r["method"] == m]
        assert b["il_sse"] > a["il_sse"] and b["dld"] < a["dld"]


def test_jobs_do_not_change_the_result(small_json):
    res = run(CENSUS, *SMALL, "--format", "json", "--jobs", "2")
    assert res.exit_code == 0, res.output
    two = json.loads(res.stdout)
    assert two["timing"]["jobs"] == 2 and small_json["timing"]["jobs"] == 1
    assert len(two["rows"]) == 4 and two["complete"] is True
    assert strip_timing(two) == strip_timing(small_json)


def test_html_is_self_contained_and_holds_the_map(small_files):
    text = (small_files / "grid.html").read_text()
    # no URL but the XML namespaces of the one template (XHTML, SVG)
    assert set(re.findall(r"https?://[\w./-]+", text)) <= {"http://www.w3.org/1999/xhtml",
                                                           "http://www.w3.org/2000/svg"}
    assert "src=" not in text and "href=" not in text and "<script" not in text
    root = ET.fromstring(text.split("\n", 1)[1])  # well-formed XML after the doctype
    for e in root.iter():  # local names: the page is XHTML with inline SVG
        e.tag = e.tag.rsplit("}", 1)[-1]
    svgs = [e for e in root.iter() if e.tag == "svg"]
    assert len(svgs) == 2  # IL_SSE x DR and IL_score x DR
    # one labelled marker per cell in each map
    for svg in svgs:
        markers = [e for e in svg.iter() if e.tag in ("circle", "rect", "polygon") and e.find("title") is not None]
        assert len(markers) == 4
        labels = sorted(e.text for e in svg.iter() if e.tag == "text" and e.text and e.text[-1].isdigit()
                        and e.text.split()[0] in ("mdav", "zscores"))
        assert labels == ["mdav 3", "mdav 5", "zscores 3", "zscores 5"]
    assert "5.6922" in text  # the mdav k=3 row of the table


# --------------------------------------------------------------------- formats


def test_csv_and_table_formats(small_json, small_files):
    doc = small_json
    lines = (small_files / "grid.csv").read_text().splitlines()
    head = lines[0].split(",")
    assert head[:7] == ["cell", "plan", "method", "label", "params", "k", "k_counts"]
    assert len(lines) == 5
    first = dict(zip(head, lines[1].split(",")))
    assert first["method"] == "mdav" and first["k"] == "3"
    assert float(first["IL_SSE"]) == doc["rows"][0]["il_sse"]  # full precision
    assert float(first["k' 1G"]) == doc["rows"][0]["by_label"]["1G"]["k_prime"]
    assert float(first["DLD"]) == doc["rows"][0]["dld"]
    res = run(CENSUS, *SMALL)
    assert res.exit_code == 0
    table = res.stdout
    assert "5.6922" in table and "9.0884" in table and "IL_SSE" in table and "zscores" in table
    # the method is named once per group
    assert table.count(" mdav ") == 1


def test_output_format_from_extension_and_existing_output(tmp_path):
    out = tmp_path / "g.json"
    args = [CENSUS, "--k", "3", "--known", "AGI", "-o", out]
    assert run(*args).exit_code == 0
    doc = json.loads(out.read_text())
    assert doc["schema_version"] == comparison.COMPARE_SCHEMA_VERSION and len(doc["rows"]) == 1
    before = out.read_bytes()
    res = run(*args)
    assert res.exit_code == 3 and "--force" in res.stderr
    assert out.read_bytes() == before
    assert run(*args, "--force").exit_code == 0


# ----------------------------------------------------------------- plans, mic1d


def test_plan_files_label_scenarios_by_blocks():
    plans = [SAMPLE / "plans" / "census-correlated.toml", SAMPLE / "plans" / "census-noncorrelated.toml"]
    doc = api.compare(CENSUS, methods=["mdav"], k=[5], plans=plans, max_scenarios=40)
    rows = doc["rows"]
    assert [r["plan"] for r in rows] == ["census-correlated", "census-noncorrelated"]
    table = read_table(CENSUS)
    for r, path in zip(rows, plans):
        plan = load_plan(path)
        # the same protection as sdc protect --plan (an independent IL computation)
        assert r["il_sse"] == pytest.approx(protection.protect_table(table, plan, RunOptions(seed=0)).overall["il_sse"], rel=1e-12)
        assert len(r["il_sse_per_block"]) == 3
        assert set(r["by_label"]) == {"1G", "2G", "3G"}
        # every block is 5-anonymous on its own; across blocks records separate
        assert r["by_label"]["1G"]["k_prime"] >= 5
        assert r["by_label"]["3G"]["k_prime"] < r["by_label"]["1G"]["k_prime"]
        assert r["by_label"]["3G"]["dld"] > r["by_label"]["1G"]["dld"]
    assert [p["name"] for p in doc["plans"]] == ["census-correlated", "census-noncorrelated"]
    assert doc["plans"][0]["blocks"][0]["columns"] == ["AGI", "FICA", "TAXINC"]


def test_strategies_give_the_blocking_module_plans():
    doc = api.compare(CENSUS, methods=["mdav"], k=[3], strategies=["correlated", "cross"], block_size=4,
                      known=[["AGI"], ["AGI", "FICA"]])
    table = read_table(CENSUS)
    names = table.columns
    X = numeric_matrix(table, names)
    for plan in doc["plans"]:
        expect = propose_blocks(X, names, plan["name"], 4)
        assert [tuple(b["columns"]) for b in plan["blocks"]] == expect
    assert [r["plan"] for r in doc["rows"]] == ["correlated", "cross"]
    assert all(r["scenarios"] == {"mode": "explicit", "count": 2} for r in doc["rows"])


def test_mic1d_takes_its_own_k_values():
    doc = api.compare(CENSUS, methods=["mdav", "mic1d"], k=[3], mic1d_k=[3000, 4000], known=[["AGI"]])
    rows = doc["rows"]
    assert [(r["method"], r["k"], r["k_counts"]) for r in rows] == [
        ("mdav", 3, "records"), ("mic1d", 3000, "values"), ("mic1d", 4000, "values")]
    for r in rows[1:]:
        # not a record partition: no LB_NN and no share below k; its warning is kept
        assert r["lb_nn"] is None and r["share_below_k"] is None
        assert any("not k-anonymous" in w for w in r["warnings"])
    assert rows[0]["warnings"] == []
    mic = {m["label"]: m for m in doc["methods"]}["mic1d"]
    assert mic["k_values"] == [3000, 4000] and mic["k_counts"] == "values"


def test_method_parameters_in_the_method_list():
    choice = comparison.parse_method("ufs:order=pv:AGI:descending=true")
    assert choice.params == {"order": "pv:AGI", "descending": "true"}
    assert comparison.parse_method("vmdav").params == {}
    with pytest.raises(InvalidParameterError):
        comparison.parse_method("vmdav:nope=1")
    with pytest.raises(InvalidParameterError):
        comparison.parse_method("vmdav:gamma=0.1:gamma=0.2")
    doc = api.compare(CENSUS, methods=["individual-ranking:optimal=true", "individual-ranking"], k=[3],
                      known=[["AGI"]])
    opt, plain = doc["rows"]
    assert opt["label"] == "individual-ranking:optimal=true" and opt["params"] == {"optimal": "true"}
    # optimal univariate groups lose less than fixed-size ones, column by column
    assert opt["il_sse"] < plain["il_sse"]


def test_preset_comparative_13_reproduces_the_mdav_figures():
    doc = api.compare(CENSUS, preset="comparative-13", known=[["AGI"]], methods=["mdav", "ufs"])
    assert doc["preset"]["name"] == "comparative-13"
    mdav = {r["k"]: r["il_sse"] for r in doc["rows"] if r["method"] == "mdav"}
    assert {k: round(v, 4) for k, v in mdav.items()} == {k: CENSUS_MDAV_IL[k] for k in (3, 4, 5)}
    assert len(comparison.PRESETS["comparative-13"].columns) == 13


def test_preset_comparative_13_runs_the_papers_methods():
    p = comparison.PRESETS["comparative-13"]
    assert [(m.label, m.name, dict(m.params)) for m in p.methods] == [
        ("UFS-PV", "ufs", {"order": "pv:0"}), ("UFS-SZ", "ufs", {"order": "sz"}),
        ("UFS-FPC", "ufs", {"order": "fpc"}),
        ("UDO-PV", "kward-1d", {"order": "pv:0"}), ("UDO-SZ", "kward-1d", {"order": "sz"}),
        ("UDO-FPC", "kward-1d", {"order": "fpc"}),
        ("MFS-MD", "md", {"grow": "group"}),
        ("MDO-PV", "kward", {"order": "pv:0"}), ("MDO-SZ", "kward", {"order": "sz"}),
        ("MDO-FPC", "kward", {"order": "fpc"}), ("MDO-MD", "kward", {"order": "md"}),
    ]
    for m in p.methods:
        get_method(m.name).validate_params(dict(m.params))
    assert p.ks == (3, 4, 5)


def test_preset_comparative_13_udo_is_data_oriented_not_individual_ranking():
    """UDO used to be individual ranking (IL about 0.1); k-Ward on an axis loses tens of %."""
    doc = api.compare(CENSUS, preset="comparative-13", k=[3], known=[["AGI"]],
                      methods=["kward-1d:order=fpc", "md:grow=group"])
    il = {r["label"]: r["il_sse"] for r in doc["rows"]}
    assert il["kward-1d:order=fpc"] > 10
    assert 5 < il["md:grow=group"] < 8


def _mean_block_r(plan_blocks):
    import itertools

    import pandas as pd

    df = pd.read_csv(CENSUS)
    r = df.corr().abs()
    return np.mean([r.loc[a, b] for cols in plan_blocks for a, b in itertools.combinations(cols, 2)])


def test_nin_plans_are_named_by_measurement():
    corr = load_plan(SAMPLE / "plans" / "census-correlated.toml")
    non = load_plan(SAMPLE / "plans" / "census-noncorrelated.toml")
    rc = _mean_block_r([b.columns for b in corr.blocks])
    rn = _mean_block_r([b.columns for b in non.blocks])
    assert rc == pytest.approx(0.658, abs=1e-3) and rn == pytest.approx(0.418, abs=1e-3)
    p = {pl.name: pl for pl in comparison.PRESETS["nin-census"].plans}
    assert [list(c) for _n, c in p["correlated"].blocks] == [list(b.columns) for b in corr.blocks]
    assert [list(c) for _n, c in p["non-correlated"].blocks] == [list(b.columns) for b in non.blocks]


def test_preset_nin_census_runs_mic1d_once_over_all_nine():
    p = comparison.PRESETS["nin-census"]
    assert p.mic1d_ks == (3000, 4000, 5000) and p.ks == (5, 25, 50)
    cells = comparison.build_cells(p.methods, p.ks, p.plans, mic1d_ks=p.mic1d_ks)
    mic = [(c.plan.name, c.k) for c in cells if c.method.name == "mic1d"]
    assert mic == [("all-nine", 3000), ("all-nine", 4000), ("all-nine", 5000)]
    assert {c.plan.name for c in cells if c.method.name != "mic1d"} == {"correlated", "non-correlated"}
    assert len(cells) == 2 * 3 * 3 + 3


def test_preset_nin_census_overrides_and_blocks():
    doc = api.compare(CENSUS, preset="nin-census", k=[5], mic1d_k=[3000], known=[["AGI", "FICA"]])
    rows = doc["rows"]
    assert [(r["plan"], r["method"], r["k"]) for r in rows] == [
        (p, m, 5) for p in ("correlated", "non-correlated") for m in ("mdav", "pcp", "zscores")
    ] + [("all-nine", "mic1d", 3000)]
    # the known pair lies in one block of "correlated" and in two of "non-correlated"
    assert set(rows[0]["by_label"]) == {"1G"} and set(rows[3]["by_label"]) == {"2G"}
    assert rows[-1]["k_counts"] == "values"


def test_compare_max_scenarios_zero_means_all():
    doc = api.compare(CENSUS, methods=["mdav"], k=[3], columns=["AGI", "FICA", "INTVAL", "EMCONTRB"],
                      max_scenarios=0)
    assert doc["rows"][0]["scenarios"] == {"mode": "all", "count": 15}
    with pytest.raises(InvalidParameterError):
        api.compare(CENSUS, methods=["mdav"], k=[3], max_scenarios=-1)


# --------------------------------------------------------------------- outputs


def test_save_protected_writes_what_sdc_protect_writes(tmp_path):
    folder = tmp_path / "cells"
    doc = api.compare(CENSUS, methods=["mdav", "zscores"], k=[3], known=[["AGI"]], save_protected=folder)
    names = sorted(os.listdir(folder))
    assert names == ["001_one-block_mdav_k3.csv", "002_one-block_zscores_k3.csv"]
    assert [r["saved"] for r in doc["rows"]] == names
    ref = tmp_path / "ref.csv"
    api.protect(CENSUS, ref, k=3, method="mdav")
    assert (folder / names[0]).read_bytes() == ref.read_bytes()
    # a second run refuses to replace them without force
    res = run(CENSUS, "--k", "3", "--known", "AGI", "--save-protected", folder)
    assert res.exit_code == 3 and "exists" in res.stderr


@pytest.mark.parametrize("args, code, words", [
    (["--methods", "nosuch"], 2, "unknown method"),
    (["--k", "1"], 2, "k = 1"),
    (["--k", "3,3"], 2, "twice"),
    (["--k", "2000"], 4, "2000"),
    (["--methods", "mic1d", "--mic1d-k", "20000"], 4, "values"),
    (["--plans", SAMPLE / "plans" / "census-correlated.toml", "--strategies", "cross"], 2, "either"),
    (["--plans", SAMPLE / "plans" / "census-correlated.toml", "--columns", "AGI"], 2, "--columns"),
    (["--strategies", "correlated"], 2, "--block-size"),
    (["--columns", "AGI,NOPE"], 3, "NOPE"),
    (["--max-scenarios", "-1"], 2, "max-scenarios"),
    (["--methods", "optimal-1d", "--columns", "AGI,FICA"], 2, "at most 1"),
])
def test_errors_before_any_cell_runs(args, code, words, tmp_path):
    out = tmp_path / "never.json"
    res = run(CENSUS, "-o", out, *args)
    assert res.exit_code == code, res.output
    assert words in res.stderr
    assert not out.exists()


def test_mic1d_without_its_k_values_warns():
    res = run(CENSUS, "--methods", "mic1d", "--k", "3", "--known", "AGI", "--format", "json")
    assert res.exit_code == 0
    assert "--mic1d-k" in res.stderr
    assert json.loads(res.stdout)["rows"][0]["k"] == 3


# ------------------------------------------------------------------- interrupts


class _StopAfter:
    def __init__(self, n: int):
        self.n = n

    def __call__(self, done: int, total: int) -> None:
        if done >= self.n:
            raise KeyboardInterrupt


@pytest.mark.parametrize("jobs", [1, 2])
def test_interrupt_keeps_the_finished_rows(tmp_path, jobs):
    out, html = tmp_path / "g.json", tmp_path / "g.html"
    with pytest.raises(comparison.GridInterrupted) as info:
        api.compare(CENSUS, methods=["mdav"], k=[3, 4, 5, 6, 7, 8], known=[["AGI"]], output=out, html=html,
                    jobs=jobs, progress=_StopAfter(2))
    exc = info.value
    assert isinstance(exc, KeyboardInterrupt)
    assert exc.written == [str(out), str(html)]
    doc = json.loads(out.read_text())
    assert doc["complete"] is False and doc["cells"] == 6 and doc["finished"] == 2
    assert all(r["method"] == "mdav" for r in doc["rows"])
    assert "interrupted" in html.read_text()
    assert multiprocessing.active_children() == []  # the workers were stopped
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.html", "g.json"]  # no temporary file left


def test_ctrl_c_on_the_command_line(tmp_path):
    """A real SIGINT to the process group while worker processes run."""
    out = tmp_path / "g.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "microagg_cli", "compare", str(CENSUS), "--methods", "mdav",
           "--k", ",".join(str(k) for k in range(2, 60)), "--known", "AGI", "--jobs", "2", "-o", str(out)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    t0 = time.time()
    while not out.exists() and time.time() - t0 < 60 and proc.poll() is None:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err.decode()
    assert "interrupted after" in err.decode() and str(out) in err.decode()
    doc = json.loads(out.read_text())
    assert doc["complete"] is False and 1 <= doc["finished"] < doc["cells"] == 58, (
        doc["complete"], doc["finished"], doc["cells"])
    deadline = time.time() + 10  # workers got the same SIGINT: give them a moment to exit
    while True:
        left = subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True, text=True).stdout
        if left == "" or time.time() > deadline:
            break
        time.sleep(0.1)
    assert left == ""


# ----------------------------------------------------------------------- pieces


def test_build_cells_order_and_checks():
    plans = [comparison.single_plan(["a", "b"], "p1"), comparison.single_plan(["a", "b"], "p2")]
    methods = [comparison.parse_method("mdav"), comparison.parse_method("mic1d")]
    cells = comparison.build_cells(methods, [3, 5], plans, mic1d_ks=[100])
    assert [(c.index, c.plan.name, c.method.name, c.k) for c in cells] == [
        (0, "p1", "mdav", 3), (1, "p1", "mdav", 5), (2, "p1", "mic1d", 100),
        (3, "p2", "mdav", 3), (4, "p2", "mdav", 5), (5, "p2", "mic1d", 100)]
    with pytest.raises(InvalidParameterError):
        comparison.build_cells([comparison.parse_method("mdav"), comparison.parse_method("mdav")], [3], plans)
    with pytest.raises(InvalidParameterError):
        comparison.build_cells(methods, [3], [plans[0], plans[0]])


def test_resolve_jobs():
    assert comparison.resolve_jobs(4, 2) == 2
    assert comparison.resolve_jobs(1, 10) == 1
    assert comparison.resolve_jobs(0, 100) == min(os.cpu_count() or 1, 100)
    with pytest.raises(InvalidParameterError):
        comparison.resolve_jobs(-1, 3)


def test_svg_map_places_markers_by_value():
    rows = [
        {"label": "a", "plan": "p", "k": 3, "k_counts": "records", "il_sse": 10.0, "il_score": 1.0, "dr": 40.0,
         "score": 1.0, "k_prime": 3.0},
        {"label": "b", "plan": "p", "k": 3, "k_counts": "records", "il_sse": 40.0, "il_score": 1.0, "dr": 10.0,
         "score": 1.0, "k_prime": 3.0},
    ]
    svg = comparison.risk_utility_svg({"rows": rows, "plans": [{"name": "p"}]})
    root = ET.fromstring(svg)
    circles = [e for e in root.iter() if e.tag.rsplit("}", 1)[-1] == "circle"]
    (xa, ya), (xb, yb) = [(float(c.get("cx")), float(c.get("cy"))) for c in circles]
    assert xa < xb and ya < yb  # b: more loss (right), less risk (lower)
    # both axes end at the nice maximum 50 (>= 1.08 * 40): x of 40 is 80 % of the width
    x0 = 62.0
    w = 760 - x0 - 24.0
    assert xb == pytest.approx(x0 + w * 40 / 50, abs=0.06)
    assert np.isclose(xa, x0 + w * 10 / 50, atol=0.06)
