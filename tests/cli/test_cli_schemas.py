"""The command line speaks one language: every command has ``--help`` and ``--json``, each
command's JSON is valid against the schema docs/cli.md publishes for it, a ``--when``
condition is read back verbatim by ``--assume`` and proves the claim, and an ``--assume``
naming a size the shapes do not have is bad input (exit 2) that names it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from layout_algebra.cli import build_parser, main

jsonschema = pytest.importorskip(
    "jsonschema", reason="jsonschema is a test dependency (pip install -e '.[test]')"
)

ROOT = Path(__file__).resolve().parents[2]
CLI_DOC = ROOT / "docs" / "cli.md"
HLO_EXAMPLE = ROOT / "examples" / "tpu_module.hlo"
PASS_DUMP = ROOT / "tests" / "data" / "pass_dumps" / "dense_relu_reshape"
#: ``proofs`` documents its JSON with the proof catalog (docs/cli.md) and is tested in
#: tests/teach/test_proofs_catalog.py; every other command is checked here.
DOCUMENTED_ELSEWHERE = {"proofs"}
TILED = "f32[3,5]{1,0:T(2,2)}"
BEFORE = "HloModule m\nENTRY e {\n  p = f32[N,128]{1,0} parameter(0)\n  ROOT c = f32[N,128]{1,0:T(8,128)} copy(p)\n}\n"
AFTER = BEFORE.replace("{1,0:T(8,128)} copy", "{1,0} copy")


def command_names() -> list[str]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    return sorted(sub.choices)


def subparser(name: str):
    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    return sub.choices[name]


def schemas() -> dict[str, dict]:
    """``#### `command``` then a fenced json block, in the "JSON schemas" section of docs/cli.md."""
    text = CLI_DOC.read_text(encoding="utf-8")
    section = text.split("### JSON schemas", 1)[1]
    found = re.findall(r"^#### `([a-z-]+)`\n(?:.*?\n)*?```json\n(.*?)\n```", section, re.M | re.S)
    return {name: json.loads(body) for name, body in found}


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    np.save(tmp_path / "x.npy", np.arange(15, dtype=np.float32).reshape(3, 5))
    (tmp_path / "before.hlo").write_text(BEFORE)
    (tmp_path / "after.hlo").write_text(AFTER)
    return {
        name: str(tmp_path / name)
        for name in ("x.npy", "x.bin", "y.npy", "before.hlo", "after.hlo", "a.svg", "a.html")
    }


def invocations(f: dict[str, str]) -> dict[str, list[list[str]]]:
    """Per command, arguments that exercise each form of its JSON (a bad input among them)."""
    return {
        "explain": [["explain", TILED, "f32[3"], ["explain", "f32[N,M]{1,0:T(8,128)}", "--element", "9,130"]],
        "size": [["size", TILED, "f32[N,M]{1,0:T(8,128)}", "token[]"]],
        "validate": [["validate", TILED, "f32[2,3]{0,0}"]],
        "audit": [["audit", str(HLO_EXAMPLE)]],
        "tpu-layout": [["tpu-layout", "bf16", "4,7"]],
        "access": [["access", "bf16[16,256]{1,0:T(8,128)(2,1)}", "--element", "3,200"]],
        "prove": [
            ["prove", "injective", TILED],
            ["prove", "in-bounds", "s16[1000,200]{0,1:T(1,128)(2,1)}", "--allocation", "xla"],
            ["prove", "injective", TILED, "f32[N]{0}"],
            ["prove", "no-padding", "f32[N]{0:T(8)}", "--when"],
        ],
        "verify": [
            ["verify", f["before.hlo"], f["after.hlo"]],
            ["verify", f["before.hlo"], f["after.hlo"], "--when"],
        ],
        "bitcast": [
            ["bitcast", "f32[16,256]{1,0:T(8,128)}", "f32[4096]{0}"],
            ["bitcast", "bf16[32,8,24,200]{3,2,1,0:T(8,128)(2,1)}", "256,24,200", "--suggest"],
            ["bitcast", "f32[2,N,128]{2,1,0:T(8,128)}", "f32[2*N,128]{1,0:T(8,128)}", "--when"],
        ],
        "pack": [
            ["pack", f["x.npy"], TILED, "-o", f["x.bin"]],
            ["pack", "--unpack", f["x.bin"], TILED, "-o", f["y.npy"]],
        ],
        "codegen": [["codegen", TILED, "--lang", "python"]],
        "draw": [["draw", TILED, "-o", f["a.svg"]], ["draw", TILED, "f32[3,5]{0,1}", "--html", f["a.html"]]],
        "validate-passes": [["validate-passes", str(PASS_DUMP)]],
    }


# --------------------------------------------------------------------------- every command
@pytest.mark.parametrize("name", command_names())
def test_every_command_has_help_and_json(name) -> None:
    options = {s for action in subparser(name)._actions for s in action.option_strings}
    assert "-h" in options and "--help" in options
    if name not in DOCUMENTED_ELSEWHERE:
        assert "--json" in options


def test_every_command_has_a_schema_and_an_invocation(tmp_path) -> None:
    documented = set(schemas())
    expected = set(command_names()) - DOCUMENTED_ELSEWHERE
    assert documented == expected
    assert (
        set(
            invocations(
                {k: "" for k in ("x.npy", "x.bin", "y.npy", "before.hlo", "after.hlo", "a.svg", "a.html")}
            )
        )
        == expected
    )
    for schema in schemas().values():
        jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("name", sorted(set(command_names()) - DOCUMENTED_ELSEWHERE))
def test_json_of_every_command_is_valid_against_its_published_schema(name, files, capsys) -> None:
    validator = jsonschema.Draft202012Validator(schemas()[name])
    for argv in invocations(files)[name]:
        code, out, err = run(capsys, *argv, "--json")
        assert code in (0, 1, 2, 3), (argv, code)
        assert code == 0 or err or out, f"{argv} exited {code} silently"
        document = json.loads(out)  # exactly one JSON document
        errors = sorted(validator.iter_errors(document), key=str)
        assert not errors, f"{argv}: {errors[0].message} at {list(errors[0].absolute_path)}"


def test_a_schema_rejects_what_it_should(capsys) -> None:
    """The schemas are not vacuous: a record with a wrong type or a missing field fails."""
    validator = jsonschema.Draft202012Validator(schemas()["tpu-layout"])
    code, out, _ = run(capsys, "tpu-layout", "bf16", "4", "7", "--json")
    record = json.loads(out)
    assert code == 0 and validator.is_valid(record)
    assert not validator.is_valid({**record, "logical_bytes": "56"})
    assert not validator.is_valid({k: v for k, v in record.items() if k != "shape"})


# --------------------------------------------------------------------------- one language
@pytest.mark.parametrize(
    "argv",
    [
        ["prove", "no-padding", "bf16[N,M]{1,0:T(8,128)(2,1)}"],
        ["prove", "in-bounds", "f32[N,M]{1,0:T(8,128)}", "--allocation", "exact"],
        ["bitcast", "f32[2,N,128]{2,1,0:T(8,128)}", "f32[2*N,128]{1,0:T(8,128)}"],
        ["bitcast", "f32[A,B,128]{2,1,0:T(8,128)}", "f32[A*B,128]{1,0:T(8,128)}"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_when_condition_is_read_back_verbatim_by_assume_and_proves_the_claim(argv, capsys) -> None:
    code, out, _ = run(capsys, *argv, "--when")
    assert code == 0, out
    printed = re.search(r"exactly when: (.*)$", out, re.M).group(1)
    assert "Eq(" not in printed and "Mod(" not in printed
    code, out_json, _ = run(capsys, *argv, "--when", "--json")
    assert json.loads(out_json)["condition"] == printed
    code, out, err = run(capsys, *argv, "--assume", printed)
    assert code == 0 and out.startswith(("proved", "bitcast (proved)")), out + err


def test_verify_when_condition_is_read_back_by_assume(files, capsys) -> None:
    code, out, _ = run(capsys, "verify", files["before.hlo"], files["after.hlo"], "--when")
    printed = re.search(r"exactly when: (.*)$", out, re.M).group(1)
    assert code == 0 and printed == "N % 8 == 0"
    code, out, _ = run(capsys, "verify", files["before.hlo"], files["after.hlo"], "--assume", printed)
    assert code == 0 and out.startswith("proved")


@pytest.mark.parametrize(
    "argv, unknown, suggestion",
    [
        (["prove", "no-padding", "bf16[N,M]{1,0:T(8,128)(2,1)}", "--assume", "m % 128 == 0"], "m", "M"),
        (["prove", "injective", "f32[rows,cols]{1,0:T(8,128)}", "--assume", "row >= 1"], "row", "rows"),
        (
            ["bitcast", "f32[2,N,128]{2,1,0:T(8,128)}", "f32[2*N,128]{1,0:T(8,128)}", "--assume", "K == 8"],
            "K",
            None,
        ),
        (["prove", "injective", "f32[8,128]{1,0:T(8,128)}", "--assume", "N == 8"], "N", None),
    ],
)
def test_an_unknown_size_in_assume_is_exit_2_naming_it(argv, unknown, suggestion, capsys) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert f"names the size {unknown}," in err
    if suggestion:
        assert f"did you mean {suggestion}?" in err
    else:
        assert "did you mean" not in err


def test_verify_refuses_an_unknown_size_in_assume(files, capsys) -> None:
    code, _, err = run(capsys, "verify", files["before.hlo"], files["after.hlo"], "--assume", "n % 8 == 0")
    assert code == 2 and "names the size n," in err and "(the shapes' sizes: N)" in err


@pytest.mark.parametrize("dims", [["4,7"], ["4", "7"], ["4, 7"], ["4,", "7"]])
def test_tpu_layout_dims_take_commas_and_spaces(dims, capsys) -> None:
    code, out, _ = run(capsys, "tpu-layout", "bf16", *dims, "--json")
    assert code == 0 and json.loads(out)["shape"].startswith("bf16[4,7]")


def test_tpu_layout_bad_dim_is_named(capsys) -> None:
    code, _, err = run(capsys, "tpu-layout", "bf16", "4,x")
    assert code == 2 and "'x' is not a dimension size" in err


def test_prove_takes_several_shapes_as_its_usage_says(capsys) -> None:
    shapes = [TILED, "f32[N]{0}", "f32[4,4]{0,1:T(2,2)}"]
    code, out, _ = run(capsys, "prove", "injective", *shapes)
    assert code == 0 and out.count("proved: layout") == 3 and "3 of 3 claims proved" in out
    code, out, _ = run(capsys, "prove", "injective", *shapes, "--json")
    assert code == 0 and [r["status"] for r in json.loads(out)] == ["proved"] * 3
    code, _, err = run(capsys, "prove", "equivalent", TILED)
    assert code == 2 and "two shapes" in err


def test_bare_command_lists_every_command_and_says_so(capsys) -> None:
    code, out, err = run(capsys)
    assert code == 2 and "name a COMMAND" in err
    for name in command_names():
        assert name in out


def test_counterexamples_print_without_python_reprs(files, capsys) -> None:
    code, out, _ = run(capsys, "verify", files["before.hlo"], files["after.hlo"])
    assert code == 1
    assert "None" not in out and "()" not in out and "{'" not in out
    sizes = re.search(r"sizes\s+N = ([\d,]+)", out).group(1)
    assert int(sizes.replace(",", "")) % 8 != 0
    assert re.search(r"before\s+[\d,]+ bytes", out)
    # a 5-digit value has its separator
    code, out, _ = run(
        capsys, "prove", "in-bounds", "s16[1000,200]{0,1:T(1,128)(2,1)}", "--allocation", "xla"
    )
    assert code == 1 and "262,144" in out and "204,800" in out


def test_a_bad_shape_is_reported_before_the_assumptions_names(capsys) -> None:
    code, _, err = run(capsys, "prove", "injective", "f32[N", "--assume", "N == 1")
    assert code == 2 and "cannot parse shape" in err and "names the size" not in err
