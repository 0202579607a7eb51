"""Progress of a long run: phases and records done, shown on stderr.

The pipeline announces its phases (reading, each block, the bound, writing) with
:func:`phase` and counts records with :func:`advance`; compiled kernels, which run
without the GIL, write the records they have grouped so far into :func:`counter`
(an int64 array of one cell) and a watcher thread reads it. Nothing here prints
unless a :class:`Tracker` is installed (:func:`tracking`): by default every call is
a no-op, so the library stays silent.

Two displays (the CLI picks one, see ``sdc protect``):

- ``"bar"`` -- a rich progress bar on a terminal (records / total, rate, ETA) for
  any phase that lasts over about a second, gone when the phase ends;
- ``"heartbeat"`` -- when stderr is not a terminal and ``-v`` is given, a timestamped
  log line every ``interval`` seconds: ``block1: 340,000 / 1,000,000 records
  grouped, 52 s``.

Examples
--------
>>> with phase("block1", total=10):
...     advance(4)
>>> counter().tolist()  # no tracker installed: a scratch cell
[0]
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from typing import Any, Iterator

import numpy as np

__all__ = ["Tracker", "tracking", "silenced", "phase", "advance", "set_done", "Shrinking", "counter", "time_left",
           "SHOW_AFTER", "HEARTBEAT_SECONDS"]

log = logging.getLogger("microagg_cli")

#: A phase shorter than this (seconds) never shows a bar.
SHOW_AFTER = 1.0

#: Seconds between two heartbeat lines.
HEARTBEAT_SECONDS = 10.0


class Tracker:
    """Phases and a record counter, displayed by a watcher thread.

    ``mode``: ``"bar"`` (rich, on ``console``), ``"heartbeat"`` (a log line every
    ``interval`` s) or ``"off"``.
    """

    def __init__(self, mode: str = "off", *, console: Any = None, interval: float | None = None,
                 tick: float = 0.2):
        if mode not in ("bar", "heartbeat", "off"):
            raise ValueError(f"unknown progress mode {mode!r}")
        self.mode = mode
        self.console = console
        self.interval = HEARTBEAT_SECONDS if interval is None else interval
        self.tick = tick
        self.cell = np.zeros(1, dtype=np.int64)  # records done in the phase (kernels write here)
        self.name: str | None = None
        self.total: int | None = None
        self.unit = "records"
        self.work = "linear"
        self.started = time.monotonic()
        self.phase_started = self.started
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._bar: Any = None
        self._task: Any = None
        self._shown: str | None = None

    # ---------------------------------------------------------------- the pipeline side

    def begin(self, name: str, total: int | None, unit: str, work: str = "linear") -> tuple[Any, ...]:
        """Start a phase; returns the phase it interrupts (for :meth:`end`)."""
        with self._lock:
            outer = (self.name, self.total, self.unit, int(self.cell[0]), self.phase_started, self.work)
            self.name, self.total, self.unit, self.work = name, total, unit, work
            self.cell[0] = 0
            self.phase_started = time.monotonic()
        return outer

    def end(self, outer: tuple[Any, ...] | None = None) -> None:
        """End the phase; a phase run inside another (``outer``, from :meth:`begin`)
        gives the display back to it, its count and clock as they were."""
        with self._lock:
            if outer is None or outer[0] is None:
                self.name = None
            else:
                self.name, self.total, self.unit, self.cell[0], self.phase_started, self.work = outer
        self._refresh(final=True)

    def add(self, records: int) -> None:
        """Count ``records`` more done in the current phase (from any thread)."""
        with self._lock:
            self.cell[0] += int(records)

    def set(self, records: int) -> None:
        """Set the count of the current phase."""
        with self._lock:
            self.cell[0] = int(records)

    # ---------------------------------------------------------------- the watcher side

    def start(self) -> "Tracker":
        if self.mode != "off":
            self._thread = threading.Thread(target=self._watch, name="sdc-progress", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        self._close_bar()

    def _watch(self) -> None:
        last_beat = time.monotonic()
        while not self._stop.wait(self.tick):
            if self.mode == "bar":
                self._refresh()
            elif time.monotonic() - last_beat >= self.interval:
                last_beat = time.monotonic()
                line = self.line()
                if line:
                    log.info("%s", line)

    def line(self) -> str | None:
        """The heartbeat text of the current phase (None between phases)."""
        with self._lock:
            name, total, unit, done, work = self.name, self.total, self.unit, int(self.cell[0]), self.work
            seconds = time.monotonic() - self.phase_started
        if name is None:
            return None
        verb = " grouped" if unit == "records" else ""
        rate = done / seconds if seconds > 0 else 0.0
        if total:
            line = f"{name}: {min(done, total):,} / {total:,} {unit}{verb}, {seconds:.0f} s"
            if rate > 0 and done < total:
                line += f", {rate:,.0f} {unit}/s, about {time_left(done, total, seconds, work):.0f} s left"
            return line
        if done:
            return f"{name}: {done:,} {unit}{verb}, {rate:,.0f}/s, {seconds:.0f} s"
        return f"{name}: {seconds:.0f} s"

    def _refresh(self, final: bool = False) -> None:
        if self.mode != "bar":
            return
        with self._lock:
            name, total, done = self.name, self.total, int(self.cell[0])
            age = time.monotonic() - self.phase_started
        if name is None or final:
            self._close_bar()
            return
        if self._shown != name:
            if age < SHOW_AFTER:
                return
            self._close_bar()
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TaskProgressColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TaskProgressColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
                                 console=self.console, transient=True)
            self._bar.start()
            self._task = self._bar.add_task(name, total=total)
            self._shown = name
        self._bar.update(self._task, completed=min(done, total) if total else done)

    def _close_bar(self) -> None:
        if self._bar is not None:
            self._bar.stop()
        self._bar, self._task, self._shown = None, None, None


_CURRENT: Tracker | None = None
_SCRATCH = np.zeros(1, dtype=np.int64)
# threads whose phases are not shown (work run beside the phase on display)
_LOCAL = threading.local()


def _tracker() -> Tracker | None:
    return None if getattr(_LOCAL, "quiet", False) else _CURRENT


@contextlib.contextmanager
def silenced() -> Iterator[None]:
    """Within the block, this thread's phases and counts are not shown: for work run
    in a thread beside the phase on display (one display, one phase at a time)."""
    old = getattr(_LOCAL, "quiet", False)
    _LOCAL.quiet = True
    try:
        yield
    finally:
        _LOCAL.quiet = old


@contextlib.contextmanager
def tracking(tracker: Tracker) -> Iterator[Tracker]:
    """Install ``tracker`` for the duration of the block (the CLI does this)."""
    global _CURRENT
    previous, _CURRENT = _CURRENT, tracker.start()
    try:
        yield tracker
    finally:
        tracker.stop()
        _CURRENT = previous


def time_left(done: int, total: int, seconds: float, work: str = "linear") -> float:
    """Seconds left after ``seconds`` for ``done`` of ``total`` units.

    ``work``: ``"linear"`` (every unit costs the same) or ``"quadratic"`` (a unit costs
    in proportion to the units left, as an MDAV step scans the records left: the work
    done so far is proportional to total^2 - left^2, the work left to left^2).

    Examples
    --------
    >>> time_left(25, 100, 10.0), round(time_left(50, 100, 30.0, "quadratic"), 6)
    (30.0, 10.0)
    """
    left = total - done
    if work == "quadratic":
        spent = total * total - left * left
        return seconds * left * left / spent if spent > 0 else 0.0
    return seconds * left / done if done > 0 else 0.0


@contextlib.contextmanager
def phase(name: str, total: int | None = None, unit: str = "records", work: str = "linear") -> Iterator[None]:
    """A phase of the run (``total`` records, or None when unknown). A phase inside
    another shows instead of it until it ends (e.g. a block's local search). ``work``:
    how the time left is estimated (:func:`time_left`)."""
    tracker = _tracker()
    if tracker is None:
        yield
        return
    outer = tracker.begin(name, total, unit, work)
    try:
        yield
    finally:
        tracker.end(outer)


def advance(records: int) -> None:
    """Count ``records`` more done in the current phase."""
    tracker = _tracker()
    if tracker is not None:
        tracker.add(records)


def set_done(records: int) -> None:
    """Set the records done in the current phase (e.g. after a part of a block finished)."""
    tracker = _tracker()
    if tracker is not None:
        tracker.set(records)


def counter() -> np.ndarray:
    """The int64 cell of the current phase's records done, for compiled kernels to write
    (a scratch cell nobody reads when no tracker is installed)."""
    tracker = _tracker()
    if tracker is None:
        _SCRATCH[0] = 0
        return _SCRATCH
    return tracker.cell


class Shrinking:
    """The records a method has grouped, counted as its pool of remaining records
    shrinks: ``left = Shrinking(rem.size)`` before the loop, ``left.now(rem.size)``
    after each group is removed (advances the phase by the records grouped since).

    >>> left = Shrinking(10)
    >>> left.now(7); left.left
    7
    """

    def __init__(self, remaining: int):
        self.left = int(remaining)

    def now(self, remaining: int) -> None:
        remaining = int(remaining)
        if remaining < self.left:
            advance(self.left - remaining)
            self.left = remaining
