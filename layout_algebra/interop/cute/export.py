"""CuTe ``shape:stride`` layouts in and out.

A CuTe layout (NVIDIA CUTLASS) gives each logical dimension a *mode*: a size, or a
tuple of sizes read fastest-first, each with a stride. The offset of an index is the sum
of its mixed-radix digits times their strides. :func:`to_cute` exports a layout (each result
certified against the layout map); :func:`from_cute` reads such text back into the XLA
layout that stores every element at the same place:

>>> from layout_algebra.interop.cute.export import from_cute, to_cute
>>> to_cute("bf16[16,256]{1,0:T(8,128)(2,1)}")
'((2,4,2),(128,2)):((1,256,2048),(2,1024))'
>>> str(from_cute("((2,4,2),(128,2)):((1,256,2048),(2,1024))", "bf16"))
'bf16[16,256]{1,0:T(8,128)(2,1)}'

Plain strides are a ``minor_to_major``; a gap in them is a tile that pads (rows of 100
elements 128 apart):

>>> str(from_cute("(4,6):(1,4)", "f32"))
'f32[4,6]{0,1}'
>>> str(from_cute("(5,100):(128,1)", "f32"))
'f32[5,100]{1,0:T(128)}'

CuTe text records where elements are, not how big the buffer is, and leaves out
modes of size 1. So several XLA layouts can give the same text (``T(1,128)`` and
``T(128)`` above; ``L(n)``; where a size-1 dimension sits in ``minor_to_major``):
:func:`from_cute` returns the simplest, the normal form
(:mod:`layout_algebra.decide.normal_form`: fewest tile levels, then fewest entries, ...,
proved the same layout). Layouts it cannot match raise
:class:`NotExpressible` with the reason:

>>> from_cute("(4,6):(6,2)", "f32")
Traceback (most recent call last):
...
layout_algebra.meaning.recover.NotExpressible: (4,6):(6,2): the digit i1 takes 6 values but the next stride leaves room for 3: elements would overlap

**Export.** Precisely, a CuTe layout is a pair of nested integer tuples, ``Shape:Stride``. Each
top-level *mode* takes one coordinate; a hierarchical mode ``(s_1, s_2, ...)`` reads its
coordinate *colexicographically* (the first sub-mode varies fastest:
``x = x_1 + s_1·x_2 + s_1·s_2·x_3 + ...``), and the offset is ``Σ x_j·stride_j``. So
``(8,2):(128,1024)`` sends 11 = 3 + 8·1 to ``3·128 + 1·1024``.

An XLA tiled layout is such a map when every tile cuts each dimension at *digit
boundaries*: the layout then takes each logical index apart into mixed-radix digits
(tile number, position in tile, ...) and places each digit with a stride. With one mode
per logical dimension, fastest digit first:

>>> to_cute("f32[16,384]{1,0:T(8,128)}")
'((8,2),(128,3)):((128,3072),(1,1024))'
>>> to_cute("bf16[16,256]{1,0:T(8,128)(2,1)}")
'((2,4,2),(128,2)):((1,256,2048),(2,1024))'
>>> to_cute("f32[4,6]{0,1}")
'(4,6):(1,4)'

Padding at the end of a mode is fine (a layout need not be onto its buffer); padding
*inside* a mode is not expressible, nor is a tile that cuts a dimension between digits:

>>> to_cute("f32[5,256]{1,0:T(8,128)}")
'(5,(128,2)):(128,(1,1024))'
>>> to_cute("f32[12,256]{1,0:T(8,128)}")
Traceback (most recent call last):
...
layout_algebra.meaning.recover.NotExpressible: f32[12,256]{1,0:T(8,128)}: dimension 0 (size 12) is padded to 16 by tile 1: (8,128) and then split as 2 x 8, so the padding falls inside a mode: CuTe layouts cannot express padding there

Every result is checked: the printed text is read back, evaluated by CuTe's definition
above, and certified equal to the layout map (:func:`~layout_algebra.codegen.certification.certify`;
exhaustive for concrete shapes of up to ``EXHAUSTIVE_LIMIT`` elements).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Any

import sympy

from layout_algebra.codegen.certification import Certification, certify
from layout_algebra.decide.normal_form import normal_form
from layout_algebra.meaning.digits import Digit
from layout_algebra.meaning.layout_map import LayoutMap, index_symbols, layout_map
from layout_algebra.meaning.recover import NotExpressible, recover_layout, strided_positions
from layout_algebra.meaning.stages.stages import (
    AlignTail,
    Combine,
    Linearize,
    Pad,
    PrependUnitDims,
    Split,
    ToBits,
    Transpose,
)
from layout_algebra.model.shapes import ArrayShape, Shape
from layout_algebra.model.symbols import dim_symbol

__all__ = [
    "CuteLayout",
    "CuteTextError",
    "NotExpressible",
    "cute_expr",
    "cute_layout",
    "cute_modes",
    "from_cute",
    "parse_cute",
    "to_cute",
]


@dataclass(frozen=True)
class CuteLayout:
    """A layout in CuTe form: ``shape`` and ``stride`` (one mode per logical dimension), the text, its check."""

    shape: tuple[Any, ...]
    stride: tuple[Any, ...]
    text: str
    certification: Certification

    def __str__(self) -> str:
        return self.text


def _product(values: Any) -> Any:
    return math.prod(values, start=1)


def _digits_of_layout(m: LayoutMap) -> list[Digit]:
    """The digits of every logical index, major to minor in memory, or ``NotExpressible``.

    Each digit of a dimension starts whole (``Digit(k, 1, None, size)``); tiles pad and cut
    them, and transposes and combines move them, as the layout's stages say.
    """
    shape = str(m.shape)
    sizes = m.shape.dimensions
    dims: list[list[Digit]] = []
    for k, d in enumerate(m.shape.dimensions):
        if isinstance(d, int) and d == 0:
            raise NotExpressible(f"{shape}: dimension {k} has size 0; a CuTe shape has no empty modes")
        dims.append([Digit(k, 1, None, d)])
    for step in m.steps:
        for stage in step.stages:
            if isinstance(stage, Transpose):
                dims = [dims[p] for p in stage.permutation]
            elif isinstance(stage, PrependUnitDims):
                dims = [[] for _ in range(stage.count)] + dims
            elif isinstance(stage, Combine):
                dims = [[d for i in group for d in dims[i]] for group in stage.groups]
            elif isinstance(stage, Pad):
                dims = [
                    _pad(shape, step.label, dims[k], stage.padded[k]) if k in stage.grown else dims[k]
                    for k in range(len(dims))
                ]
            elif isinstance(stage, Split):
                out = dims[: stage.start]
                for run, t in zip(dims[stage.start :], stage.tile, strict=True):
                    out += list(_split(shape, step.label, run, t, sizes))
                dims = out
            elif isinstance(stage, Linearize):
                return [d for run in dims for d in run]
            elif not isinstance(stage, (AlignTail, ToBits)):  # pragma: no cover - a new stage kind
                raise NotExpressible(f"{shape}: no CuTe form for the stage {stage.describe()}")
    raise AssertionError("a layout pipeline always linearizes")  # pragma: no cover


def _who(run: list[Digit]) -> str:
    owners = sorted({d.dim for d in run if d.dim is not None})
    if len(owners) == 1:
        return f"dimension {owners[0]}"
    return "combined dimensions " + ", ".join(map(str, owners)) if owners else "a unit dimension"


def _pad(shape: str, label: str, run: list[Digit], padded: Any) -> list[Digit]:
    if not isinstance(padded, int) or not all(isinstance(d.extent, int) for d in run):
        raise NotExpressible(
            f"{shape}: {_who(run)} has a symbolic size and {label} may pad it; CuTe layouts cannot "
            f"express padding that depends on a size (give the size, or a multiple of the tile)"
        )
    if not run:
        return [Digit(None, 1, None, padded, label)]
    rest = _product(d.extent for d in run[1:])
    if padded % rest:
        raise NotExpressible(
            f"{shape}: {_who(run)} (size {_product(d.extent for d in run)}) is padded to {padded} by {label}, "
            f"which is not a whole number of its {rest}-element minor part: CuTe layouts cannot express that padding"
        )
    top = run[0]
    return [replace(top, extent=padded // rest, padded_by=label), *run[1:]]


def _split(
    shape: str, label: str, run: list[Digit], t: int, sizes: tuple[Any, ...]
) -> tuple[list[Digit], list[Digit]]:
    """``run`` cut into (tile number, position in tile) at ``t``, digits split where needed."""
    hi: list[Digit] = list(run)
    lo: list[Digit] = []
    r = t
    while r > 1:
        if not hi:  # pragma: no cover - the run is padded to a multiple of t
            raise AssertionError(f"{shape}: run {run} shorter than tile {t}")
        d = hi.pop()
        size = d.size(sizes)
        if not isinstance(d.extent, int) or not isinstance(size, int):
            raise NotExpressible(
                f"{shape}: {label} splits {_who([d])} of symbolic size {size}; CuTe needs to know that "
                f"the tile divides it (give the size)"
            )
        if r % d.extent == 0:
            lo.insert(0, d)
            r //= d.extent
            continue
        if d.extent % r:
            raise NotExpressible(
                f"{shape}: {label} cuts {_who([d])} at {r}, which does not divide its run of {d.extent}: "
                f"the result is not a mixed-radix split, so it has no CuTe shape:stride"
            )
        if size <= r:
            lo.insert(0, replace(d, extent=r))
            hi.append(Digit(None, 1, None, d.extent // r, d.padded_by))
        elif size % r == 0:
            lo.insert(0, Digit(d.dim, d.weight, r, r))
            top = None if d.modulus is None else d.modulus // r
            hi.append(Digit(d.dim, d.weight * r, top, d.extent // r, d.padded_by))
        else:
            raise NotExpressible(
                f"{shape}: {_who([d])} (size {size}) is padded to {d.extent} by {d.padded_by or label} "
                f"and then split as {d.extent // r} x {r}, so the padding falls inside a mode: "
                f"CuTe layouts cannot express padding there"
            )
        r = 1
    return hi, lo


def _text(value: Any) -> str:
    if isinstance(value, tuple):
        return "(" + ",".join(_text(v) for v in value) + ")"
    return str(value).replace(" ", "")


def _modes(m: LayoutMap, digits: list[Digit]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    strides: list[Any] = []
    running: Any = 1
    sizes = m.shape.dimensions
    for d in reversed(digits):
        strides.append(running)
        running = running * d.extent
    strides.reverse()
    shape: list[Any] = []
    stride: list[Any] = []
    for k, size in enumerate(m.shape.dimensions):
        mine = _by_weight(
            [(d, s) for d, s in zip(digits, strides, strict=True) if d.dim == k and d.size(sizes) != 1], sizes
        )
        weight: Any = 1
        for d, _ in mine:
            if sympy.simplify(d.weight - weight) != 0:  # pragma: no cover - a bug in the digit bookkeeping
                raise AssertionError(f"{m.shape}: digits of dimension {k} do not chain: {mine}")
            weight = weight * d.size(sizes)
        if sympy.simplify(weight - size) != 0:  # pragma: no cover
            raise AssertionError(f"{m.shape}: digits of dimension {k} multiply to {weight}, not {size}")
        if not mine:
            shape.append(1)
            stride.append(0)
        elif len(mine) == 1:
            shape.append(mine[0][0].size(sizes))
            stride.append(mine[0][1])
        else:
            shape.append(tuple(d.size(sizes) for d, _ in mine))
            stride.append(tuple(s for _, s in mine))
    return tuple(shape), tuple(stride)


def _by_weight(pairs: list[tuple[Digit, Any]], sizes: tuple[Any, ...]) -> list[tuple[Digit, Any]]:
    """Digits of one dimension, fastest (weight 1) first: each next weight is the previous times its size."""
    out: list[tuple[Digit, Any]] = []
    weight: Any = 1
    left = list(pairs)
    while left:
        nxt = next((p for p in left if sympy.simplify(p[0].weight - weight) == 0), None)
        if nxt is None:  # pragma: no cover - reported by the caller's check
            return out + left
        out.append(nxt)
        left.remove(nxt)
        weight = weight * nxt[0].size(sizes)
    return out


def cute_layout(shape: Shape | str, *, check: bool = True) -> CuteLayout:
    """The CuTe form of ``shape``'s layout (element strides), certified; ``NotExpressible`` if none."""
    m = layout_map(shape)
    digits = _digits_of_layout(m)
    modes, strides = _modes(m, digits)
    text = "1:0" if m.rank == 0 else f"{_text(modes)}:{_text(strides)}"
    if check:
        certification = certify(
            m, "forward", "element", cute_expr(text, m.rank, tuple(map(str, m.shape.size_symbols)))
        )
    else:
        certification = Certification("unknown", "none", "not checked (check=False)")
    if certification.status == "refuted":  # a bug: never hand out a wrong layout
        raise AssertionError(f"{m.shape}: the CuTe form {text} differs from the layout: {certification}")
    return CuteLayout(modes, strides, text, certification)


def to_cute(shape: Shape | str) -> str:
    """``shape``'s layout as CuTe ``shape:stride`` text, or ``NotExpressible`` with the reason."""
    return cute_layout(shape).text


# ------------------------------------------------------------------------ reading CuTe text
class CuteTextError(ValueError):
    """CuTe ``shape:stride`` text that cannot be read; the message quotes the text and says why."""


#: CuTe's separators; every other run of characters is one entry (an integer, or a size formula).
_CUTE_PUNCTUATION = re.compile(r"\s*([():,])")
_CUTE_ENTRY = re.compile(r"\s*([^():,]+)")
#: An integer as CuTe prints it: ``8``, or ``_8`` for a static one; a stride may be negative.
_CUTE_SIZE = re.compile(r"_?\d+")
_CUTE_STRIDE = re.compile(r"_?-?\d+")
_EXAMPLE = "(4,(2,8)):(2,(1,8))"
_CUTE_MAX_DEPTH = 100
#: Longer integers are refused (no layout is that big; Python's int() would refuse past 4300 digits).
_MAX_DIGITS = 100


def _shortened(text: str, keep: int = 60) -> str:
    """``text``, or its first ``keep`` characters and an ellipsis."""
    return text if len(text) <= keep else text[:keep] + "..."


def parse_cute(text: str, sizes: tuple[str, ...] = ()) -> tuple[Any, Any]:
    """The ``(shape, stride)`` of CuTe ``shape:stride`` text, as nested tuples: the one reader of
    CuTe text here (:func:`cute_modes`, :func:`cute_expr`, :func:`from_cute` and
    :func:`layout_algebra.interop.cute.algebra.layout` all read through it).

    It reads what CuTe prints (``print(layout)`` in ``include/cute/layout.hpp``, ``pycute``'s
    ``Layout.__str__``): an entry is an integer or a parenthesised, comma-separated tuple of
    entries, nested; a static integer may carry CuTe's ``_`` (``_8`` is 8); strides may be
    negative, sizes not; whitespace may separate tokens (``1 2`` is two tokens, not 12). The
    shape and the stride must be congruent (the same nesting), as CuTe requires. ``(8):(1)``
    is a rank-1 tuple, as in CuTe; a lone ``8`` is no layout (CuTe prints ``8:1``).

    >>> parse_cute("(4,(2,8)):(2,(1,8))")
    ((4, (2, 8)), (2, (1, 8)))
    >>> parse_cute("(_8, _2) : (_1, -8)"), parse_cute("(8):(1)"), parse_cute("8:1")
    (((8, 2), (1, -8)), ((8,), (1,)), (8, 1))

    Sizes named in ``sizes`` may appear (as SymPy symbols, or formulas in the assumption grammar
    :mod:`layout_algebra.prove.assumptions`; text is never evaluated):

    >>> parse_cute("(N,8):(8,1)", ("N",))
    ((N, 8), (8, 1))
    >>> parse_cute("(4,2):(1)")
    Traceback (most recent call last):
    ...
    layout_algebra.interop.cute.export.CuteTextError: CuTe text '(4,2):(1)': the shape and the stride are not congruent (same nesting): 2 shape modes but 1 strides
    """
    names = {s: dim_symbol(s) for s in sizes}
    reader = _CuteReader(text, names)
    shape = reader.entry(_CUTE_SIZE)
    if reader.peek() != ":":
        raise CuteTextError(f"CuTe text {text!r} needs ':' between the shape and the stride")
    reader.take()
    stride = reader.entry(_CUTE_STRIDE)
    if reader.peek() is not None:
        raise CuteTextError(f"CuTe text {text!r}: unexpected {reader.peek()!r} after the stride")
    _check_congruent(text, shape, stride)
    return shape, stride


def _check_congruent(text: str, shape: Any, stride: Any) -> None:
    """CuTe's ``congruent``: the same nesting; the message says where it first differs."""
    why = "the shape and the stride are not congruent (same nesting)"
    shape_modes = shape if isinstance(shape, tuple) else (shape,)
    stride_modes = stride if isinstance(stride, tuple) else (stride,)
    if isinstance(shape, tuple) != isinstance(stride, tuple):
        raise CuteTextError(f"CuTe text {text!r}: {why}: {_text(shape)} against {_text(stride)}")
    if len(shape_modes) != len(stride_modes):
        raise CuteTextError(
            f"CuTe text {text!r}: {why}: {len(shape_modes)} shape modes but {len(stride_modes)} strides"
        )
    for s, t in zip(shape_modes, stride_modes, strict=True):
        if not _congruent(s, t):
            raise CuteTextError(
                f"CuTe text {text!r}: {why}: the mode {_text(s)} and its stride {_text(t)} are not congruent"
            )


def _congruent(a: Any, b: Any) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_congruent(x, y) for x, y in zip(a, b, strict=True))
    return not isinstance(a, tuple) and not isinstance(b, tuple)


class _CuteReader:
    """Tokens of CuTe text read one at a time: punctuation, or an entry (trimmed)."""

    def __init__(self, text: str, names: dict[str, Any]) -> None:
        self.text = text
        self.names = names
        self.pos = 0  # where the next token starts (before its whitespace)

    def _match(self) -> re.Match[str] | None:
        return _CUTE_PUNCTUATION.match(self.text, self.pos) or _CUTE_ENTRY.match(self.text, self.pos)

    def peek(self) -> str | None:
        m = self._match()
        if m is None:
            return None
        token = m.group(1).strip()
        return token if token else None

    def take(self) -> str:
        m = self._match()
        assert m is not None
        self.pos = m.end()
        return m.group(1).strip()

    def entry(self, integer: re.Pattern[str], depth: int = 0) -> Any:
        """An integer (``integer`` says which), a size formula, or a tuple of entries."""
        token = self.peek()
        if token is None:
            raise CuteTextError(f"CuTe text {self.text!r} ends too early")
        if token == "(":
            if depth >= _CUTE_MAX_DEPTH:
                raise CuteTextError(
                    f"CuTe text {self.text[:40]!r}...: tuples nested more than {_CUTE_MAX_DEPTH} levels deep"
                )
            self.take()
            if self.peek() == ")":
                raise CuteTextError(
                    f"CuTe text {self.text!r}: an empty tuple () is not read here (a rank-0 layout is 1:0)"
                )
            items = []
            while True:
                item = self.entry(integer, depth + 1)
                items.append(item)
                after = self.peek()
                if after is not None:
                    self.take()
                if after == ",":
                    continue
                if after == ")":
                    return tuple(items)
                found = repr(after) if after is not None else "the end"
                raise CuteTextError(
                    f"CuTe text {self.text!r}: expected ',' or ')' after {_text(item)}, found {found}"
                )
        if token in "):,":
            raise CuteTextError(f"CuTe text {self.text!r}: expected an integer or '(' but found {token!r}")
        start = self.pos + len(self.text[self.pos :]) - len(self.text[self.pos :].lstrip())
        self.take()
        if integer.fullmatch(token):
            digits = token.lstrip("_")
            if len(digits.lstrip("-")) > _MAX_DIGITS:
                raise CuteTextError(
                    f"CuTe text {_shortened(self.text)!r}: the integer at position {start} has "
                    f"{len(digits.lstrip('-')):,} digits (at most {_MAX_DIGITS} are read)"
                )
            return int(digits)
        if not self.names:
            raise CuteTextError(
                f"CuTe text {self.text!r}: unexpected {token[:10]!r} at position {start} (a layout is "
                f"shape:stride of integers and tuples, e.g. {_EXAMPLE}; sizes are not negative)"
            )
        from layout_algebra.prove.assumptions import parse_term  # a grammar: CuTe text is never evaluated

        value = parse_term(token)
        unknown = sorted(str(s) for s in value.free_symbols if str(s) not in self.names)
        if unknown:
            raise CuteTextError(f"CuTe text {self.text!r}: {', '.join(unknown)} is not a size of the layout")
        return value


def _leaves(x: Any) -> list[Any]:
    return [y for item in x for y in _leaves(item)] if isinstance(x, tuple) else [x]


def cute_modes(text: str, sizes: tuple[str, ...] = ()) -> list[tuple[list[Any], list[Any]]]:
    """The modes of CuTe ``shape:stride`` text: per logical dimension, its sizes and strides
    (fastest first), read by :func:`parse_cute`. Sizes named in ``sizes`` may appear as
    symbols; otherwise every entry must be an integer (sizes non-negative).

    >>> cute_modes("((8,2),128):((128,1024),1)")
    [([8, 2], [128, 1024]), ([128], [1])]
    """
    shape, stride = parse_cute(text, sizes)
    shape_modes = shape if isinstance(shape, tuple) else (shape,)
    stride_modes = stride if isinstance(stride, tuple) else (stride,)
    out = []
    for s, t in zip(shape_modes, stride_modes, strict=True):
        out.append((_leaves(s), _leaves(t)))
    return out


def cute_expr(text: str, rank: int, sizes: tuple[str, ...] = ()) -> sympy.Expr:
    """The offset of index ``(i0, i1, ...)`` under CuTe layout ``text``, by CuTe's definition.

    >>> cute_expr("((8,2),(128,3)):((128,3072),(1,1024))", 2)
    128*(Mod(i0, 8)) + Mod(i1, 128) + 3072*(Mod(floor(i0/8), 2)) + 1024*(Mod(floor(i1/128), 3))
    """
    modes = cute_modes(text, sizes)
    if rank == 0:
        return sympy.Integer(0)
    if len(modes) != rank:
        raise ValueError(f"CuTe text {text!r} has {len(modes)} modes for rank {rank}")
    offset = sympy.Integer(0)
    for i, (sizes_, strides_) in zip(index_symbols(rank), modes, strict=True):
        weight = sympy.Integer(1)
        for size, step in zip(sizes_, strides_, strict=True):
            offset += step * sympy.Mod(sympy.floor(i / weight), size)
            weight *= size
    return offset


# ------------------------------------------------------------------------ CuTe text to XLA
def from_cute(text: str, dtype: str, *, element_size_in_bits: int = 0, rank: int | None = None) -> ArrayShape:
    """The simplest XLA layout (``minor_to_major`` and tiles) placing every element where ``text`` does.

    ``dtype`` is the XLA element type; the dimensions are the modes' sizes. CuTe strides
    count elements, so ``E(n)`` (``element_size_in_bits``) is not in the text. A scalar
    is ``1:0`` in CuTe, as is a size-1 vector: pass ``rank=0`` for the scalar. Raises
    ``NotExpressible`` (a ``ValueError``) with the reason when the search finds no layout that
    matches (it is not complete: see :mod:`layout_algebra.meaning.recover`).

    >>> str(from_cute("1:0", "f32")), str(from_cute("1:0", "f32", rank=0))
    ('f32[1]{0}', 'f32[]')
    """
    modes = cute_modes(text)
    if rank == 0 and all(math.prod(sizes) == 1 for sizes, _ in modes):
        return recover_layout(dtype, (), (), element_size_in_bits=element_size_in_bits)
    if rank is not None and rank != len(modes):
        raise NotExpressible(f"{text}: {len(modes)} modes for rank {rank}")
    negative = [t for _, strides in modes for t in strides if t < 0]
    if negative:
        raise NotExpressible(
            f"{text}: the stride {negative[0]} is negative: an XLA layout cannot run a dimension backwards"
        )
    dims = tuple(math.prod(sizes) for sizes, _ in modes)
    if 0 in dims:
        raise NotExpressible(f"{text}: a mode of size 0 has no elements to place")
    digits = []
    for k, (sizes, strides) in enumerate(modes):
        weight = 1
        live = [(size, stride) for size, stride in zip(sizes, strides, strict=True) if size != 1]
        for j, (size, stride) in enumerate(live):
            digits.append((k, weight, None if j == len(live) - 1 else size, stride))
            weight *= size
    try:
        positions = strided_positions(digits, dims)
        recovered = recover_layout(
            dtype, dims, positions, exact=False, element_size_in_bits=element_size_in_bits
        )
    except NotExpressible as err:
        raise NotExpressible(f"{text}: {err}") from None
    return normal_form(recovered)
