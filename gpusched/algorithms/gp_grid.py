"""Eq. 3 of the Lazer paper on a fixed Gaussian process, jitted: the grid point of highest
:math:`P(f = 0)` in a context.

:meth:`gpusched.algorithms.bayesopt.BayesOpt.exploit` calls :func:`argmax_prob_zero` at
every prediction of the exploitation stage (about 100,000 in a full-size replay), with
arrays it prepares once per fit. At grid point g, :math:`P = \\Phi(d_g / s_g)` with
:math:`d_g = -\\mu_g` (standardised, target 0) and :math:`s_g^2 = \\sigma_n^2 + a - q_g`,
:math:`q_g = k_g^T (K + \\sigma_n^2 I)^{-1} k_g`. The means cost little; each :math:`q_g` costs
a triangular solve, so it is computed only where it can matter. For any vector w,
:math:`q_g \\ge 2 w^T k_g - w^T (K + \\sigma_n^2 I) w` (q is that maximum over w); with
:math:`w = e_i` this gives :math:`q_g \\ge k_{g,i}^2 / K_{ii}`, and with the solution
:math:`w = (K + \\sigma_n^2 I)^{-1} k_h` of a point already computed,
:math:`q_g \\ge 2 w^T k_g - q_h`, tight near h. A lower bound on q bounds P from above where
:math:`d < 0` (where :math:`d \\ge 0`, :math:`q \\le a` does). Points are computed exactly in
order of their upper bound, each tightening the others', until no point left can beat the
best value found (less a margin of 1e-9 for rounding). Same inputs, same bits.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["argmax_prob_zero"]


@njit(cache=True, nogil=True)
def _phi(x: float) -> float:
    """Standard normal CDF."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


@njit(cache=True, nogil=True)
def argmax_prob_zero(
    grid_k: np.ndarray,
    z_rest: np.ndarray,
    inv_ls_rest: np.ndarray,
    cz: np.ndarray,
    amplitude: float,
    noise: float,
    alpha: np.ndarray,
    chol: np.ndarray,
    kdiag: np.ndarray,
    offset: float,
    scratch: np.ndarray,
) -> int:
    """Index of the grid point of highest :math:`\\Phi(d / s)` (the lowest index on ties).

    Parameters
    ----------
    grid_k
        (m, n): the first input's kernel factor between grid point g and training point i.
    z_rest, inv_ls_rest
        (n, d) training inputs other than the first, and their inverse length scales (d,).
    cz
        (d,) the context, scaled as the training inputs.
    amplitude, noise
        Signal variance a and noise variance (standardised).
    alpha
        (n,) :math:`(K + \\sigma_n^2 I)^{-1} y` (standardised y).
    chol, kdiag
        (n, n) lower Cholesky factor L of :math:`K + \\sigma_n^2 I`, and that matrix's
        diagonal (n,).
    offset
        :math:`d = -\\mu - \\text{offset}` (``y_mean / y_std``: the target 0 standardised).
    scratch
        (4 m + 4 n,) float64 work space.
    """
    m, n = grid_k.shape
    dims = z_rest.shape[1]
    r = scratch[:n]  # amplitude times the context's kernel factor, per training point
    y = scratch[n : 2 * n]
    w = scratch[2 * n : 3 * n]
    k = scratch[3 * n : 4 * n]
    d = scratch[4 * n : 4 * n + m]
    qlo = scratch[4 * n + m : 4 * n + 2 * m]  # lower bounds of q
    done = scratch[4 * n + 2 * m : 4 * n + 3 * m]
    for i in range(n):
        t2 = 0.0
        for c in range(dims):
            t = (z_rest[i, c] - cz[c]) * inv_ls_rest[c]
            t2 += t * t
        r[i] = amplitude * math.exp(-0.5 * t2)
    floor = math.sqrt(noise)
    for g in range(m):
        mu = 0.0
        lo = 0.0
        for i in range(n):
            kg = grid_k[g, i] * r[i]
            mu += kg * alpha[i]
            lo = max(lo, kg * kg / kdiag[i])
        d[g] = -mu - offset
        qlo[g] = lo
        done[g] = 0.0
    best_g = -1
    best = -1.0
    while True:
        g = -1  # the point left of highest upper bound (lowest index on ties)
        top = -1.0
        for h in range(m):
            if done[h] != 0.0:
                continue
            if d[h] >= 0.0:
                u = _phi(d[h] / floor)
            else:
                u = _phi(d[h] / math.sqrt(noise + max(amplitude - qlo[h], 0.0)))
            if u > top:
                g, top = h, u
        if g < 0 or top < best - 1e-9:
            break
        done[g] = 1.0
        q = 0.0  # forward solve L y = k_g
        for i in range(n):
            k[i] = grid_k[g, i] * r[i]
            acc = k[i]
            for c in range(i):
                acc -= chol[i, c] * y[c]
            y[i] = acc / chol[i, i]
            q += y[i] * y[i]
        p = _phi(d[g] / math.sqrt(max(amplitude - q, 0.0) + noise))
        if p > best or (p == best and g < best_g):
            best, best_g = p, g
        for i in range(n - 1, -1, -1):  # back solve L^T w = y: w = (K + noise)^-1 k_g
            acc = y[i]
            for c in range(i + 1, n):
                acc -= chol[c, i] * w[c]
            w[i] = acc / chol[i, i]
        for h in range(m):  # q_h >= 2 w . k_h - q
            if done[h] == 0.0:
                s = 0.0
                for i in range(n):
                    s += w[i] * grid_k[h, i] * r[i]
                qlo[h] = max(qlo[h], 2.0 * s - q)
    return best_g
