"""layout_algebra: XLA array layouts as mathematics you can compute with.

Parse a shape as XLA prints it, check it, and ask what it costs in memory:

>>> import layout_algebra as la
>>> s = la.parse_shape("bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}")
>>> str(s)
'bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}'
>>> la.physical_size_in_bytes(s)          # exact: every tile level, packing, L(n)
335544320
>>> la.physical_size_in_bytes("f32[3,5]{1,0:T(2,2)}")
96
>>> la.xla.byte_size_of("f32[3,5]{1,0:T(2,2)}")   # XLA's ShapeUtil::ByteSizeOf ignores tiles
60

What a layout means, as a map from logical index to memory and back:

>>> la.linear_index("f32[3,5]{1,0:T(2,2)}", (2, 3))   # XLA's tiled-layout document: 17
17
>>> la.layout_map("f32[3,5]{1,0:T(2,2)}").inverse(17)
(2, 3)

The package is organised as the layouts are: ``model`` (data model and text syntax),
``stages`` (the small index maps every layout is built from), interpreters of the stages
(``layout_map`` for concrete values and SymPy closed forms; ``references`` computes the
same positions independently), ``sizes`` and ``explain``, XLA's own C++ helpers with their
quirks kept apart in ``xla``, and the command line ``cli`` on top.
"""

from layout_algebra import hlo, interop, prove, tpu, xla
from layout_algebra.bitcast import (
    bitcast_is_valid,
    reshape_is_bitcast,
    suggest_bitcast_layout,
    transpose_is_bitcast,
)
from layout_algebra.codegen import codegen
from layout_algebra.draw import draw
from layout_algebra.explain import explain
from layout_algebra.layout_map import LayoutMap, delinearize, layout_map, linear_index
from layout_algebra.model import (
    COMBINE_DIMENSION,
    UNBOUNDED_SIZE,
    ArrayShape,
    BufferShape,
    InvalidLayoutError,
    Layout,
    OpaqueShape,
    ParseError,
    PrimitiveType,
    Shape,
    SplitConfig,
    Tile,
    TokenShape,
    TupleShape,
    as_shape,
    layout_problems,
    parse_layout,
    parse_shape,
    primitive_type,
    validate,
)
from layout_algebra.numpy_eval import pack, unpack
from layout_algebra.sizes import (
    LayoutSemanticsError,
    SizeReport,
    physical_size_in_bits,
    physical_size_in_bytes,
    size_report,
    tiled_dimensions,
)

__version__ = "0.1.0"

__all__ = [
    "COMBINE_DIMENSION",
    "UNBOUNDED_SIZE",
    "ArrayShape",
    "BufferShape",
    "InvalidLayoutError",
    "Layout",
    "LayoutMap",
    "LayoutSemanticsError",
    "OpaqueShape",
    "ParseError",
    "PrimitiveType",
    "Shape",
    "SizeReport",
    "SplitConfig",
    "Tile",
    "TokenShape",
    "TupleShape",
    "as_shape",
    "bitcast_is_valid",
    "codegen",
    "delinearize",
    "draw",
    "explain",
    "hlo",
    "interop",
    "layout_map",
    "layout_problems",
    "linear_index",
    "pack",
    "parse_layout",
    "parse_shape",
    "physical_size_in_bits",
    "physical_size_in_bytes",
    "primitive_type",
    "prove",
    "reshape_is_bitcast",
    "size_report",
    "suggest_bitcast_layout",
    "tiled_dimensions",
    "tpu",
    "transpose_is_bitcast",
    "unpack",
    "validate",
    "xla",
]
