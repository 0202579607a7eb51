"""``sdc evaluate`` and ``sdc protect --evaluate``: orchestration, reference figures,
row matching, column choice, gates, outputs and privacy of the reports."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from conftest import CENSUS_LB_NN, CENSUS_MDAV_IL, only_error_line
from microagg_cli import api
from microagg_cli.cli import cli
from microagg_cli.errors import DataError, InvalidParameterError, ThresholdExceeded


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


error_line = only_error_line


def write(path: Path, frame: pd.DataFrame) -> Path:
    frame.to_csv(path, index=False)
    return path


@pytest.fixture
def pair(tmp_path):
    """8 records, 3 numeric columns, an id and a text column; protected = pairs averaged."""
    orig = pd.DataFrame({
        "id": [f"r{i}" for i in range(8)],
        "a": [1.0, 2.0, 10.0, 11.0, 20.0, 21.0, 30.0, 33.0],
        "b": [5.0, 7.0, 1.0, 3.0, 8.0, 9.0, 2.0, 4.0],
        "c": [0.5, 0.5, 2.5, 2.5, 4.0, 4.0, 6.0, 6.0],
        "t": list("xyxyxyxy"),
    })
    prot = orig.copy()
    for col in ("a", "b"):
        prot[col] = orig[col].groupby(np.arange(8) // 2).transform("mean")
    return write(tmp_path / "orig.csv", orig), write(tmp_path / "prot.csv", prot), orig, prot


# --------------------------------------------------------------------------- reference values


def test_census_mdav_k3_reference_figures(census_path, tmp_path):
    out = tmp_path / "mdav3.csv"
    assert run("protect", census_path, "-o", out, "-k", 3, "-q").exit_code == 0
    columns = pd.read_csv(census_path, nrows=0).columns.tolist()
    res = run("evaluate", census_path, out, "--known", ",".join(columns), "--known", "AGI,FICA",
              "--format", "json", "-q")
    assert res.exit_code == 0, res.output
    assert res.stderr == ""
    rep = json.loads(res.stdout)
    m = rep["measures"]
    assert rep["columns"]["evaluated"] == columns
    assert round(m["utility"]["il_sse"]["overall"], 4) == CENSUS_MDAV_IL[3]
    assert m["risk"]["anonymity"]["k_prime"] == 3.0
    assert m["risk"]["anonymity"]["classes"] == 360
    assert round(m["utility"]["optimality"]["lb_nn"]["overall"], 4) == CENSUS_LB_NN[3]
    assert rep["summary"]["lb_nn"] == m["utility"]["optimality"]["lb_nn"]["overall"]
    assert rep["parameters"]["partition_based"] is True and rep["parameters"]["k"] == 3
    assert rep["parameters"]["k_source"] == "default"
    # explicit scenarios, in the order given, with their names
    assert m["risk"]["scenarios"] == {"mode": "explicit", "count": 2, "max_all_subsets": 10, "sample_size": 512}
    assert [s["attributes"] for s in m["risk"]["per_scenario"]] == [list(range(13)), [1, 10]]
    # the formulas of DR and score are in the report as text, and the numbers follow them
    assert rep["formulas"]["dr"] == "DR = 0.25 * DLD + 0.25 * PLD + 0.5 * ID"
    assert rep["formulas"]["score"] == "score = 0.5 * IL_score + 0.5 * DR"
    s = rep["summary"]
    assert s["dr"] == pytest.approx(0.25 * s["dld"] + 0.25 * s["pld"] + 0.5 * s["id"])
    assert s["score"] == pytest.approx(0.5 * s["il_score"] + 0.5 * s["dr"])
    assert rep["schema_version"] and rep["measures"]["schema"]
    assert rep["original"]["sha256"] and rep["protected"]["rows"] == 1080


def test_identity_protection_zero_loss_full_linkage(pair, tmp_path):
    orig_path, _, orig, _ = pair
    same = write(tmp_path / "same.csv", orig)
    rep = api.evaluate(orig_path, same, columns=["a", "b", "c"])
    s = rep["summary"]
    assert s["il_sse"] == 0.0 and s["il_score"] == 0.0 and s["il1s"] == 0.0
    # every record is distinct over every scenario except {c} alone (pairs share c)
    per = rep["measures"]["risk"]["per_scenario"]
    assert len(per) == 7
    for sc in per:
        expected = 50.0 if sc["attributes"] == [2] else 100.0
        assert sc["dld"] == expected, sc["attributes"]
    worst = rep["measures"]["risk"]["worst"]["dld"]
    assert worst["value"] == 100.0
    assert rep["measures"]["risk"]["anonymity"]["k_prime"] == 1.0
    # distinct rows, no k-partition: no LB_NN / gap
    assert rep["parameters"]["partition_based"] is False and s["lb_nn"] is None


def test_fully_aggregated_file_kprime_n_dld_1_over_n(pair, tmp_path):
    orig_path, _, orig, _ = pair
    flat = orig.copy()
    for col in ("a", "b", "c"):
        flat[col] = orig[col].mean()
    flat_path = write(tmp_path / "flat.csv", flat)
    rep = api.evaluate(orig_path, flat_path, columns=["a", "b", "c"], k=2)
    risk = rep["measures"]["risk"]
    n = 8
    assert risk["anonymity"]["k_prime"] == n and risk["anonymity"]["classes"] == 1
    for sc in risk["per_scenario"]:
        assert sc["k_prime"] == n
        assert sc["dld"] == pytest.approx(100.0 / n)
    assert rep["summary"]["dld"] == pytest.approx(100.0 / n)
    assert rep["summary"]["il_sse"] == pytest.approx(100.0)
    assert rep["parameters"]["partition_based"] is True


# --------------------------------------------------------------------------- row matching


def test_key_reorders_rows(pair, tmp_path):
    orig_path, prot_path, _, prot = pair
    shuffled = write(tmp_path / "shuffled.csv", prot.iloc[[5, 2, 7, 0, 3, 6, 1, 4]])
    ordered = api.evaluate(orig_path, prot_path, columns=["a", "b"], k=2)
    by_key = api.evaluate(orig_path, shuffled, columns=["a", "b"], key="id", k=2)
    assert {k: v for k, v in by_key["matching"].items() if k != "check"} == {"by": "key", "key": "id"}
    assert by_key["matching"]["check"]["passed"] is True
    assert by_key["measures"] == ordered["measures"]
    assert ordered["summary"]["il_sse"] > 0
    # without the key the shuffled rows would be paired by position: the pairing proof refuses them
    # (it used to give a wrong answer, IL_SSE more than 10 times too high)
    with pytest.raises(DataError, match="not paired right: in column 'a'.*--key COL"):
        api.evaluate(orig_path, shuffled, columns=["a", "b"], k=2)


def test_key_matches_numeric_ids_across_text_spellings(tmp_path):
    o = write(tmp_path / "o.csv", pd.DataFrame({"id": [1, 2, 3, 4], "x": [1.0, 2.0, 3.0, 4.0]}))
    p = tmp_path / "p.csv"
    p.write_text("id,x\n4.0,3.5\n3,3.5\n02,1.5\n1,1.5\n")
    rep = api.evaluate(o, p, key="id", columns=["x"], k=2)
    assert rep["measures"]["risk"]["anonymity"]["k_prime"] == 2.0
    assert rep["summary"]["il_sse"] == pytest.approx(100 * 1.0 / 5.0)


@pytest.mark.parametrize("prot_ids, fragment", [
    (["r0", "r1", "r1", "r3", "r4", "r5", "r6", "r7"], "occurs 2 times in the protected file"),
    (["r0", "r1", "r2", "r3", "r4", "r5", "r6", "zz"], "1 record(s) of the original have no match"),
    (["r0", "r1", "r2", "r3", "r4", "r5", "r6", ""], "has no key"),
])
def test_key_errors(pair, tmp_path, prot_ids, fragment):
    orig_path, _, _, prot = pair
    bad = prot.copy()
    bad["id"] = prot_ids
    bad_path = write(tmp_path / "bad.csv", bad)
    res = run("evaluate", orig_path, bad_path, "--key", "id", "-q")
    assert res.exit_code == 3
    assert fragment in error_line(res)


def test_key_extra_protected_rows_and_missing_column(pair, tmp_path):
    orig_path, _, orig, prot = pair
    extra = pd.concat([prot, prot.iloc[[0]].assign(id="new")])
    extra_path = write(tmp_path / "extra.csv", extra)
    with pytest.raises(DataError, match="1 record\\(s\\) of the protected file have no match"):
        api.evaluate(orig_path, extra_path, key="id")
    with pytest.raises(DataError, match="matched by order"):
        api.evaluate(orig_path, extra_path)
    with pytest.raises(DataError, match="no column 'nope' in the original"):
        api.evaluate(orig_path, extra_path, key="nope")
    dup = write(tmp_path / "dup.csv", pd.concat([orig.iloc[:7], orig.iloc[[0]]]))
    with pytest.raises(DataError, match="occurs 2 times in the original"):
        api.evaluate(dup, extra_path, key="id")


# --------------------------------------------------------------------------- columns and blocks


def test_default_columns_are_the_numeric_ones_that_differ(pair):
    orig_path, prot_path, _, _ = pair
    rep = api.evaluate(orig_path, prot_path, k=2)
    assert rep["columns"]["evaluated"] == ["a", "b"]
    assert rep["columns"]["unchanged"] == ["c"]
    assert rep["columns"]["selection"] == "numeric columns whose values differ"
    assert rep["measures"]["risk"]["scenarios"]["count"] == 3


def test_no_differing_column_is_a_data_error(pair):
    orig_path, _, _, _ = pair
    res = run("evaluate", orig_path, orig_path, "-q")
    assert res.exit_code == 3
    assert "no numeric column differs" in error_line(res)


def test_blocks_label_scenarios_and_split_il(pair):
    orig_path, prot_path, _, _ = pair
    res = run("evaluate", orig_path, prot_path, "--blocks", "a,b;c", "-k", 2, "--format", "json", "-q")
    assert res.exit_code == 0, res.output
    rep = json.loads(res.stdout)
    assert [b["name"] for b in rep["blocks"]] == ["block1", "block2"]
    labels = {tuple(s["attributes"]): s["label"] for s in rep["measures"]["risk"]["per_scenario"]}
    assert labels == {(0,): "1G", (1,): "1G", (2,): "1G", (0, 1): "1G", (0, 2): "2G", (1, 2): "2G",
                      (0, 1, 2): "2G"}
    assert set(rep["measures"]["risk"]["by_label"]) == {"1G", "2G"}
    assert rep["measures"]["utility"]["il_sse"]["per_block"][1] == 0.0  # c unchanged


def test_plan_gives_blocks_and_k(pair, tmp_path):
    orig_path, prot_path, _, _ = pair
    plan = tmp_path / "plan.toml"
    plan.write_text('version = 1\n[[blocks]]\nname = "ab"\ncolumns = ["a", "b"]\nk = 2\n'
                    '[[blocks]]\nname = "c"\ncolumns = ["c"]\nk = 4\n')
    res = run("evaluate", orig_path, prot_path, "--plan", plan, "--format", "json", "-q")
    assert res.exit_code == 0, res.output
    rep = json.loads(res.stdout)
    assert [(b["name"], b["columns"], b["k"]) for b in rep["blocks"]] == [("ab", ["a", "b"], 2), ("c", ["c"], 4)]
    assert rep["parameters"]["k"] == 2 and rep["parameters"]["k_source"] == "plan"
    assert rep["parameters"]["plan"] == "plan.toml"
    res = run("evaluate", orig_path, prot_path, "--plan", plan, "--columns", "a", "-q")
    assert res.exit_code == 2


@pytest.mark.parametrize("args, code, fragment", [
    (["--known", "a,zz"], 2, "'zz' is not an evaluated column"),
    (["--known", "a,a"], 2, "named twice"),
    (["--columns", "a,zz"], 3, "no column 'zz'"),
    (["--columns", "t"], 3, "not numeric"),
    (["--columns", "a,b", "--blocks", "a;c"], 2, "different columns"),
    (["--blocks", "a,b;"], 2, "empty block"),
    (["--max-scenarios", "-1"], 2, "--max-scenarios"),
    (["-k", "1"], 2, "k must be"),
    (["--dr-weights", "dld=1,xx=2"], 2, "unknown DR weight"),
    (["--format", "json", "--report", "-"], 2, "stdout"),
    (["--html", "-"], 2, "--html needs a file"),
])
def test_option_errors(pair, args, code, fragment):
    orig_path, prot_path, _, _ = pair
    res = run("evaluate", orig_path, prot_path, *args, "-q")
    assert res.exit_code == code, res.output
    assert fragment in error_line(res)


def test_max_scenarios_samples_and_known_replaces(tmp_path, rng):
    X = rng.normal(size=(30, 5)).round(3)
    cols = list("abcde")
    o = write(tmp_path / "o.csv", pd.DataFrame(X, columns=cols))
    p = write(tmp_path / "p.csv", pd.DataFrame(X + 0.5, columns=cols))
    # a shifted release is not made of group statistics: its pairing cannot be proven
    with pytest.raises(DataError, match="--no-pairing-check"):
        api.evaluate(o, p, max_scenarios=8, seed=4)
    rep = api.evaluate(o, p, max_scenarios=8, seed=4, pairing_check=False)
    assert rep["matching"]["check"]["passed"] is None
    sc = rep["measures"]["risk"]["scenarios"]
    assert (sc["mode"], sc["count"]) == ("sample", 8)
    again = api.evaluate(o, p, max_scenarios=8, seed=4, pairing_check=False)
    assert [s["attributes"] for s in again["measures"]["risk"]["per_scenario"]] == \
        [s["attributes"] for s in rep["measures"]["risk"]["per_scenario"]]
    every = api.evaluate(o, p, max_scenarios=31, pairing_check=False)
    assert every["measures"]["risk"]["scenarios"]["mode"] == "all"
    assert every["measures"]["risk"]["scenarios"]["count"] == 31


def test_missing_values_refused_or_left_out(pair, tmp_path):
    orig_path, _, _, prot = pair
    holes = prot.copy()
    holes.loc[3, "a"] = np.nan
    holes_path = write(tmp_path / "holes.csv", holes)
    res = run("evaluate", orig_path, holes_path, "--columns", "a,b", "-q")
    assert res.exit_code == 3
    assert "--missing complete" in error_line(res)
    rep = api.evaluate(orig_path, holes_path, columns=["a", "b"], missing="complete", k=2)
    assert rep["records"] == {"evaluated": 7, "left_out_incomplete": 1}
    assert rep["measures"]["n"] == 7


# --------------------------------------------------------------------------- gates


def test_gates_exit_5_naming_the_gate_after_writing_reports(pair, tmp_path):
    orig_path, prot_path, _, _ = pair
    rep_path, html_path = tmp_path / "r.json", tmp_path / "r.html"
    res = run("evaluate", orig_path, prot_path, "--columns", "a,b", "-k", 2, "--max-dld", 10,
              "--min-kprime", 2, "--report", rep_path, "--html", html_path, "-q")
    assert res.exit_code == 5
    line = error_line(res)
    assert "--max-dld 10" in line and "DLD" in line and "--min-kprime" not in line
    rep = json.loads(rep_path.read_text())
    assert html_path.exists()
    checks = {c["option"]: c for c in rep["gates"]["checks"]}
    assert rep["gates"]["passed"] is False and rep["gates"]["on"] == "worst"
    assert checks["--max-dld"]["passed"] is False
    assert checks["--max-dld"]["value"] == rep["measures"]["risk"]["worst"]["dld"]["value"]
    assert checks["--min-kprime"]["passed"] is True and checks["--min-kprime"]["value"] == 2.0


def test_each_gate_fails_on_its_own_and_json_still_printed(pair):
    orig_path, prot_path, _, _ = pair
    for opt, value in (("--max-dld", 1), ("--max-id", 1), ("--max-score", 0.5), ("--min-kprime", 3),
                       ("--max-il", 0.01)):
        res = run("evaluate", orig_path, prot_path, "-k", 2, opt, value, "--format", "json", "-q")
        assert res.exit_code == 5, opt
        assert opt in error_line(res)
        rep = json.loads(res.stdout)
        failed = [c["option"] for c in rep["gates"]["checks"] if not c["passed"]]
        assert failed == [opt]
    res = run("evaluate", orig_path, prot_path, "-k", 2, "--max-dld", 100, "--max-il", 100,
              "--min-kprime", 2, "--max-score", 100, "--max-id", 100, "-q")
    assert res.exit_code == 0 and res.stdout == "" and res.stderr == ""


def test_gate_on_mean_versus_worst(pair):
    orig_path, prot_path, _, _ = pair
    rep = api.evaluate(orig_path, prot_path, k=2)
    mean, worst = rep["summary"]["dld"], rep["summary"]["worst_dld"]
    assert mean < worst
    threshold = (mean + worst) / 2
    with pytest.raises(ThresholdExceeded) as info:
        api.evaluate(orig_path, prot_path, k=2, gates={"max_dld": threshold})
    assert info.value.exit_code == 5 and info.value.report["gates"]["passed"] is False
    ok = api.evaluate(orig_path, prot_path, k=2, gates={"max_dld": threshold}, gate_on="mean")
    assert ok["gates"]["checks"][0]["statistic"] == "mean over scenarios"
    with pytest.raises(InvalidParameterError):
        api.evaluate(orig_path, prot_path, gates={"max_risk": 1})


# --------------------------------------------------------------------------- outputs


def test_outputs_atomic_force_and_summary(pair, tmp_path):
    orig_path, prot_path, _, _ = pair
    rep_path = tmp_path / "r.json"
    res = run("evaluate", orig_path, prot_path, "-k", 2, "--report", rep_path)
    assert res.exit_code == 0, res.output
    assert res.stdout == ""
    assert "IL_SSE" in res.stderr and "DR = 0.25 * DLD" in res.stderr
    first = rep_path.read_text()
    res = run("evaluate", orig_path, prot_path, "-k", 2, "--report", rep_path, "-q")
    assert res.exit_code == 3 and "--force" in error_line(res)
    assert rep_path.read_text() == first
    assert run("evaluate", orig_path, prot_path, "-k", 2, "--report", rep_path, "-q", "-f").exit_code == 0
    a, b = json.loads(first), json.loads(rep_path.read_text())
    a["timing"] = b["timing"] = a["audit"] = b["audit"] = None
    assert a == b  # deterministic
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    res = run("evaluate", orig_path, prot_path, "--report", orig_path, "-q", "-f")
    assert res.exit_code == 3 and "is the input file" in error_line(res)


PLANTED = "123456.789"


def _planted_pair(tmp_path):
    orig = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0, 5.0, float(PLANTED)],
                         "y": [10.5, 11.25, 12.75, 13.5, 14.0, 98765.4321]})
    prot = orig.copy()
    for col in ("x", "y"):
        prot[col] = orig[col].groupby([0, 0, 0, 1, 1, 1]).transform("mean")
    return write(tmp_path / "o.csv", orig), write(tmp_path / "p.csv", prot)


def test_reports_hold_no_original_values_unless_internal(tmp_path):
    o, p = _planted_pair(tmp_path)
    secrets = (PLANTED, "123456.79", "123457", "1.23457e", "98765.4321", "98765.43")
    res = run("evaluate", o, p, "-k", 3, "--html", tmp_path / "r.html", "--report", tmp_path / "r.json",
              "--format", "json")
    assert res.exit_code == 0, res.output
    html = (tmp_path / "r.html").read_text()
    ET.fromstring(html.split("\n", 1)[1])  # well-formed (XHTML-compatible)
    for text in (html, (tmp_path / "r.json").read_text(), res.stdout, res.stderr):
        for secret in secrets:
            assert secret not in text, secret
    res = run("evaluate", o, p, "-k", 3, "--html", tmp_path / "i.html", "--report", tmp_path / "i.json",
              "--internal", "-q")
    assert res.exit_code == 0, res.output
    html = (tmp_path / "i.html").read_text()
    assert PLANTED in html and "98765.4321" in html and "Do not release" in html
    rep = json.loads((tmp_path / "i.json").read_text())
    assert rep["internal"] is True
    assert rep["internal_details"]["columns"][0]["original"]["max"] == float(PLANTED)


def test_protect_evaluate_adds_the_risk_section(pair, tmp_path):
    orig_path, _, _, _ = pair
    out, rep_path = tmp_path / "o.csv", tmp_path / "r.json"
    res = run("protect", orig_path, "-o", out, "-k", 2, "--columns", "a,b", "--evaluate", "-r", rep_path)
    assert res.exit_code == 0, res.output
    assert "DR = 0.25 * DLD" in res.stderr
    rep = json.loads(rep_path.read_text())
    ev = rep["evaluation"]
    assert ev["columns"] == ["a", "b"] and ev["records"] == {"evaluated": 8, "left_out_incomplete": 0}
    assert ev["summary"]["il_sse"] == pytest.approx(rep["blocks"][0]["il_sse"])
    assert ev["summary"]["k_prime"] == pytest.approx(rep["blocks"][0]["k_prime"])
    # the same code as sdc evaluate on the written file
    direct = api.evaluate(orig_path, out, columns=["a", "b"], k=2)
    # (sdc evaluate adds the analysis-utility measures, which protect --evaluate leaves out)
    for key in ("ci_overlap", "pmse", "groups"):
        direct["measures"]["utility"].pop(key)
    assert direct["measures"] == ev["measures"]
    plain = tmp_path / "plain.json"
    assert run("protect", orig_path, "-o", tmp_path / "o2.csv", "-k", 2, "--columns", "a,b", "-r", plain,
               "-q").exit_code == 0
    assert "evaluation" not in json.loads(plain.read_text())
