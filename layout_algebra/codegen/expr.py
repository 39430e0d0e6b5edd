"""The expression tree code generation prints: integer index arithmetic, nothing else.

A layout's closed form is built by running its stages on this tree (see
:class:`TreeArithmetic`), simplified by :mod:`layout_algebra.codegen.simplify`, and printed
by :mod:`layout_algebra.codegen.printers`. The tree is deliberately small:

===============  ==============================================================
``Const(c)``      an integer
``Var(name)``     an index ``i0, i1, ...``, the offset ``p``, or a dimension size
``Sum``           ``c_1*a_1 + ... + c_n*a_n + c``: integer coefficients (a linear form)
``Product``       a product of two or more non-constant factors (symbolic sizes)
``FloorDiv``      ``⌊a / b⌋``          ``Mod``  ``a mod b``      ``CeilDiv``  ``⌈a / b⌉``
``Ge``, ``Or``    ``a >= b`` and disjunction, for the padding predicate
===============  ==============================================================

Why not SymPy: SymPy rewrites as it builds (``floor(x/1)`` vanishes, ``Mod`` of a sum is
reordered, coefficients move), it knows nothing of index ranges, and it prints for
humans, not for C. Here every rewrite is a named rule that states its side condition, and
the tree is exactly what is printed, so its operation count is the printed code's.

The smart constructors keep sums linear (coefficients collected, constants folded) and do
nothing else:

>>> i, j = Var("i0"), Var("i1")
>>> e = (i * 8 + j) * 128 + 5
>>> e
Sum(i0*1024 + i1*128 + 5)
>>> floordiv(e, 1), mod(i, 1)
(FloorDiv(Sum(i0*1024 + i1*128 + 5), 1), Mod(i0, 1))
>>> ops(add(scale(floordiv(i, 8), 1024), mod(i, 8)))
4

The stages run on it through :class:`TreeArithmetic` (dimension sizes, ints or SymPy,
are lifted into the tree):

>>> from layout_algebra.meaning.layout_map import layout_map
>>> m = layout_map("f32[N,M]{1,0:T(8,128)}")
>>> (offset,) = m.apply((Var("i0"), Var("i1")), TREE, through=len(m.stages) - 1)
>>> offset
Sum(Product(FloorDiv(i0, 8)*CeilDiv(M, 128))*1024 + FloorDiv(i1, 128)*1024 + Mod(i0, 8)*128 + Mod(i1, 128))
>>> to_sympy(offset)
128*(Mod(i0, 8)) + Mod(i1, 128) + 1024*ceiling(M/128)*floor(i0/8) + 1024*floor(i1/128)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import sympy

from layout_algebra.meaning.layout_map import OFFSET_SYMBOL, index_symbols
from layout_algebra.meaning.stages.arith import Arithmetic
from layout_algebra.meaning.stages.symbolic import safe_mod
from layout_algebra.model.errors import InvalidArgumentError
from layout_algebra.model.symbols import as_sympy, dim_symbol

__all__ = [
    "FALSE",
    "OFFSET",
    "TREE",
    "TRUE",
    "Bool",
    "CeilDiv",
    "Const",
    "Expr",
    "FloorDiv",
    "Ge",
    "Mod",
    "Or",
    "Product",
    "Sum",
    "TreeArithmetic",
    "Var",
    "add",
    "any_of",
    "ceil_numerator",
    "ceildiv",
    "floordiv",
    "from_sympy",
    "ge",
    "index_vars",
    "lift",
    "mod",
    "mul",
    "ops",
    "safe_mod",
    "scale",
    "term_order",
    "to_sympy",
    "variables",
]


class Expr:
    """A node of the tree. ``+`` and ``*`` build sums and products (ints and SymPy sizes are lifted)."""

    __slots__ = ()

    def __add__(self, other: Any) -> Expr:
        return add(self, lift(other))

    def __radd__(self, other: Any) -> Expr:
        return add(lift(other), self)

    def __mul__(self, other: Any) -> Expr:
        return mul(self, lift(other))

    def __rmul__(self, other: Any) -> Expr:
        return mul(lift(other), self)

    @property
    def children(self) -> tuple[Expr, ...]:
        return ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self})"


@dataclass(frozen=True, repr=False)
class Const(Expr):
    value: int

    def __str__(self) -> str:
        return str(self.value)

    def __repr__(self) -> str:
        return str(self.value)


@dataclass(frozen=True, repr=False)
class Var(Expr):
    """A named integer: an index (``i0``...), the offset ``p``, or a dimension size (``N``)."""

    name: str
    kind: str = "index"  # "index", "offset" or "dim"

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True, repr=False)
class Sum(Expr):
    """``Σ coefficient*atom + const``; atoms are not constants and (except after factoring) not sums."""

    terms: tuple[tuple[Expr, int], ...]
    const: int = 0

    @property
    def children(self) -> tuple[Expr, ...]:
        return tuple(a for a, _ in self.terms)

    def __str__(self) -> str:
        parts = [repr(a) if c == 1 else f"{a!r}*{c}" for a, c in self.terms]
        if self.const:
            parts.append(str(self.const))
        return " + ".join(parts)


@dataclass(frozen=True, repr=False)
class Product(Expr):
    """A product of at least two non-constant factors (only symbolic sizes make these)."""

    factors: tuple[Expr, ...]

    @property
    def children(self) -> tuple[Expr, ...]:
        return self.factors

    def __str__(self) -> str:
        return "*".join(repr(f) for f in self.factors)


@dataclass(frozen=True, repr=False)
class _Division(Expr):
    """A ``num`` by ``den`` node (``den > 0``); the subclass says which operation."""

    num: Expr
    den: Expr

    @property
    def children(self) -> tuple[Expr, ...]:
        return (self.num, self.den)

    def __str__(self) -> str:
        return f"{self.num!r}, {self.den!r}"


@dataclass(frozen=True, repr=False)
class FloorDiv(_Division):
    """``⌊num / den⌋`` with ``den > 0``."""


@dataclass(frozen=True, repr=False)
class Mod(_Division):
    """``num mod den`` in ``[0, den)`` with ``den > 0``."""


@dataclass(frozen=True, repr=False)
class CeilDiv(_Division):
    """``⌈num / den⌉`` with ``den > 0`` (sizes rounded up to whole tiles)."""


@dataclass(frozen=True, repr=False)
class Bool(Expr):
    value: bool

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True, repr=False)
class Ge(Expr):
    """The condition ``lhs >= rhs``."""

    lhs: Expr
    rhs: Expr

    @property
    def children(self) -> tuple[Expr, ...]:
        return (self.lhs, self.rhs)

    def __str__(self) -> str:
        return f"{self.lhs!r} >= {self.rhs!r}"


@dataclass(frozen=True, repr=False)
class Or(Expr):
    """The disjunction of two or more conditions."""

    args: tuple[Expr, ...]

    @property
    def children(self) -> tuple[Expr, ...]:
        return self.args

    def __str__(self) -> str:
        return " | ".join(f"({a})" for a in self.args)


TRUE = Bool(True)
FALSE = Bool(False)


# ------------------------------------------------------------------ ordering and queries
def _depends_on_dims_only(e: Expr) -> bool:
    return all(v.kind == "dim" for v in variables(e))


def variables(e: Expr) -> frozenset[Var]:
    """The variables ``e`` mentions."""
    if isinstance(e, Var):
        return frozenset((e,))
    out: frozenset[Var] = frozenset()
    for c in e.children:
        out |= variables(c)
    return out


def _key(e: Expr) -> str:
    return repr(e)


def term_order(term: tuple[Expr, int]) -> tuple:
    """Print order of a sum's terms: terms with sizes first, then by stride, largest first."""
    atom, coefficient = term
    return (0 if any(v.kind == "dim" for v in variables(atom)) else 1, -abs(coefficient), _key(atom))


def _factor_order(e: Expr) -> tuple:
    """Factors of a product: index-dependent ones first, then sizes."""
    return (1 if _depends_on_dims_only(e) else 0, _key(e))


# ------------------------------------------------------------------ smart constructors
def lift(value: Any) -> Expr:
    """An int, a SymPy size expression or an ``Expr`` as an ``Expr``."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool):
        return TRUE if value else FALSE
    if isinstance(value, int):
        return Const(value)
    if isinstance(value, sympy.Basic):
        return from_sympy(value)
    raise TypeError(f"cannot use {value!r} ({type(value).__name__}) in an index expression")


def _linear(e: Expr) -> tuple[dict[Expr, int], int]:
    if isinstance(e, Const):
        return {}, e.value
    if isinstance(e, Sum):
        return dict(e.terms), e.const
    return {e: 1}, 0


def _make_sum(terms: Mapping[Expr, int], const: int) -> Expr:
    kept = tuple(sorted(((a, c) for a, c in terms.items() if c), key=term_order))
    if not kept:
        return Const(const)
    if len(kept) == 1 and kept[0][1] == 1 and const == 0:
        return kept[0][0]
    return Sum(kept, const)


def add(*es: Expr) -> Expr:
    """The sum, as a linear form (nested sums flattened, like terms collected)."""
    terms: dict[Expr, int] = {}
    const = 0
    for e in es:
        t, c = _linear(lift(e))
        const += c
        for a, k in t.items():
            terms[a] = terms.get(a, 0) + k
    return _make_sum(terms, const)


def scale(e: Expr, c: int) -> Expr:
    """``c * e`` with the constant pushed into the coefficients."""
    t, k = _linear(e)
    return _make_sum({a: v * c for a, v in t.items()}, k * c)


def _product(a: Expr, b: Expr) -> Expr:
    factors = [
        *(a.factors if isinstance(a, Product) else (a,)),
        *(b.factors if isinstance(b, Product) else (b,)),
    ]
    return Product(tuple(sorted(factors, key=_factor_order)))


def mul(a: Expr, b: Expr) -> Expr:
    """The product; constants scale, sums distribute, other factors form a ``Product``."""
    a, b = lift(a), lift(b)
    if isinstance(a, Const):
        return scale(b, a.value)
    if isinstance(b, Const):
        return scale(a, b.value)
    ta, ca = _linear(a)
    tb, cb = _linear(b)
    out: dict[Expr, int] = {}
    for x, kx in ta.items():
        for y, ky in tb.items():
            p = _product(x, y)
            out[p] = out.get(p, 0) + kx * ky
        if cb:
            out[x] = out.get(x, 0) + kx * cb
    if ca:
        for y, ky in tb.items():
            out[y] = out.get(y, 0) + ca * ky
    return _make_sum(out, ca * cb)


def floordiv(a: Any, b: Any) -> Expr:
    """``⌊a / b⌋``; folds constants only."""
    a, b = lift(a), lift(b)
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(a.value // b.value)
    return FloorDiv(a, b)


def mod(a: Any, b: Any) -> Expr:
    """``a mod b``; folds constants only."""
    a, b = lift(a), lift(b)
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(a.value % b.value)
    return Mod(a, b)


def ceildiv(a: Any, b: Any) -> Expr:
    """``⌈a / b⌉``; folds constants only."""
    a, b = lift(a), lift(b)
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(-(-a.value // b.value))
    return CeilDiv(a, b)


def ge(a: Any, b: Any) -> Expr:
    """The condition ``a >= b``; decided at once for constants."""
    a, b = lift(a), lift(b)
    if isinstance(a, Const) and isinstance(b, Const):
        return Bool(a.value >= b.value)
    return Ge(a, b)


def any_of(conditions: Iterable[Any]) -> Expr:
    """The disjunction: nested ``Or`` flattened, ``False`` dropped, ``True`` absorbing, duplicates removed."""
    args: list[Expr] = []
    for c in conditions:
        c = lift(c)
        for x in c.args if isinstance(c, Or) else (c,):
            if x == TRUE:
                return TRUE
            if x != FALSE and x not in args:
                args.append(x)
    if not args:
        return FALSE
    return args[0] if len(args) == 1 else Or(tuple(args))


class TreeArithmetic(Arithmetic):
    """Run the stages on ``Expr`` trees: every ``⌊/⌋``, ``mod``, ``>=`` becomes a node."""

    name = "codegen"

    def lift(self, size: Any) -> Any:
        return lift(size)

    def floordiv(self, a: Any, b: Any) -> Any:
        return floordiv(a, b)

    def mod(self, a: Any, b: Any) -> Any:
        return mod(a, b)

    def ge(self, a: Any, b: Any) -> Any:
        return ge(a, b)

    def any_of(self, conditions: Iterable[Any]) -> Any:
        return any_of(conditions)


#: The arithmetic that builds trees.
TREE = TreeArithmetic()


# ------------------------------------------------------------------ operation count
def ops(e: Expr) -> int:
    """Arithmetic, comparison and logical operations in ``e`` as C prints it.

    Each ``+``/``-`` between terms, each ``*`` (a coefficient other than ±1 is one), each
    ``/`` and ``%``, each ``>=`` and ``||`` counts one. A ceiling division counts as C
    computes it, ``(a + (b - 1)) / b``.
    """
    return _ops(e)


def _ops(e: Expr) -> int:
    if isinstance(e, (Const, Var, Bool)):
        return 0
    if isinstance(e, Sum):
        n = len(e.terms) + (1 if e.const else 0)
        muls = sum(1 for _, c in e.terms if abs(c) != 1)
        # a leading minus (every part negative) is one more operation
        lead = 0 if any(c > 0 for _, c in e.terms) or e.const > 0 else 1
        return n - 1 + muls + lead + sum(_ops(a) for a, _ in e.terms)
    if isinstance(e, Product):
        return len(e.factors) - 1 + sum(_ops(f) for f in e.factors)
    if isinstance(e, (FloorDiv, Mod)):
        return 1 + _ops(e.num) + _ops(e.den)
    if isinstance(e, CeilDiv):
        return 1 + _ops(ceil_numerator(e)) + _ops(e.den)
    if isinstance(e, Ge):
        return 1 + _ops(e.lhs) + _ops(e.rhs)
    if isinstance(e, Or):
        return len(e.args) - 1 + sum(_ops(a) for a in e.args)
    raise TypeError(f"not an expression: {e!r}")


def ceil_numerator(e: CeilDiv) -> Expr:
    """``a + (b - 1)``: the numerator of ``⌈a/b⌉ = ⌊(a + b - 1)/b⌋`` for ``a >= 0, b > 0``."""
    return add(e.num, e.den, Const(-1))


# ------------------------------------------------------------------ SymPy in and out
def from_sympy(value: Any) -> Expr:
    """A size (int or SymPy expression in dimension symbols) as a tree.

    >>> n = dim_symbol("N")
    >>> from_sympy(128 * sympy.ceiling(n / 128))
    Sum(CeilDiv(N, 128)*128)
    """
    e = as_sympy(value)
    if e.is_Integer:
        return Const(int(e))
    if e.is_Symbol:
        return Var(str(e), "dim")
    if e.is_Add:
        return add(*(from_sympy(a) for a in e.args))
    if e.is_Mul:
        coefficient, rest = e.as_coeff_Mul()
        if coefficient.is_Rational and not coefficient.is_Integer:
            # an exact quotient (a padded size over its tile): keep it exact as a floor
            if not e.is_integer:
                raise InvalidArgumentError(f"size {e} is not an integer expression")
            return floordiv(from_sympy(coefficient.p * rest), coefficient.q)
        out: Expr = Const(int(coefficient))
        for factor in sympy.Mul.make_args(rest):
            out = mul(out, from_sympy(factor))
        return out
    if e.is_Pow and e.exp.is_Integer and int(e.exp) >= 0:
        out = Const(1)
        for _ in range(int(e.exp)):
            out = mul(out, from_sympy(e.base))
        return out
    if isinstance(e, (sympy.floor, sympy.ceiling)):
        num, den = sympy.fraction(sympy.together(e.args[0]))
        if not (den.is_Integer and int(den) > 0):
            raise InvalidArgumentError(f"cannot express {e}: the divisor {den} is not a positive integer")
        make = floordiv if isinstance(e, sympy.floor) else ceildiv
        return make(from_sympy(sympy.expand(num)), int(den))
    raise InvalidArgumentError(f"cannot express the size {e} ({type(e).__name__}) in index arithmetic")


def _symbol(v: Var) -> sympy.Symbol:
    if v.kind == "dim":
        return dim_symbol(v.name)
    if v.kind == "offset":
        return (
            OFFSET_SYMBOL
            if v.name == str(OFFSET_SYMBOL)
            else sympy.Symbol(v.name, integer=True, nonnegative=True)
        )
    return sympy.Symbol(v.name, integer=True, nonnegative=True)


def to_sympy(e: Expr) -> Any:
    """The same value as a SymPy expression (floor, Mod, ceiling; Or and >= for conditions)."""
    if isinstance(e, Const):
        return sympy.Integer(e.value)
    if isinstance(e, Var):
        return _symbol(e)
    if isinstance(e, Bool):
        return sympy.true if e.value else sympy.false
    if isinstance(e, Sum):
        return sympy.Add(*(c * to_sympy(a) for a, c in e.terms), e.const)
    if isinstance(e, Product):
        return sympy.Mul(*(to_sympy(f) for f in e.factors))
    if isinstance(e, FloorDiv):
        return sympy.floor(to_sympy(e.num) / to_sympy(e.den))
    if isinstance(e, Mod):
        return safe_mod(to_sympy(e.num), to_sympy(e.den))
    if isinstance(e, CeilDiv):
        return sympy.ceiling(to_sympy(e.num) / to_sympy(e.den))
    if isinstance(e, Ge):
        return sympy.Ge(to_sympy(e.lhs), to_sympy(e.rhs))
    if isinstance(e, Or):
        return sympy.Or(*(to_sympy(a) for a in e.args))
    raise TypeError(f"not an expression: {e!r}")


def index_vars(rank: int) -> tuple[Var, ...]:
    """``i0, i1, ...`` (named like :func:`layout_algebra.meaning.layout_map.index_symbols`)."""
    return tuple(Var(str(s), "index") for s in index_symbols(rank))


#: The offset variable ``p`` (named like ``OFFSET_SYMBOL``).
OFFSET = Var(str(OFFSET_SYMBOL), "offset")
