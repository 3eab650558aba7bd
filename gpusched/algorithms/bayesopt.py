"""Bayesian optimisation of one bounded scalar X given a context vector c, one sample at a time.

The deferral predictor of Lazer: Y. Go, C. Shin, M. Kang, J. Hwang, C. Yoo and G. Yang,
"Making Sense of Job Preemption for Distributed Deep Learning Acceleration", DAC 2026,
doi:10.1145/3770743.3804432, Sec. 4.2 ("BO workflow") and Sec. 5.1 (BoTorch's
``SingleTaskGP`` and ``LogNoisyExpectedImprovement``). It is written for any caller that
wants an X for which an unknown, noisy, non-negative :math:`f(X \\mid c)` is 0, over
:math:`X \\in [l, h]`: the caller asks :meth:`BayesOpt.suggest` for an X in a context, acts on
it, and reports the outcome later with :meth:`BayesOpt.observe`; outcomes may arrive late
and out of order. Three stages:

1. *Bootstrapping*: Latin hypercube sampling: :math:`[l, h]` cut into M equal intervals,
   one uniform sample in each, visited in a random order (:func:`latin_hypercube`), until
   M outcomes are in. Suggestions asked for before that (outcomes still in flight) come
   from a fresh round of M intervals.
2. *Acquisition*: a Gaussian-process surrogate of f over (X, c) (:class:`GPSurrogate`);
   the next X maximises the log of the noisy expected improvement (:meth:`BayesOpt.noisy_ei`,
   below) from ``starts`` uniform random starts, each refined by a projected BFGS method
   with the analytic gradient (:func:`gpusched.algorithms.boxmin.minimize_box`).
   Acquisition stops once the GP has been updated ``min_updates`` times (one update per
   outcome, bootstrap outcomes included) *and* the noisy EI of the selected X is below
   ``ei_stop * (h - l)``; that call already exploits.
3. *Exploitation*: eq. 3, :math:`X = \\arg\\max_X P(f(X \\mid c) = 0)`. Under the GP an
   observation of f at (X, c) is normal with the posterior mean :math:`\\mu` and variance
   :math:`s^2` = latent variance + noise variance; f >= 0, so :math:`P(f = 0) = P(f \\le 0) =
   \\Phi(-\\mu / s)` (the probability of improvement over the target 0). It is maximised
   over a grid of X given by the caller (``grid``; Lazer's is the slot grid, at which
   deferrals act), ties to the smallest X. Exact pruning keeps it cheap: with
   :math:`d = -\\mu` and the latent variance in :math:`[0, a]` (``a`` the signal variance),
   :math:`\\Phi(d / s)` lies between :math:`\\Phi(d / \\sigma_n)` and :math:`\\Phi(d /
   \\sqrt{a + \\sigma_n^2})`, so the latent variance is computed only at the grid points
   whose upper bound reaches the best lower bound. The GP is frozen: outcomes that arrive
   after acquisition has ended are dropped (the paper updates the GP "if the BO is in the
   bootstrapping or acquisition stage", Sec. 4.2), counted in ``n_dropped``.

Noisy expected improvement (BoTorch's analytic ``NoisyExpectedImprovement``, minimising):
draw S = ``fantasies`` (20, BoTorch's default) joint samples :math:`y_s` of the latent f at
the observed inputs from the posterior; for each, a *fantasy* GP with the same
hyperparameters conditioned on :math:`y_s` with a noise of 1e-4 (BoTorch's
``MIN_INFERRED_NOISE_LEVEL``) gives a mean :math:`m_s(x)` and a variance :math:`v(x)` (the
same for every s); :math:`NEI(x) = \\frac{1}{S} \\sum_s EI(m_s(x), \\sqrt{v(x)}, \\min_i y_{s,i})`.
The incumbent of each fantasy is its lowest latent value, not the lowest *observed* f,
which is 0 almost at once when F is often 0 and X = l is sampled. The normal draws are
made once per fit from the run's generator (BoTorch draws them from a Sobol sequence).
The log is taken for the search, as ``LogNoisyExpectedImprovement`` does to keep
gradients alive where the improvement is tiny; here it is the plain log of the average,
clipped at 1e-300 (the argmax is the same).

Choices where the paper is silent:

* Surrogate. The paper uses BoTorch's ``SingleTaskGP``; here a GP with the kernel
  ``SingleTaskGP`` has used since BoTorch 0.12 (2024): RBF with one length scale per input
  (ARD), times a constant, plus white noise (BoTorch's Gaussian likelihood), without
  BoTorch's hyperparameter priors (:mod:`gpusched.algorithms.gp_linalg`; it gives
  scikit-learn's ``GaussianProcessRegressor`` posterior with that kernel, tested). White
  noise because c does not determine F, so equal inputs give different f. Inputs are
  scaled as BoTorch's ``Normalize`` does: X to
  :math:`(X - l)/(h - l)`, each context coordinate min-max over the contexts observed so
  far (pass durations on a log scale: the caller's job); f is standardised (BoTorch's
  ``Standardize``). Hyperparameters are fitted by maximum marginal likelihood (the logs
  of the amplitude, length scales and noise, as scikit-learn fits them, by
  :func:`gpusched.algorithms.boxmin.minimize_box` with SciPy L-BFGS-B's stopping tests),
  warm-started from the previous fit, without random restarts (deterministic), at the
  first fit and then every ``tune_every`` (10) outcomes; every update in between
  conditions the GP on the new outcomes with those hyperparameters (re-estimating them at
  every update cost more than the rest of a 2000-job replay). Length
  scales are kept >= 0.1 of an input's range and the noise variance >= 1e-4 of the
  standardised f (BoTorch's noise floor): without such a floor the marginal likelihood
  of a hundred noisy samples was maximised by interpolating the noise (noise 1e-6,
  length scales at 0.01), and the posterior mean then jumped between neighbouring
  contexts.
* Fits are lazy: :meth:`BayesOpt.observe` stores the outcome and the next suggestion
  refits once on everything observed (several late outcomes may fold into one refit).
* The 10 % of the stopping rule is relative to the range :math:`h - l`, not to the best
  f (0 as soon as some X equals F, after which "below 10 % of it" could never hold and
  acquisition would never end). Against :math:`h - l` the rule reads "no X is expected to
  get f more than a tenth of the search range closer to 0".
* Exploitation evaluates eq. 3 on the caller's grid rather than by L-BFGS on the GP (the
  paper's footnote 3): on Lazer's slot grid that is exact, since every X between two
  decision points defers to the same one.

**The same bits on every machine.** Fits, fantasies, EI and predictions run in
:mod:`gpusched.algorithms.gp_linalg` (loops in a fixed order, ``exp`` from the C library)
and the searches in :mod:`gpusched.algorithms.boxmin` (Python floats), never in BLAS,
LAPACK or NumPy's vectorised ``exp``: with scikit-learn's fit and SciPy's L-BFGS-B, the
full-size Earth replay of Table 2 ended with another mean deferral on each of three BLAS
and SIMD settings of one machine (34.3 s, 29.7 s, and a third schedule). Numba compiles
those loops on first use (cached after).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from gpusched.core import portable

__all__ = [
    "STAGES",
    "BayesOpt",
    "GPSurrogate",
    "Suggestion",
    "expected_improvement",
    "latin_hypercube",
]

STAGES = ("bootstrap", "acquisition", "exploitation")
"""The stages of :class:`BayesOpt`, in order."""

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
# hyperparameter bounds on scaled inputs (about [0, 1]) and a standardised f
_AMPLITUDE_BOUNDS = (1e-2, 1e2)
_LENGTH_BOUNDS = (1e-1, 1e2)
_NOISE_BOUNDS = (1e-4, 1e1)
_JITTER = 1e-10  # added to the kernel diagonal, as scikit-learn's default ``alpha``
_FANTASY_NOISE = 1e-4  # noise of the fantasy models (BoTorch's MIN_INFERRED_NOISE_LEVEL)


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
    ei = gain * ndtr(z) + sigma * _INV_SQRT_2PI * portable.exp(-0.5 * z * z)
    return np.asarray(np.where(sigma > 0, np.maximum(ei, 0.0), np.maximum(gain, 0.0)))


class GPSurrogate:
    """A Gaussian process on scaled inputs: constant x RBF with one length scale per input + white noise.

    Fitted on a standardised target by maximum marginal likelihood; predictions use the
    fitted kernel's parameters, its Cholesky factor and ``alpha``
    (:mod:`gpusched.algorithms.gp_linalg`).

    Parameters
    ----------
    n_dims
        Input dimension.
    optimize
        Fit the hyperparameters by maximum marginal likelihood (else keep the values below).
    amplitude, length_scale, noise
        Initial (or, without ``optimize``, fixed) signal variance, length scale of every
        input and noise variance, on the standardised target.
    """

    def __init__(
        self,
        n_dims: int,
        *,
        optimize: bool = True,
        amplitude: float = 1.0,
        length_scale: float = 0.5,
        noise: float = 0.1,
    ) -> None:
        self.n_dims = int(n_dims)
        self.optimize = optimize
        self.amplitude = float(amplitude)
        self.length_scale = np.full(self.n_dims, float(length_scale))
        self.noise = float(noise)
        self.z = np.empty((0, self.n_dims))
        self.alpha = np.empty(0)
        self.chol = np.empty((0, 0))
        self.y_mean = 0.0
        self.y_std = 1.0
        self._grid: tuple[np.ndarray, np.ndarray] | None = None

    def fit(self, z: np.ndarray, y: np.ndarray, *, tune: bool = True) -> None:
        """Fit on inputs ``z`` (n, n_dims) and targets ``y`` (n,).

        With ``tune`` (and ``optimize``) the hyperparameters are re-estimated, starting
        from the current ones; otherwise the GP is only conditioned on the data.

        Raises
        ------
        numpy.linalg.LinAlgError
            The covariance of the data is not positive definite (fixed hyperparameters
            with next to no noise on repeated inputs).
        """
        from gpusched.algorithms import gp_linalg
        from gpusched.algorithms.boxmin import minimize_box

        z = np.ascontiguousarray(z, dtype=np.float64)
        vals = np.asarray(y, dtype=np.float64).ravel().tolist()
        mean = math.fsum(vals) / len(vals)
        std = math.sqrt(math.fsum([(v - mean) ** 2 for v in vals]) / len(vals))
        self.y_mean = mean
        self.y_std = std if std > 0 else 1.0
        yn = np.array([(v - mean) / self.y_std for v in vals])
        if self.optimize and tune:
            bounds = [_AMPLITUDE_BOUNDS] + [_LENGTH_BOUNDS] * self.n_dims + [_NOISE_BOUNDS]

            def minus_log_likelihood(theta: list[float]) -> tuple[float, list[float]]:
                f, g = gp_linalg.neg_log_likelihood(np.array(theta), z, yn, _JITTER)
                return float(f), g.tolist()

            start = [self.amplitude, *self.length_scale.tolist(), self.noise]
            got = minimize_box(
                minus_log_likelihood,
                [math.log(v) for v in start],
                [math.log(lo) for lo, _ in bounds],
                [math.log(hi) for _, hi in bounds],
            )
            theta = [math.exp(v) for v in got.x]
            self.amplitude, self.noise = theta[0], theta[-1]
            self.length_scale = np.array(theta[1:-1])
        low, alpha, ok = gp_linalg.condition(
            z, yn, self.amplitude, self.length_scale, self.noise, _JITTER
        )
        if not ok:
            raise np.linalg.LinAlgError(
                "the GP's covariance is not positive definite (raise the noise)"
            )
        self.z = z
        self.alpha = alpha
        self.chol = low
        self._grid = None

    def cross(self, z: np.ndarray) -> np.ndarray:
        """Signal covariance between inputs ``z`` (m, n_dims) and the training inputs (m, n)."""
        from gpusched.algorithms.gp_linalg import rbf

        zz = np.ascontiguousarray(z, dtype=np.float64)
        return np.asarray(rbf(zz, self.z, self.length_scale, self.amplitude))

    def predict(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and latent standard deviation (noise excluded) of f at ``z``."""
        from gpusched.algorithms.gp_linalg import posterior

        mu, var = posterior(self.cross(np.atleast_2d(z)), self.alpha, self.chol, self.amplitude)
        return mu * self.y_std + self.y_mean, np.sqrt(var) * self.y_std

    def along_first(self, rest: np.ndarray) -> _Line:
        """The GP as a function of the first input, the others fixed at ``rest`` (one row).

        The RBF kernel factorises over inputs, so the factor of the other inputs is
        computed once here; see :class:`_Line`.
        """
        from gpusched.algorithms.gp_linalg import rest_factor

        factor = rest_factor(
            np.ascontiguousarray(self.z[:, 1:]),
            np.ascontiguousarray(rest, dtype=np.float64),
            np.ascontiguousarray(self.length_scale[1:]),
            self.amplitude,
        )
        return _Line(self, factor)

    def grid_factor(self, u: np.ndarray) -> np.ndarray:
        """First-input factor of the kernel on grid ``u``, (m, n); cached until the next fit
        (the caller passes the same grid every time)."""
        from gpusched.algorithms.gp_linalg import grid_factor

        if self._grid is None or self._grid[0] is not u:
            u_train = np.ascontiguousarray(self.z[:, 0])
            self._grid = (u, grid_factor(u, u_train, float(self.length_scale[0])))
        return self._grid[1]

    def fantasize(self, normals: np.ndarray) -> _Fantasies:
        """Fantasy models at the training inputs, one per column of ``normals`` (n, S).

        Each column :math:`\\epsilon_s` gives the latent sample
        :math:`y_s = \\mu + C^{1/2} \\epsilon_s` of the posterior at the inputs (mean
        :math:`\\mu`, covariance :math:`C`), and a GP conditioned on it (module docstring,
        "Noisy expected improvement").
        """
        from gpusched.algorithms.gp_linalg import fantasize

        fan, weights, best, ok = fantasize(
            self.z,
            self.length_scale,
            self.amplitude,
            self.chol,
            self.alpha,
            np.ascontiguousarray(normals, dtype=np.float64),
            1e-8 * self.amplitude,
            _FANTASY_NOISE,
        )
        if not ok:
            raise np.linalg.LinAlgError("a fantasy covariance is not positive definite")
        return _Fantasies(self, fan, weights, best)


class _Fantasies:
    """S fantasy GPs on the same inputs: their means' weights and incumbents (std units)."""

    def __init__(
        self, gp: GPSurrogate, chol: np.ndarray, weights: np.ndarray, best: np.ndarray
    ) -> None:
        self.gp = gp
        self.chol = chol  # Cholesky factor of K + fantasy noise, (n, n)
        self.weights = weights  # (K + noise)^-1 y_s, (n, S)
        self.best = best  # lowest latent sample of each fantasy, (S,)

    def nei(self, k: np.ndarray, dk: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """NEI (std units) at inputs whose signal covariances with the training inputs are
        ``k`` (m, n), and its derivative along a direction that changes them by ``dk``."""
        from gpusched.algorithms.gp_linalg import nei

        return nei(k, dk, self.weights, self.chol, self.gp.amplitude, self.best)


class _Line:
    """The GP along the first input, the others fixed at a context.

    ``rest_factor[i]`` is the amplitude times the RBF factor of the other inputs for
    training point i, so k(u, z_i) = rest_factor[i] * exp(-(u - u_i)^2 / (2 l_u^2)).
    """

    def __init__(self, gp: GPSurrogate, rest_factor: np.ndarray) -> None:
        self.gp = gp
        self.rest_factor = rest_factor
        self.u_train = np.ascontiguousarray(gp.z[:, 0])
        self.inv2 = 1.0 / float(gp.length_scale[0]) ** 2

    def k(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Signal covariances k(u, Z), (m, n), and their derivatives in u."""
        from gpusched.algorithms.gp_linalg import line_k

        uu = np.ascontiguousarray(u, dtype=np.float64)
        return line_k(uu, self.u_train, self.inv2, self.rest_factor)


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
        Noisy expected improvement of ``x`` (acquisition only, else NaN), units of f.
    """

    x: float
    stage: str
    ei: float


class BayesOpt:
    """Find X with :math:`f(X \\mid c) = 0`, f noisy and >= 0, X in [lo, hi] (module docstring).

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
        Acquisition stops when the selected X's noisy EI is below ``ei_stop * (hi - lo)``.
    starts
        Random starts of the EI maximisation (>= 1).
    grid
        The X values exploitation chooses from (ascending, within [lo, hi]); default
        101 equal steps.
    tune_every
        Re-estimate the GP's hyperparameters at the first fit and then once this many
        more outcomes have arrived (>= 1); in between, each update conditions the GP on
        the new outcomes with the hyperparameters it has.
    fantasies
        S, the fantasy models of the noisy EI (>= 1).
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
        grid: np.ndarray | None = None,
        tune_every: int = 10,
        fantasies: int = 20,
        rng: np.random.Generator,
        surrogate: GPSurrogate | None = None,
    ) -> None:
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ValueError(f"bounds must be finite with lo < hi, got [{lo}, {hi}]")
        if bootstrap < 1 or starts < 1 or tune_every < 1 or fantasies < 1 or n_context < 0:
            raise ValueError(
                "bootstrap, starts, tune_every and fantasies must be >= 1, n_context >= 0"
            )
        self.lo = float(lo)
        self.hi = float(hi)
        self.n_context = int(n_context)
        self.bootstrap = int(bootstrap)
        self.min_updates = int(min_updates)
        self.ei_stop = float(ei_stop)
        self.starts = int(starts)
        self.tune_every = int(tune_every)
        self.fantasies = int(fantasies)
        self.set_grid(np.linspace(lo, hi, 101) if grid is None else grid)
        self._rng = rng
        self.gp = surrogate or GPSurrogate(1 + self.n_context)
        self._x: list[float] = []
        self._c: list[np.ndarray] = []
        self._f: list[float] = []
        self._plan: list[float] = []
        self._n_fit = 0
        self._n_tuned = 0  # outcomes at the last re-estimation of the hyperparameters
        self._fan: _Fantasies | None = None  # of the current fit, made on first use
        self._fan_normals = np.empty((0, self.fantasies))  # the draws behind it
        self._exploit_args: tuple[Any, ...] | None = None  # of the current fit
        self._exploiting = False
        #: outcomes reported after acquisition ended (not used: the GP is frozen)
        self.n_dropped = 0
        self._c_lo = np.zeros(self.n_context)
        self._c_span = np.ones(self.n_context)

    def set_grid(self, grid: np.ndarray) -> None:
        """Replace the X values exploitation chooses from (ascending, within [lo, hi])."""
        xs = np.asarray(grid, dtype=np.float64)
        if xs.ndim != 1 or xs.size == 0 or (np.diff(xs) <= 0).any():
            raise ValueError("grid must be a non-empty ascending array")
        if xs[0] < self.lo or xs[-1] > self.hi:
            raise ValueError(f"grid must lie within [{self.lo}, {self.hi}]")
        self.grid = xs
        self._u_grid = (xs - self.lo) / (self.hi - self.lo)
        self._exploit_args = None

    @property
    def stage(self) -> str:
        """The current stage (one of :data:`STAGES`)."""
        if self._exploiting:
            return "exploitation"
        return "bootstrap" if len(self._f) < self.bootstrap else "acquisition"

    @property
    def n_updates(self) -> int:
        """Outcomes observed and used so far (each is one update of the GP)."""
        return len(self._f)

    def _context(self, c: Any) -> np.ndarray:
        arr = np.asarray(c, dtype=np.float64).reshape(-1)
        if arr.shape != (self.n_context,) or not np.isfinite(arr).all():
            raise ValueError(f"context must be {self.n_context} finite numbers, got {c!r}")
        return arr

    def observe(self, x: float, c: Any, f: float) -> None:
        """Report the outcome ``f`` of trying ``x`` in context ``c`` (any time, any order).

        Once exploitation has begun the GP is frozen and the outcome is dropped.
        """
        if not (math.isfinite(x) and math.isfinite(f)):
            raise ValueError(f"x and f must be finite, got x={x}, f={f}")
        ctx = self._context(c)
        if self._exploiting:
            self.n_dropped += 1
            return
        self._x.append(float(x))
        self._c.append(ctx)
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
            x, ei = self._max_nei(ctx)
            if not (self.n_updates >= self.min_updates and ei < self.ei_stop * (self.hi - self.lo)):
                return Suggestion(x, stage, ei)
            self._exploiting = True
        return Suggestion(self._exploit(ctx), "exploitation", math.nan)

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
        self._fan = None
        if tune:
            self._n_tuned = n

    def _fantasies(self) -> _Fantasies:
        self._refit()
        if self._fan is None:
            self._fan_normals = self._rng.standard_normal((self._n_fit, self.fantasies))
            self._fan = self.gp.fantasize(self._fan_normals)
        return self._fan

    def _inputs(self, x: np.ndarray, ctx: np.ndarray) -> np.ndarray:
        u = (np.asarray(x, dtype=np.float64).reshape(-1) - self.lo) / (self.hi - self.lo)
        cz = np.broadcast_to((ctx - self._c_lo) / self._c_span, (u.size, self.n_context))
        return np.column_stack([u, cz])

    def _line(self, ctx: np.ndarray) -> _Line:
        return self.gp.along_first((ctx - self._c_lo) / self._c_span)

    def posterior(self, x: Any, c: Any) -> tuple[np.ndarray, np.ndarray]:
        """GP posterior mean and latent standard deviation of f at ``x`` (array) in context ``c``."""
        self._refit()
        return self.gp.predict(self._inputs(np.asarray(x), self._context(c)))

    def noisy_ei(self, x: Any, c: Any) -> np.ndarray:
        """Noisy expected improvement at ``x`` (array) in context ``c``, units of f."""
        ctx = self._context(c)
        fan = self._fantasies()
        u = (np.asarray(x, dtype=np.float64).reshape(-1) - self.lo) / (self.hi - self.lo)
        k, dk = self._line(ctx).k(u)
        return fan.nei(k, dk)[0] * self.gp.y_std

    def prob_zero(self, x: Any, c: Any) -> np.ndarray:
        """:math:`P(f(X \\mid c) = 0) = \\Phi(-\\mu / s)` at ``x`` (array), s with the noise."""
        from scipy.special import ndtr

        mu, sd = self.posterior(x, c)
        noise = self.gp.noise * self.gp.y_std**2
        return np.asarray(ndtr(-mu / np.sqrt(sd * sd + noise)))

    def _max_nei(self, ctx: np.ndarray) -> tuple[float, float]:
        """The X of largest noisy EI: ``starts`` uniform starts, each refined on its log by a
        projected BFGS method (:func:`gpusched.algorithms.boxmin.minimize_box`)."""
        from gpusched.algorithms.boxmin import minimize_box

        fan = self._fantasies()
        line = self._line(ctx)

        def neg_log_nei(u: list[float]) -> tuple[float, list[float]]:
            k, dk = line.k(np.array(u))
            value, slope = fan.nei(k, dk)
            v = max(float(value[0]), 1e-300)
            return -math.log(v), [-float(slope[0]) / v]

        best_u, best = 0.0, -math.inf
        for u0 in self._rng.random(self.starts).tolist():
            u = minimize_box(neg_log_nei, [u0], [0.0], [1.0]).x[0]
            k, dk = line.k(np.array([u]))
            value = float(fan.nei(k, dk)[0][0])
            if value > best:
                best_u, best = u, value
        return self.lo + best_u * (self.hi - self.lo), best * self.gp.y_std

    def exploit(self, c: Any) -> float:
        """Eq. 3: the grid value of X of highest :math:`P(f = 0)` in context ``c`` (the
        smallest on ties), with the pruning of the module docstring
        (:func:`gpusched.algorithms.gp_grid.argmax_prob_zero`)."""
        return self._exploit(self._context(c))

    def _exploit(self, ctx: np.ndarray) -> float:
        from gpusched.algorithms.gp_grid import argmax_prob_zero, bound
        from gpusched.algorithms.gp_linalg import row_squares

        self._refit()
        gp = self.gp
        if self._exploit_args is None or self._exploit_args[0] is not gp.alpha:
            args = (
                np.ascontiguousarray(gp.grid_factor(self._u_grid).T),
                np.ascontiguousarray(gp.z[:, 1:]),
                1.0 / gp.length_scale[1:],
                self._c_lo.copy(),  # cz's place: the context, scaled (written per call)
                float(gp.amplitude),
                float(gp.noise),
                gp.alpha,
                np.ascontiguousarray(gp.chol),
                np.ascontiguousarray(gp.chol.T),
                row_squares(gp.chol),  # diagonal of K + noise
                float(gp.y_mean / gp.y_std),
                np.empty(5 * self.grid.size + 4 * gp.alpha.size),
            )
            self._exploit_args = (gp.alpha, args, bound(argmax_prob_zero, args))
        _, args, fn = self._exploit_args
        np.divide(ctx - self._c_lo, self._c_span, out=args[3])
        g = fn(*args)
        return float(self.grid[g])
