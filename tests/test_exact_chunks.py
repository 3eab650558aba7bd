"""The exact optimum of the edge-cloud paper's ILP (4) (gpusched.algorithms.exact_chunks): a
two-worker case worked out by hand, agreement with the module's brute force (chunk by chunk,
no counts per worker, no pruning) on random tiny instances, and every returned schedule
checked against the paper's constraints recomputed here in numpy from ``runs``."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusched.algorithms.exact_chunks import Exact, Instance, brute_force, horizon_bound, solve


def instance(
    release: list[int],
    chunks: list[int],
    slots: list[list[float]],
    delay: list[list[int]],
    cloud: list[bool] | None = None,
) -> Instance:
    return Instance(
        release=np.array(release, dtype=np.int64),
        chunks=np.array(chunks, dtype=np.int64),
        slots=np.array(slots, dtype=np.float64),
        delay=np.array(delay, dtype=np.int64),
        cloud=None if cloud is None else np.array(cloud, dtype=bool),
    )


def eq3(inst: Instance, job: int, worker: int, run: np.ndarray) -> float:
    """Eq. 3 of one chunk from its slots: each slot (t - r_j) / (D_j p), the last one at the
    share of the slot it trains, p - ceil(p) + 1."""
    p = float(inst.slots[job, worker])
    share = p - math.ceil(p) + 1.0
    t = np.flatnonzero(run)
    weight = np.ones(t.size)
    weight[-1] = share
    return float(((t - inst.release[job]) * weight).sum() / (inst.chunks[job] * p))


def check_schedule(inst: Instance, horizon: int, res: Exact) -> None:
    """Every constraint of ILP (4) (zeta = 1), recomputed from the returned schedule."""
    job = np.repeat(np.arange(len(inst.chunks)), inst.chunks)
    cloud = np.zeros(inst.slots.shape[1], bool) if inst.cloud is None else inst.cloud
    assert res.runs.shape == (job.size, horizon)
    total = 0.0
    for c, (j, w) in enumerate(zip(job, res.assignment, strict=True)):
        assert 0 <= w < inst.slots.shape[1] and np.isfinite(inst.slots[j, w])  # v_jw = 1
        t = np.flatnonzero(res.runs[c])
        assert t.size == math.ceil(inst.slots[j, w])  # (4a): p slots, the last one partial
        assert t.min() >= inst.release[j] + inst.delay[j, w]  # (2i)/(4h)
        if cloud[w]:  # the cloud does not preempt
            assert (np.diff(t) == 1).all()
        total += eq3(inst, j, w, res.runs[c])
    for w in np.flatnonzero(~cloud):  # (4b): one chunk per edge worker per slot
        assert (res.runs[res.assignment == w].sum(axis=0) <= 1).all()
    for j in range(len(inst.chunks)):
        last = max(int(np.flatnonzero(res.runs[c]).max()) for c in np.flatnonzero(job == j))
        assert res.completion[j] == last + 1
    assert res.total_jct == float((res.completion - inst.release).sum())
    assert res.objective == pytest.approx(total, rel=1e-9, abs=1e-12)
    assert res.bound <= res.objective + 1e-9


# Two edge workers. Job 0: r = 0, one chunk, 3 slots on w0 (weight 1/3 a slot), 5 on w1.
# Job 1: r = 1, two chunks, 1 slot on w0 (weight 1/(2*1) = 1/2), 1.5 on w1 (weight
# 1/(2*1.5) = 1/3, last slot at share 0.5), reaching w1 one slot late (ready at 2).
TWO_WORKERS = instance(
    release=[0, 1],
    chunks=[1, 2],
    slots=[[3.0, 5.0], [1.0, 1.5]],
    delay=[[0, 0], [0, 1]],
)


def test_two_worker_optimum_by_hand():
    # HAPRF on w0: job 1 (1/2 a slot) preempts job 0 (1/3) at slot 1.
    #   job 0 on w0 in slots 0, 2, 3:       (0 + 2 + 3) / 3           = 5/3
    #   job 1, chunk 1 on w0 in slot 1:     (1 - 1) / 2               = 0
    #   job 1, chunk 2 on w1 in slots 2, 3: ((2-1) + 0.5 (3-1)) / 3   = 2/3
    #   total 7/3. The alternatives:
    #   job 0 first on w0 (0, 1, 2) = 1, job 1 at 3 on w0 (2-1)/2 = 1, w1 2-3: 2/3 -> 8/3;
    #   job 0 on w0 (0, 1, 3) = 4/3, job 1 at 2 on w0 = 1/2, w1 2-3: 2/3          -> 5/2;
    #   job 0 on w1 (0..4) = 10/5 = 2, job 1 on w0 at 1, 2: 0 + 1/2               -> 5/2;
    #   job 1 both on w0 (1, 2) = 1/2, job 0 on w0 (0, 3, 4) = 7/3                -> 17/6;
    #   job 1 both on w1 (2-3, 4-5): 2/3 + (3 + 0.5*4)/3 = 7/3, job 0 on w0 = 1     -> 10/3.
    res = solve(TWO_WORKERS, horizon=6)
    assert res.status == "optimal"
    assert res.objective == pytest.approx(7 / 3, abs=1e-9)
    assert res.bound == pytest.approx(7 / 3, abs=1e-6)
    assert res.assignment.tolist() == [0, 0, 1]  # job 0 on w0; job 1 on w0 and w1
    assert np.flatnonzero(res.runs[0]).tolist() == [0, 2, 3]
    assert np.flatnonzero(res.runs[1]).tolist() == [1]
    assert np.flatnonzero(res.runs[2]).tolist() == [2, 3]
    assert res.completion.tolist() == [4, 4]
    assert res.total_jct == (4 - 0) + (4 - 1)
    check_schedule(TWO_WORKERS, 6, res)
    assert brute_force(TWO_WORKERS, 6) == pytest.approx(7 / 3, abs=1e-12)


def test_infeasible_horizon_is_reported():
    # by 3 slots: w0 can hold job 0 (3 slots) or job 1, and neither job fits on w1 alone
    res = solve(TWO_WORKERS, horizon=3)
    assert res.status == "infeasible"
    assert math.isinf(res.objective) and math.isinf(res.total_jct)
    assert (res.assignment == -1).all() and not res.runs.any()
    assert math.isinf(brute_force(TWO_WORKERS, 3))
    # 4 slots suffice for the optimum above
    assert solve(TWO_WORKERS, horizon=4).objective == pytest.approx(7 / 3, abs=1e-9)
    # a chunk that cannot even start in time: delay 5 on the only worker
    late = instance([0], [1], [[1.0]], [[5]])
    assert solve(late, horizon=5).status == "infeasible"
    assert solve(late, horizon=6).status == "optimal"


def test_the_cloud_is_unbounded_and_starts_after_its_delay():
    # one slow edge worker (6 slots a chunk) and a cloud 2 slots away (1 slot a chunk):
    # all three chunks go to the cloud at once, each (2 - 0) / (3 * 1) = 2/3, where the
    # first one on the edge would cost (0 + 1 + ... + 5) / (3 * 6) = 15/18
    inst = instance([0], [3], [[6.0, 1.0]], [[0, 2]], cloud=[False, True])
    res = solve(inst, horizon=10)
    assert res.status == "optimal"
    assert res.assignment.tolist() == [1, 1, 1]
    assert np.flatnonzero(res.runs.any(axis=0)).tolist() == [2]
    assert res.objective == pytest.approx(3 * 2 / 3, abs=1e-9)
    check_schedule(inst, 10, res)
    # the cloud 9 slots away (9/3 = 3 a chunk): two chunks on the edge, in slots 0-5 (15/18)
    # and 6-11 (51/18); a third there, in 12-17, would cost 87/18 > 3: it goes to the cloud
    far = instance([0], [3], [[6.0, 1.0]], [[0, 9]], cloud=[False, True])
    res = solve(far, horizon=20)
    assert res.assignment.tolist() == [0, 0, 1]
    assert res.objective == pytest.approx((15 + 51) / 18 + 3, abs=1e-9)
    check_schedule(far, 20, res)


def test_release_and_delay_are_respected():
    # three jobs released at 0, 2, 3 on two workers with delays; check every constraint
    inst = instance(
        release=[0, 2, 3],
        chunks=[2, 1, 3],
        slots=[[2.0, 2.5], [1.0, np.inf], [1.5, 1.0]],
        delay=[[1, 0], [0, 0], [2, 1]],
    )
    horizon = horizon_bound(inst)
    res = solve(inst, horizon)
    assert res.status == "optimal"
    check_schedule(inst, horizon, res)
    assert res.assignment[2] == 0  # job 1 only runs on w0
    assert res.objective == pytest.approx(brute_force(inst, horizon), abs=1e-9)


def test_non_integer_slots_count_the_last_slot_at_its_share():
    # one worker, job 0 needs 1.25 slots (weight 1/1.25 a slot, its last slot at 0.25), job 1
    # one slot (weight 1): running job 0's full slot first, job 1, then job 0's sliver:
    # 0/1.25 + 1/1 + 0.25*2/1.25 = 1.4; job 0 whole first: 0 + 0.25/1.25 + 2 = 2.2;
    # job 1 first: 0 + (1 + 0.25*2)/1.25 = 1.2 (best)
    inst = instance([0, 0], [1, 1], [[1.25], [1.0]], [[0], [0]])
    res = solve(inst, horizon=3)
    assert res.objective == pytest.approx(1.2, abs=1e-9)
    assert np.flatnonzero(res.runs[1]).tolist() == [0]
    # heavier job 0 (one chunk of 1.25 slots) against a light job 1 (2 slots, weight 1/2):
    # job 0's full slot (weight 0.8) first, job 1 (0.5 a slot) next, job 0's sliver (0.2) last
    inst = instance([0, 0], [1, 1], [[1.25], [2.0]], [[0], [0]])
    res = solve(inst, horizon=4)
    assert np.flatnonzero(res.runs[0]).tolist() == [0, 3]
    assert res.objective == pytest.approx(0.25 * 3 / 1.25 + (1 + 2) / 2, abs=1e-9)
    assert res.objective == pytest.approx(brute_force(inst, 4), abs=1e-12)


@st.composite
def tiny(draw: st.DrawFn) -> tuple[Instance, int]:
    """2 jobs of 1-2 chunks on 2 edge workers, sometimes a cloud as a third column."""
    with_cloud = draw(st.booleans())
    n_w = 3 if with_cloud else 2
    choices = [1.0, 1.5, 2.0, 2.5, 3.0, math.inf]
    slots = [[draw(st.sampled_from(choices)) for _ in range(n_w)] for _ in range(2)]
    for row in slots:
        if not np.isfinite(row).any():
            row[draw(st.integers(0, n_w - 1))] = draw(st.sampled_from(choices[:-1]))
    return (
        instance(
            release=[draw(st.integers(0, 2)) for _ in range(2)],
            chunks=[draw(st.integers(1, 2)) for _ in range(2)],
            slots=slots,
            delay=[[draw(st.integers(0, 3)) for _ in range(n_w)] for _ in range(2)],
            cloud=[False, False, True] if with_cloud else None,
        ),
        draw(st.integers(1, 8)),
    )


@settings(max_examples=40, deadline=None)
@given(tiny())
def test_agrees_with_brute_force(case: tuple[Instance, int]):
    inst, horizon = case
    best = brute_force(inst, horizon)
    res = solve(inst, horizon)
    if math.isinf(best):
        assert res.status == "infeasible"
        return
    assert res.status == "optimal"
    assert res.objective == pytest.approx(best, rel=1e-6, abs=1e-9)
    check_schedule(inst, horizon, res)


@settings(max_examples=10, deadline=None)
@given(tiny())
def test_horizon_bound_does_not_cut_the_optimum(case: tuple[Instance, int]):
    inst, _ = case
    horizon = horizon_bound(inst)
    res = solve(inst, horizon)
    assert res.status == "optimal"
    assert res.objective == pytest.approx(brute_force(inst, horizon + 4), rel=1e-6, abs=1e-9)


def random_instance(seed: int, n_jobs: int, n_edge: int) -> Instance:
    """Jobs of 1-4 chunks, three worker types, servers of two workers, and a cloud."""
    rng = np.random.default_rng(seed)
    kind = rng.integers(0, 3, n_edge)
    base = rng.uniform(1.0, 4.0, n_jobs)
    slots = base[:, None] / rng.uniform(0.6, 1.4, (n_jobs, 3))[:, kind]
    slots[rng.random((n_jobs, n_edge)) < 0.2] = np.inf
    slots[:, 0] = base  # every job runs somewhere on the edge
    delay = rng.integers(0, 3, (n_jobs, (n_edge + 1) // 2))[:, np.arange(n_edge) // 2]
    return Instance(
        release=np.sort(rng.integers(0, 2 * n_jobs, n_jobs)),
        chunks=rng.integers(1, 5, n_jobs),
        slots=np.hstack([slots, base[:, None]]),
        delay=np.hstack([delay, rng.integers(8, 12, (n_jobs, 1))]),
        cloud=np.array([False] * n_edge + [True]),
    )


def test_a_small_paper_sized_case_is_solved_and_valid():
    inst = random_instance(3, n_jobs=6, n_edge=4)
    horizon = horizon_bound(inst)
    res = solve(inst, horizon)
    assert res.status == "optimal"
    check_schedule(inst, horizon, res)
    again = solve(inst, horizon)  # deterministic
    assert again.objective == res.objective
    assert (again.runs == res.runs).all()
    # a longer horizon finds nothing better
    assert solve(inst, horizon + 10).objective == pytest.approx(res.objective, rel=1e-6)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"release": np.array([-1, 1])}, "Instance.release"),
        ({"release": np.array([0.0, 1.0])}, "Instance.release"),
        ({"chunks": np.array([0, 2])}, "Instance.chunks"),
        ({"slots": np.array([[3.0, 0.0], [1.0, 1.5]])}, "Instance.slots"),
        ({"slots": np.array([[3.0, np.nan], [1.0, 1.5]])}, "Instance.slots"),
        ({"slots": np.array([[np.inf, np.inf], [1.0, 1.5]])}, "job 0 has no worker"),
        ({"delay": np.array([[0, 0]])}, "Instance.delay"),
        ({"cloud": np.array([1, 0])}, "Instance.cloud"),
    ],
)
def test_bad_instances_are_refused(change: dict[str, np.ndarray], message: str):
    fields = {
        "release": TWO_WORKERS.release,
        "chunks": TWO_WORKERS.chunks,
        "slots": TWO_WORKERS.slots,
        "delay": TWO_WORKERS.delay,
        "cloud": None,
    }
    bad = Instance(**{**fields, **change})
    with pytest.raises(ValueError, match=message):
        solve(bad, 5)
    with pytest.raises(ValueError, match=message):
        brute_force(bad, 5)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="horizon"):
        solve(TWO_WORKERS, 0)
    with pytest.raises(ValueError, match="time_limit"):
        solve(TWO_WORKERS, 5, time_limit=0.0)
