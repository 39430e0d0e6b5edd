"""Pack NumPy arrays into a layout's exact bytes, and unpack them: the stages, run on whole arrays.

A runtime that feeds a device, or reads a device dump, needs the physical bytes of an array
in its layout. :func:`pack` produces them; :func:`unpack` reads them back. Both are a third
interpreter of the stage pipeline that :mod:`layout_algebra.meaning.layout_map` evaluates on
numbers and SymPy evaluates as formulas: here each stage becomes an operation on whole
NumPy arrays.

>>> import numpy as np
>>> import ml_dtypes
>>> from layout_algebra.packing.numpy_eval import pack, unpack

Column-major is a transpose:

>>> x = np.arange(6, dtype=np.float32).reshape(2, 3)
>>> pack(x, "f32[2,3]{0,1}").view(np.float32)
array([0., 3., 1., 4., 2., 5.], dtype=float32)

Tiles pad. The tiled-layout document's Figure 1, ``f32[3,5]{1,0:T(2,2)}``, has 24 slots for
15 elements; ``fill`` is the byte written into every padding byte (here ``0xFF``, which
reads back as NaN):

>>> y = np.arange(15, dtype=np.float32).reshape(3, 5)
>>> buf = pack(y, "f32[3,5]{1,0:T(2,2)}", fill=0xFF)
>>> buf.size
96
>>> buf.view(np.float32).reshape(6, 4)      # one 2x2 tile per row
array([[ 0.,  1.,  5.,  6.],
       [ 2.,  3.,  7.,  8.],
       [ 4., nan,  9., nan],
       [10., 11., nan, nan],
       [12., 13., nan, nan],
       [14., nan, nan, nan]], dtype=float32)
>>> np.array_equal(unpack(buf, "f32[3,5]{1,0:T(2,2)}"), y)
True

bf16 under ``(8,128)(2,1)``: the ``(2,1)`` tile puts rows 2k and 2k+1 of a column next to
each other, so each little-endian 32-bit word holds row 2k in its low half:

>>> z = np.zeros((16, 256), ml_dtypes.bfloat16)
>>> z[0, 0], z[1, 0], z[0, 1], z[1, 1] = 1, 2, 3, 4
>>> packed = pack(z, "bf16[16,256]{1,0:T(8,128)(2,1)}")
>>> packed.view(ml_dtypes.bfloat16)[:4]             # column 0: rows 0, 1; column 1: rows 0, 1
array([1, 2, 3, 4], dtype=bfloat16)
>>> [hex(w) for w in packed.view(np.uint32)[:2]]     # bf16 1.0 is 0x3f80, 2.0 is 0x4000
['0x40003f80', '0x40804040']

Sub-byte elements: with ``E(4)`` two ``s4`` share a byte; with ``E(1)`` eight ``pred`` do.
Element position ``p`` occupies bits ``[p*E, (p+1)*E)`` of the buffer read as a
little-endian bit stream, so the first element of a byte is in its low bits:

>>> pack(np.array([1, 2, 3, -1], dtype=ml_dtypes.int4), "s4[4]{0:E(4)}")
array([ 33, 243], dtype=uint8)
>>> [hex(b) for b in _]
['0x21', '0xf3']
>>> pack(np.array([1, 0, 0, 0, 0, 0, 0, 1, 1], dtype=bool), "pred[9]{0:E(1)}")
array([129,   1], dtype=uint8)

This is XLA's own convention: ``xla::PackIntN`` / ``UnpackIntN`` in ``xla/util.h`` put input
element ``j`` of each byte at ``<< (kBitsPerElement * j)`` (read in ``xla/util.h`` of the
``mridul-sahu/xla`` fork of openxla/xla, commit ``67a92d14``). Older XLA releases packed
the other way round (``<< (kBitsPerElement * (kElementsPerByte - j - 1))``, first element in
the high bits), so buffers written by an XLA from before that change have their nibbles
swapped.

Choices made here
-----------------
* **Element types.** Every XLA array type that NumPy can hold: pred (``bool``), s8..s64,
  u8..u64, f16, f32, f64, c64, c128, and with ``ml_dtypes`` bf16, the f8 types, f4e2m1fn,
  s4/u4, s2/u2, s1/u1. :func:`numpy_dtype` gives the dtype. The array's dtype must be
  exactly that one (byte order aside): nothing is cast, because a cast changes bits.
* **Element size.** The layout map's ``element_bits``: ``E(n)`` if given, else the storage
  width in whole bytes (an ``s4`` without ``E(4)`` takes one byte, its value in the low
  bits exactly as ``ml_dtypes.int4`` stores it). XLA's ``E(n)`` is the size of an element's
  slot in memory (``ShapeUtil::ArraySize`` charges ``ceil(count * n / 8)`` bytes; XLA's
  CPU/GPU verifier accepts any ``E(n)`` on a sub-byte type); an ``E(n)`` narrower than the
  type is invalid and raises. XLA's own packers (``PackIntN``) only write ``E(n)`` equal to
  the bit width, where an element's bits are its slot. For any other size (``s4`` with
  ``E(5)``, ``pred`` with ``E(2)``, ``f32`` with ``E(40)``) an element's stored bits sit at
  the low end of its slot, as XLA keeps an unpacked ``s4`` in the low bits of a byte: the
  slot holds the element's storage (the dtype's bytes) from its lowest bit, cut to the slot
  or with zeros above it, and :func:`unpack` reads it back the same way.

  >>> [hex(b) for b in pack(np.array([1, -2, 3, -4], dtype=ml_dtypes.int4), "s4[4]{0:E(5)}")]
  ['0xc1', '0xd', '0x6']

  (slots ``00001 01110 00011 01100``, each written high bit first, start at bits 0, 5, 10
  and 15; ``-2`` is stored as the nibble ``1110``, the fifth bit of its slot is zero).
* **Sub-byte values.** Only the low ``E`` bits of each element are stored; higher bits are
  ignored, as ``PackIntN`` ignores them. :func:`unpack` returns those bits in the low bits
  of each byte, which is how ``ml_dtypes`` stores canonical values.
* **Padding.** ``fill`` is written into every padding *byte* for whole-byte elements
  (0..255), and into every padding *slot* for sub-byte elements (0..2**E-1: the slot's
  bits), including the unused bits after the last slot of the last byte. Padding values are
  unspecified in XLA: ``fill`` only makes the output deterministic.
* **Not produced.** The ``M(n)`` metadata prefix of dynamic shapes. A bounded dynamic
  dimension ``<=N`` is packed at its bound: the array must have N there.

How it works
------------
The logical array is cut into *blocks*, views that each land as a box of the tiled shape
(``LayoutMap.physical_dimensions``). Walking ``LayoutMap.stages``:

==================  =================================================================
``Transpose``       transpose every block's view (and its position in the box)
``PrependUnitDims`` reshape to add size-1 dimensions
``Combine``         reshape to merge dimensions (cutting a block first where its part of
                    a merged group is not one run)
``Pad``             nothing: the block stays where it is, the new slots are padding
``Split``           reshape each dimension into (tile number, position in tile); where a
                    block covers part of a tile (the edge before padding), cut it into
                    a part of whole tiles and a part inside one tile first
``Linearize``       the box of the tiled shape is a reshape of the output buffer
``AlignTail``       the output's tail slots are padding
``ToBits``          whole-byte elements are copied as they are; sub-byte ones are
                    gathered one byte per element (position by position of a word
                    when the minor dims hold whole bytes, as the ``(8,1)`` of s4
                    does) and packed ``8/E`` to a byte (for words: each byte of
                    the words computed 8 bytes at a time on 64-bit lanes, then
                    copied into its place in the words)
==================  =================================================================

With ``numba`` installed (the ``fast`` extra), words of 32 bits made of several rows — the
4 bytes of an ``(4,1)`` tile, the 8 nibbles of an ``(8,1)`` tile under ``E(4)`` — are built
by compiled kernels (:mod:`layout_algebra.packing.copy_kernels`) in one pass per block instead, and
taken apart the same way (also the 2 halves of a bf16 ``(2,1)`` tile); the bytes are the same.

Slots of any other size (``s4`` under ``E(5)``) take a plainer path: every ``L`` slots of
``E`` bits end on a word (8 bits for ``E(5)``: ``L = 8`` slots in 5 bytes), and slot ``r``
of every group shifts by the same amount, so each chunk's stream is built from ``L``
whole-array shifts on the narrowest words that hold an element (:func:`_slots_to_stream`),
and taken apart the same way; padding slots keep the padding under a mask. Chunks start on
a byte, so they still run in parallel. (Spreading every slot to one byte per bit with
``np.unpackbits`` was 10-17x slower.)

Every view is a view (NumPy reshapes a sliced dimension into two without copying). The
data then moves by ``np.copyto`` from each block's view into the box, chunk by chunk of the
output (2 MB, so that what is read and written stays in the cache; ``unpack`` first reads
each chunk in order into a staging chunk), with dimensions of only a few elements at the
minor end (the ``(2,1)`` of bf16, the ``(4,1)`` of s8) peeled into separate copies so that
NumPy's inner loop runs over a long dimension. A copy that *transposes* (the tiles lie
over a transposed array, ``{0,1:T(8,128)}``: along the box's minor dimension the array is
read 32 KB apart) is not cache-blocked by NumPy, so it goes block by block through a
256 KB staging buffer laid out like the logical array (:func:`~layout_algebra.packing.copy_engine.blocked_copy`): one copy
moves long runs between the array and the staging buffer, the other transposes between
the staging buffer, in the cache, and the box; such layouts use 32 MB chunks (longer runs
in the array) and ``unpack`` reads them without staging the chunk. With ``numba``, a
compiled kernel (:mod:`layout_algebra.packing.transpose_kernels`) does both steps in one call,
transposing 8x8 blocks in vector registers. Extra memory: one
chunk (for sub-byte elements, one byte per element of a chunk), and the 256 KB staging
buffer. Only a ``*`` merge of dimensions that are not adjacent in memory makes a copy of
the part concerned.

``f32[3,5]`` in 2x2 tiles is four blocks: rows 0-1 by columns 0-3 (whole tiles), rows 0-1
by column 4, row 2 by columns 0-3, and row 2 by column 4, each placed in the tiled shape
``(row tile, column tile, row in tile, column in tile)``:

>>> from layout_algebra.meaning.layout_map import layout_map
>>> blocks = _walk(layout_map("f32[3,5]{1,0:T(2,2)}"), np.zeros((3, 5), np.uint32), None)
>>> blocks.box
(2, 3, 2, 2)
>>> [(b.view.shape, b.start) for b in blocks.blocks]
[((1, 2, 2, 2), (0, 0, 0, 0)), ((1, 1, 2, 1), (0, 2, 0, 0)), ((1, 2, 1, 2), (1, 0, 0, 0)), ((1, 1, 1, 1), (1, 2, 0, 0))]
"""

from __future__ import annotations

import itertools
import math
import operator
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from layout_algebra.meaning.layout_map import LayoutMap, layout_map
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
from layout_algebra.model.primitive_types import PrimitiveType, primitive_type
from layout_algebra.model.shapes import Shape
from layout_algebra.packing import copy_engine as engine

__all__ = ["numpy_dtype", "pack", "unpack"]

#: XLA element types that are plain NumPy dtypes.
_NUMPY_TYPES = {
    "pred": "bool",
    "s8": "int8",
    "s16": "int16",
    "s32": "int32",
    "s64": "int64",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
    "f16": "float16",
    "f32": "float32",
    "f64": "float64",
    "c64": "complex64",
    "c128": "complex128",
}
#: XLA element types that ``ml_dtypes`` provides, by its attribute name.
_ML_DTYPES_TYPES = {
    "bf16": "bfloat16",
    "f8e5m2": "float8_e5m2",
    "f8e4m3": "float8_e4m3",
    "f8e4m3fn": "float8_e4m3fn",
    "f8e4m3b11fnuz": "float8_e4m3b11fnuz",
    "f8e3m4": "float8_e3m4",
    "f8e5m2fnuz": "float8_e5m2fnuz",
    "f8e4m3fnuz": "float8_e4m3fnuz",
    "f8e8m0fnu": "float8_e8m0fnu",
    "f4e2m1fn": "float4_e2m1fn",
    "s4": "int4",
    "u4": "uint4",
    "s2": "int2",
    "u2": "uint2",
    "s1": "int1",
    "u1": "uint1",
}
#: Unsigned (or void) dtypes to move elements as bits, by size in bytes; little-endian.
_BITS_DTYPES: dict[int, np.dtype[Any]] = {
    1: np.dtype("u1"),
    2: np.dtype("<u2"),
    4: np.dtype("<u4"),
    8: np.dtype("<u8"),
    16: np.dtype("V16"),
}

#: Bytes of output handled per chunk (what is read and written should stay in the cache)...
_CHUNK_BYTES = 1 << 21
#: ... or, when the chunk's copies transpose, this many: they are blocked in the cache by
#: themselves (``copy_engine.blocked_copy``), and a longer chunk makes longer runs in the array
#: (32 MB: 4 KB runs in the rows of the 8192x8192 f32 benchmark array; 1 KB ran at half speed).
_TRANSPOSING_CHUNK_BYTES = 1 << 25
#: ... or, when compiled kernels build the words (``copy_engine.uses_kernel``), this many:
#: they make one pass, so the chunk need not stay in the cache, and fewer calls cost less.
_KERNEL_CHUNK_BYTES = 1 << 23
#: ... and for sub-byte elements built into words by the kernels, this many elements: the
#: 8192x8192 ``s4`` of the benchmark in 4 chunks, two per thread on two cores (measured
#: against 8 and 16: each chunk costs about 0.1 ms of Python, held under the GIL).
_WORD_KERNEL_CHUNK_ELEMENTS = 1 << 24


# ----------------------------------------------------------------------------- dtypes
def numpy_dtype(element_type: PrimitiveType | str) -> np.dtype:
    """The NumPy dtype that holds one element of an XLA type (``ml_dtypes`` for the new ones).

    >>> numpy_dtype("f32"), numpy_dtype("pred"), numpy_dtype("bf16"), numpy_dtype("s4")
    (dtype('float32'), dtype('bool'), dtype(bfloat16), dtype(int4))
    >>> numpy_dtype("token")
    Traceback (most recent call last):
    ...
    ValueError: element type 'token' has no NumPy dtype: only array element types (pred, integers, floats, complex) do
    """
    t = primitive_type(element_type) if isinstance(element_type, str) else element_type
    return _dtype(t)


@cache
def _dtype(t: PrimitiveType) -> np.dtype:
    name = t.text
    if name in _NUMPY_TYPES:
        return np.dtype(_NUMPY_TYPES[name])
    if name not in _ML_DTYPES_TYPES:
        raise ValueError(
            f"element type {name!r} has no NumPy dtype: only array element types "
            "(pred, integers, floats, complex) do"
        )
    attribute = _ML_DTYPES_TYPES[name]
    try:
        import ml_dtypes
    except ImportError:  # pragma: no cover - ml_dtypes is a dependency
        raise ValueError(
            f"element type {name!r} needs the ml_dtypes package (pip install ml_dtypes)"
        ) from None
    if not hasattr(ml_dtypes, attribute):
        raise ValueError(
            f"element type {name!r} needs ml_dtypes.{attribute}, which ml_dtypes "
            f"{getattr(ml_dtypes, '__version__', '?')} does not have; upgrade ml_dtypes"
        )
    dtype: np.dtype[Any] = np.dtype(getattr(ml_dtypes, attribute))
    return dtype


# ------------------------------------------------------------------------- public API
def pack(
    array: Any, shape: Shape | str, fill: int = 0, out: np.ndarray | None = None, threads: int | None = None
) -> np.ndarray:
    """The exact bytes of ``array`` in ``shape``'s layout, as a 1-D ``uint8`` array.

    ``array`` has the shape's logical dimensions and exactly the dtype of its element type
    (:func:`numpy_dtype`; any byte order). The result has ``layout_map(shape).size_in_bytes``
    bytes: every tile level's padding, packing by ``E(n)``, ``L(n)``. Padding holds
    ``fill``: a byte value for whole-byte elements, a slot value (``0..2**E-1``) for
    sub-byte ones. With ``out`` (a 1-D ``uint8`` array of that size) the bytes are written
    there, every byte of it, and ``out`` is returned: a runtime can reuse one staging
    buffer. ``threads``: how many threads copy (chunks of the output are independent, and
    NumPy copies release the GIL); ``None`` uses every CPU for buffers of 4 MB or more, ``1``
    keeps to the calling thread. The bytes do not depend on it. Raises ``ValueError``
    (quoting the shape) for anything else.

    >>> import numpy as np
    >>> pack(np.arange(4, dtype=np.uint8).reshape(2, 2), "u8[2,2]{0,1:L(3)}", fill=9)
    array([0, 2, 1, 3, 9, 9], dtype=uint8)
    """
    m, fmt = _format(shape)
    arr = _checked_array(array, m, fmt)
    fill = _checked_fill(fill, m, fmt)
    threads = _thread_count(threads, m)
    plan = _walk(m, arr.view(fmt.bits_dtype), None)
    if out is None:
        out = np.empty(m.size_in_bytes, np.uint8)
    else:
        out = _checked_buffer(out, m, "out")
        if not out.flags.writeable:
            raise ValueError(f"{m.shape}: out is read-only")
    if fmt.odd_size:
        _pack_odd_slots(plan, out, fmt, fill, threads, padded=m.has_padding)
    elif fmt.sub_byte:
        _pack_sub_byte(plan, out, fmt.bits, fill, threads, padded=m.has_padding)
    else:
        _pack_whole_bytes(plan, out, fmt, fill, threads, padded=m.has_padding)
    return out


def unpack(
    buffer: Any, shape: Shape | str, out: np.ndarray | None = None, threads: int | None = None
) -> np.ndarray:
    """The logical array stored in ``buffer``, the bytes of ``shape``'s layout (see :func:`pack`).

    ``buffer`` is a 1-D ``uint8`` array (or ``bytes``) of exactly
    ``layout_map(shape).size_in_bytes`` bytes. Returns a new C-contiguous array of the
    element type's dtype, or fills ``out`` (an array of the logical dimensions and that
    dtype, any strides) and returns it. Padding is ignored. ``threads`` as for :func:`pack`.

    >>> import numpy as np
    >>> unpack(np.array([0, 2, 1, 3, 9, 9], np.uint8), "u8[2,2]{0,1:L(3)}")
    array([[0, 1],
           [2, 3]], dtype=uint8)
    """
    m, fmt = _format(shape)
    buf = _checked_buffer(buffer, m)
    threads = _thread_count(threads, m)
    if out is None:
        result = np.empty(tuple(m.logical_dimensions), fmt.dtype)
    else:
        result = _checked_out(out, m, fmt)
    writebacks: list[tuple[np.ndarray, np.ndarray]] = []
    plan = _walk(m, result.view(fmt.bits_dtype), writebacks)
    if fmt.odd_size:
        _unpack_odd_slots(plan, buf, fmt, threads)
    elif fmt.sub_byte:
        _unpack_sub_byte(plan, buf, fmt.bits, threads)
    else:
        _unpack_whole_bytes(plan, buf, fmt, threads)
    for view, merged in reversed(writebacks):
        np.copyto(view, merged.reshape(view.shape))
    return result


# ------------------------------------------------------------------------- checking
@dataclass(frozen=True)
class _Format:
    """How one element is stored: its dtype, the dtype that moves its bits, bits per slot
    (``E(n)`` or whole bytes), and the bit width of its type."""

    dtype: np.dtype
    bits_dtype: np.dtype
    bits: int
    type_bits: int

    @property
    def sub_byte(self) -> bool:
        """Several slots to a byte, each of the type's own width (``s4`` with ``E(4)``)."""
        return self.bits < 8 and not self.odd_size

    @property
    def odd_size(self) -> bool:
        """A slot that is neither the element's whole bytes nor, for a sub-byte type, its
        bit width (``s4`` with ``E(5)``, ``pred`` with ``E(2)``, ``f32`` with ``E(40)``)."""
        return self.bits != 8 * self.dtype.itemsize and not (self.bits < 8 and self.bits == self.type_bits)


def _format(shape: Shape | str) -> tuple[LayoutMap, _Format]:
    m = layout_map(shape)  # raises for tuples, tokens, '?', split configs, bad tiles
    if m.is_symbolic:
        raise ValueError(f"{m.shape}: cannot pack a shape with symbolic dimensions; specialize() it first")
    if sys.byteorder != "little":  # pragma: no cover - every supported host is little-endian
        raise ValueError(f"{m.shape}: packing needs a little-endian host")
    t = m.shape.element_type
    try:
        dtype = _dtype(t)
    except ValueError as err:
        raise ValueError(f"{m.shape}: {err}") from None
    bits = m.element_bits  # >= the type's bit width: layout_map refuses a narrower E(n)
    return m, _Format(dtype, _BITS_DTYPES[dtype.itemsize], bits, t.bit_width)


def _checked_array(array: Any, m: LayoutMap, fmt: _Format) -> np.ndarray:
    arr = np.asarray(array)
    dims = tuple(m.logical_dimensions)
    if arr.shape != dims:
        raise ValueError(f"{m.shape}: the array has dimensions {list(arr.shape)}, the shape has {list(dims)}")
    if arr.dtype != fmt.dtype:
        if arr.dtype.kind in "biufc" and arr.dtype.newbyteorder("=") == fmt.dtype:
            return arr.astype(fmt.dtype)  # the same values in the other byte order
        module = "ml_dtypes" if fmt.dtype.kind == "V" else "numpy"
        raise ValueError(
            f"{m.shape}: the array has dtype {arr.dtype}, but {m.shape.element_type.text} elements "
            f"are {fmt.dtype}; convert it first, e.g. array.astype({module}.{fmt.dtype.name}), "
            "if the values fit"
        )
    return arr


def _checked_out(out: Any, m: LayoutMap, fmt: _Format) -> np.ndarray:
    dims = tuple(m.logical_dimensions)
    if not isinstance(out, np.ndarray) or out.shape != dims or out.dtype != fmt.dtype:
        what = f"{list(out.shape)} {out.dtype}" if isinstance(out, np.ndarray) else type(out).__name__
        raise ValueError(f"{m.shape}: out must be a {list(dims)} {fmt.dtype} array, not {what}")
    if not out.flags.writeable:
        raise ValueError(f"{m.shape}: out is read-only")
    return out


def _thread_count(threads: Any, m: LayoutMap) -> int:
    if threads is None:
        return engine.default_threads() if m.size_in_bytes >= engine.PARALLEL_MIN_BYTES else 1
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"{m.shape}: threads={threads!r} must be a positive integer (or None: every CPU)")
    return threads


def _checked_fill(fill: Any, m: LayoutMap, fmt: _Format) -> int:
    try:
        value = operator.index(fill)
    except TypeError:
        raise ValueError(f"{m.shape}: fill {fill!r} must be an integer") from None
    limit = 1 << min(fmt.bits, 8)
    if not 0 <= value < limit:
        what = "a byte value" if limit == 256 else f"the bits of one {fmt.bits}-bit slot"
        raise ValueError(f"{m.shape}: fill {value} must be in 0..{limit - 1} ({what})")
    return value


def _checked_buffer(buffer: Any, m: LayoutMap, name: str = "the buffer") -> np.ndarray:
    if isinstance(buffer, bytes | bytearray | memoryview):
        buffer = np.frombuffer(buffer, np.uint8)
    if not isinstance(buffer, np.ndarray):
        raise ValueError(
            f"{m.shape}: {name} must be a uint8 NumPy array or bytes, not {type(buffer).__name__}"
        )
    if buffer.dtype != np.uint8 or buffer.ndim != 1:
        raise ValueError(f"{m.shape}: {name} must be a 1-D uint8 array, not {buffer.ndim}-D {buffer.dtype}")
    if buffer.size != m.size_in_bytes:
        raise ValueError(f"{m.shape}: {name} has {buffer.size} bytes, the layout needs {m.size_in_bytes}")
    return buffer


# ------------------------------------------------------------------- the stage walk
#: An index into an array: integers and slices.
_Index = tuple[int | slice, ...]
#: Views to write back after unpacking: (the view, the merged copy written into it).
_Writebacks = list[tuple[np.ndarray, np.ndarray]]


def _chunk_index(prefix: tuple[int, ...], lo: int, hi: int) -> _Index:
    """The index of a chunk of the box: the leading coordinates ``prefix``, then ``lo:hi``."""
    return (*prefix, slice(lo, hi))


@dataclass(frozen=True)
class _Block:
    """A view of part of the logical array that lands as a box, at ``start``, in the current index space."""

    view: np.ndarray
    start: tuple[int, ...]


@dataclass(frozen=True)
class _Plan:
    """The blocks in the tiled shape ``box``, and what follows the box: ``slots`` in all."""

    blocks: tuple[_Block, ...]
    box: tuple[int, ...]
    slots: int


def _walk(m: LayoutMap, base: np.ndarray, writebacks: _Writebacks | None) -> _Plan:
    """Run the stages on views of ``base`` (the logical array, as bits).

    ``writebacks`` is ``None`` when packing (views are only read). When unpacking it
    collects ``(view, merged)`` pairs: a ``*`` merge that NumPy can only do by copying is
    written into ``merged``, a new array, which must be copied back into ``view`` at the end.
    """
    blocks = [_Block(base, (0,) * base.ndim)] if base.size else []
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
        blocks = [_Block(b.view.reshape(1), (0,)) for b in blocks]
        box = (1,)
    return _Plan(tuple(blocks), box, slots)


def _before_linearize(
    stage: Stage, blocks: list[_Block], writebacks: _Writebacks | None, m: LayoutMap
) -> list[_Block]:
    if isinstance(stage, Transpose):
        p = stage.permutation
        return [_Block(b.view.transpose(p), tuple(b.start[i] for i in p)) for b in blocks]
    if isinstance(stage, PrependUnitDims):
        ones = (1,) * stage.count
        return [_Block(b.view.reshape(ones + b.view.shape), (0,) * stage.count + b.start) for b in blocks]
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


def _split(b: _Block, start: int, tile: tuple[int, ...]) -> list[_Block]:
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
        out.append(_Block(b.view[tuple(index)].reshape(shape), tuple(where)))
    return out


def _combine(b: _Block, stage: Combine, writebacks: _Writebacks | None) -> list[_Block]:
    """``Combine``: merge each group of dimensions (row-major); a block must be one run of it."""
    pieces = [b]
    for group in stage.groups:
        if len(group) > 1:
            pieces = [c for p in pieces for c in _runs_of_group(p, group, stage.domain)]
    out = []
    for p in pieces:
        shape = tuple(math.prod(p.view.shape[i] for i in g) for g in stage.groups)
        where = tuple(
            _row_major(tuple(p.start[i] for i in g), tuple(stage.domain[i] for i in g)) for g in stage.groups
        )
        out.append(_Block(_merge(p.view, shape, writebacks), where))
    return out


def _runs_of_group(b: _Block, group: tuple[int, ...], domain: tuple[int, ...]) -> list[_Block]:
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
        out.append(_Block(b.view[tuple(index)], tuple(where)))
    return out


def _row_major(index: tuple[int, ...], dims: tuple[int, ...]) -> int:
    value = 0
    for i, d in zip(index, dims, strict=True):
        value = value * d + i
    return value


def _merge(view: np.ndarray, shape: tuple[int, ...], writebacks: _Writebacks | None) -> np.ndarray:
    """``view.reshape(shape)`` merging dims; where NumPy must copy, a copy to read or to write back."""
    merged = view.reshape(shape)
    if np.may_share_memory(merged, view) or writebacks is None:
        return merged  # a view, or a copy that will only be read
    target = np.empty(shape, view.dtype)
    writebacks.append((view, target))
    return target


# --------------------------------------------------------------------- moving data
def _chunks(
    box: tuple[int, ...], bits: int, chunk_bytes: int | None = None
) -> Iterator[tuple[tuple[int, ...], int, int, int]]:
    """Chunks of the box that each start on a byte: ``(prefix, lo, hi, first_slot)``.

    A chunk is ``box[prefix + (slice(lo, hi),)]`` (all of the dims after), contiguous in
    the output, about ``chunk_bytes`` (default ``_CHUNK_BYTES``) long (sub-byte elements:
    that many elements, gathered one byte each before packing).
    """
    if not math.prod(box):
        return  # nothing to move
    target = max(1, (chunk_bytes or _CHUNK_BYTES) * 8 // max(bits, 8))
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
        base = _row_major(prefix, box[:axis]) * box[axis]
        for lo in range(0, box[axis], step):
            hi = min(box[axis], lo + step)
            yield prefix, lo, hi, (base + lo) * inner[axis]


def _overlap(b: _Block, prefix: tuple[int, ...], lo: int, hi: int) -> tuple[_Index, tuple[slice, ...]] | None:
    """Where block ``b`` meets a chunk: (index into ``b.view``, index into the chunk), or None."""
    s, e = b.start, b.view.shape
    axis = len(prefix)
    for i, p in enumerate(prefix):
        if not s[i] <= p < s[i] + e[i]:
            return None
    first, last = max(lo, s[axis]), min(hi, s[axis] + e[axis])
    if first >= last:
        return None
    src: _Index = (*(p - s[i] for i, p in enumerate(prefix)), slice(first - s[axis], last - s[axis]))
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


def _pack_whole_bytes(
    plan: _Plan, out: np.ndarray, fmt: _Format, fill: int, threads: int, *, padded: bool
) -> None:
    size = fmt.dtype.itemsize
    n_box = math.prod(plan.box)
    slots = out[: n_box * size].view(fmt.bits_dtype).reshape(plan.box)
    out[n_box * size :] = fill
    fill_slot = np.full(size, fill, np.uint8).view(fmt.bits_dtype)[0]  # ``fill`` in every byte of a slot

    def move(chunk_at: tuple[tuple[int, ...], int, int, int]) -> None:
        prefix, lo, hi, _ = chunk_at
        chunk = slots[_chunk_index(prefix, lo, hi)]
        overlaps = [(b, where) for b in plan.blocks if (where := _overlap(b, prefix, lo, hi)) is not None]
        if padded:  # only the slots no block covers: each byte is written once
            for gap in box_difference(tuple(slice(0, n) for n in chunk.shape), [w[1] for _, w in overlaps]):
                chunk[gap] = fill_slot
        for b, where in overlaps:
            engine.copy(chunk[where[1]], b.view[where[0]])

    chunks = list(_chunks(plan.box, fmt.bits, _chunk_bytes(plan, slots, fmt.bits)))
    engine.run_parallel(move, chunks, threads)


def _chunk_bytes(plan: _Plan, slots: np.ndarray, bits: int, *, packing: bool = True) -> int:
    """How long the chunks of ``slots`` (the box) are: longer if copies into the first one
    transpose, or are made by compiled kernels."""
    if slots.nbytes <= _CHUNK_BYTES:
        return _CHUNK_BYTES  # one chunk anyway
    large = any(b.view.nbytes > engine.BLOCK_BYTES for b in plan.blocks)
    for prefix, lo, hi, _ in _chunks(plan.box, bits):
        chunk = slots[_chunk_index(prefix, lo, hi)]
        for b in plan.blocks:
            where = _overlap(b, prefix, lo, hi)
            if where is None:
                continue
            part, view = chunk[where[1]], b.view[where[0]]
            if large and engine.is_large_transpose(part, view):
                return _TRANSPOSING_CHUNK_BYTES
            if engine.uses_kernel(part, view) if packing else engine.uses_kernel(view, part):
                return max(_CHUNK_BYTES, _KERNEL_CHUNK_BYTES)
        break
    return _CHUNK_BYTES


def _unpack_whole_bytes(plan: _Plan, buf: np.ndarray, fmt: _Format, threads: int) -> None:
    size = fmt.dtype.itemsize
    n_box = math.prod(plan.box)
    slots = buf[: n_box * size].view(fmt.bits_dtype).reshape(plan.box)
    chunk_bytes = _chunk_bytes(plan, slots, fmt.bits, packing=False)
    per_thread = threading.local()  # one staging chunk per thread

    def move(chunk_at: tuple[tuple[int, ...], int, int, int]) -> None:
        prefix, lo, hi, _ = chunk_at
        chunk = slots[_chunk_index(prefix, lo, hi)]
        copies = [(b.view[w[0]], w[1]) for b in plan.blocks if (w := _overlap(b, prefix, lo, hi)) is not None]
        if not any(
            engine.is_large_transpose(view, chunk[where]) or engine.uses_kernel(view, chunk[where])
            for view, where in copies
        ):
            # read the chunk in order first: the scattered reads of the copies then hit the cache
            # (a transposing copy stages its blocks itself, a kernel reads the words in one pass)
            staging = getattr(per_thread, "staging", None)
            if staging is None:
                staging = per_thread.staging = np.empty(
                    min(n_box, max(1, chunk_bytes // size)), fmt.bits_dtype
                )
            staged = staging[: chunk.size].reshape(chunk.shape)
            np.copyto(staged, chunk)
            chunk = staged
        for view, where in copies:
            engine.copy(view, chunk[where])

    engine.run_parallel(move, list(_chunks(plan.box, fmt.bits, chunk_bytes)), threads)


def _word_dims(box: tuple[int, ...], bits: int) -> int:
    """How many minor dims of the box hold a few elements making whole bytes (0: none do).

    ``s4`` in ``(8,128)(8,1)``: the box ends ``(..., 128, 8, 1)``, and the last two dims
    hold the 8 nibbles of one 32-bit word.
    """
    n, count, dims = len(box), 1, 0
    if n >= 2 and box[-1] < engine.SHORT:
        while dims < n - 1 and count * box[n - 1 - dims] <= engine.MAX_PEEL:
            count *= box[n - 1 - dims]
            dims += 1
    return dims if dims and count > 1 and count * bits % 8 == 0 else 0


def _pack_sub_byte(plan: _Plan, out: np.ndarray, bits: int, fill: int, threads: int, *, padded: bool) -> None:
    """Gather each chunk one byte per element (a "code"), then pack ``8 // bits`` codes a byte."""
    per_byte = 8 // bits
    pattern = sum(fill << (bits * i) for i in range(per_byte))
    box_bytes = -(-math.prod(plan.box) * bits // 8)
    out[box_bytes:] = pattern  # L(n) tail slots (the box's last byte is written below)
    if _word_dims(plan.box, bits):
        _pack_words(plan, out, bits, fill if padded else None, threads)
        return

    def move(chunk_at: tuple[tuple[int, ...], int, int, int]) -> None:
        prefix, lo, hi, first = chunk_at
        shape = (hi - lo, *plan.box[len(prefix) + 1 :])
        count = math.prod(shape)
        codes = np.full(-(-count // per_byte) * per_byte, fill, np.uint8)
        chunk = codes[:count].reshape(shape)
        for b in plan.blocks:
            where = _overlap(b, prefix, lo, hi)
            if where is not None:
                engine.copy(chunk[where[1]], b.view[where[0]])
        start = first * bits // 8
        engine.codes_to_bytes(codes, bits, out[start : start + codes.size // per_byte])

    engine.run_parallel(move, list(_chunks(plan.box, bits)), threads)


def _unpack_sub_byte(plan: _Plan, buf: np.ndarray, bits: int, threads: int) -> None:
    per_byte = 8 // bits
    if _word_dims(plan.box, bits):
        _unpack_words(plan, buf, bits, threads)
        return

    def move(chunk_at: tuple[tuple[int, ...], int, int, int]) -> None:
        prefix, lo, hi, first = chunk_at
        shape = (hi - lo, *plan.box[len(prefix) + 1 :])
        count = math.prod(shape)
        start = first * bits // 8
        codes = engine.bytes_to_codes(buf[start : start - (-count // per_byte)], bits)
        chunk = codes[:count].reshape(shape)
        for b in plan.blocks:
            where = _overlap(b, prefix, lo, hi)
            if where is not None:
                engine.copy(b.view[where[0]], chunk[where[1]])

    engine.run_parallel(move, list(_chunks(plan.box, bits)), threads)


#: Elements per chunk for odd slot sizes; more where a block's copy into a chunk transposes.
_ODD_CHUNK_ELEMENTS = 1 << 18
_ODD_TRANSPOSING_CHUNK_ELEMENTS = 1 << 22


def _odd_chunk_elements(plan: _Plan, bits: int) -> int:
    """How many elements a chunk of odd slots holds: more if a block's copy into the chunk
    (row-major codes of the box) transposes, so that it goes block by block
    (:func:`copy_engine.blocked_copy`, past ``BLOCK_BYTES``) instead of element by element."""
    for b in plan.blocks:
        v = b.view
        row_major = tuple(v.itemsize * math.prod(v.shape[k + 1 :]) for k in range(v.ndim))
        codes = np.lib.stride_tricks.as_strided(np.empty(1, v.dtype), v.shape, row_major)  # strides only
        if engine.is_transposing(codes, v):
            return _ODD_TRANSPOSING_CHUNK_ELEMENTS * max(bits, 8) // 8
    return _ODD_CHUNK_ELEMENTS * max(bits, 8) // 8


def _odd_padding(size: int, bits: int, fill: int) -> np.ndarray:
    """``size`` bytes of nothing but padding: in slots under 8 bits, every slot (and the
    bits after the last) holds ``fill``; otherwise every byte is ``fill``.

    >>> [bin(b) for b in _odd_padding(3, 5, 0b10110)]     # slots 10110 10110 10110 10110 1...
    ['0b11010110', '0b1011010', '0b1101011']
    """
    if bits >= 8:
        return np.full(size, fill, np.uint8)
    slot = ((fill >> np.arange(bits)) & 1).astype(np.uint8)
    period = np.packbits(np.tile(slot, 8), bitorder="little")  # 8 slots: E whole bytes
    return np.tile(period, -(-size // period.size))[:size]  # np.resize is 40x slower here


def _slot_residues(bits: int, word: int = 64) -> tuple[int, int]:
    """``(L, W)``: every ``L`` slots of ``bits`` end on a word of ``word`` bits, after ``W``
    words; slot ``r`` of such a group starts at bit ``r * bits`` of the group, the same for
    every group.

    >>> _slot_residues(5, 8), _slot_residues(24, 16), _slot_residues(40, 32)
    ((8, 5), (2, 3), (4, 5))
    """
    group = word // math.gcd(bits, word)
    return group, group * bits // word


def slot_word(keep: int) -> int:
    """The narrowest word (8, 16, 32 or 64 bits) that holds ``keep`` bits: each slot's value
    is shifted within such words, and the narrower the word, the fewer bytes move."""
    return next(w for w in (8, 16, 32, 64) if keep <= w)


def _slots_to_stream(values: np.ndarray, bits: int, word: int) -> np.ndarray:
    """The bit stream (bytes, lowest bit first) of slots of ``bits`` holding ``values``
    (each below ``2**word``; slot bits past the value are zero), built one slot residue at
    a time: the slots at the same place in their group shift by the same amount, so each
    residue is a few whole-array shifts on ``word``-bit words, with no array of single bits.

    >>> [bin(b) for b in _slots_to_stream(np.array([0b10110, 0b00001, 0b11111]), 5, 8)]
    ['0b110110', '0b1111100']
    """
    count = values.size
    group, words = _slot_residues(bits, word)
    groups = -(-count // group)
    dtype = np.dtype(f"<u{word // 8}")
    flat = np.zeros(groups * group, dtype)
    flat[:count] = values
    v = np.ascontiguousarray(flat.reshape(groups, group).T)  # residue r of every group: one row
    out = np.zeros((words, groups), dtype)
    part = np.empty(groups, dtype)
    for r in range(group):
        w, shift = divmod(r * bits, word)
        np.left_shift(v[r], dtype.type(shift), out=part)
        out[w] |= part
        if shift and w + 1 < words:  # the slot's high bits in the next word
            np.right_shift(v[r], dtype.type(word - shift), out=part)
            out[w + 1] |= part
    return np.ascontiguousarray(out.T).view(np.uint8).reshape(-1)[: -(-count * bits // 8)]


def _stream_to_slots(stream: np.ndarray, count: int, bits: int, keep: int) -> np.ndarray:
    """The inverse of :func:`_slots_to_stream`: the low ``keep`` (<= 64) bits of each of
    ``count`` slots of ``bits`` in the bit stream ``stream`` (bytes), in words of
    :func:`slot_word` bits.

    >>> _stream_to_slots(np.array([0b110110, 0b1111100], np.uint8), 3, 5, 5).tolist()
    [22, 1, 31]
    """
    word = slot_word(keep)
    group, words = _slot_residues(bits, word)
    groups = -(-count // group)
    dtype = np.dtype(f"<u{word // 8}")
    raw = np.zeros(groups * words * (word // 8), np.uint8)
    raw[: stream.size] = stream
    w = np.ascontiguousarray(raw.view(dtype).reshape(groups, words).T)  # word k of every group
    v = np.empty((group, groups), dtype)
    part = np.empty(groups, dtype)
    mask = dtype.type((1 << keep) - 1)
    for r in range(group):
        k, shift = divmod(r * bits, word)
        np.right_shift(w[k], dtype.type(shift), out=v[r])
        if shift + keep > word:  # the slot's high bits in the next word
            np.left_shift(w[k + 1], dtype.type(word - shift), out=part)
            v[r] |= part
        v[r] &= mask
    return v.T.reshape(-1)[:count]


def _slot_masks(covered: np.ndarray, bits: int) -> np.ndarray:
    """The bit stream (bytes) with every bit of the slots where ``covered`` is True set."""
    count = covered.size
    group, words = _slot_residues(bits)
    groups = -(-count // group)
    flat = np.zeros(groups * group, bool)
    flat[:count] = covered
    c = flat.reshape(groups, group)
    out = np.zeros((groups, words), np.uint64)
    full = (1 << 64) - 1
    for r in range(group):
        lo, hi = r * bits, (r + 1) * bits
        for w in range(lo // 64, (hi - 1) // 64 + 1):
            a, b = max(lo, 64 * w) - 64 * w, min(hi, 64 * w + 64) - 64 * w
            word_mask = np.uint64((full >> (64 - (b - a))) << a)
            out[:, w] |= np.where(c[:, r], word_mask, np.uint64(0))
    return out.astype("<u8").view(np.uint8).reshape(-1)[: -(-count * bits // 8)]


def _write_byte_run(out: np.ndarray, first: int, data: np.ndarray, nbits: int) -> None:
    """Write the first ``nbits`` bits of ``data`` (bytes) into ``out`` from byte ``first``,
    keeping the bits of ``out`` after the run's end in its last byte."""
    whole, rest = divmod(nbits, 8)
    out[first : first + whole] = data[:whole]
    if rest:
        mask = (1 << rest) - 1
        out[first + whole] = (int(out[first + whole]) & ~mask & 0xFF) | (int(data[whole]) & mask)


def _pack_odd_slots(
    plan: _Plan, out: np.ndarray, fmt: _Format, fill: int, threads: int, *, padded: bool
) -> None:
    """Slots of any size ``E`` (``s4`` under ``E(5)``): each element's stored bits from the
    lowest, cut to the slot or zero above, shifted into the bit stream chunk by chunk
    (:func:`_slots_to_stream`; the chunks start on a byte; only the last one ends inside one,
    before the tail). A padded chunk keeps the padding of the slots no element covers."""
    bits = fmt.bits
    keep = min(bits, 8 * fmt.dtype.itemsize)
    word = slot_word(keep)
    keep_mask = (1 << keep) - 1
    out[...] = _odd_padding(out.size, bits, fill)  # all padding first (the tail keeps it)

    def move(chunk_at: tuple[tuple[int, ...], int, int, int]) -> None:
        prefix, lo, hi, first = chunk_at
        shape = (hi - lo, *plan.box[len(prefix) + 1 :])
        count = math.prod(shape)
        codes = np.zeros(shape, fmt.bits_dtype)
        covered = np.zeros(shape, bool) if padded else None
        for b in plan.blocks:
            where = _overlap(b, prefix, lo, hi)
            if where is not None:
                engine.copy(codes[where[1]], b.view[where[0]])
                if covered is not None:
                    covered[where[1]] = True
        values = codes.reshape(count) & codes.dtype.type(keep_mask)  # the element's bits in its slot
        stream = _slots_to_stream(values, bits, word)
        start = first * bits // 8
        if covered is not None and not covered.all():  # padding slots keep the padding written above
            mask = _slot_masks(covered.reshape(count), bits)
            stream = (out[start : start + stream.size] & ~mask) | stream
        _write_byte_run(out, start, stream, count * bits)

    engine.run_parallel(move, list(_chunks(plan.box, bits, _odd_chunk_elements(plan, bits))), threads)


def _unpack_odd_slots(plan: _Plan, buf: np.ndarray, fmt: _Format, threads: int) -> None:
    """The inverse of :func:`_pack_odd_slots`: each chunk's bits, slot by slot, into elements."""
    bits = fmt.bits
    keep = min(bits, 8 * fmt.dtype.itemsize)

    def move(chunk_at: tuple[tuple[int, ...], int, int, int]) -> None:
        prefix, lo, hi, first = chunk_at
        shape = (hi - lo, *plan.box[len(prefix) + 1 :])
        count = math.prod(shape)
        start = first * bits // 8
        values = _stream_to_slots(buf[start : start - (-count * bits // 8)], count, bits, keep)
        codes = values.astype(fmt.bits_dtype).reshape(shape)  # slot bits past the element's are not read
        for b in plan.blocks:
            where = _overlap(b, prefix, lo, hi)
            if where is not None:
                engine.copy(b.view[where[0]], codes[where[1]])

    engine.run_parallel(move, list(_chunks(plan.box, bits, _odd_chunk_elements(plan, bits))), threads)


def _word_copies(
    plan: _Plan, prefix: tuple[int, ...], lo: int, hi: int, dims: int
) -> Iterator[tuple[np.ndarray, tuple[slice, ...], int]]:
    """For each block in a chunk and each element position ``j`` of a word it covers:
    ``(view of the block, index into the codes of word position j, position j)``."""
    word = plan.box[-dims:]
    for b in plan.blocks:
        where = _overlap(b, prefix, lo, hi)
        if where is None:
            continue
        src, dst = where
        view = b.view[src]
        for w in itertools.product(*(range(sl.start, sl.stop) for sl in dst[-dims:])):
            local = tuple(k - sl.start for k, sl in zip(w, dst[-dims:], strict=True))
            yield view[(Ellipsis, *local)], dst[:-dims], _row_major(w, word)


def _compiled_word_pairs(
    plan: _Plan,
    prefix: tuple[int, ...],
    lo: int,
    hi: int,
    dims: int,
    bits: int,
    region: np.ndarray,
    lead: tuple[int, ...],
) -> list[tuple[np.ndarray, np.ndarray, slice]] | None:
    """For the compiled word kernels: ``(words, parts, positions)`` for each block in a chunk:
    the block's 32-bit words in ``region`` (the chunk's bytes), the block's view with the
    positions of a word last, and which positions of its words the block holds (all but at
    a ragged edge). None (use NumPy) if there is no kernel or a word is not 32 bits."""
    word = plan.box[-dims:]
    if (
        math.prod(word) * bits != 32
        or sum(n > 1 for n in word) != 1
        or region.nbytes < engine.KERNEL_MIN_BYTES
    ):
        return None
    if engine.kernels() is None:
        return None
    if region.size % 4 or region.ctypes.data % 4:
        return None
    words = region.view("<u4").reshape(lead)
    inner = word.index(max(word))  # the one dim of the word with more than one position
    pairs = []
    for b in plan.blocks:
        where = _overlap(b, prefix, lo, hi)
        if where is None:
            continue
        src, dst = where
        at: tuple[Any, ...] = (Ellipsis, *(slice(None) if k == inner else 0 for k in range(dims)))
        pairs.append((words[dst[:-dims]], b.view[src][at], dst[len(dst) - dims + inner]))
    return pairs


def _pack_word_block(
    words: np.ndarray, parts: np.ndarray, held: slice, width: int, bits: int, fill: int
) -> None:
    """Build a block's words with the kernel; at a ragged edge (the block holds only some
    positions of its words) through a copy whose missing positions hold ``fill``."""
    if (held.start, held.stop) != (0, width):
        whole = np.full((*parts.shape[:-1], width), fill, np.uint8)
        whole[..., held] = parts
        parts = whole
    if not engine.interleave(words, parts, bits):  # e.g. a reversed array: NumPy, part by part
        mask = (1 << bits) - 1
        np.copyto(words, parts[..., -1] & mask)
        for j in range(width - 2, -1, -1):
            np.left_shift(words, bits, out=words)
            np.bitwise_or(words, parts[..., j] & mask, out=words)


def _unpack_word_block(words: np.ndarray, parts: np.ndarray, held: slice, width: int, bits: int) -> None:
    """The inverse of :func:`_pack_word_block`: only the positions the block holds are written."""
    target = (
        parts if (held.start, held.stop) == (0, width) else np.empty((*parts.shape[:-1], width), np.uint8)
    )
    if not engine.deinterleave(target, words, bits):  # e.g. a reversed array: NumPy, part by part
        for j in range(width):
            np.copyto(target[..., j], (words >> (bits * j)) & ((1 << bits) - 1), casting="unsafe")
    if target is not parts:
        np.copyto(parts, target[..., held])


def _word_chunk_bytes(plan: _Plan, dims: int, bits: int) -> int:
    """Chunk length (in elements) for sub-byte words: whole words, and longer when compiled
    kernels will build them (numba is imported only for an array that large)."""
    width = math.prod(plan.box[-dims:])
    words_bytes = math.prod(plan.box) * bits // 8
    kernel_shape = width * bits == 32 and sum(n > 1 for n in plan.box[-dims:]) == 1
    if kernel_shape and words_bytes >= engine.KERNEL_MIN_BYTES and engine.kernels() is not None:
        return max(_CHUNK_BYTES, _WORD_KERNEL_CHUNK_ELEMENTS, width)
    return max(_CHUNK_BYTES, width)


def _pack_words(plan: _Plan, out: np.ndarray, bits: int, fill: int | None, threads: int) -> None:
    """Sub-byte elements whose minor dims make words: gather codes word position by word
    position (contiguous copies), build each byte of the words from its positions in
    contiguous arrays (:func:`~layout_algebra.packing.copy_engine.pack_lanes`), and copy it into its
    place in the words. ``fill`` is None when the blocks cover every slot."""
    dims = _word_dims(plan.box, bits)
    per_byte, width = 8 // bits, math.prod(plan.box[-dims:])
    # chunks hold whole words (at least ``width`` elements: the chunk axis is outside the word)

    def move(chunk_at: tuple[tuple[int, ...], int, int, int]) -> None:
        prefix, lo, hi, first = chunk_at
        lead = (hi - lo, *plan.box[len(prefix) + 1 : -dims])
        count = math.prod(lead)
        start = first * bits // 8
        region = out[start : start + count * width // per_byte]
        pairs = _compiled_word_pairs(plan, prefix, lo, hi, dims, bits, region, lead)
        if pairs is not None:  # one compiled pass per block
            if fill is not None:
                region[...] = sum(fill << (bits * i) for i in range(per_byte))
            for words, parts, held in pairs:
                _pack_word_block(words, parts, held, width, bits, fill or 0)
            return
        codes = np.empty((width, -(-count // 8) * 8), np.uint8)  # rows of whole 64-bit lanes
        if fill is not None:
            codes.fill(fill)
        rows = codes[:, :count].reshape(width, *lead)
        for view, dst, j in _word_copies(plan, prefix, lo, hi, dims):
            np.copyto(rows[j][dst], view)
        words = region.reshape(*lead, width // per_byte)
        byte = np.empty(codes.shape[1], np.uint8)
        for q in range(width // per_byte):
            engine.pack_lanes(codes[q * per_byte : (q + 1) * per_byte], bits, byte)
            np.copyto(words[..., q], byte[:count].reshape(lead))

    engine.run_parallel(move, list(_chunks(plan.box, bits, _word_chunk_bytes(plan, dims, bits))), threads)


def _unpack_words(plan: _Plan, buf: np.ndarray, bits: int, threads: int) -> None:
    """The inverse of :func:`_pack_words`: each byte of the words is copied out into a
    contiguous array and split into its positions' codes
    (:func:`~layout_algebra.packing.copy_engine.unpack_lanes`)."""
    dims = _word_dims(plan.box, bits)
    per_byte, width = 8 // bits, math.prod(plan.box[-dims:])

    def move(chunk_at: tuple[tuple[int, ...], int, int, int]) -> None:
        prefix, lo, hi, first = chunk_at
        lead = (hi - lo, *plan.box[len(prefix) + 1 : -dims])
        count = math.prod(lead)
        start = first * bits // 8
        region = buf[start : start + count * width // per_byte]
        pairs = _compiled_word_pairs(plan, prefix, lo, hi, dims, bits, region, lead)
        if pairs is not None:  # one compiled pass per block
            for words, parts, held in pairs:
                _unpack_word_block(words, parts, held, width, bits)
            return
        codes = np.empty((width, -(-count // 8) * 8), np.uint8)
        words = region.reshape(*lead, width // per_byte)
        byte = np.empty(codes.shape[1], np.uint8)
        for q in range(width // per_byte):
            np.copyto(byte[:count].reshape(lead), words[..., q])
            engine.unpack_lanes(byte, bits, codes[q * per_byte : (q + 1) * per_byte])
        rows = codes[:, :count].reshape(width, *lead)
        for view, dst, j in _word_copies(plan, prefix, lo, hi, dims):
            np.copyto(view, rows[j][dst])

    engine.run_parallel(move, list(_chunks(plan.box, bits, _word_chunk_bytes(plan, dims, bits))), threads)
