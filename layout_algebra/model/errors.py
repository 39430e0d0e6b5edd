"""The package's errors: one root, :class:`LayoutAlgebraError`, that every error derives from.

``except layout_algebra.LayoutAlgebraError`` catches every error this package raises on
purpose: input it has no answer for (shape text outside XLA's grammar, a layout XLA rejects,
an index outside the array, HLO that is not valid, ...). Each error also keeps the built-in
base it always had (most are ``ValueError``), so ``except ValueError`` still works:

>>> import layout_algebra as la
>>> try:
...     la.parse_shape("f32[2,3]{1,0")
... except la.LayoutAlgebraError as err:
...     print(type(err).__name__, isinstance(err, ValueError))
ParseError True

An error that does *not* derive from the root (a ``ValueError`` from NumPy or SymPy deep
inside, an ``IndexError``) is a bug in this package: the command line says so and prints
the traceback instead of blaming the input.

Errors without a class of their own are :class:`InvalidArgumentError`; its message quotes
the argument and says what is wrong:

>>> la.linear_index("f32[3,5]{1,0}", (3, 0))
Traceback (most recent call last):
...
layout_algebra.InvalidArgumentError: f32[3,5]{1,0}: index (3, 0) is out of bounds in dimension 0 (size 3)
"""

from __future__ import annotations

__all__ = ["InvalidArgumentError", "LayoutAlgebraError"]


class LayoutAlgebraError(Exception):
    """The root of every error this package raises on purpose (bad input, not a bug)."""


class InvalidArgumentError(LayoutAlgebraError, ValueError):
    """An argument the function has no answer for; the message quotes it and says what is wrong."""


# Where users import them from (and what a traceback shows): the package root.
LayoutAlgebraError.__module__ = "layout_algebra"
InvalidArgumentError.__module__ = "layout_algebra"
