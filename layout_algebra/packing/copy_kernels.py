"""Compiled inner loops for :mod:`layout_algebra.packing.copy_engine` (optional: needs ``numba``).

Importing this module imports ``numba``; :mod:`layout_algebra.packing.copy_engine` imports it on the
first copy that can use it, and keeps its NumPy code when ``numba`` is not installed
(``pip install 'layout-algebra[fast]'``). The kernels are plain loops over flat 1-D arrays:
an element of a strided view is ``flat[offset + sum(i_k * stride_k)]`` with strides counted
in elements (:func:`~layout_algebra.packing.copy_engine.flat_view` makes ``flat``, the view's memory,
from any view with non-negative strides), over exactly four dimensions (fewer are padded
with ones, more are merged where the strides allow). Where both sides step by one element
along the last dimension, the loop body reads and writes contiguous slices, which LLVM
turns into vector instructions.

* :func:`words_from_bytes` builds 32-bit words from 4 bytes, byte ``j`` in bits
  ``[8j, 8j+8)`` (the little-endian order of the 4 ``s8`` of an ``(4,1)`` tile);
  :func:`words_from_nibbles` from the low 4 bits of 8 bytes, nibble ``j`` in bits
  ``[4j, 4j+4)`` (the 8 ``s4`` of an ``(8,1)`` tile under ``E(4)``).
  :func:`bytes_from_words` and :func:`nibbles_from_words` take them apart again;
  :func:`words_from_halves` builds words from two 16-bit halves (the 2 ``bf16`` of a
  ``(2,1)`` tile) and :func:`halves_from_words` splits them.

Part ``j`` of the word at ``i`` is ``parts[po + i . ps + j * step]``; the word is
``words[wo + i . ws]``, for ``i`` in the 4-D ``shape``. Each part of a word has a loop
statement of its own (not a loop over ``j``): that is what lets LLVM vectorize. With
``staged``, the words of each ``i0`` (one contiguous run of ``words``, visited out of order
by the loops) are built in a staging buffer that stays in the cache, and copied out in
order (or, the other way, copied in first): memory then sees one sequential stream.
Slicing costs more than moving a short run (``(64,128)(8,1)``: 128 words a run), so where
the 8 rows of nibbles run on across ``i2`` (``ps[2] == shape[3]``, a whole tile row) they
are sliced once per ``i1`` (:func:`_runs_on`), not once per run. Staged, such words are
built in the stage in the order of the rows, one long loop per ``i1``
(:func:`_build_nibbles`, :func:`~layout_algebra.packing.weave_kernels.weave_bytes`), and the stage is copied out in runs in
the order of the words in memory (:func:`_runs_between`); taken apart the other way round.
Unstaged nibbles taken apart gather the runs of one ``i1`` into one line first, and are
split byte by byte of the words: byte ``k`` into rows ``2k`` and ``2k+1``, one pair of rows
at a time (:func:`_split_nibbles`; two streams of stores, not eight).

Taking nibbles apart writes twice the bytes it reads; a plain store to a line not in the
cache reads the line first. With ``streamed`` (:func:`nibbles_from_words`; the copy engine
sets it from 2 MB of parts where the whole relayout has 8 MB of words: below, both arrays
stay in the last-level cache between calls, and plain stores win), the rows' whole 64-byte lines are written with non-temporal
stores (:func:`~layout_algebra.packing.line_stores.stream_line`, an LLVM ``!nontemporal`` store) from a 512-byte buffer in the
L1 cache, and a fence at the end makes them visible to other threads. Building words
(:func:`words_from_nibbles`, from 2 MB of words, the same 8 MB in all), unstaged runs are written the same way,
and the staged words of each ``i0`` (one dense region: the ``(64,128)`` tiles of 64 rows)
are gathered from the stage in the order of memory into a buffer whose 64-byte lines
match the region's, every whole line streamed (:func:`_stream_runs_out`; streaming each
512-byte run alone left two partial lines per run, which cost more than they saved).
:func:`words_from_halves` streams the same way, building each region's runs straight into
the buffer (:func:`_stream_halves_out`): with plain stores, the read of every line before
it is written made a third pass over memory. :func:`words_from_bytes` streams its staged
regions out as the nibbles' (the ``(32,128)(4,1)`` of ``s8`` from 8 MB: one-thread ``pack``
into a buffer of 16-64 MB went from 0.6-0.7 of ``np.copyto`` to 1.0-1.1). Bytes taken apart
are stored plainly (streamed, they measured slower), each staged row with stores that
start cache lines (:func:`~layout_algebra.packing.weave_kernels.split_bytes_aligned`).
A few words (a small array's, in the caches) are shuffled run by run in one loop nest
(:func:`weave_runs`, :func:`unweave_runs`, :func:`weave_half_runs`,
:func:`unweave_half_runs`: the replays' entries call them, :func:`few_runs`).
Both gather runs into their buffer at the region's offset within a line, so the buffer's
stores are misaligned when the region is (NumPy's large arrays start 16 bytes into a
page); a misaligned store that crosses a page boundary is slow (here, in a VM: 6x for the
whole kernel), so the buffer lies within one page (:func:`_line_buffer`). Allocated
anywhere, it crossed one in about a third of the processes, for their whole life.

Nibbles are packed byte by byte: byte ``k`` of a word (byte offset ``k``: little-endian) is
``(n[2k] & 0xF) | (n[2k+1] << 4)``, computed on 8-bit lanes, and the 4 bytes of each word
are stored interleaved (``w8[4i + k]``), which LLVM turns into byte shuffles: 64 nibbles
per AVX-512 instruction instead of 16 on 32-bit lanes. Taking words apart, the low nibble
is ``b & 0xF`` and the high ``b >> 4``: the codes come out zero-extended, as ``ml_dtypes``
stores ``int4`` and ``uint4`` (the same bytes for both). Where the host has AVX-512 VBMI,
whole blocks of 64 words are built and taken apart in explicit 64-byte vectors instead
(:mod:`~layout_algebra.packing.nibble_vectors`: 8 shuffles per block where LLVM's
vectorized loops took about 24 to interleave and more to split), the loops only for the
rest of a run; streamed, the blocks are stored non-temporally straight from the registers,
without the L1 buffer. One thread on Zen 4, ``s4[R,C]{1,0:T(8,128)(8,1)E(4)}``, the kernel
alone: unpacking 64 KB of words 5.7-8.5 -> 3.3-5.4 us, 1 MB 61-82 -> 48-66 us; streamed,
16 MB packed in 1.2-1.5 ms (was 2.1-2.9) and unpacked in 1.4-1.6 ms (was 2.0); plain packing
is as fast as before (its loads bound it: 64 KB-4 MB).

>>> import numpy as np
>>> parts = np.arange(1, 17, dtype=np.uint8)      # part j of word w: parts[w + 2*j] (step 2)
>>> words = np.zeros(2, np.uint32)
>>> shape, strides = np.array([1, 1, 1, 2]), np.array([0, 0, 0, 1])
>>> words_from_bytes(words, 0, strides, parts, 0, strides, 2, shape, False)
>>> [hex(w) for w in words]
['0x7050301', '0x8060402']
>>> words_from_nibbles(words, 0, strides, parts, 0, strides, 2, shape, True)
>>> [hex(w) for w in words]      # the low 4 bits of 1, 3, 5, ..., 15 (16 keeps 0)
['0xfdb97531', '0xeca8642']
>>> back = np.zeros(16, np.uint8)
>>> nibbles_from_words(back, 0, strides, 2, words, 0, strides, shape, True); back.tolist()
[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0]

Each kernel is compiled on its first call for the dtypes it gets, and cached on disk
(``cache=True``) for the next processes.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from layout_algebra.packing.kernel_cache import check_sources
from layout_algebra.packing.line_stores import store_fence as _store_fence
from layout_algebra.packing.line_stores import stream_line as _stream_line
from layout_algebra.packing.nibble_vectors import BLOCK_WORDS, HAS_BYTE_PERMUTE
from layout_algebra.packing.nibble_vectors import pack_block as _pack_block
from layout_algebra.packing.nibble_vectors import pack_block_nt as _pack_block_nt
from layout_algebra.packing.nibble_vectors import unpack_block as _unpack_block
from layout_algebra.packing.nibble_vectors import unpack_block_nt as _unpack_block_nt
from layout_algebra.packing.nibble_vectors import unpack_pair as _unpack_pair
from layout_algebra.packing.weave_kernels import (
    split_byte_row,
    split_bytes_aligned,
    stream_byte_rows,
    unweave_bytes,
    unweave_halves,
    weave_bytes,
    weave_halves,
)

check_sources()  # numba's cached code of these kernels made from these sources (kernel_cache)

__all__ = [
    "bytes_from_words",
    "few_runs",
    "halves_from_words",
    "nibbles_from_words",
    "started",
    "unweave_half_runs",
    "unweave_runs",
    "weave_half_runs",
    "weave_runs",
    "words_from_bytes",
    "words_from_halves",
    "words_from_nibbles",
]

U8 = np.uint8
U16 = np.uint16
U32 = np.uint32
M4 = np.uint32(0xF)
# shift amounts as 32-bit constants: with Python ints the arithmetic widens to 64 bits
S4, S8, S12, S16, S20, S24, S28 = (np.uint32(4 * k) for k in range(1, 8))
# nibbles are packed byte by byte, on 8-bit lanes: the low 4 bits and a shift by 4 as bytes
L4 = np.uint8(0xF)
B4 = np.uint8(4)
#: Bytes in a cache line: non-temporal stores write whole lines.
LINE = 64
#: Bytes in a page: a gathering buffer lies within one (:func:`_line_buffer`).
PAGE = 4096
#: Rows of nibbles this many bytes apart (or a multiple) share their sets of the L1 cache
#: (32 KB, 8 ways: 64 sets of lines): taking words apart there, the blocks of
#: :func:`_split_nibbles` write two rows at a time, not all eight (``s4[2048,4096]``, 4 MB
#: of words into a buffer, one thread on Zen 4: 0.33-0.36 of the copy against 0.29-0.31;
#: rows 2 KB apart lost nothing by eight).
ALIASED_ROWS = 4096
#: Replayed word kernels over at most this many words shuffle run by run in one loop nest (:func:`few_runs`).
FEW_WORDS = 1 << 15


# --------------------------------------------------------------- one i0: the inner loops
@njit(nogil=True, cache=True)
def started() -> int:
    """Nothing: its first call is numba's one-time start in a process
    (:func:`~layout_algebra.packing.copy_engine.start_kernels`)."""
    return 1


@njit(nogil=True, cache=True)
def _bytes_in(words, wo, ws, parts, po, ps, step, shape):  # type: ignore[no-untyped-def]
    # the strides read once: the stores could alias them, so LLVM would load them on every run
    n1, n2, n, w1, w2, w3, p1, p2, p3 = shape[1], shape[2], shape[3], ws[1], ws[2], ws[3], ps[1], ps[2], ps[3]
    for i1 in range(n1):
        for i2 in range(n2):
            wb = wo + i1 * w1 + i2 * w2
            pb = po + i1 * p1 + i2 * p2
            if w3 == 1 and p3 == 1:
                weave_bytes(words, wb, parts, pb, step, n)
            else:
                for i in range(n):
                    p = pb + i * p3
                    words[wb + i * w3] = (
                        U32(parts[p])
                        | (U32(parts[p + step]) << S8)
                        | (U32(parts[p + 2 * step]) << S16)
                        | (U32(parts[p + 3 * step]) << S24)
                    )


@njit(nogil=True, cache=True)
def _bytes_out(parts, po, ps, step, words, wo, ws, shape, streamed):  # type: ignore[no-untyped-def]
    # the strides read once: the stores could alias them, so LLVM would load them on every run
    n1, n2, n, w1, w2, w3, p1, p2, p3 = shape[1], shape[2], shape[3], ws[1], ws[2], ws[3], ps[1], ps[2], ps[3]
    if streamed and w3 == 1 and p3 == 1:  # the groups of rows side by side, if they run on
        if p2 == n and n2 > 1 and stream_byte_rows(parts, po, p1, n1, step, words, wo, w1, w2, n2, n):
            return
        if p1 == n and n1 > 1 and stream_byte_rows(parts, po, p2, n2, step, words, wo, w2, w1, n1, n):
            return
    if not streamed and w3 == 1 and p3 == 1 and p2 == n and n2 > 1:  # the parts run on across i2
        for i1 in range(n1):
            split_byte_row(parts, po + i1 * p1, step, words, wo + i1 * w1, w2, n2, n)
        return
    for i1 in range(n1):
        for i2 in range(n2):
            wb = wo + i1 * w1 + i2 * w2
            pb = po + i1 * p1 + i2 * p2
            if w3 == 1 and p3 == 1:
                unweave_bytes(parts, pb, step, words, wb, n)
            else:
                for i in range(n):
                    p = pb + i * p3
                    v = words[wb + i * w3]
                    parts[p] = U8(v)
                    parts[p + step] = U8(v >> S8)
                    parts[p + 2 * step] = U8(v >> S16)
                    parts[p + 3 * step] = U8(v >> S24)


@njit(nogil=True, cache=True)
def _nibbles_in(words8, wo, ws, parts, po, ps, step, shape, streamed):  # type: ignore[no-untyped-def]
    for i1 in range(shape[1]):
        for i2 in range(shape[2]):
            wb = wo + i1 * ws[1] + i2 * ws[2]
            pb = po + i1 * ps[1] + i2 * ps[2]
            n, w3, p3 = shape[3], ws[3], ps[3]
            if w3 == 1 and p3 == 1:
                w = words8[4 * wb : 4 * wb + 4 * n]
                if streamed:
                    _stream_nibble_words(w, parts, pb, step, n)
                else:
                    _build_nibbles(w, parts, pb, step, 0, n)
            else:
                for i in range(n):
                    p = pb + i * p3
                    q = 4 * (wb + i * w3)
                    for k in range(4):
                        low, high = parts[p + 2 * k * step], parts[p + (2 * k + 1) * step]
                        words8[q + k] = (low & L4) | (high << B4)


@njit(nogil=True, cache=True)
def _nibbles_out(parts, po, ps, step, words8, wo, ws, shape, streamed):  # type: ignore[no-untyped-def]
    for i1 in range(shape[1]):
        for i2 in range(shape[2]):
            wb = wo + i1 * ws[1] + i2 * ws[2]
            pb = po + i1 * ps[1] + i2 * ps[2]
            n, w3, p3 = shape[3], ws[3], ps[3]
            if w3 == 1 and p3 == 1:
                _nibble_rows_out(parts, pb, step, words8[4 * wb : 4 * wb + 4 * n], n, streamed)
            else:
                for i in range(n):
                    p = pb + i * p3
                    q = 4 * (wb + i * w3)
                    for k in range(4):
                        b = words8[q + k]
                        parts[p + 2 * k * step] = b & L4
                        parts[p + (2 * k + 1) * step] = b >> B4


@njit(nogil=True, cache=True)
def _nibbles_in_rows(words8, wo, ws, parts, po, ps, step, shape):  # type: ignore[no-untyped-def]
    """:func:`_nibbles_in` where the parts run on across ``i2`` (``ps[2] == shape[3]``,
    ``ps[3] == 1``) and the words step by one along ``i3``: the 8 rows of parts are sliced
    once per ``i1`` (one run of ``shape[2] * shape[3]``), not once per short run of
    ``shape[3]`` (slicing costs more than moving 128 elements)."""
    n = shape[3]
    m = shape[2] * n
    for i1 in range(shape[1]):
        pb = po + i1 * ps[1]
        r0 = parts[pb : pb + m]
        r1 = parts[pb + step : pb + step + m]
        r2 = parts[pb + 2 * step : pb + 2 * step + m]
        r3 = parts[pb + 3 * step : pb + 3 * step + m]
        r4 = parts[pb + 4 * step : pb + 4 * step + m]
        r5 = parts[pb + 5 * step : pb + 5 * step + m]
        r6 = parts[pb + 6 * step : pb + 6 * step + m]
        r7 = parts[pb + 7 * step : pb + 7 * step + m]
        for i2 in range(shape[2]):
            wb = 4 * (wo + i1 * ws[1] + i2 * ws[2])
            w = words8[wb : wb + 4 * n]
            q0 = i2 * n
            for i in range(n):
                q = q0 + i
                w[4 * i] = (r0[q] & L4) | (r1[q] << B4)
                w[4 * i + 1] = (r2[q] & L4) | (r3[q] << B4)
                w[4 * i + 2] = (r4[q] & L4) | (r5[q] << B4)
                w[4 * i + 3] = (r6[q] & L4) | (r7[q] << B4)


@njit(nogil=True, cache=True)
def _nibbles_out_rows(parts, po, ps, step, words8, wo, ws, shape, line, streamed):  # type: ignore[no-untyped-def]
    """The inverse of :func:`_nibbles_in_rows` (same conditions): the runs of words of each
    ``i1`` are gathered into ``line``, then split in one long loop."""
    n = shape[3]
    m = shape[2] * n
    for i1 in range(shape[1]):
        for i2 in range(shape[2]):
            wb = 4 * (wo + i1 * ws[1] + i2 * ws[2])
            w = words8[wb : wb + 4 * n]
            run = line[4 * i2 * n : 4 * (i2 + 1) * n]
            for i in range(4 * n):
                run[i] = w[i]
        _nibble_rows_out(parts, po + i1 * ps[1], step, line, m, streamed)


@njit(nogil=True, cache=True)
def _build_nibbles(line8, parts, pb, step, lo, hi):  # type: ignore[no-untyped-def]
    """Words ``lo .. hi-1`` of ``line8`` (bytes) from the 8 rows ``parts[pb + j*step :]``:
    64 at a time in explicit vectors where the host has byte permutes
    (:func:`~layout_algebra.packing.nibble_vectors.pack_block`), the rest by
    :func:`_build_nibble_loop`."""
    if HAS_BYTE_PERMUTE:
        while lo + BLOCK_WORDS <= hi:
            _pack_block(line8, 4 * lo, parts, pb + lo, step)
            lo += BLOCK_WORDS
    _build_nibble_loop(line8, parts, pb, step, lo, hi)


@njit(nogil=True, cache=True)
def _build_nibble_loop(line8, parts, pb, step, lo, hi):  # type: ignore[no-untyped-def]
    """:func:`_build_nibbles` as one loop LLVM vectorizes (on any host)."""
    m = hi - lo
    r0 = parts[pb + lo : pb + hi]
    r1 = parts[pb + step + lo : pb + step + hi]
    r2 = parts[pb + 2 * step + lo : pb + 2 * step + hi]
    r3 = parts[pb + 3 * step + lo : pb + 3 * step + hi]
    r4 = parts[pb + 4 * step + lo : pb + 4 * step + hi]
    r5 = parts[pb + 5 * step + lo : pb + 5 * step + hi]
    r6 = parts[pb + 6 * step + lo : pb + 6 * step + hi]
    r7 = parts[pb + 7 * step + lo : pb + 7 * step + hi]
    w = line8[4 * lo : 4 * hi]
    for i in range(m):
        w[4 * i] = (r0[i] & L4) | (r1[i] << B4)
        w[4 * i + 1] = (r2[i] & L4) | (r3[i] << B4)
        w[4 * i + 2] = (r4[i] & L4) | (r5[i] << B4)
        w[4 * i + 3] = (r6[i] & L4) | (r7[i] << B4)


@njit(nogil=True, cache=True)
def _stream_nibble_words(line8, parts, pb, step, m):  # type: ignore[no-untyped-def]
    """:func:`_build_nibbles` of words ``0 .. m-1``, their whole 64-byte lines written with
    non-temporal stores: 64 words (4 lines) at a time straight from the vectors where the host
    has byte permutes, else by :func:`_stream_nibble_lines`."""
    if not HAS_BYTE_PERMUTE:
        _stream_nibble_lines(line8, parts, pb, step, m)
        return
    lead = (-line8.ctypes.data) % LINE  # bytes before the first whole line of words
    done = min(m, lead // 4) if lead % 4 == 0 else m
    _build_nibbles(line8, parts, pb, step, 0, done)
    while done + BLOCK_WORDS <= m:
        _pack_block_nt(line8, 4 * done, parts, pb + done, step)
        done += BLOCK_WORDS
    _build_nibbles(line8, parts, pb, step, done, m)


@njit(nogil=True, cache=True)
def _stream_nibble_lines(line8, parts, pb, step, m):  # type: ignore[no-untyped-def]
    """:func:`_stream_nibble_words` on any host: whole lines built in a buffer in the L1
    cache (allocated here, so that LLVM vectorizes the loop that fills it)."""
    raw = np.empty(5 * LINE, U8)
    at = (-raw.ctypes.data) % LINE
    buffer = raw[at : at + 4 * LINE]
    lead = (-line8.ctypes.data) % LINE  # bytes before the first whole line of words
    done = min(m, lead // 4) if lead % 4 == 0 else m
    _build_nibbles(line8, parts, pb, step, 0, done)
    while done + LINE <= m:  # 64 words: 4 lines
        q = pb + done
        r0 = parts[q : q + LINE]
        r1 = parts[q + step : q + step + LINE]
        r2 = parts[q + 2 * step : q + 2 * step + LINE]
        r3 = parts[q + 3 * step : q + 3 * step + LINE]
        r4 = parts[q + 4 * step : q + 4 * step + LINE]
        r5 = parts[q + 5 * step : q + 5 * step + LINE]
        r6 = parts[q + 6 * step : q + 6 * step + LINE]
        r7 = parts[q + 7 * step : q + 7 * step + LINE]
        for i in range(LINE):
            buffer[4 * i] = (r0[i] & L4) | (r1[i] << B4)
            buffer[4 * i + 1] = (r2[i] & L4) | (r3[i] << B4)
            buffer[4 * i + 2] = (r4[i] & L4) | (r5[i] << B4)
            buffer[4 * i + 3] = (r6[i] & L4) | (r7[i] << B4)
        for k in range(4):
            _stream_line(line8, 4 * done + k * LINE, buffer, k * LINE)
        done += LINE
    _build_nibbles(line8, parts, pb, step, done, m)


@njit(nogil=True, cache=True)
def _split_nibbles(parts, pb, step, line8, lo, hi):  # type: ignore[no-untyped-def]
    """Words ``lo .. hi-1`` of ``line8`` (bytes) into the 8 rows ``parts[pb + j*step :]``:
    byte ``k`` of the words into rows ``2k`` and ``2k+1``, one pair of rows at a time (the
    words stay in the L1 cache; two streams of stores instead of eight measured 15-20%
    faster, 64 KB to 1 MB of words). Where the host has byte permutes, 64 words at a time from
    explicit vectors first: into all 8 rows
    (:func:`~layout_algebra.packing.nibble_vectors.unpack_block`), or where the rows share
    their cache sets (``ALIASED_ROWS``), into one pair of rows at a time
    (:func:`~layout_algebra.packing.nibble_vectors.unpack_pair`)."""
    if HAS_BYTE_PERMUTE and step % ALIASED_ROWS == 0:  # two rows at a time (ALIASED_ROWS)
        end = lo + (hi - lo) // BLOCK_WORDS * BLOCK_WORDS
        for k in range(4):
            low, high = pb + 2 * k * step, pb + (2 * k + 1) * step
            for i in range(lo, end, BLOCK_WORDS):
                _unpack_pair(parts, low + i, high + i, line8, 4 * i, k)
        lo = end
    elif HAS_BYTE_PERMUTE:
        while lo + BLOCK_WORDS <= hi:
            _unpack_block(parts, pb + lo, step, line8, 4 * lo)
            lo += BLOCK_WORDS
    _split_nibble_pairs(parts, pb, step, line8, lo, hi)


@njit(nogil=True, cache=True)
def _split_nibble_pairs(parts, pb, step, line8, lo, hi):  # type: ignore[no-untyped-def]
    """:func:`_split_nibbles` as loops over pairs of rows, which LLVM vectorizes (on any host)."""
    w = line8[4 * lo : 4 * hi]
    for k in range(4):
        low = parts[pb + 2 * k * step + lo : pb + 2 * k * step + hi]
        high = parts[pb + (2 * k + 1) * step + lo : pb + (2 * k + 1) * step + hi]
        for i in range(hi - lo):
            b = w[4 * i + k]
            low[i] = b & L4
            high[i] = b >> B4


@njit(nogil=True, cache=True)
def _nibble_rows_out(parts, pb, step, line8, m, streamed):  # type: ignore[no-untyped-def]
    """The inverse of :func:`_build_nibbles`. With ``streamed``, where the 8 rows are equally
    aligned (``step % 64 == 0``), the rows' whole 64-byte lines are written with non-temporal
    stores: past the cache, without reading each line first (unpacking writes twice the bytes
    it reads); 64 words at a time straight from the vectors where the host has byte permutes
    (:func:`~layout_algebra.packing.nibble_vectors.unpack_block_nt`), else by
    :func:`_stream_nibble_rows`."""
    done = 0
    if streamed and step % LINE == 0:
        done = min(m, (-(parts.ctypes.data + pb)) % LINE)  # up to the first whole line
        _split_nibbles(parts, pb, step, line8, 0, done)
        if HAS_BYTE_PERMUTE:
            while done + BLOCK_WORDS <= m:
                _unpack_block_nt(parts, pb + done, step, line8, 4 * done)
                done += BLOCK_WORDS
        else:
            done = _stream_nibble_rows(parts, pb, step, line8, done, m)
    _split_nibbles(parts, pb, step, line8, done, m)


@njit(nogil=True, cache=True)
def _stream_nibble_rows(parts, pb, step, line8, done, m):  # type: ignore[no-untyped-def]
    """:func:`_nibble_rows_out`'s streamed words ``done ..`` (the rows' lines from ``done``
    whole) on any host, 64 at a time while they last (the next ``done`` is returned): split
    into 8 lines of a buffer in the L1 cache, allocated here (LLVM then knows it aliases
    nothing, and vectorizes the loop that fills it), then streamed."""
    raw = np.empty(9 * LINE, U8)
    at = (-raw.ctypes.data) % LINE
    lines = raw[at : at + 8 * LINE]
    s0, s1, s2, s3 = lines[0:64], lines[64:128], lines[128:192], lines[192:256]
    s4, s5, s6, s7 = lines[256:320], lines[320:384], lines[384:448], lines[448:512]
    while done + LINE <= m:
        w = line8[4 * done : 4 * (done + LINE)]
        for i in range(LINE):
            b0, b1, b2, b3 = w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3]
            s0[i] = b0 & L4
            s1[i] = b0 >> B4
            s2[i] = b1 & L4
            s3[i] = b1 >> B4
            s4[i] = b2 & L4
            s5[i] = b2 >> B4
            s6[i] = b3 & L4
            s7[i] = b3 >> B4
        for j in range(8):
            _stream_line(parts, pb + j * step + done, lines, j * LINE)
        done += LINE
    return done


@njit(nogil=True, cache=True)
def _runs_between(words, wo, ws, stage, shape, to_words):  # type: ignore[no-untyped-def]
    """Copy the runs of ``shape[3]`` words between ``words`` (run ``(i1, i2)`` at
    ``wo + i1*ws[1] + i2*ws[2]``) and ``stage`` (the runs in the order ``(i1, i2)``), the
    runs visited in the order of ``words`` in memory (one sequential stream there)."""
    n = shape[3]
    outer, inner = (2, 1) if ws[2] > ws[1] else (1, 2)
    for a in range(shape[outer]):
        for b in range(shape[inner]):
            i1, i2 = (b, a) if outer == 2 else (a, b)
            wb = wo + i1 * ws[1] + i2 * ws[2]
            sb = (i1 * shape[2] + i2) * n
            w = words[wb : wb + n]
            st = stage[sb : sb + n]
            if to_words:
                for i in range(n):
                    w[i] = st[i]
            else:
                for i in range(n):
                    st[i] = w[i]


@njit(nogil=True, cache=True)
def _runs_to_stage(words, wo, ws, stage, shape):  # type: ignore[no-untyped-def]
    """:func:`_runs_between` from ``words`` into ``stage``, reading ``words`` only: the kernels
    that take words apart then compile for a read-only buffer (``np.frombuffer`` of bytes)."""
    n = shape[3]
    outer, inner = (2, 1) if ws[2] > ws[1] else (1, 2)
    for a in range(shape[outer]):
        for b in range(shape[inner]):
            i1, i2 = (b, a) if outer == 2 else (a, b)
            wb = wo + i1 * ws[1] + i2 * ws[2]
            sb = (i1 * shape[2] + i2) * n
            w = words[wb : wb + n]
            st = stage[sb : sb + n]
            for i in range(n):
                st[i] = w[i]


@njit(nogil=True, cache=True)
def _line_buffer(size):  # type: ignore[no-untyped-def]
    """A buffer of ``size`` bytes that starts a page, so that it lies within one page
    when ``size <= PAGE`` (and starts a cache line)."""
    raw = np.empty(size + PAGE, U8)
    at = (-raw.ctypes.data) % PAGE
    return raw[at : at + size]


@njit(nogil=True, cache=True)
def _stream_runs_out(words8, wb, ws, stage8, shape):  # type: ignore[no-untyped-def]
    """:func:`_runs_between` into ``words`` (``wb``: the first word's byte offset in
    ``words8``) where the runs are one dense region (:func:`_is_one_region`): the runs are
    gathered, in the order of memory, into a buffer in the L1 cache whose lines match the
    region's, and every whole 64-byte line is written with a non-temporal store; the bytes
    of the region's first and last partial lines are stored plainly."""
    n4 = 4 * shape[3]
    outer, inner = (2, 1) if ws[2] > ws[1] else (1, 2)
    buffer = _line_buffer(n4 + 2 * LINE)  # fill < LINE + n4 after each run
    lead = (words8.ctypes.data + wb) % LINE  # the region's bytes before its first line start here
    fill = lead  # bytes in the buffer: buffer[0] lies where the region's first line starts
    at = wb - lead  # the byte of words8 that buffer[0] goes to
    first = True
    for a in range(shape[outer]):
        for b in range(shape[inner]):
            i1, i2 = (b, a) if outer == 2 else (a, b)
            sb = 4 * (i1 * shape[2] + i2) * shape[3]
            run = stage8[sb : sb + n4]
            into = buffer[fill : fill + n4]
            for i in range(n4):
                into[i] = run[i]
            fill += n4
            lines = fill // LINE
            k = 0
            if first and lines and lead:  # the region's first line: only its own bytes
                part = words8[at + lead : at + LINE]
                for i in range(LINE - lead):
                    part[i] = buffer[lead + i]
                k = 1
            first = first and not lines
            while k < lines:
                _stream_line(words8, at + k * LINE, buffer, k * LINE)
                k += 1
            rest = fill - lines * LINE
            for i in range(rest):
                buffer[i] = buffer[lines * LINE + i]
            at += lines * LINE
            fill = rest
    for i in range(lead if first else 0, fill):  # the last partial line (or the only one)
        words8[at + i] = buffer[i]


@njit(nogil=True, cache=True)
def _is_one_region(ws, shape):  # type: ignore[no-untyped-def]
    """Whether the runs of ``shape[3]`` words (``ws[3] == 1``), visited in the order of
    memory, follow one another without a gap."""
    outer, inner = (2, 1) if ws[2] > ws[1] else (1, 2)
    return ws[3] == 1 and ws[inner] == shape[3] and ws[outer] == shape[3] * shape[inner]


@njit(nogil=True, cache=True)
def _one_run(ws, ps, shape):  # type: ignore[no-untyped-def]
    """Whether each ``i0`` is one run of ``shape[3]`` words and of parts (``(8,128)(8,1)``: the
    words of 8 rows, from or into 8 runs of parts): then the kernels call the inner loop
    directly, without :func:`_nibbles_in`'s loops over ``i1`` and ``i2`` (a call through them
    cost about 70 ns per ``i0``: 2 of the 5 us of packing 64 KB)."""
    return shape[1] == 1 and shape[2] == 1 and ws[3] == 1 and ps[3] == 1


@njit(nogil=True, cache=True)
def _runs_on(ws, ps, shape):  # type: ignore[no-untyped-def]
    """Whether the parts run on across ``i2`` and both sides step by one along ``i3``."""
    return ws[3] == 1 and ps[3] == 1 and shape[2] > 1 and ps[2] == shape[3]


@njit(nogil=True, cache=True)
def _halves_in(words, wo, ws, parts, po, ps, step, shape):  # type: ignore[no-untyped-def]
    # the strides read once: the stores could alias them, so LLVM would load them on every run
    n1, n2, n, w1, w2, w3, p1, p2, p3 = shape[1], shape[2], shape[3], ws[1], ws[2], ws[3], ps[1], ps[2], ps[3]
    for i1 in range(n1):
        for i2 in range(n2):
            wb = wo + i1 * w1 + i2 * w2
            pb = po + i1 * p1 + i2 * p2
            if w3 == 1 and p3 == 1:
                weave_halves(words, wb, parts, pb, step, n)
            else:
                for i in range(n):
                    p = pb + i * p3
                    words[wb + i * w3] = U32(parts[p]) | (U32(parts[p + step]) << S16)


@njit(nogil=True, cache=True)
def _stream_halves_out(words8, wb, ws, parts, pb, ps, step, shape):  # type: ignore[no-untyped-def]
    """:func:`_halves_in` for one ``i0`` whose words are one dense region
    (:func:`_is_one_region`; ``wb``: its first byte in ``words8``) and whose parts step by
    one along ``i3``: the runs are built in the order of memory into a buffer in the L1
    cache whose 64-byte lines match the region's, and every whole line is written with a
    non-temporal store (the region's first and last partial lines plainly). The writing of
    the lines repeats :func:`_stream_runs_out`'s on purpose: as a function of its own,
    called once per run, it made the kernel 2-3x slower (measured)."""
    n = shape[3]
    outer, inner = (2, 1) if ws[2] > ws[1] else (1, 2)
    buffer = _line_buffer(4 * n + 2 * LINE)  # fill < LINE + 4n after each run
    buffer32 = buffer.view(U32)
    lead = (words8.ctypes.data + wb) % LINE
    fill = lead
    at = wb - lead
    first = True
    for a_ in range(shape[outer]):
        for b_ in range(shape[inner]):
            i1, i2 = (b_, a_) if outer == 2 else (a_, b_)
            q = pb + i1 * ps[1] + i2 * ps[2]
            low = parts[q : q + n]
            high = parts[q + step : q + step + n]
            w = buffer32[fill // 4 : fill // 4 + n]
            for i in range(n):
                w[i] = U32(low[i]) | (U32(high[i]) << S16)
            fill += 4 * n
            lines = fill // LINE
            k = 0
            if first and lines and lead:  # the region's first line: only its own bytes
                part = words8[at + lead : at + LINE]
                for i in range(LINE - lead):
                    part[i] = buffer[lead + i]
                k = 1
            first = first and not lines
            while k < lines:
                _stream_line(words8, at + k * LINE, buffer, k * LINE)
                k += 1
            rest = fill - lines * LINE
            for i in range(rest):
                buffer[i] = buffer[lines * LINE + i]
            at += lines * LINE
            fill = rest
    for i in range(lead if first else 0, fill):  # the last partial line (or the only one)
        words8[at + i] = buffer[i]


@njit(nogil=True, cache=True)
def _halves_out(parts, po, ps, step, words, wo, ws, shape):  # type: ignore[no-untyped-def]
    # the strides read once: the stores could alias them, so LLVM would load them on every run
    n1, n2, n, w1, w2, w3, p1, p2, p3 = shape[1], shape[2], shape[3], ws[1], ws[2], ws[3], ps[1], ps[2], ps[3]
    for i1 in range(n1):
        for i2 in range(n2):
            wb = wo + i1 * w1 + i2 * w2
            pb = po + i1 * p1 + i2 * p2
            if w3 == 1 and p3 == 1:
                # shuffles, inlined (Zen 4 VM, bf16 (8,128)(2,1), 1-8 MB: 31-34 -> 38 GB/s in the
                # caches, 16 -> 25-28 GB/s at 8 MB, than LLVM's own vectors of truncating stores)
                unweave_halves(parts, pb, step, words, wb, n)
            else:
                for i in range(n):
                    p = pb + i * p3
                    v = words[wb + i * w3]
                    parts[p] = U16(v)
                    parts[p + step] = U16(v >> S16)


@njit(nogil=True, cache=True)
def few_runs(ws, ps, shape):  # type: ignore[no-untyped-def]
    """Whether the words are at most ``FEW_WORDS`` and both sides step by one along ``i3``: then
    the replays' entries (:mod:`~layout_algebra.packing.replay_kernels`) shuffle run by run in
    one loop nest (:func:`weave_runs` and the like) instead of calling a kernel."""
    return ws[3] == 1 and ps[3] == 1 and shape[0] * shape[1] * shape[2] * shape[3] <= FEW_WORDS


@njit(nogil=True, cache=True)
def weave_runs(words, wo, ws, parts, po, ps, step, shape):  # type: ignore[no-untyped-def]
    """Every run of ``shape[3]`` words woven from 4 runs of bytes, in one loop nest: for a few
    words, in the caches, what the other paths add per ``i0`` and per row (a call, aligning
    the stores) costs more than it saves (taking 64 KB of ``s8`` apart: 1.8 against 3.3 us).
    (One function per direction and part size: the side only read may be a read-only array.)
    The strides are read once, before the loops: read in them, every store (which could
    alias them) made LLVM load them again, and 64 KB of ``s8`` took 2.6 instead of 1.4 us."""
    n0, n1, n2, n = shape[0], shape[1], shape[2], shape[3]
    w0, w1, w2, p0, p1, p2 = ws[0], ws[1], ws[2], ps[0], ps[1], ps[2]
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                wb, pb = wo + i0 * w0 + i1 * w1 + i2 * w2, po + i0 * p0 + i1 * p1 + i2 * p2
                weave_bytes(words, wb, parts, pb, step, n)


@njit(nogil=True, cache=True)
def unweave_runs(parts, po, ps, step, words, wo, ws, shape):  # type: ignore[no-untyped-def]
    """The inverse of :func:`weave_runs`."""
    n0, n1, n2, n = shape[0], shape[1], shape[2], shape[3]
    w0, w1, w2, p0, p1, p2 = ws[0], ws[1], ws[2], ps[0], ps[1], ps[2]
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                wb, pb = wo + i0 * w0 + i1 * w1 + i2 * w2, po + i0 * p0 + i1 * p1 + i2 * p2
                unweave_bytes(parts, pb, step, words, wb, n)


@njit(nogil=True, cache=True)
def weave_half_runs(words, wo, ws, parts, po, ps, step, shape):  # type: ignore[no-untyped-def]
    """:func:`weave_runs` for words of two 16-bit halves."""
    n0, n1, n2, n = shape[0], shape[1], shape[2], shape[3]
    w0, w1, w2, p0, p1, p2 = ws[0], ws[1], ws[2], ps[0], ps[1], ps[2]
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                wb, pb = wo + i0 * w0 + i1 * w1 + i2 * w2, po + i0 * p0 + i1 * p1 + i2 * p2
                weave_halves(words, wb, parts, pb, step, n)


@njit(nogil=True, cache=True)
def unweave_half_runs(parts, po, ps, step, words, wo, ws, shape):  # type: ignore[no-untyped-def]
    """The inverse of :func:`weave_half_runs`."""
    n0, n1, n2, n = shape[0], shape[1], shape[2], shape[3]
    w0, w1, w2, p0, p1, p2 = ws[0], ws[1], ws[2], ps[0], ps[1], ps[2]
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                wb, pb = wo + i0 * w0 + i1 * w1 + i2 * w2, po + i0 * p0 + i1 * p1 + i2 * p2
                unweave_halves(parts, pb, step, words, wb, n)


# ------------------------------------------------------------------- the kernels: over i0
# (each spells its loop over i0: numba cannot cache a kernel that takes a function argument)
@njit(nogil=True, cache=True)
def words_from_bytes(words, wo, ws, parts, po, ps, step, shape, staged, streamed=False):  # type: ignore[no-untyped-def]
    """``words[w] = p0 | p1 << 8 | p2 << 16 | p3 << 24``, the bytes ``pj = parts[p + j*step]``.
    With ``streamed``, staged words whose ``i0`` is one region are written out a whole cache
    line at a time, non-temporally (:func:`_stream_runs_out`)."""
    rows = _runs_on(ws, ps, shape)
    size = shape[1] * shape[2] * shape[3] if staged else 0
    stage = np.empty(size, words.dtype)
    region = streamed and staged and rows and _is_one_region(ws, shape)
    words8, stage8 = words.view(U8), stage.view(U8)
    for i0 in range(shape[0]):
        if staged and rows:  # the stage in the order of the parts, copied out in runs
            m = shape[2] * shape[3]
            for i1 in range(shape[1]):
                weave_bytes(stage, i1 * m, parts, po + i0 * ps[0] + i1 * ps[1], step, m)
            if region:
                _stream_runs_out(words8, 4 * (wo + i0 * ws[0]), ws, stage8, shape)
            else:
                _runs_between(words, wo + i0 * ws[0], ws, stage, shape, True)
        elif staged:
            _bytes_in(stage, 0, ws, parts, po + i0 * ps[0], ps, step, shape)
            out = words[wo + i0 * ws[0] : wo + i0 * ws[0] + size]
            for i in range(size):
                out[i] = stage[i]
        else:
            _bytes_in(words, wo + i0 * ws[0], ws, parts, po + i0 * ps[0], ps, step, shape)
    if region:
        _store_fence()


@njit(nogil=True, cache=True)
def bytes_from_words(parts, po, ps, step, words, wo, ws, shape, staged, streamed=False):  # type: ignore[no-untyped-def]
    """The inverse of :func:`words_from_bytes`: ``parts[p + j*step] = words[w] >> 8j`` (a byte).
    Staged, each row of parts is written with stores that start cache lines
    (:func:`~layout_algebra.packing.weave_kernels.split_bytes_aligned`); unstaged, a row of
    parts that runs on across ``i2`` at a time
    (:func:`~layout_algebra.packing.weave_kernels.split_byte_row`), unless ``streamed``: then
    every row of an ``i0`` side by side, in the order of the words, each whole line stored
    past the caches (:func:`~layout_algebra.packing.weave_kernels.stream_byte_rows`), where
    the rows run on across ``i2`` or ``i1``; elsewhere run by run."""
    rows = _runs_on(ws, ps, shape)
    size = shape[1] * shape[2] * shape[3] if staged else 0
    stage = np.empty(size, np.uint32)
    for i0 in range(shape[0]):
        if staged and rows:  # the runs copied in to the stage in the order of the parts
            m = shape[2] * shape[3]
            _runs_to_stage(words, wo + i0 * ws[0], ws, stage, shape)
            for i1 in range(shape[1]):
                split_bytes_aligned(parts, po + i0 * ps[0] + i1 * ps[1], step, stage, i1 * m, m)
        elif staged:
            run = words[wo + i0 * ws[0] : wo + i0 * ws[0] + size]
            for i in range(size):
                stage[i] = run[i]
            _bytes_out(parts, po + i0 * ps[0], ps, step, stage, 0, ws, shape, streamed)
        else:
            _bytes_out(parts, po + i0 * ps[0], ps, step, words, wo + i0 * ws[0], ws, shape, streamed)
    if streamed:
        _store_fence()


@njit(nogil=True, cache=True)
def words_from_nibbles(words, wo, ws, parts, po, ps, step, shape, staged, streamed=False):  # type: ignore[no-untyped-def]
    """``words[w] = sum_j (parts[p + j*step] & 0xF) << 4j`` for ``j < 8``. With ``streamed``,
    unstaged runs of words are written a whole cache line at a time, non-temporally."""
    rows = _runs_on(ws, ps, shape)
    size = shape[1] * shape[2] * shape[3] if staged else 0
    stage = np.empty(size, words.dtype)
    words8, stage8 = words.view(U8), stage.view(U8)
    if not staged and not rows and _one_run(ws, ps, shape):  # one run of words from 8 runs of parts
        # the strides read once (the stores could alias them); no loop over i1, i2
        n0, w0, p0, n = shape[0], ws[0], ps[0], shape[3]
        for i0 in range(n0):
            wb = 4 * (wo + i0 * w0)
            if streamed:
                _stream_nibble_words(words8[wb : wb + 4 * n], parts, po + i0 * p0, step, n)
            else:
                _build_nibbles(words8[wb : wb + 4 * n], parts, po + i0 * p0, step, 0, n)
        n0 = 0
    else:
        n0 = shape[0]
    for i0 in range(n0):
        if staged and rows:  # the stage in the order of the parts, copied out in runs
            m = shape[2] * shape[3]
            for i1 in range(shape[1]):
                _build_nibbles(stage8[4 * i1 * m :], parts, po + i0 * ps[0] + i1 * ps[1], step, 0, m)
            if streamed and _is_one_region(ws, shape):
                _stream_runs_out(words8, 4 * (wo + i0 * ws[0]), ws, stage8, shape)
            else:
                _runs_between(words, wo + i0 * ws[0], ws, stage, shape, True)
        elif staged:
            _nibbles_in(stage8, 0, ws, parts, po + i0 * ps[0], ps, step, shape, False)
            out = words[wo + i0 * ws[0] : wo + i0 * ws[0] + size]
            for i in range(size):
                out[i] = stage[i]
        elif rows:
            _nibbles_in_rows(words8, wo + i0 * ws[0], ws, parts, po + i0 * ps[0], ps, step, shape)
        else:
            _nibbles_in(words8, wo + i0 * ws[0], ws, parts, po + i0 * ps[0], ps, step, shape, streamed)
    if streamed:
        _store_fence()


@njit(nogil=True, cache=True)
def nibbles_from_words(parts, po, ps, step, words, wo, ws, shape, staged, streamed=False):  # type: ignore[no-untyped-def]
    """The inverse of :func:`words_from_nibbles`: ``parts[p + j*step] = (words[w] >> 4j) & 0xF``.
    With ``streamed``, whole cache lines of parts are written with non-temporal stores."""
    rows = _runs_on(ws, ps, shape)
    size = shape[1] * shape[2] * shape[3] if staged else 0
    stage = np.empty(size, np.uint32)
    words8, stage8 = words.view(U8), stage.view(U8)
    line = np.empty(4 * shape[2] * shape[3] if rows else 0, U8)
    if not staged and not rows and _one_run(ws, ps, shape):  # one run of words into 8 runs of parts
        # the strides read once (the stores could alias them); no loop over i1, i2
        n0, w0, p0, n = shape[0], ws[0], ps[0], shape[3]
        for i0 in range(n0):
            wb = 4 * (wo + i0 * w0)
            _nibble_rows_out(parts, po + i0 * p0, step, words8[wb : wb + 4 * n], n, streamed)
        n0 = 0
    else:
        n0 = shape[0]
    for i0 in range(n0):
        p0, w0 = po + i0 * ps[0], wo + i0 * ws[0]
        if staged and rows:  # the runs copied in to the stage in the order of the parts
            m = shape[2] * shape[3]
            _runs_to_stage(words, w0, ws, stage, shape)
            for i1 in range(shape[1]):
                _nibble_rows_out(parts, p0 + i1 * ps[1], step, stage8[4 * i1 * m :], m, streamed)
        elif staged:
            run = words[w0 : w0 + size]
            for i in range(size):
                stage[i] = run[i]
            _nibbles_out(parts, p0, ps, step, stage8, 0, ws, shape, streamed)
        elif rows:
            _nibbles_out_rows(parts, p0, ps, step, words8, w0, ws, shape, line, streamed)
        else:
            _nibbles_out(parts, p0, ps, step, words8, w0, ws, shape, streamed)
    if streamed:
        _store_fence()


@njit(nogil=True, cache=True)
def words_from_halves(words, wo, ws, parts, po, ps, step, shape, staged, streamed=False):  # type: ignore[no-untyped-def]
    """``words[w] = p0 | p1 << 16``, the 16-bit halves ``pj = parts[p + j*step]`` (the 2
    ``bf16`` of a ``(2,1)`` tile). With ``streamed``, where the words of each ``i0`` are one
    region and the parts step by one along ``i3``, the words are written a whole cache line
    at a time, non-temporally (:func:`_stream_halves_out`)."""
    size = shape[1] * shape[2] * shape[3] if staged else 0
    stage = np.empty(size, words.dtype)
    region = streamed and ps[3] == 1 and _is_one_region(ws, shape)
    words8 = words.view(U8)
    for i0 in range(shape[0]):
        if region:
            _stream_halves_out(words8, 4 * (wo + i0 * ws[0]), ws, parts, po + i0 * ps[0], ps, step, shape)
        elif staged:
            _halves_in(stage, 0, ws, parts, po + i0 * ps[0], ps, step, shape)
            out = words[wo + i0 * ws[0] : wo + i0 * ws[0] + size]
            for i in range(size):
                out[i] = stage[i]
        else:
            _halves_in(words, wo + i0 * ws[0], ws, parts, po + i0 * ps[0], ps, step, shape)
    if region:
        _store_fence()


@njit(nogil=True, cache=True)
def halves_from_words(parts, po, ps, step, words, wo, ws, shape, staged):  # type: ignore[no-untyped-def]
    """``parts[p] = words[w] & 0xFFFF`` and ``parts[p + step] = words[w] >> 16``: the two
    16-bit halves of each word (the 2 ``bf16`` of a ``(2,1)`` tile)."""
    size = shape[1] * shape[2] * shape[3] if staged else 0
    stage = np.empty(size, np.uint32)
    for i0 in range(shape[0]):
        if staged:
            run = words[wo + i0 * ws[0] : wo + i0 * ws[0] + size]
            for i in range(size):
                stage[i] = run[i]
            _halves_out(parts, po + i0 * ps[0], ps, step, stage, 0, ws, shape)
        else:
            _halves_out(parts, po + i0 * ps[0], ps, step, words, wo + i0 * ws[0], ws, shape)
