"""The gang lifecycle: starts on named or default GPUs, preemptions, and starts that wait
for saves to end.

docs/architecture.md, "Job lifecycle": waiting, loading, training, pause-and-save (W + L + T + P = JCT).
The kernel keeps the phases (``kernel.start_on``, ``kernel.preempt``); here the engine
checks a policy's Start and Preempt and applies them. A start onto GPUs still held by saving
jobs is *pending* and made at the decision point of the save's end, before the policy is
called.

*Elastic gangs*: when the performance model declares ``gang_range() -> (lo, hi)`` (per-job
arrays), a Start may name any number of GPUs in ``[lo, hi]`` of its job, and the job's
``job_n_gpus`` becomes that count for the stint (its attained service, its rate and the
event log follow it). A re-allocation is a Preempt and a Start in one decision: with no
save time the job releases its GPUs at once and pays its load time once, on the new ones.
The GPU-seconds a job held are kept per stint size (:meth:`GangLifecycle.held_gpu_s`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusched.core.policy import Preempt, Start
from gpusched.core.sharing import Sharing
from gpusched.core.state import LOADING, QUEUED, RUNNING, SAVING
from gpusched.errors import InvariantError

__all__ = ["GangLifecycle"]


class GangLifecycle(Sharing):
    """Start and Preempt of gang jobs on GPU indices (a start asks the performance model)."""

    def _apply_start(self, action: Start, now: float) -> None:
        st = self.state
        j = self._check_job(action.job, now)
        if self.ledger is not None:
            raise self._fail(j, now, "is placed by roles: start it with Allocate, not Start")
        err = self._status_problem(j, now, (QUEUED,))
        if err:
            raise err
        g = int(st.job_n_gpus[j])
        lo, hi = (g, g) if self._elastic is None else (self._elastic[0][j], self._elastic[1][j])
        self._take_config(j, action.config, now)
        if action.gpus is None:
            self._check_start(j, np.empty(0, np.int32), now)  # alone: only its config
            if not self.k.place_consolidated(j, self.cfg.allow_spread):
                raise self._fail(j, now, f"needs {g} GPUs but only {self.view.free_gpus} are idle")
            self.k.start_job(j, now)
            return
        try:
            gpus = np.asarray(action.gpus)
        except (ValueError, TypeError):
            gpus = np.asarray([None], dtype=object)
        if gpus.ndim != 1 or not lo <= gpus.size <= hi or gpus.dtype.kind not in "iu":
            need = f"exactly {g}" if lo == hi else f"{lo} to {hi}"
            raise self._fail(j, now, f"needs {need} GPU indices, got {action.gpus!r}")
        g = int(gpus.size)
        n_gpus = st.gpu_n_jobs.shape[0]
        as_list = gpus.tolist()  # small lists: Python is cheaper than numpy calls here
        if g and (min(as_list) < 0 or max(as_list) >= n_gpus):
            raise self._fail(j, now, f"unknown GPU index in {as_list} (cluster has {n_gpus})")
        if len(set(as_list)) != g:
            raise self._fail(j, now, f"lists a GPU twice: {as_list}")
        gpus = np.asarray(as_list, dtype=np.int32)
        if not self.cfg.allow_spread and len(set(st.gpu_server[gpus].tolist())) > 1:
            raise self._fail(j, now, "spans servers but the cluster forbids spreading")
        if self._pending:
            self._check_promised(j, gpus, now)
        if g and st.gpu_n_jobs[gpus].max() >= st.gpu_job.shape[1]:
            full, busy = self._blockers(gpus)
            if busy.size == 0:
                # docs/architecture.md, "Job lifecycle": a start onto GPUs still saving is honoured
                # when the save ends (the save end is a decision point)
                self._pending[j] = gpus
                return
            gpu = int(gpus[full][0])
            holder = self.jobs.job_id[st.gpu_job[gpu, 0]]
            raise self._fail(j, now, f"GPU {gpu} is already allocated (to job '{holder}')")
        self._check_start(j, gpus, now)
        self._start_on(j, gpus, now)

    def _start_on(self, j: int, gpus: np.ndarray, now: float) -> None:
        """Start ``j`` on ``gpus`` (checked); an elastic job takes their count first."""
        if self._elastic is not None and gpus.size != self.state.job_n_gpus[j]:
            self._resize(j, int(gpus.size))
        self.k.start_on(j, gpus, now)

    def _setup_elastic(self, perf: object, n_gpus: np.ndarray, max_gang: int) -> np.ndarray | None:
        """Read the performance model's ``gang_range()``; return each job's room of GPUs
        (None: fixed gangs)."""
        self._elastic = None
        got = getattr(perf, "gang_range", None)
        if got is None:
            return None
        lo, hi = (np.asarray(a, dtype=np.int64) for a in got())
        n = n_gpus.shape[0]
        if lo.shape != (n,) or hi.shape != (n,):
            raise InvariantError(
                "the performance model's gang_range() must give one (lo, hi) per job"
            )
        bad = (lo < 1) | (lo > n_gpus) | (hi < n_gpus) | (hi > max_gang)
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise InvariantError(
                f"the performance model's gang range of job '{self.jobs.job_id[j]}' is "
                f"[{int(lo[j])}, {int(hi[j])}]; expected 1 <= lo <= its {int(n_gpus[j])} "
                f"GPUs <= hi <= {max_gang}"
            )
        self._elastic = (lo, hi)
        self._held_prev = np.zeros(n)  # GPU-s of load and save at earlier stint sizes
        self._phase_mark = np.zeros(n)  # load + save s spent when the size last changed
        return hi

    def _resize(self, j: int, g: int) -> None:
        """An elastic job (queued) takes ``g`` GPUs for its next stint."""
        st = self.state
        spent = st.job_load_spent_s[j] + st.job_save_spent_s[j]
        self._held_prev[j] += (spent - self._phase_mark[j]) * st.job_n_gpus[j]
        self._phase_mark[j] = spent
        st.job_n_gpus[j] = g

    def held_gpu_s(self) -> np.ndarray | None:
        """GPU-seconds each elastic job held its GPUs (loading, training, saving; None for
        fixed gangs, where it is the time held times the gang size). Call after ``sync``."""
        if self._elastic is None:
            return None
        st = self.state
        spent = st.job_load_spent_s + st.job_save_spent_s
        held: np.ndarray = (
            st.job_attained + self._held_prev + (spent - self._phase_mark) * st.job_n_gpus
        )
        return held

    def _apply_preempt(self, action: Preempt, now: float) -> None:
        """Preempt a job that holds GPUs, workers or machines' resources: it saves (if it
        has a save time) and returns to the queue; a role job's resources and a task's
        worker are released at once."""
        if type(action.job) is np.ndarray:
            self._apply_preempt_many(action, now)
            return
        j = self._check_job(action.job, now)
        err = self._status_problem(j, now, (RUNNING, LOADING))
        if err:
            raise err
        if self.ledger is not None:
            self.ledger.release(j, now)
        if self.book is not None:
            why = self.book.preempt_problem(j)
            if why:
                raise self._fail(j, now, why)
            self.k.preempt(j, now)
            self.book.released(j, now, in_decision=True)
        else:
            self.k.preempt(j, now)

    def _apply_preempt_many(self, action: Preempt, now: float) -> None:
        """Preempt of several tasks at once (a 1-D integer array): checked in one go, then
        applied as one Preempt each in that order, with the rules and the messages of the
        one-task form (which reports the first bad one)."""
        book = self.book
        st = self.state
        jobs: Any = action.job
        ok = (
            book is not None
            and self.ledger is None
            and action.reason is None
            and jobs.ndim == 1
            and jobs.dtype.kind in "iu"
        )
        if ok and jobs.size:
            assert book is not None
            ok = bool(
                jobs.min() >= 0
                and jobs.max() < st.job_status.shape[0]
                and len(set(jobs.tolist())) == jobs.size
            )
            if ok:
                status = st.job_status[jobs]
                ok = bool(((status == RUNNING) | (status == LOADING)).all())
            ok = ok and book.preempt_many_ok(jobs)
        if not ok:  # the one-task form names the first problem
            if book is None or self.ledger is not None or jobs.ndim != 1:
                raise self._fail(
                    None,
                    now,
                    f"Preempt of several at once is for tasks, as a 1-D integer array; got {jobs!r}",
                )
            if action.reason is not None:
                raise self._fail(None, now, "Preempt of several tasks takes no reason")
            for j in jobs.tolist():
                self._apply_preempt(Preempt(j), now)
            raise self._fail(  # (what is left)
                None, now, "Preempt of several tasks needs a 1-D integer array naming each once"
            )
        assert book is not None
        preempt = self.k.preempt
        for j in jobs.tolist():
            preempt(j, now)
            book.released(j, now, in_decision=True)

    def _check_promised(self, j: int, gpus: np.ndarray, now: float) -> None:
        """Refuse a start of a job whose start already waits, or onto GPUs promised to
        another job's waiting start."""
        if j in self._pending:
            raise self._fail(j, now, "already has a start waiting for saves to end")
        for other, promised in self._pending.items():
            both = np.intersect1d(gpus, promised)
            if both.size:
                raise self._fail(
                    j,
                    now,
                    f"GPU {int(both[0])} is promised to job '{self.jobs.job_id[other]}' "
                    "(its start waits for a save to end)",
                )

    def _blockers(self, gpus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which of ``gpus`` are full (a mask), and the jobs on them that are not saving."""
        st = self.state
        full = st.gpu_n_jobs[gpus] >= st.gpu_job.shape[1]
        holders = st.gpu_job[gpus[full]]
        holders = holders[holders >= 0]
        return full, holders[st.job_status[holders] != SAVING]

    def _honour_pending(self, now: float) -> None:
        """Start every pending job whose GPUs the saving jobs have released, in the order
        the starts were asked for; drop those the policy started otherwise meanwhile."""
        st = self.state
        for j, gpus in list(self._pending.items()):
            if st.job_status[j] != QUEUED:
                del self._pending[j]  # started by an order fill meanwhile
                continue
            full, taken = self._blockers(gpus)
            if not full.any():
                del self._pending[j]
                self._check_start(j, gpus, now)
                self._start_on(j, gpus, now)
                continue
            if taken.size:
                raise self._fail(
                    j,
                    now,
                    f"its start waiting for saves to end on GPUs {gpus.tolist()} found one "
                    f"taken by job '{self.jobs.job_id[taken[0]]}'",
                )
        self.k.compact_queue(0)
        if self.perf is not None:
            self._apply_perf(now)
