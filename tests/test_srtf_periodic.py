"""srtf-periodic: SRTF re-packs only at multiples of the interval (hand-checked schedules)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from gpusched.core.engine import Engine
from gpusched.core.jobs import prepare_jobs
from gpusched.core.policy import parse_params
from gpusched.core.registry import load_policy_class, make_policy
from gpusched.errors import ParamError
from gpusched.io.cluster import ClusterSpec
from tests.helpers import make_trace, run
from tests.test_properties import phases, workloads


def test_waits_for_the_next_cycle():
    # 1 server x 1 GPU, slot 1, interval 10. A = (0, 1 GPU, 25 s), B = (3, 1, 5).
    # t=0: a cycle: A starts. t=3: B arrives; no cycle, nothing changes (wake at 10).
    # t=10: cycle: A has r=15 > B's 5: A preempted, B runs 10-15.
    # t=15: B's completion is no cycle: the GPU stays idle. t=20: cycle: A runs 20-35.
    res = run([(0, 1, 25), (3, 1, 5)], "srtf-periodic", 1, 1, params=["interval=10"])
    s = res.state
    assert s.job_first_start.tolist() == [0.0, 10.0]
    assert s.job_finish.tolist() == [35.0, 15.0]
    assert s.job_n_preempt.tolist() == [1, 0]


def test_first_job_waits_for_the_first_cycle():
    # interval 60: a job arriving at 5 waits for t=60 even on an idle cluster
    res = run([(5, 1, 10)], "srtf-periodic", 1, 1, params=["interval=60"])
    assert res.state.job_first_start.tolist() == [60.0]
    assert res.state.job_finish.tolist() == [70.0]


def test_a_cycle_between_slot_boundaries_runs_at_the_next_one():
    # interval 2.5 s on 1 s slots: cycles at 2.5, 5, ... run at the decision points 3, 5, ...
    res = run([(0.5, 1, 4)], "srtf-periodic", 1, 1, slot=1.0, params=["interval=2.5"])
    assert res.state.job_first_start.tolist() == [3.0]


@pytest.mark.parametrize("mode", ["fused", "python"])
def test_a_cycle_with_nothing_waiting_sleeps_until_the_next_event(mode):
    # 1 GPU, interval 10. A = (0, 1 GPU, 25 s), B = (33, 1, 5).
    # t=0: a cycle: A starts. t=10: a cycle with nothing waiting: it and the cycle at 20
    # change nothing, so no wake-up until A's completion at 25, which waits for the cycle
    # at 30 (nothing waits there either). t=33: B arrives and waits for the cycle at 40;
    # it runs 40-45, and its completion ends the run.
    res = run([(0, 1, 25), (33, 1, 5)], "srtf-periodic", 1, 1, params=["interval=10"], mode=mode)
    assert res.state.job_first_start.tolist() == [0.0, 40.0]
    assert res.state.job_finish.tolist() == [25.0, 45.0]
    # the decision points: no idle cycle at 20
    assert res.timeline["time_s"].tolist() == [0.0, 10.0, 25.0, 30.0, 33.0, 40.0, 45.0]


@pytest.mark.parametrize("mode", ["fused", "python"])
def test_long_jobs_on_an_idle_cluster_wake_the_engine_only_at_their_events(mode):
    # two jobs of 10^10 s on two GPUs: they woke the engine every 360 s, 2.8e7 times
    res = run(
        [(0, 1, 1e10), (0, 1, 1e10)], "srtf-periodic", 1, 2, params=["interval=360"], mode=mode
    )
    assert res.state.job_finish.tolist() == [1e10, 1e10]
    assert res.extra["n_decisions"] <= 3
    assert res.timeline["time_s"].tolist() == [0.0, 360.0, 1e10]


@pytest.mark.parametrize("bad", ["0", "-60", "inf"])
def test_interval_must_be_positive(bad):
    with pytest.raises(ParamError, match="interval"):
        run([(0, 1, 1)], "srtf-periodic", 1, 1, params=[f"interval={bad}"])


def test_fused_and_python_agree_to_the_bit_after_a_preempted_load():
    """Found by hypothesis: a job with a 1.59...-s load, preempted and resumed. The Python
    path syncs every decision, the fused path only when it must; progress is measured from
    the last anchor, so both give the same completion time to the last bit."""
    rows = [(0.0, 1, 129.0)] + [(0.0, 1, 1.0)] * 3 + [(2.0, 1, 1.0)] + [(4.0, 1, 1.0)] * 6
    load = np.zeros(len(rows))
    load[0] = 1.59264264
    finish = []
    for mode in ("fused", "python"):
        cluster = ClusterSpec.homogeneous(1, 2)
        cls = load_policy_class("srtf-periodic")
        pol = make_policy(cls, parse_params(cls, ["interval=0.7"]), 0)
        jobs = prepare_jobs(make_trace(rows), cluster)
        engine = Engine(jobs, cluster, pol, slot_s=0.5, mode=mode, load_s=load)
        res = engine.run()
        assert res.state.job_n_preempt[0] == 1
        finish.append(res.state.job_finish.tobytes())
    assert finish[0] == finish[1]


@pytest.mark.parametrize("interval", [0.7, 5.0, 60.0])
@settings(max_examples=30, deadline=None)
@given(w=workloads(), ph=phases())
def test_fused_kernel_equals_python_decide(interval, w, ph):
    """The kernel's periodic re-pack and decide() give the same schedule and timeline."""
    servers, gpus, rows, slot = w
    out = []
    for mode in ("fused", "python"):
        cluster = ClusterSpec.homogeneous(servers, gpus)
        jobs = prepare_jobs(make_trace(rows), cluster)
        cls = load_policy_class("srtf-periodic")
        pol = make_policy(cls, parse_params(cls, [f"interval={interval}"]), 0)
        n = len(rows)
        engine = Engine(
            jobs, cluster, pol, slot_s=slot, mode=mode, load_s=ph[0][:n], save_s=ph[1][:n]
        )
        assert engine.mode == mode
        out.append(engine.run())
    a, b = out
    for field in ("job_finish", "job_first_start", "job_n_preempt", "job_futile_s"):
        assert getattr(a.state, field).tobytes() == getattr(b.state, field).tobytes(), field
    for column in ("time_s", "busy_gpus", "queued", "loading_gpus", "saving_gpus"):
        assert a.timeline[column].tobytes() == b.timeline[column].tobytes(), column


def _waking_every_cycle(interval):
    """srtf-periodic as it was before idle cycles slept: every cycle re-packs and asks for
    the next one (the Python path)."""
    from gpusched.core.policy import Decision
    from gpusched.core.state import SAVING

    base = load_policy_class("srtf-periodic")

    class EveryCycle(base):  # type: ignore[misc, valid-type]
        def fused(self):
            return None

        def decide(self, view, now):
            if not self._cycles.due(now):
                return Decision(wake_at=self._cycles.next)
            holding = view.running[view.job_status[view.running] != SAVING]
            active = np.union1d(view.queued, holding)
            order = active[np.argsort(view.job_remaining[active], kind="stable")]
            return Decision(order=order, preemptive=True, wake_at=self._cycles.next)

    return EveryCycle(interval=interval)


@pytest.mark.parametrize("interval", [0.7, 5.0, 60.0])
@settings(max_examples=30, deadline=None)
@given(w=workloads(), ph=phases())
def test_sleeping_through_idle_cycles_keeps_the_schedule(interval, w, ph):
    """A cycle with nothing waiting sleeps until the next event; the schedule is the one
    of waking at every cycle (only the idle decision points go)."""
    servers, gpus, rows, slot = w
    n = len(rows)
    out = []
    for make in (
        lambda: _waking_every_cycle(interval),
        lambda: make_policy(
            load_policy_class("srtf-periodic"),
            parse_params(load_policy_class("srtf-periodic"), [f"interval={interval}"]),
            0,
        ),
    ):
        cluster = ClusterSpec.homogeneous(servers, gpus)
        jobs = prepare_jobs(make_trace(rows), cluster)
        engine = Engine(jobs, cluster, make(), slot_s=slot, load_s=ph[0][:n], save_s=ph[1][:n])
        out.append(engine.run())
    a, b = out
    for field in ("job_finish", "job_first_start", "job_n_preempt", "job_futile_s"):
        assert getattr(a.state, field).tobytes() == getattr(b.state, field).tobytes(), field
    assert a.extra["n_decisions"] >= b.extra["n_decisions"]


def test_cycles_fall_on_multiples_of_the_interval():
    from gpusched.core.policy import Cycles

    c = Cycles(60.0)
    assert c.due(10.0) is False and c.next == 60.0  # the first multiple at or after 10
    assert c.due(59.0) is False
    assert c.due(60.0) is True and c.next == 120.0
    assert c.due(150.0) is True and c.next == 180.0  # a late wake: the multiple after now
    # with restart_after, a decision past next + restart_after counts from now again
    r = Cycles(60.0)
    assert r.due(0.0, restart_after=1.0) is True and r.next == 60.0
    assert r.due(200.0, restart_after=1.0) is False and r.next == 240.0
    assert r.due(240.0, restart_after=1.0) is True and r.next == 300.0


@pytest.mark.parametrize("interval", ["1e-9", "1e-300", "5e-324"])
@pytest.mark.parametrize("mode", ["fused", "python"])
def test_an_interval_below_the_clock_resolution_cycles_at_every_decision_point(interval, mode):
    """An interval whose next multiple rounds to ``now`` (or whose ``now / interval``
    overflows) stopped the Python path ('asked to wake at 1.0 s, which is not after now',
    or an OverflowError) and left the fused path without a wake-up ('the run can never
    finish'). Any interval below the slot cycles at every slot boundary: the schedule is
    that of interval = slot."""
    rows = [(0, 1, 25), (3, 1, 5), (4.5, 2, 7), (9, 1, 2)]
    tiny = run(rows, "srtf-periodic", 1, 2, params=[f"interval={interval}"], mode=mode)
    per_slot = run(rows, "srtf-periodic", 1, 2, params=["interval=1"], mode=mode)
    assert tiny.state.job_finish.tolist() == per_slot.state.job_finish.tolist()
    assert tiny.state.job_n_preempt.tolist() == per_slot.state.job_n_preempt.tolist()


@pytest.mark.parametrize("interval", [1e-9, 1e-300, 5e-324])
def test_the_next_cycle_is_always_after_now(interval):
    from gpusched.core.policy import Cycles

    c = Cycles(interval)
    for now in (0.0, 1.0, 8192.0, 1e10):
        assert c.due(now) is True and c.next is not None and c.next > now
