"""Compile the simulation kernels when gpusched is installed (a hatchling build hook).

Numba compiles the kernels (``gpusched/core/kernel.py``) at their first call and keeps them
in its cache: without this, the first long run after an install waits for that compile
(6-8 s of CPU for the fused path, several times a 100k-job run's own time). This hook runs
``python -m gpusched.core.warmup`` for every engine path at build time, as
``gpusched warm-up`` does, so that Numba's cache is full before the first run:

* **a wheel** (``pip install .``, or an sdist): the kernels are compiled in a copy of the
  package and their cache files (``gpusched/core/__pycache__/kernel.*.nbi`` and ``.nbc``)
  go into the wheel, which is then tagged for this interpreter and platform. Numba's
  in-tree cache finds them next to ``kernel.py`` after the install: from Numba 0.68 on, an
  entry is keyed on a hash of the source's contents (not its path or time), the Python and
  Numba versions and the machine's CPU, so it is used only where it was built for, and
  Numba compiles as usual anywhere else (and with an older Numba, which keys it on the
  source file's time: pip does not keep it);
* **an editable install** (``pip install -e .``): the kernels are compiled into the
  checkout's own ``gpusched/core/__pycache__``, where Numba looks for them.

It also compiles the kernels ahead of time (``python -m
gpusched.core.aot_build``: an extension module ``gpusched/core/_kernels_aot.*.so`` and its
sidecar ``_kernels_aot.json``, into the wheel or the checkout), which a run loads
without importing Numba (``gpusched/core/aot.py``). That needs a C compiler
and setuptools; without them the install warns and goes on, and runs use Numba's kernels.

Numba's in-tree cache is used only when ``NUMBA_CACHE_DIR`` is not set and the installed
package's folder is writable; otherwise the first long run compiles in the background as
before (``gpusched/core/background.py``). ``GPUSCHED_PRECOMPILE=0`` skips this hook. A
compile that fails is reported and skipped: the install goes on without it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

#: the engine paths to compile (``gpusched.core.warmup.PATHS``)
PATHS = ("fused", "lazer", "python")
#: where Numba's in-tree cache of the kernel module lives, inside the package
CACHE = Path("gpusched", "core", "__pycache__")
#: where the kernels compiled ahead of time go (``gpusched/core/aot.py``)
NATIVE = Path("gpusched", "core")


def _run(root: Path, module: str, *args: str, what: str) -> str:
    """Run ``python -m module args`` on the package under ``root`` (Numba's settings unset,
    so that it uses the in-tree cache) and return its output; raises ``RuntimeError`` with
    its errors if it fails."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env["PYTHONPATH"] = os.pathsep.join([str(root), *filter(None, [env.get("PYTHONPATH")])])
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{done.stderr.strip()}")
    return done.stdout


def compile_kernels(root: Path, paths: tuple[str, ...] = PATHS) -> list[Path]:
    """Compile the kernels of the package under ``root`` into its in-tree Numba cache and
    return the cache files (raises ``RuntimeError`` with the compile's output if it fails).
    """
    for path in paths:
        _run(root, "gpusched.core.warmup", path, what=f"compiling the {path} kernels")
    return sorted((root / CACHE).glob("kernel.*.nb[ic]"))


def build_native(root: Path) -> list[Path]:
    """Compile the kernels ahead of time into the package under ``root``
    (``gpusched/core/_kernels_aot.*``, see ``gpusched/core/aot.py``) and return the files;
    raises ``RuntimeError`` with the build's output if it fails."""
    out = _run(root, "gpusched.core.aot_build", what="compiling the kernels ahead of time")
    return [Path(line) for line in out.splitlines() if line.strip()]


class CustomBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    """Fill Numba's cache of the kernels and compile them ahead of time, at build
    time (see the module's docstring)."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        self._tmp: str | None = None
        if self.target_name != "wheel" or os.environ.get("GPUSCHED_PRECOMPILE") == "0":
            return
        root = Path(self.root)
        self.app.display_info("gpusched: compiling the simulation kernels (15-25 s) ...")
        target = root  # an editable install: into the checkout
        try:
            if version != "editable":  # a wheel: into a copy of the package
                self._tmp = tempfile.mkdtemp(prefix="gpusched-kernels-")
                target = Path(self._tmp)
                shutil.copytree(
                    root / "gpusched",
                    target / "gpusched",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "_kernels_aot*"),
                )
        except OSError as e:
            self.app.display_warning(f"gpusched: the kernels were not compiled at install ({e})")
            return
        try:
            files = compile_kernels(target)
            if not files:
                raise RuntimeError("the compile left no cache files")
        except (OSError, RuntimeError, subprocess.SubprocessError) as e:
            self.app.display_warning(
                f"gpusched: the kernels were not compiled at install ({e}); the first long "
                "run will compile them in the background"
            )
            files = []
        try:
            native = build_native(target)
        except (OSError, RuntimeError, subprocess.SubprocessError) as e:
            self.app.display_warning(
                f"gpusched: the kernels were not compiled ahead of time ({e}); "
                "runs will load Numba's compiled kernels instead"
            )
            native = []
        if version == "editable" or not (files or native):
            return
        for f in files:
            build_data["force_include"][str(f)] = str(CACHE / f.name)
        for f in native:
            build_data["force_include"][str(f)] = str(NATIVE / f.name)
        build_data["pure_python"] = False  # machine code for this interpreter and platform
        build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        tmp = getattr(self, "_tmp", None)  # (set by initialize)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
