"""The SJF-BSBF paper's workloads: Pollux-style Philly samples annotated with Pollux's six tasks.

Y. Luo, Q. Wang, S. Shi, J. Lai, S. Qi, J. Zhang and X. Wang, "Scheduling Deep Learning Jobs
in Multi-Tenant GPU Clusters via Wise Resource Sharing" (IWQoS 2024, arXiv:2407.13088),
Sec. VI-A "Workload Settings": "We randomly sample 240 jobs from the busiest period in the
deep learning cluster traces published by Microsoft and also annotate six DL tasks (BERT,
CIFAR10, DeepSpeech2, ImageNet, NCF and YoloV3) used in Pollux to them. The settings of GPU
numbers and training iterations also follow those of Pollux." Sec. VI-C scales "the
baseline workload of 240 jobs by 0.5x-2x, ranging from 120 jobs to 480 jobs". The testbed
workload: "30 DDL jobs by scaling down the original job trace ... 20 jobs using no more than
8 GPUs and 10 jobs using 12 or 16 GPUs. The training iteration of jobs varies from 100 to
5000."

Pollux is A. Qiao et al., "Pollux: Co-adaptive Cluster Scheduling for Goodput-Optimized
Deep Learning", OSDI'21; its workload procedure is ``simulator/workload.py`` and
``simulator/applications.py`` of petuum/adaptdl, branch osdi21-artifact (read, not copied).

Source data, bundled: ``gpusched/data/philly_busiest_8h.csv.gz`` (its header says how it was
derived): 4,000 of the 31,293 Philly jobs Pollux samples from, i.e. duration >= 60 s, GPU
time < 1000 GPU-h, submitted in hours 2-10 of any day of the trace, with their time of day.

**Restart cost.** The paper's simulation "mainly follow[s] the settings of Pollux" and says
"preemptive policies such as Tiresias and Pollux often exhibit longer queuing times
attributable to job migration", without a number. Pollux's simulator charges one: every
time a job gets a (new) allocation, its first start included, it holds the GPUs and makes
no progress for 30 s (petuum/adaptdl, branch osdi21-artifact, commit
c793c7089bd307462686339d29707925c461f9a9, ``simulator/simulator.py`` line 163,
``self.rescale_time = 30  # Start re-scale countdown.``, spent in ``Job.step``, lines
100-107); taking a job's GPUs away costs nothing (lines 168-170). So both generators
write ``load_s`` = :data:`RESTART_S` (30 s after every start of every policy) and
``save_s`` = 0; ``restart_s=0`` writes neither column (the run's ``--load-s``/``--save-s``
then apply).
"""

from __future__ import annotations

import gzip
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpusched.errors import GpuschedError
from gpusched.io.trace import Trace

__all__ = [
    "APPLICATIONS",
    "BASE_JOBS",
    "GPU_COUNTS",
    "MODELS",
    "RESTART_S",
    "TESTBED_SPAN_S",
    "WINDOW_S",
    "Application",
    "load_pool",
    "sjf_bsbf_testbed_workload",
    "sjf_bsbf_workload",
]

DATA = Path(__file__).resolve().parent.parent / "data" / "philly_busiest_8h.csv.gz"

RESTART_S = 30.0
"""Seconds every start costs (the job holds its GPUs, no progress): Pollux's simulator's
``rescale_time = 30`` (see the module docstring). Written as each job's ``load_s``."""

GPU_COUNTS = ("pollux", "philly")
"""Ways to size jobs: Pollux's starting configurations (its ``workloads`` sets, the default)
or the Philly job's own GPU count (Pollux's ``workloads-realistic`` set)."""

#: Pollux's ``workloads-realistic`` set (``simulator/workloads-realistic/workload-{1..8}.csv``,
#: same commit; 1,280 jobs): each application's per-GPU batch (its ``init_batch_size``,
#: batch_size / num_replicas in every row) and, for the two applications whose GPU count
#: Pollux redraws from the trace's jobs of their GPU-time class (``workload.py``:
#: ``rng3.choice(subset.num_gpus)``), the counts drawn, one per published row.
REALISTIC_BATCH = {
    "bert": 12,
    "cifar10": 128,
    "deepspeech2": 20,
    "imagenet": 200,
    "ncf": 256,
    "yolov3": 8,
}
REALISTIC_REDRAWN = {
    "yolov3": (1,) * 28 + (2,) * 4 + (4,) * 19 + (8,) * 7 + (16,),
    "imagenet": (8,) * 17 + (16,) * 7 + (32,) * 2,
}

BASE_JOBS = 240
MAX_JOBS = 5_000_000  #: beyond the bundled sample, jobs are drawn once a day (see _daily); about 1 KB of memory each
"""Jobs of the baseline workload (Sec. VI-A); ``load`` L means ``BASE_JOBS * L`` jobs."""

WINDOW_S = 8 * 3600
"""Length of the busiest period, seconds: Pollux's hours 2-10 of the day."""

TESTBED_SPAN_S = 1800.0
"""Arrival span of the testbed workload, seconds (see :func:`sjf_bsbf_testbed_workload`)."""

TESTBED_JOBS = (20, 10)
"""Testbed jobs with <= 8 GPUs and with 12 or 16 GPUs (Sec. VI-A)."""

TESTBED_ITERATIONS = (100, 5000)
"""Smallest and largest testbed iteration count (Sec. VI-A)."""


@dataclass(frozen=True, slots=True)
class Application:
    """One of Pollux's six training tasks.

    Parameters
    ----------
    epochs
        Epochs a job trains: Pollux's ``max_epochs`` in ``simulator/applications.py``.
    samples_per_epoch
        Training samples in one epoch (see :data:`APPLICATIONS` for each source).
    configs
        ``(num_replicas, global_batch)`` pairs a job starts with, drawn uniformly as Pollux's
        ``rng.choice(get_configurations(0.5, 0.8))`` does. They are the distinct pairs of
        Pollux's published ``simulator/workloads/workload-{1..8}.csv`` (1,280 jobs): that
        list depends on Pollux's throughput profiles, which are not bundled.
    """

    epochs: int
    samples_per_epoch: int
    configs: tuple[tuple[int, int], ...]


APPLICATIONS: dict[str, Application] = {
    # SQuAD v1.1 fine-tuning: 88,641 features from 87,599 questions at max_seq_length 384
    # and doc_stride 128 (the run_squad.py defaults Pollux's benchmark/models/bert uses)
    "bert": Application(2, 88_641, ((6, 384), (8, 384), (12, 384), (16, 384))),
    # CIFAR-10 training set (Krizhevsky 2009)
    "cifar10": Application(100, 50_000, ((6, 2048), (8, 2048), (12, 4096), (16, 4096))),
    # Pollux's deepspeech2 profile (simulator/traces/deepspeech2/validation-160.csv): one
    # epoch is 357.8 progress units of its initial batch of 20 sequences, 7,156 utterances
    "deepspeech2": Application(80, 7_156, ((6, 320), (8, 320), (12, 640))),
    # ILSVRC-2012 training set (Russakovsky et al. 2015)
    "imagenet": Application(90, 1_281_167, ((24, 3200), (32, 6400), (48, 6400))),
    # MovieLens-1M as NCF trains on it (He et al. 2017; benchmark/models/ncf, num_ng=4):
    # 994,169 training ratings, each with 4 sampled negatives, 5 samples per rating
    "ncf": Application(10, 4_970_845, ((1, 32768),)),
    # PASCAL VOC 2007+2012 trainval, 16,551 images (benchmark/models/yolov3 trains on VOC)
    "yolov3": Application(50, 16_551, ((4, 64),)),
}

MODELS = tuple(sorted(APPLICATIONS))
"""The six model names written to the ``model`` column."""


@dataclass(frozen=True, slots=True)
class Pool:
    """The bundled Philly jobs: one element per job, sorted by ``offset_s``."""

    philly_id: np.ndarray  # int64
    offset_s: np.ndarray  # int64, seconds from the window start
    gpu_time_s: np.ndarray  # int64, GPU-seconds
    num_gpus: np.ndarray  # int64, GPUs the job requested

    def __len__(self) -> int:
        return int(self.philly_id.shape[0])


def load_pool(path: str | Path = DATA) -> Pool:
    """Read the bundled busiest-period Philly jobs (``#`` lines are provenance comments).

    Parameters
    ----------
    path
        The gzip CSV; default the bundled ``philly_busiest_8h.csv.gz``.

    Returns
    -------
    Pool
        Philly job ids, seconds from the window start, GPU time in GPU-seconds and the
        GPUs each job requested.
    """
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        lines = [ln for ln in fh.read().splitlines() if ln and not ln.startswith("#")]
    if lines[0] != "philly_job_id,window_offset_s,num_gpus,duration_s":
        raise GpuschedError(f"{path}: unexpected header {lines[0]!r}")
    table = np.array([ln.split(",") for ln in lines[1:]], dtype=np.int64)
    return Pool(table[:, 0], table[:, 1], table[:, 2] * table[:, 3], table[:, 2])


def _application(gpu_time_s: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Pollux's application class of each job from its Philly GPU time.

    Under 1 GPU-h: cifar10 or ncf (even odds); 1-10 GPU-h: deepspeech2, half of them (even
    odds) bert; 10-100 GPU-h: yolov3; 100 GPU-h and more: imagenet.
    """
    hours = gpu_time_s / 3600.0
    n = hours.shape[0]
    small = np.where(rng.random(n) < 0.5, "cifar10", "ncf")
    speech = np.where(rng.random(n) < 0.5, "deepspeech2", "bert")
    return np.select(
        [hours < 1, hours < 10, hours < 100], [small, speech, "yolov3"], "imagenet"
    ).astype(object)


def _fitting(app: str, max_gpus: int) -> tuple[tuple[int, int], ...]:
    """The configurations of ``app`` with at most ``max_gpus`` replicas, or an error."""
    fit = tuple(c for c in APPLICATIONS[app].configs if c[0] <= max_gpus)
    if not fit:
        smallest = min(c[0] for c in APPLICATIONS[app].configs)
        raise GpuschedError(
            f"{app} has no Pollux configuration with <= {max_gpus} GPUs (smallest {smallest});"
            " use a cluster with more GPUs"
        )
    return fit


def _iterations(app: str, global_batch: int) -> int:
    """Iterations of a job: ceil(epochs * samples per epoch / global batch)."""
    a = APPLICATIONS[app]
    return max(1, math.ceil(a.epochs * a.samples_per_epoch / global_batch))


def _per_gpu_batch(global_batch: int, replicas: int) -> int:
    """Per-GPU batch B_k: ceil(global batch / replicas), as Pollux's ``local_bsz``."""
    return max(1, math.ceil(global_batch / replicas))


def _jobs_for(jobs: int | None, load: float | None, n_pool: int) -> int:
    """The job count from ``jobs`` and/or ``load`` (``load`` L means 240 L jobs)."""
    n = jobs
    if load is not None:
        scaled = BASE_JOBS * float(load)
        if not (load > 0 and math.isfinite(scaled) and scaled == round(scaled)):
            raise GpuschedError(
                f"--load must be > 0 with {BASE_JOBS} x load a whole number of jobs, got {load}"
            )
        if jobs is not None and jobs != round(scaled):
            raise GpuschedError(
                f"--jobs {jobs} and --load {load:g} disagree: load {load:g} means"
                f" {round(scaled)} jobs ({BASE_JOBS} x load); give one of them"
            )
        n = round(scaled)
    n = BASE_JOBS if n is None else int(n)
    if not 1 <= n <= n_pool:
        raise GpuschedError(f"sjf-bsbf needs 1 to {n_pool} jobs, got {n}")
    return n


def check_restart_s(restart_s: float) -> float:
    """``restart_s`` as a float, or a one-line error: 0 (no restart cost) or a finite
    number of seconds the trace's ``load_s`` column accepts."""
    from gpusched.io.trace import MAX_TIME_S, MIN_DURATION_S

    value = float(restart_s)
    if not (value == 0 or MIN_DURATION_S <= value <= MAX_TIME_S):
        raise GpuschedError(
            f"--restart-s must be 0 (no restart cost) or a number of seconds in "
            f"[{MIN_DURATION_S:g}, {MAX_TIME_S:g}], got {restart_s}"
        )
    return value


def _trace(
    ids: list[str],
    submit: np.ndarray,
    apps: list[str],
    configs: list[tuple[int, int]],
    iterations: list[int],
    philly: np.ndarray,
    source: str,
    restart_s: float,
) -> Trace:
    n = len(ids)
    phases: dict[str, np.ndarray] = {}
    if restart_s:
        phases = {"load_s": np.full(n, restart_s), "save_s": np.zeros(n)}
        source += f", {restart_s:g} s per start (Pollux's rescale_time)"
    return Trace(
        job_id=np.array(ids, dtype=object),
        submit_time=np.asarray(submit, dtype=np.float64),
        num_gpus=np.array([c[0] for c in configs]),
        duration=np.full(n, np.nan),
        iterations=np.array(iterations, dtype=np.float64),
        model=np.array(apps, dtype=object),
        extra={
            "batch_size": np.array([str(_per_gpu_batch(b, g)) for g, b in configs], dtype=object),
            "philly_job_id": np.array([str(int(p)) for p in philly], dtype=object),
        },
        source=source,
        **phases,
    )


def _daily(
    seed: int,
    n: int,
    pool: Pool,
    fits: dict[str, tuple[tuple[int, int], ...]],
    rng: np.random.Generator,
    n_gpus_cluster: int,
    max_gpus: int,
    restart_s: float,
    gpu_counts: str,
) -> Trace:
    """More jobs than the bundled sample: the busy period once a day, scaled to the cluster.

    Each day's window holds ``BASE_JOBS x n_gpus_cluster / 64`` jobs (the baseline's 240 on
    the paper's 64 GPUs, in proportion), drawn with replacement from the pool with their
    time of day; days follow each other until ``n`` jobs. The trace's own days have one
    such busy period each (Pollux's hours 2-10), so the cluster drains between them.
    """
    per_day = max(1, round(BASE_JOBS * n_gpus_cluster / 64))
    pick = rng.choice(len(pool), size=n, replace=True)
    day = np.arange(n) // per_day
    submit = day * 86_400.0 + pool.offset_s[pick]
    order = np.lexsort((pick, submit))
    pick, submit = pick[order], submit[order]
    return _annotated(
        pool,
        pick,
        submit,
        fits,
        rng,
        f"sjf_bsbf_workload(seed={seed}): {n} jobs, {per_day} a day, of {DATA.name} "
        f"(with replacement), {n_gpus_cluster} GPUs, max {max_gpus} GPUs",
        (restart_s, gpu_counts, max_gpus),
    )


def _annotated(
    pool: Pool,
    pick: np.ndarray,
    submit: np.ndarray,
    fits: dict[str, tuple[tuple[int, int], ...]],
    rng: np.random.Generator,
    source: str,
    how: tuple[float, str, int],
) -> Trace:
    """Steps 3-5 of :func:`sjf_bsbf_workload` for the pool rows ``pick`` at ``submit``;
    ``how`` is ``(restart_s, gpu_counts, max_gpus)``."""
    restart_s, gpu_counts, max_gpus = how
    apps = [str(a) for a in _application(pool.gpu_time_s[pick], rng)]
    if gpu_counts == "philly":
        configs = _philly_configs(apps, pool.num_gpus[pick], rng, max_gpus)
        source += ", GPU counts of the Philly jobs (Pollux's workloads-realistic)"
    else:
        configs = [fits[a][int(rng.integers(len(fits[a])))] for a in apps]
    iterations = [_iterations(a, b) for a, (_, b) in zip(apps, configs, strict=True)]
    ids = [f"{a}-{i}" for i, a in enumerate(apps)]
    return _trace(ids, submit, apps, configs, iterations, pool.philly_id[pick], source, restart_s)


def _philly_configs(
    apps: list[str], philly_gpus: np.ndarray, rng: np.random.Generator, max_gpus: int
) -> list[tuple[int, int]]:
    """``(GPUs, global batch)`` per job the way Pollux's ``workloads-realistic`` set has
    them (``simulator/workload.py``, the two lines ``rec["num_replicas"] = num_gpus`` and
    ``rec["batch_size"] = init_batch_size * num_gpus``): the Philly job's own GPU count,
    except for yolov3 and imagenet, whose count Pollux draws from the trace's jobs of their
    GPU-time class (here: uniformly from the counts it drew, :data:`REALISTIC_REDRAWN`; the
    bundled 4,000 jobs hold too few such jobs to redraw from); the per-GPU batch is the
    application's :data:`REALISTIC_BATCH`. Counts above ``max_gpus`` are an error."""
    out: list[tuple[int, int]] = []
    for app, own in zip(apps, philly_gpus.tolist(), strict=True):
        drawn = REALISTIC_REDRAWN.get(app)
        g = int(own) if drawn is None else int(drawn[int(rng.integers(len(drawn)))])
        if g > max_gpus:
            raise GpuschedError(
                f"--gpu-counts philly: a {app} job asks for {g} GPUs, more than the "
                f"cluster's largest job ({max_gpus}); use a cluster with more GPUs"
            )
        out.append((g, REALISTIC_BATCH[app] * g))
    return out


def sjf_bsbf_workload(
    seed: int,
    jobs: int | None = None,
    *,
    load: float | None = None,
    max_gpus: int = 64,
    n_gpus_cluster: int = 64,
    restart_s: float = RESTART_S,
    gpu_counts: str = "pollux",
) -> Trace:
    """Build the SJF-BSBF simulation workload (Sec. VI-A; 240 jobs, or 120-480 for Fig. 6(a)).

    Steps, every draw from ``np.random.default_rng(seed)``, in this order:

    1. **Busiest period.** Pollux's reading, which the paper follows ("we mainly follow the
       settings of Pollux"): jobs submitted in hours 2-10 (trace clock) of *any* day,
       submit time = time of day minus 2 h, so arrivals fall in [0, 28,800) s. Jobs with
       duration < 60 s or GPU time >= 1000 GPU-h are left out, as Pollux does. (The single
       busiest 8-hour window of the trace, 2017-10-20 02:06-10:06, nearly hours 2-10 of
       the busiest day, holds 1,978 such jobs, 95 % of them under 1 GPU-h and 9 of 100 GPU-h
       or more: a 240-job draw from it would often have no ImageNet or BERT job, while the
       paper's Fig. 5(b) reports all six models.)
    2. **Sample.** ``n`` jobs uniformly without replacement from the bundled 4,000 of those
       31,293 jobs, sorted by submit time (ties by Philly job id).
    3. **Application** from the Philly GPU time (:func:`_application`, Pollux's classes).
    4. **GPUs and batch.** A ``(num_replicas, global_batch)`` pair uniformly among the
       application's :attr:`Application.configs` that fit ``max_gpus``: Pollux's starting
       configuration, so ``num_gpus`` is Pollux's replica count, not the Philly job's
       (Pollux computes but never uses the latter). ``batch_size`` is the per-GPU batch
       B_k = ceil(global batch / replicas), Pollux's ``local_bsz`` rounding.
    5. **Iterations** = ceil(epochs x samples per epoch / global batch) (:data:`APPLICATIONS`).
    6. **Restart cost**: ``load_s`` = ``restart_s`` (default :data:`RESTART_S`, Pollux's
       simulator's 30 s per allocation) and ``save_s`` = 0 on every row; none if 0.

    ``gpu_counts="philly"`` replaces step 4 by Pollux's other reading, the Philly job's own
    GPU count (:func:`_philly_configs`): an ablation, not the paper's setting (the paper's
    GPU numbers "follow those of Pollux", whose evaluation uses step 4).

    ``load`` L (Sec. VI-C, "we scale the baseline workload of 240 jobs by 0.5x-2x, ranging
    from 120 jobs to 480 jobs") means 240 L jobs over the same 8-hour period, so arrivals
    are L times as frequent; 240 L must be a whole number, and ``jobs`` with ``load`` must
    agree. There is no duration column: the job model derives it from the model, batch
    and iterations.

    Parameters
    ----------
    seed
        Seed of every draw.
    jobs
        Number of jobs (default 240). Up to the 4,000 bundled they come from the one busy
        window; more (the 100k-job speed runs) repeat the window once a day, each day
        holding 240 jobs per 64 GPUs of ``n_gpus_cluster``, drawn with replacement.
    load
        Load factor L relative to the 240-job baseline, or None.
    max_gpus
        Most GPUs one job may get (default 64, the sjf-bsbf-16x4 cluster).
    n_gpus_cluster
        GPUs of the cluster (default 64): sets the daily job count beyond 4,000 jobs.
    restart_s
        Seconds each start costs, written as ``load_s`` (0: no ``load_s``/``save_s``).
    gpu_counts
        ``pollux`` (default) or ``philly`` (see above).

    Returns
    -------
    Trace
        Columns job_id, submit_time (s from the window start), num_gpus, model,
        iterations, batch_size (per GPU), philly_job_id (the sampled Philly row), and
        load_s, save_s unless ``restart_s`` is 0.
    """
    restart_s = check_restart_s(restart_s)
    if gpu_counts not in GPU_COUNTS:
        raise GpuschedError(
            f"--gpu-counts must be one of {', '.join(GPU_COUNTS)}, got {gpu_counts!r}"
        )
    pool = load_pool()
    n = _jobs_for(jobs, load, MAX_JOBS)
    # Pollux's configurations must fit the cluster (the Philly counts are checked per job)
    fits = {app: _fitting(app, max_gpus) for app in MODELS} if gpu_counts == "pollux" else {}
    rng = np.random.default_rng(seed)
    if n > len(pool):
        return _daily(seed, n, pool, fits, rng, n_gpus_cluster, max_gpus, restart_s, gpu_counts)
    pick = np.sort(rng.choice(len(pool), size=n, replace=False))  # pool is time-sorted
    how = f"{n} jobs" + (f" (load {load:g})" if load is not None else "")
    return _annotated(
        pool,
        pick,
        pool.offset_s[pick].astype(np.float64),
        fits,
        rng,
        f"sjf_bsbf_workload(seed={seed}): {how} of {DATA.name}, max {max_gpus} GPUs",
        (restart_s, gpu_counts, max_gpus),
    )


def _testbed_iterations(full: int, lo: int, hi: int) -> int:
    """Map a full-size iteration count in [lo, hi] log-linearly onto [100, 5000]."""
    a, b = TESTBED_ITERATIONS
    if hi == lo:
        return a
    x = (math.log(full) - math.log(lo)) / (math.log(hi) - math.log(lo))
    return int(round(a * (b / a) ** x))


def sjf_bsbf_testbed_workload(seed: int, restart_s: float = RESTART_S) -> Trace:
    """Build the SJF-BSBF physical-testbed workload (Sec. VI-A): 30 jobs for testbed-4x4.

    The paper scales the trace down to "30 DDL jobs ... 20 jobs using no more than 8 GPUs
    and 10 jobs using 12 or 16 GPUs. The training iteration of jobs varies from 100 to
    5000." Steps, every draw from ``np.random.default_rng(seed)``:

    1. The bundled busiest-period jobs (as :func:`sjf_bsbf_workload`) in a random order,
       each given its Pollux application and a configuration drawn uniformly among the
       application's configurations with at most 16 GPUs.
    2. Going down that order, a job is kept if its configuration has <= 8 GPUs and fewer
       than 20 such jobs are kept, or 12 or 16 GPUs and fewer than 10 such are kept;
       otherwise it is passed over. ImageNet jobs are always passed over: Pollux's
       ImageNet configurations need 24 or more GPUs, beyond the 16-GPU testbed.
    3. Iterations: each job's full-size count (:func:`sjf_bsbf_workload` step 5) mapped
       log-linearly from [smallest, largest] full-size count over the configurations
       eligible here (BERT's 462 to YOLOv3's 12,931) onto [100, 5000], rounded, so the
       order of job lengths is kept and the paper's range is met exactly.
    4. Arrivals: the kept jobs' times in the 8-hour window, scaled by
       ``TESTBED_SPAN_S / 28,800`` (1,800 s in all). The paper gives no arrival span;
       its testbed makespans are 2,129-2,398 s (Table II), so all jobs arrive well
       within that.

    5. ``load_s`` and ``save_s`` as :func:`sjf_bsbf_workload` step 6.

    Parameters
    ----------
    seed
        Seed of every draw.
    restart_s
        Seconds each start costs, written as ``load_s`` (0: no ``load_s``/``save_s``).

    Returns
    -------
    Trace
        30 jobs; columns as :func:`sjf_bsbf_workload`, sorted by submit time.
    """
    restart_s = check_restart_s(restart_s)
    pool = load_pool()
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(pool))
    apps_all = _application(pool.gpu_time_s[order], rng)
    cap = 16
    eligible = {a: tuple(c for c in APPLICATIONS[a].configs if c[0] <= cap) for a in MODELS}
    counts = [_iterations(a, b) for a in MODELS for _, b in eligible[a]]
    lo, hi = min(counts), max(counts)
    want = {"small": TESTBED_JOBS[0], "large": TESTBED_JOBS[1]}
    kept: list[tuple[int, str, tuple[int, int]]] = []
    for k, app in zip(order, apps_all, strict=True):
        options = eligible[str(app)]
        if not options:
            continue
        cfg = options[int(rng.integers(len(options)))]
        kind = "small" if cfg[0] <= 8 else "large" if cfg[0] in (12, 16) else ""
        if kind and want[kind] > 0:
            want[kind] -= 1
            kept.append((int(k), str(app), cfg))
            if not any(want.values()):
                break
    if any(want.values()):  # only if the bundled data were changed
        raise GpuschedError(f"{DATA.name}: too few jobs for the testbed workload")
    kept.sort(key=lambda t: (int(pool.offset_s[t[0]]), int(pool.philly_id[t[0]])))
    idx = np.array([t[0] for t in kept])
    apps = [t[1] for t in kept]
    configs = [t[2] for t in kept]
    iterations = [
        _testbed_iterations(_iterations(a, c[1]), lo, hi)
        for a, c in zip(apps, configs, strict=True)
    ]
    submit = np.round(pool.offset_s[idx] * (TESTBED_SPAN_S / WINDOW_S), 3)
    return _trace(
        [f"{a}-{i}" for i, a in enumerate(apps)],
        submit,
        apps,
        configs,
        iterations,
        pool.philly_id[idx],
        f"sjf_bsbf_testbed_workload(seed={seed}): 30 jobs (20 with <= 8 GPUs, 10 with 12"
        f" or 16) of {DATA.name}, iterations scaled to 100..5000",
        restart_s,
    )
