"""Job-length predictors: training iterations of recurring jobs from their group and user.

Implements Sec. IV-C-3 ("Random Forest Based Prediction") and the predictor comparison of
Sec. V-B 2-d of Z. Luo, J. Liu, M. Lee and N. B. Shroff, "Prediction-Assisted Online
Distributed Deep Learning Workload Scheduling in GPU Clusters" (A-SRPT), IEEE INFOCOM 2025,
arXiv:2501.05563:

* ``"forest"``: random-forest regression [Breiman 2001] of iterations from ``group`` and
  ``user`` (each encoded as an integer category code), 100 trees, squared-error splits,
  seeded; trained on the earliest 80 % of the jobs by submission (Sec. V-A 1-c, "We use the
  first 80% jobs in the trace to train"). Jobs whose group never occurs in the training
  window are predicted 0 iterations ("We predict 0 iterations for unseen jobs").
* ``"mean"`` / ``"median"``: the mean / median iterations of the training jobs ("simpler
  methods based on the mean and median of previous job iterations"), one number for all jobs.
* ``"oracle"``: the true iterations (the paper's *A-SRPT-Perfect*).

Choices where the paper is silent (see ``docs/a-srpt.md``):

* Predictions are made for *every* job, including the 80 % the forest was trained on (those
  are in-sample, as in the paper, which trains once and schedules the sampled jobs).
* ``mean``/``median`` are global (they use neither group nor user), so they do not apply the
  unseen-group rule, which is a property of the group-keyed forest.
* A job without ``iterations`` (an unannotated trace) counts its ``duration`` in seconds as
  its "iterations" (one iteration = one second of ideal run time).
* Without ``group`` and ``user`` columns the forest has no feature to split on; it then
  predicts the training mean (what a forest on a constant feature returns up to bootstrap
  noise), without calling scikit-learn.

scikit-learn is imported inside :func:`fit_predictor` only (it costs ~1.5 s to import).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "KINDS",
    "TRAIN_FRACTION",
    "fit_predictor",
    "job_iterations",
    "prediction_errors",
    "train_split",
]

KINDS = ("forest", "mean", "median", "oracle")
"""Predictor names accepted by :func:`fit_predictor`."""

TRAIN_FRACTION = 0.8
"""Share of the jobs, earliest by submission, the predictors are trained on (Sec. V-A 1-c)."""

N_TREES = 100  # Sec. IV-C-3: "We use 100 trees in our random forest regression"


def job_iterations(jobs: Any) -> np.ndarray:
    """True training iterations :math:`n_i` of every job of a job table.

    Parameters
    ----------
    jobs
        A :class:`gpusched.jobs.JobTable` (or anything with ``iterations`` and ``work_s``).

    Returns
    -------
    numpy.ndarray
        float64 iterations; where the trace gives none, the duration in seconds.
    """
    work = np.asarray(jobs.work_s, dtype=np.float64)
    it = np.asarray(getattr(jobs, "iterations", np.empty(0)), dtype=np.float64)
    if it.shape != work.shape:
        return work.copy()
    return np.where(np.isfinite(it), it, work)


def train_split(n_jobs: int, fraction: float = TRAIN_FRACTION) -> int:
    """Number of jobs (the earliest ones, by job index) in the training window.

    Parameters
    ----------
    n_jobs
        Jobs in the table (indexed in submission order).
    fraction
        Training share, 0 < fraction <= 1.
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    return max(1, int(np.floor(fraction * n_jobs))) if n_jobs else 0


def _codes(values: np.ndarray, n_train: int) -> tuple[np.ndarray, np.ndarray]:
    """Integer category codes (by first appearance in the training window; -1 = unseen)."""
    vals = np.asarray(values).astype(str)
    uniq, first = np.unique(vals[:n_train], return_index=True)
    rank = np.empty(uniq.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(uniq.size)
    pos = np.searchsorted(uniq, vals)
    pos_c = np.clip(pos, 0, max(uniq.size - 1, 0))
    seen = (pos < uniq.size) & (uniq[pos_c] == vals) if uniq.size else np.zeros(vals.size, bool)
    return np.where(seen, rank[pos_c] if uniq.size else -1, -1), seen


def fit_predictor(
    kind: str, jobs: Any, seed: int = 0, *, fraction: float = TRAIN_FRACTION
) -> np.ndarray:
    """Train predictor ``kind`` on the earliest jobs and predict every job's iterations.

    Parameters
    ----------
    kind
        ``"forest"``, ``"mean"``, ``"median"`` or ``"oracle"``.
    jobs
        A :class:`gpusched.jobs.JobTable` in submission order; ``jobs.extra`` may hold
        ``group`` and ``user`` columns.
    seed
        ``random_state`` of the forest (bootstrap and feature draws).
    fraction
        Share of jobs (earliest first) used for training.

    Returns
    -------
    numpy.ndarray
        float64 predicted iterations :math:`\\tilde n_i` (>= 0), one per job.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown predictor {kind!r} (known: {', '.join(KINDS)})")
    y = job_iterations(jobs)
    n = y.shape[0]
    if kind == "oracle" or n == 0:
        return y.copy()
    n_train = train_split(n, fraction)
    if kind == "mean":
        return np.full(n, float(np.mean(y[:n_train])))
    if kind == "median":
        return np.full(n, float(np.median(y[:n_train])))
    extra = getattr(jobs, "extra", {}) or {}
    feats = [c for c in ("group", "user") if c in extra]
    if not feats:
        return np.full(n, float(np.mean(y[:n_train])))
    cols, seen_group = [], np.ones(n, dtype=bool)
    for c in feats:
        code, seen = _codes(extra[c], n_train)
        cols.append(code)
        if c == "group":
            seen_group = seen
    x = np.column_stack(cols).astype(np.float64)

    from sklearn.ensemble import RandomForestRegressor  # lazy: ~1.5 s import

    forest = RandomForestRegressor(
        n_estimators=N_TREES, criterion="squared_error", random_state=int(seed), n_jobs=1
    )
    forest.fit(x[:n_train], y[:n_train])
    pred = np.asarray(forest.predict(x), dtype=np.float64)
    # Sec. IV-C-3: "We predict 0 iterations for unseen jobs"
    return np.where(seen_group, np.maximum(pred, 0.0), 0.0)


def prediction_errors(
    jobs: Any, seed: int = 0, *, fraction: float = TRAIN_FRACTION
) -> dict[str, float]:
    """Average absolute error :math:`\\bar\\epsilon` (eq. 9) of each predictor on the test jobs.

    Parameters
    ----------
    jobs
        A job table in submission order.
    seed
        Forest seed.
    fraction
        Training share; the error is averaged over the remaining (latest) jobs.

    Returns
    -------
    dict
        ``{"forest": ..., "mean": ..., "median": ..., "n_train": ..., "n_test": ...}``;
        errors in iterations (the paper's Sec. V-B 2-d reports 369 / 593 / 563).
    """
    y = job_iterations(jobs)
    n_train = train_split(y.shape[0], fraction)
    test = slice(n_train, None)
    out: dict[str, float] = {}
    for kind in ("forest", "mean", "median"):
        pred = fit_predictor(kind, jobs, seed, fraction=fraction)
        out[kind] = (
            float(np.mean(np.abs(y[test] - pred[test]))) if y.shape[0] > n_train else float("nan")
        )
    out["n_train"] = float(n_train)
    out["n_test"] = float(y.shape[0] - n_train)
    return out
