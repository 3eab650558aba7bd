"""Iteration predictors (A-SRPT Sec. IV-C-3): seeded forest, mean, median, oracle."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from gpusched.algorithms.predict import (
    fit_predictor,
    job_iterations,
    prediction_errors,
    train_split,
)


def _grouped(n: int = 600, n_groups: int = 30, seed: int = 0) -> SimpleNamespace:
    # strong group structure: each group repeats one size (log-uniform 10..1e5) +-2 %
    rng = np.random.default_rng(seed)
    centre = 10 ** rng.uniform(1, 5, n_groups)
    grp = rng.integers(n_groups, size=n)
    user = grp % 7
    it = centre[grp] * rng.uniform(0.98, 1.02, n)
    return SimpleNamespace(
        work_s=it * 0.1,
        iterations=it,
        extra={
            "group": np.array([f"g{g}" for g in grp], dtype=object),
            "user": np.array([f"u{u}" for u in user], dtype=object),
        },
    )


def test_train_split_is_earliest_80_percent():
    assert train_split(10) == 8
    assert train_split(1) == 1


def test_forest_deterministic_under_seed():
    jobs = _grouped()
    a = fit_predictor("forest", jobs, seed=3)
    b = fit_predictor("forest", jobs, seed=3)
    assert a.tobytes() == b.tobytes()
    assert a.shape == (600,) and (a >= 0).all()


def test_forest_beats_mean_and_median_with_group_structure():
    err = prediction_errors(_grouped(), seed=0)
    assert err["forest"] < 0.2 * err["median"]
    assert err["forest"] < 0.2 * err["mean"]
    assert err["n_train"] == 480 and err["n_test"] == 120


def test_unseen_group_predicts_zero_and_oracle_is_truth():
    jobs = _grouped(n=100)
    jobs.extra["group"][-1] = "never-seen-before"
    pred = fit_predictor("forest", jobs, seed=0)
    assert pred[-1] == 0.0
    np.testing.assert_array_equal(fit_predictor("oracle", jobs), jobs.iterations)
    y = jobs.iterations[:80]
    assert fit_predictor("mean", jobs)[0] == pytest.approx(y.mean())
    assert fit_predictor("median", jobs)[-1] == pytest.approx(np.median(y))


def test_unannotated_jobs_count_seconds():
    jobs = SimpleNamespace(
        work_s=np.array([5.0, 7.0]), iterations=np.array([np.nan, 3.0]), extra={}
    )
    np.testing.assert_array_equal(job_iterations(jobs), [5.0, 3.0])
    # no group/user columns: the forest has no feature and predicts the training mean
    np.testing.assert_array_equal(fit_predictor("forest", jobs), [5.0, 5.0])


def test_unknown_kind():
    with pytest.raises(ValueError, match="unknown predictor"):
        fit_predictor("lstm", _grouped(n=10))
