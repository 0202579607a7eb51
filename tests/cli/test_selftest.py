"""``sdc self-test``: warm-up and check of the compiled kernels (the first run after installation)."""

from __future__ import annotations

import ast
import json

import numpy as np

from conftest import ROOT, run_cli
from microagg_cli import selftest
from microagg_cli.methods import METHODS


def test_default_checks_fast_mdav_against_the_reference():
    result = run_cli("self-test")
    assert result.exit_code == 0, result.output
    assert result.stdout == ""  # the table goes to stderr
    line = next(ln for ln in result.stderr.splitlines() if ln.startswith("mdav"))
    assert " ok " in line and "fast MDAV = reference MDAV (2,500 x 4, ties)" in line
    assert "kernels cached in" in result.stderr


def test_json_results_on_stdout():
    result = run_cli("self-test", "kward,optimal-1d", "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["passed"] is True and [c["method"] for c in doc["checks"]] == ["kward", "optimal-1d"]
    assert doc["checks"][1]["check"] == ("groups of >= 3 covering all 400 records (400 x 1), its three "
                                         "solvers agree (k = 10), SSE <= MDAV's")
    assert all(isinstance(c["kernels_compiled"], int) and c["kernels_compiled"] >= 0 for c in doc["checks"])


def test_every_compiled_method_passes():
    results = selftest.run_self_test(selftest.COMPILED_METHODS)
    assert [r.method for r in results] == list(selftest.COMPILED_METHODS)
    assert all(r.passed for r in results), [r for r in results if not r.passed]


def test_every_kernel_module_is_covered():
    """Each method module with compiled kernels has a method in COMPILED_METHODS (mdav
    stands for _fast_mdav and _cones, optimal-1d for _monge), so --all warms every
    kernel a method uses."""
    kernel_modules = set()
    for path in (ROOT / "microagg_cli" / "methods").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(n, ast.ImportFrom) and n.module == "_jit" for n in ast.walk(tree)):
            kernel_modules.add(f"microagg_cli.methods.{path.stem}")
    covered = {METHODS[m].func.__module__ for m in selftest.COMPILED_METHODS}
    covered |= {"microagg_cli.methods._fast_mdav", "microagg_cli.methods._cones"}
    covered |= {"microagg_cli.methods._monge"}  # optimal-1d's check runs its solvers
    covered |= {"microagg_cli.methods._contiguous"}  # so do optimal-1d's, pcp's, mhm's, genetic's
    covered |= {"microagg_cli.methods._mixed_kernels", "microagg_cli.methods.mixed_refine"}  # the mixed check
    covered |= {"microagg_cli.methods._refine_kernels"}  # ils's and mdav-ls's
    assert kernel_modules and kernel_modules <= covered, kernel_modules - covered


def test_a_wrong_kernel_result_fails_with_exit_code_1(monkeypatch):
    from microagg_cli.methods import fixed_size

    real = fixed_size.mdav_reference
    monkeypatch.setattr(fixed_size, "mdav_reference", lambda X, k: np.roll(real(X, k), 1))
    result = run_cli("self-test")
    assert result.exit_code == 1
    assert "FAILED" in result.stderr and "partitions differ in" in result.stderr
    assert "Error: self-test failed for mdav: partitions differ" in result.stderr


def test_a_too_small_group_fails(monkeypatch):
    class Spec:
        max_columns = None

        @staticmethod
        def func(X, k, *, rng=None, **params):
            labels = np.zeros(X.shape[0], dtype=np.int64)
            labels[-1] = 1  # a group of one record
            return labels

    monkeypatch.setattr(selftest, "get_method", lambda name: Spec)
    (res,) = selftest.run_self_test(["kward"])
    assert not res.passed and res.message == "a group of 1 record(s), below k = 3"


def test_method_without_kernels_is_a_usage_error():
    result = run_cli("self-test", "md")
    assert result.exit_code == 2
    assert "'md' has no compiled kernels to check" in result.stderr


def test_all_runs_the_risk_kernels_check_and_it_can_fail(monkeypatch):
    """``--all`` ends with ``risk`` (the kernels of sdc evaluate); a layered DLD that
    credits without proof (a margin tolerance below zero) fails it against brute force."""
    assert selftest.ALL_CHECKS[-1] == "risk" and set(selftest.COMPILED_METHODS) < set(selftest.ALL_CHECKS)
    (ok,) = selftest.run_self_test(["risk"])
    assert ok.passed and "DLD by layers" in ok.check
    from microagg_cli.metrics import risk

    monkeypatch.setattr(risk.distance_linkage, "_DLD_MARGIN_TOL", -1.0)
    (bad,) = selftest.run_self_test(["risk"])
    assert not bad.passed and "DLD of scenario" in bad.message


def test_mixed_check_passes_and_can_fail(monkeypatch):
    """``mixed`` checks heterogeneous MDAV and its local search; a search that returns a
    worse grouping (records rotated between groups) fails it."""
    (ok,) = selftest.run_self_test(["mixed"])
    assert ok.passed and "mixed MDAV" in ok.check
    from microagg_cli.methods import mixed_refine

    monkeypatch.setattr(mixed_refine, "mixed_local_search", lambda X, labels, k, **kw: np.roll(labels, 1))
    (bad,) = selftest.run_self_test(["mixed"])
    assert not bad.passed and "raised the mixed objective" in bad.message
    monkeypatch.undo()
    monkeypatch.setattr(mixed_refine, "mixed_ils", lambda X, labels, k, **kw: np.roll(labels, 1))
    (bad,) = selftest.run_self_test(["mixed"])
    assert not bad.passed and "ils's kicks raised the mixed objective" in bad.message
