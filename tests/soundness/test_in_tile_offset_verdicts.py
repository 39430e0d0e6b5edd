"""Symbolic equivalences about the offset inside a tile, true and false, against enumeration.

``prove.equivalent`` on maps of ``f32[N,M]`` with symbolic sizes is asked through Z3's
solver portfolio (``prove/portfolio.py``). The claims are the lemmas the proof catalog
composes (``proofs/power_of_two_tilings_are_bit_permutations.py``: the offset modulo the
tile is the tile's own offset of the index modulo the tile's extents; on one tile, the
offset is the sum of the bases of the index bits) and adversarial variants that are false
(a wrong modulus, a wrong extent, a swapped base, a padded tile). The oracle enumerates
every element at sizes around one and two tiles, with positions from the concrete layout
map: a claim true there must not be refuted, a claim false there must be refuted (never
proved), and every counterexample must differ when evaluated.
"""

from __future__ import annotations

import itertools

import pytest

from layout_algebra import prove
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.meaning.stages.arith import ARITHMETIC

SHAPE = "f32[N,M]{1,0:T(8,128)}"
SIZES = [(n, m) for n in (1, 7, 8, 9, 16, 17) for m in (1, 127, 128, 129, 300)]


def offset(shape: str):
    m = layout_map(shape)
    through = len(m.stages) - 1
    return lambda index, ar: m.apply(index, ar, through=through)[0]


def bit_sum(bases):
    def f(index, ar):
        total = 0
        for i, vectors in zip(index, bases, strict=True):
            for j, base in enumerate(vectors):
                total = total + ar.mod(ar.floordiv(i, 2**j), 2) * base
        return total

    return f


TRUE_BASES = [[128, 256, 512], [1, 2, 4, 8, 16, 32, 64]]
SWAPPED_BASES = [[128, 512, 256], [1, 2, 4, 8, 16, 32, 64]]


def in_tile(tile: str, extents):
    position = offset(tile)
    return lambda i, ar: position(tuple(ar.mod(v, e) for v, e in zip(i, extents, strict=True)), ar)


CLAIMS = [
    # (name, left, right, true for every size)
    (
        "offset mod 1024 is the tile's offset of i mod (8,128)",
        1024,
        in_tile("f32[8,128]{1,0:T(8,128)}", (8, 128)),
        True,
    ),
    ("offset mod 512 is not it", 512, in_tile("f32[8,128]{1,0:T(8,128)}", (8, 128)), False),
    ("offset mod 2048 is not it", 2048, in_tile("f32[8,128]{1,0:T(8,128)}", (8, 128)), False),
    ("nor with rows modulo 4", 1024, in_tile("f32[8,128]{1,0:T(8,128)}", (4, 128)), False),
    ("nor through a column-major tile", 1024, in_tile("f32[8,128]{0,1:T(128,8)}", (8, 128)), False),
    # (The true "offset mod 1024 is the bit sum of i mod (8,128)" is what the two lemmas compose
    # to; asked at once it is one nonlinear query that Z3 4.13.4, the lowest version allowed,
    # does not decide in 30 s. Its parts are asked above and below, and this false variant.)
    (
        "nor with two bases swapped",
        1024,
        lambda i, ar: bit_sum(SWAPPED_BASES)((ar.mod(i[0], 8), ar.mod(i[1], 128)), ar),
        False,
    ),
]


def enumerate_agreement(modulus: int, right) -> bool:
    """Whether ``offset(i) mod modulus == right(i)`` at every element of every size of SIZES."""
    for n, m in SIZES:
        concrete = layout_map(SHAPE.replace("N", str(n)).replace("M", str(m)))
        for i in itertools.product(range(n), range(m)):
            if concrete.forward(i) % modulus != right(i, ARITHMETIC):
                return False
    return True


@pytest.mark.parametrize(("name", "modulus", "right", "true"), CLAIMS, ids=[c[0] for c in CLAIMS])
def test_symbolic_in_tile_claims_answer_as_enumeration(name, modulus, right, true) -> None:
    assert enumerate_agreement(modulus, right) == true, name  # the table is right
    left = offset(SHAPE)
    result = prove.equivalent(
        prove.function_map(SHAPE, lambda i, ar: ar.mod(left(i, ar), modulus), name=f"offset mod {modulus}"),
        prove.function_map(SHAPE, right, name=name),
    )
    if true:
        assert result.status == "proved", str(result)
        return
    assert result.status == "refuted", str(result)
    found = result.counterexample
    sizes = {str(k): v for k, v in found["sizes"].items()}
    concrete = layout_map(SHAPE.replace("N", str(sizes["N"])).replace("M", str(sizes["M"])))
    element = found["element"]
    assert concrete.forward(element) % modulus != right(element, ARITHMETIC), found


@pytest.mark.parametrize(
    ("tile", "bases", "true"),
    [
        ("f32[8,128]{1,0:T(8,128)}", TRUE_BASES, True),
        ("f32[8,128]{1,0:T(8,128)}", SWAPPED_BASES, False),
        ("f32[8,8]{1,0:T(3,4)}", [[8, 16, 32], [1, 2, 4]], False),  # a padded tile is no bit permutation
    ],
)
def test_the_one_tile_lemma_answers_as_enumeration(tile, bases, true) -> None:
    m = layout_map(tile)
    agree = all(
        m.forward(i) == bit_sum(bases)(i, ARITHMETIC)
        for i in itertools.product(*map(range, m.logical_dimensions))
    )
    assert agree == true
    result = prove.equivalent(
        prove.function_map(tile, offset(tile), name="offset"),
        prove.function_map(tile, bit_sum(bases), name="bit sum"),
        encoding="bit-vector",
    )
    assert result.status == ("proved" if true else "refuted"), str(result)
