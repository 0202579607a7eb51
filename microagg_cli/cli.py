"""The ``sdc`` command line: a click group and its subcommands, nothing else.

Each subcommand lives in ``microagg_cli/commands/`` (one module per command) and only
parses options, calls one library function and prints. Errors are turned into
``Error: <one line>`` and the documented exit code in one place: :class:`SdcGroup`.
"""

from __future__ import annotations

import logging
import os
import sys
import traceback

import click

from . import audit, interrupts, streams
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
    stream = getattr(exc, "sdc_stream", None) or streams.broken()
    if stream:
        return f"cannot {'read' if stream == 'standard input' else 'write to'} {stream}: {reason}"
    return f"cannot access a file or stream the system did not name: {reason}"


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
    # numpy advises the kernel to back large arrays with huge pages; where the kernel
    # then compacts memory at the first touch (transparent huge pages with defrag
    # "madvise", a common default), that costs more than the pages save: sdc evaluate
    # at 50,000 x 10 spent 2.3 s of system time, 0.8 s without (user time the same).
    # Set before numpy is imported (it reads it once); an explicit setting wins.
    os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
    streams.guard()
    logging.captureWarnings(True)
    interrupts.install()
    try:
        cli(prog_name="sdc")
    except KeyboardInterrupt as exc:  # raised outside invoke (e.g. while parsing)
        click.echo(interrupts.message(), err=True)
        _leave(interrupts.exit_code(exc))
    except OSError as exc:  # outside invoke: --help or --version to a full device or a closed pipe
        line = f"Error: {_os_error_line(exc)}"
        streams.silence_broken()
        _echo_error(line)
        streams.silence_broken()
        sys.exit(3)
    except SystemExit as exc:
        if interrupts.signalled():
            # worker threads may still be inside a kernel: no interpreter teardown
            _leave(exc.code if isinstance(exc.code, int) else 1)
        streams.silence_broken()
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
