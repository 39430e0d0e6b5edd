"""Slots of any size: elements whose slot is neither their whole bytes nor their bit width.

``s4`` under ``E(5)``, ``pred`` under ``E(2)``, ``f32`` under ``E(40)``: every ``L`` slots of
``E`` bits end on a word, and slot ``r`` of every group shifts by the same amount, so each
chunk's bit stream is built from ``L`` whole-array shifts (:func:`_slots_to_stream`) and taken
apart the same way (:func:`_stream_to_slots`); padding slots keep the padding under a mask.

>>> [bin(b) for b in _slots_to_stream(np.array([0b10110, 0b00001, 0b11111]), 5, 8)]
['0b110110', '0b1111100']
>>> _stream_to_slots(np.array([0b110110, 0b1111100], np.uint8), 3, 5, 5).tolist()
[22, 1, 31]
"""

from __future__ import annotations

import math

import numpy as np

from layout_algebra.packing import copy_engine as engine
from layout_algebra.packing.formats import Format
from layout_algebra.packing.stage_walk import Plan, chunk_list, overlap
from layout_algebra.packing.threads import run_parallel

__all__ = ["pack_odd_slots", "slot_word", "unpack_odd_slots"]


_ODD_CHUNK_ELEMENTS = 1 << 18
_ODD_TRANSPOSING_CHUNK_ELEMENTS = 1 << 22


def _odd_chunk_elements(plan: Plan, bits: int) -> int:
    """How many elements a chunk of odd slots holds: more if a block's copy into the chunk
    (row-major codes of the box) transposes, so that it goes block by block
    (:func:`copy_engine.blocked_copy`, past ``BLOCK_BYTES``) instead of element by element."""
    for b in plan.blocks:
        v = b.view
        row_major = tuple(v.itemsize * math.prod(v.shape[k + 1 :]) for k in range(v.ndim))
        codes = np.lib.stride_tricks.as_strided(np.empty(1, v.dtype), v.shape, row_major)  # strides only
        if engine.is_transposing(codes, v):
            return _ODD_TRANSPOSING_CHUNK_ELEMENTS * max(bits, 8) // 8
    return _ODD_CHUNK_ELEMENTS * max(bits, 8) // 8


def _odd_padding(size: int, bits: int, fill: int) -> np.ndarray:
    """``size`` bytes of nothing but padding: in slots under 8 bits, every slot (and the
    bits after the last) holds ``fill``; otherwise every byte is ``fill``.

    >>> [bin(b) for b in _odd_padding(3, 5, 0b10110)]     # slots 10110 10110 10110 10110 1...
    ['0b11010110', '0b1011010', '0b1101011']
    """
    if bits >= 8:
        return np.full(size, fill, np.uint8)
    slot = ((fill >> np.arange(bits)) & 1).astype(np.uint8)
    period = np.packbits(np.tile(slot, 8), bitorder="little")  # 8 slots: E whole bytes
    return np.tile(period, -(-size // period.size))[:size]  # np.resize is 40x slower here


def _slot_residues(bits: int, word: int = 64) -> tuple[int, int]:
    """``(L, W)``: every ``L`` slots of ``bits`` end on a word of ``word`` bits, after ``W``
    words; slot ``r`` of such a group starts at bit ``r * bits`` of the group, the same for
    every group.

    >>> _slot_residues(5, 8), _slot_residues(24, 16), _slot_residues(40, 32)
    ((8, 5), (2, 3), (4, 5))
    """
    group = word // math.gcd(bits, word)
    return group, group * bits // word


def slot_word(keep: int) -> int:
    """The narrowest word (8, 16, 32 or 64 bits) that holds ``keep`` bits: each slot's value
    is shifted within such words, and the narrower the word, the fewer bytes move."""
    return next(w for w in (8, 16, 32, 64) if keep <= w)


def _slots_to_stream(values: np.ndarray, bits: int, word: int) -> np.ndarray:
    """The bit stream (bytes, lowest bit first) of slots of ``bits`` holding ``values``
    (each below ``2**word``; slot bits past the value are zero), built one slot residue at
    a time: the slots at the same place in their group shift by the same amount, so each
    residue is a few whole-array shifts on ``word``-bit words, with no array of single bits.

    >>> [bin(b) for b in _slots_to_stream(np.array([0b10110, 0b00001, 0b11111]), 5, 8)]
    ['0b110110', '0b1111100']
    """
    count = values.size
    group, words = _slot_residues(bits, word)
    groups = -(-count // group)
    dtype = np.dtype(f"<u{word // 8}")
    flat = np.zeros(groups * group, dtype)
    flat[:count] = values
    v = np.ascontiguousarray(flat.reshape(groups, group).T)  # residue r of every group: one row
    out = np.zeros((words, groups), dtype)
    part = np.empty(groups, dtype)
    for r in range(group):
        w, shift = divmod(r * bits, word)
        np.left_shift(v[r], dtype.type(shift), out=part)
        out[w] |= part
        if shift and w + 1 < words:  # the slot's high bits in the next word
            np.right_shift(v[r], dtype.type(word - shift), out=part)
            out[w + 1] |= part
    return np.ascontiguousarray(out.T).view(np.uint8).reshape(-1)[: -(-count * bits // 8)]


def _stream_to_slots(stream: np.ndarray, count: int, bits: int, keep: int) -> np.ndarray:
    """The inverse of :func:`_slots_to_stream`: the low ``keep`` (<= 64) bits of each of
    ``count`` slots of ``bits`` in the bit stream ``stream`` (bytes), in words of
    :func:`slot_word` bits.

    >>> _stream_to_slots(np.array([0b110110, 0b1111100], np.uint8), 3, 5, 5).tolist()
    [22, 1, 31]
    """
    word = slot_word(keep)
    group, words = _slot_residues(bits, word)
    groups = -(-count // group)
    dtype = np.dtype(f"<u{word // 8}")
    raw = np.zeros(groups * words * (word // 8), np.uint8)
    raw[: stream.size] = stream
    w = np.ascontiguousarray(raw.view(dtype).reshape(groups, words).T)  # word k of every group
    v = np.empty((group, groups), dtype)
    part = np.empty(groups, dtype)
    mask = dtype.type((1 << keep) - 1)
    for r in range(group):
        k, shift = divmod(r * bits, word)
        np.right_shift(w[k], dtype.type(shift), out=v[r])
        if shift + keep > word:  # the slot's high bits in the next word
            np.left_shift(w[k + 1], dtype.type(word - shift), out=part)
            v[r] |= part
        v[r] &= mask
    return v.T.reshape(-1)[:count]


def _slot_masks(covered: np.ndarray, bits: int) -> np.ndarray:
    """The bit stream (bytes) with every bit of the slots where ``covered`` is True set."""
    count = covered.size
    group, words = _slot_residues(bits)
    groups = -(-count // group)
    flat = np.zeros(groups * group, bool)
    flat[:count] = covered
    c = flat.reshape(groups, group)
    out = np.zeros((groups, words), np.uint64)
    full = (1 << 64) - 1
    for r in range(group):
        lo, hi = r * bits, (r + 1) * bits
        for w in range(lo // 64, (hi - 1) // 64 + 1):
            a, b = max(lo, 64 * w) - 64 * w, min(hi, 64 * w + 64) - 64 * w
            word_mask = np.uint64((full >> (64 - (b - a))) << a)
            out[:, w] |= np.where(c[:, r], word_mask, np.uint64(0))
    return out.astype("<u8").view(np.uint8).reshape(-1)[: -(-count * bits // 8)]


def _write_byte_run(out: np.ndarray, first: int, data: np.ndarray, nbits: int) -> None:
    """Write the first ``nbits`` bits of ``data`` (bytes) into ``out`` from byte ``first``,
    keeping the bits of ``out`` after the run's end in its last byte."""
    whole, rest = divmod(nbits, 8)
    out[first : first + whole] = data[:whole]
    if rest:
        mask = (1 << rest) - 1
        out[first + whole] = (int(out[first + whole]) & ~mask & 0xFF) | (int(data[whole]) & mask)


def pack_odd_slots(
    plan: Plan, out: np.ndarray, fmt: Format, fill: int, threads: int, *, padded: bool
) -> None:
    """Slots of any size ``E`` (``s4`` under ``E(5)``): each element's stored bits from the
    lowest, cut to the slot or zero above, shifted into the bit stream chunk by chunk
    (:func:`_slots_to_stream`; the chunks start on a byte; only the last one ends inside one,
    before the tail). A padded chunk keeps the padding of the slots no element covers."""
    bits = fmt.bits
    keep = min(bits, 8 * fmt.dtype.itemsize)
    word = slot_word(keep)
    keep_mask = (1 << keep) - 1
    out[...] = _odd_padding(out.size, bits, fill)  # all padding first (the tail keeps it)

    def move(chunk_at: tuple[tuple[int, ...], int, int, int]) -> None:
        prefix, lo, hi, first = chunk_at
        shape = (hi - lo, *plan.box[len(prefix) + 1 :])
        count = math.prod(shape)
        codes = np.zeros(shape, fmt.bits_dtype)
        covered = np.zeros(shape, bool) if padded else None
        for b in plan.blocks:
            where = overlap(b, prefix, lo, hi)
            if where is not None:
                engine.copy(codes[where[1]], b.view[where[0]])
                if covered is not None:
                    covered[where[1]] = True
        values = codes.reshape(count) & codes.dtype.type(keep_mask)  # the element's bits in its slot
        stream = _slots_to_stream(values, bits, word)
        start = first * bits // 8
        if covered is not None and not covered.all():  # padding slots keep the padding written above
            mask = _slot_masks(covered.reshape(count), bits)
            stream = (out[start : start + stream.size] & ~mask) | stream
        _write_byte_run(out, start, stream, count * bits)

    run_parallel(move, chunk_list(plan.box, bits, _odd_chunk_elements(plan, bits)), threads)


def unpack_odd_slots(plan: Plan, buf: np.ndarray, fmt: Format, threads: int) -> None:
    """The inverse of :func:`pack_odd_slots`: each chunk's bits, slot by slot, into elements."""
    bits = fmt.bits
    keep = min(bits, 8 * fmt.dtype.itemsize)

    def move(chunk_at: tuple[tuple[int, ...], int, int, int]) -> None:
        prefix, lo, hi, first = chunk_at
        shape = (hi - lo, *plan.box[len(prefix) + 1 :])
        count = math.prod(shape)
        start = first * bits // 8
        values = _stream_to_slots(buf[start : start - (-count * bits // 8)], count, bits, keep)
        codes = values.astype(fmt.bits_dtype).reshape(shape)  # slot bits past the element's are not read
        for b in plan.blocks:
            where = overlap(b, prefix, lo, hi)
            if where is not None:
                engine.copy(b.view[where[0]], codes[where[1]])

    run_parallel(move, chunk_list(plan.box, bits, _odd_chunk_elements(plan, bits)), threads)
