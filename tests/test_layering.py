"""Import layering: the [tool.importlinter] contracts of pyproject.toml hold.

The core (kernel, engine, state, view, policy, registry) imports no textual or typer;
the kernel imports only numpy, numba and gpusched.core.state; the bundled policies import
no numba, textual, typer, gpusched.core.engine or gpusched.core.kernel; the core imports no family
module (gpusched.jobmodels, gpusched.algorithms, gpusched.workloads) and finds job models
by name.
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


def test_core_finds_the_builtin_job_models_by_name():
    from gpusched.core import jobmodel

    names = [type(m).__module__ for m in jobmodel.job_models()]
    assert names == [
        "gpusched.jobmodels.catalogue",
        "gpusched.jobmodels.chunks",
        "gpusched.jobmodels.goodput",
        "gpusched.jobmodels.pipeline_jobs",
        "gpusched.jobmodels.ps",
        "gpusched.jobmodels.sharing",
    ]


def test_a_plain_run_imports_no_workload_module_and_no_sklearn():
    # finding the job models by name must not drag in the workloads or scikit-learn
    code = (
        "import sys; from gpusched.experiments.run import replay; replay(None, 'fifo'); "
        "print(sorted(m for m in sys.modules if m.startswith(('gpusched.workloads', "
        "'sklearn'))))"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "[]"
