"""The families' jitted helpers on a first run (gpusched.core.helpers): a helper whose
compiled version is not in Numba's cache runs as plain Python while another process
compiles it, with the same schedule; the compiling process compiles what it is given."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numba import types

from gpusched.algorithms import share
from gpusched.core import helpers
from gpusched.experiments.run import build_engine
from gpusched.io.trace import write_trace
from gpusched.workloads import build_workload

#: the share helper the SJF-BSBF policy calls from Python (the others from it)
CALLED = {"_plan_sjf_bsbf"}


def _dispatchers() -> list[Any]:
    return [v for v in vars(share).values() if isinstance(v, helpers._dispatcher_class())]


def _schedule(trace: Path, policy: str) -> tuple[np.ndarray, ...]:
    engine, _ = build_engine(str(trace), policy, cluster="testbed-4x4")
    st = engine.run().state
    return (st.job_first_start.copy(), st.job_finish.copy(), st.job_submit.copy())


def _empty_cache(monkeypatch, tmp_path):
    """An empty cache: nothing loads, and the "compiling process" only keeps its request
    (in the folder returned) once the file returned exists, as a compile of seconds would
    be held until the run is over."""
    requests = tmp_path / "requests"
    requests.mkdir()
    go = tmp_path / "go"
    keep = (
        "import os, shutil, sys, time, uuid\n"
        f"while not os.path.exists({str(go)!r}): time.sleep(0.02)\n"
        f"shutil.move(sys.argv[1], {str(requests)!r} + '/' + uuid.uuid4().hex)"
    )
    monkeypatch.setattr(helpers, "MODE", "auto")
    monkeypatch.setattr(helpers, "COMMAND", [sys.executable, "-c", keep])
    monkeypatch.setattr(helpers, "load_cached", lambda *a, **k: False)
    monkeypatch.setattr(helpers, "_queued", [])
    monkeypatch.setattr(helpers, "_compiling", {})
    monkeypatch.setattr(helpers, "_tried", set())
    return requests, go


@pytest.mark.parametrize(("policy", "seed"), [("sjf-bsbf", 1), ("sjf-bsbf", 2), ("sjf-ffs", 3)])
def test_plain_while_compiling_gives_the_same_schedule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy: str, seed: int
) -> None:
    trace = tmp_path / "w.csv"
    write_trace(build_workload("sjf-bsbf-testbed", seed), trace)
    monkeypatch.setattr(helpers, "MODE", "compiled")
    compiled = _schedule(trace, policy)

    requests, go = _empty_cache(monkeypatch, tmp_path)
    for d in _dispatchers():
        d._reset_overloads()
    sys.modules.pop("gpusched.algorithms.share.interpreted", None)
    try:
        plain = _schedule(trace, policy)
        assert "gpusched.algorithms.share.interpreted" in sys.modules  # the plain functions ran
        assert [d.__name__ for d in _dispatchers() if d.overloads] == []  # nothing compiled here
        assert len(set(helpers._compiling.values())) == 1  # one process at a time
        go.touch()
        for proc in list(helpers._compiling.values()):
            proc.wait(timeout=60)
        helpers._poll()  # the queued rest, as when the run goes on (or at its exit)
        for proc in list(helpers._compiling.values()):
            proc.wait(timeout=60)
    finally:
        for d in _dispatchers():  # later tests load the compiled ones again
            d._reset_overloads()
    for a, b in zip(compiled, plain, strict=True):
        np.testing.assert_array_equal(a, b)
    asked = [k for f in requests.iterdir() for k in pickle.loads(f.read_bytes())]
    assert {name for module, name, _ in asked} >= (CALLED if policy == "sjf-bsbf" else set())
    assert asked and all(module == share.__name__ for module, _, _ in asked)
    assert len(asked) == len(set(asked))  # each signature handed over once
    assert not helpers._queued


def test_the_compiling_process_compiles_what_it_is_given(tmp_path: Path) -> None:
    f8 = types.float64
    good = tmp_path / "good.pickle"
    good.write_bytes(pickle.dumps([(share.__name__, "_pair_jct", (f8, f8, f8, f8))]))
    assert helpers.main([str(good)]) == 0
    assert not good.exists()  # removed once read
    bad = tmp_path / "bad.pickle"
    bad.write_bytes(pickle.dumps([(share.__name__, "no_such_helper", (f8,))]))
    assert helpers.main([str(bad)]) == 1


def test_compiled_mode_compiles_in_the_foreground(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(helpers, "MODE", "compiled")
    monkeypatch.setattr(helpers, "_queued", [])
    share._pair_jct._reset_overloads()
    twin = helpers.interpreted(share.__name__)
    assert share._pair_jct(2.0, 1.0, 1.5, 1.5) == twin._pair_jct(2.0, 1.0, 1.5, 1.5)
    assert share._pair_jct.overloads  # a compiled version, not the plain function
    assert not helpers._queued


def test_pd_ors_plain_while_compiling_gives_the_same_schedule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # PD-ORS's rounding setup (primal_dual._round_setup) on a first run: plain Python while
    # another process compiles it, the same admitted schedules (its draw check,
    # _draw_pass, is compiled in the foreground: its plain form is slower than compiling)
    from gpusched.algorithms import primal_dual
    from gpusched.experiments.run import build_engine as build
    from gpusched.workloads.pd_ors import pd_ors_workload

    trace = tmp_path / "pd.csv"
    write_trace(pd_ors_workload(2, 40, horizon=20), trace)
    ours = [primal_dual._round_setup]

    def run() -> tuple[np.ndarray, ...]:
        engine, _ = build(str(trace), "pd-ors", cluster="pd-ors-100")
        st = engine.run().state
        return (st.job_first_start.copy(), st.job_finish.copy(), engine.policy.prices.rho.copy())

    monkeypatch.setattr(helpers, "MODE", "compiled")
    compiled = run()
    requests, go = _empty_cache(monkeypatch, tmp_path)
    for d in ours:
        d._reset_overloads()
    sys.modules.pop("gpusched.algorithms.primal_dual.interpreted", None)
    try:
        plain = run()
        assert "gpusched.algorithms.primal_dual.interpreted" in sys.modules
        assert [d.__name__ for d in ours if d.overloads] == []  # nothing compiled here
        go.touch()
        for proc in list(helpers._compiling.values()):
            proc.wait(timeout=60)
        helpers._poll()
        for proc in list(helpers._compiling.values()):
            proc.wait(timeout=60)
    finally:
        for d in ours:
            d._reset_overloads()
    assert compiled[2].any()  # some job was admitted
    for a, b in zip(compiled, plain, strict=True):
        np.testing.assert_array_equal(a, b)
    asked = [k for f in requests.iterdir() for k in pickle.loads(f.read_bytes())]
    assert {name for _, name, _ in asked} == {"_round_setup"}
