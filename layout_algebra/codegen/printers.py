"""Printers: one expression tree, five languages.

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

__all__ = ["LANGUAGES", "Printer", "latex_name", "printer"]

#: Languages code can be generated in.
LANGUAGES = ("c", "python", "numpy", "mlir", "latex")

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
            return f"{c}{self.mul}{self.factor(atom)}"
        return f"{self.factor(atom)}{self.mul}{c}"

    def sum_text(self, e: Sum) -> str:
        positive = [(a, c) for a, c in e.terms if c > 0]
        negative = [(a, -c) for a, c in e.terms if c < 0]
        parts = [self.scaled(a, c) for a, c in positive]
        if e.const > 0:
            parts.append(str(e.const))
        text = " + ".join(parts)
        minus = [(self.scaled(a, c), c == 1 and self._p(a)[1] == ATOM) for a, c in negative]
        if e.const < 0:
            minus.append((str(-e.const), True))
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
            return (str(e.value), ATOM) if e.value >= 0 else (self.paren(str(e.value)), ATOM)
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
            raise ValueError(f"refusing to print a negative term in C: {e!r}")
        return super().sum_text(e)


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
        raise ValueError("an MLIR affine expression cannot be a disjunction")


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
}


def printer(lang: str, names: Mapping[str, str] | None = None) -> Printer:
    """The printer for ``lang``; ``names`` renames variables (MLIR's ``d0``, ``s0``)."""
    return _PRINTERS[lang](names)


def negate_condition(e: Ge) -> Expr:
    """``not (a >= b)`` as the MLIR constraint expression ``b - 1 - a`` (``>= 0``)."""
    return add(e.rhs, Const(-1), scale(e.lhs, -1))
