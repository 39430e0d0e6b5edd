"""Input checks shared by the XLA-compatible helpers (private).

XLA's C++ helpers assume their input is valid: a bad shape makes them CHECK-fail, call
``LOG(FATAL)``, or silently compute with garbage. Here every such input is turned into an
``XlaInputError`` that quotes the shape and says what is wrong, before any arithmetic runs.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence

from layout_algebra.model.errors import LayoutAlgebraError
from layout_algebra.model.primitive_types import PrimitiveType, primitive_type
from layout_algebra.model.shapes import (
    UNBOUNDED_SIZE,
    ArrayShape,
    BufferShape,
    Layout,
    OpaqueShape,
    Shape,
    Tile,
    TokenShape,
    TupleShape,
)
from layout_algebra.model.syntax import as_shape

__all__ = ["ShapeLike", "XlaInputError"]

#: What every public function accepts as a shape: a ``Shape`` value or XLA shape text.
ShapeLike = Shape | str


class XlaInputError(LayoutAlgebraError, ValueError):
    """An input that XLA's C++ helper has no answer for.

    In XLA the same input would CHECK-fail, ``LOG(FATAL)``, or run into undefined
    behaviour; or the input uses something XLA's functions cannot size at all (an
    unbounded ``?`` dimension, a symbolic dimension of this package). The message quotes
    the shape and says what is wrong.
    """


XlaInputError.__module__ = "layout_algebra.xla"  # where users import it from


def quote(shape: object) -> str:
    """``'f32[2,3]{1,0}'``: the user's text as given, or the canonical text of a value."""
    return repr(shape if isinstance(shape, str) else str(shape))


def kind_of(shape: Shape) -> str:
    if isinstance(shape, TupleShape):
        return "a tuple shape"
    if isinstance(shape, TokenShape):
        return "a token shape"
    if isinstance(shape, OpaqueShape):
        return "an opaque shape"
    if isinstance(shape, BufferShape):
        return "a buffer shape"
    return "an array shape"


def array_arg(shape: ShapeLike, label: str, *, allow_buffer: bool = False) -> tuple[ArrayShape, str]:
    """The ``ArrayShape`` behind ``shape`` and its quoted text; anything else is an error."""
    value = as_shape(shape)
    text = quote(shape)
    if allow_buffer and isinstance(value, BufferShape):
        return value.array, text
    if not isinstance(value, ArrayShape):
        accepted = "an array shape (or a buffer b(...) of one)" if allow_buffer else "an array shape"
        raise XlaInputError(f"{label}: needs {accepted}, but {text} is {kind_of(value)}")
    return value, text


def concrete_dims(shape: ArrayShape, text: str, label: str) -> tuple[int, ...]:
    """The integer dimension sizes XLA would read; bounded ``<=N`` dimensions count as N."""
    dims: list[int] = []
    for i, (size, dynamic) in enumerate(zip(shape.dimensions, shape.dynamic_dimensions, strict=True)):
        if isinstance(size, int):
            if dynamic and size == UNBOUNDED_SIZE:
                raise XlaInputError(
                    f"{label}: dimension {i} of {text} is unbounded dynamic ('?') and has no size; "
                    "XLA's functions need concrete sizes (a bounded dimension '<=N' counts as N)"
                )
            dims.append(size)
            continue
        if getattr(size, "is_Integer", False):  # a SymPy Integer is just a number
            if int(size) < 0:
                raise XlaInputError(f"{label}: dimension {i} of {text} has the negative size {size}")
            dims.append(int(size))
            continue
        raise XlaInputError(
            f"{label}: dimension {i} of {text} is symbolic ({size}), but XLA's C++ functions "
            "need concrete sizes; substitute numbers for the symbols first"
        )
    return tuple(dims)


def layout_arg(shape: ArrayShape, text: str, label: str) -> Layout:
    """The shape's layout, checked the way the helpers below need it.

    Checks ``minor_to_major`` (a permutation of the dimensions), ``E(n) >= 0`` and that
    every split config names a physical dimension that exists: XLA would index out of
    bounds or compute with a negative size otherwise.
    """
    layout = shape.layout
    if layout is None:
        raise XlaInputError(
            f"{label}: {text} has no layout; this XLA function reads shape.layout(), "
            "so give the shape one (shape text without a layout gets the default {n-1,...,0})"
        )
    rank = shape.rank
    m2m = layout.minor_to_major
    if sorted(m2m) != list(range(rank)):
        m2m_text = "{" + ",".join(map(str, m2m)) + "}"
        raise XlaInputError(
            f"{label}: minor_to_major {m2m_text} of {text} is not a permutation of the "
            f"{rank} dimension numbers 0..{rank - 1}"
        )
    if layout.element_size_in_bits < 0:
        raise XlaInputError(f"{label}: {text} has a negative element size E({layout.element_size_in_bits})")
    for config in layout.split_configs:
        if not 0 <= config.dimension < rank:
            raise XlaInputError(
                f"{label}: split config SC{config} of {text} names physical dimension "
                f"{config.dimension}, but the shape has {rank} dimensions (0 = most major)"
            )
    return layout


def usable_tile(tile: Tile, text: str, label: str, what: str) -> tuple[int, ...]:
    """A tile's dimensions, refusing ``*`` and ``0`` (XLA would divide by them)."""
    if tile.has_combine_dimension:
        raise XlaInputError(
            f"{label}: the tile {tile} of {text} has a combined dimension '*', which {what} "
            "does not support (XLA would use Tile::kCombineDimension = INT64_MIN as a tile size)"
        )
    if 0 in tile.dimensions:
        raise XlaInputError(f"{label}: the tile {tile} of {text} has a dimension of size 0")
    return tile.dimensions


def as_int(value: object, what: str, label: str) -> int:
    """``value`` as a Python int (NumPy integers are fine; bools and floats are not)."""
    if isinstance(value, bool):
        raise TypeError(f"{label}: {what} must be an int, got {value!r}")
    try:
        return operator.index(value)  # type: ignore[call-overload]
    except TypeError:
        raise TypeError(f"{label}: {what} must be an int, got {value!r}") from None


def dimension_arg(dim: object, rank: int, text: str, label: str) -> int:
    """A logical dimension number in ``[0, rank)``."""
    dim = as_int(dim, "the dimension number", label)
    if not 0 <= dim < rank:
        raise XlaInputError(
            f"{label}: dimension {dim} is out of range for {text}, which has {rank} dimension(s)"
        )
    return dim


def int_sequence(values: object, what: str, label: str) -> tuple[int, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"{label}: {what} must be a sequence of ints, got {values!r}")
    try:
        return tuple(as_int(v, what, label) for v in values)
    except TypeError:
        raise TypeError(f"{label}: {what} must be a sequence of ints, got {values!r}") from None


def element_type_arg(element_type: PrimitiveType | str, label: str) -> PrimitiveType:
    """An array element type from a ``PrimitiveType`` or its XLA name."""
    if isinstance(element_type, str):
        try:
            element_type = primitive_type(element_type)
        except ValueError as e:
            raise XlaInputError(f"{label}: {e}") from None
    if not isinstance(element_type, PrimitiveType):
        raise TypeError(f"{label}: expected a PrimitiveType or a type name, got {element_type!r}")
    if not element_type.is_array_type:
        raise XlaInputError(
            f"{label}: {element_type.text!r} is not an array element type and has no byte width "
            "(XLA's primitive_util::ByteWidth LOG(FATAL)s on tuple, opaque, token and buffer)"
        )
    return element_type


def product(values: Sequence[int]) -> int:
    result = 1
    for v in values:
        result *= v
    return result


def ceil_of_ratio(a: int, b: int) -> int:
    """XLA's ``CeilOfRatio`` for the non-negative values used here."""
    return -(-a // b)


def round_up_to(value: int, multiple: int) -> int:
    """XLA's ``RoundUpTo``: the smallest multiple of ``multiple`` that is >= ``value``."""
    return ceil_of_ratio(value, multiple) * multiple


def bytes_for_elements(count: int, element_size_in_bits: int, element_type: PrimitiveType) -> int:
    """XLA's last step of every size function: ``E`` bits each if set, else ``ByteWidth`` bytes."""
    if element_size_in_bits != 0:
        return ceil_of_ratio(count * element_size_in_bits, 8)
    return count * element_type.byte_width
