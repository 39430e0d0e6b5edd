"""Every stage kind is injective and in bounds, for all sizes: the lemmas concrete proofs reuse.

A layout is a pipeline of stages (transpose, prepend unit dims, combine, pad, split,
linearize, tail padding). Each kind, with its structure fixed (a permutation, which dims
are split) and every size a symbol, is proved once: injective on its domain box and
into its range box, for all sizes (tile sizes and ``L(n)`` at least 1). A concrete
layout is then proved by checking that each of its stages is an instance of such a
general stage and that the boxes chain; no solver call per layout (``prove.injective``,
``method="auto"``). Here: every kind at ranks 1 to 3, every permutation and split start.
"""

import itertools

from layout_algebra import prove
from layout_algebra.meaning.stages.stages import (
    AlignTail,
    Combine,
    Linearize,
    Pad,
    PrependUnitDims,
    Split,
    Transpose,
)
from layout_algebra.prove.general import generalize

CLAIM = "every stage kind is injective and in bounds for all sizes (ranks 1-3)"


def examples():
    """One concrete stage of each kind and structure; ``generalize`` makes it general."""
    for rank in (1, 2, 3):
        dims = tuple(range(2, 2 + rank))
        for order in itertools.permutations(range(rank)):
            yield Transpose(domain=dims, permutation=order)
        yield PrependUnitDims(domain=dims, count=1)
        yield Pad(domain=dims, padded=tuple(d + 1 for d in dims))
        yield Linearize(domain=dims)
        for start in range(rank):
            yield Split(domain=dims[:start] + (4,) * (rank - start), start=start, tile=(2,) * (rank - start))
        if rank >= 2:
            yield Combine(domain=dims, groups=(tuple(range(rank)),))
    yield AlignTail(domain=(5,), alignment=4)


def prove_claim():
    return [prove.general_stage_lemma(generalize(stage)[0]) for stage in examples()]
