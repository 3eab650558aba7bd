"""Parameter-server jobs on multi-resource machines: the PD-ORS paper's job model.

Yu, Liu, Wu, Ji, Bentley, "Toward Efficient Online Scheduling for Distributed Machine
Learning Systems", IEEE TNSE 2022, Section III:

* a job trains ``V = E K`` samples (E epochs of K samples, eq. 3) with a fixed global
  batch F split evenly over its workers, and a worker:PS ratio gamma (eq. 2);
* on machine h its workers train, per second (one paper time slot),
  ``w_h / (tau + (2 g / sum s) / b_min / (F / sum w))`` samples (eq. 1), where ``b_min``
  is the slowest worker-PS link of the whole job (BSP: the slowest link decides);
* Fact 1: ``b_min`` is the internal rate ``b_int`` if and only if every worker and every PS
  of the job sit on one machine, else the external rate ``b_ext``;
* at most F workers at once (eq. 4);
* utility (Sec. V): the sigmoid ``theta1 / (1 + exp(theta2 (t - a - theta3)))`` of the
  training time ``t - a``.

**Time unit.** The paper's time is an abstract slot (tau is "in time slots"); gpusched maps
one slot to one simulated second (the engine's default ``--slot``), so tau is in s per
sample, link rates in MB/s, the horizon T and the utility's target theta3 in s.

**Counts, not the ratio.** The engine computes eq. 1 from the counts a policy gives
(``sum w / sum s`` need not equal gamma exactly; with the ratio it is eq. 3's form). The
paper's schedules keep ``sum w = gamma sum s``; a policy that gives fewer PSs than the
ratio pays for it in communication time.

**Progress.** The engine measures work in seconds at ideal placement (``job_work``, the
duration): here the time to train V samples with F workers and F / gamma PSs all on one
machine, ``V (tau + 2 g gamma / (b_int F)) / F`` (the earliest completion of eq. 13), so a
job's rate is its samples per second over that ideal speed (<= 1 at the ratio).

Trace columns of a job placed by roles (``num_gpus`` = 0):

================= ======================================================== ============
column            meaning                                                  paper
================= ======================================================== ============
epochs            training epochs, integer >= 1                            E_i
samples           training samples, integer >= 1                           K_i
global_batch      global batch, integer >= 1 (also the most workers)       F_i
ps_ratio          workers per parameter server, > 0                        gamma_i
sample_time       training time per sample on one worker, s, > 0           tau_i
grad_mb           size of the gradients (and parameters), MB, > 0          g_i
bw_internal       worker-PS link rate on one machine, MB/s, > 0            b_i^(i)
bw_external       worker-PS link rate across machines, MB/s, > 0           b_i^(e)
worker_<r>        a worker's demand of resource r (gpus, cpus, mem_gb,      alpha_i^r
                  storage_gb), >= 0
ps_<r>            a parameter server's demand of resource r, >= 0          beta_i^r
utility_priority  sigmoid height theta1 (optional, default 1)              theta_1
utility_decay     sigmoid steepness theta2, 1/s (optional, default 0)      theta_2
utility_target    sigmoid midpoint theta3, s (optional, default 0)         theta_3
horizon           the run's horizon T, s: unfinished jobs are reported     T
                  unfinished after it (optional; the largest over the
                  trace is the run's)
================= ======================================================== ============
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpusched.core import portable
from gpusched.core.ledger import RESOURCES
from gpusched.errors import TraceError, show_name
from gpusched.jobmodels._columns import float_column

__all__ = ["COLUMNS", "PSJob", "PSParams", "PSRoles", "params_of", "utility"]

#: Required columns and what a good value is.
_REQUIRED: dict[str, str] = {
    "epochs": "an integer >= 1",
    "samples": "an integer >= 1",
    "global_batch": "an integer >= 1",
    "ps_ratio": "a number > 0",
    "sample_time": "a number of seconds > 0",
    "grad_mb": "a number of MB > 0",
    "bw_internal": "a rate in MB/s > 0",
    "bw_external": "a rate in MB/s > 0",
    **{f"worker_{r}": "a number >= 0" for r in RESOURCES},
    **{f"ps_{r}": "a number >= 0" for r in RESOURCES},
}
#: Optional columns, their defaults and what a good value is.
_OPTIONAL: dict[str, tuple[float, str]] = {
    "utility_priority": (1.0, "a number >= 0"),
    "utility_decay": (0.0, "a number >= 0"),
    "utility_target": (0.0, "a number of seconds >= 0"),
    "horizon": (math.inf, "a number of seconds > 0"),
}
COLUMNS: tuple[str, ...] = tuple(_REQUIRED) + tuple(_OPTIONAL)
_INTEGER = ("epochs", "samples", "global_batch")
_POSITIVE = ("ps_ratio", "sample_time", "grad_mb", "bw_internal", "bw_external", "horizon")


def utility(theta: np.ndarray, training_s: Any) -> Any:
    """Sec. V's sigmoid utility ``theta1 / (1 + exp(theta2 (x - theta3)))`` of training time x.

    ``theta`` is ``(..., 3)``; broadcasting over jobs or times.
    """
    theta = np.asarray(theta, dtype=np.float64)
    x = np.asarray(training_s, dtype=np.float64)
    z = np.clip(theta[..., 1] * (x - theta[..., 2]), -700.0, 700.0)
    return theta[..., 0] / (1.0 + portable.exp(z))


@dataclass(frozen=True)
class PSParams:
    """Every job's section-III parameters (arrays over jobs; NaN/0 rows for other jobs)."""

    epochs: np.ndarray  # E
    samples: np.ndarray  # K
    batch: np.ndarray  # F (int64)
    gamma: np.ndarray
    tau: np.ndarray  # s per sample
    grad_mb: np.ndarray  # g
    b_int: np.ndarray  # MB/s
    b_ext: np.ndarray  # MB/s
    worker: np.ndarray  # (n, R) alpha
    ps: np.ndarray  # (n, R) beta
    theta: np.ndarray  # (n, 3)
    horizon: np.ndarray  # s (inf = none)

    def __len__(self) -> int:
        return int(self.batch.shape[0])

    @property
    def work_samples(self) -> np.ndarray:
        """V = E K, samples to train (eq. 3, ``V_i`` of eq. 17)."""
        return np.asarray(self.epochs * self.samples, dtype=np.float64)

    def sample_time(self, internal: Any) -> np.ndarray:
        """Seconds per sample on one worker at the ratio (the denominator of eq. 3):
        ``tau + 2 g gamma / (b F)`` with b internal where ``internal`` (Fact 1)."""
        b = np.where(internal, self.b_int, self.b_ext)
        return np.asarray(self.tau + 2.0 * self.grad_mb * self.gamma / (b * self.batch))

    @property
    def ideal_samples_per_s(self) -> np.ndarray:
        """F workers at the ratio on one machine: the fastest a job can train (eq. 13)."""
        return np.asarray(self.batch / self.sample_time(True), dtype=np.float64)

    @property
    def duration_s(self) -> np.ndarray:
        """Time to train V samples at :attr:`ideal_samples_per_s` (the engine's work)."""
        return np.asarray(self.work_samples / self.ideal_samples_per_s, dtype=np.float64)

    def samples_per_s(self, j: int, w: np.ndarray, s: np.ndarray) -> float:
        """Eq. 1 summed over machines: samples job ``j`` trains per second on ``w`` workers
        and ``s`` PSs per machine (0 without workers or without PSs)."""
        n_w = int(w.sum())
        n_s = int(s.sum())
        if n_w == 0 or n_s == 0:
            return 0.0
        on = np.flatnonzero((w > 0) | (s > 0))
        b = self.b_int[j] if on.size == 1 else self.b_ext[j]  # Fact 1
        per_sample = self.tau[j] + (2.0 * self.grad_mb[j] / n_s) / b / (self.batch[j] / n_w)
        return float(n_w / per_sample)

    def training_utility(self, j: Any, training_s: Any) -> Any:
        """Utility of job(s) ``j`` trained in ``training_s`` seconds after arrival."""
        return utility(self.theta[j], training_s)


@dataclass(frozen=True)
class PSJob:
    """One job as the schedulers of the paper see it, in slots (1 slot = 1 s).

    ``arrival`` is the first slot the job may use (its decision point); ``c_int`` and
    ``c_ext`` are the worker-slots per sample at the ratio, internal and external (eq. 3's
    denominator): ``v`` samples in one slot need ``v c`` workers.
    """

    arrival: int
    work: float  # V = E K samples
    c_int: float
    c_ext: float
    gamma: float
    batch: int  # F: at most this many workers at once (eq. 4)
    worker: np.ndarray  # (R,) alpha
    ps: np.ndarray  # (R,) beta
    theta: np.ndarray  # (3,)

    @classmethod
    def of(cls, p: PSParams, j: int, arrival: int) -> PSJob:
        """Job ``j`` of ``p``, arriving at slot ``arrival``."""
        return cls(
            arrival=int(arrival),
            work=float(p.work_samples[j]),
            c_int=float(p.sample_time(True)[j]),
            c_ext=float(p.sample_time(False)[j]),
            gamma=float(p.gamma[j]),
            batch=int(p.batch[j]),
            worker=p.worker[j].copy(),
            ps=p.ps[j].copy(),
            theta=p.theta[j].copy(),
        )

    def utility(self, completion: Any) -> Any:
        """Utility when the job's last active slot is ``completion`` (training time
        ``completion + 1 - arrival`` slots: it ends by the end of that slot)."""
        return utility(self.theta, np.asarray(completion) + 1 - self.arrival)


def params_of(trace: Any, rows: np.ndarray | None = None) -> PSParams:
    """Read the section-III columns of ``rows`` (default: every row) of a trace or job table.

    Raises
    ------
    TraceError
        One line per bad field: file, line, column, what was expected and what was found.
    """
    n = len(trace)
    rows = np.arange(n) if rows is None else np.flatnonzero(rows) if rows.dtype == bool else rows
    errors: list[str] = []
    missing = [c for c in _REQUIRED if c not in trace.extra]
    if missing and rows.size:
        raise TraceError(
            f"{show_name(trace.source)}: jobs with num_gpus 0 are parameter-server jobs and "
            f"need the columns {', '.join(missing)}"
        )
    got: dict[str, np.ndarray] = {}
    for col, what in _REQUIRED.items():
        if col in _INTEGER:
            ok = lambda v: v >= 1 and v == int(v) and v < 2**53  # noqa: E731
        elif col in _POSITIVE:
            ok = lambda v: v > 0  # noqa: E731
        else:
            ok = lambda v: v >= 0  # noqa: E731
        got[col] = float_column(trace, col, rows, errors, what, ok)
    for col, (default, what) in _OPTIONAL.items():
        ok = (lambda v: v > 0) if col in _POSITIVE else (lambda v: v >= 0)
        got[col] = float_column(trace, col, rows, errors, what, ok, default)
    name = show_name(trace.source)
    for i in rows.tolist():
        w = [got[f"worker_{r}"][i] for r in RESOURCES]
        p = [got[f"ps_{r}"][i] for r in RESOURCES]
        if all(math.isfinite(x) for x in w + p) and (sum(w) <= 0 or sum(p) <= 0):
            errors.append(
                f"{name}:{int(trace.line[i])}: column 'worker_cpus': a worker and a parameter "
                "server must each demand some resource (all of worker_* or ps_* are 0)"
            )
    if errors:
        raise TraceError(errors)
    batch = np.nan_to_num(got["global_batch"], nan=1.0).astype(np.int64)
    return PSParams(
        epochs=got["epochs"],
        samples=got["samples"],
        batch=batch,
        gamma=got["ps_ratio"],
        tau=got["sample_time"],
        grad_mb=got["grad_mb"],
        b_int=got["bw_internal"],
        b_ext=got["bw_external"],
        worker=np.stack([got[f"worker_{r}"] for r in RESOURCES], axis=1),
        ps=np.stack([got[f"ps_{r}"] for r in RESOURCES], axis=1),
        theta=np.stack(
            [got["utility_priority"], got["utility_decay"], got["utility_target"]], axis=1
        ),
        horizon=got["horizon"],
    )


class PSRoles:
    """The roles of parameter-server jobs, as the engine's ledger reads them
    (:mod:`gpusched.core.ledger`), and the family's summary keys."""

    def __init__(self, jobs: Any) -> None:
        self.mask = np.asarray(jobs.n_gpus) == 0
        self.params = params_of(jobs, self.mask)
        self.worker = np.nan_to_num(self.params.worker)
        self.ps = np.nan_to_num(self.params.ps)
        self.max_workers = np.where(self.mask, self.params.batch, 0)
        self._ideal = self.params.ideal_samples_per_s
        finite = self.params.horizon[self.mask]
        finite = finite[np.isfinite(finite)]
        #: the run's horizon T (s): the largest the trace gives, inf if none
        self.horizon_s = float(finite.max()) if finite.size else math.inf

    def rate(self, j: int, w: np.ndarray, s: np.ndarray) -> float:
        """Progress rate (s of ideal work per s) of job ``j`` on these counts (eq. 1)."""
        return self.params.samples_per_s(j, w, s) / float(self._ideal[j])

    def summary(self, res: Any) -> dict[str, Any]:
        """``total_utility`` (of the jobs finished, eq. DMLRS's objective) and
        ``median_training_slots`` over every job, with the horizon T for a job that did
        not finish (rejected ones too), as the paper's Fig. 9 does."""
        from gpusched.core.state import FINISHED

        st = res.state
        done = (st.job_status == FINISHED) & self.mask
        train = st.job_finish - st.job_submit
        u = np.where(done, self.params.training_utility(slice(None), train), 0.0)
        horizon = self.horizon_s if math.isfinite(self.horizon_s) else res.stopped_at
        jobs = np.flatnonzero(self.mask)
        times = np.where(done[jobs], train[jobs], np.nan if horizon is None else horizon)
        return {
            "total_utility": float(u.sum()),
            "median_training_slots": float(np.nanmedian(times)) if times.size else None,
        }


class PSJobModel:
    """The PS job model (:mod:`gpusched.core.jobmodel`): rows with ``num_gpus`` 0."""

    def owns(self, trace: Any) -> np.ndarray:
        """Rows placed by roles (``num_gpus`` = 0), bool per row."""
        return np.asarray(np.asarray(trace.num_gpus) == 0, dtype=bool)

    def durations(
        self, trace: Any, work: np.ndarray, need: np.ndarray
    ) -> tuple[np.ndarray, list[str]]:
        """``work[need]``: time to train E K samples at the ideal placement (eq. 13), s."""
        from gpusched.io.trace import MAX_TIME_S, MIN_DURATION_S

        p = params_of(trace, need)
        dur = p.duration_s
        errors = []
        for i in np.flatnonzero(need).tolist():
            if not MIN_DURATION_S <= dur[i] <= MAX_TIME_S:
                errors.append(
                    f"{show_name(trace.source)}:{int(trace.line[i])}: column 'samples': "
                    f"{p.epochs[i]:g} epochs of {p.samples[i]:g} samples take {float(dur[i])!r} s "
                    f"even at the ideal placement; expected [{MIN_DURATION_S:g}, "
                    f"{MAX_TIME_S:g}] s"
                )
            work[i] = dur[i]
        if errors:
            raise TraceError(errors)
        return work, [f"{int(need.sum())} parameter-server jobs placed by roles (eq. 1-3)"]

    def summary(self, res: Any) -> dict[str, Any] | None:
        """``total_utility`` and ``median_training_s`` of a run of parameter-server jobs."""
        if not (np.asarray(res.jobs.n_gpus) == 0).any():
            return None
        return PSRoles(res.jobs).summary(res)

    def roles(self, jobs: Any, cluster: Any) -> PSRoles | None:
        """The roles of the job table's parameter-server jobs, or None if it has none."""
        if not (np.asarray(jobs.n_gpus) == 0).any():
            return None
        return PSRoles(jobs)


JOB_MODEL = PSJobModel()
