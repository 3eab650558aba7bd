"""SJF-BSBF's batched Theorem-1 test (``worth_sharing``) against Alg. 2 job by job.

``worth_sharing`` decides for many waiting jobs at once whether some sub-batch beats
waiting beside each running job; its shortcut (only the largest sub-batch that fits, then
every sub-batch near a tie) must give exactly the ``share`` of ``best_sub_batches``.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpusched.algorithms.share import JobTimes, best_sub_batches, pair_jct, worth_sharing
from gpusched.core.jobs import prepare_jobs
from gpusched.io.cluster import load_cluster
from gpusched.workloads import WORKLOADS


@pytest.fixture(scope="module")
def times() -> JobTimes:
    cluster = load_cluster("sjf-bsbf-16x4")
    jobs = prepare_jobs(WORKLOADS["sjf-bsbf"](2, 240), cluster)
    return JobTimes(jobs, cluster)


def _one_by_one(times: JobTimes, jobs: np.ndarray, partners: np.ndarray, solo_b: np.ndarray):
    mem_b = np.array([times.mem(int(b), None) for b in partners])
    rows = [
        best_sub_batches(times, int(j), partners, [None] * partners.size, solo_b, mem_b)[0]
        for j in jobs
    ]
    return np.array(rows), mem_b


def _check(times: JobTimes, jobs: np.ndarray, partners: np.ndarray, solo_b: np.ndarray) -> None:
    want, mem_b = _one_by_one(times, jobs, partners, solo_b)
    got = worth_sharing(times, jobs, partners, solo_b, mem_b)
    assert got.dtype == bool
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize("seed", range(5))
def test_random_pairs_match_alg_2(times: JobTimes, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = len(times.work)
    jobs = rng.choice(n, 12, replace=False)
    partners = rng.choice(n, 30, replace=False)
    solo_b = times.work[partners] * rng.uniform(0.0, 2.0, partners.size)
    want, _ = _one_by_one(times, jobs, partners, solo_b)
    assert want.any() and not want.all()  # both answers occur
    _check(times, jobs, partners, solo_b)


def test_near_ties_match_alg_2(times: JobTimes) -> None:
    # for pairs whose answer flips as B's remaining time grows, bisect to the flip and
    # check the neighbouring floats: there the shortcut must fall back to every sub-batch
    rng = np.random.default_rng(7)
    n = len(times.work)
    found = 0
    for _ in range(200):
        j, b = (int(x) for x in rng.choice(n, 2, replace=False))
        one = np.array([b])
        mem_b = np.array([times.mem(b, None)])
        lo, hi = 0.0, 10.0 * float(times.work[j])

        def shares(sb: float, j: int = j, one: np.ndarray = one, mem_b: np.ndarray = mem_b):
            return bool(best_sub_batches(times, j, one, [None], np.array([sb]), mem_b)[0][0])

        if shares(lo) == shares(hi):
            continue
        for _ in range(200):
            mid = (lo + hi) / 2.0
            if mid in (lo, hi):
                break
            lo, hi = (mid, hi) if shares(mid) == shares(lo) else (lo, mid)
        sbs = np.array([np.nextafter(lo, -np.inf), lo, hi, np.nextafter(hi, np.inf)])
        _check(times, np.array([j]), np.repeat(one, sbs.size), sbs)
        found += 1
    assert found >= 5


def test_without_the_shortcut_it_is_the_same(times: JobTimes, monkeypatch) -> None:
    # the full search over every sub-batch (shapes whose time falls with the sub-batch)
    rng = np.random.default_rng(3)
    n = len(times.work)
    jobs = rng.choice(n, 10, replace=False)
    partners = rng.choice(n, 20, replace=False)
    solo_b = times.work[partners] * rng.uniform(0.0, 2.0, partners.size)
    want, mem_b = _one_by_one(times, jobs, partners, solo_b)
    monkeypatch.setattr(times, "shortcut", lambda shapes, spread=False: False)
    got = worth_sharing(times, jobs, partners, solo_b, mem_b)
    assert got.tolist() == want.tolist()


def test_the_shortcut_needs_rising_times_and_xi_of_at_least_one(times: JobTimes) -> None:
    shapes = np.arange(times.shape_job.size)
    assert times.t_rising.all() and times.shortcut(shapes)
    saved_xi, saved_rising = times.xi, times.t_rising.copy()
    try:
        times.xi = np.full_like(saved_xi, 0.9)  # a run's matrix replaced: checked again
        assert not times.shortcut(shapes)
        times.xi = saved_xi
        times.t_rising[0] = False
        times._all_rising = False
        assert not times.shortcut(shapes) and times.shortcut(shapes[1:])
    finally:
        times.xi, times.t_rising[:], times._all_rising = saved_xi, saved_rising, True


def test_the_pair_jct_grows_with_the_newcomers_time() -> None:
    # the shortcut's premise (xi >= 1): a longer newcomer never makes the pair faster
    rng = np.random.default_rng(11)
    solo_a = np.sort(rng.uniform(1.0, 1e5, 500))
    for _ in range(50):
        xa, xb = rng.uniform(1.0, 3.0, 2)
        jct = pair_jct(solo_a, float(rng.uniform(1.0, 1e5)), xa, xb)
        assert np.all(np.diff(jct) >= 0)
