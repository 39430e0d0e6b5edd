"""The ``layout-algebra`` command line: output that agrees with the library, clean errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support.cli import run

import layout_algebra as la
from layout_algebra.cli import main

README_SHAPE = "bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}"


def test_explain_prints_fields_tiled_shape_and_sizes(capsys) -> None:
    code, out, _ = run(capsys, "explain", README_SHAPE)
    assert code == 0
    assert out.splitlines()[0] == README_SHAPE
    report = la.size_report(README_SHAPE)
    assert "[" + ", ".join(map(str, report.tiled_dimensions)) + "]" in out
    assert f"{report.physical_bytes:,} bytes" in out
    assert f"{report.logical_bytes:,} bytes" in out
    for field in ("element type", "dimensions", "minor_to_major", "tiling", "memory space", "padding"):
        assert field in out


def test_explain_shows_both_sizes_when_they_differ(capsys) -> None:
    text = "s16[1000,200]{0,1:T(1,128)(2,1)}"
    _, out, _ = run(capsys, "explain", text)
    report = la.size_report(text)
    assert f"{report.physical_bytes:,} bytes" in out
    assert f"XLA allocates   {report.first_tile_bytes:,} bytes" in out


def test_explain_reports_invalid_layouts_instead_of_failing(capsys) -> None:
    code, out, _ = run(capsys, "explain", "f32[2,3]{0,0}")
    assert code == 0
    assert "INVALID" in out and "permutation" in out


@pytest.mark.parametrize("command", ["explain", "size", "validate"])
def test_malformed_shape_is_one_clear_error_with_status_2(capsys, command: str) -> None:
    code, out, err = run(capsys, command, "f32[2,3]{1,0")
    assert code == 2
    assert out == ""
    assert err.startswith(f"layout-algebra {command}: error: cannot parse shape")
    assert "f32[2,3]{1,0" in err and "^" in err
    assert "Traceback" not in err


def test_size_json_agrees_with_size_report(capsys) -> None:
    texts = ["f32[3,5]{1,0:T(2,2)}", "s4[9,7]{0,1:T(8,128)(8,1)E(4)}"]
    code, out, _ = run(capsys, "size", "--json", *texts)
    assert code == 0
    records = json.loads(out)  # one JSON list, a record per shape
    for text, record in zip(texts, records, strict=True):
        report = la.size_report(text)
        assert record["shape"] == str(la.parse_shape(text))
        assert record["physical_bytes"] == report.physical_bytes
        assert record["logical_bytes"] == report.logical_bytes
        assert record["xla_allocated_bytes"] == report.first_tile_bytes
        assert record["tiled_dimensions"] == list(report.tiled_dimensions)


def test_size_of_a_token_is_an_error(capsys) -> None:
    code, _, err = run(capsys, "size", "token[]")
    assert code == 2 and "no single array buffer" in err


def test_validate_exit_status(capsys) -> None:
    assert run(capsys, "validate", "f32[2,3]{1,0:T(8,128)}")[0] == 0
    code, out, _ = run(capsys, "validate", "f32[2,3]{1,0}", "f32[2,3]{0,0}")
    assert code == 1
    assert "f32[2,3]{1,0}: valid" in out and "permutation" in out


def test_help_teaches_the_syntax(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    for word in ("explain", "size", "validate", "minor_to_major", "Quote shapes"):
        assert word in out


@pytest.mark.slow
def test_module_entry_point_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "layout_algebra", "explain", "f32[3,5]{1,0:T(2,2)}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "96 bytes" in done.stdout  # 2x3 tiles of 2x2 f32 slots


def test_explain_element_shows_the_documents_worked_example(capsys) -> None:
    code, out, _ = run(capsys, "explain", "f32[3,5]{1,0:T(2,2)}", "--element", "2,3")
    assert code == 0
    assert "tile index (⌊2/2⌋, ⌊3/2⌋) = (1, 1)" in out
    assert out.rstrip().splitlines()[-2].endswith("= 17 (elements)")


@pytest.mark.parametrize(("element", "message"), [("3,3", "out of bounds"), ("1", "has 1 entries")])
def test_explain_element_out_of_the_shape_is_a_one_line_error(capsys, element, message) -> None:
    code, out, err = run(capsys, "explain", "f32[3,5]{1,0:T(2,2)}", "--element", element)
    assert code == 2 and out == ""
    assert message in err and "Traceback" not in err
