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
  10 s (`sdc self-test --all` does it ahead of time)``. numba announces only real
  compilations (its ``numba:compile`` event comes after a cache miss), so a warm
  cache says nothing. :func:`compilations` counts them (``sdc self-test`` shows it).
* **numba on use.** ``njit`` only records a kernel; numba is imported at the first
  call of any kernel (see :class:`Kernel`), so runs that compile nothing do not pay
  the 0.15-0.3 s of importing it.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any
from pathlib import Path

__all__ = ["njit", "Kernel", "compilations", "compile_seconds", "cache_dir_override", "user_cache_dir", "KERNEL_FAMILIES"]

#: The package's kernel folders (the package itself: ``_select``): numba writes its in-tree
#: cache to their ``__pycache__``.
_KERNEL_DIRS = (".", "methods", "metrics")

#: Kernel families by module: the name in the compile notice and a rough compile time
#: (seconds, cold cache, 2-core machine; benchmarks/end_to_end.py --cold). Modules not
#: listed are announced by their own name, without a time.
KERNEL_FAMILIES: dict[str, tuple[str, int | None]] = {
    "microagg_cli.methods._fast_mdav": ("fast MDAV", 10),
    "microagg_cli.methods._cones": ("fast MDAV", 10),
    "microagg_cli.methods._mixed_kernels": ("mixed MDAV", 3),
    "microagg_cli.methods._refine_kernels": ("refine", None),
    "microagg_cli.metrics._cg_kernels": ("cg_bound", None),
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
    return f"compiling {family} kernels, once per installation{about} (`sdc self-test --all` does it ahead of time)"


# ------------------------------------------------------------ numba, loaded on use
#
# Importing numba costs 0.15-0.3 s, and most runs of ``sdc`` call no kernel at all
# (the README's Census run, evaluate, every method below its compiled size). So
# ``njit`` records the kernel and returns a :class:`Kernel`; numba is imported, and
# every recorded kernel turned into a numba dispatcher, at the first call of any of
# them. Kernels call each other through their module globals, which numba reads when
# it compiles (or loads from the cache): so the build replaces every ``Kernel`` in the
# globals of the package's modules by its dispatcher, before anything compiles.

_numba: Any = None  # the numba module, once loaded
_compiled = [0]  # the package's kernels compiled (not loaded from the cache) in this process


_compile_time = [0.0]  # seconds spent compiling (outermost compilations), this process
_depth = [0]
_started = [0.0]


def compile_seconds() -> float:
    """Seconds numba has spent compiling in this process (nested compilations counted
    once): a method's time minus this is its own work, whatever the cache held."""
    return _compile_time[0]


def compilations() -> int:
    """How many of the package's kernels numba has compiled in this process (a kernel
    loaded from the cache does not count)."""
    return _compiled[0]


_pending: list[Kernel] = []  # kernels declared before numba was loaded
_build_lock = threading.RLock()


def _load_numba() -> Any:
    global _numba
    if _numba is None:
        import numba
        from numba.core import event

        class _CompileListener(event.Listener):
            """Announces the first cold compilation of a kernel in the process (module doc)."""

            def on_start(self, ev: Any) -> None:
                with _announce_lock:
                    if not _depth[0]:
                        _started[0] = time.perf_counter()
                    _depth[0] += 1
                dispatcher = (ev.data or {}).get("dispatcher")
                func = getattr(dispatcher, "py_func", None)
                module = getattr(func, "__module__", "") or ""
                if module.startswith("microagg_cli."):
                    _compiled[0] += 1
                text = _notice(module)
                if text:
                    _log.warning(text)

            def on_end(self, ev: Any) -> None:
                with _announce_lock:
                    _depth[0] -= 1
                    if not _depth[0]:
                        _compile_time[0] += time.perf_counter() - _started[0]

        event.register("numba:compile", _CompileListener())
        _numba = numba
    return _numba


def _build_all() -> None:
    """Make every recorded kernel a numba dispatcher and rebind the module globals."""
    with _build_lock:
        numba = _load_numba()
        while _pending:
            kernel = _pending.pop()
            if kernel._dispatcher is None:
                kernel._dispatcher = numba.njit(*kernel._args, **kernel._kwargs)(kernel.py_func)
        for name, module in list(sys.modules.items()):
            if not name.startswith("microagg_cli") or module is None:
                continue
            space = vars(module)
            for attr, value in list(space.items()):
                if isinstance(value, Kernel) and value._dispatcher is not None:
                    space[attr] = value._dispatcher


class Kernel:
    """A compiled kernel as declared by :func:`njit`, before numba is loaded.

    Calling it (or reading any dispatcher attribute, such as ``py_func``' siblings
    ``signatures`` or ``stats``) loads numba and builds every recorded kernel; from
    then on the module globals hold the numba dispatchers themselves.
    """

    def __init__(self, func: Callable, args: tuple, kwargs: dict):
        self.py_func = func
        self._args, self._kwargs = args, kwargs
        self._dispatcher: Any = None
        self.__name__ = func.__name__
        self.__qualname__ = func.__qualname__
        self.__module__ = func.__module__
        self.__doc__ = func.__doc__
        self.__wrapped__ = func

    @property
    def dispatcher(self) -> Any:
        if self._dispatcher is None:
            _build_all()
        return self._dispatcher

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.dispatcher(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_dispatcher", "_args", "_kwargs", "py_func"):
            raise AttributeError(name)
        return getattr(self.dispatcher, name)

    def __repr__(self) -> str:
        return f"<kernel {self.__module__}.{self.__qualname__}>"


def njit(*args, **kwargs):
    """:func:`numba.njit`, after the cache location is settled and only when used
    (see module doc); takes the same arguments.

    Without a C-callable (``cfunc``) wrapper unless asked for: no kernel is used as a
    C callback, and each wrapper costs compile time on the first run.
    """
    kwargs.setdefault("no_cfunc_wrapper", True)
    if args and callable(args[0]):
        return njit(**kwargs)(args[0])

    def declare(func: Callable) -> Any:
        with _build_lock:
            if _numba is not None:  # numba is loaded already: no reason to wait
                return _numba.njit(*args, **kwargs)(func)
            kernel = Kernel(func, args, kwargs)
            _pending.append(kernel)
            return kernel

    return declare
