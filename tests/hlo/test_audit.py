"""``layout_algebra.hlo.audit``: sizes, buffer totals, movement verdicts, and the ``audit`` command."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.cli import run
from support.ground_truth import ground_truth_file, shipped_hlo_modules, shipped_hlo_text
from support.oracles import nested_linear_index

from layout_algebra import parse_shape, physical_size_in_bytes, size_report
from layout_algebra.hlo import (
    HloInstruction,
    HloModuleStream,
    HloParseError,
    audit_module,
    audit_stream,
    classify_movement,
    iter_computations,
    parse_module,
)
from layout_algebra.hlo.audit import computation_roles
from layout_algebra.model.shapes import ArrayShape, Layout, Tile, TupleShape

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tpu_module.hlo"
NATIVE_STARTS = {"all-gather-start", "all-reduce-start", "collective-permute-start", "copy-start"}
FORWARDING = {"bitcast", "get-tuple-element", "tuple", "while", "call", "conditional", "optimization-barrier"}


def reference_buffers(module):
    """The buffer rule of the audit's documentation, written out again independently."""
    program = {module.entry.name}
    stack = [module.entry]
    while stack:
        computation = stack.pop()
        for i in computation.instructions:
            op = i.opcode
            control = op in ("while", "conditional", "call", "async-start") or (
                op.endswith("-start") and op not in NATIVE_STARTS
            )
            if control:
                for name in i.called_computations:
                    if name not in program:
                        program.add(name)
                        stack.append(module.computation(name))
    for computation in module.computations:
        if computation.name not in program:
            continue
        for i in computation.instructions:
            if i.opcode in FORWARDING or i.opcode.endswith(("-done", "-update")):
                continue
            if i.opcode == "parameter" and not computation.is_entry:
                continue
            yield i


def leaves(shape):
    if isinstance(shape, TupleShape):
        for e in shape.elements:
            yield from leaves(e)
    elif isinstance(shape, ArrayShape):
        yield shape


@pytest.mark.parametrize("name", shipped_hlo_modules())
def test_totals_equal_the_sum_of_physical_sizes_of_the_buffers(name: str | None) -> None:
    module = parse_module(shipped_hlo_text(name))
    report = audit_module(module)
    expected: dict[int, int] = {}
    for instruction in reference_buffers(module):
        for leaf in leaves(instruction.shape):
            space = leaf.effective_layout.memory_space
            expected[space] = expected.get(space, 0) + physical_size_in_bytes(leaf)
    assert {s: t.physical_bytes for s, t in report.totals_by_memory_space.items()} == expected
    assert report.physical_bytes == sum(expected.values())
    assert len(report.buffers) == len(list(reference_buffers(module)))
    assert len(report.rows) == module.instruction_count


@pytest.mark.parametrize("name", shipped_hlo_modules())
def test_every_row_sums_its_leaves(name: str | None) -> None:
    report = audit_module(parse_module(shipped_hlo_text(name)))
    for row in report.rows:
        arrays = list(leaves(row.shape))
        assert row.logical_bytes == sum(size_report(a).logical_bytes for a in arrays)
        assert row.physical_bytes == sum(physical_size_in_bytes(a) for a in arrays)
        assert row.allocated_bytes == sum(size_report(a).first_tile_bytes for a in arrays)
        assert row.problems == ()  # every shipped layout passes XLA's validation


def test_the_example_module_by_hand() -> None:
    report = audit_module(parse_module(EXAMPLE.read_text(encoding="utf-8")))
    idx, idx_t = report.row("main.1", "idx"), report.row("main.1", "idx.t")
    assert (idx.logical_bytes, idx.physical_bytes) == (3 * 100 * 4, 4 * 128 * 4)  # 3 rows -> a (4,128) tile
    assert idx_t.physical_bytes == 104 * 128 * 4  # column-major: 100 rows -> 104, 3 lanes -> 128
    assert report.worst_padding(1)[0].name == "idx.t"
    assert [r.name for r in report.worst_padding(2, buffers_only=True)] == ["idx.t", "idx"]
    assert report.worst_padding(2)[1].name == "tuple.1"  # a tuple aliasing its leaves ranks too
    hbm = (
        256 * 1024 * 2
        + 1024 * 512 * 2
        + 512 * 4
        + 4 * 128 * 4
        + 256 * 512 * 4 * 2
        + 256 * 512 * 2
        + 104 * 128 * 4
    )
    assert report.totals_by_memory_space[0].physical_bytes == hbm
    assert report.totals_by_memory_space[1].physical_bytes == 1024 * 512 * 2
    assert report.totals_by_memory_space[1].arrays == 1
    verdicts = {r.name: r.movement.verdict for r in report.movements()}
    assert verdicts == {
        "w.vmem": "moves data",
        "transpose.1": "no data movement",
        "bitcast.1": "no data movement",  # f32[256,512] -> f32[2,128,512], whole (8,128) tiles
        "idx.t": "moves data",
    }
    assert not report.row("main.1", "tuple.1").is_buffer
    assert report.row("fused_bias_relu", "add.1").role == "fusion"


def test_roles_of_computations() -> None:
    module = parse_module(ground_truth_file("hlo/jax_scan_while.optimized.hlo").read_text(encoding="utf-8"))
    roles = computation_roles(module)
    assert roles["main.9"] == "entry"
    assert roles["while.10_computation"] == roles["region_0.5"] == roles["region_2.6"] == "control flow"
    assert roles["fused_computation"] == "fusion"
    assert roles["region_1.2"] == "applied"  # the reducer of a reduce inside a fusion
    report = audit_module(module)
    body_params = [r for r in report.rows if r.computation == "region_0.5" and r.opcode == "parameter"]
    assert body_params and not any(r.is_buffer for r in body_params)


def test_unsized_shapes_and_invalid_layouts_are_reported_not_fatal() -> None:
    module = parse_module(
        "HloModule m\nENTRY e {\n  p = f32[?,4] parameter(0)\n  q = f32[2,3]{0,0} parameter(1)\n"
        "  ROOT t = (f32[?,4], token[]) tuple(p, p)\n}"
    )
    report = audit_module(module)
    p, q = report.row("e", "p"), report.row("e", "q")
    assert p.physical_bytes is None and p.padding_ratio is None
    assert any("'?'" in problem for problem in p.problems)
    assert any("permutation" in problem for problem in q.problems)
    assert report.totals_by_memory_space[0].unsized == 2 and report.totals_by_memory_space[0].arrays == 2
    assert report.worst_padding() == []


def test_progress_is_reported_to_the_end() -> None:
    module = parse_module(EXAMPLE.read_text(encoding="utf-8"))
    calls = []
    audit_module(module, progress=lambda done, total: calls.append((done, total)))
    assert calls[-1] == (module.instruction_count, module.instruction_count)


def test_json_summary() -> None:
    report = audit_module(parse_module(EXAMPLE.read_text(encoding="utf-8")))
    record = json.loads(json.dumps(report.to_dict(top=3)))
    assert record["totals"]["physical_bytes"] == report.physical_bytes
    assert record["by_memory_space"]["S(1)"]["arrays"] == 1
    assert [r["name"] for r in record["rows"]] == [r.name for r in report.worst_padding(3)]
    assert len(report.to_dict()["rows"]) == len(report.rows)


# ------------------------------------------------------------------- movement
def _nested_linear_index(shape: ArrayShape, index: tuple[int, ...]) -> int:
    layout = shape.effective_layout
    return nested_linear_index(
        shape.dimensions, layout.minor_to_major, [t.dimensions for t in layout.tiles], index
    )


_TILES = [(), ((2,),), ((2, 2),), ((2, 4), (2, 1)), ((1, 2),)]


@st.composite
def transposes(draw):
    rank = draw(st.integers(1, 3))
    dims = tuple(draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    tiles = draw(st.sampled_from([t for t in _TILES if all(len(x) <= rank for x in t)]))
    m2m = tuple(draw(st.permutations(range(rank))))
    space = draw(st.sampled_from([0, 0, 1]))
    src = ArrayShape(
        parse_shape("f32[]").element_type,
        dims,
        layout=Layout(m2m, tuple(map(Tile, tiles)), memory_space=space),
    )
    perm = tuple(draw(st.permutations(range(rank))))
    out_dims = tuple(dims[p] for p in perm)
    if draw(st.booleans()):  # XLA's PermuteDimensions: the layout that keeps the physical order
        inverse = [perm.index(d) for d in range(rank)]
        out_m2m = tuple(inverse[d] for d in m2m)
    else:
        out_m2m = tuple(draw(st.permutations(range(rank))))
    out_tiles = (
        tiles
        if draw(st.booleans())
        else draw(st.sampled_from([t for t in _TILES if all(len(x) <= rank for x in t)]))
    )
    out_space = space if draw(st.booleans()) else draw(st.sampled_from([0, 1]))
    dst = ArrayShape(
        src.element_type,
        out_dims,
        layout=Layout(out_m2m, tuple(map(Tile, out_tiles)), memory_space=out_space),
    )
    opcode = draw(st.sampled_from(["transpose", "copy"]))
    if opcode == "copy":
        dst = ArrayShape(src.element_type, dims, layout=dst.layout if len(out_m2m) == rank else src.layout)
        perm = tuple(range(rank))
    return HloInstruction("t", dst, opcode, dimensions=perm if opcode == "transpose" else None), src, perm


@pytest.mark.slow
@settings(max_examples=300)
@given(transposes())
def test_movement_verdicts_are_sound(case) -> None:
    """A verdict other than "unknown" is checked against every element by enumeration."""
    instruction, src, perm = case
    dst = instruction.shape
    verdict = classify_movement(instruction, src)
    assert verdict.verdict in ("moves data", "no data movement", "unknown") and verdict.reason
    if verdict.verdict == "no data movement":
        assert src.layout.memory_space == dst.layout.memory_space
        assert size_report(src).first_tile_bytes == size_report(dst).first_tile_bytes
        for out_index in itertools.product(*(range(d) for d in dst.dimensions)):
            in_index = [0] * src.rank
            for d, p in enumerate(perm):
                in_index[p] = out_index[d]
            assert _nested_linear_index(dst, out_index) == _nested_linear_index(src, tuple(in_index))
    elif verdict.verdict == "moves data":
        keeps_every_element = all(
            _nested_linear_index(dst, out_index)
            == _nested_linear_index(src, tuple(out_index[perm.index(p)] for p in range(src.rank)))
            for out_index in itertools.product(*(range(d) for d in dst.dimensions))
        )
        assert (
            src.layout.memory_space != dst.layout.memory_space
            or size_report(src).first_tile_bytes != size_report(dst).first_tile_bytes
            or not keeps_every_element
        )


def test_movement_cases() -> None:
    s = parse_shape

    def verdict(result: str, opcode: str, operand: str | None, **kw) -> str:
        instruction = HloInstruction("x", s(result), opcode, **kw)
        return classify_movement(instruction, None if operand is None else s(operand)).verdict

    assert verdict("f32[8,128]{1,0:T(8,128)}", "copy", "f32[8,128]{1,0:T(8,128)}") == "no data movement"
    assert verdict("f32[8,128]{1,0:T(8,128)S(1)}", "copy", "f32[8,128]{1,0:T(8,128)}") == "moves data"
    assert verdict("f32[4,4]{1,0}", "transpose", "f32[4,4]{1,0}", dimensions=(1, 0)) == "moves data"
    assert verdict("f32[4,4]{1,0}", "transpose", "f32[4,4]{1,0}", dimensions=(0, 1)) == "no data movement"
    assert verdict("f32[3,100]{0,1:T(8,128)}", "copy", "f32[3,100]{1,0:T(4,128)}") == "moves data"
    assert verdict("f32[1024]{0:T(1024)}", "reshape", "f32[8,128]{1,0:T(8,128)}") == "no data movement"
    assert verdict("f32[4096]{0:T(1024)}", "reshape", "f32[16,256]{1,0:T(8,128)}") == "moves data"
    assert verdict("f32[8,128]{1,0}", "bitcast", None) == "unknown"
    # a bitcast may change the element type when the bits per element agree
    assert verdict("s32[8,128]{1,0}", "bitcast", "f32[8,128]{1,0}") == "no data movement"
    assert verdict("s32[8,128]{1,0}", "reshape", "f32[8,128]{1,0}") == "unknown"
    assert verdict("(f32[2])", "copy", "(f32[2])") == "unknown"
    reason = classify_movement(
        HloInstruction("x", s("f32[1024]{0:T(1024)}"), "reshape"), s("f32[8,128]{1,0:T(8,128)}")
    ).reason
    assert reason.startswith("proved: reshape: every element keeps its bit offset")
    with pytest.raises(ValueError, match="handles bitcast"):
        classify_movement(HloInstruction("x", s("f32[2]"), "add"), s("f32[2]"))


# ------------------------------------------------------------------------ CLI
def test_audit_prints_tables(capsys) -> None:
    code, out, err = run(capsys, "audit", str(EXAMPLE))
    assert code == 0 and err == ""
    assert out.startswith("module jit_dense_layer: 19 instructions, 9 buffers holding 9 arrays")
    for text in (
        "S(0) device memory",
        "S(1) fast memory",
        "worst padding first",
        "s32[3,100]{0,1:T(8,128)}",
        "moves data",
    ):
        assert text in out
    report = audit_module(parse_module(EXAMPLE.read_text(encoding="utf-8")))
    assert f"{report.physical_bytes:,}" in out


def test_audit_json_and_top(capsys) -> None:
    code, out, _ = run(capsys, "audit", str(EXAMPLE), "--json", "--top", "2")
    assert code == 0
    record = json.loads(out)
    assert len(record["rows"]) == 2 and record["rows"][0]["name"] == "idx.t"
    _, out, _ = run(capsys, "audit", str(EXAMPLE), "--top", "1")
    assert "(1 of 19 sized instructions)" in out


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "cannot read"),  # no such file
        (b"", "cannot parse HLO module at line 1, column 1: expected 'HloModule'"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe", "is not UTF-8 text"),
        (b"HloModule m\nENTRY e {\n  p f32[2] parameter(0)\n}\n", "line 3, column 5: expected '='"),
        (b"HloModule m\nENTRY e {\n  ROOT p = f32[2]{0:Q} parameter(0)\n", "line 3, column 21"),
        (b"HloModule m\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n", "never closed"),
    ],
    ids=["missing", "empty", "binary", "missing-equals", "bad-shape", "unterminated"],
)
def test_audit_bad_input_is_a_clear_error_with_status_2(capsys, tmp_path: Path, content, expected) -> None:
    path = tmp_path / "module.hlo"
    if content is not None:
        path.write_bytes(content)
    code, out, err = run(capsys, "audit", str(path))
    assert code == 2 and out == ""
    assert err.startswith("layout-algebra audit: error: ") and expected in err
    assert "Traceback" not in err
    if content is None or content.startswith(b"\x89"):
        assert err.count("\n") == 1  # one line


def test_audit_of_a_directory_is_an_error(capsys, tmp_path: Path) -> None:
    code, _, err = run(capsys, "audit", str(tmp_path))
    assert code == 2 and "cannot read" in err and err.count("\n") == 1


def test_long_modules_show_a_progress_bar_on_a_terminal(capsys, tmp_path: Path, monkeypatch) -> None:
    body = "\n".join(f"  p{i} = f32[8,128]{{1,0:T(8,128)}} parameter({i})" for i in range(5000))
    path = tmp_path / "long.hlo"
    path.write_text(f"HloModule long\nENTRY e {{\n{body}\n}}\n", encoding="utf-8")
    monkeypatch.setattr("sys.stderr.isatty", lambda: True)
    code, out, _ = run(capsys, "audit", str(path), "--top", "3")
    assert code == 0
    assert "module long: 5,000 instructions, 5,000 buffers" in out
    assert f"{5000 * 8 * 128 * 4:,}" in out


# ------------------------------------------------------- one meaning, at scale
@pytest.mark.parametrize("name", shipped_hlo_modules())
def test_movement_verdicts_are_the_bitcast_decision(name: str | None) -> None:
    """The audit's verdict and reason are those of layout_algebra.decide.bitcast for the same pair."""
    from layout_algebra.decide.bitcast import bitcast_is_valid, reshape_is_bitcast, transpose_is_bitcast

    module = parse_module(shipped_hlo_text(name))
    report = audit_module(module)
    for computation in module.computations:
        shapes = {i.name: i.shape for i in computation.instructions}
        for instruction in computation.instructions:
            row = report.row(computation.name, instruction.name)
            if row.movement is None or row.movement.bitcast is None:
                continue
            src = shapes[instruction.operands[0].name]
            if instruction.opcode == "bitcast":
                fresh = bitcast_is_valid(src, instruction.shape)
            elif instruction.opcode == "transpose":
                fresh = transpose_is_bitcast(src, instruction.shape, instruction.dimensions)
            else:
                fresh = reshape_is_bitcast(src, instruction.shape)
            assert (fresh.status, fresh.reason) == (row.movement.bitcast.status, row.movement.bitcast.reason)
            assert fresh.reason in row.movement.reason


def _repeated(text: str, copies: int) -> str:
    """``text``'s computations ``copies`` times, renamed; one ENTRY (the first copy's)."""
    import re

    header, _, body = text.partition("\n")
    while not header.lstrip().startswith("HloModule"):  # comment lines first; maybe indented
        if not body:
            raise ValueError("no 'HloModule' line")
        header, _, body = body.partition("\n")
    out = [header]
    for k in range(copies):
        renamed = re.sub(r"%([A-Za-z_][\w.\-]*)", rf"%\1.r{k}", body)
        if k:
            renamed = renamed.replace("ENTRY ", "")
        out.append(renamed)
    return "\n".join(out)


def test_memoised_audit_gives_the_verdicts_of_fresh_decisions() -> None:
    """Audit of a module repeated 4 times (memoised decisions, one pass) = the verdict of
    every movement instruction decided afresh, cache cleared."""
    from layout_algebra.decide import bitcast
    from layout_algebra.hlo import audit as audit_mod

    name = "03_tpu_multiply_reduce_fusion_isolated_bf16_5d.hlo"
    once = audit_module(parse_module(shipped_hlo_text(name)))
    module = parse_module(_repeated(shipped_hlo_text(name), 4))
    report = audit_module(module)
    assert len(report.rows) == 4 * len(once.rows)
    movements = [r.movement.verdict for r in report.movements()]
    assert movements == 4 * [r.movement.verdict for r in once.movements()]
    shapes = {(c.name, i.name): i for c in module.computations for i in c.instructions}
    for row in report.movements():
        instruction = shapes[(row.computation, row.name)]
        operand = shapes[(row.computation, instruction.operands[0].name)].shape
        audit_mod._classify.cache_clear()
        bitcast._decided.cache_clear()
        fresh = classify_movement(instruction, operand)
        if is_fused_bitcast_between_memories(row):  # the fusion's copy: read in its context
            assert fresh.status == "refuted" and "memory spaces" in fresh.reason
        else:
            assert fresh == row.movement


def test_symbolic_module_is_audited_not_a_traceback(capsys, tmp_path: Path) -> None:
    path = tmp_path / "sym.hlo"
    path.write_text(
        "HloModule sym\nENTRY main {\n  p = f32[N,128]{1,0:T(8,128)} parameter(0)\n"
        "  r = f32[N,2,64]{2,1,0} reshape(p)\n  ROOT c = f32[N,2,64]{2,1,0} copy(r)\n}\n",
        encoding="utf-8",
    )
    code, _, err = run(capsys, "audit", str(path))
    assert code == 0 and "Traceback" not in err
    report = audit_module(parse_module(path.read_text(encoding="utf-8")))
    assert report.row("main", "c").movement.verdict == "no data movement"
    assert report.row("main", "r").movement.verdict == "moves data"  # at N=7: 4,096 vs 3,584 bytes
    assert report.totals_by_memory_space[0].unsized == 3  # p, r, c: sizes are formulas in N


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("  p = f32[8]{0} parameter(0)\n  ROOT c = f32[8]{0} copy(q)\n", "operand 'q' is not an instruction"),
        ("  a = f32[8]{0} add(b, b)\n  ROOT b = f32[8]{0} add(a, a)\n", "depend on themselves: a -> b -> a"),
    ],
    ids=["undefined-operand", "cycle"],
)
def test_malformed_modules_exit_2(capsys, tmp_path: Path, body, expected) -> None:
    path = tmp_path / "bad.hlo"
    path.write_text(f"HloModule bad\nENTRY main {{\n{body}}}\n", encoding="utf-8")
    code, out, err = run(capsys, "audit", str(path))
    assert code == 2 and out == "" and expected in err and "Traceback" not in err


def test_strict_fails_on_problems_and_all_lists_every_movement(capsys, tmp_path: Path) -> None:
    path = tmp_path / "m.hlo"
    path.write_text(
        "HloModule m\nENTRY main {\n  p = f32[8,128]{1,0} parameter(0)\n"
        "  b = f32[8,128]{1,0:S(1)} bitcast(p)\n"
        "  t = f32[128,8]{0,1} transpose(p), dimensions={1,0}\n"
        "  ROOT r = f32[1024]{0} reshape(p)\n}\n",
        encoding="utf-8",
    )
    code, out, _ = run(capsys, "audit", str(path), "--top", "1")
    assert code == 0 and "(1 of 3 shown; --all lists every one)" in out
    code, out, _ = run(capsys, "audit", str(path), "--top", "1", "--all", "--strict")
    assert code == 1 and "(3 of 3 shown)" in out
    assert "invalid bitcast: different memory spaces S(0) → S(1): a copy between memories" in out
    code, _, _ = run(capsys, "audit", str(EXAMPLE), "--strict")
    assert code == 0


def test_memory_space_counts_add_up_to_the_total() -> None:
    module = parse_module(
        "HloModule m\nENTRY main {\n  p = f32[8]{0} parameter(0)\n  q = f32[8]{0:S(1)} parameter(1)\n"
        '  ROOT t = (f32[8]{0}, f32[8]{0:S(1)}) custom-call(p, q), custom_call_target="x"\n}\n'
    )
    report = audit_module(module)
    assert {s: t.arrays for s, t in report.totals_by_memory_space.items()} == {0: 2, 1: 2}
    assert report.buffer_arrays == 4 and len(report.buffers) == 3
    from layout_algebra.hlo.report import render_audit

    text = render_audit(report, width=200)
    total_line = next(line for line in text.splitlines() if "total" in line)
    assert " 4 " in total_line


def test_layouts_wrap_never_cut() -> None:
    from layout_algebra.hlo.report import render_audit

    shape = "bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)S(1)}"
    module = parse_module(f"HloModule m\nENTRY main {{\n  ROOT p = {shape} parameter(0)\n}}\n")
    text = render_audit(audit_module(module), width=80)
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "…" not in text
    lines = text.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("worst padding"))
    column = [line.split("│")[3].strip() for line in lines[start:] if line.startswith("│")]
    assert "".join(column) == shape  # the shape column, read top to bottom: the whole layout


def test_verdicts_are_those_of_the_audit_before_memoisation() -> None:
    """Recorded from the previous audit (tests/data/audit_movement_verdicts.json): the
    shipped modules, and one repeated 4 times (memoised, one pass), keep every verdict."""
    recorded = json.loads((Path(__file__).parents[1] / "data" / "audit_movement_verdicts.json").read_text())[
        "modules"
    ]
    for name, expected in recorded.items():
        report = audit_module(parse_module(shipped_hlo_text(name)))
        # one change since: a bitcast between device memories inside a fusion, recorded as "no
        # data movement" although called not valid, is the fusion's copy between memories
        changed = {r.name for r in report.movements() if is_fused_bitcast_between_memories(r)}
        expected = [[n, "moves data" if n in changed else v] for n, v in expected]
        assert [[r.name, r.movement.verdict] for r in report.movements()] == expected, name
    name = "03_tpu_multiply_reduce_fusion_isolated_bf16_5d.hlo"
    report = audit_module(parse_module(_repeated(shipped_hlo_text(name), 4)))
    once = audit_module(parse_module(shipped_hlo_text(name)))
    changed = {r.name for r in once.movements() if is_fused_bitcast_between_memories(r)}
    expected = ["moves data" if n in changed else v for n, v in recorded[name]]
    assert [r.movement.verdict for r in report.movements()] == 4 * expected


# ------------------------------------------------------------- streaming (issue 18)
def _streamed_cases() -> list:
    """Every shipped module and the largest one repeated to ~5,000 instructions."""
    return [*shipped_hlo_modules(), pytest.param("repeated", id="03-repeated-34x")]


def _case_text(name: str | None) -> str:
    if name == "repeated":
        return _repeated(shipped_hlo_text("03_tpu_multiply_reduce_fusion_isolated_bf16_5d.hlo"), 34)
    return shipped_hlo_text(name)


@pytest.mark.parametrize("name", _streamed_cases())
def test_stream_yields_the_computations_of_parse_module(name: str | None) -> None:
    text = _case_text(name)
    module = parse_module(text)
    stream = HloModuleStream(text)
    assert (stream.name, stream.attributes, stream.sections, stream.entry_computation_layout) == (
        module.name,
        module.attributes,
        module.sections,
        module.entry_computation_layout,
    )
    assert tuple(stream) == module.computations
    assert text[stream.position :].strip() == ""  # read to the end


@pytest.mark.parametrize("name", _streamed_cases())
def test_streaming_audit_equals_the_full_audit(name: str | None) -> None:
    """The same rows (verdicts, reasons, sizes, roles, problems), totals and errors."""
    text = _case_text(name)
    full = audit_module(parse_module(text))
    streamed = audit_stream(HloModuleStream(text))
    assert streamed.rows == full.rows and len(streamed.rows) == len(full.rows) > 0
    assert streamed.totals_by_memory_space == full.totals_by_memory_space
    assert streamed.errors == full.errors and streamed.module == full.module
    assert streamed.to_dict() == full.to_dict()
    if name == "repeated":
        assert len(full.rows) >= 5000 and len(full.movements()) >= 34 * 27


def test_stream_keeps_no_computation_it_has_handed_on() -> None:
    """Bounded memory: once the caller lets a computation go, nothing keeps it (the stream
    holds at most the one it has read ahead)."""
    import gc
    import weakref

    text = _case_text("repeated")
    refs = []
    for computation in HloModuleStream(text):
        refs.append(weakref.ref(computation))
        del computation
    gc.collect()
    assert len(refs) == 34 * 8 and all(ref() is None for ref in refs)


def test_streaming_audit_of_a_malformed_module_lists_its_errors() -> None:
    text = "HloModule m\nf {\n  ROOT c = f32[2]{0} copy(q)\n}\nENTRY e {\n  ROOT a = f32[2]{0} negate(a)\n}"
    streamed = audit_stream(HloModuleStream(text))
    assert streamed.errors == audit_module(parse_module(text)).errors
    assert len(streamed.errors) == 2 and "'q'" in streamed.errors[0] and "a -> a" in streamed.errors[1]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "HloModule m\nENTRY a {\n  ROOT p = f32[] parameter(0)\n}\nENTRY b {\n  ROOT q = f32[] parameter(0)\n}",
            "a second ENTRY computation ('b' after 'a')",
        ),
        (
            "HloModule m\na {\n  ROOT p = f32[] parameter(0)\n}\na {\n  ROOT q = f32[] parameter(0)\n}",
            "computation 'a' is defined twice",
        ),
        ("HloModule m\n", "expected a computation"),
        (
            "HloModule m\na {\n  ROOT p = f32[] parameter(0)\n}\nb {\n  ROOT q = f32[2]{0:Q} parameter(0)\n}",
            "line 6, column 21",
        ),
    ],
    ids=["two-entries", "duplicate", "empty", "bad-shape-later"],
)
def test_stream_errors_are_those_of_parse_module(text: str, expected: str) -> None:
    with pytest.raises(HloParseError) as full:
        parse_module(text)
    with pytest.raises(HloParseError) as streamed:
        list(HloModuleStream(text))
    assert str(streamed.value) == str(full.value) and expected in str(full.value)


def test_a_stream_is_read_once() -> None:
    stream = HloModuleStream("HloModule m\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}")
    assert [c.name for c in iter_computations(stream.text)] == [c.name for c in stream] == ["e"]
    with pytest.raises(RuntimeError, match="only once"):
        list(stream)


@pytest.mark.parametrize("name", _streamed_cases())
def test_worst_padding_top_n_is_the_head_of_the_full_order(name: str | None) -> None:
    """``worst_padding(top)`` picks the first rows without sorting them all: the same rows
    (ties included: the repeated module has 34 rows of each padding)."""
    report = audit_module(parse_module(_case_text(name)))
    everything = report.worst_padding()
    for top in (0, 1, 5, 25, len(everything) - 1, len(everything), len(everything) + 3):
        assert report.worst_padding(top) == everything[:top]
    assert report.worst_padding(7, buffers_only=True) == report.worst_padding(buffers_only=True)[:7]


def test_progress_bar_goes_to_stderr_not_into_json(capsys, tmp_path: Path, monkeypatch) -> None:
    import layout_algebra.cli.audit as audit_command

    text = _case_text("repeated")
    path = tmp_path / "big.hlo"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setattr("sys.stderr.isatty", lambda: True)
    monkeypatch.setattr(audit_command, "PROGRESS_FROM", 1000)
    calls = []
    import layout_algebra.hlo as hlo  # run() imports audit_stream from here when it runs

    original = hlo.audit_stream

    def counting(stream, progress=None):
        calls.append(progress)
        return original(stream, progress=progress)

    monkeypatch.setattr(hlo, "audit_stream", counting)
    code, out, _ = run(capsys, "audit", str(path), "--json", "--top", "2")
    assert code == 0 and calls and calls[0] is not None  # a bar was asked for
    record = json.loads(out)  # stdout is the JSON alone
    assert record["instructions"] == parse_module(text).instruction_count


@pytest.mark.parametrize("order", list(itertools.permutations(range(4))))
def test_cycles_are_found_in_any_order_of_instructions(order) -> None:
    """The audit skips the cycle search when every operand stands before its user; listed in
    any order, a module with a cycle still has it reported, and one without has none."""
    acyclic = [
        "p = f32[2]{0} parameter(0)",
        "a = f32[2]{0} negate(p)",
        "b = f32[2]{0} add(a, p)",
        "c = f32[2]{0} copy(b)",
    ]
    cyclic = [
        "p = f32[2]{0} parameter(0)",
        "a = f32[2]{0} negate(c)",
        "b = f32[2]{0} add(a, p)",
        "c = f32[2]{0} copy(b)",
    ]
    for lines, has_cycle in ((acyclic, False), (cyclic, True)):
        body = "\n".join(f"  {lines[k]}" for k in order)
        errors = audit_module(parse_module(f"HloModule m\nENTRY e {{\n{body}\n}}")).errors
        assert bool(errors) == has_cycle, (order, errors)
        if has_cycle:
            assert len(errors) == 1 and "depend on themselves" in errors[0]
            assert set(errors[0].split(": ", 2)[-1].split(" -> ")) == {"a", "b", "c"}


# ------------------------------------------- bitcasts between memories: movement or invalid
def is_fused_bitcast_between_memories(row) -> bool:
    """A bitcast inside a fusion whose operand and result live in different device memories."""
    return (
        row.opcode == "bitcast"
        and row.role not in ("entry", "control flow")
        and row.movement.reason.startswith("a bitcast between memory spaces inside a fusion")
    )


def fused_bitcast(space_in: int, space_out: int) -> str:
    """A fusion whose body bitcasts its parameter from ``S(space_in)`` to ``S(space_out)``."""

    def shape(space: int) -> str:
        return f"f32[8,128]{{1,0:T(8,128){f'S({space})' if space else ''}}}"

    return f"""HloModule m
%fused (x: f32[8,128]) -> f32[8,128] {{
  %x = {shape(space_in)} parameter(0)
  ROOT %b = {shape(space_out)} bitcast(%x)
}}
ENTRY e {{
  p = {shape(space_in)} parameter(0)
  ROOT f = {shape(space_out)} fusion(p), kind=kLoop, calls=%fused
}}
"""


def test_a_fused_bitcast_between_device_memories_is_data_movement_not_invalid() -> None:
    # XLA:TPU's "bitcast fusion": the fusion copies the bytes into the other memory
    report = audit_module(parse_module(fused_bitcast(1, 0)))
    row = report.row("fused", "b")
    assert row.movement.verdict == "moves data" and "not valid" not in row.movement.reason
    assert not row.problems and not report.has_problems


def test_a_fused_bitcast_in_or_out_of_host_memory_is_invalid_and_fails_strict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = fused_bitcast(0, 5)
    report = audit_module(parse_module(text))
    row = report.row("fused", "b")
    assert any("invalid bitcast" in p and "S(5)" in p for p in row.problems)
    assert report.has_problems
    path = tmp_path / "m.hlo"
    path.write_text(text)
    assert run(capsys, "audit", str(path), "--strict")[0] == 1


@pytest.mark.parametrize("name", shipped_hlo_modules())
def test_what_the_audit_calls_not_valid_is_a_problem(name) -> None:
    """A row is never both "no data movement" and "not valid" without a problem: --strict fails on it."""
    report = audit_module(parse_module(shipped_hlo_text(name)))
    for row in report.rows:
        if row.movement is not None and "not valid" in row.movement.reason:
            assert any(p.startswith("invalid bitcast") for p in row.problems), (row.computation, row.name)
            assert report.has_problems
