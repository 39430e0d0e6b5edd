"""Interop: XLA layouts as JAX ``Layout``s, CuTe ``shape:stride`` and MLIR ``affine_map``s, and back.

Users meet layouts through JAX, code generators through CuTe, MLIR and Triton's linear
layouts (:mod:`.triton`, bases over GF(2)); the truth lives
in XLA. Each conversion here goes both ways and is checked on the layout *map* (where
every element is stored), not on the text:

>>> from layout_algebra import interop
>>> s = "bf16[16,256]{1,0:T(8,128)(2,1)}"
>>> interop.jax_layout_fields(s)
JaxLayoutFields(major_to_minor=(0, 1), tiling=((8, 128), (2, 1)), sub_byte_element_size_in_bits=0)
>>> interop.to_cute(s)
'((2,4,2),(128,2)):((1,256,2048),(2,1024))'
>>> interop.to_mlir_affine_map(s)
'affine_map<(d0, d1) -> (d0 floordiv 8, d1 floordiv 128, (d0 floordiv 2) mod 4, d1 mod 128, d0 mod 2, 0)>'

and back, to the same layout:

>>> fields = interop.jax_layout_fields(s)
>>> {str(interop.from_jax_layout(fields, "bf16", (16, 256))),
...  str(interop.from_cute(interop.to_cute(s), "bf16")),
...  str(interop.from_mlir_affine_map(interop.to_mlir_affine_map(s), "bf16", (16, 256)))}
{'bf16[16,256]{1,0:T(8,128)(2,1)}'}

Reading CuTe or MLIR back is an inverse problem, solved in :mod:`.recover` by running
the tiling backwards. What has no exact counterpart raises :class:`NotExpressible` (a
``ValueError``) with the reason. JAX itself is optional: only ``to_jax_layout`` and
``to_jax_format`` import it (``pip install 'layout_algebra[jax]'``).
"""

from layout_algebra.interop.cute.export import CuteTextError, cute_modes, from_cute, parse_cute, to_cute
from layout_algebra.interop.jax_layouts import (
    MEMORY_KINDS,
    JaxLayoutFields,
    entry_shapes_of_compiled,
    from_jax_format,
    from_jax_layout,
    jax_layout_fields,
    numpy_dtype_name,
    shapes_of_compiled,
    to_jax_format,
    to_jax_layout,
    xla_type_name,
)
from layout_algebra.interop.mlir import (
    from_mlir_affine_map,
    mlir_element_type,
    to_mlir_affine_map,
    to_mlir_memref,
    to_mlir_strided,
)
from layout_algebra.interop.triton import LinearLayout, from_linear_layout, to_linear_layout
from layout_algebra.meaning.digits import Digit
from layout_algebra.meaning.recover import NotExpressible, Position, positions_of, recover_layout

__all__ = [
    "MEMORY_KINDS",
    "CuteTextError",
    "Digit",
    "JaxLayoutFields",
    "LinearLayout",
    "NotExpressible",
    "Position",
    "cute_modes",
    "entry_shapes_of_compiled",
    "from_cute",
    "from_jax_format",
    "from_jax_layout",
    "from_linear_layout",
    "from_mlir_affine_map",
    "jax_layout_fields",
    "mlir_element_type",
    "numpy_dtype_name",
    "parse_cute",
    "positions_of",
    "recover_layout",
    "shapes_of_compiled",
    "to_cute",
    "to_jax_format",
    "to_jax_layout",
    "to_linear_layout",
    "to_mlir_affine_map",
    "to_mlir_memref",
    "to_mlir_strided",
    "xla_type_name",
]
