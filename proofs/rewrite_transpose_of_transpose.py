"""Algebraic simplifier: transpose(transpose(x, p1), p2) = transpose(x, p1 ∘ p2).

Two transposes in a row are one transpose by the composed permutation
(``dims[i] = p1[p2[i]]``). Proved for every N, M, K, with tiled layouts on every value.
"""

from layout_algebra.hlo import verify_rewrite

CLAIM = "rewrite: transpose of transpose -> one transpose (symbolic sizes)"

BEFORE = """HloModule m
ENTRY e {
  p = f32[N,M,K]{2,1,0:T(8,128)} parameter(0)
  a = f32[M,K,N]{2,1,0:T(8,128)} transpose(p), dimensions={1,2,0}
  ROOT b = f32[K,N,M]{2,1,0:T(8,128)} transpose(a), dimensions={1,2,0}
}"""
AFTER = """HloModule m
ENTRY e {
  p = f32[N,M,K]{2,1,0:T(8,128)} parameter(0)
  ROOT b = f32[K,N,M]{2,1,0:T(8,128)} transpose(p), dimensions={2,0,1}
}"""


def prove_claim():
    return [verify_rewrite(BEFORE, AFTER)]
