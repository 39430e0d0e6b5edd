"""Algebraic simplifier: a reshape merging major dims of a tiled bf16 array is a bitcast when tiles stay whole.

``bf16[3,N,300]{2,1,0:T(8,128)(2,1)}`` reshaped to ``bf16[3N,300]`` with the same tiling is
a bitcast when N is a multiple of 8 (no 8-row tile straddles two of the merged rows), and
the rewrite verifier proves ``reshape -> bitcast`` for N = 8, 16, 40. (For symbolic N the
bitcast's read-back through the other layout divides by symbolic strides and the prover
answers unknown; the symbolic form of this side condition is proved in
``layout_algebra.bitcast``'s doctest, ``f32[N,8,128] -> f32[8N,128]``.)
"""

from layout_algebra import prove

CLAIM = "rewrite: reshape merging major dims of (8,128)(2,1) bf16 -> bitcast when N % 8 == 0"


def prove_claim():
    results = []
    for n in (8, 16, 40):
        before = f"HloModule m\nENTRY e {{\n  p = bf16[3,{n},300]{{2,1,0:T(8,128)(2,1)}} parameter(0)\n  ROOT r = bf16[{3 * n},300]{{1,0:T(8,128)(2,1)}} reshape(p)\n}}"
        results.append(prove.rewrite(before, before.replace("reshape(p)", "bitcast(p)")))
    from layout_algebra.bitcast import reshape_is_bitcast

    symbolic = reshape_is_bitcast(
        "f32[N,8,128]{2,1,0:T(8,128)}", "f32[M,128]{1,0:T(8,128)}", assume="M == 8*N"
    )
    results += list(symbolic.proofs)
    return results
