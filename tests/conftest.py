"""The suite runs on Numba's compiled kernels and the interpreted twin, as it always has:
``GPUSCHED_AOT=0`` unless the environment says otherwise. ``tests/test_aot.py`` runs the
kernels compiled ahead of time against both, and CI runs the engine's tests once more with
``GPUSCHED_AOT=1`` (see ``.ci/run``)."""

from __future__ import annotations

import os

os.environ.setdefault("GPUSCHED_AOT", "0")
