"""The cells of ``sdc compare``: the grid's model and one cell's run.

What a cell is (:class:`MethodChoice`, :class:`PlanChoice`, :class:`Cell`, and the
:class:`EvalOptions` every cell shares), how a grid is built from methods, k values and
plans and checked against the table before anything runs (:func:`build_cells`,
:func:`check_cells`), where the plans come from (one block, blocking strategies, plan
files), and :func:`run_cell`: protect the table with one cell's method, k and plan,
then measure it into one JSON-ready row.

Intruder scenarios: ``sdc evaluate`` evaluates every subset of up to 10 columns and
otherwise a sample of 512 -- about 13 s per protected Census file (13 columns) on the
reference machine. A grid multiplies that by the number of cells, so the default here
is :data:`DEFAULT_MAX_SCENARIOS` = 64 (every subset when there are at most 64, i.e.
up to 6 columns; else a seeded sample of 64 stratified by size): about 2 s per cell.
``max_scenarios=None`` restores the ``sdc evaluate`` default. A cell is a screen in
three more ways (:data:`SCREENING`): above 20,000 records its DLD and PLD are estimated
from 10,000 seeded originals, its one-to-one linkage covers the largest scenario only
(on 2 of the estimator's 4 windows above 2,000 records),
and the robust eigenvalues, not a compare column, are not computed.
"""

from __future__ import annotations

import logging
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from ..blocking import STRATEGIES, Block, BlockPlan, load_plan, propose_blocks
from ..errors import InfeasibleError, InvalidParameterError, check_k_value, k_message
from ..evaluation import known_positions, measure
from ..io import Table, numeric_matrix, write_table
from ..methods import get_method
from ..metrics import disclosure_risk, model_utility
from ..metrics.rmd import original_scatter
from ..metrics.scenarios import validate_blocks
from ..metrics.utility import lb_nn_prepare
from ..protection import protect_table
from ..request import (COMPARE_EXACT_MAX, COMPARE_LINKAGE_SCENARIOS, COMPARE_LINKAGE_WINDOWS, COMPARE_RISK_SAMPLE,
                       DEFAULT_COMPARE_SCENARIOS, RunOptions)

#: The evaluation settings of a cell (a screen: see :data:`microagg_cli.request.COMPARE_EXACT_MAX`).
SCREENING: dict[str, Any] = {
    "robeigen": False,
    "linkage_scenarios": COMPARE_LINKAGE_SCENARIOS,
    "linkage_windows": COMPARE_LINKAGE_WINDOWS,
    "dld_exact_max": COMPARE_EXACT_MAX,
    "dld_sample": COMPARE_RISK_SAMPLE,
    "pld_exact_max": COMPARE_EXACT_MAX,
    "pld_sample": COMPARE_RISK_SAMPLE,
}

__all__ = [
    "DEFAULT_MAX_SCENARIOS",
    "Cell",
    "EvalOptions",
    "MethodChoice",
    "MixedChoice",
    "mixed_choices",
    "parse_weight_axes",
    "mark_dominated",
    "ORIGINAL_CACHES",
    "OriginalWork",
    "PlanChoice",
    "build_cells",
    "check_cells",
    "file_plans",
    "original_work",
    "parse_method",
    "run_cell",
    "run_original_work",
    "saved_name",
    "single_plan",
    "strategy_plans",
]

log = logging.getLogger("microagg_cli")

#: Default cap on the intruder scenarios evaluated per cell (see the module notes).
DEFAULT_MAX_SCENARIOS = DEFAULT_COMPARE_SCENARIOS  # defined once, with the request


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
class MixedChoice:
    """The categorical keys of a cell and the mixed distance's role weights; ``label``
    names what varies over the grid (empty when nothing does)."""

    keys: tuple[str, ...]
    weights: tuple[tuple[str, float], ...] = ()
    label: str = ""


@dataclass(frozen=True)
class Cell:
    """One combination: ``index`` (its position in the grid), method, k, plan, and with
    categorical keys the keys and weights (``mixed``)."""

    index: int
    method: MethodChoice
    k: int
    plan: PlanChoice
    mixed: MixedChoice | None = None


def parse_weight_axes(value: str | Mapping[str, Any] | None) -> dict[str, list[float]] | None:
    """``"categorical=0.2,0.5,2,ordinal=1"`` -> ``{"categorical": [0.2, 0.5, 2.0],
    "ordinal": [1.0]}``: a number after a role's weight is another weight of that role.
    A mapping passes with each value made a list.

    >>> parse_weight_axes("categorical=0.2,0.5,2,ordinal=1")
    {'categorical': [0.2, 0.5, 2.0], 'ordinal': [1.0]}
    """
    if value is None:
        return None
    if isinstance(value, Mapping):
        return {str(r): [float(w) for w in (v if isinstance(v, (list, tuple)) else [v])] for r, v in value.items()}
    out: dict[str, list[float]] = {}
    role = None
    for item in str(value).split(","):
        name, sep, num = item.rpartition("=")
        if sep:
            role = name.strip().lower()
            if role in out:
                raise InvalidParameterError(f"--mixed-weights: role {role!r} given twice")
            out[role] = []
        if role is None:
            raise InvalidParameterError(f"--mixed-weights expects ROLE=W[,W...][,ROLE=W...], got {value!r}")
        try:
            out[role].append(float(num))
        except ValueError:
            raise InvalidParameterError(f"--mixed-weights: {num.strip()!r} is not a number") from None
    return out


def mixed_choices(keys_sets: Sequence[Sequence[str]], weights: Mapping[str, Sequence[float]] | None
                  ) -> list[MixedChoice]:
    """Every combination of a key set and one weight per role (the grid's mixed axes),
    each checked (:func:`microagg_cli.methods.mixed.check_weights`)."""
    import itertools

    from ..methods.mixed import check_weights

    roles = list(weights or {})
    axes = [list(dict.fromkeys(weights[r])) for r in roles] if weights else []
    out = []
    for i, keys in enumerate(keys_sets):
        for combo in itertools.product(*axes):
            w = dict(zip(roles, combo))
            check_weights(w)
            parts = [f"keys{i + 1}"] if len(keys_sets) > 1 else []
            parts += [f"{r[:3]}={v:g}" for r, v, ax in zip(roles, combo, axes) if len(ax) > 1]
            out.append(MixedChoice(tuple(keys), tuple(w.items()), " ".join(parts)))
    return out


def mark_dominated(rows: Sequence[dict[str, Any]]) -> None:
    """Set ``dominated`` on every row with both losses (``il_sse``, ``categorical_changed``):
    True when another row of the same plan, k and key set (the same protection: k on the
    same keys) has neither loss higher and one lower."""
    pts = [r for r in rows if r.get("il_sse") is not None and r.get("categorical_changed") is not None]
    for r in pts:
        r["dominated"] = any(
            o is not r and o["plan"] == r["plan"] and o["k"] == r["k"] and o.get("keys") == r.get("keys")
            and o["il_sse"] <= r["il_sse"] and o["categorical_changed"] <= r["categorical_changed"]
            and (o["il_sse"] < r["il_sse"] or o["categorical_changed"] < r["categorical_changed"])
            for o in pts)


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
    mixed: Sequence[MixedChoice] = (),
) -> list[Cell]:
    """Every cell of the grid, ordered by plan, then method (as given), then the mixed
    choices (key set, then weights), then k.

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
            for mx in (mixed or [None]):
                for k in (value_ks if (m.values_k and value_ks) else ks):
                    cells.append(Cell(len(cells), m, k, plan, mx))
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
    for s in strategies:  # names and sizes checked when the request was built
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



# ------------------------------------------------------- what the original alone needs

#: The caches (:mod:`microagg_cli.memo`) that keep what :func:`run_original_work`
#: computes: copied from the process that computed them into every worker.
ORIGINAL_CACHES = ("mcd", "lb_nn")


@dataclass(frozen=True)
class OriginalWork:
    """A costly result that depends on a plan's original alone and that every cell of
    the plan uses: ``"mcd"``, the robust scatter of RMDID1
    (:func:`microagg_cli.metrics.rmd.original_scatter`, 1.7 s at 50,000 x 10), or
    ``"lb_nn"``, LB_NN of every block for the k values ``ks`` (one k-d tree query of
    the largest, :func:`microagg_cli.metrics.utility.lb_nn_prepare`)."""

    plan: PlanChoice
    what: str
    ks: tuple[int, ...] = ()


def original_work(cells: Sequence[Cell]) -> list[OriginalWork]:
    """What the cells would each compute from their plan's original alone, done once
    before them (:func:`run_original_work`); the dearest first."""
    plans: dict[str, PlanChoice] = {}
    ks: dict[str, set[int]] = {}
    for cell in cells:
        plans.setdefault(cell.plan.name, cell.plan)
        # LB_NN is measured for partitions with a record k (see run_cell's measure)
        if get_method(cell.method.name).output == "labels" and not cell.method.values_k:
            ks.setdefault(cell.plan.name, set()).add(int(cell.k))
    work = [OriginalWork(plan, "mcd") for plan in plans.values()]
    work += [OriginalWork(plans[name], "lb_nn", tuple(sorted(k))) for name, k in ks.items()]
    return work


def run_original_work(table: Table, work: OriginalWork) -> None:
    """Compute ``work`` in this process, where it is kept for the cells (the caches
    :data:`ORIGINAL_CACHES`); the cells' figures are the same with or without it. A
    failure is left to the cells, which meet it again and report it as they would."""
    try:
        X = numeric_matrix(table, work.plan.columns)
        if work.what == "mcd":
            original_scatter(X)
        else:
            pos = {c: j for j, c in enumerate(work.plan.columns)}
            blocks = validate_blocks([[pos[c] for c in cols] for _n, cols in work.plan.blocks], X.shape[1])
            lb_nn_prepare(X, work.ks, blocks)
    except Exception:  # noqa: BLE001 - the cell that needs the result raises it in its place
        log.debug("shared work %s of plan %r failed; left to the cells", work.what, work.plan.name)


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
        # bound "off": the protection's own LB_NN (and its cost estimate) is not a figure
        # of the row; the evaluation below measures LB_NN
        keys = list(cell.mixed.keys) if cell.mixed is not None else list(options.categorical)
        result = protect_table(table, plan, RunOptions(
            seed=options.seed, bound="off", categorical=keys or None,
            mixed_weights=dict(cell.mixed.weights) if cell.mixed is not None and cell.mixed.weights else None))
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
            **SCREENING,
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
        "label": (cell.method.label or spec.name) + (f" {cell.mixed.label}" if cell.mixed and cell.mixed.label
                                                     else ""),
        "params": dict(cell.method.params),
        "k": cell.k,
        "k_counts": "values" if cell.method.values_k else "records",
        "il_sse": util["il_sse"]["overall"],
        "il_sse_per_block": util["il_sse"]["per_block"],
        "il_score": util["il_score"]["value"],
        "il1s": util["il1s"]["value"],
        **{key: risk["mean"][key] for key in ("dld", "pld", "id", "sdid")},
        "dr": risk["dr"]["value"],
        "score": m["score"]["value"],
        **{key: risk["anonymity"][key] for key in ("k_prime", "k_min", "share_below_k")},
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
        "rmd_skipped_reason": (risk.get("rmd") or {}).get("skipped_reason"),
        "warnings": warnings,
        "saved": saved,
        "seconds": {"protect": t1 - t0, "evaluate": t2 - t1},
        **_mixed_row(result, keys, cell.k),
    }


def _mixed_row(result: Any, keys: Sequence[str], k: int) -> dict[str, Any]:
    """A grid with categorical keys: the keys and weights, the mean share of changed
    categories (%), the smallest class over every released key (the block loop's
    k-check), and over the released categorical keys alone the global risk (expected
    re-identifications, % of the records, 1 / f_k per record) and the records violating
    k-anonymity."""
    if not keys:
        return {}
    from ..metrics.keyrisk import key_summary

    held = [r for r in result.blocks if r.keys is not None]
    mixed = held[0].stats["mixed"] if held else {}
    share = mixed.get("mean_changed_share")
    risk = key_summary(held[0].keys, k) if held else None
    return {"categorical_changed": None if share is None else 100.0 * share,
            "k_released": min(r.stats["k_released"]["k_min"] for r in held) if held else None,
            "key_risk": risk["global_risk_percent"] if risk else None,
            "key_violations": risk["violations"] if risk else None,
            "keys": list(keys), "mixed_weights": mixed.get("weights")}

