"""Compile the kernel's entry points ahead of time (imports Numba; run by the install).

``python -m gpusched.core.aot_build`` compiles :data:`gpusched.core.aot.ENTRIES` of
:mod:`gpusched.core.kernel` (the fused path's and the Python path's) with Numba's
ahead-of-time compiler (``numba.pycc``) into the extension module
``gpusched/core/_kernels_aot.*.so`` beside this file, and writes its sidecar
``_kernels_aot.json`` (the sources' digest and the argument types built for); see
:mod:`gpusched.core.aot` for how a run uses them. ``hatch_build.py`` calls it at install.

The entry points are compiled from the same Python functions with the same options as
Numba's just-in-time ones (:data:`gpusched.core.kernel._JIT`: no reference counting, the
GIL released while they run), for the types the warm-up engines' runs pass
(:mod:`gpusched.core.warmup`; :data:`gpusched.core.aot.ARGS`), with the return types Numba
infers for them, and for a generic CPU of this architecture (the module may be used on
another machine than the one that built it). Building needs a C compiler (Numba's
compiler links its helper C code) and setuptools.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from gpusched.core import aot
from gpusched.core.state import new_timeline


@contextmanager
def _release_gil() -> Iterator[None]:
    """Numba's ahead-of-time compiler with the GIL released in its wrappers (as ``nogil``
    does for the just-in-time kernels: the TUI drives the kernel from a worker thread).
    ``numba.pycc`` takes no compile flags, so its flags class is swapped for the build."""
    pycc_compiler: Any = importlib.import_module("numba.pycc.compiler")
    base = pycc_compiler.Flags

    class Flags(base):  # type: ignore[misc, valid-type]  # (Numba's class)
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.release_gil = True

    pycc_compiler.Flags = Flags
    try:
        yield
    finally:
        pycc_compiler.Flags = base


def build(out: Path | None = None) -> list[Path]:
    """Compile the entry points into ``out`` (by default this package's folder) and return
    the files written: the extension module and its sidecar."""
    numba: Any = importlib.import_module("numba")  # (untyped: Any)
    typeof, types = numba.typeof, numba.types
    from numba.core.errors import NumbaPendingDeprecationWarning

    from gpusched.core import stateref
    from gpusched.core.jit import KERNEL_MODULE, compiled
    from gpusched.core.warmup import _warm_up_engine

    out = Path(out or Path(__file__).parent)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumbaPendingDeprecationWarning)  # (numba.pycc)
        CC = importlib.import_module("numba.pycc").CC

    eng = _warm_up_engine("python", "interpreted")  # its state, config and buffers' types
    state, cfg, tl, done = eng.state, eng.cfg, new_timeline(1), eng._done_buf
    native = stateref.StateHandle(state)
    if not np.array_equal(native._words, aot.Handle(state)._words):
        raise RuntimeError("aot.Handle lays the state out otherwise than Numba's StateHandle")
    fused = _warm_up_engine("fused", "interpreted")
    if aot.type_key(fused.state) != aot.type_key(state) or (
        aot.type_key(fused.cfg) != aot.type_key(cfg)
    ):
        raise RuntimeError("the fused and Python paths' states differ in type")
    numba_types = {
        "S": native.numba_type,
        "C": typeof(cfg),
        "T": typeof(tl),
        "done": typeof(done),
        "gpus": typeof(np.empty(0, np.int32)),
        "int": types.int64,
        "float": types.float64,
        "bool": types.boolean,
    }
    module = compiled(KERNEL_MODULE)
    sigs = {}
    for entry in aot.ENTRIES:
        args = tuple(numba_types[a] for a in aot.ARGS[entry])
        fn = getattr(module, entry)
        fn.compile(args)  # (loaded from Numba's cache, which the install filled first)
        sigs[entry] = fn.overloads[args].signature  # with the return type Numba inferred
    name = aot.MODULE.rpartition(".")[2]
    with tempfile.TemporaryDirectory(prefix="gpusched-aot-") as tmp:
        cc = CC(name)
        cc.output_dir = tmp
        cc.use_nrt = False  # the kernels allocate nothing (kernel._JIT)
        for entry, sig in sigs.items():
            cc.export(entry, sig)(getattr(module, entry).py_func)
        with _release_gil():
            cc.compile()
        (built,) = Path(tmp).glob(f"{name}.*")
        target = out / built.name
        _replace(target, built.read_bytes())
    keys = {e: aot._keys(e, state, cfg, tl, done) for e in aot.ENTRIES}
    meta = {"digest": aot.source_digest(Path(__file__).parent), "entries": keys}
    sidecar = out / aot.META.name
    _replace(sidecar, (json.dumps(meta, indent=1) + "\n").encode())
    return [target, sidecar]


def _replace(path: Path, data: bytes) -> None:
    """Write ``path`` by renaming a new file over it: a process that has the old module
    mapped keeps its own copy (overwriting it in place could crash that process)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.chmod(0o755 if path.suffix == ".so" else 0o644)
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    """``python -m gpusched.core.aot_build [OUT]``: build into OUT (default: the package)."""
    for path in build(Path(argv[0]) if argv else None):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
