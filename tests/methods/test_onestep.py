"""The ``onestep`` aggregation statistic (sdcMicro's measure="onestep")."""

from __future__ import annotations

import numpy as np
import pytest

from microagg_cli.protection import check_stat
from microagg_cli.errors import InvalidParameterError
from microagg_cli.partition import ONESTEP_C, aggregate, onestep

from conftest import run_cli


def _reference(v):
    """sdcMicro's loop: winsorize at median +- (3/1.486) * mad, then the mean."""
    v = np.asarray(v, dtype=float)
    m1 = np.median(v)
    m2 = 1.4826 * np.median(np.abs(v - m1))
    y = v.copy()
    y[y > m1 + 3 / 1.486 * m2] = m1 + 3 / 1.486 * m2
    y[y < m1 - 3 / 1.486 * m2] = m1 - 3 / 1.486 * m2
    return y.mean()


def test_constant_is_sdcmicros():
    assert ONESTEP_C == pytest.approx(2.018842530282638)


def test_hand_worked_outlier_is_pulled_in():
    # median 3, MAD 1 -> s = 1.4826; 100 is winsorized to 3 + 2.01884 * 1.4826
    v = np.array([1.0, 2.0, 3.0, 4.0, 100.0])
    expected = (1 + 2 + 3 + 4 + 3 + ONESTEP_C * 1.4826) / 5
    assert onestep(v) == pytest.approx(expected, rel=1e-12)
    assert onestep(v) < v.mean() - 15


def test_zero_mad_gives_the_median():
    assert onestep(np.array([5.0, 5.0, 5.0, 9.0, -40.0])) == 5.0


def test_symmetric_data_without_outliers_give_the_mean():
    v = np.array([-1.0, -0.5, 0.0, 0.5, 1.0])
    assert onestep(v) == pytest.approx(0.0)
    assert onestep(v + 7.0) == pytest.approx(7.0)


@pytest.mark.parametrize("seed", range(5))
def test_matches_the_sdcmicro_loop(seed):
    rng = np.random.default_rng(seed)
    v = np.concatenate([rng.normal(size=9), rng.normal(30, 5, size=2)])
    assert onestep(v) == pytest.approx(_reference(v), rel=1e-12)


def test_equivariance():
    v = np.random.default_rng(3).standard_t(2, size=12)
    assert onestep(3.0 * v - 2.0) == pytest.approx(3.0 * onestep(v) - 2.0, rel=1e-10)
    assert onestep(-v) == pytest.approx(-onestep(v), rel=1e-10)


def test_aggregate_uses_it_per_group_and_column():
    X = np.array([[1.0, 0.0], [2.0, 0.0], [3.0, 0.0], [4.0, 0.0], [100.0, 1.0],
                  [10.0, 5.0], [11.0, 5.0], [12.0, 5.0]])
    labels = np.array([0, 0, 0, 0, 0, 1, 1, 1])
    out = aggregate(X, labels, stat="onestep")
    assert out[:5, 0] == pytest.approx([onestep(X[:5, 0])] * 5)
    assert out[5:, 0].tolist() == [11.0] * 3
    assert out[:5, 1].tolist() == [0.0] * 5  # MAD 0: the median
    # missing cells stay missing, the rest of the group still aggregates
    Xm = X.copy()
    Xm[4, 0] = np.nan
    outm = aggregate(Xm, labels, stat="onestep")
    assert np.isnan(outm[4, 0]) and outm[0, 0] == pytest.approx(onestep(X[:4, 0]))


def test_check_stat_accepts_onestep_and_names_it():
    assert check_stat("onestep") == "onestep"
    with pytest.raises(InvalidParameterError, match="onestep"):
        check_stat("huber")


def test_cli_protect_with_onestep(tmp_path, census_path):
    out = tmp_path / "p.csv"
    res = run_cli("protect", census_path, "-o", out, "-k", "5", "--stat", "onestep", "-q")
    assert res.exit_code == 0, res.output
    res = run_cli("protect", census_path, "-o", tmp_path / "m.csv", "-k", "5", "-q")
    assert res.exit_code == 0, res.output
    a = np.loadtxt(out, delimiter=",", skiprows=1)
    b = np.loadtxt(tmp_path / "m.csv", delimiter=",", skiprows=1)
    assert a.shape == (1080, 13)
    assert (a != b).any()  # the groups are the same, the statistic is not the mean
