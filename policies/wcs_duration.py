"""WCS-Duration: work-conserving fill by predicted duration, Heavy-Edge placement.

Baseline (3) of Z. Luo, J. Liu, M. Lee and N. B. Shroff, "Prediction-Assisted Online
Distributed Deep Learning Workload Scheduling in GPU Clusters", IEEE INFOCOM 2025,
arXiv:2501.05563, Sec. V-A 1-d: "WCS-Duration (Work-Conserving Scheduler, WCS [46] by
Duration): This approach continuously schedules jobs to use available GPUs within the
cluster following the order based on their predicted duration"; "All baselines adopt the
Heavy-Edge algorithm". WCS [46]: Zheng, Shroff, Srikant, Sinha, INFOCOM 2015.

Key :math:`\\tilde n_i\\tilde\\alpha_i^{min}` (random-forest iterations, Sec. V-B 2-d).
Non-preemptive; a job that does not fit is skipped and later ones fill the idle GPUs.
Servers by ``-p select=fewest`` (default: the fewest servers, best fit; the paper does not
say, see :mod:`gpusched.algorithms.predicted`), ``most`` or ``least``, then Heavy-Edge; ties to the
earlier submission.
"""

from __future__ import annotations

from gpusched.algorithms.predicted import PredictedOrderPolicy


class WCSDurationPolicy(PredictedOrderPolicy):
    """Queued jobs by predicted duration ascending, skipping those that do not fit."""

    name = "wcs-duration"
    by_workload = False
    work_conserving = True
