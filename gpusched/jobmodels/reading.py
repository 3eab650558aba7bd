"""The performance model's readings of the A-SRPT paper's Sec. III-B.

Z. Luo, J. Liu, M. Lee and N. B. Shroff, "Prediction-Assisted Online Distributed Deep
Learning Workload Scheduling in GPU Clusters" (A-SRPT), IEEE INFOCOM 2025, arXiv:2501.05563.
Eq. (6)'s first case is garbled in the text and eq. (4) does not say whether Table I's batch
size is split over a stage's replicas; :class:`Reading` names the choice, a cluster file sets
it (``allreduce_reading``, ``batch_reading``) and :mod:`gpusched.jobmodels.pipeline` applies
it. See ``docs/a-srpt.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# The cluster file's vocabulary (the core validates the keys; this module gives them meaning).
from gpusched.io.cluster import ALLREDUCE_READINGS, BATCH_READINGS

__all__ = ["ALLREDUCE_READINGS", "BATCH_READINGS", "DEFAULT_READING", "Reading", "reading_of"]


@dataclass(frozen=True, slots=True)
class Reading:
    """How the performance model reads the two ambiguous places of Sec. III-B.

    Attributes
    ----------
    allreduce
        Eq. (6) when some replicas of the stage sit on other servers
        (:math:`0 < x_s^m < k_s`): ``"share"``, per-replica ring data through the server's
        reserved NIC share, :math:`2g(k_s-1)h_s/(k_s B_{inter})`; or ``"literal"``, the
        formula as typeset, :math:`2(k_s-1)h_s/(x_s^m B_{inter})`.
    batch
        ``"split"``: the model's batch size is the whole mini-batch of one iteration, split
        over a stage's :math:`k_s` replicas (compute and boundary activations divided by
        :math:`k_s`); ``"per-replica"``: it is each replica's batch (nothing divided).

    Raises
    ------
    ValueError
        A value outside :data:`ALLREDUCE_READINGS` / :data:`BATCH_READINGS`.
    """

    allreduce: str = "share"
    batch: str = "split"

    def __post_init__(self) -> None:
        if self.allreduce not in ALLREDUCE_READINGS:
            raise ValueError(
                f"allreduce reading must be one of {', '.join(ALLREDUCE_READINGS)}, "
                f"got {self.allreduce!r}"
            )
        if self.batch not in BATCH_READINGS:
            raise ValueError(
                f"batch reading must be one of {', '.join(BATCH_READINGS)}, got {self.batch!r}"
            )

    @property
    def label(self) -> str:
        """``"allreduce/batch"``, e.g. ``"share/split"``."""
        return f"{self.allreduce}/{self.batch}"


#: Today's reading: eq. (6) through the reserved NIC share, the mini-batch split over replicas.
DEFAULT_READING = Reading()


def reading_of(cluster: Any) -> Reading:
    """The :class:`Reading` a cluster spec chooses (its ``allreduce_reading`` and
    ``batch_reading``; the defaults for an object without them)."""
    return Reading(
        getattr(cluster, "allreduce_reading", DEFAULT_READING.allreduce),
        getattr(cluster, "batch_reading", DEFAULT_READING.batch),
    )
