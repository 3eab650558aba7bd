"""GPU sharing and placement-aware speed: the engine's side of a performance model.

docs/architecture.md, "GPU sharing": a job's configuration chosen at start (``Start.config``, e.g. a
sub-batch for gradient accumulation, eq. 7 of the SJF-BSBF paper) stays for its lifetime;
the performance model may refuse a start (no GPU memory beside the jobs already there) and
gives each (re)started job its solo rate on the GPUs it was given; the interference ratios
xi of jobs sharing a GPU come from the model and may be replaced by the policy. The kernel
re-rates partners the moment one starts or ends (``kernel._rerate``).

*Rates that change with progress* (a job model whose speed depends on how far a job has
trained, e.g. Pollux's statistical efficiency, which changes from epoch to epoch): a
performance model with ``progress_rate(job, gpus, config, remaining_s, started) -> (rate,
next_s)`` is asked instead of ``rate`` at every start (``started`` True) and again, before
the policy is called, at the first decision point at which the job's remaining work has
come down to ``next_s`` (``started`` False; -inf: its rate never changes again while it
holds its GPUs). The engine keeps the decision point of the earliest such *milestone* in its
wake-up timer, so a job runs past its milestone by less than one slot.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusched.core.checks import Mechanism
from gpusched.core.jobs import JobTable
from gpusched.core.policy import call_policy
from gpusched.core.state import F_WAKE, I_N_RUN, SAVING, XI_DEFAULT
from gpusched.errors import InvariantError, PolicyError

__all__ = ["Sharing"]

#: s of work: a holder within this of its milestone has reached it
_LEVEL_TOL = 1e-6


class Sharing(Mechanism):
    """Configurations, start checks, interference and rates from the performance model."""

    #: per job, the remaining work at which its rate changes next (-inf: never; None: the
    #: performance model's rates do not change with progress)
    _levels: np.ndarray | None = None
    #: the last configuration text logged per job (the event log's ``config`` rows)
    _said: dict[int, str]

    def _setup_progress(self, n_jobs: int) -> None:
        self._said = {}
        if hasattr(self.perf, "progress_rate"):
            self._levels = np.full(n_jobs, -np.inf)

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
        staged = self._levels is not None
        for j in self._started_buf[:n].tolist():
            off = st.job_alloc_off[j]
            gpus = st.alloc_gpu[off : off + st.job_n_gpus[j]]  # (an elastic job's room is larger)
            if staged:
                rate = self._progress_rate(j, gpus, True)
            else:
                rate = float(self.perf.rate(int(j), gpus, self._config.get(j)))
                self._check_rate(j, rate)
            self.k.set_rate(j, rate)
            if self.events is not None:
                self._describe(j, now)

    def _check_rate(self, j: int, rate: float) -> None:
        if not 0 < rate < np.inf:  # (not NaN, not inf)
            raise InvariantError(
                f"performance model gave rate {rate} for job {self.jobs.job_id[j]}"
            )

    def _progress_rate(self, j: int, gpus: np.ndarray, started: bool) -> float:
        """The model's rate for holder ``j`` now, and its next milestone (kept)."""
        rem = float(self.state.job_remaining[j])
        rate, level = self.perf.progress_rate(int(j), gpus, self._config.get(j), rem, started)
        rate, level = float(rate), float(level)
        self._check_rate(j, rate)
        if not level < rem:  # (NaN too)
            raise InvariantError(
                f"performance model gave job {self.jobs.job_id[j]} a next rate change at "
                f"{level} s of work left, not below its {rem} s"
            )
        assert self._levels is not None
        self._levels[j] = level
        return rate

    def _describe(self, j: int, now: float) -> None:
        """Log the model's description of ``j``'s configuration when it changed."""
        describe = getattr(self.perf, "describe", None)
        text = None if describe is None else describe(int(j))
        if text and self._said.get(j) != text:
            self._said[j] = text
            assert self.events is not None
            self.events.note(self.state, now, "config", int(j), str(text))

    def _rerate_due(self, now: float) -> None:
        """Before the policy: re-rate every holder that reached its milestone."""
        levels = self._levels
        if levels is None:
            return
        st = self.state
        run = st.run[: st.sim_i.item(I_N_RUN)]
        if run.size == 0:
            return
        due = run[
            (st.job_remaining[run] <= levels[run] + _LEVEL_TOL) & (st.job_status[run] != SAVING)
        ]
        for j in np.sort(due).tolist():
            off = st.job_alloc_off[j]
            rate = self._progress_rate(j, st.alloc_gpu[off : off + st.job_n_gpus[j]], False)
            self.k.set_rate(j, rate)
            if self.events is not None:
                self._describe(j, now)

    def _milestone_wake(self) -> None:
        """Wake at the earliest milestone of a loading or training holder."""
        levels = self._levels
        if levels is None:
            return
        st = self.state
        run = st.run[: st.sim_i.item(I_N_RUN)]
        run = run[(levels[run] > -np.inf) & (st.job_status[run] != SAVING)]
        if run.size == 0:
            return
        # a holder trains at job_rate from job_anchor_t (the end of its load) on
        t = st.job_anchor_t[run] + (st.job_anchor_rem[run] - levels[run]) / st.job_rate[run]
        st.sim_f[F_WAKE] = min(st.sim_f[F_WAKE], float(t.min()))
