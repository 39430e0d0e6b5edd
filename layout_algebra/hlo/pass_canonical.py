"""Pass validation's flat modules: every ``fusion`` and ``call`` inlined under fresh names, and compute
ops put in one canonical form (a dot's operands, a convolution that is a dot, a reduce's dimensions)
so that two modules written differently by a pass compare as the same ops.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from layout_algebra.hlo.attributes import parse_int_list
from layout_algebra.hlo.ir import (
    HloComputation,
    HloInstruction,
    HloModule,
    HloOperand,
)
from layout_algebra.hlo.opcodes import (
    INERT_ATTRIBUTES,
    INLINED_OPCODES,
)
from layout_algebra.hlo.validity import InvalidHlo
from layout_algebra.model.errors import LayoutAlgebraError
from layout_algebra.model.shapes import ArrayShape, Shape
from layout_algebra.model.syntax import parse_shape


def defines_computation(module: HloModule, name: str) -> bool:
    return any(c.name == name for c in module.computations)


# ------------------------------------------------------------------------ flattening
class Builder:
    """A flat list of instructions under fresh names, with the shape of each."""

    def __init__(self) -> None:
        self.instructions: list[HloInstruction] = []
        self.shapes: dict[str, Shape] = {}
        self.count = 0
        #: flat name -> (the computation that defines it, its name there)
        self.origin: dict[str, tuple[str, str]] = {}

    def emit(self, instr: HloInstruction) -> str:
        self.instructions.append(instr)
        self.shapes[instr.name] = instr.shape
        return instr.name

    def fresh(self, hint: str) -> str:
        self.count += 1
        return f"{hint}.v{self.count}"

    def bind(self, source: str, shape: Shape, hint: str) -> str:
        """``source`` standing for a value of ``shape`` (a fused parameter, a fusion's result).

        XLA requires the two shapes, layouts included, to be the same: a fused computation
        reads its operands' buffers as they are. Anything else is not read as a copy (that
        would hide a layout bug) but left undecided."""
        if str(self.shapes[source]) == str(shape):
            return source
        raise Unsupported(f"{hint} is {shape} but stands for {source}, which is {self.shapes[source]}")


class Unsupported(LayoutAlgebraError):
    """The pair cannot be decided; the message says why."""


def flatten_module(module: HloModule) -> tuple[Builder, str]:
    """The entry computation with every fusion and call inlined; the name of its root."""
    builder = Builder()

    def inline(computation: HloComputation, prefix: str, bindings: Sequence[str] | None, depth: int) -> str:
        if depth > 50:
            raise Unsupported(f"calls nested more than 50 deep at {computation.name}")
        local: dict[str, str] = {}
        for instr in computation.instructions:
            name = prefix + instr.name
            operands = [local[o.name] for o in instr.operands if o.name in local]
            if len(operands) != len(instr.operands):
                missing = [o.name for o in instr.operands if o.name not in local]
                raise Unsupported(
                    f"{instr.name} in {computation.name} uses {missing} before their definition"
                )
            if instr.opcode == "parameter" and bindings is not None:
                n = instr.parameter_number
                if n is None or n >= len(bindings):
                    raise Unsupported(f"parameter {instr.name} of {computation.name} has no operand")
                local[instr.name] = builder.bind(bindings[n], instr.shape, name)
                continue
            if instr.opcode in INLINED_OPCODES:
                callee = instr.calls[0] if instr.calls else instr.to_apply
                if callee is not None and defines_computation(module, callee):
                    root = inline(module.computation(callee), name + "/", operands, depth + 1)
                    local[instr.name] = builder.bind(root, instr.shape, name)
                    continue
            local[instr.name] = builder.emit(
                dataclasses.replace(
                    instr, name=name, operands=tuple(HloOperand(o) for o in operands), is_root=False
                )
            )
            builder.origin[name] = (computation.name, instr.name)
        return local[computation.root.name]

    root = inline(module.entry, "", None, 0)
    return builder, root


# ------------------------------------------------------------------------ canonical forms
def canonical_dot(builder: Builder, instr: HloInstruction) -> HloInstruction:
    """``dot`` with operands transposed to (batch, free, contracting) / (batch, contracting, free).

    The result is unchanged: a dot's element [b.., i.., j..] is the sum over the contracted
    pairs of lhs x rhs, the dimension numbers only say where each index sits."""
    attrs = instr.attributes
    lb = parse_int_list(attrs.get("lhs_batch_dims", "{}"))
    rb = parse_int_list(attrs.get("rhs_batch_dims", "{}"))
    lc = parse_int_list(attrs.get("lhs_contracting_dims", "{}"))
    rc = parse_int_list(attrs.get("rhs_contracting_dims", "{}"))
    if len(instr.operands) != 2:
        raise Unsupported(f"dot {instr.name} has {len(instr.operands)} operands")
    lhs, rhs = (o.name for o in instr.operands)
    ls, rs = builder.shapes[lhs], builder.shapes[rhs]
    if not isinstance(ls, ArrayShape) or not isinstance(rs, ArrayShape):
        raise Unsupported(f"dot {instr.name} has a tuple operand")
    for side, shape, dims in (("lhs", ls, (*lb, *lc)), ("rhs", rs, (*rb, *rc))):
        if len(set(dims)) != len(dims) or not all(0 <= d < shape.rank for d in dims):
            raise InvalidHlo(
                f"dot {instr.name}: the {side} batch and contracting dimensions {list(dims)} are not "
                f"distinct dimensions of {shape} (rank {shape.rank})"
            )
    if len(lb) != len(rb) or len(lc) != len(rc):
        raise InvalidHlo(
            f"dot {instr.name}: {len(lb)} lhs and {len(rb)} rhs batch dimensions, "
            f"{len(lc)} lhs and {len(rc)} rhs contracting dimensions (they pair up one to one)"
        )
    lf = [d for d in range(ls.rank) if d not in (*lb, *lc)]
    rf = [d for d in range(rs.rank) if d not in (*rb, *rc)]
    lperm, rperm = [*lb, *lf, *lc], [*rb, *rc, *rf]
    new_lhs = _transposed(builder, lhs, ls, lperm, instr.name + "/lhs")
    new_rhs = _transposed(builder, rhs, rs, rperm, instr.name + "/rhs")
    nb, nc = len(lb), len(lc)
    canonical = dict(attrs)
    canonical.update(
        lhs_batch_dims=_int_list(range(nb)),
        rhs_batch_dims=_int_list(range(nb)),
        lhs_contracting_dims=_int_list(range(nb + len(lf), nb + len(lf) + nc)),
        rhs_contracting_dims=_int_list(range(nb, nb + nc)),
    )
    canonical = {k: v for k, v in canonical.items() if v != "{}"}
    return dataclasses.replace(
        instr, operands=(HloOperand(new_lhs), HloOperand(new_rhs)), attributes=canonical
    )


def convolution_as_dot(instr: HloInstruction) -> HloInstruction:
    """A convolution without spatial dimensions (``dim_labels=bf_io->bf``) as the ``dot`` it is.

    out[b, o] = sum_i lhs[.. b .. i ..] x rhs[.. i .. o ..]: lhs contracts its ``f``
    dimension with the kernel's ``i`` dimension. Any other convolution is left alone."""
    labels = instr.attributes.get("dim_labels", "")
    m = re.fullmatch(r"([bf]{2})_([io]{2})->bf", labels)
    other = set(instr.attributes) - {"dim_labels", "precision_config", "operand_precision"} - INERT_ATTRIBUTES
    if m is None or other or len(instr.operands) != 2:
        return instr
    attrs = {k: v for k, v in instr.attributes.items() if k != "dim_labels"}
    attrs["lhs_contracting_dims"] = _int_list([m[1].index("f")])
    attrs["rhs_contracting_dims"] = _int_list([m[2].index("i")])
    return dataclasses.replace(instr, opcode="dot", attributes=attrs)


_WINDOW_KEYS = frozenset({"size", "stride", "pad", "lhs_dilate", "rhs_dilate", "rhs_reversal"})


def parse_window(text: str) -> list[dict[str, int | tuple[int, int]]] | None:
    """A convolution's ``window={size=2x3 pad=1_1x0_0 lhs_dilate=2x1 ...}``, one dict per
    spatial dimension (defaults filled in), or ``None`` if it holds a field not known here.

    >>> parse_window("{size=2 lhs_dilate=2}")
    [{'size': 2, 'stride': 1, 'pad': (0, 0), 'lhs_dilate': 2, 'rhs_dilate': 1, 'rhs_reversal': 0}]
    >>> parse_window("{size=3x3 pad=1_1x0_0}")[1]["pad"]
    (0, 0)
    >>> parse_window("{size=2 lhs_dilate=2 frobnicate=1}") is None
    True
    """
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        return None
    fields: dict[str, list[str]] = {}
    for item in body[1:-1].split():
        key, _, value = item.partition("=")
        if key not in _WINDOW_KEYS or not value:
            return None
        fields[key] = value.split("x")
    sizes = fields.get("size")
    if sizes is None or any(len(v) != len(sizes) for v in fields.values()):
        return None
    dims: list[dict[str, int | tuple[int, int]]] = []
    try:
        for d in range(len(sizes)):
            low, _, high = fields.get("pad", ["0_0"] * len(sizes))[d].partition("_")
            dims.append(
                {
                    "size": int(sizes[d]),
                    "stride": int(fields.get("stride", ["1"] * len(sizes))[d]),
                    "pad": (int(low), int(high)),
                    "lhs_dilate": int(fields.get("lhs_dilate", ["1"] * len(sizes))[d]),
                    "rhs_dilate": int(fields.get("rhs_dilate", ["1"] * len(sizes))[d]),
                    "rhs_reversal": int(fields.get("rhs_reversal", ["0"] * len(sizes))[d]),
                }
            )
    except ValueError:
        return None
    return dims


def window_terms(window: Mapping[str, Any], lhs_size: int, out_size: int) -> set[tuple[int, int, int]]:
    """The (output position, kernel position, input position) triples that contribute to a
    convolution along one spatial dimension, by XLA's definition: the input dilated by
    ``lhs_dilate`` (holes between elements) and padded, a window of ``size`` positions
    (``rhs_dilate`` apart, every ``stride``) over it; a position in a hole or in the padding
    contributes no term (XLA's reference evaluator skips it).

    A base-dilated window that picks input ``s`` with kernel ``s`` for output ``s``:

    >>> sorted(window_terms({"size": 2, "stride": 1, "pad": (0, 0), "lhs_dilate": 2,
    ...                      "rhs_dilate": 1, "rhs_reversal": 0}, lhs_size=2, out_size=2))
    [(0, 0, 0), (1, 1, 1)]
    """
    size, stride, (low, _) = window["size"], window["stride"], window["pad"]
    dilate, spread, reverse = window["lhs_dilate"], window["rhs_dilate"], window["rhs_reversal"]
    terms = set()
    for out in range(out_size):
        for k in range(size):
            u = out * stride - low + k * spread
            if u % dilate == 0 and 0 <= u // dilate < lhs_size:
                terms.add((out, size - 1 - k if reverse else k, u // dilate))
    return terms


def base_dilated_convolution_as_dot(builder: Builder, instr: HloInstruction) -> HloInstruction:
    """A convolution with one spatial dimension whose window pairs output ``s`` with input
    ``s`` and kernel ``s`` alone (what XLA writes for a batched dot: ``window={size=B
    lhs_dilate=B}, dim_labels=0bf_0oi->0bf``) as that batched dot, the spatial dimension
    its batch: out[s, b, o] = sum_i lhs[s, b, i] x rhs[s, o, i]. The same products as the
    dot (the dilation holes contribute none), so the same sum. Any other convolution is
    left alone."""
    labels = re.fullmatch(r"([0bf]{3})_([0oi]{3})->([0bf]{3})", instr.attributes.get("dim_labels", ""))
    other = (
        set(instr.attributes)
        - {"dim_labels", "window", "precision_config", "operand_precision"}
        - INERT_ATTRIBUTES
    )
    window = parse_window(instr.attributes.get("window", ""))
    if labels is None or other or window is None or len(window) != 1 or len(instr.operands) != 2:
        return instr
    lhs_labels, rhs_labels, out_labels = labels.groups()
    if sorted(lhs_labels) != sorted("0bf") or sorted(rhs_labels) != sorted("0oi") or out_labels != "0bf":
        return instr
    lhs, rhs = (builder.shapes[o.name] for o in instr.operands)
    if not (
        isinstance(lhs, ArrayShape) and isinstance(rhs, ArrayShape) and isinstance(instr.shape, ArrayShape)
    ):
        return instr
    dims = [
        lhs.dimensions[lhs_labels.index("0")],
        rhs.dimensions[rhs_labels.index("0")],
        instr.shape.dimensions[0],
    ]
    if not all(isinstance(d, int) for d in dims) or window[0]["size"] != dims[1]:
        return instr
    batch = dims[0]
    if dims != [batch] * 3 or window_terms(window[0], batch, batch) != {(s, s, s) for s in range(batch)}:
        return instr
    attrs = {k: v for k, v in instr.attributes.items() if k not in ("dim_labels", "window")}
    attrs.update(
        lhs_batch_dims=_int_list([lhs_labels.index("0")]),
        lhs_contracting_dims=_int_list([lhs_labels.index("f")]),
        rhs_batch_dims=_int_list([rhs_labels.index("0")]),
        rhs_contracting_dims=_int_list([rhs_labels.index("i")]),
    )
    return dataclasses.replace(instr, opcode="dot", attributes=attrs)


def canonical_reduce(builder: Builder, instr: HloInstruction) -> HloInstruction:
    """``reduce`` of arrays transposed to (kept dims, reduced dims): the same result."""
    dims = instr.dimensions or ()
    n = len(instr.operands) // 2
    if n == 0 or len(instr.operands) != 2 * n:
        raise Unsupported(f"reduce {instr.name} has {len(instr.operands)} operands")
    operands = list(instr.operands)
    for k in range(n):
        s = builder.shapes[operands[k].name]
        if not isinstance(s, ArrayShape):
            raise Unsupported(f"reduce {instr.name} has a tuple operand")
        if len(set(dims)) != len(dims) or not all(0 <= d < s.rank for d in dims):
            raise InvalidHlo(
                f"reduce {instr.name}: dimensions={{{','.join(map(str, dims))}}} are not distinct "
                f"dimensions of its operand {s} (rank {s.rank})"
            )
        kept = [d for d in range(s.rank) if d not in dims]
        operands[k] = HloOperand(
            _transposed(builder, operands[k].name, s, [*kept, *dims], f"{instr.name}/in{k}")
        )
    first = builder.shapes[operands[0].name]
    rank = first.rank if isinstance(first, ArrayShape) else 0
    new_dims = tuple(range(rank - len(dims), rank))
    attrs = dict(instr.attributes, dimensions=_int_list(new_dims))
    return dataclasses.replace(instr, operands=tuple(operands), dimensions=new_dims, attributes=attrs)


def _transposed(builder: Builder, name: str, shape: ArrayShape, perm: Sequence[int], hint: str) -> str:
    if list(perm) == list(range(shape.rank)):
        return name
    dims = [shape.dimensions[p] for p in perm]
    text = f"{shape.element_type.text}[{','.join(map(str, dims))}]{{{','.join(str(d) for d in reversed(range(len(dims))))}}}"
    result = parse_shape(text)
    return builder.emit(
        HloInstruction(
            builder.fresh(hint),
            result,
            "transpose",
            (HloOperand(name),),
            {"dimensions": _int_list(perm)},
            dimensions=tuple(perm),
        )
    )


def _int_list(values: Iterable[int]) -> str:
    return "{" + ",".join(map(str, values)) + "}"
