"""Pass validation's canonical forms of rewritten compute ops: what XLA's passes write in
another form is read back in one form, on both sides of a pair, before opaque ops are paired.

Each form is a theorem about XLA's operation semantics (tested against brute-force oracles in
``tests/hlo/test_pass_forms.py``) or, where XLA defines an op by its own rewrite, a named
assumption (:data:`TOPK_DECOMPOSITION`):

* **comparators** (:func:`normal_comparators`): a scalar ``bitcast`` between types of one
  width is the ``bitcast-convert`` it stands for (``algsimp`` writes one for the other); the
  integer key ``comparison-expander`` writes for a total-order float comparison
  (``select(b < 0, b ^ MAX, b)`` of ``b = bitcast-convert(x)``, or ``MAX - b`` as unsigned) is
  read back as ``compare(x, y), type=TOTALORDER``: the key is strictly monotone in XLA's total
  order (-NaN < -inf < ... < -0 < +0 < ... < inf < +NaN), so comparing keys is comparing x, y;
* **a reduce over dimensions of size 1** whose initial value is its computation's identity
  (``add`` with -0 or integer 0, ``maximum`` with -inf, ``minimum`` with +inf) is the reshape
  that drops them (``tpu-copy-normalizer`` writes such a reduce for a reshape): every result
  element is f(init, x) = x;
* **a convolution with size-1 windows** (stride 1, no padding or dilation, size-1 kernel
  spatial dimensions, no feature or batch groups) is a dot: out[s.., b, o] =
  sum_i lhs[s.., b, i] x rhs[1.., i, o] (``dot_canonicalizer`` writes one for a dot);
* **XLA's top-k** (the ``topk`` op, and the ``TopK`` custom-call ``topk-rewriter`` writes) is
  what ``topk-decomposer`` writes for it: a stable sort of (x, iota) along the last
  dimension by the comparator, both outputs sliced to the first k;
* **gather and scatter** in their simple forms (:mod:`layout_algebra.hlo.pass_indexing`);
* **a map** of an elementwise computation is that computation over whole arrays.

XLA:TPU's internal custom calls (:data:`INTERNAL_CUSTOM_CALLS`) and reduce-window-rewriter's
two-level scan are left ``unknown`` with a reason naming them.

>>> from layout_algebra.hlo.parser import parse_module
>>> m = parse_module('''HloModule m
... ENTRY e {
...   p = f32[4,1,3]{2,1,0} parameter(0)
...   z = f32[] constant(-0)
...   ROOT r = f32[4,3]{1,0} reduce(p, z), dimensions={1}, to_apply=add
... }
... add {
...   a = f32[] parameter(0)
...   b = f32[] parameter(1)
...   ROOT s = f32[] add(a, b)
... }''')
>>> by_name = {i.name: i for i in m.entry.instructions}
>>> unit_reduce_as_reshape(m, by_name, by_name["r"]).opcode
'reshape'
>>> from layout_algebra.hlo.ir import HloInstruction
>>> plus_zero = HloInstruction("z", by_name["z"].shape, "constant", literal="0")
>>> unit_reduce_as_reshape(m, {**by_name, "z": plus_zero}, by_name["r"]).opcode  # -0 + 0 is +0
'reduce'
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from layout_algebra.hlo.ir import HloComputation, HloInstruction, HloModule, HloOperand, SliceDimension
from layout_algebra.hlo.opcodes import ELEMENTWISE_OPCODES, INERT_ATTRIBUTES, INLINED_OPCODES
from layout_algebra.hlo.pass_canonical import Builder, parse_window, window_terms
from layout_algebra.hlo.pass_indexing import (
    Emitter,
    braced,
    default_shape,
    gather_simple_form,
    scatter_simple_form,
)
from layout_algebra.model.shapes import ArrayShape, TupleShape
from layout_algebra.model.syntax import parse_shape

__all__ = [
    "INTERNAL_CUSTOM_CALLS",
    "TOPK_DECOMPOSITION",
    "WHOLE_WINDOW_REDUCE",
    "Expansion",
    "assumptions_of_pair",
    "custom_call_target",
    "expand",
    "internal_custom_call_reason",
    "map_inlined",
    "normal_comparators",
    "scan_rewrite_reason",
    "topk_as_sort",
    "total_order_key",
    "unit_convolution_as_dot",
    "unit_reduce_as_reshape",
    "whole_window_reduce",
]

#: The name of the assumption that XLA's top-k is the sort topk-decomposer writes for it.
TOPK_DECOMPOSITION = "topk-decomposition"

_FLOAT_WIDTH = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}
_SIGNED = {16: "s16", 32: "s32", 64: "s64"}
_UNSIGNED = {16: "u16", 32: "u32", 64: "u64"}


def total_order_key(bits: int, width: int) -> int:
    """The signed integer comparison-expander compares for a float with these ``bits``:
    ``b < 0 ? b ^ MAX : b`` of the bits read as a signed ``width``-bit integer.

    >>> import struct
    >>> key = lambda x: total_order_key(struct.unpack("<I", struct.pack("<f", x))[0], 32)
    >>> key(-1.0) < key(-0.0) < key(0.0) < key(1.0) < key(float("inf")) < key(float("nan"))
    True
    """
    signed = bits - (1 << width) if bits >> (width - 1) else bits
    return signed ^ ((1 << (width - 1)) - 1) if signed < 0 else signed


# ------------------------------------------------------------------------ comparators
def _element(instr: HloInstruction) -> str | None:
    s = instr.shape
    return s.element_type.text if isinstance(s, ArrayShape) and s.rank == 0 else None


def _scalar_constant(by_name: Mapping[str, HloInstruction], name: str) -> str | None:
    """The literal of a rank-0 constant, looking through rank-0 broadcasts and converts."""
    instr = by_name.get(name)
    while instr is not None and instr.opcode in ("broadcast", "convert") and len(instr.operands) == 1:
        if _element(instr) is None:
            return None
        instr = by_name.get(instr.operands[0].name)
    if instr is None or instr.opcode != "constant" or _element(instr) is None:
        return None
    return (instr.literal or "").strip()


def _int_literal(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _reinterpreted(by_name: Mapping[str, HloInstruction], name: str, to: str) -> str | None:
    """x when ``name`` is ``bitcast-convert(x)`` (or a scalar bitcast) to ``to``."""
    instr = by_name.get(name)
    if instr is None or instr.opcode not in ("bitcast-convert", "bitcast") or len(instr.operands) != 1:
        return None
    if _element(instr) != to:
        return None
    return instr.operands[0].name


def _key_source(by_name: Mapping[str, HloInstruction], name: str) -> tuple[str, str] | None:
    """(x, x's float type) when ``name`` computes comparison-expander's total-order key of x."""
    select = by_name.get(name)
    if select is None or select.opcode != "select" or len(select.operands) != 3:
        return None
    signed = _element(select)
    width = next((w for w, t in _SIGNED.items() if t == signed), None)
    if width is None or signed is None:
        return None
    cond, flipped, plain = (by_name.get(o.name) for o in select.operands)
    x = _reinterpreted(by_name, select.operands[2].name, signed)
    if x is None or cond is None or flipped is None or plain is None:
        return None
    source = by_name.get(x)
    if source is None or _FLOAT_WIDTH.get(_element(source) or "") != width:
        return None
    # cond: compare(bitcast-convert(x), 0), direction=LT, signed
    if (
        cond.opcode != "compare"
        or cond.attributes.get("direction") != "LT"
        or cond.attributes.get("type", "SIGNED") != "SIGNED"
        or _reinterpreted(by_name, cond.operands[0].name, signed) != x
        or _int_literal(_scalar_constant(by_name, cond.operands[1].name)) != 0
    ):
        return None
    top = (1 << (width - 1)) - 1
    if flipped.opcode == "xor" and len(flipped.operands) == 2:  # b ^ MAX, either order
        names = [o.name for o in flipped.operands]
        for b, m in (names, names[::-1]):
            if _reinterpreted(by_name, b, signed) == x and _int_literal(_scalar_constant(by_name, m)) == top:
                return x, _element(source) or ""
        return None
    # bitcast-convert(MAX - bitcast-convert(x) as unsigned) (comparison_expander.cc)
    inner = _reinterpreted(by_name, flipped.name, signed)
    sub = by_name.get(inner) if inner is not None else None
    if sub is None or sub.opcode != "subtract" or _element(sub) != _UNSIGNED[width]:
        return None
    if _int_literal(_scalar_constant(by_name, sub.operands[0].name)) != top:
        return None
    if _reinterpreted(by_name, sub.operands[1].name, _UNSIGNED[width]) != x:
        return None
    return x, _element(source) or ""


def _normal_instruction(by_name: Mapping[str, HloInstruction], instr: HloInstruction) -> HloInstruction:
    if instr.opcode == "bitcast" and len(instr.operands) == 1:
        source = by_name.get(instr.operands[0].name)
        a, b = _element(instr), _element(source) if source is not None else None
        widths = {**_FLOAT_WIDTH, "s16": 16, "s32": 32, "s64": 64, "u16": 16, "u32": 32, "u64": 64}
        if a and b and a in widths and widths.get(b) == widths[a]:  # one scalar's bits, read as another type
            return dataclasses.replace(instr, opcode="bitcast-convert")
    if (
        instr.opcode == "compare"
        and len(instr.operands) == 2
        and instr.attributes.get("type", "SIGNED") == "SIGNED"
    ):
        left, right = (_key_source(by_name, o.name) for o in instr.operands)
        if left is not None and right is not None and left[1] == right[1]:
            attrs = {k: v for k, v in instr.attributes.items() if k in INERT_ATTRIBUTES}
            attrs.update(direction=instr.attributes.get("direction", ""), type="TOTALORDER")
            return dataclasses.replace(
                instr, operands=(HloOperand(left[0]), HloOperand(right[0])), attributes=attrs
            )
    return instr


def normal_comparators(module: HloModule) -> HloModule:
    """``module`` with every computation an op applies (a sort's comparator, a reduce's
    function..., not a fused or called computation, which pass validation inlines) in
    normal form: scalar bitcasts read as bitcast-converts, comparison-expander's integer
    keys read back as total-order comparisons. Instructions left dead stay (keys follow
    the root)."""
    inlined = {
        name
        for _, instr in module.instructions()
        if instr.opcode in INLINED_OPCODES
        for name in instr.called_computations
    }
    changed = False
    computations = []
    for computation in module.computations:
        if computation.is_entry or computation.name in inlined:
            computations.append(computation)
            continue
        by_name = {i.name: i for i in computation.instructions}
        instructions = tuple(_normal_instruction(by_name, i) for i in computation.instructions)
        if instructions != computation.instructions:
            changed = True
            computation = dataclasses.replace(computation, instructions=instructions)
        computations.append(computation)
    if not changed:
        return module
    entry = next(c for c in computations if c.name == module.entry.name)
    return dataclasses.replace(module, computations=tuple(computations), entry=entry)


# ------------------------------------------------------------------------ reduce
def _identity(opcode: str, element: str, literal: str | None) -> bool:
    """Is ``literal`` the identity of ``opcode`` on every ``element`` value (NaN, -0 included)?"""
    if literal is None:
        return False
    if element in _FLOAT_WIDTH:
        try:
            value = float(literal)
        except ValueError:
            return False
        if opcode == "add":  # x + (-0) = x for every x; x + 0 turns -0 into +0
            return value == 0 and math.copysign(1.0, value) < 0
        return (opcode, value) in (("maximum", -math.inf), ("minimum", math.inf))
    number = _int_literal(literal)
    if number is None or not re.fullmatch(r"[su]\d+", element):
        return False
    width = int(element[1:])
    low, high = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if element[0] == "s" else (0, (1 << width) - 1)
    return {"add": 0, "maximum": low, "minimum": high}.get(opcode) == number


def _binary_op(module: HloModule, name: str | None) -> str | None:
    """``add``/``maximum``/``minimum`` when computation ``name`` is that op of its two parameters."""
    if name is None:
        return None
    try:
        computation = module.computation(name)
    except KeyError:
        return None
    root = computation.root
    by_name = {i.name: i for i in computation.instructions}
    params = sorted(
        by_name[o.name].parameter_number or 0
        for o in root.operands
        if o.name in by_name and by_name[o.name].opcode == "parameter"
    )
    if root.opcode not in ("add", "maximum", "minimum") or params != [0, 1]:
        return None
    return root.opcode


def unit_reduce_as_reshape(
    module: HloModule, by_name: Mapping[str, HloInstruction], instr: HloInstruction
) -> HloInstruction:
    """A ``reduce`` of one array over dimensions of size 1 only, from its function's identity,
    as the ``reshape`` that drops those dimensions (each result element is f(init, x) = x).
    Any other instruction is returned as it is."""
    if instr.opcode != "reduce" or len(instr.operands) != 2 or not isinstance(instr.shape, ArrayShape):
        return instr
    source = by_name.get(instr.operands[0].name)
    if source is None or not isinstance(source.shape, ArrayShape):
        return instr
    dims = instr.dimensions or ()
    if not dims or any(not (0 <= d < source.shape.rank) or source.shape.dimensions[d] != 1 for d in dims):
        return instr
    op = _binary_op(module, instr.to_apply)
    element = instr.shape.element_type.text
    if op is None or not _identity(op, element, _scalar_constant(by_name, instr.operands[1].name)):
        return instr
    kept = [s for d, s in enumerate(source.shape.dimensions) if d not in dims]
    if kept != list(instr.shape.dimensions) or source.shape.element_type != instr.shape.element_type:
        return instr
    attrs = {k: v for k, v in instr.attributes.items() if k in INERT_ATTRIBUTES}
    return HloInstruction(instr.name, instr.shape, "reshape", (instr.operands[0],), attrs)


# ------------------------------------------------------------------------ convolution
def unit_convolution_as_dot(builder: Builder, instr: HloInstruction) -> list[HloInstruction] | None:
    """A convolution whose every window is one element (size 1, stride 1, no padding, no
    dilation, no reversal) over size-1 kernel spatial dimensions, with no feature or batch
    groups, as [reshape of the kernel dropping its spatial dimensions, dot, transpose to the
    output's dimension order] (the last under the convolution's name), or ``None``.

    out[s.., b, o] = sum_i lhs[s.., b, i] x rhs[0.., i, o]: the spatial dimensions of lhs are
    free dimensions of the dot."""
    labels = re.fullmatch(r"([0-9bf]+)_([0-9io]+)->([0-9bf]+)", instr.attributes.get("dim_labels", ""))
    allowed = {"dim_labels", "window", "precision_config", "operand_precision"} | INERT_ATTRIBUTES
    groups_ok = all(instr.attributes.get(k, "1") == "1" for k in ("feature_group_count", "batch_group_count"))
    other = set(instr.attributes) - allowed - {"feature_group_count", "batch_group_count"}
    if labels is None or other or not groups_ok or len(instr.operands) != 2:
        return None
    lhs_l, rhs_l, out_l = labels.groups()
    spatial = sorted(c for c in lhs_l if c.isdigit())
    if (
        sorted(lhs_l) != sorted([*spatial, "b", "f"])
        or sorted(rhs_l) != sorted([*spatial, "i", "o"])
        or sorted(out_l) != sorted([*spatial, "b", "f"])
    ):
        return None
    window = parse_window(instr.attributes.get("window", "{}")) if spatial else []
    if window is None or len(window) != len(spatial):
        return None
    one = {"size": 1, "stride": 1, "pad": (0, 0), "lhs_dilate": 1, "rhs_dilate": 1, "rhs_reversal": 0}
    if any(w != one for w in window):
        return None
    lhs_name, rhs_name = (o.name for o in instr.operands)
    lhs, rhs, out = builder.shapes.get(lhs_name), builder.shapes.get(rhs_name), instr.shape
    if not (isinstance(lhs, ArrayShape) and isinstance(rhs, ArrayShape) and isinstance(out, ArrayShape)):
        return None
    if lhs.rank != len(lhs_l) or rhs.rank != len(rhs_l) or out.rank != len(out_l):
        return None
    if any(rhs.dimensions[rhs_l.index(c)] != 1 for c in spatial):
        return None
    if lhs.dimensions[lhs_l.index("f")] != rhs.dimensions[rhs_l.index("i")]:
        return None
    kernel_labels = [c for c in rhs_l if not c.isdigit()]
    kernel_dims = [rhs.dimensions[rhs_l.index(c)] for c in kernel_labels]
    emitted: list[HloInstruction] = []
    kernel = rhs_name
    if len(kernel_labels) != len(rhs_l):
        kernel = builder.fresh(instr.name + "/kernel")
        emitted.append(
            HloInstruction(
                kernel, default_shape(rhs.element_type.text, kernel_dims), "reshape", (HloOperand(rhs_name),)
            )
        )
    dot_labels = [c for c in lhs_l if c != "f"] + ["f"]  # the dot's result: lhs free dims, then o (as f)
    sizes = {c: lhs.dimensions[lhs_l.index(c)] for c in lhs_l if c != "f"}
    sizes["f"] = rhs.dimensions[rhs_l.index("o")]
    if [sizes[c] for c in out_l] != list(out.dimensions):
        return None
    perm = [dot_labels.index(c) for c in out_l]
    identity = perm == list(range(len(perm)))
    attrs = {k: v for k, v in instr.attributes.items() if k not in ("dim_labels", "window")}
    attrs = {k: v for k, v in attrs.items() if k not in ("feature_group_count", "batch_group_count")}
    attrs["lhs_contracting_dims"] = "{" + str(lhs_l.index("f")) + "}"
    attrs["rhs_contracting_dims"] = "{" + str(kernel_labels.index("i")) + "}"
    dot_name = instr.name if identity else builder.fresh(instr.name + "/dot")
    dot_shape = out if identity else default_shape(out.element_type.text, [sizes[c] for c in dot_labels])
    emitted.append(
        HloInstruction(dot_name, dot_shape, "dot", (HloOperand(lhs_name), HloOperand(kernel)), attrs)
    )
    if not identity:
        emitted.append(
            HloInstruction(
                instr.name,
                out,
                "transpose",
                (HloOperand(dot_name),),
                {"dimensions": "{" + ",".join(map(str, perm)) + "}"},
                dimensions=tuple(perm),
            )
        )
    return emitted


# ------------------------------------------------------------------------ top-k
def _is_topk(instr: HloInstruction) -> bool:
    return instr.opcode == "topk" or (instr.opcode == "custom-call" and custom_call_target(instr) == "TopK")


def _topk_comparator(
    module: HloModule, instr: HloInstruction, values: str
) -> tuple[str, HloComputation | None] | None:
    """The comparator of top-k ``instr``: the custom-call's, or for the ``topk`` op the one
    topk-decomposer builds (compare(p0, p1) GT/LT, TOTALORDER, over (values, values, s32, s32))."""
    if instr.opcode == "custom-call":
        names = re.findall(r"%?([A-Za-z0-9_][\w.\-]*)", instr.attributes.get("called_computations", ""))
        if len(names) != 1:
            return None
        try:
            module.computation(names[0])
        except KeyError:
            return None
        return names[0], None
    largest = instr.attributes.get("largest", "true")
    if largest not in ("true", "false"):
        return None
    direction = "GT" if largest == "true" else "LT"
    name = f"{instr.name}.topk_comparator"
    scalar, index = parse_shape(f"{values}[]"), parse_shape("s32[]")
    params = tuple(
        HloInstruction(f"p{k}", shape, "parameter", parameter_number=k)
        for k, shape in enumerate((scalar, scalar, index, index))
    )
    root = HloInstruction(
        "compare",
        parse_shape("pred[]"),
        "compare",
        (HloOperand("p0"), HloOperand("p1")),
        {"direction": direction, "type": "TOTALORDER"},
        is_root=True,
    )
    return name, HloComputation(name, (*params, root))


def topk_as_sort(
    builder: Builder, module: HloModule, instr: HloInstruction
) -> tuple[list[HloInstruction], HloComputation | None] | None:
    """XLA's top-k (``topk`` op or ``TopK`` custom-call) of x (rank 1 or 2, k along the last
    dimension) as topk-decomposer writes it: [iota, sort(x, iota) stable along the last
    dimension, the two outputs sliced to k, their tuple under the op's name], with the
    comparator to add to the module (``None`` when the custom-call names one), or ``None``."""
    if not _is_topk(instr) or len(instr.operands) != 1:
        return None
    x = instr.operands[0].name
    xs = builder.shapes.get(x)
    out = instr.shape
    if not isinstance(xs, ArrayShape) or xs.rank not in (1, 2) or not isinstance(out, TupleShape):
        return None
    if len(out.elements) != 2:
        return None
    values, indices = out.elements
    if not isinstance(values, ArrayShape) or not isinstance(indices, ArrayShape):
        return None
    k = values.dimensions[-1]
    if (
        list(values.dimensions[:-1]) != list(xs.dimensions[:-1])
        or list(indices.dimensions) != list(values.dimensions)
        or indices.element_type.text != "s32"
        or values.element_type != xs.element_type
        or not (isinstance(k, int) and 0 <= k <= xs.dimensions[-1])
    ):
        return None
    if instr.opcode == "topk" and str(instr.attributes.get("k", "")) != str(k):
        return None
    found = _topk_comparator(module, instr, xs.element_type.text)
    if found is None:
        return None
    comparator, new = found
    last = xs.rank - 1
    dims = list(xs.dimensions)
    iota = builder.fresh(instr.name + "/iota")
    sort = builder.fresh(instr.name + "/sort")
    index_shape = default_shape("s32", dims)
    sort_shape = parse_shape(f"({default_shape(xs.element_type.text, dims)}, {index_shape})")
    emitted = [
        HloInstruction(iota, index_shape, "iota", (), {"iota_dimension": str(last)}),
        HloInstruction(
            sort,
            sort_shape,
            "sort",
            (HloOperand(x), HloOperand(iota)),
            {"dimensions": "{" + str(last) + "}", "is_stable": "true", "to_apply": "%" + comparator},
            dimensions=(last,),
            to_apply=comparator,
        ),
    ]
    parts = []
    for n, shape in enumerate((values, indices)):
        gte, part = builder.fresh(f"{instr.name}/gte{n}"), builder.fresh(f"{instr.name}/top{n}")
        whole = sort_shape.elements[n]  # type: ignore[attr-defined]
        emitted.append(
            HloInstruction(gte, whole, "get-tuple-element", (HloOperand(sort),), {"index": str(n)}, index=n)
        )
        bounds = tuple(SliceDimension(0, d, 1) for d in shape.dimensions)
        text = "{" + ", ".join(f"[0:{d}]" for d in shape.dimensions) + "}"
        emitted.append(
            HloInstruction(part, shape, "slice", (HloOperand(gte),), {"slice": text}, slice=bounds)
        )
        parts.append(part)
    emitted.append(HloInstruction(instr.name, out, "tuple", tuple(HloOperand(p) for p in parts)))
    return emitted, new


# ------------------------------------------------------------------------ driver
def assumptions_of_pair(
    a: Mapping[str, tuple[str, str]], a_name: str, b: Mapping[str, tuple[str, str]], b_name: str
) -> set[str]:
    """The assumptions pairing earlier ``a_name`` with later ``b_name`` rests on: those under
    which either stands for its original op, unless both stand for the same kind of op (then
    the pair compares that op with itself, read alike on both sides)."""
    if a_name in a and b_name in b and a[a_name][1] == b[b_name][1]:
        return set()
    return {m[n][0] for m, n in ((a, a_name), (b, b_name)) if n in m}


@dataclass
class Expansion:
    """One instruction's canonical form: the instructions to emit instead (the last under its
    name), computations to add to the module, and the assumptions reading it so rests on."""

    instructions: list[HloInstruction]
    computations: list[HloComputation] = field(default_factory=list)
    #: names of emitted ops -> (the assumption under which they stand for the original op, that op)
    assumed: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: names of emitted dots that stand for a convolution
    as_dot: set[str] = field(default_factory=set)


def expand(
    builder: Builder, module: HloModule, by_name: Mapping[str, HloInstruction], instr: HloInstruction
) -> Expansion:
    """``instr`` in its canonical form (itself when no form applies)."""
    if instr.opcode == "reduce":
        return Expansion([unit_reduce_as_reshape(module, by_name, instr)])
    if instr.opcode == "convolution":
        emitted = unit_convolution_as_dot(builder, instr)
        if emitted is not None:
            return Expansion(emitted, as_dot={i.name for i in emitted if i.opcode == "dot"})
    if instr.opcode == "gather":
        emitted = gather_simple_form(builder, instr)
        if emitted is not None:
            return Expansion(emitted)
    if instr.opcode == "scatter":
        emitted = scatter_simple_form(builder, instr)
        if emitted is not None:
            return Expansion(emitted)
    if instr.opcode == "reduce-window":
        emitted = whole_window_reduce(builder, module, by_name, instr)
        if emitted is not None:
            return Expansion(emitted, assumed={emitted[0].name: (WHOLE_WINDOW_REDUCE, "reduce-window")})
    if instr.opcode == "map":
        emitted = map_inlined(builder, module, instr)
        if emitted is not None:
            return Expansion(emitted)
    if _is_topk(instr):
        found = topk_as_sort(builder, module, instr)
        if found is not None:
            emitted, new = found
            origin = f"{instr.opcode} {instr.attributes.get('custom_call_target', '')}"
            sorts = {i.name: (TOPK_DECOMPOSITION, origin) for i in emitted if i.opcode == "sort"}
            return Expansion(emitted, [new] if new is not None else [], sorts)
    return Expansion([instr])


# ------------------------------------------------------------------------ map
def map_inlined(builder: Builder, module: HloModule, instr: HloInstruction) -> list[HloInstruction] | None:
    """A ``map`` over all dimensions whose computation holds only parameters, scalar constants
    and elementwise ops, as those ops over whole arrays (a constant broadcast to the map's
    dimensions), the root under the map's name; or ``None``. Element j of the result is the
    computation applied to the operands' elements j (XLA's definition of map), and so is
    element j of each inlined op."""
    out = instr.shape
    if instr.opcode != "map" or not isinstance(out, ArrayShape) or instr.to_apply is None:
        return None
    if list(instr.dimensions or range(out.rank)) != list(range(out.rank)):
        return None
    try:
        computation = module.computation(instr.to_apply)
    except KeyError:
        return None
    dims = list(out.dimensions)
    operands = [o.name for o in instr.operands]
    for name in operands:
        shape = builder.shapes.get(name)
        if not isinstance(shape, ArrayShape) or list(shape.dimensions) != dims:
            return None
    e = Emitter(builder, instr.name)
    local: dict[str, str] = {}
    root = computation.root.name
    for sub in computation.instructions:
        element = _element(sub)
        if element is None:
            return None
        target = instr.name if sub.name == root else e.name(sub.opcode)
        shape = out if sub.name == root else default_shape(element, dims)
        if sub.name == root and element != out.element_type.text:
            return None
        if sub.opcode == "parameter":
            n = sub.parameter_number
            if n is None or n >= len(operands):
                return None
            if sub.name == root:
                e.add(HloInstruction(target, shape, "copy", (HloOperand(operands[n]),)))
            local[sub.name] = operands[n] if sub.name != root else target
            continue
        if sub.opcode == "constant":
            scalar = e.add(dataclasses.replace(sub, name=e.name("constant"), is_root=False))
            local[sub.name] = e.add(
                HloInstruction(
                    target, shape, "broadcast", (HloOperand(scalar),), {"dimensions": "{}"}, dimensions=()
                )
            )
            continue
        if sub.opcode not in ELEMENTWISE_OPCODES or sub.called_computations:
            return None
        if any(o.name not in local for o in sub.operands):
            return None
        attrs = {k: v for k, v in sub.attributes.items() if k not in INERT_ATTRIBUTES}
        local[sub.name] = e.add(
            dataclasses.replace(
                sub,
                name=target,
                shape=shape,
                operands=tuple(HloOperand(local[o.name]) for o in sub.operands),
                attributes=attrs,
                is_root=False,
            )
        )
    if not e.emitted or e.emitted[-1].name != instr.name:
        return None
    return e.emitted


# ------------------------------------------------------------------------ precise unknowns
#: XLA:TPU custom calls whose semantics are not public: a pair that adds or changes one is
#: ``unknown`` with this reason, never read as an op it might be.
INTERNAL_CUSTOM_CALLS: dict[str, str] = {
    "AssumeGatherIndicesInBound": "XLA:TPU's AssumeGatherIndicesInBound custom call (tpu_scatter_gather_optimizer "
    "writes it on clamped gather indices) is an internal marker whose semantics are not public; it is not "
    "read as the identity",
    "GatherScatterIndicesBitpacked": "XLA:TPU's GatherScatterIndicesBitpacked custom call packs gather/scatter "
    "indices into an internal bit format that is not public",
    "tpu_custom_call": "a Mosaic kernel (tpu_custom_call: the flash-attention pass and Pallas write them) is "
    "compiled code, not HLO: its semantics are not stated",
    "AllocateBuffer": "AllocateBuffer is an uninitialized buffer (while-initializer-removal writes it for a loop "
    "state it proves is overwritten before it is read): its contents are undefined, and that proof is about "
    "the loop, which this validator does not interpret",
}


def custom_call_target(instr: HloInstruction) -> str:
    return instr.attributes.get("custom_call_target", "").strip('"')


def internal_custom_call_reason(instr: HloInstruction) -> str | None:
    """Why a custom call of a target whose semantics are not public stays ``unknown``."""
    if instr.opcode != "custom-call":
        return None
    return INTERNAL_CUSTOM_CALLS.get(custom_call_target(instr))


def _is_scan(instr: HloInstruction) -> bool:
    """A reduce-window with a prefix-scan window (size n > 1, padding n - 1 before, stride 1)."""
    window = parse_window(instr.attributes.get("window", ""))
    return window is not None and any(
        isinstance(w["size"], int) and w["size"] > 1 and w["pad"] == (w["size"] - 1, 0) and w["stride"] == 1
        for w in window
    )


def scan_rewrite_reason(earlier: Sequence[HloInstruction], instr: HloInstruction) -> str | None:
    """Why a reduce-window that reduce-window-rewriter wrote for a prefix scan stays ``unknown``."""
    if instr.opcode != "reduce-window" or not any(
        i.opcode == "reduce-window" and _is_scan(i) for i in earlier
    ):
        return None
    return (
        "a prefix scan (a reduce-window of size n padded n - 1 before) rewritten as a two-level scan "
        "(reduce-window-rewriter: scans of blocks, a scan of the block totals, combined by map): equal only "
        "if the reducer is associative, exact for max/min and integer add but not for float add (reassociation "
        "rounds differently); reduce-window is not interpreted here"
    )


# ------------------------------------------------------------------------ whole-window reduce-window
#: The name of the assumption that a reduce-window whose windows cover whole dimensions is a reduce.
WHOLE_WINDOW_REDUCE = "whole-window-reduce"


def whole_window_reduce(
    builder: Builder, module: HloModule, by_name: Mapping[str, HloInstruction], instr: HloInstruction
) -> list[HloInstruction] | None:
    """A one-input ``reduce-window`` by ``maximum``/``minimum`` (or integer ``add``) from its
    identity whose every window along some dimensions covers all of them (the rest one-element
    windows) as [the ``reduce`` of those dimensions, its broadcast under the op's name], or
    ``None``. Each output element combines exactly the input elements of its row, plus
    padding equal to the identity (XLA:TPU's tpu_fusion writes a max over a row, broadcast,
    as such a window: size 2n-1, padding n-1 on both sides)."""
    out = instr.shape
    if instr.opcode != "reduce-window" or len(instr.operands) != 2 or not isinstance(out, ArrayShape):
        return None
    x = builder.shapes.get(instr.operands[0].name)
    window = parse_window(instr.attributes.get("window", ""))
    if not isinstance(x, ArrayShape) or window is None or len(window) != x.rank or out.rank != x.rank:
        return None
    op = _binary_op(module, instr.to_apply)
    element = out.element_type.text
    if op is None or (op == "add" and element in _FLOAT_WIDTH):
        return None
    if not _identity(op, element, _scalar_constant(by_name, instr.operands[1].name)):
        return None
    one = {"size": 1, "stride": 1, "pad": (0, 0), "lhs_dilate": 1, "rhs_dilate": 1, "rhs_reversal": 0}
    reduced: list[int] = []
    for d, w in enumerate(window):
        n, m = x.dimensions[d], out.dimensions[d]
        if not isinstance(n, int) or not isinstance(m, int):
            return None
        if w == one:
            if n != m:
                return None
            continue
        if w["lhs_dilate"] != 1 or w["rhs_reversal"] != 0:
            return None
        inputs: dict[int, list[int]] = {}  # output position -> the input positions it combines
        for p, _, i in window_terms(w, n, m):
            inputs.setdefault(p, []).append(i)
        row = list(range(n))
        if any(sorted(inputs.get(o, ())) != row for o in range(m)):  # every element of the row, once
            return None
        reduced.append(d)
    if not reduced:
        return None
    kept = [d for d in range(x.rank) if d not in reduced]
    e = Emitter(builder, instr.name)
    total = e.add(
        HloInstruction(
            e.name("reduce"),
            default_shape(element, [x.dimensions[d] for d in kept]),
            "reduce",
            instr.operands,
            {"dimensions": braced(reduced), "to_apply": instr.attributes.get("to_apply", "")},
            dimensions=tuple(reduced),
            to_apply=instr.to_apply,
        )
    )
    e.add(
        HloInstruction(
            instr.name,
            out,
            "broadcast",
            (HloOperand(total),),
            {"dimensions": braced(kept)},
            dimensions=tuple(kept),
        )
    )
    return e.emitted
