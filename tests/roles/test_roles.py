"""Roles: where each column's role comes from, sdc roles, the default run's refusal,
mu-ARGUS metadata files, plan [roles], and dates released as dates."""

from __future__ import annotations

import json
import time
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import only_error_line, run_cli
from microagg_cli import schemas
from microagg_cli.blocking import parse_plan, plan_to_json, plan_to_toml
from microagg_cli.errors import DataError, InvalidParameterError
from microagg_cli.io import read_table
from microagg_cli.request import ProtectRequest
from microagg_cli.roles import (
    ROLES,
    column_evidence,
    date_format,
    explicit_roles,
    file_declarations,
    name_hint,
    parse_rda,
    propose_roles,
    resolve_default,
    strong_name_hint,
    roles_to_toml,
)

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_data"
HOUSEHOLD = SAMPLE / "household.csv"
CENSUS = SAMPLE / "census.csv"
WATER = SAMPLE / "water-treatment.csv"
CODES = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "hhcivil"]
CONTINUOUS = ["age", "expend", "income", "savings"]

#: the mu-ARGUS demo metadata file's layout (fixed format: name, start, width, missing codes)
DEMODATA = """REGION 1  4 9999 9998
  <RECODABLE>
  <CODELIST> "Regio.cdl"
  <IDLEVEL>  1
  <SUPPRESSWEIGHT>  50
  <TRUNCABLE>
SEX 5  1 9
  <RECODABLE>
  <IDLEVEL>  2
WEIGHT 44  6
  <NUMERIC>
  <DECIMALS>  2
  <WEIGHT>
INCOME 50  8 99999999
  <NUMERIC>
HHNUM 58 4 "9998" "9999"
  <HOUSE_ID>
NOTE 62 10
"""


def mixed_frame(n: int = 200, seed: int = 3) -> pd.DataFrame:
    """A survey-like file: codes, a genuine integer attribute (age), money, a weight, an id."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "person": np.arange(1, n + 1),
        "region": rng.integers(1, 7, n),
        "sex": rng.integers(1, 3, n),
        "age": rng.integers(0, 90, n),
        "income": np.round(rng.lognormal(8, 1, n), 2),
        "visits": rng.poisson(40, n),
        "pweight": np.round(rng.uniform(50, 150, n), 1),
    })


# ----------------------------------------------------------------- mu-ARGUS .rda


def test_rda_roles_missing_codes_and_ignored_tags():
    meta = parse_rda(DEMODATA, "demo.rda")
    assert meta.separator is None
    assert meta.roles() == {"REGION": "categorical", "SEX": "categorical", "WEIGHT": "weight",
                            "INCOME": "continuous", "HHNUM": "identifier"}
    assert meta.missing_codes() == {"REGION": ("9999", "9998"), "SEX": ("9",), "INCOME": ("99999999",),
                                    "HHNUM": ("9998", "9999")}
    by_name = {v.name: v for v in meta.variables}
    assert by_name["WEIGHT"].decimals == 2 and by_name["WEIGHT"].line == 10
    assert by_name["NOTE"].role is None  # neither recodable nor numeric: no role declared


def test_rda_free_format_has_no_start_column():
    meta = parse_rda('<SEPARATOR> ";"\nREGION   4 9999 9998\n  <RECODABLE>\nINCOME 8\n  <NUMERIC>\n', "f.rda")
    assert meta.separator == ";"
    assert meta.missing_codes() == {"REGION": ("9999", "9998")}
    assert meta.roles() == {"REGION": "categorical", "INCOME": "continuous"}
    assert parse_rda('<SEPARATOR> TAB\nA 2\n', "t.rda").separator == "\t"


@pytest.mark.parametrize("text,line,word", [
    ("A 1 2\n  <RECODABLE>\n  <BOGUS>\n", 3, "unknown tag <BOGUS>"),
    ("A 1 2\nB 3\n", 2, "width"),                       # fixed format: start and width
    ('<SEPARATOR> ","\nA x\n', 2, "width"),
    ("  <RECODABLE>\n", 1, "before the first variable"),
    ("A 1 2\n  stray words\n", 2, "not a <TAG>"),
    ("A 1 2\n  <IDLEVEL> high\n", 2, "integer"),
    ("A 1 2\n  <CODELIST>\n", 2, "takes 1"),
    ("A 1 2 7 8 9\n", 1, "at most 2"),
    ("A 1 2\nB 3 1\na 4 1\n", 3, "described twice"),
    ('<SEPARATOR> ",,"\nA 2\n', 1, "one character"),
    ('A 1 2 "9\n', 1, "unclosed quote"),
])
def test_rda_malformed_lines_name_their_line(text, line, word):
    with pytest.raises(DataError) as exc:
        parse_rda(text, "m.rda")
    assert f"m.rda, line {line}:" in str(exc.value) and word in str(exc.value)
    assert exc.value.exit_code == 3


def test_sample_rda_describes_household():
    meta = parse_rda((SAMPLE / "household.rda").read_text(), "household.rda")
    roles = meta.roles()
    assert [c for c, r in roles.items() if r == "categorical"] == CODES
    assert roles["sampling_weight"] == "weight" and roles["ori_hid"] == "identifier"
    assert {c for c, r in roles.items() if r == "continuous"} == set(CONTINUOUS) | {"household_weights"}
    assert meta.missing_codes()["income"] == ("999999998", "999999999")
    assert set(meta.roles()) == set(pd.read_csv(HOUSEHOLD, nrows=1).columns)


def test_metadata_cli_applies_roles_and_missing_codes(tmp_path):
    df = mixed_frame(120)
    df.loc[[4, 9, 50], "income"] = 99999
    df.loc[[7], "region"] = 9
    src, out, rep = tmp_path / "s.csv", tmp_path / "o.csv", tmp_path / "r.json"
    df.drop(columns=["person", "visits"]).to_csv(src, index=False)
    rda = tmp_path / "s.rda"
    rda.write_text('<SEPARATOR> ","\nregion 1 9\n  <RECODABLE>\nsex 1\n  <RECODABLE>\nage 2\n  <NUMERIC>\n'
                   'income 8 "99999"\n  <NUMERIC>\n  <DECIMALS> 2\npweight 5\n  <NUMERIC>\n  <WEIGHT>\n')
    # declared missing codes in a protected column: refused under --missing error, naming the code
    res = run_cli("protect", src, "-o", out, "-k", 3, "--metadata", rda)
    assert res.exit_code == 3 and "'income'" in res.stderr and "99999" in res.stderr and "s.rda" in res.stderr
    assert not out.exists()
    # the categorical keys are grouped (mixed microaggregation), which takes --missing complete
    res = run_cli("protect", src, "-o", out, "-k", 3, "--metadata", rda, "--missing", "complete", "-r", rep, "-q")
    assert res.exit_code == 0, res.stderr
    r = json.loads(rep.read_text())
    assert r["parameters"]["weights"] == "pweight"  # <WEIGHT>
    assert r["declared_missing"]["income"] == {"99999": {"label": None, "count": 3}}
    assert r["declared_missing"]["region"] == {"9": {"label": None, "count": 1}}
    got = pd.read_csv(out)
    assert got["income"].iloc[[4, 9, 50]].isna().all()  # never averaged into a group
    assert got["income"].max() < 99999 / 2  # no group mean carries the code
    assert got["pweight"].equals(df["pweight"])  # the weight is released unchanged
    # categorical keys are never averaged: every released code is one of the file's codes
    for c in ("region", "sex"):
        assert set(got[c].dropna()) <= set(df[c]) | {9}
    # protected: age and income only
    assert not got["age"].equals(df["age"]) and set(r["blocks"][0]["columns"]) == {"age", "income"}


def test_metadata_file_errors_exit_3(tmp_path):
    src = tmp_path / "s.csv"
    mixed_frame(30).to_csv(src, index=False)
    bad = tmp_path / "bad.rda"
    bad.write_text("age 1 2\n  <NUMERIC>\n  <SECRET>\n")
    res = run_cli("protect", src, "-o", tmp_path / "o.csv", "-k", 3, "--metadata", bad)
    assert res.exit_code == 3 and "bad.rda, line 3" in only_error_line(res)
    res = run_cli("protect", src, "-o", tmp_path / "o.csv", "-k", 3, "--metadata", tmp_path / "none.rda")
    assert res.exit_code == 3 and "does not exist" in only_error_line(res)


# ----------------------------------------------------------------- evidence


def test_name_hints():
    assert name_hint("sampling_weight") == name_hint("household_weights") == name_hint("PWGT") == "weight"
    assert name_hint("hhWeight") == name_hint("wgt") == "weight"
    # inside a word: a weak hint, which the values must support (census's AFNLWGT is unique per record)
    assert name_hint("AFNLWGT") == "weight" and strong_name_hint("AFNLWGT") is None
    assert name_hint("OCCUCODE") == name_hint("COMPCODE") == name_hint("REG") == "code"
    assert name_hint("PERSONID") == name_hint("HHNR") == name_hint("CASENUM") == "identifier"
    assert strong_name_hint("OCCUCODE") is None
    assert name_hint("ori_hid") == name_hint("person_id") == name_hint("ID") == name_hint("hhid") == "identifier"
    assert name_hint("regionCode") == name_hint("sex") == "code"
    assert name_hint("income") is name_hint("width") is name_hint("valid") is None


@pytest.mark.parametrize("path", [CENSUS, WATER], ids=["census", "water"])
def test_no_false_alarm_on_continuous_files(path):
    table = read_table(path)
    for c in table.columns:
        ev = column_evidence(table, c)
        assert ev.suspect is None or ev.kind != "numeric", (c, ev.reasons)
        # water's day label is text unique per record: an identifier, never released by accident
        assert ev.proposed in ("continuous", "passthrough") or (ev.kind == "text" and ev.proposed == "identifier")


def test_household_evidence_by_hand():
    table = read_table(HOUSEHOLD)
    ev = {e.column: e for e in propose_roles(table)}
    for c in CODES:
        assert ev[c].suspect == "code" and ev[c].proposed == "categorical" and ev[c].integer
    assert ev["sex"].distinct == 2 and ev["water"].distinct == 8 and ev["relat"].distinct == 9
    assert ev["age"].suspect is None and ev["age"].distinct == 88 and ev["age"].proposed == "continuous"
    assert ev["expend"].unique and not ev["expend"].consecutive and ev["expend"].suspect is None
    assert ev["ori_hid"].consecutive and not ev["ori_hid"].unique and ev["ori_hid"].proposed == "identifier"
    assert ev["sampling_weight"].distinct == 1 and ev["sampling_weight"].proposed == "weight"
    # one weight at most: the second weight-like column is released unchanged
    assert ev["household_weights"].suspect == "weight" and ev["household_weights"].proposed == "passthrough"
    assert ev["urbrur"].top_share == pytest.approx((pd.read_csv(HOUSEHOLD)["urbrur"] == 2).mean())


def test_small_and_constant_columns_are_not_judged_by_values():
    t = read_table_frame(pd.DataFrame({"a": [1, 2, 3, 4, 5, 6], "b": [1, 1, 2, 2, 1, 2], "c": [7] * 6}))
    assert all(column_evidence(t, c).suspect is None for c in "abc")


def read_table_frame(df: pd.DataFrame):
    from microagg_cli.frames import as_table

    return as_table(df)


def test_zero_share_and_consecutive_ids():
    n = 100
    df = pd.DataFrame({"rowno": np.arange(n), "claims": np.r_[np.zeros(70), np.arange(1, 31) * 13.5]})
    t = read_table_frame(df)
    rowno, claims = column_evidence(t, "rowno"), column_evidence(t, "claims")
    assert rowno.suspect == "identifier" and rowno.unique and rowno.consecutive
    assert claims.zero_share == pytest.approx(0.7) and "70 % zeros" in claims.describe()
    assert claims.suspect is None


# ----------------------------------------------------------------- default run


def test_household_default_run_refuses_fast_and_writes_nothing(tmp_path):
    out = tmp_path / "out.csv"
    t0 = time.perf_counter()
    res = run_cli("protect", HOUSEHOLD, "-o", out, "-k", 3)
    seconds = time.perf_counter() - t0
    line = only_error_line(res)
    assert res.exit_code == 3 and seconds < 1.0
    for c in CODES + ["sampling_weight", "household_weights", "ori_hid"]:
        assert f"{c} (" in line
    for c in CONTINUOUS:
        assert f"{c} (" not in line
    assert "sdc roles" in line and "integer codes" in line and "weight-like name" in line
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_census_default_run_unchanged(tmp_path):
    """The default selection of an all-continuous file: the same bytes as naming every column."""
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    assert run_cli("protect", CENSUS, "-o", a, "-k", 3, "-q").exit_code == 0
    cols = ",".join(pd.read_csv(CENSUS, nrows=1).columns)
    assert run_cli("protect", CENSUS, "-o", b, "-k", 3, "-q", "--columns", cols).exit_code == 0
    assert a.read_bytes() == b.read_bytes()


def test_declaring_the_roles_lets_household_run(tmp_path):
    out, rep = tmp_path / "o.csv", tmp_path / "r.json"
    res = run_cli("protect", HOUSEHOLD, "-o", out, "-k", 3, "-q", "--passthrough", ",".join(CODES),
                  "--weights", "sampling_weight", "--drop", "ori_hid", "--passthrough", "household_weights")
    # --passthrough given twice: click keeps the last; the codes are then undeclared again
    assert res.exit_code == 3 and "urbrur (" in res.stderr and "household_weights (" not in res.stderr
    res = run_cli("protect", HOUSEHOLD, "-o", out, "-k", 3, "-q", "--passthrough",
                  ",".join(CODES + ["household_weights"]), "--weights", "sampling_weight", "--drop", "ori_hid",
                  "-r", rep)
    assert res.exit_code == 0, res.stderr
    assert json.loads(rep.read_text())["blocks"][0]["columns"] == CONTINUOUS


def test_default_run_refusal_in_protect_frame():
    from microagg_cli.frames import protect_frame

    df = mixed_frame()
    with pytest.raises(DataError) as exc:
        protect_frame(df, 3)
    msg = str(exc.value)
    for c in ("person", "region", "sex", "pweight"):
        assert f"{c} (" in msg
    for c in ("age", "income", "visits"):
        assert f"{c} (" not in msg
    with pytest.raises(DataError) as exc:  # the protected columns named; the others would go out as they are
        protect_frame(df, 3, columns=["age", "income", "visits"])
    msg = str(exc.value)
    assert "would be released unchanged: person (" in msg and "--drop person" in msg
    assert "region (" in msg and "sex (" in msg and "--categorical region,sex" in msg and "pweight (" not in msg
    out, rep = protect_frame(df, 3, columns=["age", "income", "visits"], drop=["person"],
                             passthrough=["region", "sex"])  # explicit: no judgement
    assert rep["blocks"][0]["columns"] == ["age", "income", "visits"]
    assert rep["privacy_check"]["not_covered"] == ["region", "sex", "pweight"]


def test_contradictory_roles_exit_2(tmp_path):
    src = tmp_path / "s.csv"
    mixed_frame(60).to_csv(src, index=False)
    o = tmp_path / "o.csv"
    for args, col in ((("--categorical", "sex", "--columns", "sex,age"), "sex"),
                      (("--categorical", "region", "--ordinal", "region"), "region"),
                      (("--ordinal", "age", "--weights", "age"), "age"),
                      (("--categorical", "sex", "--drop", "sex"), "sex")):
        res = run_cli("protect", src, "-o", o, "-k", 3, *args)
        line = only_error_line(res)
        assert res.exit_code == 2 and f"column {col!r} is given two roles" in line, args
    req = ProtectRequest.build(k=3, categorical=["a"], passthrough=["a"])
    with pytest.raises(InvalidParameterError, match="'a' is given two roles: categorical"):
        explicit_roles(req)


# ----------------------------------------------------------------- file metadata


def test_spss_measure_levels_value_labels_and_weight_are_roles():
    table = read_table(SAMPLE / "household.sav")
    declared = file_declarations(table)
    assert {c for c, (r, _by, _s) in declared.items() if r == "categorical"} == set(CODES) | {"ori_hid"}
    assert declared["sampling_weight"][0] == "weight"
    assert declared["age"][:1] == ("continuous",) and declared["age"][2] is False  # scale: weak
    changes = resolve_default(table, ProtectRequest.build(k=3))
    assert changes == {"categorical": CODES + ["ori_hid"], "weights": "sampling_weight"}
    req = ProtectRequest.build(k=3).replace(**changes)
    assert not set(req.roles) & set(CONTINUOUS + ["household_weights"])  # those are protected
    # another weight chosen: the declared one is released unchanged, never averaged
    changes = resolve_default(table, ProtectRequest.build(k=3, weights="household_weights"))
    assert changes["passthrough"] == ["sampling_weight"] and "weights" not in changes


def test_stata_value_labels_are_categorical_and_missing_labels_are_not():
    table = read_table(SAMPLE / "household.dta")
    declared = file_declarations(table)
    assert {c for c, (r, _b, _s) in declared.items() if r == "categorical"} == set(CODES)
    assert "income" not in declared  # its labels name the declared missing codes .a/.b only
    res = run_cli("protect", SAMPLE / "household.dta", "-o", "unused.csv", "-k", 3)
    assert res.exit_code == 3  # no weight variable in .dta: the weights are undeclared
    line = only_error_line(res)
    assert "sampling_weight (" in line and "urbrur (" not in line


def test_parquet_categoricals_are_keys(tmp_path):
    df = mixed_frame(60)
    df["region"] = pd.Categorical(df["region"])
    df["sex"] = pd.Categorical(df["sex"].map({1: "m", 2: "f"}))
    df["band"] = pd.Categorical(np.where(df["age"] < 40, "young", "old"), categories=["young", "old"], ordered=True)
    path = tmp_path / "d.parquet"
    df.drop(columns=["person", "pweight"]).to_parquet(path)
    table = read_table(path)
    declared = {c: r for c, (r, _b, _s) in file_declarations(table).items()}
    assert declared == {"region": "categorical", "sex": "categorical", "band": "ordinal"}
    assert resolve_default(table, ProtectRequest.build(k=3)) == {"categorical": ["region", "sex"],
                                                                  "ordinal": ["band"]}


@pytest.fixture(scope="module")
def sav_default_run(tmp_path_factory):
    """``sdc protect household.sav -k 3 --missing complete``: (output, report), one run for the
    tests below."""
    folder = tmp_path_factory.mktemp("sav")
    out, rep = folder / "o.sav", folder / "r.json"
    res = run_cli("protect", SAMPLE / "household.sav", "-o", out, "-k", 3, "--missing", "complete", "-q",
                  "-r", rep)
    # the file's metadata is evidence, not permission: a scale weight and a nominal household id are refused
    assert res.exit_code == 3
    line = only_error_line(res)
    assert "household_weights (its SPSS measure level (scale) says continuous, but the values suggest weight" in line
    assert "ori_hid (its SPSS measure level (nominal) says categorical, but the values suggest identifier" in line
    assert "--passthrough household_weights" in line and "--drop ori_hid" in line
    res = run_cli("protect", SAMPLE / "household.sav", "-o", out, "-k", 3, "--missing", "complete", "-q",
                  "-r", rep, "--passthrough", "household_weights", "--drop", "ori_hid")  # the advice, followed
    assert res.exit_code == 0, res.stderr
    schemas.validate(json.loads(rep.read_text()))
    return out, rep


def test_sav_default_run_never_averages_categorical_columns(sav_default_run):
    import pyreadstat

    out, rep = sav_default_run
    d0, m0 = pyreadstat.read_sav(SAMPLE / "household.sav", user_missing=True)
    d1, m1 = pyreadstat.read_sav(out, user_missing=True)
    for c in CODES:
        assert set(d1[c].dropna()) <= set(d0[c].dropna()), c  # codes, never means
        assert m1.variable_value_labels[c] == m0.variable_value_labels[c]
        assert m1.variable_measure[c] == "nominal"
    r = json.loads(rep.read_text())
    assert r["parameters"]["weights"] == "sampling_weight"
    assert r["blocks"][0]["columns"] == ["age", "expend", "income", "savings"]
    assert r["privacy_check"]["passed"] and "household_weights" in r["privacy_check"]["not_covered"]
    assert "ori_hid" not in pyreadstat.read_sav(out)[0].columns


def test_sav_default_run_is_k_anonymous_on_every_key(sav_default_run):
    import pyreadstat

    out, _rep = sav_default_run
    d1, _m1 = pyreadstat.read_sav(out)
    # the released keys and the protected columns without declared missing codes (a blanked
    # cell would split its group's released rows)
    keys = CODES + ["age"]
    sizes = d1[keys].astype(str).value_counts()
    assert sizes.min() >= 3


# ----------------------------------------------------------------- sdc roles and plans


def test_sdc_roles_round_trip_through_protect(tmp_path):
    roles, out, rep = tmp_path / "roles.toml", tmp_path / "o.csv", tmp_path / "r.json"
    res = run_cli("roles", HOUSEHOLD, "-o", roles)
    assert res.exit_code == 0 and roles.exists()
    doc = tomllib.loads(roles.read_text())["roles"]
    assert doc["continuous"] == CONTINUOUS and doc["categorical"] == CODES
    assert doc["weight"] == "sampling_weight" and doc["identifier"] == ["ori_hid"]
    assert doc["passthrough"] == ["household_weights"]
    text = roles.read_text()
    assert '"sex",  # numbers; 2 distinct values; integers' in text  # evidence per column
    res = run_cli("protect", HOUSEHOLD, "--plan", roles, "-k", 3, "-o", out, "-q", "-r", rep)
    assert res.exit_code == 0, res.stderr
    r = json.loads(rep.read_text())
    assert r["parameters"]["weights"] == "sampling_weight" and r["blocks"][0]["columns"] == CONTINUOUS
    got, orig = pd.read_csv(out), pd.read_csv(HOUSEHOLD)
    assert "ori_hid" not in got.columns  # identifier: dropped
    assert got["household_weights"].equals(orig["household_weights"])
    assert got[CONTINUOUS].value_counts().min() >= 3
    # an existing file is replaced only with --force
    res = run_cli("roles", HOUSEHOLD, "-o", roles)
    assert res.exit_code != 0 and "exist" in res.stderr
    assert run_cli("roles", HOUSEHOLD, "-o", roles, "--force").exit_code == 0


def test_sdc_roles_json_and_stdout():
    res = run_cli("roles", HOUSEHOLD, "--format", "json")
    assert res.exit_code == 0
    doc = json.loads(res.stdout)
    assert doc["schema_version"] == "1.1" and doc["input"]["name"] == "household.csv"
    schemas.validate(doc)  # the published schema (sdc schema roles)
    assert doc["command"] == "roles"
    assert doc["roles"]["weight"] == "sampling_weight" and doc["roles"]["categorical"] == CODES
    cols = {c["column"]: c for c in doc["columns"]}
    assert cols["sex"]["distinct"] == 2 and cols["sex"]["integer"] and cols["sex"]["suspect"] == "code"
    assert set(doc["roles"]) == set(ROLES)
    res = run_cli("roles", HOUSEHOLD, "-k", 5)
    assert res.exit_code == 0 and "[defaults]\nk = 5" in res.stdout
    plan = parse_plan(res.stdout)  # the printed file is a valid plan
    assert plan.blocks[0].k == 5 and plan.roles["weight"] == ("sampling_weight",)


def test_roles_with_metadata_and_the_library():
    from microagg_cli import propose_roles as api_propose

    res = api_propose(HOUSEHOLD, metadata=SAMPLE / "household.rda")
    doc = res["document"]
    assert doc["roles"]["identifier"] == ["ori_hid"] and "household_weights" in doc["roles"]["continuous"]
    declared = {c["column"]: c["declared_by"] for c in doc["columns"]}
    assert declared["income"].startswith("household.rda, line ")


def test_plan_roles_parse_write_and_errors():
    text = """version = 1
[defaults]
k = 3
[roles]
continuous = ["a", "b"]
categorical = ["c"]
ordinal = ["d"]
weight = "w"
stratum = ["s"]
keys = ["key"]
identifier = ["id"]
passthrough = ["note"]
"""
    plan = parse_plan(text, name="p.toml")
    assert plan.columns == ["a", "b"] and plan.drop == ("id",) and plan.passthrough == ("note",)
    assert plan.roles == {"categorical": ("c",), "ordinal": ("d",), "weight": ("w",), "stratum": ("s",),
                          "keys": ("key",)}
    for written, fmt in ((plan_to_toml(plan), "toml"), (plan_to_json(plan), "json")):
        again = parse_plan(written, fmt=fmt)
        assert again == plan
    with pytest.raises(InvalidParameterError, match=r"p.toml, line 7: column 'a' is given two roles"):
        parse_plan(text.replace('ordinal = ["d"]', 'ordinal = ["a"]'), name="p.toml")
    with pytest.raises(InvalidParameterError, match=r"line 5: unknown key 'categorial'.*did you mean"):
        parse_plan("[defaults]\nk = 3\n[roles]\ncontinuous = ['a']\ncategorial = ['c']\n", name="p.toml")
    with pytest.raises(InvalidParameterError, match="at most one weight"):
        parse_plan("[roles]\ncontinuous = ['a']\nweight = ['u', 'v']\n")
    with pytest.raises(InvalidParameterError, match="exactly the blocks' columns"):
        parse_plan("[roles]\ncontinuous = ['a', 'x']\n[[blocks]]\ncolumns = ['a']\nk = 3\n")
    with pytest.raises(InvalidParameterError, match="no \\[\\[blocks\\]\\]"):
        parse_plan("[roles]\ncategorical = ['c']\n")
    # an old plan (blocks only) is the same plan as before, without roles
    old = parse_plan("[[blocks]]\ncolumns = ['a']\nk = 3\n")
    assert old.roles == {} and "[roles]" not in plan_to_toml(old)


def test_plan_weight_against_option_and_missing_role_column(tmp_path):
    src = tmp_path / "s.csv"
    mixed_frame(60).to_csv(src, index=False)
    plan = tmp_path / "p.toml"
    plan.write_text('[roles]\ncontinuous = ["age", "income", "visits"]\nweight = "pweight"\n'
                    'categorical = ["region", "sex"]\nidentifier = ["person"]\n')
    o = tmp_path / "o.csv"
    res = run_cli("protect", src, "--plan", plan, "-k", 3, "-o", o, "--weights", "visits")
    assert res.exit_code == 2 and "the plan's weight is 'pweight'" in only_error_line(res)
    res = run_cli("protect", src, "--plan", plan, "-k", 3, "-o", o, "--categorical", "age")
    assert res.exit_code == 2 and "'age' is given two roles" in only_error_line(res)
    assert run_cli("protect", src, "--plan", plan, "-k", 3, "-o", o, "-q").exit_code == 0
    plan.write_text('[roles]\ncontinuous = ["age"]\ncategorical = ["nowhere"]\n')
    res = run_cli("protect", src, "--plan", plan, "-k", 3, "-o", o, "-f")
    assert res.exit_code == 3 and "nowhere" in only_error_line(res)


@settings(max_examples=25, deadline=None)
@given(st.integers(30, 120), st.integers(0, 10_000), st.lists(st.sampled_from(["code", "money", "id", "w", "text"]),
                                                          min_size=1, max_size=6))
def test_every_column_gets_one_role_and_the_file_reads_back(n, seed, kinds):
    """Invariant: every column is proposed exactly one role, at most one weight, and the
    TOML proposal parses as a plan holding the same roles."""
    rng = np.random.default_rng(seed)
    cols = {}
    for i, kind in enumerate(kinds):
        cols[f"{kind}{i}" if kind != "w" else f"weight{i}"] = {
            "code": rng.integers(1, 5, n), "money": rng.normal(1000, 300, n), "id": np.arange(n),
            "w": rng.uniform(1, 3, n), "text": rng.choice(["a b", "c d", "e f"], n)}[kind]
    if not any(k == "money" for k in kinds):
        cols["money_x"] = rng.normal(size=n)
    table = read_table_frame(pd.DataFrame(cols))
    ev = propose_roles(table)
    assert [e.column for e in ev] == list(cols)
    assert all(e.proposed in ROLES for e in ev)
    assert sum(e.proposed == "weight" for e in ev) <= 1
    plan = parse_plan(roles_to_toml(ev), default_k=3)
    back = {c: "continuous" for c in plan.columns}
    back.update({c: "identifier" for c in plan.drop})
    back.update({c: "passthrough" for c in plan.passthrough})
    for role, names in plan.roles.items():
        back.update({c: role for c in names})
    assert back == {e.column: e.proposed for e in ev}


# ----------------------------------------------------------------- dates


def test_date_formats():
    assert date_format("DATE11", "spss") == "day" and date_format("DATETIME20", "spss") == "second"
    assert date_format("F8.2", "spss") is None and date_format("%td", "stata") == "day"
    assert date_format("%tc", "stata") == "millisecond" and date_format("%10.0g", "stata") is None
    assert date_format("DATE9.", "sas") == "day" and date_format("DATETIME20.", "sas") == "second"
    assert date_format("BEST12.", "sas") is None


def test_spss_and_stata_dates_refused_by_default_and_released_as_days(tmp_path):
    import datetime as dt

    import pyreadstat

    rng = np.random.default_rng(1)
    d = pd.DataFrame({"born": [dt.date(1950, 1, 1) + dt.timedelta(days=int(x)) for x in rng.integers(0, 20000, 40)],
                      "x": rng.normal(size=40)})
    for suffix, writer in ((".sav", pyreadstat.write_sav), (".dta", pyreadstat.write_dta)):
        src, out = tmp_path / f"d{suffix}", tmp_path / f"o{suffix}"
        writer(d, src)
        res = run_cli("protect", src, "-o", out, "-k", 3)
        assert res.exit_code == 3 and "born (a date" in only_error_line(res)
        assert run_cli("protect", src, "-o", out, "-k", 3, "-q", "-c", "born,x").exit_code == 0
        raw, _m = (pyreadstat.read_sav if suffix == ".sav" else pyreadstat.read_dta)(
            out, disable_datetime_conversion=True)
        step = 86400.0 if suffix == ".sav" else 1.0  # SPSS: seconds since 1582; Stata: days since 1960
        assert np.all(np.mod(raw["born"].to_numpy(), step) == 0)
        assert raw["born"].nunique() < d["born"].nunique()  # protected: groups share a date


def test_csv_iso_dates_pass_by_default_and_are_released_as_dates(tmp_path):
    rng = np.random.default_rng(0)
    n = 40
    born = (np.datetime64("1950-01-01") + rng.integers(0, 20000, n).astype("timedelta64[D]")).astype(str)
    seen = (np.datetime64("2020-01-01T00:00:00") + rng.integers(0, 10**7, n).astype("timedelta64[s]")).astype(str)
    df = pd.DataFrame({"born": born, "seen": [s.replace("T", " ") for s in seen], "x": rng.normal(size=n).round(3)})
    df.loc[3, "born"] = ""
    src, out = tmp_path / "d.csv", tmp_path / "o.csv"
    df.to_csv(src, index=False)
    res = run_cli("protect", src, "-o", out, "-k", 3, "-q")  # dates unique per record: never released by accident
    assert res.exit_code == 3 and "born (dates, 39 distinct values" in only_error_line(res)
    assert run_cli("protect", src, "-o", out, "-k", 3, "-q", "--passthrough", "born,seen").exit_code == 0
    assert pd.read_csv(out, dtype=str, keep_default_na=False)["born"].tolist() == df["born"].tolist()
    assert run_cli("protect", src, "-o", out, "-k", 3, "-q", "-f", "-c", "born,seen,x",
                   "--missing", "available").exit_code == 0
    got = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert got["born"][3] == ""  # and the born of its group, blanked so that the group releases one row
    assert (got["born"] == "").sum() >= 3
    assert all(len(v) == 10 and v[4] == "-" for v in got["born"] if v)  # days, not fractions
    assert all(len(v) == 19 and v[10] == " " for v in got["seen"])  # whole seconds, the file's separator
    days = pd.to_datetime(got["born"][got["born"] != ""])
    assert days.nunique() < n - 1 and days.min() >= pd.Timestamp("1950-01-01")


def test_parquet_timestamps_released_in_their_type(tmp_path):
    rng = np.random.default_rng(2)
    n = 30
    t = pa.table({"day": pa.array((np.datetime64("2000-01-01") + rng.integers(0, 5000, n).astype("timedelta64[D]"))
                                  .astype("datetime64[us]")),
                  "d32": pa.array(np.datetime64("2000-01-01") + rng.integers(0, 5000, n).astype("timedelta64[D]")),
                  "x": rng.normal(size=n)})
    src, out = tmp_path / "d.parquet", tmp_path / "o.parquet"
    pq.write_table(t, src)
    assert run_cli("protect", src, "-o", out, "-k", 3, "-q").exit_code == 3  # unique per record: never by accident
    assert run_cli("protect", src, "-o", out, "-k", 3, "-q", "--passthrough", "day,d32").exit_code == 0
    assert pq.read_table(out).column("day").equals(t.column("day"))
    assert run_cli("protect", src, "-o", out, "-k", 3, "-q", "-f", "-c", "day,d32,x").exit_code == 0
    got = pq.read_table(out)
    assert got.schema.field("day").type == pa.timestamp("us") and got.schema.field("d32").type == pa.date32()
    us = np.asarray(got.column("day").cast(pa.int64()))
    assert np.all(us % (86400 * 10**6) == 0)  # midnights in, midnights out
    assert len(set(got.column("d32").to_pylist())) <= n // 3


def test_streamed_default_run_refuses_too(tmp_path):
    df = mixed_frame(100)
    df["region"] = pd.Categorical(df["region"])
    src = tmp_path / "d.parquet"
    df.to_parquet(src)
    res = run_cli("protect", src, "-o", tmp_path / "o.parquet", "-k", 3, "--engine", "local")
    line = only_error_line(res)
    assert res.exit_code == 3 and "region (" in line and "sex (integer codes" in line
    assert "pweight (" in line and "person (" in line and "age (" not in line
    res = run_cli("protect", src, "-o", tmp_path / "o.parquet", "-k", 3, "--engine", "local", "-q",
                  "--drop", "person", "--passthrough", "region,sex", "--weights", "pweight")
    assert res.exit_code == 0, res.stderr
    res = run_cli("protect", src, "-o", tmp_path / "o2.parquet", "-k", 3, "--engine", "local",
                  "--metadata", SAMPLE / "household.rda")
    assert res.exit_code == 2 and "--metadata" in only_error_line(res)
