"""Jobs placed by roles on multi-resource machines: the engine's side of the resource ledger.

docs/architecture.md, "Multi-resource machines" (the PD-ORS family): a job that
declares per-role demands (workers, parameter servers) is started, resized, moved or paused
with :class:`~gpusched.core.policy.Allocate` and may be refused with
:class:`~gpusched.core.policy.Reject`. Every machine's capacity of every resource is checked
for a decision's Allocates together; the ledger (:mod:`gpusched.core.ledger`) is re-checked
after every decision.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusched.core.checks import Mechanism
from gpusched.core.ledger import RESOURCES, Ledger, LedgerView, capacities
from gpusched.core.policy import Allocate, Preempt, Reject
from gpusched.core.state import I_N_REJECTED, QUEUED, REJECTED, RUNNING
from gpusched.errors import InvariantError, PolicyError, TraceError, show_name, show_value

__all__ = ["Roles"]


class Roles(Mechanism):
    """Allocate and Reject of jobs placed by roles, checked against the ledger."""

    def _setup_ledger(self, roles: Any) -> None:
        """Keep the resource ledger when some job is placed by roles (docs/architecture.md,
        "Multi-resource machines"); refuse what cannot run."""
        places = bool(getattr(self.policy, "places_roles", False))
        mask = None if roles is None else np.asarray(roles.mask, dtype=bool)
        if mask is None or not mask.any():
            if places and len(self.jobs):
                raise PolicyError(
                    f"policy '{self.name}' allocates workers and parameter servers, but no "
                    "job of this trace is placed by roles (num_gpus 0 with the "
                    "parameter-server columns)"
                )
            return
        name = show_name(self.jobs.source or "<trace>")
        if not mask.all():
            raise TraceError(
                f"{name}: {int(mask.sum())} job(s) are placed by roles (num_gpus 0) and "
                f"{int((~mask).sum())} are gangs on GPU indices; a run holds one kind only"
            )
        if not places:
            raise PolicyError(
                f"policy '{self.name}' places gangs on GPU indices, but the {int(mask.sum())} "
                f"jobs of {name} are placed by roles (workers and parameter servers, "
                "num_gpus 0): use a policy that allocates them (fifo-ps, drf, dorm, oasis, "
                "pd-ors)"
            )
        self._refuse_phases("jobs placed by roles (--load-s/--save-s must be 0)")
        cap = capacities(self.cluster)
        self._refuse_oversized(cap, roles)
        self.ledger = Ledger(cap, roles.worker, roles.ps, roles.max_workers)
        self.view.ledger = LedgerView(self.ledger, mask)

    def _refuse_oversized(self, cap: np.ndarray, roles: Any) -> None:
        """A job whose worker or parameter server fits on no machine can never run: refuse
        the trace, as a gang larger than the cluster is refused (one line, the first such
        job's file line and column)."""
        name = show_name(self.jobs.source or "<trace>")
        for role, col, demand in (
            ("a worker", "worker", np.asarray(roles.worker)),
            ("a parameter server", "ps", np.asarray(roles.ps)),
        ):
            fits = np.all(demand[:, None, :] <= cap[None, :, :] * (1 + 1e-9) + 1e-9, axis=2)
            bad = np.flatnonzero(np.asarray(roles.mask, dtype=bool) & ~np.any(fits, axis=1))
            if bad.size:
                j = int(bad[0])
                top = cap.max(axis=0)
                r = int(np.argmax(np.divide(demand[j], np.where(top > 0, top, 1e-300))))
                line = int(self.jobs.line[j]) if len(self.jobs.line) else j + 2
                raise TraceError(
                    f"{name}:{line}: column '{col}_{RESOURCES[r]}': {bad.size} job(s) have "
                    f"{role} that fits on no machine of '{self.cluster.name}', first "
                    f"{show_value(str(self.jobs.job_id[j]))} asks {demand[j, r]:g} "
                    f"{RESOURCES[r]} (a machine has at most {top[r]:g}; every resource "
                    "must fit on one machine)"
                )

    def _counts(self, j: int, value: Any, what: str, now: float) -> np.ndarray:
        """An Allocate's counts per machine as int64, or a PolicyError saying what is wrong."""
        assert self.ledger is not None
        h = self.ledger.n_machines
        try:
            arr = np.asarray(value)
        except (ValueError, TypeError):
            arr = np.asarray([None], dtype=object)
        if arr.shape != (h,) or not np.issubdtype(arr.dtype, np.integer):
            raise self._fail(
                j,
                now,
                f"Allocate.{what} must be {h} integer counts (one per machine), got {value!r}",
            )
        if (arr < 0).any():
            raise self._fail(j, now, f"Allocate.{what} has a negative count: {arr.tolist()}")
        return arr.astype(np.int64)

    def _check_room(self, actions: Any, now: float) -> None:
        """All of a decision's Allocates must fit together (capacity of every resource of
        every machine, after the whole decision: jobs may swap machines in one)."""
        assert self.ledger is not None
        changes: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        if not isinstance(actions, list | tuple):
            return  # _apply reports it
        for action in actions:
            if isinstance(action, Allocate):
                j = self._check_job(action.job, now)
                w = self._counts(j, action.workers, "workers", now)
                changes[j] = (w, self._counts(j, action.ps, "ps", now))
            elif isinstance(action, Preempt | Reject):
                j = self._check_job(action.job, now)
                z = np.zeros(self.ledger.n_machines, dtype=np.int64)
                changes[j] = (z, z)
        why = self.ledger.room_problem(changes)
        if why:
            raise self._fail(None, now, f"Allocate {why}")

    def _apply_allocate(self, action: Allocate, now: float) -> None:
        """Start, resize or pause a job placed by roles (docs/architecture.md)."""
        st = self.state
        j = self._check_job(action.job, now)
        if self.ledger is None:
            raise self._fail(j, now, "Allocate is for jobs placed by roles; this run has none")
        err = self._status_problem(j, now, (QUEUED, RUNNING))
        if err:
            raise err
        w = self._counts(j, action.workers, "workers", now)
        s = self._counts(j, action.ps, "ps", now)
        why = self.ledger.job_problem(j, w, s)
        if why:
            raise self._fail(j, now, why)
        if self.events is not None:
            self.events.note(st, now, "allocate", j, _placement(w, s))
        queued = st.job_status[j] == QUEUED
        if int(w.sum()) == 0:  # pause: back to the queue, keeping its progress
            if not queued:
                self.ledger.release(j, now)
                self.k.preempt(j, now)
            return
        rate = float(self.roles.rate(j, w, s))
        if not (rate > 0 and np.isfinite(rate)):
            raise InvariantError(f"role model gave rate {rate} for job {self.jobs.job_id[j]}")
        self.ledger.set(j, w, s, now)
        if queued:
            self.k.start_on(j, np.empty(0, np.int32), now)
        self.k.set_rate(j, rate)

    def _apply_reject(self, action: Reject, now: float) -> None:
        """End a queued job that never ran with status rejected."""
        st = self.state
        j = self._check_job(action.job, now)
        err = self._status_problem(j, now, (QUEUED,))
        if err:
            raise err
        if not np.isnan(st.job_first_start[j]):
            raise self._fail(j, now, "has run already; only a job that never ran may be rejected")
        st.job_status[j] = REJECTED
        st.sim_i[I_N_REJECTED] += 1
        if self.events is not None:
            self.events.note(st, now, "reject", j)


def _placement(workers: np.ndarray, ps: np.ndarray) -> str:
    """A role job's counts per machine in words: ``workers 2@m0 1@m3; ps 1@m0``."""
    if not workers.any():
        return "paused"

    def per(c: np.ndarray) -> str:
        return " ".join(f"{int(c[m])}@m{m}" for m in np.flatnonzero(c).tolist())

    return f"workers {per(workers)}; ps {per(ps)}"
