"""Information-loss measures: hand-worked values, skipped cells, reference figures."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import CENSUS_LB_NN, CENSUS_MDAV_IL
from microagg_cli.methods.fixed_size import mdav
from microagg_cli.metrics.utility import (
    data_quality,
    il1s,
    il_score,
    il_sse,
    il_sse_blocks,
    lb_nn,
    lb_nn_blocks,
    optimality_gap,
)
from microagg_cli.partition import aggregate, information_loss, zscore

# a zero cell (0, 0), a constant column (1), ordinary column (2)
X_SKIP = np.array([[0.0, 5.0, 1.0], [2.0, 5.0, 3.0], [4.0, 5.0, 2.0]])
XP_SKIP = np.array([[1.0, 5.0, 1.0], [1.0, 5.0, 3.0], [4.0, 5.0, 2.0]])


@pytest.fixture(scope="module")
def census_mdav3(census_matrix, census_z):
    return aggregate(census_matrix, mdav(census_z, 3))


# ---------------------------------------------------------------- IL_SSE


def test_il_sse_blocks_hand_worked():
    X = np.array([[0.0, 1.0], [2.0, 1.0], [4.0, 5.0], [6.0, 5.0]])
    Xp = np.array([[1.0, 1.0], [1.0, 1.0], [5.0, 5.0], [5.0, 5.0]])
    # column 0: z-differences 1/sqrt(5) on 4 cells -> SSE 0.8, SST 4; column 1 exact
    out = il_sse_blocks(X, Xp, [[0], [1]])
    assert out["per_block"] == pytest.approx([20.0, 0.0])
    assert out["overall"] == pytest.approx(10.0)
    assert il_sse(X, Xp) == pytest.approx(10.0)


def test_il_sse_blocks_overall_is_sum_over_blocks(rng):
    X = rng.normal(size=(40, 5)) * [1, 10, 100, 0.1, 3]
    Xp = X + rng.normal(size=X.shape)
    out = il_sse_blocks(X, Xp, [[0, 3], [1], [2, 4]])
    assert out["overall"] == pytest.approx(il_sse(X, Xp))
    # each block on its own is the same figure as IL_SSE of its columns alone
    for cols, value in zip([[0, 3], [1], [2, 4]], out["per_block"]):
        assert value == pytest.approx(il_sse(X[:, cols], Xp[:, cols]))


def test_il_sse_equals_sse_over_sst_for_centroid_replacement(rng):
    X = rng.normal(size=(30, 3))
    labels = mdav(zscore(X)[0], 4)
    Xp = aggregate(X, labels)
    assert il_sse_blocks(X, Xp)["overall"] == pytest.approx(information_loss(zscore(X)[0], labels))


def test_census_mdav_reference(census_matrix, census_mdav3):
    assert round(il_sse_blocks(census_matrix, census_mdav3)["overall"], 4) == CENSUS_MDAV_IL[3]


# ---------------------------------------------------------------- IL1..IL5, score


def test_il_score_hand_worked_with_constant_protected_column():
    X = np.array([[1.0, 2.0], [3.0, 6.0]])
    Xp = np.array([[2.0, 2.0], [2.0, 6.0]])
    r = il_score(X, Xp)
    assert r["il1"] == {"value": pytest.approx(1 / 3), "cells": 4, "skipped": 0}
    assert r["il2"]["value"] == 0.0
    # covariances (divisor n): [[1, 2], [2, 4]] -> [[0, 0], [0, 4]]
    assert r["il3"]["value"] == pytest.approx(2 / 3)
    assert r["il4"]["value"] == pytest.approx(0.5)
    # the protected first column is constant: no correlation, pair skipped
    assert r["il5"] == {"value": None, "cells": 0, "skipped": 1}
    assert r["il_score"]["terms_used"] == ["il1", "il2", "il3", "il4"]
    assert r["il_score"]["value"] == pytest.approx(100 * (1 / 3 + 0 + 2 / 3 + 0.5) / 4)


def test_il_score_zero_denominators_skipped_and_counted():
    r = il_score(X_SKIP, XP_SKIP)
    # IL1: cell (0,0) is 0 -> skipped; only (1,0) changes: |2-1|/2 over 8 cells
    assert r["il1"] == {"value": pytest.approx(0.5 / 8), "cells": 8, "skipped": 1}
    assert r["il2"] == {"value": 0.0, "cells": 3, "skipped": 0}
    # covariances: v00 8/3 -> 2, v02 2/3 -> 0, v22 unchanged; v11, v01, v12 are 0
    assert r["il3"] == {"value": pytest.approx((0.25 + 1.0 + 0.0) / 3), "cells": 3, "skipped": 3}
    assert r["il4"] == {"value": pytest.approx(0.125), "cells": 2, "skipped": 1}
    # r02 = 0.5 -> 0; pairs with the constant column have no correlation
    assert r["il5"] == {"value": pytest.approx(0.5), "cells": 1, "skipped": 2}
    expected = 100 * (0.0625 + 0 + 1.25 / 3 + 0.125 + 0.5) / 5
    assert r["il_score"]["value"] == pytest.approx(expected)
    assert r["il_score"]["terms_used"] == ["il1", "il2", "il3", "il4", "il5"]


def test_il_score_terms_capped_at_one():
    X = np.array([[1.0, 1.0], [2.0, 3.0], [3.0, 2.0]])
    Xp = X * 10.0  # every relative change >= 1 except correlations
    r = il_score(X, Xp)
    assert r["il1"]["value"] == pytest.approx(9.0)
    assert r["il5"]["value"] == pytest.approx(0.0, abs=1e-12)
    assert r["il_score"]["value"] == pytest.approx(100 * (1 + 1 + 1 + 1 + 0) / 5)


def test_il1s_hand_worked():
    r = il1s(X_SKIP, XP_SKIP)
    # sample sds: column 0 -> 2, column 2 -> 1; the constant column's 3 cells skipped
    assert r["cells"] == 6 and r["skipped"] == 3
    assert r["value"] == pytest.approx((1 / (2 * math.sqrt(2)) * 2) / 6)


def test_il1s_single_record_all_skipped():
    assert il1s(np.array([[1.0, 2.0]]), np.array([[1.0, 2.0]])) == {
        "value": None, "cells": 0, "skipped": 2}


def test_identity_protection_loses_nothing(rng):
    X = rng.normal(size=(25, 4)) + 5
    assert il_sse(X, X) == 0.0
    r = il_score(X, X)
    for name in ("il1", "il2", "il3", "il4", "il5", "il_score"):
        assert r[name]["value"] == 0.0
    assert il1s(X, X)["value"] == 0.0
    dq = data_quality(X, X)
    assert dq["mean_sd_z"]["value"] == pytest.approx(1.0)
    assert dq["correlation_discrepancy"]["mean"] == 0.0
    assert dq["pc1"]["share_change"] == 0.0
    assert dq["pc1"]["loading_change"] == 0.0


def test_fully_aggregated_file(rng):
    X = rng.normal(size=(12, 3)) + 10
    Xp = np.tile(X.mean(axis=0), (12, 1))
    assert il_sse(X, Xp) == pytest.approx(100.0)
    r = il_score(X, Xp)
    assert r["il2"]["value"] == pytest.approx(0.0, abs=1e-12)
    assert r["il3"]["value"] == pytest.approx(1.0)
    assert r["il4"]["value"] == pytest.approx(1.0)
    assert r["il5"] == {"value": None, "cells": 0, "skipped": 3}
    dq = data_quality(X, Xp)
    assert dq["mean_sd_z"]["value"] == pytest.approx(0.0, abs=1e-12)
    assert dq["pc1"]["attributes"] == 0 and dq["pc1"]["share_after"] is None
    assert dq["correlation_discrepancy"] == {"mean": None, "sd": None, "pairs": 0, "skipped": 3}


# ---------------------------------------------------------------- data quality


def test_data_quality_two_columns_hand_worked(rng):
    X = rng.normal(size=(200, 2)) @ np.array([[1.0, 0.6], [0.0, 0.8]])
    Xp = X.copy()
    Xp[:, 1] = 0.5 * X[:, 1] + 0.5 * X[:, 1].mean() + 0.3 * X[:, 0]
    r = np.corrcoef(X, rowvar=False)[0, 1]
    rp = np.corrcoef(Xp, rowvar=False)[0, 1]
    dq = data_quality(X, Xp)
    assert r > 0 and rp > 0
    # correlation matrix [[1, r], [r, 1]]: lambda_1 = 1 + r, loadings (1, 1)/sqrt(2)
    assert dq["pc1"]["share_before"] == pytest.approx((1 + r) / 2)
    assert dq["pc1"]["share_after"] == pytest.approx((1 + rp) / 2)
    assert dq["pc1"]["loading_change"] == pytest.approx(0.0, abs=1e-12)
    assert dq["pc1"]["correlation_change"] == pytest.approx(
        abs(math.sqrt(1 + r) - math.sqrt(1 + rp)) / math.sqrt(2))
    assert dq["correlation_discrepancy"]["mean"] == pytest.approx(abs(r - rp))
    assert dq["correlation_discrepancy"]["sd"] == 0.0
    sd_ratio = Xp[:, 1].std() / X[:, 1].std()
    assert dq["mean_sd_z"]["value"] == pytest.approx((1 + sd_ratio) / 2)


def test_data_quality_constant_original_column_skipped():
    dq = data_quality(X_SKIP, XP_SKIP)
    assert dq["mean_sd_z"]["skipped"] == 1
    assert dq["correlation_discrepancy"]["skipped"] == 2
    assert dq["pc1"]["attributes"] == 2 and dq["pc1"]["skipped"] == 1


# ---------------------------------------------------------------- LB_NN


def test_lb_nn_hand_worked_tight():
    # 2 nearest of each record in raw units: 5, 2, 5, 5, 2, 5 -> sum 24 / (2k) = 4,
    # which is the SSE of the optimal partition {0,1,2}{10,11,12}; SST = 154
    X = np.array([[0.0], [1.0], [2.0], [10.0], [11.0], [12.0]])
    assert lb_nn(X, 3) == pytest.approx(100 * 4 / 154)
    labels = np.array([0, 0, 0, 1, 1, 1])
    assert il_sse(X, aggregate(X, labels)) == pytest.approx(lb_nn(X, 3))
    gap = optimality_gap(X, aggregate(X, labels), 3)
    assert gap["gap"]["overall"] == pytest.approx(0.0, abs=1e-12)
    assert gap["ratio"]["overall"] == pytest.approx(1.0)


def test_lb_nn_duplicates_and_small_files():
    X = np.array([[1.0], [1.0], [1.0], [5.0], [5.0], [5.0]])
    assert lb_nn(X, 3) == 0.0  # every record has k-1 identical partners
    assert lb_nn(X, 7) is None  # no 7-partition of 6 records
    assert lb_nn(X, 1) == 0.0


def test_lb_nn_per_block():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [10.0, 0.0], [11.0, 3.0]])
    out = lb_nn_blocks(X, 2, [[0], [1]])
    z1 = zscore(X[:, [1]])[0][:, 0]
    nn1 = [(z1[1] - z1[0]) ** 2] * 3 + [(z1[3] - z1[2]) ** 2]  # 0,0,0 then the 3
    assert out["per_block"][0] == pytest.approx(lb_nn(X[:, [0]], 2))
    assert out["per_block"][1] == pytest.approx(100 * sum(nn1) / 4 / 4)
    assert out["overall"] == pytest.approx(
        (out["per_block"][0] * 4 + out["per_block"][1] * 4) / 8)


@pytest.mark.parametrize("k", sorted(CENSUS_LB_NN))
def test_census_lb_nn_reference(census_matrix, census_z, k):
    lb = lb_nn(census_matrix, k)
    assert round(lb, 4) == CENSUS_LB_NN[k]
    il = il_sse(census_matrix, aggregate(census_matrix, mdav(census_z, k)))
    assert round(il, 4) == CENSUS_MDAV_IL[k]
    assert lb <= il


def test_optimality_gap_census(census_matrix, census_mdav3):
    gap = optimality_gap(census_matrix, census_mdav3, 3)
    assert gap["k"] == 3
    assert gap["gap"]["overall"] == pytest.approx(CENSUS_MDAV_IL[3] - CENSUS_LB_NN[3], abs=1e-4)
    assert gap["ratio"]["overall"] == pytest.approx(CENSUS_MDAV_IL[3] / CENSUS_LB_NN[3], rel=1e-4)


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(4, 30),
    p=st.integers(1, 3),
    k=st.integers(2, 4),
    seed=st.integers(0, 2**31 - 1),
    integer=st.booleans(),
)
def test_lb_nn_is_a_lower_bound(n, p, k, seed, integer):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    if integer:
        X = np.round(X * 2)  # ties and duplicate rows
    lb = lb_nn(X, k)
    consecutive = np.minimum(np.arange(n) // k, n // k - 1)  # remainder joins the last
    for labels in (mdav(zscore(X)[0], k), consecutive, rng.permutation(consecutive)):
        assert lb <= il_sse(X, aggregate(X, labels)) + 1e-9


def test_inputs_not_mutated(rng):
    X = rng.normal(size=(15, 3))
    Xp = X + 0.1
    Xc, Xpc = X.copy(), Xp.copy()
    il_sse_blocks(X, Xp, [[0], [1, 2]])
    il_score(X, Xp)
    il1s(X, Xp)
    data_quality(X, Xp)
    optimality_gap(X, Xp, 3, [[0], [1, 2]])
    assert np.array_equal(X, Xc) and np.array_equal(Xp, Xpc)
