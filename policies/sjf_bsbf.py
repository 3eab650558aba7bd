"""SJF-BSBF: shortest job first with best sharing benefit first (GPU sharing, non-preemptive).

Luo et al., *Scheduling Deep Learning Jobs in Multi-Tenant GPU Clusters via Wise Resource
Sharing*, Sec. V, Alg. 1 (with Alg. 2 and Theorem 1 in :mod:`gpusched.algorithms.share`).
At each decision point, the queued jobs in order of their solo time L_k (Alg. 1 line 1):

* enough idle GPUs: the job takes the top-G idle GPUs, consolidated (lines 4-7);
* otherwise, if idle GPUs plus GPUs holding one job suffice (line 9): for every job J_g on
  a GPU that holds one job (lines 10-13), Alg. 2 searches the new job's sub-batch
  (gradient accumulation, eq. 7) and Theorem 1 says whether sharing with J_g now beats
  waiting for it; the jobs worth sharing with are sorted by that pair's average JCT
  (line 14) and their one-job GPUs taken until the gang is complete (lines 15-17). The
  free GPUs come last ("we do not pick the free GPUs at first for this case");
* else, or when no pair is worth it, the job waits (it is "put back to the pending job
  pool") and later jobs are tried.

Reading choices, besides those of :mod:`gpusched.algorithms.share`:

1. The job's sub-batch must fit beside every partner it gets; it takes the smallest of
   the sub-batches Alg. 2 chose for them (memory grows with the sub-batch).
2. A job is placed only on GPUs of jobs that are worth sharing with (plus free ones); if
   those are too few it waits, rather than sharing with a job Alg. 2 rejected.
3. Speed, not a reading: when a job finds no GPUs worth sharing, later jobs of the same
   shape (model, GPUs, batch: the same solo times up to a factor, :meth:`JobTimes.shape`)
   in this decision are not evaluated. They are longer (SJF order), and for a longer job
   sharing pays less or equally (the pair's JCT gain is non-increasing in the newcomer's
   length whenever every xi >= 1), while the jobs it could share with only lose GPUs
   within a decision; so they would find none either, and the schedule is unchanged.
4. L_k is the job's duration (its solo time at full batch), known in advance as for SJF;
   "size-based ... according to their used GPU numbers" in Sec. V-B 1 contradicts line 1,
   and line 1 wins.

``-p xi=R`` injects one interference ratio R for every pair (the paper's Fig. 6b: "we
artificially inject various values for all the jobs sharing the same GPUs"); it changes
the run's physics as well as the policy's beliefs, and applies to every policy only
through this parameter. ``-p xi_table=FILE`` does the same with a per-model-pair table.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusched.algorithms.share import JobTimes, best_sub_batches, consolidated
from gpusched.errors import ParamError
from gpusched.policy import Decision, Start
from gpusched.state import QUEUED


class SJFBSBFPolicy:
    """SJF order; share a running job's GPUs only when Theorem 1 says it pays (Alg. 1-2)."""

    name = "sjf-bsbf"
    knows_duration = True
    needs_predictor = False
    work_conserving = False

    def __init__(
        self, *, xi: float = 0.0, xi_table: str = "", rng: np.random.Generator | None = None
    ) -> None:
        """
        Parameters
        ----------
        xi
            One interference ratio (>= 1) for every pair of jobs sharing a GPU; 0 (default)
            keeps the job model's table.
        xi_table
            A TOML file with a ratio per model pair (the format of the bundled table);
            empty for the bundled one.
        """
        if xi != 0.0 and not (np.isfinite(xi) and xi >= 1.0):
            raise ParamError(f"policy '{self.name}': xi must be 0 (the model's) or >= 1, got {xi}")
        if xi and xi_table:
            raise ParamError(f"policy '{self.name}': give xi or xi_table, not both")
        self.xi = float(xi)
        self.xi_table = xi_table
        self.times: JobTimes | None = None
        self._partners: tuple[np.ndarray, np.ndarray, list[Any], np.ndarray] | None = None

    def interference(self, base: np.ndarray) -> np.ndarray:
        """The run's interference matrix: the model's, or the one this policy injects."""
        if self.xi:
            return np.full_like(base, self.xi)
        if self.xi_table:
            from gpusched.jobmodels.sharing import MODELS, load_xi_table

            table = load_xi_table(self.xi_table)
            if base.shape[0] <= len(MODELS):
                raise ParamError(
                    f"policy '{self.name}': xi_table sets ratios of the models "
                    f"{', '.join(MODELS)}, and no job of this trace is one of them"
                )
            out = base.copy()
            out[: len(MODELS), : len(MODELS)] = table
            return out
        return base

    def prepare(self, jobs: Any, cluster: Any) -> None:
        times = JobTimes(jobs, cluster)
        times.xi = self.interference(times.base_xi.copy())
        self.times = times

    def decide(self, view: Any, now: float) -> Decision:
        q = view.queued
        if q.size == 0:
            return Decision()
        n_on = np.array(view.gpu_n_jobs, dtype=np.int64)  # our copy, updated as we start
        holder = np.array(view.gpu_job[:, 0], dtype=np.int64)
        shares = view.gpu_job.shape[1] > 1
        n_free = int((n_on == 0).sum())
        n_one = int((n_on == 1).sum()) if shares else 0
        need = view.job_n_gpus
        times = self.times
        assert times is not None
        refused: set[tuple[Any, ...]] = set()  # job shapes that found no GPUs to share
        self._partners = None  # the running jobs alone on some GPU, until the next start
        actions: list[Start] = []
        for j in q[np.argsort(view.job_duration[q], kind="stable")].tolist():  # line 1
            g = int(need[j])
            if n_free + n_one == 0:
                break
            if n_free >= g:  # lines 6-7
                start = Start(j, consolidated(n_on == 0, view.gpu_server, g))
            elif n_free + n_one >= g:  # line 9
                shape = times.shape(j)
                if shape in refused:
                    continue
                got = self._share(view, j, g, n_on == 0, n_on == 1, holder)
                if got is None:
                    refused.add(shape)
                    continue
                start = got
            else:
                continue
            actions.append(start)
            self._partners = None
            assert start.gpus is not None
            for gpu in start.gpus.tolist():
                if n_on[gpu] == 0:
                    holder[gpu] = j
                    n_free -= 1
                    n_one += shares
                else:
                    n_one -= 1
                n_on[gpu] += 1
        return Decision(actions=actions)

    def _share(
        self, view: Any, j: int, g: int, free: np.ndarray, one: np.ndarray, holder: np.ndarray
    ) -> Start | None:
        """Lines 10-17: the GPUs of the running jobs worth sharing with, best pairs first."""
        times = self.times
        assert times is not None
        if self._partners is None:
            partners = np.unique(holder[one])  # line 10: each job on a one-job GPU
            partners = partners[view.job_status[partners] != QUEUED]  # not started just now
            configs = [view.job_config.get(b) for b in partners.tolist()]
            self._partners = (
                partners,
                view.job_remaining[partners] / view.job_solo_rate[partners],
                configs,
                np.array(
                    [times.mem(b, c) for b, c in zip(partners.tolist(), configs, strict=True)]
                ),
            )
        partners, solo_b, configs, mem_b = self._partners
        if partners.size == 0:
            return None
        share, k, t = best_sub_batches(times, j, partners, configs, solo_b, mem_b)  # line 11
        keep = np.flatnonzero(share)  # line 12
        if keep.size == 0:
            return None
        keep = keep[np.lexsort((partners[keep], t[keep]))]  # line 14: by the pair's JCT
        subs = times.profile(j)[0]
        gpus: list[int] = []
        chosen: list[Any] = []
        for i in keep.tolist():  # lines 15-17
            on_b = np.flatnonzero(one & (holder == partners[i]))
            gpus += on_b[: g - len(gpus)].tolist()
            chosen.append(subs[int(k[i])])
            if len(gpus) == g:
                break
        if len(gpus) < g:  # free GPUs last
            gpus += np.flatnonzero(free)[: g - len(gpus)].tolist()
        if len(gpus) < g:
            return None
        sized = [s for s in chosen if s is not None]
        return Start(j, np.asarray(sorted(gpus), dtype=np.int64), min(sized) if sized else None)
