"""Means and Student-t confidence intervals over repeated runs (``compare --seeds``).

For values :math:`x_1, \\dots, x_n` of one metric over ``n`` seeds:

* mean :math:`\\bar x = \\frac1n \\sum_i x_i`;
* sample standard deviation :math:`s = \\sqrt{\\frac{1}{n-1} \\sum_i (x_i - \\bar x)^2}`;
* the 95 % interval :math:`\\bar x \\pm t_{0.975,\\,n-1}\\, s / \\sqrt n`, with
  :math:`t_{0.975,\\,n-1}` the Student-t quantile (``scipy.stats.t.ppf``); its
  *half-width* is :math:`t_{0.975,\\,n-1}\\, s / \\sqrt n`.

Two policies run on the same seeds are compared *paired*: the interval is that of the
per-seed differences :math:`d_i = y_i - x_i` (policy minus baseline), which removes the
variation the seeds share (the same workload, the same random draws). The difference is
*within noise* when its interval contains 0.

One value has no sample standard deviation and so no interval: ``std`` and
``half_width`` are None then, never NaN.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Interval", "paired_interval", "t_interval"]

#: the confidence level of every interval gpusched reports
CONFIDENCE = 0.95


@dataclass(frozen=True, slots=True)
class Interval:
    """The mean of ``n`` values and its Student-t confidence interval.

    Attributes
    ----------
    n
        Number of values (seeds).
    mean
        Their mean, in the values' unit.
    std
        Sample standard deviation (divisor n - 1); None when ``n`` < 2.
    half_width
        Half-width of the interval, :math:`t_{(1+c)/2,\\,n-1}\\, s/\\sqrt n`; None when
        ``n`` < 2.
    confidence
        The interval's confidence level (0.95).
    """

    n: int
    mean: float
    std: float | None
    half_width: float | None
    confidence: float = CONFIDENCE

    @property
    def low(self) -> float | None:
        """Lower end of the interval (None without one)."""
        return None if self.half_width is None else self.mean - self.half_width

    @property
    def high(self) -> float | None:
        """Upper end of the interval (None without one)."""
        return None if self.half_width is None else self.mean + self.half_width

    def contains(self, value: float) -> bool | None:
        """Whether ``value`` lies in the closed interval; None without an interval."""
        low, high = self.low, self.high
        if low is None or high is None:
            return None
        return low <= value <= high

    @property
    def within_noise(self) -> bool | None:
        """For an interval of differences: it contains 0 (None without an interval)."""
        return self.contains(0.0)


def t_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """Mean and Student-t interval of ``values`` (see the module docstring).

    Parameters
    ----------
    values
        One metric over the seeds; at least one finite number.
    confidence
        Confidence level, strictly between 0 and 1 (default 0.95).

    Raises
    ------
    ValueError
        No values, a value that is not finite, or a level outside (0, 1).
    """
    from scipy.stats import t as student_t

    xs = [float(v) for v in values]
    if not xs:
        raise ValueError("t_interval needs at least one value")
    if not all(math.isfinite(x) for x in xs):
        raise ValueError(f"t_interval needs finite values, got {xs}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    n = len(xs)
    mean = math.fsum(xs) / n
    if n < 2:
        return Interval(n, mean, None, None, confidence)
    if min(xs) == max(xs):  # equal values: exactly 0, not the rounding of their mean
        return Interval(n, xs[0], 0.0, 0.0, confidence)
    std = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))
    quantile = float(student_t.ppf((1.0 + confidence) / 2.0, n - 1))
    return Interval(n, mean, std, quantile * std / math.sqrt(n), confidence)


def paired_interval(
    baseline: Sequence[float], other: Sequence[float], confidence: float = CONFIDENCE
) -> Interval:
    """Interval of the paired differences ``other[i] - baseline[i]`` (same seed ``i``).

    Raises
    ------
    ValueError
        The sequences differ in length, or as for :func:`t_interval`.
    """
    if len(baseline) != len(other):
        raise ValueError(f"paired values need equal lengths, got {len(baseline)} and {len(other)}")
    return t_interval(
        [float(b) - float(a) for a, b in zip(baseline, other, strict=True)], confidence
    )
