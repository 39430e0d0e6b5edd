"""Memory spaces: a copy into S(1) is data movement even when the layout does not change.

``f32[N,M]{1,0:T(8,128)S(1)} copy(p)`` with ``p`` in S(0) moves the array into another
memory. As a logical array nothing changes, so removing the copy is proved in logical
mode (the first result). The copy may move below a transpose (the second result: the
transpose then runs on the copy in S(1), and the root is the same buffer in the same
memory). Physically, removing it, or replacing it by a bitcast, is *refuted*: the root
would be in S(0) (``layout-algebra verify`` on these modules answers ``refuted`` with the
property "memory space", and a bitcast that changes memory space reads unspecified bits);
that refutation is checked in ``tests/test_verify.py``.
"""

from layout_algebra.hlo import verify_rewrite

CLAIM = "rewrite: a copy into S(1) is only removable logically; it may move below a transpose"

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
    ]
