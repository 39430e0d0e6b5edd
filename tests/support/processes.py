"""Fresh Python processes: what a new interpreter (this venv's) prints."""

from __future__ import annotations

import subprocess
import sys


def python_output(*lines: str, timeout: float = 120) -> str:
    """What a fresh Python (this venv's) prints running ``lines``; it must exit with 0."""
    done = subprocess.run(
        [sys.executable, "-c", "\n".join(lines)], capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()
