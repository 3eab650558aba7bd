"""srtf-periodic: SRTF re-packs only at multiples of the interval (hand-checked schedules)."""

from __future__ import annotations

import pytest

from gpusched.errors import ParamError
from tests.helpers import run


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


@pytest.mark.parametrize("bad", ["0", "-60", "inf"])
def test_interval_must_be_positive(bad):
    with pytest.raises(ParamError, match="interval"):
        run([(0, 1, 1)], "srtf-periodic", 1, 1, params=[f"interval={bad}"])
