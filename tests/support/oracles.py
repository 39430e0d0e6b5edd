"""Independent oracles the tests compare the package against, written once.

``nested_tiling`` is XLA's ``LinearIndexForNestedTiling`` (xla-facts §5.1, the tiled-layout
document's nested tiling) written out directly from the document, sharing no code with the
package: dimensions in physical order, then per tile the last ``k`` dims ``d`` become
``(ceil(d/t), t)`` (missing leading dims count as 1), the index likewise ``(i//t, i%t)``,
then the row-major number of the index in the final shape.
"""

from __future__ import annotations

from collections.abc import Sequence


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
