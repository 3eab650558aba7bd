"""Arithmetic that comes out the same on every machine: sums of products, and ``exp``,
``log`` and powers.

NumPy hands ``a @ b`` on floats to BLAS, and BLAS chooses its kernel by the processor
(OpenBLAS also by ``OPENBLAS_CORETYPE``): an AVX-512 kernel and an AVX2 kernel add the
same products in another order, so the last bit of a price can differ between two
machines. The policies compare such sums (a schedule's cost against its utility, one
machine's price against another's, an MILP objective against a near-tie), so one bit can
change a decision and then the whole schedule: PD-ORS's 20-job golden schedule did, under
OpenBLAS's Haswell kernels against its SkylakeX ones. :func:`per_unit` and :func:`dot` fix
the order (or round exactly), so a run's decisions depend on its inputs only. NumPy's
element-wise ``*`` and ``+`` are correctly rounded IEEE operations whatever the SIMD
width, and never fused into one multiply-add.

NumPy's ``exp``, ``log``, ``log1p`` and ``**`` on float arrays are not: where the
processor has AVX-512, NumPy takes its own vectorised code, whose last bit differs from
the C library's on a share of the inputs (on this project's machine, for most of a
million random ones). PD-ORS's prices are ``exp``s (eq. 12): one of the 54 PD-ORS runs of
``examples/pd-ors/run.sh`` (seeds 1-6) gave another schedule with NumPy's AVX-512 code
switched off (``NPY_DISABLE_CPU_FEATURES``). :func:`exp`, :func:`log`, :func:`log1p`,
:func:`power` and :func:`power_of` take every value to the C library's function instead:
in plain Python for small arrays, in a loop Numba compiles (which calls the same
functions) for large ones. They give the same bits wherever the C library does.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["dot", "exp", "log", "log1p", "per_unit", "power", "power_of"]


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


def _each(x: np.ndarray, what: int, p: float) -> np.ndarray:
    """The loop behind :func:`exp` (0), :func:`log` (1), :func:`power` (2), :func:`power_of`
    (3) and :func:`log1p` (4). The edges are spelled out so that Python (without the JIT)
    gives what the C library gives where Python's :mod:`math` would raise instead."""
    out = np.empty(x.size)
    for i in range(x.size):
        v = float(x[i])  # a Python float without the JIT: Python's float ops, not NumPy's
        if what == 0:
            out[i] = math.exp(v) if v <= _LOG_MAX else math.inf
        elif what == 1:
            out[i] = math.log(v) if v > 0.0 else (-math.inf if v == 0.0 else math.nan)
        elif what == 4:
            out[i] = math.log1p(v) if v > -1.0 else (-math.inf if v == -1.0 else math.nan)
        else:
            base, e = (v, p) if what == 2 else (p, v)
            if base > 0.0:
                out[i] = base**e
            elif base == 0.0:
                out[i] = 0.0 if e > 0.0 else (1.0 if e == 0.0 else math.inf)
            else:
                out[i] = math.nan  # only positive bases are used
    return out


#: the largest x whose exp is finite
_LOG_MAX = 709.782712893384

#: arrays up to this size run :func:`_each` as plain Python (Python's ``math`` calls the same
#: C library functions as the compiled loop, so the bits are the same, tested): a policy that
#: prices a few servers then never imports Numba (about 0.25 s a process)
_SMALL = 2048

_JITTED: list[Any] = []  # _each compiled, on first use of a larger array


def _apply(x: Any, what: int, p: float = 0.0) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    flat = np.ascontiguousarray(a).ravel()
    if flat.size <= _SMALL:
        return np.asarray(_each(flat, what, float(p)).reshape(a.shape))
    if not _JITTED:
        from numba import njit

        _JITTED.append(njit(cache=True, nogil=True)(_each))
    return np.asarray(_JITTED[0](flat, what, float(p)).reshape(a.shape))


def exp(x: Any) -> np.ndarray:
    """``e**x`` element-wise, from the C library (module docstring); the shape of ``x``."""
    return _apply(x, 0)


def log(x: Any) -> np.ndarray:
    """The natural log element-wise, from the C library: -inf at 0, NaN below 0."""
    return _apply(x, 1)


def log1p(x: Any) -> np.ndarray:
    """``log(1 + x)`` element-wise, from the C library: -inf at -1, NaN below."""
    return _apply(x, 4)


def power(x: Any, p: float) -> np.ndarray:
    """``x**p`` element-wise for a scalar exponent ``p`` and ``x >= 0``, from the C library
    (NaN for ``x < 0``)."""
    return _apply(x, 2, p)


def power_of(b: float, x: Any) -> np.ndarray:
    """``b**x`` element-wise for a scalar base ``b >= 0``, from the C library."""
    return _apply(x, 3, b)
