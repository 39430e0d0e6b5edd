"""JAX's ``Layout`` and ``Format``, and the layouts of a compiled JAX function, as ``Shape``s.

JAX (``jax.experimental.layout``) describes an array's device layout with three fields:
``major_to_minor`` (XLA's ``minor_to_major`` *reversed*), ``tiling`` (the tiles, a tuple of
tuples, ``None`` for none) and ``sub_byte_element_size_in_bits`` (XLA's ``E(n)``). A
``Format`` is a ``Layout`` plus a sharding, whose ``memory_kind`` is XLA's memory space.

Nothing here imports JAX until a JAX object has to be *built*: reading works on any
object with those attributes, and :func:`jax_layout_fields` gives the fields as plain
data, so the package (and these examples) run without JAX installed:

>>> from layout_algebra.interop.jax_layouts import jax_layout_fields, from_jax_layout
>>> fields = jax_layout_fields("bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}")
>>> fields
JaxLayoutFields(major_to_minor=(1, 0, 2, 3), tiling=((8, 128), (2, 1)), sub_byte_element_size_in_bits=0)
>>> str(from_jax_layout(fields, "bf16", (8, 1, 1280, 16384)))
'bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}'

``to_jax_layout(shape)`` builds the real ``jax.experimental.layout.Layout`` (JAX >= 0.7;
``DeviceLocalLayout``, the same fields, on 0.4.30-0.6). ``from_jax_layout`` reads what
XLA layout JAX *asks for* when given a ``Layout`` (JAX's ``Layout._to_xla_layout``):
without ``tiling`` the ``sub_byte_element_size_in_bits`` is dropped, and with a tiling a
sub-byte integer type gets ``E(bits)`` even if the field is 0. So a tiled ``s4`` layout
without ``E(4)`` has no JAX form:

>>> jax_layout_fields("s4[128,256]{1,0:T(8,128)}")
Traceback (most recent call last):
...
layout_algebra.meaning.recover.NotExpressible: s4[128,256]{1,0:T(8,128)}: JAX gives every tiled s4 layout E(4) (Layout._to_xla_layout); XLA's layout without E(4), one byte per element, has no JAX Layout
>>> jax_layout_fields("s4[128,256]{1,0:T(8,128)E(4)}").sub_byte_element_size_in_bits
4

Also not in a ``Layout``: ``L(n)``, index and pointer types, split configs, ``M(n)``
(each raises ``NotExpressible``) and the memory space, which is the ``Format``'s
``sharding.memory_kind`` (``"device"`` S(0), ``"pinned_host"`` S(5), ``"unpinned_host"``
S(6)); :func:`to_jax_format` / :func:`from_jax_format` carry it.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from layout_algebra.meaning.recover import NotExpressible
from layout_algebra.meaning.sizes import meaningful_array
from layout_algebra.model.errors import InvalidArgumentError
from layout_algebra.model.primitive_types import PrimitiveType, primitive_type
from layout_algebra.model.shapes import ArrayShape, Layout, Shape, Tile
from layout_algebra.model.syntax import as_shape, parse_shape

__all__ = [
    "MEMORY_KINDS",
    "JaxLayoutFields",
    "entry_shapes_of_compiled",
    "from_jax_format",
    "from_jax_layout",
    "jax_layout_fields",
    "numpy_dtype_name",
    "shapes_of_compiled",
    "to_jax_format",
    "to_jax_layout",
    "xla_type_name",
]

#: JAX memory kinds and the XLA memory space ``S(n)`` each one is.
MEMORY_KINDS = {"device": 0, "pinned_host": 5, "unpinned_host": 6}

_INSTALL_HINT = "install JAX (pip install 'layout_algebra[jax]') to build JAX objects"


@dataclass(frozen=True)
class JaxLayoutFields:
    """The three fields of a JAX ``Layout``, as plain data (also accepted by ``from_jax_layout``)."""

    major_to_minor: tuple[int, ...]
    tiling: tuple[tuple[int, ...], ...] | None
    sub_byte_element_size_in_bits: int = 0


def xla_type_name(dtype: Any) -> str:
    """The XLA element type name of a NumPy/JAX dtype (or an XLA name, as is).

    >>> import numpy as np, ml_dtypes
    >>> [xla_type_name(d) for d in (np.float32, ml_dtypes.bfloat16, np.bool_, ml_dtypes.int4, "f8e4m3fn")]
    ['f32', 'bf16', 'pred', 's4', 'f8e4m3fn']
    >>> [xla_type_name(d) for d in ("bfloat16", "float32", "int4", "bool")]
    ['bf16', 'f32', 's4', 'pred']
    """
    if isinstance(dtype, PrimitiveType):
        return dtype.text
    if isinstance(dtype, str):
        try:
            return primitive_type(dtype).text
        except ValueError:
            pass
    import ml_dtypes
    import numpy as np

    if isinstance(dtype, str) and hasattr(ml_dtypes, dtype):  # "bfloat16", "int4", ... by name
        dtype = getattr(ml_dtypes, dtype)
    name = np.dtype(dtype).name
    special = {"bool": "pred", "bfloat16": "bf16", "complex64": "c64", "complex128": "c128"}
    if name in special:
        return special[name]
    m = re.fullmatch(r"(u?int|float)(\d+)(?:_(\w+))?", name)
    if m:
        prefix = {"int": "s", "uint": "u", "float": "f"}[m[1]]
        return primitive_type(prefix + m[2] + (m[3] or "")).text
    raise NotExpressible(f"the dtype {name} has no XLA element type")


def numpy_dtype_name(dtype: str | PrimitiveType) -> str:
    """The NumPy/``ml_dtypes`` name of an XLA element type (what ``jnp.dtype`` accepts).

    >>> [numpy_dtype_name(t) for t in ("pred", "bf16", "s4", "u8", "f8e4m3fn", "c64")]
    ['bool', 'bfloat16', 'int4', 'uint8', 'float8_e4m3fn', 'complex64']
    """
    name = xla_type_name(dtype)
    table = {"pred": "bool", "bf16": "bfloat16", "c64": "complex64", "c128": "complex128"}
    if name in table:
        return table[name]
    m = re.fullmatch(r"([suf])(\d+)(\w*)", name)
    if not m:
        raise NotExpressible(f"the element type {name} has no NumPy dtype")
    prefix = {"s": "int", "u": "uint", "f": "float"}[m[1]]
    return f"{prefix}{m[2]}" + (f"_{m[3]}" if m[3] else "")


def _is_sub_byte_integer(t: PrimitiveType) -> bool:
    return t.value.kind in ("signed", "unsigned") and t.bit_width < 8


def jax_layout_fields(shape: Shape | str) -> JaxLayoutFields:
    """The fields of the JAX ``Layout`` that makes XLA use ``shape``'s layout (memory space aside)."""
    s = meaningful_array(as_shape(shape))
    layout = s.effective_layout
    lost = []
    if layout.tail_padding_alignment_in_elements != 1:
        lost.append(f"L({layout.tail_padding_alignment_in_elements})")
    if layout.index_primitive_type is not None or layout.pointer_primitive_type is not None:
        lost.append("index/pointer types #(..)/*(..)")
    if layout.physical_shape is not None:
        lost.append("P(..)")
    if layout.dynamic_shape_metadata_prefix_bytes:
        lost.append(f"M({layout.dynamic_shape_metadata_prefix_bytes})")
    if lost:
        raise NotExpressible(f"{s}: a JAX Layout has no {', '.join(lost)}")
    e = layout.element_size_in_bits
    t = s.element_type
    if layout.tiles:
        if e == 0 and _is_sub_byte_integer(t):
            raise NotExpressible(
                f"{s}: JAX gives every tiled {t.text} layout E({t.bit_width}) (Layout._to_xla_layout); XLA's layout "
                f"without E({t.bit_width}), one byte per element, has no JAX Layout"
            )
        tiling: tuple[tuple[int, ...], ...] | None = tuple(tuple(tile.dimensions) for tile in layout.tiles)
    elif e != 0:
        tiling = ()  # an empty tiling keeps E(n); None would drop it
    else:
        tiling = None
    return JaxLayoutFields(tuple(reversed(layout.minor_to_major)), tiling, e)


def _layout_class() -> Any:
    try:
        from jax.experimental import layout as jax_layout
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(_INSTALL_HINT) from err
    cls = getattr(jax_layout, "Layout", None)
    if cls is not None and "major_to_minor" in inspect.signature(cls).parameters:
        return cls
    return jax_layout.DeviceLocalLayout  # JAX 0.4.30 .. 0.6: Layout was then today's Format


def to_jax_layout(shape: Shape | str) -> Any:
    """``shape``'s layout as a ``jax.experimental.layout.Layout`` (needs JAX)."""
    s = meaningful_array(as_shape(shape))
    if s.effective_layout.memory_space:
        raise NotExpressible(
            f"{s}: the memory space S({s.effective_layout.memory_space}) is not part of a JAX Layout; "
            f"use to_jax_format (it goes in the sharding's memory_kind)"
        )
    f = jax_layout_fields(s)
    return _layout_class()(f.major_to_minor, f.tiling, f.sub_byte_element_size_in_bits)


def _field(obj: Any, *names: str, default: Any = None) -> Any:
    for name in names:
        if hasattr(obj, name):
            return getattr(obj, name)
    return default


def from_jax_layout(layout: Any, dtype: Any, dims: Sequence[int], *, as_compiled: bool = False) -> ArrayShape:
    """The XLA shape for a JAX ``Layout`` (or anything with its three fields) on ``dtype[dims]``.

    By default this is the layout JAX *requests* for that ``Layout`` (its
    ``_to_xla_layout`` rules, see the module docs). ``as_compiled=True`` reads the fields
    as they are, which is right for layouts JAX read from a compiled executable
    (``Layout.from_pjrt_layout`` stores XLA's ``element_size_in_bits`` unchanged).
    """
    t = primitive_type(xla_type_name(dtype))
    major_to_minor = tuple(int(d) for d in _field(layout, "major_to_minor", "_major_to_minor"))
    tiling = _field(layout, "tiling", "_tiling")
    sub_byte = int(
        _field(layout, "sub_byte_element_size_in_bits", "_sub_byte_element_size_in_bits", default=0)
    )
    dims = tuple(int(d) for d in dims)
    if len(major_to_minor) != len(dims):
        raise InvalidArgumentError(
            f"major_to_minor {major_to_minor} has {len(major_to_minor)} entries for {len(dims)} dims"
        )
    if tiling is None:
        tiles: tuple[Tile, ...] = ()
        e = sub_byte if as_compiled else 0
    else:
        tiles = tuple(Tile(tuple(int(x) for x in tile)) for tile in tiling)
        e = sub_byte
        if not as_compiled and e == 0 and _is_sub_byte_integer(t):
            e = t.bit_width
    layout_value = Layout(tuple(reversed(major_to_minor)), tiles, element_size_in_bits=e)
    return meaningful_array(ArrayShape(t, dims, (False,) * len(dims), layout_value))


def to_jax_format(shape: Shape | str, sharding: Any) -> Any:
    """A JAX ``Format``: ``shape``'s layout, and ``sharding`` with the memory kind of ``S(n)`` (needs JAX)."""
    s = meaningful_array(as_shape(shape))
    space = s.effective_layout.memory_space
    kinds = {v: k for k, v in MEMORY_KINDS.items()}
    if space not in kinds:
        raise NotExpressible(f"{s}: the memory space S({space}) has no JAX memory kind")
    from jax.experimental.layout import Format

    layout = to_jax_layout(s.with_layout(_without_memory_space(s.effective_layout)))
    if getattr(sharding, "memory_kind", None) != kinds[space]:
        sharding = sharding.with_memory_kind(kinds[space])
    return Format(layout, sharding)


def _without_memory_space(layout: Layout) -> Layout:
    return Layout(
        layout.minor_to_major,
        layout.tiles,
        layout.tail_padding_alignment_in_elements,
        layout.index_primitive_type,
        layout.pointer_primitive_type,
        layout.element_size_in_bits,
        0,
        layout.split_configs,
        layout.physical_shape,
        layout.dynamic_shape_metadata_prefix_bytes,
    )


def from_jax_format(fmt: Any, dtype: Any, dims: Sequence[int], *, as_compiled: bool = False) -> ArrayShape:
    """The XLA shape of a JAX ``Format`` (its layout, and ``S(n)`` from the sharding's memory kind)."""
    layout = _field(fmt, "layout", "device_local_layout")
    if layout is None or type(layout).__name__ == "AutoLayoutSingleton" or str(layout) == "AUTO":
        raise NotExpressible(
            f"{fmt!r}: no concrete layout (None or AUTO): the compiler has not chosen one yet"
        )
    shape = from_jax_layout(layout, dtype, dims, as_compiled=as_compiled)
    kind = getattr(getattr(fmt, "sharding", None), "memory_kind", None) or "device"
    if kind not in MEMORY_KINDS:
        raise NotExpressible(f"{fmt!r}: the memory kind {kind!r} has no XLA memory space here")
    if MEMORY_KINDS[kind]:
        old = shape.effective_layout
        shape = shape.with_layout(
            Layout(
                old.minor_to_major,
                old.tiles,
                element_size_in_bits=old.element_size_in_bits,
                memory_space=MEMORY_KINDS[kind],
            )
        )
    return shape


# ------------------------------------------------------------------------------ compiled
def _leaves(tree: Any, is_leaf) -> Iterator[Any]:
    """Leaves of a pytree of tuples, lists and dicts (dict keys sorted, as JAX flattens them)."""
    if tree is None:
        return
    if is_leaf(tree):
        yield tree
    elif isinstance(tree, (tuple, list)):
        for item in tree:
            yield from _leaves(item, is_leaf)
    elif isinstance(tree, dict):
        for key in sorted(tree):
            yield from _leaves(tree[key], is_leaf)
    else:
        yield tree


def _is_format(x: Any) -> bool:
    return hasattr(x, "sharding") and (hasattr(x, "layout") or hasattr(x, "device_local_layout"))


def _is_aval(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype")


def shapes_of_compiled(compiled: Any) -> tuple[tuple[ArrayShape, ...], tuple[ArrayShape, ...]]:
    """``(inputs, outputs)``: the layouts of a compiled JAX function's arguments and results.

    Reads ``compiled.input_formats`` / ``output_formats`` (``input_layouts`` /
    ``output_layouts`` on older JAX) with the avals' dtypes and shapes, in JAX's flattening
    order. ``L(n)`` is not in a JAX ``Layout``; :func:`entry_shapes_of_compiled` reads the
    compiled HLO's ``entry_computation_layout`` instead, every field included.
    """
    in_formats = _field(compiled, "input_formats", "input_layouts")
    out_formats = _field(compiled, "output_formats", "output_layouts")
    in_avals = list(_leaves(compiled.in_avals, _is_aval))
    out_avals = list(_leaves(compiled.out_info, _is_aval))
    ins = list(_leaves(in_formats, _is_format))
    outs = list(_leaves(out_formats, _is_format))
    if len(ins) != len(in_avals) or len(outs) != len(out_avals):
        raise InvalidArgumentError(
            f"{len(ins)} input formats for {len(in_avals)} inputs, {len(outs)} output formats for {len(out_avals)} outputs"
        )

    def convert(fmt, aval):
        return from_jax_format(fmt, aval.dtype, tuple(aval.shape), as_compiled=True)

    return (
        tuple(convert(f, a) for f, a in zip(ins, in_avals, strict=True)),
        tuple(convert(f, a) for f, a in zip(outs, out_avals, strict=True)),
    )


def entry_shapes_of_compiled(compiled_or_hlo_text: Any) -> tuple[tuple[Shape, ...], Shape]:
    """``(parameters, result)`` from the compiled HLO's ``entry_computation_layout={(...)->...}``.

    >>> params, result = entry_shapes_of_compiled(
    ...     "HloModule m, entry_computation_layout={(bf16[16,256]{1,0:T(8,128)(2,1)}, f32[]{:T(128)})->f32[4]{0:T(256)}}")
    >>> [str(p) for p in params], str(result)
    (['bf16[16,256]{1,0:T(8,128)(2,1)}', 'f32[]{:T(128)}'], 'f32[4]{0:T(256)}')
    """
    text = compiled_or_hlo_text if isinstance(compiled_or_hlo_text, str) else compiled_or_hlo_text.as_text()
    start = text.find("entry_computation_layout={")
    if start < 0:
        raise InvalidArgumentError("the HLO text has no entry_computation_layout")
    pos = start + len("entry_computation_layout={")
    depth, end = 1, pos
    while depth:
        ch = text[end]
        depth += {"{": 1, "}": -1}.get(ch, 0)
        end += 1
    body = text[pos : end - 1]
    arrow = _top_level_arrow(body)
    params = parse_shape(body[:arrow])
    result = parse_shape(body[arrow + 2 :])
    from layout_algebra.model.shapes import TupleShape

    inputs = tuple(params.elements) if isinstance(params, TupleShape) else (params,)
    return inputs, result


def _top_level_arrow(body: str) -> int:
    depth = 0
    for k, ch in enumerate(body):
        depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(ch, 0)
        if depth == 0 and body.startswith("->", k):
            return k
    raise InvalidArgumentError(f"no '->' in entry_computation_layout {body!r}")
