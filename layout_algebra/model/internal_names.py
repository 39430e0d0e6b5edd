"""The one supply of internal names: Z3 constants and SymPy symbols no user text can spell.

A prover builds names of its own: index variables, the ``K`` of a substitution
``N = 8*K``, the quotient ``k`` of a residue ``N = 8*k + r``, the quotient and remainder of
a division, the start index of a dynamic slice, a literal. Z3 knows a constant by its
name, and SymPy knows a symbol by its name and assumptions, so an internal name that a
user can also write *is* the user's size: three false proofs came from that (index
names ``x0``/``j0``, the start index ``param1``, the substitution ``N = 8*N_8``).

Every internal name made here contains :data:`MARK` (``!``), a character that no size
name (``[A-Za-z_][A-Za-z0-9_]*``, ``model.syntax``, ``model.formulas``), no assumption
name (``prove.assumptions``) and no HLO instruction name (``[A-Za-z0-9_][\\w.-]*``,
``hlo.parser``) can hold. A name is ``detail + "!" + tag``: the tag (after the last
``!``) says the role and holds no ``!``, so two roles never make the same name, and one
role makes one name per detail.

>>> index_variable("x0"), multiple_name("N_8", 8), quotient_name("N", 8), start_name(1)
('x0!', 'N_8!by8', 'N!8', '1!start')
>>> from layout_algebra.model.symbols import dim_symbol
>>> K = multiple_size(dim_symbol("N"), 8)
>>> K == dim_symbol("N_8"), K.is_integer, K.is_nonnegative, is_internal(str(K))
(False, True, True, True)
>>> is_internal("N_8"), is_internal("x0")
(False, False)
"""

from __future__ import annotations

from functools import cache

import sympy

__all__ = [
    "MARK",
    "division_names",
    "index_variable",
    "is_internal",
    "lemma_names",
    "literal_name",
    "multiple_name",
    "multiple_size",
    "quotient_name",
    "quotient_symbol",
    "start_name",
]

#: The character every internal name holds and no user-written name can.
MARK = "!"


def is_internal(name: str) -> bool:
    """Whether ``name`` is one of this supply's (it holds :data:`MARK`)."""
    return MARK in name


def _named(detail: object, tag: str) -> str:
    assert MARK not in tag
    return f"{detail}{MARK}{tag}"


def index_variable(name: str) -> str:
    """The Z3 name of a bounded index variable (an element coordinate ``x0``, a digit)."""
    return _named(name, "")


def quotient_name(symbol: object, modulus: int) -> str:
    """The name of ``k`` in ``symbol = modulus*k + residue`` (a residue known from the context)."""
    return _named(symbol, str(int(modulus)))


def quotient_symbol(symbol: object, modulus: int) -> sympy.Symbol:
    """:func:`quotient_name` as a SymPy integer (it may be any integer the context allows)."""
    return sympy.Symbol(quotient_name(symbol, modulus), integer=True)


def multiple_name(symbol: object, modulus: int) -> str:
    """The name of ``K`` in the substitution ``symbol = modulus*K`` (a case of a condition)."""
    return _named(symbol, f"by{int(modulus)}")


@cache
def multiple_size(symbol: object, modulus: int) -> sympy.Symbol:
    """:func:`multiple_name` as a size (an integer ``>= 0``, as :func:`dim_symbol` makes them)."""
    return sympy.Symbol(multiple_name(symbol, modulus), integer=True, nonnegative=True)


def division_names(count: int) -> tuple[str, str]:
    """The names of the quotient and remainder of the ``count``-th division of a query."""
    return _named(count, "q"), _named(count, "r")


def start_name(operand: int) -> str:
    """The name of the start index read from operand ``operand`` (a dynamic slice's)."""
    return _named(operand, "start")


def literal_name(value: object) -> str:
    """The name of an uninterpreted literal value (a float constant the solver does not compute)."""
    return _named(value, "literal")


def lemma_names(*names: str) -> str:
    """Space-separated names of a general lemma's own variables (``z3.Ints`` reads them)."""
    return " ".join(_named(n, "lemma") for n in names)
