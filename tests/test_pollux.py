"""Pollux (policies/pollux.py), its search (gpusched/algorithms/pollux_search.py), Optimus
(policies/optimus.py) and the Pollux workloads (gpusched workload pollux)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from gpusched.algorithms.pollux_search import (
    Problem,
    brute_force,
    feasible,
    fitness,
    search_dp,
    search_ga,
)
from gpusched.cli import app
from gpusched.errors import GpuschedError
from gpusched.experiments.run import build_engine, replay
from gpusched.io.trace import write_trace
from gpusched.jobmodels.goodput import load_apps
from gpusched.workloads.pollux import pollux_workload

# --------------------------------------------------------------------------- the search


def _problem(rng, n_jobs, n_nodes, per_node=4, p=-1.0):
    """A random round: concave speedups (several nodes a bit slower), some current
    allocations, restart factors and limits."""
    g = n_nodes * per_node
    speed = np.zeros((n_jobs, g + 1, 2))
    for j in range(n_jobs):
        steps = np.sort(rng.random(g))[::-1] * rng.uniform(0.2, 2)
        speed[j, 1:, 0] = np.cumsum(steps)
        speed[j, :, 1] = speed[j, :, 0] * rng.uniform(0.6, 1.0)
    base = np.zeros((n_jobs, n_nodes), np.int64)
    free = np.full(n_nodes, per_node)
    for j in range(n_jobs):
        if rng.random() < 0.6:
            n = rng.integers(n_nodes)
            base[j, n] = rng.integers(0, free[n] + 1)
            free[n] -= base[j, n]
    most = np.maximum(rng.integers(1, g + 1, n_jobs), base.sum(axis=1))
    return Problem(
        speed, rng.random(n_jobs), base, most, np.full(n_nodes, per_node), p, 1 / per_node
    )


def test_fitness_is_the_power_mean():
    # 2 jobs, 1 node of 4: speedups S(K) = K on one node; scale 1/4; job 1 changes (x 0.5)
    s = np.zeros((2, 5, 2))
    s[:, :, 0] = s[:, :, 1] = np.arange(5)
    pb = Problem(
        s, np.array([1.0, 0.5]), np.array([[2], [0]]), np.array([4, 4]), np.array([4]), -1.0, 0.25
    )
    st = np.array([[2], [2]])
    # s = (2 x 0.25, 2 x 0.25 x 0.5) = (0.5, 0.25): (mean of (s + 0.001)^-1)^-1
    want = 1 / np.mean(1 / (np.array([0.5, 0.25]) + 0.001))
    assert fitness(pb, st) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("p", [-1.0, 0.0, 1.0, -10.0])
def test_two_jobs_on_four_gpus_match_brute_force(p):
    rng = np.random.default_rng(int(abs(p) * 10) + 3)
    for _ in range(40):
        pb = _problem(rng, 2, 1, p=p)
        _, best = brute_force(pb)
        dp = search_dp(pb)
        ga, _ = search_ga(pb, np.random.default_rng(0))
        assert feasible(pb, dp) and feasible(pb, ga)
        assert fitness(pb, dp) == pytest.approx(best, rel=1e-12)
        assert fitness(pb, ga) == pytest.approx(best, rel=1e-12)


def test_three_jobs_on_two_nodes_match_brute_force():
    # every allocation of up to 3 jobs on 2 x 4 GPUs (multi-node jobs, the restart factor)
    rng = np.random.default_rng(5)
    for _ in range(12):
        pb = _problem(rng, int(rng.integers(2, 4)), 2, p=float(rng.choice([-1.0, 1.0])))
        _, best = brute_force(pb)
        assert fitness(pb, search_dp(pb)) == pytest.approx(best, rel=1e-12)


def test_dp_at_least_as_good_as_the_ga_on_small_rounds():
    rng = np.random.default_rng(7)
    for k in range(25):
        pb = _problem(rng, int(rng.integers(2, 6)), int(rng.integers(2, 4)))
        dp = search_dp(pb)
        ga, _ = search_ga(pb, np.random.default_rng(k))
        assert feasible(pb, dp)
        assert fitness(pb, dp) >= fitness(pb, ga) * (1 - 1e-12)


def test_ga_is_deterministic_for_a_seed():
    pb = _problem(np.random.default_rng(1), 5, 3)
    a, pa = search_ga(pb, np.random.default_rng(4))
    b, pb_ = search_ga(pb, np.random.default_rng(4))
    assert (a == b).all() and (pa == pb_).all()


# --------------------------------------------------------------------------- the workloads


def test_workload_sets():
    for load, n in ((0.5, 80), (1.0, 160), (1.5, 240), (2.0, 320)):
        t = pollux_workload(3, load=load)
        assert len(t) == n and (t.extra["goodput"] == "1").all()
        assert t.submit_time.max() <= 8 * 3600
    t = pollux_workload(1)
    assert t.job_id[0] == "cifar10-0" and t.submit_time[0] == 107 and t.num_gpus[0] == 6
    assert t.extra["batch_size"][0] == "342"  # ceil(2048 / 6)
    # each job's progress (iterations x GPUs x batch / M0) is its application's whole
    apps = {a.name: a for a in load_apps()}
    for i in range(len(t)):
        a = apps[t.model[i]]
        p = t.iterations[i] * t.num_gpus[i] * int(t.extra["batch_size"][i]) / a.init_batch
        assert p == pytest.approx(a.progress, rel=1e-12)


def test_realistic_set_runs_on_the_measured_tables():
    # --load 0: the artifact's workloads-realistic (B = M0 x GPUs); its ncf rows on several
    # GPUs need the measured profile, so the generator marks every row throughput=table
    from gpusched.jobmodels.goodput import JOB_MODEL

    t = pollux_workload(6, load=0.0)
    assert len(t) == 160 and set(t.extra["throughput"].tolist()) == {"table"}
    ncf = [i for i in range(len(t)) if t.model[i] == "ncf" and t.num_gpus[i] > 1]
    assert ncf  # workload 6 has an ncf job on 4 GPUs
    n = len(t)
    work, _ = JOB_MODEL.durations(t, np.zeros(n), np.ones(n, dtype=bool))
    assert (work > 0).all()
    # the same rows without the column: ncf on more than one GPU is refused, naming the way
    bare = dataclasses.replace(t, extra={k: v for k, v in t.extra.items() if k != "throughput"})
    with pytest.raises(GpuschedError, match="'throughput' column of 'table'"):
        JOB_MODEL.durations(bare, np.zeros(n), np.ones(n, dtype=bool))


@pytest.mark.parametrize(
    ("kw", "what"),
    [
        ({"seed": 9}, "workloads 1 to 8"),
        ({"load": 3.0}, "loads 0.5, 1, 1.5 and 2"),
        ({"jobs": 100}, "has 160 jobs"),
    ],
)
def test_workload_bad_options(kw, what):
    seed = kw.pop("seed", 1)
    with pytest.raises(GpuschedError, match=what):
        pollux_workload(seed, **kw)


# --------------------------------------------------------------------------- runs


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """The first 24 jobs of workload 1 (16 nodes x 4 T4)."""
    path = tmp_path_factory.mktemp("pollux") / "w1.csv"
    write_trace(pollux_workload(1).take(np.arange(24)), path)
    return str(path)


def test_pollux_run_restarts_cost_one_load_each(small):
    s, res = replay(small, "pollux", cluster="pollux-16x4", events=True)
    st = res.state
    assert s["n_finished"] == 24
    # every start (the first and each re-allocation) loads 30 s once; none is futile
    assert (st.job_n_futile == 0).all()
    np.testing.assert_allclose(st.job_load_spent_s, 30.0 * (st.job_n_preempt + 1))
    ev = res.extra["events"]
    config = [d for e, d in zip(ev["event"], ev["detail"], strict=True) if e == "config"]
    assert config and all(d.startswith("batch ") for d in config)
    assert any("(agent)" in d for d in config)
    # decisions only at whole minutes
    starts = [t for e, t in zip(ev["event"], ev["time_s"], strict=True) if e == "start"]
    assert all(float(t) % 60 == 0 for t in starts)
    s2, _ = replay(small, "pollux", cluster="pollux-16x4")
    assert s2["avg_jct_s"] == s["avg_jct_s"]  # deterministic


def test_search_ga_runs_the_same_rules(small):
    s, res = replay(small, "pollux", cluster="pollux-16x4", params=["search=ga"], seed=3)
    assert s["n_finished"] == 24
    assert (res.state.job_n_futile == 0).all()


def test_optimus_and_tiresias_keep_the_trace_batch(small):
    for policy in ("optimus", "tiresias"):
        s, res = replay(small, policy, cluster="pollux-16x4", events=True)
        assert s["n_finished"] == 24
        ev = res.extra["events"]
        config = [d for e, d in zip(ev["event"], ev["detail"], strict=True) if e == "config"]
        assert config and all(d.endswith("(fixed)") for d in config)


def test_tui_frame_and_status_line(small):
    from gpusched.tui.session import Driver

    engine, _ = build_engine(small, "pollux", cluster="pollux-16x4")
    drv = Driver(engine, speed=10.0)
    while engine.step(1) and "re-allocated" not in str(drv.frame().extra.get("status")):
        pass
    f = drv.frame()
    assert f.job_gpus is not None
    assert "GPUs, batch " in f.extra["status"]
    holding = np.unique(f.gpu_job[f.gpu_job >= 0])
    for j in holding.tolist():
        assert f.job_gpus[j] == np.count_nonzero(f.gpu_job == j)


@pytest.mark.parametrize(
    ("args", "what"),
    [
        (["-p", "p=nan"], "expects a number"),
        (["-p", "interval=0"], "interval must be a number in (0, 86400]"),
        (["-p", "search=annealing"], "search must be one of dp, ga"),
        (["-p", "explore=magic"], "explore must be one of prior, oracle"),
        (["-p", "throughput=mine"], "throughput must be one of sharing, refit, table"),
        (["-p", "p=1000"], "p must be a number in [-100, 100]"),
        # the power mean loses its ranking to rounding: every allocation scored 1 (stall)
        (["-p", "p=1e-300"], "p must be 0 (the geometric mean) or of magnitude at least"),
        (["-p", "p=-0.0009"], "p must be 0 (the geometric mean) or of magnitude at least"),
    ],
)
def test_bad_parameters_one_line(small, args, what):
    r = CliRunner().invoke(app, ["replay", small, "-P", "pollux", "-c", "pollux-16x4", *args])
    assert r.exit_code == 2
    err = r.output.strip()
    assert err.startswith("error:") and what in err and "\n" not in err


@pytest.mark.parametrize("policy", ["pollux", "optimus"])
def test_other_jobs_are_refused_before_the_run_naming_a_line(small, tmp_path, policy):
    r = CliRunner().invoke(app, ["replay", "tiny", "-P", policy])
    err = r.output.strip()
    assert r.exit_code == 2 and err.startswith("error: ") and "\n" not in err, err
    assert ":2: not a goodput job (no model, with a duration); this policy schedules goodput" in err
    # one row of another kind among goodput rows: its line is named (it was found at the
    # first decision, t=60 s, as the policy's own failure)
    lines = Path(small).read_text().splitlines()
    mixed = tmp_path / "mixed.csv"
    head = lines[0].split(",")
    other = ["x" if c == "job_id" else "0" if c == "submit_time" else "" for c in head]
    other[head.index("num_gpus")] = "1"
    other[head.index("model")] = "ncf"
    if "duration" not in head:
        head.append("duration")
        lines = [lines[0] + ",duration"] + [line + "," for line in lines[1:]]
        other.append("")
    other[head.index("duration")] = "30"
    mixed.write_text("\n".join([*lines[:5], ",".join(other), *lines[5:]]) + "\n")
    r = CliRunner().invoke(app, ["replay", str(mixed), "-P", policy, "-c", "pollux-16x4"])
    err = r.output.strip()
    assert r.exit_code == 2 and "\n" not in err, err
    assert "mixed.csv:6: not a goodput job (model 'ncf', with a duration)" in err
    assert "1 of 25 rows are not" in err


@pytest.mark.parametrize("cluster", ["philly-64x8"])
def test_pollux_runs_where_few_jobs_cannot_use_their_fair_share(small, cluster):
    """On 512 GPUs the fair share of the last jobs, ceil(G / J), splits a job's largest
    batch below its smallest per-GPU batch: its goodput there is 0 and, taken as the
    speedups' base, zeroed its whole table; the job never got GPUs and the run stalled
    ("made no progress over 10,000 decisions"). The base is now the best goodput within
    the fair share (Speedups' docstring)."""
    s, res = replay(small, "pollux", cluster=cluster)
    assert s["n_finished"] == 24
    assert (res.state.job_n_futile == 0).all()


def test_speedups_base_within_the_fair_share():
    from gpusched.algorithms.pollux_search import Speedups

    sp = Speedups(8)
    # job 0 uses at most 3 GPUs (its goodput is 0 past them); job 1 all 8
    tables = {
        0: np.array([[0, 0], [1, 0.9], [1.8, 1.5], [2.4, 2.0]] + [[0, 0]] * 5, float),
        1: np.stack([np.arange(9.0), 0.9 * np.arange(9.0)], axis=1),
    }
    agents = [dataclasses.make_dataclass("A", [("profiled", bool)])(True)] * 2
    sp.goodput = lambda j, a: tables[j]  # type: ignore[method-assign]
    out = sp.table(np.array([0, 1]), agents)  # fair share: ceil(8 / 2) = 4 GPUs
    np.testing.assert_allclose(out[0], tables[0] / 2.4)  # the best within 4 GPUs
    np.testing.assert_allclose(out[1], tables[1] / 4.0)  # the artifact's: goodput at 4
