"""Sub-byte elements whose minor dims make words: the nibbles of ``s4`` under ``(8,128)(8,1)E(4)``.

The ``(8,1)`` tile puts 8 rows of a column into one 32-bit word. :func:`pack_words` builds
each chunk's words, with a compiled kernel per block when ``numba`` is there, else position
by position of a word on 64-bit lanes (:func:`~layout_algebra.packing.lanes.pack_lanes`);
:func:`unpack_words` takes them apart. :func:`word_dims` says which minor dims make words:

>>> word_dims((4, 1, 128, 8, 1), 4)      # the (8, 1) at the end: 8 nibbles, 4 bytes
2
>>> word_dims((4, 128), 4)
0
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from layout_algebra.packing import copy_engine as engine
from layout_algebra.packing import lanes, stage_walk
from layout_algebra.packing.replay import Program, Step, kernel_step, place
from layout_algebra.packing.stage_walk import Plan, chunk_list, overlap, row_major
from layout_algebra.packing.threads import run_parallel

__all__ = ["pack_words", "unpack_words", "word_dims", "word_program"]


def word_dims(box: tuple[int, ...], bits: int) -> int:
    """How many minor dims of the box hold a few elements making whole bytes (0: none do).

    ``s4`` in ``(8,128)(8,1)``: the box ends ``(..., 128, 8, 1)``, and the last two dims
    hold the 8 nibbles of one 32-bit word.
    """
    n, count, dims = len(box), 1, 0
    if n >= 2 and box[-1] < engine.SHORT:
        while dims < n - 1 and count * box[n - 1 - dims] <= engine.MAX_PEEL:
            count *= box[n - 1 - dims]
            dims += 1
    return dims if dims and count > 1 and count * bits % 8 == 0 else 0


def _word_copies(
    plan: Plan, prefix: tuple[int, ...], lo: int, hi: int, dims: int
) -> Iterator[tuple[np.ndarray, tuple[slice, ...], int]]:
    """For each block in a chunk and each element position ``j`` of a word it covers:
    ``(view of the block, index into the codes of word position j, position j)``."""
    word = plan.box[-dims:]
    for b in plan.blocks:
        where = overlap(b, prefix, lo, hi)
        if where is None:
            continue
        src, dst = where
        view = b.view[src]
        for w in itertools.product(*(range(sl.start, sl.stop) for sl in dst[-dims:])):
            local = tuple(k - sl.start for k, sl in zip(w, dst[-dims:], strict=True))
            yield view[(Ellipsis, *local)], dst[:-dims], row_major(w, word)


def _compiled_word_pairs(
    plan: Plan,
    prefix: tuple[int, ...],
    lo: int,
    hi: int,
    dims: int,
    bits: int,
    region: np.ndarray,
    lead: tuple[int, ...],
    min_bytes: int | None = None,
) -> list[tuple[np.ndarray, np.ndarray, slice]] | None:
    """For the compiled word kernels: ``(words, parts, positions)`` for each block in a chunk:
    the block's 32-bit words in ``region`` (the chunk's bytes), the block's view with the
    positions of a word last, and which positions of its words the block holds (all but at
    a ragged edge). None (use NumPy) if there is no kernel or a word is not 32 bits."""
    word = plan.box[-dims:]
    if (
        math.prod(word) * bits != 32
        or sum(n > 1 for n in word) != 1
        or region.nbytes < (engine.KERNEL_MIN_BYTES if min_bytes is None else min_bytes)
    ):
        return None
    if engine.kernels() is None:
        return None
    if region.size % 4 or region.ctypes.data % 4:
        return None
    words = region.view("<u4").reshape(lead)
    inner = word.index(max(word))  # the one dim of the word with more than one position
    pairs = []
    for b in plan.blocks:
        where = overlap(b, prefix, lo, hi)
        if where is None:
            continue
        src, dst = where
        at: tuple[Any, ...] = (Ellipsis, *(slice(None) if k == inner else 0 for k in range(dims)))
        pairs.append((words[dst[:-dims]], b.view[src][at], dst[len(dst) - dims + inner]))
    return pairs


def _pack_word_block(
    words: np.ndarray, parts: np.ndarray, held: slice, width: int, bits: int, fill: int, whole_words: int
) -> None:
    """Build a block's words with the kernel; at a ragged edge (the block holds only some
    positions of its words) through a copy whose missing positions hold ``fill``. ``whole_words``:
    the bytes of words of the whole relayout (whether to stream them:
    :func:`~layout_algebra.packing.copy_engine.streams_nibbles`)."""
    if (held.start, held.stop) != (0, width):
        whole = np.full((*parts.shape[:-1], width), fill, np.uint8)
        whole[..., held] = parts
        parts = whole
    if not engine.interleave(words, parts, bits, whole_words):  # e.g. a reversed array: NumPy, part by part
        mask = (1 << bits) - 1
        np.copyto(words, parts[..., -1] & mask)
        for j in range(width - 2, -1, -1):
            np.left_shift(words, bits, out=words)
            np.bitwise_or(words, parts[..., j] & mask, out=words)


def _unpack_word_block(
    words: np.ndarray, parts: np.ndarray, held: slice, width: int, bits: int, whole_words: int
) -> None:
    """The inverse of :func:`_pack_word_block`: only the positions the block holds are written."""
    target = (
        parts if (held.start, held.stop) == (0, width) else np.empty((*parts.shape[:-1], width), np.uint8)
    )
    if not engine.deinterleave(
        target, words, bits, whole_words
    ):  # e.g. a reversed array: NumPy, part by part
        for j in range(width):
            np.copyto(target[..., j], (words >> (bits * j)) & ((1 << bits) - 1), casting="unsafe")
    if target is not parts:
        np.copyto(parts, target[..., held])


def _word_chunk_bytes(plan: Plan, dims: int, bits: int) -> int:
    """Chunk length (in elements) for sub-byte words: whole words, and longer when compiled
    kernels will build them (numba is imported only for an array that large)."""
    width = math.prod(plan.box[-dims:])
    words_bytes = math.prod(plan.box) * bits // 8
    kernel_shape = width * bits == 32 and sum(n > 1 for n in plan.box[-dims:]) == 1
    if kernel_shape and words_bytes >= engine.KERNEL_MIN_BYTES and engine.kernels() is not None:
        return max(stage_walk.CHUNK_BYTES, stage_walk.WORD_KERNEL_CHUNK_ELEMENTS, width)
    return max(stage_walk.CHUNK_BYTES, width)


def pack_words(plan: Plan, out: np.ndarray, bits: int, fill: int | None, threads: int) -> None:
    """Sub-byte elements whose minor dims make words: gather codes word position by word
    position (contiguous copies), build each byte of the words from its positions in
    contiguous arrays (:func:`~layout_algebra.packing.lanes.pack_lanes`), and copy it into its
    place in the words. ``fill`` is None when the blocks cover every slot."""
    dims = word_dims(plan.box, bits)
    per_byte, width = 8 // bits, math.prod(plan.box[-dims:])
    whole = math.prod(plan.box) * bits // 8  # bytes of words in all
    # chunks hold whole words (at least ``width`` elements: the chunk axis is outside the word)

    def move(chunk_at: tuple[tuple[int, ...], int, int, int]) -> None:
        prefix, lo, hi, first = chunk_at
        lead = (hi - lo, *plan.box[len(prefix) + 1 : -dims])
        count = math.prod(lead)
        start = first * bits // 8
        region = out[start : start + count * width // per_byte]
        pairs = _compiled_word_pairs(plan, prefix, lo, hi, dims, bits, region, lead)
        if pairs is not None:  # one compiled pass per block
            if fill is not None:
                region[...] = sum(fill << (bits * i) for i in range(per_byte))
            for words, parts, held in pairs:
                _pack_word_block(words, parts, held, width, bits, fill or 0, whole)
            return
        codes = np.empty((width, -(-count // 8) * 8), np.uint8)  # rows of whole 64-bit lanes
        if fill is not None:
            codes.fill(fill)
        rows = codes[:, :count].reshape(width, *lead)
        for view, dst, j in _word_copies(plan, prefix, lo, hi, dims):
            np.copyto(rows[j][dst], view)
        words = region.reshape(*lead, width // per_byte)
        byte = np.empty(codes.shape[1], np.uint8)
        for q in range(width // per_byte):
            lanes.pack_lanes(codes[q * per_byte : (q + 1) * per_byte], bits, byte)
            np.copyto(words[..., q], byte[:count].reshape(lead))

    run_parallel(move, chunk_list(plan.box, bits, _word_chunk_bytes(plan, dims, bits)), threads)


def unpack_words(plan: Plan, buf: np.ndarray, bits: int, threads: int) -> None:
    """The inverse of :func:`pack_words`: each byte of the words is copied out into a
    contiguous array and split into its positions' codes
    (:func:`~layout_algebra.packing.lanes.unpack_lanes`)."""
    dims = word_dims(plan.box, bits)
    per_byte, width = 8 // bits, math.prod(plan.box[-dims:])
    whole = math.prod(plan.box) * bits // 8  # bytes of words in all

    def move(chunk_at: tuple[tuple[int, ...], int, int, int]) -> None:
        prefix, lo, hi, first = chunk_at
        lead = (hi - lo, *plan.box[len(prefix) + 1 : -dims])
        count = math.prod(lead)
        start = first * bits // 8
        region = buf[start : start + count * width // per_byte]
        pairs = _compiled_word_pairs(plan, prefix, lo, hi, dims, bits, region, lead)
        if pairs is not None:  # one compiled pass per block
            for words, parts, held in pairs:
                _unpack_word_block(words, parts, held, width, bits, whole)
            return
        codes = np.empty((width, -(-count // 8) * 8), np.uint8)
        words = region.reshape(*lead, width // per_byte)
        byte = np.empty(codes.shape[1], np.uint8)
        for q in range(width // per_byte):
            np.copyto(byte[:count].reshape(lead), words[..., q])
            lanes.unpack_lanes(byte, bits, codes[q * per_byte : (q + 1) * per_byte])
        rows = codes[:, :count].reshape(width, *lead)
        for view, dst, j in _word_copies(plan, prefix, lo, hi, dims):
            np.copyto(view, rows[j][dst])

    run_parallel(move, chunk_list(plan.box, bits, _word_chunk_bytes(plan, dims, bits)), threads)


def word_program(
    plan: Plan, buffer: np.ndarray, logical: np.ndarray, bits: int, packing: bool, padded: bool
) -> Program | None:
    """The one-thread path of :func:`pack_words` (``packing``) or :func:`unpack_words` as a
    replayable :class:`~layout_algebra.packing.replay.Program`: one word-kernel call per block
    and chunk (any size, numba loaded), the regions with padding filled first; None where a
    block holds only some positions of its words (a ragged edge) or no kernel takes a block."""
    if not engine.kernels_loaded():
        return None
    dims = word_dims(plan.box, bits)
    if not dims:
        return None
    per_byte, width = 8 // bits, math.prod(plan.box[-dims:])
    whole = math.prod(plan.box) * bits // 8  # bytes of words in all
    bases = (buffer, logical.reshape(-1).view(np.uint8))
    steps: list[Step] = []
    for prefix, lo, hi, first in chunk_list(plan.box, bits, _word_chunk_bytes(plan, dims, bits)):
        lead = (hi - lo, *plan.box[len(prefix) + 1 : -dims])
        start = first * bits // 8
        region = buffer[start : start + math.prod(lead) * width // per_byte]
        pairs = _compiled_word_pairs(plan, prefix, lo, hi, dims, bits, region, lead, min_bytes=0)
        if pairs is None:
            return None
        if padded and packing:
            where = place(region, bases)
            if where is None:
                return None
            steps.append(Step("fill", places=(where,)))
        for words, parts, held in pairs:
            if (held.start, held.stop) != (0, width):
                return None
            call = engine.word_call(words, parts, bits, packing, 0, whole_words=whole)
            step = None if call is None else kernel_step(call, bases)
            if step is None:
                return None
            steps.append(step)
    return Program(tuple(steps), np.dtype(np.uint8), plan.box, logical.shape)
