"""A tiled layout's offset is a sum of one term per dimension (symbolic sizes); combining breaks it.

``offset(i0, i1, ...) = offset(i0, 0, ...) + offset(0, i1, ...) + ...``: every position of
the tiled shape is a digit of one logical index, and the tiled shape is linearized by a
weighted sum. This is what lets the kernel-writer queries (``layout_algebra.target.access``:
strides, runs, vector widths) read each dimension once instead of every element. Proved
for every size (N, M; A, B, C) of f32 ``(8,128)`` in both orders, bf16 ``(8,128)(2,1)``
and a rank-3 s8 ``(32,128)(4,1)``. A tile that combines dimensions (``*``) breaks it:
in ``f32[2,3,5]{2,1,0:T(2,*,4)}`` the merged index ``5 i1 + i2`` is cut by 4, so
``i1`` and ``i2`` carry into each other (refuted, with a counterexample).
"""

from _common import position

from layout_algebra import prove

CLAIM = "a tiled layout's offset is the sum of one term per dimension (symbolic sizes); '*' breaks it"

EXPECTED = ("proved", "proved", "proved", "proved", "refuted")

SHAPES = (
    "f32[N,M]{1,0:T(8,128)}",
    "f32[N,M]{0,1:T(8,128)}",
    "bf16[N,M]{1,0:T(8,128)(2,1)}",
    "s8[A,B,C]{2,1,0:T(32,128)(4,1)}",
    "f32[2,3,5]{2,1,0:T(2,*,4)}",
)


def sum_over_dimensions(shape, rank):
    """``i -> Σ_k offset(i_k · e_k)``."""
    p = position(shape)

    def f(index, ar):
        total = 0
        for k in range(rank):
            total = total + p(tuple(index[j] if j == k else 0 for j in range(rank)), ar)
        return total

    return f


def prove_claim():
    results = []
    for shape in SHAPES:
        rank = len(shape[shape.index("[") + 1 : shape.index("]")].split(","))
        results.append(
            prove.equivalent(
                prove.function_map(shape, position(shape), name="offset"),
                prove.function_map(shape, sum_over_dimensions(shape, rank), name="the sum over dimensions"),
            )
        )
    return results
