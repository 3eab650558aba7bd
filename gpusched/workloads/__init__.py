"""Named, seeded, documented workloads: the one place each paper's evaluation workload is built.

``gpusched workload NAME --seed S -o FILE`` calls the generator registered here.
Each generator is a function ``(seed, jobs, **options) -> Trace`` whose docstring
says what it reproduces and from which source. Paper issues add their presets.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpusched.errors import GpuschedError, check_seed, did_you_mean, show_value
from gpusched.io.trace import Trace

#: the most jobs a preset draws with ``--jobs``: each needs about 0.4-2 KB of memory while
#: it is drawn and written (pd-ors the most), so these keep a workload to about 4 GB; the
#: presets not named take at most their source's jobs (lazer-*: the full Helios-like
#: counts; edge-cloud-*: 4,000; sjf-bsbf-testbed: 30), checked by the preset
MAX_JOBS = {
    "synth-default": 10_000_000,
    "a-srpt": 3_000_000,
    "sjf-bsbf": 5_000_000,
    "pd-ors": 2_000_000,
}
#: the largest ``--load`` a-srpt takes (beyond it every job arrives at once)
MAX_LOAD = 1e6


def _synth_default(seed: int, jobs: int | None = None) -> Trace:
    """Synthetic Philly-like jobs at offered load 0.8 on the default cluster (32 GPUs); 500 jobs by default."""
    from gpusched.io.cluster import load_cluster
    from gpusched.workloads.synth import synth_trace

    n = 500 if jobs is None else jobs
    return synth_trace(n, seed, load=0.8, n_gpus_cluster=load_cluster("default").n_gpus)


def _a_srpt(
    seed: int, jobs: int | None = None, cluster: str | None = None, **options: Any
) -> Trace:
    """A-SRPT paper (Sec. V-A): consecutive Philly jobs in recurring groups, annotated with Table I models.

    ``cluster`` (a bundled name or TOML path) sets the GPUs that ``load`` refers to and the
    performance model's reading the iterations are derived under (its bandwidths are not
    used: iterations come from the catalogue's reference cluster).
    ``load`` defaults to :data:`gpusched.workloads.a_srpt.DEFAULT_LOAD` on the
    ``load_basis`` (default ``body``: all jobs but the top 1 % by GPU-seconds) and ``jobs``
    (without a ``path``) to :data:`~gpusched.workloads.a_srpt.DEFAULT_JOBS` (contended: the
    baselines wait); ``load=0`` keeps the source's own arrival times. ``groups``
    (``recurring`` by default, or ``synthesised``), ``group_spread``, ``tight_share`` and
    ``tight_spread``: see :func:`gpusched.workloads.a_srpt.a_srpt_workload`.
    """
    from gpusched.workloads.a_srpt import DEFAULT_JOBS, DEFAULT_LOAD, a_srpt_workload

    if jobs is None and options.get("path") is None:
        jobs = DEFAULT_JOBS
    if options.get("groups") == "synthesised":
        # these shape the recurring groups only: given with synthesised ones, they did nothing
        flags = {"group_spread": "--group-spread", "tight_share": "--tight-groups",
                 "tight_spread": "--tight-spread"}  # fmt: skip
        given = [flag for key, flag in flags.items() if key in options]
        if given:
            raise GpuschedError(
                f"{', '.join(given)} shape{'s' if len(given) == 1 else ''} the recurring "
                "groups (--groups recurring); --groups synthesised draws groups without them"
            )
    load = options.pop("load", DEFAULT_LOAD)
    if not (math.isfinite(load) and 0 <= load <= MAX_LOAD):
        raise GpuschedError(
            f"--load must be > 0 (at most {MAX_LOAD:g}), or 0 for the source's own arrival "
            f"times, got {load:g}"
        )
    if load != 0:
        options["load"] = load
    elif "load_basis" in options:  # it did nothing: no load to count jobs for
        raise GpuschedError(
            "--load-basis sets the jobs --load counts; --load 0 keeps the source's arrival "
            "times and counts none"
        )
    if cluster is not None:
        from gpusched.io.cluster import load_cluster
        from gpusched.jobmodels.reading import reading_of

        spec = load_cluster(cluster)
        options["n_gpus_cluster"] = spec.n_gpus
        options["reading"] = reading_of(spec)
    return a_srpt_workload(seed, jobs, **options)


def _cluster_gpus(cluster: str) -> tuple[int, int]:
    """``(cap, total)``: the most GPUs one job can get on ``cluster`` (a bundled name or TOML
    path; read once) and all its GPUs."""
    from gpusched.io.cluster import load_cluster

    spec = load_cluster(cluster)
    return (spec.n_gpus if spec.allow_spread else int(spec.server_gpus().max())), spec.n_gpus


def _lazer_options(cluster: str | None, load: float | None, **choices: Any) -> dict[str, Any]:
    """GPU cap: the most GPUs one job can get on ``cluster``; ``load`` refers to its GPUs
    (default lazer-sim-512's 512); ``choices``: arrivals, sizes, overheads (None: default)."""
    options: dict[str, Any] = {"max_gpus": None, "load": load}
    options.update({k: v for k, v in choices.items() if v is not None})
    if cluster is not None:
        options["max_gpus"], total = _cluster_gpus(cluster)
        if load is not None:
            options["n_gpus_cluster"] = total
    return options


def _lazer_helios(
    name: str,
    seed: int,
    jobs: int | None,
    cluster: str | None,
    load: float | None,
    arrivals: str | None,
    sizes: str | None,
    overheads: str | None,
) -> Trace:
    from gpusched.workloads.lazer import lazer_helios_workload

    options = _lazer_options(cluster, load, arrivals=arrivals, sizes=sizes, overheads=overheads)
    return lazer_helios_workload(name, seed, jobs, **options)


def _lazer_earth(
    seed: int,
    jobs: int | None = None,
    cluster: str | None = None,
    load: float | None = None,
    arrivals: str | None = None,
    sizes: str | None = None,
    overheads: str | None = None,
) -> Trace:
    """Lazer paper (Sec. 5.1, Table 1): Helios Earth-like jobs with the seven models.

    427,148 jobs (HeliosArtifact summary) at Table 1's mean rate (one every 39 s) in the
    shape of Helios Venus's 10-minute submission counts (``arrivals``: helios | poisson),
    truncated log-normal durations (median 234 s, mean 59.5 min), GPU counts 1..512
    (median 1, mean 2.10) paired with durations so the GPU-time per job is the summary's
    (``sizes``: copula | independent), each job one of the seven models loading for 113 s
    and saving for 8 s (``overheads``: paper | checkpoint) (:mod:`gpusched.workloads.lazer`).
    ``jobs`` below the full count samples jobs keeping the inter-arrival distribution, as
    the paper's 100-job testbed runs. GPU counts are capped at ``cluster``'s largest gang,
    default lazer-sim-512 (full) or lazer-testbed (sample). ``load`` (full size only)
    scales the arrival rate to that offered load on ``cluster``.
    """
    return _lazer_helios("earth", seed, jobs, cluster, load, arrivals, sizes, overheads)


def _lazer_saturn(
    seed: int,
    jobs: int | None = None,
    cluster: str | None = None,
    load: float | None = None,
    arrivals: str | None = None,
    sizes: str | None = None,
    overheads: str | None = None,
) -> Trace:
    """Lazer paper (Sec. 5.1, Table 1): Helios Saturn-like jobs with the seven models.

    698,896 jobs, mean inter-arrival 80 s, durations median 124 s and mean 72.2 min, GPUs
    median 1 and mean 4.01; otherwise as lazer-earth.
    """
    return _lazer_helios("saturn", seed, jobs, cluster, load, arrivals, sizes, overheads)


def _lazer_uranus(
    seed: int,
    jobs: int | None = None,
    cluster: str | None = None,
    load: float | None = None,
    arrivals: str | None = None,
    sizes: str | None = None,
    overheads: str | None = None,
) -> Trace:
    """Lazer paper (Sec. 5.1, Table 1): Helios Uranus-like jobs with the seven models.

    329,117 jobs, mean inter-arrival 243 s, durations median 280 s and mean 128.1 min, GPUs
    median 1 and mean 4.04; otherwise as lazer-earth.
    """
    return _lazer_helios("uranus", seed, jobs, cluster, load, arrivals, sizes, overheads)


def _lazer_philly(
    seed: int,
    jobs: int | None = None,
    cluster: str | None = None,
    path: str | Path | None = None,
    overheads: str | None = None,
) -> Trace:
    """Lazer-style annotation of real Philly jobs (Jeon et al., ATC'19).

    The bundled philly-2000 (or ``path``, a canonical trace) with its own arrivals,
    durations and GPU counts, each job one of the Lazer paper's seven models with its
    load/save times (``overheads``: paper, 113 s and 8 s, or checkpoint); ``jobs`` and
    ``cluster`` as for lazer-earth.
    """
    from gpusched.workloads.lazer import lazer_philly_workload

    cap = _lazer_options(cluster, None)["max_gpus"]
    return lazer_philly_workload(
        seed, jobs, path=path, max_gpus=cap, overheads=overheads or "paper"
    )


def _sjf_bsbf(
    seed: int,
    jobs: int | None = None,
    cluster: str | None = None,
    load: float | None = None,
    restart_s: float | None = None,
    gpu_counts: str | None = None,
) -> Trace:
    """SJF-BSBF paper (Sec. VI-A): 240 Philly busiest-period jobs with Pollux's six tasks.

    Sampled as Pollux does (hours 2-10 of the day; jobs >= 60 s and < 1000 GPU-h), each
    job one of bert, cifar10, deepspeech2, imagenet, ncf, yolov3 by its Philly GPU time,
    with Pollux's starting GPU count and batch, and iterations from the task's epochs
    (:mod:`gpusched.workloads.sjf_bsbf`). ``load`` L means 240 L jobs over the same 8 hours
    (Sec. VI-C: 0.5x-2x is 120-480 jobs); ``jobs`` with ``load`` must agree. GPU counts
    are capped at ``cluster``'s largest job, default sjf-bsbf-16x4 (64 GPUs). Beyond the
    4,000 bundled jobs the busy window repeats once a day, 240 jobs per 64 GPUs of
    ``cluster`` each day (for speed runs). Every start costs ``restart_s`` (default 30 s,
    Pollux's simulator; 0 for none), written as ``load_s``. ``gpu_counts`` "philly" sizes
    jobs by their Philly GPU counts (Pollux's workloads-realistic; an ablation).
    """
    from gpusched.workloads.sjf_bsbf import RESTART_S, sjf_bsbf_workload

    options: dict[str, Any] = {
        "load": load,
        "restart_s": RESTART_S if restart_s is None else restart_s,
        "gpu_counts": gpu_counts or "pollux",
    }
    if cluster is not None:
        options["max_gpus"], options["n_gpus_cluster"] = _cluster_gpus(cluster)
    return sjf_bsbf_workload(seed, jobs, **options)


def _sjf_bsbf_testbed(seed: int, jobs: int | None = None, restart_s: float | None = None) -> Trace:
    """SJF-BSBF paper (Sec. VI-A): the 30-job physical-testbed workload for testbed-4x4.

    20 jobs with <= 8 GPUs and 10 with 12 or 16, iterations 100..5000, drawn as sjf-bsbf
    and scaled down (:func:`gpusched.workloads.sjf_bsbf.sjf_bsbf_testbed_workload`); every
    start costs ``restart_s`` (default 30 s, as sjf-bsbf).
    """
    from gpusched.workloads.sjf_bsbf import RESTART_S, sjf_bsbf_testbed_workload

    if jobs is not None and jobs != 30:
        raise GpuschedError(f"sjf-bsbf-testbed has 30 jobs (20 + 10), got --jobs {jobs}")
    return sjf_bsbf_testbed_workload(seed, RESTART_S if restart_s is None else restart_s)


def _pollux(seed: int, jobs: int | None = None, load: float | None = None) -> Trace:
    """Pollux paper (Sec. 5.3, Fig. 7-8): the simulator's workload ``seed`` (1-8) of 160 jobs.

    The artifact's own files (bundled), each job one of the six applications with its
    TunedJobs GPUs and batch, and the whole application's progress to make
    (:mod:`gpusched.workloads.pollux`); goodput jobs, for pollux, optimus and any other
    policy. ``load`` picks the set: 1 (default), 0.5, 1.5, 2 (Fig. 8a). For the
    pollux-16x4 cluster (64 T4 GPUs).
    """
    from gpusched.workloads.pollux import pollux_workload

    return pollux_workload(seed, jobs, load=load)


def _pd_ors(
    seed: int,
    jobs: int | None = None,
    horizon: int | None = None,
    arrivals: str | None = None,
    links: str | None = None,
) -> Trace:
    """PD-ORS paper (Sec. V): parameter-server jobs (num_gpus 0) with sigmoid utilities.

    ``jobs`` I (default 50) arrive in slots 0..T-1 of the horizon T = ``horizon`` (default
    20; 1 slot = 1 s); parameters uniform in the paper's intervals, utility classes
    10/55/35 % (:mod:`gpusched.workloads.pd_ors`). ``arrivals`` "alternating" (default)
    weighs even slots 2/3 and odd slots 1/3; "philly" scales the bundled Philly sample's
    arrival times onto the horizon (the paper's Google-trace snippet is not bundled).
    ``links`` "c5n" (default: the C5n network [34] over a slot of 145 s from Goyal et
    al. [22]) or "legacy" (gpusched's former, uncited rates). For the pd-ors-100 and
    pd-ors-30 clusters.
    """
    from gpusched.workloads.pd_ors import DEFAULT_HORIZON, pd_ors_workload

    return pd_ors_workload(
        seed,
        jobs,
        horizon=DEFAULT_HORIZON if horizon is None else horizon,
        arrivals=arrivals or "alternating",
        links=links or "c5n",
    )


def _edge_cloud_testbed(
    seed: int, jobs: int | None = None, arrival_scale: float | None = None
) -> Trace:
    """Edge-cloud paper (Sec. V-A): the 30-job testbed workload of data-chunk jobs.

    Bundled Philly jobs on 1-hour slots, worker type gpu or cpu, a Table II model each, E
    in [20, 60], m, G, q in the simulator's ranges and b = 1000 Mbit/s
    (:mod:`gpusched.workloads.edge_cloud`). ``jobs`` J (the sweep of Figs. 4-5) keeps the
    8-slot window; ``arrival_scale`` F stretches the arrivals F times (the load ablation).
    For the edge-cloud-testbed cluster (``--cluster-out`` writes it: 8 edge machines and
    the ninth as the cloud).
    """
    from gpusched.workloads.edge_cloud import edge_cloud_testbed_workload

    return edge_cloud_testbed_workload(
        seed, jobs, arrival_scale=1.0 if arrival_scale is None else arrival_scale
    )


def _edge_cloud_sim(
    seed: int, jobs: int | None = None, arrival_scale: float | None = None
) -> Trace:
    """Edge-cloud paper (Sec. V-A): the simulator's workload of data-chunk jobs (300 by default).

    Bundled Philly arrivals scaled up so that J jobs span 8 J / 30 slots, 8 to 10 worker
    types t1..tK (K seeded), a Table II model each, E, m, G, q and b uniform in the paper's
    ranges (:mod:`gpusched.workloads.edge_cloud`); ``arrival_scale`` F stretches the
    arrivals F times (the load ablation). For the edge-cloud-sim cluster, or one of
    ``--servers`` S written by ``--cluster-out``.
    """
    from gpusched.workloads.edge_cloud import edge_cloud_sim_workload

    return edge_cloud_sim_workload(
        seed, jobs, arrival_scale=1.0 if arrival_scale is None else arrival_scale
    )


WORKLOADS: dict[str, Callable[..., Trace]] = {
    "synth-default": _synth_default,
    "a-srpt": _a_srpt,
    "lazer-earth": _lazer_earth,
    "lazer-saturn": _lazer_saturn,
    "lazer-uranus": _lazer_uranus,
    "lazer-philly": _lazer_philly,
    "sjf-bsbf": _sjf_bsbf,
    "sjf-bsbf-testbed": _sjf_bsbf_testbed,
    "pollux": _pollux,
    "pd-ors": _pd_ors,
    "edge-cloud-testbed": _edge_cloud_testbed,
    "edge-cloud-sim": _edge_cloud_sim,
}

NOTED = frozenset({"pd-ors", "edge-cloud-testbed", "edge-cloud-sim"})
"""Presets whose trace ``source`` is a one-line note the CLI prints after writing it."""


CLUSTERED: dict[str, str] = {"edge-cloud-testbed": "testbed", "edge-cloud-sim": "sim"}
"""Presets that write a matching cluster (``--cluster-out``), with the cluster's kind."""


def _check_name(name: str) -> None:
    if name not in WORKLOADS:
        raise GpuschedError(
            f"unknown workload {show_value(name)}{did_you_mean(name, WORKLOADS)} "
            f"(known: {', '.join(sorted(WORKLOADS))})"
        )


def build_workload(name: str, seed: int, jobs: int | None = None, **options: Any) -> Trace:
    """Build workload ``name`` with ``seed`` (and ``jobs`` where the preset takes a size).

    ``options`` (e.g. ``single_gpu_fraction`` for ``a-srpt``) are passed to the preset;
    one it does not take is an error. A negative ``seed`` is an error.
    """
    _check_name(name)
    check_seed(seed)
    if jobs is not None and name in MAX_JOBS and not 1 <= jobs <= MAX_JOBS[name]:
        why = " (a limit of memory: up to 2 KB per job)" if jobs > 1 else ""
        raise GpuschedError(f"{name} takes --jobs from 1 to {MAX_JOBS[name]:,}, got {jobs:,}{why}")
    given = {k: v for k, v in options.items() if v is not None}
    try:
        return WORKLOADS[name](seed, jobs, **given)
    except TypeError as exc:
        if "unexpected keyword" in str(exc):
            raise GpuschedError(f"workload '{name}' does not take {', '.join(given)}") from None
        raise


def workload_cluster(
    name: str,
    seed: int,
    servers: int | None = None,
    cloud: str | None = None,
    ship: str | None = None,
) -> str:
    """The TOML text of the cluster that matches workload ``name`` at ``seed``.

    Only the :data:`CLUSTERED` presets have one
    (:func:`gpusched.workloads.edge_cloud.edge_cloud_cluster`); ``servers`` (edge
    servers) is for edge-cloud-sim only, default 100; ``cloud`` (``machine`` or
    ``unbounded``) and ``ship`` (``parallel`` or ``serial``) as that function takes them.

    Raises
    ------
    GpuschedError
        An unknown ``name``, a preset without a cluster, ``servers`` for the testbed, or
        a bad ``servers`` or ``seed``.
    """
    from gpusched.workloads.edge_cloud import SIM_SERVERS, TESTBED_SERVERS, edge_cloud_cluster

    _check_name(name)
    kind = CLUSTERED.get(name)
    if kind is None:
        raise GpuschedError(
            f"--cluster-out is for the presets {', '.join(CLUSTERED)}; '{name}' has no"
            " cluster of its own"
        )
    if kind == "testbed":
        if servers is not None:
            raise GpuschedError(
                f"edge-cloud-testbed has {TESTBED_SERVERS} edge servers; --servers is for"
                " edge-cloud-sim"
            )
        return edge_cloud_cluster(TESTBED_SERVERS, seed, kind, cloud, ship or "parallel")
    n = SIM_SERVERS if servers is None else servers
    return edge_cloud_cluster(n, seed, kind, cloud, ship or "parallel")
