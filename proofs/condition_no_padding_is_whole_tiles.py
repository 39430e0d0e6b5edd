"""A tiled layout adds no padding exactly when every tiled dimension is a multiple of its tile.

``f32[N,M]{1,0:T(8,128)}``, ``bf16[N,M]{1,0:T(8,128)(2,1)}``, ``s8[N,M]{1,0:T(32,128)(4,1)}``
and ``s4[N,M]{1,0:T(8,128)(8,1)E(4)}`` hold exactly ``N*M`` element slots **iff**
``N % t0 == 0 and M % 128 == 0`` (``t0`` the first tile's rows); ``f32[N]{0:L(16)}`` iff
``N % 16 == 0``. Proved both ways for all sizes ``>= 1``: under the condition the slot count
equals the element count; under its negation it does not.
"""

import sympy

from layout_algebra import prove
from layout_algebra.decide import conditions
from layout_algebra.model.symbols import dim_symbol

CLAIM = "no padding iff every tiled dimension is a multiple of its tile (symbolic sizes)"

N, M = dim_symbol("N"), dim_symbol("M")
CASES = (
    ("f32[N,M]{1,0:T(8,128)}", sympy.Eq(sympy.Mod(N, 8), 0) & sympy.Eq(sympy.Mod(M, 128), 0)),
    ("bf16[N,M]{1,0:T(8,128)(2,1)}", sympy.Eq(sympy.Mod(N, 8), 0) & sympy.Eq(sympy.Mod(M, 128), 0)),
    ("s8[N,M]{1,0:T(32,128)(4,1)}", sympy.Eq(sympy.Mod(N, 32), 0) & sympy.Eq(sympy.Mod(M, 128), 0)),
    ("s4[N,M]{1,0:T(8,128)(8,1)E(4)}", sympy.Eq(sympy.Mod(N, 8), 0) & sympy.Eq(sympy.Mod(M, 128), 0)),
    ("f32[N]{0:L(16)}", sympy.Eq(sympy.Mod(N, 16), 0)),
)


def prove_claim():
    results = []
    for shape, condition in CASES:
        results.append(prove.no_padding(shape, assume=condition))  # sufficient
        claim = conditions.no_padding_claim(shape)
        conditions.prove_necessary(claim, condition, record=results)  # necessary
    return results
