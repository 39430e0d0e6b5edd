"""Views: a layout seen through logical ops, and whether the view is itself an XLA layout.

A logical op (``reshape``, ``transpose``, ``slice``, ``broadcast``, ``reverse``) says,
for every element of its result, which element of its operand it is
(:mod:`layout_algebra.meaning.logical_ops`, the one definition, also read by :mod:`layout_algebra.hlo.verify`). Reading a buffer *through*
the op gives a new index map — result index → bit offset in the **same** buffer — with
no data moved: the operand's layout (its stage pipeline) applied to the source index.

>>> from layout_algebra.decide.views import Reshape, Reverse, Slice, Transpose, view
>>> v = view("f32[16,256]{1,0:T(8,128)}", Reshape((4096,)))
>>> v.dimensions, v.offset((300,), "element"), v.offset((2048,), "element")
((4096,), 172, 2048)
>>> v.forward_expr("element")
Mod(Mod(j0, 256), 128) + 128*(Mod(floor(j0/256), 8)) + 2048*floor(j0/2048) + 1024*floor((Mod(j0, 256))/128)

**Is the view an XLA layout?** :meth:`View.as_layout` answers with a proof: the view's
offsets are enumerated, taken apart into mixed-radix digits per dimension (the strides
CuTe would print), read back as an XLA layout (:mod:`layout_algebra.meaning.recover`, then
the :mod:`~layout_algebra.decide.normal_form`), and the answer is checked against every
element. The reshape above is the tiled vector ``T(256)(8,128)``, starting at bit 0:

>>> a = v.as_layout()
>>> a.status, str(a.shape), a.offset_bits, a.same_buffer
('proved', 'f32[4096]{0:T(256)(8,128)}', 0, True)

XLA layouts have no offset, so a view that starts inside the buffer is *an XLA layout
at bit offset k* (``offset_bits``), which must fit in the buffer; ``same_buffer`` says it
starts at 0 and XLA allocates the same bytes for it (then reading the buffer as that
layout is a bitcast). Rows 8 to 15 of the array are one row of tiles:

>>> a = view("f32[16,256]{1,0:T(8,128)}", Slice((8, 0), (16, 256))).as_layout()
>>> a.status, str(a.shape), a.offset_bits, a.same_buffer
('proved', 'f32[8,256]{1,0:T(8,128)}', 65536, False)

A slice that starts inside a tile, a reverse (an XLA layout stores element 0 first) and a
broadcast (two elements at one place) are not XLA layouts;
the answer says why, with a witness where it is a refutation:

>>> a = view("f32[16,256]{1,0:T(8,128)}", Slice((3, 0), (11, 256))).as_layout()
>>> a.status
'unknown'
>>> print(a.reason)  # doctest: +NORMALIZE_WHITESPACE
the view's digits times strides (in elements) are dimension 0: (j0 mod 5)·128 + ⌊j0/5⌋·1664;
dimension 1: (j1 mod 128)·1 + ⌊j1/128⌋·1024: stride 1664 is not a multiple of the next smaller
stride 1024: the places do not form a tiled (mixed-radix) shape (as when a slice starts or
stops inside a tile)
>>> print(view("f32[8]{0}", Reverse((0,))).as_layout().reason)
element (7,) is stored before element (0,) (bit 0 < bit 224): every XLA layout stores element 0 first
>>> view("f32[8]{0}", Transpose((0,))).as_layout().status
'proved'

**Symbolic sizes**: a view of ``f32[N,256]`` has its closed form, and
``as_layout(at={"N": 16}, assume=...)`` finds the layout at those sizes and proves it for
every size (Z3); ``is_layout(shape)`` proves or refutes one candidate.

**Padding of a view**: which slots of the buffer the view does not reach
(:meth:`View.unreached`, and the predicate :meth:`View.unreached_expr` on the offset
``p``): the layout's own padding, and every element the op leaves out.

>>> view("f32[4]{0}", Slice((1,), (4,), (2,))).unreached().tolist()
[True, False, True, False]
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from layout_algebra.decide.bitcast import same_allocation
from layout_algebra.decide.normal_form import normal_form, simplicity
from layout_algebra.meaning.layout_map import LayoutMap, layout_map
from layout_algebra.meaning.logical_ops import (
    broadcast_maps_dimensions,
    broadcast_result_index,
    broadcast_source_index,
    reshape_source_index,
    reverse_dimensions_valid,
    reverse_source_index,
    slice_left_out,
    slice_range_fits,
    slice_result_index,
    slice_size,
    slice_source_index,
    transpose_result_index,
    transpose_source_index,
)
from layout_algebra.meaning.recover import NotExpressible, Position, recover_layout, strided_positions
from layout_algebra.meaning.sizes import meaningful_array, size_report, xla_shape_size
from layout_algebra.meaning.stages.arith import ARITHMETIC, Arithmetic
from layout_algebra.model.errors import InvalidArgumentError, LayoutAlgebraError
from layout_algebra.model.shapes import ArrayShape, Dim, Shape
from layout_algebra.model.syntax import as_shape

__all__ = [
    "Bitcast",
    "Broadcast",
    "Reshape",
    "Reverse",
    "Slice",
    "Transpose",
    "View",
    "ViewLayout",
    "view",
]

#: Views with more elements than this are not enumerated: ``as_layout`` says ``unknown``.
ENUMERATION_LIMIT = 1 << 20


class ViewError(LayoutAlgebraError, ValueError):
    """An op that does not apply to the array it is given; the message quotes both."""


def _size(d: Any) -> Dim:
    """A dimension size: a Python int, or a SymPy expression for a symbolic one."""
    if isinstance(d, int) and not isinstance(d, bool):
        return d
    import sympy

    from layout_algebra.model.symbols import as_sympy

    value = as_sympy(d) if not isinstance(d, str) else None
    if value is None or not isinstance(value, sympy.Expr):
        raise ViewError(f"{d!r} is not a dimension size (an integer or a SymPy expression)")
    return int(value) if value.is_Integer else value


def _same_size(a: Any, b: Any) -> bool:
    """Whether two sizes are equal: exactly for ints, by expanding for SymPy expressions."""
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    import sympy

    from layout_algebra.model.symbols import as_sympy

    return bool(sympy.expand(as_sympy(a) - as_sympy(b)) == 0)


# ------------------------------------------------------------------------- the ops
@dataclass(frozen=True)
class Reshape:
    """``reshape`` to ``dimensions``: row-major position kept."""

    dimensions: tuple[Dim, ...]

    def result_dims(self, dims: tuple[Dim, ...]) -> tuple[Dim, ...]:
        out = tuple(_size(d) for d in self.dimensions)
        if any(isinstance(d, int) and d < 0 for d in out) or not _same_size(
            math.prod(out, start=1), math.prod(dims, start=1)
        ):
            raise ViewError(f"reshape {list(dims)} to {list(out)}: the element counts differ")
        return out

    def source(self, j: Sequence[Any], dims: tuple[Dim, ...], ar: Arithmetic) -> tuple[Any, ...]:
        return reshape_source_index(j, self.result_dims(dims), dims, ar)

    def result(self, i: Sequence[Any], dims: tuple[Dim, ...], ar: Arithmetic) -> tuple[Any, ...]:
        return reshape_source_index(i, dims, self.result_dims(dims), ar)

    def left_out(self, i: Sequence[Any], dims: tuple[Dim, ...], ar: Arithmetic) -> list[Any]:
        return []

    def __str__(self) -> str:
        return f"reshape {list(self.dimensions)}"


@dataclass(frozen=True)
class Transpose:
    """``transpose`` by ``permutation``: result dimension ``k`` is operand dimension ``permutation[k]``."""

    permutation: tuple[int, ...]

    def result_dims(self, dims: tuple[Dim, ...]) -> tuple[Dim, ...]:
        if sorted(self.permutation) != list(range(len(dims))):
            raise ViewError(
                f"{list(self.permutation)} is not a permutation of the {len(dims)} dimensions {list(dims)}"
            )
        return tuple(dims[p] for p in self.permutation)

    def source(self, j: Sequence[Any], dims: tuple[Dim, ...], ar: Arithmetic) -> tuple[Any, ...]:
        self.result_dims(dims)
        return transpose_source_index(j, self.permutation)

    def result(self, i: Sequence[Any], dims: tuple[Dim, ...], ar: Arithmetic) -> tuple[Any, ...]:
        return transpose_result_index(i, self.permutation)

    def left_out(self, i: Sequence[Any], dims: tuple[Dim, ...], ar: Arithmetic) -> list[Any]:
        return []

    def __str__(self) -> str:
        return f"transpose {list(self.permutation)}"


@dataclass(frozen=True)
class Slice:
    """``slice`` (XLA's): elements ``start, start + stride, ...`` below ``limit`` in each dimension."""

    starts: tuple[int, ...]
    limits: tuple[int, ...]
    strides: tuple[int, ...] = ()

    def _strides(self, rank: int) -> tuple[int, ...]:
        return tuple(self.strides) if self.strides else (1,) * rank

    def result_dims(self, dims: tuple[Dim, ...]) -> tuple[Dim, ...]:
        strides = self._strides(len(dims))
        if not (len(self.starts) == len(self.limits) == len(strides) == len(dims)):
            raise ViewError(f"slice {self}: needs one start, limit and stride per dimension of {list(dims)}")
        for s, lim, st, d in zip(self.starts, self.limits, strides, dims, strict=True):
            if not isinstance(d, int):
                if (s, st) != (0, 1) or not _same_size(lim, d):
                    raise ViewError(
                        f"slice {self}: a symbolic dimension ({d}) can only be kept whole; specialize() first"
                    )
                continue
            if not slice_range_fits(s, lim, st, d):
                raise ViewError(
                    f"slice {self} does not fit {list(dims)} (0 <= start <= limit <= size, stride >= 1)"
                )
        return tuple(
            d if not isinstance(d, int) else slice_size(s, lim, st)
            for s, lim, st, d in zip(self.starts, self.limits, strides, dims, strict=True)
        )

    def source(self, j: Sequence[Any], dims: tuple[Dim, ...], ar: Arithmetic) -> tuple[Any, ...]:
        self.result_dims(dims)
        return slice_source_index(j, self.starts, self._strides(len(dims)))

    def result(self, i: Sequence[Any], dims: tuple[Dim, ...], ar: Arithmetic) -> tuple[Any, ...]:
        return slice_result_index(i, self.starts, self._strides(len(dims)), ar)

    def left_out(self, i: Sequence[Any], dims: tuple[Dim, ...], ar: Arithmetic) -> list[Any]:
        return slice_left_out(i, self.starts, self.limits, self._strides(len(dims)), ar)

    def __str__(self) -> str:
        text = f"slice starts={list(self.starts)} limits={list(self.limits)}"
        return text + (f" strides={list(self.strides)}" if self.strides else "")


@dataclass(frozen=True)
class Broadcast:
    """``broadcast`` (XLA's ``dimensions``): operand dimension ``k`` is result dimension ``dimensions[k]``."""

    dimensions: tuple[int, ...]
    result_dimensions: tuple[int, ...]

    def result_dims(self, dims: tuple[Dim, ...]) -> tuple[Dim, ...]:
        out = tuple(_size(d) for d in self.result_dimensions)
        if any(isinstance(d, int) and d < 0 for d in out):
            raise ViewError(f"broadcast {list(dims)} into {list(out)}: a dimension size is negative")
        if not broadcast_maps_dimensions(self.dimensions, len(dims), len(out)) or any(
            not _same_size(out[r], d) for r, d in zip(self.dimensions, dims, strict=True)
        ):
            raise ViewError(
                f"broadcast {list(dims)} into {list(out)} along {list(self.dimensions)}: the sizes do not match"
            )
        return out

    def source(self, j: Sequence[Any], dims: tuple[Dim, ...], ar: Arithmetic) -> tuple[Any, ...]:
        self.result_dims(dims)
        return broadcast_source_index(j, self.dimensions)

    def result(self, i: Sequence[Any], dims: tuple[Dim, ...], ar: Arithmetic) -> tuple[Any, ...]:
        return broadcast_result_index(i, self.dimensions, len(self.result_dimensions))

    def left_out(self, i: Sequence[Any], dims: tuple[Dim, ...], ar: Arithmetic) -> list[Any]:
        return []

    def __str__(self) -> str:
        return f"broadcast {list(self.dimensions)} -> {list(self.result_dimensions)}"


@dataclass(frozen=True)
class Reverse:
    """``reverse`` of ``dimensions`` (each at most once, as XLA requires): index ``x`` reads ``size - 1 - x``."""

    dimensions: tuple[int, ...]

    def result_dims(self, dims: tuple[Dim, ...]) -> tuple[Dim, ...]:
        if any(not 0 <= d < len(dims) for d in self.dimensions):
            raise ViewError(f"reverse {list(self.dimensions)}: no such dimension of {list(dims)}")
        if not reverse_dimensions_valid(self.dimensions, len(dims)):
            raise ViewError(f"reverse {list(self.dimensions)}: a dimension is named twice (XLA refuses it)")
        return dims

    def source(self, j: Sequence[Any], dims: tuple[Dim, ...], ar: Arithmetic) -> tuple[Any, ...]:
        self.result_dims(dims)
        return reverse_source_index(j, dims, self.dimensions, ar)

    result = source

    def left_out(self, i: Sequence[Any], dims: tuple[Dim, ...], ar: Arithmetic) -> list[Any]:
        return []

    def __str__(self) -> str:
        return f"reverse {list(self.dimensions)}"


@dataclass(frozen=True)
class Bitcast:
    """Read the buffer as the layout ``to`` (only as the first op: it is about the buffer).

    Result element ``j`` is the operand element stored where ``to`` puts ``j``.
    """

    to: ArrayShape

    def __str__(self) -> str:
        return f"bitcast to {self.to}"


Op = Reshape | Transpose | Slice | Broadcast | Reverse


# ------------------------------------------------------------------------- the view
@dataclass(frozen=True)
class View:
    """The buffer of ``base`` read through ``ops`` (first op applied to ``base``).

    ``dimensions`` are the result's; :meth:`source_index` is the operand element a result
    element is; :meth:`offset` where it is in the buffer.
    """

    base: ArrayShape
    ops: tuple[Op, ...] = ()
    bitcast_to: ArrayShape | None = None
    _dims: tuple[tuple[Dim, ...], ...] = field(default=(), repr=False, compare=False)

    @property
    def dimensions(self) -> tuple[Dim, ...]:
        return self._dims[-1]

    @property
    def is_symbolic(self) -> bool:
        """Whether some size is a symbol (then only formulas and proofs, no enumeration)."""
        return any(not isinstance(d, int) for dims in self._dims for d in dims) or self.base.is_symbolic

    def _sizes(self, what: str) -> tuple[int, ...]:
        if self.is_symbolic:
            raise ViewError(f"{self}: cannot {what} with symbolic sizes; specialize() the view first")
        return tuple(int(d) for d in self.dimensions)

    def specialize(self, sizes: Mapping[object, int]) -> View:
        """The same view with the symbolic sizes given values (keys: names)."""
        ops: list[Op | Bitcast] = (
            [] if self.bitcast_to is None else [Bitcast(self.bitcast_to.specialize(sizes))]
        )
        ops += [_specialized(op, sizes) for op in self.ops]
        return view(self.base.specialize(sizes), *ops)

    def is_layout(self, shape: Shape | str, *, assume: Any = None) -> Any:
        """A proof (``ProofResult``) that every result element is where ``shape`` puts it,
        from the start of the buffer — for every size satisfying ``assume`` when sizes are
        symbolic (Z3 on the stages, as every claim of the prover)."""
        from layout_algebra.prove import equivalent, function_map

        target = meaningful_array(as_shape(shape))
        if len(target.dimensions) != self.rank or not all(
            _same_size(a, b) for a, b in zip(target.dimensions, self.dimensions, strict=True)
        ):
            raise ViewError(f"{target} does not have the view's dimensions {list(self.dimensions)}")
        if layout_map(target).element_bits != self._map.element_bits:
            raise ViewError(f"{target} and {self.base} have elements of different widths")
        proof = equivalent(
            target, function_map(target, lambda j, ar: self.position(j, ar), name=str(self)), assume=assume
        )
        if proof.status == "proved" or assume is not None or not self.is_symbolic:
            return proof
        return _refuted_at_small_sizes(self, target, proof)

    @property
    def rank(self) -> int:
        return len(self.dimensions)

    def __str__(self) -> str:
        chain = [str(op) for op in self.ops]
        if self.bitcast_to is not None:
            chain.insert(0, f"bitcast to {self.bitcast_to}")
        return f"{self.base} through " + (", ".join(chain) if chain else "nothing")

    @property
    def _map(self) -> LayoutMap:
        return layout_map(self.base)

    def read_index(self, j: Sequence[Any], ar: Arithmetic = ARITHMETIC) -> tuple[Any, ...]:
        """The index, in the array the buffer is read as (``base``, or the bitcast's
        layout), that result element ``j`` reads: the ops undone, last op first."""
        index = tuple(j)
        for op, dims in zip(reversed(self.ops), reversed(self._dims[:-1]), strict=True):
            index = op.source(index, dims, ar)
        return index

    def source_index(self, j: Sequence[Any], ar: Arithmetic = ARITHMETIC) -> tuple[Any, ...]:
        """The element of ``base`` that result element ``j`` is (any arithmetic).

        After a bitcast, the element of ``base`` whose slot the bitcast's layout reads (a
        slot that is padding of ``base`` has no element: :meth:`position` is the answer there).
        """
        index = self.read_index(j, ar)
        if self.bitcast_to is not None:
            index, _ = self._map.unapply((self.position(j, ar),), ar, start=len(self._map.stages) - 1)
        return index

    def position(self, j: Sequence[Any], ar: Arithmetic = ARITHMETIC) -> Any:
        """The element slot of result element ``j`` in the buffer (any arithmetic): the
        layout the buffer is read as (the bitcast's, else ``base``'s) at :meth:`read_index`."""
        m = self._map if self.bitcast_to is None else layout_map(self.bitcast_to)
        return m.apply(self.read_index(j, ar), ar, through=len(m.stages) - 1)[0]

    def offset(self, j: Sequence[int], unit: str = "bit") -> int:
        """The offset (``element`` slot, ``bit`` or ``byte``) of result element ``j``, checked."""
        index = tuple(int(x) for x in j)
        dims = self._sizes("evaluate an offset")
        if len(index) != self.rank or any(not 0 <= x < d for x, d in zip(index, dims, strict=True)):
            raise InvalidArgumentError(
                f"{self}: index {list(index)} is out of bounds of {list(self.dimensions)}"
            )
        return int(self._map.offset_of_position(int(self.position(index)), unit))

    def offsets(self, unit: str = "bit") -> np.ndarray:
        """Every result element's offset, as an array of the result's shape (NumPy, no loop)."""
        dims = self._sizes("enumerate offsets")
        count = math.prod(dims, start=1)
        flat = np.arange(count, dtype=np.int64)
        index = _unravel(flat, dims)
        position = np.asarray(self.position(index), dtype=np.int64) + np.zeros(count, dtype=np.int64)
        return np.asarray(self._map.offset_of_position(position, unit)).reshape(dims)

    def forward_expr(self, unit: str = "bit") -> Any:
        """The offset of result element ``(j0, j1, ...)`` as a SymPy expression."""
        import sympy

        from layout_algebra.meaning.stages.symbolic import SYMPY_ARITHMETIC

        symbols = tuple(sympy.Symbol(f"j{k}", integer=True, nonnegative=True) for k in range(self.rank))
        return self._map.offset_of_position(self.position(symbols, SYMPY_ARITHMETIC), unit, SYMPY_ARITHMETIC)

    def _left_out(self, i: Sequence[Any], ar: Arithmetic) -> list[Any]:
        out: list[Any] = []
        index = tuple(i)
        for op, dims in zip(self.ops, self._dims[:-1], strict=True):
            out += op.left_out(index, dims, ar)
            index = op.result(index, dims, ar)
        return out

    def unreached_expr(self) -> Any:
        """Whether buffer element slot ``p`` is not reached by the view (SymPy, in ``p``)."""
        from layout_algebra.meaning.stages.symbolic import OFFSET_SYMBOL, SYMPY_ARITHMETIC

        ar = SYMPY_ARITHMETIC
        m = self._map if self.bitcast_to is None else layout_map(self.bitcast_to)
        index, padding = m.unapply((OFFSET_SYMBOL,), ar, start=len(m.stages) - 1)
        beyond = [ar.ge(OFFSET_SYMBOL, m.size_in_elements)] if self.bitcast_to is not None else []
        return ar.any_of([padding, *beyond, *self._left_out(index, ar)])

    def unreached(self) -> np.ndarray:
        """For each element slot of the buffer, whether no result element is there (NumPy)."""
        self._sizes("enumerate the buffer")
        m = self._map
        size = int(m.size_in_elements)
        reached = np.zeros(size, dtype=bool)
        positions = np.asarray(self.offsets("element")).ravel()
        reached[positions[(positions >= 0) & (positions < size)]] = True
        return ~reached

    def as_layout(self, *, at: Mapping[object, int] | None = None, assume: Any = None) -> ViewLayout:
        """Whether the view is an XLA layout (at some bit offset), and which, with proof.

        With symbolic sizes, the layout is searched at the sizes ``at`` and then proved
        for every size satisfying ``assume`` (starting at bit 0).
        """
        if not self.is_symbolic:
            return _as_layout(self)
        if at is None:
            raise ViewError(
                f"{self}: give sizes to search at (at={{'N': 16, ...}}) for a view with symbolic sizes"
            )
        return _as_symbolic_layout(self, at, assume)


def _unravel(flat: np.ndarray, dims: Sequence[Any]) -> tuple[np.ndarray, ...]:
    """The logical indices of the row-major positions ``flat`` in ``dims`` (a scalar, rank 0,
    has none: its one element is ``()``).

    >>> [c.tolist() for c in _unravel(np.arange(4), (2, 2))], _unravel(np.arange(1), ())
    ([[0, 0, 1, 1], [0, 1, 0, 1]], ())
    """
    if not dims:
        return ()
    return tuple(np.asarray(c, dtype=np.int64) for c in np.unravel_index(flat, tuple(int(d) for d in dims)))


def _refuted_at_small_sizes(v: View, target: ArrayShape, proof: Any) -> Any:
    """With no assumptions, one size where the two differ refutes "for every size": look
    for it by enumeration at small sizes (every symbol the same value), else keep ``proof``."""
    from layout_algebra.prove.result import ProofResult

    names = sorted(
        {
            str(x)
            for d in (*v.base.dimensions, *v.dimensions)
            if not isinstance(d, int)
            for x in d.free_symbols
        }
    )
    for value in (1, 2, 3, 5, 8, 16):
        sizes: dict[object, int] = dict.fromkeys(names, value)
        try:
            concrete, shape = v.specialize(sizes), target.specialize(sizes)
            if math.prod(concrete._sizes("enumerate"), start=1) > ENUMERATION_LIMIT:
                continue
            mine = concrete.offsets("bit").ravel()
        except ValueError:
            continue
        m = layout_map(shape)
        flat = np.arange(mine.size, dtype=np.int64)
        index = _unravel(flat, concrete.dimensions)
        theirs = np.asarray(m.apply(index, through=len(m.stages) - 1)[0], dtype=np.int64) * m.element_bits
        bad = np.flatnonzero(theirs != mine)
        if bad.size:
            j = tuple(int(c[bad[0]]) for c in index)
            return ProofResult(
                "refuted",
                proof.claim,
                proof.seconds,
                "enumeration at small sizes",
                {
                    "sizes": sizes,
                    "element": j,
                    "view_bit": int(mine[bad[0]]),
                    "layout_bit": int(theirs[bad[0]]),
                },
                f"not for every size: at {sizes} element {j} differs",
            )
    return proof


def _specialized(op: Op, sizes: Mapping[object, int]) -> Op:
    def value(d: Any) -> Any:
        if isinstance(d, int):
            return d
        from layout_algebra.model.symbols import as_sympy, dim_symbol

        v = as_sympy(d).subs({(dim_symbol(k) if isinstance(k, str) else k): n for k, n in sizes.items()})
        if not v.is_Integer:
            raise ViewError(f"{op}: no value given for {sorted(map(str, v.free_symbols))}")
        return int(v)

    if isinstance(op, Reshape):
        return Reshape(tuple(value(d) for d in op.dimensions))
    if isinstance(op, Broadcast):
        return Broadcast(op.dimensions, tuple(value(d) for d in op.result_dimensions))
    if isinstance(op, Slice):
        return Slice(op.starts, tuple(value(d) for d in op.limits), op.strides)
    return op


def view(shape: Shape | str, *ops: Op | Bitcast) -> View:
    """The buffer of ``shape`` read through ``ops`` (applied in order); see the module docstring."""
    base = meaningful_array(as_shape(shape))
    if base.layout is None:
        base = replace(base, layout=base.effective_layout)
    layout_map(base)
    bitcast_to = None
    rest: list[Op] = []
    for k, op in enumerate(ops):
        if isinstance(op, Bitcast):
            if k:
                raise ViewError(
                    f"bitcast must be the first op of a view (it reads the buffer), not op {k + 1}"
                )
            bitcast_to = _bitcast_target(base, op.to)
        elif isinstance(op, Reshape | Transpose | Slice | Broadcast | Reverse):
            rest.append(op)
        else:
            raise ViewError(
                f"{op!r} is not a view op (Reshape, Transpose, Slice, Broadcast, Reverse, Bitcast)"
            )
    dims = [tuple(_size(d) for d in (bitcast_to or base).dimensions)]
    for op in rest:
        dims.append(op.result_dims(dims[-1]))
    return View(base, tuple(rest), bitcast_to, tuple(dims))


def _bitcast_target(base: ArrayShape, to: Shape | str) -> ArrayShape:
    target = meaningful_array(as_shape(to))
    if target.layout is None:
        target = replace(target, layout=target.effective_layout)
    a, b = layout_map(base), layout_map(target)
    if base.effective_layout.memory_space != target.effective_layout.memory_space:
        raise ViewError(f"bitcast {base} to {target}: different memory spaces")
    if a.element_bits != b.element_bits:
        raise ViewError(f"bitcast {base} to {target}: {a.element_bits}-bit and {b.element_bits}-bit elements")
    if int(b.size_in_bits) > int(a.size_in_bits):
        raise ViewError(f"bitcast {base} to {target}: {target} needs more bits than the buffer has")
    return target


# ------------------------------------------------------------ is the view a layout?
@dataclass(frozen=True)
class ViewLayout:
    """The answer to "is this view an XLA layout, and which?".

    ``proved``: ``shape`` stores every result element at ``offset_bits`` plus its offset
    in ``shape`` (checked on every element), and fits in the buffer; ``same_buffer`` when
    ``offset_bits`` is 0 and XLA allocates the same bytes for ``shape`` as for the base
    (:func:`~layout_algebra.decide.bitcast.same_allocation`, the bitcast decision's rule).
    ``refuted``: no XLA layout can (``witness``: two elements that show it). ``unknown``:
    none was found (``reason`` says where the search stopped).
    """

    status: str
    view: View
    reason: str
    shape: ArrayShape | None = None
    offset_bits: int = 0
    same_buffer: bool = False
    witness: dict[str, Any] | None = None
    method: str = ""

    def __bool__(self) -> bool:
        return self.status == "proved"

    def __str__(self) -> str:
        head = f"{self.status}: {self.view}"
        if self.shape is not None:
            head += f" is {self.shape} at bit {self.offset_bits:,}"
        return f"{head}\n  {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "view": str(self.view),
            "shape": None if self.shape is None else str(self.shape),
            "offset_bits": self.offset_bits,
            "same_buffer": self.same_buffer,
            "reason": self.reason,
            "witness": self.witness,
            "method": self.method or None,
        }


def _as_symbolic_layout(v: View, at: Mapping[object, int], assume: Any) -> ViewLayout:
    """Found at the sizes ``at``, then proved for every size (or why not)."""
    import sympy

    from layout_algebra.model.symbols import as_sympy
    from layout_algebra.prove import holds

    where = ", ".join(f"{k}={n}" for k, n in at.items())
    found = v.specialize(at).as_layout()
    if found.status != "proved" or found.shape is None or found.offset_bits != 0:
        status = "refuted" if found.status == "refuted" and assume is None else "unknown"
        return ViewLayout(
            status, v, f"at {where}: {found.reason}", witness=found.witness, method=found.method
        )
    layout = found.shape.effective_layout
    general = ArrayShape(v.base.element_type, v.dimensions, (False,) * v.rank, layout)
    proof = v.is_layout(general, assume=assume)
    if proof.status != "proved":
        return ViewLayout(
            "unknown",
            v,
            f"at {where} the view is {found.shape}, but {general} for every size: {proof.status} "
            f"({proof.reason or proof.claim})",
            method="Z3 (symbolic sizes)",
        )
    fits = holds(
        sympy.Le(as_sympy(layout_map(general).size_in_bits), as_sympy(v._map.size_in_bits)),
        assume=assume,
    )
    if fits.status != "proved":
        return ViewLayout(
            "unknown",
            v,
            f"{general} stores every element where the view does, but it could not be proved to fit in the "
            f"buffer for every size: {fits.status} ({fits.reason or fits.claim})",
            general,
            method="Z3 (symbolic sizes)",
        )
    same = holds(  # the allocation rule of the bitcast decision (bitcast.same_allocation), as a formula
        sympy.And(
            sympy.Eq(
                as_sympy(size_report(general).first_tile_bytes),
                as_sympy(size_report(v.base).first_tile_bytes),
            ),
            sympy.Eq(as_sympy(xla_shape_size(general)), as_sympy(xla_shape_size(v.base))),
        ),
        assume=assume,
    )
    return ViewLayout(
        "proved",
        v,
        f"every element is where {general} puts it, at the start of the buffer, for every size"
        + ("; XLA allocates the same bytes" if same.status == "proved" else ""),
        general,
        0,
        same.status == "proved",
        method=f"found by enumerating at {where}, proved by Z3 for every size",
    )


def _as_layout(v: View) -> ViewLayout:
    count = math.prod(v.dimensions, start=1)
    if count > ENUMERATION_LIMIT:
        return ViewLayout("unknown", v, f"{count:,} elements: more than the {ENUMERATION_LIMIT:,} enumerated")
    if count == 0:
        return ViewLayout("unknown", v, "the view has no elements")
    offsets = v.offsets("bit")
    method = f"enumerating all {count:,} elements"
    refutation = _necessary_conditions(v, offsets)
    if refutation is not None:
        return refutation
    k = int(offsets.min())
    own = [_checked(v, s, offsets, k, method) for s in _own_layouts(v, offsets, k)]
    answers = [*own, *_recovered(v, offsets, k, method)]
    proved = [(a, a.shape) for a in answers if a.status == "proved" and a.shape is not None]
    if not proved:
        return answers[len(own)]
    return min(proved, key=lambda pair: (not pair[0].same_buffer, simplicity(pair[1])))[0]


def _own_layouts(v: View, offsets: np.ndarray, k: int) -> list[ArrayShape]:
    """The layouts the view is read through, where they store every element where the view
    does: the view of a layout through no op (or ops that change nothing) is that layout,
    and so is a bitcast with no op after it — whatever its tiles, ``*`` combines included,
    which the digit search does not cover. Each is offered with its normal form."""
    bits = layout_map(v.base).element_bits
    same = _fast_offsets(v, ((offsets.ravel() - k) // bits).astype(np.int64))
    out: list[ArrayShape] = []
    for shape in (v.base, v.bitcast_to):
        if shape is None or tuple(shape.dimensions) != tuple(v.dimensions) or not same(shape):
            continue
        out.append(shape)
        try:
            out.append(normal_form(shape))
        except ValueError:
            continue
    return list(dict.fromkeys(out))


def _recovered(v: View, offsets: np.ndarray, k: int, method: str) -> list[ViewLayout]:
    """The layouts read back from the view's digits (mixed-radix per dimension), each
    checked on every element; or one ``unknown`` saying where the reading stopped."""
    bits = layout_map(v.base).element_bits
    rel = (offsets - k) // bits
    profiles = [_profile(rel, d) for d in range(v.rank)]
    separable = (
        sum(p.reshape([-1 if e == d else 1 for e in range(v.rank)]) for d, p in enumerate(profiles))
        if v.rank
        else np.zeros((), dtype=np.int64)
    )
    if not np.array_equal(separable, rel):
        return [
            ViewLayout(
                "unknown",
                v,
                "the offsets are not a sum of one term per dimension; only layouts with '*' (combined "
                "dimensions) store elements so, and they are not searched",
                method=method,
            )
        ]
    digits = []
    for d, p in enumerate(profiles):
        found = _digits(p)
        if found is None:
            return [
                ViewLayout(
                    "unknown",
                    v,
                    f"along dimension {d} the offsets (in elements) {_show(p)} are not mixed-radix digits "
                    f"⌊j/w⌋ mod m times strides",
                    method=method,
                )
            ]
        for n, (weight, size, stride) in enumerate(found):
            digits.append((d, weight, None if n == len(found) - 1 else size, stride))
    dtype = v.base.element_type.text
    e = v.base.effective_layout.element_size_in_bits
    try:
        positions = _positions(digits, v.dimensions)
        recovered = recover_layout(dtype, v.dimensions, positions, exact=False, element_size_in_bits=e)
    except NotExpressible as err:
        hint = ""
        if any(isinstance(op, Slice) for op in v.ops):
            hint = " (as when a slice starts or stops inside a tile)"
        return [ViewLayout("unknown", v, f"{_digits_text(digits)}: {err}{hint}", method=method)]
    return [
        _checked(v, normal_form(c), offsets, k, method) for c in _seeds(v, _with_space(recovered, v.base))
    ]


def _seeds(v: View, recovered: ArrayShape) -> list[ArrayShape]:
    """The recovered layout, and the base's own tiles (and none) in every ``minor_to_major``
    of a small rank: a slice of whole tiles is the base's layout again, which recovery may
    spell differently (``{0,1:T(128,1)}`` for ``{1,0:T(8,128)}``)."""
    out = [recovered]
    layout = v.base.effective_layout
    orders = itertools.permutations(range(v.rank)) if v.rank <= 4 else [tuple(reversed(range(v.rank)))]
    target = v.offsets("element").ravel()
    offsets_of = _fast_offsets(v, target - target[0])
    for order in orders:
        for tiles in (layout.tiles, ()):
            candidate = replace(recovered, layout=replace(layout, minor_to_major=tuple(order), tiles=tiles))
            try:
                if offsets_of(candidate):
                    out.append(candidate)
            except (ValueError, TypeError):
                continue
    return out


def _fast_offsets(v: View, target: np.ndarray) -> Any:
    """A cheap test: does ``candidate`` put every element where the view does (``target``,
    element slots from the first element)? Sampled elements first, then all."""
    count = target.size
    rng = np.random.default_rng(count)
    probes = np.unique(np.concatenate([[0, count - 1], rng.integers(0, count, 256)])).astype(np.int64)

    def at(candidate: ArrayShape, flat: np.ndarray) -> np.ndarray:
        m = layout_map(meaningful_array(candidate))
        index = _unravel(flat, v.dimensions)
        return np.broadcast_to(
            np.asarray(m.apply(index, through=len(m.stages) - 1)[0], dtype=np.int64), flat.shape
        )

    def same(candidate: ArrayShape) -> bool:
        if not np.array_equal(at(candidate, probes), target[probes]):
            return False
        return bool(np.array_equal(at(candidate, np.arange(count, dtype=np.int64)), target))

    return same


def _positions(digits: list[tuple[int, int, int | None, int]], dims: tuple[Dim, ...]) -> tuple[Position, ...]:
    """The positions of a tiled shape with these digits and strides.

    When the smallest stride ``s`` is not 1 but a dimension has size 1, that dimension can
    be the minor one, padded to ``s`` by a tile (``f32[16,33,1]{2,1,0:T(1024)}`` keeps
    every element 1,024 slots apart): the positions of the strides divided by ``s``, then
    that dimension over ``s`` slots.
    """
    strides = [s for d, _, _, s in digits if dims[d] > 1]
    smallest = min(strides, default=1)
    units = [d for d, n in enumerate(dims) if n == 1]
    if smallest == 1 or not units or any(s % smallest for s in strides):
        return strided_positions(digits, dims)
    scaled = [(d, w, m, s // smallest) for d, w, m, s in digits]
    return (*strided_positions(scaled, dims), Position(units[-1], 1, None, smallest))


def _with_space(shape: ArrayShape, base: ArrayShape) -> ArrayShape:
    return replace(
        shape, layout=replace(shape.effective_layout, memory_space=base.effective_layout.memory_space)
    )


def _checked(v: View, shape: ArrayShape, offsets: np.ndarray, k: int, method: str) -> ViewLayout:
    """``proved`` only if ``shape`` puts every element at its view offset minus ``k``."""
    m = layout_map(shape)
    count = offsets.size
    flat = np.arange(count, dtype=np.int64)
    index = _unravel(flat, v.dimensions)
    mine = np.asarray(m.apply(index, through=len(m.stages) - 1)[0], dtype=np.int64) * m.element_bits
    if not np.array_equal(
        np.broadcast_to(mine, flat.shape) + k, offsets.ravel()
    ):  # pragma: no cover - recover checks its answer
        return ViewLayout(
            "unknown", v, f"{shape} was recovered but does not match every element", method=method
        )
    base_bits = int(layout_map(v.base).size_in_bits)
    if k + int(m.size_in_bits) > base_bits:
        return ViewLayout(
            "unknown",
            v,
            f"{shape} at bit {k:,} would need {k + int(m.size_in_bits):,} bits; the buffer has {base_bits:,}",
            shape,
            k,
            method=method,
        )
    same = k == 0 and same_allocation(shape, v.base)
    where = (
        "at the start of the buffer"
        if k == 0
        else f"at bit {k:,} of the buffer" + (f" (byte {k // 8:,})" if k % 8 == 0 else "")
    )
    return ViewLayout(
        "proved",
        v,
        f"every element is where {shape} puts it, {where}"
        + ("; XLA allocates the same bytes" if same else ""),
        shape,
        k,
        same,
        method=method,
    )


def _necessary_conditions(v: View, offsets: np.ndarray) -> ViewLayout | None:
    """Facts of every XLA layout, each refuted by a pair of elements.

    * No two elements share a place (a layout is injective).
    * Element ``(0, ..., 0)`` comes first: every stage (pad, split ``x ↦ (⌊x/t⌋, x mod t)``,
      transpose, combine ``c·D + x``) maps the zero index to zeros, so its row-major
      position is 0, and no offset is below it.

    Not a fact: "index 1 of a dimension comes after index 0" (whatever the other indices).
    It holds where each dimension's offsets add up independently, but a ``*`` combine
    followed by another tile mixes dimensions: ``f32[2,2]{1,0:T(*,3)(2,1)}`` stores
    element ``(1, 1)`` before ``(0, 1)``.
    """
    flat = offsets.ravel()
    order = np.argsort(flat, kind="stable")
    same = np.flatnonzero(flat[order][1:] == flat[order][:-1])
    if same.size:
        a, b = (
            tuple(int(x[0]) for x in _unravel(order[s : s + 1], v.dimensions)) for s in (same[0], same[0] + 1)
        )
        return ViewLayout(
            "refuted",
            v,
            f"elements {a} and {b} are at the same bit {int(flat[order[same[0]]]):,}: an XLA layout gives every "
            "element its own place (a broadcast shares them)",
            witness={"elements": [a, b], "bit": int(flat[order[same[0]]])},
            method="enumerating every element",
        )
    origin = (0,) * v.rank
    first = int(offsets[origin]) if v.rank else int(flat[0])
    if int(flat.min()) < first:
        low = tuple(int(x[0]) for x in _unravel(order[:1], v.dimensions))
        return ViewLayout(
            "refuted",
            v,
            f"element {low} is stored before element {origin} (bit {int(flat.min()):,} < bit {first:,}): "
            "every XLA layout stores element 0 first",
            witness={"elements": [origin, low], "bits": [first, int(flat.min())]},
            method="enumerating every element",
        )
    return None


def _profile(rel: np.ndarray, d: int) -> np.ndarray:
    """The offsets along dimension ``d`` with every other index 0."""
    index = tuple(slice(None) if e == d else 0 for e in range(rel.ndim))
    return np.asarray(rel[index], dtype=np.int64)


def _digits(p: np.ndarray) -> list[tuple[int, int, int]] | None:
    """``p(x) = Σ ⌊x/w⌋ mod m · s`` as ``[(w, m, s), ...]`` (weights increasing), or ``None``.

    Greedy: at weight ``w`` the next digit's stride is ``p(w)``; it runs while
    ``p(w·c) = c·p(w)``; the last digit takes what is left. Checked on every ``x``.
    """
    n = len(p)
    out: list[tuple[int, int, int]] = []
    w = 1
    while w < n:
        s = int(p[w])
        c = 1
        while w * c < n and int(p[w * c]) == c * s:
            c += 1
        size = c if w * c < n else -(-n // w)
        out.append((w, size, s))
        w *= size
    x = np.arange(n, dtype=np.int64)
    value = sum(((x // w) % m) * s for w, m, s in out) if out else np.zeros(n, dtype=np.int64)
    return out if np.array_equal(value, p) else None


def _digits_text(digits: list[tuple[int, int, int | None, int]]) -> str:
    parts = []
    for d in sorted({d for d, *_ in digits}):
        steps = " + ".join(f"{_digit(d, w, m)}·{s}" for e, w, m, s in digits if e == d)
        parts.append(f"dimension {d}: {steps}")
    return "the view's digits times strides (in elements) are " + "; ".join(parts)


def _digit(d: int, w: int, m: int | None) -> str:
    text = f"j{d}" if w == 1 else f"⌊j{d}/{w}⌋"
    return text if m is None else f"({text} mod {m})"


def _show(p: np.ndarray) -> str:
    values = p.tolist()
    return str(values) if len(values) <= 8 else str(values[:8])[:-1] + ", ...]"
