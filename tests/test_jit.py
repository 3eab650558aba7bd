"""The kernels' two forms (gpusched.core.jit): the interpreted twin gives the compiled kernels'
schedule bit for bit, a run may move from one to the other mid-way, and a small run
never imports Numba."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

from gpusched.core import background, kernel, warmup
from gpusched.core import engine as engine_module
from gpusched.core.engine import Engine
from gpusched.core.jit import SUFFIX, Switch, interpreted
from gpusched.core.jobs import prepare_jobs
from gpusched.core.registry import load_policy_class, make_policy
from gpusched.io.cluster import ClusterSpec
from gpusched.results.metrics import manifest
from tests.helpers import GANG_POLICIES, assert_same_run, make_trace, run_workload, write_gang_csv
from tests.test_properties import phases, workloads

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _numbas_kernels(monkeypatch):
    """These tests are about Numba's kernels and the move to them: a fused run here must not
    take the kernels compiled ahead of time (tests/test_aot.py), whatever the environment."""
    monkeypatch.setenv("GPUSCHED_AOT", "0")


def test_the_twin_holds_plain_functions_and_the_module_dispatchers():
    twin = interpreted("gpusched.core.kernel")
    assert twin.__name__ == "gpusched.core.kernel" + SUFFIX
    assert isinstance(twin.run_fused, types.FunctionType)
    assert isinstance(twin._step, types.FunctionType)
    assert interpreted("gpusched.core.kernel") is twin
    if hasattr(kernel.run_fused, "compile"):  # not under NUMBA_DISABLE_JIT
        assert not isinstance(kernel.run_fused, types.FunctionType)


@pytest.mark.parametrize("mode", ["auto", "python"])
@pytest.mark.parametrize("policy", GANG_POLICIES)
@settings(max_examples=15, deadline=None)
@given(w=workloads(), ph=phases())
def test_interpreted_kernels_give_the_compiled_schedule(policy, mode, w, ph):
    """Every state array and timeline column, bit for bit, on both engine paths."""
    a_eng, a = run_workload(policy, w, ph, mode, "interpreted")
    b_eng, b = run_workload(policy, w, ph, mode, "compiled")
    assert a_eng.kernels == "interpreted" and b_eng.kernels == "compiled"
    assert_same_run(a, b)
    assert manifest(a, None) == manifest(b, None)  # a run's record never says which ran


@settings(max_examples=20, deadline=None)
@given(w=workloads(), ph=phases())
def test_interpreted_tiresias_starvation_gives_the_compiled_schedule(w, ph):
    params = {"starve": 2.0, "thresholds": "20,200"}
    _, a = run_workload("tiresias", w, ph, "auto", "interpreted", params)
    _, b = run_workload("tiresias", w, ph, "auto", "compiled", params)
    assert_same_run(a, b)


@pytest.mark.parametrize("mode", ["fused", "python"])
@pytest.mark.parametrize("policy", ["fifo", "srtf", "tiresias"])
def test_a_run_moves_to_the_compiled_kernels_mid_way_with_the_same_schedule(
    monkeypatch, policy, mode
):
    """With a switch rule that fires at once, an "auto" run starts interpreted, moves on
    after its first chunk and ends with the schedule of a compiled-only run."""
    rng = np.random.default_rng(3)
    rows = [
        (float(t), int(g), float(d))
        for t, g, d in zip(
            np.cumsum(rng.exponential(20, 300)).round(3),
            rng.choice([1, 1, 2, 4], 300),
            rng.exponential(300, 300).round(3) + 1,
            strict=True,
        )
    ]
    w = (2, 4, rows, 1.0)
    ph = (np.zeros(300), np.zeros(300))
    monkeypatch.setattr(warmup, "_warm", set())  # as in a fresh process
    monkeypatch.setattr(engine_module, "SWITCH", Switch(min_s=0.0, load_s=0.0, chunk=16))
    seen = []
    auto, a = None, None
    cluster = ClusterSpec.homogeneous(2, 4)
    jobs = prepare_jobs(make_trace(rows), cluster)
    auto = Engine(jobs, cluster, make_policy(load_policy_class(policy), {}, 0), mode=mode)
    assert auto.kernels == "interpreted"
    while auto.step(16):
        seen.append(auto.kernels)
    a = auto.result()
    _, b = run_workload(policy, w, ph, mode, "compiled")
    assert seen[0] == "compiled" and auto.kernels == "compiled"
    assert_same_run(a, b)


def test_unknown_kernels_are_refused():
    cluster = ClusterSpec.homogeneous(1, 1)
    jobs = prepare_jobs(make_trace([(0, 1, 1)]), cluster)
    with pytest.raises(ValueError, match="unknown kernels 'fast'"):
        Engine(jobs, cluster, make_policy(load_policy_class("fifo"), {}, 0), kernels="fast")


def test_a_small_replay_never_imports_numba(tmp_path):
    """A 300-job trace under three policies with --out, in a fresh process: the run is short
    enough to stay interpreted and Numba is never imported."""
    write_gang_csv(tmp_path / "t.csv", 300, 30)
    code = (
        "import sys\n"
        "from gpusched.cli import app\n"
        "for p in ('fifo', 'srtf', 'tiresias'):\n"
        "    sys.argv = ['gpusched', 'replay', 't.csv', '-P', p, '-o', 'runs/' + p]\n"
        "    try:\n"
        "        app()\n"
        "    except SystemExit as exc:\n"
        "        assert not exc.code, exc.code\n"
        "print('numba' in sys.modules, 'scipy' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert out.stdout.splitlines()[-1] == "False False"
    for p in ("fifo", "srtf", "tiresias"):
        assert (tmp_path / "runs" / p / "jobs.csv").is_file()


class _FakeCompile:
    """A background compile that reports ``outcome`` after ``polls`` polls."""

    def __init__(self, polls, outcome):
        self.polls, self.outcome, self.asked = polls, outcome, 0

    def poll(self):
        self.asked += 1
        return None if self.asked <= self.polls else self.outcome


def _cold_run(monkeypatch, compile_, policy="fifo", mode="auto", n=300, params=None):
    """An "auto" run on a cache said to be empty, with a switch rule that fires at once."""
    started = []
    monkeypatch.setattr(warmup, "_warm", set())
    monkeypatch.setattr(engine_module, "SWITCH", Switch(min_s=0.0, load_s=0.0, chunk=16))
    monkeypatch.setattr(Engine, "_compiled_cached", lambda self: False)
    monkeypatch.setattr(background, "start", lambda m: started.append(m) or compile_)
    rng = np.random.default_rng(5)
    rows = [
        (float(t), int(g), float(d))
        for t, g, d in zip(
            np.cumsum(rng.exponential(20, n)).round(3),
            rng.choice([1, 1, 2, 4], n),
            rng.exponential(300, n).round(3) + 1,
            strict=True,
        )
    ]
    cluster = ClusterSpec.homogeneous(2, 4, allow_spread=True)
    jobs = prepare_jobs(make_trace(rows), cluster)
    eng = Engine(jobs, cluster, make_policy(load_policy_class(policy), params or {}, 0), mode=mode)
    seen = []
    while eng.step(16):
        seen.append(eng.kernels)
    return eng, eng.result(), seen, started, (2, 4, rows, 1.0)


@pytest.mark.parametrize("mode", ["auto", "python"])
@pytest.mark.parametrize("policy", ["fifo", "tiresias"])
def test_a_first_run_compiles_in_the_background_and_moves_on_when_done(monkeypatch, policy, mode):
    """On an empty cache the run starts one background compile of its engine path, goes on
    interpreted while it runs, moves to the compiled kernels once it is done, and ends
    with the schedule of a compiled-only run."""
    fake = _FakeCompile(polls=3, outcome=True)
    eng, a, seen, started, w = _cold_run(monkeypatch, fake, policy, mode)
    assert started == [eng.mode]
    # the first chunk starts the compile; each later one asks once
    assert seen[:4] == ["interpreted"] * 4 and set(seen[4:]) == {"compiled"}
    assert a.extra["background_compile"] is True and not a.extra["uncompiled"]
    _, b = run_workload(policy, w, (np.zeros(300), np.zeros(300)), mode, "compiled")
    assert_same_run(a, b)


def test_lazer_compiles_its_own_fused_entry_in_the_background(monkeypatch):
    """Lazer's rule is the fused path's second entry: a cold Lazer run compiles the "lazer"
    kernels (not the plain fused ones) and ends with the compiled-only schedule."""
    params = {"max_defer": 0.0}  # (no predictor: the kernel asks nothing)
    eng, a, seen, started, w = _cold_run(monkeypatch, _FakeCompile(2, True), "lazer", params=params)
    assert eng.mode == "fused" and started == ["lazer"] == [eng.path]
    assert eng.k.fused_entry == "run_fused_lazer" and seen[-1] == "compiled"
    servers, gpus, rows, slot = w
    cluster = ClusterSpec.homogeneous(servers, gpus, allow_spread=True)
    pol = make_policy(load_policy_class("lazer"), params, 0)
    b = Engine(prepare_jobs(make_trace(rows), cluster), cluster, pol, kernels="compiled").run()
    assert_same_run(a, b)


def test_a_plain_fused_run_never_loads_lazers_entry(tmp_path):
    """A fifo run on the compiled fused path loads run_fused only (Lazer's rule is about
    40 % of the fused path's compile), in a fresh process."""
    code = """
from gpusched.core import kernel
from gpusched.core.engine import Engine
from gpusched.core.jobs import prepare_jobs
from gpusched.core.registry import load_policy_class, make_policy
from gpusched.io.cluster import ClusterSpec
from tests.helpers import make_trace
c = ClusterSpec.homogeneous(1, 4)
jobs = prepare_jobs(make_trace([(0.0, 1, 5.0), (1.0, 2, 3.0)]), c)
Engine(jobs, c, make_policy(load_policy_class("fifo"), {}, 0), kernels="compiled").run()
print(len(kernel.run_fused.overloads), len(kernel.run_fused_lazer.overloads))
"""
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["1", "0"]


def test_a_run_whose_background_compile_fails_ends_interpreted(monkeypatch):
    eng, a, seen, _, w = _cold_run(monkeypatch, _FakeCompile(polls=2, outcome=False))
    assert set(seen) == {"interpreted"} and eng.kernels == "interpreted"
    assert a.extra["background_compile"] is False and a.extra["uncompiled"] is True
    _, b = run_workload("fifo", w, (np.zeros(300), np.zeros(300)), "auto", "compiled")
    assert_same_run(a, b)


def test_a_run_shorter_than_the_compile_ends_interpreted_and_says_so(monkeypatch):
    """The compile goes on after the run (it fills the cache for the next one); the result
    says so, for the command line's note."""
    eng, a, seen, started, _ = _cold_run(monkeypatch, _FakeCompile(polls=10**9, outcome=True))
    assert len(started) == 1 and set(seen) == {"interpreted"}
    assert a.extra["background_compile"] == "running" and a.extra["uncompiled"] is True


def test_a_long_first_run_starts_compiling_at_once(monkeypatch):
    """A run of more than max_jobs jobs does not wait for the switch rule to start it."""
    monkeypatch.setattr(engine_module, "SWITCH", Switch(max_jobs=10, min_s=1e9))
    monkeypatch.setattr(warmup, "_warm", set())
    monkeypatch.setattr(Engine, "_compiled_cached", lambda self: False)
    started = []
    monkeypatch.setattr(background, "start", lambda m: started.append(m) or _FakeCompile(0, True))
    cluster = ClusterSpec.homogeneous(1, 2)
    jobs = prepare_jobs(make_trace([(float(i), 1, 5.0) for i in range(20)]), cluster)
    eng = Engine(jobs, cluster, make_policy(load_policy_class("fifo"), {}, 0))
    assert started == ["fused"] and eng.kernels == "interpreted"
    eng.step(1)
    assert eng.kernels == "compiled"


def test_a_run_moves_on_once_its_interpreted_time_reaches_the_load_cost(monkeypatch):
    """The projection may promise a short rest (it misjudged tiresias with ``starve``);
    the run moves on anyway once the CPU time spent interpreting reaches what loading the
    compiled kernels costs, and not before (the rent-or-buy bound)."""
    monkeypatch.setattr(warmup, "_warm", set())
    monkeypatch.setattr(engine_module, "SWITCH", Switch(min_s=0.0, load_s=100.0, chunk=4))
    monkeypatch.setattr(Engine, "_compiled_cached", lambda self: True)
    cluster = ClusterSpec.homogeneous(1, 2)
    rows = [(float(i), 1, 5.0) for i in range(64)]
    eng = Engine(
        prepare_jobs(make_trace(rows), cluster),
        cluster,
        make_policy(load_policy_class("fifo"), {}, 0),
    )
    st = eng.state
    while (st.sim_i[kernel.I_N_FINISHED] + st.sim_i[kernel.I_NEXT_ARRIVAL]) / 128 < 0.8:
        assert eng.step(4)
    assert eng.kernels == "interpreted"
    eng._interp_s = 0.0
    eng._maybe_compile(90.0)  # projected rest <= 90 * 0.2 / 0.8 s: stays
    assert eng.kernels == "interpreted"
    eng._maybe_compile(10.0)  # 100 s spent: moves on, though the rest looks short
    assert eng.kernels == "compiled"
    eng.run()
    assert eng.state.sim_i[kernel.I_N_FINISHED] == 64
