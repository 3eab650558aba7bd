"""A sparse MILP built column by column and row by row, solved with HiGHS.

The exact offline baselines (:mod:`gpusched.algorithms.exact_ps`,
:mod:`gpusched.algorithms.exact_chunks`) build their models here: columns with bounds
``[0, ub]``, integrality and a cost, rows ``lo <= A x <= hi`` given as ``(columns,
coefficient)`` terms, then one call of ``scipy.optimize.milp``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["SparseMILP"]


class SparseMILP:
    """Columns (bounds, integrality, objective) and sparse rows ``lo <= A x <= hi``."""

    def __init__(self) -> None:
        self.ub: list[float] = []
        self.integer: list[int] = []
        self.cost: list[float] = []
        self.rows: list[np.ndarray] = []
        self.cols: list[np.ndarray] = []
        self.vals: list[np.ndarray] = []
        self.lo: list[float] = []
        self.hi: list[float] = []

    def columns(
        self,
        shape: tuple[int, ...],
        ub: np.ndarray | float,
        *,
        integer: bool = True,
        cost: np.ndarray | None = None,
    ) -> np.ndarray:
        """New columns of ``shape`` with upper bounds ``ub`` (lower bound 0) and ``cost``
        (0 by default); their indices, in that shape."""
        start, size = len(self.ub), math.prod(shape)
        self.ub.extend(np.broadcast_to(np.asarray(ub, dtype=np.float64), shape).ravel().tolist())
        self.integer.extend([int(integer)] * size)
        if cost is None:
            self.cost.extend([0.0] * size)
        else:
            self.cost.extend(np.asarray(cost, dtype=np.float64).ravel().tolist())
        return np.arange(start, start + size).reshape(shape)

    def row(self, terms: list[tuple[np.ndarray | int, float]], lo: float, hi: float) -> None:
        """One row ``lo <= sum coef * x[cols] <= hi`` over ``(cols, coef)`` terms.

        A row without columns is left out when ``lo <= 0 <= hi`` holds (it says nothing)
        and kept otherwise (it makes the model infeasible, as it should).
        """
        cols = [np.atleast_1d(np.asarray(c, dtype=np.int64)).ravel() for c, _ in terms]
        if not any(c.size for c in cols) and lo <= 0.0 <= hi:
            return
        r = len(self.lo)
        for c, (_, coef) in zip(cols, terms, strict=True):
            self.rows.append(np.full(c.size, r, dtype=np.int64))
            self.cols.append(c)
            self.vals.append(np.full(c.size, float(coef)))
        self.lo.append(lo)
        self.hi.append(hi)

    def new_rows(self, count: int, lo: float, hi: float) -> np.ndarray:
        """``count`` empty rows ``lo <= . <= hi``; their indices (fill with :meth:`rows_of`)."""
        start = len(self.lo)
        self.lo.extend([lo] * count)
        self.hi.extend([hi] * count)
        return np.arange(start, start + count)

    def rows_of(self, rows: np.ndarray, cols: np.ndarray, coef: float) -> None:
        """Add ``coef x[cols[k]]`` to row ``rows[k]`` (rows made by :meth:`new_rows`)."""
        self.rows.append(np.asarray(rows, dtype=np.int64))
        self.cols.append(np.asarray(cols, dtype=np.int64))
        self.vals.append(np.full(len(cols), coef))

    def solve(self, time_limit: float, mip_rel_gap: float) -> Any:
        """Minimise the cost with HiGHS; scipy's ``OptimizeResult``."""
        from scipy.optimize import Bounds, LinearConstraint, milp  # heavy: import on use
        from scipy.sparse import csr_array

        n_var = len(self.ub)
        empty = np.empty(0, dtype=np.int64)
        a = csr_array(
            (
                np.concatenate(self.vals) if self.vals else np.empty(0),
                (
                    np.concatenate(self.rows) if self.rows else empty,
                    np.concatenate(self.cols) if self.cols else empty,
                ),
            ),
            shape=(len(self.lo), n_var),
        )
        return milp(
            np.asarray(self.cost),
            constraints=LinearConstraint(a, np.asarray(self.lo), np.asarray(self.hi)),
            integrality=np.asarray(self.integer),
            bounds=Bounds(np.zeros(n_var), np.asarray(self.ub)),
            options={"time_limit": float(time_limit), "mip_rel_gap": mip_rel_gap, "disp": False},
        )
