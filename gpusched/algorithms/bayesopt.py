"""Bayesian optimisation of one bounded scalar X given a context vector c, one sample at a time.

The deferral predictor of Lazer: Y. Go, C. Shin, M. Kang, J. Hwang, C. Yoo and G. Yang,
"Making Sense of Job Preemption for Distributed Deep Learning Acceleration", DAC 2026,
doi:10.1145/3770743.3804432, Sec. 4.2 ("BO workflow"). It is written for any caller that
minimises an unknown, noisy :math:`f(X \\mid c)` over :math:`X \\in [l, h]`: the caller asks
:meth:`BayesOpt.suggest` for an X in a context, acts on it, and reports the outcome later
with :meth:`BayesOpt.observe`; outcomes may arrive late and out of order. Three stages:

1. *Bootstrapping*: Latin hypercube sampling: :math:`[l, h]` cut into M equal intervals,
   one uniform sample in each, visited in a random order (:func:`latin_hypercube`), until
   M outcomes are in. Suggestions asked for before that (outcomes still in flight) come
   from a fresh round of M intervals.
2. *Acquisition*: a Gaussian-process surrogate of f over (X, c) (:class:`GPSurrogate`);
   the next X maximises the expected improvement over the lowest f observed so far
   (closed form, Zhan and Xing 2020, the paper's [37]; :func:`expected_improvement`),
   from ``starts`` uniform random starts each refined by L-BFGS-B (scipy, with the
   analytic gradient of EI). Acquisition stops once the GP has been updated
   ``min_updates`` times (one update per outcome, bootstrap outcomes included) *and* the
   EI of the selected X is below ``ei_stop * (h - l)``; that call already exploits.
3. *Exploitation*: the X minimising the GP's posterior mean at c, by L-BFGS-B from the
   best point of a coarse grid (21 points). Here L-BFGS-B is :func:`minimize_1d`, the
   method reduced to one variable, because ``scipy.optimize.minimize`` costs about 1 ms
   per call whatever the problem and exploitation runs at every decision of a long
   replay; the kernel's factor of X on the grid is computed once per fit, so a call
   costs 0.05-0.15 ms with 100 samples. Outcomes that still arrive refine the GP.

Choices where the paper is silent:

* Surrogate. The paper uses BoTorch's ``SingleTaskGP``; here scikit-learn's
  ``GaussianProcessRegressor`` with the kernel ``SingleTaskGP`` has used since BoTorch
  0.12 (2024): RBF with one length scale per input (ARD), times a constant, plus white
  noise (BoTorch's Gaussian likelihood), without BoTorch's hyperparameter priors. White
  noise because c does not determine F, so equal inputs give different f. The RBF
  kernel also factorises over inputs, which makes exploitation cheap. Inputs are
  scaled as BoTorch's ``Normalize`` does: X to
  :math:`(X - l)/(h - l)`, each context coordinate min-max over the contexts observed so
  far (pass durations on a log scale: the caller's job); f is standardised (BoTorch's
  ``Standardize``). Hyperparameters are fitted by maximum marginal likelihood,
  warm-started from the previous fit, without random restarts (deterministic), at the
  first fit and then every ``tune_every`` (10) outcomes; every update in between
  conditions the GP on the new outcomes with those hyperparameters (re-estimating them at
  every update cost more than the rest of a 2000-job replay). Fits and the EI search run
  with BLAS on one thread (:func:`one_blas_thread`). Length
  scales are kept >= 0.1 of an input's range and the noise variance >= 1e-4 of the
  standardised f (BoTorch's noise floor): without such a floor the marginal likelihood
  of a hundred noisy samples was maximised by interpolating the noise (noise 1e-6,
  length scales at 0.01), and the posterior mean then jumped between neighbouring
  contexts.
* Fits are lazy: :meth:`BayesOpt.observe` stores the outcome and the next suggestion
  refits once on everything observed (several late outcomes may fold into one refit).
* EI uses the latent standard deviation (without the white noise, which no X improves)
  and, as the paper says, the lowest *observed* f, over all contexts.
* The 10 % of the stopping rule is relative to the range :math:`h - l`, not to the best
  f: f is 0 whenever a sampled X equals F (F = 0, "no futile preemption", is common, and
  L-BFGS-B can return the bound X = l exactly), and then "EI below 10 % of f_best"
  could never hold and acquisition, with its GP refit per outcome, would never end.
  Against :math:`h - l` the rule reads "no X is expected to get f more than a tenth of
  the search range closer to 0".

Predictions are computed here with numpy from the fitted kernel, its Cholesky factor and
``alpha_`` (scikit-learn is not called per point). scikit-learn and scipy are imported on
first use (~1.5 s).
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "STAGES",
    "BayesOpt",
    "GPSurrogate",
    "Suggestion",
    "expected_improvement",
    "latin_hypercube",
    "minimize_1d",
]

STAGES = ("bootstrap", "acquisition", "exploitation")
"""The stages of :class:`BayesOpt`, in order."""

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
# hyperparameter bounds on scaled inputs (about [0, 1]) and a standardised f
_AMPLITUDE_BOUNDS = (1e-2, 1e2)
_LENGTH_BOUNDS = (1e-1, 1e2)
_NOISE_BOUNDS = (1e-4, 1e1)
_JITTER = 1e-10  # added to the kernel diagonal, as scikit-learn's default ``alpha``


_BLAS: list[Any] = []  # the threadpoolctl controller, made on first use


def one_blas_thread() -> Any:
    """A context in which BLAS and LAPACK run on one thread (threadpoolctl).

    The GP's matrices are about 100 x 100: on two busy cores OpenBLAS's threads made a
    hyperparameter fit 5-10 times slower (0.5-1.2 s instead of 0.12 s), and one thread
    also keeps the floating-point sums in one order on every machine. The limit is
    process-wide while the context lasts (threadpoolctl works that way); it only changes
    how fast BLAS runs elsewhere meanwhile, not what it computes.
    """
    if not _BLAS:
        try:  # a dependency of scikit-learn
            from threadpoolctl import ThreadpoolController  # type: ignore[import-untyped]
        except ImportError:  # pragma: no cover - without it, BLAS keeps its threads
            _BLAS.append(None)
        else:
            _BLAS.append(ThreadpoolController())
    if _BLAS[0] is None:  # pragma: no cover
        return contextlib.nullcontext()
    return _BLAS[0].limit(limits=1, user_api="blas")


def latin_hypercube(lo: float, hi: float, m: int, rng: np.random.Generator) -> np.ndarray:
    """One uniform sample in each of ``m`` equal intervals of ``[lo, hi]``, in random order.

    Parameters
    ----------
    lo, hi
        Bounds of the interval (``lo < hi``).
    m
        Number of intervals and samples (>= 1).
    rng
        The only source of randomness.

    Returns
    -------
    numpy.ndarray
        ``m`` floats; sample ``i`` of the sorted result lies in
        ``[lo + i (hi - lo) / m, lo + (i + 1) (hi - lo) / m)``.
    """
    width = (hi - lo) / m
    x = lo + width * (np.arange(m) + rng.random(m))
    return np.asarray(x[rng.permutation(m)], dtype=np.float64)


def expected_improvement(mu: Any, sigma: Any, f_best: float) -> np.ndarray:
    """Expected improvement below ``f_best`` of a Gaussian prediction (minimisation).

    :math:`EI = (f^* - \\mu)\\Phi(z) + \\sigma\\varphi(z)`, :math:`z = (f^* - \\mu)/\\sigma`;
    where :math:`\\sigma = 0` it is :math:`\\max(f^* - \\mu, 0)`.

    Parameters
    ----------
    mu, sigma
        Posterior mean and standard deviation (arrays of one shape, units of f).
    f_best
        The best (lowest) f observed so far.
    """
    from scipy.special import ndtr

    mu = np.asarray(mu, dtype=np.float64)
    sigma = np.asarray(sigma, dtype=np.float64)
    gain = f_best - mu
    safe = np.where(sigma > 0, sigma, 1.0)
    z = gain / safe
    ei = gain * ndtr(z) + sigma * _INV_SQRT_2PI * np.exp(-0.5 * z * z)
    return np.asarray(np.where(sigma > 0, np.maximum(ei, 0.0), np.maximum(gain, 0.0)))


class GPSurrogate:
    """A Gaussian process on scaled inputs: constant x RBF with one length scale per input + white noise.

    Fitted with scikit-learn's ``GaussianProcessRegressor`` on a standardised target;
    predictions use the fitted kernel's parameters, Cholesky factor and ``alpha_``.

    Parameters
    ----------
    n_dims
        Input dimension.
    optimize
        Fit the hyperparameters by maximum marginal likelihood (else keep the values below).
    amplitude, length_scale, noise
        Initial (or, without ``optimize``, fixed) signal variance, length scale of every
        input and noise variance, on the standardised target.
    seed
        ``random_state`` handed to scikit-learn.
    """

    def __init__(
        self,
        n_dims: int,
        *,
        optimize: bool = True,
        amplitude: float = 1.0,
        length_scale: float = 0.5,
        noise: float = 0.1,
        seed: int = 0,
    ) -> None:
        self.n_dims = int(n_dims)
        self.optimize = optimize
        self.amplitude = float(amplitude)
        self.length_scale = np.full(self.n_dims, float(length_scale))
        self.noise = float(noise)
        self.seed = int(seed)
        self.z = np.empty((0, self.n_dims))
        self.alpha = np.empty(0)
        self.chol = np.empty((0, 0))
        self.y_mean = 0.0
        self.y_std = 1.0
        self._grid: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def fit(self, z: np.ndarray, y: np.ndarray, *, tune: bool = True) -> None:
        """Fit on inputs ``z`` (n, n_dims) and targets ``y`` (n,).

        With ``tune`` (and ``optimize``) the hyperparameters are re-estimated, starting
        from the current ones; otherwise the GP is only conditioned on the data.
        """
        from sklearn.gaussian_process import GaussianProcessRegressor
        from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

        y = np.asarray(y, dtype=np.float64)
        self.y_mean = float(y.mean())
        std = float(y.std())
        self.y_std = std if std > 0 else 1.0
        kernel = ConstantKernel(self.amplitude, _AMPLITUDE_BOUNDS) * RBF(
            self.length_scale, _LENGTH_BOUNDS
        ) + WhiteKernel(self.noise, _NOISE_BOUNDS)
        gp = GaussianProcessRegressor(
            kernel,
            alpha=_JITTER,
            optimizer="fmin_l_bfgs_b" if self.optimize and tune else None,
            n_restarts_optimizer=0,
            random_state=self.seed,
        )
        with warnings.catch_warnings(), one_blas_thread():
            warnings.simplefilter("ignore")  # bounds reached, slow convergence: not the user's
            gp.fit(z, (y - self.y_mean) / self.y_std)
        k = gp.kernel_
        self.amplitude = float(k.k1.k1.constant_value)
        self.length_scale = np.broadcast_to(
            np.asarray(k.k1.k2.length_scale, dtype=np.float64), (self.n_dims,)
        ).copy()
        self.noise = float(k.k2.noise_level)
        self.z = np.asarray(gp.X_train_, dtype=np.float64)
        self.alpha = np.asarray(gp.alpha_, dtype=np.float64).ravel()
        self.chol = np.asarray(gp.L_, dtype=np.float64)
        self._grid = None

    def cross(self, z: np.ndarray) -> np.ndarray:
        """Signal covariance between inputs ``z`` (m, n_dims) and the training inputs (m, n)."""
        d = (z[:, None, :] - self.z[None, :, :]) / self.length_scale
        return np.asarray(self.amplitude * np.exp(-0.5 * np.einsum("mnd,mnd->mn", d, d)))

    def predict(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and latent standard deviation (noise excluded) of f at ``z``."""
        from scipy.linalg import solve_triangular

        ks = self.cross(np.atleast_2d(z))
        mu = ks @ self.alpha
        v = solve_triangular(self.chol, ks.T, lower=True, check_finite=False)
        var = np.maximum(self.amplitude - np.einsum("nm,nm->m", v, v), 0.0)
        return mu * self.y_std + self.y_mean, np.sqrt(var) * self.y_std

    def along_first(self, rest: np.ndarray) -> _Line:
        """The GP as a function of the first input, the others fixed at ``rest`` (one row).

        The RBF kernel factorises over inputs, so the factor of the other inputs is
        computed once here; see :class:`_Line`.
        """
        dr = (self.z[:, 1:] - rest) / self.length_scale[1:]
        return _Line(self, self.amplitude * np.exp(-0.5 * np.einsum("nd,nd->n", dr, dr)))

    def grid_factors(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """First-input factor of the kernel on grid ``u`` and its derivative, (m, n) each.

        Cached until the next fit (the caller passes the same grid every time).
        """
        if self._grid is None or self._grid[0] is not u:
            du = (u[:, None] - self.z[:, 0]) / self.length_scale[0]
            e = np.exp(-0.5 * du * du)
            self._grid = (u, e, e * (-du / self.length_scale[0]))
        return self._grid[1], self._grid[2]


class _Line:
    """The GP along the first input, the others fixed: mean and latent std with derivatives.

    ``rest_factor[i]`` is the amplitude times the RBF factor of the other inputs for
    training point i, so k(u, z_i) = rest_factor[i] * exp(-(u - u_i)^2 / (2 l_u^2)).
    """

    def __init__(self, gp: GPSurrogate, rest_factor: np.ndarray) -> None:
        self.gp = gp
        self.weight = rest_factor * gp.alpha  # posterior mean = sum_i weight_i * factor_i(u)
        self.rest_factor = rest_factor
        self.u_train = gp.z[:, 0]
        self.inv2 = 1.0 / gp.length_scale[0] ** 2

    def _k(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """k(u, Z) without the amplitude-and-rest factor, and its derivative, (m, n)."""
        du = u[:, None] - self.u_train
        e = np.exp(-0.5 * self.inv2 * du * du)
        return e, e * (-self.inv2 * du)

    def grid_min(self, u: np.ndarray) -> tuple[int, np.ndarray, float]:
        """Index ``i`` of the grid point of lowest mean, the means at ``u``, the slope at ``u[i]``."""
        gp = self.gp
        e, de = gp.grid_factors(u)
        values = e @ self.weight
        i = int(np.argmin(values))
        slope = float(de[i] @ self.weight)
        return i, values * gp.y_std + gp.y_mean, slope * gp.y_std

    def mean(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean of f at ``u`` (array) and its derivative."""
        gp = self.gp
        e, de = self._k(u)
        return (e @ self.weight) * gp.y_std + gp.y_mean, (de @ self.weight) * gp.y_std

    def mean_std(self, u: np.ndarray) -> tuple[np.ndarray, ...]:
        """Mean, its derivative, latent standard deviation and its derivative at ``u``."""
        from scipy.linalg import cho_solve

        gp = self.gp
        e, de = self._k(u)
        k, dk = e * self.rest_factor, de * self.rest_factor
        w = cho_solve((gp.chol, True), k.T, check_finite=False)  # K^-1 k*, (n, m)
        var = np.maximum(gp.amplitude - np.einsum("mn,nm->m", k, w), 1e-300)
        sd = np.sqrt(var)
        dsd = -np.einsum("mn,nm->m", dk, w) / sd  # d var / du = -2 w . dk
        return (
            (k @ gp.alpha) * gp.y_std + gp.y_mean,
            (dk @ gp.alpha) * gp.y_std,
            sd * gp.y_std,
            dsd * gp.y_std,
        )


def minimize_1d(
    fun: Callable[[float], tuple[float, float]],
    u0: float,
    lo: float = 0.0,
    hi: float = 1.0,
    *,
    start: tuple[float, float] | None = None,
    inv_curvature: float | None = None,
    xtol: float = 1e-4,
    max_iter: int = 30,
) -> tuple[float, float]:
    """L-BFGS-B on one bounded variable: projected quasi-Newton steps, backtracking line search.

    With one variable the limited-memory BFGS matrix is the secant ``s / y`` of the last
    step (the two-loop recursion cancels every older pair), so this is L-BFGS-B reduced
    to one dimension. It exists because ``scipy.optimize.minimize`` costs about 1 ms per
    call whatever the problem, which exploitation cannot afford at every decision.

    Parameters
    ----------
    fun
        ``u -> (f(u), f'(u))``.
    u0
        Start, in ``[lo, hi]``.
    start
        ``fun(u0)`` if already known (saves an evaluation).
    inv_curvature
        First estimate of ``1 / f''`` (default: a step of ``(hi - lo) / 20`` along the slope).
    xtol
        Stop once a step moves u by less than this.
    max_iter
        Iterations at most.

    Returns
    -------
    (u, f(u))
        The point reached; it stops when the projected gradient is below 1e-5 (scipy's
        ``pgtol``), the relative decrease of f below 2.2e-9 (its ``ftol``), or the step
        below ``xtol``.
    """
    u = min(max(u0, lo), hi)
    f, g = start if start is not None else fun(u)
    h = inv_curvature if inv_curvature is not None and inv_curvature > 0 else None
    for _ in range(max_iter):
        if abs(min(max(u - g, lo), hi) - u) <= 1e-5:  # projected gradient
            break
        if h is None:
            h = 0.05 * (hi - lo) / abs(g)
        step = -h * g
        t = 1.0
        while True:  # backtracking (Armijo) on the projected path
            un = min(max(u + t * step, lo), hi)
            fn, gn = fun(un)
            if fn <= f + 1e-4 * g * (un - u):
                break
            t *= 0.5
            if abs(un - u) < 1e-12:
                return u, f
        s, y = un - u, gn - g
        if s * y > 0:
            h = s / y  # the secant: the one-dimensional L-BFGS matrix
        done = f - fn <= 2.2e-9 * max(abs(f), abs(fn), 1.0) or abs(s) < xtol
        u, f, g = un, fn, gn
        if done:
            break
    return u, f


class Suggestion(NamedTuple):
    """What :meth:`BayesOpt.suggest` returns.

    Attributes
    ----------
    x
        The value to try.
    stage
        ``"bootstrap"``, ``"acquisition"`` or ``"exploitation"`` (the first two are samples
        the caller should report back with :meth:`BayesOpt.observe`).
    ei
        Expected improvement of ``x`` (acquisition only, else NaN).
    """

    x: float
    stage: str
    ei: float


class BayesOpt:
    """Minimise a noisy :math:`f(X \\mid c)` over :math:`X \\in [lo, hi]` (see the module docstring).

    Parameters
    ----------
    lo, hi
        Bounds of X (``lo < hi``).
    n_context
        Length of the context vector c (>= 0).
    bootstrap
        M: Latin-hypercube samples before the GP is used (>= 1).
    min_updates
        Outcomes observed before acquisition may stop.
    ei_stop
        Acquisition stops when the selected X's EI is below ``ei_stop * (hi - lo)``.
    starts
        Random starts of the EI maximisation (>= 1).
    grid
        Points of the coarse grid of exploitation (>= 2).
    tune_every
        Re-estimate the GP's hyperparameters at the first fit and then once this many
        more outcomes have arrived (>= 1); in between, each update conditions the GP on
        the new outcomes with the hyperparameters it has.
    rng
        The only source of randomness.
    surrogate
        The GP (default: a :class:`GPSurrogate` over ``1 + n_context`` inputs).
    """

    def __init__(
        self,
        lo: float,
        hi: float,
        n_context: int,
        *,
        bootstrap: int = 10,
        min_updates: int = 100,
        ei_stop: float = 0.1,
        starts: int = 5,
        grid: int = 21,
        tune_every: int = 10,
        rng: np.random.Generator,
        surrogate: GPSurrogate | None = None,
    ) -> None:
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ValueError(f"bounds must be finite with lo < hi, got [{lo}, {hi}]")
        if bootstrap < 1 or starts < 1 or tune_every < 1 or grid < 2 or n_context < 0:
            raise ValueError(
                "bootstrap, starts and tune_every must be >= 1, grid >= 2, n_context >= 0"
            )
        self.lo = float(lo)
        self.hi = float(hi)
        self.n_context = int(n_context)
        self.bootstrap = int(bootstrap)
        self.min_updates = int(min_updates)
        self.ei_stop = float(ei_stop)
        self.starts = int(starts)
        self.tune_every = int(tune_every)
        self._grid = np.linspace(0.0, 1.0, int(grid))
        self._rng = rng
        self.gp = surrogate or GPSurrogate(1 + self.n_context, seed=int(rng.integers(2**31)))
        self._x: list[float] = []
        self._c: list[np.ndarray] = []
        self._f: list[float] = []
        self._plan: list[float] = []
        self._n_fit = 0
        self._n_tuned = 0  # outcomes at the last re-estimation of the hyperparameters
        self._exploiting = False
        self._c_lo = np.zeros(self.n_context)
        self._c_span = np.ones(self.n_context)

    @property
    def stage(self) -> str:
        """The current stage (one of :data:`STAGES`)."""
        if self._exploiting:
            return "exploitation"
        return "bootstrap" if len(self._f) < self.bootstrap else "acquisition"

    @property
    def n_updates(self) -> int:
        """Outcomes observed so far (each is one update of the GP)."""
        return len(self._f)

    def _context(self, c: Any) -> np.ndarray:
        arr = np.asarray(c, dtype=np.float64).reshape(-1)
        if arr.shape != (self.n_context,) or not np.isfinite(arr).all():
            raise ValueError(f"context must be {self.n_context} finite numbers, got {c!r}")
        return arr

    def observe(self, x: float, c: Any, f: float) -> None:
        """Report the outcome ``f`` of trying ``x`` in context ``c`` (any time, any order)."""
        if not (math.isfinite(x) and math.isfinite(f)):
            raise ValueError(f"x and f must be finite, got x={x}, f={f}")
        self._x.append(float(x))
        self._c.append(self._context(c))
        self._f.append(float(f))

    def suggest(self, c: Any) -> Suggestion:
        """The X to try in context ``c``, and the stage it comes from."""
        ctx = self._context(c)
        stage = self.stage
        if stage == "bootstrap":
            if not self._plan:
                self._plan = latin_hypercube(self.lo, self.hi, self.bootstrap, self._rng).tolist()
            return Suggestion(self._plan.pop(0), stage, math.nan)
        if stage == "acquisition":
            x, ei = self._max_ei(ctx)
            if not (self.n_updates >= self.min_updates and ei < self.ei_stop * (self.hi - self.lo)):
                return Suggestion(x, stage, ei)
            self._exploiting = True
        return Suggestion(self.exploit(ctx), "exploitation", math.nan)

    # --- the surrogate ---------------------------------------------------------------

    def _refit(self) -> None:
        """Fit the GP on every outcome observed, if any arrived since the last fit."""
        n = len(self._f)
        if n == self._n_fit:
            return
        if n == 0:
            raise ValueError("the GP needs at least one observation")
        cs = np.asarray(self._c).reshape(n, self.n_context)
        self._c_lo = cs.min(axis=0)
        span = cs.max(axis=0) - self._c_lo
        self._c_span = np.where(span > 0, span, 1.0)
        u = (np.asarray(self._x) - self.lo) / (self.hi - self.lo)
        tune = self._n_tuned == 0 or n >= self._n_tuned + self.tune_every
        z = np.column_stack([u, (cs - self._c_lo) / self._c_span])
        self.gp.fit(z, np.asarray(self._f), tune=tune)
        self._n_fit = n
        if tune:
            self._n_tuned = n

    def _inputs(self, x: np.ndarray, ctx: np.ndarray) -> np.ndarray:
        u = (np.asarray(x, dtype=np.float64).reshape(-1) - self.lo) / (self.hi - self.lo)
        cz = np.broadcast_to((ctx - self._c_lo) / self._c_span, (u.size, self.n_context))
        return np.column_stack([u, cz])

    def posterior(self, x: Any, c: Any) -> tuple[np.ndarray, np.ndarray]:
        """GP posterior mean and latent standard deviation of f at ``x`` (array) in context ``c``."""
        self._refit()
        return self.gp.predict(self._inputs(np.asarray(x), self._context(c)))

    def ei(self, x: Any, c: Any) -> np.ndarray:
        """Expected improvement at ``x`` (array) in context ``c`` over the lowest f observed."""
        mu, sigma = self.posterior(x, c)
        return expected_improvement(mu, sigma, min(self._f))

    def _max_ei(self, ctx: np.ndarray) -> tuple[float, float]:
        """The X of largest EI: ``starts`` uniform starts, each refined by L-BFGS-B (scipy)."""
        from scipy.optimize import minimize
        from scipy.special import ndtr

        self._refit()
        f_best = min(self._f)
        line = self.gp.along_first((ctx - self._c_lo) / self._c_span)

        def neg_ei(u: np.ndarray) -> tuple[float, np.ndarray]:
            mu, dmu, sd, dsd = line.mean_std(np.asarray(u, dtype=np.float64).reshape(1))
            z = (f_best - mu) / sd
            pdf = _INV_SQRT_2PI * np.exp(-0.5 * z * z)
            ei = (f_best - mu) * ndtr(z) + sd * pdf
            return -float(ei[0]), -(-ndtr(z) * dmu + pdf * dsd)  # d EI = -Phi dmu + phi dsd

        best_u, best = 0.0, -math.inf
        with one_blas_thread():
            for u0 in self._rng.random(self.starts):
                res = minimize(neg_ei, np.array([u0]), jac=True, method="L-BFGS-B", bounds=[(0, 1)])
                u = min(max(float(res.x[0]), 0.0), 1.0)
                value = float(self.ei(self.lo + u * (self.hi - self.lo), ctx)[0])
                if value > best:
                    best_u, best = u, value
        return self.lo + best_u * (self.hi - self.lo), best

    def exploit(self, c: Any) -> float:
        """The X minimising the GP's posterior mean in context ``c``.

        The best point of a coarse grid over ``[lo, hi]``, refined by L-BFGS-B on one
        variable (:func:`minimize_1d`, with the mean's analytic derivative and the grid's
        curvature there as the first Hessian estimate); kept only if it improves on the
        grid point.
        """
        self._refit()
        line = self.gp.along_first((self._context(c) - self._c_lo) / self._c_span)
        grid = self._grid
        i, values, g0 = line.grid_min(grid)
        f0 = float(values[i])
        curvature = None
        if 0 < i < grid.size - 1:  # the parabola through the grid points around i
            curvature = float(values[i - 1] - 2.0 * f0 + values[i + 1]) / float(grid[1]) ** 2

        def fun(u: float) -> tuple[float, float]:
            m, dm = line.mean(np.array([u]))
            return float(m[0]), float(dm[0])

        u, f = minimize_1d(
            fun,
            float(grid[i]),
            start=(f0, g0),
            inv_curvature=1.0 / curvature if curvature else None,
        )
        u = u if f < f0 else float(grid[i])
        return self.lo + u * (self.hi - self.lo)
