"""Compiled transposing copies for :mod:`layout_algebra.packing.copy_engine` (optional: needs ``numba``).

A *transposing* copy (:func:`~layout_algebra.packing.copy_engine.is_transposing`) moves a block of
an array whose rows are far apart (the *far* side: the logical array of ``{0,1:T(8,128)}``,
rows 32 KB apart) to or from a chunk of a buffer whose minor dimension runs the other way
(the *near* side: the tiles). Five things make it slow, and each has its fix here:

* *Transposing element by element* (NumPy's loop, or a scalar compiled loop: 4–7 GB/s in
  the cache). :func:`transpose8` moves an 8x8 block of elements with 8 vector loads, 24
  ``shufflevector`` instructions (three butterfly stages, each swapping one bit of the row
  index with the same bit of the column index) and 8 vector stores, written in LLVM IR
  through numba's ``intrinsic`` (about 40 GB/s in the cache for 4-byte elements). It and
  the other blocks in registers (16x16) are in :mod:`layout_algebra.packing.register_blocks`,
  the single lines in :mod:`layout_algebra.packing.line_stores`.
* *Reading or writing the far side across its rows* (each row touched 32 bytes at a time:
  the prefetcher never sees a stream). The far side is copied row by row, in runs of up
  to ``width * nc`` elements (4 KB for the benchmark), through a staging buffer in the L2
  cache; the transposes work between the staging buffer and the near side.
* *One short run after another* (a 4 KB run ends before the prefetcher has ramped up on
  it). :func:`read_rows` reads ``ROWS_TOGETHER`` (8) far rows, or near tiles, at a time, a
  64-byte line of each in turn, so that 8 streams are in flight (one thread, the far rows:
  pack 0.40 -> 0.48 of ``np.copyto``; the tiles: unpack 0.29 -> 0.36). Unpacking then
  transposes the group of tiles 8 stage rows at a time across the group (whole lines of
  the stage written at once), from a buffer whose tiles lie a line apart in the cache sets
  (4 KB apart, all 8 would share the same sets): 0.37 -> 0.46.
* *Rows a power of two apart evicting each other* (8192 floats: every row maps to the same
  cache sets). The staging buffer's rows are ``pad`` elements longer than a run.
* *Reading each line of the output before writing it* (a store to a line not in the cache
  reads it first: 3 passes over memory where ``np.copyto`` of a large array makes 2). With
  ``stream``, the output is written by non-temporal stores (:func:`transpose8_stream`,
  :func:`stream_line`) in whole 64-byte lines where it can, and a fence ends the kernel.

Where the output is kept in the cache (no ``stream``: below ``BLOCKS_STREAM_BYTES`` of
:mod:`layout_algebra.packing.copy_engine`) and the elements have 4 bytes (f32, and the 32-bit
words of an ``f8`` ``(4,1)`` tile), none of that staging is needed: :func:`transpose_rows`
moves 16x16 blocks in registers (:func:`transpose16`: 16 rows of 64 bytes, whole cache lines
read and written, no line touched twice: :func:`aligned_rows`), a block of 32 far rows by 128
near rows at a time (16 KB each side, in the L1 cache), straight between the two sides. The
near side's rows may
come in groups (the 2 rows of an ``f8`` tile, then the next tile), as long as a group divides
16 rows or 16 rows divide it (:func:`group_shift`). From ``BLOCKS_STREAM_BYTES``,
:func:`stream_rows` stores the same blocks past the caches (:func:`transpose16_stream`: each
64-byte row of a block one whole line), the blocks' columns shifted to where the output's
lines start; the few columns before and after are written by masked stores
(:func:`transpose16_part`), in a pass of their own (interleaved with the streamed lines, the
32 MB f32 pack ran at 0.66 of ``np.copyto``, after them 0.71; with an aligned output 1.1). One thread, CPU time, against
``np.copyto`` (A/B in one process, load 4-5): 1 MB f32 ``{0,1:T(8,128)}`` kernel 154 -> 85 us
(pack) and 152 -> 112 us (unpack); 4 MB pack and unpack 0.27-0.36 -> 0.52-0.55.

The copy, in canonical form: five dimensions ``(o0, o1, a, c, d)`` with

* ``d``: the near side's innermost dim (stride 1 there), the far side's rows;
* ``c``: the far side's innermost dim (stride 1 there);
* ``a``: continues ``c``'s run in the far side (far stride ``nc``), so that each row of
  the far side is read, or written, as one run over ``a`` and ``c``;
* ``o0``, ``o1``: everything else, outer loops.

``near[no + i . ns] = far[fo + i . fs]`` (the far side read: :func:`gather_rows`; written:
:func:`scatter_rows`), strides in elements, as in :mod:`layout_algebra.packing.copy_kernels`.
``f32[16,16]{0,1:T(8,8)}``-style tiles of a 16x16 array: near ``(a, o1, c, d)`` is the tile
``(a, o1)``, row ``c``, column ``d``; far ``x[o1 * 8 + d, a * 8 + c]``:

>>> import numpy as np
>>> x = np.arange(256, dtype=np.float32).reshape(16, 16)
>>> tiles = np.zeros((2, 2, 8, 8), np.float32)            # (a, o1, c, d)
>>> shape = np.array([1, 2, 2, 8, 8])                      # (o0, o1, a, c, d)
>>> near_strides = np.array([0, 64, 128, 8, 1])            # tiles[a, o1, c, d]
>>> far_strides = np.array([0, 128, 8, 1, 16])             # x[o1*8 + d, a*8 + c]
>>> stage = np.empty(staging_size(shape, 2, 4), np.float32)
>>> gather_rows(tiles.ravel(), 0, near_strides, x.ravel(), 0, far_strides, shape, stage, 2, 4, True)
>>> np.array_equal(tiles, x.reshape(2, 8, 2, 8).transpose(2, 0, 3, 1))
True
>>> y = np.zeros_like(x)
>>> scatter_rows(y.ravel(), 0, far_strides, tiles.ravel(), 0, near_strides, shape, stage, 2, 4, True)
>>> np.array_equal(y, x)
True

Each kernel is compiled on its first call for the dtypes it gets (unsigned and signed
integers, floats: 1, 2, 4 or 8 bytes), and cached on disk (``cache=True``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from layout_algebra.packing.kernel_cache import check_sources
from layout_algebra.packing.line_stores import address, copy_line, store_fence, stream_line
from layout_algebra.packing.register_blocks import (
    transpose8,
    transpose8_stream,
    transpose16,
    transpose16_at,
    transpose16_part,
    transpose16_seam,
    transpose16_seam_rows,
    transpose16_stream,
)

check_sources()  # numba's cached code of these kernels made from these sources (kernel_cache)

__all__ = [
    "aligned_rows",
    "by_blocks",
    "exact_shift",
    "gather_rows",
    "group_shift",
    "read_rows",
    "row_offset",
    "scatter_rows",
    "staging_size",
    "stream_rows",
    "transpose_block",
    "transpose_rows",
    "write_run",
]


@njit(nogil=True, cache=True)
def transpose_block(dst, q, dr, src, p, sr, n, m, stream):  # type: ignore[no-untyped-def]
    """``dst[q + a * dr + b] = src[p + a + b * sr]`` for ``a < n``, ``b < m``: 8x8 blocks
    in registers (:func:`transpose8`), the edges element by element. With ``stream``
    (``dr`` a multiple of 8), by :func:`transpose8_stream`, the blocks' columns starting
    where ``dst``'s rows of 8 are aligned (NumPy's large arrays start 16 bytes past a page).

    >>> src = np.arange(30, dtype=np.uint16)             # a 3x10 matrix, rows 10 apart
    >>> dst = np.zeros(30, np.uint16)
    >>> transpose_block(dst, 0, 3, src, 0, 10, 10, 3, False)    # its transpose: 10x3
    >>> dst.reshape(10, 3)[:3].tolist()
    [[0, 10, 20], [1, 11, 21], [2, 12, 22]]
    """
    size = dst.itemsize
    b0 = min(m, (-address(dst, q) % (8 * size)) // size) if stream else 0
    n8, m8 = n - n % 8, (m - b0) - (m - b0) % 8
    for a in range(0, n8, 8):
        for b in range(b0, b0 + m8, 8):
            if stream:
                transpose8_stream(dst, q + a * dr + b, dr, src, p + a + b * sr, sr)
            else:
                transpose8(dst, q + a * dr + b, dr, src, p + a + b * sr, sr)
    for a in range(n):
        if a < n8:
            for b in range(b0):
                dst[q + a * dr + b] = src[p + a + b * sr]
        for b in range(b0 + m8 if a < n8 else 0, m):
            dst[q + a * dr + b] = src[p + a + b * sr]


@njit(nogil=True, cache=True)
def write_run(dst, q, src, p, n, stream):  # type: ignore[no-untyped-def]
    """``dst[q : q + n] = src[p : p + n]``; with ``stream``, the 64-byte lines of ``dst``
    inside the run are stored non-temporally (:func:`stream_line`)."""
    k = 0
    if stream:
        line = 64 // dst.itemsize
        while k < n and address(dst, q + k) % 64:
            dst[q + k] = src[p + k]
            k += 1
        while k + line <= n:
            stream_line(dst, q + k, src, p + k)
            k += line
    out = dst[q + k : q + n]
    run = src[p + k : p + n]
    for i in range(n - k):
        out[i] = run[i]


def staging_size(shape: Any, width: int, pad: int) -> int:
    """Elements of the staging buffer for runs of ``width`` steps of ``a``: ``nd`` rows of
    ``width * nc`` elements, each followed by ``pad``."""
    return int(shape[4]) * (width * int(shape[3]) + pad)


#: Far rows (or near tiles) read this many at a time, a 64-byte line of each in turn, so
#: that several streams are in flight instead of one run ramping up after another (both
#: constants are read when the kernels compile).
ROWS_TOGETHER = 8
#: Tiles read together (:func:`scatter_rows`) take at most this many bytes: the L1 cache.
TILES_TOGETHER_BYTES = 1 << 15
#: Where ``c`` has fewer than 8 rows (the 2 words of an ``f8`` ``(8,128)(4,1)`` tile), the rows
#: of several ``a`` (at most this many rows) are transposed together, 8x8 in registers, through
#: a small buffer: element by element, such a copy ran at a twentieth of ``np.copyto``.
SHORT_ROWS = 64
#: A far side of at most this many bytes is transposed from where it is, not staged first
#: (it is in the caches: staging it only copied it once more; 1 MB f32 ``{0,1:T(8,128)}``
#: pack 221 -> 152 us; at 4 MB no better; read when the kernels compile).
DIRECT_BYTES = 1 << 21


#: :func:`stream_rows` works in blocks of this many far rows by this many near rows
#: (16 KB of 4-byte elements on each side: both stay in the L1 cache).
BLOCK_FAR_ROWS = 32
BLOCK_NEAR_ROWS = 128
#: ... and :func:`transpose_rows` (packing, the output kept in the cache), 16 far rows (each
#: read 1 KB along) by 256 near rows. One thread, f32 ``{0,1:T(8,128)}`` pack against
#: ``np.copyto``, arrays 16 bytes past a line (Zen 4, A/B, 3 processes each): 4 MB 0.39-0.42
#: -> 0.50-0.55, 1 MB 0.53-0.55 -> 0.50-0.54; streamed (16 MB) 32 by 128 stays: 0.71-0.76
#: against 0.65-0.69.
CACHED_FAR_ROWS = 16
CACHED_NEAR_ROWS = 256
#: ... and unpacking (:func:`scatter_rows`), this many near rows by this many far rows (Zen 4,
#: 16 MB streamed, f32/f8 words: 0.70/0.23 -> 1.05/0.47 of ``np.copyto``, kernel alone).
SCATTER_NEAR_ROWS = 64
SCATTER_FAR_ROWS = 128
#: Rows in one group, for a side whose rows are evenly spaced (:func:`row_offset`).
ONE_GROUP = 1 << 62


@njit(nogil=True, cache=True)
def row_offset(r, outer, inner, k):  # type: ignore[no-untyped-def]
    """Where row ``r`` starts when rows come in groups of ``k``: ``(r // k) * outer + (r % k) * inner``
    (the ``k`` rows of a tile ``inner`` apart, the tiles ``outer`` apart).

    >>> [row_offset(r, 512, 128, 2) for r in range(5)]
    [0, 128, 512, 640, 1024]
    """
    return (r // k) * outer + (r % k) * inner


@njit(nogil=True, cache=True)
def group_shift(k):  # type: ignore[no-untyped-def]
    """``s`` such that any 16 rows from a multiple of 16 lie as rows ``(r >> s, r & (2**s - 1))``
    of groups of ``k`` (:func:`transpose16`): 4 if 16 divides ``k``, ``log2(k)`` if ``k``
    divides 16, else -1 (no such blocks).

    >>> [group_shift(k) for k in (1, 2, 8, 16, 48, 3, 24)]
    [0, 1, 3, 4, 4, -1, -1]
    """
    if k % 16 == 0:
        return 4
    s = 0
    while (1 << s) < k:
        s += 1
    return s if (1 << s) == k else -1


@njit(nogil=True, cache=True)
def _block_starts(m, outer, inner, k):  # type: ignore[no-untyped-def]
    """:func:`row_offset` of rows ``0, 16, 32, ...`` below ``m`` (no division in the loops)."""
    starts = np.empty(m // 16, np.int64)
    for i in range(m // 16):
        starts[i] = row_offset(16 * i, outer, inner, k)
    return starts


@njit(nogil=True, cache=True)
def transpose_rows(dst, q, d_outer, d_inner, dk, src, p, s_outer, s_inner, sk, n, m, bn, bm):  # type: ignore[no-untyped-def]
    """``dst[q + row_d(b) + a] = src[p + row_s(a) + b]`` for ``a < n``, ``b < m``, rows placed by
    :func:`row_offset` (``row_d(b) = row_offset(b, d_outer, d_inner, dk)``, likewise ``row_s``).
    16x16 blocks in registers (:func:`transpose16`), ``bn`` rows of ``src`` by ``bm`` of ``dst``
    at a time; the edges element by element. Both ``dk`` and ``sk`` must have a
    :func:`group_shift` (else nothing is done and False is returned).

    >>> src = np.arange(40 * 20, dtype=np.uint32)           # 40 rows of 20
    >>> dst = np.zeros(20 * 40, np.uint32)
    >>> transpose_rows(dst, 0, 0, 40, ONE_GROUP, src, 0, 0, 20, ONE_GROUP, 40, 20, 32, 128)
    True
    >>> np.array_equal(dst.reshape(20, 40), src.reshape(40, 20).T)
    True
    """
    d_shift, s_shift = group_shift(dk), group_shift(sk)
    if d_shift < 0 or s_shift < 0:
        return False
    if dst.itemsize == 4 and n >= 16 and m >= 16 and _splits(dk) and _splits(sk):
        aligned_rows(dst, q, d_outer, d_inner, dk, src, p, s_outer, s_inner, sk, n, m, bn, bm)
        return True
    n16, m16 = n - n % 16, m - m % 16
    d_starts = _block_starts(m16, d_outer, d_inner, dk)
    s_starts = _block_starts(n16, s_outer, s_inner, sk)
    for a0 in range(0, n16, bn):
        for b0 in range(0, m16, bm):
            for a in range(a0, min(a0 + bn, n16), 16):
                at = p + s_starts[a // 16]
                for b in range(b0, min(b0 + bm, m16), 16):
                    transpose16(
                        dst, q + d_starts[b // 16] + a, d_outer, d_inner, d_shift,
                        src, at + b, s_outer, s_inner, s_shift,
                    )  # fmt: skip
    for a in range(n):
        at = p + row_offset(a, s_outer, s_inner, sk)
        for b in range(m16 if a < n16 else 0, m):
            dst[q + row_offset(b, d_outer, d_inner, dk) + a] = src[at + b]
    return True


@njit(nogil=True, cache=True)
def exact_shift(k):  # type: ignore[no-untyped-def]
    """``log2(k)`` if ``k`` is a power of two, else -1.

    >>> [exact_shift(k) for k in (1, 2, 8, 48, ONE_GROUP)]
    [0, 1, 3, -1, 62]
    """
    s = 0
    while (1 << s) < k:
        s += 1
    return s if (1 << s) == k else -1


@njit(nogil=True, cache=True)
def _splits(k):  # type: ignore[no-untyped-def]
    """Whether a block of 16 rows may start at any row of groups of ``k`` (:func:`transpose16_at`):
    evenly spaced rows, or groups of a power of two that divides 16."""
    return k == ONE_GROUP or (k <= 16 and exact_shift(k) >= 0)


@njit(nogil=True, cache=True)
def _group_start(r, outer, inner, k):  # type: ignore[no-untyped-def]
    """Where the group of row ``r`` starts, and ``r``'s place in it (``k``: :func:`_splits`)."""
    if k == ONE_GROUP:
        return r * inner, 0
    return (r // k) * outer, r % k


@njit(nogil=True, cache=True)
def _line_offset(a, q, outer, inner, k):  # type: ignore[no-untyped-def]
    """The first column ``< 16`` where every row of ``a`` (4-byte elements, rows placed by
    :func:`row_offset` from ``q``) starts a 64-byte line; 0 if the rows are not lines apart."""
    if inner % 16 or (k != ONE_GROUP and outer % 16):
        return 0
    return (-address(a, q) % 64) // 4


@njit(nogil=True, cache=True)
def aligned_rows(dst, q, d_outer, d_inner, dk, src, p, s_outer, s_inner, sk, n, m, bn, bm):  # type: ignore[no-untyped-def]
    """:func:`transpose_rows` of 4-byte elements (``n, m >= 16``, groups :func:`_splits`), its
    16x16 blocks where both sides' lines start (columns ``a`` of ``dst`` from ``a_lo``, ``b`` of
    ``src`` from ``b_lo``): each load and store one whole line. Where a side's rows are a multiple
    of 16 elements long (the tiles' rows), the columns a row of ``dst`` has before its first line
    and after its last make one block per 16 rows (:func:`transpose16_seam`: masked stores), and
    likewise those of ``src``'s rows (:func:`transpose16_seam_rows`: masked loads); else the
    ends are written, in the same order, by blocks at 0 and ``n - 16`` (``m - 16``) overlapping
    the others (:func:`_block_grid`), which cost far more than their share: each of their rows
    spans two lines, which the blocks beside them write again. A line two blocks share was
    evicted in between (rows 2-8 KB apart share the L1 sets); writing the far side, the blocks go
    along its rows. Zen 4, one thread, kernel alone vs ``np.copyto``, arrays 16 B past a line:
    f32 ``{0,1:T(8,128)}`` 1 MB pack/unpack 0.42/0.28 -> 0.57/0.50, 4 MB (not streamed) 0.27/0.25
    -> 0.44/0.40; f8 words 1 MB 0.31/0.37 -> 0.40/0.47. The seams (A/B, whole ``pack`` and
    ``unpack`` calls, arrays 16 B past a line, 5-7 processes each): 1 MB f32 pack 0.35-0.49 ->
    0.45-0.57, unpack 0.32-0.40 -> 0.42-0.51.

    >>> src = np.arange(40 * 20, dtype=np.uint32)           # 40 rows of 20, 3 elements in
    >>> dst = np.zeros(20 * 40 + 5, np.uint32)
    >>> aligned_rows(dst, 5, 0, 40, ONE_GROUP, src[3:], 0, 0, 20, ONE_GROUP, 37, 20, 32, 128)
    >>> np.array_equal(dst[5:].reshape(20, 40)[:, :37], src[3:743].reshape(37, 20).T)
    True

    Rows of 32 on both sides, 4 elements past a line: seams on both sides, and at the corners.

    >>> src, dst = np.zeros(32 * 32 + 20, np.uint32), np.zeros(32 * 32 + 20, np.uint32)
    >>> src[:] = np.arange(src.size)
    >>> p, q = (-src.ctypes.data % 64) // 4 + 4, (-dst.ctypes.data % 64) // 4 + 4
    >>> aligned_rows(dst, q, 0, 32, ONE_GROUP, src, p, 0, 32, ONE_GROUP, 32, 32, 16, 256)
    >>> np.array_equal(dst[q : q + 1024].reshape(32, 32), src[p : p + 1024].reshape(32, 32).T)
    True
    """
    d_shift, s_shift = exact_shift(dk), exact_shift(sk)
    a_lo, b_lo = _line_offset(dst, q, d_outer, d_inner, dk), _line_offset(src, p, s_outer, s_inner, sk)
    seam = a_lo > 0 and n % 16 == 0  # the columns before a_lo and after the last line: 16
    seam_rows = b_lo > 0 and m % 16 == 0  # likewise the rows before b_lo and after
    a_starts = np.arange(n // 16 - 1) * 16 + a_lo if seam else _block_grid(n, a_lo)
    b_starts = np.arange(m // 16 - 1) * 16 + b_lo if seam_rows else _block_grid(m, b_lo)
    s_first = _group_start(a_lo, s_outer, s_inner, sk)[1]
    d_first = _group_start(b_lo, d_outer, d_inner, dk)[1]
    along = dk == ONE_GROUP and sk != ONE_GROUP  # the far side written: along its rows, inside
    for i0 in range(0, max(a_starts.size, 1), bn // 16):
        for j0 in range(0, max(b_starts.size, 1), bm // 16):
            ca, cb = min(bn // 16, a_starts.size - i0), min(bm // 16, b_starts.size - j0)
            for x in range(ca * cb):
                i, j = (i0 + x % ca, j0 + x // ca) if along else (i0 + x // cb, j0 + x % cb)
                a, b = a_starts[i], b_starts[j]
                s_at, s_row = _group_start(a, s_outer, s_inner, sk)
                d_at, d_row = _group_start(b, d_outer, d_inner, dk)
                if (a - a_lo) % 16 or (b - b_lo) % 16 or a < a_lo or b < b_lo:  # an end: any rows
                    transpose16_at(
                        dst, q + d_at + a, d_outer, d_inner, d_shift, d_row,
                        src, p + s_at + b, s_outer, s_inner, s_shift, s_row,
                    )  # fmt: skip
                else:  # the same first rows every time: their offsets computed once
                    transpose16_at(
                        dst, q + d_at + a, d_outer, d_inner, d_shift, d_first,
                        src, p + s_at + b, s_outer, s_inner, s_shift, s_first,
                    )  # fmt: skip
            if seam and i0 == 0:  # each row's tail and head: one block per 16 rows, masked stores
                corners = 2 if seam_rows and j0 == 0 else 0  # and those of the rows' ends
                for j in range(j0 - corners, j0 + cb):
                    b = b_starts[j] if j >= j0 else (0 if j == j0 - 2 else m - 16)
                    d_at, d_row = _group_start(b, d_outer, d_inner, dk)
                    transpose16_seam(
                        dst, q + d_at, d_outer, d_inner, d_shift,
                        src, p + b, s_outer, s_inner, s_shift, n - 16 + a_lo, 16 - a_lo, d_row,
                    )  # fmt: skip
            if seam_rows and j0 == 0:  # the rows' tails and heads: one block per 16 columns
                for i in range(i0, i0 + ca):
                    a = a_starts[i]
                    s_at, s_row = _group_start(a, s_outer, s_inner, sk)
                    transpose16_seam_rows(
                        dst, q + a, d_outer, d_inner, d_shift,
                        src, p + s_at, s_outer, s_inner, s_shift, s_row, m - 16 + b_lo, 16 - b_lo,
                    )  # fmt: skip


@njit(nogil=True, cache=True)
def _block_grid(n, lo):  # type: ignore[no-untyped-def]
    """Starts of 16-wide blocks covering ``0 .. n`` (``n >= 16``): ``lo, lo + 16, ...``, and ``0``
    before them and ``n - 16`` after them where they leave columns out (overlapping them).

    >>> _block_grid(40, 4).tolist(), _block_grid(48, 0).tolist(), _block_grid(20, 12).tolist()
    ([0, 4, 20, 24], [0, 16, 32], [0, 4])
    """
    count = (n - lo) // 16
    head, tail = lo > 0, lo + 16 * count < n
    starts = np.empty(count + head + tail, np.int64)
    if head:
        starts[0] = 0
    for i in range(count):
        starts[head + i] = lo + 16 * i
    if tail:
        starts[-1] = n - 16
    return starts


@njit(nogil=True, cache=True)
def stream_rows(dst, q, d_outer, d_inner, dk, src, p, s_outer, s_inner, sk, n, m, bn, bm):  # type: ignore[no-untyped-def]
    """:func:`transpose_rows` with ``dst`` written by non-temporal stores (whole 64-byte lines:
    :func:`transpose16_stream`), then a fence. ``dst``'s rows must be 64 bytes apart or a
    multiple of it, and ``sk`` a power of two (else nothing is done and False is returned).
    Where ``dst[q]`` is not 64-byte aligned (NumPy's large arrays start 16 bytes past a page),
    the blocks' columns ``a`` start where it is, the first and the last columns written by
    blocks kept in the cache, masked to them (:func:`transpose16_part`).

    >>> src = np.arange(40 * 20, dtype=np.uint32)           # 40 rows of 20
    >>> dst = np.zeros(20 * 48, np.uint32)[3:]              # rows 48 apart, not aligned
    >>> stream_rows(dst, 0, 0, 48, ONE_GROUP, src, 0, 0, 20, ONE_GROUP, 40, 20, 32, 128)
    True
    >>> np.array_equal(np.concatenate([dst, [0, 0, 0]]).reshape(20, 48)[:, :40], src.reshape(40, 20).T)
    True
    """
    d_shift, s_shift = group_shift(dk), exact_shift(sk)
    line = 64 // dst.itemsize
    aligned = not (d_outer % line and dk < m) and not (d_inner % line and dk > 1)
    if d_shift < 0 or s_shift < 0 or dst.itemsize != 4 or not aligned:
        return False
    if n < 16:
        return transpose_rows(dst, q, d_outer, d_inner, dk, src, p, s_outer, s_inner, sk, n, m, bn, bm)
    m16 = m - m % 16
    d_starts = _block_starts(m16, d_outer, d_inner, dk)
    a_lo = (-address(dst, q) % 64) // dst.itemsize  # aligned columns from a_lo (< 16 <= n)
    a_hi = a_lo + max(0, n - a_lo) // 16 * 16
    group = 1 << s_shift
    for a0 in range(a_lo, a_hi, bn):
        a1 = min(a0 + bn, a_hi)
        for b0 in range(0, m16, bm):
            b1 = min(b0 + bm, m16)
            for a in range(a0, a1, 16):
                at = p + row_offset(a - a % group, s_outer, s_inner, sk)
                for b in range(b0, b1, 16):
                    transpose16_stream(
                        dst, q + d_starts[b // 16] + a, d_outer, d_inner, d_shift,
                        src, at + b, s_outer, s_inner, s_shift, a % group,
                    )  # fmt: skip
    # the columns left at both ends, after the lines stored past the caches, in one pass (the
    # line where a row's tail meets the next row's head is read once): only those columns written
    if a_lo and a_hi + 16 == n + a_lo:  # the tail and the head: 16 columns, one block
        for b in range(0, m16, 16):
            transpose16_seam(
                dst, q + d_starts[b // 16], d_outer, d_inner, d_shift,
                src, p + b, s_outer, s_inner, s_shift, a_hi, n - a_hi, 0,
            )  # fmt: skip
        a_lo, a_hi = 0, n  # done
    for a in (0, n - 16):
        if (a < a_lo) if a == 0 else (a_hi < n):
            at = p + row_offset(a - a % group, s_outer, s_inner, sk)
            lo, hi = (0, a_lo) if a == 0 else (a_hi - a, 16)
            for b in range(0, m16, 16):
                transpose16_part(
                    dst, q + d_starts[b // 16] + a, d_outer, d_inner, d_shift,
                    src, at + b, s_outer, s_inner, s_shift, a % group, lo, hi,
                )  # fmt: skip
    for a in range(n):
        at = p + row_offset(a, s_outer, s_inner, sk)
        for b in range(m16, m):
            dst[q + row_offset(b, d_outer, d_inner, dk) + a] = src[at + b]
    store_fence()
    return True


@njit(nogil=True, cache=True)
def by_blocks(far, fs, shape):  # type: ignore[no-untyped-def]
    """Whether :func:`gather_rows` / :func:`scatter_rows` go by 16x16 blocks of 4-byte elements
    (:func:`transpose_rows`; with ``stream``, :func:`stream_rows` if it can), and the group of the near side's rows
    (``c`` within ``a``)."""
    na, nc, nd = shape[2], shape[3], shape[4]
    k = nc if na > 1 else ONE_GROUP
    whole = far.itemsize == 4 and nd >= 16 and na * nc >= 16 and (na == 1 or fs[2] == nc)
    return whole and group_shift(k) >= 0, k


@njit(nogil=True, cache=True)
def read_rows(dst, pitch, src, start, step, rows, run, together):  # type: ignore[no-untyped-def]
    """``dst[r * pitch : r * pitch + run] = src[start + r * step : ... + run]`` for ``r <
    rows``, reading ``together`` rows at a time a 64-byte line of each in turn (the ends of
    the runs shorter than a line element by element).

    >>> src = np.arange(40, dtype=np.uint8)               # 4 rows 10 apart, runs of 3
    >>> dst = np.zeros(16, np.uint8)
    >>> read_rows(dst, 4, src, 1, 10, 4, 3, 2)
    >>> dst.reshape(4, 4).tolist()
    [[1, 2, 3, 0], [11, 12, 13, 0], [21, 22, 23, 0], [31, 32, 33, 0]]
    """
    line = 64 // src.itemsize
    whole = run - run % line
    for r0 in range(0, rows, together):
        count = min(together, rows - r0)
        for k in range(0, whole, line):
            for r in range(r0, r0 + count):
                copy_line(dst, r * pitch + k, src, start + r * step + k)
        for r in range(r0, r0 + count):
            out = dst[r * pitch + whole : r * pitch + run]
            tail = src[start + r * step + whole : start + r * step + run]
            for k in range(run - whole):
                out[k] = tail[k]


@njit(nogil=True, cache=True)
def gather_rows(near, no, ns, far, fo, fs, shape, stage, width, pad, stream):  # type: ignore[no-untyped-def]
    """``near[no + i . ns] = far[fo + i . fs]`` for ``i`` in the 5-D ``shape`` (canonical
    form: module docstring); the far side is read into ``stage``, ``ROWS_TOGETHER`` rows at
    a time (:func:`read_rows`). With ``stream``, ``near`` is written by non-temporal
    stores: where the rows ``c`` of one ``a`` make one run of ``near`` (a tile), each is
    transposed in the cache and written by :func:`write_run` (every 64-byte line filled at
    once), else by :func:`transpose_block`. A far side of at most ``DIRECT_BYTES`` (in the
    cache anyway) is transposed from where it is, not staged."""
    n0, n1, na, nc, nd = shape[0], shape[1], shape[2], shape[3], shape[4]
    blocks, k = by_blocks(far, fs, shape)
    if blocks:  # far rows d, near rows (a, c)
        for i0 in range(n0):
            for i1 in range(n1):
                q, p = no + i0 * ns[0] + i1 * ns[1], fo + i0 * fs[0] + i1 * fs[1]
                if not stream:
                    transpose_rows(
                        near, q, ns[2], ns[3], k, far, p, 0, fs[4], ONE_GROUP,
                        nd, na * nc, CACHED_FAR_ROWS, CACHED_NEAR_ROWS,
                    )  # fmt: skip
                elif not stream_rows(
                    near, q, ns[2], ns[3], k, far, p, 0, fs[4], ONE_GROUP,
                    nd, na * nc, BLOCK_FAR_ROWS, BLOCK_NEAR_ROWS,
                ):  # fmt: skip
                    blocks = False  # the same answer for every (i0, i1): nothing done
                    break
            if not blocks:
                break
        if blocks:
            return
    row = fs[4]
    pitch = width * nc + pad
    whole = stream and ns[3] == nd  # the rows c of one a make one run of near
    short = nc < 8 and nd >= 8  # rows of several a transposed together (SHORT_ROWS)
    direct = not stream and n0 * n1 * na * nc * nd * far.itemsize <= DIRECT_BYTES
    tile = np.empty(SHORT_ROWS * nd if short else nc * nd if whole else 1, near.dtype)
    for i0 in range(n0):
        for i1 in range(n1):
            for a0 in range(0, na, width):
                a1 = min(na, a0 + width)
                start = fo + i0 * fs[0] + i1 * fs[1] + a0 * fs[2]
                base = no + i0 * ns[0] + i1 * ns[1]
                if direct:
                    _gather_run(near, base, ns, far, start, row, a0, a1, nc, nd, tile, short, whole, stream)
                else:
                    read_rows(stage, pitch, far, start, row, nd, (a1 - a0) * nc, ROWS_TOGETHER)
                    _gather_run(near, base, ns, stage, 0, pitch, a0, a1, nc, nd, tile, short, whole, stream)
    if stream:
        store_fence()


@njit(nogil=True, cache=True)
def _scatter_run(dst, db, dp, near, base, ns, a0, a1, nc, nd, tiles, group, gap, short, blocks):  # type: ignore[no-untyped-def]
    """The transposes of :func:`scatter_rows` for ``a0 <= a < a1``, into ``dst`` (the stage, or
    the far side itself) whose rows ``d`` start at ``db + d * dp``."""
    size = nc * nd
    if group > 1:
        for g in range(a0, a1, group):
            count = min(group, a1 - g)
            read_rows(tiles, gap, near, base + g * ns[2], ns[2], count, size, count)
            if short:  # the group's rows one after another: one (count * nc) x nd block
                transpose_block(dst, db + (g - a0) * nc, dp, tiles, 0, nd, nd, count * nc, False)
            elif blocks:  # 8 rows of the stage at a time, across the group: whole lines
                for d0 in range(0, nd, 8):
                    at = db + (g - a0) * nc + d0 * dp
                    for t in range(count):
                        transpose8(dst, at + t * 8, dp, tiles, t * gap + d0, nd)
            else:
                for t in range(count):
                    transpose_block(dst, db + (g + t - a0) * nc, dp, tiles, t * gap, nd, nd, nc, False)
    else:
        for a in range(a0, a1):
            transpose_block(dst, db + (a - a0) * nc, dp, near, base + a * ns[2], ns[3], nd, nc, False)


@njit(nogil=True, cache=True)
def _gather_run(near, base, ns, src, sb, sp, a0, a1, nc, nd, tile, short, whole, stream):  # type: ignore[no-untyped-def]
    """The transposes of :func:`gather_rows` for ``a0 <= a < a1``, from ``src`` (the stage, or
    the far side itself) whose rows ``d`` start at ``sb + d * sp``."""
    if short:  # the rows (a, c) of several a, 8x8 in registers, then each row out
        per = max(1, SHORT_ROWS // nc)
        for g in range(a0, a1, per):
            count = min(per, a1 - g)
            transpose_block(tile, 0, nd, src, sb + (g - a0) * nc, sp, count * nc, nd, False)
            for t in range(count):
                for c in range(nc):
                    at = base + (g + t) * ns[2] + c * ns[3]
                    # not streamed: runs of one tile row (512 bytes for f8 words) streamed made
                    # the 16 MB f8 pack 2x slower
                    write_run(near, at, tile, (t * nc + c) * nd, nd, False)
        return
    for a in range(a0, a1):
        if whole:  # a tile in the cache, then streamed: every line filled at once
            transpose_block(tile, 0, nd, src, sb + (a - a0) * nc, sp, nc, nd, False)
            write_run(near, base + a * ns[2], tile, 0, nc * nd, True)
        else:
            transpose_block(near, base + a * ns[2], ns[3], src, sb + (a - a0) * nc, sp, nc, nd, stream)


@njit(nogil=True, cache=True)
def scatter_rows(far, fo, fs, near, no, ns, shape, stage, width, pad, stream):  # type: ignore[no-untyped-def]
    """``far[fo + i . fs] = near[no + i . ns]``, the inverse of :func:`gather_rows`: the
    transposes fill ``stage``, which is written to the far side row by row (with
    ``stream``, by non-temporal stores: :func:`write_run`). Where each ``a`` is one run of
    ``near`` (a tile), up to ``ROWS_TOGETHER`` tiles (at most ``TILES_TOGETHER_BYTES``)
    are first read together into the L1 cache (:func:`read_rows`) and transposed from there."""
    n0, n1, na, nc, nd = shape[0], shape[1], shape[2], shape[3], shape[4]
    blocks, k = by_blocks(far, fs, shape)
    if blocks:  # near rows (a, c), far rows d
        for i0 in range(n0):
            for i1 in range(n1):
                q, p = fo + i0 * fs[0] + i1 * fs[1], no + i0 * ns[0] + i1 * ns[1]
                if not stream:
                    transpose_rows(
                        far, q, 0, fs[4], ONE_GROUP, near, p, ns[2], ns[3], k,
                        na * nc, nd, SCATTER_NEAR_ROWS, SCATTER_FAR_ROWS,
                    )  # fmt: skip
                elif not stream_rows(
                    far, q, 0, fs[4], ONE_GROUP, near, p, ns[2], ns[3], k,
                    na * nc, nd, SCATTER_NEAR_ROWS, SCATTER_FAR_ROWS,
                ):  # fmt: skip
                    blocks = False  # the same answer for every (i0, i1): nothing done
                    break
            if not blocks:
                break
        if blocks:
            return
    row = fs[4]
    pitch = width * nc + pad
    size = nc * nd
    group = min(ROWS_TOGETHER, TILES_TOGETHER_BYTES // (size * near.itemsize)) if ns[3] == nd else 1
    short = nc < 8 and group > 1  # tiles of a few rows: the group's rows transposed as one block
    if short:
        group = min(max(group, SHORT_ROWS // nc), TILES_TOGETHER_BYTES // (size * near.itemsize))
    gap = size if short else size + 64 // near.itemsize  # tiles a line apart in the cache sets
    tiles = np.empty(group * gap if group > 1 else 1, near.dtype)
    blocks = nc == 8 and nd % 8 == 0
    direct = not stream and n0 * n1 * na * nc * nd * far.itemsize <= DIRECT_BYTES
    for i0 in range(n0):
        for i1 in range(n1):
            for a0 in range(0, na, width):
                a1 = min(na, a0 + width)
                base = no + i0 * ns[0] + i1 * ns[1]
                start = fo + i0 * fs[0] + i1 * fs[1] + a0 * fs[2]
                if direct:  # in the cache anyway: the transposes write the far side itself
                    _scatter_run(
                        far, start, row, near, base, ns, a0, a1, nc, nd, tiles, group, gap, short, blocks
                    )
                    continue
                _scatter_run(
                    stage, 0, pitch, near, base, ns, a0, a1, nc, nd, tiles, group, gap, short, blocks
                )
                for d in range(nd):
                    write_run(far, start + d * row, stage, d * pitch, (a1 - a0) * nc, stream)
    if stream:
        store_fence()
