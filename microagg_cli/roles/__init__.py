"""Roles: what each column of a microdata file is, decided once.

Every column has exactly one role:

- ``continuous`` -- a numerical attribute, microaggregated;
- ``categorical`` -- a nominal key (grouped with the continuous attributes, released as
  each group's mode);
- ``ordinal`` -- an ordered key (grouped by rank, released as each group's median
  category);
- ``weight`` -- the sampling weight (at most one);
- ``stratum`` -- groups never mix its values;
- ``identifier`` -- removed from the output;
- ``passthrough`` -- released unchanged, on purpose.

Where a role comes from, most binding first:

1. the command line (``--columns``, ``--categorical``, ``--ordinal``, ``--keys``,
   ``--weights``, ``--strata``, ``--drop``, ``--passthrough``, ``--id-column``) and the
   plan file's ``[roles]`` table: one source; a column given two roles there is a usage
   error (exit code 2) naming it;
2. the file's own metadata: SPSS measure level (nominal, ordinal, scale), value labels
   on codes that are not declared missing (SPSS, Stata), the SPSS weight variable, an
   Arrow dictionary or pandas categorical column (Parquet; ordered: ordinal);
3. a mu-ARGUS metadata file (``--metadata FILE.rda``): ``<RECODABLE>`` a categorical
   key, ``<NUMERIC>`` continuous, ``<WEIGHT>`` the weight, ``<HOUSE_ID>`` an
   identifier, the codes after the width declared missing (:func:`parse_rda`). An SPSS
   measure level *scale* gives way to it, since SPSS marks numeric variables scale
   unless told otherwise.

Inference never decides a role: :func:`propose_roles` (``sdc roles``) proposes one
per column with its evidence, and :func:`check_roles` holds every column of every run
against its evidence once the roles are final, whatever was declared: a column about
to be averaged that looks like a code, a weight, an identifier or a date, a column
about to be released unchanged that looks like an identifier or a key, and a key that
is unique per record (or that metadata made a key against its values) are refused
before any work, each named with the option that settles it. Only a column the user
named for its role is exempt; file metadata is evidence, never permission.

The package: :mod:`.rda` (mu-ARGUS metadata files), :mod:`.evidence` (what a column
shows), :mod:`.resolve` (the roles of a run), :mod:`.propose` (``sdc roles``),
:mod:`.dates` (dates released as dates). It imports the reading layer
(:mod:`microagg_cli.io`) and nothing above it.
"""

from __future__ import annotations

from .check import RoleContext, check_roles, finish_roles
from .dates import DateColumn, prepare_dates, release_dates
from .evidence import (
    CODE_MAX_DISTINCT,
    CODE_MIN_REPEATS,
    MIN_VALUES,
    ROLES,
    Evidence,
    column_evidence,
    date_format,
    declared_roles,
    file_declarations,
    name_hint,
    release_suspect,
    strong_name_hint,
)
from .propose import ROLES_SCHEMA_VERSION, propose_roles, roles_to_dict, roles_to_toml
from .rda import RdaMetadata, RdaVariable, load_rda, parse_rda
from .resolve import (
    apply_missing_codes,
    check_declared_missing,
    explicit_roles,
    resolve_default,
    resolve_request,
)

__all__ = [
    "ROLES",
    "ROLES_SCHEMA_VERSION",
    "MIN_VALUES",
    "CODE_MAX_DISTINCT",
    "CODE_MIN_REPEATS",
    "RdaMetadata",
    "RdaVariable",
    "parse_rda",
    "load_rda",
    "Evidence",
    "column_evidence",
    "date_format",
    "name_hint",
    "file_declarations",
    "declared_roles",
    "explicit_roles",
    "resolve_default",
    "resolve_request",
    "apply_missing_codes",
    "check_declared_missing",
    "propose_roles",
    "roles_to_toml",
    "roles_to_dict",
    "RoleContext",
    "check_roles",
    "finish_roles",
    "release_suspect",
    "strong_name_hint",
    "DateColumn",
    "prepare_dates",
    "release_dates",
]
