"""HLO text in every form XLA's parser reads: wrapped, re-indented, commented, printed back.

XLA's lexer (``hlo_lexer.cc``) skips whitespace and ``/* */`` / ``//`` comments between any
two tokens, so an instruction may be wrapped over lines anywhere, a shape may be written
``f32 [2] {0}``, and ``/*index=5*/`` may stand inside a tuple; its strings may be in single
quotes and span lines. The tests here take every shipped dump (``tests/data/pass_dumps``,
``tests/data/ground_truth/hlo``) and

* print it back (``HloModule.to_text``) and parse it again: the same module;
* re-wrap it: whitespace and comments put between tokens (all of them, or a random few
  chosen by Hypothesis): the same module;

and check that malformed text gives an ``HloParseError`` quoting the line and column.

Where a gap may go is found by :func:`token_boundaries`, a small scanner written for the
tests (it knows strings, comments and brackets, not the parser): between two tokens,
except inside attribute values, constant literals and section entries, which the module
keeps as raw text (a gap there changes the text kept, not the meaning), and except before
an ``=`` or ``:`` (XLA lexes ``key=`` and ``name:`` as one token).
"""

from __future__ import annotations

import functools
import itertools
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.ground_truth import GROUND_TRUTH, TEST_DATA

from layout_algebra import parse_shape
from layout_algebra.hlo import HloParseError, parse_module
from layout_algebra.hlo.parser import iter_computations


def shipped_dumps() -> list[Path]:
    paths = sorted((TEST_DATA / "pass_dumps").glob("*/*.txt")) + sorted((GROUND_TRUTH / "hlo").glob("*.hlo"))
    assert len(paths) > 250, "the shipped dumps are missing"
    return paths


DUMPS = shipped_dumps()
#: A few dumps of each kind, for the slower tests.
SAMPLE = [p for p in DUMPS if p.suffix == ".hlo"] + [p for p in DUMPS if p.suffix == ".txt"][::12]


@functools.cache
def dump_text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@functools.cache
def dump_module(path: Path):
    return parse_module(dump_text(path))


# ------------------------------------------------------------------ the token scanner
_TOKEN = re.compile(
    r"(?P<gap>(?:\s+|/\*.*?\*/|//[^\n]*)+)"
    r"|(?P<string>\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*')"
    r"|(?P<word><=|->|%?[\w.\-]+)"
    r"|(?P<char>.)",
    re.S,
)
_CLOSE = {")": "(", "]": "[", "}": "{"}


def _tokens(text: str) -> list[tuple[str, str, int, int]]:
    """(kind, text, start, end) of every token and gap."""
    return [(m.lastgroup or "", m.group(), m.start(), m.end()) for m in _TOKEN.finditer(text)]


def _group_end(tokens: list, i: int) -> int:
    """The index of the token closing the bracket opened by token ``i``."""
    depth = 0
    for j in range(i, len(tokens)):
        t = tokens[j][1]
        if tokens[j][0] == "char" and t in "({[":
            depth += 1
        elif tokens[j][0] == "char" and t in ")}]":
            depth -= 1
            if depth == 0:
                return j
    raise AssertionError("unbalanced brackets in a shipped dump")


def _value_end(tokens: list, i: int) -> int:
    """The index of the last token of the attribute value starting at token ``i``."""
    kind, t = tokens[i][0], tokens[i][1]
    if kind == "char" and t == "{":
        return _group_end(tokens, i)
    if kind == "string":
        return i
    j = i
    while j + 1 < len(tokens):
        k, nxt = tokens[j + 1][0], tokens[j + 1][1]
        if k == "gap" or (k == "char" and nxt in ",)}"):
            break
        j = _group_end(tokens, j + 1) if k == "char" and nxt in "([" else j + 1
    return j


def token_boundaries(text: str) -> list[int]:
    """Offsets in ``text`` where XLA's grammar allows whitespace or a comment and the module
    parsed from the text does not change: between two tokens, outside raw attribute values,
    constant literals and section entries, and not before ``=`` or ``:``. An offset inside an
    existing gap stands for that whole gap (the gap's start)."""
    tokens = _tokens(text)
    solid = [k for k, t in enumerate(tokens) if t[0] != "gap"]
    raw: set[int] = set()  # indices of tokens inside a raw region (not its first token)
    depth = 0
    for n, k in enumerate(solid):
        kind, t = tokens[k][0], tokens[k][1]
        before = tokens[solid[n - 1]] if n else ("", "", 0, 0)
        after = tokens[k + 1] if k + 1 < len(tokens) else ("", "", 0, 0)
        if kind == "word" and after[1] == "=" and before[1] == "," and depth <= 1:
            start = solid[n + 2]  # the value, after 'key='
            raw.update(range(start + 1, _value_end(tokens, start) + 1))
        elif kind == "word" and t == "constant" and after[1] == "(":
            raw.update(range(k + 2, _group_end(tokens, k + 1) + 1))  # kept raw, comments too
        elif kind == "char" and t == "{" and depth == 0 and re.fullmatch(r"-?\d+", before[1]):
            raw.update(range(k + 1, _group_end(tokens, k) + 1))  # a section entry {...}
        if kind == "char" and t in "({[":
            depth += 1
        elif kind == "char" and t in ")}]":
            depth -= 1
    offsets = []
    for a, b in itertools.pairwise(solid):
        if b in raw or tokens[b][1] in ("=", ":"):
            continue
        offsets.append(tokens[a][3])  # the end of token a: where a gap starts or would start
    return offsets


def rewrapped(text: str, gaps: dict[int, str]) -> str:
    """``text`` with the gap at each offset (see :func:`token_boundaries`) replaced by ``gaps[offset]``."""
    out, last = [], 0
    for offset in sorted(gaps):
        out.append(text[last:offset])
        end = offset
        gap = _TOKEN.match(text, offset)
        if gap is not None and gap.lastgroup == "gap":
            end = gap.end()
            if "\n" in gap.group() and "//" in gap.group():
                pass  # replaced whole: a '//' comment goes with its line
        out.append(gaps[offset])
        last = end
    out.append(text[last:])
    return "".join(out)


GAPS = (" ", "\n", "\n      ", "\t", " /* c */ ", "/*index=5*/", " // note\n", "\n\n", "\r\n  ")


def test_the_scanner_finds_the_gaps_of_an_instruction() -> None:
    text = (
        "HloModule m, entry_computation_layout={(f32[2]{0})->f32[2]{0}}\n"
        "ENTRY e (a: f32[2]) -> f32[2] {\n"
        '  a = f32[2]{0} parameter(0), metadata={op_name="x y"}\n'
        "  c = s32[] constant({1, 2})\n"
        "  ROOT n = f32[2]{0} negate(a), sharding={replicated}\n}\n"
    )
    marked = rewrapped(text, dict.fromkeys(token_boundaries(text), "~"))
    assert marked.split("~") == [
        *("HloModule", "m", ",", "entry_computation_layout=", "{(f32[2]{0})->f32[2]{0}}"),
        *("ENTRY", "e", "(", "a:", "f32", "[", "2", "]", ")", "->", "f32", "[", "2", "]", "{"),
        *("a =", "f32", "[", "2", "]", "{", "0", "}", "parameter", "(", "0", ")", ","),
        *("metadata=", '{op_name="x y"}', "c =", "s32", "[", "]", "constant", "({1, 2})"),
        *("ROOT", "n =", "f32", "[", "2", "]", "{", "0", "}", "negate", "(", "a", ")", ","),
        *("sharding=", "{replicated}", "}\n"),
    ]


# ---------------------------------------------------------------- printed back
@pytest.mark.parametrize("path", DUMPS, ids=lambda p: f"{p.parent.name}/{p.name[:48]}")
def test_every_shipped_dump_prints_back_to_the_same_module(path: Path) -> None:
    module = dump_module(path)
    assert parse_module(module.to_text()) == module


def test_printed_text_is_one_instruction_a_line() -> None:
    module = dump_module(next(p for p in DUMPS if p.name.startswith("05_")))
    lines = module.to_text().splitlines()
    assert sum(1 for line in lines if re.match(r"  (ROOT )?%[\w.\-]+ = ", line)) == module.instruction_count


# ------------------------------------------------------------------- re-wrapped
@pytest.mark.parametrize("path", SAMPLE, ids=lambda p: f"{p.parent.name}/{p.name[:48]}")
def test_every_gap_rewrapped_gives_the_same_module(path: Path) -> None:
    text = dump_text(path)
    offsets = token_boundaries(text)
    assert len(offsets) > 50
    wrapped = rewrapped(text, {o: GAPS[k % len(GAPS)] for k, o in enumerate(offsets)})
    assert parse_module(wrapped) == dump_module(path)
    assert tuple(iter_computations(wrapped)) == dump_module(path).computations  # streamed alike


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), path=st.sampled_from(DUMPS))
def test_random_gaps_give_the_same_module(data, path: Path) -> None:
    text = dump_text(path)
    offsets = _boundaries(path)
    chosen = data.draw(st.lists(st.sampled_from(offsets), max_size=40, unique=True))
    gaps = {o: data.draw(st.sampled_from(GAPS)) for o in chosen}
    assert parse_module(rewrapped(text, gaps)) == dump_module(path)


@functools.cache
def _boundaries(path: Path) -> list[int]:
    return token_boundaries(dump_text(path))


# ------------------------------------------------------------- forms of XLA's grammar
def _module(*lines: str, header: str = "HloModule m") -> str:
    return header + "\nENTRY e {\n" + "\n".join(lines) + "\n}\n"


NESTED = "(f32[2]{0}, (s32[], bf16[4,8]{1,0:T(8,128)(2,1)}))"


@pytest.mark.parametrize(
    "text",
    [
        _module(f"  p = {NESTED} parameter(0)", "  ROOT g = f32[2]{0} get-tuple-element(p), index=0"),
        _module(  # wrapped inside the nested tuple, a comment in it
            "  p = (f32[2]{0},\n       (s32[] /* scalar */, // the second\n        bf16[4,8]{1,0:T(8,128)(2,1)})) parameter(0)",
            "  ROOT g = f32[2]{0} get-tuple-element(p), index=0",
        ),
        _module(  # '/*index=5*/' before the sixth element, here a nested tuple
            "  p = (f32[2]{0}, s32[], s32[], s32[], s32[], /*index=5*/(s32[], bf16[4,8]{1,0:T(8,128)(2,1)})) parameter(0)",
            "  ROOT g = f32[2]{0} get-tuple-element(p), index=0",
        ),
        _module(  # a space between the element type and its dimensions, and before the layout
            "  p = f32 [2] {0} parameter(0)",
            "  ROOT g = f32/*type*/[2]{0} copy(f32 [2]{0} p)",
        ),
    ],
)
def test_nested_tuples_wrapped_and_commented_shapes_parse_whole(text: str) -> None:
    module = parse_module(text)
    assert parse_module(module.to_text()) == module
    p = module.entry.instruction("p")
    assert p.shape == parse_shape(
        re.sub(r"/\*.*?\*/|//[^\n]*", " ", text.split("p = ")[1].split(" parameter")[0])
    )


def test_tuple_shaped_parameters_with_layouts_in_a_wrapped_signature() -> None:
    text = (
        "HloModule m, entry_computation_layout={(" + NESTED + ",\n    f32[3]{0})->f32[2]{0}}\n"
        "ENTRY e (p: (f32[2]{0}, (s32[],\n                  bf16[4,8]{1,0:T(8,128)(2,1)})), q: f32[3]{0})\n"
        "    -> f32[2]{0} {\n"
        f"  p = {NESTED} parameter(0)\n  q = f32[3]{{0}} parameter(1)\n"
        "  ROOT g = f32[2]{0} get-tuple-element(p), index=0\n}\n"
    )
    module = parse_module(text)
    assert module.entry.parameters[0] == ("p", parse_shape(NESTED))
    assert module.entry_computation_layout.parameter_shapes == (parse_shape(NESTED), parse_shape("f32[3]{0}"))
    assert parse_module(module.to_text()) == module


def test_metadata_and_strings_over_several_lines() -> None:
    text = _module(
        '  p = f32[2]{0} parameter(0), metadata={op_name="jit(f)/a"\n'
        '                                        source_file="f.py" source_line=3}',
        "  ROOT c = f32[2]{0} custom-call(p), custom_call_target='my target',\n"
        "      backend_config=\"line one\nline two\", frontend_attributes={a='{'}",
    )
    module = parse_module(text)
    p, c = module.entry.instruction("p"), module.entry.root
    assert (
        p.metadata
        == '{op_name="jit(f)/a"\n                                        source_file="f.py" source_line=3}'
    )
    assert c.attributes["custom_call_target"] == "'my target'"
    assert c.attributes["backend_config"] == '"line one\nline two"'
    assert c.attributes["frontend_attributes"] == "{a='{'}"  # a brace in a string does not open a group
    assert parse_module(module.to_text()) == module


# ------------------------------------------------------------------- bad input
def _error(text: str) -> HloParseError:
    with pytest.raises(HloParseError) as info:
        parse_module(text)
    err = info.value
    rendered = str(err).splitlines()
    assert rendered[0].startswith(f"cannot parse HLO module at line {err.line}, column {err.column}: ")
    assert err.source_line == text.split("\n")[err.line - 1]  # the line quoted is the input's
    if "..." not in rendered[1]:
        assert rendered[1] == "  " + err.source_line and rendered[2] == " " * (err.column + 1) + "^"
    return err


@pytest.mark.parametrize(
    ("text", "line", "column", "reason"),
    [
        (
            _module("  p = (f32[2]{0},\n       (s32[], bf16[4,8]{1,0}) parameter(0)"),
            *(5, 1, "'}' closes the '(' opened at line 3, column 7"),
        ),
        (
            _module("  p = (f32[2]{0},\n       (s32[], bf16[4,8}{1,0})) parameter(0)"),
            4,
            24,
            "'}' closes the '['",
        ),
        (
            _module("  p = (f32[2]{0},\n       (s32[], bf16[4,8]{1,0:Q(1)})) parameter(0)"),
            4,
            30,
            "unknown layout",
        ),
        (_module("  p = (f32[2]{0}, /*index=5 (s32[])) parameter(0)"), 3, 19, "unterminated comment"),
        (_module("  p = f32 [2 parameter(0)"), 3, 11, "'[' is never closed"),
        (_module("  p = f32[2]{0} parameter(0), metadata={op_name='x}"), 3, 49, "unterminated string"),
        (
            _module('  p = f32[2]{0} parameter(0), metadata={op_name="x\n  ROOT q = f32[2]{0} copy(p)'),
            *(3, 49, "unterminated string"),
        ),
        (
            _module('  p = f32[2]{0} parameter(0), metadata={op_name="x"\n     source_line=3'),
            *(6, 1, "never closed: expected '}'; the last instruction, 'p' at line 3, column 3, runs on"),
        ),
        (  # XLA infers some shapes; this parser does not, and says so
            _module("  a = f32[2]{0} parameter(0)", "  ROOT s =\n    add(a, a)"),
            *(5, 5, "instruction 's' has no result shape before its opcode 'add': XLA infers"),
        ),
        (  # a quote missing: the string runs on to the next line's first quote
            _module(
                '  p = f32[2]{0} parameter(0), metadata={op_name="x}\n  ROOT q = f32[2]{0} copy(p), a="y"'
            ),
            *(4, 35, "(the string at line 3, column 49 runs on to line 4: is its closing quote missing?)"),
        ),
        (
            _module('  p = f32[2]{0} parameter(0), b="x\n  ROOT q = f32[2]{0} copy(p), a="y"'),
            *(
                4,
                35,
                "expected '=' after the instruction name 'y', found '\"' (the string at line 3, column 33",
            ),
        ),
        (
            _module("  p = f32[2]{0}\n      parameter(0),\n      sharding=\n}"),
            6,
            1,
            "expected a value after '='",
        ),
        (
            _module("  ROOT p = f32[2]{0} copy(\n     f32[2]{0} %a %b)"),
            4,
            19,
            "expected ',' or ')' between operands",
        ),
    ],
)
def test_malformed_wrapped_input_is_reported_at_its_line_and_column(
    text: str, line: int, column: int, reason: str
) -> None:
    err = _error(text)
    assert (err.line, err.column) == (line, column), str(err)
    assert reason in err.reason, str(err)


# ------------------------------------------------ nested tuples in the one-match reader
ONE_LINE_NESTED = (
    "HloModule m, entry_computation_layout={((f32[2]{0}, (s32[], u32[]{:T(128)})), f32[3]{0})->f32[2]{0}}\n"
    "ENTRY e (p: (f32[2]{0}, (s32[], u32[]{:T(128)})), q: f32[3]{0}) -> f32[2]{0} {\n"
    "  p = (f32[2]{0}, (s32[], u32[]{:T(128)})) parameter(0)\n"
    "  q = f32[3]{0} parameter(1)\n"
    "  s = ((f32[2]{0}), f32[2]{0}, u32[]{:T(8)S(8)}) call-start(p), to_apply=%f\n"
    "  t = (f32[2]{0}, s32[], s32[], s32[], s32[], /*index=5*/(s32[], f32[3]{0})) tuple(p, p, p, p, p, q)\n"
    "  ROOT g = f32[2]{0} get-tuple-element((f32[2]{0}, (s32[], u32[]{:T(128)})) p), index=0\n"
    "}\n"
    "%f (x: (f32[2]{0}, (s32[], u32[]{:T(128)}))) -> f32[2]{0} {\n"
    "  x = (f32[2]{0}, (s32[], u32[]{:T(128)})) parameter(0)\n"
    "  ROOT y = f32[2]{0} get-tuple-element(x), index=0\n"
    "}\n"
)


def test_one_line_nested_tuples_take_the_one_match_reader_and_agree_with_the_careful_one(monkeypatch) -> None:
    from layout_algebra.hlo import parser, parser_scanner

    lines = [
        line.strip() for line in ONE_LINE_NESTED.splitlines() if " = " in line and "HloModule" not in line
    ]
    lines.remove(next(line for line in lines if line.startswith("ROOT g")))  # a tuple-typed operand: by parts
    assert len(lines) == 6 and all(
        (m := parser_scanner.FLAT_INSTRUCTION.match(line)) is not None and m.end() == len(line)
        for line in lines
    )
    assert parser_scanner.SIGNATURE.match(ONE_LINE_NESTED, ONE_LINE_NESTED.index("(p:")) is not None
    assert parser_scanner.ENTRY_LAYOUT.match(ONE_LINE_NESTED, ONE_LINE_NESTED.index("{((")) is not None
    fast = parse_module(ONE_LINE_NESTED)
    with monkeypatch.context() as patch:
        for name in parser_scanner.FAST_PATHS:
            for module in (parser, parser_scanner):  # wherever the pattern is read
                if hasattr(module, name):
                    patch.setattr(module, name, re.compile(r"(?!)"))
        careful = parse_module(ONE_LINE_NESTED)
    assert fast == careful
    assert fast.entry.instruction("t").shape.elements[5] == parse_shape("(s32[], f32[3]{0})")
    assert fast.entry_computation_layout.parameter_shapes[0] == parse_shape(
        "(f32[2]{0}, (s32[], u32[]{:T(128)}))"
    )
