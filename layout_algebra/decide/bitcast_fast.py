"""The bitcast decision's first step: concrete sizes, no solver, no SymPy, no NumPy.

:func:`decide_without_solver` is what :mod:`layout_algebra.decide.bitcast` tries first for
concrete shapes. It checks what every correspondence needs (the memory space, the element
width, the element count, the bytes XLA allocates for each side), then each correspondence
in the order the exact decision tries them: proved when both sides read their elements in
physical order and both stage pipelines take a physical index to the same bit offset
(``same physical arrangement``, :func:`~layout_algebra.decide.correspondence.same_physical_arrangement`),
else, for small arrays, by comparing the bit offsets of every element in plain Python.
Where it would need more (a large array whose arrangement differs), it returns ``None`` and
the exact decision (NumPy enumeration, Z3) decides. What it returns is the exact decision's
verdict, word for word: the same checks in the same order with the same reasons
(``tests/decide/test_bitcast_fast_path.py`` compares the two on random shapes).

A fresh process that asks one such question loads neither SymPy nor Z3 nor NumPy:

>>> from layout_algebra.decide.correspondence import reshape_correspondence
>>> from layout_algebra.model.syntax import as_shape
>>> def fast(src, dst):
...     a, b = as_shape(src), as_shape(dst)
...     return decide_without_solver("reshape", a, b, (reshape_correspondence(a, b),), in_python=True)
>>> v = fast("f32[8,128]{1,0:T(8,128)}", "f32[1,8,128]{2,1,0:T(8,128)}")
>>> v.verdict, v.method
('bitcast', 'same physical arrangement (no solver)')
>>> fast("f32[16,128]{1,0:T(8,128)}", "f32[2,8,128]{2,1,0:T(8,128)}").method
'enumerating all 2,048 elements'
>>> fast("f32[8,16,128]{2,1,0:T(8,128)}", "f32[128,128]{1,0:T(8,128)}").method
'enumerating 256 elements by groups: both offsets are sums of one-dimension terms'
>>> v = fast("f32[4,8]{1,0}", "f32[8,4]{0,1}")
>>> v.verdict, v.counterexample["element"], v.method
('not a bitcast', (0, 1), 'enumerating all 32 elements')

A large array whose layout is not a sum of one term per dimension (``*`` merges two) is
left to the exact decision:

>>> fast("f32[64,30,5]{2,1,0:T(2,*,4)}", "f32[64,150]{1,0:T(2,4)}") is None
True
"""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from layout_algebra.decide.correspondence import (
    Correspondence,
    equal_product_groups,
    input_index_of,
    is_separable,
    same_physical_arrangement,
)
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.meaning.sizes import size_report, xla_shape_size
from layout_algebra.meaning.stages.arith import ARITHMETIC as INT
from layout_algebra.model.questions import AnswersQuestion, Question
from layout_algebra.model.shapes import ArrayShape
from layout_algebra.prove.result import json_value

if TYPE_CHECKING:
    from layout_algebra.prove.result import ProofResult

__all__ = [
    "BITCAST",
    "ENUMERATION_LIMIT",
    "FAST_ENUMERATION_LIMIT",
    "NOT_A_BITCAST",
    "SMALL",
    "UNKNOWN",
    "BitcastVerdict",
    "allocations",
    "allocator",
    "byte_count",
    "decide_without_solver",
    "difference_by_groups",
    "element_count",
    "first_different_position",
    "fits_int64",
    "kept_reason",
    "memory_space_reason",
    "none_of",
    "refuted",
    "same_allocation",
    "separable_groups",
    "shared_conditions",
    "untiled_alignment",
    "verdict_at",
    "xla_array_sizes",
]

BITCAST = "bitcast"
NOT_A_BITCAST = "not a bitcast"
UNKNOWN = "unknown"
_DOMAIN = {"proved": BITCAST, "refuted": NOT_A_BITCAST, "unknown": UNKNOWN}
#: Up to this many elements, the bit offsets of every element are compared in plain Python
#: (about 20 µs an element: 10 ms, less than loading NumPy); above it, the exact decision.
FAST_ENUMERATION_LIMIT = 512
#: Arrays up to this many elements are decided by enumerating every element (NumPy);
#: larger ones by sampled refutation, then Z3.
ENUMERATION_LIMIT = 1 << 17
#: Up to this many elements, the exact decision enumerates every element (above it, separable
#: layouts by groups); the fast path enumerates separable layouts up to here (2 ms for 2,048).
SMALL = 4096
#: Bit offsets below this are computed exactly by NumPy's int64 (with room for a sum).
INT64_SAFE_BITS = 1 << 62


def memory_space_reason(src_space: int, dst_space: int) -> str:
    """The one reason given everywhere for a memory-space change.

    >>> memory_space_reason(0, 1)
    'different memory spaces S(0) → S(1): a copy between memories'
    """
    return f"different memory spaces S({src_space}) → S({dst_space}): a copy between memories"


# ------------------------------------------------------------------------- verdict
@dataclass(frozen=True)
class BitcastVerdict(AnswersQuestion):
    """Whether reinterpreting ``src``'s buffer as ``dst`` keeps every element's bits.

    ``status``: ``"proved"``, ``"refuted"`` (with a re-checked ``counterexample`` where
    there is one to give) or ``"unknown"`` (see ``reason``); ``verdict`` is the same in
    the domain's words: ``"bitcast"``, ``"not a bitcast"``, ``"unknown"``.
    ``correspondence`` names the logical correspondence used (``"reshape"``,
    ``"transpose [1, 0]"``, ``"transpose-reshape-transpose"``) and ``method`` how the
    offsets were decided. Truthy exactly when proved.
    """

    status: str
    operation: str
    src: ArrayShape
    dst: ArrayShape
    reason: str
    counterexample: dict[str, Any] | None = None
    proofs: tuple[ProofResult, ...] = field(default=(), repr=False)
    correspondence: str = ""
    method: str = ""
    #: the claim answered, for ``layout_algebra.condition_of`` (the sizes for which it holds)
    question: Question | None = field(default=None, repr=False, compare=False)

    @property
    def verdict(self) -> str:
        return _DOMAIN[self.status]

    @property
    def kind(self) -> str:
        """The correspondence (the name ``bitcast_is_valid`` used before)."""
        return self.correspondence

    def __bool__(self) -> bool:
        return self.status == "proved"

    def __str__(self) -> str:
        text = f"{self.verdict} ({self.status}): {self.operation} {self.src} -> {self.dst}\n  {self.reason}"
        if self.counterexample:
            text += "\n  counterexample: " + ", ".join(f"{k}={v}" for k, v in self.counterexample.items())
        if self.method:
            text += f"\n  decided by: {self.method}"
        return text

    def __repr__(self) -> str:
        how = f", {self.correspondence!r}" if self.correspondence else ""
        return f"BitcastVerdict({self.status}: {self.verdict!r}, {self.operation!r}{how})"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the ``bitcast --json`` schema, documented in docs/bitcasts.md)."""
        return {
            "verdict": self.verdict,
            "status": self.status,
            "operation": self.operation,
            "src": str(self.src),
            "dst": str(self.dst),
            "correspondence": self.correspondence or None,
            "reason": self.reason,
            "counterexample": json_value(self.counterexample),
            "method": self.method or None,
        }


def refuted(
    operation: str,
    a: ArrayShape,
    b: ArrayShape,
    reason: str,
    cex: dict[str, Any] | None = None,
    corr: str = "",
    method: str = "",
    proofs: Sequence[ProofResult] = (),
) -> BitcastVerdict:
    """A refutation (``cex``: its counterexample, re-checked by the caller)."""
    return BitcastVerdict("refuted", operation, a, b, reason, cex, tuple(proofs), corr, method)


def element_count(shape: ArrayShape) -> Any:
    """The number of elements (a formula for symbolic sizes)."""
    return math.prod(shape.dimensions, start=1)


# ------------------------------------------------------- what every correspondence needs
def shared_conditions(operation: str, a: ArrayShape, b: ArrayShape) -> BitcastVerdict | None:
    """Memory space and element width: the same for every correspondence and every size."""
    space_a, space_b = a.effective_layout.memory_space, b.effective_layout.memory_space
    if space_a != space_b:
        return refuted(operation, a, b, memory_space_reason(space_a, space_b), method="memory spaces")
    bits_a, bits_b = layout_map(a).element_bits, layout_map(b).element_bits
    if bits_a != bits_b:
        return refuted(
            operation,
            a,
            b,
            f"element sizes differ: {bits_a} bits ({a.element_type.text}) vs {bits_b} bits ({b.element_type.text})",
            method="element sizes",
        )
    return None


def allocations(a: ArrayShape, b: ArrayShape) -> tuple[Any, Any, str]:
    """XLA's allocation of each side, and a note when the exact nested buffer differs."""
    ra, rb = size_report(a), size_report(b)
    note = ""
    if ra.physical_bytes != ra.first_tile_bytes or rb.physical_bytes != rb.first_tile_bytes:
        note = (
            f" (the exact nested buffers are {byte_count(ra.physical_bytes)} and "
            f"{byte_count(rb.physical_bytes)}: a later tile does not divide the first; XLA allocates "
            "to the first tile only)"
        )
    if untiled_alignment(a) or untiled_alignment(b):
        note += (
            " (an untiled layout's L(n) is counted, as its stage pipeline pads to it; XLA's "
            "ShapeUtil::ArraySize ignores L(n) when there are no tiles)"
        )
    return ra.first_tile_bytes, rb.first_tile_bytes, note


def same_allocation(a: ArrayShape, b: ArrayShape) -> bool:
    """Whether XLA allocates the same bytes for both arrays, by the rule a bitcast must keep
    (concrete sizes): the first tile's padding and ``L(n)`` (what XLA:TPU allocates), and
    ``ShapeUtil::ArraySize``, which ignores an untiled ``L(n)``.

    >>> from layout_algebra.model.syntax import as_shape
    >>> same_allocation(as_shape("f32[5]{0:T(1)L(4)}"), as_shape("f32[5]{0:L(4)}"))  # 32 vs 20 bytes
    False
    >>> same_allocation(as_shape("f32[6,128]{1,0:T(8,128)}"), as_shape("f32[768]{0:T(1024)}"))
    True
    """
    alloc_a, alloc_b, _ = allocations(a, b)
    xla_a, xla_b = xla_array_sizes(a, b)
    return bool(alloc_a == alloc_b and xla_a == xla_b)


def xla_array_sizes(a: ArrayShape, b: ArrayShape) -> tuple[Any, Any]:
    """``ShapeUtil::ArraySize`` of each side: the first tile's padding and ``L(n)`` with tiles,
    the elements' bytes without (``L(n)`` ignored). It differs from :func:`allocations` only
    for an untiled ``L(n)``; a bitcast must keep both (the buffer, and what XLA checks)."""
    return xla_shape_size(a), xla_shape_size(b)


def allocator(a: ArrayShape, b: ArrayShape) -> str:
    """Who sets the sizes compared: XLA's allocation, or the buffers where an untiled ``L(n)`` counts."""
    return "the buffers take" if untiled_alignment(a) or untiled_alignment(b) else "XLA allocates"


def untiled_alignment(a: ArrayShape) -> bool:
    """An ``L(n)`` (n > 1) without tiles: where this module and XLA's ``ArraySize`` part ways."""
    layout = a.effective_layout
    return not layout.tiles and layout.tail_padding_alignment_in_elements != 1


def byte_count(n: Any) -> str:
    """``n`` bytes, as a reason writes it.

    >>> byte_count(4096)
    '4,096 bytes'
    """
    return f"{n:,} bytes" if isinstance(n, int) else f"{n} bytes"


def kept_reason(corr: Correspondence, a: ArrayShape, b: ArrayShape, allocated: Any, note: str) -> str:
    """The reason of a proved concrete verdict under ``corr``."""
    return f"{corr}: every element keeps its bit offset; {allocator(a, b)} {byte_count(allocated)} for both{note}"


def fits_int64(shape: ArrayShape) -> bool:
    """Whether every bit offset of ``shape`` (and each value its stages compute on the way,
    none larger than the buffer) is below :data:`INT64_SAFE_BITS`: only then may offsets be
    computed by NumPy, whose int64 arithmetic wraps silently (two offsets 2**64 bits apart
    would look equal). Larger layouts are decided by Z3 on wide bit-vectors."""
    m = layout_map(shape)
    return (
        int(m.size_in_elements) * int(m.element_bits) < INT64_SAFE_BITS
        and element_count(shape) < INT64_SAFE_BITS
    )


def verdict_at(operation: str, a: ArrayShape, b: ArrayShape) -> tuple[BitcastVerdict | None, tuple[Any, str]]:
    """The checks before any correspondence, on concrete shapes: a refutation if one fails
    (memory space, element width, element count, XLA's allocation), else ``None`` and
    ``(the bytes allocated for each side, the note on them)``."""
    shared = shared_conditions(operation, a, b)
    if shared is not None:
        return shared, (0, "")
    count_a, count_b = element_count(a), element_count(b)
    if count_a != count_b:
        return refuted(
            operation,
            a,
            b,
            f"element counts differ: {count_a:,} vs {count_b:,}",
            {"src_elements": count_a, "dst_elements": count_b},
            method="element counts",
        ), (0, "")
    alloc_a, alloc_b, note = allocations(a, b)
    if alloc_a != alloc_b:
        return refuted(
            operation,
            a,
            b,
            f"{allocator(a, b)} {byte_count(alloc_a)} for the input and {byte_count(alloc_b)} for the output{note}",
            {"src_allocated_bytes": alloc_a, "dst_allocated_bytes": alloc_b},
            method="XLA allocation sizes",
        ), (0, "")
    xla_a, xla_b = xla_array_sizes(a, b)
    if xla_a != xla_b:  # only where an untiled L(n) is on one side: XLA's verifier rejects it
        return refuted(
            operation,
            a,
            b,
            f"XLA's ShapeUtil::ArraySize is {byte_count(xla_a)} for the input and {byte_count(xla_b)} for the "
            f"output (it ignores an untiled L(n)); XLA's verifier requires a bitcast to keep it",
            {"src_allocated_bytes": xla_a, "dst_allocated_bytes": xla_b},
            method="XLA allocation sizes",
        ), (0, "")
    return None, (alloc_a, note)


def none_of(operation: str, a: ArrayShape, b: ArrayShape, tried: list[BitcastVerdict]) -> BitcastVerdict:
    """The verdict when no correspondence was proved: why, for each kind."""
    if operation != "bitcast":
        return tried[0]
    unknown = [v for v in tried if v.status == "unknown"]
    reasons = [
        v.reason if v.reason.startswith(v.correspondence) else f"{v.correspondence}: {v.reason}"
        for v in tried
    ]
    kinds = {v.correspondence.split(" ")[0] for v in tried}
    if "transpose" not in kinds:
        reasons.append("transpose: no permutation but the identity (the reshape) fits the dimensions")
    if "transpose-reshape-transpose" not in kinds:
        reasons.append("transpose-reshape-transpose: here the same pairing of elements as one above")
    why = "; ".join(reasons)
    if unknown:
        return BitcastVerdict("unknown", operation, a, b, f"no correspondence proved; {why}")
    first = tried[0]
    cex = dict(first.counterexample or {}, correspondence=first.correspondence)
    return refuted(
        operation,
        a,
        b,
        f"no correspondence keeps every element's bits — {why}",
        cex,
        method=", ".join(dict.fromkeys(v.method for v in tried)),
    )


# ------------------------------------------------------------------------ the fast path
def decide_without_solver(
    operation: str,
    a: ArrayShape,
    b: ArrayShape,
    candidates: Sequence[Correspondence],
    in_python: bool | None = None,
) -> BitcastVerdict | None:
    """The exact concrete decision where it needs no solver and no NumPy, else ``None``.

    The same verdict as the exact decision (:mod:`layout_algebra.decide.bitcast`): the
    checks before any correspondence, then each correspondence in order, proved by the same
    physical arrangement or by comparing the bit offsets of every element in plain Python
    (the first difference, in the correspondence's reading order, is the counterexample,
    re-evaluated one element at a time). ``in_python``: whether to compare offsets here; by
    default only while NumPy is not loaded (the first decisions of a process), as NumPy
    compares them several times faster once it is."""
    early, (allocated, note) = verdict_at(operation, a, b)
    if early is not None:
        return early
    if in_python is None:
        in_python = "numpy" not in sys.modules
    n = element_count(a)
    small = in_python and _enumerable(a, b)
    tried: list[BitcastVerdict] = []
    for corr in candidates:
        if same_physical_arrangement(a, b, corr):
            return BitcastVerdict(
                "proved",
                operation,
                a,
                b,
                kept_reason(corr, a, b, allocated, note),
                None,
                (),
                str(corr),
                "same physical arrangement (no solver)",
            )
        if not in_python:
            return None
        if n > SMALL and fits_int64(a) and fits_int64(b):
            grouped = difference_by_groups(a, b, corr)
            if grouped is None:
                return None  # the exact decision decides this correspondence (and those after it)
            checked, k = grouped
            method = (
                f"enumerating {checked:,} elements by groups: both offsets are sums of one-dimension terms"
            )
        elif small:
            method = f"enumerating all {n:,} elements"
            k = first_different_position(a, b, corr)
        else:
            return None
        if k is None:
            return BitcastVerdict(
                "proved",
                operation,
                a,
                b,
                kept_reason(corr, a, b, allocated, note),
                None,
                (),
                str(corr),
                method,
            )
        found = _refutation_at(operation, a, b, corr, k, method)
        if found is None:  # the two evaluations disagree: let the exact decision say why
            return None
        tried.append(found)
    return none_of(operation, a, b, tried)


def _bit_offsets_in_order(shape: ArrayShape, order: tuple[int, ...]) -> Iterator[int]:
    """The bit offset of each element of ``shape``, in the row-major order of its dimensions
    read in ``order``. A separable layout (offset ``c + sum_d g_d(index[d])``,
    :func:`~layout_algebra.decide.correspondence.is_separable`) is run through its stages once
    per value of each dimension and its offsets summed from those tables (exact: ``g_d(x)`` is
    the offset of ``x`` along ``d`` less the offset of 0); any other, once per element."""
    m = layout_map(shape)
    last, bits, rank = len(m.stages) - 1, m.element_bits, m.rank
    dims = [int(shape.dimensions[d]) for d in order]
    if is_separable(shape):
        zero, tables = _offset_tables(shape, order)
        for terms in itertools.product(*tables):
            yield (zero + sum(terms)) * bits
        return
    for digits in itertools.product(*(range(size) for size in dims)):
        index = [0] * rank
        for d, x in zip(order, digits, strict=True):
            index[d] = x
        yield m.apply(index, through=last)[0] * bits


def first_different_position(a: ArrayShape, b: ArrayShape, corr: Correspondence) -> int | None:
    """The first position, in ``corr``'s reading order, whose two elements have different
    bit offsets (plain Python); ``None`` when every element keeps its offset.

    >>> from layout_algebra.decide.correspondence import reshape_correspondence
    >>> from layout_algebra.model.syntax import as_shape
    >>> a, b = as_shape("f32[2,3]{1,0}"), as_shape("f32[3,2]{0,1}")
    >>> first_different_position(a, b, reshape_correspondence(a, b))  # element [0, 1] of b
    1
    """
    pairs = zip(
        _bit_offsets_in_order(a, corr.src_order), _bit_offsets_in_order(b, corr.dst_order), strict=True
    )
    return next((k for k, (x, y) in enumerate(pairs) if x != y), None)


def _offset_tables(shape: ArrayShape, order: tuple[int, ...]) -> tuple[int, list[list[int]]]:
    """A separable layout's offset at 0 and, for each dimension in ``order``, the offset of
    each of its values less that (in elements)."""
    m = layout_map(shape)
    last, rank = len(m.stages) - 1, m.rank
    zero = m.apply([0] * rank, through=last)[0]
    tables = []
    for d in order:
        unit = [0] * rank
        column = []
        for x in range(int(shape.dimensions[d])):
            unit[d] = x
            column.append(m.apply(unit, through=last)[0] - zero)
        tables.append(column)
    return zero, tables


def separable_groups(
    a: ArrayShape, b: ArrayShape, corr: Correspondence
) -> tuple[list[int], list[int], list[tuple[int, int, int, int]], list[int]] | None:
    """The groups of dimensions of equal products both layouts' offsets are checked by: (source
    sizes, destination sizes, the groups, each group's element count), or ``None`` when the check
    by groups does not apply (a layout that is not separable, a size 0, groups larger than
    :data:`ENUMERATION_LIMIT` in all)."""
    if not (is_separable(a) and is_separable(b)):
        return None
    sd = [int(a.dimensions[d]) for d in corr.src_order]
    dd = [int(b.dimensions[d]) for d in corr.dst_order]
    if 0 in sd:
        return None
    groups = equal_product_groups(sd, dd)
    sizes = [math.prod(sd[s0:s1], start=1) for s0, s1, _, _ in groups]
    if sum(sizes) > ENUMERATION_LIMIT:
        return None
    return sd, dd, groups, sizes


def difference_by_groups(a: ArrayShape, b: ArrayShape, corr: Correspondence) -> tuple[int, int | None] | None:
    """The exact decision's check by groups, in plain Python: for separable layouts the
    offsets agree everywhere iff they agree on each group of dimensions of equal products
    with the other groups' indices at 0 (the sums are independent). ``(elements checked,
    the first differing position or None)``, or ``None`` when it does not apply (a layout
    that is not separable, a size 0, groups larger than :data:`ENUMERATION_LIMIT` in all)."""
    found = separable_groups(a, b, corr)
    if found is None:
        return None
    sd, dd, groups, sizes = found
    zero_a, tables_a = _offset_tables(a, corr.src_order)
    zero_b, tables_b = _offset_tables(b, corr.dst_order)
    bits = layout_map(a).element_bits
    checked = 0
    for (s0, s1, d0, d1), size in zip(groups, sizes, strict=True):
        if math.prod(dd[d0:d1], start=1) != size:
            return None
        stride = math.prod(sd[s1:], start=1)
        src = itertools.product(*tables_a[s0:s1])
        dst = itertools.product(*tables_b[d0:d1])
        for t, (x, y) in enumerate(zip(src, dst, strict=True)):
            if (zero_a + sum(x)) * bits != (zero_b + sum(y)) * bits:
                return checked + size, t * stride
        checked += size
    return checked, None


def _enumerable(a: ArrayShape, b: ArrayShape) -> bool:
    """Whether :func:`first_different_position` is cheap here (a few ms): up to
    :data:`FAST_ENUMERATION_LIMIT` elements, or :data:`SMALL` when both layouts are
    separable; and offsets NumPy's int64 would hold (the exact decision's condition)."""
    n = element_count(a)
    if n > SMALL or not (fits_int64(a) and fits_int64(b)):
        return False
    return n <= FAST_ENUMERATION_LIMIT or (is_separable(a) and is_separable(b))


def _refutation_at(
    operation: str, a: ArrayShape, b: ArrayShape, corr: Correspondence, k: int, method: str
) -> BitcastVerdict | None:
    """The refutation at position ``k``, re-evaluated through the correspondence's input index."""
    dims = [int(b.dimensions[d]) for d in corr.dst_order]
    digits = []
    for size in reversed(dims):
        k, digit = divmod(k, size)
        digits.append(digit)
    index = [0] * b.rank
    for d, x in zip(corr.dst_order, reversed(digits), strict=True):
        index[d] = x
    j = tuple(index)
    i = tuple(int(x) for x in input_index_of(corr, a, b)(j, INT))
    src_bit = layout_map(a).forward(i, unit="bit")
    dst_bit = layout_map(b).forward(j, unit="bit")
    if src_bit == dst_bit:
        return None
    reason = (
        f"{corr}: output element {list(j)} is at bit {dst_bit:,} of the output, "
        f"but its input element {list(i)} is at bit {src_bit:,} of the input"
    )
    cex = {"element": j, "src_element": i, "src_bit": src_bit, "dst_bit": dst_bit}
    return refuted(operation, a, b, reason, cex, str(corr), method)
