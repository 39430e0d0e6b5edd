"""Cut points of pass validation: the two sides of a pair, paired opaque ops, cone keys.

A pair of modules is compared on their flattened entry computations (fusions and calls
inlined, :func:`~layout_algebra.hlo.pass_canonical.flatten_module`). Every op the rewrite
verifier does not interpret is *opaque*; an opaque op of the later module is paired with one
of the earlier module of the same :func:`signature` once their operands are proved equal,
and both become one fresh parameter (:class:`Cuts`). Two cones whose structures are equal
down to the cuts are equal without a query: :class:`ConeKeys` gives each distinct node one
small integer, so equal structure is equal id.

>>> from layout_algebra.hlo.parser import parse_module
>>> text = '''HloModule m
... ENTRY e {
...   p = f32[4]{0} parameter(0)
...   n = f32[4]{0} negate(p)
...   ROOT s = f32[4]{0} sort(n), dimensions={0}, to_apply=lt
... }
... lt {
...   a = f32[] parameter(0)
...   b = f32[] parameter(1)
...   ROOT c = pred[] compare(a, b), direction=LT
... }'''
>>> side = Side.of(parse_module(text))
>>> side.root, side.opaque
('s', ['s'])
>>> keys = ConeKeys()
>>> cone_key(side, "n", {}, {}, keys) == cone_key(side, "n", {}, {}, keys)
True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from layout_algebra.hlo.float_precision import erased_module, erased_text
from layout_algebra.hlo.ir import HloComputation, HloInstruction, HloModule, HloOperand
from layout_algebra.hlo.opcodes import ELEMENTWISE_OPCODES, LAYOUT_SENSITIVE_OPCODES, MOVEMENT_OPCODES
from layout_algebra.hlo.pass_canonical import (
    Builder,
    base_dilated_convolution_as_dot,
    canonical_dot,
    canonical_reduce,
    convolution_as_dot,
    flatten_module,
)
from layout_algebra.hlo.pass_forms import (
    expand,
    internal_custom_call_reason,
    normal_comparators,
    scan_rewrite_reason,
)
from layout_algebra.hlo.pass_keys import attributes_key, plain_text
from layout_algebra.hlo.verify import float_rules_used, verify_rewrite
from layout_algebra.model.shapes import ArrayShape, Shape, TupleShape

__all__ = [
    "INTERPRETED",
    "ConeKeys",
    "Cuts",
    "Side",
    "called_closure",
    "computed_start_indices",
    "cone_key",
    "cone_names",
    "decide_equal",
    "erased_signature",
    "is_elided_constant",
    "no_counterpart",
    "operand_types",
    "relaid",
    "signature",
]

#: Ops the rewrite verifier interprets element by element; every other op is a cut point.
INTERPRETED = frozenset({*MOVEMENT_OPCODES, *ELEMENTWISE_OPCODES})


@dataclass
class Side:
    module: HloModule
    builder: Builder
    root: str
    by_name: dict[str, HloInstruction]
    opaque: list[str]
    #: convolutions read as dots (CONVOLUTION_AS_DOT)
    as_dot: frozenset[str] = frozenset()
    #: ops that stand for another op under a named assumption (pass_forms.expand)
    assumed: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: the keys of called computations, by (name, with layouts), computed once per module
    attribute_keys: dict[tuple[str, bool], str] = field(default_factory=dict)
    #: this side with every float element type erased in its module (erased_signature), once
    erased: Side | None = None

    @classmethod
    def of(cls, module: HloModule) -> Side:
        module = normal_comparators(module)
        builder, root = flatten_module(module)
        instructions = list(builder.instructions)
        builder.instructions = []
        as_dot: set[str] = set()
        assumed: dict[str, tuple[str, str]] = {}
        added: list[HloComputation] = []
        defined = {i.name: i for i in instructions}
        for original in instructions:
            form = expand(builder, module, defined, original)
            added.extend(form.computations)
            assumed.update(form.assumed)
            as_dot.update(form.as_dot)
            for instr in form.instructions:
                if instr.opcode == "convolution":
                    instr = convolution_as_dot(instr)
                    if instr.opcode == "convolution":
                        instr = base_dilated_convolution_as_dot(builder, instr)
                    if instr.opcode == "dot":
                        as_dot.add(instr.name)
                if instr.opcode == "dot":
                    instr = canonical_dot(builder, instr)
                elif instr.opcode == "reduce" and instr.dimensions is not None:
                    instr = canonical_reduce(builder, instr)
                builder.emit(instr)
        by_name = {i.name: i for i in builder.instructions}
        computed = computed_start_indices(by_name)
        opaque = [
            i.name
            for i in builder.instructions
            if i.opcode not in INTERPRETED or is_elided_constant(i) or i.name in computed
        ]
        if added:
            module = dataclasses.replace(module, computations=(*module.computations, *added))
        return cls(module, builder, root, by_name, opaque, frozenset(as_dot), assumed)

    def parameters(self) -> list[HloInstruction]:
        return [i for i in self.builder.instructions if i.opcode == "parameter"]


def computed_start_indices(by_name: Mapping[str, HloInstruction]) -> set[str]:
    """The ops that compute a ``dynamic-slice`` or ``dynamic-update-slice`` start index (through
    copies and elements of tuples) from anything but a parameter or a constant: the verifier
    reads a start index only from those, so each such op is a cut point, paired like any other
    (the same op on operands proved equal gives the same index).

    >>> from layout_algebra.model.syntax import parse_shape
    >>> i = HloInstruction("i", parse_shape("s32[]"), "parameter", parameter_number=1)
    >>> m = HloInstruction("m", parse_shape("s32[]"), "maximum", (HloOperand("i"), HloOperand("i")))
    >>> p = HloInstruction("p", parse_shape("f32[4]"), "parameter", parameter_number=0)
    >>> d = HloInstruction("d", parse_shape("f32[1]"), "dynamic-slice", (HloOperand("p"), HloOperand("m")))
    >>> sorted(computed_start_indices({x.name: x for x in (i, m, p, d)}))
    ['m']
    """
    found: set[str] = set()
    for instr in by_name.values():
        if instr.opcode == "dynamic-slice":
            starts = instr.operands[1:]
        elif instr.opcode == "dynamic-update-slice":
            starts = instr.operands[2:]
        else:
            continue
        for operand in starts:
            source = by_name.get(operand.name)
            seen: set[str] = set()
            while source is not None and source.name not in seen:
                seen.add(source.name)
                if source.opcode == "copy" and source.operands:
                    source = by_name.get(source.operands[0].name)
                elif source.opcode == "get-tuple-element" and source.index is not None and source.operands:
                    whole = by_name.get(source.operands[0].name)
                    if whole is None or whole.opcode != "tuple" or source.index >= len(whole.operands):
                        break
                    source = by_name.get(whole.operands[source.index].name)
                else:
                    break
            if source is not None and source.opcode not in ("parameter", "constant"):
                found.add(source.name)
    return found


def is_elided_constant(instr: HloInstruction) -> bool:
    """A constant whose literal the dump did not print (``constant({...})``)."""
    return instr.opcode == "constant" and "..." in (instr.literal or "")


def signature(side: Side, instr: HloInstruction, erase: bool = False) -> str:
    """What an opaque op must share with its counterpart: opcode, types, attributes and the
    structure of called computations; with ``erase``, float precision erased (every float type
    one, as ``excess-precision`` reads both modules)."""
    if erase:
        return erased_signature(side, instr)
    shapes = side.builder.shapes
    if is_elided_constant(instr):  # known only by its name (ASSUMPTIONS["elided-constants"])
        computation, name = side.builder.origin.get(instr.name, ("?", instr.name))
        return f"elided constant {computation}/{name} {plain_text(instr.shape)}"
    memo: dict[tuple[str, bool], str] = {}
    if instr.opcode in LAYOUT_SENSITIVE_OPCODES:
        operand_text = ",".join(str(shapes[o.name]) for o in instr.operands)
        result = str(instr.shape)
    else:
        operand_text = ",".join(plain_text(shapes[o.name]) for o in instr.operands)
        result = plain_text(instr.shape)
    return f"{instr.opcode} {result} ({operand_text}) {attributes_key(side.module, instr, memo)}"


def erased_signature(side: Side, instr: HloInstruction) -> str:
    """:func:`signature` with every float element type erased, called computations included."""
    if side.erased is None:
        side.erased = dataclasses.replace(side, module=erased_module(side.module), attribute_keys={})
    return erased_text(signature(side.erased, instr))


class Cuts:
    """Cut points: pairs (earlier op, later op) replaced by one parameter each."""

    def __init__(self, a: Side, b: Side, float_rules: frozenset[str] = frozenset()) -> None:
        self.a, self.b = a, b
        self.float_rules = float_rules
        self.used_rules: set[str] = set()  # what the proofs so far relied on
        self.first = 1 + max(
            [i.parameter_number or 0 for i in (*a.parameters(), *b.parameters())], default=-1
        )
        self.pairs: dict[str, str] = {}  # later name -> earlier name
        self.number: dict[str, int] = {}  # earlier name -> parameter number
        #: later name -> instructions that compute it from ``{name}.cut``, the earlier op's value
        #: (the last one is named ``name``), for a later op that is a function of its counterpart
        #: rather than equal to it (a loop whose state a pass widened: hlo.pass_loops)
        self.results: dict[str, tuple[HloInstruction, ...]] = {}

    def add(self, a_name: str, b_name: str) -> None:
        self.pairs[b_name] = a_name
        self.number[a_name] = self.first + len(self.number)

    def module(self, side: Side, root: str, earlier: bool) -> HloModule:
        """``side`` cut at the pairs, with root ``root`` (only its cone is kept).

        A cut op becomes parameter ``number``; on the later side that parameter has the
        earlier op's shape, and a ``copy`` (the same logical array) gives it the later op's
        layout, so that both modules have one interface."""
        keep: list[HloInstruction] = []
        seen: set[str] = set()
        order: list[str] = []
        stack = [(root, False)]
        while stack:
            name, done = stack.pop()
            if done:
                order.append(name)
                continue
            if name in seen:
                continue
            seen.add(name)
            stack.append((name, True))
            instr = side.by_name[name]
            is_cut = (name in self.number) if earlier else (name in self.pairs)
            if not is_cut:
                stack.extend((o.name, False) for o in reversed(instr.operands))
        for name in order:
            instr = side.by_name[name]
            if earlier and name in self.number:
                keep.append(
                    HloInstruction(name, instr.shape, "parameter", parameter_number=self.number[name])
                )
            elif not earlier and name in self.pairs:
                a_instr = self.a.by_name[self.pairs[name]]
                p = f"{name}.cut"
                keep.append(
                    HloInstruction(
                        p, a_instr.shape, "parameter", parameter_number=self.number[self.pairs[name]]
                    )
                )
                if name in self.results:
                    keep.extend(self.results[name])
                elif str(a_instr.shape) != str(instr.shape):
                    # another float type (ops paired with precision erased: excess-precision) is a
                    # convert; another layout alone a copy (element by element for a tuple)
                    retyped = (
                        isinstance(a_instr.shape, ArrayShape)
                        and isinstance(instr.shape, ArrayShape)
                        and a_instr.shape.element_type != instr.shape.element_type
                    )
                    if retyped:
                        keep.append(HloInstruction(name, instr.shape, "convert", (HloOperand(p),)))
                    else:
                        keep.extend(relaid(name, p, a_instr.shape, instr.shape))
                else:
                    keep[-1] = dataclasses.replace(keep[-1], name=name)
            else:
                keep.append(instr)
        # every parameter of both modules, so that the interfaces match
        present = {i.name for i in keep}
        extra = [p for p in side.parameters() if p.name not in present]
        later_of: dict[str, str] = {}  # earlier name -> its (first) later name: one pass, not one per cut
        for b_name, a_name in self.pairs.items():
            later_of.setdefault(a_name, b_name)
        for a_name, n in self.number.items():
            if earlier and a_name not in present:
                extra.append(
                    HloInstruction(a_name, self.a.by_name[a_name].shape, "parameter", parameter_number=n)
                )
            if not earlier:
                b_name = later_of[a_name]
                if b_name not in present and f"{b_name}.cut" not in present:
                    extra.append(
                        HloInstruction(
                            f"{b_name}.cut", self.a.by_name[a_name].shape, "parameter", parameter_number=n
                        )
                    )
        instructions = [*extra, *keep]
        instructions[-1] = dataclasses.replace(instructions[-1], is_root=True)
        entry = HloComputation(side.module.entry.name, tuple(instructions), is_entry=True)
        called = called_closure(side.module, instructions)  # what map, reduce, sort... apply
        return HloModule(side.module.name, (*called, entry), entry)


def _callees(instr: HloInstruction) -> tuple[str, ...]:
    """The computations ``instr`` calls (``select=``/``scatter=`` of select-and-scatter too)."""
    extra = tuple(
        instr.attributes[k].strip().lstrip("%") for k in ("select", "scatter") if k in instr.attributes
    )
    return (*instr.called_computations, *extra)


def called_closure(module: HloModule, instructions: Sequence[HloInstruction]) -> list[HloComputation]:
    """Every computation of ``module`` that ``instructions`` call, transitively, callees first.

    >>> from layout_algebra.hlo.parser import parse_module
    >>> m = parse_module('''HloModule m
    ... add { a = f32[] parameter(0)
    ...   b = f32[] parameter(1)
    ...   ROOT s = f32[] add(a, b) }
    ... ENTRY e { p = f32[4]{0} parameter(0)
    ...   z = f32[] constant(0)
    ...   ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=add }''')
    >>> [c.name for c in called_closure(m, m.entry.instructions)]
    ['add']
    """
    known = {c.name for c in module.computations}
    order: list[str] = []
    seen: set[str] = set()
    stack = [(name, False) for i in instructions for name in _callees(i) if name in known]
    while stack:
        name, done = stack.pop()
        if done:
            order.append(name)
            continue
        if name in seen:
            continue
        seen.add(name)
        stack.append((name, True))
        body = module.computation(name)
        stack.extend(
            (n, False) for i in body.instructions for n in _callees(i) if n in known and n not in seen
        )
    return [module.computation(n) for n in order]


def relaid(name: str, source: str, shape: Shape, target: Shape) -> list[HloInstruction]:
    """Instructions giving ``source`` (of ``shape``) the layouts of ``target``, the last one named
    ``name``: a ``copy`` for an array, a tuple of its elements relaid for a tuple (XLA's copy
    takes arrays).

    >>> from layout_algebra.model.syntax import parse_shape
    >>> [i.opcode for i in relaid("w", "p", parse_shape("(s32[], f32[2,3]{1,0})"), parse_shape("(s32[], f32[2,3]{0,1})"))]
    ['get-tuple-element', 'get-tuple-element', 'copy', 'tuple']
    """
    if not isinstance(shape, TupleShape) or not isinstance(target, TupleShape):
        return [HloInstruction(name, target, "copy", (HloOperand(source),))]
    out: list[HloInstruction] = []
    elements = []
    for k, (x, y) in enumerate(zip(shape.elements, target.elements, strict=True)):
        element = f"{name}.e{k}"
        out.append(
            HloInstruction(
                element, x, "get-tuple-element", (HloOperand(source),), index=k, attributes={"index": str(k)}
            )
        )
        if str(x) != str(y):
            out.extend(relaid(f"{element}.relaid", element, x, y))
            element = f"{element}.relaid"
        elements.append(HloOperand(element))
    out.append(HloInstruction(name, target, "tuple", tuple(elements)))
    return out


class ConeKeys:
    """Hash-consed cone structures, shared by both sides of a pair: each distinct node — its
    opcode, shape, literal or parameter number, attributes, and the *ids* of its operands — gets
    one small integer, so two cones have equal ids exactly when they have the same structure
    (no hash, no collision), and every entry has the size of one instruction: nothing grows with
    the number of paths through the DAG (a backward pass shares sub-expressions everywhere)."""

    def __init__(self) -> None:
        self.ids: dict[tuple[Any, ...], int] = {}

    def id(self, node: tuple[Any, ...]) -> int:
        return self.ids.setdefault(node, len(self.ids))


def cone_key(side: Side, name: str, cut: Mapping[str, int], memo: dict[str, int], keys: ConeKeys) -> int:
    """The structure of the cone of ``name`` down to cut points and parameters, as its id in ``keys``."""
    stack = [name]
    while stack:
        top = stack[-1]
        if top in memo:
            stack.pop()
            continue
        instr = side.by_name[top]
        if top in cut:  # with its own shape: a cut pair may differ in layout (paired logically)
            memo[top] = keys.id(("cut", cut[top], str(instr.shape)))
            stack.pop()
            continue
        pending = [o.name for o in instr.operands if o.name not in memo]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        ops = tuple(memo[o.name] for o in instr.operands)
        extra = instr.parameter_number if instr.opcode == "parameter" else (instr.literal or "")
        attributes = attributes_key(side.module, instr, side.attribute_keys)
        memo[top] = keys.id((instr.opcode, str(instr.shape), extra, ops, attributes))
    return memo[name]


def decide_equal(cuts: Cuts, a_name: str, b_name: str, mode: str, timeout_ms: int) -> tuple[str, Any]:
    """Are earlier ``a_name`` and later ``b_name`` equal (given the cuts)? (status, result)."""
    a_cut = {n: k for n, k in cuts.number.items()}
    b_cut = {b: cuts.number[a] for b, a in cuts.pairs.items() if b not in cuts.results}
    keys = ConeKeys()
    ka = cone_key(cuts.a, a_name, a_cut, {}, keys)
    kb = cone_key(cuts.b, b_name, b_cut, {}, keys)
    if ka == kb and (
        mode == "logical" or str(cuts.a.builder.shapes[a_name]) == str(cuts.b.builder.shapes[b_name])
    ):
        return "proved", None
    before = cuts.module(cuts.a, a_name, earlier=True)
    after = cuts.module(cuts.b, b_name, earlier=False)
    try:
        result = verify_rewrite(before, after, mode=mode, timeout_ms=timeout_ms, float_rules=cuts.float_rules)
    except ValueError as err:
        return "unknown", str(err)
    except RecursionError:
        return (
            "unknown",
            "the chains of instructions are too deep for the encoding (Python's recursion limit)",
        )
    if result.status == "proved":
        cuts.used_rules.update(float_rules_used(result))
    return result.status, result


def cone_names(side: Side, root: str) -> set[str]:
    seen: set[str] = set()
    stack = [root]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        stack.extend(o.name for o in side.by_name[name].operands)
    return seen


def operand_types(side: Side, instr: HloInstruction) -> list[str]:
    shapes = side.builder.shapes
    return [
        s.element_type.text if isinstance(s, ArrayShape) else str(s)
        for s in (shapes[o.name] for o in instr.operands)
    ]


def no_counterpart(
    a: Side, b: Side, b_instr: HloInstruction, candidates: list[str], failures: list[str]
) -> str:
    what = f"{b_instr.opcode} {b_instr.name} ({plain_text(b_instr.shape)})"
    if is_elided_constant(b_instr):
        computation, name = b.builder.origin.get(b_instr.name, ("?", b_instr.name))
        return (
            f"constant {b_instr.name} ({plain_text(b_instr.shape)}) is printed {{...}} (its value elided by the dump) "
            f"and the earlier module has no elided constant {name} of that type in a computation {computation}: "
            "its value is unknown"
        )
    if failures:
        return (
            f"{what}: no op of the earlier module with the same opcode and attributes has provably equal operands; "
            + "; ".join(failures[:2])
        )
    same_op = [n for n in a.opaque if a.by_name[n].opcode == b_instr.opcode]
    b_types = operand_types(b, b_instr)
    for n in same_op:
        x = a.by_name[n]
        if isinstance(x.shape, ArrayShape) and isinstance(b_instr.shape, ArrayShape):
            if x.shape.dimensions != b_instr.shape.dimensions:
                continue
            a_types = operand_types(a, x)
            if x.shape.element_type != b_instr.shape.element_type or a_types != b_types:
                return (
                    f"precision change: {what} computes ({', '.join(b_types)}) -> {b_instr.shape.element_type.text} "
                    f"where the earlier {x.opcode} {n} computes ({', '.join(a_types)}) -> {x.shape.element_type.text} "
                    "(the pass changes element precision on purpose)"
                )
    known = internal_custom_call_reason(b_instr) or scan_rewrite_reason(
        [a.by_name[n] for n in a.opaque], b_instr
    )
    if known is not None:
        return f"{what}: {known}"
    if b_instr.opcode == "convolution" and "lhs_dilate" in b_instr.attributes.get("window", ""):
        return (
            f"{what}: a base-dilated convolution ({b_instr.attributes['window']}, dim_labels="
            f"{b_instr.attributes.get('dim_labels')}) that is not a batched dot (its window does not pair "
            "output s with input s and kernel s alone), and the earlier module has no convolution like it"
        )
    if same_op:
        return f"{what}: no {b_instr.opcode} of the earlier module has the same attributes, operand types and result type"
    return f"{what}: the earlier module has no {b_instr.opcode} (the pass changed a compute op whose index semantics are not stated)"
