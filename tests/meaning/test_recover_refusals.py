"""A refusal of ``from_cute`` / ``from_mlir_affine_map`` / ``from_linear_layout`` never claims
that no XLA layout exists: the search is incomplete, and these layouts show it.

Each case is a layout (checked here to give exactly the input text or map) that the search
did not reach, and was refused with "no XLA layout ... puts its elements at the positions
...": ``f32[4,6]{1,0:T(2)(3,1)}`` and ``f32[4,4]{0,1:T(2)(2,1)}`` have a tile level whose tile
number has extent 1, crossing a digit of its own dimension (its low digit above its high
one); ``f32[2,4]{1,0:T(3,2)(4)}`` pads ``i1 mod 2`` again with the later level ``(4)``. Both
kinds are searched now (the second once ``interop.digits.digit_of`` read the digits
``(i mod 2) mod 3`` and ``⌊(i mod 2)/4⌋`` such a level writes); each test accepts a refusal
only if it is honest, and an answer only if it places every element alike. The brute-force
runs below check the two families.
"""

from __future__ import annotations

import itertools

import pytest

from layout_algebra import generate_code, layout_map
from layout_algebra.interop import NotExpressible, from_cute, from_mlir_affine_map, to_cute
from layout_algebra.interop.triton import LinearLayout, from_linear_layout
from layout_algebra.meaning.recover import positions_of


def assert_honest(err: NotExpressible, quoted: str) -> None:
    text = str(err)
    assert text.startswith(quoted), text
    assert "the search found no XLA layout" in text and "so one may still exist" in text, text
    assert "no XLA layout (minor_to_major and tiles) of" not in text.replace("found no XLA layout", ""), text


def offsets(shape: str) -> dict[tuple[int, ...], int]:
    m = layout_map(shape)
    return {tuple(i): int(m.forward(i)) for i in m.elements()}


@pytest.mark.parametrize(
    ("shape", "cute", "rank"),
    [
        ("f32[2,4]{1,0:T(3,2)(4)}", "(2,(2,2)):(4,(1,12))", 2),  # i1 mod 2 padded again by (4)
        ("f32[4,6]{1,0:T(2)(3,1)}", "(4,(2,3)):(6,(3,1))", 2),  # i1's low digit above its high one
    ],
)
def test_from_cute_refuses_honestly_where_a_layout_exists(shape: str, cute: str, rank: int) -> None:
    assert to_cute(shape) == cute  # the layout exists: it is this CuTe layout
    try:
        back = from_cute(cute, "f32", rank=rank)
    except NotExpressible as err:
        assert_honest(err, cute)
    else:  # found after all (a wider search): then it must place every element alike
        assert offsets(str(back)) == offsets(shape)


def test_from_mlir_refuses_honestly_where_a_layout_exists() -> None:
    shape = "f32[4,8]{1,0:T(3,2)(4)}"
    offset_map = (
        "affine_map<(d0, d1) -> ((d0 floordiv 3) * 48 + (d1 floordiv 2) * 12 + (d0 mod 3) * 4 + d1 mod 2)>"
    )
    assert (
        f"#element_offset = {offset_map}" in generate_code(shape, "mlir").text
    )  # certified equal to the layout
    try:
        back = from_mlir_affine_map(offset_map, "f32", (4, 8))
    except NotExpressible as err:
        assert_honest(err, offset_map)
    else:
        assert offsets(str(back)) == offsets(shape)


def test_from_linear_layout_refuses_honestly_where_a_layout_exists() -> None:
    """dim0's two bits swapped: exactly ``f32[4,4]{0,1:T(2)(2,1)}``, a tiling after all."""
    swapped = LinearLayout.from_bases({"dim0": [[2], [1]], "dim1": [[4], [8]]}, {"offset": 16})
    shape = "f32[4,4]{0,1:T(2)(2,1)}"
    assert {i: swapped.apply(i)[0] for i in offsets(shape)} == offsets(shape)
    try:
        back = from_linear_layout(swapped, "f32")
    except NotExpressible as err:
        assert "the search found no XLA layout" in str(err) and "may still exist" in str(err), str(err)
    else:
        assert offsets(str(back)) == offsets(shape)


def test_the_padding_level_examples_come_back() -> None:
    for shape, cute in [
        ("f32[2,4]{1,0:T(3,2)(4)}", "(2,(2,2)):(4,(1,12))"),
        ("f32[1,4]{1,0:T(2)(3)}", "(1,(2,2)):(0,(1,3))"),
    ]:
        back = from_cute(cute, "f32", rank=2)
        assert offsets(str(back)) == offsets(shape), (shape, str(back))
    # the position a padding level leaves with one slot is the constant 0, not an error
    assert [str(p) for p in positions_of("f32[2,4]{1,0:T(3,2)(4)}")][3] == "0 (extent 1)"


#: Two-level layouts whose second level pads the minor-most position again: f32[a,b]{m2m:T(t0,t1)(u)}.
PADDED_AGAIN = [
    f"f32[{a},{b}]{{{m2m}:T({t0},{t1})({u})}}"
    for a, b, t0, t1, u, m2m in itertools.product(
        range(1, 5), range(1, 5), range(1, 4), range(1, 3), range(2, 5), ("1,0", "0,1")
    )
    if u > t1
]


@pytest.mark.slow
def test_layouts_padded_again_by_a_later_level_come_back_exactly() -> None:
    """Brute force over the family: every answer places each element where the layout does,
    and every CuTe form comes back, room below the smallest stride included (it was refused
    before the search read it as a last level padding an always-0 position)."""
    counts = {"no CuTe form": 0, "back": 0, "refused": 0}
    for shape in PADDED_AGAIN:
        try:
            cute = to_cute(shape)
        except NotExpressible:
            counts["no CuTe form"] += 1
            continue
        try:
            back = from_cute(cute, "f32", rank=2)
        except NotExpressible as err:
            assert "so one may still exist" in str(err), (shape, cute, str(err))
            counts["refused"] += 1
            continue
        assert offsets(str(back)) == offsets(shape), (shape, cute, str(back))
        counts["back"] += 1
    assert counts["refused"] == 0 and counts["back"] == 360, counts  # 234 before room below was read


#: A tile level whose tile number has extent 1, over a digit of its own dimension: T(t)(u,1).
UNIT_NUMBER_LEVELS = [
    f"f32[{a},{b}]{{{m2m}:T({t})({u},1)}}"
    for a, b, t, u, m2m in itertools.product(range(2, 7), range(2, 7), (2, 3), (2, 3), ("1,0", "0,1"))
]


@pytest.mark.slow
def test_unit_number_levels_come_back_exactly_or_are_refused_honestly() -> None:
    back = 0
    for shape in UNIT_NUMBER_LEVELS:
        try:
            cute = to_cute(shape)
        except NotExpressible:
            continue
        try:
            found = from_cute(cute, "f32", rank=2)
        except NotExpressible as err:
            assert "may still exist" in str(err), (shape, cute, str(err))
            continue
        assert offsets(str(found)) == offsets(shape), (shape, cute, str(found))
        back += 1
    assert back >= 50, back  # of 110 CuTe forms (none before the search crossed a digit of its own dim)
