"""Round trips through MLIR, CuTe and Triton keep what XLA keeps: every element's offset, the
exact buffer and XLA's allocation, checked on every draw against XLA's semantics written out.

The oracles (``tests/support/oracles.py``) share no code with the package: every element's slot by
XLA's nested tiling with ``*`` (the tiled-layout document), the exact buffer as the tiled
shape's slots rounded up to ``L(n)``, and ``ShapeUtil::ArraySize`` (xla-facts §4.2).

A conversion may refuse (``NotExpressible``); what it returns must be the same layout in all
three respects. An MLIR tiled map's memref allocates its whole tiled shape, so the export
refuses a layout XLA allocates otherwise, and that refusal is checked against the oracles.
A CuTe layout and a Triton linear layout end at their last element: neither says how far a
buffer reaches past it (``f32[2]{0:T(128)}`` is CuTe's ``2:1``). Their round trips keep every
offset on every draw, and the buffer and XLA's allocation whenever the format can carry
them: the buffer ends at the last element and XLA allocates it whole.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis.errors import InvalidArgument
from support.oracles import oracle_slots, slot_bits, tiled_shape_slots, xla_allocation
from support.strategies import small_concrete_layouts

from layout_algebra.interop import (
    NotExpressible,
    from_cute,
    from_linear_layout,
    from_mlir_affine_map,
    to_cute,
    to_linear_layout,
    to_mlir_affine_map,
)
from layout_algebra.model.shapes import ArrayShape
from layout_algebra.model.syntax import as_shape

SETTINGS = settings(max_examples=200, suppress_health_check=list(HealthCheck))


def note(what: str) -> None:
    """Count an outcome in Hypothesis' statistics (``--hypothesis-show-statistics``), inside a draw."""
    try:
        event(what)
    except InvalidArgument:  # a hand-written example, outside Hypothesis
        pass


def carried(shape: ArrayShape) -> bool:
    """Whether a format that ends at the last element can carry the buffer and the allocation:
    the buffer (oracle) ends at the last element, and XLA allocates it whole."""
    slots, buffer = oracle_slots(shape)
    last = int(slots.max()) + 1 if slots.size else 0
    allocated = xla_allocation(shape)
    return last == buffer and allocated in (None, -(-buffer * slot_bits(shape) // 8))


def assert_same_layout(back: ArrayShape, shape: ArrayShape, via: str, *, buffer: bool = True) -> None:
    """Offsets, exact buffer and XLA's allocation of ``back`` are ``shape``'s (by the oracles);
    ``buffer=False``: the offsets only."""
    mine, mine_slots = oracle_slots(back)
    theirs, their_slots = oracle_slots(shape)
    assert mine.shape == theirs.shape, (via, str(shape), str(back))
    assert np.array_equal(mine, theirs), f"{via}: {shape} came back as {back}: elements moved"
    note(f"{via.split()[0]}: {'offsets, buffer and allocation' if buffer else 'offsets'} compared")
    if not buffer:
        return
    assert mine_slots == their_slots, (
        f"{via}: {shape} came back as {back}: buffers of {their_slots} and {mine_slots} slots"
    )
    a, b = xla_allocation(shape), xla_allocation(back)
    assert a is None or b is None or a == b, (
        f"{via}: {shape} came back as {back}: XLA allocates {a} and {b} bytes"
    )


@SETTINGS
@given(small_concrete_layouts())
@example(as_shape("s8[2,2]{0,1:T(4,128)(4,1)}"))
@example(as_shape("s8[2,2]{0,1:T(2,128)(4,1)}"))
def test_mlir_round_trips_keep_offsets_buffer_and_allocation(shape: ArrayShape) -> None:
    e = shape.effective_layout.element_size_in_bits
    try:
        mlir = to_mlir_affine_map(shape)
    except NotExpressible as err:
        note("MLIR: export refused")
        if "no affine map keeps XLA's allocation" in str(err):  # true: the memref allocates otherwise
            bits = slot_bits(shape)
            spanned = -(-tiled_shape_slots(shape) * bits // 8)
            exact = -(-oracle_slots(shape)[1] * bits // 8)
            allocated = xla_allocation(shape)  # None with '*', which ArraySize does not define
            assert spanned != exact or allocated is None or allocated != spanned, str(err)
        return
    try:
        back = from_mlir_affine_map(mlir, shape.element_type.text, shape.dimensions, element_size_in_bits=e)
    except NotExpressible:
        note("MLIR: read back refused")
        return  # the search is not complete; what it returns is checked
    assert isinstance(back, ArrayShape)
    assert_same_layout(back, shape, f"MLIR {mlir}")


def test_the_mlir_round_trip_keeps_xlas_allocation_when_a_later_tile_pads() -> None:
    # T(2,128)(4,1) puts every element where T(4,128)(4,1) does, in the same 512 bytes, but
    # XLA allocates 256 bytes for it (to the first tile): the map is read back as T(4,128)(4,1)
    shape = as_shape("s8[2,2]{0,1:T(4,128)(4,1)}")
    back = from_mlir_affine_map(to_mlir_affine_map(shape), "s8", (2, 2))
    assert str(back) == "s8[2,2]{0,1:T(4,128)(4,1)}"
    assert xla_allocation(back) == xla_allocation(shape) == 512
    assert_same_layout(back, shape, "MLIR")


@SETTINGS
@given(small_concrete_layouts())
def test_cute_round_trips_keep_offsets_buffer_and_allocation(shape: ArrayShape) -> None:
    e = shape.effective_layout.element_size_in_bits
    try:
        cute = to_cute(shape)
        back = from_cute(cute, shape.element_type.text, element_size_in_bits=e, rank=shape.rank)
    except NotExpressible:
        note("CuTe: refused")
        return
    assert_same_layout(back, shape, f"CuTe {cute}", buffer=carried(shape))


@SETTINGS
@given(small_concrete_layouts())
def test_triton_round_trips_keep_offsets_buffer_and_allocation(shape: ArrayShape) -> None:
    e = shape.effective_layout.element_size_in_bits
    try:
        ll = to_linear_layout(shape)
        back = from_linear_layout(ll, shape.element_type.text, element_size_in_bits=e)
    except NotExpressible:
        note("Triton: refused")
        return
    assert_same_layout(back, shape, f"Triton {ll}", buffer=carried(shape))
