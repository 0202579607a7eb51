"""Every column's role for ``sdc protect``.

From the options and the plan and the declarations; the default run's refusal, and the
request's fields."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import DataError, InvalidParameterError
from .evidence import declared_roles
from .check import RoleContext, shown_path
from .rda import RdaMetadata, check_fits, match_names

__all__ = ["explicit_roles", "resolve_default", "apply_missing_codes",
           "resolve_request", "check_declared_missing", "shown_path"]


#: request field -> (role, option shown in messages)
_OPTION_ROLES = (
    ("columns", "continuous", "--columns"),
    ("categorical", "categorical", "--categorical"),
    ("ordinal", "ordinal", "--ordinal"),
    ("keys", "key", "--keys"),
    ("weights", "weight", "--weights"),
    ("strata", "stratum", "--strata"),
    ("drop", "identifier", "--drop"),
    ("passthrough", "passthrough", "--passthrough"),
    ("id_column", "identifier", "--id-column"),
)
#: option roles that today's checks already keep apart (with today's messages)
_OLD = {"--columns", "--keys", "--weights", "--strata", "--drop", "--passthrough", "--id-column"}


def _request_value(request: Any, name: str) -> list[str]:
    for part in (request, getattr(request, "run", None)):
        if part is not None and hasattr(part, name):
            value = getattr(part, name)
            if value is None:
                return []
            return [value] if isinstance(value, str) else list(value)
    return []


def explicit_roles(request: Any, plan: Any = None) -> dict[str, tuple[str, str]]:
    """``{column: (role, source)}`` from the command line and the plan's roles.

    A column named for two roles is a usage error naming it and both sources (exit
    code 2). Pairs of today's options (``--columns``, ``--keys``, ``--weights``,
    ``--strata``, ``--drop``, ``--passthrough``, ``--id-column``) are left to today's
    checks and messages. ``--keys`` columns are released unchanged (role ``key``)."""
    out: dict[str, tuple[str, str]] = {}
    old: set[str] = set()

    def put(column: str, role: str, source: str, today: bool) -> None:
        if column in out and out[column][0] != role:
            if today and column in old:
                return  # today's checks say it, in today's words
            raise InvalidParameterError(f"column {column!r} is given two roles: {out[column][0]} "
                                        f"({out[column][1]}) and {role} ({source})")
        if column not in out:
            out[column] = (role, source)
            if today:
                old.add(column)

    for field_name, role, option in _OPTION_ROLES:
        for c in _request_value(request, field_name):
            put(c, role, option, option in _OLD)
    if plan is not None:
        where = f"the plan {plan.source.name}" if getattr(plan, "source", None) else "the plan"
        keys = {c for c, (role, _) in out.items() if role in ("categorical", "ordinal")}
        keys |= {c for r in ("categorical", "ordinal") for c in (getattr(plan, "roles", None) or {}).get(r, ())}
        # a block that names every key groups them (mixed microaggregation): not a second role
        grouping = next((set(b.columns) for b in plan.blocks if keys and keys <= set(b.columns)), set())
        for c in plan.columns:
            if c in grouping and c in keys:
                continue
            put(c, "continuous", where, True)
        for c in plan.drop:
            put(c, "identifier", where, True)
        for c in plan.passthrough:
            put(c, "passthrough", where, True)
        for role, cols in (getattr(plan, "roles", None) or {}).items():
            for c in cols:
                put(c, "key" if role == "keys" else role, where, False)
    return out




def resolve_default(table: Any, request: Any, rda: RdaMetadata | None = None,
                    declared: Mapping[str, tuple[str, str]] | None = None) -> dict[str, Any]:
    """The roles the file and ``rda`` declare, filling what the command line left open
    (a run without ``--columns`` or a plan: the file then says which columns are keys
    and which is the weight).

    Returns the request fields to change (``categorical``, ``ordinal``, ``weights``,
    ``passthrough``; empty when nothing is declared, so that an all-continuous file runs
    exactly as before). What the values say is checked later, on every run, by
    :func:`microagg_cli.roles.check.check_roles`.

    ``declared``: :func:`declared_roles` of ``table`` and ``rda``, when the caller has them.

    Raises
    ------
    InvalidParameterError : two weights declared and none chosen with ``--weights``.
    """
    explicit = explicit_roles(request)
    declared = {c: rd for c, rd in (declared_roles(table, rda) if declared is None else declared).items()
                if c not in explicit}
    run = request.run
    changes: dict[str, Any] = {}
    cats = [c for c in table.columns if declared.get(c, ("",))[0] == "categorical"]
    ords = [c for c in table.columns if declared.get(c, ("",))[0] == "ordinal"]
    weights = [c for c in table.columns if declared.get(c, ("",))[0] == "weight"]
    if cats:
        changes["categorical"] = list(run.categorical or []) + cats
    if ords:
        changes["ordinal"] = list(run.ordinal or []) + ords
    if weights:
        if run.weights is None:
            if len(weights) > 1:
                raise InvalidParameterError(
                    "two weights are declared (" + ", ".join(f"{c!r} by {declared[c][1]}" for c in weights)
                    + "): choose one with --weights")
            changes["weights"] = weights[0]
        else:  # another weight was chosen: the declared one is released as it is, never averaged
            changes["passthrough"] = list(request.passthrough or []) + weights
    return changes


def apply_missing_codes(table: Any, rda: RdaMetadata, columns: Sequence[str]) -> tuple[Any, dict[str, Any]]:
    """``table`` with the ``.rda``'s declared missing codes made missing in ``columns``.

    A cell equal to a code (as text, or as a number) becomes an empty CSV cell or an
    Arrow null, so that no method averages it and ``--missing`` decides what happens
    to its record. Returns the new table and ``{column: {code: {"label": None,
    "count": n}}}`` for the report's ``declared_missing``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..io import column_values

    matched = match_names(rda, table.columns)
    data = table.data
    counts: dict[str, Any] = {}
    for c in columns:
        v = matched.get(c)
        if v is None or not v.missing:
            continue
        col = data.column(c)
        hit = np.zeros(table.n_rows, dtype=bool)
        per: dict[str, int] = {}
        values, _bad = column_values(table, c)
        text = None
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            text = np.asarray(pc.utf8_trim_whitespace(col).to_numpy(zero_copy_only=False), dtype=object)
        for code in v.missing:
            mask = np.zeros(table.n_rows, dtype=bool)
            if text is not None:
                mask |= text == code.strip()
            try:
                num = float(code)
            except ValueError:
                num = None
            if num is not None:
                mask |= values == num
            mask &= ~hit
            if mask.any():
                per[code] = int(mask.sum())
                hit |= mask
        if not hit.any():
            continue
        counts[c] = {code: {"label": None, "count": n} for code, n in per.items()}
        if table.fmt == "csv":
            new = pc.if_else(pa.array(hit), pa.scalar("", col.type), col)
        else:
            new = pc.if_else(pa.array(hit), pa.scalar(None, col.type), col)
        data = data.set_column(data.column_names.index(c), data.schema.field(c), new)
    if not counts:
        return table, {}
    return table.with_data(data), counts


def _merge_plan_roles(request: Any, plan: Any) -> Any:
    """The request with the plan's roles filled in (a different ``--weights`` is an error)."""
    roles = getattr(plan, "roles", None) or {}
    if not roles:
        return request
    run = request.run
    changes: dict[str, Any] = {}
    for role, name in (("categorical", "categorical"), ("ordinal", "ordinal"), ("stratum", "strata"),
                       ("keys", "keys")):
        cols = list(roles.get(role, ()))
        if cols:
            given = list(getattr(run, name) or [])
            changes[name] = given + [c for c in cols if c not in given]
    weight = roles.get("weight")
    if weight:
        if run.weights is not None and run.weights != weight[0]:
            raise InvalidParameterError(f"--weights {run.weights!r} but the plan's weight is {weight[0]!r}: "
                                        "give one of them")
        changes["weights"] = weight[0]
    return request.replace(**changes)


def resolve_request(table: Any, request: Any, rda: RdaMetadata | None = None,
                    metadata: str | None = None) -> tuple[Any, Any, dict[str, Any], RoleContext]:
    """Every column's role for ``sdc protect``, turned into the request's fields.

    The command line and the plan first (a column given two roles: exit code 2); then,
    in a run without ``--columns`` or a plan, what the file and the ``.rda`` declare
    fills the roles left open (:func:`resolve_default`). The ``.rda``'s missing codes
    are made missing in every column that is grouped or used
    (:func:`apply_missing_codes`; passed-through, dropped and key columns are released
    as they are). What the values say is checked once the plan is built
    (:func:`microagg_cli.roles.check.check_roles`, given the returned context).

    Returns ``(table, request, declared_missing, context)``.
    """
    plan = request.plan
    if rda is not None:
        check_fits(rda, table.columns)
    named = explicit_roles(request, plan)
    declared = declared_roles(table, rda)
    request = _merge_plan_roles(request, plan)
    if plan is None and request.columns is None:
        changes = resolve_default(table, request, rda, declared)
        if changes:
            request = request.replace(**changes)
    counts: dict[str, Any] = {}
    original = table
    if rda is not None:
        run = request.run
        keep = set(request.passthrough or []) | set(request.drop or []) | set(run.keys or [])
        if plan is not None:
            keep |= set(plan.passthrough) | set(plan.drop)
        if request.id_column:
            keep.add(request.id_column)
        table, counts = apply_missing_codes(table, rda, [c for c in table.columns if c not in keep])
    return table, request, counts, RoleContext(named, declared, None if metadata is None else str(metadata), original)


def check_declared_missing(counts: Mapping[str, Any], protected: Sequence[str], missing: str, source: str) -> None:
    """Under ``--missing error``, a protected column holding codes the ``.rda`` declares
    missing is refused with the codes named (exit code 3)."""
    if missing != "error":
        return
    for c in protected:
        if c in counts:
            n = sum(v["count"] for v in counts[c].values())
            codes = ", ".join(counts[c])
            raise DataError(f"column {c!r} holds missing codes declared by {source} ({codes}) in {n} row(s); "
                            "they are missing, not numbers: use --missing complete (leave those records out) "
                            "or, without --categorical/--ordinal keys, --missing available (group on the observed "
                            "values)")
