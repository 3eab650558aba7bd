"""The exact GPU mapping of a mixed-parallel job, to compare Heavy-Edge with (Table II).

From Z. Luo, J. Liu, M. Lee and N. B. Shroff,
"Prediction-Assisted Online Distributed Deep Learning Workload Scheduling in GPU Clusters"
(A-SRPT), IEEE INFOCOM 2025, arXiv:2501.05563. The exact mapping minimises eq. (7) subject
to eq. (2)-(3) as an integer program, standing in for the paper's ILP "based on [47]" solved
with Gurobi (Sec. V-B 2-e, Table II); here it is solved with ``scipy.optimize.milp`` (HiGHS).

Heavy-Edge itself is part of the pipeline job model: :mod:`gpusched.jobmodels.heavy_edge`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from gpusched.jobmodels.heavy_edge import (
    AllReduceKind,
    GpuMapping,
    SelectKind,
    heavy_edge,
)
from gpusched.jobmodels.pipeline import (
    PipelineSpec,
    allreduce_inter_s,
    inter_bytes_per_s,
    intra_bytes_per_s,
    iteration_time,
)

__all__ = ["MappingComparison", "compare_with_optimal", "optimal_mapping"]


@dataclass(frozen=True, slots=True)
class MappingComparison:
    """Heavy-Edge against the MILP optimum on one case (cf. Table II: PITT and PCT).

    Attributes
    ----------
    heavy_edge_s
        Per-iteration time of the Heavy-Edge mapping, seconds.
    optimal_s
        Per-iteration time of the optimal mapping, seconds.
    gap
        ``heavy_edge_s / optimal_s - 1`` (0.06 = Heavy-Edge 6 % slower).
    heavy_edge_wall_s
        Wall-clock seconds Heavy-Edge took (server selection + mapping).
    optimal_wall_s
        Wall-clock seconds the MILP took.
    """

    heavy_edge_s: float
    optimal_s: float
    gap: float
    heavy_edge_wall_s: float
    optimal_wall_s: float


def _allreduce_lines(
    spec: PipelineSpec, s: int, b_inter: float, g: float, scale: float
) -> list[tuple[float, float, float]]:
    """Lines ``(c0, c1, L(k))`` whose maximum is eq. (6)'s first case at x = 1 .. k-1.

    The term is constant (``"share"``) or convex in ``x`` (``"literal"``, :math:`c/x`); the
    secants through consecutive integers then bound it from below and their maximum equals it
    at every integer ``x`` (a convex function lies above the secant outside its interval).
    ``L(k)`` is each line at ``x = k``, cancelled by the binary ``z = [x = k]``.
    """
    k = int(spec.replicas[s])
    pts = np.arange(1, max(k, 2), dtype=np.int64)  # x = 1 .. k-1 (just 1 when k = 1)
    f = allreduce_inter_s(spec, np.outer(pts, np.ones(spec.n_stages)), b_inter, g)[:, s] * scale
    if k <= 1:
        return [(0.0, 0.0, 0.0)]
    if len(pts) == 1 or np.all(f == f[0]):
        return [(float(f[0]), 0.0, float(f[0]))]
    out = []
    for j in range(len(pts) - 1):
        c1 = float(f[j + 1] - f[j])
        c0 = float(f[j] - c1 * pts[j])
        out.append((c0, c1, c0 + c1 * k))
    return out


def optimal_mapping(
    spec: PipelineSpec,
    free_per_server: np.ndarray,
    nic_gbps: float,
    intra_gbyte_s: float,
    gpus_per_server: int,
    *,
    exact: bool = False,
    time_limit_s: float = 60.0,
) -> tuple[GpuMapping, float]:
    """Mapping minimising eq. (7) exactly, by mixed-integer programming (small cases).

    Variables per server ``m`` and stage ``s``: integer :math:`x_s^m`, binaries
    :math:`y_s^m = [x_s^m > 0]` and :math:`z_s^m = [x_s^m = k_s]`, plus :math:`\\alpha`.
    Minimise :math:`\\alpha` subject to

    * :math:`\\sum_m x_s^m = k_s` (eq. 2), :math:`\\sum_s x_s^m \\le` free GPUs of ``m``
      (eq. 3; ``=`` when ``exact``);
    * :math:`x \\le k y`, :math:`y \\le x`, :math:`k z \\le x`, :math:`x \\le k - 1 + z`;
    * :math:`\\alpha \\ge comp_s + comm_s^m(x) + L(x) - L(k_s) z + AR^{intra}_s z -
      U_s (1 - y)` for every line :math:`L` of eq. (6)'s first case (one constant line under
      the ``"share"`` reading; under ``"literal"``, :math:`c/x` is convex and the secants
      through consecutive integers are exact there), where eq. (5) is linear in the
      neighbours' :math:`x` once :math:`x_s^m > 0` and :math:`U_s` is an upper bound of the
      other terms.

    Parameters
    ----------
    spec
        The job's stage profile and replica counts.
    free_per_server
        ``(M,)`` free GPUs per server.
    nic_gbps
        Server NIC bandwidth, Gbit/s.
    intra_gbyte_s
        Intra-server GPU bandwidth, GByte/s.
    gpus_per_server
        GPUs per server ``g``.
    exact
        Use every free GPU (the servers and counts are fixed, only the stage mix varies).
    time_limit_s
        HiGHS time limit, seconds.

    Returns
    -------
    tuple of (GpuMapping, float)
        The optimal mapping (``vertex_server`` numbers replicas within each stage by server)
        and its eq. (7) time in seconds, recomputed with :func:`iteration_time`.

    Raises
    ------
    ValueError
        If the case is infeasible or HiGHS finds no solution within the time limit.
    TimeoutError
        If HiGHS stops at the time limit with a solution it has not proven optimal.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp  # heavy: import on use
    from scipy.sparse import lil_matrix

    free = np.asarray(free_per_server, dtype=np.int64)
    n_m, n_s = free.shape[0], spec.n_stages
    k = spec.replicas.astype(np.float64)
    g = float(gpus_per_server)
    b_inter, b_intra = inter_bytes_per_s(nic_gbps), intra_bytes_per_s(intra_gbyte_s)
    scale = 1e3  # work in milliseconds for solver tolerances
    comp = (spec.p_f + spec.p_b) * scale
    two_din, two_dout = 2.0 * spec.d_in, 2.0 * spec.d_out
    # comm_s^m = a_s + bp_s x_{s-1}^m + bn_s x_{s+1}^m when x_s^m > 0 (eq. 5, x cancels)
    a = (two_din + two_dout) * g / b_inter * scale
    bp = np.zeros(n_s)
    bn = np.zeros(n_s)
    bp[1:] = two_din[1:] / k[:-1] * (1.0 / b_intra - g / b_inter) * scale
    bn[:-1] = two_dout[:-1] / k[1:] * (1.0 / b_intra - g / b_inter) * scale
    ar = 2.0 * (k - 1.0) * spec.param_bytes / k
    ar_intra = ar / b_intra * scale
    lines = [_allreduce_lines(spec, s, b_inter, g, scale) for s in range(n_s)]
    comm_hi = a + np.maximum(bp, 0) * np.roll(k, 1) + np.maximum(bn, 0) * np.roll(k, -1)
    c0_hi = np.array([max(c0 for c0, _, _ in ln) for ln in lines])
    big = comp + comm_hi + np.maximum(c0_hi, ar_intra) + 1.0

    n_var = 3 * n_m * n_s + 1

    def xi(m: int, s: int) -> int:
        return 3 * (m * n_s + s)

    n_rows = n_s + n_m + n_m * sum(4 + len(ln) for ln in lines)
    a_mat = lil_matrix((n_rows, n_var))
    lo: list[float] = []
    hi: list[float] = []
    row = 0
    for s in range(n_s):  # eq. (2)
        for m in range(n_m):
            a_mat[row, xi(m, s)] = 1.0
        lo.append(k[s])
        hi.append(k[s])
        row += 1
    for m in range(n_m):  # eq. (3)
        for s in range(n_s):
            a_mat[row, xi(m, s)] = 1.0
        lo.append(float(free[m]) if exact else 0.0)
        hi.append(float(free[m]))
        row += 1
    for m in range(n_m):
        for s in range(n_s):
            x, y, z = xi(m, s), xi(m, s) + 1, xi(m, s) + 2
            for coefs, ub in (
                ({x: 1.0, y: -k[s]}, 0.0),  # x <= k y
                ({y: 1.0, x: -1.0}, 0.0),  # y <= x
                ({z: k[s], x: -1.0}, 0.0),  # k z <= x
                ({x: 1.0, z: -1.0}, k[s] - 1.0),  # x <= k - 1 + z
            ):
                for c, v in coefs.items():
                    a_mat[row, c] = v
                lo.append(-np.inf)
                hi.append(ub)
                row += 1
            # eq. (6) first case >= each line L(x) = c0 + c1 x (exact at integer x):
            # bp x_{s-1} + bn x_{s+1} + c1 x - (L(k) - AR_intra) z + U y - alpha
            #   <= U - comp - a - c0
            for c0, c1, at_k in lines[s]:
                if s > 0:
                    a_mat[row, xi(m, s - 1)] = bp[s]
                if s < n_s - 1:
                    a_mat[row, xi(m, s + 1)] = bn[s]
                if c1 != 0.0:
                    a_mat[row, x] = c1
                a_mat[row, z] = -(at_k - ar_intra[s])
                a_mat[row, y] = big[s]
                a_mat[row, n_var - 1] = -1.0
                lo.append(-np.inf)
                hi.append(big[s] - comp[s] - a[s] - c0)
                row += 1
    ub = np.empty(n_var)
    for m in range(n_m):
        for s in range(n_s):
            ub[xi(m, s)] = min(k[s], float(free[m]))
            ub[xi(m, s) + 1] = 1.0
            ub[xi(m, s) + 2] = 1.0
    ub[-1] = np.inf
    integrality = np.ones(n_var)
    integrality[-1] = 0
    cost = np.zeros(n_var)
    cost[-1] = 1.0
    res = milp(
        cost,
        constraints=LinearConstraint(a_mat.tocsr(), lo, hi),
        integrality=integrality,
        bounds=Bounds(np.zeros(n_var), ub),
        options={"time_limit": time_limit_s, "mip_rel_gap": 1e-9, "disp": False},
    )
    if res.x is None:
        raise ValueError(f"optimal_mapping: no solution ({res.message})")
    if res.status != 0:
        # a time-limited incumbent is not an optimum: never report it as one
        raise TimeoutError(
            f"optimal_mapping: not proven optimal within {time_limit_s} s ({res.message}); "
            "raise time_limit_s or use a smaller case"
        )
    alloc = np.rint(res.x[:-1].reshape(n_m, n_s, 3)[:, :, 0]).astype(np.int64)
    server_of = np.concatenate([np.repeat(np.arange(n_m), alloc[:, s]) for s in range(n_s)]).astype(
        np.int64
    )
    mapping = GpuMapping(alloc=alloc, vertex_server=server_of)
    return mapping, iteration_time(spec, alloc, nic_gbps, intra_gbyte_s, gpus_per_server)


def compare_with_optimal(
    spec: PipelineSpec,
    free_per_server: np.ndarray,
    nic_gbps: float,
    intra_gbyte_s: float,
    gpus_per_server: int,
    *,
    select: SelectKind = "most",
    same_servers: bool = True,
    allreduce: AllReduceKind = "ring",
    time_limit_s: float = 60.0,
) -> MappingComparison:
    """Heavy-Edge vs. the MILP optimum on one case (the measurement of Table II).

    Parameters
    ----------
    spec
        The job's stage profile and replica counts.
    free_per_server
        ``(M,)`` free GPUs per server.
    nic_gbps
        Server NIC bandwidth, Gbit/s.
    intra_gbyte_s
        Intra-server GPU bandwidth, GByte/s.
    gpus_per_server
        GPUs per server ``g``.
    select
        Heavy-Edge's server selection, see :func:`select_servers`.
    same_servers
        Give the MILP only the GPUs Heavy-Edge selected (the default: compares the mapping
        step, as Table II does); ``False`` lets it use any free GPU, so the gap also
        includes Heavy-Edge's server selection.
    allreduce
        AllReduce edge weights used by Heavy-Edge.
    time_limit_s
        MILP time limit, seconds.

    Returns
    -------
    MappingComparison
        Both per-iteration times, the gap and both wall-clock times.
    """
    t0 = time.perf_counter()
    he = heavy_edge(spec, free_per_server, select=select, allreduce=allreduce)
    t1 = time.perf_counter()
    he_s = iteration_time(spec, he.alloc, nic_gbps, intra_gbyte_s, gpus_per_server)
    space = he.gpus_per_server if same_servers else np.asarray(free_per_server)
    t2 = time.perf_counter()
    _, opt_s = optimal_mapping(
        spec,
        space,
        nic_gbps,
        intra_gbyte_s,
        gpus_per_server,
        exact=same_servers,
        time_limit_s=time_limit_s,
    )
    t3 = time.perf_counter()
    return MappingComparison(
        heavy_edge_s=he_s,
        optimal_s=opt_s,
        gap=he_s / opt_s - 1.0 if opt_s > 0 else 0.0,
        heavy_edge_wall_s=t1 - t0,
        optimal_wall_s=t3 - t2,
    )
