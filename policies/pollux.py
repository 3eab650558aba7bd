"""Pollux: every 60 s, the allocation that maximises the fairness-weighted mean of the jobs'
goodput speedups, each job's batch size tuned by its agent.

A. Qiao, S. K. Choe, S. J. Subramanya, W. Neiswanger, Q. Ho, H. Zhang, G. R. Ganger and
E. P. Xing, "Pollux: Co-adaptive Cluster Scheduling for Goodput-Optimized Deep Learning",
OSDI 2021 (USENIX), Sec. 4.2 (PolluxSched, eq. 12-14), as its artifact's simulator runs it
(petuum/adaptdl, branch osdi21-artifact, commit c793c70: ``simulator/pollux.py`` "pol",
``simulator.py`` "sim"; read, not copied):

* every ``interval`` s (60, sim L431), over the jobs that have arrived and not finished, in
  order of attained service then submission (pol L147-150): each job's speedup on K GPUs
  over one or several nodes is its agent's estimated goodput there over its goodput at a
  fair share (:class:`gpusched.algorithms.pollux_search.Speedups`); a job may hold at most
  twice the GPUs it ever ran on, 64, and what its largest batch splits into (sim L328-333;
  ncf 1); a job whose allocation changes is discounted by ``max(age - R*30, 0)/(age+30)``,
  R its restarts so far (pol L321-327);
* the allocation maximises FITNESS_p, the power mean of the scaled speedups with
  ``p = -1`` (pol L328; the paper's eq. 14 with lambda = -1), one multi-node job per node;
* every job whose allocation changed is preempted and restarted on its new GPUs (a
  re-allocation costs its restart, 30 s, once: the job model's load time) with its agent
  choosing the batch (``Start.config = "adaptive"``; the agents live in the goodput job
  model, :mod:`gpusched.jobmodels.goodput`, whose reports the policy reads from
  ``view.perf``).

The optimiser: ``search="dp"`` (default) is ours, an exact dynamic programme over GPUs and
nodes with a placement and a local search; ``search="ga"`` is the artifact's genetic
algorithm (NSGA-II, 100 x 100, its operators, warm-started). Both are in
:mod:`gpusched.algorithms.pollux_search`, tested against brute force and the DP against the
GA; docs/pollux.md compares them on whole runs.

Options: ``p`` (Table 2: +1, -1, -10), ``interval`` (Fig. 8b), ``explore`` (``oracle``:
agents know their throughput from the start, Sec. 5.3.2), ``throughput`` (``refit``: our
refit of the profiles instead of the sharing model's parameters; ``table``: the artifact's
measured profiles interpolated as its simulator does; default: the trace's ``throughput``
column, else ``sharing``).

Deviations, chosen: the cluster-autoscaling objective and the interference avoidance
(Sec. 4.3, 5.3.3) are not modelled (the simulator's defaults turn them off); a job's
attained service counts the GPU-seconds it trained (the simulator also counts its
restarts); the GA keeps NSGA-II's front-and-crowding selection, not pymoo's every detail.

The module runs a little past 200 lines because PolluxSched has two searches (the DP of
:mod:`gpusched.algorithms.pollux_search` and the artifact's GA) and turns their allocation
into the engine's actions (re-allocations as Preempt + Start); the searches themselves
live in :mod:`gpusched.algorithms.pollux_search`.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np

from gpusched.algorithms.pollux_search import Problem, Speedups, search_dp, search_ga
from gpusched.core.policy import Cycles, Decision, Preempt, Range, Start
from gpusched.core.state import SAVING
from gpusched.errors import ParamError
from gpusched.jobmodels.goodput import ADAPTIVE, EXPLORE, THROUGHPUT, GoodputPerf, reference

SEARCHES = ("dp", "ga")


#: the smallest |p| other than 0 (the power mean's exponent; see ``__init__``)
MIN_ABS_P = 1e-3


class PolluxPolicy:
    """Goodput-driven elastic allocation every ``interval`` s (module docstring)."""

    name = "pollux"
    knows_duration = False
    needs_predictor = False
    work_conserving = False  # between rounds GPUs may idle; a round may leave some idle
    job_model = "goodput"

    def __init__(
        self,
        *,
        p: Annotated[float, Range(-100, 100)] = -1.0,
        interval: Annotated[float, Range(0, 86400, lo_open=True)] = 60.0,
        search: str = "dp",
        explore: str = "prior",
        throughput: str = "",
        rng: np.random.Generator | None = None,
    ) -> None:
        for key, value, allowed in (
            ("search", search, SEARCHES),
            ("explore", explore, EXPLORE),
            ("throughput", throughput or THROUGHPUT[0], THROUGHPUT),  # "": the trace's
        ):
            if value not in allowed:
                raise ParamError(
                    f"policy 'pollux': {key} must be one of {', '.join(allowed)}, got {value!r}"
                )
        if p != 0 and abs(p) < MIN_ABS_P:
            # mean(s ** p) is 1 + O(p): the O(p) that ranks allocations is lost to rounding
            # (at |p| <= 1e-17 every allocation scored 1 and Pollux stalled)
            raise ParamError(
                f"policy 'pollux': p must be 0 (the geometric mean) or of magnitude at least "
                f"{MIN_ABS_P:g}, got {p!r}"
            )
        self.p, self.interval, self.search = float(p), float(interval), search
        # throughput "" (default): the trace's ``throughput`` column, else sharing
        opts = {"explore": explore, **({"throughput": throughput} if throughput else {})}
        self.job_model_options = {"goodput": opts}
        self.rng = rng if rng is not None else np.random.default_rng(0)
        self.ref = reference()
        self._cycles = Cycles(self.interval)  # rounds at multiples of it (sim L402-403)
        self._tables: Speedups | None = None
        self._population: tuple[np.ndarray, np.ndarray] | None = None  # (jobs, GA states)
        self._ids: np.ndarray = np.empty(0, dtype=object)
        self._round: tuple[float, list[tuple[int, int, int]]] | None = None  # (t, changes)

    def prepare(self, jobs, cluster) -> None:
        self._ids = np.asarray(jobs.job_id, dtype=object)

    def status_line(self, view, now: float) -> str:
        """The last round's re-allocations: GPUs before and after, and the batch now."""
        if self._round is None:
            return f"pollux: a round every {self.interval:g} s, none yet"
        t, changes = self._round
        said = []
        for j, was, got in changes[:3]:
            a = view.perf.agent(j) if view.perf is not None else None
            batch = f", batch {a.global_batch}" if a is not None and got else ""
            said.append(f"{self._ids[j] if j < self._ids.size else j} {was}->{got} GPUs{batch}")
        more = f" +{len(changes) - 3} more" if len(changes) > 3 else ""
        return f"pollux round t={t:g} s: {len(changes)} re-allocated: " + "; ".join(said) + more

    def decide(self, view, now: float) -> Decision:
        if not self._cycles.due(now):
            return Decision(wake_at=self._cycles.next)
        perf = view.perf
        if not isinstance(perf, GoodputPerf):
            raise ValueError(
                "pollux schedules goodput jobs: rows of the six Pollux applications (model "
                "bert, cifar10, deepspeech2, imagenet, ncf or yolov3 with iterations and "
                "batch_size; e.g. gpusched workload pollux or sjf-bsbf)"
            )
        if self._tables is None:
            self._tables = Speedups(view.n_gpus)
        self._tables.forget(view.finished)
        holding = view.running[view.job_status[view.running] != SAVING]
        jobs = np.union1d(view.queued, holding)
        agents = [perf.agent(int(j)) for j in jobs.tolist()]
        if any(a is None for a in agents):
            raise ValueError("pollux schedules goodput jobs only; this trace mixes in others")
        # the artifact's job order: attained service, then submission (pol L147-150)
        order = np.lexsort((view.job_submit[jobs], view.job_attained[jobs]))
        jobs, agents = jobs[order], [agents[i] for i in order.tolist()]
        if jobs.size == 0:
            return Decision(wake_at=self._cycles.next)
        pb = self._problem(view, now, jobs, agents)
        if self.search == "ga":
            state = self._ga(pb, jobs)
        else:
            state = search_dp(pb)
        return Decision(
            actions=self._actions(view, jobs, pb.base, state), wake_at=self._cycles.next
        )

    def _problem(self, view, now: float, jobs: np.ndarray, agents: list) -> Problem:
        """This round's speedups, restart factors, current allocation and limits."""
        n_servers = view.server_free.size
        node_gpus = np.bincount(view.gpu_server, minlength=n_servers).astype(np.int64)
        # current allocation: GPUs of each job per node
        base = np.zeros((jobs.size, n_servers), dtype=np.int64)
        row = np.full(view.job_submit.size, -1, dtype=np.int64)
        row[jobs] = np.arange(jobs.size)
        holder = view.gpu_job[:, 0]
        on = holder >= 0
        np.add.at(base, (row[holder[on]], view.gpu_server[on]), 1)
        # restart factor max(age - R delta, 0) / (age + delta) (pol L321-327)
        age = now - view.job_submit[jobs]
        restarts = np.array([max(a.starts - 1, 0) for a in agents], dtype=np.float64)
        delta = self.ref.restart_s
        factor = np.maximum(age - restarts * delta, 0.0) / (age + delta)
        # at most 2 x the most GPUs it ran on, 64, and max_batch / min_local (sim L328-333)
        most = [
            a.app.pollux_max_gpus
            or min(max(2 * a.max_k, 1), self.ref.max_gpus, a.app.max_batch // a.app.min_local)
            for a in agents
        ]
        assert self._tables is not None
        return Problem(
            speedup=self._tables.table(jobs, agents),
            factor=factor,
            base=base,
            max_gpus=np.minimum(np.asarray(most, dtype=np.int64), view.n_gpus),
            node_gpus=node_gpus,
            p=self.p,
            scale=n_servers / view.n_gpus,  # dominant share x nodes (pol L318-320)
        )

    def _ga(self, pb: Problem, jobs: np.ndarray) -> np.ndarray:
        """The artifact's GA, warm-started from the last population (pol L60-86, L159-162)."""
        start = None
        if self._population is not None:
            prev_jobs, prev = self._population
            start = np.zeros((prev.shape[0], jobs.size, pb.base.shape[1]), dtype=np.int64)
            src = np.searchsorted(prev_jobs, jobs)
            found = (src < prev_jobs.size) & (
                prev_jobs[np.minimum(src, prev_jobs.size - 1)] == jobs
            )
            start[:, found] = prev[:, src[found]]
        best, pop = search_ga(pb, self.rng, start)
        keep = np.argsort(jobs)
        self._population = (jobs[keep], pop[:, keep])
        return best

    def _actions(self, view, jobs: np.ndarray, base: np.ndarray, state: np.ndarray) -> list:
        """Preempt every job whose allocation changed, then start it on its new GPUs."""
        changed = np.flatnonzero((state != base).any(axis=1))
        self._round = (
            view.now,
            [(int(jobs[i]), int(base[i].sum()), int(state[i].sum())) for i in changed.tolist()],
        )
        actions: list = [
            Preempt(int(jobs[i]), reason="re-allocated") for i in changed.tolist() if base[i].any()
        ]
        free = view.gpu_job[:, 0] < 0
        for i in changed.tolist():  # their GPUs are free once the preemptions apply
            if base[i].any():
                free |= view.gpu_job[:, 0] == jobs[i]
        for i in changed.tolist():
            if not state[i].any():
                continue
            gpus = []
            for n in np.flatnonzero(state[i]).tolist():
                idle = np.flatnonzero(free & (view.gpu_server == n))[: state[i, n]]
                free[idle] = False
                gpus.extend(idle.tolist())
            was, now_ = int(base[i].sum()), int(state[i].sum())
            actions.append(
                Start(
                    int(jobs[i]),
                    np.asarray(gpus, dtype=np.int32),
                    config=ADAPTIVE,
                    reason=f"pollux: {was} -> {now_} GPUs",
                )
            )
        return actions
