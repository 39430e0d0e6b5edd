"""Symbolic dimension sizes: SymPy symbols standing for non-negative integers.

``f32[N,M]`` is this package's extension of XLA's syntax: each name becomes one SymPy
symbol, the same object for the same name, declared integer and non-negative (a
dimension size is never negative; say ``N >= 1`` as an assumption where it matters).

>>> from layout_algebra.model.symbols import dim_symbol
>>> n = dim_symbol("N")
>>> n.is_integer, n.is_nonnegative
(True, True)
>>> dim_symbol("N") is n
True
"""

from __future__ import annotations

from functools import cache

import sympy

__all__ = ["dim_symbol"]


@cache
def dim_symbol(name: str) -> sympy.Symbol:
    """The SymPy symbol for the dimension named ``name``."""
    return sympy.Symbol(name, integer=True, nonnegative=True)


def as_sympy(value: object) -> sympy.Basic:
    """``value`` (an int, a bool, a SymPy object) as a SymPy object; text is refused.

    ``sympy.sympify`` would *evaluate* a string as Python; text from users is read by the
    package's grammars (``model.formulas``, ``prove.assumptions``), never sympified:

    >>> as_sympy(3) + dim_symbol("N")
    N + 3
    >>> as_sympy("N + 1")
    Traceback (most recent call last):
    ...
    TypeError: 'N + 1': text is read by a grammar (model.formulas), never sympified
    """
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{value!r}: text is read by a grammar (model.formulas), never sympified")
    return sympy.sympify(value)
