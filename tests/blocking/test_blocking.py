"""Blocking plans: plan files, validation with line numbers, strategies, k' per scenario."""

from __future__ import annotations

import logging
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import SAMPLE
from microagg_cli import protection
from microagg_cli.blocking import (
    Block,
    BlockPlan,
    STRATEGIES,
    abs_correlation,
    load_plan,
    make_plan,
    parse_plan,
    plan_mean_abs_corr,
    plan_to_json,
    plan_to_toml,
    propose_blocks,
)
from microagg_cli.blocks_advice import evaluate_plan, recommend_plan
from microagg_cli.evaluation import scenario_risk, scenario_subsets
from microagg_cli.errors import DataError, InvalidParameterError
from microagg_cli.io import numeric_matrix, read_table
from microagg_cli.methods import METHODS, MethodSpec
from microagg_cli.request import RunOptions

#: The paper's nine Census attributes a1..a9 (shared/data/README.md).
A1_A9 = ["AGI", "FICA", "INTVAL", "EMCONTRB", "TAXINC", "WSALVAL", "ERNVAL", "PEARNVAL", "POTHVAL"]


@pytest.fixture(scope="module")
def census_table():
    return read_table(SAMPLE / "census.csv")


@pytest.fixture(scope="module")
def census9(census_table):
    return numeric_matrix(census_table, A1_A9)


def three_pairs(n: int = 200, seed: int = 1) -> np.ndarray:
    """Columns a1, b1, c1, a2, b2, c2: a1~a2, b1~b2, c1~c2 (r ~ 0.99), pairs independent."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(n, 3))
    noise = 0.1 * rng.normal(size=(n, 6))
    return np.column_stack([base, base]) + noise


PAIR_NAMES = ["a1", "b1", "c1", "a2", "b2", "c2"]

# --------------------------------------------------------------------- plan files

GOOD = '''# a comment
version = 1
drop = ["id"]
passthrough = ["code"]

[defaults]
method = "vmdav"
k = 4
params = { gamma = 0.5 }

[[blocks]]
name = "first"
columns = ["x", "y"]

[[blocks]]
columns = ["z"]
k = 3
[blocks.params]
gamma = 0.1

[[blocks]]
columns = ["w"]
method = "mdav"
'''


def test_parse_resolves_defaults_block_by_block():
    plan = parse_plan(GOOD, name="good.toml")
    assert plan.drop == ("id",) and plan.passthrough == ("code",)
    assert plan.blocks == (
        Block("first", ("x", "y"), "vmdav", 4, {"gamma": 0.5}),
        Block("block2", ("z",), "vmdav", 3, {"gamma": 0.1}),
        # the file's default params belong to its default method only
        Block("block3", ("w",), "mdav", 4, {}),
    )


def test_caller_defaults_fill_only_what_the_file_leaves_out(caplog, monkeypatch):
    # the CLI's setup_logging (run by other tests) stops propagation to caplog's handler
    monkeypatch.setattr(logging.getLogger("microagg_cli"), "propagate", True)
    text = '[[blocks]]\ncolumns = ["x"]\n[[blocks]]\ncolumns = ["y"]\nk = 6\nmethod = "mdav"\n'
    plan = parse_plan(text, default_k=3, default_method="vmdav", default_params={"gamma": "0.25"})
    assert plan.blocks[0] == Block("block1", ("x",), "vmdav", 3, {"gamma": 0.25})
    assert plan.blocks[1] == Block("block2", ("y",), "mdav", 6, {})
    # without a k anywhere the block stays unresolved and check() refuses it
    plan = parse_plan(text)
    assert plan.blocks[0].k is None
    with pytest.raises(InvalidParameterError, match=r"<plan>, line 1: block 'block1' has no k"):
        plan.check(["x", "y"])
    # a -k no block uses is reported
    with caplog.at_level(logging.WARNING, logger="microagg_cli"):
        parse_plan('[defaults]\nk = 5\n[[blocks]]\ncolumns = ["x"]\n', default_k=3)
    assert "-k 3 is not used" in caplog.text


def test_toml_and_json_round_trip(tmp_path):
    plan = parse_plan(GOOD)
    text = plan_to_toml(plan, comment="two\nlines", block_comments={"first": "note"})
    assert text.startswith("# two\n# lines\n")
    assert parse_plan(text) == plan
    assert parse_plan(plan_to_json(plan), fmt="json") == plan
    p = tmp_path / "p.json"
    p.write_text(plan_to_json(plan))
    assert load_plan(p) == plan


def test_shared_settings_are_written_once_under_defaults():
    plan = BlockPlan((Block("b1", ("x", "y"), "mdav", 5), Block("b2", ("z",), "mdav", 5)))
    text = plan_to_toml(plan)
    assert "[defaults]\nmethod = \"mdav\"\nk = 5\n" in text
    assert text.count("k = 5") == 1 and text.count("method =") == 1
    mixed = BlockPlan((Block("b1", ("x",), "mdav", 5), Block("b2", ("z",), "mdav", 3)))
    assert parse_plan(plan_to_toml(mixed)) == mixed
    assert "k = 3" in plan_to_toml(mixed) and "k = 5" in plan_to_toml(mixed)


def test_long_column_lists_wrap_and_still_round_trip():
    cols = tuple(f"column_with_a_long_name_{i}" for i in range(12))
    plan = BlockPlan((Block("b1", cols, "mdav", 3),), drop=("id",))
    text = plan_to_toml(plan)
    assert max(len(line) for line in text.splitlines()) <= 88
    assert parse_plan(text) == plan


_name = st.text(alphabet="abcXYZ_-é 1", min_size=1, max_size=6)


@settings(max_examples=40, deadline=None)
@given(
    cols=st.lists(_name, min_size=1, max_size=8, unique=True),
    cuts=st.lists(st.integers(1, 3), min_size=1, max_size=8),
    ks=st.lists(st.one_of(st.none(), st.integers(2, 9)), min_size=8, max_size=8),
    gamma=st.one_of(st.none(), st.floats(0, 1, allow_nan=False)),
)
def test_round_trip_property(cols, cuts, ks, gamma):
    blocks, i = [], 0
    for j, c in enumerate(cuts):
        part = tuple(cols[i:i + c])
        if not part:
            break
        method = "vmdav" if gamma is not None and j % 2 else "mdav"
        params = {"gamma": gamma} if method == "vmdav" else {}
        blocks.append(Block(f"b {j}", part, method, ks[j], params))
        i += c
    plan = BlockPlan(tuple(blocks))
    assert parse_plan(plan_to_toml(plan)) == plan
    assert parse_plan(plan_to_json(plan), fmt="json") == plan


BAD_PLANS = {
    "column in two blocks": (
        '[defaults]\nk = 5\n\n[[blocks]]\ncolumns = ["a", "b"]\n\n[[blocks]]\nname = "two"\n'
        'columns = [\n  "c",\n  "a",\n]\n',
        "line 11: column 'a' is in block 'block1' and block 'two'; blocks must be disjoint",
    ),
    "k below 2": ('[[blocks]]\ncolumns = ["a"]\n[[blocks]]\ncolumns = ["b"]\nk = 1\n',
                  "line 5: k must be an integer >= 2 (k = 1 is no protection), got 1"),
    "k not an integer": ('[defaults]\nk = 2.5\n[[blocks]]\ncolumns = ["a"]\n',
                         "line 2: k must be an integer >= 2 (k = 1 is no protection), got 2.5"),
    "unknown method": ('[defaults]\nmethod = "nope"\n[[blocks]]\ncolumns = ["a"]\n',
                       "line 2: unknown method 'nope'"),
    "unknown parameter": ('[[blocks]]\ncolumns = ["a"]\nmethod = "vmdav"\n[blocks.params]\ngamma = 0.3\nzzz = 1\n',
                          "line 6: block 'block1': method 'vmdav' has no parameter 'zzz'"),
    "bad parameter value": ('[[blocks]]\ncolumns = ["a"]\nmethod = "vmdav"\nparams = { gamma = "x" }\n',
                            "line 4: block 'block1': vmdav: parameter 'gamma' must be of type float"),
    "parameter out of range": ('[defaults]\nmethod = "vmdav"\nparams = { gamma = -1.0 }\n[[blocks]]\ncolumns = ["a"]\n',
                               "line 3: block 'block1': vmdav: parameter 'gamma' must be >= 0"),
    "malformed": ('[[blocks]]\ncolumns = ["a"\nk = 3\n', "line 3, column 1: malformed TOML: Unclosed array"),
    "wrong type": ('drop = "id"\n[[blocks]]\ncolumns = ["a"]\n', "line 1: drop must be a list of column names"),
    "misspelt key": ('[[blocks]]\ncolumns = ["a"]\ncolums = ["b"]\n',
                     "line 3: unknown key 'colums' in block 1 (did you mean 'columns'?"),
    "no blocks": ('drop = ["x"]\n', "good.toml: the plan has no [[blocks]]"),
    "no columns": ('[[blocks]]\nname = "x"\n', "line 1: block 'x' has no columns"),
    "empty columns": ('[[blocks]]\ncolumns = []\n', "line 2: block 'block1' has no column"),
    "duplicate name": ('[[blocks]]\nname = "x"\ncolumns = ["a"]\n[[blocks]]\nname = "x"\ncolumns = ["b"]\n',
                       "line 5: block name 'x' is used twice"),
    "dropped and protected": ('drop = ["a"]\n[[blocks]]\ncolumns = ["a"]\n',
                              "line 3: column 'a' is both in block 'block1' and in drop"),
    "too wide for the method": ('[[blocks]]\ncolumns = ["a", "b"]\nmethod = "optimal-1d"\n',
                                "line 3: block 'block1': method 'optimal-1d' takes at most 1 column(s), got 2"),
    "version": ('version = 2\n[[blocks]]\ncolumns = ["a"]\n', "line 1: version must be 1"),
}


@pytest.mark.parametrize("case", sorted(BAD_PLANS))
def test_bad_plans_precise_messages(case):
    text, fragment = BAD_PLANS[case]
    with pytest.raises(InvalidParameterError) as err:
        parse_plan(text, name="good.toml")
    assert fragment in str(err.value), str(err.value)
    assert "\n" not in str(err.value)


def test_bad_json_plans_have_lines_too():
    text = '{\n  "defaults": {"k": 3},\n  "blocks": [\n    {"columns": ["a", "b"]},\n' \
           '    {"name": "x",\n     "columns": ["c"],\n     "k": 1}\n  ]\n}\n'
    with pytest.raises(InvalidParameterError, match=r"^p\.json, line 7: k must be an integer >= 2 \(k = 1 is no protection\), got 1$"):
        parse_plan(text, fmt="json", name="p.json")
    with pytest.raises(InvalidParameterError, match=r"p\.json, line 1, column 13: malformed JSON"):
        parse_plan('{"blocks": [}', fmt="json", name="p.json")


def test_load_plan_file_errors(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        load_plan(tmp_path / "nope.toml")
    with pytest.raises(InvalidParameterError, match=r"\.toml or \.json"):
        load_plan(tmp_path / "plan.yaml")
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"\xff\xfe[[blocks]]")
    with pytest.raises(InvalidParameterError, match="UTF-8"):
        load_plan(bad)


def test_check_against_the_input_names_the_line():
    plan = parse_plan('drop = ["id"]\n\n[[blocks]]\ncolumns = [\n  "x",\n  "zz",\n]\nk = 3\n', name="p.toml")
    with pytest.raises(DataError, match=r"^p\.toml, line 6: block 'block1': no column 'zz' in the input \(columns: id, x, y\)$"):
        plan.check(["id", "x", "y"])
    with pytest.raises(DataError, match=r"p\.toml, line 1: drop: no column 'id'"):
        plan.check(["x", "zz"])
    # pass-through columns must exist and must not be protected
    pt = BlockPlan((Block("b", ("x",), "mdav", 3),), passthrough=("x",))
    with pytest.raises(InvalidParameterError, match="pass-through but protected"):
        pt.check(["x"])
    assert BlockPlan((Block("b", ("x",), "mdav", 3),), passthrough=("y",)).check(["x", "y"]) is None
    # extra drops from the command line are merged
    assert plan.with_drop(["y", "id"]).drop == ("id", "y")


# --------------------------------------------------------------------- strategies


def test_correlated_and_cross_on_three_correlated_pairs():
    X = three_pairs()
    assert propose_blocks(X, PAIR_NAMES, "correlated", 2) == [("a1", "a2"), ("b1", "b2"), ("c1", "c2")]
    # two blocks of three; column j of both blocks comes from correlated pair j
    assert propose_blocks(X, PAIR_NAMES, "cross", 3) == [("a1", "b1", "c1"), ("a2", "b2", "c2")]
    assert propose_blocks(X, PAIR_NAMES, "individual") == [(c,) for c in PAIR_NAMES]
    assert propose_blocks(X, PAIR_NAMES, "single") == [tuple(PAIR_NAMES)]


def test_correlated_last_block_takes_the_remainder():
    X = three_pairs()
    blocks = propose_blocks(X, PAIR_NAMES, "correlated", 4)
    assert sorted(len(b) for b in blocks) == [2, 4]
    # the pair left out of the 4-block is a correlated pair
    small = next(b for b in blocks if len(b) == 2)
    assert small[0][0] == small[1][0]


def _objective(A, blocks):
    return sum(A[i, j] for b in blocks for i, j in combinations(b, 2))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), p=st.integers(2, 8), size=st.integers(1, 4))
def test_strategy_invariants(seed, p, size):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(30, p)) @ rng.normal(size=(p, p))
    names = [f"c{j}" for j in range(p)]
    A = abs_correlation(X)
    pos = {c: j for j, c in enumerate(names)}
    for strategy in STRATEGIES:
        blocks = propose_blocks(X, names, strategy, size, seed=seed)
        flat = [c for b in blocks for c in b]
        assert sorted(flat) == sorted(names)  # a partition of the columns
        assert propose_blocks(X, names, strategy, size, seed=seed) == blocks  # deterministic
        if strategy in ("correlated", "random"):
            assert sorted(len(b) for b in blocks) == sorted([size] * (p // size) + ([p % size] if p % size else []))
        if strategy == "cross":
            assert len(blocks) == -(-p // size) and max(map(len, blocks)) - min(map(len, blocks)) <= 1
        if strategy == "correlated":
            idx = [[pos[c] for c in b] for b in blocks]
            best = _objective(A, idx)
            # local optimum: no swap of two columns between blocks raises within-block |r|
            for a, b in combinations(range(len(idx)), 2):
                for x in idx[a]:
                    for y in idx[b]:
                        trial = [list(blk) for blk in idx]
                        trial[a][trial[a].index(x)] = y
                        trial[b][trial[b].index(y)] = x
                        assert _objective(A, trial) <= best + 1e-9


def test_random_strategy_depends_on_the_seed_only():
    X = three_pairs()
    a = propose_blocks(X, PAIR_NAMES, "random", 2, seed=1)
    assert a == propose_blocks(X, PAIR_NAMES, "random", 2, seed=1)
    assert any(propose_blocks(X, PAIR_NAMES, "random", 2, seed=s) != a for s in range(2, 6))


def test_strategy_errors():
    X = three_pairs()
    with pytest.raises(InvalidParameterError, match="needs a block size"):
        propose_blocks(X, PAIR_NAMES, "correlated")
    with pytest.raises(InvalidParameterError, match="integer >= 1"):
        propose_blocks(X, PAIR_NAMES, "cross", 0)
    with pytest.raises(InvalidParameterError, match="unknown strategy"):
        propose_blocks(X, PAIR_NAMES, "nope", 2)


def test_correlation_with_missing_values_and_constants():
    X = np.array([[1.0, 2.0, 5.0], [2.0, 4.1, 5.0], [3.0, np.nan, 5.0], [4.0, 8.0, 5.0]])
    A = abs_correlation(X)
    assert A[0, 1] == pytest.approx(abs(np.corrcoef([1, 2, 4], [2, 4.1, 8])[0, 1]))
    assert A[0, 2] == 0.0 and A[1, 2] == 0.0  # constant column
    assert np.allclose(np.diag(A), 1.0)


def test_census_correlated_beats_cross_on_within_block_correlation(census9):
    correlated = make_plan(census9, A1_A9, strategy="correlated", size=3, k=5)
    cross = make_plan(census9, A1_A9, strategy="cross", size=3, k=5)
    assert plan_mean_abs_corr(census9, A1_A9, correlated) > plan_mean_abs_corr(census9, A1_A9, cross) + 0.15
    blocks = {frozenset(b.columns) for b in correlated.blocks}
    # the nearly collinear earnings columns and the AGI/TAXINC pair (|r| = 0.98)
    assert frozenset({"WSALVAL", "ERNVAL", "PEARNVAL"}) in blocks
    assert any({"AGI", "TAXINC"} <= b for b in blocks)
    assert all(b.k == 5 and b.method == "mdav" for b in correlated.blocks)


# ------------------------------------------------------------ k' and evaluation


def test_scenario_risk_hand_worked_shares():
    # one block of x and one of y: x alone has classes {1,1} {2,2,2}; (x, y) has 4 classes
    Xp = np.array([[1.0, 5.0], [1.0, 6.0], [2.0, 5.0], [2.0, 6.0], [2.0, 6.0]])
    plan = BlockPlan((Block("b1", ("x",), "mdav", 2), Block("b2", ("y",), "mdav", 2)))
    risk = scenario_risk(Xp, plan, 2)
    assert risk["by_known"]["1"]["k_prime_mean"] == 2.5 and risk["by_known"]["1"]["k_min_worst"] == 2
    assert risk["labels"]["2G"]["k_prime_worst"] == 5 / 4
    assert risk["labels"]["2G"]["share_below_k_mean"] == pytest.approx(0.6)  # 3 records in singletons


def test_scenario_risk_labels_by_blocks_touched():
    # two one-column blocks, each 2-anonymous; together every record is unique
    Xp = np.array([[1.0, 5.0], [1.0, 6.0], [2.0, 5.0], [2.0, 6.0]])
    plan = BlockPlan((Block("b1", ("x",), "mdav", 2), Block("b2", ("y",), "mdav", 2)))
    risk = scenario_risk(Xp, plan, 2)
    assert risk["scenarios"] == 3
    assert risk["labels"]["1G"]["scenarios"] == 2
    assert risk["labels"]["1G"]["k_prime_worst"] == 2.0 and risk["labels"]["1G"]["k_min_worst"] == 2
    assert risk["labels"]["2G"] == {
        "scenarios": 1, "k_prime_mean": 1.0, "k_prime_worst": 1.0, "k_min_worst": 1,
        "share_below_k_mean": 1.0, "worst_known": ["x", "y"],
    }
    assert risk["worst"]["k_prime_worst"] == 1.0
    assert set(risk["by_known"]) == {"1", "2"}


def test_scenario_subsets_max_known():
    assert len(scenario_subsets(9)) == 511
    assert scenario_subsets(4, max_known=2) == [(0,), (1,), (2,), (3,), (0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    wide = scenario_subsets(38, max_known=1)
    assert wide == [(j,) for j in range(38)]
    sample = scenario_subsets(38)
    assert len(sample) == 512 and sample == scenario_subsets(38)


def test_census_correlated_blocking_1g_holds_k_3g_does_not(census_table):
    plan = load_plan(SAMPLE / "plans" / "census-correlated.toml")
    ev = evaluate_plan(census_table, plan)
    labels = ev["risk"]["labels"]
    assert set(labels) == {"1G", "2G", "3G"}
    # subsets inside one block: 3 * (2^3 - 1); touching all three: 7^3; the rest of 511
    assert [labels[g]["scenarios"] for g in ("1G", "2G", "3G")] == [21, 147, 343]
    assert labels["1G"]["k_prime_worst"] >= 5 and labels["1G"]["k_min_worst"] >= 5
    assert labels["3G"]["k_prime_mean"] < 1.5 and labels["3G"]["k_min_worst"] == 1
    # the plan's IL_SSE is the pooled SSE/SST of its blocks
    res = protection.protect_table(census_table, plan)
    sse = sum(r.stats["sse"] for r in res.blocks)
    sst = sum(r.stats["sst"] for r in res.blocks)
    assert ev["il_sse"] == pytest.approx(100 * sse / sst)


def test_recommend_plan_best_worst_case_under_il_bound():
    def ev(il, kw, km):
        return {"il_sse": il, "risk": {"worst": {"k_prime_worst": kw, "k_prime_mean": km}}}

    evals = {"a": ev(2.0, 1.1, 2.0), "b": ev(6.0, 5.0, 5.0), "c": ev(3.0, 1.1, 2.5), "d": ev(5.0, 5.0, 5.0),
             "e": ev(1.0, 1.101, 1.2)}
    assert recommend_plan(evals) == "d"  # best worst k', equal mean k' -> lower IL
    # e's worst k' equals a's and c's as shown (1.10); c has the higher mean k'
    assert recommend_plan(evals, max_il=4.0) == "c"
    assert recommend_plan(evals, max_il=2.0) == "a"
    assert recommend_plan(evals, max_il=0.5) is None


# --------------------------------------------------- plans through protect_table


def test_mic1d_block_takes_the_whole_block(census_table):
    plan = BlockPlan((
        Block("values", ("AGI", "FICA", "INTVAL"), "mic1d", 6, {}),
        Block("records", ("EMCONTRB", "TAXINC"), "mdav", 4, {}),
    ))
    res = protection.protect_table(census_table, plan, RunOptions(seed=3))
    alone = protection.protect_array(numeric_matrix(census_table, ["AGI", "FICA", "INTVAL"]), 6, method="mic1d",
                              columns=("AGI", "FICA", "INTVAL"))
    np.testing.assert_array_equal(res.blocks[0].values, alone.values)
    assert res.blocks[0].stats["k_counts"] == "values"
    assert res.blocks[1].stats["k_min"] >= 4


def test_each_block_is_seeded_by_its_position(census_table, monkeypatch):
    def shuffled(X, k, *, rng):
        n = X.shape[0]
        assert n % k == 0
        labels = np.empty(n, dtype=np.int64)
        labels[rng.permutation(n)] = np.arange(n) // k
        return labels

    monkeypatch.setitem(METHODS, "shuffled", MethodSpec("shuffled", shuffled, "random groups", "none"))
    a = Block("a", ("AGI", "FICA"), "shuffled", 4, {})
    b = Block("b", ("INTVAL", "POTHVAL"), "shuffled", 4, {})
    res = protection.protect_table(census_table, BlockPlan((a, b)), RunOptions(seed=11))
    for i, blk in enumerate((a, b)):
        X = numeric_matrix(census_table, list(blk.columns))
        alone = protection.protect_array(X, 4, method="shuffled", columns=blk.columns,
                                  seed=np.random.SeedSequence(11, spawn_key=(i,)))
        np.testing.assert_array_equal(res.blocks[i].labels, alone.labels)
    swapped = protection.protect_table(census_table, BlockPlan((b, a)), RunOptions(seed=11))
    # block a now sits at position 1 and gets that position's stream
    assert not np.array_equal(swapped.blocks[1].labels, res.blocks[0].labels)
    again = protection.protect_table(census_table, BlockPlan((a, b)), RunOptions(seed=11))
    np.testing.assert_array_equal(again.blocks[1].labels, res.blocks[1].labels)
