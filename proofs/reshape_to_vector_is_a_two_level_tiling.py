"""A tiled matrix reshaped to a vector is a bitcast under a multi-level tiling of the vector.

``f32[R,256]{1,0:T(8,128)}`` reshaped to ``f32[256R]`` keeps every element in place when
the vector is tiled ``T(256)(8,128)``: cut it into rows of 256, then tile those rows as the
matrix was (the layout ``views.view(..., Reshape(...)).as_layout()`` reads back, and the
one ``suggest_bitcast_layout`` gives for 16 rows). XLA allocates to the *first* tile, so
the sizes agree only when R is a multiple of 8 (at R = 7 the vector's allocation is 7
rows of 256, the matrix's 8); with the issue's ``T(2048)(256)(8,128)`` the first tile pads
to whole 8-row tiles, and the reshape is a bitcast for every R.
"""

from layout_algebra.decide.bitcast import reshape_is_bitcast

CLAIM = "reshape f32[R,256]{1,0:T(8,128)} -> f32[256R]: a bitcast under T(2048)(256)(8,128) for all R, under T(256)(8,128) when R % 8 == 0"

#: the last result: T(256)(8,128) for every R is refuted (R = 7: the allocations differ)
EXPECTED = ("proved", "proved", "proved", "proved", "proved", "proved", "refuted")

MATRIX = "f32[R,256]{1,0:T(8,128)}"


def prove_claim():
    always = reshape_is_bitcast(MATRIX, "f32[M]{0:T(2048)(256)(8,128)}", assume="M == 256*R")
    whole_tiles = reshape_is_bitcast(MATRIX, "f32[M]{0:T(256)(8,128)}", assume="M == 256*R and R % 8 == 0")
    not_always = reshape_is_bitcast(MATRIX, "f32[M]{0:T(256)(8,128)}", assume="M == 256*R")
    assert always.status == "proved" and whole_tiles.status == "proved", (always, whole_tiles)
    return [*always.proofs, *whole_tiles.proofs, _refutation(not_always)]


def _refutation(verdict):
    """The allocation lemma that failed, with its counterexample (re-checked concretely by the decision)."""
    assert verdict.status == "refuted", verdict
    return next(p for p in verdict.proofs if p.status == "refuted")
