"""Pass validation of passes that change float precision: a verdict, never only a reason.

XLA's ``float-normalization-bf16``, ``bfloat16-propagation``, ``tpu-reduce-rewriter`` and
XLA:TPU's ``float-type-correction`` change element types on purpose: a ``bf16`` dot becomes an
``f32`` dot between converts, a convolution's result becomes ``bf16``. At the stated precision
such a pass changes the values; XLA makes it on the licence of ``--xla_allow_excess_precision``
(on by default). A pair whose float element types changed (:func:`float_type_changes`) is
decided once more, when the plain proof fails, as follows:

* with :data:`~layout_algebra.hlo.float_precision.EXCESS_PRECISION` allowed, the modules are
  compared with float precision erased (one abstract float type, a float-to-float convert the
  identity): ``proved`` if they are equal so, the assumption listed, and (when the NumPy
  executor runs both) ``evidence``: an input where the values at the stated precision differ,
  what the assumption permits;
* otherwise, or when the erased modules are not proved equal: ``refuted`` when running both
  whole modules on the same random input shows a root element that differs (the input, the
  element and both values are the counterexample), else ``unknown`` with the precision
  change said and why no verdict was reached.

The comparisons a pair makes on the way (the operands of two ops that would be cut) are not
its verdict: operands that differ are reported as such, never as a refutation of the pair
(:func:`operand_failure`); a pair left ``unknown`` after such a difference gets a verdict
from running the whole modules when they differ (:func:`executed_verdict`).

>>> from layout_algebra.hlo.parser import parse_module
>>> a = parse_module('''HloModule m
... ENTRY e {
...   p = bf16[4]{0} parameter(0)
...   ROOT n = bf16[4]{0} exponential(p)
... }''')
>>> b = parse_module('''HloModule m
... ENTRY e {
...   p = bf16[4]{0} parameter(0)
...   w = f32[4]{0} convert(p)
...   x = f32[4]{0} exponential(w)
...   ROOT n = bf16[4]{0} convert(x)
... }''')
>>> float_type_changes(a, b)
'exponential computed in bf16 1 time(s) before and 0 after, in f32 0 before and 1 after; converts bf16->f32 0 before and 1 after, f32->bf16 0 before and 1 after'
>>> float_type_changes(a, a)
''
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from typing import Any

import numpy as np

from layout_algebra.hlo.float_precision import EXCESS_PRECISION, is_float_convert, is_float_type
from layout_algebra.hlo.ir import HloModule
from layout_algebra.hlo.opcodes import MOVEMENT_OPCODES
from layout_algebra.model.shapes import ArrayShape, TupleShape

__all__ = [
    "OPERANDS_DIFFER",
    "executed_difference",
    "executed_verdict",
    "float_type_changes",
    "narrow_roundings",
    "operand_failure",
    "precision_verdict",
    "reduced_precision",
]

#: Said of a cut candidate whose operands differ: the pair is not refuted by it.
OPERANDS_DIFFER = "which the cut op may or may not hide"

# Ops whose float type says nothing of a computation: data movement (a constant, a broadcast
# of one: counts a simplifier changes), structure, inlined calls.
_STRUCTURAL = frozenset({*MOVEMENT_OPCODES, "tuple", "get-tuple-element"})

#: Root elements of at most this many parameter elements are quoted in full in a counterexample.
MAX_QUOTED_INPUT = 64


def _float_profile(module: HloModule) -> tuple[Counter[tuple[str, str]], Counter[str]]:
    """How many ops of each opcode compute in each float type, and the float-to-float converts."""
    ops: Counter[tuple[str, str]] = Counter()
    converts: Counter[str] = Counter()
    for computation, instr in module.instructions():
        shape = instr.shape
        if not isinstance(shape, ArrayShape) or instr.opcode in _STRUCTURAL:
            continue
        to = shape.element_type.text
        if instr.opcode == "convert" and instr.operands:
            name = instr.operands[0].name
            source = computation.instruction(name).shape if name in computation else None
            if isinstance(source, ArrayShape) and is_float_convert(to, source.element_type.text):
                if source.element_type.text != to:
                    converts[f"{source.element_type.text}->{to}"] += 1
            continue
        if is_float_type(to):
            ops[(instr.opcode, to)] += 1
    return ops, converts


def float_type_changes(a: HloModule, b: HloModule) -> str:
    """The float precision the later module computes in otherwise than the earlier, said
    (opcodes whose count per float type changed, float-to-float converts); ``""`` if none."""
    ops_a, conv_a = _float_profile(a)
    ops_b, conv_b = _float_profile(b)
    said = []
    for opcode in sorted({op for op, _ in ops_a.keys() | ops_b.keys()}):
        types = sorted({t for op, t in ops_a.keys() | ops_b.keys() if op == opcode})
        if all(ops_a[(opcode, t)] == ops_b[(opcode, t)] for t in types) or len(types) < 2:
            continue
        first, *rest = types
        said.append(
            f"{opcode} computed in {first} {ops_a[(opcode, first)]} time(s) before and {ops_b[(opcode, first)]} after, "
            + ", ".join(f"in {t} {ops_a[(opcode, t)]} before and {ops_b[(opcode, t)]} after" for t in rest)
        )
    converts = [
        f"{key} {conv_a[key]} before and {conv_b[key]} after"
        for key in sorted(conv_a.keys() | conv_b.keys())
        if conv_a[key] != conv_b[key]
    ]
    if converts:
        said.append("converts " + ", ".join(converts))
    return "; ".join(said)


# ------------------------------------------------------------------ running both modules
def _parameter_shapes(module: HloModule) -> list[ArrayShape] | str:
    params = {i.parameter_number: i.shape for i in module.entry.instructions if i.opcode == "parameter"}
    if sorted(params) != list(range(len(params))):  # type: ignore[type-var]
        return f"parameter numbers {sorted(params)} are not 0..{len(params) - 1}"  # type: ignore[type-var]
    shapes = [params[k] for k in range(len(params))]
    for k, s in enumerate(shapes):
        if not isinstance(s, ArrayShape) or not all(isinstance(d, int) for d in s.dimensions):
            return f"parameter {k} is {s} (the run needs arrays of concrete sizes)"
    return shapes  # type: ignore[return-value]


def _root_arrays(shape: Any) -> list[ArrayShape]:
    if isinstance(shape, TupleShape):
        return [a for s in shape.elements for a in _root_arrays(s)]
    return [shape] if isinstance(shape, ArrayShape) else []


def _leaves(value: Any) -> list[Any]:
    return [leaf for v in value for leaf in _leaves(v)] if isinstance(value, tuple) else [value]


def _differs(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per element: different values (bit for bit; two NaNs are the same, whatever their payloads)."""
    if x.dtype.kind == "f" or "float" in str(x.dtype) or "bfloat" in str(x.dtype):
        fx, fy = x.astype(np.float64), y.astype(np.float64)
        both_nan = np.isnan(fx) & np.isnan(fy)
        bx = np.ascontiguousarray(x).reshape(*x.shape, 1).view(np.uint8)
        by = np.ascontiguousarray(y).reshape(*y.shape, 1).view(np.uint8)
        differs: np.ndarray = ~both_nan & ~np.all(bx == by, axis=-1)
        return differs
    return np.asarray(x != y)


def _show(x: Any) -> str:
    item = x.item() if hasattr(x, "item") else x
    return repr(float(item)) if isinstance(item, float) or "float" in type(item).__name__ else repr(item)


def executed_difference(
    a: HloModule, b: HloModule, *, trials: int | None = None, seed: int = 0
) -> tuple[dict[str, Any] | None, str]:
    """Run both whole modules (NumPy executor) on the same random parameters: the first root
    element whose values differ (both values, the input that shows it), or ``None`` and why not.
    ``trials``: how many inputs (default: 4, and up to 64 until 1,024 root elements were compared).

    Values are compared bit for bit, two NaNs as equal; an element one run leaves undefined
    (read from padding) is not a difference."""
    from layout_algebra.hlo.execute import run
    from layout_algebra.hlo.execute_compare import random_array
    from layout_algebra.hlo.execute_ops import UnsupportedOpError

    shapes_a, shapes_b = _parameter_shapes(a), _parameter_shapes(b)
    if isinstance(shapes_a, str) or isinstance(shapes_b, str):
        return (
            None,
            f"the executor cannot run the modules: {shapes_a if isinstance(shapes_a, str) else shapes_b}",
        )
    if [(s.element_type, tuple(s.dimensions)) for s in shapes_a] != [
        (s.element_type, tuple(s.dimensions)) for s in shapes_b
    ]:
        return None, "the modules take different parameters"
    if trials is None:
        root = sum(math.prod(int(d) for d in s.dimensions) for s in _root_arrays(a.entry.root.shape))
        trials = min(64, max(4, math.ceil(1024 / max(root, 1))))
    rng = np.random.default_rng(seed)
    for trial in range(trials):
        params = [random_array(s, rng) for s in shapes_a]
        try:
            out_a, out_b = _leaves(run(a, params)), _leaves(run(b, params))
        except UnsupportedOpError as err:
            return None, f"the executor cannot run the modules: {err}"
        except (ValueError, MemoryError) as err:
            return None, f"the executor cannot run the modules: {str(err)[:300]}"
        for k, (xa, xb) in enumerate(zip(out_a, out_b, strict=True)):
            if xa.array.dtype != xb.array.dtype or xa.array.shape != xb.array.shape:
                return None, f"the roots differ in type or dimensions ({xa.shape} vs {xb.shape})"
            bad = xa.defined & xb.defined & _differs(xa.array, xb.array)
            if bad.any():
                index = tuple(int(i) for i in np.argwhere(bad)[0])
                found: dict[str, Any] = {
                    "element": index,
                    "output": (k,) if len(out_a) > 1 else (),
                    "before": _show(xa.array[index]),
                    "after": _show(xb.array[index]),
                    "input": f"execute_compare.random_array per parameter, numpy.random.default_rng({seed}), trial {trial}",
                }
                if sum(math.prod(p.shape) for p in params) <= MAX_QUOTED_INPUT:
                    found["parameters"] = [np.asarray(p).astype(object).tolist() for p in params]
                found["execution"] = (
                    f"root element {index}{found['output'] and f' of output {k}'}: before {found['before']}, "
                    f"after {found['after']}"
                )
                return found, ""
    return None, f"running both modules on {trials} random inputs shows no difference"


# ------------------------------------------------------------------ the verdicts
Result = Any  # passes.PassResult (this module sits below passes.py)


#: Ops that give a value without rounding one: moved data, parameters, literals, calls whose
#: own instructions are counted where they are defined.
_NOT_ROUNDING = frozenset(
    {
        *MOVEMENT_OPCODES,
        "parameter",
        "constant",
        "tuple",
        "get-tuple-element",
        "fusion",
        "call",
        "while",
        "conditional",
    }
)


def narrow_roundings(module: HloModule) -> Counter[str]:
    """How many instructions of ``module`` (every computation) compute a value of each float type
    narrower than 32 bits: the points where a value is rounded to that type."""
    found: Counter[str] = Counter()
    for _, instruction in module.instructions():
        shape = instruction.shape
        if instruction.opcode in _NOT_ROUNDING or not isinstance(shape, ArrayShape):
            continue
        if is_float_type(shape.element_type.text) and shape.element_type.bit_width < 32:
            found[shape.element_type.text] += 1
    return found


def reduced_precision(a: HloModule, b: HloModule) -> str:
    """Where the later module ``b`` rounds to a float type narrower than 32 bits more often
    than the earlier ``a`` (type: earlier count -> later count), or ``""``.

    XLA's ``--xla_allow_excess_precision`` lets a value be kept at *more* precision than the
    program states, never at less: a pass that rounds where the earlier module did not (a
    value sent through f8, a chain computed in bf16 that was f32) is no excess precision, and
    the erased comparison is not tried for it.

    >>> from layout_algebra.hlo.parser import parse_module
    >>> a = parse_module('''HloModule m
    ... ENTRY e {
    ...   p = f32[4]{0} parameter(0)
    ...   ROOT n = f32[4]{0} negate(p)
    ... }''')
    >>> b = parse_module('''HloModule m
    ... ENTRY e {
    ...   p = f32[4]{0} parameter(0)
    ...   c = f8e4m3fn[4]{0} convert(p)
    ...   w = f32[4]{0} convert(c)
    ...   ROOT n = f32[4]{0} negate(w)
    ... }''')
    >>> reduced_precision(a, b), reduced_precision(b, a)
    ('f8e4m3fn: 0 -> 1', '')
    """
    ra, rb = narrow_roundings(a), narrow_roundings(b)
    return ", ".join(f"{t}: {ra[t]} -> {rb[t]}" for t in sorted(rb) if rb[t] > ra[t])


def precision_verdict(
    first: Result,
    a: HloModule,
    b: HloModule,
    float_rules: Collection[str],
    rerun: Callable[[Collection[str]], Result],
) -> Result:
    """The verdict for a pair the plain proof did not prove, when the pass changed float
    precision (module docstring); ``first`` itself otherwise."""
    if first.status == "proved" or (first.counterexample or {}).get("invalid_hlo"):
        return first
    changes = float_type_changes(a, b)
    if not changes:
        return first if first.status == "refuted" else executed_verdict(first, a, b)
    said = f"precision change ({changes})"
    erased_reason = ""
    root_a, root_b = _root_types(a), _root_types(b)
    if root_a != root_b:  # the root's type is never erased: the result is delivered in it
        erased_reason = (
            f"; the root's element types changed ({', '.join(root_a)} to {', '.join(root_b)}): not erased"
        )
    elif EXCESS_PRECISION in float_rules and reduced_precision(a, b):
        erased_reason = (
            f"; the later module rounds to narrow float types more often ({reduced_precision(a, b)}): "
            f"less precision, which {EXCESS_PRECISION} does not allow"
        )
    elif EXCESS_PRECISION in float_rules:
        erased = rerun(float_rules)
        if erased.status == "proved":
            difference, _ = executed_difference(a, b)
            assumptions = tuple(sorted({*erased.assumptions, EXCESS_PRECISION}))
            return dataclasses.replace(
                erased,
                reason=f"{said}: proved with float precision erased ({EXCESS_PRECISION})",
                assumptions=assumptions,
                evidence=None if difference is None else {"stated_precision_differs": difference},
            )
        # (a refutation of the erased modules was confirmed by running them at the stated
        # precision, which does not show a difference with precision erased: not a verdict)
        erased_reason = f"; with float precision erased, not proved: {_without_precision_note(erased)}"
    allowed = EXCESS_PRECISION in float_rules and not reduced_precision(a, b)
    difference, why = executed_difference(a, b)
    if first.status == "refuted" and not allowed and difference is None:
        return first  # confirmed at the stated precision by the verifier's own re-check
    if difference is not None and not allowed:
        if first.status == "refuted":  # the verifier's element too
            difference = {**difference, "verifier": dict(first.counterexample or {})}
        return dataclasses.replace(
            first,
            verdict="refuted",
            reason=f"{said}: at the stated precision the roots differ ({EXCESS_PRECISION} not assumed)",
            counterexample=difference,
            assumptions=(),
        )
    if difference is not None:
        stated = (
            f"; at the stated precision, running both modules shows {difference['execution']} "
            f"({difference['input']}), which {EXCESS_PRECISION} may permit"
        )
    else:
        stated = f"; at the stated precision: {why}"
    note = first.reason or "not proved"
    return dataclasses.replace(first, reason=f"{said}: {note}{erased_reason}{stated}")


def _root_types(module: HloModule) -> list[str]:
    def leaves(shape: Any) -> list[str]:
        if isinstance(shape, TupleShape):
            return [t for s in shape.elements for t in leaves(s)]
        return [shape.element_type.text if isinstance(shape, ArrayShape) else str(shape)]

    return leaves(module.entry.root.shape)


def _without_precision_note(result: Result) -> str:
    """A result's reason (or counterexample) without the generic precision-change sentences."""
    if result.status == "refuted":
        cex = result.counterexample or {}
        return f"the verifier's element {cex.get('element')} differs (before: {cex.get('before')}; after: {cex.get('after')})"
    parts = [p for p in result.reason.split(". ") if not p.startswith("precision change:")]
    return ". ".join(parts)


def executed_verdict(first: Result, a: HloModule, b: HloModule) -> Result:
    """A pair left ``unknown`` after a cut candidate's operands were found to differ: ``refuted``
    if running the whole modules shows a root difference, else ``first`` (which says the
    operands differ, not that the pair is refuted)."""
    if first.status != "unknown" or OPERANDS_DIFFER not in first.reason:
        return first
    difference, why = executed_difference(a, b)
    if difference is None:
        return dataclasses.replace(first, reason=f"{first.reason}; running the whole modules: {why}")
    return dataclasses.replace(
        first,
        verdict="refuted",
        reason=f"running both whole modules shows different roots (the pair was: {first.reason[:300]})",
        counterexample=difference,
        assumptions=(),
    )


def operand_failure(a_name: str, ao: str, bo: str, status: str, result: Any) -> str:
    """Why the operands of a cut candidate (``a_name``) were not proved equal to the later op's:
    a difference the verifier found is said as such (the op may still hide it), never as
    the pair's refutation."""
    if isinstance(result, str) or result is None:
        return f"{a_name}: operand {ao} vs {bo}: {status} ({str(result)[:200]})"
    cex: Mapping[str, Any] = result.counterexample or {}
    if status == "refuted" and cex.get("invalid_hlo"):
        return f"{a_name}: operand {ao} vs {bo}: the later operand's cone is not valid HLO on its own ({str(cex['invalid_hlo'])[:200]})"
    if status == "refuted":
        values = f" (before: {str(cex.get('before'))[:120]}; after: {str(cex.get('after'))[:120]})"
        return f"{a_name}: the operands {ao} and {bo} differ at element {cex.get('element')}{values}, {OPERANDS_DIFFER}"
    return f"{a_name}: operand {ao} vs {bo}: {status} ({str(result.reason or result.status)[:200]})"
