"""The primal-dual machinery of PD-ORS: resource prices, the per-slot cost theta, the DP.

M. Yu, J. Liu, C. Wu, B. Ji, E. S. Bentley, "Toward Efficient Online Scheduling for
Distributed Machine Learning Systems", IEEE Transactions on Network Science and
Engineering, 2022, Section IV; the job model is :mod:`gpusched.jobmodels.ps` (Section
III). The policies (PD-ORS, OASiS) sit on top:

* :func:`price`, :func:`price_bounds`, :class:`Prices`: Alg. 1's dual state, the price
  ``Q(rho) = L (U^r / L)^(rho / C)`` of eq. 12 with U^r and L of eq. 13-14, and Alg. 1
  line 3 (``rho += alpha w + beta s`` for an admitted job, :meth:`Prices.commit`);
* :func:`theta_internal`: Alg. 4 lines 2-7 (Case 1, every worker and PS on one machine);
* :func:`theta_external`: Alg. 4 lines 8-11 (Case 2): the LP relaxation of eq. 23-26, the
  pre-rounding gain ``x' = G_delta x_bar`` and the randomized rounding of eq. 27-28;
* :func:`theta`: Alg. 4 line 12, the cheaper of the two;
* :func:`plan`: Alg. 2 and Alg. 3, the DP of eq. 21 over (slot, workload) and the
  completion time that maximises the payoff ``utility - cost`` (the RHS of eq. 11);
* :func:`g_delta_packing`, :func:`g_delta_covering`: G_delta of eq. 29 and eq. 30.

Units: one paper slot is one simulated second; slots are absolute integers ``0..T-1``. A
job's ``c_int``/``c_ext`` are worker-slots per sample (eq. 3's denominator at the ratio),
so ``v`` samples in one slot need ``v c`` workers.

Readings of the paper (where it is ambiguous or silent), each a deliberate choice:

1. **Eq. 13** writes ``u_i(ceil(E K / F (tau + 2 g gamma / (b_int F))) - a_i)``; the ceiling
   is the *duration* of the fastest schedule (F workers on one machine), so the utility is
   taken at that training time: ``U^r = max_i u_i(ceil(V c_int / F)) / (alpha^r + beta^r)``
   over the jobs that demand resource r. A resource no job demands gets ``U^r = L`` (a flat
   price), and ``U^r`` is floored at L so that a price never falls as a machine fills.
2. **Eq. 14** with ``1/mu`` as large as its inequality allows,
   ``1/mu = min_i ceil(V_i c_ext_i) sum_r (alpha + beta) / (T sum_h sum_r C_h^r)``, so
   ``L = min_i u_i(T - a_i) / (2 mu ceil(V_i c_ext_i) sum_r (alpha_i^r + beta_i^r))``. Jobs
   whose utility at the horizon is 0 (priority 0) are left out of the minimum (they would
   make L = 0 and eq. 12 degenerate; such a job is never admitted anyway, its payoff is
   ``0 - cost``). With no job of positive utility, U = L = 1 (flat prices).
3. **Eq. 12** is evaluated in log space, ``exp((1 - x) ln L + x ln U)`` with
   ``x = rho / C``, so a very small L (a time-critical sigmoid far past its target) does
   not overflow ``(U/L)^x``. A machine without a resource (C = 0) prices it at U.
4. **Alg. 4 line 2 (internal)**: the paper sorts machines by the cost of one PS and its
   gamma workers, ``sum_r p^r (alpha^r gamma + beta^r)``, and takes the first that fits.
   We place ``w = ceil(v c_int)`` workers (eq. 20 with b_int; line 3 writes the PS count
   ``v c_int / gamma``, here ``s = ceil(w / gamma)`` so that ``w <= gamma s`` and the engine's
   eq. 1 with the actual counts trains at least v samples) and rank the machines by the
   cost of these counts, ``sum_r p^r (alpha^r w + beta^r s)``: the paper's key times s when
   ``w = gamma s``, and with integer counts the exact cost, so the machine returned is the
   cheapest single machine that fits (ties: the lowest index). Eq. 4 (``w <= F``) is checked
   first, then the free capacity (eq. 18/24).
5. **Alg. 4 lines 8-11 (external)**: the LP relaxation of eq. 23-26 *plus* the ratio
   ``sum w <= gamma sum s``. Eq. 26 (``sum w >= v c_ext``) assumes eq. 3's form, i.e. the
   ratio of eq. 2; without the ratio row the LP would buy workers and almost no PSs, and
   the engine's eq. 1 with the actual counts would train slower than planned. The demand is
   ``D = v c_ext`` (Alg. 4 line 1 writes ``ceil(v c_int)``; Case 2 needs the external rate,
   and an integer schedule meets ``sum w >= D`` iff it meets ``sum w >= ceil(D)``). The
   relaxation is tightened by what every integer solution obeys: a machine gets no worker
   (PS) variable if one worker (PS) does not fit there, and ``w_h <= floor(free / alpha)``
   per resource, ``w_h <= F``, ``s_h <= ceil(F / gamma)``. Identical machines (same free
   capacity and prices) are cut to as few as can hold ``(D, D / gamma)``, and machines
   dearer than a group that can hold it all are left out; neither changes the LP's optimal
   value (see :func:`_lp_machines`). When one group is left (typically the machines
   nobody has allocated, all at price L), the optimum is known without an LP.
6. **Which LP optimum is rounded**: x_bar is the *symmetric* optimum, in which the
   machines of a group share the group's total equally (an optimum too: they are
   interchangeable; an interior-point method without crossover returns such a point).
   A vertex, which the simplex returns, fills machines to capacity, and where one machine
   holds fractional workers and PSs on a tight resource row, rounding both up never fits
   and rounding down misses eq. 26: on Sec. V-like jobs most draws failed and the external
   case was almost never usable. The equal shares leave slack on every row.
7. **Rounding (eq. 27-28)**: each entry of ``x' = G_delta x_bar`` is rounded up with
   probability equal to its fractional part (entries within 1e-9 of an integer are that
   integer). A draw is feasible if it meets eq. 24-26, the ratio, and has at least one PS.
   Alg. 4 line 11 loops "if infeasible or iter < S"; we keep the cheapest of the first
   ``rounds`` feasible draws (S = ``rounds``) and give up after ``max_failures`` infeasible
   draws (the paper's Sec. V uses 5,000), returning the best feasible draw found, or None.
   Draws are made in batches (one ``rng.random`` call per batch), so the schedule depends
   on the seed only. When no draw can be feasible (the fixed part already breaks a
   capacity, or too few workers fit even rounding everything up) we return None at once.
8. **Alg. 4 line 12**: the cheaper of the two cases (ties: internal). The external case is
   skipped (no LP, no draws) when the internal cost is at most a lower bound of any
   external integer schedule, ``ceil(D) min p^w + ceil(ceil(D) / gamma) min p^s`` over the
   machines that fit one worker (PS): the result is the same, only fewer draws are made.
9. **Alg. 3 / eq. 21**: the paper enumerates ``v = 0..V`` samples per slot, intractable for
   V ~ 1e7; we split V into ``granularity`` equal units and let each slot train a whole
   number of units. theta(t, u) is computed for u = 1, 2, ... and stops at the first u with
   no schedule (a larger workload needs more workers, so it would not fit either). The DP
   runs forward over slots ``[arrival, horizon)``, so ``Theta(t~, V)`` for every completion
   time t~ comes from one sweep (Alg. 2's loop over t~ needs no recursion).
10. **Alg. 2**: the schedule maximising ``u(t~) - Theta(t~, V)``, the earliest t~ on ties (so
   the schedule's last busy slot is t~). The paper keeps ``lambda = 0, pi = {}`` unless a
   positive payoff is found; :func:`plan` returns the best schedule even if its payoff is
   <= 0, and the caller rejects it (Alg. 1 line 4). None if no schedule fits at all.
11. **Caching**: theta depends on a slot only through its allocated resources rho[t]
    (prices and free capacity are functions of it), so slots of equal rho (e.g. all the
    slots nobody has allocated yet) share one evaluation, the first slot's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from gpusched.errors import InvariantError
from gpusched.jobmodels.ps import PSJob, utility

__all__ = [
    "Prices",
    "Schedule",
    "g_delta_covering",
    "g_delta_packing",
    "plan",
    "price",
    "price_bounds",
    "theta",
    "theta_external",
    "theta_internal",
]

#: A per-slot allocation: (cost, workers per machine (H,), PSs per machine (H,)).
Alloc = tuple[float, np.ndarray, np.ndarray]

#: Slack on capacity checks (resources are decimals such as 2.5 GB), as the ledger's.
_TOL = 1e-9
#: The most draws per rounding batch (the first is 2 * rounds; each next one doubles).
_BATCH_MAX = 4096


# --------------------------------------------------------------------------- prices


def price(rho: Any, capacity: Any, U: Any, L: float) -> np.ndarray:
    """Eq. 12: the unit price ``L (U^r / L)^(rho / C)`` of each resource.

    Parameters
    ----------
    rho
        Allocated amounts, any shape ``(..., R)`` (units of each resource).
    capacity
        Capacities, broadcastable against ``rho``; where 0, the price is ``U``.
    U
        ``(R,)`` top price of each resource (eq. 13), broadcast over the last axis.
    L
        Bottom price (eq. 14), > 0.

    Returns
    -------
    numpy.ndarray
        Prices, the broadcast shape of ``rho`` and ``capacity`` (utility per unit).
    """
    rho = np.asarray(rho, dtype=np.float64)
    cap = np.asarray(capacity, dtype=np.float64)
    log_u = np.log(np.asarray(U, dtype=np.float64))
    x = np.ones(np.broadcast_shapes(rho.shape, cap.shape))
    np.divide(rho, cap, out=x, where=np.broadcast_to(cap > 0, x.shape))
    return np.asarray(np.exp((1.0 - x) * math.log(L) + x * log_u))


def price_bounds(
    jobs: Sequence[PSJob], horizon: int, capacity: np.ndarray
) -> tuple[np.ndarray, float]:
    """U^r (eq. 13) and L (eq. 14) of the price function, from the jobs' parameters.

    Parameters
    ----------
    jobs
        The jobs (at least one).
    horizon
        T, slots.
    capacity
        ``(H, R)`` capacities.

    Returns
    -------
    tuple
        ``U`` ``(R,)`` and ``L`` (utility per unit of resource), with ``U >= L > 0``
        (readings 1 and 2 of the module docstring).
    """
    if not jobs:
        raise ValueError("price_bounds needs at least one job")
    cap = np.asarray(capacity, dtype=np.float64)
    total_cap = float(cap.sum())
    if total_cap <= 0:
        raise ValueError("price_bounds needs a positive total capacity")
    theta = np.stack([j.theta for j in jobs])
    demand = np.stack([j.worker + j.ps for j in jobs])  # (n, R) alpha + beta
    work = np.array([j.work for j in jobs])
    batch = np.array([j.batch for j in jobs], dtype=np.float64)
    c_int = np.array([j.c_int for j in jobs])
    c_ext = np.array([j.c_ext for j in jobs])
    arrival = np.array([j.arrival for j in jobs], dtype=np.float64)

    best = utility(theta, np.ceil(work * c_int / batch))  # eq. 13: F workers, internal
    at_horizon = utility(theta, horizon - arrival)
    # eq. 14: a job's resource-slots at the external rate, ceil(V c_ext) sum_r (alpha+beta)
    slots = np.ceil(work * c_ext) * demand.sum(axis=1)
    ok = (at_horizon > 0) & (slots > 0)
    if not ok.any():
        return np.ones(cap.shape[1]), 1.0
    inv_mu = float(slots[slots > 0].min()) / (horizon * total_cap)  # the largest 1/mu allowed
    L = float(np.min(inv_mu / 2.0 * at_horizon[ok] / slots[ok]))
    L = max(L, float(np.finfo(np.float64).tiny))  # an underflow must not make L = 0
    per_unit = np.divide(
        best[:, None], demand, out=np.full(demand.shape, -np.inf), where=demand > 0
    )
    U = np.maximum(per_unit.max(axis=0), L)  # undemanded: -inf -> L
    return U, L


class Prices:
    """Alg. 1's dual state: ``rho`` ``(T, H, R)`` allocated per future slot, and the prices.

    Parameters
    ----------
    capacity
        ``(H, R)`` capacities.
    horizon
        T, slots.
    U, L
        Eq. 13 and eq. 14 (:func:`price_bounds`).
    """

    def __init__(self, capacity: np.ndarray, horizon: int, U: np.ndarray, L: float) -> None:
        self.capacity = np.asarray(capacity, dtype=np.float64)
        self.U = np.asarray(U, dtype=np.float64)
        self.L = float(L)
        h, r = self.capacity.shape
        #: ``(T, H, R)`` resources allocated to admitted jobs, per slot
        self.rho = np.zeros((int(horizon), h, r))

    @property
    def horizon(self) -> int:
        """T, slots."""
        return int(self.rho.shape[0])

    def prices(self) -> np.ndarray:
        """``(T, H, R)`` unit prices ``Q(rho)`` (eq. 12)."""
        return price(self.rho, self.capacity, self.U, self.L)

    def free(self) -> np.ndarray:
        """``(T, H, R)`` capacity not allocated (the paper's C-hat of eq. 15)."""
        return self.capacity - self.rho

    def commit(self, job: PSJob, sched: Schedule) -> None:
        """Alg. 1 line 3: ``rho += alpha w + beta s`` over the schedule's slots.

        Raises
        ------
        InvariantError
            If the schedule does not fit the free capacity (a bug in the caller).
        """
        add = (
            sched.workers[:, :, None] * job.worker[None, None, :]
            + sched.ps[:, :, None] * job.ps[None, None, :]
        )
        after = self.rho + add
        if (after > self.capacity * (1 + _TOL) + _TOL).any():
            t, h, r = (int(x) for x in np.argwhere(after > self.capacity + _TOL)[0])
            raise InvariantError(
                f"committed schedule puts {after[t, h, r]:g} of resource {r} on machine {h} "
                f"in slot {t} (capacity {self.capacity[h, r]:g})"
            )
        self.rho = after


@dataclass(frozen=True)
class Schedule:
    """One job's schedule over the horizon (Alg. 2's pi*).

    Attributes
    ----------
    workers, ps
        ``(T, H)`` int64 workers and PSs per slot and machine (0 outside the schedule).
    completion
        The last slot with workers (t~ of eq. 6).
    cost
        ``sum p (alpha w + beta s)`` over the schedule at the prices it was planned at
        (eq. 16).
    payoff
        ``utility(completion) - cost`` (lambda, the RHS of eq. 11).
    """

    workers: np.ndarray
    ps: np.ndarray
    completion: int
    cost: float
    payoff: float


# --------------------------------------------------------------------------- theta


def _empty(h: int) -> Alloc:
    z = np.zeros(h, dtype=np.int64)
    return 0.0, z, z.copy()


def theta_internal(job: PSJob, v: float, p_t: np.ndarray, free_t: np.ndarray) -> Alloc | None:
    """Alg. 4 lines 2-7: the cheapest single machine that trains ``v`` samples in the slot.

    Parameters
    ----------
    job
        The job.
    v
        Samples to train in the slot (>= 0; 0 needs nothing and costs 0).
    p_t, free_t
        ``(H, R)`` prices and free capacity of the slot.

    Returns
    -------
    tuple or None
        ``(cost, w, s)`` with ``w``, ``s`` ``(H,)`` int64 (nonzero on one machine), or None
        if no machine fits ``w = ceil(v c_int)`` workers and ``ceil(w / gamma)`` PSs or
        ``w > F`` (reading 4 of the module docstring).
    """
    h = p_t.shape[0]
    if v <= 0:
        return _empty(h)
    n_w = math.ceil(v * job.c_int)  # eq. 20, internal rate
    if n_w > job.batch:  # eq. 4
        return None
    n_s = math.ceil(n_w / job.gamma)  # w <= gamma s: eq. 1 trains >= v samples
    need = n_w * job.worker + n_s * job.ps  # (R,)
    fits = (need[None, :] <= free_t + _TOL).all(axis=1)  # eq. 18
    if not fits.any():
        return None
    cost = p_t @ need  # (H,)
    best = int(np.argmin(np.where(fits, cost, np.inf)))
    w = np.zeros(h, dtype=np.int64)
    s = np.zeros(h, dtype=np.int64)
    w[best], s[best] = n_w, n_s
    return float(cost[best]), w, s


def _unit_bounds(
    job: PSJob, free_t: np.ndarray, split: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Most whole workers and PSs that fit each machine on their own, ``(H,)`` each; with
    ``split`` (OASiS) workers only where it is True and PSs only where it is False."""
    f = np.maximum(free_t, 0.0) + _TOL
    out = []
    for need, cap in ((job.worker, job.batch), (job.ps, math.ceil(job.batch / job.gamma))):
        pos = need > 0
        fit = np.floor(f[:, pos] / need[pos]).min(axis=1) if pos.any() else np.full(len(f), cap)
        out.append(np.minimum(fit, cap))
    if split is not None:
        out[0] = np.where(split, out[0], 0)
        out[1] = np.where(split, 0, out[1])
    return out[0], out[1]


def _groups(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Equal rows of a 2-D float array: (first row of each group, group of each row, sizes)."""
    rows = np.ascontiguousarray(rows + 0.0)  # -0.0 -> 0.0
    keys = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).reshape(-1)
    _, first, inverse, counts = np.unique(
        keys, return_index=True, return_inverse=True, return_counts=True
    )
    return first, inverse.reshape(-1), counts


def _lp_machines(
    job: PSJob,
    d: float,
    pw: np.ndarray,
    ps: np.ndarray,
    f: np.ndarray,
    wb: np.ndarray,
    sb: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The machines the LP needs, in ascending order (the others stay at 0); the group of
    each machine; the groups' sizes (0 for the groups left out: dropped, or no whole
    worker or PS fits); and whether each group can hold ``(D, D / gamma)`` on its own.

    Two reductions, neither of which changes the LP's optimal value. At an optimum (prices
    > 0) ``sum w = D`` and ``sum s = D / gamma``; a machine's region
    ``P = {x >= 0: A x <= b}`` has ``A >= 0``, so it is down-closed, and k equal machines
    hold any share ``q <= (D, D / gamma)`` once ``(D, D / gamma)`` lies in ``k P``:

    * equal machines (same free capacity and prices) form a group, of which the first
      ``m`` suffice, ``m`` = the largest load/capacity ratio of ``(D, D / gamma)``;
    * a group that can hold all of ``(D, D / gamma)`` on its own takes, at no higher cost,
      the load of any machine whose worker and PS prices are both at least its own, so
      those machines go (ties between such groups: the lower group is kept).
    """
    alpha, beta, gamma = job.worker, job.ps, job.gamma
    first, inverse, counts = _groups(np.column_stack([f, pw, ps, wb, sb]))
    host = (wb[first] > 0) & (sb[first] > 0)
    dw = np.where(wb[first] > 0, d, 0.0)
    ds = np.where(sb[first] > 0, d / gamma, 0.0)
    load = np.column_stack([dw[:, None] * alpha + ds[:, None] * beta, dw, ds])
    room = np.column_stack([f[first], wb[first], sb[first]])
    ratio = np.divide(load, room, out=np.zeros_like(load), where=room > 0)
    need = np.maximum(np.ceil(ratio.max(axis=1)), 1)
    whole = host & (need <= counts)  # groups that can hold everything
    m = np.minimum(need, counts)
    # dominance: group a drops group b if a holds everything and is no dearer in both
    gw, gs = pw[first], ps[first]
    a = np.flatnonzero(whole)[:, None]
    b = np.arange(len(first))[None, :]
    no_dearer = (gw[a] <= gw[b]) & (gs[a] <= gs[b])
    same = (gw[a] == gw[b]) & (gs[a] == gs[b])
    dropped = (no_dearer & (~same | (a < b))).any(axis=0)
    # the first m of each remaining group, in machine order
    h = len(f)
    order = np.lexsort((np.arange(h), inverse))  # by group, then machine index
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.empty(h, dtype=np.int64)
    rank[order] = np.arange(h) - start[inverse[order]]
    usable = (wb[first] > 0) | (sb[first] > 0)
    size = np.where(dropped | ~usable, 0, counts)
    keep = (rank < m[inverse]) & (size[inverse] > 0)
    return np.flatnonzero(keep), inverse, size, whole


def _lp_external(
    job: PSJob, d: float, p_t: np.ndarray, free_t: np.ndarray, wb: np.ndarray, sb: np.ndarray
) -> np.ndarray | None:
    """The LP relaxation of eq. 23-26 plus the ratio; ``(2, H)`` optimal ``(w_bar, s_bar)``.

    Over the machines of :func:`_lp_machines`, with the bounds ``wb``, ``sb`` of
    :func:`_unit_bounds`; the costs are scaled to at most 1 (the optimum does not change).
    None if infeasible.
    """
    h = p_t.shape[0]
    alpha, beta, gamma = job.worker, job.ps, job.gamma
    f = np.maximum(free_t, 0.0)
    pw, ps = p_t @ alpha, p_t @ beta  # p^w, p^s of eq. 23
    kept, group, size, whole = _lp_machines(job, d, pw, ps, f, wb, sb)
    k = len(kept)
    if k == 0:
        return None
    if np.count_nonzero(size) == 1:
        # One group of equal machines is left. If it holds (D, D / gamma), every split
        # costs the least possible, D p^w + D p^s / gamma, and the equal split is the
        # LP's symmetric optimum. If it does not, no group does (the cheapest group that
        # does is never dropped), so nothing was dropped and no machine can help.
        g = int(np.flatnonzero(size)[0])
        if not whole[g]:
            return None
        on = group == g
        x = np.zeros((2, h))
        x[0, on], x[1, on] = d / size[g], d / gamma / size[g]
        return x
    # rows alpha_r w_h + beta_r s_h <= f_hr (eq. 24) not implied by the bounds
    both = np.flatnonzero((alpha > 0) & (beta > 0))
    fk = f[kept][:, both]  # (k, |both|)
    loose = alpha[both] * wb[kept, None] + beta[both] * sb[kept, None] <= fk + _TOL
    hh, rr = np.nonzero(~loose)
    n_cap = len(hh)
    rows = np.concatenate([np.arange(n_cap), np.arange(n_cap)])
    cols = np.concatenate([hh, k + hh])
    vals = np.concatenate([alpha[both][rr], beta[both][rr]])
    # eq. 25 (sum w <= F), eq. 26 (-sum w <= -D), ratio (sum w - gamma sum s <= 0)
    i = np.arange(k)
    rows = np.concatenate(
        [rows, np.full(k, n_cap), np.full(k, n_cap + 1), np.full(2 * k, n_cap + 2)]
    )
    cols = np.concatenate([cols, i, i, i, k + i])
    vals = np.concatenate([vals, np.ones(k), -np.ones(k), np.ones(k), np.full(k, -gamma)])
    a_ub = sp.csr_array((vals, (rows, cols)), shape=(n_cap + 3, 2 * k))
    b_ub = np.concatenate([fk[hh, rr], [job.batch, -d, 0.0]])
    bounds = np.column_stack([np.zeros(2 * k), np.concatenate([wb[kept], sb[kept]])])
    c = np.concatenate([pw[kept], ps[kept]])
    scale = float(c.max()) if c.max() > 0 else 1.0
    res = linprog(c / scale, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")
    if res.status != 0:  # infeasible (or HiGHS gave up: no external schedule)
        return None
    # each group's total, shared equally by all its machines (reading 6)
    n_g = len(size)
    total = np.stack(
        [np.bincount(group[kept], weights=part, minlength=n_g) for part in (res.x[:k], res.x[k:])]
    )
    share = np.divide(total, size, out=np.zeros_like(total), where=size > 0)
    return np.asarray(share[:, group])


def _round(
    job: PSJob,
    d: float,
    x_bar: np.ndarray,
    p_t: np.ndarray,
    free_t: np.ndarray,
    *,
    g_delta: float,
    rounds: int,
    max_failures: int,
    rng: np.random.Generator,
) -> Alloc | None:
    """Eq. 27-28 on ``x' = G_delta x_bar``, batch by batch (reading 7)."""
    h = p_t.shape[0]
    x = g_delta * x_bar.reshape(-1)  # (2H,) w then s
    near = np.rint(x)
    x = np.where(np.abs(x - near) < 1e-9, near, x)
    base = np.floor(x)
    frac = x - base
    idx = np.flatnonzero(frac > 0)  # the entries a draw decides
    coef = np.concatenate([p_t @ job.worker, p_t @ job.ps])  # cost of one unit of each entry
    is_w = idx < h
    base_w, base_s = float(base[:h].sum()), float(base[h:].sum())
    if base_w + is_w.sum() < d or base_w > job.batch:  # rounding all up (down) is too few (many)
        return None
    # eq. 24 per machine: at the floor, and with every entry of the machine rounded up
    low = base[:h, None] * job.worker + base[h:, None] * job.ps  # (H, R)
    if (low > free_t + _TOL).any():
        return None
    top = base.copy()
    top[idx] += 1.0
    high = top[:h, None] * job.worker + top[h:, None] * job.ps
    risky = np.flatnonzero((high > free_t + _TOL).any(axis=1))  # a draw may overfill these
    if risky.size:
        on_w = np.flatnonzero(np.isin(idx, risky))  # draws' columns on risky machines
        on_s = np.flatnonzero(np.isin(idx, risky + h))
        pos_w = np.searchsorted(risky, idx[on_w])
        pos_s = np.searchsorted(risky, idx[on_s] - h)
    role = np.column_stack([is_w, ~is_w]).astype(np.float64)  # (k, 2): counts w, s

    def feasible(up: np.ndarray) -> np.ndarray:
        n_w, n_s = (up @ role + [base_w, base_s]).T
        ok = (n_w <= job.batch) & (n_w >= d)  # eq. 25, 26
        ok &= (n_w <= job.gamma * n_s) & (n_s >= 1)  # the ratio, a PS
        if risky.size:  # eq. 24 where it can bind
            w = np.zeros((len(up), len(risky)))
            s = np.zeros((len(up), len(risky)))
            w[:, pos_w], s[:, pos_s] = up[:, on_w], up[:, on_s]
            load = low[risky] + w[..., None] * job.worker + s[..., None] * job.ps
            ok &= (load <= free_t[risky] + _TOL).all(axis=(1, 2))
        return np.asarray(ok)

    best: tuple[float, np.ndarray] | None = None
    n_ok = n_bad = 0
    batch = min(2 * rounds, _BATCH_MAX)
    while n_ok < rounds and n_bad < max_failures:
        up = (rng.random((batch, len(idx))) < frac[idx]).astype(np.float64)
        ok = feasible(up)
        # stop at the rounds-th feasible or the max_failures-th infeasible draw
        done = (np.cumsum(ok) >= rounds - n_ok) | (np.cumsum(~ok) >= max_failures - n_bad)
        stop = int(np.argmax(done)) + 1 if done.any() else batch
        ok, up = ok[:stop], up[:stop]
        n_ok += int(ok.sum())
        n_bad += stop - int(ok.sum())
        if ok.any():
            cost = up[ok] @ coef[idx]
            j = int(np.argmin(cost))
            if best is None or cost[j] < best[0]:
                best = (float(cost[j]), up[ok][j])
        batch = min(2 * batch, _BATCH_MAX)
    if best is None:
        return None
    x_hat = base.copy()
    x_hat[idx] += best[1]
    counts = x_hat.astype(np.int64)
    return float(counts @ coef), counts[:h], counts[h:]


def theta_external(
    job: PSJob,
    v: float,
    p_t: np.ndarray,
    free_t: np.ndarray,
    *,
    g_delta: float = 1.0,
    rounds: int = 10,
    max_failures: int = 5000,
    rng: np.random.Generator,
    split: np.ndarray | None = None,
) -> Alloc | None:
    """Alg. 4 lines 8-11: LP relaxation and randomized rounding, workers on any machines.

    Parameters
    ----------
    job
        The job.
    v
        Samples to train in the slot (>= 0; 0 needs nothing and costs 0).
    p_t, free_t
        ``(H, R)`` prices and free capacity of the slot.
    g_delta
        The pre-rounding gain G_delta (eq. 29 or 30; 1 rounds the LP solution as it is).
    rounds
        S: keep the cheapest of this many feasible draws.
    max_failures
        Give up after this many infeasible draws.
    rng
        The only source of randomness.
    split
        OASiS (Bao et al., INFOCOM 2018, as the PD-ORS paper's Sec. V runs it): bool
        ``(H,)``, workers only on the True machines and PSs only on the others; None lets
        both anywhere (PD-ORS).

    Returns
    -------
    tuple or None
        ``(cost, w, s)``, ``w`` and ``s`` ``(H,)`` int64 meeting eq. 24-26 and
        ``sum w <= gamma sum s`` with at least one PS; None if the LP is infeasible or no
        draw was feasible (readings 5 to 7 of the module docstring).
    """
    if rounds < 1 or max_failures < 1:
        raise ValueError(f"rounds and max_failures must be >= 1, got {rounds}, {max_failures}")
    h = p_t.shape[0]
    if v <= 0:
        return _empty(h)
    d = v * job.c_ext  # eq. 26
    wb, sb = _unit_bounds(job, free_t, split)
    n_w = math.ceil(d)
    if n_w > job.batch or wb.sum() < n_w or sb.sum() < math.ceil(n_w / job.gamma):
        return None  # no integer schedule: eq. 25, or too few whole workers/PSs fit
    x_bar = _lp_external(job, d, p_t, free_t, wb, sb)
    if x_bar is None:
        return None
    return _round(
        job,
        d,
        x_bar,
        p_t,
        free_t,
        g_delta=g_delta,
        rounds=rounds,
        max_failures=max_failures,
        rng=rng,
    )


def _external_floor(
    job: PSJob, v: float, p_t: np.ndarray, free_t: np.ndarray, split: np.ndarray | None = None
) -> float:
    """A lower bound of the cost of any external integer schedule (reading 8)."""
    wb, sb = _unit_bounds(job, free_t, split)
    if not (wb > 0).any() or not (sb > 0).any():
        return math.inf
    n_w = math.ceil(v * job.c_ext)
    n_s = max(1, math.ceil(n_w / job.gamma))
    pw = float((p_t @ job.worker)[wb > 0].min())
    ps = float((p_t @ job.ps)[sb > 0].min())
    return n_w * pw + n_s * ps


def theta(
    job: PSJob,
    v: float,
    p_t: np.ndarray,
    free_t: np.ndarray,
    *,
    g_delta: float = 1.0,
    rounds: int = 10,
    max_failures: int = 5000,
    rng: np.random.Generator,
    split: np.ndarray | None = None,
) -> Alloc | None:
    """Alg. 4 line 12: theta(t, v), the cheaper of :func:`theta_internal` and
    :func:`theta_external` (ties: internal; reading 8 of the module docstring).

    Parameters are those of :func:`theta_external`; returns ``(cost, w, s)`` or None.
    With ``split`` (OASiS) no machine holds both roles, so there is no internal case.
    """
    inner = None if split is not None else theta_internal(job, v, p_t, free_t)
    if inner is not None and inner[0] <= _external_floor(job, v, p_t, free_t):
        return inner
    outer = theta_external(
        job,
        v,
        p_t,
        free_t,
        g_delta=g_delta,
        rounds=rounds,
        max_failures=max_failures,
        rng=rng,
        split=split,
    )
    if outer is None or (inner is not None and inner[0] <= outer[0]):
        return inner
    return outer


# --------------------------------------------------------------------------- the DP


def plan(
    job: PSJob,
    prices: Prices,
    *,
    horizon: int,
    granularity: int = 10,
    g_delta: float = 1.0,
    rounds: int = 10,
    max_failures: int = 5000,
    rng: np.random.Generator,
    split: np.ndarray | None = None,
) -> Schedule | None:
    """Alg. 2 and Alg. 3: the schedule of ``job`` maximising ``utility - cost`` at ``prices``.

    Parameters
    ----------
    job
        The job; it may use slots ``[job.arrival, horizon)``.
    prices
        The dual state (read only).
    horizon
        T, slots (at most ``prices.horizon``).
    granularity
        The workload V is split into this many equal units; each slot trains a whole
        number of units (reading 9 of the module docstring).
    g_delta, rounds, max_failures, rng, split
        As in :func:`theta_external` (``split``: OASiS's disjoint worker and PS machines).

    Returns
    -------
    Schedule or None
        The schedule of largest payoff (possibly <= 0: the caller decides, Alg. 1 line 4);
        None if no schedule trains V samples by the horizon.
    """
    if granularity < 1:
        raise ValueError(f"granularity must be >= 1, got {granularity}")
    n_t, n_h = prices.rho.shape[:2]
    slots = np.arange(job.arrival, min(horizon, n_t))
    if slots.size == 0:
        return None
    g = granularity
    unit = job.work / g
    p_all, free_all = prices.prices()[slots], prices.free()[slots]
    # slots of equal rho share theta (reading 11), evaluated in the order they first occur
    first, inverse, _ = _groups(prices.rho[slots].reshape(len(slots), -1))
    cost = np.full((len(first), g + 1), np.inf)
    cost[:, 0] = 0.0
    alloc: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
    for k in np.argsort(first).tolist():
        t = int(first[k])
        for u in range(1, g + 1):
            got = theta(
                job,
                u * unit,
                p_all[t],
                free_all[t],
                g_delta=g_delta,
                rounds=rounds,
                max_failures=max_failures,
                rng=rng,
                split=split,
            )
            if got is None:
                break  # monotone: more units need more workers
            cost[k, u] = got[0]
            alloc[k, u] = (got[1], got[2])

    # eq. 21, forward: best[i, k] = min_u theta(t_i, u) + best[i-1, k-u]
    kk, uu = np.meshgrid(np.arange(g + 1), np.arange(g + 1), indexing="ij")
    valid = uu <= kk
    prev_k = np.where(valid, kk - uu, 0)
    best = np.full((len(slots), g + 1), np.inf)
    choice = np.zeros((len(slots), g + 1), dtype=np.int64)
    before = np.full(g + 1, np.inf)
    before[0] = 0.0
    for i in range(len(slots)):
        row = cost[inverse[i]]
        cand = np.where(valid, row[uu] + before[prev_k], np.inf)
        choice[i] = np.argmin(cand, axis=1)
        best[i] = cand[np.arange(g + 1), choice[i]]
        before = best[i]
    done = np.isfinite(best[:, g])
    if not done.any():
        return None
    # Alg. 2: the completion time of largest payoff, the earliest on ties (reading 10)
    payoff = np.where(done, job.utility(slots) - best[:, g], -np.inf)
    last = int(np.argmax(payoff))

    workers = np.zeros((n_t, n_h), dtype=np.int64)
    ps = np.zeros((n_t, n_h), dtype=np.int64)
    left = g
    for i in range(last, -1, -1):
        u = int(choice[i, left])
        if u:
            workers[slots[i]], ps[slots[i]] = alloc[int(inverse[i]), u]
            left -= u
    busy = np.flatnonzero(workers.sum(axis=1) > 0)
    completion = int(busy[-1])
    p = prices.prices()
    total = float(np.einsum("th,thr,r->", workers, p, job.worker))
    total += float(np.einsum("th,thr,r->", ps, p, job.ps))
    return Schedule(
        workers=workers,
        ps=ps,
        completion=completion,
        cost=total,
        payoff=float(job.utility(completion)) - total,
    )


# --------------------------------------------------------------------------- G_delta


def g_delta_packing(delta: float, W2: float, R: int, H: int) -> float:
    """Eq. 29 (Theorem 3): G_delta in (0, 1], favouring the resource (packing) constraints.

    ``1 + a - sqrt(a^2 + 2 a)`` with ``a = 3 ln(3 (R H + 1) / delta) / (2 W2)``, where
    ``W2 = min{F, C-hat / alpha, C-hat / beta}`` and ``delta`` in (0, 1].
    """
    _check_delta(delta, W2, "W2")
    a = 3.0 * math.log(3.0 * (R * H + 1) / delta) / (2.0 * W2)
    return 1.0 + a - math.sqrt(a * a + 2.0 * a)


def g_delta_covering(delta: float, W1: float) -> float:
    """Eq. 30 (Theorem 4): G_delta > 1, favouring the workload (cover) constraint.

    ``1 + b + sqrt(b^2 + 2 b)`` with ``b = ln(3 / delta) / W1``, where
    ``W1 = V[t] (tau + 2 g gamma / (b_ext F))`` (the slot's workers, ``v c_ext``).
    """
    _check_delta(delta, W1, "W1")
    b = math.log(3.0 / delta) / W1
    return 1.0 + b + math.sqrt(b * b + 2.0 * b)


def _check_delta(delta: float, w: float, name: str) -> None:
    if not 0.0 < delta <= 1.0:
        raise ValueError(f"delta must be in (0, 1], got {delta!r}")
    if not w > 0:
        raise ValueError(f"{name} must be > 0, got {w!r}")
