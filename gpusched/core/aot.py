"""The engine's kernels compiled ahead of time: a run that needs neither Numba nor LLVM.

Loading Numba's cached kernels means importing Numba, which loads LLVM and initialises its
native target: about 0.2 s of CPU and 60-70 MB of resident memory in every process, more
than a 10k-job run's whole simulation. The install's build hook (``hatch_build.py``) also
compiles the kernel's entry points (:data:`ENTRIES`: the fused path's, :data:`FUSED`, and
those the Python path calls at each decision, :data:`PYTHON`) into a CPython extension
module, ``gpusched/core/_kernels_aot.*.so``, with Numba's ahead-of-time compiler
(:mod:`gpusched.core.aot_build`). It is the same kernel source compiled by the same
compiler, for the argument types a run passes (:data:`ARGS`); a run calls it from its start
when it is there and fits (:func:`load`), and Numba's compiled kernels otherwise, as before.

When it fits. Its sidecar file ``_kernels_aot.json`` records what it was compiled from and
for:

* a digest of the sources compiled into it (:data:`SOURCES`): a checkout whose kernel has
  changed since the install falls back to Numba, which compiles the new source;
* for each entry point, the key of each argument's type (:func:`type_key`): the compiled
  wrappers check no array's element type, dimensions or layout, so a run whose state,
  configuration, timeline or buffers differ in any array's type, dimensions, layout or
  flags, or any scalar's type, falls back to Numba (which compiles a version for those
  types). The scalars and GPU lists the engine passes at each call are fixed by contract
  (see :class:`gpusched.core.jit.Kernels`), as for Numba's entry points it binds.

``GPUSCHED_AOT`` chooses: unset (or empty) uses the module when it fits; ``0`` never uses it
(Numba's kernels only); ``1`` requires it for every run on compiled kernels (an error names
what does not fit: CI's pass on these kernels). ``NUMBA_DISABLE_JIT=1`` (the kernels as
plain Python) never uses it. This module imports neither Numba nor llvmlite.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from gpusched.errors import GpuschedError

__all__ = [
    "ARGS",
    "ENTRIES",
    "FUSED",
    "MODULE",
    "PYTHON",
    "SOURCES",
    "Handle",
    "NotUsable",
    "choice",
    "load",
    "source_digest",
    "status",
    "type_key",
]

#: the compiled module's name, and its sidecar file (beside this file)
MODULE = "gpusched.core._kernels_aot"
META = Path(__file__).with_name("_kernels_aot.json")
#: the fused path's entry points (``Kernels.OTHERS``)
FUSED = (
    "run_fused",
    "run_fused_lazer",
    "sync_all",
    "first_decision_time",
    "next_event_time",
    "decision_time",
)
#: the Python path's, which the engine calls from Python at each decision
#: (``Kernels.PYTHON_PATH``)
PYTHON = (
    "step",
    "record",
    "compact_queue",
    "dequeue",
    "start_on",
    "start_job",
    "place_consolidated",
    "preempt",
    "set_rate",
    "fill_order",
    "check_order",
    "started_at",
)
#: every entry point it holds
ENTRIES = FUSED + PYTHON
#: each entry's arguments: the state (S), the kernel's config (C), a timeline (T), the
#: engine's buffer of finished jobs (done), or the types the engine always passes (``int``,
#: ``float``, ``bool``, and ``gpus``: an int32 array), as ``Kernels.use_compiled`` binds them
ARGS: dict[str, tuple[str, ...]] = {
    "run_fused": ("S", "C", "T", "int"),
    "run_fused_lazer": ("S", "C", "T", "int"),
    "sync_all": ("S",),
    "first_decision_time": ("S", "C"),
    "next_event_time": ("S", "C"),
    "decision_time": ("float", "float", "float"),
    "step": ("S", "C", "done"),
    "record": ("S", "C", "int", "T"),
    "compact_queue": ("S", "int"),
    "dequeue": ("S", "gpus", "int"),
    "start_on": ("S", "int", "gpus", "float"),
    "start_job": ("S", "int", "float"),
    "place_consolidated": ("S", "int", "bool"),
    "preempt": ("S", "int", "float"),
    "set_rate": ("S", "int", "float"),
    "fill_order": ("S", "C", "gpus", "bool", "bool"),
    "check_order": ("S", "gpus"),
    "started_at": ("S", "float", "gpus"),
}
#: the sources (in this folder) compiled into it: the kernel, the constants it inlines,
#: the state reference it reads the state through, the decorator that sets its options,
#: and the build itself
SOURCES = ("kernel.py", "state.py", "stateref.py", "jit.py", "aot_build.py")


class NotUsable(GpuschedError):
    """The ahead-of-time kernels were required (``GPUSCHED_AOT=1``) and do not fit."""


def choice() -> str:
    """``"auto"``, ``"off"`` or ``"required"``, from ``GPUSCHED_AOT`` (see the module)."""
    if os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0"):
        return "off"
    value = os.environ.get("GPUSCHED_AOT", "").strip()
    if value == "":
        return "auto"
    if value == "0":
        return "off"
    if value == "1":
        return "required"
    raise NotUsable(f"GPUSCHED_AOT={value!r}: expected 0, 1 or nothing")


def source_digest(folder: Path | None = None) -> str:
    """SHA-1 over the :data:`SOURCES` (in ``folder``, by default this module's)."""
    folder = folder or Path(__file__).parent
    h = hashlib.sha1()
    for name in SOURCES:
        h.update(name.encode() + b"\0" + (folder / name).read_bytes() + b"\0")
    return h.hexdigest()


def type_key(value: Any) -> str:
    """What a compiled wrapper assumes of ``value``: for an array its element type, number
    of dimensions, layout (C, F or A), and whether it is writeable and aligned (Numba types
    each of these apart); for a named tuple its class and each field's key; for a scalar
    its Python or NumPy type. Raises ``TypeError`` for anything else."""
    if isinstance(value, np.ndarray):
        if type(value) is not np.ndarray:
            raise TypeError(f"an array subclass {type(value).__name__}")
        f = value.flags
        layout = "C" if f.c_contiguous else "F" if f.f_contiguous else "A"
        return (
            f"{value.dtype.str}:{value.ndim}{layout}"
            f"{'w' if f.writeable else 'r'}{'a' if f.aligned else 'u'}"
        )
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        inner = ",".join(type_key(v) for v in value)
        return f"{type(value).__module__}.{type(value).__qualname__}({inner})"
    if isinstance(value, bool | int | float):
        return type(value).__name__
    if isinstance(value, np.generic):
        return f"np:{value.dtype.str}"
    raise TypeError(f"a value of type {type(value).__name__}")


def array_words(a: np.ndarray) -> list[int]:
    """Numba's array descriptor: meminfo, parent, size, item size, data, shape, strides."""
    return [0, 0, a.size, a.itemsize, a.ctypes.data, *a.shape, *a.strides]


class Handle:
    """The state as the compiled entry points read it: the arrays' descriptors laid out in
    a block of words whose address they take (what
    :class:`gpusched.core.stateref.StateHandle` builds with Numba's help, also from
    :func:`array_words`, whose field order it checks against Numba's data model). The
    handle keeps the state alive; its arrays never move or change shape during a run."""

    __slots__ = ("address", "state", "_words")

    def __init__(self, state: Any) -> None:
        words: list[int] = []
        for a in state:
            words += array_words(a)
        self._words = np.array(words, dtype=np.intp)
        self.address = int(self._words.ctypes.data)
        self.state = state


def _keys(entry: str, state: Any, cfg: Any, tl: Any, done: Any) -> list[str]:
    """The type keys of ``entry``'s arguments for a run with this state, config, timeline
    and buffer of finished jobs."""
    values = {"S": state, "C": cfg, "T": tl, "done": done, "gpus": np.empty(0, np.int32)}
    return [type_key(values[a]) if a in values else a for a in ARGS[entry]]


def _needed(fused_entry: str, python: bool) -> list[str]:
    """The entries a run binds: the fused path's (with its one fused entry), or the Python
    path's and those the fused path shares with it."""
    shared = ["sync_all", "first_decision_time", "next_event_time", "decision_time"]
    return [*PYTHON, *shared] if python else [fused_entry, *shared]


def _find(
    state: Any, cfg: Any, tl: Any, names: list[str], done: Any = None
) -> tuple[ModuleType | None, str]:
    """The compiled module if its entries ``names`` (:func:`_needed`) fit this run (``done``
    given for the Python path's), else None and why not."""
    if not META.is_file():
        return None, f"{META.name} is missing (the install did not build these kernels)"
    try:
        meta = json.loads(META.read_text(encoding="utf-8"))
        built_for: dict[str, list[str]] = meta["entries"]
        digest = meta["digest"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        return None, f"{META.name} is unreadable ({e})"
    if digest != source_digest():
        return None, "the kernel's sources changed since they were built"
    if done is None:
        done = np.empty(0, np.int32)  # (no entry the fused path binds takes it)
    for name in names:
        try:
            keys = _keys(name, state, cfg, tl, done)
        except TypeError as e:
            return None, f"{name}: an argument has no compiled type ({e})"
        if built_for.get(name) != keys:
            return None, f"{name}: this run's argument types differ from those built"
    try:
        module = importlib.import_module(MODULE)
    except ImportError as e:
        return None, f"{MODULE} does not load ({e})"
    missing = [n for n in names if not hasattr(module, n)]
    if missing:
        return None, f"{MODULE} lacks {', '.join(missing)}"
    return module, ""


def load(
    state: Any, cfg: Any, tl: Any, fused_entry: str, done: Any = None
) -> dict[str, Any] | None:
    """The entry points compiled ahead of time, bound to ``state`` as
    :class:`gpusched.core.jit.Kernels` calls them (``{"run_fused": ..., "sync_all": ...,
    ...}``): the fused path's (``run_fused`` is ``fused_entry``), or with ``done`` (the
    engine's buffer of finished jobs) the Python path's. None when they do not fit this run
    (see the module) or are not wanted. Raises :class:`NotUsable` when ``GPUSCHED_AOT=1``
    and they do not fit."""
    how = choice()
    if how == "off":
        return None
    names = _needed(fused_entry, done is not None)
    module, why = _find(state, cfg, tl, names, done)
    if module is None:
        if how == "required":
            raise NotUsable(f"GPUSCHED_AOT=1, but the ahead-of-time kernels do not fit: {why}")
        return None
    handle = Handle(state)
    bound: dict[str, Any] = {}
    for name in names:
        fn = getattr(module, name)
        if "gpus" in ARGS[name]:
            bound[name] = _checked(name, fn, handle)
        else:
            bound[name] = fn if ARGS[name][0] != "S" else partial(fn, handle)
    if done is None:
        bound["run_fused"] = bound[fused_entry]
    return bound


def _checked(name: str, fn: Any, handle: Handle) -> Any:
    """``fn`` bound to ``handle``, refusing a GPU list that is not a contiguous int32 array.

    Numba's ahead-of-time wrappers cannot raise the TypeError its just-in-time ones raise
    for an array of another item size (they crash the process: ``numba.pycc`` hands CPython
    the address of ``PyExc_TypeError`` for the exception), and neither checks the layout;
    the GPU lists are the only arrays the engine passes call by call (the others are its
    own buffers, checked once in :func:`load`), so they are checked here."""
    at = [i - 1 for i, a in enumerate(ARGS[name]) if a == "gpus"]

    def call(*args: Any) -> Any:
        for i in at:
            a = args[i]
            if not (
                type(a) is np.ndarray
                and a.dtype == np.int32
                and a.ndim == 1
                and a.flags.c_contiguous
            ):
                raise TypeError(
                    f"{name}: argument {i + 1} must be a contiguous 1-d int32 array, got "
                    f"{type(a).__name__} {getattr(a, 'dtype', '')}"
                )
        return fn(handle, *args)

    return call


def status() -> str:
    """One line for ``gpusched warm-up``: whether runs use these kernels, and if not, why
    not."""
    how = choice()
    if how == "off":
        return "not used (GPUSCHED_AOT=0 or NUMBA_DISABLE_JIT=1)"
    from gpusched.core.warmup import _warm_up_engine

    for path in ("fused", "python"):
        eng = _warm_up_engine(path, "interpreted")
        done = eng._done_buf if path == "python" else None
        names = _needed("run_fused", done is not None)
        module, why = _find(eng.state, eng.cfg, eng._tl_buf, names, done)
        if module is None:
            return f"not used: {why} (rebuild them: python -m gpusched.core.aot_build)"
    return "in use (the engine's kernels load without importing Numba)"
