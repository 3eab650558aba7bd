"""Values that would change results, or exhaust memory, are refused up front in one line
(issue 27, part 3): every workload preset's --jobs, trace synth's options, workloads whose
options make a trace gpusched cannot read back, and a cluster with two unbounded clouds."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusched.errors import ClusterError
from gpusched.io.cluster import ClusterSpec, ServerGroup, load_cluster
from gpusched.workloads import MAX_JOBS, WORKLOADS
from tests.helpers import invoke, one_line_error


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_every_preset_refuses_zero_and_negative_jobs(tmp_path, name):
    """synth-default --jobs 0 wrote 500 jobs."""
    for jobs in ("0", "-3"):
        one_line_error(invoke("workload", name, "--jobs", jobs, "-o", tmp_path / "w.csv"), "--jobs")
    assert not (tmp_path / "w.csv").exists()


@pytest.mark.parametrize(("name", "cap"), sorted(MAX_JOBS.items()))
def test_presets_state_their_largest_size_before_drawing(tmp_path, name, cap, monkeypatch):
    """pd-ors --jobs 10000000 (then inside its documented range) ended in a MemoryError."""
    import gpusched.workloads as workloads

    monkeypatch.setitem(workloads.WORKLOADS, name, lambda *a, **k: pytest.fail("drew"))
    line = one_line_error(
        invoke("workload", name, "--jobs", cap + 1, "-o", tmp_path / "w.csv"),
        f"{name} takes --jobs from 1 to {cap:,}",
        "memory",
    )
    assert f"got {cap + 1:,}" in line
    help_text = " ".join(invoke("workload", "--help").output.split()).replace("- ", "-")
    assert f"{cap:,} for {name}" in help_text


def test_module_limits_agree_with_the_command_line():
    from gpusched.workloads import pd_ors, sjf_bsbf

    assert pd_ors.MAX_JOBS == MAX_JOBS["pd-ors"]
    assert sjf_bsbf.MAX_JOBS == MAX_JOBS["sjf-bsbf"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--jobs", "100000000"], "--jobs must be 1 to 10,000,000 (a limit of memory"),
        (["--jobs", "0"], "--jobs must be 1 to 10,000,000"),
        (["--seed", "-1"], "--seed must be a whole number >= 0"),  # was a numpy traceback
        # as --seeds and sweeps: replay took any seed, they stopped at 2^32 - 1
        (["--seed", "4294967296"], "--seed must be at most 4294967295 (2^32 - 1), got"),
        (["--load", "inf"], "--load must be a finite number > 0, got inf"),  # all at time 0
        (["--load", "nan"], "--load must be a finite number > 0, got nan"),
        (["--load", "0"], "--load must be a finite number > 0"),
        # every submit time was 0, exit 0 (workload a-srpt --load stops at 1e6 too)
        (["--load", "1e300"], "--load must be at most 1e+06, as workload's"),
        (["--load", "1e-300", "-n", "5"], "makes a trace gpusched cannot read: column "),
    ],
)
def test_trace_synth_options(tmp_path, args, needle):
    one_line_error(invoke("trace", "synth", *args, "-o", tmp_path / "s.csv"), needle)
    assert not (tmp_path / "s.csv").exists()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["a-srpt", "--jobs", "50", "--load", "inf"], "--load must be > 0 (at most 1e+06)"),
        (["a-srpt", "--jobs", "50", "--load", "1e308"], "--load must be > 0 (at most 1e+06)"),
        (
            ["lazer-philly", "--jobs", "50"],
            None,  # fine
        ),
    ],
)
def test_workload_loads(tmp_path, args, needle):
    r = invoke("workload", *args, "-o", tmp_path / "w.csv")
    if needle is None:
        assert r.exit_code == 0, r.output
        return
    one_line_error(r, needle)


def test_a_workload_never_writes_a_trace_it_cannot_read(tmp_path, monkeypatch):
    """lazer-* --load 1e-300 wrote arrivals at 1e300 s, which every reader refuses."""
    from gpusched.workloads import synth

    real = synth.synth_trace

    def far(*args, **kwargs):
        trace = real(*args, **kwargs)
        trace.submit_time[-1] = 1e300
        return trace

    monkeypatch.setattr(synth, "synth_trace", far)
    one_line_error(
        invoke("workload", "synth-default", "--jobs", "5", "-o", tmp_path / "w.csv"),
        "workload synth-default with these options makes a trace gpusched cannot read",
        "column 'submit_time'",
    )
    assert not (tmp_path / "w.csv").exists()


TWO_CLOUDS = """
[cluster]
name = "two-clouds"
[[servers]]
count = 2
gpus = 1
gpu_type = "worker"
tier = "edge"
workers = { gpu = 1 }
ps = 1
[[servers]]
count = 1
gpus = 0
gpu_type = "cloud"
unbounded = true
delay_s = 5
[[servers]]
count = 1
gpus = 0
gpu_type = "cloud"
unbounded = true
delay_s = 1
"""


def test_a_cluster_has_at_most_one_unbounded_cloud(tmp_path: Path):
    """With two, the last silently won (its delay, for every cloud placement)."""
    path = tmp_path / "two.toml"
    path.write_text(TWO_CLOUDS)
    with pytest.raises(ClusterError, match=r"servers\[2\]\.unbounded: a cluster has at most one"):
        load_cluster(str(path))
    one_line_error(
        invoke("replay", "ec-30", "-c", path, "-P", "a-online"), "at most one unbounded cloud"
    )
    cloud = ServerGroup(count=1, gpus=0, gpu_type="cloud", tier="cloud", unbounded=True)
    edge = ServerGroup(count=1, gpus=1, gpu_type="w", tier="edge", workers=(("gpu", 1),), ps=1)
    with pytest.raises(ClusterError, match="at most one unbounded cloud"):
        ClusterSpec(name="x", description="", groups=(edge, cloud, cloud))
