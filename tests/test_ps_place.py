"""The baselines' round-robin placement of workers and PSs (gpusched.algorithms.ps_place)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusched.algorithms.ps_place import round_robin


def round_robin_reference(free, worker, ps, n_w, n_s, start=0):
    """The rule as the PD-ORS paper's sentence reads, one item at a time over every machine
    (numpy rows; no machine is ever skipped without being tried)."""
    left = np.array(free, dtype=np.float64, copy=True)
    h = left.shape[0]
    w = np.zeros(h, dtype=np.int64)
    s = np.zeros(h, dtype=np.int64)
    cursor = int(start) % h if h else 0
    for demand, count, out in ((worker, n_w, w), (ps, n_s, s)):
        for _ in range(count):
            for k in range(h):
                m = (cursor + k) % h
                if (left[m] >= demand - 1e-9).all():
                    left[m] -= demand
                    out[m] += 1
                    cursor = (m + 1) % h
                    break
            else:
                return None
    return w, s, cursor


def test_hand_checked_cycle_skips_machines_that_no_longer_fit():
    # CPUs free on three machines; a worker needs 2, a PS 1; start at machine 1
    free = np.array([[2.0], [1.0], [4.0]])
    got = round_robin(free, np.array([2.0]), np.array([1.0]), 3, 1, start=1)
    assert got is not None
    w, s, cursor = got
    # workers: machine 1 is too small, so 2, then 0, then (1 still too small) 2 again;
    # the PS: from machine 0 (now empty) on, machine 1
    assert w.tolist() == [1, 0, 2] and s.tolist() == [0, 1, 0] and cursor == 2
    assert w.dtype == np.int64 and s.dtype == np.int64
    assert free.tolist() == [[2.0], [1.0], [4.0]]  # not modified
    # a second PS fits nowhere
    assert round_robin(free, np.array([2.0]), np.array([1.0]), 3, 2, start=1) is None


def test_a_rounding_error_below_the_tolerance_still_fits():
    # 0.3 - 0.1 - 0.1 is 0.09999999999999998 in floats: the third 0.1 fits (1e-9 tolerance)
    got = round_robin(np.array([[0.3]]), np.array([0.1]), np.array([0.1]), 3, 0)
    assert got is not None and got[0].tolist() == [3]


demands = st.lists(st.sampled_from([0.0, 0.1, 0.5, 1.0, 2.0, 2.5, 7.3]), min_size=2, max_size=2)


@settings(max_examples=300, deadline=None)
@given(
    free=st.lists(
        st.lists(st.sampled_from([0.0, 0.3, 1.0, 2.0, 5.0, 8.0, 16.2]), min_size=2, max_size=2),
        min_size=0,
        max_size=6,
    ),
    worker=demands,
    ps=demands,
    n_w=st.integers(0, 12),
    n_s=st.integers(0, 6),
    start=st.integers(0, 9),
)
def test_matches_the_one_at_a_time_reference(free, worker, ps, n_w, n_s, start):
    args = (
        np.array(free, dtype=np.float64).reshape(len(free), 2),
        np.array(worker),
        np.array(ps),
        n_w,
        n_s,
        start,
    )
    got, want = round_robin(*args), round_robin_reference(*args)
    if want is None:
        assert got is None
        return
    assert got is not None
    assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()
    assert got[2] == want[2]
    assert args[0].tolist() == [list(map(float, row)) for row in free]  # free not modified
