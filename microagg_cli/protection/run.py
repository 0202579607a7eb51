"""A protect run around the block loop: output hygiene and the JSON report.

:func:`protect_run` is what ``sdc protect`` does in memory between reading and
writing: the block loop (:func:`microagg_cli.protection.table.protect_table`), the
check that nothing left unnamed is a number in disguise, output hygiene (shuffled rows,
regenerated ids: :func:`output_hygiene`) and the report. :func:`build_report` makes
the JSON report of every protect path (the streaming engines call it too); it is a
dict, the source of truth, which the :mod:`microagg_cli.report` package only renders
(:mod:`microagg_cli.report.protect` prints its terminal summary). The block
statistics the report holds are made by the block loop
(:func:`microagg_cli.protection.table.block_stats`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .. import audit
from .._version import __version__
from ..blocking import BlockPlan
from ..io import Table, check_release, file_fingerprint, id_type, take_rows, with_column
from ..methods import get_method
from ..methods.mixed import check_weights as mixed_weights
from ..request import ProtectRequest
from .table import ProtectResult, check_id_column, protect_table

__all__ = ["REPORT_SCHEMA_VERSION", "HYGIENE_KEY", "output_hygiene", "shuffled_pairing", "method_entry",
           "build_report", "privacy_check", "protect_run"]

#: Version of the ``sdc protect`` JSON report layout; bumped on any incompatible change.
REPORT_SCHEMA_VERSION = "1.5"


#: spawn key of the output-hygiene stream (block streams use (index,) keys < 2**20).
HYGIENE_KEY = (2**31 - 1,)


def output_hygiene(result: ProtectResult, *, seed: int, shuffle_rows: bool, id_column: str | None) -> dict[str, Any]:
    """Shuffle rows and/or regenerate ids in ``result.data`` (seeded); describe it.

    The ids are a seeded permutation of 1..n, of the column's own type (text stays
    text; :func:`microagg_cli.io.id_type`); the streaming engines draw the same ids.
    """
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=HYGIENE_KEY))
    data = result.data
    n = data.num_rows
    if shuffle_rows:
        result.original_rows = rng.permutation(n)
        data = take_rows(data, result.original_rows)
    if id_column is not None:
        ids = rng.permutation(n) + 1
        data = with_column(data, id_column, ids, type=id_type(data.schema.field(id_column).type))
    result.data = data
    return {"rows_shuffled": bool(shuffle_rows), "ids_regenerated": id_column}


def shuffled_pairing(request: ProtectRequest, regenerated: str | None) -> dict[str, Any]:
    """How ``sdc evaluate`` pairs a shuffled release with its input: by the kept identifier
    column, by the private pairing file, or (neither) it cannot: the report says so."""
    kept = request.id_column if request.id_column and not regenerated else None
    pairing = None if request.pairing_file is None else Path(request.pairing_file).name
    if kept is not None:
        how = f"sdc evaluate INPUT OUTPUT --key {kept}"
    elif pairing is not None:
        how = f"sdc evaluate INPUT OUTPUT --pairing-file {pairing}"
    else:
        how = None
    out: dict[str, Any] = {"pairing_file": pairing, "evaluate_with": how}
    if how is None:
        out["pairing_note"] = ("the rows are shuffled and nothing in the release pairs them with the input: "
                               "sdc evaluate needs --key COL (keep an identifier with --id-column COL) or the "
                               "private pairing file (sdc protect --shuffle-rows --pairing-file FILE)")
    return out


def method_entry(name: str) -> dict[str, str]:
    spec = get_method(name)
    return {"name": spec.name, "summary": spec.summary, "reference": spec.reference}


def build_report(
    table: Table,
    plan: BlockPlan,
    result: ProtectResult,
    request: ProtectRequest,
    *,
    output: str | None,
    seconds: float,
    **parameters: Any,
) -> dict[str, Any]:
    """The JSON report of a protect run (schema ``REPORT_SCHEMA_VERSION``).

    The ``parameters`` section is made from ``request``
    (:meth:`microagg_cli.request.ProtectRequest.parameters`, with the plan's source and
    the validated statistic), followed by ``parameters`` (what only the run knows).

    Contains no original value of a protected attribute: only sizes, losses and
    counts.
    """
    mixed_keys = list(request.run.categorical or []) + list(request.run.ordinal or [])
    protected = [c for c in plan.columns if c not in mixed_keys]  # a plan block may name the keys
    passthrough = [c for c in table.columns if c not in protected and c not in plan.drop and c not in mixed_keys]
    blocks = []
    for r in result.blocks:
        entry = {
            "name": r.block.name,
            "columns": list(r.block.columns),
            "method": method_entry(r.block.method),
            "k": r.block.k,
            "params": dict(r.block.params),
            "reproducibility": (audit.NOT_REPRODUCIBLE + " (time_budget)" if audit.time_bounded(r.block.params)
                                else "same data, parameters and seed: same output"),
        }
        entry.update(r.stats)
        blocks.append(entry)
    fp = file_fingerprint(table)
    return {
        "schema_version": REPORT_SCHEMA_VERSION,
        "tool": {"name": "sdc", "distribution": "microagg-cli", "version": __version__},
        "command": "protect",
        "input": {**fp, "format": table.fmt, "rows": int(table.n_rows), "columns": len(table.columns)},
        "output": {"name": output, "rows": int(result.data.num_rows), "columns": int(result.data.num_columns)},
        "columns": {"protected": protected, "dropped": list(plan.drop), "passthrough": passthrough,
                    **({"categorical": list(request.run.categorical or []),
                        "ordinal": list(request.run.ordinal or [])} if mixed_keys else {})},
        "parameters": request.parameters(plan, stat=request.run.stat, **parameters),
        "privacy_check": privacy_check(result),
        "blocks": blocks,
        "overall": dict(result.overall),
        "timing": {"seconds": seconds},
    }



def privacy_check(result: ProtectResult) -> dict[str, Any]:
    """The report's ``privacy_check``, computed from what is released: ``passed`` when, in
    every block whose k counts records, the classes of identical released rows (the
    protected values, with the strata and keys when there are any: ``k_released``) hold
    at least k records. A run that fails it writes nothing, so a written report says
    ``passed``; the figures behind it are in each block (``k_min``, ``k_released``)."""
    blocks = []
    passed = True
    for r in result.blocks:
        if r.stats.get("k_counts") == "values":
            continue
        rel = r.stats.get("k_released") or {}
        k_min = rel.get("k_min", r.stats.get("k_min"))
        ok = k_min is not None and k_min >= r.block.k
        passed &= ok
        blocks.append({"block": r.block.name, "k": r.block.k, "k_min": k_min,
                       "columns": rel.get("columns", list(r.block.columns)), "passed": ok})
    return {"passed": bool(passed),
            "rule": "every class of identical released rows (protected values, strata and keys) in each block "
                    "has at least k records",
            "blocks": blocks}


def protect_run(
    table: Table,
    plan: BlockPlan,
    request: ProtectRequest,
    *,
    output: str | None = None,
    started: float | None = None,
    progress: Callable[[int], None] | None = None,
    named: tuple[str, ...] | list[str] = (),
    default_selection: bool = False,
    coverage: dict[str, Any] | None = None,
) -> tuple[ProtectResult, dict[str, Any]]:
    """Protect ``table`` in memory and build its report: what ``sdc protect`` does between
    reading and writing (:func:`protect_table`, output hygiene, :func:`build_report`).

    ``request`` holds the options (:class:`microagg_cli.request.ProtectRequest`); its
    ``regenerated_id`` column is regenerated (a seeded permutation of 1..n), and the
    report's ``parameters`` are made from it. ``output`` is the output file's name for
    the report; ``started`` the run's ``time.perf_counter()`` start.

    Before anything is returned, every column that passes through without being named
    (the plan's passthrough, ``strata``, ``weights``, ``keys``, ``id_column`` and
    ``named``, e.g. an identifier kept as it is) is checked not to be a number in
    disguise (:func:`microagg_cli.io.check_release`); ``default_selection``: the plan
    is the default selection, which checked every column it left out already.
    """
    t0 = time.perf_counter() if started is None else started
    run = request.run
    id_column = request.regenerated_id
    check_id_column(table.columns, plan, id_column)
    result = protect_table(table, plan, run, progress=progress)
    if not default_selection:
        exempt = (set(plan.columns) | set(plan.drop) | set(plan.passthrough) | set(run.strata or [])
                  | set(run.keys or []) | {c for c in (run.weights, id_column) if c} | set(named)
                  | set(run.categorical or []) | set(run.ordinal or []))
        for name in table.columns:
            if name not in exempt:
                check_release(table, name)
    hygiene = output_hygiene(result, seed=run.seed, shuffle_rows=request.shuffle_rows, id_column=id_column)
    if request.shuffle_rows:
        hygiene.update(shuffled_pairing(request, id_column))
    rep = build_report(table, plan, result, request, output=output, seconds=time.perf_counter() - t0)
    rep["parameters"].update(thousands=table.thousands, na_values=list(table.na_values))
    if run.categorical or run.ordinal:  # mixed keys: named in the parameters (numeric runs: as before)
        rep["parameters"].update(categorical=list(run.categorical or []), ordinal=list(run.ordinal or []),
                                 mixed_weights=mixed_weights(run.mixed_weights))
    rep["output_hygiene"] = hygiene
    if coverage is not None:  # which columns the k check covered, and which pass through unchecked
        rep["privacy_check"]["covered"] = list(coverage["covered"])
        rep["privacy_check"]["not_covered"] = list(coverage["not_covered"])
    if not rep["privacy_check"]["passed"]:
        from ..errors import PrivacyCheckError

        bad = [b for b in rep["privacy_check"]["blocks"] if not b["passed"]]
        raise PrivacyCheckError(
            "; ".join(f"block {b['block']!r}: released classes of {b['k_min']} record(s), fewer than k={b['k']}"
                      for b in bad) + "; nothing was written")
    result.report = rep
    return result, rep
