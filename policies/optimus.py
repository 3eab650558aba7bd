"""Optimus+Oracle: every 60 s, GPUs one at a time to the job whose remaining time they cut most.

Y. Peng, Y. Bao, Y. Chen, C. Wu and C. Guo, "Optimus: An Efficient Dynamic Resource
Scheduler for Deep Learning Clusters", EuroSys 2018, Sec. 5.1 (greedy allocation by marginal
gain), as the Pollux paper runs it for comparison ("Optimus+Oracle", Qiao et al., OSDI 2021,
Sec. 5.1 and 5.3): its artifact's ``simulator/optimus.py`` (petuum/adaptdl, osdi21-artifact,
commit c793c70; "opt" below; read, not copied) with the simulator's job settings
(``simulator.py`` L338-355):

* every ``interval`` s (60), over the jobs that have arrived and not finished, in
  submission order: each job first gets one GPU while any is left (opt L20-37), then each
  remaining GPU goes to the job with the largest gain
  ``(t(r) - t(r + 1)) x remaining iterations`` (opt L36-48), while some gain is positive;
* ``t(r)`` is the true time of one iteration of the job's fixed batch (the trace's, the
  "TunedJobs" batch) on ``r`` GPUs packed 4 per node (opt L65-79: the oracle reads the
  simulator's own profile), the remaining iterations the oracle's count to the job's last
  epoch at that batch (opt L13-19); a job takes at most ``batch // min_local`` GPUs (ncf 1);
* a job whose GPU count is unchanged keeps its GPUs; the others are preempted and
  restarted, fewest GPUs first, each on the nodes with the most idle GPUs (opt L50-62).

Its jobs keep their batch (``Start.config`` None): goodput jobs of
:mod:`gpusched.jobmodels.goodput`, whose performance model answers the oracle
(``view.perf.step_time``, ``remaining_iterations``). Option ``throughput`` as Pollux's
(``sharing``, ``refit``, ``table``; default: the trace's ``throughput`` column, else
``sharing``).
"""

from __future__ import annotations

from typing import Annotated

import numpy as np

from gpusched.core.policy import Cycles, Decision, Preempt, Range, Start
from gpusched.core.state import SAVING
from gpusched.errors import ParamError
from gpusched.jobmodels.goodput import THROUGHPUT, GoodputPerf


class OptimusPolicy:
    """Greedy marginal-gain GPU allocation every ``interval`` s (module docstring)."""

    name = "optimus"
    knows_duration = True  # the oracle: true step times and remaining iterations
    needs_predictor = False
    work_conserving = False
    job_model = "goodput"

    def __init__(
        self,
        *,
        interval: Annotated[float, Range(0, 86400, lo_open=True)] = 60.0,
        throughput: str = "",
        rng: np.random.Generator | None = None,
    ) -> None:
        if throughput and throughput not in THROUGHPUT:
            raise ParamError(
                f"policy 'optimus': throughput must be one of {', '.join(THROUGHPUT)}, "
                f"got {throughput!r}"
            )
        self.interval = float(interval)
        # "" (default): the trace's ``throughput`` column, else sharing (the job model)
        self.job_model_options = {"goodput": {"throughput": throughput} if throughput else {}}
        self._cycles = Cycles(self.interval)

    def decide(self, view, now: float) -> Decision:
        if not self._cycles.due(now):
            return Decision(wake_at=self._cycles.next)
        perf = view.perf
        if not isinstance(perf, GoodputPerf):
            raise ValueError(
                "optimus schedules goodput jobs: rows of the six Pollux applications (e.g. "
                "gpusched workload pollux)"
            )
        holding = view.running[view.job_status[view.running] != SAVING]
        jobs = np.union1d(view.queued, holding)  # submission order
        per_node = int(np.bincount(view.gpu_server).max())
        left = view.n_gpus
        want: dict[int, int] = {}
        gain: dict[int, float] = {}
        for j in jobs.tolist():
            a = perf.agent(j)
            if a is None:
                raise ValueError("optimus schedules goodput jobs only; this trace mixes in others")
            want[j] = 1 if left >= 1 else 0
            left -= want[j]
            gain[j] = self._gain(perf, j, want[j], left)
        # sum_j r_j <= G: each GPU to argmax_j (t_j(r_j) - t_j(r_j + 1)) x remaining_j
        while left > 0 and gain and max(gain.values()) > 0:
            j = max(gain, key=lambda x: gain[x])
            want[j] += 1
            left -= 1
            gain[j] = self._gain(perf, j, want[j], left)
        return Decision(actions=self._actions(view, want, per_node), wake_at=self._cycles.next)

    @staticmethod
    def _gain(perf: GoodputPerf, j: int, r: int, left: int) -> float:
        a = perf.agent(j)
        assert a is not None
        most = a.app.pollux_max_gpus or (a.app.pollux_batch or a.batch) // a.app.min_local
        if r == 0 or r + 1 > most or left < 1:
            return 0.0
        per_node = perf.ref.gpus_per_node
        t = [perf.step_time(j, x, -(-x // per_node)) for x in (r, r + 1)]
        return (t[0] - t[1]) * perf.remaining_iterations(j, a.epoch)

    def _actions(self, view, want: dict[int, int], per_node: int) -> list:
        """Keep jobs whose GPU count stands; restart the others on the freest nodes."""
        holder = view.gpu_job[:, 0]
        have = {j: int(np.count_nonzero(holder == j)) for j in want}
        changed = [j for j in want if want[j] != have[j]]
        actions: list = [Preempt(j, reason="re-allocated") for j in changed if have[j]]
        free = holder < 0
        for j in changed:
            free |= holder == j
        for j in sorted(changed, key=lambda x: want[x]):  # fewest GPUs first (stable)
            gpus: list[int] = []
            while len(gpus) < want[j]:
                counts = np.bincount(view.gpu_server[free], minlength=view.server_free.size)
                n = int(np.argmax(counts))  # the node with the most idle GPUs
                idle = np.flatnonzero(free & (view.gpu_server == n))[: want[j] - len(gpus)]
                free[idle] = False
                gpus.extend(idle.tolist())
            if gpus:
                actions.append(
                    Start(j, np.asarray(gpus, dtype=np.int32), reason=f"optimus: {want[j]} GPUs")
                )
        return actions
