"""Jitted helpers of the families' support code, compiled without making a run wait.

The engine's kernels have their own mechanism (:mod:`gpusched.core.jit`,
:mod:`gpusched.core.background`). The families' support modules (for example
``gpusched.algorithms.share``, SJF-BSBF's placement and Alg. 2) have jitted functions of
their own, which a policy calls from Python. On the first run after an install Numba's
cache holds none of them, and their first call would compile them in the run's foreground
(tens of seconds for a 30-job trace). Decorated with :func:`helper`, such a function:

* when its compiled version for the call's argument types is in Numba's cache, is loaded
  from there and called, as a plain ``njit(cache=True)`` function would be;
* when it is not, is compiled in another process (``python -m gpusched.core.helpers``;
  :data:`_queued` signatures at once, one process at a time per run, what is left queued
  when the run ends in one more process), and meanwhile runs as plain Python: the same
  source file executed a second time without Numba (:func:`gpusched.core.jit.interpreted`,
  as the engine's kernels are), so the same statements on the same arrays, and the same
  results. Once the process has cached it, the next call loads the compiled version.

``MODE`` switches this off: ``"compiled"`` compiles in the foreground as Numba does,
``"interpreted"`` always runs the plain functions (tests compare the two). Under
``NUMBA_DISABLE_JIT=1`` the functions are plain Python anyway.

A decorated module must be importable a second time as its twin: its jitted functions
call only each other, NumPy and ``math`` (nothing Numba-only), and importing it does no
work beyond definitions.
"""

from __future__ import annotations

import atexit
import importlib
import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from gpusched.core.background import detached
from gpusched.core.jit import SUFFIX, interpreted, load_cached

#: "auto" (compile in the background, run plain meanwhile), "compiled" or "interpreted"
MODE = "auto"
#: Numba options of every helper
OPTIONS: dict[str, Any] = {"cache": True, "nogil": True}
#: the compiling process, given the file of the signatures to compile
COMMAND = [sys.executable, "-m", "gpusched.core.helpers"]

#: (module, function name, argument types) not in the cache and not being compiled yet
_queued: list[tuple[str, str, tuple[Any, ...]]] = []
#: signature -> the process compiling it
_compiling: dict[tuple[str, str, tuple[Any, ...]], subprocess.Popen[bytes]] = {}
_running: list[subprocess.Popen[bytes]] = []
_exit_hook = False


def helper(fn: Callable[..., Any]) -> Any:
    """Decorate a family's jitted function (see the module's docstring)."""
    if fn.__module__.endswith(SUFFIX):
        return fn  # the interpreted twin: plain Python
    from numba import njit
    from numba.core import config

    dispatcher = njit(**OPTIONS)(fn)
    if not config.DISABLE_JIT:  # type: ignore[attr-defined]
        dispatcher.__class__ = _dispatcher_class()
    return dispatcher


_CLASS: Any = None


def _dispatcher_class() -> Any:
    global _CLASS
    if _CLASS is not None:
        return _CLASS
    from numba.core.registry import CPUDispatcher

    class HelperDispatcher(CPUDispatcher):
        """Numba's dispatcher, except that a call from Python whose compiled version is
        not in the cache runs the plain function while another process compiles it."""

        def _compile_for_args(self, *args: Any, **kws: Any) -> Any:
            # called (by Numba's C dispatcher) when no compiled version matches the call;
            # the callable it returns is called with the arguments
            if MODE == "compiled" or kws:
                return super()._compile_for_args(*args, **kws)  # type: ignore[misc]
            fn = self.py_func
            if MODE != "interpreted":
                sig = tuple(self.typeof_pyval(a) for a in args)
                key = (fn.__module__, fn.__name__, sig)
                _poll()
                if key not in _compiling and key not in _queued:
                    if load_cached(self, sig, fast=False):
                        return self.compile(sig)  # loaded from the cache (or compiled since)
                    if key in _tried:  # compiled by another process, still not cached
                        return super()._compile_for_args(*args)  # type: ignore[misc]  # (Numba's error)
                    _tried.add(key)
                    _queued.append(key)
                    _poll()
            return getattr(interpreted(fn.__module__), fn.__name__)

    _CLASS = HelperDispatcher
    return _CLASS


#: signatures handed to a compiling process once
_tried: set[tuple[str, str, tuple[Any, ...]]] = set()


def _poll() -> None:
    """Forget finished compiles; start one for the queued signatures if none runs."""
    for key, proc in list(_compiling.items()):
        if proc.poll() is not None:
            del _compiling[key]
    if _queued and not _compiling:
        _start()


def _start() -> None:
    global _exit_hook
    keys = list(_queued)
    _queued.clear()
    fd, name = tempfile.mkstemp(prefix="gpusched-helpers-", suffix=".pickle")
    with os.fdopen(fd, "wb") as f:
        pickle.dump(keys, f)
    try:
        proc = detached([*COMMAND, name])
    except OSError:
        os.unlink(name)
        return  # (the plain functions go on)
    _running.append(proc)  # (kept so that Python does not warn about it at exit)
    for key in keys:
        _compiling[key] = proc
    if not _exit_hook:
        _exit_hook = True
        atexit.register(_at_exit)


def _at_exit() -> None:
    """Signatures still queued when the run ends are compiled for the runs after it."""
    if _queued:
        _start()


def compile_all(keys: list[tuple[str, str, tuple[Any, ...]]]) -> int:
    """Compile (into Numba's cache) each ``(module, function, argument types)``; the
    number that failed."""
    failed = 0
    for module, name, sig in keys:
        try:
            getattr(importlib.import_module(module), name).compile(sig)
        except Exception:  # noqa: BLE001 - the run will show Numba's error in the foreground
            failed += 1
    return failed


def main(argv: list[str]) -> int:
    """``python -m gpusched.core.helpers FILE``: compile the signatures pickled in FILE
    (written by a run, see :func:`_start`), then remove it."""
    try:
        with open(argv[0], "rb") as f:
            keys = pickle.load(f)
    finally:
        os.unlink(argv[0])
    return 1 if compile_all(keys) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
