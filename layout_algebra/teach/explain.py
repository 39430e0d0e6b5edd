"""A readable account of a layout: fields, physical order, each tiling step, stages, sizes.

Give an element to see the worked arithmetic of where it lands, in the style of XLA's
tiled-layout document (tile index ⌊e/t⌋, position in the tile e mod t, then the row-major
linear index of the combined vector):

>>> print(str(explain("f32[3,5]{1,0:T(2,2)}", element=(2, 3))).split("element (2, 3)")[1])
<BLANKLINE>
  physical index  (2, 3) in [3, 5]
  tile 1: (2,2)   pad the bounds to [4, 6]
                  tile index (⌊2/2⌋, ⌊3/2⌋) = (1, 1), in the tile (2 mod 2, 3 mod 2) = (0, 1)
                  -> (1, 1, 0, 1) in [2, 3, 2, 2]
  linear index    linear_index((1, 1, 0, 1), (2, 3, 2, 2)) = 1·12 + 1·4 + 0·2 + 1·1 = 17 (elements)
  bit offset      17 × 32 bits = 544: byte 68, bit 0

The whole account of a layout:

>>> from layout_algebra.teach.explain import explain
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
  element offset  12*(i0 // 2) + 4*(i1 // 2) + 2*(i0 % 2) + i1 % 2
  memory space    S(0): device memory (HBM)
  logical size    60 bytes (15 elements x 32 bits)
  physical size   96 bytes
  padding         36 bytes (physical / logical = 1.600)

Every offset says its unit: the *element offset* counts element slots, written in
Python's integer arithmetic (``//`` floor division, ``%`` remainder) and simplified by
code generation's rules (:mod:`layout_algebra.codegen.simplify`; ``layout-algebra codegen``
prints it certified); the worked *linear index* is in elements, the *bit offset* in bits
and bytes. Symbolic sizes give symbolic offsets, a sum in parentheses before ``×``:

>>> print(str(explain("f32[N,M]{1,0:T(8,128)}", element=(9, 130))).splitlines()[-1])
  bit offset      (1024*ceiling(M/128) + 1154) × 32 bits = 32768*ceiling(M/128) + 36928: byte 4096*ceiling(M/128) + 4616, bit 0

``explain`` returns an :class:`Explanation`: ``print`` it (or ``str``) for the text; in a
notebook it shows as a preformatted block, and ``to_dict()`` gives the facts as data (the
``--json`` output of ``layout-algebra explain``).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from layout_algebra.meaning.sizes import size_report
from layout_algebra.meaning.stages.pipeline import PHYSICAL_ORDER, TILE, layout_steps
from layout_algebra.meaning.stages.stages import PrependUnitDims
from layout_algebra.model.meaning import MEMORY_SPACE_NAMES, LayoutSemanticsError
from layout_algebra.model.shapes import UNBOUNDED_SIZE, ArrayShape, BufferShape, Dim, Shape, TupleShape
from layout_algebra.model.syntax import as_shape
from layout_algebra.model.validation import layout_problems

if TYPE_CHECKING:  # pragma: no cover
    from layout_algebra.meaning.layout_map import LayoutMap

__all__ = ["MEMORY_SPACE_NAMES", "Explanation", "explain"]


@dataclass(frozen=True, repr=False)
class Explanation:
    """The account of one shape's layout: ``str()`` (or ``print``) gives the text.

    ``shape`` is the parsed shape, ``element`` the logical index whose arithmetic is
    worked (or ``None``), ``text`` the account. In a notebook it shows as the text in a
    preformatted block; :meth:`to_dict` gives the facts as JSON-ready data.

    >>> e = explain("f32[3,5]{1,0:T(2,2)}")
    >>> e
    <Explanation of f32[3,5]{1,0:T(2,2)}: 18 lines, print() to read>
    >>> e.to_dict()["physical_bytes"], e.to_dict()["element_offset"]
    (96, '12*(i0 // 2) + 4*(i1 // 2) + 2*(i0 % 2) + i1 % 2')
    """

    shape: Shape
    element: tuple[int, ...] | None
    text: str

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"<Explanation of {self.shape}: {len(self.text.splitlines())} lines, print() to read>"

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(self.text)}</pre>"

    def _repr_markdown_(self) -> str:
        markdown = f"```text\n{self.text}\n```"
        formula = _offset_latex(self.shape)
        return markdown + (f"\n\nelement offset: $${formula}$$" if formula else "")

    def to_dict(self) -> dict[str, Any]:
        """The facts of the account as JSON-ready data (the schema of ``explain --json``).

        Keys: ``shape`` (canonical text), ``kind`` (``array``, ``tuple``, ``buffer``,
        ``token``, ``opaque``), ``text`` (the account); for arrays the fields of
        :func:`_array_facts`; ``elements`` (tuples) or ``array`` (buffers) nest the same
        record; with an element, ``element`` holds its worked offsets. Integers stay
        integers; symbolic sizes are SymPy text.
        """
        record = _facts(self.shape)
        if self.element is not None:
            record["element"] = _element_facts(self.shape, self.element)
        record["text"] = self.text
        return record


def explain(shape: Shape | str, element: Sequence[int] | None = None) -> Explanation:
    """A step-by-step account of how ``shape``'s layout places it in memory.

    With ``element`` (a logical index of an array shape), the account ends with the
    worked arithmetic that takes that element to its offset. ``print()`` the result to
    read it; ``.to_dict()`` gives the same facts as data.
    """
    parsed = as_shape(shape)
    index = None if element is None else tuple(element)
    return Explanation(parsed, index, _account(parsed, index))


def _account(parsed: Shape, element: tuple[int, ...] | None = None) -> str:
    if element is not None:
        from layout_algebra.meaning.layout_map import layout_map

        m = layout_map(parsed)  # a clear error for shapes without one map
        m.forward(element)  # ... and for an index that is not in the shape
        return _account(m.shape) + "\n" + "\n".join(_element_lines(m, element))
    lines = [str(parsed)]
    if isinstance(parsed, TupleShape):
        lines.append(f"  a tuple of {len(parsed.elements)} shapes; each element has its own buffer:")
        for i, member in enumerate(parsed.elements):
            lines.extend("  " + line for line in _indexed(i, _account(member)))
        return "\n".join(lines)
    if isinstance(parsed, BufferShape):
        lines.append("  a buffer holding one array:")
        lines.extend("  " + line for line in _account(parsed.array).splitlines())
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


def number_text(n: Dim) -> str:
    """A count for people, in the one style every command prints: ``335,544,320``; a formula as is."""
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
        out.append(_row("tiled shape", f"{_dims(report.tiled_dimensions)}: {number_text(slots)} slots"))
    out.extend(_map_lines(shape))
    if layout.tail_padding_alignment_in_elements != 1:
        out.append(
            _row(
                "tail padding",
                f"L({layout.tail_padding_alignment_in_elements}): slots rounded up to "
                f"{number_text(report.physical_elements)}",
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
            f"{number_text(report.logical_bytes)} bytes ({_elements(report.logical_elements)} x {bits_each} bits)",
        )
    )
    out.append(_row("physical size", f"{number_text(report.physical_bytes)} bytes"))
    if report.first_tile_bytes != report.physical_bytes:
        out.append(
            _row(
                "XLA allocates",
                f"{number_text(report.first_tile_bytes)} bytes (padding to the first tile only)",
            )
        )
    ratio = report.padding_ratio
    ratio_text = f"{ratio:.3f}" if isinstance(ratio, float) else str(ratio)
    out.append(
        _row("padding", f"{number_text(report.padding_bytes)} bytes (physical / logical = {ratio_text})")
    )
    out.extend(_row("note", n) for n in report.notes)
    return out


def _elements(n: Dim) -> str:
    return f"{number_text(n)} element" + ("" if n == 1 else "s")


def _dim(size: Dim, dynamic: bool) -> str:
    if dynamic:
        return "?" if size == UNBOUNDED_SIZE else f"<={size}"
    return str(size)


#: Closed forms longer than this are left out of the account (they stop being readable).
MAX_SHOWN_EXPRESSION = 160


def _map_lines(shape: ArrayShape) -> list[str]:
    from layout_algebra.meaning.layout_map import layout_map

    m = layout_map(shape)
    out = []
    for k, stage in enumerate(m.stages):
        out.append(_row("stages" if k == 0 else "", stage.describe()))
    if m.rank and math.prod(1 if not isinstance(d, int) else max(d, 1) for d in m.logical_dimensions):
        expr = element_offset_text(m)
        if len(expr) <= MAX_SHOWN_EXPRESSION:
            out.append(_row("element offset", expr))
    return out


def element_offset_text(m: LayoutMap) -> str:
    """The element offset of layout map ``m`` at index ``(i0, i1, ...)``, simplified, as
    Python text (``//`` floor division, ``%`` remainder): codegen's simplifier, uncertified
    here (``layout-algebra codegen`` certifies it).

    >>> from layout_algebra.meaning.layout_map import layout_map
    >>> element_offset_text(layout_map("bf16[16,256]{1,0:T(8,128)(2,1)}"))
    '2048*(i0 // 8) + 1024*(i1 // 128) + 256*((i0 // 2) % 4) + 2*(i1 % 128) + i0 % 2'
    """
    from layout_algebra.codegen import generate_code

    try:
        return generate_code(m.shape, "python", "forward", "element", check=False).expression_texts[0]
    except ValueError:  # e.g. a dimension named like an index variable: the stages' own form
        return str(m.forward_expr())


def _offset_latex(shape: Shape) -> str | None:
    """The simplified element offset of an array with a meaning, as LaTeX (for notebooks)."""
    if not isinstance(shape, ArrayShape) or not shape.rank or layout_problems(shape):
        return None
    from layout_algebra.codegen import generate_code

    try:
        formula = generate_code(shape, "latex", "forward", "element", check=False).expression_texts[0]
    except ValueError:  # no meaning, or names the code generator reserves
        return None
    return formula if len(formula) <= 4 * MAX_SHOWN_EXPRESSION else None


def _factor(x: object) -> str:
    """``x`` as a factor of a product: sums and products in parentheses."""
    text = str(x)
    return text if isinstance(x, int) or getattr(x, "is_Atom", False) else f"({text})"


def _tuple(values) -> str:
    return "(" + ", ".join(str(v) for v in values) + ")"


def _element_lines(m, element: tuple[int, ...]) -> list[str]:
    """The worked arithmetic taking ``element`` through each step of ``m``."""
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
                terms = " + ".join(f"{x}·{_factor(s)}" for x, s in zip(before, strides, strict=True)) or "0"
                lines.append(
                    f"linear_index({_tuple(before)}, {_tuple(stage.domain)}) = {terms} = {value[0]} (elements)"
                )
                label = "linear index"
            elif isinstance(stage, AlignTail):
                lines.append(
                    f"L({stage.alignment}) pads only the tail: position {value[0]} (elements) unchanged"
                )
                label = "tail padding"
            elif isinstance(stage, ToBits):
                bit = value[0]
                lines.append(
                    f"{_factor(before[0])} × {stage.bits} bits = {bit}: byte {bit // 8}, bit {bit % 8}"
                )
                label = "bit offset"
        if lines and isinstance(step.stages[-1], Split):
            lines.append(f"-> {_tuple(value)} in {_dims(step.stages[-1].range)}")
        for k, line in enumerate(lines):
            out.append(_row(label if k == 0 else "", line))
    return out


# ------------------------------------------------------------------------------ as data
def _json(x: Any) -> Any:
    """A size as JSON: an int stays an int, a symbolic size becomes its SymPy text."""
    return x if isinstance(x, int) else str(x)


def _facts(shape: Shape) -> dict[str, Any]:
    record: dict[str, Any] = {"shape": str(shape)}
    if isinstance(shape, TupleShape):
        return record | {"kind": "tuple", "elements": [_facts(e) for e in shape.elements]}
    if isinstance(shape, BufferShape):
        return record | {"kind": "buffer", "array": _facts(shape.array)}
    if not isinstance(shape, ArrayShape):
        return record | {"kind": type(shape).__name__.removesuffix("Shape").lower()}
    return record | {"kind": "array"} | _array_facts(shape)


def _array_facts(shape: ArrayShape) -> dict[str, Any]:
    """An array's fields, and, when its layout has a meaning, its stages and sizes.

    Sizes are in bytes, ``element_offset`` in elements (Python text of ``i0, i1, ...``);
    ``meaning`` is ``null`` or why the layout has none (then the size fields are ``null``).
    """
    from layout_algebra.meaning.layout_map import layout_map

    layout = shape.effective_layout
    facts: dict[str, Any] = {
        "element_type": shape.element_type.text,
        "dimensions": [_json(d) for d in shape.dimensions],
        "dynamic_dimensions": list(shape.dynamic_dimensions),
        "minor_to_major": list(layout.minor_to_major),
        "tiles": [str(t) for t in layout.tiles],
        "memory_space": layout.memory_space,
        "problems": list(layout_problems(shape)),
        "meaning": None,
    }
    size_fields = "element_bits tiled_dimensions stages element_offset logical_bytes physical_bytes"
    sized = dict.fromkeys((size_fields + " xla_allocated_bytes padding_bytes notes").split())
    if facts["problems"]:
        return facts | sized
    try:
        report = size_report(shape)
    except LayoutSemanticsError as err:
        return facts | sized | {"meaning": err.reason}
    m = layout_map(shape)
    return facts | {
        "element_bits": report.element_bits,
        "tiled_dimensions": [_json(d) for d in report.tiled_dimensions],
        "stages": [stage.describe() for stage in m.stages],
        "element_offset": element_offset_text(m) if m.rank else "0",
        "logical_bytes": _json(report.logical_bytes),
        "physical_bytes": _json(report.physical_bytes),
        "xla_allocated_bytes": _json(report.first_tile_bytes),
        "padding_bytes": _json(report.padding_bytes),
        "notes": list(report.notes),
    }


def _element_facts(shape: Shape, element: tuple[int, ...]) -> dict[str, Any]:
    """Where ``element`` lands: its offset in elements, bits and bytes (the bit within the byte)."""
    from layout_algebra.meaning.layout_map import layout_map

    m = layout_map(shape)
    bit = m.forward(element, "bit")
    return {
        "index": list(element),
        "offset_in_elements": _json(m.forward(element)),
        "offset_in_bits": _json(bit),
        "byte": _json(bit // 8),
        "bit_in_byte": _json(bit % 8),
    }
