"""Library API, file level: protect, evaluate and compare microdata files. No printing here.

Each function reads its input files, calls the core (:mod:`microagg_cli.protection`,
:mod:`microagg_cli.evaluation`, :mod:`microagg_cli.comparison`) and writes its outputs as
one transaction (:class:`microagg_cli.outputs.OutputSet`). For data already in memory
use :mod:`microagg_cli.frames` (pandas DataFrames and Arrow tables).

Examples
--------
>>> import microagg_cli as sdc                                    # doctest: +SKIP
>>> report = sdc.protect("census.csv", "protected.csv", k=3)      # doctest: +SKIP
>>> report["blocks"][0]["il_sse"]                                 # doctest: +SKIP
5.6922...
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from . import audit
from .blocking import (
    block_notes,
    plan_comment,
    plan_to_json,
    plan_to_toml,
)
from .errors import InvalidParameterError
from .io import (
    OutputSet,
    atomic_write_bytes,
    check_output_path,
    detect_format,
    file_fingerprint,
    json_text,
    read_table,
    write_json,
    write_table,
)
from .methods import get_method
from .pairing import write_pairing
from .statfiles import STAT_FORMATS, check_writable
from .statfiles import report_fields as statfile_report
from .progress import phase as progress_phase
from .request import BlocksRequest, CompareRequest, EvaluateRequest, ProtectRequest, RiskRequest, RolesRequest
from .roles import check_declared_missing, finish_roles, load_rda, prepare_dates, release_dates, resolve_request
from .protection.mixed import split_plan
from .protection.run import REPORT_SCHEMA_VERSION, protect_run
from .protection.table import check_id_column, check_keys, check_options, single_plan

__all__ = ["protect", "protect_request", "evaluate", "evaluate_request", "compare", "propose_plans", "propose_roles",
           "roles_request", "risk", "risk_request", "REPORT_SCHEMA_VERSION"]


def protect(input: str | Path, output: str | Path, **options: Any) -> dict[str, Any]:
    """Protect a file: read, microaggregate each block, check, write atomically.

    Parameters
    ----------
    input, output : paths (CSV or Parquet by extension; ``output="-"`` = CSV on stdout).
    k : minimum group size (required unless ``plan`` gives it per block).
    method, params : method name and its parameters (see ``sdc protect --list-methods``).
    columns : protected columns (one block); default every numeric column not dropped.
    drop : identifier columns removed from the output.
    passthrough : columns released unchanged on purpose. With the default selection a
        column that is mostly but not entirely numeric is an error (a typo must not
        release a numeric attribute in clear) unless it is dropped or passed through.
    plan : a :class:`BlockPlan` instead of ``columns``/``method``/``k``.
    report : path of the JSON report (``"-"`` = stdout), or None.
    seed : run seed; each block gets its own stream keyed by its position.
    force : replace existing output/report files.
    decimal : decimal mark of CSV input and output (``","`` for European CSV).
    thousands : thousands separator of numbers in text columns (``","``, ``"."``, ``" "``,
        ``"'"``), removed before parsing; None: numbers have none.
    na_values : extra cells read as missing (placeholders such as ``".."``, ``"x"``).
    keys : released columns that identify a group together with the protected ones
        (e.g. a region code): the privacy check then requires every class of identical
        (keys, stratum, protected values) rows to hold at least k records.
    strata, small_strata, weights, missing : see :func:`microagg_cli.protection.protect_table`.
    shuffle_rows : write the rows in a seeded random order, so that the output order
        does not reveal the groups. :func:`evaluate` then pairs the records by ``key``
        (an identifier column kept with ``id_column``) or by ``pairing_file``.
    pairing_file : with ``shuffle_rows``: write the private pairing here (the original
        row number of each released row; mode 0600, never to be released), read by
        :func:`evaluate`'s ``pairing_file``.
    id_column, regenerate_ids : replace the identifier column with fresh random ids
        (a seeded permutation of 1..n), breaking the link to the original ids.
    partition_size : partitioned mode (see :func:`microagg_cli.protection.protect_table`).
    engine, scheduler : ``"local"`` or ``"dask"``: stream Parquet in two passes
        (:mod:`microagg_cli.engines`), the parts run here or as Dask tasks on the
        cluster at ``scheduler`` (default: a local cluster). A Parquet dataset
        directory as ``input`` is always streamed (locally unless ``engine="dask"``).
    bound : the report's lower bound LB_NN: ``"auto"`` (computed when it costs at most
        25 % of the method's time), ``"on"`` or ``"off"``
        (:func:`microagg_cli.protection.table.optimality`).
    evaluate_risk : add the full risk and utility section of ``sdc evaluate`` (intruder
        scenarios over the blocks, DLD/PLD/ID, k', DR, score) as ``report["evaluation"]``.

    Returns
    -------
    The report (dict), also written to ``report`` when given.
    """
    request = ProtectRequest.build(**options)
    return protect_request(input, output, request)


def protect_request(input: str | Path, output: str | Path, request: ProtectRequest) -> dict[str, Any]:
    """:func:`protect` with its options as one :class:`~microagg_cli.request.ProtectRequest`
    (what ``sdc protect`` builds from its options)."""
    req, read, run = request, request.read, request.run
    plan = req.plan
    if plan is not None and req.passthrough:
        plan = plan.with_passthrough(req.passthrough)
        req = req.replace(plan=plan)
    streamed = req.engine is not None or req.scheduler is not None
    if streamed and str(input) != "-" and not Path(input).is_dir() \
            and detect_format(input, read.input_format) in STAT_FORMATS:  # read whole: no row batches
        raise InvalidParameterError("--engine/--scheduler stream CSV and Parquet files; an SPSS, Stata or SAS "
                                    "file is read whole: leave them out (or convert the file to Parquet)")
    if streamed or (str(input) != "-" and Path(input).is_dir()):
        from .engines import protect_streaming  # pyarrow streaming: loaded only when asked for

        return protect_streaming(input, output, req)
    t0 = time.perf_counter()
    in_fmt = detect_format(input, read.input_format)
    out_fmt = detect_format(output, req.output_format)
    check_writable(out_fmt)  # .sas7bdat cannot be written (pyreadstat reads it only)
    src = None if str(input) == "-" else Path(input)
    out_path = check_output_path(output, force=req.force, inputs=(src,))
    rep_path = None
    if req.report is not None:
        rep_path = check_output_path(req.report, force=req.force, inputs=(src,), what="report")
        if out_path is not None and rep_path is not None and rep_path.resolve() == out_path.resolve():
            raise InvalidParameterError("the report and the output are the same file")
        if out_path is None and rep_path is None:
            raise InvalidParameterError("the output and the report cannot both go to stdout")
    rda = load_rda(req.metadata) if req.metadata is not None else None
    if rda is not None and rda.separator and read.delimiter is None and in_fmt == "csv":
        req = req.replace(delimiter=rda.separator)  # the .rda says how its free-format file is cut
        read = req.read
    pairing_path = None
    if req.pairing_file is not None:  # the private pairing of --shuffle-rows: never beside the release by mistake
        # a file name, not stdout (the request says so)
        pairing_path = check_output_path(req.pairing_file, force=req.force, inputs=(src,), what="pairing file")
        for other, what in ((out_path, "output"), (rep_path, "report")):
            if other is not None and other.resolve() == pairing_path.resolve():
                raise InvalidParameterError(f"the pairing file and the {what} are the same file")
    with progress_phase(f"reading {'stdin' if src is None else src.name}", unit="bytes"):
        table = read_table(input, read, fmt=in_fmt)
    if read.decimal == "," and table.delimiter == ",":
        raise InvalidParameterError("with --decimal , the CSV delimiter cannot be ','; use ';'")
    # every column's role: options and plan, then the file's metadata and the .rda (refuses to guess)
    table, req, coded, roles = resolve_request(table, req, rda, req.metadata)
    run = req.run
    default_selection = plan is None and req.columns is None
    if plan is None:
        plan = single_plan(table, k=req.k, method=req.method, params=req.params, columns=req.columns,
                           drop=req.drop, passthrough=req.passthrough, roles=req.roles)
    check_options(table.columns, plan, run)  # a bad option is exit 2 before the roles are judged
    # every column held against its evidence, whatever was declared (exit code 3 before any work)
    table, coded, coverage = finish_roles(table, req, plan, roles, coded)
    if rda is not None:
        check_declared_missing(coded, plan.columns, run.missing, rda.name)
    check_id_column(table.columns, plan, req.id_column)
    check_keys(table.columns, plan, run.keys, run.strata)
    table, dates = prepare_dates(table, plan.columns)  # protected dates: numbers of their unit

    result, rep = protect_run(
        table, plan, req, output=None if out_path is None else out_path.name, started=t0,
        named=[req.id_column] if req.id_column else [], default_selection=default_selection,
        coverage=coverage,
    )
    if req.evaluate_risk:
        from .evaluation import evaluate_protected  # the measures: loaded only when asked for

        rep["evaluation"] = evaluate_protected(table, split_plan(plan, run)[0], result, seed=run.seed)
    if dates:  # ... released as dates again
        result.data = release_dates(result.data, dates)
    statfile_report(rep, table.data, result.data, table.fmt, out_fmt)  # SPSS/Stata/SAS: codes, storage, weight
    if coded:  # codes the .rda declares missing, per column and code
        rep["declared_missing"] = {**rep.get("declared_missing", {}), **coded}
    # one transaction: the output and the report appear together or not at all
    with progress_phase(f"writing {'stdout' if out_path is None else out_path.name}", unit="bytes"), \
            OutputSet(force=req.force) as files:
        write_table(
            result.data, out_path, fmt=out_fmt, force=req.force,
            delimiter=table.delimiter if out_fmt == "csv" and table.fmt == "csv" else ",",
            decimal=read.decimal, into=files,
        )
        rep["audit"] = audit.trail(t0, files=[audit.file_entry(None if out_path is None else output, "output", since=t0)],
                                   reproduce=audit.reproduce_entry(req, plan))
        if pairing_path is not None:
            files.add_file(pairing_path, write_pairing(result.original_rows), what="pairing file", private=True)
        if req.report is not None:
            rep["timing"]["seconds"] = time.perf_counter() - t0
            write_json(rep, rep_path, force=req.force, into=files)
        files.commit()
    result.report = rep
    return rep


# =================================================================================
# sdc evaluate: risk and utility of a protected file against its original (the work is
# done in :mod:`microagg_cli.evaluation`).


def evaluate(original: str | Path, protected: str | Path, *, progress: Any = None, **options: Any) -> dict[str, Any]:
    """Risk and utility of a protected file against its original (``sdc evaluate``).

    Reads both files, matches their rows (by order, or by the identifier column
    ``key``), computes every measure of sdc-metrics(7) over the evaluated columns
    (:func:`microagg_cli.metrics.evaluate_arrays`), writes the JSON ``report`` and the
    self-contained ``html`` report (atomically), then checks the ``gates``.

    Parameters
    ----------
    original, protected : CSV or Parquet files (by extension or ``input_format``).
    columns : evaluated columns (one block). Default: the numeric columns of both
        files whose values differ between them.
    key : identifier column(s) present in both files (a name or a list); records are
        paired by it. Duplicate, empty or unmatched keys are a :class:`DataError`.
    pairing_file : the private pairing file of ``protect(shuffle_rows=True,
        pairing_file=...)``; records are paired by it.
    pairing_check : prove the pairing before measuring (default True): in every
        evaluated column, each class of records sharing a released value must hold it
        within the range of their original values; a failure is a :class:`DataError`.
        False skips the proof (releases that are not group statistics: noise, mic1d);
        the report's ``matching.check`` says so.
    blocks : attribute blocks as lists of column names (they are the evaluated
        columns); scenarios are labelled 1G, 2G... by the blocks they touch.
    plan : a :class:`BlockPlan` (its blocks and k) instead of ``columns``/``blocks``.
    k : for the share of records in classes smaller than k and LB_NN (default: the
        plan's smallest k, else 3).
    known, max_scenarios, seed : intruder scenarios (see :func:`evaluate_matrices`).
    scale : ``"raw"`` adds IL_SSE on unstandardised values to the summary (see
        :func:`evaluate_matrices`).
    dr_weights, score_weights : weights of DR (``dld``, ``pld``, ``id``) and of the
        score (``il``, ``dr``).
    gates : ``{"max_dld": 5.0, "min_kprime": 3, ...}`` (keys of :data:`GATES`).
    gate_on : ``"worst"`` (default) or ``"mean"``: which figure over the intruder
        scenarios the DLD, ID and k' gates check.
    missing : ``"error"`` (default) or ``"complete"`` (evaluate only records complete in
        both files; the count left out is reported).
    report : JSON report path (``"-"`` = stdout) or None.
    html : HTML report path or None.
    internal : include original values (per-column statistics) in the reports; for
        internal use only, never for release.
    progress : ``progress(done, total)`` called after each scenario.
    bound, time_limit : ``"cg"`` adds the certified column-generation bound lb_cg
        (at most ``time_limit`` seconds; see :func:`evaluate_matrices`).

    Returns
    -------
    The report (dict, schema :data:`microagg_cli.evaluation.EVALUATION_SCHEMA_VERSION`).

    Raises
    ------
    ThresholdExceeded : a gate failed (after the reports were written); the report is
        in the exception's ``report`` attribute.
    """
    request = EvaluateRequest.build(**options)
    return evaluate_request(original, protected, request, progress=progress)


def evaluate_request(original: str | Path, protected: str | Path, request: EvaluateRequest, *,
                     progress: Any = None) -> dict[str, Any]:
    """:func:`evaluate` with its options as one :class:`~microagg_cli.request.EvaluateRequest`
    (what ``sdc evaluate`` builds from its options)."""
    from .report import attach_html, render_html

    t0 = time.perf_counter()
    from .evaluation import evaluate_tables, raise_for_gates

    req, read = request, request.read
    report, html, force, internal = req.report, req.html, req.force, req.internal
    fmt_o = detect_format(original, read.input_format)
    fmt_p = detect_format(protected, read.input_format)
    if str(original) == "-" and str(protected) == "-":
        raise InvalidParameterError("the original and the protected file cannot both come from stdin")
    srcs = tuple(None if str(s) == "-" else Path(s) for s in (original, protected))
    if req.pairing_file is not None:  # an input too: never overwritten by a report
        srcs = (*srcs, Path(req.pairing_file))
    rep_path = html_path = None
    if report is not None:
        rep_path = check_output_path(report, force=force, inputs=srcs, what="report")
    if html is not None:  # a file name, not stdout (the request says so)
        html_path = check_output_path(html, force=force, inputs=srcs, what="HTML report")
        if rep_path is not None and rep_path.resolve() == html_path.resolve():
            raise InvalidParameterError("the JSON and the HTML report are the same file")
    orig = read_table(original, read, fmt=fmt_o)
    prot = read_table(protected, read, fmt=fmt_p)
    rep = evaluate_tables(orig, prot, req, progress=progress)
    rep["timing"] = {"seconds": time.perf_counter() - t0}
    rep["audit"] = audit.trail(t0, files=[audit.read_entry(protected, "protected (read)", rep["protected"])])
    # the page first: its size and SHA-256 go into the JSON's audit files (a reviewer can match the page to the report)
    page = attach_html(rep, html, render_html(rep)) if html_path is not None else None
    # one transaction; a report holding original values (--internal) is private (0600)
    with OutputSet(force=force) as files:
        if report is not None:
            write_json(rep, rep_path, force=force, into=files, private=bool(internal))
        if page is not None:
            files.add_file(html_path, lambda fh: fh.write(page), what="HTML report", private=bool(internal))
        files.commit()
    raise_for_gates(rep)
    return rep


def _read_with_rda(input: str | Path, read: Any, metadata: Any) -> tuple[Any, Any]:
    """The input read as its ``.rda`` says (a free-format file's separator), and the ``.rda``
    (None without ``metadata``)."""
    rda = load_rda(metadata) if metadata is not None else None
    fmt = detect_format(input, read.input_format)
    if rda is not None and rda.separator and read.delimiter is None and fmt == "csv":
        read = read.replace(delimiter=rda.separator)
    return read_table(input, read, fmt=fmt), rda


def compare(input: str | Path, *, progress: Any = None, **options: Any) -> dict[str, Any]:
    """Protect ``input`` with every method x k x plan combination and evaluate each one.

    Each cell is protected in memory (:func:`microagg_cli.protection.protect_table`, seeded with ``seed``) and
    measured with :func:`microagg_cli.metrics.evaluate_arrays` (IL_SSE, IL_score, DLD,
    PLD, ID, DR, score, k', and k', DLD, PLD, ID, DR per intruder-knowledge label).

    Parameters
    ----------
    input : CSV or Parquet file (``"-"`` = stdin).
    methods : method names, each optionally with parameters ``"NAME:PARAM=VALUE..."``
        (default ``["mdav"]``, or the preset's).
    k : minimum group sizes (default 3, 5, 10, or the preset's).
    mic1d_k : k values (values per partition) of methods whose k counts values
        (``mic1d``); default: ``k``.
    plans : plan files (or :class:`BlockPlan` objects); their method and k are replaced
        by each cell's. Exclusive with ``strategies`` and ``columns``.
    strategies, block_size : plans proposed from the data (``correlated``, ``cross``,
        ``individual``, ``single``, ``random``; see :func:`microagg_cli.blocking.make_plan`).
    columns : protected columns (one block) when no plan is given; default every
        numeric column.
    preset : a literature experiment (:data:`microagg_cli.comparison.PRESETS`); the other
        arguments, when given, replace its parts.
    known, max_scenarios : intruder scenarios: explicit column sets, or a cap (every
        subset when there are at most ``max_scenarios``, else a seeded sample of that
        size; None = every subset up to 10 columns, else 512).
    dr_weights, score_weights : weights of DR and of the score.
    output, fmt : file for the result (``fmt`` ``"table"``, ``"csv"`` or ``"json"``;
        default from the extension). Rewritten atomically after every finished cell.
    html : self-contained HTML page (tables and risk-utility maps).
    save_protected : folder receiving every cell's protected CSV file.
    jobs : worker processes (0 = one per CPU); the result does not depend on it.
    progress : ``progress(done, total)`` called as cells finish.

    Returns
    -------
    The result (dict, schema :data:`microagg_cli.comparison.COMPARE_SCHEMA_VERSION`): one
    row per cell in ``rows``, ordered by plan, method, k.

    Raises
    ------
    microagg_cli.comparison.GridInterrupted : Ctrl-C; the finished rows were written to
        ``output`` and ``html`` (its ``written`` and ``document`` say what).
    """
    return compare_request(input, CompareRequest.build(**options), progress=progress)


def compare_request(input: str | Path, request: CompareRequest, *, progress: Any = None) -> dict[str, Any]:
    """:func:`compare` with its options as one :class:`~microagg_cli.request.CompareRequest`
    (what ``sdc compare`` builds from its options)."""
    from . import comparison

    return comparison.compare_file(input, request, progress=progress)


def propose_plans(input: str | Path, **options: Any) -> dict[str, Any]:
    """Propose (or check) blocking plans for a file; optionally evaluate and pick one.

    The library side of ``sdc blocks``: reads ``input``, builds the candidate plans
    (``strategy``, ``"all"`` for every strategy, or the plan file ``check``), with
    ``evaluate`` protects the data in memory with each candidate and measures IL_SSE
    and k' per intruder scenario (:func:`evaluate_plan`), with ``recommend`` picks the
    candidate of best worst-case k' whose IL_SSE is at most ``max_il``
    (:func:`recommend_plan`), and writes the chosen plan to ``output`` (``.toml`` or
    ``.json``, atomically) when given. ``recommend`` implies ``evaluate``; ``max_il``
    implies ``recommend``.

    Returns
    -------
    ``{"input": fingerprint, "columns": [...], "candidates": {name: {"plan":
    BlockPlan, "mean_abs_corr": float|None, "block_mean_abs_corr": {block: float|None},
    "evaluation": dict|None}}, "recommended": name|None, "chosen": name|None,
    "written": path|None}``. When a recommendation was asked for and no candidate
    meets ``max_il``, ``recommended`` is None and nothing is written.
    """
    return propose_request(input, BlocksRequest.build(**options))


def propose_request(input: str | Path, request: BlocksRequest) -> dict[str, Any]:
    """:func:`propose_plans` with its options as one :class:`~microagg_cli.request.BlocksRequest`
    (what ``sdc blocks`` builds from its options)."""
    t0 = time.perf_counter()
    r = request.resolved()  # options checked when built; here the defaults filled in
    size, check, output, force = r.size, r.check, r.output, r.force
    get_method(r.method)
    out_path = None
    src = None if str(input) == "-" else Path(input)
    if output is not None:  # a .toml or .json file, not stdout (the request says so)
        out_path = check_output_path(output, force=force, inputs=(src,), what="plan file")
        if check is not None and Path(check).resolve() == out_path.resolve():
            raise InvalidParameterError("the plan file to write is the --check plan; write elsewhere")

    table = read_table(input, r.read)
    from .blocks_advice import advise, plan_to_check  # protects and measures the candidates: loaded only here

    checked, check_name = plan_to_check(r)
    res = advise(table, r, names=list(r.strategy_names), check_plan=checked, check_name=check_name)
    candidates, chosen = res["candidates"], res["chosen"]
    written = None
    if out_path is not None and chosen is not None:
        plan = candidates[chosen]["plan"]
        if out_path.suffix.lower() == ".json":
            text = plan_to_json(plan)
        else:
            source = table.path.name if table.path is not None else "-"
            text = plan_to_toml(plan, comment=plan_comment(chosen, size, r.seed, source),
                                block_comments=block_notes(candidates[chosen]))
        data = text.encode("utf-8")
        atomic_write_bytes(out_path, lambda fh: fh.write(data), force=force, what="plan file")
        written = str(out_path)
    return {
        "input": file_fingerprint(table),
        "columns": res["columns"],
        "candidates": candidates,
        "recommended": res["recommended"],
        "chosen": chosen,
        "written": written,
        "warnings": res["warnings"],
        "audit": audit.trail(t0, files=[audit.file_entry(output, "plan", since=t0)] if written else []),
    }


def propose_roles(input: str | Path, **options: Any) -> dict[str, Any]:
    """Propose a role for every column of a file, with its evidence (``sdc roles``).

    Reads ``input`` and proposes each column's role (:func:`microagg_cli.roles.propose_roles`:
    the file's declarations and the ``metadata`` .rda first, then its type, values and
    name). ``output``: write the proposal there atomically (``.toml``: a roles file in
    the plan format that ``sdc protect --plan`` applies as it is; ``.json``: the JSON
    document), an existing file replaced only with ``force``.

    Returns
    -------
    ``{"document": JSON-ready dict, "text": the TOML roles file, "written": path|None}``.
    """
    return roles_request(input, RolesRequest.build(**options))


def roles_request(input: str | Path, request: RolesRequest) -> dict[str, Any]:
    """:func:`propose_roles` with its options as one :class:`~microagg_cli.request.RolesRequest`."""
    from .roles import propose_roles as propose, roles_to_dict, roles_to_toml

    r = request  # k, and -o not stdout, checked by the request
    src = None if str(input) == "-" else Path(input)
    out_path = None
    if r.output is not None:
        out_path = check_output_path(r.output, force=r.force, inputs=(src,), what="roles file")
    table, rda = _read_with_rda(input, r.read, r.metadata)
    if rda is not None:
        from .roles.rda import check_fits

        check_fits(rda, table.columns)
    evidence = propose(table, rda)
    source = table.path.name if table.path is not None else "-"
    doc = roles_to_dict(evidence, file_fingerprint(table))
    if r.metadata is not None:
        doc["metadata"] = str(r.metadata)
    text = roles_to_toml(evidence, source=source, k=r.k, metadata=None if r.metadata is None else str(r.metadata))
    fmt_out = r.fmt
    if out_path is not None and r.fmt is None:
        fmt_out = "json" if out_path.suffix.lower() == ".json" else "toml"
    body = (json_text(doc) if fmt_out == "json" else text)
    written = None
    if out_path is not None:
        data = body.encode("utf-8")
        atomic_write_bytes(out_path, lambda fh: fh.write(data), force=r.force, what="roles file")
        written = str(out_path)
    return {"document": doc, "text": body, "format": fmt_out or "toml", "written": written}


def risk(input: str | Path, **options: Any) -> dict[str, Any]:
    """The disclosure risk of one file over its categorical keys (``sdc risk``).

    Options are the fields of :class:`~microagg_cli.request.RiskRequest`: ``keys``
    (required unless ``metadata`` names <RECODABLE> variables), ``weights``,
    ``household_id``, ``sensitive``, ``k``, ``l``, ``max_combination_size``, ``suda``,
    ``suda_max_size``, ``dis_fraction``, ``risk_method``, the gates
    ``max_global_risk`` / ``max_violations``, ``report`` / ``html`` paths, ``internal``.

    Returns the JSON-ready report (schema ``sdc schema risk``); a failed gate raises
    :class:`~microagg_cli.errors.ThresholdExceeded` (exit code 5) after the reports are
    written, with the report as its ``report`` attribute.

    Examples
    --------
    >>> rep = risk("household.csv", keys=["urbrur", "water", "sex", "age"],
    ...            weights="sampling_weight", household_id="ori_hid")   # doctest: +SKIP
    >>> rep["global"]["expected_reidentifications"]                      # doctest: +SKIP
    """
    return risk_request(input, RiskRequest.build(**options))


def risk_request(input: str | Path, request: RiskRequest) -> dict[str, Any]:
    """:func:`risk` with its options as one :class:`~microagg_cli.request.RiskRequest`."""
    from .errors import ThresholdExceeded
    from .keyrisk_table import RISK_SCHEMA_VERSION, gate_message, table_key_risk
    from .report import attach_html
    from .report.risk import render_risk_html
    from ._version import __version__

    t0 = time.perf_counter()
    r = request
    src = None if str(input) == "-" else Path(input)
    srcs = (src,) + ((Path(r.metadata),) if r.metadata is not None else ())
    rep_path = html_path = None
    if r.report is not None:
        rep_path = check_output_path(r.report, force=r.force, inputs=srcs, what="report")
    if r.html is not None:
        html_path = check_output_path(r.html, force=r.force, inputs=srcs, what="HTML report")
        if rep_path is not None and rep_path.resolve() == html_path.resolve():
            raise InvalidParameterError("the JSON and the HTML report are the same file")
    table, rda = _read_with_rda(input, r.read, r.metadata)
    body = table_key_risk(table, r, rda=rda)
    fingerprint = file_fingerprint(table)
    rep: dict[str, Any] = {"schema_version": RISK_SCHEMA_VERSION,
                           "tool": {"name": "sdc", "distribution": "microagg-cli", "version": __version__},
                           "command": "risk", "internal": bool(r.internal), "input": dict(fingerprint), **body}
    rep["timing"] = {"seconds": time.perf_counter() - t0}
    rep["audit"] = audit.trail(t0, files=[audit.read_entry(input, "input (read)", fingerprint)])
    page = attach_html(rep, r.html, render_risk_html(rep)) if html_path is not None else None
    with OutputSet(force=r.force) as files:
        if r.report is not None:
            write_json(rep, rep_path, force=r.force, into=files, private=bool(r.internal))
        if page is not None:
            files.add_file(html_path, lambda fh: fh.write(page), what="HTML report", private=bool(r.internal))
        files.commit()
    if not rep["gates"]["passed"]:
        exc = ThresholdExceeded(gate_message(rep["gates"], r.k))
        exc.report = rep  # type: ignore[attr-defined]
        raise exc
    return rep
