"""Tests of the synthetic trace generator and trace statistics (gpusched.workloads.synth)."""

from __future__ import annotations

import numpy as np
import pytest

from gpusched.errors import GpuschedError
from gpusched.io.trace import Trace
from gpusched.workloads.synth import offered_load, synth_trace, trace_stats


def test_deterministic() -> None:
    a = synth_trace(2000, 7)
    b = synth_trace(2000, 7)
    assert a == b
    assert a.submit_time.tobytes() == b.submit_time.tobytes()
    assert a != synth_trace(2000, 8)


def test_shape_and_ids() -> None:
    t = synth_trace(1000, 0, n_gpus_cluster=8)
    assert t.job_id[0] == "s0000001" and t.job_id[-1] == "s0001000"
    assert t.submit_time[0] == 0 and (np.diff(t.submit_time) >= 0).all()
    assert set(np.unique(t.num_gpus).tolist()) <= {1, 2, 4, 8}
    assert (t.duration >= 1).all() and (t.duration <= 7 * 86400).all()
    assert (t.duration == np.rint(t.duration)).all()


@pytest.mark.parametrize(("load", "gpus"), [(0.8, 64), (0.5, 32), (1.2, 256)])
def test_load_calibration(load: float, gpus: int) -> None:
    t = synth_trace(20_000, 3, load=load, n_gpus_cluster=gpus)
    assert abs(offered_load(t, gpus) / load - 1) < 0.15


def test_philly_like() -> None:
    st = trace_stats(synth_trace(50_000, 11))
    assert 600 < st["duration_s"]["p50"] < 2400  # Philly median 1,144 s
    assert st["duration_s"]["p99"] > 86400  # tail reaches days
    assert st["gpu_mix"][1] / st["jobs"] > 0.9


def test_custom_mix_and_dist() -> None:
    t = synth_trace(
        100,
        1,
        gpu_mix={2: 1.0, 64: 1.0},
        n_gpus_cluster=8,
        duration_dist=lambda rng, n: np.full(n, 30.0),
    )
    assert (t.num_gpus == 2).all() and (t.duration == 30).all()
    with pytest.raises(GpuschedError):
        synth_trace(10, 1, gpu_mix={64: 1.0}, n_gpus_cluster=8)
    with pytest.raises(GpuschedError):
        synth_trace(0, 1)
    with pytest.raises(GpuschedError, match="philly"):
        synth_trace(10, 1, duration_dist="pareto")


def test_stats_hand_example() -> None:
    t = Trace(
        job_id=np.array(["a", "b", "c", "d"], dtype=object),
        submit_time=[0.0, 10.0, 30.0, 40.0],
        num_gpus=[1, 2, 2, 8],
        duration=[100.0, 200.0, 300.0, np.nan],
        iterations=[np.nan, np.nan, np.nan, 1000.0],
        model=np.array(["", "", "", "resnet50"], dtype=object),
        extra={},
        source="hand",
    )
    st = trace_stats(t, n_gpus_cluster=4)
    assert st["jobs"] == 4
    assert st["jobs_with_duration"] == 3 and st["jobs_by_iterations"] == 1
    assert st["span_s"] == 40.0
    assert st["gpu_mix"] == {1: 1, 2: 2, 8: 1}
    assert st["duration_s"] == {"p50": 200.0, "p90": 280.0, "p99": 298.0, "max": 300.0}
    assert st["interarrival_s"] == {"p50": 10.0, "p90": 18.0, "p99": 19.8, "max": 20.0}
    assert st["gpu_seconds"] == 100 + 400 + 600
    assert st["offered_load"] == pytest.approx(1100 / (40 * 4))


def test_stats_single_job() -> None:
    st = trace_stats(synth_trace(1, 0))
    assert st["interarrival_s"] is None and st["span_s"] == 0.0
