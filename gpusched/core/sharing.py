"""GPU sharing and placement-aware speed: the engine's side of a performance model.

DESIGN.md, "GPU sharing": a job's configuration chosen at start (``Start.config``, e.g. a
sub-batch for gradient accumulation, eq. 7 of the SJF-BSBF paper) stays for its lifetime;
the performance model may refuse a start (no GPU memory beside the jobs already there) and
gives each (re)started job its solo rate on the GPUs it was given; the interference ratios
xi of jobs sharing a GPU come from the model and may be replaced by the policy. The kernel
re-rates partners the moment one starts or ends (``kernel._rerate``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusched.core.checks import Mechanism
from gpusched.core.jobs import JobTable
from gpusched.core.policy import call_policy
from gpusched.core.state import XI_DEFAULT
from gpusched.errors import InvariantError, PolicyError

__all__ = ["Sharing"]


class Sharing(Mechanism):
    """Configurations, start checks, interference and rates from the performance model."""

    def _interference(self, jobs: JobTable) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Per-job interference kinds and the xi matrix (SJF-BSBF paper, eq. 5-6).

        From the performance model's ``interference()`` when it has one (else one kind and
        :data:`~gpusched.core.state.XI_DEFAULT`), then the policy's ``interference(xi)`` hook
        may replace the matrix (the paper's Fig. 6b injects one ratio for every pair).
        """
        kind: np.ndarray | None = None
        xi: np.ndarray | None = None
        got = getattr(self.perf, "interference", None)
        if got is not None:
            kind, xi = got()
        hook = getattr(self.policy, "interference", None)
        if hook is not None:
            base = np.full((1, 1), XI_DEFAULT) if xi is None else np.asarray(xi, np.float64)
            xi = call_policy(self.name, "interference", None, hook, base.copy())
            try:
                ok = np.asarray(xi, dtype=np.float64)
            except (TypeError, ValueError):
                ok = np.empty((0, 0))
            if ok.shape != base.shape or not (np.isfinite(ok).all() and (ok >= 1).all()):
                raise PolicyError(
                    f"policy '{self.name}': interference() must return a {base.shape[0]}x"
                    f"{base.shape[1]} matrix of finite ratios >= 1"
                )
            xi = ok
        return kind, xi

    def _take_config(self, j: int, config: Any, now: float) -> None:
        """Record a Start's job configuration; it stays the job's for its lifetime."""
        if config is None:
            return
        if self.perf is None or not hasattr(self.perf, "check_start"):
            raise self._fail(j, now, "gives a config, but no performance model reads one")
        old = self._config.get(j)
        started = not np.isnan(self.state.job_first_start[j])
        if (old is not None or started) and old != config:
            raise self._fail(
                j, now, f"config {config!r} differs from the {old!r} it first started with"
            )
        self._config[j] = config

    def _check_start(self, j: int, gpus: np.ndarray, now: float) -> None:
        """Let the performance model refuse a start (bad config, no memory beside partners)."""
        check = getattr(self.perf, "check_start", None)
        if check is None:
            return
        st = self.state
        config = self._config.get(j)
        if st.gpu_job.shape[1] <= 2:
            # the callers refuse full GPUs, so (C <= 2) each of its GPUs holds at most one
            # other job, in slot 0 (slots are packed): the same groups and order as below
            who = st.gpu_job[gpus, 0] if gpus.size else gpus
            ps = sorted(set(who.tolist())) or [-1]
            for p in ps:
                on = gpus if len(ps) == 1 else gpus[who == p]
                why = check(j, on, config, [(p, self._config.get(p))] if p >= 0 else [])
                if why:
                    raise self._fail(j, now, str(why))
            return
        rows = st.gpu_job[gpus]
        beside = [tuple(sorted(set(row[row >= 0].tolist()) - {j})) for row in rows]
        for group in sorted(set(beside)) or [()]:  # the jobs beside it, GPU by GPU
            on = gpus[[b == group for b in beside]]
            why = check(j, on, config, [(p, self._config.get(p)) for p in group])
            if why:
                raise self._fail(j, now, str(why))

    def _apply_perf(self, now: float) -> None:
        """Set the progress rate of every job (re)started at ``now`` from its placement."""
        st = self.state
        n = self.k.started_at(now, self._started_buf)
        for j in self._started_buf[:n].tolist():
            gpus = st.alloc_gpu[st.job_alloc_off[j] : st.job_alloc_off[j + 1]]
            rate = float(self.perf.rate(int(j), gpus, self._config.get(j)))
            if not 0 < rate < np.inf:  # (not NaN, not inf)
                raise InvariantError(
                    f"performance model gave rate {rate} for job {self.jobs.job_id[j]}"
                )
            self.k.set_rate(j, rate)
