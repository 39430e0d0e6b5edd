"""Algebraic simplifier: a reshape merging major dims of a tiled bf16 array is a bitcast when tiles stay whole.

``bf16[3,N,300]{2,1,0:T(8,128)(2,1)}`` reshaped to ``bf16[3N,300]`` with the same tiling is
a bitcast when N is a multiple of 8 (no 8-row tile straddles two of the merged rows). The
rewrite verifier proves ``reshape -> bitcast`` for every such N (the offsets are read as
mixed-radix digits, so the divisions by symbolic strides are exact), and for N = 8, 16, 40
as concrete modules. The exact bitcast check agrees for symbolic N.
"""

from layout_algebra.decide.bitcast import reshape_is_bitcast
from layout_algebra.hlo import verify_rewrite

CLAIM = "rewrite: reshape merging major dims of (8,128)(2,1) bf16 -> bitcast when N % 8 == 0"

MODULE = """HloModule m
ENTRY e {{
  p = bf16[3,{n},300]{{2,1,0:T(8,128)(2,1)}} parameter(0)
  ROOT r = bf16[{m},300]{{1,0:T(8,128)(2,1)}} reshape(p)
}}"""


def prove_claim():
    symbolic = MODULE.format(n="N", m="M")
    results = [
        verify_rewrite(
            symbolic, symbolic.replace("reshape(p)", "bitcast(p)"), assume="M == 3*N and N % 8 == 0"
        )
    ]
    for n in (8, 16, 40):
        before = MODULE.format(n=n, m=3 * n)
        results.append(verify_rewrite(before, before.replace("reshape(p)", "bitcast(p)")))
    exact = reshape_is_bitcast(
        "bf16[3,N,300]{2,1,0:T(8,128)(2,1)}",
        "bf16[M,300]{1,0:T(8,128)(2,1)}",
        assume="M == 3*N and N % 8 == 0",
    )
    results += list(exact.proofs)
    return results
