"""Distance-based record linkage (DLD): the exact search of the nearest protected rows.

Every scenario's nearest protected rows are searched exactly, scenarios visited by size so that margins kept from one size settle most
links of the next without a search (:func:`dld_by_layers`), with compiled k-d trees of
the distinct protected rows (:class:`BoxTree`) and what all scenarios share
(:class:`DLDShared`). The measure of one scenario is
:func:`~microagg_cli.metrics.risk.dld` (Domingo-Ferrer, J. & Torra, V. (2001), A
quantitative comparison of disclosure control methods for microdata, in Confidentiality,
Disclosure and Data Access, North-Holland, 111-134).
"""

from __future__ import annotations

import queue
import threading
from typing import Any, Callable, Sequence

import numpy as np

from ...threads import in_threads
from .._kd_kernels import kd_build_columns, work_sizes
from .._risk_kernels import counting_order, dld_filter, dld_search, round_down_f32
from .anonymity import RowClasses

__all__ = ["DLD_EXACT_MAX", "DLD_SAMPLE", "BoxTree", "DLDShared", "dld_by_layers"]

#: DLD is exact up to this many records; above, estimated from a seeded sample of
#: originals (each searched exactly against every protected row), with a stated bound.
DLD_EXACT_MAX = 500_000
#: Sampled originals of the DLD estimator.
DLD_SAMPLE = 100_000

# rows per leaf of DLD's k-d trees (32-64 measured fastest: the point loop vectorises)
_DLD_LEAF = 48
# a DLD margin bound settles an original only above this share of (1 + its squared
# distance to its own row on every attribute): the bound is a sum of at most 2 p
# distances, each off by a few 1e-16 relative, so 1e-9 leaves six orders to spare
_DLD_MARGIN_TOL = 1e-9
# the nearest other protected rows a DLD search keeps per original (with a bound of
# every other row), at most: a scenario with one attribute more computes their
# distances and settles links a margin alone leaves open (50,000 x 10, MDAV k = 3: a
# third fewer proof searches, a sixth fewer searches, the DLD pass 11 % faster); fewer
# when the scenarios of a size would not fit in the memory budget below with 4
_DLD_NEAR = 4
# the last rows that beat an original, kept per thread (most recent first) and tried
# before any search: 50,000 x 10, MDAV k = 3, all 1,023 scenarios: searches 10.8 M ->
# 8.1 M with 4 rows (and the nearest beater of the leaf kept), the DLD pass 5 % faster;
# 2 rows do nearly as well, 8 cost more in the filter than they save
_DLD_MEMO = 4
# bytes of DLD margins, bounds and near rows kept per size of scenarios (two sizes are
# held at once); scenarios beyond it keep none, and their supersets search more
_DLD_KEEP_BYTES = 576 << 20


class BoxTree:
    """A k-d tree of points (built by :func:`.._kd_kernels.kd_build_columns`, compiled):
    median splits on the widest coordinate, leaves of at most ``leaf`` points, the tight
    bounding box of every node (``box`` (2, nodes, s): low and high corners), the
    children and row range of every node (``tree`` (4, nodes): left, right, start, end;
    -1 children at a leaf, children after their parent, root = node 0); ``perm`` tree
    order -> row, ``PT`` (s, m) the points in tree order as columns and ``mult`` in tree
    order. Searched by :func:`.._risk_kernels.dld_search`.

    ``BoxTree(P, mult)`` takes the points as rows ``P`` (m, s); :meth:`from_columns`
    takes columns ``cols`` of a row matrix ``U`` and gathers them inside the build (no
    ``U[:, cols]`` copy): ``BoxTree.from_columns(U, cols, mult)`` is the same tree as
    ``BoxTree(U[:, cols], mult)``.
    """

    perm: np.ndarray
    box: np.ndarray
    tree: np.ndarray
    PT: np.ndarray
    mult: np.ndarray

    def __init__(self, P: np.ndarray, mult: np.ndarray, *, leaf: int = _DLD_LEAF) -> None:
        P = np.ascontiguousarray(P, dtype=np.float64)
        self._build(P, np.arange(P.shape[1], dtype=np.int64), mult, leaf)

    @classmethod
    def from_columns(cls, U: np.ndarray, cols: Sequence[int] | np.ndarray, mult: np.ndarray,
                     *, leaf: int = _DLD_LEAF) -> BoxTree:
        """The tree of the points ``U[:, cols]`` (``U`` (m, p) rows), columns gathered in
        the build."""
        cols = np.asarray(cols, dtype=np.int64)
        if cols.ndim != 1 or (cols.size and not 0 <= cols.min() <= cols.max() < U.shape[1]):
            raise ValueError(f"columns {cols.tolist()} not all among the {U.shape[1]} of U")
        self = cls.__new__(cls)
        self._build(np.ascontiguousarray(U, dtype=np.float64), cols, mult, leaf)
        return self

    def _build(self, U: np.ndarray, cols: np.ndarray, mult: np.ndarray, leaf: int) -> None:
        m = U.shape[0]
        s = cols.size
        cap = 4 * (m // leaf) + 16
        self.perm = np.empty(m, dtype=np.int64)
        self.box = np.empty((2, cap, s))
        self.tree = np.empty((4, cap), dtype=np.int64)
        #: the rows in tree order, as columns (s, m): a leaf's points one coordinate at a time
        self.PT = np.empty((s, m))
        self.mult = np.empty(m)
        fwork, iwork = self._scratch(*work_sizes(m, s))
        kd_build_columns(U, np.ascontiguousarray(cols), np.ascontiguousarray(mult, dtype=np.float64), int(leaf),
                         self.perm, self.PT, self.mult, self.box[0], self.box[1], *self.tree, fwork, iwork)

    # the build's scratch, kept per thread from tree to tree (up to _SCRATCH_KEEP float64
    # values): fresh memory would be paged in anew by every scenario's tree
    _work = threading.local()
    _SCRATCH_KEEP = 1 << 22

    @classmethod
    def _scratch(cls, nf: int, ni: int) -> tuple[np.ndarray, np.ndarray]:
        if nf > cls._SCRATCH_KEEP:
            return np.empty(nf), np.empty(ni, dtype=np.int64)
        have = getattr(cls._work, "arrays", None)
        if have is None or have[0].size < nf or have[1].size < ni:
            have = (np.empty(max(nf, 0 if have is None else have[0].size)),
                    np.empty(max(ni, 0 if have is None else have[1].size), dtype=np.int64))
            cls._work.arrays = have
        return have


class DLDShared:
    """What every scenario's DLD shares (built once per file pair).

    ``who`` the searched originals (all, or the sample of ``dld_method = "sampled"``),
    in record order; ``U``/``mult`` the distinct protected rows and their
    multiplicities, numbered in the order of a k-d tree of all attributes (rows near
    in space near in memory); the searched originals are held in the order of their
    own rows (``order``: position j is ``who[order[j]]``), so an original's own row,
    the rows that beat it and its candidates lie near those of its neighbours (at
    200,000 records the rows no longer fit a cache). Per position j: ``W`` (2, j, p)
    the original and protected z-scores, ``ec`` (j, v) the squared distance to its own
    protected row on attribute v (``ecT`` its transpose), ``per`` = (margin tolerance,
    multiplicity of its own row), ``row_of`` its own distinct row, ``cand`` its
    candidate distinct rows.
    """

    def __init__(self, Z: np.ndarray, Zp: np.ndarray, distinct: tuple[np.ndarray, np.ndarray, int],
                 rows: np.ndarray | None, candidates: np.ndarray | None) -> None:
        codes, first, m = distinct
        U = Zp[first]
        mult = np.bincount(codes, minlength=m).astype(np.float64)
        # distinct rows renumbered in space order
        perm = BoxTree(U, mult, leaf=8).perm
        rank = np.empty(perm.size, dtype=np.int64)
        rank[perm] = np.arange(perm.size)
        self.U = np.ascontiguousarray(U[perm])
        self.mult = np.ascontiguousarray(mult[perm])
        self.who = np.arange(Z.shape[0], dtype=np.int64) if rows is None else rows
        own = rank[codes[self.who]]
        self.order = np.argsort(own, kind="stable")
        rec = self.who[self.order]
        self.W = np.stack((Z[rec], Zp[rec]))
        self.Zw = self.W[0]
        self.ec = (self.W[0] - self.W[1]) ** 2
        self.ecT = np.ascontiguousarray(self.ec.T)
        self.row_of = np.ascontiguousarray(own[self.order])
        self.per = np.vstack((_DLD_MARGIN_TOL * (1.0 + self.ec.sum(axis=1)), self.mult[self.row_of]))
        cand = candidates
        self.cand = (np.empty((rec.size, 0), dtype=np.int64) if cand is None
                     else np.ascontiguousarray(rank[codes[cand[rec]]]))

    def in_record_order(self, values: np.ndarray) -> np.ndarray:
        """Per-position ``values`` back in the order of ``who`` (sums as before)."""
        out = np.empty_like(values)
        out[self.order] = values
        return out


def _kept_bytes(width: int) -> int:
    """Bytes a kept scenario holds per original: margin and bound (float32), ``width``
    near rows (int32)."""
    return 8 + 4 * width


def _dld_scenario(sh: DLDShared, sc: tuple[int, ...], prev: tuple[np.ndarray, np.ndarray, np.ndarray],
                  parents: np.ndarray, extra: Sequence[int], memo: np.ndarray,
                  dest: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One scenario's DLD credits, margin lower bounds and near lists of the originals ``sh.who``.

    ``prev`` = (margins, lists, bounds), (rows, n), (rows, n, K) and (rows, n): what
    the scenarios with one attribute less kept per original (see
    :func:`.._risk_kernels.dld_filter`); ``parents[j]`` the row of ``sc`` without its
    j-th attribute (-1: not kept); ``extra`` the attributes whose addition to ``sc`` is
    a scenario still to come (the search looks that much further, to give it a
    margin); ``memo`` (n, R) the last rows that beat each original in this thread
    (updated). Returns (credits, margins, lists, bounds) per position; with ``dest``
    (margins, lists, bounds: the scenario's rows of the kept store) the lists are
    written there and the margins and bounds too, as float32 rounded down (a lower
    bound stays one).
    """
    nw = sh.who.size
    cols = np.asarray(sc, dtype=np.int64)
    out = np.empty((3, nw))  # squared true distances, margins, credits
    todo = np.empty(nw, dtype=np.int64)
    near = np.empty((nw, prev[1].shape[2]), dtype=np.int32) if dest is None else dest[1]
    bound = np.empty(nw)
    nt = int(dld_filter(sh.W, sh.U, cols, sh.ec, sh.ecT, prev[0], prev[1], prev[2], parents, sh.per, sh.cand, out,
                        memo, todo, near, bound))
    if nt:
        todo = todo[:nt]
        # a k-d tree of the distinct protected rows on the scenario's attributes (its
        # splits and boxes on those attributes only prune far better than one tree of
        # every attribute), built once per scenario, compiled
        tree = BoxTree.from_columns(sh.U, cols, sh.mult)
        # originals in the tree order of their true rows: consecutive searches walk
        # the same nodes (1.2-1.7x faster at 200,000 records)
        place = np.empty(tree.perm.size, dtype=np.int64)
        place[tree.perm] = np.arange(tree.perm.size)
        ownpos = place[sh.row_of[todo]]
        order = counting_order(ownpos, place.size)  # np.argsort(ownpos, kind="stable")
        dld_search(sh.Zw, cols, sh.ec, np.asarray(extra, dtype=np.int64), todo[order], sh.per, tree.tree, tree.PT,
                   tree.mult, tree.box, tree.perm, ownpos[order], out, memo, near, bound)
    if dest is not None:
        round_down_f32(out[1], dest[0])
        round_down_f32(bound, dest[2])
    return out[2], out[1], near, bound


def dld_by_layers(sh: DLDShared, rows: RowClasses, p: int, scs: Sequence[tuple[int, ...]], jobs: int,
                  value: Callable[[np.ndarray], tuple[float, float | None]],
                  finish: Callable[[tuple[int, ...], tuple[float, float | None], RowClasses], Any],
                  after: Callable[[int], None] | None = None) -> dict[tuple[int, ...], Any]:
    """``{sc: finish(sc, value(credits), row classes)}`` for the sorted scenarios ``scs``
    of a file of ``p`` attributes, ``sh`` what they share, ``rows`` the exact row classes
    of the protected file (copied per thread), ``value`` the DLD and its bound from the
    credits of the originals ``sh.who`` in record order.

    Scenarios are visited by size, then lexicographically (shared prefixes reuse
    their exact row classes). Each scenario keeps, per original, a lower bound of
    its DLD *margin* (how much nearer than any other protected row its own row is)
    while a scenario with one attribute more is still to come; that scenario's
    originals whose bound, less the new attribute's own squared distance, stays
    clearly positive are credited without a search (see
    :func:`.._risk_kernels.dld_filter`): on MDAV data most of the credited links
    of larger scenarios. It also keeps the few nearest other rows a search found
    (or its parent's, when it needed none) with a bound of every other row's
    distance: distances only grow with attributes, so the next size computes those
    rows' distances and settles by them many links the margin leaves open (and
    finds a nearer row among them for most originals that are not linked). Within a
    size, scenarios run in ``jobs`` threads, runs of consecutive scenarios each, one
    memo of beaten originals per thread; a bound, a list or a memo only decides
    whether a search runs, never its result, so the result does not depend on
    ``jobs``. ``after(done)`` reports finished scenarios.
    """
    want = set(scs)
    layers: dict[int, list[tuple[int, ...]]] = {}
    for sc in sorted(want):
        layers.setdefault(len(sc), []).append(sc)
    jobs = max(1, int(jobs))
    memos: queue.SimpleQueue[np.ndarray] = queue.SimpleQueue()
    for _ in range(jobs):
        memos.put(np.full((sh.who.size, _DLD_MEMO), -1, dtype=np.int64))
    results: dict[tuple[int, ...], Any] = {}
    nw = sh.who.size
    # near rows kept per original: as many as let the widest size keep every scenario
    widest = max((len(v) for v in layers.values()), default=1)
    width = next((w for w in (_DLD_NEAR, 2) if _kept_bytes(w) * nw * widest <= _DLD_KEEP_BYTES), 1)
    # margins kept per size: the scenarios that a scenario of the next size is built on
    most = _DLD_KEEP_BYTES // (_kept_bytes(width) * max(1, nw))
    keeps: dict[int, dict[tuple[int, ...], int]] = {}
    for size in layers:
        keep: dict[tuple[int, ...], int] = {}
        for t in layers.get(size + 1, []):
            for j in range(len(t)):
                u = t[:j] + t[j + 1:]
                if u in want and u not in keep and len(keep) < most:
                    keep[u] = len(keep)
        keeps[size] = keep
    # two stores, allocated once and used in turn (one size writes while the next
    # reads): memory touched for the first time costs far more than a copy (0.5 ms a
    # megabyte on the 2-core reference machine, 2-3 ms while the kernel compacts huge
    # pages), and a store per size touched twice as much
    rows_kept = max((len(k) for k in keeps.values()), default=0)
    stores = [(np.empty((rows_kept, nw), dtype=np.float32), np.empty((rows_kept, nw, width), dtype=np.int32),
               np.empty((rows_kept, nw), dtype=np.float32)) for _ in range(2 if rows_kept else 1)]
    prev = tuple(a[:0] for a in stores[0])
    prev_rows: dict[tuple[int, ...], int] = {}
    finished = 0
    for turn, size in enumerate(sorted(layers)):
        layer = layers[size]
        keep = keeps[size]
        store = tuple(a[:len(keep)] for a in stores[turn % len(stores)])
        chunk = 1 if jobs == 1 else max(1, min(32, len(layer) // (8 * jobs)))
        runs = [layer[j:j + chunk] for j in range(0, len(layer), chunk)]
        ends = np.cumsum([len(r) for r in runs])

        def run(batch: list[tuple[int, ...]], prev: tuple = prev, prev_rows: dict = prev_rows,
                keep: dict = keep, store: tuple = store) -> None:
            memo = memos.get()
            own = rows if jobs == 1 else rows.fresh()
            try:
                for sc in batch:
                    parents = np.array([prev_rows.get(sc[:j] + sc[j + 1:], -1) for j in range(len(sc))],
                                       dtype=np.int64)
                    extra = ([v for v in range(p) if v not in sc and tuple(sorted(sc + (v,))) in want]
                             if sc in keep else [])
                    dest = tuple(a[keep[sc]] for a in store) if sc in keep else None
                    credit = _dld_scenario(sh, sc, prev, parents, extra, memo, dest)[0]
                    results[sc] = finish(sc, value(sh.in_record_order(credit)), own)
            finally:
                memos.put(memo)

        def report(done: int, base: int = finished, ends: np.ndarray = ends) -> None:
            if after is not None:
                after(base + (int(ends[done - 1]) if done else 0))

        in_threads(run, runs, jobs, after=report, name="sdc-risk")
        finished += len(layer)
        prev, prev_rows = store, keep
    return results
