"""Runs of 32-bit words woven from rows of parts by vector shuffles (optional: needs ``numba``).

The word kernels of :mod:`layout_algebra.packing.copy_kernels` build a run of words from the
4 byte rows of an ``(4,1)`` tile (``s8``, ``pred``) or the 2 half rows of a ``(2,1)`` tile
(``bf16``), and take them apart. Written as ``w[i] = a[i] | b[i] << 8 | ...``, LLVM widens
every byte to 32 bits on its own (one shuffle per 8 words), and the shuffle unit bounds the
loop at about half the speed of a copy. Here a run is woven 64 words (256 bytes) at a time
by two rounds of two-source shuffles on whole vectors (an LLVM ``shufflevector``: with
AVX-512 one ``vpermt2b`` or ``vpermt2w`` each, 8 per 256 bytes instead of 32): the bytes of
``a`` and ``b`` are interleaved into 16-bit pairs, as are those of ``c`` and ``d``, then the
pairs into words. Halves take one round. A run that is not whole vectors ends with a vector
that overlaps the one before (the same words written twice); a run shorter than one vector
(64 words, or 32 for halves) is done element by element. Taking words apart runs the same
shuffles backwards.

Part ``j`` of word ``i`` is ``parts[p + j*step + i]``, the word ``words[w + i]``, for ``i``
in ``range(n)``:

>>> import numpy as np
>>> parts = np.arange(4 * 70, dtype=np.uint8)             # 4 rows of 70 bytes
>>> words = np.zeros(70, np.uint32)
>>> weave_bytes(words, 0, parts, 0, 70, 70)
>>> [hex(v) for v in words[[0, 1, 69]]]                    # row j in byte j of each word
['0xd28c4600', '0xd38d4701', '0x17d18b45']
>>> back = np.zeros(4 * 70, np.uint8)
>>> unweave_bytes(back, 0, 70, words, 0, 70); np.array_equal(back, parts)
True
>>> halves = np.arange(2 * 40, dtype=np.uint16)
>>> weave_halves(words, 0, halves, 0, 40, 40); [hex(words[i]) for i in (0, 17, 39)]
['0x280000', '0x390011', '0x4f0027']
>>> back16 = np.zeros(80, np.uint16)
>>> unweave_halves(back16, 0, 40, words, 0, 40); np.array_equal(back16, halves)
True

The shuffles are plain LLVM IR: on a machine without AVX-512 LLVM lowers them to the
shuffles it has, and the bytes are the same (little-endian words; the copy engine uses
the kernels only on little-endian machines).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from layout_algebra.packing.kernel_cache import check_sources

check_sources()  # numba's cached code of these kernels made from these sources (kernel_cache)

__all__ = [
    "split_byte_row",
    "split_bytes_aligned",
    "stream_byte_rows",
    "unweave_bytes",
    "unweave_halves",
    "weave_bytes",
    "weave_halves",
]

#: Bytes in one vector of the shuffles (the words woven per step: ``VECTOR`` of bytes, half of halves).
VECTOR = 64
#: Bytes in a cache line.
LINE = 64
U8, U16, U32 = np.uint8, np.uint16, np.uint32
S8, S16, S24 = U32(8), U32(16), U32(24)


def zipped(lanes: int, half: int) -> list[int]:
    """The shuffle mask that interleaves half ``half`` (0: the first) of two vectors of ``lanes``.

    >>> zipped(4, 0), zipped(4, 1)
    ([0, 4, 1, 5], [2, 6, 3, 7])
    """
    start = half * lanes // 2
    return [k for i in range(lanes // 2) for k in (start + i, lanes + start + i)]


def unzipped(lanes: int, odd: int) -> list[int]:
    """The shuffle mask that takes the even (``odd`` 0) or odd lanes of two vectors of ``lanes``.

    >>> unzipped(4, 0), unzipped(4, 1)
    ([0, 2, 4, 6], [1, 3, 5, 7])
    """
    return list(range(odd, 2 * lanes, 2))


def _mask(lanes: list[int]) -> ir.Constant:
    return ir.Constant(ir.VectorType(ir.IntType(32), len(lanes)), lanes)


def _vector_at(builder, array, at, vector):  # type: ignore[no-untyped-def]
    """A pointer to a ``vector`` at element ``at`` of ``array``'s data."""
    return builder.bitcast(builder.gep(array.data, [at]), vector.as_pointer())


def _offset(builder, at, k):  # type: ignore[no-untyped-def]
    return builder.add(at, ir.Constant(at.type, k))


@intrinsic
def _weave_bytes_64(typingctx, words, w_at, parts, p_at, step):  # type: ignore[no-untyped-def]
    """``words[w_at + i] = a[i] | b[i] << 8 | c[i] << 16 | d[i] << 24`` for 64 words, the rows
    ``parts[p_at + j*step :]`` (bytes)."""
    signature = types.void(words, types.intp, parts, types.intp, types.intp)

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        w = context.make_array(sig.args[0])(context, builder, args[0])
        p = context.make_array(sig.args[2])(context, builder, args[2])
        v8 = ir.VectorType(ir.IntType(8), VECTOR)
        v16 = ir.VectorType(ir.IntType(16), VECTOR // 2)
        rows, at = [], args[3]
        for _ in range(4):
            rows.append(builder.load(_vector_at(builder, p, at, v8), align=1))
            at = builder.add(at, args[4])
        a, b, c, d = rows
        ab = [builder.bitcast(builder.shuffle_vector(a, b, _mask(zipped(VECTOR, h))), v16) for h in (0, 1)]
        cd = [builder.bitcast(builder.shuffle_vector(c, d, _mask(zipped(VECTOR, h))), v16) for h in (0, 1)]
        for k, (h, q) in enumerate(((0, 0), (0, 1), (1, 0), (1, 1))):
            woven = builder.shuffle_vector(ab[h], cd[h], _mask(zipped(VECTOR // 2, q)))
            target = _vector_at(builder, w, _offset(builder, args[1], k * VECTOR // 4), v16)
            builder.store(woven, target, align=1)
        return context.get_dummy_value()

    return signature, codegen


def _unweave_bytes_codegen(streamed: bool):  # type: ignore[no-untyped-def]
    """The code of :func:`_unweave_bytes_64` (``streamed``: of :func:`_stream_unweave_bytes_64`)."""

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        p = context.make_array(sig.args[0])(context, builder, args[0])
        w = context.make_array(sig.args[3])(context, builder, args[3])
        v8 = ir.VectorType(ir.IntType(8), VECTOR)
        v16 = ir.VectorType(ir.IntType(16), VECTOR // 2)
        quads = [builder.load(_vector_at(builder, w, args[4 + k], v16), align=1) for k in range(4)]
        # 16-bit lanes: the even ones hold bytes 0-1 of a word (rows a, b), the odd ones c, d
        low = [
            builder.bitcast(
                builder.shuffle_vector(quads[2 * h], quads[2 * h + 1], _mask(unzipped(VECTOR // 2, 0))), v8
            )
            for h in (0, 1)
        ]
        high = [
            builder.bitcast(
                builder.shuffle_vector(quads[2 * h], quads[2 * h + 1], _mask(unzipped(VECTOR // 2, 1))), v8
            )
            for h in (0, 1)
        ]
        rows = [
            builder.shuffle_vector(pair[0], pair[1], _mask(unzipped(VECTOR, odd)))
            for pair in (low, high)
            for odd in (0, 1)
        ]
        at = args[1]
        for row in rows:
            store = builder.store(row, _vector_at(builder, p, at, v8), align=LINE if streamed else 1)
            if streamed:
                store.set_metadata(
                    "nontemporal", builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)])
                )
            at = builder.add(at, args[2])
        return context.get_dummy_value()

    return codegen


def _unweave_signature(parts, words):  # type: ignore[no-untyped-def]
    return types.void(parts, types.intp, types.intp, words, types.intp, types.intp, types.intp, types.intp)


@intrinsic
def _unweave_bytes_64(typingctx, parts, p_at, step, words, w0, w1, w2, w3):  # type: ignore[no-untyped-def]
    """The inverse of :func:`_weave_bytes_64`: 64 words into the 4 rows of bytes, the words in
    four runs of 16 from ``words[w0]``, ``words[w1]``, ``words[w2]`` and ``words[w3]``."""
    return _unweave_signature(parts, words), _unweave_bytes_codegen(False)


@intrinsic
def _stream_unweave_bytes_64(typingctx, parts, p_at, step, words, w0, w1, w2, w3):  # type: ignore[no-untyped-def]
    """:func:`_unweave_bytes_64` with each row's 64 bytes stored past the caches (a
    non-temporal store): ``parts[p_at + j*step]`` must start a cache line for every ``j``."""
    return _unweave_signature(parts, words), _unweave_bytes_codegen(True)


@intrinsic
def _weave_halves_32(typingctx, words, w_at, parts, p_at, step):  # type: ignore[no-untyped-def]
    """``words[w_at + i] = a[i] | b[i] << 16`` for 32 words, the rows ``parts[p_at + j*step :]``
    (16-bit halves)."""
    signature = types.void(words, types.intp, parts, types.intp, types.intp)

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        w = context.make_array(sig.args[0])(context, builder, args[0])
        p = context.make_array(sig.args[2])(context, builder, args[2])
        v16 = ir.VectorType(ir.IntType(16), VECTOR // 2)
        a = builder.load(_vector_at(builder, p, args[3], v16), align=1)
        b = builder.load(_vector_at(builder, p, builder.add(args[3], args[4]), v16), align=1)
        for h in (0, 1):
            woven = builder.shuffle_vector(a, b, _mask(zipped(VECTOR // 2, h)))
            builder.store(
                woven, _vector_at(builder, w, _offset(builder, args[1], h * VECTOR // 4), v16), align=1
            )
        return context.get_dummy_value()

    return signature, codegen


@intrinsic
def _unweave_halves_32(typingctx, parts, p_at, step, words, w_at):  # type: ignore[no-untyped-def]
    """The inverse of :func:`_weave_halves_32`: 32 words into the 2 rows of halves."""
    signature = types.void(parts, types.intp, types.intp, words, types.intp)

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        p = context.make_array(sig.args[0])(context, builder, args[0])
        w = context.make_array(sig.args[3])(context, builder, args[3])
        v16 = ir.VectorType(ir.IntType(16), VECTOR // 2)
        pairs = [
            builder.load(_vector_at(builder, w, _offset(builder, args[4], h * VECTOR // 4), v16), align=1)
            for h in (0, 1)
        ]
        at = args[1]
        for odd in (0, 1):
            row = builder.shuffle_vector(pairs[0], pairs[1], _mask(unzipped(VECTOR // 2, odd)))
            builder.store(row, _vector_at(builder, p, at, v16), align=1)
            at = builder.add(at, args[2])
        return context.get_dummy_value()

    return signature, codegen


@njit(nogil=True, cache=True)
def _weave_bytes_few(words, w, parts, p, step, n):  # type: ignore[no-untyped-def]
    """:func:`weave_bytes` of fewer than ``VECTOR`` words, element by element."""
    for k in range(n):
        q = p + k
        words[w + k] = (
            U32(parts[q])
            | (U32(parts[q + step]) << S8)
            | (U32(parts[q + 2 * step]) << S16)
            | (U32(parts[q + 3 * step]) << S24)
        )


@njit(nogil=True, cache=True, inline="always")
def weave_bytes(words, w, parts, p, step, n):  # type: ignore[no-untyped-def]
    """``words[w + i] = sum_j parts[p + j*step + i] << 8j`` for ``i < n`` (4 byte rows).

    Whole vectors, the last one ending at ``n`` (it overlaps the one before when ``VECTOR``
    does not divide ``n``, writing the same words again); fewer than ``VECTOR`` words one by
    one, in a function of their own. Inlined into its callers (numba IR): a call per run of
    128 words and an element loop after the vectors, vectorized by LLVM with gathers and
    inserts, cost a third of the time (Zen 4 VM, the ``s8`` ``(32,128)(4,1)`` loop nest, 1-4
    MB in the caches: 26 against 36 GB/s)."""
    if n < VECTOR:
        _weave_bytes_few(words, w, parts, p, step, n)
        return
    for i in range(0, n - VECTOR + 1, VECTOR):
        _weave_bytes_64(words, w + i, parts, p + i, step)
    if n % VECTOR:
        _weave_bytes_64(words, w + n - VECTOR, parts, p + n - VECTOR, step)


@njit(nogil=True, cache=True)
def _unweave_bytes_few(parts, p, step, words, w, n):  # type: ignore[no-untyped-def]
    """:func:`unweave_bytes` of fewer than ``VECTOR`` words, element by element."""
    for k in range(n):
        q, v = p + k, words[w + k]
        parts[q] = U8(v)
        parts[q + step] = U8(v >> S8)
        parts[q + 2 * step] = U8(v >> S16)
        parts[q + 3 * step] = U8(v >> S24)


@njit(nogil=True, cache=True, inline="always")
def unweave_bytes(parts, p, step, words, w, n):  # type: ignore[no-untyped-def]
    """The inverse of :func:`weave_bytes`: ``parts[p + j*step + i] = words[w + i] >> 8j`` (a
    byte); whole vectors as there, inlined as there."""
    if n < VECTOR:
        _unweave_bytes_few(parts, p, step, words, w, n)
        return
    for i in range(0, n - VECTOR + 1, VECTOR):
        _unweave_bytes_64(parts, p + i, step, words, w + i, w + i + 16, w + i + 32, w + i + 48)
    if n % VECTOR:
        t = w + n - VECTOR
        _unweave_bytes_64(parts, p + n - VECTOR, step, words, t, t + 16, t + 32, t + 48)


@njit(nogil=True, cache=True)
def _weave_halves_few(words, w, parts, p, step, n):  # type: ignore[no-untyped-def]
    """:func:`weave_halves` of fewer than ``VECTOR // 2`` words, element by element."""
    for k in range(n):
        words[w + k] = U32(parts[p + k]) | (U32(parts[p + step + k]) << S16)


@njit(nogil=True, cache=True, inline="always")
def weave_halves(words, w, parts, p, step, n):  # type: ignore[no-untyped-def]
    """``words[w + i] = parts[p + i] | parts[p + step + i] << 16`` for ``i < n`` (16-bit
    halves); whole vectors of ``VECTOR // 2`` words as in :func:`weave_bytes`."""
    half = VECTOR // 2
    if n < half:
        _weave_halves_few(words, w, parts, p, step, n)
        return
    for i in range(0, n - half + 1, half):
        _weave_halves_32(words, w + i, parts, p + i, step)
    if n % half:
        _weave_halves_32(words, w + n - half, parts, p + n - half, step)


@njit(nogil=True, cache=True)
def _unweave_halves_few(parts, p, step, words, w, n):  # type: ignore[no-untyped-def]
    """:func:`unweave_halves` of fewer than ``VECTOR // 2`` words, element by element."""
    for k in range(n):
        v = words[w + k]
        parts[p + k] = U16(v)
        parts[p + step + k] = U16(v >> S16)


@njit(nogil=True, cache=True, inline="always")
def unweave_halves(parts, p, step, words, w, n):  # type: ignore[no-untyped-def]
    """The inverse of :func:`weave_halves`."""
    half = VECTOR // 2
    if n < half:
        _unweave_halves_few(parts, p, step, words, w, n)
        return
    for i in range(0, n - half + 1, half):
        _unweave_halves_32(parts, p + i, step, words, w + i)
    if n % half:
        _unweave_halves_32(parts, p + n - half, step, words, w + n - half)


@njit(nogil=True, cache=True)
def _lead(array, at, n):  # type: ignore[no-untyped-def]
    """How many elements from ``array[at]`` on come before the next cache line (at most ``n``;
    ``n`` where no whole element ends there)."""
    size = array.itemsize
    gap = (-(array.ctypes.data + at * size)) % LINE
    return min(n, gap // size) if gap % size == 0 else n


@njit(nogil=True, cache=True)
def _unweave_byte_runs(parts, p, step, words, w, w2, n2, n):  # type: ignore[no-untyped-def]
    """:func:`split_byte_row` run by run. A function of its own: inlined into
    :func:`split_byte_row`, the runs' loop slowed its aligned one (``pred`` ``(8,128)(4,1)``
    unpacked, 1-4 MB: 0.41-0.55 of the copy against 0.50-0.64)."""
    for i2 in range(n2):
        unweave_bytes(parts, p + i2 * n, step, words, w + i2 * w2, n)


@njit(nogil=True, cache=True)
def split_byte_row(parts, p, step, words, w, w2, n2, n):  # type: ignore[no-untyped-def]
    """:func:`unweave_bytes` of a row of ``n2`` runs: the 4 rows ``parts[p + j*step :][: n2*n]``
    from the runs ``words[w + i2*w2 :][:n]``, with vector stores that start cache lines.

    A NumPy array starts 16 bytes into a cache line: run by run, every 64-byte store of a
    row would span two lines (unpacking 1 MB of s8 words: 76 against 61 us aligned). Along
    the whole row, the stores go from the first line start on, each vector's words loaded
    in four runs of 16 from the runs they are in; the row's first and last 64 elements are
    stored once more unaligned (the same bytes). Rows that cannot (the 4 rows not equally
    aligned, runs not whole vectors, a start not on 16 elements) go run by run."""
    m = n2 * n
    lead = _lead(parts, p, m)
    if step % LINE or n % 16 or lead % 16 or n < VECTOR or m < 2 * VECTOR:
        _unweave_byte_runs(parts, p, step, words, w, w2, n2, n)
        return
    if lead:  # the head: the first 64 elements of the first run
        _unweave_bytes_64(parts, p, step, words, w, w + 16, w + 32, w + 48)
    # element q of the row is element off of run i2 (no division: a quarter of the vector
    # past the run's end is in the next run, jump words on)
    q, i2, off, jump = lead, 0, lead, w2 - n
    while q + VECTOR <= m:
        a = w + i2 * w2 + off
        o1, o2, o3 = off + 16 >= n, off + 32 >= n, off + 48 >= n
        _unweave_bytes_64(
            parts, p + q, step, words, a, a + 16 + o1 * jump, a + 32 + o2 * jump, a + 48 + o3 * jump
        )
        q += VECTOR
        off += VECTOR
        if off >= n:
            off -= n
            i2 += 1
    if q < m:  # the tail: the last 64 elements of the last run
        t = w + (n2 - 1) * w2 + n - VECTOR
        _unweave_bytes_64(parts, p + m - VECTOR, step, words, t, t + 16, t + 32, t + 48)


@njit(nogil=True, cache=True)
def stream_byte_rows(parts, p, p1, n1, step, words, w, w1, w2, n2, n):  # type: ignore[no-untyped-def]
    """:func:`split_byte_row` of ``n1`` groups of 4 rows at once, the words read in their order
    and every whole line stored past the caches; False, having written nothing, where it cannot.

    Group ``i1``'s rows are ``parts[p + i1*p1 + j*step :][: n2*n]``, from the runs
    ``words[w + i1*w1 + i2*w2 :][:n]``: an ``s8`` ``(32,128)(4,1)`` tile row is 8 groups,
    ``n2`` tiles of ``n = 128`` words. For each 64 bytes along the rows every group is split
    before the next 64, so that the words are read about in the order of memory (one tile
    after the other; group by group, each tile row was read 8 times over, 512 bytes of each
    4 KB tile at a time, where the hardware's prefetcher starts cold at every page), and
    each row's 64 bytes are one whole line, stored non-temporally (a plain store reads the
    line from memory first). A row's first and last 64 bytes are stored once more plainly
    (the same bytes; the rows' partial lines). ``s8[16384,16384]`` unpacked on one thread,
    kernel alone, against ``memcpy``: 1.09 against 0.63 group by group (rows 16 bytes into a
    line, as NumPy's arrays start), 1.7-1.8 against 0.7 with rows that start lines.

    It needs every row to start at the same place within a line (``step`` and ``p1``
    multiples of 64 bytes), bytes (``parts`` of one byte), 16-word pieces that each lie within
    a run (``n`` and the first line's offset multiples of 16), runs of a vector or more (a
    vector then spans at most two) and rows of two vectors or more.
    The caller fences the stores (:func:`~layout_algebra.packing.line_stores.store_fence`)."""
    m = n2 * n
    lead = _lead(parts, p, m)
    if parts.itemsize != 1 or step % LINE or p1 % LINE or n % 16 or n < VECTOR or lead % 16 or m < 2 * VECTOR:
        return False
    for i1 in range(n1):  # the heads: the first 64 elements of each group's first run
        if lead:
            a = w + i1 * w1
            _unweave_bytes_64(parts, p + i1 * p1, step, words, a, a + 16, a + 32, a + 48)
    q, i2, off, jump = lead, 0, lead, w2 - n
    while q + VECTOR <= m:
        a = w + i2 * w2 + off
        b1 = a + 16 + (off + 16 >= n) * jump
        b2 = a + 32 + (off + 32 >= n) * jump
        b3 = a + 48 + (off + 48 >= n) * jump
        for i1 in range(n1):
            g = i1 * w1
            _stream_unweave_bytes_64(parts, p + i1 * p1 + q, step, words, a + g, b1 + g, b2 + g, b3 + g)
        q += VECTOR
        off += VECTOR
        if off >= n:
            off -= n
            i2 += 1
    if q < m:  # the tails: the last 64 elements of each group's last run
        for i1 in range(n1):
            t = w + i1 * w1 + (n2 - 1) * w2 + n - VECTOR
            _unweave_bytes_64(parts, p + i1 * p1 + m - VECTOR, step, words, t, t + 16, t + 32, t + 48)
    return True


@njit(nogil=True, cache=True)
def split_bytes_aligned(parts, p, step, words, w, n):  # type: ignore[no-untyped-def]
    """:func:`unweave_bytes` (one run of ``n`` words) with vector stores that start cache lines,
    where the 4 rows are equally aligned (``step`` a multiple of 64) and longer than two
    vectors, as :func:`split_byte_row` does: the rows' first and last 64 elements are stored
    once more unaligned (the same bytes). For the staged kernels' long runs (each stage row of
    a tile row: unpacking 16 to 64 MB of ``s8`` one-threaded, 5-10% faster)."""
    lead = _lead(parts, p, n)
    if step % LINE or n < lead + 2 * VECTOR:
        unweave_bytes(parts, p, step, words, w, n)
        return
    if lead:
        _unweave_bytes_64(parts, p, step, words, w, w + 16, w + 32, w + 48)
    q = lead
    while q + VECTOR <= n:
        _unweave_bytes_64(parts, p + q, step, words, w + q, w + q + 16, w + q + 32, w + q + 48)
        q += VECTOR
    if q < n:
        t = w + n - VECTOR
        _unweave_bytes_64(parts, p + n - VECTOR, step, words, t, t + 16, t + 32, t + 48)
