"""XLA's element types: names, bit widths and storage widths.

Every array element in XLA has a *primitive type*. Three widths matter and they are
not the same thing:

* ``bit_width``: the number of bits of information (``pred`` is 1 bit, ``s4`` is 4);
* ``byte_width``: ``ceil(bit_width / 8)``, what XLA charges per element when nothing
  says otherwise (``ShapeUtil::ByteSizeOfPrimitiveType``);
* ``storage_bit_width``: XLA's ``primitive_util::StorageBitWidth``: ``pred`` is stored
  in 8 bits, every other type in ``bit_width``.

How many bits an element takes *in an array's memory* also depends on the layout: with
``E(n)`` it is ``n``; without, XLA stores every element in whole bytes (``ByteWidth``), so
an ``s4`` array is packed two to a byte only under ``E(4)`` (see ``layout_algebra.meaning.sizes``).

>>> from layout_algebra.model.primitive_types import primitive_type
>>> pred = primitive_type("pred")
>>> pred.bit_width, pred.byte_width, pred.storage_bit_width
(1, 1, 8)
>>> s4 = primitive_type("s4")
>>> s4.bit_width, s4.byte_width, s4.is_sub_byte_non_pred
(4, 1, True)
>>> primitive_type("bf16").bit_width
16

Names are exactly XLA's lower-case text names; anything else is rejected, with the
closest spellings suggested:

>>> primitive_type("F32")
Traceback (most recent call last):
...
layout_algebra.InvalidArgumentError: unknown element type 'F32'; XLA type names are lower case (did you mean 'f32'?)
"""

from __future__ import annotations

import difflib
import enum
from dataclasses import dataclass

from layout_algebra.model.errors import InvalidArgumentError

__all__ = ["ARRAY_TYPE_NAMES", "PrimitiveType", "TypeInfo", "primitive_type"]


@dataclass(frozen=True)
class TypeInfo:
    """The facts XLA's ``primitive_util`` knows about one element type."""

    name: str
    proto_number: int
    bit_width: int  # 0 for non-array types (tuple, token, opaque, buffer)
    kind: str  # "pred" | "signed" | "unsigned" | "float" | "complex" | "other"


class PrimitiveType(enum.Enum):
    """An XLA element type; ``PrimitiveType.F32.value.name == "f32"``."""

    PRED = TypeInfo("pred", 1, 1, "pred")
    S1 = TypeInfo("s1", 30, 1, "signed")
    S2 = TypeInfo("s2", 26, 2, "signed")
    S4 = TypeInfo("s4", 21, 4, "signed")
    S8 = TypeInfo("s8", 2, 8, "signed")
    S16 = TypeInfo("s16", 3, 16, "signed")
    S32 = TypeInfo("s32", 4, 32, "signed")
    S64 = TypeInfo("s64", 5, 64, "signed")
    U1 = TypeInfo("u1", 31, 1, "unsigned")
    U2 = TypeInfo("u2", 27, 2, "unsigned")
    U4 = TypeInfo("u4", 22, 4, "unsigned")
    U8 = TypeInfo("u8", 6, 8, "unsigned")
    U16 = TypeInfo("u16", 7, 16, "unsigned")
    U32 = TypeInfo("u32", 8, 32, "unsigned")
    U64 = TypeInfo("u64", 9, 64, "unsigned")
    F16 = TypeInfo("f16", 10, 16, "float")
    BF16 = TypeInfo("bf16", 16, 16, "float")
    F32 = TypeInfo("f32", 11, 32, "float")
    F64 = TypeInfo("f64", 12, 64, "float")
    F8E5M2 = TypeInfo("f8e5m2", 19, 8, "float")
    F8E4M3 = TypeInfo("f8e4m3", 28, 8, "float")
    F8E4M3FN = TypeInfo("f8e4m3fn", 20, 8, "float")
    F8E4M3B11FNUZ = TypeInfo("f8e4m3b11fnuz", 23, 8, "float")
    F8E3M4 = TypeInfo("f8e3m4", 29, 8, "float")
    F8E5M2FNUZ = TypeInfo("f8e5m2fnuz", 24, 8, "float")
    F8E4M3FNUZ = TypeInfo("f8e4m3fnuz", 25, 8, "float")
    F4E2M1FN = TypeInfo("f4e2m1fn", 32, 4, "float")
    F8E8M0FNU = TypeInfo("f8e8m0fnu", 33, 8, "float")
    C64 = TypeInfo("c64", 15, 64, "complex")
    C128 = TypeInfo("c128", 18, 128, "complex")
    TUPLE = TypeInfo("tuple", 13, 0, "other")
    OPAQUE_TYPE = TypeInfo("opaque", 14, 0, "other")
    TOKEN = TypeInfo("token", 17, 0, "other")
    BUFFER = TypeInfo("buffer", 34, 0, "other")

    def __repr__(self) -> str:
        return f"PrimitiveType.{self.name}"

    def __str__(self) -> str:
        return self.value.name

    @property
    def text(self) -> str:
        """The name XLA prints, e.g. ``"bf16"``."""
        return self.value.name

    @property
    def is_array_type(self) -> bool:
        """True for element types of arrays (everything but tuple/opaque/token/buffer)."""
        return self.value.kind != "other"

    @property
    def bit_width(self) -> int:
        """``primitive_util::BitWidth``: bits of information (pred is 1)."""
        self._require_array_type("bit_width")
        return self.value.bit_width

    @property
    def byte_width(self) -> int:
        """``primitive_util::ByteWidth`` = ceil(bit_width / 8)."""
        return -(-self.bit_width // 8)

    @property
    def storage_bit_width(self) -> int:
        """``primitive_util::StorageBitWidth``: ``pred`` takes 8, every other type ``bit_width``."""
        return 8 if self is PrimitiveType.PRED else self.bit_width

    @property
    def is_integral(self) -> bool:
        """Signed or unsigned integer (not pred)."""
        return self.value.kind in ("signed", "unsigned")

    @property
    def is_unsigned_integral(self) -> bool:
        return self.value.kind == "unsigned"

    @property
    def is_floating_point(self) -> bool:
        return self.value.kind == "float"

    @property
    def is_complex(self) -> bool:
        return self.value.kind == "complex"

    @property
    def is_sub_byte_non_pred(self) -> bool:
        """``primitive_util::IsSubByteNonPredType``: s1, u1, s2, u2, s4, u4, f4e2m1fn."""
        return self.is_array_type and self is not PrimitiveType.PRED and self.bit_width < 8

    def _require_array_type(self, what: str) -> None:
        if not self.is_array_type:
            raise InvalidArgumentError(f"{self.text!r} is not an array element type; it has no {what}")


_BY_NAME: dict[str, PrimitiveType] = {t.value.name: t for t in PrimitiveType}
#: The type names accepted inside ``name[...]`` (tuple and buffer are not lexed as types).
ARRAY_TYPE_NAMES: frozenset[str] = frozenset(
    name for name, t in _BY_NAME.items() if name not in ("tuple", "buffer")
)


def primitive_type(name: str) -> PrimitiveType:
    """The ``PrimitiveType`` whose XLA text name is ``name`` (exact, lower case).

    ``"tuple"`` is a valid name (as in XLA's ``StringToPrimitiveType``) even though a
    shape is never written ``tuple[...]``.
    """
    found = _BY_NAME.get(name)
    if found is not None:
        return found
    hint = ""
    if name.lower() in _BY_NAME:
        hint = f" (did you mean {name.lower()!r}?)"
        raise InvalidArgumentError(f"unknown element type {name!r}; XLA type names are lower case{hint}")
    close = difflib.get_close_matches(name, _BY_NAME, n=3)
    if close:
        hint = " (did you mean " + " or ".join(repr(c) for c in close) + "?)"
    raise InvalidArgumentError(f"unknown element type {name!r}{hint}")
