"""The offline optimum of DMLRS (gpusched.algorithms.exact_ps): small cases worked out by
hand, a brute-force enumeration on tiny instances, and every returned schedule checked
against the paper's constraints recomputed here in numpy (not by the module's own rows)."""

from __future__ import annotations

import itertools
import math
import re
from typing import Any

import numpy as np
import pytest

from gpusched.algorithms.exact_ps import Offline, solve_offline
from gpusched.jobmodels.ps import PSJob

#: Sec. V's machine: 36 GPUs, 100 vCPUs, 306 GB memory, 135 GB storage
MACHINE = np.array([36.0, 100.0, 306.0, 135.0])


def job(
    *,
    arrival: int = 0,
    slots_of_work: float = 1.0,
    batch: int = 4,
    gamma: float = 1.0,
    ext_factor: float = 10.0,
    worker: tuple[float, ...] = (1.0, 1.0, 1.0, 1.0),
    ps: tuple[float, ...] = (0.0, 1.0, 1.0, 1.0),
    theta: tuple[float, float, float] = (10.0, 1.0, 2.0),
) -> PSJob:
    """A job needing ``slots_of_work`` slots of F workers at the internal rate.

    ``c_int`` is 1e-3 worker-slots per sample, ``c_ext = ext_factor * c_int``.
    """
    c_int = 1e-3
    return PSJob(
        arrival=arrival,
        work=slots_of_work * batch / c_int,
        c_int=c_int,
        c_ext=c_int * ext_factor,
        gamma=gamma,
        batch=batch,
        worker=np.asarray(worker, dtype=np.float64),
        ps=np.asarray(ps, dtype=np.float64),
        theta=np.asarray(theta, dtype=np.float64),
    )


def single_machine(w: np.ndarray, s: np.ndarray) -> bool:
    """Fact 1: every worker and PS of the slot on one machine (the internal rate)."""
    return int(np.count_nonzero((w > 0) | (s > 0))) == 1


def check_schedule(jobs: list[PSJob], capacity: np.ndarray, horizon: int, res: Offline) -> None:
    """Every constraint of DMLRS, recomputed from the returned allocation."""
    n_h = capacity.shape[0]
    assert res.workers.shape == res.ps.shape == (len(jobs), horizon, n_h)
    assert (res.workers >= 0).all() and (res.ps >= 0).all()
    # eq. 5: capacity per slot, machine and resource, summed over jobs
    alpha = np.stack([j.worker for j in jobs])
    beta = np.stack([j.ps for j in jobs])
    used = np.einsum("ith,ir->thr", res.workers, alpha) + np.einsum("ith,ir->thr", res.ps, beta)
    assert (used <= capacity[None] + 1e-9).all()
    total = 0.0
    for i, jb in enumerate(jobs):
        w, s = res.workers[i], res.ps[i]
        big_w, big_s = w.sum(axis=1), s.sum(axis=1)
        assert (big_w <= jb.batch).all()  # eq. 4
        assert (big_w <= jb.gamma * big_s + 1e-9).all()  # enough PSs for the ratio
        assert (big_s <= np.ceil(big_w / jb.gamma - 1e-9)).all()  # no idle PSs
        assert not big_w[: jb.arrival].any() and not big_s[: jb.arrival].any()  # eq. 7
        c = res.completion[i]
        if c < 0:
            assert not big_w.any() and not big_s.any()
            continue
        assert jb.arrival <= c < horizon
        active = np.flatnonzero(big_w)
        assert active.size and active.max() == c  # eq. 6: the last slot with workers
        per_sample = np.array(
            [jb.c_int if single_machine(w[t], s[t]) else jb.c_ext for t in range(horizon)]
        )
        samples = (big_w / per_sample).sum()
        assert samples >= jb.work * (1 - 1e-6)  # eq. 3
        total += float(jb.utility(c))
    assert res.utility == pytest.approx(total, rel=1e-9, abs=1e-12)
    assert res.bound >= res.utility - 1e-9


def brute_force(jobs: list[PSJob], capacity: np.ndarray, horizon: int) -> float:
    """The best total utility by enumerating every allocation (tiny cases only).

    Per job and slot: W workers (0..F) spread over the machines in every way, with
    S = ceil(W / gamma) PSs spread in every way; a slot trains W / c_int samples if all of
    them sit on one machine (Fact 1), else W / c_ext. Every combination of these choices
    over jobs and slots is scored at once (numpy over the product).
    """
    n_h, n_r = capacity.shape

    def spreads(n: int) -> list[tuple[int, ...]]:
        return [p for p in itertools.product(range(n + 1), repeat=n_h) if sum(p) == n]

    cells = []  # per (job, slot): job, slot, usage (n, H R), samples (n,)
    for i, jb in enumerate(jobs):
        for t in range(jb.arrival, horizon):
            usage, samples = [], []
            for n_w in range(jb.batch + 1):
                n_s = math.ceil(n_w / jb.gamma - 1e-9)
                for w, s in itertools.product(spreads(n_w), spreads(n_s)):
                    wa, sa = np.array(w), np.array(s)
                    usage.append((np.outer(wa, jb.worker) + np.outer(sa, jb.ps)).ravel())
                    c = jb.c_int if single_machine(wa, sa) else jb.c_ext
                    samples.append(n_w / c)
            cells.append((i, t, np.array(usage), np.array(samples)))
    grid = np.stack(
        [g.ravel() for g in np.meshgrid(*[np.arange(len(c[3])) for c in cells], indexing="ij")],
        axis=1,
    )
    used = np.zeros((grid.shape[0], horizon, n_h * n_r))
    samples = np.zeros((grid.shape[0], len(jobs)))
    last = np.full((grid.shape[0], len(jobs)), -1)
    for k, (i, t, usage, smp) in enumerate(cells):
        used[:, t] += usage[grid[:, k]]
        samples[:, i] += smp[grid[:, k]]
        last[:, i] = np.where(smp[grid[:, k]] > 0, np.maximum(last[:, i], t), last[:, i])
    feasible = (used <= capacity.ravel()[None, None] + 1e-9).all(axis=(1, 2))
    value = np.zeros(grid.shape[0])
    for i, jb in enumerate(jobs):
        done = (last[:, i] >= 0) & (samples[:, i] >= jb.work * (1 - 1e-9))
        value += np.where(done, jb.utility(np.maximum(last[:, i], 0)), 0.0)
    return float(value[feasible].max())


def test_one_job_finishes_at_the_earliest_slot_on_one_machine() -> None:
    # 2.5 slots of F = 10 workers from slot 2: the earliest completion is slot 4 (10+10+5)
    jb = job(arrival=2, slots_of_work=2.5, batch=10, theta=(50.0, 0.5, 3.0))
    capacity = np.tile(MACHINE, (2, 1))
    res = solve_offline([jb], capacity, 8)
    check_schedule([jb], capacity, 8, res)
    assert res.status == "optimal"
    assert res.completion.tolist() == [jb.arrival + math.ceil(2.5) - 1]
    assert res.utility == pytest.approx(float(jb.utility(4)))
    for t in range(2, 5):  # internal: each active slot on a single machine
        assert single_machine(res.workers[0, t], res.ps[0, t])


@pytest.mark.parametrize("high", [0, 1])
def test_two_jobs_one_machine_only_one_fits_the_higher_utility_wins(high: int) -> None:
    # each job needs all 9 GPU-workers of the machine for all 3 slots
    thetas = [(20.0, 0.0, 1.0), (20.0, 0.0, 1.0)]
    thetas[high] = (35.0, 0.0, 1.0)
    jobs = [job(slots_of_work=3.0, batch=9, worker=(4.0, 1.0, 1.0, 1.0), theta=th) for th in thetas]
    capacity = MACHINE[None].copy()
    res = solve_offline(jobs, capacity, 3)
    check_schedule(jobs, capacity, 3, res)
    assert res.status == "optimal"
    assert res.completion[high] == 2 and res.completion[1 - high] == -1
    assert res.utility == pytest.approx(35.0 / 2.0)  # theta2 = 0: theta1 / 2


def two_machine_job(ext_factor: float, slots_of_work: float) -> tuple[PSJob, np.ndarray]:
    """F = 8, but a machine holds only 4 workers (and their PSs): 8 workers need both."""
    jb = job(
        slots_of_work=slots_of_work,
        batch=8,
        ext_factor=ext_factor,
        worker=(1.0, 1.0, 1.0, 1.0),
        ps=(0.0, 1.0, 1.0, 1.0),
        theta=(10.0, 2.0, 1.0),
    )
    capacity = np.tile(np.array([4.0, 8.0, 8.0, 8.0]), (2, 1))
    return jb, capacity


def test_internal_beats_external_when_external_is_slow() -> None:
    # internal: 4 workers a slot at c_int; external: 8 workers at 3 c_int, i.e. 8/3 < 4
    jb, capacity = two_machine_job(ext_factor=3.0, slots_of_work=1.0)  # 8 worker-slots
    res = solve_offline([jb], capacity, 4)
    check_schedule([jb], capacity, 4, res)
    assert res.completion.tolist() == [1]  # internal: 2 slots; external would need 3
    assert all(single_machine(res.workers[0, t], res.ps[0, t]) for t in range(2))


def test_external_when_it_pays() -> None:
    # external: 8 workers at 1.5 c_int = 5.33 a slot beats internal 4; 10.5 worker-slots
    jb, capacity = two_machine_job(ext_factor=1.5, slots_of_work=10.5 / 8)
    res = solve_offline([jb], capacity, 4)
    check_schedule([jb], capacity, 4, res)
    assert res.completion.tolist() == [1]  # internal would need 3 slots
    assert not all(single_machine(res.workers[0, t], res.ps[0, t]) for t in range(2))


@pytest.mark.parametrize("seed", range(4))
def test_matches_brute_force_on_one_machine(seed: int) -> None:
    rng = np.random.default_rng(seed)
    capacity = np.array([[5.0, 6.0, 8.0, 8.0]])
    jobs = [
        PSJob(
            arrival=int(rng.integers(0, 2)),
            work=float(rng.uniform(1.0, 7.0)) / 1e-2,
            c_int=1e-2,
            c_ext=2e-2,
            gamma=float(rng.integers(1, 3)),
            batch=3,
            worker=np.array([float(rng.integers(1, 3)), 1.0, 2.0, 1.0]),
            ps=np.array([0.0, 1.0, float(rng.integers(1, 4)), 1.0]),
            theta=np.array([float(rng.uniform(1, 50)), float(rng.uniform(0, 2)), 1.0]),
        )
        for _ in range(2)
    ]
    res = solve_offline(jobs, capacity, 3)
    check_schedule(jobs, capacity, 3, res)
    assert res.status == "optimal"
    best = brute_force(jobs, capacity, 3)
    assert best > 0  # some job can finish: the case is not trivially empty
    assert res.utility == pytest.approx(best, rel=1e-6)


@pytest.mark.parametrize("seed", range(3))
def test_matches_brute_force_on_two_machines(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    capacity = np.tile(np.array([2.0, 4.0, 4.0, 4.0]), (2, 1))
    jobs = [
        PSJob(
            arrival=0,
            work=float(rng.uniform(1.0, 4.0)) / 1e-2,
            c_int=1e-2,
            c_ext=float(rng.uniform(1.0, 2.5)) * 1e-2,
            gamma=1.0,
            batch=2,
            worker=np.array([1.0, 1.0, 1.0, 1.0]),
            ps=np.array([0.0, 1.0, 1.0, 1.0]),
            theta=np.array([float(rng.uniform(1, 50)), float(rng.uniform(0, 2)), 1.0]),
        )
        for _ in range(2)
    ]
    res = solve_offline(jobs, capacity, 2)
    check_schedule(jobs, capacity, 2, res)
    assert res.status == "optimal"
    best = brute_force(jobs, capacity, 2)
    assert best > 0  # some job can finish: the case is not trivially empty
    assert res.utility == pytest.approx(best, rel=1e-6)


def sec5_jobs(rng: np.random.Generator, n: int, horizon: int, k_scale: float) -> list[PSJob]:
    """Jobs drawn as in Sec. V (K scaled by ``k_scale`` so that some can finish)."""
    out = []
    for _ in range(n):
        gamma, batch = int(rng.integers(1, 11)), int(rng.integers(1, 201))
        g, tau = rng.uniform(30, 575), rng.uniform(1e-5, 1e-4)
        out.append(
            PSJob(
                arrival=int(rng.integers(0, horizon)),
                work=float(rng.integers(50, 201) * rng.integers(20_000, 500_001) * k_scale),
                c_int=tau + 2 * g * gamma / (4.5e7 * batch),
                c_ext=tau + 2 * g * gamma / (4.5e6 * batch),
                gamma=float(gamma),
                batch=batch,
                worker=np.array(
                    [
                        rng.integers(0, 5),
                        rng.integers(1, 11),
                        rng.uniform(2, 32),
                        rng.uniform(5, 10),
                    ]
                ),
                ps=np.array([0.0, rng.integers(1, 11), rng.uniform(2, 32), rng.uniform(5, 10)]),
                theta=np.array([rng.uniform(1, 100), rng.uniform(0.01, 1), rng.uniform(1, 15)]),
            )
        )
    return out


@pytest.mark.parametrize("seed", range(3))
def test_sec5_instances_satisfy_every_constraint(seed: int) -> None:
    rng = np.random.default_rng(seed)
    jobs = sec5_jobs(rng, 6, 6, 0.01)
    capacity = np.tile(MACHINE, (2, 1))
    res = solve_offline(jobs, capacity, 6)
    check_schedule(jobs, capacity, 6, res)
    assert res.status == "optimal"
    assert (res.completion >= 0).any()  # the instance is not trivially empty


def test_the_completion_is_the_last_slot_with_workers() -> None:
    # theta2 < 0: a later completion pays more, so the optimum must keep a worker busy in
    # its completion slot (eq. 6) rather than finish early and claim a late completion
    jb = job(slots_of_work=0.5, batch=4, theta=(10.0, -1.0, 2.0))
    capacity = MACHINE[None].copy()
    res = solve_offline([jb], capacity, 4)
    check_schedule([jb], capacity, 4, res)
    assert res.completion.tolist() == [3]
    assert res.workers[0, 3].sum() >= 1


def test_a_job_that_cannot_finish_gets_nothing() -> None:
    late = job(arrival=3, slots_of_work=2.0, batch=4)  # 2 slots from slot 3, T = 4
    after = job(arrival=5, slots_of_work=0.5)  # arrives after the horizon
    ok = job(arrival=0, slots_of_work=1.0)
    capacity = MACHINE[None].copy()
    res = solve_offline([late, after, ok], capacity, 4)
    check_schedule([late, after, ok], capacity, 4, res)
    assert res.completion.tolist() == [-1, -1, 0]


def test_time_limit_reports_the_incumbent_and_the_bound() -> None:
    rng = np.random.default_rng(7)
    jobs = sec5_jobs(rng, 10, 10, 0.01)
    capacity = np.tile(MACHINE, (8, 1))
    res = solve_offline(jobs, capacity, 10, time_limit=1e-3)
    assert res.status == "time limit"
    check_schedule(jobs, capacity, 10, res)  # the incumbent (maybe empty) is feasible
    assert res.bound >= res.utility


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"capacity": np.ones(4)}, "capacity must be an (H, R) array"),
        ({"capacity": -np.ones((1, 4))}, "capacity must be finite and >= 0"),
        ({"horizon": 0}, "horizon must be an integer >= 1"),
        ({"horizon": 2.5}, "horizon must be an integer >= 1"),
        ({"time_limit": 0.0}, "time_limit must be seconds > 0"),
        ({"arrival": -1}, "job 0: arrival must be an integer slot >= 0"),
        ({"arrival": 1.5}, "job 0: arrival must be an integer slot >= 0"),
        ({"work": 0.0}, "job 0: work must be finite and > 0"),
        ({"gamma": math.nan}, "job 0: gamma must be finite and > 0"),
        ({"c_ext": 1e-4}, "job 0: c_ext (0.0001) is below c_int"),
        ({"batch": 0}, "job 0: batch must be an integer >= 1"),
        ({"worker": np.ones(3)}, "job 0: worker must be 4 finite demands"),
        ({"ps": -np.ones(4)}, "job 0: ps must be 4 finite demands"),
        ({"theta": np.ones(2)}, "job 0: theta must be 3 finite numbers"),
    ],
)
def test_bad_input_is_a_clear_value_error(change: dict[str, Any], needle: str) -> None:
    args: dict[str, Any] = {"capacity": MACHINE[None], "horizon": 3, "time_limit": 5.0}
    fields = {f: getattr(job(), f) for f in PSJob.__dataclass_fields__}
    for key, value in change.items():
        (args if key in args else fields)[key] = value
    jobs = [PSJob(**fields)]
    with pytest.raises(ValueError, match=re.escape(needle)):
        solve_offline(jobs, args["capacity"], args["horizon"], time_limit=args["time_limit"])
