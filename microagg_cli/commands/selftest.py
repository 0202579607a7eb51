"""``sdc self-test``: compile (or load) and check the compiled kernels, once per installation."""

from __future__ import annotations

import json

import click

from ..selftest import ALL_CHECKS, COMPILED_METHODS
from ._options import setup_logging, split_names, verbosity_options

__all__ = ["selftest_command"]


@click.command("self-test", context_settings={"max_content_width": 100})
@click.argument("methods", metavar="[METHOD]...", nargs=-1)
@click.option("--all", "all_methods", is_flag=True,
              help=f"Every method with compiled kernels ({', '.join(COMPILED_METHODS)}) and the "
                   "risk measures' kernels (risk: sdc evaluate and the reports' risk section), and those "
                   "of the grouping with categorical keys (mixed: sdc protect --categorical).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="What goes to stdout: nothing (text: the table goes to stderr) or the results as JSON.")
@verbosity_options
def selftest_command(methods, all_methods, fmt, quiet, verbose):
    """Compile (or load from the cache) and check the compiled kernels of METHODs.

    The methods with compiled kernels compile them on first use after installation,
    once (fast MDAV: about 10 s on 2 cores), and keep them in numba's cache. Run this
    once where sdc is installed (a container image, a new virtual environment, a cron
    host) and no later run pays that time. Each kernel is also checked on this
    machine: fast MDAV must give exactly the reference MDAV partition; the other
    methods groups of at least k (and ils, mdav-ls and optimal-1d an SSE no higher
    than MDAV's). METHOD risk checks the kernels of the risk measures (sdc evaluate,
    the reports' risk section): DLD by layers of scenarios must equal brute force.
    METHOD mixed checks those of sdc protect --categorical: heterogeneous MDAV must give
    MDAV's partition without keys, its local search and ils's kicks never a worse
    grouping.
    Without METHOD: mdav, the default of sdc protect.

    Exit code 0 when every check passes, 1 when one fails (a bug: please report it
    with the table), 2 for a method without compiled kernels.

    \b
    Examples:
      sdc self-test
      sdc self-test --all                 # e.g. in a Dockerfile: RUN sdc self-test --all
      sdc self-test ils kward --format json
    """
    setup_logging(quiet, verbose)
    from ..selftest import cache_location, run_self_test

    names = list(ALL_CHECKS) if all_methods else [m for arg in methods for m in split_names(arg)]

    def show(result) -> None:
        if quiet or fmt == "json":
            return
        mark = "ok" if result.passed else "FAILED"
        kernels = f"{result.compiled} kernels compiled" if result.compiled else "from the cache"
        click.echo(f"{result.method:<11} {mark:<6} {result.seconds:6.1f} s  {kernels:<22} {result.check}"
                   + (f": {result.message}" if result.message else ""), err=True)

    results = run_self_test(names or None, on_result=show)
    failed = [r for r in results if not r.passed]
    if fmt == "json":
        click.echo(json.dumps({"passed": not failed, "cache": cache_location(),
                               "checks": [r.as_dict() for r in results]}, indent=2))
    elif not quiet:
        click.echo(f"kernels cached in {cache_location()}", err=True)
    if failed:
        click.echo(f"Error: self-test failed for {', '.join(r.method for r in failed)}: "
                   f"{failed[0].message}", err=True)
        raise click.exceptions.Exit(1)
