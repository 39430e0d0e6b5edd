"""Assumptions and claims about sizes: a small grammar of conditions, read as data, never run.

An assumption such as ``"N % 8 == 0 or N == 3"`` (and a claim given to
:func:`~layout_algebra.prove.holds`) is text written in a tiny language of integer
conditions. It is read by Python's own parser (``ast.parse``: parsing only, nothing is
compiled or executed) and then walked against a whitelist; every accepted piece becomes a
SymPy object built directly (``sympy.Mod``, ``sympy.floor``, ``sympy.Or``, ...). Anything
outside the whitelist is an :class:`AssumptionError` that quotes the text with a caret.

=====================================  =================================================
accepted                               meaning
=====================================  =================================================
``12``, ``N``, ``tile_rows``           integer literals; names are dimension sizes (the
                                       same symbols as in ``f32[N,M]``: integers >= 0)
``a + b``, ``a - b``, ``a * b``, ``-a``  integer arithmetic
``a ** 3``                             a power with a literal exponent 0..64
``a // b``, ``a % b``                  floor division and its remainder (Python's)
``floor(a / b)``, ``ceiling(a / b)``   ``/`` is exact division, only inside ``floor``,
                                       ``ceiling`` (alias ``ceil``)
``min(a, b, ...)``, ``max(a, b, ...)``  smallest and largest
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
layout_algebra.prove.assumptions.AssumptionError: cannot parse assumption: calling "__import__('os').system" is not allowed (only ceil, ceiling, floor, max, min may be called)
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

import ast
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any, TypeAlias

import sympy
import z3

from layout_algebra.model.symbols import dim_symbol
from layout_algebra.model.syntax import ParseError
from layout_algebra.prove.encode import IntArithmetic, UnsupportedExpression, sympy_to_z3

__all__ = [
    "AssumptionError",
    "Assumptions",
    "UndefinedValue",
    "assumption_terms",
    "assumptions_hold",
    "condition_holds",
    "condition_term",
    "divisor_conditions",
    "parse_assumptions",
    "parse_condition",
    "parse_term",
    "read_claim",
    "value_of",
]

Assumptions: TypeAlias = str | sympy.Basic | bool | Iterable[str | sympy.Basic | bool] | None

#: Longest text read (a longer one is an error, not a slow parse).
MAX_TEXT_LENGTH = 10_000
#: Deepest nesting of operators read.
MAX_DEPTH = 100
#: Largest literal exponent of ``**`` and largest constant (in bits) built by folding.
MAX_EXPONENT = 64
MAX_CONSTANT_BITS = 4096

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_FUNCTIONS: dict[str, Callable[..., sympy.Expr]] = {
    "floor": sympy.floor,
    "ceiling": sympy.ceiling,
    "ceil": sympy.ceiling,
    "min": sympy.Min,
    "max": sympy.Max,
}
_ROUNDING = ("floor", "ceiling", "ceil")
_COMPARISONS: dict[type, str] = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
}
_RELATIONS: dict[str, Callable[..., sympy.Basic]] = {
    "==": sympy.Eq,
    "!=": sympy.Ne,
    "<": sympy.Lt,
    "<=": sympy.Le,
    ">": sympy.Gt,
    ">=": sympy.Ge,
}
_DESCRIPTIONS: dict[type, str] = {
    ast.Attribute: "an attribute",
    ast.Subscript: "a subscript",
    ast.Lambda: "a lambda",
    ast.JoinedStr: "an f-string",
    ast.List: "a list",
    ast.Dict: "a dict",
    ast.Set: "a set",
    ast.ListComp: "a comprehension",
    ast.SetComp: "a comprehension",
    ast.DictComp: "a comprehension",
    ast.GeneratorExp: "a generator",
    ast.IfExp: "a conditional expression",
    ast.NamedExpr: "an assignment expression",
    ast.Starred: "a starred expression",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
    ast.Slice: "a slice",
}


class AssumptionError(ParseError):
    """Assumption or claim text outside the grammar; ``str(err)`` quotes it with a caret."""


class UndefinedValue(ArithmeticError):
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


class _Reader:
    """Walks the syntax tree of one text against the whitelist, building SymPy objects."""

    def __init__(self, text: str, what: str) -> None:
        self.text = text.strip()
        self.what = what
        self.divisors: list[sympy.Expr] = []
        self._line_starts = [0]
        for line in self.text.splitlines(keepends=True):
            self._line_starts.append(self._line_starts[-1] + len(line))

    # -- errors with a caret under the node
    def error(self, reason: str, node: ast.AST | None = None, position: int | None = None) -> AssumptionError:
        if isinstance(node, (ast.expr, ast.keyword)):
            position = self._offset(node.lineno, node.col_offset)
        return AssumptionError(reason, self.text, min(position or 0, len(self.text)), self.what)

    def _offset(self, lineno: int, col_offset: int) -> int:
        """ast columns count UTF-8 bytes; the caret counts characters."""
        start = self._line_starts[min(lineno - 1, len(self._line_starts) - 1)]
        line = self.text[start:]
        return start + len(line.encode()[:col_offset].decode(errors="ignore"))

    def piece(self, node: ast.AST) -> str:
        segment = ast.get_source_segment(self.text, node) or type(node).__name__
        return segment if len(segment) <= 40 else segment[:37] + "..."

    def operator(self, node: ast.BinOp) -> int:
        """The position of a binary node's operator (the caret goes under it)."""
        start = self._offset(node.left.end_lineno or 1, node.left.end_col_offset or 0)
        end = self._offset(node.right.lineno, node.right.col_offset)
        gap = self.text[start:end]
        symbol = {ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**"}.get(type(node.op))
        found = gap.find(symbol) if symbol else -1
        if found < 0:
            found = len(gap) - len(gap.lstrip(" ()\t\n"))
        return start + found

    # -- the walk
    def read(self) -> list[sympy.Basic]:
        tree = self.syntax_tree()
        try:
            return self.conjuncts(tree.body)
        except RecursionError:
            raise self.error(f"nested too deeply (at most {MAX_DEPTH} levels)", position=0) from None

    def syntax_tree(self) -> ast.Expression:
        """Python's parse of the text (parsing only: nothing is compiled or run)."""
        if not self.text:
            raise self.error(f"empty {self.what}", position=0)
        if len(self.text) > MAX_TEXT_LENGTH:
            raise self.error(f"longer than {MAX_TEXT_LENGTH} characters", position=0)
        try:
            return ast.parse(self.text, mode="eval")
        except SyntaxError as err:
            hint = " (equality is '==')" if re.search(r"(?<![=!<>])=(?!=)", self.text) else ""
            if err.lineno and err.offset:
                position = self._offset(err.lineno, err.offset - 1)
            else:  # the text ended too early
                position = len(self.text)
            example = (
                "an expression like 'N * 8 + 1'"
                if self.what == "expression"
                else "a comparison like 'N % 8 == 0' or 'N >= 1'"
            )
            reason = f"not {example} (cannot read it: {err.msg}{hint})"
            raise self.error(reason, position=position) from None
        except (RecursionError, MemoryError, ValueError):
            raise self.error(
                f"nested too deeply or too large (at most {MAX_DEPTH} levels)", position=0
            ) from None

    def read_term(self) -> sympy.Expr:
        """The whole text as one integer expression (same checks as :meth:`read`)."""
        tree = self.syntax_tree()
        try:
            return self.term(tree.body, 1)
        except RecursionError:
            raise self.error(f"nested too deeply (at most {MAX_DEPTH} levels)", position=0) from None

    def conjuncts(self, node: ast.expr) -> list[sympy.Basic]:
        """Top level: ``A, B``, ``A and B`` and chained comparisons split into their parts."""
        if isinstance(node, ast.Tuple):
            if not node.elts:
                raise self.error(f"empty {self.what}", node)
            return [part for element in node.elts for part in self.conjuncts(element)]
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            return [part for value in node.values for part in self.conjuncts(value)]
        if isinstance(node, ast.Compare):
            return self.relations(node, 1)
        return [self.condition(node, 1)]

    def condition(self, node: ast.expr, depth: int) -> sympy.Basic:
        """A node that must be a condition."""
        self.check_depth(node, depth)
        if isinstance(node, ast.BoolOp):
            parts = [self.condition(value, depth + 1) for value in node.values]
            return sympy.And(*parts) if isinstance(node.op, ast.And) else sympy.Or(*parts)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return sympy.Not(self.condition(node.operand, depth + 1))
        if isinstance(node, ast.Compare):
            relations = self.relations(node, depth)
            return relations[0] if len(relations) == 1 else sympy.And(*relations)
        if isinstance(node, ast.Constant) and isinstance(node.value, bool):
            return sympy.true if node.value else sympy.false
        if isinstance(node, ast.Tuple):
            raise self.error("a ',' list is allowed only at the top level (use 'and')", node)
        if self.is_term(node):
            self.term(node, depth)  # a bad piece inside is reported first
            shown = self.piece(node)
            raise self.error(f"{shown!r} is a number, not a comparison (e.g. '{shown} >= 1')", node)
        raise self.refuse(node)

    def relations(self, node: ast.Compare, depth: int) -> list[sympy.Basic]:
        self.check_depth(node, depth)
        terms = [self.term(node.left, depth + 1)]
        out = []
        for op, right in zip(node.ops, node.comparators, strict=True):
            symbol = _COMPARISONS.get(type(op))
            if symbol is None:
                word = {ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}.get(
                    type(op), "?"
                )
                raise self.error(f"'{word}' is not a comparison of sizes (use == != < <= > >=)", right)
            terms.append(self.term(right, depth + 1))
            out.append(_RELATIONS[symbol](terms[-2], terms[-1], evaluate=False))
        return out

    def is_term(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Constant):
            return type(node.value) is int
        if isinstance(node, ast.UnaryOp):
            return not isinstance(node.op, ast.Not)
        return isinstance(node, (ast.BinOp, ast.Name, ast.Call))

    def term(self, node: ast.expr, depth: int, exact: bool = False) -> sympy.Expr:
        """A node that must be an integer expression (``exact``: inside floor/ceiling, '/' allowed)."""
        self.check_depth(node, depth)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return sympy.Integer(node.value)
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            value = self.term(node.operand, depth + 1, exact)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp):
            return self.binary(node, depth, exact)
        if isinstance(node, ast.Call):
            return self.call(node, depth)
        if isinstance(node, (ast.Compare, ast.BoolOp)) or (
            isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)
        ):
            raise self.error(f"{self.piece(node)!r} is a condition, not a number", node)
        if isinstance(node, ast.Constant) and isinstance(node.value, bool):
            raise self.error(f"{node.value} is a condition, not a number", node)
        raise self.refuse(node)

    def binary(self, node: ast.BinOp, depth: int, exact: bool) -> sympy.Expr:
        op = node.op
        if isinstance(op, ast.Pow):
            return self.power(node, depth, exact)
        if not isinstance(op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.Div)):
            symbol = {
                ast.MatMult: "@",
                ast.LShift: "<<",
                ast.RShift: ">>",
                ast.BitOr: "|",
                ast.BitXor: "^",
                ast.BitAnd: "&",
            }.get(type(op), type(op).__name__)
            hint = " (use 'and' / 'or' for logic)" if symbol in ("|", "&") else ""
            raise self.error(f"the operator '{symbol}' is not allowed{hint}", position=self.operator(node))
        if isinstance(op, ast.Div) and not exact:
            raise self.error(
                "'/' is exact division, allowed only inside floor(...) or ceiling(...); use '//' for floor division",
                position=self.operator(node),
            )
        left = self.term(node.left, depth + 1, exact)
        right = self.term(node.right, depth + 1, exact)
        if isinstance(op, ast.Add):
            return self.bounded(left + right, node)
        if isinstance(op, ast.Sub):
            return self.bounded(left - right, node)
        if isinstance(op, ast.Mult):
            return self.bounded(left * right, node)
        self.divisor(right, node.right)
        if isinstance(op, ast.Div):
            return left / right
        if isinstance(op, ast.FloorDiv):
            if left.is_Integer and right.is_Integer:
                return sympy.Integer(int(left) // int(right))
            return sympy.floor(left / right)
        if left.is_Integer and right.is_Integer:
            return sympy.Integer(int(left) % int(right))
        # unevaluated: SymPy 1.14 rewrites remainders of products wrongly (Mod(2*Mod(x, 5), 3))
        return sympy.Mod(left, right, evaluate=False)

    def divisor(self, value: sympy.Expr, node: ast.expr) -> None:
        if value.is_Number:
            if not (value.is_Integer and value > 0):
                raise self.error(f"division by {value} (a literal divisor must be a positive integer)", node)
        elif value not in self.divisors:
            self.divisors.append(value)

    def power(self, node: ast.BinOp, depth: int, exact: bool) -> sympy.Expr:
        exponent = node.right
        if not (isinstance(exponent, ast.Constant) and type(exponent.value) is int):
            raise self.error(f"the exponent of '**' must be an integer literal 0..{MAX_EXPONENT}", exponent)
        if not 0 <= exponent.value <= MAX_EXPONENT:
            raise self.error(f"the exponent {exponent.value} is outside 0..{MAX_EXPONENT}", exponent)
        base = self.term(node.left, depth + 1, exact)
        if base.is_Number and abs(base) > 1:
            bits = int(abs(sympy.Integer(sympy.ceiling(abs(base))))).bit_length()
            if bits * exponent.value > MAX_CONSTANT_BITS:
                raise self.error(f"the constant is too large (more than {MAX_CONSTANT_BITS} bits)", node)
        return sympy.Pow(base, exponent.value)

    def bounded(self, value: sympy.Expr, node: ast.expr) -> sympy.Expr:
        if value.is_Integer and int(value).bit_length() > MAX_CONSTANT_BITS:
            raise self.error(f"the constant is too large (more than {MAX_CONSTANT_BITS} bits)", node)
        return value

    def call(self, node: ast.Call, depth: int) -> sympy.Expr:
        func = node.func
        if not isinstance(func, ast.Name) or func.id not in _FUNCTIONS:
            shown = func.id if isinstance(func, ast.Name) else self.piece(func)
            raise self.error(
                f"calling {shown!r} is not allowed (only {', '.join(sorted(_FUNCTIONS))} may be called)", node
            )
        if node.keywords:
            raise self.error(f"{func.id}() takes no keyword arguments", node.keywords[0].value)
        rounding = func.id in _ROUNDING
        if rounding and len(node.args) != 1:
            raise self.error(f"{func.id}() takes exactly one argument, got {len(node.args)}", node)
        if not rounding and not node.args:
            raise self.error(f"{func.id}() needs at least one argument", node)
        args = [self.term(arg, depth + 1, exact=rounding) for arg in node.args]
        if rounding:
            numerator, denominator = sympy.fraction(sympy.together(args[0]))
            if numerator.is_Integer and denominator.is_Integer:
                value = Fraction(int(numerator), int(denominator))
                return sympy.Integer(math.floor(value) if func.id == "floor" else math.ceil(value))
        return _FUNCTIONS[func.id](*args)

    def name(self, node: ast.Name) -> sympy.Symbol:
        name = node.id
        if name in _FUNCTIONS:
            raise self.error(f"{name!r} is a function; call it, as in '{name}(N / 8)'", node)
        if not _NAME.match(name) or name.startswith("__"):
            raise self.error(
                f"{name!r} is not a size name (letters, digits and '_', not starting '__')", node
            )
        return dim_symbol(name)

    def check_depth(self, node: ast.expr, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise self.error(f"nested too deeply (at most {MAX_DEPTH} levels)", node)

    def refuse(self, node: ast.expr) -> AssumptionError:
        if isinstance(node, ast.Constant):
            kind = type(node.value).__name__
            hint = " (sizes are integers)" if isinstance(node.value, float) else ""
            return self.error(f"{self.piece(node)!r} (a {kind}) is not allowed{hint}", node)
        kind = _DESCRIPTIONS.get(type(node), type(node).__name__)
        shown = self.piece(node)
        if isinstance(node, ast.Attribute):
            shown = "." + node.attr
        return self.error(
            f"{shown!r} ({kind}) is not allowed; an {self.what} compares integer expressions of sizes", node
        )


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


def assumption_terms(assumptions: Sequence[sympy.Basic], ar: IntArithmetic) -> list[Any]:
    """Z3 terms of parsed assumptions (see :func:`parse_assumptions`); ``true`` is left out."""
    return [condition_term(a, ar) for a in assumptions if a is not sympy.true and a is not True]


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
            raise ValueError(f"no value given for {expr}")
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
