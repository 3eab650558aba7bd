"""OASiS as the PD-ORS paper runs it: the same primal-dual framework, workers and PSs apart.

Bao, Peng, Wu, Li, "Online Job Scheduling in Distributed Machine Learning Clusters",
INFOCOM 2018 (ref. [6] of Yu et al., TNSE 2022). The PD-ORS paper compares against it in
Sec. V (Figs. 8, 9, 12-17): "the key difference in OASiS is that parameter servers and
workers are located on two strictly separated sets of machines ... For OASiS, half of the
machines host parameter servers and the other half host workers. For fair comparisons, both
algorithms adopt the same Sigmoid utility function." So this is :mod:`policies.pd_ors`
(Alg. 1-4, the same prices, DP and rounding) with workers only on the first half of the
machines and PSs only on the second (H // 2 and the rest): no worker and PS ever share a
machine, so every slot is in Alg. 4's external case (there is no internal case).

Not reproduced: OASiS's own job model (a varying number of workers without a fixed global
batch, its own price functions); the PD-ORS paper replaces them with its own for the
comparison, and so do we.
"""

from __future__ import annotations

from gpusched.core.registry import sibling_policy

_PDORS = sibling_policy(__file__, "pd_ors.py")


class OASiSPolicy(_PDORS):  # type: ignore[misc, valid-type]
    """PD-ORS with workers and parameter servers on disjoint halves of the machines."""

    name = "oasis"
    split = True
