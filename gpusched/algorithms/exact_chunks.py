"""The offline optimum of the edge-cloud paper's ILP (4), simplified with ``zeta_j = 1``, as a MILP.

N. Wang, R. Zhou, L. Jiao, R. Zhang, B. Li, Z. Li, "Preemptive Scheduling for Distributed
Machine Learning Jobs in Edge-Cloud Networks", IEEE JSAC 2022: Sec. III (system model, eq. 1-2),
Sec. IV-B (ILP (4), the fractional flow time of eq. 3), solved exactly with
``scipy.optimize.milp`` (HiGHS) for the small inputs of Sec. V's "Actual Competitive Ratio"
(Fig. 12-13: 5-25 jobs, 5-45 servers). With ``zeta_j = 1`` a worker's speed does not depend on
where the PS sits, so (4c), (4d), (4f) and (4g) drop out and the PS plays no part.

An :class:`Instance` gives, per job j and worker column w, ``slots[j, w]`` (the paper's
``p_jw = E_j B_j / n_jw``, slots one chunk of j needs on w; ``inf`` where ``v_jw = 0``) and
``delay[j, w]`` (the transmission delay, eq. 2i: a chunk of j starts on w no earlier than slot
``r_j + delay[j, w]``). Slots are 0-based; slot t is ``[t, t+1)``; jobs run in slots
``0 .. horizon-1``. Columns flagged in ``cloud`` are unbounded (the paper's cloud ``s_c``):
any number of chunks run on one at once, without preemption.

Objective (4): minimise ``sum_j sum_d f_jd`` with eq. 3,
``f_jd = sum_t y_jdw(t) (t - r_j) / (D_j p_jw)`` on the one worker w the chunk uses.

**Non-integer slots.** A chunk occupies ``ceil(p_jw)`` whole slots of its worker (the worker
serves no other chunk in the rest of the last one). Eq. 3 counts each of them in full
(``y_jdw(t) = 1``) except the chunk's *last* slot, which counts the share of the slot the chunk
trains, ``phi_jw = p_jw - ceil(p_jw) + 1`` in ``(0, 1]``: a chunk's weights then sum to
``1 / D_j`` exactly, as in eq. 3 with ``sum_t y = p``, and Lemma 1 (``f_jd <= (c_jd - r_j) /
D_j``, ``c_jd`` the last slot + 1) still holds. With integer slots this is eq. 3 as printed.
To count a partial slot in full instead (weights ``1 / (D_j ceil(p_jw))``, a larger optimum,
still a lower bound on the JCT in slots), pass ``np.ceil(slots)``.

**The model.** Chunks of one job are identical, so the model counts them per worker instead of
naming them (no symmetry between chunks to break). For each pair (j, w) where w can serve j:

* ``n_jw``: integer, the chunks of j on w (the paper's ``x_jdw`` summed over d; a chunk never
  migrates, (4e)); ``sum_w n_jw = D_j``;
* edge w, slots ``t >= r_j + delay_jw`` only ((2i)/(4h) by construction): ``u_jw(t)``, the
  chunks' full slots, and for ``phi_jw < 1`` ``l_jw(t)``, their last slots, cost
  ``(t - r_j) / (D_j p_jw)`` and ``phi_jw`` times that (eq. 3);
  ``sum_t u_jw(t) = (ceil(p_jw) - 1) n_jw`` and ``sum_t l_jw(t) = n_jw`` ((4a): each chunk
  gets its ``E_j B_j`` mini-batches; ``ceil(p_jw) n_jw`` full slots when ``phi_jw = 1``);
  ``sum_j u_jw(t) + l_jw(t) <= 1`` per slot ((4b); it also keeps two chunks of j on w from
  training together, (4e));
* cloud w: no slot columns: with unbounded capacity a chunk is best started at
  ``r_j + delay_jw`` and run to its end, so ``n_jw`` carries the fixed eq. 3 of one chunk
  there; a chunk that would end after the horizon gets no column.

Only ``n`` is integer. With ``n`` fixed, each edge worker is a transportation problem (slots of
work of each kind, released at ``r_j + delay_jw``, to slots), whose optimum is integral, and
:func:`solve` rebuilds it by the paper's HAPRF rule: in each slot the released unit of work with
the highest weight ``1 / (D_j p_jw)`` (``phi`` times that for a last slot) runs; swapping a
lighter unit run earlier with a heavier one run later never raises the cost, nor does running a
released unit instead of idling. A pair's full slots outweigh its last ones, so every chunk's
last slot comes after its full ones; chunk i of the pair gets the pair's full slots
``i (k - 1) .. (i + 1)(k - 1) - 1`` and its i-th last slot. The model's optimum is therefore the
optimum of (4), and the schedule returned attains it.

Pruning and tightening; some optimal schedule passes them all (every optimal schedule passes
the dominance test, and making one non-idling keeps it optimal):

* dominance: moving a chunk from an edge worker to the cloud leaves every other chunk as it
  was, so in an optimal schedule no edge chunk costs more than it would on the cloud.
  A full slot at t costs at least ``(t - r_j) + phi (t + 1 - r_j)`` plus the other slots as
  early as possible, a last slot at t ``phi (t - r_j)`` plus the others (in units of
  ``1 / (D_j p_jw)``): slots that would cost more get no column;
* non-idling: moving a slot of a chunk from t to an earlier idle slot t' of its worker where
  the chunk may run changes eq. 3 by at most ``phi (t' - t) < 0`` (in those units; the last
  slot may change),
  so some optimal schedule keeps each edge worker busy until its chunks are done and worker
  w's slots end by ``L_w = max_j (r_j + delay_jw) + sum_j D_j ceil(p_jw)``, over the jobs it
  may serve (repeated as the dominance drops pairs);
* ``u_jw(t) + l_jw(t) <= n_jw`` (implied for integers; tightens the LP relaxation);
* identical edge workers (same ``slots`` and ``delay`` columns) are interchangeable: they are
  ordered by busy slots, ``sum u_jw + l_jw >= sum u_jw' + l_jw'`` for ``w < w'``.

HiGHS stops at a relative gap of :data:`MIP_REL_GAP`; "optimal" means within that gap of the
dual bound, which :attr:`Exact.bound` reports. A run stopped by ``time_limit`` returns the best
schedule found, if any, and the bound; it depends on the machine's speed, unlike an optimal
result. :func:`horizon_bound` gives a horizon long enough not to change the optimum.
:func:`brute_force` enumerates schedules chunk by chunk for tiny instances (the tests' check).

Speed augmentation is the caller's: the online run passes ``slots / (1 + eps)``; the optimum
uses speed 1.

Run time grows with the load more than with the size. Measured on random instances of 5-25
jobs of 1-4 chunks (non-integer slots, 1-4 each, releases over J or 2J slots) on 5 or 10 edge
workers and a cloud, one core: 5 jobs within 5 s; 15-25 jobs 3-60 s, the longest with 25 jobs
on 5 workers; 1 of 24 such cases stopped at the 60 s limit, 0.6 % above its bound. Non-integer
slots are slower than integer ones: a chunk's last slot, cheap at its share, may wait long.
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from gpusched.algorithms.sparse_milp import SparseMILP

__all__ = ["MIP_REL_GAP", "Exact", "Instance", "brute_force", "horizon_bound", "solve"]

#: HiGHS's relative optimality gap (its default is 1e-4).
MIP_REL_GAP = 1e-6
#: Relative slack when rounding slots up (``ceil(2.0000000001)`` is 2).
_EPS = 1e-9

Status = Literal["optimal", "time_limit", "infeasible"]


@dataclass(frozen=True)
class Instance:
    """One input of ILP (4): jobs of identical chunks, worker columns, delays.

    Attributes
    ----------
    release
        ``(J,)`` int, ``r_j``: the job's arrival slot.
    chunks
        ``(J,)`` int, ``D_j >= 1``: the job's data chunks.
    slots
        ``(J, W)`` float, ``E_j B_j / n_jw``: slots one chunk of j needs on worker column w
        (> 0; ``inf`` where w cannot serve j, ``v_jw = 0``).
    delay
        ``(J, W)`` int, ``Delta_jw >= 0``: slots after ``r_j`` before a chunk of j may start on
        w (eq. 2i).
    cloud
        ``(W,)`` bool, True for a column that is the cloud (unbounded: any number of chunks at
        once, no preemption); ``None``: every column is one edge worker.
    """

    release: np.ndarray
    chunks: np.ndarray
    slots: np.ndarray
    delay: np.ndarray
    cloud: np.ndarray | None = field(default=None)

    @property
    def n_jobs(self) -> int:
        """J."""
        return int(np.asarray(self.release).shape[0])

    @property
    def n_workers(self) -> int:
        """W, worker columns (edge workers and clouds)."""
        return int(np.asarray(self.slots).shape[1])

    def is_cloud(self) -> np.ndarray:
        """``(W,)`` bool: the cloud columns."""
        if self.cloud is None:
            return np.zeros(self.n_workers, dtype=bool)
        return np.asarray(self.cloud, dtype=bool)

    def chunk_job(self) -> np.ndarray:
        """``(C,)`` int64: the job of each chunk, chunks numbered job by job."""
        return np.repeat(np.arange(self.n_jobs), np.asarray(self.chunks, dtype=np.int64))


@dataclass(frozen=True)
class Exact:
    """The optimum of ILP (4) (or the best schedule found within the time limit).

    Chunks are numbered job by job (``Instance.chunk_job``); C is their count.

    Attributes
    ----------
    objective
        ``sum_j sum_d f_jd`` (eq. 3) of the schedule returned; ``inf`` if there is none
        (infeasible, or no schedule found in the time limit).
    status
        ``"optimal"``, ``"time_limit"`` (then ``objective`` is the incumbent's, ``bound`` the
        best bound) or ``"infeasible"`` (the horizon is too short).
    bound
        The solver's dual bound, a lower bound on the optimum (<= ``objective``).
    assignment
        ``(C,)`` int64 worker column of each chunk (-1 without a schedule).
    runs
        ``(C, horizon)`` bool: the slots in which each chunk trains (``ceil(p)`` of them).
    completion
        ``(J,)`` int64 ``c_j``: the last slot a chunk of j trains, plus 1 (-1 without a
        schedule). ``total_jct`` is ``sum_j (c_j - r_j)`` of this schedule, which is optimal
        for eq. 3, not for the JCT.
    release
        ``(J,)`` int64 ``r_j``, the instance's (for ``total_jct``).
    runtime
        Wall-clock seconds spent (model and solver).
    """

    objective: float
    status: Status
    bound: float
    assignment: np.ndarray
    runs: np.ndarray
    completion: np.ndarray
    release: np.ndarray
    runtime: float

    @property
    def total_jct(self) -> float:
        """``sum_j (c_j - r_j)`` of the returned schedule (``inf`` without one), slots."""
        if (self.completion < 0).any():
            return math.inf
        return float((self.completion - self.release).sum())


def _ceil(p: np.ndarray) -> np.ndarray:
    """``ceil(p)`` with a relative slack for float noise; ``inf`` stays ``inf``."""
    with np.errstate(invalid="ignore"):
        out: np.ndarray = np.where(np.isfinite(p), np.ceil(p * (1.0 - _EPS)), np.inf)
    return out


def _last_weight(p: np.ndarray, whole: np.ndarray) -> np.ndarray:
    """``phi = p - ceil(p) + 1``: the share of its last slot a chunk trains (1 if p is whole)."""
    with np.errstate(invalid="ignore"):
        phi = np.where(np.isfinite(p), p - whole + 1.0, 1.0)
    out: np.ndarray = np.where(phi >= 1.0 - _EPS, 1.0, phi)
    return out


def _chunk_cost(first: int, n_slots: int, release: int, p: float, phi: float, d: int) -> float:
    """Eq. 3 of one chunk run in ``first .. first + n_slots - 1``, the last at ``phi``."""
    t = np.arange(first, first + n_slots, dtype=np.float64) - release
    weight = np.ones(n_slots)
    weight[-1] = phi
    return float((t * weight).sum() / (d * p))


def _check_int(name: str, a: np.ndarray, shape: tuple[int, ...], low: int) -> None:
    """Raise ValueError unless ``a`` is integers >= ``low`` of ``shape``."""
    if a.shape != shape:
        raise ValueError(f"Instance.{name}: expected shape {shape}, got {a.shape}")
    if a.dtype.kind not in "iu" or (a < low).any():
        raise ValueError(f"Instance.{name}: expected integers >= {low}, got {a.tolist()!r}")


def _check(inst: Instance, horizon: int) -> None:
    """Raise ValueError on the first bad field or argument."""
    slots = np.asarray(inst.slots)
    if slots.ndim != 2 or slots.shape[1] < 1:
        raise ValueError(f"Instance.slots: expected a (J, W) array with W >= 1, got {slots.shape}")
    n_j, n_w = slots.shape
    _check_int("release", np.asarray(inst.release), (n_j,), 0)
    _check_int("chunks", np.asarray(inst.chunks), (n_j,), 1)
    _check_int("delay", np.asarray(inst.delay), (n_j, n_w), 0)
    if slots.dtype.kind not in "iuf" or np.isnan(slots).any() or (slots <= 0).any():
        raise ValueError("Instance.slots: expected numbers > 0 (inf where w cannot serve j)")
    bad = np.flatnonzero(~np.isfinite(slots).any(axis=1))
    if bad.size:
        raise ValueError(f"Instance.slots: job {int(bad[0])} has no worker (all inf)")
    if inst.cloud is not None:
        cloud = np.asarray(inst.cloud)
        if cloud.shape != (n_w,) or cloud.dtype != np.bool_:
            raise ValueError(f"Instance.cloud: expected ({n_w},) bool, got {cloud!r}")
    if isinstance(horizon, bool) or not isinstance(horizon, int | np.integer) or horizon < 1:
        raise ValueError(f"horizon must be an integer >= 1 (slots), got {horizon!r}")


def horizon_bound(inst: Instance) -> int:
    """A horizon long enough that :func:`solve` finds the optimum of (4) without a horizon.

    Some optimal schedule keeps every edge worker busy until its chunks are done (see the
    module docstring), so nothing runs past ``max_w L_w``; a cloud chunk ends by
    ``r_j + delay_jw + ceil(p_jw)``. Loose: a longer horizon only makes the model bigger.

    Parameters
    ----------
    inst
        The instance.

    Returns
    -------
    int
        Slots.
    """
    _check(inst, 1)
    release = np.asarray(inst.release, dtype=np.int64)
    slots = np.asarray(inst.slots, dtype=np.float64)
    whole = _ceil(slots)
    ok = np.isfinite(slots)
    ready = release[:, None] + np.asarray(inst.delay, dtype=np.int64)
    cloud = inst.is_cloud()
    ends = [int((ready + whole)[ok[:, w], w].max(initial=0)) for w in np.flatnonzero(cloud)]
    for w in np.flatnonzero(~cloud):
        jobs = ok[:, w]
        if jobs.any():
            work = (np.asarray(inst.chunks)[jobs] * whole[jobs, w]).sum()
            ends.append(int(ready[jobs, w].max()) + int(work))
    return max(ends + [1])


@dataclass(frozen=True)
class _Pair:
    """One (job, worker) pair: its chunk count column and, on the edge, its slot columns."""

    job: int
    worker: int
    n: int  # column: chunks of the job on the worker
    t0: int  # r_j + delay_jw: the first slot a chunk may train
    k: int  # ceil(p_jw): slots per chunk
    phi: float  # share of its last slot a chunk trains
    weight: float  # 1 / (D_j p_jw): eq. 3's weight of one full slot
    full: np.ndarray  # edge: columns u(t), t = t0 .., slots trained in full
    last: np.ndarray  # edge, phi < 1: columns l(t), chunks' last slots


def _model_data(inst: Instance) -> tuple[np.ndarray, ...]:
    """``release, chunks, slots, ready, ceil(slots), phi`` as arrays."""
    release = np.asarray(inst.release, dtype=np.int64)
    slots = np.asarray(inst.slots, dtype=np.float64)
    whole = _ceil(slots)
    ready = release[:, None] + np.asarray(inst.delay, dtype=np.int64)
    chunks = np.asarray(inst.chunks, dtype=np.int64)
    return release, chunks, slots, ready, whole, _last_weight(slots, whole)


def _early(m: int, d: int) -> float:
    """``sum_{i<m} (d + i)``: m slots as early as possible, ``d`` slots after the release."""
    return m * d + m * (m - 1) / 2


def _windows(inst: Instance, horizon: int) -> tuple[np.ndarray, np.ndarray]:
    """Where chunks of j may train on w in some optimal schedule: ``(J, W)`` int64 ``full``
    and ``last``, a chunk's full slots lie in ``ready .. full - 1`` and its last slot in
    ``ready .. last - 1``; ``last < ready + ceil(p)`` (then 0) where no chunk of j goes to w.

    Edge chunks cost at most the cloud's (dominance) and each edge worker stops at ``L_w``
    (non-idling); see the module docstring.
    """
    release, chunks, slots, ready, whole, phi = _model_data(inst)
    cloud = inst.is_cloud()
    last = np.where(np.isfinite(slots), horizon, 0).astype(np.int64)
    full = last.copy()
    # cloud chunks: fixed cost, if they end by the horizon
    best = np.full(inst.n_jobs, np.inf)
    for j, w in zip(*np.nonzero((last > 0) & cloud[None, :]), strict=True):
        if ready[j, w] + whole[j, w] <= horizon:
            cost = _chunk_cost(
                int(ready[j, w]),
                int(whole[j, w]),
                int(release[j]),
                slots[j, w],
                phi[j, w],
                chunks[j],
            )
            best[j] = min(best[j], cost)
    for j, w in zip(
        *np.nonzero((last > 0) & ~cloud[None, :] & np.isfinite(best)[:, None]), strict=True
    ):
        # in slots of 1 / weight: an edge chunk costing more than the cloud's is never optimal
        k, d, f = int(whole[j, w]), int(ready[j, w] - release[j]), float(phi[j, w])
        room = best[j] * chunks[j] * slots[j, w] * (1.0 + _EPS) + _EPS
        # last slot at t: phi (t - r) + the other k - 1 as early as possible
        last[j, w] = min(last[j, w], release[j] + math.floor((room - _early(k - 1, d)) / f) + 1)
        if f < 1.0 and k == 1:  # no full slots
            full[j, w] = ready[j, w]
        elif f < 1.0:  # a full slot at t: (t - r) + phi (t + 1 - r) + k - 2 early ones
            t_full = math.floor((room - f - _early(k - 2, d)) / (1.0 + f))
            full[j, w] = min(full[j, w], release[j] + t_full + 1)
        else:  # every slot is a full one, the last too
            full[j, w] = last[j, w]
    # non-idling, until nothing changes: worker w ends by L_w = max ready + work of its pairs
    while True:
        fits = (last >= ready + whole) & (full >= ready + whole - 1)
        last = np.where(fits, last, 0)
        full = np.where(fits, full, 0)
        changed = False
        for w in np.flatnonzero(~cloud):
            jobs = fits[:, w]
            if jobs.any():
                end = int(ready[jobs, w].max() + (chunks[jobs] * whole[jobs, w]).sum())
                if (last[jobs, w] > end).any() or (full[jobs, w] > end).any():
                    last[jobs, w] = np.minimum(last[jobs, w], end)
                    full[jobs, w] = np.minimum(full[jobs, w], end)
                    changed = True
        if not changed:
            return full, last


def _build(inst: Instance, horizon: int) -> tuple[SparseMILP, list[_Pair]] | None:
    """The MILP of (4), or None when some job cannot place a chunk anywhere by the horizon."""
    release, chunks, slots, ready, whole, phi = _model_data(inst)
    cloud = inst.is_cloud()
    stop_full, stop_last = _windows(inst, horizon)
    model, pairs, empty = SparseMILP(), [], np.empty(0, dtype=np.int64)
    for j in range(inst.n_jobs):
        mine = []
        for w in np.flatnonzero(stop_last[j] > 0):
            p, k, t0 = float(slots[j, w]), int(whole[j, w]), int(ready[j, w])
            f, weight = float(phi[j, w]), 1.0 / (int(chunks[j]) * p)
            if cloud[w]:  # fixed cost of a chunk: start at once, run to the end
                cost = _chunk_cost(t0, k, int(release[j]), p, f, int(chunks[j]))
                n = int(model.columns((1,), float(chunks[j]), cost=np.array([cost]))[0])
                mine.append(_Pair(j, int(w), n, t0, k, f, weight, empty, empty))
                continue
            n = int(model.columns((1,), float(chunks[j]))[0])
            t = np.arange(t0, stop_full[j, w], dtype=np.float64) - release[j]
            full = model.columns(t.shape, 1.0, integer=False, cost=weight * t)
            last = empty
            if f < 1.0:
                t = np.arange(t0, stop_last[j, w], dtype=np.float64) - release[j]
                last = model.columns(t.shape, 1.0, integer=False, cost=f * weight * t)
            mine.append(_Pair(j, int(w), n, t0, k, f, weight, full, last))
        if not mine:
            return None
        pairs.extend(mine)
        # every chunk on one worker: sum_w n_jw = D_j
        model.row([(np.array([q.n for q in mine]), 1.0)], float(chunks[j]), float(chunks[j]))
    _pair_rows(model, pairs)
    _worker_rows(model, pairs, inst, stop_last.max(axis=0, initial=0))
    return model, pairs


def _pair_rows(model: SparseMILP, pairs: list[_Pair]) -> None:
    """(4a) per edge pair, split into full and last slots, and ``u(t) + l(t) <= n``."""
    for q in pairs:
        if not (q.full.size or q.last.size):  # the cloud
            continue
        if q.phi < 1.0:
            if q.k > 1:  # (k - 1) n full slots
                model.row([(q.full, 1.0), (q.n, -(q.k - 1.0))], 0.0, 0.0)
            model.row([(q.last, 1.0), (q.n, -1.0)], 0.0, 0.0)  # and n last ones
        else:
            model.row([(q.full, 1.0), (q.n, -float(q.k))], 0.0, 0.0)  # k n slots
        rows = model.new_rows(max(q.full.size, q.last.size), -np.inf, 0.0)  # u + l <= n
        model.rows_of(rows[: q.full.size], q.full, 1.0)
        model.rows_of(rows[: q.last.size], q.last, 1.0)
        model.rows_of(rows, np.full(rows.size, q.n), -1.0)


def _worker_rows(model: SparseMILP, pairs: list[_Pair], inst: Instance, end: np.ndarray) -> None:
    """(4b) per edge worker and slot, and the order of identical edge workers."""
    busy: dict[int, list[np.ndarray]] = {}
    for w in np.flatnonzero(~inst.is_cloud()):
        mine = [q for q in pairs if q.worker == w]
        if not mine:
            continue
        busy[int(w)] = [c for q in mine for c in (q.full, q.last)]
        rows = model.new_rows(int(end[w]), -np.inf, 1.0)  # (4b): sum_j u_jw(t) + l_jw(t) <= 1
        for q in mine:
            model.rows_of(rows[q.t0 : q.t0 + q.full.size], q.full, 1.0)
            model.rows_of(rows[q.t0 : q.t0 + q.last.size], q.last, 1.0)
    # identical edge workers (same columns, so same windows), ordered by busy slots
    key = np.concatenate([np.asarray(inst.slots, np.float64), np.asarray(inst.delay, np.float64)])
    groups: dict[bytes, list[int]] = {}
    for i in sorted(busy):
        groups.setdefault(key[:, i].tobytes(), []).append(i)
    for same in groups.values():
        for a, b in itertools.pairwise(same):  # sum u_a + l_a >= sum u_b + l_b
            model.row([(np.concatenate(busy[a]), 1.0), (np.concatenate(busy[b]), -1.0)], 0, np.inf)


def _greedy(mine: list[tuple[_Pair, int]]) -> list[list[int]]:
    """One edge worker's optimal slots for its chunks: per pair, the slots of each chunk.

    Every slot of a chunk is a unit of work of weight ``weight`` (``phi weight`` for its last
    slot) released at ``t0``; a slot at t costs ``weight (t - r_j)``. Running, in each slot, the
    heaviest released unit left is optimal (swapping a lighter unit run earlier with a heavier
    one run later, both released, never raises the cost; idling while a unit is released
    never helps). A pair's full slots outweigh its last ones, so each chunk's last slot comes
    after its full ones. Ties: lower job first (deterministic).
    """
    # unit kinds: (pair index, is last, count, weight, release)
    kinds: list[tuple[int, bool, int, float, int]] = []
    for i, (q, n) in enumerate(mine):
        if q.phi < 1.0:
            kinds += [
                (i, False, n * (q.k - 1), q.weight, q.t0),
                (i, True, n, q.phi * q.weight, q.t0),
            ]
        else:
            kinds.append((i, False, n * q.k, q.weight, q.t0))
    left = [c for _, _, c, _, _ in kinds]
    full: list[list[int]] = [[] for _ in mine]
    last: list[list[int]] = [[] for _ in mine]
    t = min((k[4] for k in kinds), default=0)
    while any(left):
        ready = [x for x, k in enumerate(kinds) if left[x] and k[4] <= t]
        if ready:
            x = min(ready, key=lambda x: (-kinds[x][3], mine[kinds[x][0]][0].job, kinds[x][1]))
            left[x] -= 1
            (last if kinds[x][1] else full)[kinds[x][0]].append(t)
        t += 1
    out: list[list[int]] = []
    for i, (q, n) in enumerate(mine):
        if q.phi < 1.0:  # chunk i: full slots (k - 1) i .. and last slot i
            k = q.k - 1
            out += [full[i][c * k : (c + 1) * k] + [last[i][c]] for c in range(n)]
        else:
            out += [full[i][c * q.k : (c + 1) * q.k] for c in range(n)]
    return out


def _schedule(
    inst: Instance, horizon: int, pairs: list[_Pair], n: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Assignment, runs, completion and eq. 3 of the chunk counts ``n`` (per pair column).

    The model's slot columns are continuous: with the counts fixed, each edge worker is a
    transportation problem, whose optimum :func:`_greedy` finds in integers.
    """
    release, chunks, slots, _, _, phi = _model_data(inst)
    first = np.concatenate([[0], np.cumsum(chunks)[:-1]])
    taken = np.zeros(inst.n_jobs, dtype=np.int64)
    n_c = int(chunks.sum())
    assignment = np.full(n_c, -1, dtype=np.int64)
    runs = np.zeros((n_c, horizon), dtype=bool)
    chunk_slots: list[tuple[_Pair, list[int]]] = []
    for w in range(inst.n_workers):
        mine = [(q, int(n[q.n])) for q in pairs if q.worker == w and n[q.n] > 0]
        if inst.is_cloud()[w]:
            chunk_slots += [(q, list(range(q.t0, q.t0 + q.k))) for q, c in mine for _ in range(c)]
        elif mine:
            parts = _greedy(mine)
            owners = [q for q, c in mine for _ in range(c)]
            chunk_slots += list(zip(owners, parts, strict=True))
    objective = 0.0
    for q, part in sorted(chunk_slots, key=lambda x: (x[0].job, x[0].worker)):
        c = int(first[q.job] + taken[q.job])
        taken[q.job] += 1
        assignment[c] = q.worker
        runs[c, part] = True
        t = np.asarray(part, dtype=np.float64) - release[q.job]
        weight = np.ones(len(part))
        weight[-1] = phi[q.job, q.worker]
        objective += float((t * weight).sum() / (chunks[q.job] * slots[q.job, q.worker]))
    last = np.where(runs.any(axis=1), horizon - np.argmax(runs[:, ::-1], axis=1), -1)
    completion = np.array([last[inst.chunk_job() == j].max() for j in range(inst.n_jobs)])
    return assignment, runs, completion.astype(np.int64), objective


def solve(inst: Instance, horizon: int, time_limit: float = 60.0) -> Exact:
    """Solve ILP (4) (``zeta_j = 1``) exactly: the schedule with the least ``sum f_jd``.

    Parameters
    ----------
    inst
        The jobs and worker columns, all known in advance (offline).
    horizon
        Slots; chunks train in slots ``0 .. horizon-1``. :func:`horizon_bound` gives one that
        does not cut the optimum.
    time_limit
        HiGHS time limit, seconds (wall clock).

    Returns
    -------
    Exact
        The optimum (``status == "optimal"``), the best schedule found in the time limit
        (``"time_limit"``), or ``"infeasible"`` when no schedule fits in the horizon.

    Raises
    ------
    ValueError
        A bad field or argument: the message names it and what was expected.
    """
    _check(inst, horizon)
    if (
        isinstance(time_limit, bool)
        or not isinstance(time_limit, int | float)
        or not (math.isfinite(time_limit) and time_limit > 0)
    ):
        raise ValueError(f"time_limit must be seconds > 0, got {time_limit!r}")
    start = time.perf_counter()
    horizon = int(horizon)
    n_c = int(np.asarray(inst.chunks).sum())
    none = (
        np.full(n_c, -1, dtype=np.int64),
        np.zeros((n_c, horizon), dtype=bool),
        np.full(inst.n_jobs, -1, dtype=np.int64),
        np.asarray(inst.release, dtype=np.int64),
    )
    built = _build(inst, horizon)
    if built is None:
        return Exact(math.inf, "infeasible", math.inf, *none, time.perf_counter() - start)
    model, pairs = built
    res = model.solve(time_limit, MIP_REL_GAP)
    if res.status == 2:
        return Exact(math.inf, "infeasible", math.inf, *none, time.perf_counter() - start)
    if res.status not in (0, 1):
        raise RuntimeError(f"exact_chunks.solve: HiGHS failed ({res.message})")
    dual = getattr(res, "mip_dual_bound", None)
    bound = float(dual) if dual is not None and math.isfinite(dual) else -math.inf
    status: Status = "optimal" if res.status == 0 else "time_limit"
    if res.x is None:  # stopped before any schedule was found
        return Exact(math.inf, status, bound, *none, time.perf_counter() - start)
    counts = np.rint(res.x).astype(np.int64)  # only the chunk counts are integers
    assignment, runs, completion, objective = _schedule(inst, horizon, pairs, counts)
    return Exact(
        objective,
        status,
        min(bound, objective),
        assignment,
        runs,
        completion,
        none[3],
        time.perf_counter() - start,
    )


def brute_force(inst: Instance, horizon: int) -> float:
    """The optimum of (4) by exhaustive search over schedules, chunk by chunk (tiny cases).

    Every assignment of the chunks to worker columns is tried; for each, an edge worker's
    slots ``0 .. horizon-1`` are searched exhaustively (each slot idle or one ready unfinished
    chunk; memoised on the slot and the chunks' remaining slots, which fix the cost of the
    rest), and a cloud chunk tries every start. Each chunk's eq. 3 counts its last slot at
    ``phi``. Independent of :func:`solve`'s model (no counts per worker, no pruning).

    Parameters
    ----------
    inst
        A tiny instance (a handful of chunks, two or three columns, a short horizon).
    horizon
        Slots.

    Returns
    -------
    float
        The optimal ``sum f_jd``, ``inf`` if no schedule fits in the horizon.
    """
    _check(inst, horizon)
    release = np.asarray(inst.release, dtype=np.int64)
    chunks = np.asarray(inst.chunks, dtype=np.int64)
    slots = np.asarray(inst.slots, dtype=np.float64)
    delay = np.asarray(inst.delay, dtype=np.int64)
    cloud = inst.is_cloud()
    whole = _ceil(slots)
    phi = _last_weight(slots, whole)
    job = inst.chunk_job()

    def cost(c: int, w: int, t: int, left: int) -> float:
        """Eq. 3 of chunk c training on w in slot t with ``left`` slots to go (incl. t)."""
        j = int(job[c])
        share = float(phi[j, w]) if left == 1 else 1.0
        return share * (t - int(release[j])) / (int(chunks[j]) * float(slots[j, w]))

    @functools.cache
    def edge(w: int, cs: tuple[int, ...], t: int, left: tuple[int, ...]) -> float:
        """Least cost of finishing chunks ``cs`` (``left`` slots each) on w from slot t."""
        if not any(left):
            return 0.0
        if t >= horizon:
            return math.inf
        best = edge(w, cs, t + 1, left)  # idle
        for i, c in enumerate(cs):
            if left[i] and t >= release[job[c]] + delay[job[c], w]:
                rest = left[:i] + (left[i] - 1,) + left[i + 1 :]
                best = min(best, cost(c, w, t, left[i]) + edge(w, cs, t + 1, rest))
        return best

    def on_cloud(c: int, w: int) -> float:
        """Least cost of chunk c on cloud column w: every start, run without preemption."""
        j, k = int(job[c]), int(whole[job[c], w])
        starts = range(int(release[j] + delay[j, w]), horizon - k + 1)
        return min(
            (sum(cost(c, w, s + i, k - i) for i in range(k)) for s in starts), default=math.inf
        )

    options = [np.flatnonzero(np.isfinite(slots[j])).tolist() for j in job]
    best = math.inf
    for choice in itertools.product(*options):
        total = 0.0
        for w in range(inst.n_workers):
            cs = tuple(c for c, v in enumerate(choice) if v == w)
            if not cs:
                continue
            if cloud[w]:
                total += sum(on_cloud(c, w) for c in cs)
            else:
                total += edge(w, cs, 0, tuple(int(whole[job[c], w]) for c in cs))
        best = min(best, total)
    return best
