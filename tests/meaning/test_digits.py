"""One model of a digit: the CuTe export and the layout recovery read the same ``Digit``s.

Where both apply, the digits the CuTe export follows through the stage pipeline and the
positions the recovery reads off the tiled index are the same functions of the logical
index, at the same extents, in the same order (those that take more than one value;
CuTe leaves out the rest). The functions are compared by concrete evaluation,
``(i // weight) % modulus`` for every index of the box.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layout_algebra.interop.cute.export import _digits_of_layout
from layout_algebra.meaning.digits import Digit, digit_expr, digit_of
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.meaning.recover import NotExpressible, Position, positions_of


def values(d: Digit, dims: tuple[int, ...]) -> tuple:
    """The digit as a function, by evaluation: its value at each index of its dimension."""
    if d.dim is None:
        return ()
    out = []
    for i in range(dims[d.dim]):
        v = i // d.weight
        out.append(v if d.modulus is None else v % d.modulus)
    return (d.dim, tuple(out))


def live(digits: tuple[Digit, ...] | list[Digit], dims: tuple[int, ...]) -> list[tuple[tuple, object]]:
    """The digits that take more than one value, as (function, extent), in order."""
    return [
        (values(d, dims), d.extent) for d in digits if d.dim is not None and len(set(values(d, dims)[1])) > 1
    ]


SHAPES = [
    "bf16[16,256]{1,0:T(8,128)(2,1)}",
    "f32[5,256]{1,0:T(8,128)}",
    "f32[16,384]{1,0:T(8,128)}",
    "f32[4,6]{0,1}",
    "f32[5,100]{1,0:T(1,128)}",
    "s8[32,128]{1,0:T(32,128)(4,1)}",
    "f32[2,3,4]{0,2,1}",
]


@st.composite
def tiled_shapes(draw: st.DrawFn) -> str:
    rank = draw(st.integers(1, 3))
    dims = [draw(st.integers(1, 40)) for _ in range(rank)]
    order = draw(st.permutations(range(rank)))
    tiles = ""
    if draw(st.booleans()):
        tile = [draw(st.sampled_from([1, 2, 4, 8])) for _ in range(draw(st.integers(1, rank)))]
        tiles = ":T(" + ",".join(map(str, tile)) + ")"
        if draw(st.booleans()):
            tiles += draw(st.sampled_from(["(2,1)", "(2)", "(4,1)"]))
    etype = draw(st.sampled_from(["f32", "bf16", "s8"]))
    return f"{etype}[{','.join(map(str, dims))}]{{{','.join(map(str, order))}{tiles}}}"


def agree(shape: str) -> bool:
    m = layout_map(shape)
    dims = tuple(m.shape.dimensions)
    try:
        cute = _digits_of_layout(m)
        recovered = positions_of(shape)
    except NotExpressible:
        return False
    assert all(type(d) is Digit for d in cute) and all(type(p) is Digit for p in recovered)
    assert live(cute, dims) == live(recovered, dims), shape
    return True


@pytest.mark.parametrize("shape", SHAPES)
def test_cute_and_recovery_read_the_same_digits(shape: str) -> None:
    assert agree(shape)


@pytest.mark.slow
@settings(max_examples=150)
@given(tiled_shapes())
def test_cute_and_recovery_agree_on_random_layouts(shape: str) -> None:
    agree(shape)


def test_position_is_the_digit_type() -> None:
    assert Position is Digit


@given(st.integers(0, 3), st.sampled_from([1, 2, 4, 8]), st.sampled_from([None, 2, 4, 16]))
def test_digit_expr_and_digit_of_invert_each_other(dim: int, weight: int, modulus: int | None) -> None:
    dims = (64, 64, 64, 64)
    assert digit_of(digit_expr(dim, weight, modulus), dims) == (dim, weight, modulus)


def test_padding_label_is_not_part_of_equality() -> None:
    assert Digit(0, 1, 8, 8, "tile 1") == Digit(0, 1, 8, 8)


@pytest.mark.slow
@settings(max_examples=300)
@given(
    st.lists(st.tuples(st.sampled_from(["mod", "floor"]), st.integers(1, 9)), min_size=1, max_size=3),
    st.integers(1, 40),
)
def test_digit_of_nested_mod_and_floor_is_the_evaluated_function(ops: list, size: int) -> None:
    """``(i mod a) mod b`` and ``⌊(i mod a)/c⌋`` as a later tile level writes them: whenever
    ``digit_of`` names a digit, it is the same function as the expression, evaluated at every
    ``i`` (``(i mod 2) mod 3`` is ``i mod 2``; ``⌊(i mod 2)/4⌋`` is 0)."""
    import sympy

    i = sympy.Symbol("i0", integer=True, nonnegative=True)
    expr: sympy.Expr = i
    for op, n in ops:
        expr = sympy.Mod(expr, n) if op == "mod" else sympy.floor(expr / n)
    found = digit_of(expr, (size,))
    if found is None:
        return
    dim, weight, modulus = found
    for value in range(size):
        want = int(expr.subs(i, value))
        got = 0 if dim is None else (value // weight if modulus is None else (value // weight) % modulus)
        assert got == want, (expr, found, value)


def test_digit_of_reads_what_a_padding_level_writes() -> None:
    import sympy

    i = sympy.Symbol("i0", integer=True, nonnegative=True)
    assert digit_of(sympy.Mod(sympy.Mod(i, 2), 3), (8,)) == (0, 1, 2)  # was None
    assert digit_of(sympy.floor(sympy.Mod(i, 2) / 4), (8,)) == (None, 1, None)  # was None
    assert digit_of(sympy.floor(sympy.Mod(i, 6) / 4), (8,)) is None  # 0 or 1, not a digit of i mod 6
