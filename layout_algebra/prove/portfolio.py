"""A two-solver portfolio: Z3's SMT core after preprocessing first, its default solver after.

Z3's default solver picks a strategy from the query's logic. On the integer queries of the
layout proofs (quotient and remainder variables, products of size symbols) that strategy
is its nonlinear one, which is often 10-100x slower than the SMT core run after a few
equation-solving simplifications (:data:`FAST_TACTICS`), and sometimes the only one that
answers (``benchmarks/README.md``, the proof catalog). :class:`PortfolioSolver` asks both,
one after the other, on the *same assertions*:

1. the preprocessed SMT core, with a small deterministic budget (:data:`FAST_RLIMIT`, Z3's
   resource counter: the same on a loaded machine as on an idle one);
2. if that did not answer ``unsat``: the default solver, exactly as before (its model, its
   reason for ``unknown``, its timeout less the time the first attempt took).

Only ``unsat`` is taken from the first attempt. ``unsat`` is a property of the formula, not
of the procedure that found it, so a claim is proved by the same query on the same encoding
either way; a satisfiable query (a counterexample to re-check) or an open one is answered
by the default solver as it always was, so models and refutations do not change.

>>> import z3
>>> x, y = z3.Ints("x y")
>>> s = PortfolioSolver(timeout_ms=1000)
>>> s.add(x >= 0, x < 8, y == x * x, y % 4 == 2)   # no square is 2 modulo 4
>>> s.check()
unsat
>>> s.answered_by
'smt core after preprocessing'
>>> s = PortfolioSolver(timeout_ms=1000)
>>> s.add(x >= 0, x < 8, y == x * x, y % 4 == 1)   # odd squares are 1 modulo 4
>>> s.check(), s.answered_by, s.model().eval(x * x % 4)
(sat, 'default solver', 1)
"""

from __future__ import annotations

import time
from typing import Any

import z3

__all__ = ["FAST_RLIMIT", "FAST_TACTICS", "PortfolioSolver"]

#: The first attempt: simplify, propagate values, solve equations (a quotient/remainder pair
#: is often substituted away), drop unconstrained terms, then the SMT core.
FAST_TACTICS = ("simplify", "propagate-values", "solve-eqs", "elim-uncnstr", "smt")

#: Z3 resource units the first attempt may spend (``rlimit``; deterministic, unlike a timeout).
FAST_RLIMIT = 1_000_000


def fast_solver(rlimit: int = FAST_RLIMIT) -> z3.Solver:
    """The first attempt's solver: :data:`FAST_TACTICS` with a resource budget and a fixed seed."""
    s = z3.Then(*FAST_TACTICS).solver()
    s.set("rlimit", int(rlimit))
    s.set("random_seed", 0)
    return s


class PortfolioSolver(z3.Solver):  # type: ignore[misc]  # z3 has no type hints
    """Z3's default solver whose :meth:`check` first asks :func:`fast_solver` on the same
    assertions and takes its answer only when it is ``unsat`` (see the module docstring).

    ``timeout_ms`` bounds the whole check (both attempts); ``answered_by`` names the solver
    that gave the last answer.
    """

    def __init__(self, timeout_ms: int, rlimit: int = FAST_RLIMIT) -> None:
        super().__init__()
        self.timeout_ms = int(timeout_ms)
        self.rlimit = int(rlimit)
        self.answered_by = ""
        self.set("timeout", self.timeout_ms)
        self.set("random_seed", 0)

    def check(self, *assumptions: Any) -> z3.CheckSatResult:
        start = time.perf_counter()
        if not assumptions and self.rlimit > 0:
            first = fast_solver(self.rlimit)
            first.set("timeout", self.timeout_ms)
            _assert_all(first, self)
            if first.check() == z3.unsat:
                self.answered_by = "smt core after preprocessing"
                return z3.unsat
        spent = int((time.perf_counter() - start) * 1000)
        self.set("timeout", max(1, self.timeout_ms - spent))
        self.answered_by = "default solver"
        return super().check(*assumptions)


def _assert_all(into: z3.Solver, source: z3.Solver) -> None:
    """Assert every assertion of ``source`` in ``into``: the same terms, passed through Z3's C
    API without wrapping each in a Python object (a third of the first attempt's set-up)."""
    ctx = source.ctx.ref()
    vector = source.assertions()  # keeps the terms referenced while they are asserted
    for k in range(z3.Z3_ast_vector_size(ctx, vector.vector)):
        z3.Z3_solver_assert(ctx, into.solver, z3.Z3_ast_vector_get(ctx, vector.vector, k))
