"""Tiled layouts are injective and in bounds, for all sizes.

For every N, M (and K): no two elements of a tiled layout share a position, and every
position is inside the padded buffer. Proved by composition: every stage (permute,
pad, split, transpose, linearize) is injective and maps its box into the next one.
"""

from layout_algebra import prove

CLAIM = "tiled layouts are injective and in bounds (symbolic sizes)"

SHAPES = (
    "f32[N,M]{1,0:T(8,128)}",
    "f32[N,M]{0,1:T(8,128)}",
    "f32[N,M,K]{2,1,0:T(4,8,128)}",
    "s8[N,M]{1,0:T(32,128)(4,1)}",
    "f32[N,M]{1,0:T(3,5)(2,1)}",
)


def prove_claim():
    return [r for shape in SHAPES for r in (prove.injective(shape), prove.in_bounds(shape))]
