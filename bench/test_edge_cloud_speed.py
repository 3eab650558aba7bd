"""The edge-cloud family at the generator's maximum (issue 31): whole commands, fresh processes.

``gpusched workload edge-cloud-sim --jobs 4000`` (272,846 data chunks on the 100-server
simulator) replayed under each of the family's policies with ``--json``. Target: <= 10 s
each on a quiet machine (the kernels compiled and cached: the session fixture warms them).
Run: ``pytest bench/test_edge_cloud_speed.py --benchmark-only``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

GPUSCHED = [str(Path(sys.executable).parent / "gpusched")]
POLICIES = ["a-online", "a-online-e", "srtf", "tiresias-l", "batchsche"]


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("ec") / "ec4000.csv"
    subprocess.run(
        GPUSCHED + ["workload", "edge-cloud-sim", "--jobs", "4000", "--seed", "4", "-o", str(path)],
        check=True,
        capture_output=True,
    )
    return path


@pytest.mark.parametrize("policy", POLICIES)
def test_edge_cloud_4000_jobs(benchmark, trace, policy):
    def once() -> None:
        args = ["replay", str(trace), "-c", "edge-cloud-sim", "-P", policy, "--json"]
        subprocess.run(GPUSCHED + args, check=True, capture_output=True)

    benchmark.pedantic(once, rounds=1, warmup_rounds=1)
