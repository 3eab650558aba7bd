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


@pytest.fixture(scope="module")
def synth_100k(tmp_path_factory) -> Path:
    """100,000 synthetic jobs sized for philly-64x8 (512 GPUs), written once."""
    folder = tmp_path_factory.mktemp("synth")
    _run(["trace", "synth", "-n", "100000", "-c", "philly-64x8", "-o", "s100k.csv"], folder)
    return folder / "s100k.csv"


@pytest.mark.parametrize("policy", ["fifo", "srtf"])
def test_replay_100k_synthetic_with_out(benchmark, tmp_path, synth_100k, policy):
    """``replay`` of 100k synthetic jobs on philly-64x8 with --out, a fresh process.
    Target (issue 15): <= 2.5 s."""
    out = tmp_path / "r"
    args = ["replay", str(synth_100k), "-c", "philly-64x8", "-P", policy, "-o", str(out)]

    def once() -> None:
        shutil.rmtree(out, ignore_errors=True)
        _run(args, tmp_path)

    benchmark.pedantic(once, rounds=3, warmup_rounds=1)
