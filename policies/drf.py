"""Dominant Resource Fairness for parameter-server jobs, recomputed every slot.

The PD-ORS paper's second baseline (Yu et al., TNSE 2022, Sec. V, "(2) Dominant Resource
Fairness Scheduling (DRF) in Yarn and Mesos"): jobs are scheduled by their dominant
resource share to reach max-min fairness; "the number of workers and parameter servers
are computed and allocated dynamically", placed round-robin on the machines with room.

DRF's progressive filling (Ghodsi et al., NSDI 2011): repeatedly give one more worker to
the active job with the smallest dominant share (its largest held fraction of any
resource over the whole cluster), adding a parameter server whenever its workers would
exceed gamma per PS (eq. 2), until no job can grow: it has F workers (eq. 4) or its next
worker (with PS) fits nowhere. Readings where the paper is silent: every arrived,
unfinished job is active (none is rejected; jobs left at the horizon are unfinished);
the fill is recomputed at every slot from an empty cluster, in job order on ties, with
the round-robin cursor reset each slot so that an unchanged set of jobs keeps its
placement; all of a decision's allocations are applied together (the engine checks the
resulting ledger).
"""

from __future__ import annotations

import numpy as np

from gpusched.core.policy import Allocate, Decision


class DRFPolicy:
    """Progressive filling by dominant share, every slot."""

    name = "drf"
    knows_duration = False
    needs_predictor = False
    work_conserving = False
    places_roles = True

    def decide(self, view, now: float) -> Decision:
        led = view.ledger
        active = np.concatenate([view.running, view.queued])
        active.sort()
        total = led.capacity.sum(axis=0)
        scale = np.where(total > 0, 1.0 / np.where(total > 0, total, 1.0), 0.0)
        free = led.capacity.copy()
        h = led.n_machines
        w = {j: np.zeros(h, dtype=np.int64) for j in active.tolist()}
        s = {j: np.zeros(h, dtype=np.int64) for j in active.tolist()}
        share = dict.fromkeys(active.tolist(), 0.0)
        held = {j: np.zeros(len(total)) for j in active.tolist()}
        gamma = self.gamma
        cursor = 0
        growing = set(active.tolist())
        while growing:
            j = min(growing, key=lambda k: (share[k], k))
            n_w, n_s = int(w[j].sum()), int(s[j].sum())
            if n_w >= led.max_workers[j]:
                growing.discard(j)
                continue
            need_ps = n_s == 0 or n_w + 1 > gamma[j] * n_s
            placed = self._place(free, led.worker[j], cursor)
            if placed is None:
                growing.discard(j)
                continue
            m_w, after = placed
            trial = free.copy()
            trial[m_w] -= led.worker[j]
            m_s = None
            if need_ps:
                got = self._place(trial, led.ps[j], after)
                if got is None:
                    growing.discard(j)
                    continue
                m_s, after = got
                trial[m_s] -= led.ps[j]
            free, cursor = trial, after
            w[j][m_w] += 1
            held[j] += led.worker[j]
            if m_s is not None:
                s[j][m_s] += 1
                held[j] += led.ps[j]
            share[j] = float((held[j] * scale).max())
        actions = []
        for j in active.tolist():
            old_w, old_s = led.allocation(j)
            if not (np.array_equal(old_w, w[j]) and np.array_equal(old_s, s[j])):
                actions.append(Allocate(j, w[j], s[j]))
        busy = view.running.size or view.queued.size
        return Decision(actions=actions, wake_at=now + view.slot_s if busy else None)

    def prepare(self, jobs, cluster) -> None:
        from gpusched.jobmodels.ps import params_of

        self.gamma = params_of(jobs).gamma

    @staticmethod
    def _place(free: np.ndarray, demand: np.ndarray, start: int) -> tuple[int, int] | None:
        """The first machine from ``start`` (cyclically) with room for ``demand``, and the
        machine after it; None when none has room."""
        h = free.shape[0]
        fits = np.flatnonzero((free >= demand - 1e-9).all(axis=1))
        if fits.size == 0:
            return None
        after = fits[fits >= start]
        m = int(after[0]) if after.size else int(fits[0])
        return m, (m + 1) % h
