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
from hypothesis import given, settings
from hypothesis import strategies as st
from support.oracles import random_array, raw_bytes, reference_pack

from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.packing import copy_engine, replay
from layout_algebra.packing.numpy_eval import pack, unpack

pytest.importorskip("numba")
from layout_algebra.packing import weave_kernels  # after the skip: it needs numba


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


@settings(max_examples=150, deadline=None)
@given(
    n=st.sampled_from([16, 48, 64, 96, 128, 130, 256]),
    n2=st.integers(1, 6),
    step_lines=st.integers(0, 3),
    step_extra=st.sampled_from([0, 0, 16, 1]),
    shift=st.integers(0, 63),
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
    return bound is not None and bound.__qualname__.startswith("entry_calls.")


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
        x = random_array(m, rng)
        expected = reference_pack(x, text, fill=0x5A)
        np.testing.assert_array_equal(pack(x, text, fill=0x5A, threads=1), expected, err_msg=text)
        x.flags.writeable = False  # a read-only array packs the same
        into = rng.integers(0, 256, m.size_in_bytes, dtype=np.uint8)
        assert pack(x, text, fill=0x5A, out=into, threads=1) is into
        np.testing.assert_array_equal(into, expected, err_msg=text)
        raw = rng.integers(0, 256, m.size_in_bytes + 8, dtype=np.uint8)
        for shift in (1, 2, 4):  # misaligned words (1, 2): the full path; aligned (4): the entry
            out = raw[shift : shift + m.size_in_bytes]
            np.testing.assert_array_equal(pack(x, text, fill=0x5A, out=out, threads=1), expected)
            np.testing.assert_array_equal(raw_bytes(unpack(out, text, threads=1)), raw_bytes(x))
        back = random_array(m, rng)
        assert unpack(expected, text, out=back, threads=1) is back
        np.testing.assert_array_equal(raw_bytes(back), raw_bytes(x), err_msg=text)
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
