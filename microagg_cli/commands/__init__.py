"""The subcommands of ``sdc``, one module each; ``cli.py`` registers ``COMMANDS``."""

from __future__ import annotations

from .blocks import blocks_command
from .compare import compare_command
from .evaluate import evaluate_command
from .protect import protect_command
from .schema import schema_command

#: Every subcommand, in the order ``sdc --help`` lists them.
COMMANDS = (protect_command, evaluate_command, blocks_command, compare_command, schema_command)
