"""Printers: one expression tree, six languages.

Each printer turns an :class:`~layout_algebra.codegen.expr.Expr` into text with as few
parentheses as the language's precedence allows, but always around a division or remainder
that is an operand of ``*`` (``2*(i0 / 8)``, never ``2*i0 / 8``, which C and Python read
as ``(2*i0) / 8``).

>>> from layout_algebra.codegen.expr import Var, add, floordiv, mod, scale
>>> i0, i1 = Var("i0"), Var("i1")
>>> e = add(scale(floordiv(i0, 8), 1024), scale(mod(i0, 8), 128), mod(i1, 128))
>>> for lang in ("c", "python", "mlir", "latex"):
...     names = {"i0": "d0", "i1": "d1"} if lang == "mlir" else {}
...     print(f"{lang:7}", printer(lang, names).expr(e))
c       1024*(i0 / 8) + 128*(i0 % 8) + i1 % 128
python  1024*(i0 // 8) + 128*(i0 % 8) + i1 % 128
mlir    (d0 floordiv 8) * 1024 + (d0 mod 8) * 128 + d1 mod 128
latex   1024 \\cdot \\left\\lfloor \\frac{i_{0}}{8} \\right\\rfloor + 128 \\cdot \\left(i_{0} \\bmod 8\\right) + i_{1} \\bmod 128

C and Python print a ceiling division as ``(a + (b - 1)) / b``; MLIR has ``ceildiv``.
All C quantities are non-negative, so C's ``/`` and ``%`` (on ``uint64_t``) are floor
division and modulo; the C printer refuses a negative coefficient rather than print code
whose meaning would depend on that.

JavaScript has two integer arithmetics, and the printer speaks both. With ``Number``
(doubles), ``/`` is real division, so a quotient is ``Math.floor(a / b)``; with ``BigInt``,
literals carry an ``n`` and ``/`` truncates, which is floor division on the non-negative
values printed here (the JS printers refuse a negative term, as C's does, so ``%`` never
meets a negative operand and agrees with the mathematical modulo):

>>> printer("js").expr(e)
'1024*Math.floor(i0 / 8) + 128*(i0 % 8) + i1 % 128'
>>> printer("js", bigint=True).expr(e)
'1024n*(i0 / 8n) + 128n*(i0 % 8n) + i1 % 128n'

When is the ``Number`` form exact? For integers ``0 <= a, b < 2**53`` the double
``a / b`` never rounds up to the next integer: if ``q = ⌊a/b⌋ >= 2**E`` the gap from
``a/b`` to ``q + 1`` is at least ``1/b > 2**(E-53)``, half the spacing of doubles there
(and ``1/b > 2**-54`` when ``q = 0``), so ``Math.floor(a / b)`` is ``⌊a/b⌋``; sums,
products and ``%`` of integers below ``2**53`` are exact too. :func:`largest_value`
bounds every value a printed expression computes; code generation picks ``Number`` when
that bound is below ``2**53`` and ``BigInt`` otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from layout_algebra.codegen.expr import (
    Bool,
    CeilDiv,
    Const,
    Expr,
    FloorDiv,
    Ge,
    Mod,
    Or,
    Product,
    Sum,
    Var,
    add,
    ceil_numerator,
    scale,
)
from layout_algebra.codegen.simplify import Bounds
from layout_algebra.model.errors import InvalidArgumentError

__all__ = ["JS_SAFE_LIMIT", "LANGUAGES", "Printer", "largest_value", "latex_name", "printer"]

#: Languages code can be generated in.
LANGUAGES = ("c", "python", "numpy", "mlir", "latex", "js")

#: JavaScript ``Number.MAX_SAFE_INTEGER + 1``: every integer below it is a double, exactly.
JS_SAFE_LIMIT = 2**53

# precedence levels, loosest first
OR, CMP, ADD, MUL, ATOM = 1, 2, 3, 4, 5


class Printer:
    """Shared structure; subclasses say how each operation is spelled."""

    mul = "*"
    floordiv = " / "
    mod = " % "
    ge = " >= "
    or_ = " || "
    true, false = "true", "false"
    coefficient_first = True

    def __init__(self, names: Mapping[str, str] | None = None) -> None:
        self.names = dict(names or {})

    def number(self, value: int) -> str:
        """A non-negative integer literal."""
        return str(value)

    def expr(self, e: Expr) -> str:
        return self._p(e)[0]

    # -- pieces
    def var(self, v: Var) -> str:
        return self.names.get(v.name, v.name)

    def paren(self, text: str) -> str:
        return f"({text})"

    def wrap(self, e: Expr, level: int = ATOM) -> str:
        text, prec = self._p(e)
        return text if prec >= level else self.paren(text)

    def factor(self, e: Expr) -> str:
        """An operand of ``*``: products chain without parentheses, other operators get them."""
        if isinstance(e, Product):
            return self._p(e)[0]
        return self.wrap(e)

    def scaled(self, atom: Expr, c: int) -> str:
        if c == 1:
            return self.wrap(atom, ADD + 1) if isinstance(atom, Sum) else self._p(atom)[0]
        if self.coefficient_first:
            return f"{self.number(c)}{self.mul}{self.factor(atom)}"
        return f"{self.factor(atom)}{self.mul}{self.number(c)}"

    def sum_text(self, e: Sum) -> str:
        positive = [(a, c) for a, c in e.terms if c > 0]
        negative = [(a, -c) for a, c in e.terms if c < 0]
        parts = [self.scaled(a, c) for a, c in positive]
        if e.const > 0:
            parts.append(self.number(e.const))
        text = " + ".join(parts)
        minus = [(self.scaled(a, c), c == 1 and self._p(a)[1] == ATOM) for a, c in negative]
        if e.const < 0:
            minus.append((self.number(-e.const), True))
        for m, atomic in minus:
            # a leading minus binds tighter than any operator: -(x mod 8), never -x mod 8
            text = f"{text} - {m}" if text else f"-{m}" if atomic else f"-{self.paren(m)}"
        return text

    def division(self, e: FloorDiv) -> str:
        return f"{self.wrap(e.num)}{self.floordiv}{self.wrap(e.den)}"

    def ceiling(self, e: CeilDiv) -> str:
        return self.division(FloorDiv(ceil_numerator(e), e.den))

    def remainder(self, e: Mod) -> str:
        return f"{self.wrap(e.num)}{self.mod}{self.wrap(e.den)}"

    def disjunction(self, e: Or) -> str:
        return self.or_.join(self.wrap(a, CMP) for a in e.args)

    def boolean(self, e: Bool) -> str:
        return self.true if e.value else self.false

    def _p(self, e: Expr) -> tuple[str, int]:
        if isinstance(e, Const):
            text = self.number(abs(e.value))
            return (text, ATOM) if e.value >= 0 else (self.paren("-" + text), ATOM)
        if isinstance(e, Var):
            return self.var(e), ATOM
        if isinstance(e, Bool):
            return self.boolean(e), ATOM
        if isinstance(e, Sum):
            single = len(e.terms) == 1 and not e.const and e.terms[0][1] > 0
            return self.sum_text(e), (MUL if single and e.terms[0][1] != 1 else ADD)
        if isinstance(e, Product):
            return self.mul.join(self.factor(f) for f in e.factors), MUL
        if isinstance(e, FloorDiv):
            return self.division(e), MUL
        if isinstance(e, CeilDiv):
            return self.ceiling(e), MUL
        if isinstance(e, Mod):
            return self.remainder(e), MUL
        if isinstance(e, Ge):
            return f"{self.wrap(e.lhs, ADD)}{self.ge}{self.wrap(e.rhs, ADD)}", CMP
        if isinstance(e, Or):
            return self.disjunction(e), OR
        raise TypeError(f"cannot print {e!r}")


class CPrinter(Printer):
    """C11: ``uint64_t`` arithmetic, ``/`` and ``%`` on non-negative values, ``||`` and ``>=``.

    No term is ever negative (a negative coefficient or constant is refused), so with
    non-negative variables every value is non-negative: unsigned arithmetic computes the
    same numbers as the integers do, and lets the compiler turn ``/ 8`` into a shift and
    ``% 8`` into a mask (signed division needs sign fix-ups: 27 instructions instead of 12
    for ``f32[4096,4096]{1,0:T(8,128)}`` with GCC 12 -O2).
    """

    def sum_text(self, e: Sum) -> str:
        if e.const < 0 or any(c < 0 for _, c in e.terms):
            raise InvalidArgumentError(f"refusing to print a negative term in C: {e!r}")
        return super().sum_text(e)


class JSPrinter(CPrinter):
    """JavaScript on ``Number``: ``Math.floor(a / b)``, ``%``, ``||``; no negative term (as in C)."""

    def division(self, e: FloorDiv) -> str:
        return f"Math.floor({self.wrap(e.num, MUL)} / {self.wrap(e.den)})"

    def _p(self, e: Expr) -> tuple[str, int]:
        if isinstance(e, (FloorDiv, CeilDiv)):  # a call: binds like an atom
            return (self.division(e) if isinstance(e, FloorDiv) else self.ceiling(e)), ATOM
        return super()._p(e)


class JSBigIntPrinter(CPrinter):
    """JavaScript on ``BigInt``: literals ``8n``, ``/`` (truncating: floor on non-negatives), ``%``, ``||``."""

    def number(self, value: int) -> str:
        return f"{value}n"


class PythonPrinter(Printer):
    """Python (and NumPy: the same text works on integer arrays): ``//``, ``%``, ``|``."""

    floordiv = " // "
    or_ = " | "
    true, false = "True", "False"

    def disjunction(self, e: Or) -> str:
        # ``|`` binds tighter than ``>=`` in Python: every comparison needs its parentheses
        return self.or_.join(self.wrap(a) for a in e.args)


class MLIRPrinter(Printer):
    """MLIR affine expressions: ``floordiv``, ``ceildiv``, ``mod``; the constant on the right of ``*``."""

    mul = " * "
    floordiv = " floordiv "
    mod = " mod "
    coefficient_first = False

    def ceiling(self, e: CeilDiv) -> str:
        return f"{self.wrap(e.num)} ceildiv {self.wrap(e.den)}"

    def disjunction(self, e: Or) -> str:  # pragma: no cover - sets print constraints instead
        raise InvalidArgumentError("an MLIR affine expression cannot be a disjunction")


def latex_name(name: str) -> str:
    """``i0 -> i_{0}``, a one-letter name as it is, a longer one in ``\\mathit{}``."""
    m = re.fullmatch(r"i(\d+)", name)
    if m:
        return f"i_{{{m[1]}}}"
    if len(name) == 1:
        return name
    return "\\mathit{" + name.replace("_", "\\_") + "}"


class LatexPrinter(Printer):
    """LaTeX math: ``\\lfloor \\frac{a}{b} \\rfloor``, ``\\bmod``, ``\\cdot``, ``\\geq``, ``\\lor``."""

    mul = " \\cdot "
    mod = " \\bmod "
    ge = " \\geq "
    or_ = " \\lor "
    true, false = "\\mathrm{true}", "\\mathrm{false}"

    def var(self, v: Var) -> str:
        return latex_name(self.names.get(v.name, v.name))

    def paren(self, text: str) -> str:
        return f"\\left({text}\\right)"

    def division(self, e: FloorDiv) -> str:
        return f"\\left\\lfloor \\frac{{{self.expr(e.num)}}}{{{self.expr(e.den)}}} \\right\\rfloor"

    def ceiling(self, e: CeilDiv) -> str:
        return f"\\left\\lceil \\frac{{{self.expr(e.num)}}}{{{self.expr(e.den)}}} \\right\\rceil"

    def _p(self, e: Expr) -> tuple[str, int]:
        if isinstance(e, (FloorDiv, CeilDiv)):
            return (self.division(e) if isinstance(e, FloorDiv) else self.ceiling(e)), ATOM
        return super()._p(e)


_PRINTERS = {
    "c": CPrinter,
    "python": PythonPrinter,
    "numpy": PythonPrinter,
    "mlir": MLIRPrinter,
    "latex": LatexPrinter,
    "js": JSPrinter,
}


def printer(lang: str, names: Mapping[str, str] | None = None, *, bigint: bool = False) -> Printer:
    """The printer for ``lang``; ``names`` renames variables (MLIR's ``d0``, ``s0``);
    ``bigint`` picks JavaScript's ``BigInt`` arithmetic over ``Number``."""
    if lang == "js" and bigint:
        return JSBigIntPrinter(names)
    return _PRINTERS[lang](names)


def largest_value(e: Expr, bounds: Bounds) -> int | None:
    """An upper bound on every value computing ``e`` goes through (``None``: unbounded).

    Each sub-expression, each scaled term of a sum and each running sum, each running
    product, the numerator ``a + (b - 1)`` of a ceiling: with no negative term, no value
    exceeds these (the offset ``p`` itself is one of the values):

    >>> from layout_algebra.codegen.expr import Var, floordiv, scale
    >>> from layout_algebra.codegen.simplify import Bounds
    >>> largest_value(scale(floordiv(Var("p"), 8), 3) + 5, Bounds({"p": (0, 99)}))
    99
    >>> largest_value(scale(floordiv(Var("p"), 8), 300) + 5, Bounds({"p": (0, 99)}))
    3605
    """
    values: list[int | None] = []

    def hi(x: Expr) -> int | None:
        return bounds.range(x)[1]

    def walk(x: Expr) -> None:
        if not isinstance(x, (Bool, Or, Ge)):  # a truth value is no number
            values.append(hi(x))
        if isinstance(x, Sum):
            running: int | None = 0
            for a, c in x.terms:
                h = hi(a)
                term = None if h is None else abs(c) * h
                values.append(term)
                running = None if running is None or term is None else running + term
                values.append(running)
            values.append(None if running is None else running + abs(x.const))
        elif isinstance(x, Product):
            running = 1
            for f in x.factors:
                h = hi(f)
                running = None if running is None or h is None else running * max(h, 1)
                values.append(running)
        elif isinstance(x, CeilDiv):
            a, b = hi(x.num), hi(x.den)
            values.append(None if a is None or b is None else a + b)
        elif isinstance(x, Ge):
            values.extend((hi(x.lhs), hi(x.rhs)))
        for child in x.children:
            walk(child)

    walk(e)
    if any(v is None for v in values):
        return None
    return max((v for v in values if v is not None), default=0)


def negate_condition(e: Ge) -> Expr:
    """``not (a >= b)`` as the MLIR constraint expression ``b - 1 - a`` (``>= 0``)."""
    return add(e.rhs, Const(-1), scale(e.lhs, -1))
