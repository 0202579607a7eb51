"""Atomic output sets: every file of one run appears together, or none does.

Every file a run writes is first written to a hidden temporary file (or folder) in its
target folder, named ``.<name>.sdc-<host>-<pid>-<random>.tmp``, and renamed into place
only when every file of the run is complete (:class:`OutputSet`). The live temporary
paths are kept in a registry so that the interrupt handler can remove them
(:func:`discard_live_temps`); the pid in the name lets a later run remove those of a
process that was killed outright (SIGKILL, power cut): :func:`clean_stale_temps`.
New files get the mode the process umask allows (never wider); a private file (a report
holding original values) gets 0600. Standard library only: cheap to import.
"""

from __future__ import annotations

import errno
import io as _io
import json
import logging
import os
import re
import secrets
import shutil
import socket
import threading
from pathlib import Path
from typing import Any, Callable

from .errors import DataError, Interrupted, OutputExistsError

__all__ = [
    "MARKER",
    "check_replaceable_folder",
    "OutputSet",
    "atomic_write_bytes",
    "clean_stale_temps",
    "discard_live_temps",
    "committed_files",
    "commit_in_progress",
    "defer_signal",
    "file_mode",
    "write_error",
    "json_text",
    "COMMIT_LOCK",
]


_TEMP_RE = re.compile(r"^\..+\.sdc-(?P<host>[A-Za-z0-9-]+)-(?P<pid>\d+)-[A-Za-z0-9_]+\.tmp$")
_LIVE: dict[str, bool] = {}  # temp path -> is a folder
_LIVE_LOCK = threading.RLock()
_CLEANED: set[str] = set()


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname().split(".")[0])[:40] or "host"


def _umask() -> int:
    """The process umask, read without changing it where the system allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    with _LIVE_LOCK:  # pragma: no cover - not Linux
        old = os.umask(0o022)
        os.umask(old)
    return old


def file_mode(*, private: bool = False, folder: bool = False) -> int:
    """Mode of a new output: what the umask allows, and never more than 0600 (0700) when private."""
    base = 0o777 if folder else 0o666
    mode = base & ~_umask()
    return mode & (0o700 if folder else 0o600) if private else mode


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale_temps(folder: Path) -> list[str]:
    """Remove temporary files that dead ``sdc`` processes of this host left in ``folder``.

    Returns the removed names (each is also logged as a warning).
    """
    key = str(folder.resolve()) if folder.exists() else str(folder)
    if key in _CLEANED:
        return []
    _CLEANED.add(key)
    removed = []
    host = _host()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    for entry in entries:
        m = _TEMP_RE.match(entry.name)
        if not m or m["host"] != host or int(m["pid"]) == os.getpid() or _pid_alive(int(m["pid"])):
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
        except OSError:
            continue
        removed.append(entry.name)
        logging.getLogger("microagg_cli").warning(
            "removed %s: a temporary file left by sdc process %s, which is no longer running",
            os.path.join(str(folder), entry.name), m["pid"])
    return removed


#: The file ``sdc`` writes into every dataset directory it creates: the list of the
#: files it wrote there. ``--force`` replaces a folder only when it holds nothing else.
MARKER = ".sdc-output.json"


def _marker_files(path: Path) -> set[str]:
    """The files an earlier ``sdc`` run listed in ``path``'s marker (empty when none)."""
    import json

    try:
        with open(path / MARKER, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return set()
    files = doc.get("files") if isinstance(doc, dict) and doc.get("tool") == "sdc" else None
    return {f for f in files if isinstance(f, str)} if isinstance(files, list) else set()


def _tree(path: Path) -> list[tuple[str, bool]]:
    """(relative posix path, is a directory) of everything below ``path`` (links not followed)."""
    out: list[tuple[str, bool]] = []
    stack = [(path, "")]
    while stack:
        folder, rel = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                name = f"{rel}{entry.name}"
                is_dir = entry.is_dir(follow_symlinks=False)
                out.append((name, is_dir))
                if is_dir:
                    stack.append((Path(entry.path), name + "/"))
    return sorted(out)


def write_marker(folder: Path) -> None:
    """List the files of a dataset directory being built in ``folder`` in its marker."""
    import json

    files = [name for name, is_dir in _tree(folder) if not is_dir and name != MARKER]
    doc = {"tool": "sdc", "note": "written by sdc; sdc --force replaces this folder only while it holds "
                                  "nothing but these files", "files": files}
    with open(folder / MARKER, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")
    os.chmod(folder / MARKER, file_mode())


def check_replaceable_folder(path: Path, new_files: set[str] | None = None, *, what: str = "output") -> None:
    """Refuse to replace the existing folder ``path`` unless it holds only what ``sdc`` writes.

    Allowed: the marker (:data:`MARKER`), the files it lists (an earlier run's output)
    and ``new_files`` (what this run writes), with their folders. Anything else (an
    input dataset, a user's file) makes it a :class:`DataError` (exit code 3) naming
    one such entry: ``--force`` never deletes what ``sdc`` did not write.
    """
    if not path.is_dir() or path.is_symlink():
        return
    allowed = _marker_files(path) | set(new_files or ()) | {MARKER}
    parents = {"/".join(f.split("/")[:i]) for f in allowed for i in range(1, f.count("/") + 1)}
    try:
        entries = _tree(path)
    except OSError as exc:
        raise write_error(what, path, exc) from None
    for name, is_dir in entries:
        if (is_dir and name in parents) or (not is_dir and name in allowed):
            continue
        raise DataError(
            f"{what} folder {str(path)!r} holds {name!r}, which sdc did not write there; --force replaces only "
            "sdc's own output files: move it away or choose another output folder")


def _temp_name(path: Path) -> Path:
    parent = path.parent if str(path.parent) else Path(".")
    return parent / f".{path.name}.sdc-{_host()}-{os.getpid()}-{secrets.token_hex(4)}.tmp"


def _register(tmp: Path, folder: bool) -> None:
    with _LIVE_LOCK:
        _LIVE[str(tmp)] = folder


def _unregister(tmp: Path) -> None:
    with _LIVE_LOCK:
        _LIVE.pop(str(tmp), None)


def _remove(tmp: Path, folder: bool) -> None:
    try:
        if folder:
            shutil.rmtree(tmp)
        else:
            os.unlink(tmp)
    except FileNotFoundError:
        pass
    except OSError:
        pass


def discard_live_temps() -> None:
    """Remove every temporary output of this process (the interrupt handler calls this)."""
    with _LIVE_LOCK:
        items = list(_LIVE.items())
        _LIVE.clear()
    for tmp, folder in items:
        _remove(Path(tmp), folder)


def json_text(doc: Any) -> str:
    """A report as JSON text (indent 2, no NaN, key order as built, trailing newline):
    what every JSON report file holds (``io.write_json``, ``report.to_json``)."""
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_error(what: str, path: Path, exc: OSError) -> DataError:
    """A one-line :class:`DataError` for an OS error while writing ``path``."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    if exc.errno == errno.ENOSPC:
        reason = "no space left on the device"
    elif exc.errno in (errno.EROFS,):
        reason = "read-only file system"
    elif exc.errno in (errno.EACCES, errno.EPERM):
        reason = "permission denied"
    return DataError(f"cannot write {what} {str(path)!r}: {reason}; nothing was written")


#: The commit lock: the interrupt handler takes it, so a signal never lands between two
#: renames of one output set.
COMMIT_LOCK = threading.RLock()
_COMMITTED: list[str] = []
_COMMIT_STATE = {"depth": 0, "pending": 0}


def commit_in_progress() -> bool:
    """True while an output set is being renamed into place (signals wait for the end)."""
    return _COMMIT_STATE["depth"] > 0


def defer_signal(signum: int) -> None:
    """Remember a signal that arrived during a commit; raised when the commit ends."""
    _COMMIT_STATE["pending"] = _COMMIT_STATE["pending"] or int(signum)


def committed_files() -> list[str]:
    """Paths this process has renamed into place so far (for the interrupt message)."""
    return list(_COMMITTED)


class OutputSet:
    """The files of one run, written to temporary files and renamed into place together.

    ``add_file`` / ``add_folder`` write the content at once into a temporary file or
    folder beside the target (created with the umask's mode, 0600 when ``private``);
    :meth:`commit` renames them all into place; if anything fails first, or the set is
    left without a commit, every temporary file is removed and no target is touched.
    An OS error (read-only folder, disk full, ...) becomes a :class:`DataError` (exit
    code 3) naming the path.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> with OutputSet(force=False) as out:
    ...     out.add_file(d / "a.txt", lambda fh: fh.write(b"a"))
    ...     out.add_file(d / "b.txt", lambda fh: fh.write(b"b"))
    ...     written = out.commit()
    >>> sorted(p.name for p in d.iterdir())
    ['a.txt', 'b.txt']
    """

    def __init__(self, *, force: bool):
        self.force = force
        self._staged: list[tuple[Path, Path, bool, str, bool]] = []  # (target, temp, is folder, what, force)
        self.committed = False

    def __enter__(self) -> "OutputSet":
        return self

    def __exit__(self, *exc: Any) -> None:
        if not self.committed:
            self.discard()

    def _new_temp(self, path: Path, what: str, *, folder: bool) -> Path:
        parent = path.parent if str(path.parent) else Path(".")
        clean_stale_temps(parent)
        tmp = _temp_name(path)
        _register(tmp, folder)
        return tmp

    def add_file(self, path: Path, writer: Callable[[Any], None], *, what: str = "output",
                 private: bool = False, force: bool | None = None) -> None:
        """Write ``writer(fh)`` (binary) into a temporary file beside ``path``.

        ``force``: whether this file may replace an existing one (default: the set's)."""

        def fill(tmp: Path) -> None:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                writer(fh)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, file_mode(private=private))

        self._stage(path, fill, what=what, folder=False, force=force)

    def add_folder(self, path: Path, builder: Callable[[Path], None], *, what: str = "output",
                   private: bool = False) -> None:
        """``builder(folder)`` fills a temporary folder beside ``path`` (a dataset directory)."""

        def fill(tmp: Path) -> None:
            os.mkdir(tmp, 0o700)
            builder(tmp)
            write_marker(tmp)
            os.chmod(tmp, file_mode(private=private, folder=True))

        self._stage(path, fill, what=what, folder=True, force=None)

    def _stage(self, path: Path, fill: Callable[[Path], None], *, what: str, folder: bool,
               force: bool | None) -> None:
        """``fill(tmp)`` creates the temporary file or folder; on any failure it is removed."""
        tmp = self._new_temp(path, what, folder=folder)
        try:
            fill(tmp)
        except BaseException as exc:
            _remove(tmp, folder)
            _unregister(tmp)
            if isinstance(exc, OSError):
                raise write_error(what, path, exc) from None
            raise
        self._staged.append((path, tmp, folder, what, self.force if force is None else force))

    def commit(self) -> list[Path]:
        """Rename every staged file into place; returns the targets."""
        with COMMIT_LOCK:
            for path, tmp, folder, what, force in self._staged:
                if (path.exists() or path.is_symlink()) and not force:
                    raise OutputExistsError(f"{what} {str(path)!r} appeared while writing; use --force to replace it")
                if folder and path.is_dir() and not path.is_symlink():
                    check_replaceable_folder(path, _marker_files(tmp), what=what)  # what this run wrote
                elif not folder and path.is_dir() and not path.is_symlink():
                    raise DataError(f"{what} {str(path)!r} is a directory; sdc replaces only files it writes")
            old_dirs = []
            _COMMIT_STATE["depth"] += 1
            try:
                for path, tmp, folder, what, _force in self._staged:
                    if folder and (path.exists() or path.is_symlink()):
                        old = _temp_name(path)
                        _register(old, True)
                        os.mkdir(old, 0o700)
                        os.replace(path, old / "x")
                        old_dirs.append(old)
                    os.replace(tmp, path)
                    _unregister(tmp)
                    _COMMITTED.append(str(path))
            except OSError as exc:
                raise write_error(what, path, exc) from None
            finally:
                _COMMIT_STATE["depth"] -= 1
                for old in old_dirs:
                    _remove(old, True)
                    _unregister(old)
            self.committed = True
        pending, _COMMIT_STATE["pending"] = _COMMIT_STATE["pending"], 0
        if pending:
            raise Interrupted(pending)
        return [p for p, *_ in self._staged]

    def discard(self) -> None:
        """Remove every staged temporary file (no target is touched)."""
        for _path, tmp, folder, _what, _force in self._staged:
            _remove(tmp, folder)
            _unregister(tmp)
        self._staged.clear()


def atomic_write_bytes(path: Path, writer: Callable[[Any], None], *, force: bool, binary: bool = True,
                       what: str = "output", private: bool = False) -> None:
    """Write one file via a temporary file in the target folder, then rename it over ``path``.

    ``writer(fh)`` writes the content. Nothing is left behind when it fails.
    """
    with OutputSet(force=force) as out:
        if binary:
            out.add_file(path, writer, what=what, private=private)
        else:
            def text_writer(fh: Any) -> None:
                wrapper = _io.TextIOWrapper(fh, encoding="utf-8", newline="")
                writer(wrapper)
                wrapper.flush()
                wrapper.detach()
            out.add_file(path, text_writer, what=what, private=private)
        out.commit()
