"""The kernels' two forms (gpusched.core.jit): the interpreted twin gives the compiled kernels'
schedule bit for bit, a run may move from one to the other mid-way, and a small run
never imports Numba."""

from __future__ import annotations

import subprocess
import sys
import types

import numpy as np
import pytest
from hypothesis import given, settings

from gpusched.core import engine as engine_module
from gpusched.core import kernel, warmup
from gpusched.core.engine import Engine
from gpusched.core.jit import SUFFIX, Switch, interpreted
from gpusched.core.jobs import prepare_jobs
from gpusched.core.registry import load_policy_class, make_policy
from gpusched.io.cluster import ClusterSpec
from gpusched.results.metrics import manifest
from tests.helpers import GANG_POLICIES, make_trace
from tests.test_properties import phases, workloads


def _run(policy, w, ph, mode, kernels, params=None):
    servers, gpus, rows, slot = w
    n = len(rows)
    cluster = ClusterSpec.homogeneous(servers, gpus)
    jobs = prepare_jobs(make_trace(rows), cluster)
    pol = make_policy(load_policy_class(policy), params or {}, 0)
    eng = Engine(
        jobs,
        cluster,
        pol,
        slot_s=slot,
        mode=mode,
        load_s=ph[0][:n],
        save_s=ph[1][:n],
        kernels=kernels,
    )
    return eng, eng.run()


def _same(a, b):
    for name, x, y in zip(a.state._fields, a.state, b.state, strict=True):
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), name
    assert a.timeline.keys() == b.timeline.keys()
    for key in a.timeline:
        assert a.timeline[key].tobytes() == b.timeline[key].tobytes(), key


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
    a_eng, a = _run(policy, w, ph, mode, "interpreted")
    b_eng, b = _run(policy, w, ph, mode, "compiled")
    assert a_eng.kernels == "interpreted" and b_eng.kernels == "compiled"
    _same(a, b)
    assert manifest(a, None) == manifest(b, None)  # a run's record never says which ran


@settings(max_examples=20, deadline=None)
@given(w=workloads(), ph=phases())
def test_interpreted_tiresias_starvation_gives_the_compiled_schedule(w, ph):
    params = {"starve": 2.0, "thresholds": "20,200"}
    _, a = _run("tiresias", w, ph, "auto", "interpreted", params)
    _, b = _run("tiresias", w, ph, "auto", "compiled", params)
    _same(a, b)


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
    _, b = _run(policy, w, ph, mode, "compiled")
    assert seen[0] == "compiled" and auto.kernels == "compiled"
    _same(a, b)


def test_unknown_kernels_are_refused():
    cluster = ClusterSpec.homogeneous(1, 1)
    jobs = prepare_jobs(make_trace([(0, 1, 1)]), cluster)
    with pytest.raises(ValueError, match="unknown kernels 'fast'"):
        Engine(jobs, cluster, make_policy(load_policy_class("fifo"), {}, 0), kernels="fast")


def test_a_small_replay_never_imports_numba(tmp_path):
    """A 300-job trace under three policies with --out, in a fresh process: the run is short
    enough to stay interpreted and Numba is never imported."""
    rng = np.random.default_rng(1)
    lines = ["job_id,submit_time,num_gpus,duration"]
    lines += [
        f"j{i},{i * 30},{int(g)},{int(d) + 1}"
        for i, (g, d) in enumerate(
            zip(rng.choice([1, 2, 4], 300), rng.exponential(600, 300), strict=True)
        )
    ]
    (tmp_path / "t.csv").write_text("\n".join(lines) + "\n")
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


@pytest.mark.parametrize("cached", [False, True])
def test_a_short_run_on_a_cold_cache_stays_interpreted_and_says_so(monkeypatch, cached):
    """A run whose rest would take less than a compile stays interpreted when the cache
    is empty (the result says so, for the CLI's warm-up hint), and moves on when it is
    not."""
    monkeypatch.setattr(warmup, "_warm", set())
    monkeypatch.setattr(
        engine_module, "SWITCH", Switch(min_s=0.0, load_s=0.0, compile_s=1e9, chunk=16)
    )
    monkeypatch.setattr(Engine, "_compiled_cached", lambda self: cached)
    cluster = ClusterSpec.homogeneous(1, 2)
    rows = [(float(i), 1, 5.0) for i in range(64)]
    jobs = prepare_jobs(make_trace(rows), cluster)
    eng = Engine(jobs, cluster, make_policy(load_policy_class("fifo"), {}, 0))
    res = eng.run()
    assert eng.kernels == ("compiled" if cached else "interpreted")
    assert res.extra["uncompiled"] is (not cached)


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
