"""For which sizes? The exact size condition under which a layout claim holds.

A claim about a shape with symbolic sizes ("this reshape is a bitcast", "this tiling adds
no padding") is often true for some sizes and false for others. This module finds the
**weakest condition on the size symbols** under which it holds, as a SymPy boolean built
from divisibility ``Eq(Mod(N, 8), 0)``, equalities ``Eq(N, 1)`` and bounds ``N <= 8``, and
says how much of it is proved:

* ``exact``: the condition is proved **sufficient** (the claim is proved by Z3 under it) and
  **necessary** (Z3 proved that for every size assignment violating it the two sides differ
  in element count or allocated bytes, so the claim fails);
* ``sufficient, necessary up to N<=64``: sufficiency is proved; necessity was checked by the
  exact concrete decision for every size up to the bound (each symbol), not for all sizes;
* ``unknown``: the condition matches every size of the grid but its sufficiency could not be
  proved (or no condition of the grammar matches; then ``expr`` is ``None``).

Sizes are integers ``>= 1`` (a zero-size dimension is not asked about) at which every
dimension formula of the claim's arrays is a whole size (the claim's :attr:`Claim.domain`:
``f32[N/8,128]`` is asked about ``N = 8, 16, ...`` only; ``N = 12`` is no such array, and
neither the grid, the fit nor the proofs look there).

The method: (1) decide the claim exactly at every point of a grid of small sizes with the
fast concrete decision; (2) build candidate atoms from the numbers in the layouts (tile
sizes, ``L(n)``, element packing) and their divisors, lcms and products; (3) fit the
smallest and/or-formula of at most four atoms that matches every grid point; (4) prove it
sufficient by splitting it into cases and substituting (``N % 8 == 0`` becomes ``N = 8*K``,
``N == 1`` becomes 1, ``N <= 3`` becomes the cases 1, 2, 3) so that the symbolic decision sees
aligned sizes; (5) prove it necessary by a size query under its negation.

>>> from layout_algebra.decide.conditions import when_no_padding, when_reshape_is_bitcast
>>> c = when_no_padding("f32[N,128]{1,0:T(8,128)}")
>>> c.expr, c.status
(Eq(Mod(N, 8), 0), 'exact')
>>> when_no_padding("f32[N,M]{1,0:T(8,128)}").expr
Eq(Mod(M, 128), 0) & Eq(Mod(N, 8), 0)

Merging two major dimensions of a tiled array into one keeps every element in place
exactly when the merged-into dimension fills whole tiles:

>>> c = when_reshape_is_bitcast("f32[2,N,128]{2,1,0:T(8,128)}", "f32[2*N,128]{1,0:T(8,128)}")
>>> c.expr, c.status
(Eq(Mod(N, 8), 0), 'exact')

With two symbols, ``f32[A,B,128] -> f32[A*B,128]`` gets ``Eq(A, 1) | Eq(Mod(B, 8), 0)``,
which matches the exact decision at every grid size, and is ``exact``: the symbolic
decision reshapes ``[A*B, 128]`` to ``[A, B, 128]`` group by group, so the case
``B = 8*K`` with ``A`` free divides by ``B`` alone. Other nonlinear cases can outlast the
time budget (:class:`Budget`; merging ``f32[2,A,B] -> f32[2*A,B]`` under ``T(8,128)``,
tiles of 128 over the symbolic ``B``): their status is then ``unknown`` (not proved
sufficient), saying so.

The same conditions are the ``.condition`` of the decisions' results (computed on first
use; see ``layout_algebra.model.questions``), and rewrites of HLO modules get theirs from
``layout_algebra.hlo.rewrite_conditions``, which builds a :class:`Claim` on this engine.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import sympy

from layout_algebra.decide.bitcast import (
    bit_offsets,
    bitcast_is_valid,
    correspondence_bit_offsets,
    reshape_is_bitcast,
    transpose_is_bitcast,
)
from layout_algebra.decide.condition_fit import atoms, fit, grid_values, sample, truth
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.meaning.sizes import meaningful_array, size_report
from layout_algebra.meaning.stages.arith import ARITHMETIC
from layout_algebra.meaning.stages.symbolic import SYMPY_ARITHMETIC
from layout_algebra.model.errors import InvalidArgumentError, LayoutAlgebraError
from layout_algebra.model.internal_names import multiple_size
from layout_algebra.model.questions import Question
from layout_algebra.model.shapes import ArrayShape, Shape
from layout_algebra.model.symbols import as_sympy, dim_symbol
from layout_algebra.model.syntax import as_shape
from layout_algebra.prove import ProofResult, holds
from layout_algebra.prove.assumptions import AssumptionsAdmitNoSizes, condition_holds, condition_text
from layout_algebra.prove.core import shape_facts
from layout_algebra.prove.divisions import whole_divisions

__all__ = [
    "Budget",
    "Claim",
    "Condition",
    "UndecidedClaim",
    "bitcast_claim",
    "claim_for",
    "claim_of",
    "condition_of",
    "in_bounds_claim",
    "no_padding_claim",
    "prove_necessary",
    "prove_sufficient",
    "substitute",
    "when_bitcast_is_valid",
    "when_in_bounds",
    "when_no_padding",
    "when_reshape_is_bitcast",
    "when_transpose_is_bitcast",
    "witnesses",
]

EXACT = "exact"
UNKNOWN = "unknown"
#: Grid bound per symbol, by number of symbols (the grid is 1..bound in each).
DEFAULT_BOUNDS = {0: 1, 1: 64, 2: 32, 3: 8}
#: Largest extra grid value (around the layout's numbers), by number of symbols.
LARGEST = {0: 1, 1: 2048, 2: 1024, 3: 256}
#: At most this many concrete cases when a bound atom (``N <= 3``) is split into values.
MAX_CASES = 64
#: Per-query solver timeout for the necessity query.
NECESSITY_TIMEOUT_MS = 30_000
#: Per-query solver timeout of the sufficiency proofs (each query also stops at the budget).
DEFAULT_TIMEOUT_MS = 30_000
#: Seconds one condition may take in all (grid, fit and proofs); a proof cut off by it
#: leaves the status ``unknown`` (or only bounded necessity), saying so.
DEFAULT_BUDGET_S = 60.0
#: CPU seconds one condition may take (the issue's bound is 30 s per condition).
DEFAULT_CPU_BUDGET_S = 28.0

Sizes = Mapping[sympy.Symbol, int]


class UndecidedClaim(LayoutAlgebraError, ValueError):
    """The concrete decision gave no answer at some size (e.g. a rewrite the verifier
    answers ``unknown`` for): no condition can be fitted."""


# ------------------------------------------------------------------------------ claims
@dataclass(frozen=True)
class Claim:
    """A claim about shapes with size symbols, in three readings.

    ``decide(sizes)`` is the exact concrete decision (a bool); ``prove(shapes, assume)``
    the symbolic decision on shapes with some symbols substituted (a status string);
    ``size_failure`` a SymPy condition on the sizes which, when true, makes the claim
    fail (element counts or allocations differ), or ``None`` when there is none.
    """

    text: str
    shapes: tuple[ArrayShape, ...]
    decide_shapes: Callable[[tuple[ArrayShape, ...]], bool]
    prove_shapes: Callable[[tuple[ArrayShape, ...], tuple[Any, ...], int], str]
    size_failure: sympy.Basic | None = None
    #: ``element, ar -> (input bit, output bit)`` of an output element and its input
    #: element, on the claim's symbolic shapes (reshape and transpose claims only)
    offsets: Callable[[Sequence[Any], Any], tuple[Any, Any]] | None = None
    #: the transpose's permutation (``None``: the reshape correspondence)
    permutation: tuple[int, ...] | None = None
    #: ``shapes, element, ar -> [(input bit, output bit), ...]``, one pair per correspondence
    #: (``bitcast_is_valid`` claims: the claim fails at an element that moves under all)
    all_offsets: Callable[[ArrayShape, ArrayShape, Sequence[Any], Any], list[tuple[Any, Any]]] | None = None
    #: ``shape, element, ar -> (position, slots)`` (in-bounds claims: the claim fails at
    #: an element whose position is ``>= slots``)
    outside: Callable[[ArrayShape, Sequence[Any], Any], tuple[Any, Any]] | None = None
    #: claims about more than shapes (rewrites of HLO modules) decide and prove on the
    #: sizes themselves: ``sizes -> bool`` and ``(substitution, assumptions, timeout_ms) -> status``
    decide_sizes: Callable[[Sizes], bool] | None = None
    prove_sizes: Callable[[Mapping[sympy.Symbol, Any], tuple[Any, ...], int], str] | None = None
    #: grid bound per number of symbols when the claim's decision is slower than usual
    bounds: Mapping[int, int] | None = None
    #: the arrays whose dimension formulas must be sizes for the claim to be asked at all
    #: (``None``: ``shapes``; rewrites give their parameters, since another instruction's
    #: formula that is no size makes the rewrite invalid there, not outside the question)
    domain_shapes: tuple[ArrayShape, ...] | None = None
    #: claims whose failure at an element is not a SymPy formula (rewrites): the output
    #: dimensions, ``(element, sizes) -> fails there`` at concrete sizes, and the Z3 query
    #: ``(witnesses, assumptions, timeout_ms) -> ProofResult`` proved when, for every size
    #: the assumptions allow, the sizes differ or the claim fails at one of the witnesses
    output_dims: tuple[Any, ...] | None = None
    fails_at_sizes: Callable[[Sequence[int], Sizes], bool] | None = None
    prove_witnesses: Callable[[list[tuple[Any, ...]], tuple[Any, ...], int], ProofResult] | None = None

    @property
    def symbols(self) -> tuple[sympy.Symbol, ...]:
        found: list[sympy.Symbol] = []
        for s in self.shapes:
            found += [x for x in s.size_symbols if x not in found]
        return tuple(found)

    @property
    def domain(self) -> tuple[sympy.Basic, ...]:
        """The facts that say where the claim is asked: each dimension formula of its
        arrays a whole size (``prove.core.shape_facts``; the prover's own domain).

        >>> bitcast_claim("f32[N/8,8,128]{2,1,0}", "f32[N,128]{1,0}").domain
        (Eq(Mod(N, 8), 0),)
        """
        arrays = self.shapes if self.domain_shapes is None else self.domain_shapes
        if self.decide_sizes is not None and self.domain_shapes is None:
            arrays = ()  # a rewrite's instructions: a formula that is no size is a failure
        return shape_facts(arrays)

    def asks_at(self, sizes: Sizes) -> bool:
        """Whether ``sizes`` lie in the claim's :attr:`domain` (decided exactly)."""
        return all(condition_holds(fact, sizes) for fact in self.domain)

    def decide(self, sizes: Sizes) -> bool:
        if self.decide_sizes is not None:
            return self.decide_sizes(sizes)
        try:
            shapes = tuple(s.specialize(sizes) for s in self.shapes)
        except ValueError as err:  # a dimension formula that is no size there (N-2 at N = 1)
            at = ", ".join(f"{k}={v}" for k, v in sizes.items())
            raise UndecidedClaim(f"at {at} there is no such array: {err}") from None
        return self.decide_shapes(shapes)

    def prove(
        self,
        substitution: Mapping[sympy.Symbol, Any],
        assume: tuple[Any, ...] = (),
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
    ) -> str:
        """The symbolic decision with ``substitution`` applied, under ``assume``, each
        solver query given at most ``timeout_ms``."""
        if self.prove_sizes is not None:
            return self.prove_sizes(substitution, assume, timeout_ms)
        return self.prove_shapes(tuple(substitute(s, substitution) for s in self.shapes), assume, timeout_ms)


def substitute(shape: ArrayShape, substitution: Mapping[sympy.Symbol, Any]) -> ArrayShape:
    """``shape`` with its size symbols replaced by expressions (integers stay integers).

    >>> from layout_algebra.model.syntax import as_shape
    >>> str(substitute(as_shape("f32[N,128]{1,0}"), {dim_symbol("N"): 8 * dim_symbol("K")}))
    'f32[8*K,128]{1,0}'
    """
    dims: list[Any] = []
    for d in shape.dimensions:
        if isinstance(d, int):
            dims.append(d)
            continue
        v = sympy.expand(as_sympy(d).subs(substitution))
        dims.append(int(v) if v.is_Integer else v)
    return replace(shape, dimensions=tuple(dims))


def _status(result: Any) -> str:
    return str(result.status)


def bitcast_claim(
    src: Shape | str, dst: Shape | str, operation: str = "reshape", permutation: Sequence[int] = ()
) -> Claim:
    """The claim "``operation`` from ``src`` to ``dst`` is a bitcast" (``reshape``,
    ``transpose`` with ``permutation``, or ``bitcast``: any correspondence)."""
    a, b = meaningful_array(as_shape(src)), meaningful_array(as_shape(dst))
    perm = tuple(int(p) for p in permutation)
    if operation not in ("reshape", "transpose", "bitcast"):
        raise InvalidArgumentError(f"operation {operation!r} is not reshape, transpose or bitcast")

    def verdict(
        shapes: tuple[ArrayShape, ...], assume: tuple[Any, ...] = (), timeout_ms: int = DEFAULT_TIMEOUT_MS
    ) -> Any:
        x, y = shapes
        if operation == "reshape":
            return reshape_is_bitcast(x, y, assume=assume or None, timeout_ms=timeout_ms)
        if operation == "transpose":
            return transpose_is_bitcast(x, y, perm, assume=assume or None, timeout_ms=timeout_ms)
        return bitcast_is_valid(x, y, assume=assume or None, timeout_ms=timeout_ms)

    def decide(shapes: tuple[ArrayShape, ...]) -> bool:
        try:
            return bool(verdict(shapes).status == "proved")
        except ValueError:  # concrete element counts differ: not this operation at all
            return False

    def prove(shapes: tuple[ArrayShape, ...], assume: tuple[Any, ...], timeout_ms: int) -> str:
        try:
            return _status(verdict(shapes, assume, timeout_ms))
        except ValueError:
            return "refuted"

    verdict((a, b))  # errors in the claim itself surface now, with their message
    failure = _bitcast_size_failure(a, b)
    name = f"{operation}{' ' + str(list(perm)) if operation == 'transpose' else ''} {a} -> {b} is a bitcast"
    offsets = None
    if operation != "bitcast":

        def offsets(element: Sequence[Any], ar: Any) -> tuple[Any, Any]:
            return bit_offsets(a, b, element, perm if operation == "transpose" else None, ar)

    all_offsets = None
    if operation == "bitcast" and a.rank != b.rank:
        # the correspondences tried do not depend on the sizes only when no transpose can
        # apply (equal ranks: at some sizes the dimensions may match a permutation)

        def all_offsets(
            x: ArrayShape, y: ArrayShape, element: Sequence[Any], ar: Any
        ) -> list[tuple[Any, Any]]:
            return [(i, o) for _, i, o in correspondence_bit_offsets(x, y, element, ar)]

    perm_or_none = perm if operation == "transpose" else None
    return Claim(name, (a, b), decide, prove, failure, offsets, perm_or_none, all_offsets=all_offsets)


def _bitcast_size_failure(a: ArrayShape, b: ArrayShape) -> sympy.Basic:
    ra, rb = size_report(a), size_report(b)
    if (
        a.effective_layout.memory_space != b.effective_layout.memory_space
        or ra.element_bits != rb.element_bits
    ):
        return sympy.true
    count_a = as_sympy(math.prod(a.dimensions, start=1))
    count_b = as_sympy(math.prod(b.dimensions, start=1))
    # XLA's ShapeUtil::ArraySize ignores an untiled L(n), the buffer does not: both must agree
    xla_a = ra.first_tile_bytes if a.effective_layout.tiles else ra.logical_bytes
    xla_b = rb.first_tile_bytes if b.effective_layout.tiles else rb.logical_bytes
    return sympy.Or(
        sympy.Ne(count_a, count_b),
        sympy.Ne(as_sympy(ra.first_tile_bytes), as_sympy(rb.first_tile_bytes)),
        sympy.Ne(as_sympy(xla_a), as_sympy(xla_b)),
    )


def no_padding_claim(shape: Shape | str) -> Claim:
    """The claim "the layout of ``shape`` adds no padding slot": its exact buffer (every
    tile level, ``L(n)``) has as many element slots as the array has elements."""
    a = meaningful_array(as_shape(shape))

    def gap(s: ArrayShape) -> tuple[Any, Any]:
        r = size_report(s)
        return r.physical_elements, r.logical_elements

    def decide(shapes: tuple[ArrayShape, ...]) -> bool:
        physical, logical = gap(shapes[0])
        return bool(physical == logical)

    def prove(shapes: tuple[ArrayShape, ...], assume: tuple[Any, ...], timeout_ms: int) -> str:
        physical, logical = gap(shapes[0])
        equal = sympy.Eq(as_sympy(physical), as_sympy(logical))
        # the array's own domain too (f32[8*K/3,128] is asked where 3 divides 8*K), as
        # prove.no_padding reads it
        given = (*assume, *shape_facts(shapes))
        return _status(holds(equal, assume=given or None, timeout_ms=timeout_ms))

    physical, logical = gap(a)
    return Claim(f"{a} adds no padding", (a,), decide, prove, sympy.Ne(as_sympy(physical), as_sympy(logical)))


def in_bounds_claim(shape: Shape | str, allocation: str = "xla") -> Claim:
    """The claim "every element of ``shape`` lies inside the buffer" (``allocation`` as
    for ``prove.in_bounds``: ``exact`` or ``xla``)."""
    from layout_algebra.prove import in_bounds

    if allocation not in ("exact", "xla"):
        raise InvalidArgumentError(f"allocation {allocation!r} is not 'exact' or 'xla'")
    a = meaningful_array(as_shape(shape))

    def decide(shapes: tuple[ArrayShape, ...]) -> bool:
        return in_bounds(shapes[0], allocation=allocation).status == "proved"

    def prove(shapes: tuple[ArrayShape, ...], assume: tuple[Any, ...], timeout_ms: int) -> str:
        return _status(
            in_bounds(shapes[0], allocation=allocation, assume=assume or None, timeout_ms=timeout_ms)
        )

    def outside(s: ArrayShape, element: Sequence[Any], ar: Any) -> tuple[Any, Any]:
        m = layout_map(s)
        report = size_report(s)
        slots = report.first_tile_elements if allocation == "xla" else report.physical_elements
        return m.apply(list(element), ar, through=len(m.stages) - 1)[0], slots

    name = f"{a} stays inside the {allocation} allocation"
    return Claim(name, (a,), decide, prove, sympy.false, outside=outside)


# ----------------------------------------------------------------------------- proofs
def _cases(expr: sympy.Basic) -> list[tuple[sympy.Basic, ...]]:
    """The condition as an or of and-terms (each a tuple of literals)."""
    dnf = sympy.to_dnf(expr, simplify=False)
    terms = dnf.args if isinstance(dnf, sympy.Or) else (dnf,)
    return [t.args if isinstance(t, sympy.And) else (t,) for t in terms]


def _substitutions(
    term: Sequence[sympy.Basic], symbols: Sequence[sympy.Symbol]
) -> tuple[list[dict[sympy.Symbol, Any]], tuple[sympy.Basic, ...]] | None:
    """One and-term as substitutions (``N % 8 == 0`` → ``N = 8*K``, ``K`` a fresh size of ``model.internal_names``, ``N == 1`` → 1,
    ``N <= 3`` → the cases 1, 2, 3) and the literals left as assumptions; ``None`` when
    there would be too many cases."""
    moduli: dict[sympy.Symbol, int] = {}
    fixed: dict[sympy.Symbol, int] = {}
    upper: dict[sympy.Symbol, int] = {}
    rest: list[sympy.Basic] = []
    for lit in term:
        if (
            isinstance(lit, sympy.Eq)
            and isinstance(lit.lhs, sympy.Mod)
            and lit.lhs.args[0].is_Symbol
            and lit.rhs == 0
        ):
            s, k = lit.lhs.args
            moduli[s] = math.lcm(moduli.get(s, 1), int(k))
        elif isinstance(lit, sympy.Eq) and lit.lhs.is_Symbol and lit.rhs.is_Integer:
            fixed[lit.lhs] = int(lit.rhs)
        elif isinstance(lit, sympy.Le) and lit.lhs.is_Symbol and lit.rhs.is_Integer:
            upper[lit.lhs] = min(upper.get(lit.lhs, int(lit.rhs)), int(lit.rhs))
        else:
            rest.append(lit)
    choices: list[list[tuple[sympy.Symbol, Any]]] = []
    for s in symbols:
        k = moduli.get(s, 1)
        if s in fixed:
            choices.append([(s, fixed[s])])
        elif s in upper:
            choices.append([(s, v) for v in range(k, upper[s] + 1, k)])
        elif k > 1:
            choices.append([(s, k * multiple_size(s, k))])
    if math.prod(len(c) for c in choices) > MAX_CASES:
        return None
    subs = [dict(c) for c in itertools.product(*choices)]
    return subs, tuple(rest)


def prove_sufficient(
    claim: Claim, expr: sympy.Basic, budget: Budget | None = None, given: Sequence[Any] = ()
) -> tuple[bool, str]:
    """Whether the claim is proved under ``expr``: each and-term of its or-form, with
    divisibility and equalities substituted and bounds split into values, is proved by
    the claim's symbolic (or, once concrete, exact) decision for every size ``>= 1``.
    ``budget`` caps each solver query's timeout (:class:`Budget`); a query cut off by it
    makes the answer "not proved", saying so. ``given``: the question's assumptions (SymPy
    relations on the claim's symbols), assumed in every case. Returns (proved, how)."""
    if expr in (sympy.false, False):
        return True, "nothing to prove: the condition is False"
    symbols = claim.symbols
    n = 0
    for term in [()] if expr in (sympy.true, True) else _cases(expr):
        split = _substitutions(term, symbols)
        if split is None:
            return False, f"too many cases in {sympy.And(*term)}"
        subs, rest = split
        for sub in subs:
            free: set[sympy.Symbol] = set()
            for v in sub.values():
                free |= getattr(as_sympy(v), "free_symbols", set())
            free |= {s for s in symbols if s not in sub}
            rest_sub = tuple(as_sympy(r).subs(sub) for r in (*rest, *given))
            if any(r == sympy.false for r in rest_sub):
                continue  # this case is empty
            if any(as_sympy(fact).subs(sub) == sympy.false for fact in claim.domain):
                continue  # no such arrays in this case (N <= 3 split into 1, 2, 3 for f32[N/2])
            rest_kept = tuple(r for r in rest_sub if r != sympy.true)
            # sizes are >= 1: said up front (a zero size is not asked about, and without
            # it the solver spends its time on the degenerate arrays)
            assume = (*(s >= 1 for s in sorted(free, key=str)), *rest_kept)
            timeout_ms, cut = _timeout(budget)
            try:
                status = claim.prove(sub, assume, timeout_ms)
            except AssumptionsAdmitNoSizes:
                continue  # no sizes >= 1 fall in this case: nothing to prove
            n += 1
            if status != "proved":
                where = ", ".join(f"{k}={v}" for k, v in sub.items()) or "all sizes"
                note = (
                    f" (its solver queries were cut to {timeout_ms} ms by the time budget)"
                    if cut and status == "unknown"
                    else ""
                )
                return False, f"the claim is {status} for {where}" + (
                    f" assuming {list(assume)}" if assume else ""
                ) + note
    return True, f"proved in {n} case(s) by the symbolic decision"


@dataclass
class Budget:
    """The time one condition may take (grid, fit and proofs together): ``seconds`` by
    the wall clock (how long the caller waits) and ``cpu_seconds`` of this process's CPU.

    A solver query's (wall-clock) timeout is at most what is left of either: a query
    cannot use more CPU time than the wall time it runs, so both bounds hold (up to the
    grid and the fit, which run first and are not cut). On an idle machine the CPU bound
    is the one that bites; on a busy one (the wall clock running several times faster
    than the CPU time) the wall bound. (Scaling the timeouts by the measured slowdown
    instead was tried: the slowdown changes during a long query, and one condition then
    took 200 s.)
    """

    seconds: float
    cpu_seconds: float = float("inf")
    start: float = field(default_factory=time.perf_counter)
    cpu_start: float = field(default_factory=time.process_time)

    def left_ms(self) -> int:
        wall = self.seconds - (time.perf_counter() - self.start)
        cpu = self.cpu_seconds - (time.process_time() - self.cpu_start)
        return int(min(wall, cpu) * 1000)


def _timeout(budget: Budget | None, normal: int = DEFAULT_TIMEOUT_MS) -> tuple[int, bool]:
    """A solver timeout in ms: ``normal``, or what is left of the budget if less (at
    least 1 s); and whether the budget cut it."""
    if budget is None:
        return normal, False
    left = budget.left_ms()
    return (normal, False) if left >= normal else (max(left, 1000), True)


def prove_necessary(
    claim: Claim,
    expr: sympy.Basic,
    table: Mapping[tuple[int, ...], bool] | None = None,
    record: list[ProofResult] | None = None,
    budget: Budget | None = None,
    given: Sequence[Any] = (),
) -> tuple[bool, str]:
    """Whether Z3 proves that the claim fails wherever ``expr`` does (every size ``>= 1``):
    the element counts or allocations differ, or (reshape/transpose claims) some witness
    element, given as a function of the sizes, has different bit offsets on the two sides.
    Witnesses are chosen from ``table``'s failing sizes (see :func:`witnesses`). The Z3
    answer that decides (the size query if it is proved, else the witness query) is
    appended to ``record`` when given; ``budget`` caps the queries' timeouts as for
    :func:`prove_sufficient`; ``given`` as there (the claim need fail only where they hold)."""
    record = [] if record is None else record
    if expr in (sympy.true, True):
        return True, "nothing to prove: the condition is True"
    if claim.size_failure is None:
        return False, "this claim fails by element positions, not sizes: no size query"
    if claim.size_failure in (sympy.true, True):
        return (
            True,
            "the sizes differ whatever the size symbols are (or memory spaces or element widths differ)",
        )
    assume = (*(s >= 1 for s in claim.symbols), *claim.domain, *given, sympy.Not(expr))
    try:
        result = holds(
            claim.size_failure, assume=assume, timeout_ms=_timeout(budget, NECESSITY_TIMEOUT_MS)[0]
        )
    except AssumptionsAdmitNoSizes:
        return (
            True,
            "nothing to prove: the condition holds at every size >= 1 (Z3: its negation admits no sizes)",
        )
    if result.status == "proved":
        record.append(result)
        return True, "Z3: wherever the condition fails, the element counts or allocated bytes differ"
    has_witness = any(
        f is not None for f in (claim.offsets, claim.outside, claim.prove_witnesses, claim.all_offsets)
    )
    chosen = witnesses(claim, [p for p, ok in table.items() if not ok]) if has_witness and table else []
    if not chosen:
        record.append(result)
    if not has_witness or table is None:
        return False, f"the size query was {result.status}: some failures are by element positions"
    if not chosen:
        return (
            False,
            "no witness element of the form 0, 1, d-1, d//2 per dimension fails at every failing size",
        )
    timeout_ms, cut = _timeout(budget, NECESSITY_TIMEOUT_MS)
    if claim.prove_witnesses is not None:
        result = claim.prove_witnesses(chosen, assume, timeout_ms)
    else:
        differs = [
            sympy.And(*(x < d for x, d in zip(w, _output_dims(claim), strict=True)), _fails_at(claim, w))
            for w in chosen
        ]
        failure = whole_divisions(sympy.Or(claim.size_failure, *differs), claim.symbols)  # sizes >= 1 here
        result = holds(failure, assume=assume, timeout_ms=timeout_ms)
    record.append(result)
    names = " or ".join(str(list(w)) for w in chosen)
    if result.status == "proved":
        how = _how_it_fails(claim)
        sizes = "" if claim.size_failure in (sympy.false, False) else "the sizes differ or "
        return True, f"Z3: wherever the condition fails, {sizes}element {names} {how}"
    note = f" (cut to {timeout_ms} ms by the time budget)" if cut and result.status == "unknown" else ""
    return False, f"the witness query (element {names}) was {result.status}{note}"


def _how_it_fails(claim: Claim) -> str:
    if claim.outside is not None:
        return "lies outside the allocation"
    if claim.prove_witnesses is not None:
        return "differs"
    if claim.all_offsets is not None:
        return "moves under every correspondence tried"
    return "moves"


def _fails_at(claim: Claim, element: Sequence[Any]) -> sympy.Basic:
    """The symbolic condition "the claim fails at ``element``"."""
    if claim.outside is not None:
        position, slots = claim.outside(claim.shapes[0], element, SYMPY_ARITHMETIC)
        return sympy.Ge(as_sympy(position), as_sympy(slots))
    if claim.all_offsets is not None:  # it moves under every correspondence tried
        pairs = claim.all_offsets(claim.shapes[0], claim.shapes[1], element, SYMPY_ARITHMETIC)
        return sympy.And(*(sympy.Ne(as_sympy(i), as_sympy(o)) for i, o in pairs))
    assert claim.offsets is not None
    return sympy.Ne(*claim.offsets(element, SYMPY_ARITHMETIC))


def _output_dims(claim: Claim) -> tuple[Any, ...]:
    return claim.output_dims if claim.output_dims is not None else tuple(claim.shapes[-1].dimensions)


def witnesses(claim: Claim, failing: Sequence[tuple[int, ...]], most: int = 2) -> list[tuple[Any, ...]]:
    """At most ``most`` output elements, each coordinate ``0``, ``1``, ``d-1`` or ``d//2``
    of its dimension ``d``, that together move (or whose sizes differ) at every failing
    size of the grid; ``[]`` when none do."""
    dims = _output_dims(claim)
    choices = [
        list(
            dict.fromkeys([sympy.Integer(0), sympy.Integer(1), as_sympy(d) - 1, sympy.floor(as_sympy(d) / 2)])
        )
        for d in dims
    ]
    templates = list(itertools.product(*choices))[:256]
    points = [p for p in failing if not _sizes_differ(claim, p)][:400]
    if not points:
        return []
    covers = {t: frozenset(k for k, p in enumerate(points) if _moves(claim, t, p)) for t in templates}
    everything = frozenset(range(len(points)))
    for t, covered in covers.items():
        if covered == everything:
            return [t]
    if most >= 2:
        for t, u in itertools.combinations(templates, 2):
            if covers[t] | covers[u] == everything:
                return [t, u]
    return []


def _sizes_differ(claim: Claim, point: tuple[int, ...]) -> bool:
    values = dict(zip(claim.symbols, point, strict=True))
    return bool(claim.size_failure.subs(values)) if claim.size_failure is not None else False


def _moves(claim: Claim, template: tuple[Any, ...], point: tuple[int, ...]) -> bool:
    values = dict(zip(claim.symbols, point, strict=True))
    element = [int(as_sympy(x).subs(values)) for x in template]
    dims = [int(as_sympy(d).subs(values)) for d in _output_dims(claim)]
    if any(not 0 <= x < d for x, d in zip(element, dims, strict=True)):
        return False
    if claim.fails_at_sizes is not None:
        return claim.fails_at_sizes(element, values)
    shapes = [s.specialize(values) for s in claim.shapes]
    if claim.outside is not None:
        position, slots = claim.outside(shapes[0], element, ARITHMETIC)
        return bool(position >= slots)
    if claim.all_offsets is not None:
        return all(i != o for i, o in claim.all_offsets(shapes[0], shapes[1], element, ARITHMETIC))
    src, dst = bit_offsets(shapes[0], shapes[1], element, claim.permutation)
    return bool(src != dst)


# ---------------------------------------------------------------------------- results
@dataclass(frozen=True)
class Condition:
    """The weakest size condition found for a claim.

    ``expr``: a SymPy boolean over the size symbols (``True``/``False`` when it does not
    depend on them; ``None`` when no candidate fits); ``status``: ``exact``,
    ``sufficient, necessary up to ...`` or ``unknown``; ``method`` and ``details`` say how.
    """

    claim: str
    expr: sympy.Basic | None
    status: str
    method: str
    bound: int
    symbols: tuple[sympy.Symbol, ...] = ()
    seconds: float = 0.0
    details: tuple[str, ...] = field(default=())
    #: where the claim is asked (:attr:`Claim.domain`): the condition says nothing elsewhere
    domain: tuple[sympy.Basic, ...] = field(default=())
    #: the question's assumptions the condition was derived under (sizes defined by one,
    #: ``M == 128*N``, are substituted and are not among :attr:`symbols`)
    assume: tuple[sympy.Basic, ...] = field(default=())
    #: the formula that matched every grid size, whether or not it was proved; when it was
    #: not proved sufficient, ``expr`` is ``None`` and this is evidence, not a condition
    fitted: sympy.Basic | None = None
    #: the grid the fit saw: ``(sizes, the exact decision there)`` per point, in :attr:`symbols`
    grid: tuple[tuple[tuple[int, ...], bool], ...] = field(default=(), repr=False)

    def __repr__(self) -> str:
        if self.expr is None and self.fitted is not None:
            return (
                f"Condition(None, {self.status!r}; evidence only: {self.fitted} matched the exact "
                f"decision at {len(self.grid)} grid sizes, not proved)"
            )
        return f"Condition({self.expr}, {self.status!r})"

    def holds_at(self, sizes: Mapping[object, int]) -> bool:
        """The condition's value at concrete sizes (keys: names or symbols).

        Conditions are found and proved for sizes ``>= 1`` (the module doc): a zero size,
        though XLA allows it, is outside what the status vouches for, so it is refused
        rather than answered (ask the decision itself at that size).

        >>> c = when_no_padding("f32[N]{0:T(8)}")
        >>> c.holds_at({"N": 16}), c.holds_at({"N": 12})
        (True, False)
        >>> c.holds_at({"N": 0})
        Traceback (most recent call last):
        ...
        layout_algebra.InvalidArgumentError: N = 0: size conditions are found and proved for sizes >= 1 only; ask the decision itself at this size

        Sizes at which the claim's arrays do not exist are refused too:

        >>> when_no_padding("f32[N/8,128]{1,0:T(8,128)}").holds_at({"N": 12})
        Traceback (most recent call last):
        ...
        layout_algebra.InvalidArgumentError: N=12 is outside the claim's domain (N % 8 == 0): its arrays have a dimension that is no size there
        """
        if self.expr is None:
            seen = f" (a fit matched the grid, not proved: {self.fitted})" if self.fitted is not None else ""
            raise InvalidArgumentError(f"no condition was found for {self.claim}{seen}")
        values = {(dim_symbol(k) if isinstance(k, str) else k): v for k, v in sizes.items()}
        for symbol, value in values.items():
            if value < 1:
                raise InvalidArgumentError(
                    f"{symbol} = {value}: size conditions are found and proved for sizes >= 1 only; "
                    "ask the decision itself at this size"
                )
        if not all(condition_holds(fact, values) for fact in self.domain):
            at = ", ".join(f"{k}={v}" for k, v in values.items())
            raise InvalidArgumentError(
                f"{at} is outside the claim's domain ({condition_text(self.domain)}): its arrays "
                "have a dimension that is no size there"
            )
        return truth(self.expr, self.symbols, [values[s] for s in self.symbols])

    def to_dict(self) -> dict[str, Any]:
        return {
            "claim": self.claim,
            "condition": None if self.expr is None else str(self.expr),
            "status": self.status,
            "method": self.method,
            "grid_bound": self.bound,
            "symbols": [str(s) for s in self.symbols],
            "seconds": round(self.seconds, 3),
            "details": list(self.details),
            "assume": [str(a) for a in self.assume],
            "fitted": None if self.fitted is None else str(self.fitted),
            "grid_points": len(self.grid),
        }


def condition_of(
    claim: Claim,
    bound: int | None = None,
    *,
    prove: bool = True,
    budget_s: float = DEFAULT_BUDGET_S,
    cpu_budget_s: float = DEFAULT_CPU_BUDGET_S,
    assume: Sequence[Any] = (),
) -> Condition:
    """Find, then prove, the weakest size condition of ``claim`` (see the module doc).

    ``assume``: assumptions on the claim's symbols (SymPy relations, as
    :func:`definitions` leaves them): the grid holds only sizes where they hold, and both
    proofs assume them, so the condition is the claim's truth *under* them. A formula
    that matches the grid but is not proved sufficient is not returned as the condition
    (``expr`` is ``None``): it is kept as :attr:`Condition.fitted`, with the grid it saw.

    ``prove=False`` only fits (status ``unknown``, "not proved"): the formula that
    matches the exact decision at every grid size. ``budget_s`` (wall clock) and
    ``cpu_budget_s`` bound the time (:class:`Budget`): the solver queries get what is left
    of them (a proof they cut off is not a proof: the status then says ``unknown`` or
    bounded necessity, and the details say why)."""
    start = time.perf_counter()
    budget = Budget(budget_s, cpu_budget_s)
    symbols = claim.symbols
    if len(symbols) > 3:
        raise InvalidArgumentError(
            f"{claim.text}: conditions are found for at most 3 size symbols, not {len(symbols)}"
        )
    if bound is None:
        bound = (claim.bounds or DEFAULT_BOUNDS)[len(symbols)]
    values = grid_values(claim.shapes, bound, LARGEST[len(symbols)])
    given = tuple(as_sympy(a) for a in assume)
    checked = [a for a in given if getattr(a, "free_symbols", set()) <= set(symbols)]

    def asks_at(sizes: Sizes) -> bool:
        return claim.asks_at(sizes) and all(condition_holds(a, sizes) for a in checked)

    try:
        table = sample(claim.decide, symbols, values, asks_at)
    except UndecidedClaim as err:
        return Condition(
            claim.text,
            None,
            UNKNOWN,
            "grid",
            bound,
            symbols,
            time.perf_counter() - start,
            (f"the concrete decision gives no answer: {err}",),
            claim.domain,
            given,
        )
    expr = fit(table, symbols, atoms(claim.shapes, symbols, bound))
    more = (
        f" and {len(values) - bound} larger values around the layout's numbers" if len(values) > bound else ""
    )
    where = f" where {condition_text((*claim.domain, *given))}" if claim.domain or given else ""
    grid_text = f"decided exactly at {len(table)} sizes (1..{bound} each{more}{where})"

    def found(formula: Any, status: str, method: str, *details: str) -> Condition:
        return Condition(
            claim.text,
            formula,
            status,
            method,
            bound,
            symbols,
            time.perf_counter() - start,
            (grid_text, *details),
            claim.domain,
            given,
            expr,
            tuple(table.items()),
        )

    if expr is None:
        return found(None, UNKNOWN, "grid fit", "no formula of at most four atoms matches the grid")
    if not prove:
        return found(expr, UNKNOWN, "grid fit", "matches the grid; not proved (prove=False)")
    sufficient, why_s = prove_sufficient(claim, expr, budget, given)
    if not sufficient:  # evidence, not a condition: the fit is kept in ``fitted`` with its grid
        return found(None, UNKNOWN, "grid fit", f"{expr} matches the grid; sufficiency not proved: {why_s}")
    if symbols:
        necessary, why_n = prove_necessary(claim, expr, table, budget=budget, given=given)
    else:  # no size symbols: the one concrete decision is the whole truth
        necessary, why_n = True, "the shapes are concrete: the exact decision covers every case"
    if necessary:
        status, method = EXACT, "grid fit, sufficiency and necessity proved"
    else:
        names = ",".join(map(str, symbols))
        status, method = f"sufficient, necessary up to {names}<={bound}", "grid fit, sufficiency proved"
    return found(expr, status, method, f"sufficient: {why_s}", f"necessary: {why_n}")


# ----------------------------------------------------------------------- public entry
def claim_for(question: Question) -> Claim:
    """The claim a result answers (its ``question``, its assumptions aside); rewrites
    are built one layer up (``layout_algebra.hlo.rewrite_conditions.rewrite_claim``).

    >>> from layout_algebra.model.questions import Question
    >>> claim_for(Question("in_bounds", ("f32[N]{0:T(4)}",), (("allocation", "exact"),))).text
    'f32[N]{0:T(4)} stays inside the exact allocation'
    """
    allocation = dict(question.options).get("allocation", "exact")
    return claim_of(question.kind, question.arguments, allocation=allocation)


def definitions(
    assume: Sequence[Any], symbols: Sequence[sympy.Symbol]
) -> tuple[dict[sympy.Symbol, Any], tuple[sympy.Basic, ...]]:
    """The assumptions that define a size of ``symbols`` by the others (``M == 128*N``
    defines ``M``), as substitutions, and the other assumptions with them substituted
    (those that become true dropped). A claim under ``M == 128*N`` is a claim about ``N``
    alone: its condition is found over ``N``, not over independent ``N`` and ``M``.

    >>> n, m = dim_symbol("N"), dim_symbol("M")
    >>> definitions([sympy.Eq(m, 128 * n), m >= 256], [n, m])
    ({M: 128*N}, (128*N >= 256,))
    """
    defined: dict[sympy.Symbol, Any] = {}
    rest: list[sympy.Basic] = []
    for a in (as_sympy(x) for x in assume):
        if isinstance(a, sympy.Eq):
            chosen = None
            for s, e in ((a.lhs, a.rhs), (a.rhs, a.lhs)):
                e = as_sympy(e).subs(defined)
                if (
                    isinstance(s, sympy.Symbol)
                    and s in symbols
                    and s not in defined
                    and s not in e.free_symbols
                ):
                    chosen = (s, e)
                    break
            if chosen is not None:
                s, e = chosen
                defined = {k: as_sympy(v).subs({s: e}) for k, v in defined.items()}
                defined[s] = e
                continue
        rest.append(a)
    kept = tuple(r for r in (as_sympy(r).subs(defined) for r in rest) if r is not sympy.true)
    return defined, kept


def question_condition(
    question: Question,
    bound: int | None = None,
    *,
    budget_s: float = DEFAULT_BUDGET_S,
    cpu_budget_s: float = DEFAULT_CPU_BUDGET_S,
) -> Condition:
    """The condition of a layout question (a decision's ``result.question``), derived under
    the assumptions it was asked under: sizes they define are substituted (:func:`definitions`)
    and the rest restrict the grid and are assumed by both proofs. Rewrites are one layer up
    (``layout_algebra.hlo.rewrite_conditions``); ``layout_algebra.condition_of(result)`` picks.

    >>> from layout_algebra.decide.bitcast import reshape_is_bitcast
    >>> r = reshape_is_bitcast("f32[N,128]{1,0:T(8,128)}", "f32[M]{0}", assume="M == 128*N")
    >>> c = question_condition(r.question)
    >>> c.expr, c.status, c.symbols
    (Eq(Mod(N, 8), 0), 'exact', (N,))
    """
    symbols = claim_for(question).symbols
    defined, given = definitions(question.assume, symbols)
    arguments = tuple(
        substitute(meaningful_array(as_shape(x)), defined)
        if isinstance(x, (str, ArrayShape)) and defined
        else x
        for x in question.arguments
    )
    allocation = dict(question.options).get("allocation", "exact")
    claim = claim_of(question.kind, arguments, allocation=allocation)
    found = condition_of(claim, bound, budget_s=budget_s, cpu_budget_s=cpu_budget_s, assume=given)
    if not defined:
        return found
    shown = ", ".join(f"{k} = {v}" for k, v in defined.items())
    return replace(found, details=(f"under the question's assumptions: {shown} substituted", *found.details))


def claim_of(kind: str, arguments: Sequence[Any], *, allocation: str = "exact") -> Claim:
    """The claim of ``kind`` about ``arguments``, as the decision of that name takes them.

    ``reshape``, ``bitcast`` (source, destination), ``transpose`` (source, destination,
    permutation), ``no_padding`` (a shape) and ``in_bounds`` (a shape, inside the
    ``allocation``: ``exact`` or ``xla``); rewrites are built one layer up
    (``layout_algebra.hlo.rewrite_conditions.rewrite_claim``).

    >>> claim_of("transpose", ("f32[N,2]{1,0}", "f32[2,N]{1,0}", (1, 0))).symbols
    (N,)
    >>> claim_of("in_bounds", ("f32[N]{0:T(4)}",), allocation="xla").text
    'f32[N]{0:T(4)} stays inside the xla allocation'
    """
    if kind in ("reshape", "bitcast"):
        return bitcast_claim(arguments[0], arguments[1], kind)
    if kind == "transpose":
        return bitcast_claim(arguments[0], arguments[1], "transpose", arguments[2])
    if kind == "no_padding":
        return no_padding_claim(arguments[0])
    if kind == "in_bounds":
        return in_bounds_claim(arguments[0], allocation)
    raise InvalidArgumentError(
        f"{kind} claims are not built here (see layout_algebra.hlo.rewrite_conditions)"
    )


def when_reshape_is_bitcast(src: Shape | str, dst: Shape | str, *, bound: int | None = None) -> Condition:
    """For which sizes ``reshape_is_bitcast(src, dst)`` holds."""
    return condition_of(bitcast_claim(src, dst, "reshape"), bound)


def when_transpose_is_bitcast(
    src: Shape | str, dst: Shape | str, permutation: Sequence[int], *, bound: int | None = None
) -> Condition:
    """For which sizes ``transpose_is_bitcast(src, dst, permutation)`` holds."""
    return condition_of(bitcast_claim(src, dst, "transpose", permutation), bound)


def when_bitcast_is_valid(src: Shape | str, dst: Shape | str, *, bound: int | None = None) -> Condition:
    """For which sizes ``bitcast_is_valid(src, dst)`` holds."""
    return condition_of(bitcast_claim(src, dst, "bitcast"), bound)


def when_no_padding(shape: Shape | str, *, bound: int | None = None) -> Condition:
    """For which sizes the layout of ``shape`` adds no padding slot."""
    return condition_of(no_padding_claim(shape), bound)


def when_in_bounds(shape: Shape | str, allocation: str = "xla", *, bound: int | None = None) -> Condition:
    """For which sizes every element lies inside the allocation (``exact`` or ``xla``)."""
    return condition_of(in_bounds_claim(shape, allocation), bound)
