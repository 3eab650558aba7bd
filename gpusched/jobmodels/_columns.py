"""Reading a job model's own numeric trace columns, one error line per bad field."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from gpusched.errors import show_name, show_value

__all__ = ["float_column"]


def float_column(
    trace: Any,
    col: str,
    rows: np.ndarray,
    errors: list[str],
    what: str,
    ok: Callable[[float], bool],
    default: float | None = None,
) -> np.ndarray:
    """Column ``col`` of ``rows`` as floats (NaN elsewhere, or ``default`` where empty).

    A value that is not a finite number accepted by ``ok`` (or an empty one without a
    default) appends ``file:line: column 'col': expected <what>, got ...`` to ``errors``.
    Numbers follow the trace format's grammar (ASCII digits, an optional fraction and
    exponent): Python's ``float`` would also read ``1_0`` or full-width digits as 10.
    """
    from gpusched.io.trace import _FLOAT_RE

    out = np.full(len(trace), np.nan if default is None else default)
    raw = trace.extra.get(col)
    name = show_name(trace.source)
    for i in rows.tolist():
        text = "" if raw is None else str(raw[i]).strip()
        if text == "" and default is not None:
            continue
        v = float(text) if _FLOAT_RE.fullmatch(text) else math.nan
        if not (math.isfinite(v) and ok(v)):
            got = "missing" if text == "" else f"got {show_value(text)}"
            errors.append(f"{name}:{int(trace.line[i])}: column '{col}': expected {what}, {got}")
            continue
        out[i] = v
    return out
