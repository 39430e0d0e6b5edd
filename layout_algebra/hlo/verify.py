"""Verify an HLO rewrite: ``before`` and ``after`` compute the same root, for every size.

**The contract.** ``verify_rewrite(before, after, mode=...)`` answers one of two questions.

* ``mode="physical"`` (the default): *given the same parameter buffers, the root buffer
  is the same, bit for bit.* Both modules must have the same parameters, layouts and
  memory spaces included (otherwise the rewrite changes the interface: a ``ValueError``).
  The root buffers must agree in memory space ``S(n)``, element size (``E(n)``), exact
  size in bytes and XLA's allocation size (first-tile padding, ``L(n)``) — for symbolic
  sizes as Z3 obligations under ``assume`` — and every root element must sit at the same
  bit offset and hold the same value, computed from the same parameter elements.
* ``mode="logical"``: *the root's logical array is the same function of the
  parameters' logical arrays*; layouts are free (what layout assignment must preserve),
  except that a ``bitcast`` means "the same bits", so it is read through the layouts of
  its operand and result.

Only data movement is interpreted: ``parameter``, ``constant`` (arrays: element k is the
literal's value k), ``copy``, ``bitcast``, ``reshape``, ``transpose``, ``broadcast``,
``slice``, ``concatenate``, ``pad``, ``reverse``, ``iota``, ``dynamic-slice`` and
``dynamic-update-slice`` (offsets that are scalar parameters or constants, clamped as XLA
clamps them), ``tuple``/``get-tuple-element`` (traced through), ``fusion``/``call``
(inlined). Every elementwise op — unary, binary, ``convert``, ``bitcast-convert``,
``compare``, ``select``, ``clamp`` — is an *uninterpreted function* of its opcode,
attributes and result type, applied element by element: equal inputs give equal outputs,
and nothing more is assumed (``add(a,b)`` and ``add(b,a)`` are not proved equal). Exceptions,
exact: ``compare`` of two known integers (an ``iota`` against a constant) is read as the
comparison, and ``select`` on such a predicate as its choice. With ``float_rules`` (names
from :data:`FLOAT_RULES`, none by default) a narrow float op computed in a wider type
between converts is read as the narrow op where a stated theorem or assumption says so;
a proof that used a rule names it in its ``encoding``.
Deterministic compute ops (``dot``, ``reduce``, ``convolution``, ``gather``, ...) are opaque
arrays: equal when their text (operand subgraphs, attributes, called computations) is.
HLO that XLA's verifier refuses, for symbolic sizes wherever the assumptions allow, is an
unsafe rewrite when it is the ``after`` module (``refuted``: the counterexample's ``invalid_hlo``
says XLA's rule, ``sizes`` where it fails) and bad input (``InvalidHlo``) when it is ``before``: among others a ``bitcast`` that changes the shape size
(:mod:`layout_algebra.hlo.validity`; a ``copy`` of ``f32[N,128]{1,0:T(8,128)}`` into
``f32[N,128]{1,0}`` becomes a bitcast only under ``N % 8 == 0``). A size-keeping bitcast that
changes ``E(n)`` of a sub-byte type (``s4[16]{0:E(4)}`` read as ``s4[8]{0}``) is read bit by
bit: a result slot may hold the next elements above its value (:class:`SlotBits`), which
physical mode compares and logical mode ignores.

**The sizes.** "For every size" means every value >= 0 of each size symbol (XLA allows
zero-size dimensions, so ``assume="N == 0"`` is a question like any other) at which each
parameter's dimension formula is a whole number >= 0 (``f32[N/8,128]``: ``8 | N``, an
implicit fact, as for the layout-level questions), and which satisfies ``assume``.
Assumptions that admit no such sizes raise ``AssumptionsAdmitNoSizes``.

**The answers.** ``proved``: Z3 answered unsat for every size satisfying ``assume``.
``refuted``: a counterexample with concrete ``sizes``, a root ``element`` and what each
side holds there (physical mode: where the element sits on each side, ``placement``, when
the root layouts place it apart — a difference even where the two buffers hold the same
bytes, as the root's layout is part of the result), re-checked by evaluating both modules
at those sizes; a difference that
runs through an uninterpreted op is only reported after the HLO executor
(:mod:`layout_algebra.hlo.execute`) confirms it with the ops' real semantics. ``unknown``:
with the reason (solver timeout, a construct the encoding cannot express, or a difference
under uninterpreted ops that real execution does not show: the rewrite then relies on a
property of those ops, such as commutativity).

>>> before = '''HloModule m
... ENTRY e {
...   p = f32[8,128]{1,0:T(8,128)} parameter(0)
...   ROOT r = f32[1024]{0} reshape(p)
... }'''
>>> verify_rewrite(before, before.replace("reshape", "bitcast")).status  # one tile is row-major
'proved'
>>> wide = before.replace("f32[8,128]{1,0:T(8,128)}", "f32[8,128]{1,0:T(8,64)}")
>>> r = verify_rewrite(wide, wide.replace("reshape", "bitcast"))        # 8x64 tiles split rows
>>> r.status, r.counterexample["sizes"]
('refuted', {})
>>> (j,) = r.counterexample["element"]                    # reshape: row-major element j ...
>>> r.counterexample["before"] == f"bit {32 * j}: parameter 0 element {divmod(j, 128)}"
True
>>> r.counterexample["after"].startswith(f"bit {32 * j}: parameter 0 element")  # ... bitcast: another
True

Symbolic sizes: moving a transpose below an elementwise op (what XLA's algebraic
simplifier does) is proved for every N, M; a copy into a tiled layout changes the root's
size unless whole tiles fit, which ``assume`` can say:

>>> sunk = '''HloModule m
... ENTRY e {
...   p = f32[N,M]{1,0} parameter(0)
...   t = f32[M,N]{1,0} transpose(p), dimensions={1,0}
...   ROOT n = f32[M,N]{1,0} negate(t)
... }'''
>>> hoisted = '''HloModule m
... ENTRY e {
...   p = f32[N,M]{1,0} parameter(0)
...   n = f32[N,M]{1,0} negate(p)
...   ROOT t = f32[M,N]{1,0} transpose(n), dimensions={1,0}
... }'''
>>> verify_rewrite(sunk, hoisted).status
'proved'
>>> tiled = '''HloModule m
... ENTRY e {
...   p = f32[N,128]{1,0} parameter(0)
...   ROOT c = f32[N,128]{1,0:T(8,128)} copy(p)
... }'''
>>> plain = tiled.replace("{1,0:T(8,128)} copy", "{1,0} copy")
>>> r = verify_rewrite(tiled, plain)
>>> r.status, r.counterexample["property"], r.counterexample["sizes"]["N"] % 8 != 0
('refuted', 'size in bytes', True)
>>> verify_rewrite(tiled, plain, assume="N % 8 == 0").status
'proved'
>>> verify_rewrite(tiled, plain, mode="logical").status   # the same logical array
'proved'
"""

from __future__ import annotations

import dataclasses
import functools
import re
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sympy
import z3

from layout_algebra.hlo.evaluate_elementwise import FLOAT_RULES
from layout_algebra.hlo.evaluator import Evaluator
from layout_algebra.hlo.float_precision import EXCESS_PRECISION, float_types_of, is_float_convert
from layout_algebra.hlo.ir import HloComputation, HloModule
from layout_algebra.hlo.validity import (
    InvalidHlo,
    bitcast_shape_sizes,
    bitcast_size_problem,
    layout_problem,
    size_text,
)
from layout_algebra.hlo.verify_values import (
    Inexpressible,
    Scope,
    SlotBits,
    UnsupportedHlo,
    any_of,
    as_module,
    differ_values,
    difference_kind,
    dims_equal,
    instruction_named,
    logical_value,
    memory_space_of,
    show_value,
)
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.meaning.sizes import size_report
from layout_algebra.meaning.stages.arith import ARITHMETIC
from layout_algebra.model.errors import InvalidArgumentError
from layout_algebra.model.questions import Question
from layout_algebra.model.shapes import ArrayShape, Shape, TupleShape
from layout_algebra.model.symbols import as_sympy
from layout_algebra.prove.assumptions import (
    Assumptions,
    assumption_terms,
    assumptions_hold,
    condition_text,
    parse_assumptions,
)
from layout_algebra.prove.core import DEFAULT_TIMEOUT_MS, admitted_assumptions, shape_facts, unless_vacuous
from layout_algebra.prove.encode import IntArithmetic, UnsupportedExpression, sympy_to_z3
from layout_algebra.prove.query import (
    as_bool,
    differ,
    in_box,
    model_int,
    side_conditions,
    small_model,
    solver_for,
)
from layout_algebra.prove.result import ProofResult

__all__ = [
    "MODES",
    "float_rules_used",
    "verify_rewrite",
]

#: The two questions a rewrite check can answer.
MODES = ("physical", "logical")


# ------------------------------------------------------------------- specialization
def _specialize_module(module: HloModule, values: Mapping[Any, int]) -> HloModule:
    """The module with every array shape's symbolic sizes given ``values``."""
    return map_array_shapes(module, lambda shape: shape.specialize(values))


def map_array_shapes(module: HloModule, f: Callable[[ArrayShape], ArrayShape]) -> HloModule:
    """The module with ``f`` applied to every array shape (inside tuples too) of every
    instruction and operand: sizes given values, or symbols replaced by expressions."""

    def shape_at(shape: Any) -> Any:
        if isinstance(shape, ArrayShape):
            return f(shape)
        if isinstance(shape, TupleShape):
            return dataclasses.replace(shape, elements=tuple(shape_at(s) for s in shape.elements))
        return shape

    def computation(c: HloComputation) -> HloComputation:
        instructions = tuple(
            dataclasses.replace(
                i,
                shape=shape_at(i.shape),
                operands=tuple(dataclasses.replace(o, shape=shape_at(o.shape)) for o in i.operands),
            )
            for i in c.instructions
        )
        return dataclasses.replace(c, instructions=instructions)

    computations = tuple(computation(c) for c in module.computations)
    entry = next(c for c in computations if c.name == module.entry.name)
    return dataclasses.replace(module, computations=computations, entry=entry)


# ------------------------------------------------------------------------ the checks
def _parameters(module: HloModule) -> dict[int, Shape]:
    return {i.parameter_number: i.shape for i in module.entry.instructions if i.opcode == "parameter"}  # type: ignore[misc]


def _parameter_arrays(*modules: HloModule) -> tuple[ArrayShape, ...]:
    """The array shapes of the entry parameters (inside tuples too) of the modules: their
    dimension formulas must be sizes for the modules to have any input."""
    leaves = (
        leaf for m in modules for _, shape in sorted(_parameters(m).items()) for _, leaf in _leaves_any(shape)
    )
    return tuple({str(leaf): leaf for leaf in leaves}.values())


def _check_interface(a: HloModule, b: HloModule, mode: str) -> None:
    pa, pb = _parameters(a), _parameters(b)
    if sorted(pa) != sorted(pb):
        raise InvalidArgumentError(
            f"the rewrite changes the interface: parameters {sorted(pa)} vs {sorted(pb)}"
        )
    for n in sorted(pa):
        x, y = pa[n], pb[n]
        if mode == "physical":
            same = str(x) == str(y)
            what = "shape, layout or memory space"
        else:
            same = _logically_equal(x, y)
            what = "element type or dimensions"
        if not same:
            raise InvalidArgumentError(
                f"the rewrite changes the interface: parameter {n} is {x} before and {y} after (its {what} differ)"
            )


def _logically_equal(x: Shape, y: Shape) -> bool:
    if isinstance(x, ArrayShape) and isinstance(y, ArrayShape):
        return (
            x.element_type == y.element_type
            and x.rank == y.rank
            and all(dims_equal(p, q) for p, q in zip(x.dimensions, y.dimensions, strict=False))
        )
    if isinstance(x, TupleShape) and isinstance(y, TupleShape):
        return len(x.elements) == len(y.elements) and all(
            _logically_equal(p, q) for p, q in zip(x.elements, y.elements, strict=False)
        )
    return str(x) == str(y)


def _leaves(shape: Shape, path: tuple = ()) -> list[tuple[tuple, ArrayShape]]:
    if isinstance(shape, TupleShape):
        return [leaf for k, s in enumerate(shape.elements) for leaf in _leaves(s, (*path, k))]
    if isinstance(shape, ArrayShape):
        return [(path, shape)]
    raise UnsupportedHlo(f"the root has the shape {shape}, which is neither an array nor a tuple of arrays")


def _symbols_of(*modules: HloModule) -> set[sympy.Symbol]:
    found: set[sympy.Symbol] = set()
    for m in modules:
        for _, i in m.instructions():
            for _, leaf in _leaves_any(i.shape):
                for d in leaf.dimensions:
                    if not isinstance(d, int):
                        found |= as_sympy(d).free_symbols
    return found


def _check_layouts(module: HloModule) -> None:
    """Every array's layout is one XLA accepts (``LayoutUtil::ValidateLayoutForShape``, and an
    ``E(n)`` that holds the element), also where no proof reads it (logical mode): a module
    with ``{2,0}`` on a rank-2 array is invalid HLO, not a rewrite to prove."""
    for _, instr in module.instructions():
        for _, leaf in _leaves_any(instr.shape):
            problem = layout_problem(leaf)
            if problem is not None:
                raise InvalidHlo(f"{instr.opcode} {instr.name}: the layout of {leaf} is invalid: {problem}")


def _leaves_any(shape: Shape) -> list[tuple[tuple, ArrayShape]]:
    try:
        return _leaves(shape)
    except UnsupportedHlo:
        return []


@dataclass
class _Context:
    before: HloModule
    after: HloModule
    mode: str
    assumptions: tuple
    timeout_ms: int
    claim: str
    start: float
    float_rules: frozenset[str] = frozenset()
    #: the float rules the values relied on (named in a proof's encoding)
    used_rules: set[str] = dataclasses.field(default_factory=set)

    def result(self, status: str, encoding: str, **kwargs: Any) -> ProofResult:
        if status == "proved" and self.used_rules and "; float rules: " not in encoding:
            encoding = f"{encoding}; float rules: {', '.join(sorted(self.used_rules))}"
        return ProofResult(status, self.claim, time.perf_counter() - self.start, encoding, **kwargs)  # type: ignore[arg-type]


def _concrete_sizes(ctx: _Context, values: Mapping[Any, int] | None = None) -> dict[str, int] | None:
    """Sizes satisfying the assumptions: ``values`` if given, else any (a model)."""
    symbols = _symbols_of(ctx.before, ctx.after)
    if not symbols:
        return {}
    if values is None:
        ar = IntArithmetic()
        s = solver_for(None, ctx.timeout_ms)
        s.add(*assumption_terms(ctx.assumptions, ar), *ar.side, *(ar.symbol(x) >= 0 for x in symbols))
        if s.check() != z3.sat:
            return None
        model = small_model(s, [ar.symbol(x) for x in symbols])
        values = {x: model_int(model, ar.symbol(x)) for x in symbols}
    return {str(k): int(v) for k, v in sorted(values.items(), key=lambda kv: str(kv[0]))}


def _property_differs(ctx: _Context, a: Any, b: Any, at_most: bool = False) -> tuple[str, dict | None]:
    """Whether two size expressions can differ under the assumptions: ('equal'|'differ'|'unknown', sizes).

    With ``at_most``, the question is whether ``a <= b`` can fail ('equal' then means it holds)."""
    holds = (lambda x, y: x <= y) if at_most else (lambda x, y: x == y)
    if isinstance(a, int) and isinstance(b, int):
        return ("equal", None) if holds(a, b) else ("differ", _concrete_sizes(ctx))
    if not at_most and sympy.expand(as_sympy(a) - as_sympy(b)) == 0:
        return "equal", None
    ar = IntArithmetic()
    for symbol in sorted(_symbols_of(ctx.before, ctx.after), key=str):  # the model sizes them all
        ar.symbol(symbol)
    context = assumption_terms(ctx.assumptions, ar)
    try:
        ta, tb = sympy_to_z3(as_sympy(a), ar), sympy_to_z3(as_sympy(b), ar)
    except UnsupportedExpression as err:
        return f"unknown: {err}", None
    s = solver_for(None, ctx.timeout_ms)
    s.add(*context, *ar.side, ta > tb if at_most else ta != tb)
    answer = s.check()
    if answer == z3.unsat:
        side = side_conditions(ar, context, ctx.timeout_ms)
        if side is not None and side.check() != z3.unsat:
            return "unknown: a side condition of the size comparison (divisors > 0) was not proved", None
        return "equal", None
    if answer == z3.sat:
        model = small_model(s, list(ar.symbols.values()))
        values = {sym: model_int(model, v) for sym, v in ar.symbols.items()}
        for sym in _symbols_of(ctx.before, ctx.after):
            values.setdefault(sym, 1)
        if not assumptions_hold(ctx.assumptions, values):
            return "unknown: the solver's sizes do not satisfy the assumptions", None
        ca, cb = as_sympy(a).subs(values), as_sympy(b).subs(values)
        if not holds(ca, cb):
            return "differ", _concrete_sizes(ctx, values)
        return "unknown: the solver's sizes give equal values when evaluated", None
    return f"unknown: solver: {s.reason_unknown()}", None


def _buffer_properties(ctx: _Context, path: tuple, ra: ArrayShape, rb: ArrayShape) -> ProofResult | None:
    """Physical mode: memory space, element size, exact and allocated sizes of the two roots."""
    ma, mb = layout_map(ra), layout_map(rb)
    checks = [
        ("memory space", memory_space_of(ra), memory_space_of(rb), "S({})"),
        ("element size in bits", ma.element_bits, mb.element_bits, "{} bits per element"),
        ("size in bytes", ma.size_in_bytes, mb.size_in_bytes, "{} bytes"),
        (
            "allocation in bytes",
            size_report(ra).first_tile_bytes,
            size_report(rb).first_tile_bytes,
            "{} bytes (XLA's allocation)",
        ),
    ]
    for name, a, b, form in checks:
        verdict, sizes = _property_differs(ctx, a, b)
        if verdict == "equal":
            continue
        encoding = f"buffer property: {name}"
        if verdict == "differ" and sizes is not None:
            values = {k: v for k, v in sizes.items()}
            ca = as_sympy(a).subs(
                {sympy.Symbol(k, integer=True, nonnegative=True): v for k, v in values.items()}
            )
            cb = as_sympy(b).subs(
                {sympy.Symbol(k, integer=True, nonnegative=True): v for k, v in values.items()}
            )
            cex = {
                "sizes": sizes,
                "element": None,
                "output": path,
                "property": name,
                "before": form.format(ca),
                "after": form.format(cb),
            }
            return ctx.result("refuted", encoding, counterexample=cex)
        if verdict == "differ":
            return ctx.result(
                "unknown", encoding, reason=f"the {name} differs, but no sizes satisfy the assumptions"
            )
        return ctx.result("unknown", encoding, reason=verdict.removeprefix("unknown: "))
    return None


def _root_slot(shape: ArrayShape, index: Sequence[Any], ar: Any) -> Any:
    m = layout_map(shape)
    return m.apply(index, ar, through=len(m.stages) - 1)[0]


def _check_requirements(ctx: _Context, evaluators: Sequence[Evaluator]) -> None:
    """Symbolic sizes: a reshape keeps the element count, a slice stays inside its operand, ...
    for every size the assumptions allow (else the HLO is invalid at some sizes)."""
    for ev in evaluators:
        for a, b, at_most, problem in ev.requirements:
            verdict, sizes = _property_differs(ctx, a, b, at_most)
            if verdict == "differ":
                raise _invalid_at(f"{problem}, e.g. at {sizes}", sizes)


def _invalid_at(message: str, sizes: Mapping[str, int] | None) -> InvalidHlo:
    """The error for HLO that XLA's verifier rejects at ``sizes`` (kept on it as ``sizes``)."""
    err = InvalidHlo(message)
    err.sizes = dict(sizes or {})  # type: ignore[attr-defined]
    return err


def _check_bitcast_sizes(ctx: _Context) -> str | None:
    """XLA's rule (``hlo.validity``): every ``bitcast`` of both modules keeps its shape
    size, for every size the assumptions allow. A bitcast that changes it is invalid HLO
    (``InvalidHlo``; for symbolic sizes at sizes Z3 finds, re-checked on the shapes at those
    sizes); the reason when that cannot be decided, for an ``unknown`` answer."""
    for module in (ctx.before, ctx.after):
        for computation, instr in module.instructions():
            if instr.opcode != "bitcast" or len(instr.operands) != 1:
                continue  # the wrong arity is reported where the bitcast is read
            operand = instruction_named(computation, instr.operands[0].name).shape
            if not (isinstance(operand, ArrayShape) and isinstance(instr.shape, ArrayShape)):
                continue
            problem = bitcast_size_problem(operand, instr.shape)
            if problem is not None:
                raise InvalidHlo(f"bitcast {instr.name} {problem}")
            a, b = bitcast_shape_sizes(operand, instr.shape)
            verdict, sizes = _property_differs(ctx, a, b)
            if verdict.startswith("unknown"):
                return f"whether bitcast {instr.name} keeps its shape size ({a} vs {b} bytes) is {verdict}"
            if verdict == "differ" and sizes is not None:
                at = ", ".join(f"{k}={v}" for k, v in sizes.items())
                concrete = bitcast_size_problem(operand.specialize(sizes), instr.shape.specialize(sizes))
                if concrete is None:  # the solver's sizes do not show it: no claim either way
                    return (
                        f"bitcast {instr.name}: the solver's sizes {at} give equal shape sizes when evaluated"
                    )
                raise _invalid_at(
                    f"bitcast {instr.name} at {at} (sizes the assumptions allow) {concrete}; for every "
                    f"size: {size_text(a)} against {size_text(b)}",
                    sizes,
                )
    return None


def _check_dimension_formulas(ctx: _Context) -> str | None:
    """Every array of both modules has whole dimensions >= 0 at every size the assumptions
    allow (the parameters' formulas are facts: ``ctx.assumptions``): ``t = f32[N/8,8,128]
    reshape(p)`` of ``p = f32[N,128]`` is invalid HLO at N = 3. Raises ``InvalidHlo`` at
    sizes Z3 finds (re-checked by evaluating the formula there); returns the reason when
    that cannot be decided, for an ``unknown`` answer."""
    checked = set(ctx.assumptions)  # each fact once (many arrays share their formulas)
    for module in (ctx.before, ctx.after):
        for _, instr in module.instructions():
            for _, leaf in _leaves_any(instr.shape):
                for fact in shape_facts([leaf]):
                    if fact in checked:
                        continue
                    checked.add(fact)
                    if isinstance(fact, sympy.Eq):  # a divisibility: Mod(formula, k) == 0
                        verdict, sizes = _property_differs(ctx, fact.lhs, fact.rhs)
                    else:  # formula >= 0
                        verdict, sizes = _property_differs(ctx, 0, fact.lhs, at_most=True)
                    if verdict.startswith("unknown"):
                        return f"whether {instr.opcode} {instr.name} ({leaf}) has whole dimensions >= 0 is {verdict}"
                    if verdict == "differ" and sizes is not None:
                        at = ", ".join(f"{k}={v}" for k, v in sizes.items())
                        raise _invalid_at(
                            f"{instr.opcode} {instr.name}: {leaf} has a dimension that is not a whole number "
                            f">= 0 at {at} (sizes the assumptions allow): {condition_text(fact)} fails there",
                            sizes,
                        )
    return None


def _element_query(
    ctx: _Context,
    a: HloModule,
    b: HloModule,
    path: tuple,
    ra: ArrayShape,
    rb: ArrayShape,
    concrete: bool,
):
    """Solve for a root element where the two modules differ (physical mode: or where the
    roots' layouts place it apart). Returns (answer, details)."""
    ar = IntArithmetic()
    for symbol in sorted(_symbols_of(a, b), key=str):  # the model sizes them all
        ar.symbol(symbol)
    context = assumption_terms(ctx.assumptions, ar)
    j = [ar.variable(f"j{k}") for k in range(ra.rank)]
    context += in_box(j, ra.dimensions, ar)
    inputs: dict = {}
    ea, eb, va, vb = _root_values(a, b, ctx.mode, ar, inputs, j, path, ctx.float_rules)
    ctx.used_rules |= ea.used | eb.used
    if len(ea.float_types | eb.float_types) > 1:  # two precisions made one by the erasure
        ctx.used_rules.add(EXCESS_PRECISION)
    if not concrete:
        _check_requirements(ctx, (ea, eb))
    condition = differ_values(va, vb)
    if ctx.mode == "physical":
        condition = any_of(condition, differ(_root_slot(ra, j, ar), _root_slot(rb, j, ar), ar))
    solver = solver_for(None, ctx.timeout_ms, fast_first=not concrete)  # prove/portfolio.py
    solver.add(*context, as_bool(condition), *ar.side, *ar.obligations)
    side = side_conditions(ar, context, ctx.timeout_ms)
    answer = solver.check()
    if answer == z3.unsat:
        if side is not None and side.check() != z3.unsat:
            return (
                "unknown",
                "the main query is unsat, but a side condition it relied on (digits in their box, divisors > 0) was not proved",
            )
        return "proved", None
    if answer == z3.sat:
        model = small_model(solver, list(ar.symbols.values()))
        values = {s: model_int(model, v) for s, v in ar.symbols.items()}
        element = tuple(model_int(model, v) for v in j)
        offsets = {n: model_int(model, t) for n, t in inputs.items()}
        return "sat", (values, element, offsets)
    return "unknown", f"solver: {solver.reason_unknown()}"


def _root_values(
    a: HloModule,
    b: HloModule,
    mode: str,
    ar: Any,
    inputs: dict,
    index: Sequence[Any],
    path: tuple,
    rules: frozenset[str] = frozenset(),
) -> tuple[Evaluator, Evaluator, Any, Any]:
    """The evaluators of both modules (one arithmetic ``ar``, shared start-index ``inputs``)
    and the values of their root element ``index`` (tuple leaf ``path``)."""
    ea = Evaluator(a, mode, ar, inputs, rules)
    eb = Evaluator(b, mode, ar, inputs, rules)
    va = ea.element(Scope(a.entry), a.entry.root.name, list(index), path)
    vb = eb.element(Scope(b.entry), b.entry.root.name, list(index), path)
    if mode == "logical":  # a root slot's bits above its value are no part of the array
        va, vb = logical_value(va), logical_value(vb)
    return ea, eb, va, vb


def _concrete_difference(
    ctx: _Context,
    a: HloModule,
    b: HloModule,
    path: tuple,
    ra: ArrayShape,
    rb: ArrayShape,
    element: tuple,
    offsets: dict,
):
    """Evaluate both (concrete) modules at ``element``: None if equal there, else (kind, cex)."""
    if any(not 0 <= e < d for e, d in zip(element, ra.dimensions, strict=True)):
        return None
    _, _, va, vb = _root_values(a, b, ctx.mode, ARITHMETIC, dict(offsets), element, path, ctx.float_rules)
    cex: dict[str, Any] = {"element": tuple(element), "output": path}
    if offsets:
        cex["start_indices"] = {f"parameter {n}": v for n, v in sorted(offsets.items())}
    if ctx.mode == "physical":
        bits = layout_map(ra).element_bits
        sa, sb = _root_slot(ra, element, ARITHMETIC), _root_slot(rb, element, ARITHMETIC)
        shown = [show_value(v) for v in (va, vb)]
        if isinstance(va, SlotBits) != isinstance(vb, SlotBits):  # the plain one has zeros above it
            k = 1 if isinstance(va, SlotBits) else 0
            shown[k] += " with zeros above it in its slot"
        cex["before"] = f"bit {sa * bits}: {shown[0]}"
        cex["after"] = f"bit {sb * bits}: {shown[1]}"
        if sa != sb:  # the roots' layouts place the element apart: a difference whatever the values
            cex["placement"] = (
                f"root element {tuple(element)} is at bit {sa * bits} before, bit {sb * bits} after"
            )
            return "data", cex
    else:
        cex["before"], cex["after"] = show_value(va), show_value(vb)
    kind = difference_kind(va, vb)
    return None if kind is None else (kind, cex)


def _ops_of(value_text: str) -> list[str]:
    return sorted(set(re.findall(r"([a-z][a-z\-]*(?:->\w+)?)\(", value_text)))


def _confirm_by_execution(
    ctx: _Context,
    a: HloModule,
    b: HloModule,
    sizes: dict,
    cex: dict,
    describe: Callable[[tuple], dict | None],
) -> ProofResult:
    """A difference under uninterpreted ops: real only if executing the modules shows one.

    The refutation then names the element where execution found the difference (described
    with ``describe``, symbolically, and by the executor's values in ``execution``)."""
    ops = ", ".join(_ops_of(cex.get("before", "") + " " + cex.get("after", ""))) or "elementwise ops"
    encoding = "integer + uninterpreted elementwise ops, confirmed by execution"
    try:
        from layout_algebra.hlo.execute_compare import compare
    except ImportError:
        return ctx.result(
            "unknown",
            encoding,
            reason=f"the modules differ under uninterpreted {ops} at {sizes or 'these sizes'}, element {cex['element']}, "
            "but no executor is available to confirm the difference with the real ops",
        )
    try:
        # large cones (compute ops run for real, many cut parameters): fewer trials, as a budget
        large = sum(len(c.instructions) for m in (a, b) for c in m.computations) > 400
        comparison = compare(a, b, mode=ctx.mode, sizes=sizes or None, max_trials=8 if large else None)
    except (ValueError, NotImplementedError) as err:
        return ctx.result("unknown", encoding, reason=f"the executor could not run the modules: {err}")
    if comparison.same is False:
        confirmed = dict(cex)
        if comparison.element is not None and tuple(comparison.element) != tuple(cex["element"]):
            there = describe(tuple(comparison.element))
            confirmed = dict(there) if there is not None else dict(cex, before="", after="")
            confirmed["element"] = tuple(comparison.element)
        confirmed["sizes"] = dict(sizes)
        confirmed["execution"] = comparison.detail
        return ctx.result("refuted", encoding, counterexample=confirmed)
    if comparison.same is None:
        return ctx.result(
            "unknown",
            encoding,
            reason=f"the executor does not run these modules: {comparison.reason or comparison.detail}",
        )
    return ctx.result(
        "unknown",
        encoding,
        reason=f"the modules differ only as uninterpreted functions ({ops}); executing them with the real ops "
        f"at {sizes or 'these sizes'} shows no difference: the rewrite relies on properties of {ops} "
        "(e.g. commutativity) that the verifier does not assume",
    )


def float_rules_used(result: ProofResult) -> tuple[str, ...]:
    """The :data:`FLOAT_RULES` a proof of :func:`verify_rewrite` relied on (its encoding names them)."""
    if result.status != "proved" or "; float rules: " not in result.encoding:
        return ()
    names = result.encoding.rsplit("; float rules: ", 1)[1].split(", ")
    return tuple(n for n in names if n in FLOAT_RULES)


def _why(err: Exception) -> str:
    if isinstance(err, RecursionError):
        return "the module's chains of instructions are too deep for the encoding (Python's recursion limit)"
    return str(err)


def _verify_leaf(ctx: _Context, path: tuple, ra: ArrayShape, rb: ArrayShape) -> ProofResult:
    encoding = "integer (layout stages of every instruction) + uninterpreted elementwise ops"
    a, b = ctx.before, ctx.after
    symbolic = bool(_symbols_of(a, b))
    try:
        answer, details = _element_query(ctx, a, b, path, ra, rb, concrete=not symbolic)
    except (UnsupportedExpression, Inexpressible, RecursionError) as err:
        return ctx.result("unknown", encoding, reason=_why(err))
    if answer == "proved":
        return ctx.result("proved", encoding)
    if answer == "unknown":
        return ctx.result("unknown", encoding, reason=details)
    values, element, offsets = details
    for sym in _symbols_of(a, b):
        values.setdefault(sym, 1)
    if not assumptions_hold(ctx.assumptions, values):
        return ctx.result(
            "unknown", encoding, reason=f"the solver's sizes {values} do not satisfy the assumptions"
        )
    sizes = _concrete_sizes(ctx, values) if symbolic else {}
    try:
        ca, cb = (_specialize_module(a, values), _specialize_module(b, values)) if symbolic else (a, b)
        cra = _leaves(ca.entry.root.shape)[[p for p, _ in _leaves(a.entry.root.shape)].index(path)][1]
        crb = _leaves(cb.entry.root.shape)[[p for p, _ in _leaves(b.entry.root.shape)].index(path)][1]
        found = _concrete_difference(ctx, ca, cb, path, cra, crb, element, offsets)
        if found is None and symbolic:  # the symbolic model's element is not one: solve again at its sizes
            sub = dataclasses.replace(ctx, before=ca, after=cb)
            answer, details = _element_query(sub, ca, cb, path, cra, crb, concrete=True)
            if answer == "proved":
                return ctx.result(
                    "unknown",
                    encoding,
                    reason=f"the symbolic query found a difference at {sizes}, but the modules at those sizes are proved equal",
                )
            if answer == "unknown":
                return ctx.result("unknown", encoding, reason=f"at {sizes}: {details}")
            _, element, offsets = details
            found = _concrete_difference(ctx, ca, cb, path, cra, crb, element, offsets)
    except (UnsupportedExpression, Inexpressible, RecursionError) as err:
        return ctx.result("unknown", encoding, reason=_why(err))
    if found is None:
        return ctx.result(
            "unknown",
            encoding,
            reason="the solver's element shows no difference when the modules are evaluated (an encoding gap)",
        )
    kind, cex = found
    cex = {"sizes": sizes, **cex} if symbolic else {"sizes": {}, **cex}
    if kind == "data":
        return ctx.result("refuted", encoding, counterexample=cex)

    def describe(at: tuple) -> dict | None:
        found = _concrete_difference(ctx, ca, cb, path, cra, crb, at, offsets)
        return None if found is None else found[1]

    return _confirm_by_execution(ctx, ca, cb, sizes, cex, describe)


def _answering_rewrite(verify: Callable[..., ProofResult]) -> Callable[..., ProofResult]:
    """The result remembers its question (``before``, ``after``, ``mode``), so that
    ``result.condition`` can find the sizes for which the rewrite is safe (on first use)."""

    @functools.wraps(verify)
    def answered(before: str | HloModule, after: str | HloModule, **options: Any) -> ProofResult:
        result = verify(before, after, **options)
        mode = (("mode", options.get("mode", "physical")),)
        question = Question("rewrite", (before, after), mode, tuple(parse_assumptions(options.get("assume"))))
        return dataclasses.replace(result, question=question)

    return answered


@_answering_rewrite
def verify_rewrite(
    before: str | HloModule,
    after: str | HloModule,
    *,
    assume: Assumptions = None,
    mode: str = "physical",
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
    float_rules: Collection[str] = (),
) -> ProofResult:
    """Prove or refute that rewriting ``before`` into ``after`` is safe (module docstring: the contract).

    ``before``/``after``: HLO module texts or parsed modules. ``assume``: conditions on the
    symbolic sizes (``"N % 8 == 0"``). ``mode``: ``"physical"`` (same root buffer, bit for
    bit) or ``"logical"`` (same root array, layouts free). Raises ``ValueError``
    (``InvalidHlo``, ``UnsupportedHlo``, ``HloParseError``) for bad input, quoting it: text
    that does not parse, or a ``before`` module XLA's verifier rejects. An ``after`` module XLA's
    verifier rejects at sizes the assumptions allow is an unsafe rewrite: ``refuted``, the
    counterexample's ``invalid_hlo`` saying XLA's rule and ``sizes`` where it fails.
    A refutation's counterexample has ``sizes`` (name -> int), ``element`` (a root index,
    or ``None`` when a buffer property differs) and ``before``/``after`` descriptions.
    ``float_rules``: names from :data:`FLOAT_RULES` the proof may use (none by default:
    elementwise ops stay uninterpreted); a proof that used one names it in its ``encoding``.
    """
    start = time.perf_counter()
    a, b = as_module(before), as_module(after)
    options: dict[str, Any] = dict(assume=assume, mode=mode, timeout_ms=timeout_ms, float_rules=float_rules)
    try:
        return _verify_modules(a, b, **options)
    except InvalidHlo as err:
        _verify_modules(a, a, **options)  # an invalid before module raises here: bad input
        sizes = dict(getattr(err, "sizes", {}))
        claim = f"rewrite of {a.entry.name} preserves the root {'buffer' if mode == 'physical' else 'array'}"
        return ProofResult(
            "refuted",
            claim,
            time.perf_counter() - start,
            "XLA's verifier rules (hlo.validity) on the rewritten module",
            counterexample={"sizes": sizes, "element": None, "invalid_hlo": str(err)},
            reason=f"the rewritten module is invalid HLO (XLA's verifier rejects it): {err}",
        )


#: ``excess-precision`` once the comparison at the stated precision has been tried.
ERASING = EXCESS_PRECISION + ":erasing"


def _verify_modules(
    before: HloModule,
    after: HloModule,
    *,
    assume: Assumptions = None,
    mode: str = "physical",
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
    float_rules: Collection[str] = (),
) -> ProofResult:
    """:func:`verify_rewrite` on parsed modules; raises ``InvalidHlo`` for either module invalid.

    With ``excess-precision`` among the rules, the modules are compared with float precision
    erased only when the comparison at the stated precision does not prove them equal (and they
    hold two float types): a proof names the assumption exactly when it needed it."""
    if EXCESS_PRECISION in float_rules and len(float_types_of(before, after)) > 1:
        stated = tuple(r for r in float_rules if r != EXCESS_PRECISION)
        options = dict(assume=assume, mode=mode, timeout_ms=timeout_ms)
        try:
            first: ProofResult | None = _verify_modules(before, after, float_rules=stated, **options)
        except InvalidArgumentError:  # e.g. roots of two float types: compared only once erased
            first = None
        if first is not None and first.status == "proved":
            return first
        erased = _verify_modules(before, after, float_rules=(*stated, ERASING), **options)
        if erased.status == "proved" or first is None:
            return erased
        return first
    float_rules = [EXCESS_PRECISION if r == ERASING else r for r in float_rules]
    if mode not in MODES:
        raise InvalidArgumentError(f"mode {mode!r} is not one of {', '.join(MODES)}")
    unknown_rules = sorted(set(float_rules) - set(FLOAT_RULES))
    if unknown_rules:
        raise InvalidArgumentError(f"float rules {unknown_rules} are not among {', '.join(FLOAT_RULES)}")
    start = time.perf_counter()
    a, b = before, after
    _check_interface(a, b, mode)
    _check_layouts(a)
    _check_layouts(b)
    leaves_a, leaves_b = _leaves(a.entry.root.shape), _leaves(b.entry.root.shape)
    if [p for p, _ in leaves_a] != [p for p, _ in leaves_b]:
        raise InvalidArgumentError(
            f"the roots have different tuple structures: {a.entry.root.shape} vs {b.entry.root.shape}"
        )
    for (_, ra), (_, rb) in zip(leaves_a, leaves_b, strict=True):
        erased = (  # logical mode, precision erased: two float roots compare as abstract values
            mode == "logical"
            and EXCESS_PRECISION in float_rules
            and is_float_convert(ra.element_type.text, rb.element_type.text)
        )
        if (
            (ra.element_type != rb.element_type and not erased)
            or ra.rank != rb.rank
            or not all(dims_equal(x, y) for x, y in zip(ra.dimensions, rb.dimensions, strict=False))
        ):
            raise InvalidArgumentError(f"the roots differ in element type or dimensions: {ra} vs {rb}")
    # none admitting no sizes (no vacuous proof); the parameters' dimension formulas are
    # implicit facts: f32[N/8,128] is an array only where 8 | N (and N/8 >= 0)
    parameter_arrays = _parameter_arrays(a, b)
    assumptions, caveat = admitted_assumptions(assume, shapes=parameter_arrays)
    ctx = _Context(
        a,
        b,
        mode,
        (*assumptions, *shape_facts(parameter_arrays)),
        timeout_ms,
        f"rewrite of {a.entry.name} preserves the root {'buffer' if mode == 'physical' else 'array'}",
        start,
        frozenset(float_rules),
    )
    for check, checked in (
        (_check_dimension_formulas, "dimension formulas (Z3)"),
        (_check_bitcast_sizes, "shape sizes of the bitcasts (Z3)"),  # XLA's bitcast rule
    ):
        undecided = check(ctx)  # valid HLO at every size allowed, before any answer
        if undecided is not None:
            return ctx.result("unknown", checked, reason=undecided)
    results = []
    for (path, ra), (_, rb) in zip(leaves_a, leaves_b, strict=True):
        if mode == "physical":
            refused = _buffer_properties(ctx, path, ra, rb)
            if refused is not None:
                if refused.status == "refuted":
                    return refused
                results.append(refused)
                continue
        result = _verify_leaf(ctx, path, ra, rb)
        if result.status == "refuted":
            return result
        results.append(result)
    unknown = [r for r in results if r.status == "unknown"]
    if unknown:
        return unknown[0]
    return unless_vacuous(ctx.result("proved", results[0].encoding if results else "no outputs"), caveat)


# ------------------------------------------------ hooks for size conditions (rewrite_conditions)
def rewrite_modules(
    before: str | HloModule, after: str | HloModule, mode: str = "physical"
) -> tuple[HloModule, HloModule]:
    """The two modules of a rewrite, parsed, with the checks :func:`verify_rewrite` makes
    before any proof (mode, interface, root structure); ``ValueError`` quoting what is wrong."""
    if mode not in MODES:
        raise InvalidArgumentError(f"mode {mode!r} is not one of {', '.join(MODES)}")
    a, b = as_module(before), as_module(after)
    _check_interface(a, b, mode)
    if [p for p, _ in _leaves(a.entry.root.shape)] != [p for p, _ in _leaves(b.entry.root.shape)]:
        raise InvalidArgumentError(
            f"the roots have different tuple structures: {a.entry.root.shape} vs {b.entry.root.shape}"
        )
    return a, b


def specialize_module(module: HloModule, values: Mapping[Any, int]) -> HloModule:
    """The module at concrete sizes (every array shape's symbols given ``values``)."""
    return _specialize_module(module, values)


def root_element_differs(a: HloModule, b: HloModule, element: Sequence[Any], mode: str, ar: Any) -> Any:
    """The verifier's condition (a bool, or a Z3 term with ``ar`` an ``IntArithmetic``) that
    root element ``element`` of the two modules has different values, uninterpreted ops
    free. (Physical mode: the element's slot is not compared; see ``_element_query``.)
    Raises ``UnsupportedExpression`` where the encoding cannot state it."""
    try:
        _, _, va, vb = _root_values(a, b, mode, ar, {}, element, ())
    except (Inexpressible, RecursionError) as err:
        raise UnsupportedExpression(_why(err)) from err
    return differ_values(va, vb)
