"""``layout_algebra.hlo.parse_module`` on real dumps, on every construct they use, and on bad input."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.ground_truth import GROUND_TRUTH, ground_truth_file, shipped_hlo_modules, shipped_hlo_text

from layout_algebra import parse_shape
from layout_algebra.hlo import HloParseError, PaddingDimension, SliceDimension, parse_module
from layout_algebra.hlo.parser import _parse

#: Computation and instruction counts of XLA's own parser (jaxlib 0.10.2) on the shipped
#: TPU modules, as given in issue 8.
XLA_COUNTS = {
    "01": (3, 20),
    "02": (11, 143),
    "03": (8, 148),
    "04": (11, 66),
    "05": (5, 24),
    "06": (4, 46),
    "07": (3, 38),
    "08": (1, 2),
    "09": (5, 17),
    "10": (3, 16),
    "11": (3, 26),
    "12": (1, 12),
}


def hlo_file(prefix: str) -> Path:
    """The shipped module ``hlo/<prefix>_*.hlo``; fails (never skips) if it is missing."""
    ground_truth_file("README.md")
    matches = sorted((GROUND_TRUTH / "hlo").glob(f"{prefix}*.hlo"))
    assert len(matches) == 1, f"expected one module hlo/{prefix}*.hlo, found {[m.name for m in matches]}"
    return ground_truth_file(f"hlo/{matches[0].name}")


# ------------------------------------------------------------------ real modules
@pytest.mark.parametrize("prefix", sorted(XLA_COUNTS))
def test_counts_equal_xla_parser(prefix: str) -> None:
    module = parse_module(hlo_file(prefix + "_").read_text(encoding="utf-8"))
    assert (len(module.computations), module.instruction_count) == XLA_COUNTS[prefix]
    assert module.entry in module.computations and module.entry.is_entry
    assert sum(c.is_entry for c in module.computations) == 1


@pytest.mark.parametrize("name", shipped_hlo_modules())
def test_every_shipped_module_parses_and_counts_match_its_text(name: str | None) -> None:
    text = shipped_hlo_text(name)
    module = parse_module(text)
    if name.startswith("jax_"):
        # XLA:CPU dumps put every instruction on its own line and every computation header
        # on one line: an independent count from the text itself.
        instruction_lines = re.findall(r"^\s*(?:ROOT\s+)?%?[\w.\-]+ = ", text, re.M)
        header_lines = re.findall(r"^(?:ENTRY )?%[\w.\-]+ .*\{$", text, re.M)
        assert module.instruction_count == len(instruction_lines)
        assert len(module.computations) == len(header_lines)
        assert set(module.sections) == {"FileNames", "FunctionNames", "FileLocations", "StackFrames"}
    for computation in module.computations:
        assert sum(i.is_root for i in computation.instructions) <= 1
        names = [i.name for i in computation.instructions]
        assert len(names) == len(set(names))


@pytest.mark.parametrize("name", shipped_hlo_modules())
def test_every_shape_round_trips(name: str | None) -> None:
    _, recorded = _parse(shipped_hlo_text(name), record_shapes=True)
    assert recorded
    for source, shape in recorded:
        assert parse_shape(str(shape)) == shape
        assert shape == parse_shape(source)
        if not re.search(r"\](?!\{)", source):  # every array written with its layout: XLA printed it
            assert str(shape) == re.sub(r"\s*\n\s*", " ", source)


def test_entry_computation_layout_and_header_attributes() -> None:
    module = parse_module(hlo_file("12_").read_text(encoding="utf-8"))
    layout = module.entry_computation_layout
    assert layout is not None
    assert [str(s) for s in layout.parameter_shapes] == [
        "bf16[1024,512]{1,0:T(8,128)(2,1)}",
        "bf16[2,512,4096]{2,1,0:T(8,128)(2,1)}",
        "s32[3]{0:T(128)}",
    ]
    assert str(layout.result_shape) == "bf16[1024,512]{1,0:T(8,128)(2,1)}"
    assert module.attributes["num_partitions"] == "8"
    assert module.attributes["allow_spmd_sharding_propagation_to_output"] == "{true}"
    # the typed signature of the entry computation, without layouts
    assert module.entry.parameters[0] == ("param.1", parse_shape("bf16[1024,512]"))
    # nested JSON braces kept whole, as raw text
    custom = module.entry.instruction("make_group_metadata.1")
    assert custom.attributes["backend_config"].startswith('{"custom_call_config": {')
    assert custom.attributes["backend_config"].endswith("]}}")
    assert custom.attributes["custom_call_target"] == '"tpu_custom_call"'
    # an operand list with an /*index=5*/ comment
    matmul = module.entry.instruction("ragged_latency_optimized_reduce_scatter_out_feature_matmul.1")
    assert matmul.operand_names[5] == "param.1" and len(matmul.operands) == 7


def test_tuple_result_with_index_comments_in_the_entry_layout() -> None:
    module = parse_module(hlo_file("02_").read_text(encoding="utf-8"))
    result = module.entry_computation_layout.result_shape
    assert len(result.elements) == 13
    assert str(result.elements[5]) == "u32[]{:T(128)}"


def test_typed_operands_keep_their_shapes_and_no_entry_means_the_last_computation() -> None:
    module = parse_module(hlo_file("04_").read_text(encoding="utf-8"))
    assert module.entry is module.computations[-1] and module.entry.name == "fused_computation.112"
    ds = module.computation("fused_computation.1793").instruction("dynamic-slice.1806")
    assert ds.operands[0].name == "param_0.4944"
    assert ds.operands[0].shape == parse_shape("s32[16]{0:T(128)}")
    assert ds.attributes["dynamic_slice_sizes"] == "{1}"


def test_instructions_wrapped_over_lines_and_untyped_computations() -> None:
    module = parse_module(hlo_file("05_").read_text(encoding="utf-8"))
    assert module.entry.name == "entry"
    assert module.computation("fused_computation.0").parameters is None  # untyped header "name {"
    sliced = module.computation("fused_computation.0").root
    assert sliced.opcode == "slice" and sliced.slice == (SliceDimension(3072, 4096), SliceDimension(0, 9216))
    conv = module.computation("fused_computation").instruction("convolution")
    assert str(conv.shape) == "bf16[1024,6144]{1,0:T(8,128)(2,1)S(1)}"
    assert conv.operand_names == ("fusion1", "fusion2")
    reduce = module.computation("fused_computation").instruction("all-reduce")
    assert reduce.to_apply == "add" and reduce.called_computations == ("add",)


def test_parsed_attributes_of_layout_analysis() -> None:
    module = parse_module(hlo_file("02_").read_text(encoding="utf-8"))
    pad = module.computation("fused_computation.68.clone.clone.clone").instruction("pad.3783")
    assert pad.padding == (PaddingDimension(0, 0),) * 2 + (PaddingDimension(0, 1), PaddingDimension(0, 0))
    fusion = module.computation("fused_computation.71.clone").instruction("fusion.4288")
    assert fusion.calls == ("fused_computation.70.clone.clone.clone",)
    assert fusion.attributes["kind"] == "kLoop"
    whiles = [i for _, i in module.instructions() if i.opcode == "while"]
    assert whiles and all(len(w.called_computations) == 2 for w in whiles)
    gte = [i for _, i in module.instructions() if i.opcode == "get-tuple-element"]
    assert gte and all(isinstance(i.index, int) for i in gte)
    bcast = module.computation("fused_computation.68.clone.clone.clone").instruction("constant.26622")
    assert bcast.literal == "0" and bcast.operands == ()


def test_async_shorthand_gets_its_wrapped_computation_as_in_xla() -> None:
    module = parse_module(hlo_file("09_").read_text(encoding="utf-8"))
    start = module.entry.instruction("call-start.1")
    wrapper = module.computation(start.calls[-1])
    assert [i.opcode for i in wrapper.instructions] == ["parameter", "call"]
    assert wrapper.root.to_apply == "called_computation"
    assert wrapper.instructions[0].shape == parse_shape("s32[<=4096]{0:T(8)M(1024)}")
    assert "async_execution_thread" not in wrapper.root.attributes


def test_stack_frame_sections_and_metadata_kept_raw() -> None:
    module = parse_module(ground_truth_file("hlo/jax_bf16_matmul.optimized.hlo").read_text(encoding="utf-8"))
    assert module.sections["FileNames"] == ((1, '"oracle/gen_cpu_programs.py"'),)
    assert module.sections["StackFrames"][0] == (1, "{file_location_id=1 parent_frame_id=1}")
    dot = module.computation("fused_computation").root
    assert dot.metadata == '{op_name="jit(bf16_matmul)/dot_general" stack_frame_id=2}'
    assert dot.attributes["lhs_contracting_dims"] == "{1}"


def test_attribute_values_with_spaces_parse_like_printed_ones() -> None:
    from layout_algebra.hlo.attributes import parse_int_list, parse_padding

    assert parse_int_list("{ 1 , 0 }") == parse_int_list("{1,0}") == (1, 0)
    assert parse_padding("0_1 x 2_3_1") == parse_padding("0_1x2_3_1")
    assert parse_padding("-1_-2") == (PaddingDimension(-1, -2),)


def test_parameter_numbers_constants_and_roots() -> None:
    module = parse_module(
        "HloModule m\nENTRY e {\n  p1 = f32[] parameter(1)\n  p0 = f32[] parameter(0)\n"
        "  c = f32[2]{0} constant({1, 2})\n  s = (f32[], s32[]) constant((1, 2))\n"
        "  ROOT a = f32[] add(p0, p1)\n  t = token[] after-all()\n}"
    )
    e = module.entry
    assert [i.parameter_number for i in e.instructions[:2]] == [1, 0]
    assert e.instruction("c").literal == "{1, 2}"
    assert e.instruction("s").literal == "(1, 2)"
    assert e.root.name == "a"  # ROOT need not be last
    assert e.instruction("t").operands == ()
    assert (
        parse_module(
            "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  b = f32[] negate(a)\n}"
        ).entry.root.name
        == "b"
    )


def test_strings_with_escapes_and_braces_in_attributes() -> None:
    module = parse_module(
        "HloModule m\nENTRY e {\n"
        '  p = f32[2]{0} parameter(0), metadata={op_name="a \\"}{ b" source_file="x//y"}\n'
        '  ROOT c = f32[2]{0} custom-call(p), custom_call_target="t", backend_config="{\\"k\\": 1}"\n}'
    )
    assert module.entry.instruction("p").metadata == '{op_name="a \\"}{ b" source_file="x//y"}'
    assert module.entry.root.attributes["backend_config"] == '"{\\"k\\": 1}"'


# ------------------------------------------------------- whitespace and wrapping
# A module with a marker at token boundaries: "~" may become nothing, "@" must become
# some whitespace or a comment. Raw attribute values are left alone.
_TEMPLATE = (
    "~HloModule@wrap~,~is_scheduled~=~true~\n"
    "%fused~(~a~:~f32[8,128]~,~b~:~f32[]~)~->~f32[8,128]~{"
    "~%a~=~f32[~8~,~128~]{~1~,~0~:T(8,128)}@parameter~(~0~)"
    "~%b~=~f32[]@parameter~(~1~)"
    "~%bb~=~f32[8,128]{1,0:T(8,128)}@broadcast~(~f32[]@%b~)~,~dimensions~=~{}"
    "~ROOT@%m~=~f32[8,128]{1,0:T(8,128)}@multiply~(~%a~,~%bb~)~}"
    "~ENTRY@%main~{"
    "~%x~=~(~f32[8,128]{1,0:T(8,128)}~,~s32[]~)@parameter(0)"
    "~%y~=~f32[8,128]{1,0:T(8,128)}@get-tuple-element~(~%x~)~,~index~=~0"
    "~%s~=~f32[]@constant~(2)"
    "~%f~=~f32[8,128]{1,0:T(8,128)S(1)}@fusion~(~%y~,~%s~)~,~kind~=~kLoop~,~calls~=~%fused"
    '~,~metadata~=~{op_name="f" source_line=3}'
    "~ROOT@%t~=~f32[128,8]{0,1:T(8,128)}@transpose(f32[8,128]{1,0:T(8,128)S(1)}@%f)~,~dimensions~=~{1,0}"
    "~}~"
)
_GAPS = st.sampled_from([" ", "\n", "\n    ", "\t", " /* c */ ", "/*index=5*/", " // note\n", "\n\n"])


_PARTS = re.split(r"([~@])", _TEMPLATE)
_OPTIONAL, _REQUIRED = _PARTS.count("~"), _PARTS.count("@")


@pytest.mark.slow
@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.one_of(st.just(""), _GAPS), min_size=_OPTIONAL, max_size=_OPTIONAL),
    st.lists(_GAPS, min_size=_REQUIRED, max_size=_REQUIRED),
)
def test_whitespace_comments_and_line_wrapping_do_not_change_the_module(
    optional: list[str], required: list[str]
) -> None:
    plain = parse_module(_TEMPLATE.replace("~", "").replace("@", " "))
    gaps = {"~": iter(optional), "@": iter(required)}
    text = "".join(next(gaps[p]) if p in gaps else p for p in _PARTS)
    assert parse_module(text) == plain


def test_the_template_itself_parses_as_intended() -> None:
    m = parse_module(_TEMPLATE.replace("~", "").replace("@", " "))
    assert [c.name for c in m.computations] == ["fused", "main"]
    assert m.entry.root.dimensions == (1, 0)
    assert m.entry.instruction("f").calls == ("fused",)
    assert m.computation("fused").parameters[1] == ("b", parse_shape("f32[]"))


# ----------------------------------------------------------------- bad input
def _error(text: str) -> HloParseError:
    with pytest.raises(HloParseError) as info:
        parse_module(text)
    err = info.value
    rendered = str(err).splitlines()
    assert len(rendered) == 3
    assert rendered[0].startswith(f"cannot parse HLO module at line {err.line}, column {err.column}: ")
    assert rendered[2].strip() == "^"
    if "..." not in rendered[1]:  # not a window of a very long line: the whole line, caret under the fault
        shown = "".join(c if c.isprintable() else " " for c in err.source_line)
        assert rendered[1] == "  " + shown
        assert len(rendered[2]) == err.column + 2
    return err


def test_empty_text() -> None:
    err = _error("")
    assert (err.line, err.column) == (1, 1) and "expected 'HloModule'" in err.reason
    assert "expected 'HloModule'" in _error("  // only a comment\n").reason


def test_binary_junk() -> None:
    err = _error("\x00\x01\x02\xff\xfe garbage")
    assert "expected 'HloModule'" in err.reason


def test_missing_equals() -> None:
    err = _error("HloModule m\nENTRY e {\n  p f32[2] parameter(0)\n}")
    assert (err.line, err.column) == (3, 5)
    assert err.reason == "expected '=' after the instruction name 'p', found 'f32'"


def test_unterminated_brace() -> None:
    err = _error("HloModule m\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n")
    assert "computation 'e' (its '{' is at line 2, column 9) is never closed" in err.reason
    err = _error("HloModule m\nENTRY e {\n  ROOT p = f32[2] parameter(0), sharding={maximal device=0\n}")
    assert "never closed" in err.reason


def test_bad_shape_inside_is_reported_where_it_stands() -> None:
    err = _error(
        "HloModule m\n\nENTRY e {\n  p = f32[2]{0} parameter(0)\n  ROOT q = f32[2]{0:T(8,128)Q(1)} negate(p)\n}"
    )
    assert (err.line, err.column) == (5, 29)
    assert "unknown layout attribute 'Q'" in err.reason
    err = _error("HloModule m\nENTRY e {\n  ROOT p = f33[2] parameter(0)\n}")
    assert (err.line, err.column) == (3, 12) and "f32" in err.reason


def test_mismatched_brackets_and_unterminated_strings_and_comments() -> None:
    err = _error("HloModule m\nENTRY e {\n  ROOT t = (f32[2], f32[2] tuple(a, b)\n}")
    assert "'}' closes the '(' opened at line 3, column 12" in err.reason
    assert (
        "unterminated string"
        in _error('HloModule m\nENTRY e {\n  ROOT p = f32[] parameter(0), a="x\n}').reason
    )
    assert (
        "unterminated comment"
        in _error("HloModule m\nENTRY e {\n  ROOT p = f32[] parameter(0) /* x\n}").reason
    )


def test_bad_attribute_values_point_into_the_value() -> None:
    err = _error(
        "HloModule m\nENTRY e {\n  p = f32[2,3] parameter(0)\n  ROOT t = f32[3,2] transpose(p), dimensions={1,x}\n}"
    )
    assert (err.line, err.column) == (4, 49) and "in attribute 'dimensions'" in err.reason
    err = _error(
        "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT s = f32[1] slice(p), slice={[0:x]}\n}"
    )
    assert "in attribute 'slice'" in err.reason


def test_structural_errors() -> None:
    assert "has no instructions" in _error("HloModule m\nENTRY e {\n}").reason
    assert "expected a computation" in _error("HloModule m, is_scheduled=true\n").reason
    assert (
        "defined twice"
        in _error("HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  a = f32[] parameter(1)\n}").reason
    )
    assert (
        "a second ROOT"
        in _error(
            "HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(0)\n  ROOT b = f32[] parameter(1)\n}"
        ).reason
    )
    assert (
        "a second ENTRY"
        in _error(
            "HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(0)\n}\nENTRY f {\n  ROOT a = f32[] parameter(0)\n}"
        ).reason
    )
    assert "expected an opcode" in _error("HloModule m\nENTRY e {\n  ROOT a = f32[] (0)\n}").reason
    assert (
        "expected a parameter number"
        in _error("HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(x)\n}").reason
    )
    assert (
        "is not defined before it"
        in _error(
            "HloModule m\nENTRY e {\n  ROOT s = ((f32[]), f32[], u32[]) call-start(x), to_apply=f\n}"
        ).reason
    )


def test_long_lines_are_shown_as_a_window_around_the_fault() -> None:
    long_name = "a" * 400
    err = _error(f"HloModule m\nENTRY e {{\n  ROOT {long_name} = f32[] parameter(0) ?\n}}")
    line = str(err).splitlines()[1]
    assert len(line) < 160 and "..." in line


def test_parse_module_rejects_non_text() -> None:
    with pytest.raises(TypeError):
        parse_module(b"HloModule m")  # type: ignore[arg-type]


# ------------------------------------------- the one-match reader agrees with the careful one
def _by_parts(text: str, monkeypatch):
    """``parse_module`` with the one-match fast paths turned off (every instruction,
    computation header, attribute, entry layout and section entry piece by piece)."""
    from layout_algebra.hlo import parser, parser_scanner

    assert set(parser_scanner.FAST_PATHS) >= {"FLAT_INSTRUCTION", "SIGNATURE", "FLAT_ATTRIBUTE"}
    with monkeypatch.context() as patch:
        for name in parser_scanner.FAST_PATHS:
            for module in (parser, parser_scanner):  # wherever the pattern is read
                if hasattr(module, name):
                    patch.setattr(module, name, re.compile(r"(?!)"))
        return _outcome(text)


def _outcome(text: str):
    """The parsed module, or the error message: what a caller of ``parse_module`` sees."""
    try:
        return parse_module(text)
    except HloParseError as err:
        return str(err)


def test_the_fast_reader_takes_most_instructions_of_real_dumps() -> None:
    from layout_algebra.hlo.parser_scanner import FLAT_INSTRUCTION

    lines = [
        line.strip()
        for path in sorted((GROUND_TRUTH / "hlo").glob("*.hlo"))
        for line in ground_truth_file(f"hlo/{path.name}").read_text().splitlines()
        if re.match(r"\s*(ROOT\s+)?%?[\w.\-]+\s*=\s*[a-z]", line)
    ]
    taken = sum(1 for line in lines if (m := FLAT_INSTRUCTION.match(line)) and m.end() == len(line))
    assert len(lines) > 500 and taken / len(lines) > 0.8


@pytest.mark.parametrize("path", sorted((GROUND_TRUTH / "hlo").glob("*.hlo")), ids=lambda p: p.name[:12])
def test_the_fast_reader_gives_the_same_module_as_the_careful_one(path, monkeypatch) -> None:
    text = ground_truth_file(f"hlo/{path.name}").read_text()
    fast = _outcome(text)
    assert not isinstance(fast, str), fast
    assert fast == _by_parts(text, monkeypatch)


@pytest.mark.parametrize(
    "header",
    [
        "(a: f32[2]{0}, b: s32[]) -> f32[2]{0}",
        "(%a.1: f32[2], %b: bf16[3,4]{0,1:T(8,128)(2,1)}) -> (f32[2], s32[])",
        "(a: f32[2] {0}) -> f32[2]",  # a layout after a gap: read piece by piece
        "(a: f32[2]) -> f32[2] {0}",
        "(a: f32[2]) -> f32[2]{1,0:P(s32[2]{0})}",  # nested braces in the layout
        "(a: f32[2]{1,0:P(s32[2]{0})}) -> f32[2]",
        "() -> f32[]",
        "( a : f32[2] ,b:f32[2] ) ->f32[2]",
        "(a: f32[2] /* c */) -> f32[2]",
        "(a: f32[2]{0:Q}) -> f32[2]",  # a bad shape: the same error
        "(a f32[2]) -> f32[2]",
        "(a: f32[2]) f32[2]",
        "(a: (f32[2], s32[])) -> f32[2]",
        "(a: (f32[2], s32[])) -> (f32[2], s32[])",
        "(a: (f32[2]{0:T(2)}, /*index=1*/s32[]), b: f32[2]) -> (f32[2])",
        "(a: f32[2], /*index=1*/ b: f32[2]) -> ()",
        "(a: f32[2], /*index=1*/) -> f32[2]",
        "(a: ((f32[2]), s32[])) -> f32[2]",  # a nested tuple: read piece by piece
        "(a: (f32[2],)) -> f32[2]",
        "(a: f32[2]) -> (f32[2]) {0}",
        "(a: f32[2]) -> (f32[2]{0:T(2}, s32[])",
        "(a: f32[2]) -> (f32[2], /*index=1*/s32[])",
        "(a: f32[2]) -> (f32[2], /*index=x*/s32[])",
    ],
)
@pytest.mark.parametrize("first", ["ROOT r = f32[2]{0} parameter(0)", "0 = f32[2]{0} parameter(0)"])
def test_the_one_match_header_reads_what_the_careful_reader_does(
    header: str, first: str, monkeypatch
) -> None:
    text = f"HloModule m\nENTRY e {header} {{\n  {first}\n}}\n"
    assert _outcome(text) == _by_parts(text, monkeypatch)


_VALUES = st.sampled_from(
    [
        "kLoop",
        "%fused_computation.1",
        "{}",
        "{1,0}",
        "{0:2}",
        '"a, b=c {[("',
        '{op_name="jit(f)/x" stack_frame_id=3}',
        '{"flag_configs":[],"a":{"lists":[{"indices":["0","4"]}]}}',
        "{{}: (0, {})}",
        "{{0}, {1}}",
        "bf_io->bf",
        "[2,4]<=[8]",
        "devices=[2,1]0,1",
        "{maximal device=0}",
        "{[}]",
        "{a(b]}",
        '"unterminated',
        "{ /* c */ 1}",
        "{1,\n 0}",
        "a/b",
        "0%s",
        "{a}x",
        "x[1]",
    ]
)
_KEYS = st.sampled_from(
    [
        "kind",
        "calls",
        "to_apply",
        "dimensions",
        "metadata",
        "backend_config",
        "slice",
        "index",
        "sharding",
        "k",
    ]
)
_GAPS = st.sampled_from(["", " ", "  ", "\t", "\n  ", " /*c*/ ", " // c\n "])


@st.composite
def _instruction_lines(draw) -> str:
    shape = draw(
        st.sampled_from(
            [
                "f32[2]{0}",
                "bf16[4,8]{1,0:T(8,128)(2,1)}",
                "f32[]",
                "pred[2]",
                "(f32[2], s32[])",
                "f32[2] {0}",
                "f32[2]{0:P(s32[2]{0})}",
                "(f32[2]{0:T(2)}, s32[])",
                "((f32[2]), pred[])",
                "(f32[2]{0:T(2}, s32[])",
                "(f32[2], /*index=1*/s32[])",
                "(f32[2], /*index=1*/ s32[]{:T(2)})",
                "(f32[2],/*index=1*/s32[], /*c*/pred[])",
                "(f32[2], /*index=1 s32[])",
            ]
        )
    )
    opcode = draw(
        st.sampled_from(["add", "fusion", "parameter", "constant", "copy-start", "call-start", "tuple"])
    )
    names = draw(
        st.lists(
            st.sampled_from(
                [
                    *("%p", "p", "%p", "p", "%p", "%q", "0", "-1", "1.5", "f32[2] %p", "{1,2}"),
                    *("/*index=5*/%p", "/*index=5*/ f32[2]{0} %p", "/*index=*/%p", "/*c*/ %p"),
                    *("{ {1, 2}, {3} }", "{{{{1}}}}", "{1, {2, {3}}}", '{"a"}', "{(1)}", "{1 /* c */}"),
                ]
            ),
            max_size=3,
        )
    )
    gap = lambda: draw(_GAPS)  # noqa: E731
    attributes = "".join(
        f"{gap()},{gap()}{draw(_KEYS)}{gap()}={gap()}{draw(_VALUES)}" for _ in range(draw(st.integers(0, 3)))
    )
    root = draw(st.sampled_from(["", "ROOT ", "ROOT  "]))
    after = draw(st.sampled_from(["", "", " // c", " /* c */", " /* c", " /*c*/ // d", "\f", " /", " ,"]))
    return f"{root}%x{gap()}={gap()}{shape} {opcode}({gap()}{', '.join(names)}{gap()}){attributes}{after}"


_TRICKY_ATTRIBUTES = [
    ", k=x[1]",
    ", k=bf_io->bf",
    ", sharding={devices=[2,1]0,1}, k=[2,4]<=[8]",
    ", k=x(1)",
    ", k={a}x",
    ", k=0%s",
    ", k={[}]",
    ", k={a(b]}",
    ', k="a, b=c", j=1',
    ', k="unterminated',
    ", k=a, k=b",
    ", k={1,\n 0}",
    ",\n  k=1",
    ", k=1 // comment\n  , j=2",
    ", k=1 /* c */",
    ", k={ /* c */ 1}",
    ', backend_config={"a":{"b":[{"c":{"d":[{"e":1}]}}]}}',
    ', backend_config={"a":{"b":[{"c":[1]}]}}, calls=%f',
    ", calls={%f, %f}",
    ", calls=%f, to_apply=%f",
    ", to_apply={%f, %f}",
    ", dimensions={1,0}",
    ", dimensions={x}",
    ", slice={[0:2]}",
    ", index=-1",
    ", k=",
    ", =1",
    "",
]


@pytest.mark.parametrize("attributes", _TRICKY_ATTRIBUTES)
@pytest.mark.parametrize(
    "head",
    [
        "%x = f32[2]{0} add(%p, %p)",
        "ROOT %x = f32[] constant(-1.5)",
        "%x = f32[2]{0} parameter(1)",
        "%x = (f32[2]{0:T(2)}, s32[]) tuple(%p, %p)",
        "%x = ( f32[2]{0} ,s32[] ) tuple(%p)",
        "%x = () tuple()",
        "%x = ((f32[2]{0}), s32[]) tuple(%p)",
        "%x = (f32[2]{0:T(8,128}, s32[]) tuple(%p)",
        "%x = (f32[2]{0:T(8,128))}, s32[]) tuple(%p)",
        "%x = (f32[2]{0}, s32[] tuple(%p)",
        "%x = (f32[2] {0}, s32[]) tuple(%p)",
        "%x = f32[2]{0} add(f32[2]{0} %p, f32[2]{0:T(2)} p)",
        "%x = f32[2]{0} add(f32[2]{0} %p, %p)",
        "%x = f32[2]{0} add(%p, f32[2] %p.1)",
        "%x = f32[2]{0} add(f32[2] -1, %p)",
        "%x = f32[2]{0} add(f32[2] {0} %p)",
        "%x = f32[2]{0} add(f32[2]{0:P(s32[2]{0})} %p)",
        "%x = f32[2]{0} add(f32[2]{0:T(2} %p)",
        "%x = f32[2]{0} add(f32[2]{0:Q} %p)",
        "%x = f32[2]{0} add((f32[2]) %p)",
        "%x = f32[2]{0} add(f32[2]{0}%p)",
        "%x = f32[2]{0} add( f32[2]{0}  %p ,f32[2]{0} %p )",
    ],
)
def test_the_fast_reader_agrees_on_tricky_attribute_values(head, attributes, monkeypatch) -> None:
    text = f"HloModule m\n%f {{\n  ROOT %r = f32[] parameter(0)\n}}\nENTRY %e {{\n  %p = f32[2]{{0}} parameter(0)\n  {head}{attributes}\n}}\n"
    assert _outcome(text) == _by_parts(text, monkeypatch)


@pytest.mark.slow
@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_instruction_lines(), min_size=1, max_size=3), closing=_GAPS)
def test_the_fast_reader_agrees_on_generated_instructions(lines, closing, monkeypatch) -> None:
    body = "\n".join(f"  {line.replace('%x', f'%x{k}', 1)}" for k, line in enumerate(lines))
    text = f"HloModule m\n%f {{\n  ROOT %r = f32[] parameter(0)\n}}\nENTRY %e {{\n  %p = f32[2]{{0}} parameter(0)\n{body}{closing}\n}}\n"
    assert _outcome(text) == _by_parts(text, monkeypatch)


@pytest.mark.parametrize(
    "line",
    [
        "%x = (f32[2], /*index=1*/s32[]) tuple(%p, /*index=1*/%p)",
        "%x = f32[2]{0} add(f32[2]{0} %p, /*index=1*/f32[2]{0} %p)",
        "%x = s32[2]{0} constant({1, 2})",
        "%x = s32[2,2]{1,0} constant({ {1, 2}, {3, 4} })",
        '%x = f32[2]{0} add(%p, %p), metadata={op_name="a"} // a comment',
        "%x = f32[2]{0} add(%p, %p) /* a comment */",
        "%x = f32[2]{0} copy(%p), slice={[0:2]}, index=1, dimensions={0}, calls=%f, condition=%f",
    ],
)
def test_the_one_match_reader_takes_index_comments_braced_constants_and_trailing_comments(
    line: str, monkeypatch
) -> None:
    """The forms the one-match reader was extended to (issue 18) are read by it, whole, and
    as the careful reader reads them."""
    from layout_algebra.hlo.parser_scanner import FLAT_INSTRUCTION

    text = f"HloModule m\n%f {{\n  ROOT %r = f32[] parameter(0)\n}}\nENTRY %e {{\n  %p = f32[2]{{0}} parameter(0)\n  {line}\n}}\n"
    assert (m := FLAT_INSTRUCTION.match(line)) is not None and m.end() == len(line)
    assert not isinstance(_outcome(text), str)
    assert _outcome(text) == _by_parts(text, monkeypatch)


@pytest.mark.parametrize(
    "head",
    [
        "ENTRY e",
        "ENTRY {",
        "ENTRY.1",
        "ENTRY  ENTRY",
        "ENTRY%e",
        "ENTRY\n%e",
        "%e",
        "ENTRY\te",
        "ENTRYe",
        "1e",
        "ENTRY e (a: f32[2]) -> f32[2]",
        "e(a: f32[2]) -> f32[2]",
        "ENTRY -e",
    ],
)
@pytest.mark.parametrize("body", ["{", " {", "\n{", " /* c */ {", ""])
def test_the_one_match_computation_head_reads_what_the_careful_reader_does(head, body, monkeypatch) -> None:
    text = f"HloModule m\n%f {{\n  ROOT %r = f32[] parameter(0)\n}}\n{head}{body}\n  ROOT %p = f32[2]{{0}} parameter(0)\n}}\n"
    assert _outcome(text) == _by_parts(text, monkeypatch)


_HEADERS = [
    "HloModule m, entry_computation_layout={(f32[2]{0}, (s32[], f32[2]{0:T(2)}))->(f32[2]{0}, /*index=1*/s32[])}",
    "HloModule m, entry_computation_layout={()->f32[]}",
    "HloModule m, entry_computation_layout={( f32[2] , s32[] ) -> f32[2]}",
    "HloModule m, entry_computation_layout={(f32[2] {0})->f32[2]}",
    "HloModule m, entry_computation_layout={(f32[2])->f32[2]{0:P(s32[2]{0})}}",
    "HloModule m, entry_computation_layout={(((f32[2])))->f32[2]}",
    "HloModule m, entry_computation_layout={(f32[2]{0:Q})->f32[2]}",
    "HloModule m, entry_computation_layout={(f32[2])->f32[2]}x",
    "HloModule m, entry_computation_layout={(f32[2])f32[2]}",
    "HloModule m, a=1, a=2",
    "HloModule m, a={1}(2), b=x[1]",
    'HloModule m, a="s, t", b={c}',
]
_SECTIONS = [
    "",
    'FileNames\n1 "a.py"\n2 "b\\"c.py"\n',
    "FileLocations\n1 {file_name_id=1 line=2}\n-2 {x}\n",
    "StackFrames\n1 {a=1} 2 {b=2}\n3 /* c */ {c=3}\n",
    'FunctionNames\n1 "f"\n2 {a(b)}\n3 "g"\n',
    'FileNames\n1 "a.py"\n2\n"b.py"\n',
    'FileNames\n1 "unterminated\n',
    "StackFrames\n1 {a=1\n2 {b}\n",
    "StackFrames\n1 x\n",
    'FileNames\n1 "a" FunctionNames\n1 "f"\n',
]


@pytest.mark.parametrize("sections", _SECTIONS)
@pytest.mark.parametrize("header", _HEADERS)
def test_the_one_match_header_and_sections_read_what_the_careful_reader_does(
    header: str, sections: str, monkeypatch
) -> None:
    text = f"{header}\n{sections}\nENTRY %e {{\n  ROOT %p = f32[2]{{0}} parameter(0)\n}}\n"
    assert _outcome(text) == _by_parts(text, monkeypatch)


def test_the_one_match_header_and_sections_are_taken_on_real_dumps(monkeypatch) -> None:
    """Every shipped dump's entry layout and section entries are read by the one-match
    readers (the careful ones are not called), and give what the careful ones give."""
    from layout_algebra.hlo import parser

    texts = [
        ground_truth_file(f"hlo/{p.name}").read_text() for p in sorted((GROUND_TRUTH / "hlo").glob("*.hlo"))
    ]
    with_layout = [t for t in texts if "entry_computation_layout=" in t]
    with_sections = [t for t in texts if "\nStackFrames\n" in t]
    assert len(with_layout) >= 5 and len(with_sections) >= 5
    calls = []

    def careful(self, *args):
        calls.append(args)
        raise AssertionError("read piece by piece")

    with monkeypatch.context() as patch:
        patch.setattr(parser._Parser, "balanced_end", careful)  # reads a '{...}' entry
        for text in with_sections:
            header_end = text.index("\n%") if "\n%" in text else text.index("\nENTRY")
            sections = parser._Parser(text[text.index("\nFileNames\n") : header_end], False).sections()
            assert len(sections["StackFrames"]) > 0
    with monkeypatch.context() as patch:
        patch.setattr(parser._Parser, "shape", careful)  # reads a shape of the layout
        for text in with_layout:
            header = text[text.index("HloModule") :].split("\n", 1)[0]
            assert parser._Parser(header, False).header()[2] is not None
    assert calls == []
    for text in with_layout + with_sections:
        assert _outcome(text) == _by_parts(text, monkeypatch)


def test_the_trusted_constructors_set_every_field() -> None:
    """The parser builds instructions, operands and computations without ``__init__``
    (issue 18); each such constructor takes every field of its class, in order, so a field
    added to the class cannot be left unset."""
    import dataclasses
    import inspect

    from layout_algebra.hlo import ir

    for cls, make in [
        (ir.HloInstruction, ir.trusted_instruction),
        (ir.HloOperand, ir.trusted_operand),
        (ir.HloComputation, ir.trusted_computation),
    ]:
        fields = [f.name for f in dataclasses.fields(cls)]
        assert list(inspect.signature(make).parameters) == fields, cls.__name__


def test_the_process_caches_keep_no_errors() -> None:
    """Shapes and attribute values are cached across parses by their text (issue 18): a
    value that failed fails again, where it stands, and one read before reads the same."""
    good = "HloModule m\nENTRY e {\n  p = f32[2,3]{1,0} parameter(0)\n  ROOT t = f32[3,2]{1,0} transpose(p), dimensions={1,0}\n}"
    bad_value = good.replace("dimensions={1,0}", "dimensions={1,x}")
    bad_shape = (
        "HloModule m\nENTRY e {\n  q = f32[1]{0} parameter(0)\n  ROOT p = f32[2,3]{1,0:T(2}} copy(q)\n}"
    )
    first = parse_module(good)
    errors = []
    for _ in range(2):
        for text in (bad_value, bad_shape):
            with pytest.raises(HloParseError) as info:
                parse_module(text)
            errors.append(str(info.value))
    assert errors[0] == errors[2] and errors[1] == errors[3]
    column = bad_value.splitlines()[3].index("x}") + 1
    assert f"line 4, column {column}:" in errors[0] and "line 4, column" in errors[1]
    assert parse_module(good) == first and first.entry.root.dimensions == (1, 0)


# ------------------------------------------------------------------ deep nesting (issue 15)
def _nested(depth: int) -> dict[str, str]:
    shape = "(" * depth + "f32[2]" + ")" * depth
    return {
        "instruction shape": f"HloModule m\nENTRY e {{\n  p = {shape} parameter(0)\n}}",
        "operand shape": f"HloModule m\nENTRY e {{\n  p = f32[2] parameter(0)\n  c = f32[2] add({shape} p, p)\n}}",
        "entry layout": f"HloModule m, entry_computation_layout={{({shape})->f32[2]}}\nENTRY e {{\n  p = f32[2] parameter(0)\n}}",
        "long tuple": "HloModule m\nENTRY e {\n  p = "
        + "(f32[3], " * depth
        + "f32[2]"
        + ", f32[3]" * 100
        + ")" * depth
        + " parameter(0)\n}",
    }


@pytest.mark.parametrize("depth", [101, 499, 5000])
@pytest.mark.parametrize("where", list(_nested(1)))
def test_deeply_nested_shapes_are_a_parse_error_not_a_recursion_error(where, depth) -> None:
    text = _nested(depth)[where]
    with pytest.raises(HloParseError, match="nested more than 100 levels deep") as info:
        parse_module(text)
    err = info.value
    assert text[err.position] == "(" and text[: err.position].count("(") >= 100


def test_shapes_nested_100_deep_still_parse() -> None:
    module = parse_module(_nested(100)["instruction shape"])
    shape = module.entry.root.shape
    for _ in range(100):
        (shape,) = shape.elements
    assert shape == parse_shape("f32[2]")
    assert parse_module(_nested(100)["long tuple"]).entry.root.shape is not None
