"""Proposing plans from the data: the blocking strategies and what ``sdc blocks`` writes.

:data:`STRATEGIES` maps each strategy to the function that cuts the columns into blocks
from their |Pearson correlation| matrix (:func:`abs_correlation`); :func:`propose_blocks`
runs one and :func:`make_plan` turns its blocks into a :class:`BlockPlan`. The mean
within-block |r| of a block or a plan, the k option check, and the header and per-block
comments of the plan files ``sdc blocks`` writes are here too. The strategies follow.

Strategies
----------
:func:`make_plan` proposes a plan from the data (deterministic; columns inside a
block keep their input order and blocks are ordered by their first column):

- ``correlated`` -- blocks of ``size`` strongly correlated attributes: greedy seeding
  on |Pearson correlation| then pairwise swaps between blocks until no swap raises the
  sum of within-block |r|; when ``size`` does not divide the number of columns, one
  block takes the remainder (smaller than ``size``; not necessarily the last one, since
  blocks are ordered by their first column).
- ``cross`` -- blocks correlated with each other: the columns are first grouped into
  strongly correlated groups of ``m = ceil(p / size)`` (the number of blocks), then
  the members of each group are dealt out one per block, so that the j-th attributes
  of all blocks are strongly correlated and the attributes inside a block are not
  (swaps between blocks within a group then lower the within-block |r|). Column j of
  every block comes from group j (the block keeps that order); block sizes differ by
  at most one.
- ``individual`` -- one block per column; ``single`` -- one block of every column;
  ``random`` -- a seeded random permutation cut into blocks of ``size`` (one block,
  wherever its first column puts it, takes the remainder).
"""

from __future__ import annotations

import math
from itertools import combinations
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..errors import InvalidParameterError, check_k_value
from ..request import DEFAULT_BLOCK_SIZE, BlocksRequest, default
from .model import Block, BlockPlan

__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "STRATEGIES",
    "abs_correlation",
    "propose_blocks",
    "make_plan",
    "block_mean_abs_corr",
    "plan_mean_abs_corr",
    "plan_comment",
    "block_notes",
    "BLOCKS_SCHEMA_VERSION",
]

#: Version of the ``sdc blocks --format json`` layout (``microagg_cli/schemas/blocks.json``).
BLOCKS_SCHEMA_VERSION = "1.0"


def abs_correlation(X: np.ndarray) -> np.ndarray:
    """|Pearson correlation| of the columns of ``X`` (p x p), 1 on the diagonal.

    Missing values (NaN) are left out pair by pair (pairwise-complete records); a
    pair with fewer than two common records or a constant column has correlation 0.
    """
    X = np.asarray(X, dtype=np.float64)
    p = X.shape[1]
    finite = np.isfinite(X)
    A = np.zeros((p, p))
    if finite.all():
        sd = X.std(axis=0)
        ok = sd > 0
        Z = np.zeros_like(X)
        Z[:, ok] = (X[:, ok] - X[:, ok].mean(axis=0)) / sd[ok]
        A = np.abs(Z.T @ Z) / X.shape[0]
    else:
        for i in range(p):
            for j in range(i + 1, p):
                m = finite[:, i] & finite[:, j]
                if m.sum() < 2:
                    continue
                a, b = X[m, i], X[m, j]
                sa, sb = a.std(), b.std()
                if sa > 0 and sb > 0:
                    A[i, j] = A[j, i] = abs(float(((a - a.mean()) * (b - b.mean())).mean() / (sa * sb)))
    A = np.clip(A, 0.0, 1.0)
    np.fill_diagonal(A, 1.0)
    return A


def _sizes(p: int, size: int) -> list[int]:
    return [size] * (p // size) + ([p % size] if p % size else [])


def _greedy_correlated(A: np.ndarray, size: int) -> list[list[int]]:
    """Seed each block with the most correlated free pair, grow it by the free column
    with the largest summed |r| to the block; ties to the lowest column position."""
    p = A.shape[0]
    free = list(range(p))
    blocks: list[list[int]] = []
    for target in _sizes(p, size):
        if target == 1 or len(free) == 1:
            block = [free[0]]
        else:
            best, pair = -1.0, (free[0], free[1])
            for a, b in combinations(free, 2):
                if A[a, b] > best:
                    best, pair = A[a, b], (a, b)
            block = list(pair)
            while len(block) < target:
                cand = [c for c in free if c not in block]
                score = [A[c, block].sum() for c in cand]
                block.append(cand[int(np.argmax(score))])
        blocks.append(block)
        free = [c for c in free if c not in block]
    return blocks


def _swap_improve(A: np.ndarray, blocks: list[list[int]], sign: float, groups: list[list[int]] | None = None,
                  max_rounds: int = 1000) -> list[list[int]]:
    """Best-improvement swaps of two columns between blocks, raising
    ``sign * sum of within-block |r|``, until none helps.

    With ``groups``, only columns of the same group may be swapped (keeps the
    cross structure).
    """
    blocks = [list(b) for b in blocks]
    group_of = {c: g for g, grp in enumerate(groups) for c in grp} if groups else None
    for _ in range(max_rounds):
        best_gain, best_move = 1e-12, None
        for a, b in combinations(range(len(blocks)), 2):
            for x in blocks[a]:
                rest_a = [c for c in blocks[a] if c != x]
                for y in blocks[b]:
                    if group_of is not None and group_of[x] != group_of[y]:
                        continue
                    rest_b = [c for c in blocks[b] if c != y]
                    gain = (A[y, rest_a].sum() - A[x, rest_a].sum() + A[x, rest_b].sum() - A[y, rest_b].sum())
                    gain *= sign
                    if gain > best_gain:
                        best_gain, best_move = gain, (a, x, b, y)
        if best_move is None:
            break
        a, x, b, y = best_move
        blocks[a][blocks[a].index(x)] = y
        blocks[b][blocks[b].index(y)] = x
    return blocks


def _canonical(blocks: list[list[int]]) -> list[list[int]]:
    return sorted((sorted(b) for b in blocks if b), key=lambda b: b[0])


def _correlated(A: np.ndarray, size: int, seed: int) -> list[list[int]]:
    return _canonical(_swap_improve(A, _greedy_correlated(A, size), +1.0))


def _cross(A: np.ndarray, size: int, seed: int) -> list[list[int]]:
    p = A.shape[0]
    m = math.ceil(p / size)  # number of blocks
    groups = _correlated(A, m, seed)
    blocks: list[list[int]] = [[] for _ in range(m)]
    for grp in groups:
        for t, c in enumerate(grp):
            blocks[t].append(c)
    blocks = _swap_improve(A, blocks, -1.0, groups=groups)
    # keep the group order inside each block: column j of every block comes from group j
    return sorted((b for b in blocks if b), key=lambda b: b[0])


def _individual(A: np.ndarray, size: int, seed: int) -> list[list[int]]:
    return [[j] for j in range(A.shape[0])]


def _single(A: np.ndarray, size: int, seed: int) -> list[list[int]]:
    return [list(range(A.shape[0]))]


def _random(A: np.ndarray, size: int, seed: int) -> list[list[int]]:
    perm = np.random.default_rng(int(seed)).permutation(A.shape[0]).tolist()
    return _canonical([perm[i:i + size] for i in range(0, len(perm), size)])


#: name -> (function(|corr| matrix, size, seed) -> blocks of column positions,
#: whether it needs a block size, one-line description).
STRATEGIES: dict[str, tuple[Callable[[np.ndarray, int, int], list[list[int]]], bool, str]] = {
    "correlated": (_correlated, True, "blocks of SIZE strongly correlated columns (one block: the remainder)"),
    "cross": (_cross, True, "the j-th columns of all blocks strongly correlated; weak correlation inside a block"),
    "individual": (_individual, False, "one block per column"),
    "single": (_single, False, "one block of every column"),
    "random": (_random, True, "a seeded random permutation cut into blocks of SIZE"),
}


def propose_blocks(
    X: np.ndarray,
    names: Sequence[str],
    strategy: str,
    size: int | None = None,
    *,
    seed: int = default(BlocksRequest, "seed"),
) -> list[tuple[str, ...]]:
    """Blocks of column names proposed by ``strategy`` for the (n, p) data ``X``.

    Deterministic: the same data, size and seed give the same blocks. Columns in a
    block keep their order in ``names``; blocks are ordered by their first column.
    """
    if strategy not in STRATEGIES:
        raise InvalidParameterError(f"unknown strategy {strategy!r} (known: {', '.join(STRATEGIES)})")
    func, needs_size, _ = STRATEGIES[strategy]
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != len(names) or X.shape[1] == 0:
        raise InvalidParameterError("propose_blocks needs an (n, p) matrix and p column names, p >= 1")
    if needs_size:
        if size is None:
            raise InvalidParameterError(f"strategy {strategy!r} needs a block size (--size S)")
        if isinstance(size, bool) or int(size) != size or size < 1:
            raise InvalidParameterError(f"the block size must be an integer >= 1, got {size!r}")
    size = int(size) if size is not None else 1
    blocks = func(abs_correlation(X), min(size, X.shape[1]), seed)
    return [tuple(names[j] for j in b) for b in blocks]


def make_plan(
    X: np.ndarray,
    names: Sequence[str],
    *,
    strategy: str,
    size: int | None = None,
    seed: int = default(BlocksRequest, "seed"),
    method: str = default(BlocksRequest, "method"),
    k: int | None = None,
    params: Mapping[str, Any] | None = None,
    drop: Sequence[str] = (),
) -> BlockPlan:
    """A :class:`BlockPlan` proposed by ``strategy``; every block gets ``method``,
    ``k`` (None: left to ``sdc protect -k``) and ``params``."""
    from ..methods import get_method

    spec = get_method(method)
    spec.validate_params(dict(params or {}))
    # keep only the parameters given (converted), so the plan file stays short
    params = {p: spec.validate_params({p: v})[p] for p, v in (params or {}).items()}
    if k is not None:
        check_k_value(k)
    blocks = propose_blocks(X, names, strategy, size, seed=seed)
    return BlockPlan(
        tuple(Block(f"block{i + 1}", cols, spec.name, k, dict(params)) for i, cols in enumerate(blocks)),
        tuple(drop),
    )


def block_mean_abs_corr(A: np.ndarray, positions: Sequence[int]) -> float | None:
    """Mean |r| over the pairs of a block (None for a one-column block)."""
    pairs = list(combinations(positions, 2))
    return float(np.mean([A[i, j] for i, j in pairs])) if pairs else None


def plan_mean_abs_corr(X: np.ndarray, names: Sequence[str], plan: BlockPlan) -> float | None:
    """Mean |r| over every within-block pair of columns of ``plan`` (pooled)."""
    A = abs_correlation(X)
    pos = {c: j for j, c in enumerate(names)}
    values = [A[pos[a], pos[b]] for blk in plan.blocks for a, b in combinations(blk.columns, 2)]
    return float(np.mean(values)) if values else None


# ----------------------------------------------------------- evaluation (k')


def plan_comment(name: str, size: int | None, seed: int, source: str = "INPUT") -> str:
    """The header comment of a plan file written by ``sdc blocks`` for candidate ``name``."""
    if name in STRATEGIES:
        how = f"--strategy {name}" + (f" --size {size}" if STRATEGIES[name][1] and size is not None else "")
        how += f" --seed {seed}" if name == "random" else ""
    else:
        how = f"--check {name}"
    return (f"sdc blocking plan: sdc blocks {source} {how}\n"
            "Edit freely; `sdc blocks INPUT --check PLAN` validates it, "
            "`sdc protect INPUT --plan PLAN -o OUT` applies it.")


def block_notes(entry: Mapping[str, Any]) -> dict[str, str]:
    """Per-block comments (mean |r| inside the block) for :func:`plan_to_toml`."""
    out = {}
    for name, value in entry.get("block_mean_abs_corr", {}).items():
        if value is not None:
            out[name] = f"mean |corr| inside the block: {value:.3f}"
    return out
