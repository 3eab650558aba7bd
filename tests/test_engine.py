"""Engine behaviour: hand-checked golden schedules, action validation, horizons, determinism.

The expected times in each golden test are worked out by hand in its comments.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gpusched.core.engine import Engine
from gpusched.core.jobs import prepare_jobs
from gpusched.core.policy import Decision, Preempt, Start
from gpusched.core.state import RUNNING
from gpusched.errors import InvariantError, PolicyError, TraceError
from gpusched.io.cluster import ClusterSpec
from gpusched.results.metrics import summarize
from tests.helpers import Scripted, make_trace, run


def times(res):
    st = res.state
    return st.job_first_start.tolist(), st.job_finish.tolist(), st.job_n_preempt.tolist()


# A(0 s, 3 GPUs, 10 s), B(1 s, 2 GPUs, 5 s), C(2 s, 1 GPU, 3 s) on one 4-GPU server.
HOL = [(0, 3, 10), (1, 2, 5), (2, 1, 3)]


@pytest.mark.parametrize("mode", ["fused", "python"])
def test_fifo_blocks_behind_the_head(mode):
    # A runs 0-10. B needs 2 of the 1 idle GPU: blocked, and C waits behind it.
    # At 10 A leaves: B runs 10-15, C runs 10-13.
    start, finish, pre = times(run(HOL, "fifo", mode=mode))
    assert start == [0, 10, 10]
    assert finish == [10, 15, 13]
    assert pre == [0, 0, 0]


@pytest.mark.parametrize("mode", ["fused", "python"])
def test_fifo_backfill_lets_small_jobs_pass(mode):
    # Same trace with backfill: C fits the idle GPU at its arrival and runs 2-5.
    start, finish, _ = times(run(HOL, "fifo", params=["backfill=true"], mode=mode))
    assert start == [0, 10, 2]
    assert finish == [10, 15, 5]


# A(0 s, 2 GPUs, 10 s), B(3 s, 2 GPUs, 2 s) on one 2-GPU server.
PAIR = [(0, 2, 10), (3, 2, 2)]


@pytest.mark.parametrize("mode", ["fused", "python"])
def test_srtf_preempts_longer_remaining(mode):
    # At 3 A has 7 s left, B 2 s: B takes the GPUs 3-5, A resumes at 5 and ends at 5 + 7 = 12.
    start, finish, pre = times(run(PAIR, "srtf", 1, 2, mode=mode))
    assert start == [0, 3]
    assert finish == [12, 5]
    assert pre == [1, 0]


@pytest.mark.parametrize("mode", ["fused", "python"])
def test_sjf_never_preempts(mode):
    # B waits for A to finish at 10 and runs 10-12.
    start, finish, pre = times(run(PAIR, "sjf", 1, 2, mode=mode))
    assert start == [0, 10]
    assert finish == [10, 12]
    assert pre == [0, 0]


@pytest.mark.parametrize("mode", ["fused", "python"])
def test_srtf_with_4s_slots(mode):
    # Slot 4 s: B arrives at 3 but is seen at 4; A has 6 s left, B 2 s: B runs 4-6 (exact).
    # GPUs freed at 6 are seen at the next boundary, 8: A resumes at 8 and ends at 14.
    start, finish, _ = times(run(PAIR, "srtf", 1, 2, slot=4, mode=mode))
    assert start == [0, 4]
    assert finish == [14, 6]


@pytest.mark.parametrize("mode", ["fused", "python"])
def test_tiresias_demotes_at_threshold(mode):
    # One GPU, thresholds 5 GPU-s. A(0, 1 GPU, 20 s) runs; B(1 s, 1 GPU, 3 s) arrives at
    # level 0 but A (level 0, holding) keeps its GPU. A reaches 5 GPU-s at 5: level 1, and
    # B (level 0) preempts it, running 5-8. A resumes at 8 with 15 s left: ends at 23.
    start, finish, pre = times(
        run([(0, 1, 20), (1, 1, 3)], "tiresias", 1, 1, params=["thresholds=5"], mode=mode)
    )
    assert start == [0, 5]
    assert finish == [23, 8]
    assert pre == [1, 0]


@pytest.mark.parametrize("mode", ["fused", "python"])
@pytest.mark.parametrize("starve", [0, 1])
def test_tiresias_starvation_promotes(starve, mode):
    # One GPU, threshold 2 GPU-s (levels [0, 2), [2, inf)). A = (0, 10 s) and 2 s jobs
    # B1..B4 at 2, 4, 6, 8 (each ends as it reaches 2 GPU-s). Lists of levels 0, 1.
    # t=0: A runs. t=2: A (2 GPU-s) to level 1; B1 runs 2-4; A preempted (1), ran 2 s.
    # starve=0: [B2] [A] at 4, B2 runs 4-6; B3 6-8; B4 8-10; A resumes 10-18.
    # starve=1: A, queued since 2, has waited 1 x 2 s at 4: back to level 0 (service
    #   restarts), behind B2 who arrived at 4: [B2, A] []. B2 runs 4-6.
    #   t=6: [A, B3] []: A runs 6-8, to 2 GPU-s again. t=8: A joins the back of level 1,
    #   [B3, B4] [A]: B3 runs 8-10, A preempted (2), due at 8 + 2 = 10.
    #   t=10: promoted behind B4: B4 runs 10-12. t=12: A runs its last 6 s, to 18.
    jobs = [(0, 1, 10)] + [(t, 1, 2) for t in (2, 4, 6, 8)]
    res = run(jobs, "tiresias", 1, 1, params=["thresholds=2", f"starve={starve}"], mode=mode)
    assert res.mode == mode  # the kernel applies the starvation rule too
    start, finish, pre = times(res)
    if starve:
        assert start == [0, 2, 4, 8, 10] and finish == [18, 4, 6, 10, 12] and pre[0] == 2
    else:
        assert start == [0, 2, 4, 6, 8] and finish == [18, 4, 6, 8, 10] and pre[0] == 1
    assert np.allclose(res.state.job_executed, [10, 2, 2, 2, 2])


def test_spread_across_servers_and_consolidation():
    # Two servers x 4 GPUs. j0 (3 GPUs) goes to server 0 (best fit), j1 (2 GPUs) to
    # server 1, j2 (1 GPU) best-fits server 0's last GPU, j3 (2 GPUs) fits server 1.
    res = run([(0, 3, 10), (0, 2, 10), (0, 1, 10), (0, 2, 10)], "fifo", 2, 4)
    assert res.state.job_first_start.tolist() == [0, 0, 0, 0]
    # 6 GPUs on 2 x 4 must spread over both servers
    res = run([(0, 6, 10)], "fifo", 2, 4)
    assert res.state.job_finish.tolist() == [10]
    with pytest.raises(TraceError, match="drop-oversized"):
        run([(0, 6, 10)], "fifo", 2, 4, allow_spread=False)


def test_oversized_jobs_are_counted_or_dropped():
    cluster = ClusterSpec.homogeneous(1, 4)
    trace = make_trace([(0, 1, 5), (1, 8, 5), (2, 16, 5)], source="t.csv")
    with pytest.raises(TraceError) as err:
        prepare_jobs(trace, cluster)
    assert "t.csv:3" in str(err.value) and "2 job(s)" in str(err.value) and "'j1'" in str(err.value)
    jobs = prepare_jobs(trace, cluster, drop_oversized=True)
    assert len(jobs) == 1 and jobs.n_dropped == 2


def test_until_reports_unfinished_jobs():
    cluster = ClusterSpec.homogeneous(1, 1)
    jobs = prepare_jobs(make_trace([(0, 1, 10), (0, 1, 10)]), cluster)
    from tests.helpers import load_policy_class, make_policy

    res = Engine(jobs, cluster, make_policy(load_policy_class("fifo"), {}, 0), until_s=15).run()
    s = summarize(res)
    assert s["n_finished"] == 1 and s["n_unfinished"] == 1
    assert res.stopped_at == 15
    assert res.state.job_executed.tolist() == [10, 5]


# --- invalid actions -------------------------------------------------------------------


def scripted(decisions, rows=((0, 2, 10), (0, 2, 10), (50, 1, 1))):
    cluster = ClusterSpec.homogeneous(1, 2)
    jobs = prepare_jobs(make_trace(list(rows)), cluster)
    return Engine(jobs, cluster, Scripted(decisions))


@pytest.mark.parametrize(
    ("decision", "message"),
    [
        (Decision(actions=[Start(7)]), "unknown job index 7"),
        (Decision(actions=[Start(2)]), "before its arrival"),
        (Decision(actions=[Start(0), Start(1)]), "only 0 are idle"),
        (Decision(actions=[Start(0, np.array([0, 0]))]), "lists a GPU twice"),
        (Decision(actions=[Start(0, np.array([0, 5]))]), "unknown GPU index"),
        (Decision(actions=[Start(0, np.array([0]))]), "exactly 2 GPU"),
        (Decision(actions=[Preempt(0)]), "is queued"),
        (Decision(order=np.array([0, 0])), "twice"),
        (Decision(order=np.array([2])), "before its arrival"),
        (Decision(wake_at=0.0), "not after now"),
        ("start j0", "must return a Decision"),
    ],
)
def test_invalid_actions_raise_policy_error(decision, message):
    engine = scripted([decision])
    with pytest.raises(PolicyError, match=message) as err:
        engine.run()
    assert "policy 'scripted' at t=0 s" in str(err.value)


def test_double_allocation_is_refused():
    engine = scripted([Decision(actions=[Start(0, np.array([0, 1])), Start(1, np.array([1, 0]))])])
    with pytest.raises(
        PolicyError, match=r"job 'j1' \(index 1\) GPU 1 is already allocated \(to job 'j0'\)"
    ):
        engine.run()


def test_finished_job_cannot_be_started_again():
    engine = scripted([Decision(actions=[Start(0)]), Decision(), Decision(actions=[Start(0)])])
    with pytest.raises(PolicyError, match="is finished"):
        engine.run()


def test_a_policy_that_never_starts_anything_is_reported_stuck():
    engine = scripted([])
    with pytest.raises(PolicyError, match="can never finish"):
        engine.run()


def test_view_hides_durations_from_policies_that_do_not_know_them():
    class Peeker(Scripted):
        def decide(self, view, now):
            return Decision(order=np.argsort(view.job_duration))

    cluster = ClusterSpec.homogeneous(1, 2)
    engine = Engine(prepare_jobs(make_trace([(0, 1, 1)]), cluster), cluster, Peeker([]))
    with pytest.raises(PolicyError, match="knows_duration = False"):
        engine.run()


def test_invariant_checker_catches_lost_work():
    res = run([(0, 1, 5)], "fifo")
    res.state.job_executed[0] = 4.0
    from gpusched.core.checks import check_invariants

    with pytest.raises(InvariantError, match="work not conserved"):
        check_invariants(res.state, res.timeline, 1, stopped=False)


def test_same_inputs_same_results_bit_for_bit():
    rng = np.random.default_rng(3)
    rows = [
        (float(t), int(g), float(d))
        for t, g, d in zip(
            np.sort(rng.uniform(0, 500, 60)),
            rng.choice([1, 2, 4], 60),
            rng.uniform(1, 90, 60),
            strict=True,
        )
    ]
    for policy in ("fifo", "sjf", "srtf", "tiresias"):
        a = run(rows, policy, 2, 4)
        b = run(rows, policy, 2, 4)
        assert a.state.job_finish.tobytes() == b.state.job_finish.tobytes()
        assert a.timeline["time_s"].tobytes() == b.timeline["time_s"].tobytes()


@pytest.mark.parametrize(
    ("slot", "submit", "start"), [(0.5, 1e-9, 0.0), (1.0, 1e-10, 0.0), (1.0, 2e-9, 1.0)]
)
def test_slot_boundary_tolerance_is_absolute(slot, submit, start):
    # an event within 1e-9 s after a boundary belongs to that boundary, as arrivals do
    res = run([(submit, 1, 1.0)], "fifo", 1, 1, slot=slot)
    assert res.state.job_first_start.tolist() == [start]


# --- a start onto GPUs still saving (docs/architecture.md, "Job lifecycle") ---------------


def saving_engine(decisions, rows=((0, 1, 100), (20, 1, 30), (21, 1, 5)), save=(4.0, 4.0, 4.0)):
    cluster = ClusterSpec.homogeneous(1, 1)
    jobs = prepare_jobs(make_trace(list(rows)), cluster)
    n = len(rows)
    return Engine(
        jobs, cluster, Scripted(decisions), load_s=np.zeros(n), save_s=np.asarray(save[:n])
    )


def test_a_start_onto_a_saving_gpu_is_honoured_when_the_save_ends():
    # 1 GPU, no loads, saves of 4 s. t=0: j0 starts. t=20: j1 arrives; the policy preempts
    # j0 (it trained 20 s, so it saves 20-24 holding the GPU) and starts j1 on GPU 0: the
    # start is pending. t=21: j2 arrives; nothing asked; j1 is still pending, queued.
    # t=24: the save ends; the engine starts j1 before calling the policy: j1 runs 24-54.
    seen = {}

    class Watcher(Scripted):
        def decide(self, view, now):
            seen[now] = (view.pending.tolist(), view.job_status[1])
            return super().decide(view, now)

    decisions = [
        Decision(actions=[Start(0)]),
        Decision(actions=[Preempt(0), Start(1, np.array([0]))]),
        Decision(),
        Decision(),
        Decision(actions=[Start(2)]),  # t=54: j1 done
        Decision(actions=[Start(0)]),  # t=59: j2 done
    ]
    cluster = ClusterSpec.homogeneous(1, 1)
    jobs = prepare_jobs(make_trace([(0, 1, 100), (20, 1, 30), (21, 1, 5)]), cluster)
    res = Engine(
        jobs, cluster, Watcher(decisions), load_s=np.zeros(3), save_s=np.full(3, 4.0)
    ).run()
    assert seen[21.0][0] == [1]  # pending, still queued
    assert seen[24.0][0] == [] and seen[24.0][1] == RUNNING  # started before decide at 24
    s = res.state
    assert s.job_first_start.tolist() == [0.0, 24.0, 54.0]
    assert s.job_finish.tolist() == [59.0 + 80.0, 54.0, 59.0]
    assert s.job_wait_s[1] == 4.0  # waited for the save: 20-24
    assert s.job_save_spent_s[0] == 4.0


def test_a_pending_start_cannot_be_asked_twice():
    engine = saving_engine(
        [
            Decision(actions=[Start(0)]),
            Decision(actions=[Preempt(0), Start(1, np.array([0]))]),
            Decision(actions=[Start(1, np.array([0]))]),
        ]
    )
    with pytest.raises(PolicyError, match="already has a start waiting for saves to end"):
        engine.run()


def test_a_start_onto_a_gpu_held_by_a_running_job_is_still_refused():
    engine = saving_engine(
        [Decision(actions=[Start(0)]), Decision(actions=[Start(1, np.array([0]))])]
    )
    with pytest.raises(PolicyError, match="GPU 0 is already allocated"):
        engine.run()


def test_a_gpu_promised_to_a_pending_start_cannot_be_promised_again():
    engine = saving_engine(
        [
            Decision(actions=[Start(0)]),
            Decision(actions=[Preempt(0), Start(1, np.array([0]))]),
            Decision(actions=[Start(2, np.array([0]))]),
        ]
    )
    with pytest.raises(PolicyError, match=r"GPU 0 is promised to job 'j1'"):
        engine.run()


def test_a_pending_start_whose_idle_gpu_an_order_fill_took_is_a_policy_error():
    # 1 server x 2 GPUs: j0 (1 GPU) runs on GPU 0; at 20 j1 (2 GPUs) is started onto GPU 0
    # (j0 saving 20-24) and the idle GPU 1: pending. At 21 the policy's order fill puts j2
    # on GPU 1, the GPU promised to j1: when the save ends the engine cannot start j1.
    cluster = ClusterSpec.homogeneous(1, 2)
    jobs = prepare_jobs(make_trace([(0, 1, 100), (20, 2, 30), (21, 1, 50)]), cluster)
    decisions = [
        Decision(actions=[Start(0, np.array([0]))]),
        Decision(actions=[Preempt(0), Start(1, np.array([0, 1]))]),
        Decision(order=np.array([2])),
    ]
    engine = Engine(jobs, cluster, Scripted(decisions), load_s=np.zeros(3), save_s=np.full(3, 4.0))
    with pytest.raises(PolicyError, match=r"t=24 s: job 'j1'.*found one taken by job 'j2'"):
        engine.run()


def test_write_csv_text_per_value(tmp_path):
    # floats exactly (repr), NaN empty, ints and text as they are, column by column
    from gpusched.io.tables import write_csv_text as write_csv

    cols = {
        "job_id": np.array(["a", "b,c", "d"], dtype=object),
        "n": np.array([1, 2, 3]),
        "x": np.array([0.1 + 0.2, np.nan, 3.0]),
        "y": np.array([np.inf, 1e-20, -0.5]),
    }
    write_csv(tmp_path / "t.csv", cols)
    assert (tmp_path / "t.csv").read_text().splitlines() == [
        "job_id,n,x,y",
        "a,1,0.30000000000000004,inf",
        '"b,c",2,,1e-20',
        "d,3,3.0,-0.5",
    ]


class _Noting(Scripted):
    """Starts both jobs, then says something about the run (or fails to)."""

    def __init__(self, said):
        super().__init__([Decision(actions=[Start(0, np.array([0])), Start(1, np.array([1]))])])
        self.said = said

    def notes(self):
        if isinstance(self.said, Exception):
            raise self.said
        return self.said


def test_a_policys_notes_follow_the_traces_in_the_result_and_the_manifest():
    from gpusched.results.metrics import manifest, policy_notes

    cluster = ClusterSpec.homogeneous(1, 2)
    jobs = prepare_jobs(make_trace([(0, 1, 10), (0, 1, 5)]), cluster)
    jobs = dataclasses.replace(jobs, notes=("the trace's own",))
    res = Engine(jobs, cluster, _Noting(["2 jobs seen", "all done"])).run()
    said = ("the trace's own", "scripted: 2 jobs seen", "scripted: all done")
    assert (*res.jobs.notes, *policy_notes(res)) == said
    assert manifest(res, None)["notes"] == list(said)
    assert res.jobs.notes == jobs.notes == ("the trace's own",)  # the trace's, kept apart
    quiet = Engine(jobs, cluster, _Noting([])).run()
    assert quiet.jobs.notes == ("the trace's own",) and policy_notes(quiet) == []


def test_a_failing_notes_hook_is_a_policy_error():
    cluster = ClusterSpec.homogeneous(1, 2)
    jobs = prepare_jobs(make_trace([(0, 1, 10), (0, 1, 5)]), cluster)
    with pytest.raises(PolicyError, match="policy 'scripted'.*notes"):
        Engine(jobs, cluster, _Noting(ValueError("no"))).run()


@pytest.mark.parametrize(("params", "said"), [({}, ":"), ({"x": 1}, " with these parameters:")])
def test_fused_engine_on_a_policy_without_a_fused_path(params, said):
    cluster = ClusterSpec.homogeneous(1, 2)
    jobs = prepare_jobs(make_trace([(0, 1, 10)]), cluster)
    with pytest.raises(PolicyError) as err:
        Engine(jobs, cluster, Scripted([]), mode="fused", params=params)
    assert str(err.value) == (
        f"policy 'scripted' has no fused kernel path{said} run it with --engine python or auto "
        "(its decide() at each decision)"
    )


def test_notes_that_are_not_a_list_are_a_policy_error():
    cluster = ClusterSpec.homogeneous(1, 2)
    jobs = prepare_jobs(make_trace([(0, 1, 10), (0, 1, 5)]), cluster)
    with pytest.raises(PolicyError, match="notes\\(\\) must return a list of strings, got int"):
        Engine(jobs, cluster, _Noting(3)).run()


class _Summing(Scripted):
    """Starts both jobs, then returns ``tables`` from its summary() hook."""

    def __init__(self, tables):
        super().__init__([Decision(actions=[Start(0, np.array([0])), Start(1, np.array([1]))])])
        self.tables = tables

    def summary(self):
        return self.tables


@pytest.mark.parametrize(
    ("tables", "needle"),
    [
        ([1, 2], "must return a dict of the policy's own tables"),
        ({"status": "converged"}, "gives 'status' a str; each value must be a table"),
        ({"": {"a": 1}}, "names a table ''"),
        ({"a.b": {"a": 1}}, "names a table 'a.b'"),
        ({3: {"a": 1}}, "names a table 3"),
    ],
)
def test_a_policys_summary_must_be_tables_of_its_own(tables, needle):
    # a scalar named like a fixed column (status, trace, a parameter) replaced that
    # column of a sweep's results.csv; its tables become name.key columns instead
    cluster = ClusterSpec.homogeneous(1, 2)
    jobs = prepare_jobs(make_trace([(0, 1, 10), (0, 1, 5)]), cluster)
    with pytest.raises(PolicyError, match="policy 'scripted': summary\\(\\)") as info:
        Engine(jobs, cluster, _Summing(tables)).run()
    assert needle in str(info.value)


def test_a_policys_summary_table_is_kept_and_may_not_take_gpuscheds_names():
    from gpusched.results.metrics import flat_summary, summarize

    cluster = ClusterSpec.homogeneous(1, 2)
    jobs = prepare_jobs(make_trace([(0, 1, 10), (0, 1, 5)]), cluster)
    res = Engine(jobs, cluster, _Summing({"mine": {"steps": 2}})).run()
    assert flat_summary(summarize(res))["mine.steps"] == 2
    taken = Engine(jobs, cluster, _Summing({"n_jobs": {"steps": 2}})).run()
    with pytest.raises(PolicyError, match="names a table 'n_jobs', which gpusched's own"):
        summarize(taken)
