"""The data model and its text syntax: element types, shapes, layouts, validation.

Nothing here knows about index maps, solvers or arrays; everything else in the package
builds on these plain immutable values.
"""

from layout_algebra.model.errors import InvalidArgumentError, LayoutAlgebraError
from layout_algebra.model.meaning import (
    MEMORY_SPACE_NAMES,
    LayoutSemanticsError,
    element_size_in_bits,
    meaningful_array,
    memory_space_name,
)
from layout_algebra.model.primitive_types import PrimitiveType, primitive_type
from layout_algebra.model.shapes import (
    COMBINE_DIMENSION,
    UNBOUNDED_SIZE,
    ArrayShape,
    BufferShape,
    Layout,
    OpaqueShape,
    Shape,
    SplitConfig,
    Tile,
    TokenShape,
    TupleShape,
)
from layout_algebra.model.syntax import ParseError, as_shape, parse_layout, parse_shape
from layout_algebra.model.validation import InvalidLayoutError, layout_problems, validate

__all__ = [
    "COMBINE_DIMENSION",
    "MEMORY_SPACE_NAMES",
    "UNBOUNDED_SIZE",
    "ArrayShape",
    "BufferShape",
    "InvalidArgumentError",
    "InvalidLayoutError",
    "Layout",
    "LayoutAlgebraError",
    "LayoutSemanticsError",
    "OpaqueShape",
    "ParseError",
    "PrimitiveType",
    "Shape",
    "SplitConfig",
    "Tile",
    "TokenShape",
    "TupleShape",
    "as_shape",
    "element_size_in_bits",
    "layout_problems",
    "meaningful_array",
    "memory_space_name",
    "parse_layout",
    "parse_shape",
    "primitive_type",
    "validate",
]
