"""Fitting a size condition to a grid of exact decisions: the numbers of the layouts, the
candidate atoms made of them, the grid of sizes, and the smallest and/or-formula that matches.

This is steps (1)-(3) of :mod:`layout_algebra.decide.conditions`: it sees only a truth table
(sizes -> the exact concrete decision), never proves anything; the formula it returns is
evidence until ``conditions.prove_sufficient`` and ``conditions.prove_necessary`` vouch for it.

>>> n = dim_symbol("N")
>>> table = sample(lambda s: s[n] % 8 == 0, [n], 32)
>>> fit(table, [n], atoms([as_shape("f32[N]{0:T(8)}")], [n], 32))
Eq(Mod(N, 8), 0)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import sympy

from layout_algebra.meaning.sizes import size_report
from layout_algebra.model.shapes import ArrayShape
from layout_algebra.model.symbols import dim_symbol  # noqa: F401  (the doctests)
from layout_algebra.model.syntax import as_shape  # noqa: F401  (the doctests)
from layout_algebra.prove.assumptions import condition_holds

__all__ = [
    "Literal",
    "atoms",
    "base_numbers",
    "fit",
    "grid_values",
    "numbers_of",
    "sample",
    "truth",
]

Sizes = Mapping[sympy.Symbol, int]


# ------------------------------------------------------------------------------- atoms
def numbers_of(shapes: Iterable[ArrayShape]) -> tuple[int, ...]:
    """The numbers a size condition can be made of: tile sizes, ``L(n)``, the packing
    factor of each tile (elements per 32-bit word), and constant dimensions, with their
    divisors, pairwise products and lcms (up to 1024).

    >>> numbers_of([as_shape("f32[N,128]{1,0:T(8,128)}")])[:8]
    (2, 4, 8, 16, 32, 64, 128, 256)
    """
    shapes = list(shapes)
    base = set(base_numbers(shapes))
    for s in shapes:
        base |= {int(d) for d in s.dimensions if isinstance(d, int) and d > 1}
    out: set[int] = set()
    for n in base:
        out |= {k for k in range(2, min(n, 1024) + 1) if n % k == 0}
    for x, y in itertools.combinations_with_replacement(sorted(out), 2):
        for z in (x * y, math.lcm(x, y)):
            if z <= 1024:
                out.add(z)
    return tuple(sorted(out))


@dataclass(frozen=True)
class Literal:
    """An atom or its negation, with its truth value at every grid point (a bitmask)."""

    expr: sympy.Basic
    mask: int
    cost: int


def atoms(shapes: Sequence[ArrayShape], symbols: Sequence[sympy.Symbol], bound: int) -> list[sympy.Basic]:
    """Candidate atoms: per symbol ``s``, ``Eq(Mod(s, k), 0)`` for each number ``k`` of the
    layouts, ``Eq(s, 1)`` and ``s <= c`` for those numbers below the grid bound.

    >>> n = dim_symbol("N")
    >>> atoms([as_shape("f32[N]{0:T(4)}")], [n], 8)
    [Eq(N, 1), Eq(Mod(N, 2), 0), Eq(Mod(N, 4), 0), Eq(Mod(N, 8), 0), Eq(Mod(N, 16), 0), N <= 2, N <= 4]
    """
    numbers = numbers_of(shapes)
    out: list[sympy.Basic] = []
    for s in symbols:
        out.append(sympy.Eq(s, 1))
        out += [sympy.Eq(sympy.Mod(s, k), 0) for k in numbers]
        out += [s <= c for c in numbers if c < bound]
    return out


def _negation(atom: sympy.Basic) -> sympy.Basic:
    if isinstance(atom, sympy.Eq) and atom.lhs.is_Symbol:  # Eq(N, 1) -> N >= 2
        return atom.lhs >= atom.rhs + 1
    if isinstance(atom, sympy.Le):
        return atom.lhs >= atom.rhs + 1
    return sympy.Ne(atom.lhs, atom.rhs)


# ------------------------------------------------------------------------------ sample
def base_numbers(shapes: Iterable[ArrayShape]) -> tuple[int, ...]:
    """The numbers written in the layouts: tile sizes and their products, ``L(n)``, packing factors."""
    base: set[int] = set()
    for s in shapes:
        layout = s.effective_layout
        for tile in layout.tiles:
            dims = [int(d) for d in tile.dimensions if isinstance(d, int) and d > 0]
            base |= {d for d in dims if d > 1}
            if math.prod(dims, start=1) > 1:
                base.add(math.prod(dims, start=1))
        if layout.tail_padding_alignment_in_elements:
            base.add(int(layout.tail_padding_alignment_in_elements))
        bits = size_report(s).element_bits
        if bits and bits < 32:
            base.add(32 // bits)
    return tuple(sorted(base))


def grid_values(shapes: Sequence[ArrayShape], bound: int, largest: int = 2048) -> tuple[int, ...]:
    """The sizes tried for each symbol: ``1..bound``; each candidate modulus ``k`` above
    it and ``k+1`` (up to ``largest``); and ``2k, 2k+1, 3k`` for each layout number ``k``.
    A condition such as ``N % 1024 == 0`` is seen even when ``bound`` is 64.

    >>> grid_values([as_shape("f32[N]{0:T(8)}")], 4)
    (1, 2, 3, 4, 8, 9, 16, 17, 24, 32, 33, 64, 65)
    """
    extra = {v for k in base_numbers(shapes) if k > bound for v in (2 * k, 2 * k + 1, 3 * k)}
    extra |= {v for k in numbers_of(shapes) if k > bound for v in (k, k + 1)}
    return tuple(sorted(set(range(1, bound + 1)) | {v for v in extra if v <= largest}))


def sample(
    decide: Callable[[Sizes], bool],
    symbols: Sequence[sympy.Symbol],
    values: int | Sequence[int],
    asks_at: Callable[[Sizes], bool] | None = None,
) -> dict[tuple[int, ...], bool]:
    """The truth table of ``decide`` over the grid: each symbol takes ``values``
    (``1..values`` when an int); points where ``asks_at`` is false (outside the claim's
    domain) are left out.

    >>> n = dim_symbol("N")
    >>> sample(lambda s: s[n] % 2 == 0, [n], 4)
    {(1,): False, (2,): True, (3,): False, (4,): True}
    >>> sample(lambda s: s[n] % 4 == 0, [n], 6, asks_at=lambda s: s[n] % 2 == 0)
    {(2,): False, (4,): True, (6,): False}
    """
    vals = range(1, values + 1) if isinstance(values, int) else values
    table = {}
    for p in itertools.product(vals, repeat=len(symbols)):
        sizes = dict(zip(symbols, p, strict=True))
        if asks_at is None or asks_at(sizes):
            table[p] = bool(decide(sizes))
    return table


def truth(expr: sympy.Basic, symbols: Sequence[sympy.Symbol], sizes: Sequence[int]) -> bool:
    """The value of a condition at concrete sizes (``True``/``False`` stay themselves).

    >>> n = dim_symbol("N")
    >>> truth(sympy.Eq(sympy.Mod(n, 8), 0) | (n <= 2), [n], [16]), truth(n >= 3, [n], [2])
    (True, False)
    """
    return condition_holds(expr, dict(zip(symbols, sizes, strict=True)))


# --------------------------------------------------------------------------------- fit
def fit(
    table: Mapping[tuple[int, ...], bool], symbols: Sequence[sympy.Symbol], candidates: Sequence[sympy.Basic]
) -> sympy.Basic | None:
    """The simplest and/or-formula over ``candidates`` (and their negations), at most
    four literals, that matches every row of ``table``; ``None`` when none does.

    Simplest: fewest literals; among those, the first in the candidates' order.

    >>> n = dim_symbol("N")
    >>> table = sample(lambda s: s[n] % 4 == 0 or s[n] == 1, [n], 16)
    >>> fit(table, [n], atoms([as_shape("f32[N]{0:T(4)}")], [n], 16))
    Eq(N, 1) | Eq(Mod(N, 4), 0)
    """
    points = list(table)
    full = (1 << len(points)) - 1
    target = sum(1 << k for k, p in enumerate(points) if table[p])
    if target == full:
        return sympy.true
    if target == 0:
        return sympy.false
    literals = _literals(points, symbols, candidates, full)
    dnf = _cover(target, full, literals)
    # an and of ors: the table's false rows are an or of and-terms of literals, and each
    # clause is the or of those literals' negations
    cnf = _cover(full & ~target, full, literals)
    best = None
    if dnf is not None:
        best = (dnf[0], _or_of_ands(dnf[1]))
    if cnf is not None and (best is None or cnf[0] < best[0]):
        best = (cnf[0], sympy.And(*[sympy.Or(*[_negation_any(t) for t in term]) for term in cnf[1]]))
    if best is None:
        return None
    # the formula is what the bounded necessity and the proofs rest on: it must match every
    # row it was fitted to, checked by evaluation, never assumed
    if any(truth(best[1], symbols, p) != table[p] for p in points):
        return None  # (a bug if ever reached: tests/decide/test_conditions.py checks fits on random tables)
    return best[1]


def _negation_any(expr: sympy.Basic) -> sympy.Basic:
    if isinstance(expr, sympy.Ne):
        return sympy.Eq(expr.lhs, expr.rhs)
    if isinstance(expr, sympy.Ge) and expr.lhs.is_Symbol:
        c = expr.rhs - 1
        return sympy.Eq(expr.lhs, 1) if c == 1 else expr.lhs <= c
    return _negation(expr)


def _or_of_ands(terms: Sequence[tuple[sympy.Basic, ...]]) -> sympy.Basic:
    return sympy.Or(*[sympy.And(*t) for t in terms])


def _literals(
    points: Sequence[tuple[int, ...]],
    symbols: Sequence[sympy.Symbol],
    candidates: Sequence[sympy.Basic],
    full: int,
) -> list[Literal]:
    """Candidates and their negations as bitmasks, one literal per distinct mask (the
    first, simplest, kept), constants dropped."""
    seen: set[int] = set()
    out: list[Literal] = []
    for cost, atom in enumerate(candidates):
        mask = sum(1 << k for k, p in enumerate(points) if truth(atom, symbols, p))
        for expr, m in ((atom, mask), (_negation(atom), full & ~mask)):
            if m in (0, full) or m in seen:
                continue
            seen.add(m)
            out.append(Literal(expr, m, cost))
    return out


def _cover(
    target: int, full: int, literals: Sequence[Literal]
) -> tuple[int, list[tuple[sympy.Basic, ...]]] | None:
    """At most four literals as an or of ands whose union is exactly ``target``:
    (number of literals, the and-terms)."""
    inside = [x for x in literals if x.mask & ~target == 0]  # literals that imply the target
    terms: list[tuple[int, int, tuple[sympy.Basic, ...]]] = [(1, x.mask, (x.expr,)) for x in inside]
    for x, y in itertools.combinations(literals, 2):
        m = x.mask & y.mask
        if m and m & ~target == 0 and m != x.mask and m != y.mask:
            terms.append((2, m, (x.expr, y.expr)))
    # maximal terms only: a term whose mask is inside another's of no more literals adds nothing
    terms.sort(key=lambda t: t[0])
    kept: list[tuple[int, int, tuple[sympy.Basic, ...]]] = []
    masks: dict[int, int] = {}
    for t in terms:
        if t[1] not in masks:
            masks[t[1]] = t[0]
            kept.append(t)
    for t in kept:
        if t[1] == target:
            return t[0], [t[2]]
    best = None
    for t, u in itertools.combinations(kept, 2):
        if t[1] | u[1] == target and (best is None or t[0] + u[0] < best[0]):
            best = (t[0] + u[0], [t[2], u[2]])
            if best[0] == 2:
                break
    if best is not None:
        return best
    singles = [t for t in kept if t[0] == 1]
    for t, u, v in itertools.combinations(singles, 3):
        if t[1] | u[1] | v[1] == target:
            return 3, [t[2], u[2], v[2]]
    return None
