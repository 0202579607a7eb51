"""One request object per command: options defined once, carried whole, defaulted here.

Each command's options are one frozen dataclass: :class:`ProtectRequest` (``sdc protect``),
:class:`EvaluateRequest` (``sdc evaluate``), :class:`CompareRequest` (``sdc compare``) and
:class:`BlocksRequest` (``sdc blocks``). Parts used by several commands are nested
dataclasses of their own: :class:`ReadOptions` (how input files are read) and
:class:`RunOptions` (the block loop's options: seed, statistic, strata, weights, missing
values, partitions, bound, keys). Every field has its type, its default and a one-line
meaning (``field(metadata={"help": ...})``); the defaults live here and nowhere else:
the click options read theirs from these fields (:func:`default`, :func:`help_text`),
the library entry points (:func:`microagg_cli.api.protect` and friends) keep their
keyword form and build the same objects with :meth:`build`, and every layer below them
takes the object (or the part it needs). Pure option checks run once, when an object is
built, and raise today's errors (:class:`~microagg_cli.errors.InvalidParameterError`,
exit code 2) with today's messages.

This module imports only :mod:`microagg_cli.errors` when it loads, so every layer may use
it; the one later import is the metric catalogue, which names ``sdc evaluate``'s gates
(:func:`check_gates`, only when gates are given; the measures never import this module).

One exception to "defaults live here": the risk measures' own constants stay with the
measures in :mod:`microagg_cli.metrics`, which never imports this module (it sits
below it): the DR and score weights (``DEFAULT_DR_WEIGHTS`` 0.25/0.25/0.5,
``DEFAULT_SCORE_WEIGHTS`` 0.5/0.5, applied when ``dr_weights``/``score_weights`` are
None) and the intruder-scenario caps (every subset up to 10 columns, else a sample of
512: ``MeasureOptions``, applied when ``max_scenarios`` is None).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .errors import InvalidParameterError, check_k_value

__all__ = [
    "ReadOptions",
    "RunOptions",
    "ProtectRequest",
    "EvaluateRequest",
    "CompareRequest",
    "BlocksRequest",
    "RolesRequest",
    "RiskRequest",
    "MISSING_POLICIES",
    "SMALL_STRATA_POLICIES",
    "STRATA_MISSING_POLICIES",
    "BOUND_MODES",
    "ENGINES",
    "COMPARE_METHOD",
    "COMPARE_K",
    "DEFAULT_COMPARE_SCENARIOS",
    "BLOCK_STRATEGIES",
    "SIZED_STRATEGIES",
    "DEFAULT_STRATEGY",
    "DEFAULT_BLOCK_SIZE",
    "EVALUATE_MISSING",
    "SCALES",
    "EVALUATE_BOUNDS",
    "EVALUATE_K",
    "GATE_ON",
    "ROLES_FORMATS",
    "default",
    "help_text",
    "find_field",
    "check_gates",
    "check_plan_without_columns",
    "check_stat",
    "STATS",
]

#: ``--missing`` of protect: refuse, leave incomplete records out, group on observed values.
MISSING_POLICIES = ("error", "complete", "available")
#: ``--small-strata``: refuse, merge into the nearest stratum, blank the protected values.
SMALL_STRATA_POLICIES = ("error", "merge", "suppress")
#: ``--strata-missing``: refuse, or a stratum of its own.
STRATA_MISSING_POLICIES = ("error", "own")
#: the protect report's LB_NN policy (:func:`microagg_cli.protection.table.optimality`).
BOUND_MODES = ("auto", "on", "off")
#: the streaming engines (:mod:`microagg_cli.engines`).
ENGINES = ("local", "dask")
#: ``sdc evaluate --missing``: refuse, or evaluate the records complete in both files.
EVALUATE_MISSING = ("error", "complete")
#: ``sdc evaluate --scale``: IL_SSE on z-scores, or also on the raw values.
SCALES = ("z", "raw")
#: ``sdc evaluate --bound``: LB_NN only, or also the column-generation bound.
EVALUATE_BOUNDS = ("nn", "cg")
#: ``--stat``: the aggregation statistics (besides ``trimmed:P``, 0 <= P < 0.5).
STATS = ("mean", "median", "onestep")
#: ``sdc evaluate``'s k (share below k, LB_NN) when neither -k nor a plan's blocks give one.
EVALUATE_K = 3
#: ``sdc evaluate --gate-on``: the gates check the worst intruder scenario or the mean.
GATE_ON = ("worst", "mean")
#: ``sdc roles --format`` (None: from the -o extension, else toml).
ROLES_FORMATS = ("toml", "json")
#: ``sdc compare``'s method when neither --methods nor a preset names one.
COMPARE_METHOD = "mdav"
#: ``sdc compare``'s k values when neither -k nor a preset gives them.
COMPARE_K = (3, 5, 10)
#: ``sdc blocks --strategy`` (besides ``all``); the same names as
#: :data:`microagg_cli.blocking.STRATEGIES`, which holds their functions (a test keeps
#: the two equal).
BLOCK_STRATEGIES = ("correlated", "cross", "individual", "single", "random")
#: the strategies that cut the columns into blocks of a size.
SIZED_STRATEGIES = ("correlated", "cross", "random")
#: ``sdc blocks``'s strategy when neither --strategy nor --check is given.
DEFAULT_STRATEGY = "correlated"
#: Columns per block when a strategy needs a size and none is given (``sdc blocks``
#: without ``--size``): blocks of three attributes, as in the literature's Census tables
#: (Nin, Herranz & Torra 2008, "How to group attributes in multivariate microaggregation").
DEFAULT_BLOCK_SIZE = 3


def opt(value: Any, help: str, **more: Any) -> Any:
    """A field with its default and its one-line meaning (``metadata["help"]``)."""
    meta = {"help": help, **more}
    if isinstance(value, (list, dict, set)):
        raise TypeError("mutable defaults: use None")
    return field(default=value, metadata=meta)


def _nested(cls: type) -> Any:
    return field(default_factory=cls, metadata={"help": cls.__doc__.splitlines()[0] if cls.__doc__ else "",
                                                "nested": True})


def find_field(cls: type, name: str) -> dataclasses.Field:
    """The field ``name`` of request class ``cls``, looked up in its nested parts too."""
    for f in dataclasses.fields(cls):
        if f.name == name:
            return f
        if f.metadata.get("nested"):
            try:
                return find_field(f.default_factory, name)  # type: ignore[arg-type]
            except KeyError:
                pass
    raise KeyError(f"{cls.__name__} has no field {name!r}")


def default(cls: type, name: str) -> Any:
    """The default of field ``name`` of ``cls`` (what a click option shows and passes)."""
    f = find_field(cls, name)
    if f.default is dataclasses.MISSING:
        raise KeyError(f"{cls.__name__}.{name} has no default")
    return f.default


def help_text(cls: type, name: str) -> str:
    """The one-line meaning of field ``name`` of ``cls`` (the click option's help)."""
    return find_field(cls, name).metadata["help"]


def _build(cls: type, options: Mapping[str, Any]) -> Any:
    """``cls`` from flat keywords: each keyword goes to the field of that name, in ``cls``
    or in one of its nested parts (:class:`ReadOptions`, :class:`RunOptions`)."""
    own: dict[str, Any] = {}
    nested: dict[str, dict[str, Any]] = {}
    names = {f.name: f for f in dataclasses.fields(cls)}
    parts = {f.name: f.default_factory for f in dataclasses.fields(cls) if f.metadata.get("nested")}
    for key, value in options.items():
        if key in names and key not in parts:
            own[key] = value
            continue
        for part, part_cls in parts.items():
            if key in {f.name for f in dataclasses.fields(part_cls)}:  # type: ignore[arg-type]
                nested.setdefault(part, {})[key] = value
                break
        else:
            raise TypeError(f"{cls.__name__}: unexpected keyword argument {key!r}")
    for part, values in nested.items():
        own[part] = parts[part](**values)  # type: ignore[misc]
    return cls(**own)


def _check_seed(seed: Any) -> None:
    """A seed is an integer >= 0 (numpy refuses a negative one deep inside a run)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, *_np_integer())) or seed < 0:
        raise InvalidParameterError(f"--seed must be an integer >= 0, got {seed!r}")


def _np_integer() -> tuple[type, ...]:
    """numpy's integer types when numpy is loaded (a seed may be one), without importing it."""
    import sys

    np = sys.modules.get("numpy")
    return (np.integer,) if np is not None else ()


def _check_encoding(encoding: Any) -> None:
    import codecs

    try:
        info = codecs.lookup(str(encoding))
    except LookupError:
        info = None
    if info is None or not isinstance(encoding, str) or not getattr(info, "_is_text_encoding", True):
        raise InvalidParameterError(f"--encoding: unknown text encoding {encoding!r} "
                                    "(e.g. utf-8, latin-1, cp1252)")


def _check_max_scenarios(max_scenarios: Any) -> None:
    """``--max-scenarios``: None (the default cap) or an integer >= 0 (0 = every subset)."""
    if max_scenarios is not None and (isinstance(max_scenarios, bool) or int(max_scenarios) < 0):
        raise InvalidParameterError(f"--max-scenarios must be >= 0 (0 = every subset), got {max_scenarios!r}")


def _check_decimal(decimal: str) -> None:
    if decimal not in (".", ","):
        raise InvalidParameterError(f"decimal mark must be '.' or ',', got {decimal!r}")


def check_stat(stat: str) -> str:
    """Validate an aggregation statistic: ``mean``, ``median``, ``onestep`` or ``trimmed:P``."""
    if stat in STATS:
        return stat
    if stat.startswith("trimmed:"):
        try:
            prop = float(stat.split(":", 1)[1])
        except ValueError:
            prop = -1.0
        if 0 <= prop < 0.5:
            return stat
    raise InvalidParameterError(
        f"unknown statistic {stat!r} (use mean, median, onestep or trimmed:P with 0 <= P < 0.5)")


def check_gates(gates: Mapping[str, float] | None, gate_on: str) -> None:
    """``sdc evaluate``'s gates are names of the metric catalogue's gates, checked on the
    worst scenario or the mean (:data:`GATE_ON`)."""
    if gates:
        from .metrics import GATE_ORDER, METRICS  # the catalogue names the gates (loaded only when some are given)

        known = [METRICS[name].gate.key for name in GATE_ORDER if METRICS[name].gate is not None]
        for name in gates:
            if name not in known:
                raise InvalidParameterError(f"unknown gate {name!r} (known: {', '.join(known)})")
    if gate_on not in GATE_ON:
        raise InvalidParameterError(f"gate_on must be {' or '.join(repr(g) for g in GATE_ON)}, got {gate_on!r}")


def check_plan_without_columns(plan: Any, columns: Any) -> None:
    """``sdc protect``: a plan names the columns, so ``--columns`` goes without it (the
    command line checks it before it reads the plan file, the request when it is built)."""
    if plan is not None and columns is not None:
        raise InvalidParameterError("--columns cannot be combined with --plan (the plan names the columns)")


#: help of the DR and score weights (``sdc evaluate`` and ``sdc compare``)
_DR_WEIGHTS = "Weights of DR = w_dld * DLD + w_pld * PLD + w_id * ID (default 0.25, 0.25, 0.5)."
_SCORE_WEIGHTS = "Weights of score = w_il * IL_score + w_dr * DR (default 0.5, 0.5)."


class _Request:
    """Shared behaviour: :meth:`build` from flat keywords, :meth:`replace`."""

    @classmethod
    def build(cls, **options: Any) -> Any:
        """The request from the flat keywords of the library entry point (nested parts
        such as :class:`ReadOptions` are filled from their own field names)."""
        return _build(cls, options)

    def replace(self, **changes: Any) -> Any:
        """A copy with ``changes`` (flat names reach the nested parts too)."""
        flat = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]
        for name in list(flat):
            value = flat[name]
            if dataclasses.is_dataclass(value) and any(c in {f.name for f in dataclasses.fields(value)}
                                                       for c in changes):
                sub = {c: v for c, v in changes.items() if c in {f.name for f in dataclasses.fields(value)}}
                flat[name] = dataclasses.replace(value, **sub)
                changes = {c: v for c, v in changes.items() if c not in sub}
        return dataclasses.replace(self, **{**flat, **changes})  # type: ignore[type-var]


@dataclass(frozen=True)
class ReadOptions(_Request):
    """How input files are read (CSV dialect, format, placeholders)."""

    input_format: str | None = opt(None, "Input format (default: from the extension).")
    delimiter: str | None = opt(None, "CSV delimiter of the input (default: sniffed from , ; TAB |).")
    decimal: str = opt(".", "Decimal mark of CSV input and output (',' for European CSV with ';' delimiter).")
    thousands: str | None = opt(
        None, "Thousands separator in the input's numbers (',' '.' ' ' or \"'\"), removed before parsing: "
              "--thousands . --decimal , reads 1.234,5 as 1234.5.")
    na_values: list[str] | None = opt(
        None, "Extra cells read as missing, comma-separated (placeholders of official tables such as "
              "'..', 'x', '-'), besides empty cells, NA, N/A, NaN, NULL and '.'.")
    encoding: str = opt(
        "utf-8", "Text encoding of CSV input (utf-8, latin-1, cp1252, or any Python codec); CSV output "
                 "is UTF-8, every character of a column passed through kept.")

    def __post_init__(self) -> None:
        _check_decimal(self.decimal)
        _check_encoding(self.encoding)
        sep = self.thousands
        if sep is not None and (len(sep) != 1 or sep.isalnum() or sep in "+-eE" or sep == self.decimal):
            raise InvalidParameterError(
                f"--thousands must be one character other than a digit, a letter, a sign or the decimal mark, "
                f"got {sep!r}")


@dataclass(frozen=True)
class RunOptions(_Request):
    """The block loop's options (one loop for the in-memory, streaming and Dask paths)."""

    seed: int = opt(0, "Seed of randomised methods; same seed, same output, byte for byte.")
    stat: str = opt("mean", "Statistic replacing each group's values.")
    strata: list[str] | None = opt(
        None, "Microaggregate within each stratum (value combination of these columns); groups never mix strata.")
    small_strata: str = opt(
        "error", "Strata with fewer than K records: refuse, merge into the stratum nearest in centroid, or blank "
                 "their protected values.")
    strata_missing: str = opt(
        "error", "An empty or NA stratum value: refuse (exit 3, counts per column), or make it a stratum of its own.")
    weights: str | None = opt(
        None, "Sampling weights (positive): group values are weighted means, preserving weighted totals.")
    missing: str = opt(
        "error", "Missing protected values: refuse; leave such records out of the grouping (their protected values "
                 "are blanked); or group on the observed values (mdav only; missing cells stay missing).")
    partition_size: int | None = opt(
        None, "Partitioned mode for very large files: cut each block into locality-preserving parts of "
              "at most N records (recursive median splits on principal axes) and protect each part on its "
              "own; the report estimates the extra information loss against one exact run on a sample.")
    bound: str = opt(
        "auto", "The report's lower bound LB_NN (how far from optimal the grouping can be): by default "
                "computed when its estimated cost is at most 25 % of the method's estimated time (both from "
                "n, p and k: the same choice on any machine), else skipped with a note; "
                "--bound always computes it, --no-bound never (sdc evaluate --bound cg certifies more).")
    time_limit: float = opt(
        600.0, "Refuse (exit 2) a block whose method is estimated, from its records, columns and k, to take "
               "longer than this many seconds (0 = no limit); an estimate over 30 s is printed before the "
               "method starts.")
    keys: list[str] | None = opt(
        None, "Released columns that identify records together with the protected ones (e.g. a region "
              "code): every class of identical (strata, keys, protected values) rows must hold >= K records, "
              "or nothing is written (exit 4).")
    categorical: list[str] | None = opt(
        None, "Nominal key columns grouped together with the protected columns (mixed microaggregation) "
              "and released as each group's mode, so k holds on every released key.")
    ordinal: list[str] | None = opt(
        None, "Ordered key columns grouped together with the protected columns (by rank) and released "
              "as each group's median category.")
    mixed_weights: Mapping[str, float] | None = opt(
        None, "Weights of the mixed distance's parts (defaults: continuous=1,ordinal=1,categorical=2): "
              "squared z-score differences, squared differences of the z-scored mid-ranks, mismatches "
              "(0/1, each key's divided by half its Gini-Simpson index).")

    def __post_init__(self) -> None:
        _check_seed(self.seed)
        check_stat(self.stat)
        if self.weights and self.stat != "mean":
            raise InvalidParameterError(f"--weights applies to the mean; it cannot be combined with --stat {self.stat}")
        if self.bound not in BOUND_MODES:
            raise InvalidParameterError(f"bound must be one of {', '.join(BOUND_MODES)}, got {self.bound!r}")
        if not (isinstance(self.time_limit, (int, float)) and 0 <= self.time_limit < float("inf")):
            raise InvalidParameterError(f"--time-limit must be a number of seconds >= 0, got {self.time_limit!r}")
        if self.missing not in MISSING_POLICIES:
            raise InvalidParameterError(
                f"unknown missing-value policy {self.missing!r} (use {', '.join(MISSING_POLICIES)})")
        if self.small_strata not in SMALL_STRATA_POLICIES:
            raise InvalidParameterError(
                f"unknown small-strata policy {self.small_strata!r} (use {', '.join(SMALL_STRATA_POLICIES)})")
        if self.strata_missing not in STRATA_MISSING_POLICIES:
            raise InvalidParameterError(
                f"unknown --strata-missing policy {self.strata_missing!r} (use error or own)")

    def parameters(self) -> dict[str, Any]:
        """The run's options as the protect report's ``parameters`` lists them (after
        ``seed``, ``stat`` and ``distance``; see :meth:`ProtectRequest.parameters`)."""
        return {"partition_size": self.partition_size, "strata": list(self.strata or []),
                "small_strata": self.small_strata, "strata_missing": self.strata_missing,
                "weights": self.weights, "missing": self.missing, "bound": self.bound,
                "keys": list(self.keys or []),
                "categorical": list(self.categorical or []), "ordinal": list(self.ordinal or [])}


@dataclass(frozen=True)
class ProtectRequest(_Request):
    """Everything ``sdc protect`` / :func:`microagg_cli.api.protect` is asked to do."""

    k: int | None = opt(None, "Minimum group size (>= 2): every protected record shares its values with >= K-1 others.")
    method: str = opt("mdav", "Microaggregation method; see --list-methods.")
    params: Mapping[str, Any] | None = opt(None, "Method parameter (repeatable), e.g. --param gamma=0.3.")
    columns: list[str] | None = opt(None, "Columns to protect as one block (default: every numeric column not dropped).")
    drop: list[str] | None = opt(None, "Identifier columns to remove from the output.")
    passthrough: list[str] | None = opt(
        None, "Columns to release unchanged on purpose (never protected). With the default selection a "
              "column whose non-empty cells are at least half numbers, but not all, is an error (exit 3) "
              "unless it is passed through, dropped or protected with --columns.")
    plan: Any = opt(
        None, "Blocking plan (.toml/.json, see sdc blocks): protect each block on its own. "
              "-k/--method/--param then fill in what a block and the plan's [defaults] leave out; "
              "--columns is not allowed.")
    report: Any = opt(None, "Write the JSON report here ('-' = stdout).")
    force: bool = opt(False, "Replace OUTPUT/report if they exist.")
    output_format: str | None = opt(None, "Output format (default: from the extension).")
    shuffle_rows: bool = opt(
        False, "Write rows in a seeded random order so the order does not reveal groups; sdc evaluate then "
               "pairs the records with --key (a kept --id-column) or --pairing-file.")
    pairing_file: Any = opt(
        None, "With --shuffle-rows: write the private pairing here (the original row number of each released "
              "row; created 0600, never to be released) for sdc evaluate --pairing-file.")
    metadata: Any = opt(
        None, "A mu-ARGUS metadata file (.rda): <RECODABLE> variables are categorical keys, <NUMERIC> ones "
              "continuous, <WEIGHT> the weight, <HOUSE_ID> an identifier; the missing codes after each width "
              "are declared missing (never averaged). The file's own metadata and the options come first.")
    id_column: str | None = opt(None, "Identifier column (pass-through), for --regenerate-ids.")
    regenerate_ids: bool = opt(False, "Replace --id-column with fresh random ids (seeded permutation of 1..n).")
    allow_unique_keys: bool = opt(
        False, "Accept a categorical/ordinal key that is unique per record (by default refused, exit 3: such a "
               "column is an identifier, and grouping on it releases each group's mode of ids).")
    evaluate_risk: bool = opt(
        False, "Add the full risk section of sdc evaluate to the report and summary: DLD, PLD, ID, k', DR "
               "and score over the intruder scenarios (1G, 2G... by blocks touched).")
    engine: str | None = opt(
        None, "Stream Parquet in two passes (the protected columns first, then all columns batch by batch: "
              "memory grows with the protected columns, not the file) and run the parts here (local) or as "
              "tasks on a Dask cluster "
              "(dask; pip install 'microagg-cli[dask]'). INPUT: a Parquet file or dataset directory; OUTPUT: "
              "a .parquet file or a directory. Default: in memory (a dataset directory INPUT is streamed "
              "locally).")
    scheduler: Any = opt(
        None, "Dask scheduler for --engine dask, e.g. tcp://HOST:PORT (default: a local cluster of 2 worker "
              "processes on this machine, loopback only).")
    read: ReadOptions = _nested(ReadOptions)
    run: RunOptions = _nested(RunOptions)

    def __post_init__(self) -> None:
        check_plan_without_columns(self.plan, self.columns)
        if self.regenerate_ids and not self.id_column:
            raise InvalidParameterError("--regenerate-ids needs --id-column COL")
        if self.pairing_file is not None and not self.shuffle_rows:
            raise InvalidParameterError("--pairing-file records the order of --shuffle-rows; add --shuffle-rows "
                                        "(without it the rows keep their order and need no pairing file)")
        if self.pairing_file is not None and str(self.pairing_file) == "-":
            raise InvalidParameterError("--pairing-file needs a file name (the pairing is private: not stdout)")
        if self.engine is not None and self.engine not in ENGINES:
            raise InvalidParameterError(f"unknown engine {self.engine!r} (use {' or '.join(ENGINES)})")
        if self.scheduler is not None and self.engine != "dask":
            raise InvalidParameterError("--scheduler needs --engine dask")

    @property
    def regenerated_id(self) -> str | None:
        """The identifier column to regenerate (``--regenerate-ids``), or None."""
        return self.id_column if self.regenerate_ids else None

    @property
    def roles(self) -> list[str]:
        """Columns with a role (strata, keys, categorical and ordinal keys, weights, identifier):
        never protected by default."""
        run = self.run
        return (list(run.strata or []) + list(run.keys or []) + list(run.categorical or [])
                + list(run.ordinal or []) + [c for c in (run.weights, self.id_column) if c])

    def parameters(self, plan: Any = None, *, stat: str | None = None, **tail: Any) -> dict[str, Any]:
        """The report's ``parameters`` section, made from this request (so that what ran and
        what is reported cannot differ); ``tail`` adds what only the run knows (the
        engine, the reader's thousands separator and placeholders)."""
        run = self.run
        out = {"seed": run.seed, "stat": run.stat if stat is None else stat,
               "distance": "euclidean on z-scored attributes (population sd)"}
        opts = run.parameters()
        out.update(partition_size=opts["partition_size"],
                   plan=plan.source.name if getattr(plan, "source", None) else None,
                   strata=opts["strata"], small_strata=opts["small_strata"],
                   strata_missing=opts["strata_missing"], weights=opts["weights"], missing=opts["missing"],
                   decimal=self.read.decimal, bound=opts["bound"], keys=opts["keys"])
        out.update(tail)
        return out


@dataclass(frozen=True)
class EvaluateRequest(_Request):
    """Everything ``sdc evaluate`` / :func:`microagg_cli.api.evaluate` is asked to do."""

    columns: list[str] | None = opt(
        None, "Columns to evaluate as one block (default: the numeric columns whose values differ "
              "between the two files).")
    key: list[str] | str | None = opt(
        None, "Pair records by these identifier columns (in both files, unique per record) instead of by "
              "position; duplicate, empty or unmatched keys are an error.")
    pairing_file: Any = opt(
        None, "Pair records by the private pairing file of sdc protect --shuffle-rows --pairing-file "
              "(the original row of each released row) instead of by position.")
    pairing_check: bool = opt(
        True, "Prove the pairing before measuring: in every evaluated column, each class of records sharing "
              "a released value must hold it within the range of their original values (every group "
              "statistic does). --no-pairing-check skips the proof, for releases that are not group "
              "statistics (noise, mic1d); the report says the pairing was not proven.")
    blocks: list[list[str]] | None = opt(
        None, "Attribute blocks protected separately, ';' between blocks: scenarios are labelled 1G, "
              "2G... by the blocks they touch, IL_SSE and LB_NN are given per block.")
    plan: Any = opt(None, "Take columns, blocks and k from a blocking plan (.toml/.json, see sdc blocks).")
    k: int | None = opt(
        None, "k for the share of records in classes smaller than k and for the lower bound LB_NN "
              f"(default: the smallest k of --plan, else {EVALUATE_K}).")
    known: list[list[str]] | None = opt(
        None, "An intruder scenario: the columns the intruder knows (repeatable). Replaces the default "
              "scenarios (every subset of the columns).")
    max_scenarios: int | None = opt(
        None, "Evaluate every subset of the columns when there are at most N, else a seeded sample of N "
              "stratified by size; 0 = every subset (default: every subset up to 10 columns, else 512).")
    seed: int = opt(0, "Seed of the scenario sample (used when there are more scenarios than --max-scenarios).")
    dr_weights: Mapping[str, float] | None = opt(None, _DR_WEIGHTS)
    score_weights: Mapping[str, float] | None = opt(None, _SCORE_WEIGHTS)
    gates: Mapping[str, float] | None = opt(None, "Gates: {\"max_dld\": 5.0, \"min_kprime\": 3, ...}.")
    gate_on: str = opt(
        "worst", "Which figure the DLD, ID and k' gates check: the worst intruder scenario, or the mean "
                 "over scenarios (the figures entering DR and score).")
    missing: str = opt(
        "error", "Missing values in an evaluated column: refuse, or evaluate the records complete in both "
                 "files (the number left out is reported).")
    report: Any = opt(None, "Write the JSON report here ('-' = stdout).")
    html: Any = opt(None, "Write a self-contained HTML report (tables and charts, no external assets).")
    internal: bool = opt(
        False, "Let the reports include original values (per-column statistics); for internal use, "
               "never for release.")
    force: bool = opt(False, "Replace the report files if they exist.")
    scale: str = opt(
        "z", "Scale of the headline information loss: z = IL_SSE on z-scores (the literature's IL); "
             "raw = also IL_SSE on the unstandardised values, as some papers print it (the JSON "
             "report always holds both).")
    bound: str = opt(
        "nn", "Lower bound on the IL_SSE of any k-partition: nn = LB_NN (instant, loose); cg = also the "
              "certified column-generation bound lb_cg and the gap (IL_SSE - lb_cg) / IL_SSE (minutes; "
              "blocks of up to 4,000 records).")
    time_limit: float | None = opt(
        600.0, "Seconds for --bound cg over all blocks; the bound stays valid when stopped (weaker), "
               "and the report says whether the LP was solved (cg_status optimal) or stopped.")
    models: list[str] | None = opt(
        None, "A linear model for the confidence-interval overlap, R-style: \"y ~ x1 + x2\", \"y ~ .\" (the other "
              "evaluated columns), \"y ~ 1\" (the mean); repeatable (default: each evaluated column on the others, "
              "the first 10 as responses).")
    weights: str | None = opt(
        None, "Weight column of the original file: weighted least squares for --model, weighted group means "
              "and weighted totals in the group table.")
    by: list[str] | None = opt(
        None, "Group table by these columns (strata or categories): n, means, medians and weighted totals "
              "per group, original vs protected (default: --strata, else all records as one group).")
    strata: list[str] | None = opt(
        None, "The strata the file was protected within (sdc protect --strata): the group table's default "
              "--by.")
    categorical: list[str] | None = opt(
        None, "Categorical (or ordinal) key columns released as group categories: per key the share of "
              "records whose category changed, total-variation distances of the one- and two-way tables, "
              "and k over these keys and the evaluated columns together.")
    rmd_k: float = opt(0.01, "RMD: weight of the robust Mahalanobis distance in each interval's half-width "
                             "(sdcMicro dRiskRMD's k).")
    rmd_k2: float = opt(0.05, "RMD: RMDID2's radius (standardized units) within which another protected record "
                              "hides an unsafe one (sdcMicro's k2).")
    linkage_distance: str = opt(
        "euclidean", "One-to-one linkage's cost: euclidean = sum of squared Euclidean distances on z-scores; "
                     "euclidean-plain = sum of plain distances (sdcMicro's recordLinkage); manhattan; gower.")
    linkage_exact_max: int = opt(
        2000, "Exact one-to-one linkage up to N records (an N x N cost matrix: 32 MB and seconds at 2,000, "
              "8 GB at 32,000); above it the estimate on 4 windows of 1,000 records.")
    read: ReadOptions = _nested(ReadOptions)

    def __post_init__(self) -> None:
        _check_seed(self.seed)
        _check_max_scenarios(self.max_scenarios)
        for name, v in (("--rmd-k", self.rmd_k), ("--rmd-k2", self.rmd_k2)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (v >= 0 and v < float("inf")):
                raise InvalidParameterError(f"{name} must be a finite number >= 0, got {v!r}")
        if self.linkage_distance not in LINKAGE_DISTANCE_NAMES:
            raise InvalidParameterError(f"--linkage-distance must be one of {', '.join(LINKAGE_DISTANCE_NAMES)}, "
                                        f"got {self.linkage_distance!r}")
        if isinstance(self.linkage_exact_max, bool) or not isinstance(self.linkage_exact_max, int) \
                or self.linkage_exact_max < 0:
            raise InvalidParameterError(f"--linkage-exact-max must be an integer >= 0, got {self.linkage_exact_max!r}")
        if self.missing not in EVALUATE_MISSING:
            raise InvalidParameterError(
                f"unknown missing-value policy {self.missing!r} (use {' or '.join(EVALUATE_MISSING)})")
        if self.scale not in SCALES:
            raise InvalidParameterError(f"--scale must be {' or '.join(SCALES)}, got {self.scale!r}")
        if self.bound not in EVALUATE_BOUNDS:
            raise InvalidParameterError(f"--bound must be {' or '.join(EVALUATE_BOUNDS)}, got {self.bound!r}")
        if self.time_limit is not None and not self.time_limit >= 0:
            raise InvalidParameterError(f"--time-limit must be >= 0 seconds, got {self.time_limit!r}")
        check_gates(self.gates, self.gate_on)
        if self.k is not None:  # an option error comes before any data error (the pairing proof's)
            check_k_value(self.k)
        if self.html is not None and str(self.html) == "-":
            raise InvalidParameterError("--html needs a file name (the HTML report is not written to stdout)")
        # the evaluated columns: a plan's, the blocks', or --columns
        if self.plan is not None and (self.columns is not None or self.blocks is not None):
            raise InvalidParameterError("--plan names the columns and blocks; drop --columns/--blocks")
        if self.blocks is not None and self.columns is not None \
                and sorted(self.columns) != sorted(c for b in self.blocks for c in b):
            raise InvalidParameterError("--columns and --blocks name different columns; give one of them")
        if self.columns is not None and not self.columns and self.blocks is None:
            raise InvalidParameterError("--columns: no column given")
        by = self.by if self.by is not None else self.strata  # the group table's columns
        if by and len(set(by)) != len(by):
            raise InvalidParameterError("--by: a column is named twice")

    def parameters(self) -> dict[str, Any]:
        """The request's part of the evaluate report's ``parameters`` (after the measures' own)."""
        plan = self.plan
        return {
            "gate_on": self.gate_on,
            "missing": self.missing,
            "decimal": self.read.decimal,
            "columns_given": list(self.columns) if self.columns is not None else None,
            "blocks_given": [list(b) for b in self.blocks] if self.blocks is not None else None,
            "plan": plan.source.name if plan is not None and plan.source is not None else None,
            "key": self.key[0] if isinstance(self.key, (list, tuple)) and len(self.key) == 1 else self.key,
            "models": list(self.models) if self.models is not None else None,
            "weights": self.weights,
            "by": list(self.by) if self.by is not None else None,
            "strata": list(self.strata) if self.strata is not None else None,
            **({"pairing_file": Path(self.pairing_file).name} if self.pairing_file is not None else {}),
            **({} if self.pairing_check else {"pairing_check": False}),
        }


#: ``sdc compare``'s default cap on intruder scenarios per cell.
DEFAULT_COMPARE_SCENARIOS = 64
#: ``sdc compare`` screens: per cell, DLD and PLD are exact up to this many records and
#: above it estimated from :data:`COMPARE_RISK_SAMPLE` seeded originals (with their 95 %
#: bounds), one-to-one linkage covers the :data:`COMPARE_LINKAGE_SCENARIOS` largest
#: scenarios (:data:`COMPARE_LINKAGE_WINDOWS` windows), and the robust eigenvalues (not a compare column) are left out; ``sdc
#: evaluate`` gives the exact figures of the cell chosen.
COMPARE_EXACT_MAX = 20_000
COMPARE_RISK_SAMPLE = 10_000
COMPARE_LINKAGE_SCENARIOS = 1
#: ... on this many of the linkage estimator's local windows (``sdc evaluate``: 4), above
#: its exact size: the same estimate with a wider spread, at half the cost where linking
#: is hard.
COMPARE_LINKAGE_WINDOWS = 2


@dataclass(frozen=True)
class CompareRequest(_Request):
    """Everything ``sdc compare`` / :func:`microagg_cli.api.compare` is asked to do."""

    methods: list[str] | None = opt(
        None, "Methods to compare, comma-separated (default: mdav). Parameters follow the name after "
              "colons: vmdav:gamma=0.3, individual-ranking:optimal=true, ufs:order=pv:AGI.")
    k: list[int] | None = opt(None, "Minimum group sizes to try, comma-separated (default: 3,5,10).")
    mic1d_k: list[int] | None = opt(
        None, "k values of mic1d, whose k counts values per partition, not records "
              "(default: the --k values, which barely perturb the data).")
    plans: list[Any] | None = opt(
        None, "Blocking plans (see sdc blocks), comma-separated: every cell protects each block on its "
              "own; the plans' method and k are replaced by the cell's.")
    strategies: list[str] | None = opt(
        None, "Blocking plans proposed from the data, one per strategy: correlated, cross, individual, "
              "single, random (see sdc blocks).")
    block_size: int | None = opt(None, "Block size for --strategies correlated, cross and random.")
    columns: list[str] | None = opt(None, "Columns to protect (default: every numeric column); not with --plans.")
    categorical: list[str] | None = opt(
        None, "Categorical key columns grouped with the protected columns in every cell (mdav, ils): adds "
              "the mean share of changed categories and the smallest class over every released key.")
    mixed_weights: Mapping[str, Any] | None = opt(
        None, "With keys: the mixed distance's role weights, ROLE=W[,W...] (categorical=0.2,0.5,2): a role "
              "given several weights makes an axis of the grid; the HTML report plots numeric IL against "
              "the categories changed and marks the dominated cells.")
    keys_sets: list[list[str]] | None = opt(
        None, "Sets of categorical keys separated by ';' (\"a,b;a,b,c\"): each set makes an axis of the "
              "grid (instead of --categorical).")
    preset: str | None = opt(
        None, "Reproduce a literature experiment on the sample data (see --list-presets); --methods, "
              "-k, --mic1d-k, --plans and --strategies override its parts.")
    known: list[list[str]] | None = opt(
        None, "An intruder scenario: the columns the intruder knows (repeatable). Replaces the default "
              "scenarios.")
    max_scenarios: int | None = opt(
        DEFAULT_COMPARE_SCENARIOS,
        "Per cell, evaluate every subset of the columns when there are at most N, else a seeded "
        "sample of N stratified by size; 0 = every subset, as in sdc evaluate (2^p - 1: "
        "8191 on Census's 13 columns, slow).")
    seed: int = opt(0, "Seed of randomised methods and of the intruder-scenario sample.")
    dr_weights: Mapping[str, float] | None = opt(None, _DR_WEIGHTS)
    score_weights: Mapping[str, float] | None = opt(None, _SCORE_WEIGHTS)
    output: Any = opt(
        None, "Write the result here instead of stdout; rewritten atomically as cells finish, so "
              "Ctrl-C keeps the finished rows.")
    fmt: str | None = opt(None, "Result format on stdout or in -o FILE (default: from the -o extension, else table).")
    html: Any = opt(None, "Write a self-contained HTML page: the tables and a risk-utility map (inline SVG).")
    save_protected: Any = opt(None, "Also write every cell's protected file (CSV) into DIR (created if missing).")
    jobs: int = opt(1, "Cells run in N worker processes (0 = one per CPU; at most one per CPU); each worker's "
                       "methods and metrics share out the CPUs (ils's two searches, kd-tree queries, BLAS), so "
                       "workers x threads never exceeds them. The results do not depend on N.")
    force: bool = opt(False, "Replace existing output, HTML and saved files.")
    gates: Mapping[str, float] | None = opt(
        None, "Gates checked on every cell after the grid is written: {\"min_ci_overlap\": 0.8}.")
    max_linkage: float | None = opt(
        None, "Fail (exit code 5, after every output is written) when a cell's one-to-one linkage in its worst "
              "scenario exceeds PCT %.")
    read: ReadOptions = _nested(ReadOptions)

    def __post_init__(self) -> None:
        _check_seed(self.seed)
        if self.plans and self.strategies:
            raise InvalidParameterError("give either --plans or --strategies, not both")
        if self.keys_sets and self.categorical:
            raise InvalidParameterError("give either --categorical or --keys-sets, not both")
        if self.mixed_weights and not (self.categorical or self.keys_sets):
            raise InvalidParameterError("--mixed-weights needs --categorical or --keys-sets")
        if self.block_size is not None and not self.strategies:
            raise InvalidParameterError("--block-size applies to --strategies only")
        _check_max_scenarios(self.max_scenarios)
        for s in self.strategies or ():
            if s not in BLOCK_STRATEGIES:
                raise InvalidParameterError(
                    f"--strategies: unknown strategy {s!r} (known: {', '.join(BLOCK_STRATEGIES)})")
            if s in SIZED_STRATEGIES and self.block_size is None:
                raise InvalidParameterError(f"--strategies {s}: this strategy needs a block size (--block-size S)")


@dataclass(frozen=True)
class BlocksRequest(_Request):
    """Everything ``sdc blocks`` / :func:`microagg_cli.api.propose_plans` is asked to do."""

    strategy: str | None = opt(
        None, "How to form blocks (default: correlated): correlated = blocks of strongly correlated "
              "columns; cross = the j-th columns of all blocks strongly correlated; individual = one "
              "column per block; single = one block; random = seeded; all = every strategy "
              "(with --evaluate).")
    size: int | None = opt(
        None, "Columns per block (correlated, cross, random; default 3). When S does not divide the number of "
              "columns, some blocks are smaller: one block holds the remainder (correlated, random) or "
              "sizes differ by at most one (cross); blocks are listed in the order of their first column, "
              "so the smaller one need not be the last.")
    seed: int = opt(0, "Seed of the random strategy, of randomised methods and of scenario sampling.")
    columns: list[str] | None = opt(
        None, "Columns to split into blocks (default: every numeric column not dropped).")
    drop: list[str] | None = opt(None, "Identifier columns: written to the plan's drop list.")
    method: str = opt(
        "mdav", "Method written into the plan and used by --evaluate (see sdc protect --list-methods).")
    k: int | None = opt(
        None, "k written into the plan (default: none, sdc protect -k decides); needed by --evaluate.")
    params: Mapping[str, Any] | None = opt(None, "Method parameter written into the plan (repeatable).")
    check: Any = opt(
        None, "Validate the plan file PLAN (.toml/.json) against INPUT and print its blocks "
              "instead of proposing one.")
    evaluate: bool = opt(
        False, "Protect in memory with each candidate plan and print IL_SSE and k' per intruder "
               "scenario, labelled by blocks touched (1G, 2G, ...).")
    recommend: bool = opt(
        False, "Pick the candidate with the best worst-case k' (ties: higher mean k', then lower "
               "IL_SSE; implies --evaluate); -o writes it. Bound the intruder with --max-known: "
               "knowing every attribute, any plan of several blocks has k' near 1.")
    max_il: float | None = opt(
        None, "With --recommend: only plans with IL_SSE <= IL qualify (implies --recommend); "
              "exit code 5 when none does.")
    max_known: int | None = opt(
        None, "Intruder scenarios of at most N known attributes (default: every subset, or a "
              "seeded sample of 512 when there are more).")
    stat: str = opt("mean", "Statistic replacing each group's values.")
    output: Any = opt(None, "Write the plan here (.toml or .json) instead of printing it.")
    force: bool = opt(False, "Replace the plan file if it exists.")
    read: ReadOptions = _nested(ReadOptions)

    def __post_init__(self) -> None:
        _check_seed(self.seed)
        if self.k is not None:
            check_k_value(self.k)
        strategy, check, size = self.strategy, self.check, self.size
        if check is not None and strategy is not None:
            raise InvalidParameterError("--check PLAN and --strategy exclude each other")
        if check is not None and self.columns is not None:
            raise InvalidParameterError("--columns cannot be combined with --check PLAN (the plan names its columns)")
        if strategy is not None and strategy != "all" and strategy not in BLOCK_STRATEGIES:
            raise InvalidParameterError(f"unknown strategy {strategy!r} (known: {', '.join(BLOCK_STRATEGIES)}, all)")
        if size is not None and (isinstance(size, bool) or int(size) != size or size < 1):
            raise InvalidParameterError(f"--size must be an integer >= 1, got {size!r}")
        if self.max_known is not None and not self.evaluating:
            raise InvalidParameterError("--max-known applies to --evaluate")
        if self.max_known is not None and self.max_known < 1:
            raise InvalidParameterError(f"--max-known must be >= 1, got {self.max_known!r}")
        if strategy == "all" and not self.evaluating:
            raise InvalidParameterError("--strategy all proposes several plans: add --evaluate (and --recommend)")
        if strategy == "all" and self.output is not None and not self.recommending:
            raise InvalidParameterError("-o with --strategy all needs --recommend (which plan to write?)")
        if self.evaluating and self.k is None and check is None:
            raise InvalidParameterError("--evaluate needs -k K (the k to protect with)")
        if self.output is not None:
            if str(self.output) == "-":
                raise InvalidParameterError("-o -: the plan goes to stdout when -o is not given")
            if Path(self.output).suffix.lower() not in (".toml", ".json"):
                raise InvalidParameterError(f"plan file {str(self.output)!r}: use a .toml or .json file")

    @property
    def strategy_names(self) -> tuple[str, ...]:
        """The strategies to run: none with ``check``, every one for ``all``, else the one
        asked for (default :data:`DEFAULT_STRATEGY`)."""
        if self.check is not None:
            return ()
        strategy = self.strategy or DEFAULT_STRATEGY
        return BLOCK_STRATEGIES if strategy == "all" else (strategy,)

    def resolved(self) -> "BlocksRequest":
        """The request with its defaults filled in: the strategy (:data:`DEFAULT_STRATEGY`
        unless ``check``) and the block size (:data:`DEFAULT_BLOCK_SIZE` when a strategy
        to run needs one)."""
        strategy = self.strategy if self.check is not None or self.strategy else DEFAULT_STRATEGY
        size = self.size
        if size is None and any(n in SIZED_STRATEGIES for n in self.strategy_names):
            size = DEFAULT_BLOCK_SIZE
        return self.replace(strategy=strategy, size=size)

    @property
    def evaluating(self) -> bool:
        """``recommend`` implies ``evaluate``; ``max_il`` implies ``recommend``."""
        return self.evaluate or self.recommending

    @property
    def recommending(self) -> bool:
        """``max_il`` implies ``recommend``."""
        return self.recommend or self.max_il is not None


@dataclass(frozen=True)
class RolesRequest(_Request):
    """Everything ``sdc roles`` / :func:`microagg_cli.api.propose_roles` is asked to do."""

    metadata: Any = opt(
        None, "A mu-ARGUS metadata file (.rda) whose roles the proposal takes in (after the file's own metadata).")
    fmt: str | None = opt(
        None, "toml: a roles file in the plan format, each column's evidence in a comment (sdc protect --plan "
              "applies it as it is); json: the same for scripts (default: from the -o extension, else toml).")
    output: Any = opt(None, "Write the proposal here instead of stdout (atomically).")
    force: bool = opt(False, "Replace the output file if it exists.")
    k: int | None = opt(None, "k written into the proposal's [defaults] (default: none, sdc protect -k decides).")
    read: ReadOptions = _nested(ReadOptions)

    def __post_init__(self) -> None:
        if self.fmt is not None and self.fmt not in ROLES_FORMATS:
            raise InvalidParameterError(f"--format must be {' or '.join(ROLES_FORMATS)}, got {self.fmt!r}")
        if self.k is not None:
            check_k_value(self.k)
        if self.output is not None and str(self.output) == "-":
            raise InvalidParameterError("-o -: the proposal goes to stdout when -o is not given")


#: ``sdc evaluate --linkage-distance`` (the same names as
#: :data:`microagg_cli.metrics.linkage.LINKAGE_DISTANCES`; a test keeps them equal).
LINKAGE_DISTANCE_NAMES = ("euclidean", "euclidean-plain", "manhattan", "gower")

#: ``sdc risk``: the individual-risk estimators (Benedetti-Franconi; see sdc-metrics(7)).
RISK_METHODS = ("approx", "exact")


@dataclass(frozen=True)
class RiskRequest(_Request):
    """Everything ``sdc risk`` / :func:`microagg_cli.api.risk` is asked to do."""

    keys: list[str] | None = opt(
        None, "The categorical key variables (quasi-identifiers) an intruder can match on, comma-separated "
              "(default: the <RECODABLE> variables of --metadata).")
    weights: str | None = opt(
        None, "The sampling weight column (> 0 in every record): F_k = sum of the weights of a class and the "
              "Benedetti-Franconi risk; without it the file is the population (risk = 1 / f_k).")
    household_id: str | None = opt(
        None, "The household id column: adds the household risk 1 - prod(1 - r) over each household.")
    sensitive: list[str] | None = opt(
        None, "Sensitive variables (not keys), comma-separated: their distinct l-diversity over the key classes.")
    k: int = opt(3, "k of the combinations' unsafe cells and of the --max-violations gate (violations of 2-, 3- "
                    "and 5-anonymity are always reported).")
    l: int = opt(2, "l-diversity threshold: records in key classes with fewer distinct sensitive values.")  # noqa: E741
    max_combination_size: int | None = opt(
        None, "Check every combination of up to N keys for unsafe cells (default: the largest <IDLEVEL> of the "
              "keys in the --metadata .rda, else min(3, keys)).")
    suda: bool = opt(True, "Compute SUDA2 (minimal sample uniques, DIS-SUDA scores); --no-suda skips it.")
    suda_max_size: int | None = opt(
        None, "Largest minimal sample unique SUDA2 searches (default: every key up to 10 keys, else 3).")
    dis_fraction: float = opt(0.01, "Sampling fraction of the DIS-SUDA score (sdcMicro's DisFraction).")
    risk_method: str = opt(
        "approx", "approx: sdcMicro's measure_risk (closed forms for f_k = 1, 2; p / (f_k - 1 + p) above); "
                  "exact: the negative-binomial expectation for every f_k.")
    max_global_risk: float | None = opt(
        None, "Gate: fail (exit code 5) when the expected re-identifications exceed this share of the records "
              "(0.01 = 1 %), after the reports are written.")
    max_violations: int | None = opt(
        None, "Gate: fail (exit code 5) when more than N records violate k-anonymity (f_k < k).")
    metadata: Any = opt(None, "A mu-ARGUS metadata file (.rda): keys (<RECODABLE>), weight (<WEIGHT>) and "
                              "missing codes, where the options do not give them.")
    report: Any = opt(None, "Write the JSON report here ('-' = stdout).")
    html: Any = opt(None, "Write an HTML report here.")
    internal: bool = opt(
        False, "Show the key values of the riskiest records in the reports (private files, mode 0600); "
               "without it records are named by their row number only.")
    top: int = opt(20, "Records and combinations listed in the reports (the riskiest first).")
    force: bool = opt(False, "Replace existing report files.")
    read: ReadOptions = _nested(ReadOptions)

    def __post_init__(self) -> None:
        check_k_value(self.k, where="-k: ")
        keys = list(self.keys or [])
        if len(set(keys)) != len(keys):
            raise InvalidParameterError("--keys: a column is named twice")
        for name, col in (("--weights", self.weights), ("--household-id", self.household_id)):
            if col is not None and col in keys:
                raise InvalidParameterError(f"{name}: column {col!r} is also a key")
        if self.household_id is not None and self.household_id == self.weights:
            raise InvalidParameterError("--household-id and --weights name the same column")
        for col in self.sensitive or []:
            if col in keys:
                raise InvalidParameterError(f"--sensitive: column {col!r} is also a key")
            if col in (self.weights, self.household_id):
                raise InvalidParameterError(f"--sensitive: column {col!r} is the weight or the household id")
        if isinstance(self.l, bool) or not isinstance(self.l, int) or self.l < 1:
            raise InvalidParameterError(f"-l must be an integer >= 1, got {self.l!r}")
        for name, v in (("--max-combination-size", self.max_combination_size),
                        ("--suda-max-size", self.suda_max_size)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise InvalidParameterError(f"{name} must be an integer >= 1, got {v!r}")
        if not 0.0 < float(self.dis_fraction) < 1.0:
            raise InvalidParameterError(f"--dis-fraction must be in (0, 1), got {self.dis_fraction!r}")
        if self.risk_method not in RISK_METHODS:
            raise InvalidParameterError(f"--risk-method must be {' or '.join(RISK_METHODS)}, got {self.risk_method!r}")
        if self.max_global_risk is not None and not 0.0 <= float(self.max_global_risk) <= 1.0:
            raise InvalidParameterError(
                f"--max-global-risk is a share in [0, 1] (0.01 = 1 %), got {self.max_global_risk!r}")
        if self.max_violations is not None and (isinstance(self.max_violations, bool) or self.max_violations < 0):
            raise InvalidParameterError(f"--max-violations must be an integer >= 0, got {self.max_violations!r}")
        if isinstance(self.top, bool) or not isinstance(self.top, int) or self.top < 0:
            raise InvalidParameterError(f"--top must be an integer >= 0, got {self.top!r}")
        if self.html is not None and str(self.html) == "-":
            raise InvalidParameterError("--html -: the HTML report goes to a file")
