"""The ground truth ships with the repository, intact, and nothing reads outside the checkout."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest
from support.ground_truth import GROUND_TRUTH

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = GROUND_TRUTH / "MANIFEST.sha256"


def _manifest() -> list[tuple[str, str]]:
    rows = [line.split("  ", 1) for line in MANIFEST.read_text(encoding="utf-8").splitlines() if line]
    return [(digest, name) for digest, name in rows]


def test_manifest_lists_the_files_the_tests_read() -> None:
    names = {name for _, name in _manifest()}
    for needed in ("xla_vectors.json", "xla_shape_strings.tsv", "tpu/padded_bytes.jsonl", "README.md"):
        assert needed in names
    assert sum(name.startswith("hlo/") for name in names) >= 12
    on_disk = {p.relative_to(GROUND_TRUTH).as_posix() for p in GROUND_TRUTH.rglob("*") if p.is_file()}
    assert on_disk - {"MANIFEST.sha256"} == names, (
        "files and manifest differ: run scripts/update_ground_truth.py"
    )


@pytest.mark.parametrize(("digest", "name"), _manifest(), ids=lambda v: v if "/" in v or "." in v else "")
def test_ground_truth_file_is_unchanged(digest: str, name: str) -> None:
    assert hashlib.sha256((GROUND_TRUTH / name).read_bytes()).hexdigest() == digest


def test_nothing_in_the_project_reads_outside_the_checkout() -> None:
    tracked = subprocess.run(
        ["git", "ls-files", "*.py", "*.md", ".ci/*", "pyproject.toml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if tracked.returncode != 0:  # not a git checkout (e.g. an unpacked sdist): walk the tree instead
        files = [p for p in ROOT.rglob("*") if p.suffix in (".py", ".md") and ".venv" not in p.parts]
    else:
        files = [ROOT / name for name in tracked.stdout.split()]
    # code (also doctests in Markdown) that builds a path to the steering repository's folder
    reaching_out = (".." + "/shared", "parents[1].parent", '"..", "shared"', '/ "shared" /')
    offenders = [
        str(p.relative_to(ROOT))
        for p in files
        if p.is_file() and p.name != Path(__file__).name and "ground_truth" not in p.parts
        for text in [p.read_text(encoding="utf-8", errors="replace")]
        if any(pattern in text for pattern in reaching_out)
    ]
    assert offenders == []
