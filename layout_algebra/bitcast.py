"""Exact bitcast checks: does a reshape, transpose or bitcast move any data?

An operation moves no data when the output's buffer *is* the input's buffer: every
output element sits at the same bit offset as the input element it comes from, and the
two buffers have the same size. Tiles, padding, ``E(n)`` packing and ``L(n)`` all count
(XLA's own ``ShapeUtil::ReshapeIsBitcast`` ignores tiles; see ``layout_algebra.xla``).

* reshape: output element ``j`` is the input element with the same row-major logical
  position (XLA's reshape semantics);
* transpose: output dimension ``k`` is input dimension ``permutation[k]``.

The answer is a :class:`BitcastVerdict`, truthy exactly when the operation is proved to
move no data; otherwise it carries a counterexample (an output element and its two bit
offsets) re-checked by evaluating both layouts, or the reason it is unknown.

>>> from layout_algebra.bitcast import reshape_is_bitcast, transpose_is_bitcast
>>> v = reshape_is_bitcast("bf16[32,8,24,200]{3,2,1,0:T(8,128)(2,1)}", "bf16[256,24,200]{2,1,0:T(8,128)(2,1)}")
>>> v.status
'bitcast'
>>> v = reshape_is_bitcast("f32[16,256]{1,0:T(8,128)}", "f32[4096]{0}")
>>> v.status, v.counterexample["src_bit"] != v.counterexample["dst_bit"]
('not a bitcast', True)
>>> bool(transpose_is_bitcast("f32[8,128]{1,0:T(8,128)}", "f32[128,8]{0,1:T(8,128)}", (1, 0)))  # same bytes
True
>>> bool(transpose_is_bitcast("f32[8,128]{1,0:T(8,128)}", "f32[128,8]{1,0:T(8,128)}", (1, 0)))  # moves data
False

Symbolic sizes work with assumptions ("for every N divisible by 8"):

>>> reshape_is_bitcast("f32[N,8,128]{2,1,0:T(8,128)}", "f32[M,128]{1,0:T(8,128)}", assume="M == 8*N").status
'bitcast'
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import sympy

from layout_algebra.layout_map import layout_map
from layout_algebra.model.shapes import ArrayShape, Layout, Shape
from layout_algebra.model.syntax import as_shape
from layout_algebra.prove import ProofResult, equivalent, function_map, holds
from layout_algebra.prove.core import Assumptions
from layout_algebra.references import delinearize_row_major, linear_index_row_major
from layout_algebra.sizes import meaningful_array, size_report

__all__ = [
    "BitcastVerdict",
    "bitcast_is_valid",
    "reshape_is_bitcast",
    "suggest_bitcast_layout",
    "transpose_is_bitcast",
]


@dataclass(frozen=True)
class BitcastVerdict:
    """Whether an operation moves no data, and why.

    ``status``: ``"bitcast"`` (proved), ``"not a bitcast"`` (with a re-checked
    ``counterexample``: an output ``element`` and its ``src_bit`` / ``dst_bit`` offsets, or
    the two buffer sizes), or ``"unknown"`` (the prover gave up; see ``reason``).
    """

    status: str
    operation: str
    src: ArrayShape
    dst: ArrayShape
    reason: str
    counterexample: dict[str, Any] | None = None
    proofs: tuple[ProofResult, ...] = field(default=())
    kind: str = ""  # for bitcast_is_valid: "reshape" or "transpose <perm>"

    def __bool__(self) -> bool:
        return self.status == "bitcast"

    def __str__(self) -> str:
        text = f"{self.status}: {self.operation} {self.src} -> {self.dst}\n  {self.reason}"
        if self.counterexample:
            text += "\n  counterexample: " + ", ".join(f"{k}={v}" for k, v in self.counterexample.items())
        return text


# --------------------------------------------------------------------------- helpers
def _bit_position(shape: ArrayShape):
    """``index, ar -> bit offset`` of ``shape``'s layout (any arithmetic)."""
    m = layout_map(shape)
    through = len(m.stages) - 1
    bits = m.element_bits
    return lambda index, ar: m.apply(index, ar, through=through)[0] * bits


def _same_sizes(
    src: ArrayShape, dst: ArrayShape, assume: Assumptions
) -> tuple[bool | None, str, ProofResult | None]:
    space_a, space_b = src.effective_layout.memory_space, dst.effective_layout.memory_space
    if space_a != space_b:
        return False, f"the buffers are in different memory spaces, S({space_a}) and S({space_b})", None
    a, b = layout_map(src).size_in_bits, layout_map(dst).size_in_bits
    if isinstance(a, int) and isinstance(b, int):
        if a != b:
            return False, f"the buffers differ in size: {a} bits vs {b} bits", None
        first_a, first_b = size_report(src).first_tile_bytes, size_report(dst).first_tile_bytes
        if first_a != first_b:
            return False, f"XLA allocates different sizes: {first_a} vs {first_b} bytes", None
        return True, "", None
    proof = holds(sympy.Eq(sympy.sympify(a), sympy.sympify(b)), assume=assume)
    if proof.status == "proved":
        return True, "", proof
    if proof.status == "refuted":
        return False, f"the buffer sizes differ for some sizes: {proof.counterexample}", proof
    return None, f"could not decide whether the buffer sizes agree: {proof.reason}", proof


def _verdict_from(
    operation: str,
    src: ArrayShape,
    dst: ArrayShape,
    proof: ProofResult,
    size_proof: ProofResult | None,
) -> BitcastVerdict:
    proofs = tuple(p for p in (size_proof, proof) if p is not None)
    if proof.status == "proved":
        return BitcastVerdict(
            "bitcast",
            operation,
            src,
            dst,
            "every element keeps its bit offset and the buffers have the same size",
            proofs=proofs,
        )
    if proof.status == "refuted":
        cex = proof.counterexample or {}
        counterexample = {
            "element": cex.get("element"),
            "src_bit": cex.get("other_position"),
            "dst_bit": cex.get("position"),
        }
        if "sizes" in cex:
            counterexample["sizes"] = cex["sizes"]
        return BitcastVerdict(
            "not a bitcast",
            operation,
            src,
            dst,
            f"output element {counterexample['element']} is at bit {counterexample['dst_bit']} of the output "
            f"but its input element is at bit {counterexample['src_bit']}",
            counterexample,
            proofs,
        )
    return BitcastVerdict("unknown", operation, src, dst, proof.reason, proofs=proofs)


def _arrays(src: Shape | str, dst: Shape | str) -> tuple[ArrayShape, ArrayShape]:
    a, b = meaningful_array(as_shape(src)), meaningful_array(as_shape(dst))
    for s in (a, b):
        if s.layout is None:
            raise ValueError(f"{s}: a bitcast question needs a layout on both shapes")
    return a, b


# --------------------------------------------------------------------------- reshape
def reshape_is_bitcast(src: Shape | str, dst: Shape | str, *, assume: Assumptions = None) -> BitcastVerdict:
    """Whether reshaping ``src`` to ``dst`` (both with layouts) moves no data.

    Output element ``j`` comes from the input element with the same row-major logical
    position. Raises ``ValueError`` when the element counts or types differ (not a
    reshape at all).
    """
    a, b = _arrays(src, dst)
    operation = "reshape"
    if a.element_type != b.element_type:
        raise ValueError(f"reshape cannot change the element type: {a} -> {b}")
    count_a, count_b = math.prod(a.dimensions, start=1), math.prod(b.dimensions, start=1)
    if isinstance(count_a, int) and isinstance(count_b, int) and count_a != count_b:
        raise ValueError(f"{a} has {count_a} elements and {b} has {count_b}: not a reshape")
    src_dims, dst_dims = tuple(a.dimensions), tuple(b.dimensions)
    return _decide(
        operation,
        a,
        b,
        lambda j, ar: delinearize_row_major(linear_index_row_major(j, dst_dims, ar), src_dims, ar),
        assume,
    )


# ------------------------------------------------------------------------- transpose
def transpose_is_bitcast(
    src: Shape | str,
    dst: Shape | str,
    permutation: Sequence[int],
    *,
    assume: Assumptions = None,
) -> BitcastVerdict:
    """Whether ``transpose(src, dimensions=permutation)`` with result layout ``dst`` moves no data.

    Output dimension ``k`` is input dimension ``permutation[k]`` (XLA's transpose).
    """
    a, b = _arrays(src, dst)
    perm = tuple(int(p) for p in permutation)
    if sorted(perm) != list(range(a.rank)) or b.rank != a.rank:
        raise ValueError(f"{list(perm)} is not a permutation of the {a.rank} dimensions of {a} -> {b}")
    if a.element_type != b.element_type:
        raise ValueError(f"transpose cannot change the element type: {a} -> {b}")
    expected = tuple(a.dimensions[p] for p in perm)
    if tuple(b.dimensions) != expected:
        raise ValueError(
            f"transposing {a} by {list(perm)} gives dimensions {list(expected)}, not those of {b}"
        )
    operation = f"transpose {list(perm)}"

    def input_index(j, ar):
        i = [None] * len(perm)
        for k, p in enumerate(perm):
            i[p] = j[k]
        return i

    return _decide(operation, a, b, input_index, assume)


def _decide(operation: str, a: ArrayShape, b: ArrayShape, input_index, assume: Assumptions) -> BitcastVerdict:
    """Same buffer size and memory space, then: output element ``j`` is at the bit of input
    element ``input_index(j)`` for every ``j`` (proved, or refuted and re-checked)."""
    same, why, size_proof = _same_sizes(a, b, assume)
    if same is False:
        cex = {"src_bits": layout_map(a).size_in_bits, "dst_bits": layout_map(b).size_in_bits}
        if size_proof is not None and size_proof.counterexample:
            cex = {"sizes": size_proof.counterexample}
        return BitcastVerdict("not a bitcast", operation, a, b, why, cex)
    if same is None:
        return BitcastVerdict("unknown", operation, a, b, why)
    src_bit, dst_bit = _bit_position(a), _bit_position(b)

    def through_input(j, ar):
        return src_bit(input_index(j, ar), ar)

    proof = equivalent(
        function_map(b, lambda j, ar: dst_bit(j, ar), name=f"bit offset in {b}"),
        function_map(b, through_input, name=f"bit offset of the same element in {a}"),
        assume=assume,
    )
    return _checked(_verdict_from(operation, a, b, proof, size_proof), through_input, dst_bit)


def _checked(verdict: BitcastVerdict, through_input, dst_bit) -> BitcastVerdict:
    """Re-evaluate a refutation's element concretely; demote it to unknown if it does not hold."""
    cex = verdict.counterexample
    if verdict.status != "not a bitcast" or not cex or "element" not in cex or "sizes" in cex:
        return verdict
    from layout_algebra.stages.arith import ARITHMETIC

    element = tuple(cex["element"])
    if (
        through_input(element, ARITHMETIC) != cex["src_bit"]
        or dst_bit(element, ARITHMETIC) != cex["dst_bit"]
        or cex["src_bit"] == cex["dst_bit"]
    ):
        return BitcastVerdict(
            "unknown",
            verdict.operation,
            verdict.src,
            verdict.dst,
            "a counterexample failed re-evaluation",
            proofs=verdict.proofs,
        )
    return verdict


# --------------------------------------------------------------------------- bitcast
def bitcast_is_valid(src: Shape | str, dst: Shape | str, *, assume: Assumptions = None) -> BitcastVerdict:
    """Whether ``bitcast(src) -> dst`` reinterprets the same bytes as a meaningful array.

    Valid when the buffers have the same size and the reinterpretation is a reshape or a
    transpose that moves no data (XLA's bitcasts decompose into these; ``kind`` says which).
    """
    a, b = _arrays(src, dst)
    if a.element_type.bit_width != b.element_type.bit_width:
        return BitcastVerdict(
            "not a bitcast",
            "bitcast",
            a,
            b,
            f"element widths differ ({a.element_type.text} vs {b.element_type.text})",
        )
    a_same = ArrayShape(b.element_type, a.dimensions, a.dynamic_dimensions, a.layout)
    count_a, count_b = math.prod(a.dimensions, start=1), math.prod(b.dimensions, start=1)
    tried: list[BitcastVerdict] = []
    if count_a == count_b:
        verdict = reshape_is_bitcast(a_same, b, assume=assume)
        if verdict:
            return BitcastVerdict(
                "bitcast",
                "bitcast",
                a,
                b,
                "the same bytes as a reshape: " + verdict.reason,
                proofs=verdict.proofs,
                kind="reshape",
            )
        tried.append(verdict)
    if a.rank == b.rank:
        for perm in itertools.permutations(range(a.rank)):
            if tuple(a.dimensions[p] for p in perm) == tuple(b.dimensions) and perm != tuple(range(a.rank)):
                verdict = transpose_is_bitcast(a_same, b, perm, assume=assume)
                if verdict:
                    return BitcastVerdict(
                        "bitcast",
                        "bitcast",
                        a,
                        b,
                        "the same bytes as a transpose: " + verdict.reason,
                        proofs=verdict.proofs,
                        kind=f"transpose {list(perm)}",
                    )
                tried.append(verdict)
    if any(v.status == "unknown" for v in tried):
        return BitcastVerdict("unknown", "bitcast", a, b, "some reading could not be decided")
    reason = "neither a reshape nor a transpose of the input keeps every element's bits in place"
    return BitcastVerdict(
        "not a bitcast", "bitcast", a, b, reason, tried[0].counterexample if tried else None
    )


# --------------------------------------------------------------------------- suggest
@dataclass(frozen=True)
class Suggestion:
    """A layout for the reshape's result that makes it a bitcast, or why none was found."""

    shape: ArrayShape | None
    verdict: BitcastVerdict | None
    reason: str

    def __bool__(self) -> bool:
        return self.shape is not None


def suggest_bitcast_layout(src: Shape | str, dst_dims: Sequence[int]) -> Suggestion:
    """A layout for ``reshape(src) -> dst_dims`` under which the reshape moves no data.

    Candidates: XLA's ``AlignLayouts`` order (when available) and every ``minor_to_major``
    for small ranks, each with the input's tiles, without tiles, and with the tiles of the
    same XLA:TPU format; the first one proved a bitcast is returned.

    >>> s = suggest_bitcast_layout("bf16[32,8,24,200]{3,2,1,0:T(8,128)(2,1)}", (256, 24, 200))
    >>> str(s.shape)
    'bf16[256,24,200]{2,1,0:T(8,128)(2,1)}'
    >>> print(suggest_bitcast_layout("f32[16,256]{1,0:T(8,128)}", (4096,)).reason)  # doctest: +ELLIPSIS
    no layout ... makes the reshape a bitcast: ...
    """
    a = meaningful_array(as_shape(src))
    dims = tuple(int(d) for d in dst_dims)
    if math.prod(dims, start=1) != math.prod(a.dimensions, start=1):
        raise ValueError(f"{a} has {math.prod(a.dimensions)} elements; {list(dims)} has {math.prod(dims)}")
    layout = a.effective_layout
    orders: list[tuple[int, ...]] = []
    try:
        from layout_algebra.xla import align_layouts  # type: ignore[attr-defined]

        aligned = align_layouts(a, ArrayShape(a.element_type, dims))
        if aligned is not None:
            orders.append(tuple(aligned.minor_to_major))
    except (ImportError, ValueError):
        pass
    if len(dims) <= 5:
        orders += [tuple(p) for p in itertools.permutations(range(len(dims)))]
    else:
        orders.append(tuple(reversed(range(len(dims)))))
    tile_options = [layout.tiles, ()]
    seen = set()
    last: BitcastVerdict | None = None
    for tiles in tile_options:
        for order in orders:
            candidate = Layout(
                minor_to_major=order,
                tiles=tiles,
                tail_padding_alignment_in_elements=layout.tail_padding_alignment_in_elements,
                element_size_in_bits=layout.element_size_in_bits,
                memory_space=layout.memory_space,
            )
            if candidate in seen:
                continue
            seen.add(candidate)
            dst = ArrayShape(a.element_type, dims, (False,) * len(dims), candidate)
            try:
                verdict = reshape_is_bitcast(a, dst)
            except ValueError:
                continue
            if verdict:
                return Suggestion(dst, verdict, f"{dst} keeps every element of {a} in place")
            last = verdict
    why = last.reason if last else "no candidate layout applies"
    return Suggestion(
        None, last, f"no layout with the input's tiles or without tiles makes the reshape a bitcast: {why}"
    )
