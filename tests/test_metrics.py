"""metrics: the summary's percentiles are NumPy's (``np.percentile``, linear), bit for bit,
taken several at once or one by one; the manifest's Numba version is importlib.metadata's."""

from __future__ import annotations

import struct

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusched.results import metrics

QS = (50, 95, 99)


def bits(values):
    return [None if v is None else struct.pack("<d", v) for v in values]


def numpy_pcts(a, qs):
    return [float(np.percentile(a, q)) if a.size else None for q in qs]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.floats(allow_nan=False, width=64), max_size=300),
    st.integers(0, 3),
    st.lists(st.floats(0, 100), min_size=1, max_size=4),
)
def test_percentiles_are_numpys_bit_for_bit(values, repeat, qs):
    a = np.array(values * (repeat + 1), dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):  # (infinities: both give the same NaN)
        for want in (QS, QS[:2], (95,), tuple(qs)):
            assert bits(metrics._pcts(a, want)) == bits(numpy_pcts(a, want))
        assert bits([metrics._pct(a, q) for q in QS]) == bits(numpy_pcts(a, QS))
        if a.size:  # NumPy's several at once too
            assert bits(metrics._pcts(a, QS)) == bits([float(v) for v in np.percentile(a, QS)])


def test_many_random_columns():
    rng = np.random.default_rng(3)
    for n in (1, 2, 7, 1000, 100_001):
        a = rng.lognormal(8, 2, n) + rng.integers(0, 1000, n) / 1000
        assert bits(metrics._pcts(a, QS)) == bits(numpy_pcts(a, QS))


def test_other_columns_go_to_numpy():
    a = np.array([1.0, np.nan, 3.0])
    assert bits(metrics._pcts(a, QS)) == bits(numpy_pcts(a, QS))
    b = np.array([3, 1, 2], dtype=np.int64)
    assert metrics._pcts(b, QS) == numpy_pcts(b, QS)


def test_the_numba_version_is_importlib_metadatas():
    from importlib.metadata import version

    assert metrics.installed_version("numba") == version("numba")
    assert metrics.installed_version("numpy") == version("numpy")
