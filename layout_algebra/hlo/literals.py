"""Constant literals of HLO text: the elements of ``constant({...})`` read against the shape."""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

from layout_algebra.hlo.validity import InvalidHlo
from layout_algebra.hlo.verify_values import Inexpressible
from layout_algebra.model.primitive_types import PrimitiveType
from layout_algebra.model.shapes import ArrayShape

#: Constants with more elements than this are not expanded (answer: unknown).
MAX_CONSTANT_ELEMENTS = 4096

# --------------------------------------------------------------------------- literals
_LITERAL_TOKEN = re.compile(r"\s*(\{|\}|,|[^\s{},]+)")


def literal_elements(text: str, shape: ArrayShape, name: str) -> list:
    """The values of a constant's literal, row-major, checked against its shape."""
    if not all(isinstance(d, int) for d in shape.dimensions):
        raise InvalidHlo(f"constant {name} has symbolic dimensions {shape}")
    count = math.prod(shape.dimensions)
    if count > MAX_CONSTANT_ELEMENTS:
        raise Inexpressible(f"constant {name} has {count} elements (more than {MAX_CONSTANT_ELEMENTS})")
    if shape.element_type.value.kind not in ("pred", "signed", "unsigned", "float"):
        raise Inexpressible(f"constant {name}: {shape.element_type.text} literals are not read")
    tokens = [m.group(1) for m in _LITERAL_TOKEN.finditer(text)]
    pos = 0

    def nested(depth: int) -> Any:
        nonlocal pos
        if pos >= len(tokens):
            raise InvalidHlo(f"constant {name}: the literal {text!r} ends early")
        if tokens[pos] == "{":
            pos += 1
            items = []
            while pos < len(tokens) and tokens[pos] != "}":
                items.append(nested(depth + 1))
                if pos < len(tokens) and tokens[pos] == ",":
                    pos += 1
            if pos >= len(tokens):
                raise InvalidHlo(f"constant {name}: '{{' is never closed in {text!r}")
            pos += 1
            return items
        token = tokens[pos]
        pos += 1
        return token

    tree = nested(0)
    if pos != len(tokens):
        raise InvalidHlo(f"constant {name}: unexpected {tokens[pos]!r} in the literal {text!r}")
    flat: list[str] = []

    def walk(node: Any, dims: tuple) -> None:
        if not dims:
            if isinstance(node, list):
                if len(node) == 1 and not isinstance(node[0], list) and shape.rank == 0:
                    flat.append(node[0])
                    return
                raise InvalidHlo(f"constant {name}: the literal {text!r} nests deeper than {shape}")
            flat.append(node)
            return
        if not isinstance(node, list) or len(node) != dims[0]:
            got = len(node) if isinstance(node, list) else "a scalar"
            raise InvalidHlo(
                f"constant {name}: the literal {text!r} has {got} entries where {shape} needs {dims[0]}"
            )
        for item in node:
            walk(item, dims[1:])

    walk(tree, tuple(shape.dimensions))
    return [_literal_value(t, shape.element_type, name) for t in flat]


def representable(value: Fraction, type_text: str) -> bool:
    """Is ``value`` exactly a finite value of the float type ``type_text``?"""
    import numpy as np

    dtype = _float_dtype(type_text)
    if dtype is None:
        return False
    with np.errstate(over="ignore", invalid="ignore"):
        narrow = np.asarray(float(value)).astype(dtype)
    return bool(np.isfinite(narrow)) and Fraction(float(narrow)) == value and float(value) == value


def _float_dtype(type_text: str):
    """The NumPy (or ``ml_dtypes``) scalar type that rounds like ``type_text``, or None if none does."""
    from layout_algebra.pack.numpy_eval import numpy_dtype  # lazily: NumPy only when a float literal is read

    try:
        return numpy_dtype(type_text).type
    except ValueError:
        return None


def _literal_value(token: str, etype: PrimitiveType, name: str) -> Any:
    """One literal entry as this element type's value: ints exact, floats rounded to the type."""
    t = token.strip().lower()
    kind = etype.value.kind
    if kind == "pred":
        if t in ("true", "1"):
            return 1
        if t in ("false", "0"):
            return 0
        raise InvalidHlo(f"constant {name}: {token!r} is not a pred value (true or false)")
    if kind in ("signed", "unsigned"):
        try:
            value = int(t)
        except ValueError:
            raise InvalidHlo(f"constant {name}: {token!r} is not an integer ({etype.text})") from None
        bits = etype.bit_width
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if kind == "signed" else (0, (1 << bits) - 1)
        if not lo <= value <= hi:
            raise InvalidHlo(f"constant {name}: {value} is out of the range of {etype.text}")
        return value
    if kind == "float":
        dtype = _float_dtype(etype.text)
        if dtype is None:
            raise Inexpressible(f"constant {name}: no exact rounding known for {etype.text}")
        if t in ("nan", "+nan"):
            return "nan"
        if t == "-nan":  # a NaN with its sign bit set: other bits than "nan"
            return "-nan"
        try:
            number = float(t)
        except ValueError:
            raise InvalidHlo(f"constant {name}: {token!r} is not a number ({etype.text})") from None
        import numpy as np

        with np.errstate(over="ignore", invalid="ignore"):
            rounded = float(np.asarray(number).astype(dtype))
        if math.isnan(rounded):
            return "nan"
        if math.isinf(rounded):
            return "inf" if rounded > 0 else "-inf"
        if rounded == 0 and math.copysign(1.0, rounded) < 0:
            return "-0"
        return Fraction(rounded)
    raise Inexpressible(f"constant {name}: {etype.text} literals are not read")
