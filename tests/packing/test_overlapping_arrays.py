"""A result written over its own input: ``pack(x, out=...)`` and ``unpack(buf, out=...)`` where
``out`` shares memory with the array read.

A relayout that reads one array while writing the other would read bytes it has already
overwritten; the result must instead be as if the input had been copied first. Every call here
puts the input's bytes back before it runs (the previous call overwrote them) and compares the
result with the element-by-element oracle (``reference_pack``) on a copy of the input. Each
shape is called three times in a row over its own input, with the compiled kernels and without,
on one thread and on every CPU (no program is made from such a call), then once more after
three calls on arrays apart have made its program: the replayed entries answer "not here" for
arrays that share memory (``replay_kernels.apart``), and the full path reads the input from a
copy. The offsets between
the two arrays cover the same start, the output a little after or before the input, and arrays
that only touch (one ends where the other starts: these do not overlap, and the replay runs).
"""

from __future__ import annotations

import numpy as np
import pytest
from support.oracles import random_array, raw_bytes, reference_pack

from layout_algebra.meaning.layout_map import LayoutMap, layout_map
from layout_algebra.packing import copy_engine, numpy_eval
from layout_algebra.packing.numpy_eval import pack, unpack

HAS_NUMBA = copy_engine.kernels() is not None

#: One shape of each kind of program: words of bytes, nibbles and halves, transposes, plain
#: tile copies, padding, odd-sized slots; and one large enough to run in parts (1 MB).
SHAPES = [
    "s8[64,256]{1,0:T(32,128)(4,1)}",
    "s4[16,512]{1,0:T(8,128)(8,1)E(4)}",
    "bf16[24,256]{1,0:T(8,128)(2,1)}",
    "f32[128,64]{0,1:T(8,128)}",
    "f32[16,256]{1,0:T(8,128)}",
    "pred[20,200]{1,0:T(8,128)(4,1)}",
    "f8e5m2[256,128]{0,1:T(8,128)(4,1)}",
    "u8[6,10]{0,1:L(3)}",
    "s8[1024,1024]{1,0:T(32,128)(4,1)}",
]
#: Where the output starts, in bytes from the input's start (multiples of 8: aligned for every
#: dtype here); "after" and "before" put it a quarter of the smaller array away.
OFFSETS = ["same", "after", "before"]


def _shift(offset: str, a: int, b: int) -> int:
    step = max(8, min(a, b) // 4 // 8 * 8)
    return {"same": 0, "after": step, "before": -step}[offset]


def _places(first: int, second: int, shift: int) -> tuple[int, int, int]:
    """Byte offsets of two arrays of ``first`` and ``second`` bytes in one block, the second
    ``shift`` bytes after the first (before it if negative), and the block's size."""
    lo = max(0, -shift)
    return lo, lo + shift, lo + max(first, shift + second) + 64


def every_case(test):  # type: ignore[no-untyped-def]
    """``test`` for each shape, offset, with numba's kernels and without, on one thread and all."""
    for name, values in (
        ("threads", [1, None]),
        ("kernels", [True, False] if HAS_NUMBA else [False]),
        ("offset", OFFSETS),
        ("text", SHAPES),
    ):
        test = pytest.mark.parametrize(name, values)(test)
    return test


def started(monkeypatch, text: str, kernels: bool, seed: int) -> tuple[LayoutMap, np.ndarray]:
    """No recipe kept, the kernels in use or not; the layout map and a random array of ``text``."""
    monkeypatch.setattr(copy_engine, "USE_KERNELS", kernels)
    if kernels:
        copy_engine.start_kernels()
    numpy_eval.forget_recipes()
    m = layout_map(text)
    return m, random_array(m, np.random.default_rng(seed))


@every_case
def test_pack_over_its_own_input(monkeypatch, text, offset, kernels, threads) -> None:
    m, x0 = started(monkeypatch, text, kernels, len(text))
    fill = 0x5A % (1 << min(m.element_bits, 8))  # a slot's bits
    expected = reference_pack(x0, text, fill=fill)
    size = m.size_in_bytes
    at_x, at_out, total = _places(x0.nbytes, size, _shift(offset, x0.nbytes, size))
    raw = np.zeros(total, np.uint8)
    x = raw[at_x : at_x + x0.nbytes].view(x0.dtype).reshape(x0.shape)
    out = raw[at_out : at_out + size]
    assert np.shares_memory(x, out)
    for call in range(3):
        raw[at_x : at_x + x0.nbytes] = x0.reshape(-1).view(np.uint8)  # the input back
        assert pack(x, text, fill=fill, out=out, threads=threads) is out
        np.testing.assert_array_equal(out, expected, err_msg=f"{text} {offset} call {call}")
    numpy_eval.forget_recipes()  # a program made on arrays apart, then a call over its input
    for _ in range(3):
        np.testing.assert_array_equal(pack(x0, text, fill=fill, threads=threads), expected)
    raw[at_x : at_x + x0.nbytes] = x0.reshape(-1).view(np.uint8)
    assert pack(x, text, fill=fill, out=out, threads=threads) is out
    np.testing.assert_array_equal(out, expected, err_msg=f"{text} {offset} after a program")


@every_case
def test_unpack_over_its_own_input(monkeypatch, text, offset, kernels, threads) -> None:
    m, x0 = started(monkeypatch, text, kernels, len(text) + 1)
    packed = reference_pack(x0, text, fill=0xA5 % (1 << min(m.element_bits, 8)))
    size = m.size_in_bytes
    at_buf, at_out, total = _places(size, x0.nbytes, _shift(offset, size, x0.nbytes))
    raw = np.zeros(total, np.uint8)
    buf = raw[at_buf : at_buf + size]
    out = raw[at_out : at_out + x0.nbytes].view(x0.dtype).reshape(x0.shape)
    assert np.shares_memory(buf, out)
    for call in range(3):
        buf[:] = packed  # the input back
        assert unpack(buf, text, out=out, threads=threads) is out
        np.testing.assert_array_equal(raw_bytes(out), raw_bytes(x0), err_msg=f"{text} {offset} call {call}")
    numpy_eval.forget_recipes()  # a program made on arrays apart, then a call over its input
    for _ in range(3):
        np.testing.assert_array_equal(raw_bytes(unpack(packed, text, threads=threads)), raw_bytes(x0))
    buf[:] = packed
    assert unpack(buf, text, out=out, threads=threads) is out
    np.testing.assert_array_equal(raw_bytes(out), raw_bytes(x0), err_msg=f"{text} {offset} after a program")


@pytest.mark.skipif(not HAS_NUMBA, reason="the kernels need numba")
@pytest.mark.parametrize("text", SHAPES[:7])
def test_arrays_that_only_touch_are_replayed(text) -> None:
    """The output right after the input (or the input right after the output): no byte in
    both, so the third call replays the program, with the oracle's bytes."""
    copy_engine.start_kernels()
    numpy_eval.forget_recipes()
    m = layout_map(text)
    rng = np.random.default_rng(3)
    x0 = random_array(m, rng)
    expected = reference_pack(x0, text, fill=0)
    size = m.size_in_bytes
    raw = np.zeros(x0.nbytes + size + 64, np.uint8)
    x = raw[: x0.nbytes].view(x0.dtype).reshape(x0.shape)
    x[...] = x0
    out = raw[x0.nbytes : x0.nbytes + size]
    assert not np.shares_memory(x, out)
    for _ in range(2):  # a plan, then a program
        pack(x, text, out=out, threads=1)
    replay = numpy_eval._REPLAYS.get((text, True, x.dtype, x.shape))
    assert replay is not None, text
    assert replay(x, 0, out, 1) is out, f"{text}: not replayed"
    np.testing.assert_array_equal(out, expected)
    back = raw[size : size + x0.nbytes].view(x0.dtype).reshape(x0.shape)  # the other way round
    raw[:size] = expected
    for _ in range(2):
        unpack(raw[:size], text, out=back, threads=1)
    replay = numpy_eval._REPLAYS.get((text, False))
    assert replay is not None, text
    raw[:size] = expected
    assert replay(raw[:size], back, 0, 1) is back, f"{text}: not replayed unpacking"
    np.testing.assert_array_equal(raw_bytes(back), raw_bytes(x0))
