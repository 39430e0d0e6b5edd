"""A reference interpreter of whole HLO modules, for deciding whether a mutant changes a module's meaning.

The package's NumPy executor (``layout_algebra.hlo.execute``) runs movement and element-wise
ops; the pass-dump corpus also has ``while``, ``conditional``, ``sort``, ``gather``, ``reduce``,
``reduce-window``, ``dot`` and ``convolution``. This interpreter reuses the executor's op
functions for the ops it has (each an oracle by the op's own semantics) and adds the others
here, written from the XLA operation semantics, independently of the verifier:

- ``dot``/``convolution``: ``numpy.einsum`` over the dimension numbers (float64 or int64
  accumulation), the convolution one kernel position at a time;
- ``reduce``/``reduce-window``: folds by the reducer computation, run on whole arrays;
- ``gather``: the index arithmetic of the XLA semantics (clamped starts), vectorized;
- ``sort``: every pair compared by the comparator computation, each element's position
  counted (stable), so any comparator is run as written;
- ``while``/``conditional``: the loop and the branch, computation by computation.

Values are logical (an :class:`ArrayValue`: data and a defined mask); a ``bitcast`` packs its
operand by its layout and reads the bytes back by the result's (padding reads as zeros). An
entry parameter whose layout is not the entry computation layout's is read from the bytes the
caller wrote in the entry computation layout's.

``elided``: a constant the dump printed as ``{...}`` is the same in both modules compared
(its text is): it gets one random value, fixed by its name, in both runs.

``opaque``: the names of entry instructions the interpreter may not run (a ``custom-call``,
``scatter``...) but that are the same in both modules compared, and upstream of every difference:
each gets the same random value in both runs (see :func:`shared_opaque`).

>>> text = '''HloModule m
... r {
...   a = f32[] parameter(0)
...   b = f32[] parameter(1)
...   ROOT s = f32[] add(a, b)
... }
... ENTRY e {
...   p = f32[2,3]{1,0} parameter(0)
...   z = f32[] constant(0)
...   ROOT t = f32[2]{0} reduce(p, z), dimensions={1}, to_apply=r
... }'''
>>> import numpy as np
>>> from layout_algebra.hlo import parse_module
>>> (out,) = run_reference(parse_module(text), [np.arange(6, dtype=np.float32).reshape(2, 3)])
>>> out.data.tolist()
[3.0, 12.0]
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from layout_algebra.hlo.execute_ops import (
    MOVEMENT_SEMANTICS,
    ArrayValue,
    UnsupportedOpError,
    constant_array,
    elementwise,
    iota_array,
)
from layout_algebra.hlo.ir import HloComputation, HloInstruction, HloModule
from layout_algebra.hlo.opcodes import EXECUTED_ELEMENTWISE_OPCODES
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.model.shapes import ArrayShape, TupleShape
from layout_algebra.packing.formats import numpy_dtype
from layout_algebra.packing.numpy_eval import pack, unpack

MAX_TRIPS = 10_000


class NotRun(Exception):
    """The reference interpreter does not run this module (the op named)."""


def ints(text: str | None) -> tuple[int, ...]:
    """``{1,0}`` -> ``(1, 0)``; ``None`` or ``{}`` -> ``()``."""
    return tuple(int(x) for x in re.findall(r"-?\d+", text or ""))


def callee(ins: HloInstruction, key: str) -> str:
    return ins.attributes[key].strip().lstrip("%")


def _as(value: ArrayValue, dims: tuple[int, ...]) -> ArrayValue:
    """``value`` broadcast to ``dims`` (a scalar computation run on whole arrays)."""
    if value.data.shape == dims:
        return value
    shape = dataclasses.replace(value.shape, dimensions=dims, dynamic_dimensions=(), layout=None)
    return ArrayValue(shape, np.broadcast_to(value.data, dims), np.broadcast_to(value.defined, dims))


def _wide(data: np.ndarray) -> np.ndarray:
    kind = data.dtype.kind
    if kind in "iub":
        return data.astype(np.int64)
    return data.astype(np.float64)


def _cast(data: np.ndarray, shape: ArrayShape) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(data).astype(numpy_dtype(shape.element_type))


class Reference:
    """Runs one module; ``opaque`` maps entry instruction names to shared values."""

    def __init__(
        self,
        module: HloModule,
        opaque: dict[str, Any] | None = None,
        elided: dict[tuple[str, str], Any] | None = None,
    ) -> None:
        self.module = module
        self.opaque = opaque if opaque is not None else {}
        self.elided = elided
        self._operands: dict[str, dict[str, tuple[str, ...]]] = {}
        self._shapes: dict[tuple[int, tuple[int, ...] | None], ArrayShape] = {}

    # ------------------------------------------------------------------ driver
    def computation(
        self, comp: HloComputation, args: Sequence[Any], dims: tuple[int, ...] | None = None
    ) -> Any:
        """Run ``comp`` on ``args``; ``dims``: run a scalar computation on arrays of these dims."""
        if comp.name not in self._operands:
            self._operands[comp.name] = {i.name: i.operand_names for i in comp.instructions}
        operands = self._operands[comp.name]
        values: dict[str, Any] = {}
        stack: list[tuple[str, bool]] = [(comp.root.name, False)]
        while stack:
            name, ready = stack.pop()
            if name in values:
                continue
            if not ready:
                stack.append((name, True))
                stack.extend((o, False) for o in operands[name] if o not in values)
                continue
            ins = comp.instruction(name)
            values[name] = self.instruction(comp, ins, [values[o] for o in operands[name]], args, dims)
        return values[comp.root.name]

    def shape(self, ins: HloInstruction, dims: tuple[int, ...] | None) -> ArrayShape:
        key = (id(ins), dims)
        if key not in self._shapes:
            self._shapes[key] = self._shape(ins, dims)
        return self._shapes[key]

    def _shape(self, ins: HloInstruction, dims: tuple[int, ...] | None) -> ArrayShape:
        shape = ins.shape
        if not isinstance(shape, ArrayShape) or not all(isinstance(d, int) for d in shape.dimensions):
            raise NotRun(f"{ins.name}: shape {shape}")
        if dims is not None and shape.rank == 0:
            return dataclasses.replace(shape, dimensions=dims, dynamic_dimensions=(), layout=None)
        return shape

    def instruction(
        self,
        comp: HloComputation,
        ins: HloInstruction,
        ops: list[Any],
        args: Sequence[Any],
        dims: tuple | None,
    ) -> Any:
        op = ins.opcode
        if comp is self.module.entry and ins.name in self.opaque:
            return self.opaque[ins.name]
        if op == "parameter":
            return args[ins.parameter_number]
        if op == "tuple":
            return tuple(ops)
        if op == "get-tuple-element":
            return ops[0][ins.index]
        if op in ("fusion", "call"):
            called = ins.calls or ((ins.to_apply,) if ins.to_apply else ())
            return self.computation(self.module.computation(called[0]), ops)
        if op == "while":
            return self.while_loop(ins, ops[0])
        if op == "conditional":
            return self.conditional(ins, ops)
        if op == "sort":
            return self.sort(ins, ops)
        if op == "custom-call" and ins.attributes.get("custom_call_target", "").strip('"') == "TopK":
            return self.top_k(ins, ops)
        if op == "topk":
            return self.topk_op(ins, ops)
        if op == "reduce" and isinstance(ins.shape, TupleShape):
            return self.reduce(ins, ops)
        if isinstance(ins.shape, TupleShape):
            raise NotRun(f"{op} {ins.name} with a tuple result")
        shape = self.shape(ins, dims)
        if op == "constant" and "..." in (ins.literal or "") and self.elided is not None:
            key = (comp.name, ins.name)
            if key not in self.elided:  # a random value fixed by the constant's name: the same in every run
                rng = np.random.default_rng(zlib.crc32(f"{comp.name}/{ins.name}".encode()))
                data = (
                    rng.normal(0.0, 1.0, tuple(shape.dimensions))
                    if shape.element_type.text[0] in "fb"
                    else rng.integers(0, 4, tuple(shape.dimensions))
                )
                self.elided[key] = data.astype(numpy_dtype(shape.element_type))
            data = self.elided[key]
            return ArrayValue(shape, data, np.ones(data.shape, bool))
        if op == "constant":
            data = constant_array(ins, ins.shape)
            if dims is not None and data.shape == ():
                data = np.broadcast_to(data, dims)
            return ArrayValue(shape, data, np.ones(data.shape, bool))
        if op == "iota":
            data = iota_array(ins, shape)
            return ArrayValue(shape, data, np.ones(data.shape, bool))
        if op == "bitcast":
            return self.bitcast(ops[0], shape)
        if op == "compare" and "TOTALORDER" in ins.attributes.get("type", ""):
            return _total_order_compare(ins, shape, [_as(o, tuple(shape.dimensions)) for o in ops])
        if op == "broadcast" and dims is not None and not ins.shape.dimensions:
            return _as(ops[0], dims)  # a scalar "broadcast" to a scalar, in a computation run on arrays
        if op in MOVEMENT_SEMANTICS:
            if dims is not None and op == "bitcast-convert":
                ops = [_as(o, dims) for o in ops]
            data, defined = MOVEMENT_SEMANTICS[op](ins, shape, ops)
            return ArrayValue(shape, data, defined)
        if op in EXECUTED_ELEMENTWISE_OPCODES or op in ("round-nearest-even", "power", "atan2"):
            target = tuple(shape.dimensions)
            ops = [_as(o, target) if not (op == "clamp" and o.data.shape == ()) else o for o in ops]
            if op == "round-nearest-even":
                data = _cast(np.rint(ops[0].data.astype(np.float64)), shape)
                return ArrayValue(shape, data, ops[0].defined)
            if op in ("power", "atan2"):
                fn = np.power if op == "power" else np.arctan2
                with np.errstate(all="ignore"):
                    data = _cast(fn(_wide(ops[0].data), _wide(ops[1].data)), shape)
                return ArrayValue(shape, data, ops[0].defined & ops[1].defined)
            data, defined = elementwise(ins, shape, ops)
            return ArrayValue(shape, data, defined)
        if op == "reduce":
            (out,) = self.reduce(ins, ops)
            return out
        if op == "dot":
            return self.dot(ins, shape, ops)
        if op == "convolution":
            return self.convolution(ins, shape, ops)
        if op == "gather":
            return self.gather(ins, shape, ops)
        if op == "reduce-window":
            return self.reduce_window(ins, shape, ops)
        if op == "scatter":
            return self.scatter(ins, shape, ops)
        raise NotRun(f"op {op} ({ins.name})")

    # ------------------------------------------------------------------ layouts
    def bitcast(self, a: ArrayValue, shape: ArrayShape) -> ArrayValue:
        space = (a.shape.effective_layout.memory_space, shape.effective_layout.memory_space)
        if space[0] != space[1]:
            dims = tuple(shape.dimensions)
            return ArrayValue(shape, np.zeros(dims, numpy_dtype(shape.element_type)), np.zeros(dims, bool))
        return reread(a, shape)

    # ------------------------------------------------------------------ control flow
    def while_loop(self, ins: HloInstruction, state: Any) -> Any:
        cond = self.module.computation(callee(ins, "condition"))
        body = self.module.computation(callee(ins, "body"))
        for _ in range(MAX_TRIPS):
            go = self.computation(cond, [state])
            if not bool(go.data):
                return state
            state = self.computation(body, [state])
        raise NotRun(f"while {ins.name} runs over {MAX_TRIPS} trips")

    def conditional(self, ins: HloInstruction, ops: list[Any]) -> Any:
        selector = ops[0]
        if "branch_computations" in ins.attributes:
            branches = [
                b.strip().lstrip("%") for b in ins.attributes["branch_computations"].strip("{}").split(",")
            ]
            k = int(selector.data)
            k = k if 0 <= k < len(branches) else len(branches) - 1
        else:
            branches = [callee(ins, "true_computation"), callee(ins, "false_computation")]
            k = 0 if bool(selector.data) else 1
        return self.computation(self.module.computation(branches[k]), [ops[1 + k]])

    # ------------------------------------------------------------------ reductions
    def fold(self, region: HloComputation, acc: list[ArrayValue], xs: list[ArrayValue]) -> list[ArrayValue]:
        dims = tuple(acc[0].data.shape)
        out = self.computation(region, [*acc, *xs], dims)
        return list(out) if isinstance(out, tuple) else [out]

    def reduce(self, ins: HloInstruction, ops: list[ArrayValue]) -> tuple[ArrayValue, ...]:
        n = len(ops) // 2
        inputs, inits = ops[:n], ops[n:]
        axes = ins.dimensions or ()
        rank = inputs[0].data.ndim
        keep = [d for d in range(rank) if d not in axes]
        moved = [x.data.transpose(*keep, *axes) for x in inputs]
        defined = [x.defined.transpose(*keep, *axes) for x in inputs]
        kept = tuple(inputs[0].data.shape[d] for d in keep)
        count = math.prod(inputs[0].data.shape[d] for d in axes)
        moved = [m.reshape(*kept, count) for m in moved]
        defined = [m.reshape(*kept, count) for m in defined]
        region = self.module.computation(ins.to_apply)
        ufunc = _binary_reducer(region)
        if n == 1 and ufunc is not None:  # one op: NumPy reduces the whole axis, then folds in the init
            x = moved[0]
            with np.errstate(all="ignore"):
                folded = ufunc(ufunc.reduce(x, axis=-1) if count else x[..., :0].sum(-1), inits[0].data)
            if not count:
                folded = np.broadcast_to(inits[0].data, kept)
            shape = ins.shape.elements[0] if isinstance(ins.shape, TupleShape) else ins.shape
            done = defined[0].all(axis=-1) & inits[0].defined
            return (ArrayValue(shape, _cast(folded, shape), np.asarray(done)),)
        acc = [_as(ArrayValue(i.shape, i.data, i.defined), kept) for i in inits]
        acc = [ArrayValue(a.shape, a.data.copy(), a.defined.copy()) for a in acc]
        shapes_kept = [
            dataclasses.replace(inputs[k].shape, dimensions=kept, dynamic_dimensions=(), layout=None)
            for k in range(n)
        ]
        for r in range(count):
            xs = [ArrayValue(shapes_kept[k], moved[k][..., r], defined[k][..., r]) for k in range(n)]
            acc = self.fold(region, acc, xs)
        shapes = ins.shape.elements if isinstance(ins.shape, TupleShape) else (ins.shape,)
        return tuple(
            ArrayValue(s, _cast(a.data, s), np.asarray(a.defined)) for s, a in zip(shapes, acc, strict=True)
        )

    def reduce_window(self, ins: HloInstruction, shape: ArrayShape, ops: list[ArrayValue]) -> ArrayValue:
        if len(ops) != 2:
            raise NotRun(f"variadic reduce-window {ins.name}")
        x, init = ops
        window = _window(ins.attributes.get("window", ""), x.data.ndim)
        if any(w["lhs_dilate"] != 1 or w["rhs_dilate"] != 1 for w in window):
            raise NotRun(f"dilated reduce-window {ins.name}")
        pads = [(w["pad"][0], w["pad"][1]) for w in window]
        if any(lo < 0 or hi < 0 for lo, hi in pads):
            raise NotRun(f"negative padding in {ins.name}")
        data = np.pad(x.data, pads, constant_values=init.data)
        defined = np.pad(x.defined, pads, constant_values=True)
        out_dims = tuple(shape.dimensions)
        acc = _as(init, out_dims)
        acc = ArrayValue(acc.shape, acc.data.copy(), acc.defined.copy())
        region = self.module.computation(ins.to_apply)
        ufunc = _binary_reducer(region)
        for offset in itertools.product(*(range(w["size"]) for w in window)):
            index = tuple(
                slice(o, o + w["stride"] * (n - 1) + 1, w["stride"])
                for o, w, n in zip(offset, window, out_dims, strict=True)
            )
            piece = ArrayValue(acc.shape, data[index], defined[index])
            if ufunc is not None:
                with np.errstate(all="ignore"):
                    acc = ArrayValue(acc.shape, ufunc(acc.data, piece.data), acc.defined & piece.defined)
            else:
                (acc,) = self.fold(region, [acc], [piece])
        return ArrayValue(shape, _cast(acc.data, shape), np.asarray(acc.defined))

    # ------------------------------------------------------------------ contractions
    def dot(self, ins: HloInstruction, shape: ArrayShape, ops: list[ArrayValue]) -> ArrayValue:
        lhs, rhs = ops
        a = ins.attributes
        lb, rb = ints(a.get("lhs_batch_dims")), ints(a.get("rhs_batch_dims"))
        lc, rc = ints(a.get("lhs_contracting_dims")), ints(a.get("rhs_contracting_dims"))
        letters = iter("abcdefghijklmnopqrstuvwxyz")
        ls = [""] * lhs.data.ndim
        rs = [""] * rhs.data.ndim
        for i, j in zip(lb, rb, strict=True):
            ls[i] = rs[j] = next(letters)
        for i, j in zip(lc, rc, strict=True):
            ls[i] = rs[j] = next(letters)
        for k in range(len(ls)):
            ls[k] = ls[k] or next(letters)
        for k in range(len(rs)):
            rs[k] = rs[k] or next(letters)
        out = [ls[i] for i in lb] + [ls[i] for i in range(len(ls)) if i not in lb + lc]
        out += [rs[j] for j in range(len(rs)) if j not in rb + rc]
        data = np.einsum(f"{''.join(ls)},{''.join(rs)}->{''.join(out)}", _wide(lhs.data), _wide(rhs.data))
        defined = np.einsum(
            f"{''.join(ls)},{''.join(rs)}->{''.join(out)}",
            (~lhs.defined).astype(np.int64),
            np.ones(rhs.data.shape, np.int64),
        ) + np.einsum(
            f"{''.join(ls)},{''.join(rs)}->{''.join(out)}",
            np.ones(lhs.data.shape, np.int64),
            (~rhs.defined).astype(np.int64),
        )
        return ArrayValue(shape, _cast(data, shape), defined == 0)

    def convolution(self, ins: HloInstruction, shape: ArrayShape, ops: list[ArrayValue]) -> ArrayValue:
        a = ins.attributes
        if int(a.get("feature_group_count", "1")) != 1 or int(a.get("batch_group_count", "1")) != 1:
            raise NotRun(f"grouped convolution {ins.name}")
        m = re.fullmatch(r"(\w+)_(\w+)->(\w+)", a.get("dim_labels", "").strip())
        if m is None:
            raise NotRun(f"convolution {ins.name} without dim_labels")
        lhs_l, rhs_l, out_l = m.groups()
        lhs, rhs = ops
        spatial = sorted(c for c in lhs_l if c.isdigit())
        window = _window(a.get("window", ""), len(spatial))
        if any(w.get("reversal") for w in window):
            raise NotRun(f"reversed window in {ins.name}")
        x = _wide(lhs.data)
        # lhs: pad and dilate each spatial dimension (base dilation inserts zeros)
        for s, w in zip(spatial, window, strict=True):
            axis = lhs_l.index(s)
            d = w["lhs_dilate"]
            if d > 1:
                n = x.shape[axis]
                grown = list(x.shape)
                grown[axis] = (n - 1) * d + 1
                y = np.zeros(grown, x.dtype)
                index = [slice(None)] * x.ndim
                index[axis] = slice(None, None, d)
                y[tuple(index)] = x
                x = y
            lo, hi = w["pad"]
            if lo < 0 or hi < 0:
                raise NotRun(f"negative padding in {ins.name}")
            pads = [(0, 0)] * x.ndim
            pads[axis] = (lo, hi)
            x = np.pad(x, pads)
        k = _wide(rhs.data)
        out_dims = tuple(shape.dimensions)
        sizes = {s: out_dims[out_l.index(s)] for s in spatial}
        result = 0
        lhs_sub = "".join({"b": "B", "f": "C"}.get(c) or "xyzuvw"[int(c)] for c in lhs_l)
        rhs_sub = "".join({"i": "C", "o": "O"}.get(c, "") for c in rhs_l if c in "io")
        out_sub = "".join({"b": "B", "f": "O"}.get(c, "") or "xyzuvw"[int(c)] for c in out_l)
        for offset in itertools.product(*(range(rhs.data.shape[rhs_l.index(s)]) for s in spatial)):
            index: list[Any] = [slice(None)] * x.ndim
            kindex: list[Any] = [slice(None)] * k.ndim
            for s, o, w in zip(spatial, offset, window, strict=True):
                start = o * w["rhs_dilate"]
                index[lhs_l.index(s)] = slice(start, start + w["stride"] * (sizes[s] - 1) + 1, w["stride"])
                kindex[rhs_l.index(s)] = o
            result = result + np.einsum(f"{lhs_sub},{rhs_sub}->{out_sub}", x[tuple(index)], k[tuple(kindex)])
        defined = np.full(out_dims, bool(lhs.defined.all() and rhs.defined.all()))
        return ArrayValue(shape, _cast(np.broadcast_to(result, out_dims), shape), defined)

    # ------------------------------------------------------------------ indexing
    def gather(self, ins: HloInstruction, shape: ArrayShape, ops: list[ArrayValue]) -> ArrayValue:
        operand, indices = ops
        a = ins.attributes
        offset_dims = ints(a.get("offset_dims"))
        collapsed = ints(a.get("collapsed_slice_dims"))
        start_map = ints(a.get("start_index_map"))
        ivd = int(a.get("index_vector_dim", "0"))
        sizes = ints(a.get("slice_sizes"))
        operand_batching = ints(a.get("operand_batching_dims"))
        indices_batching = ints(a.get("start_indices_batching_dims"))
        out_dims = tuple(shape.dimensions)
        grid = np.indices(out_dims).reshape(len(out_dims), -1)
        batch = [d for d in range(len(out_dims)) if d not in offset_dims]
        idx = indices.data
        if ivd == idx.ndim:
            idx = idx[..., None]
        idx = np.moveaxis(idx, ivd, -1)
        g = tuple(grid[d] for d in batch)
        starts = idx[g] if g else np.broadcast_to(idx.reshape(-1), (grid.shape[1], idx.shape[-1]))
        rank = operand.data.ndim
        full = np.zeros((rank, grid.shape[1]), np.int64)
        for k, d in enumerate(start_map):
            full[d] = np.clip(starts[:, k].astype(np.int64), 0, operand.data.shape[d] - sizes[d])
        window_dims = [d for d in range(rank) if d not in collapsed and d not in operand_batching]
        for o, d in zip(offset_dims, window_dims, strict=True):
            full[d] = full[d] + grid[o]
        index_batch_dims = [d for d in range(indices.data.ndim) if d != ivd]
        for od, idim in zip(operand_batching, indices_batching, strict=True):
            full[od] = grid[batch[index_batch_dims.index(idim)]]
        where = tuple(full)
        data = operand.data[where].reshape(out_dims)
        defined = operand.defined[where].reshape(out_dims)
        if g:
            idx_defined = np.moveaxis(
                indices.defined if ivd < indices.data.ndim else indices.defined[..., None], ivd, -1
            )
            defined = defined & idx_defined[g].all(axis=-1).reshape(out_dims)
        return ArrayValue(shape, data, defined)

    def scatter(self, ins: HloInstruction, shape: ArrayShape, ops: list[ArrayValue]) -> ArrayValue:
        if len(ops) != 3:
            raise NotRun(f"variadic scatter {ins.name}")
        operand, indices, updates = ops
        a = ins.attributes
        window_dims = ints(a.get("update_window_dims"))
        inserted = ints(a.get("inserted_window_dims"))
        to_operand = ints(a.get("scatter_dims_to_operand_dims"))
        ivd = int(a.get("index_vector_dim", "0"))
        if ints(a.get("input_batching_dims")):
            raise NotRun(f"scatter {ins.name} with batching dims")
        region = self.module.computation(ins.to_apply)
        root = region.root
        params = {i.name: i.parameter_number for i in region.instructions if i.opcode == "parameter"}
        if root.opcode == "parameter" and root.parameter_number == 1:
            combine = None  # assignment: the update replaces the element
        elif root.opcode in ("add", "multiply", "maximum", "minimum") and sorted(
            params.get(o, -1) for o in root.operand_names
        ) == [0, 1]:
            combine = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum, "minimum": np.minimum}[
                root.opcode
            ]
        else:
            raise NotRun(f"the reducer of scatter {ins.name}")
        upd_dims = updates.data.shape
        grid = np.indices(upd_dims).reshape(len(upd_dims), -1)
        scatter_dims = [d for d in range(len(upd_dims)) if d not in window_dims]
        idx = indices.data
        if ivd == idx.ndim:
            idx = idx[..., None]
        idx = np.moveaxis(idx, ivd, -1)
        g = tuple(grid[d] for d in scatter_dims)
        starts = idx[g] if g else np.broadcast_to(idx.reshape(-1), (grid.shape[1], idx.shape[-1]))
        rank = operand.data.ndim
        full = np.zeros((rank, grid.shape[1]), np.int64)
        for k, d in enumerate(to_operand):
            full[d] = starts[:, k].astype(np.int64)
        operand_window = [d for d in range(rank) if d not in inserted]
        window_size = {d: 1 for d in range(rank)}
        for w, d in zip(window_dims, operand_window, strict=True):
            window_size[d] = upd_dims[w]
        ok = np.ones(grid.shape[1], bool)
        for d in range(rank):  # a window that does not fit is skipped whole
            ok &= (full[d] >= 0) & (full[d] + window_size[d] <= operand.data.shape[d])
        for w, d in zip(window_dims, operand_window, strict=True):
            full[d] = full[d] + grid[w]
        data = operand.data.copy()
        where = tuple(f[ok] for f in full)
        values = updates.data.reshape(-1)[ok]
        if combine is None:
            data[where] = values
        else:
            combine.at(data, where, values)
        defined = np.broadcast_to(
            operand.defined.all() and updates.defined.all() and indices.defined.all(), data.shape
        )
        return ArrayValue(shape, _cast(data, shape), np.array(defined))

    def top_k(self, ins: HloInstruction, ops: list[ArrayValue]) -> tuple[ArrayValue, ArrayValue]:
        """XLA:CPU's ``TopK`` custom call: the first k of a sort by its comparator along the last dimension."""
        (x,) = ops
        values_shape, indices_shape = ins.shape.elements
        comparator = ins.attributes["called_computations"].strip("{} ").lstrip("%")
        iota = np.broadcast_to(np.arange(x.data.shape[-1], dtype=np.int32), x.data.shape)
        index = ArrayValue(
            dataclasses.replace(indices_shape, dimensions=x.data.shape, layout=None), iota, x.defined
        )
        k = values_shape.dimensions[-1]
        sorted_values, sorted_index = self.sort_along(len(x.data.shape) - 1, comparator, [x, index], ins.name)
        return (
            ArrayValue(values_shape, sorted_values.data[..., :k], sorted_values.defined[..., :k]),
            ArrayValue(indices_shape, sorted_index.data[..., :k], sorted_index.defined[..., :k]),
        )

    def topk_op(self, ins: HloInstruction, ops: list[ArrayValue]) -> tuple[ArrayValue, ArrayValue]:
        """The ``topk`` op: the k largest (``largest=true``) or smallest along the last dimension,
        ties in index order, and their indices."""
        (x,) = ops
        values_shape, indices_shape = ins.shape.elements
        k = values_shape.dimensions[-1]
        largest = ins.attributes.get("largest", "true").strip() != "false"
        key = x.data.astype(np.float64)
        order = np.argsort(-key if largest else key, axis=-1, kind="stable")[..., :k]
        defined = np.broadcast_to(x.defined.all(), order.shape)
        return (
            ArrayValue(values_shape, np.take_along_axis(x.data, order, axis=-1), defined),
            ArrayValue(indices_shape, order.astype(numpy_dtype(indices_shape.element_type)), defined),
        )

    def sort(self, ins: HloInstruction, ops: list[ArrayValue]) -> Any:
        (axis,) = ins.dimensions or (0,)
        outs = self.sort_along(axis, ins.to_apply, ops, ins.name)
        return tuple(outs) if isinstance(ins.shape, TupleShape) else outs[0]

    def sort_along(self, axis: int, comparator: str, ops: list[ArrayValue], name: str) -> list[ArrayValue]:
        """``ops`` sorted together along ``axis`` by the comparator computation, stably.

        A bitonic sorting network over positions (padded to a power of two; the padding goes
        last), each stage one run of the comparator on whole arrays; ties keep their order
        (the earlier position first). Raises :class:`NotRun` if the result is not sorted by
        the comparator (one that is no strict weak order)."""
        moved = [np.moveaxis(o.data, axis, -1) for o in ops]
        n = moved[0].shape[-1]
        batch = moved[0].shape[:-1]
        comp = self.module.computation(comparator)
        scalars = [
            dataclasses.replace(o.shape, dimensions=(), dynamic_dimensions=(), layout=None) for o in ops
        ]

        def less(x: np.ndarray, y: np.ndarray) -> np.ndarray:
            """The comparator on the elements at positions x and y (arrays of positions < n)."""
            args = []
            for scalar, m in zip(scalars, moved, strict=True):
                for where in (x, y):
                    v = np.take_along_axis(m, where, axis=-1)
                    args.append(ArrayValue(scalar, v, np.ones(v.shape, bool)))
            return np.asarray(self.computation(comp, args, x.shape).data, bool)

        def before(x: np.ndarray, y: np.ndarray) -> np.ndarray:
            pad_x, pad_y = x >= n, y >= n
            xc, yc = np.minimum(x, n - 1), np.minimum(y, n - 1)
            lt, gt = less(xc, yc), less(yc, xc)
            real = lt | (~gt & (x < y))
            return np.where(pad_x, False, np.where(pad_y, True, real))

        size = 1 << max(0, (n - 1).bit_length())
        perm = np.broadcast_to(np.arange(size), (*batch, size)).copy()
        i = np.arange(size)
        k = 2
        while k <= size:
            j = k // 2
            while j >= 1:
                partner = i ^ j
                lo = i[partner > i]
                hi = partner[partner > i]
                a, b = perm[..., lo], perm[..., hi]
                ascending = (lo & k) == 0
                swap = np.where(ascending, before(b, a), before(a, b))
                perm[..., lo] = np.where(swap, b, a)
                perm[..., hi] = np.where(swap, a, b)
                j //= 2
            k *= 2
        order = perm[..., :n]
        if n > 1 and less(order[..., 1:], order[..., :-1]).any():
            raise NotRun(f"sort {name}: its comparator is not a strict weak order on these values")
        outs = []
        for o, m in zip(ops, moved, strict=True):
            out = np.take_along_axis(m, order, axis=-1)
            defined = np.broadcast_to(o.defined.all(), o.data.shape)
            outs.append(ArrayValue(o.shape, np.moveaxis(out, -1, axis), defined))
        return outs


def _total_order_compare(ins: HloInstruction, shape: ArrayShape, ops: list[ArrayValue]) -> ArrayValue:
    """``compare(..., type=TOTALORDER)``: floats by IEEE 754 totalOrder (-NaN < -inf < ... < -0 < +0 < ... < NaN)."""
    keys = []
    for o in ops:
        bits = o.data.dtype.itemsize * 8
        if o.data.dtype.kind in "iub":
            keys.append(o.data.astype(np.int64))
            continue
        signed = o.data.view(np.dtype(f"int{bits}")).astype(np.int64)
        magnitude = (1 << (bits - 1)) - 1
        keys.append(np.where(signed < 0, signed ^ magnitude, signed))
    direction = ins.attributes.get("direction", "").strip()
    table = {
        "LT": np.less,
        "LE": np.less_equal,
        "GT": np.greater,
        "GE": np.greater_equal,
        "EQ": np.equal,
        "NE": np.not_equal,
    }
    data = table[direction](keys[0], keys[1])
    return ArrayValue(shape, data, ops[0].defined & ops[1].defined)


def _binary_reducer(region: HloComputation) -> np.ufunc | None:
    """The NumPy ufunc of a reducer that is one op of its two parameters (add, maximum...), else ``None``."""
    root = region.root
    params = {i.name: i.parameter_number for i in region.instructions if i.opcode == "parameter"}
    if len(region.instructions) != 3 or sorted(params.get(o, -1) for o in root.operand_names) != [0, 1]:
        return None
    kind = root.shape.element_type.text if isinstance(root.shape, ArrayShape) else ""
    if kind == "pred":
        table = {
            "and": np.logical_and,
            "or": np.logical_or,
            "maximum": np.logical_or,
            "minimum": np.logical_and,
        }
    elif kind.startswith(("s", "u")):
        table = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum, "minimum": np.minimum,
                 "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}  # fmt: skip
    else:
        table = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum, "minimum": np.minimum}
    return table.get(root.opcode)


def _window(text: str, rank: int) -> list[dict[str, Any]]:
    """XLA's ``window={size=2x2 stride=1x1 pad=0_1x0_1 lhs_dilate=... rhs_dilate=...}``, per dimension."""
    fields = dict(re.findall(r"(\w+)=([\w\-x_]+)", text))
    out = []
    for k in range(rank):

        def part(key: str, default: str, k: int = k) -> str:
            return fields[key].split("x")[k] if key in fields else default

        lo, hi = (int(v) for v in part("pad", "0_0").split("_"))
        out.append(
            {
                "size": int(part("size", "1")),
                "stride": int(part("stride", "1")),
                "pad": (lo, hi),
                "lhs_dilate": int(part("lhs_dilate", "1")),
                "rhs_dilate": int(part("rhs_dilate", "1")),
                "reversal": part("rhs_reversal", "0") == "1",
            }
        )
    return out


def reread(a: ArrayValue, shape: ArrayShape) -> ArrayValue:
    """``a``'s bytes, packed by its layout (padding zeros), read through ``shape``'s layout."""
    data = pack(np.ascontiguousarray(a.data), a.shape, fill=0)
    need = layout_map(shape).size_in_bytes
    if need > data.size:
        data = np.concatenate([data, np.zeros(need - data.size, np.uint8)])
    array = unpack(data[:need], shape)
    return ArrayValue(
        shape, array, np.ones(array.shape, bool) if a.defined.all() else np.zeros(array.shape, bool)
    )


def run_reference(
    module: HloModule,
    params: Sequence[np.ndarray],
    opaque: dict[str, Any] | None = None,
    elided: dict[tuple[str, str], Any] | None = None,
    *,
    physical: bool = True,
) -> list[ArrayValue]:
    """The entry's root leaves for logical ``params`` (read through the entry computation layout).
    ``elided``: a dict that gives each constant whose literal the dump elided (``{...}``) a random
    value fixed by its name (the same in every run); without it such a constant is an error.
    ``physical=False`` (before layout assignment, where layouts carry no meaning): a parameter
    is its logical array whatever its layout."""
    declared = module.entry_computation_layout.parameter_shapes if module.entry_computation_layout else ()
    shapes = {i.parameter_number: i.shape for i in module.entry.instructions if i.opcode == "parameter"}
    args = []
    for k, p in enumerate(params):
        own = shapes[k]
        value = ArrayValue(own, p, np.ones(p.shape, bool))
        caller = declared[k] if k < len(declared) else None
        if (
            physical
            and isinstance(caller, ArrayShape)
            and isinstance(own, ArrayShape)
            and str(caller) != str(own)
        ):
            value = reread(ArrayValue(caller, p, np.ones(p.shape, bool)), own)
        args.append(value)
    try:
        out = Reference(module, opaque, elided).computation(module.entry, args)
    except UnsupportedOpError as err:
        raise NotRun(str(err)) from None
    leaves: list[ArrayValue] = []

    def flatten(v: Any) -> None:
        if isinstance(v, tuple):
            for x in v:
                flatten(x)
        else:
            leaves.append(v)

    flatten(out)
    return leaves
