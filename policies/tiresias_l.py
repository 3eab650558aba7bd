"""Tiresias-L as the edge-cloud paper runs it: job-level LAS queues on attained service.

Wang et al., "Preemptive Scheduling for Distributed Machine Learning Jobs in Edge-Cloud
Networks", IEEE JSAC 2022, Sec. V-A, baseline Tiresias-L [13] (Gu et al., NSDI 2019):
"for each job, the algorithm computes its priority according to the number and the
occupation time of GPUs allocated, and groups the job into a corresponding priority
queue. The jobs of the queue with the highest priority are scheduled first. Besides, the
scheduler adopts all-or-nothing resource allocation, which suspends or resumes an entire
job in each preemption."

A job's attained service is the worker-time its chunks have trained (workers x time, the
2D attained service of Tiresias); it is in level q = #{k : a_j >= T_k}, level 0 first,
and within a level the earlier arrival first (Tiresias's FIFO within a queue). Jobs are
placed and paused whole by :class:`gpusched.algorithms.edge_cloud.JobLevel` (how a job's
chunks map to its workers, and when it goes to the cloud, is said there;
``-p edge_only=true`` keeps every job on the edge).

Guessed, as the paper gives no values: the thresholds, default 50 and 200 worker-slots
(``-p thresholds=...``): a chunk of the edge-cloud workloads trains for tens of slots, so
a job drops a level after about one round of chunks on a few workers and again after a
few rounds, as Tiresias's 3,250 and 7,200 GPU-s do for the Philly jobs of its paper.
"""

from __future__ import annotations

import numpy as np

from gpusched.algorithms.edge_cloud import JobLevel
from gpusched.core.policy import Decision, parse_levels


class TiresiasLPolicy:
    """Job-level discretized LAS over attained worker-time, all-or-nothing."""

    name = "tiresias-l"
    knows_duration = False
    needs_predictor = False
    work_conserving = True
    runs_tasks = True
    needs_tasks = True

    def __init__(
        self,
        *,
        thresholds: str = "50,200",
        edge_only: bool = False,
        rng: np.random.Generator | None = None,
    ) -> None:
        self.edge_only = edge_only
        levels = parse_levels("tiresias-l", thresholds, "worker-slots")
        self.thresholds = np.asarray(levels)
        self._rng = rng if rng is not None else np.random.default_rng(0)
        self._gang: JobLevel | None = None

    def prepare(self, jobs, cluster) -> None:
        self._gang = None

    def _key(self, view, jobs: np.ndarray) -> np.ndarray:
        tv = view.tasks
        starts = tv.first[:-1]
        attained = np.add.reduceat(np.asarray(view.job_executed, dtype=np.float64), starts)[jobs]
        level = np.searchsorted(self.thresholds - 1e-6, attained, side="right")
        submit = np.asarray(view.job_submit)[tv.first[jobs]]
        return level * 1e15 + submit  # level first, then arrival (submit < 1e15 s)

    def decide(self, view, now: float) -> Decision:
        if self._gang is None:
            self._gang = JobLevel(self._key, self._rng, edge_only=self.edge_only)
        return self._gang.decide(view, now)
