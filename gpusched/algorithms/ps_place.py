"""Placing workers and parameter servers on multi-resource machines: the baselines' rule.

The PD-ORS paper's baselines place workers and PSs "in a round-robin fashion on available
machines" (Sec. V, baselines 1 and 2). :func:`round_robin` is that rule: one worker (then
one PS) at a time on the next machine, in cyclic order from a cursor, skipping machines
where the next one does not fit; the cursor carries over between jobs, so consecutive jobs
start on different machines.
"""

from __future__ import annotations

import numpy as np

__all__ = ["round_robin", "ps_for"]


def ps_for(workers: int, gamma: float) -> int:
    """Parameter servers for ``workers`` workers at the worker:PS ratio (eq. 2), >= 1."""
    return max(1, int(np.ceil(workers / gamma - 1e-9)))


def round_robin(
    free: np.ndarray, worker: np.ndarray, ps: np.ndarray, n_w: int, n_s: int, start: int = 0
) -> tuple[np.ndarray, np.ndarray, int] | None:
    """Place ``n_w`` workers then ``n_s`` PSs one at a time over the machines in cyclic order.

    Parameters
    ----------
    free
        ``(H, R)`` free resources (not modified).
    worker, ps
        ``(R,)`` demand of one worker and of one PS.
    n_w, n_s
        How many of each to place.
    start
        The machine to try first.

    Returns
    -------
    (workers, ps, cursor) or None
        Counts per machine and the machine after the last one used; None when they do
        not all fit.
    """
    left = np.array(free, dtype=np.float64, copy=True)
    h = left.shape[0]
    w = np.zeros(h, dtype=np.int64)
    s = np.zeros(h, dtype=np.int64)
    cursor = int(start) % h if h else 0
    for demand, count, out in ((worker, n_w, w), (ps, n_s, s)):
        for _ in range(count):
            for k in range(h):
                m = (cursor + k) % h
                if (left[m] >= demand - 1e-9).all():
                    left[m] -= demand
                    out[m] += 1
                    cursor = (m + 1) % h
                    break
            else:
                return None
    return w, s, cursor
