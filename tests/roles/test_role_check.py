"""The role check of every protect run (Roles II): whatever is declared, nothing averaged,
released unchanged or grouped on against its evidence, and k computed from the release."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import only_error_line, run_cli
from microagg_cli.errors import DataError
from microagg_cli.io import read_table
from microagg_cli.roles import column_evidence, name_hint, parse_rda, release_suspect

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_data"
HOUSEHOLD = SAMPLE / "household.csv"
CODES = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "hhcivil"]


def survey(n: int = 300, seed: int = 5) -> pd.DataFrame:
    """An agency-like file: codes of every kind, text ids and keys, money, a weight."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "pid": [f"P{i:05d}" for i in range(1, n + 1)],
        "name": [f"{a} {b}" for a, b in zip(rng.choice([f"Ann{i}" for i in range(400)], n),
                                              rng.choice([f"Smith{i}" for i in range(400)], n))],
        "nino": [f"QQ{i:06d}C" for i in rng.permutation(n)],
        "district": rng.choice([f"District {c}" for c in "ABCDEFGHIJKLMNOPQRSTUVWXY"], n),
        "REGION": np.arange(n) % 182 + 1,
        "OCCUCODE": rng.integers(100, 160, n),
        "income": np.round(rng.lognormal(9, 1, n), 2),
        "expend": np.round(rng.lognormal(8, 1, n), 2),
        "HHWGT": rng.choice([112.5, 98.25, 130.0, 87.75], n),
    })


def write(df: pd.DataFrame, folder: Path, name: str = "s.csv") -> Path:
    path = folder / name
    if name.endswith(".parquet"):
        df.to_parquet(path)
    else:
        df.to_csv(path, index=False)
    return path


# ----------------------------------------------------------------- evidence


def test_agency_spellings_and_many_level_codes_are_recognised(tmp_path):
    table = read_table(write(survey(), tmp_path))
    ev = {c: column_evidence(table, c) for c in table.columns}
    assert ev["REGION"].suspect == "code" and "code-like name" in ev["REGION"].reasons[0]
    assert ev["OCCUCODE"].suspect == "code" and name_hint("OCCUCODE") == "code"
    assert ev["HHWGT"].suspect == "weight"
    assert ev["income"].suspect is None and ev["expend"].suspect is None
    assert release_suspect(ev["pid"])[0] == "identifier" and release_suspect(ev["nino"])[0] == "identifier"
    assert release_suspect(ev["name"])[0] == "identifier"
    kind, why = release_suspect(ev["district"])
    assert kind == "key" and "25 levels" in why
    assert {e: ev[e].proposed for e in ("pid", "nino", "district")} == {
        "pid": "identifier", "nino": "identifier", "district": "categorical"}


def test_a_long_code_list_without_a_name_is_a_code():
    rng = np.random.default_rng(0)
    n = 1000
    df = pd.DataFrame({"v7": rng.permutation(np.arange(n) % 182 + 1), "x": rng.normal(size=n)})
    ev = column_evidence(read_table_of(df), "v7")
    assert ev.suspect == "code" and ev.reasons == ["182 consecutive integer values, each in 5.5 records on average"]
    df["v7"] = df["v7"] * 3  # every third integer: not consecutive codes
    assert column_evidence(read_table_of(df), "v7").suspect is None


def test_census_and_age_stay_continuous():
    table = read_table(SAMPLE / "census.csv")
    assert all(column_evidence(table, c).suspect is None for c in table.columns)
    age = column_evidence(read_table(HOUSEHOLD), "age")  # 88 consecutive ages: a quantity, not a code list
    assert age.suspect is None and age.proposed == "continuous"


@settings(max_examples=30, deadline=None)
@given(st.integers(20, 200), st.integers(0, 10_000))
def test_a_unique_text_column_is_never_released_by_accident(n, seed):
    rng = np.random.default_rng(seed)
    labels = [f"R{i:06d}" for i in rng.permutation(n)]
    ev = column_evidence(read_table_of(pd.DataFrame({"ref": labels, "x": rng.normal(size=n)})), "ref")
    assert release_suspect(ev)[0] == "identifier"


def read_table_of(df: pd.DataFrame):
    from microagg_cli.frames import as_table

    return as_table(df)


# ----------------------------------------------------------------- one declaration never switches the check off


def test_one_categorical_on_household_refuses_codes_ids_and_weights(tmp_path):
    out = tmp_path / "x.csv"
    res = run_cli("protect", HOUSEHOLD, "--categorical", "urbrur", "-k", 3, "-o", out)
    assert res.exit_code == 3 and not out.exists()
    line = only_error_line(res)
    assert "would be averaged: roof (" in line and "water (integer codes, 8 distinct values)" in line
    assert "ori_hid (consecutive integers, identifier-like name) -> --drop ori_hid" in line
    assert "--weights sampling_weight --passthrough household_weights" in line


def test_household_advice_followed_leads_to_a_correct_release(tmp_path):
    out, rep = tmp_path / "x.csv", tmp_path / "r.json"
    res = run_cli("protect", HOUSEHOLD, "-k", 3, "-o", out, "-r", rep, "-q",
                  "--categorical", ",".join(CODES), "--drop", "ori_hid", "--weights", "sampling_weight",
                  "--passthrough", "household_weights")
    assert res.exit_code == 0, res.stderr
    got, orig = pd.read_csv(out), pd.read_csv(HOUSEHOLD)
    for c in CODES:
        assert set(got[c]) <= set(orig[c])  # codes, never means
    assert got["household_weights"].equals(orig["household_weights"])
    assert "ori_hid" not in got.columns
    assert got[CODES + ["age", "expend", "income", "savings"]].astype(str).value_counts().min() >= 3
    r = json.loads(rep.read_text())
    assert r["privacy_check"]["passed"] is True
    assert set(r["privacy_check"]["covered"]) >= set(CODES) | {"income"}
    assert r["privacy_check"]["not_covered"] == ["household_weights", "sampling_weight"]


def test_columns_given_keys_and_ids_left_out_are_refused(tmp_path):
    src = write(survey(), tmp_path)
    res = run_cli("protect", src, "-k", 3, "-o", tmp_path / "o.csv", "--columns", "income,expend")
    assert res.exit_code == 3
    line = only_error_line(res)
    assert "would be released unchanged: pid (" in line and "nino (" in line and "name (" in line
    assert "district (text with 25 levels in 300 records)" in line
    assert "REGION (" in line and "OCCUCODE (" in line
    assert "HHWGT" not in line  # a weight released unchanged is the usual practice


def test_text_ids_go_out_only_when_named(tmp_path):
    df = survey()
    src = write(df, tmp_path)
    out = tmp_path / "o.csv"
    res = run_cli("protect", src, "-k", 3, "-o", out, "--columns", "income,expend", "--drop", "pid,nino,name",
                  "--categorical", "district,REGION,OCCUCODE", "--passthrough", "HHWGT", "-q")
    assert res.exit_code == 0, res.stderr
    got = pd.read_csv(out)
    assert not {"pid", "nino", "name"} & set(got.columns)
    assert got[["district", "REGION", "OCCUCODE", "income", "expend"]].astype(str).value_counts().min() >= 3


def test_many_level_code_is_never_averaged_once_others_are_declared(tmp_path):
    src = write(survey(), tmp_path)
    res = run_cli("protect", src, "-k", 3, "-o", tmp_path / "o.csv", "--drop", "pid,nino,name",
                  "--categorical", "district", "--weights", "HHWGT")
    assert res.exit_code == 3
    line = only_error_line(res)
    assert "would be averaged: REGION (code-like name, integers repeated (182 distinct values)" in line
    assert "OCCUCODE (" in line and "--categorical REGION,OCCUCODE" in line


def test_unique_key_refused_unless_allowed(tmp_path):
    df = survey()[["pid", "income", "expend"]]
    src = write(df, tmp_path)
    res = run_cli("protect", src, "-k", 3, "-o", tmp_path / "o.csv", "--categorical", "pid")
    assert res.exit_code == 3 and "pid (300 distinct values in 300 records: unique per record" in only_error_line(res)
    assert "--allow-unique-keys" in only_error_line(res)
    res = run_cli("protect", src, "-k", 3, "-o", tmp_path / "o.csv", "--categorical", "pid", "--allow-unique-keys",
                  "-q")
    assert res.exit_code == 0, res.stderr


# ----------------------------------------------------------------- file metadata is evidence, not permission


def test_spss_scale_id_is_a_disagreement(tmp_path):
    pyreadstat = pytest.importorskip("pyreadstat")
    rng = np.random.default_rng(1)
    n = 300
    df = pd.DataFrame({"person_id": np.arange(1, n + 1, dtype=float), "income": rng.lognormal(9, 1, n),
                       "expend": rng.lognormal(8, 1, n)})
    src = tmp_path / "p.sav"
    pyreadstat.write_sav(df, src, variable_measure={"person_id": "scale", "income": "scale", "expend": "scale"})
    res = run_cli("protect", src, "-k", 3, "-o", tmp_path / "o.csv")
    assert res.exit_code == 3
    assert ("person_id (its SPSS measure level (scale) says continuous, but the values suggest identifier"
            in only_error_line(res))


def test_parquet_declared_keys_are_kept_keys_when_one_more_is_named(tmp_path):
    rng = np.random.default_rng(4)
    n = 300
    df = pd.DataFrame({c: pd.Categorical(rng.choice(list("abcd"), n)) for c in ("region", "sex", "educ", "occupation")})
    df["marital"] = rng.integers(1, 4, n)
    df["income"] = rng.lognormal(9, 1, n)
    df["expend"] = rng.lognormal(8, 1, n)
    src, out, rep = write(df, tmp_path, "d.parquet"), tmp_path / "o.parquet", tmp_path / "r.json"
    res = run_cli("protect", src, "-k", 3, "-o", out, "-r", rep, "--categorical", "marital", "-q")
    assert res.exit_code == 0, res.stderr
    r = json.loads(rep.read_text())
    assert set(r["columns"]["categorical"]) == {"marital", "region", "sex", "educ", "occupation"}
    assert r["columns"]["passthrough"] == []
    got = pq.read_table(out).to_pandas()
    keys = ["marital", "region", "sex", "educ", "occupation", "income", "expend"]
    assert got[keys].astype(str).value_counts().min() >= 3


def test_ordered_categorical_is_ordinal_in_its_own_order(tmp_path):
    rng = np.random.default_rng(2)
    n = 240
    df = pd.DataFrame({"band": pd.Categorical(rng.choice(["low", "mid", "high"], n),
                                              categories=["low", "mid", "high"], ordered=True),
                       "income": rng.lognormal(9, 1, n), "expend": rng.lognormal(8, 1, n)})
    src, out, rep = write(df, tmp_path, "d.parquet"), tmp_path / "o.parquet", tmp_path / "r.json"
    res = run_cli("protect", src, "-k", 3, "-o", out, "-r", rep, "-q")
    assert res.exit_code == 0, res.stderr
    assert json.loads(rep.read_text())["columns"]["ordinal"] == ["band"]
    got = pq.read_table(out).to_pandas()
    assert got["band"].cat.ordered and list(got["band"].cat.categories) == ["low", "mid", "high"]


def test_roles_reads_dictionary_columns(tmp_path):
    rng = np.random.default_rng(3)
    t = pa.table({"region": pa.array(rng.choice(list("abcde"), 100)).dictionary_encode(),
                  "x": rng.normal(size=100)})
    src = tmp_path / "d.parquet"
    pq.write_table(t, src)
    res = run_cli("roles", src)
    assert res.exit_code == 0, res.stderr
    assert '"region",  # dictionary' in res.stdout


# ----------------------------------------------------------------- .rda


def test_rda_conflicting_tags_and_a_file_it_does_not_fit(tmp_path):
    with pytest.raises(DataError, match="both <RECODABLE>"):
        parse_rda("<SEPARATOR> ,\nREGION 4\n  <RECODABLE>\n  <NUMERIC>\n", "x.rda")
    df = survey()[["REGION", "income", "expend"]]
    src = tmp_path / "s.csv"
    df.to_csv(src, index=False, sep=";")
    rda = tmp_path / "m.rda"
    rda.write_text('<SEPARATOR> "|"\nREGION 4\n  <RECODABLE>\nincome 8\n  <NUMERIC>\nexpend 8\n  <NUMERIC>\n')
    res = run_cli("protect", src, "-k", 3, "-o", tmp_path / "o.csv", "--metadata", rda)
    assert res.exit_code == 3 and "does not fit this file" in only_error_line(res)


def test_passthrough_is_byte_identical_whatever_the_rda_declares(tmp_path):
    df = survey()[["REGION", "income", "expend"]].copy()
    df["note"] = np.where(np.arange(len(df)) % 7 == 0, "99", "7")
    df.loc[3, "income"] = 99999
    src = write(df, tmp_path)
    rda = tmp_path / "m.rda"
    rda.write_text('<SEPARATOR> ","\nREGION 4\n  <RECODABLE>\nincome 8 99999\n  <NUMERIC>\nexpend 8\n  <NUMERIC>\n'
                   'note 2 99\n')
    out, rep = tmp_path / "o.csv", tmp_path / "r.json"
    res = run_cli("protect", src, "-k", 3, "-o", out, "-r", rep, "--metadata", rda, "--passthrough", "note",
                  "--missing", "complete")
    assert res.exit_code == 0, res.stderr
    assert "output output" not in res.stderr
    got = pd.read_csv(out, dtype=str)
    assert got["note"].tolist() == df["note"].tolist()  # the declared code 99 is not blanked in a passed column
    r = json.loads(rep.read_text())
    assert "note" not in r.get("declared_missing", {}) and "income" in r["declared_missing"]


def test_roles_file_records_the_metadata(tmp_path):
    src = write(survey()[["REGION", "income", "expend"]], tmp_path)
    rda = tmp_path / "m.rda"
    rda.write_text('<SEPARATOR> ","\nREGION 4\n  <RECODABLE>\nincome 8\n  <NUMERIC>\nexpend 8\n  <NUMERIC>\n')
    res = run_cli("roles", src, "--metadata", rda)
    assert res.exit_code == 0 and "--metadata m.rda --plan THIS_FILE" in res.stdout.replace(str(tmp_path) + "/", "")


# ----------------------------------------------------------------- k is what the report says


def test_missing_available_releases_k_or_nothing(tmp_path):
    rng = np.random.default_rng(8)
    n = 200
    df = pd.DataFrame({"income": rng.lognormal(9, 1, n), "expend": rng.lognormal(8, 1, n),
                       "savings": rng.lognormal(7, 1, n)})
    df.loc[rng.choice(n, 9, replace=False), "income"] = np.nan
    df.loc[rng.choice(n, 5, replace=False), "savings"] = np.nan
    src, out, rep = write(df, tmp_path), tmp_path / "o.csv", tmp_path / "r.json"
    res = run_cli("protect", src, "-k", 3, "-o", out, "-r", rep, "--missing", "available")
    assert res.exit_code == 0, res.stderr
    r = json.loads(rep.read_text())
    b = r["blocks"][0]
    assert b["k_min"] >= 3 and b["k_anonymous"] is True and b["share_below_k"] == 0.0
    assert r["privacy_check"]["passed"] is True and r["privacy_check"]["blocks"][0]["k_min"] >= 3
    assert b["missing"]["cells_blanked"]  # the observed cells that would have split their group
    got = pd.read_csv(out)
    assert got.astype(str).value_counts().min() >= 3  # on the released rows, missing cells included
    assert "blanked so that each group releases one row" in res.stderr


def test_census_default_run_unchanged(tmp_path):
    out = tmp_path / "c.csv"
    assert run_cli("protect", SAMPLE / "census.csv", "-k", 3, "-o", out, "-q").exit_code == 0
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    assert digest == "b24847b6feb4fb459124e23f7ae26b6f6a2a6f8696692bf6ece5c8c7ebd09872"


def test_multi_block_plan_carries_keys(tmp_path):
    plan = tmp_path / "p.toml"
    plan.write_text('version = 1\n[defaults]\nk = 3\n[[blocks]]\ncolumns = ["income", "expend", "urbrur", "water"]\n'
                    '[[blocks]]\ncolumns = ["savings"]\n[roles]\ncategorical = ["urbrur", "water"]\n')
    out = tmp_path / "o.csv"
    res = run_cli("protect", HOUSEHOLD, "--plan", plan, "-o", out, "-q", "--drop", "ori_hid",
                  "--passthrough", "roof,walls,electcon,relat,sex,age,hhcivil,sampling_weight,household_weights")
    assert res.exit_code == 0, res.stderr
    got, orig = pd.read_csv(out), pd.read_csv(HOUSEHOLD)
    assert set(got["water"]) <= set(orig["water"])
    assert got[["urbrur", "water", "income", "expend"]].astype(str).value_counts().min() >= 3


def test_xlsx_header_kept_exactly(tmp_path):
    openpyxl = pytest.importorskip("openpyxl")
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.append([" id ", "x", "y"])
    rng = np.random.default_rng(1)
    for i in range(30):
        ws.append([i + 1, float(rng.normal()), float(rng.normal())])
    src = tmp_path / "h.xlsx"
    wb.save(src)
    out = tmp_path / "o.csv"
    res = run_cli("protect", src, "-o", out, "-k", 3, "--drop", '" id "', "-q")
    assert res.exit_code == 0, res.stderr
    assert list(pd.read_csv(out).columns) == ["x", "y"]


def test_evaluate_scores_released_codes_as_keys(tmp_path):
    out = tmp_path / "x.csv"
    res = run_cli("protect", HOUSEHOLD, "-k", 3, "-o", out, "-q", "--categorical", ",".join(CODES),
                  "--drop", "ori_hid", "--weights", "sampling_weight", "--passthrough", "household_weights")
    assert res.exit_code == 0, res.stderr
    orig = tmp_path / "orig.csv"
    pd.read_csv(HOUSEHOLD).drop(columns=["ori_hid"]).to_csv(orig, index=False)
    rep = tmp_path / "e.json"
    res = run_cli("evaluate", orig, out, "-r", rep, "--max-scenarios", 4)
    assert res.exit_code == 0, res.stderr
    r = json.loads(rep.read_text())
    detected = r["categorical"]["detected"]["columns"]
    assert set(detected) <= set(CODES) and detected
    assert not set(detected) & set(r["columns"]["evaluated"] if "evaluated" in r["columns"] else r["columns"])


# ----------------------------------------------------------------- any single declaration, advice followed


ADVICE = __import__("re").compile(r"-> ((?:--[a-z-]+ [^ ]+)(?: --[a-z-]+ [^ (]+)?)( with --missing complete)?")


def follow_advice(src: Path, out: Path, args: list[str], steps: int = 6):
    """Run protect, and while it refuses with advice, add the advised options; the last result."""
    args = list(args)
    for _ in range(steps):
        res = run_cli("protect", src, "-k", 3, "-o", out, "-q", "-f", *args)
        if res.exit_code != 3:
            return res, args
        line = only_error_line(res)
        found = ADVICE.findall(line)
        assert found, line  # every refusal of a role names the option that settles it
        for opts, complete in found:
            words = opts.split()
            for opt, value in zip(words[::2], words[1::2]):
                if opt in args:  # an option already given: its list grows
                    i = args.index(opt)
                    args[i + 1] = args[i + 1] + "," + value
                else:
                    args += [opt, value]
            if complete and "--missing" not in args:
                args += ["--missing", "complete"]
    return res, args


@pytest.mark.parametrize("src,declaration", [
    (HOUSEHOLD, ["--categorical", "urbrur"]),
    (HOUSEHOLD, ["--columns", "income,expend,savings"]),
    (HOUSEHOLD, ["--weights", "household_weights"]),
    (HOUSEHOLD, ["--metadata", str(SAMPLE / "household.rda")]),
    (SAMPLE / "household.sav", ["--missing", "complete"]),
    (SAMPLE / "household.sav", ["--ordinal", "hhcivil", "--missing", "complete"]),
], ids=["csv-categorical", "csv-columns", "csv-weights", "csv-rda", "sav-complete", "sav-ordinal"])
def test_any_single_declaration_then_the_advice_leads_to_a_correct_release(tmp_path, src, declaration):
    out = tmp_path / ("o.csv")
    res, args = follow_advice(src, out, declaration)
    assert res.exit_code == 0, (args, res.stderr)
    got = pd.read_csv(out)
    orig = pd.read_csv(HOUSEHOLD)
    assert "ori_hid" not in got.columns or got["ori_hid"].equals(orig["ori_hid"]) and "ori_hid" in args
    for c in CODES + ["sampling_weight", "household_weights"]:
        if c in got.columns:  # a code or a weight is a code or a weight of the file, never a mean
            assert set(got[c].dropna()) <= set(orig[c]), c


# ----------------------------------------------------------------- the frame path runs the file path's sequence


def test_protect_frame_with_a_plan_naming_the_keys_and_evaluate_equals_the_file_api(tmp_path):
    from microagg_cli import api
    from microagg_cli.blocking import Block, BlockPlan
    from microagg_cli.frames import protect_frame

    df = pd.read_csv(HOUSEHOLD)
    plan = BlockPlan(blocks=(Block("b1", ("income", "expend", "urbrur", "roof"), k=3),))
    opts = dict(plan=plan, categorical=["urbrur", "roof"], evaluate_risk=True, drop=["ori_hid"],
                passthrough=["walls", "water", "electcon", "relat", "sex", "age", "hhcivil", "savings",
                             "sampling_weight", "household_weights"])
    out, rep = protect_frame(df, None, **opts)
    file_rep = api.protect(HOUSEHOLD, tmp_path / "o.csv", **opts)
    assert out.to_csv(index=False) == pd.read_csv(tmp_path / "o.csv").to_csv(index=False)
    assert rep["evaluation"]["summary"]["il_sse"] == pytest.approx(file_rep["evaluation"]["summary"]["il_sse"])


def test_protect_frame_releases_protected_dates_as_dates(tmp_path):
    from microagg_cli import api
    from microagg_cli.frames import protect_frame

    rng = np.random.default_rng(0)
    n = 40
    df = pd.DataFrame({"d": pd.to_datetime("2000-01-01") + pd.to_timedelta(rng.integers(0, 5000, n), unit="D"),
                       "x": rng.normal(size=n)})
    out, _rep = protect_frame(df, 3, columns=["d", "x"])
    assert out["d"].dtype.kind == "M" and out["d"].nunique() <= n // 3
    assert (out["d"].dt.normalize() == out["d"]).all()  # whole days, as the file API releases them
    src = tmp_path / "d.parquet"
    df.to_parquet(src)
    api.protect(src, tmp_path / "o.parquet", k=3, columns=["d", "x"])
    assert out["d"].equals(pd.read_parquet(tmp_path / "o.parquet")["d"])
