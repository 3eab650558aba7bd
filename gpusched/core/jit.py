"""Compiled or interpreted: the two ways the simulation kernels run.

The kernel module (:mod:`gpusched.core.kernel`) decorates each function with :func:`jit`.
Imported normally, the module gets Numba dispatchers, compiled at their first call and
cached on disk. :func:`interpreted` executes the *same source file* a second time as a
separate module (``gpusched.core.kernel.interpreted``) whose functions stay plain Python: no
Numba import, no compilation, the same statements on the same arrays. Both twins read and
write a :class:`~gpusched.core.state.SimState` alike, so a run may start on one and go on with
the other.

Why both. Importing Numba and loading the cached kernels costs about 0.2 s of CPU in every
process, and compiling them several seconds (the install does it; see ``hatch_build.py``); a
small run is over in the interpreter before that. :class:`~gpusched.core.engine.Engine`
starts on the interpreted twin and moves to the compiled one when the run turns out to be
long (:data:`SWITCH`); when Numba's cache lacks them, once another process has compiled them
(:mod:`gpusched.core.background`).

``NUMBA_DISABLE_JIT=1`` still works as Numba documents it: the "compiled" twin then holds
the plain functions too.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

if TYPE_CHECKING:
    from gpusched.core.state import KernelConfig, SimState, Timeline

F = TypeVar("F", bound=Callable[..., Any])

#: suffix of an interpreted twin's module name
SUFFIX = ".interpreted"
#: the kernel module (compiled, or its interpreted twin)
KERNEL_MODULE = "gpusched.core.kernel"


@dataclass(frozen=True)
class Switch:
    """When an engine on the interpreted kernels moves to the compiled ones.

    After each chunk of decision points, with ``t`` CPU seconds spent interpreting and a
    progress ``f`` (the mean of the fractions of jobs arrived and of jobs done), the run
    moves on once ``t >= min_s`` and either its projected remaining interpreted time
    ``t * (1 - f) / f`` or ``t`` itself exceeds ``load_s``, about what loading the cached
    compiled kernels costs (importing Numba and its cache: 0.16-0.27 s of CPU time measured).
    The projection alone misjudges runs whose decisions grow dearer as the queue grows
    (tiresias with ``starve`` on philly-2000 projected under a second left for 3.5 s);
    moving at the latest once ``t`` reaches ``load_s`` bounds any run at about twice the
    cost of the better choice, whatever the projection said (the rent-or-buy rule).
    A run of more than ``max_jobs`` jobs (interpreted, 0.2-2 ms each) starts on the
    compiled kernels when they are in the cache. When they are not (a first run), the
    run starts compiling them in another process at the moment it would have moved on,
    goes on interpreted meanwhile, and moves on once they are in the cache
    (:mod:`gpusched.core.background`).
    """

    min_s: float = 0.05
    load_s: float = 0.2
    max_jobs: int = 5000
    chunk: int = 128  #: decision points per call while interpreted (fused path)


SWITCH = Switch()


def jit(options: dict[str, Any]) -> Callable[[F], F]:
    """Decorate a kernel function: a Numba dispatcher with ``options``, or (in an
    interpreted twin) the function itself."""

    def decorate(fn: F) -> F:
        if fn.__module__.endswith(SUFFIX):
            return fn
        from numba import njit

        from gpusched.core import stateref

        if not stateref.JIT:
            return njit(**options)(fn)  # type: ignore[no-any-return]
        dispatcher = njit(**{k: v for k, v in options.items() if k != "cache"})(fn)
        dispatcher.__class__ = stateref.PlainArgsDispatcher  # callees for plain types
        if options.get("cache"):
            dispatcher.enable_caching()  # keyed by stateref.VERSION too
        return dispatcher  # type: ignore[no-any-return]

    return decorate


def _same(st: Any) -> Any:
    return st


def by_ref(module: str) -> Callable[[Any], Any]:
    """What kernel module ``module`` calls as ``ref(st)`` in its entry points before handing
    the state to its inner functions: in compiled code a pointer to the state tuple (see
    :mod:`gpusched.core.stateref`), in the interpreted twin (or without the JIT) the tuple."""
    if module.endswith(SUFFIX):
        return _same
    from gpusched.core import stateref

    return stateref.ref if stateref.JIT else _same  # type: ignore[return-value]


def interpreted(name: str) -> ModuleType:
    """The interpreted twin of kernel module ``name`` (loaded once per process)."""
    twin = name + SUFFIX
    module = sys.modules.get(twin)
    if module is not None:
        return module
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:  # pragma: no cover - a broken installation
        raise ImportError(f"cannot find the source of {name}")
    twin_spec = importlib.util.spec_from_file_location(twin, spec.origin)
    assert twin_spec is not None and twin_spec.loader is not None
    module = importlib.util.module_from_spec(twin_spec)
    sys.modules[twin] = module
    try:
        twin_spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[twin]
        raise
    return module


def compiled(name: str) -> ModuleType:
    """Kernel module ``name`` with its Numba dispatchers (imports Numba)."""
    return importlib.import_module(name)


def is_cached(dispatcher: Any, args: tuple[Any, ...]) -> bool:
    """True if ``dispatcher`` has a compiled version for ``args`` loaded or in Numba's
    on-disk cache (then loaded, see :func:`load_cached`)."""
    if not hasattr(dispatcher, "compile"):
        return True  # NUMBA_DISABLE_JIT: plain functions
    import numba

    typeof: Callable[[Any], Any] = numba.typeof
    return load_cached(dispatcher, tuple(typeof(a) for a in args))


def load_cached(dispatcher: Any, sig: tuple[Any, ...], fast: bool = True) -> bool:
    """Load ``dispatcher``'s compiled version for the argument types ``sig`` from Numba's
    on-disk cache, as its first call would; False if it is not there (nothing compiled).

    Numba's own loading first builds its whole typing context (all of NumPy's typing
    and lowering registries: about a second here), which running cached machine code does
    not need; a compilation later in the process builds it as usual. This does what
    ``Dispatcher.compile`` does on a cache hit, without that step. It uses Numba's cache
    object, which Numba does not document: if that fails, Numba's own loading is used.
    ``fast=False`` uses Numba's own loading: it also sets up what compiled code that
    allocates arrays needs (Numba's runtime); the kernels allocate nothing (see
    :mod:`gpusched.core.kernel`), the families' helpers do.
    """
    if not hasattr(dispatcher, "compile"):
        return True
    from numba.core.compiler_lock import global_compiler_lock

    with global_compiler_lock:
        if dispatcher.overloads.get(tuple(sig)) is not None:
            return True
        ctx = dispatcher.targetctx
        cres = None
        if fast:
            try:
                cres = dispatcher._cache._load_overload(sig, ctx)
            except Exception:  # noqa: BLE001 - an undocumented API: fall back to Numba's way
                fast = False
        if not fast:
            cres = dispatcher._cache.load_overload(sig, ctx)
        if cres is None:
            return False
        if not cres.objectmode:
            ctx.insert_user_function(cres.entry_point, cres.fndesc, [cres.library])
        dispatcher.add_overload(cres)
        return True


_blas_checked = False


def quiet_blas_probe() -> None:
    """Keep Numba from importing SciPy's linear algebra only to probe for BLAS.

    When Numba first builds its CPU target it imports ``numba.np.arraymath``, which
    imports ``scipy.linalg`` (about 0.4 s) to learn whether ``np.dot`` and friends can be
    compiled. The kernels use no linear algebra, so when SciPy is not imported yet that
    module is imported with ``scipy.linalg`` hidden: Numba then records that BLAS is
    missing, which only affects jitted code calling ``np.dot`` (it falls back to a loop)
    or ``np.linalg`` (none here). A process that already imported ``scipy.linalg`` keeps
    Numba's normal probe. Called before a kernel compiles (see
    :class:`gpusched.core.stateref.PlainArgsDispatcher`), not when cached kernels are
    loaded: they need none of it (6 MB and 30 ms).
    """
    global _blas_checked
    if _blas_checked:
        return
    _blas_checked = True
    if "scipy.linalg" in sys.modules or "numba.np.arraymath" in sys.modules:
        return
    sys.modules["scipy.linalg"] = None  # type: ignore[assignment]  # its import fails
    try:
        importlib.import_module("numba.np.arraymath")
    finally:
        del sys.modules["scipy.linalg"]


class Kernels:
    """The kernels one run calls, bound to its state: the interpreted twin's plain functions
    or the compiled ones.

    Each kernel that takes the state is called without it (``k.step(cfg, done)`` for
    ``kernel.step(st, cfg, done)``): :meth:`use_interpreted` binds the plain functions of
    :mod:`gpusched.core.kernel`'s interpreted twin to the state tuple (see
    :mod:`gpusched.core.jit`; nothing imports Numba). :meth:`use_compiled` binds the Numba
    dispatchers to a :class:`~gpusched.core.stateref.StateHandle` of the state (one object
    to convert per call instead of the tuple's ~60 arrays), and the ones the Python path
    calls to their compiled entry points for this run: the dispatcher types every argument
    at every call, several calls per decision point, against about a microsecond for the
    compiled entry point itself. The engine knows the types (the state, its config and
    timeline are fixed for the run; jobs are ``int``, times ``float``, GPU lists
    ``int32``), so it asks the dispatcher once for the entry point of those types (loading
    or compiling it as a call would) and calls that. Every call below must pass exactly
    these types (``compact_queue`` its argument explicitly). Without the JIT
    (``NUMBA_DISABLE_JIT=1``) the plain functions are used.
    """

    #: kernels the Python path calls (bound when compiled)
    PYTHON_PATH = (
        "step record compact_queue dequeue start_on start_job place_consolidated preempt "
        "set_rate fill_order check_order started_at"
    ).split()
    #: kernels called a few times per run (left to the dispatcher)
    OTHERS = (
        "run_fused",
        "run_fused_lazer",
        "first_decision_time",
        "next_event_time",
        "decision_time",
        "sync_all",
    )
    #: the one kernel that takes no state
    STATELESS = ("decision_time",)

    def __init__(self, state: SimState, fused_entry: str = "run_fused") -> None:
        self.state = state
        #: the kernel's fused entry this run calls as ``run_fused``: ``"run_fused_lazer"``
        #: for Lazer's rule, so that other runs never load or compile it
        self.fused_entry = fused_entry
        self.compiled = False  # (nothing bound until use_interpreted or use_compiled)
        #: the kernels compiled ahead of time are bound (see use_native)
        self.native = False

    def use_interpreted(self) -> None:
        """Call the plain Python functions of the kernel's interpreted twin."""
        self._bind(interpreted(KERNEL_MODULE), self.state)
        self.compiled = self.native = False

    def _bind(self, module: ModuleType, st: Any) -> None:
        for name in self.PYTHON_PATH + list(self.OTHERS):
            fn = getattr(module, name)
            setattr(self, name, fn if name in self.STATELESS else partial(fn, st))
        self.run_fused = getattr(self, self.fused_entry)

    def use_native(self, cfg: KernelConfig, tl: Timeline, done: np.ndarray | None) -> bool:
        """Call the kernels compiled ahead of time, if they fit this run (see
        :mod:`gpusched.core.aot`: no Numba import): the fused path's, or with ``done``
        (the engine's buffer of finished jobs) the Python path's. False (nothing bound) if
        not."""
        from gpusched.core import aot

        bound = aot.load(self.state, cfg, tl, self.fused_entry, done)
        if bound is None:
            return False
        for name, fn in bound.items():
            setattr(self, name, fn)
        self.compiled = self.native = True
        return True

    def use_compiled(self, cfg: KernelConfig, tl: Timeline, done: np.ndarray, python: bool) -> None:
        """Call the compiled kernels (loaded from Numba's cache, or compiled), the Python
        path's (if ``python``) bound to these types."""
        import numba
        from numba import types

        self.native = False
        module = compiled(KERNEL_MODULE)
        if not hasattr(module.run_fused, "compile"):  # NUMBA_DISABLE_JIT: plain functions
            self._bind(module, self.state)
            self.compiled = True
            return
        handle = state_handle(self.state)
        typeof: Callable[[Any], Any] = numba.typeof
        S, C = handle.numba_type, typeof(cfg)
        i, f, b = types.int64, types.float64, types.boolean
        gpus = typeof(np.empty(0, np.int32))
        fused_sig = (S, C, typeof(tl), i)
        fused = getattr(module, self.fused_entry)
        if not python:  # loaded now, without Numba's slower way of a first call
            load_cached(fused, fused_sig)
        load_cached(module.sync_all, (S,))
        self._bind(module, handle)
        self.compiled = True
        if not python:
            # a fused rule that asks the policy (Fused.asks) crosses into the kernel once
            # per question: bound as the Python path's kernels are (see above)
            self.run_fused = partial(fused.compile(fused_sig), handle)
            return

        def bind(name: str, *sig: Any) -> None:
            fn = getattr(module, name)
            load_cached(fn, (S, *sig))
            # the entry point loaded, or compiled now
            setattr(self, name, partial(fn.compile((S, *sig)), handle))

        bind("step", C, typeof(done))
        bind("record", C, i, typeof(tl))
        bind("compact_queue", i)
        bind("dequeue", gpus, i)
        bind("start_on", i, gpus, f)
        bind("start_job", i, f)
        bind("place_consolidated", i, b)
        bind("preempt", i, f)
        bind("set_rate", i, f)
        bind("fill_order", C, gpus, b, b)
        bind("check_order", gpus)
        bind("started_at", f, gpus)

    def load_peek(self, cfg: KernelConfig) -> bool:
        """Load the compiled kernels that only ``Engine.peek`` calls (the TUI) from Numba's
        cache, without the typing context a first call builds; False if one is missing."""
        if self.native:
            return True  # bound with the others (see use_native)
        import numba
        from numba import types

        module = compiled(KERNEL_MODULE)
        if not hasattr(module.run_fused, "compile"):
            return True
        typeof: Callable[[Any], Any] = numba.typeof
        S, C, f = state_handle(self.state).numba_type, typeof(cfg), types.float64
        return (
            load_cached(module.first_decision_time, (S, C))
            and load_cached(module.next_event_time, (S, C))
            and load_cached(module.decision_time, (f, f, f))
        )


def state_handle(st: SimState) -> Any:
    """What compiled entry points take for the state ``st`` (imports Numba): a
    :class:`~gpusched.core.stateref.StateHandle`, or ``st`` itself without the JIT."""
    from gpusched.core import stateref

    return stateref.StateHandle(st) if stateref.JIT else st
