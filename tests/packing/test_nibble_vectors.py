"""The explicit 64-byte vector blocks of nibbles (``nibble_vectors``) and both paths of the loops that use them.

Each path is checked byte for byte against the definition (``sum_j (part_j & 0xF) << 4j``;
nibbles zero-extended on the way back) and against the other: the blocks the kernels use
where the host has AVX-512 VBMI, and the plain loops they keep for other hosts (called
directly here, so that they are tested on this one too). Sizes are odd and not multiples of
the 64-word block, at odd offsets, with the bytes around the target checked untouched.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba", reason="the kernels need numba (the test extra installs it)")
from numba import njit

from layout_algebra.packing import copy_kernels as ck
from layout_algebra.packing import nibble_vectors as nv

FILL = 0xA5


@njit
def _pack_blocks(words8, at, parts, pb, step, blocks, nontemporal):  # type: ignore[no-untyped-def]
    for b in range(blocks):
        if nontemporal:
            nv.pack_block_nt(words8, at + 256 * b, parts, pb + 64 * b, step)
        else:
            nv.pack_block(words8, at + 256 * b, parts, pb + 64 * b, step)


@njit
def _unpack_blocks(parts, pb, step, words8, at, blocks, nontemporal):  # type: ignore[no-untyped-def]
    for b in range(blocks):
        if nontemporal:
            nv.unpack_block_nt(parts, pb + 64 * b, step, words8, at + 256 * b)
        else:
            nv.unpack_block(parts, pb + 64 * b, step, words8, at + 256 * b)


def _words_of(parts: np.ndarray, pb: int, step: int, lo: int, hi: int) -> np.ndarray:
    """The words ``lo .. hi-1`` of the 8 rows at ``pb`` (the definition), as bytes."""
    rows = [parts[pb + j * step + lo : pb + j * step + hi].astype(np.uint32) & 0xF for j in range(8)]
    return sum(rows[j] << np.uint32(4 * j) for j in range(8)).astype("<u4").view(np.uint8)


def _rows(n: int, step: int, shift: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random parts (every byte value: the high nibble must be dropped) for 8 rows of ``n``
    at ``step``, starting ``shift`` bytes into their storage (returned second)."""
    storage = np.random.default_rng(seed).integers(0, 256, 8 * step + shift + 64, dtype=np.uint8)
    return storage[shift:], storage


def test_the_host_check_is_a_bool() -> None:
    assert isinstance(nv.HAS_BYTE_PERMUTE, bool)


@pytest.mark.parametrize("nontemporal", [False, True])
@pytest.mark.parametrize(("blocks", "step", "shift"), [(1, 64, 0), (2, 131, 7), (3, 192, 0), (5, 320, 13)])
def test_blocks_match_the_definition(blocks, step, shift, nontemporal) -> None:
    n = 64 * blocks
    parts, _ = _rows(n, step, 0 if nontemporal else shift, blocks * step)
    storage = np.full(4 * n + 192, FILL, np.uint8)
    at = (-storage.ctypes.data) % 64 + (0 if nontemporal else shift)
    _pack_blocks(storage, at, parts, 0, step, blocks, nontemporal)
    np.testing.assert_array_equal(storage[at : at + 4 * n], _words_of(parts, 0, step, 0, n))
    assert (storage[:at] == FILL).all() and (storage[at + 4 * n :] == FILL).all()
    raw = np.full(8 * step + 128, 0xEE, np.uint8)
    pb = (-raw.ctypes.data) % 64 + (0 if nontemporal else shift)
    if nontemporal and step % 64:
        return  # the streamed split needs every row's lines whole
    _unpack_blocks(raw, pb, step, storage, at, blocks, nontemporal)
    written = np.zeros(raw.size, bool)
    for j in range(8):
        np.testing.assert_array_equal(
            raw[pb + j * step : pb + j * step + n], parts[j * step : j * step + n] & 0xF
        )
        written[pb + j * step : pb + j * step + n] = True
    assert (raw[~written] == 0xEE).all()


@pytest.mark.parametrize(
    ("lo", "hi", "step", "shift"), [(0, 1, 3, 0), (3, 70, 71, 5), (0, 64, 64, 0), (5, 333, 400, 9)]
)
def test_built_words_match_on_both_paths(lo, hi, step, shift) -> None:
    parts, _ = _rows(hi, step, shift, hi)
    expected = _words_of(parts, 0, step, lo, hi)
    for build in (ck._build_nibbles, ck._build_nibble_loop):
        line8 = np.full(4 * hi + 8, FILL, np.uint8)
        build(line8, parts, 0, step, lo, hi)
        np.testing.assert_array_equal(line8[4 * lo : 4 * hi], expected)
        assert (line8[: 4 * lo] == FILL).all() and (line8[4 * hi :] == FILL).all()


def check_split_paths(parts: np.ndarray, step: int, lo: int, hi: int) -> None:
    """Both split paths (by rows, by pairs of rows) take the words of columns ``lo .. hi`` of
    the 8 rows of ``parts`` (``step`` apart) back into exactly those bytes, and no others."""
    line8 = np.zeros(4 * hi, np.uint8)
    line8[4 * lo :] = _words_of(parts, 0, step, lo, hi)
    for split in (ck._split_nibbles, ck._split_nibble_pairs):
        back = np.full(8 * step + 8, 0xEE, np.uint8)
        split(back, 0, step, line8, lo, hi)
        written = np.zeros(back.size, bool)
        for j in range(8):
            at = j * step
            np.testing.assert_array_equal(back[at + lo : at + hi], parts[at + lo : at + hi] & 0xF)
            written[at + lo : at + hi] = True
        assert (back[~written] == 0xEE).all()


@pytest.mark.parametrize(
    ("lo", "hi", "step", "shift"), [(0, 1, 3, 0), (3, 70, 71, 5), (0, 64, 64, 0), (5, 333, 400, 9)]
)
def test_split_words_match_on_both_paths(lo, hi, step, shift) -> None:
    check_split_paths(_rows(hi, step, shift, hi + 1)[0], step, lo, hi)


@pytest.mark.parametrize(("m", "shift"), [(1, 0), (63, 4), (64, 0), (200, 12), (640, 36), (333, 3)])
def test_streamed_words_match_on_both_paths(m, shift) -> None:
    step = m + 5
    parts, _ = _rows(m, step, 3, m)
    expected = _words_of(parts, 0, step, 0, m)
    for stream in (ck._stream_nibble_words, ck._stream_nibble_lines):
        storage = np.full(4 * m + 128, FILL, np.uint8)
        at = (-storage.ctypes.data) % 64 + shift
        stream(storage[at : at + 4 * m], parts, 0, step, m)
        np.testing.assert_array_equal(storage[at : at + 4 * m], expected)
        assert (storage[:at] == FILL).all() and (storage[at + 4 * m :] == FILL).all()


@pytest.mark.parametrize(("m", "lead"), [(1, 0), (64, 0), (200, 16), (640, 48), (333, 1)])
def test_streamed_rows_match_on_both_paths(m, lead) -> None:
    step = 64 * (m // 64 + 2)
    parts, _ = _rows(m, step, 0, m + 2)
    line8 = _words_of(parts, 0, step, 0, m).copy()
    for fallback in (False, True):
        raw = np.full(8 * step + 128, 0xEE, np.uint8)
        pb = (-raw.ctypes.data) % 64 + (64 - lead) % 64  # the first whole line ``lead`` words in
        if fallback:
            done = min(m, lead)
            ck._split_nibble_pairs(raw, pb, step, line8, 0, done)
            done = ck._stream_nibble_rows(raw, pb, step, line8, done, m)
            ck._split_nibble_pairs(raw, pb, step, line8, done, m)
        else:
            ck._nibble_rows_out(raw, pb, step, line8, m, True)
        written = np.zeros(raw.size, bool)
        for j in range(8):
            np.testing.assert_array_equal(
                raw[pb + j * step : pb + j * step + m], parts[j * step : j * step + m] & 0xF
            )
            written[pb + j * step : pb + j * step + m] = True
        assert (raw[~written] == 0xEE).all()


@njit
def _unpack_pairs(parts, pb, step, words8, at, blocks):  # type: ignore[no-untyped-def]
    for k in range(4):
        for b in range(blocks):
            nv.unpack_pair(
                parts, pb + 2 * k * step + 64 * b, pb + (2 * k + 1) * step + 64 * b, words8, at + 256 * b, k
            )


@pytest.mark.skipif(not nv.HAS_BYTE_PERMUTE, reason="unpack_pair needs AVX-512 VBMI")
@pytest.mark.parametrize(("blocks", "step", "shift"), [(1, 64, 0), (3, 197, 5), (2, 4096, 3)])
def test_pairs_match_the_definition(blocks, step, shift) -> None:
    n = 64 * blocks
    parts, _ = _rows(n, step, 0, step + blocks)
    words = np.zeros(4 * n + shift, np.uint8)
    words[shift:] = _words_of(parts, 0, step, 0, n)
    back = np.full(8 * step + 64, 0xEE, np.uint8)
    _unpack_pairs(back, shift, step, words, shift, blocks)
    written = np.zeros(back.size, bool)
    for j in range(8):
        at = shift + j * step
        np.testing.assert_array_equal(back[at : at + n], parts[j * step : j * step + n] & 0xF)
        written[at : at + n] = True
    assert (back[~written] == 0xEE).all()


@pytest.mark.parametrize(("lo", "hi", "shift"), [(0, 1, 0), (3, 200, 7), (0, 256, 0), (64, 333, 1)])
def test_rows_sharing_cache_sets_split_on_both_paths(lo, hi, shift) -> None:
    step = ck.ALIASED_ROWS  # the pair path of _split_nibbles
    check_split_paths(_rows(hi, step, shift, hi + 7)[0], step, lo, hi)
