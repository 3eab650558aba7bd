"""Pollux's allocation search: the fitness of a cluster allocation and two optimisers.

A. Qiao et al., "Pollux: Co-adaptive Cluster Scheduling for Goodput-Optimized Deep
Learning", OSDI 2021, Sec. 4.2 (eq. 12-14) and its artifact's ``simulator/pollux.py``
(petuum/adaptdl, osdi21-artifact, commit c793c70; "pol" below; read, not copied).

An allocation is a matrix ``A`` (jobs x nodes) of GPUs. Job ``j`` gets ``K_j = sum_n A[j, n]``
GPUs over ``N_j = #{n : A[j, n] > 0}`` nodes and speedup ``S_j(K_j, N_j > 1)`` (its goodput
there over its goodput at a fair share; the table :class:`Problem` holds), scaled by the
dominant share times the node count (pol L318-320: x nodes / GPUs) and, when its row
differs from the current allocation, by the restart factor
``max(age - R*30, 0) / (age + 30)`` (R its restarts; pol L321-327). The fitness is the power
mean of the jobs' scaled speedups (eq. 14, pol L328-335)::

    FITNESS_p(A) = (1/J sum_j (s_j + 0.001)^p)^(1/p)      (p = 0: the geometric mean)

subject to (the artifact's repair, pol L376-420): at most the node's GPUs on each node, at
most ``max_replicas_j`` GPUs per job, at most one job spanning several nodes on each node.

* :func:`search_ga` is the paper's optimiser with the artifact's operators (NSGA-II on
  [-fitness, -utility], population 100, 100 generations, one-point crossover over jobs,
  its mutation and repair, warm-started from the last population; pol L115-200, L339-420).
* :func:`search_dp` (the policy's default) is ours: an exact dynamic programme over the
  total GPUs on the separable objective (each job keeps its allocation or takes ``r`` GPUs
  anew, consolidated: ``r <= GPUs per node`` on one node), then a placement that keeps
  every unchanged allocation and packs the new ones (a job whose option does not pack
  loses it and the programme runs again), then a local search (resize one job into free
  GPUs, or move GPUs from one job to another) under the exact fitness. The tests hold it
  to brute force on small cases and to at least the GA's fitness on random ones.
* :func:`brute_force` enumerates every allocation (tiny cases only).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from gpusched.core import portable

__all__ = [
    "EPS",
    "Problem",
    "Speedups",
    "brute_force",
    "fitness",
    "search_dp",
    "search_ga",
]

EPS = 1e-3  #: pol L331-334: the floor of a speedup in the power mean
_INF = 1e300


@dataclass
class Problem:
    """One scheduling round.

    Attributes
    ----------
    speedup
        ``(J, G + 1, 2)``: speedup of each job on ``K`` GPUs (0..G) on one node
        (``[..., 0]``) or several (``[..., 1]``); ``speedup[:, 0] = 0``.
    factor
        ``(J,)``: restart factor of a job whose allocation changes.
    base
        ``(J, nodes)`` int64: the current allocation.
    max_gpus
        ``(J,)`` int64: at most this many GPUs per job.
    node_gpus
        ``(nodes,)`` int64: GPUs per node.
    p
        The power mean's exponent (pol L328: -1).
    scale
        Dominant share x nodes: 1 / GPUs per node (pol L318-320).
    """

    speedup: np.ndarray
    factor: np.ndarray
    base: np.ndarray
    max_gpus: np.ndarray
    node_gpus: np.ndarray
    p: float
    scale: float

    @property
    def n_jobs(self) -> int:
        return int(self.base.shape[0])


# --------------------------------------------------------------------------- fitness


def scaled_speedups(pb: Problem, states: np.ndarray) -> np.ndarray:
    """``(P, J)`` scaled speedups ``s_j`` of allocations ``states`` ``(P, J, nodes)``."""
    k = states.sum(axis=2)
    multi = (np.count_nonzero(states, axis=2) > 1).astype(np.int64)
    j = np.arange(pb.n_jobs)
    s = pb.speedup[j, np.minimum(k, pb.speedup.shape[1] - 1), multi] * pb.scale
    changed = (states != pb.base).any(axis=2)
    out: np.ndarray = np.where(changed, s * pb.factor, s)
    return out


def _power_mean(s: np.ndarray, p: float) -> np.ndarray:
    out: np.ndarray
    if p == 0:
        out = portable.exp(portable.log(np.maximum(s, EPS)).mean(axis=-1))
    else:
        out = portable.power(np.mean(portable.power(s + EPS, p), axis=-1), 1.0 / p)
    return out


def fitness(pb: Problem, states: np.ndarray) -> np.ndarray:
    """FITNESS_p of each allocation of ``states`` (``(P, J, nodes)`` or one ``(J, nodes)``)."""
    one = states.ndim == 2
    st = states[None] if one else states
    out = _power_mean(scaled_speedups(pb, st), pb.p) if pb.n_jobs else np.ones(len(st))
    return out[0] if one else out


def feasible(pb: Problem, state: np.ndarray) -> bool:
    """Within node capacity, job limits, one multi-node job per node (pol L376-420)."""
    if (state < 0).any() or (state.sum(axis=0) > pb.node_gpus).any():
        return False
    if (state.sum(axis=1) > pb.max_gpus).any():
        return False
    multi = np.count_nonzero(state, axis=1) > 1
    return bool(((state[multi] > 0).sum(axis=0) <= 1).all())


# --------------------------------------------------------------------------- brute force


def _rows(cap: np.ndarray, most: int) -> list[tuple[int, ...]]:
    return [r for r in itertools.product(*(range(c + 1) for c in cap)) if sum(r) <= most]


def brute_force(pb: Problem) -> tuple[np.ndarray, float]:
    """The best feasible allocation by enumeration, and its fitness (tiny cases only)."""
    rows = [_rows(pb.node_gpus, int(m)) for m in pb.max_gpus]
    best, best_f = pb.base.copy(), -math.inf
    for combo in itertools.product(*rows):
        st = np.asarray(combo, dtype=np.int64).reshape(pb.base.shape)
        if feasible(pb, st):
            f = float(fitness(pb, st))
            if f > best_f + 1e-12:
                best, best_f = st, f
    return best, best_f


# --------------------------------------------------------------------------- the DP


def _cost(pb: Problem, s: np.ndarray) -> np.ndarray:
    """Per-job cost whose sum is minimal where the power mean is maximal."""
    c: np.ndarray
    if pb.p == 0:
        c = -portable.log(np.maximum(s, EPS))
    else:
        c = portable.power(s + EPS, pb.p)
        c = c if pb.p < 0 else -c
    return c


@njit(cache=True, nogil=True)
def _knapsack(
    cost: np.ndarray, gpus: np.ndarray, nodes: np.ndarray, budget: int, n_nodes: int
) -> np.ndarray:
    """Pick one option per job to minimise the total cost with at most ``budget`` GPUs and
    ``n_nodes`` nodes spanned by multi-node jobs (``cost``, ``gpus``, ``nodes``: ``(J, O)``;
    cost inf = not allowed); the first best option on ties. Exact, O(J O budget n_nodes)."""
    n_jobs, n_opt = cost.shape
    width = n_nodes + 1
    size = (budget + 1) * width
    best = np.full(size, _INF)
    best[0] = 0.0
    choice = np.full((n_jobs, size), -1, np.int64)
    nxt = np.empty(size)
    for j in range(n_jobs):
        nxt[:] = _INF
        for g in range(budget + 1):
            for m in range(width):
                here = best[g * width + m]
                if here >= _INF:
                    continue
                for o in range(n_opt):
                    c = cost[j, o]
                    if c >= _INF:
                        break  # (options come finite first: see search_dp)
                    h = g + gpus[j, o]
                    k = m + nodes[j, o]
                    if h > budget or k > n_nodes:
                        continue
                    v = here + c
                    at = h * width + k
                    if v < nxt[at] - 1e-12 * abs(v):
                        nxt[at] = v
                        choice[j, at] = o
        best[:] = nxt
    out = np.full(n_jobs, -1, np.int64)
    at = int(np.argmin(best))
    if best[at] >= _INF:
        return out
    for j in range(n_jobs - 1, -1, -1):
        o = choice[j, at]
        out[j] = o
        at -= gpus[j, o] * width + nodes[j, o]
    return out


def _options(pb: Problem) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Options per job: 0 keeps the current allocation; ``1 + r`` takes ``r`` GPUs anew,
    consolidated (one node if they fit one); ``1 + size + r`` takes ``r`` anew split over
    several nodes (only for ``2 <= r <=`` GPUs per node: larger ones span nodes anyway).

    Returns cost, GPUs and nodes spanned by a multi-node allocation (0 for one node), each
    ``(J, 1 + 2 size)``, and each job's current GPUs."""
    n_jobs, size = pb.n_jobs, pb.speedup.shape[1]
    per_node = int(pb.node_gpus.max())
    r = np.arange(size)
    multi = (r > per_node).astype(np.int64)
    s_new = pb.speedup[:, r, multi] * pb.scale * pb.factor[:, None]
    s_new[:, 0] = 0.0
    s_split = pb.speedup[:, r, 1] * pb.scale * pb.factor[:, None]
    k0 = pb.base.sum(axis=1)
    m0 = (np.count_nonzero(pb.base, axis=1) > 1).astype(np.int64)
    s_keep = pb.speedup[np.arange(n_jobs), k0, m0] * pb.scale
    cost = np.empty((n_jobs, 1 + 2 * size))
    cost[:, 0] = _cost(pb, s_keep)
    cost[:, 1 : 1 + size] = _cost(pb, s_new)
    cost[:, 1 + size :] = _cost(pb, s_split)
    too_many = r[None, :] > pb.max_gpus[:, None]
    cost[:, 1 : 1 + size][too_many] = _INF
    cost[:, 1 + size :][too_many | (r < 2) | (r > per_node) | (pb.node_gpus.size < 2)] = _INF
    gpus = np.empty((n_jobs, 1 + 2 * size), dtype=np.int64)
    gpus[:, 0] = k0
    gpus[:, 1 : 1 + size] = r
    gpus[:, 1 + size :] = r
    nodes = np.zeros((n_jobs, 1 + 2 * size), dtype=np.int64)
    spans = np.count_nonzero(pb.base, axis=1)
    nodes[:, 0] = np.where(spans > 1, spans, 0)
    nodes[:, 1 : 1 + size] = np.where(r > per_node, -(-r // per_node), 0)
    nodes[:, 1 + size :] = 2
    return cost, gpus, nodes, k0


def _pack(
    pb: Problem, keep: np.ndarray, want: np.ndarray, split: np.ndarray
) -> tuple[np.ndarray, int]:
    """Place the jobs (:func:`_pack_bulk`, else :func:`_pack_singles_first`): the
    allocation and -1, or the first job the first way found no room for."""
    st, bad = _pack_bulk(pb, keep, want, split)
    if bad >= 0:
        other, bad2 = _pack_singles_first(pb, keep, want, split)
        if bad2 < 0:
            return other, -1
    return st, bad


def _pack_singles_first(
    pb: Problem, keep: np.ndarray, want: np.ndarray, split: np.ndarray
) -> tuple[np.ndarray, int]:
    """Single-node jobs first (largest first, best fit), then each multi-node job
    (largest first) over the nodes no other multi-node job holds, the freest first and the
    last one the best fit; a split job over at least two nodes."""
    st = np.where(keep[:, None], pb.base, 0)
    free = pb.node_gpus - st.sum(axis=0)
    per_node = int(pb.node_gpus.max())
    multi_on = (st[np.count_nonzero(st, axis=1) > 1] > 0).any(axis=0)
    new = np.flatnonzero(~keep & (want > 0))
    new = new[np.argsort(-want[new], kind="stable")]
    for j in new.tolist():
        r = int(want[j])
        if r > per_node or split[j]:
            continue
        at = np.flatnonzero(free >= r)
        if at.size == 0:
            return st, j
        n = int(at[np.argmin(free[at])])
        st[j, n] = r
        free[n] -= r
    for j in new.tolist():
        r = int(want[j])
        if r <= per_node and not split[j]:
            continue
        avail = np.where(multi_on, 0, free)
        if avail.sum() < r or np.count_nonzero(avail) < 2:
            return st, j
        left = r
        while left > 0:
            fit = np.flatnonzero(avail >= left)
            if fit.size and st[j].any():  # the last node: where the rest fits best
                n = int(fit[np.argmin(avail[fit])])
            else:
                n = int(np.argmax(avail))
            take = min(left, int(avail[n]), left if st[j].any() else r - 1)
            if take <= 0:
                return st, j
            st[j, n] = take
            free[n] -= take
            avail[n] = 0
            multi_on[n] = True
            left -= take
    return st, -1


def _pack_bulk(
    pb: Problem, keep: np.ndarray, want: np.ndarray, split: np.ndarray
) -> tuple[np.ndarray, int]:
    """Place the jobs: ``keep[j]`` keeps its row; others take ``want[j]`` GPUs anew, over
    several nodes when ``split[j]``.

    A multi-node job of ``r = q x per_node + t`` GPUs takes ``q`` whole free nodes (the
    first), then every piece (its ``t``, and each single-node job) goes, largest first, to
    the node it fits best; a node takes pieces of at most one multi-node job. Split jobs
    come last, over the fullest nodes that still have room (at least two). Returns the
    allocation and -1, or the first job that found no room."""
    st = np.where(keep[:, None], pb.base, 0)
    free = pb.node_gpus - st.sum(axis=0)
    per_node = int(pb.node_gpus.max())
    multi_on = (st[np.count_nonzero(st, axis=1) > 1] > 0).any(axis=0)
    new = np.flatnonzero(~keep & (want > 0))
    pieces: list[tuple[int, int, bool]] = []  # (GPUs, job, of a multi-node job)
    for j in new[np.argsort(-want[new], kind="stable")].tolist():
        r = int(want[j])
        if split[j]:
            continue
        if r <= per_node:
            pieces.append((r, j, False))
            continue
        q, t = divmod(r, per_node)
        whole = np.flatnonzero((free == pb.node_gpus) & (pb.node_gpus == per_node) & ~multi_on)
        if whole.size >= q + (t > 0):
            st[j, whole[:q]] = per_node
            free[whole[:q]] = 0
            multi_on[whole[:q]] = True
            if t:
                pieces.append((t, j, True))
            continue
        row = _place_row(free, multi_on, r, per_node)
        if row is None:
            return st, j
        st[j] = row
        free -= row
        multi_on |= row > 0
    pieces.sort(key=lambda x: -x[0])  # (stable: larger jobs' pieces first on ties)
    for size, j, multi in pieces:
        fits = (free >= size) & ~(multi_on & multi) & (st[j] == 0)
        at = np.flatnonzero(fits)
        if at.size == 0:
            return st, j
        n = int(at[np.argmin(free[at])])
        st[j, n] = size
        free[n] -= size
        if multi:
            multi_on[n] = True
    for j in new[split[new]].tolist():
        r = int(want[j])
        room = np.flatnonzero(~multi_on & (free > 0))
        room = room[np.argsort(free[room], kind="stable")]
        if room.size < 2 or free[room].sum() < r:
            return st, j
        left = r
        for i, n in enumerate(room.tolist()):
            take = min(left, int(free[n]), r - 1 if i == 0 else left)
            st[j, n] = take
            free[n] -= take
            multi_on[n] = True
            left -= take
            if left == 0:
                break
    return st, -1


@njit(cache=True, nogil=True)
def _cost1(s, p):  # type: ignore[no-untyped-def]
    """:func:`_cost` of one speedup."""
    if p == 0.0:
        return -math.log(max(s, EPS))
    c = (s + EPS) ** p
    return c if p < 0.0 else -c


@njit(cache=True, nogil=True)
def _row_cost(speedup, factor, base, j, row, scale, p):  # type: ignore[no-untyped-def]
    k = 0
    nodes = 0
    changed = False
    for n in range(row.shape[0]):
        k += row[n]
        if row[n] > 0:
            nodes += 1
        if row[n] != base[j, n]:
            changed = True
    s = speedup[j, min(k, speedup.shape[1] - 1), 1 if nodes > 1 else 0] * scale
    return _cost1(s * factor[j] if changed else s, p)


@njit(cache=True, nogil=True)
def _place_row_jit(free, multi_on, r, per_node, row):  # type: ignore[no-untyped-def]
    """:func:`_place_row` into ``row`` (zeroed); False when it does not fit."""
    n_nodes = free.shape[0]
    row[:] = 0
    if r == 0:
        return True
    if r <= per_node:
        at = -1
        for n in range(n_nodes):
            if free[n] >= r and (at < 0 or free[n] < free[at]):
                at = n
        if at < 0:
            return False
        row[at] = r
        return True
    avail = np.empty(n_nodes, np.int64)
    total = 0
    for n in range(n_nodes):
        avail[n] = 0 if multi_on[n] else free[n]
        total += avail[n]
    if total < r:
        return False
    left = r
    while left > 0:
        most = 0
        for n in range(n_nodes):
            most = max(most, avail[n])
        at = -1
        if left >= most:
            for n in range(n_nodes):
                if avail[n] == most:
                    at = n
                    break
        else:
            for n in range(n_nodes):
                if avail[n] >= left and (at < 0 or avail[n] < avail[at]):
                    at = n
        take = min(left, avail[at])
        row[at] = take
        avail[at] = 0
        left -= take
    return True


@njit(cache=True, nogil=True)
def _free_without(st, node_gpus, free, multi_on, a, b):  # type: ignore[no-untyped-def]
    """Fill ``free`` with each node's GPUs left by every job but ``a`` and ``b`` (-1: none)
    and ``multi_on`` with the nodes a multi-node job among them uses."""
    n_nodes = node_gpus.shape[0]
    for n in range(n_nodes):
        free[n] = node_gpus[n]
        multi_on[n] = False
    for i in range(st.shape[0]):
        if i == a or i == b:
            continue
        spans = 0
        for n in range(n_nodes):
            free[n] -= st[i, n]
            if st[i, n] > 0:
                spans += 1
        if spans > 1:
            for n in range(n_nodes):
                if st[i, n] > 0:
                    multi_on[n] = True


@njit(cache=True, nogil=True)
def _polish(st, speedup, factor, base, max_gpus, node_gpus, scale, p, pairs):  # type: ignore[no-untyped-def]
    """Local search under the exact (separable) objective: move one job to its current
    allocation or to any GPU count that fits the GPUs the others leave free, while that
    lowers the total cost; to a fixed point (bounded)."""
    n_jobs, n_nodes = st.shape
    per_node = 0
    for n in range(n_nodes):
        per_node = max(per_node, node_gpus[n])
    cost = np.empty(n_jobs)
    for j in range(n_jobs):
        cost[j] = _row_cost(speedup, factor, base, j, st[j], scale, p)
    free = np.empty(n_nodes, np.int64)
    multi_on = np.zeros(n_nodes, np.bool_)
    row = np.empty(n_nodes, np.int64)
    best_row = np.empty(n_nodes, np.int64)
    pair_rounds = 0
    for _ in range(4 * n_jobs + 8):
        improved = False
        for j in range(n_jobs):
            _free_without(st, node_gpus, free, multi_on, j, -1)
            best = cost[j] - 1e-12 * abs(cost[j]) - 1e-15
            found = False
            fits = True  # the current allocation again (no restart)
            spans = 0
            for n in range(n_nodes):
                if base[j, n] > free[n]:
                    fits = False
                if base[j, n] > 0:
                    spans += 1
            if fits and spans > 1:
                for n in range(n_nodes):
                    if base[j, n] > 0 and multi_on[n]:
                        fits = False
            if fits:
                c = _row_cost(speedup, factor, base, j, base[j], scale, p)
                if c < best:
                    best = c
                    best_row[:] = base[j]
                    found = True
            most_free = 0
            open_free = 0
            for n in range(n_nodes):
                most_free = max(most_free, free[n])
                if not multi_on[n]:
                    open_free += free[n]
            for r in range(min(max_gpus[j], speedup.shape[1] - 1) + 1):
                if (r <= per_node and r > most_free) or (r > per_node and r > open_free):
                    continue
                s = 0.0 if r == 0 else speedup[j, r, 1 if r > per_node else 0] * scale * factor[j]
                c = _cost1(s, p)
                if c < best and _place_row_jit(free, multi_on, r, per_node, row):
                    best = c
                    best_row[:] = row
                    found = True
            if found:
                st[j] = best_row
                cost[j] = _row_cost(speedup, factor, base, j, st[j], scale, p)
                improved = True
        if _transfers(st, cost, speedup, factor, base, max_gpus, scale, p):
            improved = True
        if _evictions(st, cost, speedup, factor, base, max_gpus, node_gpus, scale, p):
            improved = True
        if not improved and pairs and pair_rounds < 3:
            pair_rounds += 1
            improved = _pairs(st, cost, speedup, factor, base, max_gpus, node_gpus, scale, p)
        if not improved:
            break
    return st


@njit(cache=True, nogil=True)
def _split_row(free, multi_on, r, row):  # type: ignore[no-untyped-def]
    """``r`` GPUs over at least two nodes no other multi-node job holds, the fullest nodes
    with room first; False when they do not fit."""
    n_nodes = free.shape[0]
    row[:] = 0
    if r < 2:
        return False
    order = np.argsort(free)
    left = r
    used = 0
    for i in range(n_nodes):
        n = order[i]
        if multi_on[n] or free[n] <= 0:
            continue
        take = min(left, free[n], r - 1 if used == 0 else left)
        row[n] = take
        used += 1
        left -= take
        if left == 0:
            break
    return left == 0 and used >= 2


@njit(cache=True, nogil=True)
def _candidate_row(free, multi_on, base_row, kind, r, per_node, row):  # type: ignore[no-untyped-def]
    """Row ``kind`` 0: ``base_row`` (if it fits), 1: ``r`` consolidated, 2: ``r`` split."""
    n_nodes = free.shape[0]
    if kind == 0:
        spans = 0
        for n in range(n_nodes):
            if base_row[n] > free[n]:
                return False
            if base_row[n] > 0:
                spans += 1
        if spans > 1:
            for n in range(n_nodes):
                if base_row[n] > 0 and multi_on[n]:
                    return False
        row[:] = base_row
        return True
    if kind == 1:
        return _place_row_jit(free, multi_on, r, per_node, row)
    if r > per_node:
        return False
    return _split_row(free, multi_on, r, row)


@njit(cache=True, nogil=True)
def _pairs(st, cost, speedup, factor, base, max_gpus, node_gpus, scale, p):  # type: ignore[no-untyped-def]
    """Re-place two jobs together: each to its current allocation, or anew with a GPU count
    within 2 of what it holds (consolidated or split), the first placed first, the first of
    the pair among the 12 costliest jobs;
    the best pair that lowers the total cost wins (one per call); True if any did."""
    n_jobs, n_nodes = st.shape
    per_node = 0
    for n in range(n_nodes):
        per_node = max(per_node, node_gpus[n])
    free = np.empty(n_nodes, np.int64)
    free2 = np.empty(n_nodes, np.int64)
    multi_on = np.zeros(n_nodes, np.bool_)
    multi2 = np.zeros(n_nodes, np.bool_)
    row_a = np.empty(n_nodes, np.int64)
    row_b = np.empty(n_nodes, np.int64)
    best_a = np.empty(n_nodes, np.int64)
    best_b = np.empty(n_nodes, np.int64)
    gain_best = 0.0
    pa, pb = -1, -1
    # the first of the pair among the 12 costliest jobs (the ones the mean weighs most)
    firsts = np.argsort(-cost)[: min(n_jobs, 12)]
    for a in firsts:
        for b in range(n_jobs):
            if a == b:
                continue
            _free_without(st, node_gpus, free, multi_on, a, b)
            old = cost[a] + cost[b]
            ka, kb = 0, 0
            for n in range(n_nodes):
                ka += st[a, n]
                kb += st[b, n]
            lo_a, hi_a = max(0, ka - 2), min(max_gpus[a], ka + 2)
            lo_b, hi_b = max(0, kb - 2), min(max_gpus[b], kb + 2)
            for kind_a in range(3):
                for r_a in range(lo_a, hi_a + 1):
                    if kind_a == 0 and r_a > lo_a:
                        break
                    if not _candidate_row(free, multi_on, base[a], kind_a, r_a, per_node, row_a):
                        continue
                    ca = _row_cost(speedup, factor, base, a, row_a, scale, p)
                    spans_a = 0
                    for n in range(n_nodes):
                        free2[n] = free[n] - row_a[n]
                        if row_a[n] > 0:
                            spans_a += 1
                    for n in range(n_nodes):
                        multi2[n] = multi_on[n] or (spans_a > 1 and row_a[n] > 0)
                    for kind_b in range(3):
                        for r_b in range(lo_b, hi_b + 1):
                            if kind_b == 0 and r_b > lo_b:
                                break
                            if not _candidate_row(
                                free2, multi2, base[b], kind_b, r_b, per_node, row_b
                            ):
                                continue
                            cb = _row_cost(speedup, factor, base, b, row_b, scale, p)
                            g = old - (ca + cb)
                            if g > gain_best + 1e-12 * abs(old) + 1e-15:
                                gain_best = g
                                pa, pb = a, b
                                best_a[:] = row_a
                                best_b[:] = row_b
    if pa < 0:
        return False
    st[pa] = best_a
    st[pb] = best_b
    cost[pa] = _row_cost(speedup, factor, base, pa, best_a, scale, p)
    cost[pb] = _row_cost(speedup, factor, base, pb, best_b, scale, p)
    return True


@njit(cache=True, nogil=True)
def _multi_ok(st, j):  # type: ignore[no-untyped-def]
    """Does job ``j``'s row keep "one multi-node job per node" against the others?"""
    n_jobs, n_nodes = st.shape
    spans = 0
    for n in range(n_nodes):
        if st[j, n] > 0:
            spans += 1
    for n in range(n_nodes):
        if st[j, n] == 0:
            continue
        for i in range(n_jobs):
            if i == j or st[i, n] == 0:
                continue
            if spans > 1:
                other = 0
                for m in range(n_nodes):
                    if st[i, m] > 0:
                        other += 1
                if other > 1:
                    return False
    return True


@njit(cache=True, nogil=True)
def _evictions(st, cost, speedup, factor, base, max_gpus, node_gpus, scale, p):  # type: ignore[no-untyped-def]
    """Move job ``b`` whole to one node ``n`` with ``r`` GPUs, taking what ``n`` lacks from
    one job ``a`` there (``a`` shrinks on ``n``), wherever that lowers the total cost
    (first improvement); True if any did."""
    n_jobs, n_nodes = st.shape
    moved = False
    row_b = np.empty(n_nodes, np.int64)
    row_a = np.empty(n_nodes, np.int64)
    for b in range(n_jobs):
        for n in range(n_nodes):
            used = 0
            for i in range(n_jobs):
                if i != b:
                    used += st[i, n]
            for r in range(1, min(node_gpus[n], max_gpus[b]) + 1):
                need = r - (node_gpus[n] - used)
                if need <= 0:
                    continue  # fits without evicting: the resize move's
                for a in range(n_jobs):
                    if a == b or st[a, n] < need:
                        continue
                    row_b[:] = 0
                    row_b[n] = r
                    row_a[:] = st[a]
                    row_a[n] -= need
                    ca = _row_cost(speedup, factor, base, a, row_a, scale, p)
                    cb = _row_cost(speedup, factor, base, b, row_b, scale, p)
                    old = cost[a] + cost[b]
                    if ca + cb >= old - 1e-12 * abs(old) - 1e-15:
                        continue
                    keep_a, keep_b = st[a].copy(), st[b].copy()
                    st[a] = row_a
                    st[b] = row_b
                    if _multi_ok(st, a) and _multi_ok(st, b):
                        cost[a], cost[b] = ca, cb
                        moved = True
                        break
                    st[a] = keep_a
                    st[b] = keep_b
    return moved


@njit(cache=True, nogil=True)
def _transfers(st, cost, speedup, factor, base, max_gpus, scale, p):  # type: ignore[no-untyped-def]
    """Give one GPU of job ``a`` on node ``n`` to job ``b`` wherever that lowers the total
    cost (first improvement); True if any did."""
    n_jobs, n_nodes = st.shape
    moved = False
    for n in range(n_nodes):
        for a in range(n_jobs):
            if st[a, n] == 0:
                continue
            for b in range(n_jobs):
                if b == a or st[a, n] == 0:
                    continue
                k_b = 0
                for m in range(n_nodes):
                    k_b += st[b, m]
                if k_b >= max_gpus[b]:
                    continue
                st[a, n] -= 1
                st[b, n] += 1
                ok = _multi_ok(st, b) and _multi_ok(st, a)
                if ok:
                    ca = _row_cost(speedup, factor, base, a, st[a], scale, p)
                    cb = _row_cost(speedup, factor, base, b, st[b], scale, p)
                    old = cost[a] + cost[b]
                    if ca + cb < old - 1e-12 * abs(old) - 1e-15:
                        cost[a], cost[b] = ca, cb
                        moved = True
                        continue
                st[a, n] += 1
                st[b, n] -= 1
    return moved


def _place_row(free: np.ndarray, multi_on: np.ndarray, r: int, per_node: int) -> np.ndarray | None:
    row = np.zeros_like(free)
    if r == 0:
        return row
    if r <= per_node:
        fits = np.flatnonzero(free >= r)
        if fits.size == 0:
            return None
        row[fits[np.argmin(free[fits])]] = r
        return row
    # several nodes, none holding another multi-node job: whole (freest) nodes while the
    # rest is larger than any, then the rest where it fits best, so little is left in pieces
    avail = np.where(multi_on, 0, free)
    if avail.sum() < r:
        return None
    left = r
    while left > 0:
        most = int(avail.max())
        if left >= most:
            n = int(np.argmax(avail))
        else:
            n = int(np.flatnonzero(avail >= left)[np.argmin(avail[avail >= left])])
        take = min(left, int(avail[n]))
        row[n] = take
        avail[n] = 0
        left -= take
    return row


def search_dp(pb: Problem) -> np.ndarray:
    """The default optimiser (module docstring): DP, placement, local search.

    The programme's best plan is optimal when it packs. When it does not, plans with one
    to a node's worth of GPUs fewer are tried too (fragmentation wastes some), each
    dropping the option of a job that does not pack and planning again (up to 3 times with
    all GPUs, once with fewer); the best of the packed plans after a local search wins,
    searched once more with pair moves."""
    if pb.n_jobs == 0:
        return pb.base.copy()
    cost, gpus, nodes, k0 = _options(pb)
    budget = int(pb.node_gpus.sum())
    per_node = int(pb.node_gpus.max())
    rows = np.arange(pb.n_jobs)
    best, best_f = pb.base.copy(), -math.inf
    args = (
        pb.speedup,
        pb.factor.astype(np.float64),
        pb.base,
        pb.max_gpus,
        pb.node_gpus,
        float(pb.scale),
        float(pb.p),
    )
    for cut in range(per_node + 1):
        c = cost.copy()
        tries = 4 if cut == 0 else 2
        for attempt in range(tries):
            # the allowed options first in each row (the DP stops at the first not allowed)
            idx = np.argsort(c >= _INF, axis=1, kind="stable")
            got = _knapsack(
                c[rows[:, None], idx],
                gpus[rows[:, None], idx],
                nodes[rows[:, None], idx],
                budget - cut,
                int(pb.node_gpus.size),
            )
            if (got < 0).any():
                break
            pick = idx[rows, got]
            keep = (pick == 0) | ((pick == 1 + k0) & (k0 == 0))
            want = np.where(keep, k0, gpus[rows, pick])
            st, bad = _pack(pb, keep, want, pick > pb.speedup.shape[1])
            if bad < 0 and cut == 0 and attempt == 0:
                # the relaxation's optimum packs: every feasible allocation is one of the
                # options (its count, one node or several, kept or not) and within the
                # relaxed limits, so it is the optimum
                return st
            if bad < 0 or attempt == tries - 1:
                # (still failing: the jobs placed so far, a feasible start)
                st = _polish(st.copy(), *args, False)
                f = float(fitness(pb, st))
                if f > best_f:
                    best, best_f = st, f
                break
            c[bad, pick[bad]] = _INF  # that option does not pack: plan without it
    polished: np.ndarray = _polish(best.copy(), *args, True)
    return polished


# --------------------------------------------------------------------------- the GA


def search_ga(
    pb: Problem,
    rng: np.random.Generator,
    population: np.ndarray | None = None,
    *,
    size: int = 100,
    generations: int = 100,
) -> tuple[np.ndarray, np.ndarray]:
    """The paper's optimiser (module docstring); returns the best allocation and the final
    population (the next round's warm start, rows adapted by the caller).

    ``population``: ``(P, J, nodes)`` initial allocations (None: the current one alone,
    as the artifact's first round, pol L159-160).
    """
    init = pb.base[None].copy() if population is None else np.asarray(population, np.int64)
    seed = int(rng.integers(0, 2**31 - 1))
    multi_col = np.ascontiguousarray(pb.speedup[:, :, 1])
    single_col = np.ascontiguousarray(pb.speedup[:, :, 0])
    pop = _ga(
        init,
        single_col,
        multi_col,
        np.ascontiguousarray(pb.factor, dtype=np.float64),
        np.ascontiguousarray(pb.base),
        np.ascontiguousarray(pb.max_gpus),
        np.ascontiguousarray(pb.node_gpus),
        float(pb.p),
        float(pb.scale),
        size,
        generations,
        seed,
    )
    f = fitness(pb, pop)
    return pop[int(np.argmax(f))].copy(), pop


@njit(cache=True, nogil=True)
def _objectives(st, single, multi, factor, base, p, scale, cap):  # type: ignore[no-untyped-def]
    """[-fitness, -utility] of one allocation (pol L266-299, L315-337)."""
    n_jobs, n_nodes = st.shape
    total = 0.0
    util = 0.0
    active = 0
    for n in range(n_nodes):
        used = 0
        for j in range(n_jobs):
            used += st[j, n]
        if used > 0:
            active += cap[n]
    for j in range(n_jobs):
        k = 0
        nodes = 0
        changed = False
        for n in range(n_nodes):
            k += st[j, n]
            if st[j, n] > 0:
                nodes += 1
            if st[j, n] != base[j, n]:
                changed = True
        kk = min(k, single.shape[1] - 1)
        sp = multi[j, kk] if nodes > 1 else single[j, kk]
        util += sp
        s = sp * scale
        if changed:
            s *= factor[j]
        if p == 0.0:
            total += math.log(max(s, EPS))
        else:
            total += (s + EPS) ** p
    if n_jobs == 0:
        fit = 1.0
    elif p == 0.0:
        fit = math.exp(total / n_jobs)
    else:
        fit = (total / n_jobs) ** (1.0 / p)
    return -fit, -(util / active if active > 0 else 0.0)


@njit(cache=True, nogil=True)
def _repair(st, max_gpus, cap, max_nodes):  # type: ignore[no-untyped-def]
    """pol L376-420: one multi-node job per node (job order), max GPUs per job (random
    node order), at most ``max_nodes`` nodes, node capacity (job order)."""
    n_jobs, n_nodes = st.shape
    taken = np.zeros(n_nodes, np.int64)
    for j in range(n_jobs):
        nodes = 0
        for n in range(n_nodes):
            if st[j, n] > 0:
                nodes += 1
        if nodes > 1:
            for n in range(n_nodes):
                if st[j, n] > 0:
                    taken[n] += 1
                    if taken[n] > 1:
                        st[j, n] = 0
    for j in range(n_jobs):
        order = np.argsort(np.random.random(n_nodes))
        left = max_gpus[j]
        seen = 0
        for i in range(n_nodes):
            n = order[i]
            v = min(st[j, n], left)
            if v > 0:
                seen += 1
                if seen > max_nodes:
                    v = 0
            st[j, n] = v
            left -= v
    used = np.zeros(n_nodes, np.int64)
    for j in range(n_jobs):
        for n in range(n_nodes):
            v = min(st[j, n], cap[n] - used[n])
            st[j, n] = v
            used[n] += v


@njit(cache=True, nogil=True)
def _mutate(st, base, cap):  # type: ignore[no-untyped-def]
    """pol L354-374: reset a job to its current row (p 0.1); zero some of a job's entries
    (p 0.1 each, for a job chosen with p 0.1); on nodes with free GPUs raise entries to
    uniform[current, GPUs per node], each job with p 1/J, or 1/(jobs there) if on it."""
    n_jobs, n_nodes = st.shape
    for j in range(n_jobs):
        if np.random.random() < 0.1:
            for n in range(n_nodes):
                st[j, n] = base[j, n]
    for j in range(n_jobs):
        if np.random.random() < 0.1:
            for n in range(n_nodes):
                if np.random.random() < 0.1:
                    st[j, n] = 0
    for n in range(n_nodes):
        used = 0
        on = 0
        for j in range(n_jobs):
            used += st[j, n]
            if st[j, n] > 0:
                on += 1
        if used >= cap[n]:
            continue
        p1 = 1.0 / max(n_jobs, 1)
        for j in range(n_jobs):
            p2 = 1.0 / on if st[j, n] > 0 else 0.0
            if np.random.random() < p1 + p2 - p1 * p2:
                st[j, n] = np.random.randint(st[j, n], cap[n] + 1)


@njit(cache=True, nogil=True)
def _ranks(f1, f2):  # type: ignore[no-untyped-def]
    """Non-dominated fronts (0 = best) and crowding distances (within each front) of two
    minimised objectives: NSGA-II's rank and crowding (Deb et al. 2002)."""
    m = f1.shape[0]
    rank = np.full(m, -1, np.int64)
    crowd = np.zeros(m)
    members = np.empty(m, np.int64)
    left = m
    front = 0
    while left > 0:
        c = 0
        for a in range(m):
            if rank[a] >= 0:
                continue
            dominated = False
            for b in range(m):
                if b == a or rank[b] >= 0:
                    continue
                if f1[b] <= f1[a] and f2[b] <= f2[a] and (f1[b] < f1[a] or f2[b] < f2[a]):
                    dominated = True
                    break
            if not dominated:
                members[c] = a
                c += 1
        for i in range(c):
            rank[members[i]] = front
        mem = members[:c].copy()
        for obj in range(2):
            vals = np.empty(c)
            for i in range(c):
                vals[i] = f1[mem[i]] if obj == 0 else f2[mem[i]]
            order = np.argsort(vals)
            lo, hi = vals[order[0]], vals[order[c - 1]]
            crowd[mem[order[0]]] = np.inf
            crowd[mem[order[c - 1]]] = np.inf
            if hi > lo:
                for i in range(1, c - 1):
                    crowd[mem[order[i]]] += (vals[order[i + 1]] - vals[order[i - 1]]) / (hi - lo)
        left -= c
        front += 1
    return rank, crowd


@njit(cache=True, nogil=True)
def _key(st, w):  # type: ignore[no-untyped-def]
    h = 0.0
    n_jobs, n_nodes = st.shape
    for j in range(n_jobs):
        for n in range(n_nodes):
            h += st[j, n] * w[j, n]
    return h


@njit(cache=True, nogil=True)
def _ga(init, single, multi, factor, base, max_gpus, cap, p, scale, size, generations, seed):  # type: ignore[no-untyped-def]
    np.random.seed(seed)
    n_jobs, n_nodes = base.shape
    w = np.random.random((n_jobs, n_nodes)) + 0.5  # duplicate test: a random linear key
    pop = np.empty((size, n_jobs, n_nodes), np.int64)
    m = min(init.shape[0], size)
    pop[:m] = init[:m]
    f1 = np.empty(2 * size)
    f2 = np.empty(2 * size)
    keys = np.empty(2 * size)
    for i in range(m):
        f1[i], f2[i] = _objectives(pop[i], single, multi, factor, base, p, scale, cap)
        keys[i] = _key(pop[i], w)
    rank, crowd = _ranks(f1[:m], f2[:m])
    allp = np.empty((2 * size, n_jobs, n_nodes), np.int64)
    for _ in range(generations):
        allp[:m] = pop[:m]
        c = m
        tries = 0
        while c < m + size and tries < 100 * size:
            tries += 1
            par = np.empty(2, np.int64)
            for t in range(2):  # binary tournament: front, then crowding
                a, b = np.random.randint(m), np.random.randint(m)
                if rank[a] != rank[b]:
                    par[t] = a if rank[a] < rank[b] else b
                elif crowd[a] != crowd[b]:
                    par[t] = a if crowd[a] > crowd[b] else b
                else:
                    par[t] = a if np.random.random() < 0.5 else b
            cut = np.random.randint(n_jobs) if n_jobs > 0 else 0
            for child in range(2):
                if c >= m + size:
                    break
                kid = allp[c]
                for j in range(n_jobs):
                    src = par[child] if j < cut else par[1 - child]
                    for n in range(n_nodes):
                        kid[j, n] = pop[src, j, n]
                _mutate(kid, base, cap)
                _repair(kid, max_gpus, cap, 16)
                k = _key(kid, w)
                dup = False
                for i in range(c):
                    if keys[i] == k:
                        dup = True
                        break
                if dup:
                    continue
                keys[c] = k
                f1[c], f2[c] = _objectives(kid, single, multi, factor, base, p, scale, cap)
                c += 1
        r, cr = _ranks(f1[:c], f2[:c])
        # survival: by front, then crowding (largest first)
        by_crowd = np.argsort(-cr, kind="mergesort")
        order = by_crowd[np.argsort(r[by_crowd], kind="mergesort")]
        m = min(size, c)
        g1, g2, gk = f1[order[:m]].copy(), f2[order[:m]].copy(), keys[order[:m]].copy()
        for i in range(m):
            pop[i] = allp[order[i]]
            f1[i], f2[i], keys[i] = g1[i], g2[i], gk[i]
        rank, crowd = _ranks(f1[:m], f2[:m])
    return pop[:m].copy()


# --------------------------------------------------------------------------- the tables


class Speedups:
    """Each job's speedup table from what its agent reports (pol L243-256, speedup.py).

    A profiled job's goodput on ``K`` GPUs on one node and on several is its agent's best
    estimate (:func:`gpusched.jobmodels.goodput.best_configs`), kept until the agent's
    ``version`` changes; its speedup is that over its goodput at the fair share, one node
    with ``ceil(G / J)`` GPUs (pol L246-247: the artifact evaluates the fair share on
    ``ceil(nodes / G) = 1`` node). A job that never ran has speedup ``K / fair`` (pol
    L249-251).

    Where the job cannot use its whole fair share (so few jobs on so many GPUs that
    ``fair`` replicas split its largest batch below its smallest per-GPU batch), its
    goodput there is 0 (goodput.py's ``optimize`` zeroes invalid configurations) and the
    artifact's ratio is undefined (speedup.py divides by it: inf, and 0/0 = NaN, which its
    own ``assert 0 <= speedup`` refuses; its 64-GPU cluster never gets there). We take the
    best goodput the job reaches within its fair share instead (what it would make of
    those GPUs, using fewer of them), so the speedups stay the artifact's wherever its are
    defined. (Zeroing the table, as before, left such a job without GPUs for ever: Pollux
    stalled on every bundled cluster of 320 GPUs or more.)
    """

    def __init__(self, n_gpus: int) -> None:
        self.n_gpus = n_gpus
        self._goodput: dict[int, tuple[int, np.ndarray]] = {}

    def goodput(self, job: int, agent: Any) -> np.ndarray:
        """``(G + 1, 2)`` estimated goodput of ``job`` (cached by its agent's version)."""
        got = self._goodput.get(job)
        if got is not None and got[0] == agent.version:
            return got[1]
        from gpusched.jobmodels.goodput import best_configs

        k = np.arange(1, self.n_gpus + 1)
        table = np.zeros((self.n_gpus + 1, 2))
        for col, nodes in ((0, 1), (1, 2)):
            table[1:, col] = best_configs(
                agent.app, agent.theta, agent.sqr, agent.var, k, np.full(k.size, nodes)
            )[0]
        self._goodput[job] = (agent.version, table)
        return table

    def forget(self, done: np.ndarray) -> None:
        """Drop the tables of finished jobs."""
        for j in np.asarray(done).tolist():
            self._goodput.pop(int(j), None)

    def table(self, jobs: np.ndarray, agents: list[Any]) -> np.ndarray:
        """``(J, G + 1, 2)`` speedups of ``jobs`` (their agents in the same order)."""
        n = len(jobs)
        fair = -(-self.n_gpus // max(n, 1))
        k = np.arange(self.n_gpus + 1, dtype=np.float64)
        out = np.repeat((k / fair)[None, :, None], n, axis=0).repeat(2, axis=2)
        for i, (j, a) in enumerate(zip(np.asarray(jobs).tolist(), agents, strict=True)):
            if a.profiled:  # (one that never ran: K / fair)
                g = self.goodput(j, a)
                base = g[fair, 0]
                if not base > 0:  # the fair share is more than the job can use
                    base = g[1 : fair + 1, 0].max()
                out[i] = g / base if base > 0 else 0.0
        return out
