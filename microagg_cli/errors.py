"""Error hierarchy and exit codes of ``sdc``.

Every error a user can cause is an :class:`SdcError` subclass carrying its exit code;
``cli.py`` converts them to one ``Error: ...`` line in a single place. This module
imports nothing from click so the library can raise these errors on its own.
"""

from __future__ import annotations

__all__ = [
    "EXIT_CODES",
    "SdcError",
    "InvalidParameterError",
    "DataError",
    "InfeasibleError",
    "PrivacyCheckError",
    "ThresholdExceeded",
    "OutputExistsError",
    "Interrupted",
    "k_message",
    "check_k_value",
]

import signal as _signal


class SdcError(Exception):
    """Base class of every error ``sdc`` reports to a user (never a bug)."""

    exit_code: int = 1


class InvalidParameterError(SdcError, ValueError):
    """A bad option, parameter, method name or plan entry (exit code 2)."""

    exit_code = 2


class DataError(SdcError, ValueError):
    """Unreadable file, missing/duplicate/non-numeric column, NaN/inf (exit code 3)."""

    exit_code = 3


class OutputExistsError(DataError):
    """The output file exists and ``--force`` was not given (exit code 3)."""


class InfeasibleError(SdcError, ValueError):
    """Fewer records than k in a block or stratum (exit code 4)."""

    exit_code = 4


class PrivacyCheckError(InfeasibleError):
    """A partition failed the k-check before writing; nothing is written (exit code 4)."""


class ThresholdExceeded(SdcError):
    """A ``--max-*`` / ``--min-*`` gate failed (exit code 5)."""

    exit_code = 5


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived (exit code 128 + the signal number: 130, 143)."""

    def __init__(self, signum: int = _signal.SIGINT):
        super().__init__(_signal.Signals(signum).name)
        self.signum = int(signum)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


#: The documented exit-code table (code, class name, meaning); README and man pages
#: are generated from it.
EXIT_CODES: tuple[tuple[int, str, str], ...] = (
    (0, "", "success"),
    (1, "(unexpected)", "a bug: the traceback is shown only with --debug"),
    (2, "InvalidParameterError", "bad option, parameter, method or plan entry"),
    (3, "DataError", "unreadable file, missing/duplicate/non-numeric column, NaN/inf, "
                     "output exists without --force, a file or standard stream that cannot be "
                     "read or written"),
    (4, "InfeasibleError", "fewer records than k in a block or stratum, or a partition "
                           "failed the k-check (nothing written)"),
    (5, "ThresholdExceeded", "a --max-* / --min-* risk or utility gate failed"),
    (130, "Interrupted", "SIGINT (Ctrl-C): the run stopped, no output or report or temporary file left"),
    (143, "Interrupted", "SIGTERM: as for SIGINT"),
)


def k_message(value: object) -> str:
    """The one wording of a bad k, everywhere (options, plan files, the API)."""
    return f"k must be an integer >= 2 (k = 1 is no protection), got {value!r}"


def check_k_value(k: object, *, where: str = "") -> int:
    """``k`` as an int when it is an integer >= 2 (not a bool), else :class:`InvalidParameterError`.

    ``where`` prefixes the message (``"--k: "``).

    >>> check_k_value(3)
    3
    >>> check_k_value(1)
    Traceback (most recent call last):
    ...
    microagg_cli.errors.InvalidParameterError: k must be an integer >= 2 (k = 1 is no protection), got 1
    """
    try:
        ok = not isinstance(k, bool) and int(k) == k and int(k) >= 2  # type: ignore[call-overload]
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise InvalidParameterError(where + k_message(k))
    return int(k)  # type: ignore[call-overload]
