"""The prover: injectivity, bounds and equivalence of layout maps, with Z3.

A layout's injectivity and bounds are proved by composition: each stage of its pipeline
is injective and maps its box into the next stage's box. With concrete sizes every stage
is an instance of a general stage whose sizes are symbols (``prove.general``), proved once
for all sizes and then reused, so a layout costs no solver call. With symbolic sizes each
stage is proved under the assumptions. Other maps (and ``method="direct"``) get one
query: linear integer arithmetic on the digits of the tiled index, or bit-vectors sized
from interval bounds with explicit quotient/remainder variables; concrete questions
never end ``unknown``.

>>> from layout_algebra import prove
>>> prove.injective("bf16[16,256]{1,0:T(8,128)(2,1)}").status
'proved'
>>> prove.in_bounds("f32[N,M]{1,0:T(8,128)}").status
'proved'
>>> r = prove.in_bounds("s16[1000,200]{0,1:T(1,128)(2,1)}", allocation="xla")
>>> r.status, r.counterexample["element"], r.counterexample["position"] >= r.counterexample["allocated"]
('refuted', (0, 128), True)
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

import sympy
import z3

from layout_algebra.meaning.sizes import size_report
from layout_algebra.meaning.stages.arith import ARITHMETIC
from layout_algebra.meaning.stages.stages import Combine, Linearize, Stage
from layout_algebra.model.errors import InvalidArgumentError
from layout_algebra.model.internal_names import lemma_names
from layout_algebra.model.questions import Question
from layout_algebra.model.symbols import as_sympy
from layout_algebra.prove.assumptions import (
    Assumptions,
    AssumptionsAdmitNoSizes,
    UndefinedValue,
    assumption_terms,
    assumptions_hold,
    condition_text,
    parse_assumptions,
    sizes_exist,
    value_of,
)
from layout_algebra.prove.encode import (
    BitVecArithmetic,
    IntArithmetic,
    IntervalArithmetic,
    UnsupportedExpression,
    bitvector_width,
)
from layout_algebra.prove.general import GeneralStage, general_stage, instance_of, specialize_stage
from layout_algebra.prove.maps import (
    IndexMap,
    as_index_map,
    formula_reference,
    layout_index_map,
    pad_reshape_transpose_reference,
    position_stages,
)
from layout_algebra.prove.query import (
    as_bool,
    differ,
    in_box,
    model_int,
    run_query,
    side_conditions,
    small_model,
    solver_for,
    symbol_values,
)
from layout_algebra.prove.result import DEFAULT_TIMEOUT_MS, ProofResult, combined_lemmas

__all__ = [
    "DEFAULT_TIMEOUT_MS",
    "Assumptions",
    "equivalent",
    "in_bounds",
    "injective",
    "parse_assumptions",
    "tiling_is_pad_reshape_transpose",
]


MapLike = IndexMap | str | Any


# ------------------------------------------------------------------------- assumptions
# Read by ``prove.assumptions`` (a grammar, never evaluated); the private names stay for
# the modules that still import them.
_assumption_terms = assumption_terms
_assumptions_hold = assumptions_hold


def admitted_assumptions(
    assume: Assumptions,
    *,
    indices: Sequence[sympy.Symbol] = (),
    declared_signs: bool = False,
    shapes: Sequence[Any] = (),
) -> tuple[tuple[sympy.Basic, ...], str | None]:
    """Parsed assumptions with the asked shapes' own conditions after them, checked to admit
    some sizes, and the reason a proof under them cannot be trusted (``None`` when sizes
    exist; see ``prove.assumptions.sizes_exist``).

    Every public question of the prover starts here: assumptions no sizes satisfy raise
    ``AssumptionsAdmitNoSizes`` (a ``ValueError``) instead of giving a vacuous proof.
    ``shapes``: the arrays asked about. Each symbolic dimension must be a whole size >= 0
    (:func:`shape_facts`): those facts are the question's domain, returned among the
    assumptions, so every query, side condition and re-check downstream quantifies over
    exactly the sizes at which the arrays exist (``f32[N/8]`` is asked about every
    ``N % 8 == 0``; under ``N == 3`` it admits none; XLA allows zero-size dimensions).

    >>> from layout_algebra.model.syntax import as_shape
    >>> admitted_assumptions("N >= 8", shapes=[as_shape("f32[N/8,128]")])
    ((N >= 8, Eq(Mod(N, 8), 0)), None)
    """
    assumptions = parse_assumptions(assume)
    facts = shape_facts(shapes)
    try:
        caveat = sizes_exist(assumptions, indices=indices, declared_signs=declared_signs, facts=facts)
    except AssumptionsAdmitNoSizes as err:
        texts = [assume] if isinstance(assume, str) else assume
        quoted = None
        if isinstance(texts, (list, tuple)) and texts and all(isinstance(t, str) for t in texts):
            quoted = ", ".join(texts)
        named = [s for s in shapes if facts and getattr(s, "is_symbolic", False)]
        raise AssumptionsAdmitNoSizes(err.assumptions, quoted, named) from None
    return (*assumptions, *(f for f in facts if f not in assumptions)), caveat


def shape_facts(shapes: Sequence[Any]) -> tuple[sympy.Basic, ...]:
    """What a symbolic array's dimensions need to be sizes: each formula a whole number
    (``N/8``: ``N % 8 == 0``) and at least 0 (XLA allows zero-size dimensions). A formula
    SymPy knows to be nonnegative from its symbols alone (``N/8``, ``A*B``: sizes are
    integers >= 0) needs no fact; left in, a product such as ``A*B >= 0`` would only hand
    the solver a nonlinear constraint.

    >>> from layout_algebra.model.syntax import as_shape
    >>> shape_facts([as_shape("f32[N/8,M-1,A*B]")])
    (Eq(Mod(N, 8), 0), M - 1 >= 0)
    """
    facts: list[sympy.Basic] = []
    for shape in shapes:
        if not getattr(shape, "is_symbolic", False):
            continue
        for d in shape.dimensions:  # each formula a whole number, read from the shape itself:
            if isinstance(d, int):  # its symbols may be internal names no assumption text can spell
                continue
            numerator, denominator = sympy.fraction(sympy.together(as_sympy(d)))
            if denominator != 1:
                whole = sympy.Eq(sympy.Mod(numerator, denominator), 0)
                if whole not in facts:
                    facts.append(whole)
        for d in shape.dimensions:
            if not isinstance(d, int) and as_sympy(d).is_nonnegative is not True:
                fact = sympy.Ge(as_sympy(d), 0, evaluate=False)
                if fact not in facts:
                    facts.append(fact)
    return tuple(facts)


def unless_vacuous(result: ProofResult, caveat: str | None) -> ProofResult:
    """``result``, but ``unknown`` with ``caveat`` as the reason where it says ``proved``
    and it is not known that some sizes satisfy the assumptions."""
    if caveat is None or result.status != "proved":
        return result
    return dataclasses.replace(result, status="unknown", reason=caveat)


def for_all_sizes(assumptions: Sequence[sympy.Basic]) -> str:
    """``"for all sizes"``, naming the assumptions when there are some. A size is an integer
    >= 0, as XLA's dimensions (zero-size arrays are valid), and every prover path quantifies
    over that domain (``prove.assumptions.sizes_exist``).

    >>> for_all_sizes(parse_assumptions("N % 8 == 0"))
    'for all sizes with N % 8 == 0'
    """
    shown = [a for a in assumptions if a is not sympy.true and a is not True]
    return f"for all sizes with {condition_text(shown)}" if shown else "for all sizes"


# ----------------------------------------------------------------------------- solving
# The query API (solver settings, model read-off, side conditions, the query runner) is
# public in ``prove.query``; the short private names below are this module's spelling.
_solver = solver_for
_as_bool = as_bool
_model_int = model_int
_in_box = in_box
_side_conditions = side_conditions
_symbol_values = symbol_values
_run = run_query
_differ = differ


def _bitvector_arithmetic(maps: Sequence[IndexMap], extra_max: int = 0) -> BitVecArithmetic:
    """A bit-vector arithmetic wide enough for every value the maps compute on their box."""
    intervals = IntervalArithmetic()
    top = extra_max
    for m in maps:
        index = [intervals.variable(d - 1) for d in m.dimensions]
        m.evaluate(index, intervals)
        top = max(top, max(m.dimensions, default=1), int(m.size_in_elements()))
    top = max(top, intervals.tracker[0])
    return BitVecArithmetic(bitvector_width(top, top))


def _symbolic_arithmetic(
    maps: Sequence[IndexMap], assumptions: Sequence[sympy.Basic]
) -> tuple[IntArithmetic, list[Any]]:
    ar = IntArithmetic()
    constraints = _assumption_terms(assumptions, ar)
    return ar, constraints


# ------------------------------------------------------------------------- injectivity
def injective(
    shape: MapLike,
    *,
    assume: Assumptions = None,
    method: str = "auto",
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> ProofResult:
    """No two elements of ``shape`` (or of an :class:`IndexMap`) share a position.

    ``method="auto"``: a layout is proved by composing its stages' lemmas. With concrete
    sizes each stage is an instance of a general stage proved once for all sizes (then
    a proof costs no solver call); with symbolic sizes each stage is proved under the
    assumptions. Other maps, and layouts whose stages are not instances, get one query:
    integer on the digits of the tiled index, then bit-vector (concrete sizes), or
    integer nonlinear (symbolic). ``method="direct"``: that one query, always.

    >>> injective("f32[1280,16384]{1,0:T(8,128)}").encoding.startswith("composition")
    True
    >>> injective("f32[1280,16384]{1,0:T(8,128)}", method="direct").status
    'proved'
    """
    m = as_index_map(shape)
    claim = f"{m} is injective"
    assumptions, caveat = admitted_assumptions(assume, shapes=_shapes_of(m))
    _check_method(method)
    return unless_vacuous(_injective(m, claim, assumptions, method, timeout_ms), caveat)


def _injective(m: IndexMap, claim: str, assumptions, method: str, timeout_ms: int) -> ProofResult:
    if not m.is_symbolic:
        if m.is_layout and method == "auto":
            by_lemmas = _by_general_lemmas(claim, m, None, timeout_ms)
            if by_lemmas is not None:
                return by_lemmas
        if m.kind == "layout" and mixed_radix_pair_lemma(timeout_ms).proved:
            fast = _run(
                claim,
                "integer, digits of the tiled index (mixed-radix uniqueness)",
                lambda: _digit_injective(m, (), min(timeout_ms, 5_000)),
            )
            if fast.status == "proved":
                return fast
        return _run(claim, "bit-vector", lambda: _concrete_injective(m, timeout_ms))
    if m.is_layout and method == "auto":
        return _composed(claim, m, assumptions, timeout_ms)
    return _run(claim, "integer (nonlinear)", lambda: _symbolic_injective(m, assumptions, timeout_ms))


def _shapes_of(m: IndexMap) -> tuple[Any, ...]:
    """The array a map is about: its index box, whose dimensions must be sizes (a layout's
    map or your own ``function_map`` alike)."""
    return (m.shape,)


def _check_method(method: str) -> None:
    if method not in ("auto", "direct"):
        raise InvalidArgumentError(f"method {method!r} is not 'auto' or 'direct'")


def _concrete_injective(m: IndexMap, timeout_ms: int):
    ar = _bitvector_arithmetic([m])
    x = [ar.variable(f"x{k}") for k in range(len(m.dimensions))]
    y = [ar.variable(f"y{k}") for k in range(len(m.dimensions))]
    fx, fy = m.evaluate(x, ar), m.evaluate(y, ar)
    s = _solver("QF_BV", timeout_ms)
    s.add(*_in_box(x, m.dimensions, ar), *_in_box(y, m.dimensions, ar))
    s.add(_as_bool(fx == fy) if not isinstance(fx, int) or not isinstance(fy, int) else z3.BoolVal(fx == fy))
    s.add(z3.Or(*[a != b for a, b in zip(x, y, strict=True)]) if x else z3.BoolVal(False))
    s.add(*ar.side)

    return s, lambda model: _collision(m, model, x, y)


def _digit_injective(m: IndexMap, assumptions, timeout_ms: int):
    """Injectivity on the tiled index: equal positions need equal digits (mixed-radix uniqueness).

    When both positions are row-major numbers of digits in one box, they are equal exactly
    when the digits are (the mixed-radix pair lemma, ``mixed_radix_pair_lemma``), provided
    the digits lie in the box: that is a side condition, proved separately. The query is
    then linear for concrete sizes.
    """
    ar, constraints = _symbolic_arithmetic([m], assumptions)
    x = [ar.variable(f"x{k}") for k in range(len(m.dimensions))]
    y = [ar.variable(f"y{k}") for k in range(len(m.dimensions))]
    fx, fy = m.evaluate(x, ar), m.evaluate(y, ar)
    rx, ry = ar.record_of(fx), ar.record_of(fy)
    if not (rx and ry and len(rx[1]) == len(ry[1])):
        raise UnsupportedExpression("the positions are not row-major numbers of one box")
    if any(sympy.expand(p - q) != 0 for p, q in zip(rx[1], ry[1], strict=True)):
        raise UnsupportedExpression("the positions are row-major numbers of different boxes")
    ar.require_digits_in_box(*rx)
    ar.require_digits_in_box(*ry)
    context = [*constraints, *_in_box(x, m.dimensions, ar), *_in_box(y, m.dimensions, ar)]
    s = _solver(None, timeout_ms, fast_first=True)
    s.add(*context, *[_as_bool(u == v) for u, v in zip(rx[0], ry[0], strict=True)])
    s.add(z3.Or(*[a != b for a, b in zip(x, y, strict=True)]) if x else z3.BoolVal(False))
    s.add(*ar.side, *ar.obligations)

    def recheck(model: z3.ModelRef) -> dict[str, Any] | None:
        return None if ar.symbols else _collision(m, model, x, y)

    return s, recheck, _side_conditions(ar, context, timeout_ms)


def _symbolic_injective(m: IndexMap, assumptions, timeout_ms: int):
    ar, constraints = _symbolic_arithmetic([m], assumptions)
    x = [ar.variable(f"x{k}") for k in range(len(m.dimensions))]
    y = [ar.variable(f"y{k}") for k in range(len(m.dimensions))]
    fx, fy = m.evaluate(x, ar), m.evaluate(y, ar)
    s = _solver(None, timeout_ms, fast_first=True)
    context = [*constraints, *_in_box(x, m.dimensions, ar), *_in_box(y, m.dimensions, ar)]
    s.add(*context)
    s.add(fx == fy, z3.Or(*[a != b for a, b in zip(x, y, strict=True)]) if x else z3.BoolVal(False))
    s.add(*ar.side, *ar.obligations)  # sound: the obligations are proved separately

    def recheck(model: z3.ModelRef) -> dict[str, Any] | None:
        model = small_model(s, list(ar.symbols.values()), model)
        values = _symbol_values(ar, model)
        if not _assumptions_hold(assumptions, values):
            return None
        dims = m.shape.specialize(values).dimensions
        a = tuple(_model_int(model, v) for v in x)
        b = tuple(_model_int(model, v) for v in y)
        if a == b or not _inside(a, dims) or not _inside(b, dims):
            return None
        pa, pb = _position_at(m, values, a), _position_at(m, values, b)
        if pa is None or pa != pb:
            return None
        return {"sizes": _named(values), "element": a, "other_element": b, "position": pa}

    return s, recheck, _side_conditions(ar, context, timeout_ms)


def _collision(m: IndexMap, model: z3.ModelRef, x: Sequence[Any], y: Sequence[Any]) -> dict[str, Any] | None:
    """The model's two elements of a concrete map, if they really are distinct and share a position."""
    a = tuple(_model_int(model, v) for v in x)
    b = tuple(_model_int(model, v) for v in y)
    if a == b or not _inside(a, m.dimensions) or not _inside(b, m.dimensions):
        return None
    pa, pb = m.evaluate(a, ARITHMETIC), m.evaluate(b, ARITHMETIC)
    return {"element": a, "other_element": b, "position": pa} if pa == pb else None


def _position_at(m: IndexMap, values: Mapping[sympy.Symbol, int], index: Sequence[int]) -> int | None:
    """The map's position of ``index`` at the concrete sizes ``values``, evaluated exactly
    (the re-check of a solver's model), or ``None`` where it cannot be evaluated.

    A layout's own map (and the references) is rebuilt at those sizes; your own function
    (``function_map``) cannot be, so it runs with the sizes as SymPy symbols and the result
    is then given their values (by name), exactly:

    >>> from layout_algebra.model.symbols import dim_symbol
    >>> from layout_algebra.prove.maps import function_map
    >>> M = dim_symbol("M")
    >>> f = function_map("f32[N,M]", lambda i, ar: i[0] * ar.lift(M) + i[1])
    >>> _position_at(f, {dim_symbol("N"): 3, M: 5}, (2, 1))
    11
    """
    if m.symbolic_ok:
        return int(m.specialize(values).evaluate(index))
    by_name = {str(k): v for k, v in values.items()}
    try:
        expr = as_sympy(m.evaluate(tuple(index), ARITHMETIC))
        named = {s: by_name[str(s)] for s in expr.free_symbols if str(s) in by_name}
        value = value_of(expr, named)
    except (UnsupportedExpression, UndefinedValue, ValueError, TypeError):
        return None
    return int(value) if value.denominator == 1 else None


def _inside(index: Sequence[int], dims: Sequence[Any]) -> bool:
    return all(0 <= i < d for i, d in zip(index, dims, strict=True))


def _named(values: Mapping[sympy.Symbol, int]) -> dict[str, int]:
    return {str(k): v for k, v in sorted(values.items(), key=lambda kv: str(kv[0]))}


# ------------------------------------------------------------------------------ bounds
def in_bounds(
    shape: MapLike,
    *,
    allocation: str = "exact",
    assume: Assumptions = None,
    method: str = "auto",
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> ProofResult:
    """Every element's position is inside the buffer.

    ``allocation="exact"``: the layout's own buffer (every tile level's padding, ``L(n)``).
    ``allocation="xla"``: the buffer XLA and XLA:TPU allocate, padded to the first tile
    only; it is smaller when a later tile does not divide the first, and then some
    elements fall outside (a refutation names one). ``method`` as for :func:`injective`
    (stage lemmas apply to the exact allocation).
    """
    if allocation not in ("exact", "xla"):
        raise InvalidArgumentError(f"allocation {allocation!r} is not 'exact' or 'xla'")
    _check_method(method)
    m = as_index_map(shape)
    assumptions, caveat = admitted_assumptions(assume, shapes=_shapes_of(m))
    result = unless_vacuous(_in_bounds(m, allocation, assumptions, method, timeout_ms), caveat)
    if not m.is_layout:  # a map given as a function: no shape whose sizes a condition could be about
        return result
    return dataclasses.replace(
        result, question=Question("in_bounds", (m.shape,), (("allocation", allocation),), tuple(assumptions))
    )


def _in_bounds(
    m: IndexMap, allocation: str, assumptions: tuple[Any, ...], method: str, timeout_ms: int
) -> ProofResult:
    if allocation == "xla":
        slots = size_report(m.shape).first_tile_elements
        claim = f"{m} stays inside XLA's allocation ({slots} elements)"
    else:
        slots = m.size_in_elements()
        claim = f"{m} stays inside its buffer ({slots} elements)"
    auto_layout = m.is_layout and method == "auto" and allocation == "exact"
    if not m.is_symbolic:
        by_lemmas = _by_general_lemmas(claim, m, int(slots), timeout_ms) if auto_layout else None
        if by_lemmas is not None:
            return by_lemmas
        return _run(claim, "bit-vector", lambda: _concrete_bounds(m, int(slots), timeout_ms))
    if auto_layout:
        return _composed(claim, m, assumptions, timeout_ms)
    return _run(claim, "integer (nonlinear)", lambda: _symbolic_bounds(m, slots, assumptions, timeout_ms))


def _concrete_bounds(m: IndexMap, slots: int, timeout_ms: int):
    ar = _bitvector_arithmetic([m], extra_max=slots)
    x = [ar.variable(f"x{k}") for k in range(len(m.dimensions))]
    fx = m.evaluate(x, ar)
    s = _solver("QF_BV", timeout_ms)
    # unsigned: a negative position wraps to a large one, so ">= slots" also catches it
    s.add(
        *_in_box(x, m.dimensions, ar),
        ar.ge(fx, slots) if not isinstance(fx, int) else z3.BoolVal(not 0 <= fx < slots),
    )
    s.add(*ar.side)

    def recheck(model: z3.ModelRef) -> dict[str, Any] | None:
        a = tuple(_model_int(model, v) for v in x)
        p = m.evaluate(a, ARITHMETIC)
        if not _inside(a, m.dimensions) or 0 <= p < slots:
            return None
        return {"element": a, "position": p, "allocated": slots}

    return s, recheck


def _symbolic_bounds(m: IndexMap, slots: Any, assumptions, timeout_ms: int):
    ar, constraints = _symbolic_arithmetic([m], assumptions)
    x = [ar.variable(f"x{k}") for k in range(len(m.dimensions))]
    fx = m.evaluate(x, ar)
    s = _solver(None, timeout_ms, fast_first=True)
    context = [*constraints, *_in_box(x, m.dimensions, ar)]
    limit = ar.lift(slots)
    s.add(*context, z3.Or(fx < 0, fx >= limit), *ar.side, *ar.obligations)

    def recheck(model: z3.ModelRef) -> dict[str, Any] | None:
        model = small_model(s, list(ar.symbols.values()), model)
        values = _symbol_values(ar, model)
        if not _assumptions_hold(assumptions, values):
            return None
        a = tuple(_model_int(model, v) for v in x)
        limit = int(as_sympy(slots).subs(values))
        position = _position_at(m, values, a)
        if not _inside(a, m.shape.specialize(values).dimensions) or position is None or 0 <= position < limit:
            return None
        return {"sizes": _named(values), "element": a, "position": position, "allocated": limit}

    return s, recheck, _side_conditions(ar, context, timeout_ms)


# ------------------------------------------------------------------------- equivalence
def equivalent(
    a: MapLike,
    b: MapLike,
    *,
    assume: Assumptions = None,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
    encoding: str = "auto",
) -> ProofResult:
    """Two maps on the same logical index box give every element the same position.

    Maps may be shapes (their layouts), references (``formula_reference``,
    ``pad_reshape_transpose_reference``) or your own (``function_map``).
    ``encoding``: for concrete sizes, ``"auto"`` asks linear integer arithmetic first and
    bit-vectors where it leaves the question open; ``"bit-vector"`` asks bit-vectors only
    (for maps full of divisions by powers of two, where the integer attempt times out).
    """
    if encoding not in ("auto", "bit-vector"):
        raise InvalidArgumentError(f"encoding must be 'auto' or 'bit-vector', not {encoding!r}")
    ma, mb = as_index_map(a), as_index_map(b)
    if tuple(ma.dimensions) != tuple(mb.dimensions):
        raise InvalidArgumentError(
            f"{ma} and {mb} have different index boxes {ma.dimensions} and {mb.dimensions}"
        )
    claim = f"{ma} equals {mb}"
    assumptions, caveat = admitted_assumptions(assume, shapes=(*_shapes_of(ma), *_shapes_of(mb)))
    if encoding == "bit-vector":
        if ma.is_symbolic or mb.is_symbolic:
            raise InvalidArgumentError(f"bit-vectors need concrete sizes: {ma} and {mb} have symbolic ones")
        result = _run(claim, "bit-vector", lambda: _concrete_equivalent(ma, mb, timeout_ms))
        return unless_vacuous(result, caveat)
    return unless_vacuous(_equivalent(ma, mb, claim, assumptions, timeout_ms), caveat)


def _equivalent(ma: IndexMap, mb: IndexMap, claim: str, assumptions, timeout_ms: int) -> ProofResult:
    if not ma.is_symbolic:
        # Linear integer arithmetic with exact mixed-radix division is fastest; bit-vectors
        # decide whatever it leaves open, so a concrete question never ends unknown.
        fast = _run(
            claim,
            "integer (linear, concrete sizes)",
            lambda: _symbolic_equivalent(ma, mb, (), min(timeout_ms, 5_000)),
        )
        if fast.status != "unknown":
            return fast
        return _run(claim, "bit-vector", lambda: _concrete_equivalent(ma, mb, timeout_ms))
    return _run(claim, "integer (nonlinear)", lambda: _symbolic_equivalent(ma, mb, assumptions, timeout_ms))


def _concrete_equivalent(ma: IndexMap, mb: IndexMap, timeout_ms: int):
    ar = _bitvector_arithmetic([ma, mb])
    x = [ar.variable(f"x{k}") for k in range(len(ma.dimensions))]
    fa, fb = ma.evaluate(x, ar), mb.evaluate(x, ar)
    s = _solver("QF_BV", timeout_ms)
    differ = fa != fb
    s.add(*_in_box(x, ma.dimensions, ar), _as_bool(differ), *ar.side)

    def recheck(model: z3.ModelRef) -> dict[str, Any] | None:
        e = tuple(_model_int(model, v) for v in x)
        pa, pb = ma.evaluate(e, ARITHMETIC), mb.evaluate(e, ARITHMETIC)
        if not _inside(e, ma.dimensions) or pa == pb:
            return None
        return {"element": e, "position": pa, "other_position": pb}

    return s, recheck


def _symbolic_equivalent(ma: IndexMap, mb: IndexMap, assumptions, timeout_ms: int):
    ar, constraints = _symbolic_arithmetic([ma, mb], assumptions)
    x = [ar.variable(f"x{k}") for k in range(len(ma.dimensions))]
    fa, fb = ma.evaluate(x, ar), mb.evaluate(x, ar)
    s = _solver(None, timeout_ms, fast_first=True)
    context = [*constraints, *_in_box(x, ma.dimensions, ar)]
    s.add(*context, _differ(fa, fb, ar), *ar.side, *ar.obligations)

    def recheck(model: z3.ModelRef) -> dict[str, Any] | None:
        model = small_model(s, list(ar.symbols.values()), model)  # small sizes read (and run) best
        values = _symbol_values(ar, model)
        if not _assumptions_hold(assumptions, values):
            return None
        e = tuple(_model_int(model, v) for v in x)
        if not _inside(e, ma.shape.specialize(values).dimensions):
            return None
        pa, pb = _position_at(ma, values, e), _position_at(mb, values, e)
        if pa is None or pb is None or pa == pb:
            return None
        found = {"element": e, "position": pa, "other_position": pb}
        return {"sizes": _named(values), **found} if values else found  # sizes only when symbolic

    return s, recheck, _side_conditions(ar, context, timeout_ms)


def tiling_is_pad_reshape_transpose(
    shape: Any, *, assume: Assumptions = None, timeout_ms: int = DEFAULT_TIMEOUT_MS
) -> ProofResult:
    """The document's tiled index formula equals pad → reshape → transpose, and the layout's stages.

    Two equivalences, each its own lemma; proved when both are.
    """
    start = time.perf_counter()
    formula = formula_reference(shape)
    lemmas = (
        equivalent(formula, pad_reshape_transpose_reference(shape), assume=assume, timeout_ms=timeout_ms),
        equivalent(formula, layout_index_map(shape), assume=assume, timeout_ms=timeout_ms),
    )
    return combined_lemmas(f"tiling of {formula.shape} equals pad-reshape-transpose", lemmas, start)


# ------------------------------------------------------------ symbolic: per-stage lemmas
def _lemma_solver(timeout_ms: int) -> z3.Solver:
    """The solver of the general lemmas: Z3's SMT core itself. Z3's default front end first
    tries its nonlinear tactics on these queries and took 2-4x longer for the same answer
    (``benchmarks/README.md``, one proof in a fresh process); unsat is a property of the
    formula, whichever solver finds it."""
    s = z3.Tactic("smt").solver()
    s.set("timeout", int(timeout_ms))
    s.set("random_seed", 0)
    return s


@cache
def mixed_radix_pair_lemma(timeout_ms: int = DEFAULT_TIMEOUT_MS) -> ProofResult:
    """For all sizes A, D: (a, b) ↦ a·D + b is injective on [0,A)×[0,D) and below A·D.

    Linearize and Combine are folds of this step, so they are injective and in bounds for
    every size when this one lemma is.
    """
    claim = "(a, b) -> a*D + b is injective on [0,A) x [0,D) and below A*D, for all A, D"

    def build():
        A, D, a1, b1, a2, b2 = z3.Ints(lemma_names("A", "D", "a1", "b1", "a2", "b2"))
        s = _lemma_solver(timeout_ms)
        box = [0 <= a1, a1 < A, 0 <= a2, a2 < A, 0 <= b1, b1 < D, 0 <= b2, b2 < D]
        collide = z3.And(a1 * D + b1 == a2 * D + b2, z3.Or(a1 != a2, b1 != b2))
        escape = a1 * D + b1 >= A * D
        s.add(*box, z3.Or(collide, escape))
        return s, lambda model: None

    return _run(claim, "integer (nonlinear), general sizes", build, cache=True)


def _stage_lemma(stage: Stage, assumptions, timeout_ms: int, cache: bool = False) -> ProofResult:
    """One stage is injective on its domain box and maps it into its range box (``cache``: see ``_run``)."""
    claim = f"stage {stage.describe()} is injective and in bounds"
    if isinstance(stage, (Linearize, Combine)):
        general = mixed_radix_pair_lemma(timeout_ms)
        return ProofResult(
            general.status,
            claim,
            general.seconds,
            "instance of the mixed-radix pair lemma",
            reason=general.reason,
            lemmas=(general,),
        )

    def build():
        ar = IntArithmetic()
        constraints = _assumption_terms(assumptions, ar)
        n = len(stage.domain)
        x = [ar.variable(f"x{k}") for k in range(n)]
        y = [ar.variable(f"y{k}") for k in range(n)]
        fx, fy = stage.forward(x, ar), stage.forward(y, ar)
        box = _in_box(x, stage.domain, ar) + _in_box(y, stage.domain, ar)
        collide = z3.And(
            *[_as_bool(u == v) for u, v in zip(fx, fy, strict=True)],
            z3.Or(*[u != v for u, v in zip(x, y, strict=True)]) if x else z3.BoolVal(False),
        )
        escape = (
            z3.Or(*[z3.Or(u < 0, u >= ar.lift(r)) for u, r in zip(fx, stage.range, strict=True)])
            if fx
            else z3.BoolVal(False)
        )
        s = _lemma_solver(timeout_ms) if cache else _solver(None, timeout_ms, fast_first=True)
        s.add(*constraints, *box, z3.Or(collide, escape), *ar.side, *ar.obligations)

        def recheck(model: z3.ModelRef) -> dict[str, Any] | None:
            values = _symbol_values(ar, model)
            if not _assumptions_hold(assumptions, values):
                return None
            try:
                concrete = specialize_stage(stage, values)
            except (ValueError, TypeError):
                return None
            return _stage_failure(
                concrete, [_model_int(model, v) for v in x], [_model_int(model, v) for v in y], values
            )

        return s, recheck, _side_conditions(ar, [*constraints, *box], timeout_ms)

    return _run(claim, "integer, one stage", build, cache=cache)


def _stage_failure(stage: Stage, a: Sequence[int], b: Sequence[int], values) -> dict[str, Any] | None:
    """Where a concrete stage leaves its range box or sends two elements to one place, if it does."""
    a, b = tuple(a), tuple(b)
    if not _inside(a, stage.domain):
        return None
    image = stage.forward(a)
    found = {"sizes": _named(values), "element": a, "image": image}
    if not _inside(image, stage.range):
        return {**found, "range": tuple(stage.range)}
    if a != b and _inside(b, stage.domain) and stage.forward(b) == image:
        return {**found, "other_element": b}
    return None


_GENERAL_LEMMAS: dict[GeneralStage, ProofResult] = {}


def general_stage_lemma(general: GeneralStage, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> ProofResult:
    """A general stage is injective and in bounds for all sizes at least their minima.

    Proved once per general stage (the answer is kept; an ``unknown`` is not, so a later
    call may try again with more time).
    """
    known = _GENERAL_LEMMAS.get(general)
    if known is not None:
        return known
    lemma = _general_stage_query(general, timeout_ms)
    if lemma.status != "unknown":
        _GENERAL_LEMMAS[general] = lemma
    return lemma


def _general_stage_query(general: GeneralStage, timeout_ms: int) -> ProofResult:
    """The lemma of a general stage, asked of Z3 (or found in the cache by its query text)."""
    lemma = _stage_lemma(general.stage, general.relations, timeout_ms, cache=True)
    return dataclasses.replace(lemma, claim=f"for all sizes: {general.describe()}; injective and in bounds")


def _by_general_lemmas(claim: str, m: IndexMap, slots: int | None, timeout_ms: int) -> ProofResult | None:
    """Injective (and inside ``slots`` positions, if given) by instances of general stage lemmas.

    The layout's map is its stages up to the element position, composed. When each stage
    is an instance of a general stage proved injective and in bounds for all sizes, and
    each stage's range box is exactly the next one's domain box (the first's is the
    array's, the last's is ``(slots,)``), the composition is injective and in bounds.
    ``None`` when some step does not apply (the caller then asks the solver directly).
    The instance test is on plain integers; each general lemma is proved once per process
    (its unsat answer may come from the lemma cache, keyed by the query's exact text).
    """
    start = time.perf_counter()
    stages = position_stages(m.shape)
    box = tuple(m.dimensions)
    for stage in stages:
        if tuple(stage.domain) != box:
            return None
        box = tuple(stage.range)
    if len(box) != 1 or (slots is not None and box != (slots,)):
        return None
    patterns = [found for found in map(instance_of, stages) if found is not None]
    if len(patterns) != len(stages):
        return None
    lemmas: dict[GeneralStage, ProofResult] = {}
    for found in patterns:
        general = general_stage(found)
        if general not in lemmas:
            lemmas[general] = general_stage_lemma(general, timeout_ms)
            if not lemmas[general].proved:
                return None
    known = tuple(lemmas.values())
    return ProofResult(
        "proved",
        claim,
        time.perf_counter() - start,
        f"composition of {len(stages)} stages, each an instance of a general stage lemma "
        f"({len(known)} lemmas, proved for all sizes)",
        lemmas=known,
    )


def _composed(claim: str, m: IndexMap, assumptions, timeout_ms: int) -> ProofResult:
    """Injective and in bounds by composition: every stage (but the bit step) is, so the map is."""
    start = time.perf_counter()
    stages = position_stages(m.shape)
    lemmas = [_stage_lemma(stage, assumptions, timeout_ms) for stage in stages]
    result = combined_lemmas(claim, lemmas, start)
    if result.status == "refuted":  # a stage lemma has no re-checked counterexample of the whole map
        return ProofResult(
            "unknown",
            claim,
            result.seconds,
            result.encoding,
            reason="a stage lemma failed",
            lemmas=result.lemmas,
        )
    return ProofResult(
        result.status,
        claim,
        result.seconds,
        f"composition of {len(lemmas)} stage lemmas",
        reason=result.reason,
        lemmas=result.lemmas,
    )
