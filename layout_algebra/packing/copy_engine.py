"""The copy engine: NumPy copies between strided views at memory speed, and nibble packing.

Generic NumPy machinery, independent of layouts; :mod:`layout_algebra.packing.numpy_eval` cuts a
layout's stages into views and moves the data with it.

* :func:`copy` is ``np.copyto`` made fast for the copies a relayout makes. NumPy's loop
  runs along the destination's minor-most dimension: when that dimension is a few elements
  (the ``(2,1)`` of bf16) the loop overhead dominates, so short minor dims are *peeled*
  into separate copies (:func:`peeled`); when the source is read far apart along it (a
  *transposing* copy, :func:`is_transposing`), NumPy does not block for the cache and at
  power-of-two strides the lines evict each other, so the copy goes block by block through
  a small staging buffer laid out for long runs on both sides (:func:`blocked_copy`);
  with ``numba``, a compiled kernel does the same in one call, transposing 8x8 blocks in
  vector registers and writing large outputs past the caches (:func:`transpose_compiled`,
  :mod:`layout_algebra.packing.transpose_kernels`).
* :func:`~layout_algebra.packing.threads.run_parallel` runs the chunks of a relayout on
  several threads (:data:`PARALLEL_MIN_BYTES` says from which size by default).
* When ``numba`` is installed (the ``fast`` extra), words are built from their parts, and
  taken apart, by compiled loops (:func:`interleave`, :func:`deinterleave`, running
  :mod:`layout_algebra.packing.copy_kernels`) in one pass instead of one NumPy pass per part;
  ``USE_KERNELS = False`` keeps to NumPy. Both give the same bytes.

A transposing copy of a 300x200 array, through blocks of at most 4096 bytes:

>>> import numpy as np
>>> x = np.arange(300 * 200, dtype=np.uint32).reshape(300, 200)
>>> y = np.empty((200, 300), np.uint32)
>>> is_transposing(y, x.T), is_transposing(x.copy(), x)
(True, False)
>>> copy(y, x.T); np.array_equal(y, x.T)
True

The tuning constants below are module attributes, read at call time (tests shrink them to
exercise every path on small arrays).
"""

from __future__ import annotations

import itertools
import math
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from layout_algebra.packing.caches import kept_bytes
from layout_algebra.packing.fresh_memory import result_bytes, untouched
from layout_algebra.packing.tunables import watch

__all__ = [
    "blocked_copy",
    "copy",
    "deinterleave",
    "interleave",
    "is_large_transpose",
    "is_transposing",
    "kernel_call",
    "kernels_loaded",
    "streams_nibbles",
    "transpose_compiled",
    "transpose_form",
    "transpose_kernels",
    "transpose_stage",
    "word_call",
]

#: A minor dimension shorter than this is peeled into separate copies...
SHORT = 16
#: ... as long as the peeled dimensions have at most this many elements together.
MAX_PEEL = 64
#: A copy is *transposing* when, along the destination's innermost dimension, the source
#: steps by more than this many bytes: NumPy's copy loop would then read one element per
#: cache line, and at power-of-two strides the lines evict each other.
FAR_BYTES = 64
#: A transposing copy larger than this is done block by block through a staging buffer
#: of this size (it stays in the L2 cache)...
BLOCK_BYTES = 1 << 18
#: ... whose blocks keep runs of at least this many contiguous bytes on each side.
RUN_BYTES = 512
#: Extra bytes after each run of the staging buffer, so that its rows do not alias in the cache.
PAD_BYTES = 64
#: A copy of at least this many elements whose minor dim makes words builds them with shifts.
WORD_MIN_ELEMENTS = 256
#: Work smaller than this (bytes moved) runs on the calling thread, with no pool: handing work to
#: another thread costs tens of microseconds (more on a busy machine), and below this size the
#: copy runs from the caches, where one core is close to what two give.
PARALLEL_MIN_BYTES = 1 << 24
#: From this many bytes up to ``PARALLEL_MIN_BYTES``, a replayed program of compiled entries runs
#: its calls cut into parts on numba's threads when the caller asks for every CPU
#: (:mod:`layout_algebra.packing.replay_parts`: their workers spin between calls, so handing
#: work over costs microseconds, not the tens a sleeping thread takes to wake).
SIDE_BY_SIDE_MIN_BYTES = 1 << 20
#: Use the compiled kernels (:mod:`layout_algebra.packing.copy_kernels`) when ``numba`` is importable...
USE_KERNELS = True
#: ... for words of at least this many bytes: below it NumPy is quick enough, and a small
#: ``pack`` (the command line's) does not pay for importing numba (about a second).
KERNEL_MIN_BYTES = 1 << 18
#: A word kernel builds the words of one outer index in a staging buffer of at most this size...
STAGE_BYTES = 1 << 19
#: ... where it builds at least this many bytes of words in one call: below, the words stay in
#: the caches anyway, and building them in place was faster (1 MB of s8 words: 66 against 86
#: us; 4 MB: 343 against 434 us). At least 8 MB and the bytes the caches keep
#: (:func:`~layout_algebra.packing.caches.kept_bytes`): on the Zen 4 VM (32 MB kept), one
#: thread, against the copy, staged from 8 MB -> from 32 MB: ``bf16`` 8 MB pack into
#: 0.47 -> 0.67, unpack 0.31 -> 0.49; ``s8`` 8 MB pack allocating 0.29 -> 0.51, 16 MB
#: 0.46 -> 0.61; ``pred`` 16 MB allocating 0.49 -> 0.58 (into 0.65 -> 0.57); ``s4`` 16 MB
#: pack 0.38 -> 0.47, unpack 0.63 -> 0.78. From 32 MB staging still wins (``s8`` pack
#: into 0.57 -> 0.71).
STAGED_MIN_BYTES = max(1 << 23, kept_bytes())
#: Nibbles taken apart into at least this many bytes, or words built of nibbles, bytes or
#: 16-bit halves into at least this many bytes, are written past the cache (non-temporal stores
#: of whole lines: no read first); nibbles and bytes not into memory untouched yet
#: (:func:`streams_nibbles`). Bytes and halves taken apart are stored plainly: streamed, they
#: measured 10-20% slower (one thread, 16-64 MB). A quarter of the bytes the caches keep
#: between calls (:func:`~layout_algebra.packing.caches.kept_bytes`), and at least 2 MB: on
#: the Xeon VM (2 MB counted) streaming won from 2 MB; on the Zen 4 VM (its 32 MB L3: 8 MB)
#: plain stores win below 8 MB (``bf16`` words built, one thread, into a buffer: 4 MB 0.25-0.29
#: of the copy streamed against 0.53-0.60 plainly, 6 MB 0.23-0.31 against 0.44-0.48; 8 MB even).
STREAM_MIN_BYTES = max(1 << 21, kept_bytes() // 4)
#: Nibbles are streamed only where the whole relayout packs at least this many bytes of words
#: (the chunks of a large one are each smaller): below, the two arrays (the words and twice
#: as many bytes of nibbles) mostly stay in the last-level cache, and plain stores measured
#: faster building 4 MB of words (``benchmarks/pack_sizes.py --cpu-time``, ratio to the copy
#: 0.46-0.49 streamed, 0.56-0.62 not) and as fast taking them apart (0.38-0.41 either way);
#: from 16 MB streaming wins (packing 0.61-0.66 against 0.47-0.48, unpacking 0.56-0.64
#: against 0.40-0.41). (Xeon VM; the Zen 4 VM's cross over there too.) At least
#: :data:`STREAM_MIN_BYTES`.
NIBBLE_STREAM_MIN_BYTES = max(1 << 23, STREAM_MIN_BYTES)


T = TypeVar("T")


# ------------------------------------------------------------------------------- copies
def copy(dst: np.ndarray, src: np.ndarray) -> None:
    """``np.copyto(dst, src)``, peeling short minor dims whose strides differ into separate copies.

    NumPy's copy loop runs over dst's minor-most dimension; when that has 2 elements (the
    ``(2,1)`` of bf16) the loop overhead dominates. Copying each of the 2 positions
    separately makes the inner loop run over the next, long, dimension. A large copy that
    transposes (:func:`is_transposing`) goes block by block (:func:`blocked_copy`). When
    the short minor dim makes whole words on one side (the 2 bf16 or 4 s8 of a 32-bit
    word), the words are built, or taken apart, with shifts on whole arrays instead
    (:func:`words_from_parts`, :func:`parts_from_words`).
    """
    if dst.size >= WORD_MIN_ELEMENTS:
        d, s = dst, src
        while d.ndim > 1 and d.shape[-1] == 1:  # the 1 of a (2,1) tile
            d, s = d[..., 0], s[..., 0]
        if _makes_words(d, s):
            if not interleave(_word_view(d), s, 8 * d.itemsize):
                words_from_parts(d, s)
            return
        if _makes_words(s, d):
            if not deinterleave(d, _word_view(s), 8 * s.itemsize):
                parts_from_words(d, s)
            return
        if _same_words(d, s):  # whole words on both sides: one copy of words, not one per part
            copy(_word_view(d), _word_view(s))
            return
    for d, s in peeled(dst, src):
        if d.nbytes > BLOCK_BYTES and is_transposing(d, s):
            blocked_copy(d, s)
        else:
            np.copyto(d, s)


def _makes_words(packed: np.ndarray, parts: np.ndarray) -> bool:
    """Whether ``packed``'s last dim is a few unsigned elements in a row that make one word
    of at most 8 bytes, while ``parts``'s last dim is not in a row (a strided copy)."""
    if packed.ndim < 1 or packed.dtype != parts.dtype or packed.dtype.kind != "u":
        return False
    k, size = packed.shape[-1], packed.itemsize
    return (
        k in (2, 4, 8)
        and k * size in (2, 4, 8)
        and packed.strides[-1] == size
        and parts.strides[-1] != size
        and all(s % (k * size) == 0 for s in packed.strides[:-1])
    )


def _same_words(dst: np.ndarray, src: np.ndarray) -> bool:
    """Whether both sides' last dim is the same few unsigned elements in a row that make a word
    of at most 8 bytes (the 4 bytes of an ``(4,1)`` tile over a transposed ``f8`` array): then
    the copy is a copy of words, and its other dims stay as they are.

    >>> x = np.zeros((64, 32), np.uint8)
    >>> _same_words(np.zeros((8, 64, 4), np.uint8), x.reshape(64, 8, 4).transpose(1, 0, 2))
    True
    >>> _same_words(np.zeros((8, 64, 3), np.uint8), np.zeros((64, 8, 3), np.uint8).transpose(1, 0, 2))
    False
    """
    if dst.ndim < 2 or dst.shape != src.shape or dst.dtype != src.dtype or dst.dtype.kind != "u":
        return False
    k, size = dst.shape[-1], dst.itemsize
    return (
        k in (2, 4, 8)
        and k * size <= 8
        and dst.strides[-1] == size
        and src.strides[-1] == size
        and dst.ctypes.data % (k * size) == 0
        and src.ctypes.data % (k * size) == 0
        and all(st % (k * size) == 0 for a in (dst, src) for st in a.strides[:-1])
    )


def _word_view(packed: np.ndarray) -> np.ndarray:
    """``packed`` (last dim: the parts of one word, in a row) as an array of words."""
    word = np.dtype(f"<u{packed.shape[-1] * packed.itemsize}")
    return packed.view(word)[..., 0]


def words_from_parts(dst: np.ndarray, src: np.ndarray) -> None:
    """``np.copyto(dst, src)`` where ``dst``'s last dim is the ``k`` parts of a word, in a row
    (little-endian: part ``j`` in bits ``j*b*8`` up): each word is built as
    ``((src[..., k-1] << s) | src[..., k-2]) << s ...``, whole arrays at a time.

    >>> parts = np.arange(12, dtype=np.uint8).reshape(4, 3)      # part j of word w: 3*j + w
    >>> words = np.zeros((3, 4), np.uint8)
    >>> words_from_parts(words, parts.T)
    >>> [hex(w) for w in words.view("<u4").ravel()]
    ['0x9060300', '0xa070401', '0xb080502']
    >>> back = np.zeros((4, 3), np.uint8)
    >>> parts_from_words(back.T, words); np.array_equal(back, parts)
    True
    """
    k, shift = dst.shape[-1], 8 * dst.itemsize
    words = _word_view(dst)
    np.copyto(words, src[..., k - 1])  # widened: the high part, zeros above it
    for j in range(k - 2, -1, -1):
        np.left_shift(words, shift, out=words)
        np.bitwise_or(words, src[..., j], out=words)


def parts_from_words(dst: np.ndarray, src: np.ndarray) -> None:
    """The inverse of :func:`words_from_parts`: ``np.copyto(dst, src)`` where ``src``'s last
    dim is the parts of a word, in a row; each part is the word shifted down, truncated."""
    k, shift = src.shape[-1], 8 * src.itemsize
    words = _word_view(src)
    np.copyto(dst[..., 0], words, casting="unsafe")  # truncated: the low part
    shifted = np.empty(words.shape, words.dtype)
    for j in range(1, k):
        np.right_shift(words, shift * j, out=shifted)
        np.copyto(dst[..., j], shifted, casting="unsafe")


# ---------------------------------------------------------------------- compiled kernels
_kernels: Any = None  # the module, False when numba is missing, None before the first try
_kernels_lock = threading.Lock()
#: numba's first compiled call in a process costs about half a second or more (it loads its
#: typing and target registries; each kernel's cached machine code then loads in milliseconds),
#: far more than NumPy takes for a few megabytes. Until that is paid (:func:`start_kernels`),
#: ``pack``/``unpack`` run on NumPy (:func:`cold_call`) unless one call moves at least this many
#: bytes ...
COLD_KERNEL_MIN_BYTES = 1 << 26
#: ... or the calls run on NumPy have taken this many seconds in all: then starting the kernels
#: costs about what NumPy has taken so far (the ski-rental rule: never more than about twice
#: the best choice made knowing the future).
COLD_NUMPY_SECONDS = 0.5
_started = False  # numba's first compiled call made (start_kernels)
_cold_calls = 0  # calls in progress on NumPy because the kernels are not started
_cold_seconds = 0.0  # what those calls have taken, in all


def kernels() -> Any:
    """:mod:`layout_algebra.packing.copy_kernels` if ``USE_KERNELS`` and ``numba`` imports, else None.

    Imported on first use, so that ``import layout_algebra`` does not load numba.
    """
    global _kernels
    if not USE_KERNELS or (_cold_calls and not _started):
        return None
    return _imported_kernels()


def _imported_kernels() -> Any:
    global _kernels
    if _kernels is None:
        with _kernels_lock:
            if _kernels is None:
                try:
                    from layout_algebra.packing import copy_kernels
                except ImportError:
                    _kernels = False
                else:
                    _kernels = copy_kernels
    return _kernels or None


def kernels_cold() -> bool:
    """Whether a ``pack``/``unpack`` call should ask :func:`cold_call` first: the kernels are
    to be used (``USE_KERNELS``, numba not known to be missing) but not started yet."""
    return USE_KERNELS and not _started and _kernels is not False


def start_kernels() -> bool:
    """Import the compiled kernels and make numba's first call (its one-time start), once per
    process; whether they are in use. Benchmarks call it before timing, as a long-running
    process would have."""
    global _started
    if not _started and USE_KERNELS:
        _started = True
        k = _imported_kernels()
        if k:
            k.started()
            transpose_kernels()
    return USE_KERNELS and bool(_kernels)


def cold_call(call: Callable[[], T], moved_bytes: int) -> T:
    """``call()`` while the kernels are not started (:func:`kernels_cold`): on NumPy, unless
    this call moves at least ``COLD_KERNEL_MIN_BYTES`` or the NumPy calls so far took
    ``COLD_NUMPY_SECONDS``, which start them first. The bytes are the same either way.

    >>> import layout_algebra.packing.copy_engine as engine
    >>> engine.cold_call(lambda: engine.kernels() is None, 1 << 20) == (not engine._started)
    True
    """
    global _cold_calls, _cold_seconds
    if moved_bytes >= COLD_KERNEL_MIN_BYTES or _cold_seconds >= COLD_NUMPY_SECONDS:
        start_kernels()
        return call()
    with _kernels_lock:
        _cold_calls += 1
    start = time.perf_counter()
    try:
        return call()
    finally:
        with _kernels_lock:
            _cold_calls -= 1
            _cold_seconds += time.perf_counter() - start


def flat_view(a: np.ndarray) -> tuple[np.ndarray, list[int]] | None:
    """The memory of ``a`` as a 1-D array of its dtype starting at ``a``'s first element, and
    ``a``'s strides in elements; None if a stride is negative or not a whole number of
    elements, or if ``a`` is empty.

    >>> x = np.arange(12, dtype=np.uint16).reshape(3, 4)[:, 1::2]
    >>> flat, strides = flat_view(x)
    >>> flat.tolist(), strides
    ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], [4, 2])
    """
    size = a.itemsize
    if not a.size or any(s < 0 or s % size for s in a.strides):
        return None
    strides = [s // size for s in a.strides]
    span = 1 + sum((n - 1) * s for n, s in zip(a.shape, strides, strict=True))
    flat = np.lib.stride_tricks.as_strided(a, (span,), (size,), writeable=a.flags.writeable)
    return flat, strides


def merged_dims(
    shape: Sequence[int], *strides: Sequence[int], ndim: int = 4
) -> tuple[list[int], list[list[int]]] | None:
    """``shape`` and each of ``strides`` with unit dims dropped and neighbours merged where
    every array steps evenly across them, left-padded with ones to ``ndim`` dims; None if
    more than ``ndim`` dims remain.

    >>> merged_dims((2, 1, 3, 4), (12, 99, 4, 1), (24, 0, 8, 2))   # one run of 24, then
    ([1, 1, 1, 24], [[0, 0, 0, 1], [0, 0, 0, 2]])
    >>> merged_dims((2, 3), (1, 2), (3, 1))                        # nothing merges
    ([1, 1, 2, 3], [[0, 0, 1, 2], [0, 0, 3, 1]])
    """
    dims: list[int] = []
    steps: list[list[int]] = [[] for _ in strides]
    for k, n in enumerate(shape):
        if n == 1:
            continue
        if dims and all(st[-1] == s[k] * n for st, s in zip(steps, strides, strict=True)):
            dims[-1] *= n
            for st, s in zip(steps, strides, strict=True):
                st[-1] = s[k]
            continue
        dims.append(n)
        for st, s in zip(steps, strides, strict=True):
            st.append(s[k])
    if len(dims) > ndim:
        return None
    pad = ndim - len(dims)
    return [1] * pad + dims, [[0] * pad + st for st in steps]


#: Words of bytes (and halves) whose outer index spans at most this many rows of parts go in
#: the order of the words (:func:`_word_kernel_args`): ``pred`` ``(8,128)(4,1)``, one thread,
#: against the copy, 32 MB pack 0.62 -> 0.80 and unpack 0.55 -> 0.75, 64 MB 0.65 -> 0.93 and
#: 0.54 -> 0.88, 4 MB unpack 0.33 -> 0.51 (built in the caches, below ``STREAM_MIN_BYTES``, the
#: parts' order stays: 4 MB pack on every CPU 0.97 against 0.73); ``bf16`` ``(8,128)(2,1)``
#: unpacked, 16-256 MB 0.50-0.76 -> 0.74-0.98 (below, 1-4 MB on every CPU, 0.79-1.09 against 0.67-0.80;
#: built, its streamed stores need the parts' order). ``s8``'s ``(32,128)`` tiles span 32 rows.
WORDS_IN_ORDER_MAX_ROWS = 8

#: The compiled kernels for words made of parts: (parts per word, bits per part) -> names.
WORD_KERNELS: dict[tuple[int, int], tuple[str | None, str]] = {
    (4, 8): ("words_from_bytes", "bytes_from_words"),
    (8, 4): ("words_from_nibbles", "nibbles_from_words"),
    (2, 16): ("words_from_halves", "halves_from_words"),
}


def _word_kernel_args(
    words: np.ndarray, parts: np.ndarray, bits: int, building: bool
) -> tuple[Any, ...] | None:
    """The arguments of a word kernel for ``words`` (32-bit) and ``parts`` (``words.shape``
    plus the parts of a word: bytes, or 16-bit halves), or None if no kernel takes them.
    ``building``: the words are written (else read).

    The loops inside each ``i0`` go in the order of the parts in memory, except where its
    words span at most ``WORDS_IN_ORDER_MAX_ROWS`` rows of parts (``pred``'s ``(8,128)(4,1)``,
    ``bf16``'s ``(8,128)(2,1)``: 8 rows) and are words of bytes taken apart, or (from
    ``STREAM_MIN_BYTES`` of words) words of bytes built or words of halves taken apart: those
    go in the order of the words (each tile whole, its 8 rows read or written side by side).

    ``pred[32,256]{1,0:T(8,128)(4,1)}``: word ``(i0, tile, group, i)`` of bytes ``x[8*i0 + 4*group
    + j, 128*tile + i]``; its strides (``i0``, then the two loops inside, then ``i``):

    >>> x = np.zeros((32, 256), np.uint8)
    >>> parts = x.reshape(4, 2, 4, 2, 128).transpose(0, 3, 1, 4, 2)      # (i0, tile, group, i, j)
    >>> words = np.zeros((4, 2, 2, 128), np.uint32)
    >>> _word_kernel_args(words, parts, 8, building=True)[1].tolist()    # small: the rows' order
    [512, 128, 256, 1]
    >>> _word_kernel_args(words, parts, 8, building=False)[1].tolist()   # the words' order
    [512, 256, 128, 1]
    """
    if (
        not np.little_endian  # the nibble kernels write byte k of a word at byte offset k
        or words.dtype != np.dtype("<u4")
        or parts.dtype != np.dtype(f"<u{max(1, bits // 8)}")
        or parts.shape[:-1] != words.shape
        or (parts.shape[-1], bits) not in WORD_KERNELS
        or not (words.flags.aligned and words.size)
    ):
        return None
    w, p = flat_view(words), flat_view(parts)
    if w is None or p is None:
        return None
    merged = merged_dims(words.shape, w[1], p[1][:-1])
    if merged is None:
        return None
    shape, (ws, ps) = merged
    # the outer loops in the order of the parts in memory (the larger side: 2 or 8 bytes per
    # byte of words), so that they are read, or written, as few sequential streams
    order = [*sorted(range(3), key=lambda k: -ps[k]), 3]
    shape, ws, ps = ([v[k] for k in order] for v in (shape, ws, ps))
    big = words.nbytes >= STREAM_MIN_BYTES  # (see the docstring)
    in_order = (bits == 8 and (big or not building)) or (bits == 16 and big and not building)
    if in_order and parts.shape[-1] * shape[1] <= WORDS_IN_ORDER_MAX_ROWS and ws[1] < ws[2]:
        shape, ws, ps = ([v[0], v[2], v[1], v[3]] for v in (shape, ws, ps))
    # the words of each i0 visited out of order, but one run: build them in the cache
    staged = (
        ws[1] < ws[2]
        and is_dense(shape[1:], ws[1:])
        and 4 * math.prod(shape[1:]) <= STAGE_BYTES
        and words.nbytes >= STAGED_MIN_BYTES
    )
    as_array = np.array
    return (
        w[0],
        as_array(ws, np.int64),
        p[0],
        as_array(ps, np.int64),
        p[1][-1],
        as_array(shape, np.int64),
        staged,
    )


def is_dense(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether the offsets ``i . strides`` for ``i`` in ``shape`` are ``0 .. prod(shape) - 1``.

    >>> is_dense((8, 64, 128), (128, 1024, 1)), is_dense((8, 64, 128), (128, 2048, 1))
    (True, False)
    """
    expected = 1
    for stride, n in sorted((s, n) for s, n in zip(strides, shape, strict=True) if n > 1):
        if stride != expected:
            return False
        expected *= n
    return True


def _word_kernel(
    words: np.ndarray, parts: np.ndarray, bits: int, building: bool, min_bytes: int | None = None
) -> tuple[Any, tuple[Any, ...]] | None:
    """The kernel that builds (or splits) ``words`` from (into) ``parts``, and its arguments
    after the arrays; None if there is none for them. Imports numba only for words of at
    least ``min_bytes`` (default ``KERNEL_MIN_BYTES``)."""
    least = KERNEL_MIN_BYTES if min_bytes is None else min_bytes
    if words.nbytes < least or (not building and not parts.flags.writeable):
        return None
    names = WORD_KERNELS.get((parts.shape[-1], bits)) if parts.ndim else None
    name = names[0 if building else 1] if names else None
    k = kernels() if name else None
    args = _word_kernel_args(words, parts, bits, building) if k is not None and name else None
    return None if args is None or name is None else ((k, name), args)


def interleave(words: np.ndarray, parts: np.ndarray, bits: int, whole_words: int | None = None) -> bool:
    """``words[...] = sum_j (parts[..., j] & mask) << (bits * j)`` with a compiled kernel
    (``mask``: the low ``bits``; 32-bit words of 4 bytes, 8 nibbles or 2 halves); False, having done
    nothing, when no kernel takes it (then use NumPy).

    >>> words = np.zeros(1 << 16, np.uint32)                    # 256 KB of words
    >>> parts = np.arange(4 << 16, dtype=np.uint32).astype(np.uint8).reshape(-1, 4)
    >>> done = interleave(words, parts, 8)
    >>> not done or [hex(w) for w in words[:3]] == ['0x3020100', '0x7060504', '0xb0a0908']
    True
    """
    call = word_call(words, parts, bits, True, plain_if_fresh=True, whole_words=whole_words)
    if call is None:
        return False
    getattr(*call[0])(*call[1])
    return True


#: A compiled kernel's call: ``((module, name), arguments, stage)`` (the kernel is looked up at
#: each call); ``stage`` is None, or ``(position, elements, dtype)`` of a staging argument that
#: must be the calling thread's own (:func:`transpose_stage`).
KernelCall = tuple[tuple[Any, str], tuple[Any, ...], tuple[int, int, np.dtype] | None]


def word_call(
    words: np.ndarray,
    parts: np.ndarray,
    bits: int,
    building: bool,
    min_bytes: int | None = None,
    *,
    plain_if_fresh: bool = False,
    whole_words: int | None = None,
) -> KernelCall | None:
    """The call of the kernel that builds ``words`` from ``parts`` (or splits them), the flat
    arrays at positions 0 and 3 (building) or 4 (splitting), each followed by its offset.
    ``plain_if_fresh``: nibbles written into memory not touched yet are stored plainly, not
    streamed; ``whole_words``: the bytes of words of the whole relayout these are a part of
    (default: these words' own; :func:`streams_nibbles`)."""
    found = _word_kernel(words, parts, bits, building, min_bytes)
    if found is None:
        return None
    kernel, (wf, ws, pf, ps, step, shape, staged) = found
    if building:
        args: tuple[Any, ...] = (wf, 0, ws, pf, 0, ps, step, shape, staged)
        streamed = bits == 16 and words.nbytes >= STREAM_MIN_BYTES
        whole = words.nbytes if whole_words is None else whole_words
        streamed = streamed or (bits == 4 and streams_nibbles(words, plain_if_fresh, whole))
        # words of bytes: past the caches, but not into a result just allocated (its lines are
        # in the caches: 16 MB of pred, one thread, 0.51 streamed against 0.76 plainly)
        streamed = streamed or (
            bits == 8
            and streams_nibbles(words, plain_if_fresh, whole)
            and not result_bytes(words, packed=True)
        )
    else:
        args = (pf, 0, ps, step, wf, 0, ws, shape, staged and bits != 8)
        whole = words.nbytes if whole_words is None else whole_words
        if bits == 4:  # nibbles_from_words' last argument: streamed
            return kernel, (*args, True) if streams_nibbles(parts, plain_if_fresh, whole) else args, None
        # bytes_from_words' last argument: streamed. In the caches the bytes are split along the
        # rows of parts (weave_kernels.split_byte_row: stores that start lines; staged measured
        # 15-25% slower, one thread, 16-64 MB); from words that leave them, the rows of a tile
        # row side by side in the order of the words, past the caches (stream_byte_rows; s8
        # (32,128)(4,1) unpacked into a buffer, one thread, kernel alone: 32 MB 1.00 of the copy
        # against 0.61 along the rows and 0.74 run by run, 256 MB 1.09 against 0.63 and 0.67;
        # into a result just allocated as fast as by runs, 32 MB 1.33 against 1.35)
        streamed = bits == 8 and whole >= STREAM_MIN_BYTES
        return kernel, (*args, True) if streamed else args, None
    return kernel, (*args, True) if streamed else args, None


def streams_nibbles(target: np.ndarray, plain_if_fresh: bool, whole_words: int | None = None) -> bool:
    """Whether a nibble kernel (or one building words of bytes) writes ``target`` past the
    cache: from ``STREAM_MIN_BYTES`` of ``target`` where the whole relayout packs at least
    ``NIBBLE_STREAM_MIN_BYTES`` of words (``whole_words``; default: ``target``'s bytes),
    unless ``plain_if_fresh`` and its pages are not touched yet
    (:func:`~layout_algebra.packing.fresh_memory.untouched`: the kernel's zeroing of each
    page leaves its lines in the caches, where plain stores then measured 5-12% faster)."""
    whole = target.nbytes if whole_words is None else whole_words
    return (
        target.nbytes >= STREAM_MIN_BYTES
        and whole >= NIBBLE_STREAM_MIN_BYTES
        and not (plain_if_fresh and untouched(target))
    )


def deinterleave(parts: np.ndarray, words: np.ndarray, bits: int, whole_words: int | None = None) -> bool:
    """The inverse of :func:`interleave`: ``parts[..., j] = (words >> (bits * j)) & mask``
    (also for the two 16-bit halves of a word)."""
    call = word_call(words, parts, bits, False, plain_if_fresh=True, whole_words=whole_words)
    if call is None:
        return False
    getattr(*call[0])(*call[1])
    return True


def kernel_call(dst: np.ndarray, src: np.ndarray) -> KernelCall | None:
    """The one compiled-kernel call that copies ``src`` into ``dst`` as :func:`copy` would with
    the kernels at every size (words built or split, a transposing copy), or None: no kernel
    takes the whole copy, or numba is not loaded yet (:func:`kernels_loaded`; a small copy does
    not import it). A plan's copies are found once and then replayed
    (:mod:`layout_algebra.packing.replay`)."""
    if not kernels_loaded() or not dst.size:
        return None
    d, s = dst, src
    while d.ndim > 1 and d.shape[-1] == 1:
        d, s = d[..., 0], s[..., 0]
    if _makes_words(d, s):
        return word_call(_word_view(d), s, 8 * d.itemsize, True, 0)
    if _makes_words(s, d):
        return word_call(_word_view(s), d, 8 * s.itemsize, False, 0)
    if _same_words(d, s):
        return kernel_call(_word_view(d), _word_view(s))
    if len(peeled(dst, src)) == 1 and is_transposing(dst, src):
        return _transpose_call(dst, src, 0)
    return None


def kernels_loaded() -> bool:
    """Whether the compiled kernels are in use and already imported (no import here)."""
    if USE_KERNELS and _kernels and _transposer:  # both imported (read on every replayed call)
        return True
    return USE_KERNELS and bool(_kernels) and transpose_kernels() is not None


def uses_kernel(dst: np.ndarray, src: np.ndarray) -> bool:
    """Whether :func:`copy` copies ``src`` into ``dst`` with a compiled word kernel (then
    the caller need not stage or cut the copy for the cache)."""
    if dst.size < WORD_MIN_ELEMENTS:
        return False
    d, s = dst, src
    while d.ndim > 1 and d.shape[-1] == 1:
        d, s = d[..., 0], s[..., 0]
    if _makes_words(d, s):
        return _word_kernel(_word_view(d), s, 8 * d.itemsize, building=True) is not None
    if _makes_words(s, d):
        return _word_kernel(_word_view(s), d, 8 * s.itemsize, building=False) is not None
    return False


def is_large_transpose(dst: np.ndarray, src: np.ndarray) -> bool:
    """Whether :func:`copy` copies ``src`` into ``dst`` block by block."""
    return dst.nbytes > BLOCK_BYTES and any(
        d.nbytes > BLOCK_BYTES and is_transposing(d, s) for d, s in peeled(dst, src)
    )


def peeled(dst: np.ndarray, src: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """The copies that :func:`copy` makes: ``[(dst, src)]``, or one pair per position of
    the short minor dims of ``dst`` (when their strides differ from ``src``'s)."""
    n = dst.ndim
    peel, count = 0, 1
    if n >= 2 and dst.shape[-1] < SHORT:
        while peel < n - 1 and count * dst.shape[n - 1 - peel] <= MAX_PEEL:
            count *= dst.shape[n - 1 - peel]
            peel += 1
    if peel == 0 or dst.strides[n - peel :] == src.strides[n - peel :]:
        return [(dst, src)]
    pairs = []
    for index in itertools.product(*(range(d) for d in dst.shape[n - peel :])):
        at: tuple[Any, ...] = (Ellipsis, *index)
        pairs.append((dst[at], src[at]))
    return pairs


def inner_first(a: np.ndarray) -> list[int]:
    """The dimensions of ``a`` with more than one element, smallest stride first."""
    return sorted((k for k in range(a.ndim) if a.shape[k] > 1), key=lambda k: abs(a.strides[k]))


def is_transposing(dst: np.ndarray, src: np.ndarray) -> bool:
    """Whether copying ``src`` into ``dst`` reads ``src`` far apart along ``dst``'s innermost dim.

    >>> x = np.zeros((512, 512), np.float32)
    >>> is_transposing(np.zeros((512, 512), np.float32), x.T), is_transposing(x.copy(), x)
    (True, False)
    """
    order = inner_first(dst)
    return bool(order) and order[0] != inner_first(src)[0] and abs(src.strides[order[0]]) > FAR_BYTES


def blocked_copy(dst: np.ndarray, src: np.ndarray, limit: int | None = None) -> None:
    """``np.copyto(dst, src)`` for a transposing copy, block by block through a staging buffer.

    One of the two arrays is *far*: it spans more memory (the logical array, where the
    other is a chunk of the buffer), and its rows are far apart. The staging buffer is
    laid out like the far array (:func:`staging_buffer`), so that each block moves between the
    far array and the staging buffer in long runs, and the transpose happens between the
    staging buffer, in the cache, and the near array. Blocks have at most ``limit`` bytes
    (:func:`block_extents`; default ``BLOCK_BYTES``).

    >>> x = np.arange(300 * 200, dtype=np.uint32).reshape(300, 200)
    >>> y = np.empty((200, 300), np.uint32)
    >>> blocked_copy(y, x.T, limit=4096); np.array_equal(y, x.T)
    True
    """
    if not dst.size or transpose_compiled(dst, src):
        return
    near, far = (dst, src) if span(dst) <= span(src) else (src, dst)
    near_order, far_order = inner_first(near), inner_first(far)
    limit = max(1, (limit or BLOCK_BYTES) // dst.itemsize)
    extents = block_extents(dst.shape, near_order, far_order, limit, dst.itemsize)
    staging = staging_buffer(extents, near_order, far_order, dst.dtype)
    for corner in itertools.product(*(range(0, n, e) for n, e in zip(dst.shape, extents, strict=True))):
        index = tuple(slice(c, c + e) for c, e in zip(corner, extents, strict=True))
        part = dst[index]
        stage = staging[tuple(slice(0, n) for n in part.shape)]
        np.copyto(stage, src[index])
        np.copyto(part, stage)


#: A compiled transposing copy stages at most about this many bytes of the far side (the L2 cache).
TRANSPOSE_STAGE_BYTES = 1 << 19
#: ... in rows this many bytes longer than a run, so that the rows do not alias in the cache.
TRANSPOSE_PAD_BYTES = 64
#: A compiled transposing copy of at least this many bytes writes by non-temporal stores: its
#: output will not be read from the cache, and they do not read the lines they fill first.
#: From a quarter of the bytes the caches keep (:func:`~layout_algebra.packing.caches.kept_bytes`).
TRANSPOSE_STREAM_BYTES = max(1 << 21, kept_bytes() // 4)
#: ... and one of 4-byte elements from this many: 16x16 blocks in registers either way
#: (``transpose_kernels.transpose_rows`` below, kept in the cache; ``stream_rows`` from here,
#: whole lines stored past the caches). One thread, f32 ``{0,1:T(8,128)}`` pack/unpack into a
#: buffer against ``np.copyto``: Xeon VM (2 MB kept), 4 MB 0.34-0.44/0.39-0.40 in the cache ->
#: 0.54-0.72/0.52-0.66 streamed; Zen 4 VM (32 MB kept: from 8 MB), 4 MB 0.34-0.47/0.29-0.44 in
#: the cache against 0.17-0.33 streamed (f8 alike), 16 MB 0.45-0.82/0.41-0.59 streamed
#: against 0.33-0.47 in the cache.
BLOCKS_STREAM_BYTES = max(1 << 22, kept_bytes() // 4)
#: ... but the far side written into an array ``unpack`` has just allocated
#: (``fresh_memory.new_result``), smaller than this and not mapped yet (``untouched``: from 32
#: MB, glibc maps every such array anew), by plain stores: the kernel zeroes each page on its
#: first write, leaving its lines in the caches. One thread, CPU time, load 2.5-3.3, unpack
#: allocating, f32/f8 against ``np.copy``: 32 MB 0.57-0.59/0.53-0.56 -> 0.72-0.75/0.61-0.73;
#: 64 MB no faster (f8 0.64 -> 0.54). Below 32 MB the array is memory freed a moment ago, its
#: lines (dirty) in the caches, and the cells allocating swing 0.3-0.66 either way, the plain
#: stores of one call slowing the streamed ones of the next; packing streams (32 MB: no faster).
FRESH_PLAIN_BYTES = 1 << 26
_transposer: Any = None  # layout_algebra.packing.transpose_kernels, False when it cannot be imported
_transpose_stages = threading.local()  # one staging buffer per thread


def transpose_kernels() -> Any:
    """:mod:`layout_algebra.packing.transpose_kernels` when :func:`kernels` are used, else None."""
    global _transposer
    if not USE_KERNELS or (_cold_calls and not _started) or not _imported_kernels():
        return None
    if _transposer is None:
        with _kernels_lock:
            if _transposer is None:
                try:
                    from layout_algebra.packing import transpose_kernels as module
                except ImportError:  # pragma: no cover - numba without llvmlite's IR builder
                    _transposer = False
                else:
                    _transposer = module
    return _transposer or None


def transpose_form(dst: np.ndarray, src: np.ndarray, budget: int | None = None) -> tuple[Any, ...] | None:
    """The canonical form of :mod:`layout_algebra.packing.transpose_kernels` for copying ``src``
    into ``dst``: ``(writes_far, near, near_strides, far, far_strides, shape, width)`` (flat
    arrays, strides in elements over ``(o0, o1, a, c, d)``; ``width``: steps of ``a`` per
    staged run, so that the staging buffer has at most about ``budget`` bytes, default
    ``TRANSPOSE_STAGE_BYTES``), or None when the copy has no such form.

    ``f32[512,2048]{0,1:T(8,128)}``: a chunk of 8 column tiles ``(a, o1, c, d)`` and the
    array ``x[o1*128 + d, a*8 + c]`` (the far side, read: ``writes_far`` is False):

    >>> x = np.zeros((512, 2048), np.float32)
    >>> tiles = np.zeros((8, 4, 8, 128), np.float32)
    >>> view = x.reshape(4, 128, 256, 8).transpose(2, 0, 3, 1)[:8]
    >>> form = transpose_form(tiles, view)
    >>> form[0], form[5].tolist(), form[2].tolist(), form[4].tolist(), form[6]
    (False, [1, 4, 8, 8, 128], [0, 1024, 4096, 128, 1], [0, 262144, 8, 1, 2048], 8)
    """
    if dst.shape != src.shape or dst.dtype != src.dtype or not dst.size:
        return None
    dtype = dst.dtype
    if dtype.kind not in "uif" or dtype.itemsize not in (1, 2, 4, 8) or not dtype.isnative:
        return None
    if not (dst.flags.writeable and dst.flags.aligned and src.flags.aligned):
        return None
    if np.may_share_memory(dst, src):  # the kernels read and write in their own order
        return None
    budget = budget or TRANSPOSE_STAGE_BYTES
    if span(dst) != span(src):
        return _canonical(dst, src, span(dst) > span(src), budget)
    # the same span (a whole array): the far side is the one read across the longer rows, unless
    # its rows would be fewer than 16 (the 2 words of an f8 (4,1) tile, the 8 columns of an f32
    # tile: no 16x16 blocks in registers, transpose_kernels.transpose16)
    forms = [f for f in (_canonical(dst, src, w, budget) for w in (False, True)) if f is not None]
    return max(forms, key=lambda f: (min(int(f[5][-1]), 16), int(f[4][-1])), default=None)


def _canonical(dst: np.ndarray, src: np.ndarray, writes_far: bool, budget: int) -> tuple[Any, ...] | None:
    """:func:`transpose_form` with ``dst`` (``writes_far``) or ``src`` as the far side."""
    dtype = dst.dtype
    near, far = (src, dst) if writes_far else (dst, src)
    n_flat, f_flat = flat_view(near), flat_view(far)
    if n_flat is None or f_flat is None:
        return None
    (near_data, ns), (far_data, fs) = n_flat, f_flat
    dims = [k for k in range(dst.ndim) if dst.shape[k] > 1]
    d = [k for k in dims if ns[k] == 1]
    c = [k for k in dims if fs[k] == 1 and k not in d]
    if len(d) != 1 or len(c) != 1:
        return None
    d_dim, c_dim = d[0], c[0]
    shape = dst.shape
    rest = [k for k in dims if k not in (c_dim, d_dim)]
    runs_on = [k for k in rest if fs[k] == shape[c_dim]]
    a_dims = runs_on[:1]
    outer = sorted((k for k in rest if k not in a_dims), key=lambda k: -fs[k])
    merged = merged_dims([shape[k] for k in outer], [fs[k] for k in outer], [ns[k] for k in outer], ndim=2)
    if merged is None:
        return None
    outer_shape, (outer_fs, outer_ns) = merged
    a_shape = [shape[k] for k in a_dims] or [1]
    a_fs, a_ns = [fs[k] for k in a_dims] or [0], [ns[k] for k in a_dims] or [0]
    nc, nd, size = shape[c_dim], shape[d_dim], dtype.itemsize
    width = min(a_shape[0], max(1, budget // (nd * nc * size)))
    if nd * nc * size > 4 * budget:
        return None  # the run of one row alone would not stay in the cache: NumPy blocks it
    as_array = np.array
    return (
        writes_far,
        near_data,
        as_array([*outer_ns, *a_ns, ns[c_dim], 1], np.int64),
        far_data,
        as_array([*outer_fs, *a_fs, 1, fs[d_dim]], np.int64),
        as_array([*outer_shape, *a_shape, nc, nd], np.int64),
        width,
    )


def transpose_compiled(dst: np.ndarray, src: np.ndarray) -> bool:
    """``np.copyto(dst, src)`` for a transposing copy by a compiled kernel
    (:mod:`layout_algebra.packing.transpose_kernels`); False, having done nothing, when none takes
    it (numba missing, ``USE_KERNELS`` off, fewer than ``KERNEL_MIN_BYTES``, no canonical
    form: :func:`transpose_form`)."""
    call = _transpose_call(dst, src, KERNEL_MIN_BYTES)
    if call is None:
        return False
    kernel, args, (at, need, dtype) = call  # type: ignore[misc]
    getattr(*kernel)(*args[:at], transpose_stage(need, dtype), *args[at + 1 :])
    return True


def _transpose_call(dst: np.ndarray, src: np.ndarray, min_bytes: int) -> KernelCall | None:
    """The call of :func:`transpose_compiled`'s kernel, the far and near flat arrays at
    positions 0 and 3, each followed by its offset; the stage at position 7 is to be taken
    from :func:`transpose_stage`."""
    if dst.nbytes < min_bytes:
        return None
    k = transpose_kernels()
    form = transpose_form(dst, src) if k is not None else None
    if form is None:
        return None
    writes_far, near, ns, far, fs, shape, width = form
    pad = max(1, TRANSPOSE_PAD_BYTES // dst.itemsize)
    stage = (7, k.staging_size(shape, width, pad), dst.dtype)
    stream = dst.nbytes >= (BLOCKS_STREAM_BYTES if dst.itemsize == 4 else TRANSPOSE_STREAM_BYTES)
    if stream and writes_far and 0 < result_bytes(dst) < FRESH_PLAIN_BYTES and untouched(dst):
        stream = False  # unpacking into an array just mapped: plain stores
    if writes_far:
        return (k, "scatter_rows"), (far, 0, fs, near, 0, ns, shape, None, width, pad, stream), stage
    stream = stream and all(int(s) % 8 == 0 for s, n in zip(ns[:-1], shape[:-1], strict=True) if n > 1)
    return (k, "gather_rows"), (near, 0, ns, far, 0, fs, shape, None, width, pad, stream), stage


def transpose_stage(need: int, dtype: np.dtype) -> np.ndarray:
    """The calling thread's staging buffer for the transposing kernels: at least ``need``
    elements of ``dtype``, kept between calls."""
    stage = getattr(_transpose_stages, "buffer", None)
    if stage is None or stage.dtype != dtype or stage.size < need:
        stage = _transpose_stages.buffer = np.empty(need, dtype)
    return stage


def span(a: np.ndarray) -> int:
    """Bytes between the first and the last element of ``a``, plus one element."""
    return int(a.itemsize) + sum(int((n - 1) * abs(s)) for n, s in zip(a.shape, a.strides, strict=True))


def block_extents(
    shape: tuple[int, ...], near_order: list[int], far_order: list[int], limit: int, itemsize: int
) -> list[int]:
    """Extents of a block of a transposing copy: at most ``limit`` elements in all.

    First the runs: the near array's innermost dims, then the far array's, are given
    enough elements to make ``RUN_BYTES`` contiguous bytes (a dim cut short ends its
    run); then the other dims grow, alternating between the two orders, while the block
    fits.

    >>> block_extents((8192, 8192), [0, 1], [1, 0], 32768, 4)      # a plain transpose
    [256, 128]
    >>> block_extents((32, 64, 8, 128), [3, 2, 1, 0], [2, 0, 3, 1], 65536, 4)   # f32 {0,1:T(8,128)}
    [32, 2, 8, 128]
    """
    extents = [1] * len(shape)
    want = max(1, RUN_BYTES // itemsize)

    def room(k: int) -> int:
        return max(1, limit // (math.prod(extents) // extents[k]))

    for order in (near_order, far_order):
        run = 1
        for k in order:
            if run >= want:
                break
            extents[k] = max(extents[k], min(shape[k], -(-want // run), room(k)))
            run *= extents[k]
            if extents[k] < shape[k]:
                break
    alternating = [k for pair in itertools.zip_longest(near_order, far_order) for k in pair if k is not None]
    for k in dict.fromkeys(alternating):
        extents[k] = max(extents[k], min(shape[k], room(k)))
    return extents


def staging_buffer(
    extents: list[int], near_order: list[int], far_order: list[int], dtype: np.dtype
) -> np.ndarray:
    """A staging buffer for blocks of ``extents``, laid out so that both copies run long.

    Innermost come the dims that the far array holds inside the near array's innermost
    one (the copy between far array and staging buffer moves them as runs), then the near
    array's dims from its innermost out. The stride of the near array's innermost dim is
    padded by ``PAD_BYTES``: the transposing copy steps along it, and at a power-of-two
    stride its accesses would evict each other from the cache.

    >>> s = staging_buffer([32, 2, 8, 128], [3, 2, 1, 0], [2, 0, 3, 1], np.dtype(np.float32))
    >>> s.shape, [v // 4 for v in s.strides]        # (tile row, column in tile) inside, rows padded
    ((32, 2, 8, 128), [8, 34816, 1, 272])
    """
    near_inner = near_order[0] if near_order else None
    inside = far_order[: far_order.index(near_inner)] if near_inner is not None else []
    layout = inside + [k for k in near_order if k not in inside]
    layout += [k for k in range(len(extents)) if k not in layout]
    pad = max(1, PAD_BYTES // dtype.itemsize)
    strides = [0] * len(extents)
    step = 1
    for i, k in enumerate(layout):
        if i and k == near_inner:
            step += pad
        strides[k] = step
        step *= extents[k]
    base = np.empty(1 + sum((e - 1) * s for e, s in zip(extents, strides, strict=True)), dtype)
    return np.lib.stride_tricks.as_strided(
        base, tuple(extents), tuple(s * dtype.itemsize for s in strides), writeable=True
    )


watch(sys.modules[__name__])  # the tuning constants above: replayed programs made again when one changes
