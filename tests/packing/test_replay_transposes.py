"""The replay's one-call transposing entries (``layout_algebra.packing.replay_transposes``).

Directly: random tile copies of 32-bit elements in both directions, from the canonical form
``copy_engine.transpose_form`` finds, against ``np.copyto``; misaligned and read-only arrays.
Through ``pack``/``unpack`` replays of the transposing TPU layouts (f32 tiles, f8 words over
a transposed array; whole tiles and not, padding and fill) against ``reference_pack``
(positions from ``LayoutMap.apply``), into buffers full of other bytes, misaligned ones, and
read-only arrays; a spy checks that the entries ran where they should.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.oracles import random_array, raw_bytes
from support.packing_checks import check_one_thread_round_trip

from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.packing import copy_engine, numpy_eval, replay, replay_transposes
from layout_algebra.packing.numpy_eval import pack, unpack

pytest.importorskip("numba")
# after the skip: they need numba
from layout_algebra.packing.replay_transposes import (
    has_entry,
    transpose_params,
    transpose_to_buffer,
    transpose_to_logical,
)


def entry_args(tiles: np.ndarray, view: np.ndarray, to_tiles: bool) -> tuple[np.ndarray, bool] | None:
    """The params of copying ``view`` into ``tiles`` (``to_tiles``) or back, and whether the
    written side is the far one; None without a form or an entry."""
    dst, src = (tiles, view) if to_tiles else (view, tiles)
    form = copy_engine.transpose_form(dst, src)
    if form is None:
        return None
    writes_far, _, ns, far, fs, shape, width = form
    if not has_entry(far, fs, shape):
        return None
    pad = 16
    if writes_far:
        return transpose_params(True, 0, fs, 0, ns, shape, width, pad, False), writes_far
    return transpose_params(False, 0, ns, 0, fs, shape, width, pad, False), writes_far


@settings(max_examples=60, deadline=None)
@given(
    row_tiles=st.integers(1, 6),
    col_tiles=st.integers(1, 6),
    tile=st.sampled_from([(8, 128), (2, 128), (8, 64), (4, 32), (16, 16)]),
    dtype=st.sampled_from([np.float32, np.uint32, np.int32]),
    seed=st.integers(0, 2**16),
)
def test_entries_copy_tiles_of_a_transposed_array_both_ways(row_tiles, col_tiles, tile, dtype, seed) -> None:
    tr, tc = tile
    rows, cols = row_tiles * tc, col_tiles * tr
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 2**32, (rows, cols), dtype=np.uint32).view(dtype)
    view = x.reshape(rows // tc, tc, cols // tr, tr).transpose(2, 0, 3, 1)  # tiles of x.T
    tiles = np.ascontiguousarray(view)
    found = entry_args(np.empty_like(tiles), view, True)
    if found is None:
        return  # too few rows for 16x16 blocks: no entry (the generic replay takes it)
    # the tiles are the near side: the buffer; the array the logical one
    params = found[0]
    buffer = rng.integers(0, 256, tiles.nbytes, dtype=np.uint8)
    x.flags.writeable = False  # only read
    assert transpose_to_buffer(buffer, x.ravel(), params)
    np.testing.assert_array_equal(buffer.view(dtype).reshape(tiles.shape), tiles)
    back = rng.integers(0, 2**32, (rows, cols), dtype=np.uint32).view(dtype)
    target = back.reshape(rows // tc, tc, cols // tr, tr).transpose(2, 0, 3, 1)
    found = entry_args(tiles, target, False)
    assert found is not None  # either side may be the far one (the same span: a whole array)
    buffer.flags.writeable = False  # only read
    assert transpose_to_logical(buffer, back.ravel(), found[0])
    np.testing.assert_array_equal(back, x)


def test_entries_refuse_misaligned_arrays_and_write_nothing() -> None:
    x = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
    view = x.reshape(1, 64, 4, 8).transpose(2, 0, 3, 1)
    found = entry_args(np.empty(view.shape, np.float32), view, True)
    assert found is not None
    raw = np.zeros(x.nbytes + 4, np.uint8)
    for shift in (1, 2, 3):
        assert not transpose_to_buffer(raw[shift : shift + x.nbytes], x.ravel(), found[0])
        assert not raw.any()
    assert transpose_to_buffer(raw[4:], x.ravel(), found[0])
    odd = np.zeros(x.nbytes + 1, np.uint8)[1:]  # the logical array's bytes misaligned
    assert not transpose_to_buffer(np.zeros(x.nbytes, np.uint8), odd, found[0])


def test_copies_of_other_elements_or_few_rows_have_no_entry() -> None:
    shape, fs = np.array([1, 4, 64, 8, 128]), np.array([0, 65536, 8, 1, 512])
    assert has_entry(np.zeros(1, np.uint32), fs, shape)
    assert not has_entry(np.zeros(1, np.uint16), fs, shape)
    assert not has_entry(np.zeros(1, np.uint64), fs, shape)
    assert not has_entry(np.zeros(1, np.uint32), fs, np.array([1, 4, 64, 8, 8]))  # 8 far rows


#: Transposing layouts of 4-byte elements or words: whole tiles (replayed by the entries) and not.
TEXTS = [
    ("f32[128,128]{0,1:T(8,128)}", True),
    ("f32[256,512]{0,1:T(8,128)}", True),
    ("s32[384,64]{0,1:T(8,128)}", True),
    ("u32[128,256]{0,1:T(8,128)}", True),
    ("f8e5m2[256,256]{0,1:T(8,128)(4,1)}", True),
    ("f8e4m3fn[512,1024]{0,1:T(8,128)(4,1)}", True),
    ("f32[263,301]{0,1:T(8,128)}", False),
    ("f32[130,17]{0,1:T(8,128)}", False),
    ("f8e5m2[300,97]{0,1:T(8,128)(4,1)}", False),
    ("f8e5m2[128,6]{0,1:T(8,128)(4,1)}", False),
]


def entry_bound(key: tuple) -> bool:
    recipe = numpy_eval._RECIPES.get(key)
    bound = None if recipe is None or recipe.program is None else recipe.program.bound
    entries = set(replay.entries_of(bound))
    return bool(entries) and entries <= {
        replay_transposes.transpose_to_buffer,
        replay_transposes.transpose_to_logical,
    }


@pytest.mark.skipif(copy_engine.kernels() is None, reason="the kernels need numba")
@pytest.mark.parametrize(("text", "whole"), TEXTS)
def test_transposing_replays_match_the_index_map(text, whole) -> None:
    m = layout_map(text)
    rng = np.random.default_rng(len(text))
    first = random_array(m, rng)
    for _ in range(2):  # the first call plans, the second makes the programs
        unpack(pack(first, text, fill=0x5A, threads=1), text, threads=1)
    if whole:
        assert entry_bound((text, True, first.dtype, first.shape)), text
        assert entry_bound((text, False)), text
    for _ in range(2):
        x, expected = check_one_thread_round_trip(m, text, rng, fill=0x5A)
        frozen = expected.copy()
        frozen.flags.writeable = False  # a read-only buffer unpacks the same
        np.testing.assert_array_equal(raw_bytes(unpack(frozen, text, threads=1)), raw_bytes(x))
        # a logical array whose words are misaligned: the full path, the same bytes
        odd = np.zeros(x.nbytes + 1, np.uint8)[1:].view(x.dtype).reshape(x.shape)
        odd[...] = x
        np.testing.assert_array_equal(pack(odd, text, fill=0x5A, threads=1), expected)
        unpack(expected, text, out=odd, threads=1)
        np.testing.assert_array_equal(raw_bytes(odd), raw_bytes(x))
