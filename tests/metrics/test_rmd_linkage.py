"""RMD interval disclosure (sdcMicro's dRiskRMD) and one-to-one record linkage.

Reference figures of sdcMicro (R 4.2.2, robustbase 0.95-0, sdcMicro's ``R/dRiskRMD.R``
at commit cf3251017482bb215f0a9abf4a930f502399fb72, its function ``dRiskRMDWORK``
evaluated unchanged with ``Rscript`` in a scratch folder outside the repository):
x = ``sample_data/household.csv``'s income, expend, savings (read with ``read.csv``);
xm = the same columns of

* ``MDAV3``: ``sdc protect sample_data/household.csv -o hh.csv --method mdav -k 3
  --columns income,expend,savings`` (the file this project writes, read back);
* ``NOISE``: x + N(0, (0.002 sd_j)^2) noise from ``numpy.random.default_rng(38)``
  (``_noise`` below), written with 17 significant digits.

Figures "given" come from a run where ``covMcd`` was replaced by a function returning
the fixed matrix ``SCATTER`` below (the centre is the column means in both programs);
figures "R mean" are the means over ``set.seed(1..30); covMcd(scale(x))`` runs (R's
MCD draws random subsets, so its figures vary from seed to seed: wrisk1 of MDAV3
between 0.31695 and 0.32459).
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from microagg_cli.metrics import METRICS, evaluate_arrays
from microagg_cli.metrics.linkage import LinkageEvaluator, linkage, linkage_scenarios
from microagg_cli.metrics.rmd import rmd_risk

HOUSEHOLD = Path(__file__).resolve().parents[2] / "sample_data" / "household.csv"
COLUMNS = ("income", "expend", "savings")

#: our det_mcd scatter of scale(x) (unscaled, as the fixed covariance given to R)
SCATTER = np.array([
    [0.9960588775020158, 0.009865424555870432, -0.005813691708881782],
    [0.00986542455587043, 0.9927178587471489, -0.0008106769831588266],
    [-0.005813691708881782, -0.0008106769831588266, 0.9918850858316495],
])

#: sdcMicro's dRiskRMDWORK(x, xm) with covMcd replaced by SCATTER
GIVEN = {
    "mdav3": {"rmdid1": 0.02794759825327511, "rmdid2": 0.0, "rmdid1w": 0.32580549392778352, "rmdid2w": 0.0,
              "unsafe1": 128, "unsafe2": 0},
    "noise": {"rmdid1": 0.66681222707423582, "rmdid2": 0.62969432314410478, "rmdid1w": 180.24839691209522,
              "rmdid2w": 160.87671795163652, "unsafe1": 3054, "unsafe2": 2884},
}
#: means of sdcMicro's figures over set.seed(1..30) (its own covMcd)
R_MEAN = {
    "mdav3": {"rmdid1": 0.02794759825327511, "rmdid1w": 0.32273546898174366, "rmdid2": 0.0},
    "noise": {"rmdid1": 0.66174672489082964, "rmdid1w": 176.02150390182393, "rmdid2": 0.62476710334788943,
              "rmdid2w": 157.04423050714715},
}


def _read(path: Path) -> np.ndarray:
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    return np.array([[float(r[c]) for c in COLUMNS] for r in rows])


@pytest.fixture(scope="module")
def household() -> np.ndarray:
    return _read(HOUSEHOLD)


@pytest.fixture(scope="module")
def mdav3(tmp_path_factory) -> np.ndarray:
    out = tmp_path_factory.mktemp("rmd") / "hh.csv"
    res = run_cli("protect", str(HOUSEHOLD), "-o", str(out), "--method", "mdav", "-k", "3",
                  "--columns", ",".join(COLUMNS), "-q",  # the id and codes released unchanged on purpose (named)
                  "--passthrough", "ori_hid,urbrur,roof,walls,water,electcon,relat,sex,hhcivil")
    assert res.exit_code == 0, res.output
    return _read(out)


def _noise(X: np.ndarray) -> np.ndarray:
    rng = np.random.default_rng(38)
    return X + rng.normal(size=X.shape) * X.std(axis=0, ddof=1) * 0.002


def _protected(name, household, mdav3):
    return mdav3 if name == "mdav3" else _noise(household)


# ------------------------------------------------------------------------ RMD


@pytest.mark.parametrize("name", ["mdav3", "noise"])
def test_rmd_equals_sdcmicro_given_the_same_scatter(name, household, mdav3):
    got = rmd_risk(household, _protected(name, household, mdav3), scatter=SCATTER)
    for key, want in GIVEN[name].items():
        assert math.isclose(got[key], want, rel_tol=1e-9, abs_tol=1e-12), (key, got[key], want)
    assert got["scatter"] == "given"


@pytest.mark.parametrize("name", ["mdav3", "noise"])
def test_rmd_within_one_percent_of_sdcmicro_with_its_own_mcd(name, household, mdav3):
    got = rmd_risk(household, _protected(name, household, mdav3))
    assert got["scatter"] == "mcd"
    for key, want in R_MEAN[name].items():
        assert got[key] == pytest.approx(want, rel=0.01, abs=1e-12), key
    if name == "mdav3":
        # MDAV groups of 3 identical records: every unsafe record has a twin at distance 0
        assert got["unsafe1"] == 128 and got["rmdid2"] == 0.0


def test_rmd_hand_case():
    # two columns; the MCD scatter is given as the identity, the centre as the means (0)
    X = np.array([[-1.0, -1.0], [1.0, 1.0], [-1.0, 1.0], [1.0, -1.0], [0.0, 0.0]])
    # z-scores: sd = sqrt(1) for each column (n - 1 = 4, sum of squares 4): Z = X
    Xp = X.copy()
    Xp[0] += [0.0005, 5.0]    # first value 0.0005 off: inside +-0.01*0.05*sqrt(2) = 0.000707
    Xp[1] += [0.001, 0.001]   # both outside
    out = rmd_risk(X, X + np.array([[0.0, 0.0]]), scatter=np.eye(2))
    # identity: every record with distance > 0 is unsafe (strict interval), the centre record is not
    assert out["unsafe1"] == 4 and out["rmdid1"] == pytest.approx(0.8)
    assert out["rmdid1w"] == pytest.approx(4 * 4 * 0.05 * math.sqrt(2) / 5)
    # all records are more than 0.05 apart: nothing hides them
    assert out["rmdid2"] == out["rmdid1"]


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(8, 40), st.integers(1, 4), st.floats(0.0, 0.05))
def test_rmd_bounds(seed, n, p, noise):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    Xp = X + noise * rng.normal(size=(n, p))
    out = rmd_risk(X, Xp)
    assert 0.0 <= out["rmdid2"] <= out["rmdid1"] <= 1.0
    assert 0.0 <= out["rmdid2w"] <= out["rmdid1w"]
    assert out["unsafe1"] == round(out["rmdid1"] * n) and out["unsafe2"] == round(out["rmdid2"] * n)
    # a larger k widens every interval: never fewer unsafe records
    assert rmd_risk(X, Xp, k=0.1)["unsafe1"] >= out["unsafe1"]


# ------------------------------------------------------------------- linkage


def test_linkage_hand_cases():
    # one-to-one beats nearest neighbour: both originals are nearest to 0.6 (DLD 50 %)
    assert linkage(np.array([[0.0], [1.0]]), np.array([[0.6], [2.0]])) == 100.0
    # groups of three identical protected records: 1/3 credit each
    X = np.array([[0.0], [1.0], [2.0], [10.0], [11.0], [12.0]])
    Xp = np.array([[1.0], [1.0], [1.0], [11.0], [11.0], [11.0]])
    assert linkage(X, Xp) == pytest.approx(100 / 3)
    # a into c' (wrong), b into the tied class {a', b'} holding b' (1/2), c into it too (wrong)
    assert linkage(np.array([[0.0], [1.0], [5.0]]), np.array([[4.0], [4.0], [0.5]])) == pytest.approx(50 / 3)
    # duplicate originals, identity protection: the twins share one link, 2/4 each
    X = np.array([[0.0], [0.0], [5.0]])
    assert linkage(X, X.copy()) == pytest.approx(200 / 3)


def test_linkage_distances_and_attributes():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    Xp = np.array([[0.0, 0.9], [1.0, 0.0], [0.0, 0.1]])  # rows 0 and 2 swapped on column 1
    for distance in ("euclidean", "manhattan", "gower"):
        assert linkage(X, Xp, distance=distance) == pytest.approx(100 / 3), distance
    assert linkage(X, Xp, [0]) == pytest.approx(100 * (1 / 2 + 1 / 2 + 1) / 3)  # column 0: {0, 2} tied
    with pytest.raises(Exception, match="distance"):
        linkage(X, Xp, distance="cosine")


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 60), st.integers(1, 4))
def test_linkage_of_identical_distinct_data_is_100_and_row_order_free(seed, n, p):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    assert linkage(X, X.copy()) == pytest.approx(100.0)
    Xp = np.round(X + 0.3 * rng.normal(size=(n, p)), 1)
    perm = rng.permutation(n)
    a = linkage(X, Xp)
    assert 0.0 <= a <= 100.0
    assert linkage(X[perm], Xp[perm]) == pytest.approx(a)


def test_linkage_windows_estimate_the_exact_figure():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(1200, 3))
    Xp = X + 0.25 * rng.normal(size=X.shape)
    exact = LinkageEvaluator(X, Xp).scenario([0, 1, 2])
    ev = LinkageEvaluator(X, Xp, exact_max=1000, window=600, windows=4, seed=1)
    est = ev.scenario([0, 1, 2])
    assert ev.method == "windows" and est["records"] == 4 * 300 and exact["records"] == 1200
    assert est["value"] == pytest.approx(exact["value"], abs=6.0)
    assert ev.scenario([0, 1, 2]) == est  # deterministic
    par = ev.parameters()
    assert (par["method"], par["window"], par["windows"], par["seed"]) == ("windows", 600, 4, 1)
    # identical data: 100 in every window
    assert LinkageEvaluator(X, X.copy(), exact_max=10, window=50, windows=3).scenario([0, 2])["value"] == 100.0


def test_linkage_scenarios_are_the_largest():
    subsets = [(0,), (1,), (0, 1), (2,), (0, 2), (1, 2), (0, 1, 2)]
    assert linkage_scenarios(subsets, 0) == list(range(7))
    assert linkage_scenarios(subsets, 3) == [2, 4, 6]
    assert linkage_scenarios(subsets, 10) == list(range(7))


# -------------------------------------------------------------- evaluate wiring


def test_evaluate_arrays_carries_linkage_and_rmd():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3))
    Xp = X + 0.2 * rng.normal(size=X.shape)
    rep = evaluate_arrays(X, Xp, k=3)
    risk = rep["risk"]
    per = risk["per_scenario"]
    done = [r for r in per if r["linkage"] is not None]
    assert len(done) == risk["linkage"]["scenarios"] == 4
    assert sorted(len(r["attributes"]) for r in done) == [2, 2, 2, 3]
    for r in done:
        assert r["linkage"] == pytest.approx(linkage(X, Xp, r["attributes"]))
    assert risk["mean"]["linkage"] == pytest.approx(np.mean([r["linkage"] for r in done]))
    assert risk["worst"]["linkage"]["value"] == max(r["linkage"] for r in done)
    assert risk["rmd"] == rmd_risk(X, Xp)
    every = evaluate_arrays(X, Xp, k=3, linkage_scenarios=0, rmd=False)["risk"]
    assert every["linkage"]["scenarios"] == 7 and every["rmd"] is None
    for name in ("linkage", "rmdid1", "rmdid1w", "rmdid2"):
        assert METRICS[name].kind == "risk" and METRICS[name].better == "lower"


def test_evaluate_gate_max_linkage_exits_5(tmp_path):
    rng = np.random.default_rng(2)
    X = np.round(rng.normal(size=(30, 2)) * 10, 3)
    o, p = tmp_path / "o.csv", tmp_path / "p.csv"
    for path, M in ((o, X), (p, X + 0.01)):
        path.write_text("a,b\n" + "".join(f"{float(r[0])!r},{float(r[1])!r}\n" for r in M))
    res = run_cli("evaluate", str(o), str(p), "--max-linkage", "50", "--no-pairing-check", "--format", "json", "-q")
    assert res.exit_code == 5, res.output
    rep = json.loads(res.stdout)
    check = rep["gates"]["checks"][0]
    assert (check["option"], check["value"], check["passed"]) == ("--max-linkage", 100.0, False)
    assert rep["summary"]["worst_linkage"] == 100.0 and rep["summary"]["linkage_method"] == "exact"
    ok = run_cli("evaluate", str(o), str(p), "--max-linkage", "100", "--no-pairing-check", "-q")
    assert ok.exit_code == 0, ok.output


def test_compare_gate_max_linkage_exits_5_after_writing(tmp_path):
    rng = np.random.default_rng(3)
    X = np.round(rng.normal(size=(40, 3)) * 10, 2)
    src = tmp_path / "in.csv"
    src.write_text("a,b,c\n" + "".join(",".join(repr(float(v)) for v in r) + "\n" for r in X))
    out = tmp_path / "grid.json"
    res = run_cli("compare", str(src), "--methods", "mdav", "--k", "3", "-o", str(out), "--max-linkage", "1", "-q")
    assert res.exit_code == 5, res.output
    assert "--max-linkage 1" in res.output and "1 of 1 cells" in res.output
    row = json.loads(out.read_text())["rows"][0]
    assert row["worst_linkage"] > 1 and row["linkage"] <= row["worst_linkage"] and 0 <= row["rmdid1"] <= 1
    ok = run_cli("compare", str(src), "--methods", "mdav", "--k", "3", "--max-linkage", "100", "-q",
                 "--format", "json")
    assert ok.exit_code == 0, ok.output


def test_rmd_leaves_out_columns_constant_in_the_original():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(50, 2))
    Xp = X + 0.0004 * rng.normal(size=X.shape)
    with_const = rmd_risk(np.column_stack([X, np.full(50, 7.0)]), np.column_stack([Xp, np.full(50, 7.0)]))
    assert {k: with_const[k] for k in ("rmdid1", "rmdid1w", "rmdid2")} == pytest.approx(
        {k: rmd_risk(X, Xp)[k] for k in ("rmdid1", "rmdid1w", "rmdid2")})
    assert 0 < with_const["rmdid1"] < 1
