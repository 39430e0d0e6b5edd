"""CuTe's logical_product of an (8,128) tile by a row-major grid of tiles is XLA's T(8,128), for all sizes.

XLA's tiled layout ``f32[8Q,128N]{1,0:T(8,128)}`` stores each ``8×128`` tile row-major and
the ``Q×N`` tiles row-major after one another. In CuTe that is a *product*: the tile
``A = (8,128):(128,1)`` repeated as the tile grid ``B = (Q,N):(N,1)`` says,

``logical_product(A, B) = (A, complement(A, 1024·cosize(B)) ∘ B) = ((8,128),(Q,N)):((128,1),(1024·N,1024))``.

The closed form is first checked to be what ``layout_algebra.interop.cute.algebra.logical_product``
computes at every ``Q, N`` in ``{1, 2, 3, 4, 6}`` (the entry fails otherwise). Then Z3
proves, for all ``Q, N >= 1``, that at every coordinate — row ``r < 8`` and column
``c < 128`` inside tile ``(q, n)``, ``q < Q``, ``n < N`` — the product's offset
``128r + c + 1024N·q + 1024n`` is the offset the package's layout map gives element
``(8q + r, 128n + c)`` of ``f32[R,C]{1,0:T(8,128)}`` with ``R = 8Q``, ``C = 128N``.
"""

import _cute
import sympy

from layout_algebra.interop.cute.algebra import logical_product
from layout_algebra.meaning.layout_map import layout_map

CLAIM = "CuTe's logical_product of an (8,128) tile by a row-major tile grid is XLA's T(8,128), for all sizes"


def prove_claim():
    Q, N = _cute.size("Q"), _cute.size("N")
    tile = ((8, 128), (128, 1))
    grid = ((Q, N), (N, 1))
    product = (((8, 128), (Q, N)), ((128, 1), (1024 * N, 1024)))
    _cute.closed_form_is_the_algebra(logical_product, [tile, grid], product, _cute.samples((Q, N)))

    r, c, q, n = (_cute.index(name) for name in ("r", "c", "q", "n"))
    strides = sympy.flatten(product[1])
    cute_offset = sum(x * d for x, d in zip((r, c, q, n), strides, strict=True))
    m = layout_map("f32[R,C]{1,0:T(8,128)}")
    i0, i1 = m.index_symbols
    xla = m.forward_expr()
    sizes = {s: {"R": 8 * Q, "C": 128 * N}[str(s)] for s in xla.free_symbols - {i0, i1}}
    xla_offset = xla.subs(sizes).subs({i0: 8 * q + r, i1: 128 * n + c})
    return [
        _cute.law(
            f"{_cute.text(product)} at ((r,c),(q,n)) is f32[8Q,128N]{{1,0:T(8,128)}} at (8q+r, 128n+c)",
            sympy.Eq(cute_offset, xla_offset),
            {r: 8, c: 128, q: Q, n: N},
        )
    ]
