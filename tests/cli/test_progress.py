"""Progress on stderr: a bar on a terminal, a heartbeat in logs, nothing by default."""

from __future__ import annotations

import io
import logging
import re
import time

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

from conftest import run_cli
from microagg_cli import progress


def test_without_a_tracker_every_call_is_a_no_op():
    with progress.phase("block1", total=5):
        progress.advance(3)
        progress.set_done(4)
    assert progress.counter().tolist() == [0]


def test_heartbeat_lines_name_the_phase_and_the_records(caplog):
    tracker = progress.Tracker("heartbeat", interval=0.05, tick=0.01)
    with caplog.at_level(logging.INFO, logger="microagg_cli"), progress.tracking(tracker):
        with progress.phase("block1: mdav, k=3", total=1_000_000):
            progress.counter()[0] = 340_000  # what a kernel does
            time.sleep(0.3)
    lines = [r.getMessage() for r in caplog.records]
    assert lines and all(ln.startswith("block1: mdav, k=3: 340,000 / 1,000,000 records grouped, ") for ln in lines)
    assert lines[0].endswith(" s left")
    # the rate and the estimate: the records left at the rate so far
    m = re.search(r", ([\d,]+) records/s, about (\d+) s left$", lines[-1])
    rate = int(m.group(1).replace(",", ""))
    assert 340_000 / 0.35 < rate < 340_000 / 0.04
    assert abs(int(m.group(2)) - 660_000 / rate) <= 1


def test_time_left_linear_and_quadratic():
    assert progress.time_left(25, 100, 10.0) == 30.0
    # quadratic: a quarter of the records grouped is 1 - 0.75^2 = 7/16 of the work
    assert progress.time_left(25, 100, 7.0, "quadratic") == pytest.approx(9.0)
    assert progress.time_left(100, 100, 7.0, "quadratic") == 0.0


def test_mixed_run_shows_mdav_and_the_search_with_estimates(tmp_path, monkeypatch, caplog):
    """A mixed protect run: MDAV's records grouped with a time left, then the local
    search's records visited, inside the block's phase."""
    monkeypatch.setattr(progress, "HEARTBEAT_SECONDS", 0.0)
    monkeypatch.setattr(progress.Tracker, "__init__", _fast_tick(progress.Tracker.__init__))
    rng = np.random.default_rng(0)
    n = 40_000
    frame = pd.DataFrame(rng.normal(size=(n, 3)), columns=list("abc"))
    frame["c"] = rng.integers(0, 6, n)
    frame.to_parquet(tmp_path / "in.parquet")
    res = run_cli("protect", tmp_path / "in.parquet", "-o", tmp_path / "o.parquet", "-k", 3, "-v",
                  "--columns", "a,b", "--categorical", "c")
    assert res.exit_code == 0, res.output
    mdav = re.findall(r"block1: heterogeneous MDAV: ([\d,]+) / 40,000 records grouped, .* s left", res.stderr)
    assert mdav and 0 < int(mdav[-1].replace(",", "")) <= n
    assert re.search(r"block1: local search on the mixed objective: [\d,]+ records visited, ", res.stderr)
    # after MDAV, the block's phase counts its records grouped
    lines = res.stderr.splitlines()
    first_mdav = next(i for i, ln in enumerate(lines) if "heterogeneous MDAV: " in ln)
    later = [ln for ln in lines[first_mdav:] if "block1: mdav, k=3: " in ln]
    assert later and all("40,000 / 40,000 records grouped" in ln for ln in later)


def test_a_phase_inside_another_gives_the_display_back(caplog):
    tracker = progress.Tracker("heartbeat", interval=0.02, tick=0.005)
    with caplog.at_level(logging.INFO, logger="microagg_cli"), progress.tracking(tracker):
        with progress.phase("block1: ils, k=3", total=100):
            progress.counter()[0] += 100
            with progress.phase("block1: local search", unit="kicks"):
                progress.counter()[0] += 7
                time.sleep(0.1)
            assert tracker.name == "block1: ils, k=3" and tracker.cell[0] == 100
            time.sleep(0.1)
    lines = [r.getMessage() for r in caplog.records]
    assert any(ln.startswith("block1: local search: 7 kicks, ") for ln in lines)
    assert lines[-1].startswith("block1: ils, k=3: 100 / 100 records grouped, ")


def test_bar_shows_for_a_long_phase_only(monkeypatch):
    monkeypatch.setattr(progress, "SHOW_AFTER", 0.05)
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100)
    tracker = progress.Tracker("bar", console=console, tick=0.01)
    with progress.tracking(tracker):
        with progress.phase("quick", total=10):
            pass
        with progress.phase("block1: mdav, k=3", total=200):
            progress.set_done(50)
            time.sleep(0.3)
    text = out.getvalue()
    assert "block1: mdav, k=3" in text and "50/200" in text and "quick" not in text


def test_cli_heartbeat_with_verbose_when_not_a_terminal(tmp_path, monkeypatch):
    monkeypatch.setattr(progress, "HEARTBEAT_SECONDS", 0.0)
    monkeypatch.setattr(progress.Tracker, "__init__", _fast_tick(progress.Tracker.__init__))
    rng = np.random.default_rng(0)
    pd.DataFrame(rng.normal(size=(20_000, 4)), columns=list("abcd")).to_parquet(tmp_path / "in.parquet")
    res = run_cli("protect", tmp_path / "in.parquet", "-o", tmp_path / "o.parquet", "-k", 3, "-v")
    assert res.exit_code == 0, res.output
    assert "records grouped" in res.stderr and "block1: mdav, k=3: " in res.stderr
    quiet = run_cli("protect", tmp_path / "in.parquet", "-o", tmp_path / "o2.parquet", "-k", 3)
    assert "records grouped" not in quiet.stderr  # no -v: no heartbeat in logs


def _fast_tick(init):
    def wrapped(self, *a, **k):
        k["tick"] = 0.001
        init(self, *a, **k)
    return wrapped


def test_fast_mdav_counts_the_records_it_groups_into_the_progress_cell():
    from microagg_cli.methods._fast_mdav import mdav_fast

    X = np.random.default_rng(1).normal(size=(500, 3))
    with progress.tracking(progress.Tracker("off")) as tracker:
        with progress.phase("block1", total=500):
            mdav_fast(X, 3)
            assert tracker.cell[0] == 500


def test_a_silenced_thread_beside_the_phase_on_display_leaves_it_alone(caplog):
    """The risk set-up runs beside the utility phase (``threads.in_background``): its
    phases and counts must neither show nor overwrite the phase on display."""
    from microagg_cli.threads import in_background

    tracker = progress.Tracker("heartbeat", interval=0.05, tick=0.01)

    def beside() -> int:
        with progress.silenced(), progress.phase("PLD pair table", total=10):
            progress.set_done(9)
            progress.counter()[0] = 7
            time.sleep(0.2)
        return 42

    with caplog.at_level(logging.INFO, logger="microagg_cli"), progress.tracking(tracker):
        with progress.phase("utility measures", total=8, unit="measures"):
            progress.set_done(3)
            wait = in_background(beside)
            time.sleep(0.3)
            assert wait() == 42
            assert tracker.cell.tolist() == [3]
    lines = [r.getMessage() for r in caplog.records]
    assert lines and all(ln.startswith("utility measures: 3 / 8 measures") for ln in lines)


def test_in_background_re_raises_the_error_of_its_call():
    from microagg_cli.threads import in_background

    def boom() -> None:
        raise ValueError("bad option")

    wait = in_background(boom)
    try:
        wait()
    except ValueError as exc:
        assert str(exc) == "bad option"
    else:
        raise AssertionError("the error was lost")
