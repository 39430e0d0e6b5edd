"""Pass validation of loops by induction (hlo.pass_loops) against the NumPy executor.

Random loop programs (counter loops, scan-like dynamic-update-slice loops, nested loops, tuple
states, bodies that read the state through bitcasts of another layout, a conditional), each
with rewritten variants that compute the same (re-laid-out state, re-fused body, transposes
folded into bitcasts, a hoisted invariant) and mutants that do not (a changed constant, swapped
state elements, another trip count, an off-by-one dynamic-update-slice index). The executor
(an oracle independent of the verifier) confirms each variant computes the same and each
mutant something else; validation must prove every variant and never a mutant. Seeds are
fixed.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from support.pass_dumps import corpus_dumps

from layout_algebra.hlo.execute import run
from layout_algebra.hlo.execute_compare import compare
from layout_algebra.hlo.execute_control import LoopLimitError, iteration_cap
from layout_algebra.hlo.passes import validate_pair

SEEDS = range(3)


# ------------------------------------------------------------------------ program families
def counter_loop(rng: random.Random) -> tuple[str, dict[str, str], dict[str, str]]:
    """state (i, v: f32[R,C]); body: v <- transpose back of (transpose(v) + k); i < T."""
    r, c, t, k = rng.randint(2, 3), rng.randint(2, 4), rng.randint(2, 4), rng.randint(1, 5)
    v_row = f"f32[{r},{c}]{{1,0}}"
    state = f"(s32[], {v_row})"
    text = f"""HloModule counter
cond {{
  s = {state} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant({t})
  ROOT lt = pred[] compare(i, n), direction=LT
}}
body {{
  s = {state} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  v = {v_row} get-tuple-element(s), index=1
  tv = f32[{c},{r}]{{1,0}} transpose(v), dimensions={{1,0}}
  k = f32[] constant({k})
  kb = f32[{c},{r}]{{1,0}} broadcast(k), dimensions={{}}
  a = f32[{c},{r}]{{1,0}} add(tv, kb)
  w = {v_row} transpose(a), dimensions={{1,0}}
  ROOT out = {state} tuple(j, w)
}}
ENTRY e {{
  x = {v_row} parameter(0)
  zero = s32[] constant(0)
  init = {state} tuple(zero, x)
  loop = {state} while(init), condition=cond, body=body
  ROOT r = {v_row} get-tuple-element(loop), index=1
}}"""
    # the state column-major: each transpose of the body is a bitcast
    col = f"f32[{r},{c}]{{0,1}}"
    cstate = f"(s32[], {col})"
    relaid = (
        text.replace(f"s = {state} parameter(0)", f"s = {cstate} parameter(0)")
        .replace(f"v = {v_row} get-tuple-element", f"v = {col} get-tuple-element")
        .replace(
            f"tv = f32[{c},{r}]{{1,0}} transpose(v), dimensions={{1,0}}",
            f"tv = f32[{c},{r}]{{1,0}} bitcast(v)",
        )
        .replace(f"w = {v_row} transpose(a), dimensions={{1,0}}", f"w = {col} bitcast(a)")
        .replace(f"ROOT out = {state} tuple", f"ROOT out = {cstate} tuple")
        .replace(f"init = {state} tuple(zero, x)", f"xc = {col} copy(x)\n  init = {cstate} tuple(zero, xc)")
        .replace(f"loop = {state} while", f"loop = {cstate} while")
        .replace(
            f"ROOT r = {v_row} get-tuple-element(loop), index=1",
            f"rc = {col} get-tuple-element(loop), index=1\n  ROOT r = {v_row} copy(rc)",
        )
    )
    fused = text.replace(
        f"  a = f32[{c},{r}]{{1,0}} add(tv, kb)",
        f"  a = f32[{c},{r}]{{1,0}} fusion(tv, kb), kind=kLoop, calls=fadd",
    ).replace(
        "body {",
        f"""fadd {{
  p0 = f32[{c},{r}]{{1,0}} parameter(0)
  p1 = f32[{c},{r}]{{1,0}} parameter(1)
  ROOT s = f32[{c},{r}]{{1,0}} add(p0, p1)
}}
body {{""",
    )
    # loop-invariant code motion: the broadcast constant carried in a new state element
    hoisted_state = f"(s32[], {v_row}, f32[{c},{r}]{{1,0}})"
    hoisted = (
        text.replace(state, hoisted_state)
        .replace(
            f"  k = f32[] constant({k})\n  kb = f32[{c},{r}]{{1,0}} broadcast(k), dimensions={{}}\n",
            f"  kb = f32[{c},{r}]{{1,0}} get-tuple-element(s), index=2\n",
        )
        .replace("tuple(j, w)", "tuple(j, w, kb)")
        .replace(
            "init = ",
            f"k = f32[] constant({k})\n  kb = f32[{c},{r}]{{1,0}} broadcast(k), dimensions={{}}\n  init = ",
        )
        .replace("tuple(zero, x)", "tuple(zero, x, kb)")
    )
    mutants = {
        "constant": text.replace(f"k = f32[] constant({k})", f"k = f32[] constant({k + 1})"),
        "trip count": text.replace(f"n = s32[] constant({t})", f"n = s32[] constant({t + 1})"),
        "LE": text.replace("direction=LT", "direction=LE"),
        "relaid constant": relaid.replace(f"k = f32[] constant({k})", f"k = f32[] constant({k + 2})"),
    }
    return text, {"relaid": relaid, "fused": fused, "hoisted": hoisted}, mutants


def scan_loop(rng: random.Random) -> tuple[str, dict[str, str], dict[str, str]]:
    """state (i, out: f32[T,N], v: f32[N]); body writes v to row i of out, v <- v * k."""
    t, n, k = rng.randint(2, 4), rng.randint(2, 4), rng.randint(2, 3)
    out_l = f"f32[{t},{n}]{{1,0}}"
    state = f"(s32[], {out_l}, f32[{n}]{{0}})"
    text = f"""HloModule scan
cond {{
  s = {state} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant({t})
  ROOT lt = pred[] compare(i, n), direction=LT
}}
body {{
  s = {state} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  o = {out_l} get-tuple-element(s), index=1
  v = f32[{n}]{{0}} get-tuple-element(s), index=2
  row = f32[1,{n}]{{1,0}} reshape(v)
  z = s32[] constant(0)
  o2 = {out_l} dynamic-update-slice(o, row, i, z)
  k = f32[] constant({k})
  kb = f32[{n}]{{0}} broadcast(k), dimensions={{}}
  v2 = f32[{n}]{{0}} multiply(v, kb)
  ROOT out = {state} tuple(j, o2, v2)
}}
ENTRY e {{
  x = f32[{n}]{{0}} parameter(0)
  zero = s32[] constant(0)
  zf = f32[] constant(0)
  o = {out_l} broadcast(zf), dimensions={{}}
  init = {state} tuple(zero, o, x)
  loop = {state} while(init), condition=cond, body=body
  ROOT r = {out_l} get-tuple-element(loop), index=1
}}"""
    col = f"f32[{t},{n}]{{0,1}}"
    cstate = f"(s32[], {col}, f32[{n}]{{0}})"
    relaid = (
        text.replace(state, cstate)
        .replace(f"o = {out_l} get-tuple-element", f"o = {col} get-tuple-element")
        .replace(f"o2 = {out_l} dynamic-update-slice", f"o2 = {col} dynamic-update-slice")
        .replace(f"o = {out_l} broadcast", f"o = {col} broadcast")
        .replace(
            f"ROOT r = {out_l} get-tuple-element(loop), index=1",
            f"rc = {col} get-tuple-element(loop), index=1\n  ROOT r = {out_l} copy(rc)",
        )
    )
    mutants = {
        "off by one": text.replace(
            "o2 = " + out_l + " dynamic-update-slice(o, row, i, z)",
            "o2 = " + out_l + " dynamic-update-slice(o, row, j, z)",
        ),
        "constant": text.replace(f"k = f32[] constant({k})", f"k = f32[] constant({k + 1})"),
        "trip count": text.replace(f"n = s32[] constant({t})", f"n = s32[] constant({t - 1})"),
    }
    return text, {"relaid": relaid}, mutants


def tuple_state_loop(rng: random.Random) -> tuple[str, dict[str, str], dict[str, str]]:
    """state (i, a, b: f32[N]); body: a <- a + b, b <- b * k (two elements of one type)."""
    n, t, k = rng.randint(2, 5), rng.randint(1, 3), rng.randint(2, 4)
    vec = f"f32[{n}]{{0}}"
    state = f"(s32[], {vec}, {vec})"
    text = f"""HloModule pair
cond {{
  s = {state} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant({t})
  ROOT lt = pred[] compare(i, n), direction=LT
}}
body {{
  s = {state} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  a = {vec} get-tuple-element(s), index=1
  b = {vec} get-tuple-element(s), index=2
  a2 = {vec} add(a, b)
  k = f32[] constant({k})
  kb = {vec} broadcast(k), dimensions={{}}
  b2 = {vec} multiply(b, kb)
  ROOT out = {state} tuple(j, a2, b2)
}}
ENTRY e {{
  x = {vec} parameter(0)
  y = {vec} parameter(1)
  zero = s32[] constant(0)
  init = {state} tuple(zero, x, y)
  loop = {state} while(init), condition=cond, body=body
  ROOT r = {vec} get-tuple-element(loop), index=1
}}"""
    commuted = text.replace("a2 = " + vec + " add(a, b)", f"ac = {vec} copy(a)\n  a2 = {vec} add(ac, b)")
    copied = text.replace(
        "ROOT out = " + state + " tuple(j, a2, b2)",
        f"c2 = {vec} copy(b2)\n  ROOT out = {state} tuple(j, a2, c2)",
    )
    mutants = {"swapped": text.replace("tuple(j, a2, b2)", "tuple(j, b2, a2)")}
    return text, {"commuted": commuted, "copied": copied}, mutants


def nested_loop(rng: random.Random) -> tuple[str, dict[str, str], dict[str, str]]:
    """an outer counter loop whose body runs an inner loop adding 1 to v, m times."""
    n, t, m = rng.randint(2, 4), rng.randint(1, 3), rng.randint(1, 3)
    vec = f"f32[{n}]{{0}}"
    state = f"(s32[], {vec})"
    text = f"""HloModule nested
icond {{
  s = {state} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant({m})
  ROOT lt = pred[] compare(i, n), direction=LT
}}
ibody {{
  s = {state} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  v = {vec} get-tuple-element(s), index=1
  f = f32[] constant(1)
  fb = {vec} broadcast(f), dimensions={{}}
  w = {vec} add(v, fb)
  ROOT out = {state} tuple(j, w)
}}
ocond {{
  s = {state} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant({t})
  ROOT lt = pred[] compare(i, n), direction=LT
}}
obody {{
  s = {state} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  v = {vec} get-tuple-element(s), index=1
  zero = s32[] constant(0)
  init = {state} tuple(zero, v)
  inner = {state} while(init), condition=icond, body=ibody
  w = {vec} get-tuple-element(inner), index=1
  ww = {vec} multiply(w, w)
  ROOT out = {state} tuple(j, ww)
}}
ENTRY e {{
  x = {vec} parameter(0)
  zero = s32[] constant(0)
  init = {state} tuple(zero, x)
  loop = {state} while(init), condition=ocond, body=obody
  ROOT r = {vec} get-tuple-element(loop), index=1
}}"""
    fused = text.replace(
        f"  w = {vec} add(v, fb)\n", f"  w = {vec} fusion(v, fb), kind=kLoop, calls=fadd\n"
    ).replace(
        "ibody {",
        f"""fadd {{
  p0 = {vec} parameter(0)
  p1 = {vec} parameter(1)
  ROOT s = {vec} add(p0, p1)
}}
ibody {{""",
    )
    mutants = {"inner trip count": text.replace(f"n = s32[] constant({m})", f"n = s32[] constant({m + 1})")}
    return text, {"fused inner body": fused}, mutants


def conditional_program(rng: random.Random) -> tuple[str, dict[str, str], dict[str, str]]:
    """conditional(p, x, x): negate or add k."""
    n, k = rng.randint(2, 5), rng.randint(1, 4)
    vec = f"f32[{n}]{{0}}"
    text = f"""HloModule cond
neg {{
  a = {vec} parameter(0)
  ROOT n = {vec} negate(a)
}}
plus {{
  a = {vec} parameter(0)
  k = f32[] constant({k})
  kb = {vec} broadcast(k), dimensions={{}}
  ROOT s = {vec} add(a, kb)
}}
ENTRY e {{
  p = pred[] parameter(0)
  x = {vec} parameter(1)
  ROOT c = {vec} conditional(p, x, x), true_computation=neg, false_computation=plus
}}"""
    variant = text.replace(
        "ROOT s = " + vec + " add(a, kb)", f"s = {vec} add(a, kb)\n  ROOT c = {vec} copy(s)"
    )
    # conditional-canonicalizer: every branch operand and the result wrapped in a 1-tuple
    one = f"({vec})"
    tupled = f"""HloModule cond
neg {{
  t = {one} parameter(0)
  a = {vec} get-tuple-element(t), index=0
  n = {vec} negate(a)
  ROOT r = {one} tuple(n)
}}
plus {{
  t = {one} parameter(0)
  a = {vec} get-tuple-element(t), index=0
  k = f32[] constant({k})
  kb = {vec} broadcast(k), dimensions={{}}
  s = {vec} add(a, kb)
  ROOT r = {one} tuple(s)
}}
ENTRY e {{
  p = pred[] parameter(0)
  x = {vec} parameter(1)
  t1 = {one} tuple(x)
  t2 = {one} tuple(x)
  c = {one} conditional(p, t1, t2), true_computation=neg, false_computation=plus
  ROOT r = {vec} get-tuple-element(c), index=0
}}"""
    mutants = {
        "branch constant": text.replace(f"k = f32[] constant({k})", f"k = f32[] constant({k + 1})"),
        "tupled branch constant": tupled.replace(f"k = f32[] constant({k})", f"k = f32[] constant({k + 1})"),
        "tupled branches swapped": tupled.replace(
            "true_computation=neg, false_computation=plus", "true_computation=plus, false_computation=neg"
        ),
    }
    return text, {"rewritten branch": variant, "tupled": tupled}, mutants


def invariant_loop(rng: random.Random) -> tuple[str, dict[str, str], dict[str, str]]:
    """state (i, v, w); the body passes w through and adds negate(w) to v: a hoistable value."""
    n, t = rng.randint(2, 5), rng.randint(1, 4)
    vec = f"f32[{n}]{{0}}"
    state = f"(s32[], {vec}, {vec})"
    text = f"""HloModule invariant
cond {{
  s = {state} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant({t})
  ROOT lt = pred[] compare(i, n), direction=LT
}}
body {{
  s = {state} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  v = {vec} get-tuple-element(s), index=1
  w = {vec} get-tuple-element(s), index=2
  nw = {vec} negate(w)
  v2 = {vec} add(v, nw)
  ROOT out = {state} tuple(j, v2, w)
}}
ENTRY e {{
  x = {vec} parameter(0)
  y = {vec} parameter(1)
  zero = s32[] constant(0)
  init = {state} tuple(zero, x, y)
  loop = {state} while(init), condition=cond, body=body
  ROOT r = {vec} get-tuple-element(loop), index=1
}}"""
    wide = f"(s32[], {vec}, {vec}, {vec})"
    hoisted = (
        text.replace(state, wide)
        .replace(f"  nw = {vec} negate(w)\n", f"  nw = {vec} get-tuple-element(s), index=3\n")
        .replace("tuple(j, v2, w)", "tuple(j, v2, w, nw)")
        .replace("  init = ", f"  ny = {vec} negate(y)\n  init = ")
        .replace("tuple(zero, x, y)", "tuple(zero, x, y, ny)")
    )
    mutants = {
        # the hoisted value computed from the element the body changes
        "hoisted from a moving element": hoisted.replace(f"ny = {vec} negate(y)", f"ny = {vec} negate(x)"),
    }
    return text, {"hoisted": hoisted}, mutants


def clamped_scan_loop(rng: random.Random) -> tuple[str, dict[str, str], dict[str, str]]:
    """the scan with its row index clamped by the body (maximum(i, 0)): a computed start index."""
    text, variants, _ = scan_loop(rng)
    clamp = "o2 = {} dynamic-update-slice(o, row, i, z)"
    out_l = text.split("o = ")[1].split(" get-tuple")[0]
    text2 = text.replace(
        clamp.format(out_l),
        f"ic = s32[] maximum(i, z)\n  {clamp.format(out_l).replace('row, i,', 'row, ic,')}",
    )
    relaid = variants["relaid"]
    col = relaid.split("o = ")[1].split(" get-tuple")[0]
    relaid2 = relaid.replace(
        clamp.format(col), f"ic = s32[] maximum(i, z)\n  {clamp.format(col).replace('row, i,', 'row, ic,')}"
    )
    mutants2 = {"clamped off by one": text2.replace("ic = s32[] maximum(i, z)", "ic = s32[] maximum(j, z)")}
    return text2, {"relaid": relaid2}, mutants2


def indexed_conditional(rng: random.Random) -> tuple[str, dict[str, str], dict[str, str]]:
    """conditional(k, x, x, x) over three branch computations (k from a predicate: 0 or 1, so
    that random inputs run both of the first two branches)."""
    n = rng.randint(2, 4)
    vec = f"f32[{n}]{{0}}"
    text = f"""HloModule indexed
b0 {{
  a = {vec} parameter(0)
  ROOT n = {vec} negate(a)
}}
b1 {{
  a = {vec} parameter(0)
  ROOT m = {vec} multiply(a, a)
}}
b2 {{
  a = {vec} parameter(0)
  ROOT c = {vec} copy(a)
}}
ENTRY e {{
  p = pred[] parameter(0)
  k = s32[] convert(p)
  x = {vec} parameter(1)
  ROOT c = {vec} conditional(k, x, x, x), branch_computations={{b0, b1, b2}}
}}"""
    variant = text.replace(
        f"ROOT m = {vec} multiply(a, a)", f"a2 = {vec} copy(a)\n  ROOT m = {vec} multiply(a2, a2)"
    )
    mutants = {
        "branches swapped": text.replace(
            "branch_computations={b0, b1, b2}", "branch_computations={b1, b0, b2}"
        )
    }
    return text, {"rewritten branch": variant}, mutants


def removable_elements_loop(rng: random.Random) -> tuple[str, dict[str, str], dict[str, str]]:
    """state (i, v, c, d): c a constant the body passes through, d dead (counted, never read)."""
    n, t, k = rng.randint(2, 4), rng.randint(1, 4), rng.randint(2, 5)
    vec = f"f32[{n}]{{0}}"
    state = f"(s32[], {vec}, f32[], s32[])"

    def program(state: str, c: str, d: bool) -> str:
        elements = "j, w" + (", c" if c == "state" else "") + (", e" if d else "")
        inits = "zero, x" + (", k" if c == "state" else "") + (", zero" if d else "")
        read_c = (
            "  c = f32[] get-tuple-element(s), index=2\n" if c == "state" else f"  c = f32[] constant({c})\n"
        )
        dead = (
            f"  d = s32[] get-tuple-element(s), index={3 if c == 'state' else 2}\n  e = s32[] add(d, one)\n"
            if d
            else ""
        )
        return f"""HloModule removable
cond {{
  s = {state} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant({t})
  ROOT lt = pred[] compare(i, n), direction=LT
}}
body {{
  s = {state} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  v = {vec} get-tuple-element(s), index=1
{read_c}  cb = {vec} broadcast(c), dimensions={{}}
  w = {vec} multiply(v, cb)
{dead}  ROOT out = {state} tuple({elements})
}}
ENTRY e {{
  x = {vec} parameter(0)
  zero = s32[] constant(0)
  k = f32[] constant({k})
  init = {state} tuple({inits})
  loop = {state} while(init), condition=cond, body=body
  ROOT r = {vec} get-tuple-element(loop), index=1
}}"""

    text = program(state, "state", True)
    no_dead = program(f"(s32[], {vec}, f32[])", "state", False)
    no_constant = program(f"(s32[], {vec}, s32[])", str(k), True)
    neither = program(f"(s32[], {vec})", str(k), False)
    mutants = {"removed constant replaced by another": program(f"(s32[], {vec})", str(k + 1), False)}
    return (
        text,
        {"dead element removed": no_dead, "constant element removed": no_constant, "both": neither},
        mutants,
    )


FAMILIES = {
    "removable elements": removable_elements_loop,
    "invariant": invariant_loop,
    "clamped scan": clamped_scan_loop,
    "indexed conditional": indexed_conditional,
    "counter": counter_loop,
    "scan": scan_loop,
    "tuple state": tuple_state_loop,
    "nested": nested_loop,
    "conditional": conditional_program,
}

CASES = [(family, seed) for family in FAMILIES for seed in SEEDS]


# ------------------------------------------------------------------------ the properties
@pytest.mark.parametrize(("family", "seed"), CASES)
def test_equivalent_loop_variants_are_proved(family: str, seed: int) -> None:
    text, variants, _ = FAMILIES[family](random.Random(seed))
    for name, variant in variants.items():
        assert variant != text, name
        assert compare(text, variant, mode="logical").same is True, name  # the oracle agrees
        result = validate_pair(text, variant, mode="logical")
        assert result.status == "proved", (name, result.reason)
        assert result.verdict == "proved"  # not the same program: the induction was used


@pytest.mark.parametrize(("family", "seed"), CASES)
def test_loop_mutants_are_never_proved_and_really_differ(family: str, seed: int) -> None:
    text, _, mutants = FAMILIES[family](random.Random(seed))
    for name, mutant in mutants.items():
        assert mutant != text, name
        result = validate_pair(text, mutant, mode="logical")
        assert result.status != "proved", name
        assert compare(text, mutant, mode="logical").same is False, name  # a real change


def test_a_loop_that_never_stops_is_a_clear_executor_error() -> None:
    text, _, _ = counter_loop(random.Random(0))
    forever = text.replace("j = s32[] add(i, one)", "j = s32[] copy(i)")  # the counter never moves
    shape = text.split("x = ")[1].split(" parameter")[0]
    dims = [int(d) for d in shape[4 : shape.index("]")].split(",")]
    with iteration_cap(20), pytest.raises(LoopLimitError, match="ran 20 iterations"):
        run(forever, [np.ones(dims, np.float32)])


def test_the_executor_runs_a_scan_row_by_row() -> None:
    text, _, _ = scan_loop(random.Random(1))
    n = int(text.split("x = f32[")[1].split("]")[0])
    t = int(text.split("n = s32[] constant(")[1].split(")")[0])
    k = float(text.split("k = f32[] constant(")[1].split(")")[0])
    x = np.arange(1, n + 1, dtype=np.float32)
    out = run(text, [x]).array
    expected = np.stack([x * k**i for i in range(t)])
    np.testing.assert_allclose(out, expected)


def test_a_widened_state_whose_new_element_changes_is_not_proved() -> None:
    text, variants, _ = counter_loop(random.Random(2))
    hoisted = variants["hoisted"]
    drifting = hoisted.replace("tuple(j, w, kb)", "tuple(j, w, a)")  # the "invariant" moves
    assert compare(text, drifting, mode="logical").same is False
    result = validate_pair(text, drifting, mode="logical")
    assert result.status == "unknown"
    assert "the pass changed the loop state" in result.reason


def test_a_loop_proof_names_the_float_rules_its_body_used() -> None:
    text, _, _ = tuple_state_loop(random.Random(0))
    vec = text.split("x = ")[1].split(" parameter")[0]
    halved = text.replace(
        f"  b2 = {vec} multiply(b, kb)\n",
        f"  two = f32[] constant(2)\n  twob = {vec} broadcast(two), dimensions={{}}\n  b2 = {vec} divide(b, twob)\n",
    )
    scaled = halved.replace("two = f32[] constant(2)", "two = f32[] constant(0.5)").replace(
        f"b2 = {vec} divide(b, twob)", f"b2 = {vec} multiply(b, twob)"
    )
    assert compare(halved, scaled, mode="logical").same is True
    result = validate_pair(halved, scaled, mode="logical")
    assert result.status == "proved", result.reason
    assert "power-of-two-division" in result.assumptions  # the body's proof rests on it
    assert validate_pair(halved, scaled, mode="logical", float_rules=()).status != "proved"


def test_a_loop_whose_body_differs_on_some_state_is_unknown_and_does_not_say_refuted() -> None:
    # XLA:CPU's simplify-while-loops on the KV-cache loop of the corpus: the widened bodies
    # differ on some state, which need not be reachable, so the pair is unknown; only a
    # pair's own verdict may say "refuted" (a reader greps reports for it).
    dumps = corpus_dumps("while_kv_cache.cpu")
    texts = {dump.number: text for dump, text in dumps}
    result = validate_pair(texts[16], texts[17], mode="logical")
    assert result.status == "unknown"
    assert "not proved equal" in result.reason and "refuted" not in result.reason
    assert "differ on some input" in result.reason
