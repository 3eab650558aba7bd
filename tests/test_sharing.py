"""GPU sharing in the engine and kernel (docs/architecture.md, "GPU sharing"; SJF-BSBF paper, eq. 5-6).

Hand-checked schedules, the engine against ``tests/naive.py``'s event-by-event reference on
random scripts of shared starts, exclusive policies unchanged on a C = 2 cluster, and the
engine's refusals.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from gpusched.core.engine import Engine
from gpusched.core.jobs import prepare_jobs
from gpusched.core.policy import Decision, Start
from gpusched.core.result import RunResult
from gpusched.core.state import XI_DEFAULT
from gpusched.errors import PolicyError
from gpusched.io.cluster import ClusterSpec
from gpusched.results.metrics import job_records, summarize
from tests.helpers import make_trace, run
from tests.naive import simulate_shared


class Script:
    """Starts given in advance: ``{time: [(job, gpus, config), ...]}``; wakes at each time."""

    name = "script"
    knows_duration = False
    work_conserving = False
    needs_predictor = False

    def __init__(self, starts: dict[float, list[tuple[int, list[int]]]], xi: Any = None) -> None:
        self.starts = {t: list(v) for t, v in starts.items()}
        self.xi = xi
        if xi is not None:
            self.interference = lambda base: np.full_like(base, xi) if np.isscalar(xi) else xi

    def decide(self, view: Any, now: float) -> Decision:
        actions = []
        for t in sorted(self.starts):
            if t <= now + 1e-9:
                for entry in self.starts.pop(t):
                    job, gpus = entry[0], entry[1]
                    config = entry[2] if len(entry) > 2 else None
                    actions.append(Start(job, np.asarray(gpus, dtype=np.int64), config))
        later = [t for t in self.starts if t > now]
        return Decision(actions=actions, wake_at=min(later) if later else None)


class UnitRate:
    """A performance model that runs every job at rate 1 alone (tests add hooks to it)."""

    def rate(self, job: int, gpus: np.ndarray, config: Any = None) -> float:
        return 1.0


def replay(
    rows: list[tuple[float, int, float]],
    policy: Any,
    *,
    servers: int = 1,
    gpus: int = 1,
    capacity: int = 2,
    perf: Any = None,
) -> RunResult:
    cluster = ClusterSpec.homogeneous(servers, gpus, gpu_capacity=capacity)
    jobs = prepare_jobs(make_trace(rows), cluster)
    return Engine(jobs, cluster, policy, mode="python", perf=perf).run()


def test_partner_ends_mid_run_and_the_survivor_speeds_back_up() -> None:
    # A (100 s) alone from 0; B (30 s) joins its GPU at 10 with xi = 1.5 for both:
    # 0-10 A alone (90 s left); both at 1/1.5 until B's 30 s are done at 10 + 45 = 55,
    # when A has 90 - 30 = 60 s left; A alone again finishes at 115.
    res = replay(
        [(0.0, 1, 100.0), (10.0, 1, 30.0)], Script({0.0: [(0, [0])], 10.0: [(1, [0])]}, 1.5)
    )
    st = res.state
    assert st.job_finish.tolist() == pytest.approx([115.0, 55.0], abs=1e-9)
    rec = job_records(res)
    assert rec["shared_s"].tolist() == pytest.approx([45.0, 45.0], abs=1e-9)
    assert rec["slowdown_s"].tolist() == pytest.approx([15.0, 15.0], abs=1e-9)
    summary = summarize(res)
    assert summary["shared_gpu_s"] == pytest.approx(45.0)
    # one GPU busy from 0 to 115: utilisation 1, not the 160 / 115 of counting jobs
    assert summary["gpu_utilization"] == pytest.approx(1.0)
    assert res.timeline["shared_gpus"].max() == 1


def test_a_gang_runs_at_the_pace_of_its_slowest_gpu() -> None:
    # kinds: job 0 (2 GPUs) kind 0; job 1 on GPU 0 kind 1; job 2 on GPU 1 kind 2.
    # xi[0][1] = 1.25, xi[0][2] = 2.0: job 0 runs at 1/2 while both partners are there.
    xi = np.array([[1.0, 1.25, 2.0], [1.5, 1.0, 1.0], [3.0, 1.0, 1.0]])

    class Perf(UnitRate):
        def interference(self) -> tuple[np.ndarray, np.ndarray]:
            return np.array([0, 1, 2], dtype=np.int32), xi

    rows = [(0.0, 2, 100.0), (0.0, 1, 15.0), (0.0, 1, 40.0)]
    script = Script({0.0: [(0, [0, 1]), (1, [0]), (2, [1])]})
    res = replay(rows, script, gpus=2, perf=Perf())
    # 0-..: job 0 at 1/2 (worst partner kind 2), job 1 at 1/1.5, job 2 at 1/3.
    # job 1 ends at 22.5; job 0 still at 1/2 (job 2 stays): 0 has done 11.25.
    # job 2 ends at 120: job 0 has done 60 by then; alone it needs 40 more: 160.
    assert res.state.job_finish.tolist() == pytest.approx([160.0, 22.5, 120.0], abs=1e-9)
    assert summarize(res)["shared_gpu_s"] == pytest.approx(22.5 + 120.0)


def test_without_a_model_two_jobs_time_slice_one_gpu() -> None:
    res = replay([(0.0, 1, 10.0), (0.0, 1, 10.0)], Script({0.0: [(0, [0]), (1, [0])]}))
    assert XI_DEFAULT == 2.0
    assert res.state.job_finish.tolist() == pytest.approx([20.0, 20.0])
    assert summarize(res)["gpu_utilization"] == pytest.approx(1.0)


def test_a_job_alone_runs_at_its_solo_speed_after_sharing() -> None:
    # job 1 shares with job 0 and is preempted at 10 (no save); when it runs again its
    # rate follows its partners of that time, not the shared rate it had
    class Preempting(Script):
        def decide(self, view: Any, now: float) -> Decision:
            d = super().decide(view, now)
            if now == 10.0:
                from gpusched.core.policy import Preempt

                d.actions.append(Preempt(1))
            return d

    rows = [(0.0, 1, 100.0), (0.0, 1, 30.0)]
    res = replay(rows, Preempting({0.0: [(0, [0]), (1, [0])], 10.0: [], 100.0: [(1, [0])]}, 2.0))
    # 0-10 both at 1/2: job 0 has 95 left, job 1 25; job 0 alone from 10. At 100 job 1
    # joins it (job 0 has 5 left, at 1/2 it ends at 110); job 1 does 5 by 110 and its
    # last 20 alone at its solo rate 1: 130 (at the shared rate it would end at 150)
    st = res.state
    assert st.job_finish.tolist() == pytest.approx([110.0, 130.0])


def test_exclusive_policies_never_share_on_a_c2_cluster() -> None:
    rng = np.random.default_rng(3)
    rows = sorted(
        (float(rng.integers(0, 200)), int(rng.choice([1, 2, 4])), float(rng.integers(5, 300)))
        for _ in range(60)
    )
    for policy in ("fifo", "sjf", "srtf", "tiresias"):
        one = run(rows, policy, 2, 4)
        two = run(rows, policy, 2, 4, gpu_capacity=2)
        assert two.state.job_finish.tolist() == one.state.job_finish.tolist(), policy
        assert summarize(two)["shared_gpu_s"] == 0.0


@settings(max_examples=40, deadline=None)
@given(hs.integers(0, 2**31 - 1))
def test_engine_matches_the_naive_reference_on_random_shared_schedules(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_gpus = int(rng.integers(1, 5))
    n = int(rng.integers(1, 9))
    rows = sorted(
        (float(rng.integers(0, 30)), int(rng.integers(1, n_gpus + 1)), float(rng.uniform(1, 60)))
        for _ in range(n)
    )
    k = int(rng.integers(1, 4))
    xi = np.round(rng.uniform(1.0, 3.0, (k, k)), 3)
    kind = rng.integers(0, k, n).astype(np.int32)
    times = sorted({float(t) for t in rng.integers(0, 120, 25)} | {float(rows[0][0])})

    def choose(t: float, queued: list[int], on: list[list[int]]) -> list[tuple[int, list[int]]]:
        starts = []
        for j in queued:
            if rng.random() < 0.5:
                continue
            room = [g for g in range(n_gpus) if len(on[g]) < 2]
            g = rows[j][1]
            if len(room) >= g:
                gpus = sorted(rng.choice(room, g, replace=False).tolist())
                for gpu in gpus:
                    on[gpu].append(j)
                starts.append((j, gpus))
        return starts

    script, want, want_shared = simulate_shared(
        rows, n_gpus, 2, xi.tolist(), kind.tolist(), times, choose
    )
    starts: dict[float, list[tuple[int, list[int]]]] = {}
    for t, j, gpus in script:
        starts.setdefault(t, []).append((j, gpus))
    if not starts:
        return

    class Perf(UnitRate):
        def interference(self) -> tuple[np.ndarray, np.ndarray]:
            return kind, xi

    started = [r["start"] is not None for r in want]
    sub = [i for i in range(n) if started[i]]
    # replay only the started jobs (the others never run in the script)
    index = {j: i for i, j in enumerate(sub)}
    rows_sub = [rows[j] for j in sub]
    kind_sub = kind[sub]

    class SubPerf(Perf):
        def interference(self) -> tuple[np.ndarray, np.ndarray]:
            return kind_sub, xi

    script_sub = {t: [(index[j], g) for j, g in v] for t, v in starts.items()}
    res = replay(rows_sub, Script(script_sub), gpus=n_gpus, perf=SubPerf())
    got = res.state
    for i, j in enumerate(sub):
        assert got.job_first_start[i] == pytest.approx(want[j]["start"])
        assert got.job_finish[i] == pytest.approx(want[j]["finish"], abs=1e-6)
        assert got.job_shared_s[i] == pytest.approx(want[j]["shared"], abs=1e-6)
    assert summarize(res)["shared_gpu_s"] == pytest.approx(want_shared, abs=1e-6)
    assert summarize(res)["gpu_utilization"] <= 1.0 + 1e-9


def test_the_engine_refuses_a_third_job_on_a_c2_gpu() -> None:
    rows = [(0.0, 1, 10.0)] * 3
    with pytest.raises(PolicyError, match="GPU 0 is already allocated"):
        replay(rows, Script({0.0: [(0, [0]), (1, [0]), (2, [0])]}))


def test_a_config_needs_a_model_that_reads_it() -> None:
    with pytest.raises(PolicyError, match="no performance model reads one"):
        replay([(0.0, 1, 10.0)], Script({0.0: [(0, [0], 8)]}))


def test_a_performance_model_may_refuse_a_shared_start() -> None:
    class Perf(UnitRate):
        def check_start(self, job: int, gpus: Any, config: Any, partners: list) -> str | None:
            return "does not fit in GPU memory beside job 0" if partners else None

    with pytest.raises(PolicyError, match="does not fit in GPU memory beside job 0"):
        replay([(0.0, 1, 10.0)] * 2, Script({0.0: [(0, [0]), (1, [0], 4)]}), perf=Perf())


def test_a_policy_interference_must_be_a_matrix_of_ratios() -> None:
    with pytest.raises(PolicyError, match="matrix of finite ratios >= 1"):
        replay([(0.0, 1, 10.0)], Script({0.0: [(0, [0])]}, xi=0.5))


def test_memory_is_checked_gpu_by_gpu_beside_the_jobs_there() -> None:
    # a 2-GPU gang joins GPU 0 (job 0, 6 GB) and GPU 1 (job 1, 6 GB): each GPU holds its
    # partner and it (6 + 4 <= 11), though the partners together take 12 GB
    seen: list[tuple[list[int], list[int]]] = []

    class Perf(UnitRate):
        gb = {0: 6.0, 1: 6.0, 2: 4.0}

        def check_start(self, job: int, gpus: Any, config: Any, partners: list) -> str | None:
            seen.append((sorted(np.asarray(gpus).tolist()), [p for p, _ in partners]))
            need = self.gb[job] + sum(self.gb[p] for p, _ in partners)
            return f"needs {need} GB" if need > 11 else None

    rows = [(0.0, 1, 10.0), (0.0, 1, 10.0), (0.0, 2, 10.0)]
    replay(rows, Script({0.0: [(0, [0]), (1, [1]), (2, [0, 1])]}), gpus=2, perf=Perf())
    assert ([0, 1], [0]) not in seen
    assert ([0], [0]) in seen and ([1], [1]) in seen
    Perf.gb[2] = 6.0
    with pytest.raises(PolicyError, match="needs 12.0 GB"):
        replay(rows, Script({0.0: [(0, [0]), (1, [1]), (2, [0, 1])]}), gpus=2, perf=Perf())


def test_a_config_stays_for_the_jobs_lifetime() -> None:
    from gpusched.core.policy import Preempt

    class Perf:
        def rate(self, job: int, gpus: np.ndarray, config: Any = None) -> float:
            return 1.0 if config is None else 0.5

        def check_start(self, job: int, gpus: Any, config: Any, partners: list) -> str | None:
            return None

    class Restart(Script):
        def decide(self, view: Any, now: float) -> Decision:
            d = super().decide(view, now)
            if now == 5.0:
                d.actions.append(Preempt(0))
            return d

    rows = [(0.0, 1, 100.0)]
    # restarted without a config, it keeps the one it started with: rate 0.5 throughout
    res = replay(rows, Restart({0.0: [(0, [0], 4)], 5.0: [], 6.0: [(0, [0])]}), perf=Perf())
    assert res.state.job_finish[0] == pytest.approx(6.0 + (100.0 - 2.5) / 0.5)
    # started at its default, a later start may not bring a config
    with pytest.raises(PolicyError, match="differs from the None it first started with"):
        replay(rows, Restart({0.0: [(0, [0])], 5.0: [], 6.0: [(0, [0], 4)]}), perf=Perf())
