"""Independent oracles the tests compare the package against, written once.

``nested_tiling`` is XLA's ``LinearIndexForNestedTiling`` (xla-facts §5.1, the tiled-layout
document's nested tiling) written out directly from the document, sharing no code with the
package: dimensions in physical order, then per tile the last ``k`` dims ``d`` become
``(ceil(d/t), t)`` (missing leading dims count as 1), the index likewise ``(i//t, i%t)``,
then the row-major number of the index in the final shape.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np


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
