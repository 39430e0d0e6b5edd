"""Merging rows into a tiled dimension is a bitcast exactly when the rows fill whole tiles.

``reshape X[2,N,128] -> X[2*N,128]`` (both with the TPU tiling of X) keeps every element's
bits **iff** ``N`` is a multiple of the first tile's row count: 8 for f32 ``T(8,128)`` and
for bf16 ``(8,128)(2,1)`` (the ``(2,1)`` word tile pairs rows inside a tile, so it adds no
condition), 16 for bf16 ``(16,128)(2,1)``, 32 for s8 ``(32,128)(4,1)``. The condition was
derived by ``layout_algebra.decide.conditions`` (grid of exact decisions + fit) and is proved here
both ways: **sufficient** (the bitcast is proved for every ``N`` with ``N % t == 0``) and
**necessary** (for every ``N >= 1`` with ``N % t != 0``, the allocations differ or the last
output row's first element ``[2*N - 1, 0]`` is not where its input element is).
"""

import sympy

from layout_algebra.decide import condition_fit, conditions
from layout_algebra.decide.bitcast import reshape_is_bitcast
from layout_algebra.model.symbols import dim_symbol

CLAIM = "reshape X[2,N,128] -> X[2N,128] (TPU tiles) is a bitcast iff N % rows-per-tile == 0"

CASES = (
    ("f32", "T(8,128)", 8),
    ("bf16", "T(8,128)(2,1)", 8),
    ("bf16", "T(16,128)(2,1)", 16),
    ("s8", "T(32,128)(4,1)", 32),
)


def witness_grid(rows):
    """Sizes to choose the necessity query's witness element from: the small ones, and both
    sides of one and two tiles (where the allocations agree and only positions can differ).
    Z3 then proves the witness for every size; the grid only has to suggest it."""
    return sorted({*range(1, 8), *range(rows - 3, rows + 4), 2 * rows - 1, 2 * rows + 1})


def prove_claim():
    n = dim_symbol("N")
    results = []
    for element, tiles, rows in CASES:
        src, dst = f"{element}[2,N,128]{{2,1,0:{tiles}}}", f"{element}[2*N,128]{{1,0:{tiles}}}"
        condition = sympy.Eq(sympy.Mod(n, rows), 0)
        results += reshape_is_bitcast(src, dst, assume=f"N % {rows} == 0").proofs  # sufficient
        claim = conditions.bitcast_claim(src, dst, "reshape")
        table = condition_fit.sample(claim.decide, claim.symbols, witness_grid(rows))
        conditions.prove_necessary(claim, condition, table, record=results)  # necessary
    return results
