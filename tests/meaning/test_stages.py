"""The stages and the pipeline, checked by running them on every index of small boxes."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from support.oracles import nested_tiling
from support.strategies_maps import small_layout_shapes

from layout_algebra.meaning.sizes import first_tile_dimensions, physical_dimensions, tiled_dimensions
from layout_algebra.meaning.stages.pipeline import LINEARIZE, PHYSICAL_ORDER, TILE, TO_BITS, layout_steps


def every_index(box: tuple[int, ...]) -> itertools.product:
    return itertools.product(*(range(d) for d in box))


@pytest.mark.slow
@settings(max_examples=120)
@given(small_layout_shapes())
def test_a_carried_dimension_keeps_its_index_values(shape) -> None:
    """``carried_dimension(k) == j`` means: the stage copies coordinate ``k`` to ``j``."""
    for stage in (stage for step in layout_steps(shape) for stage in step.stages):
        for k in range(len(stage.domain)):
            j = stage.carried_dimension(k)
            if j is None:
                continue
            assert stage.range[j] >= stage.domain[k]
            for x in itertools.islice(every_index(stage.domain), 2000):
                assert stage.forward(x)[j] == x[k], (stage.describe(), k, j, x)


@pytest.mark.slow
@settings(max_examples=120)
@given(small_layout_shapes())
def test_steps_chain_and_carry_their_roles(shape) -> None:
    steps = layout_steps(shape)
    assert steps[0].role == PHYSICAL_ORDER and steps[-1].role == TO_BITS
    assert [s.role for s in steps].count(LINEARIZE) == 1
    assert len([s for s in steps if s.role == TILE]) == len(shape.layout.tiles)
    for before, after in itertools.pairwise(steps):
        assert before.range == after.domain


def test_sizes_are_cuts_of_the_pipeline() -> None:
    # f32[2,3,4]{0,2,1}: dim 0 fastest, then dim 2, dim 1 slowest -> physical [3, 4, 2];
    # T(2,2) on the last two: [4/2, 2/2, 2, 2]; then (2,1) on [2, 2] again: [1, 2, 2, 1].
    shape = "f32[2,3,4]{0,2,1:T(2,2)(2,1)}"
    assert physical_dimensions(shape) == (3, 4, 2)
    assert first_tile_dimensions(shape) == (3, 2, 1, 2, 2)
    assert tiled_dimensions(shape) == (3, 2, 1, 1, 2, 2, 1)


def test_the_oracle_reproduces_the_documents_example() -> None:
    # The tiled-layout document, Figure 1: f32[3,5] in 2x2 tiles, element (2,3) at 17 of 24 slots.
    assert nested_tiling((3, 5), (1, 0), [(2, 2)], (2, 3)) == (17, (2, 3, 2, 2))
