"""Words woven by vector shuffles (``layout_algebra.packing.weave_kernels``) and the replay's
compiled entries (``layout_algebra.packing.replay_kernels``), against loops and the index map.

The runs are long enough to take the shuffles (64 words of bytes, 32 of halves) and a ragged
rest, at any offset and row step; nothing outside the parts or the words may be written.
The entries are checked through ``pack``/``unpack`` replays on the word layouts against
``reference_pack`` (positions from ``LayoutMap.apply``), with read-only, misaligned and
``ml_dtypes`` arrays.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support.oracles import random_array, raw_bytes, reference_pack
from support.packing_checks import check_one_thread_round_trip

from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.packing import copy_engine, replay
from layout_algebra.packing.numpy_eval import pack, unpack

pytest.importorskip("numba")
from layout_algebra.packing import copy_kernels, weave_kernels  # after the skip: they need numba


@settings(max_examples=150, deadline=None)
@given(
    halves=st.booleans(),
    n=st.integers(0, 300),
    gap=st.integers(0, 70),
    p=st.integers(0, 40),
    w=st.integers(0, 40),
    seed=st.integers(0, 2**32 - 1),
)
def test_weaving_matches_a_loop_and_writes_nothing_else(halves, n, gap, p, w, seed) -> None:
    count, bits = (2, 16) if halves else (4, 8)
    dtype = np.dtype(np.uint16 if halves else np.uint8)
    step = n + gap  # rows apart (unweaving writes them: they must not overlap)
    rng = np.random.default_rng(seed)
    span = p + (count - 1) * step + n + 3
    parts = rng.integers(0, 1 << bits, span, dtype=dtype)
    words = np.full(w + n + 3, 0xA5A5A5A5, np.uint32)
    weave = weave_kernels.weave_halves if halves else weave_kernels.weave_bytes
    weave(words, w, parts, p, step, n)
    expected = np.zeros(n, np.uint64)
    for j in range(count):
        expected |= parts[p + j * step : p + j * step + n].astype(np.uint64) << np.uint64(bits * j)
    np.testing.assert_array_equal(words[w : w + n], expected.astype(np.uint32))
    assert (words[:w] == 0xA5A5A5A5).all() and (words[w + n :] == 0xA5A5A5A5).all()
    back = np.full(span, 0xEE, dtype)
    unweave = weave_kernels.unweave_halves if halves else weave_kernels.unweave_bytes
    unweave(back, p, step, words, w, n)
    written = np.zeros(span, bool)
    for j in range(count):
        written[p + j * step : p + j * step + n] = True
    np.testing.assert_array_equal(back[written], parts[written])
    assert (back[~written] == 0xEE).all()


#: Runs of words: under a vector, a vector, whole vectors and a ragged rest.
RUN_LENGTHS = st.sampled_from([16, 48, 64, 96, 128, 130, 256])
#: Rows a whole number of lines apart (often), half a line more, or one element more.
STEP_EXTRAS = st.sampled_from([0, 0, 16, 1])
#: Where the first row starts within a cache line.
SHIFTS = st.integers(0, 63)


@settings(max_examples=150, deadline=None)
@given(
    n=RUN_LENGTHS,
    n2=st.integers(1, 6),
    step_lines=st.integers(0, 3),
    step_extra=STEP_EXTRAS,
    shift=SHIFTS,
    w2_extra=st.integers(0, 40),
    seed=st.integers(0, 2**32 - 1),
)
def test_rows_split_with_line_aligned_stores_match_a_loop(
    n, n2, step_lines, step_extra, shift, w2_extra, seed
):
    m = n * n2
    step = max(m, 64 * step_lines) + step_extra  # rows apart (and equally aligned, or not)
    step = -(-step // 64) * 64 + step_extra if step_extra else -(-step // 64) * 64
    w2 = n + w2_extra  # runs of words apart
    rng = np.random.default_rng(seed)
    words = rng.integers(0, 2**32, w2 * n2 + 8, dtype=np.uint32)
    raw = np.full(4 * step + 128, 0xEE, np.uint8)
    start = (-raw.ctypes.data) % 64 + shift  # the rows start anywhere in a cache line
    parts = raw[start : start + 3 * step + m]
    weave_kernels.split_byte_row(parts, 0, step, words, 3, w2, n2, n)
    expected = np.full(parts.size, 0xEE, np.uint8)
    row = np.concatenate([words[3 + i2 * w2 : 3 + i2 * w2 + n] for i2 in range(n2)])
    for j in range(4):
        expected[j * step : j * step + m] = (row >> np.uint32(8 * j)).astype(np.uint8)
    np.testing.assert_array_equal(parts, expected)
    assert (raw[:start] == 0xEE).all() and (raw[start + parts.size :] == 0xEE).all()


@settings(max_examples=150, deadline=None)
@given(
    n=RUN_LENGTHS,
    n1=st.integers(1, 5),
    n2=st.integers(1, 6),
    step_extra=STEP_EXTRAS,
    p1_extra=st.sampled_from([0, 0, 64, 16]),
    shift=SHIFTS,
    w1_extra=st.integers(0, 40),
    w2_extra=st.integers(0, 40),
    seed=st.integers(0, 2**32 - 1),
)
# runs shorter than a vector (not streamed); rows 16 bytes into a line (NumPy's); lines from the start
@example(n=48, n1=2, n2=4, step_extra=0, p1_extra=0, shift=16, w1_extra=0, w2_extra=8, seed=1)
@example(n=128, n1=3, n2=3, step_extra=0, p1_extra=0, shift=16, w1_extra=5, w2_extra=3, seed=2)
@example(n=64, n1=1, n2=2, step_extra=0, p1_extra=64, shift=0, w1_extra=0, w2_extra=0, seed=3)
def test_rows_streamed_side_by_side_match_a_loop_where_they_can_be(
    n, n1, n2, step_extra, p1_extra, shift, w1_extra, w2_extra, seed
):
    """``stream_byte_rows`` writes the ``n1`` groups' rows exactly (and nothing else) whenever
    its stores can start lines: every row equally aligned, 16-word pieces within the runs, two
    vectors a row; else it answers False and writes nothing."""
    m = n * n2
    step = -(-m // 64) * 64 + step_extra  # a group's 4 rows apart
    p1 = 4 * step + p1_extra  # groups apart
    w2 = n + w2_extra  # runs of words apart within a group
    w1 = w2 * n2 + w1_extra  # groups of runs apart
    rng = np.random.default_rng(seed)
    words = rng.integers(0, 2**32, w1 * n1 + 8, dtype=np.uint32)
    raw = np.full(n1 * p1 + 4 * step + 128, 0xEE, np.uint8)
    start = (-raw.ctypes.data) % 64 + shift  # the rows start anywhere in a cache line
    parts = raw[start : start + (n1 - 1) * p1 + 3 * step + m]
    lead = (64 - shift % 64) % 64
    streams = step % 64 == 0 and p1 % 64 == 0 and n % 16 == 0 and lead % 16 == 0 and n >= 64 and m >= 128
    done = weave_kernels.stream_byte_rows(parts, 0, p1, n1, step, words, 3, w1, w2, n2, n)
    assert done == streams, (done, streams)
    expected = np.full(parts.size, 0xEE, np.uint8)
    if streams:
        for i1 in range(n1):
            row = np.concatenate([words[3 + i1 * w1 + i2 * w2 :][:n] for i2 in range(n2)])
            for j in range(4):
                at = i1 * p1 + j * step
                expected[at : at + m] = (row >> np.uint32(8 * j)).astype(np.uint8)
    np.testing.assert_array_equal(parts, expected)
    assert (raw[:start] == 0xEE).all() and (raw[start + parts.size :] == 0xEE).all()


#: Word layouts whose programs are entry calls (whole tiles), and ragged ones (other programs).
WORD_TEXTS = [
    "s8[256,256]{1,0:T(32,128)(4,1)}",
    "s8[64,1024]{1,0:T(32,128)(4,1)}",
    "u8[64,384]{1,0:T(8,128)(4,1)}",
    "pred[256,256]{1,0:T(8,128)(4,1)}",
    "pred[32,640]{1,0:T(8,128)(4,1)}",
    "bf16[128,256]{1,0:T(8,128)(2,1)}",
    "bf16[16,1152]{1,0:T(8,128)(2,1)}",
    "s16[32,256]{1,0:T(8,128)(2,1)}",
    "f16[32,256]{1,0:T(8,128)(2,1)}",
    "f8e4m3fn[64,256]{1,0:T(32,128)(4,1)}",
    "s8[131,259]{1,0:T(32,128)(4,1)}",
    "bf16[9,300]{1,0:T(8,128)(2,1)}",
]


def entry_bound(text: str, x: np.ndarray) -> bool:
    """Whether the kept packing program of ``x`` runs by the compiled entries."""
    from layout_algebra.packing import numpy_eval

    recipe = numpy_eval._RECIPES.get((text, True, x.dtype, x.shape))
    bound = None if recipe is None or recipe.program is None else recipe.program.bound
    from layout_algebra.packing import replay, replay_kernels

    entries = set(replay.entries_of(bound))
    return bool(entries) and entries <= {entry for entry, _, _ in replay_kernels.ENTRIES.values()}


@pytest.mark.skipif(copy_engine.kernels() is None, reason="the kernels need numba")
@pytest.mark.parametrize("text", WORD_TEXTS)
def test_entry_replays_match_the_index_map(text) -> None:
    m = layout_map(text)
    rng = np.random.default_rng(len(text))
    first = random_array(m, rng)
    for _ in range(2):  # the first call plans, the second makes the programs
        unpack(pack(first, text, fill=0x5A, threads=1), text, threads=1)
    whole = not m.has_padding
    assert entry_bound(text, first) == whole, text
    for _ in range(2):
        x, expected = check_one_thread_round_trip(m, text, rng, fill=0x5A)
        np.testing.assert_array_equal(raw_bytes(unpack(expected, text, threads=2)), raw_bytes(x))


@pytest.mark.skipif(copy_engine.kernels() is None, reason="the kernels need numba")
def test_entry_replays_refuse_misaligned_arrays_and_keep_their_errors() -> None:
    text = "bf16[128,256]{1,0:T(8,128)(2,1)}"
    m = layout_map(text)
    rng = np.random.default_rng(5)
    x = random_array(m, rng)
    for _ in range(2):
        unpack(pack(x, text, threads=1), text, threads=1)
    expected = reference_pack(x, text)
    # a logical array whose 16-bit halves are misaligned (its bytes start at an odd address)
    raw = np.zeros(x.nbytes + 2, np.uint8)
    odd = raw[1 : 1 + x.nbytes].view(x.dtype).reshape(x.shape)
    odd[...] = x
    np.testing.assert_array_equal(pack(odd, text, threads=1), expected)
    unpack(expected, text, out=odd, threads=1)
    np.testing.assert_array_equal(raw_bytes(odd), raw_bytes(x))
    with pytest.raises(ValueError, match="out has 3 bytes"):
        pack(x, text, out=np.zeros(3, np.uint8))
    with pytest.raises(ValueError):
        pack(x.view(np.uint16), text, threads=1)
    with pytest.raises(ValueError):
        unpack(expected[:-1], text, threads=1)
    with pytest.raises(ValueError):
        unpack(expected, text, out=np.zeros((128, 255), x.dtype), threads=1)
    assert np.dtype(np.float16).num not in replay.NUMBA_TYPE_NUMS  # numba has no float16 arrays


#: Layouts whose programs are plain copies (no word is built): compiled copies replay them.
COPY_TEXTS = [
    "f32[128,128]{1,0:T(8,128)}",
    "f32[64,384]{1,0:T(8,128)}",
    "u8[16,256]{1,0:T(8,128)}",
    "f16[16,256]{1,0:T(8,128)}",
    "bf16[16,256]{1,0:T(8,128)}",
    "f64[16,256]{1,0:T(8,128)}",
    "c64[8,256]{1,0:T(8,128)}",
    "c128[8,256]{1,0:T(8,128)}",
    "s32[2,3,8,256]{3,2,1,0:T(8,128)}",
    "f32[9,300]{1,0:T(8,128)}",
    "s32[]",
]


@pytest.mark.parametrize("kernels", [True, False])
@pytest.mark.parametrize("text", COPY_TEXTS)
def test_copy_replays_match_the_index_map(text, kernels, monkeypatch) -> None:
    monkeypatch.setattr(copy_engine, "USE_KERNELS", kernels)
    m = layout_map(text)
    rng = np.random.default_rng(len(text))
    first = random_array(m, rng)
    for _ in range(2):
        unpack(pack(first, text, fill=0x33, threads=1), text, threads=1)
    from layout_algebra.packing import numpy_eval

    program = numpy_eval._RECIPES[(text, True, first.dtype, first.shape)].program
    compiled = program is not None and program.bound is not None
    assert compiled == (kernels and not m.has_padding and "c128" not in text), text  # c128: 16 bytes
    for _ in range(2):
        x = random_array(m, rng)
        expected = reference_pack(x, text, fill=0x33)
        np.testing.assert_array_equal(pack(x, text, fill=0x33, threads=1), expected, err_msg=text)
        raw = rng.integers(0, 256, m.size_in_bytes + 16, dtype=np.uint8)
        for shift in (0, 1, 8):  # misaligned elements take the full path
            out = raw[shift : shift + m.size_in_bytes]
            np.testing.assert_array_equal(pack(x, text, fill=0x33, out=out, threads=1), expected)
            np.testing.assert_array_equal(raw_bytes(unpack(out, text, threads=1)), raw_bytes(x))
        back = random_array(m, rng)
        assert unpack(expected, text, out=back, threads=1) is back
        np.testing.assert_array_equal(raw_bytes(back), raw_bytes(x), err_msg=text)


@pytest.mark.parametrize(
    "text",
    [
        "s8[256,256]{1,0:T(32,128)(4,1)}",
        "s8[1024,1024]{1,0:T(32,128)(4,1)}",
        "pred[256,256]{1,0:T(8,128)(4,1)}",
        "bf16[128,256]{1,0:T(8,128)(2,1)}",
        "f32[128,128]{1,0:T(8,128)}",
        "s4[256,512]{1,0:T(8,128)(8,1)E(4)}",
        "s8[131,259]{1,0:T(32,128)(4,1)}",
    ],
)
def test_read_only_arrays_and_buffers_pack_and_unpack_on_every_call(text) -> None:
    """A read-only array packs and a read-only buffer (``np.frombuffer`` of bytes) unpacks, on
    the first call (planning), the second (making the programs) and by replay."""
    m = layout_map(text)
    rng = np.random.default_rng(7)
    for _ in range(4):
        x = random_array(m, rng)
        x.flags.writeable = False
        expected = reference_pack(x, text, fill=0)
        np.testing.assert_array_equal(pack(x, text, threads=1), expected, err_msg=text)
        frozen = np.frombuffer(expected.tobytes(), np.uint8)
        assert not frozen.flags.writeable
        np.testing.assert_array_equal(raw_bytes(unpack(frozen, text, threads=1)), raw_bytes(x), err_msg=text)


@settings(max_examples=120, deadline=None)
@given(
    n=st.integers(0, 400),
    step_lines=st.integers(0, 8),
    step_extra=st.sampled_from([0, 0, 16, 1, 3]),
    shift=st.integers(0, 63),
    w=st.integers(0, 20),
    seed=st.integers(0, 2**32 - 1),
)
def test_runs_split_with_line_aligned_stores_match_a_loop(n, step_lines, step_extra, shift, w, seed) -> None:
    # split_bytes_aligned (the staged rows of s8 and pred): rows equally aligned or not, any
    # start in a line, runs shorter and longer than its head and tail vectors; read-only words
    step = max(n, 64 * step_lines) + step_extra
    rng = np.random.default_rng(seed)
    words = rng.integers(0, 2**32, w + n + 5, dtype=np.uint32)
    words.flags.writeable = False
    raw = np.full(4 * step + n + 128, 0xEE, np.uint8)
    start = (-raw.ctypes.data) % 64 + shift
    parts = raw[start : start + 3 * step + n]
    weave_kernels.split_bytes_aligned(parts, 0, step, words, w, n)
    expected = np.full(parts.size, 0xEE, np.uint8)
    for j in range(4):
        expected[j * step : j * step + n] = (words[w : w + n] >> np.uint32(8 * j)).astype(np.uint8)
    np.testing.assert_array_equal(parts, expected)
    assert (raw[:start] == 0xEE).all() and (raw[start + parts.size :] == 0xEE).all()


def word_strides(shape: list[int], order: list[int], first: int) -> list[int]:
    """Strides of a dense box of ``shape`` laid out in ``order`` (outermost first), ``first``
    elements apart along the innermost of ``order``."""
    strides, stride = [0] * len(shape), first
    for k in reversed(order):
        strides[k] = stride
        stride *= shape[k]
    return strides


@settings(max_examples=100, deadline=None)
@given(
    halves=st.booleans(),
    shape=st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.integers(1, 150)),
    word_order=st.permutations([0, 1, 2]),
    part_order=st.permutations([0, 1, 2]),
    gap=st.integers(0, 9),
    seed=st.integers(0, 2**32 - 1),
)
def test_runs_woven_in_one_loop_nest_match_the_definition(halves, shape, word_order, part_order, gap, seed):
    # the replays' path for a few words (copy_kernels.weave_runs and the like): runs of words
    # and of parts in any order of the outer dims, parts read-only when woven and words when split
    count, bits = (2, 16) if halves else (4, 8)
    dtype = np.dtype(np.uint16 if halves else np.uint8)
    shape = list(shape)
    n = shape[3]
    ws = [*word_strides(shape[:3], word_order, n + gap), 1]
    outer = word_strides(shape[:3], part_order, count * n + gap)  # a word's parts: rows n apart
    ps, step = [*outer, 1], n
    rng = np.random.default_rng(seed)
    p_span = 1 + sum((k - 1) * s for k, s in zip(shape, ps, strict=True)) + (count - 1) * step
    w_span = 1 + sum((k - 1) * s for k, s in zip(shape, ws, strict=True))
    parts = rng.integers(0, 1 << bits, p_span, dtype=dtype)
    parts.flags.writeable = False
    args = [np.array(v, np.int64) for v in (ws, ps, shape)]
    words = np.full(w_span + 3, 0xA5A5A5A5, np.uint32)
    weave = copy_kernels.weave_half_runs if halves else copy_kernels.weave_runs
    weave(words, 1, args[0], parts, 0, args[1], step, args[2])
    written = np.zeros(words.size, bool)
    for i in np.ndindex(*shape):
        p = sum(a * b for a, b in zip(i, ps, strict=True))
        w = 1 + sum(a * b for a, b in zip(i, ws, strict=True))
        expected = sum(int(parts[p + j * step]) << (bits * j) for j in range(count))
        assert int(words[w]) == expected, (i, shape, ws, ps)
        written[w] = True
    assert (words[~written] == 0xA5A5A5A5).all()
    back = np.full(p_span, 0xEE, dtype)
    words.flags.writeable = False
    unweave = copy_kernels.unweave_half_runs if halves else copy_kernels.unweave_runs
    unweave(back, 0, args[1], step, words, 1, args[0], args[2])
    covered = np.zeros(p_span, bool)
    for i in np.ndindex(*shape):
        p = sum(a * b for a, b in zip(i, ps, strict=True))
        covered[p + step * np.arange(count)] = True
    np.testing.assert_array_equal(back[covered], parts[covered])
    assert (back[~covered] == 0xEE).all()


@pytest.mark.parametrize("offset", [0, 4, 16, 60])
@pytest.mark.parametrize("dims", [(1, 1, 3), (2, 3, 5), (8, 2, 16), (8, 4, 128), (1, 2, 1100)])
@pytest.mark.parametrize("outer", [1, 2])  # which of i1, i2 steps the farther in the words
def test_staged_byte_words_streamed_out_match_plain_stores(offset, dims, outer) -> None:
    # the (32,128)(4,1) path of s8 from 8 MB: words of each i0 built in a stage in the order of
    # the rows, written out in the order of memory -- streamed, whole 64-byte lines from a
    # buffer matching the region's lines, the partial lines at the region's ends plainly; at
    # any alignment (regions under a line, of one, of many) only the words may change
    n1, n2, n3 = dims
    shape = np.array([2, n1, n2, n3], np.int64)
    ps = np.array([4 * n1 * n2 * n3 + 3, 4 * n2 * n3, n3, 1], np.int64)  # rows run on across i2
    step = n2 * n3
    inner = 3 - outer
    ws = np.zeros(4, np.int64)
    ws[3], ws[inner], ws[outer] = 1, n3, n3 * shape[inner]
    ws[0] = n1 * n2 * n3 + 3  # a gap between the regions of i0
    rng = np.random.default_rng(offset + 7 * n3 + outer)
    parts = rng.integers(0, 256, 2 * ps[0], dtype=np.uint8)
    parts.flags.writeable = False
    span = int(ws[0]) + n1 * n2 * n3
    results = []
    for streamed in (True, False):
        storage = np.full(span + 32, 0xA5A5A5A5, np.uint32)
        start = ((-storage.ctypes.data) % 64 + offset) // 4
        words = storage[start : start + span]
        copy_kernels.words_from_bytes(words, 0, ws, parts, 0, ps, step, shape, True, streamed)
        written = np.zeros(storage.size, bool)
        for i in np.ndindex(*shape):
            w = sum(a * b for a, b in zip(i, ws, strict=True))
            p = sum(a * b for a, b in zip(i, ps, strict=True))
            expected = sum(int(parts[p + j * step]) << (8 * j) for j in range(4))
            assert int(words[w]) == expected, (streamed, i)
            written[start + w] = True
        assert (storage[~written] == 0xA5A5A5A5).all(), streamed
        results.append(words.copy())
    np.testing.assert_array_equal(results[0], results[1])


@pytest.mark.skipif(copy_engine.kernels() is None, reason="the kernels need numba")
@pytest.mark.parametrize(
    "text",
    [
        "s8[256,512]{1,0:T(32,128)(4,1)}",
        "pred[128,1024]{1,0:T(8,128)(4,1)}",
        "bf16[128,512]{1,0:T(8,128)(2,1)}",
        "s8[131,600]{1,0:T(32,128)(4,1)}",
    ],
)
def test_large_one_thread_calls_replay_staged_and_streamed_programs(text, monkeypatch) -> None:
    # from PARALLEL_MIN_BYTES, one-thread calls replay a program too (the default, every CPU,
    # takes the full path); here with the words staged and streamed as at 16 MB and more
    from layout_algebra.packing import fresh_memory, numpy_eval, stage_walk

    monkeypatch.setattr(copy_engine, "PARALLEL_MIN_BYTES", 1 << 16)
    monkeypatch.setattr(copy_engine, "STAGED_MIN_BYTES", 1 << 14)
    monkeypatch.setattr(copy_engine, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(stage_walk, "KERNEL_CHUNK_BYTES", 1 << 15)
    monkeypatch.setattr(stage_walk, "CHUNK_BYTES", 1 << 15)
    m = layout_map(text)
    rng = np.random.default_rng(len(text))
    first = random_array(m, rng)
    for _ in range(2):
        unpack(pack(first, text, fill=0x5A, threads=1), text, threads=1)
    assert numpy_eval._RECIPES[(text, True, first.dtype, first.shape)].program is not None
    # (unpacking the ragged layout's edge blocks has no program: the full path, checked too)
    assert (numpy_eval._RECIPES[(text, False)].program is not None) == (not m.has_padding)
    assert m.size_in_bytes >= copy_engine.PARALLEL_MIN_BYTES
    x = random_array(m, rng)
    x.flags.writeable = False
    expected = reference_pack(x, text, fill=0x5A)
    np.testing.assert_array_equal(pack(x, text, fill=0x5A, threads=1), expected, err_msg=text)
    assert not fresh_memory._results  # the new buffer (its words stored plainly) forgotten after the call
    into = rng.integers(0, 256, m.size_in_bytes, dtype=np.uint8)
    assert pack(x, text, fill=0x5A, out=into, threads=1) is into
    np.testing.assert_array_equal(into, expected, err_msg=text)
    np.testing.assert_array_equal(pack(x, text, fill=0x5A), expected, err_msg=text)  # two threads
    frozen = np.frombuffer(expected.tobytes(), np.uint8)
    np.testing.assert_array_equal(raw_bytes(unpack(frozen, text, threads=1)), raw_bytes(x), err_msg=text)
    back = random_array(m, rng)
    assert unpack(expected, text, out=back, threads=1) is back
    np.testing.assert_array_equal(raw_bytes(back), raw_bytes(x), err_msg=text)
    np.testing.assert_array_equal(raw_bytes(unpack(expected, text)), raw_bytes(x), err_msg=text)
