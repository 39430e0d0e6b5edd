"""One compiled call per replayed word-kernel step: the views made inside, the arguments in one array.

A replayed program (:mod:`layout_algebra.packing.replay`) of a small array is dominated by
what surrounds its kernel call: making the flat arrays the kernels take (the packed buffer
as 32-bit words, the logical array as bytes or 16-bit halves: a NumPy view each, about half
a microsecond), and numba's dispatch, whose cost grows with the number of arguments (a word
kernel takes nine). Each *entry* here takes three: the packed buffer (1-D ``uint8``), the
logical array raveled (1-D, of its own dtype when numba types it, else seen as the parts'
unsigned integers), and an ``int64`` array of every other argument (:func:`entry_params`);
it makes the views itself, checks that they are aligned and that the two arrays do not share
memory (:func:`apart`: a result written over its own input, ``pack(x, out=x's bytes)``, would
read bytes it has already overwritten), and calls the kernel of
:mod:`layout_algebra.packing.copy_kernels`. It returns False, having done nothing, when a
view would be misaligned or the arrays overlap (the full path then copies the input first). :func:`build_bytes` and :func:`split_bytes` take the 4 bytes of
``s8``, ``pred`` and ``f8`` words, :func:`build_halves` the 2 halves of ``bf16``,
:func:`build_nibbles` and :func:`split_nibbles` the 8 nibbles of ``s4`` and ``u4`` (one byte
each in the logical array, as ``ml_dtypes`` stores them).
For a few words (at most ``copy_kernels.FEW_WORDS``: a small
array, in the caches) it shuffles run by run in one loop nest instead
(:func:`~layout_algebra.packing.copy_kernels.weave_runs` and the like), without the
kernel's calls per outer index and its aligning of the stores, which cost more there than
they save (64 KB of ``pred`` taken apart: 2.3 against 4.0 us in the kernel).

>>> import numpy as np
>>> params = entry_params(0, [0, 0, 0, 1], 0, [0, 0, 0, 1], 2, [1, 1, 1, 2], False)
>>> buffer, logical = np.zeros(8, np.uint8), np.arange(1, 9, dtype=np.int8)
>>> build_bytes(buffer, logical, params), [hex(w) for w in buffer.view("<u4")]
(True, ['0x7050301', '0x8060402'])
>>> back = np.zeros(8, np.int8)
>>> split_bytes(buffer, back, params), back.tolist()
(True, [1, 2, 3, 4, 5, 6, 7, 8])
>>> nibbles = np.arange(16, dtype=np.uint8) % 16          # 8 rows of 2 columns (step 2)
>>> p4 = entry_params(0, [0, 0, 0, 1], 0, [0, 0, 0, 1], 2, [1, 1, 1, 2], False)
>>> build_nibbles(buffer, nibbles, p4), [hex(w) for w in buffer.view("<u4")]
(True, ['0xeca86420', '0xfdb97531'])
>>> back4 = np.zeros(16, np.uint8)
>>> split_nibbles(buffer, back4, p4), back4.tolist() == nibbles.tolist()
(True, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import njit

from layout_algebra.packing.copy_kernels import (
    bytes_from_words,
    few_runs,
    halves_from_words,
    nibbles_from_words,
    unweave_half_runs,
    unweave_runs,
    weave_half_runs,
    weave_runs,
    words_from_bytes,
    words_from_halves,
    words_from_nibbles,
)
from layout_algebra.packing.kernel_cache import check_sources

check_sources()  # numba's cached code of these kernels made from these sources (kernel_cache)

__all__ = [
    "ENTRIES",
    "apart",
    "build_bytes",
    "build_halves",
    "build_nibbles",
    "copy_params",
    "copy_to_buffer",
    "copy_to_logical",
    "cut_params",
    "entry_params",
    "entry_parts",
    "split_bytes",
    "split_halves",
    "split_nibbles",
]


def entry_params(
    wo: int,
    ws: Sequence[int],
    po: int,
    ps: Sequence[int],
    step: int,
    shape: Sequence[int],
    staged: bool,
    streamed: bool = False,
) -> np.ndarray:
    """The ``int64`` array of a word kernel's arguments other than its two flat arrays:
    ``wo, ws[0..3], po, ps[0..3], step, shape[0..3], staged, streamed``."""
    return np.array([wo, *ws, po, *ps, step, *shape, int(staged), int(streamed)], np.int64)


def cut_params(
    p: np.ndarray, offsets: tuple[int, int], strides: tuple[int, int], shape: int, dims: int, count: int
) -> np.ndarray | None:
    """``p`` (an entry's arguments: two offsets, each side's strides, a shape) cut into
    ``count`` parts along the first of its ``dims`` outer dims that has ``count`` indices or more:
    one row of arguments per part, each a range of that dim, its offsets moved to where the
    range starts. The parts are the whole copy, each element once (the map from index to
    element is linear in each dim). None if no dim is that long. ``offsets``: where the two
    offsets are; ``strides``: where each side's strides start; ``shape``: where the shape starts.

    >>> p = entry_params(0, [64, 0, 0, 1], 0, [128, 0, 0, 1], 2, [5, 1, 1, 64], False)
    >>> parts = cut_params(p, (0, 5), (1, 6), 11, 4, 2)
    >>> [(int(q[0]), int(q[5]), int(q[11])) for q in parts]        # offsets and rows of each part
    [(0, 0, 2), (128, 256, 3)]
    """
    for d in range(dims):
        n = int(p[shape + d])
        if n >= count:
            parts = np.repeat(p[None, :], count, axis=0)
            for k in range(count):
                lo, hi = n * k // count, n * (k + 1) // count
                parts[k, shape + d] = hi - lo
                for at, step in zip(offsets, strides, strict=True):
                    parts[k, at] += lo * p[step + d]
            return parts
    return None


def entry_parts(p: np.ndarray, count: int) -> np.ndarray | None:
    """:func:`cut_params` of a word entry's arguments (:func:`entry_params`): along any of its 4 dims.

    >>> p = entry_params(0, [0, 0, 0, 1], 0, [0, 0, 0, 1], 2, [1, 1, 1, 2], False)
    >>> entry_parts(p, 2)[:, 14].tolist(), entry_parts(p, 3) is None
    ([1, 1], True)
    """
    return cut_params(p, (0, 5), (1, 6), 11, 4, count)


@njit(nogil=True, cache=True)
def _words(buffer):  # type: ignore[no-untyped-def]
    return buffer[: buffer.size // 4 * 4].view(np.uint32)


@njit(nogil=True, cache=True)
def apart(a, b):  # type: ignore[no-untyped-def]
    """Whether the bytes of two 1-D contiguous arrays lie apart (no byte in both).

    >>> x = np.zeros(16, np.uint8)
    >>> apart(x[:8], x[8:]), apart(x[:9], x[8:]), apart(x, np.zeros(4, np.uint8))
    (True, False, True)
    """
    a0, b0 = a.ctypes.data, b.ctypes.data
    return a0 + a.nbytes <= b0 or b0 + b.nbytes <= a0


@njit(nogil=True, cache=True)
def build_bytes(buffer, logical, p):  # type: ignore[no-untyped-def]
    """:func:`~layout_algebra.packing.copy_kernels.words_from_bytes` from ``logical`` (bytes) into ``buffer``."""
    if buffer.ctypes.data % 4 or not apart(buffer, logical):
        return False
    parts = logical.view(np.uint8)
    if p[15] == 0 and few_runs(p[1:5], p[6:10], p[11:15]):
        weave_runs(_words(buffer), p[0], p[1:5], parts, p[5], p[6:10], p[10], p[11:15])
        return True
    words_from_bytes(
        _words(buffer), p[0], p[1:5], parts, p[5], p[6:10], p[10], p[11:15], p[15] != 0, p[16] != 0
    )
    return True


@njit(nogil=True, cache=True)
def split_bytes(buffer, logical, p):  # type: ignore[no-untyped-def]
    """:func:`~layout_algebra.packing.copy_kernels.bytes_from_words` from ``buffer`` into ``logical`` (bytes)."""
    if buffer.ctypes.data % 4 or not apart(buffer, logical):
        return False
    parts = logical.view(np.uint8)
    if p[15] == 0 and few_runs(p[1:5], p[6:10], p[11:15]):
        unweave_runs(parts, p[5], p[6:10], p[10], _words(buffer), p[0], p[1:5], p[11:15])
        return True
    bytes_from_words(
        parts, p[5], p[6:10], p[10], _words(buffer), p[0], p[1:5], p[11:15], p[15] != 0, p[16] != 0
    )
    return True


@njit(nogil=True, cache=True)
def build_halves(buffer, logical, p):  # type: ignore[no-untyped-def]
    """:func:`~layout_algebra.packing.copy_kernels.words_from_halves` from ``logical`` (16 bits) into ``buffer``."""
    if buffer.ctypes.data % 4 or logical.ctypes.data % 2 or not apart(buffer, logical):
        return False
    parts = logical.view(np.uint16)
    if p[15] == 0 and p[16] == 0 and few_runs(p[1:5], p[6:10], p[11:15]):
        weave_half_runs(_words(buffer), p[0], p[1:5], parts, p[5], p[6:10], p[10], p[11:15])
        return True
    words_from_halves(
        _words(buffer), p[0], p[1:5], parts, p[5], p[6:10], p[10], p[11:15], p[15] != 0, p[16] != 0
    )
    return True


@njit(nogil=True, cache=True)
def build_nibbles(buffer, logical, p):  # type: ignore[no-untyped-def]
    """:func:`~layout_algebra.packing.copy_kernels.words_from_nibbles` from ``logical`` (a
    byte per nibble: ``int4``, ``uint4``) into ``buffer``."""
    if buffer.ctypes.data % 4 or not apart(buffer, logical):
        return False
    parts = logical.view(np.uint8)
    words_from_nibbles(
        _words(buffer), p[0], p[1:5], parts, p[5], p[6:10], p[10], p[11:15], p[15] != 0, p[16] != 0
    )
    return True


@njit(nogil=True, cache=True)
def split_nibbles(buffer, logical, p):  # type: ignore[no-untyped-def]
    """:func:`~layout_algebra.packing.copy_kernels.nibbles_from_words` from ``buffer`` into
    ``logical`` (a byte per nibble)."""
    if buffer.ctypes.data % 4 or not apart(buffer, logical):
        return False
    parts = logical.view(np.uint8)
    nibbles_from_words(
        parts, p[5], p[6:10], p[10], _words(buffer), p[0], p[1:5], p[11:15], p[15] != 0, p[16] != 0
    )
    return True


@njit(nogil=True, cache=True)
def split_halves(buffer, logical, p):  # type: ignore[no-untyped-def]
    """:func:`~layout_algebra.packing.copy_kernels.halves_from_words` from ``buffer`` into ``logical`` (16 bits)."""
    if buffer.ctypes.data % 4 or logical.ctypes.data % 2 or not apart(buffer, logical):
        return False
    parts = logical.view(np.uint16)
    if p[15] == 0 and few_runs(p[1:5], p[6:10], p[11:15]):
        unweave_half_runs(parts, p[5], p[6:10], p[10], _words(buffer), p[0], p[1:5], p[11:15])
        return True
    halves_from_words(parts, p[5], p[6:10], p[10], _words(buffer), p[0], p[1:5], p[11:15], p[15] != 0)
    return True


#: The entries by kernel name: (entry, builds words?, the parts' unsigned dtype).
ENTRIES: dict[str, tuple[Any, bool, np.dtype]] = {
    "words_from_bytes": (build_bytes, True, np.dtype(np.uint8)),
    "bytes_from_words": (split_bytes, False, np.dtype(np.uint8)),
    "words_from_halves": (build_halves, True, np.dtype(np.uint16)),
    "words_from_nibbles": (build_nibbles, True, np.dtype(np.uint8)),
    "nibbles_from_words": (split_nibbles, False, np.dtype(np.uint8)),
    "halves_from_words": (split_halves, False, np.dtype(np.uint16)),
}


def copy_params(
    dst_role: int,
    dst_offset: int,
    dst_strides: Sequence[int],
    src_offset: int,
    src_strides: Sequence[int],
    shape: Sequence[int],
) -> np.ndarray:
    """The ``int64`` array of :func:`copy_to_buffer`'s (or :func:`copy_to_logical`'s) arguments:
    which base is written (0: the buffer, 1: the logical array), each side's offset and strides
    (in elements), the 4-D shape."""
    return np.array([dst_role, dst_offset, *dst_strides, src_offset, *src_strides, *shape], np.int64)


@njit(nogil=True, cache=True)
def _copy_runs(dst, do, ds, src, so, ss, shape):  # type: ignore[no-untyped-def]
    n = shape[3]
    d0, d1, d2, d3, s0, s1, s2, s3 = ds[0], ds[1], ds[2], ds[3], ss[0], ss[1], ss[2], ss[3]
    for i0 in range(shape[0]):
        for i1 in range(shape[1]):
            for i2 in range(shape[2]):
                db = do + i0 * d0 + i1 * d1 + i2 * d2
                sb = so + i0 * s0 + i1 * s1 + i2 * s2
                if d3 == 1 and s3 == 1:
                    run, into = src[sb : sb + n], dst[db : db + n]
                    for i in range(n):
                        into[i] = run[i]
                else:
                    for i in range(n):
                        dst[db + i * d3] = src[sb + i * s3]


@njit(nogil=True, cache=True)
def copy_to_buffer(buffer, logical, p, size):  # type: ignore[no-untyped-def]
    """``np.copyto`` from a 4-D view of ``logical`` (raveled) into one of the buffer, by their
    offsets and strides in elements of ``size`` bytes (1, 2, 4 or 8; :func:`copy_params`),
    both seen as unsigned integers of that size. False, nothing done, if either is misaligned.
    (One function per direction: the side only read may be a read-only array.)"""
    if buffer.ctypes.data % size or logical.ctypes.data % size or not apart(buffer, logical):
        return False
    flat = logical.view(np.uint8)
    if size == 1:
        _copy_runs(buffer, p[1], p[2:6], flat, p[6], p[7:11], p[11:15])
    elif size == 2:
        b, g = buffer[: buffer.size // 2 * 2].view(np.uint16), flat.view(np.uint16)
        _copy_runs(b, p[1], p[2:6], g, p[6], p[7:11], p[11:15])
    elif size == 4:
        b4, g4 = buffer[: buffer.size // 4 * 4].view(np.uint32), flat.view(np.uint32)
        _copy_runs(b4, p[1], p[2:6], g4, p[6], p[7:11], p[11:15])
    else:
        b8, g8 = buffer[: buffer.size // 8 * 8].view(np.uint64), flat.view(np.uint64)
        _copy_runs(b8, p[1], p[2:6], g8, p[6], p[7:11], p[11:15])
    return True


@njit(nogil=True, cache=True)
def copy_to_logical(buffer, logical, p, size):  # type: ignore[no-untyped-def]
    """:func:`copy_to_buffer` the other way: from a view of the buffer into one of ``logical``."""
    if buffer.ctypes.data % size or logical.ctypes.data % size or not apart(buffer, logical):
        return False
    flat = logical.view(np.uint8)
    if size == 1:
        _copy_runs(flat, p[1], p[2:6], buffer, p[6], p[7:11], p[11:15])
    elif size == 2:
        b, g = buffer[: buffer.size // 2 * 2].view(np.uint16), flat.view(np.uint16)
        _copy_runs(g, p[1], p[2:6], b, p[6], p[7:11], p[11:15])
    elif size == 4:
        b4, g4 = buffer[: buffer.size // 4 * 4].view(np.uint32), flat.view(np.uint32)
        _copy_runs(g4, p[1], p[2:6], b4, p[6], p[7:11], p[11:15])
    else:
        b8, g8 = buffer[: buffer.size // 8 * 8].view(np.uint64), flat.view(np.uint64)
        _copy_runs(g8, p[1], p[2:6], b8, p[6], p[7:11], p[11:15])
    return True
