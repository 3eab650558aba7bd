"""Compiling one engine path's kernels in another process while a run goes on interpreted.

The install fills Numba's cache (``hatch_build.py``), but a long run may still find it
empty: ``NUMBA_CACHE_DIR`` set, a read-only install, a wheel built on another machine.
Rather than wait for the compile (seconds of CPU) or never compile at all, the engine starts
``python -m gpusched.core.warmup MODE`` in the background (:func:`start`), keeps running
on the interpreted kernels, and moves to the compiled ones as soon as that process has
written them to the cache (:meth:`Compile.poll`). A run that ends first leaves the process
running: it finishes the cache for the runs after it. Both forms of the kernels give the
same schedule bit for bit, so where the switch falls changes no result.

One compile per path at a time: a lock file (in the system's temporary folder, named after
the interpreter, the Numba cache folder and the path) keeps concurrent runs from starting
the same compile twice; a run that finds it held waits for that process instead.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: s; a lock older than this is stale whatever its process (a compile takes seconds)
STALE_S = 600.0
#: the compiling process, given the engine path and the lock file to remove when done
COMMAND = [sys.executable, "-m", "gpusched.core.warmup"]


def lock_path(mode: str) -> Path:
    """The lock file of a background compile of engine path ``mode``."""
    key = "\0".join(
        [sys.executable, os.environ.get("NUMBA_CACHE_DIR", ""), str(Path(__file__).parent), mode]
    )
    digest = hashlib.sha1(key.encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"gpusched-compile-{mode}-{digest}.lock"


def _alive(pid: int) -> bool:
    if os.name == "nt":  # (os.kill there ends the process): trust the lock's age alone
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # (exists, another user's)
        return True
    return True


def _held(path: Path) -> bool:
    """Is ``path`` held by a compile still running?"""
    try:
        pid = int(path.read_text().strip() or 0)
        age = time.time() - path.stat().st_mtime
    except (OSError, ValueError):
        return False
    return pid > 0 and age < STALE_S and _alive(pid)


class Compile:
    """A background compile of one engine path (ours, or another run's that we wait for)."""

    def __init__(self, mode: str, proc: subprocess.Popen[bytes] | None, lock: Path) -> None:
        self.mode = mode
        self.proc = proc
        self.lock = lock
        self.t0 = time.perf_counter()

    def poll(self) -> bool | None:
        """None while it runs; then True if the kernels are in the cache, False if not."""
        if self.proc is not None:
            code = self.proc.poll()
            if code is None:
                return None
            return code == 0
        if _held(self.lock):
            return None
        from gpusched.core.warmup import compiled_in_cache

        return compiled_in_cache(self.mode)


def detached(args: list[str]) -> subprocess.Popen[bytes]:
    """Start ``args`` as a quiet process of its own session: a Ctrl-C of the run does not
    stop the cache's fill (used here and by :mod:`gpusched.core.helpers`)."""
    return subprocess.Popen(
        args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def start(mode: str) -> Compile:
    """Start compiling engine path ``mode``'s kernels in a new process (or, when another
    run already is, wait for that one)."""
    lock = lock_path(mode)
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if _held(lock):
                return Compile(mode, None, lock)
            lock.unlink(missing_ok=True)  # stale: its process is gone
            continue
        try:
            proc = detached([*COMMAND, mode, str(lock)])
        except OSError:
            os.close(fd)
            lock.unlink(missing_ok=True)
            raise
        os.write(fd, str(proc.pid).encode())
        os.close(fd)
        _running.append(proc)
        return Compile(mode, proc, lock)
    return Compile(mode, None, lock)


#: compiles this process started (kept so that Python does not warn about them at exit)
_running: list[subprocess.Popen[bytes]] = []
