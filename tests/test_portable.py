"""Sums of products that do not depend on the machine (gpusched.algorithms.portable)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusched.algorithms.portable import dot, per_unit

ROOT = Path(__file__).resolve().parent.parent


def test_per_unit_adds_in_index_order():
    # (((1e16 + 1) - 1e16) + 1) is 1 in floats; adding the pairs first would give 0
    a = np.array([[1e16, 1.0, -1e16, 1.0], [1.0, 2.0, 3.0, 4.0]])
    got = per_unit(a, np.ones(4))
    assert got.tolist() == [1.0, 10.0] and got.dtype == np.float64
    assert per_unit(np.ones((2, 3, 2)), np.array([2.0, 3.0])).shape == (2, 3)


def test_dot_is_correctly_rounded():
    assert dot(np.array([1e16, 1.0, -1e16]), np.array([1.0, 1.0, 1.0])) == 1.0
    assert dot(np.array([3, 4]), np.array([0.5, 0.25])) == 2.5  # integer counts too
    assert isinstance(dot(np.zeros(0), np.zeros(0)), float)


def test_shapes_that_do_not_match_are_refused():
    with pytest.raises(ValueError, match="do not match"):
        per_unit(np.ones((2, 3)), np.ones(4))
    with pytest.raises(ValueError, match="do not match"):
        dot(np.ones(3), np.ones(4))


finite = st.floats(-1e6, 1e6, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(rows=st.integers(0, 5), data=st.data())
def test_per_unit_is_the_sum_in_order(rows, data):
    r = data.draw(st.integers(1, 5))
    a = np.array(data.draw(st.lists(finite, min_size=rows * r, max_size=rows * r))).reshape(rows, r)
    v = np.array(data.draw(st.lists(finite, min_size=r, max_size=r)))
    want = [sum((float(x) * float(y) for x, y in zip(row, v, strict=True)), 0.0) for row in a]
    assert per_unit(a, v).tolist() == want


# the same runs under two of OpenBLAS's kernel sets: FMA (Haswell) and none (Prescott);
# NumPy's ``@`` on floats gave PD-ORS's ps-20 schedule and its utilities another last bit,
# and so other decisions, under each
_RUNS = """
import hashlib, sys
from gpusched.experiments.run import replay
out = []
for policy in sys.argv[1:]:
    _, res = replay("ps-20", policy, cluster="pd-ors-30")
    st = res.state
    out.append(repr((st.job_first_start.tolist(), st.job_finish.tolist(), st.job_status.tolist())))
print(hashlib.sha256("\\n".join(out).encode()).hexdigest())
"""


def test_role_schedules_do_not_depend_on_the_blas_kernels():
    digests = []
    for core in ("Haswell", "Prescott"):
        env = {**os.environ, "OPENBLAS_CORETYPE": core}
        run = subprocess.run(
            [sys.executable, "-c", _RUNS, "pd-ors", "dorm"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert run.returncode == 0, run.stderr[-2000:]
        digests.append(run.stdout.strip())
    assert digests[0] == digests[1]
