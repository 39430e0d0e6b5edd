"""The executor's ``gather`` and ``scatter``, with their full dimension numbers (batching
dimensions included), by XLA's operation semantics.

``gather``: result element ``out`` reads the operand at ``start + batching + offset``, where the
start comes from the start indices at ``out``'s batch coordinates (mapped by
``start_index_map`` and **clamped** into ``[0, operand_dim - slice_size]``, as XLA does), the
batching index from the same batch coordinates (``operand_batching_dims`` paired with
``start_indices_batching_dims``), and the offset from ``out``'s ``offset_dims`` (zero along the
collapsed and batching dimensions).

``scatter``: each update element goes to ``start + batching + window`` of the operand, the
same way round but **not** clamped: an update window that does not lie wholly inside the
operand is skipped, as XLA's scatter does. The ``to_apply`` computation combines the element
already there with the update; updates reaching one element are applied in the updates'
row-major order.

>>> import numpy as np
>>> from layout_algebra.hlo.execute import run
>>> text = '''HloModule m
... ENTRY e {
...   t = f32[4,2]{1,0} parameter(0)
...   i = s32[3]{0} parameter(1)
...   ROOT g = f32[3,2]{1,0} gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,2}
... }'''
>>> table = np.arange(8, dtype=np.float32).reshape(4, 2)
>>> run(text, [table, np.array([3, 0, 9], np.int32)]).array.tolist()   # 9 is clamped to 3
[[6.0, 7.0], [0.0, 1.0], [6.0, 7.0]]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from layout_algebra.hlo.execute_apply import Runner, called_computation
from layout_algebra.hlo.execute_compute import apply_updates, array_operands, finished, ints, result_shape
from layout_algebra.hlo.execute_ops import ArrayValue, Value
from layout_algebra.hlo.ir import HloInstruction
from layout_algebra.hlo.validity import InvalidHlo
from layout_algebra.model.shapes import TupleShape

__all__ = ["INDEXING_SEMANTICS", "gather", "scatter"]


def _index_vectors(
    ins: HloInstruction, indices: ArrayValue, vector_dim: int
) -> tuple[np.ndarray, np.ndarray]:
    """The start indices as ``[batch..., k]`` (int64) and their defined mask ``[batch...]``."""
    data, defined = indices.data, indices.defined
    if data.dtype.kind not in "iu":
        raise InvalidHlo(f"instruction {ins.name!r}: start indices must be integers, found {indices.shape}")
    if not 0 <= vector_dim <= data.ndim:
        raise InvalidHlo(
            f"instruction {ins.name!r}: index_vector_dim={vector_dim} out of range for {indices.shape}"
        )
    if vector_dim == data.ndim:
        data, defined = data[..., None], defined[..., None]
    values = np.moveaxis(data, vector_dim, -1)
    wide = (
        np.minimum(values, np.iinfo(np.int64).max).astype(np.int64)
        if values.dtype == np.uint64
        else values.astype(np.int64)
    )
    return wide, np.moveaxis(defined, vector_dim, -1).all(axis=-1)


def _batch_position(index_dim: int, vector_dim: int) -> int:
    """Where start-indices dimension ``index_dim`` is among the batch dimensions."""
    return index_dim - (1 if index_dim > vector_dim else 0)


def _check_dims(ins: HloInstruction, rank: int, *groups: tuple[int, ...]) -> None:
    every = [d for g in groups for d in g]
    if len(set(every)) != len(every) or any(not 0 <= d < rank for d in every):
        raise InvalidHlo(
            f"instruction {ins.name!r}: {ins.opcode} dimension numbers {list(groups)} do not fit rank {rank}"
        )


def gather(runner: Runner, ins: HloInstruction, operands: Sequence[Value]) -> Value:
    """XLA's ``gather`` (see the module docstring)."""
    shape = result_shape(runner, ins)
    if len(operands) != 2:
        raise InvalidHlo(f"instruction {ins.name!r}: gather takes an operand and start indices")
    x, indices = array_operands(ins, operands)
    offset_dims, collapsed = ints(ins, "offset_dims", ()), ints(ins, "collapsed_slice_dims", ())
    start_map, sizes = ints(ins, "start_index_map"), ints(ins, "slice_sizes")
    operand_batching = ints(ins, "operand_batching_dims", ())
    indices_batching = ints(ins, "start_indices_batching_dims", ())
    vector_dim = int(ins.attributes.get("index_vector_dim", str(indices.data.ndim)))
    rank = x.data.ndim
    _check_dims(ins, rank, collapsed, operand_batching)
    starts, starts_ok = _index_vectors(ins, indices, vector_dim)
    batch = starts.shape[:-1]
    if (
        len(sizes) != rank or len(start_map) != starts.shape[-1] or len(operand_batching) != len(indices_batching)
        or any(not 0 <= s <= d for s, d in zip(sizes, x.data.shape, strict=True))
        or any(not 0 <= d < rank for d in start_map) or len(set(start_map)) != len(start_map)
        or any(sizes[d] > 1 for d in (*collapsed, *operand_batching))
    ):  # fmt: skip
        raise InvalidHlo(
            f"instruction {ins.name!r}: gather dimension numbers do not fit {x.shape} and {indices.shape}"
        )
    window_dims = [d for d in range(rank) if d not in collapsed and d not in operand_batching]
    out_rank = len(batch) + len(offset_dims)
    if len(offset_dims) != len(window_dims) or any(not 0 <= d < out_rank for d in offset_dims):
        raise InvalidHlo(f"instruction {ins.name!r}: offset_dims={list(offset_dims)} do not fit {x.shape}")
    batch_dims = [r for r in range(out_rank) if r not in offset_dims]
    out_dims = [0] * out_rank
    for r, n in zip(batch_dims, batch, strict=True):
        out_dims[r] = n
    for r, d in zip(offset_dims, window_dims, strict=True):
        out_dims[r] = sizes[d]
    grid = np.indices(out_dims, dtype=np.int64) if out_rank else np.zeros((0,), np.int64)
    batch_index = tuple(grid[r] for r in batch_dims)
    picked = starts[batch_index] if batch else starts.reshape(-1)  # [out..., k]
    operand_index = []
    for d in range(rank):
        position = np.zeros(out_dims, np.int64)
        if d in start_map:
            k = start_map.index(d)
            position = np.clip(picked[..., k], 0, x.data.shape[d] - sizes[d])
        if d in operand_batching:
            j = indices_batching[operand_batching.index(d)]
            position = position + batch_index[_batch_position(j, vector_dim)]
        if d in window_dims:
            position = position + grid[offset_dims[window_dims.index(d)]]
        operand_index.append(position)
    where = tuple(operand_index)
    defined = x.defined[where] & (starts_ok[batch_index] if batch else starts_ok)
    return finished(ins, shape, x.data[where], defined)


def scatter(runner: Runner, ins: HloInstruction, operands: Sequence[Value]) -> Value:
    """XLA's ``scatter`` (see the module docstring)."""
    arrays = array_operands(ins, operands)
    if len(arrays) < 3 or len(arrays) % 2 == 0:
        raise InvalidHlo(
            f"instruction {ins.name!r}: scatter takes operands, scatter indices and as many updates"
        )
    n = (len(arrays) - 1) // 2
    inputs, indices, updates = arrays[:n], arrays[n], arrays[n + 1 :]
    if n != 1:
        from layout_algebra.hlo.execute_ops import UnsupportedOpError

        raise UnsupportedOpError("scatter", f"instruction {ins.name!r}: a scatter of {n} operands")
    shape = result_shape(runner, ins) if not isinstance(ins.shape, TupleShape) else None
    if shape is None:
        raise InvalidHlo(f"instruction {ins.name!r}: scatter of one operand with a tuple result")
    x, u = inputs[0], updates[0]
    window_dims, inserted = ints(ins, "update_window_dims", ()), ints(ins, "inserted_window_dims", ())
    to_operand = ints(ins, "scatter_dims_to_operand_dims")
    input_batching = ints(ins, "input_batching_dims", ())
    indices_batching = ints(ins, "scatter_indices_batching_dims", ())
    vector_dim = int(ins.attributes.get("index_vector_dim", str(indices.data.ndim)))
    rank = x.data.ndim
    _check_dims(ins, rank, inserted, input_batching)
    starts, starts_ok = _index_vectors(ins, indices, vector_dim)
    batch = starts.shape[:-1]
    operand_window = [d for d in range(rank) if d not in inserted and d not in input_batching]
    scatter_dims = [r for r in range(u.data.ndim) if r not in window_dims]
    if (
        len(window_dims) != len(operand_window) or len(to_operand) != starts.shape[-1]
        or len(input_batching) != len(indices_batching) or len(scatter_dims) != len(batch)
        or any(u.data.shape[r] != b for r, b in zip(scatter_dims, batch, strict=True))
        or any(u.data.shape[r] > x.data.shape[d] for r, d in zip(window_dims, operand_window, strict=True))
        or any(not 0 <= d < rank for d in to_operand)
    ):  # fmt: skip
        raise InvalidHlo(
            f"instruction {ins.name!r}: scatter dimension numbers do not fit {x.shape}, {indices.shape} and {u.shape}"
        )
    grid = np.indices(u.data.shape, dtype=np.int64)
    batch_index = tuple(grid[r] for r in scatter_dims)
    picked = (
        starts[batch_index]
        if batch
        else np.broadcast_to(starts.reshape(-1), (*u.data.shape, starts.shape[-1]))
    )
    target = []
    inside = np.ones(u.data.shape, bool)
    for d in range(rank):
        start = np.zeros(u.data.shape, np.int64)
        extent = 1
        if d in to_operand:
            start = picked[..., to_operand.index(d)]
        if d in input_batching:
            j = indices_batching[input_batching.index(d)]
            start = start + batch_index[_batch_position(j, vector_dim)]
        position = start
        if d in operand_window:
            r = window_dims[operand_window.index(d)]
            position = start + grid[r]
            extent = u.data.shape[r]
        inside &= (start >= 0) & (start <= x.data.shape[d] - extent)  # the whole window fits
        target.append(np.clip(position, 0, max(x.data.shape[d] - 1, 0)))
    flat = (
        np.ravel_multi_index(tuple(target), x.data.shape) if x.data.size else np.zeros(u.data.shape, np.int64)
    )
    flat = np.where(inside, flat, -1)
    ok = u.defined & (starts_ok[batch_index] if batch else starts_ok)
    comp = called_computation(runner, ins)
    data, defined = apply_updates(
        runner, comp, x.data, x.defined, flat.ravel(), u.data.ravel(), ok.ravel(), x.shape
    )
    return finished(ins, shape, data, defined)


#: The indexing compute ops: opcode -> (runner, instruction, operand values) -> value.
INDEXING_SEMANTICS = {"gather": gather, "scatter": scatter}
