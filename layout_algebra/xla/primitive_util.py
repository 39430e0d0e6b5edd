"""XLA's ``primitive_util``: element type names.

This reproduces the answer of XLA's C++ code, quirks included (see ``layout_algebra.xla``).

``StringToPrimitiveType`` accepts exactly the lower-case enum names, plus ``opaque`` for
``OPAQUE_TYPE``. A comment in XLA says ``opaque_type`` is accepted too; the code does not
insert it, so it is rejected. ``tuple`` is a valid name even though no shape is written
``tuple[...]``.

>>> from layout_algebra.xla import string_to_primitive_type
>>> string_to_primitive_type("bf16")
PrimitiveType.BF16
>>> string_to_primitive_type("tuple"), string_to_primitive_type("opaque")
(PrimitiveType.TUPLE, PrimitiveType.OPAQUE_TYPE)
>>> string_to_primitive_type("F32")
Traceback (most recent call last):
...
layout_algebra.xla.XlaInputError: string_to_primitive_type (primitive_util::StringToPrimitiveType): unknown element type 'F32'; XLA type names are lower case (did you mean 'f32'?)
"""

from __future__ import annotations

from layout_algebra.model.primitive_types import PrimitiveType, primitive_type
from layout_algebra.xla._common import XlaInputError

__all__ = ["string_to_primitive_type"]


def string_to_primitive_type(name: str) -> PrimitiveType:
    """XLA's ``primitive_util::StringToPrimitiveType``: the type named ``name``, or an error.

    Names are case-sensitive (``"Pred"`` fails); ``"opaque_type"`` fails, ``"opaque"``
    works. Raises ``XlaInputError`` (a ``ValueError``) for an unknown name.

    >>> string_to_primitive_type("pred").bit_width
    1
    """
    if not isinstance(name, str):
        raise TypeError(f"string_to_primitive_type expects a str, got {type(name).__name__}: {name!r}")
    try:
        return primitive_type(name)
    except ValueError as e:
        raise XlaInputError(
            f"string_to_primitive_type (primitive_util::StringToPrimitiveType): {e}"
        ) from None
