"""numba in one place: where compiled kernels are cached, and saying when they compile.

Every kernel module imports ``njit`` from here, never from numba, so that two things
hold before numba compiles anything:

* **Cache location.** numba caches a compiled kernel in the ``__pycache__`` folder
  beside its source. When the package folder cannot be written (system
  site-packages, a read-only container image) and the user has not set
  ``NUMBA_CACHE_DIR``, the cache goes to ``$XDG_CACHE_HOME/microagg-cli/numba``
  (``~/.cache/microagg-cli/numba`` without ``XDG_CACHE_HOME``) instead of being
  recompiled by every run. ``NUMBA_CACHE_DIR`` is set before numba is imported (it
  is read once, at import), so it also applies to any other numba code of the same
  process.
* **Compile notice.** A kernel that is not in the cache is compiled on its first
  call, once per installation, which takes seconds. Just before the first such
  compilation in a process, one line goes to the ``microagg_cli`` logger (stderr;
  hidden by ``-q``): ``compiling fast MDAV kernels, once per installation, about
  20 s``. numba announces only real compilations (its ``numba:compile`` event comes
  after a cache miss), so a warm cache says nothing.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

__all__ = ["njit", "cache_dir_override", "user_cache_dir", "KERNEL_FAMILIES"]

#: The package's kernel folders: numba writes its in-tree cache to their ``__pycache__``.
_KERNEL_DIRS = ("methods", "metrics")

#: Kernel families by module: the name in the compile notice and a rough compile time
#: (seconds, cold cache, 2-core machine; benchmarks/end_to_end.py --cold). Modules not
#: listed are announced by their own name, without a time.
KERNEL_FAMILIES: dict[str, tuple[str, int | None]] = {
    "microagg_cli.methods._fast_mdav": ("fast MDAV", 20),
    "microagg_cli.methods._cones": ("fast MDAV", 20),
}

_log = logging.getLogger("microagg_cli")


def user_cache_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """The per-user numba cache: ``$XDG_CACHE_HOME/microagg-cli/numba`` or
    ``~/.cache/microagg-cli/numba``."""
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "microagg-cli" / "numba"


def _writable(folder: Path) -> bool:
    """Can numba put its cache files into ``folder`` (created if missing)? Tried by
    writing a file, as numba does: permission bits say nothing for root or on a
    read-only mount."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError:
        return False
    return True


def cache_dir_override(
    package_dir: Path,
    environ: Mapping[str, str] = os.environ,
    writable: Callable[[Path], bool] = _writable,
) -> Path | None:
    """The ``NUMBA_CACHE_DIR`` to set, or None to leave numba's choice alone.

    None when the user set ``NUMBA_CACHE_DIR`` (even to an empty string: theirs to
    decide) or when numba can cache beside the sources (the ``__pycache__`` of every
    kernel folder under ``package_dir`` is writable); otherwise :func:`user_cache_dir`.
    """
    if "NUMBA_CACHE_DIR" in environ:
        return None
    if all(writable(package_dir / sub / "__pycache__") for sub in _KERNEL_DIRS):
        return None
    return user_cache_dir(environ)


def _configure_cache() -> None:
    target = cache_dir_override(Path(__file__).resolve().parent)
    if target is None:
        return
    os.environ["NUMBA_CACHE_DIR"] = str(target)
    config = sys.modules.get("numba.core.config")
    if config is not None:  # numba imported before us: its config has read the environment
        config.CACHE_DIR = str(target)


_configure_cache()

import numba  # noqa: E402  (after the cache location is settled)
from numba.core import event as _event  # noqa: E402

_announced: list[str] = []  # the notice given in this process, if any
_announce_lock = threading.Lock()


def _notice(module: str) -> str | None:
    """The compile notice for a kernel of ``module``: the first in the process only
    (the first compilation is the outermost kernel, which names the family)."""
    if not module.startswith("microagg_cli."):
        return None
    family, seconds = KERNEL_FAMILIES.get(module, (module.rsplit(".", 1)[-1].lstrip("_"), None))
    with _announce_lock:
        if _announced:
            return None
        _announced.append(family)
    about = f", about {seconds} s" if seconds else ""
    return f"compiling {family} kernels, once per installation{about}"


class _CompileListener(_event.Listener):
    """Announces the first cold compilation of a kernel in the process (module doc)."""

    def on_start(self, ev: _event.Event) -> None:
        dispatcher = (ev.data or {}).get("dispatcher")
        func = getattr(dispatcher, "py_func", None)
        text = _notice(getattr(func, "__module__", "") or "")
        if text:
            _log.warning(text)

    def on_end(self, ev: _event.Event) -> None:
        pass


_event.register("numba:compile", _CompileListener())


def njit(*args, **kwargs):
    """:func:`numba.njit`, after the cache location is settled (see module doc).

    Without a C-callable (``cfunc``) wrapper unless asked for: no kernel is used as a
    C callback, and each wrapper costs compile time on the first run.
    """
    kwargs.setdefault("no_cfunc_wrapper", True)
    return numba.njit(*args, **kwargs)
