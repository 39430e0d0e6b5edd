"""XLA-compatible helpers: XLA's C++ answers, reproduced in Python.

Every function here re-implements one XLA C++ helper (``ShapeUtil::ArraySize``,
``LayoutUtil::LinearIndex``, ``Layout::Equal``, ...) under the snake_case of its name, and
returns **what XLA's C++ code returns, not the exact mathematics of the layout**. XLA's
helpers take shortcuts (they ignore sub-tiles, tiles of rank-1 arrays, ``M(n)``, ...);
these are reproduced on purpose, so that this package can say both "what XLA computes"
and, elsewhere, "what the layout really means", and show where the two part ways.

>>> from layout_algebra.xla import array_size, byte_size_of, layout_util_linear_index
>>> array_size("f32[3,5]{1,0:T(2,2)}")        # 4 x 6 padded slots of 4 bytes
96
>>> byte_size_of("f32[3,5]{1,0:T(2,2)}")      # ByteSizeOf ignores the tiling
60
>>> layout_util_linear_index("f32[3,5]{1,0:T(2,2)}", (2, 3))
17

Modules follow XLA's files: ``shape_util`` (sizes and strides), ``layout_util`` (linear
index, split configs, untiled check, byte-stride check, ``Layout::Equal``), ``index_util``
(dimension strides), ``primitive_util`` (type names) and ``bitcast_util`` (the
bitcast predicates of ``shape_util.cc``: ``decompose_bitcast``, ``align_layouts``, ...).

XLA's tile-blind bitcast predicates (``ShapeUtil::ReshapeIsBitcast``, ``TransposeIsBitcast``,
``IsReshapeOrTransposeBitcast``) answer a different question from the package's exact
``layout_algebra.reshape_is_bitcast``, and can say the opposite on the same shapes, so they
are reached only through their module, a name that says whose they are:
``layout_algebra.xla.bitcast_util.reshape_is_bitcast`` (quirk 12 below).

>>> import layout_algebra as la
>>> tiled, flat = "f32[16,256]{1,0:T(8,128)}", "f32[4096]{0}"
>>> la.xla.bitcast_util.reshape_is_bitcast(tiled, flat)   # XLA: tiles unseen
True
>>> la.reshape_is_bitcast(tiled, flat).status               # exact: the tiles reorder elements
'refuted'

The quirks reproduced
---------------------

1. ``byte_size_of`` / ``byte_size_of_elements`` ignore tiles, ``L(n)``, split configs and
   ``M(n)``: ``byte_size_of("f32[16,256]{1,0:T(8,128)}")`` is the same 16384 as untiled.
2. ``array_size`` pads only to the **first** tile; later tiles are assumed to add no
   padding. Under ``T(2,128)(4,1)`` the sub-tile really pads 2 rows to 4 (2048 bytes
   for ``f32[2,128]``), yet ``array_size("f32[2,128]{1,0:T(2,128)(4,1)}")`` is 1024.
3. ``array_size`` without tiles ignores ``L(n)`` and split configs (whole array); with
   tiles it honours ``L(n)`` and sizes every dimension by its largest split, so it gives
   the size of the largest split, not of the array.
4. Tile dimensions beyond the rank pad virtual size-1 dimensions:
   ``array_size("f32[]{:T(256)}")`` is 1024.
5. ``layout_util_linear_index`` (and ``array_data_size``, built on it) uses only the
   top-level tile, and returns the index unchanged for rank-1 shapes even when tiled.
6. Sub-byte types cost a whole byte per element unless ``E(n)`` is set; ``pred`` costs a
   byte (its bit width is 1).
7. ``unpacked_byte_strides`` ignores tiles and ``E(n)``; ``byte_strides`` is ``None``
   when ``E % 8 != 0`` and otherwise ignores ``E(n)`` too.
8. ``layout_equal`` never compares ``M(n)``: ``{0,1:M(123)}`` equals ``{0,1}``.
9. ``string_to_primitive_type`` accepts ``tuple`` and rejects ``opaque_type``.
10. ``byte_size_of`` of a tuple is its table of top-level pointers only.
11. ``dimension_stride`` and ``max_split_size`` see logical sizes only; tiles never enter.
12. The bitcast predicates (``bitcast_util``) see only dimensions and ``minor_to_major``:
    ``reshape_is_bitcast("f32[16,256]{1,0:T(8,128)}", "f32[4096]{0}")`` is True;
    ``transpose_is_bitcast`` never compares sizes; ``is_reshape_or_transpose_bitcast``
    swaps its shapes in the transpose step and so misses non-involutive transposes.

Where this module deliberately differs from XLA
-----------------------------------------------

* Inputs on which XLA would CHECK-fail, ``LOG(FATAL)`` or compute garbage raise
  ``XlaInputError`` (a ``ValueError``) quoting the shape: a tuple without a positive
  ``pointer_size``; a non-array where an array is needed; an index of the wrong length
  or out of range (XLA does not check bounds); ``minor_to_major`` that is not a
  permutation; a combined tile dimension ``*`` or a 0 in a tile that is used (XLA would
  divide by INT64_MIN or by zero).
* Sizes must be concrete: an unbounded dimension ``?`` and this package's symbolic
  dimensions (``f32[N,M]``) raise; a bounded dimension ``<=N`` counts as N, as in XLA.
* ``array_data_size`` is 0 when a dimension is 0 (what XLA's tests assert).
* ``byte_size_of_elements_recursive`` counts an opaque handle as 0 bytes; XLA CHECK-fails.
* Python integers do not overflow where XLA's ``int64_t`` arithmetic would.
"""

from layout_algebra.xla._common import XlaInputError
from layout_algebra.xla.bitcast_util import (
    BitcastDecomposition,
    align_layouts,
    common_factors,
    decompose_bitcast,
    deduce_transpose_dimensions_for_bitcast,
    permute_dimensions,
)
from layout_algebra.xla.index_util import dimension_stride
from layout_algebra.xla.layout_util import (
    LAYOUT_EQUAL_IGNORABLE,
    byte_strides_is_major_to_minor,
    is_untiled_layout,
    layout_equal,
    layout_util_linear_index,
    max_elements_in_per_split,
    max_split_size,
)
from layout_algebra.xla.primitive_util import string_to_primitive_type
from layout_algebra.xla.shape_util import (
    array_data_size,
    array_size,
    byte_size_of,
    byte_size_of_elements,
    byte_size_of_elements_recursive,
    byte_size_of_primitive_type,
    byte_strides,
    unpacked_byte_strides,
)

__all__ = [
    "LAYOUT_EQUAL_IGNORABLE",
    "BitcastDecomposition",
    "XlaInputError",
    "align_layouts",
    "array_data_size",
    "array_size",
    "byte_size_of",
    "byte_size_of_elements",
    "byte_size_of_elements_recursive",
    "byte_size_of_primitive_type",
    "byte_strides",
    "byte_strides_is_major_to_minor",
    "common_factors",
    "decompose_bitcast",
    "deduce_transpose_dimensions_for_bitcast",
    "dimension_stride",
    "is_untiled_layout",
    "layout_equal",
    "layout_util_linear_index",
    "max_elements_in_per_split",
    "max_split_size",
    "permute_dimensions",
    "string_to_primitive_type",
    "unpacked_byte_strides",
]
