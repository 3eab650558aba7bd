"""The edge-cloud paper's workloads and clusters: Philly jobs as data-chunk jobs on edge servers and a cloud.

N. Wang, R. Zhou, L. Jiao, R. Zhang, B. Li and Z. Li, "Preemptive Scheduling for
Distributed Machine Learning Jobs in Edge-Cloud Networks", Sec. III-A (system model) and
Sec. V-A "Experiment Setup". The testbed, verbatim: "nine physical machines [...] Each
machine has 1 GeForce RTX 2060 GPU, 12 CPU cores, 16GB RAM, 500GB HDDs, and a dual-port
1GbE NIC, eight of which serve as edge servers, and the other acts as both the remote cloud
and a central scheduler"; "two types of workers, which are equipped with 1 GPU, 3GB RAM and
3 CPU cores, 2GB RAM, respectively. There is one type of PSs, and each hosts 2 CPUs, 3GB
RAM." Its workload: "30 deep learning (DL) jobs [...] by scaling down the original
real-world traces [36], [37]" (the Microsoft Philly trace); "we map the submission time of
jobs into arrival time (r_j) by setting one time slot to one hour long. The worker type
that each job employs is randomly picked from the above two types, and the worker
requirement of each job is computed according to the number of GPUs of the real trace";
"we randomly pick a model for each job from a pool of six models (Table II)"; "E_i is
randomly picked within the range [20, 60], Delta_js for transmitting a data chunk to edge
servers and cloud are within [1, 4] and [10, 15] time slots, respectively." Table II gives
D_j / B_j: ResNet-50 and ResNet-101 on CIFAR10 27 / 58, GoogLeNet and LeNet on Caltech101
115 / 58, AlexNet and Inception-BN on ImageNet-12 60 / 58. The simulator: "100 servers
from the traces and [...] a virtual remote cloud [...] for each server, the number of
workers, and PSs corresponds to that of GPUs and CPUs in the trace"; "The types of workers
and PSs are set to be 8 to 10, the type of each worker and PS in each server is randomly
picked. The bandwidth of workers of specified type, i.e., b_j, is set within [100, 5 x
1024] Mbps. [...] we expand the number of DL jobs to 300 by scaling up the submission
times. [...] m_j in [0.001, 0.05] hour, G_j in [10, 100] milliseconds, q_j in [30, 575] MB."

Every job has ``num_gpus`` 1 (a chunk occupies one worker), no ``duration`` and the chunk
columns ``chunks`` (D_j), ``batches`` (B_j), ``epochs`` (E_j), ``worker_type``,
``batch_time`` (m_j, slots), ``update_time`` (G_j, slots), ``grad_mb`` (q_j, MB),
``bw_mbps`` (b_j, Mbit/s), ``unit_s`` (3600 s per slot) and ``gang_workers``, plus
``dl_model`` (the Table II model; ``model`` is the catalogue's column) and
``philly_job_id`` (the source job). One slot (one hour) is one simulated second.

Choices the paper leaves open, made here:

* **Source jobs.** The paper's traces are Philly's. gpusched bundles 4,000 Philly jobs of
  the busiest 8 hours of the day (``gpusched/data/philly_busiest_8h.csv.gz``,
  :func:`gpusched.workloads.sjf_bsbf.load_pool`), each with its time of day, from many
  days: rows next to each other there are not consecutive jobs of one day, so each
  workload takes a seeded sample without replacement (at most 4,000 jobs), in order of
  time of day.
* **Testbed arrivals.** Slot = the job's hour in the 8-hour window (seconds // 3600),
  shifted so that the first job arrives in slot 0: 30 jobs arrive within 8 slots.
  ``jobs`` other than 30 (the J of Figs. 4-5) keeps the window: more jobs arrive closer
  together.
* **Simulator arrivals.** "Scaling up the submission times": the seconds are multiplied
  by J / 30 before flooring to hours, so J jobs span 8 J / 30 slots (300 jobs: 80 slots)
  at the testbed's rate of 3.75 jobs per slot.
* **The load this makes**, and why it is still the default. The paper states no arrival
  rate, span or job count per time: only "one time slot to one hour long", "scaling down
  the original real-world traces" (30 jobs) and "scaling up the submission times" (300).
  The rule above offers the edge far more work than it can do (the chunks' work at
  zeta_j = 0 over the edge's workers x the arrival span: about 30 in the simulator and
  about 600 on the testbed), while Fig. 11's "utilization rapidly increases at the two
  peaks of job submission" suggests a cluster not saturated between peaks. Without a
  stated setting the rule stays, and ``arrival_scale`` F (``--arrival-scale``) stretches
  every arrival slot by F for the ablation of docs/a-online.md.
* **Worker requirement** (``gang_workers``): the Philly job's GPU count. On the testbed it
  is capped at the edge's workers of the job's type (8 ``gpu`` or 16 ``cpu`` workers,
  :data:`TESTBED_WORKERS` on :data:`TESTBED_SERVERS` servers); in the simulator, whose
  edge depends on ``--servers`` and whose cloud holds any number, at D_j (constraint 2c:
  one worker per chunk).
* **m, G, q, b on the testbed.** The paper gives them only for the simulator (the testbed
  measures n_j by pre-training): the simulator's ranges are used, except b = 1000 Mbit/s,
  the testbed's 1 GbE NIC (:data:`TESTBED_BW_MBPS`).
* **b per job.** The paper's sentence ties b_j to the "workers of specified type" but Eq. 1
  indexes it by job: it is drawn per job.
* **Units and rounding.** m is drawn in hours (= slots) and rounded to 5 decimals (36 ms);
  G is drawn in milliseconds, rounded to 0.1 ms, and written in slots (ms / 3.6e6); q is
  rounded to 0.1 MB; E and b are whole numbers (uniform over the integers, ends included).
  The trace holds the values the simulation uses.
* **The testbed's cloud** is one machine like the edge's: "nine physical machines [...]
  eight of which serve as edge servers, and the other acts as both the remote cloud and a
  central scheduler". It gets the edge machine's workers (1 ``gpu`` + 2 ``cpu``), never
  preempts, and its PS slots are unbounded (PSs are not the cloud's bottleneck in eq. 1;
  A_ps, Alg. 5, assumes one is always eligible; the machine is also the scheduler). The
  simulator's cloud is the paper's model: "infinite workers and PSs" (Sec. III-A),
  "unlimited capacities" (Sec. V-C), one delay per chunk. ``cloud="unbounded"`` gives the
  testbed the simulator's cloud, and ``ship="serial"`` makes a job's chunks travel to a
  server one after another (both for the ablation of docs/a-online.md).
* **Worker types in the simulator.** K, the number of types, is drawn uniformly from 8, 9
  and 10 per seed, and each job's type uniformly from ``t1`` .. ``tK``. The simulator
  cluster (:func:`edge_cloud_cluster`) carries all ten types, so it serves a workload of
  any seed; with K < 10 the workers of the types above K serve no job (the paper picks
  server and job types independently). PSs are untyped: jobs ask only for a worker type.
"""

from __future__ import annotations

import numpy as np

from gpusched.errors import GpuschedError, check_seed
from gpusched.io.trace import Trace
from gpusched.workloads.sjf_bsbf import load_pool

__all__ = [
    "CLOUDS",
    "CLUSTER_KINDS",
    "DECIMALS",
    "DELAYS",
    "MAX_SERVERS",
    "MODELS",
    "N_TYPES",
    "RANGES",
    "SIM_JOBS",
    "SIM_SERVER_WORKERS",
    "SHIPPING",
    "SIM_SERVERS",
    "TESTBED_BW_MBPS",
    "TESTBED_JOBS",
    "TESTBED_PS",
    "TESTBED_SERVERS",
    "TESTBED_WORKERS",
    "TYPE_NAMES",
    "UNIT_S",
    "edge_cloud_cluster",
    "edge_cloud_sim_workload",
    "edge_cloud_testbed_workload",
]

MODELS: tuple[tuple[str, str, int, int], ...] = (
    ("resnet50", "CIFAR10", 27, 58),
    ("resnet101", "CIFAR10", 27, 58),
    ("googlenet", "Caltech101", 115, 58),
    ("lenet", "Caltech101", 115, 58),
    ("alexnet", "ImageNet-12", 60, 58),
    ("inception-bn", "ImageNet-12", 60, 58),
)
"""Table II: model (the ``dl_model`` column), dataset, data chunks D_j, mini-batches B_j."""

RANGES: dict[str, tuple[float, float]] = {
    "epochs": (20, 60),
    "batch_time": (0.001, 0.05),
    "update_ms": (10.0, 100.0),
    "grad_mb": (30.0, 575.0),
    "bw_mbps": (100, 5 * 1024),
}
"""Sec. V-A's interval of each drawn value, ends included: E_j, m_j (hours = slots), G_j
(milliseconds; the trace's ``update_time`` is in slots), q_j (MB), b_j (Mbit/s)."""

DECIMALS: dict[str, int] = {"batch_time": 5, "update_ms": 1, "grad_mb": 1}
"""Decimals each real-valued draw is rounded to; E_j and b_j are integers."""

DELAYS: dict[str, tuple[int, int]] = {"edge": (1, 4), "cloud": (10, 15)}
"""Delta_js, slots, of an edge server and of the cloud (whole slots, ends included)."""

UNIT_S = 3600
"""Seconds per slot: one slot is one hour (Sec. V-A)."""

TESTBED_JOBS = 30
"""Jobs of the testbed workload by default (Sec. V-A)."""

TESTBED_SERVERS = 8
"""Edge servers of the testbed (the ninth machine is the cloud)."""

TESTBED_WORKERS: dict[str, int] = {"gpu": 1, "cpu": 2}
"""Workers per testbed edge server, by type (see :func:`edge_cloud_cluster`)."""

TESTBED_PS = 2
"""Parameter servers per testbed edge server."""

TESTBED_BW_MBPS = 1000
"""b_j on the testbed, Mbit/s: its 1 GbE NIC."""

SIM_JOBS = 300
"""Jobs of the simulator workload by default (Sec. V-A)."""

SIM_SERVERS = 100
"""Edge servers of the simulator cluster by default (Sec. V-A)."""

SIM_SERVER_WORKERS = (2, 8)
"""Workers (= GPUs) of a simulator server, drawn with even odds: Philly's machine sizes."""

N_TYPES = (8, 10)
"""Fewest and most worker types of the simulator (Sec. V-A), ends included."""

TYPE_NAMES = tuple(f"t{k}" for k in range(1, N_TYPES[1] + 1))
"""Worker type names of the simulator: ``t1`` .. ``t10``."""

CLUSTER_KINDS = ("sim", "testbed")
"""Kinds of cluster :func:`edge_cloud_cluster` builds."""

CLOUDS = ("machine", "unbounded")
"""The cloud a cluster gets: one machine like the edge's (the testbed's, Sec. V-A) or
unbounded (the simulator's, Sec. III-A)."""

SHIPPING = ("parallel", "serial")
"""How a job's chunks travel to a server (the cluster's ``ship``)."""

MAX_ARRIVAL_SCALE = 1e6
"""Largest ``arrival_scale``: arrivals stay far below the trace's time bounds."""

MAX_SERVERS = 10_000
"""Most edge servers :func:`edge_cloud_cluster` writes (one ``[[servers]]`` group each)."""

_ARRIVAL_SCALE_JOBS = TESTBED_JOBS
"""The simulator scales the 8-hour window by J / this (the testbed's job count)."""

_CLUSTER_STREAM = 1
"""A cluster draws from ``default_rng([seed, _CLUSTER_STREAM])``, apart from the workload's."""


def _check_count(what: str, value: int, hi: int, preset: str) -> None:
    """Refuse a count that is not a whole number in 1..hi, named as the CLI option."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or not 1 <= value <= hi:
        raise GpuschedError(f"{preset} takes --{what} from 1 to {hi:,}, got {value!r}")


def _sample(n: int, preset: str, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """``n`` bundled Philly jobs without replacement, in the pool's order (time of day).

    Returns the Philly ids, seconds into the 8-hour window and GPU counts.
    """
    pool = load_pool()
    _check_count("jobs", n, len(pool), preset)
    pick = np.sort(rng.choice(len(pool), size=n, replace=False))
    return pool.philly_id[pick], pool.offset_s[pick], pool.num_gpus[pick]


def _slots(
    offset_s: np.ndarray, scale_num: int, scale_den: int, stretch: float = 1.0
) -> np.ndarray:
    """Whole hours of ``offset_s * scale_num / scale_den * stretch``, the first shifted to 0."""
    if stretch == 1.0:
        hours: np.ndarray = (offset_s.astype(np.int64) * scale_num) // (scale_den * UNIT_S)
    else:
        x = offset_s.astype(np.float64) * (scale_num * stretch) / (scale_den * UNIT_S)
        hours = np.floor(x).astype(np.int64)
    return hours - int(hours.min())


def _stretched(stretch: float) -> str:
    return "" if stretch == 1.0 else f" (arrivals x {stretch:g})"


def _check_stretch(arrival_scale: float) -> float:
    """``--arrival-scale``: a number > 0 and at most :data:`MAX_ARRIVAL_SCALE`."""
    f = arrival_scale
    if isinstance(f, bool) or not isinstance(f, int | float) or not 0 < f <= MAX_ARRIVAL_SCALE:
        raise GpuschedError(
            f"--arrival-scale must be a number > 0 and <= {MAX_ARRIVAL_SCALE:g}, got {f!r}"
        )
    return float(f)


def _uniform(name: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` reals uniform in :data:`RANGES` ``[name]``, rounded to its :data:`DECIMALS`."""
    lo, hi = RANGES[name]
    return np.round(rng.uniform(lo, hi, size=n), DECIMALS[name])


def _integers(name: str, n: int, rng: np.random.Generator) -> np.ndarray:
    lo, hi = RANGES[name]
    return rng.integers(int(lo), int(hi), size=n, endpoint=True)


def _text(values: np.ndarray) -> np.ndarray:
    """Numbers as the trace holds them: integral values as integers, others by ``repr``."""
    return np.array(
        [str(int(x)) if float(x).is_integer() else repr(float(x)) for x in values.tolist()],
        dtype=object,
    )


def _trace(
    prefix: str,
    submit: np.ndarray,
    types: np.ndarray,
    gang: np.ndarray,
    bw_mbps: np.ndarray,
    philly_id: np.ndarray,
    rng: np.random.Generator,
    source: str,
) -> Trace:
    """The chunk-job trace: draws model, E, m, G and q (in this order), then assembles."""
    n = len(submit)
    model = rng.integers(len(MODELS), size=n)
    epochs = _integers("epochs", n, rng)
    batch_time = _uniform("batch_time", n, rng)
    update_ms = _uniform("update_ms", n, rng)
    grad_mb = _uniform("grad_mb", n, rng)
    chunks = np.array([MODELS[k][2] for k in model.tolist()])
    batches = np.array([MODELS[k][3] for k in model.tolist()])
    width = len(str(n))
    cols: dict[str, np.ndarray] = {
        "chunks": _text(chunks),
        "batches": _text(batches),
        "epochs": _text(epochs),
        "worker_type": np.asarray(types, dtype=object),
        "batch_time": _text(batch_time),
        "update_time": _text(update_ms / (1000.0 * UNIT_S)),
        "grad_mb": _text(grad_mb),
        "bw_mbps": _text(bw_mbps),
        "unit_s": _text(np.full(n, UNIT_S)),
        # constraint (2c): never more workers than chunks
        "gang_workers": _text(np.minimum(gang, chunks)),
        "dl_model": np.array([MODELS[k][0] for k in model.tolist()], dtype=object),
        "philly_job_id": _text(philly_id),
    }
    return Trace(
        job_id=np.array([f"{prefix}-{i:0{width}d}" for i in range(1, n + 1)], dtype=object),
        submit_time=submit.astype(np.float64),
        num_gpus=np.ones(n, dtype=np.int64),
        duration=np.full(n, np.nan),
        iterations=np.full(n, np.nan),
        model=np.full(n, "", dtype=object),
        extra=cols,
        source=source,
    )


def edge_cloud_testbed_workload(
    seed: int, jobs: int | None = None, arrival_scale: float = 1.0
) -> Trace:
    """Build the edge-cloud paper's testbed workload (Sec. V-A): Philly jobs on 1-hour slots.

    Steps, every draw from ``np.random.default_rng(seed)``, in this order:

    1. **Jobs**: ``jobs`` of the bundled Philly sample without replacement, in order of
       time of day; arrival slot = hour in the 8-hour window, the first shifted to 0.
    2. **Worker type** of each job, ``gpu`` or ``cpu`` with even odds; ``gang_workers`` =
       the Philly GPU count, capped at the edge's workers of that type (8 ``gpu``, 16
       ``cpu``).
    3. **Model** of each job uniform over Table II's six (:data:`MODELS`), setting D_j and
       B_j; then E_j, m_j, G_j and q_j uniform in :data:`RANGES`, one column at a time;
       b_j = :data:`TESTBED_BW_MBPS`.

    Parameters
    ----------
    seed
        Seed of every draw (>= 0).
    jobs
        Number of jobs J (default 30; 1 to 4,000), e.g. for the sweep over J of Figs. 4-5.
    arrival_scale
        Every arrival slot x this (default 1: the rule above; the load ablation).

    Returns
    -------
    Trace
        Chunk jobs (see the module docstring), ids ``ec-testbed-01``, ... in submit order;
        ``source`` is a one-line note.

    Raises
    ------
    GpuschedError
        A bad ``seed`` or ``jobs``, named as the CLI option.
    """
    preset = "edge-cloud-testbed"
    check_seed(seed)
    stretch = _check_stretch(arrival_scale)
    n = TESTBED_JOBS if jobs is None else jobs
    rng = np.random.default_rng(seed)
    philly_id, offset_s, gpus = _sample(n, preset, rng)
    n = int(n)
    submit = _slots(offset_s, 1, 1, stretch)
    is_gpu = rng.random(n) < 0.5
    types = np.where(is_gpu, "gpu", "cpu")
    cap = np.where(
        is_gpu,
        TESTBED_SERVERS * TESTBED_WORKERS["gpu"],
        TESTBED_SERVERS * TESTBED_WORKERS["cpu"],
    )
    bw = np.full(n, TESTBED_BW_MBPS)
    span = int(submit.max()) + 1
    return _trace(
        "ec-testbed",
        submit,
        types,
        np.minimum(gpus, cap),
        bw,
        philly_id,
        rng,
        f"edge-cloud-testbed (seed {seed}): {n} Philly jobs over {span} slot"
        f"{'' if span == 1 else 's'} of 1 h{_stretched(stretch)}, worker types gpu/cpu",
    )


def edge_cloud_sim_workload(
    seed: int, jobs: int | None = None, arrival_scale: float = 1.0
) -> Trace:
    """Build the edge-cloud paper's simulator workload (Sec. V-A): Philly arrivals scaled up.

    Steps, every draw from ``np.random.default_rng(seed)``, in this order:

    1. **Jobs**: ``jobs`` J of the bundled Philly sample without replacement, in order of
       time of day; arrival slot = whole hours of the window's seconds x J / 30, the first
       shifted to 0 (J jobs span 8 J / 30 slots).
    2. **Worker types**: K uniform in 8..10, then each job's type uniform over ``t1`` ..
       ``tK``; ``gang_workers`` = the Philly GPU count, capped at D_j.
    3. **Bandwidth** b_j of each job, integer Mbit/s uniform in [100, 5120].
    4. **Model** (Table II), E_j, m_j, G_j and q_j as the testbed's.

    Parameters
    ----------
    seed
        Seed of every draw (>= 0).
    jobs
        Number of jobs J (default 300; 1 to 4,000).
    arrival_scale
        Every arrival slot x this (default 1: the rule above; the load ablation).

    Returns
    -------
    Trace
        Chunk jobs (see the module docstring), ids ``ec-sim-001``, ... in submit order;
        ``source`` is a one-line note naming K.

    Raises
    ------
    GpuschedError
        A bad ``seed`` or ``jobs``, named as the CLI option.
    """
    preset = "edge-cloud-sim"
    check_seed(seed)
    stretch = _check_stretch(arrival_scale)
    n = SIM_JOBS if jobs is None else jobs
    rng = np.random.default_rng(seed)
    philly_id, offset_s, gpus = _sample(n, preset, rng)
    n = int(n)
    submit = _slots(offset_s, n, _ARRIVAL_SCALE_JOBS, stretch)
    k = int(rng.integers(N_TYPES[0], N_TYPES[1], endpoint=True))
    types = np.array(TYPE_NAMES, dtype=object)[rng.integers(k, size=n)]
    bw = _integers("bw_mbps", n, rng)
    span = int(submit.max()) + 1
    return _trace(
        "ec-sim",
        submit,
        types,
        gpus,
        bw,
        philly_id,
        rng,
        f"edge-cloud-sim (seed {seed}): {n} Philly jobs over {span} slot"
        f"{'' if span == 1 else 's'} of 1 h{_stretched(stretch)}, {k} worker types t1..t{k}",
    )


# -- clusters ----------------------------------------------------------------------------

_PAPER = (
    '# Paper: N. Wang, R. Zhou, L. Jiao, R. Zhang, B. Li and Z. Li, "Preemptive Scheduling\n'
    '# for Distributed Machine Learning Jobs in Edge-Cloud Networks", Sec. III-A and V-A.\n'
)

_DELAY_NOTE = (
    "#   delay_s:        Delta_js, the slots to ship one data chunk to the server (1 slot =\n"
    "#                   1 h = 1 simulated second): edge servers whole slots uniform in\n"
    "#                   [1, 4], the cloud in [10, 15] (Sec. V-A), drawn once and fixed\n"
    "#                   here. The paper draws Delta_js per job and server; here the\n"
    "#                   cluster fixes it per server, the same for every job.\n"
)

_UNBOUNDED_NOTE = (
    "#   the cloud:      one group, unbounded: infinite workers of every type and PSs (Sec.\n"
    '#                   III-A, "infinite workers and PSs"; Sec. V-C "unlimited\n'
    '#                   capacities"); gpus = 0 as it has no count.\n'
)

_MACHINE_NOTE = (
    "#   the cloud:      the ninth machine (quoted above): the edge machine's hardware and\n"
    "#                   workers, never preempted (Sec. III-A), delay_s as the cloud's; its\n"
    '#                   PS slots unbounded (ps = "unbounded"): PSs are not the cloud\'s\n'
    "#                   bottleneck in eq. 1, A_ps (Alg. 5) assumes one is always\n"
    "#                   eligible, and the machine is also the scheduler; `gpusched\n"
    "#                   workload edge-cloud-testbed --cloud unbounded` writes the\n"
    "#                   simulator's unbounded cloud instead.\n"
)

_SERIAL_NOTE = (
    '#   ship = "serial": a job\'s chunks travel to a server one after another (a\n'
    "#                   sensitivity setting; the paper's Alg. 3 ships each in Delta_js).\n"
)


def _cloud_notes(cloud: str, ship: str) -> str:
    return (_MACHINE_NOTE if cloud == "machine" else _UNBOUNDED_NOTE) + (
        _SERIAL_NOTE if ship == "serial" else ""
    )


def _options_note(kind: str, cloud: str, ship: str) -> str:
    """The workload command's options that write this file (beyond the defaults)."""
    default = "machine" if kind == "testbed" else "unbounded"
    out = "" if cloud == default else f" --cloud {cloud}"
    return out + ("" if ship == "parallel" else f" --cloud-ship {ship}")


def _testbed_header(seed: int, servers: int, cloud: str, ship: str) -> str:
    return (
        f"# edge-cloud-testbed: the edge-cloud paper's testbed, {servers} edge servers and a cloud.\n"
        "#\n"
        + _PAPER
        + '# Verbatim: "nine physical machines [...] Each machine has 1 GeForce RTX 2060 GPU,\n'
        "# 12 CPU cores, 16GB RAM, 500GB HDDs, and a dual-port 1GbE NIC, eight of which serve\n"
        "# as edge servers, and the other acts as both the remote cloud and a central\n"
        '# scheduler"; "two types of workers, which are equipped with 1 GPU, 3GB RAM and 3 CPU\n'
        "# cores, 2GB RAM, respectively. There is one type of PSs, and each hosts 2 CPUs, 3GB\n"
        '# RAM."\n'
        f"# Generated by gpusched.workloads.edge_cloud.edge_cloud_cluster({servers}, seed={seed},\n"
        f'# kind="testbed"{_args_note(cloud, ship, "machine")}); `gpusched workload edge-cloud-testbed\n'
        f"# --seed {seed}{_options_note('testbed', cloud, ship)} -o FILE.csv --cluster-out FILE.toml`\n"
        "# writes the same file.\n"
        "# Sources of the numbers:\n"
        f"#   count:          {servers} edge servers, one group each (their delays differ)\n"
        "#   gpus, cpus, mem_gb, storage_gb, gpu_type: the machine above\n"
        "#   nic_gbps = 1:   its 1 GbE NIC (the workload's b_j is 1000 Mbit/s)\n"
        '#   workers:        per server 1 "gpu" worker (1 GPU, 3 GB) and 2 "cpu" workers\n'
        "#                   (3 cores, 2 GB each) and 2 PSs (2 cores, 3 GB each): 10 of the 12\n"
        "#                   cores and 13 of the 16 GB, the rest for the GPU worker's host\n"
        "#                   process and the system. A third cpu worker would need 13 cores; a\n"
        "#                   third PS would take all 12 cores and 16 GB. The paper gives no\n"
        "#                   split; this one is gpusched's.\n"
        + _DELAY_NOTE
        + _cloud_notes(cloud, ship)
    )


def _args_note(cloud: str, ship: str, default: str) -> str:
    out = "" if cloud == default else f', cloud="{cloud}"'
    return out + ("" if ship == "parallel" else f', ship="{ship}"')


def _sim_header(seed: int, servers: int, cloud: str, ship: str) -> str:
    return (
        f"# {_sim_name(servers)}: the edge-cloud paper's simulator, {servers} edge servers and a\n"
        "# virtual cloud.\n"
        "#\n"
        + _PAPER
        + '# Verbatim: "We simulate a large edge-cloud system by selecting 100 servers from the\n'
        "# traces and using a virtual remote cloud. [...] for each server, the number of\n"
        "# workers, and PSs corresponds to that of GPUs and CPUs in the trace [...] The types\n"
        "# of workers and PSs are set to be 8 to 10, the type of each worker and PS in each\n"
        '# server is randomly picked."\n'
        f"# Generated by gpusched.workloads.edge_cloud.edge_cloud_cluster({servers}, seed={seed},\n"
        f'# kind="sim"{_args_note(cloud, ship, "unbounded")}); `gpusched workload edge-cloud-sim\n'
        f"# --seed {seed} --servers {servers}{_options_note('sim', cloud, ship)} -o FILE.csv\n"
        "# --cluster-out FILE.toml` writes the same file.\n"
        "# Sources of the numbers (gpusched bundles no per-server table of the Philly trace):\n"
        f"#   count:          {servers} edge servers, one group each\n"
        "#   gpus:           2 or 8 with even odds, the two machine sizes of Philly's machine\n"
        "#                   list; the workers = the GPUs\n"
        '#   workers:        each worker\'s type uniform over "t1" .. "t10": all ten types, so\n'
        "#                   the cluster serves an edge-cloud-sim workload of any seed (which\n"
        "#                   draws its 8 to 10 job types from the first ones)\n"
        "#   ps:             = the workers. Philly's CPU counts are not bundled; one PS serves\n"
        "#                   one job and every running job holds a worker, so this many PSs is\n"
        "#                   plentiful yet finite. PSs are untyped: jobs ask only for a worker\n"
        "#                   type.\n"
        '#   gpu_type = "generic": the paper names no GPU.\n'
        + _DELAY_NOTE
        + _cloud_notes(cloud, ship)
    )


def _workers_table(counts: dict[str, int]) -> str:
    return "{ " + ", ".join(f"{t} = {c}" for t, c in counts.items() if c > 0) + " }"


def _edge_group(
    gpus: int, gpu_type: str, delay: int, workers: dict[str, int], ps: int, machine: str
) -> str:
    return (
        "[[servers]]\n"
        "count = 1\n"
        f"gpus = {gpus}\n"
        f'gpu_type = "{gpu_type}"\n' + machine + 'tier = "edge"\n'
        f"delay_s = {delay}\n"
        f"workers = {_workers_table(workers)}\n"
        f"ps = {ps}\n"
    )


def _cloud_group(gpu_type: str, delay: int, ship: str) -> str:
    return (
        "[[servers]]\n"
        "count = 1\n"
        "gpus = 0\n"
        f'gpu_type = "{gpu_type}"\n'
        'tier = "cloud"\n'
        f"delay_s = {delay}\n"
        "unbounded = true\n" + _ship_line(ship)
    )


def _machine_cloud_group(delay: int, machine: str, ship: str) -> str:
    """The testbed's ninth machine as the cloud (Sec. V-A)."""
    return (
        "[[servers]]\n"
        "count = 1\n"
        "gpus = 1\n"
        'gpu_type = "RTX2060"\n' + machine + 'tier = "cloud"\n'
        f"delay_s = {delay}\n"
        f"workers = {_workers_table(TESTBED_WORKERS)}\n"
        'ps = "unbounded"\n' + _ship_line(ship)
    )


def _ship_line(ship: str) -> str:
    return "" if ship == "parallel" else f'ship = "{ship}"\n'


def _delays(tier: str, n: int, rng: np.random.Generator) -> list[int]:
    lo, hi = DELAYS[tier]
    return [int(d) for d in rng.integers(lo, hi, size=n, endpoint=True).tolist()]


def edge_cloud_cluster(
    servers: int, seed: int, kind: str, cloud: str | None = None, ship: str = "parallel"
) -> str:
    """The TOML text of an edge-cloud cluster: ``servers`` edge servers and a cloud.

    Every draw comes from ``np.random.default_rng([seed, 1])``, a stream apart from the
    workload's, so one ``--seed`` gives a workload and its cluster. The header comments
    say where each number comes from (see also the module docstring).

    ``kind="testbed"``: each edge server is the testbed's machine (1 RTX 2060, 12 cores,
    16 GB, 500 GB) with 1 ``gpu`` worker, 2 ``cpu`` workers and 2 PSs; draws: each edge
    server's delay, then the cloud's. ``kind="sim"``: each edge server has 2 or 8 workers
    (even odds, = its GPUs) and as many PSs; draws: every server's size, then every
    worker's type (uniform over ``t1`` .. ``t10``, server by server), then the edge
    delays, then the cloud's.

    Parameters
    ----------
    servers
        Edge servers, 1 to :data:`MAX_SERVERS` (the paper's: 8 on the testbed, 100 in the
        simulator).
    seed
        Seed of every draw (>= 0).
    kind
        ``"sim"`` or ``"testbed"``.
    cloud
        ``"machine"`` (the testbed's default: its ninth machine, bounded) or
        ``"unbounded"`` (the simulator's default and only choice).
    ship
        ``"parallel"`` (default) or ``"serial"``: written as every server's ``ship``.

    Returns
    -------
    str
        The cluster file (``[cluster]`` and one ``[[servers]]`` group per edge server, then
        the cloud's), named ``edge-cloud-testbed``, or ``edge-cloud-sim`` (with 100 edge
        servers; ``edge-cloud-sim-S`` with S).

    Raises
    ------
    GpuschedError
        A bad ``servers``, ``seed``, ``kind``, ``cloud`` or ``ship``.
    """
    if kind not in CLUSTER_KINDS:
        raise GpuschedError(f"cluster kind must be {' or '.join(CLUSTER_KINDS)}, got {kind!r}")
    cloud = cloud if cloud is not None else ("machine" if kind == "testbed" else "unbounded")
    if cloud not in CLOUDS:
        raise GpuschedError(f"--cloud must be {' or '.join(CLOUDS)}, got {cloud!r}")
    if kind == "sim" and cloud != "unbounded":
        raise GpuschedError(
            'edge-cloud-sim\'s cloud is unbounded (Sec. III-A "infinite workers", Sec. V-C '
            '"unlimited capacities"); --cloud machine is the testbed\'s'
        )
    if ship not in SHIPPING:
        raise GpuschedError(f"--ship must be {' or '.join(SHIPPING)}, got {ship!r}")
    check_seed(seed)
    _check_count("servers", servers, MAX_SERVERS, f"edge-cloud-{kind}")
    servers = int(servers)
    rng = np.random.default_rng([int(seed), _CLUSTER_STREAM])
    if kind == "testbed":
        return _testbed_toml(servers, int(seed), rng, cloud, ship)
    return _sim_toml(servers, int(seed), rng, ship)


def _testbed_toml(servers: int, seed: int, rng: np.random.Generator, cloud: str, ship: str) -> str:
    delays = _delays("edge", servers, rng)
    delay_c = _delays("cloud", 1, rng)[0]
    machine = "cpus = 12\nmem_gb = 16.0\nstorage_gb = 500.0\n"
    what = "a ninth machine as the cloud" if cloud == "machine" else "an unbounded cloud"
    parts = [
        _testbed_header(seed, servers, cloud, ship),
        "\n[cluster]\n",
        'name = "edge-cloud-testbed"\n',
        f'description = "Edge-cloud testbed (Sec. V-A): {servers} edge servers x 1 RTX 2060'
        f' (1 gpu + 2 cpu workers, 2 PSs), 1 GbE, and {what}"\n',
        "nic_gbps = 1.0\ngpu_capacity = 1\nallow_spread = true\n",
    ]
    for delay in delays:
        parts.append("\n")
        parts.append(
            _edge_group(1, "RTX2060", delay, TESTBED_WORKERS, TESTBED_PS, machine)
            + _ship_line(ship)
        )
    if cloud == "machine":
        parts.append("\n" + _machine_cloud_group(delay_c, machine, ship))
    else:
        parts.append("\n" + _cloud_group("RTX2060", delay_c, ship))
    return "".join(parts)


def _sim_name(servers: int) -> str:
    """``edge-cloud-sim`` with the paper's 100 servers, else ``edge-cloud-sim-S``."""
    return "edge-cloud-sim" if servers == SIM_SERVERS else f"edge-cloud-sim-{servers}"


def _sim_toml(servers: int, seed: int, rng: np.random.Generator, ship: str) -> str:
    sizes = rng.choice(np.array(SIM_SERVER_WORKERS), size=servers)
    types = rng.integers(len(TYPE_NAMES), size=int(sizes.sum()))
    delays = _delays("edge", servers, rng)
    cloud = _delays("cloud", 1, rng)[0]
    parts = [
        _sim_header(seed, servers, "unbounded", ship),
        "\n[cluster]\n",
        f'name = "{_sim_name(servers)}"\n',
        f'description = "Edge-cloud simulator (Sec. V-A): {servers} edge servers of 2 or 8'
        ' workers of types t1..t10, and an unbounded cloud"\n',
        "gpu_capacity = 1\nallow_spread = true\n",
    ]
    start = 0
    for size, delay in zip(sizes.tolist(), delays, strict=True):
        mine = np.bincount(types[start : start + size], minlength=len(TYPE_NAMES))
        start += size
        counts = {t: int(c) for t, c in zip(TYPE_NAMES, mine.tolist(), strict=True)}
        parts.append("\n")
        parts.append(_edge_group(size, "generic", delay, counts, size, "") + _ship_line(ship))
    parts.append("\n" + _cloud_group("generic", cloud, ship))
    return "".join(parts)
