"""The column-generation lower bound (metrics/cg_bound.py, its kernels and lb_cg.py): validity on small instances.

Every instance is small enough (n <= 14) to enumerate every group of k..2k-1 records:
the exact optimum comes from a dynamic program over subsets (exhaustive), the LP
optimum from an LP over all enumerated columns.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from scipy import sparse
from scipy.optimize import linprog

from microagg_cli.metrics.cg_bound import (
    PricingOptions,
    cg_lower_bound,
    exact_pricing,
    lagrangian_bound,
    squared_distances,
)
from microagg_cli.metrics.lb_cg import cg_bound_blocks
from microagg_cli.metrics.utility import lb_nn
from microagg_cli.partition import sst, zscore


_COLUMNS: dict = {}


def _column_arrays(Z: np.ndarray, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every group of k..2k-1 records, by size: (members (count, m), SSE (count,)), in
    lexicographic order; kept per (Z, k), as several tests enumerate one instance often."""
    key = (Z.shape, Z.tobytes(), k)
    if key not in _COLUMNS:
        n = Z.shape[0]
        D = squared_distances(Z)
        out = []
        for m in range(k, min(2 * k - 1, n) + 1):
            c = np.array(list(itertools.combinations(range(n), m)), dtype=np.int64).reshape(-1, m)
            # the sum of the group's m x m block of D, row-major (as D[np.ix_(c, c)].sum())
            out.append((c, D[c[:, :, None], c[:, None, :]].reshape(len(c), m * m).sum(axis=1) / (2 * m)))
        _COLUMNS[key] = out
    return _COLUMNS[key]


def _all_columns(Z: np.ndarray, k: int) -> tuple[list[tuple[int, ...]], np.ndarray]:
    parts = _column_arrays(Z, k)
    sets = [tuple(s) for c, _ in parts for s in c.tolist()]
    return sets, np.concatenate([cost for _, cost in parts]) if parts else np.zeros(0)


def _lp_all(Z: np.ndarray, k: int) -> float:
    n = Z.shape[0]
    sets, cost = _all_columns(Z, k)
    rows = np.concatenate([np.asarray(s) for s in sets])
    cols = np.repeat(np.arange(len(sets)), [len(s) for s in sets])
    A = sparse.csc_matrix((np.ones(rows.size), (rows, cols)), shape=(n, len(sets)))
    res = linprog(cost, A_eq=A, b_eq=np.ones(n), bounds=(0, None), method="highs")
    assert res.status == 0
    return float(res.fun)


def _optimum(Z: np.ndarray, k: int) -> float:
    """Exhaustive: min SSE over partitions into groups of k..2k-1 (DP over subsets:
    f(mask) = min over the groups s in mask holding its lowest record of SSE(s) +
    f(mask - s), evaluated only for the masks the full set reaches)."""
    n = Z.shape[0]
    sets, cost = _all_columns(Z, k)
    masks = np.array([sum(1 << i for i in s) for s in sets], dtype=np.int64)
    by_low: dict[int, list[int]] = {}
    for j, mk in enumerate(masks):
        by_low.setdefault(int(mk & -mk), []).append(j)
    groups = {low: (masks[js], cost[js]) for low, js in by_low.items()}
    f = {0: 0.0}

    def best(mask: int) -> float:
        if mask not in f:
            f[mask] = np.inf
            mk, c = groups.get(mask & -mask, (masks[:0], cost[:0]))
            ok = (mk & mask) == mk
            if ok.any():
                rest = np.array([best(int(m)) for m in mask ^ mk[ok]])
                f[mask] = float((c[ok] + rest).min())
        return f[mask]

    return best((1 << n) - 1)


def _instances(count: int, seed: int):
    rng = np.random.default_rng(seed)
    for trial in range(count):
        n = int(rng.integers(5, 13))
        k = int(rng.integers(2, 5))
        if n < k:
            continue
        kind = trial % 3
        if kind == 0:
            Z = rng.normal(size=(n, int(rng.integers(1, 4))))
        elif kind == 1:  # tie-heavy: a few integer levels, duplicated rows
            Z = rng.integers(0, 3, size=(n, 2)).astype(float)
        else:  # clusters of identical points
            Z = np.repeat(rng.normal(size=(n // 2 + 1, 2)), 2, axis=0)[:n]
        yield n, k, zscore(Z)[0]  # the measures' scale: LB_NN z-scores its input


@pytest.mark.parametrize("seed", [1, 2])
def test_bound_valid_and_lp_matches_enumeration(seed):
    for n, k, Z in _instances(24, seed):
        res = cg_lower_bound(Z, k, time_limit=None)
        opt = _optimum(Z, k)
        lp = _lp_all(Z, k)
        assert res.status == "optimal"
        assert res.lower <= opt + 1e-12 * max(1.0, opt), (n, k, res.lower, opt)
        # the Lagrangian bounds themselves, before the cap at the best partition known
        assert max(h["bound"] for h in res.history) <= opt + 1e-12 * max(1.0, opt)
        # (lower may exceed the LP optimum: LB_NN and the per-seed Lagrangian bound, with
        # floor(n/k) distinct seeds, bound the integer optimum, not the LP)
        assert res.lp_value == pytest.approx(lp, rel=1e-7, abs=1e-7)
        assert res.lower >= lp - 1e-5 * max(1.0, lp)  # solved: the bound is the LP optimum
        nn = lb_nn(Z, k)
        s = sst(Z)
        if s > 0:
            assert res.lb_il >= nn * (1 - 1e-8)  # LB_NN floor, less its rounding allowance
        assert res.upper is not None and res.upper >= opt - 1e-9


def test_n14_against_exhaustive():
    rng = np.random.default_rng(7)
    for k in (2, 3, 4):
        Z = rng.normal(size=(14, 2))
        res = cg_lower_bound(Z, k, time_limit=None, mip_seconds=5)
        opt = _optimum(Z, k)
        assert res.lower <= opt + 1e-9
        assert res.upper == pytest.approx(opt, rel=1e-9) or res.upper >= opt


def test_lagrangian_bound_any_duals_is_valid():
    """The bound is valid for arbitrary (non-optimal) duals: random u, exact pricing."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        n, k = int(rng.integers(6, 11)), int(rng.integers(2, 4))
        Z = rng.normal(size=(n, 2))
        D = squared_distances(Z)
        u = rng.normal(scale=2.0, size=n)
        low, _, info = exact_pricing(D, u, k)
        assert info["cut_seeds"] == 0
        assert lagrangian_bound(u, low, n, k) <= _optimum(Z, k) + 1e-9
        # node budget of 1: root bounds only, weaker but still valid
        low1, _, info1 = exact_pricing(D, u, k, PricingOptions(node_limit=1))
        assert (low1 <= low + 1e-12).all()
        assert lagrangian_bound(u, low1, n, k) <= _optimum(Z, k) + 1e-9


def test_check_catches_a_bound_above_the_optimum(monkeypatch):
    """The validity check is not vacuous: a pricing that misses columns is caught."""
    import microagg_cli.metrics.cg_bound as cg

    rng = np.random.default_rng(5)
    Z = rng.normal(size=(9, 2))
    opt = _optimum(Z, 2)

    def blind(D, u, k, *opts, **kw):  # claims no seed has a negative reduced cost
        return np.zeros(D.shape[0]), [], {"nodes": 0, "cut_seeds": 0}

    monkeypatch.setattr(cg, "exact_pricing", blind)
    monkeypatch.setattr(cg, "heuristic_all", lambda *a: 0)
    res = cg.cg_lower_bound(Z, 2, time_limit=None, start_labels=np.repeat(np.arange(3), 3))
    assert res.lower > opt + 1e-6  # the start partition's LP value: not a bound


def test_time_limit_returns_valid_bound():
    rng = np.random.default_rng(11)
    Z = rng.normal(size=(12, 2))
    res = cg_lower_bound(Z, 3, time_limit=0.0)
    assert res.status in ("time_limit", "optimal")
    assert res.lower <= _optimum(Z, 3) + 1e-9


def test_blocks_scale_and_overall():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(12, 3)) * [1.0, 10.0, 100.0] + 5
    out = cg_bound_blocks(X, 3, [[0], [1, 2]], time_limit=None)
    assert out["cg_status"]["overall"] == "optimal"
    a, b = out["lb_cg"]["per_block"]
    # overall = SSE-weighted: between the two blocks' percentages
    assert min(a, b) - 1e-9 <= out["lb_cg"]["overall"] <= max(a, b) + 1e-9
    json.dumps(out)


def test_invalid_k():
    from microagg_cli.errors import InvalidParameterError

    with pytest.raises(InvalidParameterError):
        cg_lower_bound(np.zeros((4, 1)), 1)
    with pytest.raises(InvalidParameterError):
        cg_lower_bound(np.zeros((2, 1)), 3)


def test_cli_evaluate_bound_cg(tmp_path):
    """``sdc evaluate --bound cg`` on a small file: lb_cg, the gap, status and time in the JSON."""
    from conftest import run_cli

    rng = np.random.default_rng(4)
    X = np.round(rng.normal(size=(12, 2)) * 10, 1)
    order = np.argsort(X[:, 0], kind="stable")
    labels = np.empty(12, dtype=int)
    labels[order] = np.repeat(np.arange(4), 3)  # 4 groups of 3 along column a
    Xp = np.vstack([X[labels == g].mean(axis=0) for g in range(4)])[labels]
    orig, prot = tmp_path / "orig.csv", tmp_path / "prot.csv"
    np.savetxt(orig, X, delimiter=",", header="a,b", comments="", fmt="%.6f")
    np.savetxt(prot, Xp, delimiter=",", header="a,b", comments="", fmt="%.17g")
    res = run_cli("evaluate", orig, prot, "-k", 3, "--bound", "cg", "--time-limit", 60,
                  "--format", "json", "-q")
    assert res.exit_code == 0, res.output
    rep = json.loads(res.stdout)
    s = rep["summary"]
    assert s["cg_status"] == "optimal"
    assert s["lb_nn"] * (1 - 1e-8) <= s["lb_cg"] <= s["il_sse"] + 1e-9
    assert s["cg_gap"] == pytest.approx((s["il_sse"] - s["lb_cg"]) / s["il_sse"])
    assert s["cg_seconds"] >= 0
    cg = rep["measures"]["utility"]["cg_bound"]
    assert len(cg["lb_cg"]["per_block"]) == 1 and cg["cg_status"]["per_block"] == ["optimal"]
    # against the exhaustive optimum on the measures' z-scale
    Z = zscore(X)[0]
    assert s["lb_cg"] <= 100 * _optimum(Z, 3) / sst(Z) + 1e-9
    # the default stays LB_NN only
    res = run_cli("evaluate", orig, prot, "-k", 3, "--format", "json", "-q")
    assert "lb_cg" not in json.loads(res.stdout)["summary"]
    res = run_cli("evaluate", orig, prot, "--bound", "xx")
    assert res.exit_code == 2


def _seed_bounds_hold(Z: np.ndarray, k: int, u: np.ndarray, order: np.ndarray | None, tol: float,
                      **kw) -> dict:
    """Every enumerated group's rc is >= its seed's bound (seed: first member in the order)."""
    from microagg_cli.metrics.cg_bound import pricing_order

    D = squared_distances(Z)
    low, cols, info = exact_pricing(D, u, k, PricingOptions(tol=tol, **kw), order=order)
    if "node_limit" not in kw:
        assert info["cut_seeds"] == 0
    assert (low <= -tol).all()
    rank = np.empty(len(u), dtype=int)
    rank[pricing_order(u) if order is None else order] = np.arange(len(u))
    for members, cost in _column_arrays(Z, k):
        seed = members[np.arange(len(members)), rank[members].argmin(axis=1)]
        rc = cost - u[members].sum(axis=1)
        bad = rc < low[seed] - 1e-9 * np.maximum(1.0, np.abs(rc))
        assert not bad.any(), (members[bad][0].tolist(), rc[bad][0], low[seed][bad][0])
    for s in cols:  # the columns handed back do have rc < -tol
        assert D[np.ix_(s, s)].sum() / (2 * s.size) - u[s].sum() < -tol + 1e-12
    info["low"] = low
    return info


@pytest.mark.parametrize("seed", [21, 22])
def test_exact_pricing_any_seed_order_random_and_ties(seed):
    """Per-seed bounds under the dual order (default), the index order and random orders,
    on random, tie-heavy (integer levels, duplicated rows) and far-apart clustered data,
    with random duals and duals shaped like column generation's (large on outliers)."""
    rng = np.random.default_rng(seed)
    for trial in range(30):
        n, k = int(rng.integers(5, 11)), int(rng.integers(2, 4))
        kind = trial % 3
        if kind == 0:
            Z = rng.normal(size=(n, 3))
        elif kind == 1:
            Z = rng.integers(0, 2, size=(n, 2)).astype(float)
        else:
            Z = np.repeat(rng.normal(size=(n // 2 + 1, 2)) * 5, 2, axis=0)[:n]
        D = squared_distances(Z)
        if trial % 2:
            u = rng.normal(scale=2.0, size=n)
        else:  # each record's share of a good group, inflated for the far ones
            u = np.sort(D, axis=1)[:, 1:k].sum(axis=1) / k * rng.uniform(0.8, 1.6, size=n)
        for order in (None, np.arange(n), rng.permutation(n)):
            _seed_bounds_hold(Z, k, u, order, tol=float(rng.choice([1e-7, 0.05, 0.5])))


def test_exact_pricing_rejects_a_bad_order():
    from microagg_cli.errors import InvalidParameterError

    D = squared_distances(np.arange(6.0)[:, None])
    with pytest.raises(InvalidParameterError):
        exact_pricing(D, np.ones(6), 2, order=np.array([0, 1, 2, 3, 4, 4]))


def _smoothed(rng: np.random.Generator, n: int, k: int, shift: float, node_limit: int) -> tuple[float, list]:
    """_smoothed_bounds on random data and duals; asserts the bound is valid."""
    import time

    from microagg_cli.metrics._cg_kernels import nn_prefix
    from microagg_cli.metrics.cg_bound import _smoothed_bounds

    Z = zscore(rng.normal(size=(n, 2)))[0]
    D = squared_distances(Z)
    u = rng.normal(scale=3.0, size=n) + shift
    hist: list = []
    lb = _smoothed_bounds(D, nn_prefix(D, 2 * k - 1), u, k, time.perf_counter() + 30, node_limit, 1e-6,
                          hist, 0.0, False)
    assert lb <= _optimum(Z, k) + 1e-9
    return lb, hist


def test_smoothed_bounds_valid():
    """The dual-smoothing fallback (duals between u and the LB_NN duals) stays below the optimum."""
    rng = np.random.default_rng(8)
    for _ in range(6):
        lb, hist = _smoothed(rng, int(rng.integers(7, 12)), int(rng.integers(2, 4)), 1.0, 2_000)
        assert np.isfinite(lb) and hist
        assert all(h["bound"] <= lb for h in hist)


def test_decomposition_heuristic_mip_then_ils():
    """CG columns -> MIP -> ils from the MIP solution: never worse, never below the optimum."""
    from microagg_cli.methods.refine import ils

    rng = np.random.default_rng(9)
    Z = zscore(rng.normal(size=(14, 2)))[0]
    opt = _optimum(Z, 3)
    plain = cg_lower_bound(Z, 3, time_limit=None, mip_seconds=5)
    # the bound measures; the caller runs the local search from the MIP's partition
    polished = ils(Z, 3, rng=np.random.default_rng(0), time_budget=0.2, threads=1, start_labels=plain.labels)
    D0 = squared_distances(Z)
    value = sum(D0[np.ix_(g, g)].sum() / (2 * g.size) for g in (np.flatnonzero(polished == c)
                                                               for c in np.unique(polished)))
    assert opt - 1e-9 <= value <= plain.upper + 1e-9
    assert np.bincount(polished).min() >= 3
    # ils itself from a given partition: a k-partition, never worse than its start
    start = np.repeat(np.arange(4), [3, 3, 4, 4])
    lab = ils(Z, 3, rng=np.random.default_rng(1), iterations=30, start_labels=start)
    D = squared_distances(Z)
    sse = lambda lb: sum(D[np.ix_(g, g)].sum() / (2 * g.size)  # noqa: E731
                         for g in (np.flatnonzero(lb == c) for c in np.unique(lb)))
    assert np.bincount(lab).min() >= 3 and sse(lab) <= sse(start) + 1e-9
    from microagg_cli.errors import InvalidParameterError

    with pytest.raises(InvalidParameterError):
        ils(Z, 3, rng=np.random.default_rng(1), iterations=30, start_labels=np.zeros(13, dtype=int))
    with pytest.raises(InvalidParameterError):
        ils(Z, 3, rng=np.random.default_rng(1), iterations=30, start_labels=np.arange(14) % 7)


@pytest.mark.parametrize("seed", [31, 32])
def test_cut_searches_give_valid_bounds(seed):
    """Searches cut by a tiny node budget: a cut subtree is charged the largest bound on
    its path, a cut seed is searched again with the stronger bound deeper in the tree
    (``deep``) and its threshold is bisected (``refine``); every per-seed bound
    must still be <= the rc of every enumerated group of that seed. Duals inflated so
    that many groups have negative rc and the searches really are cut."""
    from collections import Counter

    rng = np.random.default_rng(seed)
    cut, gained = 0, Counter()
    for trial in range(12):
        n, k = int(rng.integers(10, 14)), int(rng.integers(3, 5))
        Z = rng.normal(size=(n, 3)) if trial % 2 else rng.integers(0, 3, size=(n, 2)).astype(float)
        D = squared_distances(Z)
        u = np.sort(D, axis=1)[:, 1:k].sum(axis=1) / k * rng.uniform(1.0, 3.0, size=n)
        for lim in (2, 6, 30):
            plain = _seed_bounds_hold(Z, k, u, None, 0.01, node_limit=lim, refine=0, deep=1)
            for refine, deep in ((4, 1), (0, 3), (3, 3)):
                more = _seed_bounds_hold(Z, k, u, None, 0.01, node_limit=lim, refine=refine, deep=deep)
                assert (more["low"] >= plain["low"] - 1e-12).all()  # retries only raise bounds
                gained[refine, deep] += int((more["low"] > plain["low"] + 1e-9).sum())
            cut += plain["cut_seeds"]
    # the cut paths and the bisection were exercised (``deep`` alone cannot gain here:
    # pools this small get the partner-charging bound at every node anyway)
    assert cut > 20 and gained[4, 1] > 0 and gained[3, 3] > 0


def test_exact_pricing_threads_and_redo():
    """Threads do not change the result; re-pricing only the cut seeds with a wider
    budget (prev/redo) never lowers a bound and ends exactly where a full pass does."""
    rng = np.random.default_rng(31)
    cut_seen = 0
    for _ in range(8):
        n, k = int(rng.integers(9, 13)), 3
        Z = rng.normal(size=(n, 2))
        D = squared_distances(Z)
        u = rng.normal(scale=2.0, size=n) + 1.5
        low, cols, info = exact_pricing(D, u, k, PricingOptions(node_limit=3, jobs=1))
        low_t, cols_t, info_t = exact_pricing(D, u, k, PricingOptions(node_limit=3, jobs=2))
        np.testing.assert_array_equal(low, low_t)
        assert [c.tolist() for c in cols] == [c.tolist() for c in cols_t]
        assert info["nodes"] == info_t["nodes"] and (info["cut"] == info_t["cut"]).all()
        cut_seen += info["cut_seeds"]
        low2, _, info2 = exact_pricing(D, u, k, PricingOptions(jobs=2), prev=low, redo=info["cut"])
        assert info2["cut_seeds"] == 0 and (low2 >= low).all()
        full, _, _ = exact_pricing(D, u, k)
        np.testing.assert_allclose(low2, full, rtol=1e-12, atol=1e-12)  # rc summed along other paths
        assert lagrangian_bound(u, low2, n, k) <= _optimum(Z, k) + 1e-9
    assert cut_seen > 0  # the budget of 3 nodes did cut searches


def test_smoothed_bounds_redo_rounds():
    """With a tiny node budget the smoothing re-prices the cut seeds in wider rounds:
    each round's bound is at least the previous one at the same lambda, all valid."""
    rng = np.random.default_rng(12)
    rounds = 0
    for _ in range(4):
        lb, hist = _smoothed(rng, int(rng.integers(9, 13)), 3, 2.0, 2)
        assert all(h["bound"] <= lb for h in hist)
        for j, b in enumerate(hist):
            if b["redo"]:  # against the last pass at the same lambda
                rounds += 1
                a = [h for h in hist[:j] if h["lambda"] == b["lambda"]][-1]
                assert b["bound"] >= a["bound"] - 1e-12 and b["node_limit"] > a["node_limit"]
    assert rounds > 0
