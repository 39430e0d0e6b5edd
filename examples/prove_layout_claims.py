"""Prove a layout rewrite safe, or get a concrete counterexample, with layout_algebra.prove (Z3).

The story: a compiler pass wants to drop the tiling of f32[N,M]{1,0:T(1,128)} and treat the
buffer as the plain row-major f32[N,M]{1,0}. Safe? Not for every M; proved safe for every N
and every M divisible by 128. Then three facts such a pass relies on, proved for all sizes.

Run:  python examples/prove_layout_claims.py
"""

import sys

import sympy

from layout_algebra import layout_map, prove

TILED, PLAIN = "f32[N,M]{1,0:T(1,128)}", "f32[N,M]{1,0}"

checks = [
    # (what we expect, the result)
    ("refuted", prove.equivalent(TILED, PLAIN)),
    ("proved", prove.equivalent(TILED, PLAIN, assume=["M % 128 == 0"])),
    # ... and the two buffers have the same size, so the rewrite moves no data
    (
        "proved",
        prove.holds(sympy.Eq(*(layout_map(s).size_in_bits for s in (TILED, PLAIN))), assume="M % 128 == 0"),
    ),
    ("proved", prove.injective("bf16[N,M]{1,0:T(8,128)(2,1)}")),
    ("proved", prove.in_bounds("bf16[N,M]{1,0:T(8,128)(2,1)}")),
    ("proved", prove.tiling_is_pad_reshape_transpose("f32[N,M]{1,0:T(8,128)}")),
    # a later tile that does not divide the first: elements beyond what XLA allocates
    ("refuted", prove.in_bounds("s16[1000,200]{0,1:T(1,128)(2,1)}", allocation="xla")),
]

failures = 0
for expected, result in checks:
    print(result)
    if result.status != expected:
        print(f"  !! expected {expected}")
        failures += 1
    elif result.status == "refuted":
        print("  (the counterexample was re-checked by evaluating both sides)")

first = checks[0][1].counterexample
print()
print(
    f"Dropping T(1,128) is unsafe: with sizes {first['sizes']}, element {first['element']} is at "
    f"{first['position']} in the tiled layout but at {first['other_position']} in the plain one."
)
print("With M % 128 == 0 every element keeps its position and the buffers are the same size: a bitcast.")
sys.exit(1 if failures else 0)
