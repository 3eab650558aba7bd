"""The checks every action of a policy goes through, and the run's invariants.

:class:`Mechanism` is the base of the engine and of each of its mechanisms (lifecycle,
sharing, roles, task dispatch): the parts of a run they share and the checks of a job
index, a job's status and a time a policy gave. :func:`check_invariants` runs after every
run (capacity, time monotone, every job finished unless stopped, work conserved,
JCT = W + L + T + P).
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any

import numpy as np

from gpusched.core.state import (
    F_RESIDUAL,
    FINISHED,
    PENDING,
    REJECTED,
    SAVING,
    STATUS_NAMES,
    KernelConfig,
    SimState,
)
from gpusched.errors import InvariantError, PolicyError

if TYPE_CHECKING:
    from gpusched.core.events import EventLog
    from gpusched.core.jobs import JobTable
    from gpusched.core.ledger import Ledger
    from gpusched.core.tasks import TaskBook
    from gpusched.core.view import View
    from gpusched.io.cluster import ClusterSpec

__all__ = ["Mechanism", "check_invariants"]


class Mechanism:
    """What the engine and each of its mechanisms share: the run's parts (set up by
    :class:`~gpusched.core.engine.Engine`) and the checks every action goes through."""

    jobs: JobTable
    cluster: ClusterSpec
    policy: Any
    name: str  #: the policy's name, for errors
    state: SimState
    cfg: KernelConfig
    k: Any  #: the kernels this run calls (:class:`gpusched.core.jit.Kernels`)
    view: View
    events: EventLog | None
    perf: Any  #: the performance model (None: every job at its static rate)
    roles: Any  #: the job model's roles of jobs placed by roles (None: none)
    ledger: Ledger | None
    book: TaskBook | None
    #: the configuration each started job carries (Start.config), for its lifetime
    _config: dict[int, Any]
    #: starts waiting for saves to end: job -> its GPUs (see GangLifecycle._apply_start)
    _pending: dict[int, np.ndarray]
    _started_buf: np.ndarray
    #: elastic gangs: each job's fewest and most GPUs (None: every gang has its fixed size)
    _elastic: tuple[np.ndarray, np.ndarray] | None

    def _fail(self, job: int | None, now: float, what: str) -> PolicyError:
        who = f" job '{self.jobs.job_id[job]}' (index {job})" if job is not None else ""
        return PolicyError(f"policy '{self.name}' at t={now + 0.0:.6g} s:{who} {what}")

    def _check_job(self, j: Any, now: float) -> int:
        if isinstance(j, bool) or not isinstance(j, int | np.integer):
            raise self._fail(None, now, f"job index must be an integer, got {j!r}")
        idx = int(j)
        if not 0 <= idx < len(self.jobs):
            raise self._fail(
                None, now, f"unknown job index {idx} (there are {len(self.jobs)} jobs)"
            )
        return idx

    def _as_time(self, value: Any, what: str, now: float) -> float:
        """A policy's time value as a float (s), or a PolicyError naming what was wrong."""
        if type(value) is not float and (
            isinstance(value, bool) or not isinstance(value, numbers.Real)
        ):
            raise self._fail(None, now, f"{what} {value!r}: expected a time in s (a number)")
        t = float(value)
        if t != t:  # NaN
            raise self._fail(None, now, f"{what} NaN: expected a time in s")
        return t

    def _status_problem(self, j: int, now: float, allowed: tuple[int, ...]) -> PolicyError | None:
        status = int(self.state.job_status[j])
        if status in allowed:
            return None
        if status == PENDING:
            return self._fail(
                j,
                now,
                f"acted on before its arrival (submitted at {self.state.job_submit[j]:.6g} s)",
            )
        return self._fail(j, now, f"is {STATUS_NAMES[status]}, cannot be acted on this way")

    def _refuse_phases(self, what: str) -> None:
        """Load and save phases are modelled for gang jobs only: refuse them for ``what``."""
        st = self.state
        if (st.job_load_s > 0).any() or (st.job_save_s > 0).any():
            raise PolicyError(f"load and save phases are not modelled for {what}")


def check_invariants(
    st: SimState,
    tl: dict[str, np.ndarray],
    capacity: int,
    *,
    stopped: bool,
    constant_rate: bool = True,
) -> None:
    """Raise :class:`InvariantError` if the run broke a rule of the model.

    Checked: no GPU over its job capacity and none counted busy beyond the cluster,
    time strictly increasing, every job finished unless the run was stopped early,
    work conserved (a finished job has no work left and, when every job keeps a
    constant rate, ran exactly work / rate), JCT = wait + load + train + save for every
    finished job, JCT >= run time, starts after submission.
    """
    n_gpus = st.gpu_n_jobs.shape[0]
    if st.gpu_n_jobs.size and (st.gpu_n_jobs.max() > capacity or st.gpu_n_jobs.min() < 0):
        raise InvariantError("a GPU holds more jobs than its capacity")
    if tl["busy_gpus"].size and tl["busy_gpus"].max() > n_gpus:
        raise InvariantError("more GPUs busy than the cluster has")
    if tl["time_s"].size > 1 and not (np.diff(tl["time_s"]) > 0).all():
        raise InvariantError("simulated time is not strictly increasing")
    done = st.job_status == FINISHED
    ended = done | (st.job_status == REJECTED)
    if not stopped and not ended.all():
        raise InvariantError(f"{int((~ended).sum())} job(s) never finished")
    if (st.job_status == SAVING).any() and not stopped:
        raise InvariantError("a job is still saving at the end")
    if st.sim_f[F_RESIDUAL] > 1e-6:
        raise InvariantError(
            f"work not conserved: a job finished with {float(st.sim_f[F_RESIDUAL]):.3g} of its "
            "work left or overdone"
        )
    for lo in range(0, len(done), _CHECK_ROWS):  # (the copies of a slice: memory at 1M jobs)
        _check_jobs(st, slice(lo, lo + _CHECK_ROWS), done[lo : lo + _CHECK_ROWS], constant_rate)


#: jobs checked at once by :func:`check_invariants` (its copies: 16 arrays of this many)
_CHECK_ROWS = 1 << 16


def _check_jobs(st: SimState, part: slice, done: np.ndarray, constant_rate: bool) -> None:
    """:func:`check_invariants`' rules on each job of the slice ``part`` (``done``: which
    of them finished)."""
    executed, first_start, submit = (
        st.job_executed[part],
        st.job_first_start[part],
        st.job_submit[part],
    )
    ran = executed[done] * st.job_rate[part][done]
    work = st.job_work[part][done]
    if (st.job_remaining[part][done] != 0).any() or (
        constant_rate and not np.allclose(ran, work, rtol=1e-9, atol=1e-6)
    ):
        raise InvariantError("work not conserved: a finished job ran more or less than its work")
    jct = st.job_finish[part][done] - submit[done]
    parts = (
        st.job_wait_s[part][done]
        + st.job_load_spent_s[part][done]
        + executed[done]
        + st.job_save_spent_s[part][done]
    )
    if not np.allclose(parts, jct, rtol=1e-9, atol=1e-6):
        bad = int(np.flatnonzero(~np.isclose(parts, jct, rtol=1e-9, atol=1e-6))[0])
        raise InvariantError(
            f"a job's wait + load + train + save ({float(parts[bad])!r} s) is not its JCT "
            f"({float(jct[bad])!r} s)"
        )
    if (jct < executed[done] - 1e-6).any():
        raise InvariantError("a job finished sooner than its run time after submission")
    started = ~np.isnan(first_start)
    if (first_start[started] < submit[started] - 1e-9).any():
        raise InvariantError("a job started before it was submitted")
