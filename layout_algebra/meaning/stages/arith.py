"""How the stages' integer operations are carried out: one object per number system.

A stage is written once, in terms of ``floordiv``, ``mod``, ``ge`` and ``any_of``.
The same code then runs on Python ints (concrete evaluation), NumPy arrays (whole
arrays of indices at once) and SymPy expressions (closed forms), because Python's
``//``, ``%``, ``>=`` and ``|`` mean the right thing on all three:

>>> import sympy
>>> from layout_algebra.meaning.stages.arith import ARITHMETIC
>>> i = sympy.Symbol("i", integer=True, nonnegative=True)
>>> ARITHMETIC.floordiv(17, 4), ARITHMETIC.mod(17, 4)
(4, 1)
>>> ARITHMETIC.floordiv(i, 8), ARITHMETIC.mod(i, 8)
(floor(i/8), Mod(i, 8))
>>> ARITHMETIC.any_of([i >= 5, i >= 7])
(i >= 5) | (i >= 7)
>>> ARITHMETIC.any_of([])
False

A solver interpreter (Z3) subclasses :class:`Arithmetic` to build its own terms, e.g.
with explicit quotient and remainder variables.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from functools import reduce
from typing import Any

__all__ = ["ARITHMETIC", "Arithmetic"]


class Arithmetic:
    """Floor division, remainder, comparison and disjunction on any operand type.

    The defaults use Python's operators, which ints, NumPy integer arrays and SymPy
    expressions all implement with floor semantics (``-7 // 2 == -4``).
    """

    name = "python"

    def lift(self, size: Any) -> Any:
        """A dimension size (an int or a SymPy expression) as a value of this arithmetic."""
        return size

    def floordiv(self, a: Any, b: Any) -> Any:
        """``⌊a / b⌋`` for ``b > 0``."""
        return a // b

    def mod(self, a: Any, b: Any) -> Any:
        """``a mod b`` in ``[0, b)`` for ``b > 0``."""
        return a % b

    def ge(self, a: Any, b: Any) -> Any:
        """The condition ``a >= b``."""
        return a >= b

    def any_of(self, conditions: Iterable[Any]) -> Any:
        """The disjunction of ``conditions`` (``False`` when there are none)."""
        return reduce(operator.or_, conditions, False)

    def mixed_radix(self, value: Any, digits: Sequence[Any], sizes: Sequence[Any]) -> Any:
        """Note that ``value`` is the row-major number of ``digits`` in a box of ``sizes``.

        Returns ``value``. Plain arithmetic ignores the note; a prover may use it to divide
        such a number by a suffix product of ``sizes`` exactly (with the side condition
        that the digits lie in the box, which it must then prove).
        """
        return value


#: The shared default: Python ints, NumPy arrays and SymPy expressions.
ARITHMETIC = Arithmetic()
