"""The view a policy's ``wake`` gets after its decision was applied.

The engine works ``view.queued`` and ``view.running`` out again for ``wake`` only when the
decision changed the queue or the holders. These tests
drive random decisions (starts, preemptions, rejections, order fills, some of them in one
decision) with load and save times, and compare the arrays ``wake`` sees with the state.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpusched.core.engine import Engine
from gpusched.core.jobs import prepare_jobs
from gpusched.core.policy import Decision, Preempt, Reject, Start
from gpusched.core.state import LOADING, QUEUED, RUNNING, SAVING
from gpusched.io.cluster import ClusterSpec
from tests.helpers import make_trace


class RandomActions:
    """Random starts, preemptions, rejections and fills; checks the view in ``wake``."""

    name = "random-actions"
    knows_duration = False
    needs_predictor = False
    work_conserving = False

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.wakes = 0
        self.kept = 0  # wakes after a decision that changed neither the queue nor the holders
        self._seen: tuple[np.ndarray, np.ndarray] | None = None

    def decide(self, view, now: float) -> Decision:
        q, run = view.queued, view.running
        self._seen = (q, run)
        rng = self.rng
        actions: list = []
        holding = run[np.isin(view.job_status[run], (RUNNING, LOADING))]
        if holding.size and rng.random() < 0.4:
            actions.append(Preempt(int(rng.choice(holding))))
        free = view.free_gpus
        for j in q.tolist():
            if rng.random() < 0.5 and view.job_n_gpus[j] <= free:
                actions.append(Start(j))
                free -= int(view.job_n_gpus[j])
            elif rng.random() < 0.05 and np.isnan(view.job_first_start[j]):
                actions.append(Reject(j))
        if rng.random() < 0.3:
            order = np.concatenate((q, holding))
            rng.shuffle(order)
            return Decision(order=order, preemptive=bool(rng.random() < 0.5))
        return Decision(actions=actions, wake_at=now + float(rng.uniform(0.5, 30)))

    def wake(self, view, now: float) -> float | None:
        status = view.job_status
        queued = np.flatnonzero(status == QUEUED)
        running = np.flatnonzero(np.isin(status, (RUNNING, LOADING, SAVING)))
        assert view.queued.tolist() == queued.tolist()
        assert view.running.tolist() == running.tolist()
        assert self._seen is not None
        self.kept += view.queued is self._seen[0] and view.running is self._seen[1]
        self.wakes += 1
        return None


@pytest.mark.parametrize("seed", range(6))
def test_wake_sees_the_queue_and_holders_after_the_decision(seed):
    rng = np.random.default_rng(seed)
    n = 30
    rows = [
        (float(t), int(g), float(d))
        for t, g, d in zip(
            np.cumsum(rng.uniform(0, 20, n)).round(3),
            rng.integers(1, 5, n),
            rng.uniform(1, 120, n).round(3),
            strict=True,
        )
    ]
    cluster = ClusterSpec.homogeneous(2, 4)
    jobs = prepare_jobs(make_trace(rows), cluster)
    phase = np.where(rng.random(n) < 0.5, 0.0, rng.uniform(0.5, 10, n))
    policy = RandomActions(seed)
    engine = Engine(jobs, cluster, policy, mode="python", load_s=phase, save_s=phase[::-1].copy())
    engine.run()
    assert policy.wakes > 20
    assert 0 < policy.kept < policy.wakes  # both cases were met
