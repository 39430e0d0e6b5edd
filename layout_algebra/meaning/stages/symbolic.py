"""The stages run on SymPy: closed forms of a layout's index maps.

This is the one module of the stages that imports SymPy; it is loaded only when a
formula is asked for (``import layout_algebra`` does not load it).

:class:`SympyArithmetic` is the :class:`~layout_algebra.meaning.stages.arith.Arithmetic` of
closed forms. It merges nested floors (``⌊⌊x⌋/c⌋ = ⌊x/c⌋`` for an integer ``c > 0``) and
builds remainders with :func:`safe_mod`, which works around a SymPy bug:

>>> p = OFFSET_SYMBOL
>>> SYMPY_ARITHMETIC.floordiv(SYMPY_ARITHMETIC.floordiv(p, 2), 4)
floor(p/8)
>>> x = sympy.Symbol("x", integer=True, nonnegative=True)
>>> safe_mod(2 * sympy.Mod(x, 5), 3).subs(x, 2), sympy.Mod(2 * sympy.Mod(x, 5), 3).subs(x, 2)
(1, 2)
>>> index_symbols(2)
(i0, i1)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sympy

from layout_algebra.meaning.stages.arith import Arithmetic
from layout_algebra.model.symbols import as_sympy

__all__ = ["OFFSET_SYMBOL", "SYMPY_ARITHMETIC", "SympyArithmetic", "index_symbols", "safe_mod"]

#: The symbol for an offset in the physical buffer (in the unit asked for).
OFFSET_SYMBOL = sympy.Symbol("p", integer=True, nonnegative=True)


def index_symbols(rank: int) -> tuple[sympy.Symbol, ...]:
    """The SymPy symbols ``i0, i1, ...`` for a logical index (integer, non-negative)."""
    return tuple(sympy.Symbol(f"i{k}", integer=True, nonnegative=True) for k in range(rank))


def safe_mod(a: Any, b: Any) -> sympy.Expr:
    """``sympy.Mod(a, b)``, but left unevaluated when ``a`` has a ``Mod`` inside.

    SymPy 1.14 gets remainders of products with remainders wrong: ``Mod(c*Mod(x, m), q)``
    (an integer ``q`` other than ``m``) becomes ``Mod(c*Mod(x, m)**2, q)`` (``Mod.eval``
    rebuilds the product from all its factors *and* appends the ``Mod`` factors again: 2,
    not 1, at ``x = 2, c = 2, m = 5, q = 3``), and ``Mod(2*Mod(x, 3), 3)`` becomes
    ``2*Mod(x, 3)`` (4, not 1, at ``x = 2``). Whenever ``a`` contains a ``Mod`` the
    remainder is kept as written; everything else evaluates as usual.
    """
    a, b = as_sympy(a), as_sympy(b)
    if a.has(sympy.Mod):
        return sympy.Mod(a, b, evaluate=False)
    return sympy.Mod(a, b)


class SympyArithmetic(Arithmetic):
    """SymPy closed forms, with nested floors merged and remainders built by :func:`safe_mod`."""

    name = "sympy"

    def floordiv(self, a: Any, b: Any) -> Any:
        if isinstance(a, sympy.floor):
            return sympy.floor(a.args[0] / b)
        return sympy.floor(as_sympy(a) / b)

    def mod(self, a: Any, b: Any) -> Any:
        if isinstance(a, int) and isinstance(b, int):
            return a % b
        return safe_mod(a, b)

    def any_of(self, conditions: Iterable[Any]) -> Any:
        return sympy.Or(*conditions)


#: Arithmetic for closed forms.
SYMPY_ARITHMETIC = SympyArithmetic()
