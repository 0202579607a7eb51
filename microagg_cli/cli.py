"""The ``sdc`` command line: a click group and its subcommands, nothing else.

Each subcommand lives in ``microagg_cli/commands/`` (one module per command) and only
parses options, calls one library function and prints. Errors are turned into
``Error: <one line>`` and the documented exit code in one place: :class:`SdcGroup`.
"""

from __future__ import annotations

import errno
import io
import logging
import os
import sys
import traceback

import click

from . import audit, interrupts
from ._version import __version__
from .commands import COMMAND_TABLE, load_command
from .errors import SdcError

__all__ = ["cli", "main"]


class SdcGroup(click.Group):
    """Click group converting :class:`SdcError` to one stderr line and its exit code.

    Subcommands are imported when used (:mod:`microagg_cli.commands`), so ``sdc --help``
    and ``sdc --version`` start in a fraction of a second.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMAND_TABLE) + [n for n in self.commands if n not in COMMAND_TABLE]

    def get_command(self, ctx: click.Context, name: str):
        if name not in self.commands and name in COMMAND_TABLE:
            self.add_command(load_command(name), name)
        return self.commands.get(name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        limit = formatter.width - 6 - max(len(n) for n in COMMAND_TABLE)
        rows = [(name, _shorten(summary, limit)) for name, (_m, _a, summary) in COMMAND_TABLE.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def main(self, args=None, *a, **kw):  # the reports' audit trail records the command line
        argv = sys.argv[1:] if args is None else list(args)
        with audit.command_line(["sdc", *argv]):
            return super().main(args, *a, **kw)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except SdcError as exc:
            _echo_error(f"Error: {_one_line(exc)}")
            ctx.exit(exc.exit_code)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except KeyboardInterrupt as exc:  # SIGINT or SIGTERM (see interrupts.py)
            _echo_error(interrupts.message())
            ctx.exit(interrupts.exit_code(exc))
        except OSError as exc:  # the environment, not a bug: a full disk, a vanished folder
            _echo_error(f"Error: {_os_error_line(exc)}")
            ctx.exit(3)
        except Exception as exc:  # a bug: say so, traceback only with --debug
            if ctx.obj and ctx.obj.get("debug"):
                traceback.print_exc()
            # --debug is an option of sdc itself, so it goes before the subcommand
            again = f"sdc --debug {ctx.invoked_subcommand} ..." if ctx.invoked_subcommand else "sdc --debug ..."
            _echo_error(f"Error: internal error ({type(exc).__name__}: {_one_line(exc)}); "
                        f"re-run as '{again}' for the traceback and report it")
            ctx.exit(1)


def _shorten(text: str, limit: int) -> str:
    """``text`` cut at a word to at most ``limit`` characters, ``...`` marking the cut."""
    if len(text) <= limit:
        return text
    words, out = text.split(), ""
    for word in words:
        if len(out) + len(word) + 1 + 3 > limit:
            break
        out = f"{out} {word}" if out else word
    return out + "..."


def _os_error_line(exc: OSError) -> str:
    """``cannot access 'path': reason``; an error without a file name is a standard stream's
    (a full device, a closed pipe) or, should none be broken, said to come from no named file."""
    reason = exc.strerror or _one_line(exc)
    if getattr(exc, "filename", None):
        return f"cannot access {exc.filename!r}: {reason}"
    stream = getattr(exc, "sdc_stream", None) or _broken_stream()
    if stream:
        return f"cannot {'read' if stream == 'standard input' else 'write to'} {stream}: {reason}"
    return f"cannot access a file or stream the system did not name: {reason}"


_STREAM_NAMES = {0: "standard input", 1: "standard output", 2: "standard error"}
#: Standard streams that were closed when sdc started (their descriptors now hold /dev/null).
_CLOSED: set[int] = set()


class _ClosedStream:
    """What a standard stream that was closed at start becomes: reading or writing it is an
    :class:`OSError` naming it (so ``-`` as input or output is refused with exit code 3)."""

    encoding = "utf-8"
    errors = "strict"

    def __init__(self, fd: int):
        self.fd = fd
        self.name = f"<{_STREAM_NAMES[fd]}>"
        self.buffer = self

    def _fail(self, *_a, **_k):
        exc = OSError(errno.EBADF, f"{_STREAM_NAMES[self.fd]} is closed")
        exc.sdc_stream = _STREAM_NAMES[self.fd]  # type: ignore[attr-defined]
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


def _guard_streams() -> None:
    """A standard stream closed at start (``<&-``, ``>&-``, ``2>&-``) gets ``/dev/null`` on its
    descriptor, so that no file opened later takes descriptor 0, 1 or 2 (a library writing a
    warning to descriptor 2 would write into an output). Standard input and output then refuse
    to be read or written (``-`` gives exit code 3, naming the stream); messages meant for a
    closed standard error are dropped, and the exit code still tells how the run ended."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            _CLOSED.add(fd)
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    if 0 in _CLOSED or sys.stdin is None:
        sys.stdin = _ClosedStream(0)  # type: ignore[assignment]
    if 1 in _CLOSED or sys.stdout is None:
        sys.stdout = _ClosedStream(1)  # type: ignore[assignment]
    else:
        try:
            sys.stdout = _named_stdout(sys.stdout)  # type: ignore[assignment]
        except (OSError, ValueError):
            pass
    if 2 in _CLOSED or sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - lives as long as the process


def _broken_stream() -> str | None:
    """The standard stream that cannot be written (a full device, a closed pipe), if any."""
    for fd, stream in ((1, sys.stdout), (2, sys.stderr)):
        if fd in _CLOSED:
            continue
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            return _STREAM_NAMES[fd]
    return None


def _silence_broken_streams() -> None:
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


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


@click.group(cls=SdcGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", prog_name="sdc")
@click.option("--debug", is_flag=True, help="Show the traceback of unexpected errors (exit code 1).")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """sdc: microaggregation for statistical disclosure control of numerical microdata.

    Protect a CSV/Parquet file so that every record shares its protected values with
    at least k-1 others, and measure what it cost.

    \b
    Example:
      sdc protect sample_data/census.csv -o protected.csv -k 3 --report report.json

    \b
    Exit codes: 0 success, 1 internal error, 2 bad option or parameter,
    3 bad data or file, 4 infeasible (fewer records than k) or failed k-check,
    5 a risk/utility gate failed.
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug




def main() -> None:
    """Console-script entry point (``sdc``)."""
    _guard_streams()
    logging.captureWarnings(True)
    interrupts.install()
    try:
        cli(prog_name="sdc")
    except KeyboardInterrupt as exc:  # raised outside invoke (e.g. while parsing)
        click.echo(interrupts.message(), err=True)
        _leave(interrupts.exit_code(exc))
    except OSError as exc:  # outside invoke: --help or --version to a full device or a closed pipe
        line = f"Error: {_os_error_line(exc)}"
        _silence_broken_streams()
        _echo_error(line)
        _silence_broken_streams()
        sys.exit(3)
    except SystemExit as exc:
        if interrupts.signalled():
            # worker threads may still be inside a kernel: no interpreter teardown
            _leave(exc.code if isinstance(exc.code, int) else 1)
        _silence_broken_streams()
        raise


def _echo_error(line: str) -> None:
    try:
        click.echo(line, err=True)
    except (OSError, ValueError):  # standard error itself cannot be written: the exit code tells
        pass


def _leave(code: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed pipe
            pass
    os._exit(code)
