"""Square blocks transposed in vector registers, as numba intrinsics.

The loops of :mod:`layout_algebra.packing.transpose_kernels` move data in pieces that LLVM
would not find on its own; each piece is written here in LLVM IR (numba's ``intrinsic``),
to be inlined into compiled code:

* :func:`transpose8`: an 8x8 block of elements, 8 vector loads, three butterfly stages of
  ``shufflevector`` (:func:`butterfly_masks`: each swaps one bit of the row index with the
  same bit of the column index) and 8 vector stores; :func:`transpose8_stream` stores its
  rows non-temporally.
* :func:`transpose16`: a 16x16 block of 4-byte elements, each row one 64-byte vector, the
  rows of either side in groups (the 2 rows of an ``f8`` tile, then the next tile);
  :func:`transpose16_at` starting at any row of a group, :func:`transpose16_stream` stored
  past the caches, :func:`transpose16_part` and :func:`transpose16_seam` masked to some
  columns.

The single 64-byte lines the loops move around these blocks (``copy_line``, ``stream_line``),
an element's ``address`` and ``store_fence`` are in :mod:`layout_algebra.packing.line_stores`.

Each is typed for the arrays it gets (unsigned and signed integers, floats) and reads and
writes exactly its elements: bounds are the caller's.

>>> import numpy as np
>>> from numba import njit
>>> @njit
... def transposed(dst, src):
...     transpose8(dst, 0, 8, src, 0, 8)      # dst[a * 8 + b] = src[a + b * 8]
>>> src = np.arange(64, dtype=np.uint32)
>>> dst = np.zeros(64, np.uint32)
>>> transposed(dst, src)
>>> np.array_equal(dst.reshape(8, 8), src.reshape(8, 8).T)
True
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir
from numba import types
from numba.core.extending import intrinsic

__all__ = [
    "butterfly_masks",
    "transpose8",
    "transpose8_stream",
    "transpose16",
    "transpose16_at",
    "transpose16_part",
    "transpose16_seam",
    "transpose16_seam_rows",
    "transpose16_stream",
]


def butterfly_masks(n: int = 8) -> list[tuple[int, list[int], list[int]]]:
    """The ``log2(n)`` stages of an ``n`` x ``n`` transpose as ``shufflevector`` masks.

    Stage ``k`` swaps bit ``k`` of the row index with bit ``k`` of the column index. Rows
    ``i`` and ``i + s`` (``s = 2**k``, bit ``k`` of ``i`` clear) become, from the ``2n``
    elements of the two rows (the second row's numbered from ``n``): row ``i`` takes its own
    element ``j`` where bit ``k`` of ``j`` is clear, else the other row's ``j - s``; row
    ``i + s`` takes the first row's ``j + s`` where it is clear, else its own ``j``.

    >>> butterfly_masks()[0]
    (1, [0, 8, 2, 10, 4, 12, 6, 14], [1, 9, 3, 11, 5, 13, 7, 15])
    >>> [s for s, _, _ in butterfly_masks(16)]
    [1, 2, 4, 8]
    """
    stages = []
    s = 1
    while s < n:
        low = [n + j - s if j & s else j for j in range(n)]
        high = [n + j if j & s else j + s for j in range(n)]
        stages.append((s, low, high))
        s <<= 1
    return stages


def _butterflies(builder, rows: list[Any]) -> list[Any]:  # type: ignore[no-untyped-def]
    """The rows of a square block of vectors (LLVM values), transposed by :func:`butterfly_masks`."""
    n = len(rows)
    for s_, low, high in butterfly_masks(n):
        new = list(rows)
        for i in range(n):
            if not i & s_:
                first, second = rows[i], rows[i + s_]
                new[i] = builder.shuffle_vector(first, second, ir.Constant(ir.VectorType(_I32, n), low))
                new[i + s_] = builder.shuffle_vector(first, second, ir.Constant(ir.VectorType(_I32, n), high))
        rows = new
    return rows


_I32, _I64 = ir.IntType(32), ir.IntType(64)


def _transpose8_codegen(pieces: int):  # type: ignore[no-untyped-def]
    """The LLVM IR of :func:`transpose8` (``pieces == 0``), or of :func:`transpose8_stream`
    (each row of 8 stored non-temporally in ``pieces`` aligned parts)."""

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        dst_type, _, _, src_type, _, _ = signature.args
        d, q, dr, s, p, sr = args
        dst_data = context.make_array(dst_type)(context, builder, d).data
        src_data = context.make_array(src_type)(context, builder, s).data
        vector = ir.VectorType(context.get_data_type(src_type.dtype), 8)
        align = max(1, src_type.dtype.bitwidth // 8)

        def at(data, base, step, k):  # type: ignore[no-untyped-def]
            index = builder.add(base, builder.mul(step, ir.Constant(_I64, k)))
            return builder.bitcast(builder.gep(data, [index]), vector.as_pointer())

        rows = _butterflies(builder, [builder.load(at(src_data, p, sr, b), align=align) for b in range(8)])
        for a in range(8):
            if not pieces:
                builder.store(rows[a], at(dst_data, q, dr, a), align=align)
                continue
            # aligned parts of the row (the caller checked), stored past the caches
            part = ir.VectorType(vector.element, 8 // pieces)
            row = builder.bitcast(at(dst_data, q, dr, a), part.as_pointer())
            for k in range(pieces):
                lanes = ir.Constant(
                    ir.VectorType(_I32, part.count), list(range(k * part.count, (k + 1) * part.count))
                )
                value = builder.shuffle_vector(rows[a], rows[a], lanes)
                store = builder.store(
                    value, builder.gep(row, [ir.Constant(_I64, k)]), align=part.count * align
                )
                store.set_metadata("nontemporal", builder.module.add_metadata([ir.Constant(_I32, 1)]))
        return context.get_dummy_value()

    return codegen


def _transpose8_signature(dst, src):  # type: ignore[no-untyped-def]
    if not (isinstance(dst, types.Array) and isinstance(src, types.Array) and dst.dtype == src.dtype):
        return None
    return types.void(dst, types.int64, types.int64, src, types.int64, types.int64)


@intrinsic
def transpose8(typingctx, dst, q, dr, src, p, sr):  # type: ignore[no-untyped-def]
    """``dst[q + a * dr + b] = src[p + a + b * sr]`` for ``a, b < 8``: an 8x8 block, in registers.

    Both arrays 1-D with the same element type; no bounds checks (the callers' loops keep
    inside the arrays)."""
    sig = _transpose8_signature(dst, src)
    return None if sig is None else (sig, _transpose8_codegen(0))


@intrinsic
def transpose8_stream(typingctx, dst, q, dr, src, p, sr):  # type: ignore[no-untyped-def]
    """:func:`transpose8` with non-temporal stores (written to memory, not kept in the
    caches: a copy much larger than the caches then does not read the destination's lines
    first). Each row of 8 elements stored must be aligned to its size."""
    sig = _transpose8_signature(dst, src)
    return None if sig is None else (sig, _transpose8_codegen(1))


def _row_offset(builder, r: int, outer, inner, shift, first=None):  # type: ignore[no-untyped-def]
    """``(r >> shift) * outer + (r & (2**shift - 1)) * inner`` in LLVM IR (``r`` a constant,
    plus ``first`` if given)."""
    row = ir.Constant(_I64, r) if first is None else builder.add(first, ir.Constant(_I64, r))
    return _row_at(builder, row, outer, inner, shift)


def _row_at(builder, row, outer, inner, shift):  # type: ignore[no-untyped-def]
    """:func:`_row_offset` of a row known at run time (an LLVM value)."""
    mask = builder.sub(builder.shl(ir.Constant(_I64, 1), shift), ir.Constant(_I64, 1))
    return builder.add(
        builder.mul(builder.lshr(row, shift), outer), builder.mul(builder.and_(row, mask), inner)
    )


def _transpose16_codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
    """The LLVM IR of :func:`transpose16` (10 arguments) or :func:`transpose16_at` (12: each
    side's ``first`` after its shift)."""
    firsts = len(args) == 12
    half = len(args) // 2
    dst_type, src_type = signature.args[0], signature.args[half]
    d, q, d_outer, d_inner, d_shift = args[:5]
    s, p, s_outer, s_inner, s_shift = args[half : half + 5]
    d_first, s_first = (args[5], args[11]) if firsts else (None, None)
    dst_data = context.make_array(dst_type)(context, builder, d).data
    src_data = context.make_array(src_type)(context, builder, s).data
    vector = ir.VectorType(context.get_data_type(src_type.dtype), 16)
    align = max(1, src_type.dtype.bitwidth // 8)

    def at(data, base, r, outer, inner, shift, first):  # type: ignore[no-untyped-def]
        index = builder.add(base, _row_offset(builder, r, outer, inner, shift, first))
        return builder.bitcast(builder.gep(data, [index]), vector.as_pointer())

    rows = [
        builder.load(at(src_data, p, b, s_outer, s_inner, s_shift, s_first), align=align) for b in range(16)
    ]
    for a, row in enumerate(_butterflies(builder, rows)):
        builder.store(row, at(dst_data, q, a, d_outer, d_inner, d_shift, d_first), align=align)
    return context.get_dummy_value()


@intrinsic
def transpose16(typingctx, dst, q, d_outer, d_inner, d_shift, src, p, s_outer, s_inner, s_shift):  # type: ignore[no-untyped-def]
    """``dst[q + row_d(a) + b] = src[p + row_s(b) + a]`` for ``a, b < 16``: a 16x16 block in
    registers (64-byte rows of 4-byte elements: whole cache lines on both sides), where row
    ``r`` of each side starts at ``(r >> shift) * outer + (r & (2**shift - 1)) * inner`` (rows
    in groups of ``2**shift``: the few rows of a tile, then the next tile). Both arrays 1-D
    with the same element type; no bounds checks."""
    if not (isinstance(dst, types.Array) and isinstance(src, types.Array) and dst.dtype == src.dtype):
        return None
    i64 = types.int64
    return types.void(dst, i64, i64, i64, i64, src, i64, i64, i64, i64), _transpose16_codegen


@intrinsic
def transpose16_at(
    typingctx, dst, q, d_outer, d_inner, d_shift, d_first, src, p, s_outer, s_inner, s_shift, s_first
):  # type: ignore[no-untyped-def]
    """:func:`transpose16` from row ``first`` of each side's group on: row ``r`` of ``dst`` at
    ``q + ((d_first + r) >> d_shift) * d_outer + ((d_first + r) & (2**d_shift - 1)) * d_inner``,
    likewise ``src`` (a block that need not start a group: :func:`aligned_rows`)."""
    if not (isinstance(dst, types.Array) and isinstance(src, types.Array) and dst.dtype == src.dtype):
        return None
    i64 = types.int64
    return types.void(dst, i64, i64, i64, i64, i64, src, i64, i64, i64, i64, i64), _transpose16_codegen


def _lanes_between(builder, lo, hi):  # type: ignore[no-untyped-def]
    """The mask of lanes ``lo <= k < hi`` of 16 (``lo``, ``hi``: 64-bit values)."""
    wide = ir.VectorType(_I64, 16)
    lo, hi = (
        builder.shuffle_vector(
            builder.insert_element(ir.Constant(wide, ir.Undefined), v, _I32(0)),
            ir.Constant(wide, ir.Undefined),
            ir.Constant(ir.VectorType(_I32, 16), [0] * 16),
        )
        for v in (lo, hi)
    )
    lanes = ir.Constant(wide, list(range(16)))
    return builder.and_(builder.icmp_signed(">=", lanes, lo), builder.icmp_signed("<", lanes, hi))


def _masked(builder, vector, element_bits: int, op: str):  # type: ignore[no-untyped-def]
    """LLVM's ``masked.store`` (``op`` "store": ``vector``, pointer, alignment, mask; the lanes
    off in the mask are not touched) or ``masked.load`` ("load": pointer, alignment, mask, the
    values of the lanes off, which are not read) of 16 lanes."""
    kind = "f" if isinstance(vector.element, (ir.FloatType, ir.DoubleType)) else "i"
    name = f"llvm.masked.{op}.v16{kind}{element_bits}.p0"
    mask = ir.VectorType(ir.IntType(1), 16)
    signature = (
        ir.FunctionType(ir.VoidType(), [vector, vector.as_pointer(), _I32, mask])
        if op == "store"
        else ir.FunctionType(vector, [vector.as_pointer(), _I32, mask, vector])
    )
    return builder.module.globals.get(name) or ir.Function(builder.module, signature, name=name)


def _transpose16_from_codegen(mode: str):  # type: ignore[no-untyped-def]
    """The LLVM IR of :func:`transpose16_stream` (``mode`` "stream"), :func:`transpose16_part`
    ("part") or :func:`transpose16_seam` ("seam")."""

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        dst_type, src_type = signature.args[0], signature.args[5]
        d, q, d_outer, d_inner, d_shift, s, p, s_outer, s_inner, s_shift, first = args[:11]
        dst_data = context.make_array(dst_type)(context, builder, d).data
        src_data = context.make_array(src_type)(context, builder, s).data
        vector = ir.VectorType(context.get_data_type(src_type.dtype), 16)
        align = max(1, src_type.dtype.bitwidth // 8)

        def source(r):  # type: ignore[no-untyped-def]
            row = builder.add(first, ir.Constant(_I64, r))
            if mode == "seam":  # rows first .. first + t - 1, then 0 .. 15 - t
                t = args[11]
                row = builder.select(
                    builder.icmp_signed("<", ir.Constant(_I64, r), t),
                    row,
                    builder.sub(ir.Constant(_I64, r), t),
                )
            offset = _row_at(builder, row, s_outer, s_inner, s_shift)
            return builder.bitcast(builder.gep(src_data, [builder.add(p, offset)]), vector.as_pointer())

        def at(index):  # type: ignore[no-untyped-def]
            return builder.bitcast(builder.gep(dst_data, [index]), vector.as_pointer())

        if mode != "stream":
            masked = _masked(builder, vector, src_type.dtype.bitwidth, "store")
            sixteen = ir.Constant(_I64, 16)
            if mode == "part":
                parts = [(_lanes_between(builder, args[11], args[12]), ir.Constant(_I64, 0))]
            else:  # lanes below t to columns first.., the others to columns 0..
                t = args[11]
                parts = [
                    (_lanes_between(builder, ir.Constant(_I64, 0), t), first),
                    (_lanes_between(builder, t, sixteen), builder.neg(t)),
                ]
        d_first = args[12] if mode == "seam" else None  # the seam's first row of dst's group
        rows = [builder.load(source(b), align=align) for b in range(16)]
        for a, row in enumerate(_butterflies(builder, rows)):
            index = builder.add(q, _row_offset(builder, a, d_outer, d_inner, d_shift, d_first))
            if mode == "stream":
                store = builder.store(row, at(index), align=64)
                store.set_metadata("nontemporal", builder.module.add_metadata([ir.Constant(_I32, 1)]))
                continue
            for lanes, shift in parts:
                builder.call(masked, [row, at(builder.add(index, shift)), _I32(align), lanes])
        return context.get_dummy_value()

    return codegen


def _transpose16_seam_rows_codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
    """The LLVM IR of :func:`transpose16_seam_rows`."""
    dst_type, src_type = signature.args[0], signature.args[5]
    d, q, d_outer, d_inner, d_shift, s, p, s_outer, s_inner, s_shift, s_first, first, t = args
    dst_data = context.make_array(dst_type)(context, builder, d).data
    src_data = context.make_array(src_type)(context, builder, s).data
    vector = ir.VectorType(context.get_data_type(src_type.dtype), 16)
    bits = src_type.dtype.bitwidth
    align = max(1, bits // 8)
    masked = _masked(builder, vector, bits, "load")
    tail, head = (
        _lanes_between(builder, ir.Constant(_I64, 0), t),
        _lanes_between(builder, t, ir.Constant(_I64, 16)),
    )

    def at(data, index):  # type: ignore[no-untyped-def]
        return builder.bitcast(builder.gep(data, [index]), vector.as_pointer())

    rows = []
    for b in range(16):  # lanes below t: columns first .. of the row, the others: columns 0 ..
        row = builder.add(p, _row_offset(builder, b, s_outer, s_inner, s_shift, s_first))
        part = builder.call(
            masked, [at(src_data, builder.add(row, first)), _I32(align), tail, ir.Constant(vector, None)]
        )
        rows.append(builder.call(masked, [at(src_data, builder.sub(row, t)), _I32(align), head, part]))
    for a, row in enumerate(_butterflies(builder, rows)):  # row a of the block: dst's row first + a, or a - t
        r = ir.Constant(_I64, a)
        where = builder.select(builder.icmp_signed("<", r, t), builder.add(first, r), builder.sub(r, t))
        builder.store(
            row, at(dst_data, builder.add(q, _row_at(builder, where, d_outer, d_inner, d_shift))), align=align
        )
    return context.get_dummy_value()


@intrinsic
def transpose16_seam_rows(
    typingctx, dst, q, d_outer, d_inner, d_shift, src, p, s_outer, s_inner, s_shift, s_first, first, t
):  # type: ignore[no-untyped-def]
    """:func:`transpose16_seam` the other way round: the columns of each row of ``src`` that
    :func:`aligned_rows` leaves at both ends (``first + t`` its length; columns ``first ..``,
    ``t`` of them, then ``0 .. 15 - t``) read as one 16-lane row by two masked loads, the 16 rows
    of ``src`` starting at row ``s_first`` of its groups; the block's rows written whole to rows
    ``first ..`` and ``0 ..`` of ``dst`` (groups as for :func:`transpose16`)."""
    if not (isinstance(dst, types.Array) and isinstance(src, types.Array) and dst.dtype == src.dtype):
        return None
    i64 = types.int64
    sig = types.void(dst, i64, i64, i64, i64, src, i64, i64, i64, i64, i64, i64, i64)
    return sig, _transpose16_seam_rows_codegen


@intrinsic
def transpose16_stream(
    typingctx, dst, q, d_outer, d_inner, d_shift, src, p, s_outer, s_inner, s_shift, first
):  # type: ignore[no-untyped-def]
    """:func:`transpose16` from rows ``first .. first + 15`` of ``src``'s groups (row ``r`` of the
    block at ``p + ((first + r) >> s_shift) * s_outer + ((first + r) & (2**s_shift - 1)) * s_inner``:
    a block that need not start at a multiple of 16), with non-temporal stores: each row of
    ``dst`` written (64 bytes) must be 64-byte aligned, a whole cache line stored past the caches."""
    if not (isinstance(dst, types.Array) and isinstance(src, types.Array) and dst.dtype == src.dtype):
        return None
    i64 = types.int64
    return types.void(dst, i64, i64, i64, i64, src, i64, i64, i64, i64, i64), _transpose16_from_codegen(
        "stream"
    )


@intrinsic
def transpose16_part(
    typingctx, dst, q, d_outer, d_inner, d_shift, src, p, s_outer, s_inner, s_shift, first, lo, hi
):  # type: ignore[no-untyped-def]
    """:func:`transpose16_stream`'s block kept in the cache, only columns ``lo <= a < hi`` of
    ``dst`` written (masked stores: the lines of the other columns are not touched)."""
    if not (isinstance(dst, types.Array) and isinstance(src, types.Array) and dst.dtype == src.dtype):
        return None
    i64 = types.int64
    sig = types.void(dst, i64, i64, i64, i64, src, i64, i64, i64, i64, i64, i64, i64)
    return sig, _transpose16_from_codegen("part")


@intrinsic
def transpose16_seam(
    typingctx, dst, q, d_outer, d_inner, d_shift, src, p, s_outer, s_inner, s_shift, first, t, d_first
):  # type: ignore[no-untyped-def]
    """The columns of a row of ``dst`` that :func:`stream_rows` and :func:`aligned_rows` leave at
    both ends, where ``first + t`` is the row's length and the columns ``first ..`` (``t`` of
    them) and ``0 .. 15 - t`` together make one block: rows ``first .. first + t - 1`` then ``0
    .. 15 - t`` of ``src`` (groups as for :func:`transpose16_stream`), each row of it written to
    columns ``first ..`` and ``0 ..`` of a row of ``dst`` by masked stores (a row's tail and the
    next row's head share a line: written at once, it is read once). The rows of ``dst`` start
    at row ``d_first`` of its groups (as for :func:`transpose16_at`)."""
    if not (isinstance(dst, types.Array) and isinstance(src, types.Array) and dst.dtype == src.dtype):
        return None
    i64 = types.int64
    sig = types.void(dst, i64, i64, i64, i64, src, i64, i64, i64, i64, i64, i64, i64)
    return sig, _transpose16_from_codegen("seam")
