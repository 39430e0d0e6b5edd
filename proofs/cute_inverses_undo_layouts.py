"""CuTe's right and left inverses undo two layout families, for every size.

CuTe's ``right_inverse(L)`` is a layout ``R`` with ``L(R(x)) = x`` on ``R``'s domain, and
``left_inverse(L)`` one with ``L⁻¹(L(i)) = i`` on ``L``'s. Two families with symbolic sizes
``M, N >= 1``:

* ``A = (M,N):(N,1)``, a row-major ``M×N`` matrix in CuTe's colexicographic order (XLA's
  ``f32[M,N]{1,0}``): ``right_inverse(A) = left_inverse(A) = (N,M):(M,1)``, the transpose;
* ``T = (8,(2,N)):(2,(1,16))``, rows of 8 elements interleaved in pairs (as XLA's ``(2,1)``
  sub-tile packs two rows of bf16): ``right_inverse(T) = left_inverse(T) = (2,8,N):(8,1,16)``
  (here only ``N`` is symbolic: Z3 times out on the same law with a symbolic row length,
  whose divisions by ``2M`` are nonlinear).

Each closed form is first checked to be what ``layout_algebra.interop.cute.algebra`` computes, at every
``M, N`` in ``{1, 2, 3, 4, 6}`` (the entry fails otherwise); then Z3 proves
``L(R(x)) = x`` for every ``x < size`` and ``R(L(i)) = i`` for every ``i < size``, for all
sizes, each with ``R(x) < size`` (``L`` read inside its domain, not extended past it). Equal sizes make each inverse two-sided: the layouts are bijections onto ``[0, size)``.
"""

import _cute
import sympy

from layout_algebra.interop.cute.algebra import left_inverse, right_inverse

CLAIM = "CuTe's right_inverse and left_inverse undo (M,N):(N,1) and (8,(2,N)):(2,(1,16)), for all M, N"


def prove_claim():
    M, N, x = _cute.size("M"), _cute.size("N"), _cute.index("x")
    families = [
        ("(M,N):(N,1)", ((M, N), (N, 1)), ((N, M), (M, 1)), M * N),
        ("(8,(2,N)):(2,(1,16))", ((8, (2, N)), (2, (1, 16))), ((2, 8, N), (8, 1, 16)), 16 * N),
    ]
    results = []
    for name, L, R, total in families:
        for operation in (right_inverse, left_inverse):
            _cute.closed_form_is_the_algebra(
                operation, [L], R, _cute.samples((M, N) if name.startswith("(M") else (N,))
            )
        results.append(
            _cute.law(
                f"{name} composed with its right inverse {_cute.text(R)} is the identity on [0, {total})",
                sympy.And(
                    _cute.at_offset(R, x) < total,  # L read inside its domain [0, size(L))
                    sympy.Eq(_cute.at_offset(L, _cute.at_offset(R, x)), x),
                ),
                {x: total},
            )
        )
        results.append(
            _cute.law(
                f"the left inverse {_cute.text(R)} of {name} recovers every index in [0, {total})",
                sympy.And(
                    _cute.at_offset(L, x) < total,  # R read inside its domain [0, size(R))
                    sympy.Eq(_cute.at_offset(R, _cute.at_offset(L, x)), x),
                ),
                {x: total},
            )
        )
    return results
