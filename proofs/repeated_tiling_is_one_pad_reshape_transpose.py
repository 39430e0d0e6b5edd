"""Repeated tiling (2,4)(2,1) and (8,128)(2,1) is injective and equals pad-reshape-transpose.

Each tile level is one pad → reshape → transpose applied to the shape the previous level
produced; the document's formula applied level by level agrees with it, and the result
is injective, for every N and M.
"""

from layout_algebra import prove

CLAIM = "repeated tiling (2,4)(2,1) and (8,128)(2,1) is injective and equals pad-reshape-transpose"

SHAPES = ("f32[N,M]{1,0:T(2,4)(2,1)}", "bf16[N,M]{1,0:T(8,128)(2,1)}")


def prove_claim():
    results = []
    for shape in SHAPES:
        results += [
            prove.injective(shape),
            prove.in_bounds(shape),
            prove.tiling_is_pad_reshape_transpose(shape),
        ]
    return results
