"""Stages: the small index transformations every layout is built from, and the pipeline builder.

Interpreters (SymPy closed forms in :mod:`layout_algebra.layout_map`, Z3, NumPy, code
generation, figures) walk these stages; they never re-derive a layout's meaning.
"""

from layout_algebra.stages.arith import ARITHMETIC, Arithmetic
from layout_algebra.stages.pipeline import Step, combine_groups, layout_stages, layout_steps, tile_stages
from layout_algebra.stages.stages import (
    AlignTail,
    Combine,
    Linearize,
    Pad,
    PrependUnitDims,
    Split,
    Stage,
    ToBits,
    Transpose,
)

__all__ = [
    "ARITHMETIC",
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
    "combine_groups",
    "layout_stages",
    "layout_steps",
    "tile_stages",
]
