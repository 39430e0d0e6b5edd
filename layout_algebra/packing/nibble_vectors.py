"""64 words of nibbles built or taken apart in explicit 64-byte vectors (numba intrinsics).

A word of ``s4`` under ``(8,1)E(4)`` holds nibble ``j`` of 8 rows in bits ``[4j, 4j+4)``:
byte ``k`` of the word (little-endian) is ``b_k = (r_2k & 0xF) | (r_2k+1 << 4)``. The loops
of :mod:`layout_algebra.packing.copy_kernels` compute the ``b_k`` on byte lanes and store
them interleaved (``w8[4i + k] = b_k[i]``); LLVM vectorizes that interleave with 256-bit
halves of the registers (``vpunpck*bw``, ``vpermt2w`` on ``ymm``, extracts and inserts:
about 24 shuffles per 64 words). Here it is written as 64-byte vectors and two levels of
``shufflevector`` (:func:`pack_block`):

* ``A = [b0[h], b1[h]]`` and ``B = [b2[h], b3[h]]`` for each half ``h`` of the 64 columns
  (32 bytes of each: a whole-lane shuffle),
* word ``i`` of a half is bytes ``A[i], A[32+i], B[i], B[32+i]``: one two-source byte
  permute (AVX-512 VBMI ``vpermt2b``) per 16 words,

8 shuffles per 64 words. :func:`unpack_block` is the same backwards: a byte permute
gathers byte ``k`` and ``k+1`` of 32 words, whole-lane shuffles join the halves, and the
nibbles are ``b & 0xF`` and ``b >> 4`` (zero-extended, as ``ml_dtypes`` stores them).
:func:`unpack_pair` takes only byte ``k`` of 64 words apart, into two rows: for rows that
share their sets of the L1 cache, where eight streams of stores measured slower.

``shufflevector`` is correct on any machine (LLVM lowers it for the instructions there),
but only fast with byte permutes: the kernels use these blocks where the host has
``avx512vbmi`` (:data:`HAS_BYTE_PERMUTE`, read from LLVM's view of the host CPU, the one
numba compiles for) and keep their loops elsewhere. Each call reads and writes exactly its
bytes (no bounds checks: the caller's), unaligned; the ``_nt`` variants store
non-temporally (past the cache) and need 64-byte aligned targets.

>>> import numpy as np
>>> from numba import njit
>>> @njit
... def both(words, rows, back):
...     pack_block(words, 0, rows, 0, 64)
...     unpack_block(back, 0, 64, words, 0)
>>> rows = np.arange(512, dtype=np.uint8)       # 8 rows of 64 (step 64)
>>> words, back = np.zeros(256, np.uint8), np.zeros(512, np.uint8)
>>> both(words, rows, back)
>>> expected = sum((rows.reshape(8, 64)[j].astype(np.uint32) & 0xF) << (4 * j) for j in range(8))
>>> bool((words.view("<u4") == expected).all()), bool((back == rows & 0xF).all())
(True, True)
"""

from __future__ import annotations

from llvmlite import binding, ir
from numba import types
from numba.extending import intrinsic

__all__ = [
    "BLOCK_WORDS",
    "HAS_BYTE_PERMUTE",
    "pack_block",
    "pack_block_nt",
    "unpack_block",
    "unpack_block_nt",
    "unpack_pair",
]

#: Words per block: 64 columns of 8 rows, 256 bytes of words.
BLOCK_WORDS = 64


def _host_has_byte_permute() -> bool:
    """Whether numba compiles for a CPU with AVX-512 VBMI (``vpermb``, ``vpermt2b``): the host
    as LLVM sees it, unless numba is told to compile for another CPU (``NUMBA_CPU_NAME``,
    e.g. ``generic`` for caches shared between machines), where the features it is given
    must name it (inline assembly of an instruction the target lacks does not compile)."""
    from numba.core import config

    try:
        binding.initialize_native_target()
        binding.initialize_native_asmparser()  # for the inline assembly of _permute
        if config.CPU_NAME and config.CPU_NAME != "host":
            features = config.CPU_FEATURES or ""
        else:
            features = binding.get_host_cpu_features().flatten()
        return "+avx512vbmi" in features.split(",")
    except (RuntimeError, AttributeError):  # pragma: no cover - no host features on this LLVM
        return False


#: Whether the kernels build and split nibbles in explicit 64-byte vectors: ``True`` where
#: the host has AVX-512 VBMI (here, AMD Zen 4). Read by compiled code as a constant.
HAS_BYTE_PERMUTE = _host_has_byte_permute()

_I8, _I32 = ir.IntType(8), ir.IntType(32)
_V64 = ir.VectorType(_I8, 64)


def _splat(value: int) -> ir.Constant:
    return ir.Constant(_V64, [ir.Constant(_I8, value)] * 64)


def _mask(indices: list[int]) -> ir.Constant:
    return ir.Constant(ir.VectorType(_I32, len(indices)), [ir.Constant(_I32, i) for i in indices])


#: ``[x[h], y[h]]`` for the half ``h`` (32 bytes) of two 64-byte vectors.
_HALVES = [list(range(32)) + list(range(64, 96)), list(range(32, 64)) + list(range(96, 128))]
#: Words ``16q .. 16q+15`` of a half from ``A`` (bytes 0-63) and ``B`` (64-127): ``A[i], A[32+i], B[i], B[32+i]``.
_WEAVE = [[c + 32 * (k % 2) + 64 * (k // 2) + 16 * q for c in range(16) for k in range(4)] for q in range(2)]
#: From 32 words in two vectors: byte ``k`` of each (32 bytes), then byte ``k+1``.
_GATHER = [[4 * i + k for i in range(32)] + [4 * i + k + 1 for i in range(32)] for k in (0, 2)]


def _permute(builder, x, y, indices):  # type: ignore[no-untyped-def]
    """``[x, y][indices]`` (64 bytes out of 128): one ``vpermt2b`` in inline assembly where
    the host has it (as a ``shufflevector``, or as LLVM's ``vpermi2var`` intrinsic, which it
    turns back into one, LLVM merged the two levels of :func:`pack_block` into ``vpunpck*``
    chains on 128-bit lanes: 3x the instructions), else a ``shufflevector``."""
    if not HAS_BYTE_PERMUTE:
        return builder.shuffle_vector(x, y, _mask(indices))
    index = ir.Constant(_V64, [ir.Constant(_I8, i) for i in indices])
    permute = ir.InlineAsm(ir.FunctionType(_V64, [_V64, _V64, _V64]), "vpermt2b $3, $2, $0", "=v,0,v,v")
    return builder.call(permute, [x, index, y])


def _permute_by(builder, x, index, y):  # type: ignore[no-untyped-def]
    """``[x, y][index]`` for a computed ``index``: one ``vpermt2b`` (only where the host has it)."""
    if not HAS_BYTE_PERMUTE:
        raise NotImplementedError("a computed byte permute needs AVX-512 VBMI")
    permute = ir.InlineAsm(ir.FunctionType(_V64, [_V64, _V64, _V64]), "vpermt2b $3, $2, $0", "=v,0,v,v")
    return builder.call(permute, [x, index, y])


def _at(builder, context, arr_type, arr, at):  # type: ignore[no-untyped-def]
    data = context.make_array(arr_type)(context, builder, arr).data
    return builder.bitcast(builder.gep(data, [at]), _V64.as_pointer())


def _store(builder, value, pointer, nontemporal):  # type: ignore[no-untyped-def]
    store = builder.store(value, pointer, align=64 if nontemporal else 1)
    if nontemporal:
        store.set_metadata("nontemporal", builder.module.add_metadata([ir.Constant(_I32, 1)]))


def _packer(nontemporal: bool):  # type: ignore[no-untyped-def]
    def pack(typingctx, words, words_at, parts, parts_at, step):  # type: ignore[no-untyped-def]
        signature = types.void(words, types.intp, parts, types.intp, types.intp)

        def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
            w, w_at, p, p_at, st = args
            rows = [
                builder.load(
                    _at(
                        builder,
                        context,
                        sig.args[2],
                        p,
                        builder.add(p_at, builder.mul(st, ir.Constant(st.type, j))),
                    ),
                    align=1,
                )
                for j in range(8)
            ]
            low, four = _splat(0xF), _splat(4)
            b = [
                builder.or_(builder.and_(rows[2 * k], low), builder.shl(rows[2 * k + 1], four))
                for k in range(4)
            ]
            for h in range(2):
                a_h = builder.shuffle_vector(b[0], b[1], _mask(_HALVES[h]))
                b_h = builder.shuffle_vector(b[2], b[3], _mask(_HALVES[h]))
                for q in range(2):
                    out = _permute(builder, a_h, b_h, _WEAVE[q])
                    at = builder.add(w_at, ir.Constant(w_at.type, 128 * h + 64 * q))
                    _store(builder, out, _at(builder, context, sig.args[0], w, at), nontemporal)
            return context.get_dummy_value()

        return signature, codegen

    return intrinsic(pack)


def _unpacker(nontemporal: bool):  # type: ignore[no-untyped-def]
    def unpack(typingctx, parts, parts_at, step, words, words_at):  # type: ignore[no-untyped-def]
        signature = types.void(parts, types.intp, types.intp, words, types.intp)

        def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
            p, p_at, st, w, w_at = args
            v = [
                builder.load(
                    _at(builder, context, sig.args[3], w, builder.add(w_at, ir.Constant(w_at.type, 64 * q))),
                    align=1,
                )
                for q in range(4)
            ]
            # per half h of the columns: [b0, b1] and [b2, b3] of its 32 words
            pairs = [
                [builder.shuffle_vector(v[2 * h], v[2 * h + 1], _mask(_GATHER[g])) for g in range(2)]
                for h in range(2)
            ]
            low, four = _splat(0xF), _splat(4)
            for k in range(4):
                g, which = k // 2, k % 2
                byte = builder.shuffle_vector(pairs[0][g], pairs[1][g], _mask(_HALVES[which]))
                for j, row in ((2 * k, builder.and_(byte, low)), (2 * k + 1, builder.lshr(byte, four))):
                    at = builder.add(p_at, builder.mul(st, ir.Constant(st.type, j)))
                    _store(builder, row, _at(builder, context, sig.args[0], p, at), nontemporal)
            return context.get_dummy_value()

        return signature, codegen

    return intrinsic(unpack)


@intrinsic
def unpack_pair(typingctx, parts, low_at, high_at, words, words_at, k):  # type: ignore[no-untyped-def]
    """Byte ``k`` of the 64 words at ``words[words_at :]`` (bytes) taken apart into its two
    rows of nibbles: ``parts[low_at : low_at + 64]`` the low nibbles, ``parts[high_at :]`` the
    high ones. One byte permute per 32 words (``vpermt2b``) gathers byte ``k``; only where
    the host has it (:data:`HAS_BYTE_PERMUTE`: compiling it elsewhere raises)."""
    signature = types.void(parts, types.intp, types.intp, words, types.intp, types.intp)

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        p, low_at, high_at, w, w_at, k = args
        v = [
            builder.load(
                _at(builder, context, sig.args[3], w, builder.add(w_at, ir.Constant(w_at.type, 64 * q))),
                align=1,
            )
            for q in range(4)
        ]
        shift = builder.trunc(k, _I8)
        splat = builder.shuffle_vector(
            builder.insert_element(ir.Constant(_V64, ir.Undefined), shift, ir.Constant(_I32, 0)),
            ir.Constant(_V64, ir.Undefined),
            _mask([0] * 64),
        )
        index = builder.add(ir.Constant(_V64, [ir.Constant(_I8, 4 * (i % 32)) for i in range(64)]), splat)
        halves = [_permute_by(builder, v[2 * h], index, v[2 * h + 1]) for h in range(2)]
        byte = builder.shuffle_vector(halves[0], halves[1], _mask(_HALVES[0]))
        low, four = _splat(0xF), _splat(4)
        _store(builder, builder.and_(byte, low), _at(builder, context, sig.args[0], p, low_at), False)
        _store(builder, builder.lshr(byte, four), _at(builder, context, sig.args[0], p, high_at), False)
        return context.get_dummy_value()

    return signature, codegen


#: ``pack_block(words8, at, parts, pb, step)``: bytes ``words8[at : at + 256]`` = the 64 words
#: of the 8 rows ``parts[pb + j*step : pb + j*step + 64]``.
pack_block = _packer(False)
#: :func:`pack_block` with non-temporal stores; ``words8[at]`` 64-byte aligned.
pack_block_nt = _packer(True)
#: ``unpack_block(parts, pb, step, words8, at)``: the inverse of :func:`pack_block` (nibbles zero-extended).
unpack_block = _unpacker(False)
#: :func:`unpack_block` with non-temporal stores; every row's ``parts[pb + j*step]`` 64-byte aligned.
unpack_block_nt = _unpacker(True)
