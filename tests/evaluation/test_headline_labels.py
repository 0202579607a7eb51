"""The headline SDID and linkage say what they are, beside sdcMicro's all-column dRisk."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import run_cli
from microagg_cli.metrics.risk import sdid


def test_sdid_all_columns_beside_the_scenario_mean(census_path, census_matrix, tmp_path):
    prot = tmp_path / "p.csv"
    assert run_cli("protect", census_path, "-o", prot, "-k", 3, "-q").exit_code == 0
    res = run_cli("evaluate", census_path, prot, "--max-scenarios", 8, "--format", "json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    Xp = np.loadtxt(prot, delimiter=",", skiprows=1)
    s = doc["summary"]
    assert s["sdid_all"] == pytest.approx(sdid(census_matrix, Xp))
    per = doc["measures"]["risk"]["per_scenario"]
    assert s["sdid"] == pytest.approx(np.mean([r["sdid"] for r in per]))
    assert s["linkage_scenarios"] == doc["measures"]["risk"]["linkage"]["scenarios"]
    assert "mean over the intruder scenarios; with all 13 columns known (sdcMicro dRisk)" in res.stderr
    assert f"mean over the {s['linkage_scenarios']} largest scenario(s)" in res.stderr
