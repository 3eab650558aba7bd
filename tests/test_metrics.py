"""metrics: the summary's percentiles, taken several at once, are the ones taken one by one."""

from __future__ import annotations

import struct

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusched.results import metrics

QS = (50, 95, 99)


def bits(values):
    return [None if v is None else struct.pack("<d", v) for v in values]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64), max_size=300),
    st.integers(0, 3),
)
def test_percentiles_at_once_are_those_one_by_one(values, repeat):
    a = np.array(values * (repeat + 1), dtype=np.float64)
    one_by_one = [metrics._pct(a, q) for q in QS]
    assert bits(metrics._pcts(a, QS)) == bits(one_by_one)
    assert bits(metrics._pcts(a, QS[:2])) == bits(one_by_one[:2])


def test_many_random_columns():
    rng = np.random.default_rng(3)
    for n in (1, 2, 7, 1000, 100_001):
        a = rng.lognormal(8, 2, n) + rng.integers(0, 1000, n) / 1000
        assert bits(metrics._pcts(a, QS)) == bits([metrics._pct(a, q) for q in QS])
