"""XLA's tile-unaware bitcast predicates (``ShapeUtil::ReshapeIsBitcast`` and friends).

A reshape or transpose is a *bitcast* when it moves no data: every element keeps its
place in memory, so the compiler can reinterpret the buffer instead of copying it. XLA
decides this in ``shape_util.cc`` by looking **only at the dimensions and
``minor_to_major``** (and, optionally, the element type). Tiles, ``E(n)``, ``L(n)``,
memory spaces, split configs and ``M(n)`` never enter. These functions reproduce those
answers, quirks included; the exact, tile-aware answer is ``layout_algebra.decide.bitcast``.

**Reshape.** Elements correspond in row-major logical order. XLA tests only the *unit
indices* (a 1 in one dimension of size > 1, 0 elsewhere), in both directions, and asks
that each keeps its untiled physical offset. ``f32[3,2,2]{1,0,2}`` stores dimension 1
fastest, then 0, then 2; ``f32[6,2]{0,1}`` stores its dimension 0 (the merged 3 x 2)
fastest, so both read memory in the same order:

>>> from layout_algebra.xla.bitcast_util import reshape_is_bitcast
>>> reshape_is_bitcast("f32[3,2,2]{1,0,2}", "f32[6,2]{0,1}")
True
>>> reshape_is_bitcast("f32[2,3]{1,0}", "f32[3,2]{0,1}")       # a transpose, not a reshape
False
>>> reshape_is_bitcast("f32[3,2,2]{1,0,2}", "f16[6,2]{0,1}")    # element types differ
False
>>> reshape_is_bitcast("f32[3,2,2]{1,0,2}", "f16[6,2]{0,1}", ignore_element_type=True)
True

Tiles are ignored: a tiled ``16 x 256`` array stores element (1,0) 128 slots in (one tile
row below), yet XLA calls the flattening a bitcast, as if the rows were contiguous:

>>> reshape_is_bitcast("f32[16,256]{1,0:T(8,128)}", "f32[4096]{0}")
True

**Transpose.** ``dimension_mapping`` is the transpose's ``dimensions`` attribute: output
dimension ``i`` is input dimension ``dimension_mapping[i]``. XLA only checks that each
dimension keeps its physical position, ``dimension_mapping[out.m2m[i]] == in.m2m[i]``;
the dimension sizes are never compared:

>>> from layout_algebra.xla.bitcast_util import transpose_is_bitcast
>>> transpose_is_bitcast("f32[5,3]{1,0}", "f32[3,5]{0,1}", [1, 0])
True
>>> transpose_is_bitcast("f32[2,3]{1,0}", "f32[7,9]{0,1}", [1, 0])   # sizes unchecked
True

``permute_dimensions`` builds the layout that makes a transpose a bitcast; everything else
in the layout, tiles included, is kept:

>>> from layout_algebra.xla import permute_dimensions
>>> str(permute_dimensions([2, 0, 1], "f32[10,100,1000]{1,0,2:T(8,128)}"))
'f32[1000,10,100]{2,1,0:T(8,128)}'

**Both at once.** ``deduce_transpose_dimensions_for_bitcast`` finds the transpose that
keeps every dimension's physical position (if the sizes fit), and
``is_reshape_or_transpose_bitcast`` tries equality, then a reshape, then that transpose.
The last step calls ``TransposeIsBitcast`` with its two shapes swapped, which is right only
for a permutation that is its own inverse, so a 3-cycle is missed:

>>> from layout_algebra.xla import deduce_transpose_dimensions_for_bitcast
>>> from layout_algebra.xla.bitcast_util import is_reshape_or_transpose_bitcast
>>> deduce_transpose_dimensions_for_bitcast("f32[2,3,4]{2,1,0}", "f32[3,4,2]{1,0,2}")
(1, 2, 0)
>>> transpose_is_bitcast("f32[2,3,4]{2,1,0}", "f32[3,4,2]{1,0,2}", [1, 2, 0])
True
>>> is_reshape_or_transpose_bitcast("f32[2,3,4]{2,1,0}", "f32[3,4,2]{1,0,2}")
False

**Any bitcast as transpose-reshape-transpose.** ``decompose_bitcast`` says which of the
three shapes a bitcast has; the general one is a transpose to the physical order, a
row-major reshape, and a transpose back:

>>> from layout_algebra.xla import decompose_bitcast
>>> d = decompose_bitcast("f32[16,17,3]{2,1,0}", "f32[51,16]{0,1}")
>>> d.type, d.transpose1_dims, str(d.reshape_shape), d.transpose2_dims
('trt', (0, 1, 2), 'f32[16,51]{1,0}', (1, 0))
>>> decompose_bitcast("f32[1,16,17,3]{3,2,1,0}", "f32[16,51]{1,0}").type
'reshape'

**Choosing a layout.** ``align_layouts`` picks the output layout that makes a reshape a
bitcast, or ``None`` when the input's merged dimensions are not physically adjacent:

>>> from layout_algebra.xla import align_layouts
>>> align_layouts("f32[3,8,5,7,11]{3,2,1,0,4}", [4, 3, 2, 7, 5, 11])
parse_layout('{4,3,2,1,0,5}')
>>> print(align_layouts("f32[3,8,5,7,11]{3,2,1,0,4}", [4, 3, 2, 5, 77]))
None

Where this module deliberately differs from XLA: inputs on which XLA would CHECK-fail
(no layout, a non-array, a ``dimension_mapping`` or ``perm`` that is not a permutation of
the right length, a reshape between different element counts in ``align_layouts``) raise
``XlaInputError`` quoting the shape, as does shape text that does not parse. A mapping
that is a permutation of the wrong rank is XLA's ``false``, not an error. Reshape
checks need concrete sizes (a bounded ``<=N`` counts N); ``transpose_is_bitcast``,
``deduce_transpose_dimensions_for_bitcast`` and ``permute_dimensions`` never do arithmetic
on sizes and also accept symbolic ones.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from layout_algebra.model.shapes import ArrayShape, Layout, Shape
from layout_algebra.model.syntax import ParseError
from layout_algebra.xla._common import (
    ShapeLike,
    XlaInputError,
    array_arg,
    concrete_dims,
    int_sequence,
    layout_arg,
    product,
    quote,
)
from layout_algebra.xla.layout_util import shapes_equal

__all__ = [
    "BitcastDecomposition",
    "align_layouts",
    "common_factors",
    "decompose_bitcast",
    "deduce_transpose_dimensions_for_bitcast",
    "is_reshape_or_transpose_bitcast",
    "permute_dimensions",
    "reshape_is_bitcast",
    "transpose_is_bitcast",
]


# ----------------------------------------------------------------------------- inputs
def _array(shape: ShapeLike, label: str) -> tuple[ArrayShape, str]:
    """The array behind ``shape`` (text is parsed; a parse error becomes XlaInputError)."""
    try:
        return array_arg(shape, label)
    except ParseError as e:
        raise XlaInputError(f"{label}: {quote(shape)} is not valid shape text: {e}") from None


def _with_layout(shape: ShapeLike, label: str) -> tuple[ArrayShape, str, tuple[int, ...]]:
    """An array with a valid layout, its quoted text and its ``minor_to_major``."""
    array, text = _array(shape, label)
    return array, text, layout_arg(array, text, label).minor_to_major


def _permutation(values: object, rank: int, what: str, label: str, text: str) -> tuple[int, ...]:
    """``values`` as a permutation of ``0..rank-1`` (XLA CHECK-fails on anything else)."""
    perm = int_sequence(values, what, label)
    if sorted(perm) != list(range(rank)):
        raise XlaInputError(
            f"{label}: {what} {list(perm)} is not a permutation of the {rank} dimension "
            f"number(s) of {text} (XLA would CHECK-fail)"
        )
    return perm


def _inverse(perm: Sequence[int]) -> list[int]:
    """XLA's ``InversePermutation``: ``inverse[perm[i]] = i``."""
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return inverse


# ------------------------------------------------------------------------- transpose
def transpose_is_bitcast(
    input_shape: ShapeLike,
    output_shape: ShapeLike,
    dimension_mapping: Sequence[int],
    ignore_element_type: bool = False,
) -> bool:
    """XLA's ``ShapeUtil::TransposeIsBitcast``: does each dimension keep its physical place?

    ``dimension_mapping`` is the transpose's ``dimensions``: output dimension ``i`` is input
    dimension ``dimension_mapping[i]``. True iff the element types agree (unless
    ``ignore_element_type``) and ``dimension_mapping[out.m2m[i]] == in.m2m[i]`` for all
    ``i``. The sizes of the dimensions and the tiles are never looked at:

    >>> transpose_is_bitcast("f32[8,128]{1,0:T(8,128)}", "f32[128,8]{0,1}", [1, 0])
    True
    >>> transpose_is_bitcast("f32[10,100,1000]{2,1,0}", "f32[100,1000,10]{2,1,0}", [1, 2, 0])
    False

    ``dimension_mapping`` must be a permutation with one entry per output dimension
    (``XlaInputError`` otherwise: XLA CHECK-fails); if the input's rank differs, the
    answer is False, as in XLA.
    """
    label = "transpose_is_bitcast (ShapeUtil::TransposeIsBitcast)"
    source, _, in_m2m = _with_layout(input_shape, label)
    target, target_text, out_m2m = _with_layout(output_shape, label)
    mapping = _permutation(dimension_mapping, target.rank, "dimension_mapping", label, target_text)
    return _transpose_is_bitcast(source, in_m2m, target, out_m2m, mapping, ignore_element_type)


def _transpose_is_bitcast(
    source: ArrayShape,
    in_m2m: tuple[int, ...],
    target: ArrayShape,
    out_m2m: tuple[int, ...],
    mapping: Sequence[int],
    ignore_element_type: bool,
) -> bool:
    if not ignore_element_type and source.element_type != target.element_type:
        return False
    return tuple(mapping[d] for d in out_m2m) == in_m2m


def permute_dimensions(perm: Sequence[int], shape: ShapeLike) -> ArrayShape:
    """XLA's ``ShapeUtil::PermuteDimensions``: the transpose's result shape, as a bitcast.

    Dimension ``i`` of the result is dimension ``perm[i]`` of ``shape`` (sizes and dynamic
    flags). If ``shape`` has a layout, the result's ``minor_to_major`` is
    ``inverse(perm)[m2m[i]]``, the one layout that makes ``transpose_is_bitcast(shape,
    result, perm)`` true; every other layout field, tiles included, is copied.

    >>> str(permute_dimensions([1, 0], "bf16[8,<=256]{1,0:T(8,128)(2,1)}"))
    'bf16[<=256,8]{0,1:T(8,128)(2,1)}'
    """
    label = "permute_dimensions (ShapeUtil::PermuteDimensions)"
    array, text = _array(shape, label)
    perm = _permutation(perm, array.rank, "perm", label, text)
    layout = array.layout
    if layout is not None:
        m2m = layout_arg(array, text, label).minor_to_major
        inverse = _inverse(perm)
        layout = replace(layout, minor_to_major=tuple(inverse[d] for d in m2m))
    dims = tuple(array.dimensions[p] for p in perm)
    dynamic = tuple(array.dynamic_dimensions[p] for p in perm)
    return ArrayShape(array.element_type, dims, dynamic, layout)


def deduce_transpose_dimensions_for_bitcast(
    input_shape: ShapeLike, output_shape: ShapeLike
) -> tuple[int, ...] | None:
    """XLA's ``ShapeUtil::DeduceTransposeDimensionsForBitcast``: the bitcast transpose, if any.

    The permutation ``p = in.m2m ∘ inverse(out.m2m)`` (``p[i] = in.m2m[inverse(out.m2m)[i]]``)
    keeps every dimension's physical position; it is returned if the output's sizes are the
    input's permuted by it (``out.dims[i] == in.dims[p[i]]``), else ``None``. Different ranks
    give ``None``. Element types and tiles are ignored.

    >>> deduce_transpose_dimensions_for_bitcast("f32[3,7,6,4]{3,2,1,0}", "f32[3,6,4,7]{2,1,3,0}")
    (0, 2, 3, 1)
    >>> print(deduce_transpose_dimensions_for_bitcast("f32[5,3]{1,0}", "f32[3,5]{1,0}"))
    None
    """
    label = "deduce_transpose_dimensions_for_bitcast (ShapeUtil::DeduceTransposeDimensionsForBitcast)"
    source, _, in_m2m = _with_layout(input_shape, label)
    target, _, out_m2m = _with_layout(output_shape, label)
    return _deduce_transpose(source, in_m2m, target, out_m2m)


def _deduce_transpose(
    source: ArrayShape, in_m2m: tuple[int, ...], target: ArrayShape, out_m2m: tuple[int, ...]
) -> tuple[int, ...] | None:
    if source.rank != target.rank:
        return None
    out_position = _inverse(out_m2m)
    perm = tuple(in_m2m[out_position[i]] for i in range(target.rank))
    if tuple(source.dimensions[p] for p in perm) != tuple(target.dimensions):
        return None
    return perm


# --------------------------------------------------------------------------- reshape
def reshape_is_bitcast(
    input_shape: ShapeLike, output_shape: ShapeLike, ignore_element_type: bool = False
) -> bool:
    """XLA's ``ShapeUtil::ReshapeIsBitcast``: tile-unaware test that a reshape moves nothing.

    False if the element types differ (unless ``ignore_element_type``) or the element
    counts differ; True if there are no elements. Otherwise, for every dimension of size
    > 1 of the input, the unit index along it is mapped to the output index with the same
    row-major logical position, and both must have the same physical offset under their
    ``minor_to_major`` (``IndexUtil::MultidimensionalIndexToLinearIndex``, tiles ignored);
    then the same from the output's side. Size-1 dimensions are skipped, so they may sit
    anywhere:

    >>> reshape_is_bitcast("f32[1,6]{0,1}", "f32[6]{0}")
    True
    >>> reshape_is_bitcast("f32[8,3]{1,0}", "f32[4,2,3]{0,1,2}")
    False
    >>> reshape_is_bitcast("f32[0,3]{0,1}", "f32[5,0]{1,0}")    # no elements
    True
    """
    label = "reshape_is_bitcast (ShapeUtil::ReshapeIsBitcast)"
    source, source_text, in_m2m = _with_layout(input_shape, label)
    target, target_text, out_m2m = _with_layout(output_shape, label)
    return _reshape_is_bitcast(
        source,
        concrete_dims(source, source_text, label),
        in_m2m,
        target,
        concrete_dims(target, target_text, label),
        out_m2m,
        ignore_element_type,
    )


def _reshape_is_bitcast(
    source: ArrayShape,
    in_dims: tuple[int, ...],
    in_m2m: tuple[int, ...],
    target: ArrayShape,
    out_dims: tuple[int, ...],
    out_m2m: tuple[int, ...],
    ignore_element_type: bool,
) -> bool:
    if not ignore_element_type and source.element_type != target.element_type:
        return False
    count = product(in_dims)
    if count != product(out_dims):
        return False
    if count == 0:
        return True
    return _unit_indices_keep_offsets(in_dims, in_m2m, out_dims, out_m2m) and _unit_indices_keep_offsets(
        out_dims, out_m2m, in_dims, in_m2m
    )


def _physical_offset(dims: Sequence[int], m2m: Sequence[int], index: Sequence[int]) -> int:
    """``IndexUtil::MultidimensionalIndexToLinearIndex``: the untiled offset under ``m2m``."""
    offset, stride = 0, 1
    for d in m2m:
        offset += index[d] * stride
        stride *= dims[d]
    return offset


def _row_major_index(dims: Sequence[int], position: int) -> list[int]:
    """The index at row-major (descending-layout) logical ``position`` in ``dims``."""
    index = [0] * len(dims)
    for d in reversed(range(len(dims))):
        position, index[d] = divmod(position, dims[d])
    return index


def _unit_indices_keep_offsets(
    a_dims: Sequence[int], a_m2m: Sequence[int], b_dims: Sequence[int], b_m2m: Sequence[int]
) -> bool:
    """One direction of XLA's check: each unit index of ``a`` keeps its offset in ``b``."""
    for d, size in enumerate(a_dims):
        if size <= 1:
            continue
        unit = [0] * len(a_dims)
        unit[d] = 1
        position = product(a_dims[d + 1 :])  # row-major logical position of the unit index
        other = _row_major_index(b_dims, position)
        if _physical_offset(a_dims, a_m2m, unit) != _physical_offset(b_dims, b_m2m, other):
            return False
    return True


def is_reshape_or_transpose_bitcast(a: ShapeLike, b: ShapeLike, ignore_element_type: bool = False) -> bool:
    """XLA's ``ShapeUtil::IsReshapeOrTransposeBitcast``, with its argument swap.

    In order: False if the element types differ (unless ``ignore_element_type``); True if
    the shapes are equal ignoring the element type (``Shape::Equal``: dimensions, dynamic
    flags and the whole layout, tiles included, ``M(n)`` excepted); True if
    ``reshape_is_bitcast(a, b)`` ignoring types; otherwise, if
    ``p = deduce_transpose_dimensions_for_bitcast(a, b)`` exists, the answer is
    ``transpose_is_bitcast(b, a, p)`` (note: *b* first), which holds only when ``p`` is its
    own inverse. So a swap of two dimensions is found and a rotation of three is not:

    >>> is_reshape_or_transpose_bitcast("f32[5,3]{1,0}", "f32[3,5]{0,1}")
    True
    >>> is_reshape_or_transpose_bitcast("f32[2,3,4]{2,1,0}", "f32[3,4,2]{1,0,2}")
    False
    """
    label = "is_reshape_or_transpose_bitcast (ShapeUtil::IsReshapeOrTransposeBitcast)"
    first, first_text, a_m2m = _with_layout(a, label)
    second, second_text, b_m2m = _with_layout(b, label)
    if not ignore_element_type and first.element_type != second.element_type:
        return False
    if shapes_equal(first, replace(second, element_type=first.element_type)):
        return True
    a_dims = concrete_dims(first, first_text, label)
    b_dims = concrete_dims(second, second_text, label)
    if _reshape_is_bitcast(first, a_dims, a_m2m, second, b_dims, b_m2m, True):
        return True
    perm = _deduce_transpose(first, a_m2m, second, b_m2m)
    if perm is not None:
        return _transpose_is_bitcast(second, b_m2m, first, a_m2m, perm, True)  # XLA's swap
    return False


# ------------------------------------------------------------------------- decompose
@dataclass(frozen=True)
class BitcastDecomposition:
    """What ``decompose_bitcast`` found (XLA's ``ShapeUtil::BitcastDecomposition``).

    * ``type == "reshape"``: the bitcast is a reshape; no other field is set.
    * ``type == "transpose"``: a transpose with ``dimensions = transpose_dims``.
    * ``type == "trt"``: transpose ``input`` by ``transpose1_dims`` to
      ``transpose1_shape``, reshape to ``reshape_shape``, transpose by
      ``transpose2_dims`` to ``output``. Each of the three steps is a bitcast by XLA's
      (tile-unaware) rules.
    """

    type: Literal["reshape", "transpose", "trt"]
    transpose_dims: tuple[int, ...] | None = None
    transpose1_dims: tuple[int, ...] | None = None
    transpose1_shape: ArrayShape | None = None
    reshape_shape: ArrayShape | None = None
    transpose2_dims: tuple[int, ...] | None = None

    @property
    def is_transpose1_identity(self) -> bool:
        """``BitcastDecompositionTrt::IsTranspose1Identity`` (``trt`` only)."""
        return self.transpose1_dims is not None and list(self.transpose1_dims) == sorted(self.transpose1_dims)

    @property
    def is_transpose2_identity(self) -> bool:
        """``BitcastDecompositionTrt::IsTranspose2Identity`` (``trt`` only)."""
        return self.transpose2_dims is not None and list(self.transpose2_dims) == sorted(self.transpose2_dims)


def _descending_same_physical(array: ArrayShape, m2m: tuple[int, ...]) -> ArrayShape:
    """``MakeShapeWithDescendingLayoutAndSamePhysicalLayout``: dims in physical order.

    Dimension ``i`` is the ``i``-th most major one of ``array``; the layout is descending
    and keeps the tiles, ``E(n)``, ``L(n)`` and memory space (nothing else).
    """
    rank = array.rank
    major = [m2m[rank - 1 - i] for i in range(rank)]
    layout = array.layout
    assert layout is not None  # callers checked it
    new_layout = Layout(
        tuple(range(rank - 1, -1, -1)),
        tiles=layout.tiles,
        tail_padding_alignment_in_elements=layout.tail_padding_alignment_in_elements,
        element_size_in_bits=layout.element_size_in_bits,
        memory_space=layout.memory_space,
    )
    return ArrayShape(
        array.element_type,
        tuple(array.dimensions[d] for d in major),
        tuple(array.dynamic_dimensions[d] for d in major),
        new_layout,
    )


def decompose_bitcast(input_shape: ShapeLike, output_shape: ShapeLike) -> BitcastDecomposition | None:
    """XLA's ``ShapeUtil::DecomposeBitcast``: a bitcast as reshape, transpose, or both.

    ``None`` if the element counts differ (``IsDecomposableBitcast``); the element types
    may differ. Otherwise ``"reshape"`` if ``reshape_is_bitcast`` (types ignored), else
    ``"transpose"`` if ``deduce_transpose_dimensions_for_bitcast`` finds one, else
    ``"trt"``: ``transpose1_shape`` and ``reshape_shape`` are the input and output with
    their dimensions listed major to minor and a descending layout, ``transpose1_dims[i] =
    in.m2m[rank-1-i]`` and ``transpose2_dims[i] = (out_rank-1) - inverse(out.m2m)[i]``.

    >>> decompose_bitcast("f32[3,7,6,4]{3,2,1,0}", "f32[3,6,4,7]{2,1,3,0}")
    BitcastDecomposition(type='transpose', transpose_dims=(0, 2, 3, 1), transpose1_dims=None, transpose1_shape=None, reshape_shape=None, transpose2_dims=None)
    >>> d = decompose_bitcast("f32[16,17,3,7]{3,2,1,0}", "f32[7,16,51]{0,2,1}")
    >>> str(d.transpose1_shape), str(d.reshape_shape), d.transpose2_dims
    ('f32[16,17,3,7]{3,2,1,0}', 'f32[16,51,7]{2,1,0}', (2, 0, 1))
    >>> print(decompose_bitcast("f32[2,3]{1,0}", "f32[7]{0}"))
    None
    """
    label = "decompose_bitcast (ShapeUtil::DecomposeBitcast)"
    source, source_text, in_m2m = _with_layout(input_shape, label)
    target, target_text, out_m2m = _with_layout(output_shape, label)
    in_dims = concrete_dims(source, source_text, label)
    out_dims = concrete_dims(target, target_text, label)
    if product(in_dims) != product(out_dims):
        return None
    if _reshape_is_bitcast(source, in_dims, in_m2m, target, out_dims, out_m2m, True):
        return BitcastDecomposition("reshape")
    perm = _deduce_transpose(source, in_m2m, target, out_m2m)
    if perm is not None:
        return BitcastDecomposition("transpose", transpose_dims=perm)
    out_rank = target.rank
    out_position = _inverse(out_m2m)
    return BitcastDecomposition(
        "trt",
        transpose1_dims=tuple(in_m2m[source.rank - 1 - i] for i in range(source.rank)),
        transpose1_shape=_descending_same_physical(source, in_m2m),
        reshape_shape=_descending_same_physical(target, out_m2m),
        transpose2_dims=tuple(out_rank - 1 - out_position[i] for i in range(out_rank)),
    )


# ----------------------------------------------------------------------------- align
def common_factors(a: Sequence[int], b: Sequence[int]) -> tuple[tuple[int, int], ...]:
    """XLA's ``CommonFactors``: cut two size lists into groups of equal products.

    Returns the bounds ``(i, j)`` of consecutive groups: ``a[i0:i1]`` and ``b[j0:j1]``
    have the same product, and each group is as short as possible. The first bound is
    ``(0, 0)`` and the last ``(len(a), len(b))``.

    >>> common_factors([2, 3, 4], [6, 2, 2])
    ((0, 0), (2, 1), (3, 3))
    >>> common_factors([7, 9, 2, 15], [63, 6, 5])
    ((0, 0), (2, 1), (4, 3))

    Zeros follow XLA: after the longest equal prefix, if what is left has product 0 on
    both sides it is one group; if the products of what is left differ (possible only
    when the prefix holds a 0), everything is a single group:

    >>> common_factors([0, 10, 3], [0, 3])
    ((0, 0), (3, 2))

    The products must be equal (``XlaInputError``; XLA CHECK-fails).
    """
    label = "common_factors (CommonFactors)"
    a = int_sequence(a, "a", label)
    b = int_sequence(b, "b", label)
    if any(x < 0 for x in (*a, *b)):
        raise XlaInputError(f"{label}: sizes must be >= 0, got {list(a)} and {list(b)}")
    if product(a) != product(b):
        raise XlaInputError(
            f"{label}: {list(a)} and {list(b)} have different products "
            f"({product(a)} and {product(b)}); XLA CHECK-fails"
        )
    return tuple(_common_factors(a, b))


def _common_factors(a: Sequence[int], b: Sequence[int]) -> list[tuple[int, int]]:
    if tuple(a) == tuple(b):
        return [(k, k) for k in range(len(a) + 1)]
    bounds: list[tuple[int, int]] = []
    i = j = 0
    last = (-1, -1)  # the most recent bound
    while i < len(a) and j < len(b) and a[i] == b[j]:  # equal leading sizes: groups of one
        last = (i, j)
        bounds.append(last)
        i += 1
        j += 1
    if product(a[i:]) != product(b[j:]):
        return [(0, 0), (len(a), len(b))]
    if product(a[i:]) == 0:
        return [*bounds, (i, j), (len(a), len(b))]
    size_a = size_b = 1  # products of the current group so far
    while True:
        if size_a == size_b and (i > last[0] or j > last[1]):
            last = (i, j)
            bounds.append(last)
            continue
        more_a, more_b = i < len(a), j < len(b)
        if not (more_a or more_b):
            return bounds
        # Grow the smaller side; on a tie, the side(s) whose next size is not larger.
        step_a = size_a < size_b or (more_a and (not more_b or (size_a == size_b and a[i] <= b[j])))
        step_b = size_b < size_a or (more_b and (not more_a or (size_a == size_b and b[j] <= a[i])))
        if step_a:
            size_a *= a[i]
            i += 1
        if step_b:
            size_b *= b[j]
            j += 1


def align_layouts(input_shape: ShapeLike, output_dims: ShapeLike | Sequence[int]) -> Layout | None:
    """XLA's ``ShapeUtil::AlignLayouts``: an output layout making the reshape a bitcast.

    ``output_dims`` is the reshape's output: a list of sizes, or a shape whose dimensions
    are used (its element type and layout are ignored). The result is a plain layout
    (``minor_to_major`` only), or ``None`` if XLA's method finds none:

    * Size-1 dimensions are dropped on both sides and the rest aligned; the output's
      size-1 dimensions are then added as the most major ones, in descending order.
    * Otherwise the sizes are cut into ``common_factors`` groups. The input dimensions of
      each group must be physically adjacent, the group's first dimension most major and
      each next one exactly one place more minor; if not, ``None``. Walking the input's
      ``minor_to_major`` from the minor end, each group's output dimensions are listed from
      last to first.

    >>> align_layouts("f32[3,8,5,7,11]{3,2,1,0,4}", "f32[3,2,4,35,11]")
    parse_layout('{3,2,1,0,4}')
    >>> align_layouts("f32[2,1,6]{0,2,1}", [1, 2, 2, 3, 1])    # size-1 dims 4, 0 go on top
    parse_layout('{1,3,2,4,0}')

    Tiles are ignored, like in every function here. ``XlaInputError`` if the element
    counts differ (XLA CHECK-fails in ``CommonFactors``).
    """
    label = "align_layouts (ShapeUtil::AlignLayouts)"
    source, source_text, in_m2m = _with_layout(input_shape, label)
    in_dims = concrete_dims(source, source_text, label)
    if isinstance(output_dims, (str, Shape)):
        target, target_text = _array(output_dims, label)
        out_dims = concrete_dims(target, target_text, label)
    else:
        out_dims = int_sequence(output_dims, "output_dims", label)
        if any(d < 0 for d in out_dims):
            raise XlaInputError(f"{label}: output_dims {list(out_dims)} has a negative size")
    if product(in_dims) != product(out_dims):
        raise XlaInputError(
            f"{label}: {source_text} has {product(in_dims)} elements but the output "
            f"dimensions {list(out_dims)} hold {product(out_dims)}; a reshape keeps the "
            "element count (XLA CHECK-fails in CommonFactors)"
        )
    m2m = _align(in_dims, in_m2m, out_dims)
    return None if m2m is None else Layout(m2m)


def _align(in_dims: Sequence[int], in_m2m: Sequence[int], out_dims: Sequence[int]) -> tuple[int, ...] | None:
    if 1 in in_dims or 1 in out_dims:
        kept_in = [d for d, size in enumerate(in_dims) if size != 1]
        renumbered = {d: k for k, d in enumerate(kept_in)}
        kept_out = [d for d, size in enumerate(out_dims) if size != 1]
        inner = _align(
            [in_dims[d] for d in kept_in],
            [renumbered[d] for d in in_m2m if d in renumbered],
            [out_dims[d] for d in kept_out],
        )
        if inner is None:
            return None
        ones = [d for d in reversed(range(len(out_dims))) if out_dims[d] == 1]
        return (*(kept_out[d] for d in inner), *ones)

    bounds = _common_factors(in_dims, out_dims)
    group_of = [0] * len(in_dims)
    for group, ((start, _), (end, _)) in enumerate(itertools.pairwise(bounds)):
        position = in_m2m.index(start)
        group_of[start] = group
        for d in range(start + 1, end):
            position -= 1  # the next dimension of the group must be the next more minor
            if position < 0 or in_m2m[position] != d:
                return None
            group_of[d] = group

    layout: list[int] = []
    minor = 0
    while len(layout) < len(out_dims):
        group = group_of[in_m2m[minor]]
        (in_start, out_start), (in_end, out_end) = bounds[group], bounds[group + 1]
        layout.extend(range(out_end - 1, out_start - 1, -1))
        minor += in_end - in_start
    return tuple(layout)
