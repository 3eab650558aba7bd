"""The offline optimum of problem DMLRS (parameter-server jobs) as a mixed-integer program.

Yu, Liu, Wu, Ji, Bentley, "Toward Efficient Online Scheduling for Distributed Machine
Learning Systems", IEEE TNSE 2022, Section III, eq. (1)-(7) (problem DMLRS), solved exactly
with ``scipy.optimize.milp`` (HiGHS) for the small instances of Sec. V's competitive-ratio
experiment (Fig. 10: I = 10 jobs, T = 10 slots). Jobs are :class:`~gpusched.jobmodels.ps.PSJob`
(slots; ``c_int``/``c_ext`` worker-slots per sample at the ratio, eq. 3's denominator).

Variables, for each job i and each slot t in ``[a_i, T)`` only (eq. 7 by construction), on
each machine h:

* ``w_ith``, ``s_ith``: integer workers and parameter servers (PSs);
* ``y_ith``: binary, 1 if slot t runs in *internal* mode on machine h; ``z_it = sum_h y_ith``
  (binary) picks the mode: internal (``z = 1``: every worker and PS of the slot on the one
  machine with ``y = 1``, each worker trains ``1 / c_int`` samples) or external (``z = 0``:
  any machines, ``1 / c_ext`` samples per worker);
* ``q_it``: continuous, the workers of the slot that train at the internal rate
  (``q = W`` in internal mode, 0 in external), with ``W_it = sum_h w_ith``, ``S_it = sum_h s_ith``;
* ``e_it``: binary, 1 if t is the job's completion slot (its last slot with workers, eq. 6);
  ``x_i = sum_t e_it <= 1`` is the paper's binary admission ``x_i``.

Objective: maximise ``sum_i sum_t e_it u_i(t)``, ``u_i(t) = job.utility(t)`` (the paper's
``x_i u_i(t~_i - a_i)``; no monotonicity of u is assumed, the completion is explicit).

Constraints, each a linear row:

* eq. 3 (work), in worker-slots at the internal rate (samples x ``c_int``; coefficients of
  order 1 keep HiGHS's absolute tolerances meaningful, where samples reach 1e8):
  ``sum_t (rho W_it + (1 - rho) q_it) >= V_i c_int sum_t e_it`` with ``rho = c_int / c_ext``;
* Fact 1 makes eq. 3's min over links exactly the mode: internal iff every worker and PS
  sits on one machine. Internal placement (big-M ``M^w_ih``, ``M^s_ih``, the variables'
  own upper bounds): ``w_ith <= M^w_ih (1 + y_ith - z_it)``, likewise ``s_ith``, so with
  ``z = 1`` nothing sits off the chosen machine; ``q_it <= W_it`` and ``q_it <= Q_i z_it``
  (big-M ``Q_i = min(F_i, max_h M^w_ih)``, the most workers one machine holds);
* the external mode on a single machine is only pessimistic: such an allocation really
  trains at the internal rate (Fact 1), which the model counts only when it picks
  ``z = 1`` on that machine, a choice with the same allocation and more samples
  (``c_int <= c_ext`` is required). So the optimum never needs it, and every schedule the
  model accepts trains at least what it counts;
* eq. 2 as the online algorithms plan it: ``W_it <= gamma_i S_it`` (enough PSs) and
  ``S_it <= W_it / gamma_i + 1 - delta_i`` (no more PSs than ``ceil(W / gamma)``, and none
  in a slot without workers; ``delta_i`` is half the smallest positive fractional part of
  ``W / gamma`` over the possible W, so no needed PS is cut). Samples are counted at the
  ratio's rate ``W / c``; with ``W < gamma S`` eq. 1's true rate is higher, so this is
  pessimistic too. Eq. 2 read as an equality would force W to multiples of gamma: the
  model's feasible set contains every such schedule, so its optimum is at least theirs;
* eq. 4 and "workers only in ``a_i <= t <=`` the completion slot" in one row (big-M
  ``W^max_i = min(F_i, sum_h M^w_ih)``, eq. 4's F_i or all the machines hold):
  ``W_it <= W^max_i sum_{t' >= t} e_it'``; eq. 6 (the completion slot is active):
  ``W_it >= e_it``;
* eq. 3 again for every candidate completion slot t, over slots ``a_i .. t`` only:
  ``sum_{t' <= t} (rho W + (1 - rho) q) >= V_i c_int sum_{t' <= t} e_it'``. Integer
  solutions satisfy it anyway (no worker runs after the completion); it only tightens the
  LP relaxation;
* eq. 5: ``sum_i (alpha_i^r w_ith + beta_i^r s_ith) <= C_h^r`` per (slot, machine, resource).

Bounds: ``M^w_ih = min(F_i, floor(C_h^r / alpha_i^r) over r)``, ``M^s_ih = min(ceil(F_i /
gamma_i), floor(C_h^r / beta_i^r) over r)``; ``y_ith`` is fixed to 0 where not one worker
and one PS fit on h. A job completes no earlier than slot ``a_i + ceil(V_i c_int / P_i) - 1``
with ``P_i = max(Q_i, rho W^max_i)`` (the most worker-slots at the internal rate one slot
gives, internal or external), so ``e_it`` exists only from there; a job that cannot finish by
slot ``T - 1`` gets no variables at all. A completion whose utility is at most ``1e-9`` of the
instance's largest (a time-critical job's sigmoid long after its target, ~1e-15) is not
offered: it would add nothing measurable and such costs slow HiGHS down; the optimum loses
at most ``I`` times that.

HiGHS stops at a relative gap of :data:`MIP_REL_GAP`; "optimal" means within that gap of the
dual bound, which :attr:`Offline.bound` reports. A run stopped by ``time_limit`` returns the
best schedule found (the empty schedule, always feasible, when none was) and the bound; it
depends on the machine's speed, unlike an optimal result, which is deterministic. Heavily
loaded instances (jobs that need most of the cluster for several slots) can stay far from
proven within a minute, and HiGHS's incumbent can then be poor: compare against
:attr:`Offline.bound`, an upper bound on the optimum, when the status is ``"time limit"``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gpusched.algorithms.sparse_milp import SparseMILP
from gpusched.jobmodels.ps import PSJob

__all__ = ["MIP_REL_GAP", "Offline", "solve_offline"]

#: HiGHS's relative optimality gap (its default is 1e-4).
MIP_REL_GAP = 1e-6
#: Relative slack on counts derived from floats (C / alpha, V c / F).
_EPS = 1e-9


@dataclass(frozen=True)
class Offline:
    """The offline optimum of DMLRS (or the best schedule found within the time limit).

    Attributes
    ----------
    utility
        Total utility ``sum_i u_i(completion_i)`` over admitted jobs.
    completion
        ``(I,)`` int64 completion slot (last slot with workers), -1 for a job not admitted.
    workers, ps
        ``(I, T, H)`` int64 workers and parameter servers per job, slot and machine.
    status
        ``"optimal"`` or ``"time limit"`` (then ``utility`` is the incumbent's).
    bound
        The solver's dual bound on the optimal utility (>= ``utility``).
    """

    utility: float
    completion: np.ndarray
    workers: np.ndarray
    ps: np.ndarray
    status: str
    bound: float


@dataclass(frozen=True)
class _JobVars:
    """Column indices of one job's variables: rows are slots ``first .. T-1``."""

    first: int  # a_i, the slot of row 0
    t_min: int  # earliest completion slot; e covers t_min .. T-1
    m_w: np.ndarray  # (H,) most workers per machine (the big-M of w)
    m_s: np.ndarray  # (H,) most PSs per machine (the big-M of s)
    w_max: int  # most workers in a slot: min(F, sum_h m_w) (big-M of the active row)
    q_max: int  # most workers in a slot in internal mode: min(F, max_h m_w)
    w: np.ndarray  # (n_t, H)
    s: np.ndarray  # (n_t, H)
    y: np.ndarray  # (n_t, H)
    z: np.ndarray  # (n_t,)
    q: np.ndarray  # (n_t,)
    e: np.ndarray  # (T - t_min,)


def _fits(demand: np.ndarray, capacity: np.ndarray, cap: int) -> np.ndarray:
    """``(H,)`` most units of ``demand`` each machine holds alone, at most ``cap``."""
    pos = demand > 0
    if not pos.any():
        return np.full(capacity.shape[0], cap, dtype=np.int64)
    n = np.floor(capacity[:, pos] / demand[pos] * (1.0 + _EPS)).min(axis=1)
    out: np.ndarray = np.minimum(n, cap).astype(np.int64)
    return out


def _delta(gamma: float, w_max: int) -> float:
    """Half the smallest positive fractional part of ``W / gamma``, ``W = 1..w_max`` (0.5 if
    none)."""
    ratio = np.arange(1, w_max + 1) / gamma
    frac = ratio - np.floor(ratio)
    pos = frac[frac > _EPS]
    return 0.5 * float(pos.min()) if pos.size else 0.5


def _check(jobs: Sequence[PSJob], capacity: np.ndarray, horizon: int, time_limit: float) -> None:
    """Raise ValueError on the first bad argument."""
    if capacity.ndim != 2 or capacity.shape[0] < 1 or capacity.shape[1] < 1:
        raise ValueError(
            f"solve_offline: capacity must be an (H, R) array with H, R >= 1, got shape "
            f"{capacity.shape}"
        )
    if not (np.isfinite(capacity).all() and (capacity >= 0).all()):
        raise ValueError("solve_offline: capacity must be finite and >= 0")
    if isinstance(horizon, bool) or not isinstance(horizon, int | np.integer) or horizon < 1:
        raise ValueError(f"solve_offline: horizon must be an integer >= 1 (slots), got {horizon!r}")
    if (
        isinstance(time_limit, bool)
        or not isinstance(time_limit, int | float)
        or not (math.isfinite(time_limit) and time_limit > 0)
    ):
        raise ValueError(f"solve_offline: time_limit must be seconds > 0, got {time_limit!r}")
    n_r = capacity.shape[1]
    for i, job in enumerate(jobs):
        where = f"solve_offline: job {i}"
        if not isinstance(job, PSJob):
            raise ValueError(f"{where}: expected a PSJob, got {type(job).__name__}")
        if not isinstance(job.arrival, int | np.integer) or job.arrival < 0:
            raise ValueError(f"{where}: arrival must be an integer slot >= 0, got {job.arrival!r}")
        for name in ("work", "c_int", "c_ext", "gamma"):
            v = getattr(job, name)
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"{where}: {name} must be finite and > 0, got {v!r}")
        if job.c_ext < job.c_int:
            raise ValueError(
                f"{where}: c_ext ({job.c_ext!r}) is below c_int ({job.c_int!r}); the model "
                "needs the external link no faster than the internal one (b_ext <= b_int)"
            )
        if not isinstance(job.batch, int | np.integer) or job.batch < 1:
            raise ValueError(f"{where}: batch must be an integer >= 1, got {job.batch!r}")
        for name in ("worker", "ps"):
            d = np.asarray(getattr(job, name), dtype=np.float64)
            if d.shape != (n_r,) or not (np.isfinite(d).all() and (d >= 0).all()):
                raise ValueError(
                    f"{where}: {name} must be {n_r} finite demands >= 0 (one per capacity "
                    f"column), got {getattr(job, name)!r}"
                )
        theta = np.asarray(job.theta, dtype=np.float64)
        if theta.shape != (3,) or not np.isfinite(theta).all():
            raise ValueError(f"{where}: theta must be 3 finite numbers, got {job.theta!r}")


def _job_columns(
    model: SparseMILP, job: PSJob, capacity: np.ndarray, horizon: int, u_floor: float
) -> _JobVars | None:
    """One job's columns, or None if it cannot finish by slot ``horizon - 1`` with a
    utility above ``u_floor``."""
    n_t, n_h = horizon - job.arrival, capacity.shape[0]
    worker = np.asarray(job.worker, dtype=np.float64)
    ps = np.asarray(job.ps, dtype=np.float64)
    m_w = _fits(worker, capacity, job.batch)
    m_s = _fits(ps, capacity, math.ceil(job.batch / job.gamma * (1.0 - _EPS)))
    # internal on h needs one worker and one PS there at least
    y_ok = (worker + ps <= capacity * (1.0 + _EPS)).all(axis=1) & (m_w >= 1) & (m_s >= 1)
    w_max = min(job.batch, int(m_w.sum()))
    q_max = min(job.batch, int(m_w[y_ok].max(initial=0)))
    # most worker-slots (at the internal rate) one slot can give: F workers at most (eq. 4),
    # internal on the roomiest machine or external (at rho) over all of them
    per_slot = max(q_max, job.c_int / job.c_ext * w_max)
    if per_slot <= 0 or n_t <= 0:
        return None
    slots = max(1, math.ceil(job.work * job.c_int / per_slot * (1.0 - _EPS)))
    t_min = job.arrival + slots - 1
    if t_min >= horizon:  # cannot finish by the last slot: never admitted
        return None
    u = np.asarray(job.utility(np.arange(t_min, horizon)), dtype=np.float64)
    if not (u > u_floor).any():  # no completion worth admitting the job for
        return None
    v = _JobVars(
        first=job.arrival,
        t_min=t_min,
        m_w=m_w,
        m_s=m_s,
        w_max=w_max,
        q_max=q_max,
        w=model.columns((n_t, n_h), m_w),
        s=model.columns((n_t, n_h), m_s),
        y=model.columns((n_t, n_h), y_ok.astype(np.float64)),
        z=model.columns((n_t,), 1.0),
        q=model.columns((n_t,), float(q_max), integer=False),
        e=model.columns((horizon - t_min,), (u > u_floor).astype(np.float64)),
    )
    for k in range(u.size):  # maximise sum e u: minimise -u e
        model.cost[int(v.e[k])] = -float(u[k]) if u[k] > u_floor else 0.0
    return v


def _job_rows(model: SparseMILP, job: PSJob, v: _JobVars) -> None:
    """Every row of one job: all but eq. 5, which couples the jobs."""
    w_max, q_max = float(v.w_max), float(v.q_max)
    rho = job.c_int / job.c_ext
    delta = _delta(job.gamma, v.w_max)
    e_row = v.t_min - v.first  # row (slot - a_i) of the earliest completion slot
    model.row([(v.e, 1.0)], -np.inf, 1.0)  # x_i = sum_t e_it <= 1
    # eq. 3 in worker-slots at the internal rate: sum_t rho W + (1 - rho) q >= V c_int x
    model.row([(v.w, rho), (v.q, 1.0 - rho), (v.e, -job.work * job.c_int)], 0.0, np.inf)
    # the same by every candidate completion slot t: the work of slots a_i..t covers V if
    # the job completes by t (implied for integers, as no worker runs after the
    # completion, but it tightens the LP relaxation)
    for k in range(e_row, v.w.shape[0] - 1):
        done = v.e[: k - e_row + 1]
        model.row(
            [(v.w[: k + 1], rho), (v.q[: k + 1], 1.0 - rho), (done, -job.work * job.c_int)],
            0.0,
            np.inf,
        )
    for k in range(v.w.shape[0]):
        w, s, z = v.w[k], v.s[k], int(v.z[k])
        # eq. 4, and no workers after the completion: W <= min(F, sum_h M^w_h) sum_{t'>=t} e
        model.row([(w, 1.0), (v.e[max(0, k - e_row) :], -w_max)], -np.inf, 0.0)
        if k >= e_row:  # eq. 6: the completion slot has a worker, e <= W
            model.row([(v.e[k - e_row], 1.0), (w, -1.0)], -np.inf, 0.0)
        # eq. 2 as planned: W <= gamma S <= W + gamma (1 - delta)
        model.row([(w, 1.0), (s, -job.gamma)], -np.inf, 0.0)
        model.row([(s, job.gamma), (w, -1.0)], -np.inf, job.gamma * (1.0 - delta))
        model.row([(z, 1.0), (v.y[k], -1.0)], 0.0, 0.0)  # z = sum_h y: the mode
        for h in range(w.shape[0]):  # internal: nothing off the chosen machine
            for col, big in ((w[h], float(v.m_w[h])), (s[h], float(v.m_s[h]))):
                # x_ith <= M (1 + y_ith - z_it)
                model.row([(col, 1.0), (v.y[k, h], -big), (z, big)], -np.inf, big)
        model.row([(v.q[k], 1.0), (w, -1.0)], -np.inf, 0.0)  # q <= W
        model.row([(v.q[k], 1.0), (z, -q_max)], -np.inf, 0.0)  # q <= min(F, max_h M^w_h) z


def _capacity_rows(
    model: SparseMILP, jobs: Sequence[PSJob], cols: list[_JobVars | None], capacity: np.ndarray
) -> None:
    """Eq. 5: ``sum_i alpha_i^r w_ith + beta_i^r s_ith <= C_h^r`` per slot, machine, resource."""
    horizon = max((v.first + v.w.shape[0] for v in cols if v is not None), default=0)
    n_h, n_r = capacity.shape
    for t in range(horizon):
        for h in range(n_h):
            for r in range(n_r):
                terms: list[tuple[np.ndarray | int, float]] = []
                for job, v in zip(jobs, cols, strict=True):
                    if v is None or t < v.first:
                        continue
                    for col, d in (
                        (v.w[t - v.first, h], job.worker[r]),
                        (v.s[t - v.first, h], job.ps[r]),
                    ):
                        if d > 0:
                            terms.append((int(col), float(d)))
                model.row(terms, -np.inf, float(capacity[h, r]))


def solve_offline(
    jobs: Sequence[PSJob], capacity: np.ndarray, horizon: int, *, time_limit: float = 60.0
) -> Offline:
    """Solve DMLRS exactly: the schedule of ``jobs`` with the highest total utility.

    Parameters
    ----------
    jobs
        The jobs, all known in advance (offline); arrivals are slots.
    capacity
        ``(H, R)`` capacity of each machine per resource, in the units of the jobs'
        ``worker`` and ``ps`` demands.
    horizon
        T, slots; jobs run in slots ``0 .. T-1`` and a job must finish by slot ``T - 1``.
    time_limit
        HiGHS time limit, seconds (wall clock).

    Returns
    -------
    Offline
        The optimum (``status == "optimal"``) or the best schedule found in the time limit.

    Raises
    ------
    ValueError
        A bad argument: the message names it (and the job) and what was expected.
    """
    capacity = np.asarray(capacity, dtype=np.float64)
    _check(jobs, capacity, horizon, time_limit)
    horizon = int(horizon)
    n_i, n_h = len(jobs), capacity.shape[0]
    model = SparseMILP()
    # a completion worth no more than u_floor is dropped (at most I u_floor lost in total)
    top = [
        float(np.max(j.utility(np.arange(j.arrival, horizon)))) for j in jobs if j.arrival < horizon
    ]
    u_floor = _EPS * max(top + [0.0])
    cols = [_job_columns(model, job, capacity, horizon, u_floor) for job in jobs]
    for job, v in zip(jobs, cols, strict=True):
        if v is not None:
            _job_rows(model, job, v)
    _capacity_rows(model, jobs, cols, capacity)

    completion = np.full(n_i, -1, dtype=np.int64)
    workers = np.zeros((n_i, horizon, n_h), dtype=np.int64)
    ps = np.zeros((n_i, horizon, n_h), dtype=np.int64)
    # no job can finish: the empty schedule is the optimum
    best = [max((-model.cost[int(c)] for c in v.e), default=0.0) for v in cols if v is not None]
    if not best:
        return Offline(0.0, completion, workers, ps, "optimal", 0.0)

    res = model.solve(time_limit, MIP_REL_GAP)
    if res.status not in (0, 1):  # the empty schedule is feasible: never infeasible
        raise RuntimeError(f"solve_offline: HiGHS failed ({res.message})")
    if res.x is not None:
        x = np.rint(res.x).astype(np.int64)
        for i, v in enumerate(cols):
            if v is None:
                continue
            workers[i, v.first :] = x[v.w]
            ps[i, v.first :] = x[v.s]
            done = np.flatnonzero(x[v.e] == 1)
            if done.size:
                completion[i] = v.t_min + int(done[0])
    utility = float(
        sum(float(jobs[i].utility(int(c))) for i, c in enumerate(completion.tolist()) if c >= 0)
    )
    dual = getattr(res, "mip_dual_bound", None)
    bound = -float(dual) if dual is not None and math.isfinite(dual) else float(sum(best))
    status = "optimal" if res.status == 0 else "time limit"
    return Offline(utility, completion, workers, ps, status, max(bound, utility))
