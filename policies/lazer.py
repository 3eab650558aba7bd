"""Lazer: preempt on arrival for shorter jobs, deferred by a Bayesian-optimised time to avoid futile preemptions.

Y. Go, C. Shin, M. Kang, J. Hwang, C. Yoo and G. Yang, "Making Sense of Job Preemption for
Distributed Deep Learning Acceleration", DAC 2026, doi:10.1145/3770743.3804432.
Implements Alg. 1 (Sec. 4), the scheduling orchestrator of Alg. 2 (Sec. 4.1) and the
deferral predictor of Sec. 4.2 (eq. 3-5), the last on the reusable
:class:`gpusched.algorithms.bayesopt.BayesOpt`.

Alg. 1 and 2, as implemented in :meth:`LazerPolicy.decide`:

* lines 1-2: on the arrival of j_new the orchestrator (Alg. 2) looks for J_r among the
  running queue RQ: jobs sorted by descending remaining duration (line 3), taken while
  :math:`T'_{j_{new}} < T'_{J_r^i}` and avail_gpus < Demand(j_new) (lines 4-7); too few
  GPUs -> no J_r (line 8);
* line 3: no J_r -> j_new stays in the waiting queue WQ;
* line 4: X from the deferral predictor, given the context c of eq. 5;
* line 5: X = 0 -> Preempt every job of J_r (each pauses and saves, then requeues) and
  Start j_new on their GPUs once the saves have ended (choice 9);
* lines 6-7: X > 0 -> j_new to the deferred waiting queue DWQ and J_r to the deferred
  running queue DRQ (they keep running, and no other arrival may preempt them); the
  paper's deferral thread is a timer, ``wake_at`` = now + X in simulated time;
* lines 8-10: when the timer fires both leave DWQ and DRQ and the orchestrator runs again
  for j_new: no J_r2 -> WQ, else preempt J_r2 and start j_new;
* lines 11-17: on a completion, WQ by ascending remaining duration; each job whose demand
  fits the GPUs still secured starts, which then shrink by its demand.

The deferral predictor (Sec. 4.2) minimises :math:`f(X \\mid c) = |X - F|` (eq. 4) over
:math:`X \\in [0, h]`, ``h = max_defer`` (eq. 3; l = 0, h = 100 s), with the context
(eq. 5) :math:`c = (\\overline{\\Delta A}, T'_{j_{new}}, \\ell_{j_{new}}, \\max_{k \\in J_r} p_k)`,
each on a log scale (``log1p`` of seconds): bootstrap by Latin hypercube (M = ``bootstrap``),
acquisition by expected improvement (``starts`` L-BFGS-B starts) until ``min_updates``
updates and EI below ``ei_stop``, then exploitation. Only bootstrap and acquisition
samples are observed, as in the paper.

Where the paper is silent, and what we chose:

1. F (eq. 4), observed in simulated time. For a decision at :math:`t_0` with
   :math:`p = \\max_{J_r} p_k` and :math:`\\ell = \\ell_{j_{new}}`, F is the offset
   :math:`\\Delta` from :math:`t_0` of the first later arrival whose duration is shorter
   than :math:`T'_{j_{new}}` with :math:`p < \\Delta \\le p + \\ell` (eq. 2's window: had
   j_new been loaded at once that job would have preempted it mid-load, and deferring by
   :math:`\\Delta` avoids it); F = 0 if no such job arrives. F is known at
   :math:`t_0 + p + \\ell` and the GP update happens at the first decision point at or after
   :math:`\\max(t_0 + X, t_0 + p + \\ell)` (a ``wake_at`` timer). F does not depend on X,
   so f is observed for the X the predictor suggested.
2. RQ holds the jobs that hold GPUs and are loading or running, minus DRQ. Loading jobs
   are candidates: the paper reports futile preemption time for Lazer (Table 2), which only
   the preemption of a loading job produces, and the deferral exists to make that rare.
   Saving jobs are already leaving; a job whose start waits for a save is in neither RQ
   nor WQ; a job started or preempted at this decision point is no candidate for a later
   arrival of the same point.
3. Idle GPUs count towards avail_gpus first (Alg. 2 starts from 0): if enough are idle,
   j_new starts at once (X = 0, no prediction), since that needs no preemption. Without
   this a job deferred while its J_r completed could wait in WQ on an idle cluster.
4. "Secured GPUs" (line 12) are all idle GPUs at that moment (the ones released plus any
   already idle), less those promised to a start that waits for a save.
5. The events of one decision point are handled in this order: GP updates due, then the
   completion handler (once, if any job finished), then each arrival in submission order,
   then each deferral whose timer is due, in timer order. An arrival at the very end of a
   deferral thus still finds J_r in DRQ (F = X is a hit).
6. :math:`\\overline{\\Delta A}` is the mean gap between consecutive arrivals in the hour
   before the decision (``window``), :math:`(A_{last} - A_{first}) / (k - 1)` over the k
   arrivals in it; with fewer than 2 it is the window itself (no two arrivals in an hour).
7. :math:`p_k` in c is the save j_r will really pay: 0 for a job that has not trained since
   its last start (a futile preemption releases its GPUs at once, with no save).
8. A deferral shorter than half a slot is none (the nearest decision point is now); any
   other fires at the first decision point at or after now + X.
9. Placement: a job started on idle GPUs takes the fullest server that fits it (best
   fit), else the servers with most idle GPUs; a job started by preemption takes every idle
   GPU and then the GPUs of J_r in orchestrator order. While J_r saves, those GPUs are
   promised to j_new (no other start takes them) and its Start is issued at the decision
   point where the last save ends (a save end is one). The engine's pending start would
   give the same schedule on exclusive GPUs, but on a cluster that shares GPUs
   (``gpu_capacity`` > 1) it would start j_new beside the saving job at once. Ties in
   remaining duration: the later-submitted job is preempted first (WQ: the earlier one
   starts first).
10. Alg. 2 counts GPUs, not servers: a cluster that forbids spreading a job over servers
    (``allow_spread = false``) is refused.
"""

from __future__ import annotations

import heapq
import math
from typing import Annotated, NamedTuple

import numpy as np

from gpusched.algorithms.bayesopt import BayesOpt
from gpusched.core.policy import Decision, Note, Preempt, Range, Start
from gpusched.core.state import LOADING, RUNNING

_EPS = 1e-9  # s, as the engine's tolerance on times


class _Sample(NamedTuple):
    """A bootstrap or acquisition sample waiting for its F (choice 1)."""

    x: float  # X suggested, s
    c: np.ndarray  # context (eq. 5, log scale)
    t0: float  # decision time, s
    p: float  # max pause-and-save over J_r, s
    load: float  # load time of j_new, s
    t_new: float  # remaining duration of j_new, s


class LazerPolicy:
    """Alg. 1: SRTF-like preemption on arrival, deferred by X from Bayesian optimisation."""

    name = "lazer"
    knows_duration = True
    needs_predictor = False
    work_conserving = False  # GPUs freed by a save, or idle during a deferral, may wait

    def __init__(
        self,
        *,
        max_defer: Annotated[float, Range(0, 86_400)] = 100.0,
        bootstrap: Annotated[int, Range(1, 1000)] = 10,
        min_updates: Annotated[int, Range(0, 1e6)] = 100,
        ei_stop: Annotated[float, Range(0, 1e3)] = 0.1,
        starts: Annotated[int, Range(1, 100)] = 5,
        window: Annotated[float, Range(0, 1e9, lo_open=True)] = 3600.0,
        rng: np.random.Generator | None = None,
    ) -> None:
        self.max_defer = float(max_defer)
        self.window = float(window)
        rng = rng if rng is not None else np.random.default_rng(0)
        #: the deferral predictor: ``suggest(c)`` and ``observe(x, c, f)``; None when
        #: ``max_defer`` is 0 (X is always 0: preempt at once, as SRTF on arrival)
        self.predictor: BayesOpt | None = None
        if max_defer > 0:
            self.predictor = BayesOpt(
                0.0,
                self.max_defer,
                4,
                bootstrap=bootstrap,
                min_updates=min_updates,
                ei_stop=ei_stop,
                starts=starts,
                rng=rng,
            )

    def prepare(self, jobs, cluster) -> None:
        """Allocate the queues' masks (DWQ, DRQ, starts waiting for saves)."""
        from gpusched.errors import PolicyError

        if not cluster.allow_spread:
            raise PolicyError(
                f"policy '{self.name}' selects GPUs by count (Alg. 2) and needs a cluster "
                f"that allows spreading a job over servers (cluster '{cluster.name}' sets "
                "allow_spread = false)"
            )
        n, g = len(jobs), cluster.n_gpus
        self._server_start = cluster.server_start().tolist()
        self._gpu_server = np.asarray(cluster.gpu_server(), dtype=np.int64)
        self._in_dwq = np.zeros(n, dtype=bool)
        self._in_drq = np.zeros(n, dtype=bool)
        self._waiting = np.zeros(n, dtype=bool)  # its start waits for saves to end
        self._taken = np.zeros(n, dtype=bool)  # started or preempted at this decision point
        self._reserved = np.zeros(g, dtype=bool)  # GPUs promised to a waiting start
        self._promised: dict[int, np.ndarray] = {}  # waiting job -> its GPUs
        self._timers: list[tuple[float, int, int, np.ndarray]] = []  # (wake, seq, j_new, J_r)
        self._due: list[tuple[float, int, _Sample]] = []  # (time F is known, seq, sample)
        self._seq = 0
        self._n_arrived = 0
        self.n_deferred = 0  # deferrals so far (X > 0)

    def status_line(self, view, now: float) -> str:
        """The predictor's stage and the deferred queues, for the TUI."""
        bo = self.predictor
        stage = f"{bo.stage}, {bo.n_updates} GP updates" if bo is not None else "no deferral"
        return (
            f"Lazer {stage}; DWQ {len(self._timers)}, {self.n_deferred} deferrals so far; "
            f"{len(self._promised)} start(s) waiting for saves"
        )

    # --- one decision point ------------------------------------------------------------

    def decide(self, view, now: float) -> Decision:
        self._actions: list[Start | Preempt | Note] = []
        self._touched: list[int] = []
        self._free: np.ndarray | None = None  # idle GPUs not promised, set on first use
        if self._promised:
            self._start_promised(view)
        arrived = view.arrived
        first_new = int(arrived[0]) if arrived.size else self._n_arrived
        if arrived.size:
            self._n_arrived = int(arrived[-1]) + 1
        while self._due and self._due[0][0] <= now + _EPS:
            self._observe(view, heapq.heappop(self._due)[2])
        if view.finished.size:
            self._on_completion(view, first_new)
        for j in arrived.tolist():
            self._on_arrival(view, j, now)
        while self._timers and self._timers[0][0] <= now + _EPS:
            _, _, j, jr = heapq.heappop(self._timers)
            self._on_timer(view, j, jr)
        if self._touched:
            self._taken[self._touched] = False
        wake = min(
            self._timers[0][0] if self._timers else math.inf,
            self._due[0][0] if self._due else math.inf,
        )
        return Decision(actions=self._actions, wake_at=wake if math.isfinite(wake) else None)

    def _idle(self, view) -> np.ndarray:
        """Mask of the GPUs free for a start now: idle, not promised, not taken at this point."""
        if self._free is None:
            self._free = view.gpu_n_jobs == 0
            if self._promised:
                self._free &= ~self._reserved
        return self._free

    def _start_promised(self, view) -> None:
        """Alg. 1 line 5, continued: start each job whose J_r has finished saving (choice 9)."""
        for j, gpus in list(self._promised.items()):
            if (view.gpu_n_jobs[gpus] == 0).all():
                del self._promised[j]
                self._reserved[gpus] = False
                self._waiting[j] = False
                self._start(view, j, gpus)

    def _on_arrival(self, view, j: int, now: float) -> None:
        """Alg. 1 lines 1-7."""
        jr = self._orchestrate(view, j)  # line 2
        if jr is None:
            return  # line 3: j stays in WQ
        if jr.size == 0:
            self._start(view, j, self._place(view, int(view.job_n_gpus[j])))
            return  # enough idle GPUs: no preemption, no prediction
        saves = self._saves(view, jr)
        x = self._predict(view, j, jr, saves, now)  # line 4
        if x == 0.0:
            self._preempt_and_start(view, j, jr, saves)  # line 5
            return
        self._in_dwq[j] = True  # lines 6-7: the deferral "thread" is a timer
        self._actions.append(
            Note(j, f"deferred {x:.3g} s before preempting {jr.size} job(s) (Alg. 1 lines 6-7)")
        )
        self._in_drq[jr] = True
        heapq.heappush(self._timers, (now + x, self._next_seq(), j, jr))
        self.n_deferred += 1

    def _on_timer(self, view, j: int, jr: np.ndarray) -> None:
        """Alg. 1 lines 7-10: restore DRQ to RQ, take j out of DWQ, orchestrate again."""
        self._in_dwq[j] = False
        self._in_drq[jr] = False
        jr2 = self._orchestrate(view, j)  # line 8
        if jr2 is None:
            return  # line 9: j stays in WQ
        if jr2.size == 0:
            self._start(view, j, self._place(view, int(view.job_n_gpus[j])))
        else:
            self._preempt_and_start(view, j, jr2, self._saves(view, jr2))  # line 10

    def _on_completion(self, view, first_new: int) -> None:
        """Alg. 1 lines 11-17: WQ by ascending remaining duration into the secured GPUs."""
        q = view.queued
        if not q.size:
            return
        q = q[q < first_new]  # this point's arrivals go through lines 1-10 instead
        q = q[~(self._in_dwq[q] | self._waiting[q] | self._taken[q])]  # started here: not WQ
        secured = np.count_nonzero(self._idle(view)) if q.size else 0  # line 12 (choice 4)
        if secured == 0:
            return
        wq = q[np.argsort(view.job_remaining[q], kind="stable")]  # line 13
        demand = view.job_n_gpus[wq]
        i = 0
        while secured > 0:  # lines 14-17
            fits = (demand[i:] <= secured).nonzero()[0]  # line 15
            if fits.size == 0:
                break
            k = i + int(fits[0])
            self._start(view, int(wq[k]), self._place(view, int(demand[k])))  # line 16
            secured -= int(demand[k])  # line 17
            i = k + 1

    def _orchestrate(self, view, j: int) -> np.ndarray | None:
        """Alg. 2: J_r for ``j`` (empty if idle GPUs suffice), or None if none exists."""
        g = int(view.job_n_gpus[j])
        idle = np.count_nonzero(self._idle(view))
        if g <= idle:
            return np.empty(0, dtype=np.int64)  # choice 3
        run = view.running
        status = view.job_status[run]
        rq = run[
            ((status == RUNNING) | (status == LOADING)) & ~self._in_drq[run] & ~self._taken[run]
        ]
        rem = view.job_remaining[rq]
        longer = rem > view.job_remaining[j]  # line 5: T'_new < T'_{J_r^i}
        if not longer.any():
            return None
        rq, rem = rq[longer], rem[longer]
        rq = rq[np.lexsort((-rq, -rem))]  # line 3: descending remaining, later job first
        avail = idle + np.cumsum(view.job_n_gpus[rq])  # line 7
        k = int(np.searchsorted(avail, g))  # first prefix with avail_gpus >= Demand(j_new)
        return rq[: k + 1] if k < rq.size else None  # lines 8-9

    # --- the deferral predictor ----------------------------------------------------------

    def _predict(self, view, j: int, jr: np.ndarray, saves: np.ndarray, now: float) -> float:
        """Alg. 1 line 4: X for j_new and J_r (0 = preempt now), in s."""
        bo = self.predictor
        if bo is None:
            return 0.0
        sub = view.job_submit[: self._n_arrived]
        lo = int(np.searchsorted(sub, now - self.window, side="right"))
        k = sub.size - lo
        gap = (sub[-1] - sub[lo]) / (k - 1) if k >= 2 else self.window  # choice 6
        p = float(saves.max())  # choice 7
        t_new = float(view.job_remaining[j])
        load = float(view.job_load_s[j])
        c = np.log1p(np.array([gap, t_new, load, p]))  # eq. 5
        s = bo.suggest(c)
        x = s.x if s.x >= 0.5 * view.slot_s else 0.0  # choice 8
        if s.stage != "exploitation":  # observe bootstrap and acquisition samples
            sample = _Sample(s.x, c, now, p, load, t_new)
            due = now + max(x, p + load)
            if due <= now + _EPS:
                self._observe(view, sample)
            else:
                heapq.heappush(self._due, (due, self._next_seq(), sample))
        return x

    def _observe(self, view, s: _Sample) -> None:
        """F for a sample (choice 1) and the GP update with f = |X - F| (eq. 4)."""
        assert self.predictor is not None
        sub = view.job_submit[: self._n_arrived]
        a = int(np.searchsorted(sub, s.t0 + s.p, side="right"))  # Delta > p
        b = int(np.searchsorted(sub, s.t0 + s.p + s.load + _EPS, side="right"))  # <= p + l
        hit = (view.job_duration[a:b] < s.t_new).nonzero()[0]
        f_time = float(sub[a + hit[0]] - s.t0) if hit.size else 0.0
        self.predictor.observe(s.x, s.c, abs(s.x - f_time))

    # --- actions -------------------------------------------------------------------------

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _start(self, view, j: int, gpus: np.ndarray) -> None:
        self._actions.append(Start(j, gpus.astype(np.int32)))
        self._idle(view)[gpus] = False
        self._taken[j] = True
        self._touched.append(j)

    def _preempt_and_start(self, view, j: int, jr: np.ndarray, saves: np.ndarray) -> None:
        """Pause-and-save all of J_r and start j on the idle GPUs plus theirs (choice 9).

        If some job of J_r saves, j's GPUs are promised to it and the Start is issued at
        the decision point where the last save ends.
        """
        idle = self._idle(view).nonzero()[0]
        held = [(view.gpu_job == k).any(axis=1).nonzero()[0] for k in jr.tolist()]
        gpus = np.concatenate([idle, *held])[: int(view.job_n_gpus[j])]
        for k in jr.tolist():
            self._actions.append(Preempt(k, reason="for a shorter arrival (Alg. 1 line 5)"))
            self._taken[k] = True
            self._touched.append(k)
        if saves.any():
            self._promised[j] = gpus
            self._reserved[gpus] = True
            self._idle(view)[gpus] = False
            self._waiting[j] = True
        else:  # every job of J_r releases its GPUs at once
            self._start(view, j, gpus)

    @staticmethod
    def _saves(view, jr: np.ndarray) -> np.ndarray:
        """Pause-and-save time each job of J_r will pay if preempted now, s (choice 7)."""
        status = view.job_status[jr]
        trained = (status == RUNNING) & (view.now > view.job_phase_end[jr] + _EPS)
        return np.where(trained, view.job_save_s[jr], 0.0)

    def _place(self, view, g: int) -> np.ndarray:
        """``g`` idle GPUs: the fullest server that fits, else the servers with most idle."""
        free, off = self._idle(view), self._server_start
        per = np.bincount(self._gpu_server[free], minlength=len(off) - 1).tolist()
        best, most = -1, off[-1] + 1
        for s, n in enumerate(per):  # best fit, lowest index on ties
            if g <= n < most:
                best, most = s, n
        if best >= 0:
            return off[best] + free[off[best] : off[best + 1]].nonzero()[0][:g]
        parts, got = [], 0
        for s in sorted(range(len(per)), key=lambda s: -per[s]):  # stable: lowest index first
            take = min(per[s], g - got)
            parts.append(off[s] + free[off[s] : off[s + 1]].nonzero()[0][:take])
            got += take
            if got == g:
                break
        return np.concatenate(parts)
