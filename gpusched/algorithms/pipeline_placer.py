"""Starting pipeline jobs on idle GPUs: servers chosen as A-SRPT's Alg. 1 does, replicas mapped
by Heavy-Edge.

For Z. Luo, J. Liu, M. Lee and N. B. Shroff, "Prediction-Assisted Online Distributed Deep
Learning Workload Scheduling in GPU Clusters" (A-SRPT), IEEE INFOCOM 2025, arXiv:2501.05563.

* :class:`Placer`: the idle GPUs of a :class:`~gpusched.core.view.View`, kept up to date while a
  policy starts several jobs in one decision; picks servers "most" or "least" available
  (Alg. 1 lines 9 and 22) or the "fewest" (best fit, the baselines' default), maps replicas
  with Heavy-Edge (:mod:`gpusched.jobmodels.heavy_edge`) and returns GPU indices for
  :class:`~gpusched.core.policy.Start`.
* :func:`start_in_order`: the starts of a priority order that fit now.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusched.jobmodels.heavy_edge import select_servers
from gpusched.jobmodels.pipeline_jobs import PipelineJobs

__all__ = ["Placer", "start_in_order"]


class Placer:
    """Idle GPUs of a view, updated as a policy starts jobs within one decision.

    Parameters
    ----------
    view
        The :class:`~gpusched.core.view.View` of this decision point (GPUs holding no job are idle).
    """

    def __init__(self, view: Any) -> None:
        cluster = view.cluster
        self.idle = np.asarray(view.gpu_n_jobs) == 0
        self.free = np.asarray(view.server_free, dtype=np.int64).copy()
        self.start = np.asarray(cluster.server_start(), dtype=np.int64)
        self.size = np.asarray(cluster.server_gpus(), dtype=np.int64)
        self.spread = bool(cluster.allow_spread)
        self.total = int(self.free.sum())

    def fits(self, g: int) -> bool:
        """Whether ``g`` GPUs can be given now (on one server if the cluster forbids spreading)."""
        if self.spread:
            return g <= self.total
        return bool(self.free.size) and g <= int(self.free.max())

    def take(self, g: int, order: str) -> np.ndarray:
        """GPUs to take per server: "most" (Alg. 1 line 9) or "least" (line 22) idle first,
        or "fewest" servers, best fit (see :func:`~gpusched.jobmodels.heavy_edge.select_servers`)."""
        if self.spread:
            return select_servers(self.free, g, order)  # type: ignore[arg-type]
        ok = np.flatnonzero(self.free >= g)
        # one server: "most" takes the emptiest; "least" and "fewest" the best fit
        key = -self.free[ok] if order == "most" else self.free[ok]
        m = int(ok[np.argsort(key, kind="stable")[0]])
        take = np.zeros_like(self.free)
        take[m] = g
        return take

    def place(self, jobs: PipelineJobs, j: int, order: str) -> tuple[np.ndarray, float]:
        """Choose servers, map with Heavy-Edge; return (GPU indices by replica, :math:`\\alpha_i`).

        Does not commit: call :meth:`commit` with the GPUs when the job is started.
        """
        take = self.take(int(jobs.n_gpus[j]), order)
        used = np.flatnonzero(take)
        perm = np.argsort(-take[used], kind="stable")  # Heavy-Edge: descending, ties by index
        servers, counts = used[perm], take[used][perm]
        alpha, pos = jobs.mapping(j, counts)
        per_server = [
            self.start[m]
            + np.flatnonzero(self.idle[self.start[m] : self.start[m] + self.size[m]])[:c]
            for m, c in zip(servers, counts, strict=True)
        ]
        nxt = np.zeros(len(servers), dtype=np.int64)
        gpus = np.empty(int(counts.sum()), dtype=np.int64)
        for v, p in enumerate(pos):
            gpus[v] = per_server[p][nxt[p]]
            nxt[p] += 1
        return gpus, alpha

    def commit(self, gpus: np.ndarray, gpu_server: np.ndarray) -> None:
        """Mark ``gpus`` busy (``gpu_server`` maps GPU -> server)."""
        self.idle[gpus] = False
        np.subtract.at(self.free, gpu_server[gpus], 1)
        self.total -= int(len(gpus))


def start_in_order(
    view: Any, jobs: PipelineJobs, order: np.ndarray, *, blocking: bool, select: str = "fewest"
) -> list[Any]:
    """Start jobs of ``order`` that fit, mapped by Heavy-Edge on ``select``-available servers.

    Parameters
    ----------
    view
        The decision point's view.
    jobs
        Pipeline models of the job table.
    order
        Queued job indices, highest priority first.
    blocking
        Stop at the first job that does not fit (strict priority order); otherwise skip it
        and keep filling (work-conserving).
    select
        How servers are chosen: ``"fewest"`` (best fit on one server, else the most
        available first), ``"most"`` or ``"least"`` available first.

    Returns
    -------
    list of :class:`~gpusched.core.policy.Start`
        With explicit GPU indices (ordered by stage replica).
    """
    from gpusched.core.policy import Start

    placer = Placer(view)
    gpu_server = np.asarray(view.gpu_server)
    order = np.asarray(order, dtype=np.int64)
    if not blocking:  # only jobs that could fit now can start
        order = order[jobs.n_gpus[order] <= placer.total]
    out: list[Any] = []
    for j in order:
        if placer.total == 0:
            break
        if not placer.fits(int(jobs.n_gpus[j])):
            if blocking:
                break
            continue
        gpus, _ = placer.place(jobs, int(j), select)
        placer.commit(gpus, gpu_server)
        out.append(Start(int(j), gpus))
    return out
