"""``sdc evaluate --rmd-k/--rmd-k2/--linkage-distance/--linkage-exact-max``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import run_cli
from microagg_cli.metrics.linkage import LINKAGE_DISTANCES, LINKAGE_EXACT_MAX, linkage
from microagg_cli.metrics.rmd import RMD_K, RMD_K2, rmd_risk
from microagg_cli.request import LINKAGE_DISTANCE_NAMES, EvaluateRequest
from microagg_cli.errors import InvalidParameterError

COLUMNS = "AFNLWGT,AGI,EMCONTRB,FEDTAX,PTOTVAL,STATETAX"


def test_request_defaults_are_the_measures_defaults():
    r = EvaluateRequest()
    assert (r.rmd_k, r.rmd_k2, r.linkage_exact_max) == (RMD_K, RMD_K2, LINKAGE_EXACT_MAX)
    assert LINKAGE_DISTANCE_NAMES == LINKAGE_DISTANCES
    with pytest.raises(InvalidParameterError, match="--rmd-k must be"):
        EvaluateRequest(rmd_k=-1.0)
    with pytest.raises(InvalidParameterError, match="--linkage-distance"):
        EvaluateRequest(linkage_distance="cosine")


def test_plain_euclidean_linkage_sums_plain_distances():
    # three records where the two costs choose different assignments: the sum of plain
    # distances links every record to its own protected record, the sum of squares only one
    from scipy.optimize import linear_sum_assignment
    from scipy.spatial.distance import cdist

    X = np.array([[-2.7, -1.9], [-0.2, -0.4], [0.2, 0.2]])
    Xp = np.array([[-1.0, -2.8], [-0.5, 1.2], [0.7, 0.7]])
    assert linkage(X, Xp, distance="euclidean-plain") == pytest.approx(100.0)
    assert linkage(X, Xp, distance="euclidean") == pytest.approx(100.0 / 3)
    Z, Zp = (X - X.mean(0)) / X.std(0), (Xp - X.mean(0)) / X.std(0)
    for metric, want in (("euclidean", [0, 1, 2]), ("sqeuclidean", None)):
        rows, cols = linear_sum_assignment(cdist(Z, Zp, metric=metric))
        if want is not None:
            assert cols.tolist() == want
        else:
            assert cols.tolist() != [0, 1, 2]


def test_cli_options_reach_the_measures(census_path, census_matrix, tmp_path):
    prot = tmp_path / "p.csv"
    assert run_cli("protect", census_path, "-o", prot, "-k", 3, "--columns", COLUMNS, "-q").exit_code == 0
    res = run_cli("evaluate", census_path, prot, "--columns", COLUMNS, "--max-scenarios", 4, "--format", "json",
                  "-q", "--rmd-k", 0.5, "--rmd-k2", 0.2, "--linkage-distance", "euclidean-plain",
                  "--linkage-exact-max", 500)
    assert res.exit_code == 0, res.output
    risk = json.loads(res.stdout)["measures"]["risk"]
    assert risk["rmd"]["k"] == 0.5 and risk["rmd"]["k2"] == 0.2
    cols = [0, 1, 2, 3, 4, 5]
    Xp = np.loadtxt(prot, delimiter=",", skiprows=1)[:, cols]
    want = rmd_risk(census_matrix[:, cols], Xp, k=0.5, k2=0.2)
    assert risk["rmd"]["rmdid1"] == pytest.approx(want["rmdid1"])
    assert risk["linkage"]["distance"] == "euclidean-plain"
    assert risk["linkage"]["method"] == "windows" and risk["linkage"]["exact_max"] == 500
    bad = run_cli("evaluate", census_path, prot, "--columns", COLUMNS, "--rmd-k", -1, "-q")
    assert bad.exit_code == 2 and "--rmd-k must be" in bad.stderr
