"""A tile with fewer dimensions than the shape equals the same tile padded with leading 1s.

XLA applies a tile to the most minor dimensions and leaves the others alone; that is
the same as tiling the leading dimensions by 1. For every B, N, M:
``T(128) = T(1,128)`` on ``f32[N,M]`` and ``T(8,128) = T(1,8,128)`` on ``f32[B,N,M]``.
"""

from layout_algebra import prove

CLAIM = "a tile with fewer dims equals the same tile with leading 1s (symbolic sizes)"


def prove_claim():
    return [
        prove.equivalent("f32[N,M]{1,0:T(128)}", "f32[N,M]{1,0:T(1,128)}"),
        prove.equivalent("f32[B,N,M]{2,1,0:T(8,128)}", "f32[B,N,M]{2,1,0:T(1,8,128)}"),
        prove.equivalent("bf16[B,N,M]{2,1,0:T(8,128)(2,1)}", "bf16[B,N,M]{2,1,0:T(1,8,128)(1,2,1)}"),
    ]
