"""The command line: help, every user error -> its exit code, atomic output, determinism."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from conftest import CENSUS_MDAV_IL, csv_fixture, only_error_line, run_cli
from microagg_cli.cli import cli
from microagg_cli.metrics import il_sse


run = run_cli
small_csv = csv_fixture(
    "id,name,x,y,code\n"
    "001,ann,1,10,A\n002,bob,2,11,B\n003,cat,3,12,A\n"
    "004,dan,10,30,B\n005,eve,11,31,A\n006,fay,12,32,B\n"
)


def test_every_command_has_help_with_an_example():
    root = run("--help")
    assert root.exit_code == 0
    for name in cli.list_commands(None):
        command = cli.get_command(None, name)
        res = run(name, "--help")
        assert res.exit_code == 0, name
        assert command.help and "Example" in command.help, name
        for param in command.params:
            if param.param_type_name == "option" and param.name not in ("help",):
                assert param.help, f"{name} {param.name} lacks help"


def test_protect_census_csv_and_parquet_reference_il(census_path, tmp_path):
    for ext in ("csv", "parquet"):
        out = tmp_path / f"out.{ext}"
        rep = tmp_path / f"r_{ext}.json"
        res = run("protect", census_path, "-o", out, "-k", 3, "--report", rep, "-q")
        assert res.exit_code == 0, res.output
        assert res.stdout == ""
        orig = pd.read_csv(census_path)
        prot = pd.read_csv(out) if ext == "csv" else pd.read_parquet(out)
        assert list(prot.columns) == list(orig.columns)
        # groups of >= 3 identical rows
        counts = prot.value_counts()
        assert counts.min() >= 3
        assert round(il_sse(orig.to_numpy(float), prot.to_numpy(float)), 4) == CENSUS_MDAV_IL[3]
        report = json.loads(rep.read_text())
        assert report["schema_version"]
        assert report["input"]["sha256"] and report["input"]["rows"] == 1080
        block = report["blocks"][0]
        assert block["n_groups"] == 360 and block["group_size_histogram"] == {"3": 360}
        assert round(block["il_sse"], 4) == CENSUS_MDAV_IL[3]
        assert block["method"]["reference"]


def test_rerun_is_byte_identical(census_path, tmp_path):
    for ext in ("csv", "parquet"):
        a, b = tmp_path / f"a.{ext}", tmp_path / f"b.{ext}"
        ra, rb = tmp_path / f"a_{ext}.json", tmp_path / f"b_{ext}.json"
        assert run("protect", census_path, "-o", a, "-k", 4, "-r", ra, "-q").exit_code == 0
        assert run("protect", census_path, "-o", b, "-k", 4, "-r", rb, "-q").exit_code == 0
        assert a.read_bytes() == b.read_bytes()
        ja, jb = json.loads(ra.read_text()), json.loads(rb.read_text())
        for j in (ja, jb):
            j["timing"] = j["audit"] = None
            j["output"]["name"] = None
            for blk in j["blocks"]:
                blk["seconds"] = None
                blk["lb_nn_policy"] = {key: v for key, v in blk["lb_nn_policy"].items() if "seconds" not in key}
        assert ja == jb


def test_passthrough_drop_and_text_preserved(small_csv, tmp_path):
    out = tmp_path / "o.csv"
    res = run("protect", small_csv, "-o", out, "-k", 3, "--columns", "x,y", "--drop", "name", "-q")
    assert res.exit_code == 0, res.output
    lines = out.read_text().splitlines()
    assert lines[0] == "id,x,y,code"
    # the identifier keeps its leading zeros; code passes through; x, y are means
    assert lines[1] == "001,2.0,11.0,A"
    assert lines[4] == "004,11.0,31.0,B"


def test_columns_option_and_stdout(small_csv):
    res = run("protect", small_csv, "-o", "-", "-k", 3, "--columns", "x", "-q")
    assert res.exit_code == 0, res.output
    out = res.stdout.splitlines()
    assert out[0] == "id,name,x,y,code"
    assert out[1] == "001,ann,2.0,10,A"


def test_semicolon_delimiter_sniffed(tmp_path):
    p = tmp_path / "semi.csv"
    p.write_text("a;b\n1;2\n2;3\n3;4\n4;5\n")
    out = tmp_path / "o.csv"
    assert run("protect", p, "-o", out, "-k", 2, "-q").exit_code == 0
    assert out.read_text().splitlines()[0] == "a;b"


def test_summary_on_stderr_without_report(small_csv, tmp_path):
    res = run("protect", small_csv, "-o", tmp_path / "o.csv", "-k", 3, "--drop", "id,name")
    assert res.exit_code == 0
    assert res.stdout == ""
    assert "IL_SSE" in res.stderr and "k-check passed" in res.stderr


def test_list_methods_lists_registry():
    from microagg_cli.methods import METHODS

    res = run("protect", "--list-methods")
    assert res.exit_code == 0
    for name, spec in METHODS.items():
        assert f"{name}: " in res.stdout
        assert spec.reference in res.stdout


def test_debug_shows_traceback_for_bugs(small_csv, tmp_path, monkeypatch):
    import microagg_cli.api as api

    def boom(*a, **k):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(api, "protect_run", boom)
    res = run("protect", small_csv, "-o", tmp_path / "o.csv", "-k", 3, "--drop", "id,name")
    assert res.exit_code == 1
    assert "internal error" in only_error_line(res)
    res = run("--debug", "protect", small_csv, "-o", tmp_path / "o.csv", "-k", 3, "--drop", "id,name")
    assert res.exit_code == 1
    assert "Traceback" in res.stderr


ERROR_CASES = {
    "missing file": (["protect", "{tmp}/nope.csv", "-o", "{tmp}/o.csv", "-k", "3"], 3, "does not exist"),
    "k too small": (["protect", "{small}", "-o", "{tmp}/o.csv", "-k", "1", "--drop", "id,name"], 2, "k must"),
    "k above n": (["protect", "{small}", "-o", "{tmp}/o.csv", "-k", "7", "--drop", "id,name"], 4, "k=7 exceeds the"),
    "no k": (["protect", "{small}", "-o", "{tmp}/o.csv", "--drop", "id,name"], 2, "k is required"),
    "unknown column": (["protect", "{small}", "-o", "{tmp}/o.csv", "-k", "2", "--columns", "x,zz"], 3, "'zz'"),
    "column twice": (["protect", "{small}", "-o", "{tmp}/o.csv", "-k", "2", "--columns", "x,x"], 2, "twice"),
    "non numeric": (["protect", "{small}", "-o", "{tmp}/o.csv", "-k", "2", "--columns", "x,name"], 3, "not numeric"),
    "unknown method": (["protect", "{small}", "-o", "{tmp}/o.csv", "-k", "2", "-m", "nope", "--columns", "x"], 2, "unknown method"),
    "bad param": (["protect", "{small}", "-o", "{tmp}/o.csv", "-k", "2", "-p", "zz=1", "--columns", "x"], 2, "no parameter"),
    "malformed param": (["protect", "{small}", "-o", "{tmp}/o.csv", "-k", "2", "-p", "zz", "--columns", "x"], 2, "NAME=VALUE"),
    "bad extension": (["protect", "{small}", "-o", "{tmp}/o.xlsx", "-k", "2", "--columns", "x"], 2, "format"),
    "output is input": (["protect", "{small}", "-o", "{small}", "-k", "2", "--force", "--columns", "x"], 3, "input"),
    "missing folder": (["protect", "{small}", "-o", "{tmp}/no/o.csv", "-k", "2", "--columns", "x"], 3, "does not exist"),
    "bad stat": (["protect", "{small}", "-o", "{tmp}/o.csv", "-k", "2", "--stat", "mode", "--columns", "x"], 2, "statistic"),
    "no numeric column": (["protect", "{small}", "-o", "{tmp}/o.csv", "-k", "2", "--drop", "id,x,y"], 3, "no numeric"),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_user_errors_exit_codes(case, small_csv, tmp_path):
    args, code, fragment = ERROR_CASES[case]
    args = [a.format(tmp=tmp_path, small=small_csv) for a in args]
    before = small_csv.read_bytes()
    res = run(*args)
    assert res.exit_code == code, (res.exit_code, res.output)
    assert fragment in only_error_line(res)
    assert not (tmp_path / "o.csv").exists()
    assert small_csv.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("", "empty"),
        ("a,b\n", "no data rows"),
        ("1,2\n3,4\n5,6\n", "header"),
        ("a,a\n1,2\n3,4\n", "duplicate column 'a'"),
        ("a,b\n1,2\n,4\n3,5\n", "missing"),
        ("a,b\n1,2\nnan,4\n3,5\n", "missing"),
        ("a,b\n1,2\ninf,4\n3,5\n", "infinite"),
        ("a,b\n1,2\n2,x\n3,5\n", "not numeric"),
        ("a,b\n1,2\n2\n3,5,6,7\n", "malformed"),
    ],
)
def test_bad_files(tmp_path, content, fragment):
    p = tmp_path / "bad.csv"
    p.write_text(content)
    out = tmp_path / "o.csv"
    res = run("protect", p, "-o", out, "-k", 2, "--columns", "a,b") if "a," in content else run(
        "protect", p, "-o", out, "-k", 2)
    assert res.exit_code == 3, res.output
    assert fragment in only_error_line(res)
    assert not out.exists()


def test_unreadable_parquet(tmp_path):
    p = tmp_path / "bad.parquet"
    p.write_bytes(b"not parquet at all")
    res = run("protect", p, "-o", tmp_path / "o.csv", "-k", 2)
    assert res.exit_code == 3
    assert "Parquet" in only_error_line(res)


def test_existing_output_needs_force(small_csv, tmp_path):
    out = tmp_path / "o.csv"
    out.write_text("keep me\n")
    res = run("protect", small_csv, "-o", out, "-k", 3, "--drop", "id,name")
    assert res.exit_code == 3
    assert "--force" in only_error_line(res)
    assert out.read_text() == "keep me\n"
    res = run("protect", small_csv, "-o", out, "-k", 3, "--drop", "id,name", "--force", "-q")
    assert res.exit_code == 0
    assert out.read_text().startswith("x,y,code\n2.0,11.0,A")


def test_existing_report_needs_force(small_csv, tmp_path):
    rep = tmp_path / "r.json"
    rep.write_text("{}")
    res = run("protect", small_csv, "-o", tmp_path / "o.csv", "-k", 3, "--drop", "id,name", "-r", rep)
    assert res.exit_code == 3
    assert not (tmp_path / "o.csv").exists()
    assert rep.read_text() == "{}"


def test_constant_column_warns_and_works(tmp_path):
    p = tmp_path / "c.csv"
    p.write_text("a,b\n1,5\n2,5\n3,5\n4,5\n")
    out = tmp_path / "o.csv"
    res = run("protect", p, "-o", out, "-k", 2, "-r", tmp_path / "r.json")
    assert res.exit_code == 0
    assert "constant" in res.stderr
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["blocks"][0]["constant_columns"] == ["b"]
    assert out.read_text().splitlines()[1:] == ["1.5,5.0", "1.5,5.0", "3.5,5.0", "3.5,5.0"]


def test_failed_privacy_check_writes_nothing(small_csv, tmp_path, monkeypatch):
    from microagg_cli.methods import METHODS, MethodSpec

    def bad(X, k, *, rng):
        return np.arange(X.shape[0])

    monkeypatch.setitem(METHODS, "broken", MethodSpec("broken", bad, "x", "y"))
    out = tmp_path / "o.csv"
    res = run("protect", small_csv, "-o", out, "-k", 3, "-m", "broken", "--drop", "id,name")
    assert res.exit_code == 4
    assert "nothing was written" in only_error_line(res)
    assert not out.exists()


def test_report_contains_no_original_values(small_csv, tmp_path):
    rep = tmp_path / "r.json"
    assert run("protect", small_csv, "-o", tmp_path / "o.csv", "-k", 3, "--drop", "id,name", "-r", rep).exit_code == 0
    text = rep.read_text()
    for value in ("ann", "10", "31", "32"):
        assert f'"{value}"' not in text and f" {value}," not in text


def test_report_to_stdout(small_csv, tmp_path):
    res = run("protect", small_csv, "-o", tmp_path / "o.parquet", "-k", 3, "--drop", "id,name", "-r", "-", "-q")
    assert res.exit_code == 0
    assert json.loads(res.stdout)["command"] == "protect"
