"""Copy elimination: a copy between identical layouts can be removed.

``copy(x)`` with the same layout as ``x`` moves every element to the same bit: removing it
leaves the root buffer unchanged. Proved for every N, M with bf16 ``(8,128)(2,1)`` and
with a slice of the copy.
"""

from layout_algebra.hlo import verify_rewrite

CLAIM = "rewrite: copy between identical layouts -> removed (symbolic sizes)"

BEFORE = """HloModule m
ENTRY e {
  p = bf16[N,M]{1,0:T(8,128)(2,1)} parameter(0)
  c = bf16[N,M]{1,0:T(8,128)(2,1)} copy(p)
  ROOT r = bf16[M,N]{0,1:T(8,128)(2,1)} transpose(c), dimensions={1,0}
}"""
AFTER = """HloModule m
ENTRY e {
  p = bf16[N,M]{1,0:T(8,128)(2,1)} parameter(0)
  ROOT r = bf16[M,N]{0,1:T(8,128)(2,1)} transpose(p), dimensions={1,0}
}"""
SLICE_BEFORE = """HloModule m
ENTRY e {
  p = f32[16,256]{1,0:T(8,128)} parameter(0)
  c = f32[16,256]{1,0:T(8,128)} copy(p)
  ROOT s = f32[8,256]{1,0:T(8,128)} slice(c), slice={[8:16], [0:256]}
}"""


def prove_claim():
    return [
        verify_rewrite(BEFORE, AFTER),
        verify_rewrite(
            SLICE_BEFORE,
            SLICE_BEFORE.replace("  c = f32[16,256]{1,0:T(8,128)} copy(p)\n", "").replace(
                "slice(c)", "slice(p)"
            ),
        ),
    ]
