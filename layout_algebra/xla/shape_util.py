"""XLA's ``ShapeUtil`` size and stride functions.

These reproduce the answers of XLA's C++ code, simplifications included; they are not
the exact sizes of a layout (see ``layout_algebra.xla`` for the list of quirks).

XLA has three different "sizes" of an array, and they disagree on purpose:

* ``byte_size_of`` / ``byte_size_of_elements`` (``ShapeUtil::ByteSizeOf``): the elements
  alone, as if there were no tiling: ``n * ByteWidth``, or ``ceil(n * E / 8)`` with ``E(n)``.
  Tiles, ``L(n)``, split configs and ``M(n)`` are all ignored.
* ``array_size`` (``ShapeUtil::ArraySize``): the allocation, with each dimension padded to
  the **first** tile, then to ``L(n)``.
* ``array_data_size`` (``ShapeUtil::ArrayDataSize``): the allocation up to and including
  the last element, i.e. without the padding after it.

The worked example of XLA's tiled-layout document, ``f32[3,5]`` with tile ``(2,2)``: the
5 columns pad to 6 and the 3 rows to 4, so 24 slots (96 bytes) are allocated; the last
element (2,4) sits in slot 20, so 21 slots (84 bytes) hold data; the 15 elements alone are
60 bytes.

>>> from layout_algebra.xla import array_size, array_data_size, byte_size_of
>>> s = "f32[3,5]{1,0:T(2,2)}"
>>> array_size(s), array_data_size(s), byte_size_of(s)
(96, 84, 60)

``byte_size_of`` never looks at tiles, so a padded tiling changes nothing:

>>> byte_size_of("f32[16,256]{1,0:T(8,128)}"), byte_size_of("f32[10,256]{1,0:T(8,128)}")
(16384, 10240)
>>> array_size("f32[10,256]{1,0:T(8,128)}")    # 10 rows pad to 16
16384

Sub-byte types take a whole byte each unless the layout says ``E(n)``:

>>> byte_size_of("s4[64,128]"), byte_size_of("s4[64,128]{1,0:E(4)}")
(8192, 4096)

Tile dimensions beyond the rank pad virtual size-1 dimensions: a tiled scalar takes a
whole tile (256 x 4 bytes). ``L(n)`` counts only when there are tiles:

>>> array_size("f32[]{:T(256)}")
1024
>>> array_size("f32[3]{0:T(1)L(1024)}"), array_size("f32[3]{0:L(1024)}")
(4096, 12)

Tuples are sized as their table of pointers, one per top-level element:

>>> byte_size_of("(f32[], s32[2], (f32[], f32[]))", pointer_size=8)
24

Byte strides are those of the untiled layout, in bytes per step of each dimension:

>>> from layout_algebra.xla import unpacked_byte_strides, byte_strides
>>> unpacked_byte_strides("f16[5,7,9]{2,1,0}")
(126, 18, 2)
>>> print(byte_strides("s4[2,4]{1,0:E(4)}"))   # half-byte elements have no byte stride
None
"""

from __future__ import annotations

from layout_algebra.model.primitive_types import PrimitiveType
from layout_algebra.model.shapes import ArrayShape, BufferShape, OpaqueShape, TokenShape, TupleShape
from layout_algebra.model.syntax import as_shape
from layout_algebra.xla._common import (
    ShapeLike,
    XlaInputError,
    array_arg,
    bytes_for_elements,
    concrete_dims,
    element_type_arg,
    layout_arg,
    product,
    quote,
    round_up_to,
    usable_tile,
)
from layout_algebra.xla.layout_util import linear_index_unchecked, max_split_size_unchecked

__all__ = [
    "array_data_size",
    "array_size",
    "byte_size_of",
    "byte_size_of_elements",
    "byte_size_of_elements_recursive",
    "byte_size_of_primitive_type",
    "byte_strides",
    "unpacked_byte_strides",
]


def byte_size_of_primitive_type(element_type: PrimitiveType | str) -> int:
    """XLA's ``ShapeUtil::ByteSizeOfPrimitiveType`` = ``primitive_util::ByteWidth``.

    ``ceil(bit_width / 8)``: ``pred`` and the sub-byte types take 1 byte.

    >>> [byte_size_of_primitive_type(t) for t in ("pred", "s4", "bf16", "f32", "c128")]
    [1, 1, 2, 4, 16]
    """
    label = "byte_size_of_primitive_type (ShapeUtil::ByteSizeOfPrimitiveType)"
    return element_type_arg(element_type, label).byte_width


def byte_size_of_elements(shape: ShapeLike) -> int:
    """XLA's ``ShapeUtil::ByteSizeOfElements``: the elements' bytes, with no padding at all.

    ``n`` = the number of elements (a bounded dimension ``<=N`` counts N); the result is
    ``ceil(n * E / 8)`` if the layout sets ``E(n)``, else ``n * ByteWidth``. Tiles,
    ``L(n)``, split configs and ``M(n)`` are ignored. A buffer ``b(...)`` is sized as the
    array it holds.

    >>> byte_size_of_elements("pred[8]"), byte_size_of_elements("f32[<=10,3]")
    (8, 120)
    """
    label = "byte_size_of_elements (ShapeUtil::ByteSizeOfElements)"
    array, text = array_arg(shape, label, allow_buffer=True)
    return _byte_size_of_elements(array, text, label)


def _byte_size_of_elements(array: ArrayShape, text: str, label: str) -> int:
    count = product(concrete_dims(array, text, label))
    element_size_in_bits = 0
    if array.layout is not None:
        element_size_in_bits = layout_arg(array, text, label).element_size_in_bits
    return bytes_for_elements(count, element_size_in_bits, array.element_type)


def byte_size_of(shape: ShapeLike, pointer_size: int = -1) -> int:
    """XLA's ``ShapeUtil::ByteSizeOf``: the bytes of a shape, ignoring tiles entirely.

    * array or buffer: ``byte_size_of_elements``;
    * tuple: ``pointer_size`` times the number of top-level elements (the index table;
      the elements' own buffers are not counted), so ``pointer_size`` must be > 0;
    * token: 0;
    * opaque: ``pointer_size``, which must be > 0.

    >>> byte_size_of("c64[10,20]"), byte_size_of("token[]"), byte_size_of("opaque[]", pointer_size=8)
    (1600, 0, 8)
    """
    label = "byte_size_of (ShapeUtil::ByteSizeOf)"
    if not isinstance(pointer_size, int) or isinstance(pointer_size, bool):
        raise TypeError(f"{label}: pointer_size must be an int, got {pointer_size!r}")
    value = as_shape(shape)
    text = quote(shape)
    if isinstance(value, TupleShape):
        if pointer_size <= 0:
            raise XlaInputError(
                f"{label}: {text} is a tuple, whose size is its table of "
                f"{len(value.elements)} pointer(s); pass pointer_size > 0 (for example 8), "
                f"got {pointer_size}"
            )
        return pointer_size * len(value.elements)
    if isinstance(value, BufferShape):
        return _byte_size_of_elements(value.array, text, label)
    if isinstance(value, ArrayShape):
        return _byte_size_of_elements(value, text, label)
    if isinstance(value, TokenShape):
        return 0
    if isinstance(value, OpaqueShape):
        if pointer_size <= 0:
            raise XlaInputError(
                f"{label}: {text} is an opaque handle, whose size is one pointer; pass "
                f"pointer_size > 0 (for example 8), got {pointer_size}"
            )
        return pointer_size
    raise XlaInputError(f"{label}: {text} has no definitive size")  # pragma: no cover


def byte_size_of_elements_recursive(shape: ShapeLike) -> int:
    """XLA's ``ShapeUtil::ByteSizeOfElementsRecursive``: element bytes summed over a tuple.

    Arrays (and buffers) count ``byte_size_of_elements``, tuples the sum of their
    elements, tokens 0. Opaque handles count 0 here; XLA's version CHECK-fails on them.

    >>> byte_size_of_elements_recursive("(s32[], (f32[3], token[]), s4[3]{0:E(4)})")
    18
    """
    label = "byte_size_of_elements_recursive (ShapeUtil::ByteSizeOfElementsRecursive)"
    value = as_shape(shape)
    if isinstance(value, TupleShape):
        return sum(byte_size_of_elements_recursive(e) for e in value.elements)
    if isinstance(value, (TokenShape, OpaqueShape)):
        return 0
    array, _ = array_arg(value, label, allow_buffer=True)
    return _byte_size_of_elements(array, quote(shape), label)


def array_size(shape: ShapeLike) -> int:
    """XLA's ``ShapeUtil::ArraySize``: the bytes allocated for an array, padding included.

    Without tiles this is ``byte_size_of_elements`` (``L(n)`` and split configs are
    ignored). With tiles, only the **first** tile pads: the ``p``-th most minor
    dimension is rounded up to the ``p``-th most minor tile dimension (tile dimensions
    beyond the rank pad a size-1 dimension), each dimension counts its largest split
    (``max_split_size``), and the element count is rounded up to ``L(n)``.

    >>> array_size("s4[9216,6144]{1,0:T(64,128)(8,1)E(4)}")   # 9216*6144 half-bytes
    28311552
    >>> array_size("bf16[3,128]{1,0:T(8,128)(2,1)}")          # 3 rows pad to 8: 8*128*2
    2048

    Raises ``XlaInputError`` if the first tile has a combined dimension ``*`` (XLA's
    ``ArraySize`` would use INT64_MIN as a tile size) or a 0, for a shape without a
    layout, and for shapes without concrete sizes.
    """
    label = "array_size (ShapeUtil::ArraySize)"
    array, text = array_arg(shape, label)
    dims = concrete_dims(array, text, label)
    layout = layout_arg(array, text, label)
    if not layout.tiles:
        return _byte_size_of_elements(array, text, label)  # L(n) and SC ignored here
    tile = usable_tile(layout.tiles[0], text, label, "XLA's ShapeUtil::ArraySize")
    k, rank, m2m = len(tile), len(dims), layout.minor_to_major
    count = 1
    for p in range(k):  # p: physical position counted from the minor end
        size = max_split_size_unchecked(dims, layout, m2m[p]) if p < rank else 1
        count *= round_up_to(size, tile[k - 1 - p])
    for p in range(k, rank):
        count *= max_split_size_unchecked(dims, layout, m2m[p])
    if layout.tail_padding_alignment_in_elements != 1:
        count = round_up_to(count, layout.tail_padding_alignment_in_elements)
    return bytes_for_elements(count, layout.element_size_in_bits, array.element_type)


def array_data_size(shape: ShapeLike) -> int:
    """XLA's ``ShapeUtil::ArrayDataSize``: the allocation up to the last element's slot.

    ``LayoutUtil::LinearIndex`` of the last element (so: top-level tile only, rank 1
    untiled) plus one, in bytes; 0 when a dimension is 0.

    >>> array_data_size("f32[8,4]{1,0:T(2,2)}")    # last element (7,3) in slot 31
    128
    >>> array_data_size("f32[0,4]{1,0:T(2,2)}")
    0
    """
    label = "array_data_size (ShapeUtil::ArrayDataSize)"
    array, text = array_arg(shape, label)
    dims = concrete_dims(array, text, label)
    layout = layout_arg(array, text, label)
    if 0 in dims:
        return 0
    last = [d - 1 for d in dims]
    size = linear_index_unchecked(dims, layout, last, text, label) + 1
    return bytes_for_elements(size, layout.element_size_in_bits, array.element_type)


def unpacked_byte_strides(shape: ShapeLike) -> tuple[int, ...]:
    """XLA's ``ShapeUtil::UnpackedByteStrides``: bytes per step of each logical dimension.

    The strides of the untiled layout with ``ByteWidth``-byte elements: tiles and
    ``E(n)`` are ignored.

    >>> unpacked_byte_strides("s4[2,4]{1,0:E(4)}")
    (4, 1)
    >>> unpacked_byte_strides("f32[2,3]{0,1}")
    (4, 8)
    """
    label = "unpacked_byte_strides (ShapeUtil::UnpackedByteStrides)"
    array, text = array_arg(shape, label)
    return _unpacked_byte_strides(array, text, label)


def _unpacked_byte_strides(array: ArrayShape, text: str, label: str) -> tuple[int, ...]:
    dims = concrete_dims(array, text, label)
    layout = layout_arg(array, text, label)
    strides = [0] * len(dims)
    stride = array.element_type.byte_width
    for d in layout.minor_to_major:
        strides[d] = stride
        stride *= dims[d]
    return tuple(strides)


def byte_strides(shape: ShapeLike) -> tuple[int, ...] | None:
    """XLA's ``ShapeUtil::ByteStrides``: ``None`` if ``E(n)`` is not whole bytes.

    Otherwise the same as ``unpacked_byte_strides``, which uses ``ByteWidth`` and not
    ``E(n)``: ``s8`` with ``E(16)`` still reports 1-byte strides.

    >>> byte_strides("s8[3]{0:E(16)}"), byte_strides("f16[5,7,9]{2,1,0}")
    ((1,), (126, 18, 2))
    """
    label = "byte_strides (ShapeUtil::ByteStrides)"
    array, text = array_arg(shape, label)
    strides = _unpacked_byte_strides(array, text, label)  # checks the shape first
    if array.layout is not None and array.layout.element_size_in_bits % 8 != 0:
        return None
    return strides
