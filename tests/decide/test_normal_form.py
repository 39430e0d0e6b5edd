"""The normal form: proved equal, checked equal by brute force, idempotent, never more complex."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, assume, given, settings
from support.strategies_maps import small_layout_shapes

from layout_algebra import interop
from layout_algebra.decide.normal_form import normal_form, normal_form_with_proof, same_layout, simplicity
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.meaning.references import by_pad_reshape_transpose
from layout_algebra.meaning.sizes import size_report
from layout_algebra.model import ArrayShape, parse_shape

SETTINGS = settings(max_examples=80, suppress_health_check=list(HealthCheck), derandomize=True)


def brute_force_same(a: ArrayShape, b: ArrayShape) -> bool:
    """Every element's bit offset by the pad-reshape-transpose reference (not the stages),
    and every size, compared one by one."""
    ma, mb = layout_map(a), layout_map(b)
    if ma.element_bits != mb.element_bits:
        return False
    if a.effective_layout.memory_space != b.effective_layout.memory_space:
        return False
    ra, rb = size_report(a), size_report(b)
    if (ra.physical_bytes, ra.first_tile_bytes, ma.size_in_bits) != (
        rb.physical_bytes,
        rb.first_tile_bytes,
        mb.size_in_bits,
    ):
        return False
    for index in ma.elements():
        if by_pad_reshape_transpose(a, index) != by_pad_reshape_transpose(b, index):
            return False
    return True


@pytest.mark.slow
@SETTINGS
@given(small_layout_shapes(max_slots=512))
def test_normal_form_is_proved_and_brute_force_equal(shape: ArrayShape) -> None:
    try:
        layout_map(shape)
    except ValueError:
        assume(False)
    result = normal_form_with_proof(shape)
    nf = result.shape
    assert simplicity(nf) <= simplicity(shape)
    if nf != shape:
        assert result.equality is not None and result.equality.status == "proved"
        assert simplicity(nf) < simplicity(shape)
    assert brute_force_same(shape, nf), (str(shape), str(nf))
    assert normal_form(nf) == nf  # a fixed point


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # worked out by hand: each pair stores every element at the same bit, same sizes
        ("f32[5,100]{1,0:T(1,128)}", "f32[5,100]{1,0:T(128)}"),
        ("f32[4096]{0:T(2048)(256)(8,128)}", "f32[4096]{0:T(256)(8,128)}"),
        ("bf16[256,8]{0,1:T(128)(2,1,1)}", "bf16[256,8]{0,1:T(2,1)}"),
        ("bf16[256,8]{0,1:T(2,128)(2,1)}", "bf16[256,8]{0,1:T(2,1)}"),
        ("f32[2,5]{1,0:T(1)}", "f32[2,5]{1,0}"),
        ("f32[8,128]{1,0:T(8,128)L(1024)}", "f32[8,128]{1,0}"),
        # not droppable: each changes the buffer
        ("f32[5]{0:T(8)}", "f32[5]{0:T(8)}"),
        ("f32[5,100]{1,0:T(128)L(1024)}", "f32[5,100]{1,0:T(128)L(1024)}"),
        ("s4[16,256]{1,0:T(8,128)(2,1)E(4)}", "s4[16,256]{1,0:T(8,128)(2,1)E(4)}"),
        ("s4[8,128]{1,0:T(8,128)(2,1)E(4)}", "s4[8,128]{1,0:T(2,1)E(4)}"),  # one tile: cuts nothing
        ("f32[16,256]{1,0:T(8,128)S(1)}", "f32[16,256]{1,0:T(8,128)S(1)}"),
    ],
)
def test_normal_forms_worked_by_hand(text: str, expected: str) -> None:
    got = normal_form(text)
    assert str(got) == expected
    assert brute_force_same(parse_shape(text), got)


def test_a_padding_tile_is_not_the_same_layout() -> None:
    equality = same_layout("f32[5]{0:T(8)}", "f32[5]{0}")
    assert equality.status == "refuted" and "32 bytes" in equality.reason


def test_same_layout_needs_the_same_array() -> None:
    with pytest.raises(ValueError, match="not the same array"):
        same_layout("f32[5]{0}", "f32[6]{0}")


def test_from_cute_returns_the_normal_form_issue_21() -> None:
    """The issue's miss: from_cute gave T(128)(2,1,1) for bf16[256,8]{0,1:T(2,128)(2,1)}."""
    text = "bf16[256,8]{0,1:T(2,128)(2,1)}"
    back = interop.from_cute(interop.to_cute(text), "bf16")
    assert str(back) == "bf16[256,8]{0,1:T(2,1)}"
    assert simplicity(back) < simplicity("bf16[256,8]{0,1:T(128)(2,1,1)}")
    assert brute_force_same(parse_shape(text), back)


def test_from_mlir_returns_the_normal_form() -> None:
    mlir = interop.to_mlir_affine_map("f32[4096]{0:T(2048)(256)(8,128)}")
    back = interop.from_mlir_affine_map(mlir, "f32", (4096,))
    assert str(back) == "f32[4096]{0:T(256)(8,128)}"


def test_symbolic_sizes_are_decided_by_the_prover() -> None:
    result = normal_form_with_proof("f32[N,M]{1,0:T(1,128)}")
    assert str(result.shape) == "f32[N,M]{1,0:T(128)}"
    assert result.equality is not None and result.equality.status == "proved"


def test_simplicity_orders_levels_then_entries() -> None:
    keys = [
        simplicity(t)
        for t in ("f32[8,8]{1,0}", "f32[8,8]{1,0:T(8)}", "f32[8,8]{1,0:T(2,8)}", "f32[8,8]{1,0:T(2,8)(2)}")
    ]
    assert keys == sorted(keys)
    assert math.isfinite(len(keys))
