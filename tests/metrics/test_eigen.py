"""sdcMicro's eigenvalue utility figures (eigen, robeigen), IL_SSE on raw values,
``sdc evaluate --scale raw`` and ``--max-scenarios 0``."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import run_cli

from microagg_cli.metrics import METRICS, evaluate_arrays
from microagg_cli.metrics.utility import eigen, il_sse, il_sse_blocks, robeigen


def _grouped(X, k):
    out = X.copy()
    order = np.argsort(X[:, 0], kind="stable")
    for i in range(0, len(order) - len(order) % k, k):
        g = order[i:i + k] if i + 2 * k <= len(order) else order[i:]
        out[g] = X[g].mean(axis=0)
    return out


def test_eigen_hand_worked():
    X = np.array([[1.0, 2.0], [2.0, 1.0], [3.0, 4.0], [4.0, 3.0]])  # r = 0.6: (1.6, 0.4)
    r = eigen(X, X[:, [0, 0]] + [0.0, 0.5])  # r = 1: (2, 0)
    assert r["value"] == pytest.approx(0.4 / 1.6 + 0.4 / 0.4)
    assert r["attributes"] == 2 and r["skipped"] == 0


def test_eigen_is_scale_free_and_permutation_invariant():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 4)) @ rng.normal(size=(4, 4))
    Xp = _grouped(X, 3)
    v = eigen(X, Xp)["value"]
    s = np.array([1.0, 100.0, 0.01, 7.0])
    assert eigen(X * s + 3, Xp * s + 3)["value"] == pytest.approx(v)
    perm = [2, 0, 3, 1]
    assert eigen(X[:, perm], Xp[:, perm])["value"] == pytest.approx(v)
    assert v > 0


def test_constant_columns_and_null_space_are_skipped():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 3))
    X = np.column_stack([X, X.sum(axis=1), np.full(30, 2.0)])  # exact dependency + constant
    r = eigen(X, _grouped(X, 3))
    assert r["skipped"] == 1 and r["attributes"] == 4 and r["eigenvalues_skipped"] == 1
    assert np.isfinite(r["value"])


def test_robeigen_is_sdcmicros_formula_on_the_mcd_scatter():
    """eigenvalues of the MCD covariance of scale(x) and scale(xm) (own means and
    sample sds), sum |e - e'| / e."""
    from microagg_cli.mcd import det_mcd

    rng = np.random.default_rng(2)
    X = rng.normal(size=(200, 3)) @ np.array([[1.0, 0.5, 0.0], [0.0, 1.0, 0.3], [0.0, 0.0, 1.0]])
    Xp = _grouped(X, 5)

    def spectrum(A):
        A = (A - A.mean(0)) / A.std(0, ddof=1)
        return np.sort(np.linalg.eigvalsh(det_mcd(A)[1]))[::-1]

    e1, e2 = spectrum(X), spectrum(Xp)
    assert robeigen(X, Xp)["value"] == pytest.approx(float((np.abs(e1 - e2) / e1).sum()))
    assert robeigen(X, X)["value"] == 0.0
    # own standardization: rescaling the protected file changes nothing
    assert robeigen(X, Xp * 3 + 1)["value"] == pytest.approx(robeigen(X, Xp)["value"], rel=1e-9)


def test_il_sse_raw_hand_worked_and_unit_variance_equals_z():
    X = np.array([[0.0, 1.0], [2.0, 1.0], [4.0, 5.0], [6.0, 5.0]])
    Xp = np.array([[1.0, 1.0], [1.0, 1.0], [5.0, 5.0], [5.0, 5.0]])
    assert il_sse_blocks(X, Xp, scale="raw")["overall"] == pytest.approx(100 * 4 / 36)
    # columns with equal variance: raw and z-scored IL agree
    rng = np.random.default_rng(3)
    Z = rng.normal(size=(40, 3))
    Z = (Z - Z.mean(0)) / Z.std(0)
    Zp = _grouped(Z, 4)
    assert il_sse_blocks(Z, Zp, scale="raw")["overall"] == pytest.approx(il_sse(Z, Zp))
    # a column with a large variance dominates the raw figure
    W = Z * [1.0, 1.0, 1000.0]
    Wp = Zp * [1.0, 1.0, 1000.0]
    raw = il_sse_blocks(W, Wp, scale="raw")["overall"]
    col = 100 * ((W[:, 2] - Wp[:, 2]) ** 2).sum() / ((W[:, 2] - W[:, 2].mean()) ** 2).sum()
    assert raw == pytest.approx(col, rel=1e-4)


def test_evaluate_arrays_reports_them():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 3)) + 5
    rep = evaluate_arrays(X, _grouped(X, 3), k=3)
    u = rep["utility"]
    assert u["eigen"]["value"] == pytest.approx(eigen(X, _grouped(X, 3))["value"])
    assert u["robeigen"]["value"] == pytest.approx(robeigen(X, _grouped(X, 3))["value"])
    assert u["il_sse_raw"]["overall"] == pytest.approx(
        il_sse_blocks(X, _grouped(X, 3), scale="raw")["overall"])
    for name in ("eigen", "robeigen", "il_sse_raw"):
        assert name in METRICS


@pytest.fixture(scope="module")
def census_mdav3(tmp_path_factory):
    from conftest import SAMPLE

    out = tmp_path_factory.mktemp("eig") / "mdav3.csv"
    res = run_cli("protect", SAMPLE / "census.csv", "-o", out, "-k", "3", "-q")
    assert res.exit_code == 0, res.output
    return SAMPLE / "census.csv", out


def test_cli_scale_raw_and_census_figures(census_mdav3):
    orig, prot = census_mdav3
    res = run_cli("evaluate", orig, prot, "--scale", "raw", "--known", "AGI", "--format", "json", "-q")
    assert res.exit_code == 0, res.output
    rep = json.loads(res.stdout)
    s = rep["summary"]
    assert s["il_sse"] == pytest.approx(5.6922, abs=5e-5)
    assert s["il_sse_raw"] == pytest.approx(9.5377, abs=5e-5)
    assert s["eigen"] == pytest.approx(2.3883, abs=5e-4)
    assert s["robeigen"] == pytest.approx(1.9225, abs=5e-4)
    assert rep["parameters"]["scale"] == "raw"
    z = json.loads(run_cli("evaluate", orig, prot, "--known", "AGI", "--format", "json", "-q").stdout)
    assert z["summary"]["il_sse_raw"] is None
    assert z["measures"]["utility"]["il_sse_raw"]["overall"] == pytest.approx(9.5377, abs=5e-5)


def test_cli_scale_is_checked(census_mdav3):
    orig, prot = census_mdav3
    res = run_cli("evaluate", orig, prot, "--scale", "log")
    assert res.exit_code == 2


def test_max_scenarios_zero_is_accepted(census_mdav3):
    orig, prot = census_mdav3
    res = run_cli("evaluate", orig, prot, "--columns", "AGI,FICA,INTVAL", "--max-scenarios", "0",
                  "--format", "json", "-q")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["parameters"]["scenario_count"] == 7


@pytest.mark.slow
def test_max_scenarios_zero_means_all(tmp_path):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(24, 11)).round(3) + 10
    Xp = _grouped(X, 3)
    head = ",".join(f"c{j}" for j in range(11))
    np.savetxt(tmp_path / "o.csv", X, delimiter=",", header=head, comments="")
    np.savetxt(tmp_path / "p.csv", Xp, delimiter=",", header=head, comments="")
    res = run_cli("evaluate", tmp_path / "o.csv", tmp_path / "p.csv", "--max-scenarios", "0",
                  "--format", "json", "-q")
    assert res.exit_code == 0, res.output
    rep = json.loads(res.stdout)
    assert rep["parameters"]["scenario_mode"] == "all"
    assert rep["parameters"]["scenario_count"] == 2**11 - 1  # above the default cap of 10 columns
    res = run_cli("evaluate", tmp_path / "o.csv", tmp_path / "p.csv", "--max-scenarios", "-1")
    assert res.exit_code == 2


def test_multidsort_raw_units_figure(census_matrix):
    """The Multi-DSort paper's Census k=3 figure (2.0954) is a raw-unit IL: multidsort
    run and measured on unstandardised values gives about 2.105."""
    from microagg_cli.methods.fixed_size import multidsort
    from microagg_cli.partition import aggregate

    labels = multidsort(census_matrix, 3)
    raw = il_sse_blocks(census_matrix, aggregate(census_matrix, labels), scale="raw")["overall"]
    assert raw == pytest.approx(2.1054, abs=5e-4)
