"""One request object per command: defaults written once (the click options read
them), validated when built, carried whole; the reports are made from it."""

from __future__ import annotations

import ast
import re
import dataclasses
import json
from pathlib import Path

import pytest

from conftest import run_cli
from microagg_cli import api, audit, frames, request
from microagg_cli.cli import cli
from microagg_cli.errors import InvalidParameterError
from microagg_cli.request import (
    BlocksRequest,
    CompareRequest,
    EvaluateRequest,
    ProtectRequest,
    ReadOptions,
    RunOptions,
)

CENSUS = Path(__file__).resolve().parents[2] / "sample_data" / "census.csv"
PACKAGE = Path(request.__file__).resolve().parent

#: command -> its request class; click parameter names that differ from the field's
COMMANDS = {"protect": ProtectRequest, "evaluate": EvaluateRequest, "compare": CompareRequest,
            "blocks": BlocksRequest}
#: options that are the command line's own (display, logging), not the library's
CLI_ONLY = {"quiet", "verbose", "help", "jobs", "list_methods", "list_presets", "output", "fmt"}
#: request fields without an option of their own (set by other options, or library-only)
API_ONLY = {
    ProtectRequest: set(),
    EvaluateRequest: {"gates", "thousands", "na_values"},  # gates: --max-dld, --max-id, ... (one per gate)
    CompareRequest: {"gates", "thousands", "na_values"},  # gates: --min-ci-overlap
    BlocksRequest: {"stat", "decimal", "thousands", "na_values"},
}


def _fields(cls: type) -> dict[str, dataclasses.Field]:
    out = {}
    for f in dataclasses.fields(cls):
        if f.metadata.get("nested"):
            out.update(_fields(f.default_factory))
        else:
            out[f.name] = f
    return out


def _options(name: str) -> dict[str, object]:
    command = cli.get_command(None, name)
    return {p.name: p for p in command.params if p.param_type_name == "option"}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_default_and_help_come_from_the_request(name):
    cls = COMMANDS[name]
    fields = _fields(cls)
    for pname, param in _options(name).items():
        if pname not in fields:
            assert pname in CLI_ONLY or pname.startswith(("max_", "min_")), f"{name} --{pname}: no request field"
            continue
        f = fields[pname]
        if name == "protect" and pname == "bound":  # --bound/--no-bound: unset, on, off
            from microagg_cli.commands.protect import BOUND_FLAG

            assert param.default is BOUND_FLAG[f.default]
        elif param.multiple:
            assert f.default is None and tuple(param.default) == (), (name, pname)
        else:
            assert param.default == f.default, (name, pname, param.default, f.default)
        if pname not in ("decimal", "delimiter", "input_format", "encoding"):  # "of the input" / "of both inputs"
            assert param.help == f.metadata["help"], (name, pname)
        assert f.metadata.get("help"), (cls.__name__, pname)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_request_field_has_an_option_or_is_library_only(name):
    cls = COMMANDS[name]
    options = _options(name)
    for fname in _fields(cls):
        if fname in API_ONLY[cls] or fname in ("output", "fmt", "jobs"):
            continue
        assert fname in options, f"{cls.__name__}.{fname} has no option in sdc {name}"


def test_every_field_is_typed_defaulted_and_documented():
    for cls in (*COMMANDS.values(), ReadOptions, RunOptions):
        for f in dataclasses.fields(cls):
            assert f.type, (cls.__name__, f.name)
            assert f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
            assert f.metadata.get("help"), (cls.__name__, f.name)
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(cls(), dataclasses.fields(cls)[0].name, None)


def test_build_routes_flat_keywords_to_the_nested_parts():
    req = ProtectRequest.build(k=3, seed=7, decimal=",", delimiter=";", strata=["s"])
    assert (req.k, req.run.seed, req.read.decimal, req.read.delimiter, req.run.strata) == (3, 7, ",", ";", ["s"])
    assert req.replace(seed=8).run.seed == 8 and req.run.seed == 7
    with pytest.raises(TypeError, match="bogus"):
        ProtectRequest.build(bogus=1)
    with pytest.raises(TypeError, match="bogus"):
        api.protect(CENSUS, "x.csv", k=3, bogus=1)


@pytest.mark.parametrize("make, message", [
    (lambda: ProtectRequest(regenerate_ids=True), "--regenerate-ids needs --id-column COL"),
    (lambda: ReadOptions(decimal=";"), "decimal mark must be '.' or ','"),
    (lambda: ReadOptions(thousands="1"), "--thousands must be one character"),
    (lambda: RunOptions(missing="drop"), "unknown missing-value policy 'drop'"),
    (lambda: RunOptions(small_strata="x"), "unknown small-strata policy"),
    (lambda: RunOptions(strata_missing="x"), "unknown --strata-missing policy"),
    (lambda: RunOptions(bound="x"), "bound must be one of auto, on, off"),
    (lambda: EvaluateRequest(missing="available"), "unknown missing-value policy 'available'"),
    (lambda: EvaluateRequest(scale="log"), "--scale must be z or raw"),
    (lambda: EvaluateRequest(bound="lp"), "--bound must be nn or cg"),
    (lambda: EvaluateRequest(time_limit=-1.0), "--time-limit must be >= 0 seconds"),
    # checked when built since the request became their one home (before any file is read)
    (lambda: RunOptions(stat="mode"), "unknown statistic 'mode'"),
    (lambda: RunOptions(stat="trimmed:0.5"), "unknown statistic 'trimmed:0.5'"),
    (lambda: RunOptions(weights="w", stat="median"), "--weights applies to the mean"),
    (lambda: ProtectRequest(plan="p.toml", columns=["a"]), "--columns cannot be combined with --plan"),
    (lambda: ProtectRequest(shuffle_rows=True, pairing_file="-"), "--pairing-file needs a file name"),
    (lambda: ProtectRequest(engine="spark"), "unknown engine 'spark'"),
    (lambda: ProtectRequest(engine="local", scheduler="tcp://h:1"), "--scheduler needs --engine dask"),
    (lambda: EvaluateRequest(gates={"max_nope": 1.0}), "unknown gate 'max_nope' (known: max_dld,"),
    (lambda: EvaluateRequest(gate_on="median"), "gate_on must be 'worst' or 'mean'"),
    (lambda: EvaluateRequest(k=1), "k = 1 is no protection"),
    (lambda: EvaluateRequest(html="-"), "--html needs a file name"),
    (lambda: EvaluateRequest(plan="p.toml", blocks=[["a"]]), "--plan names the columns and blocks"),
    (lambda: EvaluateRequest(columns=["a", "b"], blocks=[["a"], ["c"]]), "name different columns"),
    (lambda: EvaluateRequest(columns=[]), "--columns: no column given"),
    (lambda: EvaluateRequest(strata=["s", "s"]), "--by: a column is named twice"),
    (lambda: BlocksRequest(output="-"), "-o -: the plan goes to stdout"),
    (lambda: BlocksRequest(output="plan.txt"), "use a .toml or .json file"),
    (lambda: request.RolesRequest(output="-"), "-o -: the proposal goes to stdout"),
    (lambda: request.RolesRequest(k=1), "k = 1 is no protection"),
])
def test_checked_when_built_with_todays_errors(make, message):
    with pytest.raises(InvalidParameterError, match=re.escape(message)) as exc:
        make()
    assert exc.value.exit_code == 2


def test_valid_combinations_are_not_refused():
    """The checks above refuse only what they name (a plan alone, blocks naming the
    --columns, the mean with weights, --scheduler with dask, an output plan file)."""
    ProtectRequest(plan="p.toml")
    EvaluateRequest(columns=["b", "a"], blocks=[["a"], ["b"]], gates={"max_dld": 5.0}, gate_on="mean", k=2)
    RunOptions(weights="w", stat="mean")
    RunOptions(stat="trimmed:0.25")
    ProtectRequest(engine="dask", scheduler="tcp://h:1")
    BlocksRequest(output="plan.JSON")
    assert request.EVALUATE_K == 3 and request.default(EvaluateRequest, "k") is None


def test_protect_report_parameters_and_reproduce_line_come_from_the_request(tmp_path):
    req = ProtectRequest.build(k=3, seed=7, stat="median", bound="off", small_strata="merge",
                               strata_missing="own", report=str(tmp_path / "r.json"))
    argv = ["sdc", "protect", str(CENSUS), "-o", str(tmp_path / "o.csv"), "-k", "3", "-s", "7"]
    with audit.command_line(argv):
        rep = api.protect_request(CENSUS, tmp_path / "o.csv", req)
    params = rep["parameters"]
    expected = req.parameters(None, thousands=None, na_values=[])
    assert params == expected
    assert (params["seed"], params["stat"], params["bound"], params["small_strata"]) == (7, "median", "off", "merge")
    assert rep["audit"]["reproduce"]["seed"] == 7
    assert rep["audit"]["reproduce"]["command"].endswith("--seed 7")
    assert json.loads((tmp_path / "r.json").read_text())["parameters"] == expected
    # the keyword form builds the same request, hence the same report parameters
    again = api.protect(CENSUS, tmp_path / "o2.csv", k=3, seed=7, stat="median", bound="off",
                        small_strata="merge", strata_missing="own")
    assert again["parameters"] == expected


def test_cli_report_shows_a_non_default_option(tmp_path):
    out, rep = tmp_path / "o.csv", tmp_path / "r.json"
    res = run_cli("protect", CENSUS, "-o", out, "-k", 3, "--seed", 5, "--stat", "median", "--report", rep)
    assert res.exit_code == 0, res.stderr
    doc = json.loads(rep.read_text())
    assert doc["parameters"]["seed"] == 5 and doc["parameters"]["stat"] == "median"
    assert doc["audit"]["reproduce"]["seed"] == 5 and doc["audit"]["reproduce"]["command"].endswith("--seed 5")


def test_evaluate_report_parameters_come_from_the_request(tmp_path):
    prot = tmp_path / "p.csv"
    api.protect(CENSUS, prot, k=3)
    req = EvaluateRequest.build(columns=["AFNLWGT", "AGI"], seed=3, gate_on="mean", missing="complete",
                                max_scenarios=2)
    rep = api.evaluate_request(CENSUS, prot, req)
    params = rep["parameters"]
    for key, value in req.parameters().items():
        assert params[key] == value, key
    assert (params["seed"], params["gate_on"], params["missing"], params["columns_given"]) == \
        (3, "mean", "complete", ["AFNLWGT", "AGI"])
    assert frames.evaluate_frame is not None


# ---------------------------------------------------------------- acceptance

#: the click commands take one parameter per option
NOT_CHECKED = ("commands/",)
#: the public one-call forms keep their keyword names (``**options``)
PUBLIC = {("api.py", "protect"), ("api.py", "evaluate"), ("api.py", "compare"), ("api.py", "propose_plans"),
          ("frames.py", "protect_frame"), ("frames.py", "evaluate_frame"), ("frames.py", "compare_frames"),
          ("frames.py", "propose_blocks")}


def _numba_kernel_says_why(node: ast.FunctionDef, lines: list[str]) -> bool:
    """A compiled kernel (a ``*jit`` decorator) whose comment above it or docstring says
    it is a numba kernel (and why its arrays come one by one)."""
    jitted = any("jit" in ast.unparse(d) for d in node.decorator_list)
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    above = " ".join(lines[max(0, first - 4):first - 1]).lower()
    doc = (ast.get_docstring(node) or "").lower()
    return jitted and ("numba kernel" in above or "numba kernel" in doc)


def test_no_function_below_the_entry_points_takes_more_than_12_parameters():
    too_many = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(NOT_CHECKED):
            continue
        text = path.read_text()
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs) if x.arg not in ("self", "cls")]
                if len(names) > 12 and (rel, node.name) not in PUBLIC and not _numba_kernel_says_why(node, lines):
                    too_many.append(f"{rel}:{node.lineno} {node.name} ({len(names)})")
    assert not too_many, too_many
