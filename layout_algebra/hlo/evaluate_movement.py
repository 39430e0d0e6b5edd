"""The rewrite verifier's data-movement ops: each maps a result element to its operands' elements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import z3

from layout_algebra.hlo.attributes import parse_int_list
from layout_algebra.hlo.ir import HloInstruction
from layout_algebra.hlo.validity import (
    InvalidHlo,
    host_memory_problem,
)
from layout_algebra.hlo.verify_values import (
    App,
    Inexpressible,
    Number,
    Scope,
    SlotBits,
    Undefined,
    UnsupportedHlo,
    all_of,
    any_of,
    as_condition,
    check_mapped_dims,
    digit_of,
    dims_equal,
    instruction_named,
    literal_elements,
    memory_space_of,
    real_value,
    resized_bitcast_problem,
    whole_value,
)
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.meaning.logical_ops import (
    broadcast_maps_dimensions,
    broadcast_source_index,
    concatenate_source_index,
    concatenate_starts,
    dynamic_slice_clamped_start,
    dynamic_slice_source_index,
    dynamic_update_slice_reads_update,
    dynamic_update_slice_update_index,
    pad_reads_operand,
    pad_size,
    pad_source_index,
    reshape_source_index,
    reverse_dimensions_valid,
    reverse_source_index,
    slice_range_fits,
    slice_size,
    slice_source_index,
    transpose_source_index,
)
from layout_algebra.model.internal_names import start_name


class MovementOps:
    """The data-movement ops of the element evaluator (``op_<opcode>`` methods, mixed into it)."""

    def op_constant(self, scope, instr, shape, index):
        values = literal_elements(instr.literal or "", shape, instr.name)
        etype = self.value_type(shape.element_type.text)  # a float literal keeps its value
        if not self.symbolic or all(isinstance(i, int) for i in index):
            flat = 0
            for i, d in zip(index, shape.dimensions, strict=True):
                flat = flat * d + i
            return Number(etype, values[flat])
        if all(v == values[0] for v in values):
            return Number(etype, values[0])
        # one term: the value at the flat index (an If chain), not one choice per element
        flat_term: Any = 0
        for i, d in zip(index, shape.dimensions, strict=True):
            flat_term = flat_term * d + i
        term = real_value(values[-1])
        for k in range(len(values) - 2, -1, -1):
            term = z3.If(flat_term == k, real_value(values[k]), term)
        return Number(etype, term)

    def op_copy(self, scope, instr, shape, index):
        source = self.operand_shape(scope, instr, 0)
        self.check_same_dims(instr, source, shape)
        return self.sub(scope, instr, 0, index)

    def op_iota(self, scope, instr, shape, index):
        raw = instr.attributes.get("iota_dimension")
        if raw is None or not raw.strip().isdigit() or int(raw) >= shape.rank:
            raise InvalidHlo(f"iota {instr.name} needs iota_dimension in [0, {shape.rank}), got {raw!r}")
        d = int(raw)
        etype = shape.element_type
        size = shape.dimensions[d]
        if etype.value.kind in ("signed", "unsigned") and isinstance(size, int):
            largest = (1 << (etype.bit_width - (etype.value.kind == "signed"))) - 1
            if size - 1 <= largest:  # every index is exactly representable: the value is the index
                return Number(etype.text, index[d])
        # a float, or an index that may not fit: the index converted (uninterpreted)
        return App(f"convert->{etype.text}", (Number("index", index[d]),))

    def op_reshape(self, scope, instr, shape, index):
        source = self.operand_shape(scope, instr, 0)
        self.check_count(instr, source, shape)
        return self.sub(
            scope, instr, 0, list(reshape_source_index(index, shape.dimensions, source.dimensions, self.ar))
        )

    def op_transpose(self, scope, instr, shape, index):
        source = self.operand_shape(scope, instr, 0)
        perm = instr.dimensions or ()
        if sorted(perm) != list(range(source.rank)) or shape.rank != source.rank:
            raise InvalidHlo(
                f"transpose {instr.name}: dimensions={{{','.join(map(str, perm))}}} is not a permutation of {source.rank} dimensions"
            )
        check_mapped_dims(instr, source, shape, ((p, k) for k, p in enumerate(perm)))
        return self.sub(scope, instr, 0, list(transpose_source_index(index, perm)))

    def op_broadcast(self, scope, instr, shape, index):
        source = self.operand_shape(scope, instr, 0)
        dims = instr.dimensions or ()
        if not broadcast_maps_dimensions(dims, source.rank, shape.rank):
            raise InvalidHlo(
                f"broadcast {instr.name}: dimensions={{{','.join(map(str, dims))}}} does not map the operand's {source.rank} dimensions into {shape.rank}"
            )
        check_mapped_dims(instr, source, shape, enumerate(dims))
        return self.sub(scope, instr, 0, list(broadcast_source_index(index, dims)))

    def op_reverse(self, scope, instr, shape, index):
        source = self.operand_shape(scope, instr, 0)
        self.check_same_dims(instr, source, shape)
        dims = instr.dimensions or ()
        if not reverse_dimensions_valid(dims, shape.rank):
            raise InvalidHlo(
                f"reverse {instr.name}: dimensions={{{','.join(map(str, dims))}}} out of range for rank {shape.rank}"
            )
        sizes = [self.lift(d) for d in shape.dimensions]
        return self.sub(scope, instr, 0, list(reverse_source_index(index, sizes, dims)))

    def op_slice(self, scope, instr, shape, index):
        source = self.operand_shape(scope, instr, 0)
        spec = instr.slice or ()
        if len(spec) != source.rank:
            raise InvalidHlo(
                f"slice {instr.name} has {len(spec)} ranges for an operand of rank {source.rank}"
            )
        for k, s in enumerate(spec):
            d = source.dimensions[k]
            if not isinstance(d, int):
                self.requirements.append(
                    (
                        s.limit,
                        d,
                        True,
                        f"slice {instr.name}: [{s.start}:{s.limit}] is out of range for dimension {k} of size {d}",
                    )
                )
            if not slice_range_fits(s.start, s.limit, s.stride, d):
                raise InvalidHlo(
                    f"slice {instr.name}: [{s.start}:{s.limit}:{s.stride}] is out of range for dimension {k} of size {d}"
                )
            size = slice_size(s.start, s.limit, s.stride)
            if not dims_equal(shape.dimensions[k], size):
                raise InvalidHlo(
                    f"slice {instr.name}: result dimension {k} is {shape.dimensions[k]}, the range [{s.start}:{s.limit}:{s.stride}] has {size}"
                )
        starts, strides = [s.start for s in spec], [s.stride for s in spec]
        return self.sub(scope, instr, 0, list(slice_source_index(index, starts, strides)))

    def op_concatenate(self, scope, instr, shape, index):
        if not instr.dimensions or len(instr.dimensions) != 1:
            raise InvalidHlo(f"concatenate {instr.name} needs one dimension")
        (d,) = instr.dimensions
        if not 0 <= d < shape.rank:
            raise InvalidHlo(
                f"concatenate {instr.name}: dimensions={{{d}}} out of range for rank {shape.rank}"
            )
        sizes = []
        for k in range(len(instr.operands)):
            o_shape = self.operand_shape(scope, instr, k)
            if o_shape.rank != shape.rank or any(
                not dims_equal(a, b)
                for i, (a, b) in enumerate(zip(o_shape.dimensions, shape.dimensions, strict=False))
                if i != d
            ):
                raise InvalidHlo(
                    f"concatenate {instr.name}: operand {k} {o_shape} does not match {shape} outside dimension {d}"
                )
            sizes.append(o_shape.dimensions[d])
        *starts, total = concatenate_starts(sizes)
        if not dims_equal(total, shape.dimensions[d]):
            raise InvalidHlo(
                f"concatenate {instr.name}: the operands add up to {total} in dimension {d}, the result has {shape.dimensions[d]}"
            )

        def from_piece(k: int) -> Any:
            src = list(concatenate_source_index(index, d, self.lift(starts[k])))
            if k == len(starts) - 1:
                return self.sub(scope, instr, k, src)
            end = self.lift(starts[k + 1])
            return self.choose(
                as_condition(index[d] < end),
                lambda: self.sub(scope, instr, k, src),
                lambda: from_piece(k + 1),
            )

        return from_piece(0)

    def op_pad(self, scope, instr, shape, index):
        source = self.operand_shape(scope, instr, 0)
        config = instr.padding or ()
        if len(config) != source.rank:
            raise InvalidHlo(f"pad {instr.name} has {len(config)} padding entries for rank {source.rank}")
        if self.operand_shape(scope, instr, 1).rank != 0:
            raise InvalidHlo(f"pad {instr.name}: the padding value must be a scalar")
        for k, (p, d) in enumerate(zip(config, source.dimensions, strict=True)):
            expected = pad_size(p.low, p.high, p.interior, d)
            if p.interior < 0 or not dims_equal(shape.dimensions[k], expected):
                raise InvalidHlo(
                    f"pad {instr.name}: dimension {k} of {d} padded {p.low}_{p.high}_{p.interior} has {expected} elements, the result has {shape.dimensions[k]}"
                )
        lows, interiors = [p.low for p in config], [p.interior for p in config]
        sizes = [self.lift(d) for d in source.dimensions]
        src = list(pad_source_index(index, lows, interiors, sizes, self.ar))
        inside = all_of(*(as_condition(c) for c in pad_reads_operand(index, lows, interiors, sizes, self.ar)))
        return self.choose(
            inside, lambda: self.sub(scope, instr, 0, src), lambda: self.sub(scope, instr, 1, [])
        )

    def offsets(
        self, scope, instr, first: int, operand_dims: Sequence[Any], slice_dims: Sequence[Any]
    ) -> list[Any]:
        """Start indices from scalar operands, clamped as XLA does (:func:`dynamic_slice_clamped_start`)."""
        out = []
        for k, (d, s) in enumerate(zip(operand_dims, slice_dims, strict=True)):
            start = self.scalar_int(scope, self.operand(scope, instr, first + k))
            operand_dim, slice_dim = self.lift(d), self.lift(s)
            if isinstance(start, int) and isinstance(operand_dim, int) and isinstance(slice_dim, int):
                out.append(dynamic_slice_clamped_start(start, operand_dim, slice_dim))
            else:
                start = z3.IntVal(start) if isinstance(start, int) else start
                out.append(dynamic_slice_clamped_start(start, operand_dim, slice_dim, z3.If))
        return out

    def is_constant_through_copies(self, scope: Scope, instr: HloInstruction) -> bool:
        """Whether ``instr`` is a ``constant`` or a chain of ``copy`` of one (XLA's bitcast exemption)."""
        seen: set[str] = set()
        while instr.opcode == "copy" and instr.name not in seen and instr.operands:
            seen.add(instr.name)
            instr = self.operand(scope, instr, 0)
        return instr.opcode == "constant"

    def scalar_int(self, scope: Scope, instr: HloInstruction) -> Any:
        shape = self.shape_of(scope, instr)
        if shape.rank != 0 or shape.element_type.value.kind not in ("signed", "unsigned"):
            raise InvalidHlo(f"{instr.name} is used as a start index but is {shape}, not an integer scalar")
        if instr.opcode == "constant":
            (value,) = literal_elements(instr.literal or "", shape, instr.name)
            return value
        if instr.opcode == "copy":
            return self.scalar_int(scope, self.operand(scope, instr, 0))
        if instr.opcode == "get-tuple-element" and instr.index is not None:  # of a tuple: its element
            source = self.operand(scope, instr, 0)
            if source.opcode == "tuple":
                return self.scalar_int(scope, self.operand(scope, source, instr.index))
        if instr.opcode == "parameter":
            if scope.bindings is not None:
                return self.scalar_int(
                    scope.parent,
                    instruction_named(scope.parent.computation, scope.bindings[instr.parameter_number]),
                )  # type: ignore[union-attr,index]
            n = instr.parameter_number
            if n not in self.inputs:
                if not self.symbolic:
                    raise Inexpressible(f"no value for start-index parameter {n}")
                self.inputs[n] = z3.Int(start_name(n))  # no size can have that name
            return self.inputs[n]
        raise Inexpressible(
            f"start index {instr.name} is computed by a {instr.opcode}; only parameters and constants are read"
        )

    def op_dynamic_slice(self, scope, instr, shape, index):
        source = self.operand_shape(scope, instr, 0)
        raw = instr.attributes.get("dynamic_slice_sizes")
        sizes = parse_int_list(raw) if raw else tuple(shape.dimensions)
        if len(sizes) != source.rank or len(instr.operands) != 1 + source.rank:
            raise InvalidHlo(
                f"dynamic-slice {instr.name} needs {source.rank} sizes and {source.rank} start indices"
            )
        for k, (s, d) in enumerate(zip(sizes, shape.dimensions, strict=True)):
            if not dims_equal(s, d):
                raise InvalidHlo(
                    f"dynamic-slice {instr.name}: size {s} of dimension {k} but the result has {d}"
                )
            self.require_at_most(
                s,
                source.dimensions[k],
                f"dynamic-slice {instr.name}: size {s} exceeds dimension {k} ({source.dimensions[k]})",
            )
        starts = self.offsets(scope, instr, 1, source.dimensions, sizes)
        return self.sub(scope, instr, 0, list(dynamic_slice_source_index(index, starts)))

    def op_dynamic_update_slice(self, scope, instr, shape, index):
        source = self.operand_shape(scope, instr, 0)
        update = self.operand_shape(scope, instr, 1)
        self.check_same_dims(instr, source, shape)
        if update.rank != source.rank or len(instr.operands) != 2 + source.rank:
            raise InvalidHlo(
                f"dynamic-update-slice {instr.name} needs an update of rank {source.rank} and {source.rank} start indices"
            )
        for k, (u, d) in enumerate(zip(update.dimensions, source.dimensions, strict=True)):
            self.require_at_most(
                u, d, f"dynamic-update-slice {instr.name}: the update's dimension {k} ({u}) exceeds {d}"
            )
        starts = self.offsets(scope, instr, 2, source.dimensions, update.dimensions)
        update_dims = [self.lift(u) for u in update.dimensions]
        inside = all_of(
            *(as_condition(c) for c in dynamic_update_slice_reads_update(index, starts, update_dims, self.ar))
        )
        return self.choose(
            inside,
            lambda: self.sub(scope, instr, 1, list(dynamic_update_slice_update_index(index, starts))),
            lambda: self.sub(scope, instr, 0, index),
        )

    def op_bitcast(self, scope, instr, shape, index):
        operand = self.operand(scope, instr, 0)
        source = self.shape_of(scope, operand)
        out, src = layout_map(shape), layout_map(source)
        # XLA's layout-sensitive verifier (ShapeVerifier::HandleBitcast): hlo.validity; the
        # shape sizes are checked for every bitcast of the module first (_check_bitcast_sizes)
        host = host_memory_problem(
            memory_space_of(source), memory_space_of(shape), self.is_constant_through_copies(scope, operand)
        )
        if host is not None:
            raise InvalidHlo(f"bitcast {instr.name} {host}")
        if memory_space_of(shape) != memory_space_of(source):  # in either mode: no such array exists
            return Undefined(
                f"bitcast {instr.name} reads a buffer in S({memory_space_of(source)}) as if it were in "
                f"S({memory_space_of(shape)}): a bitcast cannot move data between memories"
            )
        if out.element_bits != src.element_bits:
            return self.resized_bitcast(scope, instr, operand, shape, source, index)
        position = out.apply(index, self.ar, through=len(out.stages) - 1)[0]
        src_index, is_padding = src.unapply((position,), self.ar, start=len(src.stages) - 1)
        outside = as_condition(position >= self.lift(src.size_in_elements))
        hole = any_of(as_condition(is_padding), outside)

        def padding() -> Any:
            # padding values are unspecified (DESIGN.md), even a parameter's: never "the same"
            return Undefined(
                f"bitcast {instr.name} reads a slot of {operand.name}'s buffer that holds no element"
            )

        if shape.element_type != source.element_type:
            value = self.choose(hole, padding, lambda: self.sub(scope, instr, 0, list(src_index)))
            return App(self.bitcast_key(source.element_type.text, shape.element_type.text), (value,))
        # the same slots: a slot's stored bits (SlotBits included) are read as they are
        return self.choose(
            hole, padding, lambda: whole_value(self.element(scope, operand.name, list(src_index)))
        )

    def resized_bitcast(self, scope, instr, operand, shape, source, index):
        """A bitcast between slots of two sizes (``E(n)``) of one sub-byte type, both whole
        numbers of the type's w bits and at most a byte (so one divides the other): the buffer
        is a stream of w-bit digits, operand slots of na digits, result slots of nb. A slot
        holding more than its element is a :class:`SlotBits`; an element stored by any other
        op has zeros above it, so a digit above it reads 0."""
        out, src = layout_map(shape), layout_map(source)
        a, b = src.element_bits, out.element_bits
        problem = resized_bitcast_problem(source, shape, a, b)
        if problem is not None:
            raise UnsupportedHlo(f"bitcast {instr.name} {problem}")
        etype = shape.element_type.text
        w = shape.element_type.bit_width
        na, nb = a // w, b // w
        position = out.apply(index, self.ar, through=len(out.stages) - 1)[0]
        zero = Number(etype, 0)

        def stored(slot: Any) -> Any:  # what operand slot ``slot`` stores
            src_index, is_padding = src.unapply((slot,), self.ar, start=len(src.stages) - 1)
            hole = any_of(as_condition(is_padding), as_condition(slot >= self.lift(src.size_in_elements)))
            return self.choose(
                hole,
                lambda: Undefined(
                    f"bitcast {instr.name} reads bits of {operand.name}'s buffer that hold no element"
                ),
                lambda: whole_value(self.element(scope, operand.name, list(src_index))),
            )

        if nb >= na:  # wider slots: result slot q is operand slots q*k .. q*k+k-1, k = nb/na
            k = nb // na
            values = [stored(position * k + s) for s in range(k)]
            digits = tuple(digit_of(v, d, zero) for v in values for d in range(na))
        else:  # narrower: result slot q is digits (q % r)*nb .. of operand slot q // r, r = na/nb
            r = na // nb
            value, part = stored(self.ar.floordiv(position, r)), self.ar.mod(position, r)

            def digit(t: int) -> Any:
                choice = digit_of(value, (r - 1) * nb + t, zero)
                for m in range(r - 2, -1, -1):
                    choice = self.choose(
                        as_condition(part == m),
                        lambda m=m: digit_of(value, m * nb + t, zero),
                        lambda c=choice: c,
                    )
                return choice

            digits = tuple(digit(t) for t in range(nb))
        if nb == 1:
            return digits[0]
        self.slot_bits.add(instr.name)
        return SlotBits(etype, digits, instr.name)

    def op_bitcast_convert(self, scope, instr, shape, index):
        source = self.operand_shape(scope, instr, 0)
        a, b = source.element_type.bit_width, shape.element_type.bit_width
        to = shape.element_type.text
        if source.element_type == shape.element_type:
            self.check_same_dims(instr, source, shape)
            return self.sub(scope, instr, 0, index)
        if a == b:
            self.check_same_dims(instr, source, shape)
            return App(self.bitcast_key(source.element_type.text, to), (self.sub(scope, instr, 0, index),))
        if a > b:  # narrower result: one more minor dimension, of size a/b
            ratio = a // b
            if (
                a % b
                or shape.rank != source.rank + 1
                or not dims_equal(shape.dimensions[-1], ratio)
                or any(
                    not dims_equal(x, y) for x, y in zip(source.dimensions, shape.dimensions, strict=False)
                )
            ):
                raise InvalidHlo(
                    f"bitcast-convert {instr.name}: {source} to {shape} must add a minor dimension of {ratio}"
                )
            inner = self.sub(scope, instr, 0, index[:-1])
            k = index[-1]
            key = self.bitcast_key(source.element_type.text, to)
            result: Any = App(key.replace("->", f"[{ratio - 1}]->"), (inner,))
            for piece in range(ratio - 2, -1, -1):
                result = self.choose(
                    as_condition(k == piece),
                    lambda p=piece: App(key.replace("->", f"[{p}]->"), (inner,)),
                    lambda r=result: r,
                )
            return result
        ratio = b // a
        if (
            b % a
            or source.rank != shape.rank + 1
            or not dims_equal(source.dimensions[-1], ratio)
            or any(not dims_equal(x, y) for x, y in zip(source.dimensions, shape.dimensions, strict=False))
        ):
            raise InvalidHlo(
                f"bitcast-convert {instr.name}: {source} to {shape} must remove a minor dimension of {ratio}"
            )
        return App(
            self.bitcast_key(source.element_type.text, to),
            tuple(self.sub(scope, instr, 0, [*index, p]) for p in range(ratio)),
        )

    def bitcast_key(self, source: str, to: str) -> str:
        """The key of a bitcast-convert: it reads bits, so once float precision is erased
        (where values no longer carry their type) the operand's type is part of it."""
        return f"bitcast-convert{':' + source if self.erasing else ''}->{to}"
