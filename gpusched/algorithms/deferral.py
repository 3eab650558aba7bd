"""The pieces of Lazer's deferral predictor that are not the Bayesian optimiser itself.

Y. Go, C. Shin, M. Kang, J. Hwang, C. Yoo and G. Yang, "Making Sense of Job Preemption for
Distributed Deep Learning Acceleration", DAC 2026, doi:10.1145/3770743.3804432, Sec. 4.2:
the context of eq. 5 (:func:`context`), the outcome F of eq. 4 observed in simulated time
(:class:`Outcomes`), the grid of deferrals a slotted simulation can act on
(:func:`slot_grid`), and the placement of a start on the GPUs a policy may use
(:func:`place_on`). ``policies/lazer.py`` calls them; its docstring says which choice of
the paper's silences each implements.

**F (eq. 4) is the load time a futile preemption would waste.** For a decision at
:math:`t_0` with :math:`p = \\max_{J_r} p_k` and :math:`\\ell = \\ell_{j_{new}}`, loading
j_new at once would load it over :math:`(t_0 + p, t_0 + p + \\ell]`. If a later arrival
shorter than :math:`T'_{j_{new}}` comes at :math:`t_0 + \\Delta` inside that window (eq. 2's
:math:`p < \\Delta \\le p + \\ell`), it would preempt j_new mid-load and waste
:math:`F = \\Delta - p` of it (the first such arrival; F = 0 if none). A deferral X
shifts the load by X, so exactly the deferrals :math:`X \\ge F` avoid it; a shorter X
wastes :math:`F - X`, a longer one delays j_new by :math:`X - F`: :math:`f = |X - F|` is the
time lost against the ideal deferral. F does not depend on X. It is known at
:math:`t_0 + p + \\ell` and used once the deferral has also ended (the deferral thread
updates the GP after sleeping X, Sec. 4.2): at :math:`t_0 + \\max(X, p + \\ell)`. Outcomes
are applied lazily, before the next suggestion, which sees the same set of outcomes as a
timer at that moment would.
"""

from __future__ import annotations

import heapq
import math
from typing import Any, NamedTuple

import numpy as np

__all__ = ["Outcomes", "Sample", "context", "place_on", "slot_grid"]

_EPS = 1e-9  # s, as the engine's tolerance on times


def context(
    submit: np.ndarray,
    n_arrived: int,
    now: float,
    window: float,
    t_new: float,
    load: float,
    p: float,
) -> np.ndarray:
    """Eq. 5 on a log scale: ``log1p`` of :math:`(\\overline{\\Delta A}, T'_{j_{new}}, \\ell_{j_{new}}, p)`.

    :math:`\\overline{\\Delta A}` is the mean gap between consecutive arrivals in the
    ``window`` (s) before ``now``, :math:`(A_{last} - A_{first}) / (k - 1)` over the k
    arrivals in it (``submit[:n_arrived]``, ascending); with fewer than 2 it is the window
    itself. All inputs in s.
    """
    sub = submit[:n_arrived]
    lo = int(np.searchsorted(sub, now - window, side="right"))
    k = sub.size - lo
    gap = (sub[-1] - sub[lo]) / (k - 1) if k >= 2 else window
    # math.log1p (the C library's), not NumPy's, whose AVX-512 path can give another last bit
    return np.array([math.log1p(float(v)) for v in (gap, t_new, load, p)], dtype=np.float64)


def slot_grid(max_defer: float, slot_s: float) -> np.ndarray:
    """The deferrals that act differently on a slotted clock: 0, slot, 2 slot, ... and
    ``max_defer`` (a deferral fires at the first decision point at or after now + X)."""
    steps = np.arange(0.0, max_defer, slot_s)
    return np.unique(np.append(steps, max_defer))


class Sample(NamedTuple):
    """A bootstrap or acquisition sample waiting for its outcome."""

    x: float  # X suggested, s
    c: np.ndarray  # context (eq. 5, log scale)
    t0: float  # decision time, s
    p: float  # max pause-and-save over J_r, s
    load: float  # load time of j_new, s
    t_new: float  # remaining duration of j_new, s


class Outcomes:
    """Samples whose outcome f is not yet known or not yet due (module docstring)."""

    def __init__(self) -> None:
        self._due: list[tuple[float, int, Sample]] = []
        self._seq = 0

    def add(self, sample: Sample) -> None:
        """Keep ``sample`` until :math:`t_0 + \\max(X, p + \\ell)`."""
        self._seq += 1
        due = sample.t0 + max(sample.x, sample.p + sample.load)
        heapq.heappush(self._due, (due, self._seq, sample))

    def report(self, predictor: Any, submit: np.ndarray, duration: np.ndarray, now: float) -> None:
        """``predictor.observe(x, c, |X - F|)`` for every sample due by ``now``, in due order.

        ``submit`` holds the arrivals so far (ascending; every one up to ``now``) and
        ``duration`` their durations.
        """
        while self._due and self._due[0][0] <= now + _EPS:
            s = heapq.heappop(self._due)[2]
            a = int(np.searchsorted(submit, s.t0 + s.p, side="right"))  # Delta > p
            b = int(np.searchsorted(submit, s.t0 + s.p + s.load + _EPS, side="right"))
            hit = (duration[a:b] < s.t_new).nonzero()[0]  # shorter than j_new
            f_time = float(submit[a + hit[0]] - s.t0 - s.p) if hit.size else 0.0
            predictor.observe(s.x, s.c, abs(s.x - f_time))


def place_on(free: np.ndarray, server_start: list[int], g: int) -> np.ndarray:
    """``g`` GPUs of the mask ``free``: the fullest server that fits, else the servers with
    most free GPUs (lowest index on ties), lowest-numbered GPUs first.

    ``server_start`` holds each server's first GPU and the GPU count at the end. The same
    rule as the engine's consolidated placement (``gpusched.core.kernel``), on a mask.
    """
    off = server_start
    per = [int(np.count_nonzero(free[off[s] : off[s + 1]])) for s in range(len(off) - 1)]
    best, most = -1, math.inf
    for s, n in enumerate(per):  # best fit, lowest index on ties
        if g <= n < most:
            best, most = s, n
    if best >= 0:
        return off[best] + free[off[best] : off[best + 1]].nonzero()[0][:g]
    parts, got = [], 0
    for s in sorted(range(len(per)), key=lambda s: -per[s]):  # stable: lowest index first
        take = min(per[s], g - got)
        parts.append(off[s] + free[off[s] : off[s + 1]].nonzero()[0][:take])
        got += take
        if got == g:
            break
    return np.concatenate(parts)
