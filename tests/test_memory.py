"""What a run does to keep its memory low changes no result: the timeline held as one
chunk, the invariants checked in slices, the kernel's working arrays dropped after the
run (issue 33)."""

from __future__ import annotations

import numpy as np
import pytest

from gpusched.core import checks
from gpusched.core import engine as engine_mod
from gpusched.core.checks import check_invariants
from gpusched.core.state import SCRATCH_FIELDS, without_scratch
from gpusched.errors import InvariantError
from gpusched.experiments.run import build_engine, phase_times
from gpusched.results.metrics import summarize, write_results
from tests.helpers import run


def _rows(n: int, seed: int) -> list[tuple[float, int, float]]:
    rng = np.random.default_rng(seed)
    submit = np.cumsum(rng.exponential(3.0, n))
    return [
        (float(t), int(g), float(d))
        for t, g, d in zip(
            submit, rng.choice([1, 2, 4], n), rng.integers(1, 60, n).astype(float), strict=True
        )
    ]


@pytest.mark.parametrize("mode", ["fused", "python"])
@pytest.mark.parametrize("policy", ["fifo", "srtf", "tiresias"])
def test_the_timeline_read_while_running_is_the_timeline_of_a_straight_run(
    monkeypatch: pytest.MonkeyPatch, mode: str, policy: str
) -> None:
    rows = _rows(300, 7)
    straight = run(rows, policy, 2, 4, mode=mode)  # one chunk: no join
    assert len(straight.timeline["time_s"]) < engine_mod._CHUNK
    # small chunks, so that the run fills several and the buffer is folded in mid-chunk
    monkeypatch.setattr(engine_mod, "_CHUNK", 16)

    from gpusched.core.engine import Engine
    from gpusched.core.jobs import prepare_jobs
    from gpusched.core.registry import load_policy_class, make_policy
    from gpusched.io.cluster import ClusterSpec
    from tests.helpers import make_trace

    cluster = ClusterSpec.homogeneous(2, 4)
    pol = make_policy(load_policy_class(policy), {}, 0)
    eng = Engine(prepare_jobs(make_trace(rows), cluster), cluster, pol, slot_s=1.0, mode=mode)
    seen = []
    while not eng.finished:
        eng.step(7)
        seen.append({k: v.copy() for k, v in eng.timeline().items()})
    stepped = eng.result()
    assert set(stepped.timeline) == set(straight.timeline)
    for k, v in straight.timeline.items():
        np.testing.assert_array_equal(stepped.timeline[k], v)
        assert stepped.timeline[k].dtype == v.dtype
    for early in seen:  # each read is a prefix of the whole
        for k, v in early.items():
            np.testing.assert_array_equal(v, straight.timeline[k][: len(v)])
    np.testing.assert_array_equal(stepped.state.job_finish, straight.state.job_finish)


def test_a_broken_rule_in_a_later_slice_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checks, "_CHECK_ROWS", 4)
    res = run(_rows(30, 1), "fifo", 2, 4)
    check_invariants(res.state, res.timeline, 1, stopped=False)  # as it ran: fine
    for field, value, message in [
        ("job_executed", lambda x: x - 1.0, "work not conserved"),
        ("job_wait_s", lambda x: x + 1.0, "is not its JCT"),
        ("job_first_start", lambda x: -1.0, "started before it was submitted"),
    ]:
        arr = getattr(res.state, field)
        old = arr[21]
        arr[21] = value(old)  # the sixth slice of four jobs
        with pytest.raises(InvariantError, match=message):
            check_invariants(res.state, res.timeline, 1, stopped=False)
        arr[21] = old


@pytest.mark.parametrize("policy", ["fifo", "srtf", "tiresias", "sjf-bsbf"])
def test_results_read_no_working_array(tmp_path, policy: str) -> None:
    from gpusched.io.trace import write_trace
    from gpusched.workloads import build_workload

    trace = tmp_path / "w.csv"
    write_trace(build_workload("sjf-bsbf-testbed", 2), trace)
    engine, path = build_engine(str(trace), policy, cluster="testbed-4x4", events=True)
    res = engine.run()
    full = tmp_path / "full"
    write_results(res, full, str(path), "csv")
    slim_state = without_scratch(res.state)
    for f in SCRATCH_FIELDS:
        assert getattr(slim_state, f).size == 0
        assert getattr(slim_state, f).dtype == getattr(res.state, f).dtype
    res.state = slim_state
    slim = tmp_path / "slim"
    write_results(res, slim, str(path), "csv")
    for name in ("jobs.csv", "timeline.csv", "events.csv"):
        assert (slim / name).read_bytes() == (full / name).read_bytes()
    a, b = summarize(res), (full / "summary.json").read_text()
    a.pop("wall_s")
    import json

    b_dict = json.loads(b)
    b_dict.pop("wall_s")
    assert json.loads(json.dumps(a)) == b_dict


def test_zero_phase_times_are_positive_zeros() -> None:
    from gpusched.core.jobs import prepare_jobs
    from gpusched.io.cluster import ClusterSpec
    from tests.helpers import make_trace

    jobs = prepare_jobs(make_trace(_rows(10, 2)), ClusterSpec.homogeneous(2, 4))
    load, save = phase_times(jobs, 0.0, 0.0)
    for a in (load, save):
        assert a.dtype == np.float64 and a.shape == (10,)
        assert not a.any() and not np.signbit(a).any()
    load, save = phase_times(jobs, 2.5, 0.0)
    assert (load == 2.5).all() and not save.any()
