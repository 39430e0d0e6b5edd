"""The prover's small public query API: solvers, models, boxes, side conditions.

Everything that asks Z3 a question goes through these few functions, so that solver
settings (fixed seed, timeout), model read-off and the side conditions of the integer
encoding are the same for every claim — the layout proofs of :mod:`.core` and the HLO
rewrite verifier (:mod:`layout_algebra.hlo.verify`) alike.

A query is built so that *unsat means the claim holds*: the solver gets the context
(assumptions, the index box), the negated claim, and the encoding's side constraints.

>>> import z3
>>> from layout_algebra.prove.encode import IntArithmetic
>>> ar = IntArithmetic()
>>> i = ar.variable("i")
>>> s = solver_for(None, 1000)
>>> s.add(*in_box([i], [8], ar), ar.floordiv(i, 8) != 0, *ar.side)   # ⌊i/8⌋ = 0 on 0 <= i < 8
>>> s.check()
unsat
>>> s = solver_for(None, 1000)
>>> s.add(*in_box([i], [9], ar), ar.floordiv(i, 8) != 0, *ar.side)   # not on 0 <= i < 9
>>> s.check(), model_int(s.model(), i)
(sat, 8)

When two positions are mixed-radix numbers over the same sizes, :func:`differ` compares
their digits, which stays linear where the numbers are not (symbolic strides):

>>> from layout_algebra.model.symbols import dim_symbol
>>> N = dim_symbol("N")
>>> a, b = ar.variable("a"), ar.variable("b")
>>> x = ar.mixed_radix(a * ar.lift(N) + b, [a, b], [2, N])
>>> y = ar.mixed_radix(b * ar.lift(N) + a, [b, a], [2, N])
>>> differ(x, y, ar)  # index variables are named with a '!' (no size name has one)
Or(a! != b!, b! != a!)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import sympy
import z3

from layout_algebra.prove import lemma_cache
from layout_algebra.prove.encode import IntArithmetic, UnsupportedExpression
from layout_algebra.prove.portfolio import PortfolioSolver
from layout_algebra.prove.result import ProofResult

__all__ = [
    "as_bool",
    "differ",
    "in_box",
    "model_int",
    "run_query",
    "side_conditions",
    "small_model",
    "solver_for",
    "symbol_values",
]

#: Bounds tried, smallest first, for the sizes of a counterexample (small ones are easy to
#: read and to run).
SMALL_SIZES = (4, 16, 64, 256, 4096)


def solver_for(logic: str | None, timeout_ms: int, *, fast_first: bool = False) -> z3.Solver:
    """A solver for ``logic`` (``None``: Z3's default) with a timeout and a fixed random seed.

    ``fast_first`` (integer queries, ``logic=None``): Z3's default solver behind a first,
    cheap attempt of its SMT core (:class:`~.portfolio.PortfolioSolver`, which takes only an
    ``unsat`` answer from that attempt). The prover's symbolic queries ask for it: there the
    first attempt is 3-50x faster. Concrete queries whose answer is often ``sat`` (a pass
    validation's refutations) do not: the attempt would only add to the default solver's work.
    """
    if not logic and fast_first:
        return PortfolioSolver(timeout_ms)
    s = z3.SolverFor(logic) if logic else z3.Solver()
    s.set("timeout", int(timeout_ms))
    s.set("random_seed", 0)
    return s


def as_bool(value: Any) -> Any:
    """A Z3 boolean for a Python ``bool`` (conditions may fold to constants); other terms as they are."""
    return z3.BoolVal(value) if isinstance(value, bool) else value


def model_int(model: z3.ModelRef, term: Any) -> int:
    """The integer value of ``term`` in ``model`` (a Python int stays as it is)."""
    if isinstance(term, int):
        return term
    return model.eval(term, model_completion=True).as_long()


def in_box(index: Sequence[Any], dims: Sequence[Any], ar) -> list[Any]:
    """``index[k] < dims[k]`` for every k (the lower bound 0 comes with each variable)."""
    return [ar.lt(x, ar.lift(d)) for x, d in zip(index, dims, strict=True)]


def side_conditions(ar: IntArithmetic, context: Sequence[Any], timeout_ms: int) -> z3.Solver | None:
    """A solver that is unsat iff every obligation of ``ar``'s rewrites holds in ``context``.

    ``None`` when the encoding relied on nothing (no digits read off, no symbolic divisor).
    """
    if not ar.obligations:
        return None
    s = solver_for(None, timeout_ms, fast_first=True)
    s.add(*context, *ar.side, z3.Not(z3.And(*ar.obligations)))
    return s


def small_model(solver: z3.Solver, sizes: Sequence[Any], model: z3.ModelRef | None = None) -> z3.ModelRef:
    """A model of the (satisfiable, just checked) ``solver`` whose ``sizes`` are as small as
    a few tries find: all at most 4, else 16, ... (:data:`SMALL_SIZES`), else ``model`` (the
    one already found) or any model.

    >>> n = z3.Int("n")
    >>> s = solver_for(None, 1000)
    >>> s.add(n % 7 == 3, n > 0)
    >>> s.check(), small_model(s, [n])[n]
    (sat, 3)
    """
    if sizes:
        for bound in SMALL_SIZES:
            solver.push()
            solver.add(*(size <= bound for size in sizes))
            answer = solver.check()
            found = solver.model() if answer == z3.sat else None
            solver.pop()
            if found is not None:
                return found
            if answer == z3.unknown:  # a timeout: larger bounds would not be quicker
                break
    if model is not None:
        return model
    solver.check()
    return solver.model()


def symbol_values(ar: IntArithmetic, model: z3.ModelRef) -> dict[sympy.Symbol, int]:
    """The model's value of every size symbol the encoding met."""
    return {s: model_int(model, v) for s, v in ar.symbols.items()}


def differ(fa: Any, fb: Any, ar: IntArithmetic) -> Any:
    """``fa != fb``; for two mixed-radix numbers over the same sizes, some digit differs.

    Equal digits give equal numbers, so "no digit differs" is a sufficient condition for
    equality that stays linear where the numbers themselves are not (symbolic strides). If
    the digits can differ while the numbers agree, the solver's model fails re-checking
    and the answer is unknown, never a false refutation.
    """
    ra, rb = ar.record_of(fa), ar.record_of(fb)
    if ra and rb and len(ra[1]) == len(rb[1]):
        if all(sympy.expand(p - q) == 0 for p, q in zip(ra[1], rb[1], strict=True)):
            return z3.Or(*[as_bool(u != v) for u, v in zip(ra[0], rb[0], strict=True)])
    return as_bool(fa != fb)


def _model_text(model: z3.ModelRef) -> str:
    """A model's integer values by name (the solver's own helper names left out)."""
    values = sorted((d.name(), model[d]) for d in model.decls() if d.arity() == 0 and "!" not in d.name())
    return ", ".join(f"{name}={value}" for name, value in values) or "no named values"


def run_query(
    claim: str,
    encoding: str,
    build: Callable[[], tuple[z3.Solver, Callable[[z3.ModelRef], dict[str, Any] | None]]],
    cache: bool = False,
) -> ProofResult:
    """Check a query whose unsat means the claim holds; sat models are re-checked by ``build``'s checker.

    ``build()`` returns ``(solver, recheck)`` or ``(solver, recheck, side_conditions)``:
    ``proved`` needs unsat on the solver and on the side conditions; a sat model becomes
    ``refuted`` only if ``recheck(model)`` returns a concrete counterexample (else
    ``unknown``, saying so); a timeout is ``unknown`` with the solver's reason.

    ``cache``: read and store the unsat answer in the lemma cache (``prove.lemma_cache``),
    keyed by the exact text of the query and side conditions and the Z3 version.
    """
    start = time.perf_counter()
    key = None
    try:
        built = build()
        solver, recheck = built[0], built[1]
        side_conditions = built[2] if len(built) > 2 else None
        if cache:
            key = lemma_cache.query_key(solver, side_conditions)
            if lemma_cache.is_known_proved(key):
                encoding += " (unsat answer read from the lemma cache: same query text, same Z3 version)"
                return ProofResult("proved", claim, time.perf_counter() - start, encoding)
        answer = solver.check()
    except UnsupportedExpression as err:
        return ProofResult("unknown", claim, time.perf_counter() - start, encoding, reason=str(err))
    elapsed = time.perf_counter() - start
    if answer == z3.unsat:
        if side_conditions is not None:
            encoding += " + side conditions (digits in their box, divisors > 0)"
            check = side_conditions.check()
            elapsed = time.perf_counter() - start
            if check != z3.unsat:
                why = (  # a sat model is not a re-checked counterexample of the claim
                    f"could not be proved (Z3 finds values where it fails: {_model_text(side_conditions.model())})"
                    if check == z3.sat
                    else f"could not be proved ({side_conditions.reason_unknown()})"
                )
                return ProofResult(
                    "unknown",
                    claim,
                    elapsed,
                    encoding,
                    reason=f"the main query is unsat, but a side condition it relied on (digits in their box, divisors > 0, divisions such as N/8 exact) {why}",
                )
        if key is not None:
            lemma_cache.record_proved(key)
        return ProofResult("proved", claim, elapsed, encoding)
    if answer == z3.sat:
        counterexample = recheck(solver.model())
        elapsed = time.perf_counter() - start
        if counterexample is None:
            return ProofResult(
                "unknown",
                claim,
                elapsed,
                encoding,
                reason="the solver's model did not survive concrete re-evaluation (an encoding problem)",
            )
        return ProofResult("refuted", claim, elapsed, encoding, counterexample=counterexample)
    return ProofResult("unknown", claim, elapsed, encoding, reason=f"solver: {solver.reason_unknown()}")
