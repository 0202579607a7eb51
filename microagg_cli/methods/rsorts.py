"""Robust and cluster-first sorts of the R package sdcMicro (parity).

Every method here orders the records on one axis -- the first robust principal
component (MCD or projection pursuit), or, inside clusters found first, a principal
component or the cluster's most influential variable -- and cuts the order into
groups of k consecutive records, the last group taking the remainder (k..2k-1). The
cluster-first methods cut each cluster's order on its own, so no group mixes two
clusters.

Clustering is k-means (Lloyd) started by k-means++ with the method's ``rng``;
sdcMicro's default is ``clara`` (PAM on subsamples), which has no seed of ours and
costs O(n^2) for PAM proper. A cluster with fewer than k records joins the cluster
whose centroid is nearest to its own (smallest first, repeatedly).
"""

from __future__ import annotations

import numpy as np

from ..partition import canonical_labels
from ._common import check_k
from ..progress import advance
from ._spec import CostModel, MethodSpec, ParamSpec, method_contract
from ..mcd import det_mcd

__all__ = [
    "mcdpca",
    "pppca",
    "clustpca",
    "clustmcdpca",
    "clustpppca",
    "influence",
    "kmeans",
    "mcd_pc1",
    "pp_pc1",
    "SPECS",
]

#: At most this many candidate directions in the projection-pursuit search.
_MAX_CANDIDATES = 1000
#: Lloyd iterations of k-means at most.
_KMEANS_ITER = 100


# ---------------------------------------------------------------------------------
# axes


def _sign(v: np.ndarray) -> np.ndarray:
    """The house sign convention: the largest-magnitude loading is positive (first on ties)."""
    j = int(np.argmax(np.abs(v)))
    return v if v[j] > 0 else -v


def _project(X: np.ndarray, centre: np.ndarray, v: np.ndarray) -> np.ndarray:
    # element-wise sum, no BLAS: equal rows get bit-identical scores
    return np.einsum("ij,j->i", X - centre, v)


def mcd_pc1(X: np.ndarray) -> np.ndarray:
    """Scores on the first robust principal component (MCD covariance).

    The centre and scatter are :func:`robust.det_mcd`'s reweighted MCD; the axis is
    the scatter's leading eigenvector (largest-magnitude loading positive); a score
    is the record's distance from the MCD centre along it.

    Examples
    --------
    Six records along the diagonal and one outlier across it: the robust axis follows
    the six (the outlier lands at one end), the classical first component turns
    towards the outlier and scrambles the six.

    >>> X = np.array([[0.0, 0.0], [1.0, 1.1], [2.0, 1.9], [3.0, 3.2], [4.0, 3.9],
    ...               [5.0, 5.1], [30.0, -30.0]])
    >>> np.argsort(mcd_pc1(X), kind="stable").tolist()
    [6, 0, 1, 2, 3, 4, 5]
    >>> np.argsort(_pc1(X), kind="stable").tolist()
    [6, 4, 5, 2, 3, 1, 0]
    """
    X = np.asarray(X, dtype=np.float64)
    if X.shape[1] == 1:
        return X[:, 0] - det_mcd(X)[0][0]
    centre, S = det_mcd(X)
    w, V = np.linalg.eigh((S + S.T) / 2.0)
    return _project(X, centre, _sign(V[:, int(np.argmax(w))]))


def pp_pc1(X: np.ndarray) -> np.ndarray:
    """Scores on the first projection-pursuit principal component (sdcMicro's ``prcompRob``).

    Centre: the coordinate-wise median m. Candidate directions: the centred records
    (X_i - m) / ||X_i - m|| (Croux & Ruiz-Gazen); the axis is the candidate on which
    the projected data have the largest MAD (first candidate on ties). With more than
    1000 distinct non-zero candidates, 1000 are used: the records at evenly spaced
    positions of the order of their distance to m (ties by input order), so that
    near and far records are both tried.

    Examples
    --------
    >>> X = np.array([[0.0, 0.0], [1.0, 1.1], [2.0, 1.9], [3.0, 3.2], [4.0, 3.9],
    ...               [5.0, 5.1], [30.0, -30.0]])
    >>> np.argsort(pp_pc1(X), kind="stable").tolist()
    [0, 1, 2, 3, 4, 5, 6]
    """
    X = np.asarray(X, dtype=np.float64)
    m = np.median(X, axis=0)
    C = X - m
    if X.shape[1] == 1:
        return C[:, 0]
    norms = np.sqrt(np.einsum("ij,ij->i", C, C))
    cand = np.flatnonzero(norms > 0)
    if cand.size == 0:
        return np.zeros(X.shape[0])
    if cand.size > _MAX_CANDIDATES:
        by_norm = cand[np.argsort(norms[cand], kind="stable")]
        pick = np.unique(np.round(np.linspace(0, by_norm.size - 1, _MAX_CANDIDATES)).astype(np.int64))
        cand = np.sort(by_norm[pick])
    A = C[cand] / norms[cand, None]
    best_s, best_v = -1.0, A[0]
    step = max(1, (1 << 22) // max(1, X.shape[0]))  # candidates per chunk (~32 MB)
    for lo in range(0, A.shape[0], step):
        Y = np.einsum("ij,cj->ic", C, A[lo: lo + step])
        med = np.median(Y, axis=0)
        mad = np.median(np.abs(Y - med), axis=0)
        j = int(np.argmax(mad))
        if mad[j] > best_s:
            best_s, best_v = float(mad[j]), A[lo + j]
    return _project(X, m, _sign(best_v))


def _pc1(X: np.ndarray) -> np.ndarray:
    """Scores on the classical first principal component of the standardized ``X``
    (sdcMicro's ``princomp(scale(x))``; a constant column gets scale 1)."""
    sd = X.std(axis=0)
    Z = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    if Z.shape[1] == 1:
        return Z[:, 0]
    C = np.einsum("ni,nj->ij", Z, Z) / Z.shape[0]
    w, V = np.linalg.eigh(C)
    return _project(Z, np.zeros(Z.shape[1]), _sign(V[:, int(np.argmax(w))]))


# ---------------------------------------------------------------------------------
# clusters


def kmeans(X: np.ndarray, nc: int, *, rng: np.random.Generator) -> np.ndarray:
    """k-means (Lloyd) from a k-means++ start drawn with ``rng``; canonical labels.

    At most ``min(nc, distinct rows)`` clusters; a record goes to the nearest centre
    (lowest centre index on ties); stops when no label changes or after 100
    iterations. A centre that loses all its records is dropped.

    Examples
    --------
    >>> X = np.array([[0.0], [0.1], [0.2], [5.0], [5.1], [5.2]])
    >>> kmeans(X, 2, rng=np.random.default_rng(0)).tolist()
    [0, 0, 0, 1, 1, 1]
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    nc = int(min(nc, np.unique(X, axis=0).shape[0]))
    centres = [X[int(rng.integers(n))]]
    d2 = np.einsum("ij,ij->i", X - centres[0], X - centres[0])
    while len(centres) < nc:
        total = float(d2.sum())
        if total <= 0:
            break
        u = rng.random() * total
        i = min(int(np.searchsorted(np.cumsum(d2), u, side="right")), n - 1)
        centres.append(X[i])
        d2 = np.minimum(d2, np.einsum("ij,ij->i", X - X[i], X - X[i]))
    M = np.array(centres)
    labels = np.full(n, -1, dtype=np.int64)
    for _ in range(_KMEANS_ITER):
        D = np.stack([np.einsum("ij,ij->i", X - c, X - c) for c in M], axis=1)
        new = np.argmin(D, axis=1)
        if np.array_equal(new, labels):
            break
        labels = new
        used = np.unique(labels)
        M = np.array([X[labels == c].mean(axis=0) for c in used])
        labels = np.searchsorted(used, labels)
    return canonical_labels(labels)


def _merge_small(X: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """Clusters of fewer than k records join the cluster of nearest centroid (the
    smallest cluster first, lowest label on ties), until every cluster has >= k."""
    labels = canonical_labels(labels)
    while True:
        sizes = np.bincount(labels)
        small = int(np.argmin(sizes))
        if sizes[small] >= k or sizes.size == 1:
            return labels
        cents = np.array([X[labels == c].mean(axis=0) for c in range(sizes.size)])
        d = np.einsum("ij,ij->i", cents - cents[small], cents - cents[small])
        d[small] = np.inf
        labels = canonical_labels(np.where(labels == small, int(np.argmin(d)), labels))


def _cut(order: np.ndarray, k: int, labels: np.ndarray, first: int) -> int:
    """Label ``order`` in consecutive groups of k (last k..2k-1) from label ``first``;
    returns the next free label."""
    m = order.size
    n_groups = max(1, m // k)
    labels[order] = first + np.minimum(np.arange(m) // k, n_groups - 1)
    advance(m)  # records grouped (the progress display)
    return first + n_groups


def _sorted_groups(X: np.ndarray, k: int, score) -> np.ndarray:
    n = check_k(X, k)
    labels = np.empty(n, dtype=np.int64)
    _cut(np.argsort(score(X), kind="stable"), k, labels, 0)
    return canonical_labels(labels)


def _cluster_groups(X: np.ndarray, k: int, nc: int, rng: np.random.Generator, score) -> np.ndarray:
    """Cluster, sort each cluster by ``score(X_c, centre_c)``, cut each cluster."""
    n = check_k(X, k)
    clusters = _merge_small(X, kmeans(X, nc, rng=rng), k)
    labels = np.empty(n, dtype=np.int64)
    nxt = 0
    for c in range(int(clusters.max()) + 1):
        idx = np.flatnonzero(clusters == c)
        order = idx[np.argsort(score(X[idx]), kind="stable")]
        nxt = _cut(order, k, labels, nxt)
    return canonical_labels(labels)


def _in_cluster(pc):
    """sdcMicro's rule: a cluster with fewer records than attributes is sorted on the
    first attribute; otherwise on ``pc``."""
    def score(Xc: np.ndarray) -> np.ndarray:
        return Xc[:, 0].copy() if Xc.shape[0] < Xc.shape[1] else pc(Xc)
    return score


# ---------------------------------------------------------------------------------
# methods

@method_contract
def mcdpca(X: np.ndarray, k: int, *, rng: np.random.Generator | None = None) -> np.ndarray:
    """Sort on the first robust principal component (MCD covariance), groups of k.

    1. Reweighted MCD centre and scatter of the block (:func:`robust.det_mcd`).
    2. Score = projection of the record, centred on the MCD centre, on the scatter's
       leading eigenvector (largest-magnitude loading positive).
    3. Records sorted by score (stable), groups of k consecutive records, the last
       k..2k-1.

    {method contract}
    rng : unused (deterministic method).

    Returns
    -------
    labels : (n,) int64, canonical.

    Notes
    -----
    O(n p^2) per concentration step of the MCD plus O(n log n). Ties (equal scores)
    keep input order. sdcMicro uses MASS's random-start ``cov.mcd``; this estimator is
    deterministic (DetMCD starts), so a poorly determined MCD can order differently.

    References
    ----------
    Templ, M. (2008). Statistical disclosure control for microdata using the
    R-package sdcMicro. Transactions on Data Privacy 1(2), 67-85.
    Rousseeuw, P. J. & Van Driessen, K. (1999). A fast algorithm for the minimum
    covariance determinant estimator. Technometrics 41(3), 212-223.

    Examples
    --------
    >>> X = np.array([[0.0, 0.0], [1.0, 1.1], [2.0, 1.9], [3.0, 3.2], [4.0, 3.9],
    ...               [5.0, 5.1], [30.0, -30.0]])
    >>> mcdpca(X, 3).tolist()
    [0, 0, 1, 1, 1, 1, 0]
    """
    return _sorted_groups(X, k, mcd_pc1)


@method_contract
def pppca(X: np.ndarray, k: int, *, rng: np.random.Generator | None = None) -> np.ndarray:
    """Sort on the first projection-pursuit principal component, groups of k.

    1. Axis = the direction through the coordinate-wise median and one record that
       maximises the MAD of the projected data (:func:`pp_pc1`, sdcMicro's
       ``prcompRob``, the candidate-direction algorithm of Croux & Ruiz-Gazen).
    2. Records sorted by their projection (stable), groups of k consecutive records,
       the last k..2k-1.

    {method contract}
    rng : unused (deterministic method).

    Returns
    -------
    labels : (n,) int64, canonical.

    Notes
    -----
    O(n m p + n m) for m = min(n, 1000) candidate directions (medians in linear
    time), memory in chunks of about 32 MB. The grid algorithm of Croux, Filzmoser &
    Oliveira (2007) would also do; the candidate search is what sdcMicro runs (parity).

    References
    ----------
    Croux, C. & Ruiz-Gazen, A. (2005). High breakdown estimators for principal
    components: the projection-pursuit approach revisited. Journal of Multivariate
    Analysis 95(1), 206-226.
    Templ, M., Kowarik, A. & Meindl, B. (2015). Statistical disclosure control for
    micro-data using the R package sdcMicro. Journal of Statistical Software 67(4).

    Examples
    --------
    >>> X = np.array([[0.0, 0.0], [1.0, 1.1], [2.0, 1.9], [3.0, 3.2], [4.0, 3.9],
    ...               [5.0, 5.1], [30.0, -30.0]])
    >>> pppca(X, 3).tolist()
    [0, 0, 0, 1, 1, 1, 1]
    """
    return _sorted_groups(X, k, pp_pc1)


@method_contract
def clustpca(X: np.ndarray, k: int, *, rng: np.random.Generator, nc: int = 8) -> np.ndarray:
    """Cluster first (k-means, ``nc`` clusters), then sort each cluster on its first
    principal component, groups of k inside each cluster.

    1. :func:`kmeans` with ``nc`` clusters (k-means++ start from ``rng``); clusters of
       fewer than k records join the cluster of nearest centroid.
    2. In each cluster (in label order): the classical first principal component of
       the cluster's standardized records (sdcMicro's ``princomp(scale(x))``); a
       cluster with fewer records than attributes is sorted on the first attribute
       instead (sdcMicro's rule).
    3. Each cluster's sorted records form groups of k, its last group k..2k-1.

    {method contract}
    rng : generator of the k-means++ start.
    nc : number of clusters asked for (fewer when the data have fewer distinct rows).

    Returns
    -------
    labels : (n,) int64, canonical; no group mixes two clusters.

    Notes
    -----
    O(n nc p) per k-means iteration (at most 100), O(n p^2) for the components.
    Ties (equal scores) keep input order. sdcMicro clusters with ``clara`` by default
    and cuts the concatenated cluster orders, so its groups can straddle clusters.

    References
    ----------
    Templ, M., Kowarik, A. & Meindl, B. (2015). Statistical disclosure control for
    micro-data using the R package sdcMicro. Journal of Statistical Software 67(4).
    Arthur, D. & Vassilvitskii, S. (2007). k-means++: the advantages of careful
    seeding. SODA 2007, 1027-1035.

    Examples
    --------
    >>> X = np.array([[0.0, 0.0], [0.1, 0.2], [0.2, 0.1], [9.0, 9.0], [9.1, 9.2], [9.2, 9.1]])
    >>> clustpca(X, 3, rng=np.random.default_rng(0), nc=2).tolist()
    [0, 0, 0, 1, 1, 1]
    """
    return _cluster_groups(X, k, nc, rng, _in_cluster(_pc1))


@method_contract
def clustmcdpca(X: np.ndarray, k: int, *, rng: np.random.Generator, nc: int = 8) -> np.ndarray:
    """Cluster first (k-means), then sort each cluster on its first MCD principal
    component (:func:`mcd_pc1`), groups of k inside each cluster.

    Steps as :func:`clustpca`, with the robust axis of :func:`mcdpca` computed on the
    cluster's records (a cluster with fewer records than attributes is sorted on the
    first attribute).

    {method contract}
    rng : generator of the k-means++ start.
    nc : number of clusters asked for.

    Returns
    -------
    labels : (n,) int64, canonical; no group mixes two clusters.

    Notes
    -----
    Cost as :func:`clustpca` plus one MCD per cluster. Ties keep input order.

    References
    ----------
    Templ, M., Kowarik, A. & Meindl, B. (2015). Statistical disclosure control for
    micro-data using the R package sdcMicro. Journal of Statistical Software 67(4).

    Examples
    --------
    >>> X = np.array([[0.0, 0.0], [0.1, 0.2], [0.2, 0.1], [9.0, 9.0], [9.1, 9.2], [9.2, 9.1]])
    >>> clustmcdpca(X, 3, rng=np.random.default_rng(0), nc=2).tolist()
    [0, 0, 0, 1, 1, 1]
    """
    return _cluster_groups(X, k, nc, rng, _in_cluster(mcd_pc1))


@method_contract
def clustpppca(X: np.ndarray, k: int, *, rng: np.random.Generator, nc: int = 8) -> np.ndarray:
    """Cluster first (k-means), then sort each cluster on its first projection-pursuit
    principal component (:func:`pp_pc1`), groups of k inside each cluster.

    Steps as :func:`clustpca`, with the robust axis of :func:`pppca` computed on the
    cluster's records (a cluster with fewer records than attributes is sorted on the
    first attribute).

    {method contract}
    rng : generator of the k-means++ start.
    nc : number of clusters asked for.

    Returns
    -------
    labels : (n,) int64, canonical; no group mixes two clusters.

    Notes
    -----
    Cost as :func:`clustpca` plus one projection-pursuit search per cluster. Ties keep
    input order.

    References
    ----------
    Templ, M., Kowarik, A. & Meindl, B. (2015). Statistical disclosure control for
    micro-data using the R package sdcMicro. Journal of Statistical Software 67(4).
    Croux, C. & Ruiz-Gazen, A. (2005). High breakdown estimators for principal
    components: the projection-pursuit approach revisited. Journal of Multivariate
    Analysis 95(1), 206-226.

    Examples
    --------
    >>> X = np.array([[0.0, 0.0], [0.1, 0.2], [0.2, 0.1], [9.0, 9.0], [9.1, 9.2], [9.2, 9.1]])
    >>> clustpppca(X, 3, rng=np.random.default_rng(0), nc=2).tolist()
    [0, 0, 0, 1, 1, 1]
    """
    return _cluster_groups(X, k, nc, rng, _in_cluster(pp_pc1))


@method_contract
def influence(X: np.ndarray, k: int, *, rng: np.random.Generator, nc: int = 8) -> np.ndarray:
    """Cluster first (k-means), then sort each cluster on its most influential
    variable, groups of k inside each cluster.

    1. Clusters as in :func:`clustpca`.
    2. A cluster's most influential variable is the attribute on which its centroid
       (in z-scores) is largest -- sdcMicro's ``which(cent == max(cent))`` -- the first
       such attribute on ties.
    3. The cluster's records sorted on that attribute (stable), groups of k, the last
       k..2k-1.

    {method contract}
    rng : generator of the k-means++ start.
    nc : number of clusters asked for.

    Returns
    -------
    labels : (n,) int64, canonical; no group mixes two clusters.

    Notes
    -----
    O(n nc p) per k-means iteration plus O(n log n). Ties keep input order.

    References
    ----------
    Templ, M., Kowarik, A. & Meindl, B. (2015). Statistical disclosure control for
    micro-data using the R package sdcMicro. Journal of Statistical Software 67(4).

    Examples
    --------
    The cluster near (0, 9) is sorted on its second attribute, the one near (9, 0) on
    its first:

    >>> X = np.array([[0.0, 9.0], [0.2, 9.1], [0.1, 9.2], [0.3, 9.3],
    ...               [9.0, 0.0], [9.1, 0.2], [9.2, 0.1], [9.3, 0.3]])
    >>> influence(X, 2, rng=np.random.default_rng(0), nc=2).tolist()
    [0, 0, 1, 1, 2, 2, 3, 3]
    """
    def score(Xc: np.ndarray) -> np.ndarray:
        return Xc[:, int(np.argmax(Xc.mean(axis=0)))].copy()

    return _cluster_groups(X, k, nc, rng, score)


_NC = ParamSpec("nc", "int", 8, "number of k-means clusters (sdcMicro's nc)", min=1)
_TEMPL = ("Templ, Kowarik & Meindl (2015), Statistical disclosure control for micro-data using "
          "the R package sdcMicro, Journal of Statistical Software 67(4)")

SPECS: tuple[MethodSpec, ...] = (
    MethodSpec(name="mcdpca", cost=CostModel(0.15, 1.2), func=mcdpca, summary="Sort on the first robust (MCD) principal component, groups of k",
               reference=_TEMPL),
    MethodSpec(name="pppca", cost=CostModel(1.0, 1.0), func=pppca, summary="Sort on the first projection-pursuit principal component, groups of k",
               reference=_TEMPL + "; Croux & Ruiz-Gazen (2005), JMVA 95(1)"),
    MethodSpec(name="clustpca", cost=CostModel(0.15, 1.1), func=clustpca, summary="k-means clusters, each sorted on its first principal component, groups of k",
               reference=_TEMPL, params=(_NC,)),
    MethodSpec(name="clustmcdpca", cost=CostModel(0.3, 1.1), func=clustmcdpca, summary="k-means clusters, each sorted on its first MCD principal component, groups of k",
               reference=_TEMPL, params=(_NC,)),
    MethodSpec(name="clustpppca", cost=CostModel(0.9, 1.0), func=clustpppca, summary="k-means clusters, each sorted on its first projection-pursuit component, groups of k",
               reference=_TEMPL, params=(_NC,)),
    MethodSpec(name="influence", cost=CostModel(0.1, 1.1), func=influence, summary="k-means clusters, each sorted on its most influential variable, groups of k",
               reference=_TEMPL, params=(_NC,)),
)
