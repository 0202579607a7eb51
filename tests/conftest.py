"""Shared fixtures: random generators, small matrices, sample files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data"

#: Published MDAV reference figures on Census (13 attributes, one block).
CENSUS_MDAV_IL = {3: 5.6922, 4: 7.4947, 5: 9.0884, 10: 14.1559}
#: The valid lower bound LB_NN on Census.
CENSUS_LB_NN = {3: 3.4438, 4: 4.3231, 5: 5.0168, 10: 7.3363}


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


@pytest.fixture(scope="session")
def census_path() -> Path:
    return SAMPLE / "census.csv"


@pytest.fixture(scope="session")
def census_matrix() -> np.ndarray:
    return np.loadtxt(SAMPLE / "census.csv", delimiter=",", skiprows=1)


@pytest.fixture(scope="session")
def census_z(census_matrix) -> np.ndarray:
    from microagg_cli.partition import zscore

    return zscore(census_matrix)[0]


def run_cli(*args, input=None):
    """Run ``sdc ARGS...`` in-process (CliRunner); arguments may be paths or numbers."""
    from click.testing import CliRunner

    from microagg_cli.cli import cli

    return CliRunner().invoke(cli, [str(a) for a in args], input=input)


def only_error_line(result) -> str:
    """The single ``Error: ...`` line on stderr (asserts there is exactly one, no traceback)."""
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: ")
    assert "Traceback" not in result.output
    return lines[0]
