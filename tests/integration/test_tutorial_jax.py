"""The tutorial's JAX blocks, run with JAX (skipped, with the reason, when JAX is absent).

``docs/tutorial.md`` section 12 shows ``jax.jit(f).lower(...).compile()`` and its formats.
Those blocks need JAX, which the ``[test]`` extra does not install, so they are not doctests
of the page (a skip inside a Markdown doctest would skip the whole page). Each one follows
the marker ``<!-- runs with JAX: tests/integration/test_tutorial_jax.py -->`` as a ``python`` block and
is followed by a ``text`` block with what it prints; here each script runs in a fresh
interpreter on JAX's CPU backend, and its output must equal that text exactly.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TUTORIAL = Path(__file__).resolve().parents[2] / "docs" / "tutorial.md"
MARKER = "<!-- runs with JAX: tests/integration/test_tutorial_jax.py -->"
# the marker, a python block (the script), optional prose, then a text block (its output)
_BLOCK = re.compile(
    re.escape(MARKER) + r"\n```python\n(?P<script>.*?)```\n(?:(?!```).)*?```text\n(?P<output>.*?)```",
    re.DOTALL,
)


def jax_blocks(markdown: str) -> list[tuple[str, str]]:
    """``(script, expected output)`` for every marked block of ``markdown``."""
    blocks = [(m["script"], m["output"]) for m in _BLOCK.finditer(markdown)]
    if len(blocks) != markdown.count(MARKER):
        raise ValueError(f"a '{MARKER}' is not followed by a python block and then a text block")
    return blocks


def test_the_marked_blocks_are_found_and_are_not_doctests() -> None:
    # runs without JAX too: the section exists and its blocks cannot be half-run as doctests
    blocks = jax_blocks(TUTORIAL.read_text(encoding="utf-8"))
    assert len(blocks) >= 1
    for script, output in blocks:
        assert ">>>" not in script and "compile()" in script and output.strip()


def test_jax_blocks_parser_rejects_a_marker_without_its_output() -> None:
    with pytest.raises(ValueError, match="not followed by a python block"):
        jax_blocks(f"{MARKER}\n```python\nprint(1)\n```\n")
    assert jax_blocks(f"{MARKER}\n```python\nprint(1)\n```\n\nprints:\n\n```text\n1\n```\n") == [
        ("print(1)\n", "1\n")
    ]


@pytest.mark.parametrize("index", range(TUTORIAL.read_text(encoding="utf-8").count(MARKER)))
def test_tutorial_jax_block_prints_what_the_page_shows(index: int) -> None:
    jax = pytest.importorskip(
        "jax", reason="JAX is not installed: the tutorial's JAX blocks (section 12) are not run"
    )
    if not hasattr(jax.stages.Compiled, "input_formats"):
        pytest.skip(f"JAX {jax.__version__} has no Compiled.input_formats (JAX >= 0.7): the tutorial uses it")
    script, expected = jax_blocks(TUTORIAL.read_text(encoding="utf-8"))[index]
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env, check=False
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == expected
