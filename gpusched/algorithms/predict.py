"""Job-length predictors: training iterations of recurring jobs from their group and user.

Implements Sec. IV-C-3 ("Random Forest Based Prediction") and the predictor comparison of
Sec. V-B 2-d of Z. Luo, J. Liu, M. Lee and N. B. Shroff, "Prediction-Assisted Online
Distributed Deep Learning Workload Scheduling in GPU Clusters" (A-SRPT), IEEE INFOCOM 2025,
arXiv:2501.05563:

* ``"forest"``: random-forest regression [Breiman 2001] from ``group`` and ``user``, 100
  trees, squared-error splits, seeded. Jobs whose group never occurs among the training
  jobs are predicted 0 iterations ("We predict 0 iterations for unseen jobs").
* ``"mean"`` / ``"median"``: the mean / median of the training jobs ("simpler methods based
  on the mean and median of previous job iterations"), one duration for all jobs.
* ``"oracle"``: the true iterations (the paper's *A-SRPT-Perfect*).

History, training and evaluated jobs (:func:`split`). The paper trains on "the first 80%
jobs in the trace" (Sec. V-A 1-c). Here the first ``fraction`` of the job table (by
submission) is the *history*; the rest are the *evaluated* jobs. The predictors are trained
only on history jobs that had *finished* (submission + duration, from the trace) by the
first evaluated job's submission, so no evaluated job, and no job still running when the
evaluated window opens, is ever trained on. Every job, history included, is replayed and
counts in the run's metrics as before (a history job is scheduled with the prediction of
the same fitted model, in-sample for a training job); prediction accuracy
(:func:`prediction_report`) is reported over the evaluated jobs only.

Choices where the paper is silent (see ``docs/a-srpt.md``):

* **Target.** Iterations of different models differ by three orders of magnitude in
  per-iteration time, so they are not pooled. Every predictor learns the job's duration
  ``work_s`` (s at its ideal placement, the trace's ``duration``), the forest its
  logarithm, and turns a predicted duration into iterations with the job's own
  per-iteration time ``work_s / iterations`` (a property of its model and configuration,
  known at submission). For ``mean`` this is the mean training duration; for ``median``
  the median one.
* **Categorical features.** Group and user enter the forest by *target encoding* fitted on
  the training jobs only, never as arbitrary integer codes: a category's value is the mean
  log-duration of its training jobs, shrunk towards the training mean by
  :data:`SMOOTHING` pseudo-jobs. The paper predicts "based on ``group id`` and user id"
  and trains on "the first 80% jobs" (Sec. IV-C-3, V-A 1-c): a feature that is a function
  of the ids. So by default (``encoding="plain"``) a training job and a job predicted carry
  the same value for the same category, the category's full training encoding. Ordering
  the categories by their mean response and splitting them as an ordered variable is how a
  least-squares regression tree treats a categorical feature (Breiman et al., CART, 1984,
  Sec. 9.4, after Fisher, 1958): it finds the best split into two sets of categories. The
  option ``encoding="ordered"`` (this module's default until issue 32) encodes a training
  job with its categories' *earlier* training jobs only (ordered target statistics, as
  CatBoost does), so the trees learn from what was known when each job arrived; the paper
  does not describe this, and on recurring workloads it halves the share within 10 % of
  the jobs of seen groups (``docs/a-srpt.md``). A fully grown tree on the plain encoding
  fits the training jobs' own targets, but a job predicted is never a training job (the
  evaluated jobs are not trained on, and a history job is predicted in-sample only for
  scheduling, as the paper does). No count feature: it would let the trees split on a
  job's position in time. Target encoding rather than an exact-match lookup, so that the
  paper's random forest stays the model and can weigh the user against the group.
* **Unseen groups.** The paper's rule applies to the group only: a job whose group is not
  among the training jobs is predicted 0 (``unseen="zero"``, the default; :attr:`Fit.rule`
  marks them; the Alibaba PAI trace's own simulator does the same, "no history ... duration
  = 0 ... highest priority"). ``unseen="forest"`` switches the rule off: such a job keeps
  the forest's prediction, its group encoded as the training mean (so its user decides).
  :attr:`Fit.unseen` marks jobs of unseen groups in either case. An unseen *user* of a seen
  group gets the training mean as its user encoding.
* ``mean``/``median`` are global (they use neither group nor user), so the unseen-group rule
  does not apply to them. With no training job at all (nothing finished before the
  evaluated window) every predictor but the oracle predicts 0 for every job, and
  :attr:`Fit.rule` marks them all.
* A job without ``iterations`` (an unannotated trace) counts its ``duration`` in seconds as
  its "iterations" (one iteration = one second of ideal run time).
* Without ``group`` and ``user`` columns the forest has no feature to split on; it then
  predicts the geometric mean of the training durations (what a forest on log-duration
  returns for a constant feature, up to bootstrap noise), without calling scikit-learn.

scikit-learn is imported inside :func:`fit` only (it costs ~1.5 s to import).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gpusched.core.jobs import job_iterations

__all__ = [
    "ENCODINGS",
    "KINDS",
    "SMOOTHING",
    "TRAIN_FRACTION",
    "UNSEEN",
    "WITHIN",
    "Fit",
    "Split",
    "accuracy",
    "fit",
    "fit_predictor",
    "job_iterations",
    "prediction_errors",
    "prediction_report",
    "split",
    "train_split",
]

KINDS = ("forest", "mean", "median", "oracle")
"""Predictor names accepted by :func:`fit_predictor`."""

ENCODINGS = ("plain", "ordered")
"""How the forest's training jobs encode group and user (module docstring); the first is the default."""

UNSEEN = ("zero", "forest")
"""What a job of an unseen group gets from the forest: 0 (the paper's rule) or the forest's value."""

TRAIN_FRACTION = 0.8
"""Share of the jobs, earliest by submission, that are history (Sec. V-A 1-c)."""

N_TREES = 100  # Sec. IV-C-3: "We use 100 trees in our random forest regression"

SMOOTHING = 1.0
"""Pseudo-jobs at the training mean added to every category's target encoding."""

WITHIN = 0.1
"""A prediction within this relative error of the true iterations counts as correct."""


def train_split(n_jobs: int, fraction: float = TRAIN_FRACTION) -> int:
    """Number of history jobs (the earliest ones, by job index).

    Parameters
    ----------
    n_jobs
        Jobs in the table (indexed in submission order).
    fraction
        History share, 0 < fraction <= 1.
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    return max(1, int(np.floor(fraction * n_jobs))) if n_jobs else 0


@dataclass(frozen=True, slots=True)
class Split:
    """History, training and evaluated jobs of a job table (see the module docstring).

    Attributes
    ----------
    n_history
        Jobs ``0 .. n_history - 1`` are history.
    cutoff_s
        Submission time of the first evaluated job, s (inf when none is evaluated).
    train
        Indices of the history jobs finished (submit + duration) by ``cutoff_s``.
    evaluated
        Indices of the evaluated jobs (``n_history .. n - 1``).
    """

    n_history: int
    cutoff_s: float
    train: np.ndarray
    evaluated: np.ndarray


def split(jobs: Any, fraction: float = TRAIN_FRACTION) -> Split:
    """Split a job table (submission order) into history, training and evaluated jobs.

    Parameters
    ----------
    jobs
        Anything with ``submit_s`` and ``work_s`` (s), in submission order.
    fraction
        History share, 0 < fraction <= 1.
    """
    submit = np.asarray(jobs.submit_s, dtype=np.float64)
    work = np.asarray(jobs.work_s, dtype=np.float64)
    n = submit.shape[0]
    n_hist = train_split(n, fraction)
    cutoff = float(submit[n_hist]) if n_hist < n else float("inf")
    finished = submit[:n_hist] + work[:n_hist] <= cutoff
    return Split(
        n_history=n_hist,
        cutoff_s=cutoff,
        train=np.flatnonzero(finished),
        evaluated=np.arange(n_hist, n),
    )


@dataclass(frozen=True, slots=True)
class Fit:
    """Predictions of one predictor for every job of a table.

    Attributes
    ----------
    kind
        The predictor.
    iterations
        float64 predicted iterations :math:`\\tilde n_i` (>= 0), one per job.
    rule
        bool per job: predicted 0 by the unseen-group rule (or for want of any training job).
    split
        The history / training / evaluated split it was fitted on.
    unseen
        bool per job: its group has no training job (all jobs when nothing was trained on,
        none without a ``group`` column), whatever the predictor and the rule.
    """

    kind: str
    iterations: np.ndarray
    rule: np.ndarray
    split: Split
    unseen: np.ndarray


def _encode(
    values: np.ndarray, train: np.ndarray, z: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Target encoding of one categorical column, fitted on the rows ``train`` (ascending).

    Returns ``(enc, count, enc_train, count_train)``: every row's encoding (mean of ``z``
    over the category's training rows, shrunk towards the training mean by
    :data:`SMOOTHING` pseudo-rows; the training mean for an unseen category) and its
    number of training rows; then each training row's *ordered* encoding and count, over
    the category's earlier training rows only (what was known when that job arrived).
    """
    vals = np.asarray(values).astype(str)
    uniq, inv = np.unique(vals[train], return_inverse=True)
    zt = z[train]
    prior = float(zt.mean())
    total = np.bincount(inv, weights=zt, minlength=uniq.size)
    count = np.bincount(inv, minlength=uniq.size).astype(np.float64)
    pos = np.clip(np.searchsorted(uniq, vals), 0, max(uniq.size - 1, 0))
    seen = uniq[pos] == vals if uniq.size else np.zeros(vals.size, dtype=bool)
    s_all = np.where(seen, total[pos], 0.0)
    n_all = np.where(seen, count[pos], 0.0)
    enc = (s_all + SMOOTHING * prior) / (n_all + SMOOTHING)
    # ordered statistics: sums and counts of the same category's earlier training rows
    order = np.argsort(inv, kind="stable")  # by category, then by time
    cat = inv[order]
    csum = np.cumsum(zt[order]) - zt[order]
    start = np.searchsorted(cat, cat)  # first row of each row's category
    before = np.empty(zt.size)
    before[order] = csum - (np.cumsum(zt[order]) - zt[order])[start]
    n_before = np.empty(zt.size)
    n_before[order] = np.arange(zt.size) - start
    enc_train = (before + SMOOTHING * prior) / (n_before + SMOOTHING)
    return enc, n_all, enc_train, n_before


def _unseen(jobs: Any, sp: Split, n: int) -> np.ndarray:
    """Jobs whose group has no training job (see :attr:`Fit.unseen`)."""
    if sp.train.size == 0:
        return np.ones(n, dtype=bool)
    extra = getattr(jobs, "extra", {}) or {}
    if "group" not in extra:
        return np.zeros(n, dtype=bool)
    g = np.asarray(extra["group"]).astype(str)
    return ~np.isin(g, g[sp.train])


def check_options(encoding: str, unseen: str) -> None:
    """Raise ValueError unless ``encoding`` is in :data:`ENCODINGS` and ``unseen`` in :data:`UNSEEN`."""
    if encoding not in ENCODINGS:
        raise ValueError(f"encoding must be one of {', '.join(ENCODINGS)}, got {encoding!r}")
    if unseen not in UNSEEN:
        raise ValueError(f"unseen must be one of {', '.join(UNSEEN)}, got {unseen!r}")


def fit(
    kind: str,
    jobs: Any,
    seed: int = 0,
    *,
    fraction: float = TRAIN_FRACTION,
    encoding: str = ENCODINGS[0],
    unseen: str = UNSEEN[0],
) -> Fit:
    """Train predictor ``kind`` on the training jobs and predict every job's iterations.

    Parameters
    ----------
    kind
        ``"forest"``, ``"mean"``, ``"median"`` or ``"oracle"``.
    jobs
        A :class:`gpusched.core.jobs.JobTable` in submission order (``submit_s``, ``work_s``,
        ``iterations``); ``jobs.extra`` may hold ``group`` and ``user`` columns.
    seed
        ``random_state`` of the forest (bootstrap and feature draws).
    fraction
        Share of jobs (earliest first) that are history (:func:`split`).
    encoding
        The forest's training encoding of group and user, ``"plain"`` (default) or
        ``"ordered"`` (module docstring); ignored by the other predictors.
    unseen
        ``"zero"`` (default: the paper's rule, a job of an unseen group is predicted 0) or
        ``"forest"`` (the rule off); ignored by the other predictors, which use no group.

    Returns
    -------
    Fit
        Predicted iterations, where the unseen-group rule fired, the split, unseen groups.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown predictor {kind!r} (known: {', '.join(KINDS)})")
    check_options(encoding, unseen)
    y = job_iterations(jobs)
    n = y.shape[0]
    sp = split(jobs, fraction)
    none = np.zeros(n, dtype=bool)
    new = _unseen(jobs, sp, n)
    if kind == "oracle" or n == 0:
        return Fit(kind, y.copy(), none, sp, new)
    if sp.train.size == 0:  # nothing finished before the evaluated window: nothing known
        return Fit(kind, np.zeros(n), np.ones(n, dtype=bool), sp, new)
    work = np.asarray(jobs.work_s, dtype=np.float64)
    s_per_it = np.where(y > 0, work / np.where(y > 0, y, 1.0), 1.0)  # s per iteration
    tr = sp.train
    if kind == "mean":
        return Fit(kind, float(np.mean(work[tr])) / s_per_it, none, sp, new)
    if kind == "median":
        return Fit(kind, float(np.median(work[tr])) / s_per_it, none, sp, new)
    # the forest's target: log-duration, comparable across models. NumPy's log and exp
    # here take its AVX-512 code where the processor has it, whose last bit can differ
    # from the C library's (gpusched.core.portable). With the C library's, Fig. 6's sweep
    # (docs/a-srpt-results.md) moved for the five policies that order by prediction
    # (A-SRPT's total JCT at 19,200 jobs 23,046 -> 25,930 x 10^6 s, inside its 95 %
    # interval of +-43,670), so NumPy's stay until those results are re-run
    # (docs/architecture.md, "The same decisions on every machine")
    z = np.log(work)
    extra = getattr(jobs, "extra", {}) or {}
    feats = [c for c in ("group", "user") if c in extra]
    if not feats:
        return Fit(kind, float(np.exp(np.mean(z[tr]))) / s_per_it, none, sp, new)
    cols, cols_train = [], []
    for c in feats:
        enc, _, enc_tr, _ = _encode(extra[c], tr, z)
        cols.append(enc)
        # plain: a training job carries its category's full training encoding, as a job
        # predicted does; ordered: only its category's earlier training jobs
        cols_train.append(enc[tr] if encoding == "plain" else enc_tr)

    from sklearn.ensemble import RandomForestRegressor  # lazy: ~1.5 s import

    forest = RandomForestRegressor(
        n_estimators=N_TREES, criterion="squared_error", random_state=int(seed), n_jobs=1
    )
    forest.fit(np.column_stack(cols_train), z[tr])
    dur = np.exp(np.asarray(forest.predict(np.column_stack(cols)), dtype=np.float64))
    if unseen == "forest":  # the rule off: every job keeps the forest's prediction
        return Fit(kind, dur / s_per_it, none, sp, new)
    # Sec. IV-C-3: "We predict 0 iterations for unseen jobs"
    return Fit(kind, np.where(new, 0.0, dur / s_per_it), new.copy(), sp, new)


def fit_predictor(
    kind: str,
    jobs: Any,
    seed: int = 0,
    *,
    fraction: float = TRAIN_FRACTION,
    encoding: str = ENCODINGS[0],
    unseen: str = UNSEEN[0],
) -> np.ndarray:
    """Predicted iterations :math:`\\tilde n_i` of every job (``fit(...).iterations``).

    Parameters
    ----------
    kind, jobs, seed, fraction, encoding, unseen
        As for :func:`fit`.

    Returns
    -------
    numpy.ndarray
        float64 predicted iterations (>= 0), one per job.
    """
    return fit(kind, jobs, seed, fraction=fraction, encoding=encoding, unseen=unseen).iterations


def accuracy(
    pred: np.ndarray,
    true: np.ndarray,
    rule: np.ndarray | None = None,
    unseen: np.ndarray | None = None,
) -> dict[str, Any]:
    """Accuracy of predictions the way the paper reports it (Fig. 4, eq. 9).

    Parameters
    ----------
    pred, true
        Predicted and true iterations of the jobs evaluated.
    rule
        bool per job: predicted by the unseen-group rule (counted), or None.
    unseen
        bool per job: its group has no training job, or None (every group seen).

    Returns
    -------
    dict
        ``within_10pct`` (share of jobs with :math:`|\\tilde n_i - n_i| \\le 0.1 n_i`),
        ``mae_iterations`` (:math:`\\bar\\epsilon`, eq. 9), ``n_evaluated`` and
        ``n_unseen_group_rule``; then the same over the jobs of seen groups only:
        ``within_10pct_seen``, ``mae_iterations_seen`` and ``mae_log_seen`` (mean
        :math:`|\\ln(\\tilde n_i / n_i)|`, a prediction of 0 counted at 1e-9 iterations);
        ``n_seen``. Shares and errors are None over no job.
    """
    pred = np.asarray(pred, dtype=np.float64)
    true = np.asarray(true, dtype=np.float64)
    err = np.abs(pred - true)
    n = int(true.shape[0])
    seen = np.ones(n, dtype=bool) if unseen is None else ~np.asarray(unseen, dtype=bool)
    k = int(seen.sum())
    ratio = np.maximum(pred[seen], 1e-9) / np.maximum(true[seen], 1e-9)
    return {
        "within_10pct": float(np.mean(err <= WITHIN * true)) if n else None,
        "mae_iterations": float(np.mean(err)) if n else None,
        "n_evaluated": n,
        "n_unseen_group_rule": int(np.sum(rule)) if rule is not None else 0,
        "within_10pct_seen": float(np.mean(err[seen] <= WITHIN * true[seen])) if k else None,
        "mae_iterations_seen": float(np.mean(err[seen])) if k else None,
        "mae_log_seen": float(np.mean(np.abs(np.log(ratio)))) if k else None,
        "n_seen": k,
    }


def prediction_report(
    jobs: Any,
    used: Fit,
    seed: int = 0,
    *,
    fraction: float = TRAIN_FRACTION,
    encoding: str = ENCODINGS[0],
) -> dict[str, Any]:
    """The ``prediction`` block of summary.json: accuracy on the evaluated jobs.

    Parameters
    ----------
    jobs
        The job table the predictor ``used`` was fitted on.
    used
        The run's predictor (:func:`fit`).
    seed, fraction
        As for :func:`fit` (the baselines use no seed).
    encoding
        The forest encoding, when the comparison predictors include a forest.

    Returns
    -------
    dict
        ``predictor`` (its kind), the split's ``n_history``, ``n_train``, ``n_evaluated``
        and ``cutoff_s``, ``unseen_share`` (share of the evaluated jobs whose group has no
        training job), then one :func:`accuracy` block per predictor: the one used and
        the baselines ``mean``, ``median`` and ``oracle``.
    """
    y = job_iterations(jobs)
    ev = used.split.evaluated
    new = used.unseen[ev]
    out: dict[str, Any] = {
        "predictor": used.kind,
        "n_history": used.split.n_history,
        "n_train": int(used.split.train.size),
        "n_evaluated": int(ev.size),
        "cutoff_s": used.split.cutoff_s if np.isfinite(used.split.cutoff_s) else None,
        "unseen_share": float(new.mean()) if ev.size else None,
    }
    for kind in dict.fromkeys((used.kind, "mean", "median", "oracle")):
        f = (
            used
            if kind == used.kind
            else fit(kind, jobs, seed, fraction=fraction, encoding=encoding)
        )
        out[kind] = accuracy(f.iterations[ev], y[ev], f.rule[ev], new)
    return out


def prediction_errors(
    jobs: Any, seed: int = 0, *, fraction: float = TRAIN_FRACTION
) -> dict[str, float]:
    """Average absolute error :math:`\\bar\\epsilon` (eq. 9) of each predictor on the evaluated jobs.

    Parameters
    ----------
    jobs
        A job table in submission order.
    seed
        Forest seed.
    fraction
        History share; the error is averaged over the remaining (latest) jobs.

    Returns
    -------
    dict
        ``{"forest": ..., "mean": ..., "median": ..., "n_train": ..., "n_test": ...}``;
        errors in iterations (the paper's Sec. V-B 2-d reports 369 / 593 / 563).
    """
    y = job_iterations(jobs)
    sp = split(jobs, fraction)
    test = sp.evaluated
    out: dict[str, float] = {}
    for kind in ("forest", "mean", "median"):
        pred = fit_predictor(kind, jobs, seed, fraction=fraction)
        out[kind] = float(np.mean(np.abs(y[test] - pred[test]))) if test.size else float("nan")
    out["n_train"] = float(sp.train.size)
    out["n_test"] = float(test.size)
    return out
