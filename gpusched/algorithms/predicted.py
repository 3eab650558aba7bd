"""Shared pieces of the A-SRPT paper's prediction-based policies.

:func:`check_predictor` validates ``-p predictor=...`` and :func:`check_forest_options`
``-p encoding=...`` and ``-p unseen=...`` (the forest's training encoding and its rule for
jobs of unseen groups, :mod:`gpusched.algorithms.predict`); :class:`PredictedOrderPolicy`
is the common body of the baselines SPJF, SPWF, WCS-Duration and WCS-Workload (Luo et
al., INFOCOM 2025, Sec. V-A 1-d): queued jobs in ascending order of a predicted key,
placed with Heavy-Edge, non-preemptive. Each policy module subclasses it and states its
key and whether a job that does not fit blocks the queue. :func:`check_select` validates
the baselines' ``-p select=...``: how servers are chosen before Heavy-Edge maps the job.

The paper says only "All baselines adopt the Heavy-Edge algorithm for GPU mapping"; it
does not say which servers they take. The default, ``fewest``, is the placement Sec. IV-B
assumes when it estimates :math:`\tilde\alpha^{min}` ("each job is allocated to the fewest
servers possible"), with a best fit among single servers, as the engine's default
placement does for fifo and srtf. ``most`` (Alg. 1 line 9's rule for every job) and
``least`` (line 22's) are there to measure how much the comparison depends on it.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from gpusched.algorithms.pipeline_placer import start_in_order
from gpusched.algorithms.predict import ENCODINGS, KINDS, UNSEEN, fit, prediction_report
from gpusched.core.policy import Decision
from gpusched.errors import ParamError
from gpusched.jobmodels.pipeline_jobs import PipelineJobs

SELECT_KINDS = ("fewest", "most", "least")  #: server selection rules for ``-p select=``


def check_select(policy: str, select: str) -> str:
    """Return ``select`` if it is a known server selection rule, else raise :class:`ParamError`."""
    if select not in SELECT_KINDS:
        raise ParamError(
            f"policy '{policy}': select must be one of {', '.join(SELECT_KINDS)}, got '{select}'"
        )
    return select


def check_predictor(policy: str, predictor: str) -> str:
    """Return ``predictor`` if it is a known kind, else raise :class:`ParamError`."""
    if predictor not in KINDS:
        raise ParamError(
            f"policy '{policy}': predictor must be one of {', '.join(KINDS)}, got '{predictor}'"
        )
    return predictor


def check_forest_options(
    policy: str, predictor: str, encoding: str, unseen: str
) -> tuple[str, str]:
    """Return ``(encoding, unseen)`` if known and meaningful for ``predictor``, else raise.

    Both shape the random forest only: mean, median and oracle use no group, so a
    non-default value with them would change nothing and is refused rather than ignored.
    """
    if encoding not in ENCODINGS:
        raise ParamError(
            f"policy '{policy}': encoding must be one of {', '.join(ENCODINGS)}, got '{encoding}'"
        )
    if unseen not in UNSEEN:
        raise ParamError(
            f"policy '{policy}': unseen must be one of {', '.join(UNSEEN)}, got '{unseen}'"
        )
    if predictor != "forest":
        for key, value, default in (
            ("encoding", encoding, ENCODINGS[0]),
            ("unseen", unseen, UNSEEN[0]),
        ):
            if value != default:
                raise ParamError(
                    f"policy '{policy}': {key}={value} applies to predictor=forest only"
                    f" (predictor={predictor} uses no group)"
                )
    return encoding, unseen


class PredictedOrderPolicy:
    """Queued jobs by a predicted key ascending; Heavy-Edge placement (a base class).

    Subclasses set ``name``, ``by_workload`` (key :math:`g_i\\tilde n_i\\tilde\\alpha_i^{min}`
    in GPU-s instead of the duration :math:`\\tilde n_i\\tilde\\alpha_i^{min}` in s) and
    ``work_conserving`` (True: a job that does not fit is skipped; False: it blocks the
    queue). Ties go to the earlier submission.

    Parameters
    ----------
    predictor
        Iteration predictor: ``forest`` (the paper's), ``mean``, ``median`` or ``oracle``.
    select
        Server selection before Heavy-Edge: ``fewest`` (default), ``most`` or ``least``
        (see the module docstring).
    encoding
        The forest's training encoding of group and user: ``plain`` (default) or
        ``ordered`` (:mod:`gpusched.algorithms.predict`).
    unseen
        A job whose group has no training job: ``zero`` (default, the paper's "We predict
        0 iterations for unseen jobs") or ``forest`` (the rule off).
    rng
        Seeds the random forest.
    """

    name: ClassVar[str]
    by_workload: ClassVar[bool]
    work_conserving: ClassVar[bool]
    knows_duration = False
    needs_predictor = True

    def __init__(
        self,
        *,
        predictor: str = "forest",
        select: str = "fewest",
        encoding: str = ENCODINGS[0],
        unseen: str = UNSEEN[0],
        rng: np.random.Generator | None = None,
    ) -> None:
        self.predictor = check_predictor(self.name, predictor)
        self.select = check_select(self.name, select)
        self.encoding, self.unseen = check_forest_options(self.name, predictor, encoding, unseen)
        self.seed = int(rng.integers(2**31)) if rng is not None else 0

    def prepare(self, jobs: Any, cluster: Any) -> None:
        """Read job models and train the predictor on the history's finished jobs."""
        self.pj = PipelineJobs(jobs, cluster)
        self.jobs = jobs
        self.fit = fit(self.predictor, jobs, self.seed, encoding=self.encoding, unseen=self.unseen)
        key = self.fit.iterations * self.pj.alpha_min  # n~_i a~_i^min
        self.key = key * self.pj.n_gpus if self.by_workload else key

    def summary(self) -> dict[str, Any]:
        """summary.json's ``prediction``: the predictors' accuracy on the evaluated jobs."""
        return {
            "prediction": prediction_report(self.jobs, self.fit, self.seed, encoding=self.encoding)
        }

    def decide(self, view: Any, now: float) -> Decision:
        q = view.queued  # submission order, so the stable sort breaks ties by it
        order = q[np.argsort(self.key[q], kind="stable")]  # smallest predicted key first
        blocking = not self.work_conserving
        actions = start_in_order(view, self.pj, order, blocking=blocking, select=self.select)
        return Decision(actions=actions)
