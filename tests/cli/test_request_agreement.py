"""The two library paths agree: for every option of ProtectRequest, EvaluateRequest,
CompareRequest and BlocksRequest, :mod:`microagg_cli.api` (files) and
:mod:`microagg_cli.frames` (in memory) give the same result or the same error, since
both only build the request (whose checks and defaults live in :mod:`microagg_cli.request`)
and pass it on. Each option is tried with a bad value and a good non-default value on a
small frame and on the same data as a CSV file."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from microagg_cli import api, frames
from microagg_cli.blocking import STRATEGIES, BlockPlan, Block, plan_to_toml
from microagg_cli.request import (
    BLOCK_STRATEGIES,
    BlocksRequest,
    CompareRequest,
    EvaluateRequest,
    ProtectRequest,
)

MISSING = "/nonexistent/h39/none.toml"


def _frame() -> pd.DataFrame:
    # 18 records: fewer than the role check judges values from (roles.MIN_VALUES), so that the
    # code-like w, the text g and the id pass through as before and the options are compared
    rng = np.random.default_rng(7)
    df = pd.DataFrame(rng.normal(size=(18, 3)).round(3), columns=list("abc"))
    df["g"] = ["u", "v"] * 9
    df["w"] = rng.integers(1, 5, size=18).astype(float)
    df["id"] = np.arange(1, 19)
    return df


PLAN = "PLAN"  # replaced by a plan file of blocks (a, b) and (c,)

#: field -> (bad options, good non-default options); the base options are merged in
PROTECT = {
    "k": ({"k": 1}, {"k": 4}),
    "method": ({"method": "nope"}, {"method": "vmdav"}),
    "params": ({"params": {"nope": 1}}, {"method": "vmdav", "params": {"gamma": 0.3}}),
    "columns": ({"columns": ["zz"]}, {"columns": ["a", "b"]}),
    "drop": ({"drop": ["zz"]}, {"drop": ["g"]}),
    "passthrough": ({"passthrough": ["zz"]}, {"columns": None, "passthrough": ["g"]}),
    "plan": ({"columns": None, "plan": MISSING}, {"columns": None, "plan": PLAN}),
    "shuffle_rows": ({"shuffle_rows": "yes"}, {"shuffle_rows": True}),
    "metadata": ({"metadata": "/nonexistent/h39/m.rda"}, {"metadata": None}),
    "id_column": ({"id_column": "zz"}, {"id_column": "id"}),
    "evaluate_risk": ({"evaluate_risk": "maybe"}, {"evaluate_risk": True}),
    "encoding": ({"encoding": "nope"}, {"encoding": "latin-1"}),
    "seed": ({"seed": -1}, {"seed": 5}),
    "stat": ({"stat": "nope"}, {"stat": "median"}),
    "strata": ({"strata": ["zz"]}, {"strata": ["g"]}),
    "small_strata": ({"strata": ["g"], "small_strata": "nope"}, {"strata": ["g"], "small_strata": "merge"}),
    "strata_missing": ({"strata_missing": "nope"}, {"strata": ["g"], "strata_missing": "own"}),
    "weights": ({"weights": "zz"}, {"weights": "w"}),
    "missing": ({"missing": "nope"}, {"missing": "complete"}),
    "partition_size": ({"partition_size": 1}, {"partition_size": 12}),
    "bound": ({"bound": "nope"}, {"bound": "on"}),
    "time_limit": ({"time_limit": -1}, {"time_limit": 30.0}),
    "keys": ({"keys": ["zz"]}, {"keys": ["g"]}),
    "categorical": ({"categorical": ["zz"]}, {"categorical": ["g"]}),
    "ordinal": ({"ordinal": ["zz"]}, {"ordinal": ["g"]}),
    "allow_unique_keys": ({"allow_unique_keys": "yes"}, {"categorical": ["g"], "allow_unique_keys": True}),
    "mixed_weights": ({"categorical": ["g"], "mixed_weights": {"nope": 1}},
                      {"categorical": ["g"], "mixed_weights": {"categorical": 1.0}}),
}
EVALUATE = {
    "columns": ({"columns": ["zz"]}, {"columns": ["a", "b"]}),
    "key": ({"key": "zz"}, {"key": "id"}),
    "pairing_file": ({"pairing_file": MISSING}, {"pairing_file": None}),
    "pairing_check": ({"pairing_check": "maybe"}, {"pairing_check": False}),
    "blocks": ({"columns": None, "blocks": [["zz"]]}, {"columns": None, "blocks": [["a"], ["b", "c"]]}),
    "plan": ({"columns": None, "plan": MISSING}, {"columns": None, "plan": PLAN}),
    "k": ({"k": 1}, {"k": 4}),
    "known": ({"known": [["zz"]]}, {"known": [["a", "b"]]}),
    "max_scenarios": ({"max_scenarios": -1}, {"max_scenarios": 2}),
    "seed": ({"seed": -1}, {"seed": 3}),
    "dr_weights": ({"dr_weights": {"nope": 1}}, {"dr_weights": {"dld": 0.5, "pld": 0.25, "id": 0.25}}),
    "score_weights": ({"score_weights": {"nope": 1}}, {"score_weights": {"il": 0.3, "dr": 0.7}}),
    "gates": ({"gates": {"nope": 1}}, {"gates": {"max_dld": 100.0}}),
    "gate_on": ({"gate_on": "nope"}, {"gate_on": "mean"}),
    "missing": ({"missing": "nope"}, {"missing": "complete"}),
    "scale": ({"scale": "nope"}, {"scale": "raw"}),
    "bound": ({"bound": "nope"}, {"bound": "cg"}),
    "time_limit": ({"time_limit": -1}, {"time_limit": 5.0}),
    "models": ({"models": ["nope"]}, {"models": ["a ~ b"]}),
    "weights": ({"weights": "zz"}, {"weights": "w"}),
    "by": ({"by": ["zz"]}, {"by": ["g"]}),
    "strata": ({"strata": ["zz"]}, {"strata": ["g"]}),
    "categorical": ({"categorical": ["zz"]}, {"categorical": ["g"]}),
    "encoding": ({"encoding": "nope"}, {"encoding": "latin-1"}),
    "rmd_k": ({"rmd_k": -1.0}, {"rmd_k": 0.2}),
    "rmd_k2": ({"rmd_k2": float("nan")}, {"rmd_k2": 0.3}),
    "linkage_distance": ({"linkage_distance": "nope"}, {"linkage_distance": "euclidean-plain"}),
    "linkage_exact_max": ({"linkage_exact_max": -1}, {"linkage_exact_max": 10}),
}
COMPARE = {
    "methods": ({"methods": ["nope"]}, {"methods": ["mdav", "vmdav"]}),
    "k": ({"k": [1]}, {"k": [4]}),
    "mic1d_k": ({"methods": ["mic1d"], "mic1d_k": [0]}, {"methods": ["mic1d"], "mic1d_k": [2]}),
    "plans": ({"columns": None, "plans": [MISSING]}, {"columns": None, "plans": [PLAN]}),
    "strategies": ({"strategies": ["nope"]}, {"strategies": ["individual"]}),
    "block_size": ({"block_size": 0}, {"strategies": ["random"], "block_size": 2}),
    "columns": ({"columns": ["zz"]}, {"columns": ["a", "b"]}),
    "categorical": ({"categorical": ["zz"]}, {"categorical": ["g"]}),
    "mixed_weights": ({"categorical": ["g"], "mixed_weights": {"nope": [1]}},
                      {"categorical": ["g"], "mixed_weights": {"categorical": [0.5, 2]}}),
    "keys_sets": ({"keys_sets": [["zz"]]}, {"keys_sets": [["g"], ["g", "id"]]}),
    "preset": ({"preset": "nope"}, {"preset": None}),
    "known": ({"known": [["zz"]]}, {"known": [["a"]]}),
    "max_scenarios": ({"max_scenarios": -1}, {"max_scenarios": 0}),
    "seed": ({"seed": -1}, {"seed": 2}),
    "dr_weights": ({"dr_weights": {"nope": 1}}, {"dr_weights": {"dld": 0.5, "pld": 0.25, "id": 0.25}}),
    "score_weights": ({"score_weights": {"nope": 1}}, {"score_weights": {"il": 0.3, "dr": 0.7}}),
    "jobs": ({"jobs": -5}, {"jobs": 1}),
    "gates": ({"gates": {"nope": 1}}, {"gates": {"min_ci_overlap": 0.0}}),
    "max_linkage": ({"max_linkage": -1.0}, {"max_linkage": 100.0}),
    "encoding": ({"encoding": "nope"}, {"encoding": "latin-1"}),
}
BLOCKS = {
    "strategy": ({"strategy": "nope"}, {"strategy": "random"}),
    "size": ({"size": 0}, {"size": 2}),
    "seed": ({"seed": -1}, {"strategy": "random", "seed": 4}),
    "columns": ({"columns": ["zz"]}, {"columns": ["a", "b"]}),
    "drop": ({"drop": ["zz"]}, {"drop": ["g"]}),
    "method": ({"method": "nope"}, {"method": "vmdav"}),
    "k": ({"k": 1}, {"k": 4}),
    "params": ({"params": {"nope": 1}, "k": 3, "evaluate": True}, {"method": "vmdav", "params": {"gamma": 0.3}}),
    "check": ({"columns": None, "check": MISSING}, {"columns": None, "check": PLAN}),
    "evaluate": ({"evaluate": True}, {"evaluate": True, "k": 3}),
    "recommend": ({"recommend": True}, {"recommend": True, "k": 3}),
    "max_il": ({"max_il": 1.0}, {"max_il": 1e9, "k": 3}),
    "max_known": ({"max_known": 0, "evaluate": True, "k": 3}, {"max_known": 1, "evaluate": True, "k": 3}),
    "stat": ({"stat": "nope", "evaluate": True, "k": 3}, {"stat": "median", "evaluate": True, "k": 3}),
    "encoding": ({"encoding": "nope"}, {"encoding": "latin-1"}),
}

FILE_ONLY = {ProtectRequest: frames._FILE_ONLY, EvaluateRequest: frames._EVAL_FILES,
             CompareRequest: frames._COMPARE_FILES, BlocksRequest: frames._BLOCKS_FILES}
TABLES = {ProtectRequest: PROTECT, EvaluateRequest: EVALUATE, CompareRequest: COMPARE, BlocksRequest: BLOCKS}


def _fields(cls: type) -> list[str]:
    out = []
    for f in dataclasses.fields(cls):
        out += _fields(f.default_factory) if f.metadata.get("nested") else [f.name]
    return out


@pytest.mark.parametrize("cls", list(TABLES), ids=lambda c: c.__name__)
def test_every_field_of_the_frame_paths_has_a_case(cls):
    wanted = {n for n in _fields(cls) if n not in FILE_ONLY[cls]}
    assert set(TABLES[cls]) == wanted


def test_block_strategy_names_are_the_strategies():
    assert tuple(STRATEGIES) == BLOCK_STRATEGIES
    assert {n for n, v in STRATEGIES.items() if v[1]} == {"correlated", "cross", "random"}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("agree")
    df = _frame()
    df.to_csv(d / "o.csv", index=False)
    out, _ = frames.protect_frame(df, 3, columns=list("abc"))
    out.to_csv(d / "p.csv", index=False)
    plan = BlockPlan(blocks=(Block("b1", ("a", "b")), Block("b2", ("c",))))
    (d / "plan.toml").write_text(plan_to_toml(plan), encoding="utf-8")
    return d


def _options(opts: dict, d: Path) -> dict:
    def sub(v):
        if v == PLAN:
            return str(d / "plan.toml")
        if isinstance(v, list):
            return [sub(x) for x in v]
        return v
    return {k: sub(v) for k, v in opts.items() if v is not None or k in ("columns",)}


def _outcome(func, d: Path):
    """("ok", digest) or ("error", (class, message)); a message's input path reads INPUT
    (the frame has none, the hint names it)."""
    try:
        return "ok", func()
    except Exception as exc:  # noqa: BLE001 - the error itself is what is compared
        return "error", (type(exc).__name__, str(exc).replace(str(d / "o.csv"), "INPUT"))


def _protect_digest(out: pd.DataFrame, rep: dict):
    return out.reset_index(drop=True).to_csv(index=False), rep["privacy_check"]


def _evaluate_digest(rep: dict):
    return {k: v for k, v in rep["summary"].items() if not k.endswith("seconds")}, rep["gates"]


def _compare_digest(doc: dict):
    keep = ("label", "k", "method", "il_sse", "k_prime", "dr", "score", "dld", "pld", "id")
    return [{k: r.get(k) for k in keep} for r in doc["rows"]]


def _blocks_digest(res: dict):
    return ({n: (plan_to_toml(c["plan"]), str(c.get("evaluation"))) for n, c in res["candidates"].items()},
            res["recommended"], res["chosen"])


def _run(cls, opts, d):
    df = pd.read_csv(d / "o.csv")
    if cls is ProtectRequest:
        o = {"k": 3, "columns": list("abc"), **opts}
        k = o.pop("k")
        o = {n: v for n, v in o.items() if v is not None or n == "columns"}
        fo = o

        def via_frames():
            return _protect_digest(*frames.protect_frame(df, k, **fo))

        def via_api():
            extra = {"regenerate_ids": True} if o.get("id_column") else {}  # frames: id_column regenerates
            rep = api.protect(d / "o.csv", d / "out.csv", k=k, force=True, **o, **extra)
            return _protect_digest(pd.read_csv(d / "out.csv", keep_default_na=False).replace("", np.nan), rep)
    elif cls is EvaluateRequest:
        o = {"columns": list("abc"), **opts}
        o = {n: v for n, v in o.items() if v is not None}
        fo = o
        pf = pd.read_csv(d / "p.csv")

        def via_frames():
            return _evaluate_digest(frames.evaluate_frame(df, pf, **fo))

        def via_api():
            return _evaluate_digest(api.evaluate(d / "o.csv", d / "p.csv", **o))
    else:  # compare and blocks: one table in, the same options to both
        compare = cls is CompareRequest
        base = {"k": [3], "columns": list("abc"), "max_scenarios": 3} if compare else {"columns": list("abc")}
        o = {n: v for n, v in {**base, **opts}.items() if v is not None}
        on_frame, on_file, digest = ((frames.compare_frames, api.compare, _compare_digest) if compare
                                     else (frames.propose_blocks, api.propose_plans, _blocks_digest))

        def via_frames():
            return digest(on_frame(df, **o))

        def via_api():
            return digest(on_file(d / "o.csv", **o))
    return _outcome(via_frames, d), _outcome(via_api, d)


CASES = [pytest.param(cls, name, which, id=f"{cls.__name__}-{name}-{which}")
         for cls, table in TABLES.items() for name in table for which in ("bad", "good")]


@pytest.mark.parametrize("cls,name,which", CASES)
def test_api_and_frames_agree(cls, name, which, files):
    bad, good = TABLES[cls][name]
    opts = _options(bad if which == "bad" else good, files)
    via_frames, via_api = _run(cls, opts, files)
    assert via_frames == via_api
