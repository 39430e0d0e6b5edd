"""Combining dimensions with * equals reshaping first, then tiling.

The document: ``F32[2,7,8,11,10]{4,3,2,1,0}`` with tile ``(*,*,2,*,3)`` is
``F32[112,110]`` tiled by ``(2,3)``, element (a,b,c,d,e) being element
(56a + 8b + c, 10d + e) of the merged array. Proved for the document's sizes and for
every A, B, C, D, E... with the merged sizes given by the same products.
"""

from _common import position

from layout_algebra import prove

CLAIM = "combining dims with * equals reshape-then-tile"


def prove_claim():
    merged = position("f32[112,110]{1,0:T(2,3)}")
    document = prove.equivalent(
        "f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}",
        prove.function_map(
            "f32[2,7,8,11,10]",
            lambda i, ar: merged((i[0] * 56 + i[1] * 8 + i[2], i[3] * 10 + i[4]), ar),
            name="f32[112,110] tiled by (2,3) at the merged index",
        ),
    )
    symbolic_merged = position("f32[R,S]{1,0:T(2,3)}")
    symbolic = prove.equivalent(
        "f32[A,B,C,D]{3,2,1,0:T(*,2,*,3)}",
        prove.function_map(
            "f32[A,B,C,D]",
            lambda i, ar: symbolic_merged(
                (i[0] * ar.lift(_sym("B")) + i[1], i[2] * ar.lift(_sym("D")) + i[3]), ar
            ),
            name="f32[A*B, C*D] tiled by (2,3) at the merged index",
        ),
        assume="R == A*B and S == C*D",
    )
    return [document, symbolic]


def _sym(name):
    from layout_algebra.model.symbols import dim_symbol

    return dim_symbol(name)
