"""sdcMicro's robust and cluster-first sorts: mcdpca, pppca, clustpca, clustmcdpca,
clustpppca, influence."""

from __future__ import annotations

import numpy as np
import pytest

from microagg_cli.methods import METHODS
from microagg_cli.methods.rsorts import (
    _merge_small,
    clustmcdpca,
    clustpca,
    clustpppca,
    influence,
    kmeans,
    mcd_pc1,
    mcdpca,
    pp_pc1,
    pppca,
)
from microagg_cli.partition import canonical_labels, information_loss

_CLUSTER = (clustpca, clustmcdpca, clustpppca, influence)


def _rng(seed=0):
    return np.random.default_rng(seed)


def _line_with_outliers(n=60, seed=0):
    """Records on the line y = x (tiny noise) plus 5 gross outliers across it."""
    rng = _rng(seed)
    t = np.sort(rng.normal(size=n))
    X = np.column_stack([t, t + 1e-4 * rng.normal(size=n)])
    out = np.array([[8.0, -8.0], [9.0, -9.5], [-8.5, 8.0], [10.0, -10.0], [-9.0, 9.5]])
    return np.vstack([X, out]), n


def test_registered_with_nc_parameter():
    for name in ("mcdpca", "pppca"):
        assert METHODS[name].params == ()
    for name in ("clustpca", "clustmcdpca", "clustpppca", "influence"):
        assert [p.name for p in METHODS[name].params] == ["nc"]
        assert METHODS[name].validate_params({}) == {"nc": 8}


@pytest.mark.parametrize("axis", [mcd_pc1, pp_pc1])
def test_robust_axis_follows_the_bulk_not_the_outliers(axis):
    X, n = _line_with_outliers()
    s = axis(X)
    # the bulk is in increasing order along the robust axis (the line y = x)
    assert (np.diff(s[:n]) > 0).all()
    # classical PCA turns towards the outliers: the bulk is no longer in order
    C = np.cov(X, rowvar=False)
    w, V = np.linalg.eigh(C)
    classical = (X - X.mean(0)) @ V[:, -1]
    assert not ((np.diff(classical[:n]) > 0).all() or (np.diff(classical[:n]) < 0).all())


@pytest.mark.parametrize("method", [mcdpca, pppca])
def test_sorted_groups_are_consecutive_on_the_line(method):
    X, n = _line_with_outliers(n=30)
    labels = method(X[:n], 3)
    assert labels.tolist() == [i // 3 for i in range(n)]


@pytest.mark.parametrize("method", [mcdpca, pppca])
def test_outliers_do_not_break_the_bulk_groups(method):
    """With the outliers present, the bulk's records still group with their
    neighbours on the line (classical PCA would scramble them)."""
    X, n = _line_with_outliers(n=60, seed=3)
    labels = method(X, 3)
    bulk = labels[:n]
    # each group of bulk records spans consecutive positions on the line
    for g in np.unique(bulk):
        pos = np.flatnonzero(bulk == g)
        assert pos.max() - pos.min() <= pos.size + 4  # at most the 5 outliers interleave


def test_kmeans_finds_separated_clusters_and_is_seeded():
    rng = _rng(1)
    centres = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    X = np.vstack([c + 0.3 * rng.normal(size=(20, 2)) for c in centres])
    labels = kmeans(X, 3, rng=_rng(5))
    assert labels.tolist() == [0] * 20 + [1] * 20 + [2] * 20
    assert kmeans(X, 3, rng=_rng(5)).tolist() == labels.tolist()
    # more clusters than distinct rows: at most that many
    assert kmeans(np.array([[1.0], [1.0], [2.0]]), 5, rng=_rng()).max() == 1


def test_small_clusters_join_the_nearest():
    X = np.array([[0.0], [0.1], [0.2], [5.0], [9.0], [9.1], [9.2]])
    merged = _merge_small(X, np.array([0, 0, 0, 1, 2, 2, 2]), 3)
    # the singleton at 5.0 is nearer to 9.1 (distance 4.1) than to 0.1 (4.9)
    assert merged.tolist() == [0, 0, 0, 1, 1, 1, 1]


@pytest.mark.parametrize("method", _CLUSTER)
def test_no_group_mixes_two_clusters(method):
    rng = _rng(2)
    X = np.vstack([c + 0.2 * rng.normal(size=(13, 3)) for c in (np.zeros(3), np.full(3, 8.0))])
    labels = method(X, 3, rng=_rng(), nc=2)
    assert set(labels[:13]).isdisjoint(set(labels[13:]))
    sizes = np.bincount(labels)
    assert sizes.min() >= 3 and sizes.max() <= 5
    # 13 = 3 + 3 + 3 + 4 in each cluster
    assert sorted(sizes.tolist()) == [3, 3, 3, 3, 3, 3, 4, 4]


@pytest.mark.parametrize("method", _CLUSTER)
def test_nc_one_is_the_plain_sort(method):
    X = _rng(4).normal(size=(20, 3))
    labels = method(X, 4, rng=_rng(), nc=1)
    assert np.bincount(labels).tolist() == [4] * 5


def test_clustpca_nc1_equals_sorting_on_the_first_pc():
    from microagg_cli.methods.univariate import ufs

    X = _rng(6).normal(size=(30, 3))
    X = (X - X.mean(0)) / X.std(0)
    assert clustpca(X, 3, rng=_rng(), nc=1).tolist() == ufs(X, 3, order="fpc").tolist()


def test_influence_sorts_each_cluster_on_its_largest_centre_attribute():
    X = np.array([[0.0, 9.0], [0.2, 9.1], [0.1, 9.2], [0.3, 9.3],
                  [9.0, 0.0], [9.1, 0.2], [9.2, 0.1], [9.3, 0.3]])
    assert influence(X, 2, rng=_rng(), nc=2).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    # sorting each cluster on its other attribute would pair the records differently
    other = np.empty(8, dtype=np.int64)
    for c, j in ((np.arange(4), 0), (np.arange(4, 8), 1)):
        other[c[np.argsort(X[c, j], kind="stable")]] = c[0] // 2 + np.arange(4) // 2
    assert canonical_labels(other).tolist() == [0, 1, 0, 1, 2, 3, 2, 3]


@pytest.mark.parametrize("name", ["mcdpca", "pppca", "clustpca", "clustmcdpca", "clustpppca", "influence"])
def test_census_figures(name, census_z):
    labels = METHODS[name].func(census_z, 3, rng=_rng())
    assert labels.tolist() == canonical_labels(labels).tolist()
    il = information_loss(census_z, labels)
    # sorted methods on 13 attributes: worse than MDAV (5.69) but far from no grouping
    assert 5.69 < il < 40.0
