"""Path safety: an output never overwrites, contains or lies inside an input.

:func:`check_output_path` refuses an output path that is, contains or lies in an input
(:func:`check_overlap`, by device and inode along both paths, so no spelling, link or
bind mount hides it), sits in a missing folder, is a folder, or exists without
``--force``; :func:`input_stamp` and :func:`check_unchanged` refuse to certify an input
that was replaced, truncated or rewritten while it was being read.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from ..errors import DataError, OutputExistsError

def input_stamp(files: Sequence[Path]) -> tuple[tuple[int, int, int, int], ...]:
    """(device, inode, size, modification time) of each input file, to compare at the end."""
    out = []
    for f in files:
        st = os.stat(f)
        out.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(out)


def check_unchanged(stamp: tuple[tuple[int, int, int, int], ...], files: Sequence[Path], name: str) -> None:
    """Refuse to certify an input that was replaced, truncated or rewritten during the run
    (its inode, size or modification time changed since :func:`input_stamp`): exit code 3."""
    try:
        now = input_stamp(files)
    except OSError:
        now = ()
    if now != stamp:
        raise DataError(f"input {name!r} changed while it was being protected (replaced, truncated or rewritten); "
                        "nothing was written: run again on a file that stays put")


def _identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of what ``path`` names (links followed), or None where it is missing."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def _lineage(path: Path) -> set[tuple[int, int]]:
    """The identities of ``path`` and of every folder above it, spelled both as written
    (``..`` folded) and with links resolved: bind mounts and links cannot hide a folder."""
    out = set()
    for p in (Path(os.path.abspath(path)), Path(os.path.realpath(path))):
        for q in (p, *p.parents):
            ident = _identity(q)
            if ident is not None:
                out.add(ident)
    return out


def check_overlap(out: str | Path, inputs: Sequence[Path | None], *, what: str = "output") -> None:
    """Refuse an output that is, contains or lies inside an input (file or dataset folder).

    Compared by device and inode along both paths, so a relative spelling, ``..``, a
    symbolic link or a bind mount of the same folder cannot hide the overlap. Raises
    :class:`DataError` (exit code 3): the input is never modified."""
    out = Path(out)
    above_out = _lineage(out)
    here = _identity(out)
    for src in inputs:
        if src is None:
            continue
        ident = _identity(src)
        if ident is None:
            continue
        kind = "folder" if Path(src).is_dir() else "file"
        if here == ident:
            raise DataError(f"{what} {str(out)!r} is the input {kind} {str(src)!r}; the input is never modified")
        if ident in above_out:
            raise DataError(f"{what} {str(out)!r} lies inside the input {kind} {str(src)!r}; "
                            "the input is never modified")
        if here is not None and here in _lineage(Path(src)):
            raise DataError(f"{what} {str(out)!r} contains the input {kind} {str(src)!r}; "
                            "the input is never modified")


def check_output_path(
    path: str | Path, *, force: bool, inputs: tuple[Path | None, ...] = (), what: str = "output"
) -> Path | None:
    """Refuse an output that is, contains or lies in an input, sits in a missing folder,
    is a folder, or exists without force (a dangling symbolic link exists too).

    Returns the path (``None`` for ``-``, stdout).
    """
    if str(path) == "-":
        return None
    out = Path(path)
    check_overlap(out, inputs, what=what)
    for src in inputs:  # the same name, whatever exists
        if src is not None and os.path.abspath(out) == os.path.abspath(src):
            raise DataError(f"{what} {str(out)!r} is the input file; the input is never modified")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise DataError(f"{what} folder {str(parent)!r} does not exist")
    if out.is_dir():
        raise DataError(f"{what} {str(out)!r} is a directory")
    if out.is_symlink() and not out.exists() and not force:
        raise OutputExistsError(f"{what} {str(out)!r} exists (a symbolic link to a missing file); "
                                "use --force to replace the link")
    if out.exists() and not force:
        raise OutputExistsError(f"{what} {str(out)!r} exists; use --force to replace it")
    return out
