"""ils is reproducible by default: a fixed amount of work, not a wall-clock budget, so
the same command and seed give the same bytes however busy the machine is."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import run_cli


@contextlib.contextmanager
def busy_cpus(n: int = 2):
    """``n`` busy-loop processes beside the test (one per core of the reference machine)."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait(timeout=10)


def small_file(tmp_path, n=48):
    X = np.random.default_rng(3).normal(size=(n, 2)) * 10 + 50
    path = tmp_path / "small.csv"
    path.write_text("a,b\n" + "".join(f"{x:.2f},{y:.2f}\n" for x, y in X))
    return path


def protect_twice(tmp_path, *extra):
    src = small_file(tmp_path)
    outs = []
    for i, busy in enumerate((False, True)):
        out, rep = tmp_path / f"o{i}.csv", tmp_path / f"r{i}.json"
        with busy_cpus() if busy else contextlib.nullcontext():
            res = run_cli("protect", src, "-o", out, "-k", 3, "--method", "ils", "--seed", 1, "-r", rep,
                          "-q", *extra)
        assert res.exit_code == 0, res.output
        outs.append((out.read_bytes(), json.loads(rep.read_text())))
    return outs


def test_ils_same_bytes_under_load_fixed_iterations(tmp_path):
    (a, ra), (b, rb) = protect_twice(tmp_path, "--param", "iterations=20000")
    assert a == b
    for r in (ra, rb):
        assert r["audit"]["reproduce"]["reproducible"] is True
        assert r["blocks"][0]["reproducibility"].startswith("same data")


@pytest.mark.slow
def test_ils_same_bytes_under_load_with_default_parameters(tmp_path):
    """Reproducibility of ``ils`` at its default parameters (about 25 s of CPU)."""
    (a, ra), (b, _rb) = protect_twice(tmp_path)
    assert a == b
    assert ra["blocks"][0]["params"] == {} or "time_budget" not in ra["blocks"][0]["params"] \
        or ra["blocks"][0]["params"]["time_budget"] == 0


def test_ils_time_budget_is_reported_not_reproducible(tmp_path):
    src = small_file(tmp_path, 24)
    out, rep = tmp_path / "o.csv", tmp_path / "r.json"
    res = run_cli("protect", src, "-o", out, "-k", 3, "--method", "ils", "-p", "time_budget=0.2", "-r", rep, "-q")
    assert res.exit_code == 0, res.output
    r = json.loads(rep.read_text())
    assert r["blocks"][0]["reproducibility"] == "not reproducible across machines (time_budget)"
    assert r["audit"]["reproduce"]["reproducible"] is False
    assert "not reproducible across machines" in r["audit"]["reproduce"]["note"]
