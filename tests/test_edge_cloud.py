"""Jobs made of data chunks on typed workers (gpusched.core.tasks) and the edge-cloud policies.

Hand-checked schedules, the engine's rules (worker type, ready time, no migration, no
preemption in the cloud, one PS per running job) and property tests over random small
edge-cloud instances for every policy of the family.
"""

from __future__ import annotations

import csv
import tempfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusched.algorithms.edge_cloud import ChunkRows
from gpusched.core.policy import Decision, Dispatch, HostPS, Preempt, Start
from gpusched.core.registry import load_policy_class
from gpusched.core.state import FINISHED
from gpusched.errors import ClusterError, GpuschedError, PolicyError, TraceError
from gpusched.experiments.run import build_engine, replay

TASK_POLICIES = ["a-online", "a-online-e", "srtf", "tiresias-l", "batchsche"]
COLUMNS = [
    "job_id",
    "submit_time",
    "num_gpus",
    "chunks",
    "batches",
    "epochs",
    "worker_type",
    "batch_time",
    "update_time",
    "grad_mb",
    "bw_mbps",
    "gang_workers",
]


def cluster_toml(
    edge: list[tuple[int, dict[str, int], int]],
    cloud_delay: float | None,
    cloud: str = "unbounded = true\n",
) -> str:
    """Edge servers as (delay, workers, ps), and a cloud unless None (``cloud``: its kind's
    keys; unbounded by default)."""
    out = ['[cluster]\nname = "ec"\n']
    for delay, workers, ps in edge:
        table = ", ".join(f"{k} = {v}" for k, v in workers.items())
        out.append(
            f'[[servers]]\ncount = 1\ngpus = 1\ngpu_type = "g"\ntier = "edge"\n'
            f"delay_s = {delay}\nworkers = {{ {table} }}\nps = {ps}\n"
        )
    if cloud_delay is not None:
        out.append(
            f'[[servers]]\ncount = 1\ngpus = 0\ngpu_type = "c"\ntier = "cloud"\n'
            f"delay_s = {cloud_delay}\n" + cloud
        )
    return "\n".join(out)


def job(jid: str, submit: float, chunks: int, kind: str, slots: float, **kw: float) -> dict:
    """A chunk job whose chunk trains ``slots`` slots wholly in the cloud (E = B = 1,
    m = slots, G = 0) and ``slots + comm`` on the edge (grad_mb chosen for ``comm``)."""
    comm = kw.get("comm", 0.0)
    return {
        "job_id": jid,
        "submit_time": submit,
        "num_gpus": 1,
        "chunks": chunks,
        "batches": 1,
        "epochs": 1,
        "worker_type": kind,
        "batch_time": slots,
        "update_time": 0,
        "grad_mb": comm * 1000 / 16,  # 2 q 8 / b with b = 1000 Mbit/s: comm slots
        "bw_mbps": 1000,
        "gang_workers": int(kw.get("gang", 1)),
    }


def write_case(folder: Path, rows: list[dict], toml: str) -> tuple[str, str]:
    trace = folder / "t.csv"
    with trace.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    cluster = folder / "c.toml"
    cluster.write_text(toml)
    return str(trace), str(cluster)


def run_case(tmp: Path, rows: list[dict], toml: str, policy: str):
    trace, cluster = write_case(tmp, rows, toml)
    return replay(trace, policy, cluster=cluster)


# --- eq. 5 by hand ---------------------------------------------------------------------


def eq5_case(holder: int = -1, cloud: bool = False, queued: bool = True):
    """A policy and view for eq. 5 by hand: worker 0 (server delay 2) holds chunk 0 of job
    A (HAPRF key 8; 5 s of work left at rate 0.5: p̂ = 10) and chunk 1 of job B (key 100;
    D_B = 4) in its queue; job j (tasks 5-6, D_j = 2)."""
    pol = load_policy_class("a-online")()
    tv = SimpleNamespace(
        first=np.array([0, 1, 5, 7]),  # A: task 0; B: tasks 1-4; j: tasks 5-6
        parent=np.array([0, 1, 1, 1, 1, 2, 2]),
        server_delay=np.array([2.0]),
        worker_server=np.array([0]),
        rate=lambda k, zeta: 0.5,
    )
    view = SimpleNamespace(
        tasks=tv,
        job_remaining=np.array([5.0, 0, 9.0, 0, 0, 0, 0]),
        gpu_job=np.array([[holder]]),
        gpu_n_jobs=np.array([int(holder >= 0)]),
    )
    pol.work_of = np.array([8.0, 100.0, 12.0])
    pol.wholly = np.zeros(3, dtype=bool)
    pol.rate0 = pol.rate1 = np.full(3, 0.5)
    pol.inv_d = np.array([1.0, 0.25, 0.5])
    pol.in_cloud = np.array([cloud])
    pol.w_delay = np.array([2.0])
    pol.parent = tv.parent
    pol.rows = ChunkRows(np.array([0]), 1, 7)
    if queued:
        pol.rows.insert(0, 2)  # (in no order: the sums do not need one)
        pol.rows.insert(0, 0)
    return pol, view


def q_on(pol, view, fast: bool) -> float:
    if fast:
        return float(pol.q_many(view, 2, [0], 6.0, 12.0)[0])
    return pol.calculate_q(view, 2, 0, 6.0, 12.0)


@pytest.mark.parametrize("fast", [False, True])
def test_q_of_eq5_by_hand(fast):
    """Job j has a chunk time p = 6 and key D_j p = 12. Eq. 5 on worker 0:
    (Δ + p̂_A + p) / D_j + p / D_B = (2 + 10 + 6) / 2 + 6 / 4 = 9 + 1.5 = 10.5; on an
    idle worker (Δ + p) / D_j = 4."""
    pol, view = eq5_case()
    assert q_on(pol, view, fast) == pytest.approx(10.5)
    pol, view = eq5_case(queued=False)
    assert q_on(pol, view, fast) == pytest.approx(4.0)


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize(("holder", "cloud", "expect"), [(2, False, 10.5), (2, True, 18.0)])
def test_q_waits_for_a_running_chunk_only_in_the_cloud(fast, holder, cloud, expect):
    """B's chunk (key 100: lower γ than j's 12) runs on worker 0 with 9 s left at rate 0.5
    (p̂ 18). On the edge j's chunk would preempt it: behind, Q = 10.5 as above. On a bounded
    cloud's worker nothing is preempted, so it is waited for: (2 + 10 + 18 + 6) / 2 = 18."""
    pol, view = eq5_case(holder=holder, cloud=cloud)
    assert q_on(pol, view, fast) == pytest.approx(expect)


def test_greedy_prefers_the_worker_of_least_q(tmp_path):
    """Two edge workers of type a, delays 1 and 3, no cloud: the first job's two chunks go
    one to each (the second chunk's Q on the delay-1 worker grows by its wait)."""
    toml = cluster_toml([(1, {"a": 1}, 1), (3, {"a": 1}, 1)], None)
    summary, res = run_case(tmp_path, [job("x", 0, 2, "a", 10)], toml, "a-online")
    info = res.extra["tasks"]
    # chunk 0 -> worker 0 (Q = (1 + 10) / 2); chunk 1: worker 0 now (1 + 10 + 10) / 2 =
    # 10.5 against worker 1's (3 + 10) / 2 = 6.5
    assert info["worker"].tolist() == [0, 1]
    assert res.state.job_finish.tolist() == [11.0, 13.0]
    assert summary["avg_jct_s"] == 13.0


# --- HAPRF and preemption without migration ---------------------------------------------


def test_haprf_preempts_and_postpones_on_the_same_worker(tmp_path):
    """One worker, no delay. Long job L (one 20-slot chunk) at 0; short S (3 slots) at 5:
    S has the higher average processing rate, preempts L at 5 and runs 5-8; L resumes on
    the same worker at 8 (its data never moved) and ends at 23."""
    toml = cluster_toml([(0, {"a": 1}, 2)], None)
    rows = [job("L", 0, 1, "a", 20), job("S", 5, 1, "a", 3)]
    summary, res = run_case(tmp_path, rows, toml, "a-online")
    s = res.state
    assert s.job_finish.tolist() == [23.0, 8.0]
    assert s.job_n_preempt.tolist() == [1, 0]
    assert res.extra["tasks"]["worker"].tolist() == [0, 0]
    assert summary["n_preemptions"] == 1


def test_equal_rate_chunks_do_not_preempt(tmp_path):
    toml = cluster_toml([(0, {"a": 1}, 1)], None)
    rows = [job("A", 0, 1, "a", 10), job("B", 2, 1, "a", 10)]
    _, res = run_case(tmp_path, rows, toml, "a-online")
    assert res.state.job_finish.tolist() == [10.0, 20.0]
    assert res.state.job_n_preempt.tolist() == [0, 0]


# --- the cloud ---------------------------------------------------------------------------


def test_a_job_whose_first_chunk_goes_to_the_cloud_stays_there(tmp_path):
    """The edge worker is busy with a long job; the cloud (delay 4) gives the new job's
    first chunk Q = (4 + 5) / 3 = 3 against the edge's (0 + 100 + 5) / 3 + ...: all three
    chunks go to the cloud, run at once at zeta = 1 and end at 2 + 4 + 5 = 11."""
    toml = cluster_toml([(0, {"a": 1}, 1)], 4)
    rows = [job("big", 0, 1, "a", 100, comm=1), job("new", 2, 3, "a", 5, comm=1)]
    _, res = run_case(tmp_path, rows, toml, "a-online")
    info = res.extra["tasks"]
    assert info["cloud"].tolist() == [False, True, True, True]
    assert info["zeta"].tolist() == [0, 1]
    assert res.state.job_finish[1:].tolist() == [11.0, 11.0, 11.0]
    from gpusched.results.metrics import job_records

    rec = job_records(res)
    assert rec["tier"].tolist() == ["edge", "cloud"]
    # "big" trains on the edge (zeta 0): 100 + 1 slots, 1 of them communication
    assert rec["comm_s"].tolist() == [pytest.approx(1.0), 0.0]


def hand_cluster(cloud: str) -> str:
    """One edge server (delay 2, one worker of type a, one PS) and a cloud 15 slots away:
    ``"unbounded"``, ``"serial"`` (unbounded, its chunks shipped one after another) or
    ``"one"`` (one worker of type a)."""
    edge = cluster_toml([(2, {"a": 1}, 1)], None)
    kind = {
        "unbounded": "unbounded = true\n",
        "serial": 'unbounded = true\nship = "serial"\n',
        "one": 'workers = { a = 1 }\nps = "unbounded"\n',
    }[cloud]
    return (
        edge + '\n[[servers]]\ncount = 1\ngpus = 0\ngpu_type = "c"\ntier = "cloud"\n'
        "delay_s = 15\n" + kind
    )


@pytest.mark.parametrize(
    ("chunks", "cloud", "finish", "jct"),
    [
        # the issue's case: A/0 2-7 (preempted at 7), 15-30; A/1 in the cloud 15-35; B 7-15
        (2, "unbounded", [30, 35, 15], [35, 10]),
        (2, "one", [30, 35, 15], [35, 10]),
        (2, "serial", [30, 35, 15], [35, 10]),
        # 3 chunks: A/1 and A/2 in the unbounded cloud 15-35 at once
        (3, "unbounded", [30, 35, 35, 15], [35, 10]),
        # ... one after another: A/2 arrives at 30 and trains 30-50
        (3, "serial", [30, 35, 50, 15], [50, 10]),
        # ... a cloud of one worker: A/2's Q there (15 + 20 + 20) / 3 = 18.3 > the edge's
        # (2 + 20 + 20) / 3 = 14, so it queues on the edge behind A/0: 30-50
        (3, "one", [30, 35, 50, 15], [50, 10]),
    ],
)
def test_the_issue_hand_cases_under_each_cloud(tmp_path, chunks, cloud, finish, jct):
    """A (chunks of 16 slots wholly in the cloud, 20 on the edge: comm 4) at 0, B (one
    chunk of 8) at 5. A/0: edge Q (2 + 20) / D < cloud (15 + 16) / D; A/1: cloud (zeta 0
    now) (15 + 20) / D < edge (2 + 20 + 20) / D. B: edge Q 2 + 8 + 8 (1/D_A x chunks of A
    behind it) < the cloud's, ready at 7, preempts A/0 (higher γ) and trains 7-15."""
    rows = [job("A", 0, chunks, "a", 16, comm=4), job("B", 5, 1, "a", 8)]
    summary, res = run_case(tmp_path, rows, hand_cluster(cloud), "a-online")
    assert res.state.job_finish.tolist() == pytest.approx(finish)
    from gpusched.results.metrics import job_records

    assert job_records(res)["jct"].tolist() == pytest.approx(jct)
    assert res.state.job_n_preempt.tolist()[0] == 1  # A/0 at 7
    assert res.extra["tasks"]["zeta"].tolist() == [0, 0]


def test_a_online_e_never_uses_the_cloud(tmp_path):
    toml = cluster_toml([(0, {"a": 1}, 1)], 4)
    rows = [job("big", 0, 1, "a", 100), job("new", 2, 3, "a", 5)]
    _, res = run_case(tmp_path, rows, toml, "a-online-e")
    assert not res.extra["tasks"]["cloud"].any()


# --- results -----------------------------------------------------------------------------


def test_a_job_ends_with_its_last_chunk_and_its_jct_splits(tmp_path):
    toml = cluster_toml([(1, {"a": 2}, 2)], None)
    rows = [job("x", 0, 3, "a", 4)]
    summary, res = run_case(tmp_path, rows, toml, "a-online")
    from gpusched.results.metrics import job_records, task_records

    rec = job_records(res)
    assert rec["finish"][0] == res.state.job_finish.max()
    parts = rec["wait_s"] + rec["load_s"] + rec["train_s"] + rec["save_s"]
    assert parts[0] == pytest.approx(rec["jct"][0])
    assert rec["chunks"].tolist() == [3]
    assert len(task_records(res)["job_id"]) == 3
    assert summary["n_jobs"] == 1 and summary["n_tasks"] == 3


def test_jct_rate_is_over_srtf(tmp_path):
    from gpusched.experiments.run import compare

    toml = cluster_toml([(1, {"a": 1}, 1), (2, {"a": 1}, 1)], 10)
    rows = [job(f"j{i}", i, 2, "a", 6 + i, gang=2) for i in range(4)]
    trace, cluster = write_case(tmp_path, rows, toml)
    out = compare(trace, ["srtf", "a-online"], cluster=cluster)
    assert out[0]["jct_rate"] == 1.0
    assert out[1]["jct_rate"] == pytest.approx(out[1]["total_jct_s"] / out[0]["total_jct_s"])


# --- the engine's rules --------------------------------------------------------------------


class Scripted:
    """A task policy that plays given actions at the first decision."""

    name = "scripted"
    knows_duration = True
    runs_tasks = True
    needs_tasks = True

    def __init__(self, actions, wake=None):
        self.actions = actions
        self.wake = wake

    def decide(self, view, now):
        acts, self.actions = self.actions, []
        wake, self.wake = self.wake, None
        return Decision(actions=acts, wake_at=wake)


def engine_for(tmp_path, rows, toml, actions):
    trace, cluster = write_case(tmp_path, rows, toml)
    engine, _ = build_engine(trace, "srtf", cluster=cluster)
    engine.policy = Scripted(actions)
    engine.name = "scripted"
    engine.book.migrates = False  # (the engine read srtf's: it migrates)
    return engine


TWO_TYPES = cluster_toml([(3, {"a": 1, "b": 1}, 1)], 10)


@pytest.mark.parametrize(
    ("actions", "message"),
    [
        ([Start(0, np.asarray([1]))], "needs a worker of type 'a'"),
        ([Dispatch(0, 0), Start(0, np.asarray([0]))], "not ready"),
        ([Dispatch(0, 0), Dispatch(0, 0)], "placed already"),
        ([Start(0, np.asarray([0]))], "no parameter server"),
        (
            [Start(0, np.asarray([0])), HostPS(0, 0), Preempt(0), Start(0, np.asarray([2]))],
            "no migration",
        ),
        ([Start(0, np.asarray([3])), HostPS(0, 1)], "its own cloud worker"),
        ([Start(0, np.asarray([2])), HostPS(0, 0)], "must too"),
        ([Start(0, np.asarray([2])), HostPS(0, 1), Preempt(0)], "does not preempt"),
        ([Start(0, np.asarray([0])), HostPS(0, 0), Start(1, np.asarray([0]))], "busy"),
        ([Start(0, np.asarray([0, 1]))], "exactly one named worker"),
        ([Start(0, None)], "exactly one named worker"),
        ([HostPS(5, 0)], "unknown job index"),
        ([Dispatch(np.array([0, 1]), np.array([0, 1]))], "needs a worker of type 'a'"),
        ([Dispatch(np.array([0, 0]), np.array([0, 0]))], "placed already"),
        ([Dispatch(np.array([0, 1]), np.array([0]))], "two 1-D integer arrays of one length"),
        ([Dispatch(np.array([0, 1]), np.array([3, 2]))], "its own cloud worker"),
    ],
)
def test_the_engine_refuses_what_breaks_a_rule(tmp_path, actions, message):
    rows = [job("x", 0, 2, "a", 5)]
    engine = engine_for(tmp_path, rows, TWO_TYPES, actions)
    with pytest.raises(PolicyError, match=message):
        engine.step()


def test_dispatching_many_tasks_at_once_is_dispatching_them_one_by_one(tmp_path):
    """Job x (3 chunks): chunk 0 to the cloud (its own worker, delay 10), then chunks 1 and
    2 to the edge (delay 3): zeta goes 1 -> 0; ready times and transfers as one by one."""
    rows = [job("x", 0, 3, "a", 5), job("y", 0, 1, "b", 5)]
    states = []
    for many in (False, True):
        engine = engine_for(tmp_path, rows, TWO_TYPES, [])
        ws = [2 + 0, 0, 0]  # workers: 0 a, 1 b (server 0), then the cloud's (2 + task)
        acts = (
            [Dispatch(np.arange(3), np.asarray(ws))]
            if many
            else [Dispatch(t, w) for t, w in enumerate(ws)]
        )
        engine.policy.actions = acts + [Dispatch(np.asarray([3]), np.asarray([1]))]
        engine.step()
        book = engine.book
        states.append((book.bound.tolist(), book.ready.tolist(), book.transfer_s.tolist()))
        assert book.zeta.tolist() == [0, 0]
    assert states[0] == states[1]
    assert states[1][1] == [10.0, 3.0, 3.0, 3.0]


def test_no_migration_after_a_preemption(tmp_path):
    toml = cluster_toml([(0, {"a": 2}, 2)], None)
    actions = [Start(0, np.asarray([0])), HostPS(0, 0)]
    engine = engine_for(tmp_path, [job("x", 0, 1, "a", 5)], toml, actions)
    engine.policy.wake = 3.0
    engine.step()  # t = 0: x/0 starts on worker 0
    engine.policy.actions = [Preempt(0), Start(0, np.asarray([1])), HostPS(0, 0)]
    with pytest.raises(PolicyError, match="no migration"):
        engine.step()


def test_a_bounded_cloud_needs_a_ps_slot_per_worker(tmp_path):
    toml = cluster_toml([(0, {"a": 1}, 1)], None) + (
        '\n[[servers]]\ncount = 1\ngpus = 0\ngpu_type = "c"\ntier = "cloud"\n'
        "delay_s = 5\nworkers = { a = 2 }\nps = 1\n"
    )
    trace, cluster = write_case(tmp_path, [job("x", 0, 1, "a", 5)], toml)
    with pytest.raises(ClusterError, match="bounded cloud server has 2 workers but 1 PS"):
        replay(trace, "a-online", cluster=cluster)


@pytest.mark.parametrize("policy", ["a-online", "a-online-e"])
def test_a_online_never_moves_a_chunk(policy):
    """A_online's preemption postpones a chunk on its worker (Sec. V-C); only a policy that
    declares ``migrates`` may move one, and A_online does not."""
    assert getattr(load_policy_class(policy), "migrates", False) is False


def test_a_policy_that_migrates_may_move_a_preempted_chunk_and_ships_it_again(tmp_path):
    """As test_no_migration_after_a_preemption, by a policy that declares ``migrates``:
    x/0 trains on worker 0 (server delay 0) 0-3, is preempted and restarts on worker 2
    (the other server, delay 4): it ships again 3-7 (a load phase) and trains its last 2 s
    7-9."""
    toml = cluster_toml([(0, {"a": 2}, 2), (4, {"a": 1}, 1)], None)
    actions = [Start(0, np.asarray([0])), HostPS(0, 0)]
    engine = engine_for(tmp_path, [job("x", 0, 1, "a", 5)], toml, actions)
    engine.policy.migrates = True
    engine.book.migrates = True  # (as the engine sets it from a policy that declares it)
    engine.policy.wake = 3.0
    engine.step()
    engine.policy.actions = [Preempt(0), Start(0, np.asarray([2]))]
    engine.step()
    res = engine.run()
    info = res.extra["tasks"]
    assert res.state.job_finish.tolist() == [9.0]
    assert info["worker"].tolist() == [2]
    assert info["n_migrations"].tolist() == [1] and info["migrate_s"].tolist() == [4.0]
    assert info["transfer_s"].tolist() == [4.0]  # 0 to server 0, then 4 to server 1
    assert res.state.job_load_spent_s.tolist() == [4.0]


def test_an_edge_without_a_cloud_needs_a_ps_slot_per_worker(tmp_path):
    trace, cluster = write_case(
        tmp_path, [job("x", 0, 1, "a", 5)], cluster_toml([(0, {"a": 2}, 1)], None)
    )
    with pytest.raises(ClusterError, match="at least one PS slot per worker"):
        replay(trace, "a-online", cluster=cluster)


def test_a_gang_policy_cannot_run_chunks(tmp_path):
    trace, cluster = write_case(tmp_path, [job("x", 0, 1, "a", 5)], TWO_TYPES)
    with pytest.raises(PolicyError, match="made of data chunks"):
        replay(trace, "fifo", cluster=cluster)


def test_chunks_need_an_edge_cloud_cluster(tmp_path):
    trace, _ = write_case(tmp_path, [job("x", 0, 1, "a", 5)], TWO_TYPES)
    with pytest.raises(GpuschedError, match="declares no typed workers"):
        replay(trace, "a-online", cluster="default")


def test_an_unknown_worker_type_names_the_line(tmp_path):
    trace, cluster = write_case(tmp_path, [job("x", 0, 1, "zz", 5)], TWO_TYPES)
    with pytest.raises(TraceError, match=r"t\.csv:2: column 'worker_type'.*'zz'"):
        replay(trace, "a-online", cluster=cluster)


def test_a_bad_chunk_value_names_file_line_and_column(tmp_path):
    row = job("x", 0, 1, "a", 5)
    row["epochs"] = "2.5"
    trace, cluster = write_case(tmp_path, [row], TWO_TYPES)
    with pytest.raises(TraceError, match=r"t\.csv:2: column 'epochs': expected an integer"):
        replay(trace, "a-online", cluster=cluster)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("workers = { a = 1 }\nunbounded = true", "only one cloud server is unbounded"),
        ('workers = { "a b" = 1 }', "worker type"),
        ("workers = 3", "expected a table of worker type"),
        ("workers = { a = -1 }", "workers.a"),
        ("ps = -2", "ps"),
        ('unbounded = "yes"', "unbounded"),
        ('ship = "fast"', r"servers\[0\]\.ship: expected one of 'parallel', 'serial'"),
        ('ps = "unbounded"', '"unbounded" is for a bounded cloud'),
        ('ps = "lots"\nworkers = { a = 1 }', r"servers\[0\]\.ps"),
    ],
)
def test_bad_edge_cloud_cluster_keys(tmp_path, extra, message):
    from gpusched.io.cluster import load_cluster

    text = f'[cluster]\nname = "x"\n[[servers]]\ncount = 1\ngpus = 1\ngpu_type = "g"\ntier = "cloud"\n{extra}\n'
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(ClusterError, match=message):
        load_cluster(path)


# --- properties over random small instances -------------------------------------------------


@st.composite
def instances(draw):
    n_servers = draw(st.integers(1, 3))
    edge = []
    for _ in range(n_servers):
        workers = {"a": draw(st.integers(0, 2)), "b": draw(st.integers(0, 2))}
        if not any(workers.values()):
            workers["a"] = 1
        edge.append((draw(st.integers(0, 3)), workers, 0))
    if not any(w["a"] for _, w, _ in edge):
        edge[0][1]["a"] = 1
    # a PS slot per worker, or some more (without a cloud every running job needs one)
    edge = [(dl, w, sum(w.values()) + draw(st.integers(0, 1))) for dl, w, _ in edge]
    kinds = ["a"] + (["b"] if any(w["b"] for _, w, _ in edge) else [])
    cloud = draw(st.one_of(st.none(), st.integers(2, 6)))
    kind = draw(
        st.sampled_from(
            [
                "unbounded = true\n",
                'unbounded = true\nship = "serial"\n',
                'workers = { a = 1 }\nps = "unbounded"\n',
                'workers = { a = 1, b = 2 }\nps = "unbounded"\nship = "serial"\n',
            ]
        )
    )
    n_jobs = draw(st.integers(1, 5))
    rows = []
    t = 0
    for i in range(n_jobs):
        t += draw(st.integers(0, 4))
        rows.append(
            job(
                f"j{i}",
                t,
                draw(st.integers(1, 4)),
                draw(st.sampled_from(kinds)),
                draw(st.integers(1, 12)),
                comm=draw(st.sampled_from([0, 1, 2.5])),
                gang=draw(st.integers(1, 3)),
            )
        )
    return edge, cloud, kind, rows


#: the policies and the ablation variants of docs/a-online.md
VARIANTS = [
    *TASK_POLICIES,
    "srtf:migrate=false",
    "srtf:edge_only=false",
    "srtf:workers=trace,edge_only=false",
    "tiresias-l:edge_only=false,migrate=false",
    "batchsche:batches=slot,price_ratio=1,cloud_price=0.5,workers=trace",
]


@pytest.mark.parametrize("policy", VARIANTS)
@settings(max_examples=25, deadline=None)
@given(case=instances())
def test_every_chunk_finishes_once_on_a_worker_of_its_type_after_its_data(policy, case):
    edge, cloud, kind, rows = case
    with tempfile.TemporaryDirectory() as d:
        summary, res = run_case(Path(d), rows, cluster_toml(edge, cloud, kind), policy)
    s = res.state
    info = res.extra["tasks"]
    book_types = res.extra["tasks"]
    assert (s.job_status == FINISHED).all()  # every chunk, exactly once (a status)
    assert summary["n_finished"] == len(rows)
    assert int(s.sim_i[3]) == len(s.job_status)  # I_N_FINISHED counts each chunk once
    worker = info["worker"]
    assert (worker >= 0).all()
    # type: the worker's type is the chunk's, or the cloud's (any)
    layout_types = [t for _, w, _ in edge for t, n in w.items() for _ in range(n)]
    kinds = np.asarray([r["worker_type"] for r in rows])[info["parent"]]
    for t, w in enumerate(worker.tolist()):
        if w < len(layout_types):
            assert layout_types[w] == kinds[t]
        else:
            assert info["cloud"][t]
    # (a chunk a job-level baseline moved held several workers: checked by its transfers)
    moved = info["n_migrations"] > 0
    assert (info["transfer_s"][moved] >= info["migrate_s"][moved]).all()
    # ready: no chunk trains before its data arrived (submit + its server's delay)
    delays = [dl for dl, w, _ in edge for _ in range(sum(w.values()))]
    for t, w in enumerate(worker.tolist()):
        delay = delays[w] if w < len(delays) else cloud
        trained_from = s.job_finish[t] - s.job_executed[t]
        assert moved[t] or trained_from >= s.job_submit[t] + delay - 1e-9
    # one chunk per worker at a time: a worker's chunks never hold it longer than the run
    held = s.job_executed + s.job_load_spent_s
    for w in set(worker.tolist()):
        mine = (worker == w) & ~moved
        if mine.any():
            span = s.job_finish[mine].max() - s.job_submit[mine].min()
            assert held[mine].sum() <= span + 1e-6
    assert book_types["transfer_s"].shape == worker.shape


@pytest.mark.parametrize("policy", TASK_POLICIES)
def test_same_seed_same_schedule(tmp_path, policy):
    toml = cluster_toml([(1, {"a": 1, "b": 1}, 1), (2, {"a": 2}, 1)], 5)
    rows = [job(f"j{i}", i, 1 + i % 3, "ab"[i % 2], 3 + i, comm=1, gang=2) for i in range(8)]
    a = run_case(tmp_path, rows, toml, policy)[1].state.job_finish.tobytes()
    b = run_case(tmp_path, rows, toml, policy)[1].state.job_finish.tobytes()
    assert a == b


# --- A_online's eq. 5 over all candidates at once gives the reference walk's schedules ------


@st.composite
def exact_instances(draw):
    """Instances whose arithmetic is exact in floats (integer chunk times, rates 1, 1/2 or
    1/4, D_j in {1, 2, 4}): any order of summing eq. 5's terms gives the same Q, so the two
    ways of computing it must give the same schedule, ties included."""
    edge = []
    for _ in range(draw(st.integers(1, 3))):
        workers = {"a": draw(st.integers(0, 2)), "b": draw(st.integers(0, 1))}
        if not any(workers.values()):
            workers["a"] = 1
        edge.append((draw(st.integers(0, 3)), workers, 0))
    if not any(w["a"] for _, w, _ in edge):
        edge[0][1]["a"] = 1
    edge = [(dl, w, sum(w.values())) for dl, w, _ in edge]  # a PS slot per worker
    kinds = ["a"] + (["b"] if any(w["b"] for _, w, _ in edge) else [])
    cloud = draw(st.sampled_from(["none", "unbounded", "serial", "one", "one", "two", "two"]))
    toml = cluster_toml(edge, None)
    if cloud != "none":
        kind = {
            "unbounded": "unbounded = true\n",
            "serial": 'unbounded = true\nship = "serial"\n',
            "one": 'workers = { a = 1 }\nps = "unbounded"\n',
            "two": 'workers = { a = 1, b = 1 }\nps = "unbounded"\nship = "serial"\n',
        }[cloud]
        toml += (
            '\n[[servers]]\ncount = 1\ngpus = 0\ngpu_type = "c"\ntier = "cloud"\n'
            f"delay_s = {draw(st.integers(1, 6))}\n" + kind
        )
    rows = []
    t = 0
    for i in range(draw(st.integers(1, 8))):
        t += draw(st.integers(0, 4))
        slots = draw(st.integers(1, 12))
        rows.append(
            job(
                f"j{i}",
                t,
                draw(st.sampled_from([1, 2, 4])),
                draw(st.sampled_from(kinds)),
                slots,
                comm=slots * draw(st.sampled_from([0, 1, 3])),
            )
        )
    return toml, rows


@pytest.mark.parametrize("policy", ["a-online", "a-online-e"])
@settings(max_examples=60, deadline=None)
@given(case=exact_instances())
def test_eq5_at_once_gives_the_reference_schedule(policy, case):
    toml, rows = case
    runs = []
    with tempfile.TemporaryDirectory() as d:
        trace, cluster = write_case(Path(d), rows, toml)
        for fast in (True, False):
            engine, _ = build_engine(trace, policy, cluster=cluster)
            engine.policy.fast = fast
            res = engine.run()
            runs.append((res.state.job_finish.tolist(), res.extra["tasks"]["worker"].tolist()))
    assert runs[0] == runs[1]


# --- the baselines: moves, batches, a bounded cloud ----------------------------------------


@pytest.mark.parametrize(
    ("migrate", "finish", "moves"),
    [(False, [11, 62, 26], [0, 0, 0]), (True, [11, 48, 26], [0, 1, 0])],
)
def test_srtf_moves_a_paused_chunk_to_a_freed_worker(tmp_path, migrate, finish, moves):
    """Two edge servers of one worker each (delay 1), no cloud; k = 1 (one chunk per job).
    L1 (10 slots) and L2 (40) at 0 take workers 0 and 1 (shipping 0-1). S (20) at 5: SRTF
    order L1 (6 left), S (20), L2 (36): S takes L2's worker, ships 5-6, trains 6-26. L1
    ends at 11. Pinned, L2 waits for worker 1 until 26 and ends at 62. Moving, it takes
    worker 0 at 11, its data ships again 11-12, and it ends at 12 + 36 = 48."""
    toml = cluster_toml([(1, {"a": 1}, 1), (1, {"a": 1}, 1)], None)
    rows = [job("L1", 0, 1, "a", 10), job("L2", 0, 1, "a", 40), job("S", 5, 1, "a", 20)]
    trace, cluster = write_case(tmp_path, rows, toml)
    summary, res = replay(trace, "srtf", cluster=cluster, params=[f"migrate={migrate}"])
    assert res.state.job_finish.tolist() == pytest.approx(finish)
    assert res.extra["tasks"]["n_migrations"].tolist() == moves
    assert summary["n_migrations"] == sum(moves)
    assert summary["migrate_s"] == pytest.approx(float(sum(moves)))
    assert res.state.job_n_preempt.tolist() == [0, 1, 0]


def test_a_online_on_the_same_case_never_moves(tmp_path):
    toml = cluster_toml([(1, {"a": 1}, 1), (1, {"a": 1}, 1)], None)
    rows = [job("L1", 0, 1, "a", 10), job("L2", 0, 1, "a", 40), job("S", 5, 1, "a", 20)]
    _, res = run_case(tmp_path, rows, toml, "a-online")
    assert res.extra["tasks"]["n_migrations"].tolist() == [0, 0, 0]


def test_srtf_gives_a_job_min_chunks_and_edge_workers_of_its_type(tmp_path):
    """k_j = min(D_j, edge workers of its type): 5 chunks of 4 slots on 3 workers of type a
    (delay 0) run 3 then 2 at a time: 0-4, 4-8; with workers=trace (gang 1), one at a time
    on one worker: 20 slots."""
    toml = cluster_toml([(0, {"a": 3, "b": 1}, 4)], 5)
    rows = [job("x", 0, 5, "a", 4)]
    _, res = run_case(tmp_path, rows, toml, "srtf")
    assert res.state.job_finish.tolist() == [4, 4, 4, 8, 8]
    trace, cluster = write_case(tmp_path, rows, toml)
    _, res = replay(trace, "srtf", cluster=cluster, params=["workers=trace"])
    assert res.state.job_finish.max() == 20
    assert not res.extra["tasks"]["cloud"].any()  # edge only by default


def test_tiresias_l_auto_thresholds_are_a_round_of_chunks_of_a_median_job():
    """T_1 = 59.2 slots (a chunk at the medians of Sec. V-A's ranges) x the median k_j."""
    cls = load_policy_class("tiresias-l")
    pol = cls()
    gang = SimpleNamespace(k_job=np.array([27, 50, 50, 8]))
    t = pol.auto_thresholds(gang)
    assert t[0] == pytest.approx(40 * 58 * (0.0255 + 55e-3 / 3600) * 38.5)
    assert t[1] / t[0] == pytest.approx(7200 / 3250)


@pytest.mark.parametrize(("batches", "finish"), [("geometric", [7, 10]), ("slot", [3, 7])])
def test_batchsche_schedules_a_job_in_the_first_window_it_fits(tmp_path, batches, finish):
    """One edge worker (delay 1), no cloud. X (one 2-slot chunk) at 0 needs 1 + 2 = 3
    slots; Y (1 slot) at 5 needs 2. Geometric iterations at 0, 1, 2, 4, 8 with windows
    ending at 1, 2, 4, 8, 16: X fits first at 4 (4 + 3 <= 8): ships 4-5, trains 5-7 (JCT
    7); Y waits for the iteration at 8: 8-10 (JCT 5). By slot: at once, 0-3 and 5-7."""
    toml = cluster_toml([(1, {"a": 1}, 1)], None)
    rows = [job("X", 0, 1, "a", 2), job("Y", 5, 1, "a", 1)]
    trace, cluster = write_case(tmp_path, rows, toml)
    _, res = replay(trace, "batchsche", cluster=cluster, params=[f"batches={batches}"])
    assert res.state.job_finish.tolist() == pytest.approx(finish)


@pytest.mark.parametrize(("cloud", "jct"), [("unbounded = true\n", 31), ("one", 47)])
def test_batchsche_queues_a_job_on_a_bounded_cloud(tmp_path, cloud, jct):
    """A job of type b (2 chunks of 16 slots) in the cloud (delay 15): on an unbounded
    cloud (cheaper than the edge's b worker: zeta 1, price L) both chunks train at once,
    15-31; on a cloud of one b worker, the only one, one after the other, 15-31 and 31-47
    (never preempted)."""
    bounded = cloud == "one"
    kind = 'workers = { b = 1 }\nps = "unbounded"\n' if bounded else cloud
    toml = cluster_toml([(2, {"a": 1} if bounded else {"a": 1, "b": 1}, 2)], 15, kind)
    trace, cluster = write_case(tmp_path, [job("j", 0, 2, "b", 16)], toml)
    _, res = replay(trace, "batchsche", cluster=cluster, params=["batches=slot"])
    assert res.state.job_finish.max() == jct
    assert res.extra["tasks"]["zeta"].tolist() == [1]


def test_batchsche_sends_a_job_to_the_unbounded_cloud_it_is_cheaper_there(tmp_path):
    """An idle edge worker and an unbounded cloud: the cloud's price is L (u = 0 there) and
    the job trains faster wholly there (zeta 1), so it costs less whatever U/L."""
    toml = cluster_toml([(1, {"a": 2}, 2)], 12)
    rows = [job("x", 0, 2, "a", 30, comm=3)]
    trace, cluster = write_case(tmp_path, rows, toml)
    for ratio in ("1", "4"):
        _, res = replay(trace, "batchsche", cluster=cluster, params=[f"price_ratio={ratio}"])
        assert res.extra["tasks"]["cloud"].all()


@pytest.mark.parametrize("policy", ["a-online", "a-online-e"])
def test_eq5_at_once_on_the_bundled_testbed_trace(policy):
    """The same on real values (ec-30 on the testbed): eq. 5's terms summed in another
    order differ in their last bits, and the tie rule (Q to 32 significant bits) keeps that
    from deciding."""
    runs = []
    for fast in (True, False):
        engine, _ = build_engine("ec-30", policy, cluster="edge-cloud-testbed")
        engine.policy.fast = fast
        res = engine.run()
        runs.append((res.state.job_finish.tolist(), res.extra["tasks"]["worker"].tolist()))
    assert runs[0] == runs[1]


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("srtf", []),
        ("srtf", ["edge_only=false"]),
        ("srtf", ["migrate=false"]),
        ("tiresias-l", ["thresholds=4,20"]),
        ("tiresias-l", ["thresholds=2,6", "edge_only=false"]),
    ],
)
@settings(max_examples=25, deadline=None)
@given(case=instances())
def test_deciding_only_types_with_events_gives_the_same_schedules(name, params, case):
    """JobLevel's static_keys (a decision looks only at the worker types something happened
    to: an arrival, a chunk finished, a job changing level) is a speed-up: the schedules
    are those of re-deciding every type every time."""
    edge, cloud, kind, rows = case
    runs = []
    with tempfile.TemporaryDirectory() as d:
        trace, cluster = write_case(Path(d), rows, cluster_toml(edge, cloud, kind))
        for static in (True, False):
            engine, _ = build_engine(trace, name, cluster=cluster, params=params)
            engine.policy.static_keys = static
            res = engine.run()
            runs.append((res.state.job_finish.tolist(), res.extra["tasks"]["worker"].tolist()))
    assert runs[0] == runs[1]


@pytest.mark.parametrize(
    ("actions", "message"),
    [
        ([Start(np.array([0, 1]), np.array([0, 1]))], "needs a worker of type 'a'"),
        ([Start(np.array([0, 1]), np.array([0]))], "two 1-D integer arrays of one length"),
        ([Dispatch(0, 0), Start(np.array([0]), np.array([0]))], "not ready"),
        ([Start(np.array([0, 1]), np.array([0, 0]))], "busy"),
        ([Start(np.array([0, 0]), np.array([0, 2]))], "is loading, cannot be acted on"),
        ([Start(np.array([0]), np.array([0]), reason="why")], "takes no reason"),
        (
            [Start(np.array([0]), np.array([2])), HostPS(0, 1), Preempt(np.array([0]))],
            "does not preempt",
        ),
        (
            [Start(np.array([0]), np.array([0])), HostPS(0, 0), Preempt(np.array([0, 0]))],
            "queued|holds no|not running",
        ),
        ([Preempt(np.array([1]))], "queued|holds no|not running"),
        ([Start(0, np.asarray([-1]))], "unknown worker -1"),
        ([Start(np.array([0]), np.array([-1]))], "unknown worker -1"),
        ([Start(np.array([]), np.array([]))], "integer arrays naming each task"),
        ([Preempt(np.array([]))], "integer array naming each once"),
    ],
)
def test_many_tasks_in_one_action_break_the_rules_as_one_by_one(tmp_path, actions, message):
    rows = [job("x", 0, 2, "a", 5)]
    engine = engine_for(tmp_path, rows, TWO_TYPES, actions)
    with pytest.raises(PolicyError, match=message):
        engine.step()


def test_starting_and_preempting_many_tasks_at_once_is_one_by_one(tmp_path):
    """Job x (3 chunks): chunk 0 starts in the cloud, then chunk 1 on the edge in the same
    Start (zeta 1 -> 0: chunk 0, loading, is re-rated), y's chunk on the other worker; at
    t = 5 both edge chunks are preempted (y gives its PS back). Every state array is as
    with one action per task."""
    rows = [job("x", 0, 3, "a", 5, comm=2.0), job("y", 0, 1, "b", 5)]
    seen = []
    for many in (False, True):
        engine = engine_for(tmp_path, rows, TWO_TYPES, [])
        ts, ws = [0, 1, 3], [2 + 0, 0, 1]
        starts = (
            [Start(np.asarray(ts), np.asarray(ws))]
            if many
            else [Start(t, np.asarray([w])) for t, w in zip(ts, ws, strict=True)]
        )
        engine.policy.actions = starts + [HostPS(0, 1), HostPS(1, 1)]
        engine.policy.wake = 5.0
        engine.step()
        st, book = engine.state, engine.book
        first = (
            st.job_solo_rate.tolist(),
            st.job_status.tolist(),
            st.job_load_s.tolist(),
            book.n_hold.tolist(),
            book.zeta.tolist(),
            book.cloud_busy,
        )
        engine.policy.actions = [Preempt(np.asarray([1, 3]))] if many else [Preempt(1), Preempt(3)]
        engine.step()
        assert engine.now == 5.0
        seen.append(
            (
                first,
                st.job_status.tolist(),
                st.job_executed.tolist(),
                st.job_n_preempt.tolist(),
                book.n_hold.tolist(),
                book.ps_server.tolist(),
                book.ledger.held_s.tolist(),
            )
        )
    assert seen[0] == seen[1]
    rates = seen[1][0][0]
    assert rates[0] == rates[1] < 1.0  # chunk 0 re-rated when chunk 1 went to the edge
    assert seen[1][3] == [0, 1, 0, 1]  # chunk 1 and y's preempted
    assert seen[1][4] == [1, 0]  # x holds its cloud chunk, y nothing
    assert seen[1][5] == [1, -1]  # y gave its PS back
