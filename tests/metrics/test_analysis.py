"""Analysis utility: confidence-interval overlap of regression coefficients (Karr et al.
2006), the propensity-score pMSE and its null ratio (Woo et al. 2009; Snoke et al. 2018)
and the group statistics table; in sdc evaluate (JSON, HTML, gate) and sdc compare."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from conftest import run_cli
from microagg_cli import schemas
from microagg_cli.errors import DataError, InvalidParameterError
from microagg_cli.metrics import METRICS, model_utility
from microagg_cli.metrics.groups import group_codes, group_table, relative_change
from microagg_cli.metrics.pmse import logistic_fit, pmse
from microagg_cli.metrics.regression import (
    Model,
    ci_overlap,
    default_models,
    fit_ols,
    independent_columns,
    interval_overlap,
    parse_model,
)

# the 0.975 quantile of Student's t with 4 degrees of freedom (tables)
T4 = 2.7764451051977987


def _cols(X, names):
    return {c: np.asarray(X, dtype=float)[:, j] for j, c in enumerate(names)}


# ------------------------------------------------------------------ the interval overlap


def test_interval_overlap_hand_cases():
    assert interval_overlap(0.0, 2.0, 1.0, 3.0) == (0.5, 0.5)  # half of each
    assert interval_overlap(0.0, 4.0, 1.0, 2.0) == (0.625, 0.625)  # 1/2 (1/4 + 1/1)
    assert interval_overlap(1.0, 3.0, 1.0, 3.0) == (1.0, 1.0)
    # disjoint: 0, and the unclipped value says how far apart (gap 2 over widths 1 and 1)
    assert interval_overlap(0.0, 1.0, 3.0, 4.0) == (0.0, -2.0)
    assert interval_overlap(3.0, 4.0, 0.0, 1.0) == (0.0, -2.0)  # symmetric
    # touching intervals share one point: 0
    assert interval_overlap(0.0, 1.0, 1.0, 2.0) == (0.0, 0.0)


def test_intercept_only_model_hand_computed():
    """y ~ 1: the interval of the mean. Original 1..5 (mean 3, s^2 = 2.5), protected 2..6
    (mean 4, same s): both half-widths t_{.975,4} sqrt(2.5 / 5); the overlap is the
    common width minus the shift 1, over the width."""
    y, yp = np.arange(1.0, 6.0), np.arange(2.0, 7.0)
    res = ci_overlap({"y": y}, {"y": yp}, [parse_model("y ~ 1")])
    half = T4 * math.sqrt(0.5)
    c = res["models"][0]["coefficients"][0]
    assert c["term"] == "(Intercept)"
    assert c["ci_original"] == pytest.approx([3 - half, 3 + half], rel=1e-12)
    assert c["ci_protected"] == pytest.approx([4 - half, 4 + half], rel=1e-12)
    assert res["mean"] == pytest.approx((2 * half - 1) / (2 * half), rel=1e-12)
    assert res["mean"] == pytest.approx(0.7453194, abs=1e-7)


def test_identical_files_overlap_one_and_disjoint_files_zero(rng):
    X = rng.normal(size=(200, 3))
    X[:, 0] += X[:, 1] - 2 * X[:, 2]
    names = ["a", "b", "c"]
    models, left = default_models(names, X=X)
    same = ci_overlap(_cols(X, names), _cols(X, names), models)
    assert left == [] and same["coefficients"] == 9 and same["mean"] == 1.0 and same["min"] == 1.0
    # the protected response moved far away: every intercept interval is disjoint
    Xp = X.copy()
    Xp[:, 0] += 1000.0
    res = ci_overlap(_cols(X, names), _cols(Xp, names), [parse_model("a ~ 1")])
    assert res["mean"] == 0.0 and res["models"][0]["coefficients"][0]["overlap_raw"] < -10


def test_fit_matches_the_textbook_formulas(rng):
    n = 60
    A = np.column_stack([np.ones(n), rng.normal(size=(n, 2))])
    y = A @ [1.0, 2.0, -0.5] + rng.normal(size=n)
    w = rng.uniform(0.5, 3.0, size=n)
    f = fit_ols(A, y, w)
    XtWX = A.T @ (A * w[:, None])
    beta = np.linalg.solve(XtWX, A.T @ (w * y))
    r = y - A @ beta
    s2 = (w * r * r).sum() / (n - 3)
    assert f["coef"] == pytest.approx(beta, rel=1e-10)
    assert f["se"] == pytest.approx(np.sqrt(s2 * np.diag(np.linalg.inv(XtWX))), rel=1e-10)
    assert f["df"] == n - 3 and f["rank"] == 3


def test_integer_weights_give_the_coefficients_of_replicated_rows(rng):
    X = rng.normal(size=(30, 2))
    w = rng.integers(1, 4, size=30).astype(float)
    Xr = np.repeat(X, w.astype(int), axis=0)
    names = ["y", "x"]
    a = ci_overlap(_cols(X, names), _cols(X + 0.1, names), [parse_model("y ~ x")], weights=w)
    b = ci_overlap(_cols(Xr, names), _cols(Xr + 0.1, names), [parse_model("y ~ x")])
    ea = [c["estimate_original"] for c in a["models"][0]["coefficients"]]
    eb = [c["estimate_original"] for c in b["models"][0]["coefficients"]]
    assert ea == pytest.approx(eb, rel=1e-10) and a["weighted"] is True


def test_collinear_columns_left_out_of_the_default_models_and_a_given_singular_model_refused(rng):
    X = rng.normal(size=(50, 3))
    X = np.column_stack([X, X[:, 0] + X[:, 1], np.full(50, 7.0)])  # d = a + b, e constant
    names = ["a", "b", "c", "d", "e"]
    keep = independent_columns(X)
    assert len(keep) == 3 and 4 not in keep
    models, left = default_models(names, X=X)
    assert "e" in left and len(left) == 2 and len(models) == 3
    with pytest.raises(DataError, match="singular design in the original"):
        ci_overlap(_cols(X, names), _cols(X, names), [parse_model("a ~ c + e")])  # e: the intercept again
    with pytest.raises(DataError, match="exact linear combination of the predictors in the original"):
        ci_overlap(_cols(X, names), _cols(X, names), [parse_model("d ~ a + b")])
    res = ci_overlap(_cols(X, names), _cols(X, names), [parse_model("a ~ c + e"), parse_model("c ~ a")],
                     strict=False)
    assert res["skipped"] == 1 and res["mean"] == 1.0 and res["coefficients"] == 2


def test_parse_model_syntax():
    assert parse_model("y ~ x1 + x2") == Model("y", ("x1", "x2"))
    assert parse_model("y ~ .", ["x", "y", "z"]) == Model("y", ("x", "z"))
    assert parse_model("y ~ x - 1").terms == ["x"]
    assert parse_model("`net income` ~ `age-group`").predictors == ("age-group",)
    for bad in ("y", "y ~", "~ x", "y ~ x +", "y ~ x*z", "y ~ y", "y ~ x + x", "y ~ 0", "y ~ log(x)", "a ~ b ~ c"):
        with pytest.raises(InvalidParameterError):
            parse_model(bad)


# ------------------------------------------------------------------ pMSE


def test_pmse_identical_files_is_zero():
    X = np.random.default_rng(1).normal(size=(500, 4))
    r = pmse(X, X.copy())
    assert r["pmse"] == pytest.approx(0.0, abs=1e-20) and r["ratio"] == pytest.approx(0.0, abs=1e-12)
    # main effects and squares of 4 columns plus the intercept; Snoke et al.'s null
    assert r["parameters"] == 9 and r["c"] == 0.5 and r["records"] == 1000
    assert r["expected"] == pytest.approx(8 * 0.5 ** 3 / 1000, rel=1e-15)
    assert r["sd"] == pytest.approx(math.sqrt(16) * 0.5 ** 3 / 1000, rel=1e-15)


def test_pmse_noise_shifted_is_far_above_the_null():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(2000, 3))
    shifted = pmse(X, X + rng.normal(scale=0.5, size=X.shape) + 0.2)
    assert shifted["ratio"] > 20 and shifted["standardized"] > 10 and shifted["converged"]
    # microaggregation-like shrinkage is detected by the squares
    shrunk = pmse(X, 0.6 * X)
    assert shrunk["ratio"] > 20


def test_pmse_independent_samples_average_one_over_one_minus_c():
    """Two independent samples of one distribution: E[pMSE] = (m-1) c (1-c) / N to first
    order, i.e. the ratio to Snoke et al.'s (m-1)(1-c)^2 c / N averages 1 / (1-c)."""
    rng = np.random.default_rng(5)
    ratios = [pmse(rng.normal(size=(400, 2)), rng.normal(size=(400, 2)))["ratio"] for _ in range(60)]
    assert 1.5 < float(np.mean(ratios)) < 2.5


def test_pmse_binary_column_has_no_square_and_sample_is_seeded():
    rng = np.random.default_rng(3)
    X = np.column_stack([rng.normal(size=300), rng.integers(0, 2, size=300)])
    Xp = X.copy()
    Xp[:, 0] += 0.01
    assert pmse(X, Xp)["parameters"] == 4  # intercept, two main effects, one square
    a = pmse(X, X + 0.05, max_rows=100, rng=np.random.default_rng(7))
    b = pmse(X, X + 0.05, max_rows=100, rng=np.random.default_rng(7))
    assert a == b and a["sampled"] and a["records"] == 200


def test_logistic_fit_separated_data_stays_finite():
    Z = np.column_stack([np.ones(6), [-3, -2, -1, 1, 2, 3]])
    y = np.array([0, 0, 0, 1, 1, 1.0])
    beta, _it, _ok = logistic_fit(Z, y)
    assert np.isfinite(beta).all() and beta[1] > 1


# ------------------------------------------------------------------ the group table


def test_group_table_hand_case():
    X = np.array([[1.0], [2.0], [6.0], [10.0], [20.0], [30.0]])
    Xp = np.array([[2.0], [2.0], [10.0], [20.0], [20.0], [20.0]])
    w = np.array([1.0, 1.0, 2.0, 1.0, 1.0, 1.0])
    codes, labels = group_codes([np.array(["b", "b", "b", "a", "a", "a"])])
    assert labels == [("a",), ("b",)] and codes.tolist() == [1, 1, 1, 0, 0, 0]
    t = group_table(X, Xp, codes, labels, names=["x"], by=["g"], k=3, weights=w, internal=True)
    a, b = t["rows"]
    assert a["group"] == {"g": "a"} and a["n"] == 3
    assert a["columns"]["x"]["mean_change"] == 0.0 and a["columns"]["x"]["median_change"] == 0.0
    bx = b["columns"]["x"]
    # weighted means (1 + 2 + 2*6) / 4 = 3.75 and (2 + 2 + 2*10) / 4 = 6; totals 15 and 24
    assert bx["mean_original"] == 3.75 and bx["mean_protected"] == 6.0
    assert bx["mean_change"] == pytest.approx(60.0) and bx["total_change"] == pytest.approx(60.0)
    assert bx["total_original"] == 15.0 and bx["total_protected"] == 24.0
    assert bx["median_original"] == 2.0 and bx["median_protected"] == 2.0
    assert t["max_abs_mean_change"] == pytest.approx(60.0)


def _numbers(obj):
    if isinstance(obj, dict):
        return [v for x in obj.values() for v in _numbers(x)]
    if isinstance(obj, list):
        return [v for x in obj for v in _numbers(x)]
    return [obj] if isinstance(obj, float) else []


def test_group_table_without_internal_holds_no_original_figure():
    X = np.arange(11.0, 18.0)[:, None]
    Xp = X[::-1].copy()
    codes = np.array([0, 0, 0, 0, 0, 1, 1])
    t = group_table(X, Xp, codes, [("big",), ("small",)], names=["x"], by=["g"], k=3)
    big, small = t["rows"]
    assert small["suppressed"] and small["columns"] is None and small["n"] == 2
    assert not big["suppressed"] and t["suppressed"] == 1
    assert set(big["columns"]["x"]) == {"mean_protected", "mean_change", "median_protected"}
    assert big["columns"]["x"]["mean_protected"] == 15.0 and big["columns"]["x"]["median_protected"] == 15.0
    assert big["columns"]["x"]["mean_change"] == pytest.approx(100 * 2 / 13)
    numbers = _numbers(t)
    # the big group's original mean and median (13), the small group's values and mean
    assert not {13.0, 16.0, 17.0, 16.5} & set(numbers)
    shown = group_table(X, Xp, codes, [("big",), ("small",)], names=["x"], by=["g"], k=3, internal=True)
    assert {13.0, 16.5} <= set(_numbers(shown))
    assert relative_change(0.0, 0.0) == 0.0 and relative_change(0.0, 1.0) is None


def test_model_utility_identity_and_catalogue_rows(rng):
    X = rng.normal(size=(40, 3)) + 5
    u = model_utility(X, X.copy())
    assert u["ci_overlap"]["mean"] == 1.0 and u["pmse"]["pmse"] == pytest.approx(0.0, abs=1e-20)
    assert u["groups"]["max_abs_mean_change"] == 0.0 and u["groups"]["count"] == 1
    for name, better in (("ci_overlap", "higher"), ("pmse_ratio", "lower"), ("group_mean_change", "lower")):
        spec = METRICS[name]
        assert spec.better == better and spec.formula and spec.reference
    assert METRICS["ci_overlap"].gate.option == "--min-ci-overlap"


# ------------------------------------------------------------------ sdc evaluate / compare


@pytest.fixture(scope="module")
def household_pair(tmp_path_factory):
    d = tmp_path_factory.mktemp("hh")
    out = d / "p.csv"
    from conftest import SAMPLE

    src = SAMPLE / "household.csv"
    # the id and the other codes released unchanged on purpose (named): evaluate pairs the files as they are
    res = run_cli("protect", src, "-o", out, "-c", "expend,income,savings", "-k", 3, "--strata", "urbrur", "-q",
                  "--passthrough", "ori_hid,roof,walls,water,electcon,relat,sex,hhcivil")
    assert res.exit_code == 0, res.output
    return src, out


def test_evaluate_json_has_the_measures_and_validates(household_pair, tmp_path):
    src, out = household_pair
    rep_path = tmp_path / "e.json"
    res = run_cli("evaluate", src, out, "-c", "expend,income,savings", "--by", "urbrur", "--weights",
                  "sampling_weight", "--model", "income ~ expend + age", "--model", "savings ~ 1",
                  "--max-scenarios", 2, "-r", rep_path, "-q")
    assert res.exit_code == 0, res.output
    rep = json.loads(rep_path.read_text())
    schemas.validate(rep)
    assert rep["schema_version"] == "1.3"
    s, u = rep["summary"], rep["measures"]["utility"]
    assert 0 < s["ci_overlap"] <= 1 and s["pmse_ratio"] >= 0 and s["group_mean_change"] is not None
    assert [m["model"] for m in u["ci_overlap"]["models"]] == ["income ~ expend + age", "savings ~ 1"]
    assert u["ci_overlap"]["weighted"] and u["ci_overlap"]["coefficients"] == 4
    assert rep["parameters"]["by"] == ["urbrur"] and rep["parameters"]["weights"] == "sampling_weight"
    g = u["groups"]
    assert g["by"] == ["urbrur"] and g["count"] == 2 and sum(r["n"] for r in g["rows"]) == 4580
    # protected within the strata with the mean: each stratum's weighted mean and total are kept
    for r in g["rows"]:
        for c in r["columns"].values():
            assert "median_original" not in c and "mean_original" not in c
            assert abs(c["mean_change"]) < 2.0 and c["total_change"] == pytest.approx(c["mean_change"], abs=1e-9)
    assert set(rep["formulas"]) >= {"ci_overlap", "pmse_ratio", "group_mean_change"}


def test_evaluate_internal_group_table_and_html(household_pair, tmp_path):
    src, out = household_pair
    page = tmp_path / "e.html"
    res = run_cli("evaluate", src, out, "-c", "expend,income,savings", "--by", "urbrur,sex", "--internal",
                  "--max-scenarios", 2, "--format", "json", "-q", "--html", page)
    assert res.exit_code == 0, res.output
    rep = json.loads(res.stdout)
    c = rep["measures"]["utility"]["groups"]["rows"][0]["columns"]["income"]
    assert {"mean_original", "median_original", "median_change"} <= set(c)
    text = page.read_text()
    assert "Analysis utility" in text and "Confidence-interval overlap per coefficient" in text
    assert "Group statistics" in text and "median (orig.)" in text
    import xml.dom.minidom

    start = text.index("<svg", text.index("Confidence-interval overlap per coefficient") - 2000)
    xml.dom.minidom.parseString(text[start:text.index("</svg>", start) + 6])


@pytest.mark.parametrize("args, code, message", [
    (["--model", "income ~ nope"], 3, "no column 'nope'"),
    (["--model", "income ~ expend +"], 2, "empty term"),
    (["--model", "income ~ expend", "--model", "income ~ urbrur + urbrur"], 2, "named twice"),
    (["--by", "income"], 2, "evaluated (protected) column"),
    (["--weights", "nope"], 3, "no column 'nope'"),
    (["--min-ci-overlap", "1.01"], 5, "--min-ci-overlap"),
])
def test_evaluate_errors_and_gate(household_pair, args, code, message):
    src, out = household_pair
    res = run_cli("evaluate", src, out, "-c", "expend,income,savings", "--max-scenarios", 1, "-q", *args)
    assert res.exit_code == code, res.output
    assert message in res.output and "Traceback" not in res.output


def test_evaluate_singular_model_is_a_data_error(household_pair, tmp_path):
    src, out = household_pair
    import pandas as pd

    frame = pd.read_csv(src)
    frame["twice"] = 2 * frame["age"]
    o2 = tmp_path / "o.csv"
    frame.to_csv(o2, index=False)
    p2 = tmp_path / "p.csv"
    pf = pd.read_csv(out)
    pf["twice"] = frame["twice"]
    pf.to_csv(p2, index=False)
    res = run_cli("evaluate", o2, p2, "-c", "expend,income,savings", "--max-scenarios", 1, "-q",
                  "--model", "income ~ age + twice")
    assert res.exit_code == 3 and "singular design" in res.output


def test_evaluate_gate_passes_at_a_low_threshold(household_pair):
    src, out = household_pair
    res = run_cli("evaluate", src, out, "-c", "expend,income,savings", "--max-scenarios", 1, "-q",
                  "--min-ci-overlap", 0.5, "--format", "json")
    assert res.exit_code == 0
    check = json.loads(res.stdout)["gates"]["checks"][0]
    assert check["option"] == "--min-ci-overlap" and check["passed"] and check["value"] >= 0.5


def test_compare_columns_and_gate(census_path, tmp_path):
    out = tmp_path / "c.json"
    res = run_cli("compare", census_path, "--methods", "mdav", "--k", "3,10", "--max-scenarios", 2,
                  "--format", "json", "-o", out, "-q", "--min-ci-overlap", 0.65)
    assert res.exit_code == 5 and "--min-ci-overlap 0.65: 1 of 2 cell(s) fail, worst mdav k=10" in res.output
    doc = json.loads(out.read_text())  # written before the gate failed
    schemas.validate(doc)
    r3, r10 = doc["rows"]
    assert r3["ci_overlap"] == pytest.approx(0.7088719654722565, rel=1e-9)
    assert r10["ci_overlap"] < r3["ci_overlap"] and r10["pmse_ratio"] > r3["pmse_ratio"] > 0
    res = run_cli("compare", census_path, "--methods", "mdav", "--k", "3", "--max-scenarios", 2, "-q",
                  "--format", "csv")
    assert res.exit_code == 0 and "CI overlap,pMSE ratio" in res.output.splitlines()[0]


def test_schema_refuses_original_group_figures_without_internal(household_pair):
    import copy

    import jsonschema

    src, out = household_pair
    res = run_cli("evaluate", src, out, "-c", "expend,income", "--by", "urbrur", "--max-scenarios", 1,
                  "--format", "json", "-q")
    assert res.exit_code == 0
    rep = json.loads(res.stdout)
    schemas.validate(rep)
    leaked = copy.deepcopy(rep)
    leaked["measures"]["utility"]["groups"]["rows"][0]["columns"]["income"]["median_original"] = 1.0
    with pytest.raises(jsonschema.ValidationError):
        schemas.validate(leaked)
    leaked["internal"] = True  # the same figure is allowed in an internal report
    leaked.pop("internal_details", None)
    schemas.validate(leaked)


def test_strata_is_the_default_grouping_and_by_overrides_it(household_pair):
    src, out = household_pair
    base = ["evaluate", src, out, "-c", "expend,income", "--max-scenarios", 1, "--format", "json", "-q"]
    res = run_cli(*base, "--strata", "urbrur")
    g = json.loads(res.stdout)["measures"]["utility"]["groups"]
    assert g["by"] == ["urbrur"] and g["count"] == 2
    res = run_cli(*base, "--strata", "urbrur", "--by", "sex")
    assert json.loads(res.stdout)["measures"]["utility"]["groups"]["by"] == ["sex"]
    res = run_cli(*base)
    g = json.loads(res.stdout)["measures"]["utility"]["groups"]
    assert g["by"] == [] and g["count"] == 1 and g["rows"][0]["n"] == 4580


def test_default_models_from_one_r_factor_equal_the_separate_fits(rng):
    """model_utility fits every default model from one R factor per file; the same
    models fitted one by one give the same intervals."""
    X = rng.normal(size=(300, 4))
    X = np.column_stack([X, X[:, 0] - X[:, 2]])  # an exactly collinear column, left out
    Xp = X + rng.normal(scale=0.2, size=X.shape)
    w = rng.uniform(0.5, 2.0, size=300)
    names = ["a", "b", "c", "d", "e"]
    fast = model_utility(X, Xp, names=names, weights=w)["ci_overlap"]
    models, left = default_models(names, X=X)
    slow = ci_overlap(_cols(X, names), _cols(Xp, names), models, weights=w, strict=False)
    assert fast["left_out"] == left and len(left) == 1
    assert [m["model"] for m in fast["models"]] == [m["model"] for m in slow["models"]]
    for mf, ms in zip(fast["models"], slow["models"]):
        for cf, cs in zip(mf["coefficients"], ms["coefficients"]):
            assert cf["ci_original"] == pytest.approx(cs["ci_original"], rel=1e-9, abs=1e-12)
            assert cf["ci_protected"] == pytest.approx(cs["ci_protected"], rel=1e-9, abs=1e-12)
    assert fast["mean"] == pytest.approx(slow["mean"], rel=1e-9)


def test_by_column_with_text_and_missing_cells(tmp_path):
    o, p = tmp_path / "o.csv", tmp_path / "p.csv"
    o.write_text("a,b,g\n1,2,x\n2,3,\n3,5,y\n4,4,x\n5,1,x\n")
    p.write_text("a,b,g\n2,2,x\n2,4,\n3,4,y\n4,4,x\n6,1,x\n")
    res = run_cli("evaluate", o, p, "-k", 2, "--by", "g", "--format", "json", "-q", "--no-pairing-check")
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)["measures"]["utility"]["groups"]["rows"]
    assert [(r["group"]["g"], r["n"], r["suppressed"]) for r in rows] == [
        ("(missing)", 1, True), ("x", 3, False), ("y", 1, True)]
    # group x: a from 1, 4, 5 (mean 10/3) to 2, 4, 6 (mean 4)
    assert rows[1]["columns"]["a"]["mean_change"] == pytest.approx(100 * (4 - 10 / 3) / (10 / 3))
