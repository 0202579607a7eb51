"""Trust II: no column released by accident, no file deleted by ``--force``, k checked on
everything released, no cell value in the logs, no hang on extreme values.

The catalogue at the end runs each bad-input case through the real command line and
checks the exit code, one ``Error:`` line naming what it should, no traceback, nothing
written, nothing deleted, the input untouched and no cell value quoted.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from microagg_cli import api, interrupts, io, outputs
from microagg_cli.cli import cli
from conftest import refusal_catalogue_tests, tree
from microagg_cli.errors import DataError
from microagg_cli.methods import METHODS
from microagg_cli.readings import masked_shape, numeric_reading, quote
from microagg_cli.request import RunOptions

ROOT = Path(__file__).resolve().parents[2]
CENSUS = ROOT / "sample_data" / "census.csv"
HOUSEHOLD = ROOT / "sample_data" / "household.csv"
HOUSEHOLD_CODES = ("urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "hhcivil")


def household_released(*roled: str) -> list[str]:
    """The household file's codes a run neither groups on nor keys, released unchanged on
    purpose (named: the role check refuses codes in clear by default); its id dropped."""
    return ["--drop", "ori_hid", "--passthrough", ",".join(c for c in HOUSEHOLD_CODES if c not in roled)]


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def error_lines(res) -> list[str]:
    return [ln for ln in res.stderr.splitlines() if ln.startswith("Error:")]


def _census_frame(n: int = 60) -> pd.DataFrame:
    return pd.read_csv(CENSUS).head(n)


# ------------------------------------------------------------------ 1. --force never deletes


def _dataset(folder: Path, n: int = 120) -> Path:
    ds = folder / "ds"
    ds.mkdir(parents=True)
    df = _census_frame(n)[["AFNLWGT", "AGI", "EMCONTRB"]]
    pq.write_table(pa.Table.from_pandas(df.iloc[: n // 2], preserve_index=False), ds / "part-000.parquet")
    pq.write_table(pa.Table.from_pandas(df.iloc[n // 2:], preserve_index=False), ds / "part-001.parquet")
    return ds


def test_force_on_the_parent_folder_of_an_input_dataset_deletes_nothing(tmp_path):
    data = tmp_path / "data"
    ds = _dataset(data)
    (data / "notes.txt").write_text("keep me")
    (data / "sub").mkdir()
    (data / "sub" / "x.csv").write_text("a\n1\n")
    before = tree(data)
    res = run("protect", ds, "-o", data, "-k", 3, "--force")
    assert res.exit_code == 3, res.stderr
    (line,) = error_lines(res)
    assert "contains the input" in line and "never modified" in line
    assert tree(data) == before


@pytest.mark.parametrize("spelling", ["relative", "dotdot", "symlink"])
def test_output_equal_to_or_inside_the_input_whatever_the_spelling(tmp_path, spelling, monkeypatch):
    ds = _dataset(tmp_path)
    before = tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    if spelling == "relative":
        out = "ds/inner"
    elif spelling == "dotdot":
        out = "ds/../ds"
    else:
        os.symlink(ds, tmp_path / "link")
        before = tree(tmp_path)
        out = "link"
    res = run("protect", "ds", "-o", out, "-k", 3, "--force")
    assert res.exit_code == 3, res.stderr
    assert "never modified" in error_lines(res)[0]
    assert tree(tmp_path) == before


def test_force_replaces_only_sdcs_own_dataset_files(tmp_path):
    ds = _dataset(tmp_path / "in")
    out = tmp_path / "out"
    res = run("protect", ds, "-o", out, "-k", 3)
    assert res.exit_code == 0, res.stderr
    marker = json.loads((out / outputs.MARKER).read_text())
    assert marker["tool"] == "sdc" and marker["files"] == ["part-000.parquet", "part-001.parquet"]
    # a second run over its own output: replaced
    res = run("protect", ds, "-o", out, "-k", 4, "--force")
    assert res.exit_code == 0, res.stderr
    # a user's file in the folder: refused, named, nothing touched
    (out / "mine.xlsx").write_text("precious")
    before = tree(out)
    res = run("protect", ds, "-o", out, "-k", 3, "--force")
    assert res.exit_code == 3
    assert "'mine.xlsx'" in error_lines(res)[0] and "did not write" in error_lines(res)[0]
    assert tree(out) == before


def test_a_folder_sdc_did_not_write_is_never_replaced_even_with_its_file_names(tmp_path):
    ds = _dataset(tmp_path / "in")
    out = tmp_path / "out"
    out.mkdir()
    (out / "part-000.parquet").write_bytes(b"user data")
    (out / "README").write_text("user")
    res = run("protect", ds, "-o", out, "-k", 3, "--force")
    assert res.exit_code == 3 and "'README'" in res.stderr
    assert (out / "README").read_text() == "user"


def test_dangling_symlink_output_is_an_existing_output(tmp_path):
    os.symlink(tmp_path / "nowhere.csv", tmp_path / "o.csv")
    res = run("protect", CENSUS, "-o", tmp_path / "o.csv", "-k", 3)
    assert res.exit_code == 3
    assert "exists" in error_lines(res)[0] and "appeared while writing" not in res.stderr


# ------------------------------------------------------- 2-4. numbers in other conventions


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_decimal_comma_file_with_semicolons_is_refused_then_read_with_the_option(tmp_path):
    src = _write(tmp_path / "eu.csv", "region;income;share\nN;1234,5;0,25\nS;2345,25;0,5\nE;3456,75;0,125\n"
                                      "W;4567,5;0,75\n")
    res = run("protect", src, "-o", tmp_path / "o.csv", "-k", 2, "-q")
    assert res.exit_code == 3 and "--decimal ," in res.stderr and not (tmp_path / "o.csv").exists()
    res = run("protect", src, "-o", tmp_path / "o.csv", "-k", 2, "-q", "--decimal", ",")
    assert res.exit_code == 0, res.stderr
    got = pd.read_csv(tmp_path / "o.csv", sep=";", dtype=str)
    assert got["region"].tolist() == ["N", "S", "E", "W"]
    assert "1234,5" not in got["income"].tolist()  # protected, not passed through


def test_the_decimal_comma_hint_comes_even_when_another_column_triggers(tmp_path):
    src = _write(tmp_path / "eu.csv", "a;b;c\n1,5;$12;x\n2,5;$13;y\n3,25;$14;z\n4,75;$15;w\n")
    res = run("protect", src, "-o", tmp_path / "o.csv", "-k", 2, "--passthrough", "a")
    assert res.exit_code == 3
    assert "column 'b'" in res.stderr and "mostly written with a decimal comma" in res.stderr


@pytest.mark.parametrize("cells, option", [
    (['"248,514"', '"1,234,567"', '"12,000"'], "--thousands ,"),
    (["248.514.000", "1.234.567", "12.000.000"], "--thousands ."),
    (["248 514", "1 234 567", "12 000"], "--thousands ' '"),
    (["248'514", "1'234'567", "12'000"], "--thousands \"'\""),
    (["$9192", "$120", "$15.50"], None),
    (["12 %", "7.5%", "100 %"], None),
    (["(120)", "45", "(3.5)"], None),
    (["..", "..", "x", "5", "-", "7"], "--na-values"),
])
def test_numbers_in_any_convention_are_never_released_unnamed(tmp_path, cells, option):
    rows = "".join(f"{i},{c},t{i}\n" for i, c in enumerate(cells * 2))
    src = _write(tmp_path / "in.csv", "id,v,label\n" + rows)
    res = run("protect", src, "-o", tmp_path / "o.csv", "-k", 2, "--columns", "id")
    assert res.exit_code == 3, res.stderr
    (line,) = error_lines(res)
    assert "column 'v'" in line and "--passthrough v" in line
    if option:
        assert option in line
    assert not (tmp_path / "o.csv").exists()
    # named on purpose: released
    res = run("protect", src, "-o", tmp_path / "o.csv", "-k", 2, "--columns", "id", "--passthrough", "v", "-q")
    assert res.exit_code == 0, res.stderr


def test_thousands_and_na_values_read_the_numbers(tmp_path):
    src = _write(tmp_path / "in.csv", 'a,b\n"1,000",..\n"2,500",3\n"3,250",4\n"4,000",x\n')
    res = run("protect", src, "-o", tmp_path / "o.csv", "-k", 2, "--thousands", ",", "--na-values", "..,x",
              "--missing", "available", "-q")
    assert res.exit_code == 0, res.stderr
    got = pd.read_csv(tmp_path / "o.csv")
    assert got["a"].tolist() == [1750.0, 1750.0, 3625.0, 3625.0]


@pytest.mark.parametrize("text, word", [
    ("a,b,c\n1,2,x,\n3,4,y,\n5,6,z,\n7,8,w,\n", "every data row ends with a delimiter"),
    ("a,b\n1,2\n3,4,5\n5,6\n7,8\n", "line 3 has 3 field"),
    ("a,b\n1,2\n3\n5,6\n7,8\n", "line 3 has 1 field"),
])
def test_field_count_mismatch_is_a_csv_error(tmp_path, text, word):
    src = _write(tmp_path / "in.csv", text)
    res = run("protect", src, "-o", tmp_path / "o.csv", "-k", 2)
    assert res.exit_code == 3 and word in error_lines(res)[0]
    assert not (tmp_path / "o.csv").exists()


def test_plain_text_columns_still_pass_through(tmp_path):
    src = _write(tmp_path / "in.csv", "a,name,code,date\n1,ann,A-12,2024-01-05\n2,bob,B-7,2024-02-01\n"
                                      "3,cy,C-1,2024-03-09\n4,dee,D-9,2024-04-11\n")
    res = run("protect", src, "-o", tmp_path / "o.csv", "-k", 2)
    assert res.exit_code == 0, res.stderr
    assert "passed through unchanged (not covered by the k check): name, code, date" in res.stderr


def test_numeric_reading_unit_cases():
    def reading(cells, **kw):
        return numeric_reading(pa.array(cells, type=pa.string()), **kw)

    assert reading(["1,5", "2,25", "3"]).option == "--decimal ,"
    assert reading(["1,5", "2,25", "3"], decimal=",") is None or reading(["1,5"], decimal=",") is None
    assert reading(["ann", "bob", "12"]) is None
    assert reading(["1.2.3", "4.5.6"]) is None  # not a grouping: a version, a code
    assert reading(["+41 44 123 45 67", "+41 79 555 12 34"]) is None  # phone numbers
    r = reading(["-", "-", "-", "5"])
    assert r is not None and r.option == "--na-values -" and r.placeholders == 3


# --------------------------------------------------------- 5. k on what is released


def test_merged_strata_are_released_under_one_label_and_k_holds(tmp_path):
    out, rep = tmp_path / "o.csv", tmp_path / "r.json"
    res = run("protect", HOUSEHOLD, "-o", out, "-k", 50, "--strata", "water", "--small-strata", "merge",
              "--columns", "income,expend,savings", "--report", rep, "-q", *household_released("water"))
    assert res.exit_code == 0, res.stderr
    got = pd.read_csv(out, dtype=str)
    sizes = got.groupby(["water", "income", "expend", "savings"]).size()
    assert sizes.min() >= 50
    labels = set(got["water"])
    assert any("+" in v for v in labels)
    r = json.loads(rep.read_text())
    assert r["blocks"][0]["k_released"]["k_min"] >= 50
    assert r["overall"]["strata_recoded"]["labels"]


def test_keys_are_checked_with_the_protected_columns(tmp_path):
    out = tmp_path / "o.csv"
    res = run("protect", HOUSEHOLD, "-o", out, "-k", 5, "--columns", "income,expend,savings", "--keys", "sex,age",
              *household_released("sex"))
    assert res.exit_code == 4, res.stderr
    (line,) = error_lines(res)
    assert "sex, age" in line and "--strata" in line and not out.exists()
    res = run("protect", HOUSEHOLD, "-o", out, "-k", 3, "--columns", "income,expend,savings", "--keys", "urbrur",
              "--strata", "urbrur", *household_released("urbrur"))
    assert res.exit_code == 2  # a key that is also a stratum: one role
    res = run("protect", HOUSEHOLD, "-o", out, "-k", 3, "--columns", "income,expend,savings", "--keys", "sex",
              "--strata", "urbrur,sex", "--report", tmp_path / "r.json", "-q", *household_released("urbrur", "sex"))
    assert res.exit_code == 2
    res = run("protect", HOUSEHOLD, "-o", out, "-k", 3, "--columns", "income,expend,savings", "--keys", "urbrur",
              "--report", tmp_path / "r.json", "-q", *household_released("urbrur"))
    assert res.exit_code in (0, 4)
    if res.exit_code == 0:
        got = pd.read_csv(out, dtype=str)
        assert got.groupby(["urbrur", "income", "expend", "savings"]).size().min() >= 3


# ------------------------------------------------------------ 6. no value in the logs


def test_a_huge_cell_never_floods_the_log(tmp_path):
    big = "9" * 2_000_000 + "x"
    src = _write(tmp_path / "in.csv", f"a,b\n1,{big}\n2,3\n3,4\n4,5\n")
    res = run("protect", src, "-o", tmp_path / "o.csv", "-k", 2)
    assert res.exit_code == 3
    assert max(len(ln) for ln in res.stderr.splitlines()) < 600
    assert "99999" not in res.stderr


def test_masked_shape_and_quote():
    assert masked_shape("4,5OO") == "a value with letters (5 characters)"
    assert masked_shape("12,5") == "a value shaped '99,9'"
    assert quote("x" * 100).startswith("'" + "x" * 40 + "'...") and "(100 characters)" in quote("x" * 100)


# ------------------------------------------------------------ 7. extreme values


@pytest.mark.parametrize("method", sorted(METHODS))
def test_values_near_the_top_of_the_float_range_are_refused_quickly(tmp_path, method):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 2)) * 1e307
    src = tmp_path / "big.csv"
    src.write_text("a,b\n" + "".join(f"{float(x)!r},{float(y)!r}\n" for x, y in X))
    with pytest.raises(DataError, match="column 'a' holds values beyond 1e\\+150"):
        api.protect(src, tmp_path / "o.csv", k=3, method=method)
    assert not (tmp_path / "o.csv").exists()


# ------------------------------------------------------------ 8. provenance


def test_the_report_hashes_the_bytes_that_were_read(tmp_path):
    src = tmp_path / "in.csv"
    src.write_bytes(CENSUS.read_bytes())
    table = io.read_table(src)
    original = hashlib.sha256(CENSUS.read_bytes()).hexdigest()
    src.write_text("a\n1\n")  # replaced during the run
    fp = io.file_fingerprint(table)
    assert fp["sha256"] == original and fp["size_bytes"] == CENSUS.stat().st_size


# ------------------------------------------------------------ 9-10. smaller slips


def test_stdout_on_a_full_device_names_it(tmp_path):
    with open("/dev/full", "wb") as full:
        res = subprocess.run([sys.executable, "-m", "microagg_cli", "protect", str(CENSUS), "-o", "-", "-k", "3",
                              "-q"], stdout=full, stderr=subprocess.PIPE, text=True,
                             env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert res.returncode == 3, res.stderr
    assert "standard output" in res.stderr and "Traceback" not in res.stderr


def test_weights_and_parameter_messages_are_plain(tmp_path):
    src = _write(tmp_path / "in.csv", "a,w\n1,1\n2,-1\n3,1\n4,1\n")
    res = run("protect", src, "-o", tmp_path / "o.csv", "-k", 2, "--columns", "a", "--weights", "w")
    assert res.exit_code == 3 and "holds -1" in res.stderr and "np.float64" not in res.stderr
    res = run("protect", CENSUS, "-o", tmp_path / "o.csv", "-k", 3, "-m", "vmdav", "--param", "gamma=nan")
    assert res.exit_code == 2 and "finite number" in res.stderr and "got nan" not in res.stderr


def test_blocks_runs_with_its_own_defaults():
    res = run("blocks", CENSUS, "-k", 3)
    assert res.exit_code == 0, res.stderr


def test_plain_log_lines_carry_time_and_run_id(tmp_path):
    res = run("protect", HOUSEHOLD, "-o", tmp_path / "o.csv", "-k", 3, "--columns", "income,expend", "-v",
              *household_released())
    assert res.exit_code == 0, res.stderr
    logs = [ln for ln in res.stderr.splitlines() if " sdc[" in ln]
    assert logs and all(re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ sdc\[[0-9a-f]{6}\]: ", ln) for ln in logs)


def test_compare_table_off_a_terminal_is_ascii(tmp_path):
    res = run("compare", CENSUS, "--methods", "mdav", "--k", "3", "--format", "table", "--max-scenarios", "2",
              "--columns", "AFNLWGT,AGI")
    assert res.exit_code == 0, res.stderr
    assert res.stdout.strip() and all(ord(ch) < 128 for ch in res.stdout)


def test_signal_in_a_finalizer_is_deferred(monkeypatch):
    def __del__():  # noqa: N807 - the name is what is detected
        return sys._getframe()

    assert interrupts._in_finalizer(__del__())
    assert not interrupts._in_finalizer(sys._getframe())


# ------------------------------------------------------------------ the catalogue


def _catalogue(tmp: Path) -> list[tuple[str, list, int, str]]:
    """(name, arguments, exit code, a word of the one error line)."""
    files = {
        "dc.csv": "a;b\n1,5;2,25\n2,5;3,5\n3,5;4,75\n4,5;5,25\n",
        "th.csv": 'a,b\n"1,234","5,678"\n"2,345","6,789"\n"3,456","7,890"\n"4,567","8,901"\n',
        "thdot.csv": "a;b\n1.234.567;1\n2.345.678;2\n3.456.789;3\n4.567.890;4\n",
        "thsp.csv": "a,b\n1 234,1\n2 345,2\n3 456,3\n4 567,4\n",
        "thq.csv": "a,b\n1'234,1\n2'345,2\n3'456,3\n4'567,4\n",
        "cur.csv": "a,b\n$9192,1\n$812,2\n$77,3\n$1000,4\n",
        "eur.csv": "a,b\n9192 \u20ac,1\n812 \u20ac,2\n77 \u20ac,3\n1000 \u20ac,4\n",
        "pct.csv": "a,b\n12 %,1\n7 %,2\n3.5 %,3\n50 %,4\n",
        "paren.csv": "a,b\n(120),1\n45,2\n(7),3\n8,4\n",
        "ph.csv": "a,b\n..,1\n..,2\n5,3\nx,4\n-,5\n",
        "trail.csv": "a,b\n1,2,\n3,4,\n5,6,\n7,8,\n",
        "long.csv": "a,b\n1,2\n3,4,9\n5,6\n7,8\n",
        "short.csv": "a,b\n1,2\n3\n5,6\n7,8\n",
        "typo.csv": "a,b\n1,2\n2,45O0\n3,4\n4,5\n",
        "big.csv": "a,b\n1e307,1\n-1e307,2\n5e306,3\n2e307,4\n",
        "keys.csv": "a,r\n1,x\n2,y\n3,x\n4,y\n5,x\n6,y\n",
        "w.csv": "a,w\n1,1\n2,0\n3,1\n4,1\n",
    }
    for name, text in files.items():
        (tmp / name).write_text(text, encoding="utf-8")
    data = tmp / "data"
    if not data.exists():
        _dataset(data)
        (data / "keep.txt").write_text("keep")
    o = tmp / "out.csv"
    return [
        ("decimal comma", ["protect", tmp / "dc.csv", "-o", o, "-k", 2], 3, "--decimal ,"),
        ("thousands comma", ["protect", tmp / "th.csv", "-o", o, "-k", 2], 3, "--thousands ,"),
        ("thousands dot", ["protect", tmp / "thdot.csv", "-o", o, "-k", 2, "--columns", "b"], 3, "--thousands ."),
        ("thousands space", ["protect", tmp / "thsp.csv", "-o", o, "-k", 2, "--columns", "b"], 3, "--thousands ' '"),
        ("thousands apostrophe", ["protect", tmp / "thq.csv", "-o", o, "-k", 2, "--columns", "b"], 3, "apostrophe"),
        ("currency", ["protect", tmp / "cur.csv", "-o", o, "-k", 2, "--columns", "b"], 3, "currency"),
        ("euro sign", ["protect", tmp / "eur.csv", "-o", o, "-k", 2, "--columns", "b"], 3, "currency"),
        ("percent", ["protect", tmp / "pct.csv", "-o", o, "-k", 2, "--columns", "b"], 3, "percent"),
        ("accounting negatives", ["protect", tmp / "paren.csv", "-o", o, "-k", 2, "--columns", "b"], 3,
         "parentheses"),
        ("placeholders", ["protect", tmp / "ph.csv", "-o", o, "-k", 2, "--columns", "b"], 3, "--na-values"),
        ("default selection, placeholders", ["protect", tmp / "ph.csv", "-o", o, "-k", 2], 3, "--na-values"),
        ("trailing delimiter", ["protect", tmp / "trail.csv", "-o", o, "-k", 2], 3, "ends with a delimiter"),
        ("long row", ["protect", tmp / "long.csv", "-o", o, "-k", 2], 3, "line 3"),
        ("short row", ["protect", tmp / "short.csv", "-o", o, "-k", 2], 3, "line 3"),
        ("typo masked", ["protect", tmp / "typo.csv", "-o", o, "-k", 2], 3, "a value with letters"),
        ("typo in --columns masked", ["protect", tmp / "typo.csv", "-o", o, "-k", 2, "--columns", "b"], 3,
         "a value with letters"),
        ("extreme magnitude", ["protect", tmp / "big.csv", "-o", o, "-k", 2], 3, "overflow"),
        ("--force over the input's parent", ["protect", data / "ds", "-o", data, "-k", 3, "--force"], 3,
         "contains the input"),
        ("output inside the input dataset", ["protect", data / "ds", "-o", data / "ds" / "x", "-k", 3, "--force"],
         3, "inside the input"),
        ("report inside the input dataset", ["protect", data / "ds", "-o", tmp / "p.parquet", "-k", 3,
                                             "--report", data / "ds" / "r.json"], 3, "inside the input"),
        ("key not a column", ["protect", tmp / "keys.csv", "-o", o, "-k", 2, "--columns", "a", "--keys", "zz"], 3,
         "zz"),
        ("key also protected", ["protect", tmp / "keys.csv", "-o", o, "-k", 2, "--columns", "a", "--keys", "a"], 2,
         "cannot also be protected"),
        ("keys break k", ["protect", tmp / "keys.csv", "-o", o, "-k", 2, "--columns", "a", "--keys", "r"], 4,
         "smaller than k=2"),
        ("thousands is a digit", ["protect", tmp / "th.csv", "-o", o, "-k", 2, "--thousands", "1"], 2,
         "--thousands"),
        ("weight zero", ["protect", tmp / "w.csv", "-o", o, "-k", 2, "--columns", "a", "--weights", "w"], 3,
         "holds 0"),
        ("NaN parameter", ["protect", CENSUS, "-o", o, "-k", 3, "-m", "vmdav", "--param", "gamma=nan"], 2,
         "finite number"),
        ("thousands with streaming", ["protect", data / "ds", "-o", tmp / "p.parquet", "-k", 3, "--thousands", ","],
         2, "--thousands"),
    ]


CATALOGUE_SIZE = 27


def _no_original_value_in_the_message(name: str, res) -> None:
    for secret in ("45O0", "1234", "9192", "(120)"):
        assert secret not in res.stderr, (name, secret)


test_catalogue_has_at_least_twenty_five_cases, test_catalogue = refusal_catalogue_tests(
    _catalogue, CATALOGUE_SIZE, 25, run, also=_no_original_value_in_the_message)


# ------------------------------------------------------------------ properties

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def _grouped(value: int, sep: str) -> str:
    text = f"{value:,}"
    return text.replace(",", sep)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1000, max_value=10**9), min_size=3, max_size=12),
       st.sampled_from([",", ".", " ", "'", "\u00a0"]), st.integers(min_value=0, max_value=99))
def test_grouped_numbers_are_always_caught(values, sep, cents):
    cells = [_grouped(v, sep) + (("." if sep != "." else ",") + f"{cents:02d}" if cents % 2 else "")
             for v in values]
    def plain(c: str) -> bool:
        try:
            float(c)
            return True
        except ValueError:
            return False

    # caught, or every cell is a plain number ("1.000"): then the column is protected, never released
    assert numeric_reading(pa.array(cells)) is not None or all(plain(c) for c in cells), cells


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False).map(lambda x: round(x, 3)),
                min_size=3, max_size=12),
       st.sampled_from(["comma", "currency", "percent", "parens"]))
def test_numbers_with_marks_are_always_caught(values, style):
    def fmt(x: float) -> str:
        text = f"{abs(x):.3f}"
        if style == "comma":
            return ("-" if x < 0 else "") + text.replace(".", ",")
        if style == "currency":
            return ("-" if x < 0 else "") + "$" + text
        if style == "percent":
            return ("-" if x < 0 else "") + text + " %"
        return f"({text})" if x < 0 else text + "-" if x == 0 else f"({text})"
    cells = [fmt(x) for x in values]
    assert numeric_reading(pa.array(cells)) is not None, cells


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyz ", min_size=1, max_size=12)
                .filter(lambda t: t.strip() and t.strip() not in {"x", "c", "z", "s", "na", "nd", "xx", "xxx"}),
                min_size=3, max_size=12))
def test_words_are_never_numbers(cells):
    assert numeric_reading(pa.array(cells)) is None


@settings(max_examples=15, deadline=None)
@given(st.integers(min_value=0, max_value=2**31 - 1), st.integers(min_value=2, max_value=6))
def test_k_holds_on_the_released_stratum_with_merge(seed, k):
    from microagg_cli.blocking import BlockPlan
    from microagg_cli.protection import protect_table

    rng = np.random.default_rng(seed)
    n = 60
    frame = pd.DataFrame({"s": rng.choice(["a", "b", "c", "d", "e"], size=n, p=[.4, .3, .2, .06, .04]),
                          "x": rng.normal(size=n).round(2).astype(str), "y": rng.normal(size=n).round(2).astype(str)})
    table = io.Table(frame, "csv", None)
    res = protect_table(table, BlockPlan.single(["x", "y"], k=k), RunOptions(strata=["s"], small_strata="merge"))
    out = res.data.to_pandas()
    sizes = out.groupby(["s", "x", "y"]).size()
    assert sizes.min() >= k


def test_a_streamed_input_changed_during_the_run_is_not_certified(tmp_path, monkeypatch):
    from microagg_cli import engines

    ds = _dataset(tmp_path)
    real = engines.protect_blocks

    def touching(*args, **kwargs):
        out = real(*args, **kwargs)
        with open(ds / "part-001.parquet", "ab") as fh:  # the input grows while the run goes on
            fh.write(b"\0")
        return out

    monkeypatch.setattr(engines, "protect_blocks", touching)
    with pytest.raises(DataError, match="changed while it was being protected"):
        api.protect(ds, tmp_path / "o.parquet", k=3)
    assert not (tmp_path / "o.parquet").exists()
