"""JavaScript code generation, run in ``node`` and compared with the layout map.

The generated functions are executed by a real JavaScript engine (``node``) on every
logical index and every offset of small shapes (random ones drawn by Hypothesis, and the
TPU formats), on samples of big ones, and at the edge of the 2^53 range where ``Number``
stops being exact; the answers are compared with the package's own ``linear_index`` /
``delinearize`` and the stage pipeline run on NumPy arrays. The certificate (read back
from the printed text, checked against the layout map) is tested separately: the printed
JavaScript and its read-back SymPy value agree on every point.

No ``node``: the tests skip with the reason, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess

import numpy as np
import pytest
import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.environment import IN_CI
from support.strategies_maps import small_layout_shapes

from layout_algebra import delinearize, linear_index
from layout_algebra.cli import main
from layout_algebra.codegen import generate_code
from layout_algebra.codegen.certification import certify, evaluate
from layout_algebra.codegen.readback import ReadBackError, read_back
from layout_algebra.meaning.layout_map import OFFSET_SYMBOL, UNITS, layout_map

NODE = shutil.which("node")

if NODE is None and not IN_CI:
    pytest.skip(
        "node (JavaScript) is not installed: cannot run the generated JavaScript", allow_module_level=True
    )

BATCH = settings(
    max_examples=3,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

TPU_FORMATS = [
    "f32[20,300]{1,0:T(8,128)}",
    "f32[300,20]{0,1:T(8,128)}",
    "bf16[24,260]{1,0:T(8,128)(2,1)}",
    "s8[40,130]{1,0:T(32,128)(4,1)}",
    "s4[70,130]{1,0:T(64,128)(8,1)E(4)}",
    "bf16[2,3,5,7]{3,2,0,1:T(8,128)(2,1)}",
    "f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}",
    "pred[300]{0:T(1024)(128)(4,1)L(1024)}",
    "f32[8,8]{1,0:T(2,4)(2,1,1,1)}",
]


def test_node_is_available() -> None:
    assert NODE, (
        "the JavaScript tests run the generated code in node: install nodejs (apt-get install nodejs)"
    )


def run_node(functions: list[str], body: str) -> object:
    """Run ``functions`` and then ``body`` (which sets ``out``) in node; ``out`` as JSON.

    BigInts are printed as strings (JSON has no BigInt).
    """
    assert NODE, "no node"
    script = "\n".join(
        [
            *functions,
            "let out;",
            body,
            'process.stdout.write(JSON.stringify(out, (k, v) => typeof v === "bigint" ? v.toString() : v));',
        ]
    )
    done = subprocess.run([NODE, "-"], input=script, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{done.stderr}\n--- script ---\n{script[:3000]}"
    return json.loads(done.stdout)


def _everything(fwd: str, inv: str, pad: str, dims: list[int], size: int) -> str:
    """JavaScript that evaluates the three functions on every index and every offset."""
    return f"""
const dims = {json.dumps(dims)};
const forward = [];
const visit = (prefix) => {{
  if (prefix.length === dims.length) {{ forward.push({fwd}(...prefix)); return; }}
  for (let i = 0; i < dims[prefix.length]; i++) visit([...prefix, i]);
}};
if (dims.every((d) => d > 0)) visit([]);
const inverse = [], padding = [];
for (let p = 0; p < {size}; p++) {{ inverse.push({inv}(p)); padding.push({pad}(p)); }}
out = {{forward, inverse, padding}};
"""


def _oracle(shape, unit: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stage pipeline on NumPy arrays: offsets of all indices (row-major), index and padding of all offsets."""
    m = layout_map(shape)
    dims = tuple(int(d) for d in m.shape.dimensions)
    grid = np.indices(dims, dtype=np.int64).reshape(len(dims), int(np.prod(dims, dtype=np.int64)))
    positions = m.apply(tuple(grid), through=len(m.stages) - 1)[0]
    forward = np.broadcast_to(np.asarray(m.offset_of_position(np.asarray(positions), unit)), (grid.shape[1],))
    p = np.arange(int(m.size_in(unit)), dtype=np.int64)
    index, padding = m.unapply((m.position_of_offset(p, unit),), start=len(m.stages) - 1)
    inverse = (
        np.stack([np.broadcast_to(np.asarray(v), p.shape) for v in index])
        if m.rank
        else np.zeros((0, p.size))
    )
    return forward, inverse.T, np.broadcast_to(np.asarray(padding), p.shape)


def _check_all_points(shapes, units=UNITS) -> int:
    """Every index and offset of every shape in every unit, in one node run; returns points checked."""
    functions, bodies, cases = [], [], []
    for n, shape in enumerate(shapes):
        m = layout_map(shape)
        for unit in units:
            size = int(m.size_in(unit))
            if (
                size > 70_000
            ):  # bit offsets of the larger shapes: their byte and element offsets are all checked
                continue
            names = [f"f{n}_{unit}", f"i{n}_{unit}", f"p{n}_{unit}"]
            for direction, name in zip(("forward", "inverse", "padding"), names, strict=True):
                g = generate_code(shape, "js", direction, unit, name)
                assert g.certification.status == "proved", (str(shape), direction, unit, g.certification)
                functions.append(g.text)
            bodies.append(
                "{ "
                + _everything(*names, [int(d) for d in m.shape.dimensions], size).replace(
                    "out =", "const r ="
                )
                + "results.push(r); }"
            )
            cases.append((shape, unit))
    results = run_node(functions, "const results = [];\n" + "\n".join(bodies) + "\nout = results;")
    points = 0
    for (shape, unit), got in zip(cases, results, strict=True):
        forward, inverse, padding = _oracle(shape, unit)
        where = f"{shape} in {unit}s"
        assert np.array_equal(np.asarray(got["forward"], dtype=np.int64).reshape(-1), forward), where
        assert np.array_equal(np.asarray(got["padding"], dtype=bool), padding), where
        holds = ~padding
        rank = layout_map(shape).rank
        js_inverse = np.asarray(got["inverse"], dtype=np.int64).reshape(len(padding), rank)
        assert np.array_equal(js_inverse[holds], inverse[holds].reshape(int(holds.sum()), rank)), where
        points += forward.size + 2 * padding.size
    return points


@BATCH
@given(st.lists(small_layout_shapes(max_slots=1024), min_size=10, max_size=10))
def test_generated_js_agrees_with_the_layout_map_on_every_point(shapes) -> None:
    _check_all_points(shapes)


@BATCH
@given(
    st.lists(
        st.one_of(
            small_layout_shapes(element=("bf16", 0)),
            small_layout_shapes(element=("s4", 4)),
            small_layout_shapes(element=("pred", 1)),
        ),
        min_size=10,
        max_size=10,
    )
)
def test_generated_js_for_packed_types_agrees_in_bits_and_bytes(shapes) -> None:
    _check_all_points(shapes, units=("bit", "byte"))


def test_js_for_tpu_formats_agrees_on_every_element_and_offset() -> None:
    assert _check_all_points(TPU_FORMATS, units=("element", "byte")) > 100_000


def test_js_agrees_with_linear_index_and_delinearize() -> None:
    rng = random.Random(22)
    functions, calls, expected = [], [], []
    for n, shape in enumerate(TPU_FORMATS):
        m = layout_map(shape)
        functions += [generate_code(shape, "js", "forward", name=f"f{n}").text]
        functions += [generate_code(shape, "js", "inverse", name=f"i{n}").text]
        for index in rng.sample(list(m.elements()), 20):
            calls.append(f"f{n}({', '.join(map(str, index))})")
            expected.append(linear_index(shape, index))
            position = expected[-1]
            calls.append(f"i{n}({position})")
            expected.append(list(delinearize(shape, position)))
    got = run_node(functions, f"out = [{', '.join(calls)}];")
    assert got == expected


# ---------------------------------------------------------------- Number's 2^53 edge and BigInt
def test_number_code_is_exact_up_to_2_to_53_and_bigint_takes_over_beyond() -> None:
    below = "u8[1125899906842624]{0}"  # 2^50 bytes: bit offsets up to 2^53 - 8
    above = "u8[1125899906842625]{0}"  # one more: the last bit offset is 2^53
    fwd_below = generate_code(below, "js", "forward", "bit", "fb")
    inv_below = generate_code(below, "js", "inverse", "bit", "ib")
    fwd_above = generate_code(above, "js", "forward", "bit", "fa")
    inv_above = generate_code(above, "js", "inverse", "bit", "ia")
    assert "Number arithmetic" in fwd_below.text and "n" not in fwd_below.expression_texts[0]
    assert "BigInt arithmetic" in fwd_above.text and "8n" in fwd_above.expression_texts[0]
    assert "BigInt" in inv_above.text
    for g in (fwd_below, inv_below, fwd_above, inv_above):
        assert g.certification.status == "proved", g.certification
    last = 2**50 - 1
    bits = [2**53 - 1, 2**53 - 2, 2**53 - 8, 2**53 - 9, 2**52 + 7, 12345]
    got = run_node(
        [g.text for g in (fwd_below, inv_below, fwd_above, inv_above)],
        f"out = [fb({last}), {', '.join(f'ib({b})' for b in bits)}, fa({last + 1}n), ia({2**53 + 7}n)];",
    )
    assert got == [8 * last, *([b // 8] for b in bits), str(8 * (last + 1)), [str((2**53 + 7) // 8)]]


def test_bigint_code_for_a_huge_tiled_shape_agrees_on_samples() -> None:
    shape = "s4[4000000,4000000,4000]{2,1,0:T(8,128)E(4)}"
    m = layout_map(shape)
    fwd = generate_code(shape, "js", "forward", "bit", "f")
    inv = generate_code(shape, "js", "inverse", "bit", "g")
    assert "BigInt" in fwd.text and fwd.certification.status == "proved"
    rng = random.Random(5)
    indices = [tuple(rng.randrange(int(d)) for d in m.shape.dimensions) for _ in range(50)]
    indices += [tuple(int(d) - 1 for d in m.shape.dimensions)]
    calls = [f"f({', '.join(f'{i}n' for i in index)})" for index in indices]
    calls += [f"g({m.forward(index, 'bit') + 3}n)" for index in indices]
    got = run_node([fwd.text, inv.text], f"out = [{', '.join(calls)}];")
    expected = [str(m.forward(index, "bit")) for index in indices]
    expected += [[str(i) for i in index] for index in indices]
    assert got == expected


def test_math_floor_of_a_quotient_is_floor_division_below_2_to_53() -> None:
    """The printers' claim, checked in node on adversarial pairs: a = q*b - 1, the case that could round up."""
    rng = random.Random(53)
    pairs = []
    for _ in range(3000):
        b = rng.choice([rng.randrange(2, 64), rng.randrange(2, 2**26), rng.randrange(2, 2**52)])
        q = rng.randrange(1, (2**53 - 1) // b + 1)
        a = q * b - 1 if rng.random() < 0.7 else q * b
        pairs.append((a, b))
    pairs += [(2**53 - 1, 2), (2**53 - 2, 2**53 - 1), (2**53 - 1, 3), (2**53 - 1, 2**53 - 1)]
    assert all(0 <= a < 2**53 and 0 < b < 2**53 for a, b in pairs)
    got = run_node([], f"const pairs = {json.dumps(pairs)}; out = pairs.map(([a, b]) => Math.floor(a / b));")
    assert got == [a // b for a, b in pairs]


# ---------------------------------------------------------------- the certificate
def test_printed_js_equals_its_read_back_value_on_every_point() -> None:
    shape = "bf16[24,260]{1,0:T(8,128)(2,1)}"
    m = layout_map(shape)
    g = generate_code(shape, "js", "inverse", "byte", "inv")
    size = int(m.size_in("byte"))
    got = np.asarray(run_node([g.text], f"out = Array.from({{length: {size}}}, (_, p) => inv(p));"))
    env = {OFFSET_SYMBOL: np.arange(size)}
    for k, part in enumerate(g.read_back):
        assert np.array_equal(got[:, k], np.broadcast_to(evaluate(part, env), (size,)))


def test_a_wrong_js_expression_is_refuted() -> None:
    shape = "f32[3,5]{1,0:T(2,2)}"
    g = generate_code(shape, "js")
    wrong = g.expression_texts[0].replace("Math.floor(i0 / 2)", "Math.floor(i0 / 3)")
    assert wrong != g.expression_texts[0]
    r = certify(shape, "forward", "element", read_back("js", wrong, rank=2))
    assert r.status == "refuted"
    i0, i1 = r.counterexample["i0"], r.counterexample["i1"]
    assert run_node([], f"const i0 = {i0}, i1 = {i1}; out = {wrong};") == r.counterexample["emitted"]
    assert r.counterexample["expected"] == linear_index(shape, (i0, i1))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("i0 / 8", "division outside Math.floor"),
        ("2*(i0 / 8) + 1", "division outside Math.floor"),
        ("i0 / 8n + 1", "mixes BigInt and Number"),
        ("Math.floor(i0 / 8", r"expected \)"),
        ("-(i0 / 8)", "division outside Math.floor"),
        ("Math.floor(i0 / 8n)", "Math.floor of a BigInt"),
    ],
)
def test_js_read_back_refuses_what_would_not_be_floor_division(text, message) -> None:
    with pytest.raises(ReadBackError, match=message):
        read_back("js", text, rank=1)


def test_js_read_back_reads_both_arithmetics() -> None:
    i0 = sympy.Symbol("i0", integer=True, nonnegative=True)
    assert read_back("js", "Math.floor(2*i0 / 8)", rank=1) == sympy.floor(2 * i0 / 8)
    assert read_back("js", "2*Math.floor(i0 / 8)", rank=1) == 2 * sympy.floor(i0 / 8)
    assert read_back("js", "2n*(i0 / 8n)", rank=1) == 2 * sympy.floor(i0 / 8)


def test_js_refuses_reserved_names() -> None:
    with pytest.raises(ValueError, match="'delete' is a reserved word"):
        generate_code("f32[2]", "js", name="delete")
    with pytest.raises(ValueError, match="'Math' is a reserved word"):
        generate_code("f32[Math]", "js")


def test_symbolic_js_takes_sizes_as_parameters_and_states_its_range() -> None:
    shape = "f32[N,M]{1,0:T(8,128)}"
    g = generate_code(shape, "js", "forward", "byte")
    assert g.parameters == ("i0", "i1", "N", "M")
    assert "exact while every value computed stays below 2^53" in g.text
    assert g.certification.status == "proved", g.certification
    concrete = "f32[13,300]{1,0:T(8,128)}"
    m = layout_map(concrete)
    indices = list(m.elements())
    got = run_node([g.text], f"out = {json.dumps(indices)}.map(([a, b]) => byte_offset(a, b, 13, 300));")
    assert got == [m.forward(index, "byte") for index in indices]


def test_cli_prints_js(capsys) -> None:
    assert main(["codegen", "bf16[16,256]{1,0:T(8,128)(2,1)}", "--lang", "js", "--inverse"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("/**") and "function logical_index(p) {" in out
    assert "// " in out.splitlines()[-1] and "proved (exhaustive)" in out


# ---------------------------------------------------------------- the 2^53 decision's bound
def _values_of_every_part(e, env, count):
    """Each sub-expression's values, and each scaled term and running sum of every sum (what JS computes)."""
    from layout_algebra.codegen.expr import Bool, Ge, Or, Sum, to_sympy

    out = []
    if not isinstance(e, (Bool, Ge, Or)):
        out.append(np.broadcast_to(evaluate(to_sympy(e), env), (count,)))
    if isinstance(e, Sum):
        running = np.zeros(count, dtype=object)
        for a, c in e.terms:
            term = abs(c) * np.broadcast_to(evaluate(to_sympy(a), env), (count,)).astype(object)
            running = running + term
            out += [term, running]
    for child in e.children:
        out += _values_of_every_part(child, env, count)
    return out


@BATCH
@given(
    small_layout_shapes(max_slots=512),
    st.sampled_from(UNITS),
    st.sampled_from(("forward", "inverse", "padding")),
)
def test_the_largest_value_bound_holds_on_every_point(shape, unit, direction) -> None:
    from layout_algebra.codegen.generate import _bounds
    from layout_algebra.codegen.printers import largest_value

    m = layout_map(shape)
    g = generate_code(shape, "js", direction, unit, check=False)
    if direction == "forward":
        dims = tuple(int(d) for d in m.shape.dimensions)
        count = int(np.prod(dims, dtype=np.int64))
        grid = np.indices(dims, dtype=np.int64).reshape(len(dims), count)
        env = dict(zip(m.index_symbols, grid, strict=True))
    else:
        count = int(m.size_in(unit))
        env = {OFFSET_SYMBOL: np.arange(count, dtype=np.int64)}
    if count == 0:
        return
    bounds = _bounds(m, direction, unit)
    for e in g.expressions:
        bound = largest_value(e, bounds)
        assert bound is not None
        for values in _values_of_every_part(e, env, count):
            assert int(np.max(values)) <= bound, (str(m.shape), e)
