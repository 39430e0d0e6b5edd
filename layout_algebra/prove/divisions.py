"""Divisions by a size that are whole numbers once every size is at least 1.

Reading a witness element's input index off a reshape divides by symbolic sizes: the last
row ``2*N - 1`` of ``X[2*N, 128]`` comes from row ``(2*N - 1) % N`` of block
``(2*N - 1) // N`` of ``X[2, N, 128]``, which SymPy writes ``Mod(-1, N)`` and
``floor((256*N - 128)/(128*N))``. To Z3 each is a division by an unknown, a product of two
unknowns (nonlinear integer arithmetic), and a necessity query made of a few of them took
about a second. Yet for every ``N >= 1`` they are ``N - 1`` and ``1``: the numerator is a
whole multiple of the divisor plus a constant no larger than the divisor's least value.

:func:`whole_divisions` rewrites exactly those terms: ``floor(n/d)`` and ``Mod(n, d)`` where
polynomial division gives ``n = q*d + r`` with ``q`` an integer and ``r`` an integer constant,
``d`` is a positive constant times a product of sizes (so ``d >= c`` once each size is
``>= 1``), and ``-c <= r < c``. Then ``floor(n/d) = q + floor(r/d)`` with ``floor(r/d)`` ``0``
or ``-1``, and ``Mod(n, d) = Mod(r, d)``, ``r`` or ``r + d``: identities for every size
``>= 1``, so a claim proved of the rewritten expression under assumptions that include
``s >= 1`` for its sizes is proved of the original. Anything else is left as it is.

>>> from layout_algebra.model.symbols import dim_symbol
>>> n = dim_symbol("N")
>>> whole_divisions(sympy.Mod(-1, n) + sympy.floor((256 * n - 128) / (128 * n)), [n])
N
>>> whole_divisions(sympy.floor(5 / n), [n])  # 5 may exceed N: left as it is
floor(5/N)
"""

from __future__ import annotations

from collections.abc import Iterable

import sympy

__all__ = ["whole_divisions"]


def _least_value(divisor: sympy.Expr, sizes: frozenset[sympy.Symbol]) -> int | None:
    """The least value of ``divisor`` when every size is at least 1: ``c`` for ``c * s1 * s2 ...``
    (``c`` a positive integer, each ``s`` a size); ``None`` for anything else."""
    coefficient, rest = divisor.as_coeff_Mul()
    if not (coefficient.is_Integer and coefficient > 0):
        return None
    factors = sympy.Mul.make_args(rest)
    if rest != 1 and not all(
        f in sizes or (f.is_Pow and f.base in sizes and f.exp.is_Integer and f.exp > 0) for f in factors
    ):
        return None
    return int(coefficient)


def _split(
    numerator: sympy.Expr, divisor: sympy.Expr, sizes: frozenset[sympy.Symbol]
) -> tuple[sympy.Expr, int, int] | None:
    """``(q, r, c)`` with ``numerator = q*divisor + r``, ``q`` an integer polynomial in the sizes, ``r``
    an integer constant with ``-c <= r < c`` and ``c`` the divisor's least value; or ``None``."""
    least = _least_value(divisor, sizes)
    if least is None or not numerator.free_symbols <= sizes:
        return None
    gens = sorted(numerator.free_symbols | divisor.free_symbols, key=str)  # only those present:
    if not gens:  # SymPy's division over more generators than the terms hold can miss a quotient
        return None
    try:
        quotient, remainder = sympy.div(sympy.expand(numerator), divisor, *gens)
        if not (remainder.is_Integer and -least <= remainder < least):
            return None
        quotient = sympy.expand(quotient)
        if not all(c.is_Integer for c in sympy.Poly(quotient, *gens).coeffs()):
            return None
    except (sympy.PolynomialError, sympy.GeneratorsNeeded, sympy.CoercionFailed):
        return None  # not a polynomial of the sizes (a floor inside, ...): left as it is
    return quotient, int(remainder), least


def whole_divisions(expr: sympy.Basic, sizes: Iterable[sympy.Symbol]) -> sympy.Basic:
    """``expr`` with each ``floor(n/d)`` and ``Mod(n, d)`` that is a polynomial of the sizes for
    every size ``>= 1`` written as that polynomial (module docstring); equal to ``expr``
    wherever every one of ``sizes`` is at least 1."""
    known = frozenset(sizes)

    def floor_of(e: sympy.Expr) -> sympy.Expr:
        numerator, divisor = sympy.fraction(sympy.together(e.args[0]))
        found = _split(numerator, divisor, known)
        if found is None:
            return e
        quotient, remainder, _ = found
        return quotient + (-1 if remainder < 0 else 0)

    def mod_of(e: sympy.Expr) -> sympy.Expr:
        numerator, divisor = e.args
        found = _split(numerator, divisor, known)
        if found is None:
            return e
        _, remainder, _ = found
        return remainder + divisor if remainder < 0 else sympy.Integer(remainder)

    out = expr.replace(lambda e: isinstance(e, sympy.floor), floor_of)
    return out.replace(lambda e: isinstance(e, sympy.Mod), mod_of)
