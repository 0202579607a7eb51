"""Library API for data in memory: pandas DataFrames and Arrow tables.

The same validation, errors and report dicts as the CLI and the file-level API
(:mod:`microagg_cli.api`), without files: a notebook user passes a frame and gets a
frame back. A ``pyarrow.Table`` in gives a ``pyarrow.Table`` out, with the
pass-through columns untouched (types, nulls, dictionary encoding, metadata).

Keywords mean one thing everywhere: ``columns``, ``strata``, ``weights`` and
``id_column`` are column *names*; ``plan`` is a :class:`microagg_cli.blocking.BlockPlan`.

Examples
--------
>>> import pandas as pd
>>> from microagg_cli.frames import protect_frame, evaluate_frame
>>> df = pd.DataFrame({"id": [1, 2, 3, 4, 5, 6],
...                    "income": [10.0, 11.0, 12.0, 50.0, 52.0, 54.0],
...                    "age": [30.0, 31.0, 32.0, 60.0, 61.0, 62.0]})
>>> out, report = protect_frame(df, 3, columns=["income", "age"])
>>> out["income"].tolist()
[11.0, 11.0, 11.0, 52.0, 52.0, 52.0]
>>> out["id"].tolist() == df["id"].tolist(), report["privacy_check"]["passed"]
(True, True)
>>> ev = evaluate_frame(df, out, columns=["income", "age"], k=3)
>>> round(ev["summary"]["il_sse"], 4), ev["summary"]["k_prime"]
(0.3452, 3.0)
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import pandas as pd

from .blocks_advice import advise, plan_to_check
from .errors import DataError, InvalidParameterError
from .evaluation import evaluate_protected, evaluate_tables, raise_for_gates
from .io import Table
from .protection.run import protect_run
from .protection.table import check_keys, check_options, single_plan
from .roles import check_declared_missing, finish_roles, load_rda, prepare_dates, release_dates, resolve_request
from .protection.mixed import split_plan
from .methods import get_method
from .request import BlocksRequest, CompareRequest, EvaluateRequest, ProtectRequest

__all__ = ["protect_frame", "evaluate_frame", "compare_frames", "propose_blocks", "as_table"]


def as_table(data: Any, what: str = "data") -> Table:
    """A pandas DataFrame or a pyarrow Table as an in-memory :class:`microagg_cli.io.Table`.

    Column names must be unique non-empty strings and there must be at least one row
    (:class:`DataError` otherwise, as for files). The DataFrame's index is not data:
    it is neither protected nor returned.
    """
    import pyarrow as pa

    if isinstance(data, pd.DataFrame):
        names = list(data.columns)
        frame = data.reset_index(drop=True)
    elif isinstance(data, pa.Table):
        names = list(data.column_names)
        frame = data
    else:
        raise InvalidParameterError(f"{what}: expected a pandas DataFrame or a pyarrow Table, got {type(data).__name__}")
    bad = [n for n in names if not isinstance(n, str) or not n.strip()]
    if bad:
        raise DataError(f"{what}: column names must be non-empty strings, got {bad[0]!r}")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise DataError(f"{what}: duplicate column {dup[0]!r}")
    if len(data) == 0:
        raise DataError(f"{what}: the table has no rows")
    return Table(frame, "parquet", None)


def _same_kind(result: Any, like: Any) -> Any:
    """The protected table as the kind of object the caller passed in."""
    if isinstance(like, pd.DataFrame):
        return result.frame
    return result.data


def _refuse(options: dict[str, Any], names: Sequence[str], func: str) -> None:
    """A file-level option (a report, a format, an output) has no meaning for a frame."""
    for name in names:
        if name in options:
            raise TypeError(f"{func}() got an unexpected keyword argument {name!r}")


#: Options of :func:`microagg_cli.api.evaluate` / :func:`microagg_cli.api.compare` that name files.
_EVAL_FILES = ("report", "html", "internal", "force", "input_format", "delimiter", "decimal", "thousands",
               "na_values")
_COMPARE_FILES = ("output", "fmt", "html", "save_protected", "force", "input_format", "delimiter", "decimal",
                  "thousands", "na_values")
_BLOCKS_FILES = ("output", "force", "input_format", "delimiter", "decimal", "thousands", "na_values")

#: Options of :func:`microagg_cli.api.protect` that name files: no meaning for a frame.
_FILE_ONLY = ("report", "force", "input_format", "output_format", "delimiter", "decimal", "thousands",
              "na_values", "regenerate_ids", "engine", "scheduler", "pairing_file")


def protect_frame(df: Any, k: int | None = None, **options: Any) -> tuple[Any, dict[str, Any]]:
    """Protect a DataFrame (or Arrow table): ``sdc protect`` in memory.

    Parameters are those of :func:`microagg_cli.api.protect` (``id_column`` here means
    "regenerate this identifier column"). Returns ``(protected, report)``: the
    protected table, of the same kind as ``df`` (rows in input order unless
    ``shuffle_rows``), and the report dict of the CLI (``report["privacy_check"]``,
    ``report["blocks"]``...; no ``audit`` section, since no file is written).

    Raises the errors of the CLI: :class:`InvalidParameterError` (bad options),
    :class:`DataError` (bad data), :class:`InfeasibleError`,
    :class:`PrivacyCheckError` (a group below k: nothing is returned).

    Examples
    --------
    >>> import pyarrow as pa
    >>> t = pa.table({"code": pa.array(["a", "b", "c", "d"]).dictionary_encode(),
    ...               "x": [1.0, 2.0, 3.0, 4.0]})
    >>> out, rep = protect_frame(t, 2, columns=["x"], passthrough=["code"])  # a declared key: named to pass
    >>> out.column("x").to_pylist(), out.schema.field("code").type
    ([1.5, 1.5, 3.5, 3.5], DictionaryType(dictionary<values=string, indices=int32, ordered=0>))
    """
    t0 = time.perf_counter()
    table = as_table(df)
    _refuse(options, _FILE_ONLY, "protect_frame")
    request = ProtectRequest.build(k=k, regenerate_ids=options.get("id_column") is not None, **options)
    # every column's role, as sdc protect decides it (a default run refuses to guess)
    rda = load_rda(request.metadata) if request.metadata is not None else None
    table, request, coded, roles = resolve_request(table, request, rda, request.metadata)
    plan, columns, passthrough, run = request.plan, request.columns, request.passthrough, request.run
    plan_given = plan
    if plan is not None:  # without --columns (the request says so)
        if passthrough:
            plan = plan.with_passthrough(passthrough)
    else:
        plan = single_plan(table, k=k, method=request.method, params=request.params, columns=columns,
                           drop=request.drop, passthrough=passthrough, roles=request.roles)
    check_options(table.columns, plan, run)  # a bad option is a usage error before the roles are judged
    # every column held against its evidence, whatever was declared (before any work)
    table, coded, coverage = finish_roles(table, request, plan, roles, coded)
    if rda is not None:
        check_declared_missing(coded, plan.columns, run.missing, rda.name)
    check_keys(table.columns, plan, run.keys, run.strata)
    table, dates = prepare_dates(table, plan.columns)  # protected dates: numbers of their unit, as in files
    # checks id_column too, and that nothing unnamed is a number in disguise
    result, rep = protect_run(table, plan, request, started=t0, default_selection=plan_given is None and columns is None,
                              coverage=coverage)
    if request.evaluate_risk:  # the plan's continuous blocks (a block naming the keys measures without them)
        rep["evaluation"] = evaluate_protected(table, split_plan(plan, run)[0], result, seed=run.seed)
    if dates:  # ... released as dates again
        result.data = release_dates(result.data, dates)
    if coded:
        rep["declared_missing"] = coded
    return _same_kind(result, df), rep


def evaluate_frame(original: Any, protected: Any, **options: Any) -> dict[str, Any]:
    """Risk and utility of a protected frame against its original: ``sdc evaluate`` in memory.

    Parameters and the report dict are those of :func:`microagg_cli.api.evaluate`
    (without files, so without ``internal`` details or an audit section). A failed
    gate raises :class:`microagg_cli.errors.ThresholdExceeded` with the report in its
    ``report`` attribute.
    """
    t0 = time.perf_counter()
    _refuse(options, _EVAL_FILES, "evaluate_frame")
    request = EvaluateRequest.build(**options)
    rep = evaluate_tables(as_table(original, "original"), as_table(protected, "protected"), request)
    rep["timing"] = {"seconds": time.perf_counter() - t0}
    raise_for_gates(rep)
    return rep


def compare_frames(df: Any, **options: Any) -> dict[str, Any]:
    """Every method x k x plan cell on a frame: ``sdc compare`` in memory.

    Parameters and the result dict are those of :func:`microagg_cli.api.compare`
    (one row per cell in ``rows``); nothing is written.
    """
    from .comparison import compare_table

    _refuse(options, _COMPARE_FILES, "compare_frames")
    request = CompareRequest.build(**options)
    return compare_table(as_table(df), request)


def propose_blocks(df: Any, **options: Any) -> dict[str, Any]:
    """Blocking plans for a frame, optionally measured and ranked: ``sdc blocks`` in memory.

    ``strategy`` is one of :data:`microagg_cli.blocking.STRATEGIES` or ``"all"``;
    ``check`` a plan to check instead. Returns ``{"columns", "candidates",
    "recommended", "chosen", "warnings"}``: each candidate holds its ``plan``
    (:class:`BlockPlan`), mean |r| inside its blocks and, with ``evaluate``, IL_SSE and
    k' per intruder scenario.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame(rng.normal(size=(60, 4)), columns=list("abcd"))
    >>> res = propose_blocks(df, strategy="random", size=2, seed=1)
    >>> [b.columns for b in res["candidates"]["random"]["plan"].blocks]
    [('a', 'b'), ('c', 'd')]
    """
    _refuse(options, _BLOCKS_FILES, "propose_blocks")
    request = BlocksRequest.build(**options).resolved()  # checked when built; defaults filled in
    get_method(request.method)
    plan, name = plan_to_check(request)
    return advise(as_table(df), request, names=list(request.strategy_names), check_plan=plan, check_name=name)
