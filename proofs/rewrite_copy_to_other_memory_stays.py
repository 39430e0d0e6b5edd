"""Memory spaces: a copy into S(1) is data movement even when the layout does not change.

``f32[N,M]{1,0:T(8,128)S(1)} copy(p)`` with ``p`` in S(0) moves the array into another
memory. As a logical array nothing changes, so removing the copy is proved in logical
mode (the first result). The copy may move below a transpose (the second result: the
transpose then runs on the copy in S(1), and the root is the same buffer in the same
memory). Physically, removing it is *refuted* (the third result, expected refuted): the
root would be in S(0), not S(1) — the copy must stay.
"""

from layout_algebra.hlo import verify_rewrite

CLAIM = "rewrite: a copy into S(1) must stay (removable only logically); it may move below a transpose"
EXPECTED = ("proved", "proved", "refuted")

COPY = """HloModule m
ENTRY e {
  p = f32[N,M]{1,0:T(8,128)} parameter(0)
  ROOT c = f32[N,M]{1,0:T(8,128)S(1)} copy(p)
}"""
REMOVED = """HloModule m
ENTRY e {
  p = f32[N,M]{1,0:T(8,128)} parameter(0)
  ROOT c = f32[N,M]{1,0:T(8,128)} copy(p)
}"""
TRANSPOSE_THEN_COPY = """HloModule m
ENTRY e {
  p = f32[N,M]{1,0:T(8,128)} parameter(0)
  t = f32[M,N]{1,0:T(8,128)} transpose(p), dimensions={1,0}
  ROOT c = f32[M,N]{1,0:T(8,128)S(1)} copy(t)
}"""
COPY_THEN_TRANSPOSE = """HloModule m
ENTRY e {
  p = f32[N,M]{1,0:T(8,128)} parameter(0)
  c = f32[N,M]{1,0:T(8,128)S(1)} copy(p)
  ROOT t = f32[M,N]{1,0:T(8,128)S(1)} transpose(c), dimensions={1,0}
}"""


def prove_claim():
    return [
        verify_rewrite(COPY, REMOVED, mode="logical"),
        verify_rewrite(TRANSPOSE_THEN_COPY, COPY_THEN_TRANSPOSE),
        verify_rewrite(COPY, REMOVED, mode="physical"),
    ]
