"""Values of the HLO attributes that layout analysis reads, parsed from their raw text.

Each function takes the raw value text (what follows ``name=``) and returns plain
Python values, or raises ``AttributeValueError`` with the offset of the fault inside
the value (the module parser turns it into a line and column).

>>> parse_int_list("{1,0}"), parse_int_list("{}")
((1, 0), ())
>>> parse_slice("{[0:1], [2:32:2]}")
(SliceDimension(start=0, limit=1, stride=1), SliceDimension(start=2, limit=32, stride=2))
>>> parse_padding("0_0x1_2_1")
(PaddingDimension(low=0, high=0, interior=0), PaddingDimension(low=1, high=2, interior=1))
>>> computation_names("%fused_computation.1"), computation_names("{%a, b}")
(('fused_computation.1',), ('a', 'b'))
>>> parse_int_list("{1,x}")
Traceback (most recent call last):
...
layout_algebra.hlo.attributes.AttributeValueError: expected an integer, found 'x'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from layout_algebra.model.errors import LayoutAlgebraError

__all__ = [
    "AttributeValueError",
    "PaddingDimension",
    "SliceDimension",
    "computation_names",
    "parse_index",
    "parse_int_list",
    "parse_padding",
    "parse_slice",
]


@dataclass(frozen=True)
class SliceDimension:
    """One ``[start:limit:stride]`` entry of a ``slice={...}`` attribute."""

    start: int
    limit: int
    stride: int = 1


@dataclass(frozen=True)
class PaddingDimension:
    """One ``low_high[_interior]`` entry of a ``padding=...`` attribute (``x``-separated)."""

    low: int
    high: int
    interior: int = 0


class AttributeValueError(LayoutAlgebraError, ValueError):
    """An attribute value that does not have the expected form; ``offset`` is 0-based."""

    def __init__(self, reason: str, offset: int = 0) -> None:
        self.reason = reason
        self.offset = offset
        super().__init__(reason)


_SPACE = re.compile(r"\s*")
_INT = re.compile(r"-?[0-9]+")
_NAME = re.compile(r"%?([A-Za-z_][\w.\-]*)")


class _Reader:
    """A tiny cursor over one attribute value."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def skip(self) -> None:
        self.pos = _SPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]

    def at(self, s: str) -> bool:
        self.skip()
        return self.text.startswith(s, self.pos)

    def accept(self, s: str) -> bool:
        if self.at(s):
            self.pos += len(s)
            return True
        return False

    def found(self) -> str:
        self.skip()
        if self.pos >= len(self.text):
            return "the end of the value"
        word = re.match(r"[\w.%\-]+|.", self.text[self.pos :], re.S)
        return repr(word.group()) if word else "?"

    def expect(self, s: str) -> None:
        if not self.accept(s):
            raise AttributeValueError(f"expected {s!r}, found {self.found()}", self.pos)

    def integer(self) -> int:
        self.skip()
        m = _INT.match(self.text, self.pos)
        if m is None:
            raise AttributeValueError(f"expected an integer, found {self.found()}", self.pos)
        self.pos = m.end()
        return int(m.group())

    def end(self) -> None:
        self.skip()
        if self.pos != len(self.text):
            raise AttributeValueError(f"unexpected {self.found()} after the value", self.pos)


_FAST_INT_LIST = re.compile(r"\{(-?[0-9]+(?:,-?[0-9]+)*)?\}")
_FAST_PADDING = re.compile(r"-?[0-9]+_-?[0-9]+(?:_-?[0-9]+)?(?:x-?[0-9]+_-?[0-9]+(?:_-?[0-9]+)?)*")


def parse_int_list(text: str) -> tuple[int, ...]:
    """``{1,0,2}`` -> ``(1, 0, 2)`` (``dimensions``, ``dynamic_slice_sizes``, ...)."""
    fast = _FAST_INT_LIST.fullmatch(text)  # as XLA prints it: no spaces
    if fast is not None:
        return tuple(int(v) for v in fast.group(1).split(",")) if fast.group(1) else ()
    r = _Reader(text)
    r.expect("{")
    values: list[int] = []
    if not r.accept("}"):
        while True:
            values.append(r.integer())
            if r.accept("}"):
                break
            r.expect(",")
    r.end()
    return tuple(values)


def parse_slice(text: str) -> tuple[SliceDimension, ...]:
    """``{[start:limit], [start:limit:stride], ...}``, one entry per dimension."""
    r = _Reader(text)
    r.expect("{")
    dims: list[SliceDimension] = []
    if not r.accept("}"):
        while True:
            r.expect("[")
            start = r.integer()
            r.expect(":")
            limit = r.integer()
            stride = r.integer() if r.accept(":") else 1
            r.expect("]")
            dims.append(SliceDimension(start, limit, stride))
            if r.accept("}"):
                break
            r.expect(",")
    r.end()
    return tuple(dims)


def parse_padding(text: str) -> tuple[PaddingDimension, ...]:
    """``low_high[_interior]`` per dimension, joined by ``x``: ``0_0x0_1`` (a ``pad``'s config)."""
    if _FAST_PADDING.fullmatch(text):
        return tuple(PaddingDimension(*map(int, entry.split("_"))) for entry in text.split("x"))
    r = _Reader(text)
    dims: list[PaddingDimension] = []
    while True:
        parts = [r.integer()]
        while r.accept("_"):
            parts.append(r.integer())
        if len(parts) not in (2, 3):
            raise AttributeValueError(
                f"a padding entry is low_high or low_high_interior, found {len(parts)} numbers", r.pos
            )
        dims.append(PaddingDimension(*parts))
        if not r.accept("x"):
            break
    r.end()
    return tuple(dims)


def parse_index(text: str) -> int:
    """``index=3`` (``get-tuple-element``)."""
    r = _Reader(text)
    value = r.integer()
    r.end()
    return value


def computation_names(text: str) -> tuple[str, ...]:
    """``%name``, ``name`` or ``{%a, %b}`` -> the computation names, without ``%``."""
    r = _Reader(text)
    braced = r.accept("{")
    names: list[str] = []
    while True:
        if braced and r.at("}"):
            break
        r.skip()
        m = _NAME.match(r.text, r.pos)
        if m is None:
            raise AttributeValueError(f"expected a computation name, found {r.found()}", r.pos)
        names.append(m.group(1))
        r.pos = m.end()
        if not braced or not r.accept(","):
            break
    if braced:
        r.expect("}")
    r.end()
    return tuple(names)
