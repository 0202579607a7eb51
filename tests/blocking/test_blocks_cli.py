"""``sdc blocks`` and ``sdc protect --plan``: plans from the command line, end to end."""

from __future__ import annotations

import json
import tomllib

import pandas as pd
import pytest

from conftest import SAMPLE, csv_fixture, only_error_line, run_cli
from microagg_cli.blocking import load_plan, parse_plan, plan_mean_abs_corr
from microagg_cli.io import numeric_matrix, read_table

A1_A9 = "AGI,FICA,INTVAL,EMCONTRB,TAXINC,WSALVAL,ERNVAL,PEARNVAL,POTHVAL"
PLANS = SAMPLE / "plans"


run = run_cli
small_csv = csv_fixture(
    "id,x,y,z,w,code\n"
    "01,1,10,5,1,A\n02,2,11,4,2,B\n03,3,12,6,1,A\n"
    "04,10,30,1,9,B\n05,11,31,2,8,A\n06,12,32,3,9,B\n"
)


# --------------------------------------------------------------- protect --plan


@pytest.mark.parametrize("name", ["census-correlated", "census-noncorrelated"])
def test_literature_blockings_run_through_protect(name, census_path, tmp_path):
    plan_path = PLANS / f"{name}.toml"
    plan = load_plan(plan_path)
    out, rep = tmp_path / "out.csv", tmp_path / "rep.json"
    res = run("protect", census_path, "--plan", plan_path, "-o", out, "-r", rep, "-q")
    assert res.exit_code == 0, res.output
    prot = pd.read_csv(out)
    assert sorted(prot.columns) == sorted(A1_A9.split(","))  # the four others are dropped
    report = json.loads(rep.read_text())
    assert [b["name"] for b in report["blocks"]] == [b.name for b in plan.blocks]
    for block, entry in zip(plan.blocks, report["blocks"]):
        assert entry["columns"] == list(block.columns) and entry["k"] == 5
        assert entry["n_groups"] == 216 and entry["group_size_histogram"] == {"5": 216}
        # each block is 5-anonymous on its own ...
        assert prot[list(block.columns)].value_counts().min() >= 5
    # ... but not across blocks
    assert prot.value_counts().min() == 1
    assert report["columns"]["dropped"] == ["AFNLWGT", "FEDTAX", "PTOTVAL", "STATETAX"]
    again = tmp_path / "again.csv"
    assert run("protect", census_path, "--plan", plan_path, "-o", again, "-q").exit_code == 0
    assert again.read_bytes() == out.read_bytes()


def test_plan_takes_k_and_method_from_the_command_line(small_csv, tmp_path):
    plan = tmp_path / "p.toml"
    plan.write_text('[[blocks]]\ncolumns = ["x", "y"]\n[[blocks]]\ncolumns = ["z"]\nmethod = "optimal-1d"\n')
    out = tmp_path / "o.csv"
    res = run("protect", small_csv, "--plan", plan, "-o", out, "-k", 3, "--drop", "id", "-q")
    assert res.exit_code == 0, res.output
    lines = out.read_text().splitlines()
    assert lines[0] == "x,y,z,w,code"  # id dropped from the command line, w and code pass through
    assert [ln.split(",")[:3] for ln in lines[1:]] == [
        ["2.0", "11.0", "5.0"], ["2.0", "11.0", "5.0"], ["2.0", "11.0", "5.0"],
        ["11.0", "31.0", "2.0"], ["11.0", "31.0", "2.0"], ["11.0", "31.0", "2.0"],
    ]
    assert [ln.split(",")[3:] for ln in lines[1:]] == [["1", "A"], ["2", "B"], ["1", "A"],
                                                        ["9", "B"], ["8", "A"], ["9", "B"]]
    res = run("protect", small_csv, "--plan", plan, "-o", out, "--force")
    assert res.exit_code == 2
    assert "block 'block1' has no k" in only_error_line(res)


def test_json_plan_and_mic1d_block(small_csv, tmp_path):
    plan = tmp_path / "p.json"
    plan.write_text(json.dumps({
        "drop": ["id"],
        "blocks": [{"name": "bag", "columns": ["x", "y", "z"], "method": "mic1d", "k": 3},
                   {"columns": ["w"], "k": 2}],
    }))
    out, rep = tmp_path / "o.csv", tmp_path / "r.json"
    res = run("protect", small_csv, "--plan", plan, "-o", out, "-r", rep, "-q")
    assert res.exit_code == 0, res.output
    report = json.loads(rep.read_text())
    assert [b["method"]["name"] for b in report["blocks"]] == ["mic1d", "mdav"]
    assert report["blocks"][0]["k_counts"] == "values"
    prot = pd.read_csv(out)
    assert list(prot.columns) == ["x", "y", "z", "w", "code"]
    # w = 1,2,1,9,8,9 alone with mdav k=2: groups {1,3}, {4,6}, {2,5} (rows)
    assert prot["w"].tolist() == [1.0, 5.0, 1.0, 9.0, 5.0, 9.0]
    # the mic1d block keeps every value within its column's range
    assert prot["x"].between(1, 12).all() and prot["z"].between(1, 6).all()


PLAN_ERRORS = {
    "unknown column": ('[[blocks]]\ncolumns = ["x", "nope"]\nk = 2\n', 3,
                       "p.toml, line 2: block 'block1': no column 'nope' in the input"),
    "column in two blocks": ('[defaults]\nk = 2\n[[blocks]]\ncolumns = ["x"]\n[[blocks]]\ncolumns = ["y", "x"]\n', 2,
                             "p.toml, line 6: column 'x' is in block 'block1' and block 'block2'"),
    "k below 2": ('[[blocks]]\ncolumns = ["x"]\nk = 1\n', 2, "p.toml, line 3: k must be an integer >= 2 (k = 1 is no protection), got 1"),
    "unknown method": ('[[blocks]]\ncolumns = ["x"]\nk = 2\nmethod = "mdva"\n', 2,
                       "p.toml, line 4: unknown method 'mdva'"),
    "unknown parameter": ('[[blocks]]\ncolumns = ["x"]\nk = 2\nparams = { gamma = 0.2 }\n', 2,
                          "p.toml, line 4: block 'block1': method 'mdav' has no parameter 'gamma'"),
    "malformed TOML": ('[[blocks]\ncolumns = ["x"]\n', 2, "p.toml, line 1, column 9: malformed TOML"),
    "non-numeric column": ('[[blocks]]\ncolumns = ["code"]\nk = 2\n', 3, "column 'code' is not numeric"),
}


@pytest.mark.parametrize("case", sorted(PLAN_ERRORS))
@pytest.mark.parametrize("command", ["protect", "blocks"])
def test_bad_plans_exit_codes_nothing_written(case, command, small_csv, tmp_path):
    text, code, fragment = PLAN_ERRORS[case]
    plan = tmp_path / "p.toml"
    plan.write_text(text)
    before = sorted(p.name for p in tmp_path.iterdir())
    if command == "protect":
        res = run("protect", small_csv, "--plan", plan, "-o", tmp_path / "o.csv", "-r", tmp_path / "r.json")
    else:
        res = run("blocks", small_csv, "--check", plan, "--evaluate", "-o", tmp_path / "o.toml")
    assert res.exit_code == code, (res.exit_code, res.output)
    assert fragment in only_error_line(res)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written, no temp files
    assert res.stdout == ""


def test_protect_plan_usage_errors(small_csv, tmp_path):
    plan = tmp_path / "p.toml"
    plan.write_text('[[blocks]]\ncolumns = ["x"]\nk = 2\n')
    res = run("protect", small_csv, "--plan", plan, "--columns", "x", "-o", tmp_path / "o.csv")
    assert res.exit_code == 2 and "--columns cannot be combined with --plan" in only_error_line(res)
    res = run("protect", small_csv, "--plan", tmp_path / "missing.toml", "-o", tmp_path / "o.csv")
    assert res.exit_code == 3 and "does not exist" in only_error_line(res)
    res = run("protect", small_csv, "--plan", plan, "--drop", "x", "-o", tmp_path / "o.csv")
    assert res.exit_code == 2 and "'x' is both protected" in only_error_line(res)
    assert not (tmp_path / "o.csv").exists()


# ---------------------------------------------------------------------- blocks


def test_blocks_correlated_vs_cross_on_census_a1_a9(census_path):
    names = A1_A9.split(",")
    X = numeric_matrix(read_table(census_path), names)
    means = {}
    for strategy in ("correlated", "cross"):
        res = run("blocks", census_path, "--columns", A1_A9, "--strategy", strategy, "--size", 3, "-q")
        assert res.exit_code == 0, res.output
        assert res.stderr == ""
        plan = parse_plan(res.stdout)
        assert [len(b.columns) for b in plan.blocks] == [3, 3, 3]
        assert sorted(plan.columns) == sorted(names)
        means[strategy] = plan_mean_abs_corr(X, names, plan)
        assert f"--strategy {strategy} --size 3" in res.stdout.splitlines()[0]
    assert means["correlated"] > means["cross"]
    assert round(means["correlated"], 3) == 0.658


def test_blocks_evaluate_correlated_k5_shows_1g_and_3g(census_path):
    res = run("blocks", census_path, "--columns", A1_A9, "--strategy", "correlated", "--size", 3,
              "-k", 5, "--evaluate", "--format", "json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    (cand,) = doc["candidates"]
    labels = cand["risk"]["labels"]
    assert labels["1G"]["k_prime_worst"] >= 5 and labels["1G"]["k_min_worst"] >= 5
    assert labels["3G"]["k_prime_worst"] < 1.5 and labels["3G"]["k_min_worst"] == 1
    assert 0 < cand["il_sse"] < 5
    text = run("blocks", census_path, "--columns", A1_A9, "--size", 3, "-k", 5, "--evaluate")
    assert text.exit_code == 0
    rows = {}
    for line in text.stdout.splitlines():
        cells = line.split()
        if len(cells) >= 6 and cells[-6] in ("1G", "2G", "3G"):
            rows[cells[-6]] = cells[-6:]  # known, scenarios, k' mean, k' worst, k_min, <k share
    assert set(rows) == {"1G", "2G", "3G"}
    assert [rows[g][1] for g in ("1G", "2G", "3G")] == ["21", "147", "343"]
    assert float(rows["1G"][3]) >= 5.0 and int(rows["1G"][4]) >= 5
    assert float(rows["3G"][3]) < 1.5 and rows["3G"][4] == "1"


def test_blocks_check_prints_blocks(census_path):
    res = run("blocks", census_path, "--check", PLANS / "census-noncorrelated.toml")
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0].split() == ["plan", "block", "method", "k", "mean", "|corr|", "columns"]
    assert lines[2].split()[:4] == ["census-noncorrelated.toml", "a1-a8-a9", "mdav", "5"]
    assert lines[2].endswith("AGI, PEARNVAL, POTHVAL")
    assert "drop: AFNLWGT, FEDTAX, PTOTVAL, STATETAX" in res.stdout


def test_blocks_recommend_writes_the_best_plan(census_path, tmp_path):
    out = tmp_path / "best.toml"
    res = run("blocks", census_path, "--columns", A1_A9, "--strategy", "all", "--size", 3, "-k", 5,
              "--max-il", 3.0, "--max-known", 2, "-o", out, "--format", "json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    evals = {c["name"]: c for c in doc["candidates"]}
    assert list(evals) == ["correlated", "cross", "individual", "single", "random"]
    assert evals["single"]["il_sse"] > 3.0  # excluded by the bound
    ok = {n: c for n, c in evals.items() if c["il_sse"] <= 3.0}
    best = max(ok.values(), key=lambda c: (c["risk"]["worst"]["k_prime_worst"], -c["il_sse"]))
    assert doc["recommended"] == best["name"]
    written = tomllib.loads(out.read_text())
    assert [b["columns"] for b in written["blocks"]] == [b["columns"] for b in best["plan"]["blocks"]]
    assert written["defaults"] == {"method": "mdav", "k": 5}
    # too strict a bound: exit 5 after the table, nothing written
    out2 = tmp_path / "none.toml"
    res = run("blocks", census_path, "--columns", A1_A9, "--strategy", "all", "--size", 3, "-k", 5,
              "--max-il", 0.1, "--max-known", 1, "-o", out2)
    assert res.exit_code == 5
    assert "no candidate plan meets IL_SSE <= 0.1" in only_error_line(res)
    assert "1G" in res.stdout and not out2.exists()


def test_blocks_output_file_needs_force(small_csv, tmp_path):
    out = tmp_path / "plan.toml"
    out.write_text("keep\n")
    res = run("blocks", small_csv, "--columns", "x,y,z,w", "--size", 2, "-o", out)
    assert res.exit_code == 3 and "--force" in only_error_line(res)
    assert out.read_text() == "keep\n"
    res = run("blocks", small_csv, "--columns", "x,y,z,w", "--size", 2, "-o", out, "--force", "-k", 3, "-q")
    assert res.exit_code == 0 and res.stdout == ""
    plan = load_plan(out)
    assert [b.k for b in plan.blocks] == [3, 3]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    # the plan written applies as is
    res = run("protect", small_csv, "--plan", out, "-o", tmp_path / "o.csv", "-q")
    assert res.exit_code == 0, res.output


BLOCKS_USAGE = {
    "all without evaluate": (["--strategy", "all", "--size", "2"], "add --evaluate"),
    "all -o without recommend": (["--strategy", "all", "--size", "2", "--evaluate", "-k", "2", "-o", "{tmp}/p.toml"],
                                 "needs --recommend"),
    "evaluate without k": (["--size", "2", "--evaluate"], "needs -k"),
    "check and strategy": (["--check", "{tmp}/p.toml", "--strategy", "single"], "exclude each other"),
    "bad size": (["--size", "0"], "--size must be an integer >= 1"),
    "max-known alone": (["--size", "2", "--max-known", "2"], "applies to --evaluate"),
    "plan extension": (["--size", "2", "-o", "{tmp}/p.yaml"], ".toml or .json"),
    "k below 2": (["--size", "2", "-k", "1"], "k must be"),
    "unknown method": (["--size", "2", "-m", "nope"], "unknown method"),
}


@pytest.mark.parametrize("case", sorted(BLOCKS_USAGE))
def test_blocks_usage_errors(case, small_csv, tmp_path):
    args, fragment = BLOCKS_USAGE[case]
    res = run("blocks", small_csv, "--columns", "x,y,z,w", *[a.format(tmp=tmp_path) for a in args])
    assert res.exit_code == 2, (res.exit_code, res.output)
    assert fragment in only_error_line(res)
    assert not (tmp_path / "p.toml").exists()
