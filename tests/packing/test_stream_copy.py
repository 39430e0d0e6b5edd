"""The streamed plain copy (``packing/stream_copy.py``, ``packing/stream_kernels.py``) against NumPy.

``gather_streamed`` writes a dense region of the destination through a page buffer, whole
64-byte lines by non-temporal stores and the partial lines at the ends plainly: the tests
put the region at every offset within a line and a page, make it shorter than a line and
longer than a page, and check every byte of the destination (the bytes around the region
must keep their values). ``scatter_streamed`` reads a dense source and writes its runs so,
checked the same way, with gaps between the runs that must keep their values too. ``streamed_copy`` on random views is compared with ``np.copyto``;
and ``pack``/``unpack`` with the streaming threshold lowered to nothing are compared with
the element-by-element oracle on layouts whose tiles are plain copies.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.oracles import random_array, raw_bytes, reference_pack

from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.packing import copy_engine, stream_copy
from layout_algebra.packing.numpy_eval import pack, unpack

pytestmark = pytest.mark.skipif(copy_engine.kernels() is None, reason="needs numba (the test extra has it)")


#: Element sizes, offsets in elements (within a line, a page and beyond), 1-4 dims, seeds.
SIZES = st.sampled_from([1, 2, 4, 8])
OFFSETS = st.integers(0, 4200)
DIMS = st.lists(st.integers(1, 40), min_size=1, max_size=4)
SEEDS = st.integers(0, 2**16)


@settings(max_examples=80, deadline=None)
@given(size=SIZES, offset=OFFSETS, shape=DIMS, run_stride=st.integers(1, 3), seed=SEEDS)
def test_gather_streamed_writes_exactly_its_region(size, offset, shape, run_stride, seed) -> None:
    from layout_algebra.packing.stream_kernels import gather_streamed

    dims = [1] * (4 - len(shape)) + shape
    n = int(np.prod(dims))
    rng = np.random.default_rng(seed)
    lanes = np.dtype(f"u{size}")
    # the source: a random permutation of the dims over a larger array, the last dim strided
    src_shape = [d for d in dims]
    src_strides = np.zeros(4, np.int64)
    step = 1
    for k in rng.permutation(4):
        src_strides[k] = step * (run_stride if k == 3 else 1)
        step *= dims[k] * (run_stride if k == 3 else 1)
    src = rng.integers(0, 256, step * size + 64, np.uint8).view(lanes)[:step]
    dst = rng.integers(0, 256, (offset + n + 300) * size, np.uint8).view(lanes)
    before = dst.copy()
    gather_streamed(dst, offset, src, 0, src_strides, np.array(dims, np.int64))
    index = np.indices(src_shape).reshape(4, -1)
    expected = src[(src_strides[:, None] * index).sum(axis=0)]
    np.testing.assert_array_equal(dst[offset : offset + n], expected)
    np.testing.assert_array_equal(dst[:offset], before[:offset])
    np.testing.assert_array_equal(dst[offset + n :], before[offset + n :])


@settings(max_examples=80, deadline=None)
@given(size=SIZES, offset=OFFSETS, shape=DIMS, gap=st.integers(0, 70), seed=SEEDS)
def test_scatter_streamed_writes_exactly_its_runs(size, offset, shape, gap, seed) -> None:
    """The runs land where the strides say, at any offset within a line and a page, runs
    shorter than a line and longer than a page; the bytes between and around them keep their
    values."""
    from layout_algebra.packing.stream_kernels import scatter_streamed

    dims = [1] * (4 - len(shape)) + shape
    rng = np.random.default_rng(seed)
    lanes = np.dtype(f"u{size}")
    # the destination: the runs (the last dim, contiguous) in a random order of the outer dims,
    # each run ``gap`` elements from the next
    strides = np.zeros(4, np.int64)
    strides[3] = 1
    step = dims[3] + gap
    for k in rng.permutation(3):
        strides[k] = step
        step *= dims[k]
    n = int(np.prod(dims))
    src = rng.integers(0, 256, (n + 7) * size, np.uint8).view(lanes)[3 : 3 + n]
    dst = rng.integers(0, 256, (offset + step + 300) * size, np.uint8).view(lanes)
    before = dst.copy()
    scatter_streamed(dst, offset, strides, src, 0, np.array(dims, np.int64))
    index = np.indices(dims).reshape(4, -1)
    places = offset + (strides[:, None] * index).sum(axis=0)
    expected = before.copy()
    expected[places] = src
    np.testing.assert_array_equal(dst, expected)


@pytest.mark.parametrize("cols", [256, 4096])
def test_streamed_copy_walks_the_dense_source(monkeypatch, cols) -> None:
    """Tiles into the array and back, with each kernel watched: where the source is one dense
    region it is walked (scattered), whichever side it is; a source that is not (a part of the
    array's columns) is gathered. The bytes are np.copyto's either way."""
    from layout_algebra.packing import stream_kernels

    copy_engine.start_kernels()
    used: list[str] = []
    for name in ("gather_streamed", "scatter_streamed"):
        real = getattr(stream_kernels, name)
        monkeypatch.setattr(
            stream_kernels, name, lambda *a, real=real, name=name: (used.append(name), real(*a))[1]
        )
    rng = np.random.default_rng(cols)
    x = rng.standard_normal((16, cols), dtype=np.float32)
    view = x.reshape(2, 8, cols // 128, 128).transpose(0, 2, 1, 3)
    tiles = np.empty(view.shape, np.float32)
    assert stream_copy.streamed_copy(tiles, view)
    back = np.zeros_like(x)
    assert stream_copy.streamed_copy(back.reshape(2, 8, cols // 128, 128).transpose(0, 2, 1, 3), tiles)
    half = view[:, : cols // 256]  # the first half of each row: not one region
    some = np.empty(half.shape, np.float32)
    assert stream_copy.streamed_copy(some, half)
    np.testing.assert_array_equal(tiles, view)
    np.testing.assert_array_equal(back, x)
    np.testing.assert_array_equal(some, half)
    assert used == ["scatter_streamed", "scatter_streamed", "gather_streamed"]


@settings(max_examples=60, deadline=None)
@given(
    dtype=st.sampled_from(["u1", "<u2", "<f4", "<f8", "c8"]),
    rows=st.integers(1, 70),
    cols=st.integers(1, 300),
    tile=st.sampled_from([(2, 16), (8, 128), (4, 32), (1, 64)]),
    skip=st.integers(0, 15),
    seed=st.integers(0, 2**16),
)
def test_streamed_copy_is_np_copyto(dtype, rows, cols, tile, skip, seed) -> None:
    """Tiles of a (possibly misaligned) array copied into a buffer and back: the same
    elements as ``np.copyto``, or nothing done (False) where it does not take the copy."""
    copy_engine.start_kernels()
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    tr, tc = tile
    r, c = -(-rows // tr) * tr, -(-cols // tc) * tc
    raw = rng.integers(0, 256, r * c * dt.itemsize + skip, np.uint8)
    x = raw[skip:].view(dt).reshape(r, c)  # skip: misaligned for the element when it is not a multiple
    view = x.reshape(r // tr, tr, c // tc, tc).transpose(0, 2, 1, 3)
    tiles = rng.integers(0, 256, x.nbytes, np.uint8).view(dt).reshape(view.shape)
    expected = view.copy()
    done = stream_copy.streamed_copy(tiles, view)
    if done:
        np.testing.assert_array_equal(tiles.view(np.uint8), expected.view(np.uint8))
        back = np.zeros((r // tr, tr, c // tc, tc), dt).transpose(0, 2, 1, 3)  # the way back: dense too
        assert stream_copy.streamed_copy(back, tiles)
        np.testing.assert_array_equal(back.view(np.uint8), expected.view(np.uint8))
    else:
        assert tc < stream_copy.MIN_RUN or skip % dt.itemsize or dt.itemsize > 8
    # and always: copy_chunk copies
    again = np.zeros_like(tiles)
    stream_copy.copy_chunk(again, view, stream=True)
    np.testing.assert_array_equal(again.view(np.uint8), expected.view(np.uint8))


def test_streamed_copy_refuses_what_it_cannot_take() -> None:
    copy_engine.start_kernels()
    x = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    assert not stream_copy.streamed_copy(np.empty((64, 64), np.float32), x.T)  # a transpose: runs of 1
    assert not stream_copy.streamed_copy(np.empty((64, 64), np.float64), x)  # dtypes differ
    assert not stream_copy.streamed_copy(np.empty((64, 128), np.float32)[:, ::2], x)  # dst not dense
    read_only = np.empty((64, 64), np.float32)
    read_only.flags.writeable = False
    assert not stream_copy.streamed_copy(read_only, x)
    assert stream_copy.streamed_copy(np.empty((64, 64), np.float32), x)


PLAIN_TILES = [
    "f32[64,512]{1,0:T(8,128)}",
    "f32[67,300]{1,0:T(8,128)}",
    "bf16[40,260]{1,0:T(8,128)}",
    "u8[33,520]{1,0:T(4,128)}",
    "f64[9,70]{1,0:T(2,32)}",
    "c64[17,200]{1,0:T(8,128)}",
    "s32[3,20,300]{2,1,0:T(8,128)}",
    "f32[300,70]{0,1:T(8,128)}",  # transposing: not taken, the bytes all the same
    "s8[256,256]{1,0:T(32,128)(4,1)}",  # words: not taken
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("text", PLAIN_TILES)
def test_pack_and_unpack_streamed_match_the_index_map(monkeypatch, text, threads) -> None:
    copy_engine.start_kernels()
    monkeypatch.setattr(stream_copy, "STREAM_COPY_MIN_BYTES", 0)
    monkeypatch.setattr(copy_engine, "PARALLEL_MIN_BYTES", 0)
    m = layout_map(text)
    rng = np.random.default_rng(len(text))
    x = random_array(m, rng)
    expected = reference_pack(x, text, fill=0x5A)
    np.testing.assert_array_equal(pack(x, text, fill=0x5A, threads=threads), expected)
    into = rng.integers(0, 256, m.size_in_bytes, dtype=np.uint8)
    assert pack(x, text, fill=0x5A, out=into, threads=threads) is into
    np.testing.assert_array_equal(into, expected)
    np.testing.assert_array_equal(raw_bytes(unpack(expected, text, threads=threads)), raw_bytes(x))
    read_only = np.frombuffer(expected.tobytes(), np.uint8)
    back = random_array(m, rng)
    assert unpack(read_only, text, out=back, threads=threads) is back
    np.testing.assert_array_equal(raw_bytes(back), raw_bytes(x))


def test_streaming_follows_the_threshold(monkeypatch) -> None:
    copy_engine.start_kernels()
    monkeypatch.setattr(stream_copy, "STREAM_COPY_MIN_BYTES", 1 << 20)
    touched = np.ones(1 << 20, np.uint8)
    assert stream_copy.streamed(touched) and not stream_copy.streamed(touched[1:])
    fresh = np.empty(64 << 20, np.uint8)  # a new mapping: its pages not touched yet (Linux)
    assert not stream_copy.streamed(fresh) or not sys.platform.startswith("linux")
    fresh[:] = 1
    assert stream_copy.streamed(fresh)
    monkeypatch.setattr(copy_engine, "USE_KERNELS", False)
    assert not stream_copy.streamed(touched)
