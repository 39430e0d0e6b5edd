"""MLIR ``memref`` layouts: XLA layouts as ``affine_map``s (and ``strided<>``), and back.

An MLIR ``memref`` may carry a layout map from its logical index to a *tiled* index.
MLIR's tiled-layout convention (the one ``-normalize-memrefs`` implements) lists the
tiled shape's positions as the map's results, and the normalized memref has one
dimension per result: ``x floordiv c`` spans ``ceildiv(range(x), c)`` slots, ``x mod c``
spans ``c``, ``d_k`` spans its dimension. That is exactly XLA's tiled shape, so an XLA
layout *is* such a map:

>>> from layout_algebra.interop.mlir import to_mlir_affine_map, to_mlir_memref, from_mlir_affine_map
>>> to_mlir_affine_map("f32[16,384]{1,0:T(8,128)}")
'affine_map<(d0, d1) -> (d0 floordiv 8, d1 floordiv 128, d0 mod 8, d1 mod 128)>'
>>> to_mlir_memref("bf16[16,256]{1,0:T(8,128)(2,1)}")
'memref<16x256xbf16, affine_map<(d0, d1) -> (d0 floordiv 8, d1 floordiv 128, (d0 floordiv 2) mod 4, d1 mod 128, d0 mod 2, 0)>>'

Read back, the map gives the layout again (the identity on every layout whose
positions are single digits; see below):

>>> str(from_mlir_affine_map(to_mlir_affine_map("bf16[16,256]{1,0:T(8,128)(2,1)}"), "bf16", (16, 256)))
'bf16[16,256]{1,0:T(8,128)(2,1)}'

A map with one result is an element offset. A strided (linear) map is a permutation of
the dimensions when its strides are dense; MLIR's ``strided<[...]>`` says the same:

>>> str(from_mlir_affine_map("affine_map<(d0, d1) -> (d0 + d1 * 4)>", "f32", (4, 6)))
'f32[4,6]{0,1}'
>>> to_mlir_strided("f32[4,6]{0,1}")
'strided<[1, 4]>'
>>> str(from_mlir_affine_map("strided<[1, 4]>", "f32", (4, 6)))
'f32[4,6]{0,1}'

A tiled offset map, like :func:`layout_algebra.codegen.generate_code` prints, is read by
taking it apart into digits ``stride * (⌊d_k / w⌋ mod m)``:

>>> str(from_mlir_affine_map(
...     "affine_map<(d0, d1) -> ((d0 floordiv 8) * 3072 + (d1 floordiv 128) * 1024 + (d0 mod 8) * 128 + d1 mod 128)>",
...     "f32", (16, 384)))
'f32[16,384]{1,0:T(8,128)}'

Gaps are read as padding from a tile where one fits: rows of 6 elements 8 apart are
``T(8)``:

>>> str(from_mlir_affine_map("affine_map<(d0, d1) -> (d0 * 8 + d1)>", "f32", (4, 6)))
'f32[4,6]{1,0:T(8)}'

What has no exact counterpart says so (:class:`NotExpressible`, a ``ValueError``):

>>> try:
...     from_mlir_affine_map("affine_map<(d0, d1) -> (d0 * 5 + d1)>", "f32", (4, 6))
... except ValueError as e:
...     print(e)
affine_map<(d0, d1) -> (d0 * 5 + d1)> on f32[4, 6]: the digit i1 takes 6 values but the next stride leaves room for 5: elements would overlap

What is lost: an affine map has no ``E(n)`` or memory space (``to_mlir_memref`` puts
``S(n)`` in the memref's memory-space slot). It has no ``L(n)`` either, and the memref MLIR
normalizes from it allocates the whole tiled shape, so a layout that XLA allocates
differently (an ``L(n)`` that pads, a later tile padding past the first) is
``NotExpressible``; read back, a map is the layout XLA allocates whole
(:func:`~layout_algebra.decide.normal_form.allocating_its_buffer`):

>>> to_mlir_affine_map("s8[2,2]{0,1:T(2,128)(4,1)}")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
layout_algebra.meaning.recover.NotExpressible: s8[2,2]{0,1:T(2,128)(4,1)}: the buffer takes 512 bytes ... XLA allocates 256 ...
>>> str(from_mlir_affine_map(to_mlir_affine_map("s8[2,2]{0,1:T(4,128)(4,1)}"), "s8", (2, 2)))
's8[2,2]{0,1:T(4,128)(4,1)}'

A position of the tiled shape that is
padding only (a size-1 dimension padded by a tile, ``f32[5]{0:T(2,4)}``) has no result
that spans it, so such layouts are ``NotExpressible``; maps whose results mix dimensions
(XLA's ``*``) are written but not read back.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import sympy

from layout_algebra.codegen.readback import ReadBackError, read_back
from layout_algebra.decide.normal_form import allocates_its_buffer, allocating_its_buffer, normal_form
from layout_algebra.meaning.digits import Digit, digit_expr, digit_of
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.meaning.recover import NotExpressible, recover_layout, strided_positions
from layout_algebra.meaning.sizes import size_report, xla_shape_size
from layout_algebra.meaning.stages.stages import Linearize, ceil_div
from layout_algebra.model.primitive_types import PrimitiveType
from layout_algebra.model.shapes import Shape
from layout_algebra.model.symbols import as_sympy

__all__ = [
    "from_mlir_affine_map",
    "mlir_element_type",
    "to_mlir_affine_map",
    "to_mlir_memref",
    "to_mlir_strided",
]

_FLOAT_NAMES = {
    "bf16": "bf16",
    "f16": "f16",
    "f32": "f32",
    "f64": "f64",
    "f8e4m3fn": "f8E4M3FN",
    "f8e5m2": "f8E5M2",
    "f8e4m3fnuz": "f8E4M3FNUZ",
    "f8e5m2fnuz": "f8E5M2FNUZ",
    "f8e4m3b11fnuz": "f8E4M3B11FNUZ",
    "f8e4m3": "f8E4M3",
    "f8e3m4": "f8E3M4",
    "f8e8m0fnu": "f8E8M0FNU",
    "f4e2m1fn": "f4E2M1FN",
}


def mlir_element_type(dtype: PrimitiveType | str) -> str:
    """The MLIR builtin type of an XLA element type (integers are signless, ``pred`` is ``i1``).

    >>> mlir_element_type("s4"), mlir_element_type("pred"), mlir_element_type("c64")
    ('i4', 'i1', 'complex<f32>')
    """
    name = dtype.text if isinstance(dtype, PrimitiveType) else dtype
    if name == "pred":
        return "i1"
    if re.fullmatch(r"[su]\d+", name):
        return "i" + name[1:]
    if name in ("c64", "c128"):
        return f"complex<f{int(name[1:]) // 2}>"
    if name in _FLOAT_NAMES:
        return _FLOAT_NAMES[name]
    raise NotExpressible(f"the element type {name} has no MLIR builtin counterpart")


# ------------------------------------------------------------------------------ printing
def _mlir(e: Any, names: dict[sympy.Symbol, str]) -> str:
    """An integer SymPy expression (sums, constant multiples, floor, ceiling, Mod) in MLIR syntax."""
    if e.is_Integer:
        return str(int(e))
    if e.is_Symbol:
        return names[e]
    if isinstance(e, sympy.Add):
        terms = sorted(e.args, key=lambda t: (t.is_Integer, sympy.default_sort_key(t)))
        return " + ".join(_mlir(t, names) for t in terms)
    if isinstance(e, sympy.Mul):
        coefficient, rest = e.as_coeff_Mul()
        if coefficient.is_Integer and coefficient > 0 and rest != 1:
            return f"{_wrap(rest, names)} * {int(coefficient)}"
        if len(e.args) == 2 and all(a.is_Symbol for a in e.args):
            return f"{names[e.args[0]]} * {names[e.args[1]]}"
    if isinstance(e, (sympy.floor, sympy.ceiling)):
        numerator, denominator = _quotient(e.args[0])
        op = "floordiv" if isinstance(e, sympy.floor) else "ceildiv"
        return f"{_wrap(numerator, names)} {op} {denominator}"
    if isinstance(e, sympy.Mod) and e.args[1].is_Integer:
        return f"{_wrap(e.args[0], names)} mod {int(e.args[1])}"
    raise NotExpressible(f"{e} is not an affine expression MLIR can print")


def _quotient(e: Any) -> tuple[Any, int]:
    """``e`` as ``numerator / d`` with an integer polynomial numerator: ``5*i0/4 + i1/4`` is ``(5*i0 + i1, 4)``."""
    numerator, denominator = sympy.fraction(sympy.together(e))
    if not denominator.is_Integer or denominator <= 0:
        raise NotExpressible(f"{e} is not an integer expression over a constant divisor")
    return sympy.expand(numerator), int(denominator)


def _wrap(e: Any, names: dict[sympy.Symbol, str]) -> str:
    text = _mlir(e, names)
    return text if (e.is_Symbol or e.is_Integer) else f"({text})"


def _span(e: Any, dims: Sequence[int]) -> int:
    """Slots MLIR's normalization gives a result: ``mod c`` spans c, ``floordiv c`` a ceildiv, sums their range."""
    if e.is_Integer:
        return int(e) + 1
    if e.is_Symbol:
        return dims[int(str(e)[1:])]
    if isinstance(e, sympy.Mod):
        return int(e.args[1])
    if isinstance(e, sympy.floor):
        numerator, denominator = _quotient(e.args[0])
        return ceil_div(_span(numerator, dims), denominator)
    if isinstance(e, sympy.Add):
        return sum(_span(t, dims) - 1 for t in e.args) + 1
    if isinstance(e, sympy.Mul):
        coefficient, rest = e.as_coeff_Mul()
        return int(coefficient) * (_span(rest, dims) - 1) + 1
    raise NotExpressible(f"cannot bound the result {e}")


def to_mlir_affine_map(shape: Shape | str) -> str:
    """The layout as an MLIR tiled-layout ``affine_map``: one result per position of the tiled shape.

    Raises ``NotExpressible`` for symbolic sizes, for a tiled position MLIR would size
    differently (one that is padding only, or padded more than its result reaches), and
    for a layout XLA allocates differently from the tiled shape (a later tile padding past
    the first, or an ``L(n)`` that pads): the memref MLIR normalizes from the map allocates
    the whole tiled shape, so no map keeps XLA's allocation.
    """
    m = layout_map(shape)
    if m.is_symbolic:
        raise NotExpressible(f"{m.shape}: symbolic sizes; an MLIR tiled map needs the memref's sizes")
    spanned = ceil_div(math.prod(m.physical_dimensions, start=1) * m.element_bits, 8)
    report = size_report(m.shape)
    if not allocates_its_buffer(m.shape) or spanned != report.first_tile_bytes:
        raise NotExpressible(
            f"{m.shape}: the buffer takes {report.physical_bytes:,} bytes (every tile level and L(n)) and "
            f"XLA allocates {xla_shape_size(m.shape):,} (ShapeUtil::ArraySize), but the memref MLIR "
            f"normalizes from a tiled map allocates the whole tiled shape {list(m.physical_dimensions)}, "
            f"{spanned:,} bytes: no affine map keeps XLA's allocation"
        )
    dims = tuple(m.shape.dimensions)
    symbols = m.index_symbols
    names = {s: f"d{k}" for k, s in enumerate(symbols)}
    results = []
    for e in m.tiled_index_exprs():
        digit = digit_of(as_sympy(e), dims)  # a digit prints as ⌊d/w⌋ mod m, however it was built
        results.append(digit_expr(*digit) if digit is not None else as_sympy(e))
    texts = []
    for k, (e, extent) in enumerate(zip(results, m.physical_dimensions, strict=True)):
        span = _span(e, dims)
        if span != extent:
            what = "is padding only" if e.is_Integer else f"is {_mlir(e, names)}"
            raise NotExpressible(
                f"{m.shape}: position {k} of the tiled shape {list(m.physical_dimensions)} {what} and spans "
                f"{extent} slots, but an affine map result spans {span} when MLIR normalizes the memref"
            )
        texts.append(_mlir(e, names))
    text = f"affine_map<({', '.join(names[s] for s in symbols)}) -> ({', '.join(texts)})>"
    back = read_back("mlir", text, rank=m.rank)
    back = back if isinstance(back, tuple) else (back,)
    if len(back) != len(results) or any(
        sympy.simplify(a - b) != 0 for a, b in zip(back, results, strict=True)
    ):
        raise AssertionError(f"{m.shape}: the printed map {text} reads back as {back}, not {results}")
    return text


def to_mlir_strided(shape: Shape | str) -> str:
    """An untiled layout as MLIR's ``strided<[...]>`` (element strides, one per logical dimension)."""
    m = layout_map(shape)
    layout = m.shape.effective_layout
    if layout.tiles:
        raise NotExpressible(f"{m.shape}: a tiled layout has no strides; use to_mlir_affine_map")
    if m.is_symbolic:
        raise NotExpressible(f"{m.shape}: symbolic sizes")
    order = m.physical_order  # logical dim k sits at physical place order.carried_dimension(k)
    (linearize,) = (stage for stage in m.stages if isinstance(stage, Linearize))
    strides = [linearize.strides[order.carried_dimension(k)] for k in range(m.rank)]
    return f"strided<[{', '.join(map(str, strides))}]>"


def to_mlir_memref(shape: Shape | str) -> str:
    """The whole ``memref`` type: sizes, element type, layout map, and ``S(n)`` as its memory space."""
    m = layout_map(shape)
    layout = m.shape.effective_layout
    sizes = "x".join(str(d) for d in m.shape.dimensions)
    element = mlir_element_type(m.shape.element_type)
    body = f"{sizes}x{element}" if m.rank else element
    body += f", {to_mlir_affine_map(m.shape)}"
    if layout.memory_space:
        body += f", {layout.memory_space}"
    return f"memref<{body}>"


# ------------------------------------------------------------------------------ reading
def _digits_of_sum(expr: Any, dims: Sequence[int], where: str) -> list[tuple[int, int, int | None, int]]:
    digits = []
    for term in sympy.Add.make_args(sympy.expand(expr)):
        coefficient, rest = term.as_coeff_Mul()
        if rest == 1:
            raise NotExpressible(f"{where}: the constant offset {term} is not part of an XLA layout")
        digit = digit_of(rest, dims)
        if not coefficient.is_Integer or digit is None or digit[0] is None:
            raise NotExpressible(
                f"{where}: the term {term} is not a stride times one digit ⌊d_k/w⌋ mod m of a dimension"
            )
        digits.append((digit[0], digit[1], digit[2], int(coefficient)))
    return digits


def from_mlir_affine_map(
    text: str, dtype: str, dims: Sequence[int], *, element_size_in_bits: int = 0
) -> Shape:
    """The XLA layout of ``dtype[dims]`` that an MLIR layout (``affine_map`` or ``strided``) describes.

    A map with several results is read as MLIR's tiled-layout convention (exactly: every
    position, units included); a single result as an element offset; ``strided<[...]>``
    as strides. Raises ``NotExpressible`` with the reason when the search finds no XLA layout
    that fits (it is not complete: see :mod:`layout_algebra.meaning.recover`).
    """
    dims = tuple(int(d) for d in dims)
    where = f"{text.strip()} on {dtype}{list(dims)}"
    strided = re.fullmatch(r"\s*strided<\[([^\]]*)\](?:\s*,\s*offset\s*:\s*(\w+))?\s*>\s*", text)
    if strided:
        strides = [s.strip() for s in strided[1].split(",") if s.strip()]
        if strided[2] not in (None, "0"):
            raise NotExpressible(f"{where}: an offset of {strided[2]} is not part of an XLA layout")
        if len(strides) != len(dims) or not all(re.fullmatch(r"\d+", s) for s in strides):
            raise NotExpressible(f"{where}: expected {len(dims)} constant strides")
        digits = [(k, 1, None, int(s)) for k, s in enumerate(strides)]
        return _recover_strided(where, dtype, dims, digits, element_size_in_bits)
    try:
        value = read_back("mlir", text, rank=len(dims))
    except ReadBackError as err:
        raise NotExpressible(f"{where}: not an affine_map over d0..d{len(dims) - 1}: {err}") from None
    if not isinstance(value, tuple):  # one result: an element offset
        return _recover_strided(where, dtype, dims, _digits_of_sum(value, dims, where), element_size_in_bits)
    results = value
    positions = []
    for k, e in enumerate(results):
        digit = digit_of(as_sympy(e), dims)
        if digit is None:
            raise NotExpressible(
                f"{where}: result {k} ({e}) is not one digit ⌊d_k/w⌋ mod m of a dimension, as the positions "
                f"of an XLA tiled shape are (maps that mix dimensions, like XLA's '*', are not read back)"
            )
        positions.append(Digit(digit[0], digit[1], digit[2], _span(as_sympy(e), dims)))
    try:
        recovered = recover_layout(dtype, dims, positions, element_size_in_bits=element_size_in_bits)
    except NotExpressible as err:
        raise NotExpressible(f"{where}: {err}") from None
    return normal_form(allocating_its_buffer(recovered))


def _recover_strided(
    where: str,
    dtype: str,
    dims: Sequence[int],
    digits: Sequence[tuple[int, int, int | None, int]],
    element_size_in_bits: int,
) -> Shape:
    try:
        positions = strided_positions(digits, dims)
        recovered = recover_layout(
            dtype, dims, positions, exact=False, element_size_in_bits=element_size_in_bits
        )
    except NotExpressible as err:
        raise NotExpressible(f"{where}: {err}") from None
    return normal_form(allocating_its_buffer(recovered))
