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

import importlib.util
import sys
from pathlib import Path

import numpy as np


def _load_base() -> type:
    name = "gpusched_policies._a_srpt_base"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("a_srpt.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name].ASRPTPolicy  # type: ignore[no-any-return]


_ASRPT = _load_base()


class ASRPTPerfectPolicy(_ASRPT):  # type: ignore[misc, valid-type]
    """A-SRPT with the oracle predictor (true iterations)."""

    name = "a-srpt-perfect"
    knows_duration = True  # reads the true iterations of every job (through prepare)

    def __init__(
        self,
        *,
        tau: float = 256.0,
        comm_heavy: float = 1.5,
        rng: np.random.Generator | None = None,
    ) -> None:
        super().__init__(tau=tau, comm_heavy=comm_heavy, predictor="oracle", rng=rng)
