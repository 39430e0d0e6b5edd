"""Pass validation of loops and conditionals: a later ``while`` paired with an earlier one by induction.

Pass validation (:func:`layout_algebra.hlo.validate_pair`) pairs a later opaque op with an
earlier one of the same signature. A pass that touches a loop body (its layouts, its fusions)
changes the signature of the ``while``; this module pairs such loops by an argument on the
loop itself.

The inductive argument
----------------------
An earlier ``while(x)`` with condition ``c`` and body ``f`` and a later ``while(x')`` with
condition ``c'`` and body ``f'``, over states of the same logical type, compute the same
state when

(a) ``x = x'`` (the init operands, proved logically equal like the operands of any cut);
(b) ``c(s) = c'(s)`` for every state ``s`` and (c) ``f(s) = f'(s)`` for every state ``s``.

Write ``s_k = f^k(x)`` and ``s'_k = f'^k(x')``. By induction ``s_k = s'_k`` for every ``k``:
``s_0 = x = x' = s'_0``, and ``s_k = s'_k`` gives ``s_{k+1} = f(s_k) = f'(s_k) = f'(s'_k) =
s'_{k+1}`` by (c). By (b) ``c(s_k) = c'(s'_k)``, so both loops stop at the same first ``k``
whose condition is false (or neither stops) and return the same state. (b) and (c) are
proved by validating the two computations as modules (:func:`computation_module`: the
computation is the entry, its state ``parameter(0)``, with every computation it calls) in
**logical** mode, with the same machinery as a pair of modules (cut points, nested loops,
the float rules): a proof of the loop rests on every assumption those proofs used.

Comparing logically is sound after layout assignment too: the state is a value, a tuple of
logical arrays; its layout (the same in the ``while``, the body's parameter and root and the
condition's parameter, checked: :func:`loop_shape_problem`) only says how each side stores
it, and a ``bitcast`` in a body is read through the layout its own module declares.

Each state element is a parameter of those modules (:func:`state_function`), so that a
``dynamic-slice`` start index read from the state is a value the verifier reads.

A state element that both bodies pass through (``get-tuple-element(parameter(0)), index=i``
at root position ``i``) and whose init is the same constant in both loops holds that constant
all along: when (b) or (c) fails on all states it is proved again on the states where such
elements hold their constants (:func:`pinned`), the only states the induction visits.

A ``conditional`` is paired the same way: the same branch selector and branch operands
(proved equal) and each branch proved equal as a function of its operand. One whose branch
operands and result a pass wrapped in 1-tuples (``conditional-canonicalizer``) is paired
when each later branch, unwrapped, is proved equal to the earlier one
(:func:`tupled_conditional`); its result is then ``tuple(r)`` for the earlier result ``r``.

A loop state the pass widened
-----------------------------
``while-loop-invariant-code-motion`` hoists an invariant value ``v`` out of the body and
carries it in new state elements: the later state is ``(s, e)``, ``e`` appended. Such a
later loop is the earlier one's counterpart when, besides (a) on the common elements,

(d) the later body passes each new element through (root element ``j`` is
    ``get-tuple-element(parameter(0)), index=j``);
(e) the init of each new element is ``g_j(x)``, an expression (in the later module) of
    constants and of init elements ``x_i`` that the **earlier** body passes through
    (root element ``i`` is ``get-tuple-element(parameter(0)), index=i``);
(b'), (c') ``c'(s, g(s)) = c(s)`` and ``f'(s, g(s))`` restricted to the common elements
    ``= f(s)``, for every earlier state ``s`` (proved on modules that compute ``g(s)`` and
    call ``c'``, ``f'``: :func:`wrapper`).

Then ``s'_k = (s_k, g(s_k))`` for every ``k``: at ``k = 0`` by (a) and (e); and if it holds
at ``k``, the common part of ``s'_{k+1}`` is ``f'(s_k, g(s_k)) = f(s_k) = s_{k+1}`` by (c'),
and the new part is ``g(s_k)`` by (d), which is ``g(s_{k+1})`` since ``g`` reads only elements
``f`` passes through. The later loop's result is then ``(r, g(r))`` for the earlier result
``r``, which is how its cut is written (``Cuts.results``).

A state the pass narrowed (``simplify-while-loops`` removes dead and constant elements): the
later state keeps elements ``K`` of the earlier one, in order, each with an init proved equal
to the earlier one's. With ``p`` the restriction to ``K`` and ``s`` ranging over earlier states
whose constant elements hold their constants, ``c'(p(s)) = c(s)`` and ``f'(p(s)) = p(f(s))``
are proved (:func:`narrowed_loop`); then ``s'_k = p(s_k)`` at every ``k``, and the later result
is ``p(r)``. Any other change of the state (an element retyped, new elements not at the end)
is left ``unknown``: "the pass changed the loop state".

>>> from layout_algebra.hlo.parser import parse_module
>>> text = '''HloModule m
... cond {
...   s = (s32[], f32[4]{0}) parameter(0)
...   i = s32[] get-tuple-element(s), index=0
...   n = s32[] constant(5)
...   ROOT lt = pred[] compare(i, n), direction=LT
... }
... body {
...   s = (s32[], f32[4]{0}) parameter(0)
...   i = s32[] get-tuple-element(s), index=0
...   one = s32[] constant(1)
...   j = s32[] add(i, one)
...   v = f32[4]{0} get-tuple-element(s), index=1
...   w = f32[4]{0} negate(v)
...   ROOT t = (s32[], f32[4]{0}) tuple(j, w)
... }
... ENTRY e {
...   x = f32[4]{0} parameter(0)
...   zero = s32[] constant(0)
...   init = (s32[], f32[4]{0}) tuple(zero, x)
...   w = (s32[], f32[4]{0}) while(init), condition=cond, body=body
...   ROOT r = f32[4]{0} get-tuple-element(w), index=1
... }'''
>>> module = parse_module(text)
>>> [c.name for c in computation_module(module, "body").computations]
['body']
>>> loop_shape_problem(module, module.entry.instruction("w")) is None
True

The body written with a double transpose instead of ``negate(v)`` directly is proved the same
loop (:func:`layout_algebra.hlo.validate_pair` uses :func:`inductive_counterpart`):

>>> from layout_algebra.hlo.passes import validate_pair
>>> later = text.replace("w = f32[4]{0} negate(v)", "n = f32[4]{0} negate(v)\\n  w = f32[4]{0} copy(n)")
>>> validate_pair(text, later, mode="logical").status
'proved'

A body that negates one time too few (``i < 4``) is not:

>>> validate_pair(text, text.replace("constant(5)", "constant(4)"), mode="logical").status
'unknown'
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import OrderedDict
from collections.abc import Callable, Collection
from typing import Any

from layout_algebra.hlo.attributes import computation_names
from layout_algebra.hlo.ir import HloComputation, HloInstruction, HloModule, HloOperand
from layout_algebra.hlo.opcodes import RANDOM_OPCODES
from layout_algebra.hlo.pass_cuts import Cuts, Side, decide_equal, relaid
from layout_algebra.hlo.pass_keys import plain_text
from layout_algebra.model.shapes import Shape, TupleShape

__all__ = [
    "LOOP_OPCODES",
    "Prover",
    "computation_module",
    "inductive_counterpart",
    "loop_shape_problem",
    "state_function",
    "tupled_conditional",
    "widened_loop",
]

#: The ops paired by induction when no earlier op has their signature.
LOOP_OPCODES = frozenset({"while", "conditional"})

#: Validates (earlier module, later module) logically; the result has ``status``, ``reason``
#: and ``assumptions`` (a :class:`~layout_algebra.hlo.passes.PassResult`).
Prover = Callable[[HloModule, HloModule], Any]

#: How many earlier loops are tried as the counterpart of one later loop.
MAX_CANDIDATES = 3

_MEMO: OrderedDict[tuple[str, str, str], tuple[str, str, tuple[str, ...]]] = OrderedDict()
_MEMO_SIZE = 256


# ------------------------------------------------------------------------ computations as modules
def called_closure(module: HloModule, name: str) -> list[str]:
    """``name`` and every computation it calls, directly or not (first ``name``)."""
    order: list[str] = []
    stack = [name]
    while stack:
        top = stack.pop()
        if top in order:
            continue
        order.append(top)
        for instr in module.computation(top).instructions:
            stack.extend(c for c in instr.called_computations if c not in order)
    return order


def computation_module(module: HloModule, name: str, extra: tuple[HloComputation, ...] = ()) -> HloModule:
    """Computation ``name`` of ``module`` as the entry of a module of its own, with the
    computations it calls; with ``extra`` computations (which may call ``module``'s), the
    first of them is the entry instead."""
    roots = [name] if not extra else [c for e in extra for i in e.instructions for c in i.called_computations]
    names: list[str] = []
    for root in roots:
        if all(e.name != root for e in extra):
            names.extend(n for n in called_closure(module, root) if n not in names)
    computations = [
        dataclasses.replace(module.computation(n), is_entry=not extra and n == name) for n in names
    ]
    computations.extend(dataclasses.replace(c, is_entry=k == 0) for k, c in enumerate(extra))
    entry = next(c for c in computations if c.is_entry)
    return HloModule(f"{module.name}.{name}", tuple(computations), entry)


def state_function(module: HloModule, name: str) -> HloModule:
    """Computation ``name`` (a loop's condition or body, a branch) as a module whose entry takes
    the elements of its tuple parameter as parameters ``0..n-1`` and calls it on their tuple
    (the same function, each state element an array the verifier reads directly, a
    ``dynamic-slice`` start index among them); a computation of an array keeps its parameter."""
    computation = module.computation(name)
    state = parameter_shape(computation)
    if not isinstance(state, TupleShape) or any(isinstance(e, TupleShape) for e in state.elements):
        return computation_module(module, name)
    instructions = [
        HloInstruction(f"state.s{i}", shape, "parameter", parameter_number=i)
        for i, shape in enumerate(state.elements)
    ]
    operands = tuple(HloOperand(f"state.s{i}") for i in range(len(state.elements)))
    instructions.append(HloInstruction("state.t", state, "tuple", operands))
    instructions.append(
        HloInstruction(
            "state.call",
            computation.root.shape,
            "call",
            (HloOperand("state.t"),),
            to_apply=name,
            attributes={"to_apply": name},
            is_root=True,
        )
    )
    return computation_module(module, name, extra=(HloComputation(f"state.{name}", tuple(instructions)),))


def _digest(module: HloModule) -> str:
    """The module exactly (every field of every instruction, which its text may not show)."""
    return hashlib.sha256(repr((module.entry.name, module.computations)).encode()).hexdigest()


def prove_function(
    prove: Prover, earlier: HloModule, later: HloModule, context: str
) -> tuple[str, str, tuple[str, ...]]:
    """(status, reason, assumptions) of ``prove(earlier, later)``, memoised by the two modules
    exactly (``context``: what else the answer depends on, e.g. the float rules)."""
    key = (_digest(earlier), _digest(later), context)
    if key in _MEMO:
        _MEMO.move_to_end(key)
        return _MEMO[key]
    result = prove(earlier, later)
    answer = (result.status, result.reason, tuple(result.assumptions))
    _MEMO[key] = answer
    while len(_MEMO) > _MEMO_SIZE:
        _MEMO.popitem(last=False)
    return answer


# ------------------------------------------------------------------------ well-formed loops
def single_computation(instr: HloInstruction, key: str) -> str | None:
    names = computation_names(instr.attributes.get(key, ""))
    return names[0] if len(names) == 1 else None


def parameter_shape(computation: HloComputation) -> Shape | None:
    params = [i for i in computation.instructions if i.opcode == "parameter"]
    if len(params) != 1 or params[0].parameter_number != 0:
        return None
    return params[0].shape


def loop_shape_problem(module: HloModule, instr: HloInstruction) -> str | None:
    """Why ``instr`` (a ``while`` of ``module``) is not a loop whose state has one shape
    (layouts included) in the ``while``, its body's parameter and root and its condition's
    parameter, or ``None``: XLA's verifier requires it, and the induction reads it so."""
    body, cond = single_computation(instr, "body"), single_computation(instr, "condition")
    if body is None or cond is None:
        return f"while {instr.name} does not name one body and one condition"
    try:
        b, c = module.computation(body), module.computation(cond)
    except KeyError as err:
        return str(err)
    want = str(instr.shape)
    shapes = {
        f"the body {body}'s parameter": parameter_shape(b),
        f"the body {body}'s root": b.root.shape,
        f"the condition {cond}'s parameter": parameter_shape(c),
    }
    for what, shape in shapes.items():
        if shape is None or str(shape) != want:
            return f"while {instr.name} is {want} but {what} is {shape}"
    return None


# ------------------------------------------------------------------------ pairing
def inductive_counterpart(
    cuts: Cuts, b_name: str, taken: Collection[str], prove: Prover, context: str, timeout_ms: int
) -> tuple[str | None, str]:
    """The earlier op that later ``b_name`` (a ``while`` or ``conditional``) is proved equal to
    by induction (the module docstring), and ``""``; or ``None`` and why none is."""
    a, b = cuts.a, cuts.b
    b_instr = b.by_name[b_name]
    what = f"{b_instr.opcode} {b_name} ({plain_text(b_instr.shape)})"
    same_op = [n for n in a.opaque if n not in taken and a.by_name[n].opcode == b_instr.opcode]
    if b_instr.opcode == "while":
        same = [n for n in same_op if plain_text(a.by_name[n].shape) == plain_text(b_instr.shape)]
        widened = [n for n in same_op if n not in same and extends(a.by_name[n].shape, b_instr.shape)]
        widened += [n for n in same_op if n not in same and narrows(a.by_name[n].shape, b_instr.shape)]
    else:
        same = [n for n in same_op if plain_text(a.by_name[n].shape) == plain_text(b_instr.shape)]
        widened = [
            n
            for n in same_op
            if isinstance(b_instr.shape, TupleShape)
            and len(b_instr.shape.elements) == 1
            and plain_text(b_instr.shape.elements[0]) == plain_text(a.by_name[n].shape)
        ]

    same.sort(key=lambda n: n != b_name)
    failures: list[str] = []
    for a_name in same[:MAX_CANDIDATES]:
        pair = PairAttempt(cuts, a_name, b_name, prove, context, timeout_ms)
        why = pair.same_loop() if b_instr.opcode == "while" else pair.same_conditional()
        if why is None:
            cuts.used_rules.update(pair.assumptions)
            return a_name, ""
        failures.append(f"{a_name}: {why}")
    for a_name in widened[: max(0, MAX_CANDIDATES - len(failures))]:
        pair = PairAttempt(cuts, a_name, b_name, prove, context, timeout_ms)
        if b_instr.opcode == "while":
            wider = extends(a.by_name[a_name].shape, b_instr.shape)
            found = pair.widened_loop() if wider else narrowed_loop(pair)
            change = "the pass changed the loop state" + ("" if wider else " (removed elements)")
        else:
            found = tupled_conditional(pair)
            change = "the pass wrapped the conditional's operands and result in tuples"
        if isinstance(found, str):
            failures.append(f"{a_name}: {change}: {found}")
            continue
        cuts.used_rules.update(pair.assumptions)
        cuts.results[b_name] = found
        return a_name, ""
    if not failures:
        if same_op:
            kinds = ", ".join(sorted({plain_text(a.by_name[n].shape) for n in same_op})[:3])
            if b_instr.opcode != "while":
                return None, (
                    f"{what}: no conditional of the earlier module has the same attributes, operand types and "
                    f"result type, nor the same logical result type (the earlier ones give {kinds})"
                )
            return None, (
                f"{what}: no {b_instr.opcode} of the earlier module has the same attributes, operand types and "
                f"result type, nor the same logical state type (the pass changed the loop state: the earlier "
                f"ones are {kinds})"
            )
        return None, f"{what}: the earlier module has no {b_instr.opcode}"
    return None, (
        f"{what}: no {b_instr.opcode} of the earlier module has the same attributes, operand types and result "
        "type, and none is proved equal by induction: " + "; ".join(failures[:2])
    )


def extends(earlier: Shape, later: Shape) -> bool:
    """``later`` is a tuple that starts with ``earlier``'s elements (logically) and has more."""
    return (
        isinstance(earlier, TupleShape)
        and isinstance(later, TupleShape)
        and len(later.elements) > len(earlier.elements)
        and all(
            plain_text(x) == plain_text(y) for x, y in zip(earlier.elements, later.elements, strict=False)
        )
    )


def outcome(status: str) -> str:
    """A nested verdict as words for a loop pair's ``unknown`` reason. A part of a loop that
    differs (a body on some state, an init element) does not make the loops differ (the
    state may be unreachable, the element unused), so the word ``refuted``, which only a
    pair's own verdict may carry, is not repeated here.

    >>> outcome("refuted"), outcome("unknown")
    ('they differ on some input (not necessarily one the loop reaches)', 'unknown')
    """
    return (
        "they differ on some input (not necessarily one the loop reaches)" if status == "refuted" else status
    )


@dataclasses.dataclass
class PairAttempt:
    """One attempt to prove earlier ``a_name`` and later ``b_name`` equal by induction."""

    cuts: Cuts
    a_name: str
    b_name: str
    prove: Prover
    context: str
    timeout_ms: int
    assumptions: set[str] = dataclasses.field(default_factory=set)

    def equal_operands(self, pairs: list[tuple[str, str]]) -> str | None:
        for ao, bo in pairs:
            status, result = decide_equal(self.cuts, ao, bo, "logical", self.timeout_ms)
            if status != "proved":
                why = result if isinstance(result, str) else (result.reason or result.status)
                return f"operand {ao} vs {bo}: {outcome(status)} ({str(why)[:160]})"
        return None

    def equal_functions(self, what: str, earlier: HloModule, later: HloModule) -> str | None:
        status, reason, used = prove_function(self.prove, earlier, later, self.context)
        if status != "proved":
            return f"{what} not proved equal: {outcome(status)}" + (f" ({reason[:200]})" if reason else "")
        self.assumptions.update(used)
        return None

    def same_loop(self) -> str | None:
        """Why (a), (b), (c) of the induction do not all hold, or ``None``."""
        a, b = self.cuts.a, self.cuts.b
        x, y = a.by_name[self.a_name], b.by_name[self.b_name]
        for side, instr in ((a, x), (b, y)):
            problem = loop_shape_problem(side.module, instr)
            if problem is not None:
                return problem
        why = self.equal_operands([(x.operands[0].name, y.operands[0].name)])
        if why is not None:
            return f"the init: {why}"
        pins: dict[int, HloInstruction] | None = None
        for key in ("condition", "body"):
            ca, cb = single_computation(x, key), single_computation(y, key)
            assert ca is not None and cb is not None  # loop_shape_problem checked them
            what = f"the {key} computations {ca} and {cb}"
            why = self.equal_functions(what, state_function(a.module, ca), state_function(b.module, cb))
            if why is None:
                continue
            pins = constant_pins(a, x, b, y) if pins is None else pins
            if not pins:
                return why
            assert isinstance(x.shape, TupleShape) and isinstance(y.shape, TupleShape)
            why = self.equal_functions(
                f"{what} (on states holding their constant elements {sorted(pins)})",
                computation_module(a.module, ca, extra=(pinned(ca, x.shape, pins, a.module),)),
                computation_module(b.module, cb, extra=(pinned(cb, y.shape, pins, b.module),)),
            )
            if why is not None:
                return why
        return None

    def same_conditional(self) -> str | None:
        a, b = self.cuts.a, self.cuts.b
        x, y = a.by_name[self.a_name], b.by_name[self.b_name]
        xb, yb = branches(x), branches(y)
        if xb is None or yb is None or len(xb) != len(yb) or len(x.operands) != len(y.operands):
            return "the conditionals do not have the same branches and operands"
        if ("branch_computations" in x.attributes) != ("branch_computations" in y.attributes):
            return "one conditional selects by a predicate, the other by an index"
        for side, instr, names in ((a, x, xb), (b, y, yb)):
            for k, name in enumerate(names):
                c = side.module.computation(name)
                shape = side.builder.shapes[instr.operands[k + 1].name]
                if str(parameter_shape(c)) != str(shape) or str(c.root.shape) != str(instr.shape):
                    return f"branch {name} of {instr.name} does not take its operand's shape or give the result's"
        why = self.equal_operands([(p.name, q.name) for p, q in zip(x.operands, y.operands, strict=True)])
        if why is not None:
            return why
        for ca, cb in zip(xb, yb, strict=True):
            why = self.equal_functions(
                f"the branches {ca} and {cb}",
                state_function(a.module, ca),
                state_function(b.module, cb),
            )
            if why is not None:
                return why
        return None

    def widened_loop(self) -> tuple[HloInstruction, ...] | str:
        """The later loop's result written from the earlier's (``Cuts.results``) when (a),
        (b'), (c'), (d), (e) hold (the module docstring); otherwise why not."""
        return widened_loop(self)


def branches(instr: HloInstruction) -> list[str] | None:
    if "branch_computations" in instr.attributes:
        return list(computation_names(instr.attributes["branch_computations"]))
    t, f = single_computation(instr, "true_computation"), single_computation(instr, "false_computation")
    return None if t is None or f is None else [t, f]


# ------------------------------------------------------------------------ constant state elements
def constant_elements(side: Side, instr: HloInstruction) -> dict[int, HloInstruction]:
    """The state elements of ``while`` ``instr`` that are a constant all along: its body passes
    them through and their init is a constant (a printed literal)."""
    if not isinstance(instr.shape, TupleShape):
        return {}
    body = single_computation(instr, "body")
    elements = state_elements(side, instr.operands[0].name, len(instr.shape.elements))
    if body is None or elements is None:
        return {}
    found = {}
    for i in passed_through(side.module.computation(body)):
        init = side.by_name[elements[i]]
        if init.opcode == "constant" and init.literal is not None and "..." not in init.literal:
            found[i] = init
    return found


def constant_pins(a: Side, x: HloInstruction, b: Side, y: HloInstruction) -> dict[int, HloInstruction]:
    """The state elements that are the same constant all along in both loops (the earlier
    loop's constants)."""
    ka, kb = constant_elements(a, x), constant_elements(b, y)
    return {
        i: c
        for i, c in ka.items()
        if i in kb and kb[i].literal == c.literal and plain_text(kb[i].shape) == plain_text(c.shape)
    }


def pinned(
    callee: str, state: TupleShape, pins: dict[int, HloInstruction], module: HloModule
) -> HloComputation:
    """``s -> callee(s with element i replaced by the constant pins[i])``: the computation on the
    states a loop reaches, when those elements are constants all along."""
    instructions = []
    for i, shape in enumerate(state.elements):
        if i in pins:
            instructions.append(dataclasses.replace(pins[i], name=f"pin.s{i}", shape=shape, is_root=False))
        else:
            instructions.append(HloInstruction(f"pin.s{i}", shape, "parameter", parameter_number=i))
    operands = tuple(HloOperand(f"pin.s{i}") for i in range(len(state.elements)))
    instructions.append(HloInstruction("pin.t", state, "tuple", operands))
    result = module.computation(callee).root.shape
    instructions.append(
        HloInstruction(
            "pin.call",
            result,
            "call",
            (HloOperand("pin.t"),),
            to_apply=callee,
            attributes={"to_apply": callee},
            is_root=True,
        )
    )
    return HloComputation(f"pin.{callee}", tuple(instructions))


# ------------------------------------------------------------------------ widened states
def passed_through(computation: HloComputation) -> set[int]:
    """The state elements ``i`` a body's root passes through unchanged (``gte(parameter(0), i)``)."""
    root = computation.root
    if root.opcode != "tuple":
        return set()
    by_name = {i.name: i for i in computation.instructions}
    kept = set()
    for k, o in enumerate(root.operands):
        g = by_name.get(o.name)
        if g is None or g.opcode != "get-tuple-element" or g.index != k:
            continue
        p = by_name.get(g.operands[0].name)
        if p is not None and p.opcode == "parameter" and p.parameter_number == 0:
            kept.add(k)
    return kept


def invariant_expression(side: Side, root: str, leaves: dict[str, int]) -> list[HloInstruction] | str:
    """The cone of ``root`` in ``side`` down to ``leaves`` (flat name -> state element), in
    definition order; or why it is not a function of those elements alone."""
    order: list[str] = []
    seen: set[str] = set()
    stack = [(root, False)]
    while stack:
        name, done = stack.pop()
        if done:
            order.append(name)
            continue
        if name in seen or name in leaves:
            continue
        seen.add(name)
        instr = side.by_name[name]
        if instr.opcode == "parameter":
            return f"{name} reads the entry parameter {instr.parameter_number}, not the loop's state"
        if instr.opcode in RANDOM_OPCODES:
            return f"{name} is nondeterministic"
        if instr.called_computations:
            return f"{instr.opcode} {name} calls a computation"
        if instr.opcode == "constant" and "..." in (instr.literal or ""):
            return f"constant {name} is printed {{...}} (its value elided by the dump)"
        stack.append((name, True))
        stack.extend((o.name, False) for o in reversed(instr.operands))
    return [side.by_name[n] for n in order]


def state_elements(side: Side, init: str, count: int) -> list[str] | None:
    """The flat names of the first ``count`` elements of the tuple ``init``, when ``init`` is a ``tuple``."""
    instr = side.by_name[init]
    if instr.opcode != "tuple" or len(instr.operands) < count:
        return None
    return [o.name for o in instr.operands[:count]]


def wrapper(
    name: str,
    callee: str,
    common: TupleShape,
    later_state: TupleShape,
    extra: list[HloInstruction],
    leaves: dict[str, int],
    new_elements: list[str],
    result: Shape,
    restrict: bool,
) -> HloComputation:
    """A computation of an earlier state ``s`` (its elements are parameters ``0..n-1``, of the
    types of ``common``) that computes the new elements ``g(s)`` (the instructions ``extra``; a
    name of ``leaves`` reads element ``leaves[name]`` of ``s``), calls ``callee`` on ``(s, g(s))``
    (type ``later_state``) and returns its result, restricted to the common elements when
    ``restrict``."""
    n = len(common.elements)
    instructions: list[HloInstruction] = []
    names: dict[str, str] = {}
    for i in range(n):
        instructions.append(HloInstruction(f"wide.s{i}", common.elements[i], "parameter", parameter_number=i))
    names.update({leaf: f"wide.s{i}" for leaf, i in leaves.items()})
    for k, instr in enumerate(extra):
        names[instr.name] = f"wide.g{k}"
        operands = tuple(HloOperand(names[o.name]) for o in instr.operands)
        instructions.append(dataclasses.replace(instr, name=f"wide.g{k}", operands=operands, is_root=False))
    state = [f"wide.s{i}" for i in range(n)] + [names[e] for e in new_elements]
    instructions.append(HloInstruction("wide.t", later_state, "tuple", tuple(HloOperand(s) for s in state)))
    call_shape = later_state if restrict else result
    instructions.append(
        HloInstruction(
            "wide.call",
            call_shape,
            "call",
            (HloOperand("wide.t"),),
            to_apply=callee,
            attributes={"to_apply": callee},
        )
    )
    if restrict:
        for i in range(n):
            instructions.append(
                HloInstruction(
                    f"wide.r{i}",
                    common.elements[i],
                    "get-tuple-element",
                    (HloOperand("wide.call"),),
                    index=i,
                    attributes={"index": str(i)},
                )
            )
        instructions.append(
            HloInstruction("wide.root", common, "tuple", tuple(HloOperand(f"wide.r{i}") for i in range(n)))
        )
    instructions[-1] = dataclasses.replace(instructions[-1], is_root=True)
    return HloComputation(name, tuple(instructions))


def paired_states(
    attempt: PairAttempt, consequence: str
) -> tuple[Side, Side, HloInstruction, HloInstruction, list[str], list[str]] | str:
    """The two loops of ``attempt`` (sides and instructions) and the operand names of their
    init tuples' elements, or why not: a loop whose shape, body or condition is not a
    plain tuple loop, or an init that is not a ``tuple`` instruction (``consequence`` says
    what that prevents)."""
    a, b = attempt.cuts.a, attempt.cuts.b
    x, y = a.by_name[attempt.a_name], b.by_name[attempt.b_name]
    for side, instr in ((a, x), (b, y)):
        problem = loop_shape_problem(side.module, instr)
        if problem is not None:
            return problem
    assert isinstance(x.shape, TupleShape) and isinstance(y.shape, TupleShape)  # the callers checked it
    a_elems = state_elements(a, x.operands[0].name, len(x.shape.elements))
    b_elems = state_elements(b, y.operands[0].name, len(y.shape.elements))
    if a_elems is None or b_elems is None:
        return f"an init operand is not a tuple instruction, {consequence}"
    return a, b, x, y, a_elems, b_elems


def widened_loop(attempt: PairAttempt) -> tuple[HloInstruction, ...] | str:
    states = paired_states(attempt, "so its new elements cannot be followed")
    if isinstance(states, str):
        return states
    a, b, x, y, a_elems, b_elems = states
    n, m = len(a_elems), len(b_elems)
    why = attempt.equal_operands(list(zip(a_elems, b_elems[:n], strict=True)))
    if why is not None:
        return f"the init's common elements: {why}"
    body_a, cond_a = single_computation(x, "body"), single_computation(x, "condition")
    body_b, cond_b = single_computation(y, "body"), single_computation(y, "condition")
    assert body_a and cond_a and body_b and cond_b  # loop_shape_problem checked them
    kept_a = passed_through(a.module.computation(body_a))
    kept_b = passed_through(b.module.computation(body_b))
    moving = [j for j in range(n, m) if j not in kept_b]
    if moving:
        return f"the later body changes the new state elements {moving} (a hoisted value is passed through)"
    later_state = y.shape
    leaves = {
        b_elems[i]: i
        for i in sorted(kept_a)
        if i < n and str(b.builder.shapes[b_elems[i]]) == str(later_state.elements[i])
    }
    extra: list[HloInstruction] = []
    for j in range(n, m):
        if str(b.builder.shapes[b_elems[j]]) != str(later_state.elements[j]):
            return f"the init of new element {j} is {b.builder.shapes[b_elems[j]]}, not {later_state.elements[j]}"
        cone = invariant_expression(b, b_elems[j], leaves)
        if isinstance(cone, str):
            return (
                f"the init of new element {j} is not computed from constants and the elements the earlier "
                f"body passes through ({sorted(kept_a)}): {cone}"
            )
        extra.extend(i for i in cone if all(e.name != i.name for e in extra))
    common = TupleShape(tuple(later_state.elements[:n]))
    new_elements = b_elems[n:]
    for key, ca, cb in (("condition", cond_a, cond_b), ("body", body_a, body_b)):
        result = b.module.computation(cb).root.shape
        w = wrapper(f"wide.{cb}", cb, common, later_state, extra, leaves, new_elements, result, key == "body")
        why = attempt.equal_functions(
            f"the {key} computations {ca} and {cb} (on states whose new elements are their hoisted values)",
            state_function(a.module, ca),
            computation_module(b.module, cb, extra=(w,)),
        )
        if why is not None:
            return why
    return widened_result(attempt.b_name, x.shape, later_state, extra, leaves, new_elements)


def widened_result(
    b_name: str,
    earlier_state: TupleShape,
    later_state: TupleShape,
    extra: list[HloInstruction],
    leaves: dict[str, int],
    new_elements: list[str],
) -> tuple[HloInstruction, ...]:
    """The later loop's result ``(r, g(r))`` from the earlier result ``r``, the parameter
    ``{b_name}.cut`` (instructions for ``Cuts.results``; the last one is named ``b_name``)."""
    n = len(earlier_state.elements)
    out: list[HloInstruction] = []
    names: dict[str, str] = {}
    for i in range(n):
        r = f"{b_name}.r{i}"
        out.append(
            HloInstruction(
                r,
                earlier_state.elements[i],
                "get-tuple-element",
                (HloOperand(f"{b_name}.cut"),),
                index=i,
                attributes={"index": str(i)},
            )
        )
        if str(earlier_state.elements[i]) != str(later_state.elements[i]):
            out.append(HloInstruction(f"{r}.copy", later_state.elements[i], "copy", (HloOperand(r),)))
            r = f"{r}.copy"
        names[f"s{i}"] = r
    local = {leaf: names[f"s{i}"] for leaf, i in leaves.items()}
    for k, instr in enumerate(extra):
        local[instr.name] = f"{b_name}.g{k}"
        operands = tuple(HloOperand(local[o.name]) for o in instr.operands)
        out.append(dataclasses.replace(instr, name=f"{b_name}.g{k}", operands=operands, is_root=False))
    state = [names[f"s{i}"] for i in range(n)] + [local[e] for e in new_elements]
    out.append(HloInstruction(b_name, later_state, "tuple", tuple(HloOperand(s) for s in state)))
    return tuple(out)


# ------------------------------------------------------------------------ tupled conditionals
def untupled_branch(module: HloModule, name: str, operand: Shape) -> HloModule:
    """``x -> get-tuple-element(name(tuple(x)), 0)``: a branch whose operand and result a pass
    wrapped in 1-tuples, as a function of the unwrapped operand (of shape ``operand``)."""
    computation = module.computation(name)
    result = computation.root.shape
    assert isinstance(result, TupleShape)
    param = parameter_shape(computation)
    assert param is not None
    instructions = [
        HloInstruction("untuple.x", operand, "parameter", parameter_number=0),
        HloInstruction("untuple.t", param, "tuple", (HloOperand("untuple.x"),)),
        HloInstruction(
            "untuple.call",
            result,
            "call",
            (HloOperand("untuple.t"),),
            to_apply=name,
            attributes={"to_apply": name},
        ),
        HloInstruction(
            "untuple.r",
            result.elements[0],
            "get-tuple-element",
            (HloOperand("untuple.call"),),
            index=0,
            attributes={"index": "0"},
            is_root=True,
        ),
    ]
    return computation_module(module, name, extra=(HloComputation(f"untuple.{name}", tuple(instructions)),))


def tupled_conditional(attempt: PairAttempt) -> tuple[HloInstruction, ...] | str:
    """The later conditional's result ``tuple(r)`` from the earlier result ``r``
    (``Cuts.results``) when the later one is the earlier one with every branch operand and the
    result wrapped in a 1-tuple (``conditional-canonicalizer``): the same selector, each later
    branch operand ``tuple(x'_k)`` with ``x'_k`` proved equal to the earlier ``x_k``, and each
    later branch, unwrapped, proved equal to the earlier one; otherwise why not."""
    a, b = attempt.cuts.a, attempt.cuts.b
    x, y = a.by_name[attempt.a_name], b.by_name[attempt.b_name]
    xb, yb = branches(x), branches(y)
    if xb is None or yb is None or len(xb) != len(yb) or len(x.operands) != len(y.operands):
        return "the conditionals do not have the same branches and operands"
    if ("branch_computations" in x.attributes) != ("branch_computations" in y.attributes):
        return "one conditional selects by a predicate, the other by an index"
    assert isinstance(y.shape, TupleShape)
    pairs = [(x.operands[0].name, y.operands[0].name)]
    for k, (ca, cb) in enumerate(zip(xb, yb, strict=True)):
        wrapped = b.by_name[y.operands[k + 1].name]
        if wrapped.opcode != "tuple" or len(wrapped.operands) != 1:
            return f"operand {k + 1} of {y.name} is not a tuple of one element"
        inner = wrapped.operands[0].name
        pairs.append((x.operands[k + 1].name, inner))
        earlier_c, later_c = a.module.computation(ca), b.module.computation(cb)
        later_param = parameter_shape(later_c)
        if str(parameter_shape(earlier_c)) != str(a.builder.shapes[x.operands[k + 1].name]) or str(
            earlier_c.root.shape
        ) != str(x.shape):
            return f"branch {ca} of {x.name} does not take its operand's shape or give the result's"
        if str(later_param) != str(wrapped.shape) or str(later_c.root.shape) != str(y.shape):
            return f"branch {cb} of {y.name} does not take its operand's shape or give the result's"
    why = attempt.equal_operands(pairs)
    if why is not None:
        return why
    for k, (ca, cb) in enumerate(zip(xb, yb, strict=True)):
        inner_shape = b.builder.shapes[b.by_name[y.operands[k + 1].name].operands[0].name]
        why = attempt.equal_functions(
            f"the branches {ca} and {cb} (unwrapped)",
            state_function(a.module, ca),
            untupled_branch(b.module, cb, inner_shape),
        )
        if why is not None:
            return why
    element = y.shape.elements[0]
    out: list[HloInstruction] = []
    source = f"{attempt.b_name}.cut"
    if str(element) != str(x.shape):
        out.extend(relaid(f"{attempt.b_name}.relaid", source, x.shape, element))
        source = f"{attempt.b_name}.relaid"
    out.append(HloInstruction(attempt.b_name, y.shape, "tuple", (HloOperand(source),)))
    return tuple(out)


# ------------------------------------------------------------------------ narrowed states
def narrows(earlier: Shape, later: Shape) -> bool:
    """``later`` is a tuple of fewer elements whose types are a subsequence of ``earlier``'s."""
    if not isinstance(earlier, TupleShape) or not isinstance(later, TupleShape):
        return False
    if len(later.elements) >= len(earlier.elements):
        return False
    wanted = [plain_text(e) for e in later.elements]
    for e in earlier.elements:
        if wanted and plain_text(e) == wanted[0]:
            wanted.pop(0)
    return not wanted


def adapter(
    name: str,
    callee: str,
    callee_state: TupleShape,
    params: dict[int, Shape],
    sources: list[int | HloInstruction],
    result: Shape,
    project: list[int] | None,
) -> HloComputation:
    """``s -> callee(state)``, where ``s`` comes as parameters (``params``: number -> shape) and
    element ``k`` of ``state`` is parameter ``sources[k]`` or the constant ``sources[k]``; with
    ``project``, the result restricted to those elements (a tuple)."""
    instructions = [
        HloInstruction(f"adapt.p{i}", shape, "parameter", parameter_number=i)
        for i, shape in sorted(params.items())
    ]
    names = []
    for k, source in enumerate(sources):
        if isinstance(source, int):
            names.append(f"adapt.p{source}")
        else:
            shape = callee_state.elements[k]
            instructions.append(dataclasses.replace(source, name=f"adapt.c{k}", shape=shape, is_root=False))
            names.append(f"adapt.c{k}")
    instructions.append(HloInstruction("adapt.t", callee_state, "tuple", tuple(HloOperand(n) for n in names)))
    instructions.append(
        HloInstruction(
            "adapt.call",
            result,
            "call",
            (HloOperand("adapt.t"),),
            to_apply=callee,
            attributes={"to_apply": callee},
        )
    )
    if project is not None:
        assert isinstance(result, TupleShape)
        for i in project:
            instructions.append(
                HloInstruction(
                    f"adapt.r{i}",
                    result.elements[i],
                    "get-tuple-element",
                    (HloOperand("adapt.call"),),
                    index=i,
                    attributes={"index": str(i)},
                )
            )
        shape = TupleShape(tuple(result.elements[i] for i in project))
        instructions.append(
            HloInstruction("adapt.root", shape, "tuple", tuple(HloOperand(f"adapt.r{i}") for i in project))
        )
    instructions[-1] = dataclasses.replace(instructions[-1], is_root=True)
    return HloComputation(name, tuple(instructions))


def narrowed_loop(attempt: PairAttempt) -> tuple[HloInstruction, ...] | str:
    """The later loop's result, the earlier result restricted to the elements the later state
    keeps (``Cuts.results``), when the pass removed state elements (``simplify-while-loops``):
    each kept element's init proved equal, and the later condition and body, on the kept
    elements of every earlier state (its constant elements holding their constants), proved
    equal to the earlier ones (the body restricted to the kept elements). By induction the
    later state is the earlier one restricted, at every iteration; otherwise why not."""
    states = paired_states(attempt, "so its elements cannot be matched")
    if isinstance(states, str):
        return states
    a, b, x, y, a_elems, b_elems = states
    n, m = len(a_elems), len(b_elems)
    kept: list[int] = []
    start = 0
    for j in range(m):
        for i in range(start, n - (m - j) + 1):
            if plain_text(x.shape.elements[i]) != plain_text(y.shape.elements[j]):
                continue
            if attempt.equal_operands([(a_elems[i], b_elems[j])]) is None:
                kept.append(i)
                start = i + 1
                break
        else:
            return f"no element of the earlier init is proved equal to element {j} of the later init"
    pins = constant_elements(a, x)
    params = {i: shape for i, shape in enumerate(x.shape.elements) if i not in pins}
    earlier_sources: list[int | HloInstruction] = [pins.get(i, i) for i in range(n)]
    later_sources: list[int | HloInstruction] = [pins.get(i, i) for i in kept]
    later_params = {i: y.shape.elements[j] for j, i in enumerate(kept) if i not in pins}
    later_params.update({i: shape for i, shape in params.items() if i not in later_params})
    for key in ("condition", "body"):
        ca, cb = single_computation(x, key), single_computation(y, key)
        assert ca is not None and cb is not None  # loop_shape_problem checked them
        result_a = a.module.computation(ca).root.shape
        result_b = b.module.computation(cb).root.shape
        project = kept if key == "body" else None
        why = attempt.equal_functions(
            f"the {key} computations {ca} and {cb} (on the elements the later state keeps, {kept})",
            computation_module(
                a.module,
                ca,
                extra=(adapter(f"narrow.{ca}", ca, x.shape, params, earlier_sources, result_a, project),),
            ),
            computation_module(
                b.module,
                cb,
                extra=(adapter(f"narrow.{cb}", cb, y.shape, later_params, later_sources, result_b, None),),
            ),
        )
        if why is not None:
            return why
    out: list[HloInstruction] = []
    names = []
    for j, i in enumerate(kept):
        element = f"{attempt.b_name}.k{j}"
        out.append(
            HloInstruction(
                element,
                x.shape.elements[i],
                "get-tuple-element",
                (HloOperand(f"{attempt.b_name}.cut"),),
                index=i,
                attributes={"index": str(i)},
            )
        )
        if str(x.shape.elements[i]) != str(y.shape.elements[j]):
            out.extend(relaid(f"{element}.relaid", element, x.shape.elements[i], y.shape.elements[j]))
            element = f"{element}.relaid"
        names.append(HloOperand(element))
    out.append(HloInstruction(attempt.b_name, y.shape, "tuple", tuple(names)))
    return tuple(out)
