"""RMD on a singular or near-singular robust scatter: skipped with the reason, never a number."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import run_cli
from microagg_cli.metrics.rmd import RMD_RCOND, rmd_risk, scatter_rcond


def test_scatter_rcond():
    assert scatter_rcond(np.eye(3)) == 1.0
    assert scatter_rcond(np.diag([4.0, 1.0])) == 0.25
    assert scatter_rcond(np.array([[1.0, 1.0], [1.0, 1.0]])) == 0.0


def test_collinear_columns_are_skipped_with_the_reason(rng):
    a, b = rng.normal(size=(2, 200))
    X = np.column_stack([a, b, a + b])  # a total and its parts
    out = rmd_risk(X, X + 0.01 * rng.normal(size=X.shape))
    assert out["rmdid1"] is None and out["rmdid2"] is None and out["unsafe1"] is None
    assert out["rcond"] < RMD_RCOND
    assert "singular" in out["skipped_reason"] and "--columns" in out["skipped_reason"]
    ok = rmd_risk(X[:, :2], X[:, :2])
    assert ok["rmdid1"] == 1.0 and ok["rcond"] > RMD_RCOND and "skipped_reason" not in ok


def test_census_rmd_is_skipped(census_matrix, census_path, tmp_path):
    X = census_matrix
    out = rmd_risk(X, X * 1.001)
    assert out["rmdid1"] is None and out["rcond"] < RMD_RCOND
    prot = tmp_path / "p.csv"
    assert run_cli("protect", census_path, "-o", prot, "-k", 3, "-q").exit_code == 0
    html = tmp_path / "e.html"
    res = run_cli("evaluate", census_path, prot, "--max-scenarios", 2, "--html", html)
    assert res.exit_code == 0, res.output
    assert "skipped" in res.stderr and "singular" in res.stderr
    assert "Not computed: the robust scatter is singular" in html.read_text()


@pytest.mark.parametrize("p", [2, 4])
def test_regular_data_still_gets_numbers(rng, p):
    X = rng.normal(size=(300, p))
    out = rmd_risk(X, X + 0.5 * rng.normal(size=X.shape))
    assert out["rmdid1"] is not None and 0 <= out["rmdid1"] <= 1
