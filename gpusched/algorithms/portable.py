"""Sums of products that come out the same on every machine.

NumPy hands ``a @ b`` on floats to BLAS, and BLAS chooses its kernel by the processor
(OpenBLAS also by ``OPENBLAS_CORETYPE``): an AVX-512 kernel and an AVX2 kernel add the
same products in another order, so the last bit of a price can differ between two
machines. The policies compare such sums (a schedule's cost against its utility, one
machine's price against another's, an MILP objective against a near-tie), so one bit can
change a decision and then the whole schedule: PD-ORS's 20-job golden schedule did, under
OpenBLAS's Haswell kernels against its SkylakeX ones. The two functions here fix the
order (or round exactly), so a run's decisions depend on its inputs only. NumPy's
element-wise ``*`` and ``+`` are correctly rounded IEEE operations whatever the SIMD
width, and never fused into one multiply-add.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["dot", "per_unit"]


def per_unit(a: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``a @ v`` over the last axis of ``a``, summed in index order: ``sum_r a[..., r] v[r]``.

    For few resources (``v`` of length R), e.g. the price of one worker on each machine
    from the per-resource prices ``(H, R)`` and its demand ``(R,)``.
    """
    a = np.asarray(a, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    if a.shape[-1] != v.shape[0] or v.ndim != 1:
        raise ValueError(f"per_unit: shapes {a.shape} and {v.shape} do not match")
    out = np.zeros(a.shape[:-1], dtype=np.float64)
    for r in range(v.shape[0]):
        out = out + a[..., r] * v[r]
    return out


def dot(a: np.ndarray, b: np.ndarray) -> float:
    """``a . b`` of two vectors, correctly rounded (:func:`math.fsum` of the products)."""
    x = np.asarray(a, dtype=np.float64).ravel()
    y = np.asarray(b, dtype=np.float64).ravel()
    if x.shape != y.shape:
        raise ValueError(f"dot: shapes {x.shape} and {y.shape} do not match")
    return math.fsum((x * y).tolist())
