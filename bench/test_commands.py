"""Whole commands as a user runs them (issue 15): a fresh process each, with --out.

Numba's cache is warm (the session fixture compiled the kernels), so these measure what
every later run pays: the interpreter, imports, loading the cached kernels, reading the
trace, simulating and writing the results. Run: ``pytest bench/test_commands.py
--benchmark-only``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

#: the installed console script beside this interpreter
GPUSCHED = [str(Path(sys.executable).parent / "gpusched")]


def _run(args: list[str], cwd: Path) -> None:
    subprocess.run(GPUSCHED + args, cwd=cwd, check=True, capture_output=True)


@pytest.mark.parametrize("args", [["--help"], ["policies"], ["clusters"]], ids=" ".join)
def test_quick_commands(benchmark, tmp_path, args):
    """Target: <= 0.3 s each."""
    benchmark.pedantic(_run, args=(args, tmp_path), rounds=5, warmup_rounds=1)


@pytest.mark.parametrize("events", [False, True], ids=["plain", "events"])
@pytest.mark.parametrize("policy", ["fifo", "srtf", "tiresias"])
def test_replay_default_with_out(benchmark, tmp_path, policy, events):
    """``replay`` on the bundled default (philly-2000) with --out, a fresh process; with and
    without the event log (its cost)."""
    out = tmp_path / "r"

    def once() -> None:
        shutil.rmtree(out, ignore_errors=True)
        _run(["replay", "-P", policy, "-o", str(out)] + (["--events"] if events else []), tmp_path)

    benchmark.pedantic(once, rounds=3, warmup_rounds=1)
