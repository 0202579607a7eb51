"""Published report schemas: shipped, printed by ``sdc schema``, versioned, and matched
by every report kind (the conftest also validates every report any test writes)."""

from __future__ import annotations

import hashlib
import json

import jsonschema
import pytest

from conftest import run_cli, validate_report_text
from microagg_cli import schemas
from microagg_cli.evaluation import EVALUATION_SCHEMA_VERSION
from microagg_cli.protection.run import REPORT_SCHEMA_VERSION
from microagg_cli.blocking import BLOCKS_SCHEMA_VERSION
from microagg_cli.comparison import COMPARE_SCHEMA_VERSION
from microagg_cli.roles import ROLES_SCHEMA_VERSION
from microagg_cli.keyrisk_table import RISK_SCHEMA_VERSION

VERSIONS = {"protect": REPORT_SCHEMA_VERSION, "evaluate": EVALUATION_SCHEMA_VERSION,
            "compare": COMPARE_SCHEMA_VERSION, "blocks": BLOCKS_SCHEMA_VERSION, "roles": ROLES_SCHEMA_VERSION,
            "risk": RISK_SCHEMA_VERSION}

#: kind -> (schema_version, SHA-256 of the schema's canonical JSON). A schema changes only
#: with its version: edit a schema, bump its version (MINOR: a field added; MAJOR: removed,
#: renamed or changed), then update this table and the CHANGELOG.
PINNED = {
    # 1.5: privacy_check.blocks / covered / not_covered (computed from the released rows)
    "protect": ("1.5", "f023ce8109abc2f32bfef6bb6ecf3b09372ec5129356c75c04a871b52402f0aa"),
    "evaluate": ("1.3", "7e345c3efe9df65a04f53f95122301b168813d5e249aeee9dbda5a7693eaebc4"),
    "compare": ("1.3", "3667b47ce2617436796532ca54b33883bb9b31c24295b68a513ec9ddbe3d2667"),
    "blocks": ("1.0", "ddda8deeb494e264bb244c173cc79b22387ce0530eb75f148b4f34490be48cb8"),
    "roles": ("1.1", "a8e025cb057da7cff5725917c3ab50c56e5deace3d8c98009044227097a89fee"),  # 1.1: metadata
    "risk": ("1.0", "78e9f54edd07c5cd823e883a918b0fd19cb7a3add12793ca34e1b6750d6860e5"),
}


def canonical_sha(kind: str) -> str:
    return hashlib.sha256(json.dumps(schemas.schema(kind), sort_keys=True).encode()).hexdigest()


@pytest.mark.parametrize("kind", schemas.KINDS)
def test_schema_is_valid_draft_2020_12_and_pins_the_code_version(kind):
    s = schemas.schema(kind)
    jsonschema.Draft202012Validator.check_schema(s)
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert s["properties"]["schema_version"] == {"const": VERSIONS[kind]}
    assert s["properties"]["command"] == {"const": kind}
    version, sha = PINNED[kind]
    assert version == VERSIONS[kind], f"{kind}: update PINNED after bumping the version"
    if sha is not None:
        assert canonical_sha(kind) == sha, f"the {kind} schema changed: bump its schema_version"


@pytest.mark.parametrize("kind", schemas.KINDS)
def test_sdc_schema_prints_the_shipped_file(kind):
    res = run_cli("schema", kind)
    assert res.exit_code == 0
    assert json.loads(res.stdout) == schemas.schema(kind)


def test_sdc_schema_unknown_kind_is_a_usage_error():
    res = run_cli("schema", "nope")
    assert res.exit_code == 2


def test_every_report_kind_validates(census_path, tmp_path):
    out, rep = tmp_path / "o.csv", tmp_path / "p.json"
    assert run_cli("protect", census_path, "-o", out, "-k", 3, "-r", rep, "-q", "--evaluate").exit_code == 0
    ev = tmp_path / "e.json"
    assert run_cli("evaluate", census_path, out, "-k", 3, "--report", ev, "-q",
                   "--max-scenarios", 8).exit_code == 0
    cmp = tmp_path / "c.json"
    assert run_cli("compare", census_path, "--methods", "mdav", "--k", "3", "--format", "json", "-o", cmp,
                   "-q", "--max-scenarios", 4).exit_code == 0
    res = run_cli("blocks", census_path, "--strategy", "correlated", "--size", 5, "-k", 3, "--evaluate",
                  "--max-known", 1, "--format", "json", "-q")
    assert res.exit_code == 0
    assert validate_report_text(res.stdout)
    for path, kind in ((rep, "protect"), (ev, "evaluate"), (cmp, "compare")):
        doc = json.loads(path.read_text())
        assert doc["command"] == kind
        schemas.validate(doc)


def test_a_report_missing_its_audit_fails(census_path, tmp_path):
    rep = tmp_path / "p.json"
    assert run_cli("protect", census_path, "-o", tmp_path / "o.csv", "-k", 3, "-r", rep, "-q").exit_code == 0
    doc = json.loads(rep.read_text())
    del doc["audit"]
    with pytest.raises(jsonschema.ValidationError):
        schemas.validate(doc)
    rep.unlink()  # (the fixture validates what is left in tmp_path)


def test_a_public_evaluate_report_cannot_hold_internal_details(census_path, tmp_path):
    prot = tmp_path / "o.csv"
    rep = tmp_path / "e.json"
    assert run_cli("protect", census_path, "-o", prot, "-k", 3, "-q").exit_code == 0
    assert run_cli("evaluate", census_path, prot, "-k", 3, "--report", rep, "-q", "--internal",
                   "--max-scenarios", 4).exit_code == 0
    doc = json.loads(rep.read_text())
    assert doc["internal"] is True and "internal_details" in doc
    schemas.validate(doc)
    doc["internal"] = False
    with pytest.raises(jsonschema.ValidationError):
        schemas.validate(doc)


@pytest.mark.parametrize("kind", schemas.KINDS)
def test_schema_id_names_its_version(kind):
    s = schemas.schema(kind)
    assert s["$id"].endswith(":" + VERSIONS[kind]), (s["$id"], VERSIONS[kind])
