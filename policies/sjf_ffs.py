"""SJF-FFS: shortest job first with first-fit sharing (the SJF-BSBF paper's baseline).

Luo et al., *Scheduling Deep Learning Jobs in Multi-Tenant GPU Clusters via Wise Resource
Sharing*, Sec. VI-A, baseline 4: "similar to our proposed SJF-BSBF except that it does not
search the best sharing configuration as SJF-BSBF but allocates the job to those GPUs that
only have one job in a first fit manner if the free GPUs are not sufficient for the new
job". So this is :mod:`policies.sjf_bsbf` (Alg. 1) with lines 10-17 replaced:

* the GPUs holding one job are taken in GPU order (first fit), whatever the pair's
  interference, then free GPUs if still short (as SJF-BSBF does, so that the search is the
  only difference; Alg. 1 says the same of SJF-BSBF: "we do not pick the free GPUs at first
  for this case");
* the sub-batch is the largest that fits in GPU memory beside every partner (no search;
  the job shares even when waiting would be better, which is what the baseline is for);
* with ``placement=aware`` (the default, as for sjf-bsbf) a gang whose ideal placement is
  one server first fits on the first server, by index, whose GPUs holding one job (jobs
  started in this decision excepted) plus its free GPUs hold it and whose partners leave
  memory for some sub-batch, one-job GPUs first; only if no server does, it takes GPUs
  in GPU order across servers. First fit over servers, then over GPUs: SJF-FFS evaluates
  no pair, so "the same candidate sets as SJF-BSBF" is all that placement can mean for it.
  ``placement=ideal`` is GPU order only (the former reading).

``-p xi=R`` / ``-p xi_table=FILE`` / ``-p xi_model=gavel`` inject interference ratios as
for sjf-bsbf (Fig. 6b).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusched.core.policy import Decision, Start
from gpusched.core.registry import sibling_policy
from gpusched.core.state import QUEUED

_SJFBSBF = sibling_policy(__file__, "sjf_bsbf.py")


class SJFFFSPolicy(_SJFBSBF):  # type: ignore[misc, valid-type]
    """SJF order; when idle GPUs are too few, share the first GPUs holding one job."""

    name = "sjf-ffs"
    work_conserving = True

    def decide(self, view: Any, now: float) -> Decision:
        """Alg. 1 step by step, with :meth:`_first_sharer` as below."""
        decision: Decision = self.decide_loop(view, now)
        return decision

    def _first_sharer(
        self,
        view: Any,
        order: np.ndarray,
        need: np.ndarray,
        shape: np.ndarray,
        refused: np.ndarray,
        span: tuple[int, int, int],
        holder: np.ndarray,
        n_on: np.ndarray,
    ) -> tuple[int, Start] | None:
        """Lines 9-17 for ``order[pos:stop]`` as in sjf-bsbf, each job by :meth:`_share`."""
        pos, stop, room = span
        free, one = n_on == 0, n_on == 1
        for at in self._candidates(need, shape, refused, pos, stop, room).tolist():
            start = self._share(view, int(order[at]), int(need[at]), free, one, holder)
            if start is not None:
                return at + 1, start
            refused[shape[at]] = True
        return None

    def _share(
        self, view: Any, j: int, g: int, free: np.ndarray, one: np.ndarray, holder: np.ndarray
    ) -> Start | None:
        """The first GPUs holding one job, then free ones (on one server first, with
        ``placement=aware``); the largest sub-batch that fits."""
        times = self.times
        assert times is not None
        ok = one & (view.job_status[np.maximum(holder, 0)] != QUEUED)
        if self.placement == "aware" and times.sensitive[times.shape_of[j]]:
            server = np.asarray(view.gpu_server)
            for v in np.unique(server[ok]).tolist():  # first fit over servers
                on = server == v
                start = self._fit(view, j, g, ok & on, free & on, holder)
                if start is not None:
                    return start
        return self._fit(view, j, g, ok, free, holder)

    def _fit(
        self, view: Any, j: int, g: int, ok: np.ndarray, free: np.ndarray, holder: np.ndarray
    ) -> Start | None:
        """The first ``g`` of the GPUs ``ok`` (holding one job), then of ``free``, at the
        largest sub-batch that fits beside each partner; None if too few or none fits."""
        times = self.times
        assert times is not None
        gpus = np.flatnonzero(ok)[:g].tolist()
        gpus += np.flatnonzero(free)[: g - len(gpus)].tolist()
        if len(gpus) < g:
            return None
        partners = sorted({int(holder[gpu]) for gpu in gpus if ok[gpu]})
        pairs = [(b, view.job_config.get(b)) for b in partners]
        for sub in times.sub_batches(j):  # largest first; beside each partner's GPU alone
            if all(times.fits(j, sub, [pair]) for pair in pairs):
                return Start(j, np.asarray(sorted(gpus), dtype=np.int64), sub)
        return None
