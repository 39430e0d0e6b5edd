"""Hypothesis strategies for linear layouts: XLA layouts with power-of-two sizes (each one a
linear layout over GF(2)) and random linear layouts given by their bases."""

from __future__ import annotations

from hypothesis import strategies as st

from layout_algebra.interop.triton import LinearLayout

#: (type, packing sub-tile rows, E(n) text)
TYPES = [("f32", 1, ""), ("bf16", 2, ""), ("s8", 4, ""), ("s4", 8, "E(4)")]


@st.composite
def power_of_two_layouts(draw: st.DrawFn) -> tuple[str, str, int]:
    """(shape text, dtype, E(n)) of a random tiled layout with power-of-two sizes and no padding."""
    dtype, p, e = draw(st.sampled_from(TYPES))
    rank = draw(st.integers(1, 3))
    logs = [draw(st.integers(0, 4)) for _ in range(rank)]
    dims = [1 << v for v in logs]
    order = draw(st.permutations(range(rank)))
    physical = [dims[k] for k in reversed(order)]  # major to minor
    tiles = []
    if draw(st.booleans()):
        width = draw(st.integers(1, rank))
        first = [1 << draw(st.integers(0, d.bit_length() - 1)) for d in physical[-width:]]
        tiles.append("(" + ",".join(map(str, first)) + ")")
        if draw(st.booleans()) and len(first) >= 2 and first[-2] % p == 0 and p > 1:
            tiles.append(f"({p},1)")  # the packing sub-tile, as on TPU
        elif draw(st.booleans()):
            second = [
                1 << draw(st.integers(0, t.bit_length() - 1))
                for t in first[-draw(st.integers(1, len(first))) :]
            ]
            tiles.append("(" + ",".join(map(str, second)) + ")")
    extra = ("T" + "".join(tiles) if tiles else "") + e
    text = f"{dtype}[{','.join(map(str, dims))}]{{{','.join(map(str, order))}{':' + extra if extra else ''}}}"
    return text, dtype, 4 if e else 0


@st.composite
def gf2_layouts(draw: st.DrawFn) -> LinearLayout:
    ins = [draw(st.integers(0, 3)) for _ in range(draw(st.integers(1, 2)))]
    outs = [draw(st.integers(0, 3)) for _ in range(draw(st.integers(1, 2)))]
    bases = {
        f"in{k}": [[draw(st.integers(0, (1 << w) - 1)) for w in outs] for _ in range(n)]
        for k, n in enumerate(ins)
    }
    return LinearLayout.from_bases(bases, {f"out{j}": 1 << w for j, w in enumerate(outs)})
