"""Eq. (4)-(7) of the A-SRPT paper (Luo et al., INFOCOM 2025, Sec. III-B), checked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from gpusched.jobmodels.pipeline import (
    alpha_max,
    consolidated_servers,
    inter_bytes_per_s,
    intra_bytes_per_s,
    iteration_time,
    pipeline_spec,
    stage_server_times,
)

# Units chosen for easy arithmetic: 8 Gbit/s NIC = 1e9 B/s, 10 GB/s intra = 1e10 B/s, g = 4.
NIC, INTRA, G = 8.0, 10.0, 4


def two_stage():
    # Stage 1: 2 replicas, stage 2: 1 replica. Whole-mini-batch numbers:
    # fwd = [0.2, 0.1] s, bwd = [0.4, 0.2] s, stage-1 -> stage-2 activations 4e8 B,
    # parameters h = [1e9, 5e8] B.
    # Per-replica (paper symbols): p^f = [0.2/2, 0.1/1] = [0.1, 0.1], p^b = [0.2, 0.2],
    # d^out_1 = 4e8 / 2 = 2e8 B, d^in_2 = 4e8 / 1 = 4e8 B.
    return pipeline_spec([0.2, 0.1], [0.4, 0.2], [4e8, 0.0], [1e9, 5e8], [2, 1])


def test_units():
    assert inter_bytes_per_s(NIC) == 1e9
    assert intra_bytes_per_s(INTRA) == 1e10


def test_paper_symbols_identity():
    spec = two_stage()
    np.testing.assert_allclose(spec.p_f, [0.1, 0.1])
    np.testing.assert_allclose(spec.p_b, [0.2, 0.2])
    np.testing.assert_allclose(spec.d_out, [2e8, 0.0])
    np.testing.assert_allclose(spec.d_in, [0.0, 4e8])
    # 2 d^out_{s-1} / k_s == 2 d^in_s / k_{s-1}  (Sec. III-B)
    assert 2 * spec.d_out[0] / 1 == 2 * spec.d_in[1] / 2


def test_two_stage_consolidated_by_hand():
    spec = two_stage()
    x = np.array([[2, 1]])  # everything on one server
    # beta_1: comp = 0.1 + 0.2 = 0.3 (eq. 4)
    #         comm: stage 2 all local, intra = 2 * 2e8 * (1/1) / 1e10 = 0.04, inter = 0 (eq. 5)
    #         AllReduce: x = k = 2, 2 * (2-1) * 1e9 / (2 * 1e10) = 0.1 (eq. 6, 2nd case)
    #         -> 0.44
    # beta_2: comp 0.3 + intra 2 * 4e8 * (2/2) / 1e10 = 0.08 + AllReduce 0 (k = 1) -> 0.38
    beta = stage_server_times(spec, x, NIC, INTRA, G)
    np.testing.assert_allclose(beta, [[0.44, 0.38]])
    assert iteration_time(spec, x, NIC, INTRA, G) == pytest.approx(0.44)  # eq. 7


def test_two_stage_split_by_hand():
    spec = two_stage()
    x = np.array([[1, 1], [1, 0]])  # server 0: one stage-1 and the stage-2 replica
    # server 0, stage 1: comp 0.3; next stage local: intra 2 * 2e8 / 1e10 = 0.04;
    #   AllReduce over the NIC: 2 * 1 * 1e9 / 2 = 1e9 B per replica / (1e9 / 4) = 4.0 -> 4.34
    # server 0, stage 2: comp 0.3; half of stage 1 remote:
    #   inter 2 * 4e8 * (1/2) = 4e8 B / (1e9 / 4) = 1.6, intra 2 * 4e8 * (1/2) / 1e10 = 0.04
    #   -> 1.94
    # server 1, stage 1: comp 0.3; stage 2 remote: 2 * 2e8 * 1 B / (1e9 / 4) = 1.6;
    #   AllReduce 4.0 -> 5.9
    beta = stage_server_times(spec, x, NIC, INTRA, G)
    np.testing.assert_allclose(beta, [[4.34, 1.94], [5.9, 0.0]])
    assert iteration_time(spec, x, NIC, INTRA, G) == pytest.approx(5.9)


def test_alpha_max_by_hand():
    spec = two_stage()
    # one replica per server: stage-1 replicas 0.3 + 1.6 + 4.0 = 5.9;
    # stage 2: 0.3 + 2 * 4e8 * 1 * 4 / 1e9 = 3.2 -> 3.5
    assert alpha_max(spec, NIC, INTRA, G) == pytest.approx(5.9)


def test_single_gpu_is_compute_only():
    spec = pipeline_spec([0.25], [0.5], [123.0], [1e12], [1])
    # k = 1: no neighbours, AllReduce 2 (k-1) h / k = 0 -> alpha = fwd + bwd
    assert iteration_time(spec, np.array([[1]]), NIC, INTRA, G) == pytest.approx(0.75)
    assert alpha_max(spec, NIC, INTRA, G) == pytest.approx(0.75)


def test_pure_data_parallel():
    spec = pipeline_spec([0.4], [0.8], [0.0], [1e9], [4])
    # comp = 1.2 / 4 = 0.3; AllReduce data 2 * 3 / 4 * 1e9 = 1.5e9 B per replica
    # one server: 1.5e9 / 1e10 = 0.15 -> 0.45
    assert iteration_time(spec, np.array([[4]]), NIC, INTRA, G) == pytest.approx(0.45)
    # two servers: 1.5e9 / (1e9 / 4) = 6.0 -> 6.3
    assert iteration_time(spec, np.array([[2], [2]]), NIC, INTRA, G) == pytest.approx(6.3)
    # servers without replicas do not count
    assert iteration_time(spec, np.array([[0], [4], [0]]), NIC, INTRA, G) == pytest.approx(0.45)


def test_rejects_bad_allocation():
    spec = two_stage()
    with pytest.raises(ValueError, match="column sums"):
        iteration_time(spec, np.array([[1, 1]]), NIC, INTRA, G)
    with pytest.raises(ValueError, match="shape"):
        iteration_time(spec, np.array([2, 1]), NIC, INTRA, G)
    with pytest.raises(ValueError, match="replica"):
        pipeline_spec([1.0], [1.0], [0.0], [0.0], [0])


def test_consolidated_servers():
    assert consolidated_servers(19, 8).tolist() == [8, 8, 3]
    assert consolidated_servers(16, 8).tolist() == [8, 8]
    assert consolidated_servers(1, 8).tolist() == [1]
