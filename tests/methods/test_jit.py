"""numba in one place (:mod:`microagg_cli._jit`): cache location, compile notice, and
kernels compiled once per argument type."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np

from conftest import ROOT, SAMPLE, run_cli
from microagg_cli import _jit

NOTICE = "once per installation"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    env.update(extra)
    return env


# ------------------------------------------------------------------ cache location
def test_user_setting_of_numba_cache_dir_is_kept(tmp_path):
    environ = {"NUMBA_CACHE_DIR": str(tmp_path / "mine")}
    assert _jit.cache_dir_override(tmp_path, environ, writable=lambda _p: False) is None
    assert _jit.cache_dir_override(tmp_path, {"NUMBA_CACHE_DIR": ""}, writable=lambda _p: False) is None


def test_writable_package_keeps_numba_in_tree_cache(tmp_path):
    assert _jit.cache_dir_override(tmp_path, {}) is None
    assert (tmp_path / "methods" / "__pycache__").is_dir()


def test_unwritable_package_falls_back_to_the_user_cache(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")  # nothing can be created below a file, not even by root
    package = blocker / "microagg_cli"
    xdg = tmp_path / "xdg"
    assert _jit.cache_dir_override(package, {"XDG_CACHE_HOME": str(xdg)}) == xdg / "microagg-cli" / "numba"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _jit.cache_dir_override(package, {}) == tmp_path / "home" / ".cache" / "microagg-cli" / "numba"
    # one unwritable kernel folder is enough
    seen = []
    assert _jit.cache_dir_override(tmp_path, {}, writable=lambda p: seen.append(p) or "metrics" not in str(p))
    assert {p.parent.name for p in seen} == {tmp_path.name, "methods", "metrics"}  # the package: _select


def test_read_only_install_caches_in_the_user_cache_dir(tmp_path):
    """A copy of the package whose kernel folders cannot take a cache (``__pycache__`` is
    a file): a fresh process sets NUMBA_CACHE_DIR before numba is imported and the
    kernels are cached under $XDG_CACHE_HOME/microagg-cli/numba."""
    site = tmp_path / "site"
    shutil.copytree(ROOT / "microagg_cli", site / "microagg_cli", ignore=shutil.ignore_patterns("__pycache__"))
    (site / "microagg_cli" / "methods" / "__pycache__").write_text("read-only stand-in")
    kernel = tmp_path / "kernel_mod.py"
    kernel.write_text(textwrap.dedent("""
        from microagg_cli._jit import njit

        @njit(cache=True, nogil=True)
        def twice(x):
            return 2 * x
    """))
    script = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(tmp_path)!r})
        import microagg_cli._jit
        assert microagg_cli._jit.__file__.startswith({str(site)!r}), microagg_cli._jit.__file__
        import numba
        import kernel_mod
        assert kernel_mod.twice(21) == 42
        print(os.environ["NUMBA_CACHE_DIR"])
        print(numba.config.CACHE_DIR)
    """)
    xdg = tmp_path / "xdg"
    env = _env(PYTHONPATH=str(site), XDG_CACHE_HOME=str(xdg))
    res = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300,
                         cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    target = xdg / "microagg-cli" / "numba"
    assert res.stdout.split() == [str(target), str(target)]
    assert list(target.rglob("kernel_mod.twice-*.nbi")), sorted(map(str, target.rglob("*")))

    # the user's own NUMBA_CACHE_DIR wins
    mine = tmp_path / "mine"
    env = _env(PYTHONPATH=str(site), XDG_CACHE_HOME=str(xdg), NUMBA_CACHE_DIR=str(mine))
    res = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300,
                         cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == [str(mine), str(mine)]


# ------------------------------------------------------------------ compile notice
def test_notice_once_per_process_named_after_the_family(monkeypatch):
    monkeypatch.setattr(_jit, "_announced", [])
    assert _jit._notice("numba.np.arraymath") is None  # numba's own helpers: not ours
    assert _jit._notice("microagg_cli.methods._fast_mdav") == (
        "compiling fast MDAV kernels, once per installation, about 10 s (`sdc self-test --all` does it ahead of time)")
    assert _jit._notice("microagg_cli.methods._cones") is None
    assert _jit._notice("microagg_cli.methods.refine") is None
    monkeypatch.setattr(_jit, "_announced", [])
    assert _jit._notice("microagg_cli.methods.refine") == (
        "compiling refine kernels, once per installation (`sdc self-test --all` does it ahead of time)")
    # kernels in their own modules are announced by the family that calls them
    monkeypatch.setattr(_jit, "_announced", [])
    assert _jit._notice("microagg_cli.metrics._cg_kernels") == (
        "compiling cg_bound kernels, once per installation (`sdc self-test --all` does it ahead of time)")
    monkeypatch.setattr(_jit, "_announced", [])
    assert _jit._notice("microagg_cli.methods._refine_kernels") == (
        "compiling refine kernels, once per installation (`sdc self-test --all` does it ahead of time)")


def test_cli_says_so_before_a_cold_compile_only(tmp_path):
    """Cold cache: one notice line (none with -q); warm cache: none."""
    cache = tmp_path / "cache"
    args = [sys.executable, "-m", "microagg_cli", "protect", str(SAMPLE / "census.csv"), "-o",
            str(tmp_path / "out.csv"), "-k", "3", "--method", "pcp", "--force"]
    env = _env(NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))

    quiet = subprocess.run([*args, "-q"], env=_env(NUMBA_CACHE_DIR=str(tmp_path / "other"), PYTHONPATH=str(ROOT)),
                           capture_output=True, text=True, timeout=600)
    assert quiet.returncode == 0, quiet.stderr
    assert NOTICE not in quiet.stderr

    cold = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    assert cold.returncode == 0, cold.stderr
    lines = [line for line in cold.stderr.splitlines() if NOTICE in line]
    assert len(lines) == 1 and "compiling contiguous kernels" in lines[0], cold.stderr

    warm = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    assert warm.returncode == 0, warm.stderr
    assert NOTICE not in warm.stderr


def test_lb_nn_policy_does_not_depend_on_compiling_or_timing(tmp_path, monkeypatch):
    """The LB_NN budget is a share of the method's *estimated* seconds (its MethodSpec
    cost model, from n, p and k), so numba's compiling during the method -- here a
    compile clock that says 10^6 s or nothing -- cannot change the report's choice."""
    from microagg_cli.methods import get_method
    from microagg_cli.protection import block as block_module

    def policy(compiled: float) -> dict:
        clock = iter([0.0, compiled])
        monkeypatch.setattr(block_module, "compile_seconds", lambda: next(clock))
        report = tmp_path / f"rep-{compiled}.json"
        res = run_cli("protect", SAMPLE / "census.csv", "-o", tmp_path / "out.csv", "-k", 3, "--method", "pcp",
                      "--report", report, "--force", "-q")
        assert res.exit_code == 0, res.stderr
        (block,) = json.loads(report.read_text())["blocks"]
        return block["lb_nn_policy"]

    quick, slow = policy(0.0), policy(1e6)
    assert quick.pop("seconds") > 0 and slow.pop("seconds") > 0  # the bound's own time, reported
    assert quick == slow
    assert quick["method_seconds"] == get_method("pcp").estimate_seconds(1080, 13, 3)


# ------------------------------------------------------------------ one place, one type
def test_kernel_modules_take_njit_from_the_jit_module():
    for path in sorted((ROOT / "microagg_cli" / "methods").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert "from numba import" not in text and "import numba" not in text, path.name


def test_fast_mdav_core_compiles_once_whatever_the_input_types(rng):
    from microagg_cli.methods import _fast_mdav as fm

    X = rng.standard_normal((300, 4))
    want = fm.mdav_fast(X, 3)
    for variant, k in ((np.asfortranarray(X), 3), (X.astype(np.float32).astype(np.float64), np.int32(3)),
                       (X[::1, :], np.int64(3))):
        fm.mdav_fast(variant, k)
    assert len(fm._mdav_core.signatures) == 1
    assert np.array_equal(fm.mdav_fast(np.asfortranarray(X), np.int32(3)), want)


# ------------------------------------------------------------------ numba on use
def test_numba_is_imported_only_when_a_kernel_runs():
    """Importing the CLI, the API and every method family loads no numba (0.15-0.3 s);
    the first kernel call loads it and leaves dispatchers, not placeholders, in every
    module of the package (numba reads kernels that call kernels from the globals)."""
    code = textwrap.dedent("""
        import sys
        import microagg_cli.cli, microagg_cli.api, microagg_cli.methods
        from microagg_cli.methods import univariate, _fast_mdav
        from microagg_cli._jit import Kernel
        assert "numba" not in sys.modules, "numba imported before any kernel ran"
        assert isinstance(_fast_mdav._mdav_core, Kernel)
        import numpy as np
        sizes = univariate.optimal_contiguous_sizes(np.arange(10.0), 3)
        assert sizes.tolist() == [4, 3, 3], sizes
        assert "numba" in sys.modules
        left = [(name, attr) for name, mod in list(sys.modules.items()) if name.startswith("microagg_cli")
                for attr, value in vars(mod).items() if isinstance(value, Kernel)]
        assert not left, left
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
