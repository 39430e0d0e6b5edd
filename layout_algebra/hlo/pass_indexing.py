"""Pass validation's simple forms of ``gather`` and ``scatter``: the movement ops around one
gather (scatter) that takes whole slices (windows) at the rows of an index matrix, from the
operand transposed so that its indexed dimensions come first. XLA's ``gather_simplifier``,
``scatter_simplifier`` and ``batched_gather_scatter_normalizer`` write these forms; read on
both sides of a pair, the earlier op and the later one have the same inner op.

Tested against brute-force gathers and scatters written from XLA's operation semantics
(``tests/hlo/test_pass_forms.py``).

>>> from layout_algebra.hlo.parser import parse_module
>>> from layout_algebra.hlo.pass_canonical import Builder
>>> m = parse_module('''HloModule m
... ENTRY e {
...   t = f32[10,8]{1,0} parameter(0)
...   i = s32[4,6]{1,0} parameter(1)
...   ROOT g = f32[4,6,8]{2,1,0} gather(t, i), offset_dims={2}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,8}
... }''')
>>> builder = Builder()
>>> for instr in m.entry.instructions[:2]:
...     _ = builder.emit(instr)
>>> [(i.opcode, str(i.shape)) for i in gather_simple_form(builder, m.entry.instructions[2])]
[('reshape', 's32[4,6,1]{2,1,0}'), ('reshape', 's32[24,1]{1,0}'), ('gather', 'f32[24,1,8]{2,1,0}'), ('reshape', 'f32[4,6,8]{2,1,0}'), ('transpose', 'f32[4,6,8]{2,1,0}')]
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from layout_algebra.hlo.ir import HloInstruction, HloOperand
from layout_algebra.hlo.opcodes import INERT_ATTRIBUTES
from layout_algebra.hlo.pass_canonical import Builder
from layout_algebra.model.shapes import ArrayShape
from layout_algebra.model.syntax import parse_shape

__all__ = ["Emitter", "braced", "default_shape", "gather_simple_form", "int_list", "scatter_simple_form"]


def default_shape(element: str, dims: Sequence[int]) -> ArrayShape:
    layout = ",".join(str(d) for d in reversed(range(len(dims))))
    text = f"{element}[{','.join(map(str, dims))}]" + (f"{{{layout}}}" if dims else "")
    shape = parse_shape(text)
    assert isinstance(shape, ArrayShape)
    return shape


# ------------------------------------------------------------------------ gather
_GATHER_KEYS = frozenset(
    {
        "offset_dims",
        "collapsed_slice_dims",
        "start_index_map",
        "operand_batching_dims",
        "start_indices_batching_dims",
        "index_vector_dim",
        "slice_sizes",
        "indices_are_sorted",
    }
)


def int_list(text: str | None) -> list[int] | None:
    if text is None:
        return []
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        return None
    try:
        return [int(v) for v in body[1:-1].split(",") if v.strip()]
    except ValueError:
        return None


def braced(values: Sequence[int]) -> str:
    return "{" + ",".join(map(str, values)) + "}"


class Emitter:
    """Movement instructions under fresh names, recorded in order."""

    def __init__(self, builder: Builder, hint: str) -> None:
        self.builder, self.hint = builder, hint
        self.emitted: list[HloInstruction] = []

    def add(self, instr: HloInstruction) -> str:
        self.emitted.append(instr)
        self.builder.shapes[instr.name] = instr.shape  # later forms read the shapes
        return instr.name

    def name(self, what: str) -> str:
        return self.builder.fresh(f"{self.hint}/{what}")

    def transpose(self, source: str, shape: ArrayShape, perm: Sequence[int], name: str | None = None) -> str:
        if list(perm) == list(range(shape.rank)) and name is None:
            return source
        dims = [shape.dimensions[p] for p in perm]
        out = default_shape(shape.element_type.text, dims)
        return self.add(
            HloInstruction(
                name or self.name("transpose"),
                out,
                "transpose",
                (HloOperand(source),),
                {"dimensions": braced(perm)},
                dimensions=tuple(perm),
            )
        )

    def reshape(self, source: str, element: str, dims: Sequence[int]) -> str:
        return self.add(
            HloInstruction(
                self.name("reshape"), default_shape(element, dims), "reshape", (HloOperand(source),)
            )
        )


def gather_simple_form(builder: Builder, instr: HloInstruction) -> list[HloInstruction] | None:
    """A ``gather`` as movement ops around the one gather of its *simple form*, or ``None``:
    the start indices as a matrix [N, K] (index vector last, batch dimensions flattened, an
    ``iota`` column per operand batching dimension), the operand transposed so that the
    indexed dimensions come first in start_index_map order, the inner gather taking whole
    slices (``offset_dims={1..R}``, no collapsed dimension, ``start_index_map={0..K-1}``,
    ``index_vector_dim=1``), then its result transposed back, reshaped (collapsed dimensions
    dropped, N split into the batch dimensions) and transposed to the output's order.

    XLA's ``gather_simplifier`` writes this form, and ``batched_gather_scatter_normalizer``
    the iota columns: both sides of such a pair have the same inner gather. Each element of
    the result reads the same operand element: XLA clamps each start index to
    [0, operand size - slice size] per operand dimension, which the transpose keeps."""
    if len(instr.operands) != 2 or set(instr.attributes) - _GATHER_KEYS - INERT_ATTRIBUTES:
        return None
    a_name, i_name = (o.name for o in instr.operands)
    a, idx, out = builder.shapes.get(a_name), builder.shapes.get(i_name), instr.shape
    if not (isinstance(a, ArrayShape) and isinstance(idx, ArrayShape) and isinstance(out, ArrayShape)):
        return None
    attrs = instr.attributes
    offset, collapsed, sim = (
        int_list(attrs.get(k)) for k in ("offset_dims", "collapsed_slice_dims", "start_index_map")
    )
    ob, sb = int_list(attrs.get("operand_batching_dims")), int_list(attrs.get("start_indices_batching_dims"))
    sizes = int_list(attrs.get("slice_sizes"))
    ivd_list = int_list("{" + attrs.get("index_vector_dim", "") + "}")
    if None in (offset, collapsed, sim, ob, sb, sizes) or not ivd_list or len(ivd_list) != 1:
        return None
    assert offset is not None and collapsed is not None and sim is not None and ob is not None
    assert sb is not None and sizes is not None
    ivd, rank, irank = ivd_list[0], a.rank, idx.rank
    if not all(isinstance(d, int) for d in (*a.dimensions, *idx.dimensions, *out.dimensions)):
        return None
    if (
        len(sizes) != rank
        or 0 in sizes
        or not 0 <= ivd <= irank
        or len(ob) != len(sb)
        or len(set([*collapsed, *ob])) != len(collapsed) + len(ob)
        or any(not 0 <= d < rank or sizes[d] != 1 for d in (*collapsed, *ob))
        or len(set(sim)) != len(sim)
        or any(not 0 <= d < rank for d in sim)
        or set(sim) & set(ob)
        or offset != sorted(offset)
    ):
        return None
    k = idx.dimensions[ivd] if ivd < irank else 1
    if k != len(sim):
        return None
    element = idx.element_type.text
    e = Emitter(builder, instr.name)
    # 1. the index vector last
    if ivd == irank:
        matrix = e.reshape(i_name, element, [*idx.dimensions, 1])
    else:
        order = [d for d in range(irank) if d != ivd] + [ivd]
        matrix = e.transpose(i_name, idx, order)
    batch_positions = [d for d in range(irank) if d != ivd]
    batch = [idx.dimensions[d] for d in batch_positions]
    if any(d not in batch_positions for d in sb):
        return None
    # 2. an iota column per operand batching dimension, first (as the normalizer writes it)
    if ob:
        columns = [
            e.add(
                HloInstruction(
                    e.name("iota"),
                    default_shape(element, [*batch, 1]),
                    "iota",
                    (),
                    {"iota_dimension": str(batch_positions.index(d))},
                )
            )
            for d in sb
        ]
        width = len(ob) + k
        matrix = e.add(
            HloInstruction(
                e.name("concatenate"),
                default_shape(element, [*batch, width]),
                "concatenate",
                tuple(HloOperand(c) for c in (*columns, matrix)),
                {"dimensions": braced([len(batch)])},
                dimensions=(len(batch),),
            )
        )
    starts = [*ob, *sim]
    dropped = sorted([*collapsed, *ob])
    n = math.prod(batch)
    flat = e.reshape(matrix, element, [n, len(starts)])
    # 3. the operand with the indexed dimensions first
    perm = [*starts, *(d for d in range(rank) if d not in starts)]
    operand = e.transpose(a_name, a, perm)
    slice2 = [sizes[p] for p in perm]
    inner_attrs = {
        "offset_dims": braced(range(1, rank + 1)),
        "collapsed_slice_dims": "{}",
        "start_index_map": braced(range(len(starts))),
        "index_vector_dim": "1",
        "slice_sizes": braced(slice2),
    }
    if "indices_are_sorted" in attrs:
        inner_attrs["indices_are_sorted"] = attrs["indices_are_sorted"]
    inner_shape = default_shape(out.element_type.text, [n, *slice2])
    inner = e.add(
        HloInstruction(
            e.name("gather"), inner_shape, "gather", (HloOperand(operand), HloOperand(flat)), inner_attrs
        )
    )
    # 4. back to the operand's dimension order, collapsed dimensions dropped, batch restored
    back = e.transpose(inner, inner_shape, [0, *(1 + perm.index(d) for d in range(rank))])
    kept = [sizes[d] for d in range(rank) if d not in dropped]
    if len(kept) != len(offset) or len(batch) + len(offset) != out.rank:
        return None
    shaped = e.reshape(back, out.element_type.text, [*batch, *kept])
    out_perm, b_next, o_next = [], 0, len(batch)
    for d in range(out.rank):
        if d in offset:
            out_perm.append(o_next)
            o_next += 1
        else:
            out_perm.append(b_next)
            b_next += 1
    result_dims = [[*batch, *kept][p] for p in out_perm]
    if result_dims != list(out.dimensions):
        return None
    shaped_shape = builder.shapes[shaped]
    assert isinstance(shaped_shape, ArrayShape)
    e.transpose(shaped, shaped_shape, out_perm, name=instr.name)
    last = e.emitted[-1]
    e.emitted[-1] = dataclasses.replace(last, shape=out)
    builder.shapes[instr.name] = out
    return e.emitted


# ------------------------------------------------------------------------ scatter
_SCATTER_KEYS = frozenset(
    {
        "update_window_dims",
        "inserted_window_dims",
        "scatter_dims_to_operand_dims",
        "index_vector_dim",
        "indices_are_sorted",
        "unique_indices",
        "to_apply",
        "input_batching_dims",
        "scatter_indices_batching_dims",
    }
)


def scatter_simple_form(builder: Builder, instr: HloInstruction) -> list[HloInstruction] | None:
    """A one-operand ``scatter`` as movement ops around the scatter of its *simple form*, or
    ``None``: the operand transposed so that the indexed dimensions come first in
    scatter_dims_to_operand_dims order, the indices as a matrix [N, K] (index vector last,
    scatter dimensions flattened), the updates as [N, whole windows] (inserted dimensions as
    size 1, in the transposed operand's order), the inner scatter with
    ``update_window_dims={1..R}``, no inserted dimension, ``scatter_dims_to_operand_dims={0..K-1}``,
    ``index_vector_dim=1``, and its result transposed back.

    XLA's ``scatter_simplifier`` writes this form. Every update element goes to the same
    operand element (through the transpose) and is combined by the same computation, the
    updates in the same row-major order."""
    if len(instr.operands) != 3 or set(instr.attributes) - _SCATTER_KEYS - INERT_ATTRIBUTES:
        return None
    o_name, i_name, u_name = (o.name for o in instr.operands)
    a, idx, upd = (builder.shapes.get(n) for n in (o_name, i_name, u_name))
    out = instr.shape
    if not all(isinstance(s, ArrayShape) for s in (a, idx, upd, out)):
        return None
    assert isinstance(a, ArrayShape) and isinstance(idx, ArrayShape) and isinstance(upd, ArrayShape)
    assert isinstance(out, ArrayShape)
    attrs = instr.attributes
    uwd, iwd, sdod = (
        int_list(attrs.get(k))
        for k in ("update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims")
    )
    ivd_list = int_list("{" + attrs.get("index_vector_dim", "") + "}")
    ib, sib = int_list(attrs.get("input_batching_dims")), int_list(attrs.get("scatter_indices_batching_dims"))
    if uwd is None or iwd is None or sdod is None or ib is None or sib is None:
        return None
    if not ivd_list or len(ivd_list) != 1 or len(ib) != len(sib):
        return None
    ivd, rank, irank = ivd_list[0], a.rank, idx.rank
    dims_all = (*a.dimensions, *idx.dimensions, *upd.dimensions, *out.dimensions)
    if not all(isinstance(d, int) for d in dims_all) or list(out.dimensions) != list(a.dimensions):
        return None
    if (
        not 0 <= ivd <= irank
        or len(set(sdod)) != len(sdod)
        or any(not 0 <= d < rank for d in (*sdod, *iwd, *ib))
        or len(set([*iwd, *ib])) != len(iwd) + len(ib)
        or set(sdod) & set(ib)
        or uwd != sorted(set(uwd))
        or any(not 0 <= d < upd.rank for d in uwd)
        or len(uwd) + len(iwd) + len(ib) != rank
    ):
        return None
    k = idx.dimensions[ivd] if ivd < irank else 1
    if k != len(sdod):
        return None
    batch_positions = [d for d in range(irank) if d != ivd]
    batch = [idx.dimensions[d] for d in batch_positions]
    scatter_dims = [d for d in range(upd.rank) if d not in uwd]
    if [upd.dimensions[d] for d in scatter_dims] != batch:
        return None
    if any(d not in batch_positions for d in sib):
        return None
    if any(a.dimensions[o] != idx.dimensions[i] for o, i in zip(ib, sib, strict=True)):
        return None
    window_operand_dims = [d for d in range(rank) if d not in iwd and d not in ib]
    window = [1] * rank
    for d, u in zip(window_operand_dims, uwd, strict=True):
        window[d] = upd.dimensions[u]
    if any(window[d] > a.dimensions[d] for d in range(rank)):
        return None
    element = idx.element_type.text
    e = Emitter(builder, instr.name)
    if ivd == irank:
        matrix = e.reshape(i_name, element, [*idx.dimensions, 1])
    else:
        matrix = e.transpose(i_name, idx, [*batch_positions, ivd])
    if ib:  # an iota column per batching dimension, first (as the normalizer writes it)
        columns = [
            e.add(
                HloInstruction(
                    e.name("iota"),
                    default_shape(element, [*batch, 1]),
                    "iota",
                    (),
                    {"iota_dimension": str(batch_positions.index(d))},
                )
            )
            for d in sib
        ]
        matrix = e.add(
            HloInstruction(
                e.name("concatenate"),
                default_shape(element, [*batch, len(ib) + k]),
                "concatenate",
                tuple(HloOperand(c) for c in (*columns, matrix)),
                {"dimensions": braced([len(batch)])},
                dimensions=(len(batch),),
            )
        )
    starts = [*ib, *sdod]
    n = math.prod(batch)
    flat = e.reshape(matrix, element, [n, len(starts)])
    perm = [*starts, *(d for d in range(rank) if d not in starts)]
    operand = e.transpose(o_name, a, perm)
    # updates: scatter dimensions first, then the window in the operand's order, then permuted
    ordered = e.transpose(u_name, upd, [*scatter_dims, *uwd])
    u_element = upd.element_type.text
    whole = e.reshape(ordered, u_element, [n, *window])
    whole_shape = builder.shapes[whole]
    assert isinstance(whole_shape, ArrayShape)
    updates = e.transpose(whole, whole_shape, [0, *(1 + p for p in perm)])
    inner_attrs = {
        "update_window_dims": braced(range(1, rank + 1)),
        "inserted_window_dims": "{}",
        "scatter_dims_to_operand_dims": braced(range(len(starts))),
        "index_vector_dim": "1",
    }
    for key in ("indices_are_sorted", "unique_indices", "to_apply"):
        if key in attrs:
            inner_attrs[key] = attrs[key]
    inner_shape = default_shape(out.element_type.text, [a.dimensions[p] for p in perm])
    inner = e.add(
        HloInstruction(
            e.name("scatter"),
            inner_shape,
            "scatter",
            (HloOperand(operand), HloOperand(flat), HloOperand(updates)),
            inner_attrs,
            to_apply=instr.to_apply,
        )
    )
    inverse = [perm.index(d) for d in range(rank)]
    e.transpose(inner, inner_shape, inverse, name=instr.name)
    e.emitted[-1] = dataclasses.replace(e.emitted[-1], shape=out)
    builder.shapes[instr.name] = out
    return e.emitted
