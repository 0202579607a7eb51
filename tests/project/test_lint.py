"""The linter: ``ruff check`` with the rules of ``pyproject.toml`` passes on the repository.

ruff comes with the ``test`` extra (``pip install '.[test]'``, as CI does); where it is
missing the test is skipped rather than failed.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys


from conftest import ROOT


def test_ruff_check_passes():
    assert importlib.util.find_spec("ruff") is not None, "ruff is not installed (pip install '.[test]')"
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
