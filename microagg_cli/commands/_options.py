"""Options and helpers shared by the subcommands (click only; no computation)."""

from __future__ import annotations

import logging
import os
import secrets
import sys
import time
from typing import Any, Callable, Mapping

import click

from ..errors import InvalidParameterError
from ..request import ProtectRequest, help_text
from ..request import default as field_default
from ..statfiles import INPUT_FORMATS, OUTPUT_FORMATS  # SPSS, Stata and SAS files too

__all__ = ["field_option", "build_request", "encoding_option", "plain_output", "check_delimiter", "listing_option", "verbosity_options", "format_options", "setup_logging", "parse_params", "split_names", "split_list", "split_quoted",
           "stderr_console", "complete_method", "complete_method_list"]


def field_option(request: type, name: str, *decls: str, **kwargs: Any) -> Callable:
    """A click option for field ``name`` of a request class (:mod:`microagg_cli.request`):
    its default and (unless ``help`` is given, for a command's own wording) its help text
    come from the field, so that a default is written once and the CLI cannot disagree with the library."""
    kwargs.setdefault("default", field_default(request, name))
    kwargs.setdefault("help", help_text(request, name))
    return click.option(*decls, **kwargs)


def build_request(request: type, options: Mapping[str, Any],
                  parse: Mapping[str, Callable[[Any, dict[str, Any]], Any]]) -> Any:
    """The request ``request`` built from a command's click ``options`` (named after the
    request's fields): ``parse`` holds the command line's own parsing of some of them
    (comma lists, ``NAME=VALUE`` pairs...), applied in its order, each parser given the
    raw value and every value so far; the others pass as they are. So a command
    declares each option once (its ``field_option``) and its parsing once (``parse``)."""
    values = dict(options)
    for name, parser in parse.items():
        values[name] = parser(values.get(name), values)
    return request.build(**values)


def listing_option(flag: str, text: Callable[[], str], help: str) -> Callable:
    """An eager flag that prints ``text()`` on stdout and exits 0 (``--list-methods``)."""

    def callback(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
        if value and not ctx.resilient_parsing:
            click.echo(text())
            ctx.exit(0)

    return click.option(flag, is_flag=True, expose_value=False, is_eager=True, callback=callback, help=help)


def verbosity_options(func: Callable) -> Callable:
    """``-q/--quiet`` and ``-v/--verbose`` (repeatable)."""
    func = click.option("-v", "--verbose", count=True, help="More log output on stderr (-vv for debug).")(func)
    func = click.option("-q", "--quiet", is_flag=True, help="No summary, progress or warnings on stderr; errors only.")(func)
    return func


def check_delimiter(_ctx: click.Context | None, _param: click.Parameter | None, value: str | None) -> str | None:
    """``--delimiter``: one character (``\\t`` or ``tab`` for a tab)."""
    if value is None:
        return None
    if value in ("\\t", "tab", "TAB"):
        return "\t"
    if len(value) != 1 or value in ('"', "\n", "\r"):
        raise click.BadParameter(f"must be one character (e.g. ',', ';', '|' or '\\t'), got {value!r}")
    return value


def encoding_option(request: type) -> Callable:
    """``--encoding NAME`` of a reading command (default UTF-8)."""
    return field_option(request, "encoding", "--encoding", metavar="NAME", show_default=True)


def format_options(func: Callable) -> Callable:
    """``--input-format``, ``--output-format``, ``--delimiter``, ``--encoding``."""
    func = encoding_option(ProtectRequest)(func)
    func = field_option(ProtectRequest, "delimiter", "--delimiter", metavar="CHAR", callback=check_delimiter)(func)
    func = field_option(ProtectRequest, "output_format", "--output-format",
                        type=click.Choice(list(OUTPUT_FORMATS)))(func)
    func = field_option(ProtectRequest, "input_format", "--input-format", type=click.Choice(list(INPUT_FORMATS)))(func)
    return func


#: A short id of this run (process), on every log line written to a non-terminal.
RUN_ID = secrets.token_hex(3)


def setup_logging(quiet: bool, verbose: int) -> None:
    """Logs go to stderr: rich on a terminal, plain lines otherwise; -q keeps errors only."""
    level = logging.ERROR if quiet else (logging.DEBUG if verbose > 1 else logging.INFO if verbose else logging.WARNING)
    logger = logging.getLogger("microagg_cli")
    logger.handlers.clear()
    logger.propagate = False
    if not plain_output():
        from rich.logging import RichHandler

        handler: logging.Handler = RichHandler(console=stderr_console(), show_time=False, show_path=False)
        handler.setFormatter(logging.Formatter("%(message)s"))
    else:
        handler = logging.StreamHandler(sys.stderr)
        # cron logs interleave runs: every line carries its time (ISO 8601, UTC) and the run's id
        fmt = logging.Formatter(f"%(asctime)s sdc[{RUN_ID}]: %(levelname)s: %(message)s",
                                datefmt="%Y-%m-%dT%H:%M:%SZ")
        fmt.converter = time.gmtime
        handler.setFormatter(fmt)
    handler.setLevel(level)
    logger.addHandler(handler)
    logger.setLevel(level)


def plain_output() -> bool:
    """Plain lines on stderr: not a terminal (cron, a log file, a pipe) or ``NO_COLOR`` set."""
    return not sys.stderr.isatty() or bool(os.environ.get("NO_COLOR"))


class _AsciiStderr:
    """stderr as rich sees it when output is plain: ASCII only, so tables use +-| boxes."""

    encoding = "ascii"

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()

    def isatty(self) -> bool:
        return False


class _AsciiStdout(_AsciiStderr):
    """stdout as rich sees it off a terminal (a file, a pipe): ASCII tables, +-| boxes."""

    def write(self, text: str) -> int:
        return sys.stdout.write(text)

    def flush(self) -> None:
        sys.stdout.flush()


def stdout_console():
    """A rich console for a table on stdout: ASCII, no colour, no wrapping off a terminal."""
    from rich.console import Console

    if not sys.stdout.isatty() or os.environ.get("NO_COLOR"):
        return Console(file=_AsciiStdout(), highlight=False, width=200, no_color=True, color_system=None,
                       emoji=False)
    return Console(highlight=False)


def stderr_console():
    """A rich console on stderr; when output is plain (see :func:`plain_output`): no colour,
    ASCII-only tables and never wrapped at 80 columns, one line per fact for grep."""
    from rich.console import Console

    if plain_output():
        return Console(file=_AsciiStderr(), highlight=False, soft_wrap=True, width=1000, no_color=True,
                       color_system=None, emoji=False)
    return Console(stderr=True, highlight=False, soft_wrap=False)


def parse_params(items: tuple[str, ...]) -> dict[str, Any]:
    """``("gamma=0.3", "order=fpc")`` -> ``{"gamma": "0.3", "order": "fpc"}``."""
    out: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise InvalidParameterError(f"--param expects NAME=VALUE, got {item!r}")
        if name in out:
            raise InvalidParameterError(f"--param {name!r} given twice")
        out[name] = value.strip()
    return out


def split_names(value: str | None) -> list[str] | None:
    """``"a, b,c"`` -> ``["a", "b", "c"]``; None stays None. CSV-style quoting names a
    column with a comma or with leading/trailing spaces exactly: ``'"income, net", age'``
    -> ``["income, net", "age"]``, ``'" id "'`` -> ``[" id "]`` (see :func:`split_quoted`)."""
    return split_list(value, "empty column name in")


def split_list(value: str | None, what: str, sep: str = ",") -> list[str] | None:
    """``"a, b,c"`` -> ``["a", "b", "c"]``; None stays None; an empty item is an error
    (``what``, then the value, e.g. ``"--k: empty item in"``). Items may be quoted
    (:func:`split_quoted`)."""
    if value is None:
        return None
    items = split_quoted(value, sep, what=what.split(":")[0] if ":" in what else "column list")
    if any(not v for v in items):
        raise InvalidParameterError(f"{what} {value!r}")
    return items


def split_quoted(value: str, sep: str = ",", *, what: str = "column list") -> list[str]:
    """Split ``value`` at ``sep`` the way a CSV row is split: an item in double quotes
    is taken exactly (separators, spaces and ``""`` for a quote inside), an unquoted
    item is stripped of surrounding white space.

    >>> split_quoted('"income, net", age')
    ['income, net', 'age']
    >>> split_quoted('" padded ",x,"a""b"')
    [' padded ', 'x', 'a"b']
    """
    items: list[str] = []
    i, n = 0, len(value)
    while True:
        j = i
        while j < n and value[j] in " \t":
            j += 1
        if j < n and value[j] == '"':
            out, j = [], j + 1
            while True:
                if j >= n:
                    raise InvalidParameterError(f"{what}: a quote is not closed in {value!r}")
                if value[j] == '"':
                    if j + 1 < n and value[j + 1] == '"':
                        out.append('"')
                        j += 2
                        continue
                    j += 1
                    break
                out.append(value[j])
                j += 1
            while j < n and value[j] in " \t":
                j += 1
            if j < n and value[j] != sep:
                raise InvalidParameterError(f"{what}: text after a closing quote in {value!r} "
                                            f"(quote the whole name: \"a\"\"b\" for a\"b)")
            items.append("".join(out))
        else:
            k = value.find(sep, j)
            k = n if k < 0 else k
            items.append(value[j:k].strip())
            j = k
        if j >= n:
            return items
        i = j + 1


def complete_method(ctx: click.Context, param: click.Parameter, incomplete: str) -> list:
    """Shell completion of a method name (``--method``), with each method's summary."""
    from click.shell_completion import CompletionItem

    from ..methods import METHODS

    return [CompletionItem(name, help=spec.summary) for name, spec in METHODS.items() if name.startswith(incomplete)]


def complete_method_list(ctx: click.Context, param: click.Parameter, incomplete: str) -> list:
    """Shell completion of the last name of a comma-separated method list (``--methods a,b``)."""
    from click.shell_completion import CompletionItem

    head, sep, last = incomplete.rpartition(",")
    return [CompletionItem(head + sep + item.value, help=item.help)
            for item in complete_method(ctx, param, last)]
