"""Passing the state tuple to compiled kernel functions by reference (imports Numba).

Numba passes a named tuple by value: the state's ~60 arrays become about 440 machine
arguments of every kernel function, unpacked at each entry and packed again at each call,
and the tuple's whole type is spelled out in the generated code at each use. That made
compiling the kernels slow (tens of seconds: about 58 MB of LLVM IR for the fused path).
:func:`ref` stores the tuple once in the entry point's stack frame and hands the inner
functions a pointer to it; ``st.field`` on that pointer loads the one array it names.
The interpreted twin of the kernels uses the tuple itself (see
:func:`gpusched.core.jit.by_ref`), so both forms run the same statements.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
from llvmlite import ir
from numba.core import cgutils, config, types
from numba.core.caching import FunctionCache
from numba.core.datamodel import models
from numba.core.datamodel.registry import default_manager
from numba.core.extending import (
    NativeValue,
    intrinsic,
    lower_getattr_generic,
    register_model,
    typeof_impl,
    unbox,
)
from numba.core.imputils import impl_ret_borrowed
from numba.core.registry import CPUDispatcher
from numba.core.typing.templates import AttributeTemplate, infer_getattr

from gpusched.core.aot import array_words

#: False under ``NUMBA_DISABLE_JIT=1`` (the kernels are then plain functions, given the tuple)
JIT = not config.DISABLE_JIT  # type: ignore[attr-defined]

_I8P = ir.IntType(8).as_pointer()


class StateRef(types.Type):  # type: ignore[misc]
    """A pointer to a named tuple of arrays held by the calling entry point."""

    def __init__(self, tuple_type: Any) -> None:
        self.tuple_type = tuple_type
        # the key (hashed and compared at every turn of type inference) and the name (in
        # every symbol name) are short: a digest of the tuple's type, not the type itself
        self.digest = _digest(tuple_type)
        super().__init__(name=f"StateRef({self.digest[:16]})")

    @property
    def key(self) -> Any:
        return self.__dict__.get("digest") or _digest(self.tuple_type)


def _digest(tuple_type: Any) -> str:
    return hashlib.sha1(str(tuple_type).encode()).hexdigest()


@register_model(StateRef)
class _StateRefModel(models.PrimitiveModel):  # type: ignore[misc]
    def __init__(self, dmm: Any, fe_type: Any) -> None:
        super().__init__(dmm, fe_type, _I8P)


@infer_getattr
class _StateRefAttributes(AttributeTemplate):  # type: ignore[misc]
    key = StateRef

    def generic_resolve(self, typ: Any, attr: str) -> Any:  # type: ignore[override]
        fields = typ.tuple_type.fields
        if attr in fields:
            return typ.tuple_type.types[fields.index(attr)]
        return None


def _offsets(context: Any, tuple_type: Any) -> list[int]:
    """Byte offset of each field in the stored tuple (as LLVM lays the struct out)."""
    llty = context.get_value_type(tuple_type)
    td = context.target_data
    return [llty.get_element_offset(td, i) for i in range(len(llty.elements))]


_OFFSETS: dict[Any, list[int]] = {}


@lower_getattr_generic(StateRef)
def _getattr(context: Any, builder: Any, typ: Any, value: Any, attr: str) -> Any:
    tt = typ.tuple_type
    offsets = _OFFSETS.get(tt)
    if offsets is None:
        offsets = _OFFSETS[tt] = _offsets(context, tt)
    i = tt.fields.index(attr)
    fe = tt.types[i]
    llty = context.get_value_type(fe)
    ptr = builder.gep(value, [ir.Constant(ir.IntType(64), offsets[i])], inbounds=True)
    loaded = builder.load(builder.bitcast(ptr, llty.as_pointer()))
    return impl_ret_borrowed(context, builder, fe, loaded)


class StateHandle:
    """The state tuple as compiled kernels read it through a :class:`StateRef`: each array's
    descriptor (Numba's array struct: meminfo, parent, size, item size, data pointer, shape,
    strides) laid out once in a block of words, whose address a compiled entry point takes
    as its one state argument. Calling an entry point then converts one object, not the
    tuple's ~60 arrays (and its compiled wrapper is small, so it compiles fast). The handle
    keeps the state alive; the arrays never move or change shape during a run.
    """

    __slots__ = ("address", "numba_type", "state", "_words")

    def __init__(self, state: Any) -> None:
        from numba import typeof

        tt = typeof(state)
        words: list[int] = []
        for name, a, t in zip(tt.fields, state, tt.types, strict=True):
            model = default_manager.lookup(t)
            if not isinstance(t, types.Array) or model._fields != _ARRAY_FIELDS:
                raise TypeError(f"state field {name}: not an array Numba lays out as expected")
            words += array_words(a)
        llty = default_manager.lookup(tt).get_value_type()
        if 8 * len(words) != sum(_words_of(e) for e in llty.elements) * 8:
            raise TypeError("the state's layout is not the one compiled kernels read")
        self._words = np.array(words, dtype=np.intp)
        self.address = int(self._words.ctypes.data)
        self.numba_type = StateRef(tt)
        self.state = state


_ARRAY_FIELDS = ("meminfo", "parent", "nitems", "itemsize", "data", "shape", "strides")


def _words_of(llty: Any) -> int:
    """Machine words of an array descriptor's LLVM type (only pointers and 64-bit integers,
    so no padding)."""
    n = 0
    for e in llty.elements:
        if isinstance(e, ir.PointerType) or e == ir.IntType(64):
            n += 1
        elif isinstance(e, ir.ArrayType) and e.element == ir.IntType(64):
            n += e.count
        else:
            raise TypeError(f"unexpected array descriptor member {e}")
    return n


@typeof_impl.register(StateHandle)
def _typeof_handle(val: StateHandle, c: Any) -> Any:
    return val.numba_type


@unbox(StateRef)  # type: ignore[misc]
def _unbox_handle(typ: Any, obj: Any, c: Any) -> Any:
    addr = c.pyapi.object_getattr_string(obj, "address")  # NULL (error set) if none
    out = cgutils.alloca_once_value(c.builder, ir.Constant(_I8P, None))
    with c.builder.if_then(cgutils.is_not_null(c.builder, addr), likely=True):
        ptr = c.pyapi.long_as_voidptr(addr)
        c.builder.store(c.builder.bitcast(ptr, _I8P), out)
        c.pyapi.decref(addr)
    is_error = cgutils.is_not_null(c.builder, c.pyapi.err_occurred())
    return NativeValue(c.builder.load(out), is_error=is_error)


@intrinsic  # type: ignore[misc]
def ref(typingctx: Any, st: Any) -> Any:
    """``ref(st)``: a :class:`StateRef` to the named tuple ``st`` (valid during the call); a
    :class:`StateRef` (an entry point called with a :class:`StateHandle`) as it is."""
    if isinstance(st, StateRef):
        return st(st), lambda context, builder, sig, args: args[0]
    if not isinstance(st, types.BaseNamedTuple):
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        llty = context.get_value_type(sig.args[0])
        slot = cgutils.alloca_once(builder, llty)
        builder.store(args[0], slot)
        return builder.bitcast(slot, _I8P)

    return StateRef(st)(st), codegen


#: this module's source: compiled kernels depend on it (the layout it reads, the types it
#: passes), so it is part of their key in Numba's cache, beside the kernel's own source
VERSION = hashlib.sha1(Path(__file__).read_bytes()).hexdigest()[:16]


class _Cache(FunctionCache):  # type: ignore[misc]
    def _index_key(self, sig: Any, codegen: Any) -> Any:
        return (*super()._index_key(sig, codegen), VERSION)


class PlainArgsDispatcher(CPUDispatcher):
    """Numba's dispatcher, except that a kernel function calling another one compiles the
    callee for the plain types of its arguments: Numba would compile one version per
    constant passed (``_log(st, EV_FINISH, j, t, 0)`` and ``_log(st, EV_START, ...)`` as
    two functions) and per integer width (a job index read from an int32 array, or
    counted in int64), which more than doubled some kernels' compile time for nothing.
    Signed integers are passed as int64 (every value fits). Its cache entries are also
    keyed by :data:`VERSION`."""

    def enable_caching(self) -> None:
        self._cache = _Cache(self.py_func)

    def compile(self, sig: Any) -> Any:
        from numba.core import sigutils

        from gpusched.core.jit import quiet_blas_probe

        args, _ = sigutils.normalize_signature(sig)
        if self.overloads.get(tuple(args)) is None:
            quiet_blas_probe()  # before Numba builds its typing and target registries
        return super().compile(sig)

    def get_call_template(self, args: Any, kws: Any) -> Any:
        args = tuple(_plain(a) for a in args)
        kws = {k: _plain(v) for k, v in kws.items()}
        return super().get_call_template(args, kws)


def _plain(t: Any) -> Any:
    t = types.unliteral(t)
    if isinstance(t, types.Integer) and t.signed:  # type: ignore[attr-defined]
        return types.int64  # job, GPU and count arguments: int32 or int64 alike
    return t
