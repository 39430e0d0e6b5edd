"""The layout the XLA:TPU compiler picks for an array argument, and what it allocates.

XLA's open-source code does not choose TPU layouts (TPU layout assignment is closed
source); this module states the rule learned from the real compiler's choices
(``tests/data/ground_truth/tpu/default_layouts.jsonl``: libtpu on a v5e, compile-only), as a few
small functions you can read. The rule has two parts: **which tiles** an array of a
given element width gets, and **which dimensions go minor**.

**Tiles come from the 32-bit word.** A TPU vector register holds 8 x 128 words of 32
bits. An element narrower than 32 bits is packed ``p = 32 / bits`` to a word along the
second-minor dimension, which is the sub-tile ``(p,1)``; the element's *storage* width
counts, so ``pred`` (stored in a byte) packs like ``s8``:

>>> from layout_algebra.target.tpu import words_per_element_packing
>>> [words_per_element_packing(t) for t in ("f32", "bf16", "s8", "pred", "s4", "f64")]
[1, 2, 4, 4, 8, 1]

An array of rank >= 2 is tiled ``(r,128)`` on its two minor dimensions, then ``(p,1)``.
The row count ``r`` is the smallest of 1, 2, 4, 8 that holds the second-minor dimension
(a "small tile": less padding for thin arrays), but never fewer rows than one packed
word needs (``p``), and at most 8. One more rule is seen for 8-bit types: when the
second-minor dimension is a multiple of 32 the compiler takes the full register,
``(32,128)(4,1)``.

>>> from layout_algebra.target.tpu import tile_rows
>>> [tile_rows("f32", d) for d in (1, 2, 3, 5, 1000)]
[1, 2, 4, 8, 8]
>>> [tile_rows("bf16", d) for d in (1, 3, 64)], [tile_rows("s8", d) for d in (1, 6, 31, 1024)]
([2, 4, 8], [4, 8, 8, 32])
>>> tile_rows("s4", 1)
8

A rank-1 array is tiled ``T(n)`` with ``n`` the power of two that holds it, between one
row of 128 packed words (``128 p`` elements) and 1024, followed by ``(128)(p,1)`` to pack
it; a scalar takes one row, ``T(128 p)``.

>>> from layout_algebra.target.tpu import default_layout
>>> str(default_layout("f32", [2775])), str(default_layout("u16", [8]))
('f32[2775]{0:T(1024)}', 'u16[8]{0:T(256)(128)(2,1)}')
>>> str(default_layout("s8", [])), str(default_layout("s4", [377]))
('s8[]{:T(512)}', 's4[377]{0:T(1024)(128)(8,1)E(4)}')

**The compiler also chooses ``minor_to_major``.** It is not always the descending
default: among the layouts that put some dimension ``m`` minor and some ``s`` second
minor (the others keep their descending order, major), it takes the one that allocates
the fewest bytes; ties go to the layout closest to the default (largest ``m``, then
largest ``s``). An ``s32[147,33]`` is stored column-major, because 33 columns would pad
to 128 lanes but 147 rows pad only to 256:

>>> str(default_layout("s32", [147, 33]))
's32[147,33]{0,1:T(8,128)}'
>>> str(default_layout("u32", [2, 4, 7, 6, 35]))     # the 4 goes second-minor: a (4,128) tile fits it
'u32[2,4,7,6,35]{4,1,3,2,0:T(4,128)}'
>>> default_layout_bytes("u32", [2, 4, 7, 6, 35])
172032

The bytes are the XLA:TPU allocation: the element count padded to the first tile,
``ShapeUtil::ArraySize``'s rule (``size_report(...).first_tile_bytes``). Where this
rule differs from the formats listed in XLA's tiled-layout document is in
``docs/tpu.md``. Element types the sample never showed (``s2``, ``s1``, ``c64``, ...)
follow the same principle (packing by storage width; 64 bits and wider are tiled as 32)
but are extrapolations.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from layout_algebra.meaning.sizes import size_report
from layout_algebra.model.errors import InvalidArgumentError
from layout_algebra.model.primitive_types import PrimitiveType, primitive_type
from layout_algebra.model.shapes import ArrayShape, Layout, Tile

__all__ = [
    "LANES",
    "MAX_RANK1_TILE",
    "SUBLANES",
    "default_layout",
    "default_layout_bytes",
    "minor_tiles",
    "rank1_tiles",
    "scalar_tiles",
    "storage_bits",
    "tile_rows",
    "words_per_element_packing",
]

#: Lanes of a TPU vector register: the minor tile dimension.
LANES = 128
#: Sublanes of a TPU vector register: the most rows a (non 8-bit) tile takes.
SUBLANES = 8
#: The largest rank-1 tile, in elements, seen for every element width.
MAX_RANK1_TILE = 1024


def _element_type(dtype: str | PrimitiveType) -> PrimitiveType:
    t = dtype if isinstance(dtype, PrimitiveType) else primitive_type(dtype)
    if not t.is_array_type:
        raise InvalidArgumentError(
            f"{t.text!r} is not an array element type; a TPU layout needs one such as 'f32'"
        )
    return t


def storage_bits(dtype: str | PrimitiveType) -> int:
    """Bits one element takes in TPU memory: ``pred`` a byte, every other type its bit width.

    >>> storage_bits("pred"), storage_bits("s4"), storage_bits("bf16")
    (8, 4, 16)
    """
    return _element_type(dtype).storage_bit_width


def words_per_element_packing(dtype: str | PrimitiveType) -> int:
    """How many elements share one 32-bit word (1 for 32-bit and wider types)."""
    bits = storage_bits(dtype)
    return 32 // bits if bits < 32 else 1


def _packing_tiles(dtype: str | PrimitiveType) -> tuple[Tile, ...]:
    """The sub-tile ``(p,1)`` that packs ``p`` elements into a word; none for 32 bits and wider."""
    p = words_per_element_packing(dtype)
    return (Tile((p, 1)),) if p > 1 else ()


def _element_size(dtype: str | PrimitiveType) -> int:
    """``E(n)`` for sub-byte types (packed), 0 (unset) otherwise."""
    t = _element_type(dtype)
    return t.bit_width if t.is_sub_byte_non_pred else 0


def _power_of_two_at_least(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def tile_rows(dtype: str | PrimitiveType, second_minor: int) -> int:
    """Rows of the ``(r,128)`` tile for an array whose second-minor dimension is ``second_minor``.

    The smallest power of two that holds the dimension, clamped to ``[p, 8]`` with ``p``
    the packing; types of 8 bits or fewer (``p >= 4``) take ``8 p`` rows (one packed word
    per sublane row: 32 for 8-bit, 64 for 4-bit, 128 for 2-bit types) when the dimension
    is a multiple of ``8 p`` — the XLA:TPU compiler's choice, found by the oracle tests.

    >>> tile_rows("s8", 64), tile_rows("s4", 64), tile_rows("s4", 32), tile_rows("f32", 64)
    (32, 64, 8, 8)
    """
    p = words_per_element_packing(dtype)
    large = SUBLANES * p
    if p >= 4 and second_minor > 0 and second_minor % large == 0:
        return large
    return min(max(_power_of_two_at_least(second_minor), p), max(SUBLANES, p))


def minor_tiles(dtype: str | PrimitiveType, second_minor: int) -> tuple[Tile, ...]:
    """Tiles of a rank >= 2 array: ``(r,128)`` then the packing sub-tile.

    >>> [str(t) for t in minor_tiles("bf16", 3)]
    ['(4,128)', '(2,1)']
    """
    return (Tile((tile_rows(dtype, second_minor), LANES)), *_packing_tiles(dtype))


def rank1_tiles(dtype: str | PrimitiveType, size: int) -> tuple[Tile, ...]:
    """Tiles of a rank-1 array: ``T(n)(128)(p,1)``, ``n`` a power of two in ``[128 p, 1024]``.

    >>> [str(t) for t in rank1_tiles("f8e4m3fn", 1001)]
    ['(1024)', '(128)', '(4,1)']
    """
    smallest = LANES * words_per_element_packing(dtype)
    n = min(max(_power_of_two_at_least(size), smallest), max(MAX_RANK1_TILE, smallest))
    packing = _packing_tiles(dtype)
    return (Tile((n,)), Tile((LANES,)), *packing) if packing else (Tile((n,)),)


def scalar_tiles(dtype: str | PrimitiveType) -> tuple[Tile, ...]:
    """A scalar takes one row of 128 packed words: ``T(128 p)``.

    >>> [str(t) for t in scalar_tiles("f16")]
    ['(256)']
    """
    return (Tile((LANES * words_per_element_packing(dtype),)),)


def _shape(
    t: PrimitiveType, dims: tuple[int, ...], m2m: tuple[int, ...], tiles: tuple[Tile, ...]
) -> ArrayShape:
    return ArrayShape(t, dims, layout=Layout(m2m, tiles, element_size_in_bits=_element_size(t)))


def _candidates(t: PrimitiveType, dims: tuple[int, ...]) -> Iterator[tuple[tuple[int, int], ArrayShape]]:
    """Every layout with ``m`` minor and ``s`` second-minor, the rest descending, major."""
    rank = len(dims)
    for m in range(rank):
        for s in range(rank):
            if s == m:
                continue
            rest = tuple(d for d in range(rank - 1, -1, -1) if d not in (m, s))
            yield (m, s), _shape(t, dims, (m, s, *rest), minor_tiles(t, dims[s]))


def default_layout(dtype: str | PrimitiveType, dims: Sequence[int]) -> ArrayShape:
    """The shape with the layout XLA:TPU picks for an argument of this type and dimensions.

    >>> str(default_layout("bf16", [8, 1280]))
    'bf16[8,1280]{1,0:T(8,128)(2,1)}'
    """
    t = _element_type(dtype)
    dims = tuple(dims)
    for d in dims:
        if not isinstance(d, int) or isinstance(d, bool) or d < 0:
            raise InvalidArgumentError(f"dimensions must be non-negative integers, got {list(dims)}")
    if not dims:
        return _shape(t, dims, (), scalar_tiles(t))
    if len(dims) == 1:
        return _shape(t, dims, (0,), rank1_tiles(t, dims[0]))
    # Fewest allocated bytes first; among equals, the largest (minor, second-minor) pair,
    # i.e. the layout that keeps the default's minor dimensions where they were.
    best_key: tuple[Any, int, int] | None = None
    best: ArrayShape | None = None
    for (m, s), shape in _candidates(t, dims):
        key = (size_report(shape).first_tile_bytes, -m, -s)
        if best_key is None or key < best_key:
            best_key, best = key, shape
    assert best is not None
    return best


def default_layout_bytes(dtype: str | PrimitiveType, dims: Sequence[int]) -> int:
    """Bytes XLA:TPU allocates for that argument: padding to the first tile, as ``ArraySize``."""
    return int(size_report(default_layout(dtype, dims)).first_tile_bytes)
