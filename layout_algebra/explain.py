"""A readable account of a layout: fields, physical order, each tiling step, sizes.

>>> from layout_algebra.explain import explain
>>> print(explain("f32[3,5]{1,0:T(2,2)}"))
f32[3,5]{1,0:T(2,2)}
  element type    f32: 32 bits per element
  dimensions      [3, 5]: 15 elements
  minor_to_major  {1,0}: dimension 1 varies fastest, dimension 0 slowest
  physical order  [3, 5] (dimensions 0, 1, major to minor)
  tiling          T(2,2) on the last 2 dims [3, 5] -> [2, 3, 2, 2]
  tiled shape     [2, 3, 2, 2]: 24 slots
  memory space    S(0): default device memory
  logical size    60 bytes (15 elements x 32 bits)
  physical size   96 bytes
  padding         36 bytes (physical / logical = 1.600)
"""

from __future__ import annotations

import math

from layout_algebra.model.shapes import UNBOUNDED_SIZE, ArrayShape, BufferShape, Dim, Shape, TupleShape
from layout_algebra.model.syntax import as_shape
from layout_algebra.model.validation import layout_problems
from layout_algebra.sizes import (
    LayoutSemanticsError,
    apply_tile,
    physical_dimensions,
    size_report,
)

__all__ = ["MEMORY_SPACE_NAMES", "explain"]

#: XLA's named memory spaces (``S(n)``); other numbers are backend-specific.
MEMORY_SPACE_NAMES = {
    0: "default device memory",
    1: "fast memory (VMEM on TPU)",
    5: "host memory",
    6: "unpinned host memory",
}


def explain(shape: Shape | str) -> str:
    """A step-by-step text account of how ``shape``'s layout places it in memory."""
    parsed = as_shape(shape)
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
    dims = physical_dimensions(shape)
    for level, tile in enumerate(layout.tiles):
        k = len(tile.dimensions)
        label = "tiling" if level == 0 else ""
        prefix = f"T{tile}" if level == 0 else f" {tile}"
        note = " (missing leading dims count as 1)" if k > len(dims) else ""
        before = (1,) * max(0, k - len(dims)) + dims
        dims = apply_tile(dims, tile)
        shown_before = _dims(before[len(before) - k :])
        out.append(_row(label, f"{prefix} on the last {k} dims {shown_before}{note} -> {_dims(dims)}"))
    if layout.tiles:
        slots = math.prod(report.tiled_dimensions, start=1)
        out.append(_row("tiled shape", f"{_dims(report.tiled_dimensions)}: {_count(slots)} slots"))
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
