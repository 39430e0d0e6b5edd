"""Every script in examples/ runs, exits 0 and prints what it promises."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.py"))


def test_there_are_examples() -> None:
    assert EXAMPLES


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs(script: Path) -> None:
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()
    assert "Traceback" not in done.stderr


def test_explain_example_reports_consistent_sizes() -> None:
    script = next(p for p in EXAMPLES if p.name == "explain_layout.py")
    out = subprocess.run(
        [sys.executable, str(script), "s16[1000,200]{0,1:T(1,128)(2,1)}"],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    # exact nested buffer 200x8 tiles of (1->2)x128 slots x 2 bytes; first tile only: 200x8x128x2 bytes
    assert f"{200 * 8 * 2 * 128 * 2:,} bytes" in out
    assert f"{200 * 8 * 128 * 2:,} bytes" in out
