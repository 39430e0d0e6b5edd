"""What a kernel writer asks of a layout: runs, strides, vector widths, words and vector registers.

Every answer here is read from the layout's map (:func:`~layout_algebra.meaning.layout_map.layout_map`,
the stage pipeline), never from the layout text, and is exact for concrete shapes.

**One dimension at a time.** A tiled layout without combined dimensions (``*``) is
*separable*: each position of its tiled shape is a digit of one logical index, and the
tiled shape is linearized by a weighted sum, so the offset of an element is a sum of one
term per dimension, ``offset(i) = f_0(i_0) + f_1(i_1) + ...`` with
``f_k(t) = offset(t·e_k)`` (proved for symbolic sizes in the catalog:
``proofs/tiled_offsets_are_sums_over_dimensions.py``). :func:`dimension_offsets` is that ``f_k``:

>>> from layout_algebra.target.access import dimension_offsets
>>> dimension_offsets("f32[16,256]{1,0:T(8,128)}", 0).tolist()
[0, 128, 256, 384, 512, 640, 768, 896, 2048, 2176, 2304, 2432, 2560, 2688, 2816, 2944]

Rows step by 128 elements inside a tile and jump at the tile boundary (row 8 starts the
next row of tiles, 2048 elements on). :func:`dimension_access` names that: the **stride**
(the offset step between neighbours, in elements, bits and bytes) and the **run**, the
largest ``R`` such that every aligned block of ``R`` indices along the dimension
(``[qR, qR+R)``, the other indices fixed) is stored at ``o, o+s, ..., o+(R-1)s``. Every
step that differs from the stride sits at a multiple of ``R``, so ``R`` is the gcd of
the places where the step breaks (the whole dimension when it never does):

>>> from layout_algebra.target.access import dimension_access
>>> print(dimension_access("f32[16,256]{1,0:T(8,128)}", 0))
dimension 0 of f32[16,256]{1,0:T(8,128)}: stride 128 elements (4096 bits, 512 bytes), run 8: at i0 = 8 the offset steps by 1152 elements instead of 128 (a tile boundary)
>>> print(dimension_access("f32[16,256]{1,0:T(8,128)}", 1))
dimension 1 of f32[16,256]{1,0:T(8,128)}: stride 1 element (32 bits, 4 bytes), run 128: at i1 = 128 the offset steps by 897 elements instead of 1 (a tile boundary)

bf16 in ``(8,128)(2,1)`` pairs rows inside 32-bit words, so the rows of a column are two
apart-by-one then a jump of 255: a run of only 2. :func:`run_from` counts the run from
a given start instead (to the next break):

>>> dimension_access("bf16[16,256]{1,0:T(8,128)(2,1)}", 0).run
2
>>> from layout_algebra.target.access import run_from
>>> run_from("f32[16,256]{1,0:T(8,128)}", 1, 100), run_from("f32[16,100]", 1, 10)
(28, 90)

**Vector width.** :func:`vector_width` is the largest power of two ``v`` such that from
every *aligned* start (``i_k`` a multiple of ``v``, any other indices) the ``v`` elements
``i_k, ..., i_k + v - 1`` exist (``v`` divides the dimension), are consecutive in memory
(stride 1, inside one run: ``v`` divides the run) and start at an offset that is a
multiple of ``v`` elements (so of ``v`` times the element size: an aligned ``v``-element
load):

>>> from layout_algebra.target.access import vector_width
>>> print(vector_width("f32[16,256]{1,0:T(8,128)}", 1))
128 elements (512 bytes) along dimension 1 of f32[16,256]{1,0:T(8,128)}: runs are 128 long: at i1 = 128 the offset steps by 897 elements instead of 1 (a tile boundary)
>>> print(vector_width("f32[16,100]", 1))
4 elements (16 bytes) along dimension 1 of f32[16,100]{1,0}: blocks of 4 tile the run of 100 elements; 8 do not
>>> print(vector_width("f32[16,256]{1,0:T(8,128)}", 0))
1 element (4 bytes) along dimension 0 of f32[16,256]{1,0:T(8,128)}: not contiguous (stride 128 elements)

**Words.** Elements narrower than 32 bits share 32-bit words. :func:`word_of` gives an
element's word and its slot in it (the slot is the bit offset in the word divided by the
element size), :func:`word_elements` the elements of a word, slot by slot (``None`` is
padding). In bf16 ``(8,128)(2,1)`` a word holds two *rows* of one column:

>>> from layout_algebra.target.access import word_elements, word_of
>>> word_of("bf16[16,256]{1,0:T(8,128)(2,1)}", (1, 3))
WordPosition(word=3, slot=1, slots=2, bit=16)
>>> word_elements("bf16[16,256]{1,0:T(8,128)(2,1)}", 3)
((0, 3), (1, 3))
>>> word_elements("s4[16,256]{1,0:T(8,128)(8,1)E(4)}", 0)
((0, 0), (1, 0), (2, 0), (3, 0), (4, 0), (5, 0), (6, 0), (7, 0))

**TPU vector registers.** A fact (``tests/data/ground_truth/xla-facts.md``, and
:mod:`layout_algebra.target.tpu`): a TPU vector register holds 8 sublanes x 128 lanes of 32-bit
words, 4 KiB. A *definition*, stated here and nowhere assumed about the hardware: for the
``(8,128)`` family of layouts (first tile ``(r,128)``, then the packing tile ``(p,1)``
with ``p = 32 / bits`` for narrow types), :func:`vreg_position` places an element by its
bit offset ``b`` in the buffer: register ``⌊b / 32768⌋``, sublane ``⌊b / 4096⌋ mod 8``,
lane ``⌊b / 32⌋ mod 128`` and slot ``(b mod 32) / bits`` — the register a straight
4 KiB vector load of that part of the buffer fills. In this family each sublane is one
row of 128 packed words of a tile, so the lane is the column in the tile and the slot the
row in the packed word:

>>> from layout_algebra.target.access import vreg_position
>>> vreg_position("bf16[32,256]{1,0:T(16,128)(2,1)}", (5, 130))
VregPosition(vreg=1, sublane=2, lane=2, slot=1, tile=1)

Symbolic sizes are refused (``specialize`` them first), and so are tiles that combine
dimensions (``*``), for which the offset is not a sum over dimensions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from layout_algebra.meaning.layout_map import LayoutMap, layout_map
from layout_algebra.model.errors import InvalidArgumentError
from layout_algebra.model.shapes import Shape
from layout_algebra.target.tpu import LANES, SUBLANES

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = [
    "WORD_BITS",
    "DimensionAccess",
    "VectorWidth",
    "VregPosition",
    "WordPosition",
    "dimension_access",
    "dimension_offsets",
    "run_from",
    "separable_map",
    "vector_width",
    "vreg_position",
    "word_elements",
    "word_of",
]

#: Bits in the word that narrow elements are packed into (a TPU sublane lane, a GPU register).
WORD_BITS = 32


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


# ------------------------------------------------------------------ the separable map
def separable_map(shape: Shape | str) -> LayoutMap:
    """The layout map of ``shape``, checked to be concrete and a sum over dimensions.

    Raises ``ValueError`` quoting the shape for symbolic sizes and for tiles that combine
    dimensions (``*``).
    """
    m = layout_map(shape)
    if m.is_symbolic:
        raise InvalidArgumentError(
            f"{m.shape}: symbolic sizes; specialize() the shape to concrete sizes first"
        )
    if 0 in m.shape.dimensions:
        raise InvalidArgumentError(f"{m.shape}: a dimension of size 0; the array has no elements to access")
    combined = [str(t) for t in m.shape.effective_layout.tiles if t.has_combine_dimension]
    if combined:
        raise InvalidArgumentError(
            f"{m.shape}: the tile {combined[0]} combines dimensions ('*'), so an element's offset is not a "
            "sum of one term per dimension; these queries need it to be"
        )
    return m


def _checked_dim(m: LayoutMap, dim: int) -> int:
    if m.rank == 0:
        raise InvalidArgumentError(f"{m.shape}: a scalar has no dimensions to query")
    if isinstance(dim, bool) or not isinstance(dim, int) or not 0 <= dim < m.rank:
        raise InvalidArgumentError(
            f"{m.shape}: dimension {dim!r} is not one of 0..{m.rank - 1} (rank {m.rank})"
        )
    return dim


def _offsets(m: LayoutMap, dim: int) -> np.ndarray:
    import numpy as np

    size = int(m.shape.dimensions[dim])
    t = np.arange(size, dtype=np.int64)
    index = tuple(t if k == dim else np.zeros_like(t) for k in range(m.rank))
    (position,) = m.apply(index, through=len(m.stages) - 1)
    return np.asarray(position, dtype=np.int64) + np.zeros_like(t)


def dimension_offsets(shape: Shape | str, dim: int) -> np.ndarray:
    """``f_k``: the element offset of ``t·e_dim`` for every ``t`` along dimension ``dim``.

    The offset of any element is the sum of these over its dimensions (see the module
    docstring); ``f_k(0) = 0``.
    """
    m = separable_map(shape)
    return _offsets(m, _checked_dim(m, dim))


# ------------------------------------------------------------------ runs and strides
@dataclass(frozen=True)
class DimensionAccess:
    """How dimension ``dim`` of ``shape`` is stored: its stride and its run.

    ``stride`` is the offset step between neighbours inside a run, in elements (0 for a
    dimension of size 1); ``run`` the aligned run ``R`` (module docstring); ``break_at``
    the first index where the step is not the stride (``None``: never) and ``jump`` that
    step.
    """

    shape: str
    dim: int
    size: int
    element_bits: int
    stride: int
    run: int
    break_at: int | None
    jump: int | None

    @property
    def stride_bits(self) -> int:
        return self.stride * self.element_bits

    @property
    def stride_bytes(self) -> int | None:
        """The stride in bytes, or ``None`` when it is not a whole number of bytes."""
        return self.stride_bits // 8 if self.stride_bits % 8 == 0 else None

    @property
    def contiguous(self) -> bool:
        """Neighbours are adjacent in memory (stride 1 element) inside a run."""
        return self.stride == 1

    @property
    def reason(self) -> str:
        if self.break_at is None:
            return "uniform over the whole dimension"
        what = (
            "a tile boundary" if self.jump is not None and self.jump > self.stride else "the layout's order"
        )
        return (
            f"at i{self.dim} = {self.break_at} the offset steps by {_plural(int(self.jump or 0), 'element')} "
            f"instead of {self.stride} ({what})"
        )

    def describe(self) -> str:
        """``stride 1 element (32 bits, 4 bytes), run 128: <reason>``."""
        size = f"{self.stride_bits} bits"
        if self.stride_bytes is not None:
            size += f", {_plural(self.stride_bytes, 'byte')}"
        return f"stride {_plural(self.stride, 'element')} ({size}), run {self.run}: {self.reason}"

    def __str__(self) -> str:
        return f"dimension {self.dim} of {self.shape}: {self.describe()}"

    def to_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "stride_bits": self.stride_bits,
            "stride_bytes": self.stride_bytes,
            "contiguous": self.contiguous,
            "reason": self.reason,
        }


def _breaks(f: np.ndarray, stride: int) -> list[int]:
    """The indices ``t`` at which ``f(t) - f(t-1)`` is not ``stride``."""
    import numpy as np

    steps = np.diff(f)
    return [int(t) + 1 for t in np.nonzero(steps != stride)[0]]


def dimension_access(shape: Shape | str, dim: int) -> DimensionAccess:
    """The stride and the aligned run of dimension ``dim`` (see the module docstring)."""
    m = separable_map(shape)
    dim = _checked_dim(m, dim)
    f = _offsets(m, dim)
    size = len(f)
    stride = int(f[1] - f[0]) if size > 1 else 0
    breaks = _breaks(f, stride)
    run = math.gcd(*breaks) if breaks else size
    first = breaks[0] if breaks else None
    jump = int(f[first] - f[first - 1]) if first is not None else None
    return DimensionAccess(str(m.shape), dim, size, m.element_bits, stride, run, first, jump)


def run_from(shape: Shape | str, dim: int, start: int) -> int:
    """How many consecutive indices from ``start`` along ``dim`` are stored at the dimension's
    stride (to the next break, or the end of the dimension)."""
    m = separable_map(shape)
    dim = _checked_dim(m, dim)
    f = _offsets(m, dim)
    size = len(f)
    if isinstance(start, bool) or not isinstance(start, int) or not 0 <= start < size:
        raise InvalidArgumentError(
            f"{m.shape}: start {start!r} is not an index of dimension {dim} (size {size})"
        )
    stride = int(f[1] - f[0]) if size > 1 else 0
    later = [t for t in _breaks(f, stride) if t > start]
    return (later[0] if later else size) - start


# ------------------------------------------------------------------ vector width
@dataclass(frozen=True)
class VectorWidth:
    """The widest aligned vector along a dimension: ``elements`` (a power of two) and its size."""

    shape: str
    dim: int
    elements: int
    element_bits: int
    limit: str

    @property
    def bits(self) -> int:
        return self.elements * self.element_bits

    @property
    def bytes(self) -> int | None:
        """The vector's size in bytes, ``None`` when it is not whole bytes (``s4``, one element)."""
        return self.bits // 8 if self.bits % 8 == 0 else None

    def describe(self) -> str:
        """``128 elements (512 bytes)``, and what stops it being wider."""
        size = _plural(self.bytes, "byte") if self.bytes is not None else _plural(self.bits, "bit")
        text = f"{_plural(self.elements, 'element')} ({size})"
        return f"{text}: {self.limit}" if self.limit else text

    def __str__(self) -> str:
        text = self.describe()
        head, _, limit = text.partition(": ")
        where = f"{head} along dimension {self.dim} of {self.shape}"
        return f"{where}: {limit}" if limit else where

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "bits": self.bits, "bytes": self.bytes}


def _aligned(m: LayoutMap, dim: int, f: np.ndarray, v: int) -> str:
    """Why a ``v``-element vector from an aligned start is misaligned, or ``""``."""
    starts = f[::v]
    if (starts % v).any():
        t = int(v * (starts % v != 0).argmax())
        return f"the vector at i{dim} = {t} starts at element {int(f[t])}, not a multiple of {v}"
    for k in range(m.rank):
        if k == dim:
            continue
        g = _offsets(m, k)
        if (g % v).any():
            t = int((g % v != 0).argmax())
            return f"moving i{k} to {t} shifts the offset by {int(g[t])} elements, not a multiple of {v}"
    return ""


def vector_width(shape: Shape | str, dim: int) -> VectorWidth:
    """The largest power of two ``v`` of elements along ``dim`` loadable as one aligned vector
    from every aligned start (see the module docstring), with the reason it is not larger."""
    access = dimension_access(shape, dim)
    m = separable_map(shape)
    bits = m.element_bits
    if access.size == 1:
        return VectorWidth(access.shape, dim, 1, bits, "the dimension has size 1")
    if not access.contiguous:
        return VectorWidth(
            access.shape, dim, 1, bits, f"not contiguous (stride {_plural(access.stride, 'element')})"
        )
    f = _offsets(m, dim)
    whole = math.gcd(access.run, access.size)  # every aligned block lies inside one run and the dimension
    v = whole & -whole  # the largest power of two dividing both
    limit = ""
    if v < access.run:
        limit = (
            f"blocks of {v} tile the run of {access.run} elements"
            + (f" and the dimension of {access.size}" if access.run != access.size else "")
            + f"; {2 * v} do not"
        )
    elif access.run < access.size:
        limit = f"runs are {access.run} long: {access.reason}"
    while v > 1:
        why = _aligned(m, dim, f, v)
        if not why:
            break
        limit = why
        v //= 2
    return VectorWidth(access.shape, dim, v, bits, limit)


# ------------------------------------------------------------------ words
@dataclass(frozen=True)
class WordPosition:
    """An element's 32-bit word in the buffer, its slot there, the slots per word and its first bit."""

    word: int
    slot: int
    slots: int
    bit: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _slots(m: LayoutMap) -> int:
    bits = m.element_bits
    if bits < WORD_BITS and WORD_BITS % bits:
        raise InvalidArgumentError(
            f"{m.shape}: {bits}-bit elements do not divide a {WORD_BITS}-bit word evenly"
        )
    return max(1, WORD_BITS // bits)


def word_of(shape: Shape | str, index: Sequence[int]) -> WordPosition:
    """The 32-bit word holding element ``index`` (its first word, for elements wider than 32 bits)."""
    m = layout_map(shape)
    slots = _slots(m)
    bit = int(m.forward(index, unit="bit"))
    return WordPosition(bit // WORD_BITS, (bit % WORD_BITS) // m.element_bits, slots, bit % WORD_BITS)


def word_elements(shape: Shape | str, word: int) -> tuple[tuple[int, ...] | None, ...]:
    """The elements stored in 32-bit word ``word``, by slot; ``None`` for a padding slot."""
    m = layout_map(shape)
    slots = _slots(m)
    if m.is_symbolic:
        raise InvalidArgumentError(
            f"{m.shape}: symbolic sizes; specialize() the shape to concrete sizes first"
        )
    words = -(-int(m.size_in_bits) // WORD_BITS)
    if isinstance(word, bool) or not isinstance(word, int) or not 0 <= word < words:
        raise InvalidArgumentError(f"{m.shape}: word {word!r} is outside the buffer of {words} 32-bit words")
    first = word * WORD_BITS // m.element_bits
    out = []
    for slot in range(slots):
        position = first + slot
        out.append(m.inverse(position) if position < m.size_in_elements else None)
    return tuple(out)


# ------------------------------------------------------------------ TPU vector registers
@dataclass(frozen=True)
class VregPosition:
    """Where an element lands in the TPU vector registers holding the buffer (a definition:
    see the module docstring): register, sublane 0..7, lane 0..127, slot in the 32-bit word,
    and the number of its first-level tile."""

    vreg: int
    sublane: int
    lane: int
    slot: int
    tile: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _vreg_family(m: LayoutMap) -> int:
    """Elements per first-level tile, or ``ValueError`` when the layout is not ``(r,128)(p,1)``."""
    tiles = m.shape.effective_layout.tiles
    bits = m.element_bits
    where = f"{m.shape}: not an (8,128)-family layout"
    if bits > WORD_BITS:
        raise InvalidArgumentError(f"{where}: {bits}-bit elements span several 32-bit lanes")
    if not tiles or len(tiles[0].dimensions) != 2 or tiles[0].dimensions[1] != LANES:
        raise InvalidArgumentError(
            f"{where}: the first tile must be (r,{LANES}) so that a tile row fills the {LANES} lanes"
        )
    rows = tiles[0].dimensions[0]
    p = WORD_BITS // bits
    packing = tuple(t.dimensions for t in tiles[1:])
    expected = ((p, 1),) if p > 1 else ()
    if packing != expected:
        wanted = f"({p},1)" if p > 1 else "no further tile"
        raise InvalidArgumentError(
            f"{where}: {bits}-bit elements need {wanted} after the first tile, not {packing}"
        )
    if (
        not isinstance(rows, int)
        or rows % p
        or not (SUBLANES % (rows // p) == 0 or (rows // p) % SUBLANES == 0)
    ):
        raise InvalidArgumentError(
            f"{where}: a ({rows},{LANES}) tile of {p}-packed rows does not fill whole sublanes of "
            f"{SUBLANES}-sublane registers"
        )
    return rows * LANES


def vreg_position(shape: Shape | str, index: Sequence[int]) -> VregPosition:
    """The TPU vector-register position of element ``index`` (see the module docstring)."""
    m = layout_map(shape)
    tile_elements = _vreg_family(m)
    bit = int(m.forward(index, unit="bit"))
    word = bit // WORD_BITS
    return VregPosition(
        vreg=word // (SUBLANES * LANES),
        sublane=(word // LANES) % SUBLANES,
        lane=word % LANES,
        slot=(bit % WORD_BITS) // m.element_bits,
        tile=int(m.forward(index)) // tile_elements,
    )
