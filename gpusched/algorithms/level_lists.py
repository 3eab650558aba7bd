"""Priority levels, each a list of jobs: the queue structure of Tiresias' discretized LAS.

Each level's list holds its arrived, unfinished jobs ordered by *place*, then job index; a
job joins the back of a level (at a place that grows with time), and after every re-pack the
jobs holding GPUs move to the front of their lists, in list order, ahead of the waiting ones.
The priority order is the lists' concatenation, level 0 first. These are the semantics of
the Tiresias simulator (``policies/tiresias.py`` cites them), kept as lists changed as jobs
arrive, start, stop, cross a threshold or starve, so that a decision costs what changed
rather than a sort of every job; the order equals the one of (level, place, job index) that
the fused kernel sorts by (``gpusched.core.state``: ``job_level``, ``job_seq``).
"""

from __future__ import annotations

from array import array
from bisect import bisect_right

import numpy as np

__all__ = ["LevelLists"]


class LevelLists:
    """Jobs in ``n_levels`` priority lists.

    Parameters
    ----------
    n_levels
        Number of levels (level 0 is served first).
    n_jobs
        Number of jobs of the run (job indices ``0 .. n_jobs - 1``).

    Attributes
    ----------
    level
        Each job's level (0 until it joins one).
    place
        Each job's place in its level's list: places >= 0 are times since the first
        submission at which the job joined the back; holders of a re-pack get places < 0
        (NaN until it joins).
    """

    def __init__(self, n_levels: int, n_jobs: int) -> None:
        self.n_jobs = n_jobs
        self.level: list[int] = [0] * n_jobs
        self.place: list[float] = [np.nan] * n_jobs
        self.front = 0.0  # the smallest place handed out so far
        #: each level's list: its jobs by place, then job index (C ints: the order is their
        #: concatenation, handed to numpy without a copy)
        self.lists = [array("i") for _ in range(n_levels)]
        #: how many jobs lead each list as holders moved to the front
        self.n_front = [0] * n_levels
        #: those jobs, of every list
        self.at_front: set[int] = set()

    def join(self, j: int, k: int, place: float) -> None:
        """Job ``j`` joins list ``k`` at ``place`` (behind the front, by place then index)."""
        self.level[j] = k
        p = self.place
        p[j] = place
        lst = self.lists[k]
        if not lst or (place, j) > (p[lst[-1]], lst[-1]):
            lst.append(j)  # the common case: the back
        else:
            lst.insert(bisect_right(lst, (place, j), self.n_front[k], key=lambda i: (p[i], i)), j)

    def leave(self, j: int) -> None:
        """Job ``j`` leaves its list."""
        k = self.level[j]
        lst = self.lists[k]
        i = lst.index(j)
        del lst[i]
        if i < self.n_front[k]:
            self.n_front[k] -= 1
            self.at_front.discard(j)

    def to_front(self, held: set[int]) -> None:
        """The holders of the last re-pack go to the front of their lists, in list order.

        The holders that led the lists already keep their order and stay ahead; the jobs
        that started since follow them (in list order), and the jobs that stopped holding
        lead the jobs behind. The holders then take places below every place so far.
        """
        came, left = held - self.at_front, self.at_front - held
        if not (came or left):
            return  # the same holders lead the lists, in the same order, as they would
        n_front, block = self.n_front, []
        came_to: list[list[int]] = [[] for _ in self.lists]
        left_from: list[set[int]] = [set() for _ in self.lists]
        for j in came:
            came_to[self.level[j]].append(j)
        for j in left:
            left_from[self.level[j]].add(j)
        for k, lst in enumerate(self.lists):
            n, new, gone = n_front[k], came_to[k], left_from[k]
            front = lst[:n].tolist()
            if new or gone:
                out = [j for j in front if j in gone]
                if out:
                    front = [j for j in front if j not in gone]
                if new:
                    at = sorted(lst.index(j, n) for j in new)  # their order in the list
                    new = [lst[i] for i in at]
                    for i in reversed(at):
                        del lst[i]
                    front += new
                lst[:] = array("i", front + out) + lst[n:]
                n_front[k] = len(front)
            block += front
        self.at_front = held
        self.front -= len(block)
        p, f = self.place, self.front
        for i, j in enumerate(block):
            p[j] = f + i

    def order(self) -> np.ndarray:
        """Every listed job in priority order: level by level, each list in its order."""
        lists = array("i")
        for lst in self.lists:
            lists += lst
        return np.frombuffer(lists, dtype=np.intc)
