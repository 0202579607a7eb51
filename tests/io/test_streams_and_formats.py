"""Files and streams: standard streams closed or full, oversized cells, negative
seeds, quoted and padded column names, .csv.gz / .xlsx / --encoding, writer and other
messages, and the release rule over digits of any script. Stream cases run ``sdc`` in a
subprocess (the shell's redirections are the point); the rest in-process."""

from __future__ import annotations

import gzip
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT, SAMPLE, only_error_line, run_cli

SMALL = "x,income,age\n1,10,30\n2,20,31\n3,30,35\n4,40,41\n5,50,44\n6,60,47\n"


def sh(command: str, cwd: Path) -> subprocess.CompletedProcess:
    """``sdc`` run by a shell (``SDC`` in ``command``), so redirections such as ``>&-`` apply."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    sdc = f"{shlex.quote(sys.executable)} -m microagg_cli"
    return subprocess.run(["bash", "-c", command.replace("SDC", sdc)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def error_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.startswith("Error:")]


@pytest.fixture
def small(tmp_path) -> Path:
    p = tmp_path / "small.csv"
    p.write_text(SMALL)
    return p


# ------------------------------------------------------------------ standard streams


def test_closed_stdin_as_input_is_exit_3_naming_it(tmp_path, small):
    res = sh("SDC protect - -o out.csv -k 3 <&-", tmp_path)
    assert res.returncode == 3, res.stderr
    (line,) = error_lines(res.stderr)
    assert "<stdin>" in line and "standard input is closed" in line
    assert not (tmp_path / "out.csv").exists()


def test_closed_stdout_as_output_is_exit_3_naming_it(tmp_path, small):
    res = sh("SDC protect small.csv -o - -k 3 >&-", tmp_path)
    assert res.returncode == 3, res.stderr
    (line,) = error_lines(res.stderr)
    assert "standard output" in line and "closed" in line
    assert "Traceback" not in res.stderr


def test_report_to_a_full_device_writes_nothing(tmp_path, small):
    res = sh("SDC protect small.csv -o out.csv -k 3 --report - > /dev/full", tmp_path)
    assert res.returncode == 3, res.stderr
    (line,) = error_lines(res.stderr)
    assert "standard output" in line and "No space left" in line
    assert not (tmp_path / "out.csv").exists()  # the output and the report are one transaction
    assert [p.name for p in tmp_path.iterdir()] == ["small.csv"]


@pytest.mark.parametrize("quiet", ["", "-q"])
def test_closed_stderr_still_ends_with_the_documented_code(tmp_path, small, quiet):
    ok = sh(f"SDC protect small.csv -o out.csv -k 3 {quiet} 2>&-", tmp_path)
    assert ok.returncode == 0
    text = (tmp_path / "out.csv").read_text()
    assert text.splitlines()[0] == "x,income,age" and len(text.splitlines()) == 7
    bad = sh(f"SDC protect missing.csv -o out2.csv -k 3 {quiet} 2>&-", tmp_path)
    assert bad.returncode == 3
    assert not (tmp_path / "out2.csv").exists()
    infeasible = sh(f"SDC protect small.csv -o out3.csv -k 7 {quiet} 2>&-", tmp_path)
    assert infeasible.returncode == 4 and not (tmp_path / "out3.csv").exists()


@pytest.mark.parametrize("args", ["--help", "--version", "protect --help"])
def test_help_to_a_full_device_is_exit_3_not_a_traceback(tmp_path, args):
    res = sh(f"SDC {args} > /dev/full", tmp_path)
    assert res.returncode == 3, res.stderr
    assert "Traceback" not in res.stderr and "Exception ignored" not in res.stderr
    (line,) = error_lines(res.stderr)
    assert line == "Error: cannot write to standard output: No space left on device"


@pytest.mark.parametrize("redirect", [">&-", "> /dev/full"])
def test_a_table_on_a_closed_or_full_stdout_is_exit_3(tmp_path, small, redirect):
    res = sh(f"SDC blocks small.csv {redirect}", tmp_path)
    assert res.returncode == 3, res.stderr
    (line,) = error_lines(res.stderr)
    assert line.startswith("Error: cannot write to standard output: ")
    assert "Exception ignored" not in res.stderr


def test_internal_error_names_the_real_debug_command(tmp_path, small, monkeypatch):
    from microagg_cli import api

    def boom(*_a, **_k):
        raise RuntimeError("boom")

    monkeypatch.setattr(api, "protect_request", boom)
    res = run_cli("protect", small, "-o", tmp_path / "o.csv", "-k", 3)
    assert res.exit_code == 1
    line = only_error_line(res)
    assert "re-run as 'sdc --debug protect ...'" in line


def test_os_error_without_a_file_names_no_bare_colon():
    from microagg_cli.cli import _os_error_line

    exc = OSError(28, "No space left on device")
    exc.sdc_stream = "standard output"
    assert _os_error_line(exc) == "cannot write to standard output: No space left on device"
    assert _os_error_line(OSError(2, "No such file", "x.csv")) == "cannot access 'x.csv': No such file"
    assert not _os_error_line(OSError(5, "I/O error")).startswith("cannot access:")


# ------------------------------------------------------------------ seeds


@pytest.mark.parametrize("command", [
    ["protect", "{small}", "-o", "{out}", "-k", "3"],
    ["evaluate", "{small}", "{small}"],
    ["compare", "{small}", "-k", "3"],
    ["blocks", "{small}"],
])
def test_negative_seed_is_exit_2_on_every_command(tmp_path, small, command):
    args = [a.format(small=small, out=tmp_path / "o.csv") for a in command] + ["-s", "-1"]
    res = run_cli(*args)
    assert res.exit_code == 2, res.output
    assert "-1" in res.stderr and "Traceback" not in res.output


def test_negative_seed_in_the_library_is_a_parameter_error(small):
    from microagg_cli import errors
    from microagg_cli.request import BlocksRequest, CompareRequest, EvaluateRequest, ProtectRequest

    for cls in (ProtectRequest, EvaluateRequest, CompareRequest, BlocksRequest):
        with pytest.raises(errors.InvalidParameterError, match="seed"):
            cls.build(seed=-1)
    assert ProtectRequest.build(seed=np.int64(3)).run.seed == 3


# ------------------------------------------------------------------ oversized cells


@pytest.mark.parametrize("engine", [[], ["--engine", "local"]])
def test_a_cell_of_megabytes_is_read_and_passed_through(tmp_path, engine):
    big = "y" * 2_500_000  # beyond the csv module's field limit and the Arrow reader's block
    src = tmp_path / "big.csv"
    src.write_text("a,b,note\n" + "".join(f"{i},{2 * i},x\n" for i in range(6)) + f"7,14,{big}\n")
    out = tmp_path / "o.csv"
    res = run_cli("protect", src, "-o", out, "-k", 3, "--columns", "a,b", "-q", *engine)
    assert res.exit_code == 0, res.output
    rows = out.read_text().splitlines()
    assert rows[-1].endswith("," + big) and len(rows) == 8


def test_a_quote_left_open_is_exit_3_naming_the_file(tmp_path):
    src = tmp_path / "open.csv"
    src.write_text('a,b\n1,2\n3,"4\n')
    res = run_cli("protect", src, "-o", tmp_path / "o.csv", "-k", 2, "--columns", "a")
    assert res.exit_code in (0, 3)
    if res.exit_code == 3:
        assert "open.csv" in only_error_line(res)


# ------------------------------------------------------------------ malformed input, every reader


def _fuzz_seeds(tmp_path_factory):
    import fuzz_cases

    return fuzz_cases, fuzz_cases.seed_files(tmp_path_factory.mktemp("seeds"))


@pytest.fixture(scope="module")
def fuzz(tmp_path_factory):
    return _fuzz_seeds(tmp_path_factory)


READERS = ["csv", "tsv", "csv.gz", "parquet", "xlsx", "sav", "zsav", "dta", "xpt", "sas7bdat",
           "plan.toml", "plan.json"]


@pytest.mark.parametrize("reader", READERS)
def test_fuzz_every_reader_never_ends_in_exit_1(fuzz, tmp_path_factory, reader):
    fuzz_cases, seeds = fuzz
    folder = tmp_path_factory.mktemp("fuzz")

    @settings(max_examples=12, deadline=None, database=None)
    @given(st.randoms(use_true_random=False))
    def one(rnd):
        data = fuzz_cases.mutate(seeds[reader], rnd)
        path = fuzz_cases.write_case(folder, reader, data)
        exc = fuzz_cases.check(path, reader)
        assert exc is None, f"{reader}: {type(exc).__name__}: {exc}"

    one()


@pytest.mark.parametrize("reader", ["csv.gz", "parquet", "xlsx", "sav", "dta", "xpt", "sas7bdat"])
def test_truncated_file_is_one_error_line_naming_it(fuzz, tmp_path, reader):
    fuzz_cases, seeds = fuzz
    path = fuzz_cases.write_case(tmp_path, reader, seeds[reader][: len(seeds[reader]) // 3])
    res = run_cli("protect", path, "-o", tmp_path / "o.csv", "-k", 2)
    assert res.exit_code == 3, res.output
    assert path.name in only_error_line(res)


def test_truncated_plan_is_one_error_line_naming_it(fuzz, tmp_path, small):
    fuzz_cases, seeds = fuzz
    plan = fuzz_cases.write_case(tmp_path, "plan.toml", seeds["plan.toml"][:40])
    res = run_cli("protect", small, "-o", tmp_path / "o.csv", "--plan", plan)
    assert res.exit_code == 2
    assert "case.toml" in only_error_line(res)


@pytest.mark.parametrize("damage", ["no numpy_type", "not utf-8", "not json"])
def test_parquet_with_damaged_pandas_metadata_is_exit_3(tmp_path, damage):
    import json

    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [4.0, 3.0, 2.0, 1.0]}))
    meta = json.loads(table.schema.metadata[b"pandas"])
    if damage == "no numpy_type":
        del meta["columns"][0]["numpy_type"]
        raw = json.dumps(meta).encode()
    elif damage == "not utf-8":
        raw = json.dumps(meta).encode().replace(b'"a"', b'"\xa2"', 1)
    else:
        raw = b"{not json"
    path = tmp_path / "d.parquet"
    pq.write_table(table.replace_schema_metadata({b"pandas": raw}), path)
    res = run_cli("protect", path, "-o", tmp_path / "o.csv", "-k", 2)
    assert res.exit_code == 3, res.output
    assert "d.parquet" in only_error_line(res) and "pandas metadata" in res.stderr


def test_parquet_with_text_that_is_not_utf8_is_exit_3(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    bad = pa.array([b"ok", b"\x96x", b"ok", b"ok"], type=pa.binary()).view(pa.string())
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": [1.0, 2.0, 3.0, 4.0], "name": bad}), path)
    for engine in ([], ["--engine", "local"]):
        res = run_cli("protect", path, "-o", tmp_path / "o.csv", "-k", 2, *engine)
        assert res.exit_code == 3, res.output
        line = only_error_line(res)
        assert "t.parquet" in line and "UTF8" in line.upper().replace("-", "")
        assert not (tmp_path / "o.csv").exists()


# ------------------------------------------------------------------ names


def test_split_quoted_rules():
    from microagg_cli.commands._options import split_names, split_quoted
    from microagg_cli.errors import InvalidParameterError

    assert split_names('"income, net",age') == ["income, net", "age"]
    assert split_names(' a , b,c ') == ["a", "b", "c"]
    assert split_names('" padded ",x') == [" padded ", "x"]
    assert split_quoted('"a""b" , c') == ['a"b', "c"]
    for bad in ['"open', '"a"b', "a,,b", ","]:
        with pytest.raises(InvalidParameterError):
            split_names(bad)


def test_blocks_and_known_take_quoted_names():
    from microagg_cli.commands._common_eval import parse_blocks, parse_known

    assert parse_blocks('"a;b", c; d') == [["a;b", "c"], ["d"]]
    assert parse_known(('"x, y",z',)) == [["x, y", "z"]]


def test_columns_with_a_comma_and_padded_names(tmp_path):
    src = tmp_path / "n.csv"
    src.write_text('"income, net", pad ,note\n1,10,a\n2,20,b\n3,30,c\n4,40,d\n')
    out = tmp_path / "o.csv"
    res = run_cli("protect", src, "-o", out, "-k", 2, "--columns", '"income, net"," pad "', "-q")
    assert res.exit_code == 0, res.output
    assert out.read_text().splitlines()[1:] == ["1.5,15.0,a", "1.5,15.0,b", "3.5,35.0,c", "3.5,35.0,d"]
    res = run_cli("protect", src, "-o", tmp_path / "o2.csv", "-k", 2, "--columns", "pad")
    line = only_error_line(res)
    assert res.exit_code == 3
    assert "(columns: 'income, net', ' pad ', 'note')" in line and "' pad '" in line
    res = run_cli("protect", src, "-o", tmp_path / "o3.csv", "-k", 2, "--drop", '" pad "', "--passthrough", "note",
                  "-q")
    assert res.exit_code == 0 and (tmp_path / "o3.csv").read_text().startswith('"income, net",note\n')


def test_name_list_quotes_only_when_a_name_needs_it():
    from microagg_cli.readings import name_list

    assert name_list(["a", "b"]) == "a, b"
    assert name_list(["a,b", "c"]) == "'a,b', 'c'"
    assert name_list(["x ", "y"]) == "'x ', 'y'"


@pytest.mark.parametrize("suffix", [".sav", ".zsav"])
def test_spss_output_refuses_names_differing_in_case(tmp_path, suffix):
    src = tmp_path / "c.csv"
    src.write_text("Income,income,x\n1,2,3\n4,5,6\n7,8,9\n1,1,1\n")
    out = tmp_path / ("o" + suffix)
    res = run_cli("protect", src, "-o", out, "-k", 2, "--columns", "x")
    assert res.exit_code == 3
    line = only_error_line(res)
    assert "'Income'" in line and "'income'" in line and out.name in line
    assert not out.exists()
    assert run_cli("protect", src, "-o", tmp_path / "o.dta", "-k", 2, "--columns", "x", "-q").exit_code == 0


# ------------------------------------------------------------------ agency exports


def test_csv_gz_read_and_written(tmp_path):
    src = tmp_path / "in.csv.gz"
    src.write_bytes(gzip.compress(SMALL.encode()))
    plain = tmp_path / "plain.csv"
    plain.write_text(SMALL)
    out, ref = tmp_path / "out.csv.gz", tmp_path / "ref.csv"
    assert run_cli("protect", src, "-o", out, "-k", 3, "--columns", "income,age", "-q").exit_code == 0
    assert run_cli("protect", plain, "-o", ref, "-k", 3, "--columns", "income,age", "-q").exit_code == 0
    raw = out.read_bytes()
    assert raw[:2] == b"\x1f\x8b" and gzip.decompress(raw) == ref.read_bytes()
    again = tmp_path / "again.csv.gz"
    run_cli("protect", src, "-o", again, "-k", 3, "--columns", "income,age", "-q")
    assert again.read_bytes() == raw  # no time stamp: same input, same bytes
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again.csv.gz", "in.csv.gz", "out.csv.gz", "plain.csv",
                                                          "ref.csv"]
    res = run_cli("evaluate", src, out, "--columns", "income,age", "-q")
    assert res.exit_code == 0, res.output


def test_tsv_gz_and_refused_gz(tmp_path):
    src = tmp_path / "in.tsv.gz"
    src.write_bytes(gzip.compress(SMALL.replace(",", "\t").encode()))
    out = tmp_path / "o.tsv"
    assert run_cli("protect", src, "-o", out, "-k", 3, "--columns", "income", "-q").exit_code == 0
    assert out.read_text().splitlines()[1] == "1\t20.0\t30"
    res = run_cli("protect", src, "-o", tmp_path / "o.sav.gz", "-k", 3)
    assert res.exit_code == 2 and "decompress" in only_error_line(res)
    bad = tmp_path / "bad.csv.gz"
    bad.write_bytes(gzip.compress(SMALL.encode())[:20])
    res = run_cli("protect", bad, "-o", tmp_path / "x.csv", "-k", 3)
    assert res.exit_code == 3 and "bad.csv.gz" in only_error_line(res)


def test_engine_refuses_what_it_cannot_stream(tmp_path, small):
    gz = tmp_path / "in.csv.gz"
    gz.write_bytes(gzip.compress(SMALL.encode()))
    for args in ([gz, "-o", tmp_path / "a.csv"], [small, "-o", tmp_path / "b.csv.gz"],
                 [small, "-o", tmp_path / "c.csv", "--encoding", "latin-1"]):
        res = run_cli("protect", *args, "-k", 3, "--engine", "local")
        assert res.exit_code == 2, res.output
        assert "--engine" in only_error_line(res)
    assert list(tmp_path.glob("?.csv*")) == []


def _xlsx(path: Path, rows: list[list]) -> None:
    import openpyxl

    book = openpyxl.Workbook()
    for row in rows:
        book.active.append(row)
    book.save(path)


def test_xlsx_read_as_its_csv_export(tmp_path):
    src = tmp_path / "book.xlsx"
    _xlsx(src, [["id", "name", "income"], ["007", "Ann", 10], ["008", "Bob", 20.5], ["009", "Cy", 30],
                ["010", "Di", 40]])
    out = tmp_path / "o.csv"
    res = run_cli("protect", src, "-o", out, "-k", 2, "--columns", "income", "-q")
    assert res.exit_code == 0, res.output
    assert out.read_text() == "id,name,income\n007,Ann,15.25\n008,Bob,15.25\n009,Cy,35.0\n010,Di,35.0\n"
    res = run_cli("protect", src, "-o", tmp_path / "o.xlsx", "-k", 2)
    assert res.exit_code == 2 and "read, not written" in only_error_line(res)


def test_xlsx_default_selection_and_release_rule(tmp_path):
    src = tmp_path / "book.xlsx"
    _xlsx(src, [["amount", "x"], ["1,234", 1], ["2,345", 2], ["3,456", 3], ["4,567", 4]])
    res = run_cli("protect", src, "-o", tmp_path / "o.csv", "-k", 2)
    assert res.exit_code == 3 and "--passthrough amount" in only_error_line(res)


def test_latin1_needs_encoding_and_keeps_characters(tmp_path):
    src = tmp_path / "lat.csv"
    src.write_bytes("id,name,income\n1,José,100\n2,Müller,200\n3,€uro,300\n4,Ana,150\n".encode("cp1252"))
    res = run_cli("protect", src, "-o", tmp_path / "o.csv", "-k", 2, "--columns", "income")
    line = only_error_line(res)
    assert res.exit_code == 3 and "line 2" in line and "--encoding" in line and "lat.csv" in line
    out = tmp_path / "o2.csv"
    res = run_cli("protect", src, "-o", out, "-k", 2, "--columns", "income", "--encoding", "cp1252", "-q")
    assert res.exit_code == 0, res.output
    text = out.read_bytes().decode("utf-8")  # the output is UTF-8
    assert [r.split(",")[1] for r in text.splitlines()[1:]] == ["José", "Müller", "€uro", "Ana"]
    res = run_cli("protect", src, "-o", tmp_path / "o3.csv", "-k", 2, "--columns", "income", "--encoding", "latin-1",
                  "-q")
    assert res.exit_code == 0


def test_undecodable_in_the_given_encoding_names_line_and_option(tmp_path):
    src = tmp_path / "cp.csv"
    src.write_bytes(b"id,name,income\n1,Jos\xe9,100\n2,M\x81ller,200\n3,Ana,300\n")
    res = run_cli("protect", src, "-o", tmp_path / "o.csv", "-k", 2, "--encoding", "cp1252")
    line = only_error_line(res)
    assert res.exit_code == 3 and "line 3" in line and "cp1252" in line and "--encoding" in line
    res = run_cli("protect", src, "-o", tmp_path / "o.csv", "-k", 2, "--encoding", "klingon")
    assert res.exit_code == 2 and "--encoding" in only_error_line(res)


def test_evaluate_takes_encoding_for_both_files(tmp_path):
    src = tmp_path / "lat.csv"
    src.write_bytes("id,name,income\n1,José,100\n2,Ana,200\n3,Zoë,300\n4,Bo,150\n".encode("latin-1"))
    prot = tmp_path / "p.csv"
    prot.write_bytes("id,name,income\n1,José,150\n2,Ana,250\n3,Zoë,250\n4,Bo,150\n".encode("latin-1"))
    assert run_cli("evaluate", src, prot, "--columns", "income", "-q").exit_code == 3
    assert run_cli("evaluate", src, prot, "--columns", "income", "--encoding", "latin-1", "-q").exit_code == 0


# ------------------------------------------------------------------ messages


def test_writer_error_names_the_real_output(tmp_path):
    src = tmp_path / "s.csv"
    src.write_text("income net,x\n1,2\n3,4\n5,6\n7,8\n")
    for suffix in (".dta", ".xpt", ".sav"):
        out = tmp_path / ("real_name" + suffix)
        res = run_cli("protect", src, "-o", out, "-k", 2, "--columns", "x")
        line = only_error_line(res)
        assert res.exit_code == 3 and "real_name" + suffix in line and "'income net'" in line
        assert "out" + suffix not in line.replace("real_name", "")


def test_declared_missing_codes_to_csv_say_they_become_plain_missing(tmp_path):
    src = SAMPLE / "household.sav"
    COLS = ("--columns", "income,expend,savings",  # the file's coded columns stay as they are
            # the id and the codes released unchanged on purpose (named: the role check refuses them in clear)
            "--passthrough", "ori_hid,urbrur,roof,walls,water,electcon,relat,sex,hhcivil")
    res = run_cli("protect", src, "-o", tmp_path / "h.csv", "-k", 3, "--missing", "available", *COLS)
    assert res.exit_code == 0
    lines = [ln for ln in res.stderr.splitlines() if "declared missing codes" in ln]
    assert lines and all("plain missing values in the csv output" in ln for ln in lines)
    assert not any("written back as they were" in ln for ln in lines)
    res = run_cli("protect", src, "-o", tmp_path / "h.sav", "-k", 3, "--missing", "available", *COLS)
    assert all("written back as they were" in ln for ln in res.stderr.splitlines() if "declared missing" in ln)
    res = run_cli("protect", src, "-o", tmp_path / "h2.csv", "-k", 3, *COLS)
    assert "other outputs hold plain missing values" in only_error_line(res)


def test_code_written_back_rules():
    from microagg_cli.statfiles import code_written_back as kept

    assert kept("999998", "sav") and not kept("999998", "dta") and not kept("999998", "csv")
    assert kept(".a", "dta") and kept(".A", "xpt") and kept("._", "xpt") and not kept("._", "dta")
    assert not kept(".a", "sav") and not kept(".a", "parquet")


@pytest.mark.parametrize("text", ["a,b\n1,2\n", "a,b\n1,2\n,4\n"])
def test_one_record_says_so(tmp_path, text):
    src = tmp_path / "one.csv"
    src.write_text(text)
    res = run_cli("protect", src, "-o", tmp_path / "o.csv", "-k", 2, "--missing", "complete")
    line = only_error_line(res)
    assert res.exit_code == 4 and "only 1 record" in line
    assert "k <= 1" not in line and "k <= 0" not in line


def test_one_record_in_evaluate_compare_and_blocks(tmp_path):
    one, prot = tmp_path / "one.csv", tmp_path / "p.csv"
    one.write_text("a,b\n1,2\n")
    prot.write_text("a,b\n1.5,2.5\n")
    res = run_cli("evaluate", one, prot)
    assert res.exit_code == 3 and "got 1 record and 2 columns" in only_error_line(res)
    res = run_cli("compare", one, "-k", 3)
    line = only_error_line(res)
    assert res.exit_code == 4 and "single record cannot be protected" in line
    res = run_cli("blocks", one)
    assert res.exit_code == 0 and "--size None" not in res.stdout


def test_no_record_left_says_so(tmp_path):
    src = tmp_path / "none.csv"
    src.write_text("a,b\n1,\n,4\n")
    res = run_cli("protect", src, "-o", tmp_path / "o.csv", "-k", 2, "--missing", "complete")
    line = only_error_line(res)
    assert res.exit_code == 4 and "k <= 0" not in line


def test_subnormal_column_is_not_constant(tmp_path):
    src = tmp_path / "sub.csv"
    src.write_text("a,b\n5e-324,1\n1e-323,2\n1.5e-323,3\n2e-323,4\n")
    out = tmp_path / "o.csv"
    res = run_cli("protect", src, "-o", out, "-k", 2, "--columns", "a")
    assert res.exit_code == 0 and "constant" not in res.stderr
    assert [r.split(",")[0] for r in out.read_text().splitlines()[1:]] == ["1e-323", "1e-323", "2e-323", "2e-323"]
    from microagg_cli.partition import zscore

    Z, _m, scale, constant = zscore(np.array([[5e-324], [1e-323], [1.5e-323], [2e-323]]))
    assert not constant[0] and scale[0] > 0 and np.allclose(Z[:, 0], [-1.342, -0.447, 0.447, 1.342], atol=1e-3)
    assert zscore(np.array([[5e-324], [5e-324]]))[3][0]


def test_output_format_offers_only_writable_formats():
    from microagg_cli.statfiles import OUTPUT_FORMATS

    assert "sas7bdat" not in OUTPUT_FORMATS and "xlsx" not in OUTPUT_FORMATS
    res = run_cli("protect", SAMPLE / "census.csv", "-o", "x", "--output-format", "sas7bdat")
    assert res.exit_code == 2


# ------------------------------------------------------------------ release rule, any script

_SCRIPTS = {"arabic-indic": 0x0660, "extended arabic-indic": 0x06F0, "devanagari": 0x0966, "bengali": 0x09E6,
            "thai": 0x0E50, "fullwidth": 0xFF10}


def _digits(number: str, zero: int) -> str:
    return "".join(chr(zero + int(c)) if c.isdigit() else c for c in number)


@pytest.mark.parametrize("script", sorted(_SCRIPTS))
@pytest.mark.parametrize("style", ["plain", "nbsp groups", "arabic separators", "unicode minus", "currency"])
def test_numbers_in_any_script_are_refused(tmp_path, script, style):
    zero = _SCRIPTS[script]
    cells = []
    for v in (12345, 67890, 1234567, 2500, 999):
        text = f"{v:,}"
        if style == "plain":
            cell = _digits(str(v), zero)
        elif style == "nbsp groups":
            cell = _digits(text.replace(",", "\u00a0"), zero)
        elif style == "arabic separators":
            cell = _digits(text.replace(",", "\u066c"), zero) + "\u066b" + _digits("5", zero)
        elif style == "unicode minus":
            cell = "\u2212" + _digits(text, zero)
        else:
            cell = "\u20b9\u00a0" + _digits(text, zero)
        cells.append(cell)
    src = tmp_path / "s.csv"
    import csv

    with open(src, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["x", "amount", "label"])
        writer.writerows([i, c, f"l{i}"] for i, c in enumerate(cells))
    res = run_cli("protect", src, "-o", tmp_path / "o.csv", "-k", 2)
    assert res.exit_code == 3, res.output
    line = only_error_line(res)
    assert "'amount'" in line and "--passthrough amount" in line
    res = run_cli("protect", src, "-o", tmp_path / "o.csv", "-k", 2, "--columns", "x", "--passthrough", "amount",
                  "-q")
    assert res.exit_code == 0
    with open(tmp_path / "o.csv", encoding="utf-8", newline="") as fh:
        assert [r[1] for r in list(csv.reader(fh))[1:]] == cells


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 10**9), min_size=2, max_size=6), st.sampled_from(sorted(_SCRIPTS.values())),
       st.sampled_from(["", "-", "\u2212", "+"]), st.sampled_from(["", "\u00a0", "\u2009", "\u066c", "."]))
def test_release_rule_property(values, zero, sign, group):
    import pyarrow as pa

    from microagg_cli.readings import numeric_reading

    cells = [sign + _digits(f"{v:,}".replace(",", group) if group else str(v), zero) for v in values]
    cells += ["x"] * (len(cells) - 1)  # a minority of text cells does not hide the numbers
    assert numeric_reading(pa.array(cells)) is not None


@pytest.mark.parametrize("cells", [["1.2.3", "4.5.6"], ["+41 44 123 45 67", "+41 79 555 12 34"],
                                   ["2024-01-05", "2024-02-01"], ["A123", "B456"], ["\u0661\u066b\u0662\u066b\u0663", "\u0664\u066b\u0665\u066b\u0666"]])
def test_text_that_is_not_a_number_is_not_refused(cells):
    import pyarrow as pa

    from microagg_cli.readings import numeric_reading

    assert numeric_reading(pa.array(cells)) is None


# ------------------------------------------------------------------ README examples


def test_readme_python_examples_run_verbatim_from_the_repository_root(tmp_path):
    """Every ```python block of the README, run as written in a folder laid out like the
    repository root (``sample_data/`` there), so outputs land in a temporary folder."""
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert len(blocks) >= 3
    (tmp_path / "sample_data").symlink_to(SAMPLE)
    program = "\n".join(f"exec(compile({b!r}, 'README block {i}', 'exec'), {{}})" for i, b in enumerate(blocks))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert round(float(res.stdout.split()[0]), 4) == 5.6922  # the first block prints IL_SSE of MDAV k=3 on Census
    assert (tmp_path / "protected.parquet").exists()
