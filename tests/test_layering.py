"""Import layering: the [tool.importlinter] contracts of pyproject.toml hold.

The core (kernel, engine, state, view, policy, registry) imports no textual or typer;
the kernel imports only numpy, numba and gpusched.state; the bundled policies import
no numba, textual, typer, gpusched.engine or gpusched.kernel.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which(
        "lint-imports"
    )
    assert exe, "lint-imports not found: pip install -e '.[test]' (it needs import-linter)"
    # from the repository root: policies/ is found there, as a namespace package
    r = subprocess.run(
        [exe, "--no-logo"], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert r.returncode == 0, r.stdout + r.stderr
