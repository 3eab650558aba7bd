"""The read-only snapshot of queue and cluster that a policy sees at a decision point."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from gpusched.core.state import F_NOW, I_FREE_GPUS, I_N_QUEUE, I_N_RUN, SimState
from gpusched.errors import PolicyError

if TYPE_CHECKING:
    from gpusched.io.cluster import ClusterSpec


def _ro(a: np.ndarray) -> np.ndarray:
    """A live view of the state array ``a`` on read-only memory: a policy cannot re-enable
    writing.

    ``a.view()`` with ``flags.writeable = False`` would not do: a policy can set the flag
    back to True and rewrite the engine's state. An array built on a read-only buffer
    cannot be made writeable (numpy refuses), and it still shares ``a``'s memory, so it
    costs nothing and shows the state as it changes. State arrays are contiguous (a
    copy would not be live).
    """
    if not a.flags.c_contiguous:
        raise ValueError("a view of the state needs a contiguous array")
    if a.size == 0:
        return _frozen(np.empty(a.shape, dtype=a.dtype))
    buf = memoryview(a).toreadonly()  # type: ignore[arg-type]
    return np.frombuffer(buf, dtype=a.dtype).reshape(a.shape)


def _frozen(a: np.ndarray) -> np.ndarray:
    """``a`` (an array made for this decision, not the state) marked read-only."""
    a.setflags(write=False)  # (about twice as fast as setting ``a.flags.writeable``)
    return a


def _sorted(a: np.ndarray) -> np.ndarray:
    """A sorted read-only copy of ``a`` (a slice of a state array)."""
    out = a.copy()
    out.sort()  # in place: no trip through np.sort's wrapper
    out.setflags(write=False)
    return out


class View:
    """Read-only views of the engine's state for one policy.

    Per-job arrays are indexed by job index (submission order). They are live
    views: valid for the current call of ``decide`` only; copy what you keep.

    Attributes
    ----------
    now
        Current simulated time, s.
    slot_s
        Slot length, s.
    queued, running
        See the properties below.
    arrived, finished
        Jobs that arrived / finished since the previous decision point.
    job_submit, job_n_gpus, job_status, job_executed, job_attained, job_first_start,
    job_enqueued, job_n_preempt
        Submission time (s), gang size, status code, s spent running, GPU-s of
        attained service, first start (s, nan if never), time the job last
        entered the queue (s), preemptions.
    job_load_s, job_save_s, job_phase_end
        Load time after each start and pause-and-save time after each preemption (s),
        and for a job holding GPUs the end of its current load or save (s; a loading
        job starts training then).
    job_rate, job_solo_rate
        Progress rate of a job holding GPUs (s of work per s: its solo rate over its
        largest interference ratio while it shares a GPU) and its rate alone.
    job_config
        The configuration each started job carries (``Start.config``), by job index
        (a read-only mapping; absent = the default).
    server_free, gpu_n_jobs, gpu_job, gpu_server
        Idle GPUs per server, jobs per GPU, the jobs on each GPU, server of each GPU.
    pending
        Queued jobs whose :class:`~gpusched.core.policy.Start` waits for saving jobs to
        release its GPUs (the engine starts them when the saves end).
    cluster
        The cluster spec.
    ledger
        For runs of jobs placed by roles (parameter-server jobs on multi-resource
        machines): a :class:`~gpusched.core.ledger.LedgerView` of capacities, free resources,
        demands and allocations; None otherwise.
    perf
        The run's performance model (None: every job at its static rate), for policies
        that read what it reports (e.g. Pollux's per-job agents); read-only by contract.
    tasks
        For runs of jobs made of tasks on typed workers (the edge-cloud family): a
        :class:`~gpusched.core.tasks.TaskView` of each task's job, type, worker and ready time,
        the workers and tiers, and the jobs' parameter servers; None otherwise. Per-job
        arrays of this view (``job_status``, ...) are then per *task*.
    """

    def __init__(
        self,
        st: SimState,
        cluster: ClusterSpec,
        slot_s: float,
        *,
        policy_name: str,
        knows_duration: bool,
        configs: dict[int, Any] | None = None,
    ) -> None:
        self._st = st
        self._policy = policy_name
        self._knows = knows_duration
        self.cluster = cluster
        self.slot_s = slot_s
        self.job_submit = _ro(st.job_submit)
        self.job_n_gpus = _ro(st.job_n_gpus)
        self.job_status = _ro(st.job_status)
        self.job_executed = _ro(st.job_executed)
        self.job_attained = _ro(st.job_attained)
        self.job_first_start = _ro(st.job_first_start)
        self.job_enqueued = _ro(st.job_enqueued)
        self.job_n_preempt = _ro(st.job_n_preempt)
        self.job_load_s = _ro(st.job_load_s)
        self.job_save_s = _ro(st.job_save_s)
        self.job_phase_end = _ro(st.job_phase_end)
        self.job_rate = _ro(st.job_rate)
        self.job_solo_rate = _ro(st.job_solo_rate)
        self.job_config: Mapping[int, Any] = MappingProxyType(
            configs if configs is not None else {}
        )
        self.server_free = _ro(st.server_free)
        self.gpu_n_jobs = _ro(st.gpu_n_jobs)
        self.gpu_job = _ro(st.gpu_job)
        self.gpu_server = _ro(st.gpu_server)
        self._duration = _ro(st.job_work)
        self._remaining = _ro(st.job_remaining)
        self.arrived: np.ndarray = _frozen(np.empty(0, dtype=np.int32))
        self.finished: np.ndarray = _frozen(np.empty(0, dtype=np.int32))
        self.pending: np.ndarray = _frozen(np.empty(0, dtype=np.int32))
        self._queued: np.ndarray | None = None
        self._running: np.ndarray | None = None
        self.ledger: Any = None
        self.tasks: Any = None
        self.perf: Any = None

    def refresh(self, arrived: np.ndarray, finished: np.ndarray) -> None:
        """Engine hook: take the events of this decision point."""
        self.invalidate()
        self.arrived = _frozen(arrived)
        self.finished = _frozen(finished)

    def invalidate(self) -> None:
        """Engine hook: the queue or the holders changed within this decision point (the
        decision was applied); ``queued`` and ``running`` are worked out again on first use."""
        self._queued = self._running = None

    @property
    def queued(self) -> np.ndarray:
        """Indices of queued jobs, in submission order (sorted on first use at a decision
        point; ``wake`` gets the same array unless the decision started or preempted a job)."""
        if self._queued is None:
            st = self._st
            self._queued = _sorted(st.queue[: st.sim_i.item(I_N_QUEUE)])
        return self._queued

    @property
    def running(self) -> np.ndarray:
        """Indices of jobs holding GPUs (loading, running or saving), ascending (the same
        array in ``wake`` as in ``decide`` unless the decision started or preempted a job)."""
        if self._running is None:
            st = self._st
            self._running = _sorted(st.run[: st.sim_i.item(I_N_RUN)])
        return self._running

    @property
    def now(self) -> float:
        """Current simulated time, s."""
        return float(self._st.sim_f[F_NOW])

    @property
    def free_gpus(self) -> int:
        """GPUs holding no job."""
        return int(self._st.sim_i[I_FREE_GPUS])

    @property
    def n_gpus(self) -> int:
        """GPUs in the cluster."""
        return int(self._st.gpu_n_jobs.shape[0])

    def _oracle(self, what: str) -> None:
        if not self._knows:
            raise PolicyError(
                f"policy '{self._policy}' read job_{what} but declares knows_duration = False"
            )

    @property
    def job_duration(self) -> np.ndarray:
        """Exclusive run time of each job, s (only for policies that know durations)."""
        self._oracle("duration")
        return self._duration

    @property
    def job_remaining(self) -> np.ndarray:
        """Work left of each job, s (only for policies that know durations)."""
        self._oracle("remaining")
        return self._remaining
