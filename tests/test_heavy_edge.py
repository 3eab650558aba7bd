"""Heavy-Edge GPU mapping (A-SRPT paper, Sec. IV-B, Fig. 2) and the exact MILP mapping."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusched.algorithms.exact_mapping import compare_with_optimal, optimal_mapping
from gpusched.jobmodels.heavy_edge import alpha_min_estimate, heavy_edge, job_graph, select_servers
from gpusched.jobmodels.pipeline import alpha_max, iteration_time, pipeline_spec
from tests.helpers import brute_force_mapping

MB = 1e6
NIC, INTRA, G = 10.0, 300.0, 8


def fig2_spec():
    # Fig. 2: three stages, two replicas each. Stage-1 AllReduce edge 2 (2-1) h_1 / 2 = 20 MB;
    # inter-stage edges 2 d^out / k = 2 * (2 MB / 2) / 2 = 1 MB per replica pair.
    return pipeline_spec(
        [0.01] * 3, [0.02] * 3, [2 * MB, 2 * MB, 0.0], [20 * MB, 4 * MB, 4 * MB], [2, 2, 2]
    )


def test_fig2_graph_weights():
    w = job_graph(fig2_spec()) / MB
    assert w[0, 1] == pytest.approx(20.0)  # (S1-R1, S1-R2)
    assert w[0, 2] == w[0, 3] == w[1, 2] == w[1, 3] == pytest.approx(1.0)
    assert w[2, 3] == pytest.approx(4.0) and w[4, 5] == pytest.approx(4.0)
    assert w[0, 4] == 0.0
    np.testing.assert_array_equal(w, w.T)


def test_fig2_mapping():
    # Servers with 4, 1 and 1 free GPUs. Heavy-Edge seeds server 1 with the 20 MB edge
    # (S1-R1, S1-R2), adds S2-R1 and S2-R2 (1 MB edges), and the two single-GPU servers
    # get one S3 replica each.
    m = heavy_edge(fig2_spec(), np.array([4, 1, 1]))
    np.testing.assert_array_equal(m.alloc, [[2, 2, 0], [0, 0, 1], [0, 0, 1]])
    np.testing.assert_array_equal(m.vertex_server, [0, 0, 0, 0, 1, 2])
    # Server order does not matter: the 4-GPU server is found by sorting.
    m2 = heavy_edge(fig2_spec(), np.array([1, 1, 4]))
    np.testing.assert_array_equal(m2.alloc, [[0, 0, 1], [0, 0, 1], [2, 2, 0]])


def test_tree_weights_are_halved():
    spec = pipeline_spec([1.0], [1.0], [0.0], [8 * MB], [4])
    ring, tree = job_graph(spec, "ring"), job_graph(spec, "tree")
    assert ring[0, 1] == pytest.approx(2 * 3 / 4 * 8 * MB)
    assert tree.max() <= 2 * 3 / 4 * 8 * MB  # an edge in both trees carries both halves
    assert np.count_nonzero(np.triu(tree)) >= 3  # a spanning tree at least


def test_select_servers():
    free = np.array([2, 8, 0, 5, 1])
    assert select_servers(free, 10, "most").tolist() == [0, 8, 0, 2, 0]
    assert select_servers(free, 4, "least").tolist() == [2, 0, 0, 1, 1]
    # fewest: best fit on one server (5 free beats 8), else the most available first
    assert select_servers(free, 4, "fewest").tolist() == [0, 0, 0, 4, 0]
    assert select_servers(free, 1, "fewest").tolist() == [0, 0, 0, 0, 1]
    assert select_servers(free, 10, "fewest").tolist() == [0, 8, 0, 2, 0]
    with pytest.raises(ValueError):
        select_servers(free, 17)


@st.composite
def cases(draw):
    n_s = draw(st.integers(1, 4))
    k = draw(st.lists(st.integers(1, 4), min_size=n_s, max_size=n_s))
    free = draw(st.lists(st.integers(0, 8), min_size=1, max_size=6))
    if sum(free) < sum(k):
        free[0] += sum(k) - sum(free)
    vals = st.floats(0.0, 1e9, allow_nan=False)
    spec = pipeline_spec(
        draw(st.lists(st.floats(0.0, 1.0), min_size=n_s, max_size=n_s)),
        draw(st.lists(st.floats(0.0, 1.0), min_size=n_s, max_size=n_s)),
        draw(st.lists(vals, min_size=n_s, max_size=n_s)),
        draw(st.lists(vals, min_size=n_s, max_size=n_s)),
        k,
    )
    return spec, np.array(free), draw(st.sampled_from(["most", "least"]))


@settings(max_examples=200, deadline=None)
@given(cases())
def test_mapping_uses_exactly_the_requested_gpus(case):
    spec, free, order = case
    m = heavy_edge(spec, free, select=order)
    assert m.alloc.shape == (free.shape[0], spec.n_stages)
    np.testing.assert_array_equal(m.alloc.sum(axis=0), spec.replicas)  # eq. (2)
    assert (m.alloc.sum(axis=1) <= free).all()  # eq. (3)
    assert int(m.alloc.sum()) == spec.n_gpus
    assert np.isfinite(iteration_time(spec, m.alloc, NIC, INTRA, G))


def test_estimate_between_ideal_and_worst():
    spec = fig2_spec()
    assert alpha_min_estimate(spec, NIC, INTRA, G) <= alpha_max(spec, NIC, INTRA, G)


def _random_spec(rng, n_s, max_k):
    k = rng.integers(1, max_k + 1, n_s)
    return pipeline_spec(
        rng.uniform(0.001, 0.05, n_s),
        rng.uniform(0.002, 0.1, n_s),
        rng.uniform(0, 50 * MB, n_s),
        rng.uniform(0, 200 * MB, n_s),
        k,
    )


def test_milp_matches_brute_force():
    rng = np.random.default_rng(7)
    for _ in range(8):
        spec = _random_spec(rng, int(rng.integers(1, 4)), 2)
        free = rng.integers(0, 4, 3)
        free[0] += max(0, spec.n_gpus - int(free.sum()))
        _, opt = optimal_mapping(spec, free, NIC, INTRA, G)
        assert opt == pytest.approx(brute_force_mapping(spec, free, NIC, INTRA, G), rel=1e-9)


def test_milp_never_worse_than_heavy_edge():
    rng = np.random.default_rng(11)
    for _ in range(12):
        spec = _random_spec(rng, int(rng.integers(1, 5)), 3)
        free = rng.integers(0, 5, 4)
        free[0] += max(0, spec.n_gpus - int(free.sum()))
        cmp = compare_with_optimal(spec, free, NIC, INTRA, G, same_servers=False)
        assert cmp.optimal_s <= cmp.heavy_edge_s * (1 + 1e-9)
        assert cmp.gap >= -1e-9
        assert cmp.heavy_edge_wall_s >= 0 and cmp.optimal_wall_s >= 0
        same = compare_with_optimal(spec, free, NIC, INTRA, G, same_servers=True)
        assert same.optimal_s <= same.heavy_edge_s * (1 + 1e-9)
        assert same.optimal_s >= cmp.optimal_s * (1 - 1e-9)


def test_milp_alloc_is_feasible():
    spec = fig2_spec()
    free = np.array([4, 1, 1, 2])
    m, t = optimal_mapping(spec, free, NIC, INTRA, G)
    np.testing.assert_array_equal(m.alloc.sum(axis=0), spec.replicas)
    assert (m.alloc.sum(axis=1) <= free).all()
    assert t == pytest.approx(iteration_time(spec, m.alloc, NIC, INTRA, G))


def test_time_limited_solution_is_not_reported_as_optimal(monkeypatch):
    """A MILP stopped by its time limit must raise, not pass its incumbent off as the optimum."""
    import scipy.optimize

    import gpusched.algorithms.exact_mapping as he

    real = scipy.optimize.milp

    def stopped(*args, **kwargs):
        res = real(*args, **kwargs)
        res.status = 1  # HiGHS: "Time limit reached"
        res.message = "Time limit reached"
        return res

    monkeypatch.setattr(scipy.optimize, "milp", stopped)
    from gpusched.jobmodels.pipeline import pipeline_spec

    spec = pipeline_spec([0.01, 0.01], [0.02, 0.02], [1e6, 1e6], [1e7, 1e7], [1, 1])
    with pytest.raises(TimeoutError, match="not proven optimal"):
        he.optimal_mapping(spec, np.array([2, 2]), 10.0, 300.0, 2)
