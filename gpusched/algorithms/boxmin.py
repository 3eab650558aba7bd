"""Minimise a smooth function of a few variables over a box, in plain float arithmetic.

The Bayesian optimiser of Lazer (:mod:`gpusched.algorithms.bayesopt`) fits its
hyperparameters and maximises its acquisition function over boxes of one to six
variables. SciPy's L-BFGS-B does that well, but it takes its dot products from BLAS, whose
kernels add in another order on another processor, and its path then depends on the
machine (:mod:`gpusched.algorithms.gp_linalg` says how far that carries). This is a
projected BFGS method (J. Nocedal and S. J. Wright, *Numerical Optimization*, 2nd ed.,
Springer 2006: the BFGS update of the inverse Hessian, eq. 6.17, its first scaling, eq.
6.20, and a backtracking Armijo search, Alg. 3.1, along the projected path of
D. P. Bertsekas, "Projected Newton methods for optimization problems with simple
constraints", SIAM J. Control Optim. 20, 1982) on Python floats, whose sums run in one
order everywhere. Its tests follow SciPy's L-BFGS-B defaults as used by scikit-learn's
Gaussian processes: stop when the projected gradient's largest entry is at most
``gtol`` (1e-5), when a step lowers f by at most ``ftol`` (2.2e-9) times ``max(|f|, |f
new|, 1)``, after ``max_iter`` steps, or when 20 halvings of a step find no decrease.

A variable at a bound whose gradient points out of the box is held there for the step;
the others move along ``-H g`` (H the inverse-Hessian estimate restricted to them), or
along ``-g`` when that is not a descent direction (H is then reset).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

__all__ = ["Minimum", "minimize_box"]


class Minimum(NamedTuple):
    """What :func:`minimize_box` found."""

    #: the point, inside the box
    x: list[float]
    #: f there
    f: float
    #: steps taken
    steps: int
    #: why it stopped: "gradient", "decrease", "steps", "line search" or "not finite"
    stop: str


def minimize_box(
    fun: Callable[[list[float]], tuple[float, Sequence[float]]],
    x0: Sequence[float],
    lo: Sequence[float],
    hi: Sequence[float],
    *,
    gtol: float = 1e-5,
    ftol: float = 2.220446049250313e-09,
    max_iter: int = 1000,
    max_halvings: int = 20,
) -> Minimum:
    """Minimise ``fun`` over the box ``lo <= x <= hi`` (module docstring).

    Parameters
    ----------
    fun
        f and its gradient at a point (a list of floats); ``inf`` where f is not defined.
    x0
        The start (projected onto the box).
    lo, hi
        The box's bounds (``lo <= hi``, finite).
    gtol, ftol, max_iter, max_halvings
        The stopping tests.
    """
    n = len(x0)
    if not (len(lo) == len(hi) == n):
        raise ValueError("x0, lo and hi must have one length")
    lo_ = [float(v) for v in lo]
    hi_ = [float(v) for v in hi]
    if any(
        not (math.isfinite(a) and math.isfinite(b) and a <= b)
        for a, b in zip(lo_, hi_, strict=True)
    ):
        raise ValueError("the bounds must be finite with lo <= hi")
    x = [min(max(float(v), a), b) for v, a, b in zip(x0, lo_, hi_, strict=True)]
    f, g = _call(fun, x)
    if not math.isfinite(f):
        return Minimum(x, f, 0, "not finite")
    h: list[list[float]] | None = None  # inverse Hessian; None until the first update
    steps = 0
    while True:
        projected = [
            min(max(xi - gi, a), b) - xi for xi, gi, a, b in zip(x, g, lo_, hi_, strict=True)
        ]
        if max((abs(p) for p in projected), default=0.0) <= gtol:
            return Minimum(x, f, steps, "gradient")
        if steps >= max_iter:
            return Minimum(x, f, steps, "steps")
        free = [
            not ((xi <= a and gi > 0.0) or (xi >= b and gi < 0.0))
            for xi, gi, a, b in zip(x, g, lo_, hi_, strict=True)
        ]
        d = _direction(h, g, free)
        slope = _dot(g, d)
        if h is not None and not slope < 0.0:
            h = None  # not a descent direction: start again from the gradient
            d = _direction(h, g, free)
            slope = _dot(g, d)
        if not slope < 0.0:
            return Minimum(x, f, steps, "gradient")
        # the first step is at most 1 long per variable, as L-BFGS-B's first is 1/|g|
        t = 1.0 if h is not None else min(1.0, 1.0 / max(abs(v) for v in d))
        for _ in range(max_halvings + 1):
            xn = [min(max(xi + t * di, a), b) for xi, di, a, b in zip(x, d, lo_, hi_, strict=True)]
            fn, gn = _call(fun, xn)
            if math.isfinite(fn) and fn <= f + 1e-4 * _dot(
                g, [p - q for p, q in zip(xn, x, strict=True)]
            ):
                break
            t *= 0.5
        else:
            return Minimum(x, f, steps, "line search")
        s = [p - q for p, q in zip(xn, x, strict=True)]
        y = [p - q for p, q in zip(gn, g, strict=True)]
        h = _bfgs(h, s, y)
        steps += 1
        f_old = f
        x, f, g = xn, fn, gn
        if f_old - f <= ftol * max(abs(f_old), abs(f), 1.0):
            return Minimum(x, f, steps, "decrease")


def _call(
    fun: Callable[[list[float]], tuple[float, Sequence[float]]], x: list[float]
) -> tuple[float, list[float]]:
    f, g = fun(list(x))
    return float(f), [float(v) for v in g]


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    total = 0.0
    for p, q in zip(a, b, strict=True):
        total += p * q
    return total


def _direction(h: list[list[float]] | None, g: list[float], free: list[bool]) -> list[float]:
    """``-H g`` over the free variables (0 on the held ones); ``-g`` without an H."""
    n = len(g)
    if h is None:
        return [-g[i] if free[i] else 0.0 for i in range(n)]
    out = []
    for i in range(n):
        if not free[i]:
            out.append(0.0)
            continue
        total = 0.0
        for j in range(n):
            if free[j]:
                total += h[i][j] * g[j]
        out.append(-total)
    return out


def _bfgs(h: list[list[float]] | None, s: list[float], y: list[float]) -> list[list[float]] | None:
    """The BFGS update of the inverse Hessian (eq. 6.17); unchanged where the curvature
    ``s . y`` is not safely positive. Before the first update H is ``(s.y / y.y) I``
    (eq. 6.20)."""
    n = len(s)
    sy = _dot(s, y)
    yy = _dot(y, y)
    if not (sy > 1e-10 * math.sqrt(_dot(s, s) * yy) and sy > 0.0):
        return h
    if h is None:
        gamma = sy / yy
        h = [[gamma if i == j else 0.0 for j in range(n)] for i in range(n)]
    rho = 1.0 / sy
    hy = [_dot(h[i], y) for i in range(n)]  # H y (H symmetric)
    yhy = _dot(y, hy)
    # H' = H - rho (H y s^T + s y^T H) + (rho^2 y^T H y + rho) s s^T
    c = rho * rho * yhy + rho
    return [
        [h[i][j] - rho * (hy[i] * s[j] + s[i] * hy[j]) + c * s[i] * s[j] for j in range(n)]
        for i in range(n)
    ]
