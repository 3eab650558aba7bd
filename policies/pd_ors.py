"""PD-ORS: primal-dual online resource scheduling of parameter-server jobs.

Yu, Liu, Wu, Ji, Bentley, "Toward Efficient Online Scheduling for Distributed Machine
Learning Systems", IEEE TNSE 2022, Algorithm 1, reading as the paper's:

* line 1: every resource of every machine in every future slot starts at price L
  (eq. 12 with rho = 0); U^r and L come from eq. 13-14 over the trace's jobs (the paper
  defines them over the job set; "estimated empirically based on historical data");
* line 2: when job i arrives, find the schedule pi* maximising its payoff
  lambda = u_i(t~ - a_i) - sum of prices x demands over the schedule (the RHS of eq. 11)
  with Algorithm 2 (every completion time t~ up to the horizon), Algorithm 3 (the dynamic
  program of eq. 21 over the workload per slot) and Algorithm 4 (per slot: one machine,
  sorted by price, when every worker and PS is co-located; else the LP relaxation of eq.
  23-26 and the randomized rounding of eq. 27-28); all in
  :mod:`gpusched.algorithms.primal_dual`;
* line 3: if lambda > 0, admit the job, reserve its schedule's resources in every slot it
  uses (rho += ...), and raise those prices (eq. 12);
* line 4: otherwise reject it (:class:`~gpusched.core.policy.Reject`).

The engine then runs the admitted schedules slot by slot: at each slot boundary the policy
sets each admitted job's workers and PSs for that slot (:class:`~gpusched.core.policy.Allocate`,
a pause where the schedule leaves a slot empty). Readings where the paper is silent:

* a schedule plans integer workers ``w >= v c`` and ``s = ceil(w / gamma)`` PSs for the
  samples v of a slot, so the job trains at least as fast as planned (eq. 1 with actual
  counts); a job that finishes before its last planned slot frees its resources at once,
  but its reservation stays in the prices (the paper's rho is never decreased);
* the workload per slot is a multiple of V / ``granularity`` units: the paper enumerates
  v = 0..V samples, about 1e7 values here (see primal_dual's docstring). A slot can hold
  a unit only if the job trains V / granularity samples in one slot, so a job that needs
  k slots at its fastest needs granularity >= k; the default (0) is twice the horizon in
  slots, so every job that can finish by the horizon can be scheduled, with room to
  spread its units unevenly over the slots; past 200 slots it is
  ``max(400, 2 ceil(k))`` for a job that needs k slots at its fastest (the DP's cost
  grows with the square of the units, and a job that needs few slots gains nothing from
  more units than slots);
* ``g_delta`` (G_delta of eq. 29-30, default 1, the best value of Fig. 11), ``rounds``
  (S of Alg. 4) and ``max_failures`` (the 5,000 failed roundings after which the paper
  discards the job's external option, Sec. V: "a preset threshold (e.g, 5000)") are
  parameters. ``max_failures`` is at most :data:`MAX_FAILURES` = 10^6, 200 times the
  paper's: after N failures an option whose draws succeed with probability p is given up
  with probability (1 - p)^N, under e^-5 at N = 10^6 for every p >= 5e-6 (the paper's
  Theorem 3 puts a draw's chance of missing the workload constraint at most delta/3),
  so more buys nothing, while the draws take time in proportion: about 0.1 s per 10^6
  draws on 20 machines (measured), per (slot, workload) option the DP tries, of which a
  job has hundreds, so 10^9 would take hours. The rounding draws are seeded by the
  policy's seed, the job, the slot and the workload, so runs are deterministic and one
  job's draws do not depend on what was planned before it;
* the rounding draws of a (slot, workload) do not depend on the grid, so a grid that
  divides the default one finer never lowers a job's planned payoff; ``refine=K`` (default
  0) also plans each job on the grids 2, 4, ..., 2^K times finer and keeps the best
  (primal_dual's readings 12-13; it doubles the planning time per level);
  ``all_counts=false`` restores the former search that stopped at the first unit count
  without a schedule, and ``draws=shared`` the former draws from one stream shared by
  all jobs in call order (both for the ablation; primal_dual's readings 9 and 12);
* prices: ``bottom=eq14`` (default) takes L from eq. 14 over the trace's jobs with
  ``1/mu`` as large as eq. 14's inequality allows; ``mu`` > 0 sets mu; ``L`` > 0 sets L
  itself; ``bottom=lemma8`` takes ``L = opt / (2 T sum_h sum_r C_h^r)``, the largest L
  for which Lemma 8's ``D_0 <= OPT / 2`` holds, with ``opt`` a lower bound of the
  optimum's utility from past data (e.g. the best total utility of an earlier run on
  the same kind of workload); U is eq. 13's in every case;
* slots are whole simulated seconds (1 slot = 1 s, :mod:`gpusched.jobmodels.ps`); a job
  arriving at time a is first scheduled in slot ceil(a).

:mod:`policies.oasis` is this policy with workers and PSs on two disjoint halves of the
machines (``split``), as the paper's Sec. V runs OASiS.

The module runs past 200 lines only for this docstring: the readings above belong beside
Alg. 1, and the code itself (Alg. 1's four lines and the slot-by-slot allocation) is about
140 lines; Alg. 2-4 live in :mod:`gpusched.algorithms.primal_dual`.
"""

from __future__ import annotations

import math
from typing import Annotated

import numpy as np

from gpusched.algorithms import primal_dual as pd
from gpusched.core.ledger import capacities
from gpusched.core.policy import Allocate, Decision, Range, Reject
from gpusched.core.state import FINISHED
from gpusched.errors import ParamError
from gpusched.jobmodels.ps import PSJob, params_of

#: Most failed rounding draws ``max_failures`` may allow per option (see the docstring:
#: 200 times the paper's 5,000; 10^6 draws take about 0.1 s on 20 machines).
MAX_FAILURES = 1_000_000
#: Most units of the default grid (past a horizon of 200 slots; see the docstring).
MAX_DEFAULT_UNITS = 400
#: Most units a user's grid may have, ``granularity x 2^refine``: the DP holds a few
#: (units + 1)^2 arrays per slot (10,000 units: 1.1 GB max RSS on ps-20; 100,000 were
#: killed for lack of memory).
MAX_UNITS = 10_000
#: Most slots x machines a run may plan over: the prices and every job's schedule hold a
#: value per slot, machine and resource (5 jobs, a horizon of 100,000 slots on 100
#: machines: 1.6 GB and 17 s; 10^6 slots ended in a MemoryError). The paper's runs plan
#: 20 slots on at most 100 machines.
MAX_SLOT_MACHINES = 4_000_000


class PDORSPolicy:
    """Admit on positive payoff, reserve the best schedule, run it slot by slot."""

    name = "pd-ors"
    knows_duration = False
    needs_predictor = False
    work_conserving = False
    places_roles = True
    split = False  # OASiS: workers and PSs on disjoint halves of the machines

    def __init__(
        self,
        *,
        g_delta: Annotated[float, Range(0, 1e6, lo_open=True)] = 1.0,
        rounds: Annotated[int, Range(1, 1e6)] = 10,
        granularity: Annotated[int, Range(0, MAX_UNITS)] = 0,
        refine: Annotated[int, Range(0, 6)] = 0,
        max_failures: Annotated[int, Range(1, MAX_FAILURES)] = 5000,
        all_counts: bool = True,
        draws: str = "slot",
        bottom: str = "eq14",
        mu: Annotated[float, Range(0, 1e12)] = 0.0,
        L: Annotated[float, Range(0, 1e6)] = 0.0,
        opt: Annotated[float, Range(0, 1e12)] = 0.0,
        rng: np.random.Generator | None = None,
    ) -> None:
        if bottom not in pd.BOTTOMS:
            raise ParamError(
                f"policy '{self.name}': bottom must be {' or '.join(pd.BOTTOMS)}, got {bottom!r}"
            )
        if draws not in ("slot", "shared"):
            raise ParamError(f"policy '{self.name}': draws must be slot or shared, got {draws!r}")
        if granularity * 2**refine > MAX_UNITS:
            raise ParamError(
                f"policy '{self.name}': granularity x 2^refine must be at most {MAX_UNITS:,} "
                f"units (memory grows with their square), got {granularity} x 2^{refine}"
            )
        if bottom == "lemma8" and not opt > 0:
            raise ParamError(
                f"policy '{self.name}': bottom=lemma8 needs opt > 0 (a lower bound of the "
                "optimum's total utility, e.g. an earlier run's)"
            )
        self.g_delta = g_delta
        self.rounds = rounds
        self.granularity = granularity
        self.refine = refine
        self.max_failures = max_failures
        self.all_counts = all_counts
        self.draws = draws
        self.bottom, self.mu, self.L, self.opt = bottom, mu, L, opt
        self.rng = rng if rng is not None else np.random.default_rng(0)
        self.seed = int(self.rng.integers(2**62))  # the rounding draws' seed (with job, slot)
        self.plans: dict[int, pd.Schedule] = {}

    def prepare(self, jobs, cluster) -> None:
        self.params = params_of(jobs)
        horizon = self.params.horizon
        if not np.isfinite(horizon).any():
            raise ValueError("the trace gives no horizon (column 'horizon'); PD-ORS plans to it")
        self.horizon = int(math.floor(float(np.nanmax(horizon))))
        cap = capacities(cluster)
        if self.horizon * cap.shape[0] > MAX_SLOT_MACHINES:
            raise ParamError(
                f"policy '{self.name}': the trace's horizon of {self.horizon:,} slots on "
                f"{cap.shape[0]:,} machines is {self.horizon * cap.shape[0]:,} slot-machines "
                f"to plan over; at most {MAX_SLOT_MACHINES:,} (memory grows with it: 10^7 "
                "took 1.6 GB); shorten the horizon (workload pd-ors --horizon)"
            )
        self.workers_on = _halves(cap.shape[0]) if self.split else None
        arrivals = np.ceil(np.asarray(jobs.submit_s) - 1e-9).astype(int)
        self.jobs = [PSJob.of(self.params, j, int(a)) for j, a in enumerate(arrivals)]
        U, L = pd.price_bounds(
            self.jobs, self.horizon, cap, bottom=self.bottom, mu=self.mu, opt=self.opt
        )
        if self.L > 0:
            L = self.L
            U = np.maximum(U, L)
        self.prices = pd.Prices(cap, self.horizon, U, L)

    def units(self, job: PSJob) -> int:
        """The job's grid: ``granularity``, or the default of the module docstring."""
        if self.granularity:
            return self.granularity
        fastest = math.ceil(job.work * job.c_int / job.batch - 1e-9)  # slots at eq. 13's rate
        return min(2 * self.horizon, max(MAX_DEFAULT_UNITS, 2 * fastest))

    def decide(self, view, now: float) -> Decision:
        if view.slot_s != 1.0:
            raise ValueError(
                f"plans in slots of 1 s (the PS job model's time unit), but the run's slot is "
                f"{view.slot_s:g} s: run with --slot 1"
            )
        t = int(round(now))
        actions: list = []
        for j in view.arrived.tolist():  # Alg. 1, line 2: in arrival order
            sched = None
            if t < self.horizon:
                sched = pd.plan(
                    self.jobs[j],
                    self.prices,
                    horizon=self.horizon,
                    granularity=self.units(self.jobs[j]),
                    refine=self.refine,
                    g_delta=self.g_delta,
                    rounds=self.rounds,
                    max_failures=self.max_failures,
                    seed=(self.seed, j),
                    split=self.workers_on,
                    all_counts=self.all_counts,
                    positive=True,  # only a positive payoff is admitted (line 3)
                    shared=self.rng if self.draws == "shared" else None,
                )
            if sched is not None and sched.payoff > 0:  # line 3
                self.prices.commit(self.jobs[j], sched)
                self.plans[j] = sched
            else:  # line 4
                if t >= self.horizon:
                    why = f"arrived in slot {t}, at or after the horizon T = {self.horizon}"
                elif sched is None:
                    why = "no schedule completes it within the horizon"
                else:
                    why = (
                        f"payoff {sched.payoff:.3g} <= 0: its utility does not cover the "
                        "resources' prices (Alg. 1, line 4)"
                    )
                actions.append(Reject(j, reason=why))
        led = view.ledger
        for j, sched in list(self.plans.items()):
            if view.job_status[j] == FINISHED:  # done, maybe before its last planned slot
                del self.plans[j]
                continue
            slot = min(t, self.horizon - 1)
            w = sched.workers[slot] if t < self.horizon else np.zeros_like(sched.workers[0])
            s = sched.ps[slot] if t < self.horizon else np.zeros_like(sched.ps[0])
            old_w, old_s = led.allocation(j)
            if not (np.array_equal(old_w, w) and np.array_equal(old_s, s)):
                actions.append(Allocate(j, w, s))
        wake = now + view.slot_s if self.plans and t + 1 <= self.horizon else None
        return Decision(actions=actions, wake_at=wake)

    def status_line(self, view, now: float) -> str:
        return f"admitted {len(self.plans)} running/planned"


def _halves(h: int) -> np.ndarray:
    """OASiS's disjoint machine sets: True (workers) on the first half, PSs on the rest."""
    if h < 2:
        raise ValueError("OASiS puts workers and PSs on two disjoint sets: it needs >= 2 machines")
    worker = np.zeros(h, dtype=bool)
    worker[: h // 2] = True
    return worker
