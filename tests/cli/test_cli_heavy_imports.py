"""Which heavy libraries each command loads, in a fresh interpreter.

Start-up is what a command costs before its first output, and most of it is SymPy, Z3,
NumPy and matplotlib (hundreds of milliseconds to import, against tens for the package):
a command that needs none of them must load none. Asserted on ``sys.modules`` after the
command ran to its end (its output and exit status are checked too), not on a clock: the
times are in ``benchmarks/startup.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("sympy", "z3", "numpy", "matplotlib", "rich")
SHAPE = "bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}"

#: The command line, and the heavy libraries it may load (every other one must stay unloaded).
CASES = [
    (["--help"], set()),
    (["--version"], set()),
    (["size", SHAPE], set()),
    (["size", "--json", "f32[3,5]{1,0:T(2,2)}", "f32[1024]{0:T(256)}"], set()),
    (["tpu-layout", "bf16", "1024", "1024"], set()),
    (["validate", SHAPE], set()),
    (["draw", "--help"], set()),
    (["proofs", "--help"], set()),
    # concrete bitcast decisions that need no solver: a same-arrangement proof, every element
    # compared, a check by groups, a refutation by allocations, and XLA's own answer beside them
    (["bitcast", "f32[8,128]{1,0:T(8,128)}", "f32[1,8,128]{2,1,0:T(8,128)}"], set()),
    (["bitcast", "f32[16,128]{1,0:T(8,128)}", "f32[2,8,128]{2,1,0:T(8,128)}"], set()),
    (["bitcast", "--json", "f32[8,16,128]{2,1,0:T(8,128)}", "f32[128,128]{1,0:T(8,128)}"], set()),
    (["bitcast", "f32[16,256]{1,0:T(8,128)}", "f32[4096]{0}"], set()),
    (["bitcast", "--permutation", "1,0", "f32[8,128]{1,0:T(8,128)}", "f32[128,8]{0,1:T(8,128)}"], set()),
    (
        ["bitcast", "--reinterpret", "bf16[16,256]{1,0:T(8,128)(2,1)}", "bf16[8,2,256]{2,0,1:T(8,128)(2,1)}"],
        set(),
    ),
    # what needs a library loads it, and no more
    (["access", SHAPE], {"numpy"}),
    (["prove", "injective", SHAPE], {"sympy", "z3"}),
]

PROBE = """
import contextlib, io, json, sys
from layout_algebra.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        code = main(sys.argv[1:])
    except SystemExit as exit:
        code = exit.code
heavy = [m for m in {heavy!r} if m in sys.modules]
print(json.dumps({{"code": code, "output": out.getvalue(), "heavy": heavy}}))
"""


def loaded_by(argv: list[str]) -> dict:
    """The exit status, the output and the heavy libraries loaded, of ``layout-algebra *argv``
    run in a fresh interpreter."""
    run = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY), *argv],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return json.loads(run.stdout.splitlines()[-1])


@pytest.mark.parametrize(("argv", "allowed"), CASES, ids=[" ".join(argv)[:60] for argv, _ in CASES])
def test_a_command_loads_only_the_heavy_libraries_it_needs(argv: list[str], allowed: set[str]) -> None:
    got = loaded_by(argv)
    assert got["code"] in (0, 1), got
    assert got["output"].strip(), got
    assert set(got["heavy"]) <= allowed, (argv, got["heavy"])


def test_the_probe_sees_a_library_a_command_loads() -> None:
    """The probe itself: a command that loads SymPy and Z3 is seen loading them."""
    assert {"sympy", "z3"} <= set(loaded_by(["prove", "injective", "f32[8,128]{1,0:T(8,128)}"])["heavy"])


def test_the_bitcast_commands_answer_as_the_solver_path_does() -> None:
    """The no-solver answers above are the real ones: the verdicts of the concrete cases, as
    the exact decision (NumPy enumeration, Z3) gives them in this process."""
    from layout_algebra.decide import bitcast
    from layout_algebra.model.syntax import parse_shape

    for argv, _ in CASES:
        if argv[0] != "bitcast" or "--permutation" in argv or "--reinterpret" in argv:
            continue
        src, dst = (parse_shape(text) for text in argv[-2:])
        corr = bitcast.reshape_correspondence(src, dst)
        exact = bitcast._decide_concrete("reshape", src, dst, (corr,), fast_path=False)
        expected = {"proved": 0, "refuted": 1}[exact.status]
        assert loaded_by(argv)["code"] == expected, (argv, str(exact))
