"""The role check of every ``sdc protect`` run: nothing averaged, released or keyed by accident.

Run once the roles are final (options, plan, file metadata, ``.rda``) and the plan is
built, whatever was declared. Each column is held against its own evidence
(:func:`microagg_cli.roles.evidence.column_evidence`):

- a column about to be **averaged** (continuous) whose values look like a code, an
  identifier, a weight or a date;
- a column about to be **released unchanged** (passthrough, the default for text and for
  the columns left out of ``--columns``) that looks like an identifier (unique or nearly
  unique per record) or a key (a few levels, each shared by several records);
- a **key** (categorical or ordinal) that the file's metadata made one while its values
  say identifier or weight, or that is unique per record (an identifier, not a key;
  ``allow_unique_keys`` accepts it);

is refused before any work (:class:`~microagg_cli.errors.DataError`, exit code 3), each
column named with its evidence and the one option that settles it. Only a column the
user *named* for its role (``--columns``, ``--passthrough``, ``--keys``, a plan's block
or ``[roles]``) is exempt from the first two checks: defaults and file metadata are
evidence, never permission (an SPSS measure level *scale* or an ``.rda`` ``<NUMERIC>``
that disagrees with the values is named as a disagreement).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..errors import DataError
from ..readings import option_list
from .evidence import MIN_VALUES, Evidence, column_evidence, numeric_why, release_suspect

__all__ = ["RoleContext", "Finding", "check_roles", "finish_roles", "findings_message", "shown_path"]


@dataclass
class RoleContext:
    """What the user named (``{column: (role, source)}``) and what the file declares
    (``{column: (role, by what)}``), kept from role resolution for the check."""

    named: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    declared: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    metadata: str | None = None  # the --metadata file as given (repeated in advice)
    original: Any = None  # the table as read, before the .rda's missing codes were blanked


#: What settles each finding: the option (given every column of its kind at once) and what it does.
_ADVICE = {
    ("averaged", "code"): ("--categorical", "protect as keys, released as each group's mode"),
    ("averaged", "identifier"): ("--drop", "remove; or --id-column COL to keep one"),
    ("averaged", "weight"): ("--weights", "the sampling weight: one column"),
    ("averaged", "second weight"): ("--passthrough", "released unchanged: the run has its weight already"),
    ("averaged", "date"): ("--passthrough", "release unchanged; or --columns to protect them as dates"),
    ("released", "identifier"): ("--drop", "remove; or --passthrough to release them on purpose"),
    ("released", "key"): ("--categorical", "protect as keys; or --passthrough to release them on purpose"),
    ("key", "unique"): ("--drop", "remove; or --allow-unique-keys to group on them anyway"),
    ("key", "identifier"): ("--drop", "remove; or --categorical to keep them keys on purpose"),
    ("key", "weight"): ("--weights", "the sampling weight; or --categorical to keep it a key on purpose"),
}
_WHAT = {"averaged": "would be averaged", "released": "would be released unchanged",
         "key": "would be grouped on as keys"}


@dataclass
class Finding:
    """One column that its evidence refuses for its role."""

    column: str
    action: str  # averaged | released | key
    kind: str  # code | identifier | weight | date | key | unique
    why: str


def shown_path(table: Any) -> str:
    """The input's path as a shell word (``INPUT`` for a frame or stdin)."""
    import shlex

    return shlex.quote(str(table.path)) if table.path is not None else "INPUT"


def findings_message(findings: list[Finding], table: Any, metadata: str | None, *, available: bool = False) -> str:
    """One line: the columns grouped by what would happen to them, each group with the
    option that settles it (every column of the group in one option)."""
    parts = []
    for (action, kind), (option, does) in _ADVICE.items():
        group = [f for f in findings if f.action == action and f.kind == kind]
        if not group:
            continue
        cols = ", ".join(f"{f.column} ({f.why})" for f in group)
        names = [f.column for f in group]
        if option == "--weights" and len(names) > 1:  # one weight: the others pass through
            fix = f"--weights {option_list(names[:1])} --passthrough {option_list(names[1:])} (one sampling weight)"
        else:
            fix = f"{option} {option_list(names)} ({does})"
        if option == "--categorical" and available:  # keys group complete records only: never a refused hint
            fix = f"{option} {option_list(names)} with --missing complete ({does})"
        parts.append(f"{_WHAT[action]}: {cols} -> {fix}")
    meta = f" --metadata {metadata}" if metadata else ""
    return (f"{len(findings)} column(s) look like codes, identifiers, weights, keys or dates against the role they "
            f"would get; " + "; ".join(parts) + ". Declare each role as shown, or write a roles file with "
            f"`sdc roles {shown_path(table)}{meta} -o roles.toml`, check it and pass it with --plan")


def check_roles(table: Any, request: Any, plan: Any, context: RoleContext, *,
                evidence_of: Callable[[str], Evidence] | None = None) -> dict[str, Any]:
    """Hold every column of ``table`` against its evidence before ``plan`` runs.

    Returns the coverage of the k check for the report: ``{"covered": [...],
    "not_covered": [...]}`` (protected columns, keys and strata are covered; columns
    released unchanged are not).

    Raises
    ------
    DataError : one line naming every column that would be averaged, released or keyed
        against its evidence, each with the option that settles it (exit code 3).

    ``evidence_of(name)``: a column's :class:`Evidence` (default: read from ``table``; the
    streaming path reads one column at a time).
    """
    run = request.run
    keys = list(run.categorical or []) + list(run.ordinal or [])
    averaged = [c for c in plan.columns if c not in keys]
    dropped = set(plan.drop)
    roles_kept = set(run.strata or []) | set(run.keys or []) | {c for c in (run.weights, request.id_column) if c}
    released = [c for c in table.columns if c not in set(averaged) | set(keys) | dropped | roles_kept]
    named = context.named
    findings: list[Finding] = []
    cache: dict[str, Evidence] = {}

    def evidence(c: str) -> Evidence:
        if c not in cache:
            cache[c] = column_evidence(table, c) if evidence_of is None else evidence_of(c)
        return cache[c]

    present_columns = set(table.columns)
    for option, cols in (("--categorical", run.categorical), ("--ordinal", run.ordinal), ("--strata", run.strata),
                         ("--keys", run.keys), ("--weights", [run.weights] if run.weights else [])):
        for c in cols or []:
            if c not in present_columns:
                raise DataError(f"{option}: no column {c!r} in the input")
    averaged = [c for c in averaged if c in present_columns]
    keys = [c for c in keys if c in present_columns]
    for c in averaged:
        if named.get(c, ("",))[0] == "continuous":
            continue
        ev = evidence(c)
        if ev.suspect not in ("code", "identifier", "weight", "date"):
            continue
        why = f"a date, {ev.date_format or ev.storage}" if ev.suspect == "date" else numeric_why(ev)
        declared = context.declared.get(c)
        if declared is not None and declared[0] == "continuous":
            why = f"{declared[1]} says continuous, but the values suggest {ev.suspect}: {why}"
        kind = "second weight" if ev.suspect == "weight" and run.weights else str(ev.suspect)
        findings.append(Finding(c, "averaged", kind, why))
    for c in released:
        if named.get(c, ("",))[0] in ("passthrough", "identifier", "key", "stratum", "weight"):
            continue
        ev = evidence(c)
        suspect = release_suspect(ev)
        role, by = context.declared.get(c, ("", ""))
        if suspect is None and role in ("categorical", "ordinal"):
            suspect = ("key", f"declared {role} by {by}")
        elif role == "identifier":
            suspect = ("identifier", f"declared an identifier by {by}")
        if suspect is not None:
            kind, why = suspect
            if kind == "key" and ev.kind == "numeric" and ev.suspect == "identifier":
                kind = "identifier"
            findings.append(Finding(c, "released", kind, why))
    for c in keys:
        ev = evidence(c)
        present = ev.rows - ev.missing
        if not request.allow_unique_keys and ev.distinct is not None and ev.distinct >= present >= MIN_VALUES:
            findings.append(Finding(c, "key", "unique", f"{ev.distinct} distinct values in {present} records: "
                                                        "unique per record, an identifier"))
            continue
        if c in named:
            continue
        declared = context.declared.get(c)
        if declared is not None and ev.suspect in ("identifier", "weight"):
            findings.append(Finding(c, "key", str(ev.suspect), f"{declared[1]} says {declared[0]}, but the values "
                                                               f"suggest {ev.suspect}: {numeric_why(ev)}"))
    if findings:
        raise DataError(findings_message(findings, table, context.metadata, available=run.missing == "available"))
    covered = averaged + keys + list(run.strata or []) + list(run.keys or [])
    not_covered = list(released) + [c for c in (run.weights, request.id_column) if c]
    return {"covered": covered, "not_covered": not_covered}


def finish_roles(table: Any, request: Any, plan: Any, context: RoleContext,
                 counts: Mapping[str, Any]) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """The role check (:func:`check_roles`), then every column released unchanged put back
    as it was read: the ``.rda``'s missing codes are read as missing only in protected,
    key, stratum and weight columns, so a passed-through column is released byte for
    byte. Returns ``(table, declared_missing, coverage)``."""
    coverage = check_roles(table, request, plan, context)
    original = context.original
    restore = [c for c in coverage["not_covered"] if c in counts and c != request.run.weights]
    if original is None or original is table or not restore:
        return table, dict(counts), coverage
    data = table.data
    for c in restore:
        data = data.set_column(data.column_names.index(c), original.data.schema.field(c), original.data.column(c))
    return table.with_data(data), {c: v for c, v in counts.items() if c not in restore}, coverage
