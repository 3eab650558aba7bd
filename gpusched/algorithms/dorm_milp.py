"""Dorm's utilisation-fairness MILP for parameter-server jobs: how many workers each job gets.

P. Sun, Y. Wen, T. N. B. Duong, S. Yan, "Towards Distributed Machine Learning in Shared
Clusters: A Dynamically-Partitioned Approach", IEEE SMARTCOMP 2017,
doi:10.1109/SMARTCOMP.2017.7947053, arXiv:1704.06738 (Dorm, ref. [12] of the PD-ORS paper):
a cluster is partitioned among the applications by an MILP that maximises resource
utilisation subject to fairness and to a bound on how many partitions are resized at once
(the adjustment overhead). The PD-ORS paper (Yu et al., TNSE 2022, Sec. V, baseline 3)
uses it for workers and parameter servers. Only Dorm's abstract was at hand, so the
constraints below are our reading of that one-sentence description. This module writes the
problem over *totals* per job on the pooled capacity of the cluster (``policies/dorm.py``
places the totals afterwards); its shape, per active job i with worker demand alpha_i, PS
demand beta_i (both ``(R,)``), global batch F_i and worker:PS ratio gamma_i, on total
capacity C (``(R,)``):

* variables: integer workers ``n_i`` in [0, F_i] (eq. 4), integer PSs ``p_i``, a binary
  ``z_i`` "job i is adjusted" for each running job, a shortfall ``e_i >= 0``;
* PSs at the ratio (eq. 2): ``p_i = ceil(n_i / gamma_i)`` exactly, written as
  ``n_i <= gamma_i p_i <= n_i + m_i`` with ``m_i`` strictly between the largest rounding
  gap over n in [0, F_i] and gamma_i (so ``p_i >= 1`` whenever ``n_i >= 1`` and 0 PSs
  without workers); the PSs are pinned because an utilisation objective would otherwise
  buy idle PSs;
* capacity: ``sum_i n_i alpha_ir + p_i beta_ir <= C_r`` for every resource r (pooled:
  fragmentation over machines is left to the placement);
* fairness: job i's share of its dominant resource r*_i (the largest of
  ``(alpha_i + beta_i / gamma_i) / C``, a worker with its part of a PS) is at least
  ``(1 - slack) min(1 / |A|, share at F_i)``: an equal share of the active jobs A, or less
  when the job cannot use that much (its demand-limited share; what small jobs leave is
  not shared out again, unlike DRF's water-filling); the share of r*_i is a lower bound of
  the job's dominant share, so the linear constraint is sufficient. The bounds are soft:
  ``share + e_i >= bound`` and each unit of shortfall costs :data:`FAIRNESS_WEIGHT` in the
  objective, far more than any utilisation (at most R), so the MILP meets every bound it
  can and otherwise minimises the total shortfall first;
* adjustment overhead: a running job (``n0_i`` workers and ``p0_i`` PSs now, shortfall
  ``e0_i`` there) either keeps its count (``z_i = 0``) or is resized (``z_i = 1``), and
  ``sum_i z_i <= max_adjust``; jobs that start are not adjustments;
* objective: maximise utilisation ``sum_r (sum_i n_i alpha_ir + p_i beta_ir) / C_r``
  minus the fairness penalty, minus :data:`ADJUST_WEIGHT` per adjusted job (a tie-break:
  among equally good answers, resize fewer jobs; it is the size of HiGHS's absolute gap,
  so a preference only).

**The formulation** (ours: the problem above, written so that its LP relaxation is
tight). The choice "kept or resized" is a disjunction, written as its convex hull
(E. Balas, "Disjunctive programming", Ann. Discrete Math. 5, 1979): ``n_i = n0_i (1 - z_i)
+ m_i``, ``p_i = p0_i (1 - z_i) + q_i`` and ``e_i = e0_i (1 - z_i) + e'_i``, where
``(m_i, q_i, e'_i)`` is the resized allocation scaled by ``z_i``: ``m_i <= F_i z_i``,
``0 <= gamma_i q_i - m_i <= m_i^slack z_i`` and ``share(m_i, q_i) + e'_i >= bound_i z_i``.
A queued job holds nothing and its ``z_i`` is fixed at 1 (``n_i = m_i``). The pinned
terms go to the capacity's right-hand side and to a constant of the objective. (The first
version bounded ``|n_i - n0_i|`` by big-M rows ``(F_i - n0_i) z_i`` and ``n0_i z_i`` with
a valid inequality ``e_i >= e0_i (1 - z_i)``; its LP relaxation let a fraction of ``z_i``
buy a fraction of the job's whole range, so HiGHS proved far less per node. Both have the
same optima: on the 61 MILPs of the three Fig. 7 Dorm runs, I = 100, solved to a gap of
1e-6, the same 61 answers, in 7.4 s against 13.1 s.) One family of valid inequalities
then cuts the LP's fractional counts just below the fairness bound (an integer rounding
cut): with ``n2_i`` the fewest workers that meet ``bound_i``, ``e'_i >= t_i (n2_i z_i -
m_i)``, ``t_i`` the steepest slope for which it holds at every whole count
(:func:`_count_terms`). It took 18 % off the solve time of the Fig. 7 runs' 61 MILPs, with
the same answers.

**Solved to optimality.** HiGHS (the highspy package, imported on first use) runs until
the gap is closed (``mip_gap`` 0: its absolute gap, 1e-6, stops it), with a node limit
(deterministic) and a time limit (a backstop, far above the node limit's time: when it is
reached the answer depends on the machine's speed). An answer short of the optimum
depends on the search's path, and Dorm's schedules are sensitive to it: with the former
0.1 % gap, the first formulation's answers moved with any change of the model or of
HiGHS's options, and a run's total utility by -37 % to +14 % between equivalent models
(docs/pd-ors.md, Speed). The optimum does not: on the 61 MILPs of the Fig. 7 runs every
HiGHS option tried (presolve, restarts, RINS/RENS, heuristic effort, branching
reliability) returns the same 61 answers. Of the 1,676 MILPs of all the PD-ORS
experiments' Dorm runs (``examples/pd-ors/run.sh``, seeds 1-6), one stops at the node
limit (2,000; the former 5,000 gives the same answer), within a relative 1.3e-5 of its
bound (4.8e-5 short of filling all four resources; a packing 4.1e-5 better exists); on
seeds 7-24, none. "The optimum" holds up to HiGHS's tolerances: with cut separation off
below the root, one of the 1,676 MILPs returned another answer whose objective is 2.2e-7
away, too close for HiGHS to tell apart even at an absolute gap of 1e-9 (that run's
schedule then moved; its total utility did not).
HiGHS runs on one thread (``threads = 1``, here and in PD-ORS's LPs, the policies'
highspy solvers, which share one thread pool per process): a parallel search could end
on another of equal answers, or, stopped at a limit, on another answer. (The offline
optima, through ``scipy.optimize.milp``, use SciPy's own copy of HiGHS.)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

from gpusched.core.portable import per_unit

__all__ = [
    "ADJUST_WEIGHT",
    "FAIRNESS_WEIGHT",
    "Answer",
    "dominant",
    "fair_bounds",
    "ps_count",
    "solve_counts",
]

#: objective cost of one unit of dominant-share shortfall (utilisation is at most R = 4)
FAIRNESS_WEIGHT = 1000.0
#: objective cost of adjusting one running job (a tie-break, below any utilisation step)
ADJUST_WEIGHT = 1e-6


class Answer(NamedTuple):
    """What :func:`solve_counts` found, and how HiGHS stopped."""

    #: ``(k,)`` int64 workers per job, None when HiGHS stopped without a feasible answer
    workers: np.ndarray | None
    #: ``(k,)`` int64 PSs per job (:func:`ps_count` of ``workers``), or None
    ps: np.ndarray | None
    #: "optimal" (proved, to ``mip_gap``), "node limit", "time limit", or HiGHS's own
    #: name for another status
    status: str
    #: HiGHS's relative gap between the answer and its best bound when it stopped
    gap: float


def ps_count(n: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """PSs for ``n`` workers at the ratio (eq. 2): ``ceil(n / gamma)``, 0 for 0 workers."""
    n = np.asarray(n, dtype=np.int64)
    return np.where(n > 0, np.ceil(n / gamma - 1e-9), 0).astype(np.int64)


def dominant(worker: np.ndarray, ps: np.ndarray, gamma: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """Each job's dominant resource r*: the largest share of ``worker + ps / gamma``.

    Parameters
    ----------
    worker, ps
        ``(k, R)`` demand of one worker and of one PS.
    gamma
        ``(k,)`` workers per PS.
    cap
        ``(R,)`` total capacity (resources with none are never dominant).
    """
    unit = worker + ps / gamma[:, None]
    inv = np.where(cap > 0, 1.0 / np.where(cap > 0, cap, 1.0), 0.0)
    return np.asarray(np.argmax(unit * inv, axis=1), dtype=np.int64)


def fair_bounds(
    worker: np.ndarray,
    ps: np.ndarray,
    gamma: np.ndarray,
    max_workers: np.ndarray,
    cap: np.ndarray,
    slack: float,
) -> np.ndarray:
    """Each job's lower bound on its share of its dominant resource.

    ``(1 - slack) min(1 / k, share of r* at max_workers workers and their PSs)``.
    """
    k = worker.shape[0]
    r = dominant(worker, ps, gamma, cap)
    rows = np.arange(k)
    c = cap[r]
    top = max_workers * worker[rows, r] + ps_count(max_workers, gamma) * ps[rows, r]
    at_max = np.where(c > 0, top / np.where(c > 0, c, 1.0), 0.0)
    return np.asarray((1.0 - slack) * np.minimum(1.0 / max(k, 1), at_max), dtype=np.float64)


def _counts_grid(
    gamma: np.ndarray, max_workers: np.ndarray
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Every whole count of every job, a block of jobs with similar F at a time (at most
    about a million counts a block, or one job): the block's rows, its ``(rows, its
    largest F + 1)`` workers n, their PSs (:func:`ps_count`) and a mask of the counts in
    [0, F_i]."""
    order = np.argsort(max_workers, kind="stable")
    f = max_workers[order].astype(np.int64)
    start = 0
    while start < f.size:
        end = start + 1
        while end < f.size and (end - start + 1) * (f[end] + 1) <= 1 << 20:
            end += 1
        rows, top = order[start:end], int(f[end - 1])
        n = np.broadcast_to(np.arange(top + 1), (rows.size, top + 1))
        yield rows, n, ps_count(n, gamma[rows, None]), n <= max_workers[rows, None]
        start = end


def solve_counts(
    worker: np.ndarray,
    ps: np.ndarray,
    gamma: np.ndarray,
    max_workers: np.ndarray,
    cap: np.ndarray,
    current: np.ndarray,
    running: np.ndarray,
    *,
    slack: float,
    max_adjust: int,
    time_limit_s: float,
    node_limit: int,
    mip_gap: float = 0.0,
) -> Answer:
    """Workers and PSs per active job from Dorm's MILP (module docstring).

    Parameters
    ----------
    worker, ps
        ``(k, R)`` demand of one worker and of one PS of each active job.
    gamma
        ``(k,)`` workers per PS (eq. 2).
    max_workers
        ``(k,)`` most workers each job may get (F_i, or 0 for a job that fits nowhere).
    cap
        ``(R,)`` total capacity of the cluster.
    current
        ``(k,)`` workers each job holds now.
    running
        ``(k,)`` bool: the job holds resources now (changing it is an adjustment).
    slack
        Fairness slack in [0, 1]: the bound is ``1 - slack`` times the fair share.
    max_adjust
        Most running jobs whose worker count may change.
    time_limit_s, node_limit
        HiGHS limits (s; branch-and-bound nodes).
    mip_gap
        HiGHS's relative MIP gap: stop once the objective is within this fraction of the
        best bound (0: prove optimality).

    Returns
    -------
    Answer
        The totals per job, None when HiGHS stopped at a limit without a feasible answer
        (with the soft fairness bounds, keeping every allocation is always feasible), and
        how HiGHS stopped.
    """
    k, n_res = worker.shape
    if k == 0:
        return Answer(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), "optimal", 0.0)
    f = max_workers.astype(np.float64)
    inv = np.where(cap > 0, 1.0 / np.where(cap > 0, cap, 1.0), 0.0)
    run = np.asarray(running, dtype=bool)
    # what each job holds now (nothing for a queued one): n0, p0 and its shortfall e0
    n0 = np.where(run, current, 0).astype(np.float64)
    p0 = np.where(run, ps_count(current, gamma), 0).astype(np.float64)
    r = dominant(worker, ps, gamma, cap)
    rows_k = np.arange(k)
    bound = fair_bounds(worker, ps, gamma, max_workers, cap, slack)
    share_w = worker[rows_k, r] * inv[r]
    share_p = ps[rows_k, r] * inv[r]
    e0 = np.where(run, np.maximum(bound - (share_w * n0 + share_p * p0), 0.0), 0.0)
    # x = [m (k) | q (k) | z (k) | e (k)]: the counts are n = n0 (1 - z) + m and
    # p = p0 (1 - z) + q, the shortfall e0 (1 - z) + e (e: the resized allocation's, e'
    # in the module docstring); a queued job's z is fixed at 1
    m_, q_, z_, e_ = (slice(i * k, (i + 1) * k) for i in range(4))
    eye = np.eye(k)
    rows: list[np.ndarray] = []
    lo: list[np.ndarray] = []
    hi: list[np.ndarray] = []

    def add(block: list[tuple[slice, np.ndarray]], lower: np.ndarray, upper: np.ndarray) -> None:
        a = np.zeros((lower.size, 4 * k))
        for sl, coef in block:
            a[:, sl] = coef
        rows.append(a)
        lo.append(lower)
        hi.append(upper)

    inf = np.full(k, np.inf)
    zero = np.zeros(k)
    # capacity: sum_i n_i alpha_ir + p_i beta_ir <= C_r, what the pinned jobs hold moved right
    held = n0[:, None] * worker + p0[:, None] * ps
    add(
        [(m_, worker.T), (q_, ps.T), (z_, -held.T)],
        np.full(n_res, -np.inf),
        cap.astype(np.float64) - held.sum(axis=0),
    )
    # the PS-ratio slack and the rounding cut's slope and count, from one walk over the
    # whole counts (_count_terms)
    m_slack, slope, n2 = _count_terms(share_w, share_p, gamma, max_workers, bound)
    # the resized allocation, scaled by z (0 when pinned): m <= F z and, for the PSs at
    # the ratio, 0 <= gamma q - m <= m_slack z (q = ceil(m / gamma))
    add([(m_, eye), (z_, -np.diag(f))], -inf, zero)
    add([(m_, -eye), (q_, np.diag(gamma))], zero, inf)
    add(
        [(m_, -eye), (q_, np.diag(gamma)), (z_, -np.diag(m_slack))],
        -inf,
        zero,
    )
    # fairness of the resized allocation: its share of r*_i + e_i >= bound_i z
    add(
        [(m_, np.diag(share_w)), (q_, np.diag(share_p)), (e_, eye), (z_, -np.diag(bound))],
        zero,
        inf,
    )
    # valid, and tightens the LP: the rounding cut at the fairness bound,
    # e_i >= t_i (n2_i z_i - m_i) (see _count_terms)
    add([(m_, np.diag(slope)), (e_, eye), (z_, -np.diag(slope * n2))], zero, inf)
    # sum over running jobs of z_i <= max_adjust
    add([(z_, run[None, :].astype(np.float64))], np.array([-np.inf]), np.array([float(max_adjust)]))

    util_w = per_unit(worker, inv)
    util_p = per_unit(ps, inv)
    # objective -utilisation + FAIRNESS_WEIGHT shortfall + ADJUST_WEIGHT adjusted, with
    # the pinned terms n0, p0, e0 (1 - z) split into a constant (the offset) and z's cost
    pinned = n0 * util_w + p0 * util_p
    c = np.concatenate(
        [
            -util_w,
            -util_p,
            pinned - FAIRNESS_WEIGHT * e0 + ADJUST_WEIGHT * run,
            np.full(k, FAIRNESS_WEIGHT),
        ]
    )
    offset = float(FAIRNESS_WEIGHT * e0.sum() - pinned.sum())
    lower = np.concatenate([zero, zero, np.where(run, 0.0, 1.0), zero])
    upper = np.concatenate([f, ps_count(max_workers, gamma).astype(np.float64), np.ones(k), bound])
    integrality = np.concatenate([np.ones(3 * k), np.zeros(k)])
    x, status, gap = _solve_milp(
        c,
        offset,
        integrality,
        lower,
        upper,
        np.vstack(rows),
        np.concatenate(lo),
        np.concatenate(hi),
        time_limit_s=time_limit_s,
        node_limit=node_limit,
        mip_gap=mip_gap,
    )
    if x is None:
        return Answer(None, None, status, gap)
    z = np.rint(x[z_])
    n = np.rint(n0 * (1.0 - z) + x[m_]).astype(np.int64)
    return Answer(n, ps_count(n, gamma), status, gap)


def _count_terms(
    share_w: np.ndarray,
    share_p: np.ndarray,
    gamma: np.ndarray,
    max_workers: np.ndarray,
    bound: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per job, from one walk over its whole counts (:func:`_counts_grid`): the PS-ratio
    slack ``m_i``, and the slope t and count n2 of the rounding cut ``e >= t (n2 - n)`` (the
    module docstring; 0 and 0 where there is none).

    ``m_i`` of ``gamma p <= n + m`` is halfway between the largest rounding gap
    ``gamma ceil(n / gamma) - n`` over n in [0, F_i] and gamma_i.

    n2 is the fewest workers whose share (with their PSs) meets the bound, and t the
    steepest slope through (n2, 0) that stays below the shortfall ``bound - share(n)`` at
    every whole n < n2. At n >= n2 the cut asks for no more than ``e >= 0``, so it holds at
    every whole count: it only removes the LP's fractional counts just below n2.
    """
    k = bound.shape[0]
    gap, slope, n2 = np.empty(k), np.zeros(k), np.zeros(k)
    for rows, n, ps, valid in _counts_grid(gamma, max_workers):
        gap[rows] = np.where(valid, gamma[rows, None] * ps - n, -np.inf).max(axis=1)
        short = bound[rows, None] - (share_w[rows, None] * n + share_p[rows, None] * ps)
        met = valid & (short <= 0.0)
        first = np.where(met.any(axis=1), met.argmax(axis=1), 0)
        below = n < first[:, None]  # the counts short of n2 (none where n2 is 0 or unmet)
        steep = np.where(below, short / np.where(below, first[:, None] - n, 1), np.inf)
        cut = first > 0
        slope[rows] = np.where(cut, np.maximum(steep.min(axis=1), 0.0), 0.0)
        n2[rows] = np.where(cut, first, 0)
    return np.asarray((gap + gamma) / 2.0, dtype=np.float64), slope, n2


#: HiGHS options for these MILPs: presolve, restarts and the RINS/RENS heuristics cost more
#: than they saved on the former model (about 35 % less time on the Fig. 7 instances); on
#: this one, at gap 0, presolve moves a run's time by -30 % to +17 % (Fig. 7, seeds 1-6) and
#: an answer only where the node limit stops the search, so the options stay. The
#: feasibility-jump heuristic found no answer the search kept: without it the 120 MILPs of
#: the Fig. 7 runs (I = 100, seeds 1-6) take 9 % less time, and all 1,676 MILPs of
#: ``examples/pd-ors/run.sh``'s Dorm runs (seeds 1-6) give the same answers
_OPTIONS: dict[str, bool | int | str] = {
    "threads": 1,
    "presolve": "off",
    "mip_allow_restart": False,
    "mip_heuristic_run_rins": False,
    "mip_heuristic_run_rens": False,
    "mip_heuristic_run_feasibility_jump": False,
}


def _solve_milp(
    c: np.ndarray,
    offset: float,
    integrality: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    a: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    *,
    time_limit_s: float,
    node_limit: int,
    mip_gap: float,
) -> tuple[np.ndarray | None, str, float]:
    """``min c x + offset`` s.t. ``lo <= a x <= hi``, ``lower <= x <= upper``, integral
    where ``integrality``, by HiGHS (a fresh solver: its answer depends on the data only):
    the best solution found (None without one), how HiGHS stopped (:class:`Answer`'s
    ``status``) and its relative gap."""
    from highspy import _core

    n, m = len(c), a.shape[0]
    cols, rows = np.nonzero(a.T)  # column-wise storage
    lp = _core.HighsLp()
    lp.num_col_, lp.num_row_ = n, m
    lp.col_cost_, lp.offset_ = c, offset
    lp.col_lower_, lp.col_upper_ = lower.astype(np.float64), upper.astype(np.float64)
    lp.row_lower_, lp.row_upper_ = lo.astype(np.float64), hi.astype(np.float64)
    lp.a_matrix_.format_ = _core.MatrixFormat.kColwise
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n, m
    lp.a_matrix_.start_ = np.concatenate([[0], np.cumsum(np.bincount(cols, minlength=n))]).astype(
        np.int32
    )
    lp.a_matrix_.index_ = rows.astype(np.int32)
    lp.a_matrix_.value_ = a.T[cols, rows].astype(np.float64)
    kind = (_core.HighsVarType.kContinuous, _core.HighsVarType.kInteger)
    lp.integrality_ = [kind[int(i)] for i in integrality]
    solver = _core._Highs()
    solver.setOptionValue("output_flag", False)
    solver.setOptionValue("time_limit", float(time_limit_s))
    solver.setOptionValue("mip_max_nodes", int(node_limit))
    solver.setOptionValue("mip_rel_gap", float(mip_gap))
    for key, value in _OPTIONS.items():
        solver.setOptionValue(key, value)
    solver.passModel(lp)
    solver.run()
    model = solver.getModelStatus().name
    status = _STATUS.get(model, model)
    info = solver.getInfo()
    if info.primal_solution_status != _core.SolutionStatus.kSolutionStatusFeasible:
        return None, status, float(info.mip_gap)
    return np.asarray(solver.getSolution().col_value, dtype=np.float64), status, float(info.mip_gap)


#: HiGHS's model statuses, as :class:`Answer` names them (reaching ``mip_max_nodes`` is
#: HiGHS's "solution limit")
_STATUS = {
    "kOptimal": "optimal",
    "kSolutionLimit": "node limit",
    "kTimeLimit": "time limit",
}
