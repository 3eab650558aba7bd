"""The Gaussian process of Lazer's deferral predictor, in arithmetic that gives the same bits
on every machine.

NumPy hands matrix products to BLAS and Cholesky factorisations and triangular solves to
LAPACK, whose kernels depend on the processor (and, for OpenBLAS, on ``OPENBLAS_CORETYPE``)
and add the same products in other orders; NumPy's ``exp`` and ``log1p`` take an AVX-512
code path where the processor has one, whose last bit can differ from the C library's. A
Gaussian-process fit carries one bit into its hyperparameters, the next suggestion, the
next outcome, and on: the full Earth replay of the Lazer paper's Table 2 (seed 1) gave a
mean deferral of 34.3 s under OpenBLAS's SkylakeX kernels and 29.7 s under its Haswell
ones (both with NumPy's AVX-512 ``exp``), and a third schedule with NumPy's ``exp``
without AVX-512. Here every sum runs in index order, in loops that Numba compiles without
fast-math (so without reassociation and without fused multiply-adds), and ``exp`` and
``erfc`` come from the C library (:mod:`math`): the same inputs give the same bits
wherever the C library's functions do (every x86-64 glibc, whatever the SIMD width).

The model (:class:`gpusched.algorithms.bayesopt.GPSurrogate`): on inputs ``z`` (n, D),
the signal covariance ``k(x, x') = a exp(-1/2 sum_d ((x_d - x'_d) / l_d)^2)`` (a constant
times an RBF with one length scale per input), plus the noise variance and a jitter
(1e-10, scikit-learn's ``alpha``) on the diagonal. C. E. Rasmussen and C. K. I. Williams,
*Gaussian Processes for Machine Learning*, MIT Press 2006: the posterior (Alg. 2.1), the
log marginal likelihood (eq. 2.30) and its gradient (eq. 5.9), here with respect to the
logs of a, l and the noise, as scikit-learn's ``GaussianProcessRegressor`` optimises them.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = [
    "cholesky",
    "condition",
    "fantasize",
    "grid_factor",
    "line_k",
    "neg_log_likelihood",
    "nei",
    "posterior",
    "rbf",
    "rest_factor",
    "row_squares",
    "solve_lower",
    "solve_upper_t",
]

_LOG_2PI = math.log(2.0 * math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)


@njit(cache=True, nogil=True)
def cholesky(a: np.ndarray) -> tuple[np.ndarray, bool]:
    """The lower Cholesky factor L of the symmetric ``a`` (n, n) (``a = L L^T``), and
    whether ``a`` was positive definite (L is then complete; otherwise it stops at the
    first non-positive pivot)."""
    n = a.shape[0]
    low = np.zeros((n, n))
    for j in range(n):
        s = a[j, j]
        for k in range(j):
            s -= low[j, k] * low[j, k]
        if not s > 0.0:
            return low, False
        d = math.sqrt(s)
        low[j, j] = d
        for i in range(j + 1, n):
            t = a[i, j]
            for k in range(j):
                t -= low[i, k] * low[j, k]
            low[i, j] = t / d
    return low, True


@njit(cache=True, nogil=True)
def solve_lower(low: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``x`` with ``L x = b``, ``L`` lower triangular (n, n), ``b`` (n, m)."""
    n, m = b.shape
    x = np.empty((n, m))
    for c in range(m):
        for i in range(n):
            t = b[i, c]
            for k in range(i):
                t -= low[i, k] * x[k, c]
            x[i, c] = t / low[i, i]
    return x


@njit(cache=True, nogil=True)
def solve_upper_t(low: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``x`` with ``L^T x = b``, ``L`` lower triangular (n, n), ``b`` (n, m)."""
    n, m = b.shape
    x = np.empty((n, m))
    for c in range(m):
        for i in range(n - 1, -1, -1):
            t = b[i, c]
            for k in range(i + 1, n):
                t -= low[k, i] * x[k, c]
            x[i, c] = t / low[i, i]
    return x


@njit(cache=True, nogil=True)
def _cho_solve(low: np.ndarray, b: np.ndarray) -> np.ndarray:
    return solve_upper_t(low, solve_lower(low, b))


@njit(cache=True, nogil=True)
def rbf(za: np.ndarray, zb: np.ndarray, ls: np.ndarray, amp: float) -> np.ndarray:
    """Signal covariances ``a exp(-1/2 sum_d ((za_d - zb_d) / l_d)^2)``, (len(za), len(zb))."""
    out = np.empty((za.shape[0], zb.shape[0]))
    for i in range(za.shape[0]):
        for j in range(zb.shape[0]):
            s = 0.0
            for d in range(za.shape[1]):
                t = (za[i, d] - zb[j, d]) / ls[d]
                s += t * t
            out[i, j] = amp * math.exp(-0.5 * s)
    return out


@njit(cache=True, nogil=True)
def _with_diagonal(k: np.ndarray, add: float) -> np.ndarray:
    out = k.copy()
    for i in range(k.shape[0]):
        out[i, i] += add
    return out


@njit(cache=True, nogil=True)
def _matvec(a: np.ndarray, v: np.ndarray) -> np.ndarray:
    out = np.empty(a.shape[0])
    for i in range(a.shape[0]):
        s = 0.0
        for k in range(a.shape[1]):
            s += a[i, k] * v[k]
        out[i] = s
    return out


@njit(cache=True, nogil=True)
def condition(
    z: np.ndarray, y: np.ndarray, amp: float, ls: np.ndarray, noise: float, jitter: float
) -> tuple[np.ndarray, np.ndarray, bool]:
    """The GP conditioned on ``y`` (n,) at ``z`` (n, D): the Cholesky factor L of
    ``K + (noise + jitter) I``, ``alpha = (K + (noise + jitter) I)^-1 y`` and whether the
    matrix was positive definite."""
    low, ok = cholesky(_with_diagonal(rbf(z, z, ls, amp), noise + jitter))
    if not ok:
        return low, np.zeros(y.shape[0]), False
    return low, _cho_solve(low, y.reshape(-1, 1))[:, 0], True


@njit(cache=True, nogil=True)
def neg_log_likelihood(
    theta: np.ndarray, z: np.ndarray, y: np.ndarray, jitter: float
) -> tuple[float, np.ndarray]:
    """Minus the log marginal likelihood of ``y`` at ``z`` and its gradient, at
    ``theta = (log a, log l_1, ..., log l_D, log noise)``; ``inf`` (and a zero gradient)
    where the covariance is not positive definite.

    ``log p(y) = -1/2 y^T alpha - sum_i log L_ii - n/2 log 2 pi``; ``d log p / d theta_j =
    1/2 sum_ik (alpha_i alpha_k - (K^-1)_ik) dK_ik / d theta_j`` with ``dK / d log a`` the
    signal covariance S, ``dK_ik / d log l_d = S_ik ((z_id - z_kd) / l_d)^2`` and
    ``dK / d log noise = noise I``.
    """
    n, dims = z.shape
    amp = math.exp(theta[0])
    ls = np.empty(dims)
    for d in range(dims):
        ls[d] = math.exp(theta[1 + d])
    noise = math.exp(theta[1 + dims])
    grad = np.zeros(theta.shape[0])
    sig = rbf(z, z, ls, amp)
    low, ok = cholesky(_with_diagonal(sig, noise + jitter))
    if not ok:
        return math.inf, grad
    alpha = _cho_solve(low, y.reshape(-1, 1))[:, 0]
    value = 0.0
    for i in range(n):
        value += y[i] * alpha[i]
    value *= 0.5
    for i in range(n):
        value += math.log(low[i, i])
    value += 0.5 * n * _LOG_2PI
    kinv = _cho_solve(low, np.eye(n))
    for i in range(n):
        for k in range(n):
            w = 0.5 * (alpha[i] * alpha[k] - kinv[i, k]) * sig[i, k]
            grad[0] -= w
            for d in range(dims):
                t = (z[i, d] - z[k, d]) / ls[d]
                grad[1 + d] -= w * t * t
        grad[1 + dims] -= 0.5 * (alpha[i] * alpha[i] - kinv[i, i]) * noise
    return value, grad


@njit(cache=True, nogil=True)
def posterior(
    ks: np.ndarray, alpha: np.ndarray, low: np.ndarray, amp: float
) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean and latent variance (standardised) at points whose signal covariances
    with the training inputs are ``ks`` (m, n)."""
    m = ks.shape[0]
    mu = _matvec(ks, alpha)
    squares = row_squares(np.ascontiguousarray(solve_lower(low, np.ascontiguousarray(ks.T)).T))
    var = np.empty(m)
    for j in range(m):
        var[j] = max(amp - squares[j], 0.0)
    return mu, var


@njit(cache=True, nogil=True)
def fantasize(
    z: np.ndarray,
    ls: np.ndarray,
    amp: float,
    low: np.ndarray,
    alpha: np.ndarray,
    normals: np.ndarray,
    root_jitter: float,
    fantasy_noise: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Fantasy models at the training inputs, one per column of ``normals`` (n, S).

    The posterior of the latent f at the inputs has mean ``S alpha`` and covariance
    ``C = S - V^T V``, ``V = L^-1 S`` (S the signal covariance); sample s is
    ``y_s = S alpha + R eps_s`` with R the Cholesky factor of ``(C + C^T) / 2 +
    root_jitter I``. Returns the Cholesky factor of ``S + fantasy_noise I``, the weights
    ``(S + fantasy_noise I)^-1 y_s`` (n, S), each fantasy's lowest sample (S,) and whether
    both matrices were positive definite.
    """
    n, n_fan = normals.shape
    sig = rbf(z, z, ls, amp)
    v = solve_lower(low, sig)
    cov = np.empty((n, n))
    for i in range(n):
        for k in range(n):
            s = 0.0
            for r in range(n):
                s += v[r, i] * v[r, k]
            cov[i, k] = sig[i, k] - s
    sym = np.empty((n, n))
    for i in range(n):
        for k in range(n):
            sym[i, k] = 0.5 * (cov[i, k] + cov[k, i])
    root, ok_root = cholesky(_with_diagonal(sym, root_jitter))
    mean = _matvec(sig, alpha)
    ys = np.empty((n, n_fan))
    for i in range(n):
        for s_ in range(n_fan):
            t = 0.0
            for r in range(i + 1):
                t += root[i, r] * normals[r, s_]
            ys[i, s_] = mean[i] + t
    fan, ok_fan = cholesky(_with_diagonal(sig, fantasy_noise))
    if not (ok_root and ok_fan):
        return fan, np.zeros((n, n_fan)), np.zeros(n_fan), False
    weights = _cho_solve(fan, ys)
    best = np.empty(n_fan)
    for s_ in range(n_fan):
        b = ys[0, s_]
        for i in range(1, n):
            b = min(b, ys[i, s_])
        best[s_] = b
    return fan, weights, best, True


@njit(cache=True, nogil=True)
def nei(
    k: np.ndarray,
    dk: np.ndarray,
    weights: np.ndarray,
    fan: np.ndarray,
    amp: float,
    best: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Noisy EI (standardised) of S fantasy models at points whose signal covariances with
    the training inputs are ``k`` (m, n), and its derivative along a direction that
    changes them by ``dk``: the mean over s of ``g Phi(g / sd) + sd phi(g / sd)``,
    ``g = best_s - m_s``, ``m_s = k . weights_s`` and ``sd^2 = a - k^T (S + noise I)^-1 k``
    (``fan`` its Cholesky factor)."""
    m, n = k.shape
    n_fan = weights.shape[1]
    w = _cho_solve(fan, np.ascontiguousarray(k.T))  # (n, m)
    value = np.empty(m)
    slope = np.empty(m)
    for j in range(m):
        q = 0.0
        dq = 0.0
        for i in range(n):
            q += k[j, i] * w[i, j]
            dq += dk[j, i] * w[i, j]
        sd = math.sqrt(max(amp - q, 1e-300))
        dsd = -dq / sd  # d var = -2 w . dk
        v_sum = 0.0
        s_sum = 0.0
        for s_ in range(n_fan):
            mean = 0.0
            dmean = 0.0
            for i in range(n):
                mean += k[j, i] * weights[i, s_]
                dmean += dk[j, i] * weights[i, s_]
            gain = best[s_] - mean
            zz = gain / sd
            pdf = _INV_SQRT_2PI * math.exp(-0.5 * zz * zz)
            cdf = 0.5 * math.erfc(-zz * _INV_SQRT_2)
            v_sum += gain * cdf + sd * pdf
            s_sum += -cdf * dmean + pdf * dsd
        value[j] = v_sum / n_fan
        slope[j] = s_sum / n_fan
    return value, slope


@njit(cache=True, nogil=True)
def rest_factor(
    z_rest: np.ndarray, rest: np.ndarray, ls_rest: np.ndarray, amp: float
) -> np.ndarray:
    """``a exp(-1/2 sum_d ((z_id - rest_d) / l_d)^2)`` over the inputs after the first, per
    training point (n,)."""
    n, dims = z_rest.shape
    out = np.empty(n)
    for i in range(n):
        s = 0.0
        for d in range(dims):
            t = (z_rest[i, d] - rest[d]) / ls_rest[d]
            s += t * t
        out[i] = amp * math.exp(-0.5 * s)
    return out


@njit(cache=True, nogil=True)
def line_k(
    u: np.ndarray, u_train: np.ndarray, inv2: float, rest: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Signal covariances ``rest_i exp(-inv2 (u - u_i)^2 / 2)`` (m, n) along the first input,
    and their derivatives in u."""
    m, n = u.shape[0], u_train.shape[0]
    e = np.empty((m, n))
    de = np.empty((m, n))
    for j in range(m):
        for i in range(n):
            du = u[j] - u_train[i]
            v = math.exp(-0.5 * inv2 * du * du) * rest[i]
            e[j, i] = v
            de[j, i] = v * (-inv2 * du)
    return e, de


@njit(cache=True, nogil=True)
def grid_factor(u: np.ndarray, u_train: np.ndarray, ls0: float) -> np.ndarray:
    """``exp(-1/2 ((u_g - u_i) / l_0)^2)`` (len(u), n): the first input's factor of the RBF."""
    out = np.empty((u.shape[0], u_train.shape[0]))
    for g in range(u.shape[0]):
        for i in range(u_train.shape[0]):
            t = (u[g] - u_train[i]) / ls0
            out[g, i] = math.exp(-0.5 * t * t)
    return out


@njit(cache=True, nogil=True)
def row_squares(a: np.ndarray) -> np.ndarray:
    """``sum_j a_ij^2`` per row."""
    out = np.empty(a.shape[0])
    for i in range(a.shape[0]):
        s = 0.0
        for j in range(a.shape[1]):
            s += a[i, j] * a[i, j]
        out[i] = s
    return out
