"""``prove.equivalent(..., encoding="bit-vector")``: the concrete question asked in bit-vectors only.

The answer must be the one the default (integer first, then bit-vectors) gives, checked
here against enumerating every element of small maps: a proof where the maps agree on every
element, a refutation with a counterexample that really differs where they do not.
"""

from __future__ import annotations

import itertools

import pytest

from layout_algebra import prove
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.model.errors import InvalidArgumentError

PAIRS = [
    # (shape, other shape): the same box, the same or different offsets
    ("f32[8,8]{1,0:T(2,4)}", "f32[8,8]{1,0:T(2,4)}"),
    ("f32[8,8]{1,0:T(2,4)}", "f32[8,8]{1,0:T(4,4)}"),
    ("bf16[16,8]{1,0:T(8,4)(2,1)}", "bf16[16,8]{1,0:T(8,4)(2,1)}"),
    ("bf16[16,8]{1,0:T(8,4)(2,1)}", "bf16[16,8]{1,0:T(8,4)}"),
    ("f32[6,5]{0,1}", "f32[6,5]{0,1:T(1)}"),
    ("s8[8,12]{1,0:T(4,4)(4,1)}", "s8[8,12]{0,1:T(4,4)(4,1)}"),
]


def every_element_agrees(a: str, b: str) -> bool:
    ma, mb = layout_map(a), layout_map(b)
    return all(ma.forward(i) == mb.forward(i) for i in itertools.product(*map(range, ma.logical_dimensions)))


@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_bit_vectors_answer_as_enumeration_and_the_default_do(a: str, b: str) -> None:
    result = prove.equivalent(a, b, encoding="bit-vector")
    assert result.encoding == "bit-vector"
    assert result.status == prove.equivalent(a, b).status
    if every_element_agrees(a, b):
        assert result.status == "proved", str(result)
    else:
        assert result.status == "refuted", str(result)
        element = result.counterexample["element"]
        assert layout_map(a).forward(element) != layout_map(b).forward(element)


def test_bit_vectors_need_concrete_sizes() -> None:
    with pytest.raises(InvalidArgumentError, match="concrete sizes"):
        prove.equivalent("f32[N,128]{1,0:T(8,128)}", "f32[N,128]{1,0}", encoding="bit-vector")


def test_an_unknown_encoding_is_a_clear_error() -> None:
    with pytest.raises(InvalidArgumentError, match="'integer-ish'"):
        prove.equivalent("f32[8]{0}", "f32[8]{0}", encoding="integer-ish")


def test_the_pairs_hold_both_answers() -> None:
    """Not vacuous: some pairs agree everywhere and some do not."""
    answers = {every_element_agrees(a, b) for a, b in PAIRS}
    assert answers == {True, False}
