"""Method x k x plan grids: the way the microaggregation papers compare methods.

``sdc compare`` (and :func:`microagg_cli.api.compare`) protects one input file with
every combination ("cell") of a method, a k and a blocking plan, in memory, measures
each protected version with the metrics package, and lays the results out the way
the papers' tables do: one table per plan, rows grouped by method then k, columns
the measures. A self-contained HTML page adds a risk-utility map (information loss
on x, disclosure risk on y, one labelled marker per cell).

Pipeline
--------
1. :func:`build_cells` -- the grid, in the order plan, method, k. ``mic1d`` (whose k
   counts *values* per partition, not records) takes its own k values.
2. :func:`check_cells` -- everything that can fail is checked before the first cell
   runs: methods, parameters, k against the size of every block, the data.
3. :func:`run_grid` -- each cell is :func:`run_cell`: ``protect_table`` then
   :func:`microagg_cli.metrics.evaluate_arrays`. ``jobs > 1`` runs cells in worker
   processes; rows are stored by cell index, so the result is the same whatever
   ``jobs`` is (timings aside). Ctrl-C stops the workers and keeps the finished rows.
4. :func:`build_document` -- the JSON-ready result (the source of truth); then
   :func:`to_json`, :func:`to_csv`, :func:`table_text` / :func:`print_tables`
   (rich) and :func:`render_html` render it.

Determinism: every cell is protected with the run seed (blocks get their streams by
position, as in ``sdc protect``) and evaluated with the same seeded scenario sample,
so a cell's figures do not depend on the other cells, on their order or on ``jobs``.

Intruder scenarios: ``sdc evaluate`` evaluates every subset of up to 10 columns and
otherwise a sample of 512 -- about 13 s per protected Census file (13 columns) on the
reference machine. A grid multiplies that by the number of cells, so the default here
is :data:`DEFAULT_MAX_SCENARIOS` = 64 (every subset when there are at most 64, i.e.
up to 6 columns; else a seeded sample of 64 stratified by size): about 2 s per cell.
``max_scenarios=None`` restores the ``sdc evaluate`` default.
"""

from __future__ import annotations

import logging
import multiprocessing
import re
import signal
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from . import audit, threads
from ._version import __version__
from .blocking import STRATEGIES, Block, BlockPlan, load_plan, propose_blocks
from .errors import DataError, InfeasibleError, InvalidParameterError, ThresholdExceeded, check_k_value, k_message
from .evaluation import GATES, known_positions, measure
from .io import (
    Table,
    OutputSet,
    atomic_write_bytes,
    check_output_path,
    detect_format,
    file_fingerprint,
    numeric_matrix,
    read_table,
    resolve_columns,
    write_table,
)
from .methods import get_method
from .report import attach_html, render_compare, to_json
from .report.compare import (  # rendering lives in report/; re-exported for callers of grid
    MEASURES,
    print_tables,
    render_html,
    risk_utility_svg,
    table_text,
    to_csv,
)
from .metrics import METRICS, disclosure_risk, model_utility
from .protection import protect_table
from .request import DEFAULT_COMPARE_SCENARIOS, CompareRequest, RunOptions

__all__ = [
    "COMPARE_SCHEMA_VERSION",
    "DEFAULT_MAX_SCENARIOS",
    "MEASURES",
    "PRESETS",
    "Cell",
    "EvalOptions",
    "GridInterrupted",
    "MethodChoice",
    "PlanChoice",
    "Preset",
    "build_cells",
    "build_document",
    "check_cells",
    "compare_file",
    "compare_table",
    "grid_options",
    "plan_cells",
    "parse_method",
    "print_tables",
    "render_html",
    "run_cell",
    "risk_utility_svg",
    "run_grid",
    "table_text",
    "to_csv",
    "to_json",
]

log = logging.getLogger("microagg_cli")

#: Version of the ``sdc compare`` JSON layout; bumped on any incompatible change.
COMPARE_SCHEMA_VERSION = "1.3"

#: Default cap on the intruder scenarios evaluated per cell (see the module notes).
DEFAULT_MAX_SCENARIOS = DEFAULT_COMPARE_SCENARIOS  # defined once, with the request

#: The formulas of the compare result (from :data:`microagg_cli.metrics.METRICS`); risk
#: figures are means over the intruder scenarios of each cell.
_FORMULAS = {
    **{name: METRICS[name].formula + ("; mean over the intruder scenarios" if METRICS[name].kind == "risk" else "")
       for name in ("il_sse", "il_score", "dld", "pld", "id", "k_prime", "ci_overlap", "pmse_ratio")},
    "labels": "a scenario's label mG says how many blocks of the plan its known columns touch",
}
_FORMULAS.update({"linkage": METRICS["linkage"].formula + "; mean over the scenarios it is computed for (the "
                             "largest), worst_linkage their largest",
                  "rmdid1": METRICS["rmdid1"].formula + "; all protected columns known"})


# ------------------------------------------------------------------------ the grid


@dataclass(frozen=True)
class MethodChoice:
    """A method of the grid: registry ``name``, its ``params`` and a display ``label``.

    ``plans``: the names of the plans the method runs on (empty: every plan); presets
    use it to run a method on the blocking its paper used only.
    """

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""
    plans: tuple[str, ...] = field(default=(), repr=False)

    @property
    def values_k(self) -> bool:
        """True when the method's k counts values per partition (``mic1d``)."""
        return get_method(self.name).output == "values"


@dataclass(frozen=True)
class PlanChoice:
    """A blocking of the grid: ``name``, the block layout and where it came from.

    The blocks' method and k are ignored: every cell sets its own.
    """

    name: str
    blocks: tuple[tuple[str, tuple[str, ...]], ...]
    source: str
    drop: tuple[str, ...] = ()

    @property
    def columns(self) -> list[str]:
        return [c for _n, cols in self.blocks for c in cols]

    def plan(self, method: MethodChoice, k: int) -> BlockPlan:
        """The :class:`BlockPlan` of one cell: every block with ``method`` and ``k``."""
        return BlockPlan(
            tuple(Block(name, cols, method.name, int(k), dict(method.params)) for name, cols in self.blocks),
            self.drop,
        )

    @classmethod
    def from_plan(cls, name: str, plan: BlockPlan, source: str) -> "PlanChoice":
        return cls(name, tuple((b.name, tuple(b.columns)) for b in plan.blocks), source, tuple(plan.drop))


@dataclass(frozen=True)
class Cell:
    """One combination: ``index`` (its position in the grid), method, k, plan."""

    index: int
    method: MethodChoice
    k: int
    plan: PlanChoice


@dataclass(frozen=True)
class EvalOptions:
    """How each cell is evaluated (the same for every cell).

    ``known``: explicit intruder scenarios (column names) or None for the default;
    ``max_scenarios``: the scenario cap (None: every subset up to 10 columns, else 512;
    0: every subset).
    """

    seed: int
    known: tuple[tuple[str, ...], ...] | None
    max_scenarios: int | None
    dr_weights: Mapping[str, float] | None
    score_weights: Mapping[str, float] | None
    categorical: tuple[str, ...] = ()


def parse_method(text: str) -> MethodChoice:
    """``"NAME[:PARAM=VALUE[:PARAM=VALUE...]]"`` -> :class:`MethodChoice`.

    A value may itself hold a colon (``ufs:order=pv:AGI``): a new parameter starts
    only at ``:NAME=``.

    >>> parse_method("individual-ranking:optimal=true")
    MethodChoice(name='individual-ranking', params={'optimal': 'true'}, label='individual-ranking:optimal=true')
    >>> parse_method("ufs:order=pv:AGI").params
    {'order': 'pv:AGI'}
    """
    text = text.strip()
    if not text:
        raise InvalidParameterError("--methods: empty method name")
    parts = re.split(r":(?=[A-Za-z_][A-Za-z0-9_]*=)", text)
    name, items = parts[0], parts[1:]
    if ":" in name:
        raise InvalidParameterError(
            f"--methods: {text!r}: write method parameters as NAME:PARAM=VALUE (e.g. vmdav:gamma=0.3)")
    spec = get_method(name)
    params: dict[str, Any] = {}
    for item in items:
        key, _, value = item.partition("=")
        if key in params:
            raise InvalidParameterError(f"--methods: {text!r}: parameter {key!r} given twice")
        params[key] = value
    spec.validate_params(dict(params))
    return MethodChoice(spec.name, params, text)


def _ints(values: Sequence[Any], what: str) -> list[int]:
    out: list[int] = []
    for v in values:
        try:
            iv = check_k_value(v if isinstance(v, bool) else int(str(v).strip()), where=f"{what}: ")
        except ValueError:
            raise InvalidParameterError(f"{what}: {k_message(v)}") from None
        if iv in out:
            raise InvalidParameterError(f"{what}: k = {iv} is given twice")
        out.append(iv)
    if not out:
        raise InvalidParameterError(f"{what}: give at least one k")
    return out


def build_cells(
    methods: Sequence[MethodChoice],
    ks: Sequence[int],
    plans: Sequence[PlanChoice],
    *,
    mic1d_ks: Sequence[int] | None = None,
) -> list[Cell]:
    """Every cell of the grid, ordered by plan, then method (as given), then k.

    Methods whose k counts values (``mic1d``) take ``mic1d_ks``; without them they
    take ``ks`` (as numbers of values: little protection, see the log warning).
    """
    if not methods:
        raise InvalidParameterError("--methods: give at least one method")
    if not plans:
        raise InvalidParameterError("no blocking plan")
    labels = [m.label or m.name for m in methods]
    dup = {x for x in labels if labels.count(x) > 1}
    if dup:
        raise InvalidParameterError(f"--methods: {sorted(dup)[0]!r} is given twice")
    names = [p.name for p in plans]
    dup = {x for x in names if names.count(x) > 1}
    if dup:
        raise InvalidParameterError(f"two plans are called {sorted(dup)[0]!r}; rename one of the files")
    ks = _ints(ks, "--k")
    value_ks = _ints(mic1d_ks, "--mic1d-k") if mic1d_ks else None
    if value_ks is None and any(m.values_k for m in methods):
        log.warning(
            "mic1d: its k counts values per partition, not records; without --mic1d-k it runs with "
            "k = %s values, which barely perturbs the data (k' near 1). Give --mic1d-k (a sizeable "
            "share of the n*p values of a block) for a loss comparable with the other methods",
            ",".join(map(str, ks)),
        )
    cells: list[Cell] = []
    for plan in plans:
        for m in methods:
            if m.plans and plan.name not in m.plans:
                continue
            for k in (value_ks if (m.values_k and value_ks) else ks):
                cells.append(Cell(len(cells), m, k, plan))
    return cells


def check_cells(table: Table, cells: Sequence[Cell]) -> None:
    """Refuse, before anything runs, what would fail in a cell.

    Raises :class:`DataError` (a column missing, non-numeric or with missing values),
    :class:`InvalidParameterError` (a method taking fewer columns than a block has,
    a bad parameter) or :class:`InfeasibleError` (k larger than a block allows).
    """
    n = table.n_rows
    seen_plans: set[str] = set()
    for cell in cells:
        plan = cell.plan
        if plan.name not in seen_plans:
            seen_plans.add(plan.name)
            plan.plan(cell.method, cell.k).check(table.columns)
            numeric_matrix(table, plan.columns)
        spec = get_method(cell.method.name)
        spec.validate_params(dict(cell.method.params))
        for bname, cols in plan.blocks:
            if spec.max_columns is not None and len(cols) > spec.max_columns:
                raise InvalidParameterError(
                    f"plan {plan.name!r}, block {bname!r}: method {spec.name!r} takes at most "
                    f"{spec.max_columns} column(s), the block has {len(cols)}")
            if cell.method.values_k:
                if cell.k > n * len(cols):
                    raise InfeasibleError(
                        f"plan {plan.name!r}, block {bname!r}: {spec.name} k={cell.k} values exceeds the "
                        f"{n * len(cols)} values of the block ({n} records x {len(cols)} columns)")
            elif cell.k > n:
                raise InfeasibleError(
                    f"k={cell.k} exceeds the {n} record(s) of the input" + (
                        "; microaggregation needs groups of at least k >= 2 records, so a single record cannot "
                        "be protected" if n < 2 else ""))


# -------------------------------------------------------------------------- plans


def single_plan(columns: Sequence[str], name: str = "one-block") -> PlanChoice:
    """Every column in one block."""
    return PlanChoice(name, (("block1", tuple(columns)),), "all columns in one block")


def strategy_plans(table: Table, columns: Sequence[str], strategies: Sequence[str], size: int | None,
                   *, seed: int) -> list[PlanChoice]:
    """One plan per strategy of :data:`microagg_cli.blocking.STRATEGIES`."""
    X = numeric_matrix(table, list(columns))
    out = []
    for s in strategies:
        if s not in STRATEGIES:
            raise InvalidParameterError(f"--strategies: unknown strategy {s!r} (known: {', '.join(STRATEGIES)})")
        if STRATEGIES[s][1] and size is None:
            raise InvalidParameterError(f"--strategies {s}: this strategy needs a block size (--block-size S)")
        blocks = propose_blocks(X, list(columns), s, size, seed=seed)
        label = f"strategy {s}" + (f", block size {size}" if STRATEGIES[s][1] else "")
        out.append(PlanChoice(s, tuple((f"block{i + 1}", tuple(b)) for i, b in enumerate(blocks)), label))
    return out


def file_plans(paths: Sequence[str | Path]) -> list[PlanChoice]:
    """One plan per plan file (named after the file, without its extension)."""
    out = []
    for p in paths:
        plan = load_plan(p, default_k=2)
        out.append(PlanChoice.from_plan(Path(p).stem, plan, f"plan file {Path(p).name}"))
    return out


# ------------------------------------------------------------------------ presets

#: Census attributes a1..a9 of the one-dimension microaggregation paper.
_NIN_A = ("AGI", "FICA", "INTVAL", "EMCONTRB", "TAXINC", "WSALVAL", "ERNVAL", "PEARNVAL", "POTHVAL")


@dataclass(frozen=True)
class Preset:
    """A literature experiment on the sample data (``--preset NAME``)."""

    name: str
    summary: str
    methods: tuple[MethodChoice, ...]
    ks: tuple[int, ...]
    columns: tuple[str, ...] | None = None
    plans: tuple[PlanChoice, ...] | None = None
    mic1d_ks: tuple[int, ...] | None = None
    reference: str = ""
    notes: str = ""


def _blocks(*groups: tuple[int, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    return tuple(("-".join(f"a{i}" for i in g), tuple(_NIN_A[i - 1] for i in g)) for g in groups)


#: Blockings of a1..a9 measured on sample_data/census.csv (``sdc blocks --strategy correlated``
#: and ``--strategy cross``, size 3): mean within-block |r| 0.658 and 0.418. The same blocks
#: are in sample_data/plans/census-correlated.toml and census-noncorrelated.toml.
_NIN_CORRELATED = _blocks((1, 2, 5), (3, 4, 9), (6, 7, 8))
_NIN_NONCORRELATED = _blocks((1, 8, 9), (2, 3, 6), (4, 5, 7))
_NIN_BLOCKED = ("correlated", "non-correlated")

#: The comparative study's 13 Census attributes.
_CENSUS_13 = ("AFNLWGT", "AGI", "EMCONTRB", "FEDTAX", "PTOTVAL", "STATETAX", "TAXINC", "POTHVAL",
              "INTVAL", "PEARNVAL", "FICA", "WSALVAL", "ERNVAL")

#: The comparative study's orders: PV (a particular variable: the first attribute,
#: pv:0), SZ (sum of z-scores), FPC (first principal component), MD (maximum distance).
_ORDERS = (("PV", "pv:0"), ("SZ", "sz"), ("FPC", "fpc"))


def _comparative_methods() -> tuple[MethodChoice, ...]:
    out = [MethodChoice("ufs", {"order": o}, f"UFS-{tag}") for tag, o in _ORDERS]
    out += [MethodChoice("kward-1d", {"order": o}, f"UDO-{tag}") for tag, o in _ORDERS]
    out.append(MethodChoice("md", {"grow": "group"}, "MFS-MD"))
    out += [MethodChoice("kward", {"order": o}, f"MDO-{tag}") for tag, o in _ORDERS + (("MD", "md"),)]
    return tuple(out)


#: name -> :class:`Preset`.
PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "nin-census",
            "Census, attributes a1..a9: MDAV, PCP, Z-scores with k = 5, 25, 50 in correlated and "
            "non-correlated blocks of 3; Mic1D once over all nine attributes with k = 3000, 4000, 5000 "
            "values",
            methods=(MethodChoice("mdav", {}, "mdav", _NIN_BLOCKED),
                     MethodChoice("pcp", {}, "pcp", _NIN_BLOCKED),
                     MethodChoice("zscores", {}, "zscores", _NIN_BLOCKED),
                     MethodChoice("mic1d", {}, "mic1d", ("all-nine",))),
            ks=(5, 25, 50),
            plans=(
                PlanChoice("correlated", _NIN_CORRELATED,
                           "blocks (a1,a2,a5), (a3,a4,a9), (a6,a7,a8): sdc blocks --strategy correlated, "
                           "mean within-block |r| 0.658"),
                PlanChoice("non-correlated", _NIN_NONCORRELATED,
                           "blocks (a1,a8,a9), (a2,a3,a6), (a4,a5,a7): sdc blocks --strategy cross, "
                           "mean within-block |r| 0.418"),
                PlanChoice("all-nine", (("a1-a9", _NIN_A),), "a1..a9 in one block (Mic1D)"),
            ),
            mic1d_ks=(3000, 4000, 5000),
            reference="Pont-Tuset, Nin, Medrano-Gracia, Larriba-Pey & Muntes-Mulero (2008), Improving "
                      "microaggregation for complex record anonymization, MDAI 2008, LNCS 5285",
            notes="Mic1D's k counts values per partition and, as in the paper, it runs once over all "
                  "nine attributes (9720 values) with k = 3000, 4000, 5000; MDAV, PCP and Z-scores run "
                  "in the two blockings. The blockings were measured on this file (the paper's a1..a9 "
                  "order does not make a1-a3 correlated here: mean |r| 0.441 against 0.535 for "
                  "a1-a4-a7): 'correlated' is sdc blocks' correlated strategy (mean within-block |r| "
                  "0.658), 'non-correlated' its cross strategy (0.418).",
        ),
        Preset(
            "comparative-13",
            "Census, all 13 attributes in one block: UFS, UDO with orders PV/SZ/FPC, MFS (MD, grow by "
            "group), MDO with orders PV/SZ/FPC/MD, k = 3, 4, 5",
            methods=_comparative_methods(),
            ks=(3, 4, 5),
            columns=_CENSUS_13,
            reference="Mateo-Sanz & Domingo-Ferrer (1998), A comparative study of microaggregation "
                      "methods, Questiio 22(3)",
            notes="Mapping of the paper's methods: UFS (univariate fixed size on projected data) = ufs; "
                  "UDO (univariate data-oriented: k-Ward on the projected axis) = kward-1d; MFS "
                  "(multivariate fixed size, maximum distance, each group grown around its centroid) = "
                  "md with grow=group; MDO (multivariate data-oriented, k-Ward) = kward. Orders: PV = a "
                  "particular variable (the first attribute, AFNLWGT; choose another with --methods "
                  "ufs:order=pv:COL), SZ = sum of z-scores, FPC = first principal component, MD = the "
                  "two farthest records (MDO only).",
        ),
    )
}


def resolve_preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise InvalidParameterError(f"unknown preset {name!r} (known: {', '.join(PRESETS)})") from None


# ------------------------------------------------------------------------- a cell


@contextmanager
def _captured_log(sink: list[str]) -> Iterator[None]:
    """Collect the package's warnings of one cell into ``sink``; drop its info/debug lines.

    The warnings land in the row instead of interleaving with the progress bar (and
    with other workers' output).
    """
    logger = logging.getLogger("microagg_cli")

    def keep(record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            msg = record.getMessage()
            if msg not in sink:
                sink.append(msg)
        return False

    logger.addFilter(keep)
    try:
        yield
    finally:
        logger.removeFilter(keep)


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=-]+", "-", text).strip("-") or "x"


def saved_name(cell: Cell) -> str:
    """File name of a cell's protected file under ``--save-protected``."""
    return f"{cell.index + 1:03d}_{_safe_name(cell.plan.name)}_{_safe_name(cell.method.label or cell.method.name)}" \
           f"_k{cell.k}.csv"


def _label_order(label: str) -> tuple[int, str]:
    return (int(label[:-1]) if label[:-1].isdigit() else 0, label)


def run_cell(
    table: Table,
    cell: Cell,
    options: EvalOptions,
    *,
    save_dir: Path | None = None,
    force: bool = False,
) -> dict[str, Any]:
    """Protect ``table`` with one cell's method, k and plan, then evaluate it.

    Returns the row (JSON-ready): the cell's coordinates, the headline measures, the
    means per intruder-knowledge label, warnings, the saved file's name and timings
    (``seconds``; the only entry that differs between runs).
    """
    warnings: list[str] = []
    plan = cell.plan.plan(cell.method, cell.k)
    names = plan.columns
    spec = get_method(cell.method.name)
    with _captured_log(warnings):
        t0 = time.perf_counter()
        result = protect_table(table, plan, RunOptions(seed=options.seed,
                                                       categorical=list(options.categorical) or None))
        t1 = time.perf_counter()
        X = numeric_matrix(table, names)
        Xp = np.column_stack([r.values for r in result.blocks])
        pos = {c: j for j, c in enumerate(names)}
        block_pos = [[pos[c] for c in cols] for _n, cols in cell.plan.blocks]
        scenarios = known_positions(options.known, names,
                                    what=f"a protected column of plan {cell.plan.name!r}")
        m = measure(
            X, Xp, block_pos, k=None if cell.method.values_k else cell.k, scenarios=scenarios,
            max_scenarios=options.max_scenarios, seed=options.seed, dr_weights=options.dr_weights,
            score_weights=options.score_weights, partition_based=spec.output == "labels", per_scenario=False,
        )
        # regression and propensity-score utility: the default models, unweighted
        analysis = model_utility(X, Xp, names=names, k=cell.k,
                                 rng=np.random.default_rng(np.random.SeedSequence(options.seed).spawn(1)[0]))
        t2 = time.perf_counter()
    saved = None
    if save_dir is not None:
        saved = saved_name(cell)
        write_table(result.data, save_dir / saved, fmt="csv", force=force,
                    delimiter=table.delimiter if table.fmt == "csv" else ",", decimal=table.decimal)
    util, risk = m["utility"], m["risk"]
    opt = util.get("optimality")
    dr_w = risk["dr"]["weights"]
    by_label = {}
    for label in sorted(risk["by_label"], key=_label_order):
        entry = risk["by_label"][label]
        mean = entry["mean"]
        by_label[label] = {
            "scenarios": entry["scenarios"],
            "k_prime": mean.get("k_prime"),
            "dld": mean.get("dld"),
            "pld": mean.get("pld"),
            "id": mean.get("id"),
            "dr": disclosure_risk(mean.get("dld"), mean.get("pld"), mean.get("id"), weights=dr_w)["value"],
        }
    return {
        "cell": cell.index,
        "plan": cell.plan.name,
        "method": spec.name,
        "label": cell.method.label or spec.name,
        "params": dict(cell.method.params),
        "k": cell.k,
        "k_counts": "values" if cell.method.values_k else "records",
        "il_sse": util["il_sse"]["overall"],
        "il_sse_per_block": util["il_sse"]["per_block"],
        "il_score": util["il_score"]["value"],
        "il1s": util["il1s"]["value"],
        "dld": risk["mean"]["dld"],
        "pld": risk["mean"]["pld"],
        "id": risk["mean"]["id"],
        "sdid": risk["mean"]["sdid"],
        "dr": risk["dr"]["value"],
        "score": m["score"]["value"],
        "k_prime": risk["anonymity"]["k_prime"],
        "k_min": risk["anonymity"]["k_min"],
        "share_below_k": risk["anonymity"]["share_below_k"],
        "lb_nn": opt["lb_nn"]["overall"] if opt else None,
        "optimality_gap": opt["gap"]["overall"] if opt else None,
        "ci_overlap": analysis["ci_overlap"]["mean"],
        "pmse_ratio": analysis["pmse"]["ratio"],
        "scenarios": {"mode": risk["scenarios"]["mode"], "count": risk["scenarios"]["count"]},
        "by_label": by_label,
        "pld_skipped_reason": risk.get("pld_skipped_reason"),
        "linkage": risk["mean"].get("linkage"),
        "worst_linkage": (risk["worst"].get("linkage") or {}).get("value"),
        "rmdid1": (risk.get("rmd") or {}).get("rmdid1"),
        "warnings": warnings,
        "saved": saved,
        "seconds": {"protect": t1 - t0, "evaluate": t2 - t1},
        **_mixed_row(result, options),
    }


def _mixed_row(result: Any, options: EvalOptions) -> dict[str, Any]:
    """A grid with categorical keys: the mean share of changed categories (%) and the
    smallest class over every released key (the block loop's k-check)."""
    if not options.categorical:
        return {}
    held = [r for r in result.blocks if r.keys is not None]
    mixed = held[0].stats["mixed"] if held else {}
    share = mixed.get("mean_changed_share")
    return {"categorical_changed": None if share is None else 100.0 * share,
            "k_released": min(r.stats["k_released"]["k_min"] for r in held) if held else None}


# ------------------------------------------------------------------------ the run


class GridInterrupted(KeyboardInterrupt):
    """Ctrl-C during a grid: ``rows`` holds the finished rows (None where unfinished),
    ``document`` the partial result and ``written`` the files that keep them."""

    def __init__(self, rows: list[dict[str, Any] | None], document: dict[str, Any] | None = None,
                 written: Sequence[str] = ()):
        super().__init__("interrupted")
        self.rows = rows
        self.document = document
        self.written = list(written)


@dataclass
class _WorkerState:
    table: Table
    cells: list[Cell]
    options: EvalOptions
    save_dir: Path | None
    force: bool
    threads: int = 0  # threads per worker (0: no limit)


_STATE: _WorkerState | None = None


def _worker_init(state: _WorkerState) -> None:
    """Worker set-up: the shared inputs, and Ctrl-C left to the parent (which stops us)."""
    global _STATE
    _STATE = state
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if state.threads:  # workers x threads <= CPUs: no oversubscription (ils, LB_NN, OpenBLAS)
        threads.set_limit(state.threads)
        threads.limit_native_pools(state.threads)


def _worker_run(index: int) -> dict[str, Any]:
    assert _STATE is not None
    s = _STATE
    return run_cell(s.table, s.cells[index], s.options, save_dir=s.save_dir, force=s.force)


def _mp_context() -> Any:
    """``fork`` on Linux (workers inherit the table, no re-import); ``spawn`` elsewhere."""
    methods = multiprocessing.get_all_start_methods()
    if sys.platform.startswith("linux") and "fork" in methods:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and end the worker processes we started."""
    terminate = getattr(pool, "terminate_workers", None)  # Python >= 3.14
    if terminate is not None:
        terminate()
        return
    # before 3.14: the pool's own process handles (shutdown() forgets them)
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    for proc in procs:
        proc.join(timeout=10)


def resolve_jobs(jobs: int | None, cells: int) -> int:
    """``jobs`` (0 or None: one per CPU), at most one per cell and one per CPU (more
    processes than CPUs only slow a CPU-bound grid down)."""
    if jobs is None or jobs == 0:
        jobs = threads.available_cpus()
    if isinstance(jobs, bool) or int(jobs) < 0:
        raise InvalidParameterError(f"--jobs must be >= 0, got {jobs!r}")
    return max(1, min(int(jobs), max(cells, 1), threads.available_cpus()))


def run_grid(
    table: Table,
    cells: Sequence[Cell],
    options: EvalOptions,
    *,
    jobs: int,
    save_dir: Path | None = None,
    force: bool = False,
    progress: Callable[[int, int], None] | None = None,
    on_row: Callable[[int, dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Run every cell; rows in cell order, whatever ``jobs`` is.

    ``on_row(index, row)`` is called in this process as each cell finishes (in
    finishing order) and ``progress(done, total)`` after it. On Ctrl-C the workers
    are stopped and :class:`GridInterrupted` carries the finished rows.
    """
    cells = list(cells)
    total = len(cells)
    rows: list[dict[str, Any] | None] = [None] * total
    done = 0

    def finished(i: int, row: dict[str, Any]) -> None:
        nonlocal done
        rows[i] = row
        done += 1
        if on_row is not None:
            on_row(i, row)
        if progress is not None:
            progress(done, total)

    if progress is not None:
        progress(0, total)
    jobs = resolve_jobs(jobs, total)
    if jobs == 1:
        try:
            for cell in cells:
                finished(cell.index, run_cell(table, cell, options, save_dir=save_dir, force=force))
        except KeyboardInterrupt:
            raise GridInterrupted(rows) from None
        return rows  # type: ignore[return-value]
    # size workers and method threads together: each worker gets its share of the CPUs
    state = _WorkerState(table, cells, options, save_dir, force, max(1, threads.available_cpus() // jobs))
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=_mp_context(), initializer=_worker_init,
                               initargs=(state,))
    try:
        pending = {pool.submit(_worker_run, c.index): c.index for c in cells}
        while pending:
            ready, _ = wait(pending, return_when=FIRST_COMPLETED)
            # several may finish together: handle them in cell order (same on_row order)
            for fut in sorted(ready, key=lambda f: pending[f]):
                i = pending.pop(fut)
                finished(i, fut.result())
    except KeyboardInterrupt:
        _stop_workers(pool)
        raise GridInterrupted(rows) from None
    except BaseException:
        _stop_workers(pool)
        raise
    pool.shutdown(wait=True)
    return rows  # type: ignore[return-value]


# ------------------------------------------------------------------- the document


def build_document(
    *,
    table: Table,
    cells: Sequence[Cell],
    rows: Sequence[dict[str, Any] | None],
    options: EvalOptions,
    preset: Preset | None,
    seconds: float,
    jobs: int,
) -> dict[str, Any]:
    """The result of a grid (JSON-ready; schema :data:`COMPARE_SCHEMA_VERSION`).

    Only ``timing`` and each row's ``seconds`` differ between two runs of the same
    grid (``jobs`` is under ``timing``).
    """
    plans: list[PlanChoice] = []
    methods: dict[str, dict[str, Any]] = {}
    for c in cells:
        if c.plan not in plans:
            plans.append(c.plan)
        key = c.method.label or c.method.name
        entry = methods.setdefault(key, {
            "label": key, "name": c.method.name, "params": dict(c.method.params),
            "k_counts": "values" if c.method.values_k else "records", "k_values": [],
            "summary": get_method(c.method.name).summary, "reference": get_method(c.method.name).reference,
        })
        if c.k not in entry["k_values"]:
            entry["k_values"].append(c.k)
    done = [r for r in rows if r is not None]
    fp = file_fingerprint(table)
    return {
        "schema_version": COMPARE_SCHEMA_VERSION,
        "tool": {"name": "sdc", "distribution": "microagg-cli", "version": __version__},
        "command": "compare",
        "input": {**fp, "format": table.fmt, "rows": int(table.n_rows),
                  "columns": len(table.columns)},
        "preset": None if preset is None else {
            "name": preset.name, "summary": preset.summary, "reference": preset.reference, "notes": preset.notes},
        "plans": [{"name": p.name, "source": p.source,
                   "blocks": [{"name": n, "columns": list(cols)} for n, cols in p.blocks]} for p in plans],
        "methods": list(methods.values()),
        "parameters": {
            "seed": int(options.seed),
            "known": [list(s) for s in options.known] if options.known is not None else None,
            "max_scenarios": options.max_scenarios,
            "dr_weights": dict(options.dr_weights) if options.dr_weights else None,
            "score_weights": dict(options.score_weights) if options.score_weights else None,
            "aggregation": "mean",
            "evaluation_k": "the cell's k (methods whose k counts values: none)",
        },
        "formulas": dict(_FORMULAS),
        "cells": len(cells),
        "finished": len(done),
        "complete": len(done) == len(cells),
        "rows": done,
        "timing": {"seconds": seconds, "jobs": jobs},
    }


# ---------------------------------------------------------------------- gates


def check_grid_gates(gates: Mapping[str, float] | None) -> dict[str, float]:
    """The gates of ``sdc compare`` (keys of :data:`microagg_cli.evaluation.GATES` whose
    figure every row holds: ``min_ci_overlap``)."""
    gates = dict(gates or {})
    for key in gates:
        if key not in GATES or GATES[key].stat != "overall" or GATES[key].field not in _ROW_GATE_FIELDS:
            raise InvalidParameterError(f"unknown compare gate {key!r} (known: "
                                        f"{', '.join(g.key for g in GATES.values() if g.field in _ROW_GATE_FIELDS)})")
    return gates


#: Row fields a compare gate may check (figures with one value per cell).
_ROW_GATE_FIELDS = ("ci_overlap",)


def raise_for_grid_gates(doc: Mapping[str, Any], gates: Mapping[str, float] | None) -> None:
    """Raise :class:`ThresholdExceeded` (exit code 5) naming the cells that fail a gate."""
    parts = []
    for key, threshold in check_grid_gates(gates).items():
        gate = GATES[key]
        bad = []
        for r in doc["rows"]:
            v = r.get(gate.field)
            if v is None or (v < threshold if gate.direction == "min" else v > threshold):
                bad.append((r, v))
        if bad:
            worst = min(bad, key=lambda rv: -1e300 if rv[1] is None else rv[1]) if gate.direction == "min" else \
                max(bad, key=lambda rv: 1e300 if rv[1] is None else rv[1])
            r, v = worst
            shown = "not computed" if v is None else f"{v:.4g}"
            parts.append(f"{gate.option} {threshold:g}: {len(bad)} of {len(doc['rows'])} cell(s) fail, worst "
                         f"{r['label']} k={r['k']} ({r['plan']}): {gate.measure} {shown}")
    if parts:
        raise ThresholdExceeded("gate failed: " + "; ".join(parts))


# ---------------------------------------------------------------------- the file API

_FORMATS = ("table", "csv", "json")


def _render(doc: Mapping[str, Any], fmt: str) -> str:
    return render_compare(doc, fmt)


def output_format(fmt: str | None, output: str | Path | None) -> str:
    """``fmt`` or, when None, from the output's extension (.json, .csv; else table)."""
    if fmt is not None:
        if fmt not in _FORMATS:
            raise InvalidParameterError(f"unknown format {fmt!r} (use {', '.join(_FORMATS)})")
        return fmt
    if output is not None and str(output) != "-":
        suffix = Path(output).suffix.lower()
        if suffix in (".json", ".csv"):
            return suffix[1:]
    return "table"


def grid_options(request: CompareRequest) -> tuple[Preset | None, list[MethodChoice], list[int], list[int] | None,
                                                  EvalOptions]:
    """Check a grid's options (before any file is read): the preset, the methods, the k
    values (a preset fills in what is not given) and the evaluation options."""
    r = request
    preset, plans, strategies, columns, block_size = r.preset, r.plans, r.strategies, r.columns, r.block_size
    max_scenarios, methods, k, mic1d_k = r.max_scenarios, r.methods, r.k, r.mic1d_k
    seed, known, dr_weights, score_weights = r.seed, r.known, r.dr_weights, r.score_weights
    pre = resolve_preset(preset) if preset is not None else None
    check_grid_gates(r.gates)
    if plans and strategies:
        raise InvalidParameterError("give either --plans or --strategies, not both")
    if (plans or (pre is not None and pre.plans and not strategies)) and columns is not None:
        raise InvalidParameterError("--columns cannot be combined with plans (the plans name the columns)")
    if block_size is not None and not strategies:
        raise InvalidParameterError("--block-size applies to --strategies only")
    if max_scenarios is not None and (isinstance(max_scenarios, bool) or int(max_scenarios) < 0):
        raise InvalidParameterError(f"--max-scenarios must be >= 0 (0 = every subset), got {max_scenarios!r}")
    # the method list and k values (a preset fills in what is not given)
    if methods is None:
        choices = list(pre.methods) if pre is not None else [MethodChoice("mdav", {}, "mdav")]
    else:
        choices = [m if isinstance(m, MethodChoice) else parse_method(str(m)) for m in methods]
    ks = list(k) if k is not None else (list(pre.ks) if pre is not None else [3, 5, 10])
    vks = list(mic1d_k) if mic1d_k is not None else (list(pre.mic1d_ks) if pre is not None and pre.mic1d_ks else None)
    options = EvalOptions(
        seed=int(seed),
        known=tuple(tuple(s) for s in known) if known is not None else None,
        max_scenarios=None if max_scenarios is None else int(max_scenarios),
        dr_weights=dict(dr_weights) if dr_weights else None,
        score_weights=dict(score_weights) if score_weights else None,
        categorical=tuple(r.categorical or ()),
    )
    if options.categorical:
        from .methods.mixed import MIXED_METHODS

        for c in choices:
            if c.name not in MIXED_METHODS:
                raise InvalidParameterError(f"--categorical: method {c.name!r} does not group categorical keys; "
                                            f"use {' or '.join(MIXED_METHODS)}")
    return pre, choices, ks, vks, options


def plan_cells(
    table: Table,
    pre: Preset | None,
    choices: Sequence[MethodChoice],
    ks: Sequence[int],
    vks: Sequence[int] | None,
    *,
    plans: Sequence[str | Path | BlockPlan] | None,
    strategies: Sequence[str] | None,
    block_size: int | None,
    columns: Sequence[str] | None,
    seed: int,
    roles: Sequence[str] = (),
) -> list[Cell]:
    """The grid's plans (given, proposed by strategies, the preset's, or one block of the
    columns) and its cells, checked against ``table``."""
    # the plans
    if plans:
        plan_choices = []
        for i, p in enumerate(plans):
            if isinstance(p, BlockPlan):
                plan_choices.append(PlanChoice.from_plan(f"plan{i + 1}", p, "given plan"))
            else:
                plan_choices += file_plans([p])
    else:
        if columns is not None:
            cols, _ = resolve_columns(table, list(columns), None)
        elif pre is not None and pre.columns is not None:
            cols = list(pre.columns)
        elif pre is not None and pre.plans is not None:
            cols = [c for p in pre.plans for c in p.columns]
        else:
            cols, _ = resolve_columns(table, None, None, roles=list(roles) or None)
        missing = [c for c in cols if c not in table.columns]
        if missing:
            what = f"preset {pre.name!r} needs" if pre is not None else "the grid needs"
            raise DataError(f"{what} column {missing[0]!r}, which the input lacks (columns: "
                            f"{', '.join(table.columns[:20])})")
        if strategies:
            plan_choices = strategy_plans(table, cols, strategies, block_size, seed=seed)
        elif pre is not None and pre.plans is not None:
            plan_choices = list(pre.plans)
        else:
            plan_choices = [single_plan(cols)]
    cells = build_cells(choices, ks, plan_choices, mic1d_ks=vks)
    check_cells(table, cells)
    return cells


def compare_table(
    table: Table,
    request: CompareRequest | None = None,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Run a grid on a table in memory (nothing written); see :func:`microagg_cli.api.compare`
    (``request``: its options, :class:`microagg_cli.request.CompareRequest`)."""
    t0 = time.perf_counter()
    request = CompareRequest() if request is None else request
    pre, choices, ks, vks, options = grid_options(request)
    cells = _cells(table, pre, choices, ks, vks, request)
    jobs = resolve_jobs(request.jobs, len(cells))
    final = run_grid(table, cells, options, jobs=jobs, progress=progress)
    return build_document(table=table, cells=cells, rows=final, options=options, preset=pre,
                          seconds=time.perf_counter() - t0, jobs=jobs)


def _cells(table: Table, pre: Preset | None, choices: Sequence[MethodChoice], ks: Sequence[int],
           vks: Sequence[int] | None, request: CompareRequest) -> list[Cell]:
    return plan_cells(table, pre, choices, ks, vks, plans=request.plans, strategies=request.strategies,
                      block_size=request.block_size, columns=request.columns, seed=request.seed,
                      roles=request.categorical or ())


def compare_file(
    input: str | Path,
    request: CompareRequest,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Run a grid on a file; see :func:`microagg_cli.api.compare` (the documented entry;
    ``request``: its options, :class:`microagg_cli.request.CompareRequest`)."""
    t0 = time.perf_counter()
    pre, choices, ks, vks, options = grid_options(request)
    output, html, force, save_protected = request.output, request.html, request.force, request.save_protected
    read = request.read
    # the outputs, checked before any work
    src = None if str(input) == "-" else Path(input)
    fmt = output_format(request.fmt, output)
    out_path = check_output_path(output, force=force, inputs=(src,)) if output is not None else None
    html_path = None
    if html is not None:
        if str(html) == "-":
            raise InvalidParameterError("--html needs a file name (the HTML page is not written to stdout)")
        html_path = check_output_path(html, force=force, inputs=(src,), what="HTML page")
        if out_path is not None and out_path.resolve() == html_path.resolve():
            raise InvalidParameterError("-o and --html name the same file")
    table = read_table(input, read, fmt=detect_format(input, read.input_format))
    cells = _cells(table, pre, choices, ks, vks, request)
    save_dir = None
    if save_protected is not None:
        save_dir = Path(save_protected)
        if save_dir.exists() and not save_dir.is_dir():
            raise DataError(f"--save-protected {str(save_dir)!r} is a file, not a folder")
        if not save_dir.parent.is_dir():
            raise DataError(f"--save-protected: folder {str(save_dir.parent)!r} does not exist")
        save_dir.mkdir(exist_ok=True)
        for cell in cells:
            check_output_path(save_dir / saved_name(cell), force=force, inputs=(src,), what="protected file")
    jobs = resolve_jobs(request.jobs, len(cells))
    rows: list[dict[str, Any] | None] = [None] * len(cells)
    written_once = False

    def document(final_rows: Sequence[dict[str, Any] | None]) -> dict[str, Any]:
        doc = build_document(table=table, cells=cells, rows=final_rows, options=options, preset=pre,
                             seconds=time.perf_counter() - t0, jobs=jobs)
        doc["audit"] = audit.trail(t0, files=[audit.file_entry(save_dir / r["saved"], "protected (saved)")
                                              for r in final_rows if r is not None and r.get("saved") and save_dir])
        return doc

    def write_output(doc: Mapping[str, Any]) -> None:
        nonlocal written_once
        if out_path is None:
            return
        data = _render(doc, fmt).encode("utf-8")
        # the first write honours --force; later ones replace our own partial file
        atomic_write_bytes(out_path, lambda fh: fh.write(data), force=force or written_once)
        written_once = True

    def on_row(i: int, row: dict[str, Any]) -> None:
        rows[i] = row
        write_output(document(rows))

    try:
        final = run_grid(table, cells, options, jobs=jobs, save_dir=save_dir, force=force,
                         progress=progress, on_row=on_row)
    except GridInterrupted as exc:
        doc = document(exc.rows)
        written = []
        # the page first: its size and SHA-256 go into the JSON's audit files
        page = attach_html(doc, html, render_html(doc)) if html_path is not None and doc["finished"] else None
        if out_path is not None and doc["finished"]:
            write_output(doc)
            written.append(str(out_path))
        if page is not None:
            atomic_write_bytes(html_path, lambda fh: fh.write(page), force=force)
            written.append(str(html_path))
        raise GridInterrupted(exc.rows, doc, written) from None
    doc = document(final)
    # the page first (its hash goes into the output's audit trail), then the final
    # output and the page as one transaction
    data = attach_html(doc, html, render_html(doc)) if html_path is not None else None
    with OutputSet(force=force) as files:
        if out_path is not None:
            text = _render(doc, fmt).encode("utf-8")
            # the first write honours --force; later ones replace our own partial file
            files.add_file(out_path, lambda fh: fh.write(text), what="output", force=force or written_once)
        if html_path is not None and data is not None:
            files.add_file(html_path, lambda fh: fh.write(data), what="HTML page")
        files.commit()
    return doc


# ------------------------------------------------------------------------ gates


def raise_for_gates(doc: dict[str, Any], request: CompareRequest) -> None:
    """Raise :class:`~microagg_cli.errors.ThresholdExceeded` (exit code 5) when a cell
    fails a gate of ``request`` (``max_linkage``: a cell's worst-scenario one-to-one
    linkage above it); called after every output is written."""
    if request.max_linkage is None:
        return
    bad = [r for r in doc["rows"]
           if r is not None and r.get("worst_linkage") is not None and r["worst_linkage"] > request.max_linkage]
    if bad:
        cells = ", ".join(f"{r['label']} k={r['k']} ({r['plan']}): {r['worst_linkage']:.4g}" for r in bad[:5])
        more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        raise ThresholdExceeded(f"gate failed: --max-linkage {request.max_linkage:g}: linkage (worst scenario) "
                                f"above it in {len(bad)} of {len(doc['rows'])} cells: {cells}{more}")
