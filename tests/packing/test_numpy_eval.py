"""The NumPy evaluator: pack/unpack agree with the layout map, bit for bit, for every element type.

Two independent references are used:

* the layout map's own offsets (``LayoutMap.forward(index, unit="bit")``), element by
  element, read back from the packed buffer through ``np.unpackbits`` (a bit stream reader
  that knows nothing of the evaluator);
* a whole-array reference built from ``LayoutMap.apply`` on index arrays (every element's
  position at once) and fancy indexing, for shapes too large to walk element by element.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.oracles import bits_of, fill_stream, random_array, raw_bytes, reference_pack
from support.strategies_maps import small_layout_shapes

import layout_algebra as la
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.model.primitive_types import PrimitiveType, primitive_type
from layout_algebra.packing import copy_engine, formats, lanes, odd_slots, stage_walk
from layout_algebra.packing.formats import numpy_dtype
from layout_algebra.packing.numpy_eval import pack, unpack
from layout_algebra.packing.threads import run_parallel

#: Every element type with a NumPy dtype, stored in whole bytes (no E(n)).
WHOLE_BYTE_CASES = tuple(
    (t.text, 0) for t in PrimitiveType if t.is_array_type and t.text not in ("token", "opaque")
)
#: Sub-byte packing, E(n) equal to the type's bit width; and E(n) spelled out for whole bytes.
PACKED_CASES = (
    ("s4", 4),
    ("u4", 4),
    ("f4e2m1fn", 4),
    ("s2", 2),
    ("u2", 2),
    ("pred", 1),
    ("s4", 8),
    ("pred", 8),
    ("s8", 8),
    ("bf16", 16),
)
#: Slots of other sizes (XLA's E(n) sizes the slot; the element's stored bits sit at its low end).
ODD_SIZE_CASES = (
    ("s4", 5),
    ("u4", 7),
    ("f4e2m1fn", 6),
    ("s2", 3),
    ("pred", 2),
    ("s4", 12),
    ("s8", 12),
    ("bf16", 24),
    ("f32", 40),
    ("u8", 16),
)
#: s1/u1 need ml_dtypes 0.6 (int1/uint1); with an older one, pack names what is missing (tested below).
HAS_INT1 = hasattr(ml_dtypes, "int1")
ONE_BIT_CASES = (("s1", 1), ("u1", 1))
ALL_CASES = tuple(
    case
    for case in WHOLE_BYTE_CASES + PACKED_CASES + ODD_SIZE_CASES + ONE_BIT_CASES
    if HAS_INT1 or case[0] not in ("s1", "u1")
)


def packable_shapes(max_slots: int = 2048) -> st.SearchStrategy:
    """Any element type under a random layout; half of the draws are non-empty arrays of rank >= 2."""
    shapes = st.sampled_from(ALL_CASES).flatmap(lambda e: small_layout_shapes(element=e, max_slots=max_slots))
    return st.one_of(shapes, shapes.filter(lambda s: s.rank >= 2 and 0 not in s.dimensions))


def digit_base(m) -> int:
    """How many distinct values an element can safely carry in the tests (all valid bit patterns)."""
    if m.shape.element_type is PrimitiveType.PRED:
        return 2
    return 1 << min(m.element_bits, 8 * numpy_dtype(m.shape.element_type).itemsize, 16)


def array_of_codes(codes: np.ndarray, dims: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An array whose elements' low 16 bits are ``codes`` (little-endian), other bits zero."""
    raw = np.zeros((codes.size, dtype.itemsize), np.uint8)
    raw[:, 0] = codes & 0xFF
    if dtype.itemsize > 1:
        raw[:, 1] = codes >> 8
    return raw.view(dtype).reshape(dims)


# -------------------------------------------------------------- positions, padding
@pytest.mark.slow
@settings(max_examples=150)
@given(shape=packable_shapes(), fill_seed=st.integers(0, 2**16))
def test_every_element_is_at_its_layout_map_bit_offset_and_padding_is_fill(shape, fill_seed) -> None:
    m = layout_map(shape)
    dtype = numpy_dtype(shape.element_type)
    bits = m.element_bits
    fill = fill_seed % (1 << min(bits, 8))
    elements = list(m.elements())
    base = digit_base(m)
    # element k carries k+1, written in base `base`, one digit per pack (pred: 1 bit a pack)
    codes = np.arange(1, len(elements) + 1)
    digits = 1
    while base**digits <= len(elements):
        digits += 1
    for d in range(digits):
        digit = (codes // base**d) % base
        buf = pack(array_of_codes(digit, m.logical_dimensions, dtype), shape, fill=fill)
        assert buf.dtype == np.uint8 and buf.shape == (m.size_in_bytes,)
        expected = fill_stream(m, fill)
        for k, index in enumerate(elements):
            offset = m.forward(index, unit="bit")
            expected[offset : offset + bits] = bits_of(int(digit[k]), bits)
        np.testing.assert_array_equal(np.unpackbits(buf, bitorder="little"), expected, err_msg=str(shape))


# -------------------------------------------------------------------- round trips
@pytest.mark.slow
@settings(max_examples=200)
@given(shape=packable_shapes(), seed=st.integers(0, 2**32 - 1))
def test_unpack_of_pack_is_the_array_bitwise_and_pack_matches_the_index_map(shape, seed) -> None:
    m = layout_map(shape)
    x = random_array(m, np.random.default_rng(seed))
    buf = pack(x, shape, fill=1)
    np.testing.assert_array_equal(buf, reference_pack(x, str(shape), fill=1), err_msg=str(shape))
    staging = np.full(buf.size, 0x5A, np.uint8)  # pack(out=) writes every byte of it
    assert pack(x, shape, fill=1, out=staging) is staging
    np.testing.assert_array_equal(staging, buf, err_msg=str(shape))
    y = unpack(buf, shape)
    assert y.dtype == x.dtype and y.shape == x.shape and y.flags.c_contiguous
    np.testing.assert_array_equal(raw_bytes(y), raw_bytes(x), err_msg=str(shape))
    # into an array full of other bits, Fortran order: every element is written
    z = np.array(random_array(m, np.random.default_rng(seed + 1)), order="F")
    assert unpack(buf, shape, out=z) is z
    np.testing.assert_array_equal(raw_bytes(z), raw_bytes(x), err_msg=str(shape))


@pytest.mark.slow
@pytest.mark.parametrize(
    "text",
    [
        "f32[300,1000]{1,0:T(8,128)}",  # several chunks, no padding in rows, padding in columns
        "f32[301,1000]{0,1:T(8,128)}",
        "bf16[299,700]{1,0:T(8,128)(2,1)}",
        "s8[130,900]{1,0:T(32,128)(4,1)}",
        "s4[257,1030]{1,0:T(8,128)(8,1)E(4)}",
        "s4[130,1030]{1,0:T(64,128)(8,1)E(4)}",  # a partial tile of 64 rows: padding in the words
        "u2[100,300]{1,0:T(16,128)(16,1)E(2)}",  # four 2-bit codes a byte, words of 4 bytes
        "pred[64,300]{1,0:T(32,128)(32,1)E(1)}",  # eight 1-bit codes a byte
        "f32[1001,1030]{0,1:T(8,128)}",  # transposing copies done block by block, padding both ways
        "bf16[1001,1030]{0,1:T(8,128)(2,1)}",
        "c128[300,200]{0,1}",  # 16-byte elements, no tiles
        "s4[1000,999]{1,0:E(4)}",  # rows of an odd number of nibbles: chunks of two rows
        "pred[700,1001]{0,1:E(1)}",
        "u2[3,50001]{1,0:E(2)}",
        "c128[70,300]{1,0:T(2,128)}",
        "f16[5,7,300,200]{3,2,0,1:T(8,128)(2,1)L(1024)}",
        "u8[4000]{0:T(1024)(128)(4,1)}",
    ],
)
def test_large_shapes_match_the_index_map_reference_and_round_trip(text: str) -> None:
    m = layout_map(text)
    x = random_array(m, np.random.default_rng(7))
    buf = pack(x, text, fill=1)
    np.testing.assert_array_equal(buf, reference_pack(x, text, fill=1))
    np.testing.assert_array_equal(raw_bytes(unpack(buf, text)), raw_bytes(x))


def test_nan_payloads_and_signed_zeros_survive() -> None:
    bits = np.array([0x7F800001, 0xFFC00123, 0x80000000, 0x7FC00000], np.uint32)
    x = bits.view(np.float32).reshape(2, 2)
    text = "f32[2,2]{0,1:T(8,128)}"
    np.testing.assert_array_equal(unpack(pack(x, text), text).view(np.uint32), x.view(np.uint32))


def test_non_contiguous_and_big_endian_arrays_are_packed_by_value() -> None:
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    text = "f32[6,4]{1,0:T(2,2)}"
    np.testing.assert_array_equal(pack(x.T, text), pack(np.ascontiguousarray(x.T), text))
    big = np.arange(6, dtype=">i4").reshape(2, 3)
    np.testing.assert_array_equal(pack(big, "s32[2,3]"), np.arange(6, dtype="<i4").view(np.uint8))


def test_a_combine_that_numpy_must_copy_is_written_back_when_unpacking() -> None:
    # physical order (4, 3, 2) is a transposed view; '*' merges its 3 and 2: not a view
    text = "f32[2,3,4]{0,1,2:T(*,4)}"
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    buf = pack(x, text)
    np.testing.assert_array_equal(buf, reference_pack(x, text))
    out = np.full((2, 3, 4), -1, np.float32)
    np.testing.assert_array_equal(unpack(buf, text, out=out), x)


def test_scalars_and_empty_arrays() -> None:
    assert pack(np.float32(1.5), "f32[]").view(np.float32).tolist() == [1.5]
    assert unpack(pack(np.array(-3, ml_dtypes.int4), "s4[]{:E(4)}"), "s4[]{:E(4)}") == -3
    assert pack(np.array(5, np.int8), "s8[]{:T(4)}", fill=7).tolist() == [5, 7, 7, 7]
    empty = np.zeros((0, 5), np.float32)
    assert pack(empty, "f32[0,5]{1,0:T(8,128)}").size == 0
    assert unpack(np.zeros(0, np.uint8), "f32[0,5]{1,0:T(8,128)}").shape == (0, 5)


# ---------------------------------------------------------- the TPU formats, by hand
def test_bf16_8_128_2_1_puts_rows_2k_and_2k_plus_1_of_a_column_in_one_word() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 256)).astype(ml_dtypes.bfloat16)
    words = (
        pack(x, "bf16[16,256]{1,0:T(8,128)(2,1)}").view("<u4").reshape(2, 2, 4, 128)
    )  # [tr, tc, pair, col]
    bits = x.view(np.uint16).astype(np.uint32)
    for tr in range(2):
        for tc in range(2):
            for pair in range(4):
                rows = 8 * tr + 2 * pair
                cols = slice(128 * tc, 128 * tc + 128)
                np.testing.assert_array_equal(words[tr, tc, pair] & 0xFFFF, bits[rows, cols])
                np.testing.assert_array_equal(words[tr, tc, pair] >> 16, bits[rows + 1, cols])


def test_s8_32_128_4_1_puts_four_rows_of_a_column_in_one_word() -> None:
    x = np.random.default_rng(1).integers(-128, 128, (64, 128)).astype(np.int8)
    quads = pack(x, "s8[64,128]{1,0:T(32,128)(4,1)}").reshape(2, 8, 128, 4)  # [tile, quad, col, byte]
    for tile in range(2):
        for quad in range(8):
            for byte in range(4):
                np.testing.assert_array_equal(
                    quads[tile, quad, :, byte], x[32 * tile + 4 * quad + byte].view(np.uint8)
                )


def test_s4_with_e4_packs_two_per_byte_first_in_the_low_nibble() -> None:
    x = np.array([[1, -2, 3], [-8, 7, 0]], ml_dtypes.int4)
    buf = pack(x, "s4[2,3]{1,0:E(4)}")
    assert [hex(b) for b in buf] == ["0xe1", "0x83", "0x7"]
    assert pack(x, "s4[2,3]{1,0}").tolist() == [1, 14, 3, 8, 7, 0]  # no E(4): one byte each
    five = np.array([1, -2, 3, -8, 7], ml_dtypes.int4)  # 5 nibbles: the last one is padding
    assert pack(five, "s4[5]{0:E(4)}", fill=0xA).tolist() == [0xE1, 0x83, 0xA7]
    np.testing.assert_array_equal(unpack(buf, "s4[2,3]{1,0:E(4)}"), x)


def test_s4_tpu_format_8_128_8_1_puts_eight_rows_in_a_word() -> None:
    x = np.random.default_rng(2).integers(-8, 8, (8, 128)).astype(ml_dtypes.int4)
    words = pack(x, "s4[8,128]{1,0:T(8,128)(8,1)E(4)}").view("<u4")
    nibbles = x.view(np.uint8).astype(np.uint32) & 0xF
    expected = sum(nibbles[r] << (4 * r) for r in range(8))
    np.testing.assert_array_equal(words, expected)


def test_s4_with_e5_puts_each_nibble_at_the_low_end_of_a_five_bit_slot() -> None:
    # XLA's E(n) sizes the slot (ShapeUtil::ArraySize: ceil(count*n/8) bytes); the 4-bit value
    # sits in the slot's low bits, as XLA keeps an unpacked s4 in the low bits of a byte
    x = np.array([1, -2, 3, -4, 5, -8], ml_dtypes.int4)  # codes 0001 1110 0011 1100 0101 1000
    buf = pack(x, "s4[6]{0:E(5)}", fill=0b10101)
    assert buf.size == 4 == layout_map("s4[6]{0:E(5)}").size_in_bytes  # ceil(6*5/8)
    stream = "000010111000011011000010101000"  # slots, each written high bit first
    bits = [int(c) for slot in (stream[k : k + 5] for k in range(0, 30, 5)) for c in reversed(slot)]
    bits += [1, 0]  # after the last slot: the first bits of a padding slot (fill 10101, lowest first)
    assert np.unpackbits(buf, bitorder="little").tolist() == bits
    np.testing.assert_array_equal(unpack(buf, "s4[6]{0:E(5)}"), x)
    assert (
        pack(x.view(np.uint8).astype(ml_dtypes.uint4), "u4[6]{0:E(5)}", fill=0b10101).tolist() == buf.tolist()
    )


def test_odd_slot_sizes_on_several_threads_and_chunks_match_the_reference(monkeypatch) -> None:
    monkeypatch.setattr(odd_slots, "_ODD_CHUNK_ELEMENTS", 40)  # many chunks, several ending mid-byte
    monkeypatch.setattr(odd_slots, "_ODD_TRANSPOSING_CHUNK_ELEMENTS", 56)
    for text in [
        "s4[37,29]{0,1:T(8,4)E(5)}",
        "pred[50,21]{1,0:T(4,8)L(7)E(3)}",
        "bf16[19,33]{1,0:T(8,8)E(24)}",
        "f32[9,7]{0,1:E(40)}",  # every bit of 32-bit and 64-bit elements, one at a time
        "s64[5,3]{1,0:E(67)}",
    ]:
        m = layout_map(text)
        x = random_array(m, np.random.default_rng(3))
        expected = reference_pack(x, text, fill=5)
        for threads in (1, 3):
            buf = pack(x, text, fill=5, threads=threads)
            np.testing.assert_array_equal(buf, expected, err_msg=text)
            np.testing.assert_array_equal(raw_bytes(unpack(buf, text, threads=threads)), raw_bytes(x))


@pytest.mark.parametrize("seed", range(12))
def test_random_odd_slot_sizes_match_the_reference(seed, monkeypatch) -> None:
    # any slot size E against the index map's bit positions: slots as wide as the element or
    # wider, across 64-bit words and past 64 bits, padded tiles, small chunks
    rng = np.random.default_rng(seed)
    for name in ("_ODD_CHUNK_ELEMENTS", "_ODD_TRANSPOSING_CHUNK_ELEMENTS"):
        monkeypatch.setattr(odd_slots, name, int(rng.choice([24, 40, 1 << 16])))
    types = {"pred": 1, "s4": 4, "u2": 2, "s8": 8, "bf16": 16, "f32": 32, "s64": 64}
    name = str(rng.choice(list(types)))
    bits = int(rng.integers(types[name], types[name] + 70))
    dims = [int(rng.integers(1, 14)) for _ in range(int(rng.integers(1, 4)))]
    order = ",".join(str(k) for k in rng.permutation(len(dims)))
    tile = f"T({','.join(str(int(rng.integers(1, 6))) for _ in dims)})" if rng.random() < 0.6 else ""
    text = f"{name}[{','.join(map(str, dims))}]{{{order}:{tile}E({bits})}}"
    m = layout_map(text)
    x = random_array(m, rng)
    fill = int(rng.integers(0, 256))
    expected = reference_pack(x, text, fill=fill)
    for threads in (1, 3):
        buf = pack(x, text, fill=fill, threads=threads)
        np.testing.assert_array_equal(buf, expected, err_msg=text)
        np.testing.assert_array_equal(
            raw_bytes(unpack(buf, text, threads=threads)), raw_bytes(x), err_msg=text
        )


@pytest.mark.parametrize(
    "text",
    [
        "f32[37,300]{1,0:T(8,128)}",  # padded rows and columns
        "bf16[19,130]{1,0:T(8,128)(2,1)}",
        "f32[13,17]{0,1:T(4,8)}",  # transposing, padded both ways
        "s8[33,129]{1,0:T(32,128)(4,1)}",
        "c64[5,9,7]{2,0,1:T(2,4)L(64)}",
        "f16[3,5,30,20]{3,2,0,1:T(8,16)(2,1)}",
        "u8[300]{0:T(128)(4,1)L(512)}",
    ],
)
def test_padded_layouts_in_many_chunks_write_fill_into_every_padding_byte_of_out(
    monkeypatch, text: str
) -> None:
    # pack writes the fill only where no block lands (each byte once): with chunks of a few
    # hundred bytes, most chunks meet the padding in other ways; an ``out`` full of other bytes
    # shows any padding byte left unwritten
    for name in ("CHUNK_BYTES", "KERNEL_CHUNK_BYTES", "TRANSPOSING_CHUNK_BYTES"):
        monkeypatch.setattr(stage_walk, name, 256)
    m = layout_map(text)
    x = random_array(m, np.random.default_rng(11))
    expected = reference_pack(x, text, fill=0xC3)
    for threads in (1, 2):
        out = np.full(expected.size, 0x5A, np.uint8)
        pack(x, text, fill=0xC3, threads=threads, out=out)
        np.testing.assert_array_equal(out, expected, err_msg=text)


@pytest.mark.slow
def test_the_hlo_executor_runs_s4_with_e5_exactly() -> None:
    from layout_algebra.hlo.execute import run
    from layout_algebra.hlo.execute_compare import compare

    module = """HloModule m
ENTRY e {
  p = s4[4,6]{1,0:E(5)} parameter(0)
  ROOT c = s4[6,4]{0,1:E(5)} transpose(p), dimensions={1,0}
}"""
    x = np.arange(24).reshape(4, 6).astype(np.int8).astype(ml_dtypes.int4)
    out = run(module, [x])
    np.testing.assert_array_equal(out.array, x.T)
    np.testing.assert_array_equal(out.data, reference_pack(x.T, "s4[6,4]{0,1:E(5)}"))
    # {0,1} bytes of the transpose are the {1,0} bytes of x: a bitcast, also at 5 bits a slot
    assert compare(module, module.replace("transpose(p), dimensions={1,0}", "bitcast(p)")).same is True
    # a 5-bit slot is not a 4-bit one: the 15 bytes read as 30 nibbles, lowest bits first
    nibbles = module.replace(
        "ROOT c = s4[6,4]{0,1:E(5)} transpose(p), dimensions={1,0}", "ROOT c = s4[30]{0:E(4)} bitcast(p)"
    )
    stream = np.unpackbits(reference_pack(x, "s4[4,6]{1,0:E(5)}"), bitorder="little").reshape(30, 4)
    codes = (stream << np.arange(4)).sum(axis=1).astype(np.uint8)
    out = run(nibbles, [x])
    assert out.defined.all()
    np.testing.assert_array_equal(out.array.view(np.uint8) & 0xF, codes)


def test_pred_with_e1_packs_eight_per_byte_little_endian() -> None:
    x = np.array([1, 0, 1, 1, 0, 0, 0, 0, 1, 1], bool)
    assert pack(x, "pred[10]{0:E(1)}").tolist() == [0b00001101, 0b00000011]
    assert pack(x, "pred[10]{0:E(1)}", fill=1).tolist() == [0b00001101, 0b11111111]
    assert pack(x, "pred[10]").tolist() == x.astype(np.uint8).tolist()


def test_every_supported_type_has_its_ml_dtypes_or_numpy_dtype() -> None:
    assert numpy_dtype("bf16") == np.dtype(ml_dtypes.bfloat16)
    assert numpy_dtype("f8e4m3fn") == np.dtype(ml_dtypes.float8_e4m3fn)
    assert numpy_dtype("u4") == np.dtype(ml_dtypes.uint4)
    assert numpy_dtype(PrimitiveType.C64) == np.dtype(np.complex64)
    for name, _ in ALL_CASES:
        assert numpy_dtype(name).itemsize == primitive_type(name).byte_width, name


def test_package_exports() -> None:
    assert la.pack is pack and la.unpack is unpack


# ------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: pack(np.zeros((2, 3)), "f32[2,3]"), "dtype float64, but f32 elements are float32"),
        (lambda: pack(np.zeros((2, 3), np.int8), "s4[2,3]"), "astype(ml_dtypes.int4)"),
        (
            lambda: pack(np.zeros((3, 2), np.float32), "f32[2,3]"),
            "the array has dimensions [3, 2], the shape has [2, 3]",
        ),
        (lambda: pack(np.zeros(4, np.float32), "f32[N]"), "symbolic dimensions"),
        (lambda: pack(np.zeros(2, np.float32), "(f32[2], f32[2])"), "tuple shape"),
        (lambda: pack(np.zeros(4, np.float32), "f32[4]{0:SC(0:2)}"), "split configs"),
        (lambda: pack(np.zeros(4, np.float32), "f32[?]"), "unbounded"),
        (lambda: pack(None, "token[]"), "token"),
        (
            lambda: pack(np.zeros(2, ml_dtypes.int4), "s4[2]{0:E(2)}"),
            "E(2) cannot hold a s4 element, which needs 4 bits",
        ),
        (
            lambda: unpack(bytes(1), "s4[2]{0:E(3)}"),
            "E(3) cannot hold a s4 element, which needs 4 bits",
        ),
        (lambda: pack(np.zeros(2, np.float32), "f32[2]{0:E(16)}"), "E(16) cannot hold a f32 element"),
        (lambda: pack(np.zeros(2, ml_dtypes.int4), "s4[2]{0:E(5)}", fill=32), "fill 32 must be in 0..31"),
        (lambda: pack(np.zeros(2, np.uint8), "u8[2]{0:T(4)}", fill=256), "fill 256 must be in 0..255"),
        (lambda: pack(np.zeros(2, ml_dtypes.int4), "s4[2]{0:E(4)}", fill=16), "fill 16 must be in 0..15"),
        (lambda: pack(np.zeros(2, np.uint8), "u8[2]", fill=1.5), "fill 1.5 must be an integer"),
        (lambda: unpack(np.zeros(7, np.uint8), "f32[2]"), "the buffer has 7 bytes, the layout needs 8"),
        (lambda: unpack(np.zeros(2, np.float32), "f32[2]"), "1-D uint8 array, not 1-D float32"),
        (lambda: unpack(np.zeros((2, 4), np.uint8), "f32[2]"), "not 2-D uint8"),
        (lambda: unpack([0] * 8, "f32[2]"), "not list"),
        (
            lambda: unpack(bytes(8), "f32[2]", out=np.zeros(2)),
            "out must be a [2] float32 array, not [2] float64",
        ),
        (lambda: unpack(bytes(8), "f32[2]", out=np.broadcast_to(np.float32(0), (2,))), "out is read-only"),
        (
            lambda: pack(np.zeros(2, np.float32), "f32[2]", out=np.zeros(7, np.uint8)),
            "out has 7 bytes, the layout needs 8",
        ),
        (lambda: pack(np.zeros(2, np.float32), "f32[2]", out=bytes(8)), "out is read-only"),
    ],
)
def test_errors_are_value_errors_that_quote_the_shape(call, message: str) -> None:
    with pytest.raises(ValueError) as info:
        call()
    assert message in str(info.value)
    assert "[" in str(info.value).split(":")[0]  # the shape comes first


def test_bytes_are_accepted_by_unpack() -> None:
    assert unpack(b"\x01\x02", "u8[2]").tolist() == [1, 2]


def test_one_bit_integers_pack_eight_per_byte_or_name_the_missing_dtype() -> None:
    if HAS_INT1:
        x = np.array([-1, 0, -1, -1, 0, 0, 0, 0, -1], ml_dtypes.int1)
        assert pack(x, "s1[9]{0:E(1)}").tolist() == [0b00001101, 0b00000001]
        np.testing.assert_array_equal(unpack(pack(x, "s1[9]{0:E(1)}"), "s1[9]{0:E(1)}"), x)
    else:
        with pytest.raises(ValueError, match=r"s1.*needs ml_dtypes.int1"):
            pack(np.zeros(9, np.int8), "s1[9]{0:E(1)}")


def test_a_type_missing_from_ml_dtypes_is_named(monkeypatch) -> None:
    formats._dtype.cache_clear()
    monkeypatch.setitem(formats._ML_DTYPES_TYPES, "f8e3m4", "float8_not_there")
    try:
        with pytest.raises(ValueError, match=r"f8e3m4.*needs ml_dtypes.float8_not_there"):
            pack(np.zeros(2, np.uint8), "f8e3m4[2]")
    finally:
        formats._dtype.cache_clear()


# ------------------------------------------------- transposing copies, block by block
@st.composite
def strided_views(draw: st.DrawFn, shape: tuple[int, ...], dtype: np.dtype) -> tuple[np.ndarray, Callable]:
    """A random array and a function making a view of ``shape`` into such an array: its dims
    in any order, some stepped, offset or reversed."""
    rank = len(shape)
    order = draw(st.permutations(range(rank)))
    steps = draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank))
    offsets = draw(st.lists(st.integers(0, 2), min_size=rank, max_size=rank))
    flips = draw(st.sets(st.integers(0, rank - 1), max_size=rank))
    full = [n * k + o for n, k, o in zip(shape, steps, offsets, strict=True)]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    base = rng.integers(0, 256, (*(full[k] for k in order), dtype.itemsize), dtype=np.uint8).view(dtype)[
        ..., 0
    ]

    def make(array: np.ndarray) -> np.ndarray:
        view = array.transpose(np.argsort(order))
        view = view[tuple(slice(o, o + n * k, k) for n, k, o in zip(shape, steps, offsets, strict=True))]
        for axis in flips:
            view = np.flip(view, axis)
        assert view.shape == shape and np.shares_memory(view, array)
        return view

    return base, make


@pytest.mark.slow
@settings(max_examples=300)
@given(data=st.data())
def test_blocked_copy_copies_every_element_for_any_strides_and_block_size(data) -> None:
    rank = data.draw(st.integers(1, 4))
    shape = tuple(data.draw(st.lists(st.integers(1, 9), min_size=rank, max_size=rank)))
    dtype = formats._BITS_DTYPES[data.draw(st.sampled_from([1, 2, 4, 8, 16]))]
    src_base, src_view = data.draw(strided_views(shape, dtype))
    dst_base, dst_view = data.draw(strided_views(shape, dtype))
    limit = data.draw(st.integers(1, 80)) * dtype.itemsize  # blocks cut every dim somewhere
    expected = dst_base.copy()
    np.copyto(dst_view(expected), src_view(src_base))
    copy_engine.blocked_copy(dst_view(dst_base), src_view(src_base), limit=limit)
    # the copied elements, and nothing else of the destination's array, changed
    np.testing.assert_array_equal(raw_bytes(dst_base), raw_bytes(expected))


def test_block_extents_stay_within_the_limit_and_cover_the_runs() -> None:
    # f32 {0,1:T(8,128)} chunk: (tile row, tile column, row in tile, column in tile)
    extents = copy_engine.block_extents((32, 64, 8, 128), [3, 2, 1, 0], [2, 0, 3, 1], 65536, 4)
    assert math.prod(extents) <= 65536
    assert extents[3] == 128 and extents[2] * extents[0] >= 128  # 512-byte runs on both sides
    assert copy_engine.block_extents((3, 5), [0, 1], [1, 0], 1000, 4) == [3, 5]  # all of it fits
    assert math.prod(copy_engine.block_extents((1000, 7, 1000), [2, 1, 0], [0, 1, 2], 4096, 8)) <= 4096


def test_staging_rows_are_padded_and_do_not_overlap() -> None:
    s = copy_engine.staging_buffer([4, 3, 5], [2, 0, 1], [0, 1, 2], np.dtype(np.uint16))
    assert s.shape == (4, 3, 5)
    offsets = _offsets_in_bytes(s)
    assert len(set(offsets)) == s.size  # every slot its own bytes
    assert s.strides[2] % 64 != 0 and s.strides[2] > 2 * 4  # the near array's inner dim: padded


def _offsets_in_bytes(a: np.ndarray) -> list[int]:
    return [sum(i * st for i, st in zip(index, a.strides, strict=True)) for index in np.ndindex(a.shape)]


def spy_blocked_copies(monkeypatch) -> list:
    """Record the shapes of the copies that go through ``copy_engine.blocked_copy``."""
    calls = []
    real = copy_engine.blocked_copy

    def spy(dst, src, limit=None):
        calls.append(dst.shape)
        real(dst, src, limit)

    monkeypatch.setattr(copy_engine, "blocked_copy", spy)
    return calls


@pytest.mark.parametrize(
    ("text", "blocked"),
    [
        ("f32[1001,1030]{0,1:T(8,128)}", True),
        ("f32[1001,1030]{1,0:T(8,128)}", False),  # rows of 128 elements: a plain copy is right
        ("bf16[1024,1024]{1,0:T(8,128)(2,1)}", False),  # the (2,1) is peeled, not blocked
        ("u8[700,900]{0,1}", True),
    ],
)
def test_only_transposing_copies_are_blocked(monkeypatch, text: str, blocked: bool) -> None:
    calls = spy_blocked_copies(monkeypatch)
    m = layout_map(text)
    x = random_array(m, np.random.default_rng(3))
    buf = pack(x, text, fill=7)
    assert bool(calls) == blocked
    calls.clear()
    np.testing.assert_array_equal(raw_bytes(unpack(buf, text)), raw_bytes(x))
    assert bool(calls) == blocked
    np.testing.assert_array_equal(buf, reference_pack(x, text, fill=7))


@pytest.mark.slow
@settings(max_examples=200)
@given(
    shape=packable_shapes(),
    seed=st.integers(0, 2**32 - 1),
    block=st.sampled_from([1, 8, 48, 200]),
    short=st.sampled_from([0, 16]),
)
def test_pack_and_unpack_with_tiny_blocks_and_chunks_match_the_index_map(shape, seed, block, short) -> None:
    # every copy that transposes at all is blocked, in blocks of a few elements, in chunks of
    # a few slots; with short=0 no minor dims are peeled first, so that small arrays transpose
    m = layout_map(shape)
    x = random_array(m, np.random.default_rng(seed))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(copy_engine, "SHORT", short)
        patch.setattr(copy_engine, "BLOCK_BYTES", block)
        patch.setattr(copy_engine, "RUN_BYTES", 8)
        patch.setattr(copy_engine, "FAR_BYTES", 0)
        patch.setattr(stage_walk, "CHUNK_BYTES", 64)
        patch.setattr(stage_walk, "TRANSPOSING_CHUNK_BYTES", 96)
        buf = pack(x, shape, fill=1)
        y = np.array(random_array(m, np.random.default_rng(seed + 1)), order="F")
        unpack(buf, shape, out=y)
    np.testing.assert_array_equal(buf, reference_pack(x, str(shape), fill=1), err_msg=str(shape))
    np.testing.assert_array_equal(raw_bytes(y), raw_bytes(x), err_msg=str(shape))


@pytest.mark.parametrize("bits", [1, 2, 4])
def test_pack_lanes_and_unpack_lanes_match_a_per_byte_loop(bits: int) -> None:
    rng = np.random.default_rng(bits)
    per_byte = 8 // bits
    codes = rng.integers(0, 256, (per_byte, 64), dtype=np.uint8)  # high bits set: must be ignored
    out = np.empty(64, np.uint8)
    lanes.pack_lanes(codes, bits, out)
    mask = (1 << bits) - 1
    expected = [sum((int(codes[i, k]) & mask) << (bits * i) for i in range(per_byte)) for k in range(64)]
    assert out.tolist() == expected
    back = np.empty_like(codes)
    lanes.unpack_lanes(out, bits, back)
    np.testing.assert_array_equal(back, codes & mask)


# ----------------------------------------------------------------- threads (copy engine)
@pytest.mark.slow
@settings(max_examples=150)
@given(
    shape=packable_shapes(),
    seed=st.integers(0, 2**32 - 1),
    threads=st.integers(2, 5),
    chunk=st.sampled_from([16, 64, 200]),
)
def test_pack_and_unpack_on_several_threads_match_the_index_map(shape, seed, threads, chunk) -> None:
    # tiny chunks: many chunks, so every thread gets some, and edges fall inside chunks
    m = layout_map(shape)
    x = random_array(m, np.random.default_rng(seed))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stage_walk, "CHUNK_BYTES", chunk)
        patch.setattr(stage_walk, "TRANSPOSING_CHUNK_BYTES", 2 * chunk)
        buf = pack(x, shape, fill=1, threads=threads)
        y = np.array(random_array(m, np.random.default_rng(seed + 1)), order="F")
        unpack(buf, shape, out=y, threads=threads)
    np.testing.assert_array_equal(buf, reference_pack(x, str(shape), fill=1), err_msg=str(shape))
    np.testing.assert_array_equal(raw_bytes(y), raw_bytes(x), err_msg=str(shape))


@pytest.mark.slow
@pytest.mark.parametrize(
    "text",
    [
        "f32[1031,1100]{0,1:T(8,128)}",  # transposing, padded, > 4 MB: threads by default
        "bf16[2050,1030]{1,0:T(8,128)(2,1)}",
        "s8[2049,2100]{1,0:T(32,128)(4,1)}",
        "s4[2049,4100]{1,0:T(8,128)(8,1)E(4)}",
        "pred[3001,1500]{0,1:T(32,128)(32,1)E(1)}",
    ],
)
def test_threaded_results_equal_the_single_threaded_ones_on_large_arrays(text: str, monkeypatch) -> None:
    monkeypatch.setattr(copy_engine, "PARALLEL_MIN_BYTES", 1 << 22)  # threads by default from 4 MB
    m = layout_map(text)
    x = random_array(m, np.random.default_rng(11))
    one = pack(x, text, fill=1, threads=1)
    assert m.size_in_bytes >= copy_engine.PARALLEL_MIN_BYTES or "pred" in text
    np.testing.assert_array_equal(pack(x, text, fill=1), one)  # default: every CPU
    np.testing.assert_array_equal(pack(x, text, fill=1, threads=3), one)
    np.testing.assert_array_equal(raw_bytes(unpack(one, text, threads=3)), raw_bytes(x))
    np.testing.assert_array_equal(raw_bytes(unpack(one, text)), raw_bytes(x))
    np.testing.assert_array_equal(one, reference_pack(x, text, fill=1))  # the index map's bytes


@pytest.mark.parametrize("threads", [0, -1, True, 1.5, "2"])
def test_a_bad_thread_count_is_a_clear_error(threads) -> None:
    x = np.zeros((2, 2), np.float32)
    with pytest.raises(ValueError, match=r"f32\[2,2\].*threads=.*positive integer"):
        pack(x, "f32[2,2]{1,0}", threads=threads)
    with pytest.raises(ValueError, match="positive integer"):
        unpack(np.zeros(16, np.uint8), "f32[2,2]{1,0}", threads=threads)


def test_run_parallel_runs_every_item_once_and_raises_the_first_error() -> None:
    seen = np.zeros(1000, np.int64)

    def visit(k: int) -> None:
        seen[k] += 1

    run_parallel(visit, range(1000), threads=7)
    assert seen.tolist() == [1] * 1000

    def fail(k: int) -> None:
        if k == 500:
            raise ValueError("item 500")

    with pytest.raises(ValueError, match="item 500"):
        run_parallel(fail, range(1000), threads=3)


# ------------------------------------------- words built with shifts (bf16 (2,1), s8 (4,1))
@pytest.mark.slow
@settings(max_examples=300)
@given(data=st.data())
def test_copies_whose_minor_dim_makes_words_equal_np_copyto(data) -> None:
    size = data.draw(st.sampled_from([1, 2, 4]))
    k = data.draw(st.sampled_from([k for k in (2, 4, 8) if k * size <= 8]))
    lead = tuple(data.draw(st.lists(st.integers(1, 7), min_size=0, max_size=3)))
    shape = (*lead, k)
    dtype = np.dtype(f"<u{size}")
    src_base, src_view = data.draw(strided_views(shape, dtype))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    words_base = rng.integers(0, 256, (*lead, k * size), dtype=np.uint8)  # words in a row
    words = words_base.view(dtype)
    packing = data.draw(st.booleans())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(copy_engine, "WORD_MIN_ELEMENTS", 0)
        if packing:
            dst, src = words, src_view(src_base)
            expected = dst.copy()
            np.copyto(expected, src)
            copy_engine.copy(dst, src)
            np.testing.assert_array_equal(dst, expected)
        else:
            dst_base = src_base
            expected = dst_base.copy()
            np.copyto(src_view(expected), words)
            copy_engine.copy(src_view(dst_base), words)
            np.testing.assert_array_equal(raw_bytes(dst_base), raw_bytes(expected))  # nothing else touched


@pytest.mark.parametrize(
    "text",
    ["bf16[64,300]{1,0:T(8,128)(2,1)}", "s8[70,260]{1,0:T(32,128)(4,1)}", "u8[100,256]{1,0:T(8,128)(4,1)}"],
)
def test_bf16_and_s8_tiles_build_their_words_with_shifts(monkeypatch, text: str) -> None:
    monkeypatch.setattr(copy_engine, "USE_KERNELS", False)  # NumPy (test_copy_kernels.py: both)
    calls = []
    for name in ("words_from_parts", "parts_from_words"):
        real = getattr(copy_engine, name)
        monkeypatch.setattr(
            copy_engine, name, lambda d, s, real=real, name=name: (calls.append(name), real(d, s))[1]
        )
    m = layout_map(text)
    x = random_array(m, np.random.default_rng(2))
    buf = pack(x, text, fill=5)
    np.testing.assert_array_equal(buf, reference_pack(x, text, fill=5))
    np.testing.assert_array_equal(raw_bytes(unpack(buf, text)), raw_bytes(x))
    assert "words_from_parts" in calls and "parts_from_words" in calls


@pytest.mark.slow
@settings(max_examples=60)
@given(shape=packable_shapes(), seed=st.integers(0, 2**32 - 1))
def test_pack_and_unpack_with_words_built_everywhere_match_the_index_map(shape, seed) -> None:
    m = layout_map(shape)
    x = random_array(m, np.random.default_rng(seed))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(copy_engine, "WORD_MIN_ELEMENTS", 0)
        buf = pack(x, shape, fill=1)
        y = np.array(random_array(m, np.random.default_rng(seed + 1)), order="F")
        unpack(buf, shape, out=y)
    np.testing.assert_array_equal(buf, reference_pack(x, str(shape), fill=1), err_msg=str(shape))
    np.testing.assert_array_equal(raw_bytes(y), raw_bytes(x), err_msg=str(shape))


@pytest.mark.parametrize("chunk", [1, 2, 4, 8, 16, 32])
@pytest.mark.parametrize(
    "text", ["s4[1,3,5]{1,2,0:T(2)E(4)}", "s4[3,20]{1,0:T(8,2)(8,1)E(4)}", "u2[2,9]{1,0:T(2,2)(4,1)E(2)}"]
)
def test_sub_byte_words_with_chunks_smaller_than_a_word(text: str, chunk: int) -> None:
    # regression: a chunk shorter than the word cut the word dims, and the packed words no
    # longer fitted their place (ValueError from a reshape)
    m = layout_map(text)
    x = random_array(m, np.random.default_rng(chunk))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stage_walk, "CHUNK_BYTES", chunk)
        buf = pack(x, text, fill=1, threads=2)
        back = unpack(buf, text, threads=2)
    np.testing.assert_array_equal(buf, reference_pack(x, text, fill=1))
    np.testing.assert_array_equal(raw_bytes(back), raw_bytes(x))


# ------------------------------------------------------------------------ kept recipes
@settings(max_examples=120, deadline=None)
@given(shape=packable_shapes(), seed=st.integers(0, 2**32 - 1), kernels=st.booleans())
def test_a_second_call_on_new_arrays_matches_the_reference(shape, seed, kernels) -> None:
    # the first call keeps the recipe (the walk as places in the array); later calls on other
    # arrays, given or allocated, C-contiguous or not, must give the reference bytes again
    text = str(shape)
    m = layout_map(text)
    rng = np.random.default_rng(seed)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(copy_engine, "USE_KERNELS", kernels)
        patch.setattr(copy_engine, "KERNEL_MIN_BYTES", 0)
        first = random_array(m, rng)
        pack(first, text, fill=1)
        unpack(pack(first, text), text)
        for _ in range(2):
            x = random_array(m, rng)
            expected = reference_pack(x, text, fill=1)
            np.testing.assert_array_equal(pack(x, text, fill=1), expected, err_msg=text)
            out = np.full(expected.size, 0x5A, np.uint8)
            np.testing.assert_array_equal(pack(x, text, fill=1, out=out), expected, err_msg=text)
            np.testing.assert_array_equal(raw_bytes(unpack(expected, text)), raw_bytes(x), err_msg=text)
            y = np.empty_like(x)
            unpack(expected, text, out=y)
            np.testing.assert_array_equal(raw_bytes(y), raw_bytes(x), err_msg=text)
        if x.ndim >= 2 and x.size:
            flipped = np.ascontiguousarray(x[::-1])[::-1]  # the same values, negative strides
            np.testing.assert_array_equal(pack(flipped, text, fill=1), expected, err_msg=text)
            wide = np.empty((*x.shape[:-1], 2 * x.shape[-1]), x.dtype)[..., ::2]
            unpack(expected, text, out=wide)  # a strided out: walked again, not relocated
            np.testing.assert_array_equal(raw_bytes(wide), raw_bytes(x), err_msg=text)


def test_a_kept_recipe_still_checks_the_array() -> None:
    text = "f32[8,128]{0,1:T(8,128)}"
    pack(np.zeros((8, 128), np.float32), text)
    with pytest.raises(ValueError, match=r"dimensions \[8, 127\]"):
        pack(np.zeros((8, 127), np.float32), text)
    with pytest.raises(ValueError, match="dtype float64"):
        pack(np.zeros((8, 128)), text)
    with pytest.raises(ValueError, match="fill 256"):
        pack(np.zeros((8, 128), np.float32), text, fill=256)
    with pytest.raises(ValueError, match="out has 4 bytes"):
        pack(np.zeros((8, 128), np.float32), text, out=np.zeros(4, np.uint8))
    unpack(np.zeros(layout_map(text).size_in_bytes, np.uint8), text)
    with pytest.raises(ValueError, match="has 4 bytes"):
        unpack(np.zeros(4, np.uint8), text)


@pytest.mark.parametrize(
    "text",
    [
        "f8e5m2[64,96]{0,1:T(8,128)(4,1)}",  # a (4,1) word of 4 bytes that are contiguous in the array
        "pred[40,64]{0,1:T(8,128)(4,1)}",
        "bf16[24,64]{0,1:T(8,128)(2,1)}",
        "u8[30,70]{0,1:T(8,16)(4,1)}",  # padded both ways: ragged words at the edges
        "s8[2,16,24]{1,2,0:T(4,8)(8,1)}",  # 8-byte words
    ],
)
def test_words_contiguous_on_both_sides_are_copied_as_words(text: str, monkeypatch) -> None:
    monkeypatch.setattr(copy_engine, "WORD_MIN_ELEMENTS", 0)
    m = layout_map(text)
    x = random_array(m, np.random.default_rng(5))
    expected = reference_pack(x, text, fill=3)
    for use in (True, False):
        monkeypatch.setattr(copy_engine, "USE_KERNELS", use)
        np.testing.assert_array_equal(pack(x, text, fill=3), expected, err_msg=text)
        np.testing.assert_array_equal(raw_bytes(unpack(expected, text)), raw_bytes(x), err_msg=text)
