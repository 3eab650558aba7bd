"""Whole commands as a user runs them (issue 15): a fresh process each, with --out.

Numba's cache is warm (the session fixture compiled the kernels), so these measure what
every later run pays: the interpreter, imports, loading the cached kernels, reading the
trace, simulating and writing the results. Run: ``pytest bench/test_commands.py
--benchmark-only``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

#: the installed console script beside this interpreter
GPUSCHED = [str(Path(sys.executable).parent / "gpusched")]


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    subprocess.run(GPUSCHED + args, cwd=cwd, check=True, capture_output=True, env=env)


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


#: the workloads of issue 15's comparison with the research simulators: jobs, and the
#: bundled cluster of the GPUs the peers ran them on (32, 128 and 512)
PEER_WORKLOADS = [(1_000, "default"), (10_000, "tiresias-n32g4"), (100_000, "philly-64x8")]


@pytest.mark.parametrize("policy", ["fifo", "srtf", "tiresias"])
@pytest.mark.parametrize(("n_jobs", "cluster"), PEER_WORKLOADS, ids=lambda v: str(v))
def test_peer_workloads(benchmark, tmp_path, n_jobs, cluster, policy):
    """``trace synth -n N`` on the peers' cluster size, then ``replay`` with --out in a fresh
    process. Targets: 1k < 0.67 s (the Tiresias simulator), 100k <= 2.5 s."""
    _run(["trace", "synth", "-n", str(n_jobs), "-c", cluster, "-o", "t.csv"], tmp_path)
    out = tmp_path / "r"

    def once() -> None:
        shutil.rmtree(out, ignore_errors=True)
        _run(["replay", "t.csv", "-c", cluster, "-P", policy, "-o", str(out)], tmp_path)

    benchmark.pedantic(once, rounds=3, warmup_rounds=1)


def test_cold_first_run(benchmark, tmp_path):
    """The README's first command with an empty Numba cache, as after a fresh install.
    Target: <= 10 s. One round: a second would find the cache no longer empty."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    benchmark.pedantic(_run, args=(["replay", "-P", "tiresias"], tmp_path, env), rounds=1)


def test_cold_first_big_run(benchmark, tmp_path):
    """Issue 33: a 100k-job replay on an empty Numba cache (it compiles in the background
    while it goes on interpreted), then the same replay again (warm). Target: the first
    within 3x the second. One round each: a second would find the cache filled."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    _run(["trace", "synth", "-n", "100000", "-c", "philly-64x8", "-o", "t.csv"], tmp_path)
    args = ["replay", "t.csv", "-c", "philly-64x8", "-P", "fifo", "-o"]
    benchmark.pedantic(_run, args=(args + ["cold"], tmp_path, env), rounds=1)
    benchmark.extra_info["then_warm_s"] = _timed(args + ["warm"], tmp_path, env)


def test_warm_up_on_an_empty_cache(benchmark, tmp_path):
    """Issue 33: ``gpusched warm-up`` compiling both engine paths. Target: <= 15 s."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    benchmark.pedantic(_run, args=(["warm-up"], tmp_path, env), rounds=1)


def _timed(args: list[str], cwd: Path, env: dict[str, str]) -> float:
    import time

    t0 = time.perf_counter()
    _run(args, cwd, env)
    return time.perf_counter() - t0
