"""Memory not touched yet (``layout_algebra.packing.fresh_memory``) and the nibble kernels' stores into it.

``untouched`` is checked against memory whose pages this test writes or leaves alone (a
mapping of 64 MB: glibc maps anew anything over 32 MB). Nibbles written into such memory
are stored plainly instead of streamed past the cache; the bytes must not change: packing
and unpacking ``s4`` into fresh and into touched memory, on one and two threads, must give
the layout map's bytes (``reference_pack``) and the array back, and a spy checks which way
the kernels stored them.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from support.oracles import random_array, raw_bytes, reference_pack

from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.packing import copy_engine, fresh_memory, stage_walk
from layout_algebra.packing.numpy_eval import pack, unpack

LINUX = sys.platform.startswith("linux")
FRESH = 64 << 20  # bytes of a mapping made anew by np.empty


def fresh_bytes(nbytes: int) -> np.ndarray:
    """``nbytes`` bytes starting a page into a mapping of 64 MB not touched yet."""
    whole = np.empty(FRESH, np.uint8)
    start = (-whole.ctypes.data) % 4096
    return whole[start : start + nbytes]


@pytest.mark.skipif(not LINUX, reason="mincore is asked on Linux only")
def test_untouched_sees_pages_not_written_yet() -> None:
    x = fresh_bytes(FRESH // 2)
    assert fresh_memory.untouched(x)
    x[: x.size // 4] = 1  # the first sample page (at 1/6) touched, two of three still fresh
    assert fresh_memory.untouched(x)
    x[: 3 * x.size // 4] = 1  # only the last sample (at 5/6) fresh
    assert not fresh_memory.untouched(x)
    x[:] = 1
    assert not fresh_memory.untouched(x)


def test_untouched_is_false_where_it_cannot_ask(monkeypatch) -> None:
    x = fresh_bytes(1 << 20)
    assert not fresh_memory.untouched(x[:100])  # no whole page
    assert not fresh_memory.untouched(x[:0])
    monkeypatch.setattr(fresh_memory, "_mincore", False)  # not Linux
    assert not fresh_memory.untouched(x)


def test_streams_nibbles_from_the_size_unless_fresh(monkeypatch) -> None:
    monkeypatch.setattr(copy_engine, "STREAM_MIN_BYTES", 1 << 16)
    monkeypatch.setattr(copy_engine, "NIBBLE_STREAM_MIN_BYTES", 0)
    touched = np.zeros(1 << 17, np.uint8)
    assert copy_engine.streams_nibbles(touched, plain_if_fresh=True)
    assert not copy_engine.streams_nibbles(touched[: 1 << 15], plain_if_fresh=True)
    fresh = fresh_bytes(1 << 17)
    assert copy_engine.streams_nibbles(fresh, plain_if_fresh=False)
    assert copy_engine.streams_nibbles(fresh, plain_if_fresh=True) is not LINUX


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    "text",
    [
        "s4[64,384]{1,0:T(8,128)(8,1)E(4)}",
        "s4[133,1030]{1,0:T(8,128)(8,1)E(4)}",  # padding in the last tile, both ways
        "u4[197,700]{1,0:T(64,128)(8,1)E(4)}",
    ],
)
def test_s4_into_fresh_and_touched_memory_gives_the_same_bytes(text, threads, monkeypatch) -> None:
    numba = pytest.importorskip("numba", reason="the kernels need numba (the test extra installs it)")
    assert numba
    # replay_kernels imported before the spies replace its kernels: its compiled entries take
    # them by name at its import, and numba cannot compile a call of a Python function
    from layout_algebra.packing import copy_kernels, replay_kernels  # noqa: F401

    monkeypatch.setattr(copy_engine, "KERNEL_MIN_BYTES", 0)
    monkeypatch.setattr(copy_engine, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(copy_engine, "NIBBLE_STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(stage_walk, "WORD_KERNEL_CHUNK_ELEMENTS", 1 << 14)  # several chunks
    streamed: list[bool] = []

    def spy(real):  # type: ignore[no-untyped-def]
        def run(*args):  # type: ignore[no-untyped-def]
            streamed.append(len(args) == 10 and bool(args[9]))
            return real(*args)

        return run

    for name in ("words_from_nibbles", "nibbles_from_words"):
        monkeypatch.setattr(copy_kernels, name, spy(getattr(copy_kernels, name)))
    m = layout_map(text)
    x = random_array(m, np.random.default_rng(5))
    expected = reference_pack(x, text, fill=3)
    for fresh in (True, False):
        streamed.clear()
        out = fresh_bytes(m.size_in_bytes) if fresh else np.zeros(m.size_in_bytes, np.uint8)
        buf = pack(x, text, fill=3, out=out, threads=threads)
        target_bytes = fresh_bytes(x.size) if fresh else np.zeros(x.size, np.uint8)
        target = target_bytes.view(x.dtype).reshape(x.shape)
        back = unpack(buf, text, out=target, threads=threads)
        assert streamed, "the nibble kernels did not run"
        # fresh: plain stores (where a padded pack fills its region first, the region is touched)
        assert not all(streamed) if fresh and LINUX else all(streamed), (fresh, streamed)
        np.testing.assert_array_equal(buf, expected)
        np.testing.assert_array_equal(raw_bytes(back), raw_bytes(x))
        np.testing.assert_array_equal(raw_bytes(unpack(buf, text, threads=threads)), raw_bytes(x))


def test_no_block_is_kept_when_none_may_be_and_release_frees_them(monkeypatch) -> None:
    fresh_memory.release_kept_blocks()
    monkeypatch.setattr(fresh_memory, "KEPT_BLOCKS", 0)
    a = fresh_memory.empty(32 << 20, np.uint8)
    del a
    assert fresh_memory.release_kept_blocks() == 0
    monkeypatch.setattr(fresh_memory, "KEPT_BLOCKS", 2)
    b = fresh_memory.empty(32 << 20, np.uint8)
    del b
    assert fresh_memory.release_kept_blocks() >= 32 << 20
    assert fresh_memory.release_kept_blocks() == 0
