"""XLA's layout validation rules (``LayoutUtil::ValidateLayoutForShape``), explained.

XLA's parser accepts layouts that are not valid (``f32[2,3]{0,0}`` parses); validation is
a separate step. ``validate`` applies XLA's rules and raises ``InvalidLayoutError`` that
quotes the shape and lists every problem; ``layout_problems`` returns the list instead.

>>> from layout_algebra import parse_shape, validate
>>> validate(parse_shape("f32[2,3]{1,0:T(8,128)}"))
parse_shape('f32[2,3]{1,0:T(8,128)}')
>>> validate("f32[2,3]{0,0:T(8,0)}")
Traceback (most recent call last):
...
layout_algebra.model.validation.InvalidLayoutError: invalid layout in f32[2,3]{0,0:T(8,0)}:
  - minor_to_major {0,0} lists dimension 0 twice and omits 1: it must be a permutation of 0..1
  - tile (8,0) has a dimension of size 0

The rules are XLA's and only XLA's; in particular they do not look at the tile rank
against the shape rank, combined dimensions, memory spaces or split configs (XLA does
not). Whether a layout *means* something (tiles that fit, element sizes that hold the
type) is checked where a meaning is computed, e.g. by ``physical_size_in_bytes``.
"""

from __future__ import annotations

from collections.abc import Iterator

from layout_algebra.model.errors import LayoutAlgebraError
from layout_algebra.model.shapes import ArrayShape, BufferShape, Shape, TupleShape
from layout_algebra.model.syntax import as_shape

__all__ = ["InvalidLayoutError", "layout_problems", "validate"]


class InvalidLayoutError(LayoutAlgebraError, ValueError):
    """A shape whose layout breaks XLA's validation rules; ``.problems`` lists them."""

    def __init__(self, shape: Shape, problems: list[str]) -> None:
        self.shape = shape
        self.problems = problems
        listed = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"invalid layout in {shape}:\n{listed}")


def layout_problems(shape: Shape | str) -> list[str]:
    """Every way ``shape`` breaks ``LayoutUtil::ValidateLayoutForShape``; empty if valid."""
    return list(_problems(as_shape(shape), ""))


def validate(shape: Shape | str) -> Shape:
    """Return ``shape`` (parsed if text) if its layouts are valid for XLA, else raise."""
    parsed = as_shape(shape)
    problems = layout_problems(parsed)
    if problems:
        raise InvalidLayoutError(parsed, problems)
    return parsed


def _problems(shape: Shape, where: str) -> Iterator[str]:
    if isinstance(shape, TupleShape):
        for i, element in enumerate(shape.elements):
            yield from _problems(element, f"{where}tuple element {i}: ")
    elif isinstance(shape, BufferShape):
        yield from _problems(shape.array, f"{where}buffer contents: ")
    elif isinstance(shape, ArrayShape):
        yield from (where + p for p in _array_problems(shape))


def _array_problems(shape: ArrayShape) -> Iterator[str]:
    layout = shape.layout
    if layout is None:
        return
    m2m = layout.minor_to_major
    rank = shape.rank
    m2m_text = "{" + ",".join(map(str, m2m)) + "}"
    if len(m2m) != rank:
        yield f"minor_to_major {m2m_text} has {len(m2m)} entries but the shape has rank {rank}"
    elif sorted(m2m) != list(range(rank)):
        out_of_range = [d for d in m2m if not 0 <= d < rank]
        repeated = sorted({d for d in m2m if m2m.count(d) > 1})
        missing = [d for d in range(rank) if d not in m2m]
        parts = []
        if out_of_range:
            parts.append("has " + ", ".join(map(str, out_of_range)) + f" outside [0, {rank})")
        if repeated:
            parts.append("lists dimension " + ", ".join(map(str, repeated)) + " twice")
        if missing:
            parts.append("omits " + ", ".join(map(str, missing)))
        yield (
            f"minor_to_major {m2m_text} "
            + " and ".join(parts)
            + f": it must be a permutation of 0..{rank - 1}"
        )
    if layout.index_primitive_type is not None:
        yield f"index primitive type #({layout.index_primitive_type.text}) is not allowed on a dense array"
    if layout.pointer_primitive_type is not None:
        yield f"pointer primitive type *({layout.pointer_primitive_type.text}) is not allowed on a dense array"
    if layout.physical_shape is not None:
        yield "a physical shape P(...) is only allowed on sparse arrays"
    for tile in layout.tiles:
        if not tile.dimensions:
            yield "tile () is empty"
        elif 0 in tile.dimensions:
            yield f"tile {tile} has a dimension of size 0"
    if layout.element_size_in_bits < 0:
        yield f"element size E({layout.element_size_in_bits}) is negative"
