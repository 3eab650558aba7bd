"""The kernels compiled at install (``hatch_build.py``) are the ones a run then loads.

Builds a wheel of this checkout as pip does (the build hook compiles every engine path
into a copy of the package), unpacks it elsewhere, and asks a fresh process whether each
path's kernels are in Numba's cache there: the cache must move with the package (Numba
keys it on the source's contents, not on its path or modification time). The kernels
compiled ahead of time (``gpusched/core/aot.py``) must be in the wheel too, and a
replay from it must run on them without importing Numba.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE = (
    "from gpusched.core.warmup import PATHS, compiled_in_cache; "
    "print(' '.join(str(compiled_in_cache(p)) for p in PATHS))"
)


def _env(**extra: str) -> dict[str, str]:
    """This environment without Numba's settings (so Numba uses the in-tree cache)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env.pop("PYTHONPATH", None)
    env.pop("GPUSCHED_PRECOMPILE", None)
    return {**env, **extra}


def _cached(site: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        env=_env(PYTHONPATH=str(site)),
        cwd=site,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


#: a replay of the bundled default trace that must run on the kernels compiled ahead of
#: time (GPUSCHED_AOT=1) and import no Numba
NATIVE = (
    "import sys\n"
    "from gpusched.cli import app\n"
    "sys.argv = ['gpusched', 'replay', '-P', 'tiresias']\n"
    "try:\n"
    "    app()\n"
    "except SystemExit as exc:\n"
    "    assert not exc.code, exc.code\n"
    "print('numba' in sys.modules)\n"
)


def _native(site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", NATIVE],
        env=_env(PYTHONPATH=str(site), GPUSCHED_AOT="1"),
        cwd=site,
        capture_output=True,
        text=True,
    )


def _wheel(out: Path, **env: str) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation"]
        + ["--quiet", "--wheel-dir", str(out)],
        env=_env(**env),
        cwd=out.parent,
        check=True,
    )
    (wheel,) = out.glob("gpusched-*.whl")
    return wheel


def test_the_wheel_carries_the_compiled_kernels(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path / "dist")
    assert not wheel.name.endswith("-none-any.whl"), wheel.name  # machine code: tagged
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    cache = site / "gpusched" / "core" / "__pycache__"
    assert sorted(cache.glob("kernel.*.nbi")) and sorted(cache.glob("kernel.*.nbc"))
    assert _cached(site) == "True True True"
    native = sorted((site / "gpusched" / "core").glob("_kernels_aot*"))
    assert [f.suffix for f in native] == [".so", ".json"], native
    done = _native(site)
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == "False", done.stderr
    for f in native:  # without them, a run that requires them says why and stops
        f.unlink()
    done = _native(site)
    assert done.returncode != 0 and "_kernels_aot.json is missing" in done.stderr
    for f in cache.glob("kernel.*.nb[ic]"):  # the same package without them: not cached
        f.unlink()
    assert _cached(site) == "False False False"


def test_precompile_0_builds_a_pure_python_wheel(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path / "dist", GPUSCHED_PRECOMPILE="0")
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
    with zipfile.ZipFile(wheel) as z:
        assert not [n for n in z.namelist() if n.endswith((".nbi", ".nbc", ".so"))]


def test_the_hook_compiles_every_engine_path() -> None:
    """The build hook names the warm-up's paths itself (it cannot import gpusched)."""
    import importlib.util

    from gpusched.core.warmup import PATHS

    spec = importlib.util.spec_from_file_location("hatch_build", ROOT / "hatch_build.py")
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    assert hook.PATHS == PATHS
