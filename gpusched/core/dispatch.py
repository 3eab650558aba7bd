"""Jobs made of tasks on typed workers in tiers: the engine's side of the task book.

docs/architecture.md, "Jobs made of tasks" (the edge-cloud family): a task runs on one
worker of its job's type, is bound to it once placed (no migration, unless the policy
declares ``migrates = True``: then a placed task holding no worker may start on another
worker of its type, its data shipping again), is ready only after its data has shipped
there, and every job with a task on a worker holds one parameter server.
The rules are :class:`~gpusched.core.tasks.TaskBook`'s; here the engine checks a policy's
Start of a task, :class:`~gpusched.core.policy.Dispatch` and
:class:`~gpusched.core.policy.HostPS` and applies them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusched.core.checks import Mechanism
from gpusched.core.policy import Dispatch, HostPS, Start
from gpusched.core.state import QUEUED
from gpusched.core.tasks import TaskBook
from gpusched.errors import PolicyError, show_name

__all__ = ["TaskDispatch"]


class TaskDispatch(Mechanism):
    """Start, Dispatch and HostPS of tasks, by the rules of the task book."""

    def _setup_tasks(self, tasks: Any, layout: Any) -> None:
        """Keep the task book when the jobs are made of tasks (docs/architecture.md,
        "Jobs made of tasks"); refuse a policy that cannot run them."""
        runs = bool(getattr(self.policy, "runs_tasks", False))
        needs = bool(getattr(self.policy, "needs_tasks", False))
        if tasks is None:
            if needs and len(self.jobs):
                raise PolicyError(
                    f"policy '{self.name}' schedules jobs made of data chunks on typed workers, "
                    "but this trace has none (rows with the 'chunks' column)"
                )
            return
        if not runs:
            raise PolicyError(
                f"policy '{self.name}' places gangs on GPUs, but the jobs of "
                f"{show_name(self.jobs.source or '<trace>')} are made of data chunks on typed "
                "workers: use a policy that runs them (a-online, a-online-e, srtf, tiresias-l, "
                "batchsche)"
            )
        self._refuse_phases(
            "jobs made of tasks (--load-s/--save-s must be 0; shipping a chunk's data is the load)"
        )
        self.book = TaskBook(tasks, layout, self.state, self.k)
        self._one_worker = np.zeros(1, dtype=np.int32)  # start_on's GPU list (kept by none)
        #: tasks started in this decision, still in the kernel's queue (engine._drop_started)
        self._deq = np.zeros(max(len(self.jobs), 1), dtype=np.int32)
        self._n_deq = 0
        self.book.migrates = bool(getattr(self.policy, "migrates", False))
        self.view.tasks = self.book.view

    def _task_worker(self, j: int, value: Any, now: float) -> int:
        """A task action's worker as an int, or a PolicyError."""
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise self._fail(j, now, f"worker must be an integer index, got {value!r}")
        return int(value)

    def _apply_task_start(self, action: Start, now: float) -> None:
        """Start a task on its one worker (the rules of :mod:`gpusched.core.tasks`)."""
        assert self.book is not None
        st = self.state
        j = action.job
        if type(j) is np.ndarray:
            self._apply_task_start_many(action, now)
            return
        if type(j) is not int or not 0 <= j < st.job_status.shape[0]:
            j = self._check_job(j, now)
        if st.job_status[j] != QUEUED:
            raise self._status_problem(j, now, (QUEUED,)) or self._fail(j, now, "not queued")
        gpus = action.gpus
        if type(gpus) is np.ndarray and gpus.shape == (1,) and gpus.dtype.kind in "iu":
            w = int(gpus[0])  # the common case, checked in one go
        else:
            try:
                arr = np.asarray(gpus) if gpus is not None else None
            except (ValueError, TypeError):
                arr = None
            if arr is None or arr.shape != (1,):
                raise self._fail(j, now, f"a task starts on exactly one named worker, got {gpus!r}")
            w = self._task_worker(j, arr[0].item() if arr.dtype != object else arr[0], now)
        why = self.book.start_problem(j, w, now)
        if why:
            raise self._fail(j, now, why)
        if st.gpu_n_jobs[w] > 0:
            holder = self.jobs.job_id[st.gpu_job[w, 0]]
            raise self._fail(j, now, f"worker {w} is busy (with task '{holder}'; eq. 2d)")
        if action.config is not None:
            raise self._fail(j, now, "gives a config, but tasks take none")
        self.book.before_start(j, w, now)
        one = self._one_worker
        one[0] = w
        self.k.start_on(j, one, now)
        self.book.after_start(j)
        self._deq[self._n_deq] = j  # out of the kernel's queue at the decision's end
        self._n_deq += 1

    def _apply_task_start_many(self, action: Start, now: float) -> None:
        """Start of several tasks at once (``job`` and ``gpus`` two 1-D integer arrays of
        one length, task ``job[i]`` on worker ``gpus[i]``): checked in one go, then applied
        as one Start each in that order, with the rules and the messages of the one-task
        form (which reports the first bad one)."""
        book = self.book
        assert book is not None
        st = self.state
        jobs: Any = action.job
        ws: Any = action.gpus
        ok = _int_pairs(jobs, ws) and action.config is None and action.reason is None
        if ok and jobs.size:
            n = st.job_status.shape[0]
            ok = bool(
                jobs.min() >= 0
                and jobs.max() < n
                and ws.min() >= 0
                and ws.max() < book.layout.n_workers
                and len(set(jobs.tolist())) == jobs.size
                and len(set(ws.tolist())) == ws.size
            )
            ok = ok and bool((st.job_status[jobs] == QUEUED).all())
            ok = ok and bool((st.gpu_n_jobs[ws] == 0).all()) and book.start_many_ok(jobs, ws, now)
        if not ok:  # the one-task form names the first problem
            if type(ws) is not np.ndarray or jobs.ndim != 1 or ws.shape != jobs.shape:
                raise self._fail(
                    None,
                    now,
                    f"Start of several tasks needs two 1-D integer arrays of one length, "
                    f"got {jobs!r} and {ws!r}",
                )
            if action.reason is not None:
                raise self._fail(None, now, "Start of several tasks takes no reason")
            for j, w in zip(jobs.tolist(), ws.tolist(), strict=True):
                self._apply_task_start(Start(j, np.asarray([w]), action.config), now)
            raise self._fail(  # (what is left)
                None,
                now,
                "Start of several tasks needs two 1-D integer arrays naming each task and "
                "each worker once",
            )
        book.start_many(jobs.tolist(), ws.tolist(), now, self.k.start_on)
        m = self._n_deq
        self._deq[m : m + jobs.size] = jobs
        self._n_deq = m + jobs.size

    def _apply_dispatch(self, action: Dispatch, now: float) -> None:
        """Place a queued task on a worker without starting it."""
        if self.book is None:
            raise self._fail(None, now, "Dispatch is for jobs made of tasks; this run has none")
        if type(action.job) is np.ndarray:
            self._apply_dispatch_many(action, now)
            return
        st = self.state
        j = action.job
        if type(j) is not int or not 0 <= j < st.job_status.shape[0]:
            j = self._check_job(j, now)
        if st.job_status[j] != QUEUED:
            raise self._status_problem(j, now, (QUEUED,)) or self._fail(j, now, "not queued")
        w = action.worker
        if type(w) is not int:
            w = self._task_worker(j, w, now)
        if self.book.bound[j] >= 0:
            raise self._fail(j, now, f"is placed already (on worker {int(self.book.bound[j])})")
        why = self.book.place_problem(j, w)
        if why:
            raise self._fail(j, now, why)
        self.book.dispatch(j, w, now)
        if self.events is not None:
            ready = float(self.book.ready[j])
            self.events.note(self.state, now, "dispatch", j, f"worker {w}, ready at {ready:.6g} s")

    def _apply_dispatch_many(self, action: Dispatch, now: float) -> None:
        """Dispatch of several tasks at once (arrays): checked and applied in one go, with
        the rules and the messages of the one-task form (which reports the first bad one)."""
        book = self.book
        assert book is not None
        jobs: Any = action.job
        ws: Any = action.worker
        ok = _int_pairs(jobs, ws)
        if ok and jobs.size:
            lay = book.layout
            n = self.state.job_status.shape[0]
            ok = bool(
                jobs.min() >= 0
                and jobs.max() < n
                and ws.min() >= 0
                and ws.max() < lay.n_workers
                and np.unique(jobs).size == jobs.size
            )
            ok = ok and bool((self.state.job_status[jobs] == QUEUED).all())
            ok = ok and bool((book.bound[jobs] < 0).all()) and book.place_many_ok(jobs, ws)
        if not ok:  # the one-task form names the first problem
            if type(ws) is not np.ndarray or jobs.ndim != 1 or ws.shape != jobs.shape:
                raise self._fail(
                    None,
                    now,
                    f"Dispatch of several tasks needs two 1-D integer arrays of one length, "
                    f"got {jobs!r} and {ws!r}",
                )
            for j, w in zip(jobs.tolist(), ws.tolist(), strict=True):
                self._apply_dispatch(Dispatch(j, w), now)
            raise self._fail(None, now, "Dispatch: a task named twice")  # (the one left)
        if not jobs.size:
            return
        book.dispatch_many(jobs, ws, now)
        if self.events is not None:
            for j, w in zip(jobs.tolist(), ws.tolist(), strict=True):
                ready = float(book.ready[j])
                self.events.note(
                    self.state, now, "dispatch", j, f"worker {w}, ready at {ready:.6g} s"
                )

    def _apply_host_ps(self, action: HostPS, now: float) -> None:
        """Put a job's parameter server on a server."""
        book = self.book
        if book is None:
            raise self._fail(None, now, "HostPS is for jobs made of tasks; this run has none")
        p = action.job
        if (
            isinstance(p, bool)
            or not isinstance(p, int | np.integer)
            or not 0 <= p < book.n_parents
        ):
            raise self._fail(None, now, f"HostPS: unknown job index {p!r} (of {book.n_parents})")
        s = self._task_worker(None, action.server, now)  # type: ignore[arg-type]
        why = book.ps_problem(int(p), s, now)
        if why:
            raise self._fail(None, now, f"HostPS: job '{book.job_id[int(p)]}' {why}")
        book.host_ps(int(p), s, now)


def _int_pairs(jobs: Any, ws: Any) -> bool:
    """``jobs`` and ``ws`` are two 1-D integer arrays of one length (the many-task forms)."""
    return bool(
        type(jobs) is np.ndarray
        and type(ws) is np.ndarray
        and jobs.ndim == 1
        and ws.shape == jobs.shape
        and jobs.dtype.kind in "iu"
        and ws.dtype.kind in "iu"
    )
