"""Where the reference data lives, and how a test reads it: it FAILS, never skips, when missing.

The reference data (``xla_shape_strings.tsv``, ``xla_vectors.json``, the XLA:TPU rows,
real HLO modules) is ground truth from XLA itself, kept in the repository under
``tests/data/ground_truth`` with its provenance (that directory's README and
``MANIFEST.sha256``; ``scripts/update_ground_truth.py`` refreshes it). Tests that need it
must FAIL, never skip, when it is missing: a green run without the data would claim a
conformance that was never checked.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

#: This project's own test data (``tests/data``).
TEST_DATA = Path(__file__).resolve().parents[1] / "data"
#: Ground truth from XLA, its tests and the XLA:TPU compiler (read-only copies, with provenance).
GROUND_TRUTH = TEST_DATA / "ground_truth"


def ground_truth_file(name: str) -> Path:
    """``GROUND_TRUTH / name``, failing (never skipping) the calling test if it is missing."""
    path = GROUND_TRUTH / name
    if not path.is_file():
        pytest.fail(
            f"ground-truth file {path} is missing. These tests check the package against XLA's "
            "own outputs and must not pass without them; restore tests/data/ground_truth from "
            "git (its README says where the files come from).",
            pytrace=False,
        )
    return path


def vector_params(*kinds: str) -> list:
    """``pytest.param``s for the ``xla_vectors.json`` cases of the given kinds.

    Read at collection time. If the data is missing (or has no case of these kinds) the
    result is a single ``None`` case: pass it to ``require_vector`` in the test, which
    FAILS with a clear message instead of letting pytest skip an empty parameter set.
    """
    path = GROUND_TRUTH / "xla_vectors.json"
    if not path.is_file():
        return [pytest.param(None, id="ground-truth-missing")]
    cases = [c for c in json.loads(path.read_text(encoding="utf-8")) if c.get("kind") in kinds]
    if not cases:
        return [pytest.param(None, id="no-cases")]
    return [pytest.param(c, id=f"{c['kind']}:{c['input'].get('text', i)}") for i, c in enumerate(cases)]


def require_vector(case: dict | None, *kinds: str) -> dict:
    """The case itself; fails the test if ``vector_params`` found no data."""
    if case is None:
        ground_truth_file("xla_vectors.json")
        pytest.fail(f"xla_vectors.json has no case of kind {', '.join(kinds)}", pytrace=False)
    return case


def shipped_hlo_modules() -> list:
    """Every shipped HLO module (``hlo/*.hlo``), as pytest params of file names (one failing
    param if the data is missing)."""
    paths = sorted((GROUND_TRUTH / "hlo").glob("*.hlo"))
    if not paths:
        return [pytest.param(None, id="ground-truth-missing")]
    return [pytest.param(p.name, id=p.name.split(".")[0][:40]) for p in paths]


def shipped_hlo_text(name: str | None) -> str:
    """The text of the shipped module ``hlo/<name>``; fails (never skips) if it is missing."""
    if name is None:
        ground_truth_file("hlo/01_missing.hlo")  # fails with the data directory's message
    return ground_truth_file(f"hlo/{name}").read_text(encoding="utf-8")
