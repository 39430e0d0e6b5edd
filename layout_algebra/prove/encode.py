"""Z3 encodings of the stages' arithmetic: bit-vectors for concrete sizes, integers for symbolic ones.

The stages and references are written once against an
:class:`~layout_algebra.meaning.stages.arith.Arithmetic`; the classes here make them build Z3
terms. Division and remainder never go to Z3's ``div``/``mod`` (slow and erratic,
DESIGN.md "Proofs"): each distinct ``⌊a/b⌋`` gets explicit quotient and remainder
variables ``a = q*b + r, 0 <= r < b`` (shifts and masks for powers of two), recorded as
side constraints.

* :class:`BitVecArithmetic`, for concrete sizes: every value is an unsigned bit-vector
  whose width is chosen from interval bounds (:class:`IntervalArithmetic` runs the same
  code on intervals first), so no operation can overflow.
* :class:`IntArithmetic`, for symbolic sizes: mathematical integers; dimension
  expressions (``ceiling(N/8)*8``) are translated by :func:`sympy_to_z3`.

>>> import z3
>>> ar = IntArithmetic()
>>> x = z3.Int("x")
>>> q = ar.floordiv(x, 8)
>>> len(ar.side)          # x = 8q + r, 0 <= r < 8, and q, r >= 0
1
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sympy
import z3

from layout_algebra.meaning.stages.arith import Arithmetic
from layout_algebra.model.errors import LayoutAlgebraError
from layout_algebra.model.internal_names import division_names, index_variable, quotient_symbol
from layout_algebra.model.symbols import as_sympy

__all__ = [
    "BitVecArithmetic",
    "IntArithmetic",
    "Interval",
    "IntervalArithmetic",
    "UnsupportedExpression",
    "sympy_to_z3",
]


class UnsupportedExpression(LayoutAlgebraError, ValueError):
    """A SymPy expression the Z3 translation does not cover (the prover then answers unknown)."""


# ------------------------------------------------------------------------- intervals
class Interval:
    """An integer interval ``[lo, hi]``; ``+``, ``-`` and ``*`` work on bounds.

    Used to size bit-vectors: the stages run on intervals first, and the largest magnitude
    of any result is recorded in ``tracker`` (a one-element list holding the maximum so
    far). Other operators are :class:`UnsupportedExpression` (the prover answers unknown).

    >>> tracker = [1]
    >>> x = Interval(0, 3, tracker)
    >>> y = 4 - 2 * x
    >>> (y.lo, y.hi), tracker
    ((-2, 4), [6])
    """

    __slots__ = ("hi", "lo", "tracker")

    def __init__(self, lo: int, hi: int, tracker: list[int]) -> None:
        self.lo, self.hi, self.tracker = lo, hi, tracker
        tracker[0] = max(tracker[0], hi, -lo)

    def _other(self, other: Any) -> Interval:
        if isinstance(other, Interval):
            return other
        if isinstance(other, bool) or not isinstance(other, (numbers.Integral, sympy.Integer)):
            raise UnsupportedExpression(
                f"interval bounds cover integers, not {type(other).__name__} {other!r}"
            )
        value = int(other)
        return Interval(value, value, self.tracker)

    def __add__(self, other: Any) -> Interval:
        o = self._other(other)
        return Interval(self.lo + o.lo, self.hi + o.hi, self.tracker)

    __radd__ = __add__

    def __neg__(self) -> Interval:
        return Interval(-self.hi, -self.lo, self.tracker)

    def __sub__(self, other: Any) -> Interval:
        return self + (-self._other(other))

    def __rsub__(self, other: Any) -> Interval:
        return self._other(other) + (-self)

    def __mul__(self, other: Any) -> Interval:
        o = self._other(other)
        products = [self.lo * o.lo, self.lo * o.hi, self.hi * o.lo, self.hi * o.hi]
        return Interval(min(products), max(products), self.tracker)

    __rmul__ = __mul__

    def _unsupported(self, *_: Any) -> Any:
        raise UnsupportedExpression(
            "the map uses an operator interval bounds do not cover (only +, -, * and the "
            "arithmetic's floordiv, mod, ge are; write ar.floordiv(a, b) for a // b)"
        )

    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _unsupported
    __pow__ = __rpow__ = __lt__ = __le__ = __gt__ = __ge__ = __abs__ = _unsupported
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __lshift__ = __rshift__ = _unsupported
    __index__ = __int__ = __float__ = __floor__ = __ceil__ = __round__ = __trunc__ = _unsupported
    __divmod__ = __rdivmod__ = __matmul__ = __rmatmul__ = __invert__ = _unsupported


class IntervalArithmetic(Arithmetic):
    """Bounds of every intermediate value, for choosing bit-vector widths.

    The bit-vectors are unsigned: a value that may be negative can be added, subtracted,
    multiplied and compared for equality (all exact modulo the width, which the bounds
    make large enough), but not divided or ordered; that is an :class:`UnsupportedExpression`.
    """

    name = "interval"

    def __init__(self) -> None:
        self.tracker = [1]

    def variable(self, hi: int) -> Interval:
        return Interval(0, max(hi, 0), self.tracker)

    def _as_interval(self, a: Any) -> Interval:
        return a if isinstance(a, Interval) else Interval(0, 0, self.tracker)._other(a)

    def _nonnegative(self, operation: str, *values: Interval) -> None:
        for v in values:
            if v.lo < 0:
                raise UnsupportedExpression(
                    f"a value that may be negative (down to {v.lo}) reaches {operation}; "
                    "unsigned bit-vectors cannot encode it"
                )

    def floordiv(self, a: Any, b: Any) -> Any:
        if not isinstance(a, Interval) and not isinstance(b, Interval):
            return a // b
        a, b = self._as_interval(a), self._as_interval(b)
        self._nonnegative("a division", a, b)
        return Interval(0, a.hi // max(b.lo, 1), self.tracker)

    def mod(self, a: Any, b: Any) -> Any:
        if not isinstance(a, Interval) and not isinstance(b, Interval):
            return a % b
        a, b = self._as_interval(a), self._as_interval(b)
        self._nonnegative("a remainder", a, b)
        return Interval(0, max(min(a.hi, b.hi - 1), 0), self.tracker)

    def ge(self, a: Any, b: Any) -> Any:
        if isinstance(a, Interval) or isinstance(b, Interval):
            self._nonnegative("a comparison", self._as_interval(a), self._as_interval(b))
        return True

    def lt(self, a: Any, b: Any) -> Any:
        return self.ge(a, b)

    def any_of(self, conditions) -> Any:
        list(conditions)
        return True


# ------------------------------------------------------------------------- bit-vectors
class BitVecArithmetic(Arithmetic):
    """Unsigned bit-vectors of one width; ``⌊a/b⌋`` and ``a mod b`` by explicit variables."""

    name = "bitvector"

    def __init__(self, width: int) -> None:
        self.width = width
        self.side: list[Any] = []
        self._divisions: dict[tuple[int, int], tuple[Any, Any]] = {}
        self._alive: list[Any] = []  # Z3 reuses the ids of freed terms: keep keyed terms alive
        self._fresh = 0

    def variable(self, name: str) -> Any:
        return z3.BitVec(index_variable(name), self.width)

    def const(self, value: int) -> Any:
        return z3.BitVecVal(value, self.width)

    def lift(self, size: Any) -> Any:
        if isinstance(size, int):
            return size
        if isinstance(size, sympy.Integer):
            return int(size)
        raise UnsupportedExpression(f"bit-vector encoding needs concrete sizes, got {size}")

    def _as_bv(self, a: Any) -> Any:
        return a if isinstance(a, z3.BitVecRef) else self.const(int(a))

    def _divide(self, a: Any, b: Any) -> tuple[Any, Any]:
        a_bv, b_bv = self._as_bv(a), self._as_bv(b)
        key = (a_bv.get_id(), b_bv.get_id())
        if key in self._divisions:
            return self._divisions[key]
        if isinstance(b, int) and b > 0 and b & (b - 1) == 0:
            shift = b.bit_length() - 1
            result = (z3.LShR(a_bv, shift), a_bv & (b - 1))
        else:
            self._fresh += 1
            q_name, r_name = division_names(self._fresh)
            q = z3.BitVec(q_name, self.width)
            r = z3.BitVec(r_name, self.width)
            # The width leaves room for q*b + r <= a*b + b (interval-sized), so nothing wraps.
            self.side.append(
                z3.If(
                    b_bv == 0,
                    z3.And(q == 0, r == a_bv),
                    z3.And(a_bv == q * b_bv + r, z3.ULT(r, b_bv), z3.ULE(q, a_bv)),
                )
            )
            result = (q, r)
        self._divisions[key] = result
        self._alive += [a_bv, b_bv]
        return result

    def floordiv(self, a: Any, b: Any) -> Any:
        if isinstance(a, int) and isinstance(b, int):
            return a // b
        return self._divide(a, b)[0]

    def mod(self, a: Any, b: Any) -> Any:
        if isinstance(a, int) and isinstance(b, int):
            return a % b
        return self._divide(a, b)[1]

    def ge(self, a: Any, b: Any) -> Any:
        return z3.UGE(self._as_bv(a), self._as_bv(b))

    def lt(self, a: Any, b: Any) -> Any:
        return z3.ULT(self._as_bv(a), self._as_bv(b))

    def any_of(self, conditions) -> Any:
        items = [c for c in conditions if c is not False]
        return z3.Or(*items) if items else z3.BoolVal(False)


def bitvector_width(max_value: int, max_divisor: int = 1) -> int:
    """Bits enough for every value up to ``max_value`` times ``max_divisor``, with a spare bit.

    >>> bitvector_width(1000, 8)
    15
    """
    return (max(max_value, 1) * max(max_divisor, 1) * 2 + 2).bit_length() + 1


# ------------------------------------------------------------------------- integers
class IntArithmetic(Arithmetic):
    """Z3 integers; sizes are SymPy expressions translated with the same division scheme."""

    name = "integer"

    def __init__(self, declared_signs: bool = False) -> None:
        #: Symbols are sizes (>= 0), or with ``declared_signs`` what their SymPy assumptions say.
        self.declared_signs = declared_signs
        self.side: list[Any] = []
        self.symbols: dict[sympy.Symbol, Any] = {}
        #: Conditions the rewrites below relied on; a proof must show they hold on the whole box.
        self.obligations: list[Any] = []
        self._divisions: dict[tuple[int, int], tuple[Any, Any]] = {}
        self._lifted: dict[int, sympy.Expr] = {}
        self._records: dict[int, tuple[list[Any], list[Any]]] = {}
        self._floors: dict[sympy.Expr, Any] = {}  # floor/ceiling terms by canonical form (one term each)
        self._alive: list[Any] = []  # Z3 reuses the ids of freed terms: keep keyed terms alive
        self._fresh = 0
        #: symbols known to be ``modulus*k + residue`` (:meth:`know_residue`): symbol -> ``modulus*k + residue``
        self.residues: dict[sympy.Symbol, sympy.Expr] = {}
        self._quotients: dict[sympy.Symbol, Any] = {}  # the ``k`` of each, by its SymPy name

    def variable(self, name: str) -> Any:
        """An index variable (an integer >= 0). Its Z3 name ends in '!', which no size name
        has: Z3 knows a constant by its name, and a size named ``x0`` must not be the index
        ``x0`` (the box ``0 <= x0 < x0`` would be empty and every claim vacuously proved)."""
        v = z3.Int(index_variable(name))
        self.side.append(v >= 0)
        return v

    def know_residue(self, s: sympy.Symbol, modulus: int, residue: int) -> None:
        """Record that the context of every query of this arithmetic says ``s % modulus == residue``:
        ``s`` is the term ``modulus*k + residue`` of a fresh integer ``k`` in every query (if
        ``s`` was met before, a side constraint ties its term to that one), and an exact
        quotient of ``s`` (``s/8``, ``3*s/4``, ``(s + 4)/8``), or a floor or ceiling that
        becomes one, is a polynomial in ``k`` (:func:`_exact_quotient`), with no division for
        Z3 to reason about.

        Sound only for a fact of the context (an assumption, a shape's domain), never for
        something to be proved: every size the context allows has such a ``k``, so reading
        ``s`` as ``modulus*k + residue`` loses no model of the context (a model's ``s`` is
        read off ``k``).

        >>> n = sympy.Symbol("N", integer=True, nonnegative=True)
        >>> ar = IntArithmetic()
        >>> ar.know_residue(n, 8, 0)
        >>> sympy_to_z3(5 * n / 8, ar), ar.obligations
        (5*N!8, [])
        """
        if s in self.residues or modulus <= 1:
            return
        k = quotient_symbol(s, modulus)  # no size name can be it (model.internal_names)
        self._quotients[k] = z3.Int(str(k))
        self.residues[s] = modulus * k + residue
        term = modulus * self._quotients[k] + residue
        met = self._met(s)
        if met is not None:  # met before (or another symbol of its name): tie the two
            self.side.append(self.symbols[met] == term)
        else:  # ``s`` is that term everywhere (a model reads its value off ``k``)
            self.symbols[s] = term
            self.side.extend(self._sign_of(s, term))

    @contextmanager
    def branch(self, condition: Any) -> Iterator[None]:
        """Encode terms that matter only where ``condition`` holds (one side of a selection).

        Obligations recorded inside are needed only there, so they become
        ``condition -> obligations``; the notes made inside (mixed-radix records, floor terms)
        are forgotten afterwards, so that another branch meeting the same terms records them,
        and their obligations, again under its own condition.
        """
        start = len(self.obligations)
        records, floors = set(self._records), set(self._floors)
        try:
            yield
        finally:
            inside = self.obligations[start:]
            if inside:
                self.obligations[start:] = [z3.Implies(condition, z3.And(*inside))]
            for key in set(self._records) - records:
                del self._records[key]
            for key in set(self._floors) - floors:
                del self._floors[key]

    def lift(self, size: Any) -> Any:
        if isinstance(size, int):
            return size
        size = as_sympy(size)
        if size.is_Integer:
            return int(size)
        term = sympy_to_z3(size, self)
        if isinstance(term, z3.ExprRef):
            self._lifted[term.get_id()] = size
            self._alive.append(term)
        return term

    # -- mixed-radix numbers: exact division by suffix products (DESIGN.md: compose lemmas)
    def mixed_radix(self, value: Any, digits, sizes) -> Any:
        """Record the note; unless ``value`` is literally the digit sum, prove it equal too."""
        if isinstance(value, z3.ExprRef) and value.get_id() not in self._records:
            sizes = [as_sympy(d) for d in sizes]
            literal: Any = 0
            for k, digit in enumerate(digits):
                literal = literal + digit * self.lift(math.prod(sizes[k + 1 :], start=sympy.Integer(1)))
            if not (isinstance(literal, z3.ExprRef) and literal.get_id() == value.get_id()):
                self.obligations.append(value == literal)
            self._records[value.get_id()] = (list(digits), sizes)
            self._alive.append(value)
        return value

    def record_of(self, value: Any) -> tuple[list[Any], list[Any]] | None:
        """The digits and sizes noted for a mixed-radix number, if any."""
        if isinstance(value, z3.ExprRef):
            return self._records.get(value.get_id())
        return None

    def _size_of(self, b: Any) -> sympy.Expr | None:
        if isinstance(b, int):
            return sympy.Integer(b)
        if isinstance(b, z3.IntNumRef):
            return sympy.Integer(b.as_long())
        return self._lifted.get(b.get_id()) if isinstance(b, z3.ExprRef) else None

    def number(self, digits: list[Any], sizes: list[Any]) -> Any:
        """The row-major number of ``digits`` in a box of ``sizes``, noted as such (see
        :meth:`mixed_radix`), so that it can later be divided exactly."""
        total: Any = 0
        for k, digit in enumerate(digits):
            total = total + digit * self.lift(math.prod(sizes[k + 1 :], start=sympy.Integer(1)))
        if isinstance(total, int):
            total = z3.IntVal(total)
        if total.get_id() not in self._records:
            self._records[total.get_id()] = (list(digits), list(sizes))
            self._alive.append(total)
        return total

    def _mixed_divide(self, a: Any, b: Any, depth: int = 0) -> tuple[Any, Any] | None:
        """``(⌊a/b⌋, a mod b)`` without new variables when ``a`` is a noted mixed-radix number
        and ``b`` a suffix product of its sizes (refining a digit by a constant factor if
        needed). Valid when the digits lie in their box: recorded as obligations."""
        if not isinstance(a, z3.ExprRef) or a.get_id() not in self._records or depth > 8:
            return None
        size = self._size_of(b)
        if size is None:
            return None
        size = canonical_size(size)
        digits, sizes = self._records[a.get_id()]
        n = len(digits)
        for k in range(-1, n):
            suffix = math.prod(sizes[k + 1 :], start=sympy.Integer(1))
            if sympy.expand(size - canonical_size(suffix)) == 0:
                self.require_digits_in_box(digits, sizes)
                quotient = self.number(digits[: k + 1], sizes[: k + 1]) if k >= 0 else z3.IntVal(0)
                remainder = self.number(digits[k + 1 :], sizes[k + 1 :]) if k + 1 < n else z3.IntVal(0)
                return quotient, remainder
        for j in range(n):
            suffix = math.prod(sizes[j + 1 :], start=sympy.Integer(1))
            ratio = constant_ratio(size, suffix)
            if ratio.is_Integer and int(ratio) > 1 and (sizes[j] / ratio).is_integer and sizes[j] != ratio:
                t = int(ratio)
                refined_digits = [
                    *digits[:j],
                    self.floordiv(digits[j], t),
                    self.mod(digits[j], t),
                    *digits[j + 1 :],
                ]
                refined_sizes = [*sizes[:j], sympy.cancel(sizes[j] / t), sympy.Integer(t), *sizes[j + 1 :]]
                refined = self.number(refined_digits, refined_sizes)
                self.obligations.append(refined == a)
                return self._mixed_divide(refined, b, depth + 1)
        return None

    def require_digits_in_box(self, digits: list[Any], sizes: list[Any]) -> None:
        """Add the side conditions ``0 <= digit < size`` to :attr:`obligations` (to be proved)."""
        for digit, size in zip(digits, sizes, strict=True):
            bound = self.lift(size)
            self.obligations.append(z3.And(digit >= 0, digit < bound))

    def symbol(self, s: sympy.Symbol) -> Any:
        if s in self._quotients:
            return self._quotients[s]
        if s not in self.symbols:
            met = self._met(s)
            if met is not None:  # a size named by another symbol of its name: the same size
                self.symbols[s] = self.symbols[met]
            else:
                v = z3.Int(str(s))
                self.symbols[s] = v
                self.side.extend(self._sign_of(s, v))
        return self.symbols[s]

    def _met(self, s: sympy.Symbol) -> sympy.Symbol | None:
        """``s``, or another symbol of its name, if met before (sizes only: with
        ``declared_signs`` two symbols of one name declared differently are refused).

        A size is known by its name (a map may write ``sympy.Symbol("M")`` for the
        shape's ``M``; a counterexample gives sizes their values by name), as Z3 knows a
        constant: the residue term of one symbol (:meth:`know_residue`) is the other's too.
        """
        if s in self.symbols:
            return s
        if self.declared_signs:
            return None
        return next((o for o in self.symbols if str(o) == str(s)), None)

    def _sign_of(self, s: sympy.Symbol, v: Any) -> list[Any]:
        """``v >= 0`` (a size), or with ``declared_signs`` what ``s`` is declared to be."""
        if not self.declared_signs:
            return [v >= 0]
        if s.is_integer is not True:
            raise UnsupportedExpression(
                f"the symbol {s} is not declared an integer (sympy.Symbol(..., integer=True))"
            )
        if any(other is not s and str(other) == str(s) for other in self.symbols):
            raise UnsupportedExpression(f"two different symbols are named {s} (declared differently)")
        if s.is_positive:
            return [v >= 1]
        return [v >= 0] if s.is_nonnegative else []

    def _divide(self, a: Any, b: Any) -> tuple[Any, Any]:
        a_t = a if isinstance(a, z3.ArithRef) else z3.IntVal(int(a))
        b_t = b if isinstance(b, z3.ArithRef) else z3.IntVal(int(b))
        key = (a_t.get_id(), b_t.get_id())
        if key in self._divisions:
            return self._divisions[key]
        self._fresh += 1
        q_name, r_name = division_names(self._fresh)
        q = z3.Int(q_name)
        r = z3.Int(r_name)
        if isinstance(b, int):
            if b <= 0:
                raise UnsupportedExpression(f"division by {b}")
            self.side.append(z3.And(a_t == q * b + r, r >= 0, r < b))
        else:
            self.side.append(
                z3.If(b_t > 0, z3.And(a_t == q * b_t + r, r >= 0, r < b_t), z3.And(q == 0, r == a_t))
            )
        self._divisions[key] = (q, r)
        self._alive += [a_t, b_t]
        return q, r

    def floordiv(self, a: Any, b: Any) -> Any:
        if isinstance(a, int) and isinstance(b, int):
            return a // b
        exact = self._mixed_divide(a, b)
        return exact[0] if exact is not None else self._divide(a, b)[0]

    def mod(self, a: Any, b: Any) -> Any:
        if isinstance(a, int) and isinstance(b, int):
            return a % b
        exact = self._mixed_divide(a, b)
        return exact[1] if exact is not None else self._divide(a, b)[1]

    def ge(self, a: Any, b: Any) -> Any:
        return a >= b

    def lt(self, a: Any, b: Any) -> Any:
        return a < b

    def any_of(self, conditions) -> Any:
        items = [c for c in conditions if c is not False]
        return z3.Or(*items) if items else z3.BoolVal(False)


def constant_ratio(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    """``a / b`` reduced: a number when the two sizes are proportional.

    Sizes are polynomials in their symbols and in atoms such as ``ceiling(M/128)``;
    ``sympy.cancel`` writes a ratio of polynomials in lowest terms, which is a number
    exactly when the ratio is constant. Only where a size holds other functions (``floor``,
    ``Mod``, ``Max``, whose identities ``cancel`` does not know) does ``sympy.simplify``
    try harder; it is much slower, and loads ``sympy.physics`` on its first call. (The
    caller only *uses* an exact ratio, with its obligations proved: a ratio not found
    costs a division variable, never a wrong answer.)

    >>> n, m = sympy.symbols("N M", integer=True, nonnegative=True)
    >>> constant_ratio(8 * n * sympy.ceiling(m / 128), n * sympy.ceiling(m / 128))
    8
    >>> constant_ratio(8 * n, m)
    8*N/M
    """
    ratio = a / b
    if ratio.atoms(sympy.floor, sympy.Mod, sympy.Max, sympy.Min, sympy.Piecewise):
        return sympy.simplify(ratio)
    return sympy.cancel(ratio)


def canonical_size(size: Any) -> Any:
    """A size with every ``floor((a + b - 1)/b)`` written ``ceiling(a/b)`` (the same number).

    Generated code rounds up with ``(a + b - 1) / b``; the stages write ``ceiling(a/b)``.

    >>> m = sympy.Symbol("M", integer=True, nonnegative=True)
    >>> canonical_size(1024 * sympy.floor((m + 127) / 128))
    1024*ceiling(M/128)
    """
    size = as_sympy(size)
    if not size.has(sympy.floor):
        return size

    def round_up(f: sympy.Expr) -> sympy.Expr:
        numerator, denominator = sympy.fraction(sympy.together(f.args[0]))
        if denominator.is_Integer and denominator > 1:
            constant, rest = numerator.as_coeff_Add()
            if constant == denominator - 1 and rest != 0:
                return sympy.ceiling(rest / denominator)
        return f

    return size.replace(lambda e: isinstance(e, sympy.floor), round_up)


def sympy_to_z3(expr: Any, ar: IntArithmetic) -> Any:
    """Translate an integer-valued SymPy expression to a Z3 integer term.

    Covers what sizes, closed forms and assumptions use: symbols, integers, ``+``, ``*``,
    integer powers, ``Min``/``Max``, ``floor`` and ``ceiling`` of (integer expression) / (integer or
    positive size expression), ``Mod``, and rationals times integer expressions inside
    ``floor``/``ceiling``.

    >>> import sympy, z3
    >>> n = sympy.Symbol("N", integer=True, nonnegative=True)
    >>> ar = IntArithmetic()
    >>> z3.simplify(sympy_to_z3(8 * sympy.ceiling(n / 8), ar) - 8 * ar._divisions[next(iter(ar._divisions))][0])
    0
    """
    expr = as_sympy(expr)
    if expr.is_Integer:
        return int(expr)
    if expr.is_Symbol:
        return ar.symbol(expr)
    if expr.is_Add:
        terms, denominator = _integer_terms(expr)
        if denominator != 1:
            return _exact_quotient(expr, ar)
        return _sum_terms(terms, ar)
    if expr.is_Mul:
        coefficient, rest = expr.as_coeff_Mul()
        if coefficient.is_Rational and not coefficient.is_Integer:
            return _exact_quotient(expr, ar)
        if not coefficient.is_Integer:
            raise UnsupportedExpression(f"{expr} is not an integer expression")
        factors = sympy.Mul.make_args(rest)
        if any(f.is_Add and not f.has(sympy.Mod) and _integer_terms(f)[1] != 1 for f in factors):
            return _exact_quotient(expr, ar)  # M*(N/8 + 1/2): one quotient M*(N + 4)/8, not a factor's
        product: Any = int(coefficient)
        for factor in factors:
            product = product * sympy_to_z3(factor, ar)
        return product
    if expr.is_Pow and expr.exp.is_Integer and int(expr.exp) >= 0:
        base = sympy_to_z3(expr.base, ar)
        return math.prod([base] * int(expr.exp), start=1) if int(expr.exp) else 1
    if isinstance(expr, (sympy.floor, sympy.ceiling)):
        # one term per size, whichever way it is written (⌈a/b⌉ or ⌊(a + b - 1)/b⌋)
        key = canonical_size(expr)
        known = ar._floors.get(key)
        if known is None:
            known = ar._floors[key] = _floor_or_ceiling(key, ar)
        return known
    if isinstance(expr, (sympy.Min, sympy.Max)):
        return _extremum(expr, ar)
    if isinstance(expr, sympy.Mod):
        a, b = expr.args
        b_term = ar.lift(b) if b.free_symbols else sympy_to_z3(b, ar)
        return ar.mod(sympy_to_z3(a, ar), b_term)
    raise UnsupportedExpression(f"cannot translate {expr} ({type(expr).__name__}) to Z3")


def _exact_quotient(expr: sympy.Expr, ar: IntArithmetic) -> Any:
    """A size written with a rational coefficient (``N/8``, a dimension formula) as an exact quotient.

    ``N/8`` is a size only where 8 divides ``N``. Where the context says so (a shape's
    domain, an assumption: :meth:`IntArithmetic.know_residue`), ``N`` is ``8*k`` and the
    quotient is the polynomial ``k``. Otherwise the term is ``⌊N/8⌋`` and ``N % 8 == 0`` is
    an obligation, so a proof that uses it also proves (from the assumptions) that the
    division is exact; where it is not, the answer is ``unknown``, never a verdict.
    """
    known = _with_residues(expr, ar)
    whole = _whole(known, ar) if known is not expr else None
    if whole is not None:
        return whole
    numerator, denominator = sympy.fraction(sympy.together(expr))
    if not (denominator.is_Integer and int(denominator) > 0):
        raise UnsupportedExpression(f"{expr} is not an integer expression")
    # the numerator as written (not expanded): the same term as the divisibility of the
    # context (``M*(N + 4) % 16 == 0`` for ``f32[M*(N+4)/16]``), so the quotient and the
    # remainder are the very variables the context speaks of
    top = sympy_to_z3(numerator, ar)
    if isinstance(top, int):
        if top % int(denominator):
            raise UnsupportedExpression(f"{expr} is not an integer")
        return top // int(denominator)
    ar.obligations.append(ar.mod(top, int(denominator)) == 0)
    return ar.floordiv(top, int(denominator))  # exact under the obligation


def _extremum(expr: sympy.Expr, ar: IntArithmetic) -> Any:
    """``Min``/``Max`` as nested ``If`` terms (plain ``min``/``max`` when every argument is a number)."""
    terms = [sympy_to_z3(a, ar) for a in expr.args]
    smaller = isinstance(expr, sympy.Min)
    if all(isinstance(t, int) for t in terms):
        return min(terms) if smaller else max(terms)
    result = terms[0]
    for t in terms[1:]:
        keep = result <= t if smaller else result >= t
        result = z3.If(keep, result, t) if not isinstance(keep, bool) else (result if keep else t)
    return result


def _with_residues(expr: sympy.Expr, ar: IntArithmetic) -> sympy.Expr:
    """``expr`` with each symbol of known residue written ``modulus*k + residue``
    (:meth:`IntArithmetic.know_residue`), expanded; ``expr`` itself when there is none."""
    known = {s: ar.residues[s] for s in expr.free_symbols if s in ar.residues}
    return sympy.expand(expr.subs(known)) if known else expr


def _whole(expr: sympy.Expr, ar: IntArithmetic) -> Any:
    """The term of ``expr`` if, over one denominator, it has none left (``8k/8 + 1``); else ``None``."""
    numerator, denominator = sympy.fraction(sympy.together(expr))
    return sympy_to_z3(sympy.expand(numerator), ar) if denominator == 1 else None


def _floor_or_ceiling(expr: sympy.Expr, ar: IntArithmetic) -> Any:
    argument = expr.args[0]
    known = _with_residues(argument, ar)
    if known is not argument:
        whole = _whole(known, ar)
        if whole is not None:  # ⌈(8k + 8)/8⌉ = k + 1: a whole number, no division
            return whole
        if not sympy.fraction(sympy.together(known))[1].free_symbols:  # ⌈5N/64⌉, N = 8k: ⌈5k/8⌉
            argument = known
    numerator, divisor = _quotient(argument, ar)
    if isinstance(expr, sympy.ceiling):  # ⌈a/b⌉ = ⌊(a + b - 1)/b⌋ for b > 0
        numerator = numerator + divisor - 1
    return ar.floordiv(numerator, divisor)


def _quotient(expr: sympy.Expr, ar: IntArithmetic) -> tuple[Any, Any]:
    """``expr`` as (numerator, divisor) terms: an integer divisor, or a symbolic size
    (``D/t``, as in ``ceiling(D/t)``). A symbolic divisor must be positive: that is an
    obligation, so a proof that relies on the division also proves ``t > 0``."""
    numerator, divisor = sympy.fraction(expr)
    if divisor.free_symbols:
        divisor_term = ar.lift(divisor)  # lifted: a suffix product of a noted number divides exactly
        ar.obligations.append(divisor_term > 0)
        return sympy_to_z3(numerator, ar), divisor_term
    if not expr.has(sympy.Mod, sympy.floor, sympy.ceiling):
        # over one denominator: ⌈M*(N/8 + 1/2)/4⌉ is ⌈M*(N + 4)/32⌉, never the exact
        # quotient (N + 4)/8 of a factor that need not be whole (M = 8, N = 26)
        numerator, divisor = sympy.fraction(sympy.together(expr))
        if divisor.is_Integer and int(divisor) > 0:
            return sympy_to_z3(numerator, ar), int(divisor)
    terms, denominator = _integer_terms(expr)
    return _sum_terms(terms, ar), denominator


def _integer_terms(expr: sympy.Expr) -> tuple[list[tuple[int, sympy.Expr]], int]:
    """``expr`` as ``sum(c_k * rest_k) / denominator`` with integers ``c_k``.

    Read off the expression's own terms, never ``sympy.expand``-ed: SymPy 1.14 rewrites
    remainders of products wrongly when it re-evaluates them (``Mod(2*Mod(x, 5), 3)``).
    """
    pairs = []
    denominator = 1
    for term in sympy.Add.make_args(expr):
        coefficient, rest = term.as_coeff_Mul()
        if not coefficient.is_Rational:
            raise UnsupportedExpression(f"{expr} has a non-rational coefficient")
        pairs.append((sympy.Rational(coefficient), rest))
        denominator = math.lcm(denominator, int(sympy.Rational(coefficient).q))
    return [(int(c * denominator), rest) for c, rest in pairs], denominator


def _sum_terms(terms: list[tuple[int, sympy.Expr]], ar: IntArithmetic) -> Any:
    if len(terms) == 1 and terms[0][0] == 1:  # the term itself, so a noted number stays noted
        return 1 if terms[0][1] == 1 else sympy_to_z3(terms[0][1], ar)
    total: Any = 0
    for coefficient, rest in terms:
        value = 1 if rest == 1 else sympy_to_z3(rest, ar)
        total = total + coefficient * value
    return total
