"""Per-iteration time of a mixed-parallel (asynchronous pipeline) job: eq. (4)-(7).

Implements Section III-B of Z. Luo, J. Liu, M. Lee and N. B. Shroff, "Prediction-Assisted
Online Distributed Deep Learning Workload Scheduling in GPU Clusters" (A-SRPT), IEEE
INFOCOM 2025, arXiv:2501.05563.

A job has ``S`` stages; stage ``s`` has ``k_s`` data-parallel replicas. Its GPU allocation
is the integer matrix ``x`` of shape ``(M, S)``: ``x[m, s]`` replicas of stage ``s`` on
server ``m`` (the paper's :math:`x_{i,s}^m`). For every server ``m`` holding a replica of
stage ``s`` the stage time is

.. math:: \\beta_s^m = comp_s^m + comm_s^m + AllReduce_s^m

(eq. 4, 5, 6) and the per-iteration time is :math:`\\alpha = \\max_{m,s} \\beta_s^m` (eq. 7).

Units: seconds, bytes; NIC bandwidth in Gbit/s, intra-server bandwidth in GByte/s
(converted with 1 Gbit = 1e9 / 8 bytes and 1 GByte = 1e9 bytes).

Two places where the text admits more than one reading are explicit options, a
:class:`Reading` carried by every :class:`PipelineSpec` (so that the ideal time, Heavy-Edge's
graph, a placement's time and :math:`\\alpha^{max}` of one job all use the same reading; see
``docs/a-srpt.md``):

* ``batch``: what a replica computes. ``"split"`` (default): one iteration is one mini-batch
  of the model's batch size, and "the processing of a single mini-batch by a stage is
  distributed over the GPUs" (Sec. III-A): a replica's compute is the stage's
  whole-mini-batch time divided by ``k_s`` and its inter-stage data is the stage-boundary
  activation bytes divided by ``k_s``, so the paper's identity
  :math:`2d_{s-1}^{out}/k_s = 2d_s^{in}/k_{s-1}` holds exactly. ``"per-replica"``: the
  batch size is each replica's batch; eq. (4)'s :math:`p^f + p^b` is the stage's time for
  that whole batch on every replica and :math:`d^{in}_s = d^{out}_{s-1}` are that batch's
  boundary activation bytes (an iteration processes :math:`k_s` batches per stage).
* ``allreduce``: eq. (6), first case (:math:`0 < x_s^m < k_s`). ``"share"`` (default): the
  per-replica ring data :math:`2(k_s-1)h_s/k_s` sent by each of the :math:`x_s^m` replicas
  through the server's reserved NIC share :math:`(x_s^m/g)B_{inter}`, i.e.
  :math:`2g(k_s-1)h_s/(k_s B_{inter})`, independent of :math:`x_s^m`. ``"literal"``: the
  formula as typeset, :math:`2(k_s-1)h_s/(x_s^m B_{inter})` (the second case with
  :math:`k_s B_{intra}` replaced by :math:`x_s^m B_{inter}`).
* The first stage has no incoming and the last stage no outgoing activation traffic
  (input loading and the loss are not communication).
* No overlap of AllReduce with the backward pass (the paper's optional coefficients are 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from gpusched.jobmodels.reading import (
    ALLREDUCE_READINGS,
    BATCH_READINGS,
    DEFAULT_READING,
    Reading,
)

__all__ = [
    "ALLREDUCE_READINGS",
    "BATCH_READINGS",
    "DEFAULT_READING",
    "PipelineSpec",
    "Reading",
    "StageLike",
    "allreduce_inter_s",
    "alpha_max",
    "consolidated_servers",
    "inter_bytes_per_s",
    "intra_bytes_per_s",
    "iteration_time",
    "pipeline_spec",
    "spec_from_stages",
    "stage_server_times",
]


def inter_bytes_per_s(nic_gbps: float) -> float:
    """Convert a NIC bandwidth from Gbit/s to bytes/s (the paper's :math:`B_{inter}`).

    Parameters
    ----------
    nic_gbps
        Server NIC bandwidth, Gbit/s (1 Gbit = 1e9 bits).
    """
    return float(nic_gbps) * 1e9 / 8.0


def intra_bytes_per_s(intra_gbyte_s: float) -> float:
    """Convert an intra-server GPU bandwidth from GByte/s to bytes/s (:math:`B_{intra}`).

    Parameters
    ----------
    intra_gbyte_s
        Intra-server GPU-to-GPU bandwidth (NVLink, PCIe), GByte/s (1 GByte = 1e9 bytes).
    """
    return float(intra_gbyte_s) * 1e9


@dataclass(frozen=True, slots=True)
class PipelineSpec:
    """Whole-mini-batch stage profile of one job plus its replica counts and model reading.

    Attributes
    ----------
    fwd_s
        ``(S,)`` forward time of one whole mini-batch through stage ``s`` on one reference
        GPU, seconds.
    bwd_s
        ``(S,)`` backward time of the same, seconds.
    act_bytes
        ``(S,)`` activation bytes stage ``s`` sends to stage ``s + 1`` for one whole
        mini-batch (gradients of the same size flow back); the last entry is unused.
    param_bytes
        ``(S,)`` bytes of stage ``s``'s trainable parameters as all-reduced (:math:`h_s`).
    replicas
        ``(S,)`` data-parallel replicas per stage (:math:`k_s`), each ``>= 1``.
    reading
        How eq. (4)-(6) are read (:class:`Reading`); every function of this module and of
        :mod:`gpusched.jobmodels.heavy_edge` uses it.
    """

    fwd_s: np.ndarray
    bwd_s: np.ndarray
    act_bytes: np.ndarray
    param_bytes: np.ndarray
    replicas: np.ndarray
    reading: Reading = DEFAULT_READING

    def with_reading(self, reading: Reading) -> PipelineSpec:
        """The same profile and replicas under another :class:`Reading`."""
        return replace(self, reading=reading)

    @property
    def _share(self) -> np.ndarray:
        # Divisor of a stage's whole-batch numbers per replica: k_s ("split") or 1.
        if self.reading.batch == "split":
            return self.replicas
        return np.ones_like(self.replicas)

    @property
    def n_stages(self) -> int:
        """Number of pipeline stages ``S``."""
        return int(self.replicas.shape[0])

    @property
    def n_gpus(self) -> int:
        """GPUs the job needs, :math:`g_i = \\sum_s k_s`."""
        return int(self.replicas.sum())

    # The paper's per-replica symbols (Sec. III-A) --------------------------------------
    @property
    def p_f(self) -> np.ndarray:
        """:math:`p_s^f`: forward time of one replica per iteration, seconds.

        ``fwd_s / k_s`` under the ``"split"`` batch reading, ``fwd_s`` under ``"per-replica"``.
        """
        p: np.ndarray = self.fwd_s / self._share
        return p

    @property
    def p_b(self) -> np.ndarray:
        """:math:`p_s^b`: backward time of one replica per iteration, seconds (as :attr:`p_f`)."""
        p: np.ndarray = self.bwd_s / self._share
        return p

    @property
    def d_in(self) -> np.ndarray:
        """:math:`d_s^{in}`: activation bytes one replica of ``s`` receives (0 for ``s = 1``).

        The previous stage's boundary bytes ``/ k_s`` (``"split"``) or undivided
        (``"per-replica"``).
        """
        d = np.zeros(self.n_stages)
        d[1:] = self.act_bytes[:-1] / self._share[1:]
        return d

    @property
    def d_out(self) -> np.ndarray:
        """:math:`d_s^{out}`: activation bytes one replica of ``s`` sends (0 for ``s = S``).

        The stage's boundary bytes ``/ k_s`` (``"split"``) or undivided (``"per-replica"``).
        """
        d = np.zeros(self.n_stages)
        d[:-1] = self.act_bytes[:-1] / self._share[:-1]
        return d


class StageLike(Protocol):
    """Anything with a stage's whole-mini-batch profile (e.g. ``catalogue.StageProfile``)."""

    @property
    def fwd_s(self) -> float: ...
    @property
    def bwd_s(self) -> float: ...
    @property
    def act_out_bytes(self) -> float: ...
    @property
    def param_bytes(self) -> float: ...


def pipeline_spec(
    fwd_s: Sequence[float] | np.ndarray,
    bwd_s: Sequence[float] | np.ndarray,
    act_bytes: Sequence[float] | np.ndarray,
    param_bytes: Sequence[float] | np.ndarray,
    replicas: Sequence[int] | np.ndarray,
    reading: Reading = DEFAULT_READING,
) -> PipelineSpec:
    """Build and validate a :class:`PipelineSpec` from per-stage sequences.

    Parameters
    ----------
    fwd_s, bwd_s
        Per-stage forward / backward time of one whole mini-batch on one GPU, seconds.
    act_bytes
        Per-stage activation bytes sent to the next stage per mini-batch, bytes
        (last entry unused).
    param_bytes
        Per-stage trainable-parameter bytes all-reduced among the stage's replicas, bytes.
    replicas
        Per-stage replica counts, integers ``>= 1``.
    reading
        How eq. (4)-(6) read these numbers (:class:`Reading`).

    Returns
    -------
    PipelineSpec
        Read-only float64 arrays (``replicas`` int64).

    Raises
    ------
    ValueError
        If the lengths differ, a stage has fewer than one replica, or a value is negative
        or not finite.
    """
    arrs = [np.array(a, dtype=np.float64, ndmin=1) for a in (fwd_s, bwd_s, act_bytes, param_bytes)]
    k = np.array(replicas, dtype=np.int64, ndmin=1)
    n = k.shape[0]
    if n == 0 or any(a.shape != (n,) for a in arrs):
        raise ValueError(f"pipeline_spec: need equal non-empty 1-D lengths, got {n} stages")
    if (k < 1).any():
        raise ValueError(f"pipeline_spec: every stage needs >= 1 replica, got {k.tolist()}")
    for a in arrs:
        if not np.isfinite(a).all() or (a < 0).any():
            raise ValueError("pipeline_spec: times and byte counts must be finite and >= 0")
    for arr in (*arrs, k):
        arr.setflags(write=False)
    fwd, bwd, act, par = arrs
    return PipelineSpec(fwd, bwd, act, par, replicas=k, reading=reading)


def spec_from_stages(
    stages: Sequence[StageLike], replicas: Sequence[int], reading: Reading = DEFAULT_READING
) -> PipelineSpec:
    """Build a :class:`PipelineSpec` from stage profile objects.

    Parameters
    ----------
    stages
        Objects with ``fwd_s``, ``bwd_s`` (seconds), ``act_out_bytes`` and ``param_bytes``
        (bytes) for one whole mini-batch, one per stage.
    replicas
        Replicas per stage, same length as ``stages``.
    reading
        How eq. (4)-(6) read the profile (:class:`Reading`).
    """
    return pipeline_spec(
        [st.fwd_s for st in stages],
        [st.bwd_s for st in stages],
        [st.act_out_bytes for st in stages],
        [st.param_bytes for st in stages],
        replicas,
        reading,
    )


def _check_alloc(spec: PipelineSpec, x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 2 or x.shape[1] != spec.n_stages:
        raise ValueError(f"allocation must have shape (M, {spec.n_stages}), got {x.shape}")
    if (x < 0).any() or not np.array_equal(x.sum(axis=0), spec.replicas):
        raise ValueError(
            "allocation must be >= 0 with column sums equal to the replicas "
            f"{spec.replicas.tolist()} (eq. 2), got {x.sum(axis=0).tolist()}"
        )
    return x.astype(np.float64)


def stage_server_times(
    spec: PipelineSpec,
    alloc_per_server: np.ndarray,
    nic_gbps: float,
    intra_gbyte_s: float,
    gpus_per_server: int,
) -> np.ndarray:
    """Per-server, per-stage iteration time :math:`\\beta_s^m` (eq. 4-6).

    Under ``spec.reading`` (:class:`Reading`): the batch reading sets :math:`p^f, p^b,
    d^{in}, d^{out}`, the AllReduce reading eq. (6)'s first case.

    Parameters
    ----------
    spec
        The job's stage profile and replica counts.
    alloc_per_server
        ``(M, S)`` integer array; ``[m, s]`` = replicas of stage ``s`` on server ``m``
        (:math:`x_s^m`). Column sums must equal ``spec.replicas`` (eq. 2).
    nic_gbps
        Server NIC bandwidth :math:`B_{inter}`, Gbit/s.
    intra_gbyte_s
        Intra-server GPU bandwidth :math:`B_{intra}`, GByte/s.
    gpus_per_server
        GPUs per server ``g``; a replica reserves ``1/g`` of its server's NIC.

    Returns
    -------
    numpy.ndarray
        ``(M, S)`` seconds; 0 where a server holds no replica of the stage.
    """
    x = _check_alloc(spec, alloc_per_server)
    g = float(gpus_per_server)
    b_inter = inter_bytes_per_s(nic_gbps)
    b_intra = intra_bytes_per_s(intra_gbyte_s)
    k = spec.replicas.astype(np.float64)
    n_servers, n_stages = x.shape
    on = x > 0

    # eq. (4): comp = p^f + p^b on every server that hosts a replica of s.
    comp = np.where(on, (spec.p_f + spec.p_b)[None, :], 0.0)

    # eq. (5): the fraction of stage s-1 (s+1) replicas on this server / elsewhere.
    on_prev = np.zeros_like(x)
    on_next = np.zeros_like(x)
    on_prev[:, 1:] = x[:, :-1] / k[None, :-1]
    on_next[:, :-1] = x[:, 1:] / k[None, 1:]
    has_prev = np.arange(n_stages) > 0
    has_next = np.arange(n_stages) < n_stages - 1
    off_prev = np.where(has_prev[None, :], 1.0 - on_prev, 0.0)
    off_next = np.where(has_next[None, :], 1.0 - on_next, 0.0)
    two_din = 2.0 * spec.d_in[None, :]
    two_dout = 2.0 * spec.d_out[None, :]
    # inter: (2 d_in off_prev + 2 d_out off_next) x / ((x / g) B_inter) = (...) g / B_inter
    inter_bytes = two_din * off_prev + two_dout * off_next
    intra_bytes = two_din * on_prev + two_dout * on_next
    comm = np.where(on, inter_bytes * g / b_inter + intra_bytes / b_intra, 0.0)

    # eq. (6): per-replica ring/tree data 2 (k-1) h / k over B_intra when all k replicas
    # share this server; when some replica sits elsewhere, "share": the same data over the
    # NIC share B_inter / g, 2 g (k-1) h / (k B_inter); "literal": 2 (k-1) h / (x B_inter).
    ar_bytes = 2.0 * (k - 1.0) * spec.param_bytes / k
    whole = x == k[None, :]
    ar_inter = allreduce_inter_s(spec, x, b_inter, g)
    allreduce = np.where(whole, (ar_bytes / b_intra)[None, :], np.where(on, ar_inter, 0.0))
    beta = comp + comm + allreduce
    assert beta.shape == (n_servers, n_stages)
    return beta


def allreduce_inter_s(
    spec: PipelineSpec, x: np.ndarray, b_inter: float, gpus_per_server: float
) -> np.ndarray:
    """Eq. (6), first case, under ``spec.reading.allreduce``, for every ``x``, seconds.

    Parameters
    ----------
    spec
        The job's stage profile, replicas and reading.
    x
        Replicas of each stage on a server, any shape ending in ``S`` (values ``> 0`` where
        the result is used).
    b_inter
        NIC bandwidth :math:`B_{inter}`, bytes/s.
    gpus_per_server
        GPUs per server ``g``.

    Returns
    -------
    numpy.ndarray
        ``x``'s shape: :math:`2g(k_s-1)h_s/(k_s B_{inter})` (``"share"``, independent of
        ``x``) or :math:`2(k_s-1)h_s/(x B_{inter})` (``"literal"``; ``inf`` where ``x = 0``).
    """
    k = spec.replicas.astype(np.float64)
    ring = 2.0 * (k - 1.0) * spec.param_bytes
    xf = np.asarray(x, dtype=np.float64)
    if spec.reading.allreduce == "share":
        out: np.ndarray = np.broadcast_to(ring * gpus_per_server / (k * b_inter), xf.shape)
        return out
    with np.errstate(divide="ignore", invalid="ignore"):
        lit: np.ndarray = np.where(xf > 0, ring / (np.maximum(xf, 1.0) * b_inter), np.inf)
    return lit


def iteration_time(
    spec: PipelineSpec,
    alloc_per_server: np.ndarray,
    nic_gbps: float,
    intra_gbyte_s: float,
    gpus_per_server: int,
) -> float:
    """Per-iteration training time :math:`\\alpha` of an allocation (eq. 7).

    Parameters
    ----------
    spec
        The job's stage profile and replica counts.
    alloc_per_server
        ``(M, S)`` integer array of replicas per server and stage (:math:`x_s^m`).
    nic_gbps
        Server NIC bandwidth :math:`B_{inter}`, Gbit/s.
    intra_gbyte_s
        Intra-server GPU bandwidth :math:`B_{intra}`, GByte/s.
    gpus_per_server
        GPUs per server ``g``.

    Returns
    -------
    float
        Seconds per iteration: the bottleneck :math:`\\max_{m,s}\\beta_s^m`.
    """
    beta = stage_server_times(spec, alloc_per_server, nic_gbps, intra_gbyte_s, gpus_per_server)
    return float(beta.max())


def alpha_max(
    spec: PipelineSpec, nic_gbps: float, intra_gbyte_s: float, gpus_per_server: int
) -> float:
    """Worst-case per-iteration time :math:`\\alpha^{max}` (Sec. III-B).

    Eq. (7) with the job spread over :math:`g_i` servers, one replica each, every replica
    holding the NIC share :math:`B_{inter}/g` (under the ``"literal"`` AllReduce reading,
    eq. 6 with :math:`x_s^m = 1` gives a lone replica the whole :math:`B_{inter}` for its
    AllReduce, :math:`2(k_s-1)h_s/B_{inter}`).

    Parameters
    ----------
    spec
        The job's stage profile and replica counts.
    nic_gbps
        Server NIC bandwidth, Gbit/s.
    intra_gbyte_s
        Intra-server GPU bandwidth, GByte/s (used only when ``k_s = 1`` is "all together").
    gpus_per_server
        GPUs per server ``g``.

    Returns
    -------
    float
        Seconds per iteration.
    """
    stage_of_gpu = np.repeat(np.arange(spec.n_stages), spec.replicas)
    x = np.zeros((spec.n_gpus, spec.n_stages), dtype=np.int64)
    x[np.arange(spec.n_gpus), stage_of_gpu] = 1
    return iteration_time(spec, x, nic_gbps, intra_gbyte_s, gpus_per_server)


def consolidated_servers(n_gpus: int, gpus_per_server: int) -> np.ndarray:
    """Free-GPU counts of the fewest servers that hold ``n_gpus`` (Sec. IV-B, last paragraph).

    Servers :math:`m_1 .. m_{|M_i|-1}` contribute all ``g`` GPUs, the last one ``g' <= g``.

    Parameters
    ----------
    n_gpus
        GPUs the job needs, ``>= 1``.
    gpus_per_server
        GPUs per server ``g``, ``>= 1``.

    Returns
    -------
    numpy.ndarray
        int64 counts, e.g. ``[8, 8, 3]`` for 19 GPUs on 8-GPU servers.
    """
    if n_gpus < 1 or gpus_per_server < 1:
        raise ValueError(
            f"need n_gpus >= 1 and gpus_per_server >= 1, got {n_gpus}, {gpus_per_server}"
        )
    full, rest = divmod(int(n_gpus), int(gpus_per_server))
    counts = [gpus_per_server] * full + ([rest] if rest else [])
    return np.array(counts, dtype=np.int64)
