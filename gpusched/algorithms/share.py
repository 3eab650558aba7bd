"""The pieces of the GPU-sharing policies (SJF-BSBF and SJF-FFS) that are not the policy.

Luo et al., *Scheduling Deep Learning Jobs in Multi-Tenant GPU Clusters via Wise Resource
Sharing* (``policies/sjf_bsbf.py`` cites the algorithm lines):

* :func:`pair_jct`: Theorem 1 (Sec. V-A, eq. 16-25): the average JCT of a running job B and
  a new job A that either shares B's GPUs now (kappa = 0) or waits for B to end (the fully
  non-overlapped schedule); the theorem says one of the two is optimal, and "in practice,
  evaluating the conditions for the best solution is the same as directly comparing the
  fully overlapped time and the fully non-overlapped time", which is what this does.
* :func:`best_sub_batch`: Alg. 2, the sub-batch search over powers of two.
* :class:`JobTimes`: what the policies need to know of a job: its solo time at a sub-batch
  (eq. 7 through the sharing job model), its memory, and the interference ratios.
* :func:`consolidated`: "the top-G GPUs in G_free", as consolidated as possible (Alg. 1
  line 7; Sec. V-B 2: "to make them as colidated on the nodes as possible").

Reading choices (the paper is silent or ambiguous; a careful reader's choice, stated):

1. Times are measured from now. B's remaining time alone is its remaining work over its
   solo rate (at the configuration it runs with); A's solo time at sub-batch b is its
   duration times t_iter(b) / t_iter(B_A) (eq. 7; gradient accumulation keeps the global
   batch, so the iterations do not change).
2. While sharing, A runs at t_A xi_A and B at t_B xi_B (eq. 16-17); when the shorter ends,
   the other continues alone (at its solo speed, A keeping its sub-batch: the paper never
   re-batches a running job). If A waits, it starts when B ends, alone, at its full batch.
3. Alg. 2 as printed assigns ``t_bar <- t`` and returns inside the loop; we read it as
   ``t_bar <- t_share`` with the return after the loop (the text: "we record that
   configuration if better"). The loop runs for b = B, ceil(B/2), ..., 1, so b = 1 is tried.
   Sub-batches that do not fit in GPU memory beside B are skipped (Sec. IV-A 4: "the memory
   footprint frequently imposes constraints on feasibility").
4. Jobs of no sharing model (a plain ``duration`` trace) have one configuration (the
   default) and no memory model; their xi comes from the engine's matrix.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["JobTimes", "best_sub_batch", "consolidated", "pair_jct"]


def pair_jct(solo_a: float, solo_b: float, xi_a: float, xi_b: float) -> float:
    """Average JCT (from now) of new job A and running job B sharing from now on, s.

    ``solo_a`` / ``solo_b`` are their times alone (A from its start, B what it has left);
    together each runs ``xi`` times slower (eq. 16-17) until the shorter ends.
    """
    shared_a = solo_a * xi_a  # A's time if it shared all along
    shared_b = solo_b * xi_b
    if shared_a <= shared_b:  # A ends first; B did shared_a / xi_b of its solo time
        return (shared_a + shared_a + solo_b - shared_a / xi_b) / 2.0
    return (shared_b + shared_b + solo_a - shared_b / xi_a) / 2.0


def sequential_jct(solo_a_full: float, solo_b: float) -> float:
    """Average JCT (from now) when A waits for B and then runs alone at its full batch, s."""
    return (solo_b + solo_b + solo_a_full) / 2.0


def best_sub_batch(
    times: JobTimes, a: int, b_job: int, b_config: Any, solo_b: float
) -> tuple[bool, Any, float]:
    """Alg. 2: ``(share, sub_batch, avg_jct)`` for new job ``a`` beside running ``b_job``.

    For every sub-batch of ``a`` that fits in GPU memory beside ``b_job`` (at its
    ``b_config``), Theorem 1 compares sharing now with waiting; the best average JCT wins
    (ties to the smaller sub-batch, as the printed ``<=`` does). ``share`` is False when
    waiting is best, or when no sub-batch fits.
    """
    xi_a, xi_b = times.xi_pair(a, b_job)
    wait = sequential_jct(times.solo_s(a, None), solo_b)
    best: tuple[bool, Any, float] = (False, None, np.inf)
    for sub in times.sub_batches(a):
        if not times.fits(a, sub, [(b_job, b_config)]):
            continue
        together = pair_jct(times.solo_s(a, sub), solo_b, xi_a, xi_b)
        share = together < wait
        t_share = together if share else wait
        if t_share <= best[2]:
            best = (share, sub, t_share)
    return best


def consolidated(free: np.ndarray, gpu_server: np.ndarray, g: int) -> np.ndarray | None:
    """``g`` GPUs among the ``free`` ones (a mask), on the fewest servers; None if too few.

    A single server with room when there is one (best fit: the fewest free GPUs that still
    fit, lowest index on ties), else servers by most free GPUs (lowest index on ties),
    lowest-numbered GPUs first: the engine's default placement.
    """
    idx = np.flatnonzero(free)
    if idx.size < g:
        return None
    per = np.bincount(gpu_server[idx], minlength=int(gpu_server.max()) + 1)
    fit = np.flatnonzero(per >= g)
    if fit.size:
        server = fit[np.argmin(per[fit])]
        on: np.ndarray = idx[gpu_server[idx] == server][:g]
        return on
    chosen: list[int] = []
    for server in np.lexsort((np.arange(per.size), -per)):
        on = idx[gpu_server[idx] == server]
        chosen += on[: g - len(chosen)].tolist()
        if len(chosen) == g:
            break
    return np.asarray(chosen, dtype=np.int64)


class JobTimes:
    """Solo times, sub-batches, memory and interference of the jobs, for the policies.

    Parameters
    ----------
    jobs
        The job table.
    cluster
        The cluster spec.
    xi
        The interference matrix the run uses (the engine's; a policy's override), indexed
        by ``kind``.
    """

    def __init__(self, jobs: Any, cluster: Any, xi: np.ndarray | None = None) -> None:
        from gpusched.jobmodels.sharing import JOB_MODEL

        self.work = np.asarray(jobs.work_s, dtype=np.float64)
        self.model = JOB_MODEL.perf(jobs, cluster)
        if self.model is not None:
            self.kind, base = self.model.interference()
        else:
            from gpusched.state import XI_DEFAULT

            self.kind, base = np.zeros(len(jobs), np.int32), np.full((1, 1), XI_DEFAULT)
        self.base_xi = np.asarray(base, dtype=np.float64)
        self.xi = self.base_xi if xi is None else np.asarray(xi, dtype=np.float64)

    def xi_pair(self, a: int, b: int) -> tuple[float, float]:
        """(xi_A, xi_B) of jobs ``a`` and ``b`` sharing a GPU (eq. 16-17)."""
        ka, kb = self.kind[a], self.kind[b]
        return float(self.xi[ka, kb]), float(self.xi[kb, ka])

    def sub_batches(self, j: int) -> list[Any]:
        """Alg. 2's candidates, the full batch first (None: the job's default)."""
        if self.model is None:
            return [None]
        subs: list[Any] = self.model.sub_batches(j)  # [] for a job of no sharing model
        return [None if k == 0 else s for k, s in enumerate(subs)] or [None]

    def solo_s(self, j: int, sub: Any) -> float:
        """Time job ``j`` runs alone from its start with sub-batch ``sub``, s (eq. 7)."""
        if self.model is None or sub is None:
            return float(self.work[j])
        return float(self.work[j] * self.model.t_iter_s(j, sub) / self.model.t_iter_s(j, None))

    def fits(self, j: int, sub: Any, partners: list[tuple[int, Any]]) -> bool:
        """Whether job ``j`` at ``sub`` fits in GPU memory beside ``partners``."""
        if self.model is None:
            return True
        return self.model.check_start(j, np.empty(0, np.int64), sub, partners) is None
