"""Independent oracles the tests compare the package against, written once.

``nested_tiling`` is XLA's ``LinearIndexForNestedTiling`` (xla-facts §5.1, the tiled-layout
document's nested tiling) written out directly from the document, sharing no code with the
package: dimensions in physical order, then per tile the last ``k`` dims ``d`` become
``(ceil(d/t), t)`` (missing leading dims count as 1), the index likewise ``(i//t, i%t)``,
then the row-major number of the index in the final shape.

``reference_pack`` is ``numpy_eval.pack`` computed another way: every element's position from
``LayoutMap.apply`` on index arrays, its bits written one by one into a stream of fill bits.

``moves_no_data`` decides a bitcast by real bytes: pack arrays of distinct values into one
layout, unpack the bytes as the other, and compare element by element — sharing no code
with the bitcast decisions it checks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np

from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.model.primitive_types import PrimitiveType
from layout_algebra.model.syntax import as_shape
from layout_algebra.packing.formats import numpy_dtype
from layout_algebra.packing.numpy_eval import pack, unpack


def nested_tiling(
    dims: Sequence[int], minor_to_major: Sequence[int], tiles: Sequence[Sequence[int]], index: Sequence[int]
) -> tuple[int, tuple[int, ...]]:
    """``(linear index, tiled shape)`` of ``index`` (no ``*`` in the tiles)."""
    shape = [dims[d] for d in reversed(minor_to_major)]
    idx = [index[d] for d in reversed(minor_to_major)]
    for tile in tiles:
        k = len(tile)
        while len(shape) < k:  # virtual leading dims of size 1
            shape.insert(0, 1)
            idx.insert(0, 0)
        s = len(shape) - k
        shape = shape[:s] + [-(-shape[s + i] // tile[i]) for i in range(k)] + list(tile)
        idx = idx[:s] + [idx[s + i] // tile[i] for i in range(k)] + [idx[s + i] % tile[i] for i in range(k)]
    linear = 0
    for i, n in zip(idx, shape, strict=True):
        linear = linear * n + i
    return linear, tuple(shape)


def nested_linear_index(
    dims: Sequence[int], minor_to_major: Sequence[int], tiles: Sequence[Sequence[int]], index: Sequence[int]
) -> int:
    """XLA's ``LinearIndexForNestedTiling`` of ``index``."""
    return nested_tiling(dims, minor_to_major, tiles, index)[0]


# ------------------------------------------------------------------ packing, another way


def combined_nested_tiling(
    dims: Sequence[int],
    minor_to_major: Sequence[int],
    tiles: Sequence[Sequence[int | None]],
    index: Sequence[int],
) -> tuple[int, tuple[int, ...]]:
    """``(linear index, tiled shape)`` of ``index``, with combine dimensions (``None`` for ``*``).

    XLA's tiled-layout document (xla-facts §5.3): within a tile applied to the last ``k``
    dimensions, a ``*`` at position ``i`` merges that dimension into the next more minor one
    (row-major: ``x = x_i * d_{i+1} + x_{i+1}``, ``d_{i+1} := d_i * d_{i+1}``); the entry leaves the
    shape and the tile, and the tile then applies as in :func:`nested_tiling`.
    """
    shape = [dims[d] for d in reversed(minor_to_major)]
    idx = [index[d] for d in reversed(minor_to_major)]
    for tile in tiles:
        k = len(tile)
        while len(shape) < k:
            shape.insert(0, 1)
            idx.insert(0, 0)
        s = len(shape) - k
        kept_shape, kept_idx, kept_tile = shape[:s], idx[:s], []
        carry_size, carry_index = 1, 0
        for i in range(k):
            carry_size, carry_index = carry_size * shape[s + i], carry_index * shape[s + i] + idx[s + i]
            if tile[i] is None:  # merged into the next more minor dimension
                continue
            kept_shape.append(carry_size)
            kept_idx.append(carry_index)
            kept_tile.append(tile[i])
            carry_size, carry_index = 1, 0
        s = len(kept_shape) - len(kept_tile)
        shape = (
            kept_shape[:s]
            + [-(-kept_shape[s + i] // t) for i, t in enumerate(kept_tile)]
            + [int(t) for t in kept_tile]
        )
        idx = (
            kept_idx[:s]
            + [kept_idx[s + i] // t for i, t in enumerate(kept_tile)]
            + [kept_idx[s + i] % t for i, t in enumerate(kept_tile)]
        )
    linear = 0
    for i, n in zip(idx, shape, strict=True):
        linear = linear * n + i
    return linear, tuple(shape)


def xla_array_size(
    dims: Sequence[int],
    minor_to_major: Sequence[int],
    tiles: Sequence[Sequence[int]],
    tail_alignment: int,
    slot_bits: int,
) -> int:
    """XLA's ``ShapeUtil::ArraySize`` in bytes (xla-facts §4.2; no split configs, no ``*``):
    untiled, the elements' bytes (``L(n)`` ignored); tiled, the first tile's padding only,
    then ``L(n)``."""
    n = 1
    if not tiles:
        for d in dims:
            n *= d
        return -(-n * slot_bits // 8)
    t = tiles[0]
    k, r = len(t), len(dims)
    for p in range(k):
        d = dims[minor_to_major[p]] if p < r else 1
        n *= -(-d // t[k - 1 - p]) * t[k - 1 - p]
    for p in range(k, r):
        n *= dims[minor_to_major[p]]
    n = -(-n // tail_alignment) * tail_alignment
    return -(-n * slot_bits // 8)


# ------------------------------------------- the same, read off a package ArrayShape
#: Bits of one element of each type drawn, and the slot XLA gives it without ``E(n)`` (a byte at least).
TYPE_BITS = {"s32": 32, "u32": 32, "f32": 32, "bf16": 16, "s8": 8, "s4": 4, "pred": 8}


def slot_bits(shape: Any) -> int:
    e = shape.effective_layout.element_size_in_bits
    return e if e else max(8, TYPE_BITS[shape.element_type.text])


def tiles_of(shape: Any) -> list[list[int | None]]:
    return [[None if d < 0 else int(d) for d in tile.dimensions] for tile in shape.effective_layout.tiles]


def oracle_slots(shape: Any) -> tuple[np.ndarray, int]:
    """The element slot of every element (an array of the logical shape), and the slots the
    buffer has (tiles' padding, then ``L(n)``), by XLA's semantics written out."""
    dims = tuple(int(d) for d in shape.dimensions)
    layout = shape.effective_layout
    out = np.zeros(dims, dtype=np.int64)
    tiled_shape: tuple[int, ...] = ()
    for index in np.ndindex(*dims):
        out[index], tiled_shape = combined_nested_tiling(dims, layout.minor_to_major, tiles_of(shape), index)
    if not tiled_shape:
        _, tiled_shape = combined_nested_tiling(
            dims, layout.minor_to_major, tiles_of(shape), (0,) * len(dims)
        )
    slots = math.prod(tiled_shape, start=1)
    alignment = layout.tail_padding_alignment_in_elements
    return out, -(-slots // alignment) * alignment


def tiled_shape_slots(shape: Any) -> int:
    """The slots of the tiled shape alone (every tile level's padding, no ``L(n)``)."""
    dims = tuple(int(d) for d in shape.dimensions)
    layout = shape.effective_layout
    _, tiled_shape = combined_nested_tiling(dims, layout.minor_to_major, tiles_of(shape), (0,) * len(dims))
    return math.prod(tiled_shape, start=1)


def xla_allocation(shape: Any) -> int | None:
    """``ShapeUtil::ArraySize`` by the oracle (``None`` with ``*``, which it does not define)."""
    tiles = tiles_of(shape)
    if any(d is None for tile in tiles for d in tile):
        return None
    layout = shape.effective_layout
    dims = [int(d) for d in shape.dimensions]
    return xla_array_size(
        dims, layout.minor_to_major, tiles, layout.tail_padding_alignment_in_elements, slot_bits(shape)
    )  # type: ignore[arg-type]


def raw_bytes(a: np.ndarray) -> np.ndarray:
    """The bytes of an array's elements, in row-major order (scalars included)."""
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def bits_of(value: int, count: int) -> np.ndarray:
    return np.array([(value >> k) & 1 for k in range(count)], np.uint8)


def fill_stream(m, fill: int) -> np.ndarray:
    """The bit stream of a buffer holding nothing but padding."""
    size = m.size_in_bytes
    if m.element_bits >= 8:
        return np.unpackbits(np.full(size, fill, np.uint8), bitorder="little")
    slots = -(-size * 8 // m.element_bits)  # the bits after the last whole slot: its beginning
    return np.tile(bits_of(fill, m.element_bits), slots)[: size * 8]


def reference_pack(x: np.ndarray, shape: str, fill: int = 0) -> np.ndarray:
    """pack() computed from LayoutMap.apply on index arrays: positions of all elements at once."""
    m = layout_map(shape)
    bits = m.element_bits
    index = tuple(np.indices(x.shape).reshape(x.ndim, x.size))
    positions = np.asarray(m.apply(index, through=len(m.stages) - 1)[0], dtype=np.int64).reshape(x.size)
    raw = np.ascontiguousarray(x).reshape(x.size).view(np.uint8).reshape(x.size, x.dtype.itemsize)
    if bits == 8 * x.dtype.itemsize:
        slots = np.full((m.size_in_elements, raw.shape[1]), fill, np.uint8)
        slots[positions] = raw
        return slots.reshape(-1)
    # a slot of any other size: the element's stored bits from its lowest, cut to the slot or
    # zero above; bit k of element position p is bit p*E + k of the buffer
    stream = fill_stream(m, fill)
    stored = np.unpackbits(raw, axis=1, bitorder="little")[:, :bits]
    slot = np.zeros((x.size, bits), np.uint8)
    slot[:, : stored.shape[1]] = stored
    stream[positions[:, None] * bits + np.arange(bits)] = slot
    return np.packbits(stream, bitorder="little")


def random_array(m, rng: np.random.Generator) -> np.ndarray:
    """Random bits: any byte pattern for whole-byte types (NaNs included), valid codes otherwise."""
    dtype = numpy_dtype(m.shape.element_type)
    dims = tuple(m.logical_dimensions)
    n = math.prod(dims)
    if m.shape.element_type is PrimitiveType.PRED:
        return rng.integers(0, 2, dims).astype(bool)
    if m.element_bits < 8 or m.shape.element_type.bit_width < 8:
        return (
            rng.integers(0, 1 << m.shape.element_type.bit_width, n).astype(np.uint8).view(dtype).reshape(dims)
        )
    return rng.integers(0, 256, n * dtype.itemsize, dtype=np.uint8).view(dtype).reshape(dims)


# ---------------------------------------------------------- bitcasts, by real bytes


def value_rounds(count: int, element: str) -> list[np.ndarray]:
    """Rounds of nonzero values such that no two elements agree in every round (padding is
    packed as 0, so a padding slot read as an element never passes for one)."""
    ids = np.arange(count, dtype=np.int64)
    if element == "f32":
        return [(ids + 1).astype(np.uint32).view(np.float32)]
    digit, make = {
        "bf16": (15, lambda d: (d + 1).astype(np.uint16).view(ml_dtypes.bfloat16)),
        "s8": (7, lambda d: (d - 128).astype(np.int8)),
        "s4": (3, lambda d: (d - 8).astype(ml_dtypes.int4)),
    }[element]
    rounds = max(1, math.ceil(max(count, 1).bit_length() / digit))
    return [make((ids >> (digit * k)) & ((1 << digit) - 1)) for k in range(rounds)]


def bit_patterns(values: np.ndarray) -> np.ndarray:
    return values.astype(np.int8) if values.dtype == ml_dtypes.int4 else values.view(f"u{values.itemsize}")


def _physical(shape: Any) -> tuple[int, ...]:
    return tuple(reversed(shape.effective_layout.minor_to_major))


def _moved(values: np.ndarray, a: Any, b: Any, correspondence: str) -> np.ndarray:
    """The array ``b`` must hold: ``values`` (``a``'s, flat row-major) reshaped, or read in
    both sides' physical orders (XLA's transpose-reshape-transpose)."""
    x = values.reshape(a.dimensions)
    if correspondence == "reshape":
        return x.reshape(b.dimensions)
    pa, pb = _physical(a), _physical(b)
    y = np.transpose(x, pa).reshape([b.dimensions[d] for d in pb])
    return np.transpose(y, np.argsort(pb))


def moves_no_data(src: Any, dst: Any, correspondences: Sequence[str] = ("reshape",)) -> bool:
    """Whether ``dst`` reads ``src``'s bytes as the same elements, by packing: the same
    memory space and element count, buffers of one size (the cases here have no ``L(n)``
    and later tiles that divide the first, so the exact buffer is XLA's allocation), and
    unpacking ``src``'s bytes as ``dst`` gives each element its value under one of the
    ``correspondences``."""
    a, b = as_shape(src), as_shape(dst)
    if a.effective_layout.memory_space != b.effective_layout.memory_space:
        return False
    count = math.prod(a.dimensions, start=1)
    if count != math.prod(b.dimensions, start=1):
        return False
    rounds = value_rounds(count, a.element_type.text)
    buffers = [pack(v.reshape(a.dimensions), a, fill=0) for v in rounds]
    empty = pack(np.zeros(b.dimensions, rounds[0].dtype), b, fill=0)
    if buffers[0].size != empty.size:
        return False
    read = [bit_patterns(unpack(buffer, b)) for buffer in buffers]
    return any(
        all(np.array_equal(r, bit_patterns(_moved(v, a, b, c))) for r, v in zip(read, rounds, strict=True))
        for c in correspondences
    )
