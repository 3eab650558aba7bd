"""The Bayesian optimiser of gpusched.algorithms.bayesopt: LHS, noisy EI, stopping rule, eq. 3."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from gpusched.algorithms.bayesopt import (
    BayesOpt,
    GPSurrogate,
    expected_improvement,
    latin_hypercube,
)


@pytest.mark.parametrize(("lo", "hi", "m", "seed"), [(0, 100, 10, 0), (-3, 5, 7, 1), (2, 3, 1, 2)])
def test_lhs_puts_exactly_one_sample_in_each_interval(lo, hi, m, seed):
    x = latin_hypercube(lo, hi, m, np.random.default_rng(seed))
    assert x.shape == (m,)
    assert ((x >= lo) & (x < hi)).all()
    cell = np.floor((x - lo) / ((hi - lo) / m)).astype(int)
    assert sorted(cell.tolist()) == list(range(m))


def test_lhs_order_is_random_and_seeded():
    orders = [
        tuple(np.argsort(latin_hypercube(0, 100, 10, np.random.default_rng(s)))) for s in range(5)
    ]
    assert len(set(orders)) > 1  # not always visited left to right
    a = latin_hypercube(0, 100, 10, np.random.default_rng(7))
    b = latin_hypercube(0, 100, 10, np.random.default_rng(7))
    assert a.tobytes() == b.tobytes()


def test_bootstrap_suggests_one_sample_per_interval_until_m_outcomes_arrive():
    bo = BayesOpt(0.0, 100.0, 1, bootstrap=5, rng=np.random.default_rng(3))
    first = [bo.suggest([0.0]) for _ in range(5)]
    assert {s.stage for s in first} == {"bootstrap"}
    assert sorted(int(s.x // 20) for s in first) == [0, 1, 2, 3, 4]
    # no outcome has arrived yet: a fresh round of the 5 intervals, still bootstrap
    again = [bo.suggest([0.0]) for _ in range(5)]
    assert {s.stage for s in again} == {"bootstrap"}
    assert sorted(int(s.x // 20) for s in again) == [0, 1, 2, 3, 4]
    for s in reversed(first):  # late and out of order
        bo.observe(s.x, [0.0], abs(s.x - 30.0))
    assert bo.n_updates == 5 and bo.stage == "acquisition"
    assert bo.suggest([0.0]).stage == "acquisition"


def _rbf(r):
    return np.exp(-0.5 * r * r)


def _fixed(amp=1.3, ls=0.4, noise=0.05, **kw):
    gp = GPSurrogate(2, optimize=False, amplitude=amp, length_scale=ls, noise=noise)
    bo = BayesOpt(0.0, 100.0, 1, bootstrap=1, rng=np.random.default_rng(0), surrogate=gp, **kw)
    xs, cs, fs = [10.0, 50.0, 90.0, 30.0], [0.0, 1.0, 0.5, 0.2], [3.0, 1.0, 4.0, 0.0]
    for x, c, f in zip(xs, cs, fs, strict=True):
        bo.observe(x, [c], f)
    # by hand: inputs (x / 100, c) (the contexts span [0, 1] already), f standardised
    z = np.column_stack([np.array(xs) / 100, cs])
    y = np.array(fs)
    return bo, z, y


def _by_hand(z, y, q, amp=1.3, ls=0.4, noise=0.05):
    yn = (y - y.mean()) / y.std()
    dist = np.linalg.norm((z[:, None, :] - z[None, :, :]) / ls, axis=-1)
    k = amp * _rbf(dist) + (noise + 1e-10) * np.eye(len(y))
    ks = amp * _rbf(np.linalg.norm((q[:, None, :] - z[None, :, :]) / ls, axis=-1))
    mu = ks @ np.linalg.solve(k, yn) * y.std() + y.mean()
    var = amp - np.einsum("ij,ji->i", ks, np.linalg.solve(k, ks.T))
    return mu, var * y.std() ** 2


def test_posterior_and_prob_zero_equal_their_closed_form_on_a_fixed_gp():
    bo, z, y = _fixed()
    at = np.array([30.0, 70.0, 95.0])
    q = np.column_stack([at / 100, np.full(3, 0.25)])
    mu, var = _by_hand(z, y, q)
    got_mu, got_sigma = bo.posterior(at, [0.25])
    assert np.allclose(got_mu, mu, rtol=1e-9) and np.allclose(got_sigma, np.sqrt(var), rtol=1e-9)
    # eq. 3: P(f = 0) = P(f <= 0) for an observation of f, whose variance adds the noise
    p = norm.cdf(-mu / np.sqrt(var + 0.05 * y.std() ** 2))
    assert np.allclose(bo.prob_zero(at, [0.25]), p, rtol=1e-9)


def test_noisy_ei_is_the_monte_carlo_average_over_fantasies():
    """NEI(x) = E_s[EI under the GP conditioned on a latent sample y_s at the inputs,
    incumbent min y_s], computed here by brute force from the same normal draws."""
    bo, z, y = _fixed()
    at = np.array([20.0, 60.0])
    got = bo.noisy_ei(at, [0.4])
    amp, ls, noise = 1.3, 0.4, 0.05
    yn = (y - y.mean()) / y.std()
    kf = amp * _rbf(np.linalg.norm((z[:, None, :] - z[None, :, :]) / ls, axis=-1))
    kn = kf + (noise + 1e-10) * np.eye(4)
    mean = kf @ np.linalg.solve(kn, yn)
    cov = kf - kf @ np.linalg.solve(kn, kf)
    eps = bo._fan_normals  # the draws the optimiser used
    ys = mean[:, None] + np.linalg.cholesky(cov + 1e-8 * amp * np.eye(4)) @ eps
    q = np.column_stack([at / 100, np.full(2, 0.4)])
    ks = amp * _rbf(np.linalg.norm((q[:, None, :] - z[None, :, :]) / ls, axis=-1))
    kfan = kf + 1e-4 * np.eye(4)
    m = ks @ np.linalg.solve(kfan, ys)  # (2, S)
    sd = np.sqrt(amp - np.einsum("ij,ji->i", ks, np.linalg.solve(kfan, ks.T)))[:, None]
    best = ys.min(axis=0)
    zz = (best - m) / sd
    ei = ((best - m) * norm.cdf(zz) + sd * norm.pdf(zz)).mean(axis=1) * y.std()
    assert np.allclose(got, ei, rtol=1e-7)
    assert (got > 0).all() and eps.shape == (4, 20)


def test_noisy_ei_tends_to_ei_of_the_posterior_minimum_without_noise():
    """With (almost) no noise every fantasy interpolates the data: NEI = EI over min f."""
    bo, z, y = _fixed(noise=1e-12)
    at = np.array([20.0, 60.0, 80.0])
    mu, sd = bo.posterior(at, [0.4])
    # the fantasies' own noise (1e-4, standardised) makes the two differ slightly
    assert np.allclose(
        bo.noisy_ei(at, [0.4]), expected_improvement(mu, sd, y.min()), rtol=0.02, atol=1e-3
    )


def test_exploitation_is_the_grid_argmax_of_prob_zero_with_exact_pruning():
    rng = np.random.default_rng(3)
    for trial in range(20):
        bo = BayesOpt(
            0.0, 100.0, 2, rng=np.random.default_rng(trial), grid=np.arange(0.0, 101.0, 1.0)
        )
        for _ in range(40):
            x, c = rng.uniform(0, 100), rng.random(2)
            f = abs(x - (20 + 60 * c[0])) if rng.random() < 0.7 else x
            bo.observe(x, c, f)
        c = rng.random(2)
        p = bo.prob_zero(bo.grid, c)  # brute force, every grid point (scipy)
        x = bo.exploit(c)
        assert p[bo.grid == x][0] == pytest.approx(p.max(), rel=1e-12, abs=1e-300)
        assert x <= bo.grid[int(np.argmax(p >= p.max() * (1 - 1e-12)))] or p.max() == 0


def test_outcomes_after_acquisition_are_dropped():
    bo = _bo(bootstrap=2, min_updates=2, ei_stop=1e9)
    _run(bo, 3)
    assert bo.stage == "exploitation" and bo.n_updates == 2
    x = bo.exploit((0.5,))
    bo.observe(5.0, (0.5,), 100.0)
    assert bo.n_updates == 2 and bo.n_dropped == 1 and bo.exploit((0.5,)) == x


def test_posterior_agrees_with_scikit_learn_predict():
    """Our numpy posterior = scikit-learn's (whose std also counts the white noise)."""
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    rng = np.random.default_rng(1)
    gp = GPSurrogate(3)
    z, y = rng.random((12, 3)), rng.random(12) * 10
    gp.fit(z, y)
    kernel = ConstantKernel(gp.amplitude) * RBF(gp.length_scale) + WhiteKernel(gp.noise)
    ref = GaussianProcessRegressor(kernel, alpha=1e-10, optimizer=None)
    ref.fit(z, (y - y.mean()) / y.std())
    q = rng.random((5, 3))
    mu_ref, sd_ref = ref.predict(q, return_std=True)
    mu, sd = gp.predict(q)
    assert np.allclose(mu, mu_ref * y.std() + y.mean(), rtol=1e-7)
    assert np.allclose(sd**2 + gp.noise * y.std() ** 2, (sd_ref * y.std()) ** 2, rtol=1e-7)


def test_ei_of_a_certain_prediction_is_the_plain_improvement():
    assert expected_improvement(np.array([2.0, 5.0]), np.zeros(2), 3.0).tolist() == [1.0, 0.0]


def _run(bo, n, target=30.0, c=(0.5,)):
    """Suggest and observe ``f = |x - target|`` ``n`` times; return the suggestions."""
    out = []
    for _ in range(n):
        s = bo.suggest(c)
        out.append(s)
        if s.stage != "exploitation":
            bo.observe(s.x, c, abs(s.x - target))
    return out


def _bo(seed=0, **kw):
    return BayesOpt(0.0, 100.0, 1, rng=np.random.default_rng(seed), **kw)


def test_acquisition_never_stops_before_min_updates():
    bo = _bo(bootstrap=3, min_updates=8, ei_stop=1e9)  # any EI is below the threshold
    stages = [s.stage for s in _run(bo, 10)]
    # updates 0-2 bootstrap, 3-7 acquisition (fewer than 8 updates), then exploitation
    assert stages == ["bootstrap"] * 3 + ["acquisition"] * 5 + ["exploitation"] * 2
    assert bo.n_updates == 8 and bo.stage == "exploitation"


def test_acquisition_never_stops_while_ei_is_above_the_threshold():
    bo = _bo(bootstrap=3, min_updates=0, ei_stop=0.0)  # EI < 0 never holds
    assert {s.stage for s in _run(bo, 8)[3:]} == {"acquisition"}


def test_stopping_threshold_is_ei_stop_times_the_range():
    # the same seed and outcomes give the same EI; the run stops exactly when
    # that EI is below ei_stop * (hi - lo)
    probe = _bo(bootstrap=4, min_updates=4, ei_stop=0.0)
    _run(probe, 4)
    ei = probe.suggest((0.5,)).ei
    assert ei > 0
    above = _bo(bootstrap=4, min_updates=4, ei_stop=ei / 100.0 * 0.99)
    below = _bo(bootstrap=4, min_updates=4, ei_stop=ei / 100.0 * 1.01)
    _run(above, 4)
    _run(below, 4)
    assert above.suggest((0.5,)).stage == "acquisition"
    assert below.suggest((0.5,)).stage == "exploitation"


def test_exploitation_finds_the_minimum_of_a_known_function():
    bo = _bo(bootstrap=10, min_updates=0, ei_stop=1e9)
    for x in np.linspace(0, 100, 41):
        bo.observe(x, (0.5,), (x - 37.0) ** 2 / 100.0)
    assert bo.exploit((0.5,)) == pytest.approx(37.0, abs=0.5)


def test_exploitation_follows_the_context():
    bo = BayesOpt(0.0, 100.0, 1, rng=np.random.default_rng(0))
    for c, best in ((0.0, 20.0), (1.0, 70.0)):
        for x in np.linspace(0, 100, 26):
            bo.observe(x, (c,), abs(x - best))
    assert bo.exploit((0.0,)) == pytest.approx(20.0, abs=3.0)
    assert bo.exploit((1.0,)) == pytest.approx(70.0, abs=3.0)


def test_exploitation_at_a_bound():
    bo = _bo()
    for x in np.linspace(0, 100, 21):
        bo.observe(x, (0.5,), x)  # f increasing: the minimum is at lo
    assert bo.exploit((0.5,)) == 0.0


def test_same_seed_same_samples():
    a = [(s.x, s.stage, s.ei) for s in _run(_bo(seed=5, bootstrap=4), 9)]
    b = [(s.x, s.stage, s.ei) for s in _run(_bo(seed=5, bootstrap=4), 9)]
    c = [(s.x, s.stage, s.ei) for s in _run(_bo(seed=6, bootstrap=4), 9)]
    assert repr(a) == repr(b)
    assert a[:4] != c[:4]


@pytest.mark.parametrize(
    ("args", "kw"),
    [((5.0, 5.0, 1), {}), ((0.0, math.inf, 1), {}), ((0.0, 1.0, 1), {"bootstrap": 0})],
)
def test_bad_settings_are_refused(args, kw):
    with pytest.raises(ValueError):
        BayesOpt(*args, rng=np.random.default_rng(0), **kw)


def test_bad_context_is_refused():
    bo = _bo()
    with pytest.raises(ValueError, match="context"):
        bo.suggest([1.0, 2.0])
    with pytest.raises(ValueError, match="context"):
        bo.observe(1.0, [math.nan], 1.0)
