"""Exact bitcast checks: does a reshape, transpose or bitcast move any data?

One meaning, used by every caller (``bitcast_is_valid``, ``reshape_is_bitcast``,
``transpose_is_bitcast``, the HLO audit, the ``bitcast`` command). Reinterpreting the
buffer of ``src`` as ``dst`` is a **bitcast** exactly when

(a) both live in the same memory space ``S(n)``;
(b) they hold the same number of elements of the same bit width, and under a *logical
    correspondence* every element keeps its bit offset (tiles, padding, ``E(n)`` packing
    all count). The correspondences are XLA's (``ShapeUtil::DecomposeBitcast``):

    * ``reshape``: output element ``j`` is the input element with the same row-major
      logical position;
    * ``transpose``: output dimension ``k`` is input dimension ``permutation[k]``;
    * ``transpose-reshape-transpose``: both sides read in their *physical* dimension
      order (major to minor), then row-major — XLA's general decomposition;

(c) XLA allocates buffers of the same size for both: padding to the first tile only,
    rounded up to ``L(n)`` (``ShapeUtil::ArraySize``, what XLA:TPU allocates). When a later
    tile does not divide the first, the exact nested buffer is larger; the verdict says so,
    but the allocation is what decides. One departure, on the conservative side: an
    *untiled* layout's ``L(n)`` is counted (its stage pipeline pads to it), while XLA's
    ``ArraySize`` ignores ``L(n)`` when there are no tiles (:func:`layout_algebra.xla.array_size`
    reproduces that quirk); a verdict that rests on it says so.

``reshape_is_bitcast`` and ``transpose_is_bitcast`` check one correspondence (the op's);
``bitcast_is_valid`` answers "is there a correspondence of the three kinds that keeps
every element's bits?" and names the one it found, or says for each kind why it fails.
(XLA's own ``ShapeUtil::ReshapeIsBitcast`` ignores tiles; see ``layout_algebra.xla``.)

The answer is a :class:`BitcastVerdict`: ``status`` is ``proved`` / ``refuted`` /
``unknown`` (the prover's vocabulary) and ``verdict`` is ``bitcast`` / ``not a bitcast`` /
``unknown``. A refutation carries a counterexample re-checked by evaluating both layouts.

>>> from layout_algebra.decide.bitcast import reshape_is_bitcast, transpose_is_bitcast
>>> v = reshape_is_bitcast("bf16[32,8,24,200]{3,2,1,0:T(8,128)(2,1)}", "bf16[256,24,200]{2,1,0:T(8,128)(2,1)}")
>>> v.verdict, v.status
('bitcast', 'proved')
>>> v = reshape_is_bitcast("f32[16,256]{1,0:T(8,128)}", "f32[4096]{0}")
>>> v.verdict, v.counterexample["src_bit"] != v.counterexample["dst_bit"]
('not a bitcast', True)
>>> bool(transpose_is_bitcast("f32[8,128]{1,0:T(8,128)}", "f32[128,8]{0,1:T(8,128)}", (1, 0)))  # same bytes
True
>>> bool(transpose_is_bitcast("f32[8,128]{1,0:T(8,128)}", "f32[128,8]{1,0:T(8,128)}", (1, 0)))  # moves data
False

A bitcast that splits the rows of a tiled array and transposes the halves is neither a
reshape nor a transpose, but it is XLA's third kind:

>>> v = bitcast_is_valid("bf16[16,256]{1,0:T(8,128)(2,1)}", "bf16[8,2,256]{2,0,1:T(8,128)(2,1)}")
>>> v.verdict, v.correspondence
('bitcast', 'transpose-reshape-transpose')

A memory-space change is never a bitcast, and there is nothing to enumerate:

>>> print(bitcast_is_valid("f32[8,128]{1,0}", "f32[8,128]{1,0:S(1)}").reason)
different memory spaces S(0) → S(1): a copy between memories

Symbolic sizes work with assumptions ("for every N"); every check of the concrete
decision (element counts, XLA allocations, bit offsets) is then a Z3 obligation:

>>> reshape_is_bitcast("f32[N,8,128]{2,1,0:T(8,128)}", "f32[M,128]{1,0:T(8,128)}", assume="M == 8*N").verdict
'bitcast'
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from layout_algebra.decide.bitcast_fast import (
    BITCAST,
    ENUMERATION_LIMIT,
    NOT_A_BITCAST,
    SMALL,
    UNKNOWN,
    BitcastVerdict,
    allocations,
    decide_without_solver,
    element_count,
    fits_int64,
    kept_reason,
    memory_space_reason,
    none_of,
    refuted,
    same_allocation,
    separable_groups,
    shared_conditions,
    untiled_alignment,
    verdict_at,
    xla_array_sizes,
)
from layout_algebra.decide.correspondence import (
    Correspondence,
    input_index_by_groups,
    input_index_of,
    offsets_at,
    physical_correspondence,
    probe_positions,
    reading_indices,
    reshape_correspondence,
    same_physical_arrangement,
    transpose_correspondence,
)
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.meaning.sizes import meaningful_array
from layout_algebra.meaning.stages.arith import ARITHMETIC as _INT
from layout_algebra.meaning.stages.arith import Arithmetic
from layout_algebra.model.errors import InvalidArgumentError
from layout_algebra.model.questions import Question
from layout_algebra.model.shapes import ArrayShape, Shape
from layout_algebra.model.syntax import as_shape
from layout_algebra.prove.result import DEFAULT_TIMEOUT_MS, ProofResult

if TYPE_CHECKING:  # SymPy, Z3 and NumPy load where a question needs them, not with this module
    import numpy as np

    from layout_algebra.prove.assumptions import Assumptions

__all__ = [
    "BITCAST",
    "NOT_A_BITCAST",
    "UNKNOWN",
    "BitcastVerdict",
    "bit_offsets",
    "bitcast_is_valid",
    "correspondence_bit_offsets",
    "decide_movement",
    "memory_space_reason",
    "reshape_is_bitcast",
    "same_allocation",
    "transpose_is_bitcast",
]


# ------------------------------------------------------------------------- inputs
def _arrays(src: Shape | str, dst: Shape | str) -> tuple[ArrayShape, ArrayShape]:
    a, b = meaningful_array(as_shape(src)), meaningful_array(as_shape(dst))
    for s in (a, b):
        if s.layout is None:
            raise InvalidArgumentError(f"{s}: a bitcast question needs a layout on both shapes")
    for s in (a, b):
        layout_map(s)  # a clear error now for layouts without one meaning
    return a, b


def _symbolic(a: ArrayShape, b: ArrayShape) -> bool:
    return a.is_symbolic or b.is_symbolic


def _domain(assume: Assumptions, a: ArrayShape, b: ArrayShape) -> tuple[tuple, tuple, str | None]:
    """(the assumptions as given, parsed; the question's domain: them and the shapes' own
    conditions; why a proof under them cannot be trusted, or ``None``): see
    ``prove.core.admitted_assumptions``. Concrete sizes with nothing assumed have an empty
    domain, known without SymPy (the first decision of a process loads no solver)."""
    if (assume is None or (isinstance(assume, (list, tuple)) and not assume)) and not _symbolic(a, b):
        return (), (), None
    from layout_algebra.prove.assumptions import parse_assumptions
    from layout_algebra.prove.core import admitted_assumptions

    assumed = tuple(parse_assumptions(assume))
    return (assumed, *admitted_assumptions(assume, shapes=(a, b)))


# ---------------------------------------------------------------- public questions
def reshape_is_bitcast(
    src: Shape | str, dst: Shape | str, *, assume: Assumptions = None, timeout_ms: int = DEFAULT_TIMEOUT_MS
) -> BitcastVerdict:
    """Whether reshaping ``src`` to ``dst`` (both with layouts) moves no data.

    Output element ``j`` comes from the input element with the same row-major logical
    position. Raises ``ValueError`` when the element types differ or (for concrete
    sizes) the element counts differ: not a reshape at all.
    """
    a, b = _arrays(src, dst)
    if a.element_type != b.element_type:
        raise InvalidArgumentError(f"reshape cannot change the element type: {a} -> {b}")
    count_a, count_b = element_count(a), element_count(b)
    if isinstance(count_a, int) and isinstance(count_b, int) and count_a != count_b:
        raise InvalidArgumentError(f"{a} has {count_a} elements and {b} has {count_b}: not a reshape")
    assumed, domain, caveat = _domain(assume, a, b)
    question = Question("reshape", (a, b), assume=assumed)
    return _decided("reshape", a, b, (reshape_correspondence(a, b),), domain, caveat, timeout_ms, question)


def transpose_is_bitcast(
    src: Shape | str,
    dst: Shape | str,
    permutation: Sequence[int],
    *,
    assume: Assumptions = None,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> BitcastVerdict:
    """Whether ``transpose(src, dimensions=permutation)`` with result layout ``dst`` moves no data.

    Output dimension ``k`` is input dimension ``permutation[k]`` (XLA's transpose).
    """
    a, b = _arrays(src, dst)
    try:
        perm = tuple(int(p) for p in permutation)
    except (TypeError, ValueError):
        raise InvalidArgumentError(
            f"permutation {permutation!r} must be a list of dimension numbers"
        ) from None
    if sorted(perm) != list(range(a.rank)) or b.rank != a.rank:
        raise InvalidArgumentError(
            f"{list(perm)} is not a permutation of the {a.rank} dimensions of {a} -> {b}"
        )
    if a.element_type != b.element_type:
        raise InvalidArgumentError(f"transpose cannot change the element type: {a} -> {b}")
    expected = tuple(a.dimensions[p] for p in perm)
    if tuple(b.dimensions) != expected:
        raise InvalidArgumentError(
            f"transposing {a} by {list(perm)} gives dimensions {list(expected)}, not those of {b}"
        )
    assumed, domain, caveat = _domain(assume, a, b)
    question = Question("transpose", (a, b, perm), assume=assumed)
    operation = f"transpose {list(perm)}"
    return _decided(
        operation, a, b, (transpose_correspondence(perm, b),), domain, caveat, timeout_ms, question
    )


def bitcast_is_valid(
    src: Shape | str, dst: Shape | str, *, assume: Assumptions = None, timeout_ms: int = DEFAULT_TIMEOUT_MS
) -> BitcastVerdict:
    """Whether ``bitcast(src) -> dst`` reinterprets the same bits as a meaningful array.

    Tries XLA's three correspondences — ``reshape``, each ``transpose`` whose
    dimensions fit, ``transpose-reshape-transpose`` (physical order) — and proves the
    first that keeps every element's bits (``correspondence`` names it). If none does,
    the reason says why for each kind tried. The element types may differ if their bit
    widths agree.
    """
    a, b = _arrays(src, dst)
    assumed, domain, caveat = _domain(assume, a, b)
    question = Question("bitcast", (a, b), assume=assumed)
    return _decided("bitcast", a, b, _candidates(a, b), domain, caveat, timeout_ms, question)


def decide_movement(
    opcode: str,
    src: Shape | str,
    dst: Shape | str,
    dimensions: Sequence[int] | None = None,
    *,
    assume: Assumptions = None,
) -> BitcastVerdict:
    """The one decision for an HLO ``bitcast``/``reshape``/``transpose``/``copy``: does the
    result keep every element's bits? (``copy`` is read as a reshape to the same dims.)

    For a ``bitcast`` instruction this is ``bitcast_is_valid`` (any correspondence); the
    rewrite verifier and the audit call it, so they give the same verdict and reason.
    Memoised per process: the answer depends only on these arguments.
    """
    if opcode == "bitcast":
        return bitcast_is_valid(src, dst, assume=assume)
    if opcode == "transpose":
        return transpose_is_bitcast(src, dst, tuple(dimensions or ()), assume=assume)
    if opcode in ("reshape", "copy"):
        return reshape_is_bitcast(src, dst, assume=assume)
    raise InvalidArgumentError(
        f"decide_movement handles bitcast, reshape, transpose and copy; got {opcode!r}"
    )


def bit_offsets(
    src: Shape | str,
    dst: Shape | str,
    element: Sequence[Any],
    permutation: Sequence[int] | None = None,
    ar: Arithmetic = _INT,
) -> tuple[Any, Any]:
    """The bit offsets ``(in src, in dst)`` of output element ``element`` and of the input
    element it comes from: under the reshape correspondence, or the transpose by
    ``permutation``. Any arithmetic (ints, SymPy closed forms of symbolic sizes).

    >>> bit_offsets("f32[16,128]{1,0:T(8,128)}", "f32[2048]{0}", (1024,))
    (32768, 32768)
    >>> bit_offsets("f32[8,2]{1,0}", "f32[2,8]{1,0}", (1, 0), permutation=(1, 0))
    (32, 256)
    """
    a, b = _arrays(src, dst)
    corr = (
        reshape_correspondence(a, b)
        if permutation is None
        else transpose_correspondence(tuple(permutation), b)
    )
    j = list(element)
    return _bit_position(a)(input_index_of(corr, a, b)(j, ar), ar), _bit_position(b)(j, ar)


def correspondence_bit_offsets(
    src: Shape | str, dst: Shape | str, element: Sequence[Any], ar: Arithmetic = _INT
) -> tuple[tuple[str, Any, Any], ...]:
    """For each correspondence :func:`bitcast_is_valid` tries on these shapes:
    ``(its name, bit offset in src, bit offset in dst)`` of output element ``element``
    (the size conditions' witness for "no correspondence keeps every bit").

    >>> correspondence_bit_offsets("f32[8,2]{1,0}", "f32[2,8]{0,1}", (1, 0))
    (('reshape', 256, 32), ('transpose [1, 0]', 32, 32), ('transpose-reshape-transpose', 32, 32))
    """
    a, b = _arrays(src, dst)
    j = list(element)
    dst_bit = _bit_position(b)(j, ar)
    return tuple(
        (str(c), _bit_position(a)(input_index_of(c, a, b)(j, ar), ar), dst_bit) for c in _candidates(a, b)
    )


def _candidates(a: ArrayShape, b: ArrayShape) -> tuple[Correspondence, ...]:
    out = [reshape_correspondence(a, b)]
    if a.rank == b.rank and a.rank <= 6:
        for perm in itertools.permutations(range(a.rank)):
            if perm != tuple(range(a.rank)) and tuple(a.dimensions[p] for p in perm) == tuple(b.dimensions):
                out.append(transpose_correspondence(perm, b))
    out.append(physical_correspondence(a, b))
    unique: dict[tuple, Correspondence] = {}
    for c in out:
        unique.setdefault((c.src_order, c.dst_order), c)
    return tuple(unique.values())


# ------------------------------------------------------------------------ decision
@functools.lru_cache(maxsize=8192)
def _decided(
    operation: str,
    a: ArrayShape,
    b: ArrayShape,
    candidates: tuple[Correspondence, ...],
    assumptions: tuple,
    caveat: str | None,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
    question: Question | None = None,
) -> BitcastVerdict:
    """Memoised: the verdict depends only on these (hashable) arguments; it records
    ``question`` (the claim, for ``condition_of(verdict)``). ``caveat``: why it is not known
    that some sizes satisfy the assumptions (then a proof is only ``unknown``)."""
    verdict = _decide(operation, a, b, candidates, assumptions, timeout_ms)
    if caveat is not None and verdict.status == "proved":
        verdict = replace(verdict, status="unknown", reason=f"{caveat} (else: {verdict.reason})")
    return replace(verdict, question=question)


def _decide(
    operation: str,
    a: ArrayShape,
    b: ArrayShape,
    candidates: tuple[Correspondence, ...],
    assumptions: tuple,
    timeout_ms: int,
) -> BitcastVerdict:
    if _symbolic(a, b):
        from layout_algebra.prove.encode import UnsupportedExpression

        try:
            verdict = _decide_symbolic(operation, a, b, candidates, assumptions, timeout_ms)
        except UnsupportedExpression as err:  # the sizes' formulas are beyond the encoding
            verdict = BitcastVerdict(
                "unknown",
                operation,
                a,
                b,
                f"the prover cannot encode these sizes: {err}",
                method="Z3 (symbolic sizes)",
            )
        if verdict.status == "unknown":
            found = _refuted_at_small_sizes(operation, a, b, assumptions)
            return verdict if found is None else found  # (a verdict is falsy unless proved)
        return verdict
    return _decide_concrete(operation, a, b, candidates)


#: Where Z3 cannot decide a symbolic question, small sizes (each symbol 1..SMALL_SIZES) are
#: tried by the concrete decision: a refutation there is one for every size.
SMALL_SIZES = 12
_SMALL_SIZE_POINTS = 200


def _refuted_at_small_sizes(
    operation: str, a: ArrayShape, b: ArrayShape, assumptions: tuple
) -> BitcastVerdict | None:
    """A refutation at the first small sizes (allowed by the assumptions) where the exact
    concrete decision says no correspondence of the claim keeps every bit, if any."""
    from layout_algebra.model.symbols import as_sympy
    from layout_algebra.prove.assumptions import assumptions_hold

    symbols = sorted(
        {*as_sympy(element_count(a)).free_symbols, *as_sympy(element_count(b)).free_symbols}.union(
            *(as_sympy(x).free_symbols for x in assumptions)
        ),
        key=str,
    )
    if not symbols or len(symbols) > 3:
        return None
    points = itertools.islice(
        itertools.product(range(1, SMALL_SIZES + 1), repeat=len(symbols)), _SMALL_SIZE_POINTS
    )
    for values in points:
        sizes = dict(zip(symbols, values, strict=True))
        if not assumptions_hold(assumptions, sizes):
            continue
        named = {str(k): v for k, v in sizes.items()}
        try:
            ca, cb = a.specialize(named), b.specialize(named)
            if ca.is_symbolic or cb.is_symbolic:
                continue
            concrete = _concrete_at(operation, ca, cb, None)
        except ValueError:  # a dimension formula is no size here
            continue
        if concrete.status == "refuted":
            at = ", ".join(f"{k}={v}" for k, v in named.items())
            return refuted(
                operation,
                a,
                b,
                f"not for every size: at {at}, {concrete.reason}",
                dict(concrete.counterexample or {}, sizes=named),
                concrete.correspondence,
                "the concrete decision at small sizes (Z3 could not decide the symbolic question)",
            )
    return None


# ---------------------------------------------------------------- concrete sizes
def _decide_concrete(
    operation: str,
    a: ArrayShape,
    b: ArrayShape,
    candidates: tuple[Correspondence, ...],
    fast_path: bool = True,
) -> BitcastVerdict:
    """The exact concrete decision: first :func:`decide_without_solver` (no solver, no
    NumPy), then, where it defers, each correspondence by NumPy enumeration or Z3.
    ``fast_path=False`` skips the solver-free proofs (the tests' independent path)."""
    if fast_path:
        fast = decide_without_solver(operation, a, b, candidates)
        if fast is not None:
            return fast
    early, (allocated, note) = verdict_at(operation, a, b)
    if early is not None:
        return early
    tried: list[BitcastVerdict] = []
    for corr in candidates:
        v = _offsets_concrete(operation, a, b, corr, allocated, note, fast_path)
        if v.status == "proved":
            return v
        tried.append(v)
    return none_of(operation, a, b, tried)


def _offsets_concrete(
    operation: str,
    a: ArrayShape,
    b: ArrayShape,
    corr: Correspondence,
    allocated: int,
    note: str,
    arrangement: bool = True,
) -> BitcastVerdict:
    name = str(corr)
    proved_reason = kept_reason(corr, a, b, allocated, note)
    if arrangement and same_physical_arrangement(a, b, corr):
        return BitcastVerdict(
            "proved", operation, a, b, proved_reason, None, (), name, "same physical arrangement (no solver)"
        )
    n = element_count(a)
    vectorised = fits_int64(a) and fits_int64(b)  # NumPy's int64 would wrap silently past that
    if vectorised and n > SMALL:
        grouped = _difference_by_groups(a, b, corr)
        if grouped is not None:
            checked, k = grouped
            method = (
                f"enumerating {checked:,} elements by groups: both offsets are sums of one-dimension terms"
            )
            if k is None:
                return BitcastVerdict("proved", operation, a, b, proved_reason, None, (), name, method)
            return _difference(operation, a, b, corr, k, method)
    if vectorised and n <= ENUMERATION_LIMIT:
        k = _first_difference(a, b, corr, None)
        if k is None:
            return BitcastVerdict(
                "proved", operation, a, b, proved_reason, None, (), name, f"enumerating all {n:,} elements"
            )
        return _difference(operation, a, b, corr, k, f"enumerating all {n:,} elements")
    k = _first_difference(a, b, corr, probe_positions(b, corr, n)) if vectorised else None
    if k is not None:
        return _difference(operation, a, b, corr, k, "evaluating sampled elements")
    from layout_algebra.prove import equivalent, function_map

    src_bit, dst_bit = _bit_position(a), _bit_position(b)
    input_index = input_index_of(corr, a, b)

    def through_input(j, ar):
        return src_bit(input_index(j, ar), ar)

    proof = equivalent(
        function_map(b, dst_bit, name=f"bit offset in {b}"),
        function_map(b, through_input, name=f"bit offset of the same element in {a}"),
    )
    if proof.status == "proved":
        return BitcastVerdict("proved", operation, a, b, proved_reason, None, (proof,), name, "Z3")
    if proof.status == "refuted" and proof.counterexample and "element" in proof.counterexample:
        j = tuple(int(x) for x in proof.counterexample["element"])
        refutation = _checked_difference(operation, a, b, corr, j, "Z3", (proof,))
        if refutation is not None:
            return refutation
        return BitcastVerdict(
            "unknown",
            operation,
            a,
            b,
            f"{name}: a counterexample failed re-evaluation",
            None,
            (proof,),
            name,
            "Z3",
        )
    return BitcastVerdict("unknown", operation, a, b, f"{name}: {proof.reason}", None, (proof,), name, "Z3")


def _bit_position(shape: ArrayShape) -> Callable[[Any, Any], Any]:
    """``index, ar -> bit offset`` of ``shape``'s layout (any arithmetic)."""
    m = layout_map(shape)
    through = len(m.stages) - 1
    bits = m.element_bits
    return lambda index, ar: m.apply(index, ar, through=through)[0] * bits


# ------------------------------------------------------- separable offsets, by groups
def _difference_by_groups(
    a: ArrayShape, b: ArrayShape, corr: Correspondence
) -> tuple[int, int | None] | None:
    """Exact, for separable layouts: the offsets agree everywhere iff they agree on each
    group of dimensions with the other groups' indices at 0 (the sums are independent).
    Returns (elements checked, first differing position or ``None``), or ``None`` when
    the shortcut does not apply (a layout that is not separable, groups too large)."""
    import numpy as np

    found = separable_groups(a, b, corr)
    if found is None:
        return None
    sd, dd, groups, sizes = found
    checked = 0
    for (_, s1, d0, d1), size in zip(groups, sizes, strict=True):
        if math.prod(dd[d0:d1], start=1) != size:
            return None
        stride = math.prod(sd[s1:], start=1)
        flat = np.arange(size, dtype=np.int64) * stride
        k = _first_difference(a, b, corr, flat)
        checked += size
        if k is not None:
            return checked, k
    return checked, None


def _first_difference(
    a: ArrayShape, b: ArrayShape, corr: Correspondence, flat: np.ndarray | None
) -> int | None:
    """The first position (in the correspondence's reading order) whose two elements
    have different bit offsets; all positions when ``flat`` is ``None``."""
    import numpy as np

    if flat is None:
        flat = np.arange(element_count(a), dtype=np.int64)
    if flat.size == 0:
        return None
    src = offsets_at(a, reading_indices(a, corr.src_order, flat))
    dst = offsets_at(b, reading_indices(b, corr.dst_order, flat))
    bad = np.flatnonzero(src != dst)
    return int(flat[bad[0]]) if bad.size else None


def _difference(
    operation: str, a: ArrayShape, b: ArrayShape, corr: Correspondence, k: int, method: str
) -> BitcastVerdict:
    import numpy as np

    j = tuple(int(x[0]) for x in reading_indices(b, corr.dst_order, np.array([k], dtype=np.int64)))
    verdict = _checked_difference(operation, a, b, corr, j, method, ())
    if verdict is None:  # the vector and scalar evaluations disagree: a bug, never a verdict
        raise AssertionError(
            f"bit offsets of {a} -> {b} at {j} differ by vector but not by scalar evaluation"
        )
    return verdict


def _checked_difference(
    operation, a, b, corr, j: tuple[int, ...], method: str, proofs
) -> BitcastVerdict | None:
    """A refutation at output element ``j``, re-evaluated one element at a time."""
    i = tuple(int(x) for x in input_index_of(corr, a, b)(j, _INT))
    src_bit = layout_map(a).forward(i, unit="bit")
    dst_bit = layout_map(b).forward(j, unit="bit")
    if src_bit == dst_bit:
        return None
    reason = (
        f"{corr}: output element {list(j)} is at bit {dst_bit:,} of the output, "
        f"but its input element {list(i)} is at bit {src_bit:,} of the input"
    )
    cex = {"element": j, "src_element": i, "src_bit": src_bit, "dst_bit": dst_bit}
    return refuted(operation, a, b, reason, cex, str(corr), method, proofs)


# ---------------------------------------------------------------- symbolic sizes
def _decide_symbolic(
    operation: str,
    a: ArrayShape,
    b: ArrayShape,
    candidates: tuple[Correspondence, ...],
    assumptions: tuple,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> BitcastVerdict:
    """Every check of the concrete decision as a Z3 obligation under ``assumptions`` (each
    query given at most ``timeout_ms``); a failed obligation is a refutation only once the
    concrete decision, at the solver's sizes, agrees."""
    import sympy

    from layout_algebra.model.symbols import as_sympy
    from layout_algebra.prove import equivalent, function_map, holds
    from layout_algebra.prove.core import for_all_sizes

    shared = shared_conditions(operation, a, b)
    if shared is not None:
        return shared
    proofs: list[ProofResult] = []
    count = holds(
        sympy.Eq(as_sympy(element_count(a)), as_sympy(element_count(b))),
        assume=assumptions,
        timeout_ms=timeout_ms,
    )
    proofs.append(count)
    if count.status != "proved":
        return _symbolic_failure(operation, a, b, count, "the element counts agree", proofs, assumptions)
    alloc_a, alloc_b, note = allocations(a, b)
    alloc = holds(sympy.Eq(as_sympy(alloc_a), as_sympy(alloc_b)), assume=assumptions, timeout_ms=timeout_ms)
    proofs.append(alloc)
    if alloc.status != "proved":
        return _symbolic_failure(
            operation, a, b, alloc, "XLA allocates the same number of bytes for both", proofs, assumptions
        )
    if untiled_alignment(a) or untiled_alignment(b):  # XLA's ArraySize ignores that L(n)
        xla_a, xla_b = xla_array_sizes(a, b)
        xla = holds(sympy.Eq(as_sympy(xla_a), as_sympy(xla_b)), assume=assumptions, timeout_ms=timeout_ms)
        proofs.append(xla)
        if xla.status != "proved":
            return _symbolic_failure(
                operation, a, b, xla, "XLA's ShapeUtil::ArraySize is the same for both", proofs, assumptions
            )
    tried: list[BitcastVerdict] = []
    for corr in candidates:
        src_bit, dst_bit = _bit_position(a), _bit_position(b)
        input_index = input_index_by_groups(corr, a, b)

        def through_input(j, ar, src_bit=src_bit, input_index=input_index):
            return src_bit(input_index(j, ar), ar)

        proof = equivalent(
            function_map(b, dst_bit, name=f"bit offset in {b}"),
            function_map(b, through_input, name=f"bit offset of the same element in {a}"),
            assume=assumptions,
            timeout_ms=timeout_ms,
        )
        if proof.status == "proved":
            return BitcastVerdict(
                "proved",
                operation,
                a,
                b,
                f"{corr}: {for_all_sizes(assumptions)}, every element keeps its bit offset and XLA "
                f"allocates the same "
                f"number of bytes ({alloc_a}) for both{note}",
                None,
                (*proofs, proof),
                str(corr),
                "Z3 (symbolic sizes)",
            )
        tried.append(
            _symbolic_failure(
                operation,
                a,
                b,
                proof,
                f"{corr} keeps every element's bit offset",
                [*proofs, proof],
                assumptions,
                corr,
            )
        )
    return none_of(operation, a, b, tried)


def _symbolic_failure(
    operation: str,
    a: ArrayShape,
    b: ArrayShape,
    proof: ProofResult,
    claim: str,
    proofs: list[ProofResult],
    assumptions: tuple,
    corr: Correspondence | None = None,
) -> BitcastVerdict:
    """Refuted only if the concrete decision at the counterexample's sizes says so."""
    name = str(corr) if corr else ""
    cex = proof.counterexample or {}
    sizes = cex.get("sizes", cex if proof.status == "refuted" else None)
    if proof.status == "refuted" and sizes:
        sizes = {str(k): int(v) for k, v in sizes.items()}
        try:
            ca, cb = a.specialize(sizes), b.specialize(sizes)
            if ca.is_symbolic or cb.is_symbolic:
                raise InvalidArgumentError("some size has no value")
            concrete = _concrete_at(operation, ca, cb, corr)
        except ValueError as err:
            concrete = None
            why = str(err)
        if concrete is not None and concrete.status == "refuted":
            at = ", ".join(f"{k}={v}" for k, v in sizes.items())
            return refuted(
                operation,
                a,
                b,
                f"not for every size: at {at}, {concrete.reason}",
                dict(concrete.counterexample or {}, sizes=sizes),
                name or concrete.correspondence,
                "Z3 (symbolic sizes), re-checked at concrete sizes",
                proofs,
            )
        detail = "the concrete decision at those sizes disagrees" if concrete is not None else why
        return BitcastVerdict(
            "unknown",
            operation,
            a,
            b,
            f"could not prove {claim}: a counterexample {sizes} did not survive ({detail})",
            None,
            tuple(proofs),
            name,
            "Z3 (symbolic sizes)",
        )
    return BitcastVerdict(
        "unknown",
        operation,
        a,
        b,
        f"could not prove {claim}: {proof.reason or proof.status}",
        None,
        tuple(proofs),
        name,
        "Z3 (symbolic sizes)",
    )


def _concrete_at(operation: str, a: ArrayShape, b: ArrayShape, corr: Correspondence | None) -> BitcastVerdict:
    """The concrete decision for specialised shapes (a count mismatch is a refutation)."""
    count_a, count_b = element_count(a), element_count(b)
    if count_a != count_b:
        kind = operation.split(" ")[0]
        return refuted(
            operation,
            a,
            b,
            f"{a} has {count_a:,} elements and {b} has {count_b:,}: not a {kind}",
            {"src_elements": count_a, "dst_elements": count_b},
        )
    candidates = (
        (corr,)
        if corr is not None
        else (_candidates(a, b) if operation == "bitcast" else _op_candidates(operation, a, b))
    )
    return _decide_concrete(operation, a, b, candidates)


def _op_candidates(operation: str, a: ArrayShape, b: ArrayShape) -> tuple[Correspondence, ...]:
    if operation.startswith("transpose"):
        perm = tuple(int(x) for x in operation[len("transpose") :].strip(" []").split(",") if x.strip())
        return (transpose_correspondence(perm, b),)
    return (reshape_correspondence(a, b),)
