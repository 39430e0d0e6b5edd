"""What the oracle asks: Hypothesis strategies for pinned layouts, arrays, reshapes and transposes,
and the questions (queries for ``tpu_worker.py``) built from them.

Used by the live suite (``test_oracle.py``) and by ``scripts/regenerate_golden.py``.
"""

from __future__ import annotations

from harness import collect, jax_fields, numpy_dtype
from hypothesis import strategies as st
from support.strategies import array_shapes

from layout_algebra.interop import NotExpressible
from layout_algebra.model import ArrayShape, Layout, Tile, primitive_type
from layout_algebra.target import tpu

DTYPES = [("f32", 0), ("bf16", 0), ("s8", 0), ("pred", 0), ("s4", 4), ("f16", 0), ("u8", 0), ("s32", 0)]
TILES_2D = [(8, 128), (4, 128), (2, 128), (1, 128), (16, 128), (32, 128), (8, 256)]
PACKING = [(2, 1), (4, 1), (8, 1)]


@st.composite
def pinned_shapes(draw: st.DrawFn, *, min_rank: int = 1) -> ArrayShape:
    """A layout a JAX user could pin: a permutation, TPU-style or unusual tiles, E(4) for s4."""
    dtype, e = draw(st.sampled_from(DTYPES))
    rank = draw(st.integers(min_rank, 4))
    dims = tuple(draw(st.lists(st.integers(1, 300), min_size=rank, max_size=rank)))
    m2m = tuple(draw(st.permutations(range(rank))))
    tiles: list[Tile] = []
    kind = draw(st.sampled_from(["2d", "2d", "2d", "1d", "none"] if rank >= 2 else ["1d", "none"]))
    if kind == "2d":
        tiles.append(Tile(draw(st.sampled_from(TILES_2D))))
    elif kind == "1d":
        tiles.append(Tile((draw(st.sampled_from([128, 256, 512, 1024])),)))
        if draw(st.booleans()):
            tiles.append(Tile((128,)))
    if tiles and draw(st.booleans()):
        tiles.append(Tile(draw(st.sampled_from(PACKING))))
    layout = Layout(m2m, tuple(tiles), element_size_in_bits=e)
    return ArrayShape(primitive_type(dtype), dims, (False,) * rank, layout)


@st.composite
def arrays(draw: st.DrawFn) -> tuple[str, tuple[int, ...]]:
    dtype, _ = draw(st.sampled_from(DTYPES))
    rank = draw(st.integers(0, 4))
    dims = tuple(
        draw(st.lists(st.integers(1, 300) | st.sampled_from([1, 8, 128, 1024]), min_size=rank, max_size=rank))
    )
    return dtype, dims


@st.composite
def reshapes(draw: st.DrawFn) -> tuple[ArrayShape, ArrayShape]:
    src = draw(pinned_shapes(min_rank=2))
    dims = list(src.dimensions)
    if draw(st.booleans()) and len(dims) >= 2:  # merge two adjacent dims
        k = draw(st.integers(0, len(dims) - 2))
        dst_dims = [*dims[:k], dims[k] * dims[k + 1], *dims[k + 2 :]]
    else:  # split a dim by one of its factors (or add a leading 1)
        k = draw(st.integers(0, len(dims) - 1))
        factors = [f for f in range(2, dims[k]) if dims[k] % f == 0] or [1]
        f = draw(st.sampled_from(factors))
        dst_dims = [*dims[:k], f, dims[k] // f, *dims[k + 1 :]]
    dst_dims = tuple(dst_dims)
    if draw(st.booleans()):
        dst = tpu.default_layout(src.element_type, dst_dims)
    else:  # the source's tiles, descending order
        layout = src.effective_layout
        dst = ArrayShape(
            src.element_type,
            dst_dims,
            (False,) * len(dst_dims),
            Layout(
                tuple(range(len(dst_dims) - 1, -1, -1)),
                layout.tiles,
                element_size_in_bits=layout.element_size_in_bits,
            ),
        )
    return src, dst


@st.composite
def transposes(draw: st.DrawFn) -> tuple[ArrayShape, ArrayShape, tuple[int, ...]]:
    src = draw(pinned_shapes(min_rank=2))
    perm = tuple(draw(st.permutations(range(src.rank))))
    dst_dims = tuple(src.dimensions[p] for p in perm)
    layout = src.effective_layout
    if draw(st.booleans()):  # layout-preserving: the same physical order
        inverse = {p: k for k, p in enumerate(perm)}
        m2m = tuple(inverse[d] for d in layout.minor_to_major)
        dst = ArrayShape(
            src.element_type,
            dst_dims,
            (False,) * src.rank,
            Layout(m2m, layout.tiles, element_size_in_bits=layout.element_size_in_bits),
        )
    else:
        dst = tpu.default_layout(src.element_type, dst_dims)
    return src, dst, perm


def jaxable(*shapes: ArrayShape) -> bool:
    """Whether a JAX ``Layout`` can pin every one of ``shapes`` (no ``L(n)``, ...)."""
    try:
        for shape in shapes:
            jax_fields(shape)
    except NotExpressible:
        return False
    return True


def questions(n: int) -> dict[str, list[tuple[tuple, dict]]]:
    """Per category, ``n`` drawn cases (fewer where JAX cannot pin them), each with its query."""
    out: dict[str, list[tuple[tuple, dict]]] = {
        "bytes": [],
        "default": [],
        "reshape": [],
        "transpose": [],
        "parse": [],
    }
    for s in collect(pinned_shapes(), n):
        if jaxable(s):
            out["bytes"].append(
                (
                    (s,),
                    {
                        "kind": "bytes",
                        "dtype": numpy_dtype(s),
                        "dims": list(s.dimensions),
                        "layout": jax_fields(s),
                    },
                )
            )
    for dtype, dims in collect(arrays(), n):
        probe = ArrayShape(primitive_type(dtype), dims, (False,) * len(dims))
        out["default"].append(
            ((dtype, dims), {"kind": "default", "dtype": numpy_dtype(probe), "dims": list(dims)})
        )
    for s, d in collect(reshapes(), n):
        if jaxable(s, d):
            out["reshape"].append(
                (
                    (s, d, None),
                    {
                        "kind": "reshape",
                        "dtype": numpy_dtype(s),
                        "src_dims": list(s.dimensions),
                        "src": jax_fields(s),
                        "dst_dims": list(d.dimensions),
                        "dst": jax_fields(d),
                    },
                )
            )
    for s, d, p in collect(transposes(), n):
        if jaxable(s, d):
            out["transpose"].append(
                (
                    (s, d, p),
                    {
                        "kind": "transpose",
                        "dtype": numpy_dtype(s),
                        "src_dims": list(s.dimensions),
                        "src": jax_fields(s),
                        "dst_dims": list(d.dimensions),
                        "dst": jax_fields(d),
                        "permutation": list(p),
                    },
                )
            )
    for shape in collect(array_shapes(max_dim=300, combine=True), n):
        out["parse"].append(((str(shape),), {"kind": "parse", "text": str(shape)}))
    return out
