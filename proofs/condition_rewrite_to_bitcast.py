"""Rewriting a root reshape or transpose into a bitcast is safe exactly when the size condition holds.

The algebraic simplifier replaces a ``reshape``/``transpose`` that moves no data by a
``bitcast``. Over a symbolic size ``N`` the rewrite is safe (the verifier proves the same
root buffer, bit for bit) **iff**:

* ``bf16[3,N,128] -> bf16[3N,128]`` with ``(8,128)(2,1)`` tiles: ``N % 8 == 0`` (the merged
  rows fill whole tiles; the ``(2,1)`` word tile adds nothing);
* ``s8[2,N,128] -> s8[2N,128]`` with ``(32,128)(4,1)`` tiles: ``N % 32 == 0``;
* ``transpose f32[N,128]{1,0} -> f32[128,N]{1,0}``: ``N == 1`` (a transpose of a row-major
  matrix moves data unless it has one row).

The conditions were derived by ``layout_algebra.decide.conditions`` (exact verifier decisions on a
grid of sizes, then a fit) and are proved both ways, for all sizes ``>= 1``: **sufficient**
(``verify_rewrite`` under the condition) and **necessary** (Z3, in the verifier's own
encoding: wherever the condition fails, the bitcast changes the buffer's size — invalid
HLO, which XLA's verifier refuses — or a witness root element such as ``[3*N - 1, 0]``
has different values before and after; these modules are pure data movement, so that
difference is a real one). The witness is suggested by the decisions at a few sizes around
one and two tiles (:func:`witness_grid`): for the ``s8`` merge every N up to 16 is a size
change (8192 bytes against 4096), so it is chosen where the sizes agree (N = 29..31, 63).
"""

import sympy

from layout_algebra.decide import condition_fit, conditions
from layout_algebra.hlo import verify_rewrite
from layout_algebra.hlo.rewrite_conditions import rewrite_claim
from layout_algebra.model.symbols import dim_symbol

CLAIM = (
    "rewrite reshape/transpose -> bitcast is safe iff N % rows-per-tile == 0 (merge) or N == 1 (transpose)"
)

N = dim_symbol("N")


def _module(param: str, root: str, op: str) -> str:
    return f"HloModule m\nENTRY e {{\n  p = {param} parameter(0)\n  ROOT r = {root} {op}\n}}"


CASES = (
    (
        "bf16[3,N,128]{2,1,0:T(8,128)(2,1)}",
        "bf16[3*N,128]{1,0:T(8,128)(2,1)}",
        "reshape(p)",
        sympy.Eq(sympy.Mod(N, 8), 0),
        8,
    ),
    (
        "s8[2,N,128]{2,1,0:T(32,128)(4,1)}",
        "s8[2*N,128]{1,0:T(32,128)(4,1)}",
        "reshape(p)",
        sympy.Eq(sympy.Mod(N, 32), 0),
        32,
    ),
    ("f32[N,128]{1,0}", "f32[128,N]{1,0}", "transpose(p), dimensions={1,0}", sympy.Eq(N, 1), 1),
)


def witness_grid(rows):
    """Sizes to choose the necessity query's witness element from: the small ones, and both
    sides of one and two tiles of ``rows`` (where the allocations agree and only positions can
    differ). Z3 then proves the witness for every size; the grid only has to suggest it."""
    return sorted({*range(1, 8), *range(max(1, rows - 3), rows + 4), 2 * rows - 1, 2 * rows + 1})


def prove_claim():
    results = []
    for param, root, op, condition, rows in CASES:
        before, after = _module(param, root, op), _module(param, root, "bitcast(p)")
        results.append(verify_rewrite(before, after, assume=[N >= 1, condition]))  # sufficient
        claim = rewrite_claim(before, after)
        table = condition_fit.sample(claim.decide, claim.symbols, witness_grid(rows))
        conditions.prove_necessary(claim, condition, table, record=results)  # necessary
    return results
