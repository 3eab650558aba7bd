"""Heavy-Edge: how a pipeline job's stage replicas are laid on the servers it is given.

Implements Section IV-B ("The Heavy-Edge GPU Mapping Algorithm", Fig. 2) and the
:math:`\\tilde\\alpha^{min}` estimate at its end, of Z. Luo, J. Liu, M. Lee and N. B. Shroff,
"Prediction-Assisted Online Distributed Deep Learning Workload Scheduling in GPU Clusters"
(A-SRPT), IEEE INFOCOM 2025, arXiv:2501.05563. It belongs to the job model: a pipeline job's
iteration time (eq. 7) depends on where its replicas run, and every policy's starts are
mapped this way (:mod:`gpusched.jobmodels.pipeline_jobs`). The exact mapping it is compared
with (Table II) is :mod:`gpusched.algorithms.exact_mapping`.

The job graph :math:`\\Omega = (V, E)` (Sec. IV-B): one vertex per stage replica, numbered
stage-major (stage 0's replicas first). Edge weights are bytes per iteration:

* inter-stage, every replica pair of stages ``s-1`` and ``s``:
  :math:`2d_{s-1}^{out}/k_s = 2d_s^{in}/k_{s-1}`;
* intra-stage AllReduce, ring (RAR): a ring over the replicas, each edge
  :math:`2(k_s-1)h_s/k_s`; tree (TAR): the edges of two binary trees, each
  :math:`(k_s-1)h_s/k_s` (an edge in both trees carries both weights).

:math:`d^{out}` follows the spec's batch reading (:class:`~gpusched.jobmodels.pipeline.Reading`);
the AllReduce edges are the paper's per-replica data under either eq. (6) reading, which
changes only the time those bytes take. The MILP and every time here use the spec's reading.

Heavy-Edge, step by step as in Sec. IV-B:

1. Sort the job's servers by available GPUs, descending (ties: lower server index first).
2. For each server ``m`` in that order, with ``node_set`` empty:
   a. if the unassigned vertices exactly fill ``m``, assign them all;
   b. else if ``m`` has a single GPU, assign the unassigned vertex with the minimum total
      edge weight (to the still-unassigned vertices: edges to already placed vertices are
      cut whatever we choose);
   c. else repeatedly add the endpoint of the heaviest edge between ``node_set`` and the
      unassigned vertices; when ``node_set`` is empty, seed it with both ends of the
      heaviest edge among unassigned vertices (the Fig. 2 walk-through); if no connecting
      edge exists, add an unassigned vertex at random (``rng``), or the lowest-numbered one
      when no ``rng`` is given. Stop when ``node_set`` fills ``m``.

Ties between equally heavy edges go to the lowest vertex numbers (deterministic).
Server selection (which servers form :math:`\\mathcal{M}_i`) follows Algorithm 1: lines 9
("servers with most available GPUs") and 22 ("servers with least available GPUs").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from gpusched.jobmodels.pipeline import (
    PipelineSpec,
    consolidated_servers,
    iteration_time,
)

__all__ = [
    "AllReduceKind",
    "GpuMapping",
    "SelectKind",
    "alpha_min_estimate",
    "heavy_edge",
    "heavy_edge_partition",
    "job_graph",
    "select_servers",
    "vertex_stages",
]

AllReduceKind = Literal["ring", "tree"]
SelectKind = Literal["fewest", "most", "least", "exact"]


@dataclass(frozen=True, slots=True)
class GpuMapping:
    """Where a job's stage replicas run.

    Attributes
    ----------
    alloc
        ``(M, S)`` int64; ``alloc[m, s]`` replicas of stage ``s`` on server ``m``
        (the paper's :math:`x_s^m`), over all ``M`` servers of ``free_per_server``.
    vertex_server
        ``(V,)`` int64 server of each stage replica (vertices numbered stage-major).
    """

    alloc: np.ndarray
    vertex_server: np.ndarray

    @property
    def gpus_per_server(self) -> np.ndarray:
        """``(M,)`` GPUs the job uses on each server."""
        per_server: np.ndarray = self.alloc.sum(axis=1)
        return per_server


def vertex_stages(spec: PipelineSpec) -> np.ndarray:
    """Stage index of every vertex (stage replica), stage-major.

    Parameters
    ----------
    spec
        The job's stage profile and replica counts.
    """
    return np.repeat(np.arange(spec.n_stages), spec.replicas)


def _tree_edges(n: int) -> set[tuple[int, int]]:
    # Binary heap tree over ranks 0..n-1 (parent of r is (r-1)//2), and the same tree over
    # the mirrored ranks n-1-r, as NCCL's double binary tree pairs a tree with its mirror.
    edges: set[tuple[int, int]] = set()
    for r in range(1, n):
        p = (r - 1) // 2
        edges.add((min(r, p), max(r, p)))
    return edges


def job_graph(spec: PipelineSpec, allreduce: AllReduceKind = "ring") -> np.ndarray:
    """Weighted job graph :math:`\\Omega` of Sec. IV-B as a dense symmetric matrix.

    Parameters
    ----------
    spec
        The job's stage profile and replica counts.
    allreduce
        ``"ring"`` (RAR: ring edges of weight :math:`2(k-1)h/k`) or ``"tree"`` (TAR: double
        binary tree edges of weight :math:`(k-1)h/k`).

    Returns
    -------
    numpy.ndarray
        ``(V, V)`` float64, bytes per iteration between two replicas; zero diagonal.
    """
    k = spec.replicas
    offs = np.concatenate([[0], np.cumsum(k)])
    n_v = int(offs[-1])
    w = np.zeros((n_v, n_v))
    d_out = spec.d_out
    for s in range(1, spec.n_stages):
        # 2 d_{s-1}^out / k_s for each replica pair of stages s-1 and s
        w[offs[s - 1] : offs[s], offs[s] : offs[s + 1]] = 2.0 * d_out[s - 1] / k[s]
    for s in range(spec.n_stages):
        ks = int(k[s])
        if ks < 2:
            continue
        if allreduce == "ring":
            weight = 2.0 * (ks - 1) * spec.param_bytes[s] / ks
            pairs = {(min(r, (r + 1) % ks), max(r, (r + 1) % ks)) for r in range(ks)}
            for a, b in pairs:
                w[offs[s] + a, offs[s] + b] += weight
        elif allreduce == "tree":
            weight = (ks - 1) * spec.param_bytes[s] / ks
            first = _tree_edges(ks)
            mirrored = {(ks - 1 - b, ks - 1 - a) for a, b in first}
            for tree in (first, mirrored):
                for a, b in tree:
                    w[offs[s] + a, offs[s] + b] += weight
        else:
            raise ValueError(f"allreduce must be 'ring' or 'tree', got {allreduce!r}")
    return np.maximum(w, w.T)


def select_servers(
    free_per_server: np.ndarray, n_gpus: int, order: SelectKind = "most"
) -> np.ndarray:
    """Choose how many GPUs to take from each server (the set :math:`\\mathcal{M}_i`).

    Parameters
    ----------
    free_per_server
        ``(M,)`` free GPUs per server.
    n_gpus
        GPUs the job needs, :math:`g_i`.
    order
        ``"most"``: fill servers with the most free GPUs first (Alg. 1 line 9; on an idle
        cluster this is the fewest-servers consolidation of Sec. IV-B). ``"least"``: fill
        servers with the fewest (non-zero) free GPUs first (Alg. 1 line 22). ``"fewest"``:
        the fewest servers, best fit: the server with the fewest free GPUs that still
        holds the whole job, else ``"most"`` (the engine's default placement,
        :func:`gpusched.core.kernel.place_consolidated`). ``"exact"``: take
        ``free_per_server`` as is (it must sum to ``n_gpus``). Ties: lower index first.

    Returns
    -------
    numpy.ndarray
        ``(M,)`` int64 GPUs taken per server, summing to ``n_gpus``.

    Raises
    ------
    ValueError
        If fewer than ``n_gpus`` GPUs are free (or, for ``"exact"``, the sum differs).
    """
    free = np.asarray(free_per_server, dtype=np.int64)
    if free.ndim != 1 or (free < 0).any():
        raise ValueError("free_per_server must be a 1-D array of counts >= 0")
    if order == "exact":
        if int(free.sum()) != n_gpus:
            raise ValueError(f"'exact' needs free GPUs summing to {n_gpus}, got {int(free.sum())}")
        return free.copy()
    if int(free.sum()) < n_gpus:
        raise ValueError(f"need {n_gpus} GPUs, only {int(free.sum())} free")
    if order == "fewest":
        fits = np.flatnonzero(free >= n_gpus)
        if fits.size:  # one server: best fit, argmin takes the lowest index on ties
            take = np.zeros_like(free)
            take[fits[np.argmin(free[fits])]] = n_gpus
            return take
        order = "most"
    if order == "most":
        ranked = np.argsort(-free, kind="stable")
    elif order == "least":
        ranked = np.argsort(np.where(free > 0, free, np.iinfo(np.int64).max), kind="stable")
    else:
        raise ValueError(f"order must be 'fewest', 'most', 'least' or 'exact', got {order!r}")
    take = np.zeros_like(free)
    need = int(n_gpus)
    for m in ranked:
        if need == 0:
            break
        t = min(int(free[m]), need)
        take[m] = t
        need -= t
    return take


def heavy_edge_partition(
    weights: np.ndarray, sizes: np.ndarray, rng: np.random.Generator | None = None
) -> np.ndarray:
    """Partition a weighted graph into servers of given sizes with Heavy-Edge (Sec. IV-B).

    Parameters
    ----------
    weights
        ``(V, V)`` symmetric non-negative edge weights, bytes per iteration.
    sizes
        ``(M,)`` GPUs to fill on each server (:math:`g_m`), summing to ``V``.
    rng
        Used only when no edge connects ``node_set`` to an unassigned vertex (the paper's
        random choice); ``None`` takes the lowest-numbered unassigned vertex.

    Returns
    -------
    numpy.ndarray
        ``(V,)`` int64 server index of each vertex.
    """
    w = np.asarray(weights, dtype=np.float64)
    sizes = np.asarray(sizes, dtype=np.int64)
    n_v = w.shape[0]
    if int(sizes.sum()) != n_v:
        raise ValueError(f"server sizes sum to {int(sizes.sum())}, graph has {n_v} vertices")
    server_of = np.full(n_v, -1, dtype=np.int64)
    unassigned = np.ones(n_v, dtype=bool)

    def pick_any() -> int:
        idx = np.flatnonzero(unassigned)
        return int(idx[0] if rng is None else rng.choice(idx))

    # Step 1: servers by available GPUs, descending; stable so ties keep index order.
    for m in np.argsort(-sizes, kind="stable"):
        g_m = int(sizes[m])
        if g_m == 0:
            continue
        n_left = int(unassigned.sum())
        if n_left == g_m:  # case 1: the rest fills this server exactly
            server_of[unassigned] = m
            unassigned[:] = False
            continue
        if g_m == 1:  # case 2: the vertex with the least total weight to unassigned ones
            total = np.where(unassigned, w[:, unassigned].sum(axis=1), np.inf)
            v = int(np.argmin(total))
            server_of[v] = m
            unassigned[v] = False
            continue
        # case 3: grow node_set along heaviest edges.
        placed = 0
        conn = np.zeros(n_v)  # heaviest edge from node_set to each vertex
        while placed < g_m:
            if placed == 0:
                sub = np.where(np.outer(unassigned, unassigned), np.triu(w, 1), 0.0)
                if sub.max() > 0.0 and g_m - placed >= 2:
                    a, b = np.unravel_index(int(np.argmax(sub)), sub.shape)
                    new = [int(a), int(b)]
                else:
                    new = [pick_any()]
            else:
                cand = np.where(unassigned, conn, -1.0)
                best = int(np.argmax(cand))
                new = [best] if cand[best] > 0.0 else [pick_any()]
            for v in new:
                server_of[v] = m
                unassigned[v] = False
                conn = np.maximum(conn, w[v])
                placed += 1
    return server_of


def _alloc_from_vertices(
    server_of: np.ndarray, stage_of: np.ndarray, n_servers: int, n_stages: int
) -> np.ndarray:
    alloc = np.zeros((n_servers, n_stages), dtype=np.int64)
    np.add.at(alloc, (server_of, stage_of), 1)
    return alloc


def heavy_edge(
    spec: PipelineSpec,
    free_per_server: np.ndarray,
    *,
    select: SelectKind = "most",
    allreduce: AllReduceKind = "ring",
    rng: np.random.Generator | None = None,
) -> GpuMapping:
    """Map a job's stage replicas onto free GPUs with Heavy-Edge (Sec. IV-B, Fig. 2).

    Parameters
    ----------
    spec
        The job's stage profile and replica counts (:math:`g_i` = ``spec.n_gpus`` GPUs).
    free_per_server
        ``(M,)`` free GPUs per server.
    select
        How the servers :math:`\\mathcal{M}_i` are chosen, see :func:`select_servers`.
    allreduce
        ``"ring"`` or ``"tree"`` edge weights for the AllReduce edges.
    rng
        Random choice when no edge connects; ``None`` is deterministic.

    Returns
    -------
    GpuMapping
        Replicas per server and stage; never more than ``free_per_server[m]`` on server ``m``.
    """
    take = select_servers(free_per_server, spec.n_gpus, select)
    server_of = heavy_edge_partition(job_graph(spec, allreduce), take, rng)
    stage_of = vertex_stages(spec)
    alloc = _alloc_from_vertices(server_of, stage_of, take.shape[0], spec.n_stages)
    return GpuMapping(alloc=alloc, vertex_server=server_of)


def alpha_min_estimate(
    spec: PipelineSpec,
    nic_gbps: float,
    intra_gbyte_s: float,
    gpus_per_server: int,
    allreduce: AllReduceKind = "ring",
) -> float:
    """Estimated ideal per-iteration time :math:`\\tilde\\alpha^{min}` (end of Sec. IV-B).

    The job gets the fewest servers (``g`` GPUs each, the last ``g' <= g``), Heavy-Edge maps
    it and eq. (7) gives the time.

    Parameters
    ----------
    spec
        The job's stage profile and replica counts.
    nic_gbps
        Server NIC bandwidth, Gbit/s.
    intra_gbyte_s
        Intra-server GPU bandwidth, GByte/s.
    gpus_per_server
        GPUs per server ``g``.
    allreduce
        AllReduce edge weights used by Heavy-Edge.

    Returns
    -------
    float
        Seconds per iteration.
    """
    servers = consolidated_servers(spec.n_gpus, gpus_per_server)
    mapping = heavy_edge(spec, servers, select="exact", allreduce=allreduce)
    return iteration_time(spec, mapping.alloc, nic_gbps, intra_gbyte_s, gpus_per_server)
