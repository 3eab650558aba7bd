"""A_online-E: A_online on the edge servers only.

Wang et al., "Preemptive Scheduling for Distributed Machine Learning Jobs in Edge-Cloud
Networks", IEEE JSAC 2022, Sec. V-A: "A_online only schedules jobs on edge servers to show
how A_online trades off between the edge and cloud." This is :mod:`policies.a_online`
(Alg. 1-5) with the cloud left out of A_greedy's candidates (Alg. 2 lines 12-20 never
apply), so every chunk is dispatched to an edge worker by eq. 5.
"""

from __future__ import annotations

from gpusched.core.registry import sibling_policy

_AONLINE = sibling_policy(__file__, "a_online.py")


class AOnlineEPolicy(_AONLINE):  # type: ignore[misc, valid-type]
    """A_online without the cloud."""

    name = "a-online-e"
    edge_only = True
