"""The goodput job model's ``throughput=table`` option: the Pollux artifact's measured
profiles interpolated as its simulator does (gpusched/jobmodels/goodput_tables.py), checked
against values read by hand from the bundled rows (pollux_profiles.csv.gz, the artifact's
placements.csv / scalability.csv text); and the artifact's Tiresias: its periodic mode
(``interval``) and arrival-ordered queues (``order=arrival``)."""

from __future__ import annotations

import numpy as np
import pytest

from gpusched.core.jobs import prepare_jobs
from gpusched.errors import GpuschedError, TraceError
from gpusched.io.cluster import ClusterSpec
from gpusched.jobmodels.goodput import JOB_MODEL, fixed_config, load_apps
from gpusched.jobmodels.goodput_tables import ProfileTable, load_tables
from tests.helpers import run
from tests.test_goodput_model import _trace


def test_profiled_placement_interpolates_in_the_batch_cifar10():
    # cifar10 placements.csv, placement 1: local_bsz 32 -> step 0.0427886962890625, sync
    # 0.0004995360016822816; 45 -> 0.05048525333404541, 0.000504022404551506. At 40, 8/13
    # of the way (interp1d, applications.py L212-215):
    t = load_tables()["cifar10"]
    step, sync = t.times((1,), 40)
    w = (40 - 32) / (45 - 32)
    assert step == pytest.approx(
        0.0427886962890625 + w * (0.05048525333404541 - 0.0427886962890625), rel=1e-12
    )
    assert sync == pytest.approx(
        0.0004995360016822816 + w * (0.000504022404551506 - 0.0004995360016822816), rel=1e-12
    )
    assert t.times((1,), 32) == pytest.approx(
        (0.0427886962890625, 0.0004995360016822816), rel=1e-12
    )


def test_placement_rotation_and_accumulation_yolov3():
    # yolov3 placements.csv, placement 13 (1 + 3 GPUs on 2 nodes): local_bsz 4 -> step
    # 1.2647290974855423, sync 1.0071457901000975; 6 -> 1.2889262437820435, 0.8774113731384277.
    # (3, 1) is a rotation of (1, 3): the same row (applications.py L206-209).
    t = load_tables()["yolov3"]
    assert t.times((3, 1), 6) == pytest.approx((1.2889262437820435, 0.8774113731384277), rel=1e-12)
    assert t.times((1, 0, 3), 6) == t.times((1, 3), 6)
    step, sync = t.times((1, 3), 5)  # half-way between 4 and 6
    assert step == pytest.approx((1.2647290974855423 + 1.2889262437820435) / 2, rel=1e-12)
    assert sync == pytest.approx((1.0071457901000975 + 0.8774113731384277) / 2, rel=1e-12)
    # 2 accumulation steps: step + 2 (step - sync) (simulator.py L117-130)
    it, comp = t.iteration((1, 3), 6, 2)
    assert comp == pytest.approx(1.2889262437820435 - 0.8774113731384277, rel=1e-12)
    assert it == pytest.approx(1.2889262437820435 + 2 * comp, rel=1e-12)


def test_unprofiled_placement_uses_the_scalability_rows_yolov3():
    # yolov3 scalability.csv: 6 nodes, 6 GPUs, local_bsz 8 -> step 0.9526402056217194, sync
    # 0.6520729808807373. Placement (1,1,1,1,1,1) is not in placements.csv (at most 4
    # nodes), so the 3-D interpolation answers, which is exact at its data points.
    t = load_tables()["yolov3"]
    assert 111111 not in t.placements
    assert t.times((1,) * 6, 8) == pytest.approx((0.9526402056217194, 0.6520729808807373), rel=1e-9)
    # between the rows of local_bsz 6 and 8 it lies between their values
    lo, hi = t.times((1,) * 6, 6)[0], t.times((1,) * 6, 8)[0]
    assert min(lo, hi) - 1e-12 <= t.times((1,) * 6, 7)[0] <= max(lo, hi) + 1e-12


def test_outside_the_profile_fails_as_the_artifact_does():
    t = load_tables()["cifar10"]
    with pytest.raises(GpuschedError, match="profiled for 32 to"):  # one line in a command
        t.times((1,), 2000)
    with pytest.raises(ValueError, match="empty placement"):
        t.times((0,), 32)
    assert ProfileTable.normal((2, 1, 2)) == (1, 2, 2)


def test_the_job_model_runs_on_the_table():
    # a yolov3 job with global batch 64 on 8 GPUs over nodes 0 and 1 (4 + 4): atomic 8,
    # no accumulation; its true rate uses the table at placement 44, Optimus' oracle the
    # same packed placement
    cluster = ClusterSpec.homogeneous(16, 4)
    jobs = prepare_jobs(_trace([("yolov3", 8, 8, 100.0)], ["table"]), cluster)
    perf = JOB_MODEL.perf(jobs, cluster)
    base = JOB_MODEL.perf(prepare_jobs(_trace([("yolov3", 8, 8, 100.0)]), cluster), cluster)
    app = load_apps("table")[5]
    assert app.name == "yolov3" and app.table is not None
    m, s = fixed_config(app, 64, 8, one_gpu_steps=True)
    want = app.table.iteration((4, 4), m, s)[0]
    assert perf.step_time(0, 8, 2) == pytest.approx(want, rel=1e-12)
    assert base.step_time(0, 8, 2) != pytest.approx(want, rel=1e-3)
    r_table = perf.progress_rate(0, np.arange(8), None, jobs.work_s[0], True)[0]
    r_base = base.progress_rate(0, np.arange(8), None, jobs.work_s[0], True)[0]
    a = perf.agent(0)
    assert a.placement == (4, 4)
    # rate = gain / T x t_ref: the same gain, so the rates stand as the step times
    t_base = base.step_time(0, 8, 2)
    assert r_table / r_base == pytest.approx(t_base / want, rel=1e-9)


def test_the_trace_column_is_checked():
    cluster = ClusterSpec.homogeneous(16, 4)
    with pytest.raises(TraceError, match="column 'throughput'"):
        JOB_MODEL.durations(
            _trace([("cifar10", 1, 128, 10.0)], ["tables"]), np.zeros(1), np.ones(1, bool)
        )
    jobs = prepare_jobs(_trace([("cifar10", 1, 128, 10.0)], ["table"]), cluster)
    with pytest.raises(GpuschedError, match="contradicts the trace's 'throughput' column"):
        JOB_MODEL.perf(jobs, cluster, throughput="refit")
    assert JOB_MODEL.perf(jobs, cluster, throughput="table").apps[1].table is not None


def test_tiresias_periodic_by_hand():
    # One GPU, thresholds 5 GPU-s, a cycle every 10 s. A(0 s, 1 GPU, 20 s) starts at the
    # cycle at 0. B(3 s, 1 GPU, 3 s) waits for the cycle at 10 (A crossed to level 1 at
    # 5, which counts at that cycle): B preempts A and runs 10-13. B's completion frees the
    # GPU at 13, idle until the cycle at 20: A runs its last 10 s 20-30.
    res = run([(0, 1, 20), (3, 1, 3)], "tiresias", 1, 1, params=["thresholds=5", "interval=10"])
    st = res.state
    assert st.job_first_start.tolist() == [0, 10]
    assert st.job_finish.tolist() == [30, 13]
    assert st.job_n_preempt.tolist() == [1, 0]
    # interval 0 (the default) is the event-driven policy, on the fused path
    res0 = run([(0, 1, 20), (3, 1, 3)], "tiresias", 1, 1, params=["thresholds=5", "interval=0"])
    assert res0.state.job_finish.tolist() == [23, 8]


def test_tiresias_periodic_rejects_starve():
    from gpusched.errors import ParamError
    from policies.tiresias import TiresiasPolicy

    with pytest.raises(ParamError, match="interval and starve"):
        TiresiasPolicy(interval=60, starve=2)
    assert TiresiasPolicy().fused() is not None
    assert TiresiasPolicy(interval=60).fused() is None
    assert TiresiasPolicy(order="arrival").fused() is None
    with pytest.raises(ParamError, match="order must be one of held-first, arrival"):
        TiresiasPolicy(order="fifo")


def test_tiresias_arrival_order_by_hand():
    # One server of 2 GPUs, no demotion. A(0 s, 1 GPU, 10 s) runs; B(1 s, 2 GPUs, 4 s) does
    # not fit and waits; C(2 s, 1 GPU, 10 s) takes the idle GPU. When A ends at 10:
    # held-first (the default) keeps C in front of B, so B waits until C ends at 12 (12-16);
    # order=arrival keeps level 0 in arrival order, so B (before C) runs 10-14, preempting
    # C, which resumes at 14 with 2 s left (ends 16).
    rows = [(0, 1, 10), (1, 2, 4), (2, 1, 10)]
    st = run(rows, "tiresias", 1, 2, params=["thresholds=1000"]).state
    assert st.job_first_start.tolist() == [0, 12, 2]
    assert st.job_finish.tolist() == [10, 16, 12]
    st = run(rows, "tiresias", 1, 2, params=["thresholds=1000", "order=arrival"]).state
    assert st.job_first_start.tolist() == [0, 10, 2]
    assert st.job_finish.tolist() == [10, 14, 16]
    assert st.job_n_preempt.tolist() == [0, 0, 1]
