"""Shortest remaining time first: preemptive; at every event all unfinished jobs are re-packed by remaining time.

Semantics of ``shortest_first_sim_jobs`` (``'shortest'``) in the Tiresias simulator
(SymbioticLab/Tiresias, ``simulator/run_sim.py``): at every arrival and completion,
all unfinished jobs in order of remaining time r_j get GPUs greedily while
\\sum g_j <= G, skipping those that do not fit; running jobs left out are
preempted. Deviation: the simulator re-places every job from scratch (free
migration); here running jobs keep their GPUs and new ones are placed
consolidated first, which selects the same jobs with GPU-count placement.
Ties go to the earlier submission.

On jobs made of data chunks (the edge-cloud family, ``view.tasks``) this is the
edge-cloud paper's SRTF baseline [16] ("jobs are scheduled in the non-decreasing order of
remaining training time", Sec. V-A), job-level and all-or-nothing
(:class:`gpusched.algorithms.edge_cloud.JobLevel`, whose docstring gives the reading and
its sources): a job's remaining time is the work its chunks have left over its k workers,
at eq. 1's speed with zeta_j = 0. ``workers`` (k_j: ``chunks`` = min(D_j, edge workers of
its type), or ``trace`` = the trace's ``gang_workers``), ``migrate`` (paused chunks may
resume on other workers, shipping their data again) and ``edge_only`` (the cloud is not
used) have no effect on gang jobs.
"""

from __future__ import annotations

import numpy as np

from gpusched.algorithms.edge_cloud import WORKER_RULES, JobLevel
from gpusched.core.policy import KEY_SRTF, Decision, Fused
from gpusched.core.state import SAVING
from gpusched.core.tasks import has_workers
from gpusched.errors import ParamError


class SRTFPolicy:
    """All unfinished jobs by remaining time r_j ascending, preempting the rest."""

    name = "srtf"
    knows_duration = True
    needs_predictor = False
    work_conserving = True
    runs_tasks = True
    #: chunk jobs: remaining time is static while a job waits and falls while it runs, so
    #: a decision looks only at the worker types with events (JobLevel's static_keys)
    static_keys = True

    def __init__(
        self,
        *,
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
        #: chunk jobs: paused chunks may resume on another worker (tasks' migration rule)
        self.migrates = migrate
        self._rng = rng if rng is not None else np.random.default_rng(0)
        self._gang: JobLevel | None = None

    def prepare(self, jobs, cluster) -> None:
        self._gang = None
        # jobs made of data chunks run on, and only on, a cluster of typed workers (an
        # edge-cloud one: replay refuses either without the other)
        self._chunk_jobs = has_workers(cluster)

    def notes(self) -> list[str]:
        """A chunk-job setting given where no job is made of chunks changed nothing."""
        given = [
            f"{k}={str(v).lower() if isinstance(v, bool) else v}"
            for k, v, default in (
                ("workers", self.workers, "chunks"),
                ("migrate", self.migrate, True),
                ("edge_only", self.edge_only, True),
            )
            if v != default
        ]
        if getattr(self, "_chunk_jobs", True) or not given:
            return []
        verb, it = ("applies", "it") if len(given) == 1 else ("apply", "they")
        return [
            f"{', '.join(given)} {verb} to jobs made of data chunks; this trace's jobs "
            f"are not, so {it} changed nothing"
        ]

    def _job_remaining(self, view, jobs: np.ndarray) -> np.ndarray:
        """Remaining training time of each job made of chunks (see the module doc), s."""
        gang = self._gang
        assert gang is not None
        return gang.left(view, jobs) / gang.k_now(jobs) / gang.rate0[jobs]

    def fused(self) -> Fused:
        return Fused(KEY_SRTF, preemptive=True, blocking=False)

    def decide(self, view, now: float) -> Decision:
        if view.tasks is not None:
            if self._gang is None:
                self._gang = JobLevel(
                    self._job_remaining,
                    self._rng,
                    workers=self.workers,
                    migrate=self.migrate,
                    edge_only=self.edge_only,
                    static_keys=self.static_keys,
                )
            return self._gang.decide(view, now)
        holding = view.running[view.job_status[view.running] != SAVING]
        active = np.union1d(view.queued, holding)  # ascending index: ties by submission
        order = active[np.argsort(view.job_remaining[active], kind="stable")]  # min r_j first
        return Decision(order=order, preemptive=True)
