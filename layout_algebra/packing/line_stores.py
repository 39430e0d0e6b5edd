"""Loads and stores the compiled kernels cannot write in plain numba: past the caches, a fence, a memcpy.

Numba intrinsics (LLVM instructions emitted directly; importing this module imports
``numba``), the one home of each for every kernel module:

* :func:`stream_line` copies one 64-byte line with a *non-temporal* store: the line goes to
  memory without being read into the cache first. A plain store to a line not in the cache
  reads it first, so a kernel that writes far more than the caches hold moves its output
  twice; ``memcpy`` of as many bytes avoids that the same way. The target must start a line
  (:func:`address`), the source need not.
* :func:`copy_line` copies one 64-byte line by one vector load and store, neither aligned.
* :func:`store_fence` orders non-temporal stores: after it, every thread sees them.
* :func:`copy_run` copies a run of elements by one ``llvm.memcpy`` (a loop over elements in
  numba was not vectorized when both sides were 1-D arrays of the same type: 1 GB/s).
* :func:`prefetch` asks for a line ahead of its use; :func:`address` is an element's address.

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

__all__ = ["LINE", "address", "copy_line", "copy_run", "prefetch", "store_fence", "stream_line"]

#: Bytes in a cache line: non-temporal stores write whole lines.
LINE = 64


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


_I32, _I64 = ir.IntType(32), ir.IntType(64)


def _line_signature(dst, src):  # type: ignore[no-untyped-def]
    if not (isinstance(dst, types.Array) and isinstance(src, types.Array) and dst.dtype == src.dtype):
        return None
    return types.void(dst, types.int64, src, types.int64)


def _line_codegen(streamed: bool):  # type: ignore[no-untyped-def]
    """One 64-byte vector load and store; ``streamed``: the store aligned and non-temporal."""

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        dst_type, _, src_type, _ = signature.args
        d, q, s, p = args
        size = max(1, src_type.dtype.bitwidth // 8)
        vector = ir.VectorType(context.get_data_type(src_type.dtype), 64 // size)
        src_data = context.make_array(src_type)(context, builder, s).data
        dst_data = context.make_array(dst_type)(context, builder, d).data
        value = builder.load(builder.bitcast(builder.gep(src_data, [p]), vector.as_pointer()), align=size)
        store = builder.store(
            value,
            builder.bitcast(builder.gep(dst_data, [q]), vector.as_pointer()),
            align=64 if streamed else size,
        )
        if streamed:
            store.set_metadata("nontemporal", builder.module.add_metadata([ir.Constant(_I32, 1)]))
        return context.get_dummy_value()

    return codegen


@intrinsic
def stream_line(typingctx, dst, q, src, p):  # type: ignore[no-untyped-def]
    """``dst[q : q + n] = src[p : p + n]`` for the ``n`` elements of 64 bytes, stored
    non-temporally: ``dst[q]`` must be 64-byte aligned (:func:`address`)."""
    sig = _line_signature(dst, src)
    return None if sig is None else (sig, _line_codegen(True))


@intrinsic
def address(typingctx, a, k):  # type: ignore[no-untyped-def]
    """The address of ``a[k]`` (a 1-D array), as an integer."""
    if not isinstance(a, types.Array):
        return None
    sig = types.int64(a, types.int64)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        return builder.ptrtoint(builder.gep(data, [args[1]]), _I64)

    return sig, codegen


@intrinsic
def store_fence(typingctx):  # type: ignore[no-untyped-def]
    """A fence after non-temporal stores: they are weakly ordered, and another thread must
    see them once the kernel has returned."""
    sig = types.void()

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        builder.fence("seq_cst")
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def copy_line(typingctx, dst, q, src, p):  # type: ignore[no-untyped-def]
    """``dst[q : q + n] = src[p : p + n]`` for the ``n`` elements of 64 bytes: one vector
    load and one vector store, neither aligned."""
    sig = _line_signature(dst, src)
    return None if sig is None else (sig, _line_codegen(False))
