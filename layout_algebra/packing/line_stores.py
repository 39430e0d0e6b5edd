"""Stores the compiled kernels cannot write in plain numba: past the caches, a fence, a memcpy.

Three numba intrinsics (LLVM instructions emitted directly; importing this module imports
``numba``):

* :func:`stream_line` copies one 64-byte line with a *non-temporal* store: the line goes to
  memory without being read into the cache first. A plain store to a line not in the cache
  reads it first, so a kernel that writes far more than the caches hold moves its output
  twice; ``memcpy`` of as many bytes avoids that the same way.
* :func:`store_fence` orders those stores: after it, every thread sees them.
* :func:`copy_run` copies a run of elements by one ``llvm.memcpy`` (a loop over elements in
  numba was not vectorized when both sides were 1-D arrays of the same type: 1 GB/s).

>>> import numpy as np
>>> from numba import njit
>>> @njit
... def lines(dst, src):
...     raw = np.empty(256, np.uint8)
...     at = (-raw.ctypes.data) % 64           # a line-aligned place in a buffer
...     copy_run(raw, at, src, 0, 64)
...     skip = (-dst.ctypes.data) % 64
...     stream_line(dst, skip, raw, at)
...     store_fence()
...     return skip
>>> src, dst = np.arange(64, dtype=np.uint8), np.zeros(192, np.uint8)
>>> skip = lines(dst, src)
>>> dst[skip : skip + 64].tolist() == list(range(64)), int(dst.sum()) == sum(range(64))
(True, True)
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["LINE", "copy_run", "store_fence", "stream_line"]

#: Bytes in a cache line: non-temporal stores write whole lines.
LINE = 64


@intrinsic
def stream_line(typingctx, dst, dst_at, src, src_at):  # type: ignore[no-untyped-def]
    """``dst[dst_at : dst_at + 64] = src[src_at : src_at + 64]`` by one non-temporal store
    (past the cache: no read of the line before it is written). Both addresses must be
    multiples of 64."""
    signature = types.void(dst, types.intp, src, types.intp)

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        target = context.make_array(sig.args[0])(context, builder, args[0])
        source = context.make_array(sig.args[2])(context, builder, args[2])
        line = ir.VectorType(ir.IntType(8), LINE)
        at_source = builder.bitcast(builder.gep(source.data, [args[3]]), line.as_pointer())
        at_target = builder.bitcast(builder.gep(target.data, [args[1]]), line.as_pointer())
        store = builder.store(builder.load(at_source, align=LINE), at_target, align=LINE)
        store.set_metadata("nontemporal", builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))
        return context.get_dummy_value()

    return signature, codegen


@intrinsic
def store_fence(typingctx):  # type: ignore[no-untyped-def]
    """A memory fence: the non-temporal stores before it are visible to every thread after it."""

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        builder.fence("seq_cst")
        return context.get_dummy_value()

    return types.void(), codegen


@intrinsic
def copy_run(typingctx, dst, dst_at, src, src_at, count):  # type: ignore[no-untyped-def]
    """``dst[dst_at : dst_at + count] = src[src_at : src_at + count]`` (arrays of one element
    size, not overlapping) by one ``llvm.memcpy``."""
    signature = types.void(dst, types.intp, src, types.intp, types.intp)

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        target = context.make_array(sig.args[0])(context, builder, args[0])
        source = context.make_array(sig.args[2])(context, builder, args[2])
        size = context.get_abi_sizeof(context.get_data_type(sig.args[0].dtype))
        at_target = builder.gep(target.data, [args[1]])
        at_source = builder.gep(source.data, [args[3]])
        cgutils.raw_memcpy(builder, at_target, at_source, args[4], size)
        return context.get_dummy_value()

    return signature, codegen


@intrinsic
def prefetch(typingctx, src, at):  # type: ignore[no-untyped-def]
    """Ask for the line holding ``src[at]`` to be brought into the caches (``llvm.prefetch``:
    a hint, no fault if ``at`` is out of bounds)."""
    signature = types.void(src, types.intp)

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        source = context.make_array(sig.args[0])(context, builder, args[0])
        byte = ir.IntType(8).as_pointer()
        address = builder.bitcast(builder.gep(source.data, [args[1]]), byte)
        i32 = ir.IntType(32)
        hint = builder.module.declare_intrinsic(
            "llvm.prefetch", fnty=ir.FunctionType(ir.VoidType(), [byte, i32, i32, i32])
        )
        builder.call(hint, [address, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return signature, codegen
