"""Arithmetic that does not depend on the machine: gpusched.core.portable, and the runs
that use it (PD-ORS, Dorm, Lazer's Bayesian optimiser) under other BLAS and SIMD settings."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusched.core import portable
from gpusched.core.portable import dot, per_unit

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


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-700, 700, allow_nan=False), max_size=20), st.floats(-3, 3))
def test_element_wise_functions_are_the_c_library_s(xs, p):
    a = np.array(xs, dtype=np.float64)
    assert portable.exp(a).tolist() == [math.exp(v) for v in xs]
    pos = np.abs(a) + 1e-3
    assert portable.log(pos).tolist() == [math.log(v) for v in pos.tolist()]
    assert portable.log1p(pos).tolist() == [math.log1p(v) for v in pos.tolist()]
    assert portable.power(pos, p).tolist() == [v**p for v in pos.tolist()]
    assert portable.power_of(1.7, a / 100).tolist() == [1.7**v for v in (a / 100).tolist()]


@pytest.mark.parametrize("size", [5, 2048, 2049, 20_000])
def test_the_python_and_the_compiled_loop_give_the_same_bits(size):
    # arrays up to portable._SMALL run in Python, larger ones compiled: both the C library's
    rng = np.random.default_rng(size)
    x = rng.normal(0.0, 30.0, size)
    pos = np.abs(x) + 1e-6
    assert portable.exp(x).tolist() == [math.exp(v) for v in x.tolist()]
    assert portable.log(pos).tolist() == [math.log(v) for v in pos.tolist()]
    assert portable.log1p(pos).tolist() == [math.log1p(v) for v in pos.tolist()]
    assert portable.power(pos, 2.7).tolist() == [v**2.7 for v in pos.tolist()]
    assert portable.power_of(1.3, x / 10).tolist() == [1.3**v for v in (x / 10).tolist()]


def test_element_wise_functions_keep_the_shape_and_the_edges():
    x = np.arange(6.0).reshape(2, 3)
    assert portable.exp(x).shape == (2, 3) and portable.exp(2.0).shape == ()
    assert portable.log(np.array([0.0, -1.0])).tolist()[0] == -math.inf
    assert math.isnan(portable.log(np.array([-1.0]))[0])
    assert portable.log1p(np.array([-1.0]))[0] == -math.inf
    assert math.isnan(portable.log1p(np.array([-2.0]))[0])
    assert portable.exp(np.array([710.0, -800.0])).tolist() == [math.inf, 0.0]
    assert portable.power(np.array([0.0, 0.0, 0.0]), -1.0).tolist() == [math.inf] * 3
    assert portable.power(np.array([0.0]), 0.0).tolist() == [1.0]
    assert math.isnan(portable.power(np.array([-1.0]), 0.5)[0])
    big = np.full(5000, 710.0)  # the compiled loop has the same edges
    assert portable.exp(big)[0] == math.inf and portable.power(np.zeros(5000), -1.0)[0] == math.inf


# Each script runs in fresh processes under OpenBLAS's kernels with FMA (Haswell) and
# without (Prescott), and with NumPy's AVX-512 code switched off; it prints a digest of
# what it decided. Before gpusched.core.portable, gp_linalg and boxmin, each gave another
# digest under each setting: PD-ORS's ps-20 schedule (BLAS, Haswell against Prescott);
# PD-ORS on the 100-job alternating workload of Fig. 9 on the 18x-capacity cluster, seed 2
# (NumPy's exp in the prices); the Bayesian optimiser's suggestions (BLAS and exp, four
# digests under four settings)
_SETTINGS = (
    {"OPENBLAS_CORETYPE": "Haswell"},
    {"OPENBLAS_CORETYPE": "Prescott"},
    {"NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL"},
)

_ROLES = """
import hashlib, subprocess, sys, tempfile
from pathlib import Path
from gpusched.experiments.run import replay
out = []
for policy in ("pd-ors", "dorm"):
    _, res = replay("ps-20", policy, cluster="pd-ors-30")
    st = res.state
    out.append(repr((st.job_first_start.tolist(), st.job_finish.tolist(), st.job_status.tolist())))
with tempfile.TemporaryDirectory() as tmp:
    w = str(Path(tmp) / "w.csv")
    subprocess.run([sys.executable, "-m", "gpusched", "workload", "pd-ors", "--jobs", "100",
                    "--horizon", "80", "--seed", "2", "--arrivals", "alternating", "-o", w],
                   check=True, capture_output=True)
    _, res = replay(w, "pd-ors", cluster="examples/pd-ors/clusters/pd-ors-30-x18max.toml")
    st = res.state
    out.append(repr((st.job_first_start.tolist(), st.job_finish.tolist())))
print(hashlib.sha256("\\n".join(out).encode()).hexdigest())
"""

_BAYES = """
import hashlib
import numpy as np
from gpusched.algorithms.bayesopt import BayesOpt
rng = np.random.default_rng(11)
bo = BayesOpt(0.0, 100.0, 4, bootstrap=10, min_updates=60, rng=np.random.default_rng(5))
out = []
for i in range(90):
    c = rng.random(4) * np.array([8.0, 12.0, 5.0, 4.0])
    s = bo.suggest(c)
    out.append(s.x.hex())
    if s.stage != "exploitation":
        f = max(s.x - (10 + 7.5 * c[0]), 0.0) + (rng.random() < 0.3) * rng.random() * 20
        bo.observe(s.x, c, f)
assert bo.stage == "exploitation"
print(hashlib.sha256(" ".join(out).encode()).hexdigest())
"""


def _digests(script: str) -> list[str]:
    out = []
    for setting in _SETTINGS:
        run = subprocess.run(
            [sys.executable, "-c", script],
            cwd=ROOT,
            env={**os.environ, **setting},
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert run.returncode == 0, run.stderr[-2000:]
        out.append(run.stdout.strip())
    return out


def test_role_schedules_do_not_depend_on_blas_or_simd():
    assert len(set(_digests(_ROLES))) == 1


def test_bayesian_optimiser_does_not_depend_on_blas_or_simd():
    assert len(set(_digests(_BAYES))) == 1
