"""The kernels compiled ahead of time (gpusched.core.aot): the same schedules as
Numba's compiled kernels and the interpreted twin, bit for bit; a run on them imports
neither Numba nor llvmlite; and they are used only where they fit (the sources they were
built from, the argument types they were built for), never silently in place of a change.

The module is built into the package's folder once per session if it is missing or stale
(as the install's build hook does; see ``hatch_build.py``). The rest of the suite runs with
``GPUSCHED_AOT=0`` (``tests/conftest.py``); CI runs the engine's tests once more with
``GPUSCHED_AOT=1``, which requires these kernels on every run on compiled kernels.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

from gpusched.core import aot
from gpusched.core.engine import Engine
from gpusched.core.jobs import prepare_jobs
from gpusched.core.registry import load_policy_class, make_policy
from gpusched.io.cluster import ClusterSpec
from tests.helpers import assert_same_run, make_trace, run_workload, write_gang_csv
from tests.test_properties import phases, workloads

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module", autouse=True)
def built():
    """The module, built if missing or stale (the way the install's hook builds it)."""
    fresh = aot.META.is_file() and json.loads(aot.META.read_text())["digest"] == (
        aot.source_digest()
    )
    if not fresh or not list(aot.META.parent.glob("_kernels_aot.*.so")):
        subprocess.run(
            [sys.executable, "-m", "gpusched.core.aot_build"],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )


def _run(policy, w, ph, kernels, aot_env, monkeypatch, params=None, mode="fused"):
    monkeypatch.setenv("GPUSCHED_AOT", aot_env)
    return run_workload(policy, w, ph, mode, kernels, params)


FUSED = [
    ("fifo", None),
    ("sjf", None),
    ("srtf", None),
    ("tiresias", None),
    ("tiresias", {"starve": 2.0}),
    ("lazer", {"max_defer": 0.0}),
]


@pytest.mark.parametrize(("policy", "params"), FUSED)
@settings(max_examples=15, deadline=None)
@given(w=workloads(), ph=phases())
def test_native_kernels_give_numbas_and_the_interpreted_schedule(policy, params, w, ph):
    """Random workloads with load and save times under every fused rule: the kernels
    compiled ahead of time, Numba's, and the interpreted twin end with the same state and
    timeline, bit for bit."""
    with pytest.MonkeyPatch.context() as mp:
        eng, native = _run(policy, w, ph, "auto", "1", mp, params)
        assert eng.k.native and eng.kernels == "compiled"
        e2, jit = _run(policy, w, ph, "compiled", "0", mp, params)
        assert not e2.k.native and e2.kernels == "compiled"
        e3, plain = _run(policy, w, ph, "interpreted", "1", mp, params)
        assert not e3.k.native and e3.kernels == "interpreted"
    assert_same_run(native, jit)
    assert_same_run(native, plain)


PYTHON = [
    ("fifo", None),
    ("srtf", None),
    ("tiresias", None),
    ("lazer", {"max_defer": 0.0}),
    ("srtf-periodic", None),
]


@pytest.mark.parametrize(("policy", "params"), PYTHON)
@settings(max_examples=10, deadline=None)
@given(w=workloads(), ph=phases())
def test_native_python_path_gives_numbas_and_the_interpreted_schedule(policy, params, w, ph):
    """The Python path (each decision by the policy's decide(), the engine calling a dozen
    kernel entry points): the same three-way agreement."""
    with pytest.MonkeyPatch.context() as mp:
        eng, native = _run(policy, w, ph, "auto", "1", mp, params, mode="python")
        assert eng.k.native and eng.mode == "python"
        e2, jit = _run(policy, w, ph, "compiled", "0", mp, params, mode="python")
        assert not e2.k.native
        _, plain = _run(policy, w, ph, "interpreted", "1", mp, params, mode="python")
    assert_same_run(native, jit)
    assert_same_run(native, plain)


def test_native_lazer_answers_its_questions(monkeypatch):
    """Lazer with its predictor: the kernel stops to ask (the code ASK) and resumes, on the
    native entry as on Numba's."""
    from tests.test_lazer_fused import ContextX

    rng = np.random.default_rng(3)
    rows = [
        (float(t), int(g), float(d))
        for t, g, d in zip(
            np.cumsum(rng.exponential(30, 80)).round(1),
            rng.choice([1, 2, 4], 80),
            rng.exponential(400, 80).round(1) + 1,
            strict=True,
        )
    ]
    out = []
    for env in ("1", "0"):
        monkeypatch.setenv("GPUSCHED_AOT", env)
        cluster = ClusterSpec.homogeneous(2, 4)
        pol = make_policy(load_policy_class("lazer"), {}, 0)
        pol.predictor = ContextX()
        eng = Engine(prepare_jobs(make_trace(rows), cluster), cluster, pol, kernels="compiled")
        assert eng.mode == "fused" and eng.k.native == (env == "1")
        out.append(eng.run())
    assert_same_run(*out)


def test_the_tui_peek_runs_on_the_native_kernels(monkeypatch):
    """``Engine.peek`` (the TUI's next-decision time) on the native entries: the same answers
    as Numba's, step by step."""
    rows = [(0.0, 1, 5.0), (1.0, 2, 3.0), (7.5, 4, 2.0), (8.0, 1, 9.0)]
    seen = []
    for env in ("1", "0"):
        monkeypatch.setenv("GPUSCHED_AOT", env)
        cluster = ClusterSpec.homogeneous(1, 4)
        pol = make_policy(load_policy_class("tiresias"), {}, 0)
        eng = Engine(prepare_jobs(make_trace(rows), cluster), cluster, pol, kernels="compiled")
        assert eng.k.native == (env == "1") and eng.k.load_peek(eng.cfg)
        peeks = [eng.peek()]
        while eng.step(1):
            peeks.append(eng.peek())
        seen.append(peeks)
    assert seen[0] == seen[1] and len(seen[0]) > 3


def test_a_native_run_imports_neither_numba_nor_llvmlite(tmp_path):
    """A 6,000-job replay with --out in a fresh process: it runs on the native kernels from
    its start, and Numba is never imported."""
    n = 6000
    write_gang_csv(tmp_path / "t.csv", n, 20)
    code = (
        "import json, sys\n"
        "from gpusched.cli import app\n"
        "for p in ('fifo', 'tiresias'):\n"
        "    sys.argv = ['gpusched', 'replay', 't.csv', '-P', p, '-o', 'runs/' + p]\n"
        "    try:\n"
        "        app()\n"
        "    except SystemExit as exc:\n"
        "        assert not exc.code, exc.code\n"
        "print('numba' in sys.modules, 'llvmlite' in sys.modules)\n"
    )
    env = {**__import__("os").environ, "GPUSCHED_AOT": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    assert out.stdout.splitlines()[-1] == "False False"
    for p in ("fifo", "tiresias"):
        summary = json.loads((tmp_path / "runs" / p / "summary.json").read_text())
        assert summary["n_finished"] == n


def _small(monkeypatch, env):
    monkeypatch.setenv("GPUSCHED_AOT", env)
    cluster = ClusterSpec.homogeneous(1, 4)
    jobs = prepare_jobs(make_trace([(0.0, 1, 5.0), (1.0, 2, 3.0)]), cluster)
    return Engine(jobs, cluster, make_policy(load_policy_class("fifo"), {}, 0), kernels="compiled")


def test_changed_sources_fall_back_to_numba_or_fail_when_required(monkeypatch):
    """Kernels built from other sources are never used: Numba's compile the source as it is
    now (or, with GPUSCHED_AOT=1, the run stops and says why)."""
    monkeypatch.setattr(aot, "source_digest", lambda folder=None: "0" * 40)
    assert not _small(monkeypatch, "").k.native
    with pytest.raises(aot.NotUsable, match="sources changed"):
        _small(monkeypatch, "1")


def test_other_argument_types_fall_back(monkeypatch):
    """A state whose arrays differ in type from those built for is not handed to them."""
    eng = _small(monkeypatch, "1")
    assert eng.k.native
    st = eng.state
    assert aot.load(st, eng.cfg, eng._tl_buf, "run_fused") is not None
    other = st._replace(job_submit=st.job_submit.astype(np.float32))
    with pytest.raises(aot.NotUsable, match="argument types differ"):
        aot.load(other, eng.cfg, eng._tl_buf, "run_fused")
    readonly = st.job_work.copy()
    readonly.flags.writeable = False
    with pytest.raises(aot.NotUsable, match="argument types differ"):
        aot.load(st._replace(job_work=readonly), eng.cfg, eng._tl_buf, "run_fused")
    monkeypatch.setenv("GPUSCHED_AOT", "")
    assert aot.load(other, eng.cfg, eng._tl_buf, "run_fused") is None


def test_off_and_no_jit_never_use_them(monkeypatch):
    assert not _small(monkeypatch, "0").k.native
    monkeypatch.setenv("NUMBA_DISABLE_JIT", "1")
    assert aot.choice() == "off"


def test_a_wrong_setting_is_one_line(tmp_path):
    """GPUSCHED_AOT=yes: a one-line error, not a traceback."""
    env = {**__import__("os").environ, "GPUSCHED_AOT": "yes"}
    out = subprocess.run(
        [sys.executable, "-m", "gpusched", "replay", "-P", "fifo"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
    )
    assert out.returncode != 0
    assert out.stderr.strip().splitlines() == [
        "error: GPUSCHED_AOT='yes': expected 0, 1 or nothing"
    ]


def test_type_keys_tell_apart_what_numba_types_apart():
    """Two values with the same key have the same Numba type (the wrappers trust the key)."""
    from numba import typeof

    base = np.zeros((3, 4))
    values = [
        np.zeros(3),
        np.zeros(3, np.float32),
        np.zeros(3, np.int32),
        np.zeros(3, np.int64),
        np.zeros(3, np.int8),
        np.zeros(3, np.bool_),
        base,
        np.asfortranarray(base),
        base[:, ::2],
        base[::2],
        np.zeros(0),
        1,
        1.0,
        True,
        np.float64(1.0),
        np.int32(1),
    ]
    ro = np.zeros(3)
    ro.flags.writeable = False
    values.append(ro)
    keys = [aot.type_key(v) for v in values]
    for i, a in enumerate(values):
        for j, b in enumerate(values):
            if keys[i] == keys[j]:
                assert typeof(a) == typeof(b), (keys[i], a, b)
    # only the two "A" layouts share a key, and the empty array with np.zeros(3)
    assert len(set(keys)) == len(keys) - 2
    assert aot.type_key(np.zeros(3).astype(">f8")) != aot.type_key(np.zeros(3))
    with pytest.raises(TypeError):
        aot.type_key("text")


def test_the_handle_lays_the_state_out_as_numba_does(monkeypatch):
    """aot.Handle (no Numba) and stateref.StateHandle lay the state out alike, by
    aot.array_words, whose field order StateHandle checks against Numba's data model."""
    from gpusched.core import stateref

    eng = _small(monkeypatch, "0")
    assert np.array_equal(aot.Handle(eng.state)._words, stateref.StateHandle(eng.state)._words)
    order = stateref._ARRAY_FIELDS
    monkeypatch.setattr(stateref, "_ARRAY_FIELDS", (order[1], order[0], *order[2:]))
    with pytest.raises(TypeError, match="not an array Numba lays out as expected"):
        stateref.StateHandle(eng.state)


def test_warm_up_says_whether_they_are_used(monkeypatch):
    """``gpusched warm-up`` ends with a line on these kernels: in use, or why not."""
    from typer.testing import CliRunner

    from gpusched.cli import app

    monkeypatch.setenv("GPUSCHED_AOT", "")
    res = CliRunner().invoke(app, ["warm-up"])
    assert res.exit_code == 0
    assert res.output.splitlines()[-1] == (
        "kernels compiled ahead of time at install: in use (the engine's kernels load without "
        "importing Numba)"
    )
    monkeypatch.setattr(aot, "source_digest", lambda folder=None: "0" * 40)
    res = CliRunner().invoke(app, ["warm-up"])
    assert res.output.splitlines()[-1] == (
        "kernels compiled ahead of time at install: not used: the kernel's sources changed "
        "since they were built (rebuild them: python -m gpusched.core.aot_build)"
    )


def test_native_entries_refuse_a_gpu_list_of_another_type(monkeypatch):
    """Numba's entries raise TypeError for an array of another item size; the native ones
    would crash the process (numba.pycc's wrappers cannot raise it), so the GPU lists, the
    arrays the engine passes call by call, are checked before the call."""
    from tests.test_bound_kernels import engine

    monkeypatch.setenv("GPUSCHED_AOT", "1")
    eng = engine()
    eng.step(1)
    assert eng.k.native
    for bad in (np.zeros(1, np.float64), np.zeros(1, np.int64), np.zeros(4, np.int32)[::2], [1]):
        with pytest.raises(TypeError, match="start_on: argument 2 must be a contiguous"):
            eng.k.start_on(0, bad, 0.0)
    from gpusched.core.state import QUEUED

    assert eng.state.job_status[0] == QUEUED  # nothing was applied
    assert eng.k.start_on(0, np.array([1], np.int32), 0.0) is True
    assert eng.state.job_status[0] != QUEUED


def test_the_entry_lists_are_the_kernels_lists():
    """The module holds every entry point ``Kernels`` binds, each with its argument kinds."""
    from gpusched.core.jit import Kernels

    assert set(aot.FUSED) == set(Kernels.OTHERS)
    assert set(aot.PYTHON) == set(Kernels.PYTHON_PATH)
    assert set(aot.ARGS) == set(aot.ENTRIES)
