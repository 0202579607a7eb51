"""DLD by layers of scenarios: margins, memos and the parents' near rows only
decide whether a search runs, never a result.

Every scenario's DLD must equal the frozen figures of the code before the speed-up
(``tests/data/reference_risk.json.gz``, see ``test_risk_reference``) bit for bit, however
many margins are kept, with one or two threads, alone or among its subsets, exact or
sampled; and every margin the pass keeps must be a lower bound of
the true margin, every kept bound one of the distance of every row outside the kept
near rows (brute force on small files).
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from microagg_cli.metrics import risk
from microagg_cli.methods import get_method
from microagg_cli.partition import aggregate, zscore
from test_risk_reference import digest, reference


def _all(p: int) -> list[tuple[int, ...]]:
    return [c for s in range(1, p + 1) for c in combinations(range(p), s)]


def _case(seed: int, n: int = 120, p: int = 5, k: int = 3, ties: bool = False) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * rng.uniform(0.5, 3.0, size=p)
    if ties:
        X = np.round(X)
    labels = get_method("mdav").func(zscore(X)[0], k, rng=np.random.default_rng(0))
    return X, aggregate(X, labels)


def _brute_margins(ev: risk.RiskEvaluator, sc: tuple[int, ...]) -> np.ndarray:
    """min over the other distinct protected rows of d(a, b) - d(a, own row), per original."""
    sh = ev._dld_shared()
    cols = list(sc)
    Zw = sh.W[0][:, cols]
    d_own = ((sh.W[0][:, cols] - sh.W[1][:, cols]) ** 2).sum(axis=1)
    D = ((Zw[:, None, :] - sh.U[None, :, cols]) ** 2).sum(axis=2)
    D[np.arange(D.shape[0]), sh.row_of] = np.inf
    return D.min(axis=1) - d_own


@pytest.mark.parametrize("seed", range(4))
def test_layers_match_reference_and_single_scenarios(seed):
    X, Xp = _case(seed, ties=seed % 2 == 1)
    scs = _all(X.shape[1])
    frozen = reference()["dld_layers"][str(seed)]
    assert digest(X, Xp) == frozen["inputs"], "the generated case changed: the frozen figures do not apply"
    want = frozen["dld"]
    assert len(want) == len(scs)
    ev = risk.RiskEvaluator(X, Xp, pld=False)
    assert [v for v, _ in ev.dld_many(scs)] == want
    assert [v for v, _ in risk.RiskEvaluator(X, Xp, pld=False).dld_many(scs, jobs=2)] == want
    assert [v for v, _ in risk.RiskEvaluator(X, Xp, pld=False, dld_candidates=8).dld_many(scs)] == want
    assert [ev.dld(sc) for sc in scs[::5]] == want[::5]


def test_no_kept_margins_and_a_partial_keep_give_the_same(monkeypatch):
    X, Xp = _case(11)
    scs = _all(X.shape[1])
    base = risk.RiskEvaluator(X, Xp, pld=False).dld_many(scs)
    # none kept; three scenarios per size with one near row each; every scenario of a
    # size (10 at p = 5) with two near rows each, not the full four
    for budget in (0, 12 * X.shape[0] * 3, 16 * X.shape[0] * 10):
        monkeypatch.setattr(risk.distance_linkage, "_DLD_KEEP_BYTES", budget)
        assert risk.RiskEvaluator(X, Xp, pld=False).dld_many(scs) == base
    monkeypatch.setattr(risk.distance_linkage, "_DLD_NEAR", 1)  # the narrowest lists
    assert risk.RiskEvaluator(X, Xp, pld=False).dld_many(scs) == base


def test_sampled_dld_uses_the_layers_too():
    X, Xp = _case(5, n=300)
    scs = _all(X.shape[1])
    kw = dict(pld=False, dld_exact_max=100, dld_sample=90, dld_seed=3)
    ev = risk.RiskEvaluator(X, Xp, **kw)
    got = ev.dld_many(scs)
    assert ev.dld_method == "sampled" and all(b is not None for _, b in got)
    # each scenario alone: no margins, no parents' beaters
    assert got == [risk.RiskEvaluator(X, Xp, **kw).dld_bounded(sc) for sc in scs]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), p=st.integers(2, 5), k=st.integers(2, 5), ties=st.booleans())
def test_kept_margins_are_lower_bounds(seed, p, k, ties):
    X, Xp = _case(seed, n=60, p=p, k=k, ties=ties)
    ev = risk.RiskEvaluator(X, Xp, pld=False)
    seen: dict[tuple[int, ...], np.ndarray] = {}
    real = risk.distance_linkage._dld_scenario

    def spy(sh, sc, *args):
        credit, margin, near, bound = real(sh, sc, *args)
        seen[sc] = margin.copy(), near.copy(), bound.copy()
        return credit, margin, near, bound

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(risk.distance_linkage, "_dld_scenario", spy)
        ev.dld_many(_all(p))
    sh = ev._dld_shared()
    for sc, (margin, near, bound) in seen.items():
        true = _brute_margins(ev, sc)
        scale = 1e-9 * (1.0 + np.abs(true))
        assert (margin <= true + scale).all(), sc
        # every other row outside an original's near list is at least its bound away
        D = ((sh.W[0][:, None, list(sc)] - sh.U[None, :, list(sc)]) ** 2).sum(axis=2)
        D[np.arange(D.shape[0]), sh.row_of] = np.inf
        for i in range(D.shape[0]):
            listed = near[i][near[i] >= 0]
            assert sh.row_of[i] not in listed
            rest = np.delete(D[i], listed)
            assert (rest >= bound[i] - 1e-9 * (1.0 + bound[i])).all(), (sc, i)
