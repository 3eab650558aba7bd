"""The projected BFGS method of gpusched.algorithms.boxmin, against SciPy's L-BFGS-B."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from gpusched.algorithms.boxmin import minimize_box


def _quadratic(a: np.ndarray, b: np.ndarray):
    """f = 1/2 x^T A x - b^T x and its gradient, on lists (A symmetric positive definite)."""

    def fun(x):
        v = np.array(x)
        return float(0.5 * v @ a @ v - b @ v), (a @ v - b).tolist()

    return fun


def test_an_interior_minimum_is_found():
    a = np.array([[3.0, 1.0], [1.0, 2.0]])
    b = np.array([1.0, -2.0])
    got = minimize_box(_quadratic(a, b), [0.0, 0.0], [-10.0, -10.0], [10.0, 10.0])
    assert np.allclose(got.x, np.linalg.solve(a, b), atol=1e-6)
    assert got.stop in ("gradient", "decrease")


def test_a_minimum_on_the_bound_holds_the_variable_there():
    # unconstrained minimum at (2, -3): the box cuts both coordinates
    fun = _quadratic(np.eye(2), np.array([2.0, -3.0]))
    got = minimize_box(fun, [0.0, 0.0], [-1.0, -1.0], [1.0, 1.0])
    assert got.x == [1.0, -1.0] and got.stop == "gradient"


def test_rosenbrock_in_a_box_matches_scipy():
    def fun(x):
        a, b = x
        f = (1 - a) ** 2 + 100 * (b - a * a) ** 2
        return f, [-2 * (1 - a) - 400 * a * (b - a * a), 200 * (b - a * a)]

    got = minimize_box(fun, [-1.2, 1.0], [-2.0, -2.0], [2.0, 0.5])
    ref = minimize(
        lambda v: fun(v), [-1.2, 1.0], jac=True, method="L-BFGS-B", bounds=[(-2, 2), (-2, 0.5)]
    )
    assert np.allclose(got.x, ref.x, atol=1e-4) and got.f == pytest.approx(ref.fun, abs=1e-8)
    assert -2.0 <= got.x[0] <= 2.0 and -2.0 <= got.x[1] <= 0.5


def test_a_start_outside_the_box_is_projected_and_inf_is_backtracked():
    # f is undefined (inf) beyond x = 0.5: the search must halve its steps back
    def fun(x):
        if x[0] > 0.5:
            return math.inf, [0.0]
        return (x[0] - 2.0) ** 2, [2.0 * (x[0] - 2.0)]

    got = minimize_box(fun, [-5.0], [-1.0], [1.0])
    assert -1.0 <= got.x[0] <= 0.5 and got.x[0] > 0.49
    assert minimize_box(fun, [0.9], [0.9], [1.0]).stop == "not finite"


def test_bad_boxes_are_refused():
    fun = _quadratic(np.eye(1), np.zeros(1))
    with pytest.raises(ValueError, match="one length"):
        minimize_box(fun, [0.0], [0.0, 0.0], [1.0])
    with pytest.raises(ValueError, match="finite"):
        minimize_box(fun, [0.0], [1.0], [0.0])
    with pytest.raises(ValueError, match="finite"):
        minimize_box(fun, [0.0], [-math.inf], [0.0])


def test_the_same_inputs_give_the_same_bits():
    fun = _quadratic(np.array([[2.0, 0.3], [0.3, 1.0]]), np.array([0.7, 0.1]))
    a = minimize_box(fun, [0.3, 0.9], [-1.0, 0.0], [1.0, 1.0])
    b = minimize_box(fun, [0.3, 0.9], [-1.0, 0.0], [1.0, 1.0])
    assert [v.hex() for v in a.x] == [v.hex() for v in b.x] and a.steps == b.steps


@settings(max_examples=100, deadline=None)
@given(
    n=st.integers(1, 5),
    seed=st.integers(0, 10_000),
    width=st.floats(0.1, 10.0),
)
def test_convex_quadratics_reach_scipy_s_minimum_inside_the_box(n, seed, width):
    rng = np.random.default_rng(seed)
    m = rng.normal(size=(n, n))
    a = m @ m.T + 0.5 * np.eye(n)  # condition number stays modest
    b = rng.normal(size=n) * 3
    lo, hi = -width * rng.random(n), width * rng.random(n)
    x0 = rng.uniform(lo, hi)
    fun = _quadratic(a, b)
    got = minimize_box(fun, x0.tolist(), lo.tolist(), hi.tolist())
    assert all(lo[i] <= got.x[i] <= hi[i] for i in range(n))
    assert got.f <= fun(x0.tolist())[0] + 1e-12
    ref = minimize(
        lambda v: fun(v.tolist()),
        x0,
        jac=True,
        method="L-BFGS-B",
        bounds=list(zip(lo, hi, strict=True)),
    )
    # a strictly convex f has one minimum over the box: both methods stop close to it
    assert got.f == pytest.approx(ref.fun, rel=1e-6, abs=1e-6)
