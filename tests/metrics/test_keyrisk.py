"""Disclosure risk of categorical keys: hand-worked cases and invariants (hypothesis)."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from microagg_cli.metrics.keyrisk import (
    KeyRiskOptions,
    combinations_table,
    global_risk,
    household_risk,
    individual_risk,
    key_risk,
    l_diversity,
    sample_frequencies,
    suda2,
    violations,
)

# ---------------------------------------------------------------- frequencies


def test_frequencies_missing_matches_any_value():
    # r0 (0,0) matches r0, r2 (0,NA), r3 (NA,NA); r2 matches r0..r3; r3 matches everything
    codes = [[0, 0], [0, 1], [0, -1], [-1, -1], [1, 1]]
    fk, Fk = sample_frequencies(codes, [1, 2, 3, 4, 5])
    assert fk.tolist() == [3, 3, 4, 5, 2]
    assert Fk.tolist() == [8.0, 9.0, 10.0, 15.0, 9.0]


def test_frequencies_without_missing_are_class_sizes():
    fk, Fk = sample_frequencies([[1, 2], [1, 2], [1, 3], [0, 2]], None)
    assert fk.tolist() == [2, 2, 1, 1]
    assert Fk.tolist() == [2.0, 2.0, 1.0, 1.0]


# sdcMicro's own test cases (tests/testthat/test_freqCalc.R, test_indivRisk.R): their data
# and published expected values; -1 is R's NA
_W = [18.0, 45.5, 39.0, 17.0, 92.0, 8.0, 123.5, 51.0]
_A, _B = [2, 3, 2, 2, 3, 3, 1, 2], [3, 3, 3, 3, 3, 3, 4, 3]


@pytest.mark.parametrize("codes,fk,Fk", [
    (np.array([_A, _B, [1, 3, 1, 2, 1, 1, 1, 1]]).T, [3, 1, 3, 1, 2, 2, 1, 3],
     [108.0, 45.5, 108.0, 17.0, 100.0, 100.0, 123.5, 108.0]),
    (np.array([_A, _B, [1, 3, -1, 2, 1, 1, -1, 1]]).T, [3, 1, 4, 2, 2, 2, 1, 3],
     [108.0, 45.5, 125.0, 56.0, 100.0, 100.0, 123.5, 108.0]),
    (np.array([[2, 3, -1, 2, 3, 3, 1, 2], [3, 3, -1, 3, 3, 3, 4, 3], [-1] * 8]).T, [4, 4, 8, 4, 4, 4, 2, 4],
     [125.0, 184.5, 394.0, 125.0, 184.5, 184.5, 162.5, 125.0]),
])
def test_frequencies_equal_sdcmicro_reference(codes, fk, Fk):
    f, F = sample_frequencies(codes, _W)
    assert f.tolist() == fk
    assert F.tolist() == pytest.approx(Fk, rel=1e-12)


def test_individual_risk_equals_sdcmicro_reference():
    codes = np.array([[2, 3, 2, 2, 3, 3, 1, -1], _B, [1, 3, -1, 2, 1, 1, -1, 1]]).T
    fk, Fk = sample_frequencies(codes, _W)
    approx = [0.013698630, 0.085791288, 0.010554090, 0.032466112, 0.009836066, 0.009836066, 0.039316254, 0.005973716]
    exact = [0.013552968, 0.085791288, 0.010504889, 0.032466112, 0.009756889, 0.009756889, 0.039316254, 0.005962551]
    assert individual_risk(fk, Fk, method="approx") == pytest.approx(approx, abs=5e-10)
    assert individual_risk(fk, Fk, method="exact") == pytest.approx(exact, abs=5e-10)


def test_violations_counts_and_shares():
    v = violations(np.array([1, 1, 2, 3, 3, 5]), (2, 3, 5), weights=np.array([1, 2, 3, 4, 5, 6.0]))
    assert [(r["k"], r["records"], r["weighted"]) for r in v] == [(2, 2, 3.0), (3, 3, 6.0), (5, 5, 15.0)]
    assert v[1]["share"] == pytest.approx(0.5)


# ---------------------------------------------------------------- individual risk


def test_individual_risk_closed_forms_by_hand():
    # f=1, F=100: p/q log(1/p); f=2, F=8 (p=1/4): 1/3 - 1/9 log 4; f=3, F=7: approx p/(f-q) = 3/17
    r = individual_risk([1, 2, 3], [100.0, 8.0, 7.0])
    assert r[0] == pytest.approx(0.01 / 0.99 * math.log(100), rel=1e-12)
    assert r[1] == pytest.approx(1 / 3 - math.log(4) / 9, rel=1e-12)
    assert r[2] == pytest.approx(3 / 17, rel=1e-12)
    # exact f=3: p/q^3 (q (1-3p)/2 + p^2 log(1/p)) with p = 3/7
    p, q = 3 / 7, 4 / 7
    ex = individual_risk([3], [7.0], method="exact")[0]
    assert ex == pytest.approx(p / q ** 3 * (q * (1 - 3 * p) / 2 + p * p * math.log(1 / p)), rel=1e-12)


def test_individual_risk_population_and_unweighted():
    assert individual_risk([1, 2, 4], [1.0, 2.0, 4.0]).tolist() == [1.0, 0.5, 0.25]
    assert individual_risk([1, 2, 4]).tolist() == [1.0, 0.5, 0.25]
    # weights below 1 (F < f) read as the population
    assert individual_risk([2], [1.5]).tolist() == [0.5]


@pytest.mark.parametrize("f,F", [(1, 100.0), (2, 8.0), (3, 7.0), (4, 9.0), (5, 60.0), (7, 8.0),
                                 (20, 1000.0), (50, 60.0), (200, 250.0), (300, 100000.0)])
def test_exact_risk_is_the_negative_binomial_expectation(f, F):
    # E[1/F | f] summed directly: sum_y C(f+y-1, y) p^f q^y / (f + y)
    p = f / F
    q = 1 - p
    total, y, prev = 0.0, 0, 0.0
    logc = f * math.log(p)
    while True:
        term = math.exp(logc) / (f + y)
        total += term
        if term < prev and term < 1e-17 * total:  # past the mode, negligible
            break
        prev = term
        logc += math.log(q) + math.log(f + y) - math.log(y + 1)
        y += 1
    assert individual_risk([f], [F], method="exact")[0] == pytest.approx(total, rel=1e-9)


def test_global_and_household_risk():
    g = global_risk(np.array([0.5, 0.5, 0.2, 0.0]))
    assert g == {"expected_reidentifications": 1.2, "share": 0.3, "percent": 30.0}
    hr = household_risk(np.array([0.5, 0.5, 0.2, 1.0, 0.3]), np.array([7, 7, 3, 9, 9]))
    assert hr.tolist() == pytest.approx([0.75, 0.75, 0.2, 1.0, 1.0])


# ---------------------------------------------------------------- l-diversity


def test_l_diversity_by_hand():
    keys = [[0, 0], [0, 0], [0, 0], [1, 0], [1, 0], [1, -1]]
    sens = [1, 2, 2, 3, 3, -1]
    r = l_diversity(keys, sens, l=2)
    assert r["per_record"].tolist() == [2, 2, 2, 1, 1, 0]
    assert (r["classes"], r["classes_below"], r["records_below"], r["min_l"]) == (3, 2, 3, 0)
    # class 0: shares 1/3, 2/3 -> exp(entropy); class 1: one value -> 1; class 2 has none -> 0
    assert r["entropy_min_l"] == 0.0
    r2 = l_diversity([[0], [0], [0]], [1, 2, 2])
    h = -(1 / 3 * math.log(1 / 3) + 2 / 3 * math.log(2 / 3))
    assert r2["entropy_min_l"] == pytest.approx(math.exp(h))


# ---------------------------------------------------------------- SUDA2

SUDA_CASE = np.array([[0, 0, 0], [0, 0, 1], [0, 1, 1], [1, 1, 1], [1, 1, 1]])


def test_suda2_by_hand():
    # r0 unique on {2} (weight (3-1)! = 2); r1's MSU {1,2}, r2's {0,1} (weight 1)
    r = suda2(SUDA_CASE, names=["a", "b", "c"])
    assert r["msu_count"].tolist() == [[1, 0, 0], [0, 1, 0], [0, 1, 0], [0, 0, 0], [0, 0, 0]]
    assert r["score"].tolist() == [2.0, 1.0, 1.0, 0.0, 0.0]
    assert (r["unique_records"], r["pair_records"]) == (3, 2)
    Q = 1.25
    adj = 2 ** -Q + 2
    ratio = 2 * 0.99 / 0.01  # U / Dis - U = P (1 - f) / f
    expect = [1 / (1 + ratio / (s ** Q * adj)) if s else 0.0 for s in (2.0, 1.0, 1.0, 0.0, 0.0)]
    assert r["dis_score"].tolist() == pytest.approx(expect, rel=1e-12)
    assert [(p["key"], p["contribution"]) for p in r["per_key"]] == [("a", 25.0), ("b", 50.0), ("c", 75.0)]
    assert r["contribution"][1].tolist() == [0.0, 1.0, 1.0]


def _coded(*columns):
    return np.stack([np.unique(np.array(c), return_inverse=True)[1].reshape(-1) for c in columns], axis=1)


def test_suda2_equals_sdcmicro_reference_examples():
    # sdcMicro's SUDA2 examples (tests/testthat/test_suda2.R: data and expected scores)
    r = suda2([[2, 0, 0], [1, 3, 6], [1, 0, 0]])
    assert [p["contribution"] for p in r["per_key"]] == [50.0, 37.5, 37.5]
    book = _coded(["20s"] * 7 + ["60s"], ["male"] * 4 + ["female"] * 3 + ["male"], ["50k+"] * 2 + ["50k-"] * 6,
                  ["highschool"] * 4 + ["university", "highschool", "middleschool", "university"])
    assert suda2(book)["score"][4:].tolist() == [4, 2, 6, 8]
    guide = _coded(["U", "U", "U", "U", "R", "U", "U", "U", "U", "U"],
                   ["F", "F", "F", "M", "F", "M", "F", "M", "F", "F"],
                   ["Si", "Si", "Pi", "Sc", "Sc", "Sc", "Pc", "Ps", "Si", "Si"],
                   ["E", "E", "N", "E", "U", "E", "N", "U", "N", "N"])
    assert suda2(guide)["score"].tolist() == [0, 0, 6, 0, 12, 0, 6, 10, 0, 0]


def test_l_diversity_equals_sdcmicro_reference():
    # tests/testthat/test_ldiversity.R: a missing key value is a category of its own here
    keys = _coded(["f", "f", "f", "m", "m", "f", "f"], ["", "", "", "t", "t", "n", "n"],
                  ["o", "o", "o", "o", "o", "M", "M"])
    keys[:3, 1] = -1
    r = l_diversity(keys, [1, 0, 2, 1, 0, 0, 1])
    assert r["per_record"].tolist() == [3, 3, 3, 2, 2, 2, 2]


def test_suda2_missing_matches_nothing():
    # r1 misses key 1: never unique on a set holding it; on {0} it shares 0 with r0
    r = suda2([[0, 0], [0, -1], [1, 0], [1, 0]])
    assert r["msu_count"].tolist() == [[0, 1], [0, 0], [0, 0], [0, 0]]


def test_combinations_table_unsafe_cells():
    t = combinations_table(SUDA_CASE, 2, max_size=2, names=["a", "b", "c"])
    rows = {tuple(r["keys"]): (r["cells"], r["unsafe_cells"], r["unsafe_records"]) for r in t["rows"]}
    assert rows == {("a",): (2, 0, 0), ("b",): (2, 0, 0), ("c",): (2, 1, 1),
                    ("a", "b"): (3, 1, 1), ("a", "c"): (3, 1, 1), ("b", "c"): (3, 2, 2)}
    assert t["records_in_unsafe_cells"] == 3
    assert t["rows"][0]["keys"] == ["b", "c"]


def test_key_risk_sections():
    w = np.array([10.0, 10.0, 20.0, 5.0, 5.0])
    out = key_risk(SUDA_CASE, ["a", "b", "c"], weights=w, household=np.array([1, 1, 2, 3, 3]),
                   sensitive={"s": np.array([1, 1, 2, 3, 4])}, options=KeyRiskOptions(k=2))
    assert out["frequencies"]["sample_uniques"] == 3
    assert [v["records"] for v in out["violations"]] == [3, 5, 5]
    rec = out["records"]
    assert rec["fk"].tolist() == [1, 1, 1, 2, 2]
    assert rec["risk"][3] == pytest.approx(0.25 - 0.0625 * math.log(5))  # f = 2, F = 10: p = 0.2
    assert rec["risk"][2] == pytest.approx(1 / 19 * math.log(20))  # f = 1, F = 20
    assert out["global"]["expected_reidentifications"] == pytest.approx(rec["risk"].sum())
    assert out["household"]["households"] == 3
    assert out["l_diversity"][0]["records_below"] == 3
    assert out["suda2"]["records_with_msu"] == 3
    assert out["combinations"]["max_size"] == 3


# ---------------------------------------------------------------- invariants


def _brute_fk(c, w):
    n = c.shape[0]
    fk = np.zeros(n, int)
    Fk = np.zeros(n)
    for i in range(n):
        for j in range(n):
            both = (c[i] >= 0) & (c[j] >= 0)
            if np.all(c[i][both] == c[j][both]):
                fk[i] += 1
                Fk[i] += w[j]
    return fk, Fk


codes_strategy = st.integers(1, 4).flatmap(
    lambda q: arrays(np.int64, st.tuples(st.integers(1, 25), st.just(q)), elements=st.integers(-1, 2)))


@settings(max_examples=60, deadline=None)
@given(codes_strategy, st.data())
def test_frequencies_equal_pairwise_rule(c, data):
    w = np.array(data.draw(st.lists(st.floats(0.5, 50), min_size=c.shape[0], max_size=c.shape[0])))
    fk, Fk = sample_frequencies(c, w)
    bf, bF = _brute_fk(c, w)
    assert fk.tolist() == bf.tolist()
    assert Fk == pytest.approx(bF)
    if (c >= 0).all():  # classes: sum over records of 1/f_k is the number of classes
        assert (1.0 / fk).sum() == pytest.approx(len({tuple(r) for r in c.tolist()}))


@settings(max_examples=60, deadline=None)
@given(arrays(np.int64, st.integers(1, 40), elements=st.integers(1, 400)), st.data(), st.sampled_from(["approx", "exact"]))
def test_risk_is_a_probability_at_most_one_over_f(f, data, method):
    F = f * np.array(data.draw(st.lists(st.floats(1.0, 1e4), min_size=f.size, max_size=f.size)))
    r = individual_risk(f, F, method=method)
    assert np.all(r >= 0) and np.all(r <= 1.0 / f + 1e-12)
    hh = np.array(data.draw(st.lists(st.integers(0, 5), min_size=f.size, max_size=f.size)))
    hr = household_risk(r, hh)
    for h in np.unique(hh):
        assert hr[hh == h].max() >= r[hh == h].max() - 1e-12
        assert hr[hh == h].max() <= 1.0


def _brute_msus(c, m):
    n, A = c.shape
    unique = {}
    for s in range(1, m + 1):
        for S in combinations(range(A), s):
            for i in range(n):
                if np.any(c[i, list(S)] < 0):
                    unique[S, i] = False
                    continue
                same = np.all(c[:, list(S)] == c[i, list(S)], axis=1)
                unique[S, i] = int(same.sum()) == 1
    count = np.zeros((n, m), int)
    for (S, i), u in unique.items():
        if u and not any(unique[T, i] for t in range(1, len(S)) for T in combinations(S, t)):
            count[i, len(S) - 1] += 1
    return count


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 4).flatmap(
    lambda q: arrays(np.int64, st.tuples(st.integers(1, 20), st.just(q)), elements=st.integers(-1, 2))),
    st.data())
def test_suda2_msus_are_minimal_uniques(c, data):
    m = data.draw(st.integers(1, c.shape[1]))
    r = suda2(c, max_size=m)
    assert r["msu_count"].tolist() == _brute_msus(c, m).tolist()
    assert np.all((r["dis_score"] >= 0) & (r["dis_score"] <= 1))
    scored = r["score"] > 0
    assert np.allclose(r["contribution"][scored].max(axis=1), 1.0) or not scored.any() or \
        np.all(r["contribution"][scored].max(axis=1) <= 1.0 + 1e-12)


def test_risk_stays_exact_as_p_tends_to_one():
    # the closed forms divide by q^3 and cancel as p -> 1; the series keeps every digit
    for method in ("approx", "exact"):
        r = individual_risk([1, 2, 2, 3], [1.0 + 1e-9, 2.0000001, 2.0 + 1e-12, 3.0 + 1e-10], method=method)
        assert r[0] == pytest.approx(1.0, abs=1e-8)
        assert r[1] == pytest.approx(0.5, abs=1e-7) and r[1] <= 0.5
        assert r[2] == pytest.approx(0.5, abs=1e-11)
        assert r[3] == pytest.approx(1 / 3, abs=1e-9)


def test_combinations_beyond_suda_size_and_without_suda_agree():
    c = np.random.default_rng(0).integers(0, 3, (60, 4))
    with_suda = key_risk(c, list("abcd"), options=KeyRiskOptions(k=3, suda_max_size=2, max_combination_size=4))
    without = key_risk(c, list("abcd"), options=KeyRiskOptions(k=3, suda=False, max_combination_size=4))
    assert with_suda["combinations"]["count"] == without["combinations"]["count"] == 15
    assert with_suda["combinations"] == without["combinations"]
    assert with_suda["suda2"]["max_size"] == 2 and without["suda2"] is None
