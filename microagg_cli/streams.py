"""Standard streams that are closed, full or broken: named, never a traceback.

``sdc`` may be started with a standard stream closed (``<&-``, ``>&-``, ``2>&-``, as
daemons and some schedulers do) or writing to a full device or a closed pipe.
:func:`guard` (called first by :func:`microagg_cli.cli.main`) puts ``/dev/null`` on a
closed descriptor, so that no file opened later takes descriptor 0, 1 or 2, and
replaces the stream by one that refuses to be used, naming itself; standard output
becomes a text stream whose write errors carry its name (``exc.sdc_stream``), so the
command line reports "cannot write to standard output" with exit code 3. Only the
standard library: no click.
"""

from __future__ import annotations

import errno
import io
import os
import sys

__all__ = ["STREAM_NAMES", "CLOSED", "guard", "broken", "silence_broken"]

STREAM_NAMES = {0: "standard input", 1: "standard output", 2: "standard error"}
#: Standard streams that were closed when sdc started (their descriptors now hold /dev/null).
CLOSED: set[int] = set()


class _ClosedStream:
    """What a standard stream that was closed at start becomes: reading or writing it is an
    :class:`OSError` naming it (so ``-`` as input or output is refused with exit code 3)."""

    encoding = "utf-8"
    errors = "strict"

    def __init__(self, fd: int):
        self.fd = fd
        self.name = f"<{STREAM_NAMES[fd]}>"
        self.buffer = self

    def _fail(self, *_a, **_k):
        exc = OSError(errno.EBADF, f"{STREAM_NAMES[self.fd]} is closed")
        exc.sdc_stream = STREAM_NAMES[self.fd]  # type: ignore[attr-defined]
        raise exc

    read = readline = readlines = write = writelines = _fail

    def flush(self) -> None:
        return None

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self.fd

    def readable(self) -> bool:
        return self.fd == 0

    def writable(self) -> bool:
        return self.fd != 0

    def close(self) -> None:
        return None

    @property
    def closed(self) -> bool:
        return False


class _NamedText(io.TextIOWrapper):
    """A standard stream whose write errors carry its name (``exc.sdc_stream``): a full
    device or a closed pipe is then reported as "cannot write to standard output"."""

    sdc_stream = "standard output"

    def write(self, text: str) -> int:
        try:
            return super().write(text)
        except OSError as exc:
            exc.sdc_stream = self.sdc_stream  # type: ignore[attr-defined]
            raise

    def flush(self) -> None:
        try:
            super().flush()
        except OSError as exc:
            exc.sdc_stream = self.sdc_stream  # type: ignore[attr-defined]
            raise


def _named_stdout(stream) -> object:
    """``sys.stdout`` as a :class:`_NamedText` on descriptor 1 (same encoding and buffering)."""
    if not isinstance(stream, io.TextIOWrapper) or stream.fileno() != 1:
        return stream
    stream.flush()
    raw = open(1, "wb", closefd=False)  # noqa: SIM115 - lives as long as the process
    return _NamedText(raw, encoding=stream.encoding, errors=stream.errors, line_buffering=stream.line_buffering)


def guard() -> None:
    """A standard stream closed at start (``<&-``, ``>&-``, ``2>&-``) gets ``/dev/null`` on its
    descriptor, so that no file opened later takes descriptor 0, 1 or 2 (a library writing a
    warning to descriptor 2 would write into an output). Standard input and output then refuse
    to be read or written (``-`` gives exit code 3, naming the stream); messages meant for a
    closed standard error are dropped, and the exit code still tells how the run ended."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            CLOSED.add(fd)
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    if 0 in CLOSED or sys.stdin is None:
        sys.stdin = _ClosedStream(0)  # type: ignore[assignment]
    if 1 in CLOSED or sys.stdout is None:
        sys.stdout = _ClosedStream(1)  # type: ignore[assignment]
    else:
        try:
            sys.stdout = _named_stdout(sys.stdout)  # type: ignore[assignment]
        except (OSError, ValueError):
            pass
    if 2 in CLOSED or sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - lives as long as the process


def broken() -> str | None:
    """The standard stream that cannot be written (a full device, a closed pipe), if any."""
    for fd, stream in ((1, sys.stdout), (2, sys.stderr)):
        if fd in CLOSED:
            continue
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            return STREAM_NAMES[fd]
    return None


def silence_broken() -> None:
    """Point a standard stream that cannot be written at ``/dev/null`` (what it still buffers
    is dropped there), so that leaving the interpreter does not fail on it a second time."""
    for fd, stream in ((1, sys.stdout), (2, sys.stderr)):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            try:
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, fd)
                os.close(null)
                stream.flush()
            except (OSError, ValueError):
                pass
