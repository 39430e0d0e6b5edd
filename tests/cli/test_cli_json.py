"""``--json`` on every command that answers about shapes, checked against the library's
own values; batch commands check every input; explain's offsets are simplified and say
their units; results read well in a notebook (short reprs, Markdown/HTML forms)."""

from __future__ import annotations

import json
import re

import pytest
from support.cli import run

import layout_algebra as la
from layout_algebra.cli import main
from layout_algebra.meaning.layout_map import layout_map
from layout_algebra.teach.explain import explain

BAD = "f32[2,3]{1,0"  # no closing brace
SHAPES = ["f32[3,5]{1,0:T(2,2)}", "bf16[16,256]{1,0:T(8,128)(2,1)}", "s4[9,7]{0,1:T(8,128)(8,1)E(4)}"]


def run_json(capsys, *argv: str):
    code, out, err = run(capsys, *argv, "--json")
    return code, json.loads(out), err


# ------------------------------------------------------------------------------ batches
@pytest.mark.parametrize("command", ["explain", "size", "validate"])
def test_a_bad_shape_does_not_stop_the_batch(capsys, command) -> None:
    good = ["f32[3,5]{1,0:T(2,2)}", "bf16[16,256]{1,0:T(8,128)(2,1)}"]
    code, out, err = run(capsys, command, good[0], BAD, good[1])
    assert code == 2
    for text in good:  # both good shapes answered, the one after the bad one too
        assert str(la.parse_shape(text)) in out
    assert err.count("error:") == 1 and BAD in err and "^" in err


@pytest.mark.parametrize("command", ["explain", "size", "validate"])
def test_json_batch_is_one_list_with_an_error_record_per_bad_input(capsys, command) -> None:
    code, records, _ = run_json(
        capsys, command, SHAPES[0], BAD, "token[]" if command == "size" else SHAPES[1]
    )
    assert code == 2
    assert [r["input"] for r in records] == [SHAPES[0], BAD, "token[]" if command == "size" else SHAPES[1]]
    assert "error" not in records[0] and records[0]["shape"] == SHAPES[0]
    assert "cannot parse shape" in records[1]["error"] and set(records[1]) == {"input", "error"}
    if command == "size":
        assert "token[]" in records[2]["error"]


def test_size_json_agrees_with_the_library(capsys) -> None:
    code, records, _ = run_json(capsys, "size", *SHAPES, "f32[N,M]{1,0:T(8,128)}")
    assert code == 0
    for text, record in zip(SHAPES, records, strict=False):
        report = la.size_report(text)
        assert record["physical_bytes"] == la.physical_size_in_bytes(text) == report.physical_bytes
        assert record["logical_bytes"] == report.logical_bytes
        assert record["xla_allocated_bytes"] == report.first_tile_bytes
        assert record["tiled_dimensions"] == list(report.tiled_dimensions)
    symbolic = records[-1]
    assert symbolic["physical_bytes"] == str(la.physical_size_in_bytes("f32[N,M]{1,0:T(8,128)}"))


def test_explain_json_agrees_with_the_library(capsys) -> None:
    code, records, _ = run_json(capsys, "explain", *SHAPES)
    assert code == 0
    for text, r in zip(SHAPES, records, strict=True):
        m = layout_map(text)
        report = la.size_report(text)
        assert r["kind"] == "array" and r["shape"] == text
        assert r["physical_bytes"] == report.physical_bytes and r["logical_bytes"] == report.logical_bytes
        assert r["tiled_dimensions"] == list(m.physical_dimensions)
        assert r["element_bits"] == m.element_bits
        assert r["stages"] == [s.describe() for s in m.stages]
        assert r["minor_to_major"] == list(la.parse_shape(text).layout.minor_to_major)
        assert r["text"] == str(explain(text))
        # the printed offset is the layout's offset: evaluate it at every index
        for index in m.elements():
            env = {f"i{k}": v for k, v in enumerate(index)}
            assert _evaluate(r["element_offset"], env) == m.forward(index)


def test_explain_json_element_gives_its_offsets_in_every_unit(capsys) -> None:
    code, (r,), _ = run_json(capsys, "explain", "f32[3,5]{1,0:T(2,2)}", "--element", "2,3")
    assert code == 0
    m = layout_map("f32[3,5]{1,0:T(2,2)}")
    assert r["element"] == {
        "index": [2, 3],
        "offset_in_elements": 17,  # the tiled-layout document's worked example
        "offset_in_bits": m.forward((2, 3), "bit"),
        "byte": m.forward((2, 3), "byte"),
        "bit_in_byte": 0,
    }


def test_explain_json_of_invalid_and_nested_shapes(capsys) -> None:
    code, (invalid, nested), _ = run_json(capsys, "explain", "f32[2,3]{0,0}", "(f32[2], b(s8[3]), token[])")
    assert code == 0
    assert invalid["problems"] == la.layout_problems("f32[2,3]{0,0}") and invalid["physical_bytes"] is None
    assert nested["kind"] == "tuple"
    assert [e["kind"] for e in nested["elements"]] == ["array", "buffer", "token"]
    assert nested["elements"][1]["array"]["physical_bytes"] == 3


def test_validate_json_lists_every_problem(capsys) -> None:
    code, records, _ = run_json(capsys, "validate", "f32[2,3]{1,0}", "f32[2,3]{0,0:T(8,0)}")
    assert code == 1
    assert records[0] == {"input": "f32[2,3]{1,0}", "shape": "f32[2,3]{1,0}", "valid": True, "problems": []}
    assert records[1]["valid"] is False
    assert (
        records[1]["problems"] == la.layout_problems("f32[2,3]{0,0:T(8,0)}")
        and len(records[1]["problems"]) == 2
    )


def test_validate_text_still_lists_problems(capsys) -> None:
    code, out, _ = run(capsys, "validate", "f32[2,3]{0,0:T(8,0)}")
    assert code == 1
    for problem in la.layout_problems("f32[2,3]{0,0:T(8,0)}"):
        assert f"  - {problem}" in out


def test_prove_json_is_the_result_as_data(capsys) -> None:
    code, r, _ = run_json(
        capsys, "prove", "in-bounds", "s16[1000,200]{0,1:T(1,128)(2,1)}", "--allocation", "xla"
    )
    assert code == 1
    expected = la.prove.in_bounds("s16[1000,200]{0,1:T(1,128)(2,1)}", allocation="xla")
    assert r["status"] == expected.status == "refuted"
    assert r["claim"] == expected.claim
    assert r["counterexample"] == {
        k: list(v) if isinstance(v, tuple) else v for k, v in expected.counterexample.items()
    }
    code, r, _ = run_json(capsys, "prove", "injective", "bf16[N,M]{1,0:T(8,128)(2,1)}")
    assert code == 0 and r["status"] == "proved" and r["lemmas"]
    assert all(lemma["status"] == "proved" for lemma in r["lemmas"])


def test_codegen_json_carries_the_code_and_its_certification(capsys) -> None:
    code, r, _ = run_json(capsys, "codegen", "f32[3,5]{1,0:T(2,2)}", "--lang", "python")
    assert code == 0
    assert r["certification"]["status"] == "proved"
    assert r["parameters"] == ["i0", "i1"] and len(r["expressions"]) == 1
    m = layout_map("f32[3,5]{1,0:T(2,2)}")
    for index in m.elements():
        assert _evaluate(r["expressions"][0], {"i0": index[0], "i1": index[1]}) == m.forward(index)
    namespace: dict = {}
    exec(compile(r["text"], "<generated>", "exec"), namespace)  # the test's own generated code
    assert namespace[r["name"]](2, 3) == 17


# ------------------------------------------------------------------------------ explain text
def test_explain_shows_the_simplified_offset_in_elements() -> None:
    text = str(explain("bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}"))
    (line,) = [x for x in text.splitlines() if "offset" in x]
    assert line.startswith("  element offset  ")
    assert "Mod(" not in line and ", 1)" not in line  # no Mod(Mod(i3, 128), 1), always 0
    m = layout_map("bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}")
    formula = line.removeprefix("  element offset  ")
    for index in [(0, 0, 0, 0), (7, 0, 1279, 16383), (3, 0, 9, 130), (5, 0, 1001, 4097)]:
        assert _evaluate(formula, dict(zip(("i0", "i1", "i2", "i3"), index, strict=True))) == m.forward(index)


def test_explain_parenthesizes_a_symbolic_sum_before_times() -> None:
    text = str(explain("f32[N,M]{1,0:T(8,128)}", element=(9, 130)))
    bits = text.splitlines()[-1]
    assert "(1024*ceiling(M/128) + 1154) × 32 bits" in bits
    linear = text.splitlines()[-2]
    assert "1·(1024*ceiling(M/128))" in linear and linear.endswith("(elements)")


# ------------------------------------------------------------------------------ notebooks
def test_explanation_prints_as_before_and_reprs_short() -> None:
    e = explain("f32[3,5]{1,0:T(2,2)}")
    assert str(e).splitlines()[0] == "f32[3,5]{1,0:T(2,2)}" and "96 bytes" in str(e)
    assert len(repr(e)) < 100 and "\n" not in repr(e)
    assert e._repr_html_().startswith("<pre>") and "&lt;" not in str(e) and "96 bytes" in e._repr_html_()
    assert str(e) in e._repr_markdown_()
    assert (
        e._repr_markdown_().endswith(r"\bmod 2$$") and r"\left\lfloor \frac{i_{0}}{2}" in e._repr_markdown_()
    )
    assert "$$" not in explain("f32[2,3]{0,0}")._repr_markdown_()  # an invalid layout has no formula


def test_proof_result_reprs_short_and_prints_in_full() -> None:
    r = la.prove.injective("bf16[N,M]{1,0:T(8,128)(2,1)}")
    assert len(repr(r)) < 200 and "\n" not in repr(r)
    assert repr(r).startswith("<ProofResult proved:")
    assert str(r).startswith("proved: ")
    markdown = r._repr_markdown_()
    assert markdown.startswith("**proved**") and "lemmas" in markdown
    json.dumps(r.to_dict())  # JSON-ready all the way down


def test_refutation_markdown_shows_the_counterexample() -> None:
    r = la.prove.in_bounds("s16[1000,200]{0,1:T(1,128)(2,1)}", allocation="xla")
    assert "counterexample" in r._repr_markdown_() and "position=" in r._repr_markdown_()


def test_layout_map_repr_is_short() -> None:
    m = layout_map("bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}")
    assert len(repr(m)) < 120 and str(m.shape) in repr(m)


# ------------------------------------------------------------------------------ helpers
_PYTHON_INTEGER_EXPRESSION = re.compile(r"[0-9+*/%() ]+")


def _evaluate(text: str, env: dict[str, int]) -> int:
    """Evaluate printed integer index arithmetic (``+ * // %``, parentheses) on ``env``.

    The text is the library's own output, checked to be nothing but digits, the index
    names, operators and parentheses before it is substituted and evaluated."""
    for name in sorted(env, key=len, reverse=True):
        text = text.replace(name, f"({env[name]})")
    assert _PYTHON_INTEGER_EXPRESSION.fullmatch(text), text
    return eval(text, {"__builtins__": {}})  # our own printed arithmetic, checked above


def test_every_command_prints_counts_in_one_style(capsys) -> None:
    """Bytes read ``819,200`` in ``size``, ``explain``, ``tpu-layout`` alike (issue: one style)."""

    shape = "s16[1000,200]{0,1:T(1,128)(2,1)}"
    assert main(["size", shape]) == 0
    size_text = capsys.readouterr().out
    assert main(["explain", shape]) == 0
    explain_text = capsys.readouterr().out
    for text in (size_text, explain_text):
        assert "819,200 bytes" in text and "819200" not in text
    assert main(["tpu-layout", "bf16", "8", "1280"]) == 0
    assert "20,480 bytes" in capsys.readouterr().out


def test_an_error_quotes_a_huge_input_shortened(capsys) -> None:

    text = "(" * 3000
    assert main(["explain", text]) == 2
    first_line = capsys.readouterr().err.splitlines()[0]
    assert len(first_line) < 400 and "3,000 characters" in first_line
