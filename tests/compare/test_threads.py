"""compare --jobs sizes worker processes and method threads together."""

from __future__ import annotations

import multiprocessing

import pytest

from microagg_cli import threads
from microagg_cli.errors import InvalidParameterError
from microagg_cli.comparison import pool as compare_pool
from microagg_cli.methods import refine


def test_limit_is_capped_by_the_cpus_and_restored():
    cpus = threads.available_cpus()
    assert threads.limit() == cpus
    with threads.limited(1):
        assert threads.limit() == 1
        assert refine._cpus() == 1  # ils then runs its two searches one after the other
    with threads.limited(10 * cpus):
        assert threads.limit() == cpus
    assert threads.limit() == cpus


def test_jobs_never_exceed_the_cpus_or_the_cells():
    cpus = threads.available_cpus()
    assert compare_pool.resolve_jobs(0, 100) == min(cpus, 100)
    assert compare_pool.resolve_jobs(10 * cpus, 100) == cpus
    assert compare_pool.resolve_jobs(4, 1) == 1
    with pytest.raises(InvalidParameterError, match="--jobs must be >= 0"):
        compare_pool.resolve_jobs(-1, 3)


def _probe(state):
    from threadpoolctl import threadpool_info

    compare_pool._worker_init(state)
    return threads.limit(), max((i["num_threads"] for i in threadpool_info()), default=1)


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_a_worker_gets_its_share_of_the_cpus():
    import numpy  # noqa: F401  (OpenBLAS loaded, as in a real worker)

    state = compare_pool._WorkerState(None, [], None, None, False, threads=1)
    with multiprocessing.get_context("fork").Pool(1) as pool:
        limit, blas = pool.apply(_probe, (state,))
    assert limit == 1 and blas == 1
