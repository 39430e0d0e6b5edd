"""The stage walk: a layout's stages run on views of the logical array, cut into blocks and chunks.

:func:`walk` turns the logical array (as bits) into *blocks*, views that each land as a box
of the tiled shape (``LayoutMap.physical_dimensions``); :func:`chunks` cuts that box into
chunks of the output that each start on a byte, and :func:`overlap` says where a block
meets a chunk. :mod:`layout_algebra.packing.numpy_eval` moves the data along them.

``f32[3,5]`` in 2x2 tiles is four blocks: rows 0-1 by columns 0-3 (whole tiles), rows 0-1
by column 4, row 2 by columns 0-3, and row 2 by column 4, each placed in the tiled shape
``(row tile, column tile, row in tile, column in tile)``:

>>> from layout_algebra.meaning.layout_map import layout_map
>>> blocks = walk(layout_map("f32[3,5]{1,0:T(2,2)}"), np.zeros((3, 5), np.uint32), None)
>>> blocks.box
(2, 3, 2, 2)
>>> [(b.view.shape, b.start) for b in blocks.blocks]
[((1, 2, 2, 2), (0, 0, 0, 0)), ((1, 1, 2, 1), (0, 2, 0, 0)), ((1, 2, 1, 2), (1, 0, 0, 0)), ((1, 1, 1, 1), (1, 2, 0, 0))]
"""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from layout_algebra.meaning.layout_map import LayoutMap
from layout_algebra.meaning.stages.stages import (
    AlignTail,
    Combine,
    Linearize,
    Pad,
    PrependUnitDims,
    Split,
    Stage,
    ToBits,
    Transpose,
)
from layout_algebra.packing.tunables import watch

__all__ = [
    "Block",
    "Plan",
    "Skeleton",
    "box_difference",
    "chunk_index",
    "chunk_list",
    "chunks",
    "overlap",
    "relocated",
    "row_major",
    "shared_chunk",
    "skeleton",
    "walk",
]

#: Bytes of output handled per chunk (what is read and written should stay in the cache)...
CHUNK_BYTES = 1 << 21
#: ... or, when the chunk's copies transpose, this many: they are blocked in the cache by
#: themselves (``copy_engine.blocked_copy``), and a longer chunk makes longer runs in the array
#: (32 MB: 4 KB runs in the rows of the 8192x8192 f32 benchmark array; 1 KB ran at half speed).
TRANSPOSING_CHUNK_BYTES = 1 << 25
#: ... or, when compiled kernels build the words (``copy_engine.uses_kernel``), this many:
#: they make one pass, so the chunk need not stay in the cache, and fewer calls cost less.
KERNEL_CHUNK_BYTES = 1 << 23
#: ... and for sub-byte elements built into words by the kernels, this many elements: the
#: 8192x8192 ``s4`` of the benchmark in 4 chunks, two per thread on two cores (measured
#: against 8 and 16: each chunk costs about 0.1 ms of Python, held under the GIL).
WORD_KERNEL_CHUNK_ELEMENTS = 1 << 24


# ------------------------------------------------------------------- the stage walk
#: An index into an array: integers and slices.
Index = tuple[int | slice, ...]
#: Views to write back after unpacking: (the view, the merged copy written into it).
Writebacks = list[tuple[np.ndarray, np.ndarray]]


def chunk_index(prefix: tuple[int, ...], lo: int, hi: int) -> Index:
    """The index of a chunk of the box: the leading coordinates ``prefix``, then ``lo:hi``."""
    return (*prefix, slice(lo, hi))


@dataclass(frozen=True)
class Block:
    """A view of part of the logical array that lands as a box, at ``start``, in the current index space."""

    view: np.ndarray
    start: tuple[int, ...]


@dataclass(frozen=True)
class Plan:
    """The blocks in the tiled shape ``box``, and what follows the box: ``slots`` in all."""

    blocks: tuple[Block, ...]
    box: tuple[int, ...]
    slots: int


@dataclass(frozen=True)
class Skeleton:
    """A plan with its blocks as places in the base instead of views of one array: each
    block is ``(byte offset, dims, strides, start)``, so that the plan serves every
    C-contiguous array of the base's dims and dtype (:func:`relocated`)."""

    blocks: tuple[tuple[int, tuple[int, ...], tuple[int, ...], tuple[int, ...]], ...]
    box: tuple[int, ...]
    slots: int


def skeleton(plan: Plan, base: np.ndarray) -> Skeleton | None:
    """``plan`` (walked on the C-contiguous ``base``) as a :class:`Skeleton`; None if a block
    is not a view of ``base`` (a ``*`` merge that NumPy could only do by copying).

    >>> from layout_algebra.meaning.layout_map import layout_map
    >>> m, x = layout_map("f32[3,5]{1,0:T(2,2)}"), np.arange(15, dtype=np.uint32).reshape(3, 5)
    >>> s = skeleton(walk(m, x, None), x)
    >>> s.blocks[1]                       # column 4 of rows 0-1: 16 bytes in, 2 rows 20 bytes apart
    (16, (1, 1, 2, 1), (40, 20, 20, 20), (0, 2, 0, 0))
    >>> y = np.arange(100, 115, dtype=np.uint32).reshape(3, 5)
    >>> relocated(s, y).blocks[1].view.ravel().tolist()
    [104, 109]
    """
    if not base.flags.c_contiguous:
        return None
    origin, end = base.__array_interface__["data"][0], base.nbytes
    blocks = []
    for b in plan.blocks:
        v = b.view
        offset = v.__array_interface__["data"][0] - origin
        reach = sum((n - 1) * s for n, s in zip(v.shape, v.strides, strict=True) if n > 1 and s > 0)
        if not v.size or not 0 <= offset <= offset + reach + v.itemsize <= end:
            return None
        if any(s < 0 for s in v.strides) or not np.may_share_memory(v, base):
            return None
        blocks.append((offset, v.shape, v.strides, b.start))
    return Skeleton(tuple(blocks), plan.box, plan.slots)


def relocated(s: Skeleton, base: np.ndarray) -> Plan:
    """The plan of :class:`Skeleton` ``s`` on ``base`` (C-contiguous, of the dims and dtype it was made for)."""
    dtype = base.dtype
    blocks = tuple(
        Block(np.ndarray(shape, dtype, buffer=base, offset=offset, strides=strides), start)
        for offset, shape, strides, start in s.blocks
    )
    return Plan(blocks, s.box, s.slots)


@lru_cache(maxsize=1024)
def shared_chunk(chunk: int, total: int, threads: int) -> int:
    """The chunk length to use for ``total`` (bytes or elements, as ``chunk``) on ``threads``
    threads: ``chunk``, shortened so that every thread gets a chunk of its own. A chunk is the
    unit a thread takes (``threads.run_parallel``): a 16 MB transposing copy in chunks of
    32 MB was one chunk, and the second thread had nothing to do.

    >>> shared_chunk(1 << 25, 1 << 24, 2) == 1 << 23, shared_chunk(1 << 25, 1 << 24, 1) == 1 << 25
    (True, True)
    >>> shared_chunk(1 << 21, 100 << 20, 2) == 1 << 21     # already many chunks
    True
    """
    if threads <= 1:
        return chunk
    return max(1, min(chunk, -(-total // threads)))


def chunk_list(
    box: tuple[int, ...], bits: int, chunk_bytes: int
) -> tuple[tuple[tuple[int, ...], int, int, int], ...]:
    """:func:`chunks`, kept for each box, element size and chunk length."""
    return tuple(chunks(box, bits, chunk_bytes))


def walk(m: LayoutMap, base: np.ndarray, writebacks: Writebacks | None) -> Plan:
    """Run the stages on views of ``base`` (the logical array, as bits).

    ``writebacks`` is ``None`` when packing (views are only read). When unpacking it
    collects ``(view, merged)`` pairs: a ``*`` merge that NumPy can only do by copying is
    written into ``merged``, a new array, which must be copied back into ``view`` at the end.
    """
    blocks = [Block(base, (0,) * base.ndim)] if base.size else []
    box: tuple[int, ...] | None = None
    slots = 0
    for stage in m.stages:
        if box is None:
            blocks = _before_linearize(stage, blocks, writebacks, m)
            if isinstance(stage, Linearize):
                box = tuple(stage.domain)
                slots = stage.range[0]
        elif isinstance(stage, AlignTail):
            slots = stage.range[0]  # slots past the box are padding
        elif not isinstance(stage, ToBits):  # ToBits: the element format says how
            raise NotImplementedError(f"{m.shape}: the NumPy evaluator does not realise a {stage.name} stage")
    assert box is not None, "a layout pipeline always linearizes"
    if box == ():  # a scalar: one slot
        blocks = [Block(b.view.reshape(1), (0,)) for b in blocks]
        box = (1,)
    return Plan(tuple(blocks), box, slots)


def _before_linearize(
    stage: Stage, blocks: list[Block], writebacks: Writebacks | None, m: LayoutMap
) -> list[Block]:
    if isinstance(stage, Transpose):
        p = stage.permutation
        return [Block(b.view.transpose(p), tuple(b.start[i] for i in p)) for b in blocks]
    if isinstance(stage, PrependUnitDims):
        ones = (1,) * stage.count
        return [Block(b.view.reshape(ones + b.view.shape), (0,) * stage.count + b.start) for b in blocks]
    if isinstance(stage, Combine):
        return [c for b in blocks for c in _combine(b, stage, writebacks)]
    if isinstance(stage, Split):
        return [c for b in blocks for c in _split(b, stage.start, stage.tile)]
    if isinstance(stage, Pad | Linearize):
        return blocks  # padding: new slots around the blocks; linearize: the box is the output
    raise NotImplementedError(f"{m.shape}: the NumPy evaluator does not realise a {stage.name} stage")


def _tile_runs(start: int, length: int, t: int) -> list[tuple[int, int, int, int, int, int]]:
    """Cut ``[start, start+length)`` into runs that are boxes in (tile number, position in tile).

    Each run is ``(lo, hi, tile, tiles, position, positions)``: local bounds in the block,
    then the first tile number and how many, the first position and how many.

    >>> _tile_runs(0, 7, 2)             # three whole tiles, then the edge
    [(0, 6, 0, 3, 0, 2), (6, 7, 3, 1, 0, 1)]
    >>> _tile_runs(3, 4, 2)             # the end of a tile, a whole tile
    [(0, 1, 1, 1, 1, 1), (1, 3, 2, 1, 0, 2), (3, 4, 3, 1, 0, 1)]
    """
    runs = []
    x, end = start, start + length
    while x < end:
        if x % t or end - x < t:  # inside one tile
            y = min(end, (x // t + 1) * t)
            runs.append((x - start, y - start, x // t, 1, x % t, y - x))
        else:  # whole tiles
            y = x + (end - x) // t * t
            runs.append((x - start, y - start, x // t, (y - x) // t, 0, t))
        x = y
    return runs


def _split(b: Block, start: int, tile: tuple[int, ...]) -> list[Block]:
    """``Split``: each tiled dimension of the view becomes (tile number, position in tile)."""
    per_dim = [_tile_runs(b.start[start + k], b.view.shape[start + k], t) for k, t in enumerate(tile)]
    out = []
    for runs in itertools.product(*per_dim):
        index: list[slice] = [slice(None)] * start
        shape = list(b.view.shape[:start])
        where = list(b.start[:start])
        for lo, hi, q, n_q, r, n_r in runs:
            index.append(slice(lo, hi))
            shape += [n_q, n_r]
            where += [q, r]
        out.append(Block(b.view[tuple(index)].reshape(shape), tuple(where)))
    return out


def _combine(b: Block, stage: Combine, writebacks: Writebacks | None) -> list[Block]:
    """``Combine``: merge each group of dimensions (row-major); a block must be one run of it."""
    pieces = [b]
    for group in stage.groups:
        if len(group) > 1:
            pieces = [c for p in pieces for c in _runs_of_group(p, group, stage.domain)]
    out = []
    for p in pieces:
        shape = tuple(math.prod(p.view.shape[i] for i in g) for g in stage.groups)
        where = tuple(
            row_major(tuple(p.start[i] for i in g), tuple(stage.domain[i] for i in g)) for g in stage.groups
        )
        out.append(Block(_merge(p.view, shape, writebacks), where))
    return out


def _runs_of_group(b: Block, group: tuple[int, ...], domain: tuple[int, ...]) -> list[Block]:
    """Cut ``b`` so that within ``group`` it is one run: single indices, then one range, then full dims."""
    partial = [i for i in group if (b.start[i], b.view.shape[i]) != (0, domain[i])]
    if not partial:
        return [b]
    outer = [i for i in group if i < partial[-1] and b.view.shape[i] > 1]
    if not outer:
        return [b]
    out = []
    for picks in itertools.product(*(range(b.view.shape[i]) for i in outer)):
        index: list[slice] = [slice(None)] * b.view.ndim
        where = list(b.start)
        for i, k in zip(outer, picks, strict=True):
            index[i] = slice(k, k + 1)
            where[i] += k
        out.append(Block(b.view[tuple(index)], tuple(where)))
    return out


def row_major(index: tuple[int, ...], dims: tuple[int, ...]) -> int:
    value = 0
    for i, d in zip(index, dims, strict=True):
        value = value * d + i
    return value


def _merge(view: np.ndarray, shape: tuple[int, ...], writebacks: Writebacks | None) -> np.ndarray:
    """``view.reshape(shape)`` merging dims; where NumPy must copy, a copy to read or to write back."""
    merged = view.reshape(shape)
    if np.may_share_memory(merged, view) or writebacks is None:
        return merged  # a view, or a copy that will only be read
    target = np.empty(shape, view.dtype)
    writebacks.append((view, target))
    return target


# --------------------------------------------------------------------- moving data
def chunks(
    box: tuple[int, ...], bits: int, chunk_bytes: int | None = None
) -> Iterator[tuple[tuple[int, ...], int, int, int]]:
    """Chunks of the box that each start on a byte: ``(prefix, lo, hi, first_slot)``.

    A chunk is ``box[prefix + (slice(lo, hi),)]`` (all of the dims after), contiguous in
    the output, about ``chunk_bytes`` (default ``CHUNK_BYTES``) long (sub-byte elements:
    that many elements, gathered one byte each before packing).
    """
    if not math.prod(box):
        return  # nothing to move
    target = max(1, (chunk_bytes or CHUNK_BYTES) * 8 // max(bits, 8))
    inner = [math.prod(box[a + 1 :]) for a in range(len(box))]
    aligned = [a for a in range(len(box)) if inner[a] <= target and inner[a] * bits % 8 == 0]
    if aligned:
        axis = aligned[0]
        step = max(1, target // inner[axis])
    else:  # whole rows of the first dim, as many as make whole bytes
        axis = 0
        rows = 8 // math.gcd(inner[0] * bits, 8)
        step = max(rows, target // max(inner[0], 1) // rows * rows)
    for prefix in itertools.product(*(range(d) for d in box[:axis])):
        base = row_major(prefix, box[:axis]) * box[axis]
        for lo in range(0, box[axis], step):
            hi = min(box[axis], lo + step)
            yield prefix, lo, hi, (base + lo) * inner[axis]


def overlap(b: Block, prefix: tuple[int, ...], lo: int, hi: int) -> tuple[Index, tuple[slice, ...]] | None:
    """Where block ``b`` meets a chunk: (index into ``b.view``, index into the chunk), or None."""
    s, e = b.start, b.view.shape
    axis = len(prefix)
    for i, p in enumerate(prefix):
        if not s[i] <= p < s[i] + e[i]:
            return None
    first, last = max(lo, s[axis]), min(hi, s[axis] + e[axis])
    if first >= last:
        return None
    src: Index = (*(p - s[i] for i, p in enumerate(prefix)), slice(first - s[axis], last - s[axis]))
    dst = (slice(first - lo, last - lo), *(slice(s[i], s[i] + e[i]) for i in range(axis + 1, len(s))))
    return src, dst


def box_difference(box: tuple[slice, ...], holes: Sequence[tuple[slice, ...]]) -> list[tuple[slice, ...]]:
    """The part of ``box`` outside every hole, as disjoint boxes (all slices with unit step).

    Removing one hole cuts off, dimension by dimension, the slab before it and the slab
    after it, and goes on inside the hole's range:

    >>> box_difference((slice(0, 4), slice(0, 6)), [(slice(0, 4), slice(0, 5))])
    [(slice(0, 4, None), slice(5, 6, None))]
    >>> box_difference((slice(0, 3), slice(0, 3)), [(slice(1, 2), slice(1, 2))])  # a ring
    [(slice(0, 1, None), slice(0, 3, None)), (slice(2, 3, None), slice(0, 3, None)), (slice(1, 2, None), slice(0, 1, None)), (slice(1, 2, None), slice(2, 3, None))]
    >>> box_difference((slice(0, 2),), [(slice(0, 1),), (slice(1, 2),)])
    []
    """
    left = [box]
    for hole in holes:
        left = [piece for b in left for piece in _minus(b, hole)]
    return left


def _minus(box: tuple[slice, ...], hole: tuple[slice, ...]) -> list[tuple[slice, ...]]:
    """``box`` without ``hole``: at most two slabs per dimension."""
    bounds = [(max(b.start, h.start), min(b.stop, h.stop)) for b, h in zip(box, hole, strict=True)]
    if any(lo >= hi for lo, hi in bounds):
        return [box]  # they do not meet
    pieces = []
    inner = list(box)
    for k, (lo, hi) in enumerate(bounds):
        if inner[k].start < lo:
            pieces.append((*inner[:k], slice(inner[k].start, lo), *inner[k + 1 :]))
        if hi < inner[k].stop:
            pieces.append((*inner[:k], slice(hi, inner[k].stop), *inner[k + 1 :]))
        inner[k] = slice(lo, hi)
    return pieces


watch(sys.modules[__name__])  # the chunk sizes above: replayed programs made again when one changes
