"""The Lazer paper's evaluation workloads: Helios-like Earth, Saturn and Uranus, and real Philly.

Y. Go, C. Shin, M. Kang, J. Hwang, C. Yoo and G. Yang, "Making Sense of Job Preemption for
Distributed Deep Learning Acceleration", DAC'26 (DOI 10.1145/3770743.3804432):

* Sec. 3.1: "we follow prior studies and randomly assign one of seven representative
  models -- ConvNeXt, EfficientNet, VGG19, ViT, Swin Transformer, Conformer, and TNT -- to
  each DT job in the trace" (:data:`MODELS`; their load and save times: item 4 below).
* Sec. 5.1 and Table 1: the Helios traces Earth, Saturn and Uranus (427K / 698K / 329K
  jobs, mean training time 59.5 / 72.2 / 128.1 min, mean inter-arrival time 39 / 80 /
  243 s), all jobs replayed in simulation; on the testbed, "we sample 100 jobs ... we
  compute each job's Delta A and sample jobs that preserve the original Delta A
  distribution" (:func:`sample_keeping_interarrivals`).

Deviation, by necessity: the per-job Helios logs are not bundled (and the project must run
without them), so :func:`helios_jobs` draws jobs whose count, means and medians are those
of ``gpusched/data/helios.toml`` (the HeliosArtifact summary and the paper's Table 1). Each
choice below is an option; the default is the first, the paper's setting as closely as the
published numbers allow:

1. **Arrivals** (``arrivals``): ``"helios"`` replays the shape of a real Helios submission
   series at Table 1's mean rate (:func:`profile_arrivals`): the GPU jobs submitted per 10
   minutes on Venus (the only Helios cluster whose per-bin series is published; bundled
   as ``gpusched/data/venus_submit_gpu_job.csv.gz``), each bin's count scaled by
   ``(600 s / Table 1's gap) / 4.804`` (the series' mean) with cumulative rounding, the
   series tiled from a seeded start bin, arrivals uniform within their bin, whole seconds.
   It keeps the daily cycle and the bursts (up to 717 submissions in 10 minutes on Venus:
   "many jobs arrive simultaneously", Sec. 5.3). ``"poisson"``: exponential gaps with
   Table 1's mean (the memoryless process with the one number the paper gives).
2. **Durations**: a log-normal truncated to [1 s, the logs' 181 days] whose median is the
   summary's median GPU-job run time and whose mean is Table 1's mean training time
   (:func:`duration_params` solves for mu and sigma), rounded to whole seconds. Matched:
   the median and the mean; every other quantile follows from the log-normal shape.
3. **GPU counts**: powers of two 1..512 with :math:`P(2^k) \\propto r^k` (geometric in
   :math:`\\log_2` of the size), ``r`` solved so the mean is the summary's mean GPUs per job
   (:func:`gpu_mix`); the median is then 1, as in the summary. ``sizes``: ``"copula"``
   pairs them with the durations through a Gaussian copula whose correlation is solved so
   that the mean GPU-seconds per job is the summary's coupling (GPU-time per job over mean
   GPUs times mean run time: 2.48 / 1.88 / 2.18) times the drawn means
   (:func:`couple_sizes`): the marginals stay as drawn. ``"independent"``: no pairing
   (GPU-time per job about 1.0 times the product of the means).
4. **Load and save times** (``overheads``, :func:`annotate_models`): ``"paper"`` gives every
   job the paper's Sec. 3.2 figures, 113 s per load and 8 s per pause-and-save;
   ``"checkpoint"`` the model catalogue's checkpoint times (3.7-3.9 s and 7.8-8.0 s).

Each draw is stratified (Latin hypercube): job ``i`` of ``n`` takes a uniform in its own
slice ``[p_i / n, (p_i + 1) / n)`` of the probability range, ``p`` a random permutation, and
the inverse CDF maps it to a value. The full-size workload thus reproduces each
distribution up to the spread inside a slice, so its means sit on the targets instead of
wandering by the heavy tail's sampling error (about 2 % of the mean duration for independent
draws of these sizes).

:func:`lazer_philly_workload` annotates real Philly jobs (the bundled ``philly-2000``, or
any canonical trace) the same way.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from gpusched.core import portable
from gpusched.core.portable import dot
from gpusched.errors import GpuschedError
from gpusched.io.files import parse_toml
from gpusched.io.trace import Trace

__all__ = [
    "ARRIVALS",
    "HELIOS_CLUSTERS",
    "MAX_LOG2_GPUS",
    "MODELS",
    "OVERHEADS",
    "SIM_CLUSTER",
    "SIZES",
    "SIM_GPUS",
    "TESTBED_CLUSTER",
    "TESTBED_GPUS",
    "HeliosCluster",
    "annotate_models",
    "couple_sizes",
    "duration_params",
    "gpu_mix",
    "helios_cluster",
    "helios_jobs",
    "lazer_helios_workload",
    "lazer_philly_workload",
    "paper_overheads",
    "profile_arrivals",
    "sample_keeping_interarrivals",
    "venus_profile",
]

MODELS: tuple[str, ...] = (
    "ConvNeXt-B",
    "EfficientNet-B0",
    "VGG19",
    "ViT-B/16",
    "Swin-B",
    "Conformer-B",
    "TNT-B",
)
"""The paper's seven models (Sec. 3.1) as named in the model catalogue (Base sizes)."""

HELIOS_CLUSTERS: tuple[str, ...] = ("earth", "saturn", "uranus")
"""The Helios clusters the paper replays (Table 1)."""

MAX_LOG2_GPUS = 9
"""Largest GPU count drawn is ``2**9 = 512``, the simulated cluster's size."""

SIM_CLUSTER = "lazer-sim-512"
"""Bundled cluster of the paper's simulations; its size caps full-size workloads."""

SIM_GPUS = 512
"""GPUs of :data:`SIM_CLUSTER` ("32x more GPUs" than the testbed, Sec. 1)."""

TESTBED_CLUSTER = "lazer-testbed"
"""Bundled cluster of the paper's testbed; its size caps ``--jobs`` samples."""

TESTBED_GPUS = 16
"""GPUs of :data:`TESTBED_CLUSTER` ("four GPU servers with 16 GPUs", Sec. 5.1)."""

ARRIVALS: tuple[str, ...] = ("helios", "poisson")
"""Arrival processes of :func:`helios_jobs` (module docstring, item 1); the first is the default."""

SIZES: tuple[str, ...] = ("copula", "independent")
"""Pairings of GPU counts with durations (module docstring, item 3); the first is the default."""

OVERHEADS: tuple[str, ...] = ("paper", "checkpoint")
"""Load and save times of :func:`annotate_models` (module docstring, item 4); the first is the default."""

_DATA = Path(__file__).resolve().parent.parent / "data" / "helios.toml"
_MIN_RUN_S = 1.0  # Helios logs time jobs in whole seconds


@dataclass(frozen=True, slots=True)
class HeliosCluster:
    """One Helios cluster's numbers (``gpusched/data/helios.toml``).

    Attributes
    ----------
    name
        ``"earth"``, ``"saturn"`` or ``"uranus"``.
    n_jobs
        GPU jobs in the logs.
    mean_gpus, median_gpus
        Mean and median GPUs per job.
    median_run_s, mean_training_s
        Median run time (summary) and mean training time (Table 1) per job, s.
    mean_interarrival_s
        Mean inter-job arrival time (Table 1), s.
    max_run_s
        Longest duration drawn: the logs' span, s.
    mean_run_s
        Mean run time of a GPU job in the summary, s.
    gpu_s_per_job
        GPU-time per GPU job in the summary (completed, cancelled and failed), GPU-s.
    """

    name: str
    n_jobs: int
    mean_gpus: float
    median_gpus: float
    median_run_s: float
    mean_training_s: float
    mean_interarrival_s: float
    max_run_s: float
    mean_run_s: float
    gpu_s_per_job: float

    @property
    def coupling(self) -> float:
        """GPU-time per job over mean GPUs times mean run time, from the summary.

        1 if GPU counts and run times were unrelated; 2.48 / 1.88 / 2.18 for Earth /
        Saturn / Uranus: large jobs run longer.
        """
        return self.gpu_s_per_job / (self.mean_gpus * self.mean_run_s)


@functools.cache
def _helios_doc() -> dict[str, object]:
    return parse_toml(_DATA.read_text(encoding="utf-8"))


def helios_cluster(name: str) -> HeliosCluster:
    """The numbers of Helios cluster ``name`` (``earth``, ``saturn``, ``uranus``).

    Raises
    ------
    GpuschedError
        For another name.
    """
    doc = _helios_doc()
    clusters = doc["clusters"]
    assert isinstance(clusters, dict)
    if name not in clusters:
        known = ", ".join(sorted(clusters))
        raise GpuschedError(f"unknown Helios cluster {name!r} (known: {known})")
    c = clusters[name]
    days = doc["log_days"]
    assert isinstance(days, int)
    return HeliosCluster(
        name=name,
        n_jobs=int(c["gpu_jobs"]),
        mean_gpus=float(c["mean_gpus"]),
        median_gpus=float(c["median_gpus"]),
        median_run_s=float(c["median_run_s"]),
        mean_training_s=float(c["mean_training_min"]) * 60.0,
        mean_interarrival_s=float(c["mean_interarrival_s"]),
        max_run_s=float(days) * 86400.0,
        mean_run_s=float(c["mean_run_s"]),
        gpu_s_per_job=float(sum(c["gpu_time_s"])) / float(c["gpu_jobs"]),
    )


def paper_overheads() -> tuple[float, float]:
    """``(load_s, save_s)`` of every job under ``overheads="paper"`` (Sec. 3.2; helios.toml)."""
    o = _helios_doc()["overheads"]
    assert isinstance(o, dict)
    return float(o["paper"]["load_s"]), float(o["paper"]["save_s"])


@functools.cache
def venus_profile() -> tuple[np.ndarray, float]:
    """The bundled submission profile: GPU jobs submitted per bin, and the bin length, s.

    Helios Venus, 2020-04-01 to 2020-09-28, 26,064 bins of 600 s (``gpusched/data/README.md``
    gives its provenance and licence).
    """
    import gzip

    doc = _helios_doc()["arrivals"]
    assert isinstance(doc, dict)
    path = _DATA.parent / str(doc["profile"])
    with gzip.open(path, "rt", encoding="utf-8") as f:
        header = f.readline().strip()
        counts = np.loadtxt(f, dtype=np.int64, ndmin=1)
    if header != "submit_gpu_job" or counts.size == 0 or (counts < 0).any():
        raise GpuschedError(f"{path}: expected a column 'submit_gpu_job' of counts >= 0")
    counts.setflags(write=False)
    return counts, float(doc["bin_s"])


# ------------------------------------------------------------------------ distributions


def gpu_mix(mean_gpus: float, max_log2: int = MAX_LOG2_GPUS) -> tuple[np.ndarray, np.ndarray]:
    """GPU counts ``2**k`` (``k = 0..max_log2``) with :math:`P(2^k) \\propto r^k` and the given mean.

    Parameters
    ----------
    mean_gpus
        Target mean GPUs per job, in ``(1, 2**max_log2)``.
    max_log2
        Largest size is ``2**max_log2``.

    Returns
    -------
    sizes, probs
        ``(max_log2 + 1,)`` int64 sizes and float64 probabilities (sum 1).
    """
    from scipy.optimize import brentq

    k = np.arange(max_log2 + 1)
    sizes = 2**k
    if not 1.0 < mean_gpus < float(sizes[-1]):
        raise GpuschedError(f"mean GPUs per job must be in (1, {sizes[-1]}), got {mean_gpus}")

    def excess(log_r: float) -> float:
        w = portable.exp(k * log_r - np.max(k * log_r))
        return dot(w, sizes) / math.fsum(w.tolist()) - mean_gpus

    log_r = brentq(excess, -50.0, 50.0, xtol=1e-14)
    w = portable.exp(k * log_r - np.max(k * log_r))
    return sizes.astype(np.int64), w / math.fsum(w.tolist())


def _truncated_lognormal(mu: float, sigma: float, lo: float, hi: float) -> tuple[float, float]:
    """Median and mean of a log-normal(mu, sigma) truncated to [lo, hi]."""
    from scipy.special import ndtr, ndtri

    a, b = (math.log(lo) - mu) / sigma, (math.log(hi) - mu) / sigma
    pa, pb = float(ndtr(a)), float(ndtr(b))
    median = math.exp(mu + sigma * float(ndtri((pa + pb) / 2)))
    mean = math.exp(mu + sigma**2 / 2) * float(ndtr(b - sigma) - ndtr(a - sigma)) / (pb - pa)
    return median, mean


def duration_params(
    median_s: float, mean_s: float, lo_s: float, hi_s: float
) -> tuple[float, float]:
    """Log-normal ``(mu, sigma)`` whose truncation to ``[lo_s, hi_s]`` has this median and mean.

    Parameters
    ----------
    median_s, mean_s
        Target median and mean, s (``lo_s < median_s < mean_s < hi_s``).
    lo_s, hi_s
        Truncation bounds, s.

    Returns
    -------
    tuple of float
        ``mu`` (of the log, log-seconds) and ``sigma``.

    Raises
    ------
    GpuschedError
        If no log-normal truncated to the bounds reaches the targets.
    """
    from scipy.optimize import brentq

    if not 0 < lo_s < median_s < mean_s < hi_s:
        raise GpuschedError(
            f"need 0 < lo < median < mean < hi, got {lo_s}, {median_s}, {mean_s}, {hi_s}"
        )

    log_m = math.log(median_s)

    def mu_for(sigma: float) -> float:  # the mu that puts the truncated median on target
        return float(
            brentq(
                lambda mu: math.log(_truncated_lognormal(mu, sigma, lo_s, hi_s)[0] / median_s),
                log_m - 5 * sigma,
                log_m + 5 * sigma,
                xtol=1e-13,
            )
        )

    def excess(sigma: float) -> float:
        return math.log(_truncated_lognormal(mu_for(sigma), sigma, lo_s, hi_s)[1] / mean_s)

    # sigma 0.05 gives a mean about the median, sigma 6 one far above any target here
    lo_sig, hi_sig = 0.05, 6.0
    if excess(lo_sig) > 0 or excess(hi_sig) < 0:
        raise GpuschedError(
            f"no log-normal on [{lo_s:g}, {hi_s:g}] s has median {median_s:g} s and mean "
            f"{mean_s:g} s"
        )
    sigma = float(brentq(excess, lo_sig, hi_sig, xtol=1e-13))
    return mu_for(sigma), sigma


def _stratified_uniforms(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` uniforms, one in each slice ``[i/n, (i+1)/n)``, in random order."""
    return (rng.permutation(n) + rng.random(n)) / n


def profile_arrivals(
    n: int,
    mean_gap_s: float,
    counts: np.ndarray,
    bin_s: float,
    start_bin: int,
    offsets: np.ndarray,
) -> np.ndarray:
    """``n`` submit times that follow a per-bin count profile at a given mean gap.

    The profile's counts, scaled by :math:`m = (\\text{bin\\_s} / \\text{mean\\_gap\\_s}) /
    \\overline{\\text{counts}}`, are tiled cyclically from ``start_bin``; bin ``b`` of the tiling
    holds :math:`\\lfloor m S_b \\rfloor - \\lfloor m S_{b-1} \\rfloor` jobs (``S`` the cumulative
    counts: cumulative rounding, so every burst is scaled by ``m`` and the total is exact).
    Job ``i`` lies at ``offsets[i]`` of its bin's length (uniform within the bin: given the
    counts, the piecewise-constant-rate Poisson process), rounded down to whole seconds.
    Times are sorted and start in ``[0, bin_s)`` (the first bin that holds a job is bin 0).

    Parameters
    ----------
    n
        Jobs (>= 1).
    mean_gap_s
        Mean inter-arrival time over the tiled profile, s (> 0).
    counts
        Jobs per bin (>= 0, some > 0).
    bin_s
        Bin length, s.
    start_bin
        Bin of ``counts`` the tiling starts at.
    offsets
        ``n`` numbers in [0, 1): each job's place within its bin.
    """
    c = np.roll(np.asarray(counts, dtype=np.float64), -int(start_bin))
    cum = np.cumsum(c)
    total = float(cum[-1])
    m = (bin_s / mean_gap_s) / (total / c.size)
    # job i falls in the first tiled bin b with m * S_b >= i + 1 (S_b = q * total + cum[w])
    need = (np.arange(1, n + 1, dtype=np.float64) - 1e-9) / m
    q = np.ceil(need / total) - 1.0
    w = np.searchsorted(cum, need - q * total, side="left")
    w = np.minimum(w, c.size - 1)  # float round-off at a cycle's very end
    b = q * c.size + w
    t = np.sort(np.floor((b + offsets) * bin_s))
    return np.asarray(t - bin_s * np.floor(t[0] / bin_s), dtype=np.float64)


def couple_sizes(
    z: np.ndarray,
    duration: np.ndarray,
    gpus: np.ndarray,
    target: float,
    rng: np.random.Generator,
) -> tuple[np.ndarray, float]:
    """Pair GPU counts with durations so that the mean GPU-seconds per job is ``target``.

    A Gaussian copula: job ``i``'s duration is the ``z[i]`` quantile of its law (``z``
    standard normal); its GPU count's latent is :math:`\\rho z_i + \\sqrt{1 - \\rho^2}
    \\varepsilon_i` (:math:`\\varepsilon` drawn here), and the drawn GPU counts are handed
    out in that latent's rank order, so both marginals stay exactly as drawn. The mean
    :math:`\\overline{g d}` grows with :math:`\\rho`; :math:`\\rho \\in (-1, 1)` is found by
    bisection on this sample (the mean is carried by a few jobs of many GPUs and months of
    run time, so no fixed :math:`\\rho` hits it on every draw).

    Parameters
    ----------
    z
        Standard-normal latent of each job's duration (``duration`` increases with it).
    duration
        Durations, s.
    gpus
        GPU counts drawn independently (reordered here).
    target
        Mean GPU-seconds per job wanted.
    rng
        Random generator (``len(z)`` normals).

    Returns
    -------
    gpus, rho
        The GPU counts paired with the jobs, and :math:`\\rho`.
    """
    n = z.size
    eps = rng.standard_normal(n)
    ranked = np.sort(gpus)
    d = np.asarray(duration, dtype=np.float64)

    def pair(rho: float) -> tuple[np.ndarray, float]:
        out = np.empty_like(ranked)
        out[np.argsort(rho * z + math.sqrt(1.0 - rho * rho) * eps)] = ranked
        return out, dot(out.astype(np.float64), d) / n

    lo, hi = -0.999, 0.999
    best_rho, (best, mean) = 0.0, pair(0.0)
    for _ in range(60):
        rho = 0.5 * (lo + hi)
        got, mean = pair(rho)
        if abs(mean / target - 1.0) < abs(dot(best, d) / n / target - 1.0):
            best_rho, best = rho, got
        if abs(mean / target - 1.0) < 1e-3 or hi - lo < 1e-9:
            break
        if mean < target:
            lo = rho
        else:
            hi = rho
    return best, best_rho


# ------------------------------------------------------------------------ workloads


def helios_jobs(
    cluster: HeliosCluster,
    rng: np.random.Generator,
    n_jobs: int | None = None,
    *,
    arrivals: str = "helios",
    sizes: str = "copula",
    load: float | None = None,
    n_gpus_cluster: int = SIM_GPUS,
    max_gpus: int = SIM_GPUS,
) -> Trace:
    """Draw a Helios-like workload (module docstring, items 1-3): no models yet.

    Parameters
    ----------
    cluster
        The Helios cluster's numbers.
    rng
        Random generator; drawn from in this order: the arrivals' randomness (helios: the
        start bin and one uniform per job; poisson: the stratified gaps), durations, GPU
        counts (each a permutation, then uniforms), the copula's normals (``copula``).
    n_jobs
        Jobs to draw; default the cluster's full count.
    arrivals, sizes
        One of :data:`ARRIVALS` and :data:`SIZES`.
    load
        If given, the mean inter-arrival time is not Table 1's but the one that makes the
        offered load :math:`\\sum g d / (\\text{span} \\cdot \\text{n\\_gpus\\_cluster})` equal
        ``load`` (GPU counts capped at ``max_gpus``, as the workload will be): the
        profile's counts per bin (or the Poisson rate) are scaled, the 10-minute bins kept.
    n_gpus_cluster
        GPUs ``load`` refers to.
    max_gpus
        The GPU cap ``load`` assumes.

    Returns
    -------
    Trace
        Jobs ``<cluster>-<number>`` in arrival order, the first in the first 10 minutes
        (poisson: at 0 s), whole-second ``submit_time`` and ``duration``, ``num_gpus`` in
        1..512.
    """
    from scipy.special import ndtr, ndtri

    if arrivals not in ARRIVALS:
        raise GpuschedError(f"--arrivals must be one of {', '.join(ARRIVALS)}, got {arrivals!r}")
    if sizes not in SIZES:
        raise GpuschedError(f"--sizes must be one of {', '.join(SIZES)}, got {sizes!r}")
    n = cluster.n_jobs if n_jobs is None else int(n_jobs)
    if n < 1:
        raise GpuschedError(f"need at least 1 job, got {n}")
    # 1. the arrivals' randomness (times are made at the end, once the gap is known)
    if arrivals == "helios":
        counts, bin_s = venus_profile()
        start_bin = int(rng.integers(counts.size))
        offsets = rng.random(n)
    else:
        unit_gaps = -portable.log1p(-_stratified_uniforms(rng, n - 1))  # exponential, mean 1
    # 2. truncated log-normal durations, stratified inverse CDF
    lo, hi = _MIN_RUN_S, cluster.max_run_s
    mu, sigma = duration_params(cluster.median_run_s, cluster.mean_training_s, lo, hi)
    pa, pb = ndtr((math.log(lo) - mu) / sigma), ndtr((math.log(hi) - mu) / sigma)
    z = ndtri(pa + _stratified_uniforms(rng, n) * (pb - pa))
    duration = np.clip(np.rint(portable.exp(mu + sigma * z)), lo, hi)
    # 3. GPU counts: powers of two, geometric in log2, stratified; paired by the copula
    mix_sizes, probs = gpu_mix(cluster.mean_gpus)
    cum = np.cumsum(probs)
    cum[-1] = 1.0
    gpus = mix_sizes[np.searchsorted(cum, _stratified_uniforms(rng, n), side="right")]
    how = f"{arrivals} arrivals" + (
        f" from profile bin {start_bin}" if arrivals == "helios" else ""
    )
    how += f", {sizes} sizes"
    if sizes == "copula":
        prod = float(gpus.mean()) * float(duration.mean())
        gpus, rho = couple_sizes(z, duration, gpus, cluster.coupling * prod, rng)
        got = dot(gpus.astype(np.float64), duration) / n / prod
        how += f" (rho {rho:.3f}: GPU-s per job {got:.3f}x mean GPUs x mean duration)"

    def submit_times(gap: float) -> np.ndarray:
        if arrivals == "helios":
            return profile_arrivals(n, gap, counts, bin_s, start_bin, offsets)
        return np.asarray(np.rint(np.concatenate([[0.0], np.cumsum(gap * unit_gaps)])))

    # the span the arrivals must cover: Table 1's mean gap between the n jobs, or the one
    # that gives the offered load sum(g d) / (span * n_gpus_cluster) = load
    gap = cluster.mean_interarrival_s
    want = (n - 1) * gap
    if load is not None:
        if not (math.isfinite(load) and 0.0 < load <= 100.0):
            raise GpuschedError(f"--load must be a number in (0, 100], got {load:g}")
        work = dot(np.minimum(gpus, max_gpus).astype(np.float64), duration)
        want = work / (load * n_gpus_cluster)
        how += f", offered load {load:g} on {n_gpus_cluster} GPUs"
    submit = submit_times(gap)
    # the span is about proportional to the gap asked for, but a profile cut at its n-th job
    # covers a part of a cycle whose rate differs from the mean: correct for it
    for _ in range(30):
        span = float(np.ptp(submit))
        if n < 2 or span <= 0 or abs(span / want - 1.0) < 1e-4:
            break
        gap *= want / span
        submit = submit_times(gap)
    width = len(str(n))
    ids = np.array([f"{cluster.name}-{i:0{width}d}" for i in range(1, n + 1)], dtype=object)
    return Trace(
        job_id=ids,
        submit_time=submit,
        num_gpus=gpus,
        duration=duration,
        iterations=np.full(n, np.nan),
        model=np.full(n, "", dtype=object),
        source=f"Helios {cluster.name.capitalize()}-like jobs ({n} drawn; {how})",
    )


def sample_keeping_interarrivals(
    submit: np.ndarray, n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Pick ``n`` jobs whose inter-arrival gaps keep the workload's gap distribution.

    Each job after the first has a gap :math:`\\Delta A` (its submit time minus the
    previous job's). The jobs are ranked by gap and split into ``n`` strata of equal size
    (gap quantiles); one job is picked uniformly from each stratum. The picks keep their
    original order, and each arrives its own gap after the previous pick (the first its gap
    after 0 s). The sample's gaps are then one per ``1/n`` quantile slice of the original
    gaps: its empirical distribution is within ``1/n`` of the original at every point
    (Kolmogorov-Smirnov distance <= 1/n; <= 2/n for the ``n - 1`` gaps between picks),
    whereas ``n`` consecutive jobs would carry the local burstiness of one stretch of the
    trace, and ``n`` jobs picked at random a KS distance around ``0.9 / sqrt(n)``.

    Parameters
    ----------
    submit
        Submit times of the workload, s, sorted ascending (length ``N > n``).
    n
        Jobs to pick (``1 <= n < N``).
    rng
        Random generator (``n`` uniforms).

    Returns
    -------
    index, new_submit
        Positions of the picked jobs in ``submit`` (ascending) and their new submit times, s.
    """
    big_n = len(submit)
    if not 1 <= n < big_n:
        raise GpuschedError(f"can sample 1 to {big_n - 1} of {big_n} jobs, got {n}")
    gaps = np.diff(submit)  # gap of job j (j >= 1) is gaps[j - 1]
    order = np.argsort(gaps, kind="stable")  # candidates ranked by gap
    edges = (np.arange(n + 1, dtype=np.int64) * (big_n - 1)) // n
    pick = edges[:-1] + (rng.random(n) * (edges[1:] - edges[:-1])).astype(np.int64)
    index = np.sort(order[pick] + 1)
    return index, np.cumsum(gaps[index - 1])


def annotate_models(trace: Trace, rng: np.random.Generator, overheads: str = "paper") -> Trace:
    """Assign each job one of :data:`MODELS` uniformly at random, with its load and save times.

    ``overheads`` (one of :data:`OVERHEADS`): ``"paper"``, every job loads for 113 s and
    pauses-and-saves for 8 s (Sec. 3.2; :func:`paper_overheads`); ``"checkpoint"``, the
    catalogue's checkpoint times of its model
    (:meth:`gpusched.jobmodels.catalogue.Catalogue.overheads`).

    Parameters
    ----------
    trace
        Jobs (any ``model`` they have is replaced).
    rng
        Random generator (one integer per job).
    overheads
        Where ``load_s`` and ``save_s`` come from.
    """
    from gpusched.jobmodels.catalogue import load_catalogue

    if overheads not in OVERHEADS:
        raise GpuschedError(f"--overheads must be one of {', '.join(OVERHEADS)}, got {overheads!r}")
    if overheads == "paper":
        table = np.tile(np.asarray(paper_overheads()), (len(MODELS), 1))
    else:
        cat = load_catalogue()
        times = []
        for name in MODELS:
            got = cat.overheads(name)
            if got is None:  # the shipped catalogue has all seven
                raise GpuschedError(f"{cat.path}: model {name!r} has no checkpoint table")
            times.append(got)
        table = np.array(times)
    pick = rng.integers(0, len(MODELS), size=len(trace))
    return replace(
        trace,
        model=np.array(MODELS, dtype=object)[pick],
        load_s=table[pick, 0],
        save_s=table[pick, 1],
    )


def _check_jobs(jobs: int | None, n_full: int, what: str) -> None:
    if jobs is not None and not 1 <= jobs <= n_full:
        raise GpuschedError(f"{what} has {n_full:,} jobs: --jobs must be 1 to {n_full}, got {jobs}")


def _finish(
    full: Trace,
    seed: int,
    jobs: int | None,
    max_gpus: int | None,
    what: str,
    rng: np.random.Generator,
    overheads: str = "checkpoint",
) -> Trace:
    """Sample ``jobs`` of ``full`` keeping its gaps, cap GPU counts, describe the result."""
    n_full = len(full)
    _check_jobs(jobs, n_full, what)
    sampled = jobs is not None and jobs < n_full
    if sampled:
        assert jobs is not None
        index, submit = sample_keeping_interarrivals(full.submit_time, jobs, rng)
        out = replace(full.take(index), submit_time=submit, source="")
        how = f"{jobs} of {n_full} jobs sampled keeping the inter-arrival distribution"
    else:
        out, how = full, f"all {n_full} jobs"
    cap = max_gpus if max_gpus is not None else (TESTBED_GPUS if sampled else SIM_GPUS)
    if cap < 1:
        raise GpuschedError(f"the GPU cap must be >= 1, got {cap}")
    n_capped = int((out.num_gpus > cap).sum())
    gpus = np.minimum(out.num_gpus, cap)
    return replace(
        out,
        num_gpus=gpus,
        source=(
            f"{what} (seed={seed}): {how}; {n_capped} GPU count(s) capped at {cap}; "
            + (
                "load 113 s and save 8 s per job (the paper's Sec. 3.2)"
                if overheads == "paper"
                else "load/save times from the catalogue's checkpoints"
            )
        ),
    )


def lazer_helios_workload(
    name: str,
    seed: int,
    jobs: int | None = None,
    *,
    max_gpus: int | None = None,
    load: float | None = None,
    n_gpus_cluster: int = SIM_GPUS,
    arrivals: str = "helios",
    sizes: str = "copula",
    overheads: str = "paper",
) -> Trace:
    """Build ``lazer-earth``, ``lazer-saturn`` or ``lazer-uranus`` (module docstring).

    Steps (all draws from ``np.random.default_rng(seed)``, in this order):

    1. :func:`helios_jobs`: the full-size Helios-like workload (Table 1's job count).
    2. :func:`annotate_models`: one of the seven models per job, with its load and save times.
    3. ``jobs`` below the full count: :func:`sample_keeping_interarrivals` (the testbed's
       100-job samples, Sec. 5.1). The sampled rows are rows of the full workload, with
       new submit times.
    4. GPU counts above ``max_gpus`` become ``max_gpus``.

    Parameters
    ----------
    name
        ``"earth"``, ``"saturn"`` or ``"uranus"``.
    seed
        Seed of every draw; the same arguments give the same trace.
    jobs
        Number of jobs, ``1..`` the full count; default the full count.
    max_gpus
        Largest GPU count; default 512 (the simulated cluster) for the full workload and 16
        (the testbed) for a sample. Capping keeps each sampled job (and its share of large
        jobs, which take the whole testbed) instead of redrawing it.
    load
        If given (full size only), the arrival rate is scaled (:func:`helios_jobs`) so
        that the offered load on ``n_gpus_cluster`` GPUs is ``load``; default none: Table
        1's rate, as the paper replays every job (offered load 0.93 / 0.80 / 0.54 on 512
        GPUs with the default sizes, 0.36-0.44 with ``sizes="independent"``).
    n_gpus_cluster
        GPUs ``load`` refers to; default 512 (lazer-sim-512).
    arrivals, sizes, overheads
        One of :data:`ARRIVALS`, :data:`SIZES`, :data:`OVERHEADS` (module docstring, items
        1, 3, 4); the defaults are the paper's setting.

    Returns
    -------
    Trace
        Columns ``job_id, submit_time, num_gpus, duration, model, load_s, save_s``.
    """
    cluster = helios_cluster(name)
    _check_jobs(jobs, cluster.n_jobs, f"lazer-{name}")
    what = f"lazer-{name}"
    if load is not None and not (math.isfinite(load) and 0.0 < load <= 100.0):
        raise GpuschedError(f"--load must be a number in (0, 100], got {load:g}")
    if load is not None and jobs is not None and jobs < cluster.n_jobs:
        raise GpuschedError(f"{what}: --load applies to the full-size workload, not --jobs")
    if overheads not in OVERHEADS:  # before a full-size workload is drawn
        raise GpuschedError(f"--overheads must be one of {', '.join(OVERHEADS)}, got {overheads!r}")
    rng = np.random.default_rng(seed)
    jobs_drawn = helios_jobs(
        cluster,
        rng,
        arrivals=arrivals,
        sizes=sizes,
        load=load,
        n_gpus_cluster=n_gpus_cluster,
        max_gpus=max_gpus or SIM_GPUS,
    )
    full = annotate_models(jobs_drawn, rng, overheads)
    src = jobs_drawn.source
    what = f"{what} ({src[src.index('; ') + 2 : -1]})"  # the choices helios_jobs made
    return _finish(full, seed, jobs, max_gpus, what, rng, overheads)


def lazer_philly_workload(
    seed: int,
    jobs: int | None = None,
    *,
    path: str | Path | None = None,
    max_gpus: int | None = None,
    overheads: str = "paper",
) -> Trace:
    """Build ``lazer-philly``: real Philly jobs annotated with the seven models.

    Steps (draws from ``np.random.default_rng(seed)``): read the source (``path``, a
    canonical trace such as ``gpusched trace import philly-pollux`` writes, default the
    bundled ``traces/philly-2000.csv``: 2,000 consecutive real Philly jobs), sort it by
    submit time and rebase it to start at 0 s; :func:`annotate_models`; ``jobs`` below the
    source's count: :func:`sample_keeping_interarrivals`; cap GPU counts at ``max_gpus``
    (default as :func:`lazer_helios_workload`). Durations, GPU counts and (for the full
    source) arrivals are Philly's own; ``user`` is kept, other extra columns dropped.

    Parameters
    ----------
    seed
        Seed of every draw.
    jobs
        Number of jobs; default all of the source.
    path
        Source trace; default the bundled ``philly-2000``.
    max_gpus
        Largest GPU count (see :func:`lazer_helios_workload`).
    overheads
        One of :data:`OVERHEADS` (see :func:`annotate_models`).
    """
    from gpusched.io.resources import resolve_trace
    from gpusched.io.trace import read_trace

    # a file, or a bundled trace's name (philly-2000), as workload a-srpt takes
    src = read_trace(resolve_trace("philly-2000" if path is None else str(path)))
    if len(src) < 1:
        raise GpuschedError(f"{src.source}: the Philly source has no jobs")
    if np.isnan(src.duration).any():
        raise GpuschedError(f"{src.source}: every Philly job needs a 'duration'")
    src = src.take(np.argsort(src.submit_time, kind="stable"))
    extra = {"user": src.extra["user"]} if "user" in src.extra else {}
    base = Trace(
        job_id=src.job_id,
        submit_time=src.submit_time - src.submit_time[0],
        num_gpus=src.num_gpus,
        duration=src.duration,
        iterations=np.full(len(src), np.nan),
        model=np.full(len(src), "", dtype=object),
        extra=extra,
        source=src.source,
    )
    rng = np.random.default_rng(seed)
    full = annotate_models(base, rng, overheads)
    what = f"lazer-philly of {Path(src.source).name}"
    return _finish(full, seed, jobs, max_gpus, what, rng, overheads)
