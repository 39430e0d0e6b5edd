"""Comparing two HLO modules by running them: :func:`compare` and its :class:`Comparison`."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from layout_algebra.hlo.execute import (
    Buffer,
    array_shape_at,
    as_module,
    check_bitcast_sizes,
    given_sizes,
    inferred_sizes,
    ones_bits,
    run,
)
from layout_algebra.hlo.execute_ops import UnsupportedOpError, type_bits, type_kind
from layout_algebra.hlo.ir import HloModule
from layout_algebra.hlo.validity import InvalidHlo
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.meaning.sizes import size_report
from layout_algebra.model.errors import InvalidArgumentError
from layout_algebra.model.shapes import ArrayShape, Shape, TupleShape
from layout_algebra.packing.formats import numpy_dtype
from layout_algebra.packing.numpy_eval import pack, unpack


# ------------------------------------------------------------------------ compare
@dataclass(frozen=True)
class Comparison:
    """Whether two modules' roots are the same, decided by running them.

    ``same`` is ``True`` (same on every trial and in every check), ``False`` (with the
    first difference: ``element``, the root index, and ``detail``), or ``None`` when the
    executor cannot decide (``reason`` says why, naming the op). ``sizes`` are the values
    the symbolic dimensions had; ``trials`` how many random parameter sets were run.
    """

    same: bool | None
    element: tuple[int, ...] | None = None
    detail: str = ""
    reason: str = ""
    sizes: dict[str, int] = field(default_factory=dict)
    trials: int = 0

    @property
    def status(self) -> str:
        """The package's answer: ``refuted`` when a run found a difference; ``unknown`` otherwise,
        for random trials that agree prove nothing (``same`` says whether they agreed)."""
        return "refuted" if self.same is False else "unknown"

    def __bool__(self) -> bool:
        return False  # an answer is truthy exactly when proved, and running never proves

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data: the status, ``same``, the first difference, the sizes and trials."""
        return {
            "status": self.status,
            "same": self.same,
            "element": None if self.element is None else [int(i) for i in self.element],
            "detail": self.detail,
            "reason": self.reason,
            "sizes": {str(k): int(v) for k, v in self.sizes.items()},
            "trials": self.trials,
        }


Mode = Literal["physical", "logical"]


def _leaves(shape: Shape, where: str) -> list[Shape]:
    if isinstance(shape, TupleShape):
        return [leaf for s in shape.elements for leaf in _leaves(s, where)]
    return [shape]


def _specialized(shape: Shape, sizes: Mapping[str, int], where: str) -> Any:
    """An array shape at ``sizes``, or a tuple shape with every leaf so (a tuple parameter)."""
    if isinstance(shape, TupleShape):
        return TupleShape(tuple(_specialized(s, sizes, where) for s in shape.elements))
    return array_shape_at(shape, sizes, where)


def _random_value(shape: Any, rng: np.random.Generator) -> Any:
    if isinstance(shape, TupleShape):
        return tuple(_random_value(s, rng) for s in shape.elements)
    return random_array(shape, rng)


def _logical(shape: Any) -> Any:
    if isinstance(shape, TupleShape):
        return tuple(_logical(s) for s in shape.elements)
    return (shape.element_type, tuple(shape.dimensions))


def _entry_parameters(module: HloModule, sizes: Mapping[str, int]) -> dict[int, Any]:
    params = {}
    for ins in module.entry.instructions:
        if ins.opcode == "parameter":
            params[ins.parameter_number] = _specialized(ins.shape, sizes, f"parameter {ins.name!r}")
    if sorted(params) != list(range(len(params))):
        raise InvalidHlo(
            f"module {module.name!r}: parameter numbers {sorted(params)} are not 0..{len(params) - 1}"
        )
    return params


def _entropy_bits(shape: ArrayShape) -> int:
    """A lower bound on the collision entropy of one element of ``random_array``'s data:
    ``-log2 P(two independent draws are equal)``."""
    kind, bits = type_kind(shape), type_bits(shape)
    if kind == "pred":
        return 1
    if kind in ("float", "complex") and bits > 8:
        return 9  # normal values and 5% specials: measured 9.7 bits for bf16, more for wider types
    return min(bits, 16)


def _module_types(module: HloModule, sizes: Mapping[str, int]) -> list[ArrayShape]:
    shapes = []
    for _, ins in module.instructions():
        for leaf in _leaves(ins.shape, ins.name):
            if isinstance(leaf, ArrayShape):
                shapes.append(leaf)
    return shapes


def random_array(shape: ArrayShape, rng: np.random.Generator) -> np.ndarray:
    """Random logical data for ``shape``: uniform codes for integers, pred and types of at
    most 8 bits; normal values with 5% specials (0, -0, ±1, ±inf, NaN) for wider floats."""
    dims = tuple(int(d) for d in shape.dimensions)
    dtype = numpy_dtype(shape.element_type)
    kind, bits = type_kind(shape), type_bits(shape)
    n = math.prod(dims)
    if kind == "pred":
        return rng.integers(0, 2, dims).astype(bool)
    if kind in ("signed", "unsigned") or bits <= 8:  # uniform codes (ml_dtypes keeps them in the low bits)
        codes = rng.integers(0, 1 << min(bits, 8), (n, dtype.itemsize), dtype=np.uint8)
        return codes.view(dtype).reshape(dims)
    if kind == "complex":
        parts = rng.normal(0.0, 3.0, (n, 2))
        return (parts[:, 0] + 1j * parts[:, 1]).astype(dtype).reshape(dims)
    values = rng.normal(0.0, 3.0, n)
    specials = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan])
    pick = rng.random(n) < 0.05
    values[pick] = specials[rng.integers(0, len(specials), int(pick.sum()))]
    return values.astype(dtype).reshape(dims)


def _element_order(shape: ArrayShape) -> np.ndarray:
    """Deterministic check data: for each bit of the root buffer, which element holds it.

    Element numbers are written in base ``2**b`` digits, one ``pack`` per digit (``b`` the
    element's bits, at most 8), so each packed buffer names the element at every slot.
    Returns the stacked packed digit buffers (one row per digit)."""
    dims = tuple(shape.dimensions)
    dtype = numpy_dtype(shape.element_type)
    n = math.prod(dims)
    bits = 1 if type_kind(shape) == "pred" else min(layout_map(shape).element_bits, 8)
    numbers = np.arange(n, dtype=np.int64)
    rows = []
    digit_count = max(1, math.ceil(math.log2(max(n, 2)) / bits))
    for k in range(digit_count):
        digit = ((numbers >> (k * bits)) & ((1 << bits) - 1)).astype(np.uint8)
        carrier = np.zeros((n, dtype.itemsize), np.uint8)
        carrier[:, 0] = digit  # little-endian: the low byte of the element
        if type_kind(shape) == "pred":
            data = digit.astype(bool)
        else:
            data = carrier.view(dtype).reshape(n)
        rows.append(pack(data.reshape(dims), shape, fill=0))
    return np.stack(rows) if rows else np.zeros((0, 0), np.uint8)


def _occupied(shape: ArrayShape) -> np.ndarray:
    dtype = numpy_dtype(shape.element_type)
    return pack(ones_bits(tuple(shape.dimensions), dtype), shape, fill=0)


def _physical_checks(ra: ArrayShape, rb: ArrayShape) -> tuple[str, tuple[int, ...] | None] | None:
    """Why the two root shapes cannot hold the same buffer, or ``None``."""
    sa, sb = ra.effective_layout.memory_space, rb.effective_layout.memory_space
    if sa != sb:
        return f"root memory spaces differ: S({sa}) before, S({sb}) after", None
    a, b = size_report(ra), size_report(rb)
    if a.element_bits != b.element_bits:  # E(n): part of the buffer, even an empty one
        return f"root element sizes differ: {a.element_bits} bits before, {b.element_bits} after", None
    if (a.physical_bytes, a.first_tile_bytes) != (b.physical_bytes, b.first_tile_bytes):
        return (
            f"root buffer sizes differ: {a.physical_bytes} bytes exact / {a.first_tile_bytes} allocated before, "
            f"{b.physical_bytes} / {b.first_tile_bytes} after",
            None,
        )
    if not np.array_equal(_occupied(ra), _occupied(rb)):
        return "the root elements occupy different bits of the buffer", _first_moved(ra, rb)
    oa, ob = _element_order(ra), _element_order(rb)
    if not np.array_equal(oa & _occupied(ra), ob & _occupied(rb)):
        return "a root element lies at different bits before and after", _first_moved(ra, rb)
    return None


def _first_moved(ra: ArrayShape, rb: ArrayShape) -> tuple[int, ...] | None:
    ma, mb = layout_map(ra), layout_map(rb)
    for index in np.ndindex(*tuple(ra.dimensions)):
        if ma.forward(index, "bit") != mb.forward(index, "bit"):
            return tuple(int(i) for i in index)
    return None


def _bits_equal(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per element: the same bytes (values compared bit for bit, NaN payloads included)."""
    bx = np.ascontiguousarray(x).reshape(*x.shape, 1).view(np.uint8)
    by = np.ascontiguousarray(y).reshape(*y.shape, 1).view(np.uint8)
    return np.all(bx == by, axis=-1)


def _show(value: Any) -> str:
    item = value.item() if hasattr(value, "item") else value
    return repr(item) if not isinstance(item, float) else str(item)


def compare(
    before: HloModule | str,
    after: HloModule | str,
    *,
    mode: Mode = "physical",
    sizes: Mapping[str, int] | None = None,
    trials: int = 4,
    seed: int = 0,
    max_trials: int | None = None,
) -> Comparison:
    """Run ``before`` and ``after`` on the same random parameters; are their roots the same?

    See the module docstring for what "the same" means in each ``mode`` and for the number of
    trials actually run (``max_trials`` caps it: fewer trials can only miss a difference, never
    invent one). Raises :class:`InvalidHlo` for invalid modules and
    ``ValueError`` for a bad ``mode``; an op the executor does not interpret gives
    ``same=None`` with the reason.
    """
    if mode not in ("physical", "logical"):
        raise InvalidArgumentError(f"mode must be 'physical' or 'logical', got {mode!r}")
    a, b = as_module(before), as_module(after)
    values = given_sizes(sizes)
    for module in (a, b):  # a symbol only bitcasts carry: where they keep their shape sizes
        values = inferred_sizes(module, (), values)
    try:
        return _compare(a, b, mode, values, trials, seed, max_trials)
    except UnsupportedOpError as err:
        return Comparison(None, reason=str(err), sizes=values)


def _compare(
    a: HloModule,
    b: HloModule,
    mode: str,
    sizes: dict[str, int],
    trials: int,
    seed: int,
    max_trials: int | None = None,
) -> Comparison:
    for module in (a, b):  # invalid HLO before any answer, as the verifier does
        check_bitcast_sizes(module, sizes)
    pa, pb = _entry_parameters(a, sizes), _entry_parameters(b, sizes)
    if len(pa) != len(pb) or any(_logical(pa[k]) != _logical(pb[k]) for k in pa):
        raise InvalidHlo(
            f"the modules take different parameters: {[str(pa[k]) for k in sorted(pa)]} before, "
            f"{[str(pb[k]) for k in sorted(pb)]} after"
        )
    if mode == "physical" and any(pa[k] != pb[k] for k in pa):
        k = next(k for k in pa if pa[k] != pb[k])
        return Comparison(
            None, reason=f"physical mode compares modules with the same parameter buffers: parameter({k}) "
            f"is {pa[k]} before, {pb[k]} after", sizes=sizes,
        )  # fmt: skip
    roots_a = [array_shape_at(s, sizes, "the root") for s in _leaves(a.entry.root.shape, "root")]
    roots_b = [array_shape_at(s, sizes, "the root") for s in _leaves(b.entry.root.shape, "root")]
    if len(roots_a) != len(roots_b):
        return Comparison(
            False, detail=f"the roots have {len(roots_a)} and {len(roots_b)} arrays", sizes=sizes
        )
    for k, (ra, rb) in enumerate(zip(roots_a, roots_b, strict=True)):
        leaf = f" (tuple element {k})" if len(roots_a) > 1 else ""
        if ra.element_type != rb.element_type or tuple(ra.dimensions) != tuple(rb.dimensions):
            return Comparison(
                False, detail=f"the roots differ in type or dimensions: {ra} vs {rb}{leaf}", sizes=sizes
            )
        if mode == "physical":
            problem = _physical_checks(ra, rb)
            if problem is not None:
                return Comparison(False, element=problem[1], detail=problem[0] + leaf, sizes=sizes)
    types = _module_types(a, sizes) + _module_types(b, sizes)
    entropy = min((_entropy_bits(s) for s in types), default=16)
    count = max(trials, math.ceil(48 / entropy))
    count = count if max_trials is None else max(1, min(count, max_trials))
    rng = np.random.default_rng(seed)
    for trial in range(count):
        params = [_random_value(pa[k], rng) for k in sorted(pa)]
        out_a = run(a, params, sizes=sizes, junk=rng)
        out_b = run(b, params, sizes=sizes, junk=rng)
        flat_a, flat_b = _flatten(out_a), _flatten(out_b)
        for k, (xa, xb) in enumerate(zip(flat_a, flat_b, strict=True)):
            leaf = f" (tuple element {k})" if len(flat_a) > 1 else ""
            ca, cb = _compared(xa, mode), _compared(xb, mode)
            bad = ~(xa.defined & xb.defined & _bits_equal(ca, cb))
            if bad.any():
                index = tuple(int(i) for i in np.argwhere(bad)[0])
                return Comparison(
                    False, index, _difference(index, xa, xb, ca, cb) + leaf, sizes=sizes, trials=trial + 1
                )
    return Comparison(True, detail=f"same on {count} random trials", sizes=sizes, trials=count)


def _flatten(value: Any) -> list[Buffer]:
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in _flatten(v)]
    return [value]


def _compared(x: Buffer, mode: str) -> np.ndarray:
    """What each root element is compared by (bit for bit, one array element per element).

    Physical mode: the bits its slot stores in the root buffer (``unpack`` of the buffer: for
    a sub-byte type in a wider slot, the bits above the value too; an op stores zeros there,
    a bitcast from packed slots the next elements). Logical mode: its value, the type's own
    bits (for a sub-byte type, the low bits of the slot)."""
    etype = x.shape.element_type
    if mode == "physical":  # whole-byte values fill their slot's bits: the array holds them
        return unpack(x.data, x.shape) if etype.bit_width < 8 else x.array
    if etype.text != "pred" and etype.bit_width < 8:
        codes = np.ascontiguousarray(x.array).view(np.uint8) & ((1 << etype.bit_width) - 1)
        return codes
    return x.array


def _stored_text(values: np.ndarray, index: tuple[int, ...]) -> str:
    raw = np.ascontiguousarray(values[index]).reshape(1)
    code = int.from_bytes(raw.view(np.uint8).tobytes(), "little")
    return f"0x{code:0{2 * raw.dtype.itemsize}x}"


def _difference(index: tuple[int, ...], xa: Buffer, xb: Buffer, ca: np.ndarray, cb: np.ndarray) -> str:
    def side(x: Buffer) -> str:
        return _show(x.array[index]) if x.defined[index] else "undefined (read from padding)"

    before, after = side(xa), side(xb)
    text = f"root element {index}: before {before}, after {after}"
    if before == after and xa.defined[index] and xb.defined[index]:  # equal as printed: show the bits
        text += f" (stored bits {_stored_text(ca, index)} before, {_stored_text(cb, index)} after"
        etype = xa.shape.element_type
        bits = layout_map(xa.shape).element_bits
        if etype.text != "pred" and etype.bit_width < bits:
            text += f": the same {etype.bit_width}-bit value, other bits above it in its {bits}-bit slot"
        text += ")"
    return text
