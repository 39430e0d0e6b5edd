"""Views against independent oracles, on random layouts with ``*``, repeated tiles, ``L``, ``E``, ``S``
and rank 0.

Two oracles, sharing no code with the package's views:

* **XLA's semantics, brute force** (:func:`oracles.combined_nested_tiling`, written from XLA's
  tiled-layout document): the element slot of every element of the base (or of the bitcast's
  layout), then NumPy's own reshape / transpose / slice / broadcast / flip of that array;
* **real bytes** (32-bit elements): a buffer whose every 4-byte slot holds its own slot number,
  read back by :func:`layout_algebra.packing.numpy_eval.unpack` as the layout the view reads.

Every answer of :meth:`View.as_layout` is re-checked: a ``proved`` layout puts every element
where the oracle does (at the answer's bit offset) and fits in the buffer, and ``same_buffer``
means XLA's ``ShapeUtil::ArraySize`` (xla-facts §4.2, written out in the oracle) is the
base's; a ``refuted`` answer's witness is re-evaluated (two elements at one place, or an
element before element 0); the view of a layout through nothing is never refuted.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from support.oracles import oracle_slots, slot_bits, xla_allocation
from support.strategies import small_concrete_layouts

from layout_algebra.decide.bitcast import same_allocation
from layout_algebra.decide.suggest import suggest_bitcast_layout
from layout_algebra.decide.views import Bitcast, Broadcast, Reshape, Reverse, Slice, Transpose, View, view
from layout_algebra.model.syntax import as_shape
from layout_algebra.packing.numpy_eval import unpack

SETTINGS = settings(max_examples=150, suppress_health_check=list(HealthCheck))


def oracle_view(v: View) -> np.ndarray:
    """The element slot of every element of the view: the layout it reads, then NumPy's ops."""
    slots, _ = oracle_slots(v.bitcast_to if v.bitcast_to is not None else v.base)
    for op in v.ops:
        if isinstance(op, Reshape):
            slots = slots.reshape(tuple(int(d) for d in op.dimensions))
        elif isinstance(op, Transpose):
            slots = np.transpose(slots, op.permutation)
        elif isinstance(op, Slice):
            strides = op.strides or (1,) * slots.ndim
            slots = slots[
                tuple(slice(a, b, s) for a, b, s in zip(op.starts, op.limits, strides, strict=True))
            ]
        elif isinstance(op, Reverse):
            slots = np.flip(slots, op.dimensions) if op.dimensions else slots
        elif isinstance(op, Broadcast):
            expanded = slots.reshape(
                [
                    int(op.result_dimensions[r]) if r in op.dimensions else 1
                    for r in range(len(op.result_dimensions))
                ]
            )
            slots = np.broadcast_to(expanded, tuple(int(d) for d in op.result_dimensions))
    return np.asarray(slots)


# ------------------------------------------------------------------------ random views
@st.composite
def ops_on(draw: st.DrawFn, dims: tuple[int, ...]) -> list[object]:
    """0-2 ops that apply to an array of ``dims`` (the dimensions after each op drawn in turn)."""
    out: list[object] = []
    for _ in range(draw(st.integers(0, 2))):
        rank = len(dims)
        kind = draw(st.sampled_from(["reshape", "transpose", "slice", "reverse", "broadcast"]))
        if kind == "reshape":
            n = math.prod(dims, start=1)
            new = [d for d in range(1, n + 1) if n % d == 0]
            first = draw(st.sampled_from(new))
            op: object = Reshape((first, n // first) if draw(st.booleans()) else (n,))
        elif kind == "transpose":
            op = Transpose(tuple(draw(st.permutations(range(rank)))))
        elif kind == "slice":
            starts = tuple(draw(st.integers(0, d - 1)) if d else 0 for d in dims)
            limits = tuple(draw(st.integers(s + 1, d)) if d else 0 for s, d in zip(starts, dims, strict=True))
            strides = tuple(draw(st.integers(1, 2)) for _ in dims)
            op = Slice(starts, limits, strides)
        elif kind == "reverse":
            op = Reverse(
                tuple(sorted(draw(st.sets(st.integers(0, rank - 1), max_size=rank))) if rank else ())
            )
        else:
            new_dim = draw(st.integers(1, 3))
            at = draw(st.integers(0, rank))
            op = Broadcast(
                tuple(d if d < at else d + 1 for d in range(rank)), (*dims[:at], new_dim, *dims[at:])
            )
        dims = tuple(int(d) for d in op.result_dims(dims))  # type: ignore[attr-defined]
        out.append(op)
    return out


@st.composite
def random_views(draw: st.DrawFn, element_type: str | None = None) -> View:
    base = draw(small_concrete_layouts(element_type))
    ops: list[object] = []
    if draw(st.integers(0, 2)) == 0:  # a bitcast first: a layout of the same element width that fits
        to = draw(small_concrete_layouts(base.element_type.text))
        assume(slot_bits(to) == slot_bits(base))
        assume(oracle_slots(to)[1] <= oracle_slots(base)[1])
        assume(to.effective_layout.memory_space == base.effective_layout.memory_space)
        ops.append(Bitcast(to))
    first = ops[0].to if ops else base  # type: ignore[attr-defined]
    ops += draw(ops_on(tuple(int(d) for d in first.dimensions)))
    return view(base, *ops)  # type: ignore[arg-type]


def check_answer(v: View, expected_slots: np.ndarray) -> None:
    """Re-check :meth:`View.as_layout`'s answer against the oracle's slots of the view."""
    bits = slot_bits(v.base)
    expected = expected_slots * bits
    answer = v.as_layout()
    if answer.status == "proved":
        assert answer.shape is not None
        theirs, slots = oracle_slots(answer.shape)
        assert np.array_equal(theirs * bits + answer.offset_bits, expected), str(answer)
        assert answer.offset_bits + slots * bits <= oracle_slots(v.base)[1] * bits, str(answer)
        if answer.same_buffer:
            assert answer.offset_bits == 0
            mine, base = xla_allocation(answer.shape), xla_allocation(v.base)
            assert mine is None or base is None or mine == base, (str(answer), mine, base)
    elif answer.status == "refuted":
        witness = answer.witness or {}
        if "bit" in witness:  # two elements at one place
            a, b = (tuple(e) for e in witness["elements"])
            assert a != b and expected[a] == expected[b] == witness["bit"], str(answer)
        else:  # an element before element 0
            origin, low = (tuple(e) for e in witness["elements"])
            assert expected[low] < expected[origin], str(answer)
    if not v.ops:  # a layout through nothing (or a bitcast alone) is a layout
        assert answer.status == "proved", str(answer)


@SETTINGS
@given(random_views())
def test_view_offsets_and_answers_agree_with_xlas_semantics(v: View) -> None:
    expected = oracle_view(v)
    assert np.array_equal(v.offsets("element"), expected), str(v)
    assert np.array_equal(v.offsets("bit"), expected * slot_bits(v.base)), str(v)
    check_answer(v, expected)


@SETTINGS
@given(random_views(element_type="s32"))
def test_view_offsets_agree_with_real_bytes(v: View) -> None:
    # every 4-byte slot of the buffer holds its own number; unpacking reads each element's slot
    slots = oracle_slots(v.base)[1]
    buffer = np.arange(slots, dtype="<i4").view(np.uint8)
    read_as = v.bitcast_to if v.bitcast_to is not None else v.base
    from layout_algebra.meaning.layout_map import layout_map

    size = int(layout_map(read_as).size_in_bytes)
    stored = unpack(buffer[:size], read_as).astype(np.int64)
    for op in v.ops:  # NumPy's ops on the array of slots read
        if isinstance(op, Reshape):
            stored = stored.reshape(tuple(int(d) for d in op.dimensions))
        elif isinstance(op, Transpose):
            stored = np.transpose(stored, op.permutation)
        elif isinstance(op, Slice):
            strides = op.strides or (1,) * stored.ndim
            stored = stored[
                tuple(slice(a, b, s) for a, b, s in zip(op.starts, op.limits, strides, strict=True))
            ]
        elif isinstance(op, Reverse):
            stored = np.flip(stored, op.dimensions) if op.dimensions else stored
        elif isinstance(op, Broadcast):
            shape = [
                int(op.result_dimensions[r]) if r in op.dimensions else 1
                for r in range(len(op.result_dimensions))
            ]
            stored = np.broadcast_to(stored.reshape(shape), tuple(int(d) for d in op.result_dimensions))
    assert np.array_equal(v.offsets("element"), stored), str(v)


# ----------------------------------------------------------- each defect, by its subject
def test_a_view_of_a_layout_with_a_combine_and_a_later_tile_is_that_layout() -> None:
    # element (1, 1) is stored before (0, 1): "index 1 comes after index 0" is no fact of layouts
    v = view("f32[2,2]{1,0:T(*,3)(2,1)}")
    expected = oracle_view(v)
    assert expected[1, 1] < expected[0, 1]
    answer = v.as_layout()
    assert answer.status == "proved" and answer.offset_bits == 0 and answer.same_buffer
    check_answer(v, expected)


def test_a_bitcast_then_a_slice_reads_the_slot_of_the_bitcasts_layout() -> None:
    # f32[12]{0} reads slot 1 as its element 1, which is padding of f32[5]{0:T(1)(2,2)}
    v = view("f32[5]{0:T(1)(2,2)}", Bitcast(as_shape("f32[12]{0}")), Slice((1,), (2,)))
    assert v.offset((0,)) == 32 == int(oracle_view(v)[0]) * 32
    answer = v.as_layout()
    assert (answer.status, answer.offset_bits) == ("proved", 32)
    check_answer(v, oracle_view(v))


def test_a_bitcast_then_an_identity_transpose_is_the_bitcast_alone() -> None:
    alone = view("f32[2]{0:T(5,2)}", Bitcast(as_shape("f32[10]{0}")))
    transposed = view("f32[2]{0:T(5,2)}", Bitcast(as_shape("f32[10]{0}")), Transpose((0,)))
    assert np.array_equal(transposed.offsets(), alone.offsets())
    assert np.array_equal(transposed.offsets("element"), oracle_view(transposed))
    assert transposed.as_layout().status == alone.as_layout().status == "proved"


def test_same_buffer_means_xla_allocates_the_same_bytes_with_an_untiled_tail_alignment() -> None:
    # XLA's ArraySize ignores an untiled L(n): f32[5]{0:L(4)} is 20 bytes, f32[5]{0:T(1)L(4)} 32
    assert xla_allocation(as_shape("f32[5]{0:L(4)}")) == 20
    assert xla_allocation(as_shape("f32[5]{0:T(1)L(4)}")) == 32
    assert not same_allocation(as_shape("f32[5]{0:T(1)L(4)}"), as_shape("f32[5]{0:L(4)}"))
    answer = view("f32[5]{0:T(1)L(4)}").as_layout()
    assert answer.status == "proved" and answer.shape is not None
    assert not answer.same_buffer or xla_allocation(answer.shape) == 32
    check_answer(view("f32[5]{0:T(1)L(4)}"), oracle_view(view("f32[5]{0:T(1)L(4)}")))


@pytest.mark.parametrize("text", ["f32[]", "s4[]{:E(4)}", "bf16[]{:T(2)}", "f32[]{:S(1)}"])
def test_rank_0_views_are_layouts(text: str) -> None:
    v = view(text)
    assert v.offsets().shape == () and int(v.offsets()) == 0 == v.offset(())
    assert v.unreached().tolist()[0] is False
    answer = v.as_layout()
    assert answer.status == "proved" and answer.offset_bits == 0 and answer.same_buffer
    check_answer(v, oracle_view(v))
    reshaped = view(text, Reshape((1, 1)))
    assert reshaped.as_layout().status == "proved"
    assert view(reshaped.base, Reshape((1,)), Reshape(())).as_layout().status == "proved"


def test_rank_0_suggestions() -> None:
    for src, dims in (("f32[]", ()), ("f32[1,1]", ()), ("f32[]", (1, 1))):
        s = suggest_bitcast_layout(src, dims)
        assert s.shape is not None and s.verdict.status == "proved", (src, dims, s)
        assert tuple(s.shape.dimensions) == dims
