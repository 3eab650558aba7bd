"""Times and durations in words a reader takes in at a glance (the TUI, ``explain``)."""

from __future__ import annotations

import math

__all__ = ["fmt_s", "fmt_slot", "fmt_slots", "fmt_t"]


def fmt_s(x: float | None) -> str:
    """A duration in s as a short human string (``45s``, ``12m05s``, ``3h20m``, ``2d04h``)."""
    if x is None or not math.isfinite(x):
        return "-"
    x = max(float(x), 0.0) + 0.0  # no "-0s"
    if x < 60:
        return f"{x:.0f}s" if x >= 10 or x == int(x) else f"{x:.1f}s"
    m, s = divmod(int(round(x)), 60)
    if m < 60:
        return f"{m}m{s:02d}s"
    h, m = divmod(m, 60)
    if h < 48:
        return f"{h}h{m:02d}m"
    d, h = divmod(h, 24)
    return f"{d}d{h:02d}h"


def fmt_t(t: float) -> str:
    """A simulated time in s, exact and grouped (``12,345 s``, ``12,345.5 s``)."""
    if not math.isfinite(t):
        return "-"
    t = float(t) + 0.0
    return f"{t:,.0f} s" if t == round(t) else f"{t:,.1f} s"


def fmt_slots(x: float | None) -> str:
    """A duration in slots (families whose traces count time in slots: ``89 slots``,
    ``1 slot``, ``2.5 slots``)."""
    if x is None or not math.isfinite(x):
        return "-"
    x = max(float(x), 0.0) + 0.0
    n = f"{x:,.0f}" if x == round(x) else f"{x:,.2f}".rstrip("0")
    return f"{n} slot{'' if x == 1 else 's'}"


def fmt_slot(t: float) -> str:
    """A simulated time in slots (``slot 89``, ``slot 12.5``: within slot 12)."""
    if not math.isfinite(t):
        return "-"
    t = float(t) + 0.0
    return f"slot {t:,.0f}" if t == round(t) else f"slot {t:,.2f}".rstrip("0")
