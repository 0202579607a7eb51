"""``sdc risk``: the disclosure risk of one file over its categorical keys."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import run_cli

HOUSEHOLD = Path(__file__).resolve().parents[2] / "sample_data" / "household.csv"
RDA = HOUSEHOLD.with_suffix(".rda")
KEYS = ("--keys", "urbrur,water,sex,age")


def _report(tmp_path, *args):
    rep = tmp_path / "risk.json"
    res = run_cli("risk", HOUSEHOLD, *KEYS, "--report", rep, "-q", *args)
    assert res.exit_code == 0, res.output
    return json.loads(rep.read_text())


def test_household_figures(tmp_path):
    doc = _report(tmp_path, "--weights", "sampling_weight", "--household-id", "ori_hid", "--sensitive", "income")
    assert doc["command"] == "risk" and doc["internal"] is False
    assert [(v["k"], v["records"]) for v in doc["violations"]] == [(2, 330), (3, 674), (5, 1288)]
    assert doc["frequencies"]["sample_uniques"] == 330
    assert doc["frequencies"]["population"] == pytest.approx(100.0 * 4580)
    g = doc["global"]
    assert g["expected_reidentifications"] == pytest.approx(24.78, abs=0.005)
    assert g["percent"] == pytest.approx(100 * g["expected_reidentifications"] / 4580)
    assert doc["household"]["expected_reidentifications"] == pytest.approx(117.20, abs=0.005)
    assert doc["household"]["households"] == 1000
    # a sample unique with F_k = 100 (every weight is 100): p = 0.01, r = p / (1 - p) log(1 / p)
    assert doc["individual"]["quantiles"]["max"] == pytest.approx(0.01 / 0.99 * np.log(100))
    assert doc["l_diversity"][0]["records_below"] >= 330  # every sample unique has l = 1
    assert doc["suda2"]["max_size"] == 4 and doc["suda2"]["records_with_msu"] == 330
    assert doc["combinations"]["max_size"] == 3 and doc["combinations"]["count"] == 14
    top = doc["top_records"][0]
    assert top["fk"] == 1 and "keys" not in top
    assert len(doc["top_records"]) == 20


def test_unweighted_risk_is_one_over_fk(tmp_path):
    doc = _report(tmp_path, "--no-suda", "--top", "3")
    assert doc["suda2"] is None
    assert doc["individual"]["quantiles"]["max"] == 1.0
    # without weights the file is the population: ER = number of key classes
    assert doc["global"]["expected_reidentifications"] == pytest.approx(doc["frequencies"]["classes"])
    assert [r["risk"] for r in doc["top_records"]] == [1.0, 1.0, 1.0]


def test_internal_shows_key_values_only(tmp_path):
    doc = _report(tmp_path, "--internal", "--top", "2", "--sensitive", "income")
    assert set(doc["top_records"][0]["keys"]) == {"urbrur", "water", "sex", "age"}
    text = (tmp_path / "risk.json").read_text()
    assert "income" in text  # the sensitive variable's name, never its values
    assert '"expend"' not in text


def test_metadata_gives_keys_and_missing_codes(tmp_path):
    rep = tmp_path / "r.json"
    res = run_cli("risk", HOUSEHOLD, "--metadata", RDA, "--report", rep, "-q", "--no-suda")
    assert res.exit_code == 0, res.output
    doc = json.loads(rep.read_text())
    assert doc["parameters"]["keys"] == ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "hhcivil"]
    assert doc["parameters"]["metadata"] == "household.rda"


def test_summary_html_and_json_stdout(tmp_path):
    html = tmp_path / "r.html"
    res = run_cli("risk", HOUSEHOLD, *KEYS, "--weights", "sampling_weight", "--html", html)
    assert res.exit_code == 0
    assert "expected re-identifications" in res.stderr and "3-anonymity 674" in res.stderr
    page = html.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "Combinations of up to 3 keys" in page
    res = run_cli("risk", HOUSEHOLD, *KEYS, "--format", "json", "-q", "--no-suda")
    assert json.loads(res.stdout)["violations"][0]["records"] == 330


def test_gates_exit_5_after_writing_the_report(tmp_path):
    rep = tmp_path / "r.json"
    res = run_cli("risk", HOUSEHOLD, *KEYS, "--weights", "sampling_weight", "--max-global-risk", "0.001",
                  "--max-violations", "10", "--report", rep, "-q", "--no-suda")
    assert res.exit_code == 5
    assert "global risk 0.5411 % (expected" in res.stderr and "674 records violate 3-anonymity > --max-violations 10" in res.stderr
    doc = json.loads(rep.read_text())
    assert doc["gates"]["passed"] is False
    ok = run_cli("risk", HOUSEHOLD, *KEYS, "--weights", "sampling_weight", "--max-global-risk", "0.01", "-q",
                 "--no-suda")
    assert ok.exit_code == 0


def _write(tmp_path, text):
    p = tmp_path / "d.csv"
    p.write_text(text)
    return p


@pytest.mark.parametrize("args,code,message", [
    (("--keys", "a,nope"), 3, "no column 'nope'"),
    (("--keys", "a", "--weights", "w0"), 3, "must be > 0"),
    (("--keys", "a", "--weights", "wna"), 3, "missing value"),
    (("--keys", "a", "--sensitive", "a"), 2, "also a key"),
    (("--keys", "a,h", "--household-id", "h"), 2, "also a key"),
    (("--keys", "a", "--weights", "w", "--household-id", "h"), 3, "mixes sampling weights"),
    (("--keys", "a", "--max-global-risk", "5"), 2, "share in [0, 1]"),
    (("--keys", "a", "-k", "1"), 2, "k must be an integer >= 2"),
    ((), 2, "no key variables"),
])
def test_bad_input_one_line(tmp_path, args, code, message):
    data = _write(tmp_path, "a,b,w,w0,wna,h\n1,x,10,10,1,1\n1,y,20,0,,1\n2,x,10,5,3,2\n")
    res = run_cli("risk", data, *args, "-q")
    assert res.exit_code == code, res.output
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: ") and message in lines[0], res.stderr


def test_missing_key_matches_any_value(tmp_path):
    data = _write(tmp_path, "a,b\n1,x\n1,\n2,y\n")
    rep = tmp_path / "r.json"
    assert run_cli("risk", data, "--keys", "a,b", "--report", rep, "-q", "--top", "3").exit_code == 0
    doc = json.loads(rep.read_text())
    assert sorted((r["row"], r["fk"]) for r in doc["top_records"]) == [(1, 2), (2, 2), (3, 1)]
    assert doc["frequencies"]["missing_values"] == 1


def test_api_risk_matches_cli(tmp_path):
    import microagg_cli as sdc

    rep = sdc.risk(HOUSEHOLD, keys=["urbrur", "water", "sex", "age"], weights="sampling_weight", suda=False)
    assert rep["violations"][1]["records"] == 674
    assert rep["global"]["expected_reidentifications"] == pytest.approx(24.78, abs=0.005)


def test_a_mixed_release_holds_k_and_lowers_the_risk(tmp_path):
    out = tmp_path / "release.csv"
    keys = "urbrur,water,sex"
    res = run_cli("protect", HOUSEHOLD, "-o", out, "-k", 3, "--columns", "income,expend", "--categorical", keys,
                  "--drop", "ori_hid", "--passthrough", "roof,walls,electcon,relat,age,hhcivil,savings", "-q")
    assert res.exit_code == 0, res.stderr
    docs = []
    for path in (HOUSEHOLD, out):
        rep = tmp_path / f"{path.stem}.json"
        assert run_cli("risk", path, "--keys", keys, "-k", 3, "--report", rep, "-q").exit_code == 0
        docs.append(json.loads(rep.read_text()))
    before, after = docs
    assert next(v["records"] for v in after["violations"] if v["k"] == 3) == 0
    assert after["global"]["expected_reidentifications"] < before["global"]["expected_reidentifications"]
    # sdc evaluate: the same figures before vs after, and says the release lowered the risk
    res = run_cli("evaluate", HOUSEHOLD, out, "--columns", "income,expend", "--categorical", keys,
                  "-k", 3, "--max-scenarios", 2, "--format", "json")
    assert res.exit_code == 0, res.output
    kr = json.loads(res.stdout)["categorical"]["key_risk"]
    assert kr["before"]["expected_reidentifications"] == pytest.approx(before["global"]["expected_reidentifications"])
    assert kr["after"]["expected_reidentifications"] == pytest.approx(after["global"]["expected_reidentifications"])
    assert kr["after"]["violations"] == 0 and kr["risk_lowered"] is True and kr["k_anonymous_after"] is True
    assert "the release lowered the risk" in res.stderr
    # sdc compare: the released keys' global risk and violations as columns
    grid = tmp_path / "grid.json"
    assert run_cli("compare", HOUSEHOLD, "--columns", "income,expend", "--categorical", keys, "-k", 3,
                   "--max-scenarios", 2, "-o", grid, "-q").exit_code == 0
    row = json.loads(grid.read_text())["rows"][0]
    assert row["key_violations"] == 0
    assert 0 < row["key_risk"] < before["global"]["percent"]


def test_rda_identification_levels_bound_the_combinations(tmp_path):
    rda = tmp_path / "m.rda"
    rda.write_text('<SEPARATOR> ","\nurbrur 1\n  <RECODABLE>\n  <IDLEVEL> 1\nwater 1\n  <RECODABLE>\n  <IDLEVEL> 2\n'
                   'sex 1\n  <RECODABLE>\n  <IDLEVEL> 2\nage 2\n  <RECODABLE>\n  <IDLEVEL> 2\n')
    rep = tmp_path / "r.json"
    assert run_cli("risk", HOUSEHOLD, "--metadata", rda, "--report", rep, "-q", "--no-suda").exit_code == 0
    doc = json.loads(rep.read_text())
    assert doc["parameters"]["combination_size_from"] == "the .rda <IDLEVEL>"
    # 4 keys at most level 2: every pair and single key (4 + 6 = 10), none of 3 keys
    assert doc["combinations"]["max_size"] == 2 and doc["combinations"]["count"] == 10
    assert max(r["size"] for r in doc["combinations"]["rows"]) == 2
    assert run_cli("risk", HOUSEHOLD, "--metadata", rda, "--report", rep, "-q", "-f", "--no-suda",
                   "--max-combination-size", 3).exit_code == 0
    doc = json.loads(rep.read_text())
    assert doc["combinations"]["max_size"] == 3 and doc["parameters"]["combination_size_from"] == "--max-combination-size"
