"""Stages: the small index transformations every layout is built from, and the pipeline builder.

Interpreters (SymPy closed forms in :mod:`layout_algebra.meaning.layout_map`, Z3, NumPy, code
generation, figures) walk these stages; they never re-derive a layout's meaning.
"""

from layout_algebra.meaning.stages.arith import ARITHMETIC, Arithmetic
from layout_algebra.meaning.stages.pipeline import (
    LINEARIZE,
    PHYSICAL_ORDER,
    TAIL_PADDING,
    TILE,
    TO_BITS,
    Step,
    combine_groups,
    layout_stages,
    layout_steps,
    offset_form,
    same_offset_form,
    tile_stages,
)
from layout_algebra.meaning.stages.stages import (
    AlignTail,
    Combine,
    Linearize,
    Pad,
    PrependUnitDims,
    Split,
    Stage,
    ToBits,
    Transpose,
    ceil_div,
    round_up_size,
)

__all__ = [
    "ARITHMETIC",
    "LINEARIZE",
    "PHYSICAL_ORDER",
    "TAIL_PADDING",
    "TILE",
    "TO_BITS",
    "AlignTail",
    "Arithmetic",
    "Combine",
    "Linearize",
    "Pad",
    "PrependUnitDims",
    "Split",
    "Stage",
    "Step",
    "ToBits",
    "Transpose",
    "ceil_div",
    "combine_groups",
    "layout_stages",
    "layout_steps",
    "offset_form",
    "round_up_size",
    "same_offset_form",
    "tile_stages",
]
