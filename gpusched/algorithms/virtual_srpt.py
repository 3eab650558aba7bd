"""A-SRPT's virtual single machine: preemptive SRPT on one unit-speed machine (Sec. IV-C-1).

For Z. Luo, J. Liu, M. Lee and N. B. Shroff, "Prediction-Assisted Online Distributed Deep
Learning Workload Scheduling in GPU Clusters" (A-SRPT), IEEE INFOCOM 2025, arXiv:2501.05563.
"""

from __future__ import annotations

import numpy as np

__all__ = ["VirtualSRPT"]


class VirtualSRPT:
    """Preemptive SRPT on one unit-speed machine: the hypothetical instance :math:`\\tilde A_1`.

    Job ``i`` arrives at ``submit[i]`` with size ``size[i]`` seconds (A-SRPT uses
    :math:`\\frac{g_i}{G}\\tilde n_i\\tilde\\alpha_i^{min}`, Sec. IV-C-1). At any time the
    machine runs the arrived, unfinished job with the least remaining size (ties: lower job
    index, i.e. earlier submission) and preempts it when a smaller one arrives.
    :meth:`advance` moves the machine to a time and returns the jobs completed on the way,
    in completion order (zero-size jobs complete at their arrival).

    Parameters
    ----------
    submit
        Arrival times, s, non-decreasing (job index = submission order).
    size
        Processing times on the virtual machine, s (>= 0).
    """

    def __init__(self, submit: np.ndarray, size: np.ndarray) -> None:
        self.submit = np.asarray(submit, dtype=np.float64).tolist()
        self.size = np.maximum(np.asarray(size, dtype=np.float64), 0.0).tolist()
        self.n = len(self.submit)
        self.t = -np.inf  # virtual clock, s
        self.next = 0  # next job to arrive
        self.heap: list[tuple[float, int]] = []  # (remaining s, job)
        self.completion = np.full(self.n, np.nan)  # completion time in the virtual schedule, s

    def advance(self, t: float) -> list[int]:
        """Run the virtual machine up to time ``t``; return the jobs completed, in order."""
        import heapq

        done: list[int] = []
        heap = self.heap
        while True:
            arr = self.submit[self.next] if self.next < self.n else np.inf
            if arr > t:
                arr = np.inf
            if heap:
                rem, j = heap[0]
                fin = self.t + rem
                if fin <= arr and fin <= t:  # the running job completes first
                    heapq.heappop(heap)
                    self.t = fin
                    self.completion[j] = fin
                    done.append(j)
                    continue
            if arr != np.inf:  # run the head until the arrival, then admit it
                if heap:
                    rem, j = heap[0]
                    heap[0] = (max(rem - (arr - self.t), 0.0), j)  # still the minimum
                self.t = max(self.t, arr)
                heapq.heappush(heap, (self.size[self.next], self.next))
                self.next += 1
                continue
            if heap and t > self.t:
                rem, j = heap[0]
                heap[0] = (max(rem - (t - self.t), 0.0), j)
            self.t = max(self.t, t)
            while heap and self.t + heap[0][0] <= self.t:  # rounding left a zero remainder
                j = heapq.heappop(heap)[1]
                self.completion[j] = self.t
                done.append(j)
            return done

    def next_completion(self) -> float:
        """Time of the next completion if no job arrives before it, s (inf when idle)."""
        return self.t + self.heap[0][0] if self.heap else np.inf
