"""Dorm for parameter-server jobs: workers per job from a utilisation-fairness MILP.

The PD-ORS paper's third baseline (Yu et al., TNSE 2022, Sec. V, "(3) Dorm [12]"): "the
numbers of workers (parameter servers) are computed and placed by an MILP resource
utilization maximization problem with fairness and adjustment overhead constraints".
Dorm is P. Sun, Y. Wen, T. N. B. Duong, S. Yan, "Towards Distributed Machine Learning in
Shared Clusters: A Dynamically-Partitioned Approach", IEEE SMARTCOMP 2017,
doi:10.1109/SMARTCOMP.2017.7947053, arXiv:1704.06738 (its utilisation-fairness optimiser).
The MILP, solved by HiGHS, is :func:`gpusched.algorithms.dorm_milp.solve_counts`; its
docstring gives the maths.

Simplifications (only Dorm's abstract was at hand; the shape follows the PD-ORS paper's
sentence):

* The MILP decides *totals* per job (workers n_i in [0, F_i], PSs ceil(n_i / gamma_i)) on
  the cluster's pooled capacity, not counts per machine. The paper's MILP also places
  them (its round-robin sentence names baselines 1 and 2 only); here the totals are
  placed round-robin as in those baselines (:func:`gpusched.algorithms.ps_place.round_robin`),
  the cursor carried over between jobs and decisions. Jobs whose totals change are placed
  in index order, running jobs first (they hold the room they give back), then queued
  ones. A job that does not fit after fragmentation gets the most workers that do fit
  (binary search; fit is monotone in n because round-robin places identical workers and
  PSs), possibly none: a running job is then paused, a queued one waits.
* A running job whose worker count the MILP keeps keeps its placement (no migration);
  only jobs whose count changes are re-placed, so at most ``max_adjust`` running jobs get
  an Allocate per decision. Starting a queued job is not an adjustment.
* Fairness: each active job's share of its dominant resource is at least
  ``(1 - fairness)`` times the smaller of an equal share (1 / active jobs) and its share
  at F_i workers. The bounds are soft (a heavily weighted shortfall): when they cannot all
  hold, e.g. more jobs than the cluster can give a worker each or resizes blocked by
  ``max_adjust``, the MILP minimises the total shortfall, then maximises utilisation.
* The MILP runs only when the set of active jobs (arrived, unfinished) changed since the
  last one, or when the timer ``period`` (s, 0 = off) has run out; otherwise the
  decision changes nothing. Every active job is considered; none is rejected (jobs
  left at the horizon are unfinished).
* HiGHS solves the MILP to optimality (``mip_gap`` 0 by default; a positive relative gap
  stops it earlier, at an answer that depends on the search's path). A job whose worker
  or PS fits on no machine gets no workers (it waits). If HiGHS stops at a limit without
  a feasible answer, nothing changes at that decision.

Cost: a decision at Fig. 7 size (up to 100 active jobs on 100 machines) takes 0.01-0.5 s,
nearly all in HiGHS, and about 0.6 s where the node limit (:data:`NODE_LIMIT`) stops it;
far above a heuristic policy's. Deterministic: no random draws, and HiGHS is
deterministic under its node limit; only a run that hits ``time_limit`` (a backstop, 60
s: 2,000 nodes took about 0.6 s here) can depend on the machine's speed. The run says
so: summary.json's ``dorm`` counts how HiGHS ended its MILPs (proved optimal, node
limit, time limit, no answer), and a note under the run's header names any that stopped
at a limit (:meth:`DormPolicy.notes`).
"""

from __future__ import annotations

from typing import Annotated

import numpy as np

from gpusched.algorithms.dorm_milp import ps_count, solve_counts
from gpusched.algorithms.ps_place import round_robin
from gpusched.core.policy import Allocate, Decision, Range
from gpusched.errors import ParamError
from gpusched.jobmodels.ps import params_of

#: the shortest re-solve ``period``, s, other than 0 (off): far above the clock's
#: resolution at any time a run reaches (1e-7 s at 1e9 s)
MIN_PERIOD_S = 1e-3

#: HiGHS's node limit per MILP, by default. Above the most nodes a proof took in every Dorm
#: run of the PD-ORS experiments (``examples/pd-ors/run.sh``) on seeds 1-24: 1,589, over
#: 6,745 MILPs, all proved but one. That one (Fig. 7, I = 100, seed 4) 100,000 nodes do
#: not prove either; its answer is the same here as at the former 5,000, 0.9 s sooner. At
#: 2,000 all 216 runs give the answers they gave at 5,000 (docs/pd-ors.md, Speed, sixth
#: round)
NODE_LIMIT = 2000


class DormPolicy:
    """Utilisation-maximising MILP with fairness and adjustment caps, placed round-robin."""

    name = "dorm"
    knows_duration = False
    needs_predictor = False
    work_conserving = False
    places_roles = True

    def __init__(
        self,
        *,
        fairness: Annotated[float, Range(0, 1)] = 0.1,
        max_adjust: Annotated[int, Range(0, 10_000)] = 2,
        period: Annotated[float, Range(0, 1e9)] = 0.0,
        time_limit: Annotated[float, Range(0, 86_400, lo_open=True)] = 60.0,
        node_limit: Annotated[int, Range(1, 1e9)] = NODE_LIMIT,
        mip_gap: Annotated[float, Range(0, 1)] = 0.0,
    ) -> None:
        """
        Parameters
        ----------
        fairness
            Fairness slack in [0, 1]: a job's dominant share must be at least
            ``1 - fairness`` of its fair share (1: no fairness constraint).
        max_adjust
            Most running jobs whose worker count changes per decision (>= 0).
        period
            Re-solve at least every ``period`` s while jobs are active, s (0: only when
            jobs arrive or finish).
        time_limit
            HiGHS time limit per decision, s (> 0).
        node_limit
            HiGHS branch-and-bound node limit per decision (>= 1; :data:`NODE_LIMIT`).
        mip_gap
            HiGHS relative MIP gap (>= 0): the answer's objective is within this fraction
            of the optimum (0: the optimum).
        """
        if 0 < period < MIN_PERIOD_S:
            # now + period must be after now: a period below the clock's resolution asked
            # the engine to wake it at the same time again
            raise ParamError(
                f"policy 'dorm': period must be 0 (off) or at least {MIN_PERIOD_S:g} s, "
                f"got {period!r}"
            )
        self.fairness = fairness
        self.max_adjust = max_adjust
        self.period = period
        self.time_limit = time_limit
        self.node_limit = node_limit
        self.mip_gap = mip_gap
        self._cursor = 0
        self._active: tuple[int, ...] | None = None
        self._due = np.inf
        self._stops: dict[str, int] = {}  # how HiGHS ended each MILP (Answer.status)
        self._no_answer = 0  # MILPs that ended without a feasible answer
        self._limit_gap = 0.0  # the largest relative gap of an answer taken at a limit

    def prepare(self, jobs, cluster) -> None:
        self.gamma = params_of(jobs).gamma

    def decide(self, view, now: float) -> Decision:
        active = np.union1d(view.running, view.queued).astype(np.int64)
        key = tuple(active.tolist())
        if key == self._active and now < self._due:
            return Decision(wake_at=self._wake(bool(view.running.size)))
        self._active = key
        self._due = now + self.period if self.period > 0 else np.inf
        led = view.ledger
        cap = led.capacity
        gamma = self.gamma[active]
        # a job whose worker or PS fits on no machine gets none
        fit = _fits_somewhere(cap, led.worker[active]) & _fits_somewhere(cap, led.ps[active])
        top = np.where(fit, led.max_workers[active], 0)
        held = [led.allocation(j) for j in key]
        current = np.array([int(w.sum()) for w, _ in held], dtype=np.int64)
        running = np.isin(active, view.running)
        got = solve_counts(
            led.worker[active],
            led.ps[active],
            gamma,
            top,
            cap.sum(axis=0),
            current,
            running,
            slack=self.fairness,
            max_adjust=self.max_adjust,
            time_limit_s=self.time_limit,
            node_limit=self.node_limit,
            mip_gap=self.mip_gap,
        )
        self._stops[got.status] = self._stops.get(got.status, 0) + 1
        if got.workers is None:
            self._no_answer += 1
            self._active = None  # try again at the next decision point
            return Decision(wake_at=self._wake(bool(view.running.size)))
        if got.status != "optimal":
            self._limit_gap = max(self._limit_gap, got.gap)
        target = got.workers
        changed = np.flatnonzero(target != current)
        # the room: what is free now plus what the re-placed running jobs give back
        free = led.free.copy()
        for i in changed.tolist():
            j = key[i]
            w, s = held[i]
            free += np.outer(w, led.worker[j]) + np.outer(s, led.ps[j])
        actions = []
        for i in sorted(changed.tolist(), key=lambda i: (not running[i], i)):
            j = key[i]
            w, s = self._place(free, led.worker[j], led.ps[j], int(target[i]), gamma[i])
            free -= np.outer(w, led.worker[j]) + np.outer(s, led.ps[j])
            if running[i] or w.sum():
                old_w, old_s = held[i]
                if not (np.array_equal(w, old_w) and np.array_equal(s, old_s)):
                    actions.append(Allocate(j, w, s))
        busy = bool(view.running.size) or any(a.workers.sum() for a in actions)
        return Decision(actions=actions, wake_at=self._wake(busy))

    def status_line(self, view, now: float) -> str:
        """How HiGHS ended the MILPs so far, for the TUI."""
        stops = self._stops
        n = sum(stops.values())
        if not n:
            return "dorm: no MILP solved yet"
        said = [f"{stops.get('optimal', 0)} proved optimal"]
        said += [f"{stops[s]} at {s.replace(' ', '_')}" for s in _KNOWN[1:] if stops.get(s)]
        if self._no_answer:
            said.append(f"{self._no_answer} without an answer")
        return f"dorm: {n} MILPs, " + ", ".join(said)

    def summary(self) -> dict:
        """summary.json's ``dorm``: how HiGHS ended the run's MILPs."""
        stops = self._stops
        return {
            "dorm": {
                "milps": sum(stops.values()),
                "optimal": stops.get("optimal", 0),
                "node_limit": stops.get("node limit", 0),
                "time_limit": stops.get("time limit", 0),
                "other": sum(n for s, n in stops.items() if s not in _KNOWN),
                "no_answer": self._no_answer,
                "largest_gap_at_limit": self._limit_gap,
            }
        }

    def notes(self) -> list[str]:
        """What the results' reader must know: MILPs whose answers are not proved optima."""
        n, stops = sum(self._stops.values()), self._stops
        out = []
        if stops.get("node limit"):
            out.append(
                f"{stops['node limit']} of {n} MILPs stopped at node_limit ({self.node_limit:,}) "
                "before HiGHS proved its answer optimal (relative gap up to "
                f"{self._limit_gap:.2g}): such an answer repeats run to run, but another limit "
                "or HiGHS version can move it"
            )
        if stops.get("time limit"):
            out.append(
                f"{stops['time limit']} of {n} MILPs stopped at time_limit ({self.time_limit:g} "
                "s): the run depends on this machine's speed and may not repeat elsewhere; "
                "raise time_limit"
            )
        for status, count in sorted(stops.items()):
            if status not in _KNOWN:
                out.append(f"{count} of {n} MILPs ended with HiGHS's status {status}")
        if self._no_answer:
            out.append(
                f"{self._no_answer} of {n} MILPs ended without an answer; those decisions "
                "changed nothing"
            )
        return out

    def _wake(self, busy: bool) -> float | None:
        """The timer, while some job holds resources (re-solving an idle cluster that
        could place nothing would change nothing)."""
        return self._due if busy and np.isfinite(self._due) else None

    def _place(
        self, free: np.ndarray, worker: np.ndarray, ps: np.ndarray, n: int, gamma: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """The most workers up to ``n`` (with their PSs) that round-robin fits in ``free``,
        as counts per machine; the cursor moves on past the last machine used."""

        def trial(m: int):
            if m == 0:
                return None
            return round_robin(free, worker, ps, m, int(ps_count(m, gamma)), self._cursor)

        got = trial(n)
        if got is None and n > 1:
            lo, hi = 0, n - 1  # 0 workers fit, n do not; fit is monotone in the count
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if trial(mid) is None:
                    hi = mid - 1
                else:
                    lo = mid
            got = trial(lo)
        if got is None:
            h = free.shape[0]
            return np.zeros(h, dtype=np.int64), np.zeros(h, dtype=np.int64)
        w, s, self._cursor = got
        return w, s


#: the ways HiGHS ends a MILP that :meth:`DormPolicy.summary` counts by name
_KNOWN = ("optimal", "node limit", "time limit")


def _fits_somewhere(cap: np.ndarray, demand: np.ndarray) -> np.ndarray:
    """Bool per row of ``demand`` (k, R): one fits on some machine of ``cap`` (H, R)."""
    return (cap[None, :, :] >= demand[:, None, :] - 1e-9).all(axis=2).any(axis=1)
