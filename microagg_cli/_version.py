"""The version of ``sdc`` (kept apart so that nothing imports the package to read it)."""

__version__ = "0.1.0"
