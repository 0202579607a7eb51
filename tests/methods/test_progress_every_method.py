"""Progress tells the truth for every registered method: it advances during the run,
never goes back, never passes its total, and never reaches its total while work goes on
in that phase (or in a phase nested in it)."""

from __future__ import annotations

import numpy as np
import pytest

from microagg_cli import progress
from microagg_cli.methods import METHODS


class Recorder(progress.Tracker):
    """A tracker that records every event instead of displaying it."""

    def __init__(self) -> None:
        super().__init__("off")
        self.events: list[tuple[str, str | None, int | None, int]] = []

    def begin(self, name, total, unit, work="linear"):
        outer = super().begin(name, total, unit, work)
        self.events.append(("begin", name, total, 0))
        return outer

    def end(self, outer=None):
        self.events.append(("end", self.name, self.total, int(self.cell[0])))
        super().end(outer)

    def add(self, records):
        super().add(records)
        self.events.append(("count", self.name, self.total, int(self.cell[0])))

    def set(self, records):
        super().set(records)
        self.events.append(("count", self.name, self.total, int(self.cell[0])))


def check_events(events: list[tuple[str, str | None, int | None, int]]) -> None:
    """Monotone counts within each phase, never past the total, and a phase at its total
    sees no more work (counts, nested phases) before it ends."""
    stack: list[dict] = []
    for kind, name, total, done in events:
        if kind == "begin":
            if stack:
                assert not stack[-1]["full"], f"phase {stack[-1]['name']!r} at 100 % while {name!r} starts"
            stack.append({"name": name, "total": total, "done": 0, "full": False})
            continue
        top = stack[-1]
        assert top["name"] == name
        if kind == "count":
            assert not top["full"], f"phase {name!r} counted after reaching its total"
        assert done >= top["done"], f"phase {name!r} went back from {top['done']} to {done}"
        if total:
            assert done <= total, f"phase {name!r}: {done} done of {total}"
            top["full"] = done >= total
        top["done"] = done
        if kind == "end":
            stack.pop()
    assert not stack


def run_recorded(name: str, n: int = 240, k: int = 3) -> list:
    spec = METHODS[name]
    X = np.random.default_rng(7).normal(size=(n, 1 if spec.max_columns == 1 else 4))
    params = {"iterations": 300} if name in ("ils",) else {"iterations": 20} if name == "genetic" else {}
    rec = Recorder()
    with progress.tracking(rec), progress.phase("block1", total=n):
        spec.func(X, k, rng=np.random.default_rng(0), **params)
    return rec.events


@pytest.mark.parametrize("name", list(METHODS))
def test_every_method_advances_truthfully(name):
    events = run_recorded(name)
    check_events(events)
    # it advanced before the end: a count above zero in some phase before the block ends
    assert any(kind in ("count", "end") and done > 0 for kind, _n, _t, done in events[:-1]), events[:10]


def test_check_events_catches_a_lie():
    with pytest.raises(AssertionError, match="100 %"):
        check_events([("begin", "b", 10, 0), ("count", "b", 10, 10), ("begin", "it", 5, 0),
                      ("end", "it", 5, 5), ("end", "b", 10, 10)])
    with pytest.raises(AssertionError, match="went back"):
        check_events([("begin", "b", 10, 0), ("count", "b", 10, 6), ("count", "b", 10, 3), ("end", "b", 10, 3)])
    with pytest.raises(AssertionError, match="counted after"):
        check_events([("begin", "b", 10, 0), ("count", "b", 10, 10), ("count", "b", 10, 10), ("end", "b", 10, 10)])


def test_nested_phase_restores_the_outer_count():
    rec = Recorder()
    with progress.tracking(rec), progress.phase("block", total=10):
        progress.advance(4)
        with progress.phase("iterations", total=100, unit="iterations"):
            progress.advance(50)
            assert rec.line().startswith("iterations: 50 / 100 iterations")
        assert rec.name == "block" and int(rec.cell[0]) == 4 and rec.total == 10
