"""TPU tilings of power-of-two sizes only move index bits: they are Triton linear layouts.

A linear layout over GF(2) (Triton's ``LinearLayout``) sends an index to the XOR of the
*bases* of its set bits. ``to_linear_layout`` reads the bases from the layout map (the
offset of ``2^j`` along each dimension) and finds them distinct powers of two. Then the
XOR of the bases of an index's bits is their *sum*, and the claim is that the layout is
exactly that sum: ``offset(i) = Σ_k Σ_j bit_j(i_k) · base_kj`` on every element, for the
TPU tilings of f32 ``(8,128)``, bf16 ``(8,128)(2,1)``, s8 ``(32,128)(4,1)`` and s4
``(8,128)(8,1)E(4)`` (proved by the exact decision on concrete sizes). A tile that pads
breaks it: ``f32[8,8]{1,0:T(3,4)}`` stores row 3 at 24 (the second row of tiles), not at
``4 XOR 8 = 12`` (refuted; the solver's counterexample is one such element).

For symbolic sizes the number of index bits is not fixed, but the part inside a tile is:
for every N and M, the offset of ``f32[N,M]{1,0:T(8,128)}`` modulo the 1024-element tile
is the XOR of the bases of the low bits (``i0 mod 8``, ``i1 mod 128``) read from one tile.
It is proved as two lemmas that compose by substitution: for all N, M, the offset modulo
the tile is the offset *within one tile* ``f32[8,128]{1,0:T(8,128)}`` of the index modulo
the tile's extents (an integer query, linear once the prover reads off the digits); and on
that one tile's 1024 elements, the offset is the bit sum (concrete sizes, bit-vectors). The
two agree on the value ``offset_tile(i0 mod 8, i1 mod 128)``, so the offset modulo the
tile equals the bit sum of the low bits for every N, M and element. (Asked as one
query, the bit sum's twenty divisions by powers of two meet the layout's product of size
symbols in one nonlinear integer problem: 0.3-7 s, erratic, against tens of milliseconds
for the two lemmas.)
"""

import time

from _common import position

from layout_algebra import prove
from layout_algebra.interop.triton import to_linear_layout
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.prove.result import combined_lemmas

CLAIM = "XLA:TPU tilings of power-of-two sizes are bit permutations: the offset is the XOR of its index bits' bases"

EXPECTED = ("proved", "proved", "proved", "proved", "proved", "refuted")

SHAPES = (
    "f32[16,256]{1,0:T(8,128)}",
    "bf16[32,256]{1,0:T(8,128)(2,1)}",
    "s8[64,256]{1,0:T(32,128)(4,1)}",
    "s4[16,256]{1,0:T(8,128)(8,1)E(4)}",
)


def bit_sum(bases):
    """``i -> Σ_k Σ_j bit_j(i_k) · base_kj``: the XOR of the bases when they are distinct powers of two."""

    def f(index, ar):
        total = 0
        for i, vectors in zip(index, bases, strict=True):
            for j, base in enumerate(vectors):
                total = total + ar.mod(ar.floordiv(i, 2**j), 2) * base
        return total

    return f


def offsets_of_bits(shape):
    """The offset of ``2^j`` along each dimension, read from the layout map (for a layout
    ``to_linear_layout`` refuses)."""
    m = layout_map(shape)
    out = []
    for k, d in enumerate(m.shape.dimensions):
        unit = [0] * m.rank
        vectors = []
        for j in range(d.bit_length() - 1):
            unit[k] = 2**j
            vectors.append(m.forward(unit))
        out.append(vectors)
    return out


def offset_is_bit_sum(shape, bases):
    """Z3 on the layout's stages against the bit sum, in bit-vectors: a few tens of
    milliseconds here, where linear integer arithmetic (the prover's first attempt on
    concrete sizes) runs out of time on a dozen divisions by powers of two."""
    return prove.equivalent(
        prove.function_map(shape, position(shape), name="offset"),
        prove.function_map(shape, bit_sum(bases), name="XOR of bases"),
        encoding="bit-vector",
    )


def prove_claim():
    results = [in_tile_offset_is_bit_sum("f32[N,M]{1,0:T(8,128)}", "f32[8,128]{1,0:T(8,128)}")]
    for shape in SHAPES:
        bases = [[v[0] for v in vectors] for _, vectors in to_linear_layout(shape).bases]
        assert all(b & (b - 1) == 0 for vectors in bases for b in vectors)
        assert len({b for vectors in bases for b in vectors}) == sum(map(len, bases))
        results.append(offset_is_bit_sum(shape, bases))
    padded = "f32[8,8]{1,0:T(3,4)}"
    results.append(offset_is_bit_sum(padded, offsets_of_bits(padded)))
    return results


def in_tile_offset_is_bit_sum(shape, tile):
    """For symbolic sizes: the offset modulo one tile is the XOR of the low bits' bases of
    ``tile``, from two lemmas (the module docstring): ``offset(i) mod size ==
    offset_tile(i mod extents)`` for all sizes, and ``offset_tile == bit sum`` on the tile."""
    start = time.perf_counter()
    ll = to_linear_layout(tile)
    bases = [[v[0] for v in vectors] for _, vectors in ll.bases]
    size = ll.out_dims[0][1]
    extents = [1 << len(vectors) for vectors in bases]
    assert list(layout_map(tile).shape.dimensions) == extents  # the tile is one tile: its box is the extents
    p, in_tile = position(shape), position(tile)
    reduced = prove.equivalent(
        prove.function_map(shape, lambda i, ar: ar.mod(p(i, ar), size), name="offset in its tile"),
        prove.function_map(
            shape,
            lambda i, ar: in_tile(tuple(ar.mod(v, e) for v, e in zip(i, extents, strict=True)), ar),
            name=f"offset in {tile} of the index modulo {tuple(extents)}",
        ),
    )
    one_tile = offset_is_bit_sum(tile, bases)
    claim = f"offset of {shape} modulo {size} equals the XOR of the bases of the index bits modulo {tuple(extents)}"
    return combined_lemmas(claim, (reduced, one_tile), start)
