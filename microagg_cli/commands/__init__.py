"""The subcommands of ``sdc``, one module each, imported when first used.

``sdc --help``, ``sdc --version`` and shell completion of command names need only the
names and one-line summaries below, so they import no command module (and none of
numpy, pandas, scipy or numba). A test checks that each summary equals the command's own.
"""

from __future__ import annotations

import importlib
from typing import Any

#: name -> (module, attribute, one-line summary), in the order ``sdc --help`` lists them.
COMMAND_TABLE: dict[str, tuple[str, str, str]] = {
    "protect": ("protect", "protect_command", "Microaggregate INPUT and write the protected OUTPUT (plus a report)."),
    "evaluate": ("evaluate", "evaluate_command", "Measure disclosure risk and information loss of PROTECTED against ORIGINAL."),
    "blocks": ("blocks", "blocks_command", "Propose, check or evaluate a plan splitting INPUT's columns into blocks."),
    "risk": ("risk", "risk_command", "The disclosure risk of INPUT over its categorical keys, as agencies report it."),
    "roles": ("roles", "roles_command", "Propose a role for every column of INPUT, with its evidence, as a roles file."),
    "compare": ("compare", "compare_command", "Compare methods, k values and blocking plans on INPUT: information loss against risk."),
    "schema": ("schema", "schema_command", "Print the JSON Schema (draft 2020-12) of the KIND report on stdout."),
    "self-test": ("selftest", "selftest_command", "Compile (or load from the cache) and check the compiled kernels of METHODs."),
}


def load_command(name: str) -> Any:
    """The click command ``name`` (imports its module)."""
    module, attr, _summary = COMMAND_TABLE[name]
    return getattr(importlib.import_module(f".{module}", __name__), attr)


def __getattr__(name: str) -> Any:
    if name == "COMMANDS":  # every command, loaded (for tools that want them all)
        return tuple(load_command(n) for n in COMMAND_TABLE)
    raise AttributeError(name)
