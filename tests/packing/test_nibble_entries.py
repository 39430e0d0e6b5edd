"""The replay entries of nibble words, the threshold of streaming them, and the allocated results.

A replayed program of ``s4``/``u4`` under ``(8,1)E(4)`` whose steps are all word-kernel
calls runs each through one entry of ``layout_algebra.packing.replay_kernels``
(``build_nibbles``, ``split_nibbles``: three arguments, the views made in compiled code).
Every test here makes the programs with a first array, then packs and unpacks *other* arrays
by replay (a spy on the entries checks they ran: a silent fallback would make the comparison
vacuous) into buffers full of other bytes, misaligned, read-only, and allocating, and
compares the bytes with ``reference_pack`` (the layout map's positions, which know nothing of
either path) and the arrays unpacked with the originals; and the same bytes with NumPy alone
(``USE_KERNELS`` off: the path of a process whose kernels are not started). Last, the
results allocated from ``fresh_memory.ALIGNED_MIN_BYTES`` start a huge page and hold the
same bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest
from support.oracles import random_array, raw_bytes, reference_pack

from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.packing import copy_engine, fresh_memory
from layout_algebra.packing.numpy_eval import forget_recipes, pack, unpack

HAS_NUMBA = copy_engine.kernels() is not None
needs_numba = pytest.mark.skipif(not HAS_NUMBA, reason="the kernels need numba")

#: Layouts with no padding (the programs are kernel calls only: the entries run them) ...
WHOLE = [
    "s4[256,512]{1,0:T(8,128)(8,1)E(4)}",
    "u4[64,256]{1,0:T(64,128)(8,1)E(4)}",
    "s4[8,128]{1,0:T(8,128)(8,1)E(4)}",
    "s4[24,384]{1,0:T(8,128)(8,1)E(4)}",
    "u4[128,1024]{1,0:T(64,128)(8,1)E(4)}",
]
#: ... and with padding (fill steps: the generic replay, or the full path); same bytes.
PADDED = [
    "s4[16,200]{1,0:T(8,128)(8,1)E(4)}",
    "s4[257,1030]{1,0:T(8,128)(8,1)E(4)}",
    "u4[13,129]{1,0:T(8,128)(8,1)E(4)}",
    "u4[70,300]{1,0:T(64,128)(8,1)E(4)}",
]


@contextmanager
def entry_spy() -> Iterator[list[tuple[str, bool]]]:
    """Record every call of the nibble entries (name, whether it did the work) while the block
    runs; programs are made anew inside (a kept program holds the entries it was made with)."""
    from layout_algebra.packing import replay_kernels

    calls: list[tuple[str, bool]] = []
    with pytest.MonkeyPatch.context() as patch:
        for name in ("words_from_nibbles", "nibbles_from_words"):
            entry, builds, dtype = replay_kernels.ENTRIES[name]

            def spy(buffer, logical, p, entry=entry, name=name):  # type: ignore[no-untyped-def]
                done = entry(buffer, logical, p)
                calls.append((name, bool(done)))
                return done

            patch.setitem(replay_kernels.ENTRIES, name, (spy, builds, dtype))
        forget_recipes()
        yield calls
    forget_recipes()


def round_trips(text: str, rng: np.random.Generator, fill: int) -> None:
    """Make the programs, then pack and unpack two other arrays (into, allocating, from a
    read-only buffer), each against the oracle."""
    m = layout_map(text)
    first = random_array(m, rng)
    for _ in range(2):  # the first call plans, the second makes the programs
        buf = pack(first, text, fill=fill, threads=1)
        np.testing.assert_array_equal(raw_bytes(unpack(buf, text, threads=1)), raw_bytes(first))
    for _ in range(2):
        x = random_array(m, rng)
        expected = reference_pack(x, text, fill=fill)
        np.testing.assert_array_equal(pack(x, text, fill=fill, threads=1), expected, err_msg=text)
        into = rng.integers(0, 256, m.size_in_bytes, dtype=np.uint8)
        assert pack(x, text, fill=fill, out=into, threads=1) is into
        np.testing.assert_array_equal(into, expected, err_msg=text)
        read_only = np.frombuffer(expected.tobytes(), np.uint8)
        np.testing.assert_array_equal(raw_bytes(unpack(read_only, text, threads=1)), raw_bytes(x))
        back = random_array(m, rng)
        assert unpack(read_only, text, out=back, threads=1) is back
        np.testing.assert_array_equal(raw_bytes(back), raw_bytes(x), err_msg=text)


@needs_numba
@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("text", WHOLE)
def test_nibble_entries_replay_the_index_map(text, streamed, monkeypatch) -> None:
    if streamed:  # the programs made with streamed stores (the entries pass the flag on)
        monkeypatch.setattr(copy_engine, "STREAM_MIN_BYTES", 0)
        monkeypatch.setattr(copy_engine, "NIBBLE_STREAM_MIN_BYTES", 0)
    with entry_spy() as calls:
        round_trips(text, np.random.default_rng(len(text) + streamed), fill=0)
    names = {name for name, done in calls if done}
    assert names == {"words_from_nibbles", "nibbles_from_words"}, calls
    assert all(done for _, done in calls), calls


@needs_numba
@pytest.mark.parametrize("fill", [0, 5, 15])
@pytest.mark.parametrize("text", PADDED)
def test_padded_nibble_layouts_replayed_keep_the_fill(text, fill) -> None:
    with entry_spy():
        round_trips(text, np.random.default_rng(fill + len(text)), fill=fill)


@needs_numba
@pytest.mark.parametrize("text", WHOLE[:2])
def test_a_misaligned_buffer_takes_the_full_path_with_the_same_bytes(text) -> None:
    m = layout_map(text)
    rng = np.random.default_rng(4)
    with entry_spy() as calls:
        round_trips(text, rng, fill=0)
        calls.clear()
        x = random_array(m, rng)
        expected = reference_pack(x, text)
        raw = np.zeros(m.size_in_bytes + 8, np.uint8)
        for shift in range(1, 4):  # the words misaligned: the entries decline, nothing written
            out = raw[shift : shift + m.size_in_bytes]
            np.testing.assert_array_equal(pack(x, text, out=out, threads=1), expected)
            np.testing.assert_array_equal(raw_bytes(unpack(out, text, threads=1)), raw_bytes(x))
    assert calls and not any(done for _, done in calls), calls


@needs_numba
@pytest.mark.parametrize("text", WHOLE + PADDED)
def test_nibble_entries_give_the_bytes_of_numpy_alone(text, monkeypatch) -> None:
    m = layout_map(text)
    rng = np.random.default_rng(7)
    x = random_array(m, rng)
    with entry_spy():
        for _ in range(3):
            fast = pack(x, text, fill=9, threads=1)
            back = unpack(fast, text, threads=1)
    monkeypatch.setattr(copy_engine, "USE_KERNELS", False)  # what a cold process computes
    forget_recipes()
    np.testing.assert_array_equal(pack(x, text, fill=9, threads=1), fast)
    np.testing.assert_array_equal(raw_bytes(unpack(fast, text, threads=1)), raw_bytes(back))
    np.testing.assert_array_equal(raw_bytes(back), raw_bytes(x))


def test_nibbles_stream_only_where_the_whole_relayout_is_large(monkeypatch) -> None:
    monkeypatch.setattr(copy_engine, "STREAM_MIN_BYTES", 1 << 16)
    monkeypatch.setattr(copy_engine, "NIBBLE_STREAM_MIN_BYTES", 1 << 20)
    touched = np.zeros(1 << 17, np.uint8)
    assert not copy_engine.streams_nibbles(touched, plain_if_fresh=False)  # its own bytes: too few
    assert not copy_engine.streams_nibbles(touched, plain_if_fresh=False, whole_words=(1 << 20) - 1)
    assert copy_engine.streams_nibbles(touched, plain_if_fresh=False, whole_words=1 << 20)
    # a chunk below STREAM_MIN_BYTES is not streamed, however large the whole
    assert not copy_engine.streams_nibbles(touched[: 1 << 15], plain_if_fresh=False, whole_words=1 << 30)


@pytest.mark.parametrize(
    ("shape", "dtype"), [(5, np.uint8), ((3, 7), np.int16), ((64, 1000), np.float32), ((2, 3, 4), np.int8)]
)
def test_empty_starts_a_huge_page_from_the_threshold(shape, dtype, monkeypatch) -> None:
    small = fresh_memory.empty(shape, dtype)
    dims = (shape,) if isinstance(shape, int) else shape
    assert small.shape == dims and small.dtype == dtype and small.flags.c_contiguous
    monkeypatch.setattr(fresh_memory, "ALIGNED_MIN_BYTES", 0)
    arrays = [fresh_memory.empty(shape, dtype) for _ in range(3)]
    for k, a in enumerate(arrays):
        assert a.shape == dims and a.dtype == dtype
        assert a.flags.c_contiguous and a.flags.writeable and a.flags.aligned
        assert a.ctypes.data % fresh_memory.HUGE_PAGE == 0
        a[...] = k
    for k, a in enumerate(arrays):  # disjoint memory
        assert (a == k).all()


@pytest.mark.parametrize("kernels", [True, False] if HAS_NUMBA else [False])
@pytest.mark.parametrize(
    "text",
    [
        "s4[257,1030]{1,0:T(8,128)(8,1)E(4)}",
        "bf16[9,300]{1,0:T(8,128)(2,1)}",
        "s8[64,256]{1,0:T(32,128)(4,1)}",
    ],
)
def test_results_allocated_at_a_huge_page_hold_the_same_bytes(text, kernels, monkeypatch) -> None:
    monkeypatch.setattr(copy_engine, "USE_KERNELS", kernels)
    monkeypatch.setattr(fresh_memory, "ALIGNED_MIN_BYTES", 0)
    forget_recipes()
    m = layout_map(text)
    rng = np.random.default_rng(11)
    for _ in range(3):  # planned, the programs made, replayed
        x = random_array(m, rng)
        buf = pack(x, text, fill=3, threads=1)
        assert buf.ctypes.data % fresh_memory.HUGE_PAGE == 0 and buf.shape == (m.size_in_bytes,)
        np.testing.assert_array_equal(buf, reference_pack(x, text, fill=3))
        back = unpack(buf, text, threads=1)
        assert back.ctypes.data % fresh_memory.HUGE_PAGE == 0 and back.flags.c_contiguous
        assert back.shape == x.shape and back.dtype == x.dtype
        np.testing.assert_array_equal(raw_bytes(back), raw_bytes(x))
    forget_recipes()


@pytest.fixture
def small_blocks(monkeypatch):  # type: ignore[no-untyped-def]
    """Results from 64 KB on start a huge page and use kept blocks; a pool of this test's own."""
    monkeypatch.setattr(fresh_memory, "ALIGNED_MIN_BYTES", 1 << 16)
    monkeypatch.setattr(fresh_memory, "_blocks", [])
    yield fresh_memory._blocks


def test_a_block_is_kept_only_once_no_view_uses_it(small_blocks) -> None:
    a = fresh_memory.empty((256, 512), np.int8)
    at = a.ctypes.data
    view = a[3:, ::2].view(np.uint8)
    del a
    assert not small_blocks  # a view still uses it
    view[...] = 7
    del view
    assert len(small_blocks) == 1
    b = fresh_memory.empty((512, 256), np.uint8)  # fits: takes the block
    assert b.ctypes.data == at and not small_blocks
    c = fresh_memory.empty((512, 256), np.uint8)  # b holds it: a new block
    assert c.ctypes.data != at and c.ctypes.data % fresh_memory.HUGE_PAGE == 0
    b[...], c[...] = 1, 2
    assert (b == 1).all() and (c == 2).all()
    huge = fresh_memory.empty(1 << 20, np.uint8)  # the kept blocks are too small for it
    del b, c, huge
    assert len(small_blocks) == fresh_memory.KEPT_BLOCKS  # the oldest freed
    tiny = fresh_memory.empty(1 << 10, np.uint8)  # below the threshold: plain np.empty
    assert tiny.flags.owndata and len(small_blocks) == fresh_memory.KEPT_BLOCKS


def test_kept_blocks_are_bounded_in_bytes(small_blocks, monkeypatch) -> None:
    monkeypatch.setattr(fresh_memory, "KEPT_BYTES", 6 << 20)
    a, b = fresh_memory.empty(1 << 17, np.uint8), fresh_memory.empty(1 << 17, np.uint8)
    del a
    assert len(small_blocks) == 1  # about 4 MB
    del b
    assert len(small_blocks) == 1  # two would be over 6 MB: the older freed
    big = fresh_memory.empty(3 << 20, np.uint8)  # a block of 7 MB: not kept at all
    del big
    assert not small_blocks or all(block.nbytes < 6 << 20 for block in small_blocks)


@pytest.mark.parametrize("threads", [1, 2])
def test_results_in_kept_blocks_hold_every_byte(small_blocks, threads, monkeypatch) -> None:
    # each result takes the block of the one before, full of its bytes: every byte is written again
    monkeypatch.setattr(copy_engine, "PARALLEL_MIN_BYTES", 1 << 16)
    for text in ("s4[257,1030]{1,0:T(8,128)(8,1)E(4)}", "s4[256,512]{1,0:T(8,128)(8,1)E(4)}"):
        m = layout_map(text)
        rng = np.random.default_rng(5)
        for fill in (0, 15, 3, 9):
            x = random_array(m, rng)
            buf = pack(x, text, fill=fill, threads=threads)
            np.testing.assert_array_equal(buf, reference_pack(x, text, fill=fill))
            back = unpack(buf, text, threads=threads)
            np.testing.assert_array_equal(raw_bytes(back), raw_bytes(x))
            del buf, back
        assert small_blocks
    forget_recipes()
