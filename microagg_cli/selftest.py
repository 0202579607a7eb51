"""Warm up and check the compiled kernels: what ``sdc self-test`` runs.

The methods with compiled kernels (numba, see :mod:`microagg_cli._jit`) compile them on
their first use after installation, once, and cache them. A container image, a
fresh virtual environment or a cron host runs ``sdc self-test`` once (``--all`` for
every compiled method) so that no production run pays that time, and so that the
compiled code is checked on the machine that will run it:

* ``mdav``: the compiled fast MDAV (:func:`.methods._fast_mdav.mdav_fast`) must return
  exactly the partition of the straightforward reference
  (:func:`.methods.fixed_size.mdav_reference`) on 2,500 seeded records with many ties
  (Domingo-Ferrer & Torra 2005; ties go to the record that comes first in the input);
* the other compiled methods: a partition of every record into groups of at least k,
  and for the methods that refine or optimise a start (``ils``, ``mdav-ls``,
  ``optimal-1d``) an SSE never above MDAV's on the same records.

Each check reports its time and how many kernels numba compiled for it (0: they came
from the cache). The cache location is the one :mod:`microagg_cli._jit` settles.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from . import _jit
from .errors import InvalidParameterError
from .methods import get_method
from .partition import sse

__all__ = ["COMPILED_METHODS", "ALL_CHECKS", "DEFAULT_METHODS", "CheckResult", "run_self_test", "cache_location"]

#: Methods whose work is done by compiled kernels, in the order ``--all`` checks them.
COMPILED_METHODS = ("mdav", "ils", "mdav-ls", "kward", "kward-1d", "optimal-1d", "pcp", "zscores", "sugeno",
                    "mhm", "genetic")

#: Every check ``--all`` runs: the methods, ``mixed`` (the kernels of the grouping with
#: categorical keys, ``--categorical``), then ``risk``, the kernels of the risk measures
#: (``sdc evaluate`` and every report's risk section: DLD, PLD, k'; the MCD of robeigen).
ALL_CHECKS = COMPILED_METHODS + ("mixed", "risk")

#: What ``sdc self-test`` checks without arguments: the kernels of ``sdc protect``'s
#: default method.
DEFAULT_METHODS = ("mdav",)

_K = 3
_SEED = 20261126


@dataclass(frozen=True)
class CheckResult:
    """One method's check: ``passed``, what was checked, seconds, kernels compiled."""

    method: str
    check: str
    passed: bool
    seconds: float
    compiled: int
    message: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"method": self.method, "check": self.check, "passed": self.passed,
                "seconds": round(self.seconds, 3), "kernels_compiled": self.compiled, "message": self.message}


def _data(n: int, p: int) -> np.ndarray:
    """Seeded records with many ties (values on a 0.1 grid), z-scored."""
    X = np.round(np.random.default_rng(_SEED).normal(size=(n, p)), 1)
    return (X - X.mean(axis=0)) / X.std(axis=0)


def _check_mdav() -> tuple[str, str]:
    from .methods.fixed_size import FAST_MDAV_MIN_N, mdav, mdav_reference

    n = max(2500, FAST_MDAV_MIN_N)
    X = _data(n, 4)
    what = f"fast MDAV = reference MDAV ({n:,} x 4, ties)"
    got, want = mdav(X, _K), mdav_reference(X, _K)
    if not np.array_equal(got, want):
        return what, f"partitions differ in {int((got != want).sum())} of {n} records"
    return what, ""


_PARAMS: dict[str, dict[str, Any]] = {
    "ils": {"iterations": 2000, "threads": 1},
    "genetic": {"iterations": 200},
}
_NO_WORSE_THAN_MDAV = ("ils", "mdav-ls", "optimal-1d")


def _check_method(name: str) -> Callable[[], tuple[str, str]]:
    def run() -> tuple[str, str]:
        spec = get_method(name)
        p = spec.max_columns or 3
        n = 400
        X = _data(n, p)
        labels = np.asarray(spec.func(X, _K, rng=np.random.default_rng(_SEED), **_PARAMS.get(name, {})))
        what = f"groups of >= {_K} covering all {n} records ({n} x {p})"
        if labels.shape != (n,):
            return what, f"labels of shape {labels.shape}"
        smallest = int(np.unique(labels, return_counts=True)[1].min())
        if smallest < _K:
            return what, f"a group of {smallest} record(s), below k = {_K}"
        if name == "optimal-1d":  # the large-k solvers too (module _monge)
            from .methods.univariate import MONGE_MIN_K, optimal_contiguous_sizes

            what += f", its three solvers agree (k = {MONGE_MIN_K})"
            v = np.sort(np.round(10 * X[:, 0]))  # integer values: bit-identical edge costs
            ref = optimal_contiguous_sizes(v, MONGE_MIN_K, solver="shortest-path")
            for solver in ("divide-and-conquer", "smawk"):
                if not np.array_equal(optimal_contiguous_sizes(v, MONGE_MIN_K, solver=solver), ref):
                    return what, f"the {solver} solver differs from the shortest path"
        if name in _NO_WORSE_THAN_MDAV:
            from .methods.fixed_size import mdav_reference

            what += ", SSE <= MDAV's"
            mine, base = sse(X, labels), sse(X, mdav_reference(X, _K))
            if mine > base * (1 + 1e-12):
                return what, f"SSE {mine:.6g} above MDAV's {base:.6g}"
        return what, ""

    return run


def _brute_dld(Z: np.ndarray, Zp: np.ndarray, cols: tuple[int, ...]) -> float:
    """DLD by brute force (every original against every distinct protected row, the
    distances summed column by column as the kernels do)."""
    U, mult = np.unique(Zp, axis=0, return_counts=True)
    d = np.zeros((Z.shape[0], U.shape[0]))
    own = np.zeros(Z.shape[0])
    for c in cols:
        d = d + (Z[:, c, None] - U[None, :, c]) ** 2
        own = own + (Z[:, c] - Zp[:, c]) ** 2
    beaten = (d < own[:, None]).any(axis=1)
    ties = ((d == own[:, None]) * mult).sum(axis=1)
    return 100.0 * float(np.where(beaten, 0.0, 1.0 / ties).sum()) / Z.shape[0]


def _check_risk() -> tuple[str, str]:
    """The risk measures' kernels on every scenario of a small MDAV-protected file: the
    layered DLD pass (margins, beaters, k-d trees) gives each scenario's DLD exactly as
    brute force does, and PLD has a value everywhere; the MCD's compiled Mahalanobis
    distances (robeigen, RMD, the robust methods) equal numpy's formula."""
    from .mcd import det_mcd, robust_mahalanobis, robust_scale
    from .methods.fixed_size import mdav_reference
    from .metrics.risk import RiskEvaluator
    from .metrics.scenarios import all_subsets
    from .partition import aggregate

    n, p = 300, 4
    X = _data(n, p)
    Xp = aggregate(X, mdav_reference(X, _K))
    scs = all_subsets(p)
    what = (f"risk measures of all {len(scs)} scenarios ({n} x {p}): DLD by layers = brute force; "
            "MCD distances = numpy's")
    # robust_mahalanobis works in the median/MAD-standardized space; numpy's formula there
    centre, S = det_mcd(X)
    med = np.median(X, axis=0)
    scale = np.array([robust_scale(X[:, j]) for j in range(p)])
    Ss = S / scale[:, None] / scale[None, :]
    w, V = np.linalg.eigh((Ss + Ss.T) / 2.0)
    want_d2 = (((((X - med) / scale - (centre - med) / scale) @ V) ** 2) / w).sum(axis=1)
    got_d2 = robust_mahalanobis(X)
    if not np.allclose(got_d2, want_d2, rtol=1e-9, atol=0.0):
        return what, f"MCD distances differ from numpy's by up to {np.max(np.abs(got_d2 - want_d2)):.3g}"
    ev = RiskEvaluator(X, Xp, k=_K)
    for sc, row in zip(scs, ev.evaluate(scs)):
        want = _brute_dld(ev.Z, ev.Zp, tuple(sc))
        if abs(row["dld"] - want) > 1e-9 * max(1.0, want):
            return what, f"DLD of scenario {list(sc)}: {row['dld']!r} by layers, {want!r} by brute force"
        if row["pld"] is None or row["k_min"] < _K:
            return what, f"scenario {list(sc)}: PLD {row['pld']!r}, k_min {row['k_min']}"
    return what, ""


def _check_mixed() -> tuple[str, str]:
    """Heterogeneous MDAV and its local search (``--categorical``): without keys the very
    partition of MDAV's reference; with keys groups >= k whose mixed objective the search
    never raises."""
    from .methods.fixed_size import mdav_reference
    from .methods.mixed import mixed_mdav, mixed_objective
    from .methods.mixed_refine import mixed_ils, mixed_local_search

    n = 300
    X = _data(n, 2)
    nominal = (np.abs(np.round(X * 3)) % 4).astype(np.int64)
    what = (f"mixed MDAV = MDAV without keys; with 2 keys groups >= {_K}, local search and ils's kicks never "
            f"worse ({n} records)")
    if not np.array_equal(mixed_mdav(X, _K), mdav_reference(X, _K)):
        return what, "without keys the partition differs from MDAV's reference"
    start = mixed_mdav(X, _K, nominal=nominal)
    labels = mixed_local_search(X, start, _K, nominal=nominal)
    if np.bincount(labels).min() < _K or np.bincount(start).min() < _K:
        return what, f"a group below k = {_K}"
    if mixed_objective(X, labels, nominal=nominal) > mixed_objective(X, start, nominal=nominal) * (1 + 1e-12):
        return what, "the local search raised the mixed objective"
    kicked = mixed_ils(X, start, _K, nominal=nominal, rng=np.random.default_rng(0), iterations=200)
    if np.bincount(kicked).min() < _K:
        return what, f"ils: a group below k = {_K}"
    if mixed_objective(X, kicked, nominal=nominal) > mixed_objective(X, labels, nominal=nominal) * (1 + 1e-12):
        return what, "ils's kicks raised the mixed objective above the local search's"
    return what, ""


def _checks() -> dict[str, Callable[[], tuple[str, str]]]:
    checks = {name: (_check_mdav if name == "mdav" else _check_method(name)) for name in COMPILED_METHODS}
    checks["risk"] = _check_risk
    checks["mixed"] = _check_mixed
    return checks


def run_self_test(methods: tuple[str, ...] | list[str] | None = None,
                  on_result: Callable[[CheckResult], None] | None = None) -> list[CheckResult]:
    """Compile (or load) and check the kernels of ``methods`` (default
    :data:`DEFAULT_METHODS`); ``on_result`` sees each result as it comes.

    Raises :class:`InvalidParameterError` for a method without compiled kernels.
    """
    checks = _checks()
    names = list(methods) if methods else list(DEFAULT_METHODS)
    for name in names:
        if name not in checks:
            raise InvalidParameterError(
                f"{name!r} has no compiled kernels to check; choose from {', '.join(ALL_CHECKS)}")
    out = []
    for name in names:
        before = _jit.compilations()
        t0 = time.perf_counter()
        what, problem = checks[name]()
        result = CheckResult(name, what, not problem, time.perf_counter() - t0,
                             _jit.compilations() - before, problem)
        out.append(result)
        if on_result is not None:
            on_result(result)
    return out


def cache_location() -> str:
    """Where numba keeps the compiled kernels of this installation (see :mod:`._jit`)."""
    import os
    from pathlib import Path

    folder = os.environ.get("NUMBA_CACHE_DIR")
    if folder:
        return folder
    package = Path(__file__).resolve().parent
    return " and ".join(str(package / sub / "__pycache__") for sub in ("methods", "metrics", "."))
