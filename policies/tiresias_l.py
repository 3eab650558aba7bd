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
chunks map to its workers -- ``workers``, ``migrate`` -- and where it runs -- ``edge_only``
-- is said there, with the paper's sentences behind each default).

Thresholds. Neither paper gives values for this setting: the edge-cloud paper names none,
and Tiresias's own (3,250 and 7,200 GPU-seconds, its simulator's queue limits,
``policies/tiresias.py``) are sized for the Philly jobs of its evaluation, while a job here
trains tens of chunks of about an hour each on tens of workers (a slot is an hour). Read in this setting's units they would demote
every job within its first slot of work, and the queues would reduce to FIFO broken by each
arrival. The choice, ``thresholds = "auto"`` (the default): T_1 = one round of chunks of a
median job on its workers, p x median_j k_j worker-slots, with p = 59.2 slots the chunk
time at the medians of Sec. V-A's ranges (E 40, B 58, m 0.0255 h, G 55 ms; zeta_j = 1:
E B (m + G)) and k_j each job's worker requirement (:class:`JobLevel`: from D_j and the
cluster, no duration read); T_2 = T_1 x 7200 / 3250, Tiresias's ratio of its two limits.
``-p thresholds=a,b`` sets them in worker-slots.
"""

from __future__ import annotations

import numpy as np

from gpusched.algorithms.edge_cloud import WORKER_RULES, JobLevel
from gpusched.core.policy import Decision, parse_levels
from gpusched.errors import ParamError

#: a chunk's time at the medians of Sec. V-A's ranges, zeta_j = 1: E B (m + G), slots
MEDIAN_CHUNK_SLOTS = 40 * 58 * (0.0255 + 55e-3 / 3600)
#: Tiresias's ratio of its second queue limit to its first (7,200 / 3,250 GPU-s)
TIRESIAS_RATIO = 7200 / 3250


class TiresiasLPolicy:
    """Job-level discretized LAS over attained worker-time, all-or-nothing."""

    name = "tiresias-l"
    knows_duration = False
    needs_predictor = False
    work_conserving = True
    runs_tasks = True
    needs_tasks = True
    #: a job's key changes only when it arrives, a chunk of its type finishes or it changes
    #: level: a decision looks only at the worker types concerned (JobLevel's static_keys)
    static_keys = True

    def __init__(
        self,
        *,
        thresholds: str = "auto",
        workers: str = "chunks",
        migrate: bool = True,
        edge_only: bool = True,
        rng: np.random.Generator | None = None,
    ) -> None:
        if workers not in WORKER_RULES:
            raise ParamError(
                f"policy '{self.name}': workers must be one of {', '.join(WORKER_RULES)}, "
                f"got '{workers}'"
            )
        self.workers = workers
        self.edge_only = edge_only
        self.migrate = migrate
        self.migrates = migrate  # paused chunks may resume on another worker
        self.thresholds: np.ndarray | None = None  # auto: set at the first decision
        if thresholds != "auto":
            self.thresholds = np.asarray(parse_levels("tiresias-l", thresholds, "worker-slots"))
        self._rng = rng if rng is not None else np.random.default_rng(0)
        self._gang: JobLevel | None = None

    def prepare(self, jobs, cluster) -> None:
        self._gang = None

    def auto_thresholds(self, gang: JobLevel) -> np.ndarray:
        """T_1 = one round of chunks of a median job on its k workers, T_2 (module doc)."""
        t1 = MEDIAN_CHUNK_SLOTS * float(np.median(gang.k_job))
        return np.asarray([t1, t1 * TIRESIAS_RATIO])

    def _level(self, view, jobs: np.ndarray) -> np.ndarray:
        """Each job's queue level: #{k : a_j >= T_k}."""
        gang = self._gang
        assert gang is not None
        if self.thresholds is None:
            self.thresholds = self.auto_thresholds(gang)
        return np.searchsorted(self.thresholds - 1e-6, gang.attained(view, jobs), side="right")

    def _key(self, view, jobs: np.ndarray) -> np.ndarray:
        submit = np.asarray(view.job_submit)[view.tasks.first[jobs]]
        return self._level(view, jobs) * 1e15 + submit  # level, then arrival (< 1e15 s)

    def decide(self, view, now: float) -> Decision:
        if self._gang is None:
            self._gang = JobLevel(
                self._key,
                self._rng,
                workers=self.workers,
                migrate=self.migrate,
                edge_only=self.edge_only,
                clairvoyant=False,
                static_keys=self.static_keys,
                levels=self._level,
            )
        return self._gang.decide(view, now)
