"""CuTe's logical_divide is the composition with the tile and its complement, for every size.

CuTe defines ``logical_divide(A, B) = A ∘ (B, complement(B, size(A)))``: mode 0 of the
result walks one tile ``B`` of ``A``, mode 1 walks the tiles. For a row-major matrix
``A = (M,N):(N,1)`` (XLA's ``f32[M,N]{1,0}``) cut into tiles of ``T`` consecutive rows
(``B = T:1``, ``M = T·Q``):

* ``complement(B, M·N) = (Q·N):T``;
* ``logical_divide(A, B) = (T,(Q,N)):(N,(T·N,1))``: a tile is ``T`` rows ``N`` apart, the
  tiles are ``Q`` row blocks ``T·N`` apart, times ``N`` columns.

Both closed forms are first checked to be what ``layout_algebra.interop.cute.algebra`` computes at
every ``T, Q, N`` in ``{1, 2, 3, 4, 6}`` (the entry fails otherwise). Then Z3 proves, for
all sizes, that the closed form *is* the composition: ``D(x) = A((B, B*)(x))`` for every
``x < M·N``. The query takes ``x`` apart into its digits under ``D``'s shape (every
``x < 8QN`` is ``a + 8b + 8Qc`` with ``a < 8``, ``b < Q``, ``c < N``), with the tile height
``T = 8`` (XLA's sublanes) and ``Q``, ``N`` symbols. (Asked on ``x`` itself, or with ``T``
symbolic too, Z3 times out: the divisions by ``8Q`` or ``T·Q`` are nonlinear. The
one-to-one-ness of ``D`` through its right inverse ``(N,T,Q):(T·Q,1,T)`` times out as well;
that closed form is checked against the algebra at the sampled sizes only.)
"""

import _cute
import sympy

from layout_algebra.interop.cute.algebra import complement, logical_divide, right_inverse

CLAIM = "CuTe's logical_divide of a row-major matrix by a tile of 8 rows is A ∘ (B, B*), for all sizes"


def tile_complement(b, a_size):
    return complement(b, a_size)


def prove_claim():
    T, Q, N = _cute.size("T"), _cute.size("Q"), _cute.size("N")
    x = _cute.index("x")

    def family(t, n):
        A = ((t * Q, n), (n, 1))
        B = (t, 1)
        star = (Q * n, t)
        D = ((t, (Q, n)), (n, (t * n, 1)))
        R = ((n, t, Q), (t * Q, 1, t))
        return A, B, star, D, R

    A, B, star, D, R = family(T, N)
    sizes = list(_cute.samples((T, Q, N), (1, 2, 3, 4, 6)))
    _cute.closed_form_is_the_algebra(tile_complement, [B, T * Q * N], star, sizes)
    _cute.closed_form_is_the_algebra(logical_divide, [A, B], D, sizes)
    _cute.closed_form_is_the_algebra(right_inverse, [D], R, sizes)

    # every x < 8QN is a + 8b + 8Qc for digits a < 8, b < Q, c < N (D's own coordinates)
    a, b, c = _cute.index("a"), _cute.index("b"), _cute.index("c")
    x = a + 8 * b + 8 * Q * c
    A, B, star, D, _ = family(8, N)
    concatenation = (B[0], star[0]), (B[1], star[1])
    return [
        _cute.law(
            f"logical_divide({_cute.text(A)}, {_cute.text(B)}) = {_cute.text(D)} is A ∘ (B, {_cute.text(star)}) on [0, 8*Q*N)",
            sympy.Eq(_cute.at_offset(D, x), _cute.at_offset(A, _cute.at_offset(concatenation, x))),
            {a: 8, b: Q, c: N},
        ),
    ]
