"""Closed-form index code for code generators, each expression checked equal to the layout.

A code generator that reads or writes a tiled array needs the layout's index arithmetic
as code: where logical element ``(i0, i1)`` lives (*forward*), which element lives at
offset ``p`` (*inverse*), and whether ``p`` is padding. :func:`generate_code` prints these in C,
Python, NumPy, MLIR, LaTeX or JavaScript, simplified the way a person would simplify them, and
*certifies* the printed text equal to the layout map.

The tiled-layout document's Figure 1, ``f32[3,5]`` in 2x2 tiles (element (2,3) is at 17):

>>> from layout_algebra.codegen import generate_code
>>> g = generate_code("f32[3,5]{1,0:T(2,2)}", "c")
>>> print(g.text)
#include <stdint.h>
<BLANKLINE>
/* Element offset of f32[3,5]{1,0:T(2,2)} at logical index (i0, i1), for 0 <= i0 < 3, 0 <= i1 < 5.
 * Unsigned integer arithmetic only: every quantity is non-negative, so C's / and % are
 * floor division and modulo (and by powers of two, shifts and masks). */
uint64_t element_offset(uint64_t i0, uint64_t i1) {
    return 12*(i0 / 2) + 4*(i1 / 2) + 2*(i0 % 2) + i1 % 2;
}
<BLANKLINE>
>>> g.op_counts, str(g.certification)
((10,), 'proved (exhaustive): equal on all 15 logical indices')

How it works, and where each part lives:

1. **Build** (:mod:`.expr`): the layout's stages run on a small expression tree, so the
   closed form is the stage pipeline itself, not a re-derivation.
2. **Simplify** (:mod:`.simplify`): named, individually sound rewrite rules use the index
   ranges (``0 <= i_k < d_k``, ``0 <= p < size``): ``i mod 128 -> i`` when ``i < 128``,
   ``⌊⌊p/2⌋/4⌋ -> ⌊p/8⌋``, ``(i mod 8) mod 2 -> i mod 2``, a quotient and its remainder
   merged back, common strides factored.
3. **Print** (:mod:`.printers`) a complete function: C (``uint64_t``, compiles with
   ``-Wall -Wextra -Werror``), Python, NumPy (vectorised), an MLIR ``affine_map`` (symbolic
   sizes become its symbols ``[s0, ...]``), a LaTeX equation, a JavaScript function
   (``Number`` arithmetic with ``Math.floor(a / b)`` where every value stays below 2^53,
   ``BigInt`` beyond; see :mod:`.printers`).
4. **Read back** (:mod:`.readback`) the printed expressions into SymPy and **certify**
   them (:func:`.certify.certify`): exhaustively for concrete shapes of up to a million
   points, with the prover (:func:`layout_algebra.prove.expressions_equal`) beyond that
   and for symbolic sizes. A refutation comes with a counterexample.

The inverse of bf16's TPU layout, as an MLIR map, and its operation counts before and
after simplification:

>>> g = generate_code("bf16[16,256]{1,0:T(8,128)(2,1)}", "mlir", "inverse")
>>> print(g.text.splitlines()[1])
#logical_index = affine_map<(d0) -> ((d0 floordiv 2048) * 8 + ((d0 floordiv 256) mod 4) * 2 + d0 mod 2, ((d0 floordiv 1024) mod 2) * 128 + (d0 floordiv 2) mod 128)>
>>> g.op_counts, g.unsimplified_op_counts, g.certification.status
((8, 6), (15, 12), 'proved')

Symbolic sizes become parameters; the padding predicate asks whether a byte holds data:

>>> print(generate_code("f32[N,M]{1,0:T(8,128)}", "python", "padding", unit="byte").text, end="")
def is_padding(p, N, M):
    \"\"\"Whether byte offset p of f32[N,M]{1,0:T(8,128)} is padding (holds no element), for 0 <= p < 4096*ceiling(M/128)*ceiling(N/8).\"\"\"
    return (8*(p // (4096*((M + 127) // 128))) + (p // 512) % 8 >= N) | (128*((p // 4096) % ((M + 127) // 128)) + (p // 4) % 128 >= M)

Layouts that are CuTe layouts export to CuTe's ``shape:stride`` notation: that is
interop, :mod:`layout_algebra.interop.cute.export` (``to_cute``, ``cute_layout``, ``CuteLayout`` and
``NotExpressible`` are still importable from here, loaded on first use):

>>> from layout_algebra.interop import to_cute
>>> to_cute("f32[16,384]{1,0:T(8,128)}")
'((8,2),(128,3)):((128,3072),(1,1024))'
"""

from layout_algebra.codegen.certification import (
    DIRECTIONS,
    EXHAUSTIVE_LIMIT,
    PROVER_TIMEOUT_MS,
    Certification,
    certify,
)
from layout_algebra.codegen.generate import GeneratedCode, generate_code
from layout_algebra.codegen.printers import LANGUAGES

__all__ = [
    "DIRECTIONS",
    "EXHAUSTIVE_LIMIT",
    "LANGUAGES",
    "PROVER_TIMEOUT_MS",
    "Certification",
    "GeneratedCode",
    "certify",
    "generate_code",
]
