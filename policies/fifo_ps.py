"""FIFO for parameter-server jobs: a fixed number of workers each, in arrival order.

The PD-ORS paper's first baseline (Yu et al., TNSE 2022, Sec. V, "(1) FIFO in Hadoop and
Spark"): jobs are served in the order of their arrival times with a fixed number of
workers (and PSs) between 1 and 30, placed round-robin on the machines with room
(:func:`gpusched.algorithms.ps_place.round_robin`). Our readings, where the paper is
silent: each job's worker count is drawn once, uniformly from 1-30 (``-p workers=N``
fixes it), capped by its global batch (eq. 4), with PSs at its worker:PS ratio; a job
keeps its allocation until it finishes (no resizing, no preemption); the head of the
queue blocks the jobs behind it while it does not fit (strict FIFO); no job is rejected,
so jobs still running at the horizon are reported unfinished.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np

from gpusched.algorithms.ps_place import ps_for, round_robin
from gpusched.core.policy import Allocate, Decision, Range
from gpusched.jobmodels.ps import params_of


class FIFOPSPolicy:
    """Arrival order, fixed workers per job, round-robin placement, head-of-line blocking."""

    name = "fifo-ps"
    knows_duration = False
    needs_predictor = False
    work_conserving = False
    places_roles = True

    def __init__(
        self,
        *,
        workers: Annotated[int, Range(0, 10_000)] = 0,
        rng: np.random.Generator | None = None,
    ) -> None:
        self.workers = workers
        self.rng = rng if rng is not None else np.random.default_rng(0)
        self._cursor = 0

    def prepare(self, jobs, cluster) -> None:
        p = params_of(jobs)
        n = len(jobs)
        drawn = self.rng.integers(1, 31, size=n) if self.workers == 0 else np.full(n, self.workers)
        self.n_workers = np.minimum(drawn, p.batch)
        self.gamma = p.gamma

    def decide(self, view, now: float) -> Decision:
        led = view.ledger
        free = led.free
        actions = []
        for j in view.queued.tolist():
            n_w = int(self.n_workers[j])
            got = round_robin(
                free, led.worker[j], led.ps[j], n_w, ps_for(n_w, self.gamma[j]), self._cursor
            )
            if got is None:
                break  # strict FIFO: the head waits for room
            w, s, self._cursor = got
            free = free - np.outer(w, led.worker[j]) - np.outer(s, led.ps[j])
            actions.append(Allocate(j, w, s))
        return Decision(actions=actions)
