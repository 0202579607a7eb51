"""Probabilistic record linkage (PLD, Fellegi-Sunter with EM).

The rank window of agreement, the EM fit of the m, u probabilities and the match share
(:func:`fellegi_sunter_em`), and the table of agreement patterns of every (original,
protected) pair counted per original (:class:`PLDTable`), from which every scenario's
pattern counts and exact best links follow by masking. The measure of one scenario is
:func:`~microagg_cli.metrics.risk.pld` (Fellegi, I. P. & Sunter, A. B. (1969), A theory
for record linkage, JASA 64(328); Jaro, M. A. (1989), Advances in record-linkage
methodology as applied to matching the 1985 Census of Tampa, Florida, JASA 84(406);
Domingo-Ferrer, J. & Torra, V. (2001), A quantitative comparison of disclosure control
methods for microdata).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ...errors import InvalidParameterError
from ...progress import phase as progress_phase
from ...progress import set_done as progress_set
from ...threads import in_threads
from .._risk_kernels import em_fit, pld_credit, pld_credit_batch, pld_pass, stable_order_by
from .sampling import sample_bound

__all__ = ["PLD_MAX_ATTRIBUTES", "PLD_EXACT_MAX", "PLD_SAMPLE", "pld_window", "fellegi_sunter_em", "PLDTable"]

#: Agreement patterns are bit masks in int64.
PLD_MAX_ATTRIBUTES = 62
#: PLD is exact up to this many records; above it, estimated from a seeded sample of
#: originals (see :class:`~microagg_cli.metrics.risk.RiskEvaluator`), with a stated error bound.
PLD_EXACT_MAX = 100_000
#: Sampled originals of the PLD estimator.
PLD_SAMPLE = 20_000

# relative margin between mathematically equal sums of log-ratios (weight levels)
_REL = 1e-9
# the compiled PLD table keeps a dense 2^q scratch of pattern counts: up to 20 attributes
_DENSE_MAX_Q = 20
# originals per task of the PLD pair table
_PLD_RUN = 8192
# originals per block of the all-scenario PLD pass (fixed: partial sums are added in block order)
_PLD_BLOCK = 2048
# EM probabilities are kept inside [_EPS, 1 - _EPS] so that every log is finite
_EPS = 1e-12


def pld_window(n: int, share: float = 0.01) -> int:
    """PLD rank window w = max(1, floor(share * n)).

    >>> pld_window(50_000), pld_window(99)
    (500, 1)
    """
    return max(1, int(math.floor(share * n)))


def fellegi_sunter_em(
    patterns: np.ndarray,
    counts: np.ndarray,
    *,
    match_share: float,
    m_start: float = 0.9,
    u_start: np.ndarray | None = None,
    max_iter: int = 500,
    tol: float = 1e-8,
) -> dict[str, Any]:
    """EM estimates of the Fellegi-Sunter m, u probabilities and the match share.

    Conditional independence of the attributes given match status (Jaro 1989).

    Parameters
    ----------
    patterns : (P, m) 0/1 agreement patterns (distinct).
    counts : (P,) number of record pairs with each pattern.
    match_share : starting share of matches among the pairs (1/n for linkage of two
        files of n records).
    m_start : starting m for every attribute.
    u_start : starting u; default the observed agreement rate of each attribute.
    max_iter, tol : stop after ``max_iter`` iterations or when the largest relative
        change of any parameter is below ``tol``.

    Returns
    -------
    ``{"m": [...], "u": [...], "match_share": float, "iterations": int,
    "converged": bool}``; probabilities are kept within [1e-12, 1 - 1e-12].

    References
    ----------
    Jaro, M. A. (1989). Advances in record-linkage methodology as applied to matching
    the 1985 Census of Tampa, Florida. JASA 84(406), 414-420.
    Fellegi, I. P. & Sunter, A. B. (1969). A theory for record linkage. JASA 64(328).
    """
    G = np.asarray(patterns, dtype=np.float64)
    c = np.asarray(counts, dtype=np.float64)
    N = float(c.sum())
    q = G.shape[1]
    m = np.full(q, float(m_start))
    u = (G.T @ c) / N if u_start is None else np.asarray(u_start, dtype=np.float64).copy()
    # theta = [pi, m_1..m_q, u_1..u_q]; the iterations run compiled, O(P q) each
    theta = np.clip(np.concatenate(([match_share], m, u)), _EPS, 1 - _EPS)
    it, converged = em_fit(np.ascontiguousarray(G != 0, dtype=np.uint8), np.ascontiguousarray(c), theta,
                           int(max_iter), float(tol), _EPS)
    it, converged = int(it), bool(converged)
    pi = float(theta[0])
    m = theta[1:q + 1]
    u = theta[q + 1:]
    return {
        "m": m.tolist(),
        "u": u.tolist(),
        "match_share": pi,
        "iterations": it,
        "converged": converged,
    }


def _weight_levels(weights: np.ndarray) -> np.ndarray:
    """Integer levels ordering ``weights``; weights within a relative 1e-9 share a level.

    Mathematically equal sums of log-ratios can differ in the last bits; merging them
    makes ties order-independent.
    """
    order = np.argsort(weights, kind="stable")
    w = weights[order]
    step = np.diff(w) > _REL * np.maximum(1.0, np.abs(w[1:]))
    lev_sorted = np.concatenate(([0], np.cumsum(step)))
    lev = np.empty(weights.size, dtype=np.int64)
    lev[order] = lev_sorted
    return lev


def _pack_bits(agree: np.ndarray) -> np.ndarray:
    """(N, q) boolean -> (N,) int64 with bit j = column j (endianness-independent)."""
    packed = np.packbits(agree, axis=1, bitorder="little")
    out = packed[:, 0].astype(np.int64)
    for byte in range(1, packed.shape[1]):
        out |= packed[:, byte].astype(np.int64) << (8 * byte)
    return out


class PLDTable:
    """Agreement patterns of every (original, protected) pair, counted per original.

    For each attribute v, originals and protected records are sorted by their rank on
    v; the pairs agreeing on v (|R(a_v) - R(b_v)| <= w) then form a band, covered by
    dense tiles of consecutive originals times the union of their windows (at most
    ``block_cells`` cells each), where the full agreement pattern over all table
    attributes is computed with a few vector operations per attribute. A pair is kept
    in the pass of its *lowest* agreeing attribute, so every pair that agrees
    somewhere is counted once; pairs agreeing nowhere are only counted. The result
    is, per original record, its distinct full patterns with their counts, from which
    every scenario's pattern counts (for EM) and exact best links follow by masking.

    Work O(q * n * (2w + 1)) cell checks (plus a tile overhead of about the tile
    height / window), memory O(n * distinct patterns per record) plus one tile. Up to
    ``_DENSE_MAX_Q`` attributes a compiled pass replaces the tiles: identical
    protected rank rows are merged (about n/k of them), each original's window is
    scanned once per attribute, and only the originals ``rows`` (all, or a sample for
    the estimator) are tabulated. ``orders``: each column's stable argsort of ``Ro``
    when known already (:class:`.common.OriginalRanks`, kept between files).
    """

    def __init__(self, Ro: np.ndarray, Rp: np.ndarray, window: int, *,
                 block_cells: int = 1 << 18, workers: int = 1, rows: np.ndarray | None = None,
                 orders: Sequence[np.ndarray] | None = None) -> None:
        n, q = Ro.shape
        self.n = n
        self.q = q
        self.window = w = int(window)
        # the originals whose pairs are tabulated (all, or a sample: see RiskEvaluator)
        self.rows = None if rows is None else np.sort(np.asarray(rows, dtype=np.int64))
        self.n_records = n if self.rows is None else int(self.rows.size)
        span = np.uint32(2 * w)
        sel = slice(None) if self.rows is None else self.rows
        RloT = np.ascontiguousarray((Ro[sel] - w).T, dtype=np.int32)
        RpT = np.ascontiguousarray(Rp[sel].T, dtype=np.int32)
        pdt = np.int32 if q <= 30 else np.int64
        if q <= _DENSE_MAX_Q:
            pieces_a, pieces_p, pieces_c = self._compiled_pieces(Ro, Rp, w, workers, self.rows, orders)
        elif self.rows is None:
            pieces_a, pieces_p, pieces_c = self._numpy_pieces(Ro, Rp, RloT, RpT, w, span, pdt, block_cells)
        else:
            raise InvalidParameterError(f"sampled PLD supports at most {_DENSE_MAX_Q} attributes")
        nr = self.n_records
        true_pat = _pack_bits((RpT - RloT).T.view(np.uint32) <= span)
        ep = np.concatenate(pieces_p).astype(pdt) if pieces_p else np.empty(0, pdt)
        del pieces_p
        # distinct full patterns; index 0 = no agreement at all
        if q <= _DENSE_MAX_Q:  # a table of the 2^q patterns: no sort
            present = np.zeros(1 << q, dtype=bool)
            present[0] = True
            present[ep] = True
            present[true_pat] = True
            self.gpat = np.flatnonzero(present).astype(np.int64)
            index_of = np.cumsum(present) - 1
            idx_dtype = np.int32 if self.gpat.size < 2**31 else np.int64
            e_g = index_of[ep].astype(idx_dtype)
        else:
            self.gpat = np.unique(np.concatenate(([0], np.unique(ep).astype(np.int64), true_pat)))
            idx_dtype = np.int32 if self.gpat.size < 2**31 else np.int64
            e_g = np.searchsorted(self.gpat, ep).astype(idx_dtype)
        del ep
        # record positions 0..nr-1 (the sampled originals in increasing order)
        ea = np.concatenate(pieces_a).astype(np.int32) if pieces_a else np.empty(0, np.int32)
        del pieces_a
        if self.rows is not None:
            ea = np.searchsorted(self.rows, ea).astype(np.int32)
        # per original, richest patterns first (an early better pattern ends a scan):
        # a stable sort by (record, q - bits), by two counting passes
        srt = stable_order_by(ea, (q - np.bitwise_count(self.gpat)[e_g]).astype(np.int64), nr, q + 1)
        self.e_g = e_g[srt]
        del e_g
        self.e_cnt = (np.concatenate(pieces_c) if pieces_c else np.empty(0, np.int32))[srt]
        ea = ea[srt]
        del pieces_c, srt
        self.entries_per_record = np.bincount(ea, minlength=nr)
        self.zero_a = n - np.bincount(ea, weights=self.e_cnt, minlength=nr).astype(np.int64)
        del ea
        self.true_g = np.searchsorted(self.gpat, true_pat)
        self.gcnt = np.bincount(self.e_g, weights=self.e_cnt, minlength=self.gpat.size)
        self.gcnt[0] += float(self.zero_a.sum())
        if self.rows is not None:
            # pattern counts over all n * n pairs, estimated from the sampled originals
            self.gcnt *= n / nr
        self._bounds = np.concatenate(([0], np.cumsum(self.entries_per_record))).astype(np.int64)

    @staticmethod
    def _compiled_pieces(Ro: np.ndarray, Rp: np.ndarray, w: int, workers: int, rows: np.ndarray | None,
                         orders: Sequence[np.ndarray] | None = None,
                         ) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
        """(original, full pattern, count) entries by the compiled pass per attribute.

        Identical protected rank rows are merged (a microaggregated file has about n/k
        of them), with their multiplicities as counts; the originals of a pass (all,
        or the sorted ``rows``) are processed in runs of consecutive ranks by
        ``workers`` threads (the kernel releases the GIL).
        """
        n, q = Ro.shape
        Ro32 = np.ascontiguousarray(Ro, dtype=np.int32)
        Rpu, mult = np.unique(np.ascontiguousarray(Rp, dtype=np.int32), axis=0, return_counts=True)
        Rpu = np.ascontiguousarray(Rpu)
        mult = mult.astype(np.int64)
        pieces_a: list[np.ndarray] = []
        pieces_p: list[np.ndarray] = []
        pieces_c: list[np.ndarray] = []
        workers = max(1, int(workers))
        keep = None
        if rows is not None:
            keep = np.zeros(n, dtype=bool)
            keep[rows] = True
        pdt = np.int32 if q < 31 else np.int64
        total = q * (n if rows is None else rows.size)

        def run(v: int, rs: tuple[np.ndarray, np.ndarray], lo: np.ndarray, hi: np.ndarray,
                todo: np.ndarray) -> list[tuple]:
            scratch = np.zeros(1 << q, dtype=np.int64)
            touched = np.empty(1 << q, dtype=np.int64)
            out = []
            start = 0
            cap = int(min(max(1 << 16, 4 * todo.size), 1 << 22))
            cap = max(cap, int(min((hi - lo).max(initial=0), 1 << q)))
            oa = np.empty(cap, dtype=np.int32)
            opat = np.empty(cap, dtype=np.int64)
            oc = np.empty(cap, dtype=np.int64)
            while start < todo.size:
                start, pos = pld_pass(Ro32, rs[0], rs[1], lo, hi, v, w, todo, start, oa, opat, oc,
                                      scratch, touched)
                out.append((oa[:pos].copy(), opat[:pos].astype(pdt), oc[:pos].astype(np.int32)))
            return out

        tasks = []
        for v in range(q):
            op = np.argsort(Rpu[:, v], kind="stable")
            sr = Rpu[op, v]
            # originals in rank order (neighbouring windows share cache lines)
            oo = (np.argsort(Ro32[:, v], kind="stable") if orders is None else orders[v]).astype(np.int64)
            # their windows, searched in that order (5 x faster than in record order)
            ro = Ro32[oo, v]
            lo = np.empty(n, dtype=np.int64)
            hi = np.empty(n, dtype=np.int64)
            lo[oo] = np.searchsorted(sr, ro - w, side="left")
            hi[oo] = np.searchsorted(sr, ro + w, side="right")
            if keep is not None:
                oo = oo[keep[oo]]
            # the protected rows in rank order on v, transposed: a window is read in order
            rs = (np.ascontiguousarray(Rpu[op].T), np.ascontiguousarray(mult[op]))
            tasks.extend((v, rs, lo, hi, oo[j:j + _PLD_RUN]) for j in range(0, oo.size, _PLD_RUN))
        with progress_phase("PLD pair table", total=total, unit="rows"):
            sizes = np.cumsum([t[4].size for t in tasks])
            results = in_threads(lambda t: run(*t), tasks, workers,
                                 after=lambda d: progress_set(int(sizes[d - 1]) if d else 0), name="sdc-risk")
        for res in results:
            for oa, opat, oc in res:
                pieces_a.append(oa)
                pieces_p.append(opat)
                pieces_c.append(oc)
        return pieces_a, pieces_p, pieces_c

    @staticmethod
    def _numpy_pieces(Ro: np.ndarray, Rp: np.ndarray, RloT: np.ndarray, RpT: np.ndarray, w: int,
                      span: np.uint32, pdt: Any,
                      block_cells: int) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
        """The same entries by dense numpy tiles (more than ``_DENSE_MAX_Q`` attributes)."""
        n, q = Ro.shape
        by_count = q <= 12  # aggregate (record, pattern) keys with bincount
        max_rows = max(1, (1 << 22) >> q) if by_count else n
        pieces_a: list[np.ndarray] = []
        pieces_p: list[np.ndarray] = []
        pieces_c: list[np.ndarray] = []
        for v in range(q):
            # originals and protected records both sorted by their rank on v: the
            # window of consecutive originals is a contiguous, sliding range of
            # protected records, so a block of originals and the union of their
            # windows form a dense band tile (no per-pair gathers)
            oo = np.argsort(Ro[:, v], kind="stable")
            op = np.argsort(Rp[:, v], kind="stable")
            sr = Rp[op, v]
            ro = Ro[oo, v]
            lo = np.searchsorted(sr, ro - w, side="left")
            hi = np.searchsorted(sr, ro + w, side="right")
            bit_v = 1 << v
            need = bit_v | (bit_v - 1)  # agrees on v, on no attribute before v
            i0 = 0
            while i0 < n:
                a, b = i0 + 1, min(n, i0 + max_rows)
                while a < b:  # largest tile within the cell budget
                    mid = (a + b + 1) // 2
                    if (mid - i0) * (hi[mid - 1] - lo[i0]) <= block_cells:
                        a = mid
                    else:
                        b = mid - 1
                i1 = a
                A = oo[i0:i1]
                B = op[lo[i0]:hi[i1 - 1]]
                i0 = i1
                if B.size == 0:
                    continue
                pat = np.zeros((A.size, B.size), dtype=pdt)
                for u in range(q):
                    agree = (RpT[u][B][None, :] - RloT[u][A][:, None]).view(np.uint32) <= span
                    pat |= agree.astype(pdt) << u
                valid = (pat & need) == bit_v
                rows = np.broadcast_to(np.arange(A.size, dtype=np.int64)[:, None], pat.shape)[valid]
                pv = pat[valid].astype(np.int64)
                if by_count:
                    cnt = np.bincount((rows << q) | pv, minlength=A.size << q)
                    nz = np.flatnonzero(cnt)
                    pieces_a.append(A[nz >> q].astype(np.int32))
                    pieces_p.append((nz & ((1 << q) - 1)).astype(pdt))
                    pieces_c.append(cnt[nz].astype(np.int32))
                else:
                    srt = np.lexsort((pv, rows))
                    rows = rows[srt]
                    pv = pv[srt]
                    new = np.ones(rows.size, dtype=bool)
                    new[1:] = (rows[1:] != rows[:-1]) | (pv[1:] != pv[:-1])
                    starts = np.flatnonzero(new)
                    pieces_a.append(A[rows[starts]].astype(np.int32))
                    pieces_p.append(pv[starts].astype(pdt))
                    pieces_c.append(np.diff(np.append(starts, rows.size)).astype(np.int32))
        return pieces_a, pieces_p, pieces_c

    @property
    def entries(self) -> int:
        return int(self.e_g.size)

    def fit(self, cols: Sequence[int], *, max_iter: int = 500,
            tol: float = 1e-8) -> tuple[dict[str, Any], np.ndarray, bool]:
        """The EM fit for the table attributes at positions ``cols``: ``(em, lev_g,
        fast)`` with ``lev_g`` the weight level of every full pattern of the table and
        ``fast`` True when the all-agree pattern of the scenario is alone on the top
        level (see :func:`.._risk_kernels.pld_credit_batch`)."""
        mask = 0
        for c in cols:
            mask |= 1 << int(c)
        ru, rinv = np.unique(self.gpat & mask, return_inverse=True)
        rinv = rinv.ravel()
        rc = np.bincount(rinv, weights=self.gcnt, minlength=ru.size)
        bits = np.array(cols, dtype=np.int64)
        Gm = ((ru[:, None] >> bits[None, :]) & 1).astype(bool)
        em = fellegi_sunter_em(Gm, rc, match_share=1.0 / self.n, max_iter=max_iter, tol=tol)
        m = np.array(em["m"])
        u = np.array(em["u"])
        agree_w = np.log(m) - np.log(u)
        disagree_w = np.log1p(-m) - np.log1p(-u)
        wts = np.zeros(ru.size)
        for j in range(len(cols)):  # fixed summation order
            wts += np.where(Gm[:, j], agree_w[j], disagree_w[j])
        lev_u = _weight_levels(wts)
        lev_g = lev_u[rinv].astype(np.int64)
        em["agreement_weight"] = agree_w.tolist()
        em["disagreement_weight"] = disagree_w.tolist()
        top = lev_u.max() if lev_u.size else 0
        fast = bool(ru[-1] == mask and lev_u[-1] == top and int((lev_u == top).sum()) == 1)
        return em, lev_g, fast

    def scenario(self, cols: Sequence[int], *, max_iter: int = 500,
                 tol: float = 1e-8) -> dict[str, Any]:
        """PLD and the EM fit for the table attributes at positions ``cols``."""
        if self.rows is not None:  # the sampled estimator: its bound needs the squared credits
            return self.scenarios([cols], max_iter=max_iter, tol=tol)[0]
        em, lev_g, _fast = self.fit(cols, max_iter=max_iter, tol=tol)
        credit = float(pld_credit(lev_g, self.e_g, self.e_cnt, self._bounds, self.zero_a, self.true_g,
                                  int(lev_g[0])))
        return {"value": 100.0 * credit / self.n_records, "em": em}

    def scenarios(self, cols_list: Sequence[Sequence[int]], *, jobs: int = 1, max_iter: int = 500,
                  tol: float = 1e-8) -> list[dict[str, Any]]:
        """:meth:`scenario` for many scenarios: the EM fits side by side, then one pass
        over the originals for all scenarios (``jobs`` threads over fixed blocks of
        originals whose partial sums are added in block order: the result does not
        depend on ``jobs``)."""
        S = len(cols_list)
        if S == 0:
            return []
        if self.q > _DENSE_MAX_Q:  # no dense 2^q scratch: one scenario at a time
            return [self.scenario(c, max_iter=max_iter, tol=tol) for c in cols_list]
        jobs = max(1, int(jobs))
        fits = in_threads(lambda c: self.fit(c, max_iter=max_iter, tol=tol), cols_list, jobs, name="sdc-risk")
        G = self.gpat.size
        lev = np.empty((S, G), dtype=np.int32)
        masks = np.zeros(S, dtype=np.int64)
        fast = np.zeros(S, dtype=np.bool_)
        for s, (cols, (_em, lev_g, f)) in enumerate(zip(cols_list, fits)):
            lev[s] = lev_g
            fast[s] = f
            for c in cols:
                masks[s] |= 1 << int(c)
        L0 = np.ascontiguousarray(lev[:, 0])
        gpat = self.gpat.astype(np.int64)
        nr = self.n_records
        blocks = list(range(0, nr, _PLD_BLOCK))
        partial = np.zeros((len(blocks), S))
        partial2 = np.zeros((len(blocks), S))

        def run(b: int) -> None:
            a0 = blocks[b]
            F = np.zeros(1 << self.q, dtype=np.int64)
            pld_credit_batch(lev, masks, fast, L0, gpat, self.e_g, self.e_cnt, self._bounds, self.zero_a,
                             self.true_g, a0, min(nr, a0 + _PLD_BLOCK), F, partial[b], partial2[b])

        with progress_phase("PLD links, every scenario", total=nr, unit="rows"):
            in_threads(run, range(len(blocks)), jobs,
                       after=lambda d: progress_set(min(nr, d * _PLD_BLOCK)), name="sdc-risk")
        credit = partial.sum(axis=0)
        out = [{"value": 100.0 * float(credit[s]) / nr, "em": fits[s][0]} for s in range(S)]
        if self.rows is not None:
            squares = partial2.sum(axis=0)
            for s in range(S):
                out[s]["bound"] = sample_bound(float(credit[s]), float(squares[s]), nr)
        return out
