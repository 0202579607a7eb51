"""Estimates before a method starts: every method's cost model, the announcement over
30 s and the refusal over --time-limit (exit 2), made from n, p and k alone."""

from __future__ import annotations

import logging

import pytest

from conftest import SAMPLE, run_cli
from microagg_cli.blocking import Block
from microagg_cli.errors import InvalidParameterError
from microagg_cli.methods import METHODS, CostModel, get_method
from microagg_cli.protection.table import ANNOUNCE_SECONDS, check_estimate, estimate_block


@pytest.mark.parametrize("name", list(METHODS))
def test_every_method_has_a_cost_model_growing_with_n(name):
    spec = METHODS[name]
    assert isinstance(spec.cost, CostModel)
    small, large = spec.estimate_seconds(10_000, 10, 3), spec.estimate_seconds(100_000, 10, 3)
    assert 0 < small < large
    assert spec.estimate_seconds(10_000, 10, 3) == small  # no timing: the same figure every time


def test_cost_model_arithmetic():
    cost = CostModel(2.0, 2.0, width=1.0, k_power=1.0)
    assert cost.seconds(10_000, 10, 3) == 2.0
    assert cost.seconds(20_000, 10, 3) == pytest.approx(8.0)
    assert cost.seconds(10_000, 20, 6) == pytest.approx(8.0)


def test_block_estimate_sums_strata_and_parts():
    spec = get_method("md")
    block = Block("b", tuple(f"x{j}" for j in range(10)), "md", 3, {})
    one = spec.estimate_seconds(50_000, 10, 3)
    assert estimate_block(spec, block, [50_000]) == pytest.approx(one)
    assert estimate_block(spec, block, [25_000, 25_000]) == pytest.approx(2 * spec.estimate_seconds(25_000, 10, 3))
    # partitioned: 5 parts of 10,000
    assert estimate_block(spec, block, [50_000], partition_size=10_000) == pytest.approx(
        5 * spec.estimate_seconds(10_000, 10, 3))


def test_announced_over_30_s_and_refused_over_the_limit(caplog):
    spec = get_method("md")
    block = Block("block1", tuple(f"x{j}" for j in range(10)), "md", 3, {})
    est = estimate_block(spec, block, [50_000])
    assert ANNOUNCE_SECONDS < est < 600
    with caplog.at_level(logging.WARNING, logger="microagg_cli"):
        assert check_estimate(spec, block, [50_000], 600.0) == est
    assert "block block1: md on 50,000 x 10 records, k=3: estimated to take about" in caplog.text
    with pytest.raises(InvalidParameterError, match=r"estimated to take about .*, over --time-limit 60 s"):
        check_estimate(spec, block, [50_000], 60.0)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="microagg_cli"):
        check_estimate(spec, block, [50_000], 0.0)  # 0: no limit, still announced
        check_estimate(spec, block, [1_000], 600.0)  # short: nothing said
    assert caplog.text.count("estimated to take about") == 1


def test_cli_refuses_above_time_limit_with_exit_2(tmp_path):
    out = tmp_path / "o.csv"
    res = run_cli("protect", SAMPLE / "census.csv", "-o", out, "-k", "3", "--method", "md", "--time-limit", "0.001")
    assert res.exit_code == 2
    assert "estimated to take about" in res.stderr and "--time-limit 0.001 s" in res.stderr
    assert "Traceback" not in res.stderr and not out.exists()
    ok = run_cli("protect", SAMPLE / "census.csv", "-o", out, "-k", "3", "--method", "md", "-q")
    assert ok.exit_code == 0, ok.stderr


def test_default_limit_refuses_the_slowest_methods_at_scale():
    """The default --time-limit (600 s) keeps grids bounded: md at 100,000 x 10 is refused
    before it starts; mdav at 1,000,000 x 10 is not."""
    block = Block("b", tuple(f"x{j}" for j in range(10)), "md", 3, {})
    with pytest.raises(InvalidParameterError):
        check_estimate(get_method("md"), block, [100_000], 600.0)
    check_estimate(get_method("mdav"), block, [1_000_000], 600.0)


def test_report_states_the_default_budget_used(monkeypatch):
    """A budget left unset is filled in for n before the method runs, so the block's
    params (the report's) say how many perturbations / generations ran."""
    import numpy as np

    import microagg_cli.methods.genetic as genetic
    import microagg_cli.methods.refine as refine
    from microagg_cli.protection.block import protect_array

    monkeypatch.setattr(refine, "ILS_MIN_ITERATIONS", 400)
    monkeypatch.setattr(genetic, "GENETIC_WORK", 600)
    X = np.random.default_rng(3).normal(size=(60, 2))
    res = protect_array(X, 3, method="ils")
    assert res.block.params["iterations"] == 400
    res = protect_array(X, 3, method="genetic")
    assert res.block.params["iterations"] == 300  # 600 / 60 = 10, raised to the floor of 300
    res = protect_array(X, 3, method="ils", params={"iterations": 50})
    assert res.block.params["iterations"] == 50


def test_date_detection_reads_only_columns_that_can_hold_dates(tmp_path, monkeypatch):
    """A CSV column without a YYYY-MM-DD cell never reaches the full ISO-date test (which
    reads the column's missing cells); a column of dates still does and is protected as
    dates."""
    import csv

    import numpy as np

    from microagg_cli import api
    from microagg_cli.roles import dates as dates_module

    rng = np.random.default_rng(5)
    path = tmp_path / "d.csv"
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["x", "y", "when"])
        for i in range(30):
            w.writerow([f"{rng.normal():.4f}", f"{rng.normal():.4f}", f"2024-{1 + i % 12:02d}-{1 + i % 27:02d}"])
    seen = []
    real = dates_module.iso_dates
    monkeypatch.setattr(dates_module, "iso_dates", lambda table, name: seen.append(name) or real(table, name))
    out = tmp_path / "o.csv"
    api.protect(path, out, k=3, columns=["x", "y", "when"])
    assert seen == ["when"]
    released = out.read_text().splitlines()[1].split(",")
    assert len(released[2]) == 10 and released[2][4] == "-"  # a date again
    from microagg_cli.io import read_table

    table = read_table(path)
    assert dates_module.date_candidates(table, ["x", "y", "when", "absent"]) == ["when", "absent"]
