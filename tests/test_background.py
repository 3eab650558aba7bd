"""Compiling the kernels in another process (gpusched.core.background): one compile per
engine path at a time, its lock, and the process's entry point."""

from __future__ import annotations

import os
import sys
import time

import pytest

from gpusched.core import background, warmup


@pytest.fixture
def fake_compiler(monkeypatch, tmp_path):
    """The compiling process replaced by one that sleeps, then removes its lock."""
    monkeypatch.setattr(background.tempfile, "gettempdir", lambda: str(tmp_path))
    code = "import sys, time, pathlib; time.sleep(float(sys.argv[1])); pathlib.Path(sys.argv[3]).unlink()"

    def use(seconds: float) -> None:
        monkeypatch.setattr(background, "COMMAND", [sys.executable, "-c", code, str(seconds)])

    return use


def _wait(compile_, timeout=60.0):
    t0 = time.monotonic()
    while (ready := compile_.poll()) is None:
        assert time.monotonic() - t0 < timeout
        time.sleep(0.05)
    return ready


def test_one_compile_per_path_at_a_time(fake_compiler, monkeypatch):
    fake_compiler(1.0)
    first = background.start("fused")
    assert first.proc is not None and first.lock.is_file()
    assert int(first.lock.read_text()) == first.proc.pid
    second = background.start("fused")  # another run meanwhile waits for the first
    assert second.proc is None and second.poll() is None
    other = background.start("python")  # another path compiles on its own
    assert other.proc is not None and other.lock != first.lock
    monkeypatch.setattr(warmup, "compiled_in_cache", lambda mode: True)
    assert _wait(first) is True and _wait(other) is True
    assert not first.lock.exists()
    assert second.poll() is True  # the lock is gone: the cache is asked


def test_a_failed_compile_reports_false(fake_compiler, monkeypatch):
    monkeypatch.setattr(background, "COMMAND", [sys.executable, "-c", "raise SystemExit(3)"])
    c = background.start("fused")
    assert _wait(c) is False


def test_a_stale_lock_is_taken_over(fake_compiler):
    fake_compiler(0.0)
    lock = background.lock_path("fused")
    lock.write_text("999999999")  # no such process
    c = background.start("fused")
    assert c.proc is not None
    _wait(c)
    lock.write_text(str(os.getpid()))  # alive, but older than STALE_S
    old = time.time() - background.STALE_S - 1
    os.utime(lock, (old, old))
    c = background.start("fused")
    assert c.proc is not None
    _wait(c)


def test_the_compiling_process_loads_the_kernels_and_removes_its_lock(tmp_path, monkeypatch):
    monkeypatch.setattr(warmup, "_warm", set())
    lock = tmp_path / "x.lock"
    lock.write_text("1")
    assert warmup.main(["fused", str(lock)]) == 0
    assert warmup.loaded("fused") and not lock.exists()
