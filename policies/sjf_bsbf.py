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
   Also for speed, with the same schedule: between two starts the GPUs do not change,
   so the jobs that would be tried one by one are tested together
   (:func:`~gpusched.algorithms.share.worth_sharing`) and only the first that finds GPUs
   is placed by Alg. 2 itself. A whole decision is one jitted call
   (:func:`~gpusched.algorithms.share.plan_sjf_bsbf`); :meth:`SJFBSBFPolicy.decide_loop`
   is the same decision step by step in Python (the reference the tests compare it with).
4. L_k is the job's duration (its solo time at full batch), known in advance as for SJF;
   "size-based ... according to their used GPU numbers" in Sec. V-B 1 contradicts line 1,
   and line 1 wins.
5. Theorem 1 prices each candidate at the GPUs it would get (``placement=aware``, the
   default; reading 5 of :mod:`gpusched.algorithms.share`): a gang whose ideal placement
   is one server first looks for a set on one server (lines 14-17 per server), then for
   one across servers priced at the cross-server time (eq. 4), else it waits.
   ``placement=ideal`` prices every candidate at the ideal placement (the former reading).

``-p xi=R`` injects one interference ratio R for every pair (the paper's Fig. 6b: "we
artificially inject various values for all the jobs sharing the same GPUs"); it changes
the run's physics as well as the policy's beliefs, and applies to every policy only
through this parameter. ``-p xi_table=FILE`` does the same with a per-model-pair table,
and ``-p xi_model=gavel`` with the bundled table of ratios Gavel measured
(:func:`gpusched.jobmodels.sharing.gavel_xi`).

This module is longer than ~200 lines because it holds Alg. 1 twice: :meth:`decide` (one
jitted call) and :meth:`decide_loop`, the same decision step by step in numpy, which is
the readable version of the algorithm, the reference the tests hold the jitted plan to,
and the loop sjf-ffs reuses with its own sharing step.
"""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np

from gpusched.algorithms.share import (
    JobTimes,
    alone_holders,
    best_sub_batches,
    consolidated,
    first_of_each_shape,
    gpus_of_pairs,
    gpus_on_one_server,
    plan_sjf_bsbf,
    sjf_order,
    worth_sharing,
)
from gpusched.core.policy import Decision, Range, Start
from gpusched.core.state import QUEUED
from gpusched.errors import ParamError

#: values of the ``placement`` parameter (reading 5) and of ``xi_model``
PLACEMENTS = ("aware", "ideal")
XI_MODELS = ("derived", "gavel")


class SJFBSBFPolicy:
    """SJF order; share a running job's GPUs only when Theorem 1 says it pays (Alg. 1-2)."""

    name = "sjf-bsbf"
    knows_duration = True
    needs_predictor = False
    work_conserving = False

    def __init__(
        self,
        *,
        xi: Annotated[float, Range(0, 100)] = 0.0,
        xi_table: str = "",
        xi_model: str = "derived",
        placement: str = "aware",
        rng: np.random.Generator | None = None,
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
        xi_model
            ``derived`` (default: the job model's table, derived from its time model) or
            ``gavel`` (the pairs Gavel measured replace the derived ones where the models
            match, :func:`gpusched.jobmodels.sharing.gavel_xi`).
        placement
            ``aware`` (default): Theorem 1 prices a candidate at the GPUs it would get
            (one server or several, eq. 4); ``ideal``: at its ideal placement.
        """
        where = f"policy '{self.name}'"
        if 0.0 < xi < 1.0:  # (its range, [0, 100], is checked with every parameter's)
            raise ParamError(f"{where}: xi must be 0 (the model's) or >= 1, got {xi}")
        if xi_model not in XI_MODELS:
            raise ParamError(
                f"{where}: xi_model must be one of {', '.join(XI_MODELS)}, got {xi_model!r}"
            )
        if placement not in PLACEMENTS:
            raise ParamError(
                f"{where}: placement must be one of {', '.join(PLACEMENTS)}, got {placement!r}"
            )
        given = [n for n, v in (("xi", xi), ("xi_table", xi_table)) if v]
        given += ["xi_model"] if xi_model != "derived" else []
        if len(given) > 1:
            raise ParamError(
                f"{where}: give only one of xi, xi_table and xi_model (got {' and '.join(given)})"
            )
        self.xi = float(xi)
        self.xi_table = xi_table
        self.xi_model = xi_model
        self.placement = placement
        self.times: JobTimes | None = None
        self._mem_run = np.empty(0)  # memory of each started job at its config, GB (nan: not yet)

    def interference(self, base: np.ndarray) -> np.ndarray:
        """The run's interference matrix: the model's, or the one this policy injects."""
        if self.xi:
            return np.full_like(base, self.xi)
        if self.xi_table or self.xi_model != "derived":
            from gpusched.jobmodels.sharing import MODELS, gavel_xi, load_xi_table

            table = load_xi_table(self.xi_table) if self.xi_table else gavel_xi()
            if base.shape[0] <= len(MODELS):
                what = "xi_table" if self.xi_table else f"xi_model={self.xi_model}"
                raise ParamError(
                    f"policy '{self.name}': {what} sets ratios of the models "
                    f"{', '.join(MODELS)}, and no job of this trace is one of them"
                )
            out = base.copy()
            out[: len(MODELS), : len(MODELS)] = table
            return out
        return base

    def prepare(self, jobs: Any, cluster: Any) -> None:
        self._exclusive = (str(cluster.name), int(cluster.gpu_capacity) == 1)
        times = JobTimes(jobs, cluster)
        times.xi = self.interference(times.base_xi.copy())
        self.times = times
        self._mem_run = np.full(len(times.work), np.nan)

    def notes(self) -> list[str]:
        """On a cluster that gives each GPU to one job, no job can share one."""
        name, exclusive = getattr(self, "_exclusive", ("", False))
        if not exclusive:
            return []
        return [
            f"cluster '{name}' gives each GPU to one job (gpu_capacity = 1): no two jobs "
            f"can share a GPU, so {self.name} schedules as SJF with its own placement (give "
            "a cluster with gpu_capacity = 2 to share)"
        ]

    def decide(self, view: Any, now: float) -> Decision:
        """Alg. 1 at one decision point, in one jitted call (:func:`plan_sjf_bsbf`)."""
        q = view.queued
        if q.size == 0:
            return Decision()
        times = self.times
        assert times is not None
        job = (
            view.job_duration,
            view.job_n_gpus,
            view.job_status,
            view.job_remaining,
            view.job_solo_rate,
        )
        gpu = (view.gpu_n_jobs, view.gpu_job, view.gpu_server)
        aware = self.placement == "aware"
        while True:
            starts, missing = plan_sjf_bsbf(times, q, job, gpu, self._mem_run, QUEUED, aware)
            if not missing:
                break
            # jobs this policy did not start (it notes the memory of those it starts)
            self._note_memory(view, missing)  # then plan again, knowing it
        if not starts:
            return Decision()
        subs = times.shape_subs
        shape_of = times.shape_of
        # k = 0: None, the default
        return Decision(actions=[Start(j, gpus, subs[shape_of[j]][k]) for j, gpus, k in starts])

    def _note_memory(self, view: Any, jobs: list[int]) -> None:
        """Cache the memory of these started jobs at their configs (fixed for a job's
        lifetime: the engine's rule)."""
        times = self.times
        assert times is not None
        for b in jobs:
            if np.isnan(self._mem_run[b]):
                self._mem_run[b] = times.mem(b, view.job_config.get(b))

    def decide_loop(self, view: Any, now: float) -> Decision:
        """Alg. 1 at one decision point, step by step in Python (:meth:`decide` does the
        same in one jitted call; sjf-ffs replaces the sharing step)."""
        q = view.queued
        if q.size == 0:
            return Decision()
        n_on = np.array(view.gpu_n_jobs, dtype=np.int64)  # our copy, updated as we start
        shares = view.gpu_job.shape[1] > 1
        n_free = int(np.count_nonzero(n_on == 0))
        n_one = int(np.count_nonzero(n_on == 1)) if shares else 0
        if n_free + n_one == 0:
            return Decision()  # no GPU idle or holding one job: nothing can start
        holder = np.array(view.gpu_job[:, 0], dtype=np.int64)
        times = self.times
        assert times is not None
        # line 1: SJF order, with each job's GPUs and shape
        order, need, shape = sjf_order(q, view.job_duration, view.job_n_gpus, times.shape_of)
        refused = np.zeros(times.shape_job.size, dtype=bool)  # shapes that found no GPUs
        actions: list[Start] = []
        pos = 0  # jobs before order[pos] are started or wait
        while pos < order.size and n_free + n_one > 0:
            # between two starts the GPUs do not change: the next job that fits the idle
            # GPUs (lines 6-7) starts unless an earlier one finds GPUs to share (line 9)
            idle = np.flatnonzero(need[pos:] <= n_free)
            stop = pos + int(idle[0]) if idle.size else order.size
            start = None
            if n_one:
                hit = self._first_sharer(
                    view, order, need, shape, refused, (pos, stop, n_free + n_one), holder, n_on
                )
                if hit is not None:
                    pos, start = hit
            if start is None:
                if stop == order.size:
                    break
                j, g = int(order[stop]), int(need[stop])
                start = Start(j, consolidated(n_on == 0, view.gpu_server, g))
                pos = stop + 1
            actions.append(start)
            assert start.gpus is not None
            for gpu in start.gpus.tolist():
                if n_on[gpu] == 0:
                    holder[gpu] = start.job
                    n_free -= 1
                    n_one += shares
                else:
                    n_one -= 1
                n_on[gpu] += 1
        return Decision(actions=actions)

    def _first_sharer(
        self,
        view: Any,
        order: np.ndarray,
        need: np.ndarray,
        shape: np.ndarray,
        refused: np.ndarray,
        span: tuple[int, int, int],
        holder: np.ndarray,
        n_on: np.ndarray,
    ) -> tuple[int, Start] | None:
        """Lines 9-17 for the jobs ``order[pos:stop]`` (``span`` is ``(pos, stop, room)``,
        room: the GPUs idle or holding one job), which idle GPUs alone cannot hold:
        the first that finds GPUs worth sharing, as ``(position after it, its Start)``
        (None: none does; ``refused`` then holds all their shapes).

        Only the first job of each shape not yet ``refused`` is evaluated (reading 3);
        the shapes of those evaluated before the first that finds GPUs are refused. Alg. 2
        at ideal-placement prices is evaluated for them together (:func:`worth_sharing`);
        then each, in order, is placed by :meth:`_place` as Alg. 1 reads.
        """
        times = self.times
        assert times is not None
        pos, stop, room = span
        cand = self._candidates(need, shape, refused, pos, stop, room)
        if cand.size == 0:
            return None
        one = n_on == 1
        partners, solo_b, mem_b, n_own = self._partner_data(view, one, holder)
        if partners.size == 0:
            refused[shape[cand]] = True
            return None
        ok = worth_sharing(times, order[cand], partners, solo_b, mem_b)  # lines 11-12
        free = n_on == 0
        for row, at in enumerate(cand.tolist()):
            j, g = int(order[at]), int(need[at])
            run = (partners, solo_b, mem_b, n_own)
            start = self._place(view, j, g, free, one, holder, run, ok[row])
            if start is not None:
                refused[shape[cand[:row]]] = True
                return at + 1, start
        refused[shape[cand]] = True
        return None

    @staticmethod
    def _candidates(
        need: np.ndarray, shape: np.ndarray, refused: np.ndarray, pos: int, stop: int, room: int
    ) -> np.ndarray:
        """Positions in ``pos:stop`` of the jobs to evaluate (line 9: at most ``room`` GPUs,
        idle or holding one job): the first of each shape not ``refused``, in SJF order."""
        return first_of_each_shape(need, shape, refused, pos, stop, room)

    def _partner_data(
        self, view: Any, one: np.ndarray, holder: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Line 10: the running jobs alone on some GPU, their remaining times alone (s),
        memory at their configs (GB) and GPUs on which they are alone."""
        times = self.times
        assert times is not None
        # not started just now (such a job is still queued in the view)
        partners, n_own = alone_holders(one, holder, view.job_status, QUEUED)
        mem_b = self._mem_run[partners]
        new = np.isnan(mem_b)
        if new.any():  # a running job's config is fixed for its lifetime (the engine's rule)
            for b in partners[new].tolist():
                self._mem_run[b] = times.mem(b, view.job_config.get(b))
            mem_b = self._mem_run[partners]
        solo_b = view.job_remaining[partners] / view.job_solo_rate[partners]
        return partners, solo_b, mem_b, n_own

    def _place(
        self,
        view: Any,
        j: int,
        g: int,
        free: np.ndarray,
        one: np.ndarray,
        holder: np.ndarray,
        run: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
        ok: np.ndarray,
    ) -> Start | None:
        """Lines 10-17 for job ``j``: the GPUs of the running jobs worth sharing with, best
        pairs first, or None (it waits).

        ``run`` is ``(partners, their remaining solo times, their memory, their GPUs alone)``
        and ``ok`` which of them Alg. 2 finds worth sharing with at ideal-placement prices.
        With ``placement=aware`` and a gang whose ideal placement is one server, a set on
        one server comes first, then one across servers priced there (reading 5).
        """
        times = self.times
        assert times is not None
        partners, solo_b, mem_b, n_own = run
        n_free = int(np.count_nonzero(free))
        sensitive = self.placement == "aware" and bool(times.sensitive[times.shape_of[j]])
        gpus = None
        if ok.any() and (sensitive or n_own[ok].sum() + n_free >= g):
            configs = [view.job_config.get(b) for b in partners[ok].tolist()]
            share, k, t = best_sub_batches(  # line 11, at ideal prices
                times, j, partners[ok], configs, solo_b[ok], mem_b[ok]
            )
            pairs = (partners[ok], share, k, t)
            if sensitive:  # lines 14-17 on one server
                gpus = gpus_on_one_server(g, free, one, holder, view.gpu_server, pairs)
            else:  # lines 14-17
                gpus = gpus_of_pairs(g, free, one, holder, pairs)
        if gpus is None and sensitive:
            # across servers: Alg. 2 again at the cross-server prices, every partner
            configs = [view.job_config.get(b) for b in partners.tolist()]
            share, k, t = best_sub_batches(times, j, partners, configs, solo_b, mem_b, spread=True)
            gpus = gpus_of_pairs(g, free, one, holder, (partners, share, k, t))
        if gpus is None:
            return None
        idx, chosen = gpus
        sized = [s for s in (times.profile(j)[0][c] for c in chosen) if s is not None]
        # the smallest sub-batch the partners need (reading 1)
        return Start(j, idx, min(sized) if sized else None)
