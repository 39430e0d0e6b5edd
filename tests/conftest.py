"""Shared test configuration: where the reference data lives, Hypothesis settings, markers.

The reference data (``xla_shape_strings.tsv``, ``xla_vectors.json``, the XLA:TPU rows,
real HLO modules) is ground truth from XLA itself, kept in the repository under
``tests/data/ground_truth`` with its provenance (that directory's README and
``MANIFEST.sha256``; ``scripts/update_ground_truth.py`` refreshes it). Tests that need it
must FAIL, never skip, when it is missing: a green run without the data would claim a
conformance that was never checked.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

#: This project's own test data (``tests/data``).
TEST_DATA = Path(__file__).resolve().parent / "data"
#: Ground truth from XLA, its tests and the XLA:TPU compiler (read-only copies, with provenance).
GROUND_TRUTH = TEST_DATA / "ground_truth"

# No example database: keeps test runs from writing ``.hypothesis/`` into the checkout.
# ``print_blob`` makes a failure reproducible with ``@reproduce_failure``.
settings.register_profile("layout_algebra", database=None, print_blob=True)
# CI draws the same examples on every run (a red CI is then reproducible and never a coin
# toss); local runs keep exploring new random examples.
settings.register_profile("ci", database=None, print_blob=True, derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "layout_algebra")


# The run proves into a lemma cache of its own, for every test and doctest of the session
# (this file is loaded first: ``tests`` leads ``testpaths``): it never reads or writes the
# user's cache directory, and a stale entry there can never make a test pass.
_LEMMA_CACHE = tempfile.mkdtemp(prefix="layout-algebra-test-lemmas-")
os.environ["LAYOUT_ALGEBRA_CACHE_DIR"] = _LEMMA_CACHE
atexit.register(shutil.rmtree, _LEMMA_CACHE, ignore_errors=True)


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


@pytest.fixture
def ground_truth() -> Path:
    """The ``GROUND_TRUTH`` directory; the test FAILS (does not skip) if it is missing."""
    ground_truth_file("README.md")
    return GROUND_TRUTH


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


def python_output(*lines: str, timeout: float = 120) -> str:
    """What a fresh Python (this venv's) prints running ``lines``; it must exit with 0."""
    done = subprocess.run(
        [sys.executable, "-c", "\n".join(lines)], capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()
