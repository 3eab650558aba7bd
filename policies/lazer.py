"""Lazer: preempt on arrival for shorter jobs, deferred by a Bayesian-optimised time to avoid futile preemptions.

Y. Go, C. Shin, M. Kang, J. Hwang, C. Yoo and G. Yang, "Making Sense of Job Preemption for
Distributed Deep Learning Acceleration", DAC 2026, doi:10.1145/3770743.3804432.
Implements Alg. 1 (Sec. 4), the scheduling orchestrator of Alg. 2 (Sec. 4.1) and the
deferral predictor of Sec. 4.2 (eq. 3-5) on :class:`gpusched.algorithms.bayesopt.BayesOpt`
(F of eq. 4 and the context: :mod:`gpusched.algorithms.deferral`). :meth:`LazerPolicy.decide`
reads like Alg. 1-2; :meth:`LazerPolicy.fused` hands the same rule to the kernel
(``KEY_LAZER``), which asks :meth:`LazerPolicy.answer` for each X.

* Alg. 1 lines 1-4: on the arrival of j_new the orchestrator looks for J_r; none -> WQ;
  else X from the deferral predictor, with the context c of eq. 5.
* Alg. 2: RQ sorted by descending remaining duration, taken while
  :math:`T'_{j_{new}} < T'_{J_r^i}` until avail_gpus >= Demand(j_new), else no J_r.
* line 5: X = 0 -> preempt J_r (each pauses and saves, then requeues), start j_new.
* lines 6-10: X > 0 -> j_new to DWQ, J_r to DRQ (they keep running; no other arrival may
  take them); after X (a timer in simulated time) both leave, the orchestrator runs again
  for j_new: no J_r2 -> WQ, else preempt J_r2 and start j_new. No prediction there.
* lines 11-17: on a completion, WQ by ascending remaining duration, each job whose demand
  fits the GPUs still secured starts. WQ jobs never preempt (Sec. 4: "WQ jobs cannot
  preempt a running job unless one completes").
* Deferral predictor: :math:`X = \\arg\\max_{X \\in [0, h]} P(|X - F| = 0)`, h =
  ``max_defer`` (100 s), bootstrap M = ``bootstrap`` (10), acquisition by noisy EI until
  ``min_updates`` (100) updates and EI below ``ei_stop`` (10 %), then exploitation on a
  frozen GP; only bootstrap and acquisition samples are observed.

Where the paper is silent or ambiguous, and what we chose:

1. F is the load a futile preemption would waste, :math:`\\Delta - p` (eq. 2 and 4; see
   :mod:`gpusched.algorithms.deferral`), known at :math:`t_0 + \\max(X, p + \\ell)`.
2. RQ: jobs holding GPUs that train, and (``loading_in_rq``, default) those still loading,
   minus DRQ. Sec. 4.2 describes Lazer's own futile preemption ("during the loading of
   j_new, another newly arriving job with higher priority preempts it immediately") and
   Table 2 gives Lazer futile time, which needs loading victims. ``loading_in_rq=false``
   is the other reading ("RQ to hold the running job status", Fig. 8c's zero futile time):
   a loading job is never preempted. Saving jobs are leaving; a job whose start waits for a
   save is in neither RQ nor WQ; a job started or preempted at this decision point is no
   candidate for a later event of the same point.
3. Idle GPUs count towards avail_gpus first: if enough are idle, j_new starts at once
   without a prediction (no preemption is needed).
4. "Secured GPUs" (line 12) are all idle GPUs at that moment less those promised.
5. One decision point: starts whose saves ended, the completion handler (once, if a job
   finished), each arrival in submission order, each due deferral in timer order.
6. :math:`\\overline{\\Delta A}` is the mean gap over the arrivals of the last ``window``
   s; :math:`p_k` is the save j_r would really pay (0 if it has not trained since its start).
7. A deferral shorter than half a slot is none; others fire at the first decision point at
   or after now + X; exploitation picks X on that slot grid.
8. Placement: best fit on idle GPUs; a start by preemption takes the idle GPUs, then those
   of J_r in orchestrator order, and waits (its GPUs promised) until every save ends. Ties
   in remaining duration: the later-submitted job is preempted first, the earlier one
   leaves WQ first.
9. Alg. 2 counts GPUs, not servers: a cluster without ``allow_spread`` is refused.

The module runs past 200 lines because Alg. 1 has three event handlers (arrival, deferral
end, completion) and a start that waits for saves, each a few lines of its own, and because
the nine readings above are stated here; the predictor's support lives in
:mod:`gpusched.algorithms.deferral` and :mod:`gpusched.algorithms.bayesopt`.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np

from gpusched.algorithms.bayesopt import BayesOpt
from gpusched.algorithms.deferral import Outcomes, Sample, context, place_on, slot_grid
from gpusched.core.policy import Decision, Fused, Note, Preempt, Range, Start
from gpusched.core.state import FLAG_LOADING_IN_RQ, KEY_LAZER, LOADING, RUNNING

_EPS = 1e-9  # s, as the engine's tolerance on times


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
        loading_in_rq: bool = True,
        rng: np.random.Generator | None = None,
    ) -> None:
        self.max_defer = float(max_defer)
        self.window = float(window)
        self.loading_in_rq = bool(loading_in_rq)
        #: the deferral predictor (``suggest(c)``, ``observe(x, c, f)``); None when
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
                rng=rng if rng is not None else np.random.default_rng(0),
            )
        self._outcomes = Outcomes()
        self._grid_set = False
        self.xs: list[float] = []  # every X predicted, s
        self.n_samples = 0  # of them, bootstrap and acquisition (the rest exploit)
        self.n_deferred = 0  # deferrals so far (X > 0)

    def fused(self) -> Fused:
        """The same rule in the kernel; it asks :meth:`answer` for X (none if max_defer = 0)."""
        flags = FLAG_LOADING_IN_RQ if self.loading_in_rq else 0
        return Fused(KEY_LAZER, flags=flags, asks=self.predictor is not None)

    def prepare(self, jobs, cluster) -> None:
        """Allocate the queues' masks (DWQ, DRQ, starts waiting for saves)."""
        from gpusched.errors import PolicyError

        if not cluster.allow_spread:
            raise PolicyError(
                f"policy '{self.name}' selects GPUs by count (Alg. 2) and needs a cluster "
                f"that allows spreading a job over servers (cluster '{cluster.name}' sets "
                "allow_spread = false)"
            )
        n = len(jobs)
        self._server_start = cluster.server_start().tolist()
        self._in_dwq = np.zeros(n, dtype=bool)
        self._in_drq = np.zeros(n, dtype=bool)
        self._taken = np.zeros(n, dtype=bool)  # started or preempted at this decision point
        self._reserved = np.zeros(cluster.n_gpus, dtype=bool)  # GPUs promised to a start
        self._promised: dict[int, np.ndarray] = {}  # job waiting for saves -> its GPUs
        self._timers: list[tuple[float, int, int, np.ndarray]] = []  # (wake, seq, j_new, J_r)

    def status_line(self, view, now: float) -> str:
        """The predictor's stage and the deferrals so far, for the TUI."""
        bo = self.predictor
        stage = f"{bo.stage}, {bo.n_updates} GP updates" if bo is not None else "no deferral"
        stage = stage if isinstance(bo, BayesOpt | None) else "stub predictor"
        return f"Lazer {stage}; {self.n_deferred} deferrals of {len(self.xs)} predictions"

    def summary(self) -> dict:
        """summary.json's ``lazer``: the predictor's stage and the deferrals it chose."""
        bo, xs = self.predictor, np.asarray(self.xs)
        late = xs[self.n_samples :]  # exploitation
        return {
            "lazer": {
                "stage": getattr(bo, "stage", "none"),
                "gp_updates": int(getattr(bo, "n_updates", 0)),
                "predictions": int(xs.size),
                "deferrals": self.n_deferred,
                "mean_x_s": float(xs.mean()) if xs.size else 0.0,
                "exploit_predictions": int(late.size),
                "exploit_mean_x_s": float(late.mean()) if late.size else 0.0,
                "exploit_deferred_share": float((late > 0).mean()) if late.size else 0.0,
            }
        }

    # --- one decision point (Alg. 1) ----------------------------------------------------

    def decide(self, view, now: float) -> Decision:
        self._actions: list[Start | Preempt | Note] = []
        self._touched: list[int] = []
        self._free: np.ndarray | None = None  # idle GPUs not promised, set on first use
        for j, gpus in list(self._promised.items()):  # choice 8: saves ended
            if (view.gpu_n_jobs[gpus] == 0).all():
                del self._promised[j]
                self._reserved[gpus] = False
                self._start(view, j, gpus)
        arrived = view.arrived
        if view.finished.size:
            self._on_completion(view, int(arrived[0]) if arrived.size else view.job_n_gpus.size)
        for j in arrived.tolist():
            self._on_arrival(view, j, now)
        self._timers.sort(key=lambda t: t[:2])
        while self._timers and self._timers[0][0] <= now + _EPS:
            _, _, j, jr = self._timers.pop(0)
            self._on_timer(view, j, jr)
        self._taken[self._touched] = False
        wake = self._timers[0][0] if self._timers else None
        return Decision(actions=self._actions, wake_at=wake)

    def _on_arrival(self, view, j: int, now: float) -> None:
        """Alg. 1 lines 1-7."""
        jr = self._orchestrate(view, j)  # line 2
        if jr is None:
            return  # line 3: j stays in WQ
        if jr.size == 0:  # choice 3: enough idle GPUs
            self._start(view, j, place_on(self._idle(view), self._server_start, view.job_n_gpus[j]))
            return
        x = self.answer(view, now, j, float(self._saves(view, jr).max()))  # line 4
        if x == 0.0:
            self._preempt_and_start(view, j, jr)  # line 5
            return
        self._in_dwq[j] = self._in_drq[jr] = True  # lines 6-7: the deferral "thread"
        self._actions.append(Note(j, f"deferred {x:.3g} s before preempting (Alg. 1 line 7)"))
        self._timers.append((now + x, len(self.xs), j, jr))

    def _on_timer(self, view, j: int, jr: np.ndarray) -> None:
        """Alg. 1 lines 7-10: restore DRQ to RQ, take j out of DWQ, orchestrate again."""
        self._in_dwq[j] = self._in_drq[jr] = False
        jr2 = self._orchestrate(view, j)  # line 8
        if jr2 is None:
            return  # line 9: j stays in WQ
        if jr2.size == 0:
            self._start(view, j, place_on(self._idle(view), self._server_start, view.job_n_gpus[j]))
        else:
            self._preempt_and_start(view, j, jr2)  # line 10

    def _on_completion(self, view, first_new: int) -> None:
        """Alg. 1 lines 11-17: WQ by ascending remaining duration into the secured GPUs."""
        q = view.queued  # ascending index: ties in remaining go to the earlier job
        q = q[(q < first_new) & ~(self._in_dwq[q] | self._taken[q])]  # this point's arrivals
        q = q[[k not in self._promised for k in q.tolist()]] if self._promised else q
        secured = np.count_nonzero(self._idle(view)) if q.size else 0  # line 12 (choice 4)
        for k in q[np.argsort(view.job_remaining[q], kind="stable")].tolist():  # lines 13-14
            g = int(view.job_n_gpus[k])
            if secured == 0:
                break
            if g <= secured:  # line 15
                self._start(view, k, place_on(self._idle(view), self._server_start, g))  # 16
                secured -= g  # line 17

    def _orchestrate(self, view, j: int) -> np.ndarray | None:
        """Alg. 2: J_r for ``j`` (empty if idle GPUs suffice), or None if none exists."""
        g = int(view.job_n_gpus[j])
        idle = np.count_nonzero(self._idle(view))
        if g <= idle:
            return np.empty(0, dtype=np.int64)  # choice 3
        run = view.running
        status = view.job_status[run]
        active = (status == RUNNING) | ((status == LOADING) & self.loading_in_rq)  # choice 2
        rq = run[active & ~self._in_drq[run] & ~self._taken[run]]
        rem = view.job_remaining[rq]
        longer = rem > view.job_remaining[j]  # line 5: T'_new < T'_{J_r^i}
        rq, rem = rq[longer], rem[longer]
        rq = rq[np.lexsort((-rq, -rem))]  # line 3: descending remaining, later job first
        avail = idle + np.cumsum(view.job_n_gpus[rq])  # line 7
        k = int(np.searchsorted(avail, g))  # first prefix with avail_gpus >= Demand(j_new)
        return rq[: k + 1] if k < rq.size else None  # lines 8-9

    # --- the deferral predictor (Sec. 4.2) ----------------------------------------------

    def answer(self, view, now: float, j: int, p: float) -> float:
        """Alg. 1 line 4: X for j_new (``j``) whose J_r would pause-and-save for up to ``p``
        s; 0 = preempt now. The kernel's fused rule asks this too."""
        bo = self.predictor
        if bo is None:
            return 0.0
        n = int(np.searchsorted(view.job_submit, now + _EPS, side="right"))  # arrived so far
        self._outcomes.report(bo, view.job_submit[:n], view.job_duration[:n], now)
        t_new, load = float(view.job_remaining[j]), float(view.job_load_s[j])
        c = context(view.job_submit, n, now, self.window, t_new, load, p)  # eq. 5
        if not self._grid_set:  # eq. 3 over the deferrals the slotted clock tells apart
            getattr(bo, "set_grid", lambda g: None)(slot_grid(self.max_defer, view.slot_s))
            self._grid_set = True
        s = bo.suggest(c)
        x = s.x if s.x >= 0.5 * view.slot_s else 0.0  # choice 7
        if s.stage != "exploitation":  # observe bootstrap and acquisition samples
            self._outcomes.add(Sample(s.x, c, now, p, load, t_new))
            self.n_samples += 1
        self.xs.append(x)
        self.n_deferred += x > 0.0
        return x

    # --- actions -------------------------------------------------------------------------

    def _idle(self, view) -> np.ndarray:
        """Mask of the GPUs free for a start now: idle, not promised, not taken here."""
        if self._free is None:
            self._free = (view.gpu_n_jobs == 0) & ~self._reserved
        return self._free

    def _start(self, view, j: int, gpus: np.ndarray) -> None:
        self._actions.append(Start(j, gpus.astype(np.int32)))
        self._idle(view)[gpus] = False
        self._taken[j] = True
        self._touched.append(j)

    def _preempt_and_start(self, view, j: int, jr: np.ndarray) -> None:
        """Pause-and-save all of J_r and start j on the idle GPUs plus theirs (choice 8);
        if some job of J_r saves, j's GPUs are promised and it starts when the saves end."""
        held = [(view.gpu_job == k).any(axis=1).nonzero()[0] for k in jr.tolist()]
        gpus = np.sort(np.concatenate([self._idle(view).nonzero()[0], *held])[: view.job_n_gpus[j]])
        for k in jr.tolist():
            self._actions.append(Preempt(k, reason="for a shorter arrival (Alg. 1 line 5)"))
            self._taken[k] = True
            self._touched.append(k)
        if self._saves(view, jr).any():
            self._promised[j] = gpus
            self._reserved[gpus] = True
            self._idle(view)[gpus] = False
        else:  # every job of J_r releases its GPUs at once
            self._start(view, j, gpus)

    @staticmethod
    def _saves(view, jr: np.ndarray) -> np.ndarray:
        """Pause-and-save time each job of J_r will pay if preempted now, s (choice 6)."""
        status = view.job_status[jr]
        trained = (status == RUNNING) & (view.now > view.job_phase_end[jr] + _EPS)
        return np.where(trained, view.job_save_s[jr], 0.0)
