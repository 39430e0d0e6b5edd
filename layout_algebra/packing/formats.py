"""How an element is stored for packing: its NumPy dtype, its slot, and the checks on what callers pass.

:func:`numpy_dtype` names the dtype that holds one element of an XLA type; :func:`layout_format`
reads a shape into its layout map and a :class:`Format` (the dtype, the unsigned dtype that
moves its bits, bits per slot); the ``checked_*`` functions turn what a caller passed to
:func:`~layout_algebra.packing.numpy_eval.pack` or :func:`~layout_algebra.packing.numpy_eval.unpack`
into arrays of the right kind, or a ``ValueError`` quoting the shape.

>>> m, fmt = layout_format("s4[8,128]{1,0:T(8,128)E(4)}")
>>> fmt.dtype, fmt.bits, fmt.sub_byte, fmt.odd_size
(dtype(int4), 4, True, False)
>>> layout_format("s4[8]{0:E(5)}")[1].odd_size       # a 5-bit slot for a 4-bit element
True
>>> checked_fill(300, m, fmt)
Traceback (most recent call last):
...
layout_algebra.InvalidArgumentError: s4[8,128]{1,0:T(8,128)E(4)}: fill 300 must be in 0..15 (the bits of one 4-bit slot)
"""

from __future__ import annotations

import operator
import sys
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from layout_algebra.meaning.layout_map import LayoutMap, layout_map
from layout_algebra.model.errors import InvalidArgumentError
from layout_algebra.model.primitive_types import PrimitiveType, primitive_type
from layout_algebra.model.shapes import Shape
from layout_algebra.packing import copy_engine as engine
from layout_algebra.packing.threads import default_threads

__all__ = [
    "Format",
    "checked_array",
    "checked_buffer",
    "checked_fill",
    "checked_out",
    "layout_format",
    "numpy_dtype",
    "packable_map",
    "thread_count",
]

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


# ----------------------------------------------------------------------------- dtypes
def numpy_dtype(element_type: PrimitiveType | str) -> np.dtype:
    """The NumPy dtype that holds one element of an XLA type (``ml_dtypes`` for the new ones).

    >>> [numpy_dtype(t).name for t in ("f32", "pred", "bf16", "s4")]
    ['float32', 'bool', 'bfloat16', 'int4']
    >>> numpy_dtype("token")
    Traceback (most recent call last):
    ...
    layout_algebra.InvalidArgumentError: element type 'token' has no NumPy dtype: only array element types (pred, integers, floats, complex) do
    """
    t = primitive_type(element_type) if isinstance(element_type, str) else element_type
    return _dtype(t)


@cache
def _dtype(t: PrimitiveType) -> np.dtype:
    name = t.text
    if name in _NUMPY_TYPES:
        return np.dtype(_NUMPY_TYPES[name])
    if name not in _ML_DTYPES_TYPES:
        raise InvalidArgumentError(
            f"element type {name!r} has no NumPy dtype: only array element types "
            "(pred, integers, floats, complex) do"
        )
    attribute = _ML_DTYPES_TYPES[name]
    try:
        import ml_dtypes
    except ImportError:  # pragma: no cover - ml_dtypes is a dependency
        raise InvalidArgumentError(
            f"element type {name!r} needs the ml_dtypes package (pip install ml_dtypes)"
        ) from None
    if not hasattr(ml_dtypes, attribute):
        raise InvalidArgumentError(
            f"element type {name!r} needs ml_dtypes.{attribute}, which ml_dtypes "
            f"{getattr(ml_dtypes, '__version__', '?')} does not have; upgrade ml_dtypes"
        )
    dtype: np.dtype[Any] = np.dtype(getattr(ml_dtypes, attribute))
    return dtype


# ------------------------------------------------------------------------- checking
@dataclass(frozen=True)
class Format:
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


#: The concrete layout maps of the shapes packed so far, by the shape as given (text or
#: ``Shape``): reading the text again costs more than a small copy.
_MAPS: dict[Shape | str, LayoutMap] = {}
#: At most this many are kept (then the table starts again).
MAPS_KEPT = 1024


def packable_map(shape: Shape | str) -> LayoutMap:
    """The layout map of ``shape`` if it can be packed (concrete sizes, a little-endian host);
    kept, so that packing the same shape again does not read its text again."""
    try:
        m = _MAPS.get(shape)
        keep = True
    except TypeError:  # an unhashable Shape: not kept
        m, keep = None, False
    if m is not None:
        return m
    m = layout_map(shape)  # raises for tuples, tokens, '?', split configs, bad tiles
    if m.is_symbolic:
        raise InvalidArgumentError(
            f"{m.shape}: cannot pack a shape with symbolic dimensions; specialize() it first"
        )
    if sys.byteorder != "little":  # pragma: no cover - every supported host is little-endian
        raise InvalidArgumentError(f"{m.shape}: packing needs a little-endian host")
    if keep:
        if len(_MAPS) >= MAPS_KEPT:
            _MAPS.clear()
        _MAPS[shape] = m
    return m


def layout_format(shape: Shape | str) -> tuple[LayoutMap, Format]:
    m = packable_map(shape)
    t = m.shape.element_type
    try:
        dtype = _dtype(t)
    except ValueError as err:
        raise InvalidArgumentError(f"{m.shape}: {err}") from None
    bits = m.element_bits  # >= the type's bit width: layout_map refuses a narrower E(n)
    return m, Format(dtype, _BITS_DTYPES[dtype.itemsize], bits, t.bit_width)


def checked_array(array: Any, m: LayoutMap, fmt: Format) -> np.ndarray:
    arr = np.asarray(array)
    dims = tuple(m.logical_dimensions)
    if arr.shape != dims:
        raise InvalidArgumentError(
            f"{m.shape}: the array has dimensions {list(arr.shape)}, the shape has {list(dims)}"
        )
    if arr.dtype != fmt.dtype:
        if arr.dtype.kind in "biufc" and arr.dtype.newbyteorder("=") == fmt.dtype:
            return arr.astype(fmt.dtype)  # the same values in the other byte order
        module = "ml_dtypes" if fmt.dtype.kind == "V" else "numpy"
        raise InvalidArgumentError(
            f"{m.shape}: the array has dtype {arr.dtype}, but {m.shape.element_type.text} elements "
            f"are {fmt.dtype}; convert it first, e.g. array.astype({module}.{fmt.dtype.name}), "
            "if the values fit"
        )
    return arr


def checked_out(out: Any, m: LayoutMap, fmt: Format) -> np.ndarray:
    dims = tuple(m.logical_dimensions)
    if not isinstance(out, np.ndarray) or out.shape != dims or out.dtype != fmt.dtype:
        what = f"{list(out.shape)} {out.dtype}" if isinstance(out, np.ndarray) else type(out).__name__
        raise InvalidArgumentError(f"{m.shape}: out must be a {list(dims)} {fmt.dtype} array, not {what}")
    if not out.flags.writeable:
        raise InvalidArgumentError(f"{m.shape}: out is read-only")
    return out


def thread_count(threads: Any, m: LayoutMap) -> int:
    if threads is None:
        return default_threads() if m.size_in_bytes >= engine.PARALLEL_MIN_BYTES else 1
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise InvalidArgumentError(
            f"{m.shape}: threads={threads!r} must be a positive integer (or None: every CPU)"
        )
    return threads


def checked_fill(fill: Any, m: LayoutMap, fmt: Format) -> int:
    try:
        value = operator.index(fill)
    except TypeError:
        raise InvalidArgumentError(f"{m.shape}: fill {fill!r} must be an integer") from None
    limit = 1 << min(fmt.bits, 8)
    if not 0 <= value < limit:
        what = "a byte value" if limit == 256 else f"the bits of one {fmt.bits}-bit slot"
        raise InvalidArgumentError(f"{m.shape}: fill {value} must be in 0..{limit - 1} ({what})")
    return value


def checked_buffer(buffer: Any, m: LayoutMap, name: str = "the buffer") -> np.ndarray:
    if isinstance(buffer, bytes | bytearray | memoryview):
        buffer = np.frombuffer(buffer, np.uint8)
    if not isinstance(buffer, np.ndarray):
        raise InvalidArgumentError(
            f"{m.shape}: {name} must be a uint8 NumPy array or bytes, not {type(buffer).__name__}"
        )
    if buffer.dtype != np.uint8 or buffer.ndim != 1:
        raise InvalidArgumentError(
            f"{m.shape}: {name} must be a 1-D uint8 array, not {buffer.ndim}-D {buffer.dtype}"
        )
    if buffer.size != m.size_in_bytes:
        raise InvalidArgumentError(
            f"{m.shape}: {name} has {buffer.size} bytes, the layout needs {m.size_in_bytes}"
        )
    return buffer
