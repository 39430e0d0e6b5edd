"""Algebraic simplifier: reverse(reverse(x)) = x.

Reversing a dimension twice puts every element back: ``N - 1 - (N - 1 - j) = j``. Proved
for every N, M (in a tiled layout), and for a reverse of dims {0,1} followed by one of
{1,0} (the same set), as the root buffer and as the logical array.
"""

from layout_algebra.hlo import verify_rewrite

CLAIM = "rewrite: reverse of reverse -> the operand (symbolic sizes, tiled)"

BEFORE = """HloModule m
ENTRY e {
  p = bf16[N,M]{1,0:T(8,128)(2,1)} parameter(0)
  a = bf16[N,M]{1,0:T(8,128)(2,1)} reverse(p), dimensions={0,1}
  ROOT b = bf16[N,M]{1,0:T(8,128)(2,1)} reverse(a), dimensions={1,0}
}"""
AFTER = """HloModule m
ENTRY e {
  p = bf16[N,M]{1,0:T(8,128)(2,1)} parameter(0)
  ROOT b = bf16[N,M]{1,0:T(8,128)(2,1)} copy(p)
}"""


def prove_claim():
    return [verify_rewrite(BEFORE, AFTER), verify_rewrite(BEFORE, AFTER, mode="logical")]
