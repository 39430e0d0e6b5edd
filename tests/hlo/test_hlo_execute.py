"""The HLO executor against expectations computed here, independently of it.

Data movement is checked against index formulas written out in the tests (loops over the
result's indices, or NumPy on the logical arrays); bitcasts and root buffers against bytes
placed by hand at ``layout_algebra.linear_index`` offsets; elementwise ops against their
definitions (XLA's integer division by zero, saturating float-to-int conversion, ...).
"""

from __future__ import annotations

import itertools
import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import strategies_hlo as sh
from support.hlo_text import hlo_module_rooted_at_last
from support.strategies_maps import small_layout_shapes

from layout_algebra import linear_index, parse_shape
from layout_algebra.hlo.execute import run
from layout_algebra.hlo.execute_compare import Comparison, compare, random_array
from layout_algebra.hlo.execute_ops import UnsupportedOpError
from layout_algebra.hlo.validity import InvalidHlo
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.packing.formats import numpy_dtype
from layout_algebra.xla import array_size


def rng_array(shape: str, seed: int = 0) -> np.ndarray:
    return random_array(parse_shape(shape), np.random.default_rng(seed))


# ------------------------------------------------------------------ data movement
def test_transpose_follows_xla_dimension_order() -> None:
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    out = run(
        hlo_module_rooted_at_last(
            "p = s32[2,3,4]{2,1,0} parameter(0)", "t = s32[4,2,3]{2,1,0} transpose(p), dimensions={2,0,1}"
        ),
        [x],
    )
    for i, j, k in itertools.product(range(4), range(2), range(3)):
        # result dim n is operand dim dimensions[n]: result[i,j,k] = x[j,k,i]
        assert out.array[i, j, k] == x[j, k, i]
    assert out.defined.all()


def test_reshape_is_row_major_and_copy_keeps_values() -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = run(
        hlo_module_rooted_at_last(
            "p = f32[3,4]{1,0} parameter(0)", "r = f32[2,6]{0,1} reshape(p)", "c = f32[2,6]{1,0} copy(r)"
        ),
        [x],
    )
    assert out.array.tolist() == [[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11]]


def test_slice_with_strides() -> None:
    x = np.arange(30, dtype=np.int32).reshape(5, 6)
    out = run(
        hlo_module_rooted_at_last(
            "p = s32[5,6]{1,0} parameter(0)", "s = s32[2,2]{1,0} slice(p), slice={[1:5:2], [0:6:4]}"
        ),
        [x],
    )
    assert out.array.tolist() == [[x[1, 0], x[1, 4]], [x[3, 0], x[3, 4]]]


def test_broadcast_maps_operand_dims_to_result_dims() -> None:
    x = np.array([7, 8, 9], np.int32)
    out = run(
        hlo_module_rooted_at_last(
            "p = s32[3]{0} parameter(0)", "b = s32[2,3,4]{2,1,0} broadcast(p), dimensions={1}"
        ),
        [x],
    )
    for i, j, k in itertools.product(range(2), range(3), range(4)):
        assert out.array[i, j, k] == x[j]
    y = np.arange(6, dtype=np.int32).reshape(2, 3)
    out = run(
        hlo_module_rooted_at_last(
            "p = s32[2,3]{1,0} parameter(0)", "b = s32[3,4,2]{2,1,0} broadcast(p), dimensions={2,0}"
        ),
        [y],
    )
    for i, j, k in itertools.product(range(3), range(4), range(2)):
        assert out.array[i, j, k] == y[k, i]  # operand dim 0 -> result dim 2, dim 1 -> dim 0


def test_concatenate_and_reverse() -> None:
    a, b = np.arange(4, dtype=np.int8).reshape(2, 2), np.arange(10, 16, dtype=np.int8).reshape(2, 3)
    out = run(
        hlo_module_rooted_at_last(
            "a = s8[2,2]{1,0} parameter(0)",
            "b = s8[2,3]{1,0} parameter(1)",
            "c = s8[2,5]{1,0} concatenate(a, b), dimensions={1}",
            "r = s8[2,5]{1,0} reverse(c), dimensions={1}",
        ),
        [a, b],
    )
    assert out.array.tolist() == [[12, 11, 10, 1, 0], [15, 14, 13, 3, 2]]


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ("1_2", [9, 1, 2, 3, 9, 9]),
        ("0_0_1", [1, 9, 2, 9, 3]),
        ("-1_1_1", [9, 2, 9, 3, 9]),  # negative low padding drops the first position
        ("2_-2_0", [9, 9, 1]),
    ],
)
def test_pad_low_high_interior_and_negative(config: str, expected: list[int]) -> None:
    text = hlo_module_rooted_at_last(
        "p = s32[3]{0} parameter(0)",
        "v = s32[] constant(9)",
        f"q = s32[{len(expected)}]{{0}} pad(p, v), padding={config}",
    )
    assert run(text, [np.array([1, 2, 3], np.int32)]).array.tolist() == expected


def test_iota_and_constants() -> None:
    out = run(hlo_module_rooted_at_last("i = s32[2,3]{1,0} iota(), iota_dimension=1"), [])
    assert out.array.tolist() == [[0, 1, 2], [0, 1, 2]]
    out = run(hlo_module_rooted_at_last("c = f32[2,2]{1,0} constant({ {1.5, -2}, {inf, 0} })"), [])
    assert out.array.tolist() == [[1.5, -2.0], [np.inf, 0.0]]
    out = run(hlo_module_rooted_at_last("c = pred[3]{0} constant({true, false, true})"), [])
    assert out.array.tolist() == [True, False, True]


@pytest.mark.parametrize(("start", "clamped"), [(0, 0), (2, 2), (4, 3), (-5, 0)])
def test_dynamic_slice_and_update_clamp_their_start(start: int, clamped: int) -> None:
    x = np.arange(6, dtype=np.int32) * 10
    ds = hlo_module_rooted_at_last(
        "p = s32[6]{0} parameter(0)",
        f"o = s32[] constant({start})",
        "d = s32[3]{0} dynamic-slice(p, o), dynamic_slice_sizes={3}",
    )
    assert run(ds, [x]).array.tolist() == x[clamped : clamped + 3].tolist()
    dus = hlo_module_rooted_at_last(
        "p = s32[6]{0} parameter(0)",
        "u = s32[3]{0} constant({-1, -2, -3})",
        f"o = s32[] constant({start})",
        "d = s32[6]{0} dynamic-update-slice(p, u, o)",
    )
    expected = x.copy()
    expected[clamped : clamped + 3] = [-1, -2, -3]
    assert run(dus, [x]).array.tolist() == expected.tolist()


def test_tuple_get_tuple_element_select_and_fusion() -> None:
    text = """HloModule m
fused {
  a = f32[4]{0} parameter(0)
  b = f32[4]{0} parameter(1)
  t = (f32[4]{0}, f32[4]{0}) tuple(a, b)
  ROOT g = f32[4]{0} get-tuple-element(t), index=1
}
ENTRY e {
  p = pred[4]{0} parameter(0)
  x = f32[4]{0} parameter(1)
  y = f32[4]{0} parameter(2)
  f = f32[4]{0} fusion(x, y), kind=kLoop, calls=fused
  s = f32[4]{0} select(p, x, f)
  ROOT r = (f32[4]{0}, f32[4]{0}) tuple(s, x)
}"""
    p = np.array([True, False, False, True])
    x, y = np.arange(4, dtype=np.float32), np.arange(10, 14, dtype=np.float32)
    s, second = run(text, [p, x, y])
    assert s.array.tolist() == [0.0, 11.0, 12.0, 3.0]
    assert second.array.tolist() == x.tolist()


def test_bitcast_convert_reinterprets_bits() -> None:
    x = np.array([1.0, -2.0], np.float32)
    out = run(
        hlo_module_rooted_at_last("p = f32[2]{0} parameter(0)", "b = s32[2]{0} bitcast-convert(p)"), [x]
    )
    assert out.array.tolist() == [0x3F800000, -0x40000000]


# ------------------------------------------------------------------ elementwise
def binary(op: str, t: str, a, b, extra: str = "") -> list:
    text = hlo_module_rooted_at_last(
        f"a = {t}[{len(a)}]{{0}} parameter(0)",
        f"b = {t}[{len(a)}]{{0}} parameter(1)",
        f"r = {t}[{len(a)}]{{0}} {op}(a, b){extra}",
    )
    dtype = numpy_dtype(t)
    return run(text, [np.array(a, dtype), np.array(b, dtype)]).array.tolist()


def test_integer_arithmetic_wraps_and_divides_as_xla() -> None:
    assert binary("add", "s8", [127, -128], [1, -1]) == [-128, 127]
    assert binary("multiply", "u8", [16, 3], [16, 5]) == [0, 15]
    assert binary("divide", "s32", [7, -7, 5, -(2**31)], [2, 2, 0, -1]) == [3, -3, -1, -(2**31)]
    assert binary("remainder", "s32", [7, -7, 5, -(2**31)], [2, 2, 0, -1]) == [1, -1, 5, 0]
    assert binary("divide", "u8", [7, 9], [0, 2]) == [255, 4]
    assert binary("divide", "s64", [-(2**63), 9, -9], [-1, 0, 2]) == [-(2**63), -1, -4]
    assert binary("shift-left", "s8", [1, 1, 3], [7, 8, -1]) == [-128, 0, 0]
    assert binary("shift-right-arithmetic", "s8", [-128, -1, 64], [7, 9, 9]) == [-1, -1, 0]
    assert binary("shift-right-logical", "s8", [-128, -1], [7, 4]) == [1, 15]
    assert binary("maximum", "s4", [-8, 7], [3, -1]) == [3, 7]
    assert binary("add", "s4", [7, -8], [1, -1]) == [-8, 7]


def test_float_arithmetic_and_nan() -> None:
    assert binary("subtract", "f32", [1.5, 0.0], [0.5, 2.0]) == [1.0, -2.0]
    out = binary("maximum", "f32", [np.nan, 1.0], [0.0, 2.0])
    assert np.isnan(out[0]) and out[1] == 2.0
    assert binary("add", "bf16", [1.0, 256.0], [2.0**-8, 1.0]) == [1.0, 256.0]  # rounds to bf16


def test_compare_clamp_convert_and_logic() -> None:
    for direction, expected in [
        ("LT", [True, False, False]),
        ("GE", [False, True, True]),
        ("NE", [True, False, True]),
    ]:
        text = hlo_module_rooted_at_last(
            "a = f32[3]{0} parameter(0)",
            "b = f32[3]{0} parameter(1)",
            f"r = pred[3]{{0}} compare(a, b), direction={direction}",
        )
        args = [np.array([1, 2, 3], np.float32), np.array([2, 2, 1], np.float32)]
        assert run(text, args).array.tolist() == expected
    text = hlo_module_rooted_at_last(
        "x = s32[4]{0} parameter(0)",
        "lo = s32[] constant(0)",
        "hi = s32[] constant(5)",
        "r = s32[4]{0} clamp(lo, x, hi)",
    )
    assert run(text, [np.array([-3, 0, 4, 9], np.int32)]).array.tolist() == [0, 0, 4, 5]
    text = hlo_module_rooted_at_last("x = f32[5]{0} parameter(0)", "r = s8[5]{0} convert(x)")
    x = np.array([1.9, -1.9, 1e9, -1e9, np.nan], np.float32)
    assert run(text, [x]).array.tolist() == [1, -1, 127, -128, 0]
    text = hlo_module_rooted_at_last(
        "a = pred[4]{0} parameter(0)",
        "b = pred[4]{0} parameter(1)",
        "o = pred[4]{0} or(a, b)",
        "n = pred[4]{0} not(o)",
    )
    a, b = np.array([0, 0, 1, 1], bool), np.array([0, 1, 0, 1], bool)
    assert run(text, [a, b]).array.tolist() == [True, False, False, False]
    text = hlo_module_rooted_at_last("x = f32[2]{0} parameter(0)", "r = f32[2]{0} exponential(x)")
    out = run(text, [np.array([0.0, 1.0], np.float32)]).array
    assert out[0] == 1.0 and abs(out[1] - np.e) < 4e-7  # within an ulp of f32 (NumPy's SIMD exp)


# ------------------------------------------------------------ bitcasts and bytes
def expected_read(source: str, target: str, x: np.ndarray) -> tuple[dict, set]:
    """What a bitcast of ``x`` (laid out as ``source``) reads as ``target``, by linear_index.

    Both shapes' elements have the same bits here; an element of ``target`` is defined
    exactly when the slot it reads holds an element of ``source``."""
    slots = {linear_index(source, idx): x[idx] for idx in np.ndindex(*x.shape)}
    values, undefined = {}, set()
    target_dims = tuple(parse_shape(target).dimensions)
    for idx in np.ndindex(*target_dims):
        slot = linear_index(target, idx)
        if slot in slots:
            values[idx] = slots[slot]
        else:
            undefined.add(idx)
    return values, undefined


@pytest.mark.parametrize(
    ("source", "target"),
    [
        ("f32[3,5]{1,0:T(2,2)}", "f32[24]{0}"),  # the tiled-layout document's Figure 1: 9 padding slots
        ("f32[4,6]{0,1:T(2,2)}", "f32[6,4]{1,0:T(2,2)}"),
        ("bf16[4,128]{1,0:T(2,128)(2,1)}", "bf16[512]{0}"),
        ("s4[4,4]{0,1:E(4)}", "s4[16]{0:E(4)}"),
        ("s4[3,4]{1,0:T(2,2)E(4)}", "s4[16]{0:E(4)}"),
        ("pred[3,3]{1,0:T(2,2)E(1)}", "pred[16]{0:E(1)}"),
        ("pred[2,3]{1,0:T(2,2)}", "pred[8]{0}"),
        ("f32[3]{0:T(1)L(4)}", "f32[4]{0}"),  # the 4th slot is L(n) padding (XLA counts it under tiles)
        ("s8[5,3]{0,1:T(4,1)}", "s8[20]{0}"),  # the size of the operand: 5 of 20 slots are padding
    ],
)
def test_bitcast_reads_the_bytes_at_linear_index(source: str, target: str) -> None:
    x = rng_array(source, seed=3)
    out = run(
        hlo_module_rooted_at_last(f"p = {source} parameter(0)", f"b = {target} bitcast(p)"), [x], junk=1
    )
    values, undefined = expected_read(source, target, x)
    for idx, v in values.items():
        assert out.defined[idx], idx
        assert out.array[idx].tobytes() == np.asarray(v).tobytes(), idx
    assert {tuple(map(int, i)) for i in np.argwhere(~out.defined)} == undefined


@pytest.mark.parametrize(
    "shape", ["f32[3,5]{1,0:T(2,2)}", "bf16[4,6]{0,1:T(2,2)(2,1)}", "s4[5,3]{0,1:T(2,2)E(4)}"]
)
def test_root_buffer_holds_each_element_at_its_linear_index(shape: str) -> None:
    x = rng_array(shape, seed=5)
    s = parse_shape(shape)
    row_major = f"{s.element_type.value.name}[{','.join(map(str, x.shape))}]{{1,0}}"
    out = run(hlo_module_rooted_at_last(f"p = {row_major} parameter(0)", f"c = {shape} copy(p)"), [x], junk=2)
    bits = layout_map(s).element_bits
    stream = np.unpackbits(out.data, bitorder="little")  # the buffer as a little-endian bit stream
    defined = np.unpackbits(out.defined_bits, bitorder="little")
    for idx in np.ndindex(*x.shape):
        start = linear_index(s, idx) * bits
        expected = np.unpackbits(np.asarray(x[idx]).reshape(1).view(np.uint8), bitorder="little")[:bits]
        assert stream[start : start + bits].tolist() == expected.tolist()
        assert defined[start : start + bits].all()
    assert defined.sum() == x.size * bits  # nothing else is defined: the padding holds junk


@settings(max_examples=60)
@given(small_layout_shapes(max_rank=3, max_dim=5, max_slots=512, combine=False), st.integers(0, 2**32 - 1))
def test_bitcast_to_flat_buffer_matches_linear_index(shape, seed) -> None:
    m = layout_map(shape)
    e = shape.layout.element_size_in_bits
    flat = f"{shape.element_type.value.name}[{m.size_in_elements}]{{0{f':E({e})' if e else ''}}}"
    x = random_array(shape, np.random.default_rng(seed))
    text = hlo_module_rooted_at_last(f"p = {shape} parameter(0)", f"b = {flat} bitcast(p)")
    if array_size(shape) != array_size(flat):
        # XLA's size pads to the first tile only, and ignores an untiled L(n): the flat buffer
        # of every slot is another size, and XLA's verifier refuses the bitcast
        with pytest.raises(InvalidHlo, match=f"takes {array_size(shape)} bytes.* {array_size(flat)} bytes"):
            run(text, [x], junk=seed)
        return
    out = run(text, [x], junk=seed)
    values, undefined = expected_read(str(shape), flat, x)
    assert {tuple(map(int, i)) for i in np.argwhere(~out.defined)} == undefined
    for idx, v in values.items():
        assert out.array[idx].tobytes() == np.asarray(v).tobytes()


# --------------------------------------------------------------------- compare
TRANSPOSE = hlo_module_rooted_at_last(
    "p = f32[8,4]{1,0} parameter(0)", "t = f32[4,8]{1,0} transpose(p), dimensions={1,0}"
)


def test_compare_transpose_against_bitcast() -> None:
    col = TRANSPOSE.replace("f32[8,4]{1,0} parameter", "f32[8,4]{0,1} parameter")
    as_bitcast = col.replace("transpose(p), dimensions={1,0}", "bitcast(p)")
    assert compare(col, as_bitcast).same is True
    wrong = TRANSPOSE.replace("transpose(p), dimensions={1,0}", "bitcast(p)")
    c = compare(TRANSPOSE, wrong)
    assert c.same is False and c.element is not None
    i, j = c.element
    assert (i, j) != (0, 0)  # element (0,0) is at offset 0 either way


def test_compare_physical_checks_memory_space_size_and_positions() -> None:
    base = hlo_module_rooted_at_last("p = f32[4,4]{1,0} parameter(0)", "c = f32[4,4]{1,0} copy(p)")
    other_space = base.replace("c = f32[4,4]{1,0}", "c = f32[4,4]{1,0:S(1)}")
    c = compare(base, other_space)
    assert c.same is False and "memory space" in c.detail
    assert compare(base, other_space, mode="logical").same is True
    padded = base.replace("c = f32[4,4]{1,0}", "c = f32[4,4]{1,0:L(32)}")
    assert compare(base, padded).same is False
    moved = base.replace("c = f32[4,4]{1,0}", "c = f32[4,4]{0,1}")
    c = compare(base, moved)
    assert c.same is False and c.element == (0, 1)
    assert compare(base, moved, mode="logical").same is True


def test_compare_catches_one_pred_element_off_by_one() -> None:
    # Narrow type: a difference in one pred must be found despite the 1-bit values.
    before = hlo_module_rooted_at_last(
        "p = pred[9]{0} parameter(0)", "s = pred[8]{0} slice(p), slice={[0:8]}"
    )
    after = before.replace("[0:8]", "[1:9]")
    for seed in range(5):
        c = compare(before, after, seed=seed)
        assert c.same is False
        assert c.trials >= 1
    one = hlo_module_rooted_at_last("p = pred[2]{0} parameter(0)", "s = pred[1]{0} slice(p), slice={[0:1]}")
    for seed in range(20):
        assert compare(one, one.replace("[0:1]", "[1:2]"), seed=seed).same is False


def test_compare_logical_mode_lets_parameter_layouts_differ_except_through_bitcasts() -> None:
    a = hlo_module_rooted_at_last("p = f32[2,3]{1,0} parameter(0)", "r = f32[6]{0} reshape(p)")
    b = a.replace("f32[2,3]{1,0} parameter", "f32[2,3]{0,1} parameter")
    assert compare(a, b, mode="logical").same is True
    assert compare(a, b).same is None  # physical: the parameter buffers are not the same
    assert (
        compare(a.replace("reshape", "bitcast"), b.replace("reshape", "bitcast"), mode="logical").same
        is False
    )


def test_compare_symbolic_sizes() -> None:
    before = hlo_module_rooted_at_last(
        "p = f32[N,128]{1,0:T(8,128)} parameter(0)", "r = f32[N,128]{0,1} transpose(p), dimensions={0,1}"
    )
    c = compare(before, before.replace("transpose(p), dimensions={0,1}", "copy(p)"), sizes={"N": 16})
    assert c.same is True and c.sizes == {"N": 16}
    with pytest.raises(InvalidHlo, match="N"):
        compare(before, before)


def test_unsupported_op_is_none_with_its_name() -> None:
    text = hlo_module_rooted_at_last(
        "a = f32[2,2]{1,0} parameter(0)",
        "d = f32[2,2]{1,0} cholesky(a), lower=true",
    )
    c = compare(text, text)
    assert c.same is None and "cholesky" in c.reason
    with pytest.raises(UnsupportedOpError, match="cholesky"):
        run(text, [np.zeros((2, 2), np.float32)])
    assert isinstance(c, Comparison)


# ------------------------------------------------------------------------ errors
@pytest.mark.parametrize(
    ("text", "args", "message"),
    [
        (
            hlo_module_rooted_at_last("p = f32[2,3]{1,0} parameter(0)", "r = f32[5]{0} reshape(p)"),
            [np.zeros((2, 3), np.float32)],
            "reshape of 6 elements",
        ),
        (
            hlo_module_rooted_at_last(
                "p = f32[2,3]{1,0} parameter(0)", "t = f32[3,2]{1,0} transpose(p), dimensions={0,0}"
            ),
            [np.zeros((2, 3), np.float32)],
            "not a permutation",
        ),
        (
            hlo_module_rooted_at_last(
                "p = f32[2,3]{1,0} parameter(0)", "t = f32[2,3]{1,0} transpose(p), dimensions={1,0}"
            ),
            [np.zeros((2, 3), np.float32)],
            r"gives dimensions \[3, 2\]",
        ),
        (
            hlo_module_rooted_at_last(
                "p = f32[4]{0} parameter(0)", "b = f32[4]{0:S(5)} bitcast(p)"
            ),  # S(1) is valid
            [np.zeros(4, np.float32)],
            "memory space",
        ),
        (
            hlo_module_rooted_at_last("p = f32[4]{0} parameter(0)", "c = f32[4]{0} copy(p)"),
            [np.zeros(4, np.float64)],
            "parameter\\(0\\)",
        ),
        (
            hlo_module_rooted_at_last("p = f32[4]{0} parameter(0)", "s = f32[2]{0} slice(p), slice={[3:5]}"),
            [np.zeros(4, np.float32)],
            "does not fit",
        ),
        (
            hlo_module_rooted_at_last("p = f32[4]{0} parameter(0)", "c = s32[4]{0} copy(p)"),
            [np.zeros(4, np.float32)],
            "type",
        ),
        (  # XLA has no negative dimension numbers; NumPy's axis=-1 would count back
            hlo_module_rooted_at_last(
                "p = f32[2,3]{1,0} parameter(0)", "c = f32[2,3]{1,0} concatenate(p), dimensions={-1}"
            ),
            [np.zeros((2, 3), np.float32)],
            "out of range",
        ),
        (
            hlo_module_rooted_at_last(
                "p = f32[4]{0} parameter(0)", "r = f32[4]{0} reverse(p), dimensions={0,0}"
            ),
            [np.zeros(4, np.float32)],
            "twice",
        ),
    ],
)
def test_invalid_modules_raise_clear_errors(text: str, args: list, message: str) -> None:
    with pytest.raises(InvalidHlo, match=message) as info:
        run(text, args)
    assert isinstance(info.value, ValueError)


def test_random_data_is_narrow_type_aware() -> None:
    rng = np.random.default_rng(0)
    s4 = random_array(parse_shape("s4[1000]{0}"), rng)
    assert s4.dtype == ml_dtypes.int4 and set(s4.astype(int).tolist()) == set(range(-8, 8))
    assert set(random_array(parse_shape("pred[200]{0}"), rng).tolist()) == {False, True}


@pytest.mark.slow
@settings(max_examples=150)
@given(
    sh.relayout(),
    st.integers(0, 20),
    st.lists(st.integers(0, 6), min_size=0, max_size=3),
    st.sampled_from(("dims", "opcode", "operand")),
)
def test_broken_modules_give_an_answer_or_a_clear_error(case, line, dims, damage) -> None:
    """Damaged modules (wrong result dimensions, another opcode, a missing operand): the
    executor answers or raises a ValueError naming the instruction, never anything else."""
    lines = case.after.split("\n")
    body = [k for k, text in enumerate(lines) if " = " in text and "parameter(" not in text]
    k = body[line % len(body)]
    name, rest = lines[k].split(" = ", 1)
    shape, op = rest.split(" ", 1)
    if damage == "dims":
        shape = shape.split("[")[0] + "[" + ",".join(map(str, dims)) + "]"
    elif damage == "opcode":
        op = "transpose" + op[op.index("(") :] if "(" in op else op
    else:
        op = op.replace("(p", "(nowhere", 1).replace("(i", "(nowhere", 1)
    lines[k] = f"{name} = {shape} {op}"
    broken = "\n".join(lines)
    try:
        compare(case.before, broken, mode="logical")
    except InvalidHlo as err:
        assert "instruction" in str(err) or "parameters" in str(err) or "module" in str(err), str(err)
    except ValueError:
        pass  # a parse error or a layout without meaning: ValueErrors with their own messages


@pytest.mark.parametrize("element", ["bf16", "f16", "f32", "s8", "s4"])
def test_random_data_collision_entropy_is_at_least_the_bound_compare_uses(element: str) -> None:
    # compare's trial count rests on this bound: two independent elements are equal with
    # probability at most 2**-b (b = 9 for floats of 16 bits or more, the type's bits below).
    from layout_algebra.hlo.execute_compare import _entropy_bits

    shape = parse_shape(f"{element}[200000]{{0}}")
    a = random_array(shape, np.random.default_rng(11))
    _, counts = np.unique(a.reshape(-1, 1).view(np.uint8).reshape(a.size, -1), axis=0, return_counts=True)
    p = counts / counts.sum()
    assert -np.log2((p * p).sum()) >= _entropy_bits(shape) - 0.05


@pytest.mark.parametrize(
    ("element", "trials"), [("pred", 48), ("s4", 12), ("s8", 6), ("bf16", 6), ("s32", 4)]
)
def test_compare_runs_enough_trials_for_the_narrowest_type(element: str, trials: int) -> None:
    text = hlo_module_rooted_at_last(f"p = {element}[4]{{0}} parameter(0)", f"c = {element}[4]{{0}} copy(p)")
    assert compare(text, text).trials == trials


@pytest.mark.parametrize(
    ("op", "fn"),
    [
        ("negate", lambda x: -x),
        ("abs", abs),
        ("sign", lambda x: math.copysign(1.0, x) if x else 0.0),
        ("exponential", math.exp),
        ("exponential-minus-one", math.expm1),
        ("log-plus-one", math.log1p),
        ("sine", math.sin),
        ("cosine", math.cos),
        ("log", math.log),
        ("tanh", math.tanh),
        ("sqrt", math.sqrt),
        ("rsqrt", lambda x: 1 / math.sqrt(x)),
        ("floor", math.floor),
        ("ceil", math.ceil),
    ],
)
def test_unary_float_ops_against_python_math(op: str, fn) -> None:
    xs = [0.25, 1.5, 2.0, 7.75]
    text = hlo_module_rooted_at_last("x = f32[4]{0} parameter(0)", f"r = f32[4]{{0}} {op}(x)")
    out = run(text, [np.array(xs, np.float32)]).array
    for got, x in zip(out.tolist(), xs, strict=True):
        assert got == pytest.approx(fn(x), rel=3e-7), (op, x)


@pytest.mark.parametrize(
    ("op", "t", "a", "b", "expected"),
    [
        ("minimum", "s32", [3, -4], [2, 5], [2, -4]),
        ("and", "u8", [0b1100, 0xFF], [0b1010, 0x0F], [0b1000, 0x0F]),
        ("xor", "s8", [5, -1], [3, 1], [6, -2]),
        ("and", "pred", [True, True], [False, True], [False, True]),
        ("divide", "f32", [1.0, -3.0], [4.0, 2.0], [0.25, -1.5]),
        ("remainder", "f32", [7.5, -7.5], [2.0, 2.0], [1.5, -1.5]),
    ],
)
def test_more_binary_ops(op: str, t: str, a: list, b: list, expected: list) -> None:
    assert binary(op, t, a, b) == expected


def test_call_runs_the_called_computation() -> None:
    text = """HloModule m
double {
  x = s32[3]{0} parameter(0)
  ROOT y = s32[3]{0} add(x, x)
}
ENTRY e {
  p = s32[3]{0} parameter(0)
  ROOT c = s32[3]{0} call(p), to_apply=double
}"""
    assert run(text, [np.array([1, -2, 5], np.int32)]).array.tolist() == [2, -4, 10]


def test_opcodes_are_read_as_xla_spells_them() -> None:
    # XLA prints `exponential`; `exp` is not an HLO opcode and must not be guessed at.
    text = hlo_module_rooted_at_last("x = f32[2]{0} parameter(0)", "r = f32[2]{0} exp(x)")
    c = compare(text, text)
    assert c.same is None and "'exp'" in c.reason


@pytest.mark.parametrize("layout", ["{2,0}", "{0,0}", "{1,0:T(0,2)}", "{1,0:E(4)}"])
def test_an_invalid_layout_on_an_intermediate_instruction_is_invalid_hlo(layout: str) -> None:
    """The executor, like the verifier (``hlo.verify._check_layouts``), refuses a module
    with a layout XLA's ``ValidateLayoutForShape`` refuses, wherever it is: it used to run
    ``s8[3,5]{2,0}`` and answer as if the layout were fine."""
    text = f"""HloModule m
ENTRY e {{
  p = s8[3,5]{{1,0}} parameter(0)
  c = s8[3,5]{layout} copy(p)
  ROOT r = s8[3,5]{{1,0}} copy(c)
}}"""
    with pytest.raises(InvalidHlo, match="layout of s8"):
        run(text, [np.zeros((3, 5), np.int8)])
