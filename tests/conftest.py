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
