"""A readable account of a layout: fields, physical order, each tiling step, stages, sizes.

Give an element to see the worked arithmetic of where it lands, in the style of XLA's
tiled-layout document (tile index ⌊e/t⌋, position in the tile e mod t, then the row-major
linear index of the combined vector):

>>> print(explain("f32[3,5]{1,0:T(2,2)}", element=(2, 3)).split("element (2, 3)")[1])
<BLANKLINE>
  physical index  (2, 3) in [3, 5]
  tile 1: (2,2)   pad the bounds to [4, 6]
                  tile index (⌊2/2⌋, ⌊3/2⌋) = (1, 1), in the tile (2 mod 2, 3 mod 2) = (0, 1)
                  -> (1, 1, 0, 1) in [2, 3, 2, 2]
  linear index    linear_index((1, 1, 0, 1), (2, 3, 2, 2)) = 1·12 + 1·4 + 0·2 + 1·1 = 17
  bit offset      17 × 32 bits = 544: byte 68, bit 0

The whole account of a layout:

>>> from layout_algebra.explain import explain
>>> print(explain("f32[3,5]{1,0:T(2,2)}"))
f32[3,5]{1,0:T(2,2)}
  element type    f32: 32 bits per element
  dimensions      [3, 5]: 15 elements
  minor_to_major  {1,0}: dimension 1 varies fastest, dimension 0 slowest
  physical order  [3, 5] (dimensions 0, 1, major to minor)
  tiling          T(2,2) on the last 2 dims [3, 5] -> [2, 3, 2, 2]
  tiled shape     [2, 3, 2, 2]: 24 slots
  stages          physical order: order (0, 1), [3, 5] -> [3, 5]
                  pad: [3, 5] -> [4, 6]
                  split by (2,2): [4, 6] -> [2, 2, 3, 2]
                  tiles outside, positions inside: order (0, 2, 1, 3), [2, 2, 3, 2] -> [2, 3, 2, 2]
                  linearize row-major: [2, 3, 2, 2] -> [24]
                  to bits (32 per element): [24] -> [768]
  offset          2*(Mod(i0, 2)) + Mod(i1, 2) + 12*floor(i0/2) + 4*floor(i1/2)
  memory space    S(0): device memory (HBM)
  logical size    60 bytes (15 elements x 32 bits)
  physical size   96 bytes
  padding         36 bytes (physical / logical = 1.600)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from layout_algebra.model.meaning import MEMORY_SPACE_NAMES, LayoutSemanticsError
from layout_algebra.model.shapes import UNBOUNDED_SIZE, ArrayShape, BufferShape, Dim, Shape, TupleShape
from layout_algebra.model.syntax import as_shape
from layout_algebra.model.validation import layout_problems
from layout_algebra.sizes import size_report
from layout_algebra.stages.pipeline import PHYSICAL_ORDER, TILE, layout_steps
from layout_algebra.stages.stages import PrependUnitDims

__all__ = ["MEMORY_SPACE_NAMES", "explain"]



def explain(shape: Shape | str, element: Sequence[int] | None = None) -> str:
    """A step-by-step text account of how ``shape``'s layout places it in memory.

    With ``element`` (a logical index of an array shape), the account ends with the
    worked arithmetic that takes that element to its offset.
    """
    parsed = as_shape(shape)
    if element is not None:
        from layout_algebra.layout_map import layout_map

        m = layout_map(parsed)  # a clear error for shapes without one map
        m.forward(element)  # ... and for an index that is not in the shape
        return explain(m.shape) + "\n" + "\n".join(_element_lines(m, tuple(element)))
    lines = [str(parsed)]
    if isinstance(parsed, TupleShape):
        lines.append(f"  a tuple of {len(parsed.elements)} shapes; each element has its own buffer:")
        for i, element in enumerate(parsed.elements):
            lines.extend("  " + line for line in _indexed(i, explain(element)))
        return "\n".join(lines)
    if isinstance(parsed, BufferShape):
        lines.append("  a buffer holding one array:")
        lines.extend("  " + line for line in explain(parsed.array).splitlines())
        return "\n".join(lines)
    if not isinstance(parsed, ArrayShape):
        lines.append(f"  {type(parsed).__name__.removesuffix('Shape').lower()} shape: no elements, no layout")
        return "\n".join(lines)
    lines.extend(_array_lines(parsed))
    return "\n".join(lines)


def _indexed(i: int, text: str) -> list[str]:
    first, *rest = text.splitlines()
    return [f"[{i}] {first}", *("    " + r for r in rest)]


def _row(label: str, value: str) -> str:
    return f"  {label:<15} {value}"


def _dims(dims: tuple[Dim, ...]) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


def _count(n: Dim) -> str:
    return f"{n:,}" if isinstance(n, int) else str(n)


def _array_lines(shape: ArrayShape) -> list[str]:
    layout = shape.effective_layout
    t = shape.element_type
    e = layout.element_size_in_bits
    if e:
        bits = f"E({e}): {e} bits per element"
    else:
        bits = f"{t.byte_width * 8} bits per element"
        if t.bit_width < 8:
            bits += f" ({t.bit_width} of information; without E(n) each element takes a byte)"
    out = [_row("element type", f"{t.text}: {bits}")]
    shown = [_dim(d, dyn) for d, dyn in zip(shape.dimensions, shape.dynamic_dimensions, strict=True)]
    if shape.is_unbounded_dynamic:
        count = "an unbounded number of elements"
    else:
        n_elements = math.prod(shape.dimensions, start=1)
        count = ("at most " if not shape.is_static else "") + _elements(n_elements)
    out.append(_row("dimensions", f"[{', '.join(shown)}]: {count}"))
    problems = layout_problems(shape)
    m2m = layout.minor_to_major
    m2m_text = "{" + ",".join(map(str, m2m)) + "}"
    if problems:
        out.append(_row("minor_to_major", m2m_text))
        out.extend(_row("INVALID", p) for p in problems)
        return out
    if len(m2m) > 1:
        out.append(
            _row(
                "minor_to_major",
                f"{m2m_text}: dimension {m2m[0]} varies fastest, dimension {m2m[-1]} slowest",
            )
        )
    else:
        out.append(_row("minor_to_major", m2m_text))
    if m2m:
        order = ", ".join(str(d) for d in reversed(m2m))
        physical_text = "[" + ", ".join(shown[d] for d in reversed(m2m)) + "]"
        out.append(_row("physical order", f"{physical_text} (dimensions {order}, major to minor)"))
    try:
        report = size_report(shape)  # checks that the layout has a meaning before we walk it
    except LayoutSemanticsError as err:
        out.append(_row("meaning", f"none: {err.reason}"))
        return out
    tile_steps = [step for step in layout_steps(shape) if step.role == TILE]
    for level, step in enumerate(tile_steps):
        assert step.tile is not None  # every tile step carries its tile
        k = len(step.tile.dimensions)
        label = "tiling" if level == 0 else ""
        prefix = f"T{step.tile}" if level == 0 else f" {step.tile}"
        first = step.stages[0]
        prepended = isinstance(first, PrependUnitDims)
        note = " (missing leading dims count as 1)" if prepended else ""
        before = first.range if prepended else step.domain
        shown_before = _dims(before[len(before) - k :])
        out.append(_row(label, f"{prefix} on the last {k} dims {shown_before}{note} -> {_dims(step.range)}"))
    if layout.tiles:
        slots = math.prod(report.tiled_dimensions, start=1)
        out.append(_row("tiled shape", f"{_dims(report.tiled_dimensions)}: {_count(slots)} slots"))
    out.extend(_map_lines(shape))
    if layout.tail_padding_alignment_in_elements != 1:
        out.append(
            _row(
                "tail padding",
                f"L({layout.tail_padding_alignment_in_elements}): slots rounded up to "
                f"{_count(report.physical_elements)}",
            )
        )
    space = layout.memory_space
    out.append(
        _row("memory space", f"S({space}): {MEMORY_SPACE_NAMES.get(space, 'backend-specific memory space')}")
    )
    bits_each = report.element_bits
    out.append(
        _row(
            "logical size",
            f"{_count(report.logical_bytes)} bytes ({_elements(report.logical_elements)} x {bits_each} bits)",
        )
    )
    out.append(_row("physical size", f"{_count(report.physical_bytes)} bytes"))
    if report.first_tile_bytes != report.physical_bytes:
        out.append(
            _row("XLA allocates", f"{_count(report.first_tile_bytes)} bytes (padding to the first tile only)")
        )
    ratio = report.padding_ratio
    ratio_text = f"{ratio:.3f}" if isinstance(ratio, float) else str(ratio)
    out.append(_row("padding", f"{_count(report.padding_bytes)} bytes (physical / logical = {ratio_text})"))
    out.extend(_row("note", n) for n in report.notes)
    return out


def _elements(n: Dim) -> str:
    return f"{_count(n)} element" + ("" if n == 1 else "s")


def _dim(size: Dim, dynamic: bool) -> str:
    if dynamic:
        return "?" if size == UNBOUNDED_SIZE else f"<={size}"
    return str(size)


#: Closed forms longer than this are left out of the account (they stop being readable).
MAX_SHOWN_EXPRESSION = 160


def _map_lines(shape: ArrayShape) -> list[str]:
    from layout_algebra.layout_map import layout_map

    m = layout_map(shape)
    out = []
    for k, stage in enumerate(m.stages):
        out.append(_row("stages" if k == 0 else "", stage.describe()))
    if m.rank and math.prod(1 if not isinstance(d, int) else max(d, 1) for d in m.logical_dimensions):
        expr = str(m.forward_expr())
        if len(expr) <= MAX_SHOWN_EXPRESSION:
            out.append(_row("offset", expr))
    return out


def _tuple(values) -> str:
    return "(" + ", ".join(str(v) for v in values) + ")"


def _element_lines(m, element: tuple[int, ...]) -> list[str]:
    """The worked arithmetic taking ``element`` through each step of ``m``."""
    from layout_algebra.stages.stages import (
        AlignTail,
        Combine,
        Linearize,
        Pad,
        PrependUnitDims,
        Split,
        ToBits,
        Transpose,
    )

    out = [f"element {_tuple(element)}"]
    value: tuple = element
    for step in m.steps:
        label = step.label if step.role == TILE else step.role
        lines: list[str] = []
        for stage in step.stages:
            before = value
            value = stage.forward(value)
            if isinstance(stage, Transpose) and step.role == PHYSICAL_ORDER:
                lines.append(f"{_tuple(value)} in {_dims(stage.range)}")
                label = "physical index"
            elif isinstance(stage, PrependUnitDims):
                lines.append(f"leading 1s for a longer tile: {_tuple(value)} in {_dims(stage.range)}")
            elif isinstance(stage, Combine):
                lines.append(f"combine (*): {_tuple(value)} in {_dims(stage.range)}")
            elif isinstance(stage, Pad):
                lines.append(f"pad the bounds to {_dims(stage.range)}")
            elif isinstance(stage, Split):
                e = before[stage.start :]
                q = ", ".join(f"⌊{x}/{t}⌋" for x, t in zip(e, stage.tile, strict=True))
                r = ", ".join(f"{x} mod {t}" for x, t in zip(e, stage.tile, strict=True))
                qs = _tuple(x // t for x, t in zip(e, stage.tile, strict=True))
                rs = _tuple(x % t for x, t in zip(e, stage.tile, strict=True))
                lines.append(f"tile index ({q}) = {qs}, in the tile ({r}) = {rs}")
            elif isinstance(stage, Transpose):
                lines.append(f"-> {_tuple(value)} in {_dims(stage.range)}")
            elif isinstance(stage, Linearize):
                strides = [math.prod(stage.domain[k + 1 :], start=1) for k in range(len(stage.domain))]
                terms = " + ".join(f"{x}·{s}" for x, s in zip(before, strides, strict=True)) or "0"
                lines.append(f"linear_index({_tuple(before)}, {_tuple(stage.domain)}) = {terms} = {value[0]}")
                label = "linear index"
            elif isinstance(stage, AlignTail):
                lines.append(f"L({stage.alignment}) pads only the tail: position {value[0]} unchanged")
                label = "tail padding"
            elif isinstance(stage, ToBits):
                bit = value[0]
                lines.append(f"{before[0]} × {stage.bits} bits = {bit}: byte {bit // 8}, bit {bit % 8}")
                label = "bit offset"
        if lines and isinstance(step.stages[-1], Split):
            lines.append(f"-> {_tuple(value)} in {_dims(step.stages[-1].range)}")
        for k, line in enumerate(lines):
            out.append(_row(label if k == 0 else "", line))
    return out
