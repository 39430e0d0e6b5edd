"""The rewrite verifier's elementwise ops: uninterpreted functions, exact integer compares, float rules."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import z3

from layout_algebra.hlo.evaluate_constants import CONSTANT_FOLDING, fold
from layout_algebra.hlo.float_precision import (
    EXCESS_PRECISION,
    EXCESS_PRECISION_TEXT,
    MIXED_PRECISION_MOVEMENT,
    MIXED_PRECISION_MOVEMENT_TEXT,
    erased_suffix,
    erased_type,
    is_erased_convert,
    is_float_convert,
    is_float_type,
)
from layout_algebra.hlo.ir import HloInstruction
from layout_algebra.hlo.opcodes import INERT_ATTRIBUTES
from layout_algebra.hlo.validity import InvalidHlo
from layout_algebra.hlo.verify_values import App, Choice, Number, dims_equal, known_truth, representable
from layout_algebra.model.primitive_types import primitive_type
from layout_algebra.model.shapes import ArrayShape

# Elementwise ops whose operands and result all have one element type.
_SAME_TYPE_OPS = frozenset(
    "add subtract multiply divide maximum minimum power remainder and or xor negate abs "
    "shift-left shift-right-arithmetic shift-right-logical clamp".split()
)
#: Named float rules the caller may allow (``verify_rewrite(..., float_rules=...)``); a proof
#: that used one says so in its ``encoding``. Each is a theorem about IEEE-754 rounding, or a
#: stated reading of XLA's semantics; ``tests/hlo/test_float_rules.py`` checks each against exact
#: rational arithmetic on random and special values.
FLOAT_RULES: dict[str, str] = {
    "exact-ops": "a narrow float widened, passed through maximum/minimum/clamp/select/negate/abs/"
    "compare (not TOTALORDER) in the wide type and narrowed again is the narrow op's value (widening is exact and "
    "rounding is monotone and odd); and maximum(x, -inf) = minimum(x, inf) = x; equal up to NaN "
    "payloads, and assuming maximum/minimum pick between +0 and -0 alike in both types",
    "correctly-rounded": "assumes correctly rounded narrow arithmetic: add/subtract/multiply/divide of "
    "two narrow values computed in f32 and rounded to bf16 or f16 equal the narrow op "
    "(double rounding is innocuous when p_wide >= 2 p_narrow + 2); equal up to NaN payloads",
    "power-of-two-division": "x / 2^k as x * 2^-k where 2^-k is exact in the type (a broadcast or scalar "
    "constant): both are the real x * 2^-k rounded once, so they are the same bits, zeros, infinities and "
    "subnormals included (NaN payloads aside); assumes a correctly rounded divide (IEEE 754), as for "
    "correctly-rounded",
    "clamp-as-min-max": "clamp(lo, x, hi) as minimum(maximum(x, lo), hi): XLA's definition of clamp "
    "(operation semantics), for every element type, NaNs included as maximum and minimum treat them",
    "constant-folding": "an elementwise op whose operands are all known numbers is its value: float "
    "add/subtract/multiply/divide/sqrt correctly rounded (IEEE 754), negate/abs/maximum/minimum/compare exact, "
    "converts rounded once, integers in two's complement wrapped to their width, shifts as XLA defines them; "
    "never a NaN, a choice between zeros of different signs, a division by zero or a transcendental op "
    "(layout_algebra.hlo.evaluate_constants): what XLA's constant folder computes",
    "mixed-precision": "an op with wide float operands and a narrow float result (allow_mixed_precision) "
    "is the op in the operand type followed by a convert (XLA's float normalization)",
    MIXED_PRECISION_MOVEMENT: MIXED_PRECISION_MOVEMENT_TEXT,
    EXCESS_PRECISION: EXCESS_PRECISION_TEXT,
}

# (narrow, wide) float types for which widening is exact and the wide type has at least
# 2 p + 2 bits of precision and the narrow type's exponent range: the pairs tested.
_WIDENINGS = frozenset({("bf16", "f32"), ("f16", "f32")})
# Ops exact on widened values: their wide result is a widened narrow value.
_EXACT_FLOAT_OPS = frozenset({"maximum", "minimum", "clamp", "select", "negate", "abs"})
# Ops rounding commutes with (monotone or odd in each float operand).
_ROUNDING_COMMUTES = _EXACT_FLOAT_OPS
# Binary float ops and their identity elements (Number values).
_IDENTITIES = {"maximum": "-inf", "minimum": "inf"}
# Binary integer ops whose identity element holds for every operand exactly (two's complement
# wraps, but ``x + 0``, ``x | 0``, ``x ^ 0``, ``x * 1`` never do): XLA writes an integer
# concatenate as the sum of zero pads (concat-decomposer).
_INTEGER_IDENTITIES = frozenset({"add", "or", "xor", "multiply", "maximum", "minimum", "and"})


def identity_element(op: str, type_text: str) -> Any:
    """The identity of the binary ``op`` on ``type_text`` values (a Number value), or None.

    >>> identity_element("maximum", "f32"), identity_element("add", "s32"), identity_element("maximum", "s8")
    ('-inf', 0, -128)
    >>> identity_element("and", "u8"), identity_element("and", "pred"), identity_element("add", "f32") is None
    (255, 1, True)
    """
    kind = primitive_type(type_text).value.kind
    if kind == "float":
        return _IDENTITIES.get(op)
    if kind not in ("signed", "unsigned", "pred") or op not in _INTEGER_IDENTITIES:
        return None
    bits = primitive_type(type_text).value.bit_width
    low, high = (
        (0, 1)
        if kind == "pred"
        else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        if kind == "signed"
        else (0, 2**bits - 1)
    )
    if kind == "pred" and op in ("add", "multiply"):
        return None
    return {"add": 0, "or": 0, "xor": 0, "multiply": 1, "maximum": low, "minimum": high,
            "and": 1 if kind == "pred" else -1 if kind == "signed" else high}[op]  # fmt: skip


# At most this many (case of one operand, case of the other) pairs are split to drop an
# identity: XLA writes a concatenate as the maximum of several -inf pads (concat-decomposer),
# whose symbolic element has a few hundred cases.
_MAX_IDENTITY_CASES = 1024


class _TooManyCases(Exception):
    """More possible cases than :data:`_MAX_IDENTITY_CASES`: the identity is not dropped."""


# ``pred`` connectives on known truth values: Python bools, or Z3 booleans.
_PRED_CONNECTIVES: dict[str, Callable[..., Any]] = {
    "and": lambda x, y: z3.And(x, y) if isinstance(x, z3.BoolRef) else x and y,
    "or": lambda x, y: z3.Or(x, y) if isinstance(x, z3.BoolRef) else x or y,
    "xor": lambda x, y: z3.Xor(x, y) if isinstance(x, z3.BoolRef) else x != y,
    "not": lambda x: z3.Not(x) if isinstance(x, z3.BoolRef) else not x,
}

# ``compare`` directions on exact integers.
_INTEGER_COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "EQ": lambda x, y: x == y,
    "NE": lambda x, y: x != y,
    "LT": lambda x, y: x < y,
    "LE": lambda x, y: x <= y,
    "GT": lambda x, y: x > y,
    "GE": lambda x, y: x >= y,
}


def _is_integer_value(v: Any) -> bool:
    """A Python int or a Z3 integer term (not a string, a fraction or a real)."""
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return True
    return isinstance(v, z3.ArithRef) and v.sort() == z3.IntSort()


# Correctly rounded basic operations (binary; sqrt is not included: untested).
_ROUNDED_FLOAT_OPS = frozenset({"add", "subtract", "multiply", "divide"})


class ElementwiseOps:
    """The elementwise ops of the element evaluator (mixed into it)."""

    def op_elementwise(self, scope, instr, shape, index):
        op = instr.opcode
        shapes = [self.operand_shape(scope, instr, k) for k in range(len(instr.operands))]
        if not shapes:
            raise InvalidHlo(f"{op} {instr.name} has no operands")
        for k, s in enumerate(shapes):
            # XLA broadcasts a scalar predicate of select and scalar bounds of clamp
            scalar_ok = s.rank == 0 and ((op == "select" and k == 0) or (op == "clamp" and k in (0, 2)))
            if not scalar_ok and (
                s.rank != shape.rank
                or any(not dims_equal(x, y) for x, y in zip(s.dimensions, shape.dimensions, strict=False))
            ):
                raise InvalidHlo(
                    f"{op} {instr.name}: operand {k} is {s}, the result is {shape} (elementwise ops keep the dimensions)"
                )
        mixed = any(s.element_type != shape.element_type for s in shapes)
        # XLA allows mixed floating-point precision (allow_mixed_precision: TPU's bfloat16
        # propagation writes f32 x f32 -> bf16): then the operand types are part of the op.
        floats = all(t.is_floating_point for t in (shape.element_type, *(s.element_type for s in shapes)))
        compared = {
            s.element_type for s in (shapes if op == "compare" else shapes[1:3] if op == "select" else ())
        }
        if len(compared) > 1 and not all(t.is_floating_point for t in compared):
            raise InvalidHlo(
                f"{op} {instr.name}: its operands have the element types "
                f"{[s.element_type.text for s in shapes]}; {'the compared' if op == 'compare' else 'the chosen'} "
                "operands must have one type"
            )
        if (
            op == "select"
            and len(shapes) == 3
            and shapes[1].element_type != shape.element_type
            and not floats
        ):
            raise InvalidHlo(
                f"select {instr.name}: it chooses {shapes[1].element_type.text} values but its result is {shape}"
            )
        if op in _SAME_TYPE_OPS and mixed and not floats:
            raise InvalidHlo(
                f"{op} {instr.name}: operand types {[s.element_type.text for s in shapes]} differ from the result's {shape.element_type.text}"
            )
        if op == "convert" and shapes[0].element_type == shape.element_type:
            return self.sub(scope, instr, 0, index)
        if (
            self.erasing
            and op == "convert"
            and is_erased_convert(shape.element_type.text, shapes[0].element_type.text)
        ):
            self.used.add(EXCESS_PRECISION)  # the identity once float precision is erased
            return self.sub(scope, instr, 0, index)
        attributes = ",".join(
            f"{k}={v}" for k, v in sorted(instr.attributes.items()) if k not in INERT_ATTRIBUTES
        )
        result_type = shape.element_type.text
        types = [s.element_type.text for s in shapes]
        if self.erasing:  # floats of two precisions are one abstract type
            mixed = any(erased_type(t) != erased_type(result_type) for t in types)
        suffix = ""
        if op in _SAME_TYPE_OPS and mixed:
            suffix = ",".join(types)
        elif op == "convert":
            suffix = types[0]
        args = tuple(
            self.sub(scope, instr, k, [] if s.rank == 0 and shape.rank else index)
            for k, s in enumerate(shapes)
        )
        if CONSTANT_FOLDING in self.rules and all(isinstance(a, Number) for a in args):
            attrs = {k: v for k, v in instr.attributes.items() if k not in INERT_ATTRIBUTES}
            folded = fold(op, attrs, result_type, types, [a.value for a in args])
            if folded is not None:
                self.used |= {CONSTANT_FOLDING}
                return Number(result_type, folded)
        exact = self.integer_compare_or_select(instr, op, shapes, args)
        if exact is not None:
            return exact
        if self.rules:
            normal = self.float_normal_form(op, attributes, result_type, types, args, mixed)
            if normal is not None:
                value, used = normal
                self.used |= used
                return value
        return self.app(op, attributes, result_type, args, suffix)

    # -------------------------------------------------------------- exact integer compares
    def integer_compare_or_select(
        self, instr: HloInstruction, op: str, shapes: list[ArrayShape], args: tuple
    ) -> Any:
        """``compare`` of two known integers is their comparison (exact: integers are not
        rounded), a ``pred`` value; ``and``/``or``/``xor``/``not`` of known ``pred`` values
        are their connective; ``select`` on such a known ``pred`` picks its operand.
        ``None`` for every other case (the op stays uninterpreted)."""
        if op == "compare" and len(args) == 2 and all(isinstance(a, Number) for a in args):
            kind = shapes[0].element_type.value.kind
            direction = instr.attributes.get("direction", "")
            extra = set(instr.attributes) - {"direction", "type"} - INERT_ATTRIBUTES
            compare_type = instr.attributes.get("type", "SIGNED" if kind == "signed" else "UNSIGNED")
            if (
                kind not in ("signed", "unsigned")
                or extra
                or compare_type != ("SIGNED" if kind == "signed" else "UNSIGNED")
                or direction not in _INTEGER_COMPARISONS
                or not all(_is_integer_value(a.value) for a in args)
            ):
                return None
            holds = _INTEGER_COMPARISONS[direction](args[0].value, args[1].value)
            if isinstance(holds, bool):
                return Number("pred", int(holds))
            return Number("pred", z3.If(holds, 1, 0))
        if op in _PRED_CONNECTIVES and args and all(isinstance(a, Number) and a.type == "pred" for a in args):
            values = [a.value for a in args]
            if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
                return Number("pred", int(_PRED_CONNECTIVES[op](*(v == 1 for v in values))))
            if all(_is_integer_value(v) for v in values):
                truth = _PRED_CONNECTIVES[op](
                    *(z3.IntVal(v) == 1 if isinstance(v, int) else v == 1 for v in values)
                )
                return Number("pred", z3.If(truth, 1, 0))
            return None
        if op == "select" and len(args) == 3 and isinstance(args[0], Number) and args[0].type == "pred":
            value = args[0].value
            if isinstance(value, int):
                return args[1] if value else args[2]
            if _is_integer_value(value):
                return Choice(value == 1, args[1], args[2])
        return None

    # -------------------------------------------------------------- float rules
    def app(self, op: str, attributes: str, result_type: str, args: Sequence[Any], suffix: str = "") -> App:
        """The uninterpreted ``op`` applied to ``args``; its key names op, attributes and types
        (float types erased under ``excess-precision``: a convert between two is the identity)."""
        if self.erasing:
            if op == "convert" and is_erased_convert(result_type, suffix):
                self.used.add(EXCESS_PRECISION)
                return args[0]
            self.float_types.update(t for t in (result_type, *suffix.split(",")) if is_float_type(t))
            if not (op == "convert" and is_float_convert(result_type, suffix)):  # (bf16 <-> f16 stays)
                result_type, suffix = erased_type(result_type), erased_suffix(suffix)
        key = f"{op}|{attributes}|{result_type}" + (f"|{suffix}" if suffix else "")
        self.app_info[key] = (op, attributes, result_type)
        return App(key, tuple(args))

    def float_normal_form(
        self, op: str, attributes: str, result_type: str, types: list[str], args: tuple, mixed: bool
    ) -> tuple[Any, frozenset[str]] | None:
        """An elementwise op's value rewritten by the allowed FLOAT_RULES, or ``None``.

        ``convert`` to a narrow type of a wide computation on widened narrow values is read
        as the narrow computation; ``compare`` of two widened values as the compare of the
        narrow ones; a mixed-precision op as the op in the wide type, then ``convert``."""
        if op in _SAME_TYPE_OPS and mixed and "mixed-precision" in self.rules:
            (wide, *others) = types
            if any(t != wide for t in others) or (result_type, wide) not in _WIDENINGS:
                return None
            inner = self.app(op, attributes, wide, args)
            narrowed = self.rounded(inner, result_type, wide)
            if narrowed is not None:
                return narrowed[0], narrowed[1] | {"mixed-precision"}
            return self.app("convert", "", result_type, (inner,), wide), frozenset({"mixed-precision"})
        if op == "clamp" and len(args) == 3 and not mixed and "clamp-as-min-max" in self.rules:
            lo, x, hi = args
            bounded = self.app("maximum", attributes, result_type, (x, lo))
            return self.app("minimum", attributes, result_type, (bounded, hi)), frozenset(
                {"clamp-as-min-max"}
            )
        if op == "divide" and len(args) == 2 and not mixed and "power-of-two-division" in self.rules:
            reciprocal = _exact_power_of_two_reciprocal(args[1], result_type, self.value_type(result_type))
            if reciprocal is not None:
                product = self.app("multiply", attributes, result_type, (args[0], reciprocal))
                return product, frozenset({"power-of-two-division"})
        if op == "convert" and (result_type, types[0]) in _WIDENINGS:
            return self.rounded(args[0], result_type, types[0])
        if (
            len(args) == 2
            and not mixed
            and "exact-ops" in self.rules
            and identity_element(op, result_type) is not None
        ):
            return self.identity_dropped(op, attributes, result_type, args)
        # (not TOTALORDER: a conversion may quiet a signaling NaN, which reorders NaN payloads)
        if op == "compare" and len(args) == 2 and types[0] == types[1] and "TOTALORDER" not in attributes:
            for narrow, wide in sorted(_WIDENINGS):
                if wide != types[0]:
                    continue
                x, y = self.exactly_narrow(args[0], narrow, wide), self.exactly_narrow(args[1], narrow, wide)
                if x is not None and y is not None:
                    return self.app(op, attributes, result_type, (x[0], y[0])), x[1] | y[1]
        return None

    def identity_dropped(
        self, op: str, attributes: str, result_type: str, args: tuple
    ) -> tuple[Any, frozenset[str]] | None:
        """``maximum(x, -inf)`` is ``x``, ``minimum(x, inf)`` is ``x`` (for every float ``x``,
        NaN too, up to its payload), ``x + 0`` is ``x`` for every integer
        (:func:`identity_element`): where an operand is the op's identity (under the index
        conditions of pads and selects), the other operand. ``None`` if none is."""
        identity = identity_element(op, result_type)

        def is_identity(v: Any) -> bool:
            # (a Z3 term is never taken for the identity: its value is not known)
            return (
                isinstance(v, Number)
                and v.type == self.value_type(result_type)
                and type(v.value) is type(identity)
                and v.value == identity
            )

        def leaves(v: Any) -> list[Any]:
            return leaves(v.then) + leaves(v.other) if isinstance(v, Choice) else [v]

        if not any(map(is_identity, leaves(args[0]) + leaves(args[1]))):
            return None
        # The cases are split along both operands' conditions, and a case whose path of
        # conditions is unsatisfiable is dropped (the pads of a decomposed concatenate hold
        # data in disjoint ranges, so most combinations of their cases are impossible).
        solver = z3.Solver()
        solver.set("timeout", 200)
        cases = [0]

        def split(c: Choice, then: Callable[[Any], Any]) -> Any:
            known = known_truth(c.cond)
            if known is not None:
                return then(c.then if known else c.other)
            results = []
            for cond, value in ((c.cond, c.then), (z3.Not(c.cond), c.other)):
                solver.push()
                solver.add(cond)
                if solver.check() != z3.unsat:  # unknown: kept, as if possible
                    results.append(then(value))
                else:
                    results.append(None)
                solver.pop()
            if results[0] is None or results[1] is None:
                return results[1] if results[0] is None else results[0]
            return Choice(c.cond, results[0], results[1])

        def combine(x: Any, y: Any) -> Any:
            if isinstance(x, Choice):
                return split(x, lambda v: combine(v, y))
            if isinstance(y, Choice):
                return split(y, lambda v: combine(x, v))
            cases[0] += 1
            if cases[0] > _MAX_IDENTITY_CASES:
                raise _TooManyCases
            if is_identity(x):
                return y
            if is_identity(y):
                return x
            return self.app(op, attributes, result_type, (x, y))

        try:
            value = combine(*args)
        except _TooManyCases:
            return None
        if value is None:  # every case impossible: no element reaches it
            return None
        return value, frozenset({"exact-ops"})

    def exactly_narrow(self, u: Any, narrow: str, wide: str) -> tuple[Any, frozenset[str]] | None:
        """``v`` with ``u == widen(v)`` exactly (``u`` of type ``wide``, ``v`` of ``narrow``), or None."""
        if "exact-ops" not in self.rules:
            return None
        exact = frozenset({"exact-ops"})
        if isinstance(u, Number):
            if u.type != wide:
                return None
            if isinstance(u.value, str):  # nan, inf, -inf, -0 exist in both types
                return Number(narrow, u.value), exact
            if isinstance(u.value, (int, Fraction)) and representable(Fraction(u.value), narrow):
                return Number(narrow, u.value), exact
            return None
        if isinstance(u, Choice):
            then = self.exactly_narrow(u.then, narrow, wide)
            other = self.exactly_narrow(u.other, narrow, wide)
            if then is None or other is None:
                return None
            return Choice(u.cond, then[0], other[0]), then[1] | other[1]
        if not isinstance(u, App) or u.op not in self.app_info:
            return None
        op, attributes, result_type = self.app_info[u.op]
        if result_type != wide:
            return None
        if op == "convert" and u.op == f"convert|{attributes}|{wide}|{narrow}":
            return u.args[0], exact
        if op in _EXACT_FLOAT_OPS and u.op == f"{op}|{attributes}|{wide}":
            return self.narrow_args(u, op, attributes, narrow, lambda a: self.exactly_narrow(a, narrow, wide))
        return None

    def rounded(self, u: Any, narrow: str, wide: str) -> tuple[Any, frozenset[str]] | None:
        """``v`` with ``convert_narrow(u) == v`` (``u`` of type ``wide``), by the rules, or None."""
        exact = self.exactly_narrow(u, narrow, wide)
        if exact is not None:
            return exact
        if isinstance(u, Choice):
            then, other = self.rounded(u.then, narrow, wide), self.rounded(u.other, narrow, wide)
            if then is None or other is None:
                return None
            return Choice(u.cond, then[0], other[0]), then[1] | other[1]
        if not isinstance(u, App) or u.op not in self.app_info or "exact-ops" not in self.rules:
            return None
        op, attributes, result_type = self.app_info[u.op]
        if result_type != wide or u.op != f"{op}|{attributes}|{wide}":
            return None
        if op in _ROUNDING_COMMUTES:  # round(max(x, y)) = max(round(x), round(y)), ...
            return self.narrow_args(u, op, attributes, narrow, lambda a: self.rounded(a, narrow, wide))
        if op in _ROUNDED_FLOAT_OPS and "correctly-rounded" in self.rules:
            found = self.narrow_args(
                u, op, attributes, narrow, lambda a: self.exactly_narrow(a, narrow, wide)
            )
            if found is not None:
                return found[0], found[1] | {"correctly-rounded"}
        return None

    def narrow_args(
        self, u: App, op: str, attributes: str, narrow: str, each: Callable[[Any], Any]
    ) -> tuple[Any, frozenset[str]] | None:
        """``op`` in the narrow type on ``each`` of ``u``'s float arguments (a select's
        predicate kept), or None if one has no narrow form."""
        args: list[Any] = []
        used: frozenset[str] = frozenset({"exact-ops"})
        for k, a in enumerate(u.args):
            if op == "select" and k == 0:
                args.append(a)
                continue
            found = each(a)
            if found is None:
                return None
            args.append(found[0])
            used |= found[1]
        if len(args) == 2 and identity_element(op, narrow) is not None:
            dropped = self.identity_dropped(op, attributes, narrow, tuple(args))
            if dropped is not None:
                return dropped[0], used
        return self.app(op, attributes, narrow, args), used

    # -------------------------------------------------------------- checks


def _exact_power_of_two_reciprocal(divisor: Any, type_text: str, value_type: str) -> Number | None:
    """``2^-k`` for a divisor ``±2^k`` whose reciprocal is exact in ``type_text``, else ``None``
    (``value_type``: the type the values carry, ``type_text`` or the erased one)."""
    if (
        not isinstance(divisor, Number)
        or divisor.type != value_type
        or not isinstance(divisor.value, Fraction)
    ):
        return None
    size = abs(divisor.value)
    if size == 0 or size.numerator & (size.numerator - 1) or size.denominator & (size.denominator - 1):
        return None  # not a power of two
    reciprocal = 1 / divisor.value
    return Number(value_type, reciprocal) if representable(reciprocal, type_text) else None
