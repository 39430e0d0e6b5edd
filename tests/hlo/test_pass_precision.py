"""Passes that change float precision get a verdict: ``proved`` only under the named assumption
``excess-precision`` (float precision erased), ``refuted`` with an input and both root values
that exact IEEE arithmetic confirms when the assumption is off, never proved when the pass
changed anything but precision (an op, an operand order, a constant).

The oracle is independent of the verifier and of the executor: each op's exact result
computed in f64 (exact for add/subtract/multiply of bf16 or f32 values, and rounding it once
more to the narrow type is the correctly rounded narrow result: 53 >= 2p + 2), then rounded
to the op's stated type with ``ml_dtypes``/NumPy.
"""

from __future__ import annotations

import json
import random

import ml_dtypes
import numpy as np
import pytest
from support.hlo_text import hlo_module_with_parameters

from layout_algebra.hlo.evaluate_elementwise import FLOAT_RULES
from layout_algebra.hlo.execute import run
from layout_algebra.hlo.float_precision import (
    EXCESS_PRECISION,
    MIXED_PRECISION_MOVEMENT,
    erased_text,
    movement_operand_converted,
)
from layout_algebra.hlo.parser import parse_module
from layout_algebra.hlo.pass_precision import OPERANDS_DIFFER, executed_difference, float_type_changes
from layout_algebra.hlo.passes import ASSUMPTIONS, DEFAULT_FLOAT_RULES, validate_pair
from layout_algebra.hlo.verify import verify_rewrite

pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning")]

STATED_ONLY = tuple(r for r in FLOAT_RULES if r != EXCESS_PRECISION)
BF16 = ml_dtypes.bfloat16
PARAMS = "bf16[4]{0} a, bf16[4]{0} b, bf16[4]{0} c"
NAMES = ("a", "b", "c")


# ------------------------------------------------------------------ random programs
class Program:
    """A random elementwise program over bf16 parameters a, b, c: ``ops`` (op, operands), the
    stated-precision module (every op in bf16) and a float-normalized one (the same ops in
    f32 between converts, some intermediate values left in f32: what excess precision allows)."""

    OPS = ("add", "subtract", "multiply", "maximum", "minimum", "negate", "scale")

    def __init__(self, rng: random.Random, size: int = 5) -> None:
        # a subtract of two values and a multiplication by a constant in every program, so that
        # each mutation (another op, swapped operands, another constant) has something to change
        self.ops: list[tuple[str, tuple[str, ...]]] = [
            ("subtract", ("a", "b")),
            ("scale", (rng.choice(NAMES),)),
        ]
        values = [*NAMES, "v0", "v1"]
        for _ in range(size - 2):
            op = rng.choice(self.OPS)
            if op in ("negate", "scale"):
                self.ops.append((op, (rng.choice(values),)))
            else:
                self.ops.append((op, (rng.choice(values), rng.choice(values))))
            values.append(f"v{len(self.ops) - 1}")
        # the root reads v0 and v1 (so each mutation reaches it)
        self.ops.append(("add", (values[-1], "v0")))
        self.ops.append(("add", (f"v{len(self.ops) - 1}", "v1")))
        self.narrowed = [rng.random() < 0.3 for _ in self.ops]  # rounded back to bf16 after the op

    def stated(self, mutate: str = "") -> str:
        lines = ["  k = bf16[] constant(3)", "  ks = bf16[4]{0} broadcast(k), dimensions={}"]
        for i, (op, args) in enumerate(self.ops):
            lines.append(f"  v{i} = bf16[4]{{0}} {_op_text(op, args, 'ks')}")
        lines[-1] = "  ROOT" + lines[-1][1:]
        return hlo_module_with_parameters("\n".join(lines), PARAMS)

    def normalized(self, mutate: str = "") -> str:
        three = "2" if mutate == "constant" else "3"
        lines = [f"  k = f32[] constant({three})", "  ks = f32[4]{0} broadcast(k), dimensions={}"]
        lines += [f"  {n}w = f32[4]{{0}} convert({n})" for n in NAMES]
        wide = {n: f"{n}w" for n in NAMES}
        mutated = False
        for i, (op, args) in enumerate(self.ops):
            ws = tuple(wide[x] for x in args)
            if not mutated and mutate == "op" and op in ("add", "subtract"):
                op, mutated = ("subtract" if op == "add" else "add"), True
            if not mutated and mutate == "swap" and op == "subtract" and args[0] != args[1]:
                ws, mutated = (ws[1], ws[0]), True
            lines.append(f"  v{i}w = f32[4]{{0}} {_op_text(op, ws, 'ks')}")
            wide[f"v{i}"] = f"v{i}w"
            if self.narrowed[i] and i < len(self.ops) - 1:
                lines.append(f"  v{i}n = bf16[4]{{0}} convert(v{i}w)")
                lines.append(f"  v{i}r = f32[4]{{0}} convert(v{i}n)")
                wide[f"v{i}"] = f"v{i}r"
        lines.append(f"  ROOT r = bf16[4]{{0}} convert(v{len(self.ops) - 1}w)")
        return hlo_module_with_parameters("\n".join(lines), PARAMS)

    def oracle(self, inputs: dict[str, np.ndarray], stated: bool) -> np.ndarray:
        """The root by exact arithmetic: each op exact in f64, rounded to bf16 (stated) or to
        f32 (normalized; bf16 where the normalized module rounds), the root rounded to bf16."""
        values = {n: inputs[n].astype(np.float64) for n in NAMES}
        for i, (op, args) in enumerate(self.ops):
            exact = _exact(op, [values[x] for x in args])
            narrow = stated or (self.narrowed[i] and i < len(self.ops) - 1)
            rounded = exact.astype(BF16) if narrow else exact.astype(np.float32)
            values[f"v{i}"] = rounded.astype(np.float64)
        return values[f"v{len(self.ops) - 1}"].astype(BF16)


def _exact(op: str, xs: list[np.ndarray]) -> np.ndarray:
    """One op's exact result in f64 (NaN propagated by maximum and minimum, as XLA does)."""
    if op in ("maximum", "minimum"):
        pick = np.maximum if op == "maximum" else np.minimum
        return np.where(np.isnan(xs[0]) | np.isnan(xs[1]), np.nan, pick(xs[0], xs[1]))
    if op == "negate":
        return -xs[0]
    if op == "scale":
        return xs[0] * 3.0
    return {"add": np.add, "subtract": np.subtract, "multiply": np.multiply}[op](xs[0], xs[1])


def _op_text(op: str, args: tuple[str, ...], constant: str) -> str:
    if op == "scale":
        return f"multiply({args[0]}, {constant})"
    return f"{op}({', '.join(args)})"


def _same(x: np.ndarray, y: np.ndarray) -> bool:
    fx, fy = x.astype(np.float64), y.astype(np.float64)
    return bool(np.all((fx == fy) & (np.signbit(fx) == np.signbit(fy)) | (np.isnan(fx) & np.isnan(fy))))


PROGRAMS = [Program(random.Random(seed)) for seed in range(12)]


@pytest.mark.parametrize("program", PROGRAMS, ids=[f"seed{k}" for k in range(len(PROGRAMS))])
def test_float_normalized_programs_are_proved_only_under_excess_precision(program: Program) -> None:
    before, after = program.stated(), program.normalized()
    r = validate_pair(before, after, mode="logical")
    assert r.status == "proved", r.reason
    plain = validate_pair(before, after, mode="logical", float_rules=STATED_ONLY)
    if plain.status == "proved":  # the IEEE rules alone: every value rounded as stated
        assert EXCESS_PRECISION not in r.assumptions
        return
    assert EXCESS_PRECISION in r.assumptions and EXCESS_PRECISION in ASSUMPTIONS
    if plain.status == "refuted":  # the input and both values, checked against exact arithmetic
        cex = plain.counterexample
        inputs = {
            n: np.array(p, dtype=np.float64).astype(BF16)
            for n, p in zip(NAMES, cex["parameters"], strict=True)
        }
        stated, normalized = program.oracle(inputs, True), program.oracle(inputs, False)
        (j,) = cex["element"]
        assert not _same(stated[j : j + 1], normalized[j : j + 1])
        assert float(cex["before"]) == float(stated[j]) or np.isnan(float(stated[j]))
        assert float(cex["after"]) == float(normalized[j]) or np.isnan(float(normalized[j]))
        assert r.evidence is not None and "stated_precision_differs" in r.evidence
    else:
        assert plain.status == "unknown" and "refuted" not in plain.reason


@pytest.mark.parametrize("mutate", ["op", "swap", "constant"])
@pytest.mark.parametrize("program", PROGRAMS, ids=[f"seed{k}" for k in range(len(PROGRAMS))])
def test_changes_besides_precision_are_never_proved_with_precision_erased(
    program: Program, mutate: str
) -> None:
    before, after = program.stated(), program.normalized(mutate)
    assert after != program.normalized()
    r = validate_pair(before, after, mode="logical")
    assert r.status != "proved", (before, after)
    assert "refuted" not in r.reason


def test_the_oracle_and_the_executor_agree_on_both_precisions() -> None:
    """The executor runs what the oracle computes (so a refutation it confirms is real)."""
    rng = np.random.default_rng(7)
    for program in PROGRAMS:
        inputs = {n: rng.normal(0, 3, 4).astype(BF16) for n in NAMES}
        params = [inputs[n] for n in NAMES]
        for stated, text in ((True, program.stated()), (False, program.normalized())):
            assert _same(run(text, params).array, program.oracle(inputs, stated))


# ------------------------------------------------------------------ named cases
DOT_BEFORE = hlo_module_with_parameters(
    "  d = bf16[8,32]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  ROOT n = bf16[8,32]{1,0} negate(d)",
    "bf16[8,16]{1,0} a, bf16[16,32]{1,0} b",
)
DOT_AFTER = hlo_module_with_parameters(
    "  x = f32[8,16]{1,0} convert(a)\n  y = f32[16,32]{1,0} convert(b)\n"
    "  d = f32[8,32]{1,0} dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  c = bf16[8,32]{1,0} convert(d)\n  ROOT n = bf16[8,32]{1,0} negate(c)",
    "bf16[8,16]{1,0} a, bf16[16,32]{1,0} b",
)


def test_a_bf16_dot_computed_in_f32_is_proved_under_excess_precision() -> None:
    r = validate_pair(DOT_BEFORE, DOT_AFTER, mode="logical")
    assert (
        r.status == "proved" and EXCESS_PRECISION in r.assumptions and set(r.assumptions) <= set(ASSUMPTIONS)
    )
    assert "precision change" in r.reason
    off = validate_pair(DOT_BEFORE, DOT_AFTER, mode="logical", float_rules=STATED_ONLY)
    assert off.status != "proved" and "precision change" in off.reason
    assert off.status == "refuted" or "refuted" not in off.reason


@pytest.mark.parametrize(
    "mutation",
    [
        ("negate(c)", "abs(c)"),  # another op after the dot
        (
            "dot(x, y), lhs_contracting_dims={1}",
            "dot(x, y), lhs_contracting_dims={1}, frontend_attributes={}",
        ),
        ("x = f32[8,16]{1,0} convert(a)", "x0 = f32[8,16]{1,0} convert(a)\n  x = f32[8,16]{1,0} negate(x0)"),
    ],
)
def test_a_retyped_dot_with_another_change_is_not_proved(mutation: tuple[str, str]) -> None:
    after = DOT_AFTER.replace(*mutation)
    r = validate_pair(DOT_BEFORE, after, mode="logical")
    if "frontend_attributes" in mutation[1]:  # an inert attribute: no change at all
        assert r.status == "proved"
        return
    assert r.status != "proved" and "refuted" not in r.reason


def test_the_roots_type_is_never_erased() -> None:
    before = hlo_module_with_parameters("  ROOT n = f32[4]{0} negate(a)", "f32[4]{0} a")
    after = hlo_module_with_parameters(
        "  x = bf16[4]{0} convert(a)\n  ROOT n = bf16[4]{0} negate(x)", "f32[4]{0} a"
    )
    r = validate_pair(before, after, mode="logical")
    assert r.status != "proved"


def test_a_convert_between_bf16_and_f16_is_not_erased() -> None:
    """Neither holds the other (f16's range, bf16's precision): more than precision changes."""
    before = hlo_module_with_parameters("  ROOT n = bf16[4]{0} negate(a)", "bf16[4]{0} a")
    after = hlo_module_with_parameters(
        "  x = f16[4]{0} convert(a)\n  n = f16[4]{0} negate(x)\n  ROOT r = bf16[4]{0} convert(n)",
        "bf16[4]{0} a",
    )
    assert validate_pair(before, after, mode="logical").status != "proved"
    wide = after.replace("f16[4]{0} convert(a)", "f32[4]{0} convert(a)").replace(
        "f16[4]{0} negate", "f32[4]{0} negate"
    )
    assert validate_pair(before, wide, mode="logical").status == "proved"


def test_bitcast_convert_reads_the_stated_type() -> None:
    """A bitcast-convert observes bits: f16 bits are not bf16 bits, erased or not."""
    params = "f16[4]{0} a"
    before = hlo_module_with_parameters("  ROOT r = s16[4]{0} bitcast-convert(a)", params)
    after = hlo_module_with_parameters(
        "  x = bf16[4]{0} convert(a)\n  ROOT r = s16[4]{0} bitcast-convert(x)", params
    )
    r = validate_pair(before, after, mode="logical")
    assert r.status != "proved"
    assert verify_rewrite(before, after, mode="logical", float_rules=DEFAULT_FLOAT_RULES).status != "proved"


def test_an_int_convert_of_an_excess_precision_value_is_proved_and_named() -> None:
    params = "bf16[4]{0} a, bf16[4]{0} b"
    before = hlo_module_with_parameters("  s = bf16[4]{0} add(a, b)\n  ROOT r = s32[4]{0} convert(s)", params)
    after = hlo_module_with_parameters(
        "  x = f32[4]{0} convert(a)\n  y = f32[4]{0} convert(b)\n  s = f32[4]{0} add(x, y)\n"
        "  ROOT r = s32[4]{0} convert(s)",
        params,
    )
    r = verify_rewrite(before, after, mode="logical", float_rules=DEFAULT_FLOAT_RULES)
    assert r.status == "proved" and "excess-precision" in r.encoding
    assert verify_rewrite(before, after, mode="logical", float_rules=STATED_ONLY).status != "proved"


def test_verify_rewrite_names_excess_precision_only_when_it_needed_it() -> None:
    params = "bf16[4]{0} a, bf16[4]{0} b"
    before = hlo_module_with_parameters("  ROOT r = bf16[4]{0} add(a, b)", params)
    after = hlo_module_with_parameters(
        "  x = f32[4]{0} convert(a)\n  y = f32[4]{0} convert(b)\n  s = f32[4]{0} add(x, y)\n"
        "  ROOT r = bf16[4]{0} convert(s)",
        params,
    )
    r = verify_rewrite(before, after, float_rules=DEFAULT_FLOAT_RULES)  # double rounding is innocuous
    assert r.status == "proved" and "excess-precision" not in r.encoding and "correctly-rounded" in r.encoding


def test_a_precision_change_refuted_without_the_assumption_shows_values_exact_arithmetic_confirms() -> None:
    """(a + b) + c in bf16 vs in f32 rounded once: the sums differ on some inputs."""
    params = "bf16[4]{0} a, bf16[4]{0} b, bf16[4]{0} c"
    before = hlo_module_with_parameters("  s = bf16[4]{0} add(a, b)\n  ROOT t = bf16[4]{0} add(s, c)", params)
    after = hlo_module_with_parameters(
        "  x = f32[4]{0} convert(a)\n  y = f32[4]{0} convert(b)\n  z = f32[4]{0} convert(c)\n"
        "  s = f32[4]{0} add(x, y)\n  t = f32[4]{0} add(s, z)\n  ROOT r = bf16[4]{0} convert(t)",
        params,
    )
    on = validate_pair(before, after, mode="logical")
    assert on.status == "proved" and EXCESS_PRECISION in on.assumptions
    assert on.evidence is not None  # an input where the stated precision differs
    off = validate_pair(before, after, mode="logical", float_rules=STATED_ONLY)
    assert off.status == "refuted"
    for cex in (off.counterexample, on.evidence["stated_precision_differs"]):
        a, b, c = (np.array(p, dtype=np.float64).astype(BF16) for p in cex["parameters"])
        (j,) = cex["element"]
        stated = (a.astype(np.float64) + b).astype(BF16).astype(np.float64) + c
        wide = (a.astype(np.float64) + b).astype(np.float32).astype(np.float64) + c
        assert float(cex["before"]) == float(stated.astype(BF16)[j])
        assert float(cex["after"]) == float(wide.astype(np.float32).astype(BF16)[j])
        assert float(cex["before"]) != float(cex["after"])


def test_float_type_changes_says_what_changed() -> None:
    a, b = parse_module(DOT_BEFORE), parse_module(DOT_AFTER)
    said = float_type_changes(a, b)
    assert "dot computed in bf16 1 time(s) before and 0 after, in f32 0 before and 1 after" in said
    assert "bf16->f32 0 before and 2 after" in said and "f32->bf16 0 before and 1 after" in said
    assert float_type_changes(b, b) == ""


def test_erased_text_erases_float_types_only() -> None:
    assert (
        erased_text("reduce f32[8] (bf16[8,4],s32[],f8e4m3fn[2])")
        == "reduce float[8] (float[8,4],s32[],float[2])"
    )
    assert erased_text("u8[3] pred[2]") == "u8[3] pred[2]"


# ------------------------------------------------------------------ operands that differ
def test_a_cut_candidate_whose_operands_differ_does_not_refute_the_pair() -> None:
    """The later dot reads negate(a): the verifier finds the dots' operands differ, which the
    pair's reason says as such; a verdict comes only from running the whole modules."""
    params = "f32[8,16]{1,0} a, f32[16,32]{1,0} b"
    before = hlo_module_with_parameters(
        "  ROOT d = f32[8,32]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}", params
    )
    after = hlo_module_with_parameters(
        "  n = f32[8,16]{1,0} negate(a)\n"
        "  ROOT d = f32[8,32]{1,0} dot(n, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
        params,
    )
    r = validate_pair(before, after, mode="logical")
    if r.status == "refuted":  # the executor runs dots: the whole modules' roots differ
        assert r.counterexample["before"] != r.counterexample["after"]
    else:
        assert r.status == "unknown" and OPERANDS_DIFFER in r.reason and "refuted" not in r.reason


def test_executed_difference_finds_a_difference_and_none_where_there_is_none() -> None:
    params = "f32[4]{0} a, f32[4]{0} b"
    add = parse_module(hlo_module_with_parameters("  ROOT r = f32[4]{0} add(a, b)", params))
    swapped = parse_module(hlo_module_with_parameters("  ROOT r = f32[4]{0} add(b, a)", params))
    sub = parse_module(hlo_module_with_parameters("  ROOT r = f32[4]{0} subtract(a, b)", params))
    assert executed_difference(add, swapped)[0] is None
    found, _ = executed_difference(add, sub)
    assert found is not None
    a, b = (np.array(p, dtype=np.float32) for p in found["parameters"])
    (j,) = found["element"]
    assert float(found["before"]) == float(a[j] + b[j]) and float(found["after"]) == float(a[j] - b[j])


# ------------------------------------------------------------------ mixed-precision movement
MIXED = {
    "broadcast": (
        "bf16[4]{0} a",
        "f32[4,3]{1,0} broadcast(a), dimensions={0}",
        "f32[4]{0} convert(a)",
        "f32[4,3]{1,0} broadcast(w), dimensions={0}",
    ),
    "copy": ("f32[4]{0} a", "bf16[4]{0} copy(a)", "bf16[4]{0} convert(a)", "bf16[4]{0} copy(w)"),
    "slice": (
        "f32[6]{0} a",
        "bf16[3]{0} slice(a), slice={[1:4]}",
        "bf16[6]{0} convert(a)",
        "bf16[3]{0} slice(w), slice={[1:4]}",
    ),
}


@pytest.mark.parametrize("op", sorted(MIXED))
def test_mixed_precision_movement_is_the_movement_then_a_convert_in_verifier_and_executor(op: str) -> None:
    param, mixed_line, convert_line, moved_line = MIXED[op]
    mixed = hlo_module_with_parameters(f"  ROOT r = {mixed_line}", param)
    explicit = hlo_module_with_parameters(f"  w = {convert_line}\n  ROOT r = {moved_line}", param)
    r = verify_rewrite(explicit, mixed, mode="logical", float_rules=(MIXED_PRECISION_MOVEMENT,))
    assert r.status == "proved" and MIXED_PRECISION_MOVEMENT in r.encoding
    without = verify_rewrite(explicit, mixed, mode="logical")
    assert without.status == "unknown" and MIXED_PRECISION_MOVEMENT in without.reason
    shape = parse_module(mixed).entry.instructions[0].shape
    dtype = {"bf16": BF16, "f32": np.float32}[shape.element_type.text]
    ties = np.array([1.00390625, 1.01171875, -3.0078125, 2.0**-130, 1e39, np.nan], dtype=np.float32)
    data = (
        ties[: shape.dimensions[0]].astype(dtype)
        if dtype is np.float32
        else np.random.default_rng(1).normal(0, 3, shape.dimensions).astype(dtype)
    )
    assert _same(run(mixed, [data]).array, run(explicit, [data]).array)


def test_movement_convert_rounds_to_nearest_even_like_ieee() -> None:
    # 1 + 2^-8 is halfway between bf16 1 and 1 + 2^-7: to the even one (1); 1 + 3*2^-8 up.
    # bf16's smallest subnormal is 2^-133: 2^-134 is a tie with 0 (even), 3*2^-134 a tie
    # between 2^-133 (odd significand) and 2^-132 (even); past the largest finite: infinity
    values = np.array([1 + 2.0**-8, 1 + 3 * 2.0**-8, 2.0**-134, 3 * 2.0**-134, 3.5e38], dtype=np.float32)
    out = movement_operand_converted(values, "bf16").astype(np.float64)
    assert out.tolist()[:4] == [1.0, 1 + 2.0**-6, 0.0, 2.0**-132] and np.isinf(out[4])


def test_a_pad_between_float_types_rounds_its_operand_and_its_padding_value() -> None:
    param = "f32[3]{0} a, f32[] p"
    mixed = hlo_module_with_parameters("  ROOT r = bf16[5]{0} pad(a, p), padding=1_1", param)
    explicit = hlo_module_with_parameters(
        "  w = bf16[3]{0} convert(a)\n  q = bf16[] convert(p)\n  ROOT r = bf16[5]{0} pad(w, q), padding=1_1",
        param,
    )
    assert (
        verify_rewrite(explicit, mixed, mode="logical", float_rules=(MIXED_PRECISION_MOVEMENT,)).status
        == "proved"
    )
    data = [np.array([1.00390625, 1.01171875, -3.0078125], np.float32), np.array(1.00390625, np.float32)]
    assert run(mixed, data).array.astype(np.float64).tolist() == [1.0, 1.0, 1.015625, -3.0, 1.0]


# ------------------------------------------------------------------ the command line
def test_cli_no_excess_precision_decides_without_the_assumption(capsys: pytest.CaptureFixture[str]) -> None:
    """attention_int8's float-type-correction (pass 59: bf16 ops computed in f32) is proved under
    excess-precision by default; with --no-excess-precision it is not, and no proof names the
    assumption. (mlp_train_step's bfloat16-propagation, pass 37, rounds to bf16 where the
    earlier module did not: less precision, never proved under the assumption.)"""
    from support.ground_truth import TEST_DATA

    from layout_algebra.cli import main as cli_main

    program = str(TEST_DATA / "pass_dumps" / "attention_int8")
    cli_main(["validate-passes", program, "--json"])
    pairs = json.loads(capsys.readouterr().out)["pairs"]
    (pair,) = [p for p in pairs if p["number"] == 59]
    assert pair["status"] == "proved" and "excess-precision" in pair["assumptions"]
    assert "evidence" in pair
    (bf16,) = [p for p in pairs if p["number"] == 12]  # more bf16 rounding: not excess precision
    assert bf16["status"] != "proved" and "excess-precision" not in bf16["assumptions"]
    code = cli_main(["validate-passes", program, "--json", "--no-excess-precision"])
    pairs = json.loads(capsys.readouterr().out)["pairs"]
    (pair,) = [p for p in pairs if p["number"] == 59]
    assert pair["status"] != "proved" and "precision change" in pair["reason"]
    assert code == (1 if any(p["status"] == "refuted" for p in pairs) else 0)
    assert all("excess-precision" not in p["assumptions"] for p in pairs)
