"""L(n) makes the buffer's element count a multiple of n, and never smaller.

For every N (and M): ``f32[N]{0:T(128)L(1024)}``, ``bf16[N,M]{1,0:T(8,128)(2,1)L(4096)}``
and ``s8[N]{0:L(3)}`` take a number of element slots divisible by n, and at least as many
as the same layout without ``L(n)``.
"""

import sympy

from layout_algebra import prove
from layout_algebra.meaning.layout_map import layout_map

CLAIM = "L(n) makes the size a multiple of n (symbolic sizes)"

CASES = (
    ("f32[N]{0:T(128)L(1024)}", "f32[N]{0:T(128)}", 1024),
    ("bf16[N,M]{1,0:T(8,128)(2,1)L(4096)}", "bf16[N,M]{1,0:T(8,128)(2,1)}", 4096),
    ("s8[N]{0:L(3)}", "s8[N]{0}", 3),
)


def prove_claim():
    results = []
    for aligned, plain, n in CASES:
        size = layout_map(aligned).size_in_elements
        results.append(prove.holds(sympy.Eq(sympy.Mod(size, n), 0)))
        results.append(prove.holds(size >= layout_map(plain).size_in_elements))
    return results
