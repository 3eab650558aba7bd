"""SJF-BSBF's jitted helpers (``gpusched.algorithms.share``) against the numpy code they
replaced: the SJF order, the jobs to evaluate (first of each shape), the jobs alone on some
GPU and the first job that finds enough GPUs."""

from __future__ import annotations

import numpy as np
import pytest

from gpusched.algorithms.share import (
    alone_holders,
    first_enough,
    first_of_each_shape,
    sjf_order,
)
from gpusched.state import QUEUED, RUNNING


def first_of_each_shape_numpy(need, shape, refused, pos, stop, room):
    """The policy's former ``_candidates``."""
    cand = pos + np.flatnonzero(need[pos:stop] <= room)
    sh = shape[cand]
    live = ~refused[sh]
    cand, sh = cand[live], sh[live]
    if cand.size < 2:
        return cand
    _, first = np.unique(sh, return_index=True)
    return cand[np.sort(first)]


def alone_holders_numpy(one, holder, status, skip):
    """The policy's former partner list: np.unique with counts, then the status filter."""
    jobs, counts = np.unique(holder[one], return_counts=True)
    keep = status[jobs] != skip
    return jobs[keep], counts[keep]


@pytest.mark.parametrize("seed", range(20))
def test_first_of_each_shape_matches_numpy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 40))
    need = rng.integers(1, 9, n)
    shape = rng.integers(0, 6, n)
    refused = rng.random(6) < 0.3
    pos = int(rng.integers(0, n + 1))
    stop = int(rng.integers(pos, n + 1))
    room = int(rng.integers(0, 9))
    got = first_of_each_shape(need, shape, refused, pos, stop, room)
    want = first_of_each_shape_numpy(need, shape, refused, pos, stop, room)
    assert got.tolist() == want.tolist()
    assert len(set(shape[got].tolist())) == got.size


def test_first_of_each_shape_leaves_refused_alone():
    refused = np.array([False, True, False])
    got = first_of_each_shape(np.ones(4, int), np.array([1, 0, 0, 2]), refused, 0, 4, 1)
    assert got.tolist() == [1, 3]
    assert refused.tolist() == [False, True, False]


@pytest.mark.parametrize("seed", range(20))
def test_alone_holders_matches_numpy(seed):
    rng = np.random.default_rng(seed)
    n_gpus = int(rng.integers(0, 64))
    one = rng.random(n_gpus) < 0.5
    holder = rng.integers(0, 12, n_gpus)
    status = np.where(rng.random(12) < 0.2, QUEUED, RUNNING).astype(np.int8)
    status.flags.writeable = seed % 2 == 0  # the view's status array is read-only
    jobs, counts = alone_holders(one, holder, status, QUEUED)
    want_jobs, want_counts = alone_holders_numpy(one, holder, status, QUEUED)
    assert jobs.tolist() == want_jobs.tolist()
    assert counts.tolist() == want_counts.tolist()


@pytest.mark.parametrize("seed", range(20))
def test_sjf_order_matches_a_stable_numpy_sort(seed):
    rng = np.random.default_rng(seed)
    n_jobs = 30
    duration = rng.integers(1, 6, n_jobs).astype(np.float64)  # many ties
    n_gpus = rng.integers(1, 9, n_jobs).astype(np.int32)
    shape_of = rng.integers(0, 4, n_jobs)
    queued = np.sort(rng.choice(n_jobs, int(rng.integers(0, n_jobs)), replace=False))
    queued = queued.astype(np.int32)
    order, need, shape = sjf_order(queued, duration, n_gpus, shape_of)
    want = queued[np.argsort(duration[queued], kind="stable")]
    assert order.tolist() == want.tolist()
    assert need.tolist() == n_gpus[want].tolist()
    assert shape.tolist() == shape_of[want].tolist()


@pytest.mark.parametrize("seed", range(20))
def test_first_enough_matches_numpy(seed):
    rng = np.random.default_rng(seed)
    n_jobs, n_partners = int(rng.integers(0, 6)), int(rng.integers(0, 6))
    ok = rng.random((n_jobs, n_partners)) < 0.4
    n_own = rng.integers(1, 5, n_partners)
    n_free = int(rng.integers(0, 4))
    need = rng.integers(1, 9, n_jobs)
    enough = ok.any(axis=1) & (ok @ n_own + n_free >= need)
    found = np.flatnonzero(enough)
    want = int(found[0]) if found.size else n_jobs
    assert first_enough(ok, n_own, n_free, need) == want
