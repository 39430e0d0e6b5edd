"""The text syntax (``parse_shape`` / ``parse_layout``) against XLA's own parser and printer.

Expected values come from XLA: ``xla_shape_strings.tsv`` (542 strings run through XLA's
``ParseShape`` and printed back), the ``parse_roundtrip``/``parse_error`` cases of
``xla_vectors.json`` (XLA's C++ tests), and the grammar and printing rules written up
in ``tests/data/ground_truth/xla-facts.md`` (cited as §n). Nothing is copied from this
package's own output.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import signal
from collections.abc import Callable, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.ground_truth import TEST_DATA, ground_truth_file, require_vector, vector_params
from support.strategies import array_shapes, layouts, shapes

import layout_algebra.model.symbols  # noqa: F401  (import SymPy now, not inside a timed example)
from layout_algebra import ParseError, parse_layout, parse_shape
from layout_algebra.model.primitive_types import ARRAY_TYPE_NAMES
from layout_algebra.model.shapes import (
    COMBINE_DIMENSION,
    INT64_MAX,
    UNBOUNDED_SIZE,
    ArrayShape,
    Layout,
    OpaqueShape,
    TokenShape,
    TupleShape,
)

INT64_MIN = -(2**63)

# --------------------------------------------------------------------------------------
# 1. Conformance with XLA's parser on xla_shape_strings.tsv
# --------------------------------------------------------------------------------------

TSV_COLUMNS = (
    "input",
    "ok",
    "canonical_or_error",
    "dims",
    "dynamic",
    "minor_to_major",
    "tiles",
    "element_size_in_bits",
)
#: The TSV writes both a `*` tile dimension (Tile::kCombineDimension) and the size of a `?`
#: dimension (Shape::kUnboundedSize) as INT64_MIN, e.g. the row
#: `bf16[2,3,1004]{2,1,0:T(2,*,128)}` has tiles `[[2, -9223372036854775808, 128]]` and
#: `f32[?,3]` has dims `[-9223372036854775808, 3]` (xla-facts §1.1, §1.2, §8.1).
TSV_COMBINE_DIMENSION = -9223372036854775808
TSV_UNBOUNDED_SIZE = -9223372036854775808

# tests/data/shape_string_disagreements.tsv lists every TSV row on which this package
# disagrees with XLA (accept/reject, canonical print, dims, dynamic flags, minor_to_major,
# tiles or element size), one row per input: header `input<TAB>reason`, `reason` saying why
# the difference is accepted. It is checked in both directions (every disagreement is
# listed, every listed row really disagrees), so it cannot go stale. Today it holds only
# the header: the package agrees with XLA on every row.
DISAGREEMENTS_FILE = TEST_DATA / "shape_string_disagreements.tsv"


@functools.cache
def _tsv_rows() -> tuple[dict[str, str], ...]:
    path = ground_truth_file("xla_shape_strings.tsv")
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    assert tuple(lines[0].split("\t")) == TSV_COLUMNS, f"unexpected header in {path}: {lines[0]!r}"
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        fields = line.split("\t")
        assert len(fields) == len(TSV_COLUMNS), f"{path}:{number}: {len(fields)} fields: {line!r}"
        assert fields[1] in ("OK", "ERR"), f"{path}:{number}: ok column is {fields[1]!r}"
        rows.append(dict(zip(TSV_COLUMNS, fields, strict=True)))
    assert rows, f"{path} has no rows"
    return tuple(rows)


def _listed_disagreements() -> dict[str, str]:
    lines = DISAGREEMENTS_FILE.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    assert lines and lines[0] == "input\treason", f"{DISAGREEMENTS_FILE} must start with 'input<TAB>reason'"
    listed: dict[str, str] = {}
    for number, line in enumerate(lines[1:], start=2):
        fields = line.split("\t")
        assert len(fields) == 2, f"{DISAGREEMENTS_FILE}:{number}: expected 2 tab-separated fields: {line!r}"
        text, reason = fields
        assert reason.strip(), f"{DISAGREEMENTS_FILE}:{number}: {text!r} is listed without a reason"
        assert text not in listed, f"{DISAGREEMENTS_FILE}:{number}: {text!r} is listed twice"
        listed[text] = reason
    return listed


def _disagreements_with_xla(row: dict[str, str]) -> list[str]:
    """How the package's reading of ``row["input"]`` differs from XLA's (empty: it agrees).

    Anything but ``ParseError`` propagates: a crash is never an accepted disagreement.
    """
    text = row["input"]
    try:
        shape = parse_shape(text)
    except ParseError as err:
        if row["ok"] == "OK":
            return [f"XLA accepts it as {row['canonical_or_error']}, the package rejects it: {err.reason}"]
        return []
    if row["ok"] == "ERR":
        return [f"XLA rejects it ({row['canonical_or_error']}), the package accepts it as {shape}"]
    problems = []
    if str(shape) != row["canonical_or_error"]:
        problems.append(f"prints {shape}, XLA prints {row['canonical_or_error']}")
    dims = json.loads(row["dims"])
    if dims is None:  # XLA reports no array fields: a tuple or token
        if isinstance(shape, ArrayShape):
            problems.append("XLA reads a non-array shape, the package an array")
        return problems
    if not isinstance(shape, ArrayShape):
        return [*problems, f"XLA reads an array, the package a {type(shape).__name__}"]
    layout = shape.layout
    ours = {
        "dims": list(shape.dimensions),
        "dynamic": list(shape.dynamic_dimensions),
        "minor_to_major": None if layout is None else list(layout.minor_to_major),
        "tiles": None if layout is None else [list(t.dimensions) for t in layout.tiles],
    }
    for column, value in ours.items():
        if value != json.loads(row[column]):
            problems.append(f"{column}: package {value}, XLA {row[column]}")
    if row["element_size_in_bits"] != "":
        ours_e = None if layout is None else layout.element_size_in_bits
        if ours_e != int(row["element_size_in_bits"]):
            problems.append(f"element_size_in_bits: package {ours_e}, XLA {row['element_size_in_bits']}")
    return problems


@functools.cache
def _all_tsv_disagreements() -> dict[str, list[str]]:
    found = {}
    for row in _tsv_rows():
        problems = _disagreements_with_xla(row)
        if problems:
            found[row["input"]] = problems
    return found


def test_tsv_uses_int64_min_for_star_and_question_mark() -> None:
    # Guards the comparison below: the file's encoding of `*` and `?` is what we assume.
    rows = _tsv_rows()
    star_rows = [
        r
        for r in rows
        if r["ok"] == "OK"
        and any("*" in m for m in re.findall(r"T((?:\([\d,*]*\))+)", r["canonical_or_error"]))
    ]
    assert star_rows, "expected rows with a `*` tile dimension"
    for r in star_rows:
        assert any(TSV_COMBINE_DIMENSION in tile for tile in json.loads(r["tiles"])), r
    unbounded = [
        r for r in rows if r["ok"] == "OK" and r["dims"] != "null" and "?" in r["canonical_or_error"]
    ]
    assert unbounded, "expected rows with a `?` dimension"
    for r in unbounded:
        assert TSV_UNBOUNDED_SIZE in json.loads(r["dims"]), r
    assert TSV_COMBINE_DIMENSION == COMBINE_DIMENSION == INT64_MIN
    assert TSV_UNBOUNDED_SIZE == UNBOUNDED_SIZE == INT64_MIN


def test_tsv_agreement_with_xla_is_at_least_99_percent() -> None:
    rows = _tsv_rows()
    found = _all_tsv_disagreements()
    rate = 1 - len(found) / len(rows)
    details = "\n".join(f"  {text!r}: {'; '.join(p)}" for text, p in found.items())
    assert rate >= 0.99, f"agreement with XLA {rate:.2%} over {len(rows)} rows; disagreements:\n{details}"


def test_tsv_every_disagreement_is_listed_with_a_reason() -> None:
    listed = _listed_disagreements()
    unlisted = {t: p for t, p in _all_tsv_disagreements().items() if t not in listed}
    details = "\n".join(f"  {t!r}\t{'; '.join(p)}" for t, p in unlisted.items())
    assert not unlisted, (
        f"{len(unlisted)} TSV rows disagree with XLA but are not listed in {DISAGREEMENTS_FILE.name} "
        f"(fix the package, or list them with a reason):\n{details}"
    )


def test_tsv_every_listed_disagreement_is_real() -> None:
    listed = _listed_disagreements()
    inputs = {r["input"] for r in _tsv_rows()}
    found = _all_tsv_disagreements()
    not_in_tsv = sorted(t for t in listed if t not in inputs)
    agreeing = sorted(t for t in listed if t in inputs and t not in found)
    assert not not_in_tsv, f"{DISAGREEMENTS_FILE.name} lists strings that are not in the TSV: {not_in_tsv}"
    assert not agreeing, f"{DISAGREEMENTS_FILE.name} is stale: these rows now agree with XLA: {agreeing}"


def test_tsv_canonical_prints_are_fixpoints() -> None:
    # XLA's canonical print of an accepted string must itself parse to the same value and
    # print unchanged (printing is a normal form).
    for row in _tsv_rows():
        if row["ok"] != "OK" or row["input"] in _all_tsv_disagreements():
            continue
        canonical = row["canonical_or_error"]
        assert str(parse_shape(canonical)) == canonical
        assert parse_shape(canonical) == parse_shape(row["input"]), row["input"]


# --------------------------------------------------------------------------------------
# 2. xla_vectors.json: parse_roundtrip and parse_error
# --------------------------------------------------------------------------------------

_PARSERS: dict[str, Callable[[str], object]] = {"ParseShape": parse_shape, "ParseLayout": parse_layout}


@pytest.mark.parametrize("case", vector_params("parse_roundtrip"))
def test_vector_parse_roundtrip(case: dict | None) -> None:
    case = require_vector(case, "parse_roundtrip")
    parse = _PARSERS[case["input"]["parser"]]
    text, expected = case["input"]["text"], case["expected"]
    value = parse(text)
    assert str(value) == expected, f"{case['source']}: {text!r} printed as {value}, XLA prints {expected}"
    # The canonical text denotes the same value, and is a fixpoint of print(parse(.)).
    assert parse(expected) == value
    assert str(parse(expected)) == expected


#: XLA's error wording -> this package's (reworded) wording for the same error; matched
#: case-insensitively against ``ParseError.reason``. Taken from the messages in
#: layout_algebra/model/syntax.py. An XLA substring missing here is looked for verbatim,
#: so a new vector with new wording fails until it is mapped.
XLA_TO_PACKAGE_MESSAGE = {
    # XLA: "expects layout to end with '}'"; package: "expected '}' to end the layout, found ..."
    "expects layout to end with": "to end the layout",
    # XLA: "Extra content after shape"; package: "extra content after the shape: ..."
    "Extra content after shape": "extra content after the shape",
    # identical wording
    "expected a DimLevelType abbreviation": "expected a DimLevelType abbreviation",
    # package: "layout has a physical shape P(...), which XLA allows only for sparse arrays"
    "Layout has physical shape, but is not for a sparse array": "only for sparse arrays",
}


@pytest.mark.parametrize("case", vector_params("parse_error"))
def test_vector_parse_error(case: dict | None) -> None:
    case = require_vector(case, "parse_error")
    text = case["input"]["text"]
    parse = parse_layout if case["input"].get("context") == "ParseLayout" else parse_shape
    with pytest.raises(ParseError) as info:
        parse(text)
    xla_substring = case["expected"].get("message_substring")
    if xla_substring:
        ours = XLA_TO_PACKAGE_MESSAGE.get(xla_substring, xla_substring)
        assert ours.lower() in info.value.reason.lower(), (
            f"{case['source']}: XLA says {xla_substring!r}; expected {ours!r} in {info.value.reason!r}"
        )


# --------------------------------------------------------------------------------------
# Grammar rules of xla-facts §1 not covered by the data files
# --------------------------------------------------------------------------------------


def test_default_layout_is_descending_when_missing() -> None:
    # §1.1 "Missing layouts": ParseShape fills in {n-1,...,0}, also for scalars.
    assert parse_shape("f32[2,3,4]").layout == Layout((2, 1, 0))
    assert parse_shape("f32[7]").layout == Layout((0,))
    assert parse_shape("f32[]").layout == Layout(())
    assert parse_shape("(f32[2,3])") == TupleShape((parse_shape("f32[2,3]{1,0}"),))


def test_whitespace_and_comments_between_tokens() -> None:
    # §1.1 "Whitespace and comments": allowed between any tokens; /* */ and // skipped.
    expected = parse_shape("f32[2,3]{0,1:T(8,128)S(1)}")
    assert parse_shape(" f32 [ 2 ,\t3 ]\n{ 0 , 1 : T ( 8 , 128 ) S ( 1 ) } ") == expected
    assert parse_shape("f32[2,/* two */3]{0,1:T(8,128)/*x*/S(1)} // trailing comment") == expected
    assert parse_shape("(f32[], /*index=1*/ s32[])") == parse_shape("(f32[], s32[])")


@pytest.mark.parametrize("text", ["f32[2,3]{}", "f32[]{}", "f32[123,456]{foo}", "f32[2]{ }"])
def test_brace_not_followed_by_int_or_colon_is_not_a_layout(text: str) -> None:
    # §1.1 "When `{` starts a layout": only if an integer or ':' follows; else extra content.
    with pytest.raises(ParseError):
        parse_shape(text)


def test_scalar_layouts_start_with_colon() -> None:
    # §1.1: `{:` starts a layout; a scalar's `{:}` layout is empty.
    assert parse_shape("f32[]{:T(256)}").layout == Layout((), tiles=((256,),))
    assert parse_shape("f32[]{:}") == parse_shape("f32[]")


def test_dynamic_dimensions() -> None:
    # §1.1 dim ::= int64 | '<=' int64 | '?'; `?` stores INT64_MIN with the dynamic flag.
    s = parse_shape("f32[?,<=5,7]")
    assert isinstance(s, ArrayShape)
    assert s.dimensions == (INT64_MIN, 5, 7)
    assert s.dynamic_dimensions == (True, True, False)
    assert str(s) == "f32[?,<=5,7]{2,1,0}"


def test_dimension_size_limits() -> None:
    # §1.1: sizes are int64 and must be >= 0.
    assert parse_shape(f"f32[{INT64_MAX}]").dimensions == (INT64_MAX,)  # type: ignore[union-attr]
    for text in (f"f32[{INT64_MAX + 1}]", "f32[-1]", f"f32[{INT64_MIN}]", "f32[<=-1]"):
        with pytest.raises(ParseError):
            parse_shape(text)


def test_minor_to_major_is_not_checked_for_being_a_permutation() -> None:
    # §1.1 "Checks after parsing a layout": `f32[2,3]{0,0}` parses (validation is later).
    assert parse_shape("f32[2,3]{0,0}").layout.minor_to_major == (0, 0)  # type: ignore[union-attr]


@pytest.mark.parametrize("text", ["f32[2,3]{0}", "f32[2,3]{0,1,2}", "f32[]{0}", "f32[5]{:T(8)}"])
def test_minor_to_major_length_must_equal_rank(text: str) -> None:
    # §1.1: "minor_to_major.size() must equal the rank".
    with pytest.raises(ParseError):
        parse_shape(text)


def test_physical_shape_only_through_parse_layout() -> None:
    # §1.1/§1.2: P(...) is accepted by ParseLayout, rejected by ParseShape.
    assert str(parse_layout("{0,1:P(s32[10,20]{1,0})}")) == "{0,1:P(s32[10,20]{1,0})}"
    with pytest.raises(ParseError):
        parse_shape("f32[10,20]{0,1:P(s32[10,20]{1,0})}")


def test_dim_level_types_are_parsed_and_dropped() -> None:
    # §1.5 "Today": D(...) letters D, C, S or H, each optionally + then ~, parsed then discarded.
    assert parse_shape("f32[2,3,4,5]{3,2,1,0:D(D,C+,S~,H+~)T(8,128)}") == parse_shape(
        "f32[2,3,4,5]{3,2,1,0:T(8,128)}"
    )
    for bad in ("{0:D(X)}", "{0:D()}", "{0:D(D~+)}", "{0:T(8)D(D)}"):
        with pytest.raises(ParseError):
            parse_layout(bad)


def test_index_and_pointer_types_accept_any_integer_type() -> None:
    # §1.2 "Index and pointer type parsing": the non-unsigned error is ignored by ParseShape.
    layout = parse_shape("s32[4]{0:#(s32)*(u8)}").layout  # type: ignore[union-attr]
    assert layout.index_primitive_type is not None and layout.index_primitive_type.text == "s32"
    assert layout.pointer_primitive_type is not None and layout.pointer_primitive_type.text == "u8"


def test_empty_and_zero_tiles_parse() -> None:
    # §1.3: `T()` and `T(0)` parse (only the validator rejects them); `*` is INT64_MIN.
    assert parse_layout("{0:T()}").tiles[0].dimensions == ()
    assert parse_layout("{0:T(0)}").tiles[0].dimensions == (0,)
    assert parse_layout("{1,0:T(*,128)}").tiles[0].dimensions == (INT64_MIN, 128)


#: One sample of each attribute, in XLA's order (§1.2 attrs ::= [D] [T] [L] [#] [*] [E] [S] [SC] [P] [M]).
ATTRIBUTE_SAMPLES = [
    ("D", "D(D,D)"),
    ("T", "T(8,128)(2,1)"),
    ("L", "L(2)"),
    ("#", "#(u32)"),
    ("*", "*(u16)"),
    ("E", "E(4)"),
    ("S", "S(1)"),
    ("SC", "SC(0:3)"),
    ("P", "P(s32[10,20]{1,0})"),
    ("M", "M(8)"),
]


def test_all_attributes_in_xla_order() -> None:
    # §1.2: printed in the order T, L, #, *, E, S, SC, P, M; D is dropped (§1.5).
    text = "{1,0:" + "".join(sample for _, sample in ATTRIBUTE_SAMPLES) + "}"
    expected = "{1,0:" + "".join(sample for name, sample in ATTRIBUTE_SAMPLES if name != "D") + "}"
    assert str(parse_layout(text)) == expected


@pytest.mark.parametrize(
    ("first", "second"),
    [(a, b) for i, a in enumerate(ATTRIBUTE_SAMPLES) for b in ATTRIBUTE_SAMPLES[:i]],
    ids=lambda pair: pair[0],
)
def test_attributes_out_of_order_are_rejected(first: tuple[str, str], second: tuple[str, str]) -> None:
    # §1.2 "An attribute out of order makes the parse fail"; §8.8.
    text = "{1,0:" + first[1] + second[1] + "}"
    with pytest.raises(ParseError) as info:
        parse_layout(text)
    assert info.value.position == text.index(second[1], len("{1,0:") + len(first[1]))


@pytest.mark.parametrize(("name", "sample"), ATTRIBUTE_SAMPLES, ids=[n for n, _ in ATTRIBUTE_SAMPLES])
def test_attribute_twice_is_rejected(name: str, sample: str) -> None:
    # §1.2: "each at most once".
    with pytest.raises(ParseError):
        parse_layout("{1,0:" + sample + sample + "}")


@pytest.mark.parametrize(
    "text",
    ["F32[2]", "Pred[]", "preD[]", "tuple[]", "buffer[2]", "opaque_type[]", "g32[]", "f32", "f32()"],
)
def test_element_type_names(text: str) -> None:
    # §1.1 "Element types" and §3: exact lower-case names; tuple/buffer are not type tokens;
    # the opaque type is spelled `opaque` only.
    with pytest.raises(ParseError):
        parse_shape(text)


def test_token_opaque_and_buffer_shapes() -> None:
    # §1.1: token[] and opaque[] have no dimensions; b(...) holds exactly one shape.
    assert parse_shape("token[]") == TokenShape()
    assert parse_shape("opaque[]") == OpaqueShape()
    for bad in ("token[1]", "opaque[2,3]", "b()", "b(f32[2], f32[3])", "b(f32[2]"):
        with pytest.raises(ParseError):
            parse_shape(bad)


def test_moderate_nesting_parses() -> None:
    # §1.1 "Limits": XLA allows 32768 levels; 100 nested tuples must certainly parse.
    text = "(" * 100 + "f32[]" + ")" * 100
    assert str(parse_shape(text)) == text


def test_extra_content_after_shape_or_layout() -> None:
    # §1.1: ParseShape requires EOF after the shape.
    for text in ("f32[2] f32[2]", "f32[2]{0}}", "(f32[]))", "f32[2]{0},"):
        with pytest.raises(ParseError):
            parse_shape(text)
    with pytest.raises(ParseError):
        parse_layout("{0} {0}")


# --------------------------------------------------------------------------------------
# 3. ParseError quality: quoted input, caret at the fault
# --------------------------------------------------------------------------------------


def _check_rendering(err: ParseError, text: str) -> None:
    """``err`` is a ValueError whose message quotes the faulty line with a caret under the fault."""
    assert isinstance(err, ValueError)
    assert err.text == text
    assert isinstance(err.position, int) and 0 <= err.position <= len(text)
    assert isinstance(err.reason, str) and err.reason.strip()
    message = str(err)
    assert err.reason in message
    *_, quoted, caret = message.split("\n")
    assert caret.strip() == "^", message
    column = caret.index("^")
    line_start = text.rfind("\n", 0, err.position) + 1
    line_end = text.find("\n", err.position)
    line = text[line_start : len(text) if line_end < 0 else line_end].replace("\t", " ")
    if len(line) <= 140:
        assert quoted == "  " + line, message
        assert column - 2 == err.position - line_start, message
    else:  # a window around the fault; the character above the caret is the faulty one
        assert len(quoted) <= 160, message
        if err.position < len(text) and text[err.position] not in "\n\t":
            assert quoted[column] == text[err.position], message


def _at(text: str, marker: str | None, *, last: bool = False) -> int:
    if marker is None:
        return len(text)
    return text.rindex(marker) if last else text.index(marker)


#: (input, where the fault is): a substring starting at the fault (``None``: end of input).
#: Where XLA's rules make the fault position clear, from xla-facts §1.
MALFORMED_SHAPES = [
    ("g32[]", "g32"),  # unknown type (XLA test WrongShape)
    ("F32[2]", "F32"),  # type names are lower case (§1.1)
    ("f32[2", None),  # missing ']'
    ("f32[2,3", None),
    ("f32[-1]", "-1"),  # negative size (§1.1 "Dimensions")
    ("f32[]{}", "{}"),  # `{}` is not a layout: extra content (§1.1)
    ("f32[123,456]{foo}", "{foo}"),
    ("f32[123,456]foobar{0,1}", "foobar"),
    ("f32[2,3]{1,0", None),  # layout not closed ("expects layout to end with")
    ("f32[2]{0:E(8)", None),
    ("f32[2,3]{1,0:S(1)T(8,128)}", "T("),  # out of order (§1.2)
    ("f32[2,3]{1,0:S(1)S(2)}", "S(2)"),  # duplicate attribute
    ("f32[2]{0:T(-1)}", "-1"),  # negative tile dimension (§1.3: XLA aborts)
    ("f32[99999999999999999999]", "99"),  # int64 overflow
    ("f32[10,10]{1,0:D(X,C)}", "X,"),  # bad DimLevelType (§1.5)
    ("f32[2]{0:Q(1)}", "Q"),  # unknown attribute
    ("token[1]", "1"),
    ("f32[2]\n{0:Q(1)}", "Q"),  # multi-line input: the caret line is the second line
]


@pytest.mark.parametrize(("text", "marker"), MALFORMED_SHAPES)
def test_parse_error_points_at_the_fault(text: str, marker: str | None) -> None:
    with pytest.raises(ParseError) as info:
        parse_shape(text)
    _check_rendering(info.value, text)
    assert info.value.position == _at(text, marker), str(info.value)


def test_parse_error_out_of_order_tile_after_memory_space() -> None:
    # The TSV's ERR row: the second T is the one out of place (§1.2).
    text = "f32[2,3]{1,0:T(8,128)S(1)T(2,1)}"
    with pytest.raises(ParseError) as info:
        parse_shape(text)
    _check_rendering(info.value, text)
    assert info.value.position == _at(text, "T(", last=True)


def test_parse_error_for_minor_to_major_size_points_into_the_layout() -> None:
    text = "f32[2,3]{0}"
    with pytest.raises(ParseError) as info:
        parse_shape(text)
    _check_rendering(info.value, text)
    assert text.index("{") <= info.value.position < len(text)


def test_parse_error_on_deep_nesting_is_prompt_and_readable() -> None:
    text = "(" * 5000
    with _time_limit(2.0):
        with pytest.raises(ParseError) as info:
            parse_shape(text)
    _check_rendering(info.value, text)
    assert len(str(info.value)) < 600, "a long input must be shown as a window, not in full"


def test_parse_error_on_deep_valid_nesting_is_a_parse_error() -> None:
    # Deeper than the package's documented nesting limit: a ParseError, never RecursionError.
    text = "(" * 3000 + "f32[]" + ")" * 3000
    with _time_limit(2.0):
        try:
            assert str(parse_shape(text)) == text
        except ParseError as err:
            _check_rendering(err, text)


def test_parse_error_in_parse_layout() -> None:
    text = "{1,0:T(8,128)"
    with pytest.raises(ParseError) as info:
        parse_layout(text)
    _check_rendering(info.value, text)
    assert info.value.position == len(text)
    assert "layout" in str(info.value).split("\n")[0]


@pytest.mark.parametrize(
    ("text", "faults"),
    [
        # The caret must be on the offending token, not on the whitespace or '(' before it.
        ("f32[2]{0:L(0)}", ("L(", "0)")),  # L(0): caret at the 'L' or the 0, not at '('
        ("f32[2]{0:T(8) L(-3)}", ("L(", "-3")),
        ("f32[2]{0:T(8,128) E(8) E(4)}", ("E(4)",)),  # duplicate after a space
        ("f32[2,3]{1,0:S(1) T(8,128)}", ("T(",)),  # out of order after a space
        ("b( (f32[]))", ("(f32",)),  # buffer holding a tuple
        ("f32[2]{0:#( x)}", ("x)",)),  # unknown type name in #(..)
    ],
)
def test_parse_error_caret_is_on_the_token_not_before_it(text: str, faults: tuple[str, ...]) -> None:
    """Regression: some error positions used to be taken before skipping whitespace or '('
    (in ``attributes``, ``buffer_shape``, and the ``L`` and ``#``/``*`` attributes), putting
    the caret one or more columns left of the offending token."""
    with pytest.raises(ParseError) as info:
        parse_shape(text)
    _check_rendering(info.value, text)
    allowed = {text.index(f) for f in faults}
    assert info.value.position in allowed, (
        f"caret at column {info.value.position} ({text[info.value.position]!r}), "
        f"expected one of {sorted(allowed)}:\n{info.value}"
    )


def test_parse_error_names_non_ascii_characters() -> None:
    """Regression: ``describe_here`` used to say "found ''" for a non-ASCII letter or digit."""
    for text, bad in (("f32[2]é", "é"), ("f32[2,٣]", "٣")):
        with pytest.raises(ParseError) as info:
            parse_shape(text)
        assert "''" not in info.value.reason and bad in info.value.reason, info.value.reason


# --------------------------------------------------------------------------------------
# 4. Fuzzing
# --------------------------------------------------------------------------------------


class _Hang(Exception):
    pass


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Raise ``_Hang`` in the body if it runs longer than ``seconds`` (POSIX main thread)."""
    if not hasattr(signal, "setitimer"):  # pragma: no cover
        yield
        return

    def on_alarm(signum: int, frame: object) -> None:
        raise _Hang(f"parsing took longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


#: A hang guard, not a timing: parsing one input never takes near this long unless it loops
#: or backtracks without end (parsing speed is measured in ``benchmarks/parse.py``).
PER_PARSE_LIMIT_S = 10.0


def _parse_never_crashes(parse: Callable[[str], object], text: str) -> object | None:
    """Parse ``text``: a value, or ``None`` after a well-formed ``ParseError``. Anything else
    (another exception, a hang) fails the test."""
    with _time_limit(PER_PARSE_LIMIT_S):
        try:
            value = parse(text)
        except ParseError as err:
            _check_rendering(err, text)
            return None
    # Whatever was accepted prints as text that parses and prints the same (unless it
    # holds a non-integral #(..)/*(..) type, printed `invalid` as XLA does, §1.2).
    printed = str(value)
    if "(invalid)" not in printed:
        assert str(parse(printed)) == printed, f"{text!r} -> {printed!r}"
    return value


GRAMMAR_ALPHABET = "fbs0123456789[]{}(),:*?<=TLESCPMD#/ "
_grammar_tokens = st.one_of(
    st.sampled_from(list(GRAMMAR_ALPHABET)),
    st.sampled_from(sorted(ARRAY_TYPE_NAMES | {"tuple", "buffer", "b("})),
    st.sampled_from(
        ["<=", "/*", "*/", "//", "\n", "-", "SC(", "T(", "N", "9223372036854775808", "-9223372036854775808"]
    ),
)
grammarish_text = st.lists(_grammar_tokens, max_size=300).map("".join)


@pytest.mark.slow
@settings(max_examples=300)
@given(st.text(max_size=300))
def test_fuzz_arbitrary_text(text: str) -> None:
    _parse_never_crashes(parse_shape, text)
    _parse_never_crashes(parse_layout, text)


@pytest.mark.slow
@settings(max_examples=600)
@given(grammarish_text)
def test_fuzz_grammar_alphabet(text: str) -> None:
    _parse_never_crashes(parse_shape, text)
    _parse_never_crashes(parse_layout, text)


@pytest.mark.slow
@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.text(alphabet=GRAMMAR_ALPHABET, min_size=1000, max_size=4000))
def test_fuzz_long_inputs(text: str) -> None:
    _parse_never_crashes(parse_shape, text)
    _parse_never_crashes(parse_layout, text)


@pytest.mark.parametrize(
    "text",
    [
        "(" * 4000,
        "(" * 150 + "f32[]" + ")" * 150,
        "b(" * 2000,
        "f32[" + "1," * 2000 + "1]",
        "f32[1]{" + "0," * 2000 + "0}",
        "f32[1]{0:T" + "(8)" * 2000 + "}",
        "f32[1]{0:SC" + "(0:1)" * 1000 + "}",
        "f32[1]{0:P(" * 1000,
        "f32[" + "9" * 4000 + "]",
        "/*" * 2000,
        "// " * 2000,
        "(" + "f32[], " * 1000 + "f32[])",
        "f32[" + "N," * 1000 + "N]",
        "f32[" + "x" * 5000 + "]",
        "q" * 5000,
    ],
    ids=lambda t: f"{t[:12]}...({len(t)})",
)
def test_pathological_inputs_are_answered_without_hanging(text: str) -> None:
    _parse_never_crashes(parse_shape, text)  # a value or a clean ParseError, and no hang


def _mutate(text: str, data: st.DataObject) -> str:
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        op = data.draw(st.sampled_from(["insert", "delete", "replace"]), label="op")
        char = data.draw(st.sampled_from(list(GRAMMAR_ALPHABET + "-x_é\t")) | st.characters(), label="char")
        if op == "insert" or not text:
            i = data.draw(st.integers(0, len(text)), label="at")
            text = text[:i] + char + text[i:]
        else:
            i = data.draw(st.integers(0, len(text) - 1), label="at")
            text = text[:i] + ("" if op == "delete" else char) + text[i + 1 :]
    return text


@pytest.mark.slow
@settings(max_examples=600)
@given(data=st.data())
def test_fuzz_mutations_of_xla_shape_strings(data: st.DataObject) -> None:
    inputs = [row["input"] for row in _tsv_rows()]
    text = _mutate(data.draw(st.sampled_from(inputs), label="tsv input"), data)
    _parse_never_crashes(parse_shape, text)


@pytest.mark.slow
@settings(max_examples=300)
@given(shapes(max_dim=INT64_MAX))
def test_round_trip_generated_shapes(shape: object) -> None:
    # print(parse(.)) is the identity on printed text, and parse(print(.)) on values.
    text = str(shape)
    again = parse_shape(text)
    assert again == shape, f"{text!r} parsed back as {again!r}"
    assert str(again) == text
    assert hash(again) == hash(shape)


@pytest.mark.slow
@settings(max_examples=100)
@given(array_shapes(symbolic=True, dynamic=False))
def test_round_trip_symbolic_shapes(shape: ArrayShape) -> None:
    text = str(shape)
    again = parse_shape(text)
    assert again == shape
    assert str(again) == text


@pytest.mark.slow
@settings(max_examples=300)
@given(layouts(index_types=True, physical_shape=True))
def test_round_trip_generated_layouts(layout: Layout) -> None:
    text = str(layout)
    again = parse_layout(text)
    assert again == layout, f"{text!r} parsed back as {again!r}"
    assert str(again) == text
