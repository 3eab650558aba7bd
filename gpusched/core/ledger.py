"""The resource ledger: servers x resource types, for jobs placed by roles.

docs/architecture.md, "Multi-resource machines": servers have capacities per
resource type (GPU, CPU, memory, storage); jobs that declare per-role demands (a worker's
and a parameter server's demand vectors) are placed by *counts per machine* rather than
on GPU indices, and the engine owns this ledger and checks it after every decision: no
resource on any machine is ever over-committed. Gang jobs keep the GPU-index path; a run
uses one or the other (:class:`gpusched.core.engine.Engine` refuses a trace that mixes them).

A job model supplies the roles (:func:`gpusched.core.jobmodel.roles`): an object with
``mask`` (bool per job: placed by roles), ``worker`` and ``ps`` (``(n_jobs, R)`` demand
per worker and per parameter server, in the units of :data:`RESOURCES`), ``max_workers``
(the most workers a job may use at once, the PD-ORS paper's eq. 4) and
``rate(job, workers, ps) -> float`` (the job's progress rate, s of work per s, on the
given counts per machine).

The ledger integrates each job's held resources over time, so utilisation per resource is
exact even though jobs finish between decision points.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusched.core.view import _frozen
from gpusched.errors import ClusterError

__all__ = ["RESOURCES", "Ledger", "LedgerView", "capacities"]

#: Resource types, in the order of every ``(..., R)`` array: the cluster TOML's per-server
#: ``gpus``, ``cpus``, ``mem_gb`` and ``storage_gb``.
RESOURCES: tuple[str, ...] = ("gpus", "cpus", "mem_gb", "storage_gb")

#: Slack on capacity checks, relative (demands are decimal numbers such as 2.5 GB).
_EPS = 1e-9


def capacities(cluster: Any) -> np.ndarray:
    """Per-server capacity of each resource, ``(n_servers, R)`` float64.

    Raises
    ------
    ClusterError
        A server group that does not give ``cpus``, ``mem_gb`` or ``storage_gb``
        (optional for GPU-index runs, needed when jobs are placed by roles).
    """
    rows: list[list[float]] = []
    for k, g in enumerate(cluster.groups):
        missing = [r for r in RESOURCES[1:] if getattr(g, r) is None]
        if missing:
            raise ClusterError(
                f"{cluster.where}cluster '{cluster.name}': servers[{k}] gives no "
                f"{', '.join(missing)}; jobs placed by roles (num_gpus 0) need "
                f"{', '.join(RESOURCES)} for every server"
            )
        rows += [[float(g.gpus), float(g.cpus), float(g.mem_gb), float(g.storage_gb)]] * g.count
    return np.asarray(rows, dtype=np.float64).reshape(-1, len(RESOURCES))


class Ledger:
    """Who holds how much of each resource on each machine, for jobs placed by roles.

    Parameters
    ----------
    capacity
        ``(H, R)`` capacities.
    worker, ps
        ``(n_jobs, R)`` demand of one worker and of one parameter server of each job.
    max_workers
        ``(n_jobs,)`` most workers a job may hold at once (eq. 4 of the PD-ORS paper).
    """

    def __init__(
        self, capacity: np.ndarray, worker: np.ndarray, ps: np.ndarray, max_workers: np.ndarray
    ) -> None:
        self.capacity = np.asarray(capacity, dtype=np.float64)
        self.worker = np.asarray(worker, dtype=np.float64)
        self.ps = np.asarray(ps, dtype=np.float64)
        self.max_workers = np.asarray(max_workers, dtype=np.int64)
        self.used = np.zeros_like(self.capacity)
        #: job -> (workers per machine, PSs per machine), for jobs holding resources
        self.alloc: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._since: dict[int, float] = {}
        #: resource-seconds held, per resource (integrated job by job)
        self.held_s = np.zeros(self.capacity.shape[1])

    @property
    def n_machines(self) -> int:
        return int(self.capacity.shape[0])

    @property
    def free(self) -> np.ndarray:
        """``(H, R)`` capacity not held by any job."""
        return self.capacity - self.used

    def demand(self, j: int, w: np.ndarray, s: np.ndarray) -> np.ndarray:
        """``(H, R)`` resources job ``j`` holds with ``w`` workers and ``s`` PSs per machine."""
        return np.outer(w, self.worker[j]) + np.outer(s, self.ps[j])

    def counts(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Job ``j``'s workers and PSs per machine (zeros when it holds nothing)."""
        got = self.alloc.get(j)
        if got is None:
            z = np.zeros(self.n_machines, dtype=np.int64)
            return z, z.copy()
        return got

    def job_problem(self, j: int, w: np.ndarray, s: np.ndarray) -> str | None:
        """Why job ``j`` may not hold ``w`` workers and ``s`` PSs in total (None: it may),
        whatever the machines' room: eq. 4 and at least one PS with its workers."""
        total_w = int(w.sum())
        if total_w > self.max_workers[j]:
            return (
                f"asks for {total_w} workers, more than its global batch allows "
                f"({int(self.max_workers[j])}, eq. 4)"
            )
        if total_w > 0 and int(s.sum()) == 0:
            return "gives workers but no parameter server"
        if total_w == 0 and int(s.sum()) > 0:
            return "gives parameter servers but no worker"
        return None

    def room_problem(self, changes: dict[int, tuple[np.ndarray, np.ndarray]]) -> str | None:
        """Why the jobs cannot all hold the given counts at once (None: they can).

        ``changes`` maps jobs to their new workers and PSs per machine; they replace what
        those jobs hold, so one decision may move jobs between machines in any order.
        """
        after = self.used.copy()
        for j, (w, s) in changes.items():
            after += self.demand(j, w, s) - self.demand(j, *self.counts(j))
        over = after > self.capacity * (1 + _EPS) + _EPS
        if not over.any():
            return None
        h, r = (int(x) for x in np.argwhere(over)[0])
        who = sorted(j for j, (w, s) in changes.items() if w[h] or s[h])
        return (
            f"would put {after[h, r]:g} {RESOURCES[r]} on machine {h} (capacity "
            f"{self.capacity[h, r]:g}; jobs given room there now: {who})"
        )

    def problem(self, j: int, w: np.ndarray, s: np.ndarray) -> str | None:
        """Why job ``j`` may not hold ``w`` workers and ``s`` PSs per machine now (None: it
        may); its own resources count as free."""
        return self.job_problem(j, w, s) or self.room_problem({j: (w, s)})

    def set(self, j: int, w: np.ndarray, s: np.ndarray, now: float) -> None:
        """Give job ``j`` exactly ``w`` workers and ``s`` PSs per machine from ``now`` on
        (checked by the caller with :meth:`problem`); all zeros releases it."""
        self.release(j, now)
        if int(w.sum()) == 0:
            return
        self.alloc[j] = (w.astype(np.int64), s.astype(np.int64))
        self.used += self.demand(j, w, s)
        self._since[j] = now

    def release(self, j: int, at: float) -> None:
        """Free whatever job ``j`` holds, as of time ``at`` (s)."""
        got = self.alloc.pop(j, None)
        if got is None:
            return
        d = self.demand(j, *got)
        self.used -= d
        self.held_s += d.sum(axis=0) * (at - self._since.pop(j))
        self.used[np.abs(self.used) < 1e-9] = 0.0  # no drift from adding and removing decimals

    def settle(self, now: float) -> None:
        """Bring :attr:`held_s` up to ``now`` for the jobs still holding resources."""
        for j, (w, s) in self.alloc.items():
            self.held_s += self.demand(j, w, s).sum(axis=0) * (now - self._since[j])
            self._since[j] = now

    def check(self) -> str | None:
        """The ledger's invariant: what is held adds up and fits every machine."""
        total = np.zeros_like(self.used)
        for j, (w, s) in self.alloc.items():
            total += self.demand(j, w, s)
        if not np.allclose(total, self.used, rtol=1e-9, atol=1e-6):
            return "the ledger's totals do not match the jobs' allocations"
        if (self.used > self.capacity * (1 + _EPS) + 1e-6).any():
            h, r = (int(x) for x in np.argwhere(self.used > self.capacity + 1e-6)[0])
            return (
                f"machine {h} holds {self.used[h, r]:g} {RESOURCES[r]} of {self.capacity[h, r]:g}"
            )
        return None


def _ro(a: np.ndarray) -> np.ndarray:
    """A read-only copy of ``a`` (the ledger changes; what a policy got must not)."""
    return _frozen(np.array(a, copy=True))


class LedgerView:
    """What a policy sees of the ledger (``view.ledger``): read-only copies.

    Attributes
    ----------
    resources
        The resource names, in the order of the last axis (:data:`RESOURCES`).
    capacity
        ``(H, R)`` per-machine capacity.
    worker, ps, max_workers
        Per-job demand of one worker and of one PS, ``(n_jobs, R)``, and each job's
        worker limit (eq. 4); zeros for jobs not placed by roles.
    role_job
        Bool per job: placed by roles.
    """

    def __init__(self, ledger: Ledger, mask: np.ndarray) -> None:
        self._ledger = ledger
        self.resources = RESOURCES
        self.capacity = _ro(ledger.capacity)
        self.worker = _ro(ledger.worker)
        self.ps = _ro(ledger.ps)
        self.max_workers = _ro(ledger.max_workers)
        self.role_job = _ro(mask)

    @property
    def n_machines(self) -> int:
        return self._ledger.n_machines

    @property
    def free(self) -> np.ndarray:
        """``(H, R)`` capacity no job holds now (a copy)."""
        return _ro(self._ledger.free)

    def allocation(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Job ``j``'s workers and PSs per machine now (copies; zeros when it holds none)."""
        w, s = self._ledger.counts(int(j))
        return _ro(w), _ro(s)
