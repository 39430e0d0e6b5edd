"""``validate``: XLA's ``LayoutUtil::ValidateLayoutForShape`` rules (reference notes §1.4)."""

from __future__ import annotations

import pytest
from hypothesis import given
from support.strategies import array_shapes

import layout_algebra as la


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("f32[2,3]{0,0}", ["lists dimension 0 twice", "omits 1"]),
        ("f32[2,3]{1,2}", ["2 outside [0, 2)", "omits 0"]),
        ("f32[2,3]{1,0:#(u32)}", ["index primitive type #(u32)"]),
        ("f32[2,3]{1,0:*(u16)}", ["pointer primitive type *(u16)"]),
        ("f32[2,3]{1,0:T()}", ["tile () is empty"]),
        ("f32[2,3]{1,0:T(8,0)}", ["tile (8,0) has a dimension of size 0"]),
        ("f32[2,3]{1,0:E(-4)}", ["E(-4) is negative"]),
    ],
)
def test_each_rule_is_reported_with_its_reason(text: str, fragments: list[str]) -> None:
    with pytest.raises(la.InvalidLayoutError) as err:
        la.validate(text)
    message = str(err.value)
    assert message.startswith(f"invalid layout in {la.parse_shape(text)}")
    for fragment in fragments:
        assert fragment in message
    assert isinstance(err.value, ValueError)


def test_all_problems_are_listed_at_once() -> None:
    problems = la.layout_problems("f32[2,3]{0,0:T(8,0)#(u32)E(-1)}")
    assert len(problems) == 4


def test_physical_shape_is_rejected_on_a_dense_array() -> None:
    layout = la.parse_layout("{0,1:P(s32[10,20]{1,0})}")
    shape = la.ArrayShape(la.PrimitiveType.F32, (10, 20), layout=layout)
    assert any("P(...)" in p for p in la.layout_problems(shape))


def test_tuple_elements_are_checked_with_their_position() -> None:
    problems = la.layout_problems("(f32[2]{0}, (s8[2,2]{0,0}))")
    assert problems == [
        "tuple element 1: tuple element 0: minor_to_major {0,0} lists dimension 0 twice and omits 1: "
        "it must be a permutation of 0..1"
    ]


def test_things_xla_does_not_check_are_accepted() -> None:
    # §1.4: tile rank vs shape rank, combine dims, memory space, split configs, M(n) are not checked.
    for text in [
        "f32[2]{0:T(8,128)}",
        "f32[2,3]{1,0:T(*,128)}",
        "f32[2,3]{1,0:S(77)SC(0:1)M(8)}",
        "token[]",
        "opaque[]",
        "b(f32[2]{0})",
    ]:
        assert la.validate(text) == la.parse_shape(text)


def test_validate_returns_the_shape_for_chaining() -> None:
    shape = la.parse_shape("s4[8,128]{1,0:T(8,128)(8,1)E(4)}")
    assert la.validate(shape) is shape


@pytest.mark.slow
@given(array_shapes())
def test_generated_shapes_with_permutation_layouts_are_valid_unless_they_break_a_rule(shape) -> None:
    layout = shape.layout
    breaks_a_rule = layout is not None and (
        layout.index_primitive_type is not None
        or layout.pointer_primitive_type is not None
        or layout.physical_shape is not None
        or layout.element_size_in_bits < 0
        or any(not t.dimensions or 0 in t.dimensions for t in layout.tiles)
        or sorted(layout.minor_to_major) != list(range(shape.rank))
    )
    assert bool(la.layout_problems(shape)) == breaks_a_rule
