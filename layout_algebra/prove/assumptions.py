"""Assumptions and claims about sizes: a small grammar of conditions, read as data, never run.

An assumption such as ``"N % 8 == 0 or N == 3"`` (and a claim given to
:func:`~layout_algebra.prove.holds`) is text written in a tiny language of integer
conditions. Its arithmetic is the package's one grammar of size formulas,
:mod:`layout_algebra.model.formulas` (the same reader as a symbolic dimension of shape
text, ``f32[N/8]``); this module adds the condition layer on top: comparisons, chains,
``and``/``or``/``not`` and top-level lists. Both are small recursive-descent readers that
build SymPy objects directly (``sympy.Mod``, ``sympy.floor``, ``sympy.Or``, ...): nothing
is compiled, evaluated or given to ``sympify``. Anything outside the grammar is an
:class:`AssumptionError` that quotes the text with a caret.

=====================================  =================================================
accepted                               meaning
=====================================  =================================================
``12``, ``N``, ``tile_rows``           decimal literals; names are dimension sizes (the
                                       same symbols as in ``f32[N,M]``: integers >= 0)
``a + b``, ``a - b``, ``a * b``, ``-a``  integer arithmetic
``a ** 3``                             a power with a literal exponent 0..64
``a // b``, ``a % b``, ``Mod(a, b)``    floor division and its remainder (Python's)
``floor(a / b)``, ``ceiling(a / b)``   ``/`` is exact division, only inside ``floor``,
                                       ``ceiling`` (alias ``ceil``)
``min(a, ...)``, ``max(a, ...)``        smallest and largest (also ``Min``, ``Max``)
``==  !=  <  <=  >  >=``               comparisons; chains ``0 < N < 8`` mean
                                       ``0 < N and N < 8``
``and``, ``or``, ``not``, ``( )``      logic, with Python's precedence
``True``, ``False``                    the constant conditions
``A, B`` (top level)                   both (as does a list of texts)
=====================================  =================================================

Division. ``a // b`` and ``a % b`` are Python's floor division and remainder. A literal
divisor must be a positive integer (``N % 0`` is an error). A divisor that is an
expression of sizes, such as ``M`` in ``N % M == 0``, must be at least 1 for the text to
mean anything, so the condition ``M >= 1`` is stated alongside: an assumption that
divides by ``M`` also assumes ``M >= 1`` (it appears among the parsed assumptions), and
a claim that divides by ``M`` is proved only if ``M >= 1`` follows from the assumptions
(``prove.holds`` answers ``unknown`` otherwise).

>>> parse_assumptions("M % 128 == 0 and N >= 1")
(Eq(Mod(M, 128), 0), N >= 1)
>>> parse_assumptions("N == 1 or N == 2")
(Eq(N, 1) | Eq(N, 2),)
>>> parse_assumptions("0 < N < 8, not K == 0")
(0 < N, N < 8, Ne(K, 0))
>>> parse_assumptions("N % M == 0")
(M >= 1, Eq(Mod(N, M), 0))
>>> parse_condition("ceiling(N/128)*128 >= N")
128*ceiling(N/128) >= N

Whether assumptions hold at given sizes is decided exactly (integers and fractions, no
floats, no SymPy substitution):

>>> from layout_algebra.model.symbols import dim_symbol
>>> n = dim_symbol("N")
>>> assumptions_hold(parse_assumptions("N % 8 == 0 or N == 3"), {n: 3})
True
>>> assumptions_hold(parse_assumptions("N % 8 == 0 or N == 3"), {n: 4})
False

What is not in the table is refused, with the reason and a caret under the piece:

>>> parse_assumptions("__import__('os').system('true')")
Traceback (most recent call last):
...
layout_algebra.prove.assumptions.AssumptionError: cannot parse assumption: calling '__import__' is not allowed (only ceil, ceiling, floor, max, Max, min, Min, Mod may be called)
  __import__('os').system('true')
  ^
>>> parse_assumptions("N % 0 == 0")
Traceback (most recent call last):
...
layout_algebra.prove.assumptions.AssumptionError: cannot parse assumption: division by 0 (a literal divisor must be a positive integer)
  N % 0 == 0
      ^
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any, NoReturn, TypeAlias

import sympy
import z3
from sympy.printing.precedence import PRECEDENCE
from sympy.printing.str import StrPrinter

from layout_algebra.model.errors import InvalidArgumentError, LayoutAlgebraError
from layout_algebra.model.formulas import (
    MAX_CONSTANT_BITS,
    MAX_EXPONENT,
    MAX_FORMULA_DEPTH,
    ConditionInTerm,
    FormulaReader,
    Token,
)
from layout_algebra.model.syntax import ParseError
from layout_algebra.prove.encode import IntArithmetic, UnsupportedExpression, sympy_to_z3

__all__ = [
    "MAX_CONSTANT_BITS",
    "MAX_DEPTH",
    "MAX_EXPONENT",
    "AssumptionError",
    "Assumptions",
    "AssumptionsAdmitNoSizes",
    "UndefinedValue",
    "assumption_terms",
    "assumptions_hold",
    "condition_holds",
    "condition_term",
    "condition_text",
    "divisor_conditions",
    "parse_assumptions",
    "parse_condition",
    "parse_term",
    "read_claim",
    "sizes_exist",
    "value_of",
]

Assumptions: TypeAlias = str | sympy.Basic | bool | Iterable[str | sympy.Basic | bool] | None

#: Longest text read (a longer one is an error, not a slow parse).
MAX_TEXT_LENGTH = 10_000
#: Deepest nesting of parentheses, calls, signs and ``not`` read.
MAX_DEPTH = MAX_FORMULA_DEPTH
_RELATIONS: dict[str, Callable[..., sympy.Basic]] = {
    "==": sympy.Eq,
    "!=": sympy.Ne,
    "<": sympy.Lt,
    "<=": sympy.Le,
    ">": sympy.Gt,
    ">=": sympy.Ge,
}


class AssumptionError(ParseError):
    """Assumption or claim text outside the grammar; ``str(err)`` quotes it with a caret."""


class UndefinedValue(LayoutAlgebraError, ArithmeticError):
    """An expression divides by zero at the given sizes (it has no value there)."""


# ------------------------------------------------------------------------------ reading
def parse_condition(text: str | sympy.Basic | bool, what: str = "claim") -> sympy.Basic:
    """One condition (a SymPy boolean) from text in the grammar above, or a SymPy condition as is.

    A top-level ``A, B`` (or ``A and B``) is the conjunction of its parts.

    >>> parse_condition("1 >= 2")
    1 >= 2
    >>> parse_condition("N * M")
    Traceback (most recent call last):
    ...
    layout_algebra.prove.assumptions.AssumptionError: cannot parse claim: 'N * M' is a number, not a comparison (e.g. 'N * M >= 1')
      N * M
      ^
    """
    parts, _ = _read(text, what)
    return parts[0] if len(parts) == 1 else sympy.And(*parts)


def parse_term(text: str | sympy.Expr | int) -> sympy.Expr:
    """An integer expression (no comparison) in the grammar above, or a SymPy expression as is.

    >>> parse_term("ceiling(N / 128) * 128")
    128*ceiling(N/128)
    >>> parse_term("N >= 1")
    Traceback (most recent call last):
    ...
    layout_algebra.prove.assumptions.AssumptionError: cannot parse expression: 'N >= 1' is a condition, not a number
      N >= 1
      ^
    """
    if isinstance(text, bool):
        raise AssumptionError(f"{text} is a condition, not a number", str(text), 0, "expression")
    if isinstance(text, int):
        return sympy.Integer(text)
    if isinstance(text, sympy.Basic):
        if not isinstance(text, sympy.Expr):
            raise AssumptionError(f"the SymPy object {text} is not a number", str(text), 0, "expression")
        return text
    if not isinstance(text, str):
        raise AssumptionError(
            f"expected text or a SymPy expression, got {type(text).__name__}", repr(text), 0, "expression"
        )
    reader = _Reader(text, "expression")
    return reader.read_term()


def read_claim(claim: str | sympy.Basic | bool) -> tuple[sympy.Basic, tuple[sympy.Basic, ...]]:
    """A claim and the conditions under which it means anything (each symbolic divisor >= 1).

    >>> read_claim("N % M < M")
    (Mod(N, M) < M, (M >= 1,))
    """
    parts, divisors = _read(claim, "claim")
    condition = parts[0] if len(parts) == 1 else sympy.And(*parts)
    return condition, divisor_conditions(condition, divisors)


def parse_assumptions(assume: Assumptions) -> tuple[sympy.Basic, ...]:
    """Assumptions as a tuple of SymPy conditions (relations, ``And``, ``Or``, ``Not``, true/false).

    ``assume`` is text in the grammar of this module, a SymPy condition, or a list of
    either. Top-level ``and`` and ``,`` split into separate elements. Every symbolic
    divisor ``d`` brings the element ``d >= 1`` before the one that divides by it.

    >>> parse_assumptions(["N >= 1", "M == 8*N"])
    (N >= 1, Eq(M, 8*N))
    >>> parse_assumptions(None)
    ()
    """
    if assume is None:
        return ()
    if isinstance(assume, (str, sympy.Basic, bool)):
        items: list[Any] = [assume]
    elif isinstance(assume, Iterable) and not isinstance(assume, Mapping):
        items = list(assume)
    else:
        raise AssumptionError(
            f"expected text, a SymPy condition or a list of them, got {type(assume).__name__}",
            repr(assume),
            0,
            "assumption",
        )
    out: list[sympy.Basic] = []
    for item in items:
        if isinstance(item, str) and not item.strip():
            continue
        conditions, divisors = _read(item, "assumption")
        for condition in conditions:
            requirements = divisor_conditions(condition, divisors)
            out += [r for r in requirements if r not in out]
            out.append(condition)
    return tuple(out)


def _read(item: Any, what: str) -> tuple[list[sympy.Basic], list[sympy.Expr]]:
    """The top-level conjuncts of one text or SymPy condition, and the text's symbolic divisors."""
    if isinstance(item, bool):
        return [sympy.true if item else sympy.false], []
    if isinstance(item, sympy.Basic):
        if not isinstance(item, sympy.logic.boolalg.Boolean):
            raise AssumptionError(f"the SymPy object {item} is not a condition", str(item), 0, what)
        return [item], []
    if not isinstance(item, str):
        text = repr(item)
        raise AssumptionError(f"expected text or a SymPy condition, got {type(item).__name__}", text, 0, what)
    reader = _Reader(item, what)
    conditions = reader.read()
    return conditions, reader.divisors


class _Reader(FormulaReader):
    """The condition layer over the shared formula reader (:mod:`layout_algebra.model.formulas`).

    ``top ::= disj (',' disj)*``, ``disj ::= conj ('or' conj)*``, ``conj ::= neg ('and' neg)*``,
    ``neg ::= 'not' neg | 'True' | 'False' | '(' disj ')' | term (comparison term)*``, with
    Python's precedence. Conjunctions are kept as lists of parts so that the top level
    splits ``A and B``, ``A, B`` and chains ``0 < N < 8`` into their parts, in text order.
    """

    def __init__(self, text: str, what: str) -> None:
        super().__init__(text.strip(), 0, allow_division=False)
        self.what = what
        self.expecting = "an expression like 'N * 8 + 1'" if what == "expression" else "a comparison"

    def fail(self, reason: str, position: int) -> NoReturn:
        raise AssumptionError(reason, self.text, min(position, len(self.text)), self.what)

    def missing_operand(self, found: str) -> str:
        if self.what == "expression":
            return f"not an expression like 'N * 8 + 1': expected a number, a name or '(', found {found}"
        return (
            f"not a comparison like 'N % 8 == 0' or 'N >= 1': expected a number, a name or '(', found {found}"
        )

    def checked_text(self) -> None:
        if not self.text:
            self.fail(f"empty {self.what}", 0)
        if len(self.text) > MAX_TEXT_LENGTH:
            self.fail(f"longer than {MAX_TEXT_LENGTH} characters", 0)

    def read(self) -> list[sympy.Basic]:
        self.checked_text()
        try:
            parts = self.disjunction()
            while self.at(","):
                if self.peek().kind == "end":
                    break
                parts += self.disjunction()
            self.finish()
        except ConditionInTerm as wrapped:
            raise wrapped.error from None
        except RecursionError:
            self.fail(f"nested too deeply (at most {MAX_DEPTH} levels)", 0)
        return parts

    def read_term(self) -> sympy.Expr:
        """The whole text as one integer expression."""
        self.checked_text()
        try:
            value = self.formula()
        except ConditionInTerm as wrapped:
            raise wrapped.error from None
        except RecursionError:
            self.fail(f"nested too deeply (at most {MAX_DEPTH} levels)", 0)
        token = self.peek()
        if self.is_condition_word(token):
            self.fail(f"{self.text!r} is a condition, not a number", 0)
        if token.kind != "end":
            self.unexpected(token)
        return value

    def finish(self) -> None:
        token = self.peek()
        if token.kind != "end":
            self.unexpected(token)

    def unexpected(self, token: Token) -> NoReturn:
        if token.kind == "name" and token.text in ("in", "is"):
            word = token.text
            if word == "is" and self.text.startswith("not", self.skip_space(token.end)):
                word = "is not"
            self.fail(f"'{word}' is not a comparison of sizes (use == != < <= > >=)", token.start)
        if (
            token.kind == "name"
            and token.text == "not"
            and self.text.startswith("in", self.skip_space(token.end))
        ):
            self.fail("'not in' is not a comparison of sizes (use == != < <= > >=)", token.start)
        if token.kind == "name" and token.text == "if":
            self.fail("'if' (a conditional expression) is not allowed", token.start)
        if token.kind == "op" and token.text == "=":
            self.fail("'=' is not a comparison (equality is '==')", token.start)
        if token.kind == "op" and token.text == ",":
            self.fail("a ',' list is allowed only at the top level (use 'and')", token.start)
        if token.kind == "op" and token.text == ")":
            self.fail("unmatched ')'", token.start)
        if token.kind in ("op", "bad") and token.text not in ("(",):
            self.refuse(token)
        self.fail(f"unexpected {self.describe(token)}", token.start)

    @staticmethod
    def is_condition_word(token: Token) -> bool:
        if token.kind == "op":
            return token.text in _RELATIONS
        return token.kind == "name" and token.text in ("and", "or", "not")

    def word(self, word: str) -> Token | None:
        token = self.peek()
        if token.kind == "name" and token.text == word:
            self.pos = token.end
            return token
        return None

    # -- conditions, each a list of conjunctive parts
    def disjunction(self) -> list[sympy.Basic]:
        parts = self.conjunction()
        if self.peek().text != "or" or self.peek().kind != "name":
            return parts
        alternatives = [_all(parts)]
        while self.word("or"):
            alternatives.append(_all(self.conjunction()))
        return [sympy.Or(*alternatives)]

    def conjunction(self) -> list[sympy.Basic]:
        parts = self.negation()
        while self.word("and"):
            parts += self.negation()
        return parts

    def negation(self) -> list[sympy.Basic]:
        token = self.word("not")
        if token is None:
            return self.relation()
        inner = self.nested_condition(self.negation, token.start)
        return [sympy.Not(_all(inner))]

    def nested_condition(self, read: Any, position: int) -> list[sympy.Basic]:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.fail(f"nested too deeply (at most {MAX_DEPTH} levels)", position)
        try:
            return read()  # type: ignore[no-any-return]
        finally:
            self.depth -= 1

    def relation(self) -> list[sympy.Basic]:
        token = self.peek()
        if token.kind == "name" and token.text in ("True", "False"):
            self.pos = token.end
            after = self.peek()
            if after.kind == "op" and after.text not in (",", ")"):
                self.fail(f"{token.text} is a condition, not a number", token.start)
            return [sympy.true if token.text == "True" else sympy.false]
        start = self.skip_space(self.pos)
        if token.kind == "op" and token.text == "(":
            try:
                left = self.formula()
            except ConditionInTerm:
                self.pos = token.end
                inner = self.nested_condition(self.disjunction, token.start)
                whole_list = False
                if self.peek().kind == "op" and self.peek().text == ",":
                    if token.start != 0 or self.depth != 0:
                        self.fail("a ',' list is allowed only at the top level (use 'and')", start)
                    whole_list = True  # '(A, B)' as the whole text is the list A, B
                    while self.at(","):
                        if self.peek().kind == "op" and self.peek().text == ")":
                            break
                        inner += self.nested_condition(self.disjunction, token.start)
                self.expect(")", "to close '('")
                if whole_list and self.peek().kind != "end":
                    self.fail("a ',' list is allowed only at the top level (use 'and')", start)
                after = self.peek()
                if after.kind == "op" and after.text not in (",", ")"):
                    piece = self.text[start : after.start].strip()
                    self.fail(f"{piece!r} is a condition, not a number", start)
                return inner
        else:
            left = self.formula()
        terms = [left]
        out: list[sympy.Basic] = []
        while True:
            op = self.peek()
            if not (op.kind == "op" and op.text in _RELATIONS):
                break
            self.pos = op.end
            terms.append(self.formula())
            out.append(_RELATIONS[op.text](terms[-2], terms[-1], evaluate=False))
        if not out:
            after = self.peek()
            if after.kind == "op" and after.text == "=":
                self.unexpected(after)
            if (after.kind == "name" and after.text in ("in", "is")) or (
                after.kind == "name"
                and after.text == "not"
                and self.text.startswith("in", self.skip_space(after.end))
            ):
                self.unexpected(after)
            piece = self.text[start : self.pos].strip()
            shown = piece if len(piece) <= 40 else piece[:37] + "..."
            self.fail(f"{shown!r} is a number, not a comparison (e.g. '{shown} >= 1')", start)
        return out


def _all(parts: list[sympy.Basic]) -> sympy.Basic:
    return parts[0] if len(parts) == 1 else sympy.And(*parts)


# ------------------------------------------------------------------------- divisors
def divisor_conditions(
    condition: sympy.Basic, divisors: Iterable[sympy.Expr] = ()
) -> tuple[sympy.Basic, ...]:
    """``d >= 1`` for every divisor ``d`` of ``condition`` that is not a number.

    The divisors of ``Mod(a, d)``, ``floor(a/d)`` and ``ceiling(a/d)`` (and ``divisors``,
    those of the text it was read from, which SymPy may have simplified away): the
    condition means nothing where one of them is 0, so it is read where each is >= 1.

    >>> divisor_conditions(parse_condition("N % M < M and ceiling(K / (M + L)) >= 0"))
    (M >= 1, L + M >= 1)
    """
    found: list[sympy.Expr] = [d for d in divisors if d.free_symbols]
    for node in sympy.preorder_traversal(condition):
        divisor = None
        if isinstance(node, sympy.Mod):
            divisor = node.args[1]
        elif isinstance(node, (sympy.floor, sympy.ceiling)):
            divisor = sympy.fraction(sympy.together(node.args[0]))[1]
        if divisor is not None and divisor.free_symbols and divisor not in found:
            found.append(divisor)
    return tuple(sympy.Ge(d, 1, evaluate=False) for d in sorted(found, key=sympy.default_sort_key))


# ---------------------------------------------------------------------------- to Z3
def condition_term(condition: Any, ar: IntArithmetic) -> Any:
    """A Z3 boolean for a SymPy condition of any nesting (relations of integer expressions).

    >>> import z3
    >>> ar = IntArithmetic()
    >>> term = condition_term(parse_condition("N == 1 or not N >= 2"), ar)
    >>> z3.is_bool(term)
    True
    """
    if condition is True or condition is sympy.true:
        return z3.BoolVal(True)
    if condition is False or condition is sympy.false:
        return z3.BoolVal(False)
    if isinstance(condition, sympy.And):
        return z3.And(*[condition_term(c, ar) for c in condition.args])
    if isinstance(condition, sympy.Or):
        return z3.Or(*[condition_term(c, ar) for c in condition.args])
    if isinstance(condition, sympy.Not):
        return z3.Not(condition_term(condition.args[0], ar))
    if isinstance(condition, sympy.Implies):
        return z3.Implies(*[condition_term(c, ar) for c in condition.args])
    if isinstance(condition, sympy.core.relational.Relational) and condition.rel_op in _COMPARE:
        lhs, rhs = (sympy_to_z3(side, ar) for side in condition.args)
        relation = _COMPARE[condition.rel_op](lhs, rhs)
        return z3.BoolVal(relation) if isinstance(relation, bool) else relation
    raise UnsupportedExpression(f"{condition} is not a condition the prover reads")


_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
}


def assumption_terms(
    assumptions: Sequence[sympy.Basic], ar: IntArithmetic, *, context: bool = True
) -> list[Any]:
    """Z3 terms of parsed assumptions (see :func:`parse_assumptions`); ``true`` is left out.

    ``context``: the terms are the context of every query of ``ar`` (what it may assume,
    not what it must prove), so a divisibility among them (``N % 8 == 0``, a shape's domain
    for ``f32[N/8]``) is told to the arithmetic: ``N`` becomes ``8*k`` in exact quotients
    (:meth:`IntArithmetic.know_residue`). Pass ``False`` for terms to be proved.
    """
    items = [a for a in assumptions if a is not sympy.true and a is not True]
    if context:
        for fact in items:
            for conjunct in fact.args if isinstance(fact, sympy.And) else (fact,):
                known = residue_of(conjunct)
                if known is not None:
                    ar.know_residue(*known)
    return [condition_term(a, ar) for a in items]


def residue_of(fact: sympy.Basic) -> tuple[sympy.Symbol, int, int] | None:
    """``(s, m, r)`` when ``fact`` says ``s % m == r`` of one symbol ``s`` (``m >= 2``):
    ``Eq(Mod(c*s + e, d), t)`` with integers ``c``, ``e``, ``d`` and ``0 <= t < d``, solved
    for ``s``.

    >>> residue_of(parse_condition("3*N % 4 == 0")), residue_of(parse_condition("(N + 4) % 8 == 0"))
    ((N, 4, 0), (N, 8, 4))
    >>> residue_of(parse_condition("2*N % 8 == 0")), residue_of(parse_condition("N % 8 == 3"))
    ((N, 4, 0), (N, 8, 3))
    >>> [residue_of(parse_condition(t)) for t in ("M*N % 8 == 0", "N**2 % 4 == 0", "(N // 2) % 4 == 0")]
    [None, None, None]
    """
    if not (isinstance(fact, sympy.Eq) and isinstance(fact.lhs, sympy.Mod) and fact.rhs.is_Integer):
        return None
    value, d = fact.lhs.args
    if not (d.is_Integer and 0 <= int(fact.rhs) < int(d) and int(d) >= 2) or len(value.free_symbols) != 1:
        return None
    value = value - fact.rhs
    (s,) = value.free_symbols
    if not value.is_polynomial(s):  # (N // 2) % 4 == 0: not linear in N
        return None
    poly = sympy.Poly(value, s)
    if poly.degree() != 1 or not all(c.is_Integer for c in poly.all_coeffs()):
        return None
    c, e = (int(x) for x in poly.all_coeffs())
    g = math.gcd(c, int(d))
    if e % g:
        return None  # no size satisfies it: left to the solver (and to ``sizes_exist``)
    modulus = int(d) // g
    if modulus < 2:
        return None
    residue = (-(e // g) * pow(c // g, -1, modulus)) % modulus
    return s, modulus, residue


# ------------------------------------------------------------------- exact evaluation
def value_of(expr: Any, values: Mapping[sympy.Symbol, int]) -> Fraction:
    """The exact value of an expression at integer sizes (a ``Fraction``; no floats).

    Raises :class:`UndefinedValue` where a divisor is 0.

    >>> from layout_algebra.model.symbols import dim_symbol
    >>> value_of(parse_condition("N % 3 == 0").lhs, {dim_symbol("N"): 7})
    Fraction(1, 1)
    """
    if isinstance(expr, int):
        return Fraction(expr)
    if expr.is_Rational:
        return Fraction(int(expr.p), int(expr.q))
    if expr.is_Symbol:
        if expr not in values:
            raise InvalidArgumentError(f"no value given for {expr}")
        return Fraction(int(values[expr]))
    if expr.is_Add:
        return sum((value_of(a, values) for a in expr.args), Fraction(0))
    if expr.is_Mul:
        return math.prod((value_of(a, values) for a in expr.args), start=Fraction(1))
    if expr.is_Pow and expr.exp.is_Integer:
        base, exponent = value_of(expr.base, values), int(expr.exp)
        if base == 0 and exponent < 0:
            raise UndefinedValue(f"{expr} divides by 0")
        return base**exponent
    if isinstance(expr, sympy.floor):
        return Fraction(math.floor(value_of(expr.args[0], values)))
    if isinstance(expr, sympy.ceiling):
        return Fraction(math.ceil(value_of(expr.args[0], values)))
    if isinstance(expr, sympy.Mod):
        a, b = (value_of(x, values) for x in expr.args)
        if b == 0:
            raise UndefinedValue(f"{expr} divides by 0")
        return a - b * math.floor(a / b)
    if isinstance(expr, sympy.Min):
        return min(value_of(a, values) for a in expr.args)
    if isinstance(expr, sympy.Max):
        return max(value_of(a, values) for a in expr.args)
    raise UnsupportedExpression(f"cannot evaluate {expr} ({type(expr).__name__}) exactly")


def condition_holds(condition: Any, values: Mapping[sympy.Symbol, int]) -> bool:
    """Whether a condition is true at integer sizes, decided exactly.

    Raises :class:`UndefinedValue` where an expression it needs divides by 0.
    """
    if condition is True or condition is sympy.true:
        return True
    if condition is False or condition is sympy.false:
        return False
    if isinstance(condition, sympy.And):
        return all(condition_holds(c, values) for c in condition.args)
    if isinstance(condition, sympy.Or):
        return any(condition_holds(c, values) for c in condition.args)
    if isinstance(condition, sympy.Not):
        return not condition_holds(condition.args[0], values)
    if isinstance(condition, sympy.Implies):
        return not condition_holds(condition.args[0], values) or condition_holds(condition.args[1], values)
    if isinstance(condition, sympy.core.relational.Relational) and condition.rel_op in _COMPARE:
        lhs, rhs = (value_of(side, values) for side in condition.args)
        return bool(_COMPARE[condition.rel_op](lhs, rhs))
    raise UnsupportedExpression(f"{condition} is not a condition the prover reads")


def assumptions_hold(assumptions: Sequence[sympy.Basic], values: Mapping[sympy.Symbol, int]) -> bool:
    """Whether every assumption is true at the sizes ``values`` (exactly; one that divides by 0 is not)."""
    try:
        return all(condition_holds(a, values) for a in assumptions)
    except UndefinedValue:
        return False


# ------------------------------------------------------------------ some sizes exist
#: How long the solver may look for sizes satisfying the assumptions (an ``unknown``
#: there makes every verdict under them ``unknown``, never ``proved``).
SIZES_EXIST_TIMEOUT_MS = 5_000


class AssumptionsAdmitNoSizes(LayoutAlgebraError, ValueError):
    """Assumptions that no sizes satisfy (with every size an integer >= 0, as XLA's
    dimensions are: an array may have a dimension of size 0).

    Under them every claim would be "proved" and the proof would mean nothing, so the
    prover refuses them; ``str(err)`` quotes them. The command line exits 2.
    """

    def __init__(
        self, assumptions: Sequence[sympy.Basic], text: str | None = None, shapes: Sequence[object] = ()
    ) -> None:
        self.assumptions = tuple(assumptions)
        self.text = condition_text(self.assumptions) if text is None else text
        self.shapes = tuple(str(s) for s in shapes)
        where = f" of {', '.join(self.shapes)}" if self.shapes else ""
        every = "every size and every dimension" if self.shapes else "every size"
        if not self.assumptions:
            message = f"no sizes make every dimension of {', '.join(self.shapes)} an integer >= 0"
            super().__init__(f"{message}: a proof about it would be vacuous")
            return
        super().__init__(
            f"the assumptions {self.text!r} admit no sizes{where} "
            f"({every} is an integer >= 0): a proof under them would be vacuous"
        )


def condition_text(assumptions: Sequence[sympy.Basic] | sympy.Basic) -> str:
    """Parsed assumptions (or one condition) as text in this module's grammar.

    >>> condition_text(parse_assumptions("N == 1 and N % 4 != 2, M >= N or M < 3"))
    'N == 1 and N % 4 != 2 and (M >= N or M < 3)'
    """
    if isinstance(assumptions, (sympy.Basic, bool)):
        return _text(assumptions, top=True)
    return " and ".join(_text(a, top=len(assumptions) == 1) for a in assumptions) or "True"


class _TermPrinter(StrPrinter):
    """SymPy's text, with ``a % b`` for ``Mod(a, b)`` (the grammar reads both)."""

    def _print_Mod(self, expr: sympy.Mod) -> str:
        a, b = (self.parenthesize(x, PRECEDENCE["Mul"], strict=True) for x in expr.args)
        return f"{a} % {b}"


_PRINTER = _TermPrinter()


def _text(condition: Any, top: bool = False) -> str:
    if condition is True or condition is sympy.true:
        return "True"
    if condition is False or condition is sympy.false:
        return "False"
    if isinstance(condition, sympy.core.relational.Relational) and condition.rel_op in _COMPARE:
        return f"{_PRINTER.doprint(condition.lhs)} {condition.rel_op} {_PRINTER.doprint(condition.rhs)}"
    if isinstance(condition, sympy.Not):
        return f"not ({_text(condition.args[0], top=True)})"
    if isinstance(condition, (sympy.And, sympy.Or)):
        word = " and " if isinstance(condition, sympy.And) else " or "
        inner = word.join(_text(c) for c in condition.args)
        return inner if top else f"({inner})"
    return str(condition)


def sizes_exist(
    assumptions: Sequence[sympy.Basic],
    *,
    indices: Iterable[sympy.Symbol] = (),
    declared_signs: bool = False,
    facts: Sequence[sympy.Basic] = (),
) -> str | None:
    """Check that some sizes satisfy ``assumptions``; every prover path calls this before it may say ``proved``.

    The implicit facts are the prover's own domain: every size is an integer >= 0, as
    XLA's dimensions are (a zero-size array is valid HLO, so ``N == 0`` is admitted and
    every claim "for all sizes" includes it); ``indices``, bounded index symbols, are
    integers >= 0 too; with ``declared_signs`` a SymPy symbol means what it is declared
    (positive: >= 1, nonnegative: >= 0, only an integer: any sign), as
    :func:`~layout_algebra.prove.holds` reads it. ``facts`` are further implicit
    conditions (a shape's dimension formulas are whole sizes >= 0: ``N/8`` needs
    ``N % 8 == 0``), checked with the assumptions but not quoted.
    Returns ``None`` when sizes exist (the solver's witness re-checked exactly), raises
    :class:`AssumptionsAdmitNoSizes` when none do (Z3: unsat), and returns the reason
    when this cannot be decided: a verdict under such assumptions is ``unknown``.
    Cached per assumption set.

    >>> sizes_exist(parse_assumptions("N % 8 == 0 and M == 2*N")) is None
    True
    >>> sizes_exist(parse_assumptions("N == 1 and N == 2"))
    Traceback (most recent call last):
    ...
    layout_algebra.prove.assumptions.AssumptionsAdmitNoSizes: the assumptions 'N == 1 and N == 2' admit no sizes (every size is an integer >= 0): a proof under them would be vacuous
    >>> sizes_exist(parse_assumptions("N < 0"))
    Traceback (most recent call last):
    ...
    layout_algebra.prove.assumptions.AssumptionsAdmitNoSizes: the assumptions 'N < 0' admit no sizes (every size is an integer >= 0): a proof under them would be vacuous
    >>> sizes_exist(parse_assumptions("N == 0")) is None  # a zero-size dimension: valid in XLA
    True
    """
    items = tuple(a for a in assumptions if a is not sympy.true and a is not True)
    if not items and not facts:
        return None
    status, reason = _sizes_exist((*facts, *items), frozenset(indices), declared_signs)
    if status == "none":
        raise AssumptionsAdmitNoSizes(items)
    return reason


@functools.lru_cache(maxsize=1024)
def _sizes_exist(
    assumptions: tuple[sympy.Basic, ...], indices: frozenset[sympy.Symbol], declared_signs: bool
) -> tuple[str, str | None]:
    """``("some", None)``, ``("none", None)`` or ``("unknown", reason)``."""
    symbols = sorted(set().union(*(a.free_symbols for a in assumptions)), key=str)
    if _small_witness(assumptions, symbols, indices, declared_signs, _LIKELY_SIZES):
        return "some", None  # most assumptions hold at a small or round size: no solver call
    ar = IntArithmetic(declared_signs=declared_signs)
    try:
        terms = assumption_terms(assumptions, ar)
        for s in symbols:  # each symbol's domain (>= 0, or as declared) is in ``ar.side``
            ar.symbol(s)
    except UnsupportedExpression as err:
        return "unknown", f"cannot tell whether any sizes satisfy the assumptions: {err}"
    solver = z3.Solver()
    solver.set("timeout", SIZES_EXIST_TIMEOUT_MS)
    solver.set("random_seed", 0)
    solver.add(*terms, *ar.side)
    answer = solver.check()
    if answer == z3.unsat:
        return "none", None
    if answer == z3.sat:
        model = solver.model()
        values = {s: model.eval(v, model_completion=True).as_long() for s, v in ar.symbols.items()}
        if assumptions_hold(assumptions, values):
            return "some", None
        why = f"the solver's sizes {_shown(values)} do not satisfy them when evaluated"
    else:
        why = f"the solver gave up ({solver.reason_unknown()})"
    if _small_witness(assumptions, symbols, indices, declared_signs):
        return "some", None
    shown = condition_text(assumptions)
    return "unknown", f"cannot tell whether any sizes satisfy the assumptions {shown!r}: {why}"


#: Sizes tried before the solver (for at most two symbols): small and round ones.
_LIKELY_SIZES = (0, 1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64, 128, 256, 1024)


def _small_witness(
    assumptions: tuple[sympy.Basic, ...],
    symbols: Sequence[sympy.Symbol],
    indices: frozenset[sympy.Symbol],
    declared_signs: bool,
    likely: tuple[int, ...] = (),
) -> bool:
    """Whether small sizes satisfy the assumptions, evaluated exactly: each symbol from its
    least value (:func:`_least_value`) to 16, or the ``likely`` values (at most two symbols)."""
    if len(symbols) > (2 if likely else 3):
        return False
    ranges = [
        [v for v in likely if v >= _least_value(s, indices, declared_signs)]
        or range(_least_value(s, indices, declared_signs), 17)
        for s in symbols
    ]
    return any(
        assumptions_hold(assumptions, dict(zip(symbols, values, strict=True)))
        for values in itertools.product(*ranges)
    )


def _least_value(s: sympy.Symbol, indices: frozenset[sympy.Symbol], declared_signs: bool) -> int:
    """The least value tried for ``s``: 0 for a size or an index (XLA allows zero-size
    dimensions); with ``declared_signs``, 1 for a symbol declared positive and -16 for one
    declared only an integer (the solver, not this search, covers the rest)."""
    if s in indices or not declared_signs:
        return 0
    return 1 if s.is_positive else 0 if s.is_nonnegative else -16


def _shown(values: Mapping[sympy.Symbol, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(values.items(), key=lambda kv: str(kv[0])))
