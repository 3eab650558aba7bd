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

* **Link rates** (``links="c5n"``, the default). Sec. V gives no link rate and no slot
  length (tau is "in time slots", so a job's compute time in slots does not depend on
  the slot's length; only the link rates, in MB per slot, do). Both come from sources
  the paper cites:

  - the slot: Goyal et al. [22] ("Accurate, large minibatch SGD: Training ImageNet in 1
    hour", arXiv:1706.02677) train ResNet-50 on ImageNet (1,281,167 training images) for
    90 epochs on 256 GPUs in about an hour, i.e. :data:`SAMPLE_S` = 256 x 3600 s /
    (90 x 1,281,167) = 8.0 ms per sample per worker; equating that with the middle of
    Sec. V's tau range, 5.5e-5 slots, gives :data:`SLOT_S` = 145 s per slot (the ends of
    the range give 80 s and 800 s);
  - the external rate: the paper's machines follow "EC2 C5n instances [34]", whose
    largest, c5n.18xlarge, has a 100 Gbit/s network (12,500 MB/s):
    :data:`BW_EXTERNAL` = 12,500 MB/s x 145 s = 1.82e6 MB per slot;
  - the internal rate: 10x that (:data:`BW_INTERNAL`); the paper only says
    ``b_i^(e) << b_i^(i)`` (Sec. III), so the factor is ours.

  ``links="legacy"`` keeps the rates gpusched used before (ours, uncited: a slot read as
  one hour at 10 Gbit/s, 4.5e6 MB per slot, internal 10x). The rates barely change how
  many jobs can finish: most Sec. V jobs need more than T = 20 slots even with F workers
  and no communication at all (E K tau / F has a median of about 16 slots), which
  :func:`finishable` counts.
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

from typing import Any

import numpy as np

from gpusched.core.ledger import RESOURCES
from gpusched.errors import GpuschedError, did_you_mean
from gpusched.io.trace import MAX_TIME_S, Trace
from gpusched.workloads.sjf_bsbf import WINDOW_S, load_pool

__all__ = [
    "ARRIVALS",
    "BW_EXTERNAL",
    "BW_INTERNAL",
    "LEGACY_EXTERNAL",
    "LEGACY_INTERNAL",
    "LINKS",
    "CLASSES",
    "DECIMALS",
    "DEFAULT_HORIZON",
    "DEFAULT_JOBS",
    "MAX_JOBS",
    "RANGES",
    "SAMPLE_S",
    "SLOT_S",
    "finishable",
    "pd_ors_workload",
    "worth_finishing",
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

SAMPLE_S = 256 * 3600 / (90 * 1_281_167)
"""Seconds per sample per worker: Goyal et al. [22], ResNet-50 on ImageNet (1,281,167
images) for 90 epochs on 256 GPUs in one hour (8.0 ms)."""

SLOT_S = SAMPLE_S / ((1e-5 + 1e-4) / 2)
"""Seconds per slot: :data:`SAMPLE_S` read as the middle of Sec. V's tau range (145 s)."""

BW_EXTERNAL = 100e9 / 8 / 1e6 * SLOT_S
"""Worker-PS link rate across machines, MB per slot: c5n.18xlarge's 100 Gbit/s [34]
(12,500 MB/s) for :data:`SLOT_S` (1.82e6)."""

BW_INTERNAL = 10 * BW_EXTERNAL
"""Worker-PS link rate on one machine, MB per slot: 10x the external rate (ours)."""

LEGACY_EXTERNAL = 4.5e6
"""``links="legacy"``: 10 Gbit/s for a slot read as one hour (ours, uncited)."""

LEGACY_INTERNAL = 10 * LEGACY_EXTERNAL
"""``links="legacy"``: 10x the external rate."""

LINKS = ("c5n", "legacy")
"""Link-rate settings: the cited C5n rates (default) or gpusched's former ones."""

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


def _check(n: int, horizon: int, arrivals: str, links: str = "c5n") -> None:
    """Refuse bad options with one line naming the option and what it takes."""
    if links not in LINKS:
        raise GpuschedError(f"--links must be {' or '.join(LINKS)}, got {links!r}")
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
    links: str = "c5n",
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
    links
        ``"c5n"`` (default: :data:`BW_EXTERNAL`, :data:`BW_INTERNAL`) or ``"legacy"``
        (:data:`LEGACY_EXTERNAL`, :data:`LEGACY_INTERNAL`); no draw depends on it.

    Returns
    -------
    Trace
        ``num_gpus`` 0 and the columns of :mod:`gpusched.jobmodels.ps` (job ids
        ``pd-ors-1``, ``pd-ors-2``, ... in submit order); ``source`` is a one-line note.

    Raises
    ------
    GpuschedError
        A bad ``jobs``, ``horizon``, ``arrivals`` or ``links``, named as the CLI option.
    """
    n = DEFAULT_JOBS if jobs is None else jobs
    _check(n, horizon, arrivals, links)
    n, horizon = int(n), int(horizon)
    rng = np.random.default_rng(seed)
    cols = _draw_params(n, rng)
    draw = _alternating_slots if arrivals == "alternating" else _philly_slots
    submit = np.sort(draw(n, horizon, rng)).astype(np.float64)
    legacy = links == "legacy"  # rates in whole MB per slot
    cols["bw_internal"] = np.full(n, float(round(LEGACY_INTERNAL if legacy else BW_INTERNAL)))
    cols["bw_external"] = np.full(n, float(round(LEGACY_EXTERNAL if legacy else BW_EXTERNAL)))
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
            f" {arrivals} arrivals, {links} links"
        ),
    )


def finishable(jobs: Any, capacity: np.ndarray) -> tuple[int, int]:
    """How many jobs can finish by the horizon: alone, and at most all together.

    Parameters
    ----------
    jobs
        A trace or job table of the PD-ORS job model (arrival ``submit_time``/``submit_s``
        in slots, ``horizon`` T).
    capacity
        ``(H, R)`` capacity of the cluster's machines.

    Returns
    -------
    (alone, together)
        ``alone``: jobs whose fastest schedule (F workers and their PSs on one machine at
        the internal rate, eq. 13) ends by T, ``ceil(V c_int / F) <= T - a``. ``together``:
        an upper bound of how many of these any policy can finish, whatever it does: a job
        that finishes holds at least ``V c_int (alpha^r + beta^r / gamma)`` of resource r
        for a slot in all, the cluster offers ``T sum_h C_h^r``, so per resource at most
        the k smallest demands fit; the least k over the resources.
    """
    from gpusched.jobmodels.ps import params_of

    p = params_of(jobs)
    arrival = np.asarray(getattr(jobs, "submit_s", getattr(jobs, "submit_time", None)), float)
    horizon = float(np.nanmax(p.horizon))
    c_int = p.sample_time(True)
    work = p.work_samples * c_int  # worker-slots at the internal rate
    alone = np.ceil(work / p.batch - 1e-9) <= horizon - arrival
    need = work[alone, None] * (p.worker[alone] + p.ps[alone] / p.gamma[alone, None])
    budget = horizon * np.asarray(capacity, dtype=np.float64).sum(axis=0)
    fits = [
        int((np.cumsum(np.sort(need[:, r])) <= budget[r] * (1 + 1e-12)).sum())
        for r in range(len(budget))
    ]
    return int(alone.sum()), min(fits) if fits else 0


def worth_finishing(jobs: Any, share: float = 0.01) -> int:
    """How many jobs can earn at least ``share`` of their priority theta1, even alone.

    A job counts when its fastest schedule (as in :func:`finishable`: F workers on one
    machine, eq. 13, ``d = ceil(V c_int / F)`` slots) ends by the horizon and the sigmoid
    utility of that training time, ``u(d)``, is at least ``share`` x theta1. No policy
    earns more of a job than ``u(d)``, so a utility-maximising admission (PD-ORS, OASiS)
    has little reason to admit the others: this bounds what Fig. 9's median can show.
    """
    from gpusched.jobmodels.ps import params_of, utility

    p = params_of(jobs)
    arrival = np.asarray(getattr(jobs, "submit_s", getattr(jobs, "submit_time", None)), float)
    horizon = float(np.nanmax(p.horizon))
    fastest = np.ceil(p.work_samples * p.sample_time(True) / p.batch - 1e-9)
    alone = fastest <= horizon - arrival
    earns = utility(p.theta, fastest) >= share * p.theta[:, 0]
    return int((alone & earns).sum())
