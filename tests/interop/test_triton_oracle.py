"""The linear layouts against Triton's own ``LinearLayout`` (opt-in: marker ``triton``).

Needs the ``[triton]`` extra (``pip install triton``: no GPU is needed for its Python
bindings of ``LinearLayout``; run ``pytest -m triton tests/interop/test_triton_oracle.py``).
``importorskip`` is inside each test so that the default run, which deselects these
tests, never reports a skip. Compared: Triton's ``toString``, its ``apply`` on every
element against the XLA layout map, its injectivity, surjectivity and inverse.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from support.strategies_linear import gf2_layouts, power_of_two_layouts

from layout_algebra.interop.triton import LinearLayout, to_linear_layout
from layout_algebra.meaning.layout_map import layout_map

pytestmark = pytest.mark.triton


def _triton_layout(ll: LinearLayout):
    module = pytest.importorskip("triton._C.libtriton.linear_layout")
    return module.LinearLayout.from_bases(
        [(name, [list(v) for v in vectors]) for name, vectors in ll.bases],
        [name for name, _ in ll.out_dims],
        [size for _, size in ll.out_dims],
        False,
    )


@settings(max_examples=1000)
@given(power_of_two_layouts())
def test_triton_applies_the_exported_bases_as_the_layout_map(case: tuple[str, str, int]) -> None:
    text, _, _ = case
    m = layout_map(text)
    for unit in ("element", "bit"):
        ll = to_linear_layout(text, unit=unit)
        theirs = _triton_layout(ll)
        assert str(theirs) == "\n" + str(ll)
        for i in m.elements():
            assert theirs.apply({f"dim{k}": v for k, v in enumerate(i)}) == {
                "offset": m.forward(i, unit=unit)
            }
        assert theirs.is_injective()
        assert theirs.is_surjective() == (unit == "element" or m.element_bits == 1)
    inverse = _triton_layout(to_linear_layout(text)).invert()
    assert [(n, [list(v) for v in b]) for n, b in to_linear_layout(text).inverse().bases] == [
        (n, [list(v) for v in b]) for n, b in inverse.bases
    ]


@settings(max_examples=1000)
@given(gf2_layouts())
def test_rank_inverse_and_printing_agree_with_triton(ll: LinearLayout) -> None:
    theirs = _triton_layout(ll)
    assert str(theirs) == "\n" + str(ll)
    assert theirs.is_injective() == ll.is_injective
    assert theirs.is_surjective() == ll.is_surjective
    names = [n for n, _ in ll.in_dims]
    for values in itertools.product(*(range(size) for _, size in ll.in_dims)):
        got = theirs.apply(dict(zip(names, values, strict=True)))
        assert tuple(got[n] for n, _ in ll.out_dims) == ll.apply(values)
    if ll.is_injective and ll.is_surjective:
        mine = ll.inverse()
        assert [(n, [list(v) for v in b]) for n, b in mine.bases] == [
            (n, [list(v) for v in b]) for n, b in theirs.invert().bases
        ]
