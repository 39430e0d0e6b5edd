"""Helpers for the catalog's CuTe-algebra theorems (``cute_*.py``; not a claim itself).

A theorem about CuTe's algebra for *symbolic* sizes names a family of layouts (sizes
``M``, ``N``, ... as symbols) and the closed form of what an operation returns on it. Two
things are then checked: :func:`closed_form_is_the_algebra` evaluates the operation of
``layout_algebra.interop.cute.algebra`` at several concrete sizes and demands the closed form there
(an ``AssertionError`` otherwise: the entry cannot run on a closed form the code does not
produce); and :func:`law` asks Z3 (``prove.holds``) whether the law holds for every size.
"""

from __future__ import annotations

import dataclasses
import itertools

import sympy

from layout_algebra import prove
from layout_algebra.interop.cute.algebra import coalesce, offset_expr
from layout_algebra.interop.cute.export import AlgebraError, Layout


def size(name: str) -> sympy.Symbol:
    """A size: an integer >= 1."""
    return sympy.Symbol(name, integer=True, positive=True)


def index(name: str = "i") -> sympy.Symbol:
    """An index: an integer >= 0."""
    return sympy.Symbol(name, integer=True, nonnegative=True)


def at(tree, values):
    """The nested tuple ``tree`` with its symbols replaced by ``values`` (integers)."""
    if isinstance(tree, tuple):
        return tuple(at(t, values) for t in tree)
    return int(sympy.sympify(tree).xreplace({k: sympy.Integer(v) for k, v in values.items()}))


def concrete(shape, stride, values) -> Layout:
    return Layout(at(shape, values), at(stride, values))


def samples(symbols, values=(1, 2, 3, 4, 6)):
    """Every assignment of ``values`` to ``symbols``."""
    for combo in itertools.product(values, repeat=len(symbols)):
        yield dict(zip(symbols, combo, strict=True))


def closed_form_is_the_algebra(operation, arguments, result, assignments) -> int:
    """``operation(*arguments) == coalesce(result)`` at each assignment of the sizes (a layout's
    arguments are ``(shape, stride)`` pairs of expressions; others are expressions). Returns
    how many sizes were checked; raises ``AssertionError`` on the first mismatch."""
    checked = 0
    for values in assignments:
        args = [concrete(*a, values) if isinstance(a, tuple) else at(a, values) for a in arguments]
        want = coalesce(concrete(*result, values))
        got = operation(*args)
        if coalesce(got) != want:
            raise AssertionError(
                f"{operation.__name__}{tuple(map(str, args))} = {got}, not the closed form {want}"
            )
        checked += 1
    if not checked:
        raise AssertionError("no sizes to check the closed form at")
    return checked


def refused_by_the_algebra(operation, arguments, assignments, reason: str) -> int:
    """``operation`` raises an ``AlgebraError`` naming ``reason`` at each assignment."""
    checked = 0
    for values in assignments:
        args = [concrete(*a, values) if isinstance(a, tuple) else at(a, values) for a in arguments]
        try:
            got = operation(*args)
        except AlgebraError as err:
            if reason not in str(err):
                raise AssertionError(f"{operation.__name__}: refused for another reason: {err}") from None
            checked += 1
            continue
        raise AssertionError(f"{operation.__name__}{tuple(map(str, args))} = {got} was not refused")
    return checked


def at_offset(layout, x):
    """``layout(x)`` for a ``(shape, stride)`` pair of expressions."""
    return offset_expr(layout[0], layout[1], x)


def text(layout) -> str:
    """CuTe text of a ``(shape, stride)`` pair of expressions: ``(N,M):(M,1)``."""

    def tree(t):
        return "(" + ",".join(tree(x) for x in t) + ")" if isinstance(t, tuple) else str(t).replace(" ", "")

    return f"{tree(layout[0])}:{tree(layout[1])}"


#: Z3's time per law: the nonlinear ones take seconds alone, and more on a busy machine.
TIMEOUT_MS = 120_000


def law(claim: str, condition, bounds, assume=None):
    """``prove.holds`` of a SymPy condition for every size, each index ``0 <= x < bound``,
    reported under the readable ``claim``."""
    result = prove.holds(condition, bounds, assume=assume, timeout_ms=TIMEOUT_MS)
    return dataclasses.replace(result, claim=f"{claim} (Z3: {result.claim})")
