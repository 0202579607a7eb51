"""sdc blocks warns when the plan it recommends or checks leaves an intruder scenario
with k' < k, and its --size help says what the strategies do."""

from __future__ import annotations

import json

from conftest import SAMPLE, run_cli


def test_recommendation_with_kprime_below_k_warns_on_stderr_and_in_the_report(census_path):
    args = ["blocks", census_path, "--strategy", "all", "--size", 3, "-k", 5, "--max-known", 2, "--max-il", 4]
    res = run_cli(*args)
    assert res.exit_code == 0, res.output
    warn = [ln for ln in res.stderr.splitlines() if "WARNING" in ln]
    assert len(warn) == 1
    assert "plan cross: k' < k = 5 for 2G intruders" in warn[0] and "k' = 1.04 knowing" in warn[0]
    doc = json.loads(run_cli(*args, "--format", "json", "-q").stdout)
    assert doc["recommended"] == "cross"
    assert doc["warnings"] == [warn[0].split("WARNING: ", 1)[1]]


def test_checked_plan_warns_and_a_safe_one_does_not(census_path):
    res = run_cli("blocks", census_path, "--check", SAMPLE / "plans" / "census-correlated.toml", "--evaluate",
                  "-k", 5, "--max-known", 2, "--format", "json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["warnings"] and all("k' < k = 5" in w for w in doc["warnings"])
    assert "WARNING" in res.stderr
    one = run_cli("blocks", census_path, "--strategy", "single", "-k", 3, "--evaluate", "--max-known", 1,
                  "--format", "json")
    assert one.exit_code == 0, one.output
    assert json.loads(one.stdout)["warnings"] == [] and "WARNING" not in one.stderr


def test_size_help_matches_where_the_smaller_block_goes(census_path):
    help_text = " ".join(run_cli("blocks", "--help").stdout.split())
    assert "the last block may be smaller" not in help_text
    assert "need not be the last" in help_text
    # and the behaviour the help describes: correlated puts the remainder wherever its
    # first column sorts (here first), cross keeps sizes within one of each other
    doc = json.loads(run_cli("blocks", census_path, "--strategy", "correlated", "--size", 3, "--format", "json",
                             "-q").stdout)
    sizes = [len(b["columns"]) for b in doc["candidates"][0]["plan"]["blocks"]]
    assert sorted(sizes) == [1, 3, 3, 3, 3] and sizes[-1] == 3
    doc = json.loads(run_cli("blocks", census_path, "--strategy", "cross", "--size", 3, "--format", "json",
                             "-q").stdout)
    sizes = [len(b["columns"]) for b in doc["candidates"][0]["plan"]["blocks"]]
    assert max(sizes) - min(sizes) <= 1
