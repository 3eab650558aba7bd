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
* :func:`theta`: Alg. 4 line 12, the cheaper of the two; when there is no schedule it
  says why (:class:`Miss`);
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
   ``0 - cost``). With no job of positive utility, U = L = 1 (flat prices). The paper
   notes that U and L "can usually be estimated empirically based [on] historical data"
   (Sec. IV-B); eq. 14 over past jobs of the same kind is a minimum over more jobs, so it
   is no larger. Two other readings are options of :func:`price_bounds` (never defaults):
   a given ``mu``, and ``bottom="lemma8"``: eq. 14 exists to give Lemma 8's
   ``D_0 = L T sum_h sum_r C_h^r <= OPT / 2`` (Appendix XII), so with a lower bound of OPT
   from past runs, ``L = OPT / (2 T sum_h sum_r C_h^r)`` is the largest L for which the
   proof still holds.
3. **Eq. 12** is evaluated in log space, ``exp((1 - x) ln L + x ln U)`` with
   ``x = rho / C``, so a very small L (a time-critical sigmoid far past its target) does
   not overflow ``(U/L)^x``. A machine without a resource (C = 0) prices it at U.
4. **Alg. 4 line 2 (internal)**: the paper sorts machines by the cost of one PS and its
   gamma workers, ``sum_r p^r (alpha^r gamma + beta^r)``, and takes the first that fits.
   We place ``w = ceil(v c_int)`` workers (eq. 20 with b_int; line 3 writes the PS count
   ``v c_int / gamma``, here ``s = ceil(w / gamma)`` so that ``w <= gamma s`` and the engine's
   eq. 1 with the actual counts trains at least v samples) and rank the machines by the
   cost of these counts, ``w p^w + s p^s`` with ``p^w = sum_r p^r alpha^r`` (and ``p^s``
   alike): the paper's key times s when ``w = gamma s``, and with integer counts the exact
   cost, so the machine returned is the cheapest single machine that fits (ties: the
   lowest index). Eq. 4 (``w <= F``) is checked first, then the free capacity (eq. 18/24).
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
   nobody has allocated, all at price L), the optimum is known without an LP. The LPs are
   solved by HiGHS directly (one solver object reused, presolve off: they are small).
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
   draws (the paper's Sec. V uses 5,000), returning the best feasible draw found.
   Draws are made in batches (one ``rng.random`` call per batch, the rows of the stream
   in order, so the batch sizes change no draw; with a generator of the rounding's own,
   reading 12, the batches are smaller and never longer than the draws still allowed,
   and a draw's cost is summed only when it is feasible). Before any draw,
   whether *some* rounding of x' is feasible is decided exactly (:func:`_any_rounding`:
   each machine rounds its fractional worker and PS entries up or down independently, so
   the most PSs any rounding with j more workers can have is a sum of the best j gains,
   machine by machine); when none is, no draw is made (:attr:`Miss.NO_ROUNDING`, the
   outcome 5,000 failed draws would have had). The paper discards "the corresponding job"
   after 5,000 failures (Sec. V); we discard only that (slot, workload) option, which is
   more generous.
8. **Alg. 4 line 12**: the cheaper of the two cases (ties: internal). The external case is
   skipped (no LP, no draws) when the internal cost is at most a lower bound of any
   external integer schedule, ``ceil(D) min p^w + ceil(ceil(D) / gamma) min p^s`` over the
   machines that fit one worker (PS): the result is the same, only fewer draws are made.
9. **Alg. 3 / eq. 21**: the paper enumerates ``v = 0..V`` samples per slot, intractable for
   V ~ 1e7; we split V into ``granularity`` equal units and let each slot train a whole
   number of units. theta(t, u) is computed for u = 1, 2, ... up to the first u that has no
   schedule for a reason that holds for every larger workload too (:attr:`Miss.MONOTONE`:
   more workers than F or than fit whole, an infeasible LP, and no single machine that
   fits): that is the paper's enumeration, restricted to the grid. A failed rounding does
   *not* end the search: rounding is not monotone in the workload (one unit more can
   spill the LP's point from a nearly full group of machines onto one with slack, and
   then round), so every count below the monotone limit is tried. (``all_counts=False``
   stops at the first failure of any kind, as this module did before; kept for the
   ablation.) The DP runs forward over slots ``[arrival, horizon)``, so
   ``Theta(t~, V)`` for every completion time t~ comes from one sweep.
10. **Alg. 2**: the schedule maximising ``u(t~) - Theta(t~, V)``, the earliest t~ on ties (so
    the schedule's last busy slot is t~). The paper keeps ``lambda = 0, pi = {}`` unless a
    positive payoff is found; :func:`plan` returns the best schedule even if its payoff is
    <= 0, and the caller rejects it (Alg. 1 line 4). None if no schedule fits at all.
    Three shortcuts that change no result: no theta is computed when even F workers at the
    faster rate in every slot up to T cannot train V samples (eq. 13's fastest schedule
    misses the horizon), or when an upper bound of the units each slot's free capacity
    can train falls short of V (:func:`_most_units`); and the sweep stops at the first
    slot whose utility is at most the best payoff found so far (costs are >= 0 and the
    utility does not rise with time, so no later completion can do better). A slot's
    theta row is computed only when the sweep reaches it.
11. **Caching**: theta depends on a slot only through its allocated resources rho[t]
    (prices and free capacity are functions of it), so slots of equal rho (e.g. all the
    slots nobody has allocated yet) share one evaluation, the first slot's.
12. **Deterministic draws**: the rounding of workload v in slot t draws from a generator
    seeded by ``(seed, job key, t, v / V as a reduced fraction)``, so a slot and workload
    round the same way in every call and at every grid, whatever was planned before (a
    shared stream would make one job's plan depend on how many draws earlier jobs made).
13. **Refinement** (``refine = K``): the DP runs on the grids ``g, 2 g, ..., 2^K g``. Each
    contains the schedules of the one before at identical cost (11 and 12), so its best
    payoff is at least as high; the sweep stops at a level that does not improve it.
    A job's planned payoff is thus non-decreasing in K, and in the granularity among
    grids that divide each other. Grids that do not are not ordered (a slot that can
    train at most x V samples holds ``floor(g x)`` units: with x = 0.4, g = 7 gives 2
    units, 28.6 %, and g = 5 gives 2, 40 %).
"""

from __future__ import annotations

import enum
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from gpusched.core import portable
from gpusched.core.helpers import helper
from gpusched.core.portable import dot, per_unit
from gpusched.errors import InvariantError
from gpusched.jobmodels.ps import PSJob, utility

__all__ = [
    "BOTTOMS",
    "Miss",
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
#: The most draws' numbers per batch when the generator is the rounding's own (:class:`_Fresh`)
_BATCH_CELLS = 32768
#: How L is set: eq. 14 (the paper's definition) or Lemma 8's condition (reading 2).
BOTTOMS = ("eq14", "lemma8")


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
    log_u = portable.log(U)
    x = np.ones(np.broadcast_shapes(rho.shape, cap.shape))
    np.divide(rho, cap, out=x, where=np.broadcast_to(cap > 0, x.shape))
    return portable.exp((1.0 - x) * math.log(L) + x * log_u)


def price_bounds(
    jobs: Sequence[PSJob],
    horizon: int,
    capacity: np.ndarray,
    *,
    bottom: str = "eq14",
    mu: float = 0.0,
    opt: float = 0.0,
) -> tuple[np.ndarray, float]:
    """U^r (eq. 13) and L (eq. 14, or Lemma 8's condition) of the price function.

    Parameters
    ----------
    jobs
        The jobs (at least one).
    horizon
        T, slots.
    capacity
        ``(H, R)`` capacities.
    bottom
        ``"eq14"`` (default): L of eq. 14 over ``jobs``; ``"lemma8"``:
        ``L = opt / (2 T sum_h sum_r C_h^r)`` (reading 2 of the module docstring).
    mu
        Eq. 14's mu (> 0), or 0 (default) for the smallest mu its inequality allows
        (``1/mu`` as large as allowed, the largest L). Ignored with ``"lemma8"``.
    opt
        A lower bound of the offline optimum's total utility (e.g. the best total utility
        a past run achieved), > 0; needed by ``"lemma8"``.

    Returns
    -------
    tuple
        ``U`` ``(R,)`` and ``L`` (utility per unit of resource), with ``U >= L > 0``
        (readings 1 and 2 of the module docstring).

    Raises
    ------
    ValueError
        No job, no capacity, an unknown ``bottom``, or ``"lemma8"`` without ``opt > 0``.
    """
    if not jobs:
        raise ValueError("price_bounds needs at least one job")
    if bottom not in BOTTOMS:
        raise ValueError(f"bottom must be one of {', '.join(BOTTOMS)}, got {bottom!r}")
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
    if bottom == "lemma8":
        if not opt > 0 or not math.isfinite(opt):
            raise ValueError(f"bottom 'lemma8' needs opt > 0 (a past run's utility), got {opt!r}")
        L = opt / (2.0 * horizon * total_cap)  # Lemma 8: D_0 = L T sum C <= OPT / 2
    elif not ok.any():
        return np.ones(cap.shape[1]), 1.0
    else:
        if mu > 0:
            inv_mu = 1.0 / mu
        else:  # the largest 1/mu allowed
            inv_mu = float(slots[slots > 0].min()) / (horizon * total_cap)
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


class Miss(enum.Enum):
    """Why theta found no schedule for one slot's workload (readings 7 and 9)."""

    MONOTONE = "monotone"
    """No schedule, and none for any larger workload in the slot: more workers than F
    (eq. 4/25) or than fit whole, an infeasible LP relaxation, and (PD-ORS) no single
    machine that fits the internal case. Each only gets worse as the workload grows."""

    NO_ROUNDING = "no rounding"
    """The LP relaxation is feasible but no rounding of ``x'`` meets eq. 24-26, the ratio
    and one PS (decided exactly, no draw made); a larger workload may round."""

    UNLUCKY = "unlucky"
    """Some rounding of ``x'`` is feasible but ``max_failures`` draws found none (or the LP
    solver stopped without an answer)."""


#: A generator, or a function that makes one when the first draw is needed.
RngSource = np.random.Generator | Callable[[], np.random.Generator]


class _Fresh:
    """Makes the generator of one (slot, workload)'s rounding (reading 12), seeded by
    ``key``; no one else draws from it, so the rounding may draw in batches of any size."""

    __slots__ = ("key",)

    def __init__(self, key: list[int]) -> None:
        self.key = key

    def __call__(self) -> np.random.Generator:
        return np.random.default_rng(self.key)


def _empty(h: int) -> Alloc:
    z = np.zeros(h, dtype=np.int64)
    return 0.0, z, z.copy()


def _unit_bounds(
    job: PSJob, free_t: np.ndarray, split: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Most whole workers and PSs that fit each machine on their own, ``(..., H)`` each for
    ``free_t`` ``(..., H, R)``; with ``split`` (OASiS) workers only where it is True and
    PSs only where it is False."""
    f = np.maximum(free_t, 0.0) + _TOL
    out = []
    for need, cap in ((job.worker, job.batch), (job.ps, math.ceil(job.batch / job.gamma))):
        pos = need > 0
        if pos.any():
            fit = np.floor(f[..., pos] / need[pos]).min(axis=-1)
        else:
            fit = np.full(f.shape[:-1], float(cap))
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


class _Slot:
    """One slot as Alg. 4 sees it for one job: prices and free capacity, with what does not
    depend on the workload computed once (:func:`plan` keeps one per slot group)."""

    def __init__(
        self, job: PSJob, p_t: np.ndarray, free_t: np.ndarray, split: np.ndarray | None
    ) -> None:
        self.job = job
        self.p = np.asarray(p_t, dtype=np.float64)
        self.free = np.asarray(free_t, dtype=np.float64)
        self.split = split
        self.pw = per_unit(self.p, job.worker)  # p^w of eq. 23: one worker's price per machine
        self.ps = per_unit(self.p, job.ps)  # p^s: one PS's
        self.coef = np.concatenate([self.pw, self.ps])
        self.wb, self.sb = _unit_bounds(job, self.free, split)
        self.f = np.maximum(self.free, 0.0)
        fit_w, fit_s = self.wb > 0, self.sb > 0
        self.min_pw = float(self.pw[fit_w].min()) if fit_w.any() else math.inf
        self.min_ps = float(self.ps[fit_s].min()) if fit_s.any() else math.inf
        self.sum_wb, self.sum_sb = float(self.wb.sum()), float(self.sb.sum())
        self.h = int(self.p.shape[0])  # machines
        self._usable: tuple[np.ndarray, int] | None = None
        self._holds: tuple[np.ndarray, np.ndarray] | None = None
        self._groups: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._lp: _GroupLp | None = None
        self._n_max: np.ndarray | None = None
        self._cheapest: tuple[np.ndarray, np.ndarray] | None = None

    def usable(self) -> tuple[np.ndarray, int]:
        """Which groups of :meth:`machine_groups` hold a worker or a PS, and how many."""
        if self._usable is None:
            first = self.machine_groups()[0]
            usable = (self.wb[first] > 0) | (self.sb[first] > 0)
            self._usable = usable, int(np.count_nonzero(usable))
        return self._usable

    def holds(self) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`cheapest`'s share per machine (NaN where none) and its groups' sizes."""
        if self._holds is None:
            cheap, per = self.cheapest()
            self._holds = np.where(per > 0, per, np.nan), self.machine_groups()[2][cheap]
        return self._holds

    def machine_groups(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:func:`_groups` of the machines by (free capacity, p^w, p^s, whole-unit bounds)."""
        if self._groups is None:
            key = np.column_stack([self.f, self.pw, self.ps, self.wb, self.sb])
            self._groups = _groups(key)
        return self._groups

    def n_max(self) -> np.ndarray:
        """``(H,)`` the most workers (with ``ceil(n / gamma)`` PSs) each machine holds alone,
        at most F: eq. 18 is monotone in n, so machine h fits n workers iff n <= n_max[h]."""
        if self._n_max is None:
            self._n_max = _most_workers(self.job, self.free)
        return self._n_max

    def cheapest(self) -> tuple[np.ndarray, np.ndarray]:
        """Groups of equal machines whose worker and PS prices are the lowest of all that
        can take a worker (a PS), and how much of ``D`` one of their machines holds."""
        if self._cheapest is None:
            job = self.job
            first, _, _ = self.machine_groups()
            wb, sb, f = self.wb[first], self.sb[first], self.f[first]
            gw, gs = self.pw[first], self.ps[first]
            host = (wb > 0) & (sb > 0)
            best = host & (gw <= gw[wb > 0].min(initial=np.inf))
            best &= gs <= gs[sb > 0].min(initial=np.inf)
            g = np.flatnonzero(best)
            # one machine holds (D, D / gamma) iff D <= this (the region is down-closed)
            unit = job.worker + job.ps / job.gamma
            pos = unit > 0
            per = np.min(f[g][:, pos] / unit[pos], axis=1) if pos.any() else np.full(len(g), np.inf)
            self._cheapest = g, np.minimum(np.minimum(per, wb[g]), job.gamma * sb[g])
        return self._cheapest

    def group_lp(self) -> _GroupLp:
        """The slot's LP relaxation over groups of equal machines (built once)."""
        if self._lp is None:
            self._lp = _GroupLp(self.job, self)
        return self._lp


def _most_workers(job: PSJob, free_t: np.ndarray) -> np.ndarray:
    """``(H,)`` the largest n <= F with ``n alpha + ceil(n / gamma) beta <= free`` per machine
    (0 if none), by bisection from the bound ``n (alpha + beta / gamma) <= free``."""
    unit = job.worker + job.ps / job.gamma
    pos = unit > 0
    room = free_t + _TOL
    hi = np.full(free_t.shape[0], float(job.batch))
    if pos.any():
        hi = np.minimum(hi, np.floor(np.maximum(room[:, pos], 0.0) / unit[pos]).min(axis=1))
    lo = np.zeros_like(hi)  # fits; hi may not
    while (lo < hi).any():
        mid = np.ceil((lo + hi) / 2.0)
        need = mid[:, None] * job.worker + np.ceil(mid / job.gamma)[:, None] * job.ps
        ok = (need <= room).all(axis=1)
        lo = np.where(ok, mid, lo)
        hi = np.where(ok, hi, mid - 1.0)
    return lo


def _internal(
    job: PSJob, v: np.ndarray, pw: np.ndarray, ps: np.ndarray, n_max: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Alg. 4 lines 2-7 for the workloads ``v`` (m,) at once (reading 4).

    ``n_max`` is :func:`_most_workers` of the slot. Returns ``(cost, machine, n_w, n_s)``,
    each ``(m,)``: the cheapest single machine that fits ``n_w = ceil(v c_int)`` workers
    and ``n_s = ceil(n_w / gamma)`` PSs (-1: none, or ``n_w > F``) and the cost there (inf
    where none).
    """
    n_w = np.ceil(v * job.c_int)  # eq. 20, internal rate
    n_s = np.ceil(n_w / job.gamma)  # w <= gamma s: eq. 1 trains >= v samples
    fits = n_w[:, None] <= n_max[None, :]  # eq. 18 and eq. 4 (n_max <= F), (m, H)
    cost = np.where(fits, n_w[:, None] * pw + n_s[:, None] * ps, np.inf)
    machine = np.argmin(cost, axis=1)  # the lowest index on ties
    best = cost[np.arange(len(v)), machine]
    return best, np.where(np.isfinite(best), machine, -1), n_w, n_s


def _alloc_internal(h: int, machine: int, n_w: float, n_s: float, cost: float) -> Alloc:
    w = np.zeros(h, dtype=np.int64)
    s = np.zeros(h, dtype=np.int64)
    w[machine], s[machine] = int(n_w), int(n_s)
    return float(cost), w, s


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
        ``w > F`` (reading 4 of the module docstring). A failure holds for every larger
        ``v`` too.
    """
    h = p_t.shape[0]
    if v <= 0:
        return _empty(h)
    n_max = _most_workers(job, free_t)
    cost, machine, n_w, n_s = _internal(
        job, np.array([float(v)]), per_unit(p_t, job.worker), per_unit(p_t, job.ps), n_max
    )
    if machine[0] < 0:
        return None
    return _alloc_internal(h, int(machine[0]), n_w[0], n_s[0], cost[0])


class _GroupLp:
    """The LP relaxation of one slot over its groups of equal machines (reading 5).

    By symmetry the LP over machines has an optimum in which equal machines hold equal
    shares, and the group totals ``(W_g, S_g)`` of such an optimum solve the LP over
    groups: ``alpha_r W_g + beta_r S_g <= n_g f_gr`` (eq. 24 summed over the group; rows
    implied by the bounds are left out), ``W_g <= n_g wb_g``, ``S_g <= n_g sb_g``,
    ``D <= sum W <= F`` (eq. 25-26), ``sum W <= gamma sum S`` (the ratio); conversely
    equal shares of any solution are feasible for every machine. The model is built once
    per slot and only the row of D changes between workloads; each solve starts from
    scratch, so its answer depends on the data only.
    """

    def __init__(self, job: PSJob, slot: _Slot) -> None:
        alpha, beta, gamma = job.worker, job.ps, job.gamma
        first, self.inverse, counts = slot.machine_groups()
        wb, sb, f = slot.wb[first], slot.sb[first], slot.f[first]
        self.groups = np.flatnonzero((wb > 0) | (sb > 0))  # groups that hold anything
        g = self.groups
        k = len(g)
        n = counts[g].astype(np.float64)
        self.size = n
        both = np.flatnonzero((alpha > 0) & (beta > 0))
        loose = alpha[both] * wb[g, None] + beta[both] * sb[g, None] <= f[g][:, both] + _TOL
        hh, rr = np.nonzero(~loose)
        n_cap = len(hh)
        i = np.arange(k)
        self.rows = np.concatenate(
            [np.arange(n_cap), np.arange(n_cap), np.full(k, n_cap), np.full(2 * k, n_cap + 1)]
        )
        self.cols = np.concatenate([hh, k + hh, i, i, k + i])
        self.vals = np.concatenate(
            [alpha[both][rr], beta[both][rr], np.ones(k), np.ones(k), np.full(k, -gamma)]
        )
        self.row_lo = np.concatenate([np.full(n_cap, -np.inf), [0.0, -np.inf]])
        self.row_hi = np.concatenate([n[hh] * f[g][:, both][hh, rr], [float(job.batch), 0.0]])
        self.d_row = n_cap
        c = np.concatenate([slot.pw[first][g], slot.ps[first][g]])
        scale = float(c.max()) if c.size and c.max() > 0 else 1.0
        self.cost = c / scale  # the optimum does not change
        self.upper = np.concatenate([n * wb[g], n * sb[g]]).astype(np.float64)

    def solve(self, d: float) -> np.ndarray | Miss:
        """``(W_g, S_g)`` of the groups that hold anything, or why there is none."""
        solver = _highs()
        if getattr(_LOCAL, "model", None) is not self:
            from highspy import _core

            k2, n_row = len(self.cost), len(self.row_lo)
            order = np.argsort(self.cols, kind="stable")  # column-wise storage
            start = np.concatenate([[0], np.cumsum(np.bincount(self.cols, minlength=k2))])
            lp = _core.HighsLp()
            lp.num_col_, lp.num_row_ = k2, n_row
            lp.col_cost_, lp.col_lower_, lp.col_upper_ = self.cost, np.zeros(k2), self.upper
            lp.row_lower_, lp.row_upper_ = self.row_lo, self.row_hi
            lp.a_matrix_.format_ = _core.MatrixFormat.kColwise
            lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = k2, n_row
            lp.a_matrix_.start_ = start.astype(np.int32)
            lp.a_matrix_.index_ = self.rows[order].astype(np.int32)
            lp.a_matrix_.value_ = self.vals[order].astype(np.float64)
            solver.passModel(lp)
            _LOCAL.model = self
        solver.changeRowBounds(self.d_row, d, float(self.row_hi[self.d_row]))
        solver.clearSolver()  # start from scratch: the answer depends on the data only
        solver.run()
        return _status(solver)


def _status(solver: Any) -> np.ndarray | Miss:
    """The solution of a solved HiGHS model, or why there is none."""
    from highspy import _core

    status = solver.getModelStatus()
    if status == _core.HighsModelStatus.kOptimal:
        return np.asarray(solver.getSolution().col_value, dtype=np.float64)
    if status == _core.HighsModelStatus.kInfeasible:
        return Miss.MONOTONE
    return Miss.UNLUCKY


_LOCAL = threading.local()


def _highs() -> Any:
    """This thread's HiGHS solver object (made once, quiet, presolve off: the LPs are small;
    one thread, as every HiGHS solver here: see :mod:`gpusched.algorithms.dorm_milp`)."""
    solver = getattr(_LOCAL, "highs", None)
    if solver is None:
        # the solver class itself (highspy.Highs adds callbacks and prints a banner)
        from highspy import _core

        solver = _core._Highs()
        solver.setOptionValue("output_flag", False)
        solver.setOptionValue("presolve", "off")
        solver.setOptionValue("threads", 1)
        _LOCAL.highs = solver
    return solver


def _lp_external(job: PSJob, d: float, slot: _Slot) -> np.ndarray | Miss:
    """The LP relaxation of eq. 23-26 plus the ratio; ``(2, H)`` optimal ``(w_bar, s_bar)``.

    Over the groups of equal machines (:class:`_GroupLp`), each group's total shared
    equally by its machines (reading 6). When a group that can hold ``(D, D / gamma)`` on
    its own has the lowest worker and PS prices of all, it takes everything (no LP: any
    schedule has ``sum w >= D`` and ``sum s >= D / gamma``, so none is cheaper).
    :attr:`Miss.MONOTONE` if infeasible (then for every larger ``d`` too: only the row
    ``sum w >= D`` depends on it).
    """
    h = slot.h
    first, inverse, counts = slot.machine_groups()
    _, n_usable = slot.usable()
    if not n_usable:
        return Miss.MONOTONE
    # a group no dearer than any that can take a worker (a PS) and that holds it all
    cheap, _ = slot.cheapest()
    per, sizes = slot.holds()
    whole = cheap[np.ceil(d / per) <= sizes]
    if whole.size or n_usable == 1:
        if not whole.size:
            return Miss.MONOTONE  # the only group cannot hold it
        g = int(whole[0])
        on = inverse == g
        x = np.zeros((2, h))
        x[0, on], x[1, on] = d / counts[g], d / job.gamma / counts[g]
        return x
    lp = slot.group_lp()
    got = lp.solve(d)
    if isinstance(got, Miss):
        return got
    k = len(lp.groups)
    share = np.zeros((2, len(first)))
    share[0, lp.groups] = got[:k] / lp.size
    share[1, lp.groups] = got[k:] / lp.size
    return np.asarray(share[:, inverse])


def _fit_table(job: PSJob, base: np.ndarray, free_t: np.ndarray) -> np.ndarray:
    """Eq. 24 per machine at ``floor(x')`` plus each (extra worker, extra PS):
    ``(H, 4)`` bool, column ``2 dw + ds``."""
    h = free_t.shape[0]
    low = base[:h, None] * job.worker + base[h:, None] * job.ps  # (H, R) at the floor
    extra = np.stack([0.0 * job.ps, job.ps, job.worker, job.worker + job.ps])  # (4, R)
    return np.asarray((low[:, None, :] + extra[None] <= free_t[:, None, :] + _TOL).all(axis=2))


def _any_rounding(
    job: PSJob,
    d: float,
    base: np.ndarray,
    up: np.ndarray,
    free_t: np.ndarray,
    fit: np.ndarray | None = None,
) -> bool:
    """Whether some rounding of ``x'`` meets eq. 24-26, the ratio and one PS (reading 7).

    ``base`` ``(2H,)`` is ``floor(x')`` (workers, then PSs) and ``up`` says which entries
    a draw may round up. Machines round independently, and for a given number of workers
    more PSs never hurt (the ratio, one PS); so with ``j`` extra workers the most PSs is
    the PSs each machine adds without an extra worker (one if it fits) plus the ``j``
    largest gains of giving a machine its extra worker (+1 if the worker and a PS fit,
    0 if only the worker, -1 if only the worker and the PS alone would have fit).
    ``fit`` is :func:`_fit_table` (computed if not given). :func:`_round` runs the same
    arithmetic jitted (:func:`_round_setup`); this is its reference.
    """
    h = free_t.shape[0]
    bw, bs = base[:h], base[h:]
    fit = _fit_table(job, base, free_t) if fit is None else fit
    if not fit[:, 0].all():
        return False
    s0 = up[h:] & fit[:, 1]  # one more PS, no extra worker
    w1 = up[:h] & fit[:, 2]  # one more worker
    ws = w1 & up[h:] & fit[:, 3]  # both
    gain = np.sort(ws[w1].astype(np.int64) - s0[w1].astype(np.int64))[::-1]
    extra_s = np.concatenate([[0], np.cumsum(gain)])
    n_w = bw.sum() + np.arange(len(gain) + 1)
    n_s = bs.sum() + s0.sum() + extra_s
    ok = (n_w <= job.batch) & (n_w >= d) & (n_w <= job.gamma * n_s) & (n_s >= 1)
    return bool(ok.any())


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
    rng: RngSource,
    coef: np.ndarray | None = None,
) -> Alloc | Miss:
    """Eq. 27-28 on ``x' = G_delta x_bar``, batch by batch (reading 7); ``coef`` is the
    cost of one worker then one PS on each machine (``p_t`` alpha, ``p_t`` beta)."""
    h = p_t.shape[0]
    if coef is None:
        coef = np.concatenate([per_unit(p_t, job.worker), per_unit(p_t, job.ps)])  # a unit each
    ok, base, idx, thr, cost_up, is_w, base_w, base_s, cw, cs, fit_r = _round_setup(
        np.ascontiguousarray(x_bar, dtype=np.float64).reshape(-1), float(g_delta),
        np.ascontiguousarray(job.worker, dtype=np.float64),
        np.ascontiguousarray(job.ps, dtype=np.float64),
        np.ascontiguousarray(free_t, dtype=np.float64), float(d),
        float(job.batch), float(job.gamma), np.ascontiguousarray(coef, dtype=np.float64),
    )  # fmt: skip
    if not ok:  # no rounding of x' is feasible (exact, :func:`_any_rounding`)
        return Miss.NO_ROUNDING
    gen = rng if isinstance(rng, np.random.Generator) else rng()
    best: tuple[float, np.ndarray] | None = None
    n_ok = n_bad = 0
    # the draws are the stream's rows in order, whatever the batches; when no one draws
    # from gen after us, smaller batches and no more rows than can still be looked at
    fresh = isinstance(rng, _Fresh)
    top = _BATCH_MAX
    if fresh:
        top = min(_BATCH_MAX, max(2 * rounds, _BATCH_CELLS // max(len(thr), 1)))
    batch = min(2 * rounds, top)
    while n_ok < rounds and n_bad < max_failures:
        if fresh:
            batch = min(batch, rounds - n_ok + max_failures - n_bad - 1)
        draws = gen.random((batch, len(thr)))  # entry j rounds up iff its draw < its fraction
        stop, found, row, cost = _draw_pass(
            draws, thr, is_w, base_w, base_s, d, float(job.batch), job.gamma, cw, cs, fit_r,
            cost_up, rounds - n_ok, max_failures - n_bad,
        )  # fmt: skip
        n_ok += found
        n_bad += stop - found
        if row >= 0 and (best is None or cost < best[0]):
            best = (cost, (draws[row] < thr).astype(np.float64))
        batch = min(2 * batch, top)
    if best is None:
        return Miss.UNLUCKY
    x_hat = base.copy()
    x_hat[idx] += best[1]
    counts = x_hat.astype(np.int64)
    return dot(counts, coef), counts[:h], counts[h:]


@helper
def _round_setup(
    x_bar: np.ndarray,
    g_delta: float,
    worker: np.ndarray,
    ps: np.ndarray,
    free_t: np.ndarray,
    d: float,
    batch: float,
    gamma: float,
    coef: np.ndarray,
) -> tuple[
    bool, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, float, float,
    np.ndarray, np.ndarray, np.ndarray,
]:  # fmt: skip
    """What :func:`_round` needs before its draws, ``x_bar`` ``(2H,)`` workers then PSs.

    ``x' = G_delta x_bar`` (entries within 1e-9 of an integer are that integer), its
    floor ``base`` and fractions; whether some rounding is feasible (:func:`_any_rounding`
    on :func:`_fit_table`, the same arithmetic); the entries a draw decides (``idx``),
    their fractions ``thr``, the cost of rounding each up and whether it is a worker;
    the floor's workers and PSs; and, for :func:`_draw_pass`, the machines where a draw
    may overfill (rounding every entry up does not fit): their worker and PS columns
    (``len(idx)``: none) and their :func:`_fit_table` rows.
    """
    h = free_t.shape[0]
    n_r = free_t.shape[1]
    x = g_delta * x_bar
    for i in range(2 * h):
        near = np.rint(x[i])
        if np.abs(x[i] - near) < 1e-9:
            x[i] = near
    base = np.floor(x)
    frac = x - base
    # _fit_table: eq. 24 per machine at the floor plus (extra worker, extra PS)
    fit = np.ones((h, 4), dtype=np.bool_)
    for m in range(h):
        for r in range(n_r):
            low = base[m] * worker[r] + base[h + m] * ps[r]
            room = free_t[m, r] + 1e-9
            if not low + 0.0 <= room:
                fit[m, 0] = False
            if not low + ps[r] <= room:
                fit[m, 1] = False
            if not low + worker[r] <= room:
                fit[m, 2] = False
            if not low + (worker[r] + ps[r]) <= room:
                fit[m, 3] = False
    base_w = 0.0
    base_s = 0.0
    for m in range(h):
        base_w += base[m]
        base_s += base[h + m]
    # _any_rounding: with j extra workers, the most PSs is the PSs added without an extra
    # worker plus the j largest gains of giving a machine its extra worker
    ok = True
    for m in range(h):
        if not fit[m, 0]:
            ok = False
    if ok:
        n_s0 = 0
        n_gain = np.zeros(3, dtype=np.int64)  # gains of -1, 0 and +1
        for m in range(h):
            s0 = frac[h + m] > 0 and fit[m, 1]
            if s0:
                n_s0 += 1
            if frac[m] > 0 and fit[m, 2]:
                ws = frac[h + m] > 0 and fit[m, 3]
                n_gain[(1 if ws else 0) - (1 if s0 else 0) + 1] += 1
        n_g = n_gain[0] + n_gain[1] + n_gain[2]
        ok = False
        extra = 0
        for j in range(n_g + 1):
            if j > 0:  # the j-th largest gain: +1s first, then 0s, then -1s
                extra += 1 if j <= n_gain[2] else (0 if j <= n_gain[2] + n_gain[1] else -1)
            n_w = base_w + j
            n_s = base_s + n_s0 + extra
            if n_w <= batch and n_w >= d and n_w <= gamma * n_s and n_s >= 1:
                ok = True
                break
    k = 0
    for e in range(2 * h):
        if frac[e] > 0:
            k += 1
    idx = np.empty(k, dtype=np.int64)  # the entries a draw decides
    k = 0
    for e in range(2 * h):
        if frac[e] > 0:
            idx[k] = e
            k += 1
    thr = np.empty(k)
    cost_up = np.empty(k)
    is_w = np.empty(k, dtype=np.bool_)
    col = np.full((2, h), k, dtype=np.int64)  # each machine's worker and PS column
    for j in range(k):
        e = idx[j]
        thr[j] = frac[e]
        cost_up[j] = coef[e]
        is_w[j] = e < h
        col[1 if e >= h else 0, e % h] = j
    n_risky = 0
    risky = np.empty(h, dtype=np.int64)
    for m in range(h):
        if not fit[m, 2 * (1 if col[0, m] < k else 0) + (1 if col[1, m] < k else 0)]:
            risky[n_risky] = m
            n_risky += 1
    cw = np.empty(n_risky, dtype=np.int64)
    cs = np.empty(n_risky, dtype=np.int64)
    fit_r = np.empty((n_risky, 4), dtype=np.bool_)
    for i in range(n_risky):
        m = risky[i]
        cw[i] = col[0, m]
        cs[i] = col[1, m]
        for c in range(4):
            fit_r[i, c] = fit[m, c]
    return ok, base, idx, thr, cost_up, is_w, base_w, base_s, cw, cs, fit_r


# compiled at its first call (a few tenths of a second, then cached), not a @helper: as
# plain Python it checks draws ~100x slower, and a first run spent longer in it while
# another process compiled it (100 jobs: 3.1 s CPU against 1.9 s this way)
@njit(cache=True, nogil=True)
def _draw_pass(
    draws: np.ndarray,
    thr: np.ndarray,
    is_w: np.ndarray,
    base_w: float,
    base_s: float,
    d: float,
    batch: float,
    gamma: float,
    cw: np.ndarray,
    cs: np.ndarray,
    fit_r: np.ndarray,
    cost_up: np.ndarray,
    need_ok: int,
    need_bad: int,
) -> tuple[int, int, int, float]:
    """Check the draws (rows of ``draws``) in order: each meets eq. 24-26, the ratio and one
    PS or not; stop at the ``need_ok``-th feasible or the ``need_bad``-th infeasible one.

    Returns (draws looked at, feasible among them, the cheapest feasible draw's row (-1:
    none; the first on ties), its extra cost). ``cw``, ``cs``: the worker and PS column of
    each machine where a draw may overfill (``len(thr)``: none), ``fit_r`` its
    :func:`_fit_table` rows.
    """
    k = thr.shape[0]
    n_ok = 0
    n_bad = 0
    best = -1
    best_cost = np.inf
    for r in range(draws.shape[0]):
        # count first (no branch on the draws: most draws fail), the cost only if feasible
        up = 0
        up_w = 0
        for j in range(k):
            u = 1 if draws[r, j] < thr[j] else 0
            up += u
            up_w += u if is_w[j] else 0
        n_w = base_w + up_w
        n_s = base_s + (up - up_w)
        ok = n_w <= batch and n_w >= d and n_w <= gamma * n_s and n_s >= 1.0  # eq. 25-26
        if ok:
            for m in range(cw.shape[0]):  # eq. 24 where it can bind
                dw = 1 if cw[m] < k and draws[r, cw[m]] < thr[cw[m]] else 0
                ds = 1 if cs[m] < k and draws[r, cs[m]] < thr[cs[m]] else 0
                if not fit_r[m, 2 * dw + ds]:
                    ok = False
                    break
        if ok:
            cost = 0.0
            for j in range(k):
                if draws[r, j] < thr[j]:
                    cost += cost_up[j]
            n_ok += 1
            if cost < best_cost:
                best, best_cost = r, cost
            if n_ok >= need_ok:
                return r + 1, n_ok, best, best_cost
        else:
            n_bad += 1
            if n_bad >= need_bad:
                return r + 1, n_ok, best, best_cost
    return draws.shape[0], n_ok, best, best_cost


def _external(
    slot: _Slot, v: float, *, g_delta: float, rounds: int, max_failures: int, rng: RngSource
) -> Alloc | Miss:
    """Alg. 4 lines 8-11 on a prepared slot (``v > 0``)."""
    job = slot.job
    d = v * job.c_ext  # eq. 26
    n_w = math.ceil(d)
    if n_w > job.batch or slot.sum_wb < n_w or slot.sum_sb < math.ceil(n_w / job.gamma):
        return Miss.MONOTONE  # no integer schedule: eq. 25, or too few whole workers/PSs fit
    x_bar = _lp_external(job, d, slot)
    if isinstance(x_bar, Miss):
        return x_bar
    return _round(
        job,
        d,
        x_bar,
        slot.p,
        slot.free,
        g_delta=g_delta,
        rounds=rounds,
        max_failures=max_failures,
        rng=rng,
        coef=slot.coef,
    )


def theta_external(
    job: PSJob,
    v: float,
    p_t: np.ndarray,
    free_t: np.ndarray,
    *,
    g_delta: float = 1.0,
    rounds: int = 10,
    max_failures: int = 5000,
    rng: RngSource,
    split: np.ndarray | None = None,
) -> Alloc | Miss:
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
        The only source of randomness (or a function that makes it, called at the first
        draw).
    split
        OASiS (Bao et al., INFOCOM 2018, as the PD-ORS paper's Sec. V runs it): bool
        ``(H,)``, workers only on the True machines and PSs only on the others; None lets
        both anywhere (PD-ORS).

    Returns
    -------
    tuple or Miss
        ``(cost, w, s)``, ``w`` and ``s`` ``(H,)`` int64 meeting eq. 24-26 and
        ``sum w <= gamma sum s`` with at least one PS; or why there is none
        (readings 5 to 7 of the module docstring).
    """
    if rounds < 1 or max_failures < 1:
        raise ValueError(f"rounds and max_failures must be >= 1, got {rounds}, {max_failures}")
    if v <= 0:
        return _empty(p_t.shape[0])
    return _external(
        _Slot(job, p_t, free_t, split),
        v,
        g_delta=g_delta,
        rounds=rounds,
        max_failures=max_failures,
        rng=rng,
    )


def _external_floor(slot: _Slot, v: np.ndarray) -> np.ndarray:
    """A lower bound of the cost of any external integer schedule (reading 8), ``(m,)``."""
    n_w = np.ceil(v * slot.job.c_ext)
    n_s = np.maximum(1.0, np.ceil(n_w / slot.job.gamma))
    if math.isinf(slot.min_pw) or math.isinf(slot.min_ps):
        return np.full(len(v), np.inf)
    return np.asarray(n_w * slot.min_pw + n_s * slot.min_ps)


def _theta(
    slot: _Slot,
    v: float,
    inner: Alloc | None,
    floor: float,
    *,
    g_delta: float,
    rounds: int,
    max_failures: int,
    rng: RngSource,
) -> Alloc | Miss:
    """Alg. 4 line 12 with the internal case (or None) and the external floor given."""
    if inner is not None and inner[0] <= floor:
        return inner
    outer = _external(slot, v, g_delta=g_delta, rounds=rounds, max_failures=max_failures, rng=rng)
    if isinstance(outer, Miss):
        # the internal case's failure holds for every larger v: the external one decides
        return inner if inner is not None else outer
    if inner is not None and inner[0] <= outer[0]:
        return inner
    return outer


def theta(
    job: PSJob,
    v: float,
    p_t: np.ndarray,
    free_t: np.ndarray,
    *,
    g_delta: float = 1.0,
    rounds: int = 10,
    max_failures: int = 5000,
    rng: RngSource,
    split: np.ndarray | None = None,
) -> Alloc | Miss:
    """Alg. 4 line 12: theta(t, v), the cheaper of :func:`theta_internal` and
    :func:`theta_external` (ties: internal; reading 8 of the module docstring).

    Parameters are those of :func:`theta_external`; returns ``(cost, w, s)`` or the
    :class:`Miss` that says why there is no schedule. With ``split`` (OASiS) no machine
    holds both roles, so there is no internal case.
    """
    if rounds < 1 or max_failures < 1:
        raise ValueError(f"rounds and max_failures must be >= 1, got {rounds}, {max_failures}")
    h = p_t.shape[0]
    if v <= 0:
        return _empty(h)
    slot = _Slot(job, p_t, free_t, split)
    vv = np.array([float(v)])
    inner = None
    if split is None:
        cost, machine, n_w, n_s = _internal(job, vv, slot.pw, slot.ps, slot.n_max())
        if machine[0] >= 0:
            inner = _alloc_internal(h, int(machine[0]), n_w[0], n_s[0], cost[0])
    return _theta(
        slot,
        float(v),
        inner,
        float(_external_floor(slot, vv)[0]),
        g_delta=g_delta,
        rounds=rounds,
        max_failures=max_failures,
        rng=rng,
    )


# --------------------------------------------------------------------------- the DP


class _Rows:
    """theta per slot group and workload on the finest grid, computed when first needed.

    ``cost[k]`` is group k's row over ``0..fine`` units of ``V / fine`` (NaN: not computed
    yet, inf: no schedule); ``limit[k]`` the smallest count known to have none for every
    larger count too (reading 9); ``alloc`` the schedules found.
    """

    def __init__(
        self,
        job: PSJob,
        p: np.ndarray,
        free: np.ndarray,
        first_slot: np.ndarray,
        fine: int,
        *,
        split: np.ndarray | None,
        g_delta: float,
        rounds: int,
        max_failures: int,
        seed: Sequence[int],
        all_counts: bool,
        shared: np.random.Generator | None,
    ) -> None:
        self.job, self.p, self.free, self.first_slot = job, p, free, first_slot
        self.fine, self.split = fine, split
        self.g_delta, self.rounds, self.max_failures = g_delta, rounds, max_failures
        self.seed, self.all_counts, self.shared = list(seed), all_counts, shared

        def same() -> np.random.Generator:  # the one shared stream, as an RngSource
            assert shared is not None
            return shared

        self._shared = same
        self.cost: dict[int, np.ndarray] = {}
        self.limit: dict[int, int] = {}
        self.slots: dict[int, _Slot] = {}
        self.alloc: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}

    def row(self, k: int, g: int) -> np.ndarray:
        """Group k's costs for ``0..g`` units of ``V / g`` (``g`` divides ``fine``)."""
        step = self.fine // g
        idx = np.arange(g + 1) * step
        cost = self.cost.get(k)
        if cost is None:
            cost = self.cost[k] = np.full(self.fine + 1, np.nan)
            cost[0] = 0.0
        todo = idx[np.isnan(cost[idx]) & (idx < self.limit.get(k, self.fine + 1))]
        if todo.size:
            self._compute(k, todo)
        out = cost[idx].copy()
        out[idx >= self.limit.get(k, self.fine + 1)] = np.inf
        return out

    def _compute(self, k: int, units: np.ndarray) -> None:
        """theta for ``units`` (ascending) of group k, up to the first monotone miss."""
        job, cost = self.job, self.cost[k]
        slot = self.slots.get(k)
        t = int(self.first_slot[k])  # index into the job's slots
        if slot is None:
            slot = self.slots[k] = _Slot(job, self.p[t], self.free[t], self.split)
        common = np.gcd(units, self.fine)
        num, den = units // common, self.fine // common
        v = job.work * num / den  # the same number at every grid that holds it (reading 13)
        inner_cost = np.full(len(units), np.inf)
        machine = np.full(len(units), -1)
        n_w = n_s = inner_cost
        if self.split is None:
            inner_cost, machine, n_w, n_s = _internal(job, v, slot.pw, slot.ps, slot.n_max())
        floor = _external_floor(slot, v)
        for i, u in enumerate(units.tolist()):
            inner = None
            if machine[i] >= 0:
                inner = _alloc_internal(slot.h, int(machine[i]), n_w[i], n_s[i], inner_cost[i])
            rng: RngSource
            if self.shared is not None:
                rng = self._shared  # one stream in call order (the former draws)
            else:  # reading 12
                rng = _Fresh([*self.seed, self.job.arrival + t, int(num[i]), int(den[i])])
            got = _theta(
                slot,
                float(v[i]),
                inner,
                float(floor[i]),
                g_delta=self.g_delta,
                rounds=self.rounds,
                max_failures=self.max_failures,
                rng=rng,
            )
            if isinstance(got, Miss):
                cost[u] = np.inf
                if got is Miss.MONOTONE or not self.all_counts:
                    self.limit[k] = u  # every larger count has no schedule either
                    return
                continue
            cost[u] = got[0]
            self.alloc[k, u] = (got[1], got[2])


def _most_units(
    job: PSJob, free: np.ndarray, wb: np.ndarray, g: int, split: np.ndarray | None
) -> np.ndarray:
    """An upper bound of the units of ``V / g`` samples each slot can train, ``(n,)``.

    ``free`` is ``(n, H, R)`` and ``wb`` its whole workers per machine ``(n, H)``
    (:func:`_unit_bounds`). Internal: ``n_w (alpha + beta / gamma) <= f`` on one machine
    (``ceil(n_w / gamma) >= n_w / gamma`` PSs), at the internal rate; external: at most the
    whole workers that fit the machines one by one, at the external rate; both at most F.
    """
    workers = np.minimum(wb.sum(axis=1), job.batch) / job.c_ext
    if split is None:
        unit = job.worker + job.ps / job.gamma
        pos = unit > 0
        per = np.floor(np.maximum(free[..., pos], 0.0) / unit[pos] + _TOL).min(axis=2)  # (n, H)
        inner = np.minimum(per.max(axis=1), job.batch) / job.c_int
        workers = np.maximum(workers, inner)
    return np.asarray(np.floor(workers * g / job.work * (1.0 + 1e-9) + _TOL))


def _sweep(
    util: np.ndarray, inverse: np.ndarray, rows: _Rows, g: int, least: float | None
) -> tuple[int, float, list[np.ndarray]] | None:
    """Eq. 21 forward over the slots on the grid of ``g`` units, and Alg. 2's choice.

    ``before[k]`` is the least cost of training k units by the end of the previous slot;
    slot i adds ``min_u theta(t_i, u) + before[k - u]`` (ties: the fewest units in slot
    i). Returns (the best completion's slot index, its payoff, the units chosen per slot
    and count), or None when no completion trains g units. Stops once a slot's utility
    is at most the best payoff found (reading 10), and, when ``least`` (a lower bound of
    any schedule's cost) is given, once no later completion can have a positive payoff.
    """
    before = np.full(g + 1, np.inf)
    before[0] = 0.0
    count = np.arange(g + 1)
    choices: list[np.ndarray] = []
    best_i, best_pay = -1, -np.inf
    for i in range(len(inverse)):
        if best_i >= 0 and util[i] <= best_pay:
            break
        if least is not None and util[i] - least <= max(best_pay, 0.0):
            break
        row = rows.row(int(inverse[i]), g)
        units = np.flatnonzero(row < np.inf)  # includes 0
        src = count[:, None] - units[None, :]
        cand = np.where(src >= 0, before[np.maximum(src, 0)] + row[units], np.inf)
        j = np.argmin(cand, axis=1)
        before = cand[count, j]
        choices.append(units[j])
        if before[g] < np.inf:
            pay = float(util[i] - before[g])
            if pay > best_pay:
                best_i, best_pay = i, pay
    if best_i < 0:
        return None
    return best_i, best_pay, choices


def plan(
    job: PSJob,
    prices: Prices,
    *,
    horizon: int,
    granularity: int = 10,
    refine: int = 0,
    g_delta: float = 1.0,
    rounds: int = 10,
    max_failures: int = 5000,
    seed: int | Sequence[int] = 0,
    split: np.ndarray | None = None,
    all_counts: bool = True,
    positive: bool = False,
    shared: np.random.Generator | None = None,
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
    refine
        Also plan on the grids ``2 g, 4 g, ..., 2^refine g`` and keep the best (reading 13).
    g_delta, rounds, max_failures, split
        As in :func:`theta_external` (``split``: OASiS's disjoint worker and PS machines).
    seed
        Seeds the rounding draws, with the slot and the workload (reading 12); give the job
        a key of its own (e.g. ``(policy seed, job index)``).
    shared
        Draw every rounding from this one generator instead, in the order theta is
        computed (the former draws: a plan then depends on the draws made before it; for
        the ablation).
    all_counts
        Try every unit count below the monotone limit (reading 9); False stops at the
        first count without a schedule (the former search, for the ablation).
    positive
        Only a schedule of positive payoff matters (Alg. 1 admits no other): the sweep
        also stops where no later completion can pay more than a lower bound of any
        schedule's cost, ``V c (min p^w + min p^s / gamma)`` with the faster rate c and
        the lowest prices of a worker and a PS over the slots, so None may also mean
        that no schedule has a positive payoff.

    Returns
    -------
    Schedule or None
        The schedule of largest payoff (possibly <= 0: the caller decides, Alg. 1 line 4);
        None if no schedule trains V samples by the horizon.
    """
    if granularity < 1:
        raise ValueError(f"granularity must be >= 1, got {granularity}")
    if refine < 0:
        raise ValueError(f"refine must be >= 0, got {refine}")
    n_t, n_h = prices.rho.shape[:2]
    slots = np.arange(job.arrival, min(horizon, n_t))
    if slots.size == 0:
        return None
    # eq. 13's fastest schedule: F workers in every slot at the faster rate (reading 10)
    c_fast = job.c_ext if split is not None else min(job.c_int, job.c_ext)
    if job.work * c_fast > job.batch * len(slots) * (1.0 + 1e-9):
        return None
    free_all = prices.capacity - prices.rho[slots]
    # slots of equal rho share theta (reading 11), evaluated at the first of them
    first, inverse, counts = _groups(prices.rho[slots].reshape(len(slots), -1))
    fine = granularity * 2**refine
    wb, sb = _unit_bounds(job, free_all[first], split)  # (groups, H)
    if dot(_most_units(job, free_all[first], wb, fine, split), counts) < fine:
        return None  # the free capacity cannot hold V samples by the horizon (reading 10)
    p_all = prices.prices()[slots]
    least = None
    if positive:
        p_first = p_all[first]
        pw = np.where(wb > 0, per_unit(p_first, job.worker), np.inf).min()
        ps = np.where(sb > 0, per_unit(p_first, job.ps), np.inf).min()
        least = float(job.work * c_fast * (pw + ps / job.gamma))
    key = [int(seed)] if isinstance(seed, int | np.integer) else [int(s) for s in seed]
    rows = _Rows(
        job,
        p_all,
        free_all,
        first,
        fine,
        split=split,
        g_delta=g_delta,
        rounds=rounds,
        max_failures=max_failures,
        seed=key,
        all_counts=all_counts,
        shared=shared,
    )
    util = np.asarray(job.utility(slots), dtype=np.float64)
    best: tuple[int, int, float, list[np.ndarray]] | None = None
    for level in range(refine + 1):
        g = granularity * 2**level
        got = _sweep(util, inverse, rows, g, least)
        if got is None:
            continue
        if best is not None and got[1] <= best[2]:
            break  # a finer grid that does not improve: stop refining (reading 13)
        best = (g, got[0], got[1], got[2])
    if best is None:
        return None
    g, last, _, choices = best
    step = fine // g

    workers = np.zeros((n_t, n_h), dtype=np.int64)
    ps = np.zeros((n_t, n_h), dtype=np.int64)
    left = g
    for i in range(last, -1, -1):
        u = int(choices[i][left])
        if u:
            workers[slots[i]], ps[slots[i]] = rows.alloc[int(inverse[i]), u * step]
            left -= u
    busy = np.flatnonzero(workers.sum(axis=1) > 0)
    completion = int(busy[-1])
    w_on, s_on = workers[slots], ps[slots]
    total = float(np.einsum("th,thr,r->", w_on, p_all, job.worker))
    total += float(np.einsum("th,thr,r->", s_on, p_all, job.ps))
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
