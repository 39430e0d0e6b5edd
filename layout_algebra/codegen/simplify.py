"""Simplification a person would do by hand, one small named rule at a time, each sound.

The stages produce a faithful but clumsy closed form: ``⌊x/1⌋`` for a tile of size 1,
``(i mod 8) mod 2`` after a second tile level, ``i mod 128`` on an index that is already
below 128. The rules here remove what the index *ranges* make trivial and merge what
arithmetic identities allow. Each rule is a function ``rule(expr, bounds) -> expr | None``
that returns ``None`` unless its side condition is proved from the bounds (every index
``i_k`` lies in ``[0, d_k)``, the offset ``p`` in ``[0, size)``, a dimension size is ``>= 1``).

==============================  ============================================================
rule                            identity (side condition)
==============================  ============================================================
``division_by_one``             ``⌊x/1⌋ = x``, ``x mod 1 = 0``, ``⌊0/d⌋ = 0 mod d = 0``
``remainder_below_divisor``     ``x mod d = x``              (``0 <= x < d``)
``quotient_fixed_by_range``     ``⌊x/d⌋ = q``                (``x`` in ``[q·d, q·d + d)``)
``nested_floordiv``             ``⌊⌊x/a⌋/b⌋ = ⌊x/(a·b)⌋``      (``a, b >= 1``)
``mod_of_mod``                  ``(x mod a) mod b = x mod b``  (``b`` divides ``a``)
``floordiv_of_mod``             ``⌊(x mod a·b)/a⌋ = ⌊x/a⌋ mod b``
``multiples_out_of_floordiv``   ``⌊(d·A + R)/d⌋ = A + ⌊R/d⌋``, ``⌊g·Y/(g·e)⌋ = ⌊Y/e⌋``
``multiples_out_of_mod``        ``(d·A + R) mod d = R mod d``, ``g·Y mod g·e = g·(Y mod e)``
``merge_quotient_remainder``    ``c·m·⌊y/(B·m)⌋ + c·(⌊y/B⌋ mod m) = c·⌊y/B⌋``   (merges strides)
``comparison_fixed_by_range``   ``x >= c`` is true (false) when ``x``'s range says so
==============================  ============================================================

All values are integers, so the identities need no other condition. Worked example,
the second tile of bf16's ``(8,128)(2,1)``: the stages split ``i0 mod 8`` again by 2:

>>> from layout_algebra.codegen.expr import Var, floordiv, mod
>>> i0 = Var("i0")
>>> b = Bounds({"i0": (0, 15)})
>>> simplify(floordiv(mod(i0, 8), 2), b)
Mod(FloorDiv(i0, 2), 4)
>>> simplify(mod(mod(i0, 8), 2), b)
Mod(i0, 2)
>>> simplify(mod(i0, 128), b), simplify(floordiv(i0, 16), b)
(i0, 0)

Strides merge when a quotient and its remainder meet again (an untiled dimension read
back from an offset ``p < 4096``):

>>> p = Var("p", "offset")
>>> log = []
>>> simplify(floordiv(p, 1024) * 8 + mod(floordiv(p, 128), 8), Bounds({"p": (0, 4095)}), log)
FloorDiv(p, 128)
>>> log
['merge_quotient_remainder']

:func:`factor_strides` then pulls common strides out of sums when that saves
multiplications (``1024·C·a + 1024·b = 1024·(C·a + b)``). Soundness is tested by
evaluating each rule's input and output on every point of small boxes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import combinations

from layout_algebra.codegen.expr import (
    FALSE,
    TRUE,
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
    any_of,
    ceildiv,
    floordiv,
    ge,
    mod,
    mul,
    scale,
    term_order,
)

__all__ = ["RULES", "Bounds", "factor_strides", "simplify"]

#: A range: ``(lo, hi)``, both inclusive; ``None`` is unbounded (``-∞`` for lo, ``+∞`` for hi).
Range = tuple[int | None, int | None]


class Bounds:
    """Inclusive ranges of variables, and of any expression over them (interval arithmetic).

    Variables not listed: dimension sizes are ``>= 1``, anything else ``>= 0``.

    >>> b = Bounds({"i0": (0, 99)})
    >>> b.range(Var("i0") * 4 + 3), b.range(floordiv(Var("i0"), 8)), b.range(mod(Var("i0"), 8))
    ((3, 399), (0, 12), (0, 7))
    """

    def __init__(self, variables: Mapping[str, Range] | None = None) -> None:
        self.variables = dict(variables or {})
        self._memo: dict[Expr, Range] = {}

    def range(self, e: Expr) -> Range:
        if e not in self._memo:
            self._memo[e] = self._range(e)
        return self._memo[e]

    def nonnegative(self, e: Expr) -> bool:
        lo = self.range(e)[0]
        return lo is not None and lo >= 0

    def positive(self, e: Expr) -> bool:
        lo = self.range(e)[0]
        return lo is not None and lo >= 1

    def _range(self, e: Expr) -> Range:
        if isinstance(e, Const):
            return (e.value, e.value)
        if isinstance(e, Var):
            if e.name in self.variables:
                return self.variables[e.name]
            return (1, None) if e.kind == "dim" else (0, None)
        if isinstance(e, Sum):
            lo: int | None = e.const
            hi: int | None = e.const
            for a, c in e.terms:
                alo, ahi = self.range(a)
                tlo, thi = (alo, ahi) if c > 0 else (ahi, alo)
                lo = None if lo is None or tlo is None else lo + c * tlo
                hi = None if hi is None or thi is None else hi + c * thi
            return (lo, hi)
        if isinstance(e, Product):
            ranges = [self.range(f) for f in e.factors]
            if any(r[0] is None or r[0] < 0 for r in ranges):
                return (None, None)
            lo, hi = 1, 1
            for flo, fhi in ranges:
                lo = lo * flo
                hi = None if hi is None or fhi is None else hi * fhi
            return (lo, hi)
        if isinstance(e, (FloorDiv, CeilDiv)):
            (xlo, xhi), (dlo, dhi) = self.range(e.num), self.range(e.den)
            if xlo is None or xlo < 0 or dlo is None or dlo < 1:
                return (None, None)
            if isinstance(e, FloorDiv):
                return (xlo // dhi if dhi is not None else 0, xhi // dlo if xhi is not None else None)
            return (-(-xlo // dhi) if dhi is not None else 0, -(-xhi // dlo) if xhi is not None else None)
        if isinstance(e, Mod):
            (xlo, xhi), (dlo, dhi) = self.range(e.num), self.range(e.den)
            if xlo is None or xlo < 0 or dlo is None or dlo < 1:
                return (None, None)
            if dlo == dhi and xhi is not None and xlo // dlo == xhi // dlo:
                return (xlo % dlo, xhi % dlo)
            his = [h for h in (xhi, None if dhi is None else dhi - 1) if h is not None]
            return (0, min(his) if his else None)
        raise TypeError(f"{e!r} has no integer range")


# ---------------------------------------------------------------------------- the rules
Rule = Callable[[Expr, Bounds], Expr | None]


def _const(e: Expr) -> int | None:
    return e.value if isinstance(e, Const) else None


def division_by_one(e: Expr, b: Bounds) -> Expr | None:
    """``⌊x/1⌋ = ⌈x/1⌉ = x``, ``x mod 1 = 0``, and ``⌊0/d⌋ = 0 mod d = 0``."""
    if isinstance(e, (FloorDiv, CeilDiv, Mod)):
        if _const(e.den) == 1:
            return Const(0) if isinstance(e, Mod) else e.num
        if _const(e.num) == 0 and b.positive(e.den):
            return Const(0)
    return None


def remainder_below_divisor(e: Expr, b: Bounds) -> Expr | None:
    """``x mod d = x`` when ``0 <= x < d`` (e.g. ``i mod 128`` for ``i < 128``)."""
    if isinstance(e, Mod):
        (xlo, xhi), (dlo, _) = b.range(e.num), b.range(e.den)
        if xlo is not None and xlo >= 0 and xhi is not None and dlo is not None and xhi < dlo:
            return e.num
    return None


def quotient_fixed_by_range(e: Expr, b: Bounds) -> Expr | None:
    """``⌊x/d⌋ = q`` when every ``x`` in range has the same quotient (``⌊i/8⌋ = 0`` for ``i < 8``)."""
    if isinstance(e, FloorDiv):
        lo, hi = b.range(e)
        if lo is not None and lo == hi and b.nonnegative(e.num) and b.positive(e.den):
            return Const(lo)
    return None


def nested_floordiv(e: Expr, b: Bounds) -> Expr | None:
    """``⌊⌊x/a⌋/b⌋ = ⌊x/(a·b)⌋`` for ``a, b >= 1``."""
    if isinstance(e, FloorDiv) and isinstance(e.num, FloorDiv):
        inner = e.num
        if b.positive(inner.den) and b.positive(e.den):
            return floordiv(inner.num, mul(inner.den, e.den))
    return None


def mod_of_mod(e: Expr, b: Bounds) -> Expr | None:
    """``(x mod a) mod b = x mod b`` when ``b`` divides ``a``."""
    if isinstance(e, Mod) and isinstance(e.num, Mod):
        a, d = _const(e.num.den), _const(e.den)
        if a is not None and d is not None and d >= 1 and a % d == 0:
            return mod(e.num.num, d)
    return None


def floordiv_of_mod(e: Expr, b: Bounds) -> Expr | None:
    """``⌊(x mod m)/a⌋ = ⌊x/a⌋ mod (m/a)`` when ``a`` divides ``m`` (quotient first, then remainder)."""
    if isinstance(e, FloorDiv) and isinstance(e.num, Mod):
        m, a = _const(e.num.den), _const(e.den)
        if m is not None and a is not None and a >= 1 and m % a == 0:
            return mod(floordiv(e.num.num, a), m // a)
    return None


def _split_multiples(e: Sum, d: int) -> tuple[Expr, Expr] | None:
    """``e = d·A + R``: ``(A, R)``, or ``None`` if no term is a multiple of ``d``."""
    quotient: dict[Expr, int] = {}
    rest: dict[Expr, int] = {}
    for a, c in e.terms:
        (quotient if c % d == 0 else rest)[a] = c // d if c % d == 0 else c
    q, r = divmod(e.const, d)
    if not quotient and q == 0:
        return None
    return add(*(scale(a, c) for a, c in quotient.items()), Const(q)), add(
        *(scale(a, c) for a, c in rest.items()), Const(r)
    )


def _common_factor(e: Sum, d: int) -> int:
    g = d
    for _, c in e.terms:
        g = _gcd(g, c)
    return _gcd(g, e.const)


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return abs(a)


def multiples_out_of_floordiv(e: Expr, b: Bounds) -> Expr | None:
    """``⌊(d·A + R)/d⌋ = A + ⌊R/d⌋`` and ``⌊g·Y/(g·e)⌋ = ⌊Y/e⌋`` (integers ``A``, ``R``, ``Y``)."""
    if isinstance(e, FloorDiv) and isinstance(e.num, Sum):
        d = _const(e.den)
        if d is None or d < 1:
            return None
        split = _split_multiples(e.num, d)
        if split is not None:
            quotient, rest = split
            return add(quotient, floordiv(rest, d))
        g = _common_factor(e.num, d)
        if g > 1:
            return floordiv(scale_down(e.num, g), d // g)
    return None


def multiples_out_of_mod(e: Expr, b: Bounds) -> Expr | None:
    """``(d·A + R) mod d = R mod d`` and ``(g·Y) mod (g·e) = g·(Y mod e)``."""
    if isinstance(e, Mod) and isinstance(e.num, Sum):
        d = _const(e.den)
        if d is None or d < 1:
            return None
        split = _split_multiples(e.num, d)
        if split is not None:
            return mod(split[1], d)
        g = _common_factor(e.num, d)
        if g > 1:
            return scale(mod(scale_down(e.num, g), d // g), g)
    return None


def scale_down(e: Sum, g: int) -> Expr:
    """``e / g`` for a sum whose coefficients and constant are multiples of ``g``."""
    return add(*(scale(a, c // g) for a, c in e.terms), Const(e.const // g))


def _as_quotient(e: Expr) -> tuple[Expr, int]:
    """``e`` as ``⌊y/B⌋`` with a constant ``B`` (``B = 1`` when ``e`` is not a quotient)."""
    if isinstance(e, FloorDiv) and isinstance(e.den, Const):
        return e.num, e.den.value
    return e, 1


def merge_quotient_remainder(e: Expr, b: Bounds) -> Expr | None:
    """``c·m·⌊y/(B·m)⌋ + c·(⌊y/B⌋ mod m) = c·⌊y/B⌋``: a quotient and its remainder merge back.

    This is ``m·⌊z/m⌋ + z mod m = z`` with ``z = ⌊y/B⌋`` (and ``⌊⌊y/B⌋/m⌋ = ⌊y/(B·m)⌋``).
    """
    if not isinstance(e, Sum):
        return None
    terms = dict(e.terms)
    for remainder, c in e.terms:
        if not isinstance(remainder, Mod) or _const(remainder.den) is None:
            continue
        m = remainder.den.value
        y, base = _as_quotient(remainder.num)
        quotient = floordiv(y, base * m) if base * m != 1 else y
        if terms.get(quotient) == c * m and quotient != remainder:
            del terms[quotient]
            del terms[remainder]
            terms[remainder.num] = terms.get(remainder.num, 0) + c
            return add(*(scale(a, k) for a, k in terms.items()), Const(e.const))
    return None


def comparison_fixed_by_range(e: Expr, b: Bounds) -> Expr | None:
    """``x >= y`` is ``True`` when ``min x >= max y``, ``False`` when ``max x < min y``."""
    if isinstance(e, Ge):
        (xlo, xhi), (ylo, yhi) = b.range(e.lhs), b.range(e.rhs)
        if xlo is not None and yhi is not None and xlo >= yhi:
            return TRUE
        if xhi is not None and ylo is not None and xhi < ylo:
            return FALSE
    return None


#: The rules, tried in this order at every node until none applies.
RULES: tuple[Rule, ...] = (
    division_by_one,
    remainder_below_divisor,
    quotient_fixed_by_range,
    nested_floordiv,
    mod_of_mod,
    floordiv_of_mod,
    multiples_out_of_floordiv,
    multiples_out_of_mod,
    merge_quotient_remainder,
    comparison_fixed_by_range,
)


# ---------------------------------------------------------------------------- the driver
def rebuild(e: Expr, children: tuple[Expr, ...]) -> Expr:
    """``e`` with new children, through the smart constructors (sums re-collected)."""
    if isinstance(e, (Const, Var, Bool)):
        return e
    if isinstance(e, Sum):
        return add(*(scale(a, c) for a, (_, c) in zip(children, e.terms, strict=True)), Const(e.const))
    if isinstance(e, Product):
        out: Expr = Const(1)
        for f in children:
            out = mul(out, f)
        return out
    make = {FloorDiv: floordiv, Mod: mod, CeilDiv: ceildiv, Ge: ge}.get(type(e))
    if make is not None:
        return make(*children)
    if isinstance(e, Or):
        return any_of(children)
    raise TypeError(f"not an expression: {e!r}")


def simplify(
    e: Expr, bounds: Bounds, log: list[str] | None = None, rules: tuple[Rule, ...] | None = None
) -> Expr:
    """``e`` rewritten bottom-up by ``rules`` (default :data:`RULES`) until none applies; ``log`` collects rule names."""
    rules = RULES if rules is None else rules
    memo: dict[Expr, Expr] = {}
    trail = log if log is not None else []

    def go(node: Expr, depth: int = 0) -> Expr:
        if node in memo:
            return memo[node]
        if depth > 200:  # pragma: no cover - the rules shrink or reorient; never expected
            raise RecursionError(f"simplification does not terminate on {node!r}")
        current = rebuild(node, tuple(go(c, depth + 1) for c in node.children))
        changed = True
        while changed:
            changed = False
            for rule in rules:
                out = rule(current, bounds)
                if out is not None and out != current:
                    trail.append(rule.__name__)
                    current = go(out, depth + 1)
                    changed = True
                    break
        memo[node] = current
        return current

    return go(e)


# ---------------------------------------------------------------------------- presentation
def factor_strides(e: Expr) -> Expr:
    """Pull a common coefficient out of sum terms when that saves multiplications.

    ``1024·C·a + 1024·b + 8·c`` becomes ``1024·(C·a + b) + 8·c`` (two multiplications by
    1024 become one). Distributivity only; applied greedily while it helps.

    >>> from layout_algebra.codegen.expr import Var, add, ops, scale
    >>> e = add(scale(Var("a"), 4), scale(Var("b"), 4), scale(Var("c"), 2))
    >>> factor_strides(e), ops(e), ops(factor_strides(e))
    (Sum(Sum(a + b)*4 + c*2), 5, 4)
    """
    if isinstance(e, (Const, Var, Bool)):
        return e
    children = tuple(factor_strides(c) for c in e.children)
    if isinstance(e, Sum):
        return _factor_sum([(c, k) for c, (_, k) in zip(children, e.terms, strict=True)], e.const)
    return _raw_rebuild(e, children)


def _raw_rebuild(e: Expr, children: tuple[Expr, ...]) -> Expr:
    if isinstance(e, Product):
        return Product(children)
    if isinstance(e, (FloorDiv, Mod, CeilDiv, Ge)):
        return type(e)(*children)
    if isinstance(e, Or):
        return Or(children)
    raise TypeError(f"not an expression: {e!r}")  # pragma: no cover


def _factor_sum(terms: list[tuple[Expr, int]], const: int) -> Expr:
    while True:
        best: tuple[int, int] | None = None  # (saving, g)
        coefficients = sorted({abs(c) for _, c in terms if abs(c) > 1})
        candidates = set(coefficients) | {_gcd(a, b) for a, b in combinations(coefficients, 2)}
        for g in sorted(candidates - {1}):
            group = [c for _, c in terms if c > 0 and c % g == 0]
            saving = len(group) - 1 - sum(1 for c in group if c // g != 1)
            if len(group) >= 2 and saving > 0 and (best is None or saving > best[0]):
                best = (saving, g)
        if best is None:
            break
        g = best[1]
        inner = [(a, c // g) for a, c in terms if c > 0 and c % g == 0]
        outer = [(a, c) for a, c in terms if not (c > 0 and c % g == 0)]
        inner_sum = _factor_sum(inner, 0)
        terms = [*outer, (inner_sum, g)]
    if len(terms) == 1 and terms[0][1] == 1 and const == 0:
        return terms[0][0]
    return Sum(tuple(sorted(terms, key=term_order)), const)
