"""The compiled word kernels (``layout_algebra.packing.copy_kernels``, numba) against NumPy and the index map.

Every test that packs runs both paths, the kernels (``copy_engine.USE_KERNELS = True``) and
NumPy alone, on the same input, and checks both against the layout map's positions
(``reference_pack``, built from ``LayoutMap.apply`` on index arrays: it knows nothing of
either path) and against each other, byte for byte, padding included; unpack must give the
array back. A spy checks that the kernels really ran where they should (a silent fallback
to NumPy would make the comparison vacuous).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.oracles import random_array, raw_bytes, reference_pack

from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.packing import copy_engine, numpy_eval, stage_walk
from layout_algebra.packing.numpy_eval import pack, unpack
from layout_algebra.packing.threads import run_parallel

numba = pytest.importorskip("numba", reason="the kernels need numba (the test extra installs it)")
# (after the skip: they need numba) replay_kernels imported before any test replaces a kernel
# by a spy: the replays' compiled entries take the kernels by name at their import, and numba
# cannot compile a call of a Python function
from layout_algebra.packing import copy_kernels, replay_kernels  # noqa: E402, F401

KERNELS = (
    "words_from_bytes",
    "bytes_from_words",
    "words_from_nibbles",
    "nibbles_from_words",
    "words_from_halves",
    "halves_from_words",
)


@pytest.fixture(autouse=True)
def kernels_at_every_size(monkeypatch) -> None:
    """The kernels run on small arrays too (by default only from ``KERNEL_MIN_BYTES``), and
    stage their words there too (by default only from ``STAGED_MIN_BYTES``)."""
    monkeypatch.setattr(copy_engine, "KERNEL_MIN_BYTES", 0)
    monkeypatch.setattr(copy_engine, "STAGED_MIN_BYTES", 0)


@contextmanager
def kernel_calls(staged: list[bool] | None = None) -> Iterator[list[str]]:
    """Record which kernels run (by name) while the block runs, and in ``staged`` whether
    each staged its words."""
    calls: list[str] = []

    def spy(real, name):  # type: ignore[no-untyped-def]
        def run(*args):  # type: ignore[no-untyped-def]
            calls.append(name)
            if staged is not None:
                staged.append(bool(args[8]))  # every kernel's 9th argument
            return real(*args)

        return run

    with pytest.MonkeyPatch.context() as patch:
        for name in KERNELS:
            patch.setattr(copy_kernels, name, spy(getattr(copy_kernels, name), name))
        yield calls


def both_paths(x: np.ndarray, text: str, fill: int, **options) -> tuple[np.ndarray, np.ndarray]:
    """``pack`` with the kernels and with NumPy alone; each unpacked again must be ``x``."""
    results = []
    for use in (True, False):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(copy_engine, "USE_KERNELS", use)
            buf = pack(x, text, fill=fill, **options)
            back = unpack(buf, text, **options)
        np.testing.assert_array_equal(raw_bytes(back), raw_bytes(x), err_msg=f"{text} kernels={use}")
        results.append(buf)
    return results[0], results[1]


# ------------------------------------------------------------------ the TPU formats
@pytest.mark.slow
@pytest.mark.parametrize(
    ("text", "used"),
    [
        ("s8[256,512]{1,0:T(32,128)(4,1)}", {"words_from_bytes", "bytes_from_words"}),
        ("s8[131,259]{1,0:T(32,128)(4,1)}", {"words_from_bytes", "bytes_from_words"}),  # ragged both ways
        ("u8[100,256]{1,0:T(8,128)(4,1)}", {"words_from_bytes", "bytes_from_words"}),
        ("f8e4m3fn[64,384]{1,0:T(32,128)(4,1)}", {"words_from_bytes", "bytes_from_words"}),
        ("s4[64,512]{1,0:T(8,128)(8,1)E(4)}", {"words_from_nibbles", "nibbles_from_words"}),
        ("s4[257,1030]{1,0:T(8,128)(8,1)E(4)}", {"words_from_nibbles", "nibbles_from_words"}),
        ("s4[130,1030]{1,0:T(64,128)(8,1)E(4)}", {"words_from_nibbles", "nibbles_from_words"}),
        ("u4[640,256]{1,0:T(64,128)(8,1)E(4)}", {"words_from_nibbles", "nibbles_from_words"}),
        ("s4[300,130]{0,1:T(8,128)(8,1)E(4)}", {"words_from_nibbles", "nibbles_from_words"}),
        ("bf16[64,384]{1,0:T(8,128)(2,1)}", {"words_from_halves", "halves_from_words"}),
        ("bf16[299,700]{1,0:T(8,128)(2,1)}", {"words_from_halves", "halves_from_words"}),
        ("f16[130,260]{1,0:T(8,128)(2,1)}", {"words_from_halves", "halves_from_words"}),
    ],
)
def test_tpu_formats_run_the_kernels_and_match_numpy_and_the_index_map(text, used) -> None:
    m = layout_map(text)
    x = random_array(m, np.random.default_rng(3))
    with kernel_calls() as calls:
        fast, slow = both_paths(x, text, fill=1)
    assert used <= set(calls), f"{text}: the kernels did not run ({sorted(set(calls))})"
    np.testing.assert_array_equal(fast, slow)
    np.testing.assert_array_equal(fast, reference_pack(x, text, fill=1))


@pytest.mark.slow
def test_s8_8191_by_8000_on_two_threads_matches_numpy() -> None:
    # the benchmark's ragged shape, fewer rows (the same edge blocks; two 2 MB chunks)
    text = "s8[511,8000]{1,0:T(32,128)(4,1)}"
    x = random_array(layout_map(text), np.random.default_rng(5))
    with kernel_calls() as calls:
        fast, slow = both_paths(x, text, fill=7, threads=2)
    assert calls
    np.testing.assert_array_equal(fast, slow)
    np.testing.assert_array_equal(fast, reference_pack(x, text, fill=7))


@pytest.mark.parametrize(
    ("text", "rows"),
    [
        ("pred[64,512]{1,0:T(8,128)(4,1)}", 8),
        ("u8[264,520]{1,0:T(8,128)(4,1)}", 8),  # ragged both ways
        ("s8[96,384]{1,0:T(4,128)(4,1)}", 4),
        ("s8[64,512]{1,0:T(32,128)(4,1)}", 32),
        ("bf16[64,512]{1,0:T(8,128)(2,1)}", 8),
        ("f16[72,260]{1,0:T(8,128)(2,1)}", 8),  # ragged both ways
        ("bf16[64,512]{1,0:T(16,128)(2,1)}", 16),
    ],
)
def test_words_of_few_rows_go_in_the_order_of_the_words(text, rows) -> None:
    """Words whose outer index spans at most ``WORDS_IN_ORDER_MAX_ROWS`` rows go in the order
    of the words (the loop over tiles outside the loop over row groups) where they are words of
    bytes taken apart, and from ``STREAM_MIN_BYTES`` words of bytes built or of halves taken
    apart; others in the order of the rows. From ``STREAM_MIN_BYTES`` bytes are split past the
    caches (the rows of a tile row side by side where they run on, else run by run), not along
    whole rows. Either way the bytes match the index map."""
    m = layout_map(text)
    x = random_array(m, np.random.default_rng(rows))
    expected = reference_pack(x, text, fill=2)
    halves = m.element_bits == 16
    build, split = (
        ("words_from_halves", "halves_from_words") if halves else ("words_from_bytes", "bytes_from_words")
    )
    for big_from in (0, 1 << 40):  # every call's words are big (STREAM_MIN_BYTES), or none are
        seen: dict[str, list[tuple[list[int], list[int]]]] = {build: [], split: []}
        streamed: list[bool] = []  # bytes split past the caches (bytes_from_words' 10th argument)

        def spy(real, name, at, seen=seen, streamed=streamed):  # type: ignore[no-untyped-def]
            def run(*args):  # type: ignore[no-untyped-def]
                seen[name].append((args[at].tolist(), args[7].tolist()))  # the words' strides, the shape
                if name == "bytes_from_words":
                    streamed.append(len(args) > 9 and bool(args[9]))
                return real(*args)

            return run

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(copy_engine, "STREAM_MIN_BYTES", big_from)
            patch.setattr(copy_kernels, build, spy(getattr(copy_kernels, build), build, 2))
            patch.setattr(copy_kernels, split, spy(getattr(copy_kernels, split), split, 6))
            numpy_eval.forget_recipes()
            buf = pack(x, text, fill=2, threads=1)
            back = unpack(buf, text, threads=1)
        np.testing.assert_array_equal(buf, expected, err_msg=text)
        np.testing.assert_array_equal(raw_bytes(back), raw_bytes(x), err_msg=text)
        big = big_from == 0
        assert set(streamed) <= {big}, (text, big_from, streamed)  # words that leave the caches
        for name, calls in seen.items():
            # whether each call (with more than one tile and row group) walks the words in order
            walks = {ws[1] > ws[2] for ws, shape in calls if shape[1] > 1 and shape[2] > 1}
            kind = (name == split and (big or not halves)) or (name == build and big and not halves)
            words_order = rows <= copy_engine.WORDS_IN_ORDER_MAX_ROWS and kind
            assert walks <= {words_order}, (text, name, big_from, calls)
            assert walks or rows == 4, (text, name, calls)  # 4 rows: one row group, no choice


@pytest.mark.parametrize(
    "text",
    [
        "s8[96,1024]{1,0:T(32,128)(4,1)}",  # rows of a tile row side by side, i2 the tiles
        "pred[64,1024]{1,0:T(8,128)(4,1)}",  # the same in the words' order: i1 the tiles
        "s8[70,1000]{1,0:T(32,128)(4,1)}",  # ragged: rows not equally aligned, runs cut
        "f8e4m3fn[3,64,512]{2,1,0:T(32,128)(4,1)}",
        "s8[64,1024]{1,0:T(32,32)(4,1)}",  # runs of 32 words, under a vector: not streamed
        "u8[64,1024]{1,0:T(32,64)(4,1)}",  # runs of one vector
    ],
)
@pytest.mark.parametrize("threads", [1, 2])
def test_bytes_split_past_the_caches_give_the_array_at_any_alignment(text, threads) -> None:
    """From ``STREAM_MIN_BYTES`` words of bytes are split with non-temporal stores of whole
    lines where the rows' starts allow it (``weave_kernels.stream_byte_rows``), else run by
    run: unpacking into results that start anywhere within a cache line (every 8 bytes: 16,
    32 and 48 past a line stream, 8 and 24 do not) gives the array back, the bytes around the
    result untouched, on one thread and in parts."""
    m = layout_map(text)
    x = random_array(m, np.random.default_rng(len(text)))
    buf = reference_pack(x, text, fill=5)
    streamed: list[bool] = []
    real = copy_kernels.bytes_from_words

    def spy(*args):  # type: ignore[no-untyped-def]
        streamed.append(len(args) > 9 and bool(args[9]))
        return real(*args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(copy_engine, "STREAM_MIN_BYTES", 0)
        patch.setattr(copy_kernels, "bytes_from_words", spy)
        numpy_eval.forget_recipes()
        for shift in range(0, 64, 8):
            raw = np.full(x.nbytes + 128, 0xEE, np.uint8)
            start = (-raw.ctypes.data) % 64 + shift
            out = raw[start : start + x.nbytes].view(x.dtype).reshape(x.shape)
            for _ in range(3):  # the full path, then the program made and replayed
                out.view(np.uint8)[...] = 0
                unpack(buf, text, out=out, threads=threads)
                np.testing.assert_array_equal(raw_bytes(out), raw_bytes(x), err_msg=f"{text} {shift}")
            assert (raw[:start] == 0xEE).all() and (raw[start + x.nbytes :] == 0xEE).all()
    assert streamed and all(streamed), streamed


@pytest.mark.parametrize("text", ["s8[256,512]{1,0:T(32,128)(4,1)}", "s4[130,1030]{1,0:T(64,128)(8,1)E(4)}"])
def test_staged_and_unstaged_words_give_the_same_bytes(text) -> None:
    # the words of one outer index, built out of order, go through a staging buffer
    x = random_array(layout_map(text), np.random.default_rng(4))
    results = []
    for stage_bytes in (1 << 19, 0):
        staged: list[bool] = []
        with pytest.MonkeyPatch.context() as patch, kernel_calls(staged):
            patch.setattr(copy_engine, "STAGE_BYTES", stage_bytes)
            buf = pack(x, text, fill=3)
            np.testing.assert_array_equal(raw_bytes(unpack(buf, text)), raw_bytes(x))
        assert staged and any(staged) == bool(stage_bytes), staged
        results.append(buf)
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], reference_pack(x, text, fill=3))


@pytest.mark.parametrize(
    "text", ["s4[130,1030]{1,0:T(64,128)(8,1)E(4)}", "u4[640,384]{1,0:T(64,128)(8,1)E(4)}"]
)
def test_nibble_rows_that_run_on_across_tiles_are_sliced_once(text) -> None:
    # (64,128)(8,1): the 8 nibble rows of a word run on across the tiles of a tile row, while
    # the words do not; the kernels then slice each row once per tile row (_runs_on), the
    # path that made this layout 1.5-1.7x faster. It must give the index map's bytes.
    x = random_array(layout_map(text), np.random.default_rng(6))
    seen: list[bool] = []
    real_in, real_out = copy_kernels.words_from_nibbles, copy_kernels.nibbles_from_words

    def spy_in(words, wo, ws, parts, po, ps, step, shape, staged):  # type: ignore[no-untyped-def]
        seen.append(bool(copy_kernels._runs_on.py_func(ws, ps, shape)))
        return real_in(words, wo, ws, parts, po, ps, step, shape, staged)

    def spy_out(parts, po, ps, step, words, wo, ws, shape, staged, *streamed):  # type: ignore[no-untyped-def]
        seen.append(bool(copy_kernels._runs_on.py_func(ws, ps, shape)))
        return real_out(parts, po, ps, step, words, wo, ws, shape, staged, *streamed)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(copy_kernels, "words_from_nibbles", spy_in)
        patch.setattr(copy_kernels, "nibbles_from_words", spy_out)
        fast, slow = both_paths(x, text, fill=5)
    assert seen and any(seen), seen
    np.testing.assert_array_equal(fast, slow)
    np.testing.assert_array_equal(fast, reference_pack(x, text, fill=5))


tile_rows = {"s8": 4, "u8": 4, "s4": 8, "u4": 8, "bf16": 2, "u16": 2}


@st.composite
def word_layouts(draw: st.DrawFn) -> str:
    """A small 2-D layout whose minor sub-tile makes 32-bit words: ``(4,1)`` bytes, ``(8,1)``
    nibbles or ``(2,1)`` halves."""
    element = draw(st.sampled_from(sorted(tile_rows)))
    k = tile_rows[element]
    rows = k * draw(st.integers(1, 4))
    cols = draw(st.sampled_from([8, 16, 32, 128]))
    dims = [draw(st.integers(1, 3 * rows)), draw(st.integers(1, 3 * cols))]
    order = draw(st.sampled_from(["1,0", "0,1"]))
    e = "E(4)" if element.endswith("4") else ""
    return f"{element}[{dims[0]},{dims[1]}]{{{order}:T({rows},{cols})({k},1){e}}}"


@pytest.mark.slow
@settings(max_examples=80)
@given(
    text=word_layouts(),
    seed=st.integers(0, 2**32 - 1),
    fill=st.integers(0, 15),
    chunk=st.integers(0, 3),
    stage=st.sampled_from([0, 64, 1 << 19]),
)
def test_random_word_layouts_give_the_same_bytes_on_both_paths(text, seed, fill, chunk, stage) -> None:
    m = layout_map(text)
    x = random_array(m, np.random.default_rng(seed))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(copy_engine, "WORD_MIN_ELEMENTS", 0)  # the word path at every size
        patch.setattr(copy_engine, "STAGE_BYTES", stage)  # staged words: never, small ones, the default
        if chunk:  # several chunks, on two threads
            patch.setattr("layout_algebra.packing.stage_walk.CHUNK_BYTES", 64 << (4 * chunk))
            patch.setattr("layout_algebra.packing.stage_walk.KERNEL_CHUNK_BYTES", 64 << (4 * chunk))
            patch.setattr("layout_algebra.packing.stage_walk.WORD_KERNEL_CHUNK_ELEMENTS", 64 << (4 * chunk))
        fast, slow = both_paths(x, text, fill=fill, threads=1 + chunk % 2)
    np.testing.assert_array_equal(fast, slow, err_msg=text)
    np.testing.assert_array_equal(fast, reference_pack(x, text, fill=fill), err_msg=text)


def test_kernel_copies_use_long_chunks_and_read_the_buffer_directly(monkeypatch) -> None:
    text = "s8[1024,2048]{1,0:T(32,128)(4,1)}"  # 2 MB: one long chunk with kernels, two without
    m = layout_map(text)
    slots = np.zeros(m.size_in_bytes, np.uint8).reshape(
        stage_walk.walk(m, np.zeros((1, 1), np.uint8), None).box
    )
    x = random_array(m, np.random.default_rng(6))
    plan = stage_walk.walk(m, x.view(np.uint8), None)
    monkeypatch.setattr(stage_walk, "CHUNK_BYTES", 1 << 20)
    assert numpy_eval._chunk_bytes(plan, slots, 8) == stage_walk.KERNEL_CHUNK_BYTES
    assert numpy_eval._chunk_bytes(plan, slots, 8, packing=False) == stage_walk.KERNEL_CHUNK_BYTES
    monkeypatch.setattr(copy_engine, "USE_KERNELS", False)
    assert numpy_eval._chunk_bytes(plan, slots, 8) == 1 << 20


# ------------------------------------------------------------- inputs the kernels refuse
@pytest.mark.parametrize("text", ["s8[64,256]{1,0:T(32,128)(4,1)}", "s4[64,256]{1,0:T(8,128)(8,1)E(4)}"])
def test_non_contiguous_reversed_and_misaligned_arrays_and_buffers(text) -> None:
    m = layout_map(text)
    x = random_array(m, np.random.default_rng(11))
    expected = reference_pack(x, text, fill=2)
    wide = np.zeros((x.shape[0], 2 * x.shape[1]), x.dtype)
    wide[:, ::2] = x
    reversed_copy = x[::-1, ::-1].copy()
    for view in (wide[:, ::2], reversed_copy[::-1, ::-1], np.asfortranarray(x), x.T.copy().T):
        np.testing.assert_array_equal(pack(view, text, fill=2), expected)
    # an output buffer one byte off the alignment of a word
    storage = np.zeros(expected.size + 1, np.uint8)
    out = storage[1:]
    assert pack(x, text, fill=2, out=out) is out
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(raw_bytes(unpack(out, text)), raw_bytes(x))
    # unpack into a reversed, strided array, from read-only bytes
    target = np.zeros((x.shape[0], 2 * x.shape[1]), x.dtype)[::-1, ::2]
    unpack(bytes(expected), text, out=target)
    np.testing.assert_array_equal(raw_bytes(target), raw_bytes(x))


@pytest.mark.parametrize("text", ["s4[64,256]{1,0:T(8,128)(8,1)E(4)}", "s4[61,250]{0,1:T(8,128)(8,1)E(4)}"])
def test_blocks_the_kernels_refuse_are_done_by_numpy(text) -> None:
    m = layout_map(text)
    x = random_array(m, np.random.default_rng(12))
    with pytest.MonkeyPatch.context() as patch:  # as for a reversed array
        patch.setattr(copy_engine, "interleave", lambda *a: False)
        patch.setattr(copy_engine, "deinterleave", lambda *a: False)
        buf = pack(x, text, fill=9)
        back = unpack(buf, text)
    np.testing.assert_array_equal(buf, reference_pack(x, text, fill=9))
    np.testing.assert_array_equal(raw_bytes(back), raw_bytes(x))


def test_a_wrong_size_out_is_a_clear_error() -> None:
    x = np.zeros((64, 256), np.int8)
    with pytest.raises(ValueError, match=r"out has 100 bytes, the layout needs 16384"):
        pack(x, "s8[64,256]{1,0:T(32,128)(4,1)}", out=np.zeros(100, np.uint8))


# ------------------------------------------------------------------- the kernels alone
def per_word_reference(parts: np.ndarray, bits: int) -> np.ndarray:
    """Words from their parts by a Python loop over words and parts."""
    words = np.zeros(parts.shape[:-1], np.uint32)
    for index in np.ndindex(*words.shape):
        words[index] = sum(
            (int(parts[(*index, j)]) & ((1 << bits) - 1)) << (bits * j) for j in range(parts.shape[-1])
        )
    return words


@pytest.mark.slow
@settings(max_examples=120)
@given(data=st.data())
def test_interleave_and_deinterleave_match_a_loop_for_any_strides(data) -> None:
    count, bits = data.draw(st.sampled_from(sorted(copy_engine.WORD_KERNELS)))
    lead = tuple(data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=4)))  # 4: the kernels' loops
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    # parts: a view with the word's parts along any dim of a bigger array, stepped or not
    order = data.draw(st.permutations(range(len(lead) + 1)))
    step = data.draw(st.integers(1, 2))
    full = [(*lead, count)[k] * (step if k == order[-1] else 1) for k in order]
    dtype = np.dtype(f"<u{max(1, bits // 8)}")  # bytes, or the 16-bit halves of bf16
    base = rng.integers(0, 1 << (8 * dtype.itemsize), full, dtype=dtype)
    parts = base[tuple(slice(None, None, step) if k == order[-1] else slice(None) for k in order)]
    parts = parts.transpose(np.argsort(order))
    assert parts.shape == (*lead, count)
    words = np.zeros(lead, np.uint32)
    if data.draw(st.booleans()):  # words stepped too
        words = np.zeros((*lead[:-1], 2 * lead[-1]), np.uint32)[..., ::2]
    if copy_engine.WORD_KERNELS[count, bits][0] is None:  # no kernel builds these words
        assert not copy_engine.interleave(words, parts, bits)
        words[...] = per_word_reference(parts, bits)
    else:
        assert copy_engine.interleave(words, parts, bits)
        np.testing.assert_array_equal(words, per_word_reference(parts, bits))
    back = np.full_like(base, 0xEE)
    view = back[tuple(slice(None, None, step) if k == order[-1] else slice(None) for k in order)]
    view = view.transpose(np.argsort(order))
    assert copy_engine.deinterleave(view, words, bits)
    np.testing.assert_array_equal(view, parts & ((1 << bits) - 1))
    untouched = np.ones(back.shape, bool)
    untouched[tuple(slice(None, None, step) if k == order[-1] else slice(None) for k in order)] = False
    assert (back[untouched] == 0xEE).all()  # nothing outside the view was written


def test_the_kernels_refuse_what_they_do_not_handle() -> None:
    parts = np.zeros((5, 4), np.uint8)
    assert not copy_engine.interleave(np.zeros(5, np.uint64), parts, 8)  # 64-bit words
    assert not copy_engine.interleave(np.zeros(5, np.uint32), parts, 4)  # 4 nibbles: not a 32-bit word
    assert not copy_engine.interleave(np.zeros(5, np.uint32), parts[::-1], 8)  # a negative stride
    assert not copy_engine.interleave(
        np.zeros(5, np.uint32), np.zeros((5, 2), np.uint8), 16
    )  # bytes as halves
    assert not copy_engine.interleave(
        np.zeros(5, np.uint32), np.zeros((5, 4), np.uint16), 8
    )  # halves as bytes
    assert not copy_engine.deinterleave(np.zeros((5, 4), np.uint8)[:0], np.zeros(0, np.uint32), 8)


def test_merged_dims_merge_only_where_every_array_steps_evenly() -> None:
    assert copy_engine.merged_dims((3, 4, 5), (20, 5, 1), (20, 5, 1)) == ([1, 1, 1, 60], [[0, 0, 0, 1]] * 2)
    assert copy_engine.merged_dims((3, 4, 5), (20, 5, 1), (40, 10, 1)) == (
        [1, 1, 12, 5],
        [[0, 0, 5, 1], [0, 0, 10, 1]],
    )
    assert copy_engine.merged_dims((2, 3, 2, 3, 2), (1, 2, 6, 12, 36), (36, 12, 6, 2, 1)) is None


def test_without_numba_or_switched_off_numpy_does_the_work(monkeypatch) -> None:
    text = "s4[64,256]{1,0:T(8,128)(8,1)E(4)}"
    x = random_array(layout_map(text), np.random.default_rng(1))
    monkeypatch.setattr(copy_engine, "_kernels", False)  # as when numba failed to import
    with kernel_calls() as calls:
        buf = pack(x, text)
    assert not calls
    np.testing.assert_array_equal(buf, reference_pack(x, text))


@pytest.mark.slow
def test_importing_the_package_or_packing_small_arrays_does_not_import_numba() -> None:
    code = (
        "import sys, layout_algebra, layout_algebra.packing.numpy_eval, layout_algebra.packing.copy_engine\n"
        "import numpy as np\n"
        "pack = layout_algebra.packing.numpy_eval.pack\n"
        "pack(np.zeros((8, 128), np.float32), 'f32[8,128]{1,0:T(8,128)}')\n"
        "pack(np.zeros((64, 256), np.int8), 's8[64,256]{1,0:T(32,128)(4,1)}')\n"
        "pack(np.zeros((2048, 1024), np.int8), 's8[2048,1024]{1,0:T(32,128)(4,1)}')\n"
        "print('numba' in sys.modules)\n"
        "layout_algebra.packing.copy_engine.COLD_KERNEL_MIN_BYTES = 1 << 21\n"
        "pack(np.zeros((2048, 1024), np.int8), 's8[2048,1024]{1,0:T(32,128)(4,1)}')\n"
        "print('numba' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=120
    )
    # a one-off 2 MB array runs on NumPy (numba's start costs more); one past the size that
    # starts the kernels uses them (tests/packing/test_kernel_start.py has the rule)
    assert out.stdout.split() == ["False", "True"]


# ------------------------------------------ the nibble and byte kernels, path by path
#: (kernel that builds words, kernel that splits them, parts per word, bits per part)
NIBBLES = ("words_from_nibbles", "nibbles_from_words", 8, 4)
BYTES = ("words_from_bytes", "bytes_from_words", 4, 8)
HALVES = ("words_from_halves", "halves_from_words", 2, 16)


def words_by_loop(parts: np.ndarray, ps, step: int, shape, count: int, bits: int) -> dict[tuple, int]:
    """Each word's value from the definition, by a Python loop: ``sum_j (part_j & mask) << bits*j``."""
    words = {}
    for index in np.ndindex(*shape):
        p = sum(int(i) * int(s) for i, s in zip(index, ps, strict=True))
        words[index] = sum((int(parts[p + j * step]) & ((1 << bits) - 1)) << (bits * j) for j in range(count))
    return words


@st.composite
def word_boxes(draw: st.DrawFn, count: int) -> tuple:
    """A 4-D box of words and the ``count`` rows of parts of each, laid out in memory in any
    order (with a gap or not), including the layouts of the kernels' special paths: words of
    each ``i0`` dense (staged), and rows of parts that run on across ``i2`` (``ps[2] == shape[3]``)."""
    shape = [
        draw(st.integers(1, 3)),
        draw(st.integers(1, 3)),
        draw(st.integers(1, 4)),
        draw(st.integers(1, 70)),
    ]
    rows_path = draw(st.booleans())
    if rows_path:  # parts in the order (i0, i1, j, i2, i3): rows run on across i2
        part_order = [0, 1, 4, 2, 3]
    else:
        part_order = draw(st.permutations(range(5)))  # 4: the index j of a part in its word
    gap = draw(st.sampled_from([1, 1, 2]))
    extents = [*shape, count]
    ps5, stride = [0] * 5, gap
    for k in reversed(part_order):
        ps5[k] = stride
        stride *= extents[k]
    if rows_path and draw(st.booleans()):  # words of each i0 dense, in runs along i3: staged
        word_order, first = [0, *draw(st.sampled_from([[2, 1, 3], [1, 2, 3]]))], 1
    else:
        word_order = (
            [0, *draw(st.permutations([1, 2, 3]))] if draw(st.booleans()) else draw(st.permutations(range(4)))
        )
        first = draw(st.sampled_from([1, 1, 3]))
    ws, stride = [0] * 4, first
    for k in reversed(word_order):
        ws[k] = stride
        stride *= shape[k]
    return shape, ps5[:4], ps5[4], stride, ws, draw(st.integers(0, 2**32 - 1))


@pytest.mark.slow
@pytest.mark.parametrize("kernels", [NIBBLES, BYTES, HALVES], ids=["nibbles", "bytes", "halves"])
@settings(max_examples=120)
@given(data=st.data())
def test_word_kernels_match_the_definition_on_every_path(kernels, data) -> None:
    build, split, count, bits = kernels
    shape, ps, step, words_span, ws, seed = data.draw(word_boxes(count))
    rng = np.random.default_rng(seed)
    span = 1 + sum((n - 1) * s for n, s in zip(shape, ps, strict=True)) + (count - 1) * step
    dtype = np.dtype(f"<u{max(1, bits // 8)}")  # bytes, or the 16-bit halves of bf16
    parts = rng.integers(0, 1 << (8 * dtype.itemsize), span, dtype=dtype)  # high nibbles set: ignored
    expected = words_by_loop(parts, ps, step, shape, count, bits)
    shape_a, ws_a, ps_a = (np.array(v, np.int64) for v in (shape, ws, ps))
    dense = copy_engine.is_dense(shape[1:], ws[1:])
    # nibbles and halves: written with non-temporal stores of whole lines or not, at any alignment
    streamed = (data.draw(st.booleans()),) if count in (8, 2) else ()
    shift = data.draw(st.integers(0, 15))
    for staged in (False, True) if dense and ws[0] >= math.prod(shape[1:]) else (False,):
        words = np.full(words_span + 16, 0xA5A5A5A5, np.uint32)[shift : shift + words_span]
        getattr(copy_kernels, build)(words, 0, ws_a, parts, 0, ps_a, step, shape_a, staged, *streamed)
        got = {i: int(words[sum(a * b for a, b in zip(i, ws, strict=True))]) for i in np.ndindex(*shape)}
        assert got == expected, (shape, ps, step, ws, staged)
        back = np.full(span, 0xEE, dtype)
        split_streamed = streamed if count == 8 else ()  # halves are split with plain stores
        getattr(copy_kernels, split)(back, 0, ps_a, step, words, 0, ws_a, shape_a, staged, *split_streamed)
        written = np.zeros(span, bool)
        for index in np.ndindex(*shape):
            p = sum(int(i) * int(s) for i, s in zip(index, ps, strict=True))
            for j in range(count):
                written[p + j * step] = True
                # nibbles zero-extended, as ml_dtypes stores int4 and uint4
                assert back[p + j * step] == (expected[index] >> (bits * j)) & ((1 << bits) - 1)
        assert (back[~written] == 0xEE).all()  # nothing outside the parts was written


@pytest.mark.parametrize("streamed_from", [0, 1 << 40])  # unpack streams past the cache, or not
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    "text",
    [
        "s4[64,384]{1,0:T(8,128)(8,1)E(4)}",  # no padding
        "s4[133,1030]{1,0:T(8,128)(8,1)E(4)}",  # padding in the last tile, both ways
        "u4[133,1030]{1,0:T(8,128)(8,1)E(4)}",
        "s4[130,1030]{1,0:T(64,128)(8,1)E(4)}",
        "u4[197,700]{1,0:T(64,128)(8,1)E(4)}",
    ],
)
def test_s4_and_u4_words_from_strided_inputs_on_one_and_two_threads(
    text, threads, streamed_from, monkeypatch
) -> None:
    # several chunks (so two threads share the work), a strided input and a strided output
    monkeypatch.setattr(copy_engine, "STREAM_MIN_BYTES", streamed_from)
    monkeypatch.setattr(copy_engine, "NIBBLE_STREAM_MIN_BYTES", streamed_from)
    monkeypatch.setattr(stage_walk, "WORD_KERNEL_CHUNK_ELEMENTS", 1 << 14)
    monkeypatch.setattr(stage_walk, "CHUNK_BYTES", 1 << 14)
    m = layout_map(text)
    x = random_array(m, np.random.default_rng(21))
    wide = np.zeros((x.shape[0], 3 * x.shape[1]), x.dtype)
    wide[:, 1::3] = x
    strided = wide[:, 1::3]
    with kernel_calls() as calls:
        fast, slow = both_paths(strided, text, fill=6, threads=threads)
        target = np.zeros((x.shape[0], 2 * x.shape[1]), x.dtype)[:, ::2]
        unpack(fast, text, out=target, threads=threads)
    assert {"words_from_nibbles", "nibbles_from_words"} <= set(calls), sorted(set(calls))
    np.testing.assert_array_equal(fast, slow)
    np.testing.assert_array_equal(fast, reference_pack(x, text, fill=6))
    np.testing.assert_array_equal(raw_bytes(target), raw_bytes(x))


@pytest.mark.parametrize("offset", [0, 1, 16, 48, 63])
@pytest.mark.parametrize(("count", "step"), [(1, 64), (63, 64), (64, 64), (200, 256), (511, 576), (130, 130)])
def test_nibbles_streamed_past_the_cache_match_plain_stores(offset, count, step) -> None:
    # non-temporal stores write the rows' whole 64-byte lines (rows equally aligned: step % 64
    # == 0), plain stores the parts before the first whole line and after the last; at any
    # alignment of the rows and any length, the bytes must be the definition's and nothing
    # else may be written
    rng = np.random.default_rng(offset * 1000 + count)
    words = rng.integers(0, 2**32, count, dtype=np.uint32)
    span = 7 * step + count
    expected = np.full(span, 0xEE, np.uint8)
    for j in range(8):
        expected[j * step : j * step + count] = (words >> np.uint32(4 * j)) & 0xF
    one = np.array([0, 0, 0, 1], np.int64)
    shape = np.array([1, 1, 1, count], np.int64)
    for streamed in (True, False):
        storage = np.full(span + 64 + 64, 0xEE, np.uint8)
        start = (-storage.ctypes.data) % 64 + offset  # the rows start `offset` bytes past a line
        parts = storage[start : start + span]
        copy_kernels.nibbles_from_words(parts, 0, one, step, words, 0, one, shape, False, streamed)
        np.testing.assert_array_equal(parts, expected, err_msg=f"streamed={streamed}")
        assert (storage[:start] == 0xEE).all() and (storage[start + span :] == 0xEE).all()


@pytest.mark.parametrize("offset", [0, 4, 16, 60])
@pytest.mark.parametrize(("count", "step"), [(1, 64), (15, 64), (64, 64), (200, 200), (517, 600)])
def test_words_streamed_past_the_cache_match_plain_stores(offset, count, step) -> None:
    # words built from 8 nibble rows: whole 64-byte lines of words are written with
    # non-temporal stores, the words before the first whole line and after the last plainly
    rng = np.random.default_rng(offset * 1000 + count)
    parts = rng.integers(0, 256, 7 * step + count, dtype=np.uint8)
    expected = np.zeros(count, np.uint32)
    for j in range(8):
        expected |= (parts[j * step : j * step + count].astype(np.uint32) & 0xF) << np.uint32(4 * j)
    one = np.array([0, 0, 0, 1], np.int64)
    shape = np.array([1, 1, 1, count], np.int64)
    for streamed in (True, False):
        storage = np.full(count + 64, 0xA5A5A5A5, np.uint32)
        start = ((-storage.ctypes.data) % 64 + offset) // 4  # words `offset` bytes past a line
        words = storage[start : start + count]
        copy_kernels.words_from_nibbles(words, 0, one, parts, 0, one, step, shape, False, streamed)
        np.testing.assert_array_equal(words, expected, err_msg=f"streamed={streamed}")
        assert (storage[:start] == 0xA5A5A5A5).all() and (storage[start + count :] == 0xA5A5A5A5).all()


@pytest.mark.parametrize("size", [1, 63, 64, 704, 2048, 4096, 4097, 9000])
def test_line_buffers_start_a_page_and_lie_within_one_when_they_fit(size) -> None:
    # a gathering buffer that crosses a page makes its misaligned stores slow (6x for the
    # whole kernel, in a third of the processes): every one starts a page, for any malloc
    for _ in range(50):
        buffer = copy_kernels._line_buffer(size)
        assert buffer.size == size and buffer.dtype == np.uint8
        start = buffer.ctypes.data
        assert start % copy_kernels.PAGE == 0
        assert (
            size > copy_kernels.PAGE or (start + size - 1) // copy_kernels.PAGE == start // copy_kernels.PAGE
        )


def assert_only_the_words_change(build, ws, shape, span, offset, expected, message: str) -> None:
    """``build(words)`` into words ``offset`` bytes past a cache line, inside storage full of
    a marker: every word at ``i . ws`` is ``expected[i]``, and nothing else was written."""
    storage = np.full(span + 32, 0xA5A5A5A5, np.uint32)
    start = ((-storage.ctypes.data) % 64 + offset) // 4
    words = storage[start : start + span]
    build(words)
    got = {i: int(words[sum(a * b for a, b in zip(i, ws, strict=True))]) for i in np.ndindex(*shape)}
    assert got == expected, message
    written = np.zeros(storage.size, bool)
    for i in np.ndindex(*shape):
        written[start + sum(a * b for a, b in zip(i, ws, strict=True))] = True
    assert (storage[~written] == 0xA5A5A5A5).all(), message


@pytest.mark.parametrize("offset", [0, 4, 16, 60])
@pytest.mark.parametrize("dims", [(1, 1, 3), (2, 3, 5), (3, 2, 16), (8, 4, 128), (1, 2, 1100)])
@pytest.mark.parametrize("outer", [1, 2])  # which of i1, i2 steps the farther in the words
def test_staged_nibble_words_streamed_out_match_plain_stores(offset, dims, outer) -> None:
    # the (64,128)(8,1) path: words of each i0 built in a stage in the order of the rows,
    # then written out in runs in the order of memory -- streamed, whole 64-byte lines from
    # a buffer matching the region's lines, the partial lines at the region's ends plainly;
    # at any alignment (regions of under a line, of one, of many) only the words may change
    n1, n2, n3 = dims
    shape = np.array([2, n1, n2, n3], np.int64)
    ps = np.array([8 * n1 * n2 * n3, 8 * n2 * n3, n3, 1], np.int64)  # rows run on across i2
    step = n2 * n3
    inner = 3 - outer
    ws = np.zeros(4, np.int64)
    ws[3], ws[inner], ws[outer] = 1, n3, n3 * shape[inner]
    ws[0] = n1 * n2 * n3 + 3  # a gap between the regions of i0
    rng = np.random.default_rng(offset + 7 * n3 + outer)
    parts = rng.integers(0, 256, 2 * ps[0], dtype=np.uint8)
    expected = words_by_loop(parts, ps, step, shape, 8, 4)
    span = int(ws[0]) + n1 * n2 * n3
    for streamed in (True, False):
        assert_only_the_words_change(
            lambda words, streamed=streamed: copy_kernels.words_from_nibbles(
                words, 0, ws, parts, 0, ps, step, shape, True, streamed
            ),
            ws,
            shape,
            span,
            offset,
            expected,
            f"streamed={streamed}",
        )


@pytest.mark.parametrize("offset", [0, 4, 16, 60])
@pytest.mark.parametrize("dims", [(1, 1, 3), (2, 3, 5), (4, 2, 16), (4, 6, 128), (1, 2, 1100)])
@pytest.mark.parametrize("outer", [1, 2])  # which of i1, i2 steps the farther in the words
def test_halves_streamed_into_whole_lines_match_plain_stores(offset, dims, outer) -> None:
    # the (2,1) path of bf16: the words of each i0 one region (in any order of i1, i2),
    # built in the order of memory into a buffer matching the region's lines and streamed;
    # at any alignment (regions under a line, of one, of many) only the words may change
    n1, n2, n3 = dims
    shape = np.array([3, n1, n2, n3], np.int64)
    ps = np.array([2 * n1 * n2 * n3 + 5, 2 * n2 * n3, n3, 1], np.int64)  # two rows per word
    step = n2 * n3
    inner = 3 - outer
    ws = np.zeros(4, np.int64)
    ws[3], ws[inner], ws[outer] = 1, n3, n3 * shape[inner]
    ws[0] = n1 * n2 * n3 + 2  # a gap between the regions of i0
    rng = np.random.default_rng(offset + 7 * n3 + outer)
    parts = rng.integers(0, 1 << 16, 3 * ps[0], dtype=np.uint16)
    expected = words_by_loop(parts, ps, step, shape, 2, 16)
    span = 2 * int(ws[0]) + n1 * n2 * n3
    for streamed in (True, False):
        assert_only_the_words_change(
            lambda words, streamed=streamed: copy_kernels.words_from_halves(
                words, 0, ws, parts, 0, ps, step, shape, False, streamed
            ),
            ws,
            shape,
            span,
            offset,
            expected,
            f"streamed={streamed}",
        )


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    "text",
    [
        "bf16[299,700]{1,0:T(8,128)(2,1)}",
        "bf16[64,384]{1,0:T(8,128)(2,1)}",
        "f16[130,260]{1,0:T(8,128)(2,1)}",
    ],
)
def test_bf16_words_streamed_past_the_cache_on_one_and_two_threads(text, threads, monkeypatch) -> None:
    # padded last tiles both ways (their edge blocks are not one region: plain stores), and
    # the fill of the padding, with several chunks so that two threads share the work
    monkeypatch.setattr(copy_engine, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(stage_walk, "KERNEL_CHUNK_BYTES", 1 << 14)
    monkeypatch.setattr(stage_walk, "CHUNK_BYTES", 1 << 14)
    x = random_array(layout_map(text), np.random.default_rng(9))
    streams: list[bool] = []
    real = copy_kernels.words_from_halves

    def spy(*args):  # type: ignore[no-untyped-def]
        streams.append(bool(args[9:] and args[9]))
        return real(*args)

    monkeypatch.setattr(copy_kernels, "words_from_halves", spy)
    fast, slow = both_paths(x, text, fill=0x3C, threads=threads)
    assert streams and all(streams), streams
    np.testing.assert_array_equal(fast, slow)
    np.testing.assert_array_equal(fast, reference_pack(x, text, fill=0x3C))


# ------------------------------------------------------------ the engine's thread pool
def test_run_parallel_reuses_its_threads_and_survives_nesting_errors_and_fork() -> None:
    # the calling thread works too, the helpers come from a pool kept for the process: the
    # same threads serve the next call; a call made from inside an item (the pool's threads
    # all busy) still finishes; an error stops the items and is raised; a child process
    # after fork gets a pool of its own
    names: set[str] = set()

    def visit(k: int) -> None:
        names.add(threading.current_thread().name)
        time.sleep(0.002)

    run_parallel(visit, range(20), threads=3)
    assert len(names) >= 2  # the caller and at least one pool thread
    alive = {t.name for t in threading.enumerate()}
    names.clear()
    run_parallel(visit, range(20), threads=3)
    # no thread started for the second call (which of the pool's idle threads serve it is
    # the pool's choice: a pool grown by earlier calls may use others than the first call did)
    assert len(names) >= 2 and names <= alive, (names, alive)

    done = np.zeros((8, 8), np.int64)

    def outer(i: int) -> None:
        run_parallel(lambda j: done.__setitem__((i, j), done[i, j] + 1), range(8), threads=3)

    runner = threading.Thread(target=run_parallel, args=(outer, range(8), 3))
    runner.start()
    runner.join(timeout=30)
    assert not runner.is_alive() and (done == 1).all()

    def fail(k: int) -> None:
        if k == 5:
            raise KeyError("item 5")

    with pytest.raises(KeyError, match="item 5"):
        run_parallel(fail, range(100), threads=3)

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's pool threads do not exist here
        try:
            out = np.zeros(10, np.int64)
            run_parallel(lambda k: out.__setitem__(k, k), range(10), threads=3)
            os.write(write, b"ok" if out.tolist() == list(range(10)) else b"no")
        finally:
            os._exit(0)
    os.close(write)
    deadline = time.monotonic() + 30
    while os.waitpid(pid, os.WNOHANG) == (0, 0):  # a hung child is killed, and fails the test
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            break
        time.sleep(0.01)
    assert os.read(read, 2) == b"ok"
    os.close(read)
