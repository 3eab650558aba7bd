"""A-SRPT-Perfect: A-SRPT (Alg. 1) with perfect knowledge of every job's training iterations.

The "A-SRPT-Perfect" baseline of Z. Luo, J. Liu, M. Lee and N. B. Shroff,
"Prediction-Assisted Online Distributed Deep Learning Workload Scheduling in GPU
Clusters", IEEE INFOCOM 2025, arXiv:2501.05563, Sec. V-A 2 ("uses A-SRPT with perfect
knowledge of job durations (i.e., perfect prediction)") and Sec. V-B 2-d. Identical to
``policies/a_srpt.py`` (loaded from the same folder by path, since policy files are not a
package) with the oracle predictor: :math:`\\tilde n_i = n_i`. Every choice documented
there applies here.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np

from gpusched.core.policy import Range
from gpusched.core.registry import sibling_policy

_ASRPT = sibling_policy(__file__, "a_srpt.py")


class ASRPTPerfectPolicy(_ASRPT):  # type: ignore[misc, valid-type]
    """A-SRPT with the oracle predictor (true iterations)."""

    name = "a-srpt-perfect"
    knows_duration = True  # reads the true iterations of every job (through prepare)

    def __init__(
        self,
        *,
        tau: Annotated[float, Range(0, 1e9)] = 256.0,
        comm_heavy: Annotated[float, Range(1, 1e6)] = 1.5,
        rng: np.random.Generator | None = None,
    ) -> None:
        super().__init__(tau=tau, comm_heavy=comm_heavy, predictor="oracle", rng=rng)
