"""Triton's linear layouts: XLA layouts of power-of-two sizes as bases over GF(2), and back.

Triton (``include/triton/Tools/LinearLayout.h``) describes a layout as a **linear map
over GF(2)** between named *input dimensions* and named *output dimensions*, each of a
power-of-two size. The map is given by its **bases**: for each input dimension, the image
of each of its bits (``1, 2, 4, ...``), a vector with one entry per output dimension. The
image of any input is the XOR of the bases of its set bits.

An XLA layout whose dimensions and tiles are powers of two and which has no padding only
*re-routes bits*: a tile of 8 rows takes the three low bits of the row index to one place
in the offset and the rest to another. So it is a linear layout, with the logical
dimensions ``dim0, dim1, ...`` as inputs and the buffer offset as the one output.
:func:`to_linear_layout` reads it from the layout map (one evaluation per input bit), and
checks that the map is linear on every element (exactly, dimension by dimension: the
offset is a sum over dimensions, :mod:`layout_algebra.target.access`):

>>> from layout_algebra.interop.triton import from_linear_layout, to_linear_layout
>>> ll = to_linear_layout("f32[16,256]{1,0:T(8,128)}")
>>> print(ll)
 - dim0=1 -> (128)
   dim0=2 -> (256)
   dim0=4 -> (512)
   dim0=8 -> (2048)
 - dim1=1 -> (1)
   dim1=2 -> (2)
   dim1=4 -> (4)
   dim1=8 -> (8)
   dim1=16 -> (16)
   dim1=32 -> (32)
   dim1=64 -> (64)
   dim1=128 -> (1024)
where out dims are: [offset (size 4096)]

That is Triton's ``LinearLayout::toString`` format (without its leading newline). The
bases as data, in the order Triton's MLIR attributes list them:

>>> ll.bases_text()
'{dim0 = [[128], [256], [512], [2048]], dim1 = [[1], [2], [4], [8], [16], [32], [64], [1024]]}'
>>> ll.apply((9, 130))
(3202,)

Element (9, 130) is row 1 of the second row of tiles (``1·128 + 2048``) and column 2
of the second tile (``2 + 1024``). The offset unit is the **element** by default; for
sub-byte types the natural unit is the **bit** (``unit="bit"``: every basis times the
element size). Triton's shared-memory layouts go the other way, from the ``offset`` to
the logical index (``#ttg.shared_linear<{offset = ...}>``): :meth:`LinearLayout.inverse`
and :meth:`LinearLayout.shared_linear_text` give that form:

>>> print(to_linear_layout("bf16[4,4]{1,0:T(2,2)(2,1)}").shared_linear_text())
#ttg.shared_linear<{offset = [[1, 0], [0, 1], [0, 2], [2, 0]]}, alignment = 16>

**Back to XLA.** :func:`from_linear_layout` reads a linear layout (either direction)
whose bases are distinct single powers of two — a bit permutation — as digits placed
with strides, recovers the tiled layout (:mod:`layout_algebra.meaning.recover`) and
returns its normal form (:func:`~layout_algebra.decide.normal_form.normal_form`, the simplest
layout proved the same). The answer is then **proved equal**: two linear maps are equal exactly when their bases
are, and the bases of the answer, read from its own layout map and checked linear on
every element, are those given:

>>> str(from_linear_layout(ll, "f32"))
'f32[16,256]{1,0:T(8,128)}'

What has no XLA counterpart raises :class:`~layout_algebra.meaning.recover.NotExpressible`
with the reason: a swizzle (a basis with several bits), a broadcast (a zero basis),
padding or a non-power-of-two size on the way out:

>>> from layout_algebra.interop.triton import LinearLayout
>>> swizzled = LinearLayout.from_bases({"dim0": [[4], [8]], "dim1": [[1], [2 ^ 4]]}, {"offset": 16})
>>> from_linear_layout(swizzled, "f32")
Traceback (most recent call last):
...
layout_algebra.meaning.recover.NotExpressible: dim1=2 -> (6) sets several bits (a swizzle): an XLA layout moves each index bit to one offset bit
>>> to_linear_layout("f32[6,128]")
Traceback (most recent call last):
...
layout_algebra.meaning.recover.NotExpressible: f32[6,128]{1,0}: dimension 0 has size 6, not a power of two; a linear layout's input sizes are powers of two
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from layout_algebra.decide.normal_form import allocating_its_buffer, normal_form
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.meaning.recover import NotExpressible, layout_shape, recover_layout, strided_positions
from layout_algebra.model.errors import InvalidArgumentError
from layout_algebra.model.shapes import ArrayShape, Shape
from layout_algebra.target.access import dimension_offsets, separable_map

__all__ = [
    "OFFSET_UNITS",
    "LinearLayout",
    "from_linear_layout",
    "to_linear_layout",
]

#: Units the output ``offset`` can count.
OFFSET_UNITS = ("element", "bit")

Bases = tuple[tuple[str, tuple[tuple[int, ...], ...]], ...]


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


@dataclass(frozen=True)
class LinearLayout:
    """A linear layout over GF(2): ``bases`` per input dimension (in order), each basis a
    vector with one entry per output dimension; ``out_dims`` the output names and sizes.

    An input dimension with ``n`` bases has size ``2**n``. Build one with
    :meth:`from_bases` (validated), read one with :meth:`from_dict` or, from Triton's MLIR
    attribute text, :meth:`parse`.
    """

    bases: Bases
    out_dims: tuple[tuple[str, int], ...]

    # ------------------------------------------------------------------ building
    @classmethod
    def from_bases(
        cls, bases: Mapping[str, Sequence[Sequence[int]]], out_dims: Mapping[str, int]
    ) -> LinearLayout:
        """A layout from ``{in_dim: [[...], ...]}`` and ``{out_dim: size}``, checked as Triton does:
        sizes powers of two, each basis one entry per output dimension, each entry below its size.

        >>> LinearLayout.from_bases({"dim0": [[1], [2]]}, {"offset": 4}).in_dims
        (('dim0', 4),)
        >>> LinearLayout.from_bases({"dim0": [[1], [4]]}, {"offset": 4})
        Traceback (most recent call last):
        ...
        layout_algebra.InvalidArgumentError: basis dim0=2 -> (4): entry 4 is not below the size 4 of out dim 'offset'
        """
        if not isinstance(bases, Mapping) or not isinstance(out_dims, Mapping):
            raise InvalidArgumentError(
                f"bases {bases!r} and out dims {out_dims!r} must be mappings: {{in_dim: [[...], ...]}}, {{out_dim: size}}"
            )
        outs = tuple((str(name), _checked_size(name, size)) for name, size in out_dims.items())
        checked = []
        for name, vectors in bases.items():
            rows = []
            if isinstance(vectors, (str, bytes)) or not isinstance(vectors, Sequence):
                raise InvalidArgumentError(
                    f"the bases of in dim {name!r} must be a list of vectors, got {vectors!r}"
                )
            for j, vector in enumerate(vectors):
                if isinstance(vector, (str, bytes)) or not isinstance(vector, Sequence):
                    raise InvalidArgumentError(
                        f"basis {name}={1 << j} must be a list of integers, got {vector!r}"
                    )
                row = tuple(vector)
                where = f"basis {name}={1 << j} -> ({', '.join(map(str, row))})"
                if len(row) != len(outs):
                    raise InvalidArgumentError(f"{where}: {len(row)} entries for {len(outs)} out dims")
                for v, (out, size) in zip(row, outs, strict=True):
                    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < size:
                        raise InvalidArgumentError(
                            f"{where}: entry {v!r} is not below the size {size} of out dim {out!r}"
                        )
                rows.append(row)
            checked.append((str(name), tuple(rows)))
        return cls(tuple(checked), outs)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LinearLayout:
        """The inverse of :meth:`to_dict`."""
        if not isinstance(data, Mapping) or set(data) != {"bases", "out_dims"}:
            raise InvalidArgumentError(f"a linear layout is {{'bases': ..., 'out_dims': ...}}, got {data!r}")
        return cls.from_bases(data["bases"], data["out_dims"])

    @classmethod
    def parse(cls, text: str, dims: Sequence[int] | None = None) -> LinearLayout:
        """Read Triton's MLIR form: ``#ttg.shared_linear<{offset = [[0, 1], ...]}, alignment = 16>``,
        ``#ttg.linear<{register = ..., lane = ...}>`` or just the braces ``{offset = [...]}``.

        The out dims are the tensor's ``dim0, dim1, ...``: their sizes are ``dims`` (the
        tensor's shape, from its type) or, without it, inferred as Triton does (each the
        smallest power of two above every entry). Attributes after the braces (``alignment``)
        are not part of the map and are skipped. The text is parsed, never evaluated.

        >>> ll = LinearLayout.parse("#ttg.shared_linear<{offset = [[1, 0], [0, 1], [0, 2]], block = []}, alignment = 16>")
        >>> ll.in_dims, ll.out_dims
        ((('offset', 8), ('block', 1)), (('dim0', 2), ('dim1', 4)))
        >>> str(from_linear_layout(ll, "f32"))
        'f32[2,4]{0,1}'
        """
        body = _braces(text)
        entries: dict[str, list[list[int]]] = {}
        for item in _top_level_split(body, text):
            name, eq, value = item.partition("=")
            name = name.strip()
            if eq and re.fullmatch(r"\s*\d+\s*", value):
                continue  # an attribute such as 'alignment = 16' written inside the braces
            if not eq or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise InvalidArgumentError(
                    f"linear layout text {text!r}: {item.strip()!r} is not 'name = [[...], ...]'"
                )
            if name in entries:
                raise InvalidArgumentError(f"linear layout text {text!r}: in dim {name!r} is given twice")
            entries[name] = _basis_list(value, name, text)
        widths = {len(v) for vectors in entries.values() for v in vectors}
        if len(widths) > 1:
            raise InvalidArgumentError(
                f"linear layout text {text!r}: bases of different lengths {sorted(widths)}"
            )
        rank = widths.pop() if widths else (len(dims) if dims is not None else 0)
        if dims is not None:
            if len(dims) != rank:
                raise InvalidArgumentError(
                    f"linear layout text {text!r}: bases have {rank} entries for {len(dims)} dims"
                )
            sizes = list(dims)
        else:
            sizes = [
                max([1, *(1 << v[i].bit_length() for vectors in entries.values() for v in vectors)])
                for i in range(rank)
            ]
        return cls.from_bases(entries, {f"dim{i}": size for i, size in enumerate(sizes)})

    # ------------------------------------------------------------------ reading
    @property
    def in_dims(self) -> tuple[tuple[str, int], ...]:
        """Input dimension names and sizes."""
        return tuple((name, 1 << len(vectors)) for name, vectors in self.bases)

    def apply(self, index: Sequence[int] | Mapping[str, int]) -> tuple[int, ...]:
        """The output (one value per out dim) of an input, given in ``in_dims`` order or by name:
        the XOR of the bases of its set bits."""
        names = [n for n, _ in self.in_dims]
        if isinstance(index, Mapping):
            values = dict(index)
        elif len(index) == len(names):
            values = dict(zip(names, index, strict=True))
        else:
            values = {}
        if len(values) != len(self.bases) or set(values) != {n for n, _ in self.bases}:
            raise InvalidArgumentError(
                f"input {index!r} must give one value per in dim {[n for n, _ in self.in_dims]}"
            )
        out = [0] * len(self.out_dims)
        for name, vectors in self.bases:
            v = values[name]
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 1 << len(vectors):
                raise InvalidArgumentError(f"input {name}={v!r} is outside its size {1 << len(vectors)}")
            for j, vector in enumerate(vectors):
                if v >> j & 1:
                    out = [a ^ b for a, b in zip(out, vector, strict=True)]
        return tuple(out)

    def _columns(self) -> list[int]:
        """Each basis as one integer over the concatenated output bits."""
        widths = [size.bit_length() - 1 for _, size in self.out_dims]
        cols = []
        for _, vectors in self.bases:
            for vector in vectors:
                col, shift = 0, 0
                for v, w in zip(vector, widths, strict=True):
                    col |= v << shift
                    shift += w
                cols.append(col)
        return cols

    @property
    def rank(self) -> int:
        """The rank of the map over GF(2) (Gaussian elimination of the bases)."""
        pivots: dict[int, int] = {}
        rank = 0
        for col in self._columns():
            while col:
                top = col.bit_length() - 1
                if top not in pivots:
                    pivots[top] = col
                    rank += 1
                    break
                col ^= pivots[top]
        return rank

    @property
    def is_injective(self) -> bool:
        return self.rank == sum(len(v) for _, v in self.bases)

    @property
    def is_surjective(self) -> bool:
        return self.rank == sum(size.bit_length() - 1 for _, size in self.out_dims)

    def inverse(self) -> LinearLayout:
        """The inverse map of a bijective layout: out dims become in dims (bit by bit).

        ``f32[2,4]{0,1}`` is column-major: offset bit 0 is ``dim0``'s bit, bits 1 and 2 ``dim1``'s:

        >>> to_linear_layout("f32[2,4]{0,1}").inverse().bases_text()
        '{offset = [[1, 0], [0, 1], [0, 2]]}'
        """
        if not (self.is_injective and self.is_surjective):
            raise InvalidArgumentError("only a bijective linear layout has an inverse; this one is not")
        in_bits = [(name, j) for name, vectors in self.bases for j in range(len(vectors))]
        cols = self._columns()
        n = len(cols)
        # Solve cols · x = e_b for each output bit b: invert the square GF(2) matrix.
        rows = [(sum(((c >> b) & 1) << i for i, c in enumerate(cols)), 1 << b) for b in range(n)]
        for i in range(n):
            pivot = next(r for r in range(i, n) if rows[r][0] >> i & 1)
            rows[i], rows[pivot] = rows[pivot], rows[i]
            for r in range(n):
                if r != i and rows[r][0] >> i & 1:
                    rows[r] = (rows[r][0] ^ rows[i][0], rows[r][1] ^ rows[i][1])
        # rows[i] = (e_i, the output bits whose preimage has input bit i): transpose it.
        preimage = [sum(((rows[i][1] >> b) & 1) << i for i in range(n)) for b in range(n)]
        new_bases: dict[str, list[list[int]]] = {}
        shift = 0
        for out, size in self.out_dims:
            width = size.bit_length() - 1
            new_bases[out] = []
            for b in range(shift, shift + width):
                vector = [0] * len(self.bases)
                for i, (name, j) in enumerate(in_bits):
                    if preimage[b] >> i & 1:
                        k = next(x for x, (nm, _) in enumerate(self.bases) if nm == name)
                        vector[k] |= 1 << j
                new_bases[out].append(vector)
            shift += width
        return LinearLayout.from_bases(new_bases, dict(self.in_dims))

    # ------------------------------------------------------------------ printing
    def __str__(self) -> str:
        """Triton's ``LinearLayout::toString`` (without its leading newline)."""
        outs = "[" + ", ".join(f"{name} (size {size})" for name, size in self.out_dims) + "]"
        if not self.bases:
            return f"(empty layout with out-dims {outs})" if self.out_dims else "(empty layout)"
        lines = []
        for name, vectors in self.bases:
            if not vectors:
                lines.append(f" - {name} is a size 1 dimension")
                continue
            entries = [f"{name}={1 << j} -> ({', '.join(map(str, v))})" for j, v in enumerate(vectors)]
            lines.append(" - " + "\n   ".join(entries))
        return "\n".join(lines) + f"\nwhere out dims are: {outs}"

    def bases_text(self) -> str:
        """The bases as Triton's MLIR attributes write them: ``{dim0 = [[1], [2]], ...}``."""
        parts = []
        for name, vectors in self.bases:
            listed = ", ".join("[" + ", ".join(map(str, v)) + "]" for v in vectors)
            parts.append(f"{name} = [{listed}]")
        return "{" + ", ".join(parts) + "}"

    def shared_linear_text(self, alignment: int = 16) -> str:
        """Triton's shared-memory attribute ``#ttg.shared_linear<{offset = ...}, alignment = n>``:
        the inverse map, from the element offset to the logical index (``dim0, dim1, ...``)."""
        inverse = self if [n for n, _ in self.in_dims] == ["offset"] else self.inverse()
        return f"#ttg.shared_linear<{inverse.bases_text()}, alignment = {alignment}>"

    def to_dict(self) -> dict[str, Any]:
        return {
            "bases": {name: [list(v) for v in vectors] for name, vectors in self.bases},
            "out_dims": dict(self.out_dims),
        }


def _braces(text: str) -> str:
    """The inside of the first ``{...}`` of ``text`` (balanced)."""
    if not isinstance(text, str):
        raise InvalidArgumentError(f"linear layout text must be a string, got {text!r}")
    start = text.find("{")
    if start < 0:
        raise InvalidArgumentError(f"linear layout text {text!r} has no '{{...}}' of bases")
    depth = 0
    for at in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[at], 0)
        if depth == 0:
            return text[start + 1 : at]
    raise InvalidArgumentError(f"linear layout text {text!r}: the '{{' at {start} is never closed")


def _top_level_split(body: str, text: str) -> list[str]:
    """``body`` split at the commas outside brackets (empty body: no items)."""
    items: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in body:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise InvalidArgumentError(f"linear layout text {text!r}: unbalanced ']'")
        if ch == "," and depth == 0:
            items.append("".join(current))
            current = []
        else:
            current.append(ch)
    if depth:
        raise InvalidArgumentError(f"linear layout text {text!r}: unbalanced '['")
    items.append("".join(current))
    return [item for item in items if item.strip()]


def _basis_list(value: str, name: str, text: str) -> list[list[int]]:
    """``[[0, 1], [2, 0]]`` as lists of non-negative ints (JSON, never evaluated)."""
    try:
        data = json.loads(value)
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, list) or not all(
        isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in v)
        for v in data
    ):
        raise InvalidArgumentError(
            f"linear layout text {text!r}: the bases of {name!r} ({value.strip()!r}) are not a list of "
            "lists of non-negative integers"
        )
    return data


def _checked_size(name: object, size: object) -> int:
    if isinstance(size, bool) or not isinstance(size, int) or not _is_power_of_two(size):
        raise InvalidArgumentError(f"out dim {name!r} has size {size!r}; sizes must be powers of two")
    return size


# ------------------------------------------------------------------ XLA to Triton
def _unit_scale(shape: ArrayShape, bits: int, unit: str) -> int:
    if unit not in OFFSET_UNITS:
        raise InvalidArgumentError(f"unit {unit!r} is not one of {', '.join(OFFSET_UNITS)}")
    if unit == "element":
        return 1
    if not _is_power_of_two(bits):
        raise NotExpressible(f"{shape}: {bits}-bit elements: bit offsets are not linear in the index")
    return bits


def to_linear_layout(shape: Shape | str, *, unit: str = "element") -> LinearLayout:
    """``shape``'s layout as a linear layout from ``dim0, dim1, ...`` to the buffer ``offset``
    (in elements, or bits with ``unit="bit"``), or ``NotExpressible`` with the reason."""
    import numpy as np

    try:
        m = separable_map(shape)
    except ValueError as err:
        raise NotExpressible(str(err)) from None
    for k, d in enumerate(m.shape.dimensions):
        if not _is_power_of_two(int(d)):
            raise NotExpressible(
                f"{m.shape}: dimension {k} has size {d}, not a power of two; a linear layout's input sizes "
                "are powers of two"
            )
    elements = math.prod(int(d) for d in m.shape.dimensions)
    slots = int(m.size_in_elements)
    if slots != elements:
        raise NotExpressible(
            f"{m.shape}: the buffer has {slots} element slots for {elements} elements (padding by tiles or "
            "L(n)); the layouts exported here are bijections onto the buffer"
        )
    scale = _unit_scale(m.shape, m.element_bits, unit)
    bases: dict[str, list[list[int]]] = {}
    masks = []
    for k, d in enumerate(m.shape.dimensions):
        f = dimension_offsets(m.shape, k)
        vectors = [int(f[1 << j]) for j in range(int(d).bit_length() - 1)]
        t = np.arange(int(d), dtype=np.int64)
        xor = np.zeros_like(t)
        for j, v in enumerate(vectors):  # linear along the dimension: f(t) is the XOR of its bits' bases
            xor ^= ((t >> j) & 1) * v
        wrong = np.nonzero(xor != f)[0]
        if wrong.size:
            bad = int(wrong[0])
            raise NotExpressible(
                f"{m.shape}: offset of i{k} = {bad} is {int(f[bad])}, not the XOR {int(xor[bad])} of its bits' "
                "images: the layout is not linear over GF(2)"
            )
        mask = int(np.bitwise_or.reduce(xor)) if xor.size else 0
        masks.append(mask)
        bases[f"dim{k}"] = [[v * scale] for v in vectors]
    for a in range(len(masks)):  # the sum over dimensions is their XOR: no two share an offset bit
        for b in range(a):
            if masks[a] & masks[b]:
                raise NotExpressible(f"{m.shape}: dimensions {b} and {a} reach the same offset bits")
    return LinearLayout.from_bases(bases, {"offset": slots * scale})


# ------------------------------------------------------------------ Triton to XLA
def _forward_form(ll: LinearLayout) -> LinearLayout:
    """``ll`` as a map from ``dim0, dim1, ...`` to one offset (inverting Triton's memory direction)."""
    outs = [n for n, _ in ll.out_dims]
    live = tuple((n, v) for n, v in ll.bases if v)  # size-1 in dims (Triton's empty 'block') change nothing
    if len(live) <= 1 and ll.bases and outs and outs == [f"dim{k}" for k in range(len(outs))]:
        chosen = live or ll.bases[:1]
        ins = [n for n, _ in chosen]
        try:
            return LinearLayout(chosen, ll.out_dims).inverse()
        except ValueError:
            raise NotExpressible(
                f"the layout from {ins[0]!r} to {outs} is not a bijection, so no XLA layout stores it"
            ) from None
    ins = [n for n, _ in ll.in_dims]
    if ins != [f"dim{k}" for k in range(len(ins))] or len(outs) != 1:
        raise NotExpressible(
            f"in dims {ins} and out dims {outs}: an XLA layout maps dim0, dim1, ... to one offset (or back)"
        )
    return ll


def from_linear_layout(
    ll: LinearLayout, dtype: str, *, unit: str = "element", element_size_in_bits: int = 0
) -> ArrayShape:
    """The XLA layout storing every element where ``ll`` puts it, proved equal; else ``NotExpressible``.

    ``ll`` maps ``dim0, dim1, ...`` to one output (the offset in ``unit``), or the offset to
    ``dim0, dim1, ...`` (Triton's shared-memory direction).
    """
    if not isinstance(ll, LinearLayout):
        raise InvalidArgumentError(
            f"{ll!r} is not a LinearLayout (build one with LinearLayout.from_bases or .parse)"
        )
    forward = _forward_form(ll)
    ((out, size),) = forward.out_dims
    dims = tuple(s for _, s in forward.in_dims)
    element = layout_map(layout_shape(dtype, (1,), (0,), element_size_in_bits=element_size_in_bits))
    scale = _unit_scale(element.shape, element.element_bits, unit)
    if size != math.prod(dims) * scale:
        raise NotExpressible(
            f"out dim {out!r} has size {size} for {math.prod(dims)} elements of {scale} {unit}s each: "
            "not a bijection onto the buffer"
        )
    digits = []
    for k, (name, vectors) in enumerate(forward.bases):
        places = []
        for j, (v,) in enumerate(vectors):
            where = f"{name}={1 << j} -> ({v})"
            if v == 0:
                raise NotExpressible(f"{where} is zero (a broadcast): an XLA layout stores each element once")
            if v & (v - 1):
                raise NotExpressible(
                    f"{where} sets several bits (a swizzle): an XLA layout moves each index bit to one offset bit"
                )
            if v % scale:
                raise NotExpressible(f"{where} is not a multiple of the element's {scale} bits")
            places.append(v // scale)
        j = 0
        while j < len(places):  # runs of index bits going to consecutive offset bits: one digit each
            start = j
            while j + 1 < len(places) and places[j + 1] == 2 * places[j]:
                j += 1
            top = j == len(places) - 1
            digits.append((k, 1 << start, None if top else 1 << (j - start + 1), places[start]))
            j += 1
    try:
        positions = strided_positions(digits, dims)
        shape = recover_layout(dtype, dims, positions, exact=False, element_size_in_bits=element_size_in_bits)
    except NotExpressible as err:
        raise NotExpressible(f"{forward.bases_text()}: {err}") from None
    shape = normal_form(
        allocating_its_buffer(shape)
    )  # the simplest layout proved equal, XLA allocating it whole
    got = to_linear_layout(shape, unit=unit)
    if got.bases != forward.bases or got.out_dims[0][1] != size:  # pragma: no cover - a bug, never an answer
        raise AssertionError(
            f"{forward.bases_text()}: the recovered {shape} has the bases {got.bases_text()}"
        )
    return shape
