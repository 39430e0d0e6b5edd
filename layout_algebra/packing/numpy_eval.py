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
>>> [float(v) for v in packed.view(ml_dtypes.bfloat16)[:4]]   # column 0: rows 0, 1; column 1: rows 0, 1
[1.0, 2.0, 3.0, 4.0]
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
  s4/u4, s2/u2, s1/u1. :func:`~layout_algebra.packing.formats.numpy_dtype` gives the dtype. The array's dtype must be
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
whole-array shifts on the narrowest words that hold an element (:mod:`~layout_algebra.packing.odd_slots`),
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

Calling again on the same shape (and, packing, the same dtype and dims) reuses what the
first call derived: the layout map and the walk of the stages (a *recipe*), and, for the
one-thread path of whole-byte elements and of sub-byte words, a *program*
(:mod:`~layout_algebra.packing.replay`): the first call's data movement as a list of
compiled-kernel calls, copies and fills over the two buffers by offset, replayed on the
new arrays without walking chunks again (a 64 KB array: about 10 us instead of 70). It is
made by the second call on a shape (a shape packed once does not pay for it). Once
numba is loaded, programs call the kernels at every size. :func:`forget_recipes` drops
them all.

The modules: :mod:`~layout_algebra.packing.formats` (dtypes and checks),
:mod:`~layout_algebra.packing.stage_walk` (the stages on views, the chunks),
:mod:`~layout_algebra.packing.odd_slots` and :mod:`~layout_algebra.packing.words` (sub-byte slots),
:mod:`~layout_algebra.packing.copy_engine` (the copies), :mod:`~layout_algebra.packing.replay`
(programs).
"""

from __future__ import annotations

import math
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from layout_algebra.meaning.layout_map import LayoutMap
from layout_algebra.model.errors import InvalidArgumentError
from layout_algebra.model.shapes import Shape
from layout_algebra.packing import copy_engine as engine
from layout_algebra.packing import fresh_memory, lanes, stage_walk, tunables
from layout_algebra.packing.formats import (
    Format,
    checked_array,
    checked_buffer,
    checked_fill,
    checked_out,
    layout_format,
    thread_count,
)
from layout_algebra.packing.fresh_memory import new_result
from layout_algebra.packing.odd_slots import pack_odd_slots, unpack_odd_slots
from layout_algebra.packing.replay import Program, parts_of_run, whole_bytes_program
from layout_algebra.packing.stage_walk import (
    Plan,
    Skeleton,
    box_difference,
    chunk_index,
    chunk_list,
    overlap,
    relocated,
    shared_chunk,
    skeleton,
    walk,
)
from layout_algebra.packing.stream_copy import STREAM_COPY_MIN_BYTES, copy_chunk, streamed
from layout_algebra.packing.threads import default_threads, run_parallel
from layout_algebra.packing.words import pack_words, unpack_words, word_dims, word_program

__all__ = ["forget_recipes", "pack", "unpack"]


# ------------------------------------------------------------------------- public API
def pack(
    array: Any, shape: Shape | str, fill: int = 0, out: np.ndarray | None = None, threads: int | None = None
) -> np.ndarray:
    """The exact bytes of ``array`` in ``shape``'s layout, as a 1-D ``uint8`` array.

    ``array`` has the shape's logical dimensions and exactly the dtype of its element type
    (:func:`~layout_algebra.packing.formats.numpy_dtype`; any byte order). The result has ``layout_map(shape).size_in_bytes``
    bytes: every tile level's padding, packing by ``E(n)``, ``L(n)``. Padding holds
    ``fill``: a byte value for whole-byte elements, a slot value (``0..2**E-1``) for
    sub-byte ones. With ``out`` (a 1-D ``uint8`` array of that size) the bytes are written
    there, every byte of it, and ``out`` is returned: a runtime can reuse one staging
    buffer. ``out`` may share memory with ``array`` (the bytes are those of a copy of
    ``array``: such a call reads it from one). ``threads``: how many threads copy at most (chunks of the output are independent,
    and NumPy copies release the GIL); ``None`` uses every CPU for buffers of 16 MB or more, and
    from 1 MB for a shape packed before (its program in parts on numba's threads:
    :mod:`~layout_algebra.packing.replay_parts`); ``1`` keeps to the calling thread. The bytes do
    not depend on it. Raises ``ValueError`` (quoting the shape) for anything else.

    >>> import numpy as np
    >>> pack(np.arange(4, dtype=np.uint8).reshape(2, 2), "u8[2,2]{0,1:L(3)}", fill=9)
    array([0, 2, 1, 3, 9, 9], dtype=uint8)

    The compiled kernels (numba) start on the first call that moves 64 MB or more, or once
    NumPy has done 0.5 s of packing in the process (:func:`~layout_algebra.packing.copy_engine.cold_call`):
    a one-off small call does not pay numba's start of about half a second.
    """
    if (
        type(array) is np.ndarray
        and not engine.kernels_cold()
        and (threads is None or (type(threads) is int and threads >= 1))
    ):
        try:  # a shape packed before: replayed
            replay = _REPLAYS.get((shape, True, array.dtype, array.shape))
        except TypeError:  # an unhashable shape: nothing kept
            replay = None
        if replay is not None:
            done = replay(array, fill, out, threads)
            if done is not None:
                return done
    if engine.kernels_cold():
        return engine.cold_call(lambda: _pack(array, shape, fill, out, threads), _byte_count(array))
    return _pack(array, shape, fill, out, threads)


def _byte_count(data: Any) -> int:
    """How many bytes an argument holds, as far as it says without conversion (0 if it does not)."""
    if isinstance(data, (bytes, bytearray)):
        return len(data)
    n = getattr(data, "nbytes", 0)
    return n if isinstance(n, int) else 0


def _pack(
    array: Any, shape: Shape | str, fill: int, out: np.ndarray | None, threads: int | None
) -> np.ndarray:
    arr = array if type(array) is np.ndarray else np.asarray(array)
    key = (shape, True, arr.dtype, arr.shape)
    recipe = _kept(key)
    if (
        recipe is not None
        and recipe.replay is not None
        and (threads is None or (type(threads) is int and threads >= 1))
    ):
        done = recipe.replay(arr, fill, out, threads)
        if done is not None:
            return done
    if recipe is None or not arr.flags.c_contiguous:
        m, fmt = layout_format(shape)
        checked = checked_array(arr, m, fmt)
        base = checked.view(fmt.bits_dtype)
        plan = walk(m, base, None)
        if checked is arr and arr.flags.c_contiguous:  # not converted: the plan serves the next call
            _keep((shape, True, arr.dtype, arr.shape), Recipe(m, fmt, skeleton(plan, base)))
    else:
        m, fmt = recipe.m, recipe.fmt
        base = arr.view(fmt.bits_dtype)
        plan = walk(m, base, None) if recipe.skeleton is None else relocated(recipe.skeleton, base)
    fill = checked_fill(fill, m, fmt)
    threads = thread_count(threads, m)
    new, aliased = out is None, False
    if out is None:
        out = fresh_memory.empty(m.size_in_bytes, np.uint8)
    else:
        out = checked_buffer(out, m, "out")
        if not out.flags.writeable:
            raise InvalidArgumentError(f"{m.shape}: out is read-only")
        if np.may_share_memory(out, arr):  # written over its own input: the input read from a copy
            plan, aliased = walk(m, base.copy(), None), True  # (and no program made from it)
    with new_result(out if new else None, packed=True):  # the copy engine's choice of stores reads it
        if fmt.odd_size:
            pack_odd_slots(plan, out, fmt, fill, threads, padded=m.has_padding)
        elif fmt.sub_byte:
            _pack_sub_byte(plan, out, fmt.bits, fill, threads, padded=m.has_padding)
        else:
            _pack_whole_bytes(plan, out, fmt, fill, threads, padded=m.has_padding)
    # a program from the second call on (a shape packed once does not pay for making one)
    kept = _kept(key) if recipe is not None and arr.flags.c_contiguous and not aliased else None
    if kept is not None and _wants_program(kept):
        _keep(key, _with_program(kept, plan, out, arr, packing=True))
    return out


def unpack(
    buffer: Any, shape: Shape | str, out: np.ndarray | None = None, threads: int | None = None
) -> np.ndarray:
    """The logical array stored in ``buffer``, the bytes of ``shape``'s layout (see :func:`pack`).

    ``buffer`` is a 1-D ``uint8`` array (or ``bytes``) of exactly
    ``layout_map(shape).size_in_bytes`` bytes. Returns a new C-contiguous array of the
    element type's dtype, or fills ``out`` (an array of the logical dimensions and that
    dtype, any strides) and returns it; ``out`` may share memory with ``buffer`` (as for
    :func:`pack`: the buffer is then read from a copy). Padding is ignored. ``threads`` as for
    :func:`pack`.

    >>> import numpy as np
    >>> unpack(np.array([0, 2, 1, 3, 9, 9], np.uint8), "u8[2,2]{0,1:L(3)}")
    array([[0, 1],
           [2, 3]], dtype=uint8)
    """
    if not engine.kernels_cold() and (threads is None or (type(threads) is int and threads >= 1)):
        try:  # a shape unpacked before: replayed
            replay = _REPLAYS.get((shape, False))
        except TypeError:
            replay = None
        if replay is not None:
            done = replay(buffer, out, 0, threads)
            if done is not None:
                return done
    if engine.kernels_cold():
        return engine.cold_call(lambda: _unpack(buffer, shape, out, threads), _byte_count(buffer))
    return _unpack(buffer, shape, out, threads)


def _unpack(buffer: Any, shape: Shape | str, out: np.ndarray | None, threads: int | None) -> np.ndarray:
    recipe = _kept((shape, False))
    if (
        recipe is not None
        and recipe.replay is not None
        and (threads is None or (type(threads) is int and threads >= 1))
    ):
        done = recipe.replay(buffer, out, 0, threads)
        if done is not None:
            return done
    m, fmt = layout_format(shape) if recipe is None else (recipe.m, recipe.fmt)
    buf = checked_buffer(buffer, m)
    threads = thread_count(threads, m)
    aliased = False  # result written over the buffer: the buffer read from a copy, no program made
    if out is None:
        result = fresh_memory.empty(tuple(m.logical_dimensions), fmt.dtype)
    else:
        result = checked_out(out, m, fmt)
        if np.may_share_memory(result, buf):
            buf, aliased = buf.copy(), True
    writebacks: list[tuple[np.ndarray, np.ndarray]] = []
    base = result.view(fmt.bits_dtype)
    if recipe is not None and recipe.skeleton is not None and base.flags.c_contiguous:
        plan = relocated(recipe.skeleton, base)
    else:
        plan = walk(m, base, writebacks)
        if recipe is None and base.flags.c_contiguous:  # the plan serves the next call
            _keep((shape, False), Recipe(m, fmt, None if writebacks else skeleton(plan, base)))
    with new_result(result if out is None else None):  # copy_engine.FRESH_PLAIN_BYTES
        if fmt.odd_size:
            unpack_odd_slots(plan, buf, fmt, threads)
        elif fmt.sub_byte:
            _unpack_sub_byte(plan, buf, fmt.bits, threads)
        else:
            _unpack_whole_bytes(plan, buf, fmt, threads, stream=streamed(result))
    for view, merged in reversed(writebacks):
        np.copyto(view, merged.reshape(view.shape))
    kept = _kept((shape, False)) if recipe is not None and base.flags.c_contiguous and not aliased else None
    if kept is not None and kept.skeleton is not None and _wants_program(kept):
        _keep((shape, False), _with_program(kept, plan, buf, result, packing=False))
    return result


# --------------------------------------------------------------------- recipes
@dataclass(frozen=True)
class Recipe:
    """What packing (or unpacking) a shape derives before moving any data, kept for the
    next call: the layout map, the element format, and the walk of the stages as places in
    the logical array (None: walk them on every call, as when a ``*`` merge copies)."""

    m: LayoutMap
    fmt: Format
    skeleton: Skeleton | None
    #: the one-thread data movement, replayable on new arrays (:mod:`~layout_algebra.packing.replay`)
    program: Program | None = None
    #: the tuning it was made under (:func:`tuning`), None if no program was looked for yet
    tuning: tuple[Any, ...] | None = None
    #: with a program: the buffer's bytes, and where the padding after the box starts
    size: int = 0
    tail: int = 0
    #: with a program: the fill values it takes (0 .. fills-1: a byte, or a sub-byte slot)
    fills: int = 256
    #: with a program: the call that replays it (:func:`pack_replayer`, :func:`unpack_replayer`)
    replay: Callable[[Any, Any, Any, Any], np.ndarray | None] | None = None


#: Recipes by (shape as given, packing?, and for packing the array's dtype and dims).
_RECIPES: dict[tuple[Any, ...], Recipe] = {}
#: The replaying calls of the kept recipes that have one, by the same keys: :func:`pack` and
#: :func:`unpack` look here first (one lookup, no attribute of the recipe read on the way).
_REPLAYS: dict[tuple[Any, ...], Callable[[Any, Any, Any, Any], np.ndarray | None]] = {}
#: At most this many recipes are kept (then the table starts again).
RECIPES_KEPT = 512


def forget_recipes() -> None:
    """Forget every kept recipe (and program): the next call on each shape plans it again."""
    _RECIPES.clear()
    _REPLAYS.clear()


def _kept(key: tuple[Any, ...]) -> Recipe | None:
    try:
        return _RECIPES.get(key)
    except TypeError:  # an unhashable shape: nothing kept
        return None


def _keep(key: tuple[Any, ...], recipe: Recipe) -> None:
    try:
        hash(key)
    except TypeError:
        return
    if len(_RECIPES) >= RECIPES_KEPT:
        forget_recipes()
    _RECIPES[key] = recipe
    if recipe.replay is None:
        _REPLAYS.pop(key, None)
    else:
        _REPLAYS[key] = recipe.replay


# --------------------------------------------------------------------- replaying
def _with_program(
    recipe: Recipe, plan: Plan, buffer: np.ndarray, logical: np.ndarray, *, packing: bool
) -> Recipe:
    """``recipe`` with the program of its one-thread path (the same recipe where there is none)."""
    m, fmt = recipe.m, recipe.fmt
    recipe = replace(recipe, program=None, tuning=tuning(), fills=1 << min(fmt.bits, 8))
    # words and plain copies of whole bytes replay up to 32 MB (the Python of the full path cost
    # a fifth of a 16 MB copy); from there, where the full path's streamed stores would copy
    # (plain copies), it runs; programs of compiled calls alone replay at any size (the Python
    # of a 32 MB call, 0.4-0.5 ms, cost 0.1 of the copy's ratio: s8, pred, bf16), on one thread
    # or in parts side by side (an allocating call from 32 MB: the full path, as below)
    if fmt.odd_size:
        return recipe
    large = m.size_in_bytes >= STREAM_COPY_MIN_BYTES
    if fmt.sub_byte:
        box_bytes = -(-math.prod(plan.box) * fmt.bits // 8)
        words = word_program(plan, buffer, logical, fmt.bits, packing, padded=m.has_padding)
        if words is None or (large and not compiled_only(words)):
            return recipe
        return _replayable(replace(recipe, program=words, size=m.size_in_bytes, tail=box_bytes), packing)
    size = fmt.dtype.itemsize
    slots = buffer[: math.prod(plan.box) * size].view(fmt.bits_dtype).reshape(plan.box)
    chunks = chunk_list(plan.box, fmt.bits, _chunk_bytes(plan, slots, fmt.bits, packing=packing))
    program = whole_bytes_program(
        plan,
        buffer,
        logical,
        size,
        chunks,
        packing,
        fmt.bits_dtype,
        padded=m.has_padding,
        direct=lambda view, part: (
            engine.is_large_transpose(view, part) or engine.uses_kernel(view, part) or long_runs(view, part)
        ),
    )
    if program is None or (large and not compiled_only(program)):
        return recipe
    return _replayable(
        replace(recipe, program=program, size=m.size_in_bytes, tail=math.prod(plan.box) * size), packing
    )


def compiled_only(program: Program) -> bool:
    """Whether every step of ``program`` is one compiled call (no NumPy copy, no fill): the
    programs that replay from ``STREAM_COPY_MIN_BYTES`` (:func:`_with_program`), where the full
    path would store a plain copy past the caches (:func:`~layout_algebra.packing.stream_copy.streamed`)."""
    return bool(program.steps) and all(step.kind == "kernel" for step in program.steps)


def tuning() -> tuple[bool, int]:
    """The settings a program's decisions depend on: whether the compiled kernels are loaded,
    and the :func:`~layout_algebra.packing.tunables.version` of the tuning constants (module
    attributes of this module, :mod:`~layout_algebra.packing.copy_engine` and
    :mod:`~layout_algebra.packing.stage_walk`, which tests change). A program made under
    others is made again. (A replaying call compares the version alone, and whether the
    kernels are loaded only for a program made before they were: once loaded they stay
    loaded, unless ``copy_engine.USE_KERNELS`` is set, which the version counts.)"""
    return engine.kernels_loaded(), tunables.Tunable.assignments


def _wants_program(recipe: Recipe) -> bool:
    """Whether to look for the recipe's program: not yet, or under other settings."""
    return recipe.tuning != tuning()


def _replayable(recipe: Recipe, packing: bool) -> Recipe:
    """``recipe`` (which has a program) with the call that replays it."""
    return replace(recipe, replay=(pack_replayer if packing else unpack_replayer)(recipe))


def pack_replayer(recipe: Recipe) -> Callable[[np.ndarray, Any, Any, Any], np.ndarray | None]:
    """:func:`pack` of a C-contiguous array by the recipe's program, as ``replay(array, fill,
    out, threads)``: the buffer, or None (nothing written) where the full path must decide: an argument
    to check, a misaligned buffer, settings changed since the program was made (:func:`tuning`).
    Everything it can decide once is decided here: a call of 64 KB costs about as much as
    copying it, so each attribute lookup on the way counts."""
    program, size, tail, fills = recipe.program, recipe.size, recipe.tail, recipe.fills
    assert program is not None and recipe.tuning is not None
    watched, (loaded_then, version), loaded = tunables.Tunable, recipe.tuning, engine.kernels_loaded
    bits = recipe.fmt.bits
    # sub-byte slots: the fill in every slot of a byte
    spread = [sum(f << (bits * i) for i in range(8 // bits)) for f in range(fills)] if bits < 8 else None
    dims, uint8, empty, memory = (size,), _UINT8, np.empty, fresh_memory

    # on every CPU (threads=None) from PARALLEL_MIN_BYTES, unless the program runs in parts
    # (side_by_side), and into a large buffer of its own, the full path decides (threads; whether
    # to store past the caches: fresh_memory.new_result)
    many = size >= engine.PARALLEL_MIN_BYTES
    wide = size >= engine.SIDE_BY_SIDE_MIN_BYTES  # on every CPU: in parts side by side
    allocates = size < STREAM_COPY_MIN_BYTES

    def replay(arr: np.ndarray, fill: Any, out: Any, threads: int | None) -> np.ndarray | None:
        if type(fill) is not int or not 0 <= fill < fills or not arr.flags.c_contiguous:
            return None
        if out is None and not allocates:
            return None
        if watched.assignments != version or (not loaded_then and loaded()):
            return None  # made under other settings (before numba was loaded): made again
        shared = threads is None or threads > 1  # threads besides the calling one allowed
        if shared and many and parts_of_run(program.bound) is None:
            return None
        if out is None:
            buffer: np.ndarray = (
                empty(size, uint8) if size < memory.ALIGNED_MIN_BYTES else memory.empty(size, uint8)
            )
        elif type(out) is np.ndarray and out.dtype is uint8 and out.shape == dims and out.flags.writeable:
            buffer = out  # (another uint8 dtype object than NumPy's own, rare: the full path decides)
        else:
            return None
        if spread is not None:
            fill = spread[fill]
        done = side_by_side(program, buffer, arr, threads) if shared and wide else None
        if done is None:
            if shared and many:
                return None  # not in parts: the full path's pool
            done = (program.bound or program.run)(buffer, arr, fill)  # bound on the first replay
        if not done:
            return None
        if tail < size:
            buffer[tail:] = fill
        return buffer

    return replay


def unpack_replayer(recipe: Recipe) -> Callable[[Any, Any, Any, Any], np.ndarray | None]:
    """:func:`unpack` by the recipe's program, as ``replay(buffer, out, 0, threads)``, or None where the
    full path must decide (see :func:`pack_replayer`)."""
    program, size, dtype = recipe.program, recipe.size, recipe.fmt.dtype
    assert program is not None and recipe.tuning is not None
    watched, (loaded_then, version), loaded = tunables.Tunable, recipe.tuning, engine.kernels_loaded
    dims, flat, uint8, empty, memory = program.dims, (size,), _UINT8, np.empty, fresh_memory
    nbytes = math.prod(dims) * dtype.itemsize  # the result's

    many = size >= engine.PARALLEL_MIN_BYTES  # as for pack_replayer
    wide = size >= engine.SIDE_BY_SIDE_MIN_BYTES
    allocates = nbytes < STREAM_COPY_MIN_BYTES

    def replay(buffer: Any, out: Any, _: Any, threads: int | None) -> np.ndarray | None:
        if type(buffer) is not np.ndarray or buffer.dtype is not uint8 or buffer.shape != flat:
            return None
        if out is None and not allocates:
            return None
        if watched.assignments != version or (not loaded_then and loaded()):
            return None
        shared = threads is None or threads > 1
        if shared and many and parts_of_run(program.bound) is None:
            return None
        if out is None:
            result: np.ndarray = (
                empty(dims, dtype) if nbytes < memory.ALIGNED_MIN_BYTES else memory.empty(dims, dtype)
            )
        elif (
            type(out) is np.ndarray
            and out.shape == dims
            and (out.dtype is dtype or out.dtype == dtype)
            and out.flags.c_contiguous
            and out.flags.writeable
        ):
            result = out
        else:
            return None
        done = side_by_side(program, buffer, result, threads) if shared and wide else None
        if done is None:
            if shared and many:
                return None  # not in parts: the full path's pool
            done = (program.bound or program.run)(buffer, result, 0)
        return result if done else None

    return replay


def side_by_side(
    program: Program, buffer: np.ndarray, logical: np.ndarray, threads: int | None
) -> bool | None:
    """Run ``program`` with its calls cut into parts on numba's threads
    (:mod:`~layout_algebra.packing.replay_parts`), one per thread (``threads``; None: one per
    CPU): whether it ran (False: a misaligned array, nothing written); None where it does not
    run so (no parallel form, one CPU, a threading layer whose workers sleep, a forked child,
    another thread running parts)."""
    runner = parts_of_run(program.bound)
    if runner is None:
        return None
    from layout_algebra.packing import replay_parts  # numba is loaded: the program has entries

    count = replay_parts.part_count(default_threads() if threads is None else threads)
    if count < 2:
        return None
    try:
        return runner(buffer, logical, count)
    finally:
        replay_parts.finished()


# --------------------------------------------------------------------- moving data
def _pack_whole_bytes(
    plan: Plan, out: np.ndarray, fmt: Format, fill: int, threads: int, *, padded: bool
) -> None:
    size = fmt.dtype.itemsize
    n_box = math.prod(plan.box)
    slots = out[: n_box * size].view(fmt.bits_dtype).reshape(plan.box)
    out[n_box * size :] = fill
    fill_slot = np.full(size, fill, np.uint8).view(fmt.bits_dtype)[0]  # ``fill`` in every byte of a slot
    stream = streamed(out)
    chunk_bytes = _chunk_bytes(plan, slots, fmt.bits)
    if stream:  # one compiled call per chunk, not cut for the cache
        chunk_bytes = max(chunk_bytes, stage_walk.KERNEL_CHUNK_BYTES)

    def move(chunk_at: tuple[tuple[int, ...], int, int, int]) -> None:
        prefix, lo, hi, _ = chunk_at
        chunk = slots[chunk_index(prefix, lo, hi)]
        overlaps = [(b, where) for b in plan.blocks if (where := overlap(b, prefix, lo, hi)) is not None]
        if padded:  # only the slots no block covers: each byte is written once
            for gap in box_difference(tuple(slice(0, n) for n in chunk.shape), [w[1] for _, w in overlaps]):
                chunk[gap] = fill_slot
        for b, where in overlaps:
            copy_chunk(chunk[where[1]], b.view[where[0]], stream)

    chunk_bytes = shared_chunk(chunk_bytes, slots.nbytes, threads)
    run_parallel(move, chunk_list(plan.box, fmt.bits, chunk_bytes), threads)


def _chunk_bytes(plan: Plan, slots: np.ndarray, bits: int, *, packing: bool = True) -> int:
    """How long the chunks of ``slots`` (the box) are: longer if copies into the first one
    transpose, or are made by compiled kernels."""
    if slots.nbytes <= stage_walk.CHUNK_BYTES:
        return stage_walk.CHUNK_BYTES  # one chunk anyway
    large = any(b.view.nbytes > engine.BLOCK_BYTES for b in plan.blocks)
    for prefix, lo, hi, _ in chunk_list(plan.box, bits, stage_walk.CHUNK_BYTES):
        chunk = slots[chunk_index(prefix, lo, hi)]
        for b in plan.blocks:
            where = overlap(b, prefix, lo, hi)
            if where is None:
                continue
            part, view = chunk[where[1]], b.view[where[0]]
            if large and engine.is_large_transpose(part, view):
                return stage_walk.TRANSPOSING_CHUNK_BYTES
            if engine.uses_kernel(part, view) if packing else engine.uses_kernel(view, part):
                return max(stage_walk.CHUNK_BYTES, stage_walk.KERNEL_CHUNK_BYTES)
        break
    return stage_walk.CHUNK_BYTES


def _unpack_whole_bytes(
    plan: Plan, buf: np.ndarray, fmt: Format, threads: int, *, stream: bool = False
) -> None:
    size = fmt.dtype.itemsize
    n_box = math.prod(plan.box)
    slots = buf[: n_box * size].view(fmt.bits_dtype).reshape(plan.box)
    chunk_bytes = _chunk_bytes(plan, slots, fmt.bits, packing=False)
    if stream:  # one compiled call per chunk, not cut for the cache
        chunk_bytes = max(chunk_bytes, stage_walk.KERNEL_CHUNK_BYTES)
    chunk_bytes = shared_chunk(chunk_bytes, slots.nbytes, threads)

    def move(chunk_at: tuple[tuple[int, ...], int, int, int]) -> None:
        prefix, lo, hi, _ = chunk_at
        chunk = slots[chunk_index(prefix, lo, hi)]
        copies = [(b.view[w[0]], w[1]) for b in plan.blocks if (w := overlap(b, prefix, lo, hi)) is not None]
        if not all(
            engine.is_large_transpose(view, chunk[where])
            or engine.uses_kernel(view, chunk[where])
            or long_runs(view, chunk[where])
            for view, where in copies
        ):
            # read the chunk in order first: the scattered reads of the copies then hit the cache
            # (a transposing copy stages its blocks itself, a kernel reads the words in one pass,
            # and a copy in long runs reads whole lines anyway)
            staged = _staging(chunk.nbytes)[: chunk.nbytes].view(fmt.bits_dtype).reshape(chunk.shape)
            np.copyto(staged, chunk)
            chunk = staged
        for view, where in copies:
            copy_chunk(view, chunk[where], stream)

    run_parallel(move, chunk_list(plan.box, fmt.bits, chunk_bytes), threads)


#: A copy whose minor dimension is contiguous on both sides for at least this many bytes
#: reads whole cache lines: staging its chunk first would only copy the data twice.
LONG_RUN_BYTES = 256
_per_thread = threading.local()
_UINT8 = np.dtype(np.uint8)  # one staging buffer per thread, kept between calls


def long_runs(dst: np.ndarray, src: np.ndarray) -> bool:
    """Whether copying ``src`` into ``dst`` moves runs of at least ``LONG_RUN_BYTES`` that are
    contiguous on both sides (their minor dimension).

    >>> x = np.zeros((64, 1024), np.float32)
    >>> long_runs(x[:, :128], x[:8, :128]), long_runs(x[:, :8], x[:8, :8]), long_runs(x.T, x)
    (True, False, False)
    """
    if not dst.ndim:
        return False
    size = dst.itemsize
    return dst.strides[-1] == size and src.strides[-1] == size and dst.shape[-1] * size >= LONG_RUN_BYTES


def _staging(nbytes: int) -> np.ndarray:
    """A staging buffer of at least ``nbytes`` for the calling thread, kept between calls (a new
    one of a few MB costs its page faults on every call)."""
    buffer = getattr(_per_thread, "staging", None)
    if buffer is None or buffer.size < nbytes:
        buffer = _per_thread.staging = np.empty(max(nbytes, 1), np.uint8)
    return buffer


def _pack_sub_byte(plan: Plan, out: np.ndarray, bits: int, fill: int, threads: int, *, padded: bool) -> None:
    """Gather each chunk one byte per element (a "code"), then pack ``8 // bits`` codes a byte."""
    per_byte = 8 // bits
    pattern = sum(fill << (bits * i) for i in range(per_byte))
    box_bytes = -(-math.prod(plan.box) * bits // 8)
    out[box_bytes:] = pattern  # L(n) tail slots (the box's last byte is written below)
    if word_dims(plan.box, bits):
        pack_words(plan, out, bits, fill if padded else None, threads)
        return

    def move(chunk_at: tuple[tuple[int, ...], int, int, int]) -> None:
        prefix, lo, hi, first = chunk_at
        shape = (hi - lo, *plan.box[len(prefix) + 1 :])
        count = math.prod(shape)
        codes = np.full(-(-count // per_byte) * per_byte, fill, np.uint8)
        chunk = codes[:count].reshape(shape)
        for b in plan.blocks:
            where = overlap(b, prefix, lo, hi)
            if where is not None:
                engine.copy(chunk[where[1]], b.view[where[0]])
        start = first * bits // 8
        lanes.codes_to_bytes(codes, bits, out[start : start + codes.size // per_byte])

    run_parallel(move, chunk_list(plan.box, bits, stage_walk.CHUNK_BYTES), threads)


def _unpack_sub_byte(plan: Plan, buf: np.ndarray, bits: int, threads: int) -> None:
    per_byte = 8 // bits
    if word_dims(plan.box, bits):
        unpack_words(plan, buf, bits, threads)
        return

    def move(chunk_at: tuple[tuple[int, ...], int, int, int]) -> None:
        prefix, lo, hi, first = chunk_at
        shape = (hi - lo, *plan.box[len(prefix) + 1 :])
        count = math.prod(shape)
        start = first * bits // 8
        codes = lanes.bytes_to_codes(buf[start : start - (-count // per_byte)], bits)
        chunk = codes[:count].reshape(shape)
        for b in plan.blocks:
            where = overlap(b, prefix, lo, hi)
            if where is not None:
                engine.copy(b.view[where[0]], chunk[where[1]])

    run_parallel(move, chunk_list(plan.box, bits, stage_walk.CHUNK_BYTES), threads)


#: Elements per chunk for odd slot sizes; more where a block's copy into a chunk transposes.


tunables.watch(sys.modules[__name__])  # LONG_RUN_BYTES: programs made again when it changes
