"""The PD-ORS paper's synthetic workload: parameter-server jobs with sigmoid utilities.

M. Yu, J. Liu, C. Wu, B. Ji and E. S. Bentley, "Toward Efficient Online Scheduling for
Distributed Machine Learning Systems", IEEE Transactions on Network Science and
Engineering, 2022, Sec. V "Numerical Results", first two paragraphs: "jobs parameters
generated uniformly at random from the following intervals: E_i in [50, 200], K_i in
[20000, 500000], g_i in [30, 575] MB, tau_i in [1e-5, 1e-4] time slots, gamma_i in
[1, 10], F_i in [1, 200]"; a worker demands "0-4 GPUs, 1-10 vCPUs, 2-32 GB memory, and
5-10 GB storage", a parameter server "1-10 vCPUs, 2-32 GB memory and 5-10 GB storage";
arrivals follow "the Google Cluster data [...] with normalized job arrival rates in
alternating time-slots [...] 1/3 and 2/3 in odd and even time-slots"; the utility is the
sigmoid ``theta1 / (1 + exp(theta2 (t - a - theta3)))`` with theta1 in [1, 100], theta3
in [1, 15], and theta2 = 0 for time-insensitive jobs (10 %), in [0.01, 1] for
time-sensitive jobs (55 %) and in [4, 6] for time-critical jobs (35 %). Figs. 6-8 use
T = 20 slots with I = 50 jobs on H machines, or H = 100 machines with I jobs.

Every job has ``num_gpus`` 0 and the columns of :mod:`gpusched.jobmodels.ps`; one slot
is one simulated second there, so ``tau`` (s per sample), the link rates (MB/s), theta3
(s) and the horizon (s) are written in slots.

Choices the paper leaves open, made here:

* **Link rates.** The paper gives none. Reading a slot as one hour, a 10 Gbit/s link
  (1,250 MB/s) moves 4.5e6 MB per slot: ``bw_external`` = 4.5e6 and ``bw_internal`` = 10x
  that, 4.5e7, the same for every job. With the intervals above, a job's ideal time
  (all F workers and F / gamma PSs on one machine) is then 15 slots at the median (10 % of
  jobs under 3, 10 % over 100), on the scale of theta3 and T = 20; spreading a job over
  machines makes each sample 12 % slower at the median and 75 % slower at the 90th
  percentile (``tau + 2 g gamma / (b F)`` with b external instead of internal).
* **Integer or not.** E, K, gamma, F and the GPU and vCPU counts are drawn as integers
  (uniform over the integers of the interval, ends included); g, tau, memory, storage and
  the theta are drawn as reals and rounded (:data:`DECIMALS`). The trace holds the
  rounded values, and they are the values the simulation uses.
* **Utility classes.** Each job is independently time-insensitive, time-sensitive or
  time-critical with probabilities 0.10, 0.55 and 0.35 (so the shares are near, not
  exactly, 10/55/35 %).
* **Alternating arrivals.** At the literal rates (1/3 and 2/3 jobs per slot, one job
  every 2 slots on average) 100 jobs would need about 200 slots and 50 jobs about 100,
  far beyond the paper's T = 20. The rates are read as relative weights instead: each job
  independently arrives in slot s of 0..T-1 with probability proportional to 2/3 if s is
  even and 1/3 if s is odd, so all I jobs arrive within the horizon and even slots get
  about twice as many jobs as odd ones. Slots are numbered from 0, as ``submit_time``
  is; the paper does not say whether its first slot is odd or even.
* **Philly arrivals** (``arrivals="philly"``). The paper's trace experiments (Sec. V,
  Figs. 12-15) scale a "snippet" of the Google cluster data, which gpusched does not
  bundle. Instead the arrival times of ``jobs`` jobs drawn without replacement from the
  bundled Philly sample (``gpusched/data/philly_busiest_8h.csv.gz``, 4,000 jobs of the
  busiest 8 hours of the day; :func:`gpusched.workloads.sjf_bsbf.load_pool`) are scaled
  from the 8-hour window onto [0, T) and floored to whole slots.
"""

from __future__ import annotations

import numpy as np

from gpusched.core.ledger import RESOURCES
from gpusched.errors import GpuschedError, did_you_mean
from gpusched.io.trace import MAX_TIME_S, Trace
from gpusched.workloads.sjf_bsbf import WINDOW_S, load_pool

__all__ = [
    "ARRIVALS",
    "BW_EXTERNAL",
    "BW_INTERNAL",
    "CLASSES",
    "DECIMALS",
    "DEFAULT_HORIZON",
    "DEFAULT_JOBS",
    "MAX_JOBS",
    "RANGES",
    "pd_ors_workload",
]

DEFAULT_JOBS = 50
"""Jobs by default: I = 50, as Fig. 6."""

DEFAULT_HORIZON = 20
"""Horizon T by default, slots: T = 20, as Figs. 6-8."""

MAX_JOBS = 2_000_000
"""Most jobs with alternating arrivals (philly arrivals: the 4,000 bundled jobs); each takes
about 2 KB of memory while drawn and written (10 million ended in a MemoryError)."""

MAX_HORIZON = int(MAX_TIME_S)
"""Longest horizon, slots: the trace's largest time."""

ARRIVALS = ("alternating", "philly")
"""Arrival patterns: the paper's alternating rates, or the bundled Philly sample's times."""

BW_EXTERNAL = 4.5e6
"""Worker-PS link rate across machines, MB per slot: 10 Gbit/s for a slot of one hour."""

BW_INTERNAL = 10 * BW_EXTERNAL
"""Worker-PS link rate on one machine, MB per slot: 10x the external rate."""

RANGES: dict[str, tuple[float, float]] = {
    "epochs": (50, 200),
    "samples": (20_000, 500_000),
    "global_batch": (1, 200),
    "ps_ratio": (1, 10),
    "sample_time": (1e-5, 1e-4),
    "grad_mb": (30.0, 575.0),
    "worker_gpus": (0, 4),
    "worker_cpus": (1, 10),
    "worker_mem_gb": (2.0, 32.0),
    "worker_storage_gb": (5.0, 10.0),
    "ps_gpus": (0, 0),
    "ps_cpus": (1, 10),
    "ps_mem_gb": (2.0, 32.0),
    "ps_storage_gb": (5.0, 10.0),
    "utility_priority": (1.0, 100.0),
    "utility_target": (1.0, 15.0),
}
"""Sec. V's interval of each drawn column, ends included (theta2 in :data:`CLASSES`)."""

DECIMALS: dict[str, int] = {
    "sample_time": 7,
    "grad_mb": 1,
    "worker_mem_gb": 1,
    "worker_storage_gb": 1,
    "ps_mem_gb": 1,
    "ps_storage_gb": 1,
    "utility_priority": 2,
    "utility_decay": 3,
    "utility_target": 2,
}
"""Decimals each real-valued column is rounded to; the other columns are integers."""

CLASSES: tuple[tuple[str, float, tuple[float, float]], ...] = (
    ("time-insensitive", 0.10, (0.0, 0.0)),
    ("time-sensitive", 0.55, (0.01, 1.0)),
    ("time-critical", 0.35, (4.0, 6.0)),
)
"""Utility classes: name, probability and the interval of theta2 (``utility_decay``)."""

#: Columns drawn as integers, in the order they are drawn (then the reals, then theta2).
_INTEGERS = (
    "epochs",
    "samples",
    "ps_ratio",
    "global_batch",
    "worker_gpus",
    "worker_cpus",
    "ps_cpus",
)
_REALS = (
    "grad_mb",
    "sample_time",
    "worker_mem_gb",
    "worker_storage_gb",
    "ps_mem_gb",
    "ps_storage_gb",
    "utility_priority",
    "utility_target",
)


def _check(n: int, horizon: int, arrivals: str) -> None:
    """Refuse bad options with one line naming the option and what it takes."""
    if arrivals not in ARRIVALS:
        raise GpuschedError(
            f"--arrivals must be {' or '.join(ARRIVALS)}, got {arrivals!r}"
            f"{did_you_mean(str(arrivals), ARRIVALS)}"
        )
    if isinstance(horizon, bool) or not isinstance(horizon, int | np.integer):
        raise GpuschedError(f"--horizon must be a whole number of slots, got {horizon!r}")
    if not 1 <= horizon <= MAX_HORIZON:
        raise GpuschedError(f"--horizon must be 1 to {MAX_HORIZON} slots, got {horizon}")
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or not 1 <= n <= MAX_JOBS:
        raise GpuschedError(f"pd-ors needs 1 to {MAX_JOBS} jobs, got {n!r}")


def _rounded(name: str, values: np.ndarray) -> np.ndarray:
    """``values`` rounded to the decimals of column ``name``."""
    return np.round(values, DECIMALS[name])


def _draw_params(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Every column but the arrivals: integers, then reals, then the utility class."""
    out: dict[str, np.ndarray] = {}
    for name in _INTEGERS:
        lo, hi = RANGES[name]
        out[name] = rng.integers(int(lo), int(hi), size=n, endpoint=True).astype(np.float64)
    for name in _REALS:
        lo, hi = RANGES[name]
        out[name] = _rounded(name, rng.uniform(lo, hi, size=n))
    out["ps_gpus"] = np.zeros(n)
    kind = rng.choice(len(CLASSES), size=n, p=[c[1] for c in CLASSES])
    lows = np.array([c[2][0] for c in CLASSES])[kind]
    highs = np.array([c[2][1] for c in CLASSES])[kind]
    out["utility_decay"] = _rounded("utility_decay", rng.uniform(lows, highs))
    return out


def _alternating_slots(n: int, horizon: int, rng: np.random.Generator) -> np.ndarray:
    """Slots in 0..T-1, each job's drawn with weight 2/3 (even slot) or 1/3 (odd slot)."""
    n_even, n_odd = (horizon + 1) // 2, horizon // 2
    p_even = 2 * n_even / (2 * n_even + n_odd)
    even = rng.random(n) < p_even
    u = rng.random(n)
    index = np.floor(u * np.where(even, n_even, n_odd)).astype(np.int64)
    return np.where(even, 2 * index, 2 * index + 1)


def _philly_slots(n: int, horizon: int, rng: np.random.Generator) -> np.ndarray:
    """Slots of ``n`` bundled Philly jobs (without replacement), scaled onto [0, T)."""
    pool = load_pool()
    if n > len(pool):
        raise GpuschedError(
            f"--arrivals philly draws from the {len(pool)} bundled Philly jobs: at most"
            f" {len(pool)} jobs, got {n}"
        )
    pick = rng.choice(len(pool), size=n, replace=False)
    return (pool.offset_s[pick].astype(np.int64) * horizon) // WINDOW_S


def _text(values: np.ndarray) -> np.ndarray:
    """Numbers as the trace holds them: integral values as integers, others by ``repr``."""
    return np.array(
        [str(int(x)) if x.is_integer() else repr(x) for x in values.tolist()], dtype=object
    )


def pd_ors_workload(
    seed: int,
    jobs: int | None = None,
    *,
    horizon: int = DEFAULT_HORIZON,
    arrivals: str = "alternating",
) -> Trace:
    """Build the PD-ORS paper's synthetic workload (Sec. V): I jobs arriving within T slots.

    Steps, every draw from ``np.random.default_rng(seed)``, in this order:

    1. **Job parameters** (:data:`RANGES`), one column at a time for all jobs: the integers
       E, K, gamma, F, worker GPUs, worker vCPUs and PS vCPUs, then the reals g, tau,
       worker memory and storage, PS memory and storage, theta1 and theta3 (rounded to
       :data:`DECIMALS`); PSs demand no GPU.
    2. **Utility class** of each job with probabilities 10/55/35 % (:data:`CLASSES`), then
       theta2 uniform in the class's interval.
    3. **Arrival slots** (``arrivals``), sorted and given to the jobs in row order (the
       parameters are independent of the arrivals, so the same seed gives the same jobs
       under either pattern): ``alternating`` weighs even slots 2/3 and odd slots 1/3;
       ``philly`` scales the bundled Philly sample's times onto [0, T) (see the module
       docstring for both).

    Parameters
    ----------
    seed
        Seed of every draw.
    jobs
        Number of jobs I (default 50); at most 4,000 with ``arrivals="philly"``.
    horizon
        The horizon T, slots of 1 s (default 20): jobs arrive in slots 0..T-1 and the
        ``horizon`` column is T for every job.
    arrivals
        ``"alternating"`` (default) or ``"philly"``.

    Returns
    -------
    Trace
        ``num_gpus`` 0 and the columns of :mod:`gpusched.jobmodels.ps` (job ids
        ``pd-ors-1``, ``pd-ors-2``, ... in submit order); ``source`` is a one-line note.

    Raises
    ------
    GpuschedError
        A bad ``jobs``, ``horizon`` or ``arrivals``, named as the CLI option.
    """
    n = DEFAULT_JOBS if jobs is None else jobs
    _check(n, horizon, arrivals)
    n, horizon = int(n), int(horizon)
    rng = np.random.default_rng(seed)
    cols = _draw_params(n, rng)
    draw = _alternating_slots if arrivals == "alternating" else _philly_slots
    submit = np.sort(draw(n, horizon, rng)).astype(np.float64)
    cols["bw_internal"] = np.full(n, BW_INTERNAL)
    cols["bw_external"] = np.full(n, BW_EXTERNAL)
    cols["horizon"] = np.full(n, float(horizon))
    order = [
        "epochs",
        "samples",
        "global_batch",
        "ps_ratio",
        "sample_time",
        "grad_mb",
        "bw_internal",
        "bw_external",
        *(f"worker_{r}" for r in RESOURCES),
        *(f"ps_{r}" for r in RESOURCES),
        "utility_priority",
        "utility_decay",
        "utility_target",
        "horizon",
    ]
    width = len(str(n))
    return Trace(
        job_id=np.array([f"pd-ors-{i:0{width}d}" for i in range(1, n + 1)], dtype=object),
        submit_time=submit,
        num_gpus=np.zeros(n, dtype=np.int64),
        duration=np.full(n, np.nan),
        iterations=np.full(n, np.nan),
        model=np.full(n, "", dtype=object),
        extra={name: _text(cols[name]) for name in order},
        source=(
            f"pd-ors (seed {seed}): {n} jobs, horizon {horizon} slot{'' if horizon == 1 else 's'},"
            f" {arrivals} arrivals"
        ),
    )
