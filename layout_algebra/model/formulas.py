"""Size formulas: the one grammar of integer arithmetic over sizes, read as data, never run.

A *formula* is integer arithmetic over literals and size names. It appears in two places
and means the same in both: a symbolic dimension of shape text (``f32[N/8,8,128]``, read
by :mod:`layout_algebra.model.syntax`) and a term of an assumption or claim
(``"ceiling(N/128)*128 >= N"``, read by :mod:`layout_algebra.prove.assumptions`, which
adds comparisons and logic on top). Both call the :class:`FormulaReader` here; each
gives it the text, where to start, and how to raise an error (``ParseError`` with a
caret into the whole shape text, or ``AssumptionError``)::

    sum      ::= product (('+' | '-') product)*
    product  ::= unary (('*' | '/' | '//' | '%') unary)*
    unary    ::= ('-' | '+') unary | power
    power    ::= atom ['**' int]                  # a literal exponent 0..64
    atom     ::= int | name | '(' sum ')' | function '(' sum (',' sum)* ')'
    function ::= floor | ceiling | ceil | min | max | Min | Max | Mod

Precedence is Python's (``-2**2`` is ``-(2**2)``; ``*``, ``/``, ``//`` and ``%`` bind
alike, left to right). Integers are decimal; names are ASCII letters, digits and ``_``,
not starting ``__``. One meaning each:

* ``a / b`` is exact division (SymPy's ``a/b``, a whole number only where ``b`` divides
  ``a``). Shape text may write it anywhere (``N/8``); an assumption or claim, which
  compares integers, only inside ``floor(...)`` or ``ceiling(...)`` (``allow_division``).
* ``a // b`` is ``floor(a/b)`` and ``a % b`` its remainder, ``Mod(a, b)`` (Python's).
* A literal divisor must be a positive integer; every divisor that is an expression of
  sizes is recorded in ``divisors`` (it must be at least 1 for the text to mean anything).
* ``min``/``max`` (SymPy prints ``Min``/``Max``) and ``Mod(a, b)`` exist so that SymPy's
  printing of every formula reads back as the same formula.

>>> parse_formula("ceiling(N / 128) * 128")
128*ceiling(N/128)
>>> parse_formula("(N + 7) // 8 - N % 8")
-Mod(N, 8) + floor(N/8 + 7/8)
>>> parse_formula("N ** 99")
Traceback (most recent call last):
...
layout_algebra.model.formulas.FormulaError: the exponent 99 is larger than 64 in 'N ** 99' at 5
"""

from __future__ import annotations

import keyword
import math
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any, NoReturn

import sympy

from layout_algebra.model.errors import LayoutAlgebraError
from layout_algebra.model.symbols import dim_symbol

__all__ = [
    "FUNCTIONS",
    "MAX_CONSTANT_BITS",
    "MAX_EXPONENT",
    "MAX_FORMULA_DEPTH",
    "MAX_FORMULA_LENGTH",
    "FormulaError",
    "FormulaReader",
    "parse_formula",
]

#: Largest literal exponent of ``**``.
MAX_EXPONENT = 64
#: Largest constant (in bits) written or built by folding literals.
MAX_CONSTANT_BITS = 4096
#: Deepest nesting of parentheses, calls and signs.
MAX_FORMULA_DEPTH = 100
#: Longest formula read, in characters (a longer one is an error, not a slow parse).
MAX_FORMULA_LENGTH = 10_000

#: The functions a formula may call, by the names it may use.
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "floor": sympy.floor,
    "ceiling": sympy.ceiling,
    "ceil": sympy.ceiling,
    "min": sympy.Min,
    "max": sympy.Max,
    "Min": sympy.Min,
    "Max": sympy.Max,
    "Mod": None,  # type: ignore[dict-item]  # built by FormulaReader.remainder
}
_ROUNDING = ("floor", "ceiling", "ceil")
#: Python words that are never size names (the condition layer reads some of them).
KEYWORDS = frozenset(keyword.kwlist)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DIGITS = re.compile(r"[0-9]+")
_WORD_TAIL = re.compile(r"[0-9A-Za-z_.]*")
_SYMBOLS = frozenset(("**", "//", "==", "!=", "<=", ">=", "<<", ">>"))
_NOT_ALLOWED = {"|": "|", "&": "&", "^": "^", "@": "@", "<<": "<<", ">>": ">>"}
_LARGEST_DIGITS = len(str(2**MAX_CONSTANT_BITS))


class FormulaError(LayoutAlgebraError, ValueError):
    """A formula outside the grammar (what the base reader raises; callers raise their own)."""

    def __init__(self, reason: str, text: str, position: int) -> None:
        self.reason, self.text, self.position = reason, text, position
        super().__init__(f"{reason} in {text!r} at {position}")


class Token:
    """One token: ``kind`` is 'int', 'name', 'op', 'bad' or 'end'; ``start``/``end`` index the text."""

    __slots__ = ("end", "kind", "start", "text")

    def __init__(self, kind: str, text: str, start: int, end: int) -> None:
        self.kind, self.text, self.start, self.end = kind, text, start, end

    def __repr__(self) -> str:
        return f"Token({self.kind}, {self.text!r}, {self.start})"


class ConditionInTerm(LayoutAlgebraError):
    """A comparison or logic word where a number belongs (the condition layer may backtrack)."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class FormulaReader:
    """A recursive-descent reader of formulas from ``text``, starting at ``pos``.

    It stops before the first token that cannot continue the formula (``,``, ``]``, a
    comparison, ...), leaving ``pos`` there. Subclasses say how errors are raised
    (:meth:`fail`) and what counts as space between tokens (:meth:`skip_space`).
    """

    #: What a missing operand is missing from (for error messages).
    expecting = "a formula"

    def __init__(self, text: str, pos: int = 0, *, allow_division: bool = True) -> None:
        self.text = text
        self.pos = pos
        self.allow_division = allow_division
        self.depth = 0
        self.divisors: list[sympy.Expr] = []
        self.has_name = False
        self._peeked: tuple[int, Token] | None = None

    # ------------------------------------------------------------ overridable
    def fail(self, reason: str, position: int) -> NoReturn:
        """Raise the caller's error for ``reason`` at ``position`` of ``text``."""
        raise FormulaError(reason, self.text, position)

    def skip_space(self, pos: int) -> int:
        """The position of the next token at or after ``pos`` (spaces, tabs, newlines)."""
        text = self.text
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        return pos

    def missing_operand(self, found: str) -> str:
        return f"expected a number, a name or '(' in {self.expecting}, found {found}"

    # ---------------------------------------------------------------- tokens
    def peek(self) -> Token:
        """The next token (not consumed)."""
        if self._peeked is not None and self._peeked[0] == self.pos:
            return self._peeked[1]
        token = self.scan()
        self._peeked = (self.pos, token)
        return token

    def scan(self) -> Token:
        """The token at ``pos`` (after space)."""
        text = self.text
        start = self.skip_space(self.pos)
        if start >= len(text):
            return Token("end", "", start, start)
        c = text[start]
        if c.isascii() and c.isdigit():
            end = _DIGITS.match(text, start).end()  # type: ignore[union-attr]
            tail = _WORD_TAIL.match(text, end).end()  # type: ignore[union-attr]
            return Token("int" if tail == end else "bad", text[start:tail], start, tail)
        if c.isascii() and (c.isalpha() or c == "_"):
            end = _NAME.match(text, start).end()  # type: ignore[union-attr]
            if end < len(text) and text[end].isalnum() and not text[end].isascii():
                return Token("bad", self.word_at(start), start, start + len(self.word_at(start)))
            return Token("name", text[start:end], start, end)
        if c.isalpha() or c == "_":
            word = self.word_at(start)
            return Token("bad", word, start, start + len(word))
        pair = text[start : start + 2]
        if pair in _SYMBOLS:
            return Token("op", pair, start, start + 2)
        return Token("op", c, start, start + 1)

    def word_at(self, start: int) -> str:
        end = start
        while end < len(self.text) and (self.text[end].isalnum() or self.text[end] == "_"):
            end += 1
        return self.text[start:end]

    def take(self) -> Token:
        token = self.peek()
        self.pos = token.end
        return token

    def at(self, *ops: str) -> Token | None:
        """The next token if it is one of the operators ``ops`` (consumed), else None."""
        token = self.peek()
        if token.kind == "op" and token.text in ops:
            self.pos = token.end
            return token
        return None

    def describe(self, token: Token) -> str:
        return "the end of the input" if token.kind == "end" else repr(token.text)

    def expect(self, op: str, context: str) -> None:
        token = self.peek()
        if token.kind == "op" and token.text == op:
            self.pos = token.end
            return
        if (token.kind == "op" and token.text in ("==", "!=", "<", "<=", ">", ">=")) or token.text in (
            "and",
            "or",
        ):
            self.fail_condition(token)
        self.fail(f"expected '{op}' {context}, found {self.describe(token)}", token.start)

    def fail_condition(self, token: Token) -> NoReturn:
        """A comparison inside '(...)' of a formula: name the parenthesized piece."""
        start = self.text.rfind("(", 0, token.start) + 1
        depth, end = 0, start
        while end < len(self.text):
            ch = self.text[end]
            if ch == "(":
                depth += 1
            elif ch == ")":
                if depth == 0:
                    break
                depth -= 1
            end += 1
        piece = self.text[start:end].strip()
        start = self.skip_space(start)
        try:
            self.fail(f"{piece!r} is a condition, not a number", start)
        except Exception as error:
            raise ConditionInTerm(error) from None

    def nested(self, read: Callable[[], sympy.Expr], position: int) -> sympy.Expr:
        self.depth += 1
        if self.depth > MAX_FORMULA_DEPTH:
            self.fail(f"nested too deeply (at most {MAX_FORMULA_DEPTH} levels)", position)
        try:
            return read()
        finally:
            self.depth -= 1

    # --------------------------------------------------------------- grammar
    def formula(self, exact: bool = False) -> sympy.Expr:
        """``sum``: the longest formula from ``pos`` (``exact``: inside floor/ceiling)."""
        begin = self.pos
        terms = [self.product(exact)]
        while True:
            token = self.at("+", "-")
            if token is None:
                return terms[0] if len(terms) == 1 else self.bounded(sympy.Add(*terms), begin)
            if token.start - begin > MAX_FORMULA_LENGTH:
                self.fail(f"the formula is longer than {MAX_FORMULA_LENGTH} characters", begin)
            right = self.product(exact)
            terms.append(right if token.text == "+" else -right)

    def product(self, exact: bool) -> sympy.Expr:
        # A run of '*' and '/' is one SymPy product, built at once: built two factors at a
        # time, SymPy would distribute 2*(N + 1) into 2*N + 2 and printing would not read back.
        begin = self.skip_space(self.pos)
        factors = [self.unary(exact)]
        while True:
            token = self.peek()
            op = token.text if token.kind == "op" else ""
            if op in _NOT_ALLOWED:
                hint = " (use 'and' / 'or' for logic)" if op in ("|", "&") else ""
                self.fail(f"the operator '{op}' is not allowed{hint}", token.start)
            if op == "**":
                self.fail("'**' takes an integer exponent after a name, a number or ')'", token.start)
            if op not in ("*", "/", "//", "%"):
                return factors[0] if len(factors) == 1 else sympy.Mul(*factors)
            if op == "/" and not (exact or self.allow_division):
                self.fail(
                    "'/' is exact division, allowed only inside floor(...) or ceiling(...); "
                    "use '//' for floor division",
                    token.start,
                )
            if token.start - begin > MAX_FORMULA_LENGTH:
                self.fail(f"the formula is longer than {MAX_FORMULA_LENGTH} characters", begin)
            self.pos = token.end
            right_at = self.skip_space(self.pos)
            right = self.unary(exact)
            if op == "*":
                factors.append(right)
                if right.is_Integer and factors[0].is_Integer and len(factors) == 2:
                    factors = [self.bounded(factors[0] * right, token.start)]
                elif right.is_Number and any(f.is_Number for f in factors[:-1]):
                    numbers = [f for f in factors if f.is_Number]
                    rest = [f for f in factors if not f.is_Number]
                    factors = [self.bounded(sympy.Mul(*numbers), token.start), *rest]
                continue
            self.divisor(right, right_at)
            if op == "/":
                factors.append(sympy.Integer(1) / right)
                continue
            value = factors[0] if len(factors) == 1 else sympy.Mul(*factors)
            factors = [self.quotient(value, right, op)]

    def unary(self, exact: bool) -> sympy.Expr:
        token = self.at("-", "+")
        if token is None:
            return self.power(exact)
        value = self.nested(lambda: self.unary(exact), token.start)
        return -value if token.text == "-" else value

    def power(self, exact: bool) -> sympy.Expr:
        start = self.skip_space(self.pos)
        base = self.atom(exact)
        star = self.at("**")
        if star is None:
            return base
        token = self.peek()
        if token.kind in ("op", "end") and token.text not in ("(", "-", "+"):
            self.fail(
                f"cannot read '**' here: it needs an integer exponent 0..{MAX_EXPONENT}, "
                f"found {self.describe(token)}",
                token.start,
            )
        if token.kind != "int":
            self.fail(f"the exponent of '**' must be an integer literal 0..{MAX_EXPONENT}", token.start)
        self.pos = token.end
        if len(token.text) > 4 or int(token.text) > MAX_EXPONENT:
            self.fail(f"the exponent {token.text} is larger than {MAX_EXPONENT}", token.start)
        exponent = int(token.text)
        if base.is_Number and abs(base) > 1:
            bits = int(sympy.ceiling(abs(base))).bit_length()
            if bits * exponent > MAX_CONSTANT_BITS:
                self.fail(f"the constant is too large (more than {MAX_CONSTANT_BITS} bits)", start)
        return sympy.Pow(base, exponent)

    def atom(self, exact: bool) -> sympy.Expr:
        token = self.peek()
        if token.kind == "int":
            self.pos = token.end
            if len(token.text) > _LARGEST_DIGITS or int(token.text).bit_length() > MAX_CONSTANT_BITS:
                self.fail(f"the constant is too large (more than {MAX_CONSTANT_BITS} bits)", token.start)
            return sympy.Integer(int(token.text))
        if token.kind == "name":
            self.pos = token.end
            return self.name_or_call(token, exact)
        if token.kind == "op" and token.text == "(":
            self.pos = token.end
            value = self.nested(lambda: self.formula(exact), token.start)
            self.expect(")", f"to close '(' in {self.expecting}")
            return value
        self.refuse(token)

    def refuse(self, token: Token) -> NoReturn:
        """The error for a token that cannot start an operand."""
        if token.kind == "bad":
            word = token.text
            if word[0].isdigit():
                if re.fullmatch(r"[0-9]+\.[0-9]*([eE][0-9]+)?|[0-9]+[eE][0-9]+", word):
                    self.fail(f"{word!r} (a float) is not allowed (sizes are integers)", token.start)
                self.fail(f"{word!r} is not an integer (sizes are written in decimal digits)", token.start)
            self.fail(
                f"{word!r} is not a size name (letters, digits and '_', not starting '__')", token.start
            )
        if token.kind == "op" and token.text in ("==", "!=", "<", "<=", ">", ">="):
            self.fail_condition(token)
        if token.kind == "op" and token.text in ("'", '"'):
            self.fail("a string is not allowed; a formula is integer arithmetic of sizes", token.start)
        if token.kind == "op" and token.text in ("[", "."):
            what = "a subscript or list" if token.text == "[" else "an attribute"
            self.fail(
                f"{token.text!r} ({what}) is not allowed; a formula is integer arithmetic of sizes",
                token.start,
            )
        self.fail(self.missing_operand(self.describe(token)), token.start)

    def name_or_call(self, token: Token, exact: bool) -> sympy.Expr:
        name = token.text
        self.has_name = True  # before looking on: in shape text, ' //' after a name divides
        is_call = self.peek().kind == "op" and self.peek().text == "("
        if name in ("True", "False", "not"):
            try:
                self.fail(f"{name!r} is a condition, not a number", token.start)
            except Exception as error:
                raise ConditionInTerm(error) from None
        if name in KEYWORDS:
            what = {"if": " (a conditional expression)", "lambda": " (a lambda)"}.get(name, "")
            self.fail(f"{name!r}{what} is not allowed where a number belongs", token.start)
        if is_call:
            if name not in FUNCTIONS:
                allowed = ", ".join(sorted(FUNCTIONS, key=str.lower))
                self.fail(f"calling {name!r} is not allowed (only {allowed} may be called)", token.start)
            return self.call(token, exact)
        if name in FUNCTIONS:
            self.fail(f"{name!r} is a function; call it, as in '{name}(N / 8)'", token.start)
        if name.startswith("__"):
            self.fail(
                f"{name!r} is not a size name (letters, digits and '_', not starting '__')", token.start
            )
        self.has_name = True
        return dim_symbol(name)

    def call(self, token: Token, exact: bool) -> sympy.Expr:
        name = token.text
        self.expect("(", f"after {name!r}")
        rounding = name in _ROUNDING

        def arguments() -> list[sympy.Expr]:
            args = [self.formula(exact=rounding)]
            while self.at(","):
                args.append(self.formula(exact=rounding))
            return args

        args: list[sympy.Expr] = []
        self.depth += 1
        try:
            if self.depth > MAX_FORMULA_DEPTH:
                self.fail(f"nested too deeply (at most {MAX_FORMULA_DEPTH} levels)", token.start)
            if not (self.peek().kind == "op" and self.peek().text == ")"):
                args = arguments()
        finally:
            self.depth -= 1
        self.expect(")", f"to close '{name}('")
        self.has_name = True
        if rounding:
            if len(args) != 1:
                self.fail(f"{name}() takes exactly one argument, got {len(args)}", token.start)
            return rounded(name, args[0])
        if name == "Mod":
            if len(args) != 2:
                self.fail(f"Mod() takes exactly two arguments, got {len(args)}", token.start)
            self.divisor(args[1], token.start)
            return self.quotient(args[0], args[1], "%")
        if not args:
            self.fail(f"{name}() needs at least one argument", token.start)
        return FUNCTIONS[name](*args)

    # ------------------------------------------------------------- arithmetic
    def divisor(self, value: sympy.Expr, position: int) -> None:
        if value.is_Number:
            if not (value.is_Integer and value > 0):
                self.fail(f"division by {value} (a literal divisor must be a positive integer)", position)
        elif value not in self.divisors:
            self.divisors.append(value)

    def quotient(self, left: sympy.Expr, right: sympy.Expr, op: str) -> sympy.Expr:
        """``left / right`` (exact), ``left // right`` (floor) or ``left % right``."""
        if op == "/":
            return left / right
        if left.is_Integer and right.is_Integer:
            a, b = int(left), int(right)
            return sympy.Integer(a // b if op == "//" else a % b)
        if op == "//":
            return sympy.floor(left / right)
        # unevaluated: SymPy 1.14 rewrites remainders of products wrongly (Mod(2*Mod(x, 5), 3))
        return sympy.Mod(left, right, evaluate=False)

    def bounded(self, value: sympy.Expr, position: int) -> sympy.Expr:
        if value.is_Integer and int(value).bit_length() > MAX_CONSTANT_BITS:
            self.fail(f"the constant is too large (more than {MAX_CONSTANT_BITS} bits)", position)
        return value


def rounded(name: str, argument: sympy.Expr) -> sympy.Expr:
    """``floor`` or ``ceiling`` of ``argument``, exactly when it is a number."""
    numerator, denominator = sympy.fraction(sympy.together(argument))
    if numerator.is_Integer and denominator.is_Integer:
        value = Fraction(int(numerator), int(denominator))
        return sympy.Integer(math.floor(value) if name == "floor" else math.ceil(value))
    return (sympy.floor if name == "floor" else sympy.ceiling)(argument)


def parse_formula(text: str, *, allow_division: bool = True) -> sympy.Expr:
    """One whole formula (a SymPy expression); raises :class:`FormulaError` otherwise.

    >>> parse_formula("min(N, 8) * 2 + Mod(M, 4)")
    Mod(M, 4) + 2*Min(8, N)
    >>> parse_formula("N / 8", allow_division=False)
    Traceback (most recent call last):
    ...
    layout_algebra.model.formulas.FormulaError: '/' is exact division, allowed only inside floor(...) or ceiling(...); use '//' for floor division in 'N / 8' at 2
    """
    reader = FormulaReader(text, allow_division=allow_division)
    try:
        value = reader.formula()
    except ConditionInTerm as wrapped:
        raise wrapped.error from None
    token = reader.peek()
    if token.kind != "end":
        reader.fail(f"unexpected {reader.describe(token)} after the formula", token.start)
    return value
