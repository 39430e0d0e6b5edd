"""The command line run in-process, as the tests call it."""

from __future__ import annotations

import pytest

from layout_algebra.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``layout-algebra *argv`` run in this process: (exit code, stdout, stderr)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err
