"""For which sizes is a rewrite safe? Size conditions for ``verify_rewrite``.

An HLO rewrite over symbolic sizes (dimension symbols in the module text) is often safe
for some sizes only: ``reshape -> bitcast`` of a tiled array keeps every bit only when the
merged rows fill whole tiles. :func:`rewrite_claim` states "rewriting ``before`` into
``after`` is safe" as a claim of :mod:`layout_algebra.decide.conditions`, whose engine then finds
the weakest condition on the size symbols and proves it, as for the layout claims:

* the **exact concrete decision** at each grid size is ``verify_rewrite`` on the modules
  with those sizes (concrete modules: every element checked, a refutation confirmed by
  evaluation);
* **sufficiency**: ``verify_rewrite`` on the symbolic modules with the condition's
  divisibility substituted (``N = 8*N_8``), equalities fixed and bounds split into values;
* **necessity**: Z3 proves that wherever the condition fails, the two roots differ in a
  buffer property the verifier refutes outright (bytes of the buffer or of XLA's
  allocation, memory space, element size), a ``bitcast`` changes its shape size (invalid
  HLO, ``hlo.validity``), or a **witness element** chosen from the grid
  (each coordinate ``0``, ``1``, ``d-1`` or ``d//2`` of its dimension ``d``) has different
  values in the verifier's own encoding. The witness proof is trusted only for rewrites
  of pure data movement (:data:`WITNESS_OPCODES`: every value is a parameter element, a
  constant or padding, so an encoded difference is a real one for some input) with the
  same root layout on both sides; for others necessity is checked only on the grid and
  the status says ``sufficient, necessary up to N<=B``.

>>> from layout_algebra.decide import conditions
>>> before = '''HloModule m
... ENTRY e {
...   p = f32[2,N,128]{2,1,0:T(8,128)} parameter(0)
...   ROOT r = f32[2*N,128]{1,0:T(8,128)} reshape(p)
... }'''
>>> c = conditions.condition_of(rewrite_claim(before, before.replace("reshape(p)", "bitcast(p)")))
>>> c.expr, c.status
(Eq(Mod(N, 8), 0), 'exact')
>>> c.details[-1]
'necessary: Z3: wherever the condition fails, the sizes differ or element [2*N - 1, 0] differs'

Sizes where a module is not valid HLO (a slice past its operand) count as failures; a
size where the verifier itself answers ``unknown`` stops the search (status ``unknown``).
The verifier's concrete decision costs tens of milliseconds, so the grids are smaller
than for layout claims: 1..64 for one symbol, 1..12 for two, 1..6 for three.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import sympy
import z3

from layout_algebra.decide import conditions
from layout_algebra.decide.conditions import (
    DEFAULT_BUDGET_S,
    Claim,
    Condition,
    UndecidedClaim,
    definitions,
    question_condition,
    substitute,
)
from layout_algebra.hlo.ir import HloModule
from layout_algebra.hlo.validity import bitcast_shape_sizes
from layout_algebra.hlo.verify import (
    map_array_shapes,
    rewrite_modules,
    root_element_differs,
    specialize_module,
    verify_rewrite,
)
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.meaning.sizes import size_report
from layout_algebra.meaning.stages.arith import ARITHMETIC
from layout_algebra.model.errors import InvalidArgumentError
from layout_algebra.model.questions import Question
from layout_algebra.model.shapes import ArrayShape, TupleShape
from layout_algebra.model.symbols import as_sympy
from layout_algebra.prove.assumptions import assumption_terms, condition_term, parse_assumptions
from layout_algebra.prove.encode import IntArithmetic, UnsupportedExpression, sympy_to_z3
from layout_algebra.prove.query import as_bool, in_box, model_int, side_conditions, solver_for
from layout_algebra.prove.result import ProofResult

__all__ = [
    "REWRITE_BOUNDS",
    "WITNESS_OPCODES",
    "condition_of",
    "rewrite_claim",
    "substitute_module",
    "when_rewrite_is_safe",
]

#: Grid bound per number of symbols for rewrite claims (the verifier is the slow decision).
REWRITE_BOUNDS: Mapping[int, int] = {0: 1, 1: 64, 2: 12, 3: 6}

#: Ops whose element values are parameter elements, constants or padding, never an
#: uninterpreted function: where the verifier's encoding says two such values differ,
#: some input makes them differ. Necessity by a witness element is proved only for
#: rewrites made of these ops (and with the same root layout on both sides).
WITNESS_OPCODES = frozenset(
    "parameter constant copy bitcast reshape transpose broadcast slice concatenate pad reverse".split()
)


def substitute_module(module: HloModule, substitution: Mapping[sympy.Symbol, Any]) -> HloModule:
    """``module`` with its size symbols replaced by expressions (``N -> 8*N_8``) in every
    array shape; :func:`~layout_algebra.decide.conditions.substitute` on each."""
    return map_array_shapes(module, lambda s: substitute(s, substitution))


def _arrays_in(shape: Any) -> list[ArrayShape]:
    """The array shapes inside a shape (a tuple's, in order; none in a token)."""
    if isinstance(shape, ArrayShape):
        return [shape]
    if isinstance(shape, TupleShape):
        return [leaf for s in shape.elements for leaf in _arrays_in(s)]
    return []


def _array_shapes(*modules: HloModule) -> tuple[ArrayShape, ...]:
    """Every array shape of the modules' instructions, once each (the layouts' numbers
    and the size symbols come from them)."""
    seen: dict[str, ArrayShape] = {}
    for m in modules:
        for _, instruction in m.instructions():
            for leaf in _arrays_in(instruction.shape):
                seen.setdefault(str(leaf), leaf)
    return tuple(seen.values())


def _buffer_failure(a: HloModule, b: HloModule) -> sympy.Basic:
    """Where the roots differ in a buffer property the verifier refutes by itself."""
    failures: list[sympy.Basic] = []
    for ra, rb in zip(_arrays_in(a.entry.root.shape), _arrays_in(b.entry.root.shape), strict=True):
        ma, mb = layout_map(ra), layout_map(rb)
        if (
            ra.effective_layout.memory_space != rb.effective_layout.memory_space
            or ma.element_bits != mb.element_bits
        ):
            return sympy.true
        failures.append(sympy.Ne(as_sympy(ma.size_in_bytes), as_sympy(mb.size_in_bytes)))
        failures.append(
            sympy.Ne(
                as_sympy(size_report(ra).first_tile_bytes),
                as_sympy(size_report(rb).first_tile_bytes),
            )
        )
    return sympy.Or(*failures)


def _bitcast_failure(*modules: HloModule) -> sympy.Basic:
    """Where a ``bitcast`` changes its shape size (``hlo.validity``): invalid HLO, which
    the verifier refuses in either mode, so the rewrite is not safe there."""
    failures: list[sympy.Basic] = []
    for m in modules:
        for computation, instruction in m.instructions():
            if instruction.opcode != "bitcast" or len(instruction.operands) != 1:
                continue
            operand = computation.instruction(instruction.operands[0].name).shape
            if isinstance(operand, ArrayShape) and isinstance(instruction.shape, ArrayShape):
                x, y = bitcast_shape_sizes(operand, instruction.shape)
                failures.append(sympy.Ne(as_sympy(x), as_sympy(y)))
    return sympy.Or(*failures)


def rewrite_claim(before: str | HloModule, after: str | HloModule, *, mode: str = "physical") -> Claim:
    """The claim "rewriting ``before`` into ``after`` is safe" (``mode`` as for
    ``verify_rewrite``), for :func:`layout_algebra.decide.conditions.condition_of`.

    Raises ``ValueError`` for modules that are not a rewrite at all (a changed interface,
    roots of other types or dimensions), as ``verify_rewrite`` does.
    """
    a, b = rewrite_modules(before, after, mode)
    shapes = _array_shapes(a, b)

    def decide(sizes: Mapping[sympy.Symbol, int]) -> bool:
        try:
            result = verify_rewrite(specialize_module(a, sizes), specialize_module(b, sizes), mode=mode)
        except ValueError:  # not valid HLO at these sizes (or not a rewrite): not safe there
            return False
        if result.status == "unknown":
            at = ", ".join(f"{k}={v}" for k, v in sizes.items())
            raise UndecidedClaim(f"the verifier answers unknown at {at}: {result.reason}")
        return result.status == "proved"

    symbols = sorted({s for shape in shapes for s in shape.size_symbols}, key=str)

    def prove(substitution: Mapping[sympy.Symbol, Any], assume: tuple[Any, ...], timeout_ms: int) -> str:
        values = {s: substitution.get(s, s) for s in symbols}
        if all(isinstance(v, int) or getattr(v, "is_Integer", False) for v in values.values()):
            return "proved" if decide({s: int(v) for s, v in values.items()}) else "refuted"
        try:
            result = verify_rewrite(
                substitute_module(a, substitution),
                substitute_module(b, substitution),
                assume=list(assume) or None,
                mode=mode,
                timeout_ms=timeout_ms,
            )
        except ValueError:
            return "refuted"
        return result.status

    failure = sympy.Or(_buffer_failure(a, b) if mode == "physical" else sympy.false, _bitcast_failure(a, b))
    name = f"rewrite of {a.entry.name} ({mode}) is safe"
    roots = f"{a.entry.root.opcode} -> {b.entry.root.opcode}"
    witnessed = _witnessable(a, b, mode)
    root = a.entry.root.shape

    def fails_at(element: Any, sizes: Mapping[sympy.Symbol, int]) -> bool:
        try:
            ca, cb = specialize_module(a, sizes), specialize_module(b, sizes)
        except ValueError:  # no such modules there (a dimension formula that is no size): no element
            return False
        return bool(root_element_differs(ca, cb, list(element), mode, ARITHMETIC))

    def prove_witnesses(
        chosen: list[tuple[Any, ...]], assume: tuple[Any, ...], timeout_ms: int
    ) -> ProofResult:
        return _witness_query(a, b, mode, failure, chosen, assume, timeout_ms)

    return Claim(
        f"{name}: {roots} of {root}",
        shapes,
        lambda _: False,  # never called: decide_sizes answers
        lambda _s, _a, _t: "unknown",  # never called: prove_sizes answers
        failure,
        decide_sizes=decide,
        prove_sizes=prove,
        bounds=REWRITE_BOUNDS,
        output_dims=tuple(root.dimensions) if witnessed and isinstance(root, ArrayShape) else None,
        fails_at_sizes=fails_at if witnessed else None,
        prove_witnesses=prove_witnesses if witnessed else None,
    )


def _witnessable(a: HloModule, b: HloModule, mode: str) -> bool:
    """Whether a witness element's difference in the encoding is a real one: one array
    root, the same root layout on both sides (physical mode: an element's slot is then
    the same, so only its value can differ) and only :data:`WITNESS_OPCODES`."""
    ra, rb = a.entry.root.shape, b.entry.root.shape
    if not (isinstance(ra, ArrayShape) and isinstance(rb, ArrayShape)):
        return False
    if mode == "physical" and str(ra.effective_layout) != str(rb.effective_layout):
        return False
    return all(i.opcode in WITNESS_OPCODES for m in (a, b) for _, i in m.instructions())


def _witness_query(
    a: HloModule,
    b: HloModule,
    mode: str,
    failure: sympy.Basic,
    chosen: list[tuple[Any, ...]],
    assume: tuple[Any, ...],
    timeout_ms: int,
) -> ProofResult:
    """Z3: for every size the assumptions allow, a root buffer property differs or one of
    the ``chosen`` elements (expressions in the sizes) lies in the root and differs."""
    import time

    start = time.perf_counter()
    claim = f"wherever {list(assume)}, the rewrite fails at element " + " or ".join(map(str, chosen))
    encoding = "integer (the verifier's element encoding at witness elements)"
    try:
        ar = IntArithmetic()
        context = assumption_terms(parse_assumptions(list(assume)), ar)
        root = a.entry.root.shape
        assert isinstance(root, ArrayShape)  # witnesses are made only for array roots
        dims = [as_sympy(d) for d in root.dimensions]
        fails = [condition_term(failure, ar)]
        for w in chosen:
            element = [sympy_to_z3(as_sympy(x), ar) for x in w]
            box = [*(x >= 0 for x in element), *in_box(element, dims, ar)]
            differs = as_bool(root_element_differs(a, b, element, mode, ar))
            fails.append(z3.And(*box, differs))
        solver = solver_for(None, timeout_ms, fast_first=True)
        solver.add(*context, z3.Not(z3.Or(*fails)), *ar.side, *ar.obligations)
        side = side_conditions(ar, context, timeout_ms)
        answer = solver.check()
    except (UnsupportedExpression, RecursionError, ValueError) as err:
        return ProofResult("unknown", claim, time.perf_counter() - start, encoding, reason=str(err))
    if answer == z3.unsat:
        if side is None or side.check() == z3.unsat:
            return ProofResult("proved", claim, time.perf_counter() - start, encoding)
        why = "the main query is unsat, but a side condition it relied on (digits in their box, divisors > 0) could not be proved"
    elif answer == z3.sat:
        values = {sym: model_int(solver.model(), v) for sym, v in ar.symbols.items()}
        why = _witnesses_miss(a, b, mode, failure, chosen, values)
    else:
        why = f"could not be proved: solver: {solver.reason_unknown()}"
    return ProofResult("unknown", claim, time.perf_counter() - start, encoding, reason=why)


def _witnesses_miss(
    a: HloModule,
    b: HloModule,
    mode: str,
    failure: sympy.Basic,
    chosen: list[tuple[Any, ...]],
    values: Mapping[sympy.Symbol, int],
) -> str:
    """Why the witness query is not proved, given the solver's sizes ``values`` where it
    found no failure: said as a fact only if evaluating both modules there confirms it."""
    at = ", ".join(f"{k}={v}" for k, v in sorted(values.items(), key=lambda kv: str(kv[0])))
    unconfirmed = f"could not be proved: the solver's sizes {at} (where it found no failure) are not confirmed by evaluation"
    if failure.subs(values) is not sympy.false:
        return unconfirmed
    try:
        ca, cb = specialize_module(a, values), specialize_module(b, values)
        root = ca.entry.root.shape
        for w in chosen:
            element = [as_sympy(x).subs(values) for x in w]
            if not isinstance(root, ArrayShape) or not all(getattr(e, "is_Integer", False) for e in element):
                return unconfirmed
            inside = all(0 <= int(e) < d for e, d in zip(element, root.dimensions, strict=True))
            if (
                inside
                and root_element_differs(ca, cb, [int(e) for e in element], mode, ARITHMETIC) is not False
            ):
                return unconfirmed
    except (ValueError, UnsupportedExpression, RecursionError):  # invalid HLO there: a failure
        return unconfirmed
    return (
        f"does not hold at {at}: the roots agree in size there and at each of these elements "
        "(re-checked by evaluating both modules), so these witnesses cannot show the condition necessary"
    )


def when_rewrite_is_safe(
    before: str | HloModule,
    after: str | HloModule,
    *,
    mode: str = "physical",
    bound: int | None = None,
    budget_s: float = DEFAULT_BUDGET_S,
) -> Condition:
    """For which sizes rewriting ``before`` into ``after`` is safe (``verify_rewrite`` proves
    it); ``bound`` and ``budget_s`` as for :func:`~layout_algebra.decide.conditions.condition_of`."""
    return conditions.condition_of(rewrite_claim(before, after, mode=mode), bound, budget_s=budget_s)


def condition_of(result: Any, bound: int | None = None, *, budget_s: float = DEFAULT_BUDGET_S) -> Condition:
    """The weakest size condition under which ``result``'s claim holds, derived under the
    assumptions the result was asked under (``layout_algebra.condition_of``).

    ``result``: what a decision returned (``reshape_is_bitcast``, ``transpose_is_bitcast``,
    ``bitcast_is_valid``, ``prove.in_bounds``, ``prove.no_padding``, ``verify_rewrite``),
    which records its question. Sizes an assumption defines (``M == 128*N``) are substituted,
    the other assumptions restrict the grid and are assumed by both proofs
    (``decide.conditions.question_condition``). This function lives here, in the layer
    that can build both kinds of claim, so that no result has to reach up for it. The
    answer is kept per question (asked again, it is not recomputed).

    >>> from layout_algebra.decide.bitcast import reshape_is_bitcast
    >>> r = reshape_is_bitcast("f32[N,128]{1,0:T(8,128)}", "f32[M]{0}", assume="M == 128*N")
    >>> condition_of(r)
    Condition(Eq(Mod(N, 8), 0), 'exact')
    """
    question = getattr(result, "question", None)
    if question is None:
        raise InvalidArgumentError(
            "this result does not record the claim it answers, so it has no size condition"
        )
    try:
        return _kept_condition(question, bound, budget_s)
    except TypeError:  # a question that cannot be a key (unhashable arguments): found afresh
        return _question_condition(question, bound, budget_s)


@functools.lru_cache(maxsize=256)
def _kept_condition(question: Question, bound: int | None, budget_s: float) -> Condition:
    return _question_condition(question, bound, budget_s)


def _question_condition(question: Question, bound: int | None, budget_s: float) -> Condition:
    if question.kind != "rewrite":
        return question_condition(question, bound, budget_s=budget_s)
    options = dict(question.options)
    before, after = question.arguments
    a, b = rewrite_modules(before, after, options.get("mode", "physical"))
    symbols = sorted({s for shape in _array_shapes(a, b) for s in shape.size_symbols}, key=str)
    defined, given = definitions(question.assume, symbols)
    if defined:
        a, b = substitute_module(a, defined), substitute_module(b, defined)
    claim = rewrite_claim(a, b, **options)
    return conditions.condition_of(claim, bound, budget_s=budget_s, assume=given)
