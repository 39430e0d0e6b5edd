"""Checks of expressions and conditions with Z3: two SymPy expressions agree on a bounded
domain, a condition holds for all sizes, a layout adds no padding.

Every answer is a ``ProofResult`` as for the layout questions of ``prove.core``: ``proved``
only on unsat, ``refuted`` only with a counterexample evaluated again in SymPy.

>>> holds("N % 8 == 0", assume="N % 16 == 0").status
'proved'
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import sympy
import z3

from layout_algebra.meaning.sizes import size_report
from layout_algebra.model.errors import InvalidArgumentError
from layout_algebra.model.questions import Question
from layout_algebra.model.symbols import as_sympy
from layout_algebra.prove.assumptions import (
    Assumptions,
    UndefinedValue,
    assumption_terms,
    assumptions_hold,
    condition_holds,
    condition_term,
    parse_condition,
    parse_term,
    read_claim,
    value_of,
)
from layout_algebra.prove.core import DEFAULT_TIMEOUT_MS, admitted_assumptions, for_all_sizes, unless_vacuous
from layout_algebra.prove.encode import IntArithmetic, sympy_to_z3
from layout_algebra.prove.maps import as_index_map
from layout_algebra.prove.query import model_int, run_query, side_conditions, solver_for
from layout_algebra.prove.result import ProofResult, combined_lemmas

__all__ = ["expressions_equal", "holds", "no_padding"]


# -------------------------------------------------------------------- expression checks
def expressions_equal(
    lhs: Any,
    rhs: Any,
    bounds: Mapping[sympy.Symbol, Any],
    *,
    where: Any = None,
    assume: Assumptions = None,
    radix: Sequence[Any] | Mapping[Any, Sequence[Any]] | None = None,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> ProofResult:
    """Two SymPy expressions (or tuples of them) agree for every value of the bounded symbols.

    ``bounds`` maps each free index symbol to its exclusive upper bound (an int or an
    expression in dimension symbols); ``where`` restricts the domain further (e.g. "not
    padding"). Other free symbols are sizes, constrained by ``assume``.

    ``radix``: with one bounded symbol ``p`` (an offset), read ``p`` below the product of
    these sizes as the row-major number of digits in their box. That covers the same
    offsets (mixed-radix uniqueness) and makes every division of ``p`` by a suffix product
    of the sizes exact, so offsets into symbolic-size layouts can be decided. Offsets
    from that product up to the bound are a second query. A mapping ``{symbol: sizes}``
    does the same for several bounded symbols (a logical index and its tile sizes).

    >>> import sympy
    >>> i = sympy.Symbol("i", integer=True, nonnegative=True)
    >>> expressions_equal(sympy.floor(sympy.floor(i / 2) / 4), sympy.floor(i / 8), {i: 1000}).status
    'proved'
    >>> r = expressions_equal(sympy.Mod(i, 128), i, {i: 200})
    >>> r.status, r.counterexample["i"] >= 128
    ('refuted', True)
    """
    assumptions, caveat = admitted_assumptions(assume, indices=tuple(bounds))
    return unless_vacuous(_expressions_equal(lhs, rhs, bounds, where, assumptions, radix, timeout_ms), caveat)


def _expressions_equal(lhs, rhs, bounds, where, assumptions, radix, timeout_ms: int) -> ProofResult:
    where = None if where is None else parse_condition(where, "condition")  # text: the grammar, never sympify
    left = tuple(lhs) if isinstance(lhs, (tuple, list)) else (lhs,)
    right = tuple(rhs) if isinstance(rhs, (tuple, list)) else (rhs,)
    left, right = (tuple(parse_term(e) if isinstance(e, str) else e for e in side) for side in (left, right))
    bounds = {s: parse_term(b) if isinstance(b, str) else b for s, b in bounds.items()}
    if len(left) != len(right):
        raise InvalidArgumentError(f"{len(left)} expressions cannot equal {len(right)}")
    claim = f"{_short(lhs)} == {_short(rhs)}"
    if radix is not None:
        return _equal_on_digits(left, right, bounds, where, assumptions, radix, timeout_ms, claim)

    def build():
        ar = IntArithmetic()
        constraints = assumption_terms(assumptions, ar)
        variables = {s: ar.symbol(s) for s in bounds}
        for s, bound in bounds.items():
            constraints.append(
                variables[s] < ar.lift(bound) if not isinstance(bound, int) else variables[s] < bound
            )
        differ = z3.Or(*[_z3_value(a, ar) != _z3_value(b, ar) for a, b in zip(left, right, strict=True)])
        if where is not None:
            constraints.append(_z3_condition(where, ar))
        s = solver_for(None, timeout_ms, fast_first=True)
        s.add(*constraints, differ, *ar.side, *ar.obligations)
        side = side_conditions(ar, constraints, timeout_ms)

        return s, _recheck_equal(ar, left, right, bounds, where, assumptions), side

    return run_query(claim, "integer", build)


def _equal_on_digits(
    left, right, bounds, where, assumptions, radix, timeout_ms: int, claim: str
) -> ProofResult:
    """``expressions_equal`` with bounded symbols read as mixed-radix numbers (see ``radix``)."""
    if not isinstance(radix, Mapping):
        if len(bounds) != 1:
            raise InvalidArgumentError("radix needs exactly one bounded symbol (the offset)")
        radix = {next(iter(bounds)): radix}
    unknown = [s for s in radix if s not in bounds]
    if unknown:
        raise InvalidArgumentError(f"radix names symbols without a bound: {unknown}")
    boxes = {s: [as_sympy(d) for d in sizes] for s, sizes in radix.items()}
    products = {s: math.prod(sizes, start=sympy.Integer(1)) for s, sizes in boxes.items()}
    start = time.perf_counter()

    def build():
        ar = IntArithmetic()
        constraints = assumption_terms(assumptions, ar)
        for s, bound in bounds.items():
            if s in boxes:  # s is the row-major number of its digits
                digits = [ar.variable(f"{s}_d{k}") for k in range(len(boxes[s]))]
                constraints += [d < ar.lift(size) for d, size in zip(digits, boxes[s], strict=True)]
                ar.symbols[s] = ar.number(digits, boxes[s])
            constraints.append(ar.symbol(s) < ar.lift(bound))
        if where is not None:
            constraints.append(_z3_condition(where, ar))
        differ = z3.Or(*[_z3_value(a, ar) != _z3_value(b, ar) for a, b in zip(left, right, strict=True)])
        s = solver_for(None, timeout_ms, fast_first=True)
        s.add(*constraints, differ, *ar.side, *ar.obligations)
        return (
            s,
            _recheck_equal(ar, left, right, bounds, where, assumptions),
            side_conditions(ar, constraints, timeout_ms),
        )

    shown = ", ".join(f"{s} < {_short(products[s])}" for s in boxes)
    lemmas = [run_query(f"{claim}, {shown} as digits", "integer, bounded symbols as digits", build)]
    # the tail: values at or past a box's product that are still below their bound
    past = [s >= products[s] for s in boxes if not _at_most(bounds[s], products[s], assumptions, timeout_ms)]
    if past:
        tail = sympy.Or(*past) if where is None else sympy.And(sympy.Or(*past), where)
        lemmas.append(
            expressions_equal(left, right, bounds, where=tail, assume=assumptions, timeout_ms=timeout_ms)
        )
    return combined_lemmas(claim, lemmas, start)


def _at_most(bound: Any, product: Any, assumptions, timeout_ms: int) -> bool:
    """Whether ``bound <= product`` is proved (then no value of the symbol lies past its box)."""
    relation = as_sympy(bound) <= product
    if relation in (sympy.true, sympy.false):
        return bool(relation)
    return holds(relation, assume=assumptions, timeout_ms=min(timeout_ms, 5_000)).proved


def _recheck_equal(ar: IntArithmetic, left, right, bounds, where, assumptions) -> Callable:
    def recheck(model: z3.ModelRef) -> dict[str, Any] | None:
        values = {s: model_int(model, v) for s, v in ar.symbols.items()}
        if not assumptions_hold(assumptions, values):
            return None
        for s, bound in bounds.items():
            if not 0 <= values[s] < int(as_sympy(bound).subs(values)):
                return None
        try:
            if where is not None and not condition_holds(where, values):
                return None
        except UndefinedValue:
            return None
        la = [as_sympy(a).subs(values) for a in left]
        rb = [as_sympy(b).subs(values) for b in right]
        if la == rb:
            return None
        return {
            **{str(k): v for k, v in values.items()},
            "lhs": tuple(map(int, la)),
            "rhs": tuple(map(int, rb)),
        }

    return recheck


def holds(
    condition: Any,
    bounds: Mapping[sympy.Symbol, Any] | None = None,
    *,
    assume: Assumptions = None,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> ProofResult:
    """A condition holds for every value of its symbols (``0 <= s < bound`` for those in ``bounds``).

    ``condition`` is a SymPy condition or text in the grammar of ``prove.assumptions``
    (never evaluated). Names in text are sizes: integers >= 0. A SymPy symbol means what
    it is declared to be: ``integer=True`` alone may be negative, ``nonnegative`` or
    ``positive`` add what they say; a symbol not declared an integer gives ``unknown``.
    A claim that divides by a symbolic ``d`` (``N % M``, ``ceiling(N/M)``) means nothing
    where ``d`` is 0: ``d >= 1`` is a side condition that must follow from the
    assumptions, else the answer is ``unknown`` (never ``proved``, nor a crash).

    >>> import sympy
    >>> n = sympy.Symbol("N", integer=True, nonnegative=True)
    >>> holds(1024 * sympy.ceiling(n / 1024) >= n).status
    'proved'
    >>> holds("ceiling(N/128)*128 >= N").status
    'proved'
    >>> holds("N % 8 == 0", assume="N % 16 == 0").status
    'proved'
    >>> holds("N % M < M").status
    'unknown'
    >>> holds("N % M < M", assume="M >= 1").status
    'proved'
    >>> k = sympy.Symbol("k", integer=True)  # an integer, not a size: it may be negative
    >>> r = holds(k >= 0)
    >>> r.status, r.counterexample["k"] < 0
    ('refuted', True)
    """
    bounds = dict(bounds or {})
    assumptions, caveat = admitted_assumptions(assume, indices=tuple(bounds), declared_signs=True)
    condition, domain = read_claim(condition)
    claim = f"{_short(condition)} {for_all_sizes(assumptions)}"
    return unless_vacuous(_holds(claim, condition, domain, bounds, assumptions, timeout_ms), caveat)


def _holds(claim: str, condition, domain, bounds, assumptions, timeout_ms: int) -> ProofResult:
    hypotheses = (*assumptions, *domain)

    def build():
        ar = IntArithmetic(declared_signs=True)
        constraints = assumption_terms(assumptions, ar)
        for s, bound in bounds.items():
            constraints += [ar.symbol(s) >= 0, ar.symbol(s) < ar.lift(bound)]
        # divisors >= 1: proved from the context, never assumed (context=False)
        ar.obligations += assumption_terms(domain, ar, context=False)
        goal = condition_term(condition, ar)
        solver = solver_for(None, timeout_ms, fast_first=True)
        solver.add(*constraints, z3.Not(goal), *ar.side, *ar.obligations)

        def recheck(model: z3.ModelRef) -> dict[str, Any] | None:
            values = {s: model_int(model, v) for s, v in ar.symbols.items()}
            try:
                if not assumptions_hold(hypotheses, values) or condition_holds(condition, values):
                    return None
                if any(not 0 <= values[s] < value_of(bound, values) for s, bound in bounds.items()):
                    return None
            except UndefinedValue:
                return None
            # a claim without symbols (``1 >= 2``) is refuted by its own value
            return {str(k): v for k, v in values.items()} or {"value": False}

        return solver, recheck, side_conditions(ar, constraints, timeout_ms)

    return run_query(claim, "integer", build)


def no_padding(
    shape: Any, *, assume: Assumptions = None, timeout_ms: int = DEFAULT_TIMEOUT_MS
) -> ProofResult:
    """The layout adds no padding slot: its exact buffer (every tile level, ``L(n)``) has as
    many element slots as the array has elements. For the sizes where this holds, see
    ``layout_algebra.decide.conditions.when_no_padding``.

    >>> no_padding("f32[N,128]{1,0:T(8,128)}", assume="N % 8 == 0").status
    'proved'
    >>> no_padding("f32[N,128]{1,0:T(8,128)}").counterexample["N"] % 8 != 0
    True
    """
    report = size_report(as_index_map(shape).shape)
    assumptions, caveat = admitted_assumptions(assume, shapes=(report.shape,))
    physical, logical = as_sympy(report.physical_elements), as_sympy(report.logical_elements)
    result = unless_vacuous(
        holds(sympy.Eq(physical, logical), assume=assumptions, timeout_ms=timeout_ms), caveat
    )
    claim = f"{report.shape} adds no padding ({physical} slots for {logical} elements)"
    return dataclasses.replace(
        result, claim=claim, question=Question("no_padding", (report.shape,), assume=tuple(assumptions))
    )


def _z3_value(expr: Any, ar: IntArithmetic) -> Any:
    value = sympy_to_z3(expr, ar)
    return z3.IntVal(value) if isinstance(value, int) else value


def _z3_condition(cond: Any, ar: IntArithmetic) -> Any:
    return condition_term(parse_condition(cond, "condition"), ar)


def _short(value: Any, limit: int = 80) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
