"""Digits: the one model of a tiled position, shared by the CuTe export and the layout recovery.

A tiled layout takes each logical index ``i_k`` apart into mixed-radix **digits**
``⌊i_k / weight⌋ mod modulus`` (tile number, position in tile, ...) and gives every digit
a place, ``extent`` slots wide, in the tiled shape. ``i0`` of ``f32[16,384]{1,0:T(8,128)}``
is the tile row ``⌊i0/8⌋`` (2 values) and the row in the tile ``i0 mod 8`` (8 values):

>>> from layout_algebra.meaning.digits import Digit
>>> tile_row, row = Digit(0, 8, None, 2), Digit(0, 1, 8, 8)
>>> print(tile_row, "|", row)
⌊i0/8⌋ (extent 2) | i0 mod 8 (extent 8)
>>> tile_row.size((16, 384)), row.size((16, 384))
(2, 8)

``dim is None`` is a unit digit (always 0); ``modulus is None`` the top digit of its
dimension (no ``mod``). The extent may exceed the values the digit takes: that is
padding (``f32[5,256]{1,0:T(8,128)}`` stores the 5 rows in 8 slots):

>>> Digit(0, 1, 8, 8).size((5, 256))
5

Weights, moduli and extents may be SymPy sizes where nothing cuts them (an untiled
dimension ``n`` is ``Digit(0, 1, None, n)``). :func:`digit_expr` and :func:`digit_of`
translate between a digit and its SymPy expression.

Every user of the idea reads it here: :mod:`~layout_algebra.meaning.recover` (positions
of a tiled shape, and the backwards search), :mod:`~layout_algebra.interop.mlir` (which
prints and reads digits) and :mod:`~layout_algebra.interop.cute.export` (which follows the
digits through the stage pipeline to build CuTe modes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import sympy

from layout_algebra.meaning.stages.stages import ceil_div

__all__ = ["Digit", "digit_expr", "digit_of"]


@dataclass(frozen=True)
class Digit:
    """The digit ``⌊i_dim / weight⌋ mod modulus`` of a logical index, placed over ``extent`` slots.

    ``padded_by`` names the tile that grew ``extent`` beyond the values taken (for
    messages only: it takes no part in equality).
    """

    dim: int | None
    weight: Any = 1
    modulus: Any = None
    extent: Any = 1
    padded_by: str = field(default="", compare=False)

    def __str__(self) -> str:
        return f"{self.expression_text()} (extent {self.extent})"

    def expression_text(self) -> str:
        """``⌊i0/8⌋ mod 4``, ``i1``, or ``0`` for a unit digit."""
        if self.dim is None:
            return "0"
        text = f"i{self.dim}" if self.weight == 1 else f"⌊i{self.dim}/{self.weight}⌋"
        return text if self.modulus is None else f"{text} mod {self.modulus}"

    def size(self, dims: Sequence[Any]) -> Any:
        """How many values the digit takes on the index box ``dims``."""
        if self.dim is None:
            return 1
        if self.weight == 1 and self.modulus is None:
            return dims[self.dim]
        top = ceil_div(dims[self.dim], self.weight)
        return top if self.modulus is None else min(top, self.modulus)


def digit_expr(dim: int | None, weight: int = 1, modulus: int | None = None) -> sympy.Expr:
    """The SymPy expression ``⌊i_dim/weight⌋ mod modulus`` (``0`` for a unit digit).

    >>> digit_expr(0, 2, 4), digit_expr(1), digit_expr(None)
    (Mod(floor(i0/2), 4), i1, 0)
    """
    if dim is None:
        return sympy.Integer(0)
    e = sympy.Symbol(f"i{dim}", integer=True, nonnegative=True)
    if weight != 1:
        e = sympy.floor(e / weight)
    return e if modulus is None else sympy.Mod(e, modulus)


def digit_of(expr: Any, dims: Sequence[int]) -> tuple[int | None, int, int | None] | None:
    """``(dim, weight, modulus)`` if the SymPy ``expr`` is ``⌊i_dim/weight⌋ mod modulus``, else None.

    ``(None, 1, None)`` is the constant 0.

    >>> import sympy
    >>> i0 = sympy.Symbol("i0", integer=True, nonnegative=True)
    >>> digit_of(sympy.floor(sympy.Mod(i0, 8) / 2), (16,))
    (0, 2, 4)
    >>> digit_of(sympy.floor(sympy.Mod(i0, 12) / 8), (16,)) is None
    True

    A digit reduced again by a larger modulus is unchanged, and divided by at least its
    modulus it is 0: a later tile level that only pads writes ``(i0 mod 2) mod 3`` and
    ``⌊(i0 mod 2)/4⌋`` (``T(2)(3)``, ``T(3,2)(4)``).

    >>> digit_of(sympy.Mod(sympy.Mod(i0, 2), 3), (16,)), digit_of(sympy.floor(sympy.Mod(i0, 2) / 4), (16,))
    ((0, 1, 2), (None, 1, None))
    """
    if expr.is_Integer:
        return (None, 1, None) if expr == 0 else None
    if isinstance(expr, sympy.Mod) and expr.args[1] == 1:
        return (None, 1, None)
    if expr.is_Symbol:
        name = str(expr)
        if name.startswith("i") and name[1:].isdigit() and int(name[1:]) < len(dims):
            return (int(name[1:]), 1, None)
        return None
    if isinstance(expr, sympy.floor):
        arg = expr.args[0]
        coefficient, rest = arg.as_coeff_Mul()
        if not (coefficient.is_Rational and coefficient.p == 1 and coefficient.q > 0):
            return None
        inner = digit_of(rest, dims)
        if inner is None or inner[0] is None:
            return None
        dim, weight, modulus = inner
        c = int(coefficient.q)
        if modulus is not None and c >= modulus:  # below the modulus: 0
            return (None, 1, None)
        if modulus is not None and modulus % c:
            return None
        return (dim, weight * c, None if modulus is None else modulus // c)
    if isinstance(expr, sympy.Mod):
        inner = digit_of(expr.args[0], dims)
        m = expr.args[1]
        if inner is None or inner[0] is None or not m.is_Integer or m <= 0:
            return None
        dim, weight, modulus = inner
        m = int(m)
        if m == 1:
            return (None, 1, None)
        if modulus is None or modulus % m == 0:
            return (dim, weight, m)
        if m >= modulus:  # values below the modulus, so below m
            return inner
        return None
    return None
