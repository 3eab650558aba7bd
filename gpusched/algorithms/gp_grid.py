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
best value found (less a relative margin of 1e-9 for rounding). P is compared through
the argument of :math:`\\Phi`, which it increases with. Same inputs, same bits.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

__all__ = ["argmax_prob_zero", "bound"]


def bound(fn: Any, args: tuple[Any, ...]) -> Any:
    """``fn`` compiled for the types of ``args``, called without Numba's per-call typing of
    every argument (a few microseconds each; exploitation calls it ~10^5 times a run).
    Every later call must pass the same types. Without the JIT, ``fn`` itself."""
    if not hasattr(fn, "compile"):  # NUMBA_DISABLE_JIT
        return fn
    import numba

    typeof: Any = numba.typeof
    return fn.compile(tuple(typeof(a) for a in args))


@njit(cache=True, nogil=True)
def argmax_prob_zero(
    grid_kt: np.ndarray,
    z_rest: np.ndarray,
    inv_ls_rest: np.ndarray,
    cz: np.ndarray,
    amplitude: float,
    noise: float,
    alpha: np.ndarray,
    chol: np.ndarray,
    chol_t: np.ndarray,
    kdiag: np.ndarray,
    offset: float,
    scratch: np.ndarray,
) -> int:
    """Index of the grid point of highest :math:`\\Phi(d / s)`, found as the highest
    :math:`d / s` (:math:`\\Phi` increases), the lowest index on ties.

    Parameters
    ----------
    grid_kt
        (n, m): the first input's kernel factor between training point i and grid point g.
    z_rest, inv_ls_rest
        (n, d) training inputs other than the first, and their inverse length scales (d,).
    cz
        (d,) the context, scaled as the training inputs.
    amplitude, noise
        Signal variance a and noise variance (standardised).
    alpha
        (n,) :math:`(K + \\sigma_n^2 I)^{-1} y` (standardised y).
    chol, chol_t, kdiag
        (n, n) lower Cholesky factor L of :math:`K + \\sigma_n^2 I`, its transpose (both
        C-ordered: every inner loop below runs along a row), and the matrix's diagonal.
    offset
        :math:`d = -\\mu - \\text{offset}` (``y_mean / y_std``: the target 0 standardised).
    scratch
        (4 n + 5 m,) float64 work space.
    """
    n, m = grid_kt.shape
    dims = z_rest.shape[1]
    r = scratch[:n]  # amplitude times the context's kernel factor, per training point
    y = scratch[n : 2 * n]
    w = scratch[2 * n : 3 * n]
    k = scratch[3 * n : 4 * n]
    d = scratch[4 * n : 4 * n + m]
    qlo = scratch[4 * n + m : 4 * n + 2 * m]  # lower bounds of q
    done = scratch[4 * n + 2 * m : 4 * n + 3 * m]
    s = scratch[4 * n + 3 * m : 4 * n + 4 * m]
    upper = scratch[4 * n + 4 * m : 4 * n + 5 * m]
    for i in range(n):
        t2 = 0.0
        for c in range(dims):
            t = (z_rest[i, c] - cz[c]) * inv_ls_rest[c]
            t2 += t * t
        r[i] = amplitude * math.exp(-0.5 * t2)
    for g in range(m):
        d[g] = 0.0
        qlo[g] = 0.0
        done[g] = 0.0
    for i in range(n):  # mu_g = sum_i k_gi alpha_i; q_g >= k_gi^2 / K_ii
        ra = r[i] * alpha[i]
        rr = r[i] * r[i] / kdiag[i]
        for g in range(m):
            e = grid_kt[i, g]
            d[g] += e * ra
            qlo[g] = max(qlo[g], e * e * rr)
    for g in range(m):
        d[g] = -d[g] - offset
    floor = math.sqrt(noise)
    best_g = -1
    best = -np.inf
    while True:
        g = -1  # the point left of highest upper bound (lowest index on ties)
        top = -np.inf
        for h in range(m):
            if done[h] == 0.0:
                if d[h] >= 0.0:  # the argument of Phi: Phi increases with it
                    upper[h] = d[h] / floor
                else:
                    upper[h] = d[h] / math.sqrt(noise + max(amplitude - qlo[h], 0.0))
                if upper[h] > top:
                    g, top = h, upper[h]
        if g < 0 or top < best - 1e-9 * (1.0 + abs(best)):
            break
        done[g] = 1.0
        for i in range(n):  # k_g
            k[i] = grid_kt[i, g] * r[i]
        for c in range(n):  # forward solve L y = k, by columns (rows of L^T)
            y[c] = k[c] / chol[c, c]
            yc = y[c]
            for i in range(c + 1, n):
                k[i] -= chol_t[c, i] * yc
        q = 0.0
        for i in range(n):
            q += y[i] * y[i]
        p = d[g] / math.sqrt(max(amplitude - q, 0.0) + noise)  # Phi(p) = P(f = 0)
        if p > best or (p == best and g < best_g):
            best, best_g = p, g
        for i in range(n):  # back solve L^T w = y, by columns of L^T (rows of L)
            w[i] = y[i]
        for c in range(n - 1, -1, -1):
            w[c] = w[c] / chol[c, c]
            wc = w[c]
            for i in range(c):
                w[i] -= chol[c, i] * wc
        for h in range(m):
            s[h] = 0.0
        for i in range(n):  # s_h = w . k_h, then q_h >= 2 s_h - q
            wr = w[i] * r[i]
            for h in range(m):
                s[h] += grid_kt[i, h] * wr
        for h in range(m):
            if done[h] == 0.0:
                qlo[h] = max(qlo[h], 2.0 * s[h] - q)
    return best_g
