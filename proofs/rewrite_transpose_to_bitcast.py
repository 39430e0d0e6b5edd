"""Algebraic simplifier: a transpose whose result layout is the permuted input layout is a bitcast.

XLA replaces ``transpose(p)`` by ``bitcast(p)`` when the result's layout is
``PermuteDimensions(perm, p.layout)``: the same bytes, read with relabelled dimensions.
Proved, tiles included, for every N, M (and K) with the rewrite verifier
(``hlo.verify_rewrite``): every root element is the same bit of the same parameter.
"""

from layout_algebra.hlo import verify_rewrite

CLAIM = "rewrite: transpose with the permuted layout -> bitcast (symbolic sizes, tiled)"

CASES = (
    ("f32[N,M]{1,0:T(8,128)}", "f32[M,N]{0,1:T(8,128)}", "1,0"),
    ("bf16[N,M]{1,0:T(8,128)(2,1)}", "bf16[M,N]{0,1:T(8,128)(2,1)}", "1,0"),
    ("f32[N,M,K]{2,1,0:T(8,128)}", "f32[K,N,M]{0,2,1:T(8,128)}", "2,0,1"),
)


def prove_claim():
    results = []
    for src, dst, perm in CASES:
        before = f"HloModule m\nENTRY e {{\n  p = {src} parameter(0)\n  ROOT t = {dst} transpose(p), dimensions={{{perm}}}\n}}"
        after = f"HloModule m\nENTRY e {{\n  p = {src} parameter(0)\n  ROOT t = {dst} bitcast(p)\n}}"
        results.append(verify_rewrite(before, after))
    return results
