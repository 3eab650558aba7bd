"""The Python path's kernel calls: entry points bound to the run's types, the order check
and the jobs started now (``gpusched.core.jit.Kernels``, ``kernel.check_order``,
``kernel.started_at``)."""

from __future__ import annotations

import numpy as np
import pytest

from gpusched.core import kernel
from gpusched.core.engine import Engine
from gpusched.core.jobs import prepare_jobs
from gpusched.core.policy import Decision, Start
from gpusched.core.state import QUEUED
from gpusched.errors import PolicyError
from gpusched.io.cluster import ClusterSpec
from tests.helpers import Scripted, make_trace

ROWS = [(0, 1, 10), (0, 1, 20), (0, 2, 5), (30, 1, 1)]


def engine(decisions=(), rows=ROWS):
    cluster = ClusterSpec.homogeneous(1, 2)
    jobs = prepare_jobs(make_trace(list(rows)), cluster)
    return Engine(jobs, cluster, Scripted(decisions), mode="python", kernels="compiled")


def test_check_order_reports_the_first_problem_of_each_kind_in_turn():
    eng = engine()
    eng.step(1)  # jobs 0-2 queued, job 3 pending
    st = eng.state
    check = eng.k.check_order
    assert tuple(check(np.array([2, 0, 1], np.int32))) == (0, -1)
    # an unknown index is reported before an earlier repeat, a repeat before a status
    assert tuple(check(np.array([0, 0, 9], np.int32))) == (1, 2)
    assert tuple(check(np.array([3, 1, 1], np.int32))) == (2, 2)
    assert tuple(check(np.array([1, 3], np.int32))) == (3, 1)
    assert tuple(check(np.array([-1], np.int32))) == (1, 0)
    assert not st.job_mark.any()  # the scratch is left clean, whatever the outcome


@pytest.mark.parametrize(
    ("order", "message"),
    [
        ([0, 0, 9], "unknown job index 9 in order"),
        ([1, 2, 1], "order lists a job twice"),
        ([0, 3], r"job 'j3' \(index 3\) acted on before its arrival"),
    ],
)
def test_a_bad_order_is_refused_with_its_first_problem(order, message):
    eng = engine([Decision(order=np.array(order))])
    with pytest.raises(PolicyError, match=message):
        eng.run()
    assert (eng.state.job_status[:3] == QUEUED).all()  # nothing was applied


def test_started_at_lists_the_holders_started_at_that_time_in_run_order():
    eng = engine([Decision(actions=[Start(1), Start(0)])])
    eng.step(1)
    st = eng.state
    out = np.zeros(4, np.int32)
    n = eng.k.started_at(0.0, out)
    assert out[:n].tolist() == st.run[: st.sim_i[2]].tolist() == [1, 0]
    assert eng.k.started_at(1.0, out) == 0


def test_bound_kernels_refuse_arguments_of_other_types():
    """The entry points skip numba's dispatch: an array of another dtype must still be
    refused (not reinterpreted), so a wrong call fails loudly."""
    eng = engine()
    eng.step(1)
    if not hasattr(kernel.start_on, "compile"):
        pytest.skip("NUMBA_DISABLE_JIT: the plain functions are called")
    with pytest.raises(TypeError):
        eng.k.start_on(0, np.zeros(1, np.float64), 0.0)
    assert eng.state.job_status[0] == QUEUED


def test_bound_and_dispatched_kernels_leave_the_same_state():
    """A start and a completion through the bound entry points (the state by its handle)
    and through numba's dispatcher (the state tuple itself) give the same state, array by
    array."""
    a, b = engine(), engine()
    for eng in (a, b):
        eng.step(1)
    a.k.start_on(0, np.array([1], np.int32), 0.0)
    kernel.start_on(b.state, 0, np.array([1], np.int32), 0.0)
    done_a, done_b = np.zeros(4, np.int32), np.zeros(4, np.int32)
    got_a = a.k.step(a.cfg, done_a)
    got_b = kernel.step(b.state, b.cfg, done_b)
    assert tuple(got_a) == tuple(got_b)
    for name, x, y in zip(a.state._fields, a.state, b.state, strict=True):
        np.testing.assert_array_equal(x, y, err_msg=name)
    assert got_a[1] == 1 and done_a[0] == 0  # job 0 finished at the step's decision point
