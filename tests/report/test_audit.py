"""The audit trail: a report alone lets a reviewer match the released file (hash), rerun
the command (argv, seed, versions) and see when and where it ran."""

from __future__ import annotations

import hashlib
import json
import platform
import shlex
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import run_cli
from microagg_cli import audit


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("ext", ["csv", "parquet"])
def test_protect_report_audit_fields(census_path, tmp_path, monkeypatch, ext):
    monkeypatch.chdir(tmp_path)
    before = datetime.now(timezone.utc)
    res = run_cli("protect", census_path, "-o", f"out.{ext}", "-k", 3, "-r", "rep.json", "-q", "-s", 7)
    after = datetime.now(timezone.utc)
    assert res.exit_code == 0, res.output
    rep = json.loads((tmp_path / "rep.json").read_text())
    a = rep["audit"]
    # the command line as run, paths as given
    assert a["argv"] == ["sdc", "protect", str(census_path), "-o", f"out.{ext}", "-k", "3", "-r", "rep.json",
                         "-q", "-s", "7"]
    assert a["entry"] == "cli" and a["cwd_name"] == tmp_path.name
    # when
    started = datetime.fromisoformat(a["started_utc"].replace("Z", "+00:00"))
    assert before.replace(microsecond=0) <= started.replace(microsecond=0) <= after
    assert 0 <= a["duration_seconds"] <= (after - before).total_seconds() + 0.01
    # with what
    import numba
    import pyarrow
    import scipy

    from microagg_cli import __version__

    v = a["versions"]
    assert v["python"] == platform.python_version() and v["sdc"] == __version__
    assert (v["numpy"], v["pandas"], v["pyarrow"], v["scipy"], v["numba"]) == (
        np.__version__, pd.__version__, pyarrow.__version__, scipy.__version__, numba.__version__)
    assert a["platform"] == platform.platform()
    # the released file: its hash is the file's
    out = tmp_path / f"out.{ext}"
    [f] = a["files"]
    assert f == {"role": "output", "path": f"out.{ext}", "name": f"out.{ext}",
                 "size_bytes": out.stat().st_size, "sha256": sha(out)}
    # rerun: the reproduce line gives the same bytes
    r = a["reproduce"]
    assert r["seed"] == 7 and r["reproducible"] is True and r["note"] is None
    args = shlex.split(r["command"])
    assert args[0] == "sdc" and args[-2:] == ["--seed", "7"] and "-s" not in args
    args = [("again." + ext if x == f"out.{ext}" else "rep2.json" if x == "rep.json" else x) for x in args[1:]]
    assert run_cli(*args).exit_code == 0
    assert (tmp_path / f"again.{ext}").read_bytes() == out.read_bytes()
    # no data value in the audit: only the listed fields
    assert set(a) == {"argv", "entry", "cwd_name", "started_utc", "duration_seconds", "versions", "platform",
                      "files", "reproduce"}


def test_forced_replacement_hashes_the_new_bytes_not_the_old_file(census_path, tmp_path):
    out, rep = tmp_path / "o.csv", tmp_path / "r.json"
    out.write_text("old content\n")
    res = run_cli("protect", census_path, "-o", out, "-k", 3, "-r", rep, "-q", "-f")
    assert res.exit_code == 0
    assert json.loads(rep.read_text())["audit"]["files"][0]["sha256"] == sha(out)


def test_seed_is_added_to_the_reproduce_line_when_not_given(census_path, tmp_path):
    rep = tmp_path / "r.json"
    assert run_cli("protect", census_path, "-o", tmp_path / "o.csv", "-k", 3, "-r", rep, "-q").exit_code == 0
    assert json.loads(rep.read_text())["audit"]["reproduce"]["command"].endswith(" --seed 0")


def test_library_call_records_python_entry(census_path, tmp_path):
    from microagg_cli import protect

    rep = protect(census_path, tmp_path / "o.csv", k=3)
    assert rep["audit"]["entry"] == "python"
    assert rep["audit"]["reproduce"]["command"] is None and rep["audit"]["reproduce"]["note"]
    assert rep["audit"]["files"][0]["sha256"] == sha(tmp_path / "o.csv")


def test_evaluate_records_the_protected_file_read(census_path, tmp_path):
    prot, rep, html = tmp_path / "p.csv", tmp_path / "e.json", tmp_path / "e.html"
    assert run_cli("protect", census_path, "-o", prot, "-k", 3, "-q").exit_code == 0
    res = run_cli("evaluate", census_path, prot, "-k", 3, "--report", rep, "--html", html, "-q",
                  "--max-scenarios", 4)
    assert res.exit_code == 0, res.output
    a = json.loads(rep.read_text())["audit"]
    assert a["files"][0] == {"role": "protected (read)", "path": str(prot), "name": "p.csv",
                             "size_bytes": prot.stat().st_size, "sha256": sha(prot)}
    # the HTML page is hashed in the JSON (written first, so its bytes are known)
    assert [f["role"] for f in a["files"]] == ["protected (read)", "HTML report"]
    assert a["files"][1]["sha256"] == sha(html) and a["files"][1]["size_bytes"] == html.stat().st_size
    assert a["argv"][:2] == ["sdc", "evaluate"]
    page = html.read_text()
    assert "Audit trail" in page and sha(prot) in page


def test_compare_lists_the_saved_files(census_path, tmp_path):
    saved, doc = tmp_path / "saved", tmp_path / "c.json"
    res = run_cli("compare", census_path, "--methods", "mdav", "--k", "3,5", "--format", "json", "-o", doc,
                  "--save-protected", saved, "-q", "--max-scenarios", 2)
    assert res.exit_code == 0, res.output
    files = json.loads(doc.read_text())["audit"]["files"]
    assert len(files) == 2
    for f in files:
        assert f["role"] == "protected (saved)" and f["sha256"] == sha(saved / f["name"])


def test_blocks_records_the_plan_written(census_path, tmp_path):
    plan = tmp_path / "plan.toml"
    res = run_cli("blocks", census_path, "--strategy", "correlated", "--size", 4, "-o", plan, "--format", "json",
                  "-q")
    assert res.exit_code == 0, res.output
    a = json.loads(res.stdout)["audit"]
    assert a["files"] == [{"role": "plan", "path": str(plan), "name": "plan.toml",
                           "size_bytes": plan.stat().st_size, "sha256": sha(plan)}]


def test_streamed_dataset_folder_lists_each_file(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from microagg_cli import protect

    src = tmp_path / "in"
    src.mkdir()
    rng = np.random.default_rng(0)
    for i in range(2):
        pq.write_table(pa.table({"a": rng.normal(size=30), "b": rng.normal(size=30)}), src / f"part-{i}.parquet")
    rep = protect(src, tmp_path / "out", k=3, columns=["a", "b"])
    [f] = rep["audit"]["files"]
    assert f["sha256"] is None and len(f["files"]) == 2
    for g in f["files"]:
        assert g["sha256"] == sha(tmp_path / "out" / g["name"])
    assert f["size_bytes"] == sum(g["size_bytes"] for g in f["files"])


def test_digesting_follows_a_seek_back():
    import io

    buf = io.BytesIO()

    def writer(fh):
        fh.write(b"abc")
        fh.seek(0)
        fh.write(b"x")

    audit.digesting("/nonexistent/x.bin", writer)(buf)
    # a writer that goes back is not hashed from the stream (the file on disk is used)
    assert audit.file_entry("/nonexistent/x.bin", "output")["sha256"] is None
