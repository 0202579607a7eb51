"""The audit trail of a run: what a reviewer needs to match a report to its files and rerun it.

Every report (``protect``, ``evaluate``, ``compare``, ``blocks``) carries an ``audit``
section built by :func:`trail`:

- ``argv``: the command line as run, paths as given (``sdc ...`` when run through the
  command line, else the Python process's ``sys.argv``), and ``entry`` (``"cli"`` or
  ``"python"``);
- ``cwd_name``: the name (not the full path) of the working directory;
- ``started_utc`` (ISO 8601, ``Z``) and ``duration_seconds`` (up to the moment the
  report was completed, which is just before it is written);
- ``versions``: Python, sdc, numpy, pandas, pyarrow, scipy, numba (and dask when it was
  imported), and ``platform``;
- ``files``: every file the run wrote (except the report itself, which cannot hold its
  own hash) and the protected file ``evaluate`` read, each with its role, the path as
  given, its size and SHA-256;
- ``reproduce`` (``protect`` only): the command line with ``--seed``, and whether the
  output is reproducible (not when a method ran on a wall-clock budget).

It never holds a data value. Hashes are of the final bytes: files are written to a
temporary file and renamed into place after the report is built, so the writers of
:mod:`microagg_cli.io` and :mod:`microagg_cli.engines` hash the bytes as they are
written (:func:`digesting`, :func:`digesting_folder`) and record them under the target
path; :func:`file_entry` uses such a record when it was made during the run and hashes
the file on disk otherwise. Standard library only: cheap to import, and any module may
use it.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
import platform
import shlex
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

__all__ = [
    "command_line",
    "current_argv",
    "digesting",
    "digesting_folder",
    "file_entry",
    "hash_file",
    "read_entry",
    "reproduce_command",
    "reproduce_entry",
    "time_bounded",
    "trail",
    "versions",
    "NOT_REPRODUCIBLE",
]

#: What the report says of a run on a wall-clock budget.
NOT_REPRODUCIBLE = "not reproducible across machines"

#: Distributions whose versions every report records (dask only when imported).
_DISTRIBUTIONS = ("numpy", "pandas", "pyarrow", "scipy", "numba")

_ARGV: contextvars.ContextVar[tuple[str, ...] | None] = contextvars.ContextVar("sdc_argv", default=None)

_LOCK = threading.Lock()
#: absolute target path -> (perf_counter when written, digest record)
_WRITES: dict[str, tuple[float, dict[str, Any]]] = {}
#: absolute path -> ((mtime_ns, size, inode), digest record) of files hashed on disk
_HASHED: dict[str, tuple[tuple[int, int, int], dict[str, Any]]] = {}


# ------------------------------------------------------------------ command line
@contextlib.contextmanager
def command_line(argv: Sequence[str]) -> Iterator[None]:
    """Within the block, reports record ``argv`` as the command line (the CLI sets it)."""
    token = _ARGV.set(tuple(str(a) for a in argv))
    try:
        yield
    finally:
        _ARGV.reset(token)


def current_argv() -> tuple[list[str], str]:
    """(argv, entry): the ``sdc`` command line when run through it, else ``sys.argv``."""
    argv = _ARGV.get()
    if argv is not None:
        return list(argv), "cli"
    return [str(a) for a in sys.argv], "python"


def _drop_option(args: list[str], short: str, long: str) -> list[str]:
    out: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a in (short, long):
            skip = True
            continue
        if a.startswith(long + "=") or (a.startswith(short) and a[2:].lstrip("-").isdigit()):
            continue
        out.append(a)
    return out


def reproduce_command(seed: int) -> str | None:
    """The command line as run with ``--seed SEED`` (replacing a given one), or None
    when the run did not come from the command line.

    >>> with command_line(["sdc", "protect", "in put.csv", "-o", "out.csv", "-k", "3", "-s", "7"]):
    ...     reproduce_command(7)
    "sdc protect 'in put.csv' -o out.csv -k 3 --seed 7"
    """
    argv = _ARGV.get()
    if argv is None:
        return None
    args = _drop_option(list(argv), "-s", "--seed")
    return shlex.join([*args, "--seed", str(int(seed))])


def time_bounded(params: Mapping[str, Any] | None) -> bool:
    """True when a method's parameters bound it by wall-clock time (``time_budget`` > 0):
    its result then depends on the machine's speed and load."""
    if not params:
        return False
    budget = params.get("time_budget")
    try:
        return budget is not None and float(budget) > 0
    except (TypeError, ValueError):
        return False


# ----------------------------------------------------------------------- versions
@lru_cache(maxsize=None)
def _dist_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def versions() -> dict[str, str | None]:
    """Versions of Python, sdc and the numerical libraries (dask when it was imported)."""
    from ._version import __version__

    out: dict[str, str | None] = {"python": platform.python_version(), "sdc": __version__}
    for name in _DISTRIBUTIONS:
        out[name] = _dist_version(name)
    if "dask" in sys.modules:
        out["dask"] = _dist_version("dask")
        if "distributed" in sys.modules:
            out["distributed"] = _dist_version("distributed")
    return out


# ------------------------------------------------------------------------ hashing
def _key(path: str | Path) -> str:
    return os.path.abspath(os.fspath(path))


def _record(path: str | Path, rec: dict[str, Any]) -> None:
    with _LOCK:
        _WRITES[_key(path)] = (time.perf_counter(), rec)


def _forget(path: str | Path) -> None:
    with _LOCK:
        _WRITES.pop(_key(path), None)


class _DigestingFile:
    """A binary file proxy hashing every byte written through it (sequential writes)."""

    def __init__(self, fh: Any):
        self._fh = fh
        self._hash = hashlib.sha256()
        self.size = 0
        self.valid = True

    def write(self, data: Any) -> Any:
        view = memoryview(data)
        self._hash.update(view)
        self.size += view.nbytes
        return self._fh.write(data)

    def seek(self, *args: Any) -> Any:
        pos = self._fh.seek(*args)
        if pos != self.size:  # a writer going back: the stream is not the file any more
            self.valid = False
        return pos

    def hexdigest(self) -> str:
        return self._hash.hexdigest()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fh, name)


def digesting(path: str | Path, writer: Callable[[Any], None]) -> Callable[[Any], None]:
    """``writer(fh)`` that also hashes what it writes and records it as ``path``'s content."""

    def wrapped(fh: Any) -> None:
        tee = _DigestingFile(fh)
        writer(tee)
        if tee.valid:
            _record(path, {"size_bytes": tee.size, "sha256": tee.hexdigest()})
        else:
            _forget(path)

    return wrapped


def digesting_folder(path: str | Path, builder: Callable[[Path], None]) -> Callable[[Path], None]:
    """``builder(folder)`` that also hashes every file it made and records them under ``path``."""

    def wrapped(folder: Path) -> None:
        builder(folder)
        _record(path, _folder_record(Path(folder)))

    return wrapped


def _hash_path(path: Path) -> dict[str, Any]:
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
            size += len(chunk)
    return {"size_bytes": size, "sha256": digest.hexdigest()}


def hash_file(path: str | Path) -> dict[str, Any]:
    """Size and SHA-256 of a file on disk (cached while its mtime, size and inode hold)."""
    p = Path(path)
    st = p.stat()
    stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
    key = _key(p)
    with _LOCK:
        hit = _HASHED.get(key)
    if hit is not None and hit[0] == stamp:
        return dict(hit[1])
    rec = _hash_path(p)
    with _LOCK:
        _HASHED[key] = (stamp, rec)
    return dict(rec)


def _folder_record(folder: Path) -> dict[str, Any]:
    files = []
    total = 0
    for f in sorted(folder.rglob("*")):
        if f.is_file():
            rec = _hash_path(f)
            total += rec["size_bytes"]
            files.append({"name": f.relative_to(folder).as_posix(), **rec})
    return {"size_bytes": total, "sha256": None, "files": files}


def file_entry(path: str | Path | None, role: str, *, since: float | None = None) -> dict[str, Any]:
    """``{"role", "path", "name", "size_bytes", "sha256"}`` of a file (``files`` for a folder).

    ``path`` as given by the user (``None`` or ``-``: stdout/stdin, nothing to hash). A
    digest recorded by :func:`digesting` after ``since`` (a ``time.perf_counter()``
    value; the run's start) is used -- the bytes written, possibly not yet renamed into
    place; otherwise the file on disk is hashed (``None`` values when it does not exist).
    """
    if path is None or str(path) == "-":
        return {"role": role, "path": "-", "name": "<stdout>", "size_bytes": None, "sha256": None}
    p = Path(path)
    entry: dict[str, Any] = {"role": role, "path": str(path), "name": p.name}
    with _LOCK:
        hit = _WRITES.get(_key(p))
    if hit is not None and (since is None or hit[0] >= since):
        entry.update(hit[1])
    elif p.is_file():
        entry.update(hash_file(p))
    elif p.is_dir():
        entry.update(_folder_record(p))
    else:
        entry.update(size_bytes=None, sha256=None)
    return entry


def read_entry(path: str | Path | None, role: str, fingerprint: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`file_entry` of a file the run read, from its fingerprint (no second hash)."""
    given = "-" if path is None or str(path) == "-" else str(path)
    return {"role": role, "path": given, "name": fingerprint.get("name"),
            "size_bytes": fingerprint.get("size_bytes"), "sha256": fingerprint.get("sha256")}


# -------------------------------------------------------------------------- trail
def trail(t0: float, *, files: Sequence[Mapping[str, Any]] = (),
          reproduce: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``audit`` section of a report.

    Parameters
    ----------
    t0 : ``time.perf_counter()`` at the start of the run (the UTC start time is derived
        from it, so callers need not keep a second clock).
    files : :func:`file_entry` results.
    reproduce : ``protect`` only: ``{"command", "seed", "reproducible", "note"}``.
    """
    elapsed = max(0.0, time.perf_counter() - t0)
    start = datetime.now(timezone.utc) - timedelta(seconds=elapsed)
    argv, entry = current_argv()
    out: dict[str, Any] = {
        "argv": argv,
        "entry": entry,
        "cwd_name": Path.cwd().name,
        "started_utc": start.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "duration_seconds": elapsed,
        "versions": versions(),
        "platform": platform.platform(),
        "files": [dict(f) for f in files],
    }
    if reproduce is not None:
        out["reproduce"] = dict(reproduce)
    return out


def reproduce_entry(request: Any, plan: Any) -> dict[str, Any]:
    """The ``reproduce`` entry of a protect report, made from the run's request
    (:class:`microagg_cli.request.ProtectRequest`: its seed) and the plan that ran (its
    blocks' parameters): the command with ``--seed``, and whether the same command gives
    the same bytes on another machine."""
    seed = request.run.seed
    block_params = [b.params for b in plan.blocks]
    bounded = any(time_bounded(p) for p in block_params)
    command = reproduce_command(seed)
    if bounded:
        note = (f"a method ran on a wall-clock budget (time_budget): {NOT_REPRODUCIBLE}; "
                "give iterations instead")
    elif command is None:
        note = "run from Python: call the same function with the same arguments and seed"
    else:
        note = None
    return {"command": command, "seed": int(seed), "reproducible": not bounded, "note": note}
