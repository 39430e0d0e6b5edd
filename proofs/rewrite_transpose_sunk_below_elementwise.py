"""Algebraic simplifier / reshape mover: a transpose moves across an elementwise op.

``op(transpose(x))`` and ``transpose(op(x))`` hold the same elements in the same bits: an
elementwise op is applied to each element where it stands, so it commutes with any data
movement. The verifier reads ``negate``/``add`` as uninterpreted functions (equal inputs,
equal outputs; nothing else assumed) and proves the rewrite for every N, M, with tiled
layouts on both sides, for a unary and a binary op.
"""

from layout_algebra.hlo import verify_rewrite

CLAIM = "rewrite: transpose sunk below an elementwise op (unary and binary, symbolic sizes, tiled)"

UNARY_BEFORE = """HloModule m
ENTRY e {
  p = f32[N,M]{1,0:T(8,128)} parameter(0)
  t = f32[M,N]{1,0:T(8,128)} transpose(p), dimensions={1,0}
  ROOT n = f32[M,N]{1,0:T(8,128)} negate(t)
}"""
UNARY_AFTER = """HloModule m
ENTRY e {
  p = f32[N,M]{1,0:T(8,128)} parameter(0)
  n = f32[N,M]{1,0:T(8,128)} negate(p)
  ROOT t = f32[M,N]{1,0:T(8,128)} transpose(n), dimensions={1,0}
}"""
BINARY_BEFORE = """HloModule m
ENTRY e {
  p = f32[N,M]{1,0} parameter(0)
  q = f32[N,M]{1,0} parameter(1)
  a = f32[M,N]{0,1} transpose(p), dimensions={1,0}
  b = f32[M,N]{0,1} transpose(q), dimensions={1,0}
  ROOT s = f32[M,N]{0,1} add(a, b)
}"""
BINARY_AFTER = """HloModule m
ENTRY e {
  p = f32[N,M]{1,0} parameter(0)
  q = f32[N,M]{1,0} parameter(1)
  s = f32[N,M]{1,0} add(p, q)
  ROOT t = f32[M,N]{0,1} transpose(s), dimensions={1,0}
}"""


def prove_claim():
    return [verify_rewrite(UNARY_BEFORE, UNARY_AFTER), verify_rewrite(BINARY_BEFORE, BINARY_AFTER)]
