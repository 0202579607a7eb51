"""A grid's original-only work (RMD's robust scatter, LB_NN of every k) is computed once
and shared with every worker: each cell's figures stay those it computes from scratch."""

from __future__ import annotations

import json
import pickle

import pytest

from conftest import SAMPLE
from microagg_cli import memo
from microagg_cli.comparison import cells as grid_cells
from microagg_cli.comparison.cells import (ORIGINAL_CACHES, EvalOptions, build_cells, original_work, parse_method,
                                           run_cell, run_original_work, single_plan)
from microagg_cli.comparison.pool import run_grid
from microagg_cli.io import read_table

CENSUS = SAMPLE / "census.csv"
OPTIONS = EvalOptions(seed=0, known=None, max_scenarios=8, dr_weights=None, score_weights=None)


@pytest.fixture(scope="module")
def table():
    return read_table(CENSUS)


def _grid(table, methods=("mdav", "pcp", "mic1d"), ks=(3, 5)):
    plan = single_plan(table.columns[:6])
    return build_cells([parse_method(m) for m in methods], list(ks), [plan])


def _figures(row: dict) -> str:
    row = dict(row)
    row.pop("seconds")
    return json.dumps(row, sort_keys=True)


def test_the_work_is_what_the_cells_would_compute(table):
    cells = _grid(table)
    work = original_work(cells)
    # one MCD per plan, LB_NN for the k of the partitioning methods (mic1d's k counts values)
    assert [(w.what, w.ks) for w in work] == [("mcd", ()), ("lb_nn", (3, 5))]
    assert original_work(_grid(table, methods=("mic1d",))) == [work[0]]


def test_a_cell_with_the_shared_work_equals_a_cell_from_scratch(table):
    cells = _grid(table)
    scratch = []
    for c in cells:
        memo.clear()
        scratch.append(_figures(run_cell(table, c, OPTIONS)))
    # the work done "in another process": computed, exported through pickle, forgotten
    memo.clear()
    for item in original_work(cells):
        run_original_work(table, item)
    shipped = pickle.loads(pickle.dumps(memo.exported(ORIGINAL_CACHES)))
    assert {n: len(v) for n, v in shipped.items()} == {"mcd": 1, "lb_nn": 2}
    memo.clear()
    memo.absorb(shipped)

    shared = [_figures(run_cell(table, c, OPTIONS)) for c in cells]
    assert shared == scratch


def test_absorbed_results_are_used_not_recomputed(table, monkeypatch):
    cells = _grid(table, methods=("mdav",), ks=(3,))
    memo.clear()
    for item in original_work(cells):
        run_original_work(table, item)
    shipped = memo.exported(ORIGINAL_CACHES)
    memo.clear()
    memo.absorb(shipped)
    import microagg_cli.mcd as mcd
    import microagg_cli.metrics.utility as utility

    def fail(*a, **k):
        raise AssertionError("recomputed although shared")

    monkeypatch.setattr(mcd, "_det_mcd", fail)
    monkeypatch.setattr(utility, "_lb_nn_sum_of", fail)
    run_cell(table, cells[0], OPTIONS)


def test_a_failing_work_item_is_left_to_the_cells(table, monkeypatch):
    cells = _grid(table, methods=("mdav",), ks=(3,))
    memo.clear()

    def broken(*a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr(grid_cells, "original_scatter", broken)
    for item in original_work(cells):
        run_original_work(table, item)  # no error here
    assert memo.exported(["mcd"]) == {"mcd": []}
    assert run_cell(table, cells[0], OPTIONS)["rmdid1"] is not None


def test_grid_rows_do_not_depend_on_jobs_or_on_kept_results(table):
    cells = _grid(table)
    memo.clear()
    one = [_figures(r) for r in run_grid(table, cells, OPTIONS, jobs=1)]
    memo.clear()
    two = [_figures(r) for r in run_grid(table, cells, OPTIONS, jobs=2)]
    assert one == two
