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
    # the same float64 arithmetic as numpy's on Python floats, which are quicker for the
    # few resources of a machine; a machine that a worker (or PS) no longer fits stays
    # out of the rotation for the rest of them (its free resources only shrink)
    left = np.asarray(free, dtype=np.float64).tolist()
    h = len(left)
    w = [0] * h
    s = [0] * h
    cursor = int(start) % h if h else 0
    for demand, count, out in ((worker, n_w, w), (ps, n_s, s)):
        need = np.asarray(demand, dtype=np.float64).tolist()
        floor = [d - 1e-9 for d in need]
        res = range(len(need))
        fits = [True] * h
        for _ in range(count):
            for k in range(h):
                m = (cursor + k) % h
                if not fits[m]:
                    continue
                row = left[m]
                if all(row[r] >= floor[r] for r in res):
                    for r in res:
                        row[r] -= need[r]
                    out[m] += 1
                    cursor = (m + 1) % h
                    break
                fits[m] = False
            else:
                return None
    return np.array(w, dtype=np.int64), np.array(s, dtype=np.int64), cursor
