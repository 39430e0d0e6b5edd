"""CuTe's complement fills the gaps of two layout families: together they are a bijection, for every size.

``complement(L, c)`` is the ordered layout ``C`` of the offsets ``L`` leaves out; CuTe states
that ``L`` and ``C`` are disjoint and that ``(L, C)`` covers ``[0, c)``. Two families with
symbolic sizes:

* ``L = N:K`` (every ``K``-th element, ``N, K >= 1``): ``complement(L, N·K) = K:1``;
* ``L = (8,N):(1,16)`` (an ``8×N`` column-major matrix whose columns are 16 apart,
  ``N >= 1``): ``complement(L, 16N) = 2:8``, the other half of each column pair. (With a
  symbolic column length ``M`` in place of 8, Z3 times out: the divisions by ``2M`` and
  ``MN`` are nonlinear.)

Each closed form is first checked to be what ``layout_algebra.interop.cute.algebra.complement`` computes,
at every size in ``{1, 2, 3, 4, 6}`` (the entry fails otherwise). Then, for
``F = (L, C)`` and ``R`` its right inverse (closed forms checked the same way), Z3 proves for all sizes
``F(R(y)) = y`` for every ``y < size(F)`` — ``F`` is onto ``[0, size(F))``, which covers the
cotarget (the query also demands ``R(y) < size(F)``: ``F`` is read inside its domain,
not extended past it) — and ``R(F(x)) = x`` for every ``x < size(F)`` — ``F`` is one-to-one, so no offset
of ``C`` other than ``C(0) = 0`` is an offset of ``L`` (disjointness).
"""

import _cute
import sympy

from layout_algebra.interop.cute.algebra import complement, make_layout, right_inverse

CLAIM = "CuTe's complement makes N:K and (8,N):(1,16) bijections onto [0, cotarget), for all N, K"


def concatenation(a, b):
    return make_layout(a, b)


def prove_claim():
    N, K = _cute.size("N"), _cute.size("K")
    x = _cute.index("x")
    families = [
        # name, L, cotarget, complement, (L, C) flat, its right inverse, size, sizes
        ("N:K", (N, K), N * K, (K, 1), ((N, K), (K, 1)), ((K, N), (N, 1)), N * K, (N, K)),
        (
            "(8,N):(1,16)",
            ((8, N), (1, 16)),
            16 * N,
            (2, 8),
            ((8, N, 2), (1, 16, 8)),
            ((8, 2, N), (1, 8 * N, 8)),
            16 * N,
            (N,),
        ),
    ]
    results = []
    for name, L, cotarget, C, F, R, total, sizes in families:
        _cute.closed_form_is_the_algebra(complement, [L, cotarget], C, _cute.samples(sizes))
        _cute.closed_form_is_the_algebra(concatenation, [L, C], F, _cute.samples(sizes))
        _cute.closed_form_is_the_algebra(right_inverse, [F], R, _cute.samples(sizes))
        results.append(
            _cute.law(
                f"({name}, its complement {_cute.text(C)}) reaches every offset in [0, {total})",
                sympy.And(
                    _cute.at_offset(R, x) < total,  # F read inside its domain [0, size(F))
                    sympy.Eq(_cute.at_offset(F, _cute.at_offset(R, x)), x),
                ),
                {x: total},
            )
        )
        results.append(
            _cute.law(
                f"({name}, its complement {_cute.text(C)}) is one-to-one on [0, {total})",
                sympy.Eq(_cute.at_offset(R, _cute.at_offset(F, x)), x),
                {x: total},
            )
        )
    return results
