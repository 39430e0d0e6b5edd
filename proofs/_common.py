"""Helpers shared by the catalog's proofs (not a claim itself)."""

from __future__ import annotations

from layout_algebra import prove
from layout_algebra.meaning.layout_map import layout_map


def position(shape: str):
    """The element-position function of ``shape``'s layout, for any arithmetic."""
    m = layout_map(shape)
    through = len(m.stages) - 1
    return lambda index, ar: m.apply(index, ar, through=through)[0]


def same_positions(box: str, left, right, *, names=("left", "right"), assume=None):
    """Prove ``left(i) == right(i)`` on every index ``i`` of the shape ``box``."""
    return prove.equivalent(
        prove.function_map(box, left, name=names[0]),
        prove.function_map(box, right, name=names[1]),
        assume=assume,
    )
