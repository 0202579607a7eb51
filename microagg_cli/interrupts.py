"""SIGINT and SIGTERM at any moment: exit within about a second, write nothing.

A Python signal handler runs only when the main thread executes Python bytecode, so
on its own it cannot stop a run that sits in a compiled kernel for minutes (and a
``KeyboardInterrupt`` raised when such a kernel returns, while worker threads are still
inside others, used to end in a segmentation fault at interpreter shutdown). Here:

- the handler raises :class:`Interrupted` (a ``KeyboardInterrupt``) in the main thread,
  the usual clean path: temporary files are removed by :class:`~microagg_cli.io.OutputSet`,
  the command prints ``Error: interrupted; nothing was written``
  (:class:`~microagg_cli.errors.Interrupted` carries the signal);
- :func:`signal.set_wakeup_fd` makes the C-level handler write the signal number to a
  pipe even while the main thread is inside a kernel, and a watchdog thread reading it
  (the kernels release the GIL: every numba kernel of :mod:`microagg_cli.methods` is
  compiled with ``nogil=True``, a test checks it) ends the process itself if the clean
  path has not within :data:`GRACE` seconds: it removes every live temporary output,
  stops the child processes, prints the same line and calls ``os._exit``.

Exit codes: 130 for SIGINT, 143 for SIGTERM (128 + the signal number), as a shell does.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from typing import Any

from .errors import Interrupted
from .outputs import COMMIT_LOCK, commit_in_progress, committed_files, defer_signal, discard_live_temps

__all__ = ["Interrupted", "install", "exit_code", "message", "signalled", "hard_exit", "GRACE", "MESSAGE"]

#: Seconds the main thread gets to take the clean path before the watchdog ends the run.
GRACE = 0.8
#: Seconds the clean path may take once the main thread has the exception.
CLEAN_PATH_LIMIT = 1.6
MESSAGE = "Error: interrupted; nothing was written"

_state = {"signum": 0, "since": 0.0, "main_has_it": False}
_exit_lock = threading.Lock()


def exit_code(exc: BaseException | None = None) -> int:
    """128 + the signal number (130 for a plain ``KeyboardInterrupt``)."""
    signum = getattr(exc, "signum", 0) or _state["signum"] or signal.SIGINT
    return 128 + int(signum)


def signalled() -> bool:
    """True once SIGINT or SIGTERM has arrived."""
    return bool(_state["signum"])


def message() -> str:
    done = committed_files()
    if done:
        return f"Error: interrupted; already complete and kept: {', '.join(done)}"
    return MESSAGE


def hard_exit(signum: int) -> None:
    """Remove the live temporary outputs, stop the children, say so, ``os._exit``."""
    if not _exit_lock.acquire(blocking=False):
        return
    # never between two renames of one output set
    COMMIT_LOCK.acquire(timeout=5)
    discard_live_temps()
    children = multiprocessing.active_children()
    for child in children:
        try:
            child.terminate()
        except Exception:  # noqa: BLE001 - already gone
            pass
    deadline = time.monotonic() + 0.5
    for child in children:
        child.join(timeout=max(0.0, deadline - time.monotonic()))
        if child.is_alive():
            try:
                child.kill()
            except Exception:  # noqa: BLE001
                pass
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001 - a closed pipe
        pass
    try:
        os.write(2, (message() + "\n").encode())
    except OSError:
        pass
    os._exit(128 + int(signum))


#: Functions that run as finalizers (object destructors, weakref callbacks): an
#: exception raised inside one is printed ("Exception ignored in ...") and dropped.
_FINALIZERS = frozenset({"__del__", "_on_type_disposal", "_exitfunc", "_finalize", "finalize"})


def _in_finalizer(frame: Any) -> bool:
    """Is the interrupted code (or a caller) a finalizer, where raising is unsafe?"""
    depth = 0
    while frame is not None and depth < 64:
        code = frame.f_code
        if code.co_name in _FINALIZERS or (code.co_name == "__call__" and code.co_filename.endswith("weakref.py")):
            return True
        frame, depth = frame.f_back, depth + 1
    return False


def _handler(signum: int, _frame: object) -> None:
    if _in_finalizer(_frame) and not _state["signum"]:
        # never raise inside a finalizer (Python would print a traceback and drop the
        # exception): note the signal; the watchdog then ends the run the clean way
        # (temporary outputs removed, the message, 128 + signum) within GRACE seconds
        _state["signum"] = signum
        _state["since"] = time.monotonic()
        return
    if commit_in_progress():  # never between two renames of one output set
        _state["signum"] = _state["signum"] or signum
        _state["main_has_it"] = True
        defer_signal(signum)
        return
    if _state["signum"]:
        # a second signal while the first is being handled: stop now
        hard_exit(_state["signum"])
        return
    _state["signum"] = signum
    _state["since"] = time.monotonic()
    _state["main_has_it"] = True
    raise Interrupted(signum)


def _watchdog(fd: int) -> None:
    while True:
        try:
            data = os.read(fd, 1)
        except OSError:
            return
        if not data:
            return
        signum = data[0]
        if signum not in (signal.SIGINT, signal.SIGTERM):
            continue
        t0 = time.monotonic()
        # give the main thread the clean path first
        while time.monotonic() - t0 < GRACE and not _state["main_has_it"]:
            time.sleep(0.02)
        if not _state["main_has_it"]:
            hard_exit(signum)
            return
        while time.monotonic() - t0 < CLEAN_PATH_LIMIT:
            time.sleep(0.05)
        hard_exit(signum)
        return


def _forget_in_child() -> None:
    """A forked worker (sdc compare --jobs) must not write into its parent's wakeup pipe."""
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    except (ValueError, OSError):  # pragma: no cover - not the main thread
        pass


def install() -> None:
    """Install the handlers and the watchdog (the ``sdc`` entry point calls this)."""
    if threading.current_thread() is not threading.main_thread():  # pragma: no cover
        return
    r, w = os.pipe()
    os.set_blocking(w, False)
    signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) is signal.SIG_IGN:  # e.g. nohup, a background job: keep it ignored
            continue
        signal.signal(sig, _handler)
    os.register_at_fork(after_in_child=_forget_in_child)
    threading.Thread(target=_watchdog, args=(r,), name="sdc-interrupt-watchdog", daemon=True).start()
