"""Shared test configuration: Hypothesis profiles, the run's private lemma cache, fixtures.

Helpers that tests import live in ``tests/support/`` (the reference data's paths and readers
in ``support.ground_truth``); this file holds only what pytest itself reads.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings
from support.environment import IN_CI
from support.ground_truth import GROUND_TRUTH, ground_truth_file

# No example database: keeps test runs from writing ``.hypothesis/`` into the checkout.
# ``print_blob`` makes a failure reproducible with ``@reproduce_failure``. No deadline: an
# example's time says nothing about correctness (timings live in ``benchmarks/``), and a
# busy machine must not fail a test. Every ``settings(...)`` in the tests inherits these.
settings.register_profile("layout_algebra", database=None, print_blob=True, deadline=None)
# CI draws the same examples on every run (a red CI is then reproducible and never a coin
# toss); local runs keep exploring new random examples.
settings.register_profile("ci", parent=settings.get_profile("layout_algebra"), derandomize=True)
settings.load_profile("ci" if IN_CI else "layout_algebra")


# The run proves into a lemma cache of its own, for every test and doctest of the session
# (this file is loaded first: ``tests`` leads ``testpaths``): it never reads or writes the
# user's cache directory, and a stale entry there can never make a test pass.
_LEMMA_CACHE = tempfile.mkdtemp(prefix="layout-algebra-test-lemmas-")
os.environ["LAYOUT_ALGEBRA_CACHE_DIR"] = _LEMMA_CACHE
atexit.register(shutil.rmtree, _LEMMA_CACHE, ignore_errors=True)


@pytest.fixture
def ground_truth() -> Path:
    """The ``GROUND_TRUTH`` directory; the test FAILS (does not skip) if it is missing."""
    ground_truth_file("README.md")
    return GROUND_TRUTH
