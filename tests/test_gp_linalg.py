"""The Gaussian-process arithmetic of gpusched.algorithms.gp_linalg against NumPy, SciPy and
scikit-learn (which compute the same quantities through BLAS and LAPACK)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import solve_triangular

from gpusched.algorithms import gp_linalg as gl


def _spd(n: int, seed: int) -> np.ndarray:
    m = np.random.default_rng(seed).normal(size=(n, n))
    return m @ m.T + n * np.eye(n)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 30), m=st.integers(1, 4), seed=st.integers(0, 10_000))
def test_cholesky_and_solves_match_lapack(n, m, seed):
    a = _spd(n, seed)
    low, ok = gl.cholesky(a)
    assert ok
    assert np.allclose(low, np.linalg.cholesky(a), rtol=1e-10, atol=1e-12)
    assert np.array_equal(low, np.tril(low))
    b = np.random.default_rng(seed + 1).normal(size=(n, m))
    assert np.allclose(gl.solve_lower(low, b), solve_triangular(low, b, lower=True), rtol=1e-9)
    assert np.allclose(gl.solve_upper_t(low, b), solve_triangular(low.T, b, lower=False), rtol=1e-9)


def test_cholesky_reports_a_matrix_that_is_not_positive_definite():
    _, ok = gl.cholesky(np.array([[1.0, 2.0], [2.0, 1.0]]))
    assert not ok
    _, ok = gl.cholesky(np.array([[0.0]]))
    assert not ok


def _kernel(amp, ls, noise):
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    return ConstantKernel(amp, (1e-2, 1e2)) * RBF(ls, (1e-1, 1e2)) + WhiteKernel(noise, (1e-4, 1e1))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_log_likelihood_and_gradient_match_scikit_learn(seed):
    from sklearn.gaussian_process import GaussianProcessRegressor

    rng = np.random.default_rng(seed)
    z, y = rng.random((25, 3)), rng.normal(size=25)
    amp, ls, noise = 1.7, np.array([0.3, 0.8, 2.0]), 0.05
    gp = GaussianProcessRegressor(_kernel(amp, ls, noise), alpha=1e-10, optimizer=None).fit(z, y)
    theta = np.log([amp, *ls, noise])
    want, want_grad = gp.log_marginal_likelihood(theta, eval_gradient=True)
    got, grad = gl.neg_log_likelihood(theta, z, y, 1e-10)
    assert -got == pytest.approx(want, rel=1e-10)
    assert np.allclose(-grad, want_grad, rtol=1e-7, atol=1e-9)


def test_posterior_matches_scikit_learn():
    from sklearn.gaussian_process import GaussianProcessRegressor

    rng = np.random.default_rng(4)
    z, y, q = rng.random((30, 2)), rng.normal(size=30), rng.random((7, 2))
    amp, ls, noise = 0.9, np.array([0.4, 0.6]), 0.02
    ref = GaussianProcessRegressor(_kernel(amp, ls, noise), alpha=1e-10, optimizer=None).fit(z, y)
    mu_ref, sd_ref = ref.predict(q, return_std=True)
    low, alpha, ok = gl.condition(z, y, amp, ls, noise, 1e-10)
    assert ok
    mu, var = gl.posterior(gl.rbf(q, z, ls, amp), alpha, low, amp)
    assert np.allclose(mu, mu_ref, rtol=1e-8, atol=1e-10)
    assert np.allclose(var + noise, sd_ref**2, rtol=1e-8)  # scikit-learn's std counts the noise


def test_the_line_and_grid_factors_are_the_rbf_split_by_input():
    rng = np.random.default_rng(5)
    z, amp, ls = rng.random((12, 3)), 1.3, np.array([0.3, 0.5, 0.9])
    rest = rng.random(2)
    u = np.array([0.1, 0.45, 0.8])
    full = gl.rbf(np.column_stack([u, np.tile(rest, (3, 1))]), z, ls, amp)
    factor = gl.rest_factor(np.ascontiguousarray(z[:, 1:]), rest, ls[1:], amp)
    e, de = gl.line_k(u, np.ascontiguousarray(z[:, 0]), 1.0 / ls[0] ** 2, factor)
    assert np.allclose(e, full, rtol=1e-12)
    assert np.allclose(
        e, gl.grid_factor(u, np.ascontiguousarray(z[:, 0]), ls[0]) * factor, rtol=1e-12
    )
    # the derivative in u, by central differences
    h = 1e-6
    ep, _ = gl.line_k(u + h, np.ascontiguousarray(z[:, 0]), 1.0 / ls[0] ** 2, factor)
    em, _ = gl.line_k(u - h, np.ascontiguousarray(z[:, 0]), 1.0 / ls[0] ** 2, factor)
    assert np.allclose(de, (ep - em) / (2 * h), rtol=1e-5, atol=1e-8)


def test_nei_slope_is_its_derivative():
    rng = np.random.default_rng(6)
    z, y = rng.random((15, 2)), rng.normal(size=15)
    amp, ls, noise = 1.1, np.array([0.35, 0.7]), 0.05
    low, alpha, _ = gl.condition(z, y, amp, ls, noise, 1e-10)
    fan, weights, best, ok = gl.fantasize(
        z, ls, amp, low, alpha, rng.normal(size=(15, 8)), 1e-8, 1e-4
    )
    assert ok and weights.shape == (15, 8) and best.shape == (8,)
    factor = gl.rest_factor(np.ascontiguousarray(z[:, 1:]), np.array([0.4]), ls[1:], amp)
    u_train = np.ascontiguousarray(z[:, 0])

    def value(u):
        k, dk = gl.line_k(np.array([u]), u_train, 1.0 / ls[0] ** 2, factor)
        return gl.nei(k, dk, weights, fan, amp, best)

    for u in (0.2, 0.55, 0.9):
        v, slope = value(u)
        h = 1e-6
        assert slope[0] == pytest.approx(
            (value(u + h)[0][0] - value(u - h)[0][0]) / (2 * h), rel=1e-4, abs=1e-9
        )
        assert v[0] >= 0


def test_row_squares_is_the_sum_of_squares_in_order():
    a = np.array([[1e16, 1.0, 1.0], [3.0, 4.0, 0.0]])
    # (1e32 + 1) + 1 in order is 1e32; a pairwise or fused sum could differ
    assert gl.row_squares(a).tolist() == [sum((v * v for v in row), 0.0) for row in a.tolist()]
    assert math.isclose(gl.row_squares(a)[1], 25.0)
