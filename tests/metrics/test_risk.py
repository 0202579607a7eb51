"""Disclosure-risk measures and ``evaluate_arrays``: hand-worked values, brute-force
references for the linkage measures, EM on known m/u, the report schema."""

from __future__ import annotations

import json
from itertools import product

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from microagg_cli.errors import DataError, InvalidParameterError
from microagg_cli.methods.fixed_size import mdav
from microagg_cli.metrics import METRICS, SCHEMA, evaluate_arrays, model_utility
from microagg_cli.metrics.risk import (
    RiskEvaluator,
    RiskOptions,
    disclosure_risk,
    dld,
    fellegi_sunter_em,
    id_window,
    interval_disclosure,
    overall_score,
    pld,
    pld_window,
    real_anonymity,
    sdid,
)
from microagg_cli.partition import aggregate

# ---------------------------------------------------------------- brute-force references


def _z(X, Xp):
    mean = X.mean(axis=0)
    sd = X.std(axis=0)
    sd[sd == 0] = 1.0
    return (X - mean) / sd, (Xp - mean) / sd


def brute_dld(X, Xp, S):
    Z, Zp = _z(X, Xp)
    Z, Zp = Z[:, S], Zp[:, S]
    n = len(Z)
    D = np.zeros((n, n))
    for j in range(Z.shape[1]):  # the same left-to-right sum as the implementation
        D += (Z[:, j][:, None] - Zp[:, j][None, :]) ** 2
    credit = 0.0
    for a in range(n):
        if D[a, a] <= D[a].min():
            credit += 1.0 / (D[a] == D[a].min()).sum()
    return 100 * credit / n


def brute_pld(X, Xp, S, share=0.01):
    """All n^2 pairs materialised; the same EM; best links by direct comparison."""
    n = len(X)
    w = pld_window(n, share)
    A = np.ones((n, n, len(S)), dtype=bool)
    for i, v in enumerate(S):
        s = np.sort(X[:, v])
        ro = np.searchsorted(s, X[:, v], side="left")
        rp = np.searchsorted(s, Xp[:, v], side="left")
        A[:, :, i] = np.abs(ro[:, None] - rp[None, :]) <= w
    pats, counts = np.unique(A.reshape(-1, len(S)), axis=0, return_counts=True)
    em = fellegi_sunter_em(pats, counts, match_share=1.0 / n)
    m, u = np.array(em["m"]), np.array(em["u"])
    W = np.where(A, np.log(m / u), np.log((1 - m) / (1 - u))).sum(axis=-1)
    credit = 0.0
    for a in range(n):
        top = np.abs(W[a] - W[a].max()) <= 1e-9 * max(1.0, abs(W[a].max()))
        if top[a]:
            credit += 1.0 / top.sum()
    return 100 * credit / n


def _grouped(X, size):
    """Replace consecutive records (by first column) by group means: ties galore."""
    order = np.argsort(X[:, 0], kind="stable")
    labels = np.empty(len(X), dtype=int)
    labels[order] = np.minimum(np.arange(len(X)) // size, len(X) // size - 1)
    return aggregate(X, labels)


# ---------------------------------------------------------------- DLD


def test_dld_identical_protected_rows_share_the_link():
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    assert dld(X, X) == 100.0
    # each original ties between two identical protected rows: 1/2 each
    assert dld(X, np.array([[0.5], [0.5], [2.5], [2.5]])) == 50.0


def test_dld_tie_between_distinct_rows_counts_one_over_t():
    # z-scores equal the values (means 0, population sds 1): distances are exact
    X = np.array([[-1.0, -1.0], [1.0, -1.0], [-1.0, 1.0], [1.0, 1.0]])
    Xp = np.array([[0.0, -1.0], [2.0, -1.0], [-1.0, 1.0], [1.0, 1.0]])
    # record 1 at (1,-1) is at distance 1 from its own (2,-1) and from (0,-1)
    assert dld(X, Xp) == pytest.approx(100 * 3.5 / 4)
    assert dld(X, Xp, [0]) == pytest.approx(brute_dld(X, Xp, [0]))
    # a strictly nearer other record: no credit at all
    Xp2 = Xp.copy()
    Xp2[1] = [3.0, -1.0]
    assert dld(X, Xp2) == pytest.approx(100 * 3 / 4)


def test_dld_fully_aggregated_is_one_over_n(rng):
    X = rng.normal(size=(9, 3))
    Xp = np.tile(X.mean(axis=0), (9, 1))
    assert dld(X, Xp) == pytest.approx(100 / 9)
    assert pld(X, Xp)["value"] == pytest.approx(100 / 9)


def test_identity_protection_distinct_rows_links_everything(rng):
    X = rng.normal(size=(30, 3))
    for S in ([0], [1, 2], [0, 1, 2]):
        assert dld(X, X, S) == 100.0
    X[5] = X[6]  # two identical records: each gets half a link
    assert dld(X, X) == pytest.approx(100 * 29 / 30)


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(3, 40),
    p=st.integers(1, 3),
    seed=st.integers(0, 2**31 - 1),
    rounding=st.sampled_from([None, 0, 1]),
    mode=st.sampled_from(["noise", "grouped", "identity"]),
)
def test_dld_matches_brute_force(n, p, seed, rounding, mode):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * 2
    if rounding is not None:
        X = np.round(X, rounding)
    if mode == "noise":
        Xp = X + np.round(rng.normal(size=X.shape), 1)
    elif mode == "grouped":
        Xp = _grouped(X, 2) if n >= 2 else X
    else:
        Xp = X.copy()
    ev = RiskEvaluator(X, Xp, pld=False, dld_candidates=2)  # candidate pre-check path
    for S in (list(range(p)), [p - 1]):
        want = brute_dld(X, Xp, S)
        assert dld(X, Xp, S) == pytest.approx(want, abs=1e-9)
        assert ev.dld(tuple(S)) == pytest.approx(want, abs=1e-9)


def test_dld_and_pld_do_not_depend_on_record_order(rng):
    X = np.round(rng.normal(size=(40, 3)), 1)
    Xp = _grouped(X, 3)
    perm = rng.permutation(40)
    assert dld(X, Xp) == pytest.approx(dld(X[perm], Xp[perm]))
    assert pld(X, Xp)["value"] == pytest.approx(pld(X[perm], Xp[perm])["value"])


# ---------------------------------------------------------------- PLD


@pytest.mark.parametrize("p, S", [(2, [0, 1]), (3, [0, 2]), (4, [0, 1, 2, 3]), (14, [1, 5, 13])])
@pytest.mark.parametrize("mode", ["noise", "grouped"])
def test_pld_matches_brute_force(p, S, mode):
    rng = np.random.default_rng(p * 7 + len(mode))
    n = 60
    X = np.round(rng.normal(size=(n, p)) @ rng.normal(size=(p, p)), 1)
    Xp = X + rng.normal(size=X.shape) * 0.3 if mode == "noise" else _grouped(X, 3)
    got = pld(X, Xp, S)
    assert got["value"] == pytest.approx(brute_pld(X, Xp, S), abs=1e-9)
    assert got["window"] == 1 and got["window_share"] == 0.01
    # the table of all p attributes, masked to S, gives the same figure
    assert RiskEvaluator(X, Xp).pld(tuple(S))["value"] == pytest.approx(got["value"])


@settings(max_examples=20, deadline=None)
@given(
    n=st.integers(2, 25),
    p=st.integers(1, 3),
    seed=st.integers(0, 2**31 - 1),
    grouped=st.booleans(),
)
def test_pld_matches_brute_force_property(n, p, seed, grouped):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, p)), 1)
    Xp = _grouped(X, 2) if grouped else X + np.round(rng.normal(size=X.shape), 1)
    assert pld(X, Xp)["value"] == pytest.approx(brute_pld(X, Xp, list(range(p))), abs=1e-9)


def test_pld_wider_window_matches_brute_force(rng):
    X = np.round(rng.normal(size=(50, 3)), 2)
    Xp = X + rng.normal(size=X.shape) * 0.5
    got = pld(X, Xp, window_share=0.1)
    assert got["window"] == 5
    assert got["value"] == pytest.approx(brute_pld(X, Xp, [0, 1, 2], share=0.1))


def _expected_counts(m, u, pi, N):
    pats = np.array(list(product([0, 1], repeat=len(m))))
    pm = np.prod(np.where(pats == 1, m, 1 - m), axis=1)
    pu = np.prod(np.where(pats == 1, u, 1 - u), axis=1)
    return pats, N * (pi * pm + (1 - pi) * pu)


def test_em_recovers_known_parameters_from_expected_counts():
    m = np.array([0.95, 0.9, 0.85, 0.8])
    u = np.array([0.05, 0.1, 0.02, 0.2])
    n = 1000
    pats, counts = _expected_counts(m, u, 1.0 / n, float(n) ** 2)
    em = fellegi_sunter_em(pats, counts, match_share=1.0 / n)
    assert em["converged"] and em["iterations"] < 500
    assert em["m"] == pytest.approx(m.tolist(), abs=1e-4)
    assert em["u"] == pytest.approx(u.tolist(), abs=1e-6)
    assert em["match_share"] == pytest.approx(1.0 / n, rel=1e-3)


def test_em_recovers_known_parameters_from_sampled_pairs():
    rng = np.random.default_rng(2024)
    m = np.array([0.9, 0.85, 0.8, 0.95, 0.7])
    u = np.array([0.1, 0.05, 0.2, 0.02, 0.15])
    N, pi = 2_000_000, 0.01
    M = rng.binomial(N, pi)
    bits = 1 << np.arange(5)
    match = (rng.random((M, 5)) < m) @ bits
    non = (rng.random((N - M, 5)) < u) @ bits
    counts = np.bincount(np.concatenate([match, non]), minlength=32)
    pats = (np.arange(32)[:, None] >> np.arange(5)) & 1
    em = fellegi_sunter_em(pats, counts, match_share=1e-3)
    assert em["converged"]
    assert em["m"] == pytest.approx(m.tolist(), abs=0.01)
    assert em["u"] == pytest.approx(u.tolist(), abs=0.002)
    assert em["match_share"] == pytest.approx(pi, rel=0.05)


def test_em_stops_at_max_iter():
    pats, counts = _expected_counts(np.array([0.9, 0.8]), np.array([0.1, 0.3]), 0.01, 1e6)
    em = fellegi_sunter_em(pats, counts, match_share=0.01, max_iter=3)
    assert em["iterations"] == 3 and not em["converged"]


# ---------------------------------------------------------------- interval disclosure, SDID


def test_id_windows():
    assert [id_window(1000, q) for q in (1, 2, 10)] == [5, 10, 50]
    assert id_window(150, 1) == 0 and pld_window(150) == 1 and pld_window(50_000) == 500


def test_id_hand_worked_shift():
    X = np.arange(200.0).reshape(-1, 1)
    r = interval_disclosure(X, X + 1.5, percents=(1, 2))
    # w=1: x' = x+1.5 has rank x+2, interval ranks x+1..x+3 misses x except at the end
    # of the column (x = 199: rank 200 -> interval clipped to [199, 199])
    assert r["windows"] == [1, 2]
    assert r["by_percent"] == pytest.approx([0.5, 100.0])
    assert r["value"] == pytest.approx(50.25)


def test_id_ties_count_by_value():
    X = np.repeat([0.0, 1.0], 100).reshape(-1, 1)
    # x' = 0.5: rank 100, interval ranks 99..101 = values [0, 1] holds 0;
    # x' = 1.5: rank 200, clipped to rank 199 = [1, 1] holds 1
    r = interval_disclosure(X, X + 0.5, percents=(1,))
    assert r["by_percent"] == [100.0]


def test_id_mean_over_attributes_and_identity(rng):
    X = rng.normal(size=(100, 2))
    Xp = X.copy()
    Xp[:, 1] += 100.0  # every protected value beyond the column end (rank 100)
    r = interval_disclosure(X, Xp, percents=(2,))
    # w = 1: the interval is clipped to rank 99 = the largest value, disclosed once;
    # attribute 0 (unchanged) is disclosed for all 100 records
    assert r["by_percent"] == [pytest.approx(100 * (100 + 1) / 200)]
    assert interval_disclosure(X, X)["value"] == 100.0


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), p=st.integers(1, 6), outside=st.integers(0, 2))
def test_sdid_by_bits_counts_as_by_columns(seed, p, outside):
    # the per-record bits of the attributes outside their interval give the share of
    # records counted column by column, for every scenario
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(40, p)).astype(float)
    Xp = X + rng.choice([0.0, 0.01, 1.0], size=X.shape)
    ev = RiskEvaluator(X, Xp, RiskOptions(pld=False, sdid_max_outside=outside))
    scs = [tuple(v for v in range(p) if m >> v & 1) for m in range(1, 1 << p)]
    got = [ev.sdid(sc) for sc in scs]
    by_columns = [float(((~ev.sdid_within[:, list(sc)]).sum(axis=1) <= outside).mean()) for sc in scs]
    assert got == by_columns
    assert got == [sdid(X, Xp, sc, max_outside=outside) for sc in scs]


def test_sdid_hand_worked():
    X = np.array([[0.0, 1.0], [10.0, 1.0], [20.0, 1.0], [30.0, 1.0]])
    Xp = X + np.array([[0.1, 0.0], [0.0, 0.0], [5.0, 0.0], [-0.2, 0.0]])
    # sample sd of the protected column 0 ~ 12.96 -> half-width 0.648: records 0, 1, 3
    assert sdid(X, Xp, [0]) == 0.75
    # column 1 is constant in the protected file: only exact values are within
    assert sdid(X, Xp, [1]) == 1.0
    Xp[0, 1] = 1.5
    assert sdid(X, Xp) == 0.5  # records 1 and 3; 0 and 2 have one value outside
    # sdcMicro's dRiskWORK tolerates one attribute outside its interval
    assert sdid(X, Xp, max_outside=1) == 1.0
    assert sdid(X, X) == 1.0
    with pytest.raises(InvalidParameterError):
        sdid(X, Xp, max_outside=-1)


# ---------------------------------------------------------------- real anonymity


def test_real_anonymity_hand_worked():
    Xp = np.array([[1.0, 5.0], [1.0, 5.0], [1.0, 6.0], [2.0, 6.0]])
    assert real_anonymity(Xp, k=2) == {
        "k_prime": 4 / 3, "k_min": 1, "classes": 3, "share_below_k": 0.5}
    assert real_anonymity(Xp, [0], k=2) == {
        "k_prime": 2.0, "k_min": 1, "classes": 2, "share_below_k": 0.25}
    assert real_anonymity(Xp, [1])["share_below_k"] is None


def test_real_anonymity_census_mdav(census_matrix, census_z):
    Xp = aggregate(census_matrix, mdav(census_z, 3))
    assert real_anonymity(Xp, k=3) == {
        "k_prime": 3.0, "k_min": 3, "classes": 360, "share_below_k": 0.0}


def test_row_classes_reused_across_scenarios(rng):
    Xp = np.round(rng.normal(size=(50, 4)))
    ev = RiskEvaluator(Xp + 0.1, Xp, pld=False, k=2)
    for sc in [(0, 1, 2), (0, 1), (0, 1, 3), (2,), (0, 1, 2, 3), (1, 3)]:
        want = np.unique(Xp[:, list(sc)], axis=0).shape[0]
        assert ev.anonymity(sc)["classes"] == want
        assert ev.anonymity(sc) == real_anonymity(Xp, sc, k=2)


# ---------------------------------------------------------------- DR and score


def test_dr_and_score_formulas():
    dr = disclosure_risk(10.0, 20.0, 30.0, weights={"id": 0.0, "dld": 1.0})
    assert dr["value"] == pytest.approx(10 + 0.25 * 20)
    assert dr["formula"] == "DR = 1 * DLD + 0.25 * PLD + 0 * ID"
    assert disclosure_risk(10.0, None, 30.0, weights={"pld": 0})["value"] == pytest.approx(17.5)
    assert disclosure_risk(10.0, None, 30.0)["value"] is None
    sc = overall_score(20.0, 40.0, weights={"il": 0.25, "dr": 0.75})
    assert sc["value"] == pytest.approx(35.0)
    assert sc["formula"] == "score = 0.25 * IL_score + 0.75 * DR"
    for bad in ({"dlx": 1.0}, {"dld": -1.0}, {"pld": float("nan")}):
        with pytest.raises(InvalidParameterError):
            disclosure_risk(1.0, 1.0, 1.0, weights=bad)


# ---------------------------------------------------------------- evaluate_arrays

TOP_KEYS = {"schema", "n", "p", "blocks", "k", "utility", "risk", "score"}
UTILITY_KEYS = {"il_sse", "il1", "il2", "il3", "il4", "il5", "il_score", "il1s",
                "il_sse_raw", "eigen", "robeigen", "data_quality", "optimality"}
RISK_KEYS = {"parameters", "scenarios", "anonymity", "mean", "worst", "by_label",
             "per_scenario", "pld_skipped_reason", "pld_bound", "dld_bound", "dr"}
SCENARIO_KEYS = {"attributes", "label", "size", "k_prime", "k_min", "classes",
                 "share_below_k", "dld", "pld", "id", "id_by_percent", "sdid", "pld_em", "pld_bound", "dld_bound"}
# one-to-one linkage (per scenario, None where not computed) and the RMD figures
RISK_KEYS |= {"linkage", "rmd"}
# SDID with every attribute known (sdcMicro's dRisk), beside the scenario mean
RISK_KEYS |= {"sdid_all"}
SCENARIO_KEYS |= {"linkage"}


def _get(report, dotted):
    for key in dotted.split("."):
        report = report[key]
    return report


def test_evaluate_schema_and_json(rng):
    X = rng.normal(size=(30, 4)) + 3
    Xp = _grouped(X, 3)
    rep = evaluate_arrays(X, Xp, blocks=[[0, 1], [2, 3]], k=3)
    json.dumps(rep, allow_nan=False)
    assert set(rep) == TOP_KEYS and rep["schema"] == SCHEMA
    assert set(rep["utility"]) == UTILITY_KEYS
    assert set(rep["risk"]) == RISK_KEYS
    assert set(rep["risk"]["per_scenario"][0]) == SCENARIO_KEYS
    assert rep["risk"]["scenarios"] == {"mode": "all", "count": 15, "max_all_subsets": 10,
                                        "sample_size": 512}
    by = rep["risk"]["by_label"]
    assert by["1G"]["scenarios"] == 6 and by["2G"]["scenarios"] == 9
    assert len(rep["utility"]["il_sse"]["per_block"]) == 2
    assert rep["utility"]["optimality"]["k"] == 3
    # DR and score are recomputed from the scenario means
    mean = rep["risk"]["mean"]
    assert rep["risk"]["dr"]["value"] == pytest.approx(
        0.25 * mean["dld"] + 0.25 * mean["pld"] + 0.5 * mean["id"])
    assert rep["score"]["value"] == pytest.approx(
        0.5 * rep["utility"]["il_score"]["value"] + 0.5 * rep["risk"]["dr"]["value"])
    # per-scenario values are those of the single-scenario functions
    row = rep["risk"]["per_scenario"][4]  # (0, 1)
    assert row["attributes"] == [0, 1] and row["label"] == "1G" and row["size"] == 2
    assert row["dld"] == pytest.approx(dld(X, Xp, [0, 1]))
    assert row["pld"] == pytest.approx(pld(X, Xp, [0, 1])["value"])
    assert row["id"] == pytest.approx(interval_disclosure(X, Xp, [0, 1])["value"])
    assert rep["risk"]["mean"]["dld"] == pytest.approx(
        np.mean([r["dld"] for r in rep["risk"]["per_scenario"]]))


def test_evaluate_identity_protection(rng):
    X = rng.normal(size=(25, 3))
    rep = evaluate_arrays(X, X.copy(), k=2)
    assert rep["utility"]["il_sse"]["overall"] == 0.0
    assert rep["utility"]["il_score"]["value"] == 0.0
    mean = rep["risk"]["mean"]
    assert mean["dld"] == 100.0 and mean["id"] == 100.0 and mean["sdid"] == 1.0
    assert mean["k_prime"] == 1.0 and mean["share_below_k"] == 1.0
    assert rep["risk"]["anonymity"]["k_prime"] == 1.0


def test_evaluate_fully_aggregated(rng):
    n = 16
    X = rng.normal(size=(n, 3))
    Xp = np.tile(X.mean(axis=0), (n, 1))
    rep = evaluate_arrays(X, Xp, k=4)
    assert rep["risk"]["anonymity"] == {"k_prime": n, "k_min": n, "classes": 1,
                                        "share_below_k": 0.0}
    assert rep["risk"]["mean"]["dld"] == pytest.approx(100 / n)
    assert rep["risk"]["mean"]["pld"] == pytest.approx(100 / n)
    assert rep["utility"]["il_sse"]["overall"] == pytest.approx(100.0)
    assert rep["utility"]["il5"]["skipped"] == 3


def test_evaluate_explicit_and_sampled_scenarios(rng):
    X = rng.normal(size=(20, 11))
    Xp = _grouped(X, 2)
    rep = evaluate_arrays(X, Xp, scenarios=[[3, 1], [0]], per_scenario=True)
    assert rep["risk"]["scenarios"]["mode"] == "explicit"
    assert [r["attributes"] for r in rep["risk"]["per_scenario"]] == [[1, 3], [0]]
    a = evaluate_arrays(X, Xp, sample_size=12, rng=np.random.default_rng(3), per_scenario=True)
    b = evaluate_arrays(X, Xp, sample_size=12, rng=np.random.default_rng(3), per_scenario=False)
    assert a["risk"]["scenarios"]["mode"] == "sample" and a["risk"]["scenarios"]["count"] == 12
    assert b["risk"]["per_scenario"] is None
    assert a["risk"]["mean"] == b["risk"]["mean"]
    sizes = [r["size"] for r in a["risk"]["per_scenario"]]
    assert max(sizes) - min(sizes) >= 10  # stratified: from 1 to 11 attributes


def test_evaluate_without_k_or_partition():
    X = np.arange(24.0).reshape(8, 3) ** 1.5
    rep = evaluate_arrays(X, _grouped(X, 2))
    assert rep["k"] is None and rep["utility"]["optimality"] is None
    assert rep["risk"]["mean"]["share_below_k"] is None
    rep = evaluate_arrays(X, _grouped(X, 2), k=2, partition_based=False)
    assert rep["utility"]["optimality"] is None


def test_evaluate_errors():
    X = np.ones((5, 2))
    with pytest.raises(DataError):
        evaluate_arrays(X, np.ones((5, 3)))
    with pytest.raises(DataError):
        evaluate_arrays(X, np.full((5, 2), np.nan))
    with pytest.raises(InvalidParameterError):
        evaluate_arrays(X, X, blocks=[[0]])
    with pytest.raises(InvalidParameterError):
        evaluate_arrays(X, X, dr_weights={"il": 1})
    with pytest.raises(InvalidParameterError):
        evaluate_arrays(X, X, scenarios=[[2]])


def test_evaluate_pld_skipped_beyond_62_attributes(rng):
    X = rng.normal(size=(6, 63))
    every = [list(range(63))]
    rep = evaluate_arrays(X, X + 0.1, scenarios=every)
    assert "at most 62" in rep["risk"]["pld_skipped_reason"]
    assert rep["risk"]["mean"]["pld"] is None and rep["risk"]["dr"]["value"] is None
    assert rep["risk"]["mean"]["dld"] is not None
    rep = evaluate_arrays(X, X + 0.1, scenarios=every, dr_weights={"pld": 0.0})
    assert rep["risk"]["dr"]["value"] is not None
    # the table covers only the attributes the scenarios use: 62 of them are fine
    rep = evaluate_arrays(X, X + 0.1, scenarios=[list(range(62))])
    assert rep["risk"]["pld_skipped_reason"] is None and rep["risk"]["mean"]["pld"] is not None


def test_evaluate_deterministic_and_inputs_untouched(rng):
    X = np.round(rng.normal(size=(30, 3)), 1)
    Xp = _grouped(X, 3)
    Xc, Xpc = X.copy(), Xp.copy()
    a = evaluate_arrays(X, Xp, k=3)
    b = evaluate_arrays(X, Xp, k=3, workers=2)
    assert json.dumps(a) == json.dumps(b)
    assert np.array_equal(X, Xc) and np.array_equal(Xp, Xpc)


# ---------------------------------------------------------------- the METRICS registry


def test_metrics_registry_contract(rng):
    X = rng.normal(size=(12, 3)) + 4
    Xp = _grouped(X, 3)
    Xc, Xpc = X.copy(), Xp.copy()
    report = evaluate_arrays(X, Xp, k=3)
    # the analysis-utility measures are computed beside evaluate_arrays (sdc evaluate adds them)
    report["utility"].update(model_utility(X, Xp, k=3))
    for name, spec in METRICS.items():
        assert spec.name == name and spec.kind in {"utility", "risk"}
        assert spec.better in {"lower", "higher"} and spec.summary and spec.reference
        value = spec.func(X, Xp)
        assert value is None or np.isfinite(value)
        assert spec.func(X, Xp) == value  # deterministic
        _get(report, spec.report_key)  # the documented place exists
        if spec.identity is not None:
            assert spec.func(X, X.copy()) == pytest.approx(spec.identity), name
    assert np.array_equal(X, Xc) and np.array_equal(Xp, Xpc)


# ---------------------------------------------------------------- PLD at scale


def test_sampled_pld_with_every_original_is_the_exact_pld(rng):
    X = np.round(rng.normal(size=(400, 4)), 1)
    Xp = _grouped(X, 3)
    scs = [(0,), (1, 2), (0, 1, 2, 3)]
    exact = RiskEvaluator(X, Xp, k=3, pld_window_share=0.05).evaluate(scs, jobs=1)
    full = RiskEvaluator(X, Xp, k=3, pld_window_share=0.05, pld_exact_max=100, pld_sample=400)
    assert full.pld_method == "sampled" and full.pld_rows.size == 400
    for a, b in zip(exact, full.evaluate(scs, jobs=2)):
        assert b["pld"] == pytest.approx(a["pld"], rel=1e-12)
        assert b["pld_em"]["m"] == pytest.approx(a["pld_em"]["m"], rel=1e-9)
        assert a["pld_bound"] is None and 0 <= b["pld_bound"] <= 100


def test_sampled_pld_is_seeded_and_within_its_bound(rng):
    X = np.round(rng.normal(size=(1500, 3)) @ rng.normal(size=(3, 3)), 2)
    Xp = _grouped(X, 3)
    scs = [(0,), (0, 1), (0, 1, 2)]
    exact = RiskEvaluator(X, Xp, k=3).evaluate(scs, jobs=1)
    one = RiskEvaluator(X, Xp, k=3, pld_exact_max=500, pld_sample=400, pld_seed=5).evaluate(scs, jobs=1)
    two = RiskEvaluator(X, Xp, k=3, pld_exact_max=500, pld_sample=400, pld_seed=5).evaluate(scs, jobs=2)
    assert one == two
    for a, b in zip(exact, one):
        assert abs(b["pld"] - a["pld"]) <= b["pld_bound"]
    rep = evaluate_arrays(X, Xp, k=3, scenarios=scs, pld_exact_max=500, pld_sample=400)
    par = rep["risk"]["parameters"]
    assert (par["pld_method"], par["pld_sample"], par["pld_seed"], par["pld_confidence"]) == ("sampled", 400, 0, 0.95)
    assert rep["risk"]["pld_bound"]["max"] == max(r["pld_bound"] for r in rep["risk"]["per_scenario"])
    exact_rep = evaluate_arrays(X, Xp, k=3, scenarios=scs)
    assert exact_rep["risk"]["parameters"]["pld_method"] == "exact" and exact_rep["risk"]["pld_bound"] is None


def test_sampled_dld_is_the_mean_exact_credit_of_its_sample(rng):
    X = np.round(rng.normal(size=(1000, 4)), 2)
    Xp = _grouped(X, 3)
    scs = [(0,), (1, 3), (0, 1, 2, 3)]
    exact = RiskEvaluator(X, Xp, k=3, pld=False)
    full = RiskEvaluator(X, Xp, k=3, pld=False, dld_exact_max=100, dld_sample=1000)
    part = RiskEvaluator(X, Xp, k=3, pld=False, dld_exact_max=100, dld_sample=300, dld_seed=2)
    assert full.dld_method == "sampled" and part.dld_rows.size == 300
    for sc in scs:
        e = exact.dld_bounded(sc)
        assert e[1] is None
        v, b = full.dld_bounded(sc)
        assert v == pytest.approx(e[0], rel=1e-12) and b >= 0
        v, b = part.dld_bounded(sc)
        assert abs(v - e[0]) <= b
    rep = evaluate_arrays(X, Xp, k=3, scenarios=scs, dld_exact_max=100, dld_sample=300, jobs=2)
    assert rep["risk"]["parameters"]["dld_method"] == "sampled" and rep["risk"]["dld_bound"]["max"] > 0
    assert rep == evaluate_arrays(X, Xp, k=3, scenarios=scs, dld_exact_max=100, dld_sample=300, jobs=1)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 12), st.integers(0, 300), st.integers(0, 2**32 - 1))
def test_counting_sorts_are_stable_argsorts(n_major, n_minor, size, seed):
    """The PLD table's counting sort: the permutation of a stable argsort of
    major * n_minor + minor, ties (equal pairs) in their input order."""
    from microagg_cli.metrics._risk_kernels import counting_order, stable_order_by

    rng = np.random.default_rng(seed)
    major = rng.integers(0, n_major, size).astype(np.int32)
    minor = rng.integers(0, n_minor, size).astype(np.int64)
    want = np.argsort(major.astype(np.int64) * n_minor + minor, kind="stable")
    assert np.array_equal(stable_order_by(major, minor, n_major, n_minor), want)
    # and by one key (DLD's searched originals in the order of their own rows)
    assert np.array_equal(counting_order(minor, n_minor), np.argsort(minor, kind="stable"))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 60), st.integers(1, 5), st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_row_classes_are_the_distinct_rows_of_each_subset(n, p, levels, seed):
    """RowClasses (built over the file's distinct rows) against np.unique on every
    subset: the same classes, numbered by first appearance over the records, whatever
    order the subsets come in (prefix stack)."""
    from itertools import combinations

    from microagg_cli.metrics.risk.anonymity import RowClasses

    rng = np.random.default_rng(seed)
    Xp = rng.integers(0, levels, size=(n, p)).astype(np.float64)
    Xp = np.vstack([Xp, Xp[rng.integers(0, n, size=n // 2)]])  # duplicate rows
    rc = RowClasses(Xp)
    subsets = [sc for s in range(1, p + 1) for sc in combinations(range(p), s)]
    for sc in [subsets[i] for i in rng.permutation(len(subsets))]:
        _, first, inv = np.unique(Xp[:, list(sc)], axis=0, return_index=True, return_inverse=True)
        rank = np.empty(first.size, dtype=np.int64)
        rank[np.argsort(first, kind="stable")] = np.arange(first.size)
        codes, m = rc.classes(sc)
        assert m == first.size
        assert np.array_equal(codes, rank[inv.ravel()])
