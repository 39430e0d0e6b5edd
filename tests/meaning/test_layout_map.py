"""Layout maps: the tiled-layout document's examples, XLA's index vectors, and properties.

Expected values here come from outside the code under test: the document's figures
(rebuilt below by enumerating tiles the way the document describes them), its worked
examples, closed forms stated in ``tests/data/ground_truth/xla-facts.md``, and XLA's own
test vectors. The properties compare the stage pipeline with two independently written
references and with its own SymPy closed forms.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st
from support.ground_truth import require_vector, vector_params
from support.oracles import nested_tiling
from support.strategies_maps import small_layout_shapes
from sympy.printing.pycode import PythonCodePrinter

from layout_algebra import xla
from layout_algebra.meaning.layout_map import OFFSET_SYMBOL, delinearize, layout_map, linear_index
from layout_algebra.meaning.references import by_formula, by_pad_reshape_transpose
from layout_algebra.meaning.sizes import LayoutSemanticsError, physical_size_in_bytes, tiled_dimensions


# ----------------------------------------------------------------- the document's examples
def memory_order_of_2d_tiling(rows: int, cols: int, tr: int, tc: int) -> dict[tuple[int, int], int]:
    """Figure 1's picture, rebuilt by walking memory: tiles row-major, then row-major inside.

    Every slot gets the next number, padding included; slots outside the array are skipped.
    """
    slot = 0
    order = {}
    for tile_r in range(-(-rows // tr)):
        for tile_c in range(-(-cols // tc)):
            for r in range(tile_r * tr, tile_r * tr + tr):
                for c in range(tile_c * tc, tile_c * tc + tc):
                    if r < rows and c < cols:
                        order[(r, c)] = slot
                    slot += 1
    return order


def test_figure_1_element_2_3_is_17() -> None:
    assert linear_index("f32[3,5]{1,0:T(2,2)}", (2, 3)) == 17


def test_figure_1_whole_memory_order() -> None:
    m = layout_map("f32[3,5]{1,0:T(2,2)}")
    expected = memory_order_of_2d_tiling(3, 5, 2, 2)
    assert {e: m.forward(e) for e in m.elements()} == expected
    assert m.size_in_elements == 24  # 2x3 tiles of 2x2 slots
    holes = set(range(24)) - set(expected.values())
    assert {p for p in range(24) if m.is_padding(p)} == holes


def test_figure_2_repeated_tiling_numbers() -> None:
    """xla-facts §5.1: under (2,4)(2,1), (r, c) -> 16*(r//2) + 8*(c//4) + 2*(c%4) + (r%2)."""
    m = layout_map("f32[4,8]{1,0:T(2,4)(2,1)}")
    for r, c in m.elements():
        assert m.forward((r, c)) == 16 * (r // 2) + 8 * (c // 4) + 2 * (c % 4) + (r % 2)


def test_figure_2_pairs_are_2x1_boxes() -> None:
    """Each 2x1 box of Figure 2 (rows 2k, 2k+1 of one column) fills two adjacent slots."""
    m = layout_map("f32[4,8]{1,0:T(2,4)(2,1)}")
    for r in range(0, 4, 2):
        for c in range(8):
            top = m.forward((r, c))
            assert top % 2 == 0 and m.forward((r + 1, c)) == top + 1


def test_cross_tile_second_level_element_6_5_is_51() -> None:
    assert linear_index("f32[8,8]{1,0:T(2,4)(2,1,1,1)}", (6, 5)) == 51


def test_combined_dimensions_equal_the_merged_shape() -> None:
    """(*,*,2,*,3) on f32[2,7,8,11,10] is f32[112,110] tiled by (2,3)."""
    combined = layout_map("f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}")
    merged = layout_map("f32[112,110]{1,0:T(2,3)}")
    idx = np.indices((2, 7, 8, 11, 10)).reshape(5, -1)
    a, b, c, d, e = idx
    ours = combined.apply(tuple(idx), through=len(combined.stages) - 1)[0]
    theirs = merged.apply((a * 56 + b * 8 + c, d * 10 + e), through=len(merged.stages) - 1)[0]
    assert np.array_equal(ours, theirs)
    assert combined.physical_dimensions == merged.physical_dimensions
    assert combined.size_in_bytes == merged.size_in_bytes


def test_bf16_word_holds_an_even_and_the_next_odd_row() -> None:
    """(8,128)(2,1): each 32-bit word holds rows 2k and 2k+1 of one column."""
    m = layout_map("bf16[16,256]{1,0:T(8,128)(2,1)}")
    for r in range(0, 16, 2):
        for c in (0, 1, 127, 128, 255):
            low, high = m.forward((r, c), unit="bit"), m.forward((r + 1, c), unit="bit")
            assert low % 32 == 0 and high == low + 16


# ----------------------------------------------------------------------- XLA's vectors
LINEAR_FUNCTIONS = {
    "LayoutUtil::LinearIndexForNestedTiling": linear_index,
    "IndexUtil::MultidimensionalIndexToLinearIndex": linear_index,  # untiled shapes only
    "LayoutUtil::LinearIndex": xla.layout_util_linear_index,
}


@pytest.mark.parametrize("case", vector_params("linear_index"))
def test_xla_linear_index_vectors(case) -> None:
    case = require_vector(case, "linear_index")
    fn = LINEAR_FUNCTIONS[case["input"]["function"]]
    assert fn(case["input"]["shape"], case["input"]["index"]) == case["expected"]


@pytest.mark.parametrize("case", vector_params("delinearize"))
def test_xla_delinearize_vectors(case) -> None:
    case = require_vector(case, "delinearize")
    got = delinearize(case["input"]["shape"], case["input"]["linear_index"])
    assert list(got) == case["expected"]


# --------------------------------------------------------------------------- properties
def _all_positions(m):
    index = tuple(np.indices(m.logical_dimensions).reshape(m.rank, -1)) if m.rank else ()
    n = math.prod(m.logical_dimensions)
    if m.rank == 0:
        return np.zeros(1, dtype=np.int64), n
    return np.asarray(m.apply(index, through=len(m.stages) - 1)[0]).reshape(-1), n


@pytest.mark.slow
@settings(max_examples=300)
@given(small_layout_shapes())
def test_forward_is_injective_in_bounds_and_inverted(shape) -> None:
    m = layout_map(shape)
    positions, n = _all_positions(m)
    positions = positions[:n]
    assert len(set(positions.tolist())) == n, "two elements share a slot"
    assert all(0 <= p < m.size_in_elements for p in positions.tolist())
    for element, p in zip(m.elements(), positions.tolist(), strict=False):
        assert m.forward(element) == p
        assert m.inverse(p) == element
        assert m.forward(element, unit="bit") == p * m.element_bits
        assert m.inverse(p * m.element_bits + m.element_bits - 1, unit="bit") == element
    occupied = set(positions.tolist())
    for p in range(m.size_in_elements):
        assert m.is_padding(p) == (p not in occupied)


@pytest.mark.slow
@settings(max_examples=300)
@given(small_layout_shapes())
def test_stages_sympy_and_both_references_agree(shape) -> None:
    m = layout_map(shape)
    expr = m.forward_expr()
    f = exact_lambdify(m.index_symbols, expr)
    for element in m.elements():
        p = m.forward(element)
        assert by_formula(shape, element) == p
        assert by_pad_reshape_transpose(shape, element) == p
        assert f(*map(Fraction, element)) == p


@pytest.mark.slow
@settings(max_examples=150)
@given(small_layout_shapes(max_slots=512))
def test_inverse_and_padding_closed_forms_agree_with_stages(shape) -> None:
    m = layout_map(shape)
    inverse = exact_lambdify([OFFSET_SYMBOL], m.inverse_exprs())
    padding = exact_lambdify([OFFSET_SYMBOL], m.padding_expr_at_offset())
    slots = m.size_in_elements
    for p in range(slots):
        element = m.inverse(p)
        exact = Fraction(p)  # exact rational arithmetic: float division can round 3/3 to 0.999...
        assert bool(padding(exact)) == (element is None)
        if element is not None:
            assert tuple(inverse(exact)) == element


@pytest.mark.slow
@settings(max_examples=200)
@given(small_layout_shapes(combine=False))
def test_map_and_sizes_agree_with_the_documents_nested_tiling(shape) -> None:
    """The tiled shape, every element's position and the buffer size, against the oracle."""
    m = layout_map(shape)
    layout = shape.effective_layout
    tiles = [t.dimensions for t in layout.tiles]
    bits = m.element_bits
    for index in itertools.islice(m.elements(), 500):
        linear, tiled = nested_tiling(shape.dimensions, layout.minor_to_major, tiles, index)
        assert m.forward(index) == linear
        assert m.physical_dimensions == tiled_dimensions(shape) == tiled
    slots = math.prod(nested_tiling(shape.dimensions, layout.minor_to_major, tiles, (0,) * shape.rank)[1])
    alignment = layout.tail_padding_alignment_in_elements
    slots = -(-slots // alignment) * alignment
    assert m.size_in_bytes == physical_size_in_bytes(shape) == -(-slots * bits // 8)


def _ifloor(x):
    return math.floor(x)


class _ExactPrinter(PythonCodePrinter):
    """Prints rationals as ``Fraction``s so lambdified closed forms never round (1/3 + 2/3 is 1)."""

    def _print_Rational(self, expr):
        return f"Fraction({expr.p}, {expr.q})"

    def _print_Half(self, expr):
        return self._print_Rational(expr)


def exact_lambdify(symbols, expr):
    modules = [{"floor": _ifloor, "Mod": _imod, "Fraction": Fraction, "math": math}, "math"]
    return sympy.lambdify(symbols, expr, modules=modules, printer=_ExactPrinter)


def _imod(a, b):
    return a % b


# ------------------------------------------------------------------------ symbolic sizes
@pytest.mark.parametrize(
    "text",
    [
        "f32[N,M]{1,0:T(8,128)}",
        "bf16[N,M]{1,0:T(8,128)(2,1)}",
        "s8[M,N]{0,1:T(32,128)(4,1)}",
        "f32[B,N,M]{2,1,0:T(2,*,4)}",
    ],
)
@pytest.mark.parametrize(
    "sizes", [{"N": 9, "M": 130, "B": 2}, {"N": 16, "M": 3, "B": 1}, {"N": 1, "M": 1, "B": 3}]
)
def test_symbolic_closed_form_specializes_to_the_concrete_map(text, sizes) -> None:
    symbolic = layout_map(text)
    concrete = symbolic.specialize(sizes)
    values = {sympy.Symbol(k, integer=True, nonnegative=True): v for k, v in sizes.items()}
    expr = symbolic.forward_expr().subs(values)
    f = exact_lambdify(symbolic.index_symbols, expr)
    for element in itertools.islice(concrete.elements(), 0, None, 7):
        assert f(*map(Fraction, element)) == concrete.forward(element)
    assert sympy.sympify(symbolic.size_in_bytes).subs(values) == concrete.size_in_bytes


# ---------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: linear_index("f32[3,5]", (1,)), "has 1 entries, the shape has rank 2"),
        (lambda: linear_index("f32[3,5]", (3, 0)), "out of bounds in dimension 0"),
        (lambda: linear_index("f32[3,5]", (0, -1)), "out of bounds in dimension 1"),
        (lambda: linear_index("f32[3,5]", (0.5, 1)), "must be a sequence of integers"),
        (lambda: delinearize("f32[3,5]{1,0:T(2,2)}", 9), "is padding"),
        (lambda: delinearize("f32[3,5]{1,0:T(2,2)}", 24), "outside the buffer of 24 elements"),
        (lambda: layout_map("f32[3,5]").forward((0, 0), unit="word"), "unit 'word'"),
        (lambda: layout_map("(f32[3], s8[2])"), "tuple shape"),
        (lambda: layout_map("f32[?,5]"), "unbounded"),
        (lambda: layout_map("f32[2,3]{1,0:T(2,*)}"), "ends with '*'"),
        (lambda: layout_map("f32[N]").inverse(0), "symbolic"),
        (lambda: layout_map("f32[N]").specialize({"M": 3}), "no value given for ['N']"),
    ],
)
def test_bad_input_gives_a_clear_error(call, message) -> None:
    with pytest.raises(ValueError, match=None) as info:
        call()
    assert message in str(info.value)


def test_layout_semantics_errors_are_value_errors() -> None:
    with pytest.raises(LayoutSemanticsError):
        layout_map("s4[4]{0:E(2)}")


def test_huge_dimensions_evaluate_exactly() -> None:
    m = layout_map("bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}")
    last = tuple(d - 1 for d in m.logical_dimensions)
    assert m.inverse(m.forward(last)) == last
    big = layout_map("f32[4294967296,3]{1,0:T(8,128)}")
    assert big.inverse(big.forward((4294967295, 2))) == (4294967295, 2)


@given(st.integers(0, 24 * 32 - 1))
def test_any_bit_of_an_element_inverts_to_it(bit) -> None:
    m = layout_map("f32[3,5]{1,0:T(2,2)}")
    element = m.inverse(bit, unit="bit")
    if element is not None:
        assert m.forward(element, unit="bit") == bit - bit % 32
